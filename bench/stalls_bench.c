/* stalls_bench.c -- what holds the host, on one backend, against the raw driver in the same run.

    cc -std=c99 -O2 -I. -isystem /usr/local/cuda/include bench/stalls_bench.c -o stalls_bench -ldl -pthread -lm
    OCL_ICD_VENDORS=... ./stalls_bench cuda|opencl|stub [platform text for OpenCL, e.g. NVIDIA]

    1. two streams, low and high priority, each copying its 128 MiB half of a 256 MiB buffer
       with a copy kernel, 4 launches a round, each half passed as a view made just before the
       launch and destroyed just after it (the natural way to write it): each stream's device
       time per round (first launch's start to its last launch's end) and the host time of
       every view destroy.
    2. stalls: the host time of a destroy while work is queued (a 256 MiB fill, 8 times, in
       front): gf_buffer_destroy of a buffer the queued work uses, of a view, gf_module_destroy
       of a module whose kernel is queued; raw: cuMemFree (which waits for the device) and
       cuMemFreeAsync, clReleaseMemObject of a buffer and of a sub-buffer.
    3. release, with another stream held 50 ms by a host callback and with the device idle: the
       synchronize that releases a destroyed 64 MiB buffer (its fill queued behind 2 ms of its
       stream's own work; raw: that synchronize and cuMemFree, clFinish and clReleaseMemObject),
       and 1 MiB of pinned memory allocated and freed (raw: cuMemHostAlloc + cuMemFreeHost);
       median of 5, sides alternating.
    4. fill: 256 MiB gf_fill_async + wait against the driver's own fill (cuMemsetD8Async,
       clEnqueueFillBuffer) on the same stream, best of 5.
    5. start-up: device open, module load with an empty cache directory (compiles), again from
       gpuflow's cache (a hit), the first launch (launch + synchronize).

    The raw side calls the driver through the table gpuflow loaded (gf__cu, gf__cl: the
    driver's own entry points), on gpuflow's native stream or queue, so the two differ only in
    what gpuflow does around the call.
*/
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#if !defined(STALLS_NO_CUDA) && defined(__has_include)
#  if __has_include(<cuda.h>)
#    define GPUFLOW_CUDA
#  endif
#endif
#if !defined(STALLS_NO_OPENCL) && defined(__has_include)
#  if __has_include(<CL/cl.h>)
#    define GPUFLOW_OPENCL
#  endif
#endif
#include "gpuflow.h"
#include "bench_stats.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GF_KERNELS GF_KERNELS_AS_TEXT
static const char sb_source[] = GF_KERNELS(
GF_KERNEL(sb_copy, GF_PARAM(GF_GLOBAL float *, dst), GF_PARAM(GF_GLOBAL const float *, src), GF_PARAM(unsigned, n))
{
    unsigned i = gf_global_id(0);
    if (i < n) dst[i] = src[i];
}
);
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
GF_KERNELS(
GF_KERNEL(sb_copy, GF_PARAM(GF_GLOBAL float *, dst), GF_PARAM(GF_GLOBAL const float *, src), GF_PARAM(unsigned, n))
{
    unsigned i = gf_global_id(0);
    if (i < n) dst[i] = src[i];
}
)
#undef GF_KERNELS

#define OK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, gf_result_name(r_), gf_last_error()); exit(1); } } while (0)

static double now_ms(void) { return now_s() * 1e3; }

static gf_device *dev;
static gf_backend backend;
static size_t half_bytes = (size_t)128 << 20;

static gf_module *load(const char *dir, double *ms) {
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(sb_copy) };
    gf_module_desc d;
    gf_module *m;
    double t0;
    memset(&d, 0, sizeof d);
    d.source = sb_source; d.source_name = "sb_copy"; d.cache_dir = dir;
    d.stub_kernels = stub; d.stub_kernel_count = 1;
    t0 = now_ms();
    OK(gf_module_load(dev, &d, &m));
    *ms = now_ms() - t0;
    return m;
}

