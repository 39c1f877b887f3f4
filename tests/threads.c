/* Several threads on one device: shared streams, a shared kernel, shared pools and event
   pools, concurrent stream creation, captures, waiters, and per-thread error text. Every
   result is checked; the whole program must be clean under ThreadSanitizer.

       ./threads [stub|opencl|cuda|hip]     (default stub) */
#define _POSIX_C_SOURCE 200809L   /* pthread_barrier_t */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include <unistd.h>   /* _exit */
#include "harness.h"
#include "test_kernels.h"

enum { NT = 4, ITER = 60, REGION = 256 };

static gf_device *dev;
static gf_kernel *k_add;                 /* NULL when the backend has no test kernels */

typedef struct {
    int index;
    int errors;
    gf_stream *shared;                   /* one stream all threads enqueue on */
    gf_buffer *buf;                      /* NT regions of REGION bytes */
    unsigned char src[ITER][REGION];     /* stays valid until the shared stream is synchronized */
    unsigned char out[REGION];
    gf_buffer *own;                      /* this thread's kernel buffer */
    uint32_t own_host[REGION];
    gf_stream_pool *pool;
    gf_event_pool *events;
    th_flag callbacks;
    char error_text[1024];
    char first_error[1024];              /* gf_last_error() at this thread's first failed check */
} worker;

static worker W[NT];

static void run_threads(void *(*fn)(void *))
{
    pthread_t t[NT];
    int i, started = 0;
    for (i = 0; i < NT; i++)
        if (pthread_create(&t[i], NULL, fn, &W[i]) == 0) started++;
    CHECK(started == NT, "threads started");
    for (i = 0; i < started; i++) pthread_join(t[i], NULL);
}

/* A failed check on a worker thread: counted, and the first one's error text kept for the report. */
static void w_fail(worker *w)
{
    if (!w->errors++) snprintf(w->first_error, sizeof w->first_error, "%s", gf_last_error());
}
static int total_errors(void)
{
    int i, e = 0;
    for (i = 0; i < NT; i++) {
        if (W[i].errors) printf("  thread %d: %d failed, the first with gf_last_error: %s\n", i, W[i].errors, W[i].first_error);
        e += W[i].errors;
        W[i].errors = 0;
    }
    return e;
}

/* Each thread writes its own region of one buffer through the one shared stream. */
static void *shared_stream_main(void *p)
{
    worker *w = (worker *)p;
    size_t off = (size_t)w->index * REGION;
    int i;
    for (i = 0; i < ITER; i++) {
        memset(w->src[i], (unsigned char)(w->index * 64 + i), REGION);
        if (i % 10 == 9 && gf_fill_async(w->shared, w->buf, off, 0xee, REGION / 2) != GF_OK) w_fail(w);
        if (gf_copy_to_device_async(w->shared, w->buf, off, w->src[i], REGION) != GF_OK) w_fail(w);
        if (i % 15 == 0 && gf_device_synchronize(dev) != GF_OK) w_fail(w);
    }
    if (gf_copy_to_host_async(w->shared, w->out, w->buf, off, REGION) != GF_OK) w_fail(w);
    if (gf_stream_synchronize(w->shared) != GF_OK) w_fail(w);
    return NULL;
}

/* Each thread launches the one shared kernel object on its own stream. */
static void *kernel_main(void *p)
{
    worker *w = (worker *)p;
    gf_stream *s = NULL;
    gf_launch_dims d;
    uint32_t n = REGION, one = 1;
    gf_arg args[3];
    int i;
    memset(&d, 0, sizeof d);
    d.grid[0] = REGION / 64; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 64; d.block[1] = d.block[2] = 1;
    args[0].value = 0; args[0].size = 0; args[0].buffer = w->own;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &one; args[2].size = sizeof one; args[2].buffer = 0;
    if (gf_stream_create(dev, NULL, &s) != GF_OK) { w_fail(w); return NULL; }
    if (gf_fill_async(s, w->own, 0, 0, REGION * sizeof(uint32_t)) != GF_OK) w_fail(w);
    for (i = 0; i < ITER; i++) {
        one = 1;
        if (gf_launch(s, k_add, d, args, 3) != GF_OK) w_fail(w);
    }
    if (gf_copy_to_host_async(s, w->own_host, w->own, 0, sizeof w->own_host) != GF_OK) w_fail(w);
    if (gf_stream_synchronize(s) != GF_OK) w_fail(w);
    gf_stream_destroy(s);
    return NULL;
}

/* Pool streams and pooled events, with cross-stream waits between two acquisitions. */
static void *pool_main(void *p)
{
    worker *w = (worker *)p;
    int i;
    for (i = 0; i < ITER; i++) {
        gf_stream *a = NULL, *b = NULL;
        gf_event *e = NULL;
        if (gf_stream_pool_acquire(w->pool, NULL, &a) != GF_OK) { w_fail(w); continue; }
        if (gf_stream_pool_acquire(w->pool, NULL, &b) != GF_OK) { w_fail(w); gf_stream_pool_release(w->pool, a); continue; }
        if (gf_event_pool_acquire(w->events, 0, &e) != GF_OK) w_fail(w);
        else {
            if (gf_stream_add_callback(a, th_flag_cb, &w->callbacks) != GF_OK) w_fail(w);
            if (gf_event_record(e, a) != GF_OK) w_fail(w);
            if (gf_stream_wait_event(b, e) != GF_OK) w_fail(w);
            if (gf_stream_add_callback(b, th_flag_cb, &w->callbacks) != GF_OK) w_fail(w);
            if (gf_event_pool_release(w->events, e) != GF_OK) w_fail(w);
        }
        if (gf_stream_pool_release(w->pool, a) != GF_OK) w_fail(w);
        if (gf_stream_pool_release(w->pool, b) != GF_OK) w_fail(w);
    }
    return NULL;
}

