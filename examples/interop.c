/* interop.c -- gpuflow on the objects your engine already made, and back.

   An engine that talks to the driver itself can hand its own objects to gpuflow and keep
   using them: gf_device_open_native opens a gpuflow device on your context, gf_stream_wrap
   makes a gpuflow stream of your queue, gf_buffer_wrap a gpuflow buffer of your memory.
   gpuflow uses what it is given and never frees it. The other way, gf_*_native hands out
   the driver's handle of any gpuflow object.

   Here, on the backend GF_BACKEND_AUTO picks (GPUFLOW_BACKEND=stub|opencl|cuda|hip forces one):
     CUDA    a context, a stream and memory made with the driver API (libcuda.so.1, loaded at
             run time as gpuflow loads it), gpuflow work on them, the result read back with
             cuMemcpyDtoHAsync on the same CUstream;
     HIP     the same with the HIP runtime (libamdhip64, loaded at run time): hipSetDevice,
             a hipStream_t and hipMalloc'd memory; gpuflow opens the device by its ordinal,
             and the result comes back with hipMemcpyDtoHAsync on the same hipStream_t;
     OpenCL  the same with a cl_context, a cl_command_queue and a cl_mem (libOpenCL.so.1),
             read back with clEnqueueReadBuffer on the same queue;
     stub    the stub's "driver memory" is host memory: gf_buffer_wrap takes your own array,
             and gf_buffer_native of a gpuflow buffer is a pointer you can read.
   The gpuflow work is the same everywhere: upload 0, 1, 2, ... and run the example kernel,
   x = 2x + 1. A wrapped stream is your queue, so your own commands enqueued after gpuflow's
   run after them, with no gpuflow synchronize in between.

   Build and run (the raw paths need the backend compiled in, and its headers):
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/interop.c -o interop -pthread -ldl && ./interop
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -DGPUFLOW_OPENCL -I. examples/interop.c -o interop -pthread -ldl
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -DGPUFLOW_CUDA -isystem /usr/local/cuda/include -I. examples/interop.c -o interop -pthread -ldl
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -DGPUFLOW_HIP -isystem /opt/rocm/include -I. examples/interop.c -o interop -pthread -ldl
*/
#include "example.h"
#include <stdint.h>
#if defined(GPUFLOW_CUDA) || defined(GPUFLOW_OPENCL) || defined(GPUFLOW_HIP)
#include <dlfcn.h>      /* the raw drivers are loaded at run time, as gpuflow loads them */
#endif
#ifdef GPUFLOW_CUDA
#include <cuda.h>       /* types and constants only (gpuflow's CUDA backend included it already) */
#endif
#ifdef GPUFLOW_OPENCL
#include <CL/cl.h>      /* the same for OpenCL */
#endif
#ifdef GPUFLOW_HIP
#include <hip/hip_runtime_api.h>   /* the same for HIP (gpuflow_hip.h included it, for AMD's platform) */
#include <hip/hip_version.h>
#endif

enum { N = 1024 };
static float input[N];

/* The gpuflow side, the same on every backend: upload 0, 1, 2, ... into buf on s, then the
   example kernel makes each x into 2x + 1. Both calls return at once. */
static gf_result gpuflow_work(gf_stream *s, gf_kernel *scale, gf_buffer *buf) {
    unsigned n = N;
    float a = 2.0f, b = 1.0f;
    gf_arg args[] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
    gf_result r = gf_copy_to_device_async(s, buf, 0, input, sizeof input);
    return r != GF_OK ? r : gf_launch(s, scale, example_dims(n), args, 4);
}

static int result_ok(const float *out, const char *read_by) {
    int i;
    for (i = 0; i < N; i++)
        if (out[i] != 2.0f * (float)i + 1.0f) { fprintf(stderr, "element %d: %g\n", i, out[i]); return 0; }
    printf("gpuflow's result, read by %s: ok\n", read_by);
    return 1;
}

