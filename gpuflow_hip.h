/* gpuflow_hip.h -- the HIP backend of gpuflow (AMD's HIP runtime, loaded at run time).

    In the one file that holds the implementation:
        #define GPUFLOW_IMPLEMENTATION
        #define GPUFLOW_HIP
        #include "gpuflow_hip.h"

        cc -std=c99 app.c -I/opt/rocm/include -o app -pthread -ldl

    Needs the headers of HIP 5.2 or newer (hip/hip_version.h; checked at compile time) and a
    runtime of at least that version. hip/hip_runtime_api.h is used for types, constants and
    the prototypes the driver table is checked against (this header defines
    __HIP_PLATFORM_AMD__ when nothing else has); libamdhip64 is never linked. A program built
    with this backend runs on a machine without an AMD GPU: GF_BACKEND_AUTO passes over HIP
    and gf_last_error() says why.

    HOW GPUFLOW MAPS ONTO HIP
    =========================
    - Loading: dlopen("libamdhip64.so"), else "libamdhip64.so.5" (LoadLibraryA("amdhip64.dll")
      on Windows); every entry point by its exported name through dlsym. The entry points are
      one list (GF__HIP_API) that makes the driver table, the loader's names and a
      compile-time check of each slot's type against the prototype in hip_runtime_api.h (a
      never-called function of sizeof comparisons: a mismatch fails the build, and nothing
      is referenced at link time). HIP has no versioned lookup, so the plain symbol is the
      one whose signature the header declares; an entry point the header renames by macro
      (HIP_API_PER_THREAD_DEFAULT_STREAM's _spt variants) fails that check: compile the
      implementation without it (gpuflow never uses the null stream). A few entry points are
      optional (older runtimes lack them): without them the feature they serve reports
      GF_ERROR_NOT_SUPPORTED. hipInit(0) once; a runtime that finds no device
      (hipGetDeviceCount: hipErrorNoDevice) loads, and reports that reason as
      GF_ERROR_NO_DEVICE instead of a count.
    - Every call into the runtime goes through GF__HIP_CALL, the fault-injection seam: in a
      test build (GPUFLOW_FAULT_INJECTION) gpuflow_fault_hit("hipMalloc") can make that call
      fail with hipErrorUnknown without reaching the runtime (hipGetErrorName excepted).
    - Device: HIP keeps a current device per thread. The calls that act on it (allocation,
      stream, event and module creation, memory info, graph instantiation) first make the
      gf_device's ordinal current with hipSetDevice; stream-ordered work goes through the
      stream, which carries its device. So gpuflow leaves the calling thread's current
      device set to the last gf_device it created something on.
    - gf_buffer: the device pointer in buf->ptr (hipMalloc, or hipMallocManaged for managed
      buffers); stream-ordered buffers come from the device's default memory pool
      (hipMallocFromPoolAsync / hipFreeAsync), which keeps up to a quarter of the device for
      reuse. Pinned host memory: hipHostMalloc(Portable). HIP performs a copy to or from
      pageable (malloc'd) memory synchronously, so the backend tells the core which memory
      is pinned (host_pinned: hipHostGetFlags succeeds) and the core stages the other copies
      through pinned memory to keep them asynchronous (gpuflow.h, "staged copies").
    - gf_stream: a hipStream_t made with hipStreamNonBlocking; HIGH / NORMAL / LOW map onto
      the device's priority range (greatest, middle, least).
    - gf_event: a hipEvent_t, hipEventDisableTiming unless GF_EVENT_TIMING was asked for.
    - gf_module / gf_kernel: hipModuleLoadData on desc->hip_code (an AMD GPU code object or
      an offload bundle holding one for this GPU), hipModuleGetFunction (kernels need C
      linkage: extern "C"). A launch is hipModuleLaunchKernel with kernelParams: args[i].value,
      or for a buffer a pointer to its device pointer. build_options do not apply.
    - gf_graph: native stream capture (hipStreamBeginCapture / EndCapture), instantiated once,
      replayed with one hipGraphLaunch; gf_graph_update is hipGraphExecUpdate. HIP's capture
      does not record hipGraphLaunch, so a graph launched on a capturing stream is embedded
      as a child graph node instead. gpuflow's own synchronizing and allocating calls run
      in RELAXED capture mode, so a GF_CAPTURE_GLOBAL capture does not make them fail (see
      GF__HIP_RELAXED).

    CALLBACKS
    =========
    Host callbacks go through hipLaunchHostFunc, or, where the runtime does not export it
    (HIP 5.2 declares it but does not), hipStreamAddCallback; the latter cannot be captured,
    so inside a capture the callback goes into the captured graph as a host node
    (hipGraphAddHostNode after the capture's current dependencies). Either way the callback
    runs on a runtime thread, after all earlier work on the stream, and later
    work waits until it returns. HIP forbids HIP calls from it: a callback, the core's
    bookkeeping included, may touch host memory, set flags and signal other threads, but must
    not call gpuflow functions that reach the runtime (enqueue, synchronize, query, allocate,
    free). The runtime may run the callbacks of all streams on one thread: keep callbacks
    short, and never block one until another stream's callback has run.
*/
#ifndef GPUFLOW_HIP_H
#define GPUFLOW_HIP_H
#include "gpuflow.h"
#endif

#if defined(GPUFLOW_IMPLEMENTATION) && defined(GPUFLOW_HIP) && !defined(GPUFLOW_HIP_IMPLEMENTATION_DONE)
#define GPUFLOW_HIP_IMPLEMENTATION_DONE
#if defined(__HIP_PLATFORM_NVIDIA__) || defined(__HIP_PLATFORM_NVCC__)
#  error "gpuflow_hip.h drives AMD's HIP runtime (libamdhip64); on NVIDIA GPUs use GPUFLOW_CUDA"
#endif
#if defined(HIP_API_PER_THREAD_DEFAULT_STREAM)
#  error "gpuflow_hip.h loads HIP's plain entry points: compile its implementation without HIP_API_PER_THREAD_DEFAULT_STREAM"
#endif
#ifndef __HIP_PLATFORM_AMD__
#  define __HIP_PLATFORM_AMD__   /* the header's AMD declarations, without the HIP compiler */
#endif
#include <hip/hip_version.h>
#if !defined(HIP_VERSION_MAJOR) || !defined(HIP_VERSION_MINOR) || \
    HIP_VERSION_MAJOR < 5 || (HIP_VERSION_MAJOR == 5 && HIP_VERSION_MINOR < 2)
