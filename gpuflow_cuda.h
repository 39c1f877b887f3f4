/* gpuflow_cuda.h -- the CUDA backend of gpuflow (driver API and NVRTC, loaded at run time).

    In the one file that holds the implementation:
        #define GPUFLOW_IMPLEMENTATION
        #define GPUFLOW_CUDA
        #include "gpuflow.h"            (pulls in this file from its own directory)

        cc -std=c99 app.c -I/usr/local/cuda/include -o app -pthread -ldl

    Optional defines: GPUFLOW_NVTX names each stream by its label in Nsight Systems and makes
    gf_range_push / gf_range_pop NVTX ranges (the header-only NVTX 3 in the CUDA toolkit's
    include directory; nothing to link). GPUFLOW_NO_NVRTC leaves the run-time compiler out
    (for an include path with cuda.h but no nvrtc.h): kernels from source are then refused.

    MINIMUM VERSIONS
    Headers: cuda.h of CUDA 12.3 or newer (checked at compile time), and nvrtc.h beside it.
    They give types, constants and the declarations the entry points are checked against;
    libcuda and libnvrtc are never linked. Driver: CUDA 12.0 or newer. Some features need a
    newer driver and otherwise report GF_ERROR_NOT_SUPPORTED: gf_prefetch_async (12.2); a
    graph launched inside a capture, and gf_graph_set_kernel_args (12.3: the driver names
    each captured launch's node). Kernels from source: NVRTC 11.2 or newer, found at run
    time (below); PTX and cubin modules never need it. A program built with this backend runs
    on a machine without a GPU: GF_BACKEND_AUTO passes over CUDA and gf_last_error() says why.

    HOW GPUFLOW MAPS ONTO CUDA
    ==========================
    - Loading: dlopen("libcuda.so.1") (LoadLibraryA("nvcuda.dll") on Windows), then every
      entry point through cuGetProcAddress_v2. The entry points are one list (GF__CUDA_API)
      that makes the driver table, the loader's names and versions, and a compile-time check
      of each slot's type against the declaration cuda.h gives it (cuda.h's macros rename
      many: cuMemAlloc is cuMemAlloc_v2, cuGraphInstantiate is cuGraphInstantiateWithFlags).
      Each entry is asked for at the CUDA version that introduced the variant its slot is
      typed for (cuMemAlloc at 3020: cuMemAlloc_v2), so every driver hands out that variant,
      whichever cuda.h gpuflow was compiled with. An entry newer than the driver is not asked
      for: an optional one stays NULL (its feature reports GF_ERROR_NOT_SUPPORTED; a driver
      that lacks one entry of a feature's set is taken to lack the set), a
      required one refuses the load and says which driver it needs. cuInit(0) once.
    - Every driver call goes through GF__CUDA_CALL, the fault-injection seam: in a test build
      (GPUFLOW_FAULT_INJECTION) gpuflow_fault_hit("cuMemAlloc") makes that call fail without
      reaching the driver, with CUDA_ERROR_OUT_OF_MEMORY for allocations and
      CUDA_ERROR_UNKNOWN otherwise (cuGetErrorName excepted: it names the others).
    - Results: a failed call is "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)" in gf_last_error(),
      its code mapped through the core's table (gf__native_codes: out of memory, not found,
      not supported, no device, the capture errors as GF_ERROR_CAPTURE, the rest
      GF_ERROR_DRIVER). A driver without devices (cuInit: CUDA_ERROR_NO_DEVICE) loads, and
      every device count says GF_ERROR_NO_DEVICE with that reason.
    - Device: the device's primary context, retained while the gf_device is open (or the
      caller's context: gf_device_open_native, below). Every backend entry makes it current
      on the calling thread; a thread-local cache makes that one compare when it already is
      (see gf__cuda_enter for the one rule it implies).
    - gf_buffer: CUdeviceptr in buf->native (cuMemAlloc, or cuMemAllocManaged for managed
      buffers); stream-ordered buffers come from a memory pool of gpuflow's own per gf_device
      (cuMemPoolCreate; the device's default pool, cudaMallocAsync's, is left to the
      process), which keeps freed memory for reuse up to a release threshold of the core's
      default (GF__DEFAULT_POOL_KEEP: a quarter of the device) and is destroyed at close.
      gf_device_enable_peer(a, b) grants a's GPU access to b's pool (cuMemPoolSetAccess)
      beside cuCtxEnablePeerAccess, which reaches b's plain allocations only.
      Pinned host memory: cuMemHostAlloc(PORTABLE). CUDA copies to or from pageable
      (malloc'd) memory synchronously, so the backend tells the core which memory is pinned
      (host_pinned: cuPointerGetAttributes says CU_MEMORYTYPE_HOST) and the core stages the
      other copies through pinned memory to keep them asynchronous (gpuflow.h, "staged
      copies").
    - gf_stream: a CUstream created CU_STREAM_NON_BLOCKING (it never synchronizes with the
      legacy default stream); HIGH / NORMAL / LOW map onto the context's priority range
      (greatest, middle, least).
    - gf_event: a CUevent, CU_EVENT_DISABLE_TIMING unless GF_EVENT_TIMING was asked for.
    - gf_module / gf_kernel: CUmodule from cubin, PTX (JIT, its error log in the message) or
      source (NVRTC, below), CUfunction; a kernel the module lacks is named by the core. A
      launch passes args[i].value, or for a buffer a pointer to its CUdeviceptr, as
      cuLaunchKernel's kernelParams. build_options apply to source only (the PTX JIT takes
      none).
      info.max_kernel_args_bytes: 32,764 on Volta and newer GPUs with a CUDA 12.1+ driver,
      else CUDA's classic 4,096.
    - Interop: gf_buffer_native is the CUdeviceptr, gf_stream_native the CUstream,
      gf_event_native the CUevent, gf_kernel_native the CUfunction, gf_device_native the
      CUcontext (gf_device_get_native also gives the CUdevice as ordinal).
      gf_device_open_native takes a CUcontext (the runtime's primary context, or one of your
      own) and uses it as lent: never released, its device's default pool left alone; keep
      it alive until gf_device_close. Everything gpuflow then creates in it (streams,
      events, buffers, modules, graphs) is gpuflow's, freed by its destroy. gf_stream_wrap takes a CUstream of the device's context
      (checked with cuStreamGetCtx), gf_buffer_wrap a CUdeviceptr (taken on trust); destroying
      the wrappers leaves both to their owner. gf_fill16/32_async are cuMemsetD16/D32Async,
      gf_copy_2d_async one cuMemcpy2DAsync (pageable host memory: row by row through the
      core's stages); gf_device_trim is cuMemPoolTrimTo.
    - External memory and semaphores (gf_buffer_import, ...): an opaque fd (Vulkan, OpenCL) is
      cuImportExternalMemory + cuExternalMemoryGetMappedBuffer of the whole allocation, the
      buffer at its offset; CUDA owns an fd it imports, so it gets a dup() and the caller's stays
      the caller's. An exportable buffer (gf_buffer_desc.exportable) is cuMemCreate with a POSIX
      fd handle type (its size rounded up to the granularity), mapped at a range of its own and
      exported with cuMemExportToShareableHandle (GF_EXTERNAL_SHAREABLE_FD, close-on-exec);
      another process maps it back with cuMemImportFromShareableHandle. Semaphores: opaque fds
      (binary, or timeline as CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD), signalled
      and waited with cuSignal/WaitExternalSemaphoresAsync; CUDA makes none of its own to export.
    - gf_graph: native stream capture (cuStreamBeginCapture / EndCapture), instantiated once,
      replayed with one cuGraphLaunch; gf_graph_update is cuGraphExecUpdate. A graph launched
      on a capturing stream (which CUDA refuses) is embedded as a child graph node instead: a
      copy of what the graph runs at that moment. gpuflow's own synchronizing and allocating
      calls run in RELAXED capture mode, so a GF_CAPTURE_GLOBAL capture does not make them
      fail (see GF__CUDA_RELAXED).
    - gf_graph_set_kernel_args: each launch captured into a graph is a kernel node, which the
      driver names right after the launch (cuStreamGetCaptureInfo_v3: the capture's one
      dependency). New arguments go into the node of the CUgraph that describes the graph
      (cuGraphKernelNodeSetParams, with the function, dimensions and shared memory it has) and
      into the exec (cuGraphExecKernelNodeSetParams). The exec names its nodes by those of the
      CUgraph it was instantiated from, also after cuGraphExecUpdate, so that CUgraph lives as
      long as the exec; after gf_graph_update the describing CUgraph is a copy of the other
      graph's, its launches' nodes found in the copy (cuGraphNodeFindInClone). So a graph
      embedded in a later capture runs the new arguments as well; one embedded earlier is a
      copy and keeps the ones it had.
    - gf_graph_write_dot: cuGraphDebugDotPrint of the describing CUgraph (kernel, copy and
      fill parameters included).
    - Ranges: with GPUFLOW_NVTX, gf_range_push / gf_range_pop are nvtxRangePushA /
      nvtxRangePop. NVTX nests ranges per thread, not per stream: push and pop one range on
      one thread. gpuflow's own trace shows them on the stream's track either way.

    KERNELS FROM ONE SOURCE: NVRTC
    ==============================
    A module described by source (gf_module_desc.source: gpuflow's dialect; gpuflow.h puts its
    CUDA prelude in front) is compiled by NVRTC to PTX for the device, then loaded as any PTX
    (the driver JITs it; a disk cache, when one is named, keeps the PTX).
    - Loading, once, at the first compile: dlopen of libnvrtc.so.13, libnvrtc.so.12 (12 first
      under a CUDA 12 driver: PTX from a newer NVRTC does not load on an older driver),
      libnvrtc.so, then /usr/local/cuda/lib64/libnvrtc.so.13 and .12, for machines whose
      loader cache does not list the toolkit's directory (Windows: nvrtc64_130_0.dll,
      nvrtc64_120_0.dll, nvrtc64_112_0.dll). A pip wheel's copy (pip install
      nvidia-cuda-nvrtc) is found through LD_LIBRARY_PATH / PATH. Its entry points are one
      list too (GF__NVRTC_API: table, loader, signature check against nvrtc.h, fault seam).
      Without it a source module is GF_ERROR_NOT_SUPPORTED: "NVRTC: cannot load
      libnvrtc.so.13 (<why>): install the CUDA toolkit's NVRTC (...)"; PTX and cubin modules
      work as before.
    - Options: --gpu-architecture=compute_XY of the device's compute capability (or the
      newest NVRTC knows, for a device newer than it), -default-device (a function or
      variable without __device__ is the device's), then build_options, split at spaces
      ("..." or '...' keep spaces inside one option).
    - A compile error, or an option NVRTC refuses, is GF_ERROR_BUILD "NVRTC: <source_name>:
      <NVRTC's log>". PTX too new for the driver fails at load with
      CUDA_ERROR_UNSUPPORTED_PTX_VERSION, which says so.
    - compiler_id (what the cache key holds): the device's name, compute capability, driver
      and NVRTC versions.
    - gf__cuda_nvrtc_to_ptx(arch, name, text, options, &ptx, &size) needs neither a GPU nor a
      driver: tests/nvrtc_check.c compiles every kernel of the tests and examples to PTX with
      it in CI, so a dialect mistake for CUDA fails there.

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
/* A missing vendor header is named here, with what to install, rather than left to the
   compiler's bare "No such file". */
#if defined(__has_include)
#  if !__has_include(<cuda.h>)
#    error "gpuflow: GPUFLOW_CUDA needs cuda.h from the CUDA toolkit (12.3 or newer) on the include path: add -I/usr/local/cuda/include (where NVIDIA's toolkit installs it), or leave GPUFLOW_CUDA undefined"
#  endif
#  if !defined(GPUFLOW_NO_NVRTC) && !__has_include(<nvrtc.h>)
#    error "gpuflow: GPUFLOW_CUDA needs nvrtc.h beside cuda.h for kernels from source: add the toolkit's include directory, or define GPUFLOW_NO_NVRTC to leave the run-time compiler out"
#  endif
#endif
/* cuda.h uses anonymous unions (C11) and NVTX converts dlsym's result directly: keep a
   -std=c99 -Wpedantic build of gpuflow quiet about headers it does not own. */
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cuda.h>
#ifndef GPUFLOW_NO_NVRTC
#  include <nvrtc.h>                  /* types and declarations only: libnvrtc is loaded at run time */
#endif
#ifdef GPUFLOW_NVTX
#  include <nvtx3/nvToolsExtCuda.h>   /* header-only NVTX 3: names streams in Nsight Systems */
#endif
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif
#if !defined(CUDA_VERSION) || CUDA_VERSION < 12030
#  error "gpuflow_cuda.h needs cuda.h of CUDA 12.3 or newer (CUgraphEdgeData, cuStreamGetCaptureInfo_v3): put a newer toolkit's include directory on the include path"
#endif

#if defined(_WIN32)
#  define GF__CUDA_LIBRARY "nvcuda.dll"
#else
#  define GF__CUDA_LIBRARY "libcuda.so.1"
#endif

/* ---- the driver's entry points ------------------------------------------------------------ */
/* X(name, return type, (parameters), fails_as, decl, abi) a required entry, OPT(..., set) an
   optional one; every driver list of gpuflow has this column order (name, return type,
   parameters, need, fails_as, then what is the driver's own):
     name      cu<name> is what cuGetProcAddress is asked for; gf__cu.<name> is the slot
     decl      the cuda.h declaration the slot's type must equal (cuda.h's macros map most
               names to a versioned variant: cuMemAlloc is cuMemAlloc_v2). Three name their
               variant outright: CUDA 12's cuda.h maps their plain names to older ABIs.
     abi       the CUDA version that introduced that variant (cudaTypedefs.h: PFN_cu<name>_v<abi>)
     fails_as  what a fault-injected call returns: CUDA_ERROR_<fails_as>
     set       the optional entries one feature calls together (GF__CUDA_SET_<set>)
   The first entry must be cuDriverGetVersion: the driver's version decides which others the
   loader asks for. An optional entry stays NULL on drivers that lack it, and so does every
   other entry of its set (gf__cuda_optional_sets): the code asks for one entry of each set
   it uses before calling any. */
