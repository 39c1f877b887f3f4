/* gpuflow_hip.h -- the HIP backend of gpuflow (AMD's HIP runtime, loaded at run time).

    In the one file that holds the implementation:
        #define GPUFLOW_IMPLEMENTATION
        #define GPUFLOW_HIP
        #include "gpuflow_hip.h"

        cc -std=c99 app.c -I/opt/rocm/include -o app -pthread -ldl

    hip/hip_runtime_api.h is used for types and constants only (this header defines
    __HIP_PLATFORM_AMD__ when nothing else has); libamdhip64 is never linked. A program built
    with this backend runs on a machine without an AMD GPU: GF_BACKEND_AUTO passes over HIP
    and gf_last_error() says why.

    HOW GPUFLOW MAPS ONTO HIP
    =========================
    - Loading: dlopen("libamdhip64.so"), else "libamdhip64.so.5" (LoadLibraryA("amdhip64.dll")
      on Windows); every entry point by its exported name through dlsym, with the prototype
      of the hip_runtime_api.h we were compiled against. HIP has no versioned lookup, so the
      plain symbol is the one whose signature the header declares (never an _spt variant).
      A few entry points are optional (older runtimes lack them): without them the feature
      they serve reports GF_ERROR_NOT_SUPPORTED. hipInit(0) once; a runtime that finds no
      device (hipGetDeviceCount: hipErrorNoDevice) loads, and reports that reason as
      GF_ERROR_NO_DEVICE instead of a count.
    - Device: HIP keeps a current device per thread. The calls that act on it (allocation,
      stream, event and module creation, memory info, graph instantiation) first make the
      gf_device's ordinal current with hipSetDevice; stream-ordered work goes through the
      stream, which carries its device. So gpuflow leaves the calling thread's current
      device set to the last gf_device it created something on.
    - gf_buffer: the device pointer in buf->ptr (hipMalloc, or hipMallocManaged for managed
      buffers); stream-ordered buffers come from the device's default memory pool
      (hipMallocFromPoolAsync / hipFreeAsync), which keeps up to a quarter of the device for
      reuse. Pinned host memory: hipHostMalloc(Portable). HIP performs a copy to or from
      pageable (malloc'd) memory synchronously, so such copies go through pinned staging
      buffers to stay asynchronous (see gf__hip_copy_staged).
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
    so on such a runtime a callback inside a capture is GF_ERROR_NOT_SUPPORTED. Either way
    the callback runs on a runtime thread, after all earlier work on the stream, and later
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
#ifndef __HIP_PLATFORM_AMD__
#  define __HIP_PLATFORM_AMD__   /* the header's AMD declarations, without the HIP compiler */
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

