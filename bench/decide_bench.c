/* decide_bench.c -- a loop whose body decides whether to go on, four ways, per iteration:

     host-checked  launch the body, read the flag back, synchronize, decide (what a program
                   without graphs that decide does)
     blind         the body launched ITER times with no check, one synchronize at the end
     while graph   one graph with gf_stream_begin_while / _end_while, launched once
     unrolled      the body captured ITER times into a plain graph, launched once
     raw WHILE     (CUDA) the while graph's node built with the driver API alone: the same
                   kernels, its handle set by the same kernel, captured by hand

   The body is two small kernels (tests/decide.gfk): cd_add counts, cd_step decrements the
   counter and writes the flag the loop reads. Medians of REPS runs of ITER iterations each;
   the counter is checked after every run. Each line: microseconds per iteration, and the
   while graph's figure against the others from the same run.
       make bench && build/bench/decide_bench [stub|opencl|cuda]      (BENCH_QUICK=1: fewer) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#define GPUFLOW_OPENCL
#include "gpuflow.h"
#include "bench_stats.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char source[] =
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "../tests/decide.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "../tests/decide.gfk"
#undef GF_KERNELS

static gf_stream *s;
static gf_kernel *step, *add;
static gf_buffer *st;
static int ITER = 1000, REPS = 7;

static gf_launch_dims one(void) {
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    d.block[0] = d.block[1] = d.block[2] = 1;
    return d;
}
static int body(void) {
    int at = 4, v = 1;
    gf_arg a1[3] = { GF_ARG_BUFFER(st), GF_ARG(at), GF_ARG(v) }, a2[1] = { GF_ARG_BUFFER(st) };
    return gf_launch(s, add, one(), a1, 3) == GF_OK && gf_launch(s, step, one(), a2, 1) == GF_OK;
}
static int reset(void) {
    int w[8] = { 0 };
    w[0] = ITER; w[1] = 1;
    return gf_copy_to_device_async(s, st, 0, w, sizeof w) == GF_OK && gf_stream_synchronize(s) == GF_OK;
}
static int counted(void) {
    int w[8];
    return gf_copy_to_host_async(s, w, st, 0, sizeof w) == GF_OK && gf_stream_synchronize(s) == GF_OK && w[4] == ITER && w[0] == 0;
}
/* One run of a way; microseconds per iteration, or -1 (a failure, said). */
static double run_host_checked(void) {
    int i, flag = 1;
    double t0;
    if (!reset()) return -1;
    t0 = (now_s() * 1e6);
    for (i = 0; flag && i < ITER + 1; i++)
        if (!body() || gf_copy_to_host_async(s, &flag, st, 4, sizeof flag) != GF_OK || gf_stream_synchronize(s) != GF_OK) return -1;
    t0 = ((now_s() * 1e6) - t0) / ITER;
    return counted() ? t0 : -1;
}
static double run_blind(void) {
    int i;
    double t0;
    if (!reset()) return -1;
    t0 = (now_s() * 1e6);
    for (i = 0; i < ITER; i++) if (!body()) return -1;
    if (gf_stream_synchronize(s) != GF_OK) return -1;
    t0 = ((now_s() * 1e6) - t0) / ITER;
    return counted() ? t0 : -1;
}
static double run_graph(gf_graph *g) {
    double t0;
    if (!reset()) return -1;
    t0 = (now_s() * 1e6);
    if (gf_graph_launch(g, s) != GF_OK || gf_stream_synchronize(s) != GF_OK) return -1;
    t0 = ((now_s() * 1e6) - t0) / ITER;
    return counted() ? t0 : -1;
}
/* The raw figure: the same WHILE node built with the driver API alone (the entry points gpuflow
   loaded, the same three kernels: the body's two and the one that reads the flag and sets the
   node's handle, which a program needs when its own kernels do not set it), captured by hand
   as the driver documents: a handle, the setting kernel, the conditional node, its body
   captured from a stream of its own. CUDA only; NULL where it cannot be built. */
