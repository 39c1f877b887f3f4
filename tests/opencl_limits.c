/* OpenCL on limits a PoCL platform can be given (found by an outside review of the OpenCL
   backend): a device that allows fewer than 256 work-items a group, a context of two devices,
   a view of a wrapped sub-buffer, and a device older than OpenCL 1.2. Run with PoCL, which reads POCL_MAX_WORK_GROUP_SIZE and POCL_DEVICES at its first
   call: main sets them first. Skipped (counted) where OpenCL or PoCL is not there.

       ./opencl_limits */
#define _POSIX_C_SOURCE 200809L   /* setenv */
#define GPUFLOW_IMPLEMENTATION
#ifndef GPUFLOW_OPENCL
#  define GPUFLOW_OPENCL
#endif
#include <stdlib.h>
#include "backends.h"
#include "harness.h"

/* A fill of 1 MiB is gpuflow's own kernel, launched with groups of 256: on a device of 64 it
   was refused (CL_INVALID_WORK_GROUP_SIZE) and the memory left as it was. */
static void test_small_groups(gf_device *dev)
{
    static unsigned char h[1 << 20];
    gf_stream *s = NULL;
    gf_buffer *b = NULL;
    size_t i;
    if (CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK) && CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof h, &b), GF_OK)) {
        CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0xa5, sizeof h), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(h, b, 0, sizeof h), GF_OK);
        for (i = 0; i < sizeof h && h[i] == 0xa5; i++) {}
        CHECK(i == sizeof h, "small groups: a 1 MiB fill fills every byte where a group holds 64 work-items");
    }
    if (b) gf_buffer_destroy(b);
    if (s) gf_stream_destroy(s);
}

/* A queue of the context's other device was taken as a stream of this one: its first launch
   ran a program built for another device (PoCL aborted the process). An image was taken as a
   buffer. Both are refused now, and the device goes on. */
typedef cl_mem (*create_image_fn)(cl_context, cl_mem_flags, const cl_image_format *, size_t, size_t, size_t, void *, cl_int *);
static void test_two_devices(void)
{
    cl_platform_id platform = NULL;
    cl_device_id ids[2];
    cl_uint count = 0;
    cl_context ctx;
    cl_command_queue q;
    cl_mem image;
    cl_int e;
    cl_image_format format = { CL_RGBA, CL_UNSIGNED_INT8 };
    gf_native_device nat;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_buffer *b = NULL;
    create_image_fn create_image = NULL;
    void *sym = gf__dlsym(gf__cl_driver.lib, "clCreateImage2D");   /* not in gpuflow's table: deprecated since 1.2 */
    memcpy(&create_image, &sym, sizeof sym);   /* object to function pointer, as the loader does */
    if (!create_image ||
        GF__CL(clGetPlatformIDs, (1, &platform, NULL)) != CL_SUCCESS ||
        GF__CL(clGetDeviceIDs, (platform, CL_DEVICE_TYPE_ALL, 2, ids, &count)) != CL_SUCCESS || count < 2) {
        SKIP("two devices: the platform has fewer than two devices");
        return;
    }
    ctx = GF__CL_NEW(clCreateContext, (NULL, 2, ids, NULL, NULL), &e);
    if (!CHECK(ctx != NULL, "two devices: a context of both")) return;
    memset(&nat, 0, sizeof nat);
    nat.context = ctx;
    nat.device = ids[0];
    if (CHECK_EQ_RESULT(gf_device_open_native(GF_BACKEND_OPENCL, &nat, &dev), GF_OK)) {
        if ((q = GF__CL_NEW(clCreateCommandQueue, (ctx, ids[1], 0), &e)) != NULL) {
            CHECK_FAIL(gf_stream_wrap(dev, q, NULL, &s), GF_ERROR_WRONG_DEVICE);
            GF__CL(clReleaseCommandQueue, (q));
        }
        if ((image = create_image(ctx, CL_MEM_READ_WRITE, &format, 16, 16, 0, NULL, &e)) != NULL) {
            CHECK_FAIL(gf_buffer_wrap(dev, (uint64_t)(uintptr_t)image, 64, &b), GF_ERROR_INVALID_ARGUMENT);
            GF__CL(clReleaseMemObject, (image));
        }
        if ((q = GF__CL_NEW(clCreateCommandQueue, (ctx, ids[0], 0), &e)) != NULL) {   /* no CL_QUEUE_PROFILING_ENABLE */
            gf_event *a = NULL, *z = NULL;
            float ms = 0;
            if (CHECK_EQ_RESULT(gf_stream_wrap(dev, q, NULL, &s), GF_OK) && CHECK_EQ_RESULT(gf_event_create(dev, GF_EVENT_TIMING, &a), GF_OK) &&
                CHECK_EQ_RESULT(gf_event_create(dev, GF_EVENT_TIMING, &z), GF_OK) && CHECK_EQ_RESULT(gf_event_record(a, s), GF_OK) &&
                CHECK_EQ_RESULT(gf_event_record(z, s), GF_OK) && CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK))
                CHECK_FAIL(gf_event_elapsed_ms(a, z, &ms), GF_ERROR_NOT_SUPPORTED);   /* it was GF_ERROR_DRIVER */
            if (a) gf_event_destroy(a);
            if (z) gf_event_destroy(z);
            if (s) gf_stream_destroy(s);
            s = NULL;
            GF__CL(clReleaseCommandQueue, (q));
        }
        test_small_groups(dev);   /* the device works on */
        gf_device_close(dev);
    }
    GF__CL(clReleaseContext, (ctx));
    /* A device that is not the context's was taken (an outside review): PoCL then made its
       queues and buffers, and the program's context and gpuflow's device disagreed. */
    if ((ctx = GF__CL_NEW(clCreateContext, (NULL, 1, &ids[1], NULL, NULL), &e)) != NULL) {
        nat.context = ctx;
        nat.device = ids[0];
        dev = NULL;
        CHECK_FAIL(gf_device_open_native(GF_BACKEND_OPENCL, &nat, &dev), GF_ERROR_WRONG_DEVICE);
        CHECK(dev == NULL, "a device outside the context: nothing is opened");
        GF__CL(clReleaseContext, (ctx));
    }
}

