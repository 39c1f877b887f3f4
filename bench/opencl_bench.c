/* opencl_bench.c -- gpuflow's OpenCL backend against the raw OpenCL API, in one run.

    cc -std=c99 -O2 -I. bench/opencl_bench.c -o opencl_bench -ldl -pthread
    ./opencl_bench [device index]

    1. launch cost: an empty kernel launched N times with gf_launch, and with clSetKernelArg +
       clEnqueueNDRangeKernel; host time per launch to enqueue, and per launch including the
       wait for all of them.
    2. pinned copy bandwidth: host -> device and device -> host, pinned memory from
       gf_host_alloc against a mapped CL_MEM_ALLOC_HOST_PTR buffer used the same way raw
       (64 MiB on a CPU device, 256 MiB otherwise), each copy async then a wait.

    The raw side loads the ICD loader itself (its own function table, nothing of gpuflow's
    internals), picks the device whose "platform: device" name gpuflow reports, and makes its
    queue as gpuflow does (in order, profiling on), so a ratio is the library's overhead.
    Each figure is the best of several alternating rounds. ratio = gpuflow / raw (time: above
    1 is slower; bandwidth: below 1 is slower).
*/
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_OPENCL
#include "gpuflow_opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(_WIN32)
#  include <windows.h>
#else
#  include <dlfcn.h>
#endif

