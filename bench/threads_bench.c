/* bench/threads_bench.c -- gpuflow against the raw CUDA driver from 1, 2, 4, 8 and 16 host threads.

    cc -std=c99 -O2 -I. -isystem /usr/local/cuda/include bench/threads_bench.c -o build/bench/threads_bench -pthread -ldl
    ./build/bench/threads_bench [cuda|opencl|stub] [--threads 1,2,4,8,16] [--batches N] [--machine] [--quick]

    Three tables, one row per thread count, throughput of all threads together (M ops/s, the
    median of alternating batches) and the ratio gpuflow / raw (above 1: gpuflow is faster):

    launch      each thread launches an empty kernel (one block of 32 threads, no arguments) on
                its own stream, then synchronizes it.
                  gpuflow: gf_launch on the thread's gf_stream
                  raw:     cuLaunchKernel on the thread's own CUstream (cuStreamCreate)
                  raw on gpuflow's stream: cuLaunchKernel on the thread's gf_stream's CUstream
                           with gpuflow's CUfunction, so gpuflow / this is gpuflow's host code
                           alone (the stream's priority and the module do not differ)
    stream pool one gf_stream_pool of 16 streams shared by all threads: acquire + release.
                The driver has no pool, so two counterparts:
                  raw:   cuStreamCreate + cuStreamDestroy on each thread, what a program without
                         a pool does to get a stream of its own (the pool's reason to exist);
                  floor: the cheapest correct shared round robin, one atomic fetch-add on one
                         shared cursor per acquire and nothing on release, over 16 pre-made
                         streams. gpuflow / floor is what gpuflow's bookkeeping (its held counts:
                         two more atomics per cycle, each stream's on a line of its own, which
                         round robin still hands from thread to thread) costs as threads are
                         added. The ">= 0.98x raw" is read against raw; the
                         floor column says what the shared structure costs.
    event pool  one gf_event_pool shared by all threads: acquire + gf_event_record on the
                thread's stream + release, then the stream synchronized.
                  raw:   cuEventRecord of the thread's own pre-made event on its own stream (the
                         floor: no reuse scheme avoids the driver's record)
                  raw create: cuEventCreate + cuEventRecord + cuEventDestroy on each thread
                         (what the pool replaces: the driver's way to a free event)
                The pool keeps a shelf of free events per thread, so the gap to the floor is
                the locked instructions of a thread-safe acquire, record and release, not
                sharing (cuda_bench's event section prints what one costs on the host).

    Each batch: every thread waits at a start line, runs its share, synchronizes its stream;
    the batch's time is from the first thread's start to the last one's end. Sides alternate
    batch by batch (the one that goes first rotates), after one warm-up batch each. The raw side
    is this file's own table of driver entry points (dlopen, cuGetProcAddress): nothing of
    gpuflow's internals. On OpenCL or the stub (no raw side) only gpuflow's figures and the
    floor are printed.
*/
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#if defined(__has_include)
#  if __has_include(<CL/cl.h>)
#    define GPUFLOW_OPENCL
#  endif
#endif
#include "gpuflow.h"
#include "gpu_clocks.h"
#include "bench_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <pthread.h>
#include <dlfcn.h>

#define MAX_THREADS 64
#define POOL_STREAMS 16
#define MAX_BATCHES 31

