/* scale_bench.c -- bookkeeping that should cost the same per operation however much is held:
   each section times one operation at a small and at a large count, in one run, and prints
   both figures and their ratio (large / small: 1 is flat, the count's ratio is linear).

   depend   gf_flow_depend building a chain of N tasks, edges added front to back (each new task
            after the last) and back to front (each new edge before the chain built so far), and
            a chain whose tasks were made last to first (each edge to a task made earlier, so
            each is searched for a cycle through the chain so far: quadratic, and said so)
   cache    a stream-ordered allocation and its free (gf_buffer_create_async + destroy_async) of
            a random size, with N freed blocks of random sizes cached (the stub and OpenCL: where
            the driver has no stream-ordered allocator of its own)
   cancel   gf_event_on_complete + gf_event_cancel_wait with N waits pending
   races    with the race detector on, a fill on one stream and an unordered fill on another of
            a buffer whose race was told already, with N races told (one per buffer)

   ./scale_bench [stub|opencl|cuda|hip]      (default: the stub)

   Medians of 7 batches. Nothing here is asserted.

   Build (the Makefile's bench rule):
       cc -std=c99 -O2 -I. bench/scale_bench.c -o build/bench/scale_bench -pthread -ldl -lm
*/
#define GPUFLOW_IMPLEMENTATION
#if defined(__has_include)
#  if __has_include(<CL/cl.h>)
#    define GPUFLOW_OPENCL
#  endif
#endif
#include "gpuflow.h"
#include "bench/bench.h"

enum { BATCHES = 7 };
static gf_device *dev;
static unsigned seed = 1;
static unsigned next_random(void) { seed = seed * 1103515245u + 12345u; return seed >> 8; }

static void row(const char *what, int small, double small_us, int large, double large_us) {
    printf("%-44s %7d: %9.3f us   %7d: %9.3f us   ratio %6.2f (counts %.0fx)\n", what, small, small_us, large, large_us,
           large_us / small_us, (double)large / small);
}

/* ---- depend --------------------------------------------------------------------------------- */
static gf_result nothing(gf_stream *s, void *user) { (void)s; (void)user; return GF_OK; }
static double depend_us(int n, int order) {   /* per edge, median of the batches; order 0, 1, 2: as listed above */
    double t[BATCHES];
    int b, i;
    gf_task *task = (gf_task *)malloc(sizeof *task * (size_t)n);
    if (!task) exit(1);
    for (b = 0; b < BATCHES; b++) {
        gf_flow *flow;
        double t0;
        CHECK(gf_flow_create(dev, NULL, &flow));
        for (i = 0; i < n; i++) CHECK(gf_flow_add(flow, NULL, nothing, NULL, &task[i]));
        t0 = bench_now_us();
        if (order == 1) for (i = n - 2; i >= 0; i--) CHECK(gf_flow_depend(flow, task[i], task[i + 1]));
        else if (order == 2) for (i = 0; i + 1 < n; i++) CHECK(gf_flow_depend(flow, task[i + 1], task[i]));
        else for (i = 0; i + 1 < n; i++) CHECK(gf_flow_depend(flow, task[i], task[i + 1]));
        t[b] = (bench_now_us() - t0) / (n - 1);
        gf_flow_destroy(flow);
    }
    free(task);
    return bench_median(t, BATCHES);
}

/* ---- cache ---------------------------------------------------------------------------------- */
static double cache_us(gf_stream *s, int held) {   /* per create + destroy, held blocks cached */
    enum { OPS = 2000 };
    double t[BATCHES];
    gf_buffer **kept = (gf_buffer **)malloc(sizeof *kept * (size_t)held);
    int b, i;
    if (!kept) exit(1);
    for (i = 0; i < held; i++) CHECK(gf_buffer_create_async(s, 256 + next_random() % 2800, &kept[i]));
    for (i = 0; i < held; i++) CHECK(gf_buffer_destroy_async(s, kept[i]));   /* all cached now */
    for (b = 0; b < BATCHES; b++) {
        double t0 = bench_now_us();
        for (i = 0; i < OPS; i++) {
            gf_buffer *buf;
            CHECK(gf_buffer_create_async(s, 256 + next_random() % 2800, &buf));
            CHECK(gf_buffer_destroy_async(s, buf));
        }
        t[b] = (bench_now_us() - t0) / OPS;
    }
    CHECK(gf_stream_synchronize(s));
    CHECK(gf_device_trim(dev, 0));
    free(kept);
    return bench_median(t, BATCHES);
}