/* The runtime's entry points, filled once by gf__hip_load_runtime. */
typedef struct gf__hip_api {
    const char *(*GetErrorName)(hipError_t);
    hipError_t (*DriverGetVersion)(int *);
    hipError_t (*Init)(unsigned int);
    hipError_t (*GetDeviceCount)(int *);
    hipError_t (*SetDevice)(int);
    hipError_t (*DeviceGet)(hipDevice_t *, int);
    hipError_t (*DeviceGetName)(char *, int, hipDevice_t);
    hipError_t (*DeviceTotalMem)(size_t *, hipDevice_t);
    hipError_t (*DeviceGetAttribute)(int *, hipDeviceAttribute_t, int);
    hipError_t (*DeviceGetStreamPriorityRange)(int *, int *);
    hipError_t (*MemGetInfo)(size_t *, size_t *);
    hipError_t (*Malloc)(void **, size_t);
    hipError_t (*MallocManaged)(void **, size_t, unsigned int);
    hipError_t (*Free)(void *);
    hipError_t (*HostMalloc)(void **, size_t, unsigned int);
    hipError_t (*HostFree)(void *);
    hipError_t (*HostGetFlags)(unsigned int *, void *);
    hipError_t (*DeviceGetDefaultMemPool)(hipMemPool_t *, int);
    hipError_t (*MemPoolSetAttribute)(hipMemPool_t, hipMemPoolAttr, void *);
    hipError_t (*MemPoolTrimTo)(hipMemPool_t, size_t);
    hipError_t (*MallocFromPoolAsync)(void **, size_t, hipMemPool_t, hipStream_t);
    hipError_t (*FreeAsync)(void *, hipStream_t);
    hipError_t (*MemPrefetchAsync)(const void *, size_t, int, hipStream_t);
    hipError_t (*MemcpyHtoDAsync)(hipDeviceptr_t, void *, size_t, hipStream_t);
    hipError_t (*MemcpyDtoHAsync)(void *, hipDeviceptr_t, size_t, hipStream_t);
    hipError_t (*MemcpyDtoDAsync)(hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t);
    hipError_t (*MemsetD8Async)(hipDeviceptr_t, unsigned char, size_t, hipStream_t);
    hipError_t (*StreamCreateWithPriority)(hipStream_t *, unsigned int, int);
    hipError_t (*StreamDestroy)(hipStream_t);
    hipError_t (*StreamQuery)(hipStream_t);
    hipError_t (*StreamSynchronize)(hipStream_t);
    hipError_t (*StreamWaitEvent)(hipStream_t, hipEvent_t, unsigned int);
    hipError_t (*LaunchHostFunc)(hipStream_t, hipHostFn_t, void *);
    hipError_t (*StreamAddCallback)(hipStream_t, hipStreamCallback_t, void *, unsigned int);
    hipError_t (*EventCreateWithFlags)(hipEvent_t *, unsigned int);
    hipError_t (*EventDestroy)(hipEvent_t);
    hipError_t (*EventRecord)(hipEvent_t, hipStream_t);
    hipError_t (*EventQuery)(hipEvent_t);
    hipError_t (*EventSynchronize)(hipEvent_t);
    hipError_t (*EventElapsedTime)(float *, hipEvent_t, hipEvent_t);
    hipError_t (*ModuleLoadData)(hipModule_t *, const void *);
    hipError_t (*ModuleUnload)(hipModule_t);
    hipError_t (*ModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
    hipError_t (*ModuleLaunchKernel)(hipFunction_t, unsigned int, unsigned int, unsigned int,
                                     unsigned int, unsigned int, unsigned int, unsigned int,
                                     hipStream_t, void **, void **);
    hipError_t (*StreamBeginCapture)(hipStream_t, hipStreamCaptureMode);
    hipError_t (*StreamEndCapture)(hipStream_t, hipGraph_t *);
    hipError_t (*GraphGetNodes)(hipGraph_t, hipGraphNode_t *, size_t *);
    hipError_t (*GraphInstantiate)(hipGraphExec_t *, hipGraph_t, hipGraphNode_t *, char *, size_t);
    hipError_t (*GraphLaunch)(hipGraphExec_t, hipStream_t);
    hipError_t (*GraphExecUpdate)(hipGraphExec_t, hipGraph_t, hipGraphNode_t *, hipGraphExecUpdateResult *);
    hipError_t (*GraphExecDestroy)(hipGraphExec_t);
    hipError_t (*GraphDestroy)(hipGraph_t);
    hipError_t (*GraphClone)(hipGraph_t *, hipGraph_t);
    hipError_t (*StreamGetCaptureInfo)(hipStream_t, hipStreamCaptureStatus *, unsigned long long *,
                                       hipGraph_t *, const hipGraphNode_t **, size_t *);
    hipError_t (*GraphAddChildGraphNode)(hipGraphNode_t *, hipGraph_t, const hipGraphNode_t *, size_t, hipGraph_t);
    hipError_t (*StreamUpdateCaptureDependencies)(hipStream_t, hipGraphNode_t *, size_t, unsigned int);
    hipError_t (*ThreadExchangeStreamCaptureMode)(hipStreamCaptureMode *);
} gf__hip_api;

/* Exported names; an optional entry may be missing (its slot stays NULL). */
typedef struct gf__hip_entry { const char *name; size_t offset; int optional; } gf__hip_entry;
#define GF__HIP_ENTRY(field, optional) { "hip" #field, offsetof(gf__hip_api, field), optional }
static const gf__hip_entry gf__hip_entries[] = {
    GF__HIP_ENTRY(GetErrorName, 0),
    GF__HIP_ENTRY(DriverGetVersion, 0),
    GF__HIP_ENTRY(Init, 0),
    GF__HIP_ENTRY(GetDeviceCount, 0),
    GF__HIP_ENTRY(SetDevice, 0),
    GF__HIP_ENTRY(DeviceGet, 0),
    GF__HIP_ENTRY(DeviceGetName, 0),
    GF__HIP_ENTRY(DeviceTotalMem, 0),
    GF__HIP_ENTRY(DeviceGetAttribute, 0),
    GF__HIP_ENTRY(DeviceGetStreamPriorityRange, 0),
    GF__HIP_ENTRY(MemGetInfo, 0),
    GF__HIP_ENTRY(Malloc, 0),
    GF__HIP_ENTRY(MallocManaged, 0),
    GF__HIP_ENTRY(Free, 0),
    GF__HIP_ENTRY(HostMalloc, 0),
    GF__HIP_ENTRY(HostFree, 0),
    GF__HIP_ENTRY(HostGetFlags, 0),
    GF__HIP_ENTRY(DeviceGetDefaultMemPool, 1),     /* stream-ordered allocation: HIP 5.2+ */
    GF__HIP_ENTRY(MemPoolSetAttribute, 1),
    GF__HIP_ENTRY(MemPoolTrimTo, 1),
    GF__HIP_ENTRY(MallocFromPoolAsync, 1),
    GF__HIP_ENTRY(FreeAsync, 1),
    GF__HIP_ENTRY(MemPrefetchAsync, 0),
    GF__HIP_ENTRY(MemcpyHtoDAsync, 0),
    GF__HIP_ENTRY(MemcpyDtoHAsync, 0),
    GF__HIP_ENTRY(MemcpyDtoDAsync, 0),
    GF__HIP_ENTRY(MemsetD8Async, 0),
    GF__HIP_ENTRY(StreamCreateWithPriority, 0),
    GF__HIP_ENTRY(StreamDestroy, 0),
    GF__HIP_ENTRY(StreamQuery, 0),
    GF__HIP_ENTRY(StreamSynchronize, 0),
    GF__HIP_ENTRY(StreamWaitEvent, 0),
    GF__HIP_ENTRY(LaunchHostFunc, 1),              /* declared by HIP 5.2, not exported */
    GF__HIP_ENTRY(StreamAddCallback, 0),
    GF__HIP_ENTRY(EventCreateWithFlags, 0),
    GF__HIP_ENTRY(EventDestroy, 0),
    GF__HIP_ENTRY(EventRecord, 0),
    GF__HIP_ENTRY(EventQuery, 0),
    GF__HIP_ENTRY(EventSynchronize, 0),
    GF__HIP_ENTRY(EventElapsedTime, 0),
    GF__HIP_ENTRY(ModuleLoadData, 0),
    GF__HIP_ENTRY(ModuleUnload, 0),
    GF__HIP_ENTRY(ModuleGetFunction, 0),
    GF__HIP_ENTRY(ModuleLaunchKernel, 0),
    GF__HIP_ENTRY(StreamBeginCapture, 0),
    GF__HIP_ENTRY(StreamEndCapture, 0),
    GF__HIP_ENTRY(GraphGetNodes, 0),
    GF__HIP_ENTRY(GraphInstantiate, 0),             /* the 5-argument form the header declares */
    GF__HIP_ENTRY(GraphLaunch, 0),
    GF__HIP_ENTRY(GraphExecUpdate, 0),
    GF__HIP_ENTRY(GraphExecDestroy, 0),
    GF__HIP_ENTRY(GraphDestroy, 0),
    GF__HIP_ENTRY(GraphClone, 0),
    { "hipStreamGetCaptureInfo_v2", offsetof(gf__hip_api, StreamGetCaptureInfo), 1 },  /* graph in a capture */
    GF__HIP_ENTRY(GraphAddChildGraphNode, 1),
    GF__HIP_ENTRY(StreamUpdateCaptureDependencies, 1),
    GF__HIP_ENTRY(ThreadExchangeStreamCaptureMode, 0)
};
#undef GF__HIP_ENTRY

static gf__hip_api gf__hip;           /* read-only once gf__hip_runtime has loaded */
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
    gf__mutex stage_lock;             /* idle, idle_bytes: host functions take it too */
    struct gf__hip_stage *idle;
    size_t idle_bytes;
} gf__hip_device;

