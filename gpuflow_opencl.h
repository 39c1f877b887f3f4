/* gpuflow_opencl.h -- the OpenCL backend of gpuflow.

    #define GPUFLOW_IMPLEMENTATION
    #define GPUFLOW_OPENCL
    #include "gpuflow_opencl.h"

    CL/cl.h is used for types and constants only. The ICD loader (libOpenCL.so.1, OpenCL.dll,
    or the OpenCL framework on macOS) is loaded at run time, once, into a function table; a
    program built with this backend runs on machines without OpenCL and falls back.

    HOW GPUFLOW MAPS ONTO OPENCL
    ============================
    device      every device of every platform through the ICD loader, GPUs first, then
                accelerators, then CPUs; the index counts across platforms.
                GPUFLOW_OPENCL_PLATFORM=<substring of the platform name> narrows the choice.
                One cl_context per opened device, plus an internal queue for mapping pinned
                memory. Free memory is the device's global memory minus gpuflow's buffers
                (OpenCL has no portable query for it).
    stream      an in-order cl_command_queue with profiling on (clCreateCommandQueueWith-
                Properties on 2.0+, else clCreateCommandQueue). High/low priority become
                CL_QUEUE_PRIORITY_KHR where the device has cl_khr_priority_hints, and are
                ignored elsewhere. Query does not block: a marker enqueued when work was added
                since the last query, and its CL_EVENT_COMMAND_EXECUTION_STATUS read.
    event       record = clEnqueueMarkerWithWaitList; the gpuflow event holds that marker's
                cl_event (a new record replaces it). A stream wait is a barrier on the marker
                held at the time of the wait, so later records do not move earlier waits.
                Every record is flushed so that other queues waiting on it make progress.
                Elapsed time is CL_PROFILING_COMMAND_END(end) - CL_PROFILING_COMMAND_END(start)
                of the two markers: a marker ends when all work before it has, which is what a
                CUDA event's timestamp means.
    callback    a marker after prior work, a user event the queue then waits on (a barrier),
                and clSetEventCallback on the marker. The driver's callback only hands the job
                to the device's callback threads, which run fn and then complete the user
                event. So fn may block (on a host flag, say) without stalling the driver's own
                threads or other queues; a new callback thread starts whenever every existing
                one is busy.
    memory      buffers are cl_mem (buf->ptr); copies and fills are non-blocking
                clEnqueueRead/Write/Copy/FillBuffer. Pinned host memory is a
                CL_MEM_ALLOC_HOST_PTR buffer mapped once (the device keeps host pointer ->
                cl_mem to unmap and release it). Managed buffers are fine-grained SVM
                (clSVMAlloc) wrapped in a CL_MEM_USE_HOST_PTR cl_mem, so copies, fills and
                kernel arguments treat them like any buffer; the SVM address is kept in
                buf->addr and freed when the wrapper is destroyed. Without fine-grained SVM they
                are GF_ERROR_NOT_SUPPORTED. Prefetch and stream-ordered allocation are left to
                the core (NULL entries).
    kernels     programs from OpenCL C (opencl_source, preferred when both are given) or from
                SPIR-V (clCreateProgramWithIL on 2.1+, or cl_khr_il_program), built with
                build_options; the build log goes into GF_ERROR_BUILD's message. A launch sets
                the arguments (buffers as cl_mem) and enqueues the NDRange under k->lock, since
                a cl_kernel's arguments are shared state. global = grid * block, local = block.
                dims.shared_bytes > 0 becomes one extra, trailing __local argument of that size.
    graphs      left to the core's recorded replay: the graph entries are NULL. (PoCL 3.1 and
                NVIDIA offer provisional cl_khr_command_buffer revisions that differ; it cannot
                hold host callbacks or cross-queue waits, which captures may contain.)
*/
#ifndef GPUFLOW_OPENCL_H
#define GPUFLOW_OPENCL_H
#include "gpuflow.h"
#endif

#if defined(GPUFLOW_IMPLEMENTATION) && defined(GPUFLOW_OPENCL) && !defined(GPUFLOW_OPENCL_IMPLEMENTATION_DONE)
#define GPUFLOW_OPENCL_IMPLEMENTATION_DONE

#ifndef CL_TARGET_OPENCL_VERSION
#  define CL_TARGET_OPENCL_VERSION 300
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#  define CL_USE_DEPRECATED_OPENCL_1_2_APIS   /* clCreateCommandQueue, for 1.2 devices */
#endif
#include <CL/cl.h>
#include <CL/cl_ext.h>

/* ---- the driver table ------------------------------------------------------------------- */
typedef cl_program (CL_API_CALL *gf__cl_il_fn)(cl_context, const void *, size_t, cl_int *);

