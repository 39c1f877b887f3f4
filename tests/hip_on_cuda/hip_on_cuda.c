/* hip_on_cuda.c -- a stand-in libamdhip64.so over NVIDIA's CUDA driver API, for testing
   gpuflow_hip.h on an NVIDIA GPU (there is no AMD GPU where gpuflow's GPU tests run).

   It exports exactly the hip* entry points that gpuflow_hip.h loads (its GF__HIP_API list;
   check_exports.sh compares the two) and nothing else. Each is defined against AMD's own
   hip/hip_runtime_api.h (__HIP_PLATFORM_AMD__), so the compiler holds every definition to
   the prototype gpuflow_hip.h was checked against: the ABI is the one gpuflow uses. Handles
   are the CUDA ones behind HIP's opaque types: hipStream_t = CUstream, hipEvent_t = CUevent,
   device pointers = CUdeviceptr, hipModule_t / hipFunction_t = CUmodule / CUfunction,
   hipGraph_t / hipGraphExec_t / hipGraphNode_t = CUgraph / CUgraphExec / CUgraphNode,
   hipMemPool_t = CUmemoryPool; every CUresult comes back as the hipError_t of the same
   meaning (hipGetErrorName names them).

   Modules: hipModuleLoadData hands its image to cuModuleLoadData, so a "code object" here is
   PTX text (NUL-terminated), a cubin or a fatbin. Tests built with GPUFLOW_TEST_HIP_ON_CUDA
   put their PTX in gf_module_desc.hip_code.

   hiprtc: as ROCm 5's libamdhip64 does, the stand-in exports gpuflow's hiprtc entry points too
   (its GF__HIPRTC_API list), over NVRTC (libnvrtc.so.13 or .12, loaded at the first program):
   hiprtcGetCode gives PTX, which is what hipModuleLoadData takes here. hipGetDeviceProperties
   names an NVIDIA device's architecture as gcnArchName "sm_XY", so gpuflow asks for
   --offload-arch=sm_XY, which becomes NVRTC's --gpu-architecture=compute_XY; any other
   --offload-arch (an AMD target) is dropped, and NVRTC compiles for the device current on the
   thread (the newest architecture NVRTC knows, for a newer device). -ffast-math becomes
   -use_fast_math; other options go to NVRTC as they are.

   HIP's current device per thread maps onto the CUDA context current on the thread: hipSetDevice
   makes the device's primary context current; a thread that calls anything else first gets
   device 0's, HIP's default.

   Variants, by define:
   - HOC_HIP_5_2 leaves out what HIP 5.2's runtime lacks of gpuflow's list: hipLaunchHostFunc
     (gpuflow then uses hipStreamAddCallback), hipStreamGetDevice (gf_stream_wrap then takes a
     stream's device on trust) and hipGraphDebugDotPrint (gf_graph_write_dot then writes the
     core's DOT).
   - HOC_NO_HIPRTC: the runtime without hiprtc (ROCm 6's shape); HOC_HIPRTC_ONLY: hiprtc
     alone, the libhiprtc.so beside it.
   - HOC_NO_PROPERTIES: without hipGetDeviceProperties (optional to gpuflow), so that gpuflow
     does not know the device's architecture and hiprtc compiles for the current device.

   Build (see README.md): cc -std=c99 -shared -fPIC -D__HIP_PLATFORM_AMD__ -isystem HIP_HEADERS
   -isystem CUDA_INCLUDE hip_on_cuda.c -o libamdhip64.so -L CUDA_STUBS -lcuda -ldl -pthread
   Needs CUDA 12.0 or newer headers (cuda.h, and nvrtc.h for the declarations of NVRTC). */
#ifndef __HIP_PLATFORM_AMD__
#  define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>
#include <cuda.h>
#include <nvrtc.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>   /* dup, close: an imported fd */
#include <string.h>

#if CUDA_VERSION < 12000
#  error "hip_on_cuda.c needs the headers of CUDA 12.0 or newer"
#endif

/* Newer than HIP 5.2's headers: declared as gpuflow_hip.h declares them. */
hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t *device);
hipError_t hipGraphDebugDotPrint(hipGraph_t graph, const char *path, unsigned int flags);

/* ---- initialization and the current device --------------------------------------------- */
static pthread_once_t hoc_once = PTHREAD_ONCE_INIT;
static CUresult hoc_init_result = CUDA_ERROR_NOT_INITIALIZED;
static void hoc_init_once(void) { hoc_init_result = cuInit(0); }
static CUresult hoc_init(void) {
    pthread_once(&hoc_once, hoc_init_once);
    return hoc_init_result;
}

#define HOC_MAX_DEVICES 64
static pthread_mutex_t hoc_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext hoc_primary[HOC_MAX_DEVICES];   /* retained once, kept for the process */

static CUresult hoc_use(int ordinal) {
    CUdevice dev;
    CUcontext ctx;
    CUresult r = hoc_init();
    if (r != CUDA_SUCCESS) return r;
    if (ordinal < 0 || ordinal >= HOC_MAX_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    if ((r = cuDeviceGet(&dev, ordinal)) != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&hoc_lock);
    if (!hoc_primary[ordinal]) r = cuDevicePrimaryCtxRetain(&hoc_primary[ordinal], dev);
    ctx = hoc_primary[ordinal];
    pthread_mutex_unlock(&hoc_lock);
    if (r != CUDA_SUCCESS) return r;
    return cuCtxSetCurrent(ctx);
}

/* The calling thread's context: the one current, or device 0's (HIP's default device). */
static CUresult hoc_ctx(void) {
    CUcontext c = NULL;
    CUresult r = hoc_init();
    if (r != CUDA_SUCCESS) return r;
    if ((r = cuCtxGetCurrent(&c)) != CUDA_SUCCESS) return r;
    return c ? CUDA_SUCCESS : hoc_use(0);
}

#ifndef HOC_HIPRTC_ONLY   /* the runtime: everything up to hiprtc */

/* ---- errors ---------------------------------------------------------------------------- */
/* X(CUresult, hipError_t) where both mean the same; each hipError_t once. */
#define HOC_ERRORS(X) \
    X(CUDA_SUCCESS, hipSuccess) \
    X(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue) \
    X(CUDA_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory) \
    X(CUDA_ERROR_NOT_INITIALIZED, hipErrorNotInitialized) \
    X(CUDA_ERROR_DEINITIALIZED, hipErrorDeinitialized) \
    X(CUDA_ERROR_NO_DEVICE, hipErrorNoDevice) \
    X(CUDA_ERROR_INVALID_DEVICE, hipErrorInvalidDevice) \
    X(CUDA_ERROR_INVALID_IMAGE, hipErrorInvalidImage) \
    X(CUDA_ERROR_INVALID_CONTEXT, hipErrorInvalidContext) \
    X(CUDA_ERROR_NO_BINARY_FOR_GPU, hipErrorNoBinaryForGpu) \
    X(CUDA_ERROR_INVALID_PTX, hipErrorInvalidKernelFile) \
    X(CUDA_ERROR_INVALID_SOURCE, hipErrorInvalidSource) \
    X(CUDA_ERROR_FILE_NOT_FOUND, hipErrorFileNotFound) \
    X(CUDA_ERROR_INVALID_HANDLE, hipErrorInvalidHandle) \
    X(CUDA_ERROR_ILLEGAL_STATE, hipErrorIllegalState) \
    X(CUDA_ERROR_NOT_FOUND, hipErrorNotFound) \
    X(CUDA_ERROR_NOT_READY, hipErrorNotReady) \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, hipErrorIllegalAddress) \
    X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, hipErrorLaunchOutOfResources) \
    X(CUDA_ERROR_LAUNCH_TIMEOUT, hipErrorLaunchTimeOut) \
    X(CUDA_ERROR_LAUNCH_FAILED, hipErrorLaunchFailure) \
    X(CUDA_ERROR_NOT_SUPPORTED, hipErrorNotSupported) \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, hipErrorStreamCaptureUnsupported) \
    X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, hipErrorStreamCaptureInvalidated) \
    X(CUDA_ERROR_STREAM_CAPTURE_MERGE, hipErrorStreamCaptureMerge) \
    X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, hipErrorStreamCaptureUnmatched) \
    X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, hipErrorStreamCaptureUnjoined) \
    X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, hipErrorStreamCaptureIsolation) \
    X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, hipErrorStreamCaptureImplicit) \
    X(CUDA_ERROR_CAPTURED_EVENT, hipErrorCapturedEvent) \
    X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, hipErrorStreamCaptureWrongThread) \
    X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, hipErrorGraphExecUpdateFailure) \
    X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, hipErrorPeerAccessAlreadyEnabled) \
    X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, hipErrorPeerAccessUnsupported) \
    X(CUDA_ERROR_UNKNOWN, hipErrorUnknown)