/* ---- errors ----------------------------------------------------------------------------- */
static const char *gf__hip_error_name(hipError_t r) {
    const char *name = gf__hip.GetErrorName(r);
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
#define GF__HIP_CHECK(call, name) do { hipError_t gf__r_ = (call); \
        if (gf__r_ != hipSuccess) return gf__hip_fail(gf__r_, name); } while (0)

/* r = call, made with this thread in RELAXED capture mode. While any stream captures in
   GLOBAL mode, HIP refuses (and invalidates that capture on) every call that could
   synchronize or allocate, also for streams and memory outside the capture. The core
   polices captures itself (no synchronizing a capturing stream, no synchronous copy into
   a buffer a capture uses), so its own calls go through relaxed; GLOBAL still guards
   against other code's HIP calls. */
#define GF__HIP_RELAXED(r, call) do { hipStreamCaptureMode gf__mode_ = hipStreamCaptureModeRelaxed; \
        gf__hip.ThreadExchangeStreamCaptureMode(&gf__mode_); (r) = (call); \
        gf__hip.ThreadExchangeStreamCaptureMode(&gf__mode_); } while (0)
#define GF__HIP_RELAXED_VOID(call) do { hipError_t gf__v_; GF__HIP_RELAXED(gf__v_, call); (void)gf__v_; } while (0)
#define GF__HIP_CHECK_RELAXED(call, name) do { hipError_t gf__r_; GF__HIP_RELAXED(gf__r_, call); \
        if (gf__r_ != hipSuccess) return gf__hip_fail(gf__r_, name); } while (0)

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
    if (gf__hip.DriverGetVersion(&version) != hipSuccess) version = 0;
    r = gf__hip.Init(0);
    rc = gf__hip.GetDeviceCount(&count);
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
    hipError_t r = gf__hip.SetDevice(((gf__hip_device *)dev->native)->ordinal);
    return r == hipSuccess ? GF_OK : gf__hip_fail(r, "hipSetDevice");
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
    GF__HIP_CHECK(gf__hip.GetDeviceCount(count), "hipGetDeviceCount");
    if (*count == 0) return gf__fail(GF_ERROR_NO_DEVICE, "HIP: the runtime reports no HIP device (hipGetDeviceCount: 0)");
    return GF_OK;
}

static int gf__hip_attr(int ordinal, hipDeviceAttribute_t a) {
    int v = 0;
    if (gf__hip.DeviceGetAttribute(&v, a, ordinal) != hipSuccess) v = 0;
    return v;
}