/* ---- the raw side's own driver table ------------------------------------------------------ */
static struct {
    CUresult (CUDAAPI *Init)(unsigned int);
    CUresult (CUDAAPI *GetErrorName)(CUresult, const char **);
    CUresult (CUDAAPI *DeviceGet)(CUdevice *, int);
    CUresult (CUDAAPI *DeviceGetPCIBusId)(char *, int, CUdevice);
    CUresult (CUDAAPI *DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (CUDAAPI *DevicePrimaryCtxRelease)(CUdevice);
    CUresult (CUDAAPI *CtxSetCurrent)(CUcontext);
    CUresult (CUDAAPI *ModuleLoadData)(CUmodule *, const void *);
    CUresult (CUDAAPI *ModuleUnload)(CUmodule);
    CUresult (CUDAAPI *ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (CUDAAPI *StreamCreate)(CUstream *, unsigned int);
    CUresult (CUDAAPI *StreamDestroy)(CUstream);
    CUresult (CUDAAPI *StreamSynchronize)(CUstream);
    CUresult (CUDAAPI *LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                                     unsigned int, unsigned int, unsigned int, unsigned int,
                                     CUstream, void **, void **);
    CUresult (CUDAAPI *EventCreate)(CUevent *, unsigned int);
    CUresult (CUDAAPI *EventRecord)(CUevent, CUstream);
    CUresult (CUDAAPI *EventDestroy)(CUevent);
} cu;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "threads_bench: %s: %s\n", what, detail);
    exit(1);
}
#define GF(call) do { gf_result r_ = (call); if (r_ != GF_OK) die(#call, gf_last_error()); } while (0)
#define CU(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { const char *n_ = "?"; \
        cu.GetErrorName(r_, &n_); die(#call, n_); } } while (0)

static void raw_load(void) {
    typedef CUresult (CUDAAPI *gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    static const char *const names[] = {   /* one per pointer of cu, in its order */
        "cuInit", "cuGetErrorName", "cuDeviceGet", "cuDeviceGetPCIBusId", "cuDevicePrimaryCtxRetain",
        "cuDevicePrimaryCtxRelease", "cuCtxSetCurrent", "cuModuleLoadData", "cuModuleUnload",
        "cuModuleGetFunction", "cuStreamCreate", "cuStreamDestroy", "cuStreamSynchronize", "cuLaunchKernel",
        "cuEventCreate", "cuEventRecord", "cuEventDestroy"
    };
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *sym;
    gpa_fn gpa;
    size_t i;
    if (sizeof cu != sizeof names / sizeof names[0] * sizeof(void *)) die("raw_load", "table mismatch");
    if (!lib) die("dlopen libcuda.so.1", dlerror());
    if (!(sym = dlsym(lib, "cuGetProcAddress_v2"))) die("dlsym", "cuGetProcAddress_v2");
    memcpy(&gpa, &sym, sizeof gpa);
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        CUdriverProcAddressQueryResult st;
        void *fn = NULL;
        if (gpa(names[i], &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !fn)
            die("cuGetProcAddress", names[i]);
        memcpy((char *)&cu + i * sizeof fn, &fn, sizeof fn);
    }
}

/* ---- the kernel: one empty kernel in every backend's form --------------------------------- */
static const char empty_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry empty_kernel()\n"
    "{\n"
    "    ret;\n"
    "}\n";
static const char empty_cl[] = "__kernel void empty_kernel(void) {}\n";
static void empty_stub(const gf_kernel_ctx *ctx, void *const *args) { (void)ctx; (void)args; }
static gf_stub_kernel stub_kernels[1];   /* filled in main: { "empty_kernel", empty_stub } */
static const gf_launch_dims one_warp = {{1, 1, 1}, {32, 1, 1}, 0};

/* ---- state -------------------------------------------------------------------------------- */
enum { OP_LAUNCH, OP_POOL, OP_EVENT, OPS };
enum { SIDE_GF, SIDE_RAW, SIDE_EXTRA, SIDES };   /* EXTRA: raw on gpuflow's stream / floor / raw create */

typedef struct worker {
    int index;
    pthread_t thread;
    gf_stream *gs;
    CUstream rs;
    CUevent rev;
    double t0, t1;
    unsigned seen;                    /* the last job's generation it ran (or saw at its start) */
    void *volatile sink;
    char pad[64];
} worker;

static struct {
    gf_device *dev;
    gf_kernel *k;
    int raw;                          /* the CUDA raw side is here */
    CUcontext ctx; CUdevice cdev; CUmodule cmod; CUfunction f;
    CUfunction gf_f;                  /* gpuflow's own CUfunction */
    gf_stream_pool *spool;
    gf_event_pool *epool;
    void *floor_items[POOL_STREAMS];
    char pad0[64];
    unsigned long long floor_cursor;  /* the floor's one shared atomic, on a line of its own */
    char pad1[64];
} G;

static struct {                       /* the job every worker runs, and its start line */
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    unsigned gen;
    int stop, remaining, nthreads;
    int op, side, n;
    char pad[64];
    int ready;                        /* atomic */
} J;

static worker W[MAX_THREADS];


static void run_op(worker *w, int op, int side, int n) {
    int i;
    switch (op) {
    case OP_LAUNCH:
        if (side == SIDE_GF) {
            for (i = 0; i < n; i++) GF(gf_launch(w->gs, G.k, one_warp, NULL, 0));
            GF(gf_stream_synchronize(w->gs));
        } else {
            CUstream s = side == SIDE_RAW ? w->rs : (CUstream)gf_stream_native(w->gs);
            CUfunction f = side == SIDE_RAW ? G.f : G.gf_f;
            for (i = 0; i < n; i++) CU(cu.LaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
            CU(cu.StreamSynchronize(s));
        }
        break;
    case OP_POOL:
        if (side == SIDE_GF) {
            for (i = 0; i < n; i++) {
                gf_stream *s = NULL;
                GF(gf_stream_pool_acquire(G.spool, NULL, &s));
                w->sink = s;
                GF(gf_stream_pool_release(G.spool, s));
            }
        } else if (side == SIDE_RAW) {
            for (i = 0; i < n; i++) {
                CUstream s;
                CU(cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
                w->sink = s;
                CU(cu.StreamDestroy(s));
            }
        } else {
            for (i = 0; i < n; i++)
                w->sink = G.floor_items[__atomic_fetch_add(&G.floor_cursor, 1, __ATOMIC_ACQ_REL) % POOL_STREAMS];
        }
        break;
    default:   /* OP_EVENT */
        if (side == SIDE_GF) {
            for (i = 0; i < n; i++) {
                gf_event *ev = NULL;
                GF(gf_event_pool_acquire(G.epool, 0, &ev));
                GF(gf_event_record(ev, w->gs));
                GF(gf_event_pool_release(G.epool, ev));
            }
            GF(gf_stream_synchronize(w->gs));
        } else if (side == SIDE_RAW) {
            for (i = 0; i < n; i++) CU(cu.EventRecord(w->rev, w->rs));
            CU(cu.StreamSynchronize(w->rs));
        } else {
            for (i = 0; i < n; i++) {
                CUevent ev;
                CU(cu.EventCreate(&ev, CU_EVENT_DISABLE_TIMING));
                CU(cu.EventRecord(ev, w->rs));
                CU(cu.EventDestroy(ev));
            }
            CU(cu.StreamSynchronize(w->rs));
        }
        break;
    }
}

static void *worker_main(void *p) {
    worker *w = (worker *)p;
    unsigned seen = w->seen;
    if (G.raw) CU(cu.CtxSetCurrent(G.ctx));
    for (;;) {
        int op, side, n;
        pthread_mutex_lock(&J.lock);
        while (J.gen == seen && !J.stop) pthread_cond_wait(&J.go, &J.lock);
        if (J.stop) { pthread_mutex_unlock(&J.lock); return NULL; }
        seen = J.gen; op = J.op; side = J.side; n = J.n;
        pthread_mutex_unlock(&J.lock);
        /* the start line: every thread starts when the last one has woken */
        __atomic_add_fetch(&J.ready, 1, __ATOMIC_ACQ_REL);
        while (__atomic_load_n(&J.ready, __ATOMIC_ACQUIRE) < J.nthreads) sched_yield();
        w->t0 = now_s();
        run_op(w, op, side, n);
        w->t1 = now_s();
        pthread_mutex_lock(&J.lock);
        if (--J.remaining == 0) pthread_cond_signal(&J.done);
        pthread_mutex_unlock(&J.lock);
    }
}

/* One batch on every thread: n operations each. Returns M operations per second, all threads. */
static double batch(int op, int side, int n) {
    double t0 = 1e300, t1 = 0;
    int i;
    pthread_mutex_lock(&J.lock);
    J.op = op; J.side = side; J.n = n;
    J.remaining = J.nthreads;
    __atomic_store_n(&J.ready, 0, __ATOMIC_RELEASE);
    J.gen++;
    pthread_cond_broadcast(&J.go);
    while (J.remaining > 0) pthread_cond_wait(&J.done, &J.lock);
    pthread_mutex_unlock(&J.lock);
    for (i = 0; i < J.nthreads; i++) {
        if (W[i].t0 < t0) t0 = W[i].t0;
        if (W[i].t1 > t1) t1 = W[i].t1;
    }
    return (double)n * J.nthreads / (t1 - t0) / 1e6;
}

static void workers_start(int nthreads) {
    int i;
    J.nthreads = nthreads;
    J.stop = 0;
    for (i = 0; i < nthreads; i++) {
        gf_stream_desc sd;
        char label[32];
        worker *w = &W[i];
        memset(w, 0, sizeof *w);
        w->index = i;
        w->seen = J.gen;   /* no job runs now: a new worker waits for the next one */
        snprintf(label, sizeof label, "thread %d", i);
        memset(&sd, 0, sizeof sd);
        sd.label = label;
        GF(gf_stream_create(G.dev, &sd, &w->gs));
        if (G.raw) {
            CU(cu.StreamCreate(&w->rs, CU_STREAM_NON_BLOCKING));
            CU(cu.EventCreate(&w->rev, CU_EVENT_DISABLE_TIMING));
        }
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) die("pthread_create", "failed");
    }
}

static void workers_stop(void) {
    int i;
    pthread_mutex_lock(&J.lock);
    J.stop = 1;
    pthread_cond_broadcast(&J.go);
    pthread_mutex_unlock(&J.lock);
    for (i = 0; i < J.nthreads; i++) {
        worker *w = &W[i];
        pthread_join(w->thread, NULL);
        gf_stream_destroy(w->gs);
        if (G.raw) {
            CU(cu.EventDestroy(w->rev));
            CU(cu.StreamDestroy(w->rs));
        }
    }
}

/* Medians of M ops/s per side over batches; sides[] says which sides run, counts[] each side's
   operations per thread per batch. */
static void measure(int op, const int *sides, int nsides, const int *counts, int batches, double *med) {
    double t[SIDES][MAX_BATCHES];
    int b, k;
    for (k = 0; k < nsides; k++) (void)batch(op, sides[k], counts[sides[k]]);   /* warm-up */
    for (b = 0; b < batches; b++)
        for (k = 0; k < nsides; k++) {
            int s = sides[(b + k) % nsides];
            t[s][b] = batch(op, s, counts[s]);
        }
    for (k = 0; k < SIDES; k++) med[k] = 0;
    for (k = 0; k < nsides; k++) med[sides[k]] = median(t[sides[k]], batches);
}

static int per_thread(long total, int nthreads, int quick) {
    long n = total / nthreads / (quick ? 10 : 1);
    return n < 20 ? 20 : (int)n;
}

static void cell(double v) { if (v > 0) printf(" %12.4f", v); else printf(" %12s", "n/a"); }
static void ratio(double a, double b) { if (a > 0 && b > 0) printf(" %9.3f", a / b); else printf(" %9s", "n/a"); }

int main(int argc, char **argv) {
    static const struct { const char *name; gf_backend b; } known[] = {
        { "cuda", GF_BACKEND_CUDA }, { "opencl", GF_BACKEND_OPENCL }, { "stub", GF_BACKEND_STUB }
    };
    gf_backend backend = GF_BACKEND_CUDA;
    const char *list = "1,2,4,8,16";
    int counts_list[16], ncounts = 0, batches = 11, machine = 0, quick = 0, i, c;
    double res[16][OPS][SIDES];
    gf_module *mod;
    gf_module_desc desc;
    gf_stream_pool_desc pd;
    gf_event_pool_desc ed;
    char pci[32] = "";

    for (i = 1; i < argc; i++) {
        int k, matched = 0;
        for (k = 0; k < 3; k++) if (!strcmp(argv[i], known[k].name)) { backend = known[k].b; matched = 1; }
        if (matched) continue;
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) list = argv[++i];
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) batches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--machine")) machine = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else {
            fprintf(stderr, "usage: %s [cuda|opencl|stub] [--threads 1,2,4,8,16] [--batches N] [--machine] [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (batches < 1) batches = 1;
    if (batches > MAX_BATCHES) batches = MAX_BATCHES;
    for (const char *p = list; *p && ncounts < 16;) {
        int n = atoi(p);
        if (n < 1 || n > MAX_THREADS) die("--threads", "each count must be 1..64");
        counts_list[ncounts++] = n;
        p += strcspn(p, ",");
        if (*p == ',') p++;
    }

    GF(gf_device_open(backend, 0, &G.dev));
    memset(&desc, 0, sizeof desc);
    desc.ptx = empty_ptx;
    desc.opencl_source = empty_cl;
    memset(stub_kernels, 0, sizeof stub_kernels);
    stub_kernels[0].name = "empty_kernel";
    stub_kernels[0].fn = empty_stub;
    desc.stub_kernels = stub_kernels;
    desc.stub_kernel_count = 1;
    GF(gf_module_load(G.dev, &desc, &mod));
    GF(gf_kernel_get(mod, "empty_kernel", &G.k));
    memset(&pd, 0, sizeof pd);
    pd.count = POOL_STREAMS;
    pd.label = "shared";
    GF(gf_stream_pool_create(G.dev, &pd, &G.spool));
    memset(&ed, 0, sizeof ed);
    ed.capacity = 2 * MAX_THREADS;
    GF(gf_event_pool_create(G.dev, &ed, &G.epool));
    for (i = 0; i < POOL_STREAMS; i++) G.floor_items[i] = &G.floor_items[i];

    if (gf_device_backend(G.dev) == GF_BACKEND_CUDA) {
        G.raw = 1;
        raw_load();
        CU(cu.Init(0));
        CU(cu.DeviceGet(&G.cdev, 0));
        CU(cu.DevicePrimaryCtxRetain(&G.ctx, G.cdev));
        CU(cu.CtxSetCurrent(G.ctx));
        CU(cu.ModuleLoadData(&G.cmod, empty_ptx));
        CU(cu.ModuleGetFunction(&G.f, G.cmod, "empty_kernel"));
        G.gf_f = (CUfunction)gf_kernel_native(G.k);
        if (cu.DeviceGetPCIBusId(pci, (int)sizeof pci, G.cdev) != CUDA_SUCCESS) pci[0] = 0;
        clocks_open(pci[0] ? pci : NULL);
    }
    pthread_mutex_init(&J.lock, NULL);
    pthread_cond_init(&J.go, NULL);
    pthread_cond_init(&J.done, NULL);

    printf("threads_bench on %s (%s backend); %d CPUs online; medians of %d batches; M operations/s, all threads together\n",
           gf_device_name(G.dev), gf_backend_name(gf_device_backend(G.dev)), (int)sysconf(_SC_NPROCESSORS_ONLN), batches);
    if (G.raw) clocks_note("threads:before", machine);
    fflush(stdout);

    for (c = 0; c < ncounts; c++) {
        int T = counts_list[c];
        int launch_sides[3] = { SIDE_GF, SIDE_RAW, SIDE_EXTRA }, pool_raw[3] = { SIDE_GF, SIDE_RAW, SIDE_EXTRA };
        int pool_noraw[2] = { SIDE_GF, SIDE_EXTRA }, counts[SIDES];
        double t0 = now_s();
        workers_start(T);
        counts[SIDE_GF] = counts[SIDE_RAW] = counts[SIDE_EXTRA] = per_thread(16000, T, quick);
        measure(OP_LAUNCH, launch_sides, G.raw ? 3 : 1, counts, batches, res[c][OP_LAUNCH]);
        counts[SIDE_GF] = counts[SIDE_EXTRA] = per_thread(800000, T, quick);
        counts[SIDE_RAW] = per_thread(4000, T, quick);
        if (G.raw) measure(OP_POOL, pool_raw, 3, counts, batches, res[c][OP_POOL]);
        else measure(OP_POOL, pool_noraw, 2, counts, batches, res[c][OP_POOL]);
        counts[SIDE_GF] = counts[SIDE_RAW] = counts[SIDE_EXTRA] = per_thread(64000, T, quick);
        measure(OP_EVENT, launch_sides, G.raw ? 3 : 1, counts, batches, res[c][OP_EVENT]);
        workers_stop();
        printf("  %2d threads measured in %.1f s\n", T, now_s() - t0);
        fflush(stdout);
    }
    if (G.raw) clocks_note("threads:after", machine);

    printf("\nlaunch: empty kernel (1 block of 32 threads, no arguments), each thread on its own stream; M launches/s\n");
    printf("%7s %12s %12s %9s %12s %9s   (target: gf/raw >= 0.98)\n", "threads", "gpuflow", "raw", "gf/raw", "raw-gf-strm", "gf/that");
    for (c = 0; c < ncounts; c++) {
        double *r = res[c][OP_LAUNCH];
        printf("%7d", counts_list[c]); cell(r[SIDE_GF]); cell(r[SIDE_RAW]); ratio(r[SIDE_GF], r[SIDE_RAW]);
        cell(r[SIDE_EXTRA]); ratio(r[SIDE_GF], r[SIDE_EXTRA]); printf("\n");
    }
    printf("\nstream pool: one pool of %d streams shared by all threads, acquire + release; M cycles/s\n", POOL_STREAMS);
    printf("%7s %12s %12s %9s %12s %9s %10s %10s\n", "threads", "gpuflow", "create+dstr", "gf/raw", "floor", "gf/floor", "gf ns", "floor ns");
    for (c = 0; c < ncounts; c++) {
        double *r = res[c][OP_POOL];
        printf("%7d", counts_list[c]); cell(r[SIDE_GF]); cell(r[SIDE_RAW]); ratio(r[SIDE_GF], r[SIDE_RAW]);
        cell(r[SIDE_EXTRA]); ratio(r[SIDE_GF], r[SIDE_EXTRA]);
        /* per cycle, as each thread sees it: threads / throughput */
        printf(" %10.1f %10.1f\n", counts_list[c] / r[SIDE_GF] * 1e3, counts_list[c] / r[SIDE_EXTRA] * 1e3);
    }
    printf("\nevent pool: one pool shared by all threads, acquire + gf_event_record on the thread's stream + release; M cycles/s\n");
    printf("%7s %12s %12s %9s %12s %9s   (raw: cuEventRecord of the thread's own event, the floor; target gf/raw >= 1/1.1)\n",
           "threads", "gpuflow", "raw record", "gf/raw", "raw cr+rec+ds", "gf/that");
    for (c = 0; c < ncounts; c++) {
        double *r = res[c][OP_EVENT];
        printf("%7d", counts_list[c]); cell(r[SIDE_GF]); cell(r[SIDE_RAW]); ratio(r[SIDE_GF], r[SIDE_RAW]);
        cell(r[SIDE_EXTRA]); ratio(r[SIDE_GF], r[SIDE_EXTRA]); printf("\n");
    }
    if (machine)
        for (c = 0; c < ncounts; c++) {
            static const char *const names[OPS] = { "launch", "stream_pool", "event_pool" };
            int op;
            for (op = 0; op < OPS; op++)
                printf("@thr %s %d %.6g %.6g %.6g\n", names[op], counts_list[c], res[c][op][SIDE_GF], res[c][op][SIDE_RAW], res[c][op][SIDE_EXTRA]);
        }

    clocks_close();
    if (G.raw) {
        CU(cu.ModuleUnload(G.cmod));
        CU(cu.DevicePrimaryCtxRelease(G.cdev));
    }
    gf_event_pool_destroy(G.epool);
    gf_stream_pool_destroy(G.spool);
    gf_module_destroy(mod);
    gf_device_close(G.dev);
    return 0;
}