/* dlsym's object pointer into a function pointer slot (ISO C has no cast between the two). */
#if defined(GPUFLOW_CUDA) || defined(GPUFLOW_OPENCL) || defined(GPUFLOW_HIP)
static int load(void *lib, const char *name, void *slot) {
    void *sym = lib ? dlsym(lib, name) : NULL;
    if (!sym) { fprintf(stderr, "cannot find %s\n", name); return 0; }
    memcpy(slot, &sym, sizeof sym);
    return 1;
}
#endif

#ifdef GPUFLOW_CUDA
/* ---- CUDA: the driver API, the few entries this needs (cuda.h's _v2 names) ---------------- */
#define CU(call) do { CUresult e_ = (call); if (e_ != CUDA_SUCCESS) { \
    fprintf(stderr, "%s failed: CUresult %d\n", #call, (int)e_); return 1; } } while (0)

static int on_cuda(void) {
    static float output[N];
    struct {
        CUresult (CUDAAPI *Init)(unsigned);
        CUresult (CUDAAPI *DeviceGet)(CUdevice *, int);
        CUresult (CUDAAPI *CtxCreate)(CUcontext *, unsigned, CUdevice);
        CUresult (CUDAAPI *CtxDestroy)(CUcontext);
        CUresult (CUDAAPI *StreamCreate)(CUstream *, unsigned);
        CUresult (CUDAAPI *StreamDestroy)(CUstream);
        CUresult (CUDAAPI *StreamSynchronize)(CUstream);
        CUresult (CUDAAPI *MemAlloc)(CUdeviceptr *, size_t);
        CUresult (CUDAAPI *MemFree)(CUdeviceptr);
        CUresult (CUDAAPI *MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    } cu;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CUdevice cu_dev;
    CUcontext ctx;
    CUstream cu_stream;
    CUdeviceptr mem;
    gf_device *dev;
    gf_stream *s;
    gf_buffer *buf;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();

    if (!load(lib, "cuInit", &cu.Init) || !load(lib, "cuDeviceGet", &cu.DeviceGet) ||
        !load(lib, "cuCtxCreate_v2", &cu.CtxCreate) || !load(lib, "cuCtxDestroy_v2", &cu.CtxDestroy) ||
        !load(lib, "cuStreamCreate", &cu.StreamCreate) || !load(lib, "cuStreamDestroy_v2", &cu.StreamDestroy) ||
        !load(lib, "cuStreamSynchronize", &cu.StreamSynchronize) || !load(lib, "cuMemAlloc_v2", &cu.MemAlloc) ||
        !load(lib, "cuMemFree_v2", &cu.MemFree) || !load(lib, "cuMemcpyDtoHAsync_v2", &cu.MemcpyDtoHAsync))
        return 1;

    /* The engine's objects: a context of its own (not the primary one), a stream, memory. */
    CU(cu.Init(0));
    CU(cu.DeviceGet(&cu_dev, 0));
    CU(cu.CtxCreate(&ctx, 0, cu_dev));             /* and current on this thread */
    CU(cu.StreamCreate(&cu_stream, CU_STREAM_NON_BLOCKING));
    CU(cu.MemAlloc(&mem, sizeof input));

    /* gpuflow on them. */
    gf_native_device native = { .context = ctx };
    CHECK(gf_device_open_native(GF_BACKEND_CUDA, &native, &dev));
    CHECK(gf_stream_wrap(dev, cu_stream, NULL, &s));
    CHECK(gf_buffer_wrap(dev, (uint64_t)mem, sizeof input, &buf));
    printf("gpuflow device '%s' on our CUcontext; gf_stream_native gives back our CUstream: %s, "
           "gf_buffer_native our CUdeviceptr: %s\n", gf_device_name(dev),
           gf_stream_native(s) == (void *)cu_stream ? "yes" : "no", gf_buffer_native(buf) == (uint64_t)mem ? "yes" : "no");
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &scale));
    CHECK(gpuflow_work(s, scale, buf));

    /* Back to the driver: our copy on our stream runs after gpuflow's work on it. */
    CU(cu.MemcpyDtoHAsync(output, mem, sizeof output, cu_stream));
    CU(cu.StreamSynchronize(cu_stream));
    if (!result_ok(output, "cuMemcpyDtoHAsync on the same CUstream")) return 1;

    /* gpuflow's wrappers first (they leave our objects alone), then ours. */
    gf_module_destroy(mod);
    gf_buffer_destroy(buf);
    gf_stream_destroy(s);
    gf_device_close(dev);
    CU(cu.MemFree(mem));
    CU(cu.StreamDestroy(cu_stream));
    CU(cu.CtxDestroy(ctx));
    dlclose(lib);
    return 0;
}
#endif