static CUgraphExec raw_build(gf_device *dev) {
    gf__cuda_device *d = (gf__cuda_device *)dev->native;
    CUstream cs = (CUstream)s->native, body = NULL;
    CUgraph graph = NULL, body_graph = NULL;
    CUgraphExec exec = NULL;
    CUgraphConditionalHandle h = 0;
    CUgraphNodeParams np;
    CUgraphNode node;
    CUstreamCaptureStatus status;
    cuuint64_t id;
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t count = 0;
    CUdeviceptr base = (CUdeviceptr)st->native, flag = base + 4;
    unsigned zero = 0, negate = 1;   /* the handle = (flag == 0) ^ 1: flag != 0 */
    int at = 4, v = 1, ok;
    void *set_args[4], *add_args[3], *step_args[1];
    CUfunction fset = d->cond_set, fadd = (CUfunction)add->native, fstep = (CUfunction)step->native;
    set_args[0] = &h; set_args[1] = &flag; set_args[2] = &zero; set_args[3] = &negate;
    add_args[0] = &base; add_args[1] = &at; add_args[2] = &v;
    step_args[0] = &base;
    if (!fset || gf__cu.StreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS) return NULL;
    ok = gf__cu.StreamGetCaptureInfo(cs, &status, &id, &graph, &deps, &edges, &count) == CUDA_SUCCESS &&
         gf__cu.GraphConditionalHandleCreate(&h, graph, d->ctx, 0, 0) == CUDA_SUCCESS &&
         gf__cu.LaunchKernel(fset, 1, 1, 1, 1, 1, 1, 0, cs, set_args, NULL) == CUDA_SUCCESS &&
         gf__cu.StreamGetCaptureInfo(cs, &status, &id, &graph, &deps, &edges, &count) == CUDA_SUCCESS;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = h;
    np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    np.conditional.size = 1;
    np.conditional.ctx = d->ctx;
    ok = ok && gf__cu.GraphAddNode(&node, graph, deps, edges, count, &np) == CUDA_SUCCESS &&
         gf__cu.StreamUpdateCaptureDependencies(cs, &node, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES) == CUDA_SUCCESS &&
         gf__cu.StreamCreateWithPriority(&body, CU_STREAM_NON_BLOCKING, 0) == CUDA_SUCCESS &&
         gf__cu.StreamBeginCaptureToGraph(body, np.conditional.phGraph_out[0], NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS &&
         gf__cu.LaunchKernel(fadd, 1, 1, 1, 1, 1, 1, 0, body, add_args, NULL) == CUDA_SUCCESS &&
         gf__cu.LaunchKernel(fstep, 1, 1, 1, 1, 1, 1, 0, body, step_args, NULL) == CUDA_SUCCESS &&
         gf__cu.LaunchKernel(fset, 1, 1, 1, 1, 1, 1, 0, body, set_args, NULL) == CUDA_SUCCESS &&
         gf__cu.StreamEndCapture(body, &body_graph) == CUDA_SUCCESS;
    if (body) (void)gf__cu.StreamDestroy(body);
    graph = NULL;
    ok = gf__cu.StreamEndCapture(cs, &graph) == CUDA_SUCCESS && ok && gf__cu.GraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS;
    if (graph) (void)gf__cu.GraphDestroy(graph);
    return ok ? exec : NULL;
}
static CUgraphExec raw_exec;
static double run_raw(void) {
    double t0;
    if (!reset()) return -1;
    t0 = (now_s() * 1e6);
    if (gf__cu.GraphLaunch(raw_exec, (CUstream)s->native) != CUDA_SUCCESS || gf__cu.StreamSynchronize((CUstream)s->native) != CUDA_SUCCESS) return -1;
    t0 = ((now_s() * 1e6) - t0) / ITER;
    return counted() ? t0 : -1;
}
static double median_of(double (*fn)(void), gf_graph *g, double (*gfn)(gf_graph *)) {
    double v[32];
    int i;
    for (i = 0; i < REPS; i++) if ((v[i] = fn ? fn() : gfn(g)) < 0) return -1;
    return median(v, REPS);
}

int main(int argc, char **argv) {
    static const gf_stub_kernel stubs[] = { GF_STUB_KERNEL(cd_step), GF_STUB_KERNEL(cd_add), GF_STUB_KERNEL(cd_slow), GF_STUB_KERNEL(cd_feed) };
    gf_backend backend = GF_BACKEND_AUTO;
    gf_device *dev;
    gf_module *mod;
    gf_module_desc md;
    gf_graph *loop = NULL, *unrolled = NULL;
    gf_graph_info info;
    double host, blind, wl, unr = -1, raw = -1;
    int i;
    if (argc > 1) backend = !strcmp(argv[1], "stub") ? GF_BACKEND_STUB : !strcmp(argv[1], "opencl") ? GF_BACKEND_OPENCL : GF_BACKEND_CUDA;
    if (getenv("BENCH_QUICK")) { ITER = 100; REPS = 3; }
    if (gf_device_open(backend, 0, &dev) != GF_OK) { printf("decide_bench: no device: %s\n", gf_last_error()); return 0; }
    if (gf_device_backend(dev) == GF_BACKEND_STUB && !getenv("BENCH_QUICK")) ITER = 200;   /* the stub's figure is per iteration either way */
    memset(&md, 0, sizeof md);
    md.source = source; md.source_name = "decide.gfk"; md.stub_kernels = stubs; md.stub_kernel_count = 4;
    if (gf_stream_create(dev, NULL, &s) != GF_OK || gf_module_load(dev, &md, &mod) != GF_OK || gf_kernel_get(mod, "cd_step", &step) != GF_OK ||
        gf_kernel_get(mod, "cd_add", &add) != GF_OK || gf_buffer_create(dev, 64, &st) != GF_OK) {
        printf("decide_bench: setup failed: %s\n", gf_last_error());
        return 1;
    }
    if (gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) != GF_OK || gf_stream_begin_while(s, st, 4) != GF_OK || !body() ||
        gf_stream_end_while(s) != GF_OK || gf_stream_end_capture(s, &loop) != GF_OK) {
        printf("decide_bench: the while graph: %s\n", gf_last_error());
        return 1;
    }
    if (gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) == GF_OK) {
        for (i = 0; i < ITER && body(); i++) {}
        if (gf_stream_end_capture(s, &unrolled) != GF_OK) unrolled = NULL;
    }
    gf_graph_info(loop, &info);
    if (gf_device_backend(dev) == GF_BACKEND_CUDA && info.native && (raw_exec = raw_build(dev)) == NULL)
        printf("decide_bench: the raw WHILE node could not be built\n");
    if (raw_exec) (void)run_raw();
    (void)run_host_checked(); (void)run_blind(); (void)run_graph(loop);   /* warm-up */
    if (unrolled) (void)run_graph(unrolled);
    host = median_of(run_host_checked, NULL, NULL);
    blind = median_of(run_blind, NULL, NULL);
    wl = median_of(NULL, loop, run_graph);
    if (unrolled) unr = median_of(NULL, unrolled, run_graph);
    if (raw_exec) raw = median_of(run_raw, NULL, NULL);
    if (host < 0 || blind < 0 || wl < 0) { printf("decide_bench: a run failed or counted wrong: %s\n", gf_last_error()); return 1; }
    printf("decide_bench on %s (%s, the while graph %s), %d iterations of a 2-kernel body, median of %d, us per iteration:\n",
           gf_device_name(dev), gf_backend_name(gf_device_backend(dev)), info.native ? "native: conditional nodes" : "recorded: the replay reads the flag", ITER, REPS);
    printf("  host-checked  %9.3f   (while graph / this: %.3f)\n", host, wl / host);
    printf("  blind         %9.3f   (while graph / this: %.3f)\n", blind, wl / blind);
    printf("  while graph   %9.3f\n", wl);
    if (unr >= 0) printf("  unrolled      %9.3f   (while graph / this: %.3f)\n", unr, wl / unr);
    if (raw >= 0) printf("  raw WHILE     %9.3f   (while graph / this: %.3f; the driver API alone, the same three kernels)\n", raw, wl / raw);
    if (raw_exec) (void)gf__cu.GraphExecDestroy(raw_exec);
    gf_graph_destroy(loop);
    if (unrolled) gf_graph_destroy(unrolled);
    gf_buffer_destroy(st);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return 0;
}
