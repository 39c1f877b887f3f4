/* bench/smoke/fake_libcuda.c -- a stand-in libcuda.so.1 for smoke-testing the CUDA benchmarks
   on a machine without an NVIDIA driver. It times nothing real: it only lets cuda_bench,
   threads_bench, race_bench and core_bench run through every path (gpuflow's CUDA backend
   and their raw sides alike), so a mistake shows here rather than in the one GPU run.

       cc -std=c99 -O2 -shared -fPIC -isystem /usr/local/cuda/include bench/smoke/fake_libcuda.c \
          -o build/fake/libcuda.so.1 -pthread
       LD_LIBRARY_PATH=build/fake build/bench/cuda_bench --quick

   Memory is host memory; copies and fills happen at once; work_kernel (cuda_bench's pipeline
   kernel) runs on the CPU so the pipeline's check passes; other kernels do nothing; streams
   capture by counting nodes; host functions run on one worker thread, in order; external
   memory and semaphores import as host memory and handles that order nothing.
   FAKE_CUDA_HIDE=cuA,cuB makes it a driver that lacks those entry points (tests/driver_skew.sh). */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct fstream { int prio; int capturing; size_t nodes; uintptr_t last_node; } fstream;
typedef struct fgraph { size_t nodes; } fgraph;
typedef struct fmodule { char *image; } fmodule;
typedef struct ffunc { char name[64]; } ffunc;
typedef struct fevent { unsigned flags; } fevent;

static CUstreamCaptureMode thread_mode;   /* not per thread: enough for a smoke test */
static fstream null_stream;
static fstream *S(CUstream s) { return s ? (fstream *)s : &null_stream; }

/* a little work per operation, so a loop of them is not all call overhead */
static void spin_ns(long ns) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

/* ---- host functions: one worker thread, FIFO ------------------------------------------- */
typedef struct job { CUhostFn fn; void *user; struct job *next; } job;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER, q_done = PTHREAD_COND_INITIALIZER;
static job *q_head, *q_tail;
static int q_running, q_started;
static pthread_t q_thread;
static void *q_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&q_lock);
    for (;;) {
        job *j;
        while (!q_head) pthread_cond_wait(&q_cond, &q_lock);
        j = q_head;
        q_head = j->next;
        if (!q_head) q_tail = NULL;
        q_running = 1;
        pthread_mutex_unlock(&q_lock);
        j->fn(j->user);
        free(j);
        pthread_mutex_lock(&q_lock);
        q_running = 0;
        pthread_cond_broadcast(&q_done);
    }
    return NULL;
}
static void q_drain(void) {
    pthread_mutex_lock(&q_lock);
    if (q_started && !pthread_equal(pthread_self(), q_thread))
        while (q_head || q_running) pthread_cond_wait(&q_done, &q_lock);
    pthread_mutex_unlock(&q_lock);
}

