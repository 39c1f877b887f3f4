/* multi_gpu_bench.c -- more than one device, gpuflow against the raw driver in the same run.

     peer copy      gf_copy_buffer_async between buffers of GPU 0 and GPU 1 (peer access
                    enabled) against cuMemcpyPeerAsync of the same memory: one way, then both
                    ways at once (a stream on each GPU); GB/s per direction
     wait           a round trip across devices: A records, B waits and records, A waits; per
                    round trip, against cuEventRecord + cuStreamWaitEvent across the contexts
     staged         a copy between a CUDA buffer and a stub device's (host) buffer, which goes
                    through gpuflow's pinned stages, against a pinned cuMemcpyDtoHAsync of the
                    same size (the copy it is made of) and against the same done by hand (into
                    pinned memory, then memcpy into the stub's pageable buffer, 8 MiB at a time)
     all-reduce     ncclAllReduce over every GPU on gpuflow's streams against NCCL on raw CUDA
                    streams, at 1 MiB, 64 MiB and 1 GiB; bus bandwidth = 2 (n - 1) / n x bytes / time
                    (skipped without libnccl.so.2; with one GPU the bus bandwidth is 0 by that formula)

   With one GPU, GPU 1 is a second gf_device opened on it (their copies are then device-local).
   Sides alternate batch by batch, after a warm-up; medians of BATCHES batches.
       make bench && build/bench/multi_gpu_bench            (BENCH_QUICK=1: fewer, smaller) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#include "gpuflow.h"
#include "bench_stats.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*stream_create_fn)(CUstream *, unsigned);
typedef CUresult (*sync_fn)(CUstream);
typedef CUresult (*ctx_fn)(CUcontext);
typedef CUresult (*peer_copy_fn)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
typedef CUresult (*d2h_fn)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*event_create_fn)(CUevent *, unsigned);
typedef CUresult (*event_record_fn)(CUevent, CUstream);
typedef CUresult (*wait_event_fn)(CUstream, CUevent, unsigned);
typedef CUresult (*host_alloc_fn)(void **, size_t);
#define RAW_FNS(X) X(cuStreamCreate, stream_create_fn) X(cuStreamSynchronize, sync_fn) X(cuCtxSetCurrent, ctx_fn) \
    X(cuMemcpyPeerAsync, peer_copy_fn) X(cuMemcpyDtoHAsync_v2, d2h_fn) X(cuEventCreate, event_create_fn) \
    X(cuEventRecord, event_record_fn) X(cuStreamWaitEvent, wait_event_fn) X(cuMemAllocHost_v2, host_alloc_fn)
#define RAW_SLOT(name, type) type name;
static struct { RAW_FNS(RAW_SLOT) } raw;
#undef RAW_SLOT

typedef struct ncclComm *nccl_comm;
static struct {
    int (*CommInitAll)(nccl_comm *, int, const int *);
    int (*AllReduce)(const void *, void *, size_t, int, int, nccl_comm, void *);
    int (*GroupStart)(void);
    int (*GroupEnd)(void);
} nccl;

#define MAX_GPUS 8
static int BATCHES = 15;
static size_t PEER_BYTES = (size_t)1 << 30;
static int ROUND_TRIPS = 1000;

static gf_device *dev[MAX_GPUS];
static CUcontext ctx[MAX_GPUS];
static gf_stream *gs[MAX_GPUS];
static CUstream rs[MAX_GPUS];
static gf_buffer *big[2][2];   /* [device][0 src, 1 dst] */
static int ndev;

static void ctx_on(int i) { raw.cuCtxSetCurrent(ctx[i]); }
static CUdeviceptr ptr(gf_buffer *b) { return (CUdeviceptr)gf_buffer_native(b); }

static void measure(double (*fn)(int), int sides, double *med) { measure_sides(fn, sides, BATCHES, med); }

/* one way: GPU 0's buffer to GPU 1's, on GPU 1's stream */
static double batch_peer(int side) {
    double t0 = now_s();
    if (side == 0) { gf_copy_buffer_async(gs[1], big[1][1], 0, big[0][0], 0, PEER_BYTES); gf_stream_synchronize(gs[1]); }
    else { ctx_on(1); raw.cuMemcpyPeerAsync(ptr(big[1][1]), ctx[1], ptr(big[0][0]), ctx[0], PEER_BYTES, rs[1]); raw.cuStreamSynchronize(rs[1]); }
    return now_s() - t0;
}
/* both ways at once: each GPU pulls the other's buffer on its own stream */
static double batch_peer_both(int side) {
    double t0 = now_s();
    if (side == 0) {
        gf_copy_buffer_async(gs[1], big[1][1], 0, big[0][0], 0, PEER_BYTES);
        gf_copy_buffer_async(gs[0], big[0][1], 0, big[1][0], 0, PEER_BYTES);
        gf_stream_synchronize(gs[1]); gf_stream_synchronize(gs[0]);
    } else {
        ctx_on(1); raw.cuMemcpyPeerAsync(ptr(big[1][1]), ctx[1], ptr(big[0][0]), ctx[0], PEER_BYTES, rs[1]);
        ctx_on(0); raw.cuMemcpyPeerAsync(ptr(big[0][1]), ctx[0], ptr(big[1][0]), ctx[1], PEER_BYTES, rs[0]);
        raw.cuStreamSynchronize(rs[1]); raw.cuStreamSynchronize(rs[0]);
    }
    return now_s() - t0;
}