static void launch_copy(gf_stream *s, gf_kernel *k, gf_buffer *dst, gf_buffer *src, size_t bytes) {
    unsigned n = (unsigned)(bytes / sizeof(float));
    gf_launch_dims dims = { { (n + 255) / 256, 1, 1 }, { 256, 1, 1 }, 0 };
    gf_arg args[3] = { GF_ARG_BUFFER(dst), GF_ARG_BUFFER_READ(src), GF_ARG(n) };
    OK(gf_launch(s, k, dims, args, 3));
}

/* Work in front: 8 fills of a 256 MiB buffer (a few ms on a GPU). */
static void queue_work(gf_stream *s, gf_buffer *big) {
    int i;
    for (i = 0; i < 8; i++) OK(gf_fill_async(s, big, 0, (unsigned char)i, gf_buffer_size(big)));
}

static void priorities(gf_kernel *k) {
    gf_stream *low, *high;
    gf_stream_desc ld, hd;
    gf_buffer *src, *dst;
    gf_event *ev[4];
    double destroy_max = 0, destroy_sum = 0;
    int rounds = 3, per = 4, r, i, side, destroys = 0;
    memset(&ld, 0, sizeof ld); memset(&hd, 0, sizeof hd);
    ld.label = "low"; ld.priority = GF_PRIORITY_LOW;
    hd.label = "high"; hd.priority = GF_PRIORITY_HIGH;
    OK(gf_stream_create(dev, &ld, &low));
    OK(gf_stream_create(dev, &hd, &high));
    OK(gf_buffer_create(dev, 2 * half_bytes, &src));
    OK(gf_buffer_create(dev, 2 * half_bytes, &dst));
    OK(gf_fill_async(low, src, 0, 1, 2 * half_bytes));
    OK(gf_stream_synchronize(low));
    for (i = 0; i < 4; i++) OK(gf_event_create(dev, GF_EVENT_TIMING, &ev[i]));
    printf("# priorities: low and high stream, %d copy launches of a 128 MiB view each per round, views destroyed right after each launch\n", per);
    for (r = 0; r < rounds; r++) {
        float lo_ms = 0, hi_ms = 0;
        OK(gf_event_record(ev[0], low));
        OK(gf_event_record(ev[1], high));
        for (i = 0; i < per; i++) {
            for (side = 0; side < 2; side++) {
                gf_stream *s = side ? high : low;
                gf_buffer *vs, *vd;
                double t0, t;
                OK(gf_buffer_view(src, (size_t)side * half_bytes, half_bytes, &vs));
                OK(gf_buffer_view(dst, (size_t)side * half_bytes, half_bytes, &vd));
                launch_copy(s, k, vd, vs, half_bytes);
                t0 = now_ms();
                gf_buffer_destroy(vs);
                gf_buffer_destroy(vd);
                t = (now_ms() - t0) / 2;
                destroy_sum += 2 * t; destroys += 2;
                if (t > destroy_max) destroy_max = t;
            }
        }
        OK(gf_event_record(ev[2], low));
        OK(gf_event_record(ev[3], high));
        OK(gf_device_synchronize(dev));
        OK(gf_event_elapsed_ms(ev[0], ev[2], &lo_ms));
        OK(gf_event_elapsed_ms(ev[1], ev[3], &hi_ms));
        printf("priorities_round_%d              low %8.3f ms   high %8.3f ms   high finishes %5.1f%% sooner\n",
               r, lo_ms, hi_ms, lo_ms > 0 ? 100.0 * (lo_ms - hi_ms) / lo_ms : 0.0);
    }
    printf("view_destroy_host_ms_in_loop     mean %8.4f ms   max %8.4f ms   (%d destroys)\n", destroy_sum / destroys, destroy_max, destroys);
    for (i = 0; i < 4; i++) gf_event_destroy(ev[i]);
    gf_buffer_destroy(src); gf_buffer_destroy(dst);
    gf_stream_destroy(low); gf_stream_destroy(high);
}