typedef struct gf__cl_api {
    cl_int (CL_API_CALL *clGetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (CL_API_CALL *clGetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
    cl_int (CL_API_CALL *clGetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
    cl_int (CL_API_CALL *clGetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
    void *(CL_API_CALL *clGetExtensionFunctionAddressForPlatform)(cl_platform_id, const char *);
    cl_context (CL_API_CALL *clCreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                              void (CL_CALLBACK *)(const char *, const void *, size_t, void *),
                                              void *, cl_int *);
    cl_int (CL_API_CALL *clReleaseContext)(cl_context);
    cl_command_queue (CL_API_CALL *clCreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties, cl_int *);
    cl_command_queue (CL_API_CALL *clCreateCommandQueueWithProperties)(cl_context, cl_device_id,
                                                                       const cl_queue_properties *, cl_int *);  /* 2.0 */
    cl_int (CL_API_CALL *clReleaseCommandQueue)(cl_command_queue);
    cl_int (CL_API_CALL *clFlush)(cl_command_queue);
    cl_int (CL_API_CALL *clFinish)(cl_command_queue);
    cl_mem (CL_API_CALL *clCreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (CL_API_CALL *clReleaseMemObject)(cl_mem);
    cl_int (CL_API_CALL *clSetMemObjectDestructorCallback)(cl_mem, void (CL_CALLBACK *)(cl_mem, void *), void *);
    void *(CL_API_CALL *clSVMAlloc)(cl_context, cl_svm_mem_flags, size_t, cl_uint);   /* 2.0 */
    void (CL_API_CALL *clSVMFree)(cl_context, void *);                               /* 2.0 */
    cl_int (CL_API_CALL *clEnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                              cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *clEnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *,
                                               cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *clEnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t,
                                              cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *clEnqueueFillBuffer)(cl_command_queue, cl_mem, const void *, size_t, size_t, size_t,
                                              cl_uint, const cl_event *, cl_event *);
    void *(CL_API_CALL *clEnqueueMapBuffer)(cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t,
                                            cl_uint, const cl_event *, cl_event *, cl_int *);
    cl_int (CL_API_CALL *clEnqueueUnmapMemObject)(cl_command_queue, cl_mem, void *, cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *clEnqueueMarkerWithWaitList)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *clEnqueueBarrierWithWaitList)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *clWaitForEvents)(cl_uint, const cl_event *);
    cl_int (CL_API_CALL *clGetEventInfo)(cl_event, cl_event_info, size_t, void *, size_t *);
    cl_int (CL_API_CALL *clGetEventProfilingInfo)(cl_event, cl_profiling_info, size_t, void *, size_t *);
    cl_int (CL_API_CALL *clRetainEvent)(cl_event);
    cl_int (CL_API_CALL *clReleaseEvent)(cl_event);
    cl_event (CL_API_CALL *clCreateUserEvent)(cl_context, cl_int *);
    cl_int (CL_API_CALL *clSetUserEventStatus)(cl_event, cl_int);
    cl_int (CL_API_CALL *clSetEventCallback)(cl_event, cl_int, void (CL_CALLBACK *)(cl_event, cl_int, void *), void *);
    cl_program (CL_API_CALL *clCreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
    gf__cl_il_fn clCreateProgramWithIL;                                               /* 2.1 */
    cl_int (CL_API_CALL *clBuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                                         void (CL_CALLBACK *)(cl_program, void *), void *);
    cl_int (CL_API_CALL *clGetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *);
    cl_int (CL_API_CALL *clReleaseProgram)(cl_program);
    cl_kernel (CL_API_CALL *clCreateKernel)(cl_program, const char *, cl_int *);
    cl_int (CL_API_CALL *clGetKernelInfo)(cl_kernel, cl_kernel_info, size_t, void *, size_t *);
    cl_int (CL_API_CALL *clReleaseKernel)(cl_kernel);
    cl_int (CL_API_CALL *clSetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (CL_API_CALL *clEnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
                                                 const size_t *, cl_uint, const cl_event *, cl_event *);
} gf__cl_api;

static gf__cl_api gf__cl;
static gf__driver gf__cl_driver;

#if defined(_WIN32)
#  define GF__CL_LIBRARY "OpenCL.dll"
#elif defined(__APPLE__)
#  define GF__CL_LIBRARY "/System/Library/Frameworks/OpenCL.framework/OpenCL"
#else
#  define GF__CL_LIBRARY "libOpenCL.so.1"
#endif

static const char *gf__cl_error_name(cl_int e) {
    switch (e) {
#define GF__CL_E(x) case x: return #x;
    GF__CL_E(CL_SUCCESS) GF__CL_E(CL_DEVICE_NOT_FOUND) GF__CL_E(CL_DEVICE_NOT_AVAILABLE)
    GF__CL_E(CL_COMPILER_NOT_AVAILABLE) GF__CL_E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    GF__CL_E(CL_OUT_OF_RESOURCES) GF__CL_E(CL_OUT_OF_HOST_MEMORY)
    GF__CL_E(CL_PROFILING_INFO_NOT_AVAILABLE) GF__CL_E(CL_MEM_COPY_OVERLAP)
    GF__CL_E(CL_IMAGE_FORMAT_MISMATCH) GF__CL_E(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    GF__CL_E(CL_BUILD_PROGRAM_FAILURE) GF__CL_E(CL_MAP_FAILURE)
    GF__CL_E(CL_MISALIGNED_SUB_BUFFER_OFFSET) GF__CL_E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    GF__CL_E(CL_COMPILE_PROGRAM_FAILURE) GF__CL_E(CL_LINKER_NOT_AVAILABLE)
    GF__CL_E(CL_LINK_PROGRAM_FAILURE) GF__CL_E(CL_DEVICE_PARTITION_FAILED)
    GF__CL_E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) GF__CL_E(CL_INVALID_VALUE)
    GF__CL_E(CL_INVALID_DEVICE_TYPE) GF__CL_E(CL_INVALID_PLATFORM) GF__CL_E(CL_INVALID_DEVICE)
    GF__CL_E(CL_INVALID_CONTEXT) GF__CL_E(CL_INVALID_QUEUE_PROPERTIES)
    GF__CL_E(CL_INVALID_COMMAND_QUEUE) GF__CL_E(CL_INVALID_HOST_PTR) GF__CL_E(CL_INVALID_MEM_OBJECT)
    GF__CL_E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) GF__CL_E(CL_INVALID_IMAGE_SIZE)
    GF__CL_E(CL_INVALID_SAMPLER) GF__CL_E(CL_INVALID_BINARY) GF__CL_E(CL_INVALID_BUILD_OPTIONS)
    GF__CL_E(CL_INVALID_PROGRAM) GF__CL_E(CL_INVALID_PROGRAM_EXECUTABLE)
    GF__CL_E(CL_INVALID_KERNEL_NAME) GF__CL_E(CL_INVALID_KERNEL_DEFINITION) GF__CL_E(CL_INVALID_KERNEL)
    GF__CL_E(CL_INVALID_ARG_INDEX) GF__CL_E(CL_INVALID_ARG_VALUE) GF__CL_E(CL_INVALID_ARG_SIZE)
    GF__CL_E(CL_INVALID_KERNEL_ARGS) GF__CL_E(CL_INVALID_WORK_DIMENSION)
    GF__CL_E(CL_INVALID_WORK_GROUP_SIZE) GF__CL_E(CL_INVALID_WORK_ITEM_SIZE)
    GF__CL_E(CL_INVALID_GLOBAL_OFFSET) GF__CL_E(CL_INVALID_EVENT_WAIT_LIST) GF__CL_E(CL_INVALID_EVENT)
    GF__CL_E(CL_INVALID_OPERATION) GF__CL_E(CL_INVALID_GL_OBJECT) GF__CL_E(CL_INVALID_BUFFER_SIZE)
    GF__CL_E(CL_INVALID_MIP_LEVEL) GF__CL_E(CL_INVALID_GLOBAL_WORK_SIZE) GF__CL_E(CL_INVALID_PROPERTY)
    GF__CL_E(CL_INVALID_IMAGE_DESCRIPTOR) GF__CL_E(CL_INVALID_COMPILER_OPTIONS)
    GF__CL_E(CL_INVALID_LINKER_OPTIONS) GF__CL_E(CL_INVALID_DEVICE_PARTITION_COUNT)
    GF__CL_E(CL_INVALID_PIPE_SIZE) GF__CL_E(CL_INVALID_DEVICE_QUEUE) GF__CL_E(CL_INVALID_SPEC_ID)
    GF__CL_E(CL_MAX_SIZE_RESTRICTION_EXCEEDED) GF__CL_E(CL_PLATFORM_NOT_FOUND_KHR)
#undef GF__CL_E
    default: return "unknown OpenCL error";
    }
}

/* Fails with "<call>: <CL error name> (<code>)", choosing the gpuflow code by the error. */
static gf_result gf__cl_fail(const char *call, cl_int e) {
    gf_result r;
    switch (e) {
    case CL_OUT_OF_HOST_MEMORY: case CL_MEM_OBJECT_ALLOCATION_FAILURE: case CL_INVALID_BUFFER_SIZE:
        r = GF_ERROR_OUT_OF_MEMORY; break;
    case CL_INVALID_VALUE: case CL_INVALID_ARG_INDEX: case CL_INVALID_ARG_VALUE: case CL_INVALID_ARG_SIZE:
    case CL_INVALID_KERNEL_ARGS: case CL_INVALID_WORK_GROUP_SIZE: case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE: case CL_MEM_COPY_OVERLAP:
        r = GF_ERROR_INVALID_ARGUMENT; break;
    case CL_INVALID_KERNEL_NAME: r = GF_ERROR_NOT_FOUND; break;
    default: r = GF_ERROR_DRIVER; break;
    }
    return gf__fail(r, "%s: %s (%d)", call, gf__cl_error_name(e), (int)e);
}

/* Resolves one entry point; missing required ones are named in the driver's failure. */
static int gf__cl_sym(gf__driver *drv, void *slot, const char *name, int required) {
    void *p = gf__dlsym(drv->lib, name);
    memcpy(slot, &p, sizeof p);   /* object pointer -> function pointer without a cast */
    if (!p && required) {
        drv->result = GF_ERROR_BACKEND_UNAVAILABLE;
        snprintf(drv->why, sizeof drv->why, "OpenCL: %s has no %s (an OpenCL 1.2 ICD loader is needed)",
                 GF__CL_LIBRARY, name);
        return 0;
    }
    return 1;
}

static void gf__cl_load_driver(gf__driver *drv) {
    cl_uint platforms = 0;
    cl_int e;
    drv->lib = gf__dlopen(GF__CL_LIBRARY);
    if (!drv->lib) {
        drv->result = GF_ERROR_BACKEND_UNAVAILABLE;
        snprintf(drv->why, sizeof drv->why, "OpenCL: cannot load the ICD loader %s: %s",
                 GF__CL_LIBRARY, gf__dlerror());
        return;
    }
#define GF__CL_REQ(f) if (!gf__cl_sym(drv, &gf__cl.f, #f, 1)) return;
#define GF__CL_OPT(f) gf__cl_sym(drv, &gf__cl.f, #f, 0);
    GF__CL_REQ(clGetPlatformIDs) GF__CL_REQ(clGetPlatformInfo) GF__CL_REQ(clGetDeviceIDs)
    GF__CL_REQ(clGetDeviceInfo) GF__CL_REQ(clGetExtensionFunctionAddressForPlatform)
    GF__CL_REQ(clCreateContext) GF__CL_REQ(clReleaseContext) GF__CL_REQ(clCreateCommandQueue)
    GF__CL_OPT(clCreateCommandQueueWithProperties) GF__CL_REQ(clReleaseCommandQueue)
    GF__CL_REQ(clFlush) GF__CL_REQ(clFinish) GF__CL_REQ(clCreateBuffer) GF__CL_REQ(clReleaseMemObject)
    GF__CL_REQ(clSetMemObjectDestructorCallback) GF__CL_OPT(clSVMAlloc) GF__CL_OPT(clSVMFree)
    GF__CL_REQ(clEnqueueReadBuffer) GF__CL_REQ(clEnqueueWriteBuffer) GF__CL_REQ(clEnqueueCopyBuffer)
    GF__CL_REQ(clEnqueueFillBuffer) GF__CL_REQ(clEnqueueMapBuffer) GF__CL_REQ(clEnqueueUnmapMemObject)
    GF__CL_REQ(clEnqueueMarkerWithWaitList) GF__CL_REQ(clEnqueueBarrierWithWaitList)
    GF__CL_REQ(clWaitForEvents) GF__CL_REQ(clGetEventInfo) GF__CL_REQ(clGetEventProfilingInfo)
    GF__CL_REQ(clRetainEvent) GF__CL_REQ(clReleaseEvent) GF__CL_REQ(clCreateUserEvent) GF__CL_REQ(clSetUserEventStatus)
    GF__CL_REQ(clSetEventCallback) GF__CL_REQ(clCreateProgramWithSource) GF__CL_OPT(clCreateProgramWithIL)
    GF__CL_REQ(clBuildProgram) GF__CL_REQ(clGetProgramBuildInfo) GF__CL_REQ(clReleaseProgram)
    GF__CL_REQ(clCreateKernel) GF__CL_REQ(clGetKernelInfo) GF__CL_REQ(clReleaseKernel)
    GF__CL_REQ(clSetKernelArg) GF__CL_REQ(clEnqueueNDRangeKernel)
#undef GF__CL_REQ
#undef GF__CL_OPT
    /* A loader without any registered driver is no OpenCL at all: say so here, so that AUTO
       passes over OpenCL with this reason. */
    e = gf__cl.clGetPlatformIDs(0, NULL, &platforms);
    if (e != CL_SUCCESS || platforms == 0) {
        drv->result = GF_ERROR_BACKEND_UNAVAILABLE;
        snprintf(drv->why, sizeof drv->why,
                 "OpenCL: the ICD loader %s found no platform (clGetPlatformIDs: %s (%d)); no OpenCL "
                 "driver is registered (/etc/OpenCL/vendors, or OCL_ICD_VENDORS)",
                 GF__CL_LIBRARY, gf__cl_error_name(e), (int)e);
        return;
    }
    drv->result = GF_OK;
}

static gf_result gf__cl_load(void) { return gf__driver_load(&gf__cl_driver, gf__cl_load_driver); }

/* ---- devices ---------------------------------------------------------------------------- */
typedef struct gf__cl_pick { cl_platform_id platform; cl_device_id device; } gf__cl_pick;

/* Every device of every platform (narrowed by GPUFLOW_OPENCL_PLATFORM), GPUs first, then
   accelerators, then CPUs, into *out (allocated). None is GF_ERROR_NO_DEVICE with the reason,
   rather than a count of 0, so that the reason reaches gf_device_open (gf_device_count reads
   the failure as 0 devices). */
static gf_result gf__cl_list(gf__cl_pick **out, int *count) {
    static const cl_device_type order[3] = { CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_CPU };
    const char *filter = getenv("GPUFLOW_OPENCL_PLATFORM");
    cl_platform_id *plats = NULL;
    cl_uint np = 0, p, t;
    int n = 0, cap = 0, kept = 0;
    char names[256] = "";
    gf__cl_pick *picks = NULL;
    cl_int e = gf__cl.clGetPlatformIDs(0, NULL, &np);
    *out = NULL; *count = 0;
    if (e != CL_SUCCESS) return gf__cl_fail("clGetPlatformIDs", e);
    plats = (cl_platform_id *)gf__alloc(sizeof *plats * (np ? np : 1));
    if (!plats) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory listing platforms");
    e = gf__cl.clGetPlatformIDs(np, plats, NULL);
    if (e != CL_SUCCESS) { GPUFLOW_FREE(plats); return gf__cl_fail("clGetPlatformIDs", e); }
    for (p = 0; p < np; p++) {   /* keep the platforms the filter names; remember every name */
        char name[128] = "";
        size_t used = strlen(names);
        gf__cl.clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
        snprintf(names + used, sizeof names - used, "%s\"%s\"", used ? ", " : "", name);
        if (!filter || !*filter || strstr(name, filter)) plats[kept++] = plats[p];
    }
    for (t = 0; t < 3; t++) {
        for (p = 0; p < (cl_uint)kept; p++) {
            cl_uint nd = 0, i;
            cl_device_id *ids;
            if (gf__cl.clGetDeviceIDs(plats[p], order[t], 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
            ids = (cl_device_id *)gf__alloc(sizeof *ids * nd);
            if (!ids || !gf__grow((void **)&picks, &cap, n + (int)nd, sizeof *picks)) {
                GPUFLOW_FREE(ids); GPUFLOW_FREE(picks); GPUFLOW_FREE(plats);
                return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory listing devices");
            }
            if (gf__cl.clGetDeviceIDs(plats[p], order[t], nd, ids, NULL) == CL_SUCCESS)
                for (i = 0; i < nd; i++) { picks[n].platform = plats[p]; picks[n++].device = ids[i]; }
            GPUFLOW_FREE(ids);
        }
    }
    GPUFLOW_FREE(plats);
    if (n == 0) {
        GPUFLOW_FREE(picks);
        if (kept == 0 && np > 0)
            return gf__fail(GF_ERROR_NO_DEVICE, "OpenCL: no platform name contains GPUFLOW_OPENCL_PLATFORM=\"%s\" "
                            "(platforms: %s)", filter, names);
        return gf__fail(GF_ERROR_NO_DEVICE, "OpenCL: no GPU, accelerator or CPU device on platforms %s", names);
    }
    *out = picks; *count = n;
    return GF_OK;
}

static gf_result gf__cl_device_count(int *count) {
    gf__cl_pick *picks;
    gf_result r = gf__cl_list(&picks, count);
    GPUFLOW_FREE(picks);
    return r;
}

/* A job for the callback threads: the user's function, then the user event to complete. */
typedef struct gf__cl_job {
    void (*fn)(void *user);
    void *user;
    cl_event marker, done;
    struct gf__cl_device *dev;
    struct gf__cl_job *next;
} gf__cl_job;

typedef struct gf__cl_pinned { void *ptr; cl_mem mem; struct gf__cl_pinned *next; } gf__cl_pinned;

typedef struct gf__cl_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue host_queue;    /* maps and unmaps pinned memory */
    int version;                    /* 10 * major + minor of CL_DEVICE_VERSION */
    int priorities, fine_svm;
    gf__cl_il_fn create_with_il;    /* NULL: no SPIR-V */
    uint64_t total, allocated;      /* allocated: atomic */
    gf__mutex lock;                 /* pinned, the callback queue and threads */
    gf__cl_pinned *pinned;
    gf__cond cb_cond;
    gf__cl_job *cb_head, *cb_tail;
    int cb_queued, cb_idle, cb_stop;
    gf__thread *cb_threads; int cb_thread_count, cb_thread_cap;
} gf__cl_device;

static void gf__cl_callback_thread(void *arg) {
    gf__cl_device *d = (gf__cl_device *)arg;
    for (;;) {
        gf__cl_job *job;
        gf__lock(&d->lock);
        while (!d->cb_head && !d->cb_stop) {
            d->cb_idle++;
            gf__cond_wait(&d->cb_cond, &d->lock);
            d->cb_idle--;
        }
        job = d->cb_head;
        if (!job) { gf__unlock(&d->lock); return; }   /* stopping, nothing left */
        d->cb_head = job->next;
        if (!d->cb_head) d->cb_tail = NULL;
        d->cb_queued--;
        gf__unlock(&d->lock);
        job->fn(job->user);
        gf__cl.clSetUserEventStatus(job->done, CL_COMPLETE);
        gf__cl.clReleaseEvent(job->done);
        gf__cl.clReleaseEvent(job->marker);
        GPUFLOW_FREE(job);
    }
}

/* Starts one more callback thread; d->lock held. */
static int gf__cl_spawn(gf__cl_device *d) {
    if (!gf__grow((void **)&d->cb_threads, &d->cb_thread_cap, d->cb_thread_count + 1, sizeof(gf__thread)))
        return 0;
    if (!gf__thread_create(&d->cb_threads[d->cb_thread_count], gf__cl_callback_thread, d)) return 0;
    d->cb_thread_count++;
    return 1;
}

/* The driver's callback: hand the job over and return at once. When every callback thread
   is busy (a callback may block), start another, so one blocked callback never holds up
   callbacks of other queues; if none can start, the job waits for a busy thread. */
static void CL_CALLBACK gf__cl_on_marker(cl_event marker, cl_int status, void *arg) {
    gf__cl_job *job = (gf__cl_job *)arg;
    gf__cl_device *d = job->dev;
    (void)marker; (void)status;
    gf__lock(&d->lock);
    if (d->cb_tail) d->cb_tail->next = job; else d->cb_head = job;
    d->cb_tail = job;
    d->cb_queued++;
    if (d->cb_queued > d->cb_idle) gf__cl_spawn(d);
    gf__cond_broadcast(&d->cb_cond);
    gf__unlock(&d->lock);
}

static void gf__cl_device_close(gf_device *dev) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    int i;
    if (!d) return;
    gf__lock(&d->lock);
    d->cb_stop = 1;
    gf__cond_broadcast(&d->cb_cond);
    gf__unlock(&d->lock);
    for (i = 0; i < d->cb_thread_count; i++) gf__thread_join(d->cb_threads[i]);
    while (d->pinned) {   /* pinned memory the program did not free */
        gf__cl_pinned *p = d->pinned;
        d->pinned = p->next;
        gf__cl.clEnqueueUnmapMemObject(d->host_queue, p->mem, p->ptr, 0, NULL, NULL);
        gf__cl.clReleaseMemObject(p->mem);
        GPUFLOW_FREE(p);
    }
    if (d->host_queue) { gf__cl.clFinish(d->host_queue); gf__cl.clReleaseCommandQueue(d->host_queue); }
    if (d->ctx) gf__cl.clReleaseContext(d->ctx);
    GPUFLOW_FREE(d->cb_threads);
    gf__cond_destroy(&d->cb_cond);
    gf__mutex_destroy(&d->lock);
    GPUFLOW_FREE(d);
    dev->native = NULL;
}

/* Is ext one of the space-separated names in list? */
static int gf__cl_has_ext(const char *list, const char *ext) {
    size_t n = strlen(ext);
    const char *p = list;
    while ((p = strstr(p, ext)) != NULL) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
        p += n;
    }
    return 0;
}

/* An in-order queue with profiling; priority is a CL_QUEUE_PRIORITY_*_KHR value or 0. */
static cl_command_queue gf__cl_queue(gf__cl_device *d, cl_ulong priority, cl_int *e) {
    if (d->version >= 20 && gf__cl.clCreateCommandQueueWithProperties) {
        cl_queue_properties props[5] = { CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0, 0, 0 };
        if (priority) { props[2] = CL_QUEUE_PRIORITY_KHR; props[3] = (cl_queue_properties)priority; }
        return gf__cl.clCreateCommandQueueWithProperties(d->ctx, d->device, props, e);
    }
    return gf__cl.clCreateCommandQueue(d->ctx, d->device, CL_QUEUE_PROFILING_ENABLE, e);
}

static gf_result gf__cl_device_open(gf_device *dev, int index) {
    gf__cl_pick *picks;
    gf__cl_device *d;
    int count, major = 1, minor = 0;
    char pname[100] = "", dname[150] = "", version[128] = "", il[256] = "", *exts = NULL;
    size_t ext_size = 0;
    cl_uint units = 0;
    cl_ulong mem = 0;
    cl_int e;
    gf_result r = gf__cl_list(&picks, &count);
    if (r != GF_OK) return r;
    if (index < 0 || index >= count) {   /* the list is read afresh: devices may have gone */
        GPUFLOW_FREE(picks);
        return gf__fail(GF_ERROR_NO_DEVICE, "OpenCL: no device %d (there are %d)", index, count);
    }
    d = (gf__cl_device *)gf__alloc(sizeof *d);
    if (!d) { GPUFLOW_FREE(picks); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory"); }
    d->platform = picks[index].platform;
    d->device = picks[index].device;
    GPUFLOW_FREE(picks);
    gf__mutex_init(&d->lock);
    gf__cond_init(&d->cb_cond);
    dev->native = d;

    gf__cl.clGetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    gf__cl.clGetDeviceInfo(d->device, CL_DEVICE_NAME, sizeof dname, dname, NULL);
    gf__cl.clGetDeviceInfo(d->device, CL_DEVICE_VERSION, sizeof version, version, NULL);
    gf__cl.clGetDeviceInfo(d->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    gf__cl.clGetDeviceInfo(d->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    if (sscanf(version, "OpenCL %d.%d", &major, &minor) != 2) { major = 1; minor = 2; }
    d->version = major * 10 + minor;
    d->total = mem;
    if (gf__cl.clGetDeviceInfo(d->device, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_size) == CL_SUCCESS &&
        (exts = (char *)gf__alloc(ext_size + 1)) != NULL)
        gf__cl.clGetDeviceInfo(d->device, CL_DEVICE_EXTENSIONS, ext_size, exts, NULL);
    d->priorities = exts && gf__cl_has_ext(exts, "cl_khr_priority_hints") &&
                    gf__cl.clCreateCommandQueueWithProperties && d->version >= 20;
    if (d->version >= 20 && gf__cl.clSVMAlloc && gf__cl.clSVMFree) {
        cl_device_svm_capabilities svm = 0;
        gf__cl.clGetDeviceInfo(d->device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
        d->fine_svm = (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
    }
    if (d->version >= 21 && gf__cl.clCreateProgramWithIL &&
        gf__cl.clGetDeviceInfo(d->device, CL_DEVICE_IL_VERSION, sizeof il, il, NULL) == CL_SUCCESS && il[0])
        d->create_with_il = gf__cl.clCreateProgramWithIL;
    else if (exts && gf__cl_has_ext(exts, "cl_khr_il_program")) {
        void *f = gf__cl.clGetExtensionFunctionAddressForPlatform(d->platform, "clCreateProgramWithILKHR");
        memcpy(&d->create_with_il, &f, sizeof f);
    }
    GPUFLOW_FREE(exts);

    {
        cl_context_properties props[3];
        props[0] = CL_CONTEXT_PLATFORM; props[1] = (cl_context_properties)d->platform; props[2] = 0;
        d->ctx = gf__cl.clCreateContext(props, 1, &d->device, NULL, NULL, &e);
    }
    if (!d->ctx) { gf__cl_device_close(dev); return gf__cl_fail("clCreateContext", e); }
    d->host_queue = gf__cl_queue(d, 0, &e);
    if (!d->host_queue) { gf__cl_device_close(dev); return gf__cl_fail("clCreateCommandQueue", e); }
    gf__lock(&d->lock);
    if (!gf__cl_spawn(d)) {
        gf__unlock(&d->lock);
        gf__cl_device_close(dev);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: cannot start the callback thread");
    }
    gf__unlock(&d->lock);

    snprintf(dev->info.name, sizeof dev->info.name, "%s: %s", pname, dname);
    dev->info.total_memory = (size_t)mem;
    dev->info.compute_units = (int)units;
    dev->info.native_graphs = 0;
    dev->info.stream_priorities = d->priorities;
    dev->info.managed_memory = d->fine_svm;
    dev->info.async_alloc = 0;
    dev->info.spirv = d->create_with_il != NULL;
    return GF_OK;
}

static gf_result gf__cl_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    uint64_t used = gf__atomic_load(&d->allocated);
    if (free_bytes) *free_bytes = (size_t)(used < d->total ? d->total - used : 0);
    if (total_bytes) *total_bytes = (size_t)d->total;
    return GF_OK;
}

/* ---- memory ----------------------------------------------------------------------------- */
typedef struct gf__cl_svm { cl_context ctx; void *ptr; } gf__cl_svm;

/* clSVMFree does not wait for commands using the memory; the wrapper's destructor runs only
   once they have finished, so the SVM allocation is freed there. */
static void CL_CALLBACK gf__cl_svm_release(cl_mem mem, void *arg) {
    gf__cl_svm *svm = (gf__cl_svm *)arg;
    (void)mem;
    gf__cl.clSVMFree(svm->ctx, svm->ptr);
    GPUFLOW_FREE(svm);
}

static gf_result gf__cl_buffer_alloc(gf_buffer *buf) {
    gf__cl_device *d = (gf__cl_device *)buf->dev->native;
    cl_mem mem;
    cl_int e;
    if (!buf->managed) {
        mem = gf__cl.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, buf->size, NULL, &e);
        if (!mem) return gf__cl_fail("clCreateBuffer", e);
    } else {
        gf__cl_svm *svm;
        if (!d->fine_svm)
            return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: managed buffers need fine-grained SVM, "
                            "which %s lacks", buf->dev->info.name);
        svm = (gf__cl_svm *)gf__alloc(sizeof *svm);
        if (!svm) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
        svm->ctx = d->ctx;
        svm->ptr = gf__cl.clSVMAlloc(d->ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, buf->size, 0);
        if (!svm->ptr) {
            GPUFLOW_FREE(svm);
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "clSVMAlloc: returned NULL for %lu bytes",
                            (unsigned long)buf->size);
        }
        mem = gf__cl.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, buf->size, svm->ptr, &e);
        if (!mem) {
            gf__cl.clSVMFree(d->ctx, svm->ptr);
            GPUFLOW_FREE(svm);
            return gf__cl_fail("clCreateBuffer(CL_MEM_USE_HOST_PTR, SVM)", e);
        }
        e = gf__cl.clSetMemObjectDestructorCallback(mem, gf__cl_svm_release, svm);
        if (e != CL_SUCCESS) {
            gf__cl.clReleaseMemObject(mem);
            gf__cl.clSVMFree(d->ctx, svm->ptr);
            GPUFLOW_FREE(svm);
            return gf__cl_fail("clSetMemObjectDestructorCallback", e);
        }
        buf->addr = (uint64_t)(uintptr_t)svm->ptr;
    }
    buf->ptr = mem;
    gf__atomic_add(&d->allocated, (uint64_t)buf->size);
    return GF_OK;
}

static void gf__cl_buffer_free(gf_buffer *buf) {
    gf__cl_device *d = (gf__cl_device *)buf->dev->native;
    if (!buf->ptr) return;
    gf__cl.clReleaseMemObject((cl_mem)buf->ptr);   /* deferred by OpenCL until its commands finish */
    gf__atomic_add(&d->allocated, (uint64_t)0 - (uint64_t)buf->size);
    buf->ptr = NULL;
    buf->addr = 0;
}

static gf_result gf__cl_host_alloc(gf_device *dev, size_t bytes, void **out) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    gf__cl_pinned *p = (gf__cl_pinned *)gf__alloc(sizeof *p);
    cl_int e;
    if (!p) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    p->mem = gf__cl.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
    if (!p->mem) { GPUFLOW_FREE(p); return gf__cl_fail("clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", e); }
    p->ptr = gf__cl.clEnqueueMapBuffer(d->host_queue, p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes,
                                       0, NULL, NULL, &e);
    if (!p->ptr) {
        gf__cl.clReleaseMemObject(p->mem);
        GPUFLOW_FREE(p);
        return gf__cl_fail("clEnqueueMapBuffer", e);
    }
    gf__lock(&d->lock);
    p->next = d->pinned;
    d->pinned = p;
    gf__unlock(&d->lock);
    *out = p->ptr;
    return GF_OK;
}

static void gf__cl_host_free(gf_device *dev, void *ptr) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    gf__cl_pinned **link, *p = NULL;
    gf__lock(&d->lock);
    for (link = &d->pinned; *link; link = &(*link)->next)
        if ((*link)->ptr == ptr) { p = *link; *link = p->next; break; }
    gf__unlock(&d->lock);
    if (!p) {
        gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_host_free: %p is not pinned memory of this device", ptr);
        return;
    }
    /* The buffer is released once the unmap has run. */
    gf__cl.clEnqueueUnmapMemObject(d->host_queue, p->mem, p->ptr, 0, NULL, NULL);
    gf__cl.clReleaseMemObject(p->mem);
    gf__cl.clFlush(d->host_queue);
    GPUFLOW_FREE(p);
}

/* ---- streams ---------------------------------------------------------------------------- */
typedef struct gf__cl_stream {
    cl_command_queue queue;
    int dirty;                      /* atomic: work enqueued since the last query marker */
    gf__mutex lock;                 /* last */
    cl_event last;                  /* marker of the last query; NULL: all done */
} gf__cl_stream;

#define GF__CL_QUEUE(s) (((gf__cl_stream *)(s)->native)->queue)

/* Every enqueue ends with this: the next query needs a new marker. */
static gf_result gf__cl_enqueued(gf_stream *s, const char *call, cl_int e) {
    if (e != CL_SUCCESS) return gf__cl_fail(call, e);
    gf__atomic_store_int(&((gf__cl_stream *)s->native)->dirty, 1);
    return GF_OK;
}

static gf_result gf__cl_stream_create(gf_stream *s) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    gf__cl_stream *cs = (gf__cl_stream *)gf__alloc(sizeof *cs);
    cl_ulong priority = 0;
    cl_int e;
    if (!cs) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    if (d->priorities && s->priority == GF_PRIORITY_HIGH) priority = CL_QUEUE_PRIORITY_HIGH_KHR;
    if (d->priorities && s->priority == GF_PRIORITY_LOW) priority = CL_QUEUE_PRIORITY_LOW_KHR;
    cs->queue = gf__cl_queue(d, priority, &e);
    if (!cs->queue) { GPUFLOW_FREE(cs); return gf__cl_fail("clCreateCommandQueue", e); }
    gf__mutex_init(&cs->lock);
    s->native = cs;
    return GF_OK;
}