#define GF__CUDA_API(X, OPT) \
    X(DriverGetVersion, CUresult, (int *), UNKNOWN, cuDriverGetVersion, 2020) \
    X(GetErrorName, CUresult, (CUresult, const char **), UNKNOWN, cuGetErrorName, 6000) \
    X(Init, CUresult, (unsigned int), UNKNOWN, cuInit, 2000) \
    X(DeviceGetCount, CUresult, (int *), UNKNOWN, cuDeviceGetCount, 2000) \
    X(DeviceGet, CUresult, (CUdevice *, int), UNKNOWN, cuDeviceGet, 2000) \
    X(DeviceGetName, CUresult, (char *, int, CUdevice), UNKNOWN, cuDeviceGetName, 2000) \
    X(DeviceTotalMem, CUresult, (size_t *, CUdevice), UNKNOWN, cuDeviceTotalMem, 3020) \
    X(DeviceGetAttribute, CUresult, (int *, CUdevice_attribute, CUdevice), UNKNOWN, cuDeviceGetAttribute, 2000) \
    X(DevicePrimaryCtxRetain, CUresult, (CUcontext *, CUdevice), UNKNOWN, cuDevicePrimaryCtxRetain, 7000) \
    X(DevicePrimaryCtxRelease, CUresult, (CUdevice), UNKNOWN, cuDevicePrimaryCtxRelease, 11000) \
    X(CtxSetCurrent, CUresult, (CUcontext), UNKNOWN, cuCtxSetCurrent, 4000) \
    X(CtxGetDevice, CUresult, (CUdevice *), UNKNOWN, cuCtxGetDevice, 2000) \
    X(CtxGetStreamPriorityRange, CUresult, (int *, int *), UNKNOWN, cuCtxGetStreamPriorityRange, 5050) \
    X(MemGetInfo, CUresult, (size_t *, size_t *), UNKNOWN, cuMemGetInfo, 3020) \
    X(MemAlloc, CUresult, (CUdeviceptr *, size_t), OUT_OF_MEMORY, cuMemAlloc, 3020) \
    X(MemAllocManaged, CUresult, (CUdeviceptr *, size_t, unsigned int), OUT_OF_MEMORY, cuMemAllocManaged, 6000) \
    X(MemFree, CUresult, (CUdeviceptr), UNKNOWN, cuMemFree, 3020) \
    X(MemHostAlloc, CUresult, (void **, size_t, unsigned int), OUT_OF_MEMORY, cuMemHostAlloc, 2020) \
    X(MemFreeHost, CUresult, (void *), UNKNOWN, cuMemFreeHost, 2000) \
    X(MemPoolCreate, CUresult, (CUmemoryPool *, const CUmemPoolProps *), OUT_OF_MEMORY, cuMemPoolCreate, 11020) \
    X(MemPoolDestroy, CUresult, (CUmemoryPool), UNKNOWN, cuMemPoolDestroy, 11020) \
    X(MemPoolSetAccess, CUresult, (CUmemoryPool, const CUmemAccessDesc *, size_t), UNKNOWN, cuMemPoolSetAccess, 11020) \
    X(MemPoolGetAccess, CUresult, (CUmemAccess_flags *, CUmemoryPool, CUmemLocation *), UNKNOWN, cuMemPoolGetAccess, 11020) \
    X(MemPoolSetAttribute, CUresult, (CUmemoryPool, CUmemPool_attribute, void *), UNKNOWN, cuMemPoolSetAttribute, 11020) \
    X(MemPoolGetAttribute, CUresult, (CUmemoryPool, CUmemPool_attribute, void *), UNKNOWN, cuMemPoolGetAttribute, 11020) \
    X(MemPoolTrimTo, CUresult, (CUmemoryPool, size_t), UNKNOWN, cuMemPoolTrimTo, 11020) \
    X(MemAllocFromPoolAsync, CUresult, (CUdeviceptr *, size_t, CUmemoryPool, CUstream), OUT_OF_MEMORY, cuMemAllocFromPoolAsync, 11020) \
    X(MemFreeAsync, CUresult, (CUdeviceptr, CUstream), UNKNOWN, cuMemFreeAsync, 11020) \
    /* gf_prefetch_async: the CUmemLocation form, CUDA 12.2 drivers on */ \
    OPT(MemPrefetchAsync, CUresult, (CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream), UNKNOWN, cuMemPrefetchAsync_v2, 12020, PREFETCH) \
    X(MemcpyHtoDAsync, CUresult, (CUdeviceptr, const void *, size_t, CUstream), UNKNOWN, cuMemcpyHtoDAsync, 3020) \
    X(MemcpyDtoHAsync, CUresult, (void *, CUdeviceptr, size_t, CUstream), UNKNOWN, cuMemcpyDtoHAsync, 3020) \
    X(MemcpyDtoDAsync, CUresult, (CUdeviceptr, CUdeviceptr, size_t, CUstream), UNKNOWN, cuMemcpyDtoDAsync, 3020) \
    X(Memcpy2DAsync, CUresult, (const CUDA_MEMCPY2D *, CUstream), UNKNOWN, cuMemcpy2DAsync, 3020) \
    X(MemsetD8Async, CUresult, (CUdeviceptr, unsigned char, size_t, CUstream), UNKNOWN, cuMemsetD8Async, 3020) \
    X(MemsetD16Async, CUresult, (CUdeviceptr, unsigned short, size_t, CUstream), UNKNOWN, cuMemsetD16Async, 3020) \
    X(MemsetD32Async, CUresult, (CUdeviceptr, unsigned int, size_t, CUstream), UNKNOWN, cuMemsetD32Async, 3020) \
    X(PointerGetAttributes, CUresult, (unsigned int, CUpointer_attribute *, void **, CUdeviceptr), UNKNOWN, cuPointerGetAttributes, 7000) \
    X(StreamCreateWithPriority, CUresult, (CUstream *, unsigned int, int), UNKNOWN, cuStreamCreateWithPriority, 5050) \
    X(StreamDestroy, CUresult, (CUstream), UNKNOWN, cuStreamDestroy, 4000) \
    X(StreamGetCtx, CUresult, (CUstream, CUcontext *), UNKNOWN, cuStreamGetCtx, 9020) \
    X(StreamQuery, CUresult, (CUstream), UNKNOWN, cuStreamQuery, 2000) \
    X(StreamSynchronize, CUresult, (CUstream), UNKNOWN, cuStreamSynchronize, 2000) \
    X(StreamWaitEvent, CUresult, (CUstream, CUevent, unsigned int), UNKNOWN, cuStreamWaitEvent, 3020) \
    X(LaunchHostFunc, CUresult, (CUstream, CUhostFn, void *), UNKNOWN, cuLaunchHostFunc, 10000) \
    X(EventCreate, CUresult, (CUevent *, unsigned int), UNKNOWN, cuEventCreate, 2000) \
    X(EventDestroy, CUresult, (CUevent), UNKNOWN, cuEventDestroy, 4000) \
    X(EventRecord, CUresult, (CUevent, CUstream), UNKNOWN, cuEventRecord, 2000) \
    X(EventQuery, CUresult, (CUevent), UNKNOWN, cuEventQuery, 2000) \
    X(EventSynchronize, CUresult, (CUevent), UNKNOWN, cuEventSynchronize, 2000) \
    /* the first variant, on every driver (12.8's _v2 only stops reporting earlier errors) */ \
    X(EventElapsedTime, CUresult, (float *, CUevent, CUevent), UNKNOWN, cuEventElapsedTime, 2000) \
    X(ModuleLoadDataEx, CUresult, (CUmodule *, const void *, unsigned int, CUjit_option *, void **), UNKNOWN, cuModuleLoadDataEx, 2010) \
    X(ModuleUnload, CUresult, (CUmodule), UNKNOWN, cuModuleUnload, 2000) \
    X(ModuleGetFunction, CUresult, (CUfunction *, CUmodule, const char *), UNKNOWN, cuModuleGetFunction, 2000) \
    X(LaunchKernel, CUresult, (CUfunction, unsigned int, unsigned int, unsigned int, \
                                                    unsigned int, unsigned int, unsigned int, unsigned int, \
                                                    CUstream, void **, void **), UNKNOWN, cuLaunchKernel, 4000) \
    X(StreamBeginCapture, CUresult, (CUstream, CUstreamCaptureMode), UNKNOWN, cuStreamBeginCapture, 10010) \
    X(StreamEndCapture, CUresult, (CUstream, CUgraph *), UNKNOWN, cuStreamEndCapture, 10000) \
    X(ThreadExchangeStreamCaptureMode, CUresult, (CUstreamCaptureMode *), UNKNOWN, cuThreadExchangeStreamCaptureMode, 10010) \
    X(GraphGetNodes, CUresult, (CUgraph, CUgraphNode *, size_t *), UNKNOWN, cuGraphGetNodes, 10000) \
    X(GraphInstantiateWithFlags, CUresult, (CUgraphExec *, CUgraph, unsigned long long), UNKNOWN, cuGraphInstantiateWithFlags, 11040) \
    X(GraphLaunch, CUresult, (CUgraphExec, CUstream), UNKNOWN, cuGraphLaunch, 10000) \
    X(GraphExecUpdate, CUresult, (CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *), UNKNOWN, cuGraphExecUpdate, 12000) \
    X(GraphExecDestroy, CUresult, (CUgraphExec), UNKNOWN, cuGraphExecDestroy, 10000) \
    X(GraphDestroy, CUresult, (CUgraph), UNKNOWN, cuGraphDestroy, 10000) \
    X(GraphClone, CUresult, (CUgraph *, CUgraph), UNKNOWN, cuGraphClone, 10000) \
    X(GraphAddChildGraphNode, CUresult, (CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph), UNKNOWN, cuGraphAddChildGraphNode, 10000) \
    X(GraphNodeFindInClone, CUresult, (CUgraphNode *, CUgraphNode, CUgraph), UNKNOWN, cuGraphNodeFindInClone, 10000) \
    /* gf_graph_set_kernel_args: the forms with CUDA_KERNEL_NODE_PARAMS_v2 */ \
    X(GraphKernelNodeGetParams, CUresult, (CUgraphNode, CUDA_KERNEL_NODE_PARAMS *), UNKNOWN, cuGraphKernelNodeGetParams, 12000) \
    X(GraphKernelNodeSetParams, CUresult, (CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *), UNKNOWN, cuGraphKernelNodeSetParams, 12000) \
    X(GraphExecKernelNodeSetParams, CUresult, (CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *), UNKNOWN, cuGraphExecKernelNodeSetParams, 12000) \
    OPT(GraphDebugDotPrint, CUresult, (CUgraph, const char *, unsigned int), UNKNOWN, cuGraphDebugDotPrint, 11030, DOT) \
    /* a graph launched inside a capture: the edge-data forms, CUDA 12.3 drivers on */ \
    OPT(StreamGetCaptureInfo, CUresult, (CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, \
                                                                          const CUgraphNode **, const CUgraphEdgeData **, size_t *), UNKNOWN, cuStreamGetCaptureInfo_v3, 12030, CAPTURE) \
    OPT(StreamUpdateCaptureDependencies, CUresult, \
        (CUstream, CUgraphNode *, const CUgraphEdgeData *, size_t, unsigned int), UNKNOWN, cuStreamUpdateCaptureDependencies_v2, 12030, CAPTURE) \
    /* graphs that decide: conditional nodes, their bodies captured from a second stream */ \
    OPT(GraphConditionalHandleCreate, CUresult, (CUgraphConditionalHandle *, CUgraph, CUcontext, unsigned int, unsigned int), UNKNOWN, \
        cuGraphConditionalHandleCreate, 12030, CONDITIONAL) \
    OPT(GraphAddNode, CUresult, (CUgraphNode *, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t, CUgraphNodeParams *), UNKNOWN, \
        cuGraphAddNode_v2, 12030, CONDITIONAL) \
    OPT(StreamBeginCaptureToGraph, CUresult, (CUstream, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t, CUstreamCaptureMode), \
        UNKNOWN, cuStreamBeginCaptureToGraph, 12030, CONDITIONAL) \
    /* more than one device */ \
    X(DeviceCanAccessPeer, CUresult, (int *, CUdevice, CUdevice), UNKNOWN, cuDeviceCanAccessPeer, 4000) \
    X(CtxEnablePeerAccess, CUresult, (CUcontext, unsigned int), UNKNOWN, cuCtxEnablePeerAccess, 4000) \
    X(MemcpyPeerAsync, CUresult, (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream), UNKNOWN, cuMemcpyPeerAsync, 4000) \
    /* interop: other APIs' memory and semaphores; exportable memory (virtual memory management) */ \
    OPT(ImportExternalMemory, CUresult, (CUexternalMemory *, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *), UNKNOWN, cuImportExternalMemory, 10000, EXTERNAL) \
    OPT(ExternalMemoryGetMappedBuffer, CUresult, (CUdeviceptr *, CUexternalMemory, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *), UNKNOWN, cuExternalMemoryGetMappedBuffer, 10000, EXTERNAL) \
    OPT(DestroyExternalMemory, CUresult, (CUexternalMemory), UNKNOWN, cuDestroyExternalMemory, 10000, EXTERNAL) \
    OPT(ImportExternalSemaphore, CUresult, (CUexternalSemaphore *, const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC *), UNKNOWN, cuImportExternalSemaphore, 10000, EXTERNAL) \
    OPT(SignalExternalSemaphoresAsync, CUresult, (const CUexternalSemaphore *, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS *, unsigned int, CUstream), \
        UNKNOWN, cuSignalExternalSemaphoresAsync, 10000, EXTERNAL) \
    OPT(WaitExternalSemaphoresAsync, CUresult, (const CUexternalSemaphore *, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS *, unsigned int, CUstream), \
        UNKNOWN, cuWaitExternalSemaphoresAsync, 10000, EXTERNAL) \
    OPT(DestroyExternalSemaphore, CUresult, (CUexternalSemaphore), UNKNOWN, cuDestroyExternalSemaphore, 10000, EXTERNAL) \
    OPT(MemCreate, CUresult, (CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long), OUT_OF_MEMORY, cuMemCreate, 10020, VMM) \
    OPT(MemRelease, CUresult, (CUmemGenericAllocationHandle), UNKNOWN, cuMemRelease, 10020, VMM) \
    OPT(MemAddressReserve, CUresult, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long), OUT_OF_MEMORY, cuMemAddressReserve, 10020, VMM) \
    OPT(MemAddressFree, CUresult, (CUdeviceptr, size_t), UNKNOWN, cuMemAddressFree, 10020, VMM) \
    OPT(MemMap, CUresult, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long), UNKNOWN, cuMemMap, 10020, VMM) \
    OPT(MemUnmap, CUresult, (CUdeviceptr, size_t), UNKNOWN, cuMemUnmap, 10020, VMM) \
    OPT(MemSetAccess, CUresult, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t), UNKNOWN, cuMemSetAccess, 10020, VMM) \
    OPT(MemGetAllocationGranularity, CUresult, (size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags), UNKNOWN, \
        cuMemGetAllocationGranularity, 10020, VMM) \
    OPT(MemExportToShareableHandle, CUresult, (void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long), UNKNOWN, \
        cuMemExportToShareableHandle, 10020, VMM) \
    OPT(MemImportFromShareableHandle, CUresult, (CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType), UNKNOWN, \
        cuMemImportFromShareableHandle, 10020, VMM)

/* The optional entries' sets: a driver that lacks one entry of a set is taken to lack it all. */
enum { GF__CUDA_SET_NONE, GF__CUDA_SET_PREFETCH, GF__CUDA_SET_DOT, GF__CUDA_SET_CAPTURE, GF__CUDA_SET_CONDITIONAL,
       GF__CUDA_SET_EXTERNAL, GF__CUDA_SET_VMM };

/* The table, filled once by gf__cuda_load_driver; read-only afterwards. */
typedef struct gf__cuda_api {
#define GF__CUDA_SLOT(name, ret, params, fails_as, decl, abi) ret (CUDAAPI *name) params;
#define GF__CUDA_SLOT_OPT(name, ret, params, fails_as, decl, abi, set) ret (CUDAAPI *name) params;
    GF__CUDA_API(GF__CUDA_SLOT, GF__CUDA_SLOT_OPT)
#undef GF__CUDA_SLOT
#undef GF__CUDA_SLOT_OPT
} gf__cuda_api;
static gf__cuda_api gf__cu;

typedef struct gf__cuda_entry { const char *name; size_t offset; int abi; int set; /* 0: required */ } gf__cuda_entry;
static const gf__cuda_entry gf__cuda_entries[] = {
#define GF__CUDA_REQUIRED(name, ret, params, fails_as, decl, abi) { "cu" #name, offsetof(gf__cuda_api, name), abi, GF__CUDA_SET_NONE },
#define GF__CUDA_OPTIONAL(name, ret, params, fails_as, decl, abi, set) { "cu" #name, offsetof(gf__cuda_api, name), abi, GF__CUDA_SET_##set },
    GF__CUDA_API(GF__CUDA_REQUIRED, GF__CUDA_OPTIONAL)
#undef GF__CUDA_REQUIRED
#undef GF__CUDA_OPTIONAL
};