static hipError_t hoc_err(CUresult r) {
    switch (r) {
#define HOC_MAP(cu, hip) case cu: return hip;
    HOC_ERRORS(HOC_MAP)
#undef HOC_MAP
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return hipErrorInvalidKernelFile;
    default: return hipErrorUnknown;
    }
}

const char *hipGetErrorName(hipError_t e) {
    switch (e) {
#define HOC_NAME(cu, hip) case hip: return #hip;
    HOC_ERRORS(HOC_NAME)
#undef HOC_NAME
    default: return "hipErrorUnknown";
    }
}

/* ---- the current device's calls ---------------------------------------------------------- */
/* return hipError_t of call, made in the thread's context */
#define HOC_CALL(call) do { CUresult hoc_r_ = hoc_ctx(); \
        return hoc_err(hoc_r_ == CUDA_SUCCESS ? (call) : hoc_r_); } while (0)

#define HOC_DPTR(p)    ((CUdeviceptr)(uintptr_t)(p))
#define HOC_STREAM(s)  ((CUstream)(s))
#define HOC_EVENT(e)   ((CUevent)(e))

hipError_t hipDriverGetVersion(int *version) {
    if (!version) return hipErrorInvalidValue;
    *version = HIP_VERSION;   /* the HIP API this stands in for */
    return hipSuccess;
}

hipError_t hipInit(unsigned int flags) {
    if (flags) return hipErrorInvalidValue;
    return hoc_err(hoc_init());
}

hipError_t hipGetDeviceCount(int *count) {
    CUresult r;
    if (!count) return hipErrorInvalidValue;
    *count = 0;
    if ((r = hoc_init()) != CUDA_SUCCESS) return hoc_err(r);
    if ((r = cuDeviceGetCount(count)) != CUDA_SUCCESS) return hoc_err(r);
    return *count ? hipSuccess : hipErrorNoDevice;
}

hipError_t hipSetDevice(int ordinal) { return hoc_err(hoc_use(ordinal)); }

hipError_t hipDeviceGet(hipDevice_t *device, int ordinal) {
    CUdevice d;
    CUresult r = hoc_init();
    if (r == CUDA_SUCCESS) r = cuDeviceGet(&d, ordinal);
    if (r == CUDA_SUCCESS) *device = (hipDevice_t)d;
    return hoc_err(r);
}

hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device) {
    CUresult r = hoc_init();
    if (r == CUDA_SUCCESS) r = cuDeviceGetName(name, len, (CUdevice)device);
    return hoc_err(r);
}

hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t device) {
    CUresult r = hoc_init();
    if (r == CUDA_SUCCESS) r = cuDeviceTotalMem(bytes, (CUdevice)device);
    return hoc_err(r);
}

/* The attributes gpuflow asks for, and a few more; others are hipErrorInvalidValue. */
#define HOC_ATTRIBUTES(X) \
    X(hipDeviceAttributeMultiprocessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) \
    X(hipDeviceAttributeManagedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) \
    X(hipDeviceAttributeConcurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) \
    X(hipDeviceAttributeMemoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) \
    X(hipDeviceAttributeMaxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) \
    X(hipDeviceAttributeMaxBlockDimX, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X) \
    X(hipDeviceAttributeMaxBlockDimY, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y) \
    X(hipDeviceAttributeMaxBlockDimZ, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z) \
    X(hipDeviceAttributeMaxGridDimX, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X) \
    X(hipDeviceAttributeMaxGridDimY, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y) \
    X(hipDeviceAttributeMaxGridDimZ, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z) \
    X(hipDeviceAttributeWarpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE) \
    X(hipDeviceAttributeComputeCapabilityMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) \
    X(hipDeviceAttributeComputeCapabilityMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) \
    X(hipDeviceAttributeMaxSharedMemoryPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)

hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attr, int ordinal) {
    CUdevice dev;
    CUdevice_attribute a;
    CUresult r;
    switch (attr) {
#define HOC_ATTR(hip, cu) case hip: a = cu; break;
    HOC_ATTRIBUTES(HOC_ATTR)
#undef HOC_ATTR
    default: return hipErrorInvalidValue;
    }
    if ((r = hoc_init()) == CUDA_SUCCESS && (r = cuDeviceGet(&dev, ordinal)) == CUDA_SUCCESS)
        r = cuDeviceGetAttribute(value, a, dev);
    return hoc_err(r);
}

#ifndef HOC_NO_PROPERTIES
/* What gpuflow reads (gcnArchName: "sm_XY", which the stand-in's hiprtc takes as
   --offload-arch) and the common fields; the rest stay zero. */
hipError_t hipGetDeviceProperties(hipDeviceProp_t *p, int ordinal) {
    static const struct { CUdevice_attribute a; size_t offset; } ints[] = {
        { CU_DEVICE_ATTRIBUTE_WARP_SIZE, offsetof(hipDeviceProp_t, warpSize) },
        { CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(hipDeviceProp_t, maxThreadsPerBlock) },
        { CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, offsetof(hipDeviceProp_t, regsPerBlock) },
        { CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, offsetof(hipDeviceProp_t, maxThreadsDim) },
        { CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, offsetof(hipDeviceProp_t, maxThreadsDim) + sizeof(int) },
        { CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, offsetof(hipDeviceProp_t, maxThreadsDim) + 2 * sizeof(int) },
        { CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, offsetof(hipDeviceProp_t, maxGridSize) },
        { CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, offsetof(hipDeviceProp_t, maxGridSize) + sizeof(int) },
        { CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, offsetof(hipDeviceProp_t, maxGridSize) + 2 * sizeof(int) },
        { CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(hipDeviceProp_t, major) },
        { CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(hipDeviceProp_t, minor) },
        { CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(hipDeviceProp_t, multiProcessorCount) },
        { CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, offsetof(hipDeviceProp_t, l2CacheSize) },
        { CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, offsetof(hipDeviceProp_t, maxThreadsPerMultiProcessor) },
        { CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, offsetof(hipDeviceProp_t, concurrentKernels) },
        { CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, offsetof(hipDeviceProp_t, pciDomainID) },
        { CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, offsetof(hipDeviceProp_t, pciBusID) },
        { CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, offsetof(hipDeviceProp_t, pciDeviceID) },
        { CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, offsetof(hipDeviceProp_t, managedMemory) },
        { CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, offsetof(hipDeviceProp_t, concurrentManagedAccess) },
    };
    CUdevice dev;
    size_t i, bytes = 0;
    int v;
    CUresult r;
    if (!p) return hipErrorInvalidValue;
    if ((r = hoc_init()) != CUDA_SUCCESS || (r = cuDeviceGet(&dev, ordinal)) != CUDA_SUCCESS) return hoc_err(r);
    memset(p, 0, sizeof *p);
    if ((r = cuDeviceGetName(p->name, (int)sizeof p->name, dev)) != CUDA_SUCCESS) return hoc_err(r);
    if ((r = cuDeviceTotalMem(&bytes, dev)) != CUDA_SUCCESS) return hoc_err(r);
    p->totalGlobalMem = bytes;
    for (i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if ((r = cuDeviceGetAttribute(&v, ints[i].a, dev)) != CUDA_SUCCESS) return hoc_err(r);
        memcpy((char *)p + ints[i].offset, &v, sizeof v);
    }
    if (cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev) == CUDA_SUCCESS) p->sharedMemPerBlock = (size_t)v;
    if (cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, dev) == CUDA_SUCCESS) p->totalConstMem = (size_t)v;
    snprintf(p->gcnArchName, sizeof p->gcnArchName, "sm_%d%d", p->major, p->minor);
    p->gcnArch = p->major * 100 + p->minor * 10;
    return hipSuccess;
}
#endif

