/* race_bench.c -- what the race detector costs per operation, on and off, in one run.

   ./race_bench [stub|cuda|opencl]      (default: the device GF_BACKEND_AUTO opens)

   Each benchmark runs the same work with the detector off and on (gf_race_check_enable on one
   device, batches alternating, medians of BATCHES) and prints both times per operation, the
   ratio on / off and the difference, the detector's own cost:
     - two streams trading a buffer: fill on A, event, B waits and copies it to a second
       buffer, event, A waits; six operations a round (fill, copy, two records, two waits);
       host time to issue them, and issue plus completion;
     - fills on one stream over 16 buffers (the cheapest case: stream order covers all);
     - replay of a captured graph of 1000 fills (the detector replays the capture's accesses),
       per node.
   A correct program is run throughout, so the detector must report no race; the count is
   printed. Nothing here is asserted.

   Build (the Makefile's bench rule: CUDA and, where its headers are, OpenCL compiled in):
       cc -std=c99 -O2 -I. -isystem /usr/local/cuda/include bench/race_bench.c -o build/bench/race_bench -pthread -ldl
*/
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#if defined(__has_include)
#  if __has_include(<CL/cl.h>)
#    define GPUFLOW_OPENCL
#  endif
#endif
#include "gpuflow.h"
#include "bench/bench.h"

enum { BATCHES = 11, ROUNDS = 10000, BUFFERS = 16, BYTES = 4096, NODES = 1000 };

static void report(const char *what, double on_us, double off_us) {
    printf("%-56s on %9.3f us   off %9.3f us   ratio %.3f   detector %+8.1f ns/op\n",
           what, on_us, off_us, on_us / off_us, (on_us - off_us) * 1e3);
}

static gf_device *dev;
static gf_stream *a, *b;
static gf_event *a_done, *b_done;
static gf_buffer *bufs[BUFFERS];
static unsigned long long warnings;

static void count_warnings(void *user, gf_log_level level, gf_result code, const char *message) {
    (void)user;
    (void)code;
    if (level == GF_LOG_WARNING && strncmp(message, "race:", 5) == 0) {
        if (!warnings++) fprintf(stderr, "unexpected: %s\n", message);
    }
}

/* Each benchmark: us per operation to issue them (*issue), and to issue them and see them
   complete (returned). Two streams trading buffer 0 into buffer 1: six operations a round. */
static double trade(int on, double *issue) {
    double t0, t1;
    int i;
    CHECK(gf_race_check_enable(dev, on ? GF_RACE_CHECK_ON : 0));
    t0 = bench_now_us();
    for (i = 0; i < ROUNDS; i++) {
        CHECK(gf_fill_async(a, bufs[0], 0, (unsigned char)i, BYTES));
        CHECK(gf_event_record(a_done, a));
        CHECK(gf_stream_wait_event(b, a_done));
        CHECK(gf_copy_buffer_async(b, bufs[1], 0, bufs[0], 0, BYTES));
        CHECK(gf_event_record(b_done, b));
        CHECK(gf_stream_wait_event(a, b_done));   /* the next fill waits for the copy's read */
    }
    t1 = bench_now_us();
    CHECK(gf_stream_synchronize(a));
    CHECK(gf_stream_synchronize(b));
    *issue = (t1 - t0) / (ROUNDS * 6.0);
    return (bench_now_us() - t0) / (ROUNDS * 6.0);
}

static double fills(int on, double *issue) {
    double t0, t1;
    int i;
    CHECK(gf_race_check_enable(dev, on ? GF_RACE_CHECK_ON : 0));
    t0 = bench_now_us();
    for (i = 0; i < ROUNDS; i++) CHECK(gf_fill_async(a, bufs[i % BUFFERS], 0, (unsigned char)i, BYTES));
    t1 = bench_now_us();
    CHECK(gf_stream_synchronize(a));
    *issue = (t1 - t0) / ROUNDS;
    return (bench_now_us() - t0) / ROUNDS;
}

