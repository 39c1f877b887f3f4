/* gpuflow_opencl.h -- the OpenCL backend of gpuflow.

    #define GPUFLOW_IMPLEMENTATION
    #define GPUFLOW_OPENCL
    #include "gpuflow_opencl.h"

    CL/cl.h is used for types and constants only. The ICD loader (libOpenCL.so.1, OpenCL.dll,
    or the OpenCL framework on macOS) is loaded at run time, once, into a function table; a
    program built with this backend runs on machines without OpenCL and falls back.

    Needs: CL/cl.h declaring OpenCL 2.1 or later (the Khronos OpenCL-Headers; checked at
    compile time), and at run time an ICD loader with the OpenCL 1.2 entry points and devices
    of OpenCL 1.2 or later (an older device is refused at open: GF_ERROR_NOT_SUPPORTED). 2.0+
    entries (clCreateCommandQueueWithProperties, SVM, clCreateProgramWithIL) are used where
    the driver has them.

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
                ignored elsewhere. Launches, copies and fills are enqueued without an event
                (NVIDIA's OpenCL spends microseconds on each one); query marks the work
                enqueued since the last query with one marker (only if there is some), flushes
                and reads the marker's status, so a stream whose work is done answers GF_OK.
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
                one is busy. Closing the device waits for callbacks still to come.
    memory      buffers are cl_mem (buf->native); copies and fills are non-blocking
                clEnqueueRead/Write/Copy/FillBuffer. Pinned host memory is a
                CL_MEM_ALLOC_HOST_PTR buffer mapped once (the device keeps host pointer ->
                cl_mem to unmap and release it). Managed buffers are fine-grained SVM
                (clSVMAlloc) wrapped in a CL_MEM_USE_HOST_PTR cl_mem, so copies, fills and
                kernel arguments treat them like any buffer; the SVM address is kept in
                buf->host and freed when the wrapper is destroyed. Without fine-grained SVM they
                are GF_ERROR_NOT_SUPPORTED. Prefetch and stream-ordered allocation are left to
                the core (NULL entries). A view is a sub-buffer (clCreateSubBuffer) where its
                offset is a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN; copies and fills reach
                any view through its parent's cl_mem, but only a sub-buffer can be a kernel
                argument (others are refused with GF_ERROR_INVALID_ARGUMENT). 2/4-byte fills
                are clEnqueueFillBuffer patterns; 2D copies are the core's one copy per row.
    kernels     programs from OpenCL C (opencl_source, preferred when both are given) or from
                SPIR-V (clCreateProgramWithIL on 2.1+, or cl_khr_il_program), built with
                build_options; the build log goes into GF_ERROR_BUILD's message. A launch sets
                the arguments (buffers as cl_mem) and enqueues the NDRange under k->lock, since
                a cl_kernel's arguments are shared state. global = grid * block, local = block.
                dims.shared_bytes > 0 becomes one extra, trailing __local argument of that size.
    graphs      left to the core's recorded replay: the graph entries are NULL. (PoCL 3.1 and
                NVIDIA offer provisional cl_khr_command_buffer revisions that differ; it cannot
                hold host callbacks or cross-queue waits, which captures may contain.)
    interop     gf_*_native: a buffer's cl_mem (a view's sub-buffer, 0 without one), a
                stream's cl_command_queue, an event's latest marker cl_event (until its next
                record), a kernel's cl_kernel, a device's cl_context and cl_device_id; none
                is retained for you. gf_device_open_native takes a cl_context and one of its
                devices; gf_stream_wrap an in-order queue of the device's context (without
                profiling on it, elapsed times fail); gf_buffer_wrap a cl_mem of that context.
                gpuflow never releases what it was given. External memory: opaque fds
                (cl_khr_external_memory_opaque_fd), each command on an import between an
                acquire and a release; external semaphores: binary, opaque fds, waited only
                (see "interop: semaphores" and "interop: memory" below).
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
#if defined(__has_include)
#  if !__has_include(<CL/cl.h>)
#    error "gpuflow: GPUFLOW_OPENCL needs the Khronos OpenCL headers (CL/cl.h, 2.1 or newer) on the include path (Debian: apt-get install opencl-headers; elsewhere add -I<dir> holding CL/cl.h), or leave GPUFLOW_OPENCL undefined"
#  endif
#endif
#include <CL/cl.h>
#include <CL/cl_ext.h>

/* The headers must declare the optional 2.x entries and their types; the driver itself needs
   only OpenCL 1.2, which the loader checks at run time. */
#ifndef CL_VERSION_2_1
#  error "gpuflow_opencl.h needs CL/cl.h of OpenCL 2.1 or later (the Khronos OpenCL-Headers); if CL_TARGET_OPENCL_VERSION is set before CL/cl.h is included, it must be 210 or higher"
#endif
/* cl_khr_semaphore and cl_khr_external_semaphore(_opaque_fd): the values the extensions give,
   for headers older than them (the types gpuflow uses are its own, below). */
#ifndef CL_SEMAPHORE_TYPE_KHR
#  define CL_SEMAPHORE_TYPE_KHR                         0x203D
#  define CL_SEMAPHORE_TYPE_BINARY_KHR                  1
#endif
#ifndef CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR
#  define CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR             0x2055
#endif
#ifndef CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR
#  define CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR   0x204D
#endif
/* cl_khr_external_memory(_opaque_fd), likewise. */
#ifndef CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR
#  define CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR       0x2060
#endif
#ifndef CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR
#  define CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR 0x204F
#endif
#ifndef CL_MEM_DEVICE_HANDLE_LIST_KHR
#  define CL_MEM_DEVICE_HANDLE_LIST_KHR                 0x2051
#  define CL_MEM_DEVICE_HANDLE_LIST_END_KHR             0
#endif
#ifndef CL_QUEUE_PRIORITY_KHR   /* cl_khr_priority_hints, missing from some 2.1 headers */
#  define CL_QUEUE_PRIORITY_KHR      0x1096
#  define CL_QUEUE_PRIORITY_HIGH_KHR (1 << 0)
#  define CL_QUEUE_PRIORITY_LOW_KHR  (1 << 2)
#endif

/* ---- the driver table ------------------------------------------------------------------- */
/* Every entry point, once: X(name, return type, (parameter types), need), the column order of
   every driver list of gpuflow. REQ entries are
   OpenCL 1.2, and a loader without one is no OpenCL for gpuflow; OPT entries are 2.0+ and
   stay NULL where missing (the features using them report GF_ERROR_NOT_SUPPORTED or fall
   back); OPT30 ones are OPT entries of 3.0, checked against CL/cl.h only where it declares
   them. The list becomes the table's types and fields, the loader, and a compile-time check
   of each signature against CL/cl.h. */
#define GF__CL_ENTRIES(X) \
    X(clGetPlatformIDs, cl_int, (cl_uint, cl_platform_id *, cl_uint *), REQ) \
    X(clGetPlatformInfo, cl_int, (cl_platform_id, cl_platform_info, size_t, void *, size_t *), REQ) \
    X(clGetDeviceIDs, cl_int, (cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *), REQ) \
    X(clGetDeviceInfo, cl_int, (cl_device_id, cl_device_info, size_t, void *, size_t *), REQ) \
    X(clGetExtensionFunctionAddressForPlatform, void *, (cl_platform_id, const char *), REQ) \
    X(clCreateContext, cl_context, (const cl_context_properties *, cl_uint, const cl_device_id *, \
        void (CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *), REQ) \
    X(clReleaseContext, cl_int, (cl_context), REQ) \
    X(clGetContextInfo, cl_int, (cl_context, cl_context_info, size_t, void *, size_t *), REQ) \
    X(clCreateCommandQueue, cl_command_queue, (cl_context, cl_device_id, cl_command_queue_properties, cl_int *), REQ) \
    X(clCreateCommandQueueWithProperties, cl_command_queue, (cl_context, cl_device_id, \
        const cl_queue_properties *, cl_int *), OPT) \
    X(clGetCommandQueueInfo, cl_int, (cl_command_queue, cl_command_queue_info, size_t, void *, size_t *), REQ) \
    X(clReleaseCommandQueue, cl_int, (cl_command_queue), REQ) \
    X(clFlush, cl_int, (cl_command_queue), REQ) \
    X(clFinish, cl_int, (cl_command_queue), REQ) \
    X(clCreateBuffer, cl_mem, (cl_context, cl_mem_flags, size_t, void *, cl_int *), REQ) \
    X(clCreateSubBuffer, cl_mem, (cl_mem, cl_mem_flags, cl_buffer_create_type, const void *, cl_int *), REQ) \
    X(clCreateBufferWithProperties, cl_mem, (cl_context, const cl_ulong *, cl_mem_flags, size_t, void *, cl_int *), OPT30) \
    X(clGetMemObjectInfo, cl_int, (cl_mem, cl_mem_info, size_t, void *, size_t *), REQ) \
    X(clReleaseMemObject, cl_int, (cl_mem), REQ) \
    X(clSetMemObjectDestructorCallback, cl_int, (cl_mem, void (CL_CALLBACK *)(cl_mem, void *), void *), REQ) \
    X(clSVMAlloc, void *, (cl_context, cl_svm_mem_flags, size_t, cl_uint), OPT) \
    X(clSVMFree, void, (cl_context, void *), OPT) \
    X(clEnqueueReadBuffer, cl_int, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, \
        cl_uint, const cl_event *, cl_event *), REQ) \
    X(clEnqueueWriteBuffer, cl_int, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, \
        cl_uint, const cl_event *, cl_event *), REQ) \
    X(clEnqueueCopyBuffer, cl_int, (cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, \
        cl_uint, const cl_event *, cl_event *), REQ) \
    X(clEnqueueFillBuffer, cl_int, (cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, \
        cl_uint, const cl_event *, cl_event *), REQ) \
    X(clEnqueueMapBuffer, void *, (cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t, \
        cl_uint, const cl_event *, cl_event *, cl_int *), REQ) \
    X(clEnqueueUnmapMemObject, cl_int, (cl_command_queue, cl_mem, void *, cl_uint, const cl_event *, cl_event *), REQ) \
    X(clEnqueueMarkerWithWaitList, cl_int, (cl_command_queue, cl_uint, const cl_event *, cl_event *), REQ) \
    X(clEnqueueBarrierWithWaitList, cl_int, (cl_command_queue, cl_uint, const cl_event *, cl_event *), REQ) \
    X(clWaitForEvents, cl_int, (cl_uint, const cl_event *), REQ) \
    X(clGetEventInfo, cl_int, (cl_event, cl_event_info, size_t, void *, size_t *), REQ) \
    X(clGetEventProfilingInfo, cl_int, (cl_event, cl_profiling_info, size_t, void *, size_t *), REQ) \
    X(clRetainEvent, cl_int, (cl_event), REQ) \
    X(clReleaseEvent, cl_int, (cl_event), REQ) \
    X(clCreateUserEvent, cl_event, (cl_context, cl_int *), REQ) \
    X(clSetUserEventStatus, cl_int, (cl_event, cl_int), REQ) \
    X(clSetEventCallback, cl_int, (cl_event, cl_int, void (CL_CALLBACK *)(cl_event, cl_int, void *), void *), REQ) \
    X(clCreateProgramWithSource, cl_program, (cl_context, cl_uint, const char **, const size_t *, cl_int *), REQ) \
    X(clCreateProgramWithIL, cl_program, (cl_context, const void *, size_t, cl_int *), OPT) \
    X(clCreateProgramWithBinary, cl_program, (cl_context, cl_uint, const cl_device_id *, const size_t *, \
        const unsigned char **, cl_int *, cl_int *), REQ) \
    X(clGetProgramInfo, cl_int, (cl_program, cl_program_info, size_t, void *, size_t *), REQ) \
    X(clBuildProgram, cl_int, (cl_program, cl_uint, const cl_device_id *, const char *, \
        void (CL_CALLBACK *)(cl_program, void *), void *), REQ) \
    X(clGetProgramBuildInfo, cl_int, (cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *), REQ) \
    X(clReleaseProgram, cl_int, (cl_program), REQ) \
    X(clCreateKernel, cl_kernel, (cl_program, const char *, cl_int *), REQ) \
    X(clGetKernelInfo, cl_int, (cl_kernel, cl_kernel_info, size_t, void *, size_t *), REQ) \
    X(clGetKernelWorkGroupInfo, cl_int, (cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void *, size_t *), REQ) \
    X(clReleaseKernel, cl_int, (cl_kernel), REQ) \
    X(clSetKernelArg, cl_int, (cl_kernel, cl_uint, size_t, const void *), REQ) \
    X(clEnqueueNDRangeKernel, cl_int, (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, \
        const size_t *, cl_uint, const cl_event *, cl_event *), REQ)

#define GF__CL_IS_REQ 1
#define GF__CL_IS_OPT 0
#define GF__CL_IS_OPT30 0   /* an OPT entry of OpenCL 3.0, which CL/cl.h declares only at that target */

/* gf__cl_<name>_fn: an entry's pointer type (the SPIR-V entry also arrives as an extension). */
#define GF__CL_TYPEDEF(name, ret, params, need) typedef ret (CL_API_CALL *gf__cl_##name##_fn) params;
GF__CL_ENTRIES(GF__CL_TYPEDEF)
#undef GF__CL_TYPEDEF