hipError_t hipDeviceGetStreamPriorityRange(int *least, int *greatest) {
    HOC_CALL(cuCtxGetStreamPriorityRange(least, greatest));
}

hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    HOC_CALL(cuMemGetInfo(free_bytes, total_bytes));
}

/* ---- memory ---------------------------------------------------------------------------- */
hipError_t hipMalloc(void **ptr, size_t size) {
    CUdeviceptr d = 0;
    CUresult r;
    if (!ptr) return hipErrorInvalidValue;
    *ptr = NULL;
    if (!size) return hipSuccess;   /* HIP: a null pointer, no error */
    if ((r = hoc_ctx()) == CUDA_SUCCESS && (r = cuMemAlloc(&d, size)) == CUDA_SUCCESS) *ptr = (void *)(uintptr_t)d;
    return hoc_err(r);
}

hipError_t hipMallocManaged(void **ptr, size_t size, unsigned int flags) {
    CUdeviceptr d = 0;
    CUresult r;
    if (!ptr) return hipErrorInvalidValue;
    *ptr = NULL;
    if (!size) return hipSuccess;
    if ((r = hoc_ctx()) == CUDA_SUCCESS &&
        (r = cuMemAllocManaged(&d, size, flags == hipMemAttachHost ? CU_MEM_ATTACH_HOST : CU_MEM_ATTACH_GLOBAL)) == CUDA_SUCCESS)
        *ptr = (void *)(uintptr_t)d;
    return hoc_err(r);
}

hipError_t hipFree(void *ptr) {
    if (!ptr) return hipSuccess;
    HOC_CALL(cuMemFree(HOC_DPTR(ptr)));
}

hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
    unsigned int cu = 0;
    CUresult r;
    if (!ptr) return hipErrorInvalidValue;
    *ptr = NULL;
    if (!size) return hipSuccess;
    if (flags & hipHostMallocPortable) cu |= CU_MEMHOSTALLOC_PORTABLE;
    if (flags & hipHostMallocMapped) cu |= CU_MEMHOSTALLOC_DEVICEMAP;
    if (flags & hipHostMallocWriteCombined) cu |= CU_MEMHOSTALLOC_WRITECOMBINED;
    if ((r = hoc_ctx()) == CUDA_SUCCESS) r = cuMemHostAlloc(ptr, size, cu);
    return hoc_err(r);
}

hipError_t hipHostFree(void *ptr) {
    if (!ptr) return hipSuccess;
    HOC_CALL(cuMemFreeHost(ptr));
}

/* Fails (hipErrorInvalidValue) for memory the runtime did not pin: gpuflow's host_pinned. */
hipError_t hipHostGetFlags(unsigned int *flags, void *ptr) {
    HOC_CALL(cuMemHostGetFlags(flags, ptr));
}

/* A HIP location (a device ordinal) as CUDA's: the CUdevice of that ordinal. */
static CUresult hoc_location(const hipMemLocation *in, CUmemLocation *out) {
    CUdevice dev;
    CUresult r = hoc_init();
    if (r == CUDA_SUCCESS && in->type != hipMemLocationTypeDevice) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = cuDeviceGet(&dev, in->id);
    out->type = CU_MEM_LOCATION_TYPE_DEVICE;
    out->id = r == CUDA_SUCCESS ? dev : 0;
    return r;
}

hipError_t hipMemPoolCreate(hipMemPool_t *pool, const hipMemPoolProps *props) {
    CUmemPoolProps cu;
    CUmemoryPool p = NULL;
    CUresult r;
    if (!pool || !props || props->allocType != hipMemAllocationTypePinned || props->handleTypes != hipMemHandleTypeNone)
        return hipErrorInvalidValue;   /* the stand-in makes device pools without export handles only */
    memset(&cu, 0, sizeof cu);
    cu.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    cu.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    r = hoc_location(&props->location, &cu.location);
    if (r == CUDA_SUCCESS) r = cuMemPoolCreate(&p, &cu);
    if (r == CUDA_SUCCESS) *pool = (hipMemPool_t)p;
    return hoc_err(r);
}

hipError_t hipMemPoolDestroy(hipMemPool_t pool) {
    CUresult r = hoc_init();
    return hoc_err(r == CUDA_SUCCESS ? cuMemPoolDestroy((CUmemoryPool)pool) : r);
}

/* hipMemAccessFlags have CUmemAccess_flags' values (none 0, read 1, read-write 3). */
hipError_t hipMemPoolGetAccess(hipMemAccessFlags *flags, hipMemPool_t pool, hipMemLocation *location) {
    CUmemAccess_flags cu = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CUmemLocation at;
    CUresult r;
    if (!flags || !location) return hipErrorInvalidValue;
    r = hoc_location(location, &at);
    if (r == CUDA_SUCCESS) r = cuMemPoolGetAccess(&cu, (CUmemoryPool)pool, &at);
    if (r == CUDA_SUCCESS) *flags = (hipMemAccessFlags)cu;
    return hoc_err(r);
}

hipError_t hipMemPoolSetAccess(hipMemPool_t pool, const hipMemAccessDesc *list, size_t count) {
    CUmemAccessDesc cu[HOC_MAX_DEVICES];
    CUresult r = hoc_init();
    size_t i;
    if (!list || count > HOC_MAX_DEVICES) return hipErrorInvalidValue;
    for (i = 0; i < count && r == CUDA_SUCCESS; i++) {
        r = hoc_location(&list[i].location, &cu[i].location);
        cu[i].flags = (CUmemAccess_flags)list[i].flags;
    }
    return hoc_err(r == CUDA_SUCCESS ? cuMemPoolSetAccess((CUmemoryPool)pool, cu, count) : r);
}

/* hipMemPoolAttr values are CUmemPool_attribute's names; 0 for one the stand-in does not know. */
static CUmemPool_attribute hoc_pool_attr(hipMemPoolAttr attr) {
    switch (attr) {
    case hipMemPoolReuseFollowEventDependencies:   return CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES;
    case hipMemPoolReuseAllowOpportunistic:        return CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC;
    case hipMemPoolReuseAllowInternalDependencies: return CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
    case hipMemPoolAttrReleaseThreshold:           return CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    case hipMemPoolAttrReservedMemCurrent:         return CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    case hipMemPoolAttrReservedMemHigh:            return CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
    case hipMemPoolAttrUsedMemCurrent:             return CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    case hipMemPoolAttrUsedMemHigh:                return CU_MEMPOOL_ATTR_USED_MEM_HIGH;
    default:                                       return (CUmemPool_attribute)0;
    }
}

hipError_t hipMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value) {
    CUmemPool_attribute a = hoc_pool_attr(attr);
    if (!a) return hipErrorInvalidValue;
    HOC_CALL(cuMemPoolSetAttribute((CUmemoryPool)pool, a, value));
}