/* ---- cancel --------------------------------------------------------------------------------- */
static void noop(void *user, gf_result status) { (void)user; (void)status; }
static void quiet(void *user, gf_log_level level, gf_result code, const char *message) { (void)user; (void)level; (void)code; (void)message; }
static void hold(void *user, gf_result status) {   /* the stream waits here until *user is set */
    (void)status;
    while (!__atomic_load_n((int *)user, __ATOMIC_ACQUIRE)) { struct timespec ms = { 0, 1000000 }; nanosleep(&ms, NULL); }
}
static double cancel_us(gf_stream *s, int pending) {   /* per on_complete + cancel */
    enum { OPS = 2000 };
    double t[BATCHES];
    uint64_t id;
    gf_event *ev;
    int b, i, go = 0;
    CHECK(gf_event_create(dev, 0, &ev));
    CHECK(gf_stream_add_callback(s, hold, &go));
    CHECK(gf_event_record(ev, s));
    for (i = 0; i < pending; i++) CHECK(gf_event_on_complete(ev, noop, NULL, &id));
    for (b = 0; b < BATCHES; b++) {
        double t0 = bench_now_us();
        for (i = 0; i < OPS; i++) {
            CHECK(gf_event_on_complete(ev, noop, NULL, &id));
            CHECK(gf_event_cancel_wait(dev, id));
        }
        t[b] = (bench_now_us() - t0) / OPS;
    }
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    CHECK(gf_stream_synchronize(s));
    gf_event_destroy(ev);   /* its pending waits still run, on the waiter thread */
    return bench_median(t, BATCHES);
}

/* ---- races --------------------------------------------------------------------------------- */
static double races_us(int told) {   /* per racy pair of fills, told races known */
    enum { OPS = 1000 };
    double t[BATCHES];
    gf_stream *a, *b;
    gf_buffer **bufs = (gf_buffer **)malloc(sizeof *bufs * (size_t)told);
    int k, i;
    if (!bufs) exit(1);
    CHECK(gf_race_check_enable(dev, GF_RACE_CHECK_ON));
    CHECK(gf_stream_create(dev, NULL, &a));
    CHECK(gf_stream_create(dev, NULL, &b));
    for (i = 0; i < told; i++) {
        CHECK(gf_buffer_create(dev, 64, &bufs[i]));
        CHECK(gf_fill_async(a, bufs[i], 0, 1, 64));
        CHECK(gf_fill_async(b, bufs[i], 0, 2, 64));   /* told once */
        if (i % 1000 == 999) CHECK(gf_device_synchronize(dev));
    }
    CHECK(gf_device_synchronize(dev));
    for (k = 0; k < BATCHES; k++) {
        double t0 = bench_now_us();
        for (i = 0; i < OPS; i++) {
            gf_buffer *x = bufs[(size_t)i * 7919u % (size_t)told];
            CHECK(gf_fill_async(a, x, 0, 1, 64));
            CHECK(gf_fill_async(b, x, 0, 2, 64));
        }
        t[k] = (bench_now_us() - t0) / OPS;
        CHECK(gf_device_synchronize(dev));
    }
    for (i = 0; i < told; i++) gf_buffer_destroy(bufs[i]);
    gf_stream_destroy(a);
    gf_stream_destroy(b);
    CHECK(gf_race_check_enable(dev, 0));
    free(bufs);
    return bench_median(t, BATCHES);
}

int main(int argc, char **argv) {
    gf_backend backend = argc > 1 ? bench_backend(argc, argv, "scale_bench [stub|opencl|cuda|hip]") : GF_BACKEND_STUB;
    gf_stream *s;
    CHECK(gf_device_open(backend, 0, &dev));
    CHECK(gf_stream_create(dev, NULL, &s));
    printf("scale_bench on %s (%s)\n", gf_backend_name(backend), gf_device_name(dev));
    row("depend: a chain, front to back, per edge", 1000, depend_us(1000, 0), 20000, depend_us(20000, 0));
    row("depend: a chain, back to front, per edge", 1000, depend_us(1000, 1), 20000, depend_us(20000, 1));
    row("depend: tasks made last to first, per edge", 1000, depend_us(1000, 2), 20000, depend_us(20000, 2));
    if (dev->be->buffer_alloc_async) printf("cache: the driver allocates in stream order itself: skipped\n");
    else row("cache: create_async + destroy_async", 100, cache_us(s, 100), 20000, cache_us(s, 20000));
    row("cancel: on_complete + cancel_wait", 1000, cancel_us(s, 1000), 100000, cancel_us(s, 100000));
    gf_set_logger(quiet, NULL);   /* every race is told once, as a warning: not on the terminal */
    row("races: an unordered pair, told already", 100, races_us(100), 20000, races_us(20000));
    gf_set_logger(NULL, NULL);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return 0;
}