static void gf__cl_stream_destroy(gf_stream *s) {
    gf__cl_stream *cs = (gf__cl_stream *)s->native;
    if (!cs) return;
    gf__cl.clFinish(cs->queue);
    if (cs->last) gf__cl.clReleaseEvent(cs->last);
    gf__cl.clReleaseCommandQueue(cs->queue);
    gf__mutex_destroy(&cs->lock);
    GPUFLOW_FREE(cs);
    s->native = NULL;
}

static gf_result gf__cl_stream_synchronize(gf_stream *s) {
    gf__cl_stream *cs = (gf__cl_stream *)s->native;
    cl_event last;
    cl_int e;
    gf__atomic_store_int(&cs->dirty, 0);   /* before the finish: work added later marks it again */
    e = gf__cl.clFinish(cs->queue);
    if (e != CL_SUCCESS) return gf__cl_fail("clFinish", e);
    gf__lock(&cs->lock);
    last = cs->last;
    cs->last = NULL;
    gf__unlock(&cs->lock);
    if (last) gf__cl.clReleaseEvent(last);
    return GF_OK;
}

/* GF_OK, GF_NOT_READY, or the failure of a command an event stands for. */
static gf_result gf__cl_status(cl_event ev) {
    cl_int st = CL_COMPLETE;
    cl_int e = gf__cl.clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (e != CL_SUCCESS) return gf__cl_fail("clGetEventInfo", e);
    if (st < 0) return gf__fail(GF_ERROR_DRIVER, "OpenCL: a command failed: %s (%d)", gf__cl_error_name(st), (int)st);
    return st == CL_COMPLETE ? GF_OK : GF_NOT_READY;
}