hipError_t hipMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr, void *value) {
    CUmemPool_attribute a = hoc_pool_attr(attr);
    if (!a) return hipErrorInvalidValue;
    HOC_CALL(cuMemPoolGetAttribute((CUmemoryPool)pool, a, value));
}

hipError_t hipMemPoolTrimTo(hipMemPool_t pool, size_t keep) {
    HOC_CALL(cuMemPoolTrimTo((CUmemoryPool)pool, keep));
}

hipError_t hipMallocFromPoolAsync(void **ptr, size_t size, hipMemPool_t pool, hipStream_t stream) {
    CUdeviceptr d = 0;
    CUresult r;
    if (!ptr) return hipErrorInvalidValue;
    if ((r = hoc_ctx()) == CUDA_SUCCESS &&
        (r = cuMemAllocFromPoolAsync(&d, size, (CUmemoryPool)pool, HOC_STREAM(stream))) == CUDA_SUCCESS)
        *ptr = (void *)(uintptr_t)d;
    return hoc_err(r);
}

hipError_t hipFreeAsync(void *ptr, hipStream_t stream) {
    HOC_CALL(cuMemFreeAsync(HOC_DPTR(ptr), HOC_STREAM(stream)));
}

hipError_t hipMemPrefetchAsync(const void *ptr, size_t count, int device, hipStream_t stream) {
#if CUDA_VERSION >= 13000
    CUmemLocation where;
    memset(&where, 0, sizeof where);
    where.type = device == hipCpuDeviceId ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    where.id = device == hipCpuDeviceId ? 0 : device;
    HOC_CALL(cuMemPrefetchAsync(HOC_DPTR(ptr), count, where, 0, HOC_STREAM(stream)));
#else
    HOC_CALL(cuMemPrefetchAsync(HOC_DPTR(ptr), count, device == hipCpuDeviceId ? CU_DEVICE_CPU : (CUdevice)device,
                                HOC_STREAM(stream)));
#endif
}

hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void *src, size_t bytes, hipStream_t stream) {
    HOC_CALL(cuMemcpyHtoDAsync(HOC_DPTR(dst), src, bytes, HOC_STREAM(stream)));
}

hipError_t hipMemcpyDtoHAsync(void *dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream) {
    HOC_CALL(cuMemcpyDtoHAsync(dst, HOC_DPTR(src), bytes, HOC_STREAM(stream)));
}

hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream) {
    HOC_CALL(cuMemcpyDtoDAsync(HOC_DPTR(dst), HOC_DPTR(src), bytes, HOC_STREAM(stream)));
}

hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, size_t count, hipStream_t stream) {
    HOC_CALL(cuMemsetD8Async(HOC_DPTR(dst), value, count, HOC_STREAM(stream)));
}

hipError_t hipMemsetD16Async(hipDeviceptr_t dst, unsigned short value, size_t count, hipStream_t stream) {
    HOC_CALL(cuMemsetD16Async(HOC_DPTR(dst), value, count, HOC_STREAM(stream)));
}

hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t stream) {
    HOC_CALL(cuMemsetD32Async(HOC_DPTR(dst), (unsigned int)value, count, HOC_STREAM(stream)));
}

/* Host and device memory only: a hipArray is not a CUarray. */
static int hoc_memtype(hipMemoryType t, CUmemorytype *out) {
    *out = t == hipMemoryTypeHost ? CU_MEMORYTYPE_HOST : t == hipMemoryTypeDevice ? CU_MEMORYTYPE_DEVICE
         : t == hipMemoryTypeUnified ? CU_MEMORYTYPE_UNIFIED : (CUmemorytype)0;
    return *out != 0;
}

hipError_t hipMemcpyParam2DAsync(const hip_Memcpy2D *c, hipStream_t stream) {
    CUDA_MEMCPY2D m;
    if (!c) return hipErrorInvalidValue;
    memset(&m, 0, sizeof m);
    if (!hoc_memtype(c->srcMemoryType, &m.srcMemoryType) || !hoc_memtype(c->dstMemoryType, &m.dstMemoryType))
        return hipErrorInvalidValue;
    m.srcXInBytes = c->srcXInBytes; m.srcY = c->srcY; m.srcHost = c->srcHost; m.srcDevice = HOC_DPTR(c->srcDevice);
    m.srcPitch = c->srcPitch;
    m.dstXInBytes = c->dstXInBytes; m.dstY = c->dstY; m.dstHost = c->dstHost; m.dstDevice = HOC_DPTR(c->dstDevice);
    m.dstPitch = c->dstPitch;
    m.WidthInBytes = c->WidthInBytes;
    m.Height = c->Height;
    HOC_CALL(cuMemcpy2DAsync(&m, HOC_STREAM(stream)));
}

/* As HIP 5.2: memory the runtime does not know is hipErrorInvalidValue. The pointers are
   the one asked about (with unified addressing, device and host see one address). */
hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attr, const void *ptr) {
    CUpointer_attribute which[3] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                     CU_POINTER_ATTRIBUTE_IS_MANAGED };
    CUmemorytype type = (CUmemorytype)0;
    int ordinal = -1;
    unsigned int managed = 0;
    void *data[3];
    CUresult r;
    if (!attr) return hipErrorInvalidValue;
    data[0] = &type; data[1] = &ordinal; data[2] = &managed;
    if ((r = hoc_ctx()) == CUDA_SUCCESS) r = cuPointerGetAttributes(3, which, data, HOC_DPTR(ptr));
    if (r != CUDA_SUCCESS) return hoc_err(r);
    if (!type) return hipErrorInvalidValue;
    memset(attr, 0, sizeof *attr);
    attr->memoryType = type == CU_MEMORYTYPE_HOST ? hipMemoryTypeHost : type == CU_MEMORYTYPE_ARRAY ? hipMemoryTypeArray
                     : type == CU_MEMORYTYPE_UNIFIED ? hipMemoryTypeUnified : hipMemoryTypeDevice;
    attr->device = ordinal;
    attr->devicePointer = type == CU_MEMORYTYPE_HOST ? NULL : (void *)(uintptr_t)ptr;
    attr->hostPointer = type == CU_MEMORYTYPE_HOST || managed ? (void *)(uintptr_t)ptr : NULL;
    attr->isManaged = managed != 0;
    return hipSuccess;
}

hipError_t hipMemGetAddressRange(hipDeviceptr_t *base, size_t *size, hipDeviceptr_t ptr) {
    CUdeviceptr b = 0;
    size_t n = 0;
    CUresult r;
    if ((r = hoc_ctx()) == CUDA_SUCCESS) r = cuMemGetAddressRange(&b, &n, HOC_DPTR(ptr));
    if (r == CUDA_SUCCESS) {
        if (base) *base = (hipDeviceptr_t)(uintptr_t)b;
        if (size) *size = n;
    }
    return hoc_err(r);
}

/* ---- streams and host functions ------------------------------------------------------------ */
hipError_t hipStreamCreateWithPriority(hipStream_t *stream, unsigned int flags, int priority) {
    CUstream s = NULL;
    CUresult r;
    if (!stream) return hipErrorInvalidValue;
    if ((r = hoc_ctx()) == CUDA_SUCCESS &&
        (r = cuStreamCreateWithPriority(&s, (flags & hipStreamNonBlocking) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT,
                                        priority)) == CUDA_SUCCESS)
        *stream = (hipStream_t)s;
    return hoc_err(r);
}

hipError_t hipStreamDestroy(hipStream_t stream) { HOC_CALL(cuStreamDestroy(HOC_STREAM(stream))); }
hipError_t hipStreamQuery(hipStream_t stream) { HOC_CALL(cuStreamQuery(HOC_STREAM(stream))); }
hipError_t hipStreamSynchronize(hipStream_t stream) { HOC_CALL(cuStreamSynchronize(HOC_STREAM(stream))); }

hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags) {
    HOC_CALL(cuStreamWaitEvent(HOC_STREAM(stream), HOC_EVENT(event), flags));
}

#ifndef HOC_HIP_5_2   /* what HIP 5.2's runtime lacks */
/* The device of the stream's context (hipDevice_t is the ordinal, as CUdevice is). */
hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t *device) {
    CUcontext ctx = NULL, popped = NULL;
    CUdevice dev = 0;
    CUresult r;
    if (!device) return hipErrorInvalidValue;
    if ((r = hoc_ctx()) != CUDA_SUCCESS || (r = cuStreamGetCtx(HOC_STREAM(stream), &ctx)) != CUDA_SUCCESS ||
        (r = cuCtxPushCurrent(ctx)) != CUDA_SUCCESS)
        return hoc_err(r);
    r = cuCtxGetDevice(&dev);
    (void)cuCtxPopCurrent(&popped);
    if (r == CUDA_SUCCESS) *device = (hipDevice_t)dev;
    return hoc_err(r);
}

hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void *user) {
    HOC_CALL(cuLaunchHostFunc(HOC_STREAM(stream), fn, user));
}
#endif

/* hipStreamAddCallback's callback takes a hipError_t: a block carries it through CUDA's. */
typedef struct hoc_callback { hipStreamCallback_t fn; void *user; } hoc_callback;

static void CUDA_CB hoc_callback_run(CUstream stream, CUresult status, void *p) {
    hoc_callback c = *(hoc_callback *)p;
    free(p);
    c.fn((hipStream_t)stream, hoc_err(status), c.user);
}

hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t fn, void *user, unsigned int flags) {
    hoc_callback *c;
    CUresult r;
    if (!fn || flags) return hipErrorInvalidValue;
    if (!(c = (hoc_callback *)malloc(sizeof *c))) return hipErrorOutOfMemory;
    c->fn = fn;
    c->user = user;
    if ((r = hoc_ctx()) == CUDA_SUCCESS) r = cuStreamAddCallback(HOC_STREAM(stream), hoc_callback_run, c, 0);
    if (r != CUDA_SUCCESS) free(c);
    return hoc_err(r);
}

/* ---- events ---------------------------------------------------------------------------- */
hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned int flags) {
    unsigned int cu = CU_EVENT_DEFAULT;
    CUevent e = NULL;
    CUresult r;
    if (!event) return hipErrorInvalidValue;
    if (flags & hipEventBlockingSync) cu |= CU_EVENT_BLOCKING_SYNC;
    if (flags & hipEventDisableTiming) cu |= CU_EVENT_DISABLE_TIMING;
    if (flags & hipEventInterprocess) cu |= CU_EVENT_INTERPROCESS;
    if ((r = hoc_ctx()) == CUDA_SUCCESS && (r = cuEventCreate(&e, cu)) == CUDA_SUCCESS) *event = (hipEvent_t)e;
    return hoc_err(r);
}

hipError_t hipEventDestroy(hipEvent_t event) { HOC_CALL(cuEventDestroy(HOC_EVENT(event))); }
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) { HOC_CALL(cuEventRecord(HOC_EVENT(event), HOC_STREAM(stream))); }
hipError_t hipEventQuery(hipEvent_t event) { HOC_CALL(cuEventQuery(HOC_EVENT(event))); }
hipError_t hipEventSynchronize(hipEvent_t event) { HOC_CALL(cuEventSynchronize(HOC_EVENT(event))); }

hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop) {
    HOC_CALL(cuEventElapsedTime(ms, HOC_EVENT(start), HOC_EVENT(stop)));
}

/* ---- modules and launches -------------------------------------------------------------- */
hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
    CUmodule m = NULL;
    CUresult r;
    if (!module || !image) return hipErrorInvalidValue;
    if ((r = hoc_ctx()) == CUDA_SUCCESS && (r = cuModuleLoadData(&m, image)) == CUDA_SUCCESS) *module = (hipModule_t)m;
    return hoc_err(r);
}

hipError_t hipModuleUnload(hipModule_t module) { HOC_CALL(cuModuleUnload((CUmodule)module)); }

hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *name) {
    CUfunction f = NULL;
    CUresult r;
    if (!function) return hipErrorInvalidValue;
    if ((r = hoc_ctx()) == CUDA_SUCCESS && (r = cuModuleGetFunction(&f, (CUmodule)module, name)) == CUDA_SUCCESS)
        *function = (hipFunction_t)f;
    return hoc_err(r);
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz,
                                 unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                 hipStream_t stream, void **params, void **extra) {
    HOC_CALL(cuLaunchKernel((CUfunction)f, gx, gy, gz, bx, by, bz, shared, HOC_STREAM(stream), params, extra));
}

/* ---- capture and graphs ---------------------------------------------------------------- */
static CUstreamCaptureMode hoc_mode_to_cu(hipStreamCaptureMode m) {
    return m == hipStreamCaptureModeThreadLocal ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
         : m == hipStreamCaptureModeRelaxed     ? CU_STREAM_CAPTURE_MODE_RELAXED
                                                : CU_STREAM_CAPTURE_MODE_GLOBAL;
}
static hipStreamCaptureMode hoc_mode_to_hip(CUstreamCaptureMode m) {
    return m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? hipStreamCaptureModeThreadLocal
         : m == CU_STREAM_CAPTURE_MODE_RELAXED      ? hipStreamCaptureModeRelaxed
                                                    : hipStreamCaptureModeGlobal;
}

hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode) {
    HOC_CALL(cuStreamBeginCapture(HOC_STREAM(stream), hoc_mode_to_cu(mode)));
}

hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *graph) {
    CUgraph g = NULL;
    CUresult r;
    if (!graph) return hipErrorInvalidValue;
    if ((r = hoc_ctx()) == CUDA_SUCCESS) r = cuStreamEndCapture(HOC_STREAM(stream), &g);
    *graph = (hipGraph_t)g;   /* CUDA may hand back a graph with a failure too */
    return hoc_err(r);
}

hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode *mode) {
    CUstreamCaptureMode m;
    CUresult r;
    if (!mode) return hipErrorInvalidValue;
    m = hoc_mode_to_cu(*mode);
    if ((r = cuThreadExchangeStreamCaptureMode(&m)) == CUDA_SUCCESS) *mode = hoc_mode_to_hip(m);
    return hoc_err(r);
}

hipError_t hipGraphGetNodes(hipGraph_t graph, hipGraphNode_t *nodes, size_t *count) {
    HOC_CALL(cuGraphGetNodes((CUgraph)graph, (CUgraphNode *)nodes, count));
}

hipError_t hipGraphInstantiate(hipGraphExec_t *exec, hipGraph_t graph, hipGraphNode_t *error_node,
                               char *log, size_t log_size) {
    CUgraphExec e = NULL;
    CUresult r;
    if (!exec) return hipErrorInvalidValue;
    if (error_node) *error_node = NULL;
    if (log && log_size) log[0] = 0;
    if ((r = hoc_ctx()) == CUDA_SUCCESS && (r = cuGraphInstantiateWithFlags(&e, (CUgraph)graph, 0)) == CUDA_SUCCESS)
        *exec = (hipGraphExec_t)e;
    return hoc_err(r);
}

hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
    HOC_CALL(cuGraphLaunch((CUgraphExec)exec, HOC_STREAM(stream)));
}

static hipGraphExecUpdateResult hoc_update_result(CUgraphExecUpdateResult u) {
    switch (u) {
    case CU_GRAPH_EXEC_UPDATE_SUCCESS:                        return hipGraphExecUpdateSuccess;
    case CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED:         return hipGraphExecUpdateErrorTopologyChanged;
    case CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED:        return hipGraphExecUpdateErrorNodeTypeChanged;
    case CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED:         return hipGraphExecUpdateErrorFunctionChanged;
    case CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED:       return hipGraphExecUpdateErrorParametersChanged;
    case CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED:            return hipGraphExecUpdateErrorNotSupported;
    case CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE: return hipGraphExecUpdateErrorUnsupportedFunctionChange;
    default:                                                  return hipGraphExecUpdateError;
    }
}