/* ---- the entry points --------------------------------------------------------------------- */
static CUresult f_DriverGetVersion(int *v) { *v = 12080; return CUDA_SUCCESS; }
static CUresult f_GetErrorName(CUresult r, const char **s) { (void)r; *s = "CUDA_ERROR_FAKE"; return CUDA_SUCCESS; }
static CUresult f_Init(unsigned f) { (void)f; return CUDA_SUCCESS; }
static CUresult f_DeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
static CUresult f_DeviceGet(CUdevice *d, int i) { if (i != 0) return CUDA_ERROR_INVALID_DEVICE; *d = 0; return CUDA_SUCCESS; }
static CUresult f_DeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) { (void)a; (void)b; *can = 0; return CUDA_SUCCESS; }   /* one device */
static CUresult f_DeviceGetName(char *s, int n, CUdevice d) { (void)d; strncpy(s, "Fake GPU (bench/smoke)", (size_t)n); s[n - 1] = 0; return CUDA_SUCCESS; }
static CUresult f_DeviceGetPCIBusId(char *s, int n, CUdevice d) { (void)d; strncpy(s, "0000:01:00.0", (size_t)n); s[n - 1] = 0; return CUDA_SUCCESS; }
static CUresult f_DeviceTotalMem(size_t *b, CUdevice d) { (void)d; *b = (size_t)80 << 30; return CUDA_SUCCESS; }
static CUresult f_DeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 1; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}
static int ctx_object;
static CUresult f_DevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { (void)d; *c = (CUcontext)&ctx_object; return CUDA_SUCCESS; }
static CUresult f_DevicePrimaryCtxRelease(CUdevice d) { (void)d; return CUDA_SUCCESS; }
static CUresult f_CtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
static CUresult f_CtxGetDevice(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
static CUresult f_CtxGetStreamPriorityRange(int *least, int *greatest) { *least = 0; *greatest = -5; return CUDA_SUCCESS; }
static CUresult f_MemGetInfo(size_t *f, size_t *t) { *f = (size_t)79 << 30; *t = (size_t)80 << 30; return CUDA_SUCCESS; }
static CUresult f_MemAlloc(CUdeviceptr *p, size_t n) { void *m = malloc(n ? n : 1); if (!m) return CUDA_ERROR_OUT_OF_MEMORY; *p = (CUdeviceptr)(uintptr_t)m; return CUDA_SUCCESS; }
static CUresult f_MemAllocManaged(CUdeviceptr *p, size_t n, unsigned f) { (void)f; return f_MemAlloc(p, n); }
static CUresult f_MemFree(CUdeviceptr p) { free((void *)(uintptr_t)p); return CUDA_SUCCESS; }

/* pinned host memory: remembered, so cuPointerGetAttributes can say it is */
#define PINNED_MAX 256
static struct { char *p; size_t n; } pinned[PINNED_MAX];
static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static CUresult f_MemHostAlloc(void **p, size_t n, unsigned f) {
    int i;
    (void)f;
    if (!(*p = malloc(n ? n : 1))) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&pin_lock);
    for (i = 0; i < PINNED_MAX; i++) if (!pinned[i].p) { pinned[i].p = (char *)*p; pinned[i].n = n; break; }
    pthread_mutex_unlock(&pin_lock);
    return CUDA_SUCCESS;
}
static CUresult f_MemFreeHost(void *p) {
    int i;
    pthread_mutex_lock(&pin_lock);
    for (i = 0; i < PINNED_MAX; i++) if (pinned[i].p == p) pinned[i].p = NULL;
    pthread_mutex_unlock(&pin_lock);
    free(p);
    return CUDA_SUCCESS;
}
static CUresult f_PointerGetAttributes(unsigned n, CUpointer_attribute *a, void **data, CUdeviceptr ptr) {
    unsigned k;
    int i, host = 0;
    pthread_mutex_lock(&pin_lock);
    for (i = 0; i < PINNED_MAX; i++)
        if (pinned[i].p && (char *)(uintptr_t)ptr >= pinned[i].p && (char *)(uintptr_t)ptr < pinned[i].p + pinned[i].n) host = 1;
    pthread_mutex_unlock(&pin_lock);
    for (k = 0; k < n; k++)
        if (a[k] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) *(CUmemorytype *)data[k] = host ? CU_MEMORYTYPE_HOST : (CUmemorytype)0;
    return CUDA_SUCCESS;
}
static CUresult f_unsupported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

/* an operation on s: a node when s captures, else done now (1: do it). Each costs
   FAKE_CUDA_OP_NS of spinning (default 100; 0 shows a caller's own host cost alone). */
