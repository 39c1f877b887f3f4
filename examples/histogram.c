/* histogram.c -- atomics: 64 bins of the low six bits of every byte in 4 MiB, counted per block
   in shared memory, then added to the global bins (histogram.gfk). Checked against a count on
   the host.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/histogram.c -o histogram -pthread -ldl && ./histogram
*/
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"
#include <stdio.h>

static const char histogram_source[] =
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "histogram.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "histogram.gfk"

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); return 1; } } while (0)

int main(void) {
    enum { WORDS = 1 << 20 };
    static unsigned words[WORDS], bins[64], want[64];
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(histogram) };
    gf_device *dev;
    gf_stream *s;
    gf_module *mod;
    gf_kernel *k;
    gf_buffer *dwords, *dbins;
    gf_launch_dims dims = { .grid = { 64, 1, 1 }, .block = { 256, 1, 1 } };   /* fewer threads than words: each loops */
    unsigned n = WORDS, seed = 12345;
    int i, b, bad = 0;

    for (i = 0; i < WORDS; i++) {
        seed = seed * 1664525u + 1013904223u;   /* any bytes will do; this makes them reproducible */
        words[i] = seed;
        for (b = 0; b < 4; b++) want[(seed >> (8 * b)) & 63u]++;
    }
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_stream_create(dev, NULL, &s));
    gf_module_desc desc = {
        .source = histogram_source,
        .source_name = "histogram.gfk",
        .stub_kernels = stub,
        .stub_kernel_count = 1,
    };
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "histogram", &k));
    CHECK(gf_buffer_create(dev, sizeof words, &dwords));
    CHECK(gf_buffer_create(dev, sizeof bins, &dbins));
    CHECK(gf_copy_to_device_async(s, dwords, 0, words, sizeof words));
    CHECK(gf_fill32_async(s, dbins, 0, 0, 64));                   /* the bins start at zero */
    {
        gf_arg args[3] = { GF_ARG_BUFFER_READ(dwords), GF_ARG(n), GF_ARG_BUFFER(dbins) };
        CHECK(gf_launch(s, k, dims, args, 3));
    }
    CHECK(gf_copy_to_host_async(s, bins, dbins, 0, sizeof bins));
    CHECK(gf_stream_synchronize(s));
    for (b = 0; b < 64; b++) bad += bins[b] != want[b];
    printf("histogram of %d bytes into 64 bins on %s: %s\n", 4 * WORDS, gf_backend_name(gf_device_backend(dev)), bad ? "WRONG" : "ok");
    gf_buffer_destroy(dwords);
    gf_buffer_destroy(dbins);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return bad != 0;
}