/* ---- the raw side's own function table ---------------------------------------------------- */
static struct {
    cl_int (CL_API_CALL *GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (CL_API_CALL *GetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
    cl_int (CL_API_CALL *GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
    cl_int (CL_API_CALL *GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
    cl_context (CL_API_CALL *CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                            void (CL_CALLBACK *)(const char *, const void *, size_t, void *),
                                            void *, cl_int *);
    cl_command_queue (CL_API_CALL *CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties, cl_int *);
    cl_program (CL_API_CALL *CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
    cl_int (CL_API_CALL *BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                                       void (CL_CALLBACK *)(cl_program, void *), void *);
    cl_kernel (CL_API_CALL *CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (CL_API_CALL *SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (CL_API_CALL *EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
                                               const size_t *, cl_uint, const cl_event *, cl_event *);
    cl_mem (CL_API_CALL *CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    void *(CL_API_CALL *EnqueueMapBuffer)(cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t,
                                          cl_uint, const cl_event *, cl_event *, cl_int *);
    cl_int (CL_API_CALL *EnqueueUnmapMemObject)(cl_command_queue, cl_mem, void *, cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *,
                                             cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                            cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *Finish)(cl_command_queue);
    cl_int (CL_API_CALL *ReleaseMemObject)(cl_mem);
    cl_int (CL_API_CALL *ReleaseKernel)(cl_kernel);
    cl_int (CL_API_CALL *ReleaseEvent)(cl_event);
    cl_int (CL_API_CALL *ReleaseProgram)(cl_program);
    cl_int (CL_API_CALL *ReleaseCommandQueue)(cl_command_queue);
    cl_int (CL_API_CALL *ReleaseContext)(cl_context);
} raw;

static int raw_load(void) {
#if defined(_WIN32)
    void *lib = (void *)LoadLibraryA("OpenCL.dll");
#  define RAW_SYM(lib, name) (void *)GetProcAddress((HMODULE)(lib), name)
#else
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
#  define RAW_SYM(lib, name) dlsym(lib, name)
#endif
    const char *missing = NULL;
    if (!lib) { fprintf(stderr, "raw: cannot load the OpenCL ICD loader\n"); return 0; }
#define RAW(f) do { void *p_ = RAW_SYM(lib, "cl" #f); if (!p_) missing = "cl" #f; memcpy(&raw.f, &p_, sizeof p_); } while (0)
    RAW(GetPlatformIDs); RAW(GetPlatformInfo); RAW(GetDeviceIDs); RAW(GetDeviceInfo); RAW(CreateContext);
    RAW(CreateCommandQueue); RAW(ReleaseEvent); RAW(CreateProgramWithSource); RAW(BuildProgram); RAW(CreateKernel);
    RAW(SetKernelArg); RAW(EnqueueNDRangeKernel); RAW(CreateBuffer); RAW(EnqueueMapBuffer);
    RAW(EnqueueUnmapMemObject); RAW(EnqueueWriteBuffer); RAW(EnqueueReadBuffer); RAW(Finish);
    RAW(ReleaseMemObject); RAW(ReleaseKernel); RAW(ReleaseProgram); RAW(ReleaseCommandQueue); RAW(ReleaseContext);
#undef RAW
    if (missing) { fprintf(stderr, "raw: the ICD loader has no %s\n", missing); return 0; }
    return 1;
}

/* The device gpuflow opened, found by its "platform: device" name. */
static int raw_find(const char *want, cl_platform_id *plat, cl_device_id *dev) {
    cl_platform_id ps[16];
    cl_uint np = 0, p;
    if (raw.GetPlatformIDs(16, ps, &np) != CL_SUCCESS) return 0;
    for (p = 0; p < np && p < 16; p++) {
        cl_device_id ds[64];
        cl_uint nd = 0, d;
        char pname[100] = "";
        raw.GetPlatformInfo(ps[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        if (raw.GetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, 64, ds, &nd) != CL_SUCCESS) continue;
        for (d = 0; d < nd && d < 64; d++) {
            char dname[150] = "", both[256];
            raw.GetDeviceInfo(ds[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
            snprintf(both, sizeof both, "%s: %s", pname, dname);
            if (strcmp(both, want) == 0) { *plat = ps[p]; *dev = ds[d]; return 1; }
        }
    }
    return 0;
}

static double now_s(void) {
#if defined(_WIN32)
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f); QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
}

#define GF_CHECK(x) do { gf_result r_ = (x); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s: %s\n", #x, gf_result_name(r_), gf_last_error()); exit(1); } } while (0)
#define CL_CHECK(x) do { cl_int e_ = (x); if (e_ != CL_SUCCESS) { \
    fprintf(stderr, "%s failed: %d\n", #x, (int)e_); exit(1); } } while (0)

static const char *kernel_src = "__kernel void empty(int a) { (void)a; }\n";

static void row(const char *what, double gf, double rw) {
    printf("  %-34s %12.3f %12.3f %8.3f\n", what, gf, rw, gf / rw);
}

int main(int argc, char **argv) {
    int index = argc > 1 ? atoi(argv[1]) : 0, round, i;
    gf_device *dev;
    gf_stream *s;
    gf_module *mod;
    gf_kernel *k;
    gf_buffer *buf;
    void *gf_host;
    cl_platform_id plat;
    cl_device_id rdev;
    cl_device_type type = 0;
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel rk;
    cl_mem rbuf, rpin;
    void *raw_host;
    cl_int e;
    int launches, rounds = 5, copies;
    size_t bytes;
    double best[8], evented = 1e30;
    gf_module_desc md;
    gf_launch_dims dims = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    int value = 7;
    gf_arg args[1] = { GF_ARG(value) };
    const size_t one = 1;

    /* gpuflow side */
    GF_CHECK(gf_device_open(GF_BACKEND_OPENCL, index, &dev));
    GF_CHECK(gf_stream_create(dev, NULL, &s));
    memset(&md, 0, sizeof md);
    md.opencl_source = kernel_src;
    GF_CHECK(gf_module_load(dev, &md, &mod));
    GF_CHECK(gf_kernel_get(mod, "empty", &k));

    /* raw side, on the same device */
    if (!raw_load()) return 1;
    if (!raw_find(gf_device_name(dev), &plat, &rdev)) {
        fprintf(stderr, "raw: no device named \"%s\"\n", gf_device_name(dev));
        return 1;
    }
    raw.GetDeviceInfo(rdev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    {
        cl_context_properties props[3];
        props[0] = CL_CONTEXT_PLATFORM; props[1] = (cl_context_properties)plat; props[2] = 0;
        ctx = raw.CreateContext(props, 1, &rdev, NULL, NULL, &e);
        CL_CHECK(e);
    }
    q = raw.CreateCommandQueue(ctx, rdev, CL_QUEUE_PROFILING_ENABLE, &e);
    CL_CHECK(e);
    prog = raw.CreateProgramWithSource(ctx, 1, &kernel_src, NULL, &e);
    CL_CHECK(e);
    CL_CHECK(raw.BuildProgram(prog, 1, &rdev, NULL, NULL, NULL));
    rk = raw.CreateKernel(prog, "empty", &e);
    CL_CHECK(e);

    launches = (type & CL_DEVICE_TYPE_CPU) ? 5000 : 20000;
    bytes = ((type & CL_DEVICE_TYPE_CPU) ? 64u : 256u) << 20;
    copies = (type & CL_DEVICE_TYPE_CPU) ? 5 : 10;
    printf("gpuflow OpenCL bench: %s\n", gf_device_name(dev));

    /* ---- launch cost ---- */
    for (i = 0; i < 8; i++) best[i] = 1e30;
    for (i = 0; i < 200; i++) {   /* warm up both paths */
        GF_CHECK(gf_launch(s, k, dims, args, 1));
        CL_CHECK(raw.SetKernelArg(rk, 0, sizeof value, &value));
        CL_CHECK(raw.EnqueueNDRangeKernel(q, rk, 1, NULL, &one, &one, 0, NULL, NULL));
    }
    GF_CHECK(gf_stream_synchronize(s));
    CL_CHECK(raw.Finish(q));
    for (round = 0; round < rounds; round++) {
        double t0 = now_s(), t1, t2;
        for (i = 0; i < launches; i++) GF_CHECK(gf_launch(s, k, dims, args, 1));
        t1 = now_s();
        GF_CHECK(gf_stream_synchronize(s));
        t2 = now_s();
        if (t1 - t0 < best[0]) best[0] = t1 - t0;
        if (t2 - t0 < best[1]) best[1] = t2 - t0;
        t0 = now_s();
        for (i = 0; i < launches; i++) {
            CL_CHECK(raw.SetKernelArg(rk, 0, sizeof value, &value));
            CL_CHECK(raw.EnqueueNDRangeKernel(q, rk, 1, NULL, &one, &one, 0, NULL, NULL));
        }
        t1 = now_s();
        CL_CHECK(raw.Finish(q));
        t2 = now_s();
        if (t1 - t0 < best[2]) best[2] = t1 - t0;
        if (t2 - t0 < best[3]) best[3] = t2 - t0;
        /* raw again, asking each launch for its event (released at once): what tracking every
           command by its event would cost, which gpuflow's streams do not do */
        t0 = now_s();
        for (i = 0; i < launches; i++) {
            cl_event ev = NULL;
            CL_CHECK(raw.SetKernelArg(rk, 0, sizeof value, &value));
            CL_CHECK(raw.EnqueueNDRangeKernel(q, rk, 1, NULL, &one, &one, 0, NULL, &ev));
            CL_CHECK(raw.ReleaseEvent(ev));
        }
        CL_CHECK(raw.Finish(q));
        t1 = now_s();
        if (t1 - t0 < evented) evented = t1 - t0;
    }
    printf("\nlaunch of an empty kernel, %d launches, best of %d   gpuflow          raw    ratio\n", launches, rounds);
    row("enqueue, us per launch", best[0] * 1e6 / launches, best[2] * 1e6 / launches);
    row("enqueue + wait, us per launch", best[1] * 1e6 / launches, best[3] * 1e6 / launches);
    printf("  %-34s %12s %12.3f\n", "raw, an event per launch (+ wait)", "", evented * 1e6 / launches);

    /* ---- pinned copy bandwidth ---- */
    GF_CHECK(gf_host_alloc(dev, bytes, &gf_host));
    GF_CHECK(gf_buffer_create(dev, bytes, &buf));
    rpin = raw.CreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
    CL_CHECK(e);
    raw_host = raw.EnqueueMapBuffer(q, rpin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &e);
    CL_CHECK(e);
    rbuf = raw.CreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
    CL_CHECK(e);
    memset(gf_host, 1, bytes);
    memset(raw_host, 1, bytes);
    for (i = 0; i < 8; i++) best[i] = 1e30;
    for (round = 0; round < copies + 1; round++) {   /* the first round warms up */
        double t0 = now_s(), t1, t2, t3, t4;
        GF_CHECK(gf_copy_to_device_async(s, buf, 0, gf_host, bytes));
        GF_CHECK(gf_stream_synchronize(s));
        t1 = now_s();
        GF_CHECK(gf_copy_to_host_async(s, gf_host, buf, 0, bytes));
        GF_CHECK(gf_stream_synchronize(s));
        t2 = now_s();
        CL_CHECK(raw.EnqueueWriteBuffer(q, rbuf, CL_FALSE, 0, bytes, raw_host, 0, NULL, NULL));
        CL_CHECK(raw.Finish(q));
        t3 = now_s();
        CL_CHECK(raw.EnqueueReadBuffer(q, rbuf, CL_FALSE, 0, bytes, raw_host, 0, NULL, NULL));
        CL_CHECK(raw.Finish(q));
        t4 = now_s();
        if (round == 0) continue;
        if (t1 - t0 < best[0]) best[0] = t1 - t0;
        if (t2 - t1 < best[1]) best[1] = t2 - t1;
        if (t3 - t2 < best[2]) best[2] = t3 - t2;
        if (t4 - t3 < best[3]) best[3] = t4 - t3;
    }
    printf("\npinned copy, %lu MiB, best of %d                   gpuflow          raw    ratio\n",
           (unsigned long)(bytes >> 20), copies);
    row("host -> device, GB/s", (double)bytes / best[0] / 1e9, (double)bytes / best[2] / 1e9);
    row("device -> host, GB/s", (double)bytes / best[1] / 1e9, (double)bytes / best[3] / 1e9);

    gf_buffer_destroy(buf);
    gf_host_free(dev, gf_host);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_device_close(dev);
    raw.EnqueueUnmapMemObject(q, rpin, raw_host, 0, NULL, NULL);
    raw.Finish(q);
    raw.ReleaseMemObject(rpin);
    raw.ReleaseMemObject(rbuf);
    raw.ReleaseKernel(rk);
    raw.ReleaseProgram(prog);
    raw.ReleaseCommandQueue(q);
    raw.ReleaseContext(ctx);
    return 0;
}