static void row(const char *what, double gf, double raw, const char *raw_what) {
    if (raw >= 0) printf("%-32s gpuflow %9.4f ms   raw %9.4f ms (%s)   ratio %8.3f\n", what, gf, raw, raw_what, raw > 0 ? gf / raw : 0.0);
    else printf("%-32s gpuflow %9.4f ms   raw: %s\n", what, gf, raw_what);
}

static void stalls(gf_stream *s, gf_kernel *k) {
    gf_buffer *big, *b, *p, *v;
    double t0, gf_buf, gf_view, gf_mod;
    double ms;
    gf_module *m;
    gf_kernel *mk;
    OK(gf_buffer_create(dev, (size_t)256 << 20, &big));
    /* gf_buffer_destroy with the buffer's work queued */
    OK(gf_buffer_create(dev, (size_t)64 << 20, &b));
    queue_work(s, big);
    OK(gf_fill_async(s, b, 0, 1, (size_t)64 << 20));
    t0 = now_ms(); gf_buffer_destroy(b); gf_buf = now_ms() - t0;
    OK(gf_stream_synchronize(s));
    /* a view */
    OK(gf_buffer_create(dev, 2 * half_bytes, &p));
    OK(gf_buffer_view(p, 0, half_bytes, &v));
    queue_work(s, big);
    launch_copy(s, k, v, v, half_bytes);
    t0 = now_ms(); gf_buffer_destroy(v); gf_view = now_ms() - t0;
    OK(gf_stream_synchronize(s));
    gf_buffer_destroy(p);
    /* a module */
    m = load(NULL, &ms);
    OK(gf_kernel_get(m, "sb_copy", &mk));
    OK(gf_buffer_create(dev, 2 * half_bytes, &p));
    queue_work(s, big);
    launch_copy(s, mk, p, p, half_bytes);
    t0 = now_ms(); gf_module_destroy(m); gf_mod = now_ms() - t0;
    OK(gf_stream_synchronize(s));
    gf_buffer_destroy(p);
    printf("# stalls: host time of a destroy with 8 x 256 MiB fills queued in front\n");
#ifdef GPUFLOW_CUDA
    if (backend == GF_BACKEND_CUDA) {
        CUstream cs = (CUstream)gf_stream_native(s);
        CUdeviceptr d;
        double raw_free, raw_async;
        OK(gf_stream_synchronize(s));
        gf__cu.MemAlloc(&d, (size_t)64 << 20);
        queue_work(s, big);
        gf__cu.MemsetD8Async(d, 1, (size_t)64 << 20, cs);
        t0 = now_ms(); gf__cu.MemFree(d); raw_free = now_ms() - t0;
        gf__cu.MemAlloc(&d, (size_t)64 << 20);
        queue_work(s, big);
        gf__cu.MemsetD8Async(d, 1, (size_t)64 << 20, cs);
        t0 = now_ms(); gf__cu.MemFreeAsync(d, cs); raw_async = now_ms() - t0;
        OK(gf_stream_synchronize(s));
        row("destroy_buffer_work_queued", gf_buf, raw_free, "cuMemFree");
        row("destroy_buffer_work_queued", gf_buf, raw_async, "cuMemFreeAsync, stream-ordered");
        row("destroy_view_work_queued", gf_view, -1, "a view is a pointer: nothing to free");
        row("destroy_module_launch_queued", gf_mod, -1, "cuModuleUnload while a launch is queued is the program's own bug");
    }
#endif
#ifdef GPUFLOW_OPENCL
    if (backend == GF_BACKEND_OPENCL) {
        gf_native_device nd;
        cl_command_queue q = (cl_command_queue)gf_stream_native(s);
        cl_mem mem, sub;
        cl_int e;
        cl_buffer_region region;
        unsigned char one = 1;
        double raw_buf, raw_sub;
        OK(gf_device_get_native(dev, &nd));
        mem = gf__cl.clCreateBuffer((cl_context)nd.context, CL_MEM_READ_WRITE, (size_t)64 << 20, NULL, &e);
        queue_work(s, big);
        gf__cl.clEnqueueFillBuffer(q, mem, &one, 1, 0, (size_t)64 << 20, 0, NULL, NULL);
        t0 = now_ms(); gf__cl.clReleaseMemObject(mem); raw_buf = now_ms() - t0;
        mem = gf__cl.clCreateBuffer((cl_context)nd.context, CL_MEM_READ_WRITE, (size_t)64 << 20, NULL, &e);
        region.origin = 0; region.size = (size_t)32 << 20;
        sub = gf__cl.clCreateSubBuffer(mem, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &e);
        queue_work(s, big);
        gf__cl.clEnqueueFillBuffer(q, sub, &one, 1, 0, (size_t)32 << 20, 0, NULL, NULL);
        t0 = now_ms(); gf__cl.clReleaseMemObject(sub); raw_sub = now_ms() - t0;
        OK(gf_stream_synchronize(s));
        gf__cl.clReleaseMemObject(mem);
        row("destroy_buffer_work_queued", gf_buf, raw_buf, "clReleaseMemObject");
        row("destroy_view_work_queued", gf_view, raw_sub, "clReleaseMemObject of a sub-buffer");
        row("destroy_module_launch_queued", gf_mod, -1, "clReleaseProgram is deferred by the driver");
    }
#endif
    if (backend == GF_BACKEND_STUB) {
        row("destroy_buffer_work_queued", gf_buf, -1, "the stub has no driver");
        row("destroy_view_work_queued", gf_view, -1, "the stub has no driver");
        row("destroy_module_launch_queued", gf_mod, -1, "the stub has no driver");
    }
    gf_buffer_destroy(big);
}