/* Each thread takes four events of one pool and gives them back, then ends: the events stay
   on that thread's shelf in the pool, where an acquire from another thread must still find them. */
static void *shelf_main(void *p)
{
    worker *w = (worker *)p;
    gf_event *e[4];
    int i;
    for (i = 0; i < 4; i++) if (gf_event_pool_acquire(w->events, 0, &e[i]) != GF_OK) { w_fail(w); return NULL; }
    for (i = 0; i < 4; i++) if (gf_event_pool_release(w->events, e[i]) != GF_OK) w_fail(w);
    return NULL;
}

/* Event pools past their shelves: a release racing another of the same event, events
   released by another thread than the one that acquired them, and more threads at once than
   a pool has shelves (two threads then share a shelf, and its lock). */
enum { OWN_T = 24, OWN_HELD = 3, OWN_CYCLES = 200, RACE_ROUNDS = 300 };
typedef struct {
    gf_event_pool *pool;
    gf_stream *s;
    gf_event *held[OWN_HELD];
    gf_event *release_this;          /* race: the one event both threads release */
    int phase, errors, released_ok;
} own_worker;
static own_worker OW[OWN_T];

static void *own_main(void *p)
{
    own_worker *w = (own_worker *)p;
    int i;
    switch (w->phase) {
    case 0:   /* acquire and record some, keep them */
        for (i = 0; i < OWN_HELD; i++)
            if (gf_event_pool_acquire(w->pool, i == 2 ? GF_EVENT_TIMING : 0, &w->held[i]) != GF_OK || gf_event_record(w->held[i], w->s) != GF_OK) w->errors++;
        break;
    case 1:   /* release the next thread's */
        for (i = 0; i < OWN_HELD; i++) if (gf_event_pool_release(w->pool, OW[(w - OW + 1) % OWN_T].held[i]) != GF_OK) w->errors++;
        break;
    case 2:   /* cycle */
        for (i = 0; i < OWN_CYCLES; i++) {
            gf_event *e = NULL;
            if (gf_event_pool_acquire(w->pool, 0, &e) != GF_OK || gf_event_record(e, w->s) != GF_OK || gf_event_pool_release(w->pool, e) != GF_OK) w->errors++;
        }
        break;
    default:  /* race */
        if (gf_event_pool_release(w->pool, w->release_this) == GF_OK) w->released_ok = 1;
        break;
    }
    return NULL;
}

static void own_run(int phase, int n)
{
    pthread_t t[OWN_T];
    int i, started = 0;
    for (i = 0; i < n; i++) OW[i].phase = phase;
    for (i = 0; i < n; i++) if (pthread_create(&t[i], NULL, own_main, &OW[i]) == 0) started++;
    CHECK(started == n, "event pool threads started");
    for (i = 0; i < started; i++) pthread_join(t[i], NULL);
}

static void test_event_pool_threads(gf_stream *s)
{
    gf_event_pool *pool = NULL;
    gf_event_pool_stats es = {0};
    int i, errors = 0, one_each = 1, created;
    if (!CHECK_EQ_RESULT(gf_event_pool_create(dev, NULL, &pool), GF_OK)) return;
    for (i = 0; i < OWN_T; i++) { memset(&OW[i], 0, sizeof OW[i]); OW[i].pool = pool; OW[i].s = s; }
    own_run(0, OWN_T);
    own_run(1, OWN_T);
    for (i = 0; i < OWN_T; i++) errors += OW[i].errors;
    CHECK(errors == 0, "event pool, 24 threads: each released the events the next thread acquired");
    CHECK(gf_event_pool_stats(pool, &es) == GF_OK && es.in_use == 0 && es.available == es.created,
          "event pool: events released on another thread are all back");
    created = es.created;
    own_run(2, OWN_T);
    for (i = 0, errors = 0; i < OWN_T; i++) errors += OW[i].errors;
    CHECK(errors == 0, "event pool: 24 threads at once, 16 shelves: every acquire, record and release succeeded");
    CHECK(gf_event_pool_stats(pool, &es) == GF_OK && es.in_use == 0 && es.available == es.created && es.created == created,
          "event pool: all back, and cycling one at a time made no new event");
    /* two threads release one event at once, 300 times (600 threads: the slots of ended
       threads are handed on): exactly one release is taken */
    for (i = 0; i < RACE_ROUNDS; i++) {
        gf_event *e = NULL;
        if (gf_event_pool_acquire(pool, 0, &e) != GF_OK) { one_each = 0; break; }
        OW[0].release_this = OW[1].release_this = e;
        OW[0].released_ok = OW[1].released_ok = 0;
        own_run(3, 2);
        if (OW[0].released_ok + OW[1].released_ok != 1) one_each = 0;
    }
    CHECK(one_each, "event pool: of two releases of one event racing, exactly one succeeds (300 rounds)");
    CHECK(gf_event_pool_stats(pool, &es) == GF_OK && es.in_use == 0 && es.available == es.created && es.created == created,
          "event pool: after the races every event is back once, and none was made");
    gf_event_pool_destroy(pool);
}

