/* gpuflow_cuda.h -- the CUDA backend of gpuflow (driver API, loaded at run time).

    In the one file that holds the implementation:
        #define GPUFLOW_IMPLEMENTATION
        #define GPUFLOW_CUDA
        #include "gpuflow_cuda.h"

        cc -std=c99 app.c -I/usr/local/cuda/include -o app -pthread -ldl

    Optional: #define GPUFLOW_NVTX as well to name each stream by its label in Nsight Systems
    (uses the header-only NVTX 3 that ships in the CUDA toolkit's include directory).

    cuda.h is used for types and constants only; libcuda is never linked. A program built
    with this backend runs on a machine without a GPU: GF_BACKEND_AUTO passes over CUDA and
    gf_last_error() says why.

    HOW GPUFLOW MAPS ONTO CUDA
    ==========================
    - Loading: dlopen("libcuda.so.1") (LoadLibraryA("nvcuda.dll") on Windows), then every
      entry point through cuGetProcAddress_v2, asked for the CUDA_VERSION of the cuda.h we
      were compiled against: the driver hands out the variant (_v2, _v3, ...) that cuda.h's
      macros name, the ABI we compiled against, also on newer drivers. Where a macro names
      another function (cuGraphInstantiate -> cuGraphInstantiateWithFlags) the table asks
      for that function by its own name. A driver older than CUDA 12.0 has no
      cuGetProcAddress_v2 and is refused. cuInit(0) once.
    - Device: the device's primary context, retained while the gf_device is open. Every
      backend entry makes it current on the calling thread; a thread-local cache makes that
      one compare when it already is (see gf__cuda_enter for the one rule it implies).
    - gf_buffer: CUdeviceptr in buf->addr (cuMemAlloc, or cuMemAllocManaged for managed
      buffers); stream-ordered buffers come from the device's default memory pool, which
      keeps freed memory for reuse up to a release threshold of a quarter of the device.
      Pinned host memory: cuMemHostAlloc(PORTABLE). Copies to or from pageable memory go
      through pinned staging buffers, so that they stay asynchronous (see
      gf__cuda_copy_staged).
    - gf_stream: a CUstream created CU_STREAM_NON_BLOCKING (it never synchronizes with the
      legacy default stream); HIGH / NORMAL / LOW map onto the context's priority range
      (greatest, middle, least).
    - gf_event: a CUevent, CU_EVENT_DISABLE_TIMING unless GF_EVENT_TIMING was asked for.
    - gf_module / gf_kernel: CUmodule from cubin or PTX (JIT, its error log in the message),
      CUfunction. A launch passes args[i].value, or for a buffer a pointer to its CUdeviceptr,
      as cuLaunchKernel's kernelParams. build_options do not apply (the PTX JIT takes none).
    - gf_graph: native stream capture (cuStreamBeginCapture / EndCapture), instantiated once,
      replayed with one cuGraphLaunch; gf_graph_update is cuGraphExecUpdate. A graph launched
      on a capturing stream (which CUDA refuses) is embedded as a child graph node instead.
      gpuflow's own synchronizing and allocating calls run in RELAXED capture mode, so a
      GF_CAPTURE_GLOBAL capture does not make them fail (see GF__CUDA_RELAXED).

    CALLBACKS
    =========
    Host callbacks go through cuLaunchHostFunc. They run on a driver thread, and CUDA forbids
    any CUDA call from them (it may fail or deadlock). So a callback, the core's bookkeeping
    included, may touch host memory, set flags and signal other threads, but must not call
    gpuflow functions that reach the driver (enqueue, synchronize, query, allocate, free).
    Later work on the stream waits until the callback returns, and the driver may run the
    callbacks of all streams on one thread: keep callbacks short, and never block one until
    another stream's callback has run.
*/
#ifndef GPUFLOW_CUDA_H
#define GPUFLOW_CUDA_H
#include "gpuflow.h"
#endif

#if defined(GPUFLOW_IMPLEMENTATION) && defined(GPUFLOW_CUDA) && !defined(GPUFLOW_CUDA_IMPLEMENTATION_DONE)
#define GPUFLOW_CUDA_IMPLEMENTATION_DONE
/* cuda.h uses anonymous unions (C11) and NVTX converts dlsym's result directly: keep a
   -std=c99 -Wpedantic build of gpuflow quiet about headers it does not own. */
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cuda.h>
#ifdef GPUFLOW_NVTX
#  include <nvtx3/nvToolsExtCuda.h>   /* header-only NVTX 3: names streams in Nsight Systems */
#endif
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

#if defined(_WIN32)
#  define GF__CUDA_LIBRARY "nvcuda.dll"
#else
#  define GF__CUDA_LIBRARY "libcuda.so.1"
#endif
#define GF__CUDA_STACK_ARGS 32        /* launches with more arguments allocate their table */