static void sleep_ms(long ms) { struct timespec t; t.tv_sec = ms / 1000; t.tv_nsec = ms % 1000 * 1000000L; nanosleep(&t, NULL); }
static void hold_50ms(void *user, gf_result status) { (void)user; (void)status; sleep_ms(50); }

/* One release, with another stream held 50 ms by a host callback (rel_busy) or not: side 0
   gpuflow, side 1 the driver. rel_pinned 0: a 64 MiB buffer filled behind a 2 ms callback and
   destroyed while the other stream is still idle (so that only its own stream fences it), then
   the other stream made busy; timed: the synchronize of the buffer's stream, where gpuflow
   releases it (raw: that synchronize and cuMemFree). 1: 1 MiB of pinned memory allocated and
   freed while the other stream is busy. */
static gf_stream *rel_stream, *rel_other;
static int rel_busy, rel_pinned;
static void hold_2ms(void *user, gf_result status) { (void)user; (void)status; sleep_ms(2); }
static double release_once(int side) {
    const size_t bytes = rel_pinned ? (size_t)1 << 20 : (size_t)64 << 20;
    gf_buffer *b = NULL;
    double t0 = 0, t = -1;
#ifdef GPUFLOW_CUDA
    CUstream cs = backend == GF_BACKEND_CUDA ? (CUstream)gf_stream_native(rel_stream) : NULL;
    CUdeviceptr d = 0;
#endif
#ifdef GPUFLOW_OPENCL
    cl_command_queue q = backend == GF_BACKEND_OPENCL ? (cl_command_queue)gf_stream_native(rel_stream) : NULL;
    cl_mem mem = NULL;
#endif
    if (!rel_pinned) {   /* the buffer, its fill queued behind 2 ms of the stream's own work */
        OK(gf_stream_add_callback(rel_stream, hold_2ms, NULL));
        if (side == 0) {
            OK(gf_buffer_create(dev, bytes, &b));
            OK(gf_fill_async(rel_stream, b, 0, 1, bytes));
            gf_buffer_destroy(b);
        }
#ifdef GPUFLOW_CUDA
        if (side == 1 && cs) { gf__cu.MemAlloc(&d, bytes); gf__cu.MemsetD8Async(d, 1, bytes, cs); }
#endif
#ifdef GPUFLOW_OPENCL
        if (side == 1 && q) {
            gf_native_device nd;
            unsigned char one = 1;
            cl_int e;
            OK(gf_device_get_native(dev, &nd));
            mem = gf__cl.clCreateBuffer((cl_context)nd.context, CL_MEM_READ_WRITE, bytes, NULL, &e);
            gf__cl.clEnqueueFillBuffer(q, mem, &one, 1, 0, bytes, 0, NULL, NULL);
        }
#endif
    }
    if (rel_busy) OK(gf_stream_add_callback(rel_other, hold_50ms, NULL));
    sleep_ms(5);   /* the 2 ms have passed; the other stream's callback runs */
    t0 = now_ms();
    if (side == 0) {
        if (rel_pinned) { void *h; OK(gf_host_alloc(dev, bytes, &h)); gf_host_free(dev, h); }
        else OK(gf_stream_synchronize(rel_stream));
        t = now_ms() - t0;
    }
#ifdef GPUFLOW_CUDA
    if (side == 1 && cs) {
        void *h;
        if (rel_pinned) { gf__cu.MemHostAlloc(&h, bytes, 0); gf__cu.MemFreeHost(h); }
        else { gf__cu.StreamSynchronize(cs); gf__cu.MemFree(d); }
        t = now_ms() - t0;
    }
#endif
#ifdef GPUFLOW_OPENCL
    if (side == 1 && q && !rel_pinned) { gf__cl.clFinish(q); gf__cl.clReleaseMemObject(mem); t = now_ms() - t0; }
#endif
    OK(gf_stream_synchronize(rel_stream));
    if (rel_busy) OK(gf_stream_synchronize(rel_other));
    return t;
}