#  error "gpuflow_hip.h needs the headers of HIP 5.2 or newer (hip/hip_version.h)"
#endif
/* Debian's HIP 5.2 headers are clean under -std=c99 -Wpedantic, but not every HIP release
   has been checked: keep a pedantic build of gpuflow quiet about headers it does not own. */
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <hip/hip_runtime_api.h>
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

#if defined(_WIN32)
static const char *const gf__hip_libraries[] = { "amdhip64.dll" };
#else
static const char *const gf__hip_libraries[] = { "libamdhip64.so", "libamdhip64.so.5" };
#endif
#define GF__HIP_STACK_ARGS 32         /* launches with more arguments allocate their table */

/* ---- the runtime's entry points --------------------------------------------------------- */
/* X(name, return type, parameters, optional, fails_as): the runtime's hip<name>. One list
   makes the table (gf__hip.<name>), the loader's names, the signature check and what a
   fault-injected call returns (hipError<fails_as>). An optional entry may be missing from
   the runtime (its slot stays NULL; the code asks before using it). */
#define GF__HIP_API(X) \
    X(GetErrorName, const char *, (hipError_t), 0, Unknown) \
    X(DriverGetVersion, hipError_t, (int *), 0, Unknown) \
    X(Init, hipError_t, (unsigned int), 0, Unknown) \
    X(GetDeviceCount, hipError_t, (int *), 0, Unknown) \
    X(SetDevice, hipError_t, (int), 0, Unknown) \
    X(DeviceGet, hipError_t, (hipDevice_t *, int), 0, Unknown) \
    X(DeviceGetName, hipError_t, (char *, int, hipDevice_t), 0, Unknown) \
    X(DeviceTotalMem, hipError_t, (size_t *, hipDevice_t), 0, Unknown) \
    X(DeviceGetAttribute, hipError_t, (int *, hipDeviceAttribute_t, int), 0, Unknown) \
    X(DeviceGetStreamPriorityRange, hipError_t, (int *, int *), 0, Unknown) \
    X(MemGetInfo, hipError_t, (size_t *, size_t *), 0, Unknown) \
    X(Malloc, hipError_t, (void **, size_t), 0, OutOfMemory) \
    X(MallocManaged, hipError_t, (void **, size_t, unsigned int), 0, OutOfMemory) \
    X(Free, hipError_t, (void *), 0, Unknown) \
    X(HostMalloc, hipError_t, (void **, size_t, unsigned int), 0, OutOfMemory) \
    X(HostFree, hipError_t, (void *), 0, Unknown) \
    X(HostGetFlags, hipError_t, (unsigned int *, void *), 0, Unknown) \
    /* stream-ordered allocation: optional, the core's cache stands in */ \
    X(DeviceGetDefaultMemPool, hipError_t, (hipMemPool_t *, int), 1, Unknown) \
    X(MemPoolSetAttribute, hipError_t, (hipMemPool_t, hipMemPoolAttr, void *), 1, Unknown) \
    X(MemPoolTrimTo, hipError_t, (hipMemPool_t, size_t), 1, Unknown) \
    X(MallocFromPoolAsync, hipError_t, (void **, size_t, hipMemPool_t, hipStream_t), 1, OutOfMemory) \
    X(FreeAsync, hipError_t, (void *, hipStream_t), 1, Unknown) \
    X(MemPrefetchAsync, hipError_t, (const void *, size_t, int, hipStream_t), 0, Unknown) \
    X(MemcpyHtoDAsync, hipError_t, (hipDeviceptr_t, void *, size_t, hipStream_t), 0, Unknown) \
    X(MemcpyDtoHAsync, hipError_t, (void *, hipDeviceptr_t, size_t, hipStream_t), 0, Unknown) \
    X(MemcpyDtoDAsync, hipError_t, (hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t), 0, Unknown) \
    X(MemsetD8Async, hipError_t, (hipDeviceptr_t, unsigned char, size_t, hipStream_t), 0, Unknown) \
    X(StreamCreateWithPriority, hipError_t, (hipStream_t *, unsigned int, int), 0, Unknown) \
    X(StreamDestroy, hipError_t, (hipStream_t), 0, Unknown) \
    X(StreamQuery, hipError_t, (hipStream_t), 0, Unknown) \
    X(StreamSynchronize, hipError_t, (hipStream_t), 0, Unknown) \
    X(StreamWaitEvent, hipError_t, (hipStream_t, hipEvent_t, unsigned int), 0, Unknown) \
    /* declared by HIP 5.2, not exported by it: hipStreamAddCallback stands in */ \
    X(LaunchHostFunc, hipError_t, (hipStream_t, hipHostFn_t, void *), 1, Unknown) \
    X(StreamAddCallback, hipError_t, (hipStream_t, hipStreamCallback_t, void *, unsigned int), 0, Unknown) \
    X(EventCreateWithFlags, hipError_t, (hipEvent_t *, unsigned int), 0, Unknown) \
    X(EventDestroy, hipError_t, (hipEvent_t), 0, Unknown) \
    X(EventRecord, hipError_t, (hipEvent_t, hipStream_t), 0, Unknown) \
    X(EventQuery, hipError_t, (hipEvent_t), 0, Unknown) \
    X(EventSynchronize, hipError_t, (hipEvent_t), 0, Unknown) \
    X(EventElapsedTime, hipError_t, (float *, hipEvent_t, hipEvent_t), 0, Unknown) \
    X(ModuleLoadData, hipError_t, (hipModule_t *, const void *), 0, Unknown) \
    X(ModuleUnload, hipError_t, (hipModule_t), 0, Unknown) \
    X(ModuleGetFunction, hipError_t, (hipFunction_t *, hipModule_t, const char *), 0, Unknown) \
    X(ModuleLaunchKernel, hipError_t, (hipFunction_t, unsigned int, unsigned int, unsigned int, \
                                       unsigned int, unsigned int, unsigned int, unsigned int, \
                                       hipStream_t, void **, void **), 0, Unknown) \
    X(StreamBeginCapture, hipError_t, (hipStream_t, hipStreamCaptureMode), 0, Unknown) \
    X(StreamEndCapture, hipError_t, (hipStream_t, hipGraph_t *), 0, Unknown) \
    X(GraphGetNodes, hipError_t, (hipGraph_t, hipGraphNode_t *, size_t *), 0, Unknown) \
    /* the 5-argument form (HIP has no 3-argument cuGraphInstantiate twin under this name) */ \
    X(GraphInstantiate, hipError_t, (hipGraphExec_t *, hipGraph_t, hipGraphNode_t *, char *, size_t), 0, Unknown) \
    X(GraphLaunch, hipError_t, (hipGraphExec_t, hipStream_t), 0, Unknown) \
    X(GraphExecUpdate, hipError_t, (hipGraphExec_t, hipGraph_t, hipGraphNode_t *, hipGraphExecUpdateResult *), 0, Unknown) \
    X(GraphExecDestroy, hipError_t, (hipGraphExec_t), 0, Unknown) \
    X(GraphDestroy, hipError_t, (hipGraph_t), 0, Unknown) \
    X(GraphClone, hipError_t, (hipGraph_t *, hipGraph_t), 0, Unknown) \
    /* nodes added to a capture by hand (a graph launched, or a host callback without \
       hipLaunchHostFunc): optional, else GF_ERROR_NOT_SUPPORTED */ \
    X(StreamGetCaptureInfo_v2, hipError_t, (hipStream_t, hipStreamCaptureStatus *, unsigned long long *, \
                                            hipGraph_t *, const hipGraphNode_t **, size_t *), 1, Unknown) \
    X(GraphAddChildGraphNode, hipError_t, (hipGraphNode_t *, hipGraph_t, const hipGraphNode_t *, size_t, hipGraph_t), 1, Unknown) \
    X(GraphAddHostNode, hipError_t, (hipGraphNode_t *, hipGraph_t, const hipGraphNode_t *, size_t, const hipHostNodeParams *), 1, Unknown) \
    X(StreamUpdateCaptureDependencies, hipError_t, (hipStream_t, hipGraphNode_t *, size_t, unsigned int), 1, Unknown) \
    X(ThreadExchangeStreamCaptureMode, hipError_t, (hipStreamCaptureMode *), 0, Unknown)

