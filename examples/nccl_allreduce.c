/* nccl_allreduce.c -- an all-reduce over every GPU, by NCCL, on gpuflow's streams, in a flow.

   gpuflow writes no collectives of its own: NCCL (RCCL on AMD) is the engine, and gpuflow
   hands it its streams (gf_stream_native) and buffers (gf_buffer_native) and orders it among
   the rest of the work. One process opens one gpuflow device per GPU and one NCCL
   communicator per device (ncclCommInitAll). The flow:

       fill on GPU i (send_i = i + 1)  --\
                                          >-- all-reduce (sum) --> read back on GPU i
       fill on GPU j (send_j = j + 1)  --/

   The all-reduce task runs on GPU 0's stream; each other GPU's stream waits for it (a wait
   across devices), NCCL runs there, and GPU 0's stream waits for them all again, so the
   read-back tasks after it see the sum. Every element is checked against 1 + 2 + ... + n: the
   fills before the collective were seen by it, the copies after it saw its result.

   NCCL is loaded at run time, like gpuflow's drivers (libnccl.so.2; librccl.so.1 for HIP).
   Without it, or without a GPU, the example says so and exits 0. With one GPU the
   communicator has one rank (the sum is 1); the same program spans every GPU of the machine,
   and with NCCL's own bootstrap (ncclGetUniqueId sent to each process, ncclCommInitRank)
   processes on several machines: give each process its GPUs and its rank.

       cc -std=c99 -I. -DGPUFLOW_CUDA -I/usr/local/cuda/include examples/nccl_allreduce.c \
          -o nccl_allreduce -pthread -ldl && ./nccl_allreduce
   NCCL_ALLREDUCE_COUNT=n floats per GPU (default 1 Mi). */
#if !defined(_WIN32)
#  define _POSIX_C_SOURCE 200809L
#endif
#include "example.h"
#include <stdlib.h>
#if defined(_WIN32)
int main(void) {
    puts("nccl_allreduce: NCCL runs on Linux; nothing to do here");
    return 0;
}
#else
#include <dlfcn.h>

#define MAX_GPUS 16

/* The few NCCL entry points used, declared here (no nccl.h needed): their C ABI is stable. */
typedef struct ncclComm *nccl_comm;
enum { NCCL_FLOAT32 = 7, NCCL_SUM = 0 };   /* ncclFloat32, ncclSum */
static struct {
    int (*CommInitAll)(nccl_comm *comms, int count, const int *devices);
    int (*CommDestroy)(nccl_comm comm);
    int (*AllReduce)(const void *send, void *recv, size_t count, int type, int op, nccl_comm comm, void *stream);
    int (*GroupStart)(void);
    int (*GroupEnd)(void);
    const char *(*GetErrorString)(int result);
} nccl;

static const char *nccl_load(gf_backend backend) {
    const char *name = backend == GF_BACKEND_HIP ? "librccl.so.1" : "libnccl.so.2";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return NULL;
    *(void **)&nccl.CommInitAll = dlsym(lib, "ncclCommInitAll");
    *(void **)&nccl.CommDestroy = dlsym(lib, "ncclCommDestroy");
    *(void **)&nccl.AllReduce = dlsym(lib, "ncclAllReduce");
    *(void **)&nccl.GroupStart = dlsym(lib, "ncclGroupStart");
    *(void **)&nccl.GroupEnd = dlsym(lib, "ncclGroupEnd");
    *(void **)&nccl.GetErrorString = dlsym(lib, "ncclGetErrorString");
    if (!nccl.CommInitAll || !nccl.CommDestroy || !nccl.AllReduce || !nccl.GroupStart || !nccl.GroupEnd || !nccl.GetErrorString) return NULL;
    return name;
}

typedef struct job {
    int n;                          /* GPUs */
    size_t count;                   /* floats per GPU */
    gf_device *dev[MAX_GPUS];
    gf_stream *extra[MAX_GPUS];     /* GPU i's stream for its part of the collective (i > 0) */
    gf_buffer *send[MAX_GPUS], *recv[MAX_GPUS];
    nccl_comm comm[MAX_GPUS];
    float *host[MAX_GPUS];
    int gpu[MAX_GPUS];              /* which GPU a per-GPU task is for */
    int nccl_error;
} job;
static job J;

static void *device_ptr(gf_buffer *b) { return (void *)(uintptr_t)gf_buffer_native(b); }

static gf_result fill_task(gf_stream *s, void *user) {
    int i = *(const int *)user;
    float v = (float)(i + 1);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return gf_fill32_async(s, J.send[i], 0, bits, J.count);
}
static gf_result allreduce_task(gf_stream *s, void *user) {
    gf_result r = GF_OK;
    int i, e;
    (void)user;
    for (i = 1; i < J.n && r == GF_OK; i++) r = gf_stream_wait_stream(J.extra[i], s);   /* after what s waited for */
    if (r != GF_OK) return r;
    nccl.GroupStart();
    for (i = 0; i < J.n; i++)
        if ((e = nccl.AllReduce(device_ptr(J.send[i]), device_ptr(J.recv[i]), J.count, NCCL_FLOAT32, NCCL_SUM,
                                J.comm[i], gf_stream_native(i ? J.extra[i] : s))) != 0 && !J.nccl_error) J.nccl_error = e;
    if ((e = nccl.GroupEnd()) != 0 && !J.nccl_error) J.nccl_error = e;
    if (J.nccl_error) return GF_ERROR_DRIVER;
    for (i = 1; i < J.n && r == GF_OK; i++) r = gf_stream_wait_stream(s, J.extra[i]);    /* what follows sees the sum */
    return r;
}
static gf_result read_task(gf_stream *s, void *user) {
    int i = *(const int *)user;
    return gf_copy_to_host_async(s, J.host[i], J.recv[i], 0, J.count * sizeof(float));
}