static gf_result gf__cl_stream_query(gf_stream *s) {
    gf__cl_stream *cs = (gf__cl_stream *)s->native;
    gf_result r = GF_OK;
    gf__lock(&cs->lock);
    if (gf__atomic_load_int(&cs->dirty)) {
        cl_event m;
        cl_int e;
        gf__atomic_store_int(&cs->dirty, 0);
        e = gf__cl.clEnqueueMarkerWithWaitList(cs->queue, 0, NULL, &m);
        if (e != CL_SUCCESS) {
            gf__atomic_store_int(&cs->dirty, 1);
            gf__unlock(&cs->lock);
            return gf__cl_fail("clEnqueueMarkerWithWaitList", e);
        }
        gf__cl.clFlush(cs->queue);
        if (cs->last) gf__cl.clReleaseEvent(cs->last);
        cs->last = m;
    }
    if (cs->last) {
        r = gf__cl_status(cs->last);
        if (r == GF_OK) { gf__cl.clReleaseEvent(cs->last); cs->last = NULL; }
    }
    gf__unlock(&cs->lock);
    return r;
}

static gf_result gf__cl_copy(gf_stream *s, const gf__copy *c) {
    cl_command_queue q = GF__CL_QUEUE(s);
    switch (c->kind) {
    case GF__COPY_H2D:
        return gf__cl_enqueued(s, "clEnqueueWriteBuffer", gf__cl.clEnqueueWriteBuffer(
            q, (cl_mem)c->dst->ptr, CL_FALSE, c->dst_offset, c->bytes, c->host, 0, NULL, NULL));
    case GF__COPY_D2H:
        return gf__cl_enqueued(s, "clEnqueueReadBuffer", gf__cl.clEnqueueReadBuffer(
            q, (cl_mem)c->src->ptr, CL_FALSE, c->src_offset, c->bytes, c->host, 0, NULL, NULL));
    default:
        return gf__cl_enqueued(s, "clEnqueueCopyBuffer", gf__cl.clEnqueueCopyBuffer(
            q, (cl_mem)c->src->ptr, (cl_mem)c->dst->ptr, c->src_offset, c->dst_offset, c->bytes, 0, NULL, NULL));
    }
}

