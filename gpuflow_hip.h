/* gpuflow_hip.h -- the HIP backend of gpuflow (AMD's HIP runtime, loaded at run time).

    In the one file that holds the implementation:
        #define GPUFLOW_IMPLEMENTATION
        #define GPUFLOW_HIP
        #include "gpuflow_hip.h"

        cc -std=c99 app.c -I/opt/rocm/include -o app -pthread -ldl

    Needs the headers of HIP 5.2 or newer (hip/hip_version.h; checked at compile time) and a
    runtime of the same major version, at least that new. hip/hip_runtime_api.h and
    hip/hiprtc.h are used for types, constants and the prototypes the driver table is checked
    against (this header defines __HIP_PLATFORM_AMD__ when nothing else has); libamdhip64 and
    libhiprtc are never linked. A program built with this backend runs on a machine without an
    AMD GPU: GF_BACKEND_AUTO passes over HIP and gf_last_error() says why.

    Optional defines: GPUFLOW_ROCTX makes gf_range_push / gf_range_pop roctx ranges (rocprof,
    Omnitrace; roctx is loaded at run time, nothing to link or include). GPUFLOW_NO_HIPRTC
    leaves the run-time compiler out (for an include path without hip/hiprtc.h): kernels from
    source are then refused.

    HOW GPUFLOW MAPS ONTO HIP
    =========================
    - Loading: dlopen("libamdhip64.so.<HIP_VERSION_MAJOR>"), the runtime of the major version
      of the headers this was compiled with (each ROCm major changes the ABI: ROCm 6 changed
      hipDeviceProp_t and hipPointerAttribute_t), else the plain "libamdhip64.so" (Windows:
      amdhip64_<major>.dll, else amdhip64.dll); every entry point by its exported name through
      dlsym. The entry points are one list (GF__HIP_API) that makes the driver table, the
      loader's names and a compile-time check of each slot's type against the prototype in
      hip_runtime_api.h (a never-called function of sizeof comparisons: a mismatch fails the
      build, and nothing is referenced at link time). HIP has no versioned lookup, so the
      plain symbol is the one whose signature the header declares; an entry point the header
      renames by macro (HIP_API_PER_THREAD_DEFAULT_STREAM's _spt variants) fails that check:
      compile the implementation without it (gpuflow never uses the null stream). The one
      exception is a second list (GF__HIP_VERSIONED_API: hipGetDeviceProperties, which ROCm 6's
      headers rename hipGetDevicePropertiesR0600 with a new struct layout, while the runtime
      keeps the plain name for the old layout): those are looked up by the name the headers
      give them, so the runtime fills the struct gpuflow was compiled with. A few entry points
      are optional (older runtimes lack them): without them the feature they serve reports
      GF_ERROR_NOT_SUPPORTED (gpuflow declares the few that are newer than the 5.2 headers:
      where a newer header declares them too, the two must agree). hipInit(0) once; a
      runtime that finds no device (hipGetDeviceCount: hipErrorNoDevice) loads, and reports
      that reason as GF_ERROR_NO_DEVICE instead of a count.
    - Every call into the runtime goes through GF__HIP_CALL, the fault-injection seam: in a
      test build (GPUFLOW_FAULT_INJECTION) gpuflow_fault_hit("hipMalloc") can make that call
      fail with hipErrorUnknown without reaching the runtime (hipGetErrorName excepted).
    - Device: HIP keeps a current device per thread. The calls that act on it (allocation,
      stream, event and module creation, memory info, graph instantiation) first make the
      gf_device's ordinal current with hipSetDevice; stream-ordered work goes through the
      stream, which carries its device. So gpuflow leaves the calling thread's current
      device set to the last gf_device it created something on.
    - gf_buffer: the device pointer in buf->native (hipMalloc, or hipMallocManaged for managed
      buffers); stream-ordered buffers come from a memory pool of gpuflow's own per gf_device
      (hipMemPoolCreate, hipMallocFromPoolAsync / hipFreeAsync; the device's default pool is
      left to the process), which keeps freed memory for reuse up to the core's default
      (GF__DEFAULT_POOL_KEEP, a quarter of the device) and is destroyed at close.
      gf_device_enable_peer(a, b) grants a's GPU access to b's pool (hipMemPoolSetAccess)
      beside hipDeviceEnablePeerAccess, which reaches b's plain allocations only. Pinned host memory:
      hipHostMalloc(Portable). HIP performs a copy to or from pageable (malloc'd) memory
      synchronously, so the backend tells the core which memory is pinned (host_pinned:
      hipHostGetFlags succeeds) and the core stages the other copies through pinned memory
      to keep them asynchronous (gpuflow.h, "staged copies").
    - gf_stream: a hipStream_t made with hipStreamNonBlocking; HIGH / NORMAL / LOW map onto
      the device's priority range (greatest, middle, least).
    - gf_event: a hipEvent_t, hipEventDisableTiming unless GF_EVENT_TIMING was asked for.
    - gf_module / gf_kernel: hipModuleLoadData on desc->hip_code (an AMD GPU code object or
      an offload bundle holding one for this GPU), or on what hiprtc made of desc->source
      (below), hipModuleGetFunction (kernels need C linkage: extern "C"). A launch is
      hipModuleLaunchKernel with kernelParams: args[i].value, or for a buffer a pointer to its
      device pointer. build_options apply to source only.
      info.max_kernel_args_bytes: 4,096, HIP's limit on AMD GPUs (HIP kept CUDA's classic
      parameter space; the runtime has no attribute to ask).
    - gf_graph: native stream capture (hipStreamBeginCapture / EndCapture), instantiated once,
      replayed with one hipGraphLaunch; gf_graph_update is hipGraphExecUpdate. HIP's capture
      does not record hipGraphLaunch, so a graph launched on a capturing stream is embedded
      as a child graph node instead. gpuflow's own synchronizing and allocating calls run
      in RELAXED capture mode, so a GF_CAPTURE_GLOBAL capture does not make them fail (see
      GF__HIP_RELAXED). gf_graph_set_kernel_args is hipGraphExecKernelNodeSetParams on the
      launch's node (found with hipStreamGetCaptureInfo_v2 as it was captured), applied to
      the hipGraph_t that a launch inside another capture embeds as well. gf_graph_write_dot
      is hipGraphDebugDotPrint (HIP 5.5+, verbose: every node's parameters) of the hipGraph_t
      that describes what the graph runs; before HIP 5.5, or where it fails, the core writes
      its own DOT of the graph's launches.
    - Ranges: gf_range_push / pop are the core's profiler spans; with GPUFLOW_ROCTX also
      roctxRangePushA / roctxRangePop, from libroctx64.so.4 (roctracer) or
      librocprofiler-sdk-roctx.so.0 (rocprofiler-sdk), loaded with the runtime (without
      either, a warning says so once and ranges stay gpuflow's own). roctx nests ranges per
      thread, not per stream: push and pop one range on one thread.
    - Memory and copies: gf_fill16/32_async are hipMemsetD16/D32Async, gf_copy_2d_async one
      hipMemcpyParam2DAsync (pageable host memory: row by row through the core's stages),
      gf_device_trim hipMemPoolTrimTo on gpuflow's pool, whose kept memory (reserved minus
      used, hipMemPoolGetAttribute) gf_device_memory_stats counts as cached. Views are the
      parent's device pointer plus the offset.
    - Interop: gf_buffer_native is the device pointer, gf_stream_native the hipStream_t,
      gf_event_native the hipEvent_t, gf_kernel_native the hipFunction_t. HIP's native device
      is its ordinal: gf_device_get_native gives it (context NULL; gf_device_native returns
      it cast to a pointer, so device 0 is NULL), and gf_device_open_native takes it (context
      and device unused). Nothing of such a device is gpuflow's: its default pool stays its
      owner's, and closing it releases only what gpuflow made; as with any gf_device, gpuflow
      makes the ordinal current on the threads that call it. gf_stream_wrap takes a
      hipStream_t (of this device, checked with hipStreamGetDevice on HIP 5.6+; taken on trust
      before), gf_buffer_wrap a device pointer (checked with hipPointerGetAttributes: memory
      of this device, and hipMemGetAddressRange: the size fits its allocation); destroying
      the wrappers leaves the stream and the memory to their owner.
    - External memory and semaphores (gf_buffer_import, ...): an opaque fd (Vulkan) is
      hipImportExternalMemory + hipExternalMemoryGetMappedBuffer of the whole allocation, the
      buffer at its offset; the runtime owns an fd it imports, so it gets a dup() and the
      caller's stays the caller's. Semaphores: opaque fds, binary or timeline (HIP 5's headers
      lack the timeline type's name; CUDA's value 9 is ROCm 6's), signalled and waited with
      hipSignal/WaitExternalSemaphoresAsync. Windows: the Win32, KMT and D3D types. HIP exports
      nothing and makes no semaphore of its own (GF_ERROR_NOT_SUPPORTED).

    KERNELS FROM ONE SOURCE: HIPRTC
    ===============================
    A module described by source (gf_module_desc.source: gpuflow's dialect; gpuflow.h puts the
    CUDA prelude in front, whose CUDA-style builtins hiprtc takes) is compiled by hiprtc into a
    code object for the device, then loaded as any hip_code (a disk cache, when one is named,
    keeps the code object).
    - Loading, once, at the first compile: the HIP runtime itself first (ROCm 5's libamdhip64
      exports hiprtc), else dlopen of libhiprtc.so.<the runtime's major version> (ROCm 6 moved
      hiprtc there; a hiprtc of another ROCm makes code objects its runtime may not load),
      then libhiprtc.so.7, .6, .5, libhiprtc.so and /opt/rocm/lib/libhiprtc.so, for machines
      whose loader cache does not list ROCm's directory (Windows: the HIP SDK's
      hiprtc<MMmm>.dll, 0605 down to 0505). Its entry points are one list too
      (GF__HIPRTC_API: table, loader, signature check against hiprtc.h, fault seam). Without
      it a source module is GF_ERROR_NOT_SUPPORTED: "hiprtc: the HIP runtime does not export it
      and libhiprtc.so.6 does not load (<why>): install ROCm's hiprtc (...)"; code objects in
      hip_code work as before.
    - Options: --offload-arch=<gcnArchName> of the device ("gfx90a:sramecc+:xnack-", from
      hipGetDeviceProperties; where the runtime cannot say it, none: hiprtc compiles for the
      current device, which the compile makes this one), then build_options, split at spaces
      ("..." or '...' keep spaces inside one option). build_options that name an
      --offload-arch themselves replace gpuflow's. Helper functions need GF_DEVICE: hiprtc has
      no counterpart to NVRTC's -default-device.
    - A compile error, or an option hiprtc refuses, is GF_ERROR_BUILD "hiprtc: <source_name>:
      <hiprtc's log>".
    - compiler_id (what the cache key holds): the device's name and gcnArchName, the runtime's
      version, hiprtc's version and where it was found.
    - gf__hip_hiprtc_to_code(arch, name, text, options, &code, &size) needs no GPU when arch is
      named: tests/hip_on_cuda/hiprtc_check.c compiles every kernel of the tests and examples
      to code objects with it, so a dialect mistake for HIP fails where it runs.

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
#if defined(__has_include)
#  if !__has_include(<hip/hip_version.h>) || !__has_include(<hip/hip_runtime_api.h>)
#    error "gpuflow: GPUFLOW_HIP needs HIP's headers (5.2 or newer: hip/hip_version.h, hip/hip_runtime_api.h) on the include path: add -I/opt/rocm/include (Debian: apt-get install libamdhip64-dev), or leave GPUFLOW_HIP undefined"
#  endif
#  if !defined(GPUFLOW_NO_HIPRTC) && !__has_include(<hip/hiprtc.h>)
#    error "gpuflow: GPUFLOW_HIP needs hip/hiprtc.h (part of HIP's headers: Debian's libamdhip64-dev, or ROCm's include directory) for kernels from source, or define GPUFLOW_NO_HIPRTC to leave the run-time compiler out"
#  endif
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
#ifndef GPUFLOW_NO_HIPRTC
#  include <hip/hiprtc.h>            /* types and declarations only: hiprtc is loaded at run time */
#endif
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif
/* Entry points newer than the oldest headers gpuflow takes, declared as the runtimes that have
   them do (HIP 5.5 added hipGraphDebugDotPrint, HIP 5.6 hipStreamGetDevice). Where the header
   declares one too, the two must agree or the build fails: the signature check below holds
   for these slots as for the rest. */