typedef struct gf__cl_api {
#define GF__CL_FIELD(name, ret, params, need) gf__cl_##name##_fn name;
    GF__CL_ENTRIES(GF__CL_FIELD)
#undef GF__CL_FIELD
} gf__cl_api;

static gf__cl_api gf__cl;             /* read-only once gf__cl_driver has loaded */
static gf__driver gf__cl_driver;

/* Every driver call goes through one of these, named for what the entry returns. In test
   builds (GPUFLOW_FAULT_INJECTION) the test may fail any call by its entry's name (GF__FAULT
   in gpuflow.h): the entry is then not called, and the call fails as the driver's would.
       e = GF__CL(clFlush, (queue))                   cl_int: CL_OUT_OF_RESOURCES
       m = GF__CL_NEW(clCreateBuffer, (ctx, flags, n, NULL), &e)
                                                      an object, errcode_ret (the entry's last
                                                      argument) given apart: NULL, and
                                                      *errcode_ret = CL_OUT_OF_RESOURCES
       p = GF__CL_PTR(clSVMAlloc, (ctx, flags, n, 0)) a pointer: NULL
       GF__CL_VOID(clSVMFree, (ctx, p))               nothing: the call is skipped
   A call of the wrong form does not compile (the result types differ). */
#define GF__CL_INJECTED CL_OUT_OF_RESOURCES
#define GF__CL_ARGS(...) __VA_ARGS__
#define GF__CL(name, args)      (GF__FAULT(#name) ? GF__CL_INJECTED : gf__cl.name args)
#define GF__CL_PTR(name, args)  (GF__FAULT(#name) ? NULL : gf__cl.name args)
#define GF__CL_VOID(name, args) (GF__FAULT(#name) ? (void)0 : gf__cl.name args)
#define GF__CL_NEW(name, args, errcode_ret) \
    (GF__FAULT(#name) && gf__cl_injected(errcode_ret) ? NULL : gf__cl.name(GF__CL_ARGS args, errcode_ret))
static int gf__cl_injected(cl_int *errcode_ret) {
    *errcode_ret = GF__CL_INJECTED;
    return 1;
}

#if defined(_WIN32)
#  define GF__CL_LIBRARY "OpenCL.dll"
#elif defined(__APPLE__)
#  define GF__CL_LIBRARY "/System/Library/Frameworks/OpenCL.framework/OpenCL"
#else
#  define GF__CL_LIBRARY "libOpenCL.so.1"
#endif

/* NVIDIA's OpenCL answers a kernel's illegal address with -9999, a code of its own, and every
   later call on the context fails: as CUDA's ILLEGAL_ADDRESS, the device is lost. */
#define GF__CL_NV_KERNEL_FAULT (-9999)
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
    GF__CL_E(CL_INVALID_PIPE_SIZE) GF__CL_E(CL_INVALID_DEVICE_QUEUE) GF__CL_E(CL_PLATFORM_NOT_FOUND_KHR)
#ifdef CL_VERSION_2_2
    GF__CL_E(CL_INVALID_SPEC_ID) GF__CL_E(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#endif
#undef GF__CL_E
    case GF__CL_NV_KERNEL_FAULT: return "NVIDIA's code for a kernel's illegal memory access";
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
    case GF__CL_NV_KERNEL_FAULT: r = GF_ERROR_DEVICE_LOST; break;
    default: r = GF_ERROR_DRIVER; break;
    }
    return gf__fail(r, "%s: %s (%d)%s", call, gf__cl_error_name(e), (int)e,
                    r == GF_ERROR_DEVICE_LOST ? ": the context is unusable from now on: close the device" : "");
}

/* ---- loading ---------------------------------------------------------------------------- */
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
        snprintf(drv->why, sizeof drv->why, "OpenCL: cannot load the ICD loader %s (%s): install one and a driver (Debian: "
                 "ocl-icd-libopencl1, and pocl-opencl-icd for the CPU)", GF__CL_LIBRARY, gf__dlerror());
        return;
    }
#define GF__CL_RESOLVE(name, ret, params, need) \
    if (!gf__cl_sym(drv, &gf__cl.name, #name, GF__CL_IS_##need)) return;
    GF__CL_ENTRIES(GF__CL_RESOLVE)
#undef GF__CL_RESOLVE
    /* Compile time only: each slot's type must be CL/cl.h's for its entry, or this compares
       distinct pointer types (an error in C++, and in C under -Werror). sizeof evaluates
       nothing, so no symbol is referenced and nothing is linked. (A CL/cl.h included before
       this file may mark clCreateCommandQueue deprecated: naming it here is no use of it.) */
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#elif defined(_MSC_VER)
#  pragma warning(push)
#  pragma warning(disable: 4996)
#endif
#define GF__CL_SAME_TYPE_REQ(name) (void)sizeof(gf__cl.name == &name);
#define GF__CL_SAME_TYPE_OPT(name) GF__CL_SAME_TYPE_REQ(name)
#if defined(CL_VERSION_3_0)
#  define GF__CL_SAME_TYPE_OPT30(name) GF__CL_SAME_TYPE_REQ(name)
#else
#  define GF__CL_SAME_TYPE_OPT30(name)
#endif
#define GF__CL_SAME_TYPE(name, ret, params, need) GF__CL_SAME_TYPE_##need(name)
    GF__CL_ENTRIES(GF__CL_SAME_TYPE)
#undef GF__CL_SAME_TYPE
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#elif defined(_MSC_VER)
#  pragma warning(pop)
#endif
    /* A loader without any registered driver is no OpenCL at all: say so here, so that AUTO
       passes over OpenCL with this reason. */
    e = GF__CL(clGetPlatformIDs, (0, NULL, &platforms));
    drv->result = GF_OK;
    if (e != CL_SUCCESS && e != CL_PLATFORM_NOT_FOUND_KHR) {
        drv->result = GF_ERROR_BACKEND_UNAVAILABLE;
        snprintf(drv->why, sizeof drv->why, "OpenCL: clGetPlatformIDs: %s (%d)", gf__cl_error_name(e), (int)e);
    } else if (e != CL_SUCCESS || platforms == 0) {
        drv->result = GF_ERROR_BACKEND_UNAVAILABLE;
        snprintf(drv->why, sizeof drv->why, "OpenCL: the ICD loader %s found no platform; no OpenCL driver is "
                 "registered (/etc/OpenCL/vendors, or OCL_ICD_VENDORS)", GF__CL_LIBRARY);
    }
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
    cl_int e, listing = CL_SUCCESS;   /* the last failure to list devices, other than "none" */
    cl_int naming = CL_SUCCESS;       /* the last failure to read a platform's name */
    GPUFLOW_ASSERT(gf__cl_driver.result == GF_OK && gf__cl_driver.tried);   /* the core loads first */
    *out = NULL; *count = 0;
    e = GF__CL(clGetPlatformIDs, (0, NULL, &np));
    if (e != CL_SUCCESS) return gf__cl_fail("clGetPlatformIDs", e);
    plats = (cl_platform_id *)gf__calloc(sizeof *plats * (np ? np : 1));
    if (!plats) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory listing platforms");
    e = GF__CL(clGetPlatformIDs, (np, plats, NULL));
    if (e != CL_SUCCESS) { gf__free(plats); return gf__cl_fail("clGetPlatformIDs", e); }
    for (p = 0; p < np; p++) {   /* keep the platforms the filter names; remember every name */
        char name[128] = "";
        size_t used = strlen(names);
        if ((e = GF__CL(clGetPlatformInfo, (plats[p], CL_PLATFORM_NAME, sizeof name, name, NULL))) != CL_SUCCESS) { naming = e; name[0] = 0; }
        snprintf(names + used, sizeof names - used, "%s\"%s\"", used ? ", " : "", name);
        if (!filter || !*filter || strstr(name, filter)) plats[kept++] = plats[p];
    }
    for (t = 0; t < 3; t++) {
        for (p = 0; p < (cl_uint)kept; p++) {
            cl_uint nd = 0, i;
            cl_device_id *ids;
            e = GF__CL(clGetDeviceIDs, (plats[p], order[t], 0, NULL, &nd));
            if (e != CL_SUCCESS || nd == 0) { if (e != CL_DEVICE_NOT_FOUND) listing = e; continue; }
            ids = (cl_device_id *)gf__calloc(sizeof *ids * nd);
            if (!ids || !gf__grow((void **)&picks, &cap, n + (int)nd, sizeof *picks)) {
                gf__free(ids); gf__free(picks); gf__free(plats);
                return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory listing devices");
            }
            e = GF__CL(clGetDeviceIDs, (plats[p], order[t], nd, ids, NULL));
            if (e == CL_SUCCESS)
                for (i = 0; i < nd; i++) { picks[n].platform = plats[p]; picks[n++].device = ids[i]; }
            else listing = e;
            gf__free(ids);
        }
    }
    gf__free(plats);
    if (n == 0) {
        char failed[96] = "";
        gf__free(picks);
        if (kept == 0 && np > 0) {
            if (naming != CL_SUCCESS)
                snprintf(failed, sizeof failed, "; clGetPlatformInfo: %s (%d)", gf__cl_error_name(naming), (int)naming);
            return gf__fail(GF_ERROR_NO_DEVICE, "OpenCL: no platform name contains GPUFLOW_OPENCL_PLATFORM=\"%s\" "
                            "(platforms: %s%s)", filter, names, failed);
        }
        if (listing != CL_SUCCESS)
            snprintf(failed, sizeof failed, " (clGetDeviceIDs: %s (%d))", gf__cl_error_name(listing), (int)listing);
        return gf__fail(GF_ERROR_NO_DEVICE, "OpenCL: no GPU, accelerator or CPU device on platforms %s%s", names, failed);
    }
    *out = picks; *count = n;
    return GF_OK;
}

static gf_result gf__cl_device_count(int *count) {
    gf__cl_pick *picks;
    gf_result r = gf__cl_list(&picks, count);
    gf__free(picks);
    return r;
}

/* A job for the callback threads: the user's function, then the user event to complete. A
   job is undecided until the barrier on its user event is enqueued (run fn), or could not be
   (drop it: nothing waits for it); a callback thread waits for that decision. */
typedef enum { GF__CL_JOB_UNDECIDED, GF__CL_JOB_RUN, GF__CL_JOB_DROP } gf__cl_job_state;
typedef struct gf__cl_job {
    void (*fn)(void *user);
    void *user;
    gf__cl_job_state state;         /* under dev->lock */
    cl_event marker, done;
    gf_stream *stream;              /* told of a failure the marker's status shows */
    struct gf__cl_device *dev;
    struct gf__cl_job *next;
} gf__cl_job;

typedef struct gf__cl_pinned { void *ptr; cl_mem mem; struct gf__cl_pinned *next; } gf__cl_pinned;

/* cl_khr_semaphore's entry points, found per platform (clGetExtensionFunctionAddressForPlatform). */
typedef struct gf__cl_sem_s *gf__cl_sem;   /* a cl_semaphore_khr */
typedef gf__cl_sem (CL_API_CALL *gf__cl_sem_create_fn)(cl_context, const cl_ulong *, cl_int *);
typedef cl_int (CL_API_CALL *gf__cl_sem_enqueue_fn)(cl_command_queue, cl_uint, const gf__cl_sem *, const cl_ulong *, cl_uint,
                                                    const cl_event *, cl_event *);
typedef cl_int (CL_API_CALL *gf__cl_sem_release_fn)(gf__cl_sem);
typedef struct gf__cl_semaphores {
    gf__cl_sem_create_fn create;      /* clCreateSemaphoreWithPropertiesKHR; NULL: no semaphores */
    gf__cl_sem_enqueue_fn wait;       /* clEnqueueWaitSemaphoresKHR */
    gf__cl_sem_release_fn release;    /* clReleaseSemaphoreKHR */
    int import_fd;                    /* the device imports opaque fds */
} gf__cl_semaphores;

/* cl_khr_external_memory's entry points: imported memory is OpenCL's only between the two. */
typedef cl_int (CL_API_CALL *gf__cl_handoff_fn)(cl_command_queue, cl_uint, const cl_mem *, cl_uint, const cl_event *, cl_event *);
typedef struct gf__cl_external_memory {
    gf__cl_handoff_fn acquire;        /* clEnqueueAcquireExternalMemObjectsKHR */
    gf__cl_handoff_fn release;        /* clEnqueueReleaseExternalMemObjectsKHR */
    int import_fd;                    /* both found, clCreateBufferWithProperties too, opaque fds listed */
} gf__cl_external_memory;

typedef struct gf__cl_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    int own_ctx;                    /* 0: the program's (gf_device_open_native), left to it */
    cl_command_queue host_queue;    /* maps and unmaps pinned memory */
    int version;                    /* 10 * major + minor of CL_DEVICE_VERSION */
    int priorities, fine_svm;
    size_t sub_align;               /* a sub-buffer's offset must be a multiple (0: no sub-buffers) */
    gf__cl_clCreateProgramWithIL_fn create_with_il;   /* the 2.1 entry or the KHR one; NULL: no SPIR-V */
    uint64_t total, allocated;      /* allocated: atomic */
    uint64_t max_alloc;             /* CL_DEVICE_MAX_MEM_ALLOC_SIZE: the largest one buffer may be */
    gf__mutex lock;                 /* pinned, the callback queue and threads */
    gf__cl_pinned *pinned;
    gf__cond cb_cond;
    gf__cl_job *cb_head, *cb_tail;
    int cb_queued, cb_idle, cb_stop;
    int cb_live;                    /* jobs made and not yet ended: close waits for them */
    gf__thread *cb_threads; int cb_thread_count, cb_thread_cap;
    gf__mutex fill_lock;            /* the fill kernel: built once, its arguments set per enqueue */
    cl_program fill_program; cl_kernel fill_kernel; int fill_failed;
    size_t fill_local;              /* the fill kernel's work-group: 256, or the kernel's limit below that */
    gf__cl_semaphores sem;
    gf__cl_external_memory xmem;
} gf__cl_device;