/* The loader's own lookup, found by dlsym: cuda.h maps cuGetProcAddress to this form. */
typedef CUresult (CUDAAPI *gf__cuda_get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* Never called: each slot's type against cuda.h's declaration. Comparing pointers to
   different function types is a constraint violation (an error in C++, a diagnostic that
   -Werror makes one in C); sizeof does not evaluate, so no driver symbol is referenced and
   nothing is needed at link time. */
static void gf__cuda_check_signatures(void) {
#define GF__CUDA_SAME(name, ret, params, fails_as, decl, abi) (void)sizeof(gf__cu.name == &decl);
#define GF__CUDA_SAME_OPT(name, ret, params, fails_as, decl, abi, set) GF__CUDA_SAME(name, ret, params, fails_as, decl, abi)
    GF__CUDA_API(GF__CUDA_SAME, GF__CUDA_SAME_OPT)
#undef GF__CUDA_SAME
#undef GF__CUDA_SAME_OPT
    (void)sizeof((gf__cuda_get_proc_fn)0 == &cuGetProcAddress);
}

/* What a fault-injected call of each entry point returns: gf__cuda_fault_<name>. */
enum {
#define GF__CUDA_FAULT_CODE(name, ret, params, fails_as, decl, abi) gf__cuda_fault_##name = CUDA_ERROR_##fails_as,
#define GF__CUDA_FAULT_CODE_OPT(name, ret, params, fails_as, decl, abi, set) GF__CUDA_FAULT_CODE(name, ret, params, fails_as, decl, abi)
    GF__CUDA_API(GF__CUDA_FAULT_CODE, GF__CUDA_FAULT_CODE_OPT)
#undef GF__CUDA_FAULT_CODE
#undef GF__CUDA_FAULT_CODE_OPT
    gf__cuda_fault_codes_end
};

/* cu<name> args, through the fault-injection seam: a test build may fail any entry point
   without calling it, as the driver would fail it. */
#define GF__CUDA_CALL(name, args) \
    (GF__FAULT("cu" #name) ? (CUresult)gf__cuda_fault_##name : gf__cu.name args)

static gf__driver gf__cuda_driver;
static int gf__cuda_driver_version;   /* cuDriverGetVersion's answer: 12040 is CUDA 12.4 */

/* Per gf_device state. */
typedef struct gf__cuda_device {
    CUdevice dev;
    CUcontext ctx;
    int borrowed;                     /* gf_device_open_native: the caller's context, never released */
    int prio_least, prio_greatest;    /* numerically: least >= greatest */
    int concurrent_managed;           /* prefetch to the GPU is meaningful */
    int cc;                           /* compute capability, 10 * major + minor: 90 for 9.0 */
    CUmemoryPool pool;                /* gpuflow's own pool on the device; NULL without memory pools */
    CUstream free_stream;             /* released memory goes back here (cuMemFreeAsync); NULL: cuMemFree */
    gf__spin cond_lock;               /* cond_module, loaded at the first conditional */
    CUmodule cond_module; CUfunction cond_set;
} gf__cuda_device;

/* ---- errors ----------------------------------------------------------------------------- */
/* The driver's name for a code; not a fault point: it names the others. */
static const char *gf__cuda_error_name(int r) {
    const char *name = NULL;
    if (gf__cu.GetErrorName && gf__cu.GetErrorName((CUresult)r, &name) == CUDA_SUCCESS && name) return name;
    return "CUDA_ERROR_UNRECOGNIZED";
}

/* How CUresults map onto gpuflow's codes and are named (the core's gf__native_codes): the
   capture codes are GF_ERROR_CAPTURE, "not allowed in this stream capture". */
static const int gf__cuda_capture_codes[] = {
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, CUDA_ERROR_STREAM_CAPTURE_MERGE,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, CUDA_ERROR_CAPTURED_EVENT, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD };
/* "the process is in an inconsistent state and any further CUDA work will return the same error" (cuda.h) */
static const int gf__cuda_lost_codes[] = { CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_ILLEGAL_INSTRUCTION,
                                        CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_INVALID_ADDRESS_SPACE, CUDA_ERROR_INVALID_PC, CUDA_ERROR_LAUNCH_FAILED };
static const gf__native_codes gf__cuda_codes = {
    CUDA_SUCCESS, CUDA_ERROR_NOT_READY, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NO_DEVICE,
    gf__cuda_capture_codes, (int)(sizeof gf__cuda_capture_codes / sizeof gf__cuda_capture_codes[0]),
    gf__cuda_lost_codes, (int)(sizeof gf__cuda_lost_codes / sizeof gf__cuda_lost_codes[0]), gf__cuda_error_name };

/* "cuXxx: CUDA_ERROR_NAME (n)", with the gpuflow code that CUresult maps to. */
static gf_result gf__cuda_fail(CUresult r, const char *call) { return gf__native_fail(&gf__cuda_codes, (int)r, call); }

/* cu<name> args; a failure returns from the calling function, named after the entry point. */
#define GF__CUDA_CHECK(name, args) do { CUresult gf__r_ = GF__CUDA_CALL(name, args); \
        if (gf__r_ != CUDA_SUCCESS) return gf__cuda_fail(gf__r_, "cu" #name); } while (0)

/* r = cu<name> args, made in RELAXED capture mode on this thread. A GLOBAL capture anywhere
   in the process makes CUDA refuse every synchronizing or allocating call (and invalidate
   the capture), also on streams and memory that take no part in it. gpuflow's core checks
   captures itself (it refuses to synchronize a capturing stream, or to copy synchronously
   into a buffer a capture uses), so its own calls go through relaxed; GLOBAL still guards
   against other code's CUDA calls. The mode goes back only if it was changed (after a
   failed first exchange a second would set RELAXED for good), and that restoring exchange
   bypasses the fault seam: failing it would leave the thread's mode changed, which no
   driver does. */
#define GF__CUDA_RELAXED(r, name, args) do { CUstreamCaptureMode gf__mode_ = CU_STREAM_CAPTURE_MODE_RELAXED; \
        int gf__swapped_ = GF__CUDA_CALL(ThreadExchangeStreamCaptureMode, (&gf__mode_)) == CUDA_SUCCESS; \
        (r) = GF__CUDA_CALL(name, args); \
        if (gf__swapped_) (void)gf__cu.ThreadExchangeStreamCaptureMode(&gf__mode_); } while (0)
#define GF__CUDA_RELAXED_VOID(name, args) do { CUresult gf__v_; GF__CUDA_RELAXED(gf__v_, name, args); (void)gf__v_; } while (0)
#define GF__CUDA_CHECK_RELAXED(name, args) do { CUresult gf__r_; GF__CUDA_RELAXED(gf__r_, name, args); \
        if (gf__r_ != CUDA_SUCCESS) return gf__cuda_fail(gf__r_, "cu" #name); } while (0)

/* ---- loading ---------------------------------------------------------------------------- */
/* Whether r says that libcuda is the toolkit's stub, not a driver (then d->why says so). */
static int gf__cuda_stub_library(gf__driver *d, CUresult r) {
    if (r != CUDA_ERROR_STUB_LIBRARY) return 0;
    snprintf(d->why, sizeof d->why, "CUDA: " GF__CUDA_LIBRARY " is the CUDA toolkit's stub library "
             "(CUDA_ERROR_STUB_LIBRARY), not an NVIDIA driver: install the driver, or take the "
             "toolkit's stubs directory off the library path");
    return 1;
}

/* Fills e's slot with the variant it is typed for: asked for at exactly that version, the
   driver hands out that variant and no later one. An entry newer than the driver is not
   asked for (the driver refuses a version newer than its own). 1: go on (an optional entry
   the driver lacks stays NULL); 0: the load fails, d->why says why. */
static int gf__cuda_resolve(gf__driver *d, gf__cuda_get_proc_fn get_proc, const gf__cuda_entry *e) {
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *fn = NULL;
    CUresult r;
    int v = gf__cuda_driver_version;
    if (v && e->abi > v) {
        if (e->set) return 1;
        snprintf(d->why, sizeof d->why, "CUDA: the driver (%d.%d) is older than CUDA %d.%d, which %s needs",
                 v / 1000, v % 1000 / 10, e->abi / 1000, e->abi % 1000 / 10, e->name);
        return 0;
    }
    r = get_proc(e->name, &fn, e->abi, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (gf__cuda_stub_library(d, r)) return 0;
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
        if (e->set) return 1;
        snprintf(d->why, sizeof d->why, "CUDA: the driver in " GF__CUDA_LIBRARY " lacks %s of CUDA %d.%d "
                 "(cuGetProcAddress: %d, status %d)", e->name, e->abi / 1000, e->abi % 1000 / 10, (int)r, (int)status);
        return 0;
    }
    memcpy((char *)&gf__cu + e->offset, &fn, sizeof fn);   /* object to function pointer */
    return 1;
}

/* A driver that lacks one entry of a set is taken to lack the whole set, so the code asks for
   one entry of a set before it calls any of them (a driver without cuDestroyExternalSemaphore
   crashed at the destroy of a semaphore it had imported). */
static void gf__cuda_optional_sets(void) {
    const size_t count = sizeof gf__cuda_entries / sizeof gf__cuda_entries[0];
    void *fn, *none = NULL;
    size_t i, j;
    for (i = 0; i < count; i++) {
        memcpy(&fn, (char *)&gf__cu + gf__cuda_entries[i].offset, sizeof fn);
        if (!gf__cuda_entries[i].set || fn) continue;
        for (j = 0; j < count; j++)
            if (gf__cuda_entries[j].set == gf__cuda_entries[i].set)
                memcpy((char *)&gf__cu + gf__cuda_entries[j].offset, &none, sizeof none);
    }
}

static void gf__cuda_load_driver(gf__driver *d) {
    gf__cuda_get_proc_fn get_proc;
    void *sym;
    size_t i;
    CUresult r;

    d->result = GF_ERROR_BACKEND_UNAVAILABLE;
    d->lib = gf__dlopen(GF__CUDA_LIBRARY);
    if (!d->lib) {
        snprintf(d->why, sizeof d->why, "CUDA: cannot load " GF__CUDA_LIBRARY " (%s): NVIDIA's driver installs it; "
                 "without it, open GF_BACKEND_AUTO to fall back", gf__dlerror());
        return;
    }
    sym = gf__dlsym(d->lib, "cuGetProcAddress_v2");
    if (!sym) {
        snprintf(d->why, sizeof d->why, "CUDA: " GF__CUDA_LIBRARY " has no cuGetProcAddress_v2: "
                 "the NVIDIA driver is older than CUDA 12.0");
        return;
    }
    memcpy(&get_proc, &sym, sizeof get_proc);   /* object to function pointer, the portable way */

    GPUFLOW_ASSERT(gf__cuda_entries[0].offset == offsetof(gf__cuda_api, DriverGetVersion));
    if (!gf__cuda_resolve(d, get_proc, &gf__cuda_entries[0])) return;
    r = GF__CUDA_CALL(DriverGetVersion, (&gf__cuda_driver_version));
    if (gf__cuda_stub_library(d, r)) return;
    if (r != CUDA_SUCCESS) gf__cuda_driver_version = 0;   /* unknown: the driver answers each request */
    for (i = 1; i < sizeof gf__cuda_entries / sizeof gf__cuda_entries[0]; i++)
        if (!gf__cuda_resolve(d, get_proc, &gf__cuda_entries[i])) return;
    gf__cuda_optional_sets();

    r = GF__CUDA_CALL(Init, (0));
    if (gf__cuda_stub_library(d, r)) return;
    if (r == CUDA_ERROR_NO_DEVICE) {
        /* The driver works; there is simply nothing to open: every device_count says so. */
        gf__driver_no_device(d, "CUDA: the driver (%d.%d) found no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE (100))",
                             gf__cuda_driver_version / 1000, gf__cuda_driver_version % 1000 / 10);
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
/* Every entry makes the device's context current on the calling thread. The
   thread-local cache skips cuCtxSetCurrent when this thread already set that context; the
   generation changes whenever a context is released, so a released (and maybe re-retained)
   context is set again. The rule this implies: a thread that makes another context current
   itself (cuCtxSetCurrent / cuCtxPushCurrent outside gpuflow) must restore gpuflow's before
   calling gpuflow again, or call it from another thread. */
static GF__TLS CUcontext gf__cuda_tls_ctx;
static GF__TLS uint64_t gf__cuda_tls_gen;
static uint64_t gf__cuda_generation = 1;

/* Makes ctx current on this thread, and remembers that it is. */
static gf_result gf__cuda_set_current(CUcontext ctx) {
    uint64_t gen = gf__atomic_load(&gf__cuda_generation);   /* read first: a release racing the set
                                                                makes the next entry set it again */
    GF__CUDA_CHECK(CtxSetCurrent, (ctx));
    gf__cuda_tls_ctx = ctx;
    gf__cuda_tls_gen = gen;
    return GF_OK;
}

static gf_result gf__cuda_enter(gf_device *dev) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    GPUFLOW_ASSERT(d != NULL);   /* the core calls in only between device_open and device_close */
    if (gf__cuda_tls_ctx == d->ctx && gf__cuda_tls_gen == gf__atomic_load(&gf__cuda_generation)) return GF_OK;
    return gf__cuda_set_current(d->ctx);
}
#define GF__CUDA_ENTER(dev) do { gf_result gf__e_ = gf__cuda_enter(dev); if (gf__e_ != GF_OK) return gf__e_; } while (0)

#define GF__CUSTREAM(s) ((CUstream)(s)->native)
#define GF__CUEVENT(e)  ((CUevent)(e)->native)

static CUdeviceptr gf__cuda_at(const gf_buffer *buf, size_t offset) { return (CUdeviceptr)(buf->native + offset); }

/* ---- devices ---------------------------------------------------------------------------- */
/* No device is reported as GF_ERROR_NO_DEVICE with the driver's reason (count 0): the core
   passes that text on, where a bare 0 would get a generic one. */
static gf_result gf__cuda_device_count(int *count) {
    gf_result e;
    *count = 0;
    if ((e = gf__driver_has_device(&gf__cuda_driver)) != GF_OK) return e;
    GF__CUDA_CHECK(DeviceGetCount, (count));
    if (*count == 0) return gf__fail(GF_ERROR_NO_DEVICE, "CUDA: the driver reports no CUDA device (cuDeviceGetCount: 0)");
    return GF_OK;
}

/* Kernel parameter space: CUDA 12.1 drivers take 32,764 bytes on Volta (7.0) and newer GPUs,
   older drivers and GPUs CUDA's classic 4,096. */
static size_t gf__cuda_kernel_args_limit(int cc) {
    return gf__cuda_driver_version >= 12010 && cc >= 70 ? 32764 : 4096;
}

/* Undoes an open: the retained primary context (a lent one stays its owner's) and the state. */
static void gf__cuda_device_free(gf_device *dev) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    if (d->pool) (void)GF__CUDA_CALL(MemPoolDestroy, (d->pool));   /* what is still queued is freed after, by the driver */
    if (!d->borrowed) (void)GF__CUDA_CALL(DevicePrimaryCtxRelease, (d->dev));
    gf__atomic_add(&gf__cuda_generation, 1);   /* every thread's cached context is stale now */
    gf__free(d);
    dev->native = NULL;
}

/* Read and write access for GPU dev: to a pool's memory, or to a mapped range. */
static CUmemAccessDesc gf__cuda_access(CUdevice dev) {
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = dev;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
}

/* Gives plain device memory back (the context current). cuMemFree waits for every operation
   queued on the device and holds other threads' driver calls meanwhile: on an H100, 280 ms
   behind another stream's 300 ms host function. The core frees only memory whose work has
   passed, so a stream-ordered free on a stream of gpuflow's own waits for nothing; the
   synchronize of that stream alone hands the memory back now (the driver keeps it until one)
   and costs no more than cuMemFree on an idle device (0.077 against 0.076 ms; busy, 0.058). */
static void gf__cuda_free_plain(gf__cuda_device *d, CUdeviceptr p) {
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (d && d->free_stream) GF__CUDA_RELAXED(r, MemFreeAsync, (p, d->free_stream));
    if (r == CUDA_SUCCESS) GF__CUDA_RELAXED(r, StreamSynchronize, (d->free_stream));
    else GF__CUDA_RELAXED(r, MemFree, (p));   /* no pools, or the driver refused: the waiting free */
    (void)r;
}

/* r = cu<name> args; a failure names the entry point in call and goes to the function's undo. */
#define GF__CUDA_STEP(name, args) do { if ((r = GF__CUDA_CALL(name, args)) != CUDA_SUCCESS) { \
        call = "cu" #name; goto undo; } } while (0)

/* The second half of both opens: d's context made current, the device described in info.
   On failure it undoes the open. */
static gf_result gf__cuda_device_start(gf_device *dev, gf__cuda_device *d) {
    gf_device_info *info = &dev->info;
    size_t total = 0;
    int units = 0, managed = 0, pools = 0, concurrent = 0, major = 0, minor = 0;
    const char *call;
    CUresult r;
    gf_result e;
    dev->native = d;
    if ((e = gf__cuda_set_current(d->ctx)) != GF_OK) { gf__cuda_device_free(dev); return e; }
    GF__CUDA_STEP(DeviceGetName, (info->name, (int)sizeof info->name, d->dev));
    GF__CUDA_STEP(DeviceTotalMem, (&total, d->dev));
    GF__CUDA_STEP(CtxGetStreamPriorityRange, (&d->prio_least, &d->prio_greatest));
    /* A failed attribute query fails the open, naming it: read as 0 it would open a device
       that quietly lacks pools or managed memory, and the later refusal would name nothing. */
    GF__CUDA_STEP(DeviceGetAttribute, (&units, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev));
    GF__CUDA_STEP(DeviceGetAttribute, (&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, d->dev));
    GF__CUDA_STEP(DeviceGetAttribute, (&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d->dev));
    GF__CUDA_STEP(DeviceGetAttribute, (&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, d->dev));
    GF__CUDA_STEP(DeviceGetAttribute, (&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev));
    GF__CUDA_STEP(DeviceGetAttribute, (&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev));
    {   /* launch limits, which gf_launch checks before the driver does */
        static const CUdevice_attribute limits[8] = {
            CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
            CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
            CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK };
        unsigned *into[8];
        int v = 0, i;
        into[0] = &info->max_threads_per_block;
        into[7] = &info->max_shared_per_block;
        for (i = 0; i < 3; i++) { into[1 + i] = &info->max_block[i]; into[4 + i] = &info->max_grid[i]; }
        for (i = 0; i < 8; i++) { GF__CUDA_STEP(DeviceGetAttribute, (&v, limits[i], d->dev)); *into[i] = v > 0 ? (unsigned)v : 0; }
    }
    info->total_memory = total;
    info->compute_units = units;
    info->native_graphs = 1;
    info->stream_priorities = d->prio_least != d->prio_greatest;
    info->managed_memory = managed != 0;
    info->async_alloc = pools != 0;
    info->spirv = 0;
    d->concurrent_managed = concurrent != 0;
    d->cc = 10 * major + minor;
    info->max_kernel_args_bytes = gf__cuda_kernel_args_limit(d->cc);
    if (info->async_alloc) {
        /* A pool of gpuflow's own, not the device's default one: that one is the process's
           (cudaMallocAsync's, PyTorch's), and its threshold, trims and counts are their
           owners'. Freed memory stays cached in it across synchronizations, up to the core's
           default (GF__DEFAULT_POOL_KEEP): stream-ordered reuse without holding the whole
           card away from other users. */
        cuuint64_t keep = (cuuint64_t)GF__DEFAULT_POOL_KEEP(total);
        CUmemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = d->dev;
        GF__CUDA_STEP(MemPoolCreate, (&d->pool, &props));
        /* relaxed: another thread's GLOBAL capture must not fail an open */
        GF__CUDA_RELAXED(r, MemPoolSetAttribute, (d->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
        if (r != CUDA_SUCCESS) { call = "cuMemPoolSetAttribute"; goto undo; }
        /* The stream plain memory goes back on (gf__cuda_free_plain). The first stream-ordered
           free or allocation of a process sets the driver's allocator up (11 ms on an H100):
           paid here, with the open's other one-time costs, not by a later free. */
        if (GF__CUDA_CALL(StreamCreateWithPriority, (&d->free_stream, CU_STREAM_NON_BLOCKING, 0)) != CUDA_SUCCESS) d->free_stream = NULL;
        else {
            CUdeviceptr p = 0;
            GF__CUDA_RELAXED(r, MemAllocFromPoolAsync, (&p, 1, d->pool, d->free_stream));
            if (r == CUDA_SUCCESS) gf__cuda_free_plain(d, p);
        }
    }
    return GF_OK;
undo:
    gf__cuda_device_free(dev);
    return gf__cuda_fail(r, call);
}

static gf_result gf__cuda_device_open(gf_device *dev, int index) {
    gf__cuda_device *d = (gf__cuda_device *)gf__calloc(sizeof *d);
    const char *call;
    CUresult r;
    if (!d) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory opening device %d", index);
    GF__CUDA_STEP(DeviceGet, (&d->dev, index));
    GF__CUDA_STEP(DevicePrimaryCtxRetain, (&d->ctx, d->dev));
    return gf__cuda_device_start(dev, d);
undo:
    gf__free(d);
    return gf__cuda_fail(r, call);
}

/* A gf_device over the caller's context (the runtime's primary context, or one of its own):
   used as lent, never released. The caller keeps it alive until gf_device_close. */
static gf_result gf__cuda_device_open_native(gf_device *dev, const gf_native_device *native) {
    gf__cuda_device *d;
    const char *call;
    CUresult r;
    gf_result e;
    if (!native->context) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_device_open_native: CUDA takes native->context, a CUcontext; it is NULL");
    if ((e = gf__cuda_set_current((CUcontext)native->context)) != GF_OK) return e;
    if (!(d = (gf__cuda_device *)gf__calloc(sizeof *d))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory opening a native device");
    d->ctx = (CUcontext)native->context;
    d->borrowed = 1;
    GF__CUDA_STEP(CtxGetDevice, (&d->dev));
    return gf__cuda_device_start(dev, d);
undo:
    gf__free(d);
    return gf__cuda_fail(r, call);
}
#undef GF__CUDA_STEP

/* The core has drained every stream and freed its staging memory first. */
static void gf__cuda_device_close(gf_device *dev) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    if (!d) return;
    if (d->cond_module && gf__cuda_enter(dev) == GF_OK) (void)GF__CUDA_CALL(ModuleUnload, (d->cond_module));
    if (d->free_stream && gf__cuda_enter(dev) == GF_OK) (void)GF__CUDA_CALL(StreamDestroy, (d->free_stream));   /* idle: each free waited for it */
    gf__cuda_device_free(dev);
}

static void gf__cuda_device_native(gf_device *dev, gf_native_device *out) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    out->context = d->ctx;
    out->ordinal = (int)d->dev;
}

static gf_result gf__cuda_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes) {
    GF__CUDA_ENTER(dev);
    GF__CUDA_CHECK(MemGetInfo, (free_bytes, total_bytes));
    return GF_OK;
}

/* ---- memory ----------------------------------------------------------------------------- */
static void gf__cuda_external_free(gf_buffer *buf);          /* interop, below */
static gf_result gf__cuda_alloc_exportable(gf_buffer *buf);

static gf_result gf__cuda_buffer_alloc(gf_buffer *buf) {
    CUdeviceptr p = 0;
    GF__CUDA_ENTER(buf->dev);
    if (buf->exportable) return gf__cuda_alloc_exportable(buf);
    if (buf->managed)
        GF__CUDA_CHECK_RELAXED(MemAllocManaged, (&p, buf->size, CU_MEM_ATTACH_GLOBAL));
    else
        GF__CUDA_CHECK_RELAXED(MemAlloc, (&p, buf->size));
    buf->native = (uint64_t)p;
    return GF_OK;
}

static void gf__cuda_buffer_free(gf_buffer *buf) {
    gf__cuda_device *d = (gf__cuda_device *)buf->dev->native;
    if (buf->external) gf__cuda_external_free(buf);
    else if (buf->native && !buf->borrowed && gf__cuda_enter(buf->dev) == GF_OK) {
        if (buf->managed) GF__CUDA_RELAXED_VOID(MemFree, ((CUdeviceptr)buf->native));
        else gf__cuda_free_plain(d, (CUdeviceptr)buf->native);
    }
    buf->native = 0;
}

/* Memory of the caller's (gf_buffer_wrap): used as given, left to its owner on destroy. */
static gf_result gf__cuda_buffer_wrap(gf_buffer *buf, uint64_t native) {
    buf->native = native;
    return GF_OK;
}

static gf_result gf__cuda_buffer_alloc_async(gf_stream *s, gf_buffer *buf) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    CUdeviceptr p = 0;
    if (!d->pool) return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: device %s has no memory pools (stream-ordered allocation)", s->dev->tag);
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(MemAllocFromPoolAsync, (&p, buf->size, d->pool, GF__CUSTREAM(s)));
    buf->native = (uint64_t)p;
    return GF_OK;
}

/* gf_device_trim: what the pool can give back now. A stream-ordered free still queued is
   not done yet, and the pool keeps what backs it (no context synchronize here: it would
   break a capture in progress on another thread). */
static void gf__cuda_trim(gf_device *dev, size_t keep_bytes) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    if (d->pool && gf__cuda_enter(dev) == GF_OK) (void)GF__CUDA_CALL(MemPoolTrimTo, (d->pool, keep_bytes));
}

/* Freed memory the pool keeps: reserved minus in use, as the driver counts them. */
static size_t gf__cuda_cached_bytes(gf_device *dev) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    cuuint64_t reserved = 0, used = 0;
    if (!d->pool || gf__cuda_enter(dev) != GF_OK ||
        GF__CUDA_CALL(MemPoolGetAttribute, (d->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved)) != CUDA_SUCCESS ||
        GF__CUDA_CALL(MemPoolGetAttribute, (d->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used)) != CUDA_SUCCESS)
        return 0;
    return reserved > used ? (size_t)(reserved - used) : 0;
}

static gf_result gf__cuda_buffer_free_async(gf_stream *s, gf_buffer *buf) {
    GPUFLOW_ASSERT(buf->native != 0);   /* the core frees only what buffer_alloc_async handed out */
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(MemFreeAsync, ((CUdeviceptr)buf->native, GF__CUSTREAM(s)));
    buf->native = 0;
    return GF_OK;
}

/* Pinned host memory, for the user and for the core's staging buffers, from any thread
   (never from a host callback): each call makes the context current first. */
static gf_result gf__cuda_host_alloc(gf_device *dev, size_t bytes, void **out) {
    GF__CUDA_ENTER(dev);
    GF__CUDA_CHECK_RELAXED(MemHostAlloc, (out, bytes, CU_MEMHOSTALLOC_PORTABLE));
    return GF_OK;
}

static void gf__cuda_host_free(gf_device *dev, void *ptr) {
    if (ptr && gf__cuda_enter(dev) == GF_OK) GF__CUDA_RELAXED_VOID(MemFreeHost, (ptr));
}

/* Memory CUDA knows as pinned host memory copies asynchronously as it is; the core stages
   copies from any other host memory. The plural cuPointerGetAttributes answers "no type" for
   memory CUDA does not know, where the singular fails. A failed question is "not pinned":
   staging is the safe answer. */
static int gf__cuda_host_pinned(gf_device *dev, const void *p) {
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    CUmemorytype type = (CUmemorytype)0;
    void *data = &type;
    if (gf__cuda_enter(dev) != GF_OK) return 0;
    return GF__CUDA_CALL(PointerGetAttributes, (1, &attr, &data, (CUdeviceptr)(uintptr_t)p)) == CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_HOST;
}

/* ---- streams ---------------------------------------------------------------------------- */
static gf_result gf__cuda_stream_create(gf_stream *s) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    CUstream cs = NULL;
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(StreamCreateWithPriority, (&cs, CU_STREAM_NON_BLOCKING, gf__native_priority(s->priority, d->prio_least, d->prio_greatest)));
#ifdef GPUFLOW_NVTX
    if (s->label[0]) nvtxNameCuStreamA(cs, s->label);
#endif
    s->native = cs;
    return GF_OK;
}