static gf_result gf__cl_fill(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    return gf__cl_enqueued(s, "clEnqueueFillBuffer", gf__cl.clEnqueueFillBuffer(
        GF__CL_QUEUE(s), (cl_mem)buf->ptr, &value, 1, offset, bytes, 0, NULL, NULL));
}

static gf_result gf__cl_host_callback(gf_stream *s, void (*fn)(void *user), void *user) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    cl_command_queue q = GF__CL_QUEUE(s);
    gf__cl_job *job = (gf__cl_job *)gf__alloc(sizeof *job);
    const char *call = "clEnqueueMarkerWithWaitList";
    cl_int e;
    if (!job) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    job->fn = fn; job->user = user; job->dev = d;
    job->done = gf__cl.clCreateUserEvent(d->ctx, &e);
    if (!job->done) { GPUFLOW_FREE(job); return gf__cl_fail("clCreateUserEvent", e); }
    /* Later work waits for the user event, which the callback thread completes after fn. */
    e = gf__cl.clEnqueueMarkerWithWaitList(q, 0, NULL, &job->marker);
    if (e == CL_SUCCESS) {
        call = "clEnqueueBarrierWithWaitList";
        e = gf__cl.clEnqueueBarrierWithWaitList(q, 1, &job->done, NULL);
        if (e == CL_SUCCESS) {
            call = "clSetEventCallback";
            e = gf__cl.clSetEventCallback(job->marker, CL_COMPLETE, gf__cl_on_marker, job);
            if (e != CL_SUCCESS) gf__cl.clSetUserEventStatus(job->done, CL_COMPLETE);   /* let the barrier pass */
        }
        if (e != CL_SUCCESS) gf__cl.clReleaseEvent(job->marker);
    }
    if (e != CL_SUCCESS) {
        gf__cl.clReleaseEvent(job->done);
        GPUFLOW_FREE(job);
    } else {
        gf__cl.clFlush(q);   /* the marker must reach the device for its callback to fire */
    }
    return gf__cl_enqueued(s, call, e);
}