static void releases(gf_stream *s) {
    double m[2][2][2];   /* [pinned][busy][side] */
    int pinned, busy, sides = backend == GF_BACKEND_CUDA || backend == GF_BACKEND_OPENCL ? 2 : 1;
    static const char *rows[2][2] = { { "release_buffer_device_idle", "release_buffer_other_busy_50ms" },
                                      { "release_pinned_device_idle", "release_pinned_other_busy_50ms" } };
    rel_stream = s;
    OK(gf_stream_create(dev, NULL, &rel_other));
    for (pinned = 0; pinned < 2; pinned++)
        for (busy = 0; busy < 2; busy++) {
            rel_pinned = pinned; rel_busy = busy;
            measure_sides(release_once, pinned && backend != GF_BACKEND_CUDA ? 1 : sides, 5, m[pinned][busy]);
        }
    gf_stream_destroy(rel_other);
    OK(gf_device_synchronize(dev));
    printf("# release, median of 5: buffer: the synchronize that releases a destroyed 64 MiB buffer (raw: that synchronize\n"
           "# and the driver's free); pinned: 1 MiB gf_host_alloc + gf_host_free (raw: cuMemHostAlloc + cuMemFreeHost)\n");
    for (pinned = 0; pinned < 2; pinned++)
        for (busy = 0; busy < 2; busy++) {
            const char *raw = backend == GF_BACKEND_CUDA ? (pinned ? "cuMemHostAlloc + cuMemFreeHost" : "synchronize + cuMemFree")
                            : backend == GF_BACKEND_OPENCL && !pinned ? "clFinish + clReleaseMemObject" : "no raw side here";
            int has_raw = backend == GF_BACKEND_CUDA || (backend == GF_BACKEND_OPENCL && !pinned);
            row(rows[pinned][busy], m[pinned][busy][0], has_raw ? m[pinned][busy][1] : -1, raw);
        }
}

