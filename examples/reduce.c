/* reduce.c -- a shared-memory reduction: each block of 256 threads sums its part of a vector
   in shared memory, the block meeting between the steps (reduce.gfk, a block kernel); the
   host adds the blocks' sums. The same source gives the same answer on every backend: on the
   CPU stub each step is a loop over the block's threads, as fast as the CPU runs a loop.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/reduce.c -o reduce -pthread -ldl && ./reduce
*/
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"
#include <stdio.h>

static const char reduce_source[] =
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "reduce.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "reduce.gfk"

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); return 1; } } while (0)

int main(void) {
    enum { N = 1 << 20, BLOCK = 256, BLOCKS = N / BLOCK };
    static float x[N], sums[BLOCKS];
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(block_sum) };
    gf_device *dev;
    gf_stream *s;
    gf_module *mod;
    gf_kernel *k;
    gf_buffer *dx, *dsums;
    gf_launch_dims dims = { .grid = { BLOCKS, 1, 1 }, .block = { BLOCK, 1, 1 } };   /* the kernel's shared array holds 256 */
    unsigned n = N;
    double total = 0, want = 0;
    int i;

    for (i = 0; i < N; i++) { x[i] = (float)(i % 100) * 0.25f; want += x[i]; }
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_stream_create(dev, NULL, &s));
    gf_module_desc desc = {
        .source = reduce_source,
        .source_name = "reduce.gfk",
        .stub_kernels = stub,
        .stub_kernel_count = 1,
    };
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "block_sum", &k));
    CHECK(gf_buffer_create(dev, sizeof x, &dx));
    CHECK(gf_buffer_create(dev, sizeof sums, &dsums));
    CHECK(gf_copy_to_device_async(s, dx, 0, x, sizeof x));
    {
        gf_arg args[3] = { GF_ARG_BUFFER_READ(dx), GF_ARG_BUFFER(dsums), GF_ARG(n) };
        CHECK(gf_launch(s, k, dims, args, 3));
    }
    CHECK(gf_copy_to_host_async(s, sums, dsums, 0, sizeof sums));
    CHECK(gf_stream_synchronize(s));
    for (i = 0; i < BLOCKS; i++) total += sums[i];   /* the last, small step on the host */
    printf("sum of %d floats on %s: %.1f (expected %.1f): %s\n", N, gf_backend_name(gf_device_backend(dev)),
           total, want, total == want ? "ok" : "WRONG");
    gf_buffer_destroy(dx);
    gf_buffer_destroy(dsums);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return total != want;
}
