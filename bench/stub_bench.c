/* stub_bench.c -- the CPU stub's kernels against PoCL (gpuflow's OpenCL backend) on the same
   machine, in the same run: the teaching path's speed.

   Kernels written once in the dialect, warm, one launch each, timed from gf_launch to the
   end of gf_stream_synchronize (median of REPS):
     vector_add      examples/vector_add.gfk, 2^12 and 2^20 floats, 256-thread blocks (no barrier)
     block_sum       examples/reduce.gfk, 2^12, 2^20 and 2^24 floats, 256-thread blocks, a block
                     kernel: 10 regions per block, each a loop over the threads on the stub
     block_sum_sync  bench/block_sum_sync.gfk, the same written with 9 gf_block_sync per block
                     (every thread of a block a fiber on the stub)
   The stub runs with GPUFLOW_STUB_THREADS = 1, 2 and every core (a device opened for each);
   PoCL with its own threads. Each line: the time, the stub / PoCL ratio.
       make bench && build/bench/stub_bench          (BENCH_QUICK=1: fewer reps, no 2^24) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_OPENCL
#include "gpuflow.h"
#include "bench_stats.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char source[] =
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "../examples/vector_add.gfk"
#include "../examples/reduce.gfk"
#include "block_sum_sync.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "../examples/vector_add.gfk"
#include "../examples/reduce.gfk"
#include "block_sum_sync.gfk"
#undef GF_KERNELS
enum { KERNELS = 3 };
static const char *const names[KERNELS] = { "vector_add", "block_sum", "block_sum_sync" };

static int REPS = 7;

typedef struct setup { gf_device *dev; gf_stream *s; gf_module *m; gf_kernel *k[KERNELS]; gf_buffer *a, *b, *c, *blocks; unsigned n; } setup;

static int open_setup(setup *u, gf_backend backend, unsigned n) {
    static const gf_stub_kernel stubs[KERNELS] = { GF_STUB_KERNEL(vector_add), GF_STUB_KERNEL(block_sum), GF_STUB_KERNEL(block_sum_sync) };
    gf_module_desc md;
    float *host;
    unsigned i;
    int k;
    memset(u, 0, sizeof *u);
    memset(&md, 0, sizeof md);
    md.source = source; md.source_name = "bench.gfk";
    md.stub_kernels = stubs; md.stub_kernel_count = KERNELS;
    u->n = n;
    if (gf_device_open(backend, 0, &u->dev) != GF_OK || gf_stream_create(u->dev, NULL, &u->s) != GF_OK ||
        gf_module_load(u->dev, &md, &u->m) != GF_OK)
        return 0;
    for (k = 0; k < KERNELS; k++) if (gf_kernel_get(u->m, names[k], &u->k[k]) != GF_OK) return 0;
    if (gf_buffer_create(u->dev, (size_t)n * 4, &u->a) != GF_OK ||
        gf_buffer_create(u->dev, (size_t)n * 4, &u->b) != GF_OK || gf_buffer_create(u->dev, (size_t)n * 4, &u->c) != GF_OK ||
        gf_buffer_create(u->dev, (size_t)(n / 256 + 1) * 4, &u->blocks) != GF_OK)
        return 0;
    if (!(host = (float *)malloc((size_t)n * 4))) return 0;
    for (i = 0; i < n; i++) host[i] = 1.0f;
    gf_copy_to_device(u->a, 0, host, (size_t)n * 4);
    gf_copy_to_device(u->b, 0, host, (size_t)n * 4);
    free(host);
    return 1;
}
static void close_setup(setup *u) {
    gf_buffer_destroy(u->a); gf_buffer_destroy(u->b); gf_buffer_destroy(u->c); gf_buffer_destroy(u->blocks);
    if (u->m) gf_module_destroy(u->m);
    if (u->s) gf_stream_destroy(u->s);
    if (u->dev) gf_device_close(u->dev);
}
/* seconds of one launch (median of REPS after a warm-up) of names[kernel] */
static double time_kernel(setup *u, int kernel) {
    gf_launch_dims d = { { u->n / 256, 1, 1 }, { 256, 1, 1 }, 0 };
    gf_arg add[4] = { GF_ARG_BUFFER(NULL), GF_ARG_BUFFER(NULL), GF_ARG_BUFFER(NULL), GF_ARG(u->n) };
    gf_arg sum[3] = { GF_ARG_BUFFER(NULL), GF_ARG_BUFFER(NULL), GF_ARG(u->n) };
    double t[64];
    int r;
    add[0].buffer = u->a; add[1].buffer = u->b; add[2].buffer = u->c;
    sum[0].buffer = u->a; sum[1].buffer = u->blocks;
    for (r = -1; r < REPS; r++) {
        double t0 = now_s();
        if (kernel == 0) gf_launch(u->s, u->k[0], d, add, 4); else gf_launch(u->s, u->k[kernel], d, sum, 3);
        if (gf_stream_synchronize(u->s) != GF_OK) { printf("failed: %s\n", gf_last_error()); return 0; }
        if (r >= 0) t[r] = now_s() - t0;
    }
    return median(t, REPS);
}

int main(void) {
    unsigned sizes[3] = { 1u << 12, 1u << 20, 1u << 24 };   /* 2^12: 16 blocks, where a launch's own cost shows */
    static const int log2n[3] = { 12, 20, 24 };
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN), threads[3], nt = 0, k, z, i;
    double pocl[3][KERNELS], stub;
    setup u;
    char v[16];
    if (getenv("BENCH_QUICK")) { REPS = 3; sizes[2] = 0; }
    threads[nt++] = 1;
    if (cores >= 2) threads[nt++] = 2;
    if (cores > 2) threads[nt++] = cores;
    setenv("GPUFLOW_OPENCL_PLATFORM", "Portable", 0);
    printf("stub_bench: %d cores; one launch, warm, median of %d; stub / PoCL beside each\n", cores, REPS);
    for (z = 0; z < 3 && sizes[z]; z++) {
        memset(pocl, 0, sizeof pocl);
        if (open_setup(&u, GF_BACKEND_OPENCL, sizes[z])) {
            for (k = 0; k < KERNELS; k++) pocl[z][k] = time_kernel(&u, k);
            printf("PoCL (%s), n = 2^%d: vector_add %.3f ms, block_sum %.3f ms, block_sum_sync %.3f ms\n", gf_device_name(u.dev), log2n[z],
                   pocl[z][0] * 1e3, pocl[z][1] * 1e3, pocl[z][2] * 1e3);
        } else printf("PoCL: not here (%s)\n", gf_last_error());
        close_setup(&u);
        for (i = 0; i < nt; i++) {
            snprintf(v, sizeof v, "%d", threads[i]);
            setenv("GPUFLOW_STUB_THREADS", v, 1);
            if (!open_setup(&u, GF_BACKEND_STUB, sizes[z])) { printf("stub: %s\n", gf_last_error()); return 1; }
            for (k = 0; k < KERNELS; k++) {
                if (z == 2 && k == 0) continue;   /* 2^24: the reduction only */
                stub = time_kernel(&u, k);
                printf("  stub, %2d thread%s, %-14s n = 2^%d: %9.3f ms", threads[i], threads[i] == 1 ? " " : "s", names[k], log2n[z], stub * 1e3);
                if (pocl[z][k] > 0) printf("   stub / PoCL %.2f", stub / pocl[z][k]);
                printf("\n");
            }
            close_setup(&u);
        }
    }
    return 0;
}