/* Pinned memory back to the driver: unmapped (once more if that fails: a mapping left in place
   keeps the driver's host memory), then released, in the host queue's order. */
static void gf__cl_pinned_release(gf__cl_device *d, gf__cl_pinned *p) {
    cl_int e = GF__CL(clEnqueueUnmapMemObject, (d->host_queue, p->mem, p->ptr, 0, NULL, NULL));
    if (e != CL_SUCCESS) e = GF__CL(clEnqueueUnmapMemObject, (d->host_queue, p->mem, p->ptr, 0, NULL, NULL));
    if (e != CL_SUCCESS)
        gf__notice(GF_LOG_WARNING, "OpenCL: clEnqueueUnmapMemObject: %s (%d): pinned memory at %p stays mapped; the driver may keep it",
                   gf__cl_error_name(e), (int)e, p->ptr);
    GF__CL(clReleaseMemObject, (p->mem));
    gf__free(p);
}

/* A job counts as live from its making to its end, so that the device outlives every marker
   callback still to come. */
static gf__cl_job *gf__cl_job_new(gf__cl_device *d, void (*fn)(void *user), void *user) {
    gf__cl_job *job = (gf__cl_job *)gf__calloc(sizeof *job);
    if (!job) return NULL;
    job->fn = fn; job->user = user; job->dev = d;
    gf__lock(&d->lock);
    d->cb_live++;
    gf__unlock(&d->lock);
    return job;
}

/* Frees the job; its user event is completed first, so that the work held behind it runs (a
   job that ran), and so that no driver keeps an unset one alive (a dropped job: NVIDIA's
   OpenCL then hangs the context's release). */
static int gf__cl_user_event_set(cl_event ev, cl_int status, const char *held);
static void gf__cl_job_end(gf__cl_job *job) {
    gf__cl_device *d = job->dev;
    if (job->done && !gf__cl_user_event_set(job->done, CL_COMPLETE, "work after a stream callback")) job->done = NULL;
    if (job->done) GF__CL(clReleaseEvent, (job->done));
    if (job->marker) GF__CL(clReleaseEvent, (job->marker));
    gf__free(job);
    gf__lock(&d->lock);
    if (--d->cb_live == 0) gf__cond_broadcast(&d->cb_cond);
    gf__unlock(&d->lock);
}

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
        while (job->state == GF__CL_JOB_UNDECIDED) gf__cond_wait(&d->cb_cond, &d->lock);
        gf__unlock(&d->lock);
        if (job->state == GF__CL_JOB_RUN) job->fn(job->user);
        gf__cl_job_end(job);
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
    (void)marker;   /* read by the assert alone (NDEBUG) */
    if (status < 0) gf__stream_failed(job->stream, GF_ERROR_DRIVER);   /* a command before it ended abnormally */
    gf__lock(&d->lock);
    GPUFLOW_ASSERT(marker == job->marker && d->cb_thread_count > 0 && !d->cb_stop);
    if (d->cb_tail) d->cb_tail->next = job; else d->cb_head = job;
    d->cb_tail = job;
    d->cb_queued++;
    if (d->cb_queued > d->cb_idle) {   /* on the driver's thread, whenever it runs: not a count fault rules can aim at */
        gf__alloc_own++;
        gf__cl_spawn(d);
        gf__alloc_own--;
    }
    gf__cond_broadcast(&d->cb_cond);
    gf__unlock(&d->lock);
}

static void gf__cl_device_close(gf_device *dev) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    int i;
    if (!d) return;
    gf__lock(&d->lock);
    while (d->cb_live > 0) gf__cond_wait(&d->cb_cond, &d->lock);   /* streams destroyed unfinished */
    d->cb_stop = 1;
    gf__cond_broadcast(&d->cb_cond);
    gf__unlock(&d->lock);
    for (i = 0; i < d->cb_thread_count; i++) gf__thread_join(d->cb_threads[i]);
    GPUFLOW_ASSERT(!d->cb_head);   /* the threads leave only once the queue is empty */
    while (d->pinned) {   /* pinned memory the program did not free */
        gf__cl_pinned *p = d->pinned;
        d->pinned = p->next;
        gf__cl_pinned_release(d, p);
    }
    if (d->host_queue) {
        GF__CL(clFinish, (d->host_queue));
        GF__CL(clReleaseCommandQueue, (d->host_queue));
    }
    if (d->fill_kernel) GF__CL(clReleaseKernel, (d->fill_kernel));
    if (d->fill_program) GF__CL(clReleaseProgram, (d->fill_program));
    gf__mutex_destroy(&d->fill_lock);
    if (d->ctx && d->own_ctx) GF__CL(clReleaseContext, (d->ctx));
    gf__free(d->cb_threads);
    gf__cond_destroy(&d->cb_cond);
    gf__mutex_destroy(&d->lock);
    gf__free(d);
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

/* The cl_khr_semaphore entries gpuflow uses (all, or none kept), and whether the device imports
   opaque fds. */
static int gf__cl_handle_listed(gf__cl_device *d, cl_device_info what, cl_uint type) {
    cl_uint list[16];
    size_t size = 0, i;
    if (GF__CL(clGetDeviceInfo, (d->device, what, sizeof list, list, &size)) != CL_SUCCESS) return 0;
    for (i = 0; i < size / sizeof *list && i < 16; i++) if (list[i] == type) return 1;
    return 0;
}
static void gf__cl_semaphores_load(gf__cl_device *d, const char *exts) {
    static const char *const names[3] = { "clCreateSemaphoreWithPropertiesKHR", "clEnqueueWaitSemaphoresKHR", "clReleaseSemaphoreKHR" };
    void *f[3];
    int i;
    for (i = 0; i < 3; i++)
        if (!(f[i] = GF__CL_PTR(clGetExtensionFunctionAddressForPlatform, (d->platform, names[i])))) return;
    memcpy(&d->sem.create, &f[0], sizeof f[0]);
    memcpy(&d->sem.wait, &f[1], sizeof f[1]);
    memcpy(&d->sem.release, &f[2], sizeof f[2]);
    d->sem.import_fd = gf__cl_has_ext(exts, "cl_khr_external_semaphore_opaque_fd") &&
                       gf__cl_handle_listed(d, CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR, CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR);
}
/* cl_khr_external_memory's hand-off pair, and whether the device imports opaque fds. */
static void gf__cl_external_memory_load(gf__cl_device *d, const char *exts) {
    void *acquire = GF__CL_PTR(clGetExtensionFunctionAddressForPlatform, (d->platform, "clEnqueueAcquireExternalMemObjectsKHR"));
    void *release = GF__CL_PTR(clGetExtensionFunctionAddressForPlatform, (d->platform, "clEnqueueReleaseExternalMemObjectsKHR"));
    if (!acquire || !release || !gf__cl.clCreateBufferWithProperties) return;
    memcpy(&d->xmem.acquire, &acquire, sizeof acquire);
    memcpy(&d->xmem.release, &release, sizeof release);
    d->xmem.import_fd = gf__cl_has_ext(exts, "cl_khr_external_memory_opaque_fd") &&
                        gf__cl_handle_listed(d, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR, CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR);
}

/* An in-order queue with profiling; priority is a CL_QUEUE_PRIORITY_*_KHR value or 0. */
static gf_result gf__cl_queue(gf__cl_device *d, cl_ulong priority, cl_command_queue *out) {
    cl_int e;
    if (d->version >= 20 && gf__cl.clCreateCommandQueueWithProperties) {
        cl_queue_properties props[5] = { CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0, 0, 0 };
        if (priority) { props[2] = CL_QUEUE_PRIORITY_KHR; props[3] = (cl_queue_properties)priority; }
        *out = GF__CL_NEW(clCreateCommandQueueWithProperties, (d->ctx, d->device, props), &e);
        return *out ? GF_OK : gf__cl_fail("clCreateCommandQueueWithProperties", e);
    }
    *out = GF__CL_NEW(clCreateCommandQueue, (d->ctx, d->device, CL_QUEUE_PROFILING_ENABLE), &e);
    return *out ? GF_OK : gf__cl_fail("clCreateCommandQueue", e);
}

/* Sets up d (platform and device set; ctx set when the program gives one) as dev's state:
   what the device can do, a context unless given, the pinned-memory queue, a callback thread. */
static gf_result gf__cl_device_init(gf_device *dev, gf__cl_device *d) {
    int major = 1, minor = 0;
    char pname[100] = "", dname[150] = "", version[128] = "", il[256] = "", *exts = NULL;
    size_t ext_size = 0;
    cl_uint units = 0, align_bits = 0;
    cl_ulong mem = 0;
    cl_int e;
    gf_result r;
    gf__mutex_init(&d->lock);
    gf__mutex_init(&d->fill_lock);
    gf__cond_init(&d->cb_cond);
    dev->native = d;

    /* What these queries cannot tell stays at its default: no name, version 1.2, no extras. */
    GF__CL(clGetPlatformInfo, (d->platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL));
    GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_NAME, sizeof dname, dname, NULL));
    GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_VERSION, sizeof version, version, NULL));
    GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL));
    GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL));
    GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
    GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL));
    if (sscanf(version, "OpenCL %d.%d", &major, &minor) != 2) { major = 1; minor = 2; }
    d->version = major * 10 + minor;
    if (d->version < 12) {   /* fills, markers with wait lists and program linking are 1.2's */
        gf__cl_device_close(dev);
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: %s (%s) is an OpenCL %d.%d device; gpuflow needs OpenCL 1.2 or later",
                        dname[0] ? dname : "the device", pname[0] ? pname : "unnamed platform", major, minor);
    }
    d->total = mem;
    d->sub_align = align_bits / 8;
    if (GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_size)) == CL_SUCCESS &&
        (exts = (char *)gf__calloc(ext_size + 1)) != NULL)
        GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_EXTENSIONS, ext_size, exts, NULL));
    d->priorities = exts && gf__cl_has_ext(exts, "cl_khr_priority_hints") &&
                    gf__cl.clCreateCommandQueueWithProperties && d->version >= 20;
    if (d->version >= 20 && gf__cl.clSVMAlloc && gf__cl.clSVMFree) {
        cl_device_svm_capabilities svm = 0;
        GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL));
        d->fine_svm = (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
    }
    if (d->version >= 21 && gf__cl.clCreateProgramWithIL &&
        GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_IL_VERSION, sizeof il, il, NULL)) == CL_SUCCESS && il[0])
        d->create_with_il = gf__cl.clCreateProgramWithIL;
    else if (exts && gf__cl_has_ext(exts, "cl_khr_il_program")) {
        void *f = GF__CL_PTR(clGetExtensionFunctionAddressForPlatform, (d->platform, "clCreateProgramWithILKHR"));
        memcpy(&d->create_with_il, &f, sizeof f);
    }
    if (exts && gf__cl_has_ext(exts, "cl_khr_semaphore")) gf__cl_semaphores_load(d, exts);
    if (exts && gf__cl_has_ext(exts, "cl_khr_external_memory")) gf__cl_external_memory_load(d, exts);
    gf__free(exts);

    if (!d->ctx) {
        cl_context_properties props[3];
        props[0] = CL_CONTEXT_PLATFORM; props[1] = (cl_context_properties)d->platform; props[2] = 0;
        d->ctx = GF__CL_NEW(clCreateContext, (props, 1, &d->device, NULL, NULL), &e);
        if (!d->ctx) { gf__cl_device_close(dev); return gf__cl_fail("clCreateContext", e); }
        d->own_ctx = 1;
    }
    if ((r = gf__cl_queue(d, 0, &d->host_queue)) != GF_OK) { gf__cl_device_close(dev); return r; }
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
    {   /* launch limits, which gf_launch checks before the driver does; no limit on groups */
        size_t group = 0, items[8] = { 0 };   /* at least 3 dimensions; room for a few more */
        cl_ulong local = 0;
        int i;
        if (GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group, &group, NULL)) == CL_SUCCESS)
            dev->info.max_threads_per_block = group > 0xffffffffu ? 0xffffffffu : (unsigned)group;
        if (GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL)) == CL_SUCCESS)
            for (i = 0; i < 3; i++) dev->info.max_block[i] = items[i] > 0xffffffffu ? 0xffffffffu : (unsigned)items[i];
        if (GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL)) == CL_SUCCESS)
            dev->info.max_shared_per_block = local > 0xffffffffu ? 0xffffffffu : (unsigned)local;
    }
    return GF_OK;
}