/* Streams, events and buffers created and destroyed concurrently on one device. */
static void *churn_main(void *p)
{
    worker *w = (worker *)p;
    int i;
    for (i = 0; i < 20; i++) {
        gf_stream *s = NULL;
        gf_event *e = NULL;
        gf_buffer *b = NULL;
        unsigned char h[32];
        if (gf_stream_create(dev, NULL, &s) != GF_OK) { w_fail(w); continue; }
        if (gf_event_create(dev, GF_EVENT_TIMING, &e) != GF_OK) w_fail(w);
        if (gf_buffer_create_async(s, 32, &b) != GF_OK) w_fail(w);
        else {
            memset(h, 0, sizeof h);
            if (gf_fill_async(s, b, 0, (unsigned char)(i + 1), 32) != GF_OK) w_fail(w);
            if (gf_copy_to_host_async(s, h, b, 0, 32) != GF_OK) w_fail(w);
            if (gf_buffer_destroy_async(s, b) != GF_OK) w_fail(w);
            if (e && gf_event_record(e, s) != GF_OK) w_fail(w);
            if (gf_stream_synchronize(s) != GF_OK || h[0] != (unsigned char)(i + 1) || h[31] != (unsigned char)(i + 1))
                w_fail(w);
        }
        gf_event_destroy(e);
        gf_stream_destroy(s);
    }
    return NULL;
}

/* Captures on different streams in different threads, each replayed by its own thread. */
static void *capture_main(void *p)
{
    worker *w = (worker *)p;
    gf_stream *s = NULL;
    gf_graph *g = NULL;
    gf_buffer *b = NULL;
    unsigned char h[64];
    int i;
    if (gf_stream_create(dev, NULL, &s) != GF_OK || gf_buffer_create(dev, sizeof h, &b) != GF_OK) {
        w_fail(w);
        return NULL;
    }
    memset(h, 0, sizeof h);
    if (gf_stream_begin_capture(s, GF_CAPTURE_THREAD_LOCAL) != GF_OK) w_fail(w);
    if (gf_fill_async(s, b, 0, (unsigned char)(0x30 + w->index), sizeof h) != GF_OK) w_fail(w);
    if (gf_copy_to_host_async(s, h, b, 0, sizeof h) != GF_OK) w_fail(w);
    if (gf_stream_end_capture(s, &g) != GF_OK) w_fail(w);
    for (i = 0; g && i < 5; i++)
        if (gf_graph_launch(g, s) != GF_OK) w_fail(w);
    if (gf_stream_synchronize(s) != GF_OK || h[0] != 0x30 + w->index || h[63] != 0x30 + w->index) w_fail(w);
    gf_graph_destroy(g);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
    return NULL;
}

/* Async waiters registered from several threads, and gf_last_error kept per thread. */
static void *waiter_main(void *p)
{
    worker *w = (worker *)p;
    gf_stream *s = NULL;
    gf_event *e = NULL;
    gf_buffer *b = NULL;
    uint64_t id;
    int i;
    if (gf_stream_create(dev, NULL, &s) != GF_OK || gf_event_create(dev, 0, &e) != GF_OK) { w_fail(w); return NULL; }
    for (i = 0; i < 10; i++) {
        if (gf_event_record(e, s) != GF_OK) w_fail(w);
        if (gf_event_on_complete(e, th_flag_cb, &w->callbacks, &id) != GF_OK) w_fail(w);
    }
    /* failures of this thread's own, while the others make theirs: each thread keeps its text */
    for (i = 0; i < 200; i++) {
        gf_result r;
        switch (w->index % 4) {
        case 0: r = gf_buffer_create(dev, 0, &b); break;
        case 1: r = gf_stream_query(NULL); break;
        case 2: r = gf_event_query((gf_event *)s); break;
        default: r = gf_fill_async(s, NULL, 0, 0, 1); break;
        }
        if (r == GF_OK) w_fail(w);
        if (i == 0) snprintf(w->error_text, sizeof w->error_text, "%s", gf_last_error());
        else if (strcmp(w->error_text, gf_last_error()) != 0) w_fail(w);
    }
    if (gf_stream_synchronize(s) != GF_OK) w_fail(w);
    if (!th_flag_wait(&w->callbacks, 10, TH_WAIT_MS)) w_fail(w);
    if (!w->error_text[0]) w_fail(w);
    gf_event_destroy(e);
    gf_stream_destroy(s);
    return NULL;
}

/* The first gf_profiler_enable while another thread times ranges on a stream: the range's end
   read the device's profiler before checking it had begun one (a TSan report; found by review). */
static gf_stream *ranges_stream;
static th_flag ranges_go;
static void *ranges_main(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < 20000; i++) {
        gf_range_push(ranges_stream, "r");
        gf_range_pop(ranges_stream);
        if (i == 100) th_flag_add(&ranges_go, 1);   /* under way: now the enable races it */
    }
    return NULL;
}
static void test_profiler_enable_while_ranges(gf_stream *s)
{
    pthread_t t;
    ranges_stream = s;
    th_flag_init(&ranges_go);
    if (!CHECK(pthread_create(&t, NULL, ranges_main, NULL) == 0, "ranges thread started")) return;
    th_flag_wait(&ranges_go, 1, 10000);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK);
    pthread_join(t, NULL);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, 0), GF_OK);
    th_flag_destroy(&ranges_go);
}