/* NVIDIA's -9999 (a kernel's illegal address, after which the context is gone) read as an
   unknown error, GF_ERROR_DRIVER: it is GF_ERROR_DEVICE_LOST, named (an outside review; the
   fault itself is NVIDIA's alone, so this checks the mapping). */
static void test_vendor_codes(void)
{
    CHECK(gf__cl_fail("clFinish", GF__CL_NV_KERNEL_FAULT) == GF_ERROR_DEVICE_LOST && strstr(gf_last_error(), "illegal memory access"),
          "NVIDIA's kernel fault code: the device is lost, and the message says why");
}

/* A build failure's message ended with the log's newlines (an outside audit of the messages). */
static void test_build_message(gf_device *dev)
{
    gf_module_desc d;
    gf_module *m = NULL;
    size_t n;
    memset(&d, 0, sizeof d);
    d.opencl_source = "__kernel void k(__global int *p) { p[0] = not_declared; }\n";
    CHECK_FAIL(gf_module_load(dev, &d, &m), GF_ERROR_BUILD);
    n = strlen(gf_last_error());
    CHECK(n && gf_last_error()[n - 1] != '\n' && strstr(gf_last_error(), "not_declared"), "a build failure's message names the error and ends with its text");
}

/* A view of a wrapped sub-buffer was refused by the driver (OpenCL makes no sub-buffer of a
   sub-buffer): its sub-buffer is now made of the buffer the wrapped one lies in. */