static gf_result gf__cl_device_open(gf_device *dev, int index) {
    gf__cl_pick *picks;
    gf__cl_device *d;
    int count;
    gf_result r = gf__cl_list(&picks, &count);
    if (r != GF_OK) return r;
    if (index < 0 || index >= count) {   /* the list is read afresh: devices may have gone */
        gf__free(picks);
        return gf__fail(GF_ERROR_NO_DEVICE, "OpenCL: no device %d (there are %d)", index, count);
    }
    d = (gf__cl_device *)gf__calloc(sizeof *d);
    if (!d) { gf__free(picks); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory"); }
    d->platform = picks[index].platform;
    d->device = picks[index].device;
    gf__free(picks);
    return gf__cl_device_init(dev, d);
}

/* A gpuflow device on the program's cl_context and one of its devices: gpuflow makes its own
   queues and buffers there and leaves the context to the program. */
static gf_result gf__cl_device_open_native(gf_device *dev, const gf_native_device *native) {
    gf__cl_device *d;
    cl_platform_id platform = NULL;
    cl_int e;
    if (!native->context || !native->device)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_device_open_native: OpenCL needs both context (a cl_context) "
                        "and device (a cl_device_id of it)");
    e = GF__CL(clGetDeviceInfo, ((cl_device_id)native->device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL));
    if (e != CL_SUCCESS) return gf__cl_fail("clGetDeviceInfo(CL_DEVICE_PLATFORM)", e);
    {   /* the device must be the context's: PoCL made queues and buffers for one outside it */
        cl_device_id *listed;
        size_t bytes = 0, count, i;
        e = GF__CL(clGetContextInfo, ((cl_context)native->context, CL_CONTEXT_DEVICES, 0, NULL, &bytes));
        if (e != CL_SUCCESS) return gf__cl_fail("clGetContextInfo(CL_CONTEXT_DEVICES)", e);
        if (!(listed = (cl_device_id *)gf__malloc(bytes ? bytes : 1))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
        e = GF__CL(clGetContextInfo, ((cl_context)native->context, CL_CONTEXT_DEVICES, bytes, listed, NULL));
        count = e == CL_SUCCESS ? bytes / sizeof *listed : 0;
        for (i = 0; i < count && listed[i] != (cl_device_id)native->device; i++) {}
        gf__free(listed);
        if (e != CL_SUCCESS) return gf__cl_fail("clGetContextInfo(CL_CONTEXT_DEVICES)", e);
        if (i == count)
            return gf__fail(GF_ERROR_WRONG_DEVICE, "gf_device_open_native: the cl_device_id is not one of the cl_context's "
                            "%u devices (CL_CONTEXT_DEVICES)", (unsigned)count);
    }
    d = (gf__cl_device *)gf__calloc(sizeof *d);
    if (!d) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    d->platform = platform;
    d->device = (cl_device_id)native->device;
    d->ctx = (cl_context)native->context;
    return gf__cl_device_init(dev, d);
}

static void gf__cl_device_native(gf_device *dev, gf_native_device *out) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    out->context = d->ctx;
    out->device = d->device;
}

static gf_result gf__cl_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    uint64_t used = gf__atomic_load(&d->allocated);
    if (free_bytes) *free_bytes = (size_t)(used < d->total ? d->total - used : 0);
    if (total_bytes) *total_bytes = (size_t)d->total;
    return GF_OK;
}

/* ---- memory ----------------------------------------------------------------------------- */
#define GF__CL_MEM(buf) ((cl_mem)(uintptr_t)(buf)->native)   /* a buffer's (or a view's sub-buffer's) cl_mem */
typedef struct gf__cl_svm { cl_context ctx; void *ptr; } gf__cl_svm;

/* clSVMFree does not wait for commands using the memory; the wrapper's destructor runs only
   once they have finished, so the SVM allocation is freed there. */
static void CL_CALLBACK gf__cl_svm_release(cl_mem mem, void *arg) {
    gf__cl_svm *svm = (gf__cl_svm *)arg;
    (void)mem;
    GF__CL_VOID(clSVMFree, (svm->ctx, svm->ptr));
    gf__free(svm);
}

/* A managed buffer: fine-grained SVM inside a cl_mem that uses it, freed with the cl_mem. */
static gf_result gf__cl_svm_alloc(gf_buffer *buf, cl_mem *out) {
    gf__cl_device *d = (gf__cl_device *)buf->dev->native;
    gf__cl_svm *svm;
    cl_mem mem;
    cl_int e;
    if (!d->fine_svm)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: managed buffers need fine-grained SVM, "
                        "which %s lacks", buf->dev->tag);
    GPUFLOW_ASSERT(gf__cl.clSVMAlloc && gf__cl.clSVMFree);   /* fine_svm is set only with both */
    svm = (gf__cl_svm *)gf__calloc(sizeof *svm);
    if (!svm) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    svm->ctx = d->ctx;
    svm->ptr = GF__CL_PTR(clSVMAlloc, (d->ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, buf->size, 0));
    if (!svm->ptr) {
        gf__free(svm);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "clSVMAlloc: returned NULL for %lu bytes", (unsigned long)buf->size);
    }
    mem = GF__CL_NEW(clCreateBuffer, (d->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, buf->size, svm->ptr), &e);
    if (!mem) {
        GF__CL_VOID(clSVMFree, (d->ctx, svm->ptr));
        gf__free(svm);
        return gf__cl_fail("clCreateBuffer(CL_MEM_USE_HOST_PTR, SVM)", e);
    }
    e = GF__CL(clSetMemObjectDestructorCallback, (mem, gf__cl_svm_release, svm));
    if (e != CL_SUCCESS) {
        GF__CL(clReleaseMemObject, (mem));
        GF__CL_VOID(clSVMFree, (d->ctx, svm->ptr));
        gf__free(svm);
        return gf__cl_fail("clSetMemObjectDestructorCallback", e);
    }
    buf->host = svm->ptr;
    *out = mem;
    return GF_OK;
}

static gf_result gf__cl_buffer_alloc(gf_buffer *buf) {
    gf__cl_device *d = (gf__cl_device *)buf->dev->native;
    cl_mem mem = NULL;
    /* a driver may accept a size no device has (NVIDIA's does, lazily): refuse it here */
    if (d->max_alloc && (uint64_t)buf->size > d->max_alloc)
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: %llu bytes is more than one buffer of %s may hold (CL_DEVICE_MAX_MEM_ALLOC_SIZE %llu)",
                        (unsigned long long)buf->size, buf->dev->tag, (unsigned long long)d->max_alloc);
    if (buf->managed) {
        gf_result r = gf__cl_svm_alloc(buf, &mem);
        if (r != GF_OK) return r;
    } else {
        cl_int e;
        mem = GF__CL_NEW(clCreateBuffer, (d->ctx, CL_MEM_READ_WRITE, buf->size, NULL), &e);
        if (!mem) return gf__cl_fail("clCreateBuffer", e);
    }
    buf->native = (uint64_t)(uintptr_t)mem;
    gf__atomic_add(&d->allocated, (uint64_t)buf->size);
    return GF_OK;
}

/* A view: a sub-buffer where its offset meets the device's alignment, so that kernels can
   take it as an argument; copies and fills address the parent's cl_mem at the view's offset
   (gf__cl_mem), which works at any offset. */
static gf_result gf__cl_buffer_view(gf_buffer *view) {
    gf__cl_device *d = (gf__cl_device *)view->dev->native;
    const gf_buffer *parent = view->parent;
    GPUFLOW_ASSERT(parent && !parent->parent);   /* the core makes views of whole buffers only */
    view->host = parent->host ? (char *)parent->host + view->view_offset : NULL;   /* managed: the SVM address */
    view->native = 0;
    if (d->sub_align && view->view_offset % d->sub_align == 0) {
        cl_buffer_region region;
        cl_mem base = GF__CL_MEM(parent), whole = NULL;
        size_t at = 0;
        cl_int e;
        /* the parent may be a sub-buffer already (an import at an offset, a wrapped sub-buffer),
           and OpenCL makes none of a sub-buffer: the view's is of the buffer it lies in */
        if (GF__CL(clGetMemObjectInfo, (base, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof whole, &whole, NULL)) == CL_SUCCESS && whole &&
            GF__CL(clGetMemObjectInfo, (base, CL_MEM_OFFSET, sizeof at, &at, NULL)) == CL_SUCCESS)
            base = whole;
        region.origin = at + view->view_offset;
        region.size = view->size;
        cl_mem sub = GF__CL_NEW(clCreateSubBuffer, (base, 0, CL_BUFFER_CREATE_TYPE_REGION, &region), &e);
        if (!sub) return gf__cl_fail("clCreateSubBuffer", e);
        view->native = (uint64_t)(uintptr_t)sub;
    }
    return GF_OK;
}

/* The program's cl_mem, of this device's context and at least bytes long; gpuflow never
   releases it. */
static gf_result gf__cl_buffer_wrap(gf_buffer *buf, uint64_t native) {
    gf__cl_device *d = (gf__cl_device *)buf->dev->native;
    cl_mem mem = (cl_mem)(uintptr_t)native;
    cl_context ctx = NULL;
    cl_mem_object_type type = 0;
    size_t size = 0;
    cl_int e = GF__CL(clGetMemObjectInfo, (mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL));
    if (e == CL_SUCCESS) e = GF__CL(clGetMemObjectInfo, (mem, CL_MEM_SIZE, sizeof size, &size, NULL));
    if (e == CL_SUCCESS) e = GF__CL(clGetMemObjectInfo, (mem, CL_MEM_TYPE, sizeof type, &type, NULL));
    if (e != CL_SUCCESS) return gf__cl_fail("clGetMemObjectInfo", e);
    if (ctx != d->ctx)
        return gf__fail(GF_ERROR_WRONG_DEVICE, "gf_buffer_wrap: the cl_mem belongs to another cl_context than %s",
                        buf->dev->tag);
    if (type != CL_MEM_OBJECT_BUFFER)   /* an image or pipe: buffer copies and kernel arguments would fail later, or worse */
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_wrap: the cl_mem is not a buffer (CL_MEM_TYPE 0x%x: an image or a pipe)", (unsigned)type);
    if (buf->size > size)
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_buffer_wrap: the cl_mem has %llu bytes, %llu asked for",
                        (unsigned long long)size, (unsigned long long)buf->size);
    buf->native = native;
    return GF_OK;
}

/* Frees what this backend made: an allocation, a view's sub-buffer, an import (its window's
   sub-buffer, then the cl_mem of the whole import in buf->external); a wrapped cl_mem stays.
   OpenCL defers each release until the commands using it have finished. */
static void gf__cl_buffer_free(gf_buffer *buf) {
    gf__cl_device *d = (gf__cl_device *)buf->dev->native;
    cl_mem whole = (cl_mem)buf->external;
    int allocated = !buf->borrowed && !whole;
    if (buf->native && (allocated || buf->parent || (whole && GF__CL_MEM(buf) != whole)))
        GF__CL(clReleaseMemObject, (GF__CL_MEM(buf)));
    if (whole) GF__CL(clReleaseMemObject, (whole));
    if (allocated) gf__atomic_add(&d->allocated, (uint64_t)0 - (uint64_t)buf->size);
    buf->native = 0;
    buf->host = NULL;
    buf->external = NULL;
}

/* The cl_mem a copy or fill addresses, with *offset moved to where in it: a view's window lies
   in its parent's memory. */
static cl_mem gf__cl_mem(const gf_buffer *buf, size_t *offset) {
    if (!buf->parent) return GF__CL_MEM(buf);
    *offset += buf->view_offset;
    return GF__CL_MEM(buf->parent);
}

static gf_result gf__cl_host_alloc(gf_device *dev, size_t bytes, void **out) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    gf__cl_pinned *p = (gf__cl_pinned *)gf__calloc(sizeof *p);
    cl_int e;
    if (!p) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    p->mem = GF__CL_NEW(clCreateBuffer, (d->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL), &e);
    if (!p->mem) { gf__free(p); return gf__cl_fail("clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", e); }
    p->ptr = GF__CL_NEW(clEnqueueMapBuffer, (d->host_queue, p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes,
                                             0, NULL, NULL), &e);
    if (!p->ptr) {
        GF__CL(clReleaseMemObject, (p->mem));
        gf__free(p);
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
        gf__set_error(GF_ERROR_INVALID_ARGUMENT, "gf_host_free: %p is not pinned memory of this device", ptr);
        return;
    }
    gf__cl_pinned_release(d, p);
    GF__CL(clFlush, (d->host_queue));
}

/* ---- streams ---------------------------------------------------------------------------- */
/* The core enqueues on a stream under s->lock, so commands reach the queue in the order the
   stream records them. */