static void gf__cuda_stream_destroy(gf_stream *s) {
    if (s->native && !s->borrowed && gf__cuda_enter(s->dev) == GF_OK) GF__CUDA_RELAXED_VOID(StreamDestroy, (GF__CUSTREAM(s)));
    s->native = NULL;
    gf__free(s->cond_native);   /* conditionals' bookkeeping (none open: the capture is over) */
    s->cond_native = NULL;
}

/* A stream of the caller's (gf_stream_wrap), of this device's context; left alive on destroy. */
static gf_result gf__cuda_stream_wrap(gf_stream *s, void *native) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    CUcontext ctx = NULL;
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(StreamGetCtx, ((CUstream)native, &ctx));
    if (ctx != d->ctx) return gf__fail(GF_ERROR_WRONG_DEVICE, "gf_stream_wrap: the CUstream belongs to another CUDA context than the device's");
    s->native = native;
    return GF_OK;
}

static gf_result gf__cuda_stream_synchronize(gf_stream *s) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK_RELAXED(StreamSynchronize, (GF__CUSTREAM(s)));
    return GF_OK;
}

static gf_result gf__cuda_stream_query(gf_stream *s) {
    CUresult r;
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_RELAXED(r, StreamQuery, (GF__CUSTREAM(s)));
    return gf__native_ready(&gf__cuda_codes, (int)r, "cuStreamQuery");
}

/* c->host is pinned here, or the copy is captured: the core staged any other (host_pinned). */
static gf_result gf__cuda_copy(gf_stream *s, const gf__copy *c) {
    CUstream cs = GF__CUSTREAM(s);
    GF__CUDA_ENTER(s->dev);
    switch (c->kind) {
    case GF__COPY_H2D:
        GF__CUDA_CHECK(MemcpyHtoDAsync, (gf__cuda_at(c->dst, c->dst_offset), c->host, c->bytes, cs));
        break;
    case GF__COPY_D2H:
        GF__CUDA_CHECK(MemcpyDtoHAsync, (c->host, gf__cuda_at(c->src, c->src_offset), c->bytes, cs));
        break;
    default:
        GF__CUDA_CHECK(MemcpyDtoDAsync, (gf__cuda_at(c->dst, c->dst_offset), gf__cuda_at(c->src, c->src_offset), c->bytes, cs));
        break;
    }
    return GF_OK;
}

/* ---- more than one device: peers --------------------------------------------------------- */
/* Two gf_devices opened on one GPU share its primary context: each reaches the other's memory
   already. Across GPUs the driver decides, and a copy without peer access is staged by it. */
#define GF__CUCTX(dev) (((gf__cuda_device *)(dev)->native)->ctx)
static int gf__cuda_peer_can_access(gf_device *a, gf_device *b) {
    int can = 0;
    if (GF__CUCTX(a) == GF__CUCTX(b)) return 1;
    if (gf__cuda_enter(a) != GF_OK) return 0;
    if (GF__CUDA_CALL(DeviceCanAccessPeer, (&can, ((gf__cuda_device *)a->native)->dev, ((gf__cuda_device *)b->native)->dev)) != CUDA_SUCCESS) return 0;
    return can;
}
/* cuCtxEnablePeerAccess maps b's plain allocations into a's context, not its pool's: b's pool
   grants a's GPU access too (to what it holds now and will hand out). Two contexts on one GPU
   reach the pool already. The grant is per GPU, the peer enable per context: a failed enable
   puts back the access the GPU had before (another context of it may have been granted it). */
static gf_result gf__cuda_peer_enable(gf_device *a, gf_device *b) {
    gf__cuda_device *da = (gf__cuda_device *)a->native, *db = (gf__cuda_device *)b->native;
    CUmemAccessDesc access = gf__cuda_access(da->dev);
    CUmemAccess_flags before = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    int grant = db->pool && da->dev != db->dev;
    CUresult r;
    if (da->ctx == db->ctx) return GF_OK;
    GF__CUDA_ENTER(a);
    if (grant) GF__CUDA_CHECK(MemPoolGetAccess, (&before, db->pool, &access.location));
    grant = grant && before != CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (grant) GF__CUDA_CHECK(MemPoolSetAccess, (db->pool, &access, 1));
    r = GF__CUDA_CALL(CtxEnablePeerAccess, (db->ctx, 0));
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        access.flags = before;   /* no half-done enable */
        if (grant) (void)GF__CUDA_CALL(MemPoolSetAccess, (db->pool, &access, 1));
        return gf__cuda_fail(r, "cuCtxEnablePeerAccess");
    }
    return GF_OK;
}
static gf_result gf__cuda_copy_peer(gf_stream *s, const gf__copy *c) {
    CUdeviceptr dst = gf__cuda_at(c->dst, c->dst_offset), src = gf__cuda_at(c->src, c->src_offset);
    GF__CUDA_ENTER(s->dev);
    if (GF__CUCTX(c->dst->dev) == GF__CUCTX(c->src->dev))
        GF__CUDA_CHECK(MemcpyDtoDAsync, (dst, src, c->bytes, GF__CUSTREAM(s)));
    else
        GF__CUDA_CHECK(MemcpyPeerAsync, (dst, GF__CUCTX(c->dst->dev), src, GF__CUCTX(c->src->dev), c->bytes, GF__CUSTREAM(s)));
    return GF_OK;
}