/* Eight threads allocate at once against a memory limit that fits four: never more than four
   at a time (each had passed the check on the same use before any was counted; found by
   review: up to six, 1 in 15 rounds). */
enum { LIMIT_T = 8, LIMIT_ROUNDS = 300, LIMIT_CHUNK = 16 * 1024 };
static pthread_barrier_t limit_bar;
static int limit_ok[LIMIT_ROUNDS];
static void *limit_main(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < LIMIT_ROUNDS; i++) {
        gf_buffer *b = NULL;
        pthread_barrier_wait(&limit_bar);
        if (gf_buffer_create(dev, LIMIT_CHUNK, &b) == GF_OK) __atomic_fetch_add(&limit_ok[i], 1, __ATOMIC_RELAXED);
        pthread_barrier_wait(&limit_bar);
        if (b) gf_buffer_destroy(b);
        pthread_barrier_wait(&limit_bar);
    }
    return NULL;
}
static void test_memory_limit_threads(void)
{
    pthread_t t[LIMIT_T];
    gf_memory_stats ms;
    int i, started = 0, over = 0, some = 0;
    CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);   /* nothing pending: the use is what it is */
    if (!CHECK_EQ_RESULT(gf_device_memory_stats(dev, &ms), GF_OK)) return;
    if (!CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, ms.device_bytes + 4 * LIMIT_CHUNK), GF_OK)) return;
    pthread_barrier_init(&limit_bar, NULL, LIMIT_T);
    for (i = 0; i < LIMIT_T; i++) if (pthread_create(&t[i], NULL, limit_main, NULL) == 0) started++;
    if (CHECK(started == LIMIT_T, "memory limit threads started"))
        for (i = 0; i < started; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&limit_bar);
    for (i = 0; i < LIMIT_ROUNDS; i++) { over += limit_ok[i] > 4; some += limit_ok[i] > 0; }
    CHECK(over == 0 && some == LIMIT_ROUNDS, "memory limit: at most the 4 buffers it fits at once, from 8 threads");
    if (over) printf("  %d of %d rounds went past the limit\n", over, LIMIT_ROUNDS);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, 0), GF_OK);
}

/* Review Z2: the first gf_race_check_enable made the detector's state while a gf_race_report on
   another thread read the pointer to it with no lock: the report could see it before its
   mutex was made (TSan: a data race). The report reads it under the device's lock now. */
static gf_device *rr_dev;
static int rr_go;
static void *rr_reporter(void *arg)
{
    gf_race_info info;
    int i, failed = 0;
    (void)arg;
    while (!__atomic_load_n(&rr_go, __ATOMIC_ACQUIRE)) {}
    for (i = 0; i < 2000; i++) failed += gf_race_report(rr_dev, &info) != GF_OK;
    return (void *)(size_t)failed;
}
static void test_race_enable_vs_report(gf_backend backend)
{
    pthread_t t;
    void *failed = (void *)1;
    if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &rr_dev), GF_OK)) return;
    if (CHECK(pthread_create(&t, NULL, rr_reporter, NULL) == 0, "race report thread started")) {
        __atomic_store_n(&rr_go, 1, __ATOMIC_RELEASE);
        CHECK_EQ_RESULT(gf_race_check_enable(rr_dev, GF_RACE_CHECK_ON), GF_OK);
        pthread_join(t, &failed);
        CHECK(failed == NULL, "race report: every report while the detector was first switched on succeeded");
    }
    gf_device_close(rr_dev);
}

/* A report waits for profiled work that sits behind a host callback, and the callback enqueues
   on another stream (the stub and OpenCL allow it): the report held the profiler's lock across
   its wait and the callback's enqueue needed it, so neither ever returned (found by review). */
static gf_stream *rc_other;
static gf_buffer *rc_buf;
static th_flag rc_entered, rc_reporting, rc_reported;
static gf_result rc_fill = GF_ERROR_INVALID_STATE;
static void rc_callback(void *user, gf_result status)
{
    (void)user; (void)status;
    th_flag_add(&rc_entered, 1);
    th_flag_wait(&rc_reporting, 1, 10000);
    th_sleep_ms(50);   /* the report is waiting by now */
    rc_fill = gf_fill_async(rc_other, rc_buf, 2048, 1, 64);   /* not the bytes the stream's own fills write */
}
static void *rc_reporter(void *arg)
{
    gf_profile_report rep;
    (void)arg;
    th_flag_add(&rc_reporting, 1);
    if (gf_profiler_report(dev, &rep) == GF_OK) th_flag_add(&rc_reported, 1);
    th_flag_add(&rc_reported, 1);
    return NULL;
}
static void test_profiler_report_vs_callback(gf_backend backend)
{
    gf_stream *s = NULL;
    pthread_t t;
    if (backend == GF_BACKEND_CUDA || backend == GF_BACKEND_HIP) return;   /* their callbacks must not call the driver */
    th_flag_init(&rc_entered); th_flag_init(&rc_reporting); th_flag_init(&rc_reported);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &rc_other), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 4096, &rc_buf), GF_OK);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK);
    if (s && rc_other && rc_buf && gf_fill_async(s, rc_buf, 0, 0, 2048) == GF_OK && gf_stream_add_callback(s, rc_callback, NULL) == GF_OK &&
        gf_fill_async(s, rc_buf, 0, 2, 2048) == GF_OK && th_flag_wait(&rc_entered, 1, 10000) &&
        CHECK(pthread_create(&t, NULL, rc_reporter, NULL) == 0, "reporter thread started")) {
        if (!CHECK(th_flag_wait(&rc_reported, 1, 10000),
                   "profiler: a report waiting for work behind a callback that enqueues returns (they deadlocked)")) {
            th_finish();   /* both threads hang for good: end here rather than hang the suite */
            fflush(NULL);
            _exit(1);
        }
        pthread_join(t, NULL);
        CHECK(th_flag_get(&rc_reported) == 2 && rc_fill == GF_OK, "profiler: the report and the callback's enqueue both succeeded");
    }
    CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, 0), GF_OK);
    gf_buffer_destroy(rc_buf);
    gf_stream_destroy(rc_other);
    gf_stream_destroy(s);
    th_flag_destroy(&rc_entered); th_flag_destroy(&rc_reporting); th_flag_destroy(&rc_reported);
}

