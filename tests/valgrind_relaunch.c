/* tests/valgrind.sh's second program: a kernel that syncs its blocks, launched three times, so
   the fiber stacks the device keeps between launches are used again (memcheck read a reused
   stack as its last fiber left it: below that one's stack pointer, no access). Prints
   "relaunched: ok" when every launch gave the right values. */
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"
#include <stdio.h>
#define GF_KERNELS GF_KERNELS_AS_C
#include "gpuflow.h"
GF_KERNELS(
GF_KERNEL(reverse, GF_PARAM(GF_GLOBAL unsigned *, x))
{
    GF_SHARED unsigned t[64];
    t[gf_local_id(0)] = x[gf_global_id(0)];
    gf_block_sync();
    x[gf_global_id(0)] = t[63 - gf_local_id(0)];
}
)
#undef GF_KERNELS

int main(void)
{
    static const gf_stub_kernel stubs[] = { GF_STUB_KERNEL(reverse) };
    gf_launch_dims dims = { { 4, 1, 1 }, { 64, 1, 1 }, 0 };
    gf_module_desc md;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_module *m = NULL;
    gf_kernel *k = NULL;
    gf_buffer *b = NULL;
    unsigned h[256];
    int i, ok = 1, run;
    memset(&md, 0, sizeof md);
    md.stub_kernels = stubs;
    md.stub_kernel_count = 1;
    for (i = 0; i < 256; i++) h[i] = (unsigned)i;
    if (gf_device_open(GF_BACKEND_STUB, 0, &dev) != GF_OK || gf_stream_create(dev, NULL, &s) != GF_OK ||
        gf_module_load(dev, &md, &m) != GF_OK || gf_kernel_get(m, "reverse", &k) != GF_OK ||
        gf_buffer_create(dev, sizeof h, &b) != GF_OK || gf_copy_to_device(b, 0, h, sizeof h) != GF_OK) {
        printf("setup failed: %s\n", gf_last_error());
        return 1;
    }
    for (run = 0; run < 3; run++) {
        gf_arg a[1] = { GF_ARG_BUFFER(b) };
        ok &= gf_launch(s, k, dims, a, 1) == GF_OK && gf_stream_synchronize(s) == GF_OK;
    }
    ok &= gf_copy_to_host(h, b, 0, sizeof h) == GF_OK;
    for (i = 0; i < 256; i++) ok &= h[i] == (unsigned)((i / 64) * 64 + 63 - i % 64);   /* reversed three times: once */
    gf_buffer_destroy(b);
    gf_module_destroy(m);
    gf_stream_destroy(s);
    gf_device_close(dev);
    puts(ok ? "relaunched: ok" : "relaunched: wrong values");
    return ok ? 0 : 1;
}