/* The table, filled once by gf__hip_load_runtime; read-only afterwards. */
typedef struct gf__hip_api {
#define GF__HIP_SLOT(name, ret, params, optional, fails_as) ret (*name) params;
    GF__HIP_API(GF__HIP_SLOT)
#undef GF__HIP_SLOT
} gf__hip_api;

typedef struct gf__hip_entry { const char *name; size_t offset; int optional; } gf__hip_entry;
static const gf__hip_entry gf__hip_entries[] = {
#define GF__HIP_ENTRY(name, ret, params, optional, fails_as) { "hip" #name, offsetof(gf__hip_api, name), optional },
    GF__HIP_API(GF__HIP_ENTRY)
#undef GF__HIP_ENTRY
};

static gf__hip_api gf__hip;

/* Never called: each slot's type against the runtime's prototype. Comparing pointers to
   different function types is a constraint violation (an error in C++, a diagnostic that
   -Werror makes one in C); sizeof does not evaluate, so no symbol is referenced. The second
   line fails the build where the header renames the entry point by macro: then the name the
   loader asks for and the prototype checked would belong to different functions. In C++
   hipMalloc, hipHostMalloc and hipMallocManaged are also function templates, and an
   overloaded name has no address without a target type: the static_cast picks the C
   function (an exact match beats the template), which leaves the pointee of their first
   parameter to the C build's check. */