int main(void) {
    gf_backend backend = gf_device_count(GF_BACKEND_CUDA) > 0 ? GF_BACKEND_CUDA : gf_device_count(GF_BACKEND_HIP) > 0 ? GF_BACKEND_HIP : GF_BACKEND_AUTO;
    gf_stream_pool *pools[MAX_GPUS];
    gf_flow *flow = NULL;
    gf_task fill[MAX_GPUS], reduce, read[MAX_GPUS];
    gf_task_desc d;
    const char *lib, *env = getenv("NCCL_ALLREDUCE_COUNT");
    float want;
    size_t k, bad = 0;
    int i, e;
    if (backend == GF_BACKEND_AUTO) {
        puts("nccl_allreduce: no CUDA or HIP GPU here (build with -DGPUFLOW_CUDA or -DGPUFLOW_HIP): nothing to reduce");
        return 0;
    }
    if (!(lib = nccl_load(backend))) {
        printf("nccl_allreduce: %s not found or incomplete: install NCCL (RCCL for HIP), or put it on LD_LIBRARY_PATH\n",
               backend == GF_BACKEND_HIP ? "librccl.so.1" : "libnccl.so.2");
        return 0;
    }
    J.count = env && atol(env) > 0 ? (size_t)atol(env) : (size_t)1 << 20;
    J.n = gf_device_count(backend) < MAX_GPUS ? gf_device_count(backend) : MAX_GPUS;
    memset(pools, 0, sizeof pools);
    for (i = 0; i < J.n; i++) {
        J.gpu[i] = i;
        CHECK(gf_device_open(backend, i, &J.dev[i]));
        CHECK(gf_stream_pool_create(J.dev[i], NULL, &pools[i]));
        CHECK(gf_stream_create(J.dev[i], NULL, &J.extra[i]));
        CHECK(gf_buffer_create(J.dev[i], J.count * sizeof(float), &J.send[i]));
        CHECK(gf_buffer_create(J.dev[i], J.count * sizeof(float), &J.recv[i]));
        if (!(J.host[i] = (float *)malloc(J.count * sizeof(float)))) return 1;
        CHECK(gf_fill32_async(J.extra[i], J.send[i], 0, 0x7f7fffffu, J.count));   /* stale values a wrong order would show */
        CHECK(gf_fill32_async(J.extra[i], J.recv[i], 0, 0xbf800000u, J.count));   /* -1.0f */
        CHECK(gf_stream_synchronize(J.extra[i]));
    }
    {
        int ordinals[MAX_GPUS];
        for (i = 0; i < J.n; i++) ordinals[i] = i;
        if ((e = nccl.CommInitAll(J.comm, J.n, ordinals)) != 0) {
            printf("nccl_allreduce: ncclCommInitAll over %d GPU(s) failed: %s\n", J.n, nccl.GetErrorString(e));
            return 1;
        }
    }
    printf("nccl_allreduce: %s, %d GPU(s) on %s, %zu floats each\n", lib, J.n, gf_backend_name(backend), J.count);
    CHECK(gf_flow_create(J.dev[0], NULL, &flow));
    memset(&d, 0, sizeof d);
    d.name = "all-reduce"; d.fn = allreduce_task;
    CHECK(gf_flow_add_desc(flow, &d, &reduce));
    for (i = 0; i < J.n; i++) {
        d.device = J.dev[i];
        d.name = "fill"; d.fn = fill_task; d.user = &J.gpu[i];
        CHECK(gf_flow_add_desc(flow, &d, &fill[i]));
        d.name = "read back"; d.fn = read_task;
        CHECK(gf_flow_add_desc(flow, &d, &read[i]));
        CHECK(gf_flow_depend(flow, fill[i], reduce));
        CHECK(gf_flow_depend(flow, reduce, read[i]));
    }
    CHECK(gf_flow_write_dot(flow, "nccl_allreduce.dot"));
    CHECK(gf_flow_run_multi(flow, pools, J.n));
    for (i = 0; i < J.n; i++) CHECK(gf_stream_pool_synchronize(pools[i]));
    if (J.nccl_error) { printf("nccl_allreduce: ncclAllReduce failed: %s\n", nccl.GetErrorString(J.nccl_error)); return 1; }
    want = (float)J.n * (float)(J.n + 1) / 2.0f;
    for (i = 0; i < J.n; i++)
        for (k = 0; k < J.count; k++) bad += J.host[i][k] != want;
    printf("nccl_allreduce: every element of every GPU is %g (1 + ... + %d): %s\n", want, J.n, bad ? "NO" : "yes");
    for (i = 0; i < J.n; i++) nccl.CommDestroy(J.comm[i]);
    gf_flow_destroy(flow);
    for (i = 0; i < J.n; i++) {
        gf_buffer_destroy(J.send[i]);
        gf_buffer_destroy(J.recv[i]);
        gf_stream_destroy(J.extra[i]);
        gf_stream_pool_destroy(pools[i]);
        free(J.host[i]);
        gf_device_close(J.dev[i]);
    }
    return bad ? 1 : 0;
}
#endif