static gf_event *gev[2];
static CUevent rev[2];
static double batch_wait(int side) {
    double t0 = now_s();
    int i;
    for (i = 0; i < ROUND_TRIPS; i++) {
        if (side == 0) {
            gf_event_record(gev[0], gs[0]);
            gf_stream_wait_event(gs[1], gev[0]);
            gf_event_record(gev[1], gs[1]);
            gf_stream_wait_event(gs[0], gev[1]);
        } else {
            ctx_on(0); raw.cuEventRecord(rev[0], rs[0]);
            ctx_on(1); raw.cuStreamWaitEvent(rs[1], rev[0], 0); raw.cuEventRecord(rev[1], rs[1]);
            ctx_on(0); raw.cuStreamWaitEvent(rs[0], rev[1], 0);
        }
    }
    if (side == 0) gf_stream_synchronize(gs[0]); else raw.cuStreamSynchronize(rs[0]);
    return (now_s() - t0) / ROUND_TRIPS;
}

static gf_device *stub;
static gf_buffer *stub_buf;
static void *pinned;
static size_t STAGED_BYTES = (size_t)256 << 20;
static double batch_staged(int side) {
    double t0 = now_s();
    size_t at, n, chunk = (size_t)8 << 20;
    if (side == 0) { gf_copy_buffer_async(gs[0], stub_buf, 0, big[0][0], 0, STAGED_BYTES); gf_stream_synchronize(gs[0]); }
    else if (side == 1) { ctx_on(0); raw.cuMemcpyDtoHAsync_v2(pinned, ptr(big[0][0]), STAGED_BYTES, rs[0]); raw.cuStreamSynchronize(rs[0]); }
    else {   /* by hand: into pinned memory, then into the stub's (pageable) buffer, chunk by chunk */
        ctx_on(0);
        for (at = 0; at < STAGED_BYTES; at += n) {
            n = STAGED_BYTES - at < chunk ? STAGED_BYTES - at : chunk;
            raw.cuMemcpyDtoHAsync_v2(pinned, ptr(big[0][0]) + at, n, rs[0]);
            raw.cuStreamSynchronize(rs[0]);
            memcpy((char *)(uintptr_t)gf_buffer_native(stub_buf) + at, pinned, n);
        }
    }
    return now_s() - t0;
}

static nccl_comm comm[MAX_GPUS];
static gf_buffer *nsend[MAX_GPUS], *nrecv[MAX_GPUS];
static size_t nbytes;
static double batch_allreduce(int side) {
    double t0 = now_s();
    int i;
    nccl.GroupStart();
    for (i = 0; i < ndev; i++)
        nccl.AllReduce((void *)ptr(nsend[i]), (void *)ptr(nrecv[i]), nbytes / 4, 7 /* float32 */, 0 /* sum */, comm[i],
                       side == 0 ? gf_stream_native(gs[i]) : (void *)rs[i]);
    nccl.GroupEnd();
    for (i = 0; i < ndev; i++) { if (side == 0) gf_stream_synchronize(gs[i]); else { ctx_on(i); raw.cuStreamSynchronize(rs[i]); } }
    return now_s() - t0;
}

