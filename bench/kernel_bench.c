/* bench/kernel_bench.c -- kernels written once, in gpuflow's dialect, against the same kernels
   written by hand, on the same device, in the same context, on the same stream, into the same
   buffers, in one run (issue 23: "Kernels written once must not be slower than the same
   kernel written by hand").

    cc -std=c99 -O2 -I. -isystem /usr/local/cuda/include bench/kernel_bench.c -o build/bench/kernel_bench -pthread -ldl -lm
    ./build/bench/kernel_bench                  (from the repository root; BENCH_QUICK=1: fewer reps)
    OCL_ICD_VENDORS=<folder with only NVIDIA's .icd> ./build/bench/kernel_bench   (OpenCL on NVIDIA)

   The kernels (examples/): vector_add.gfk at 2^24 and 2^26 floats; reduce.gfk's block_sum
   (256-thread blocks, a barrier after each of its 9 steps) at 2^24 floats; histogram.gfk
   (64 bins of the low six bits of each byte, per-block shared counts) over 2^24 words, that is
   2^26 byte values, on 1024 blocks of 256 threads (64 words per thread, grid-stride).

   CUDA    gpuflow: the .gfk text compiled by NVRTC inside gpuflow, launched by gf_launch.
           hand:    bench/kernel_bench_native.cu, the same kernels in CUDA C, which this program
                    builds itself (nvcc -O3 -cubin -arch=sm_XY, XY the device's; nvcc from
                    $NVCC, else PATH, else /usr/local/cuda/bin) into build/bench/, loads with
                    cuModuleLoad in gpuflow's CUcontext and launches with cuLaunchKernel on
                    gpuflow's CUstream. Without nvcc that side is skipped with a notice.
   OpenCL  gpuflow: the same .gfk text built by clBuildProgram inside gpuflow on OpenCL device 0
                    (NVIDIA's OpenCL when OCL_ICD_VENDORS names only its .icd; whatever device 0
                    is otherwise, e.g. PoCL), launched by gf_launch.
           hand:    the same kernels in OpenCL C (hand_cl below), built and launched by raw
                    OpenCL calls in gpuflow's cl_context on gpuflow's cl_command_queue.
   Both drivers are reached through dlopen/dlsym (libcuda.so.1, libOpenCL.so.1): nothing is
   linked, nothing of gpuflow's internals is used by the hand-written side.

   Timing: kernel time only, by the device's clock. A batch is one warm-up launch, then R
   launches back to back with a timestamp before the first and after each (cuEventRecord; on
   OpenCL a marker, whose profiled end is when all work before it is done); launch i's time is
   the gap between the two timestamps around it. The queue stays ahead of the device, so the
   host's cost of issuing a launch is hidden and what is left is the kernel. Both sides use the
   same raw timestamps on the same stream. Batches of the sides alternate, the side that goes
   first rotating batch by batch (bench_stats.h's measure_sides); each batch gives its median
   launch, each side the median of its batches. R and the number of batches shrink on a slow
   device (a CPU's OpenCL) so that a figure costs a few seconds at most.
   Printed per kernel and size: gpuflow us, hand us, "ratio (hand / gpuflow, 1.0 = same)":
   below 1 the hand-written kernel is faster; the target is >= 0.98 (a line below is marked).
   vector_add also: bytes moved per second (12n: reads a and b, writes c), against a
   device-to-device gf_copy_buffer_async of 2n floats (16n bytes moved: read and written)
   timed the same way in the same rotation, and against 3350 GB/s (the H100 SXM's HBM3 peak).

   Correctness, once per side before timing, outputs poisoned first: every c[i], every block's
   sum (the inputs are small integers, so every sum is exact in float), every bin and the total
   count; a wrong result prints FAIL and the program exits 1.

   Module load: gf_module_load of each .gfk, cold (desc.cache_dir an empty folder of its own:
   a compile) and warm (from the cache a cold load filled), median of 5 (BENCH_QUICK: 3), in
   ms, on CUDA, OpenCL device 0 and the stub (which has no compiler and no cache: its two
   columns are the same thing). One untimed load first, so a compiler library's first dlopen
   is not in the cold figure. The drivers' own compile caches are left alone: NVIDIA's OpenCL
   (~/.nv/ComputeCache, off with CUDA_CACHE_DISABLE=1) and PoCL (off with POCL_KERNEL_CACHE=0)
   answer a "cold" build from them otherwise; the lines under the table say how they were. */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#define GPUFLOW_OPENCL
#include "gpuflow.h"
#include "bench_stats.h"
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kernels, written once: as text for the device compilers, as C for the stub. */
#define GF_KERNELS GF_KERNELS_AS_TEXT
static const char vector_add_text[] =
#include "../examples/vector_add.gfk"
;
static const char block_sum_text[] =
#include "../examples/reduce.gfk"
;
static const char histogram_text[] =
#include "../examples/histogram.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "../examples/vector_add.gfk"
#include "../examples/reduce.gfk"
#include "../examples/histogram.gfk"
#undef GF_KERNELS