static long op_ns = -1;
static int op(CUstream s) {
    fstream *f = S(s);
    if (f->capturing) { f->nodes++; f->last_node++; return 0; }
    if (op_ns < 0) { const char *e = getenv("FAKE_CUDA_OP_NS"); op_ns = e ? atol(e) : 100; }
    if (op_ns > 0) spin_ns(op_ns);
    return 1;
}
static CUresult f_MemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) { if (op(s)) memcpy((void *)(uintptr_t)d, h, n); return CUDA_SUCCESS; }
static CUresult f_MemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s) { if (op(s)) memcpy(h, (void *)(uintptr_t)d, n); return CUDA_SUCCESS; }
static CUresult f_MemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s) { if (op(s)) memmove((void *)(uintptr_t)d, (void *)(uintptr_t)src, n); return CUDA_SUCCESS; }
static CUresult f_Memcpy2DAsync(const CUDA_MEMCPY2D *c, CUstream s) { (void)c; (void)s; return CUDA_ERROR_NOT_SUPPORTED; }
static CUresult f_MemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { if (op(s)) memset((void *)(uintptr_t)d, v, n); return CUDA_SUCCESS; }
static CUresult f_MemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
    size_t i;
    if (op(s)) for (i = 0; i < n; i++) ((unsigned short *)(uintptr_t)d)[i] = v;
    return CUDA_SUCCESS;
}
static CUresult f_MemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) {
    size_t i;
    if (op(s)) for (i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = v;
    return CUDA_SUCCESS;
}

static CUresult f_StreamCreateWithPriority(CUstream *s, unsigned f, int prio) {
    fstream *x = (fstream *)calloc(1, sizeof *x);
    (void)f;
    if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
    x->prio = prio;
    x->last_node = (uintptr_t)x << 20;
    *s = (CUstream)x;
    return CUDA_SUCCESS;
}
static CUresult f_StreamCreate(CUstream *s, unsigned f) { return f_StreamCreateWithPriority(s, f, 0); }
static CUresult f_StreamGetPriority(CUstream s, int *p) { *p = S(s)->prio; return CUDA_SUCCESS; }
static CUresult f_StreamDestroy(CUstream s) { q_drain(); if (s) free(s); return CUDA_SUCCESS; }
static CUresult f_StreamGetCtx(CUstream s, CUcontext *c) { (void)s; *c = (CUcontext)&ctx_object; return CUDA_SUCCESS; }
static CUresult f_StreamQuery(CUstream s) {
    int busy;
    (void)s;
    pthread_mutex_lock(&q_lock);
    busy = q_head || q_running;
    pthread_mutex_unlock(&q_lock);
    return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
static CUresult f_StreamSynchronize(CUstream s) {
    if (S(s)->capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    q_drain();
    return CUDA_SUCCESS;
}
static CUresult f_StreamWaitEvent(CUstream s, CUevent e, unsigned f) { (void)e; (void)f; (void)op(s); return CUDA_SUCCESS; }
static CUresult f_LaunchHostFunc(CUstream s, CUhostFn fn, void *user) {
    job *j;
    if (!op(s)) return CUDA_SUCCESS;   /* captured: a node that never runs here */
    if (!(j = (job *)malloc(sizeof *j))) return CUDA_ERROR_OUT_OF_MEMORY;
    j->fn = fn; j->user = user; j->next = NULL;
    pthread_mutex_lock(&q_lock);
    if (!q_started) { pthread_create(&q_thread, NULL, q_main, NULL); q_started = 1; }
    if (q_tail) q_tail->next = j; else q_head = j;
    q_tail = j;
    pthread_cond_signal(&q_cond);
    pthread_mutex_unlock(&q_lock);
    return CUDA_SUCCESS;
}
static CUresult f_EventCreate(CUevent *e, unsigned f) { fevent *x = (fevent *)calloc(1, sizeof *x); if (!x) return CUDA_ERROR_OUT_OF_MEMORY; x->flags = f; *e = (CUevent)x; return CUDA_SUCCESS; }
static CUresult f_EventDestroy(CUevent e) { free(e); return CUDA_SUCCESS; }
static CUresult f_EventRecord(CUevent e, CUstream s) { (void)e; (void)op(s); return CUDA_SUCCESS; }
static CUresult f_EventQuery(CUevent e) { (void)e; return f_StreamQuery(NULL); }
static CUresult f_EventSynchronize(CUevent e) { (void)e; q_drain(); return CUDA_SUCCESS; }
static CUresult f_EventElapsedTime(float *ms, CUevent a, CUevent b) { (void)a; (void)b; *ms = 0.001f; return CUDA_SUCCESS; }

static CUresult load(CUmodule *m, const void *image) {
    fmodule *x = (fmodule *)calloc(1, sizeof *x);
    if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
    x->image = strdup((const char *)image);
    *m = (CUmodule)x;
    return CUDA_SUCCESS;
}
static CUresult f_ModuleLoadData(CUmodule *m, const void *image) { return load(m, image); }
static CUresult f_ModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *o, void **v) { (void)n; (void)o; (void)v; return load(m, image); }
static CUresult f_ModuleUnload(CUmodule m) { free(((fmodule *)m)->image); free(m); return CUDA_SUCCESS; }
static CUresult f_ModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    char entry[96];
    ffunc *x;
    snprintf(entry, sizeof entry, ".entry %s(", name);
    if (!strstr(((fmodule *)m)->image, entry)) return CUDA_ERROR_NOT_FOUND;
    if (!(x = (ffunc *)calloc(1, sizeof *x))) return CUDA_ERROR_OUT_OF_MEMORY;
    strncpy(x->name, name, sizeof x->name - 1);
    *f = (CUfunction)x;
    return CUDA_SUCCESS;
}
static CUresult f_LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                               unsigned shared, CUstream s, void **params, void **extra) {
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)extra;
    if (!op(s)) return CUDA_SUCCESS;
    if (!strcmp(((ffunc *)f)->name, "work_kernel")) {   /* cuda_bench's pipeline kernel, on the CPU */
        float *d = (float *)(uintptr_t)*(CUdeviceptr *)params[0];
        int n = *(int *)params[1], iters = *(int *)params[2], i, k;
        for (i = 0; i < n; i++) {
            float v = d[i];
            for (k = 0; k < iters; k++) v = v * 0.999f + 0.001f;
            d[i] = v;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult f_StreamBeginCapture(CUstream s, CUstreamCaptureMode m) { (void)m; S(s)->capturing = 1; S(s)->nodes = 0; return CUDA_SUCCESS; }
static CUresult f_StreamEndCapture(CUstream s, CUgraph *g) {
    fgraph *x;
    if (!S(s)->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    S(s)->capturing = 0;
    if (!(x = (fgraph *)calloc(1, sizeof *x))) return CUDA_ERROR_OUT_OF_MEMORY;
    x->nodes = S(s)->nodes;
    *g = (CUgraph)x;
    return CUDA_SUCCESS;
}
static CUresult f_ThreadExchangeStreamCaptureMode(CUstreamCaptureMode *m) { CUstreamCaptureMode o = thread_mode; thread_mode = *m; *m = o; return CUDA_SUCCESS; }
static CUresult f_GraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n) {
    size_t i;
    if (nodes) for (i = 0; i < *n && i < ((fgraph *)g)->nodes; i++) nodes[i] = (CUgraphNode)(uintptr_t)(i + 1);
    else *n = ((fgraph *)g)->nodes;
    return CUDA_SUCCESS;
}
static CUresult f_GraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long f) {
    fgraph *x = (fgraph *)calloc(1, sizeof *x);
    (void)f;
    if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
    x->nodes = ((fgraph *)g)->nodes;
    *e = (CUgraphExec)x;
    return CUDA_SUCCESS;
}
static CUresult f_GraphLaunch(CUgraphExec e, CUstream s) { (void)e; (void)op(s); return CUDA_SUCCESS; }
static CUresult f_GraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *i) { (void)e; (void)g; if (i) memset(i, 0, sizeof *i); return CUDA_SUCCESS; }
static CUresult f_GraphExecDestroy(CUgraphExec e) { free(e); return CUDA_SUCCESS; }
static CUresult f_GraphDestroy(CUgraph g) { free(g); return CUDA_SUCCESS; }
static CUresult f_StreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                       const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n) {
    fstream *f = S(s);
    if (st) *st = f->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (id) *id = 1;
    if (g) *g = NULL;
    if (deps) *deps = (const CUgraphNode *)&f->last_node;
    if (edges) *edges = NULL;
    if (n) *n = f->capturing && f->nodes ? 1 : 0;
    return CUDA_SUCCESS;
}