#ifdef GPUFLOW_OPENCL
/* ---- OpenCL: the few entries this needs, from the ICD loader ------------------------------- */
#define CL(call) do { cl_int e_ = (call); if (e_ != CL_SUCCESS) { \
    fprintf(stderr, "%s failed: cl_int %d\n", #call, (int)e_); return 1; } } while (0)

static int on_opencl(void) {
    static float output[N];
    struct {
        cl_int (CL_API_CALL *GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
        cl_int (CL_API_CALL *GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
        cl_context (CL_API_CALL *CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                                void (CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *);
        cl_command_queue (CL_API_CALL *CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties, cl_int *);
        cl_mem (CL_API_CALL *CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
        cl_int (CL_API_CALL *EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                                cl_uint, const cl_event *, cl_event *);
        cl_int (CL_API_CALL *ReleaseMemObject)(cl_mem);
        cl_int (CL_API_CALL *ReleaseCommandQueue)(cl_command_queue);
        cl_int (CL_API_CALL *ReleaseContext)(cl_context);
    } cl;
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    cl_platform_id platforms[8];
    cl_device_id cl_dev = NULL;
    cl_uint count = 0, i;
    cl_int err;
    cl_context ctx;
    cl_command_queue queue;
    cl_mem mem;
    gf_device *dev;
    gf_stream *s;
    gf_buffer *buf;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();

    if (!load(lib, "clGetPlatformIDs", &cl.GetPlatformIDs) || !load(lib, "clGetDeviceIDs", &cl.GetDeviceIDs) ||
        !load(lib, "clCreateContext", &cl.CreateContext) || !load(lib, "clCreateCommandQueue", &cl.CreateCommandQueue) ||
        !load(lib, "clCreateBuffer", &cl.CreateBuffer) || !load(lib, "clEnqueueReadBuffer", &cl.EnqueueReadBuffer) ||
        !load(lib, "clReleaseMemObject", &cl.ReleaseMemObject) || !load(lib, "clReleaseCommandQueue", &cl.ReleaseCommandQueue) ||
        !load(lib, "clReleaseContext", &cl.ReleaseContext))
        return 1;

    /* The engine's objects: the first GPU of any platform (else any first device), a context,
       an in-order queue, a buffer. */
    CL(cl.GetPlatformIDs(8, platforms, &count));
    for (i = 0; i < count && !cl_dev; i++)
        if (cl.GetDeviceIDs(platforms[i], CL_DEVICE_TYPE_GPU, 1, &cl_dev, NULL) != CL_SUCCESS) cl_dev = NULL;
    if (!cl_dev) CL(cl.GetDeviceIDs(platforms[0], CL_DEVICE_TYPE_ALL, 1, &cl_dev, NULL));
    ctx = cl.CreateContext(NULL, 1, &cl_dev, NULL, NULL, &err);
    CL(err);
    queue = cl.CreateCommandQueue(ctx, cl_dev, 0, &err);
    CL(err);
    mem = cl.CreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof input, NULL, &err);
    CL(err);

    /* gpuflow on them: OpenCL names the device as well as the context. */
    gf_native_device native = { .context = ctx, .device = cl_dev };
    CHECK(gf_device_open_native(GF_BACKEND_OPENCL, &native, &dev));
    CHECK(gf_stream_wrap(dev, queue, NULL, &s));
    CHECK(gf_buffer_wrap(dev, (uint64_t)(uintptr_t)mem, sizeof input, &buf));
    printf("gpuflow device '%s' on our cl_context; gf_stream_native gives back our queue: %s, "
           "gf_buffer_native our cl_mem: %s\n", gf_device_name(dev),
           gf_stream_native(s) == (void *)queue ? "yes" : "no", gf_buffer_native(buf) == (uint64_t)(uintptr_t)mem ? "yes" : "no");
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &scale));
    CHECK(gpuflow_work(s, scale, buf));

    /* Back to OpenCL: a blocking read on our in-order queue runs after gpuflow's work on it. */
    CL(cl.EnqueueReadBuffer(queue, mem, CL_TRUE, 0, sizeof output, output, 0, NULL, NULL));
    if (!result_ok(output, "clEnqueueReadBuffer on the same queue")) return 1;

    /* gpuflow's wrappers first (they leave our objects alone), then ours. */
    gf_module_destroy(mod);
    gf_buffer_destroy(buf);
    gf_stream_destroy(s);
    gf_device_close(dev);
    CL(cl.ReleaseMemObject(mem));
    CL(cl.ReleaseCommandQueue(queue));
    CL(cl.ReleaseContext(ctx));
    dlclose(lib);
    return 0;
}
#endif

#ifdef GPUFLOW_HIP
/* ---- HIP: the runtime API, the few entries this needs ---------------------------------------- */
#define HIPCHECK(call) do { hipError_t e_ = (call); if (e_ != hipSuccess) { \
    fprintf(stderr, "%s failed: hipError_t %d\n", #call, (int)e_); return 1; } } while (0)
#define HIP_STR(x) #x
#define HIP_XSTR(x) HIP_STR(x)

static int on_hip(void) {
    static float output[N];
    struct {
        hipError_t (*SetDevice)(int);
        hipError_t (*StreamCreateWithPriority)(hipStream_t *, unsigned int, int);
        hipError_t (*StreamDestroy)(hipStream_t);
        hipError_t (*StreamSynchronize)(hipStream_t);
        hipError_t (*Malloc)(void **, size_t);
        hipError_t (*Free)(void *);
        hipError_t (*MemcpyDtoHAsync)(void *, hipDeviceptr_t, size_t, hipStream_t);
    } hip;
    /* the runtime of the headers' major version, as gpuflow looks for it, else the plain name */
    void *lib = dlopen("libamdhip64.so." HIP_XSTR(HIP_VERSION_MAJOR), RTLD_NOW | RTLD_LOCAL);
    hipStream_t hip_stream;
    void *mem;
    gf_device *dev;
    gf_stream *s;
    gf_buffer *buf;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();

    if (!lib) lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!load(lib, "hipSetDevice", &hip.SetDevice) || !load(lib, "hipStreamCreateWithPriority", &hip.StreamCreateWithPriority) ||
        !load(lib, "hipStreamDestroy", &hip.StreamDestroy) || !load(lib, "hipStreamSynchronize", &hip.StreamSynchronize) ||
        !load(lib, "hipMalloc", &hip.Malloc) || !load(lib, "hipFree", &hip.Free) ||
        !load(lib, "hipMemcpyDtoHAsync", &hip.MemcpyDtoHAsync))
        return 1;

    /* The engine's objects: device 0 current on this thread, a stream, memory. */
    HIPCHECK(hip.SetDevice(0));
    HIPCHECK(hip.StreamCreateWithPriority(&hip_stream, hipStreamNonBlocking, 0));
    HIPCHECK(hip.Malloc(&mem, sizeof input));

    /* gpuflow on them: HIP names a device by its ordinal (contexts are deprecated in HIP). */
    gf_native_device native = { .ordinal = 0 };
    CHECK(gf_device_open_native(GF_BACKEND_HIP, &native, &dev));
    CHECK(gf_stream_wrap(dev, hip_stream, NULL, &s));
    CHECK(gf_buffer_wrap(dev, (uint64_t)(uintptr_t)mem, sizeof input, &buf));
    printf("gpuflow device '%s' on our HIP device 0; gf_stream_native gives back our hipStream_t: %s, "
           "gf_buffer_native our device pointer: %s\n", gf_device_name(dev),
           gf_stream_native(s) == (void *)hip_stream ? "yes" : "no", gf_buffer_native(buf) == (uint64_t)(uintptr_t)mem ? "yes" : "no");
    CHECK(gf_module_load(dev, &desc, &mod));       /* scale.gfk, compiled by hiprtc */
    CHECK(gf_kernel_get(mod, "scale", &scale));
    CHECK(gpuflow_work(s, scale, buf));

    /* Back to HIP: our copy on our stream runs after gpuflow's work on it. */
    HIPCHECK(hip.MemcpyDtoHAsync(output, mem, sizeof output, hip_stream));
    HIPCHECK(hip.StreamSynchronize(hip_stream));
    if (!result_ok(output, "hipMemcpyDtoHAsync on the same hipStream_t")) return 1;

    /* gpuflow's wrappers first (they leave our objects alone), then ours. */
    gf_module_destroy(mod);
    gf_buffer_destroy(buf);
    gf_stream_destroy(s);
    gf_device_close(dev);
    HIPCHECK(hip.Free(mem));
    HIPCHECK(hip.StreamDestroy(hip_stream));
    dlclose(lib);
    return 0;
}
#endif

/* ---- the stub: native memory is host memory ---------------------------------------------- */
static int on_stub(void) {
    static float mine[N];           /* the engine's own array */
    gf_device *dev;
    gf_stream *s, *none;
    gf_buffer *wrapped, *made;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();
    unsigned char *host_view;
    gf_result r;

    CHECK(gf_device_open(GF_BACKEND_STUB, 0, &dev));
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &scale));
    CHECK(gf_stream_create(dev, NULL, &s));
    r = gf_stream_wrap(dev, &mine, NULL, &none);   /* no queue to wrap: refused, and says why */
    printf("gf_stream_wrap on the stub: %s (%s)\n", gf_result_name(r), gf_last_error());

    /* Your array as a gpuflow buffer: gpuflow's work lands in it. */
    CHECK(gf_buffer_wrap(dev, (uint64_t)(uintptr_t)mine, sizeof mine, &wrapped));
    CHECK(gpuflow_work(s, scale, wrapped));
    CHECK(gf_stream_synchronize(s));   /* no driver queue of ours here: the host waits for gpuflow */
    if (!result_ok(mine, "the host in our own array")) return 1;

    /* A gpuflow buffer's native handle is its host memory. */
    CHECK(gf_buffer_create(dev, 64, &made));
    CHECK(gf_fill_async(s, made, 0, 0x5a, 64));
    CHECK(gf_stream_synchronize(s));
    host_view = (unsigned char *)(uintptr_t)gf_buffer_native(made);
    printf("gf_buffer_native of a gpuflow buffer is host memory: byte 63 = 0x%02x\n", host_view[63]);
    if (host_view[63] != 0x5a) return 1;

    gf_buffer_destroy(made);
    gf_buffer_destroy(wrapped);     /* leaves `mine` alone */
    gf_stream_destroy(s);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}

int main(void) {
    gf_device *probe;
    gf_backend backend;
    int i, failed;

    for (i = 0; i < N; i++) input[i] = (float)i;
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &probe));   /* which backend is here? */
    backend = gf_device_backend(probe);
    gf_device_close(probe);
    printf("backend: %s\n", gf_backend_name(backend));

    switch (backend) {
#ifdef GPUFLOW_CUDA
    case GF_BACKEND_CUDA: failed = on_cuda(); break;
#endif
#ifdef GPUFLOW_OPENCL
    case GF_BACKEND_OPENCL: failed = on_opencl(); break;
#endif
#ifdef GPUFLOW_HIP
    case GF_BACKEND_HIP: failed = on_hip(); break;
#endif
    default:
        if (backend != GF_BACKEND_STUB) printf("(no raw-driver path for %s here: the stub's instead)\n", gf_backend_name(backend));
        failed = on_stub();
        break;
    }
    if (failed) return 1;
    printf("interop on %s: ok\n", gf_backend_name(backend));
    return 0;
}