enum { VECTOR_ADD, BLOCK_SUM, HISTOGRAM, KERNELS };
static const char *const kernel_name[KERNELS] = { "vector_add", "block_sum", "histogram" };
static const char *const kernel_file[KERNELS] = { "vector_add.gfk", "reduce.gfk", "histogram.gfk" };
static const char *const kernel_text[KERNELS] = { vector_add_text, block_sum_text, histogram_text };
static const gf_stub_kernel kernel_stub[KERNELS] = {
    GF_STUB_KERNEL(vector_add), GF_STUB_KERNEL(block_sum), GF_STUB_KERNEL(histogram)
};

/* The OpenCL hand-written side: the same algorithms as the .gfk files, written as one would in
   OpenCL C. Barriers fence local memory only, since only local memory is shared between the
   threads of a work-group here. */
static const char hand_cl[] =
    "__kernel void vector_add(__global const float *a, __global const float *b, __global float *c, unsigned n)\n"
    "{\n"
    "    unsigned i = get_global_id(0);\n"
    "    if (i < n) c[i] = a[i] + b[i];\n"
    "}\n"
    "__kernel void block_sum(__global const float *x, __global float *blocks, unsigned n)\n"
    "{\n"
    "    __local float part[256];\n"
    "    unsigned t = get_local_id(0), i = get_global_id(0), step;\n"
    "    part[t] = i < n ? x[i] : 0.0f;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (step = get_local_size(0) / 2; step > 0; step /= 2) {\n"
    "        if (t < step) part[t] += part[t + step];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (t == 0) blocks[get_group_id(0)] = part[0];\n"
    "}\n"
    "__kernel void histogram(__global const unsigned *words, unsigned n_words, __global unsigned *bins)\n"
    "{\n"
    "    __local unsigned counts[64];\n"
    "    unsigned t = get_local_id(0), i, byte;\n"
    "    if (t < 64) counts[t] = 0;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (i = get_global_id(0); i < n_words; i += get_global_size(0))\n"
    "        for (byte = 0; byte < 4; byte++)\n"
    "            atomic_add(&counts[(words[i] >> (8 * byte)) & 63u], 1u);\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (t < 64 && counts[t]) atomic_add(&bins[t], counts[t]);\n"
    "}\n";

#define NATIVE_CU "bench/kernel_bench_native.cu"
#define NATIVE_CUBIN "build/bench/kernel_bench_native.cubin"
#define BLOCK 256u
#define HISTOGRAM_BLOCKS 1024u
#define HBM_PEAK_GBS 3350.0        /* H100 SXM, HBM3 */
#define TARGET_RATIO 0.98
#define MAX_REPS 50                /* launches per batch */

static int quick;                  /* BENCH_QUICK: fewer batches, launches and loads */