static gf_result gf__cuda_fill(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(MemsetD8Async, (gf__cuda_at(buf, offset), value, bytes, GF__CUSTREAM(s)));
    return GF_OK;
}

/* 2- and 4-byte values; the core checked that the offset is a multiple of the width. */
static gf_result gf__cuda_fill_wide(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, int width, size_t count) {
    GPUFLOW_ASSERT(width == 2 || width == 4);   /* gf_fill16_async / gf_fill32_async */
    GF__CUDA_ENTER(s->dev);
    if (width == 2) GF__CUDA_CHECK(MemsetD16Async, (gf__cuda_at(buf, offset), (unsigned short)value, count, GF__CUSTREAM(s)));
    else GF__CUDA_CHECK(MemsetD32Async, (gf__cuda_at(buf, offset), value, count, GF__CUSTREAM(s)));
    return GF_OK;
}

/* One cuMemcpy2DAsync; host memory on either side is pinned here (the core copies pageable
   memory row by row through its stages). */
static gf_result gf__cuda_copy_2d(gf_stream *s, const gf_copy_2d *c) {
    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof m);
    if (c->src) { m.srcMemoryType = CU_MEMORYTYPE_DEVICE; m.srcDevice = gf__cuda_at(c->src, c->src_offset); }
    else        { m.srcMemoryType = CU_MEMORYTYPE_HOST;   m.srcHost = c->src_host; }
    if (c->dst) { m.dstMemoryType = CU_MEMORYTYPE_DEVICE; m.dstDevice = gf__cuda_at(c->dst, c->dst_offset); }
    else        { m.dstMemoryType = CU_MEMORYTYPE_HOST;   m.dstHost = c->dst_host; }
    m.srcPitch = c->src_pitch;
    m.dstPitch = c->dst_pitch;
    m.WidthInBytes = c->width;
    m.Height = c->height;
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(Memcpy2DAsync, (&m, GF__CUSTREAM(s)));
    return GF_OK;
}

static gf_result gf__cuda_prefetch(gf_stream *s, gf_buffer *buf, int to_device) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    CUmemLocation loc;
    if (!gf__cu.MemPrefetchAsync)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: cuMemPrefetchAsync with a CUmemLocation needs a CUDA 12.2+ driver");
    /* Without concurrent managed access the driver migrates managed memory at each launch
       itself and refuses prefetches to the GPU: the hint has nothing left to do. */
    if (!d->concurrent_managed) return GF_OK;
    GF__CUDA_ENTER(s->dev);
    memset(&loc, 0, sizeof loc);
    loc.type = to_device ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST;
    loc.id = to_device ? (int)d->dev : 0;
    GF__CUDA_CHECK(MemPrefetchAsync, ((CUdeviceptr)buf->native, buf->size, loc, 0, GF__CUSTREAM(s)));
    return GF_OK;
}

static gf_result gf__cuda_host_callback(gf_stream *s, void (*fn)(void *user), void *user) {
    GF__CUDA_ENTER(s->dev);
    /* CUhostFn is void (CUDA_CB *)(void *): the same type except for Windows' calling
       convention keyword, which x64 (the only Windows CUDA target) ignores. */
    GF__CUDA_CHECK(LaunchHostFunc, (GF__CUSTREAM(s), (CUhostFn)fn, user));
    return GF_OK;
}

/* ---- events ----------------------------------------------------------------------------- */
static gf_result gf__cuda_event_create(gf_event *ev) {
    CUevent e = NULL;
    GF__CUDA_ENTER(ev->dev);
    GF__CUDA_CHECK(EventCreate, (&e, (ev->flags & GF_EVENT_TIMING) ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING));
    ev->native = e;
    return GF_OK;
}

static void gf__cuda_event_destroy(gf_event *ev) {
    if (ev->native && gf__cuda_enter(ev->dev) == GF_OK) (void)GF__CUDA_CALL(EventDestroy, (GF__CUEVENT(ev)));
    ev->native = NULL;
}

static gf_result gf__cuda_event_record(gf_event *ev, gf_stream *s) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(EventRecord, (GF__CUEVENT(ev), GF__CUSTREAM(s)));
    return GF_OK;
}

static gf_result gf__cuda_stream_wait_event(gf_stream *s, gf_event *ev) {
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(StreamWaitEvent, (GF__CUSTREAM(s), GF__CUEVENT(ev), CU_EVENT_WAIT_DEFAULT));
    return GF_OK;
}

static gf_result gf__cuda_event_synchronize(gf_event *ev) {
    GF__CUDA_ENTER(ev->dev);
    GF__CUDA_CHECK_RELAXED(EventSynchronize, (GF__CUEVENT(ev)));
    return GF_OK;
}

static gf_result gf__cuda_event_query(gf_event *ev) {
    CUresult r;
    GF__CUDA_ENTER(ev->dev);
    GF__CUDA_RELAXED(r, EventQuery, (GF__CUEVENT(ev)));
    return gf__native_ready(&gf__cuda_codes, (int)r, "cuEventQuery");
}

static gf_result gf__cuda_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    GF__CUDA_ENTER(start->dev);
    return gf__native_ready(&gf__cuda_codes, (int)GF__CUDA_CALL(EventElapsedTime, (ms, GF__CUEVENT(start), GF__CUEVENT(end))),
                            "cuEventElapsedTime");
}

/* ---- modules and kernels ---------------------------------------------------------------- */
static gf_result gf__cuda_module_load(gf_module *mod, const gf_module_desc *desc) {
    char log[4096];
    CUjit_option opts[2];
    void *vals[2];
    CUmodule m = NULL;
    const void *image = desc->cubin ? desc->cubin : (const void *)desc->ptx;   /* cubin needs no JIT */
    CUresult r;
    if (!image)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: the module description has neither ptx nor cubin");
    GF__CUDA_ENTER(mod->dev);
    log[0] = 0;
    opts[0] = CU_JIT_ERROR_LOG_BUFFER;            vals[0] = log;
    opts[1] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES; vals[1] = (void *)(uintptr_t)sizeof log;
    GF__CUDA_RELAXED(r, ModuleLoadDataEx, (&m, image, 2, opts, vals));
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return gf__cuda_fail(r, "cuModuleLoadDataEx");
    if (r != CUDA_SUCCESS) {
        log[sizeof log - 1] = 0;
        return gf__fail(GF_ERROR_BUILD, "cuModuleLoadDataEx (%s): %s (%d)%s%s%s", desc->cubin ? "cubin" : "PTX",
                        gf__cuda_error_name(r), (int)r, log[0] ? ": " : "", log,
                        r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ? " (the PTX is newer than this driver takes: make it with an "
                        "older toolkit or NVRTC, or update the driver)" : "");
    }
    mod->native = m;
    return GF_OK;
}

static void gf__cuda_module_unload(gf_module *mod) {
    if (mod->native && gf__cuda_enter(mod->dev) == GF_OK) GF__CUDA_RELAXED_VOID(ModuleUnload, ((CUmodule)mod->native));
    mod->native = NULL;
}

static gf_result gf__cuda_kernel_get(gf_kernel *k) {
    CUfunction f = NULL;
    GF__CUDA_ENTER(k->mod->dev);
    GF__CUDA_CHECK(ModuleGetFunction, (&f, (CUmodule)k->mod->native, k->name));   /* the core names a missing kernel */
    k->native = f;
    return GF_OK;
}

/* ---- kernels from one source: NVRTC, loaded at run time ----------------------------------- */
#ifndef GPUFLOW_NO_NVRTC
/* X(name, return type, (parameters), fails_as): nvrtc<name>, a slot of gf__nvrtc typed as nvrtc.h
   declares it (checked at compile time, as the driver's entries are), called through the
   fault seam: a fault-injected call returns NVRTC_ERROR_<fails_as>. nvrtcGetErrorString is
   no fault point: it names the others. */
#define GF__NVRTC_API(X) \
    X(Version, nvrtcResult, (int *, int *), INTERNAL_ERROR) \
    X(GetErrorString, const char *, (nvrtcResult), INTERNAL_ERROR) \
    X(CreateProgram, nvrtcResult, (nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *), OUT_OF_MEMORY) \
    X(CompileProgram, nvrtcResult, (nvrtcProgram, int, const char *const *), OUT_OF_MEMORY) \
    X(GetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t *), INTERNAL_ERROR) \
    X(GetProgramLog, nvrtcResult, (nvrtcProgram, char *), INTERNAL_ERROR) \
    X(GetPTXSize, nvrtcResult, (nvrtcProgram, size_t *), INTERNAL_ERROR) \
    X(GetPTX, nvrtcResult, (nvrtcProgram, char *), INTERNAL_ERROR) \
    X(GetCUBINSize, nvrtcResult, (nvrtcProgram, size_t *), INTERNAL_ERROR) \
    X(GetCUBIN, nvrtcResult, (nvrtcProgram, char *), INTERNAL_ERROR) \
    X(DestroyProgram, nvrtcResult, (nvrtcProgram *), INTERNAL_ERROR) \
    X(GetNumSupportedArchs, nvrtcResult, (int *), INTERNAL_ERROR) \
    X(GetSupportedArchs, nvrtcResult, (int *), INTERNAL_ERROR)

typedef struct gf__nvrtc_api {
#define GF__NVRTC_SLOT(name, type, params, fails_as) type (*name) params;
    GF__NVRTC_API(GF__NVRTC_SLOT)
#undef GF__NVRTC_SLOT
} gf__nvrtc_api;
static gf__nvrtc_api gf__nvrtc;          /* filled once by gf__nvrtc_load_library; read-only afterwards */
static gf__driver gf__nvrtc_library;
static int gf__nvrtc_version;            /* nvrtcVersion's answer as 1000 * major + 10 * minor: 13000 */

/* Never called: each slot's type against nvrtc.h's declaration (see gf__cuda_check_signatures). */
static void gf__nvrtc_check_signatures(void) {
#define GF__NVRTC_SAME(name, type, params, fails_as) (void)sizeof(gf__nvrtc.name == &nvrtc##name);
    GF__NVRTC_API(GF__NVRTC_SAME)
#undef GF__NVRTC_SAME
}