typedef struct gf__cl_stream {
    cl_command_queue queue;
    gf__mutex lock;                 /* last, issued, covered, unflushed: query runs outside s->lock */
    cl_event last;                  /* the latest command not yet seen complete; NULL: idle */
    unsigned long long issued;      /* commands enqueued without an event, ever */
    unsigned long long covered;     /* how many of those last (or a finish) stands for */
    int unflushed;                  /* commands enqueued since query last flushed */
} gf__cl_stream;

#define GF__CL_QUEUE(s) (((gf__cl_stream *)(s)->native)->queue)

/* Every enqueue that does work ends here. In an in-order queue the stream is idle once its
   latest command has completed: a command with an event (*ev, a barrier) becomes the one query
   reads; one without (ev NULL: launches, copies, fills) leaves query to mark it. A marker
   (event record) does no work and is not kept. */
static gf_result gf__cl_enqueued(gf_stream *s, const char *call, cl_int e, cl_event *ev) {
    gf__cl_stream *cs = (gf__cl_stream *)s->native;
    cl_event older = NULL;
    if (e != CL_SUCCESS) return gf__cl_fail(call, e);
    gf__lock(&cs->lock);
    if (ev) {
        GPUFLOW_ASSERT(*ev != NULL);
        older = cs->last;
        cs->last = *ev;
        cs->covered = cs->issued;
    } else {
        cs->issued++;
    }
    cs->unflushed = 1;
    gf__unlock(&cs->lock);
    if (older) GF__CL(clReleaseEvent, (older));
    return GF_OK;
}

static gf_result gf__cl_stream_on(gf_stream *s, cl_command_queue queue) {
    gf__cl_stream *cs = (gf__cl_stream *)gf__calloc(sizeof *cs);
    if (!cs) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    cs->queue = queue;
    gf__mutex_init(&cs->lock);
    s->native = cs;
    return GF_OK;
}

static gf_result gf__cl_stream_create(gf_stream *s) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    cl_command_queue queue;
    cl_ulong priority = 0;
    gf_result r;
    if (d->priorities && s->priority == GF_PRIORITY_HIGH) priority = CL_QUEUE_PRIORITY_HIGH_KHR;
    if (d->priorities && s->priority == GF_PRIORITY_LOW) priority = CL_QUEUE_PRIORITY_LOW_KHR;
    if ((r = gf__cl_queue(d, priority, &queue)) != GF_OK) return r;
    if ((r = gf__cl_stream_on(s, queue)) != GF_OK) GF__CL(clReleaseCommandQueue, (queue));
    return r;
}

/* The program's queue, of this device's context; in order, since a stream's work runs in
   order (and its latest command stands for all of it). gpuflow never releases it. */
static gf_result gf__cl_stream_wrap(gf_stream *s, void *native) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    cl_command_queue queue = (cl_command_queue)native;
    cl_command_queue_properties props = 0;
    cl_context ctx = NULL;
    cl_device_id device = NULL;
    cl_int e = GF__CL(clGetCommandQueueInfo, (queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL));
    if (e == CL_SUCCESS) e = GF__CL(clGetCommandQueueInfo, (queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
    if (e == CL_SUCCESS) e = GF__CL(clGetCommandQueueInfo, (queue, CL_QUEUE_DEVICE, sizeof device, &device, NULL));
    if (e != CL_SUCCESS) return gf__cl_fail("clGetCommandQueueInfo", e);
    if (ctx != d->ctx)
        return gf__fail(GF_ERROR_WRONG_DEVICE, "gf_stream_wrap: the queue belongs to another cl_context than %s",
                        s->dev->tag);
    if (device != d->device)   /* one context may hold several devices: the modules are built for this one */
        return gf__fail(GF_ERROR_WRONG_DEVICE, "gf_stream_wrap: the queue is of another device of %s's cl_context", s->dev->tag);
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_wrap: the queue runs out of order; a stream needs an "
                        "in-order queue");
    return gf__cl_stream_on(s, queue);
}

static void gf__cl_stream_destroy(gf_stream *s) {
    gf__cl_stream *cs = (gf__cl_stream *)s->native;
    if (!cs) return;
    GF__CL(clFinish, (cs->queue));
    if (cs->last) GF__CL(clReleaseEvent, (cs->last));
    if (!s->borrowed) GF__CL(clReleaseCommandQueue, (cs->queue));
    gf__mutex_destroy(&cs->lock);
    gf__free(cs);
    s->native = NULL;
}

/* GF_OK, GF_NOT_READY, or the failure of a command an event stands for. */
static gf_result gf__cl_status(cl_event ev) {
    cl_int st = CL_COMPLETE;
    cl_int e = GF__CL(clGetEventInfo, (ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    if (e != CL_SUCCESS) return gf__cl_fail("clGetEventInfo", e);
    if (st < 0) return gf__fail(GF_ERROR_DRIVER, "OpenCL: a command failed: %s (%d)", gf__cl_error_name(st), (int)st);
    return st == CL_COMPLETE ? GF_OK : GF_NOT_READY;
}

/* The status of the stream's latest command, dropped once complete. query: work enqueued
   without an event gets a marker first (nothing is enqueued for a stream whose work is marked,
   so one that is done answers GF_OK at once), and the queue is flushed, since a queue need not
   start what has not been flushed. Else (after clFinish) the work is done, marked or not. */
static gf_result gf__cl_latest_status(gf_stream *s, int query) {
    gf__cl_stream *cs = (gf__cl_stream *)s->native;
    gf_result r = GF_OK;
    cl_event replaced = NULL, done = NULL;
    gf__lock(&cs->lock);
    if (query && cs->covered != cs->issued) {
        cl_event marker = NULL;
        unsigned long long seen = cs->issued;
        cl_int e = GF__CL(clEnqueueMarkerWithWaitList, (cs->queue, 0, NULL, &marker));
        if (e == CL_SUCCESS) { replaced = cs->last; cs->last = marker; cs->covered = seen; cs->unflushed = 1; }
        else r = gf__cl_fail("clEnqueueMarkerWithWaitList", e);
    }
    if (query && r == GF_OK && cs->unflushed) {
        cl_int e = GF__CL(clFlush, (cs->queue));
        if (e == CL_SUCCESS) cs->unflushed = 0;
        else r = gf__cl_fail("clFlush", e);
    }
    if (cs->last && r == GF_OK) r = gf__cl_status(cs->last);
    if (cs->last && r == GF_OK) { done = cs->last; cs->last = NULL; }
    gf__unlock(&cs->lock);
    if (replaced) GF__CL(clReleaseEvent, (replaced));
    if (done) GF__CL(clReleaseEvent, (done));
    return r;
}

static gf_result gf__cl_stream_query(gf_stream *s) { return gf__cl_latest_status(s, 1); }

/* Of the commands enqueued without an event, how many have been issued so far; and, once
   something behind them is known complete or stands for them (a finish, an event record's
   marker), that they are covered: a query then enqueues no marker of its own. */
static unsigned long long gf__cl_issued(gf__cl_stream *cs) {
    unsigned long long n;
    gf__lock(&cs->lock);
    n = cs->issued;
    gf__unlock(&cs->lock);
    return n;
}
static void gf__cl_cover(gf__cl_stream *cs, unsigned long long seen) {
    gf__lock(&cs->lock);
    if (cs->covered < seen) cs->covered = seen;
    gf__unlock(&cs->lock);
}

/* clFinish, then the latest command's status: its event is dropped, and a command that failed
   is reported. Work another thread enqueued meanwhile may still run: not this call's concern. */
static gf_result gf__cl_stream_synchronize(gf_stream *s) {
    gf__cl_stream *cs = (gf__cl_stream *)s->native;
    unsigned long long seen = gf__cl_issued(cs);   /* all of these are done once clFinish returns */
    gf_result r;
    cl_int e = GF__CL(clFinish, (cs->queue));
    if (e != CL_SUCCESS) return gf__cl_fail("clFinish", e);
    gf__cl_cover(cs, seen);
    r = gf__cl_latest_status(s, 0);
    return r == GF_NOT_READY ? GF_OK : r;
}

/* Imported memory is OpenCL's only between an acquire and a release command
   (cl_khr_external_memory), so a command that touches an import is put between the two on
   its stream, for the imports it names; commands on gpuflow's own memory pay nothing. The
   other API gets the memory back at each release: ordering between the two APIs is the
   semaphores' job, as it is on CUDA. */
#define GF__CL_IMPORTS_MAX 16
typedef struct gf__cl_imports { cl_mem mem[GF__CL_IMPORTS_MAX]; cl_uint count, over; } gf__cl_imports;
static void gf__cl_imports_add(gf__cl_imports *x, const gf_buffer *buf) {
    cl_mem whole;
    cl_uint i;
    if (!buf) return;
    if (!(whole = (cl_mem)(buf->parent ? buf->parent : buf)->external)) return;
    for (i = 0; i < x->count; i++) if (x->mem[i] == whole) return;
    if (x->count < GF__CL_IMPORTS_MAX) x->mem[x->count++] = whole;
    else x->over = 1;
}
static gf_result gf__cl_imports_acquire(gf_stream *s, const gf__cl_imports *x) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    cl_int e;
    if (!x->count) return GF_OK;
    if (x->over)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: one command may use at most %d imported buffers", GF__CL_IMPORTS_MAX);
    e = GF__FAULT("clEnqueueAcquireExternalMemObjectsKHR") ? GF__CL_INJECTED
        : d->xmem.acquire(GF__CL_QUEUE(s), x->count, x->mem, 0, NULL, NULL);
    return e == CL_SUCCESS ? GF_OK : gf__cl_fail("clEnqueueAcquireExternalMemObjectsKHR", e);
}
/* The release after the command, also when the command failed (r: the command's result,
   which stays the answer then). */
static gf_result gf__cl_imports_release(gf_stream *s, const gf__cl_imports *x, gf_result r) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    cl_int e;
    if (!x->count) return r;
    e = GF__FAULT("clEnqueueReleaseExternalMemObjectsKHR") ? GF__CL_INJECTED
        : d->xmem.release(GF__CL_QUEUE(s), x->count, x->mem, 0, NULL, NULL);
    if (r != GF_OK) return r;
    return gf__cl_enqueued(s, "clEnqueueReleaseExternalMemObjectsKHR", e, NULL);
}

static gf_result gf__cl_copy(gf_stream *s, const gf__copy *c) {
    cl_command_queue q = GF__CL_QUEUE(s);
    size_t src_offset = c->src_offset, dst_offset = c->dst_offset;
    cl_mem src = c->src ? gf__cl_mem(c->src, &src_offset) : NULL;
    cl_mem dst = c->dst ? gf__cl_mem(c->dst, &dst_offset) : NULL;
    gf__cl_imports x;
    gf_result r;
    x.count = x.over = 0;
    gf__cl_imports_add(&x, c->src);
    gf__cl_imports_add(&x, c->dst);
    if ((r = gf__cl_imports_acquire(s, &x)) != GF_OK) return r;
    switch (c->kind) {
    case GF__COPY_H2D:
        r = gf__cl_enqueued(s, "clEnqueueWriteBuffer", GF__CL(clEnqueueWriteBuffer,
            (q, dst, CL_FALSE, dst_offset, c->bytes, c->host, 0, NULL, NULL)), NULL);
        break;
    case GF__COPY_D2H:
        r = gf__cl_enqueued(s, "clEnqueueReadBuffer", GF__CL(clEnqueueReadBuffer,
            (q, src, CL_FALSE, src_offset, c->bytes, c->host, 0, NULL, NULL)), NULL);
        break;
    default:
        r = gf__cl_enqueued(s, "clEnqueueCopyBuffer", GF__CL(clEnqueueCopyBuffer,
            (q, src, dst, src_offset, dst_offset, c->bytes, 0, NULL, NULL)), NULL);
        break;
    }
    return gf__cl_imports_release(s, &x, r);
}

/* Large fills are a kernel of gpuflow's own: NVIDIA's clEnqueueFillBuffer runs far below the
   memory's speed (a 256 MiB fill 0.65 ms on an H100, where CUDA's memset takes 0.09). One
   work-item per 16 aligned bytes: whole ones as one uint4 store, the ends byte by byte; byte j
   of the memory is byte j % 4 of the pattern (a value repeated to 32 bits, little-endian as
   every GPU is). Built once per device at its first large fill; if it does not build, the
   driver's fill serves (said once). */
#define GF__CL_FILL_KERNEL_MIN ((size_t)1 << 16)   /* below this the driver's fill costs less than a launch */
static const char gf__cl_fill_source[] =
    "__kernel void gf__fill(__global uchar *p, ulong start, ulong bytes, uint pattern) {\n"
    "    ulong lo = (start & ~(ulong)15) + (ulong)get_global_id(0) * 16, end = start + bytes, k;\n"
    "    if (lo >= start && lo + 16 <= end) { *(__global uint4 *)(p + lo) = (uint4)(pattern); return; }\n"
    "    for (k = lo < start ? start : lo; k < lo + 16 && k < end; k++) p[k] = (uchar)(pattern >> (8 * (k & 3)));\n"
    "}\n";