static gf_result gf__hip_device_open(gf_device *dev, int index) {
    gf__hip_device *d = (gf__hip_device *)gf__alloc(sizeof *d);
    gf_device_info *info = &dev->info;
    size_t total = 0;
    const char *call;
    hipError_t r;
    if (!d) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory opening device %d", index);
    d->ordinal = index;
    call = "hipSetDevice";
    if ((r = gf__hip.SetDevice(index)) != hipSuccess) goto fail;
    call = "hipDeviceGet";
    if ((r = gf__hip.DeviceGet(&d->dev, index)) != hipSuccess) goto fail;
    call = "hipDeviceGetName";
    if ((r = gf__hip.DeviceGetName(info->name, (int)sizeof info->name, d->dev)) != hipSuccess) goto fail;
    call = "hipDeviceTotalMem";
    if ((r = gf__hip.DeviceTotalMem(&total, d->dev)) != hipSuccess) goto fail;
    call = "hipDeviceGetStreamPriorityRange";
    if ((r = gf__hip.DeviceGetStreamPriorityRange(&d->prio_least, &d->prio_greatest)) != hipSuccess) goto fail;

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
        call = "hipDeviceGetDefaultMemPool";
        if ((r = gf__hip.DeviceGetDefaultMemPool(&d->pool, index)) != hipSuccess) goto fail;
        call = "hipMemPoolSetAttribute";
        if ((r = gf__hip.MemPoolSetAttribute(d->pool, hipMemPoolAttrReleaseThreshold, &keep)) != hipSuccess) goto fail;
    }
    gf__mutex_init(&d->stage_lock);
    dev->native = d;
    return GF_OK;
fail:
    GPUFLOW_FREE(d);
    return gf__hip_fail(r, call);
}

static void gf__hip_stage_free_list(struct gf__hip_stage *st);

/* The core has drained every stream first, so no host function still holds a stage. */
static void gf__hip_device_close(gf_device *dev) {
    gf__hip_device *d = (gf__hip_device *)dev->native;
    if (!d) return;
    if (d->pool) gf__hip.MemPoolTrimTo(d->pool, 0);
    gf__hip_stage_free_list(d->idle);
    gf__mutex_destroy(&d->stage_lock);
    GPUFLOW_FREE(d);
    dev->native = NULL;
}

static gf_result gf__hip_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes) {
    GF__HIP_USE(dev);
    GF__HIP_CHECK(gf__hip.MemGetInfo(free_bytes, total_bytes), "hipMemGetInfo");
    return GF_OK;
}

/* ---- memory ----------------------------------------------------------------------------- */
static gf_result gf__hip_buffer_alloc(gf_buffer *buf) {
    void *p = NULL;
    GF__HIP_USE(buf->dev);
    if (buf->managed)
        GF__HIP_CHECK_RELAXED(gf__hip.MallocManaged(&p, buf->size, hipMemAttachGlobal), "hipMallocManaged");
    else
        GF__HIP_CHECK_RELAXED(gf__hip.Malloc(&p, buf->size), "hipMalloc");
    buf->ptr = p;
    return GF_OK;
}

static void gf__hip_buffer_free(gf_buffer *buf) {
    if (buf->ptr) GF__HIP_RELAXED_VOID(gf__hip.Free(buf->ptr));
    buf->ptr = NULL;
}

static gf_result gf__hip_buffer_alloc_async(gf_stream *s, gf_buffer *buf) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    void *p = NULL;
    if (!d->pool)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: device %s or this runtime has no memory pools (stream-ordered allocation)",
                        s->dev->info.name);
    GF__HIP_CHECK(gf__hip.MallocFromPoolAsync(&p, buf->size, d->pool, GF__HIPSTREAM(s)), "hipMallocFromPoolAsync");
    buf->ptr = p;
    return GF_OK;
}

static gf_result gf__hip_buffer_free_async(gf_stream *s, gf_buffer *buf) {
    GF__HIP_CHECK(gf__hip.FreeAsync(buf->ptr, GF__HIPSTREAM(s)), "hipFreeAsync");
    buf->ptr = NULL;
    return GF_OK;
}

static gf_result gf__hip_host_alloc(gf_device *dev, size_t bytes, void **out) {
    GF__HIP_USE(dev);
    GF__HIP_CHECK_RELAXED(gf__hip.HostMalloc(out, bytes, hipHostMallocPortable), "hipHostMalloc");
    return GF_OK;
}

static void gf__hip_host_free(gf_device *dev, void *ptr) {
    (void)dev;
    GF__HIP_RELAXED_VOID(gf__hip.HostFree(ptr));
}

/* ---- host functions on a stream ------------------------------------------------------------ */
/* hipStreamAddCallback's callback gets the stream and its status too: a small block carries
   the function and its argument, and is freed once the function has run. */
typedef struct gf__hip_thunk { void (*fn)(void *); void *user; } gf__hip_thunk;

static void gf__hip_thunk_run(hipStream_t stream, hipError_t status, void *p) {
    gf__hip_thunk t = *(gf__hip_thunk *)p;
    (void)stream; (void)status;
    GPUFLOW_FREE(p);
    t.fn(t.user);
}