#ifdef __cplusplus
#  define GF__HIP_PROTO(name) static_cast<decltype(gf__hip.name)>(&hip##name)
#else
#  define GF__HIP_PROTO(name) (&hip##name)
#endif
#define GF__HIP_STR(x) #x
#define GF__HIP_XSTR(x) GF__HIP_STR(x)
static void gf__hip_check_signatures(void) {
#define GF__HIP_SAME(name, ret, params, optional, fails_as) \
    (void)sizeof(gf__hip.name == GF__HIP_PROTO(name)); \
    (void)sizeof(char[sizeof(GF__HIP_XSTR(hip##name)) == sizeof("hip" #name) ? 1 : -1]);
    GF__HIP_API(GF__HIP_SAME)
#undef GF__HIP_SAME
}
#undef GF__HIP_PROTO
#undef GF__HIP_STR
#undef GF__HIP_XSTR

/* What a fault-injected call of each entry point returns: gf__hip_fault_<name>. */
enum {
#define GF__HIP_FAULT_CODE(name, ret, params, optional, fails_as) gf__hip_fault_##name = hipError##fails_as,
    GF__HIP_API(GF__HIP_FAULT_CODE)
#undef GF__HIP_FAULT_CODE
    gf__hip_fault_codes_end
};

/* r = hip<name> args, through the fault-injection seam: a test build may fail any entry point
   without calling it, as the runtime would fail it. */
#define GF__HIP_CALL(name, args) (GF__FAULT("hip" #name) ? (hipError_t)gf__hip_fault_##name : gf__hip.name args)

static gf__driver gf__hip_runtime;
static int gf__hip_no_device;         /* the runtime loaded but found no device */
static char gf__hip_no_device_why[256];

/* Per gf_device state. */
typedef struct gf__hip_device {
    int ordinal;
    hipDevice_t dev;
    int prio_least, prio_greatest;    /* numerically: least >= greatest */
    int concurrent_managed;           /* prefetching to the GPU is meaningful */
    hipMemPool_t pool;                /* the default pool; NULL without stream-ordered allocation */
} gf__hip_device;

/* ---- errors ----------------------------------------------------------------------------- */
static const char *gf__hip_error_name(hipError_t r) {
    const char *name = gf__hip.GetErrorName(r);   /* not a fault point: it names the others */
    return name ? name : "hipErrorUnrecognized";
}

static gf_result gf__hip_code(hipError_t r) {
    switch (r) {
    case hipSuccess:                       return GF_OK;
    case hipErrorNotReady:                 return GF_NOT_READY;
    case hipErrorOutOfMemory:              return GF_ERROR_OUT_OF_MEMORY;
    case hipErrorNotFound:                 return GF_ERROR_NOT_FOUND;
    case hipErrorNotSupported:             return GF_ERROR_NOT_SUPPORTED;
    case hipErrorNoDevice:                 return GF_ERROR_NO_DEVICE;
    case hipErrorStreamCaptureUnsupported:
    case hipErrorStreamCaptureInvalidated:
    case hipErrorStreamCaptureMerge:
    case hipErrorStreamCaptureUnmatched:
    case hipErrorStreamCaptureUnjoined:
    case hipErrorStreamCaptureIsolation:
    case hipErrorStreamCaptureImplicit:
    case hipErrorCapturedEvent:
    case hipErrorStreamCaptureWrongThread: return GF_ERROR_CAPTURE;
    default:                               return GF_ERROR_DRIVER;
    }
}

/* "hipXxx: hipErrorName (n)", with the gpuflow code that hipError_t maps to. */
static gf_result gf__hip_fail(hipError_t r, const char *call) {
    gf_result code = gf__hip_code(r);
    return gf__fail(code, "%s: %s (%d)%s", call, gf__hip_error_name(r), (int)r,
                    code == GF_ERROR_CAPTURE ? ": refused by the stream capture in progress" : "");
}

/* hip<name> args; a failure returns from the calling function, named after the entry point. */
#define GF__HIP_CHECK(name, args) do { hipError_t gf__r_ = GF__HIP_CALL(name, args); \
        if (gf__r_ != hipSuccess) return gf__hip_fail(gf__r_, "hip" #name); } while (0)

/* r = hip<name> args, made with this thread in RELAXED capture mode. While any stream captures
   in GLOBAL mode, HIP refuses (and invalidates that capture on) every call that could
   synchronize or allocate, also for streams and memory outside the capture. The core
   polices captures itself (no synchronizing a capturing stream, no synchronous copy into
   a buffer a capture uses), so its own calls go through relaxed; GLOBAL still guards
   against other code's HIP calls. The mode goes back only if it was changed (if the first
   exchange failed, a second would set RELAXED for good), and that restoring exchange is the
   one call besides hipGetErrorName that bypasses the fault seam: failing it would leave the
   thread's mode changed, which no runtime does. */
#define GF__HIP_RELAXED(r, name, args) do { hipStreamCaptureMode gf__mode_ = hipStreamCaptureModeRelaxed; \
        int gf__swapped_ = GF__HIP_CALL(ThreadExchangeStreamCaptureMode, (&gf__mode_)) == hipSuccess; \
        (r) = GF__HIP_CALL(name, args); \
        if (gf__swapped_) (void)gf__hip.ThreadExchangeStreamCaptureMode(&gf__mode_); } while (0)
#define GF__HIP_RELAXED_VOID(name, args) do { hipError_t gf__v_; GF__HIP_RELAXED(gf__v_, name, args); (void)gf__v_; } while (0)
#define GF__HIP_CHECK_RELAXED(name, args) do { hipError_t gf__r_; GF__HIP_RELAXED(gf__r_, name, args); \
        if (gf__r_ != hipSuccess) return gf__hip_fail(gf__r_, "hip" #name); } while (0)

/* ---- loading ---------------------------------------------------------------------------- */
static void gf__hip_load_runtime(gf__driver *d) {
    char first_error[256] = "";
    int version = 0, count = 0;
    size_t i;
    hipError_t r, rc;

    d->result = GF_ERROR_BACKEND_UNAVAILABLE;
    for (i = 0; i < sizeof gf__hip_libraries / sizeof gf__hip_libraries[0] && !d->lib; i++) {
        d->lib = gf__dlopen(gf__hip_libraries[i]);
        if (!d->lib && i == 0) snprintf(first_error, sizeof first_error, "%s", gf__dlerror());
    }
    if (!d->lib) {
        snprintf(d->why, sizeof d->why, "HIP: cannot load %s: %s", gf__hip_libraries[0], first_error);
        return;
    }
    for (i = 0; i < sizeof gf__hip_entries / sizeof gf__hip_entries[0]; i++) {
        void *fn = gf__dlsym(d->lib, gf__hip_entries[i].name);
        if (!fn && gf__hip_entries[i].optional) continue;
        if (!fn) {
            snprintf(d->why, sizeof d->why, "HIP: the runtime has no %s (older than the HIP 5.2 API gpuflow uses)",
                     gf__hip_entries[i].name);
            return;
        }
        memcpy((char *)&gf__hip + gf__hip_entries[i].offset, &fn, sizeof fn);   /* object to function pointer */
    }
    if (GF__HIP_CALL(DriverGetVersion, (&version)) != hipSuccess) version = 0;
    r = GF__HIP_CALL(Init, (0));
    rc = GF__HIP_CALL(GetDeviceCount, (&count));
    if (rc == hipErrorNoDevice || (rc == hipSuccess && count == 0)) {
        /* The runtime works (hipInit then says hipErrorInvalidDevice); there is simply
           nothing to open. device_count reports GF_ERROR_NO_DEVICE with this reason. */
        char detail[96];
        if (rc == hipSuccess) snprintf(detail, sizeof detail, "0 devices");
        else snprintf(detail, sizeof detail, "%s (%d)", gf__hip_error_name(rc), (int)rc);
        gf__hip_no_device = 1;
        snprintf(gf__hip_no_device_why, sizeof gf__hip_no_device_why,
                 "HIP: the runtime (%d.%d.%d) found no HIP device (hipGetDeviceCount: %s)",
                 version / 10000000, version / 100000 % 100, version % 100000, detail);
        d->result = GF_OK;
        return;
    }
    if (r != hipSuccess || rc != hipSuccess) {
        snprintf(d->why, sizeof d->why, "HIP: %s: %s (%d)", r != hipSuccess ? "hipInit" : "hipGetDeviceCount",
                 gf__hip_error_name(r != hipSuccess ? r : rc), (int)(r != hipSuccess ? r : rc));
        return;
    }
    d->result = GF_OK;
}

static gf_result gf__hip_load(void) { return gf__driver_load(&gf__hip_runtime, gf__hip_load_runtime); }

/* ---- the current device ------------------------------------------------------------------ */
/* Makes dev current on the calling thread, for the calls that act on the current device. */
static gf_result gf__hip_use(gf_device *dev) {
    GF__HIP_CHECK(SetDevice, (((gf__hip_device *)dev->native)->ordinal));
    return GF_OK;
}
#define GF__HIP_USE(dev) do { gf_result gf__u_ = gf__hip_use(dev); if (gf__u_ != GF_OK) return gf__u_; } while (0)

#define GF__HIPSTREAM(s) ((hipStream_t)(s)->native)
#define GF__HIPEVENT(e)  ((hipEvent_t)(e)->native)

static void *gf__hip_at(const gf_buffer *buf, size_t offset) { return (char *)buf->ptr + offset; }

/* ---- devices ---------------------------------------------------------------------------- */
/* No device is GF_ERROR_NO_DEVICE with the runtime's reason (count 0): the core passes that
   text on, where a bare 0 would get a generic one. */
static gf_result gf__hip_device_count(int *count) {
    *count = 0;
    if (gf__hip_no_device) return gf__fail(GF_ERROR_NO_DEVICE, "%s", gf__hip_no_device_why);
    GF__HIP_CHECK(GetDeviceCount, (count));
    if (*count == 0) return gf__fail(GF_ERROR_NO_DEVICE, "HIP: the runtime reports no HIP device (hipGetDeviceCount: 0)");
    return GF_OK;
}

static int gf__hip_attr(int ordinal, hipDeviceAttribute_t a) {
    int v = 0;
    if (GF__HIP_CALL(DeviceGetAttribute, (&v, a, ordinal)) != hipSuccess) v = 0;
    return v;
}

/* Each step names its entry point; the first failure frees d and reports it. */
#define GF__HIP_OPEN_STEP(name, args) do { if ((r = GF__HIP_CALL(name, args)) != hipSuccess) { \
        call = "hip" #name; goto fail; } } while (0)
static gf_result gf__hip_device_open(gf_device *dev, int index) {
    gf__hip_device *d = (gf__hip_device *)gf__alloc(sizeof *d);
    gf_device_info *info = &dev->info;
    size_t total = 0;
    const char *call;
    hipError_t r;
    if (!d) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory opening device %d", index);
    d->ordinal = index;
    GF__HIP_OPEN_STEP(SetDevice, (index));
    GF__HIP_OPEN_STEP(DeviceGet, (&d->dev, index));
    GF__HIP_OPEN_STEP(DeviceGetName, (info->name, (int)sizeof info->name, d->dev));
    GF__HIP_OPEN_STEP(DeviceTotalMem, (&total, d->dev));
    GF__HIP_OPEN_STEP(DeviceGetStreamPriorityRange, (&d->prio_least, &d->prio_greatest));

    info->total_memory = total;
    info->compute_units = gf__hip_attr(index, hipDeviceAttributeMultiprocessorCount);
    info->native_graphs = 1;
    info->stream_priorities = d->prio_least != d->prio_greatest;
    info->managed_memory = gf__hip_attr(index, hipDeviceAttributeManagedMemory) != 0;
    info->async_alloc = gf__hip.MallocFromPoolAsync && gf__hip.FreeAsync && gf__hip.DeviceGetDefaultMemPool &&
                        gf__hip.MemPoolSetAttribute && gf__hip.MemPoolTrimTo &&
                        gf__hip_attr(index, hipDeviceAttributeMemoryPoolsSupported) != 0;
    info->spirv = 0;
    d->concurrent_managed = gf__hip_attr(index, hipDeviceAttributeConcurrentManagedAccess) != 0;

    if (info->async_alloc) {
        /* Keep up to a quarter of the device in the pool across synchronizations: reuse
           without holding the whole card away from other processes. */
        uint64_t keep = (uint64_t)(total / 4);
        GF__HIP_OPEN_STEP(DeviceGetDefaultMemPool, (&d->pool, index));
        GF__HIP_OPEN_STEP(MemPoolSetAttribute, (d->pool, hipMemPoolAttrReleaseThreshold, &keep));
    }
    dev->native = d;
    return GF_OK;
fail:
    gf__free(d);
    return gf__hip_fail(r, call);
}
#undef GF__HIP_OPEN_STEP

static void gf__hip_device_close(gf_device *dev) {
    gf__hip_device *d = (gf__hip_device *)dev->native;
    if (!d) return;
    if (d->pool) (void)GF__HIP_CALL(MemPoolTrimTo, (d->pool, 0));
    gf__free(d);
    dev->native = NULL;
}

static gf_result gf__hip_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes) {
    GF__HIP_USE(dev);
    GF__HIP_CHECK(MemGetInfo, (free_bytes, total_bytes));
    return GF_OK;
}

/* ---- memory ----------------------------------------------------------------------------- */
static gf_result gf__hip_buffer_alloc(gf_buffer *buf) {
    void *p = NULL;
    GF__HIP_USE(buf->dev);
    if (buf->managed)
        GF__HIP_CHECK_RELAXED(MallocManaged, (&p, buf->size, hipMemAttachGlobal));
    else
        GF__HIP_CHECK_RELAXED(Malloc, (&p, buf->size));
    buf->ptr = p;
    return GF_OK;
}

static void gf__hip_buffer_free(gf_buffer *buf) {
    if (buf->ptr) GF__HIP_RELAXED_VOID(Free, (buf->ptr));
    buf->ptr = NULL;
}

static gf_result gf__hip_buffer_alloc_async(gf_stream *s, gf_buffer *buf) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    void *p = NULL;
    if (!d->pool)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: device %s or this runtime has no memory pools (stream-ordered allocation)",
                        s->dev->info.name);
    GF__HIP_CHECK(MallocFromPoolAsync, (&p, buf->size, d->pool, GF__HIPSTREAM(s)));
    buf->ptr = p;
    return GF_OK;
}

static gf_result gf__hip_buffer_free_async(gf_stream *s, gf_buffer *buf) {
    GF__HIP_CHECK(FreeAsync, (buf->ptr, GF__HIPSTREAM(s)));
    buf->ptr = NULL;
    return GF_OK;
}

static gf_result gf__hip_host_alloc(gf_device *dev, size_t bytes, void **out) {
    GF__HIP_USE(dev);
    GF__HIP_CHECK_RELAXED(HostMalloc, (out, bytes, hipHostMallocPortable));
    return GF_OK;
}

static void gf__hip_host_free(gf_device *dev, void *ptr) {
    (void)dev;
    GF__HIP_RELAXED_VOID(HostFree, (ptr));
}

/* Memory HIP knows as host-pinned (or its own) copies asynchronously as it is; the core
   stages copies from any other host memory. */
static int gf__hip_host_pinned(gf_device *dev, const void *p) {
    unsigned int flags = 0;
    hipError_t r;
    (void)dev;
    GF__HIP_RELAXED(r, HostGetFlags, (&flags, (void *)(uintptr_t)p));
    return r == hipSuccess;
}

/* ---- host functions on a stream ------------------------------------------------------------ */
/* hipStreamAddCallback's callback gets the stream and its status too: a small block carries
   the function and its argument, and is freed once the function has run. */
typedef struct gf__hip_thunk { void (*fn)(void *); void *user; } gf__hip_thunk;

static void gf__hip_thunk_run(hipStream_t stream, hipError_t status, void *p) {
    gf__hip_thunk t = *(gf__hip_thunk *)p;
    (void)stream; (void)status;
    gf__free(p);
    t.fn(t.user);
}

static gf_result gf__hip_capture_append(gf_stream *s, gf_graph *child, const hipHostNodeParams *host);

/* fn(user) after all earlier work on s; later work on s waits until it returns. */
static gf_result gf__hip_host_callback(gf_stream *s, void (*fn)(void *user), void *user) {
    gf__hip_thunk *t;
    hipError_t r;
    if (gf__hip.LaunchHostFunc) {
        GF__HIP_CHECK(LaunchHostFunc, (GF__HIPSTREAM(s), fn, user));
        return GF_OK;
    }
    /* s->capture: the core's, under s->lock. HIP would refuse hipStreamAddCallback and
       invalidate the capture with it: the callback becomes a host node of the graph. */
    if (s->capture) {
        hipHostNodeParams host;
        host.fn = fn;
        host.userData = user;
        return gf__hip_capture_append(s, NULL, &host);
    }
    if (!(t = (gf__hip_thunk *)gf__malloc(sizeof *t)))
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory for a stream callback");
    t->fn = fn;
    t->user = user;
    r = GF__HIP_CALL(StreamAddCallback, (GF__HIPSTREAM(s), gf__hip_thunk_run, t, 0));
    if (r != hipSuccess) {
        gf__free(t);
        return gf__hip_fail(r, "hipStreamAddCallback");
    }
    return GF_OK;
}

/* ---- streams ---------------------------------------------------------------------------- */
static gf_result gf__hip_stream_create(gf_stream *s) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    hipStream_t hs = NULL;
    int prio;
    GF__HIP_USE(s->dev);
    switch (s->priority) {
    case GF_PRIORITY_HIGH: prio = d->prio_greatest; break;
    case GF_PRIORITY_LOW:  prio = d->prio_least; break;
    default:               prio = (d->prio_least + d->prio_greatest) / 2; break;
    }
    GF__HIP_CHECK(StreamCreateWithPriority, (&hs, hipStreamNonBlocking, prio));
    s->native = hs;
    return GF_OK;
}

static void gf__hip_stream_destroy(gf_stream *s) {
    if (s->native) GF__HIP_RELAXED_VOID(StreamDestroy, (GF__HIPSTREAM(s)));
    s->native = NULL;
}

static gf_result gf__hip_stream_synchronize(gf_stream *s) {
    GF__HIP_CHECK_RELAXED(StreamSynchronize, (GF__HIPSTREAM(s)));
    return GF_OK;
}

/* A query's answer: done, not yet, or a failure to report. */
static gf_result gf__hip_ready(hipError_t r, const char *call) {
    if (r == hipSuccess) return GF_OK;
    if (r == hipErrorNotReady) return GF_NOT_READY;
    return gf__hip_fail(r, call);
}

static gf_result gf__hip_stream_query(gf_stream *s) {
    hipError_t r;
    GF__HIP_RELAXED(r, StreamQuery, (GF__HIPSTREAM(s)));
    return gf__hip_ready(r, "hipStreamQuery");
}

/* c->host is pinned here, or the copy is captured: the core staged any other (host_pinned). */
static gf_result gf__hip_copy(gf_stream *s, const gf__copy *c) {
    hipStream_t hs = GF__HIPSTREAM(s);
    switch (c->kind) {
    case GF__COPY_H2D:
        GF__HIP_CHECK(MemcpyHtoDAsync, (gf__hip_at(c->dst, c->dst_offset), c->host, c->bytes, hs));
        break;
    case GF__COPY_D2H:
        GF__HIP_CHECK(MemcpyDtoHAsync, (c->host, gf__hip_at(c->src, c->src_offset), c->bytes, hs));
        break;
    default:
        GF__HIP_CHECK(MemcpyDtoDAsync, (gf__hip_at(c->dst, c->dst_offset), gf__hip_at(c->src, c->src_offset), c->bytes, hs));
        break;
    }
    return GF_OK;
}

static gf_result gf__hip_fill(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    GF__HIP_CHECK(MemsetD8Async, (gf__hip_at(buf, offset), value, bytes, GF__HIPSTREAM(s)));
    return GF_OK;
}

static gf_result gf__hip_prefetch(gf_stream *s, gf_buffer *buf, int to_device) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    /* Without concurrent managed access (XNACK off) the runtime migrates managed memory
       itself around each launch: the hint has nothing left to do. */
    if (!d->concurrent_managed) return GF_OK;
    GF__HIP_CHECK(MemPrefetchAsync, (buf->ptr, buf->size, to_device ? d->ordinal : hipCpuDeviceId, GF__HIPSTREAM(s)));
    return GF_OK;
}

