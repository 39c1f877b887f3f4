/* vector_add.c -- a first kernel: c = a + b, written once in vector_add.gfk and run on
   whatever device there is (or the one GPUFLOW_BACKEND names).

   The kernel file is included twice: as text, which gf_module_load compiles for the device
   at run time, and as C, which the CPU stub runs. Nothing else differs between backends.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/vector_add.c -o vector_add -pthread -ldl && ./vector_add
*/
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"
#include <stdio.h>

static const char vector_add_source[] =
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "vector_add.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "vector_add.gfk"

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); return 1; } } while (0)

int main(void) {
    enum { N = 100000 };
    static float a[N], b[N], c[N];
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(vector_add) };
    gf_device *dev;
    gf_stream *s;
    gf_module *mod;
    gf_kernel *k;
    gf_buffer *da, *db, *dc;
    gf_launch_dims dims = { .grid = { (N + 255) / 256, 1, 1 }, .block = { 256, 1, 1 } };
    unsigned n = N;
    int i, bad = 0;

    for (i = 0; i < N; i++) { a[i] = (float)i; b[i] = 2.0f * (float)i; }
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_stream_create(dev, NULL, &s));

    gf_module_desc desc = {   /* one module: the source for devices, C for the stub */
        .source = vector_add_source,
        .source_name = "vector_add.gfk",
        .stub_kernels = stub,
        .stub_kernel_count = 1,
    };
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "vector_add", &k));

    CHECK(gf_buffer_create(dev, sizeof a, &da));
    CHECK(gf_buffer_create(dev, sizeof b, &db));
    CHECK(gf_buffer_create(dev, sizeof c, &dc));
    CHECK(gf_copy_to_device_async(s, da, 0, a, sizeof a));
    CHECK(gf_copy_to_device_async(s, db, 0, b, sizeof b));
    {
        gf_arg args[4] = { GF_ARG_BUFFER_READ(da), GF_ARG_BUFFER_READ(db), GF_ARG_BUFFER(dc), GF_ARG(n) };
        CHECK(gf_launch(s, k, dims, args, 4));   /* arguments in the kernel's order */
    }
    CHECK(gf_copy_to_host_async(s, c, dc, 0, sizeof c));
    CHECK(gf_stream_synchronize(s));         /* the copies and the kernel ran in stream order */

    for (i = 0; i < N; i++) bad += c[i] != 3.0f * (float)i;
    printf("vector_add of %d floats on %s: %s\n", N, gf_backend_name(gf_device_backend(dev)), bad ? "WRONG" : "ok");
    gf_buffer_destroy(da);
    gf_buffer_destroy(db);
    gf_buffer_destroy(dc);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return bad != 0;
}