#ifdef __cplusplus
extern "C" {
#endif
hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t *device);
hipError_t hipGraphDebugDotPrint(hipGraph_t graph, const char *path, unsigned int flags);
#ifdef __cplusplus
}
#endif

#define GF__HIP_STR(x) #x
#define GF__HIP_XSTR(x) GF__HIP_STR(x)
/* The runtime of the headers' major version first: each ROCm major changes the ABI (ROCm 6's
   hipDeviceProp_t and hipPointerAttribute_t, among others), so a program built against HIP 5
   headers must not take a ROCm 6 libamdhip64.so that a development package links to the plain
   name. The plain name last, for installs that have only that. */
#if defined(_WIN32)
static const char *const gf__hip_libraries[] = { "amdhip64_" GF__HIP_XSTR(HIP_VERSION_MAJOR) ".dll", "amdhip64.dll" };
#else
static const char *const gf__hip_libraries[] = { "libamdhip64.so." GF__HIP_XSTR(HIP_VERSION_MAJOR), "libamdhip64.so" };
#endif

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
    X(MemPoolCreate, hipError_t, (hipMemPool_t *, const hipMemPoolProps *), 1, OutOfMemory) \
    X(MemPoolDestroy, hipError_t, (hipMemPool_t), 1, Unknown) \
    X(MemPoolSetAccess, hipError_t, (hipMemPool_t, const hipMemAccessDesc *, size_t), 1, Unknown) \
    X(MemPoolGetAccess, hipError_t, (hipMemAccessFlags *, hipMemPool_t, hipMemLocation *), 1, Unknown) \
    X(MemPoolSetAttribute, hipError_t, (hipMemPool_t, hipMemPoolAttr, void *), 1, Unknown) \
    X(MemPoolTrimTo, hipError_t, (hipMemPool_t, size_t), 1, Unknown) \
    X(MemPoolGetAttribute, hipError_t, (hipMemPool_t, hipMemPoolAttr, void *), 1, Unknown) \
    X(MallocFromPoolAsync, hipError_t, (void **, size_t, hipMemPool_t, hipStream_t), 1, OutOfMemory) \
    X(FreeAsync, hipError_t, (void *, hipStream_t), 1, Unknown) \
    X(MemPrefetchAsync, hipError_t, (const void *, size_t, int, hipStream_t), 0, Unknown) \
    X(MemcpyHtoDAsync, hipError_t, (hipDeviceptr_t, void *, size_t, hipStream_t), 0, Unknown) \
    X(MemcpyDtoHAsync, hipError_t, (void *, hipDeviceptr_t, size_t, hipStream_t), 0, Unknown) \
    X(MemcpyDtoDAsync, hipError_t, (hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t), 0, Unknown) \
    X(MemsetD8Async, hipError_t, (hipDeviceptr_t, unsigned char, size_t, hipStream_t), 0, Unknown) \
    X(MemsetD16Async, hipError_t, (hipDeviceptr_t, unsigned short, size_t, hipStream_t), 0, Unknown) \
    X(MemsetD32Async, hipError_t, (hipDeviceptr_t, int, size_t, hipStream_t), 0, Unknown) \
    X(MemcpyParam2DAsync, hipError_t, (const hip_Memcpy2D *, hipStream_t), 0, Unknown) \
    /* gf_buffer_wrap's checks: whose memory, and how far the allocation reaches */ \
    X(PointerGetAttributes, hipError_t, (hipPointerAttribute_t *, const void *), 0, Unknown) \
    X(MemGetAddressRange, hipError_t, (hipDeviceptr_t *, size_t *, hipDeviceptr_t), 0, Unknown) \
    X(StreamCreateWithPriority, hipError_t, (hipStream_t *, unsigned int, int), 0, Unknown) \
    X(StreamDestroy, hipError_t, (hipStream_t), 0, Unknown) \
    X(StreamQuery, hipError_t, (hipStream_t), 0, Unknown) \
    X(StreamSynchronize, hipError_t, (hipStream_t), 0, Unknown) \
    X(StreamWaitEvent, hipError_t, (hipStream_t, hipEvent_t, unsigned int), 0, Unknown) \
    /* newer than HIP 5.2 (declared below where the header lacks it): gf_stream_wrap's device check */ \
    X(StreamGetDevice, hipError_t, (hipStream_t, hipDevice_t *), 1, Unknown) \
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
    /* gf_graph_set_kernel_args: a launch's node, in the exec and in the graph it describes */ \
    X(GraphExecKernelNodeSetParams, hipError_t, (hipGraphExec_t, hipGraphNode_t, const hipKernelNodeParams *), 0, Unknown) \
    X(GraphKernelNodeSetParams, hipError_t, (hipGraphNode_t, const hipKernelNodeParams *), 0, Unknown) \
    X(GraphNodeFindInClone, hipError_t, (hipGraphNode_t *, hipGraphNode_t, hipGraph_t), 0, Unknown) \
    /* nodes added to a capture by hand (a graph launched, or a host callback without \
       hipLaunchHostFunc): optional, else GF_ERROR_NOT_SUPPORTED */ \
    X(StreamGetCaptureInfo_v2, hipError_t, (hipStream_t, hipStreamCaptureStatus *, unsigned long long *, \
                                            hipGraph_t *, const hipGraphNode_t **, size_t *), 1, Unknown) \
    X(GraphAddChildGraphNode, hipError_t, (hipGraphNode_t *, hipGraph_t, const hipGraphNode_t *, size_t, hipGraph_t), 1, Unknown) \
    X(GraphAddHostNode, hipError_t, (hipGraphNode_t *, hipGraph_t, const hipGraphNode_t *, size_t, const hipHostNodeParams *), 1, Unknown) \
    X(StreamUpdateCaptureDependencies, hipError_t, (hipStream_t, hipGraphNode_t *, size_t, unsigned int), 1, Unknown) \
    X(ThreadExchangeStreamCaptureMode, hipError_t, (hipStreamCaptureMode *), 0, Unknown) \
    /* newer than HIP 5.2 (declared above where the header lacks it): else the core's DOT */ \
    X(GraphDebugDotPrint, hipError_t, (hipGraph_t, const char *, unsigned int), 1, Unknown) \
    /* more than one device */ \
    X(DeviceCanAccessPeer, hipError_t, (int *, int, int), 0, Unknown) \
    X(DeviceEnablePeerAccess, hipError_t, (int, unsigned int), 0, Unknown) \
    X(MemcpyPeerAsync, hipError_t, (void *, int, const void *, int, size_t, hipStream_t), 0, Unknown) \
    /* interop (optional: without them the backend takes no handle type) */ \
    X(ImportExternalMemory, hipError_t, (hipExternalMemory_t *, const hipExternalMemoryHandleDesc *), 1, Unknown) \
    X(ExternalMemoryGetMappedBuffer, hipError_t, (void **, hipExternalMemory_t, const hipExternalMemoryBufferDesc *), 1, Unknown) \
    X(DestroyExternalMemory, hipError_t, (hipExternalMemory_t), 1, Unknown) \
    X(ImportExternalSemaphore, hipError_t, (hipExternalSemaphore_t *, const hipExternalSemaphoreHandleDesc *), 1, Unknown) \
    X(SignalExternalSemaphoresAsync, hipError_t, (const hipExternalSemaphore_t *, const hipExternalSemaphoreSignalParams *, \
                                                  unsigned int, hipStream_t), 1, Unknown) \
    X(WaitExternalSemaphoresAsync, hipError_t, (const hipExternalSemaphore_t *, const hipExternalSemaphoreWaitParams *, \
                                                unsigned int, hipStream_t), 1, Unknown) \
    X(DestroyExternalSemaphore, hipError_t, (hipExternalSemaphore_t), 1, Unknown)

/* V(name, return type, parameters, fails_as): entry points whose exported name is the one the
   headers give them after their own macros. ROCm 6's headers rename hipGetDeviceProperties to
   hipGetDevicePropertiesR0600, whose hipDeviceProp_t has a new layout, and keep the plain
   name exported with the old layout: looked up by the headers' name, the entry fills the
   struct gpuflow was compiled with. Optional; their slots live in the same table. */
#define GF__HIP_VERSIONED_API(V) \
    V(GetDeviceProperties, hipError_t, (hipDeviceProp_t *, int), Unknown)

/* The table, filled once by gf__hip_load_runtime; read-only afterwards. */
typedef struct gf__hip_api {
#define GF__HIP_SLOT(name, ret, params, optional, fails_as) ret (*name) params;
#define GF__HIP_VSLOT(name, ret, params, fails_as) ret (*name) params;
    GF__HIP_API(GF__HIP_SLOT)
    GF__HIP_VERSIONED_API(GF__HIP_VSLOT)
#undef GF__HIP_SLOT
#undef GF__HIP_VSLOT
} gf__hip_api;