/* A budget's peak is of bytes held: one thread's buffers that the device's limit refuses were
   counted into the peak that another thread's buffer, made meanwhile, set (found by review). */
enum { PEAK_ROUNDS = 20000 };
static gf_budget *peak_budget;
static void *peak_refused_main(void *arg)
{
    gf_buffer_desc d;
    int i;
    (void)arg;
    memset(&d, 0, sizeof d);
    d.size = 700 << 10; d.budget = peak_budget;
    for (i = 0; i < PEAK_ROUNDS; i++) { gf_buffer *b = NULL; if (gf_buffer_create_desc(dev, &d, &b) == GF_OK) gf_buffer_destroy(b); }
    return NULL;
}
static void *peak_small_main(void *arg)
{
    gf_buffer_desc d;
    int i;
    (void)arg;
    memset(&d, 0, sizeof d);
    d.size = 1024; d.budget = peak_budget;
    for (i = 0; i < PEAK_ROUNDS; i++) { gf_buffer *b = NULL; if (gf_buffer_create_desc(dev, &d, &b) == GF_OK) gf_buffer_destroy(b); }
    return NULL;
}
static void test_budget_peak_threads(void)
{
    gf_budget_desc bd;
    gf_budget_stats st;
    gf_memory_stats ms;
    pthread_t t[2];
    memset(&bd, 0, sizeof bd);
    bd.label = "peak"; bd.limit = 1 << 20;
    CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);
    if (!CHECK_EQ_RESULT(gf_budget_create(dev, &bd, &peak_budget), GF_OK) || !CHECK_EQ_RESULT(gf_device_memory_stats(dev, &ms), GF_OK)) return;
    CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, ms.device_bytes + (100u << 10)), GF_OK);   /* refuses the 700 KiB ones */
    if (CHECK(pthread_create(&t[0], NULL, peak_refused_main, NULL) == 0, "peak: refused thread started")) {
        if (CHECK(pthread_create(&t[1], NULL, peak_small_main, NULL) == 0, "peak: small thread started")) pthread_join(t[1], NULL);
        pthread_join(t[0], NULL);
    }
    CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, 0), GF_OK);
    CHECK(gf_budget_get_stats(peak_budget, &st) == GF_OK && st.bytes == 0 && st.count == 0 && st.peak_bytes <= 1024,
          "budget: the peak counts what was held, not what another thread was refused meanwhile");
    if (st.peak_bytes > 1024) printf("  peak %llu bytes, of which at most 1024 were ever held\n", (unsigned long long)st.peak_bytes);
    gf_budget_destroy(peak_budget);
}

/* One flow run from several threads, each run paced by gf_flow_wait_frames (found by a TSan
   stress): a waiting thread, its flow let go, still read the lane-end event it waited for
   while another thread's run collected it and a third took it from the pool again, clearing
   its record unlocked. */
static gf_flow *paced_flow;
static gf_stream_pool *paced_pool;
static gf_buffer *paced_buf;
static int paced_failures;
static void paced_nothing(void *user, gf_result status) { (void)user; (void)status; }
static gf_result paced_fill(gf_stream *s, void *user) { (void)user; return gf_stream_add_callback(s, paced_nothing, NULL); }   /* runs overlap: no memory */
static void *paced_main(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < 600; i++)
        if (gf_flow_run(paced_flow, paced_pool) != GF_OK || gf_flow_wait_frames(paced_flow, 0, TH_WAIT_MS) != GF_OK)
            __atomic_add_fetch(&paced_failures, 1, __ATOMIC_RELAXED);
    return NULL;
}
static void test_flow_paced_threads(void)
{
    gf_stream_pool_desc pd;
    pthread_t t[3];
    gf_task a, b;
    int i, started = 0;
    memset(&pd, 0, sizeof pd);
    pd.count = 3;
    if (!CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &paced_pool), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_buffer_create(dev, 128, &paced_buf), GF_OK) && CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &paced_flow), GF_OK)) {
        CHECK_EQ_RESULT(gf_flow_add(paced_flow, "low", paced_fill, (void *)0, &a), GF_OK);
        CHECK_EQ_RESULT(gf_flow_add(paced_flow, "high", paced_fill, (void *)1, &b), GF_OK);   /* two lanes */
        for (i = 0; i < 3; i++) started += pthread_create(&t[i], NULL, paced_main, NULL) == 0;
        for (i = 0; i < started; i++) pthread_join(t[i], NULL);
        CHECK(started == 3 && paced_failures == 0, "flow paced from threads: every run and wait went through");
        gf_flow_destroy(paced_flow);
    }
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(paced_pool), GF_OK);
    if (paced_buf) gf_buffer_destroy(paced_buf);
    gf_stream_pool_destroy(paced_pool);
}