static void fail(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    printf("FAIL: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    exit(1);
}
#define GF(call) do { gf_result r_ = (call); \
    if (r_ != GF_OK) fail("%s: %s (%s)", #call, gf_result_name(r_), gf_last_error()); } while (0)

/* ---- the raw drivers: this file's own tables, resolved with dlsym --------------------------- */
static struct {
    CUresult (CUDAAPI *CtxSetCurrent)(CUcontext);
    CUresult (CUDAAPI *CtxGetDevice)(CUdevice *);
    CUresult (CUDAAPI *DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (CUDAAPI *ModuleLoad)(CUmodule *, const char *);
    CUresult (CUDAAPI *ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (CUDAAPI *ModuleUnload)(CUmodule);
    CUresult (CUDAAPI *LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, CUstream, void **, void **);
    CUresult (CUDAAPI *EventCreate)(CUevent *, unsigned);
    CUresult (CUDAAPI *EventRecord)(CUevent, CUstream);
    CUresult (CUDAAPI *EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (CUDAAPI *EventDestroy)(CUevent);
} cu;
static struct {
    cl_program (CL_API_CALL *CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
    cl_int (CL_API_CALL *BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                                       void (CL_CALLBACK *)(cl_program, void *), void *);
    cl_int (CL_API_CALL *GetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *);
    cl_kernel (CL_API_CALL *CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (CL_API_CALL *SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (CL_API_CALL *EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
                                               const size_t *, cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *EnqueueMarkerWithWaitList)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *Flush)(cl_command_queue);
    cl_int (CL_API_CALL *GetEventProfilingInfo)(cl_event, cl_profiling_info, size_t, void *, size_t *);
    cl_int (CL_API_CALL *ReleaseEvent)(cl_event);
    cl_int (CL_API_CALL *ReleaseKernel)(cl_kernel);
    cl_int (CL_API_CALL *ReleaseProgram)(cl_program);
} cl;

/* name, else alt, into *slot (a function pointer's storage: memcpy keeps ISO C quiet). */
static int resolve(void *lib, const char *name, const char *alt, void *slot) {
    void *p = dlsym(lib, name);
    if (!p && alt) p = dlsym(lib, alt);
    if (!p) { printf("  notice: the driver library has no %s\n", name); return 0; }
    memcpy(slot, &p, sizeof p);
    return 1;
}
static int load_cuda(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("  notice: dlopen libcuda.so.1: %s\n", dlerror()); return 0; }
    /* the _v2 names are the ones cuda.h maps these calls to; the plain ones for older drivers */
    return resolve(lib, "cuCtxSetCurrent", NULL, &cu.CtxSetCurrent) && resolve(lib, "cuCtxGetDevice", NULL, &cu.CtxGetDevice) &&
           resolve(lib, "cuDeviceGetAttribute", NULL, &cu.DeviceGetAttribute) && resolve(lib, "cuModuleLoad", NULL, &cu.ModuleLoad) &&
           resolve(lib, "cuModuleGetFunction", NULL, &cu.ModuleGetFunction) &&
           resolve(lib, "cuModuleUnload", NULL, &cu.ModuleUnload) && resolve(lib, "cuLaunchKernel", NULL, &cu.LaunchKernel) &&
           resolve(lib, "cuEventCreate", NULL, &cu.EventCreate) && resolve(lib, "cuEventRecord", NULL, &cu.EventRecord) &&
           resolve(lib, "cuEventElapsedTime_v2", "cuEventElapsedTime", &cu.EventElapsedTime) &&
           resolve(lib, "cuEventDestroy_v2", "cuEventDestroy", &cu.EventDestroy);
}
static int load_opencl(void) {
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("  notice: dlopen libOpenCL.so.1: %s\n", dlerror()); return 0; }
    return resolve(lib, "clCreateProgramWithSource", NULL, &cl.CreateProgramWithSource) &&
           resolve(lib, "clBuildProgram", NULL, &cl.BuildProgram) && resolve(lib, "clGetProgramBuildInfo", NULL, &cl.GetProgramBuildInfo) &&
           resolve(lib, "clCreateKernel", NULL, &cl.CreateKernel) && resolve(lib, "clSetKernelArg", NULL, &cl.SetKernelArg) &&
           resolve(lib, "clEnqueueNDRangeKernel", NULL, &cl.EnqueueNDRangeKernel) &&
           resolve(lib, "clEnqueueMarkerWithWaitList", NULL, &cl.EnqueueMarkerWithWaitList) &&
           resolve(lib, "clFlush", NULL, &cl.Flush) && resolve(lib, "clGetEventProfilingInfo", NULL, &cl.GetEventProfilingInfo) &&
           resolve(lib, "clReleaseEvent", NULL, &cl.ReleaseEvent) && resolve(lib, "clReleaseKernel", NULL, &cl.ReleaseKernel) &&
           resolve(lib, "clReleaseProgram", NULL, &cl.ReleaseProgram);
}
#define CU(call) do { CUresult e_ = (call); if (e_ != CUDA_SUCCESS) fail("%s: CUresult %d", #call, (int)e_); } while (0)
#define CL(call) do { cl_int e_ = (call); if (e_ != CL_SUCCESS) fail("%s: cl_int %d", #call, (int)e_); } while (0)

/* ---- one device under test ---------------------------------------------------------------- */
typedef struct target {
    gf_device *dev;
    gf_stream *s;
    int cuda;                                  /* else OpenCL */
    gf_module *mod[KERNELS];
    gf_kernel *k[KERNELS];
    int have_hand;
    char hand_how[160];                        /* how the hand-written side was built */
    CUcontext ctx; CUstream stream; CUmodule hand_mod; CUfunction hand_fn[KERNELS];
    CUevent ev[MAX_REPS + 1];
    cl_command_queue queue; cl_device_id cl_dev; cl_program hand_prog; cl_kernel hand_k[KERNELS];
    cl_event marker[MAX_REPS + 1];
} target;

/* One kernel at one size, its buffers in its parameter order. */
typedef struct job {
    int kernel;
    unsigned n;                                /* elements (floats or words) */
    gf_launch_dims dims;
    gf_buffer *buf[3];
    gf_buffer *copy_src, *copy_dst;            /* vector_add: 2n floats each */
} job;

enum { SIDE_GPUFLOW, SIDE_HAND, SIDE_COPY };

static void launch(target *t, job *j, int side) {
    if (side == SIDE_COPY) {
        GF(gf_copy_buffer_async(t->s, j->copy_dst, 0, j->copy_src, 0, (size_t)j->n * 8));
    } else if (side == SIDE_GPUFLOW) {
        gf_result r;
        if (j->kernel == VECTOR_ADD) {
            gf_arg a[4] = { GF_ARG_BUFFER_READ(j->buf[0]), GF_ARG_BUFFER_READ(j->buf[1]), GF_ARG_BUFFER(j->buf[2]), GF_ARG(j->n) };
            r = gf_launch(t->s, t->k[VECTOR_ADD], j->dims, a, 4);
        } else if (j->kernel == BLOCK_SUM) {
            gf_arg a[3] = { GF_ARG_BUFFER_READ(j->buf[0]), GF_ARG_BUFFER(j->buf[1]), GF_ARG(j->n) };
            r = gf_launch(t->s, t->k[BLOCK_SUM], j->dims, a, 3);
        } else {
            gf_arg a[3] = { GF_ARG_BUFFER_READ(j->buf[0]), GF_ARG(j->n), GF_ARG_BUFFER(j->buf[1]) };
            r = gf_launch(t->s, t->k[HISTOGRAM], j->dims, a, 3);
        }
        if (r != GF_OK) fail("gf_launch(%s): %s (%s)", kernel_name[j->kernel], gf_result_name(r), gf_last_error());
    } else if (t->cuda) {
        CUdeviceptr p[3] = { 0, 0, 0 };
        void *params[4];
        int i;
        for (i = 0; i < 3; i++) p[i] = j->buf[i] ? (CUdeviceptr)gf_buffer_native(j->buf[i]) : 0;
        if (j->kernel == HISTOGRAM) { params[0] = &p[0]; params[1] = &j->n; params[2] = &p[1]; }
        else if (j->kernel == BLOCK_SUM) { params[0] = &p[0]; params[1] = &p[1]; params[2] = &j->n; }
        else { params[0] = &p[0]; params[1] = &p[1]; params[2] = &p[2]; params[3] = &j->n; }
        CU(cu.LaunchKernel(t->hand_fn[j->kernel], j->dims.grid[0], 1, 1, j->dims.block[0], 1, 1, 0, t->stream, params, NULL));
    } else {
        cl_kernel k = t->hand_k[j->kernel];
        cl_mem m[3] = { NULL, NULL, NULL };
        size_t global = (size_t)j->dims.grid[0] * j->dims.block[0], local = j->dims.block[0];
        int i;
        for (i = 0; i < 3; i++) m[i] = j->buf[i] ? (cl_mem)(uintptr_t)gf_buffer_native(j->buf[i]) : NULL;
        /* set every launch, as gpuflow must (a cl_kernel's arguments are shared state) */
        if (j->kernel == HISTOGRAM) {
            CL(cl.SetKernelArg(k, 0, sizeof m[0], &m[0]));
            CL(cl.SetKernelArg(k, 1, sizeof j->n, &j->n));
            CL(cl.SetKernelArg(k, 2, sizeof m[1], &m[1]));
        } else if (j->kernel == BLOCK_SUM) {
            CL(cl.SetKernelArg(k, 0, sizeof m[0], &m[0]));
            CL(cl.SetKernelArg(k, 1, sizeof m[1], &m[1]));
            CL(cl.SetKernelArg(k, 2, sizeof j->n, &j->n));
        } else {
            CL(cl.SetKernelArg(k, 0, sizeof m[0], &m[0]));
            CL(cl.SetKernelArg(k, 1, sizeof m[1], &m[1]));
            CL(cl.SetKernelArg(k, 2, sizeof m[2], &m[2]));
            CL(cl.SetKernelArg(k, 3, sizeof j->n, &j->n));
        }
        CL(cl.EnqueueNDRangeKernel(t->queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
    }
}

/* Timestamp i on the stream; after a synchronize, ms between timestamps i and i + 1. */
static void mark(target *t, int i) {
    if (t->cuda) { CU(cu.EventRecord(t->ev[i], t->stream)); return; }
    CL(cl.EnqueueMarkerWithWaitList(t->queue, 0, NULL, &t->marker[i]));
    CL(cl.Flush(t->queue));   /* to the device now, so it never waits for the host */
}
static double span_ms(target *t, int i) {
    if (t->cuda) {
        float ms = 0;
        CU(cu.EventElapsedTime(&ms, t->ev[i], t->ev[i + 1]));
        return ms;
    } else {
        cl_ulong a = 0, b = 0;
        CL(cl.GetEventProfilingInfo(t->marker[i], CL_PROFILING_COMMAND_END, sizeof a, &a, NULL));
        CL(cl.GetEventProfilingInfo(t->marker[i + 1], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL));
        if (!a || !b) fail("OpenCL: this platform gives markers no timestamps");
        return (double)(cl_long)(b - a) * 1e-6;
    }
}
static void release_marks(target *t, int count) {
    int i;
    if (t->cuda) return;
    for (i = 0; i < count; i++) { cl.ReleaseEvent(t->marker[i]); t->marker[i] = NULL; }
}

/* One batch of one side: the median launch of reps back-to-back launches, in ms. */
static target *cur_t;
static job *cur_j;
static int cur_side[3], cur_reps, cur_warm;
static double batch(int k) {
    target *t = cur_t;
    double v[MAX_REPS];
    int r;
    for (r = 0; r < cur_warm; r++) launch(t, cur_j, cur_side[k]);   /* the device is busy before the first timestamp */
    mark(t, 0);
    for (r = 0; r < cur_reps; r++) { launch(t, cur_j, cur_side[k]); mark(t, r + 1); }
    GF(gf_stream_synchronize(t->s));
    for (r = 0; r < cur_reps; r++) v[r] = span_ms(t, r);
    release_marks(t, cur_reps + 1);
    return median(v, cur_reps);
}

/* ---- correctness, once per side ------------------------------------------------------------ */
static void check(target *t, job *j, int side, const void *want, const char *label) {
    size_t count = j->kernel == VECTOR_ADD ? j->n : j->kernel == BLOCK_SUM ? j->dims.grid[0] : 64;
    gf_buffer *out = j->kernel == VECTOR_ADD ? j->buf[2] : j->buf[1];
    void *got = malloc(count * 4);
    size_t i, bad = 0, first = 0;
    if (!got) fail("out of host memory");
    if (j->kernel == HISTOGRAM) GF(gf_fill_async(t->s, out, 0, 0, count * 4));      /* bins start at zero */
    else GF(gf_fill_async(t->s, out, 0, 0xff, count * 4));                         /* NaN: what was not written fails */
    launch(t, j, side);
    GF(gf_stream_synchronize(t->s));
    GF(gf_copy_to_host(got, out, 0, count * 4));
    if (j->kernel == HISTOGRAM) {
        const unsigned *g = (const unsigned *)got, *w = (const unsigned *)want;
        unsigned long long total = 0;
        for (i = 0; i < count; i++) { total += g[i]; if (g[i] != w[i] && !bad++) first = i; }
        if (total != 4ull * j->n) fail("%s %s: %llu bytes counted, %llu expected", label, kernel_name[j->kernel], total, 4ull * j->n);
    } else {
        const float *g = (const float *)got, *w = (const float *)want;
        for (i = 0; i < count; i++) if (g[i] != w[i] && !bad++) first = i;
    }
    if (bad) fail("%s %s (n = %u): %zu of %zu results wrong, the first at %zu", label, kernel_name[j->kernel], j->n, bad, count, first);
    free(got);
}

/* ---- one kernel at one size on one target ------------------------------------------------- */
static void print_row(const char *kernel, unsigned n, double gf_ms, double hand_ms, int have_hand) {
    char size[16];
    int log2n = 0;
    while ((1u << log2n) < n) log2n++;
    snprintf(size, sizeof size, "2^%d", log2n);
    if (have_hand)
        printf("  %-11s %-5s %12.2f %12.2f %10.3f%s\n", kernel, size, gf_ms * 1e3, hand_ms * 1e3, hand_ms / gf_ms,
               hand_ms / gf_ms < TARGET_RATIO ? "   < target" : "");
    else
        printf("  %-11s %-5s %12.2f %12s %10s\n", kernel, size, gf_ms * 1e3, "-", "-");
}

static void run_job(target *t, int kernel, unsigned n) {
    job j;
    void *host = NULL, *want = NULL;
    double med[3], probe;
    int sides = 0, batches, i;
    size_t bytes = (size_t)n * 4;
    memset(&j, 0, sizeof j);
    j.kernel = kernel;
    j.n = n;
    j.dims.grid[0] = kernel == HISTOGRAM ? HISTOGRAM_BLOCKS : (n + BLOCK - 1) / BLOCK;
    j.dims.block[0] = BLOCK;
    j.dims.grid[1] = j.dims.grid[2] = j.dims.block[1] = j.dims.block[2] = 1;

    /* inputs, and the expected outputs computed here */
    if (kernel == VECTOR_ADD) {
        float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
        if (!a || !b || !c) fail("out of host memory");
        for (i = 0; i < (int)n; i++) { a[i] = (float)(i & 1023); b[i] = (float)((i >> 10) & 1023); c[i] = a[i] + b[i]; }
        GF(gf_buffer_create(t->dev, bytes, &j.buf[0]));
        GF(gf_buffer_create(t->dev, bytes, &j.buf[1]));
        GF(gf_buffer_create(t->dev, bytes, &j.buf[2]));
        GF(gf_buffer_create(t->dev, 2 * bytes, &j.copy_src));
        GF(gf_buffer_create(t->dev, 2 * bytes, &j.copy_dst));
        GF(gf_copy_to_device(j.buf[0], 0, a, bytes));
        GF(gf_copy_to_device(j.buf[1], 0, b, bytes));
        GF(gf_fill_async(t->s, j.copy_src, 0, 0x3f, 2 * bytes));
        GF(gf_fill_async(t->s, j.copy_dst, 0, 0, 2 * bytes));
        free(a); free(b);
        want = c;
    } else if (kernel == BLOCK_SUM) {
        float *x = (float *)malloc(bytes), *sums = (float *)malloc((size_t)j.dims.grid[0] * 4);
        if (!x || !sums) fail("out of host memory");
        for (i = 0; i < (int)n; i++) x[i] = (float)(i % 7);
        for (i = 0; i < (int)j.dims.grid[0]; i++) {   /* integers below 2^24: exact in any order */
            long s = 0;
            unsigned e;
            for (e = 0; e < BLOCK; e++) s += ((unsigned)i * BLOCK + e) % 7;
            sums[i] = (float)s;
        }
        GF(gf_buffer_create(t->dev, bytes, &j.buf[0]));
        GF(gf_buffer_create(t->dev, (size_t)j.dims.grid[0] * 4, &j.buf[1]));
        GF(gf_copy_to_device(j.buf[0], 0, x, bytes));
        host = x;
        want = sums;
    } else {
        unsigned *w = (unsigned *)malloc(bytes), *bins = (unsigned *)calloc(64, 4), seed = 12345, b;
        if (!w || !bins) fail("out of host memory");
        for (i = 0; i < (int)n; i++) {
            seed = seed * 1664525u + 1013904223u;   /* reproducible bytes */
            w[i] = seed;
            for (b = 0; b < 4; b++) bins[(seed >> (8 * b)) & 63u]++;
        }
        GF(gf_buffer_create(t->dev, bytes, &j.buf[0]));
        GF(gf_buffer_create(t->dev, 64 * 4, &j.buf[1]));
        GF(gf_copy_to_device(j.buf[0], 0, w, bytes));
        host = w;
        want = bins;
    }
    free(host);

    check(t, &j, SIDE_GPUFLOW, want, "gpuflow");
    if (t->have_hand) check(t, &j, SIDE_HAND, want, "hand-written");
    free(want);

    /* launches per batch and batches: fewer on a slow device, so each figure costs seconds */
    cur_t = t;
    cur_j = &j;
    cur_side[sides++] = SIDE_GPUFLOW;
    if (t->have_hand) cur_side[sides++] = SIDE_HAND;
    if (kernel == VECTOR_ADD) cur_side[sides++] = SIDE_COPY;
    cur_reps = 1;
    cur_warm = 1;
    probe = batch(0);
    cur_reps = probe > 0 ? (int)((quick ? 10.0 : 30.0) / probe) : MAX_REPS;
    if (cur_reps > (quick ? 10 : MAX_REPS)) cur_reps = quick ? 10 : MAX_REPS;
    if (cur_reps < 3) cur_reps = 3;
    batches = quick ? 5 : 15;
    while (batches > 3 && batches * sides * (cur_reps + cur_warm) * probe > (quick ? 1500.0 : 4000.0)) batches--;
    measure_sides(batch, sides, batches, med);

    print_row(kernel_name[kernel], n, med[0], t->have_hand ? med[1] : 0, t->have_hand);
    if (kernel == VECTOR_ADD) {
        double copy_ms = med[sides - 1], copy_gbs = 16.0 * n / (copy_ms * 1e6);
        int s;
        for (s = 0; s < sides - 1; s++) {
            double gbs = 12.0 * n / (med[s] * 1e6);
            printf("      %-8s %7.1f GB/s moved = %.3f of the D2D copy (%.1f GB/s, %.1f us for 2n floats) = %.3f of %.0f GB/s\n",
                   s == 0 ? "gpuflow" : "hand", gbs, gbs / copy_gbs, copy_gbs, copy_ms * 1e3, gbs / HBM_PEAK_GBS, HBM_PEAK_GBS);
        }
    }
    fflush(stdout);
    for (i = 0; i < 3; i++) if (j.buf[i]) gf_buffer_destroy(j.buf[i]);
    if (j.copy_src) gf_buffer_destroy(j.copy_src);
    if (j.copy_dst) gf_buffer_destroy(j.copy_dst);
    GF(gf_stream_synchronize(t->s));
}

static void run_kernels(target *t) {
    gf_module_desc md;
    int k;
    for (k = 0; k < KERNELS; k++) {
        memset(&md, 0, sizeof md);
        md.source = kernel_text[k];
        md.source_name = kernel_file[k];
        md.stub_kernels = &kernel_stub[k];
        md.stub_kernel_count = 1;
        GF(gf_module_load(t->dev, &md, &t->mod[k]));
        GF(gf_kernel_get(t->mod[k], kernel_name[k], &t->k[k]));
    }
    printf("  hand-written: %s\n", t->have_hand ? t->hand_how : "skipped (see the notice above)");
    printf("  %-11s %-5s %12s %12s   %s (target >= %.2f)\n", "kernel", "size", "gpuflow us", "hand us",
           "ratio (hand / gpuflow, 1.0 = same)", TARGET_RATIO);
    run_job(t, VECTOR_ADD, 1u << 24);
    run_job(t, VECTOR_ADD, 1u << 26);
    run_job(t, BLOCK_SUM, 1u << 24);
    run_job(t, HISTOGRAM, 1u << 24);
    for (k = 0; k < KERNELS; k++) gf_module_destroy(t->mod[k]);
}

/* ---- CUDA: gpuflow's NVRTC against nvcc ----------------------------------------------------- */
static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
/* $NVCC, else nvcc on PATH, else the toolkit's usual place; NULL if none. */
static const char *find_nvcc(char *buf, size_t cap) {
    const char *env = getenv("NVCC"), *path = getenv("PATH"), *p;
    if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
    for (p = path; p && *p; ) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && len + 6 < cap) {
            memcpy(buf, p, len);
            memcpy(buf + len, "/nvcc", 6);
            if (is_file(buf) && access(buf, X_OK) == 0) return buf;
        }
        p = end ? end + 1 : p + len;
    }
    return access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : NULL;
}
static void cuda_hand_setup(target *t) {
    char nvcc_buf[4096], cmd[8192];
    const char *nvcc = find_nvcc(nvcc_buf, sizeof nvcc_buf);
    CUdevice d;
    int major = 9, minor = 0, k;
    if (!nvcc) {
        printf("  notice: no nvcc (%s): the hand-written side is skipped\n",
               getenv("NVCC") && *getenv("NVCC") ? "$NVCC is not an executable" : "not on PATH, not in /usr/local/cuda/bin");
        return;
    }
    if (!is_file(NATIVE_CU)) { printf("  notice: %s not found (run from the repository root): the hand-written side is skipped\n", NATIVE_CU); return; }
    CU(cu.CtxSetCurrent(t->ctx));   /* gpuflow's own context; gpuflow sets it again itself */
    CU(cu.CtxGetDevice(&d));
    CU(cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
    CU(cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d));
    (void)mkdir("build", 0777);
    (void)mkdir("build/bench", 0777);
    snprintf(cmd, sizeof cmd, "\"%s\" -O3 -cubin -arch=sm_%d%d %s -o %s", nvcc, major, minor, NATIVE_CU, NATIVE_CUBIN);
    printf("  $ %s\n", cmd);
    fflush(stdout);
    if (system(cmd) != 0) fail("nvcc could not build %s", NATIVE_CU);
    CU(cu.ModuleLoad(&t->hand_mod, NATIVE_CUBIN));
    for (k = 0; k < KERNELS; k++) CU(cu.ModuleGetFunction(&t->hand_fn[k], t->hand_mod, kernel_name[k]));
    snprintf(t->hand_how, sizeof t->hand_how, "%s, nvcc -O3 -cubin -arch=sm_%d%d, cuModuleLoad + cuLaunchKernel", NATIVE_CU, major, minor);
    t->have_hand = 1;
}
static void cuda_section(void) {
    target t;
    gf_native_device nd;
    int i;
    memset(&t, 0, sizeof t);
    printf("\n== CUDA: gpuflow (the .gfk through NVRTC, gf_launch) vs hand-written CUDA C\n");
    if (!gf_backend_available(GF_BACKEND_CUDA) || gf_device_open(GF_BACKEND_CUDA, 0, &t.dev) != GF_OK) {
        printf("  notice: CUDA is not available here (%s): section skipped\n", gf_last_error());
        return;
    }
    if (!load_cuda()) { printf("  notice: the raw CUDA entry points are missing: section skipped\n"); gf_device_close(t.dev); return; }
    printf("  device: %s\n", gf_device_name(t.dev));
    t.cuda = 1;
    GF(gf_stream_create(t.dev, NULL, &t.s));
    GF(gf_device_get_native(t.dev, &nd));
    t.ctx = (CUcontext)nd.context;
    t.stream = (CUstream)gf_stream_native(t.s);
    CU(cu.CtxSetCurrent(t.ctx));
    for (i = 0; i <= MAX_REPS; i++) CU(cu.EventCreate(&t.ev[i], CU_EVENT_DEFAULT));
    cuda_hand_setup(&t);
    run_kernels(&t);
    CU(cu.CtxSetCurrent(t.ctx));
    for (i = 0; i <= MAX_REPS; i++) cu.EventDestroy(t.ev[i]);
    if (t.hand_mod) cu.ModuleUnload(t.hand_mod);
    gf_stream_destroy(t.s);
    gf_device_close(t.dev);
}

/* ---- OpenCL: gpuflow's clBuildProgram of the dialect against OpenCL C by hand --------------- */
static void opencl_section(void) {
    target t;
    gf_native_device nd;
    cl_int e;
    int k;
    memset(&t, 0, sizeof t);
    printf("\n== OpenCL: gpuflow (the .gfk through clBuildProgram, gf_launch) vs hand-written OpenCL C\n");
    if (!gf_backend_available(GF_BACKEND_OPENCL) || gf_device_count(GF_BACKEND_OPENCL) < 1 ||
        gf_device_open(GF_BACKEND_OPENCL, 0, &t.dev) != GF_OK) {
        printf("  notice: no OpenCL device 0 here (%s): section skipped\n", gf_last_error());
        return;
    }
    if (!load_opencl()) { printf("  notice: the raw OpenCL entry points are missing: section skipped\n"); gf_device_close(t.dev); return; }
    printf("  device 0: %s\n", gf_device_name(t.dev));
    if (!strstr(gf_device_name(t.dev), "NVIDIA"))
        printf("  notice: not NVIDIA's OpenCL (run with OCL_ICD_VENDORS naming a folder with only NVIDIA's .icd for that)\n");
    GF(gf_stream_create(t.dev, NULL, &t.s));
    GF(gf_device_get_native(t.dev, &nd));
    t.queue = (cl_command_queue)gf_stream_native(t.s);
    t.cl_dev = (cl_device_id)nd.device;
    {
        const char *src = hand_cl;
        t.hand_prog = cl.CreateProgramWithSource((cl_context)nd.context, 1, &src, NULL, &e);
        if (!t.hand_prog) fail("clCreateProgramWithSource: cl_int %d", (int)e);
        if ((e = cl.BuildProgram(t.hand_prog, 1, &t.cl_dev, NULL, NULL, NULL)) != CL_SUCCESS) {
            char log[8192] = "";
            cl.GetProgramBuildInfo(t.hand_prog, t.cl_dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
            fail("clBuildProgram of the hand-written kernels: cl_int %d\n%s", (int)e, log);
        }
        for (k = 0; k < KERNELS; k++)
            if (!(t.hand_k[k] = cl.CreateKernel(t.hand_prog, kernel_name[k], &e))) fail("clCreateKernel(%s): cl_int %d", kernel_name[k], (int)e);
    }
    snprintf(t.hand_how, sizeof t.hand_how, "OpenCL C in this file, clBuildProgram (no options) + clEnqueueNDRangeKernel on gpuflow's queue");
    t.have_hand = 1;
    run_kernels(&t);
    for (k = 0; k < KERNELS; k++) cl.ReleaseKernel(t.hand_k[k]);
    cl.ReleaseProgram(t.hand_prog);
    gf_stream_destroy(t.s);
    gf_device_close(t.dev);
}

/* ---- module load: cold (compile into an empty cache) and warm (from it) ---------------------- */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    if (d) {
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            (void)remove(path);
        }
        closedir(d);
    }
    (void)rmdir(dir);
}
static char *new_cache_dir(char *buf, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, cap, "%s/kernel_bench_cache.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(buf)) fail("mkdtemp(%s)", buf);
    return buf;
}
/* ms of one gf_module_load of kernel k with cache_dir dir ("" : no cache) */
static double load_ms(gf_device *dev, int k, const char *dir) {
    gf_module_desc md;
    gf_module *m;
    double t0;
    gf_result r;
    memset(&md, 0, sizeof md);
    md.source = kernel_text[k];
    md.source_name = kernel_file[k];
    md.stub_kernels = &kernel_stub[k];
    md.stub_kernel_count = 1;
    md.cache_dir = dir;
    t0 = now_s();
    r = gf_module_load(dev, &md, &m);
    t0 = now_s() - t0;
    if (r != GF_OK) fail("gf_module_load(%s) on %s: %s (%s)", kernel_file[k], gf_device_name(dev), gf_result_name(r), gf_last_error());
    gf_module_destroy(m);
    return t0 * 1e3;
}
static void module_section(void) {
    static const gf_backend backends[3] = { GF_BACKEND_CUDA, GF_BACKEND_OPENCL, GF_BACKEND_STUB };
    static const char *const names[3] = { "CUDA", "OpenCL", "stub" };
    double cold[3][KERNELS], warm[3][KERNELS];
    int have[3], b, k, r, reps = quick ? 3 : 5;
    const char *nv_cache = getenv("CUDA_CACHE_DISABLE"), *pocl_cache = getenv("POCL_KERNEL_CACHE");
    printf("\n== module load: gf_module_load of each .gfk, ms, median of %d; cold = compiled into an empty cache "
           "(desc.cache_dir), warm = from that cache\n", reps);
    for (b = 0; b < 3; b++) {
        gf_device *dev = NULL;
        have[b] = gf_backend_available(backends[b]) && gf_device_open(backends[b], 0, &dev) == GF_OK;
        if (!have[b]) { printf("  %-6s not available here: %s\n", names[b], gf_last_error()); continue; }
        printf("  %-6s %s\n", names[b], gf_device_name(dev));
        fflush(stdout);
        for (k = 0; k < KERNELS; k++) {
            double c[8], w[8];
            char dir[4096];
            (void)load_ms(dev, k, "");   /* untimed: the compiler's own first load */
            for (r = 0; r < reps; r++) {
                new_cache_dir(dir, sizeof dir);
                c[r] = load_ms(dev, k, dir);
                if (r < reps - 1) remove_dir(dir);   /* every cold load gets an empty one */
            }
            for (r = 0; r < reps; r++) w[r] = load_ms(dev, k, dir);
            remove_dir(dir);
            cold[b][k] = median(c, reps);
            warm[b][k] = median(w, reps);
        }
        gf_device_close(dev);
    }
    printf("  %-15s", "kernel file");
    for (b = 0; b < 3; b++) printf(" %8s cold %9s", names[b], "warm");
    printf("\n");
    for (k = 0; k < KERNELS; k++) {
        printf("  %-15s", kernel_file[k]);
        for (b = 0; b < 3; b++)
            if (have[b]) printf(" %13.3f %9.3f", cold[b][k], warm[b][k]);
            else printf(" %13s %9s", "-", "-");
        printf("\n");
    }
    printf("  the stub compiles nothing and caches nothing: its cold and warm are the same load.\n"
           "  drivers' own compile caches are left as they are: NVIDIA's (~/.nv/ComputeCache) with CUDA_CACHE_DISABLE=%s, "
           "PoCL's with POCL_KERNEL_CACHE=%s;\n  cold compiles everything only with CUDA_CACHE_DISABLE=1 and POCL_KERNEL_CACHE=0\n",
           nv_cache ? nv_cache : "unset", pocl_cache ? pocl_cache : "unset");
}

int main(void) {
    const char *q = getenv("BENCH_QUICK");
    quick = q && *q && strcmp(q, "0") != 0;
    printf("kernel_bench: kernels written once (gpuflow's dialect) vs the same kernels by hand%s\n",
           quick ? " (BENCH_QUICK: fewer reps)" : "");
    printf("  kernel time from device timestamps around each of R back-to-back launches; median launch per batch, "
           "median batch per side, sides alternating\n");
    cuda_section();
    opencl_section();
    module_section();
    return 0;
}