static gf_result thousand_fills(gf_stream *s, void *user) {
    int i;
    (void)user;
    for (i = 0; i < NODES; i++) {
        gf_result r = gf_fill_async(s, bufs[i % BUFFERS], (size_t)(i / BUFFERS % 16) * 256, (unsigned char)i, 256);
        if (r != GF_OK) return r;
    }
    return GF_OK;
}
static gf_graph *graph;
static double replay(int on, double *issue) {
    double t0, t1;
    CHECK(gf_race_check_enable(dev, on ? GF_RACE_CHECK_ON : 0));
    t0 = bench_now_us();
    CHECK(gf_graph_launch(graph, a));
    t1 = bench_now_us();
    CHECK(gf_stream_synchronize(a));
    *issue = (t1 - t0) / NODES;
    return (bench_now_us() - t0) / NODES;
}

/* BATCHES of fn off and on, in alternating order (so neither side always runs first); both
   figures: host time to issue the operations, and issue plus completion. */
static void measure(const char *what, double (*fn)(int on, double *issue)) {
    double on[BATCHES], off[BATCHES], on_issue[BATCHES], off_issue[BATCHES];
    char label[96];
    int i;
    (void)fn(1, &on_issue[0]);   /* warm-up: threads, pools, first touch */
    (void)fn(0, &off_issue[0]);
    for (i = 0; i < BATCHES; i++) {
        if (i % 2) { on[i] = fn(1, &on_issue[i]); off[i] = fn(0, &off_issue[i]); }
        else { off[i] = fn(0, &off_issue[i]); on[i] = fn(1, &on_issue[i]); }
    }
    snprintf(label, sizeof label, "%s: issue", what);
    report(label, bench_median(on_issue, BATCHES), bench_median(off_issue, BATCHES));
    snprintf(label, sizeof label, "%s: issue+run", what);
    report(label, bench_median(on, BATCHES), bench_median(off, BATCHES));
}

int main(int argc, char **argv) {
    static const struct { const char *name; gf_backend b; } known[] = {
        { "stub", GF_BACKEND_STUB }, { "cuda", GF_BACKEND_CUDA }, { "opencl", GF_BACKEND_OPENCL }
    };
    gf_backend backend = GF_BACKEND_AUTO;
    gf_stream_desc sd;
    gf_race_info info;
    int i;

    for (i = 0; argc > 1 && i < 3; i++) if (strcmp(argv[1], known[i].name) == 0) backend = known[i].b;
    if (argc > 1 && backend == GF_BACKEND_AUTO) { fprintf(stderr, "usage: %s [stub|cuda|opencl]\n", argv[0]); return 2; }
    gf_set_logger(count_warnings, NULL);
    CHECK(gf_device_open(backend, 0, &dev));
    printf("race_bench on %s (%s backend), medians of %d batches, detector on vs off\n", gf_device_name(dev),
           gf_backend_name(gf_device_backend(dev)), BATCHES);
    memset(&sd, 0, sizeof sd);
    sd.label = "A";
    CHECK(gf_stream_create(dev, &sd, &a));
    sd.label = "B";
    CHECK(gf_stream_create(dev, &sd, &b));
    CHECK(gf_event_create(dev, 0, &a_done));
    CHECK(gf_event_create(dev, 0, &b_done));
    for (i = 0; i < BUFFERS; i++) CHECK(gf_buffer_create(dev, BYTES, &bufs[i]));

    measure("2 streams, fill+copy+events, per op", trade);
    measure("1 stream, fills over 16 buffers, per op", fills);
    CHECK(gf_race_check_enable(dev, GF_RACE_CHECK_ON));   /* so the graph keeps its accesses */
    CHECK(gf_graph_capture(a, 0, thousand_fills, NULL, &graph));
    measure("graph replay of 1000 fills, per node", replay);

    CHECK(gf_race_report(dev, &info));
    printf("races reported: %llu (logged: %llu; the program is correct, so 0)\n", (unsigned long long)info.count, warnings);

    gf_graph_destroy(graph);
    for (i = 0; i < BUFFERS; i++) gf_buffer_destroy(bufs[i]);
    gf_event_destroy(b_done);
    gf_event_destroy(a_done);
    gf_stream_destroy(b);
    gf_stream_destroy(a);
    gf_device_close(dev);
    return 0;
}