/* A capture ended, synchronized or destroyed on a thread that did not begin it (found by an
   outside review of the CUDA backend): CUDA and HIP refuse the end there in GLOBAL and
   THREAD_LOCAL modes and leave the driver capturing, while gpuflow took the capture as gone.
   Refused now on every backend, the capture going on; a relaxed capture ends anywhere. */
typedef struct { gf_stream *s; gf_result end, sync; gf_graph *g; } elsewhere_args;
static void *elsewhere_main(void *p)
{
    elsewhere_args *a = (elsewhere_args *)p;
    a->end = gf_stream_end_capture(a->s, &a->g);
    if (a->end != GF_OK) {
        a->sync = gf_stream_synchronize(a->s);
        gf_stream_destroy(a->s);   /* refused: kept */
    }
    return NULL;
}
/* Begins a capture on s, says so (step 1), waits for the main thread's refused destroy (step 2),
   then ends the capture itself. */
typedef struct { gf_stream *s; th_flag steps; gf_result begun, ended; } capture_owner;
static void *capture_owner_main(void *p)
{
    capture_owner *o = (capture_owner *)p;
    gf_graph *g = NULL;
    o->begun = gf_stream_begin_capture(o->s, GF_CAPTURE_GLOBAL);
    th_flag_add(&o->steps, 1);
    th_flag_wait(&o->steps, 2, TH_WAIT_MS);
    o->ended = gf_stream_end_capture(o->s, &g);
    if (g) gf_graph_destroy(g);
    return NULL;
}
static void test_capture_ended_elsewhere(void)
{
    int relaxed;
    {   /* a pool's destroy would discard its stream's capture: refused too (the pool kept) */
        gf_stream_pool *pool = NULL;
        gf_stream_pool_stats st;
        capture_owner o;
        pthread_t t;
        memset(&o, 0, sizeof o);
        th_flag_init(&o.steps);
        if (CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK) && CHECK_EQ_RESULT(gf_stream_pool_acquire(pool, NULL, &o.s), GF_OK) &&
            CHECK(pthread_create(&t, NULL, capture_owner_main, &o) == 0, "capture elsewhere: a thread")) {
            th_flag_wait(&o.steps, 1, TH_WAIT_MS);
            gf_stream_pool_destroy(pool);   /* refused: kept */
            CHECK(o.begun == GF_OK && strstr(gf_last_error(), "gf_stream_pool_destroy") && gf_stream_pool_get_stats(pool, &st) == GF_OK,
                  "capture elsewhere: a pool whose stream captures for another thread is kept at its destroy");
            th_flag_add(&o.steps, 1);
            pthread_join(t, NULL);
            CHECK(o.ended == GF_OK, "capture elsewhere: the thread that began the capture ends it");
            gf_stream_pool_release(pool, o.s);
        }
        if (pool) gf_stream_pool_destroy(pool);
        th_flag_destroy(&o.steps);
    }
    for (relaxed = 0; relaxed < 2; relaxed++) {
        elsewhere_args a;
        gf_buffer *b = NULL;
        gf_graph *g = NULL;
        pthread_t t;
        unsigned char h[4] = { 0, 0, 0, 0 };
        memset(&a, 0, sizeof a);
        if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &a.s), GF_OK) || !CHECK_EQ_RESULT(gf_buffer_create(dev, 4, &b), GF_OK)) return;
        CHECK_EQ_RESULT(gf_stream_begin_capture(a.s, relaxed ? GF_CAPTURE_RELAXED : GF_CAPTURE_GLOBAL), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(a.s, b, 0, 0x33, 4), GF_OK);
        if (!CHECK(pthread_create(&t, NULL, elsewhere_main, &a) == 0, "capture elsewhere: a thread")) return;
        pthread_join(t, NULL);
        if (relaxed) {
            CHECK(a.end == GF_OK && a.g != NULL, "capture elsewhere: a relaxed capture ends on another thread");
            g = a.g;
        } else {
            CHECK(a.end == GF_ERROR_CAPTURE && a.sync == GF_ERROR_CAPTURE, "capture elsewhere: end and synchronize on another thread are refused");
            CHECK(gf_stream_end_capture(a.s, &g) == GF_OK && g != NULL, "capture elsewhere: the capture went on, and ends on its own thread");
        }
        if (g) {
            CHECK(gf_graph_launch(g, a.s) == GF_OK && gf_stream_synchronize(a.s) == GF_OK && gf_copy_to_host(h, b, 0, 4) == GF_OK &&
                  h[0] == 0x33 && h[3] == 0x33, "capture elsewhere: the graph runs what was captured");
            gf_graph_destroy(g);
        }
        gf_buffer_destroy(b);
        gf_stream_destroy(a.s);
    }
}

/* gf_set_logger returned while other threads still ran the old logger: a program that freed
   the logger's user data then had it read (an outside review: 9 calls after the removal in 200
   rounds). Now the old logger's calls on other threads have returned when it returns. */