typedef struct gf__hip_entry { const char *name; size_t offset; int optional; } gf__hip_entry;
static const gf__hip_entry gf__hip_entries[] = {
#define GF__HIP_ENTRY(name, ret, params, optional, fails_as) { "hip" #name, offsetof(gf__hip_api, name), optional },
#define GF__HIP_VENTRY(name, ret, params, fails_as) { GF__HIP_XSTR(hip##name), offsetof(gf__hip_api, name), 1 },
    GF__HIP_API(GF__HIP_ENTRY)
    GF__HIP_VERSIONED_API(GF__HIP_VENTRY)
#undef GF__HIP_ENTRY
#undef GF__HIP_VENTRY
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
static void gf__hip_check_signatures(void) {
#define GF__HIP_SAME(name, ret, params, optional, fails_as) \
    (void)sizeof(gf__hip.name == GF__HIP_PROTO(name)); \
    (void)sizeof(char[sizeof(GF__HIP_XSTR(hip##name)) == sizeof("hip" #name) ? 1 : -1]);
#define GF__HIP_VSAME(name, ret, params, fails_as) (void)sizeof(gf__hip.name == GF__HIP_PROTO(name));
    GF__HIP_API(GF__HIP_SAME)
    GF__HIP_VERSIONED_API(GF__HIP_VSAME)
#undef GF__HIP_SAME
#undef GF__HIP_VSAME
}
#undef GF__HIP_PROTO

/* What a fault-injected call of each entry point returns: gf__hip_fault_<name>. */
enum {
#define GF__HIP_FAULT_CODE(name, ret, params, optional, fails_as) gf__hip_fault_##name = hipError##fails_as,
#define GF__HIP_VFAULT_CODE(name, ret, params, fails_as) gf__hip_fault_##name = hipError##fails_as,
    GF__HIP_API(GF__HIP_FAULT_CODE)
    GF__HIP_VERSIONED_API(GF__HIP_VFAULT_CODE)
#undef GF__HIP_FAULT_CODE
#undef GF__HIP_VFAULT_CODE
    gf__hip_fault_codes_end
};

/* r = hip<name> args, through the fault-injection seam: a test build may fail any entry point
   without calling it, as the runtime would fail it. */
#define GF__HIP_CALL(name, args) (GF__FAULT("hip" #name) ? (hipError_t)gf__hip_fault_##name : gf__hip.name args)

static gf__driver gf__hip_runtime;
static int gf__hip_version;           /* hipDriverGetVersion's answer (HIP_VERSION's form: 50221153); 0 if unknown */

/* Per gf_device state. */
typedef struct gf__hip_device {
    int ordinal;
    hipDevice_t dev;
    int prio_least, prio_greatest;    /* numerically: least >= greatest */
    int concurrent_managed;           /* prefetching to the GPU is meaningful */
    hipMemPool_t pool;                /* gpuflow's own pool on the device; NULL without stream-ordered allocation */
    hipStream_t free_stream;          /* released memory goes back here (hipFreeAsync); NULL: hipFree */
    char arch[256];                   /* hipDeviceProp_t's gcnArchName ("gfx90a:sramecc+:xnack-"); "" if unknown */
} gf__hip_device;

/* ---- errors ----------------------------------------------------------------------------- */
/* The runtime's name for a code; not a fault point: it names the others. */
static const char *gf__hip_error_name(int r) {
    const char *name = gf__hip.GetErrorName((hipError_t)r);
    return name ? name : "hipErrorUnrecognized";
}

/* How hipError_t codes map onto gpuflow's and are named (the core's gf__native_codes): the
   capture codes are GF_ERROR_CAPTURE, "not allowed in this stream capture". */
static const int gf__hip_capture_codes[] = {
    hipErrorStreamCaptureUnsupported, hipErrorStreamCaptureInvalidated, hipErrorStreamCaptureMerge,
    hipErrorStreamCaptureUnmatched, hipErrorStreamCaptureUnjoined, hipErrorStreamCaptureIsolation,
    hipErrorStreamCaptureImplicit, hipErrorCapturedEvent, hipErrorStreamCaptureWrongThread };
static const int gf__hip_lost_codes[] = { hipErrorIllegalAddress, hipErrorLaunchFailure };   /* the context's sticky failures, as CUDA's */
static const gf__native_codes gf__hip_codes = {
    hipSuccess, hipErrorNotReady, hipErrorOutOfMemory, hipErrorNotFound, hipErrorNotSupported, hipErrorNoDevice,
    gf__hip_capture_codes, (int)(sizeof gf__hip_capture_codes / sizeof gf__hip_capture_codes[0]),
    gf__hip_lost_codes, (int)(sizeof gf__hip_lost_codes / sizeof gf__hip_lost_codes[0]), gf__hip_error_name };

/* "hipXxx: hipErrorName (n)", with the gpuflow code that hipError_t maps to. */
static gf_result gf__hip_fail(hipError_t r, const char *call) { return gf__native_fail(&gf__hip_codes, (int)r, call); }

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

/* ---- ranges: roctx (GPUFLOW_ROCTX) -------------------------------------------------------- */
/* gf_range_push / gf_range_pop as roctx ranges, which rocprof and Omnitrace show. roctx is a
   library of its own (roctracer's libroctx64, or rocprofiler-sdk's), loaded with the runtime;
   no header is needed for its two entry points. Without it ranges are gpuflow's own spans
   only, and a warning says so once. Not on Windows (ROCm's profilers are Linux tools). */
#if defined(GPUFLOW_ROCTX) && !defined(_WIN32)
#  define GF__HIP_ROCTX
static int (*gf__roctx_push)(const char *message);   /* roctxRangePushA; written once, at loading */
static int (*gf__roctx_pop)(void);                   /* roctxRangePop */
static void gf__hip_roctx_load(void) {
    static const char *const names[] = { "libroctx64.so.4", "libroctx64.so", "librocprofiler-sdk-roctx.so.0",
                                         "librocprofiler-sdk-roctx.so" };
    char first_error[256] = "";
    void *lib = NULL, *push = NULL, *pop = NULL;
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        if (!(lib = gf__dlopen(names[i])) && !first_error[0]) snprintf(first_error, sizeof first_error, "%s", gf__dlerror());
    if (lib && (push = gf__dlsym(lib, "roctxRangePushA")) != NULL && (pop = gf__dlsym(lib, "roctxRangePop")) != NULL) {
        memcpy(&gf__roctx_push, &push, sizeof push);   /* object to function pointer */
        memcpy(&gf__roctx_pop, &pop, sizeof pop);
        return;
    }
    gf__notice(GF_LOG_WARNING, "HIP: GPUFLOW_ROCTX: %s: gf_range_push / gf_range_pop are gpuflow's own spans only "
               "(install roctracer or rocprofiler-sdk)", lib ? "the roctx library has no roctxRangePushA / roctxRangePop" : first_error);
}
static void gf__hip_range(gf_stream *s, const char *name) {
    (void)s;
    if (!gf__roctx_push) return;
    if (name) (void)gf__roctx_push(name);
    else (void)gf__roctx_pop();
}
#endif

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
        snprintf(d->why, sizeof d->why, "HIP: cannot load %s (%s): ROCm's HIP runtime installs it; without it, open "
                 "GF_BACKEND_AUTO to fall back", gf__hip_libraries[0], first_error);
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
    gf__hip_version = version;
    if (version && version / 10000000 != HIP_VERSION_MAJOR) {   /* the plain name's runtime, of another ABI */
        snprintf(d->why, sizeof d->why, "HIP: the runtime loaded is %d.%d, and gpuflow was built with HIP %d headers: each ROCm major "
                 "changes the ABI (structures, enum values), so it is not used; build with that version's headers or install ROCm %d's runtime",
                 version / 10000000, version / 100000 % 100, HIP_VERSION_MAJOR, HIP_VERSION_MAJOR);
        return;
    }
    r = GF__HIP_CALL(Init, (0));
    rc = GF__HIP_CALL(GetDeviceCount, (&count));
    if (rc == hipErrorNoDevice || (rc == hipSuccess && count == 0)) {
        /* The runtime works (hipInit then says hipErrorInvalidDevice); there is simply
           nothing to open: every device_count says so. */
        char detail[96];
        if (rc == hipSuccess) snprintf(detail, sizeof detail, "0 devices");
        else snprintf(detail, sizeof detail, "%s (%d)", gf__hip_error_name(rc), (int)rc);
        gf__driver_no_device(d, "HIP: the runtime (%d.%d.%d) found no HIP device (hipGetDeviceCount: %s)",
                             version / 10000000, version / 100000 % 100, version % 100000, detail);
        d->result = GF_OK;
        return;
    }
    if (r != hipSuccess || rc != hipSuccess) {
        snprintf(d->why, sizeof d->why, "HIP: %s: %s (%d)", r != hipSuccess ? "hipInit" : "hipGetDeviceCount",
                 gf__hip_error_name(r != hipSuccess ? r : rc), (int)(r != hipSuccess ? r : rc));
        return;
    }
#ifdef GF__HIP_ROCTX
    gf__hip_roctx_load();
#endif
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
#define GF__HIP_PTR(buf) ((void *)(uintptr_t)(buf)->native)   /* a buffer's device pointer */
#define GF__HIPEVENT(e)  ((hipEvent_t)(e)->native)

static void *gf__hip_at(const gf_buffer *buf, size_t offset) { return (char *)GF__HIP_PTR(buf) + offset; }

/* ---- devices ---------------------------------------------------------------------------- */
/* No device is GF_ERROR_NO_DEVICE with the runtime's reason (count 0): the core passes that
   text on, where a bare 0 would get a generic one. */
static gf_result gf__hip_device_count(int *count) {
    gf_result e;
    *count = 0;
    if ((e = gf__driver_has_device(&gf__hip_runtime)) != GF_OK) return e;
    GF__HIP_CHECK(GetDeviceCount, (count));
    if (*count == 0) return gf__fail(GF_ERROR_NO_DEVICE, "HIP: the runtime reports no HIP device (hipGetDeviceCount: 0)");
    return GF_OK;
}

/* HIP's parameter space: 4 KiB on AMD GPUs through every runtime gpuflow takes (CUDA's classic
   limit, which HIP kept; the driver API has no attribute to ask). */
#define GF__HIP_KERNEL_ARGS_BYTES 4096

/* The device's target as hiprtc names it (gcnArchName: "gfx90a:sramecc+:xnack-"), from
   hipGetDeviceProperties under the name and layout of the headers gpuflow was built with (see
   GF__HIP_VERSIONED_API); "" where the runtime cannot say (hiprtc then compiles for the
   current device). The struct sits in a larger buffer: a runtime that writes a longer layout
   than the headers' writes into the padding, not past it. */
typedef union gf__hip_props { hipDeviceProp_t p; char pad[8192]; } gf__hip_props;
static void gf__hip_device_arch(int ordinal, char *out, size_t cap) {
    gf__hip_props *props;
    out[0] = 0;
    if (!gf__hip.GetDeviceProperties || !(props = (gf__hip_props *)gf__malloc(sizeof *props))) return;
    memset(props, 0, sizeof *props);
    if (GF__HIP_CALL(GetDeviceProperties, (&props->p, ordinal)) == hipSuccess) {
        props->p.gcnArchName[sizeof props->p.gcnArchName - 1] = 0;
        snprintf(out, cap, "%s", props->p.gcnArchName);
    }
    gf__free(props);
}

/* Gives plain device memory back (the device current): stream-ordered on a stream of
   gpuflow's own, then that stream synchronized, where hipFree may wait for the whole device
   (as CUDA's cuMemFree does; gpuflow_cuda.h has the H100's figures). */
static void gf__hip_free_plain(gf__hip_device *d, void *p) {
    hipError_t r = hipErrorNotSupported;
    if (d && d->free_stream) GF__HIP_RELAXED(r, FreeAsync, (p, d->free_stream));
    if (r == hipSuccess) GF__HIP_RELAXED(r, StreamSynchronize, (d->free_stream));
    else GF__HIP_RELAXED(r, Free, (p));   /* no pools, or the driver refused: the waiting free */
    (void)r;
}

/* Each step names its entry point; the first failure frees d and reports it. */
#define GF__HIP_OPEN_STEP(name, args) do { if ((r = GF__HIP_CALL(name, args)) != hipSuccess) { \
        call = "hip" #name; goto fail; } } while (0)
/* Both opens: device ordinal made current and described in dev->info. */
static gf_result gf__hip_device_start(gf_device *dev, int ordinal) {
    gf__hip_device *d = (gf__hip_device *)gf__calloc(sizeof *d);
    gf_device_info *info = &dev->info;
    size_t total = 0;
    int units = 0, managed = 0, pools = 0, concurrent = 0;
    const char *call;
    hipError_t r;
    if (!d) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory opening device %d", ordinal);
    d->ordinal = ordinal;
    GF__HIP_OPEN_STEP(SetDevice, (ordinal));
    GF__HIP_OPEN_STEP(DeviceGet, (&d->dev, ordinal));
    GF__HIP_OPEN_STEP(DeviceGetName, (info->name, (int)sizeof info->name, d->dev));
    GF__HIP_OPEN_STEP(DeviceTotalMem, (&total, d->dev));
    GF__HIP_OPEN_STEP(DeviceGetStreamPriorityRange, (&d->prio_least, &d->prio_greatest));

    /* A failed attribute query fails the open, naming it: read as 0 it would open a device
       that quietly lacks pools or managed memory, and the later refusal would name nothing. */
    GF__HIP_OPEN_STEP(DeviceGetAttribute, (&units, hipDeviceAttributeMultiprocessorCount, ordinal));
    GF__HIP_OPEN_STEP(DeviceGetAttribute, (&managed, hipDeviceAttributeManagedMemory, ordinal));
    GF__HIP_OPEN_STEP(DeviceGetAttribute, (&pools, hipDeviceAttributeMemoryPoolsSupported, ordinal));
    GF__HIP_OPEN_STEP(DeviceGetAttribute, (&concurrent, hipDeviceAttributeConcurrentManagedAccess, ordinal));
    {   /* launch limits, which gf_launch checks before the runtime does */
        static const hipDeviceAttribute_t limits[8] = {
            hipDeviceAttributeMaxThreadsPerBlock, hipDeviceAttributeMaxBlockDimX, hipDeviceAttributeMaxBlockDimY,
            hipDeviceAttributeMaxBlockDimZ, hipDeviceAttributeMaxGridDimX, hipDeviceAttributeMaxGridDimY,
            hipDeviceAttributeMaxGridDimZ, hipDeviceAttributeMaxSharedMemoryPerBlock };
        unsigned *into[8];
        int v = 0, i;
        into[0] = &info->max_threads_per_block;
        into[7] = &info->max_shared_per_block;
        for (i = 0; i < 3; i++) { into[1 + i] = &info->max_block[i]; into[4 + i] = &info->max_grid[i]; }
        for (i = 0; i < 8; i++) { GF__HIP_OPEN_STEP(DeviceGetAttribute, (&v, limits[i], ordinal)); *into[i] = v > 0 ? (unsigned)v : 0; }
    }
    info->total_memory = total;
    info->compute_units = units;
    info->native_graphs = 1;
    info->stream_priorities = d->prio_least != d->prio_greatest;
    info->managed_memory = managed != 0;
    info->async_alloc = gf__hip.MallocFromPoolAsync && gf__hip.FreeAsync && gf__hip.MemPoolCreate && gf__hip.MemPoolDestroy &&
                        gf__hip.MemPoolSetAttribute && gf__hip.MemPoolSetAccess && gf__hip.MemPoolGetAccess && gf__hip.MemPoolTrimTo && pools != 0;
    info->spirv = 0;
    info->max_kernel_args_bytes = GF__HIP_KERNEL_ARGS_BYTES;
    d->concurrent_managed = concurrent != 0;
    gf__hip_device_arch(ordinal, d->arch, sizeof d->arch);

    if (info->async_alloc) {
        /* A pool of gpuflow's own, not the device's default one (the process's: hipMallocAsync's,
           its threshold and trims its owners'). Freed memory stays in it across
           synchronizations, up to the core's default (GF__DEFAULT_POOL_KEEP): reuse without
           holding the whole card away from other processes. */
        uint64_t keep = (uint64_t)GF__DEFAULT_POOL_KEEP(total);
        hipMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = hipMemAllocationTypePinned;
        props.handleTypes = hipMemHandleTypeNone;
        props.location.type = hipMemLocationTypeDevice;
        props.location.id = ordinal;
        GF__HIP_OPEN_STEP(MemPoolCreate, (&d->pool, &props));
        if ((r = GF__HIP_CALL(MemPoolSetAttribute, (d->pool, hipMemPoolAttrReleaseThreshold, &keep))) != hipSuccess) {
            (void)GF__HIP_CALL(MemPoolDestroy, (d->pool));
            call = "hipMemPoolSetAttribute";
            goto fail;
        }
        /* The stream plain memory goes back on (gf__hip_free_plain); the allocator's one-time
           setup is paid here, as on CUDA. */
        if (GF__HIP_CALL(StreamCreateWithPriority, (&d->free_stream, hipStreamNonBlocking, 0)) != hipSuccess) d->free_stream = NULL;
        else {
            void *p = NULL;
            GF__HIP_RELAXED(r, MallocFromPoolAsync, (&p, 1, d->pool, d->free_stream));
            if (r == hipSuccess) gf__hip_free_plain(d, p);
        }
    }
    dev->native = d;
    return GF_OK;
fail:
    gf__free(d);
    return gf__hip_fail(r, call);
}
#undef GF__HIP_OPEN_STEP

static gf_result gf__hip_device_open(gf_device *dev, int index) { return gf__hip_device_start(dev, index); }

/* A gf_device on the caller's device: HIP's native device is its ordinal (contexts are
   deprecated in HIP). Nothing of the device itself is made or owned here, so nothing of it is
   reset or released at close (gpuflow's pool is its own, as on every gf_device). */
static gf_result gf__hip_device_open_native(gf_device *dev, const gf_native_device *native) {
    int count = 0;
    GF__HIP_CHECK(GetDeviceCount, (&count));
    if (native->ordinal < 0 || native->ordinal >= count)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_device_open_native: HIP takes native->ordinal, a device index; %d is not one (%d device%s)",
                        native->ordinal, count, count == 1 ? "" : "s");
    return gf__hip_device_start(dev, native->ordinal);
}

/* The core has drained every stream and freed its staging memory first. */
static void gf__hip_device_close(gf_device *dev) {
    gf__hip_device *d = (gf__hip_device *)dev->native;
    if (!d) return;
    if (d->pool) (void)GF__HIP_CALL(MemPoolDestroy, (d->pool));   /* what is still queued is freed after, by the runtime */
    if (d->free_stream) (void)GF__HIP_CALL(StreamDestroy, (d->free_stream));   /* idle: each free waited for it */
    gf__free(d);
    dev->native = NULL;
}

/* HIP's native device: the ordinal (no context). */
static void gf__hip_device_native(gf_device *dev, gf_native_device *out) {
    out->ordinal = ((gf__hip_device *)dev->native)->ordinal;
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
    buf->native = (uint64_t)(uintptr_t)p;
    return GF_OK;
}

static void gf__hip_external_free(gf_buffer *buf);   /* interop, below */
static void gf__hip_buffer_free(gf_buffer *buf) {
    if (buf->external) gf__hip_external_free(buf);
    else if (buf->native && !buf->borrowed) {
        if (buf->managed) GF__HIP_RELAXED_VOID(Free, (GF__HIP_PTR(buf)));
        else gf__hip_free_plain((gf__hip_device *)buf->dev->native, GF__HIP_PTR(buf));
    }
    buf->native = 0;
}

/* Memory of the caller's (gf_buffer_wrap), left to its owner on destroy. Checked first: memory
   the runtime knows (hipPointerGetAttributes; its device field, the one that reads the same
   across HIP versions), of this device, with the whole size inside its allocation. */
static gf_result gf__hip_buffer_wrap(gf_buffer *buf, uint64_t native) {
    gf__hip_device *d = (gf__hip_device *)buf->dev->native;
    void *p = (void *)(uintptr_t)native;
    hipPointerAttribute_t attr;
    hipDeviceptr_t base = NULL;
    size_t size = 0, skip;
    hipError_t r;
    memset(&attr, 0, sizeof attr);
    r = GF__HIP_CALL(PointerGetAttributes, (&attr, p));
    if (r == hipSuccess && attr.device < 0) r = hipErrorInvalidValue;   /* newer runtimes: "unregistered" */
    if (r == hipErrorInvalidValue)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_wrap: 0x%llx is not memory the HIP runtime allocated",
                        (unsigned long long)native);
    if (r != hipSuccess) return gf__hip_fail(r, "hipPointerGetAttributes");
    if (attr.device != d->ordinal)
        return gf__fail(GF_ERROR_WRONG_DEVICE, "gf_buffer_wrap: the memory belongs to HIP device %d, not to device %d, %s",
                        attr.device, d->ordinal, buf->dev->tag);
    GF__HIP_CHECK(MemGetAddressRange, (&base, &size, p));
    skip = (size_t)((char *)p - (char *)base);
    if (skip > size || buf->size > size - skip)
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_buffer_wrap: %llu bytes from 0x%llx run past the end of its allocation "
                        "(%llu bytes from 0x%llx)", (unsigned long long)buf->size, (unsigned long long)native,
                        (unsigned long long)size, (unsigned long long)(uintptr_t)base);
    buf->native = (uint64_t)(uintptr_t)p;
    return GF_OK;
}

static gf_result gf__hip_buffer_alloc_async(gf_stream *s, gf_buffer *buf) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    void *p = NULL;
    if (!d->pool)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: device %s or this runtime has no memory pools (stream-ordered allocation)",
                        s->dev->tag);
    GF__HIP_CHECK(MallocFromPoolAsync, (&p, buf->size, d->pool, GF__HIPSTREAM(s)));
    buf->native = (uint64_t)(uintptr_t)p;
    return GF_OK;
}