/* fn(user) after all earlier work on s; later work on s waits until it returns. */
static gf_result gf__hip_enqueue_host_fn(gf_stream *s, void (*fn)(void *), void *user) {
    gf__hip_thunk *t;
    hipError_t r;
    if (gf__hip.LaunchHostFunc) {
        GF__HIP_CHECK(gf__hip.LaunchHostFunc(GF__HIPSTREAM(s), fn, user), "hipLaunchHostFunc");
        return GF_OK;
    }
    /* s->capture: the core's, under s->lock. HIP would refuse the callback and invalidate
       the capture with it; refusing here keeps the capture going. */
    if (s->capture)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: this runtime does not export hipLaunchHostFunc, and "
                        "hipStreamAddCallback cannot be captured: no host callback inside a capture");
    if (!(t = (gf__hip_thunk *)GPUFLOW_MALLOC(sizeof *t)))
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory for a stream callback");
    t->fn = fn;
    t->user = user;
    r = gf__hip.StreamAddCallback(GF__HIPSTREAM(s), gf__hip_thunk_run, t, 0);
    if (r != hipSuccess) {
        GPUFLOW_FREE(t);
        return gf__hip_fail(r, "hipStreamAddCallback");
    }
    return GF_OK;
}

/* ---- pageable host memory: staged copies -------------------------------------------------- */
/* HIP copies to or from pageable (malloc'd) memory synchronously: the call returns only when
   the copy is done, so a D2H waits for all earlier work on the stream. gpuflow's copies are
   asynchronous on every backend, so outside captures such a copy goes through pinned
   staging memory. An H2D copies the source into the stage before returning (so the caller
   may reuse its memory at once) and the device reads the stage; a D2H lands in the stage,
   and a host function copies it out to the destination in stream order, before any later
   work on the stream runs. Idle stages are kept per device for reuse; host functions only
   copy bytes and take a mutex. Inside a capture the copy is recorded directly: the graph
   node does not block the capturing thread. */
typedef struct gf__hip_stage {
    struct gf__hip_stage *next;
    gf__hip_device *home;
    void *pinned; size_t cap;
    void *out; size_t bytes;                     /* D2H: the caller's memory, filled in stream order */
} gf__hip_stage;
#define GF__HIP_STAGE_IDLE_MAX ((size_t)64 << 20)   /* idle staging memory kept for reuse */

/* Memory HIP already knows as host-pinned (or its own) copies asynchronously as it is. */
static int gf__hip_pinned(void *p) {
    unsigned int flags = 0;
    hipError_t r;
    GF__HIP_RELAXED(r, gf__hip.HostGetFlags(&flags, p));
    return r == hipSuccess;
}

/* Stage sizes: doubling from 64 KiB up to 32 MiB, then whole 4 MiB steps, so that stages
   of a few sizes serve most copies and an idle one of the same size can be taken as is. */
static size_t gf__hip_stage_size(size_t bytes) {
    size_t step = (size_t)4 << 20, size = (size_t)64 << 10;
    if (bytes > ((size_t)32 << 20)) return (bytes + step - 1) / step * step;
    while (size < bytes) size *= 2;
    return size;
}

static void gf__hip_stage_free_list(gf__hip_stage *st) {   /* never from a host function */
    while (st) {
        gf__hip_stage *next = st->next;
        GF__HIP_RELAXED_VOID(gf__hip.HostFree(st->pinned));
        GPUFLOW_FREE(st);
        st = next;
    }
}

static gf_result gf__hip_stage_take(gf_stream *s, size_t bytes, gf__hip_stage **out) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    gf__hip_stage **link, *st = NULL, *surplus = NULL;
    size_t size = gf__hip_stage_size(bytes);
    gf_result e;
    hipError_t r;
    gf__lock(&d->stage_lock);
    for (link = &d->idle; *link; link = &(*link)->next)
        if ((*link)->cap == size) {
            st = *link;
            *link = st->next;
            d->idle_bytes -= st->cap;
            break;
        }
    while (d->idle && d->idle_bytes > GF__HIP_STAGE_IDLE_MAX) {   /* over the keep: shed from the front */
        gf__hip_stage *x = d->idle;
        d->idle = x->next;
        d->idle_bytes -= x->cap;
        x->next = surplus;
        surplus = x;
    }
    gf__unlock(&d->stage_lock);
    gf__hip_stage_free_list(surplus);
    if (!st) {
        if (!(st = (gf__hip_stage *)gf__alloc(sizeof *st)))
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory for a staging buffer");
        if ((e = gf__hip_use(s->dev)) != GF_OK) { GPUFLOW_FREE(st); return e; }
        GF__HIP_RELAXED(r, gf__hip.HostMalloc(&st->pinned, size, hipHostMallocPortable));
        if (r != hipSuccess) { GPUFLOW_FREE(st); return gf__hip_fail(r, "hipHostMalloc (staging for pageable memory)"); }
        st->home = d;
        st->cap = size;
    }
    *out = st;
    return GF_OK;
}

/* A host function (and the error paths): no HIP calls. */
static void gf__hip_stage_back(void *p) {
    gf__hip_stage *st = (gf__hip_stage *)p;
    gf__hip_device *d = st->home;
    if (st->out) memcpy(st->out, st->pinned, st->bytes);
    gf__lock(&d->stage_lock);
    st->next = d->idle;
    d->idle = st;
    d->idle_bytes += st->cap;
    gf__unlock(&d->stage_lock);
}