static void test_view_of_wrapped_sub_buffer(gf_device *dev)
{
    gf__cl_device *d = (gf__cl_device *)dev->native;
    size_t align = d->sub_align ? d->sub_align : 128, at = 0;
    cl_buffer_region region;
    cl_mem whole, sub = NULL;
    cl_int e;
    gf_buffer *b = NULL, *v = NULL, *w = NULL;
    unsigned char h[64];
    whole = GF__CL_NEW(clCreateBuffer, (d->ctx, CL_MEM_READ_WRITE, 4 * align, NULL), &e);
    region.origin = align;
    region.size = 2 * align;
    if (whole) sub = GF__CL_NEW(clCreateSubBuffer, (whole, 0, CL_BUFFER_CREATE_TYPE_REGION, &region), &e);
    if (!CHECK(sub != NULL, "wrapped sub-buffer: made") || !CHECK_EQ_RESULT(gf_buffer_wrap(dev, (uint64_t)(uintptr_t)sub, 2 * align, &b), GF_OK)) goto out;
    if (CHECK_EQ_RESULT(gf_buffer_view(b, 0, 64, &v), GF_OK) && CHECK_EQ_RESULT(gf_buffer_view(b, align, 64, &w), GF_OK)) {
        CHECK(gf_buffer_native(v) && GF__CL(clGetMemObjectInfo, ((cl_mem)(uintptr_t)gf_buffer_native(v), CL_MEM_OFFSET, sizeof at, &at, NULL)) == CL_SUCCESS &&
              at == align, "wrapped sub-buffer: a view at its byte 0 is a sub-buffer at the wrapped one's offset");
        CHECK(gf_buffer_native(w) && GF__CL(clGetMemObjectInfo, ((cl_mem)(uintptr_t)gf_buffer_native(w), CL_MEM_OFFSET, sizeof at, &at, NULL)) == CL_SUCCESS &&
              at == 2 * align, "wrapped sub-buffer: a view further in lies at both offsets");
        CHECK_EQ_RESULT(gf_copy_to_device(v, 0, "0123456789abcdef", 16), GF_OK);
        CHECK(GF__CL(clEnqueueReadBuffer, (d->host_queue, whole, CL_TRUE, align, 16, h, 0, NULL, NULL)) == CL_SUCCESS && !memcmp(h, "0123456789abcdef", 16),
              "wrapped sub-buffer: what the view holds is where the wrapped sub-buffer begins");
    }
out:
    if (w) gf_buffer_destroy(w);
    if (v) gf_buffer_destroy(v);
    if (b) gf_buffer_destroy(b);
    if (sub) GF__CL(clReleaseMemObject, (sub));
    if (whole) GF__CL(clReleaseMemObject, (whole));
}

/* A launch this backend cannot take (a view no sub-buffer can cover, shared_bytes without a
   __local parameter) is refused where it is given: a captured gf_launch and
   gf_graph_set_kernel_args took it, and every replay of the graph failed (a review). */
static void test_refused_as_captured(gf_device *dev)
{
    gf_module_desc d;
    gf_module *m = NULL;
    gf_kernel *k = NULL;
    gf_stream *s = NULL;
    gf_buffer *b = NULL, *odd = NULL;
    gf_graph *g = NULL;
    gf_launch_dims dims = { { 1, 1, 1 }, { 4, 1, 1 }, 0 }, shared = { { 1, 1, 1 }, { 4, 1, 1 }, 16 };
    int n = 4, h[8] = { 0 };
    memset(&d, 0, sizeof d);
    d.opencl_source = "__kernel void put(__global int *p, int n) { if ((int)get_global_id(0) < n) p[get_global_id(0)] = 7; }\n";
    if (!CHECK_EQ_RESULT(gf_module_load(dev, &d, &m), GF_OK) || !CHECK_EQ_RESULT(gf_kernel_get(m, "put", &k), GF_OK) ||
        !CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK) || !CHECK_EQ_RESULT(gf_buffer_create(dev, 4096, &b), GF_OK) ||
        !CHECK_EQ_RESULT(gf_buffer_view(b, 4, 64, &odd), GF_OK))
        goto out;
    {
        gf_arg good[2] = { GF_ARG_BUFFER(b), GF_ARG(n) }, bad[2] = { GF_ARG_BUFFER(odd), GF_ARG(n) };
        CHECK_FAIL(gf_launch(s, k, dims, bad, 2), GF_ERROR_INVALID_ARGUMENT);   /* as before, directly */
        CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
        CHECK_FAIL(gf_launch(s, k, dims, bad, 2), GF_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(gf_last_error(), "view at byte 4") != NULL, "a captured launch of a view no sub-buffer covers: refused at the call, said why");
        CHECK_FAIL(gf_launch(s, k, shared, good, 2), GF_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(gf_last_error(), "__local") != NULL, "a captured launch with shared_bytes the kernel has no parameter for: refused at the call");
        CHECK_EQ_RESULT(gf_launch(s, k, dims, good, 2), GF_OK);
        CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
        if (g) {
            CHECK_FAIL(gf_graph_set_kernel_args(g, 0, bad, 2), GF_ERROR_INVALID_ARGUMENT);
            CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);   /* refused arguments changed nothing */
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            CHECK(gf_copy_to_host(h, b, 0, sizeof h) == GF_OK && h[0] == 7 && h[3] == 7, "the graph runs with its captured arguments");
        }
    }
    /* a module reloaded with a third parameter: the graph captured with two is refused at its
       launch (it ran, with the third argument a direct launch had left on the cl_kernel) */
    if (g) {
        int seven = 7, hundred = 100;
        gf_arg three[3] = { GF_ARG_BUFFER(b), GF_ARG(seven), GF_ARG(hundred) };
        d.opencl_source = "__kernel void put(__global int *p, int n, int w) { p[get_global_id(0)] = n * 1000 + w; }\n";
        if (CHECK_EQ_RESULT(gf_module_reload(m, &d), GF_OK)) {
            CHECK_EQ_RESULT(gf_launch(s, k, dims, three, 3), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            CHECK_FAIL(gf_graph_launch(g, s), GF_ERROR_INVALID_ARGUMENT);
            CHECK(strstr(gf_last_error(), "takes 3 arguments") != NULL, "a graph captured before a reload that added a parameter: refused, said why");
            CHECK(gf_stream_synchronize(s) == GF_OK && gf_copy_to_host(h, b, 0, sizeof h) == GF_OK && h[0] == 7100, "... and nothing of it ran");
        }
    }
out:
    if (g) gf_graph_destroy(g);
    if (odd) gf_buffer_destroy(odd);
    if (b) gf_buffer_destroy(b);
    if (s) gf_stream_destroy(s);
    if (m) gf_module_destroy(m);
}