static cl_kernel gf__cl_fill_kernel(gf__cl_device *d) {   /* fill_lock held; NULL: use the driver's */
    const char *src = gf__cl_fill_source;
    cl_int e;
    if (d->fill_kernel || d->fill_failed) return d->fill_kernel;
    d->fill_program = GF__CL_NEW(clCreateProgramWithSource, (d->ctx, 1, &src, NULL), &e);
    if (d->fill_program && (e = GF__CL(clBuildProgram, (d->fill_program, 1, &d->device, NULL, NULL, NULL))) == CL_SUCCESS)
        d->fill_kernel = GF__CL_NEW(clCreateKernel, (d->fill_program, "gf__fill"), &e);
    d->fill_local = 256;   /* a device (or this kernel) may allow fewer work-items a group */
    if (d->fill_kernel && ((e = GF__CL(clGetKernelWorkGroupInfo, (d->fill_kernel, d->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof d->fill_local,
                                                                    &d->fill_local, NULL))) != CL_SUCCESS || !d->fill_local)) {
        GF__CL(clReleaseKernel, (d->fill_kernel));
        d->fill_kernel = NULL;
    }
    if (d->fill_local > 256) d->fill_local = 256;
    if (!d->fill_kernel) {
        d->fill_failed = 1;
        gf__notice(GF_LOG_WARNING, "OpenCL: gpuflow's fill kernel did not build (%s, %d): large fills use clEnqueueFillBuffer", gf__cl_error_name(e), (int)e);
    }
    return d->fill_kernel;
}
/* The fill as the kernel, or CL_INVALID_OPERATION when there is no kernel (the caller then
   uses the driver's fill). */
static cl_int gf__cl_fill_by_kernel(gf_stream *s, cl_mem mem, size_t start, size_t bytes, uint32_t pattern) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    cl_ulong at = start, n = bytes;
    cl_uint word = pattern;
    size_t local, global = ((start & 15) + bytes + 15) / 16;
    cl_kernel k;
    cl_int e;
    gf__lock(&d->fill_lock);
    if (!(k = gf__cl_fill_kernel(d))) { gf__unlock(&d->fill_lock); return CL_INVALID_OPERATION; }
    local = d->fill_local;
    global = (global + local - 1) / local * local;
    if ((e = GF__CL(clSetKernelArg, (k, 0, sizeof mem, &mem))) == CL_SUCCESS &&
        (e = GF__CL(clSetKernelArg, (k, 1, sizeof at, &at))) == CL_SUCCESS &&
        (e = GF__CL(clSetKernelArg, (k, 2, sizeof n, &n))) == CL_SUCCESS &&
        (e = GF__CL(clSetKernelArg, (k, 3, sizeof word, &word))) == CL_SUCCESS)
        e = GF__CL(clEnqueueNDRangeKernel, (GF__CL_QUEUE(s), k, 1, NULL, &global, &local, 0, NULL, NULL));
    gf__unlock(&d->fill_lock);
    return e;
}

/* count values of width 1, 2 or 4 bytes: the low bytes of value, in host order. */
static gf_result gf__cl_fill_wide(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, int width, size_t count) {
    unsigned char u8 = (unsigned char)value;
    uint16_t u16 = (uint16_t)value;
    const void *pattern = width == 1 ? (const void *)&u8 : width == 2 ? (const void *)&u16 : (const void *)&value;
    cl_mem mem;
    gf__cl_imports x;
    gf_result r;
    GPUFLOW_ASSERT(width == 1 || width == 2 || width == 4);   /* the core checks the offset from the memory's start, */
    mem = gf__cl_mem(buf, &offset);                             /* not from a view's (view 3, offset 1: 4) */
    if (offset % (size_t)width)   /* OpenCL counts from the cl_mem's start, not the view's */
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "OpenCL: a fill of %d-byte values must start at a multiple of %d "
                        "bytes of the memory; the view starts at byte %llu of its parent", width, width,
                        (unsigned long long)buf->view_offset);
    x.count = x.over = 0;
    gf__cl_imports_add(&x, buf);
    if ((r = gf__cl_imports_acquire(s, &x)) != GF_OK) return r;
    if (count * (size_t)width >= GF__CL_FILL_KERNEL_MIN) {
        uint32_t word = width == 1 ? u8 * 0x01010101u : width == 2 ? u16 * 0x00010001u : value;
        cl_int e = gf__cl_fill_by_kernel(s, mem, offset, count * (size_t)width, word);
        if (e != CL_INVALID_OPERATION)
            return gf__cl_imports_release(s, &x, gf__cl_enqueued(s, "clEnqueueNDRangeKernel(gpuflow's fill)", e, NULL));
    }
    r = gf__cl_enqueued(s, "clEnqueueFillBuffer", GF__CL(clEnqueueFillBuffer,
        (GF__CL_QUEUE(s), mem, pattern, (size_t)width, offset, count * (size_t)width, 0, NULL, NULL)), NULL);
    return gf__cl_imports_release(s, &x, r);
}

static gf_result gf__cl_fill(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    return gf__cl_fill_wide(s, buf, offset, value, 1, bytes);
}

/* A marker after prior work, whose completion hands the job to a callback thread, then a
   barrier on the job's user event, which holds later work until fn has returned. The barrier
   comes last, so that no failure before it leaves a queue waiting for an event that nobody
   completes. */
static gf_result gf__cl_host_callback(gf_stream *s, void (*fn)(void *user), void *user) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    cl_command_queue q = GF__CL_QUEUE(s);
    gf__cl_job *job = gf__cl_job_new(d, fn, user);
    const char *call = "clCreateUserEvent";
    cl_event barrier = NULL;
    cl_int e;
    if (!job) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    job->stream = s;
    job->done = GF__CL_NEW(clCreateUserEvent, (d->ctx), &e);
    if (job->done) {
        call = "clEnqueueMarkerWithWaitList";
        e = GF__CL(clEnqueueMarkerWithWaitList, (q, 0, NULL, &job->marker));
    }
    if (e == CL_SUCCESS) {
        call = "clSetEventCallback";
        e = GF__CL(clSetEventCallback, (job->marker, CL_COMPLETE, gf__cl_on_marker, job));
    }
    if (e != CL_SUCCESS) {
        job->state = GF__CL_JOB_DROP;   /* no callback thread has it */
        gf__cl_job_end(job);
        return gf__cl_fail(call, e);
    }
    /* From here a callback thread ends the job, once the marker completes. */
    e = GF__CL(clEnqueueBarrierWithWaitList, (q, 1, &job->done, &barrier));
    gf__lock(&d->lock);
    job->state = e == CL_SUCCESS ? GF__CL_JOB_RUN : GF__CL_JOB_DROP;
    gf__cond_broadcast(&d->cb_cond);
    gf__unlock(&d->lock);
    if (e != CL_SUCCESS) return gf__cl_fail("clEnqueueBarrierWithWaitList", e);
    GF__CL(clFlush, (q));   /* the marker must reach the device for its callback to fire; a failed
                               flush leaves that to the queue's next flush or finish */
    return gf__cl_enqueued(s, "clEnqueueBarrierWithWaitList", e, &barrier);
}

/* ---- events ----------------------------------------------------------------------------- */
typedef struct gf__cl_event {
    gf__mutex lock;                 /* marker: record and wait may race from two threads */
    cl_event marker;                /* the latest record; NULL before the first */
} gf__cl_event;

static gf_result gf__cl_event_create(gf_event *ev) {
    gf__cl_event *ce = (gf__cl_event *)gf__calloc(sizeof *ce);
    if (!ce) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    gf__mutex_init(&ce->lock);
    ev->native = ce;
    return GF_OK;
}

static void gf__cl_event_destroy(gf_event *ev) {
    gf__cl_event *ce = (gf__cl_event *)ev->native;
    if (!ce) return;
    if (ce->marker) GF__CL(clReleaseEvent, (ce->marker));
    gf__mutex_destroy(&ce->lock);
    gf__free(ce);
    ev->native = NULL;
}

/* The marker of the latest record, retained for the caller; NULL if never recorded, or
   (*e set) if it cannot be retained. */
static cl_event gf__cl_marker(gf_event *ev, cl_int *e) {
    gf__cl_event *ce = (gf__cl_event *)ev->native;
    cl_event m;
    gf__lock(&ce->lock);
    m = ce->marker;
    *e = m ? GF__CL(clRetainEvent, (m)) : CL_SUCCESS;
    gf__unlock(&ce->lock);
    return *e == CL_SUCCESS ? m : NULL;
}

static gf_result gf__cl_event_record(gf_event *ev, gf_stream *s) {
    gf__cl_event *ce = (gf__cl_event *)ev->native;
    gf__cl_stream *cs = (gf__cl_stream *)s->native;
    unsigned long long seen = gf__cl_issued(cs);
    cl_event m, old, replaced = NULL;
    cl_int e = GF__CL(clEnqueueMarkerWithWaitList, (cs->queue, 0, NULL, &m));
    if (e != CL_SUCCESS) return gf__cl_fail("clEnqueueMarkerWithWaitList", e);
    /* Other queues may wait on it: it must reach the device. It is recorded either way; a failed
       flush leaves it to the queue's next flush (a query, a callback, a finish). */
    GF__CL(clFlush, (cs->queue));
    /* It also stands for the stream's unmarked work, so a query once it completes enqueues
       nothing. The core records under s->lock: no command of this stream comes between. */
    gf__lock(&cs->lock);
    if (cs->covered < seen && GF__CL(clRetainEvent, (m)) == CL_SUCCESS) {
        replaced = cs->last;
        cs->last = m;
        cs->covered = seen;
    }
    gf__unlock(&cs->lock);
    if (replaced) GF__CL(clReleaseEvent, (replaced));
    gf__lock(&ce->lock);
    old = ce->marker;
    ce->marker = m;
    gf__unlock(&ce->lock);
    if (old) GF__CL(clReleaseEvent, (old));
    return GF_OK;
}

static gf_result gf__cl_stream_wait_event(gf_stream *s, gf_event *ev) {
    cl_event barrier = NULL;
    cl_int e;
    cl_event m = gf__cl_marker(ev, &e);
    if (e != CL_SUCCESS) return gf__cl_fail("clRetainEvent", e);
    if (!m) return GF_OK;   /* never recorded: nothing to wait for */
    e = GF__CL(clEnqueueBarrierWithWaitList, (GF__CL_QUEUE(s), 1, &m, &barrier));
    GF__CL(clReleaseEvent, (m));
    return gf__cl_enqueued(s, "clEnqueueBarrierWithWaitList", e, &barrier);
}

/* s waits for ev of another OpenCL device, whose context is another: a user event of s's
   context, completed from the marker's callback (with its status), is what s's queue waits
   for. No thread is held meanwhile. */
static void CL_CALLBACK gf__cl_on_peer_marker(cl_event marker, cl_int status, void *arg) {
    cl_event user = (cl_event)arg;
    (void)marker;
    if (gf__cl_user_event_set(user, status < 0 ? status : CL_COMPLETE, "work waiting for another device's event"))
        GF__CL(clReleaseEvent, (user));   /* the callback's reference */
}
/* Sets a user event's status, trying once more if the first attempt fails: an event left unset
   stalls its queue for good (the work `held` behind it never runs). One that stays unset is said
   and kept, not released (releasing its context then hung device close on NVIDIA's OpenCL).
   Returns 1 once set. */
static int gf__cl_user_event_set(cl_event ev, cl_int status, const char *held) {
    cl_int e = GF__CL(clSetUserEventStatus, (ev, status));
    if (e != CL_SUCCESS) e = GF__CL(clSetUserEventStatus, (ev, status));
    if (e == CL_SUCCESS) return 1;
    gf__notice(GF_LOG_ERROR, "OpenCL: clSetUserEventStatus: %s (%d): %s will not run, and the user event and its context stay "
               "with the driver", gf__cl_error_name(e), (int)e, held);
    return 0;
}
static gf_result gf__cl_stream_wait_peer(gf_stream *s, gf_event *ev) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    cl_event barrier = NULL, user;
    cl_int e;
    cl_event m = gf__cl_marker(ev, &e);
    if (e != CL_SUCCESS) return gf__cl_fail("clRetainEvent", e);
    if (!m) return GF_OK;   /* never recorded: nothing to wait for */
    if (!(user = GF__CL_NEW(clCreateUserEvent, (d->ctx), &e))) { GF__CL(clReleaseEvent, (m)); return gf__cl_fail("clCreateUserEvent", e); }
    if ((e = GF__CL(clRetainEvent, (user))) == CL_SUCCESS &&
        (e = GF__CL(clSetEventCallback, (m, CL_COMPLETE, gf__cl_on_peer_marker, user))) != CL_SUCCESS)
        GF__CL(clReleaseEvent, (user));   /* no callback holds it */
    GF__CL(clReleaseEvent, (m));
    if (e != CL_SUCCESS) { GF__CL(clReleaseEvent, (user)); return gf__cl_fail("clSetEventCallback", e); }
    e = GF__CL(clEnqueueBarrierWithWaitList, (GF__CL_QUEUE(s), 1, &user, &barrier));
    GF__CL(clReleaseEvent, (user));
    return gf__cl_enqueued(s, "clEnqueueBarrierWithWaitList", e, &barrier);
}