/* ---- events ----------------------------------------------------------------------------- */
static gf_result gf__hip_event_create(gf_event *ev) {
    hipEvent_t e = NULL;
    GF__HIP_USE(ev->dev);
    GF__HIP_CHECK(EventCreateWithFlags, (&e, (ev->flags & GF_EVENT_TIMING) ? hipEventDefault : hipEventDisableTiming));
    ev->native = e;
    return GF_OK;
}

static void gf__hip_event_destroy(gf_event *ev) {
    if (ev->native) (void)GF__HIP_CALL(EventDestroy, (GF__HIPEVENT(ev)));
    ev->native = NULL;
}

static gf_result gf__hip_event_record(gf_event *ev, gf_stream *s) {
    GF__HIP_CHECK(EventRecord, (GF__HIPEVENT(ev), GF__HIPSTREAM(s)));
    return GF_OK;
}

static gf_result gf__hip_stream_wait_event(gf_stream *s, gf_event *ev) {
    GF__HIP_CHECK(StreamWaitEvent, (GF__HIPSTREAM(s), GF__HIPEVENT(ev), 0));
    return GF_OK;
}

static gf_result gf__hip_event_synchronize(gf_event *ev) {
    GF__HIP_CHECK_RELAXED(EventSynchronize, (GF__HIPEVENT(ev)));
    return GF_OK;
}

