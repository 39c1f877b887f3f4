/* example.h -- what the examples past hello.c share: the implementation, the backends named
   on the cc line, a CHECK that reports a failure and leaves main, and one kernel.

   Each example is still one cc line; add -DGPUFLOW_OPENCL, or -DGPUFLOW_CUDA with
   -I/usr/local/cuda/include, to compile in those backends beside the stub.

   The kernel, scale(x, n, a, b): x[i] = x[i] * a + b, is written once in scale.gfk, in
   gpuflow's kernel dialect. It is included twice: as text, which gf_module_load compiles for
   the device at run time (NVRTC on CUDA, hiprtc on HIP, the OpenCL driver), and as C, which
   the stub runs. */
#ifndef EXAMPLE_H
#define EXAMPLE_H
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"          /* with GPUFLOW_CUDA / _HIP / _OPENCL defined, it brings in those backends */
#include <stdio.h>
#include <string.h>

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); return 1; } } while (0)

static const char example_scale_source[] =        /* the kernel as text, for the device */
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "scale.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C                 /* the same kernel as C, for the stub */
#include "scale.gfk"
#undef GF_KERNELS

static inline gf_module_desc example_module_desc(void) {
    static const gf_stub_kernel stub_kernels[] = { GF_STUB_KERNEL(scale) };
    gf_module_desc d = {
        .source = example_scale_source,     /* every field not named here is zero: the default */
        .source_name = "scale.gfk",
        .stub_kernels = stub_kernels,
        .stub_kernel_count = 1,
    };
    return d;
}

/* One thread per element, 128 to a block. */
static inline gf_launch_dims example_dims(unsigned n) {
    gf_launch_dims d = { .grid = { (n + 127) / 128, 1, 1 }, .block = { 128, 1, 1 } };
    return d;
}
#endif