enum {
#define GF__NVRTC_FAULT_CODE(name, type, params, fails_as) gf__nvrtc_fault_##name = NVRTC_ERROR_##fails_as,
    GF__NVRTC_API(GF__NVRTC_FAULT_CODE)
#undef GF__NVRTC_FAULT_CODE
    gf__nvrtc_fault_codes_end
};
#define GF__NVRTC_CALL(name, args) \
    (GF__FAULT("nvrtc" #name) ? (nvrtcResult)gf__nvrtc_fault_##name : gf__nvrtc.name args)

static const char *gf__nvrtc_error_name(int r) {
    const char *name = gf__nvrtc.GetErrorString ? gf__nvrtc.GetErrorString((nvrtcResult)r) : NULL;
    return name ? name : "NVRTC_ERROR_UNRECOGNIZED";
}
/* NVRTC's codes in gpuflow's terms: out of memory, or a driver failure (compile errors are
   GF_ERROR_BUILD, said with the log, below). -1: a code NVRTC does not have. */
static const gf__native_codes gf__nvrtc_codes = {
    NVRTC_SUCCESS, -1, NVRTC_ERROR_OUT_OF_MEMORY, -1, -1, -1, NULL, 0, NULL, 0, gf__nvrtc_error_name };

/* Where NVRTC is looked for, in order: the soname of the driver's major version first (PTX
   from a newer NVRTC does not load on an older driver), then the other, then any; on Linux
   last the toolkit's own directory, for machines where the loader's cache does not know it.
   A pip wheel's copy (nvidia-cuda-nvrtc) is found through LD_LIBRARY_PATH / PATH. A test may
   define the list itself (tests/nvrtc_check.c: a name that does not exist). */
#if defined(GF__NVRTC_NAMES)
#elif defined(_WIN32)
#  define GF__NVRTC_NAMES "nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll"
#else
#  define GF__NVRTC_NAMES "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", \
                          "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12"
#endif

static void gf__nvrtc_load_library(gf__driver *d) {
    const char *names[] = { GF__NVRTC_NAMES };
    char first_error[256];
    const char *loaded = NULL;
    size_t i;
    int major = 0, minor = 0;
    void *sym;
    d->result = GF_ERROR_NOT_SUPPORTED;
    if (sizeof names / sizeof names[0] > 1 && gf__cuda_driver_version && gf__cuda_driver_version < 13000) {
        const char *newest = names[0];   /* a CUDA 12 driver: NVRTC 12 first */
        names[0] = names[sizeof names / sizeof names[0] > 1];
        names[sizeof names / sizeof names[0] > 1] = newest;
    }
    first_error[0] = 0;
    for (i = 0; i < sizeof names / sizeof names[0] && !d->lib; i++) {
        if ((d->lib = gf__dlopen(names[i])) != NULL) loaded = names[i];
        else if (!first_error[0]) snprintf(first_error, sizeof first_error, "%s", gf__dlerror());
    }
    if (!d->lib) {
        snprintf(d->why, sizeof d->why, "NVRTC: cannot load %s (%s): install the CUDA toolkit's NVRTC (e.g. the cuda-nvrtc "
                 "package, or pip install nvidia-cuda-nvrtc); PTX and cubin modules work without it", names[0], first_error);
        return;
    }
#define GF__NVRTC_RESOLVE(name, type, params, fails_as) \
    if (!(sym = gf__dlsym(d->lib, "nvrtc" #name))) { \
        snprintf(d->why, sizeof d->why, "NVRTC: %s has no nvrtc" #name ": it is older than NVRTC 11.2", loaded); \
        return; } \
    memcpy(&gf__nvrtc.name, &sym, sizeof sym);   /* object to function pointer */
    GF__NVRTC_API(GF__NVRTC_RESOLVE)
#undef GF__NVRTC_RESOLVE
    if (gf__nvrtc.Version(&major, &minor) == NVRTC_SUCCESS) gf__nvrtc_version = major * 1000 + minor * 10;   /* no fault point: loading */
    d->result = GF_OK;
}
static gf_result gf__nvrtc_load(void) { return gf__driver_load(&gf__nvrtc_library, gf__nvrtc_load_library); }

/* text (complete: any prelude already in it) compiled by NVRTC for arch, with
   "-default-device" and then the user's options; name names it in the log. A virtual arch
   ("compute_75") gives NUL-terminated PTX, a real one ("sm_90") a cubin (ELF), in *ptx from
   gf__malloc, *size counting the PTX's NUL. A compile error, or an option NVRTC refuses, is
   GF_ERROR_BUILD "NVRTC: name: <log>"; no NVRTC is GF_ERROR_NOT_SUPPORTED. Needs no GPU and
   no driver: CI compiles kernels with it (tests/nvrtc_check.c). */
static gf_result gf__cuda_nvrtc_build(const char *arch, const char *name, const char *text, const char *options,
                                      void **ptx, size_t *size) {
    int cubin = strncmp(arch, "sm_", 3) == 0;   /* a real architecture: the GPU's own code, no JIT at load */
    nvrtcProgram prog = NULL;
    char arch_option[64], *buf = NULL, *log = NULL, *out = NULL;
    const char **opts = NULL;
    const char *call = NULL;
    size_t n = options ? strlen(options) : 0;
    int count;
    nvrtcResult r;
    gf_result e;
    *ptx = NULL;
    *size = 0;
    if ((e = gf__nvrtc_load()) != GF_OK) return e;
    if (!name || !*name) name = "kernels";
    buf = (char *)gf__malloc(n + 1);
    opts = (const char **)gf__malloc(sizeof *opts * (n / 2 + 3));
    if (!buf || !opts) { e = gf__fail(GF_ERROR_OUT_OF_MEMORY, "NVRTC: out of host memory compiling %s", name); goto done; }
    snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", arch);
    memcpy(buf, options ? options : "", n + 1);
    opts[0] = arch_option;
    opts[1] = "-default-device";   /* a function or variable without __device__ is the device's */
    count = 2 + gf__split_options(buf, opts + 2);
    if ((r = GF__NVRTC_CALL(CreateProgram, (&prog, text, name, 0, NULL, NULL))) != NVRTC_SUCCESS) { call = "nvrtcCreateProgram"; goto failed; }
    r = GF__NVRTC_CALL(CompileProgram, (prog, count, opts));
    if (r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION) {
        size_t len = 0;
        if (GF__NVRTC_CALL(GetProgramLogSize, (prog, &len)) == NVRTC_SUCCESS && len > 1 && (log = (char *)gf__malloc(len)) != NULL &&
            GF__NVRTC_CALL(GetProgramLog, (prog, log)) == NVRTC_SUCCESS) {
            log[len - 1] = 0;
            for (len = strlen(log); len && (log[len - 1] == '\n' || log[len - 1] == '\r' || log[len - 1] == ' '); ) log[--len] = 0;
        } else if (log) log[0] = 0;
        e = gf__fail(GF_ERROR_BUILD, "NVRTC: %s: %s", name, log && log[0] ? gf__build_log_start(log, sizeof gf__error_text / 2) : gf__nvrtc_error_name((int)r));
        goto done;
    }
    if (r != NVRTC_SUCCESS) { call = "nvrtcCompileProgram"; goto failed; }
    if ((r = cubin ? GF__NVRTC_CALL(GetCUBINSize, (prog, &n)) : GF__NVRTC_CALL(GetPTXSize, (prog, &n))) != NVRTC_SUCCESS) {
        call = cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize";
        goto failed;
    }
    if (!(out = (char *)gf__malloc(n + 1))) { e = gf__fail(GF_ERROR_OUT_OF_MEMORY, "NVRTC: out of host memory for %s's code", name); goto done; }
    if ((r = cubin ? GF__NVRTC_CALL(GetCUBIN, (prog, out)) : GF__NVRTC_CALL(GetPTX, (prog, out))) != NVRTC_SUCCESS) {
        call = cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX";
        goto failed;
    }
    out[n] = 0;   /* n counts NVRTC's own NUL; one more, should a version not write it */
    *ptx = out;
    *size = n;
    out = NULL;
    e = GF_OK;
    goto done;
failed:
    e = gf__native_fail(&gf__nvrtc_codes, (int)r, call);
done:
    if (prog) (void)GF__NVRTC_CALL(DestroyProgram, (&prog));
    gf__free(out);
    gf__free(log);
    gf__free(buf);
    gf__free((void *)opts);
    return e;
}

/* The architecture for a device of compute capability cc (90: 9.0): its own, or the newest
   this NVRTC knows if the device is newer (then PTX, which JITs on newer GPUs). */
static int gf__nvrtc_arch(int cc) {
    int archs[64], count = 0, i, best = 0;
    if (GF__NVRTC_CALL(GetNumSupportedArchs, (&count)) != NVRTC_SUCCESS || count <= 0 || count > 64 ||
        GF__NVRTC_CALL(GetSupportedArchs, (archs)) != NVRTC_SUCCESS)
        return cc;
    for (i = 0; i < count; i++) {
        if (archs[i] == cc) return cc;
        if (archs[i] < cc && archs[i] > best) best = archs[i];
    }
    return best ? best : cc;   /* an older device than NVRTC supports: NVRTC says so */
}

/* The compile slot: the core's text (its prelude, then the user's source) to this device's
   cubin (PTX where NVRTC does not know the device, which module_load then JITs). */
static gf_result gf__cuda_compile(gf_device *dev, const char *name, const char *text, const char *options,
                                  void **binary, size_t *size) {
    const gf__cuda_device *d = (const gf__cuda_device *)dev->native;
    char arch[32];
    gf_result e;
    int best;
    if ((e = gf__nvrtc_load()) != GF_OK) return e;
    best = gf__nvrtc_arch(d->cc);
    /* the device's own code when NVRTC knows it: a cached cubin loads at once, PTX would JIT */
    snprintf(arch, sizeof arch, "%s_%d", best == d->cc ? "sm" : "compute", best);
    return gf__cuda_nvrtc_build(arch, name, text, options, binary, size);
}
/* What compile made: a cubin (an ELF image) or PTX (text). */
static gf_result gf__cuda_module_load_compiled(gf_module *mod, const void *binary, size_t size) {
    gf_module_desc d;
    memset(&d, 0, sizeof d);
    if (size >= 4 && !memcmp(binary, "\177ELF", 4)) { d.cubin = binary; d.cubin_size = size; }
    else d.ptx = (const char *)binary;
    return gf__cuda_module_load(mod, &d);
}

/* What a cached binary depends on beyond the text and options. */
static void gf__cuda_compiler_id(gf_device *dev, char *out, size_t cap) {
    const gf__cuda_device *d = (const gf__cuda_device *)dev->native;
    gf_result e;
    gf__quiet++;   /* a missing NVRTC is compile's to report */
    e = gf__nvrtc_load();
    gf__quiet--;
    snprintf(out, cap, "CUDA %s, compute capability %d.%d, driver %d.%d, NVRTC %d.%d", dev->info.name, d->cc / 10, d->cc % 10,
             gf__cuda_driver_version / 1000, gf__cuda_driver_version % 1000 / 10,
             e == GF_OK ? gf__nvrtc_version / 1000 : 0, e == GF_OK ? gf__nvrtc_version % 1000 / 10 : 0);
}
#endif /* GPUFLOW_NO_NVRTC */

/* ---- launches and graphs ---------------------------------------------------------------- */
/* A native graph's CUDA half, in g->native_exec. cuGraphExec*SetParams names a node of the
   exec by its node in the CUgraph the exec was instantiated from (which must still hold it),
   also after cuGraphExecUpdate; so that graph, source, lives as long as the exec, and the
   core keeps each launch's node in it (gf__graph_launch_node, from captured_node). g->native_graph describes what the exec
   runs (a launch inside a capture embeds a copy of it): source itself, until gf_graph_update
   makes it a copy of the other graph's, where the launches' nodes are copy_nodes. */
typedef struct gf__cuda_graph {
    CUgraphExec exec;
    CUgraph source;
    CUgraphNode *copy_nodes; int copy_count;
} gf__cuda_graph;
#define GF__CUGRAPH(g) ((gf__cuda_graph *)(g)->native_exec)

/* Launch i's node in source, and in native_graph; NULL where it is not known. */
static CUgraphNode gf__cuda_exec_node(const gf_graph *g, int i) {
    return (CUgraphNode)gf__graph_launch_node(g, i);
}
static CUgraphNode gf__cuda_desc_node(const gf_graph *g, int i) {
    const gf__cuda_graph *cg = GF__CUGRAPH(g);
    if ((CUgraph)g->native_graph == cg->source) return gf__cuda_exec_node(g, i);
    return i < cg->copy_count ? cg->copy_nodes[i] : NULL;
}

/* captured_node: the node a launch just added to the capture of s: right after the launch, the
   capture's dependencies are that node alone. NULL where the driver cannot say (no
   cuStreamGetCaptureInfo_v3 before CUDA 12.3, or the question failed: a warning says so). */
static void *gf__cuda_captured_node(gf_stream *s, gf_kernel *k) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph capturing = NULL;
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t ndeps = 0;
    CUresult r;
    if (!gf__cu.StreamGetCaptureInfo) return NULL;
    r = GF__CUDA_CALL(StreamGetCaptureInfo, (GF__CUSTREAM(s), &status, &id, &capturing, &deps, &edges, &ndeps));
    if (r == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_ACTIVE && ndeps == 1) return deps[0];
    gf__notice(GF_LOG_WARNING, "CUDA: which graph node the launch of kernel '%s' captured on stream '%s' became is unknown "
               "(cuStreamGetCaptureInfo: %s (%d), status %d, %d dependencies): gf_graph_set_kernel_args will refuse it",
               k->name, s->label, gf__cuda_error_name((int)r), (int)r, (int)status, (int)ndeps);
    return NULL;
}

/* The hot path: one context check, the parameter table on the stack, one driver call.
   kernelParams[i] points at the argument's bytes; for a buffer, at its CUdeviceptr. */
static gf_result gf__cuda_launch(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims,
                                 const gf_arg *args, int count) {
    void *stack[GF__STACK_ARGS];
    void **params;
    CUresult r;
    GPUFLOW_ASSERT(count >= 0 && (count == 0 || args != NULL));   /* gf_launch validated them */
    GF__CUDA_ENTER(s->dev);
    if (!(params = gf__kernel_params(args, count, stack))) return GF_ERROR_OUT_OF_MEMORY;
    r = GF__CUDA_CALL(LaunchKernel, ((CUfunction)k->native, dims->grid[0], dims->grid[1], dims->grid[2],
                                     dims->block[0], dims->block[1], dims->block[2], (unsigned int)dims->shared_bytes,
                                     GF__CUSTREAM(s), count ? params : NULL, NULL));
    if (params != stack) gf__free(params);
    if (r != CUDA_SUCCESS) return gf__cuda_fail(r, "cuLaunchKernel");
    return GF_OK;
}

static gf_result gf__cuda_capture_begin(gf_stream *s, gf_capture_mode mode) {
    CUstreamCaptureMode m = mode == GF_CAPTURE_THREAD_LOCAL ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                          : mode == GF_CAPTURE_RELAXED      ? CU_STREAM_CAPTURE_MODE_RELAXED
                                                            : CU_STREAM_CAPTURE_MODE_GLOBAL;
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(StreamBeginCapture, (GF__CUSTREAM(s), m));
    return GF_OK;
}

/* Ends the capture whatever happens: on failure the partial graph is destroyed and the
   stream is out of capture mode, usable again. */
static gf_result gf__cuda_capture_end(gf_stream *s, gf_graph *g) {
    gf__cuda_graph *cg;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    size_t nodes = 0;
    const char *call;
    CUresult r;
    GF__CUDA_ENTER(s->dev);
    r = GF__CUDA_CALL(StreamEndCapture, (GF__CUSTREAM(s), &graph));
    if (r != CUDA_SUCCESS) {
        /* A failed end leaves no capture behind (the driver's own failures end it): past the
           fault seam, the real end runs too, and what it made is thrown away. */
        CUgraph left = NULL;
        if (gf__cu.StreamEndCapture(GF__CUSTREAM(s), &left) == CUDA_SUCCESS && left) (void)gf__cu.GraphDestroy(left);
        if (graph) (void)GF__CUDA_CALL(GraphDestroy, (graph));
        return gf__native_capture_broken(&gf__cuda_codes, (int)r, "cuStreamEndCapture");
    }
    call = "cuGraphGetNodes";
    r = GF__CUDA_CALL(GraphGetNodes, (graph, NULL, &nodes));
    if (r == CUDA_SUCCESS) { call = "cuGraphInstantiateWithFlags"; r = GF__CUDA_CALL(GraphInstantiateWithFlags, (&exec, graph, 0)); }
    if (r != CUDA_SUCCESS) {
        (void)GF__CUDA_CALL(GraphDestroy, (graph));
        return gf__cuda_fail(r, call);
    }
    if (!(cg = (gf__cuda_graph *)gf__calloc(sizeof *cg))) {
        (void)GF__CUDA_CALL(GraphExecDestroy, (exec));
        (void)GF__CUDA_CALL(GraphDestroy, (graph));
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory for a graph");
    }
    cg->exec = exec;
    cg->source = graph;
    g->by_driver = 1;
    g->native_graph = graph;
    g->native_exec = cg;
    g->nodes = (int)nodes;
    return GF_OK;
}

/* Where a native capture on cs stands: the graph being captured and the nodes the next one
   follows (valid until the next call on cs). s names it in the error. */
typedef struct gf__cuda_capture_at {
    CUgraph graph;
    const CUgraphNode *deps; const CUgraphEdgeData *edges; size_t count;
} gf__cuda_capture_at;
static gf_result gf__cuda_capture_where(gf_stream *s, CUstream cs, gf__cuda_capture_at *at) {
    CUstreamCaptureStatus status;
    cuuint64_t id;
    memset(at, 0, sizeof *at);
    GF__CUDA_CHECK(StreamGetCaptureInfo, (cs, &status, &id, &at->graph, &at->deps, &at->edges, &at->count));
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return gf__fail(GF_ERROR_CAPTURE, "cuStreamGetCaptureInfo: the capture of stream '%s' is %s", s->label,
                        status == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? "invalidated" : "not active");
    return GF_OK;
}

/* CUDA refuses cuGraphLaunch on a capturing stream. Inside a capture the graph goes in as a
   child graph node (a copy of g's CUgraph) after the stream's current capture dependencies,
   and becomes the stream's one dependency, as cuStreamGetCaptureInfo documents. */
static gf_result gf__cuda_graph_add_child(gf_graph *g, gf_stream *s) {
    CUstream cs = GF__CUSTREAM(s);
    gf__cuda_capture_at at;
    CUgraphNode node;
    gf_result r;
    if (!gf__cu.StreamGetCaptureInfo || !gf__cu.StreamUpdateCaptureDependencies)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: launching a graph inside a capture needs a CUDA 12.3+ driver");
    if ((r = gf__cuda_capture_where(s, cs, &at)) != GF_OK) return r;
    GF__CUDA_CHECK(GraphAddChildGraphNode, (&node, at.graph, at.deps, at.count, (CUgraph)g->native_graph));
    GF__CUDA_CHECK(StreamUpdateCaptureDependencies, (cs, &node, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    return GF_OK;
}

/* ---- graphs that decide: conditional nodes ---- */
/* A WHILE or IF node in the capture, its handle set from the int by gpuflow's kernel (before
   the node, and for a while at the end of each iteration of the body); the body is captured
   into the node's graph from a stream of gpuflow's own, which stands in for s (s->native)
   until the end: so every call on s, and every stream that forks from it, lands in the body. */
/* The PTX of: cudaGraphSetConditional(handle, (*flag == value) ^ negate), what nvcc -ptx
   -arch=compute_75 makes of it (the test != value is == value negated; see gf__cond_test). */
static const char gf__cuda_cond_ptx[] =
    ".version 8.3\n.target sm_75\n.address_size 64\n"
    ".extern .func cudaGraphSetConditional\n(\n\t.param .b64 cudaGraphSetConditional_param_0,\n\t.param .b32 cudaGraphSetConditional_param_1\n)\n;\n"
    ".visible .entry gf__set_conditional(\n\t.param .u64 gf__set_conditional_param_0,\n\t.param .u64 gf__set_conditional_param_1,\n"
    "\t.param .u32 gf__set_conditional_param_2,\n\t.param .u32 gf__set_conditional_param_3\n)\n{\n"
    "\t.reg .pred %p<2>;\n\t.reg .b32 %r<6>;\n\t.reg .b64 %rd<4>;\n"
    "\tld.param.u64 %rd1, [gf__set_conditional_param_0];\n\tld.param.u64 %rd2, [gf__set_conditional_param_1];\n"
    "\tld.param.u32 %r3, [gf__set_conditional_param_2];\n\tld.param.u32 %r4, [gf__set_conditional_param_3];\n"
    "\tcvta.to.global.u64 %rd3, %rd2;\n\tld.global.u32 %r1, [%rd3];\n\tsetp.eq.s32 %p1, %r1, %r3;\n\tselp.u32 %r2, 1, 0, %p1;\n"
    "\txor.b32 %r5, %r2, %r4;\n"
    "\t{\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd1;\n\t.param .b32 param1;\n\tst.param.b32 [param1+0], %r5;\n"
    "\tcall.uni cudaGraphSetConditional, (param0, param1);\n\t}\n\tret;\n}\n";
typedef struct gf__cuda_cond {
    CUstream outer;                   /* what s enqueued on before this body */
    CUgraphConditionalHandle handle;
    int what;                         /* 0 while, 1 if */
    CUdeviceptr flag;
    gf__cond_test test;
} gf__cuda_cond;
typedef struct gf__cuda_conds { gf__cuda_cond at[GF_COND_DEPTH]; int n; } gf__cuda_conds;

static gf_result gf__cuda_cond_set(gf__cuda_device *d, CUstream on, CUgraphConditionalHandle h, CUdeviceptr flag, gf__cond_test test) {
    unsigned value = (unsigned)test.value, negate = test.equal ? 0u : 1u;
    void *params[4];
    params[0] = &h;
    params[1] = &flag;
    params[2] = &value;
    params[3] = &negate;
    GF__CUDA_CHECK(LaunchKernel, (d->cond_set, 1, 1, 1, 1, 1, 1, 0, on, params, NULL));
    return GF_OK;
}
static gf_result gf__cuda_cond_node(gf_stream *s, int what, gf_buffer *buf, size_t offset, gf__cond_test test);
/* GF_ERROR_NOT_SUPPORTED only when nothing was touched (a driver without conditional nodes: the
   core then emulates them); a refusal once the capture holds part of the node is a capture's
   failure, and the core discards it. */
static gf_result gf__cuda_cond_begin(gf_stream *s, int what, gf_buffer *buf, size_t offset, gf__cond_test test) {
    char why[sizeof gf__error_text];
    gf_result r;
    if (!gf__cu.GraphConditionalHandleCreate || !gf__cu.GraphAddNode || !gf__cu.StreamBeginCaptureToGraph || !gf__cu.StreamGetCaptureInfo)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "CUDA: loops and branches in a graph need a CUDA 12.3+ driver (conditional nodes)");
    if ((r = gf__cuda_cond_node(s, what, buf, offset, test)) != GF_ERROR_NOT_SUPPORTED) return r;
    memcpy(why, gf__error_text, sizeof why);
    return gf__fail(GF_ERROR_CAPTURE, "CUDA: a loop's or branch's node was refused half made (%s)", why);
}
static gf_result gf__cuda_cond_node(gf_stream *s, int what, gf_buffer *buf, size_t offset, gf__cond_test test) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    gf__cuda_conds *conds = (gf__cuda_conds *)s->cond_native;
    CUstream cs = GF__CUSTREAM(s), body_stream = NULL;
    gf__cuda_capture_at at;
    gf_result why;
    CUgraphConditionalHandle h;
    CUgraphNodeParams np;
    CUgraphNode node;
    CUdeviceptr flag = (CUdeviceptr)buf->native + (CUdeviceptr)offset;
    CUresult r = CUDA_SUCCESS;
    GF__CUDA_ENTER(s->dev);
    gf__spin_lock(&d->cond_lock);
    if (!d->cond_module && (r = GF__CUDA_CALL(ModuleLoadDataEx, (&d->cond_module, gf__cuda_cond_ptx, 0, NULL, NULL))) == CUDA_SUCCESS &&
        (r = GF__CUDA_CALL(ModuleGetFunction, (&d->cond_set, d->cond_module, "gf__set_conditional"))) != CUDA_SUCCESS) {
        (void)GF__CUDA_CALL(ModuleUnload, (d->cond_module));
        d->cond_module = NULL;
    }
    gf__spin_unlock(&d->cond_lock);
    if (r != CUDA_SUCCESS) return gf__cuda_fail(r, "cuModuleLoadDataEx (gpuflow's conditional kernel)");
    if (!conds && !(conds = (gf__cuda_conds *)gf__calloc(sizeof *conds))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory");
    s->cond_native = conds;
    if (conds->n == GF_COND_DEPTH) return gf__fail(GF_ERROR_CAPTURE, "CUDA: more than %d loops and branches nested", GF_COND_DEPTH);
    if ((why = gf__cuda_capture_where(s, cs, &at)) != GF_OK) return why;
    GF__CUDA_CHECK(GraphConditionalHandleCreate, (&h, at.graph, d->ctx, 0, 0));
    if ((why = gf__cuda_cond_set(d, cs, h, flag, test)) != GF_OK) return why;   /* the handle's value before the node */
    if ((why = gf__cuda_capture_where(s, cs, &at)) != GF_OK) return why;   /* now after that kernel */
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = h;
    np.conditional.type = what == 0 ? CU_GRAPH_COND_TYPE_WHILE : CU_GRAPH_COND_TYPE_IF;
    np.conditional.size = 1;
    np.conditional.ctx = d->ctx;
    GF__CUDA_CHECK(GraphAddNode, (&node, at.graph, at.deps, at.edges, at.count, &np));
    GF__CUDA_CHECK(StreamUpdateCaptureDependencies, (cs, &node, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    GF__CUDA_CHECK(StreamCreateWithPriority, (&body_stream, CU_STREAM_NON_BLOCKING, 0));
    if ((r = GF__CUDA_CALL(StreamBeginCaptureToGraph, (body_stream, np.conditional.phGraph_out[0], NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED))) != CUDA_SUCCESS) {
        (void)GF__CUDA_CALL(StreamDestroy, (body_stream));
        return gf__cuda_fail(r, "cuStreamBeginCaptureToGraph");
    }
    conds->at[conds->n].outer = cs;
    conds->at[conds->n].handle = h;
    conds->at[conds->n].what = what;
    conds->at[conds->n].flag = flag;
    conds->at[conds->n].test = test;
    conds->n++;
    s->native = body_stream;   /* s's work goes into the body now */
    return GF_OK;
}
/* The innermost body ends: a while sets its handle again last (the next iteration's test),
   the body's capture ends into the node's graph, s enqueues where it did before. */
static gf_result gf__cuda_cond_end(gf_stream *s) {
    gf__cuda_device *d = (gf__cuda_device *)s->dev->native;
    gf__cuda_conds *conds = (gf__cuda_conds *)s->cond_native;
    gf__cuda_cond *c;
    CUstream body_stream = GF__CUSTREAM(s);
    CUgraph body = NULL;
    gf_result set = GF_OK;
    CUresult r;
    GPUFLOW_ASSERT(conds && conds->n > 0);   /* the core matched the end with its begin */
    GF__CUDA_ENTER(s->dev);
    c = &conds->at[conds->n - 1];
    if (c->what == 0) set = gf__cuda_cond_set(d, body_stream, c->handle, c->flag, c->test);
    r = GF__CUDA_CALL(StreamEndCapture, (body_stream, &body));   /* the node owns the body graph */
    s->native = c->outer;
    conds->n--;
    (void)GF__CUDA_CALL(StreamDestroy, (body_stream));
    if (set != GF_OK) return set;
    if (r != CUDA_SUCCESS) return gf__native_capture_broken(&gf__cuda_codes, (int)r, "cuStreamEndCapture (a loop's or branch's body)");
    return GF_OK;
}
static void gf__cuda_cond_abort(gf_stream *s) {
    gf__cuda_conds *conds = (gf__cuda_conds *)s->cond_native;
    if (gf__cuda_enter(s->dev) != GF_OK || !conds) return;
    while (conds->n > 0) {
        CUgraph body = NULL;
        CUstream body_stream = GF__CUSTREAM(s);
        (void)gf__cu.StreamEndCapture(body_stream, &body);   /* whatever the driver says: the capture is being thrown away */
        s->native = conds->at[--conds->n].outer;
        (void)gf__cu.StreamDestroy(body_stream);
    }
}

static gf_result gf__cuda_graph_launch(gf_graph *g, gf_stream *s) {
    GPUFLOW_ASSERT(g->by_driver);   /* the core replays recorded graphs itself */
    GF__CUDA_ENTER(s->dev);
    if (gf__stream_capturing(s)) return gf__cuda_graph_add_child(g, s);
    GF__CUDA_CHECK(GraphLaunch, (GF__CUGRAPH(g)->exec, GF__CUSTREAM(s)));
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

/* The target keeps its exec and source; the exec takes from's parameters. A copy of from's
   CUgraph becomes the target's description of what it runs, with from's launch nodes found
   in the copy (the update pairs the graphs' nodes in the order they were made, which two
   captures of the same work make alike: launch i with launch i). All of it is made first: a
   refused update (the driver then changes nothing) or a failure leaves the target as it was. */
static gf_result gf__cuda_graph_update(gf_graph *target, gf_graph *from) {
    gf__cuda_graph *t = GF__CUGRAPH(target);
    CUgraphExecUpdateResultInfo info;
    CUgraph copy = NULL;
    CUgraphNode *nodes = NULL;
    int i, n = gf__graph_launch_count(from);
    CUresult r;
    GPUFLOW_ASSERT(target->by_driver && from->by_driver);
    GF__CUDA_ENTER(target->dev);
    if (n && !(nodes = (CUgraphNode *)gf__malloc(sizeof *nodes * (size_t)n)))
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_update: out of host memory");
    if ((r = GF__CUDA_CALL(GraphClone, (&copy, (CUgraph)from->native_graph))) != CUDA_SUCCESS) {
        gf__free(nodes);
        return gf__cuda_fail(r, "cuGraphClone");
    }
    for (i = 0; i < n; i++) {   /* a node from's capture did not name stays unknown */
        CUgraphNode in_from = gf__cuda_desc_node(from, i);
        nodes[i] = NULL;
        if (in_from && (r = GF__CUDA_CALL(GraphNodeFindInClone, (&nodes[i], in_from, copy))) != CUDA_SUCCESS) {
            gf__free(nodes);
            (void)GF__CUDA_CALL(GraphDestroy, (copy));
            return gf__cuda_fail(r, "cuGraphNodeFindInClone");
        }
    }
    memset(&info, 0, sizeof info);
    r = GF__CUDA_CALL(GraphExecUpdate, (t->exec, copy, &info));
    if (r != CUDA_SUCCESS) {
        gf__free(nodes);
        (void)GF__CUDA_CALL(GraphDestroy, (copy));
        if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
            return gf__native_update_refused("cuGraphExecUpdate", gf__cuda_error_name((int)r), (int)r,
                                             gf__cuda_update_why(info.result), (int)info.result);
        return gf__cuda_fail(r, "cuGraphExecUpdate");
    }
    if ((CUgraph)target->native_graph != t->source) (void)GF__CUDA_CALL(GraphDestroy, ((CUgraph)target->native_graph));
    gf__free(t->copy_nodes);
    target->native_graph = copy;
    t->copy_nodes = nodes;
    t->copy_count = n;
    return GF_OK;
}

/* New arguments for launch i: the node that describes it first, then the exec's, each with
   the launch's function, dimensions and shared memory as the description has them
   (cuGraphKernelNodeGetParams) and the new parameter table; the driver copies the values
   before returning. If the exec refuses, the description goes back to what the exec still
   runs (the core's copy of the launch's arguments). */
static gf_result gf__cuda_graph_set_kernel_args(gf_graph *g, int i, gf_kernel *k, const gf_arg *args, int count) {
    CUgraphNode node = gf__cuda_exec_node(g, i), desc = gf__cuda_desc_node(g, i);
    CUDA_KERNEL_NODE_PARAMS p;
    void *stack[GF__STACK_ARGS];
    void **params;
    CUresult r;
    if (!node || !desc)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_graph_set_kernel_args: which graph node launch %d (kernel '%s') became is "
                        "not known: cuStreamGetCaptureInfo (CUDA 12.3+ drivers) did not say when it was captured", i, k->name);
    GF__CUDA_ENTER(g->dev);
    memset(&p, 0, sizeof p);
    GF__CUDA_CHECK(GraphKernelNodeGetParams, (desc, &p));
    if (gf__following_reload) { p.func = (CUfunction)k->native; p.kern = NULL; }   /* a hot reload: the launch takes the kernel's new code */
    if (!(params = gf__kernel_params(args, count, stack))) return GF_ERROR_OUT_OF_MEMORY;
    p.kernelParams = count ? params : NULL;
    p.extra = NULL;
    r = GF__CUDA_CALL(GraphKernelNodeSetParams, (desc, &p));
    if (r != CUDA_SUCCESS) {
        if (params != stack) gf__free(params);
        return gf__cuda_fail(r, "cuGraphKernelNodeSetParams");
    }
    r = GF__CUDA_CALL(GraphExecKernelNodeSetParams, (GF__CUGRAPH(g)->exec, node, &p));
    if (params != stack) gf__free(params);   /* only now: p.kernelParams points at it until the exec took it */
    if (r != CUDA_SUCCESS) {
        const gf_arg *now;
        int now_count;
        gf__graph_launch_args(g, i, &now, &now_count, NULL);
        if ((params = gf__kernel_params(now, now_count, stack)) != NULL) {
            p.kernelParams = now_count ? params : NULL;
            (void)GF__CUDA_CALL(GraphKernelNodeSetParams, (desc, &p));
            if (params != stack) gf__free(params);
        }
        return gf__cuda_fail(r, "cuGraphExecKernelNodeSetParams");
    }
    return GF_OK;
}

/* Graphviz of what the graph runs, as the driver describes it: its nodes (kernels with their
   launch parameters, copies, fills, child graphs) and their edges. A path that cannot be
   written is refused as the core refuses it for recorded graphs. */
static gf_result gf__cuda_graph_write_dot(gf_graph *g, const char *path) {
    FILE *f;
    if (!gf__cu.GraphDebugDotPrint) return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_graph_write_dot: the CUDA driver lacks cuGraphDebugDotPrint");
    if (!(f = gf__fopen(path, "w"))) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_write_dot: cannot open '%s' for writing", path);
    fclose(f);
    GF__CUDA_ENTER(g->dev);
    GF__CUDA_CHECK(GraphDebugDotPrint, ((CUgraph)g->native_graph, path, CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS |
                                        CU_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS | CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS));
    return GF_OK;
}

static void gf__cuda_graph_destroy(gf_graph *g) {
    gf__cuda_graph *cg = GF__CUGRAPH(g);
    if (cg && gf__cuda_enter(g->dev) == GF_OK) {
        (void)GF__CUDA_CALL(GraphExecDestroy, (cg->exec));
        if ((CUgraph)g->native_graph != cg->source) (void)GF__CUDA_CALL(GraphDestroy, ((CUgraph)g->native_graph));
        (void)GF__CUDA_CALL(GraphDestroy, (cg->source));
    }
    if (cg) {
        gf__free(cg->copy_nodes);
        gf__free(cg);
    }
    g->native_exec = NULL;
    g->native_graph = NULL;
}

#ifdef GPUFLOW_NVTX
/* gf_range_push / gf_range_pop: an NVTX range of the calling thread (NVTX nests ranges per
   thread, not per stream: push and pop a stream's range on one thread). */
static void gf__cuda_range(gf_stream *s, const char *name) {
    (void)s;
    if (name) nvtxRangePushA(name);
    else nvtxRangePop();
}
#endif

/* ---- interop: external memory and semaphores ---------------------------------------------- */
/* An import (cuImportExternalMemory, or a shareable handle mapped into a range of our own) or
   an exportable allocation (cuMemCreate with a POSIX fd handle type, mapped the same way):
   what buffer_free undoes. buf->native is the mapping's start plus the import's offset. */
typedef struct gf__cuda_external {
    CUexternalMemory ext;             /* cuImportExternalMemory's; NULL for a mapped handle */
    CUmemGenericAllocationHandle handle;   /* a mapped handle (exportable or SHAREABLE_FD); 0 else */
    CUdeviceptr base; size_t bytes;   /* the mapping (or the external memory's buffer) */
} gf__cuda_external;

static unsigned gf__cuda_external_types(gf_device *dev, int use) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    int vmm = 0, posix = 0;
    if (!gf__cu.ImportExternalMemory || !gf__cu.ImportExternalSemaphore) return 0;
    if (gf__cu.MemCreate && gf__cuda_enter(dev) == GF_OK) {
        (void)GF__CUDA_CALL(DeviceGetAttribute, (&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d->dev));
        (void)GF__CUDA_CALL(DeviceGetAttribute, (&posix, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, d->dev));
    }
    switch (use) {
#if defined(_WIN32)
    case GF__EXT_IMPORT_MEMORY:
        return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32) | GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32_KMT) | GF__EXT_BIT(GF_EXTERNAL_D3D12_HEAP) |
               GF__EXT_BIT(GF_EXTERNAL_D3D12_RESOURCE) | GF__EXT_BIT(GF_EXTERNAL_D3D11_RESOURCE);
    case GF__EXT_IMPORT_SEMAPHORE:
        return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32) | GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32_KMT) | GF__EXT_BIT(GF_EXTERNAL_D3D12_FENCE);
#else
    case GF__EXT_IMPORT_MEMORY: return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_FD) | (vmm ? GF__EXT_BIT(GF_EXTERNAL_SHAREABLE_FD) : 0u);
    case GF__EXT_EXPORT_MEMORY: return vmm && posix ? GF__EXT_BIT(GF_EXTERNAL_SHAREABLE_FD) : 0u;
    case GF__EXT_IMPORT_SEMAPHORE: return GF__EXT_BIT(GF_EXTERNAL_OPAQUE_FD);
#endif
    default: return 0;   /* CUDA makes no semaphore another API can import */
    }
}

/* The device's allocation properties for memory another process may map (POSIX fd). */
static CUmemAllocationProp gf__cuda_vmm_prop(gf_device *dev) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ((gf__cuda_device *)dev->native)->dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}
/* Maps handle (bytes) at a fresh range of this context, readable and writable by the device. */
static gf_result gf__cuda_map_handle(gf_device *dev, gf__cuda_external *x) {
    CUmemAccessDesc access = gf__cuda_access(((gf__cuda_device *)dev->native)->dev);
    CUresult r;
    GF__CUDA_CHECK(MemAddressReserve, (&x->base, x->bytes, 0, 0, 0));
    if ((r = GF__CUDA_CALL(MemMap, (x->base, x->bytes, 0, x->handle, 0))) != CUDA_SUCCESS) {
        (void)gf__cu.MemAddressFree(x->base, x->bytes);
        return gf__cuda_fail(r, "cuMemMap");
    }
    if ((r = GF__CUDA_CALL(MemSetAccess, (x->base, x->bytes, &access, 1))) != CUDA_SUCCESS) {
        (void)gf__cu.MemUnmap(x->base, x->bytes);
        (void)gf__cu.MemAddressFree(x->base, x->bytes);
        return gf__cuda_fail(r, "cuMemSetAccess");
    }
    return GF_OK;
}