static gf_result gf__hip_event_query(gf_event *ev) {
    hipError_t r;
    GF__HIP_RELAXED(r, EventQuery, (GF__HIPEVENT(ev)));
    return gf__hip_ready(r, "hipEventQuery");
}

static gf_result gf__hip_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    return gf__hip_ready(GF__HIP_CALL(EventElapsedTime, (ms, GF__HIPEVENT(start), GF__HIPEVENT(end))), "hipEventElapsedTime");
}

/* ---- modules and kernels ---------------------------------------------------------------- */
static gf_result gf__hip_module_load(gf_module *mod, const gf_module_desc *desc) {
    hipModule_t m = NULL;
    hipError_t r;
    if (!desc->hip_code || !desc->hip_code_size)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: the module description has no hip_code (an AMD GPU code object)");
    GF__HIP_USE(mod->dev);
    GF__HIP_RELAXED(r, ModuleLoadData, (&m, desc->hip_code));
    if (r == hipErrorOutOfMemory) return gf__hip_fail(r, "hipModuleLoadData");
    if (r != hipSuccess)
        return gf__fail(GF_ERROR_BUILD, "hipModuleLoadData: %s (%d): %s", gf__hip_error_name(r), (int)r,
                        r == hipErrorNoBinaryForGpu ? "hip_code holds no code for this GPU's architecture"
                                                    : "hip_code is not a code object this runtime can load");
    mod->native = m;
    return GF_OK;
}