static gf_result gf__hip_buffer_free_async(gf_stream *s, gf_buffer *buf) {
    GF__HIP_CHECK(FreeAsync, (GF__HIP_PTR(buf), GF__HIPSTREAM(s)));
    buf->native = 0;
    return GF_OK;
}

/* gf_device_trim: what the pool can give back now (a stream-ordered free still queued keeps
   its memory until the stream reaches it; no device synchronize here, which would break a
   capture in progress on another thread). */
static void gf__hip_trim(gf_device *dev, size_t keep_bytes) {
    gf__hip_device *d = (gf__hip_device *)dev->native;
    if (d->pool) (void)GF__HIP_CALL(MemPoolTrimTo, (d->pool, keep_bytes));
}

/* Freed memory the pool keeps: reserved minus in use, as the runtime counts them. */
static size_t gf__hip_cached_bytes(gf_device *dev) {
    gf__hip_device *d = (gf__hip_device *)dev->native;
    uint64_t reserved = 0, used = 0;
    if (!d->pool || !gf__hip.MemPoolGetAttribute ||
        GF__HIP_CALL(MemPoolGetAttribute, (d->pool, hipMemPoolAttrReservedMemCurrent, &reserved)) != hipSuccess ||
        GF__HIP_CALL(MemPoolGetAttribute, (d->pool, hipMemPoolAttrUsedMemCurrent, &used)) != hipSuccess)
        return 0;
    return reserved > used ? (size_t)(reserved - used) : 0;
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
    /* HIP would refuse hipStreamAddCallback in a capture and invalidate the capture with it:
       the callback becomes a host node of the graph. */
    if (gf__stream_capturing(s)) {
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
    GF__HIP_USE(s->dev);
    GF__HIP_CHECK(StreamCreateWithPriority, (&hs, hipStreamNonBlocking, gf__native_priority(s->priority, d->prio_least, d->prio_greatest)));
    s->native = hs;
    return GF_OK;
}

static void gf__hip_stream_destroy(gf_stream *s) {
    if (s->native && !s->borrowed) GF__HIP_RELAXED_VOID(StreamDestroy, (GF__HIPSTREAM(s)));
    s->native = NULL;
}

/* A stream of the caller's (gf_stream_wrap), left alive on destroy. Its device is checked where
   the runtime can say it (hipStreamGetDevice, HIP 5.6+); before that it is taken on trust. */
static gf_result gf__hip_stream_wrap(gf_stream *s, void *native) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    hipDevice_t owner;
    if (gf__hip.StreamGetDevice) {
        GF__HIP_CHECK(StreamGetDevice, ((hipStream_t)native, &owner));
        if (owner != d->dev)
            return gf__fail(GF_ERROR_WRONG_DEVICE, "gf_stream_wrap: the hipStream_t belongs to HIP device %d, not to device %d, %s",
                            (int)owner, d->ordinal, s->dev->tag);
    }
    s->native = native;
    return GF_OK;
}

static gf_result gf__hip_stream_synchronize(gf_stream *s) {
    GF__HIP_CHECK_RELAXED(StreamSynchronize, (GF__HIPSTREAM(s)));
    return GF_OK;
}