static void fills(gf_stream *s) {
    size_t bytes = (size_t)256 << 20;
    gf_buffer *b;
    double best_gf = 1e30, best_raw = 1e30, t0, t;
    int i;
    OK(gf_buffer_create(dev, bytes, &b));
    for (i = 0; i < 6; i++) {   /* the first of each is a warm-up */
        t0 = now_ms(); OK(gf_fill_async(s, b, 0, (unsigned char)i, bytes)); OK(gf_stream_synchronize(s)); t = now_ms() - t0;
        if (i && t < best_gf) best_gf = t;
#ifdef GPUFLOW_CUDA
        if (backend == GF_BACKEND_CUDA) {
            CUstream cs = (CUstream)gf_stream_native(s);
            t0 = now_ms(); gf__cu.MemsetD8Async((CUdeviceptr)gf_buffer_native(b), (unsigned char)i, bytes, cs); gf__cu.StreamSynchronize(cs); t = now_ms() - t0;
            if (i && t < best_raw) best_raw = t;
        }
#endif
#ifdef GPUFLOW_OPENCL
        if (backend == GF_BACKEND_OPENCL) {
            cl_command_queue q = (cl_command_queue)gf_stream_native(s);
            unsigned char v = (unsigned char)i;
            t0 = now_ms();
            gf__cl.clEnqueueFillBuffer(q, (cl_mem)(uintptr_t)gf_buffer_native(b), &v, 1, 0, bytes, 0, NULL, NULL);
            gf__cl.clFinish(q);
            t = now_ms() - t0;
            if (i && t < best_raw) best_raw = t;
        }
#endif
    }
    printf("# fill: 256 MiB, fill + wait, best of 5\n");
    row("fill_256MiB", best_gf, best_raw < 1e29 ? best_raw : -1, backend == GF_BACKEND_CUDA ? "cuMemsetD8Async" : backend == GF_BACKEND_OPENCL ? "clEnqueueFillBuffer" : "none");
    printf("fill_256MiB_GBps                 gpuflow %9.1f GB/s\n", (double)bytes / (best_gf * 1e6));
    gf_buffer_destroy(b);
}

int main(int argc, char **argv) {
    char dir[64];
    double open_ms, cold_ms, warm_ms, first_ms, t0;
    gf_module *m;
    gf_kernel *k;
    gf_stream *s;
    gf_buffer *x;
    if (argc < 2 || !strcmp(argv[1], "stub")) backend = GF_BACKEND_STUB;
    else if (!strcmp(argv[1], "cuda")) backend = GF_BACKEND_CUDA;
    else if (!strcmp(argv[1], "opencl")) backend = GF_BACKEND_OPENCL;
    else { fprintf(stderr, "usage: %s cuda|opencl|stub\n", argv[0]); return 2; }
    if (backend == GF_BACKEND_STUB) half_bytes = (size_t)8 << 20;
    if (argc > 2) setenv("GPUFLOW_OPENCL_PLATFORM", argv[2], 1);
    t0 = now_ms();
    OK(gf_device_open(backend, 0, &dev));
    open_ms = now_ms() - t0;
    printf("device: %s (%s)\n", gf_device_name(dev), gf_backend_name(backend));
    snprintf(dir, sizeof dir, "/tmp/stalls-cache-%ld", (long)getpid());
    m = load(dir, &cold_ms);
    gf_module_destroy(m);
    m = load(dir, &warm_ms);
    OK(gf_kernel_get(m, "sb_copy", &k));
    OK(gf_stream_create(dev, NULL, &s));
    OK(gf_buffer_create(dev, 1 << 20, &x));
    t0 = now_ms();
    launch_copy(s, k, x, x, 1 << 20);
    OK(gf_stream_synchronize(s));
    first_ms = now_ms() - t0;
    gf_buffer_destroy(x);
    printf("# start-up\n");
    printf("startup_device_open_ms           gpuflow %9.3f ms\n", open_ms);
    printf("startup_module_load_cold_ms      gpuflow %9.3f ms   (compiles; writes gpuflow's cache)\n", cold_ms);
    printf("startup_module_load_warm_ms      gpuflow %9.3f ms   (gpuflow's cache hit)\n", warm_ms);
    printf("startup_first_launch_ms          gpuflow %9.3f ms   (launch + synchronize)\n", first_ms);
    priorities(k);
    stalls(s, k);
    releases(s);
    fills(s);
    gf_module_destroy(m);
    gf_stream_destroy(s);
    gf_device_close(dev);
    {   /* the cache directory */
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return 0;
}