static void gf__hip_module_unload(gf_module *mod) {
    if (mod->native) GF__HIP_RELAXED_VOID(ModuleUnload, ((hipModule_t)mod->native));
    mod->native = NULL;
}

static gf_result gf__hip_kernel_get(gf_kernel *k) {
    hipFunction_t f = NULL;
    hipError_t r;
    GF__HIP_USE(k->mod->dev);
    r = GF__HIP_CALL(ModuleGetFunction, (&f, (hipModule_t)k->mod->native, k->name));
    if (r == hipErrorNotFound)
        return gf__fail(GF_ERROR_NOT_FOUND, "hipModuleGetFunction: %s (%d): no kernel \"%s\" in the module (is it extern \"C\"?)",
                        gf__hip_error_name(r), (int)r, k->name);
    if (r != hipSuccess) return gf__hip_fail(r, "hipModuleGetFunction");
    k->native = f;
    return GF_OK;
}

/* The hot path: the parameter table on the stack and one runtime call. kernelParams[i]
   points at the argument's bytes; for a buffer, at its device pointer. */
static gf_result gf__hip_launch(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims,
                                const gf_arg *args, int count) {
    void *stack[GF__HIP_STACK_ARGS];
    void **params = stack;
    hipError_t r;
    int i;
    if (count > GF__HIP_STACK_ARGS) {
        params = (void **)gf__malloc((size_t)count * sizeof *params);
        if (!params) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory for %d kernel arguments", count);
    }
    for (i = 0; i < count; i++)
        params[i] = args[i].buffer ? (void *)&args[i].buffer->ptr : (void *)args[i].value;
    r = GF__HIP_CALL(ModuleLaunchKernel, ((hipFunction_t)k->native, dims->grid[0], dims->grid[1], dims->grid[2],
                                          dims->block[0], dims->block[1], dims->block[2], (unsigned int)dims->shared_bytes,
                                          GF__HIPSTREAM(s), count ? params : NULL, NULL));
    if (params != stack) gf__free(params);
    if (r != hipSuccess) return gf__hip_fail(r, "hipModuleLaunchKernel");
    return GF_OK;
}

/* ---- graphs ----------------------------------------------------------------------------- */
static gf_result gf__hip_capture_begin(gf_stream *s, gf_capture_mode mode) {
    hipStreamCaptureMode m = mode == GF_CAPTURE_THREAD_LOCAL ? hipStreamCaptureModeThreadLocal
                           : mode == GF_CAPTURE_RELAXED      ? hipStreamCaptureModeRelaxed
                                                             : hipStreamCaptureModeGlobal;
    GF__HIP_CHECK(StreamBeginCapture, (GF__HIPSTREAM(s), m));
    return GF_OK;
}

/* Ends the capture whatever happens: on failure the partial graph is destroyed and the
   stream is out of capture mode, usable again. */
static gf_result gf__hip_capture_end(gf_stream *s, gf_graph *g) {
    hipGraph_t graph = NULL;
    hipGraphExec_t exec = NULL;
    size_t nodes = 0;
    const char *call;
    hipError_t r;
    r = GF__HIP_CALL(StreamEndCapture, (GF__HIPSTREAM(s), &graph));
    if (r != hipSuccess) {
        if (graph) (void)GF__HIP_CALL(GraphDestroy, (graph));
        return gf__fail(GF_ERROR_CAPTURE, "hipStreamEndCapture: %s (%d): the capture was broken and is discarded",
                        gf__hip_error_name(r), (int)r);
    }
    call = "hipSetDevice";
    r = GF__HIP_CALL(SetDevice, (((gf__hip_device *)s->dev->native)->ordinal));   /* the exec's own queues */
    if (r == hipSuccess) { call = "hipGraphGetNodes"; r = GF__HIP_CALL(GraphGetNodes, (graph, NULL, &nodes)); }
    if (r == hipSuccess) { call = "hipGraphInstantiate"; r = GF__HIP_CALL(GraphInstantiate, (&exec, graph, NULL, NULL, 0)); }
    if (r != hipSuccess) {
        (void)GF__HIP_CALL(GraphDestroy, (graph));
        return gf__hip_fail(r, call);
    }
    g->native = 1;
    g->native_graph = graph;
    g->native_exec = exec;
    g->nodes = (int)nodes;
    return GF_OK;
}

/* What HIP's capture does not record goes into the captured graph by hand: a child graph node
   (a copy of child's hipGraph_t) or a host node, after the stream's current capture
   dependencies; the node becomes the stream's one dependency, so that later captured work
   follows it. */
static gf_result gf__hip_capture_append(gf_stream *s, gf_graph *child, const hipHostNodeParams *host) {
    hipStream_t hs = GF__HIPSTREAM(s);
    hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
    unsigned long long id = 0;
    hipGraph_t capturing = NULL;
    const hipGraphNode_t *deps = NULL;
    size_t ndeps = 0;
    hipGraphNode_t node = NULL;
    if (!gf__hip.StreamGetCaptureInfo_v2 || !gf__hip.StreamUpdateCaptureDependencies ||
        (child ? !gf__hip.GraphAddChildGraphNode : !gf__hip.GraphAddHostNode))
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: %s inside a capture needs hipStreamGetCaptureInfo_v2, %s and "
                        "hipStreamUpdateCaptureDependencies, which this runtime lacks",
                        child ? "launching a graph" : "a host callback (without hipLaunchHostFunc)",
                        child ? "hipGraphAddChildGraphNode" : "hipGraphAddHostNode");
    GF__HIP_CHECK(StreamGetCaptureInfo_v2, (hs, &status, &id, &capturing, &deps, &ndeps));
    if (status != hipStreamCaptureStatusActive)
        return gf__fail(GF_ERROR_CAPTURE, "hipStreamGetCaptureInfo_v2: the capture of stream '%s' is %s", s->label,
                        status == hipStreamCaptureStatusInvalidated ? "invalidated" : "not active");
    if (child) GF__HIP_CHECK(GraphAddChildGraphNode, (&node, capturing, deps, ndeps, (hipGraph_t)child->native_graph));
    else GF__HIP_CHECK(GraphAddHostNode, (&node, capturing, deps, ndeps, host));
    GF__HIP_CHECK(StreamUpdateCaptureDependencies, (hs, &node, 1, hipStreamSetCaptureDependencies));
    return GF_OK;
}