hipError_t hipGraphExecUpdate(hipGraphExec_t exec, hipGraph_t graph, hipGraphNode_t *error_node,
                              hipGraphExecUpdateResult *result) {
    CUgraphExecUpdateResultInfo info;
    CUresult r;
    memset(&info, 0, sizeof info);
    if ((r = hoc_ctx()) == CUDA_SUCCESS) r = cuGraphExecUpdate((CUgraphExec)exec, (CUgraph)graph, &info);
    if (error_node) *error_node = (hipGraphNode_t)info.errorNode;
    if (result) *result = hoc_update_result(info.result);
    return hoc_err(r);
}

hipError_t hipGraphExecDestroy(hipGraphExec_t exec) { HOC_CALL(cuGraphExecDestroy((CUgraphExec)exec)); }
hipError_t hipGraphDestroy(hipGraph_t graph) { HOC_CALL(cuGraphDestroy((CUgraph)graph)); }

hipError_t hipGraphClone(hipGraph_t *clone, hipGraph_t graph) {
    CUgraph g = NULL;
    CUresult r;
    if (!clone) return hipErrorInvalidValue;
    if ((r = hoc_ctx()) == CUDA_SUCCESS && (r = cuGraphClone(&g, (CUgraph)graph)) == CUDA_SUCCESS) *clone = (hipGraph_t)g;
    return hoc_err(r);
}

/* hipKernelNodeParams onto CUDA's: func is the hipFunction_t, a CUfunction here. */
static void hoc_kernel_node(const hipKernelNodeParams *p, CUDA_KERNEL_NODE_PARAMS *out) {
    memset(out, 0, sizeof *out);
    out->func = (CUfunction)p->func;
    out->gridDimX = p->gridDim.x; out->gridDimY = p->gridDim.y; out->gridDimZ = p->gridDim.z;
    out->blockDimX = p->blockDim.x; out->blockDimY = p->blockDim.y; out->blockDimZ = p->blockDim.z;
    out->sharedMemBytes = p->sharedMemBytes;
    out->kernelParams = p->kernelParams;
    out->extra = p->extra;
}

hipError_t hipGraphKernelNodeSetParams(hipGraphNode_t node, const hipKernelNodeParams *params) {
    CUDA_KERNEL_NODE_PARAMS p;
    if (!params) return hipErrorInvalidValue;
    hoc_kernel_node(params, &p);
    HOC_CALL(cuGraphKernelNodeSetParams((CUgraphNode)node, &p));
}

hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node, const hipKernelNodeParams *params) {
    CUDA_KERNEL_NODE_PARAMS p;
    if (!params) return hipErrorInvalidValue;
    hoc_kernel_node(params, &p);
    HOC_CALL(cuGraphExecKernelNodeSetParams((CUgraphExec)exec, (CUgraphNode)node, &p));
}

hipError_t hipGraphNodeFindInClone(hipGraphNode_t *node, hipGraphNode_t original, hipGraph_t clone) {
    HOC_CALL(cuGraphNodeFindInClone((CUgraphNode *)node, (CUgraphNode)original, (CUgraph)clone));
}

hipError_t hipStreamGetCaptureInfo_v2(hipStream_t stream, hipStreamCaptureStatus *status,
                                      unsigned long long *id, hipGraph_t *graph,
                                      const hipGraphNode_t **deps, size_t *ndeps) {
    CUstreamCaptureStatus s = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t cid = 0;
    CUgraph g = NULL;
    const CUgraphNode *d = NULL;
    size_t n = 0;
    CUresult r;
    if (!status) return hipErrorInvalidValue;
    if ((r = hoc_ctx()) != CUDA_SUCCESS) return hoc_err(r);
#if CUDA_VERSION >= 13000
    r = cuStreamGetCaptureInfo(HOC_STREAM(stream), &s, &cid, &g, &d, NULL, &n);
#else
    r = cuStreamGetCaptureInfo(HOC_STREAM(stream), &s, &cid, &g, &d, &n);
#endif
    if (r != CUDA_SUCCESS) return hoc_err(r);
    *status = s == CU_STREAM_CAPTURE_STATUS_ACTIVE      ? hipStreamCaptureStatusActive
            : s == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? hipStreamCaptureStatusInvalidated
                                                        : hipStreamCaptureStatusNone;
    if (id) *id = (unsigned long long)cid;
    if (graph) *graph = (hipGraph_t)g;
    if (deps) *deps = (const hipGraphNode_t *)d;
    if (ndeps) *ndeps = n;
    return hipSuccess;
}

hipError_t hipGraphAddChildGraphNode(hipGraphNode_t *node, hipGraph_t graph, const hipGraphNode_t *deps,
                                     size_t ndeps, hipGraph_t child) {
    HOC_CALL(cuGraphAddChildGraphNode((CUgraphNode *)node, (CUgraph)graph, (const CUgraphNode *)deps, ndeps, (CUgraph)child));
}

hipError_t hipGraphAddHostNode(hipGraphNode_t *node, hipGraph_t graph, const hipGraphNode_t *deps, size_t ndeps,
                               const hipHostNodeParams *params) {
    CUDA_HOST_NODE_PARAMS p;
    if (!params) return hipErrorInvalidValue;
    p.fn = params->fn;
    p.userData = params->userData;
    HOC_CALL(cuGraphAddHostNode((CUgraphNode *)node, (CUgraph)graph, (const CUgraphNode *)deps, ndeps, &p));
}

#ifndef HOC_HIP_5_2
/* The flags are CUDA's, bit for bit (hipGraphDebugDotFlagsVerbose is CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE). */
hipError_t hipGraphDebugDotPrint(hipGraph_t graph, const char *path, unsigned int flags) {
    if (!path) return hipErrorInvalidValue;
    HOC_CALL(cuGraphDebugDotPrint((CUgraph)graph, path, flags));
}
#endif

hipError_t hipStreamUpdateCaptureDependencies(hipStream_t stream, hipGraphNode_t *deps, size_t ndeps, unsigned int flags) {
    unsigned int cu = flags == hipStreamSetCaptureDependencies ? CU_STREAM_SET_CAPTURE_DEPENDENCIES
                                                               : CU_STREAM_ADD_CAPTURE_DEPENDENCIES;
#if CUDA_VERSION >= 13000
    HOC_CALL(cuStreamUpdateCaptureDependencies(HOC_STREAM(stream), (CUgraphNode *)deps, NULL, ndeps, cu));
#else
    HOC_CALL(cuStreamUpdateCaptureDependencies(HOC_STREAM(stream), (CUgraphNode *)deps, ndeps, cu));
#endif
}