static gf_result gf__hip_copy_staged(gf_stream *s, const gf__copy *c) {
    hipStream_t hs = GF__HIPSTREAM(s);
    gf__hip_stage *st = NULL;
    const char *call;
    gf_result e;
    hipError_t r;
    if ((e = gf__hip_stage_take(s, c->bytes, &st)) != GF_OK) return e;
    st->bytes = c->bytes;
    if (c->kind == GF__COPY_H2D) {
        memcpy(st->pinned, c->host, c->bytes);
        st->out = NULL;
        call = "hipMemcpyHtoDAsync";
        r = gf__hip.MemcpyHtoDAsync(gf__hip_at(c->dst, c->dst_offset), st->pinned, c->bytes, hs);
    } else {
        st->out = c->host;
        call = "hipMemcpyDtoHAsync";
        r = gf__hip.MemcpyDtoHAsync(st->pinned, gf__hip_at(c->src, c->src_offset), c->bytes, hs);
    }
    if (r != hipSuccess) {
        st->out = NULL;
        gf__hip_stage_back(st);
        return gf__hip_fail(r, call);
    }
    if ((e = gf__hip_enqueue_host_fn(s, gf__hip_stage_back, st)) == GF_OK) return GF_OK;
    /* The copy is queued but nothing will finish it: wait for the stream and finish it here.
       If even that fails the device may still write the stage, so it is left to it. */
    GF__HIP_RELAXED(r, gf__hip.StreamSynchronize(hs));
    if (r != hipSuccess) return e;
    gf__hip_stage_back(st);
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
    GF__HIP_CHECK(gf__hip.StreamCreateWithPriority(&hs, hipStreamNonBlocking, prio), "hipStreamCreateWithPriority");
    s->native = hs;
    return GF_OK;
}

static void gf__hip_stream_destroy(gf_stream *s) {
    if (s->native) GF__HIP_RELAXED_VOID(gf__hip.StreamDestroy(GF__HIPSTREAM(s)));
    s->native = NULL;
}

static gf_result gf__hip_stream_synchronize(gf_stream *s) {
    GF__HIP_CHECK_RELAXED(gf__hip.StreamSynchronize(GF__HIPSTREAM(s)), "hipStreamSynchronize");
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
    GF__HIP_RELAXED(r, gf__hip.StreamQuery(GF__HIPSTREAM(s)));
    return gf__hip_ready(r, "hipStreamQuery");
}

static gf_result gf__hip_copy(gf_stream *s, const gf__copy *c) {
    hipStream_t hs = GF__HIPSTREAM(s);
    if (c->kind != GF__COPY_D2D && !s->capture && !gf__hip_pinned(c->host)) return gf__hip_copy_staged(s, c);
    switch (c->kind) {
    case GF__COPY_H2D:
        GF__HIP_CHECK(gf__hip.MemcpyHtoDAsync(gf__hip_at(c->dst, c->dst_offset), c->host, c->bytes, hs),
                      "hipMemcpyHtoDAsync");
        break;
    case GF__COPY_D2H:
        GF__HIP_CHECK(gf__hip.MemcpyDtoHAsync(c->host, gf__hip_at(c->src, c->src_offset), c->bytes, hs),
                      "hipMemcpyDtoHAsync");
        break;
    default:
        GF__HIP_CHECK(gf__hip.MemcpyDtoDAsync(gf__hip_at(c->dst, c->dst_offset), gf__hip_at(c->src, c->src_offset),
                                              c->bytes, hs),
                      "hipMemcpyDtoDAsync");
        break;
    }
    return GF_OK;
}

static gf_result gf__hip_fill(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    GF__HIP_CHECK(gf__hip.MemsetD8Async(gf__hip_at(buf, offset), value, bytes, GF__HIPSTREAM(s)), "hipMemsetD8Async");
    return GF_OK;
}

static gf_result gf__hip_prefetch(gf_stream *s, gf_buffer *buf, int to_device) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    /* Without concurrent managed access (XNACK off) the runtime migrates managed memory
       itself around each launch: the hint has nothing left to do. */
    if (!d->concurrent_managed) return GF_OK;
    GF__HIP_CHECK(gf__hip.MemPrefetchAsync(buf->ptr, buf->size, to_device ? d->ordinal : hipCpuDeviceId, GF__HIPSTREAM(s)),
                  "hipMemPrefetchAsync");
    return GF_OK;
}

static gf_result gf__hip_host_callback(gf_stream *s, void (*fn)(void *user), void *user) {
    return gf__hip_enqueue_host_fn(s, fn, user);
}

/* ---- events ----------------------------------------------------------------------------- */
static gf_result gf__hip_event_create(gf_event *ev) {
    hipEvent_t e = NULL;
    GF__HIP_USE(ev->dev);
    GF__HIP_CHECK(gf__hip.EventCreateWithFlags(&e, (ev->flags & GF_EVENT_TIMING) ? hipEventDefault : hipEventDisableTiming),
                  "hipEventCreateWithFlags");
    ev->native = e;
    return GF_OK;
}