typedef struct { th_flag removed, late; } logger_data;
static th_flag logger_stop;
static void slow_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    logger_data *d = (logger_data *)user;
    (void)level; (void)code; (void)message;
    if (th_flag_get(&d->removed)) th_flag_add(&d->late, 1);
    th_sleep_ms(1);   /* a call that lasts: the removal comes in the middle of some */
    if (th_flag_get(&d->removed)) th_flag_add(&d->late, 1);
}
static void *failing_calls(void *arg)
{
    gf_buffer *b;
    (void)arg;
    while (!th_flag_get(&logger_stop)) (void)gf_buffer_create(NULL, 0, &b);   /* fails: logged */
    return NULL;
}
static void test_logger_removed(void)
{
    static logger_data d;
    int round, i, late = 0;
    th_flag_init(&d.removed);
    th_flag_init(&d.late);
    th_flag_init(&logger_stop);
    for (round = 0; round < 40; round++) {
        pthread_t t[2];
        gf_set_logger(slow_logger, &d);
        for (i = 0; i < 2; i++) pthread_create(&t[i], NULL, failing_calls, NULL);
        th_sleep_ms(2);
        gf_set_logger(NULL, NULL);
        th_flag_add(&d.removed, 1);   /* as a program freeing the logger's data would */
        th_sleep_ms(2);
        th_flag_add(&logger_stop, 1);
        for (i = 0; i < 2; i++) pthread_join(t[i], NULL);
        late += th_flag_get(&d.late);
        th_flag_add(&d.late, -th_flag_get(&d.late));
        th_flag_add(&d.removed, -th_flag_get(&d.removed));
        th_flag_add(&logger_stop, -th_flag_get(&logger_stop));
    }
    CHECK(late == 0, "logger: no call of a logger after gf_set_logger replaced it and returned");
    th_flag_destroy(&d.removed);
    th_flag_destroy(&d.late);
    th_flag_destroy(&logger_stop);
}

/* Two swaps, the first waiting for a call of the logger it replaced while the second's logger
   takes calls from other threads all the time: the second logger's calls were counted where
   the first swap waited (by generation's parity), so it waited as long as the logging went on
   (an outside review). */
static th_flag swap_release_a, swap_in_a, swap_stop, swap_b_done, swap_c_done;
static void swap_logger_a(void *u, gf_log_level l, gf_result c, const char *m) { (void)u; (void)l; (void)c; (void)m; th_flag_add(&swap_in_a, 1); th_flag_wait(&swap_release_a, 1, TH_WAIT_MS); }
static void swap_logger_b(void *u, gf_log_level l, gf_result c, const char *m) { (void)u; (void)l; (void)c; (void)m; }
static void swap_logger_c(void *u, gf_log_level l, gf_result c, const char *m) { (void)u; (void)l; (void)c; (void)m; th_sleep_ms(2); }
static void *swap_fail_once(void *p) { (void)p; (void)gf_stream_synchronize(NULL); return NULL; }
static void *swap_to_b(void *p) { (void)p; gf_set_logger(swap_logger_b, NULL); th_flag_add(&swap_b_done, 1); return NULL; }
static void *swap_to_c(void *p) { (void)p; gf_set_logger(swap_logger_c, NULL); th_flag_add(&swap_c_done, 1); return NULL; }
static void *swap_spam(void *p) { (void)p; while (!th_flag_get(&swap_stop)) (void)gf_stream_synchronize(NULL); return NULL; }
static void *swap_release_later(void *p) { (void)p; th_sleep_ms(200); th_flag_add(&swap_release_a, 1); return NULL; }
static void test_logger_swaps_in_a_row(void)
{
    pthread_t a, b, c, rel, spam[4];
    int i, b_done, c_done;
    th_flag *flags[5] = { &swap_release_a, &swap_in_a, &swap_stop, &swap_b_done, &swap_c_done };
    for (i = 0; i < 5; i++) th_flag_init(flags[i]);
    gf_set_logger(swap_logger_a, NULL);
    pthread_create(&a, NULL, swap_fail_once, NULL);
    CHECK(th_flag_wait(&swap_in_a, 1, TH_WAIT_MS), "logger swaps: a call of the first logger is in progress");
    pthread_create(&b, NULL, swap_to_b, NULL);   /* waits for that call */
    th_sleep_ms(20);
    for (i = 0; i < 4; i++) pthread_create(&spam[i], NULL, swap_spam, NULL);
    pthread_create(&c, NULL, swap_to_c, NULL);   /* its logger then takes the spam's calls */
    pthread_create(&rel, NULL, swap_release_later, NULL);
    b_done = th_flag_wait(&swap_b_done, 1, 5000);
    c_done = th_flag_wait(&swap_c_done, 1, 5000);
    th_flag_add(&swap_stop, 1);
    for (i = 0; i < 4; i++) pthread_join(spam[i], NULL);
    pthread_join(a, NULL); pthread_join(b, NULL); pthread_join(c, NULL); pthread_join(rel, NULL);
    gf_set_logger(NULL, NULL);
    CHECK(b_done && c_done, "logger swaps: both return once the first logger's call has, while others log without a pause");
    for (i = 0; i < 5; i++) th_flag_destroy(flags[i]);
}