/* ---- events ----------------------------------------------------------------------------- */
typedef struct gf__cl_event {
    gf__mutex lock;                 /* marker: record and wait may race from two threads */
    cl_event marker;                /* the latest record; NULL before the first */
} gf__cl_event;

static gf_result gf__cl_event_create(gf_event *ev) {
    gf__cl_event *ce = (gf__cl_event *)gf__alloc(sizeof *ce);
    if (!ce) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    gf__mutex_init(&ce->lock);
    ev->native = ce;
    return GF_OK;
}

static void gf__cl_event_destroy(gf_event *ev) {
    gf__cl_event *ce = (gf__cl_event *)ev->native;
    if (!ce) return;
    if (ce->marker) gf__cl.clReleaseEvent(ce->marker);
    gf__mutex_destroy(&ce->lock);
    GPUFLOW_FREE(ce);
    ev->native = NULL;
}


/* The marker of the latest record, retained for the caller; NULL if never recorded. */
static cl_event gf__cl_marker(gf_event *ev) {
    gf__cl_event *ce = (gf__cl_event *)ev->native;
    cl_event m;
    gf__lock(&ce->lock);
    m = ce->marker;
    if (m) gf__cl.clRetainEvent(m);
    gf__unlock(&ce->lock);
    return m;
}