/* ---- more than one device ------------------------------------------------------------------- */
/* A device's primary context, retained as hoc_use does (the current one stays current). */
static CUresult hoc_primary_of(int ordinal, CUcontext *out) {
    CUcontext keep = NULL;
    CUresult r = cuCtxGetCurrent(&keep);
    if (r == CUDA_SUCCESS) r = hoc_use(ordinal);
    if (r == CUDA_SUCCESS) r = cuCtxGetCurrent(out);
    if (keep) cuCtxSetCurrent(keep);
    return r;
}
hipError_t hipDeviceCanAccessPeer(int *can, int ordinal, int peer) {
    CUdevice a, b;
    CUresult r = hoc_init();
    if (!can) return hipErrorInvalidValue;
    if (r == CUDA_SUCCESS) r = cuDeviceGet(&a, ordinal);
    if (r == CUDA_SUCCESS) r = cuDeviceGet(&b, peer);
    if (r == CUDA_SUCCESS) r = cuDeviceCanAccessPeer(can, a, b);
    return hoc_err(r);
}
hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags) {
    CUcontext peer_ctx = NULL;
    CUresult r = hoc_ctx();
    if (r == CUDA_SUCCESS) r = hoc_primary_of(peer, &peer_ctx);
    if (r == CUDA_SUCCESS) r = cuCtxEnablePeerAccess(peer_ctx, flags);
    return hoc_err(r);
}
hipError_t hipMemcpyPeerAsync(void *dst, int dst_ordinal, const void *src, int src_ordinal, size_t bytes, hipStream_t stream) {
    CUcontext dc = NULL, sc = NULL;
    CUresult r = hoc_ctx();
    if (r == CUDA_SUCCESS) r = hoc_primary_of(dst_ordinal, &dc);
    if (r == CUDA_SUCCESS) r = hoc_primary_of(src_ordinal, &sc);
    if (r == CUDA_SUCCESS) r = cuMemcpyPeerAsync(HOC_DPTR(dst), dc, HOC_DPTR(src), sc, bytes, HOC_STREAM(stream));
    return hoc_err(r);
}

/* ---- interop: external memory and semaphores ---------------------------------------------- */
/* HIP's handle types and flags are CUDA's values (HIP 5's headers stop at the D3D12 fence; 9,
   the timeline fd, is what ROCm 6 names hipExternalSemaphoreHandleTypeTimelineSemaphoreFd);
   the descriptions differ in layout, so each is copied field by field. */
/* ROCm does not take the fd it imports (the caller keeps it); CUDA does, so CUDA gets a
   duplicate of its own. */
hipError_t hipImportExternalMemory(hipExternalMemory_t *out, const hipExternalMemoryHandleDesc *d) {
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC c;
    CUresult r;
    if (!out || !d) return hipErrorInvalidValue;
    memset(&c, 0, sizeof c);
    c.type = (CUexternalMemoryHandleType)d->type;
    if (d->type == hipExternalMemoryHandleTypeOpaqueFd) { if ((c.handle.fd = dup(d->handle.fd)) < 0) return hipErrorInvalidValue; }
    else { c.handle.win32.handle = d->handle.win32.handle; c.handle.win32.name = d->handle.win32.name; }
    c.size = d->size;
    c.flags = d->flags;
    if ((r = hoc_ctx()) == CUDA_SUCCESS) r = cuImportExternalMemory((CUexternalMemory *)out, &c);
    if (r != CUDA_SUCCESS && d->type == hipExternalMemoryHandleTypeOpaqueFd) close(c.handle.fd);
    return hoc_err(r);
}
hipError_t hipExternalMemoryGetMappedBuffer(void **ptr, hipExternalMemory_t mem, const hipExternalMemoryBufferDesc *d) {
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC c;
    if (!ptr || !d) return hipErrorInvalidValue;
    memset(&c, 0, sizeof c);
    c.offset = d->offset;
    c.size = d->size;
    c.flags = d->flags;
    HOC_CALL(cuExternalMemoryGetMappedBuffer((CUdeviceptr *)ptr, (CUexternalMemory)mem, &c));
}
hipError_t hipDestroyExternalMemory(hipExternalMemory_t mem) { HOC_CALL(cuDestroyExternalMemory((CUexternalMemory)mem)); }
hipError_t hipImportExternalSemaphore(hipExternalSemaphore_t *out, const hipExternalSemaphoreHandleDesc *d) {
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC c;
    if (!out || !d) return hipErrorInvalidValue;
    memset(&c, 0, sizeof c);
    c.type = (CUexternalSemaphoreHandleType)d->type;
    if (c.type == CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD || c.type == CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD)
        c.handle.fd = d->handle.fd;
    else { c.handle.win32.handle = d->handle.win32.handle; c.handle.win32.name = d->handle.win32.name; }
    c.flags = d->flags;
    HOC_CALL(cuImportExternalSemaphore((CUexternalSemaphore *)out, &c));
}
/* One semaphore at a time: gpuflow signals and waits one per call. */
hipError_t hipSignalExternalSemaphoresAsync(const hipExternalSemaphore_t *sems, const hipExternalSemaphoreSignalParams *p,
                                            unsigned int n, hipStream_t stream) {
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS c;
    if (!sems || !p || n != 1) return hipErrorInvalidValue;
    memset(&c, 0, sizeof c);
    c.params.fence.value = p->params.fence.value;
    c.params.keyedMutex.key = p->params.keyedMutex.key;
    c.flags = p->flags;
    HOC_CALL(cuSignalExternalSemaphoresAsync((const CUexternalSemaphore *)sems, &c, 1, HOC_STREAM(stream)));
}
hipError_t hipWaitExternalSemaphoresAsync(const hipExternalSemaphore_t *sems, const hipExternalSemaphoreWaitParams *p,
                                          unsigned int n, hipStream_t stream) {
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS c;
    if (!sems || !p || n != 1) return hipErrorInvalidValue;
    memset(&c, 0, sizeof c);
    c.params.fence.value = p->params.fence.value;
    c.params.keyedMutex.key = p->params.keyedMutex.key;
    c.params.keyedMutex.timeoutMs = p->params.keyedMutex.timeoutMs;
    c.flags = p->flags;
    HOC_CALL(cuWaitExternalSemaphoresAsync((const CUexternalSemaphore *)sems, &c, 1, HOC_STREAM(stream)));
}
hipError_t hipDestroyExternalSemaphore(hipExternalSemaphore_t sem) { HOC_CALL(cuDestroyExternalSemaphore((CUexternalSemaphore)sem)); }
#endif /* HOC_HIPRTC_ONLY */

/* ---- hiprtc over NVRTC ------------------------------------------------------------------ */
#ifndef HOC_NO_HIPRTC
/* NVRTC's entry points, loaded once (nvrtc.h gives the types; nothing is linked). */
#define HOC_NVRTC_API(X) \
    X(nvrtcResult, Version, (int *, int *)) \
    X(nvrtcResult, CreateProgram, (nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *)) \
    X(nvrtcResult, CompileProgram, (nvrtcProgram, int, const char *const *)) \
    X(nvrtcResult, GetProgramLogSize, (nvrtcProgram, size_t *)) \
    X(nvrtcResult, GetProgramLog, (nvrtcProgram, char *)) \
    X(nvrtcResult, GetPTXSize, (nvrtcProgram, size_t *)) \
    X(nvrtcResult, GetPTX, (nvrtcProgram, char *)) \
    X(nvrtcResult, DestroyProgram, (nvrtcProgram *)) \
    X(nvrtcResult, GetNumSupportedArchs, (int *)) \
    X(nvrtcResult, GetSupportedArchs, (int *))
static struct {
#define HOC_NVRTC_SLOT(type, name, params) type (*name) params;
    HOC_NVRTC_API(HOC_NVRTC_SLOT)
#undef HOC_NVRTC_SLOT
} hoc_nvrtc;
static pthread_once_t hoc_nvrtc_once = PTHREAD_ONCE_INIT;
static int hoc_nvrtc_loaded;

/* Never called: each slot against nvrtc.h's declaration. */
static void hoc_nvrtc_check_signatures(void) {
#define HOC_NVRTC_SAME(type, name, params) (void)sizeof(hoc_nvrtc.name == &nvrtc##name);
    HOC_NVRTC_API(HOC_NVRTC_SAME)
#undef HOC_NVRTC_SAME
}

static void hoc_nvrtc_load_once(void) {
    static const char *const names[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
        "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so" };
    void *lib = NULL, *sym;
    size_t i;
    (void)hoc_nvrtc_check_signatures;
    for (i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "hip_on_cuda: hiprtc: cannot load NVRTC (libnvrtc.so.13 or .12): %s\n", dlerror()); return; }