int main(int argc, char **argv)
{
    gf_backend backend = GF_BACKEND_STUB;
    gf_module *mod = NULL;
    gf_stream *shared = NULL;
    gf_buffer *buf = NULL;
    gf_stream_pool_desc pd;
    gf_stream_pool *pool = NULL;
    gf_event_pool *events = NULL;
    gf_event_pool_stats es = {0};
    gf_result r;
    int i, j, ok;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2) th_backend_named(argv[1], &backend);   /* a backend's name, else the stub */
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: threads on %s skipped: %s\n", gf_backend_name(backend), gf_last_error());
        SKIP("backend not available here");
        return th_finish();
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return th_finish();

    /* shared stream */
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &shared), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, NT * REGION, &buf), GF_OK);
    if (!shared || !buf) return th_finish();
    test_profiler_enable_while_ranges(shared);
    test_profiler_report_vs_callback(backend);
    test_memory_limit_threads();
    test_budget_peak_threads();
    test_flow_paced_threads();
    test_capture_ended_elsewhere();
    test_logger_removed();
    test_logger_swaps_in_a_row();
    test_race_enable_vs_report(backend);
    for (i = 0; i < NT; i++) {
        W[i].index = i;
        W[i].shared = shared;
        W[i].buf = buf;
        th_flag_init(&W[i].callbacks);
    }
    run_threads(shared_stream_main);
    CHECK(total_errors() == 0, "shared stream: every enqueue and synchronize succeeded");
    ok = 1;
    for (i = 0; i < NT; i++)
        for (j = 0; j < REGION; j++)
            if (W[i].out[j] != (unsigned char)(i * 64 + ITER - 1)) ok = 0;
    CHECK(ok, "shared stream: each thread's region holds its last upload (per-thread order kept)");

    /* shared kernel */
    r = gf_module_load(dev, &tk_module, &mod);
    if (r == GF_OK && gf_kernel_get(mod, "add_u32", &k_add) == GF_OK) {
        for (i = 0; i < NT; i++) CHECK_EQ_RESULT(gf_buffer_create(dev, REGION * sizeof(uint32_t), &W[i].own), GF_OK);
        run_threads(kernel_main);
        CHECK(total_errors() == 0, "shared kernel: every launch succeeded");
        ok = 1;
        for (i = 0; i < NT; i++)
            for (j = 0; j < REGION; j++)
                if (W[i].own_host[j] != ITER) ok = 0;
        CHECK(ok, "shared kernel: 60 add_u32 launches per thread, each thread's own arguments");
        for (i = 0; i < NT; i++) gf_buffer_destroy(W[i].own);
    } else {
        CHECK(r == GF_ERROR_NOT_SUPPORTED, "no kernel form for this backend");
    }

    /* shared pools */
    memset(&pd, 0, sizeof pd);
    pd.count = 3;
    pd.strategy = GF_POOL_LEAST_PENDING;
    pd.label = "threads";
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_create(dev, NULL, &events), GF_OK);
    if (pool && events) {
        for (i = 0; i < NT; i++) { W[i].pool = pool; W[i].events = events; }
        run_threads(pool_main);
        CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
        CHECK(total_errors() == 0, "shared pools: every acquire, wait and release succeeded");
        ok = 1;
        for (i = 0; i < NT; i++)
            if (th_flag_get(&W[i].callbacks) != 2 * ITER) ok = 0;
        CHECK(ok, "shared pools: every callback ran");
        CHECK(gf_event_pool_stats(events, &es) == GF_OK && es.in_use == 0 && es.available == es.created,
              "shared event pool: all events back");
    }
    gf_event_pool_destroy(events);

    /* events left on finished threads' shelves: found again, nothing new is made */
    events = NULL;
    {
        gf_event_pool_desc ed;
        gf_event *e[4 * NT];
        memset(&ed, 0, sizeof ed);
        ed.capacity = 4 * NT;
        CHECK_EQ_RESULT(gf_event_pool_create(dev, &ed, &events), GF_OK);
        for (i = 0; events && i < NT; i++) {   /* one thread after another: each ends holding none */
            pthread_t t;
            W[i].events = events;
            if (CHECK(pthread_create(&t, NULL, shelf_main, &W[i]) == 0, "shelf thread started")) pthread_join(t, NULL);
        }
        CHECK(total_errors() == 0, "event pool: four acquires and releases on each of four threads");
        for (i = 0, ok = 1; events && i < 4 * NT; i++) if (gf_event_pool_acquire(events, 0, &e[i]) != GF_OK) ok = 0;
        CHECK(ok, "event pool: every event finished threads gave back can be acquired here");
        CHECK(events && gf_event_pool_stats(events, &es) == GF_OK && es.created == 4 * NT + 16 && es.in_use == 4 * NT && es.available == 16,
              "event pool: no event made beyond the capacity: the finished threads' shelves were emptied");
        for (i = 0; events && ok && i < 4 * NT; i++) CHECK_EQ_RESULT(gf_event_pool_release(events, e[i]), GF_OK);
    }
    gf_event_pool_destroy(events);
    events = NULL;
    test_event_pool_threads(shared);

    run_threads(churn_main);
    CHECK(total_errors() == 0, "concurrent create / use / destroy of streams, events, async buffers");
    run_threads(capture_main);
    CHECK(total_errors() == 0, "concurrent captures on different streams replay their own work");
    for (i = 0; i < NT; i++) { th_flag_destroy(&W[i].callbacks); th_flag_init(&W[i].callbacks); }
    run_threads(waiter_main);
    CHECK(total_errors() == 0, "waiters from several threads each fire; gf_last_error is per thread");
    CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);

    for (i = 0; i < NT; i++) th_flag_destroy(&W[i].callbacks);
    gf_stream_pool_destroy(pool);
    if (mod) gf_module_destroy(mod);
    gf_buffer_destroy(buf);
    gf_stream_destroy(shared);
    gf_device_close(dev);
    return th_finish();
}