static gf_result gf__cl_event_record(gf_event *ev, gf_stream *s) {
    gf__cl_event *ce = (gf__cl_event *)ev->native;
    cl_command_queue q = GF__CL_QUEUE(s);
    cl_event m, old;
    cl_int e = gf__cl.clEnqueueMarkerWithWaitList(q, 0, NULL, &m);
    if (e != CL_SUCCESS) return gf__cl_fail("clEnqueueMarkerWithWaitList", e);
    gf__cl.clFlush(q);   /* other queues may wait on it: it must reach the device */
    gf__lock(&ce->lock);
    old = ce->marker;
    ce->marker = m;
    gf__unlock(&ce->lock);
    if (old) gf__cl.clReleaseEvent(old);
    return GF_OK;
}

static gf_result gf__cl_stream_wait_event(gf_stream *s, gf_event *ev) {
    cl_event m = gf__cl_marker(ev);
    cl_int e;
    if (!m) return GF_OK;   /* never recorded: nothing to wait for */
    e = gf__cl.clEnqueueBarrierWithWaitList(GF__CL_QUEUE(s), 1, &m, NULL);
    gf__cl.clReleaseEvent(m);
    return gf__cl_enqueued(s, "clEnqueueBarrierWithWaitList", e);
}

static gf_result gf__cl_event_synchronize(gf_event *ev) {
    cl_event m = gf__cl_marker(ev);
    gf_result r;
    cl_int e;
    if (!m) return GF_OK;
    e = gf__cl.clWaitForEvents(1, &m);
    r = e == CL_SUCCESS ? gf__cl_status(m) : gf__cl_fail("clWaitForEvents", e);
    gf__cl.clReleaseEvent(m);
    return r;
}

static gf_result gf__cl_event_query(gf_event *ev) {
    cl_event m = gf__cl_marker(ev);
    gf_result r;
    if (!m) return GF_OK;
    r = gf__cl_status(m);
    gf__cl.clReleaseEvent(m);
    return r;
}

/* A marker ends when all work before it has: the end of start's marker to the end of end's. */
static gf_result gf__cl_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    cl_event a = gf__cl_marker(start), b = gf__cl_marker(end);
    cl_ulong ta = 0, tb = 0;
    cl_int e = CL_SUCCESS;
    gf_result r = GF_OK;
    if (!a || !b) r = gf__fail(GF_ERROR_INVALID_STATE, "OpenCL: event not recorded");
    if (r == GF_OK) r = gf__cl_status(a);
    if (r == GF_OK) r = gf__cl_status(b);
    if (r == GF_OK) e = gf__cl.clGetEventProfilingInfo(a, CL_PROFILING_COMMAND_END, sizeof ta, &ta, NULL);
    if (r == GF_OK && e == CL_SUCCESS) e = gf__cl.clGetEventProfilingInfo(b, CL_PROFILING_COMMAND_END, sizeof tb, &tb, NULL);
    if (r == GF_OK && e != CL_SUCCESS) r = gf__cl_fail("clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", e);
    if (r == GF_OK && (ta == 0 || tb == 0))
        r = gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: this platform gives markers no timestamps");
    if (r == GF_OK) *ms = (float)((double)(cl_long)(tb - ta) / 1e6);
    if (a) gf__cl.clReleaseEvent(a);
    if (b) gf__cl.clReleaseEvent(b);
    return r;
}

/* ---- modules and kernels ---------------------------------------------------------------- */
/* The module keeps its cl_kernels itself: the core frees its gf_kernel objects before it
   unloads the module. */
typedef struct gf__cl_kernel { cl_kernel kernel; cl_uint args; struct gf__cl_kernel *next; } gf__cl_kernel;
typedef struct gf__cl_module { cl_program program; gf__cl_kernel *kernels; } gf__cl_module;