/* The driver entry points, filled once by gf__cuda_load_driver. */
typedef struct gf__cuda_api {
    CUresult (CUDAAPI *GetErrorName)(CUresult, const char **);
    CUresult (CUDAAPI *DriverGetVersion)(int *);
    CUresult (CUDAAPI *Init)(unsigned int);
    CUresult (CUDAAPI *DeviceGetCount)(int *);
    CUresult (CUDAAPI *DeviceGet)(CUdevice *, int);
    CUresult (CUDAAPI *DeviceGetName)(char *, int, CUdevice);
    CUresult (CUDAAPI *DeviceTotalMem)(size_t *, CUdevice);
    CUresult (CUDAAPI *DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (CUDAAPI *DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (CUDAAPI *DevicePrimaryCtxRelease)(CUdevice);
    CUresult (CUDAAPI *CtxSetCurrent)(CUcontext);
    CUresult (CUDAAPI *CtxGetStreamPriorityRange)(int *, int *);
    CUresult (CUDAAPI *MemGetInfo)(size_t *, size_t *);
    CUresult (CUDAAPI *MemAlloc)(CUdeviceptr *, size_t);
    CUresult (CUDAAPI *MemAllocManaged)(CUdeviceptr *, size_t, unsigned int);
    CUresult (CUDAAPI *MemFree)(CUdeviceptr);
    CUresult (CUDAAPI *MemHostAlloc)(void **, size_t, unsigned int);
    CUresult (CUDAAPI *MemFreeHost)(void *);
    CUresult (CUDAAPI *DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
    CUresult (CUDAAPI *MemPoolSetAttribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (CUDAAPI *MemPoolTrimTo)(CUmemoryPool, size_t);
    CUresult (CUDAAPI *MemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (CUDAAPI *MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (CUDAAPI *MemPrefetchAsync)(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
    CUresult (CUDAAPI *MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (CUDAAPI *MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (CUDAAPI *MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (CUDAAPI *MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (CUDAAPI *StreamCreateWithPriority)(CUstream *, unsigned int, int);
    CUresult (CUDAAPI *StreamDestroy)(CUstream);
    CUresult (CUDAAPI *StreamQuery)(CUstream);
    CUresult (CUDAAPI *StreamSynchronize)(CUstream);
    CUresult (CUDAAPI *StreamWaitEvent)(CUstream, CUevent, unsigned int);
    CUresult (CUDAAPI *LaunchHostFunc)(CUstream, CUhostFn, void *);
    CUresult (CUDAAPI *EventCreate)(CUevent *, unsigned int);
    CUresult (CUDAAPI *EventDestroy)(CUevent);
    CUresult (CUDAAPI *EventRecord)(CUevent, CUstream);
    CUresult (CUDAAPI *EventQuery)(CUevent);
    CUresult (CUDAAPI *EventSynchronize)(CUevent);
    CUresult (CUDAAPI *EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (CUDAAPI *ModuleLoadDataEx)(CUmodule *, const void *, unsigned int, CUjit_option *, void **);
    CUresult (CUDAAPI *ModuleUnload)(CUmodule);
    CUresult (CUDAAPI *ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (CUDAAPI *LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                                     unsigned int, unsigned int, unsigned int, unsigned int,
                                     CUstream, void **, void **);
    CUresult (CUDAAPI *StreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (CUDAAPI *StreamEndCapture)(CUstream, CUgraph *);
    CUresult (CUDAAPI *GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
    CUresult (CUDAAPI *GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (CUDAAPI *GraphLaunch)(CUgraphExec, CUstream);
    CUresult (CUDAAPI *GraphExecUpdate)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
    CUresult (CUDAAPI *GraphExecDestroy)(CUgraphExec);
    CUresult (CUDAAPI *GraphDestroy)(CUgraph);
    CUresult (CUDAAPI *GraphClone)(CUgraph *, CUgraph);
    CUresult (CUDAAPI *StreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                             const CUgraphNode **, const CUgraphEdgeData **, size_t *);
    CUresult (CUDAAPI *GraphAddChildGraphNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph);
    CUresult (CUDAAPI *StreamUpdateCaptureDependencies)(CUstream, CUgraphNode *, const CUgraphEdgeData *,
                                                        size_t, unsigned int);
    CUresult (CUDAAPI *ThreadExchangeStreamCaptureMode)(CUstreamCaptureMode *);
    CUresult (CUDAAPI *PointerGetAttributes)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
} gf__cuda_api;

/* Symbol names are the base names cuGetProcAddress expects; min_driver is set where an
   older driver would hand out an older variant with another signature (the slot then
   stays NULL and the feature reports GF_ERROR_NOT_SUPPORTED). */
typedef struct gf__cuda_entry { const char *name; size_t offset; int min_driver; } gf__cuda_entry;
#define GF__CUDA_ENTRY(field, sym, min) { sym, offsetof(gf__cuda_api, field), min }
static const gf__cuda_entry gf__cuda_entries[] = {
    GF__CUDA_ENTRY(GetErrorName, "cuGetErrorName", 0),
    GF__CUDA_ENTRY(DriverGetVersion, "cuDriverGetVersion", 0),
    GF__CUDA_ENTRY(Init, "cuInit", 0),
    GF__CUDA_ENTRY(DeviceGetCount, "cuDeviceGetCount", 0),
    GF__CUDA_ENTRY(DeviceGet, "cuDeviceGet", 0),
    GF__CUDA_ENTRY(DeviceGetName, "cuDeviceGetName", 0),
    GF__CUDA_ENTRY(DeviceTotalMem, "cuDeviceTotalMem", 0),
    GF__CUDA_ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute", 0),
    GF__CUDA_ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 0),
    GF__CUDA_ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 0),
    GF__CUDA_ENTRY(CtxSetCurrent, "cuCtxSetCurrent", 0),
    GF__CUDA_ENTRY(CtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", 0),
    GF__CUDA_ENTRY(MemGetInfo, "cuMemGetInfo", 0),
    GF__CUDA_ENTRY(MemAlloc, "cuMemAlloc", 0),
    GF__CUDA_ENTRY(MemAllocManaged, "cuMemAllocManaged", 0),
    GF__CUDA_ENTRY(MemFree, "cuMemFree", 0),
    GF__CUDA_ENTRY(MemHostAlloc, "cuMemHostAlloc", 0),
    GF__CUDA_ENTRY(MemFreeHost, "cuMemFreeHost", 0),
    GF__CUDA_ENTRY(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 0),
    GF__CUDA_ENTRY(MemPoolSetAttribute, "cuMemPoolSetAttribute", 0),
    GF__CUDA_ENTRY(MemPoolTrimTo, "cuMemPoolTrimTo", 0),
    GF__CUDA_ENTRY(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 0),
    GF__CUDA_ENTRY(MemFreeAsync, "cuMemFreeAsync", 0),
    GF__CUDA_ENTRY(MemPrefetchAsync, "cuMemPrefetchAsync", 12020),   /* CUmemLocation form */
    GF__CUDA_ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", 0),
    GF__CUDA_ENTRY(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", 0),
    GF__CUDA_ENTRY(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", 0),
    GF__CUDA_ENTRY(MemsetD8Async, "cuMemsetD8Async", 0),
    GF__CUDA_ENTRY(StreamCreateWithPriority, "cuStreamCreateWithPriority", 0),
    GF__CUDA_ENTRY(StreamDestroy, "cuStreamDestroy", 0),
    GF__CUDA_ENTRY(StreamQuery, "cuStreamQuery", 0),
    GF__CUDA_ENTRY(StreamSynchronize, "cuStreamSynchronize", 0),
    GF__CUDA_ENTRY(StreamWaitEvent, "cuStreamWaitEvent", 0),
    GF__CUDA_ENTRY(LaunchHostFunc, "cuLaunchHostFunc", 0),
    GF__CUDA_ENTRY(EventCreate, "cuEventCreate", 0),
    GF__CUDA_ENTRY(EventDestroy, "cuEventDestroy", 0),
    GF__CUDA_ENTRY(EventRecord, "cuEventRecord", 0),
    GF__CUDA_ENTRY(EventQuery, "cuEventQuery", 0),
    GF__CUDA_ENTRY(EventSynchronize, "cuEventSynchronize", 0),
    GF__CUDA_ENTRY(EventElapsedTime, "cuEventElapsedTime", 0),
    GF__CUDA_ENTRY(ModuleLoadDataEx, "cuModuleLoadDataEx", 0),
    GF__CUDA_ENTRY(ModuleUnload, "cuModuleUnload", 0),
    GF__CUDA_ENTRY(ModuleGetFunction, "cuModuleGetFunction", 0),
    GF__CUDA_ENTRY(LaunchKernel, "cuLaunchKernel", 0),
    GF__CUDA_ENTRY(StreamBeginCapture, "cuStreamBeginCapture", 0),
    GF__CUDA_ENTRY(StreamEndCapture, "cuStreamEndCapture", 0),
    GF__CUDA_ENTRY(GraphGetNodes, "cuGraphGetNodes", 0),
    /* cuda.h's cuGraphInstantiate is a macro for this name; the driver's own symbol
       "cuGraphInstantiate" is still the 5-argument form of CUDA 10/11 */
    GF__CUDA_ENTRY(GraphInstantiate, "cuGraphInstantiateWithFlags", 0),
    GF__CUDA_ENTRY(GraphLaunch, "cuGraphLaunch", 0),
    GF__CUDA_ENTRY(GraphExecUpdate, "cuGraphExecUpdate", 0),        /* 12.0+: ResultInfo form */
    GF__CUDA_ENTRY(GraphExecDestroy, "cuGraphExecDestroy", 0),
    GF__CUDA_ENTRY(GraphDestroy, "cuGraphDestroy", 0),
    GF__CUDA_ENTRY(GraphClone, "cuGraphClone", 0),
    GF__CUDA_ENTRY(StreamGetCaptureInfo, "cuStreamGetCaptureInfo", 12030),            /* _v3: edge data */
    GF__CUDA_ENTRY(GraphAddChildGraphNode, "cuGraphAddChildGraphNode", 0),
    GF__CUDA_ENTRY(StreamUpdateCaptureDependencies, "cuStreamUpdateCaptureDependencies", 12030),  /* _v2 */
    GF__CUDA_ENTRY(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", 0),
    GF__CUDA_ENTRY(PointerGetAttributes, "cuPointerGetAttributes", 0)
};
#undef GF__CUDA_ENTRY

static gf__cuda_api gf__cu;           /* read-only once gf__cuda_driver has loaded */
static gf__driver gf__cuda_driver;
static int gf__cuda_no_device;        /* the driver loaded but cuInit found no device */
static char gf__cuda_no_device_why[256];

/* Per gf_device state. */
typedef struct gf__cuda_device {
    CUdevice dev;
    CUcontext ctx;
    int prio_least, prio_greatest;    /* numerically: least >= greatest */
    int concurrent_managed;           /* prefetch to the GPU is meaningful */
    CUmemoryPool pool;                /* the default pool; NULL without memory pools */
    gf__mutex stage_lock;             /* stage_free, stage_cached: taken by host functions too */
    struct gf__cuda_stage *stage_free;
    size_t stage_cached;
} gf__cuda_device;

/* ---- errors ----------------------------------------------------------------------------- */
static const char *gf__cuda_error_name(CUresult r) {
    const char *name = NULL;
    if (gf__cu.GetErrorName && gf__cu.GetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
    return "CUDA_ERROR_UNRECOGNIZED";
}

static gf_result gf__cuda_code(CUresult r) {
    switch (r) {
    case CUDA_SUCCESS:                          return GF_OK;
    case CUDA_ERROR_NOT_READY:                  return GF_NOT_READY;
    case CUDA_ERROR_OUT_OF_MEMORY:              return GF_ERROR_OUT_OF_MEMORY;
    case CUDA_ERROR_NOT_FOUND:                  return GF_ERROR_NOT_FOUND;
    case CUDA_ERROR_NOT_SUPPORTED:              return GF_ERROR_NOT_SUPPORTED;
    case CUDA_ERROR_NO_DEVICE:                  return GF_ERROR_NO_DEVICE;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_MERGE:
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_CAPTURED_EVENT:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return GF_ERROR_CAPTURE;
    default:                                    return GF_ERROR_DRIVER;
    }
}

/* "cuXxx: CUDA_ERROR_NAME (n)", with the gpuflow code that CUresult maps to. */
static gf_result gf__cuda_fail(CUresult r, const char *call) {
    gf_result code = gf__cuda_code(r);
    return gf__fail(code, "%s: %s (%d)%s", call, gf__cuda_error_name(r), (int)r,
                    code == GF_ERROR_CAPTURE ? ": not allowed in this stream capture" : "");
}
#define GF__CUDA_CHECK(call, name) do { CUresult gf__r_ = (call); \
        if (gf__r_ != CUDA_SUCCESS) return gf__cuda_fail(gf__r_, name); } while (0)

/* r = call, made in RELAXED capture mode on this thread. A GLOBAL capture anywhere in the
   process makes CUDA refuse every synchronizing or allocating call (and invalidate the
   capture), also on streams and memory that take no part in it. gpuflow's core checks
   captures itself (it refuses to synchronize a capturing stream, or to copy synchronously
   into a buffer a capture uses), so its own calls go through relaxed; GLOBAL still guards
   against other code's CUDA calls. */
#define GF__CUDA_RELAXED(r, call) do { CUstreamCaptureMode gf__m_ = CU_STREAM_CAPTURE_MODE_RELAXED; \
        gf__cu.ThreadExchangeStreamCaptureMode(&gf__m_); (r) = (call); \
        gf__cu.ThreadExchangeStreamCaptureMode(&gf__m_); } while (0)
#define GF__CUDA_RELAXED_VOID(call) do { CUresult gf__v_; GF__CUDA_RELAXED(gf__v_, call); (void)gf__v_; } while (0)
#define GF__CUDA_CHECK_RELAXED(call, name) do { CUresult gf__r_; GF__CUDA_RELAXED(gf__r_, call); \
        if (gf__r_ != CUDA_SUCCESS) return gf__cuda_fail(gf__r_, name); } while (0)

/* ---- loading ---------------------------------------------------------------------------- */
static const char gf__cuda_stub_why[] =
    "CUDA: " GF__CUDA_LIBRARY " is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), "
    "not an NVIDIA driver: install the driver, or take the toolkit's stubs directory off the "
    "library path";

static void gf__cuda_load_driver(gf__driver *d) {
    typedef CUresult (CUDAAPI *gpa_fn)(const char *, void **, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult *);
    gpa_fn gpa;
    void *sym;
    int version = 0;
    size_t i;
    CUresult r;

    d->result = GF_ERROR_BACKEND_UNAVAILABLE;
    d->lib = gf__dlopen(GF__CUDA_LIBRARY);
    if (!d->lib) {
        snprintf(d->why, sizeof d->why, "CUDA: cannot load " GF__CUDA_LIBRARY ": %s", gf__dlerror());
        return;
    }
    sym = gf__dlsym(d->lib, "cuGetProcAddress_v2");
    if (!sym) {
        snprintf(d->why, sizeof d->why, "CUDA: " GF__CUDA_LIBRARY " has no cuGetProcAddress_v2: "
                 "the NVIDIA driver is older than CUDA 12.0");
        return;
    }
    memcpy(&gpa, &sym, sizeof gpa);   /* object to function pointer, the portable way */
    for (i = 0; i < sizeof gf__cuda_entries / sizeof gf__cuda_entries[0]; i++) {
        const gf__cuda_entry *e = &gf__cuda_entries[i];
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        void *fn = NULL;
        /* cuDriverGetVersion comes before every entry with a min_driver */
        if (e->min_driver > version) continue;   /* leaves an optional entry NULL */
        r = gpa(e->name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
        if (r == CUDA_ERROR_STUB_LIBRARY) { snprintf(d->why, sizeof d->why, "%s", gf__cuda_stub_why); return; }
        if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
            snprintf(d->why, sizeof d->why, "CUDA: the driver in " GF__CUDA_LIBRARY " lacks %s "
                     "(cuGetProcAddress: %d, status %d)", e->name, (int)r, (int)status);
            return;
        }
        memcpy((char *)&gf__cu + e->offset, &fn, sizeof fn);
        if (e->offset == offsetof(gf__cuda_api, DriverGetVersion)) {
            r = gf__cu.DriverGetVersion(&version);
            if (r == CUDA_ERROR_STUB_LIBRARY) { snprintf(d->why, sizeof d->why, "%s", gf__cuda_stub_why); return; }
            if (r != CUDA_SUCCESS) version = 0;
        }
    }
    r = gf__cu.Init(0);
    if (r == CUDA_ERROR_STUB_LIBRARY) { snprintf(d->why, sizeof d->why, "%s", gf__cuda_stub_why); return; }
    if (r == CUDA_ERROR_NO_DEVICE) {
        /* The driver works; there is simply nothing to open. device_count reports 0. */
        gf__cuda_no_device = 1;
        snprintf(gf__cuda_no_device_why, sizeof gf__cuda_no_device_why,
                 "CUDA: the driver (%d.%d) found no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE (100))",
                 version / 1000, version % 1000 / 10);
        d->result = GF_OK;
        return;
    }
    if (r != CUDA_SUCCESS) {
        snprintf(d->why, sizeof d->why, "CUDA: cuInit: %s (%d)", gf__cuda_error_name(r), (int)r);
        return;
    }
    d->result = GF_OK;
}

static gf_result gf__cuda_load(void) { return gf__driver_load(&gf__cuda_driver, gf__cuda_load_driver); }

/* ---- the current context ---------------------------------------------------------------- */
/* Every entry makes the device's primary context current on the calling thread. The
   thread-local cache skips cuCtxSetCurrent when this thread already set that context; the
   generation changes whenever a device closes, so a released (and maybe re-retained)
   context is set again. The rule this implies: a thread that makes another context current
   itself (cuCtxSetCurrent / cuCtxPushCurrent outside gpuflow) must restore gpuflow's before
   calling gpuflow again, or call it from another thread. */
static GF__THREAD_LOCAL CUcontext gf__cuda_tls_ctx;
static GF__THREAD_LOCAL uint64_t gf__cuda_tls_gen;
static uint64_t gf__cuda_generation = 1;

static gf_result gf__cuda_enter(gf_device *dev) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    uint64_t gen = gf__atomic_load(&gf__cuda_generation);
    CUresult r;
    if (gf__cuda_tls_ctx == d->ctx && gf__cuda_tls_gen == gen) return GF_OK;
    r = gf__cu.CtxSetCurrent(d->ctx);
    if (r != CUDA_SUCCESS) return gf__cuda_fail(r, "cuCtxSetCurrent");
    gf__cuda_tls_ctx = d->ctx;
    gf__cuda_tls_gen = gen;
    return GF_OK;
}
#define GF__CUDA_ENTER(dev) do { gf_result gf__e_ = gf__cuda_enter(dev); if (gf__e_ != GF_OK) return gf__e_; } while (0)

#define GF__CUSTREAM(s) ((CUstream)(s)->native)
#define GF__CUEVENT(e)  ((CUevent)(e)->native)

/* ---- devices ---------------------------------------------------------------------------- */
/* No device is reported as GF_ERROR_NO_DEVICE with the driver's reason (count 0): the core
   passes that text on, where a bare 0 would get a generic one. */
static gf_result gf__cuda_device_count(int *count) {
    *count = 0;
    if (gf__cuda_no_device) return gf__fail(GF_ERROR_NO_DEVICE, "%s", gf__cuda_no_device_why);
    GF__CUDA_CHECK(gf__cu.DeviceGetCount(count), "cuDeviceGetCount");
    if (*count == 0) return gf__fail(GF_ERROR_NO_DEVICE, "CUDA: the driver reports no CUDA device (cuDeviceGetCount: 0)");
    return GF_OK;
}

static int gf__cuda_attr(CUdevice dev, CUdevice_attribute a) {
    int v = 0;
    if (gf__cu.DeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS) v = 0;
    return v;
}

static gf_result gf__cuda_device_open(gf_device *dev, int index) {
    gf__cuda_device *d = (gf__cuda_device *)gf__alloc(sizeof *d);
    gf_device_info *info = &dev->info;
    size_t total = 0;
    CUresult r;
    const char *call;
    if (!d) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory opening device %d", index);
    gf__mutex_init(&d->stage_lock);
    call = "cuDeviceGet";
    if ((r = gf__cu.DeviceGet(&d->dev, index)) != CUDA_SUCCESS) goto fail;
    call = "cuDevicePrimaryCtxRetain";
    if ((r = gf__cu.DevicePrimaryCtxRetain(&d->ctx, d->dev)) != CUDA_SUCCESS) goto fail;
    call = "cuCtxSetCurrent";
    if ((r = gf__cu.CtxSetCurrent(d->ctx)) != CUDA_SUCCESS) goto fail_ctx;
    gf__cuda_tls_ctx = d->ctx;
    gf__cuda_tls_gen = gf__atomic_load(&gf__cuda_generation);
    call = "cuDeviceGetName";
    if ((r = gf__cu.DeviceGetName(info->name, (int)sizeof info->name, d->dev)) != CUDA_SUCCESS) goto fail_ctx;
    call = "cuDeviceTotalMem";
    if ((r = gf__cu.DeviceTotalMem(&total, d->dev)) != CUDA_SUCCESS) goto fail_ctx;
    call = "cuCtxGetStreamPriorityRange";
    if ((r = gf__cu.CtxGetStreamPriorityRange(&d->prio_least, &d->prio_greatest)) != CUDA_SUCCESS) goto fail_ctx;

    info->total_memory = total;
    info->compute_units = gf__cuda_attr(d->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info->native_graphs = 1;
    info->stream_priorities = d->prio_least != d->prio_greatest;
    info->managed_memory = gf__cuda_attr(d->dev, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) != 0;
    info->async_alloc = gf__cuda_attr(d->dev, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
    info->spirv = 0;
    d->concurrent_managed = gf__cuda_attr(d->dev, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) != 0;

    if (info->async_alloc) {
        /* Keep up to a quarter of the device cached in the pool across synchronizations:
           stream-ordered reuse without holding the whole card away from other users. */
        cuuint64_t keep = (cuuint64_t)(total / 4);
        call = "cuDeviceGetDefaultMemPool";
        if ((r = gf__cu.DeviceGetDefaultMemPool(&d->pool, d->dev)) != CUDA_SUCCESS) goto fail_ctx;
        call = "cuMemPoolSetAttribute";
        if ((r = gf__cu.MemPoolSetAttribute(d->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep)) != CUDA_SUCCESS)
            goto fail_ctx;
    }
    dev->native = d;
    return GF_OK;
fail_ctx:
    gf__cu.DevicePrimaryCtxRelease(d->dev);
fail:
    gf__mutex_destroy(&d->stage_lock);
    GPUFLOW_FREE(d);
    return gf__cuda_fail(r, call);
}

static void gf__cuda_stage_free_list(struct gf__cuda_stage *st);

/* The core has drained every stream first, so no host function still holds a stage. */
static void gf__cuda_device_close(gf_device *dev) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    if (!d) return;
    if (gf__cuda_enter(dev) == GF_OK) {
        if (d->pool) gf__cu.MemPoolTrimTo(d->pool, 0);
        gf__cuda_stage_free_list(d->stage_free);
    }
    gf__mutex_destroy(&d->stage_lock);
    gf__cu.DevicePrimaryCtxRelease(d->dev);
    gf__atomic_add(&gf__cuda_generation, 1);
    GPUFLOW_FREE(d);
    dev->native = NULL;
}

static gf_result gf__cuda_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes) {
    GF__CUDA_ENTER(dev);
    GF__CUDA_CHECK(gf__cu.MemGetInfo(free_bytes, total_bytes), "cuMemGetInfo");
    return GF_OK;
}

/* ---- memory ----------------------------------------------------------------------------- */
static gf_result gf__cuda_buffer_alloc(gf_buffer *buf) {
    CUdeviceptr p = 0;
    GF__CUDA_ENTER(buf->dev);
    if (buf->managed)
        GF__CUDA_CHECK_RELAXED(gf__cu.MemAllocManaged(&p, buf->size, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
    else
        GF__CUDA_CHECK_RELAXED(gf__cu.MemAlloc(&p, buf->size), "cuMemAlloc");
    buf->addr = (uint64_t)p;
    return GF_OK;
}

static void gf__cuda_buffer_free(gf_buffer *buf) {
    if (gf__cuda_enter(buf->dev) == GF_OK && buf->addr) GF__CUDA_RELAXED_VOID(gf__cu.MemFree((CUdeviceptr)buf->addr));
    buf->addr = 0;
}

static gf_result gf__cuda_buffer_alloc_async(gf_stream *s, gf_buffer *buf) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    CUdeviceptr p = 0;
    GF__CUDA_ENTER(s->dev);
    if (!d->pool) return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: device %s has no memory pools (stream-ordered allocation)", s->dev->info.name);
    GF__CUDA_CHECK(gf__cu.MemAllocFromPoolAsync(&p, buf->size, d->pool, GF__CUSTREAM(s)), "cuMemAllocFromPoolAsync");
    buf->addr = (uint64_t)p;
    return GF_OK;
}

static gf_result gf__cuda_buffer_free_async(gf_stream *s, gf_buffer *buf) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(gf__cu.MemFreeAsync((CUdeviceptr)buf->addr, GF__CUSTREAM(s)), "cuMemFreeAsync");
    buf->addr = 0;
    return GF_OK;
}

static gf_result gf__cuda_host_alloc(gf_device *dev, size_t bytes, void **out) {
    GF__CUDA_ENTER(dev);
    GF__CUDA_CHECK_RELAXED(gf__cu.MemHostAlloc(out, bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
    return GF_OK;
}

static void gf__cuda_host_free(gf_device *dev, void *ptr) {
    if (gf__cuda_enter(dev) == GF_OK) GF__CUDA_RELAXED_VOID(gf__cu.MemFreeHost(ptr));
}

/* ---- pageable host memory: staged copies -------------------------------------------------- */
/* CUDA runs a copy to or from pageable (malloc'd) memory synchronously with the host: a D2H
   into it waits for all earlier work on the stream. gpuflow's copies are asynchronous on
   every backend, so outside captures such a copy goes through pinned staging memory: an
   H2D reads the source into the stage at once (the caller may reuse it on return, as with
   CUDA) and copies from there; a D2H copies into the stage, and a host function moves the
   bytes to the destination in stream order, before any later work on the stream. Stages are
   recycled per device; the host function touches only host memory and a mutex. A capture
   keeps the direct copy: the driver records a pageable copy as a graph node, and replays
   it, without blocking. */
typedef struct gf__cuda_stage {
    struct gf__cuda_stage *next;
    gf__cuda_device *owner;
    void *pinned; size_t cap;
    void *dst; size_t bytes;                     /* D2H: where the host function puts the bytes */
} gf__cuda_stage;
#define GF__CUDA_STAGE_KEEP ((size_t)64 << 20)   /* idle staging memory kept for reuse */

static int gf__cuda_pinned(const void *p) {
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    CUmemorytype type = (CUmemorytype)0;
    void *data = &type;
    /* the plural form answers "no type" for memory CUDA does not know, instead of failing */
    return gf__cu.PointerGetAttributes(1, &attr, &data, (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_HOST;
}

/* Powers of two from 64 KiB, then whole MiB: few distinct sizes, so stages get reused. */
static size_t gf__cuda_stage_size(size_t bytes) {
    size_t cap = (size_t)64 << 10, mib = (size_t)1 << 20;
    if (bytes > 16 * mib) return (bytes + mib - 1) & ~(mib - 1);
    while (cap < bytes) cap *= 2;
    return cap;
}

static void gf__cuda_stage_free_list(gf__cuda_stage *st) {   /* never from a host function */
    while (st) {
        gf__cuda_stage *next = st->next;
        GF__CUDA_RELAXED_VOID(gf__cu.MemFreeHost(st->pinned));
        GPUFLOW_FREE(st);
        st = next;
    }
}

static gf_result gf__cuda_stage_get(gf__cuda_device *d, size_t bytes, gf__cuda_stage **out) {
    gf__cuda_stage **link, *st = NULL, *idle = NULL;
    size_t cap = gf__cuda_stage_size(bytes);
    CUresult r;
    gf__lock(&d->stage_lock);
    for (link = &d->stage_free; *link; link = &(*link)->next)
        if ((*link)->cap >= cap && (*link)->cap <= cap + cap / 4) {
            st = *link;
            *link = st->next;
            d->stage_cached -= st->cap;
            break;
        }
    if (d->stage_cached > GF__CUDA_STAGE_KEEP) {   /* too much idle: give it all back */
        idle = d->stage_free;
        d->stage_free = NULL;
        d->stage_cached = 0;
    }
    gf__unlock(&d->stage_lock);
    gf__cuda_stage_free_list(idle);
    if (!st) {
        if (!(st = (gf__cuda_stage *)gf__alloc(sizeof *st)))
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory for a staging buffer");
        GF__CUDA_RELAXED(r, gf__cu.MemHostAlloc(&st->pinned, cap, CU_MEMHOSTALLOC_PORTABLE));
        if (r != CUDA_SUCCESS) { GPUFLOW_FREE(st); return gf__cuda_fail(r, "cuMemHostAlloc (staging for pageable memory)"); }
        st->owner = d;
        st->cap = cap;
    }
    *out = st;
    return GF_OK;
}

/* A host function (and the error path): no CUDA calls. */
static void CUDA_CB gf__cuda_stage_done(void *p) {
    gf__cuda_stage *st = (gf__cuda_stage *)p;
    gf__cuda_device *d = st->owner;
    if (st->dst) memcpy(st->dst, st->pinned, st->bytes);
    gf__lock(&d->stage_lock);
    st->next = d->stage_free;
    d->stage_free = st;
    d->stage_cached += st->cap;
    gf__unlock(&d->stage_lock);
}

static gf_result gf__cuda_copy_staged(gf_stream *s, const gf__copy *c) {
    CUstream cs = GF__CUSTREAM(s);
    gf__cuda_stage *st = NULL;
    gf_result e;
    CUresult r, w;
    const char *call;
    if ((e = gf__cuda_stage_get((gf__cuda_device *)s->dev->native, c->bytes, &st)) != GF_OK) return e;
    st->bytes = c->bytes;
    if (c->kind == GF__COPY_H2D) {
        memcpy(st->pinned, c->host, c->bytes);
        st->dst = NULL;
        call = "cuMemcpyHtoDAsync";
        r = gf__cu.MemcpyHtoDAsync((CUdeviceptr)(c->dst->addr + c->dst_offset), st->pinned, c->bytes, cs);
    } else {
        st->dst = c->host;
        call = "cuMemcpyDtoHAsync";
        r = gf__cu.MemcpyDtoHAsync(st->pinned, (CUdeviceptr)(c->src->addr + c->src_offset), c->bytes, cs);
    }
    if (r != CUDA_SUCCESS) {
        st->dst = NULL;
        gf__cuda_stage_done(st);
        return gf__cuda_fail(r, call);
    }
    r = gf__cu.LaunchHostFunc(cs, gf__cuda_stage_done, st);
    if (r == CUDA_SUCCESS) return GF_OK;
    /* The copy is queued but nothing will hand the stage back: finish it here, or, if the
       stream cannot be waited for, leave the stage to the device (it may still write it). */
    GF__CUDA_RELAXED(w, gf__cu.StreamSynchronize(cs));
    if (w != CUDA_SUCCESS) return gf__cuda_fail(r, "cuLaunchHostFunc (staged copy)");
    gf__cuda_stage_done(st);
    return GF_OK;
}

/* ---- streams ---------------------------------------------------------------------------- */
static gf_result gf__cuda_stream_create(gf_stream *s) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    CUstream cs = NULL;
    int prio;
    GF__CUDA_ENTER(s->dev);
    switch (s->priority) {
    case GF_PRIORITY_HIGH: prio = d->prio_greatest; break;
    case GF_PRIORITY_LOW:  prio = d->prio_least; break;
    default:               prio = (d->prio_least + d->prio_greatest) / 2; break;   /* rounds toward least */
    }
    GF__CUDA_CHECK(gf__cu.StreamCreateWithPriority(&cs, CU_STREAM_NON_BLOCKING, prio), "cuStreamCreateWithPriority");
#ifdef GPUFLOW_NVTX
    if (s->label[0]) nvtxNameCuStreamA(cs, s->label);
#endif
    s->native = cs;
    return GF_OK;
}

static void gf__cuda_stream_destroy(gf_stream *s) {
    if (gf__cuda_enter(s->dev) == GF_OK && s->native) GF__CUDA_RELAXED_VOID(gf__cu.StreamDestroy(GF__CUSTREAM(s)));
    s->native = NULL;
}

static gf_result gf__cuda_stream_synchronize(gf_stream *s) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK_RELAXED(gf__cu.StreamSynchronize(GF__CUSTREAM(s)), "cuStreamSynchronize");
    return GF_OK;
}

/* A query's answer: done, not yet, or a failure to report. */
static gf_result gf__cuda_ready(CUresult r, const char *call) {
    if (r == CUDA_SUCCESS) return GF_OK;
    if (r == CUDA_ERROR_NOT_READY) return GF_NOT_READY;
    return gf__cuda_fail(r, call);
}

static gf_result gf__cuda_stream_query(gf_stream *s) {
    CUresult r;
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_RELAXED(r, gf__cu.StreamQuery(GF__CUSTREAM(s)));
    return gf__cuda_ready(r, "cuStreamQuery");
}

static gf_result gf__cuda_copy(gf_stream *s, const gf__copy *c) {
    CUstream cs = GF__CUSTREAM(s);
    GF__CUDA_ENTER(s->dev);
    if (c->kind != GF__COPY_D2D && !s->capture && !gf__cuda_pinned(c->host)) return gf__cuda_copy_staged(s, c);
    switch (c->kind) {
    case GF__COPY_H2D:
        GF__CUDA_CHECK(gf__cu.MemcpyHtoDAsync((CUdeviceptr)(c->dst->addr + c->dst_offset), c->host, c->bytes, cs),
                       "cuMemcpyHtoDAsync");
        break;
    case GF__COPY_D2H:
        GF__CUDA_CHECK(gf__cu.MemcpyDtoHAsync(c->host, (CUdeviceptr)(c->src->addr + c->src_offset), c->bytes, cs),
                       "cuMemcpyDtoHAsync");
        break;
    default:
        GF__CUDA_CHECK(gf__cu.MemcpyDtoDAsync((CUdeviceptr)(c->dst->addr + c->dst_offset),
                                              (CUdeviceptr)(c->src->addr + c->src_offset), c->bytes, cs),
                       "cuMemcpyDtoDAsync");
        break;
    }
    return GF_OK;
}

static gf_result gf__cuda_fill(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(gf__cu.MemsetD8Async((CUdeviceptr)(buf->addr + offset), value, bytes, GF__CUSTREAM(s)),
                   "cuMemsetD8Async");
    return GF_OK;
}

static gf_result gf__cuda_prefetch(gf_stream *s, gf_buffer *buf, int to_device) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    CUmemLocation loc;
    GF__CUDA_ENTER(s->dev);
    if (!gf__cu.MemPrefetchAsync)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: cuMemPrefetchAsync with a CUmemLocation needs a CUDA 12.2+ driver");
    /* Without concurrent managed access the driver migrates managed memory at each launch
       itself and refuses prefetches to the GPU: the hint has nothing left to do. */
    if (!d->concurrent_managed) return GF_OK;
    memset(&loc, 0, sizeof loc);
    loc.type = to_device ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST;
    loc.id = to_device ? (int)d->dev : 0;
    GF__CUDA_CHECK(gf__cu.MemPrefetchAsync((CUdeviceptr)buf->addr, buf->size, loc, 0, GF__CUSTREAM(s)),
                   "cuMemPrefetchAsync");
    return GF_OK;
}

static gf_result gf__cuda_host_callback(gf_stream *s, void (*fn)(void *user), void *user) {
    GF__CUDA_ENTER(s->dev);
    /* CUhostFn is void (CUDA_CB *)(void *): the same type except for Windows' calling
       convention keyword, which x64 (the only Windows CUDA target) ignores. */
    GF__CUDA_CHECK(gf__cu.LaunchHostFunc(GF__CUSTREAM(s), (CUhostFn)fn, user), "cuLaunchHostFunc");
    return GF_OK;
}

/* ---- events ----------------------------------------------------------------------------- */
static gf_result gf__cuda_event_create(gf_event *ev) {
    CUevent e = NULL;
    GF__CUDA_ENTER(ev->dev);
    GF__CUDA_CHECK(gf__cu.EventCreate(&e, (ev->flags & GF_EVENT_TIMING) ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
                   "cuEventCreate");
    ev->native = e;
    return GF_OK;
}

static void gf__cuda_event_destroy(gf_event *ev) {
    if (gf__cuda_enter(ev->dev) == GF_OK && ev->native) gf__cu.EventDestroy(GF__CUEVENT(ev));
    ev->native = NULL;
}

static gf_result gf__cuda_event_record(gf_event *ev, gf_stream *s) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(gf__cu.EventRecord(GF__CUEVENT(ev), GF__CUSTREAM(s)), "cuEventRecord");
    return GF_OK;
}

static gf_result gf__cuda_stream_wait_event(gf_stream *s, gf_event *ev) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(gf__cu.StreamWaitEvent(GF__CUSTREAM(s), GF__CUEVENT(ev), CU_EVENT_WAIT_DEFAULT), "cuStreamWaitEvent");
    return GF_OK;
}

static gf_result gf__cuda_event_synchronize(gf_event *ev) {
    GF__CUDA_ENTER(ev->dev);
    GF__CUDA_CHECK_RELAXED(gf__cu.EventSynchronize(GF__CUEVENT(ev)), "cuEventSynchronize");
    return GF_OK;
}

static gf_result gf__cuda_event_query(gf_event *ev) {
    CUresult r;
    GF__CUDA_ENTER(ev->dev);
    GF__CUDA_RELAXED(r, gf__cu.EventQuery(GF__CUEVENT(ev)));
    return gf__cuda_ready(r, "cuEventQuery");
}

static gf_result gf__cuda_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    CUresult r;
    GF__CUDA_ENTER(start->dev);
    r = gf__cu.EventElapsedTime(ms, GF__CUEVENT(start), GF__CUEVENT(end));
    if (r == CUDA_SUCCESS) return GF_OK;
    if (r == CUDA_ERROR_NOT_READY) return GF_NOT_READY;
    return gf__cuda_fail(r, "cuEventElapsedTime");
}

/* ---- modules and kernels ---------------------------------------------------------------- */
static gf_result gf__cuda_module_load(gf_module *mod, const gf_module_desc *desc) {
    char log[4096];
    CUjit_option opts[2];
    void *vals[2];
    CUmodule m = NULL;
    const void *image = desc->cubin ? desc->cubin : (const void *)desc->ptx;   /* cubin needs no JIT */
    CUresult r;
    GF__CUDA_ENTER(mod->dev);
    if (!image)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: the module description has neither ptx nor cubin");
    log[0] = 0;
    opts[0] = CU_JIT_ERROR_LOG_BUFFER;            vals[0] = log;
    opts[1] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES; vals[1] = (void *)(uintptr_t)sizeof log;
    GF__CUDA_RELAXED(r, gf__cu.ModuleLoadDataEx(&m, image, 2, opts, vals));
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return gf__cuda_fail(r, "cuModuleLoadDataEx");
    if (r != CUDA_SUCCESS) {
        log[sizeof log - 1] = 0;
        return gf__fail(GF_ERROR_BUILD, "cuModuleLoadDataEx (%s): %s (%d)%s%s", desc->cubin ? "cubin" : "PTX",
                        gf__cuda_error_name(r), (int)r, log[0] ? ": " : "", log);
    }
    mod->native = m;
    return GF_OK;
}

static void gf__cuda_module_unload(gf_module *mod) {
    if (gf__cuda_enter(mod->dev) == GF_OK && mod->native) GF__CUDA_RELAXED_VOID(gf__cu.ModuleUnload((CUmodule)mod->native));
    mod->native = NULL;
}

static gf_result gf__cuda_kernel_get(gf_kernel *k) {
    CUfunction f = NULL;
    CUresult r;
    GF__CUDA_ENTER(k->mod->dev);
    r = gf__cu.ModuleGetFunction(&f, (CUmodule)k->mod->native, k->name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return gf__fail(GF_ERROR_NOT_FOUND, "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (500): no kernel \"%s\" in the module", k->name);
    if (r != CUDA_SUCCESS) return gf__cuda_fail(r, "cuModuleGetFunction");
    k->native = f;
    return GF_OK;
}

/* The hot path: one context check, the parameter table on the stack, one driver call.
   kernelParams[i] points at the argument's bytes; for a buffer, at its CUdeviceptr. */
static gf_result gf__cuda_launch(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims,
                                 const gf_arg *args, int count) {
    void *stack[GF__CUDA_STACK_ARGS];
    void **params = stack;
    CUresult r;
    int i;
    GF__CUDA_ENTER(s->dev);
    if (count > GF__CUDA_STACK_ARGS) {
        params = (void **)GPUFLOW_MALLOC((size_t)count * sizeof *params);
        if (!params) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory for %d kernel arguments", count);
    }
    for (i = 0; i < count; i++)
        params[i] = args[i].buffer ? (void *)&args[i].buffer->addr : (void *)args[i].value;
    r = gf__cu.LaunchKernel((CUfunction)k->native, dims->grid[0], dims->grid[1], dims->grid[2],
                            dims->block[0], dims->block[1], dims->block[2], (unsigned int)dims->shared_bytes,
                            GF__CUSTREAM(s), count ? params : NULL, NULL);
    if (params != stack) GPUFLOW_FREE(params);
    if (r != CUDA_SUCCESS) return gf__cuda_fail(r, "cuLaunchKernel");
    return GF_OK;
}

/* ---- graphs ----------------------------------------------------------------------------- */
static gf_result gf__cuda_capture_begin(gf_stream *s, gf_capture_mode mode) {
    CUstreamCaptureMode m = mode == GF_CAPTURE_THREAD_LOCAL ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                          : mode == GF_CAPTURE_RELAXED      ? CU_STREAM_CAPTURE_MODE_RELAXED
                                                            : CU_STREAM_CAPTURE_MODE_GLOBAL;
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(gf__cu.StreamBeginCapture(GF__CUSTREAM(s), m), "cuStreamBeginCapture");
    return GF_OK;
}

/* Ends the capture whatever happens: on failure the partial graph is destroyed and the
   stream is out of capture mode, usable again. */
static gf_result gf__cuda_capture_end(gf_stream *s, gf_graph *g) {
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    size_t nodes = 0;
    const char *call;
    CUresult r;
    GF__CUDA_ENTER(s->dev);
    r = gf__cu.StreamEndCapture(GF__CUSTREAM(s), &graph);
    if (r != CUDA_SUCCESS) {
        if (graph) gf__cu.GraphDestroy(graph);
        return gf__fail(GF_ERROR_CAPTURE, "cuStreamEndCapture: %s (%d): the capture was broken and is discarded",
                        gf__cuda_error_name(r), (int)r);
    }
    call = "cuGraphGetNodes";
    r = gf__cu.GraphGetNodes(graph, NULL, &nodes);
    if (r == CUDA_SUCCESS) { call = "cuGraphInstantiateWithFlags"; r = gf__cu.GraphInstantiate(&exec, graph, 0); }
    if (r != CUDA_SUCCESS) {
        gf__cu.GraphDestroy(graph);
        return gf__cuda_fail(r, call);
    }
    g->native = 1;
    g->native_graph = graph;
    g->native_exec = exec;
    g->nodes = (int)nodes;
    return GF_OK;
}

/* CUDA refuses cuGraphLaunch on a capturing stream. Inside a capture the graph goes in as a
   child graph node (a copy of g's CUgraph) after the stream's current capture dependencies,
   and becomes the stream's one dependency, as cuStreamGetCaptureInfo documents. */
static gf_result gf__cuda_graph_add_child(gf_graph *g, gf_stream *s) {
    CUstream cs = GF__CUSTREAM(s);
    CUstreamCaptureStatus status;
    cuuint64_t id;
    CUgraph capturing = NULL;
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t ndeps = 0;
    CUgraphNode node;
    if (!gf__cu.StreamGetCaptureInfo || !gf__cu.StreamUpdateCaptureDependencies)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: launching a graph inside a capture needs a CUDA 12.3+ driver");
    GF__CUDA_CHECK(gf__cu.StreamGetCaptureInfo(cs, &status, &id, &capturing, &deps, &edges, &ndeps), "cuStreamGetCaptureInfo");
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return gf__fail(GF_ERROR_CAPTURE, "cuStreamGetCaptureInfo: the capture of stream '%s' is %s", s->label,
                        status == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? "invalidated" : "not active");
    GF__CUDA_CHECK(gf__cu.GraphAddChildGraphNode(&node, capturing, deps, ndeps, (CUgraph)g->native_graph),
                   "cuGraphAddChildGraphNode");
    GF__CUDA_CHECK(gf__cu.StreamUpdateCaptureDependencies(cs, &node, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES),
                   "cuStreamUpdateCaptureDependencies");
    return GF_OK;
}

static gf_result gf__cuda_graph_launch(gf_graph *g, gf_stream *s) {
    GF__CUDA_ENTER(s->dev);
    if (s->capture) return gf__cuda_graph_add_child(g, s);   /* s->capture: the core's, under s->lock */
    GF__CUDA_CHECK(gf__cu.GraphLaunch((CUgraphExec)g->native_exec, GF__CUSTREAM(s)), "cuGraphLaunch");
    return GF_OK;
}

static const char *gf__cuda_update_why(CUgraphExecUpdateResult u) {
    switch (u) {
    case CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED:          return "the topology differs";
    case CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED:         return "a node's type differs";
    case CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED:
    case CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE: return "a kernel node's function changed in a way that cannot be updated";
    case CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED:        return "a node's parameters changed in a way that cannot be updated";
    case CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED:        return "a node's attributes changed in a way that cannot be updated";
    case CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED:             return "a node cannot be updated (e.g. a memory allocation node)";
    default:                                                   return "the graphs are not compatible";
    }
}

/* The target keeps its exec, which takes from's parameters, and a copy of from's CUgraph,
   so that its CUgraph keeps describing what it runs (a launch inside a capture embeds the
   CUgraph). The copy is made first: a refused update (the driver documents that it then
   changes nothing) or a failed copy leaves the target as it was. */
static gf_result gf__cuda_graph_update(gf_graph *target, gf_graph *from) {
    CUgraphExecUpdateResultInfo info;
    CUgraph copy = NULL;
    CUresult r;
    GF__CUDA_ENTER(target->dev);
    GF__CUDA_CHECK(gf__cu.GraphClone(&copy, (CUgraph)from->native_graph), "cuGraphClone");
    memset(&info, 0, sizeof info);
    r = gf__cu.GraphExecUpdate((CUgraphExec)target->native_exec, copy, &info);
    if (r != CUDA_SUCCESS) {
        gf__cu.GraphDestroy(copy);
        if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "cuGraphExecUpdate: CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE (%d): %s "
                            "(CUgraphExecUpdateResult %d); the target graph is unchanged", (int)r,
                            gf__cuda_update_why(info.result), (int)info.result);
        return gf__cuda_fail(r, "cuGraphExecUpdate");
    }
    gf__cu.GraphDestroy((CUgraph)target->native_graph);
    target->native_graph = copy;
    return GF_OK;
}

static void gf__cuda_graph_destroy(gf_graph *g) {
    if (gf__cuda_enter(g->dev) != GF_OK) return;
    if (g->native_exec) gf__cu.GraphExecDestroy((CUgraphExec)g->native_exec);
    if (g->native_graph) gf__cu.GraphDestroy((CUgraph)g->native_graph);
    g->native_exec = NULL;
    g->native_graph = NULL;
}

#undef GF__CUDA_CHECK
#undef GF__CUDA_ENTER
#undef GF__CUSTREAM
#undef GF__CUEVENT

static const gf__backend gf__cuda_table = {
    GF_BACKEND_CUDA, "cuda",
    gf__cuda_load, gf__cuda_device_count, gf__cuda_device_open, gf__cuda_device_close, gf__cuda_memory_info,
    gf__cuda_buffer_alloc, gf__cuda_buffer_free, gf__cuda_buffer_alloc_async, gf__cuda_buffer_free_async,
    gf__cuda_host_alloc, gf__cuda_host_free,
    gf__cuda_stream_create, gf__cuda_stream_destroy, gf__cuda_stream_synchronize, gf__cuda_stream_query,
    gf__cuda_copy, gf__cuda_fill, gf__cuda_prefetch, gf__cuda_host_callback,
    gf__cuda_event_create, gf__cuda_event_destroy, gf__cuda_event_record, gf__cuda_stream_wait_event,
    gf__cuda_event_synchronize, gf__cuda_event_query, gf__cuda_event_elapsed_ms,
    gf__cuda_module_load, gf__cuda_module_unload, gf__cuda_kernel_get, gf__cuda_launch,
    gf__cuda_capture_begin, gf__cuda_capture_end, gf__cuda_graph_launch, gf__cuda_graph_update,
    gf__cuda_graph_destroy,
    NULL
};

static const gf__backend *gf__cuda_backend(void) { return &gf__cuda_table; }

#endif /* GPUFLOW_IMPLEMENTATION && GPUFLOW_CUDA */