/* gf_buffer_desc.exportable: cuMemCreate (size rounded up to the granularity) mapped here. */
static gf_result gf__cuda_alloc_exportable(gf_buffer *buf) {
    CUmemAllocationProp prop = gf__cuda_vmm_prop(buf->dev);
    gf__cuda_external *x;
    size_t grain = 0;
    gf_result r;
    CUresult cr;
    GF__CUDA_CHECK(MemGetAllocationGranularity, (&grain, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (!(x = (gf__cuda_external *)gf__calloc(sizeof *x))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory");
    x->bytes = grain ? (buf->size + grain - 1) / grain * grain : buf->size;
    if ((cr = GF__CUDA_CALL(MemCreate, (&x->handle, x->bytes, &prop, 0))) != CUDA_SUCCESS) { gf__free(x); return gf__cuda_fail(cr, "cuMemCreate"); }
    if ((r = gf__cuda_map_handle(buf->dev, x)) != GF_OK) {
        (void)gf__cu.MemRelease(x->handle);
        gf__free(x);
        return r;
    }
    buf->external = x;
    buf->native = (uint64_t)x->base;
    return GF_OK;
}

static void gf__cuda_external_free(gf_buffer *buf) {
    gf__cuda_external *x = (gf__cuda_external *)buf->external;
    if (gf__cuda_enter(buf->dev) == GF_OK) {
        if (x->ext) {
            GF__CUDA_RELAXED_VOID(MemFree, (x->base));   /* the mapped buffer first, then the memory */
            (void)GF__CUDA_CALL(DestroyExternalMemory, (x->ext));
        } else {
            (void)GF__CUDA_CALL(MemUnmap, (x->base, x->bytes));
            (void)GF__CUDA_CALL(MemAddressFree, (x->base, x->bytes));
            (void)GF__CUDA_CALL(MemRelease, (x->handle));
        }
    }
    gf__free(x);
    buf->external = NULL;
}

static gf_result gf__cuda_buffer_import(gf_buffer *buf, const gf_external_memory_desc *d) {
    gf__cuda_external *x;
    CUresult r;
    GF__CUDA_ENTER(buf->dev);
    if (!(x = (gf__cuda_external *)gf__calloc(sizeof *x))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "CUDA: out of host memory");
    if (d->type == GF_EXTERNAL_SHAREABLE_FD) {   /* another process's cuMemCreate allocation */
#if !defined(_WIN32)
        x->bytes = (size_t)d->size;
        if ((r = GF__CUDA_CALL(MemImportFromShareableHandle, (&x->handle, (void *)(intptr_t)d->fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))) != CUDA_SUCCESS) {
            gf__free(x);
            return gf__cuda_fail(r, "cuMemImportFromShareableHandle");
        }
        gf_result why;
        if ((why = gf__cuda_map_handle(buf->dev, x)) != GF_OK) {
            (void)gf__cu.MemRelease(x->handle);
            gf__free(x);
            return why;
        }
#endif
    } else {
        CUDA_EXTERNAL_MEMORY_HANDLE_DESC hd;
        CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd;
        memset(&hd, 0, sizeof hd);
        memset(&bd, 0, sizeof bd);
        hd.size = d->size;
        hd.flags = (d->flags & GF_EXTERNAL_DEDICATED) ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
        switch (d->type) {
#if defined(_WIN32)
        case GF_EXTERNAL_OPAQUE_WIN32: hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32; break;
        case GF_EXTERNAL_OPAQUE_WIN32_KMT: hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_KMT; break;
        case GF_EXTERNAL_D3D12_HEAP: hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP; break;
        case GF_EXTERNAL_D3D12_RESOURCE: hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE; break;
        default: hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE; break;
        }
        hd.handle.win32.handle = d->win32_handle;
        hd.handle.win32.name = d->win32_name;
#else
        default: hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD; break;
        }
        /* CUDA owns an fd it imports: it gets a duplicate, so the caller's stays the caller's */
        if ((hd.handle.fd = gf__fd_dup(d->fd)) < 0) { gf__free(x); return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_import: dup of fd %d failed", d->fd); }
#endif
        if ((r = GF__CUDA_CALL(ImportExternalMemory, (&x->ext, &hd))) != CUDA_SUCCESS) {
#if !defined(_WIN32)
            close(hd.handle.fd);   /* CUDA took it only on success */
#endif
            gf__free(x);
            return gf__cuda_fail(r, "cuImportExternalMemory");
        }
        bd.offset = 0;
        bd.size = d->size;
        x->bytes = (size_t)d->size;
        if ((r = GF__CUDA_CALL(ExternalMemoryGetMappedBuffer, (&x->base, x->ext, &bd))) != CUDA_SUCCESS) {
            (void)gf__cu.DestroyExternalMemory(x->ext);
            gf__free(x);
            return gf__cuda_fail(r, "cuExternalMemoryGetMappedBuffer");
        }
    }
    buf->external = x;
    buf->native = (uint64_t)(x->base + (CUdeviceptr)d->offset);
    return GF_OK;
}

static gf_result gf__cuda_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out) {
    gf__cuda_external *x = (gf__cuda_external *)buf->external;
    int fd = -1;
    (void)type;
    GF__CUDA_ENTER(buf->dev);
    if (!x || !x->handle) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_export: the buffer has no exportable memory");
    GF__CUDA_CHECK(MemExportToShareableHandle, (&fd, x->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    out->fd = fd;
    out->size = x->bytes;
    return GF_OK;
}

static gf_result gf__cuda_semaphore_create(gf_semaphore *sem) {
    (void)sem;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_create: CUDA makes no semaphore of its own; create one in Vulkan, "
                    "D3D12 or OpenCL and import it (gf_semaphore_import)");
}
static gf_result gf__cuda_semaphore_import(gf_semaphore *sem, const gf_semaphore_desc *d) {
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC hd;
    CUexternalSemaphore ext = NULL;
    CUresult r;
    GF__CUDA_ENTER(sem->dev);
    memset(&hd, 0, sizeof hd);
#if defined(_WIN32)
    if (d->type == GF_EXTERNAL_D3D12_FENCE) hd.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D12_FENCE;
    else if (d->type == GF_EXTERNAL_OPAQUE_WIN32_KMT) {
        if (d->timeline) return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_import: CUDA takes no timeline semaphore as a KMT handle");
        hd.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_KMT;
    } else hd.type = d->timeline ? CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32 : CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32;
    hd.handle.win32.handle = d->win32_handle;
    hd.handle.win32.name = d->win32_name;
#else
    hd.type = d->timeline ? CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD : CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
    if ((hd.handle.fd = gf__fd_dup(d->fd)) < 0)   /* CUDA owns what it imports: a duplicate */ return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_import: dup of fd %d failed", d->fd);
#endif
    if ((r = GF__CUDA_CALL(ImportExternalSemaphore, (&ext, &hd))) != CUDA_SUCCESS) {
#if !defined(_WIN32)
        close(hd.handle.fd);   /* CUDA took it only on success */
#endif
        return gf__cuda_fail(r, "cuImportExternalSemaphore");
    }
    sem->native = ext;
    return GF_OK;
}
static gf_result gf__cuda_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out) {
    (void)sem; (void)type; (void)out;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_export: CUDA exports no semaphore");
}
static void gf__cuda_semaphore_destroy(gf_semaphore *sem) {
    if (sem->native && gf__cuda_enter(sem->dev) == GF_OK) (void)GF__CUDA_CALL(DestroyExternalSemaphore, ((CUexternalSemaphore)sem->native));
}
static gf_result gf__cuda_semaphore_signal(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS p;
    CUexternalSemaphore ext = (CUexternalSemaphore)sem->native;
    memset(&p, 0, sizeof p);
    p.params.fence.value = value;   /* timelines and D3D12 fences; ignored for binary ones */
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(SignalExternalSemaphoresAsync, (&ext, &p, 1, GF__CUSTREAM(s)));
    return GF_OK;
}
static gf_result gf__cuda_semaphore_wait(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS p;
    CUexternalSemaphore ext = (CUexternalSemaphore)sem->native;
    memset(&p, 0, sizeof p);
    p.params.fence.value = value;
    GF__CUDA_ENTER(s->dev);
    GF__CUDA_CHECK(WaitExternalSemaphoresAsync, (&ext, &p, 1, GF__CUSTREAM(s)));
    return GF_OK;
}

/* ---- native handles --------------------------------------------------------------------- */
/* What gf_<object>_native gives: CUdeviceptr, CUstream, CUevent, CUfunction (CUmodule). */
static uint64_t gf__cuda_native_handle(gf__type type, void *obj) {
    switch (type) {
    case GF__T_STREAM: return (uint64_t)(uintptr_t)((gf_stream *)obj)->native;
    case GF__T_EVENT:  return (uint64_t)(uintptr_t)((gf_event *)obj)->native;
    case GF__T_KERNEL: return (uint64_t)(uintptr_t)((gf_kernel *)obj)->native;
    case GF__T_MODULE: return (uint64_t)(uintptr_t)((gf_module *)obj)->native;
    default:           return 0;
    }
}

#undef GF__CUDA_CHECK
#undef GF__CUDA_CHECK_RELAXED
#undef GF__CUDA_RELAXED
#undef GF__CUDA_RELAXED_VOID
#undef GF__CUDA_ENTER
#undef GF__CUSTREAM
#undef GF__CUEVENT

/* ---- the backend table ------------------------------------------------------------------ */
static void gf__cuda_fill_table(gf__backend *t) {
    (void)gf__cuda_check_signatures;   /* compile-time only; never called */
    t->kind = GF_BACKEND_CUDA;
    t->name = "cuda";
    t->load = gf__cuda_load;
    t->device_count = gf__cuda_device_count;
    t->device_open = gf__cuda_device_open;
    t->device_close = gf__cuda_device_close;
    t->memory_info = gf__cuda_memory_info;
    t->buffer_alloc = gf__cuda_buffer_alloc;
    t->buffer_free = gf__cuda_buffer_free;
    t->buffer_alloc_async = gf__cuda_buffer_alloc_async;   /* refuses where the device has no pools */
    t->buffer_free_async = gf__cuda_buffer_free_async;
    t->host_alloc = gf__cuda_host_alloc;
    t->host_free = gf__cuda_host_free;
    t->release_waits = 1;   /* cuModuleUnload, cuMemFreeHost (gf__cuda_free_plain for device memory) */
    t->stream_create = gf__cuda_stream_create;
    t->stream_destroy = gf__cuda_stream_destroy;
    t->stream_synchronize = gf__cuda_stream_synchronize;
    t->stream_query = gf__cuda_stream_query;
    t->copy = gf__cuda_copy;
    t->fill = gf__cuda_fill;
    t->prefetch = gf__cuda_prefetch;
    t->host_callback = gf__cuda_host_callback;
    t->event_create = gf__cuda_event_create;
    t->event_destroy = gf__cuda_event_destroy;
    t->event_record = gf__cuda_event_record;
    t->stream_wait_event = gf__cuda_stream_wait_event;
    t->event_synchronize = gf__cuda_event_synchronize;
    t->event_query = gf__cuda_event_query;
    t->event_elapsed_ms = gf__cuda_event_elapsed_ms;
    t->module_load = gf__cuda_module_load;
    t->module_unload = gf__cuda_module_unload;
    t->kernel_get = gf__cuda_kernel_get;
    t->launch = gf__cuda_launch;
    t->captured_node = gf__cuda_captured_node;
    t->capture_begin = gf__cuda_capture_begin;
    t->capture_end = gf__cuda_capture_end;
    t->graph_launch = gf__cuda_graph_launch;
    t->graph_update = gf__cuda_graph_update;
    t->graph_destroy = gf__cuda_graph_destroy;
#ifndef GPUFLOW_NO_NVRTC
    (void)gf__nvrtc_check_signatures;   /* compile-time only; never called */
    t->kernel_prelude = gf__kernel_prelude_cxx;
    t->compile = gf__cuda_compile;
    t->module_load_compiled = gf__cuda_module_load_compiled;
    t->compiler_id = gf__cuda_compiler_id;
#endif
    t->graph_set_kernel_args = gf__cuda_graph_set_kernel_args;
    t->cond_begin = gf__cuda_cond_begin;
    t->cond_end = gf__cuda_cond_end;
    t->cond_abort = gf__cuda_cond_abort;
    t->graph_write_dot = gf__cuda_graph_write_dot;
#ifdef GPUFLOW_NVTX
    t->range = gf__cuda_range;
#endif
    t->host_pinned = gf__cuda_host_pinned;   /* the core stages pageable copies */
    t->native_handle = gf__cuda_native_handle;
    t->device_native = gf__cuda_device_native;
    t->device_open_native = gf__cuda_device_open_native;
    t->stream_wrap = gf__cuda_stream_wrap;
    t->buffer_wrap = gf__cuda_buffer_wrap;
    t->fill_wide = gf__cuda_fill_wide;
    t->copy_2d = gf__cuda_copy_2d;
    t->trim = gf__cuda_trim;
    t->cached_bytes = gf__cuda_cached_bytes;
    t->peer_can_access = gf__cuda_peer_can_access;
    t->peer_enable = gf__cuda_peer_enable;
    t->copy_peer = gf__cuda_copy_peer;
    t->stream_wait_peer = gf__cuda_stream_wait_event;   /* cuStreamWaitEvent takes another context's event */
    t->external_types = gf__cuda_external_types;
    t->buffer_import = gf__cuda_buffer_import;
    t->buffer_export = gf__cuda_buffer_export;
    t->semaphore_create = gf__cuda_semaphore_create;
    t->semaphore_import = gf__cuda_semaphore_import;
    t->semaphore_export = gf__cuda_semaphore_export;
    t->semaphore_destroy = gf__cuda_semaphore_destroy;
    t->semaphore_signal = gf__cuda_semaphore_signal;
    t->semaphore_wait = gf__cuda_semaphore_wait;
}
static gf__backend gf__cuda_table;
static const gf__backend *gf__cuda_backend(void) { return gf__backend_once(&gf__cuda_table, gf__cuda_fill_table); }

#endif /* GPUFLOW_IMPLEMENTATION && GPUFLOW_CUDA */