static void gf__hip_event_destroy(gf_event *ev) {
    if (ev->native) gf__hip.EventDestroy(GF__HIPEVENT(ev));
    ev->native = NULL;
}

static gf_result gf__hip_event_record(gf_event *ev, gf_stream *s) {
    GF__HIP_CHECK(gf__hip.EventRecord(GF__HIPEVENT(ev), GF__HIPSTREAM(s)), "hipEventRecord");
    return GF_OK;
}

static gf_result gf__hip_stream_wait_event(gf_stream *s, gf_event *ev) {
    GF__HIP_CHECK(gf__hip.StreamWaitEvent(GF__HIPSTREAM(s), GF__HIPEVENT(ev), 0), "hipStreamWaitEvent");
    return GF_OK;
}

static gf_result gf__hip_event_synchronize(gf_event *ev) {
    GF__HIP_CHECK_RELAXED(gf__hip.EventSynchronize(GF__HIPEVENT(ev)), "hipEventSynchronize");
    return GF_OK;
}

static gf_result gf__hip_event_query(gf_event *ev) {
    hipError_t r;
    GF__HIP_RELAXED(r, gf__hip.EventQuery(GF__HIPEVENT(ev)));
    return gf__hip_ready(r, "hipEventQuery");
}

static gf_result gf__hip_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    return gf__hip_ready(gf__hip.EventElapsedTime(ms, GF__HIPEVENT(start), GF__HIPEVENT(end)), "hipEventElapsedTime");
}

/* ---- modules and kernels ---------------------------------------------------------------- */
static gf_result gf__hip_module_load(gf_module *mod, const gf_module_desc *desc) {
    hipModule_t m = NULL;
    hipError_t r;
    if (!desc->hip_code || !desc->hip_code_size)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: the module description has no hip_code (an AMD GPU code object)");
    GF__HIP_USE(mod->dev);
    GF__HIP_RELAXED(r, gf__hip.ModuleLoadData(&m, desc->hip_code));
    if (r == hipErrorOutOfMemory) return gf__hip_fail(r, "hipModuleLoadData");
    if (r != hipSuccess)
        return gf__fail(GF_ERROR_BUILD, "hipModuleLoadData: %s (%d): %s", gf__hip_error_name(r), (int)r,
                        r == hipErrorNoBinaryForGpu ? "hip_code holds no code for this GPU's architecture"
                                                    : "hip_code is not a code object this runtime can load");
    mod->native = m;
    return GF_OK;
}

static void gf__hip_module_unload(gf_module *mod) {
    if (mod->native) GF__HIP_RELAXED_VOID(gf__hip.ModuleUnload((hipModule_t)mod->native));
    mod->native = NULL;
}

static gf_result gf__hip_kernel_get(gf_kernel *k) {
    hipFunction_t f = NULL;
    hipError_t r;
    GF__HIP_USE(k->mod->dev);
    r = gf__hip.ModuleGetFunction(&f, (hipModule_t)k->mod->native, k->name);
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
        params = (void **)GPUFLOW_MALLOC((size_t)count * sizeof *params);
        if (!params) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory for %d kernel arguments", count);
    }
    for (i = 0; i < count; i++)
        params[i] = args[i].buffer ? (void *)&args[i].buffer->ptr : (void *)args[i].value;
    r = gf__hip.ModuleLaunchKernel((hipFunction_t)k->native, dims->grid[0], dims->grid[1], dims->grid[2],
                                   dims->block[0], dims->block[1], dims->block[2], (unsigned int)dims->shared_bytes,
                                   GF__HIPSTREAM(s), count ? params : NULL, NULL);
    if (params != stack) GPUFLOW_FREE(params);
    if (r != hipSuccess) return gf__hip_fail(r, "hipModuleLaunchKernel");
    return GF_OK;
}

/* ---- graphs ----------------------------------------------------------------------------- */
static gf_result gf__hip_capture_begin(gf_stream *s, gf_capture_mode mode) {
    hipStreamCaptureMode m = mode == GF_CAPTURE_THREAD_LOCAL ? hipStreamCaptureModeThreadLocal
                           : mode == GF_CAPTURE_RELAXED      ? hipStreamCaptureModeRelaxed
                                                             : hipStreamCaptureModeGlobal;
    GF__HIP_CHECK(gf__hip.StreamBeginCapture(GF__HIPSTREAM(s), m), "hipStreamBeginCapture");
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
    r = gf__hip.StreamEndCapture(GF__HIPSTREAM(s), &graph);
    if (r != hipSuccess) {
        if (graph) gf__hip.GraphDestroy(graph);
        return gf__fail(GF_ERROR_CAPTURE, "hipStreamEndCapture: %s (%d): the capture was broken and is discarded",
                        gf__hip_error_name(r), (int)r);
    }
    call = "hipSetDevice";
    r = gf__hip.SetDevice(((gf__hip_device *)s->dev->native)->ordinal);   /* the exec's own queues */
    if (r == hipSuccess) { call = "hipGraphGetNodes"; r = gf__hip.GraphGetNodes(graph, NULL, &nodes); }
    if (r == hipSuccess) { call = "hipGraphInstantiate"; r = gf__hip.GraphInstantiate(&exec, graph, NULL, NULL, 0); }
    if (r != hipSuccess) {
        gf__hip.GraphDestroy(graph);
        return gf__hip_fail(r, call);
    }
    g->native = 1;
    g->native_graph = graph;
    g->native_exec = exec;
    g->nodes = (int)nodes;
    return GF_OK;
}

