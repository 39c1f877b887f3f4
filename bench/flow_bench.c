/* flow_bench.c -- a flow of 100 tasks run 1000 times: as a flow every time (gf_flow_run), and
   as a flow that becomes a graph by itself (gf_flow_desc.graph_after = 1: the first run goes as
   a flow, the second captures it, the rest replay the graph), in one run.

   ./flow_bench [stub|cuda|opencl|hip]      (default: the device GF_BACKEND_AUTO opens)

   The flow: 10 chains of 10 tasks, each task one launch of an empty kernel (one block of 32
   threads) on the stream the pool gives its chain; 90 edges, all within chains, so a run is
   10 streams' worth of launches and no waits across them. Timed: 10 batches of 100 runs, each
   batch ended by gf_stream_pool_synchronize; medians of the batches, per run and per task. The
   first batch of each side is a warm-up (the graph side's capture is in it) and not counted.
   Nothing here is asserted.

   Build (the Makefile's bench rule):
       cc -std=c99 -O2 -I. -isystem /usr/local/cuda/include bench/flow_bench.c -o build/bench/flow_bench -pthread -ldl -lm
*/
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#if defined(__has_include)
#  if __has_include(<CL/cl.h>)
#    define GPUFLOW_OPENCL
#  endif
#endif
#include "gpuflow.h"
#include "tests/test_kernels.h"
#include "bench/bench.h"

enum { CHAINS = 10, DEPTH = 10, TASKS = CHAINS * DEPTH, BATCHES = 10, RUNS = 100 };

static gf_kernel *empty;

static gf_result launch_empty(gf_stream *s, void *user) {
    gf_launch_dims d;
    (void)user;
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    d.block[0] = 32; d.block[1] = d.block[2] = 1;
    return gf_launch(s, empty, d, NULL, 0);
}

/* us per run, median over the batches after the first. */
static double time_flow(gf_device *dev, gf_stream_pool *pool, int graph_after, gf_flow_stats *st) {
    gf_flow_desc fd;
    gf_flow *flow;
    gf_task t[TASKS];
    double per[BATCHES];
    int c, i, b;
    memset(&fd, 0, sizeof fd);
    fd.label = graph_after ? "graphed" : "plain";
    fd.graph_after = graph_after;
    CHECK(gf_flow_create(dev, &fd, &flow));
    for (c = 0; c < CHAINS; c++)
        for (i = 0; i < DEPTH; i++) {
            CHECK(gf_flow_add(flow, NULL, launch_empty, NULL, &t[c * DEPTH + i]));
            if (i) CHECK(gf_flow_depend(flow, t[c * DEPTH + i - 1], t[c * DEPTH + i]));
        }
    for (b = 0; b < BATCHES; b++) {
        double t0 = bench_now_us();
        for (i = 0; i < RUNS; i++) CHECK(gf_flow_run(flow, pool));
        CHECK(gf_stream_pool_synchronize(pool));
        per[b] = (bench_now_us() - t0) / RUNS;
    }
    CHECK(gf_flow_get_stats(flow, st));
    gf_flow_destroy(flow);
    return bench_median(per + 1, BATCHES - 1);   /* the first batch is the warm-up */
}

int main(int argc, char **argv) {
    gf_backend b = bench_backend(argc, argv, "flow_bench [stub|cuda|opencl|hip]");
    gf_device *dev;
    gf_module *mod;
    gf_stream_pool *pool;
    gf_stream_pool_desc pd;
    gf_flow_stats plain_st, graph_st;
    double plain, graphed;
    CHECK(gf_device_open(b, 0, &dev));
    CHECK(gf_module_load(dev, &tk_module, &mod));
    CHECK(gf_kernel_get(mod, "empty", &empty));
    memset(&pd, 0, sizeof pd);
    pd.count = CHAINS;
    CHECK(gf_stream_pool_create(dev, &pd, &pool));
    plain = time_flow(dev, pool, 0, &plain_st);
    graphed = time_flow(dev, pool, 1, &graph_st);
    printf("flow_bench on %s (%s backend): %d tasks (%d chains of %d launches), %d runs, medians of %d batches of %d\n",
           gf_device_name(dev), gf_backend_name(gf_device_backend(dev)), TASKS, CHAINS, DEPTH, BATCHES * RUNS, BATCHES - 1, RUNS);
    printf("gf_flow_run, as a flow:        %10.2f us per run  %8.3f us per task  (graph runs %llu)\n", plain, plain / TASKS,
           (unsigned long long)plain_st.graph_runs);
    printf("gf_flow_run, graph_after = 1:  %10.2f us per run  %8.3f us per task  (graph runs %llu, captures %llu)\n", graphed, graphed / TASKS,
           (unsigned long long)graph_st.graph_runs, (unsigned long long)graph_st.captures);
    printf("graph / flow: %.3f\n", graphed / plain);
    gf_stream_pool_destroy(pool);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}