int main(void) {
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *lib;
    gf_native_device nd;
    double med[3];
    int i, gpus = gf_device_count(GF_BACKEND_CUDA);
    if (getenv("BENCH_QUICK")) { BATCHES = 5; PEER_BYTES = (size_t)64 << 20; ROUND_TRIPS = 100; STAGED_BYTES = (size_t)32 << 20; }
    if (!cu || gpus < 1) { puts("multi_gpu_bench: no CUDA device: nothing to measure"); return 0; }
#define RAW_LOAD(name, type) if (!(*(void **)&raw.name = dlsym(cu, #name))) { printf("no %s\n", #name); return 1; }
    RAW_FNS(RAW_LOAD)
#undef RAW_LOAD
    ndev = gpus < MAX_GPUS ? gpus : MAX_GPUS;
    for (i = 0; i < (ndev < 2 ? 2 : ndev); i++) {
        if (gf_device_open(GF_BACKEND_CUDA, gpus < 2 ? 0 : i, &dev[i]) != GF_OK || gf_stream_create(dev[i], NULL, &gs[i]) != GF_OK) {
            printf("gpuflow: %s\n", gf_last_error());
            return 1;
        }
        gf_device_get_native(dev[i], &nd);
        ctx[i] = (CUcontext)nd.context;
        ctx_on(i);
        raw.cuStreamCreate(&rs[i], CU_STREAM_NON_BLOCKING);
    }
    printf("multi_gpu_bench: %d GPU(s): %s%s; medians of %d batches, sides alternating\n", gpus, gf_device_name(dev[0]),
           gpus < 2 ? " (GPU 1 is a second gf_device on GPU 0)" : "", BATCHES);
    printf("peer access 0->1: %s\n", gf_device_can_access_peer(dev[0], dev[1]) ? "yes" : "no");
    if (gf_device_can_access_peer(dev[0], dev[1])) { gf_device_enable_peer(dev[0], dev[1]); gf_device_enable_peer(dev[1], dev[0]); }
    for (i = 0; i < 2; i++)
        if (gf_buffer_create(dev[i], PEER_BYTES, &big[i][0]) != GF_OK || gf_buffer_create(dev[i], PEER_BYTES, &big[i][1]) != GF_OK) {
            printf("gpuflow: %s\n", gf_last_error());
            return 1;
        }
    measure(batch_peer, 2, med);
    printf("%-36s gpuflow %8.1f GB/s raw %8.1f GB/s ratio %.3f (gpuflow/raw)\n", "peer copy, one way",
           PEER_BYTES / med[0] / 1e9, PEER_BYTES / med[1] / 1e9, med[1] / med[0]);
    measure(batch_peer_both, 2, med);
    printf("%-36s gpuflow %8.1f GB/s raw %8.1f GB/s ratio %.3f (per direction; gpuflow/raw)\n", "peer copy, both ways at once",
           PEER_BYTES / med[0] / 1e9, PEER_BYTES / med[1] / 1e9, med[1] / med[0]);
    gf_event_create(dev[0], 0, &gev[0]);
    gf_event_create(dev[1], 0, &gev[1]);
    ctx_on(0); raw.cuEventCreate(&rev[0], CU_EVENT_DISABLE_TIMING);
    ctx_on(1); raw.cuEventCreate(&rev[1], CU_EVENT_DISABLE_TIMING);
    measure(batch_wait, 2, med);
    printf("%-36s gpuflow %8.3f us   raw %8.3f us   ratio %.3f\n", "wait round trip across devices", med[0] * 1e6, med[1] * 1e6, med[0] / med[1]);
    if (gf_device_open(GF_BACKEND_STUB, 0, &stub) == GF_OK && gf_buffer_create(stub, STAGED_BYTES, &stub_buf) == GF_OK &&
        (ctx_on(0), raw.cuMemAllocHost_v2(&pinned, STAGED_BYTES)) == CUDA_SUCCESS) {
        gf_stream_stats st;
        measure(batch_staged, 3, med);
        gf_stream_get_stats(gs[0], &st);
        printf("%-36s gpuflow %8.1f GB/s raw %8.1f GB/s ratio %.3f (CUDA->stub through stages / pinned DtoH alone)\n", "staged copy to another backend",
               STAGED_BYTES / med[0] / 1e9, STAGED_BYTES / med[1] / 1e9, med[1] / med[0]);
        printf("%-36s gpuflow %8.1f GB/s raw %8.1f GB/s ratio %.3f (against DtoH + memcpy by hand; %llu copies staged)\n", "",
               STAGED_BYTES / med[0] / 1e9, STAGED_BYTES / med[2] / 1e9, med[2] / med[0], (unsigned long long)st.staged_copies);
    }
    if ((lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL)) != NULL) {
        static const size_t sizes[] = { (size_t)1 << 20, (size_t)64 << 20, (size_t)1 << 30 };
        int ordinals[MAX_GPUS], k;
        *(void **)&nccl.CommInitAll = dlsym(lib, "ncclCommInitAll");
        *(void **)&nccl.AllReduce = dlsym(lib, "ncclAllReduce");
        *(void **)&nccl.GroupStart = dlsym(lib, "ncclGroupStart");
        *(void **)&nccl.GroupEnd = dlsym(lib, "ncclGroupEnd");
        for (i = 0; i < ndev; i++) ordinals[i] = i;
        if (!nccl.CommInitAll || nccl.CommInitAll(comm, ndev, ordinals) != 0) { puts("ncclCommInitAll failed"); return 1; }
        for (k = 0; k < 3; k++) {
            double factor = ndev > 1 ? 2.0 * (ndev - 1) / ndev : 0.0;
            nbytes = getenv("BENCH_QUICK") && sizes[k] > ((size_t)64 << 20) ? (size_t)64 << 20 : sizes[k];
            for (i = 0; i < ndev; i++)
                if (gf_buffer_create(dev[i], nbytes, &nsend[i]) != GF_OK || gf_buffer_create(dev[i], nbytes, &nrecv[i]) != GF_OK) return 1;
            measure(batch_allreduce, 2, med);
            printf("all-reduce %5zu MiB, %d GPU(s)         gpuflow %8.2f us (bus %6.1f GB/s) raw %8.2f us (bus %6.1f GB/s) ratio %.3f (raw/gpuflow time)\n",
                   nbytes >> 20, ndev, med[0] * 1e6, factor * nbytes / med[0] / 1e9, med[1] * 1e6, factor * nbytes / med[1] / 1e9, med[1] / med[0]);
            for (i = 0; i < ndev; i++) { gf_buffer_destroy(nsend[i]); gf_buffer_destroy(nrecv[i]); }
        }
    } else puts("all-reduce: libnccl.so.2 not found: skipped");
    return 0;
}