static gf_result gf__cl_event_synchronize(gf_event *ev) {
    gf_result r;
    cl_int e;
    cl_event m = gf__cl_marker(ev, &e);
    if (e != CL_SUCCESS) return gf__cl_fail("clRetainEvent", e);
    if (!m) return GF_OK;
    e = GF__CL(clWaitForEvents, (1, &m));
    r = e == CL_SUCCESS ? gf__cl_status(m) : gf__cl_fail("clWaitForEvents", e);
    GF__CL(clReleaseEvent, (m));
    return r;
}

static gf_result gf__cl_event_query(gf_event *ev) {
    gf_result r;
    cl_int e;
    cl_event m = gf__cl_marker(ev, &e);
    if (e != CL_SUCCESS) return gf__cl_fail("clRetainEvent", e);
    if (!m) return GF_OK;
    r = gf__cl_status(m);
    GF__CL(clReleaseEvent, (m));
    return r;
}

/* A marker ends when all work before it has: the end of start's marker to the end of end's. */
static gf_result gf__cl_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    cl_int ea, eb, e = CL_SUCCESS;
    cl_event a = gf__cl_marker(start, &ea), b = gf__cl_marker(end, &eb);
    cl_ulong ta = 0, tb = 0;
    gf_result r = GF_OK;
    if (ea != CL_SUCCESS || eb != CL_SUCCESS) r = gf__cl_fail("clRetainEvent", ea != CL_SUCCESS ? ea : eb);
    else if (!a || !b) r = gf__fail(GF_ERROR_INVALID_STATE, "OpenCL: event not recorded");
    if (r == GF_OK) r = gf__cl_status(a);
    if (r == GF_OK) r = gf__cl_status(b);
    if (r == GF_OK) e = GF__CL(clGetEventProfilingInfo, (a, CL_PROFILING_COMMAND_END, sizeof ta, &ta, NULL));
    if (r == GF_OK && e == CL_SUCCESS) e = GF__CL(clGetEventProfilingInfo, (b, CL_PROFILING_COMMAND_END, sizeof tb, &tb, NULL));
    if (r == GF_OK && e == CL_PROFILING_INFO_NOT_AVAILABLE)   /* a queue the program made and wrapped, without profiling */
        r = gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: the events' queue has no timestamps (CL_PROFILING_INFO_NOT_AVAILABLE): a wrapped "
                     "queue needs CL_QUEUE_PROFILING_ENABLE for elapsed times");
    else if (r == GF_OK && e != CL_SUCCESS) r = gf__cl_fail("clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", e);
    if (r == GF_OK && (ta == 0 || tb == 0))
        r = gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: this platform gives markers no timestamps");
    if (r == GF_OK) *ms = (float)((double)(cl_long)(tb - ta) / 1e6);
    if (a) GF__CL(clReleaseEvent, (a));
    if (b) GF__CL(clReleaseEvent, (b));
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
        GF__CL(clReleaseKernel, (ck->kernel));
        gf__free(ck);
    }
    GF__CL(clReleaseProgram, (cm->program));
    gf__free(cm);
    mod->native = NULL;
}

/* clBuildProgram's failure, with as much of the build log (if any) as fits in the message;
   its line numbers read through the source's #line directives (text; NULL: as they are). */
static gf_result gf__cl_build_failed(cl_program prog, cl_device_id device, cl_int e, const char *text) {
    char log[900] = "", mapped[1000];
    size_t n = 0;
    GF__CL(clGetProgramBuildInfo, (prog, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n));
    if (n == 0)   /* a log longer than our buffer: ask for the size, then for the text */
        GF__CL(clGetProgramBuildInfo, (prog, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n));
    if (n > sizeof log - 1) {
        char *full = (char *)gf__calloc(n + 1);
        if (full && GF__CL(clGetProgramBuildInfo, (prog, device, CL_PROGRAM_BUILD_LOG, n, full, NULL)) == CL_SUCCESS) {
            const char *from = gf__build_log_start(full, sizeof log);
            snprintf(log, sizeof log, "%s%s", from != full ? "(the warnings before its first error left out) " : "", from);
        }
        gf__free(full);
    }
    for (n = strlen(log); n && (log[n - 1] == '\n' || log[n - 1] == '\r' || log[n - 1] == ' '); ) log[--n] = 0;   /* the message ends with the text */
    if (text) gf__build_log_lines(text, log, mapped, sizeof mapped);
    return gf__fail(GF_ERROR_BUILD, "clBuildProgram: %s (%d)%s%s", gf__cl_error_name(e), (int)e, log[0] ? ": " : "", text ? mapped : log);
}

static gf_result gf__cl_module_load(gf_module *mod, const gf_module_desc *desc) {
    gf__cl_device *d = (gf__cl_device *)mod->dev->native;
    gf__cl_module *cm;
    cl_program prog;
    cl_int e;
    if (desc->opencl_binary && desc->opencl_binary_size) {   /* made by gf__cl_compile, maybe from the cache */
        const unsigned char *bin = (const unsigned char *)desc->opencl_binary;
        size_t size = desc->opencl_binary_size;
        cl_int status = CL_SUCCESS;
        prog = GF__CL_NEW(clCreateProgramWithBinary, (d->ctx, 1, &d->device, &size, &bin, &status), &e);
        if (!prog) return gf__cl_fail("clCreateProgramWithBinary", e != CL_SUCCESS ? e : status);
    } else if (desc->opencl_source) {
        const char *src = desc->opencl_source;
        prog = GF__CL_NEW(clCreateProgramWithSource, (d->ctx, 1, &src, NULL), &e);
        if (!prog) return gf__cl_fail("clCreateProgramWithSource", e);
    } else if (desc->spirv && desc->spirv_size) {
        if (!d->create_with_il)
            return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: %s takes no SPIR-V (no clCreateProgramWithIL or "
                            "cl_khr_il_program); give opencl_source", mod->dev->tag);
        /* Through the device's pointer, not the table (it may be the KHR entry), but the
           same seam: GF__CL_NEW spelled out. */
        prog = GF__FAULT("clCreateProgramWithIL") && gf__cl_injected(&e)
                   ? NULL : d->create_with_il(d->ctx, desc->spirv, desc->spirv_size, &e);
        if (!prog) return gf__cl_fail("clCreateProgramWithIL", e);
    } else {
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: the module has neither opencl_source nor spirv");
    }
    {
        char *options = gf__options_joined(desc->build_options);
        if (!options) { GF__CL(clReleaseProgram, (prog)); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory"); }
        e = GF__CL(clBuildProgram, (prog, 1, &d->device, options, NULL, NULL));
        gf__free(options);
    }
    if (e != CL_SUCCESS) {
        gf_result r = gf__cl_build_failed(prog, d->device, e, desc->opencl_source);
        GF__CL(clReleaseProgram, (prog));
        return r;
    }
    cm = (gf__cl_module *)gf__calloc(sizeof *cm);
    if (!cm) { GF__CL(clReleaseProgram, (prog)); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory"); }
    cm->program = prog;
    mod->native = cm;
    return GF_OK;
}

/* Kernels from one source: the driver builds the text, and its program binary is what the
   core keeps in the disk cache and loads (clCreateProgramWithBinary). */
static gf_result gf__cl_compile(gf_device *dev, const char *name, const char *text, const char *options,
                                void **binary, size_t *size) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    cl_program prog;
    unsigned char *bin;
    char *joined;
    size_t n = 0;
    cl_int e;
    prog = GF__CL_NEW(clCreateProgramWithSource, (d->ctx, 1, &text, NULL), &e);
    if (!prog) return gf__cl_fail("clCreateProgramWithSource", e);
    if (!(joined = gf__options_joined(options))) { GF__CL(clReleaseProgram, (prog)); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory"); }
    e = GF__CL(clBuildProgram, (prog, 1, &d->device, joined, NULL, NULL));
    gf__free(joined);
    if (e != CL_SUCCESS) {
        gf_result r = gf__cl_build_failed(prog, d->device, e, text);
        GF__CL(clReleaseProgram, (prog));
        return gf__fail(r, "OpenCL: %s: %s", name, gf__error_text);
    }
    e = GF__CL(clGetProgramInfo, (prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL));
    if (e != CL_SUCCESS || n == 0) { GF__CL(clReleaseProgram, (prog)); return gf__cl_fail("clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)", e != CL_SUCCESS ? e : CL_INVALID_PROGRAM); }
    if (!(bin = (unsigned char *)gf__malloc(n))) { GF__CL(clReleaseProgram, (prog)); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory"); }
    e = GF__CL(clGetProgramInfo, (prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL));
    GF__CL(clReleaseProgram, (prog));
    if (e != CL_SUCCESS) { gf__free(bin); return gf__cl_fail("clGetProgramInfo(CL_PROGRAM_BINARIES)", e); }
    *binary = bin;
    *size = n;
    return GF_OK;
}
/* What compile made is a program binary for this device. */
static gf_result gf__cl_module_load_compiled(gf_module *mod, const void *binary, size_t size) {
    gf_module_desc d;
    memset(&d, 0, sizeof d);
    d.opencl_binary = binary;
    d.opencl_binary_size = size;
    return gf__cl_module_load(mod, &d);
}
/* A binary is only good for the same device and driver: both go into the cache key. */
static void gf__cl_compiler_id(gf_device *dev, char *out, size_t cap) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    char driver[128] = "", version[128] = "";
    if (GF__CL(clGetDeviceInfo, (d->device, CL_DRIVER_VERSION, sizeof driver - 1, driver, NULL)) != CL_SUCCESS ||
        GF__CL(clGetDeviceInfo, (d->device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL)) != CL_SUCCESS) {
        out[0] = 0;   /* unknown: the core compiles without the cache */
        return;
    }
    snprintf(out, cap, "opencl|%s|%s|%s", dev->info.name, driver, version);
}

static gf_result gf__cl_kernel_get(gf_kernel *k) {
    gf__cl_module *cm = (gf__cl_module *)k->mod->native;
    gf__cl_kernel *ck = (gf__cl_kernel *)gf__calloc(sizeof *ck);
    cl_int e;
    if (!ck) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory");
    ck->kernel = GF__CL_NEW(clCreateKernel, (cm->program, k->name), &e);
    if (!ck->kernel) {
        gf__free(ck);
        if (e == CL_INVALID_KERNEL_NAME)
            return gf__fail(GF_ERROR_NOT_FOUND, "clCreateKernel: CL_INVALID_KERNEL_NAME (%d): no kernel \"%s\"",
                            (int)e, k->name);
        return gf__cl_fail("clCreateKernel", e);
    }
    e = GF__CL(clGetKernelInfo, (ck->kernel, CL_KERNEL_NUM_ARGS, sizeof ck->args, &ck->args, NULL));
    if (e != CL_SUCCESS) {
        GF__CL(clReleaseKernel, (ck->kernel));
        gf__free(ck);
        return gf__cl_fail("clGetKernelInfo(CL_KERNEL_NUM_ARGS)", e);
    }
    {   /* its own __local arrays: gf_launch checks them with shared_bytes against the device's
           local memory (PoCL aborts the process on a launch past it) */
        cl_ulong local = 0;
        if (GF__CL(clGetKernelWorkGroupInfo, (ck->kernel, ((gf__cl_device *)k->mod->dev->native)->device, CL_KERNEL_LOCAL_MEM_SIZE,
                                              sizeof local, &local, NULL)) == CL_SUCCESS)
            k->static_shared = (size_t)local;
    }
    ck->next = cm->kernels;   /* the core holds mod->lock here */
    cm->kernels = ck;
    k->native = ck;
    return GF_OK;
}

/* What a launch cannot take here, asked by the core before any launch is queued or captured:
   a cl_kernel keeps arguments between launches, so a short list would reuse stale ones; a view
   no sub-buffer can cover has no cl_mem. */
static gf_result gf__cl_launch_check(gf_device *dev, gf_kernel *k, const gf_launch_dims *dims, const gf_arg *args, int count) {
    gf__cl_kernel *ck = (gf__cl_kernel *)k->native;
    cl_uint given = (cl_uint)count + (dims->shared_bytes ? 1u : 0u), i;
    if (given != ck->args)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "OpenCL: kernel %s takes %u arguments, %u given%s",
                        k->name, (unsigned)ck->args, (unsigned)given,
                        dims->shared_bytes ? " (shared_bytes adds a trailing __local one)" : "");
    for (i = 0; i < (cl_uint)count; i++)
        if (args[i].buffer && !args[i].buffer->native)
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "OpenCL: kernel %s, argument %u: a view at byte %llu of its "
                            "buffer cannot be a kernel argument here (its offset must be a multiple of %llu bytes, "
                            "CL_DEVICE_MEM_BASE_ADDR_ALIGN)", k->name, (unsigned)i,
                            (unsigned long long)args[i].buffer->view_offset,
                            (unsigned long long)((gf__cl_device *)dev->native)->sub_align);
    return GF_OK;
}
static gf_result gf__cl_launch(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims,
                               const gf_arg *args, int count) {
    gf__cl_kernel *ck = (gf__cl_kernel *)k->native;
    cl_uint given = (cl_uint)count + (dims->shared_bytes ? 1u : 0u), work_dim = 1, i;
    size_t global[3], local[3];
    cl_int e = CL_SUCCESS;
    gf__cl_imports x;
    gf_result r;
    char call[sizeof k->name + 64];   /* the longest: "clSetKernelArg(<name>, argument <u>)" */
    GPUFLOW_ASSERT(ck != NULL);   /* kernel_get succeeded */
    for (i = 0; i < 3; i++) {
        local[i] = dims->block[i];
        global[i] = (size_t)dims->grid[i] * dims->block[i];
        if (global[i] > 1) work_dim = i + 1;
    }
    x.count = x.over = 0;
    for (i = 0; i < (cl_uint)count; i++) gf__cl_imports_add(&x, args[i].buffer);
    if ((r = gf__cl_imports_acquire(s, &x)) != GF_OK) return r;
    gf__lock(&k->lock);
    for (i = 0; i < given; i++) {
        if (i == (cl_uint)count) {   /* the __local argument of dims.shared_bytes */
            e = GF__CL(clSetKernelArg, (ck->kernel, i, dims->shared_bytes, NULL));
        } else if (args[i].buffer) {
            cl_mem m = GF__CL_MEM(args[i].buffer);
            e = GF__CL(clSetKernelArg, (ck->kernel, i, sizeof m, &m));
        } else {
            e = GF__CL(clSetKernelArg, (ck->kernel, i, args[i].size, args[i].value));
        }
        if (e != CL_SUCCESS) break;
    }
    if (e == CL_SUCCESS)
        e = GF__CL(clEnqueueNDRangeKernel, (GF__CL_QUEUE(s), ck->kernel, work_dim, NULL, global, local, 0, NULL, NULL));
    gf__unlock(&k->lock);
    if (e == CL_SUCCESS) return gf__cl_imports_release(s, &x, gf__cl_enqueued(s, "clEnqueueNDRangeKernel", e, NULL));
    if (i < given) snprintf(call, sizeof call, "clSetKernelArg(%s, argument %u)", k->name, (unsigned)i);
    else snprintf(call, sizeof call, "clEnqueueNDRangeKernel(%s)", k->name);
    return gf__cl_imports_release(s, &x, gf__cl_fail(call, e));
}