static CUresult f_StreamUpdateCaptureDependencies(CUstream s, CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n, unsigned flags) {
    (void)s; (void)deps; (void)edges; (void)n; (void)flags; return CUDA_SUCCESS;   /* captures only count their nodes */
}

/* interop: imported memory is host memory; semaphores are handles that order nothing */
static int ext_object;
static CUresult f_ImportExternalMemory(CUexternalMemory *m, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *d) {
    (void)d; *m = (CUexternalMemory)&ext_object; return CUDA_SUCCESS;
}
static CUresult f_ExternalMemoryGetMappedBuffer(CUdeviceptr *p, CUexternalMemory m, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *d) {
    (void)m; return f_MemAlloc(p, (size_t)d->size);   /* cuMemFree frees it, as the driver's */
}
static CUresult f_DestroyExternalMemory(CUexternalMemory m) { (void)m; return CUDA_SUCCESS; }
static CUresult f_ImportExternalSemaphore(CUexternalSemaphore *x, const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC *d) {
    (void)d; *x = (CUexternalSemaphore)&ext_object; return CUDA_SUCCESS;
}
static CUresult f_SignalExternalSemaphoresAsync(const CUexternalSemaphore *x, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS *p, unsigned n, CUstream s) {
    (void)x; (void)p; (void)n; (void)op(s); return CUDA_SUCCESS;
}
static CUresult f_WaitExternalSemaphoresAsync(const CUexternalSemaphore *x, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS *p, unsigned n, CUstream s) {
    (void)x; (void)p; (void)n; (void)op(s); return CUDA_SUCCESS;
}
static CUresult f_DestroyExternalSemaphore(CUexternalSemaphore x) { (void)x; return CUDA_SUCCESS; }