static gf_result gf__hip_stream_query(gf_stream *s) {
    hipError_t r;
    GF__HIP_RELAXED(r, StreamQuery, (GF__HIPSTREAM(s)));
    return gf__native_ready(&gf__hip_codes, (int)r, "hipStreamQuery");
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

/* 2- and 4-byte values; the core checked that the offset is a multiple of the width. */
static gf_result gf__hip_fill_wide(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, int width, size_t count) {
    GPUFLOW_ASSERT(width == 2 || width == 4);   /* gf_fill16_async / gf_fill32_async */
    if (width == 2) GF__HIP_CHECK(MemsetD16Async, (gf__hip_at(buf, offset), (unsigned short)value, count, GF__HIPSTREAM(s)));
    else GF__HIP_CHECK(MemsetD32Async, (gf__hip_at(buf, offset), (int)value, count, GF__HIPSTREAM(s)));
    return GF_OK;
}

/* One hipMemcpyParam2DAsync; host memory on either side is pinned here (the core copies pageable
   memory row by row through its stages). */
static gf_result gf__hip_copy_2d(gf_stream *s, const gf_copy_2d *c) {
    hip_Memcpy2D m;
    memset(&m, 0, sizeof m);
    if (c->src) { m.srcMemoryType = hipMemoryTypeDevice; m.srcDevice = gf__hip_at(c->src, c->src_offset); }
    else        { m.srcMemoryType = hipMemoryTypeHost;   m.srcHost = c->src_host; }
    if (c->dst) { m.dstMemoryType = hipMemoryTypeDevice; m.dstDevice = gf__hip_at(c->dst, c->dst_offset); }
    else        { m.dstMemoryType = hipMemoryTypeHost;   m.dstHost = c->dst_host; }
    m.srcPitch = c->src_pitch;
    m.dstPitch = c->dst_pitch;
    m.WidthInBytes = c->width;
    m.Height = c->height;
    GF__HIP_CHECK(MemcpyParam2DAsync, (&m, GF__HIPSTREAM(s)));
    return GF_OK;
}

static gf_result gf__hip_prefetch(gf_stream *s, gf_buffer *buf, int to_device) {
    gf__hip_device *d = (gf__hip_device *)s->dev->native;
    /* Without concurrent managed access (XNACK off) the runtime migrates managed memory
       itself around each launch: the hint has nothing left to do. */
    if (!d->concurrent_managed) return GF_OK;
    GF__HIP_CHECK(MemPrefetchAsync, (GF__HIP_PTR(buf), buf->size, to_device ? d->ordinal : hipCpuDeviceId, GF__HIPSTREAM(s)));
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

/* ---- more than one device: peers --------------------------------------------------------- */
/* Two gf_devices opened on one ordinal are one HIP device: each reaches the other's memory. */
#define GF__HIP_ORDINAL(dev) (((gf__hip_device *)(dev)->native)->ordinal)
static int gf__hip_peer_can_access(gf_device *a, gf_device *b) {
    int can = 0;
    if (GF__HIP_ORDINAL(a) == GF__HIP_ORDINAL(b)) return 1;
    if (GF__HIP_CALL(DeviceCanAccessPeer, (&can, GF__HIP_ORDINAL(a), GF__HIP_ORDINAL(b))) != hipSuccess) return 0;
    return can;
}
/* hipDeviceEnablePeerAccess maps b's plain allocations for a, not its pool's: b's pool grants a
   access too (to what it holds now and will hand out). A failed enable puts back the access a
   had before. */
static gf_result gf__hip_peer_enable(gf_device *a, gf_device *b) {
    hipMemPool_t pool = ((gf__hip_device *)b->native)->pool;
    hipMemAccessFlags before = hipMemAccessFlagsProtNone;
    hipMemAccessDesc access;
    hipError_t r;
    int grant;
    if (GF__HIP_ORDINAL(a) == GF__HIP_ORDINAL(b)) return GF_OK;
    GF__HIP_USE(a);
    memset(&access, 0, sizeof access);
    access.location.type = hipMemLocationTypeDevice;
    access.location.id = GF__HIP_ORDINAL(a);
    access.flags = hipMemAccessFlagsProtReadWrite;
    if (pool) GF__HIP_CHECK(MemPoolGetAccess, (&before, pool, &access.location));
    grant = pool && before != hipMemAccessFlagsProtReadWrite;
    if (grant) GF__HIP_CHECK(MemPoolSetAccess, (pool, &access, 1));
    r = GF__HIP_CALL(DeviceEnablePeerAccess, (GF__HIP_ORDINAL(b), 0));
    if (r != hipSuccess && r != hipErrorPeerAccessAlreadyEnabled) {
        access.flags = before;   /* no half-done enable */
        if (grant) (void)GF__HIP_CALL(MemPoolSetAccess, (pool, &access, 1));
        return gf__hip_fail(r, "hipDeviceEnablePeerAccess");
    }
    return GF_OK;
}
static gf_result gf__hip_copy_peer(gf_stream *s, const gf__copy *c) {
    GF__HIP_USE(s->dev);
    GF__HIP_CHECK(MemcpyPeerAsync, (gf__hip_at(c->dst, c->dst_offset), GF__HIP_ORDINAL(c->dst->dev),
                                    gf__hip_at(c->src, c->src_offset), GF__HIP_ORDINAL(c->src->dev), c->bytes, GF__HIPSTREAM(s)));
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
    return gf__native_ready(&gf__hip_codes, (int)r, "hipEventQuery");
}

static gf_result gf__hip_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    return gf__native_ready(&gf__hip_codes, (int)GF__HIP_CALL(EventElapsedTime, (ms, GF__HIPEVENT(start), GF__HIPEVENT(end))),
                            "hipEventElapsedTime");
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
    if (r == hipErrorNotFound)   /* the core names the kernel; the likely cause is HIP's own */
        return gf__fail(GF_ERROR_NOT_FOUND, "hipModuleGetFunction: %s (%d): is the kernel extern \"C\"?", gf__hip_error_name(r), (int)r);
    if (r != hipSuccess) return gf__hip_fail(r, "hipModuleGetFunction");
    k->native = f;
    return GF_OK;
}

/* ---- kernels from one source: hiprtc, loaded at run time ---------------------------------- */
#ifndef GPUFLOW_NO_HIPRTC
/* X(name, return type, parameters, fails_as): hiprtc<name>, a slot of gf__hiprtc typed as
   hiprtc.h declares it (checked at compile time, as the runtime's entries are), called
   through the fault seam: a fault-injected call returns HIPRTC_ERROR_<fails_as>.
   hiprtcGetErrorString is no fault point: it names the others. */
#define GF__HIPRTC_API(X) \
    X(Version, hiprtcResult, (int *, int *), INTERNAL_ERROR) \
    X(GetErrorString, const char *, (hiprtcResult), INTERNAL_ERROR) \
    X(CreateProgram, hiprtcResult, (hiprtcProgram *, const char *, const char *, int, const char **, const char **), OUT_OF_MEMORY) \
    X(CompileProgram, hiprtcResult, (hiprtcProgram, int, const char **), OUT_OF_MEMORY) \
    X(GetProgramLogSize, hiprtcResult, (hiprtcProgram, size_t *), INTERNAL_ERROR) \
    X(GetProgramLog, hiprtcResult, (hiprtcProgram, char *), INTERNAL_ERROR) \
    X(GetCodeSize, hiprtcResult, (hiprtcProgram, size_t *), INTERNAL_ERROR) \
    X(GetCode, hiprtcResult, (hiprtcProgram, char *), INTERNAL_ERROR) \
    X(DestroyProgram, hiprtcResult, (hiprtcProgram *), INTERNAL_ERROR)

typedef struct gf__hiprtc_api {
#define GF__HIPRTC_SLOT(name, ret, params, fails_as) ret (*name) params;
    GF__HIPRTC_API(GF__HIPRTC_SLOT)
#undef GF__HIPRTC_SLOT
} gf__hiprtc_api;
static gf__hiprtc_api gf__hiprtc;        /* filled once by gf__hiprtc_load_library; read-only afterwards */
static gf__driver gf__hiprtc_library;
static int gf__hiprtc_version;           /* hiprtcVersion's answer as 1000 * major + 10 * minor */
static char gf__hiprtc_where[160];       /* where the entry points came from, for compiler_id */

/* Never called: each slot's type against hiprtc.h's declaration, and the name the loader asks
   for against the one the header declares (see gf__hip_check_signatures). */
static void gf__hiprtc_check_signatures(void) {
#define GF__HIPRTC_SAME(name, ret, params, fails_as) \
    (void)sizeof(gf__hiprtc.name == &hiprtc##name); \
    (void)sizeof(char[sizeof(GF__HIP_XSTR(hiprtc##name)) == sizeof("hiprtc" #name) ? 1 : -1]);
    GF__HIPRTC_API(GF__HIPRTC_SAME)
#undef GF__HIPRTC_SAME
}

enum {
#define GF__HIPRTC_FAULT_CODE(name, ret, params, fails_as) gf__hiprtc_fault_##name = HIPRTC_ERROR_##fails_as,
    GF__HIPRTC_API(GF__HIPRTC_FAULT_CODE)
#undef GF__HIPRTC_FAULT_CODE
    gf__hiprtc_fault_codes_end
};
#define GF__HIPRTC_CALL(name, args) \
    (GF__FAULT("hiprtc" #name) ? (hiprtcResult)gf__hiprtc_fault_##name : gf__hiprtc.name args)

static const char *gf__hiprtc_error_name(int r) {
    const char *name = gf__hiprtc.GetErrorString ? gf__hiprtc.GetErrorString((hiprtcResult)r) : NULL;
    return name ? name : "HIPRTC_ERROR_UNRECOGNIZED";
}
/* hiprtc's codes in gpuflow's terms: out of memory, or a driver failure (compile errors are
   GF_ERROR_BUILD, said with the log, below). -1: a code hiprtc does not have. */
static const gf__native_codes gf__hiprtc_codes = {
    HIPRTC_SUCCESS, -1, HIPRTC_ERROR_OUT_OF_MEMORY, -1, -1, -1, NULL, 0, NULL, 0, gf__hiprtc_error_name };

/* Where hiprtc is looked for: first in the HIP runtime itself (ROCm 5 exports it from
   libamdhip64), then libhiprtc of the runtime's major version (ROCm 6 moved it there; a
   hiprtc of another ROCm makes code objects its runtime may not load), then the others and
   ROCm's own directory, for machines whose loader cache does not list it. Windows: the HIP
   SDK's hiprtc<MMmm>.dll. A test may define the list itself, and GF__HIPRTC_IN_RUNTIME 0 to
   pass over the runtime (the check of the "no hiprtc" path). */
#if !defined(GF__HIPRTC_IN_RUNTIME)
#  define GF__HIPRTC_IN_RUNTIME 1
#endif
#if defined(GF__HIPRTC_NAMES)
#  define GF__HIPRTC_OWN_NAME 0        /* a test's list is the whole list */
#elif defined(_WIN32)
#  define GF__HIPRTC_OWN_NAME 0
#  define GF__HIPRTC_NAMES "hiprtc0605.dll", "hiprtc0604.dll", "hiprtc0603.dll", "hiprtc0602.dll", "hiprtc0601.dll", \
                           "hiprtc0600.dll", "hiprtc0507.dll", "hiprtc0506.dll", "hiprtc0505.dll"
#else
#  define GF__HIPRTC_OWN_NAME 1        /* libhiprtc.so.<the runtime's major version> first */
#  define GF__HIPRTC_NAMES "libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so", \
                           "/opt/rocm/lib/libhiprtc.so"
#endif

static void gf__hiprtc_load_library(gf__driver *d) {
    const char *names[] = { NULL, GF__HIPRTC_NAMES };
    char own[32], first_error[256];
    const char *loaded = NULL;
    size_t i;
    int major = 0, minor = 0;
    void *sym;
    d->result = GF_ERROR_NOT_SUPPORTED;
    first_error[0] = 0;
    if (GF__HIPRTC_OWN_NAME && gf__hip_version) {   /* the runtime's own major version first */
        snprintf(own, sizeof own, "libhiprtc.so.%d", gf__hip_version / 10000000);
        names[0] = own;
    }
    if (GF__HIPRTC_IN_RUNTIME && gf__hip_runtime.lib && gf__dlsym(gf__hip_runtime.lib, "hiprtcCompileProgram")) {
        d->lib = gf__hip_runtime.lib;
        loaded = "the HIP runtime";
    }
    for (i = 0; i < sizeof names / sizeof names[0] && !d->lib; i++) {
        if (!names[i]) continue;
        if ((d->lib = gf__dlopen(names[i])) != NULL) loaded = names[i];
        else if (!first_error[0]) snprintf(first_error, sizeof first_error, "%s", gf__dlerror());
    }
    if (!d->lib) {
        snprintf(d->why, sizeof d->why, "hiprtc: the HIP runtime does not export it and %s does not load (%s): install ROCm's "
                 "hiprtc (libhiprtc, in ROCm's hip-runtime-amd package; ROCm 5's libamdhip64 has it built in); code "
                 "objects in hip_code work without it", names[0] ? names[0] : names[1], first_error);
        return;
    }
#define GF__HIPRTC_RESOLVE(name, ret, params, fails_as) \
    if (!(sym = gf__dlsym(d->lib, "hiprtc" #name))) { \
        snprintf(d->why, sizeof d->why, "hiprtc: %s has no hiprtc" #name ": install ROCm's hiprtc (ROCm 5.2 or newer)", loaded); \
        return; } \
    memcpy(&gf__hiprtc.name, &sym, sizeof sym);   /* object to function pointer */
    GF__HIPRTC_API(GF__HIPRTC_RESOLVE)
#undef GF__HIPRTC_RESOLVE
    if (gf__hiprtc.Version(&major, &minor) == HIPRTC_SUCCESS) gf__hiprtc_version = major * 1000 + minor * 10;   /* no fault point: loading */
    snprintf(gf__hiprtc_where, sizeof gf__hiprtc_where, "%s", loaded);
    d->result = GF_OK;
}
/* The runtime first (hiprtc may be in it, and its version picks the library); its own failure
   is not this one's to report. */
static gf_result gf__hiprtc_load(void) {
    gf__quiet++;
    (void)gf__hip_load();
    gf__quiet--;
    return gf__driver_load(&gf__hiprtc_library, gf__hiprtc_load_library);
}

/* text (complete: any prelude already in it) compiled by hiprtc into a code object for arch
   ("gfx90a:sramecc+:xnack-": --offload-arch=arch) or, with arch NULL or options that name an
   --offload-arch themselves, for what hiprtc picks (the device current on this thread); then
   the user's options. name names it in the log. *code: from gf__malloc, *size its bytes (one
   NUL more is allocated behind them). A compile error, or an option hiprtc refuses, is
   GF_ERROR_BUILD "hiprtc: name: <log>"; no hiprtc is GF_ERROR_NOT_SUPPORTED. With arch named
   it needs no GPU. */
static gf_result gf__hip_hiprtc_to_code(const char *arch, const char *name, const char *text, const char *options,
                                        void **code, size_t *size) {
    hiprtcProgram prog = NULL;
    char arch_option[300], *buf = NULL, *log = NULL, *out = NULL;
    const char **opts = NULL;
    const char *call = NULL;
    size_t n = options ? strlen(options) : 0;
    int count = 0;
    hiprtcResult r;
    gf_result e;
    *code = NULL;
    *size = 0;
    if ((e = gf__hiprtc_load()) != GF_OK) return e;
    if (!name || !*name) name = "kernels";
    buf = (char *)gf__malloc(n + 1);
    opts = (const char **)gf__malloc(sizeof *opts * (n / 2 + 3));
    if (!buf || !opts) { e = gf__fail(GF_ERROR_OUT_OF_MEMORY, "hiprtc: out of host memory compiling %s", name); goto done; }
    memcpy(buf, options ? options : "", n + 1);
    if (arch && *arch && !strstr(buf, "--offload-arch")) {
        snprintf(arch_option, sizeof arch_option, "--offload-arch=%s", arch);
        opts[count++] = arch_option;
    }
    count += gf__split_options(buf, opts + count);
    if ((r = GF__HIPRTC_CALL(CreateProgram, (&prog, text, name, 0, NULL, NULL))) != HIPRTC_SUCCESS) { call = "hiprtcCreateProgram"; goto failed; }
    r = GF__HIPRTC_CALL(CompileProgram, (prog, count, opts));
    if (r == HIPRTC_ERROR_COMPILATION || r == HIPRTC_ERROR_INVALID_OPTION) {
        size_t len = 0;
        if (GF__HIPRTC_CALL(GetProgramLogSize, (prog, &len)) == HIPRTC_SUCCESS && len > 1 && (log = (char *)gf__malloc(len + 1)) != NULL &&
            GF__HIPRTC_CALL(GetProgramLog, (prog, log)) == HIPRTC_SUCCESS) {
            log[len] = 0;
            for (len = strlen(log); len && (log[len - 1] == '\n' || log[len - 1] == '\r' || log[len - 1] == ' '); ) log[--len] = 0;
        } else if (log) log[0] = 0;
        e = gf__fail(GF_ERROR_BUILD, "hiprtc: %s: %s", name, log && log[0] ? gf__build_log_start(log, sizeof gf__error_text / 2) : gf__hiprtc_error_name((int)r));
        goto done;
    }
    if (r != HIPRTC_SUCCESS) { call = "hiprtcCompileProgram"; goto failed; }
    if ((r = GF__HIPRTC_CALL(GetCodeSize, (prog, &n))) != HIPRTC_SUCCESS) { call = "hiprtcGetCodeSize"; goto failed; }
    if (!n) { e = gf__fail(GF_ERROR_BUILD, "hiprtc: %s: the compiler made no code", name); goto done; }
    if (!(out = (char *)gf__malloc(n + 1))) { e = gf__fail(GF_ERROR_OUT_OF_MEMORY, "hiprtc: out of host memory for %s's code object", name); goto done; }
    if ((r = GF__HIPRTC_CALL(GetCode, (prog, out))) != HIPRTC_SUCCESS) { call = "hiprtcGetCode"; goto failed; }
    out[n] = 0;
    *code = out;
    *size = n;
    out = NULL;
    e = GF_OK;
    goto done;
failed:
    e = gf__native_fail(&gf__hiprtc_codes, (int)r, call);
done:
    if (prog) (void)GF__HIPRTC_CALL(DestroyProgram, (&prog));
    gf__free(out);
    gf__free(log);
    gf__free(buf);
    gf__free((void *)opts);
    return e;
}

/* The compile slot: the core's text (its prelude, then the user's source) to a code object for
   this device's gcnArchName, which module_load then loads. Where the runtime did not say the
   name, hiprtc compiles for the current device: this one, made current first. */
static gf_result gf__hip_compile(gf_device *dev, const char *name, const char *text, const char *options,
                                 void **binary, size_t *size) {
    const gf__hip_device *d = (const gf__hip_device *)dev->native;
    gf_result e;
    if ((e = gf__hiprtc_load()) != GF_OK) return e;
    if (!d->arch[0]) GF__HIP_USE(dev);
    return gf__hip_hiprtc_to_code(d->arch, name, text, options, binary, size);
}
/* What compile made is a code object. */
static gf_result gf__hip_module_load_compiled(gf_module *mod, const void *binary, size_t size) {
    gf_module_desc d;
    memset(&d, 0, sizeof d);
    d.hip_code = binary;
    d.hip_code_size = size;
    return gf__hip_module_load(mod, &d);
}

/* What a cached code object depends on beyond the text and options. */
static void gf__hip_compiler_id(gf_device *dev, char *out, size_t cap) {
    const gf__hip_device *d = (const gf__hip_device *)dev->native;
    gf_result e;
    gf__quiet++;   /* a missing hiprtc is compile's to report */
    e = gf__hiprtc_load();
    gf__quiet--;
    snprintf(out, cap, "HIP %s, %s, runtime %d.%d.%d, hiprtc %d.%d from %s", dev->info.name, d->arch[0] ? d->arch : "(current device)",
             gf__hip_version / 10000000, gf__hip_version / 100000 % 100, gf__hip_version % 100000,
             e == GF_OK ? gf__hiprtc_version / 1000 : 0, e == GF_OK ? gf__hiprtc_version % 1000 / 10 : 0,
             e == GF_OK ? gf__hiprtc_where : "nowhere");
}
#endif /* GPUFLOW_NO_HIPRTC */

/* ---- launches and graphs ---------------------------------------------------------------- */
/* A native graph's HIP half, in g->native_exec. The exec names its nodes by those of the graph
   it was instantiated from (hipGraphExecKernelNodeSetParams), so that graph, source, lives as
   long as the exec; the core keeps each launch's node in it (gf__graph_launch_node, from
   captured_node). g->native_graph describes
   what the exec runs (a launch inside a capture embeds a copy of it): source itself, until
   gf_graph_update makes it a copy of the other graph's, whose launch nodes are desc_nodes. */
typedef struct gf__hip_graph {
    hipGraphExec_t exec;
    hipGraph_t source;
    hipGraphNode_t *desc_nodes; int desc_count;   /* in native_graph, once it is not source */
} gf__hip_graph;
#define GF__HIPGRAPH(g) ((gf__hip_graph *)(g)->native_exec)

/* Launch i's node in the exec's source, and in the graph that describes the exec. */
static hipGraphNode_t gf__hip_exec_node(gf_graph *g, int i) {
    return (hipGraphNode_t)gf__graph_launch_node(g, i);
}
static hipGraphNode_t gf__hip_desc_node(gf_graph *g, int i) {
    gf__hip_graph *hg = GF__HIPGRAPH(g);
    if ((hipGraph_t)g->native_graph == hg->source) return gf__hip_exec_node(g, i);
    return i < hg->desc_count ? hg->desc_nodes[i] : NULL;
}

/* The capture s takes part in: the graph being built, and the nodes that work enqueued next
   will follow (after a launch: the launch's own node). Fails unless the capture is active. */
static hipError_t gf__hip_capture_tail(gf_stream *s, hipGraph_t *graph, const hipGraphNode_t **deps, size_t *ndeps) {
    hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
    unsigned long long id = 0;
    hipError_t r = GF__HIP_CALL(StreamGetCaptureInfo_v2, (GF__HIPSTREAM(s), &status, &id, graph, deps, ndeps));
    return r == hipSuccess && status != hipStreamCaptureStatusActive ? hipErrorStreamCaptureInvalidated : r;
}

/* captured_node: the node a launch just added to the capture of s: right after the launch, the
   capture's dependencies are that node alone. NULL where the runtime cannot say (no
   hipStreamGetCaptureInfo_v2, or the question failed: a warning says so). */
static void *gf__hip_captured_node(gf_stream *s, gf_kernel *k) {
    hipGraph_t capturing = NULL;
    const hipGraphNode_t *deps = NULL;
    size_t ndeps = 0;
    hipError_t r = hipErrorNotSupported;
    if (gf__hip.StreamGetCaptureInfo_v2 && (r = gf__hip_capture_tail(s, &capturing, &deps, &ndeps)) == hipSuccess && ndeps == 1)
        return deps[0];
    gf__notice(GF_LOG_WARNING, "HIP: which graph node the launch of kernel '%s' captured on stream '%s' became is unknown "
               "(hipStreamGetCaptureInfo_v2: %s (%d), %d dependencies): gf_graph_set_kernel_args will refuse it",
               k->name, s->label, gf__hip_error_name((int)r), (int)r, (int)ndeps);
    return NULL;
}

/* The hot path: the parameter table on the stack and one runtime call. kernelParams[i]
   points at the argument's bytes; for a buffer, at its device pointer. */
static gf_result gf__hip_launch(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims,
                                const gf_arg *args, int count) {
    void *stack[GF__STACK_ARGS];
    void **params;
    hipError_t r;
    if (!(params = gf__kernel_params(args, count, stack))) return GF_ERROR_OUT_OF_MEMORY;
    r = GF__HIP_CALL(ModuleLaunchKernel, ((hipFunction_t)k->native, dims->grid[0], dims->grid[1], dims->grid[2],
                                          dims->block[0], dims->block[1], dims->block[2], (unsigned int)dims->shared_bytes,
                                          GF__HIPSTREAM(s), count ? params : NULL, NULL));
    if (params != stack) gf__free(params);
    if (r != hipSuccess) return gf__hip_fail(r, "hipModuleLaunchKernel");
    return GF_OK;
}

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
    gf__hip_graph *hg;
    size_t nodes = 0;
    const char *call;
    hipError_t r;
    r = GF__HIP_CALL(StreamEndCapture, (GF__HIPSTREAM(s), &graph));
    if (r != hipSuccess) {
        /* A failed end leaves no capture behind (the runtime's own failures end it): past the
           fault seam, the real end runs too, and what it made is thrown away. */
        hipGraph_t left = NULL;
        if (gf__hip.StreamEndCapture(GF__HIPSTREAM(s), &left) == hipSuccess && left) (void)gf__hip.GraphDestroy(left);
        if (graph) (void)GF__HIP_CALL(GraphDestroy, (graph));
        return gf__native_capture_broken(&gf__hip_codes, (int)r, "hipStreamEndCapture");
    }
    call = "hipSetDevice";
    r = GF__HIP_CALL(SetDevice, (((gf__hip_device *)s->dev->native)->ordinal));   /* the exec's own queues */
    if (r == hipSuccess) { call = "hipGraphGetNodes"; r = GF__HIP_CALL(GraphGetNodes, (graph, NULL, &nodes)); }
    if (r == hipSuccess) { call = "hipGraphInstantiate"; r = GF__HIP_CALL(GraphInstantiate, (&exec, graph, NULL, NULL, 0)); }
    if (r != hipSuccess) {
        (void)GF__HIP_CALL(GraphDestroy, (graph));
        return gf__hip_fail(r, call);
    }
    if (!(hg = (gf__hip_graph *)gf__calloc(sizeof *hg))) {
        (void)GF__HIP_CALL(GraphExecDestroy, (exec));
        (void)GF__HIP_CALL(GraphDestroy, (graph));
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory for a graph");
    }
    hg->exec = exec;
    hg->source = graph;
    g->by_driver = 1;
    g->native_graph = graph;
    g->native_exec = hg;
    g->nodes = (int)nodes;
    return GF_OK;
}

/* What HIP's capture does not record goes into the captured graph by hand: a child graph node
   (a copy of child's hipGraph_t) or a host node, after the stream's current capture
   dependencies; the node becomes the stream's one dependency, so that later captured work
   follows it. */
static gf_result gf__hip_capture_append(gf_stream *s, gf_graph *child, const hipHostNodeParams *host) {
    hipGraph_t capturing = NULL;
    const hipGraphNode_t *deps = NULL;
    size_t ndeps = 0;
    hipGraphNode_t node = NULL;
    hipError_t r;
    if (!gf__hip.StreamGetCaptureInfo_v2 || !gf__hip.StreamUpdateCaptureDependencies ||
        (child ? !gf__hip.GraphAddChildGraphNode : !gf__hip.GraphAddHostNode))
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "HIP: %s inside a capture needs hipStreamGetCaptureInfo_v2, %s and "
                        "hipStreamUpdateCaptureDependencies, which this runtime lacks",
                        child ? "launching a graph" : "a host callback (without hipLaunchHostFunc)",
                        child ? "hipGraphAddChildGraphNode" : "hipGraphAddHostNode");
    if ((r = gf__hip_capture_tail(s, &capturing, &deps, &ndeps)) != hipSuccess) return gf__hip_fail(r, "hipStreamGetCaptureInfo_v2");
    if (child) GF__HIP_CHECK(GraphAddChildGraphNode, (&node, capturing, deps, ndeps, (hipGraph_t)child->native_graph));
    else GF__HIP_CHECK(GraphAddHostNode, (&node, capturing, deps, ndeps, host));
    GF__HIP_CHECK(StreamUpdateCaptureDependencies, (GF__HIPSTREAM(s), &node, 1, hipStreamSetCaptureDependencies));
    return GF_OK;
}

static gf_result gf__hip_graph_launch(gf_graph *g, gf_stream *s) {
    if (gf__stream_capturing(s)) return gf__hip_capture_append(s, g, NULL);
    GF__HIP_CHECK(GraphLaunch, (GF__HIPGRAPH(g)->exec, GF__HIPSTREAM(s)));
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

/* The target keeps its exec (and its source), which takes from's parameters, and a copy of
   from's graph as the one that describes what it runs, with from's launch nodes found in the
   copy (an update pairs the graphs' nodes in the order they were made, as the captures made
   them: launch i with launch i). All is made first: a failure or a refused update leaves the
   target as it was. */
static gf_result gf__hip_graph_update(gf_graph *target, gf_graph *from) {
    gf__hip_graph *t = GF__HIPGRAPH(target);
    hipGraphExecUpdateResult result = hipGraphExecUpdateSuccess;
    hipGraphNode_t failed = NULL, *desc = NULL;
    hipGraph_t copy = NULL;
    int i, n = gf__graph_launch_count(from);
    hipError_t r;
    GF__HIP_CHECK(GraphClone, (&copy, (hipGraph_t)from->native_graph));
    if (n && !(desc = (hipGraphNode_t *)gf__malloc(sizeof *desc * (size_t)n))) {
        (void)GF__HIP_CALL(GraphDestroy, (copy));
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_update: out of host memory");
    }
    for (i = 0; i < n; i++) {
        hipGraphNode_t in_from = gf__hip_desc_node(from, i);
        if (!in_from || GF__HIP_CALL(GraphNodeFindInClone, (&desc[i], in_from, copy)) != hipSuccess) desc[i] = NULL;
    }
    r = GF__HIP_CALL(GraphExecUpdate, (t->exec, copy, &failed, &result));
    if (r != hipSuccess) {
        gf__free(desc);
        (void)GF__HIP_CALL(GraphDestroy, (copy));
        if (r == hipErrorGraphExecUpdateFailure)
            return gf__native_update_refused("hipGraphExecUpdate", gf__hip_error_name((int)r), (int)r,
                                             gf__hip_update_why(result), (int)result);
        return gf__hip_fail(r, "hipGraphExecUpdate");
    }
    if ((hipGraph_t)target->native_graph != t->source) (void)GF__HIP_CALL(GraphDestroy, ((hipGraph_t)target->native_graph));
    gf__free(t->desc_nodes);
    target->native_graph = copy;
    t->desc_nodes = desc;
    t->desc_count = n;
    return GF_OK;
}

/* A kernel node's parameters: k with the launch's dimensions and shared memory as captured,
   and a parameter table (the runtime copies the values before returning). */
static void gf__hip_kernel_node(hipKernelNodeParams *p, const gf_kernel *k, const gf_launch_dims *dims, void **params) {
    p->func = k->native;
    p->gridDim.x = dims->grid[0]; p->gridDim.y = dims->grid[1]; p->gridDim.z = dims->grid[2];
    p->blockDim.x = dims->block[0]; p->blockDim.y = dims->block[1]; p->blockDim.z = dims->block[2];
    p->sharedMemBytes = (unsigned int)dims->shared_bytes;
    p->kernelParams = params;
    p->extra = NULL;
}

/* New arguments for launch i: the node that describes it first, then the exec's. If the exec
   refuses, the description goes back to what the exec still runs (the core's copy of the
   launch's arguments), and the refusal is what the error says. */
static gf_result gf__hip_graph_set_kernel_args(gf_graph *g, int i, gf_kernel *k, const gf_arg *args, int count) {
    const gf_arg *now;
    int now_count;
    gf_launch_dims now_dims;
    hipGraphNode_t node = gf__hip_exec_node(g, i), desc = gf__hip_desc_node(g, i);
    hipKernelNodeParams p;   /* no memset: in C++ its dim3 members have constructors */
    void *stack[GF__STACK_ARGS];
    void **params;
    const char *call = "hipGraphKernelNodeSetParams";
    hipError_t r;
    if (!node || !desc)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_graph_set_kernel_args: which graph node launch %d (kernel '%s') became is not "
                        "known: hipStreamGetCaptureInfo_v2 did not say when it was captured", i, k->name);
    GF__HIP_USE(g->dev);   /* the runtime looks the function up on the current device */
    gf__graph_launch_args(g, i, &now, &now_count, &now_dims);
    if (!(params = gf__kernel_params(args, count, stack))) return GF_ERROR_OUT_OF_MEMORY;
    gf__hip_kernel_node(&p, k, &now_dims, count ? params : NULL);
    r = GF__HIP_CALL(GraphKernelNodeSetParams, (desc, &p));
    if (r == hipSuccess && (r = GF__HIP_CALL(GraphExecKernelNodeSetParams, (GF__HIPGRAPH(g)->exec, node, &p))) != hipSuccess) {
        void *was_stack[GF__STACK_ARGS];
        void **was = gf__kernel_params(now, now_count, was_stack);
        call = "hipGraphExecKernelNodeSetParams";
        if (was) {
            gf__hip_kernel_node(&p, k, &now_dims, now_count ? was : NULL);
            (void)GF__HIP_CALL(GraphKernelNodeSetParams, (desc, &p));
            if (was != was_stack) gf__free(was);
        }
    }
    if (params != stack) gf__free(params);
    if (r != hipSuccess) return gf__hip_fail(r, call);
    return GF_OK;
}

/* Graphviz of what the graph runs, as the runtime describes it (hipGraphDebugDotPrint, HIP 5.5+,
   verbose: every node's parameters). A runtime without it, or one that fails to write it,
   leaves the file to the core, which writes its own DOT of the graph's launches; a path that
   cannot be written is refused as the core refuses it. */
static gf_result gf__hip_graph_write_dot(gf_graph *g, const char *path) {
    FILE *f;
    hipError_t r;
    if (!gf__hip.GraphDebugDotPrint) return GF_ERROR_NOT_SUPPORTED;   /* the core's DOT; nothing to report */
    if (!(f = gf__fopen(path, "w"))) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_write_dot: cannot open '%s' for writing", path);
    fclose(f);
    GF__HIP_USE(g->dev);
    r = GF__HIP_CALL(GraphDebugDotPrint, ((hipGraph_t)g->native_graph, path, 1u /* hipGraphDebugDotFlagsVerbose */));
    if (r != hipSuccess) {
        gf__notice(GF_LOG_WARNING, "gf_graph_write_dot: hipGraphDebugDotPrint: %s (%d); gpuflow writes its own DOT instead",
                   gf__hip_error_name((int)r), (int)r);
        return GF_ERROR_NOT_SUPPORTED;
    }
    return GF_OK;
}

static void gf__hip_graph_destroy(gf_graph *g) {
    gf__hip_graph *hg = GF__HIPGRAPH(g);
    if (hg) {
        (void)GF__HIP_CALL(GraphExecDestroy, (hg->exec));
        if ((hipGraph_t)g->native_graph != hg->source) (void)GF__HIP_CALL(GraphDestroy, ((hipGraph_t)g->native_graph));
        (void)GF__HIP_CALL(GraphDestroy, (hg->source));
        gf__free(hg->desc_nodes);
        gf__free(hg);
    }
    g->native_exec = NULL;
    g->native_graph = NULL;
}

/* ---- interop: external memory and semaphores ---------------------------------------------- */
/* What the runtime imports (hipImportExternalMemory and hipImportExternalSemaphore, the CUDA
   calls' twins). HIP 5's headers name no timeline semaphore type; its value is CUDA's, as
   ROCm 6 gives it. HIP exports nothing: no virtual memory with a shareable handle is loaded,
   and the runtime makes no semaphore of its own. */
#define GF__HIP_TIMELINE_SEMAPHORE_FD 9      /* hipExternalSemaphoreHandleTypeTimelineSemaphoreFd */
#define GF__HIP_TIMELINE_SEMAPHORE_WIN32 10  /* ...TimelineSemaphoreWin32 */

/* Sets a handle type HIP 5's enum may not list: written as the enum's bytes, since a C++ build
   leaves a cast to an enum out of its range undefined. */
static void gf__hip_semaphore_type(hipExternalSemaphoreHandleDesc *hd, int type) {
    if (sizeof hd->type == sizeof type) memcpy(&hd->type, &type, sizeof type);
    else hd->type = (hipExternalSemaphoreHandleType)type;   /* a short enum holds every value it lists */
}

static unsigned gf__hip_external_types(gf_device *dev, int use) {
    (void)dev;
    if (!gf__hip.ImportExternalMemory || !gf__hip.ExternalMemoryGetMappedBuffer || !gf__hip.ImportExternalSemaphore ||
        !gf__hip.SignalExternalSemaphoresAsync || !gf__hip.WaitExternalSemaphoresAsync)
        return 0;
    switch (use) {
#if defined(_WIN32)
    case GF__EXT_IMPORT_MEMORY:
        return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32) | GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32_KMT) | GF__EXT_BIT(GF_EXTERNAL_D3D12_HEAP) |
               GF__EXT_BIT(GF_EXTERNAL_D3D12_RESOURCE) | GF__EXT_BIT(GF_EXTERNAL_D3D11_RESOURCE);
    case GF__EXT_IMPORT_SEMAPHORE:
        return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32) | GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32_KMT) | GF__EXT_BIT(GF_EXTERNAL_D3D12_FENCE);
#else
    /* ROCm imports no semaphore on Linux (its device's importExtSemaphore is unreachable code
       there, through ROCm 6.2): hipImportExternalSemaphore would fail every time */
    case GF__EXT_IMPORT_MEMORY: return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_FD);
#endif
    default: return 0;
    }
}

/* An import: what buffer_free undoes (buf->native is base plus the import's offset); fd: the
   duplicate the runtime was given, or -1. */
typedef struct gf__hip_external { hipExternalMemory_t ext; void *base; int fd; } gf__hip_external;

static void gf__hip_external_free(gf_buffer *buf) {
    gf__hip_external *x = (gf__hip_external *)buf->external;
    if (gf__hip_use(buf->dev) == GF_OK) {
        GF__HIP_RELAXED_VOID(Free, (x->base));   /* the mapped buffer, then the memory */
        if (gf__hip.DestroyExternalMemory) (void)GF__HIP_CALL(DestroyExternalMemory, (x->ext));
    }
#if !defined(_WIN32)
    if (x->fd >= 0) close(x->fd);
#endif
    gf__free(x);
    buf->external = NULL;
}

/* The runtime is given a duplicate of the fd, so the caller's stays the caller's (gpuflow's one
   rule). Unlike CUDA, ROCm does not take an fd it imports (its external memory keeps the
   number): the duplicate is closed with the buffer, or here where the import fails. */
static gf_result gf__hip_buffer_import(gf_buffer *buf, const gf_external_memory_desc *d) {
    hipExternalMemoryHandleDesc hd;
    hipExternalMemoryBufferDesc bd;
    hipExternalMemory_t ext = NULL;
    gf__hip_external *x;
    void *base = NULL;
    hipError_t r;
    GF__HIP_USE(buf->dev);
    memset(&hd, 0, sizeof hd);
    memset(&bd, 0, sizeof bd);
    hd.size = d->size;
    hd.flags = (d->flags & GF_EXTERNAL_DEDICATED) ? 1u : 0u;   /* hipExternalMemoryDedicated */
#if defined(_WIN32)
    switch (d->type) {
    case GF_EXTERNAL_OPAQUE_WIN32: hd.type = hipExternalMemoryHandleTypeOpaqueWin32; break;
    case GF_EXTERNAL_OPAQUE_WIN32_KMT: hd.type = hipExternalMemoryHandleTypeOpaqueWin32Kmt; break;
    case GF_EXTERNAL_D3D12_HEAP: hd.type = hipExternalMemoryHandleTypeD3D12Heap; break;
    case GF_EXTERNAL_D3D12_RESOURCE: hd.type = hipExternalMemoryHandleTypeD3D12Resource; break;
    default: hd.type = hipExternalMemoryHandleTypeD3D11Resource; break;
    }
    hd.handle.win32.handle = d->win32_handle;
    hd.handle.win32.name = d->win32_name;
#else
    hd.type = hipExternalMemoryHandleTypeOpaqueFd;
    if ((hd.handle.fd = gf__fd_dup(d->fd)) < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_import: dup of fd %d failed", d->fd);
#endif
    if ((r = GF__HIP_CALL(ImportExternalMemory, (&ext, &hd))) != hipSuccess) {
#if !defined(_WIN32)
        close(hd.handle.fd);
#endif
        return gf__hip_fail(r, "hipImportExternalMemory");
    }
    bd.size = d->size;
    if ((r = GF__HIP_CALL(ExternalMemoryGetMappedBuffer, (&base, ext, &bd))) != hipSuccess) {
        if (gf__hip.DestroyExternalMemory) (void)gf__hip.DestroyExternalMemory(ext);
#if !defined(_WIN32)
        close(hd.handle.fd);
#endif
        return gf__hip_fail(r, "hipExternalMemoryGetMappedBuffer");
    }
    if (!(x = (gf__hip_external *)gf__calloc(sizeof *x))) {
        GF__HIP_RELAXED_VOID(Free, (base));
        if (gf__hip.DestroyExternalMemory) (void)gf__hip.DestroyExternalMemory(ext);
#if !defined(_WIN32)
        close(hd.handle.fd);
#endif
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "HIP: out of host memory");
    }
    x->ext = ext;
    x->base = base;
#if defined(_WIN32)
    x->fd = -1;
#else
    x->fd = hd.handle.fd;
#endif
    buf->external = x;
    buf->native = (uint64_t)(uintptr_t)base + d->offset;
    return GF_OK;
}
static gf_result gf__hip_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out) {
    (void)buf; (void)type; (void)out;   /* external_types names no export type: the core refuses first */
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_buffer_export: HIP exports no memory");
}

static gf_result gf__hip_semaphore_create(gf_semaphore *sem) {
    (void)sem;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_create: HIP makes no semaphore of its own; create one in Vulkan "
                    "or D3D12 and import it (gf_semaphore_import)");
}
static gf_result gf__hip_semaphore_import(gf_semaphore *sem, const gf_semaphore_desc *d) {
    hipExternalSemaphoreHandleDesc hd;
    hipExternalSemaphore_t ext = NULL;
    hipError_t r;
    GF__HIP_USE(sem->dev);
    memset(&hd, 0, sizeof hd);
#if defined(_WIN32)
    if (d->type == GF_EXTERNAL_D3D12_FENCE) hd.type = hipExternalSemaphoreHandleTypeD3D12Fence;
    else if (d->type == GF_EXTERNAL_OPAQUE_WIN32_KMT) {
        if (d->timeline) return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_import: HIP takes no timeline semaphore as a KMT handle");
        hd.type = hipExternalSemaphoreHandleTypeOpaqueWin32Kmt;
    } else gf__hip_semaphore_type(&hd, d->timeline ? GF__HIP_TIMELINE_SEMAPHORE_WIN32 : (int)hipExternalSemaphoreHandleTypeOpaqueWin32);
    hd.handle.win32.handle = d->win32_handle;
    hd.handle.win32.name = d->win32_name;
#else
    gf__hip_semaphore_type(&hd, d->timeline ? GF__HIP_TIMELINE_SEMAPHORE_FD : (int)hipExternalSemaphoreHandleTypeOpaqueFd);
    if ((hd.handle.fd = gf__fd_dup(d->fd)) < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_import: dup of fd %d failed", d->fd);
#endif
    if ((r = GF__HIP_CALL(ImportExternalSemaphore, (&ext, &hd))) != hipSuccess) {
#if !defined(_WIN32)
        close(hd.handle.fd);
#endif
        return gf__hip_fail(r, "hipImportExternalSemaphore");
    }
    sem->native = ext;
    return GF_OK;
}
static gf_result gf__hip_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out) {
    (void)sem; (void)type; (void)out;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_export: HIP exports no semaphore");
}
static void gf__hip_semaphore_destroy(gf_semaphore *sem) {
    if (sem->native && gf__hip.DestroyExternalSemaphore && gf__hip_use(sem->dev) == GF_OK)
        (void)GF__HIP_CALL(DestroyExternalSemaphore, ((hipExternalSemaphore_t)sem->native));
}
static gf_result gf__hip_semaphore_signal(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    hipExternalSemaphoreSignalParams p;
    hipExternalSemaphore_t ext = (hipExternalSemaphore_t)sem->native;
    memset(&p, 0, sizeof p);
    p.params.fence.value = value;   /* timelines and D3D12 fences; ignored for binary ones */
    GF__HIP_USE(s->dev);
    GF__HIP_CHECK(SignalExternalSemaphoresAsync, (&ext, &p, 1, GF__HIPSTREAM(s)));
    return GF_OK;
}
static gf_result gf__hip_semaphore_wait(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    hipExternalSemaphoreWaitParams p;
    hipExternalSemaphore_t ext = (hipExternalSemaphore_t)sem->native;
    memset(&p, 0, sizeof p);
    p.params.fence.value = value;
    GF__HIP_USE(s->dev);
    GF__HIP_CHECK(WaitExternalSemaphoresAsync, (&ext, &p, 1, GF__HIPSTREAM(s)));
    return GF_OK;
}

/* ---- native handles --------------------------------------------------------------------- */
/* What gf_<object>_native gives: the device pointer, hipStream_t, hipEvent_t, hipFunction_t
   (and hipModule_t). */
static uint64_t gf__hip_native_handle(gf__type type, void *obj) {
    switch (type) {
    case GF__T_STREAM: return (uint64_t)(uintptr_t)((gf_stream *)obj)->native;
    case GF__T_EVENT:  return (uint64_t)(uintptr_t)((gf_event *)obj)->native;
    case GF__T_KERNEL: return (uint64_t)(uintptr_t)((gf_kernel *)obj)->native;
    case GF__T_MODULE: return (uint64_t)(uintptr_t)((gf_module *)obj)->native;
    default:           return 0;
    }
}

#undef GF__HIP_CHECK
#undef GF__HIP_CHECK_RELAXED
#undef GF__HIP_RELAXED
#undef GF__HIP_RELAXED_VOID
#undef GF__HIP_USE
#undef GF__HIPSTREAM
#undef GF__HIPEVENT
#undef GF__HIPGRAPH

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
    t->release_waits = 1;   /* as on CUDA: hipModuleUnload and hipHostFree may wait for the device */
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
    t->captured_node = gf__hip_captured_node;
    t->capture_begin = gf__hip_capture_begin;
    t->capture_end = gf__hip_capture_end;
    t->graph_launch = gf__hip_graph_launch;
    t->graph_update = gf__hip_graph_update;
    t->graph_destroy = gf__hip_graph_destroy;
    t->graph_set_kernel_args = gf__hip_graph_set_kernel_args;
    t->graph_write_dot = gf__hip_graph_write_dot;   /* NOT_SUPPORTED before HIP 5.5: the core's DOT */
#ifndef GPUFLOW_NO_HIPRTC
    (void)gf__hiprtc_check_signatures;   /* compile-time only; never called */
    t->kernel_prelude = gf__kernel_prelude_cxx;
    t->compile = gf__hip_compile;
    t->module_load_compiled = gf__hip_module_load_compiled;
    t->compiler_id = gf__hip_compiler_id;
#endif
#ifdef GF__HIP_ROCTX
    t->range = gf__hip_range;
#endif
    t->host_pinned = gf__hip_host_pinned;   /* the core stages pageable copies */
    t->native_handle = gf__hip_native_handle;
    t->device_native = gf__hip_device_native;
    t->device_open_native = gf__hip_device_open_native;
    t->stream_wrap = gf__hip_stream_wrap;
    t->buffer_wrap = gf__hip_buffer_wrap;
    t->fill_wide = gf__hip_fill_wide;
    t->copy_2d = gf__hip_copy_2d;
    t->trim = gf__hip_trim;
    t->cached_bytes = gf__hip_cached_bytes;
    t->peer_can_access = gf__hip_peer_can_access;
    t->peer_enable = gf__hip_peer_enable;
    t->copy_peer = gf__hip_copy_peer;
    t->stream_wait_peer = gf__hip_stream_wait_event;   /* hipStreamWaitEvent takes another device's event */
    t->external_types = gf__hip_external_types;
    t->buffer_import = gf__hip_buffer_import;
    t->buffer_export = gf__hip_buffer_export;
    t->semaphore_create = gf__hip_semaphore_create;
    t->semaphore_import = gf__hip_semaphore_import;
    t->semaphore_export = gf__hip_semaphore_export;
    t->semaphore_destroy = gf__hip_semaphore_destroy;
    t->semaphore_signal = gf__hip_semaphore_signal;
    t->semaphore_wait = gf__hip_semaphore_wait;
}
static gf__backend gf__hip_table;
static const gf__backend *gf__hip_backend(void) { return gf__backend_once(&gf__hip_table, gf__hip_fill_table); }

#undef GF__HIP_STR
#undef GF__HIP_XSTR
#endif /* GPUFLOW_IMPLEMENTATION && GPUFLOW_HIP */