/* An OpenCL 1.1 device was opened, and its first fill or marker failed in the driver: refused
   at open now, named. The device's version is changed in gpuflow's table of the driver. */
static cl_int (CL_API_CALL *real_device_info)(cl_device_id, cl_device_info, size_t, void *, size_t *);
static cl_int CL_API_CALL device_info_as_1_1(cl_device_id id, cl_device_info what, size_t size, void *out, size_t *size_out)
{
    static const char old[] = "OpenCL 1.1 (as told by the test)";
    if (what != CL_DEVICE_VERSION) return real_device_info(id, what, size, out, size_out);
    if (size_out) *size_out = sizeof old;
    if (out) {
        if (size < sizeof old) return CL_INVALID_VALUE;
        memcpy(out, old, sizeof old);
    }
    return CL_SUCCESS;
}
static void test_old_device(void)
{
    gf_device *dev = NULL;
    real_device_info = gf__cl.clGetDeviceInfo;
    gf__cl.clGetDeviceInfo = device_info_as_1_1;
    CHECK_FAIL(gf_device_open(GF_BACKEND_OPENCL, 0, &dev), GF_ERROR_NOT_SUPPORTED);
    CHECK(strstr(gf_last_error(), "OpenCL 1.1 device") && strstr(gf_last_error(), "1.2 or later"), "an OpenCL 1.1 device: the refusal says why");
    gf__cl.clGetDeviceInfo = real_device_info;
    if (dev) gf_device_close(dev);
    CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_OPENCL, 0, &dev), GF_OK);   /* nothing was left half-open */
    if (dev) gf_device_close(dev);
}

int main(void)
{
    gf_device *dev = NULL;
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    setenv("POCL_MAX_WORK_GROUP_SIZE", "64", 1);
    setenv("POCL_DEVICES", "pthread pthread", 1);
    test_vendor_codes();
    r = gf_device_open(GF_BACKEND_OPENCL, 0, &dev);
    if (r != GF_OK || !strstr(dev->info.name, "pthread")) {
        printf("notice: opencl_limits skipped: %s\n", r != GF_OK ? gf_last_error() : "the first OpenCL device is not PoCL's");
        SKIP("PoCL not the first OpenCL platform here");
        if (dev) gf_device_close(dev);
        return th_finish();
    }
    printf("opencl limits on %s\n", gf_device_name(dev));
    test_small_groups(dev);
    test_build_message(dev);
    test_view_of_wrapped_sub_buffer(dev);
    test_refused_as_captured(dev);
    gf_device_close(dev);
    test_two_devices();
    test_old_device();
    return th_finish();
}