#define HOC_NVRTC_RESOLVE(type, name, params) \
    if (!(sym = dlsym(lib, "nvrtc" #name))) { fprintf(stderr, "hip_on_cuda: hiprtc: NVRTC has no nvrtc" #name "\n"); return; } \
    memcpy(&hoc_nvrtc.name, &sym, sizeof sym);
    HOC_NVRTC_API(HOC_NVRTC_RESOLVE)
#undef HOC_NVRTC_RESOLVE
    hoc_nvrtc_loaded = 1;
}
static int hoc_nvrtc_load(void) {
    pthread_once(&hoc_nvrtc_once, hoc_nvrtc_load_once);
    return hoc_nvrtc_loaded;
}

/* X(NVRTC code, hiprtc code) where both mean the same. */
#define HOC_RTC_CODES(X) \
    X(NVRTC_SUCCESS, HIPRTC_SUCCESS) \
    X(NVRTC_ERROR_OUT_OF_MEMORY, HIPRTC_ERROR_OUT_OF_MEMORY) \
    X(NVRTC_ERROR_PROGRAM_CREATION_FAILURE, HIPRTC_ERROR_PROGRAM_CREATION_FAILURE) \
    X(NVRTC_ERROR_INVALID_INPUT, HIPRTC_ERROR_INVALID_INPUT) \
    X(NVRTC_ERROR_INVALID_PROGRAM, HIPRTC_ERROR_INVALID_PROGRAM) \
    X(NVRTC_ERROR_INVALID_OPTION, HIPRTC_ERROR_INVALID_OPTION) \
    X(NVRTC_ERROR_COMPILATION, HIPRTC_ERROR_COMPILATION) \
    X(NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE) \
    X(NVRTC_ERROR_INTERNAL_ERROR, HIPRTC_ERROR_INTERNAL_ERROR)

static hiprtcResult hoc_rtc(nvrtcResult r) {
    switch (r) {
#define HOC_RTC_MAP(nv, hip) case nv: return hip;
    HOC_RTC_CODES(HOC_RTC_MAP)
#undef HOC_RTC_MAP
    default: return HIPRTC_ERROR_INTERNAL_ERROR;
    }
}

const char *hiprtcGetErrorString(hiprtcResult r) {
    switch (r) {
#define HOC_RTC_NAME(nv, hip) case hip: return #hip;
    HOC_RTC_CODES(HOC_RTC_NAME)
#undef HOC_RTC_NAME
    default: return "Invalid HIPRTC error code";
    }
}

/* NVRTC's version: the compiler behind this hiprtc. */
hiprtcResult hiprtcVersion(int *major, int *minor) {
    if (!major || !minor) return HIPRTC_ERROR_INVALID_INPUT;
    if (!hoc_nvrtc_load()) return HIPRTC_ERROR_INTERNAL_ERROR;
    return hoc_rtc(hoc_nvrtc.Version(major, minor));
}

hiprtcResult hiprtcCreateProgram(hiprtcProgram *prog, const char *src, const char *name, int count,
                                 const char **headers, const char **include_names) {
    nvrtcProgram p = NULL;
    nvrtcResult r;
    if (!prog) return HIPRTC_ERROR_INVALID_INPUT;
    if (!hoc_nvrtc_load()) return HIPRTC_ERROR_INTERNAL_ERROR;
    if ((r = hoc_nvrtc.CreateProgram(&p, src, name, count, headers, include_names)) == NVRTC_SUCCESS) *prog = (hiprtcProgram)p;
    return hoc_rtc(r);
}

hiprtcResult hiprtcDestroyProgram(hiprtcProgram *prog) {
    nvrtcProgram p;
    nvrtcResult r;
    if (!prog) return HIPRTC_ERROR_INVALID_INPUT;
    if (!hoc_nvrtc_load()) return HIPRTC_ERROR_INTERNAL_ERROR;
    p = (nvrtcProgram)*prog;
    if ((r = hoc_nvrtc.DestroyProgram(&p)) == NVRTC_SUCCESS) *prog = NULL;
    return hoc_rtc(r);
}

/* The device current on this thread as a virtual architecture: its own, or the newest NVRTC
   knows if the device is newer. 0 where there is no device to ask (NVRTC's default then). */
static int hoc_current_arch(void) {
    CUdevice dev;
    int major = 0, minor = 0, cc, archs[64], count = 0, i, best = 0;
    if (hoc_ctx() != CUDA_SUCCESS || cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
        cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
        cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS)
        return 0;
    cc = major * 10 + minor;
    if (hoc_nvrtc.GetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0 || count > 64 ||
        hoc_nvrtc.GetSupportedArchs(archs) != NVRTC_SUCCESS)
        return cc;
    for (i = 0; i < count; i++) {
        if (archs[i] == cc) return cc;
        if (archs[i] < cc && archs[i] > best) best = archs[i];
    }
    return best ? best : cc;
}

/* hiprtc's options in NVRTC's words: --offload-arch=sm_XY[a] is --gpu-architecture=compute_XY[a],
   another --offload-arch (an AMD target) is dropped for the current device's architecture,
   -ffast-math is -use_fast_math; the rest go as they are. */
hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int count, const char **options) {
    const char **opts;
    char arch[64];
    int i, n = 0, have_arch = 0;
    nvrtcResult r;
    if (count < 0 || (count > 0 && !options)) return HIPRTC_ERROR_INVALID_INPUT;
    if (!hoc_nvrtc_load()) return HIPRTC_ERROR_INTERNAL_ERROR;
    if (!(opts = (const char **)malloc(sizeof *opts * (size_t)(count + 1)))) return HIPRTC_ERROR_OUT_OF_MEMORY;
    for (i = 0; i < count; i++) {
        const char *o = options[i], *target = NULL;
        if (!strncmp(o, "--offload-arch=", 15)) target = o + 15;
        else if (!strncmp(o, "-offload-arch=", 14)) target = o + 14;
        if (target) {
            if (!have_arch && !strncmp(target, "sm_", 3) && strlen(target) < 40) {
                snprintf(arch, sizeof arch, "--gpu-architecture=compute_%s", target + 3);
                opts[n++] = arch;
                have_arch = 1;
            }
            continue;
        }
        opts[n++] = !strcmp(o, "-ffast-math") ? "-use_fast_math" : o;
    }
    if (!have_arch) {
        int cc = hoc_current_arch();
        if (cc) {
            snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d", cc);
            opts[n++] = arch;
        }
    }
    r = hoc_nvrtc.CompileProgram((nvrtcProgram)prog, n, opts);
    free((void *)opts);
    return hoc_rtc(r);
}

hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *size) {
    if (!hoc_nvrtc_load()) return HIPRTC_ERROR_INTERNAL_ERROR;
    return hoc_rtc(hoc_nvrtc.GetProgramLogSize((nvrtcProgram)prog, size));
}

hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char *log) {
    if (!hoc_nvrtc_load()) return HIPRTC_ERROR_INTERNAL_ERROR;
    return hoc_rtc(hoc_nvrtc.GetProgramLog((nvrtcProgram)prog, log));
}

/* The "code object" is PTX, NUL included: what hipModuleLoadData takes here. */
hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t *size) {
    if (!hoc_nvrtc_load()) return HIPRTC_ERROR_INTERNAL_ERROR;
    return hoc_rtc(hoc_nvrtc.GetPTXSize((nvrtcProgram)prog, size));
}

hiprtcResult hiprtcGetCode(hiprtcProgram prog, char *code) {
    if (!hoc_nvrtc_load()) return HIPRTC_ERROR_INTERNAL_ERROR;
    return hoc_rtc(hoc_nvrtc.GetPTX((nvrtcProgram)prog, code));
}
#endif /* HOC_NO_HIPRTC */