/* ---- interop ---------------------------------------------------------------------------- */
/* A buffer's cl_mem (a view's sub-buffer; 0 for a view no sub-buffer can cover), a stream's
   cl_command_queue, an event's latest marker (valid until the next record or destroy), a
   kernel's cl_kernel. None is retained for the caller. */
static uint64_t gf__cl_native_handle(gf__type type, void *obj) {
    void *handle = NULL;
    switch (type) {
    case GF__T_STREAM: handle = GF__CL_QUEUE((gf_stream *)obj); break;
    case GF__T_KERNEL: handle = ((gf__cl_kernel *)((gf_kernel *)obj)->native)->kernel; break;
    case GF__T_EVENT: {
        gf__cl_event *ce = (gf__cl_event *)((gf_event *)obj)->native;
        gf__lock(&ce->lock);
        handle = ce->marker;
        gf__unlock(&ce->lock);
        break;
    }
    default: break;
    }
    return (uint64_t)(uintptr_t)handle;
}

/* ---- interop: semaphores ------------------------------------------------------------------ */
/* Binary semaphores (cl_khr_semaphore has no timelines) imported from opaque fds where the
   device lists them, and waited on in stream order. Not signalled, made or exported: on
   NVIDIA's OpenCL (580, the one driver here with the extension) clEnqueueSignalSemaphoresKHR
   signals before the work queued ahead of it, a marker in its wait list included (measured
   by tests/vulkan.c: Vulkan's wait passed while the signal sat behind a held host callback).
   An extension entry point goes through the fault seam by its name, as the table's do. */
#define GF__CL_SEM(d, slot, name, args) (GF__FAULT(name) ? GF__CL_INJECTED : (d)->sem.slot args)
static unsigned gf__cl_external_types(gf_device *dev, int use) {
    gf__cl_device *d = (gf__cl_device *)dev->native;
    if (use == GF__EXT_IMPORT_SEMAPHORE && d->sem.create && d->sem.import_fd) return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_FD);
    if (use == GF__EXT_IMPORT_MEMORY && d->xmem.import_fd) return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_FD);
    return 0;
}
/* ---- interop: memory ---------------------------------------------------------------------- */
/* An opaque fd (cl_khr_external_memory_opaque_fd) becomes one cl_mem of the whole exported
   size, kept in buf->external; an offset is a sub-buffer of it, so it must meet
   CL_DEVICE_MEM_BASE_ADDR_ALIGN. The driver gets a duplicate of the fd (it owns what it
   imports; the caller's fd stays the caller's, as on every backend). Every command on the
   buffer is put between an acquire and a release (gf__cl_imports). OpenCL exports no memory:
   cl_khr_external_memory has no export. */
static gf_result gf__cl_buffer_import(gf_buffer *buf, const gf_external_memory_desc *desc) {
#if defined(_WIN32)
    (void)buf; (void)desc;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: no fds on Windows");
#else
    gf__cl_device *d = (gf__cl_device *)buf->dev->native;
    cl_ulong props[6];
    cl_mem whole, window;
    cl_int e = CL_SUCCESS;
    int fd;
    if (desc->offset && (!d->sub_align || desc->offset % d->sub_align))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_import: OpenCL imports at an offset that is a multiple of %llu bytes "
                        "(CL_DEVICE_MEM_BASE_ADDR_ALIGN of %s); %llu is not", (unsigned long long)d->sub_align,
                        buf->dev->tag, (unsigned long long)desc->offset);
    if (desc->size > (uint64_t)SIZE_MAX) return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_buffer_import: size does not fit this host");
    if ((fd = gf__fd_dup(desc->fd)) < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_import: dup of fd %d failed", desc->fd);
    props[0] = CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR; props[1] = (cl_ulong)fd;
    props[2] = CL_MEM_DEVICE_HANDLE_LIST_KHR; props[3] = (cl_ulong)(uintptr_t)d->device; props[4] = CL_MEM_DEVICE_HANDLE_LIST_END_KHR;
    props[5] = 0;
    whole = GF__CL_NEW(clCreateBufferWithProperties, (d->ctx, props, CL_MEM_READ_WRITE, (size_t)desc->size, NULL), &e);
    if (!whole) {
        close(fd);   /* the driver takes the duplicate only on success */
        return gf__cl_fail("clCreateBufferWithProperties(CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR)", e);
    }
    window = whole;
    if (desc->offset) {
        cl_buffer_region region;
        region.origin = (size_t)desc->offset;
        region.size = buf->size;
        if (!(window = GF__CL_NEW(clCreateSubBuffer, (whole, 0, CL_BUFFER_CREATE_TYPE_REGION, &region), &e))) {
            GF__CL(clReleaseMemObject, (whole));
            return gf__cl_fail("clCreateSubBuffer (the import's offset)", e);
        }
    }
    buf->external = whole;
    buf->native = (uint64_t)(uintptr_t)window;
    return GF_OK;
#endif
}
static gf_result gf__cl_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out) {
    (void)buf; (void)type; (void)out;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: gpuflow exports no memory (cl_khr_external_memory imports only)");
}
static const char gf__cl_no_signal[] = "OpenCL: gpuflow does not signal OpenCL semaphores (NVIDIA's OpenCL signals before "
    "the work queued ahead of the signal): import a semaphore another API signals, and wait on it";
static gf_result gf__cl_semaphore_create(gf_semaphore *sem) {
    (void)sem;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_create: %s", gf__cl_no_signal);
}
static gf_result gf__cl_semaphore_import(gf_semaphore *sem, const gf_semaphore_desc *desc) {
#if defined(_WIN32)
    (void)sem; (void)desc;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: no fds on Windows");
#else
    gf__cl_device *d = (gf__cl_device *)sem->dev->native;
    cl_ulong props[5];
    cl_int e = CL_SUCCESS;
    gf__cl_sem made;
    int fd;
    if (sem->timeline) return gf__fail(GF_ERROR_NOT_SUPPORTED, "OpenCL: semaphores are binary (cl_khr_semaphore has no timelines)");
    if ((fd = gf__fd_dup(desc->fd)) < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_import: dup of fd %d failed", desc->fd);
    props[0] = CL_SEMAPHORE_TYPE_KHR; props[1] = CL_SEMAPHORE_TYPE_BINARY_KHR;
    props[2] = CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR; props[3] = (cl_ulong)fd; props[4] = 0;
    made = GF__FAULT("clCreateSemaphoreWithPropertiesKHR") ? NULL : d->sem.create(d->ctx, props, &e);
    if (!made) {
        close(fd);   /* the driver takes the duplicate only on success */
        return gf__cl_fail("clCreateSemaphoreWithPropertiesKHR", e == CL_SUCCESS ? GF__CL_INJECTED : e);
    }
    sem->native = made;
    return GF_OK;
#endif
}
static gf_result gf__cl_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out) {
    (void)sem; (void)type; (void)out;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_export: OpenCL exports no semaphore");
}
static void gf__cl_semaphore_destroy(gf_semaphore *sem) {
    gf__cl_device *d = (gf__cl_device *)sem->dev->native;
    if (sem->native && d->sem.release) (void)GF__CL_SEM(d, release, "clReleaseSemaphoreKHR", ((gf__cl_sem)sem->native));
}
static gf_result gf__cl_semaphore_signal(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    (void)s; (void)sem; (void)value;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_signal_async: %s", gf__cl_no_signal);
}
static gf_result gf__cl_semaphore_wait(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    gf__cl_device *d = (gf__cl_device *)s->dev->native;
    gf__cl_sem h = (gf__cl_sem)sem->native;
    (void)value;
    return gf__cl_enqueued(s, "clEnqueueWaitSemaphoresKHR",
                           GF__CL_SEM(d, wait, "clEnqueueWaitSemaphoresKHR", (GF__CL_QUEUE(s), 1, &h, NULL, 0, NULL, NULL)), NULL);
}

/* ---- the table -------------------------------------------------------------------------- */
/* Left NULL: stream-ordered allocation (the core's cache), prefetch (SVM needs none), graphs
   (the core's recorded replay), host_pinned (the driver copies from any host memory), 2D
   copies (the core's copy per row), trim and cached_bytes (no driver pool). */
static void gf__cl_fill_table(gf__backend *t) {
    t->kind = GF_BACKEND_OPENCL;
    t->name = "opencl";
    t->kernel_prelude = gf__kernel_prelude_clc;
    t->compile = gf__cl_compile;
    t->module_load_compiled = gf__cl_module_load_compiled;
    t->compiler_id = gf__cl_compiler_id;
    t->load = gf__cl_load;
    t->device_count = gf__cl_device_count;
    t->device_open = gf__cl_device_open;
    t->device_close = gf__cl_device_close;
    t->memory_info = gf__cl_memory_info;
    t->buffer_alloc = gf__cl_buffer_alloc;
    t->buffer_free = gf__cl_buffer_free;
    t->host_alloc = gf__cl_host_alloc;
    t->host_free = gf__cl_host_free;
    t->stream_create = gf__cl_stream_create;
    t->stream_destroy = gf__cl_stream_destroy;
    t->stream_synchronize = gf__cl_stream_synchronize;
    t->stream_query = gf__cl_stream_query;
    t->copy = gf__cl_copy;
    t->fill = gf__cl_fill;
    t->host_callback = gf__cl_host_callback;
    t->event_create = gf__cl_event_create;
    t->event_destroy = gf__cl_event_destroy;
    t->event_record = gf__cl_event_record;
    t->stream_wait_event = gf__cl_stream_wait_event;
    t->stream_wait_peer = gf__cl_stream_wait_peer;   /* copies between its devices: the core stages them */
    t->event_synchronize = gf__cl_event_synchronize;
    t->event_query = gf__cl_event_query;
    t->event_elapsed_ms = gf__cl_event_elapsed_ms;
    t->module_load = gf__cl_module_load;
    t->module_unload = gf__cl_module_unload;
    t->kernel_get = gf__cl_kernel_get;
    t->launch = gf__cl_launch;
    t->launch_check = gf__cl_launch_check;
    t->native_handle = gf__cl_native_handle;
    t->device_native = gf__cl_device_native;
    t->device_open_native = gf__cl_device_open_native;
    t->stream_wrap = gf__cl_stream_wrap;
    t->buffer_wrap = gf__cl_buffer_wrap;
    t->buffer_view = gf__cl_buffer_view;
    t->fill_wide = gf__cl_fill_wide;
    t->external_types = gf__cl_external_types;
    t->buffer_import = gf__cl_buffer_import;
    t->buffer_export = gf__cl_buffer_export;
    t->semaphore_create = gf__cl_semaphore_create;
    t->semaphore_import = gf__cl_semaphore_import;
    t->semaphore_export = gf__cl_semaphore_export;
    t->semaphore_destroy = gf__cl_semaphore_destroy;
    t->semaphore_signal = gf__cl_semaphore_signal;
    t->semaphore_wait = gf__cl_semaphore_wait;
}
static gf__backend gf__cl_table;
static const gf__backend *gf__opencl_backend(void) { return gf__backend_once(&gf__cl_table, gf__cl_fill_table); }

#endif /* GPUFLOW_OPENCL implementation */