/* Inside a capture the graph goes in as a child graph node (a copy of g's hipGraph_t)
   after the stream's current capture dependencies, and becomes the stream's one
   dependency, so that later captured work follows it. */
static gf_result gf__hip_graph_add_child(gf_graph *g, gf_stream *s) {
    hipStream_t hs = GF__HIPSTREAM(s);
    hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
    unsigned long long id = 0;
    hipGraph_t capturing = NULL;
    const hipGraphNode_t *deps = NULL;
    size_t ndeps = 0;
    hipGraphNode_t node = NULL;
    if (!gf__hip.StreamGetCaptureInfo || !gf__hip.GraphAddChildGraphNode || !gf__hip.StreamUpdateCaptureDependencies)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: launching a graph inside a capture needs hipStreamGetCaptureInfo_v2, "
                        "hipGraphAddChildGraphNode and hipStreamUpdateCaptureDependencies, which this runtime lacks");
    GF__HIP_CHECK(gf__hip.StreamGetCaptureInfo(hs, &status, &id, &capturing, &deps, &ndeps), "hipStreamGetCaptureInfo_v2");
    if (status != hipStreamCaptureStatusActive)
        return gf__fail(GF_ERROR_CAPTURE, "hipStreamGetCaptureInfo_v2: the capture of stream '%s' is %s", s->label,
                        status == hipStreamCaptureStatusInvalidated ? "invalidated" : "not active");
    GF__HIP_CHECK(gf__hip.GraphAddChildGraphNode(&node, capturing, deps, ndeps, (hipGraph_t)g->native_graph),
                  "hipGraphAddChildGraphNode");
    GF__HIP_CHECK(gf__hip.StreamUpdateCaptureDependencies(hs, &node, 1, hipStreamSetCaptureDependencies),
                  "hipStreamUpdateCaptureDependencies");
    return GF_OK;
}

static gf_result gf__hip_graph_launch(gf_graph *g, gf_stream *s) {
    if (s->capture) return gf__hip_graph_add_child(g, s);   /* s->capture: the core's, under s->lock */
    GF__HIP_CHECK(gf__hip.GraphLaunch((hipGraphExec_t)g->native_exec, GF__HIPSTREAM(s)), "hipGraphLaunch");
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
    GF__HIP_CHECK(gf__hip.GraphClone(&copy, (hipGraph_t)from->native_graph), "hipGraphClone");
    r = gf__hip.GraphExecUpdate((hipGraphExec_t)target->native_exec, copy, &failed, &result);
    if (r != hipSuccess) {
        gf__hip.GraphDestroy(copy);
        if (r == hipErrorGraphExecUpdateFailure)
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "hipGraphExecUpdate: %s (%d): %s (hipGraphExecUpdateResult %d); "
                            "the target graph is unchanged", gf__hip_error_name(r), (int)r, gf__hip_update_why(result), (int)result);
        return gf__hip_fail(r, "hipGraphExecUpdate");
    }
    gf__hip.GraphDestroy((hipGraph_t)target->native_graph);
    target->native_graph = copy;
    return GF_OK;
}

static void gf__hip_graph_destroy(gf_graph *g) {
    if (g->native_exec) gf__hip.GraphExecDestroy((hipGraphExec_t)g->native_exec);
    if (g->native_graph) gf__hip.GraphDestroy((hipGraph_t)g->native_graph);
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

static const gf__backend gf__hip_table = {
    GF_BACKEND_HIP, "hip",
    gf__hip_load, gf__hip_device_count, gf__hip_device_open, gf__hip_device_close, gf__hip_memory_info,
    gf__hip_buffer_alloc, gf__hip_buffer_free, gf__hip_buffer_alloc_async, gf__hip_buffer_free_async,
    gf__hip_host_alloc, gf__hip_host_free,
    gf__hip_stream_create, gf__hip_stream_destroy, gf__hip_stream_synchronize, gf__hip_stream_query,
    gf__hip_copy, gf__hip_fill, gf__hip_prefetch, gf__hip_host_callback,
    gf__hip_event_create, gf__hip_event_destroy, gf__hip_event_record, gf__hip_stream_wait_event,
    gf__hip_event_synchronize, gf__hip_event_query, gf__hip_event_elapsed_ms,
    gf__hip_module_load, gf__hip_module_unload, gf__hip_kernel_get, gf__hip_launch,
    gf__hip_capture_begin, gf__hip_capture_end, gf__hip_graph_launch, gf__hip_graph_update,
    gf__hip_graph_destroy,
    NULL
};

static const gf__backend *gf__hip_backend(void) { return &gf__hip_table; }

#endif /* GPUFLOW_IMPLEMENTATION && GPUFLOW_HIP */