static gf_result gf__hip_graph_launch(gf_graph *g, gf_stream *s) {
    if (s->capture) return gf__hip_capture_append(s, g, NULL);   /* s->capture: the core's, under s->lock */
    GF__HIP_CHECK(GraphLaunch, ((hipGraphExec_t)g->native_exec, GF__HIPSTREAM(s)));
    return GF_OK;
}

static const char *gf__hip_update_why(hipGraphExecUpdateResult u) {
    switch (u) {
    case hipGraphExecUpdateErrorTopologyChanged:            return "the topology differs";
    case hipGraphExecUpdateErrorNodeTypeChanged:            return "a node's type differs";
    case hipGraphExecUpdateErrorFunctionChanged:
    case hipGraphExecUpdateErrorUnsupportedFunctionChange:  return "a kernel node's function changed in a way that cannot be updated";
    case hipGraphExecUpdateErrorParametersChanged:          return "a node's parameters changed in a way that cannot be updated";
    case hipGraphExecUpdateErrorNotSupported:               return "a node cannot be updated";
    default:                                                return "the graphs are not compatible";
    }
}

/* The target keeps its exec, which takes from's parameters, and a copy of from's graph, so
   that its hipGraph_t keeps describing what it runs (a launch inside a capture embeds it).
   The copy comes first: a failed copy or a refused update leaves the target's graph as it
   was. */
static gf_result gf__hip_graph_update(gf_graph *target, gf_graph *from) {
    hipGraphExecUpdateResult result = hipGraphExecUpdateSuccess;
    hipGraphNode_t failed = NULL;
    hipGraph_t copy = NULL;
    hipError_t r;
    GF__HIP_CHECK(GraphClone, (&copy, (hipGraph_t)from->native_graph));
    r = GF__HIP_CALL(GraphExecUpdate, ((hipGraphExec_t)target->native_exec, copy, &failed, &result));
    if (r != hipSuccess) {
        (void)GF__HIP_CALL(GraphDestroy, (copy));
        if (r == hipErrorGraphExecUpdateFailure)
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "hipGraphExecUpdate: %s (%d): %s (hipGraphExecUpdateResult %d); "
                            "the target graph is unchanged", gf__hip_error_name(r), (int)r, gf__hip_update_why(result), (int)result);
        return gf__hip_fail(r, "hipGraphExecUpdate");
    }
    (void)GF__HIP_CALL(GraphDestroy, ((hipGraph_t)target->native_graph));
    target->native_graph = copy;
    return GF_OK;
}

static void gf__hip_graph_destroy(gf_graph *g) {
    if (g->native_exec) (void)GF__HIP_CALL(GraphExecDestroy, ((hipGraphExec_t)g->native_exec));
    if (g->native_graph) (void)GF__HIP_CALL(GraphDestroy, ((hipGraph_t)g->native_graph));
    g->native_exec = NULL;
    g->native_graph = NULL;
}

#undef GF__HIP_CHECK
#undef GF__HIP_CHECK_RELAXED
#undef GF__HIP_RELAXED
#undef GF__HIP_RELAXED_VOID
#undef GF__HIP_USE
#undef GF__HIPSTREAM
#undef GF__HIPEVENT

/* ---- the backend table ------------------------------------------------------------------ */
static void gf__hip_fill_table(gf__backend *t) {
    (void)gf__hip_check_signatures;   /* compile-time only; never called */
    t->kind = GF_BACKEND_HIP;
    t->name = "hip";
    t->load = gf__hip_load;
    t->device_count = gf__hip_device_count;
    t->device_open = gf__hip_device_open;
    t->device_close = gf__hip_device_close;
    t->memory_info = gf__hip_memory_info;
    t->buffer_alloc = gf__hip_buffer_alloc;
    t->buffer_free = gf__hip_buffer_free;
    t->buffer_alloc_async = gf__hip_buffer_alloc_async;   /* refuses where the device has no pools */
    t->buffer_free_async = gf__hip_buffer_free_async;
    t->host_alloc = gf__hip_host_alloc;
    t->host_free = gf__hip_host_free;
    t->stream_create = gf__hip_stream_create;
    t->stream_destroy = gf__hip_stream_destroy;
    t->stream_synchronize = gf__hip_stream_synchronize;
    t->stream_query = gf__hip_stream_query;
    t->copy = gf__hip_copy;
    t->fill = gf__hip_fill;
    t->prefetch = gf__hip_prefetch;
    t->host_callback = gf__hip_host_callback;
    t->event_create = gf__hip_event_create;
    t->event_destroy = gf__hip_event_destroy;
    t->event_record = gf__hip_event_record;
    t->stream_wait_event = gf__hip_stream_wait_event;
    t->event_synchronize = gf__hip_event_synchronize;
    t->event_query = gf__hip_event_query;
    t->event_elapsed_ms = gf__hip_event_elapsed_ms;
    t->module_load = gf__hip_module_load;
    t->module_unload = gf__hip_module_unload;
    t->kernel_get = gf__hip_kernel_get;
    t->launch = gf__hip_launch;
    t->capture_begin = gf__hip_capture_begin;
    t->capture_end = gf__hip_capture_end;
    t->graph_launch = gf__hip_graph_launch;
    t->graph_update = gf__hip_graph_update;
    t->graph_destroy = gf__hip_graph_destroy;
    t->host_pinned = gf__hip_host_pinned;   /* the core stages pageable copies */
}
static gf__backend gf__hip_table;
static const gf__backend *gf__hip_backend(void) { return gf__backend_once(&gf__hip_table, gf__hip_fill_table); }

#endif /* GPUFLOW_IMPLEMENTATION && GPUFLOW_HIP */