typedef void (*any_fn)(void);
static const struct { const char *name; any_fn fn; } table[] = {
#define E(n) { "cu" #n, (any_fn)f_##n }
    E(DriverGetVersion), E(GetErrorName), E(Init), E(DeviceGetCount), E(DeviceGet), E(DeviceGetName),
    E(DeviceGetPCIBusId), E(DeviceTotalMem), E(DeviceGetAttribute), E(DevicePrimaryCtxRetain),
    E(DevicePrimaryCtxRelease), E(CtxSetCurrent), E(CtxGetDevice), E(CtxGetStreamPriorityRange), E(MemGetInfo),
    E(MemAlloc), E(MemAllocManaged), E(MemFree), E(MemHostAlloc), E(MemFreeHost), E(PointerGetAttributes),
    E(MemcpyHtoDAsync), E(MemcpyDtoHAsync), E(MemcpyDtoDAsync), E(Memcpy2DAsync), E(MemsetD8Async),
    E(MemsetD16Async), E(MemsetD32Async), E(StreamCreateWithPriority), E(StreamCreate), E(StreamGetPriority),
    E(StreamDestroy), E(StreamGetCtx), E(StreamQuery), E(StreamSynchronize), E(StreamWaitEvent), E(LaunchHostFunc),
    E(EventCreate), E(EventDestroy), E(EventRecord), E(EventQuery), E(EventSynchronize), E(EventElapsedTime),
    E(ModuleLoadData), E(ModuleLoadDataEx), E(ModuleUnload), E(ModuleGetFunction), E(LaunchKernel),
    E(StreamBeginCapture), E(StreamEndCapture), E(ThreadExchangeStreamCaptureMode), E(GraphGetNodes),
    E(GraphInstantiateWithFlags), E(GraphLaunch), E(GraphExecUpdate), E(GraphExecDestroy), E(GraphDestroy),
    E(DeviceCanAccessPeer), E(StreamGetCaptureInfo), E(StreamUpdateCaptureDependencies),
    E(ImportExternalMemory), E(ExternalMemoryGetMappedBuffer), E(DestroyExternalMemory), E(ImportExternalSemaphore),
    E(SignalExternalSemaphoresAsync), E(WaitExternalSemaphoresAsync), E(DestroyExternalSemaphore),
    /* present, refused: what the benchmarks do not use */
    { "cuMemPoolCreate", (any_fn)f_unsupported }, { "cuMemPoolDestroy", (any_fn)f_unsupported },
    { "cuMemPoolSetAccess", (any_fn)f_unsupported }, { "cuMemPoolGetAccess", (any_fn)f_unsupported }, { "cuMemPoolSetAttribute", (any_fn)f_unsupported },
    { "cuMemPoolGetAttribute", (any_fn)f_unsupported }, { "cuMemPoolTrimTo", (any_fn)f_unsupported },
    { "cuMemAllocFromPoolAsync", (any_fn)f_unsupported }, { "cuMemFreeAsync", (any_fn)f_unsupported },
    { "cuGraphClone", (any_fn)f_unsupported }, { "cuGraphAddChildGraphNode", (any_fn)f_unsupported },
    { "cuGraphNodeFindInClone", (any_fn)f_unsupported }, { "cuGraphKernelNodeGetParams", (any_fn)f_unsupported },
    { "cuGraphKernelNodeSetParams", (any_fn)f_unsupported }, { "cuGraphExecKernelNodeSetParams", (any_fn)f_unsupported },
    { "cuCtxEnablePeerAccess", (any_fn)f_unsupported }, { "cuMemcpyPeerAsync", (any_fn)f_unsupported },
#undef E
};

EXPORT CUresult cuGetProcAddress_v2(const char *name, void **fn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *st) {
    const char *hide = getenv("FAKE_CUDA_HIDE");   /* entries this driver lacks, e.g. "cuMemCreate,cuMemMap" */
    size_t i, n = strlen(name);
    (void)version; (void)flags;
    for (; hide && *hide; hide += strcspn(hide, ","), hide += *hide == ',')
        if (strncmp(hide, name, n) == 0 && (hide[n] == ',' || hide[n] == 0)) {
            *fn = NULL;
            if (st) *st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            return CUDA_ERROR_NOT_FOUND;
        }
    for (i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, name)) {
            memcpy(fn, &table[i].fn, sizeof *fn);   /* function to object pointer, as dlsym does */
            if (st) *st = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    *fn = NULL;
    if (st) *st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}
