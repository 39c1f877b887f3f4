/* example.h -- what the examples past hello.c share: the implementation, the backends named
   on the cc line, a CHECK that reports a failure and leaves main, and one kernel in every
   backend's form.

   Each example is still one cc line; add -DGPUFLOW_OPENCL, or -DGPUFLOW_CUDA with
   -I/usr/local/cuda/include, to compile in those backends beside the stub.

   scale(x, n, a, b): x[i] = x[i] * a + b for i < n. A gf_module_desc carries each form of the
   same kernel and the backend picks its own: the C function for the stub, OpenCL C for
   OpenCL, PTX for CUDA (made with `nvcc -ptx -arch=compute_75` from the CUDA C below). */
#ifndef EXAMPLE_H
#define EXAMPLE_H
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"          /* with GPUFLOW_CUDA / _HIP / _OPENCL defined, it brings in those backends */
#include <stdio.h>
#include <string.h>

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); return 1; } } while (0)

/* The stub runs this once per thread; args[i] points at argument i. */
static inline void example_scale(const gf_kernel_ctx *ctx, void *const *args) {
    float *x = *(float **)args[0];
    unsigned n = *(const unsigned *)args[1];
    float a = *(const float *)args[2], b = *(const float *)args[3];
    unsigned i = ctx->block_idx[0] * ctx->block[0] + ctx->thread_idx[0];
    if (i < n) x[i] = x[i] * a + b;
}

static inline gf_module_desc example_module_desc(void) {
    static const char example_opencl_source[] =
        "__kernel void scale(__global float *x, uint n, float a, float b) {\n"
        "    uint i = get_global_id(0);\n"
        "    if (i < n) x[i] = x[i] * a + b;\n"
        "}\n";

    /* extern "C" __global__ void scale(float *x, unsigned n, float a, float b) {
           unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
           if (i < n) x[i] = x[i] * a + b;
       } */
    static const char example_ptx[] =
        ".version 9.0\n"
        ".target sm_75\n"
        ".address_size 64\n"
        "\t// .globl\tscale\n"
        ".visible .entry scale(\n"
        "\t.param .u64 scale_param_0,\n"
        "\t.param .u32 scale_param_1,\n"
        "\t.param .f32 scale_param_2,\n"
        "\t.param .f32 scale_param_3\n"
        ")\n"
        "{\n"
        "\t.reg .pred \t%p<2>;\n"
        "\t.reg .f32 \t%f<5>;\n"
        "\t.reg .b32 \t%r<6>;\n"
        "\t.reg .b64 \t%rd<5>;\n"
        "\tld.param.u64 \t%rd1, [scale_param_0];\n"
        "\tld.param.u32 \t%r2, [scale_param_1];\n"
        "\tld.param.f32 \t%f1, [scale_param_2];\n"
        "\tld.param.f32 \t%f2, [scale_param_3];\n"
        "\tmov.u32 \t%r3, %ctaid.x;\n"
        "\tmov.u32 \t%r4, %ntid.x;\n"
        "\tmov.u32 \t%r5, %tid.x;\n"
        "\tmad.lo.s32 \t%r1, %r3, %r4, %r5;\n"
        "\tsetp.ge.u32 \t%p1, %r1, %r2;\n"
        "\t@%p1 bra \t$L__BB0_2;\n"
        "\tcvta.to.global.u64 \t%rd2, %rd1;\n"
        "\tmul.wide.u32 \t%rd3, %r1, 4;\n"
        "\tadd.s64 \t%rd4, %rd2, %rd3;\n"
        "\tld.global.f32 \t%f3, [%rd4];\n"
        "\tfma.rn.f32 \t%f4, %f3, %f1, %f2;\n"
        "\tst.global.f32 \t[%rd4], %f4;\n"
        "$L__BB0_2:\n"
        "\tret;\n"
        "}\n";
    static const gf_stub_kernel stub_kernels[] = { { "scale", example_scale, 4 } };
    gf_module_desc d;
    memset(&d, 0, sizeof d);
    d.ptx = example_ptx;
    d.opencl_source = example_opencl_source;
#ifdef GPUFLOW_TEST_HIP_ON_CUDA   /* tests/hip_on_cuda: the stand-in HIP runtime loads PTX */
    d.hip_code = example_ptx;
    d.hip_code_size = sizeof example_ptx;
#endif
    d.stub_kernels = stub_kernels;
    d.stub_kernel_count = 1;
    return d;
}

/* One thread per element, 128 to a block. */
static inline gf_launch_dims example_dims(unsigned n) {
    gf_launch_dims d = { { 1, 1, 1 }, { 128, 1, 1 }, 0 };
    d.grid[0] = (n + 127) / 128;
    return d;
}
#endif
