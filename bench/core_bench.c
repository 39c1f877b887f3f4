/* core_bench.c -- what the core's reuse buys, measured in one run.

   Prints, for the device GF_BACKEND_AUTO opens (GPUFLOW_BACKEND=stub|opencl|cuda picks one):
     - stream-pool acquire+release vs stream create+destroy
     - event-pool acquire+release vs event create+destroy
     - replay of a 1000-node graph vs issuing the same 1000 operations through the API
   each as time per operation, both figures from this run, and their ratio. Medians of
   several batches; nothing here is asserted.

   Build and run:
       cc -std=c99 -O2 -I. bench/core_bench.c -o core_bench -pthread -ldl && ./core_bench
*/
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"
#ifdef GPUFLOW_CUDA
#include "gpuflow_cuda.h"
#endif
#ifdef GPUFLOW_OPENCL
#include "gpuflow_opencl.h"
#endif
#ifdef GPUFLOW_HIP
#include "gpuflow_hip.h"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); exit(1); } } while (0)

enum { BATCHES = 7, NODES = 1000 };

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, by_value); return v[n / 2]; }
static void report(const char *what, const char *ours, double ours_us, const char *base, double base_us) {
    printf("%-34s %-26s %10.3f us   %-26s %10.3f us   ratio %.4f\n", what, ours, ours_us, base, base_us, ours_us / base_us);
}

static gf_device *dev;
static gf_stream_pool *pool;
static gf_event_pool *events;
static gf_stream *stream;
static gf_buffer *buf;

static double pool_round(int n) {
    double t = now_us();
    int i;
    for (i = 0; i < n; i++) { gf_stream *s; CHECK(gf_stream_pool_acquire(pool, NULL, &s)); CHECK(gf_stream_pool_release(pool, s)); }
    return (now_us() - t) / n;
}
static double stream_round(int n) {
    double t = now_us();
    int i;
    for (i = 0; i < n; i++) { gf_stream *s; CHECK(gf_stream_create(dev, NULL, &s)); gf_stream_destroy(s); }
    return (now_us() - t) / n;
}
static double event_pool_round(int n) {
    double t = now_us();
    int i;
    for (i = 0; i < n; i++) { gf_event *e; CHECK(gf_event_pool_acquire(events, 0, &e)); CHECK(gf_event_pool_release(events, e)); }
    return (now_us() - t) / n;
}
static double event_round(int n) {
    double t = now_us();
    int i;
    for (i = 0; i < n; i++) { gf_event *e; CHECK(gf_event_create(dev, 0, &e)); gf_event_destroy(e); }
    return (now_us() - t) / n;
}
static gf_result thousand_fills(gf_stream *s, void *user) {
    int i;
    (void)user;
    for (i = 0; i < NODES; i++) { gf_result r = gf_fill_async(s, buf, (size_t)(i % 64) * 16, (unsigned char)i, 16); if (r) return r; }
    return GF_OK;
}
/* Host time to issue the work plus the time until it has run, per node. */
static double direct_round(void) {
    double t = now_us();
    CHECK(thousand_fills(stream, NULL));
    CHECK(gf_stream_synchronize(stream));
    return (now_us() - t) / NODES;
}
static double replay_round(gf_graph *g) {
    double t = now_us();
    CHECK(gf_graph_launch(g, stream));
    CHECK(gf_stream_synchronize(stream));
    return (now_us() - t) / NODES;
}

int main(void) {
    double a[BATCHES], b[BATCHES];
    gf_graph *g;
    gf_graph_info info;
    int i;
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    printf("core_bench on %s (%s backend), medians of %d batches\n", gf_device_name(dev),
           gf_backend_name(gf_device_backend(dev)), BATCHES);
    CHECK(gf_stream_pool_create(dev, NULL, &pool));
    CHECK(gf_event_pool_create(dev, NULL, &events));
    CHECK(gf_stream_create(dev, NULL, &stream));
    CHECK(gf_buffer_create(dev, 1024, &buf));

    for (i = 0; i < BATCHES; i++) { a[i] = pool_round(100000); b[i] = stream_round(200); }
    report("stream: reuse vs make", "pool acquire+release", median(a, BATCHES), "stream create+destroy", median(b, BATCHES));
    for (i = 0; i < BATCHES; i++) { a[i] = event_pool_round(100000); b[i] = event_round(2000); }
    report("event: reuse vs make", "event-pool acquire+release", median(a, BATCHES), "event create+destroy", median(b, BATCHES));

    CHECK(gf_graph_capture(stream, 1, thousand_fills, NULL, &g));
    CHECK(gf_graph_info(g, &info));
    for (i = 0; i < BATCHES; i++) { a[i] = replay_round(g); b[i] = direct_round(); }
    printf("(graph: %d nodes, %s)\n", info.nodes, info.native ? "native" : "recorded");
    report("1000 fills: graph vs one by one", "graph replay, per node", median(a, BATCHES), "API calls, per node", median(b, BATCHES));

    gf_graph_destroy(g);
    gf_buffer_destroy(buf);
    gf_stream_destroy(stream);
    gf_event_pool_destroy(events);
    gf_stream_pool_destroy(pool);
    gf_device_close(dev);
    return 0;
}