static void gf__cl_module_unload(gf_module *mod) {
    gf__cl_module *cm = (gf__cl_module *)mod->native;
    if (!cm) return;
    while (cm->kernels) {
        gf__cl_kernel *ck = cm->kernels;
        cm->kernels = ck->next;
        gf__cl.clReleaseKernel(ck->kernel);
        GPUFLOW_FREE(ck);
    }
    gf__cl.clReleaseProgram(cm->program);
    GPUFLOW_FREE(cm);
    mod->native = NULL;
}

static gf_result gf__cl_module_load(gf_module *mod, const gf_module_desc *desc) {
    gf__cl_device *d = (gf__cl_device *)mod->dev->native;
    cl_program prog;
    cl_int e;
    if (desc->opencl_source) {
        const char *src = desc->opencl_source;
        prog = gf__cl.clCreateProgramWithSource(d->ctx, 1, &src, NULL, &e);
        if (!prog) return gf__cl_fail("clCreateProgramWithSource", e);
    } else if (desc->spirv && desc->spirv_size) {
        if (!d->create_with_il)
            return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: %s takes no SPIR-V (no clCreateProgramWithIL or "
                            "cl_khr_il_program); give opencl_source", mod->dev->info.name);
        prog = d->create_with_il(d->ctx, desc->spirv, desc->spirv_size, &e);
        if (!prog) return gf__cl_fail("clCreateProgramWithIL", e);
    } else {
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: the module has neither opencl_source nor spirv");
    }
    e = gf__cl.clBuildProgram(prog, 1, &d->device, desc->build_options, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[900] = "";
        size_t n = 0;
        gf__cl.clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
        if (n == 0)   /* a log longer than our buffer: ask for the size, then for the text */
            gf__cl.clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
        if (n > sizeof log - 1) {
            char *full = (char *)gf__alloc(n + 1);
            if (full && gf__cl.clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, n, full, NULL) == CL_SUCCESS)
                gf__copy_str(log, sizeof log, full);
            GPUFLOW_FREE(full);
        }
        gf__cl.clReleaseProgram(prog);
        return gf__fail(GF_ERROR_BUILD, "clBuildProgram: %s (%d): %s", gf__cl_error_name(e), (int)e, log);
    }
    {
        gf__cl_module *cm = (gf__cl_module *)gf__alloc(sizeof *cm);
        if (!cm) { gf__cl.clReleaseProgram(prog); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory"); }
        cm->program = prog;
        mod->native = cm;
    }
    return GF_OK;
}

static gf_result gf__cl_kernel_get(gf_kernel *k) {
    gf__cl_module *cm = (gf__cl_module *)k->mod->native;
    gf__cl_kernel *ck = (gf__cl_kernel *)gf__alloc(sizeof *ck);
    cl_int e;
    if (!ck) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    ck->kernel = gf__cl.clCreateKernel(cm->program, k->name, &e);
    if (!ck->kernel) {
        GPUFLOW_FREE(ck);
        if (e == CL_INVALID_KERNEL_NAME)
            return gf__fail(GF_ERROR_NOT_FOUND, "clCreateKernel: CL_INVALID_KERNEL_NAME (%d): no kernel \"%s\"",
                            (int)e, k->name);
        return gf__cl_fail("clCreateKernel", e);
    }
    e = gf__cl.clGetKernelInfo(ck->kernel, CL_KERNEL_NUM_ARGS, sizeof ck->args, &ck->args, NULL);
    if (e != CL_SUCCESS) {
        gf__cl.clReleaseKernel(ck->kernel);
        GPUFLOW_FREE(ck);
        return gf__cl_fail("clGetKernelInfo(CL_KERNEL_NUM_ARGS)", e);
    }
    ck->next = cm->kernels;   /* the core holds mod->lock here */
    cm->kernels = ck;
    k->native = ck;
    return GF_OK;
}

static gf_result gf__cl_launch(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims,
                               const gf_arg *args, int count) {
    gf__cl_kernel *ck = (gf__cl_kernel *)k->native;
    cl_uint given = (cl_uint)count + (dims->shared_bytes ? 1u : 0u), work_dim = 1, i;
    size_t global[3], local[3];
    cl_int e = CL_SUCCESS;
    char call[192];   /* k->name is under 128 */
    /* A cl_kernel keeps arguments between launches: a short list would reuse stale ones. */
    if (given != ck->args)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "OpenCL: kernel %s takes %u arguments, %u given%s",
                        k->name, (unsigned)ck->args, (unsigned)given,
                        dims->shared_bytes ? " (shared_bytes adds a trailing __local one)" : "");
    for (i = 0; i < 3; i++) {
        local[i] = dims->block[i];
        global[i] = (size_t)dims->grid[i] * dims->block[i];
        if (global[i] > 1) work_dim = i + 1;
    }
    gf__lock(&k->lock);
    for (i = 0; i < given; i++) {
        if (i == (cl_uint)count) {   /* the __local argument of dims.shared_bytes */
            e = gf__cl.clSetKernelArg(ck->kernel, i, dims->shared_bytes, NULL);
        } else if (args[i].buffer) {
            cl_mem m = (cl_mem)args[i].buffer->ptr;
            e = gf__cl.clSetKernelArg(ck->kernel, i, sizeof m, &m);
        } else {
            e = gf__cl.clSetKernelArg(ck->kernel, i, args[i].size, args[i].value);
        }
        if (e != CL_SUCCESS) break;
    }
    if (e == CL_SUCCESS)
        e = gf__cl.clEnqueueNDRangeKernel(GF__CL_QUEUE(s), ck->kernel, work_dim, NULL, global, local, 0, NULL, NULL);
    gf__unlock(&k->lock);
    if (e == CL_SUCCESS) return gf__cl_enqueued(s, "clEnqueueNDRangeKernel", e);
    if (i < given) snprintf(call, sizeof call, "clSetKernelArg(%s, argument %u)", k->name, (unsigned)i);
    else snprintf(call, sizeof call, "clEnqueueNDRangeKernel(%s)", k->name);
    return gf__cl_fail(call, e);
}

/* ---- the table -------------------------------------------------------------------------- */
static const gf__backend gf__cl_backend_table = {
    GF_BACKEND_OPENCL, "opencl",
    gf__cl_load, gf__cl_device_count, gf__cl_device_open, gf__cl_device_close, gf__cl_memory_info,
    gf__cl_buffer_alloc, gf__cl_buffer_free,
    NULL, NULL,                     /* stream-ordered allocation: the core's cache */
    gf__cl_host_alloc, gf__cl_host_free,
    gf__cl_stream_create, gf__cl_stream_destroy, gf__cl_stream_synchronize, gf__cl_stream_query,
    gf__cl_copy, gf__cl_fill,
    NULL,                           /* prefetch: SVM needs none */
    gf__cl_host_callback,
    gf__cl_event_create, gf__cl_event_destroy, gf__cl_event_record, gf__cl_stream_wait_event,
    gf__cl_event_synchronize, gf__cl_event_query, gf__cl_event_elapsed_ms,
    gf__cl_module_load, gf__cl_module_unload, gf__cl_kernel_get, gf__cl_launch,
    NULL, NULL, NULL, NULL, NULL,   /* graphs: the core's recorded replay */
    NULL
};

static const gf__backend *gf__opencl_backend(void) { return &gf__cl_backend_table; }

#endif /* GPUFLOW_OPENCL implementation */
