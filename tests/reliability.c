/* Regression tests for the defects an outside tester found (issue 9, numbered as there), and
   for the tools that came with the fixes: the logger, bounded waits, the allocator macros.

       ./reliability stub|opencl|cuda|hip

   Each test fails without its fix, most of them only under the sanitizer that shows the
   defect (`make sanitize` runs this file under ASan+UBSan and TSan). The stub device is made
   small (64 MiB) so that running out of device memory is reachable, and host allocations go
   through a test allocator that one thread at a time can make fail. */
#define _POSIX_C_SOURCE 200809L   /* the test allocator needs libc before gpuflow.h */
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_STUB_MEMORY ((uint64_t)64 << 20)

#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <time.h>
#if !defined(_WIN32)
#  include <utime.h>   /* the cache limit's test ages its files */
#endif

/* The test allocator: a thread that sets ra_fail_here sees every allocation fail. */
static __thread int ra_fail_here;
static size_t ra_largest;                 /* largest request seen (atomic) */
static void ra_note(size_t n)
{
    size_t seen = __atomic_load_n(&ra_largest, __ATOMIC_RELAXED);
    while (n > seen && !__atomic_compare_exchange_n(&ra_largest, &seen, n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}
static void *ra_malloc(size_t n) { ra_note(n); return ra_fail_here ? NULL : malloc(n); }
static void *ra_realloc(void *p, size_t n) { ra_note(n); return ra_fail_here ? NULL : realloc(p, n); }
#define GPUFLOW_MALLOC(n)     ra_malloc(n)
#define GPUFLOW_REALLOC(p, n) ra_realloc((p), (n))
#define GPUFLOW_FREE(p)       free(p)

#include "backends.h"
#include "harness.h"
#include "test_kernels.h"

static struct {
    gf_backend backend;
    const char *name;
    gf_device *dev;
} R;

static gf_stream *mk_stream(const char *label)
{
    gf_stream_desc d;
    gf_stream *s = NULL;
    d.label = label;
    d.priority = GF_PRIORITY_NORMAL;
    CHECK_EQ_RESULT(gf_stream_create(R.dev, &d, &s), GF_OK);
    return s;
}

static int contains(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

/* Opens a gate after a delay, from its own thread: a test can block on work behind the gate
   and still finish. */
typedef struct { th_gate *gate; unsigned ms; } opener;
static void *open_later(void *p)
{
    opener *o = (opener *)p;
    th_sleep_ms(o->ms);
    th_gate_open(o->gate);
    return NULL;
}

/* ---- 1: destroying an event, a pooled event or a pool while a waiter is pending on it ----------
   The waiter thread reads the event until its wait has run, so the event (the pool) stays until
   then; the destroy or release itself goes through at once. Before (review L1), each was refused
   while a wait was pending, even after the event completed: a void destroy's refusal leaked the
   event, and a pool grew by one event per refused release. */
static int pool_available(gf_event_pool *pool)
{
    gf_event_pool_stats st;
    memset(&st, 0, sizeof st);
    return gf_event_pool_get_stats(pool, &st) == GF_OK ? st.available : -1;
}
static int pool_available_reaches(gf_event_pool *pool, int want)   /* the waiter puts it back just after the callback */
{
    double until = th_now_ms() + TH_WAIT_MS;
    while (pool_available(pool) != want && th_now_ms() < until) th_sleep_ms(1);
    return pool_available(pool) == want;
}
static void test_pool_destroy_with_pending_wait(void)
{
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_event_pool *pool = NULL, *doomed = NULL;
    gf_event *ev = NULL, *pooled = NULL, *plain = NULL;
    gf_event_pool_stats st;
    int spare;   /* the pool's events on its shelves before the release */
    th_gate gate;
    th_flag fired;
    if (!CHECK_EQ_RESULT(gf_device_open(R.backend, 0, &dev), GF_OK)) return;
    th_gate_init(&gate);
    th_flag_init(&fired);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_create(dev, NULL, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_create(dev, NULL, &doomed), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &plain), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_acquire(pool, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_acquire(doomed, 0, &pooled), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(plain, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(pooled, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(ev, th_flag_cb, &fired, NULL), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(plain, th_flag_cb, &fired, NULL), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(pooled, th_flag_cb, &fired, NULL), GF_OK);

    /* a pooled event: released now, back on its shelf once its wait has run */
    spare = pool_available(pool);
    CHECK_EQ_RESULT(gf_event_pool_release(pool, ev), GF_OK);
    CHECK_FAIL(gf_event_pool_release(pool, ev), GF_ERROR_INVALID_STATE);   /* twice */
    CHECK(contains(gf_last_error(), "already released"), "1: a second release is refused as one");
    CHECK_FAIL(gf_event_record(ev, s), GF_ERROR_INVALID_STATE);            /* released */
    memset(&st, 0, sizeof st);
    CHECK(gf_event_pool_get_stats(pool, &st) == GF_OK && st.in_use == 1 && st.available == spare,
          "1: an event released with its wait pending is handed to no one until the wait has run");
    {
        gf_event *taken[64];
        int n, seen = 0;
        for (n = 0; n < spare + 1 && n < 64 && gf_event_pool_acquire(pool, 0, &taken[n]) == GF_OK; n++) seen |= taken[n] == ev;
        CHECK(n == spare + 1 && !seen, "1: acquires meanwhile get every event but it");
        while (n-- > 0) CHECK_EQ_RESULT(gf_event_pool_release(pool, taken[n]), GF_OK);
    }
    spare = pool_available(pool);

    /* a plain event: destroyed now (no refusal), freed once its wait has run */
    th_prime();
    gf_event_destroy(plain);
    CHECK(!strcmp(gf_last_error(), th_sentinel), "1: an event with a pending wait is destroyed without a refusal");
    CHECK_SETS_ERROR(gf_event_destroy(plain));   /* its memory lives until the wait has run: a second destroy is seen */
    CHECK(contains(gf_last_error(), "destroyed already"), "1: a second destroy is refused as one");

    /* a pool: destroyed now, freed with its events once the wait on one of them has run */
    th_prime();
    gf_event_pool_destroy(doomed);
    CHECK(!strcmp(gf_last_error(), th_sentinel), "1: a pool with a pending wait on an event is destroyed without a refusal");
    CHECK_SETS_ERROR(gf_event_pool_destroy(doomed));
    CHECK(contains(gf_last_error(), "destroyed already"), "1: a second pool destroy is refused as one");

    CHECK(th_flag_get(&fired) == 0, "1: no wait ran before its event completed");
    th_gate_open(&gate);
    CHECK(th_flag_wait(&fired, 3, TH_WAIT_MS), "1: every wait runs once its event completes, destroyed or not");
    CHECK(fired.status == GF_OK, "1: each with GF_OK");
    CHECK(pool_available_reaches(pool, spare + 1), "1: the released event is back in its pool after its wait");
    {
        gf_event *taken[64];
        int n, seen = 0;
        for (n = 0; n < spare + 1 && n < 64 && gf_event_pool_acquire(pool, 0, &taken[n]) == GF_OK; n++) seen |= taken[n] == ev;
        CHECK(n == spare + 1 && seen, "1: and handed out again");
        while (n-- > 0) CHECK_EQ_RESULT(gf_event_pool_release(pool, taken[n]), GF_OK);
    }
    gf_event_pool_destroy(pool);
    gf_stream_destroy(s);
    th_said_clear();
    gf_set_logger(th_said_logger, NULL);
    gf_device_close(dev);
    gf_set_logger(NULL, NULL);
    CHECK(th_said_count("objects still alive") == 0, "1: the close finds nothing left alive (the destroys counted)");
    th_flag_destroy(&fired);
    th_gate_destroy(&gate);
}

/* ---- 1b: a destroy while the event's last wait is running (review A1: the wait stopped counting
   before its callback ran, so a destroy, a release or a pool's destroy on another thread went
   through at once and freed what the callback was still using) ---------------------------------- */
typedef struct { gf_event *ev; th_flag running, go; gf_result seen; } busy_wait;
static void busy_wait_cb(void *user, gf_result status)
{
    busy_wait *b = (busy_wait *)user;
    (void)status;
    th_flag_add(&b->running, 1);
    th_flag_wait(&b->go, 1, TH_WAIT_MS);   /* the test destroys meanwhile */
    b->seen = gf_event_query(b->ev);        /* the callback may still name its event */
    th_flag_add(&b->running, 1);            /* done: seen is written */
}
static void test_destroy_while_wait_runs(void)
{
    gf_event_pool *pool = NULL;
    busy_wait b[2];
    int k;
    CHECK_EQ_RESULT(gf_event_pool_create(R.dev, NULL, &pool), GF_OK);
    for (k = 0; k < 2; k++) {
        memset(&b[k], 0, sizeof b[k]);
        th_flag_init(&b[k].running);
        th_flag_init(&b[k].go);
        b[k].seen = GF_ERROR_INVALID_STATE;
    }
    CHECK_EQ_RESULT(gf_event_create(R.dev, 0, &b[0].ev), GF_OK);        /* never recorded: complete */
    CHECK_EQ_RESULT(gf_event_pool_acquire(pool, 0, &b[1].ev), GF_OK);
    for (k = 0; k < 2; k++) {
        CHECK_EQ_RESULT(gf_event_on_complete(b[k].ev, busy_wait_cb, &b[k], NULL), GF_OK);
        CHECK(th_flag_wait(&b[k].running, 1, TH_WAIT_MS), "1b: the wait's callback runs");
        if (k == 0) gf_event_destroy(b[k].ev);
        else { CHECK_EQ_RESULT(gf_event_pool_release(pool, b[k].ev), GF_OK); gf_event_pool_destroy(pool); }
        th_flag_add(&b[k].go, 1);
    }
    CHECK_EQ_RESULT(gf_device_synchronize(R.dev), GF_OK);
    for (k = 0; k < 2; k++) {
        CHECK(th_flag_wait(&b[k].running, 2, TH_WAIT_MS) && b[k].seen == GF_OK, k ? "1b: a pool destroyed while its event's wait ran is freed after the callback (ASan: no use after free)"
                                    : "1b: an event destroyed while its wait ran is freed after the callback (ASan: no use after free)");
        th_flag_destroy(&b[k].running);
        th_flag_destroy(&b[k].go);
    }
}

/* ---- 2: graph updates racing launches into captures and other updates ----------------------- */
typedef struct { gf_graph *g, *h, *k; gf_stream *s; int iters; int failures; } graph_race;

static gf_result capture_fill(gf_stream *s, gf_buffer *b, unsigned char v, gf_graph **out)
{
    gf_result r = gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL);
    if (r == GF_OK && (r = gf_fill_async(s, b, 0, v, 64)) != GF_OK) { gf_graph *g = NULL; gf_stream_end_capture(s, &g); return r; }
    return r == GF_OK ? gf_stream_end_capture(s, out) : r;
}
static void *race_updates(void *p)
{
    graph_race *gr = (graph_race *)p;
    int i;
    for (i = 0; i < gr->iters; i++) {
        if (gf_graph_update(gr->g, (i & 1) ? gr->h : gr->k) != GF_OK) gr->failures++;
        if (gf_graph_update(gr->h, (i & 1) ? gr->k : gr->g) != GF_OK) gr->failures++;
    }
    return NULL;
}
static void *race_captures(void *p)   /* launches G inside a capture: the capture copies G in */
{
    graph_race *gr = (graph_race *)p;
    int i;
    for (i = 0; i < gr->iters; i++) {
        gf_graph *outer = NULL;
        if (gf_stream_begin_capture(gr->s, GF_CAPTURE_RELAXED) != GF_OK) { gr->failures++; continue; }
        if (gf_graph_launch(gr->g, gr->s) != GF_OK) gr->failures++;
        if (gf_graph_launch(gr->h, gr->s) != GF_OK) gr->failures++;
        if (gf_stream_end_capture(gr->s, &outer) != GF_OK) { gr->failures++; continue; }
        gf_graph_destroy(outer);
    }
    return NULL;
}
static void test_graph_update_races(void)
{
    gf_stream *s1 = mk_stream("capture a"), *s2 = mk_stream("capture b");
    gf_buffer *b = NULL;
    graph_race a, c;
    pthread_t t1, t2;
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 256, &b), GF_OK);
    memset(&a, 0, sizeof a);
    CHECK_EQ_RESULT(capture_fill(s1, b, 1, &a.g), GF_OK);
    CHECK_EQ_RESULT(capture_fill(s1, b, 2, &a.h), GF_OK);
    CHECK_EQ_RESULT(capture_fill(s1, b, 3, &a.k), GF_OK);
    a.s = s2;
    a.iters = 300;
    c = a;
    pthread_create(&t1, NULL, race_updates, &a);
    pthread_create(&t2, NULL, race_captures, &c);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK(a.failures == 0 && c.failures == 0, "2: concurrent updates and captures of one graph all succeed");
    CHECK_EQ_RESULT(gf_device_synchronize(R.dev), GF_OK);
    gf_graph_destroy(a.g);
    gf_graph_destroy(a.h);
    gf_graph_destroy(a.k);
    gf_buffer_destroy(b);
    gf_stream_destroy(s1);
    gf_stream_destroy(s2);
}

/* ---- 3: a destroy with no host memory left must still wait for queued work ------------------ */
static void test_destroy_without_memory(void)
{
    gf_stream *s = mk_stream("writer");
    gf_buffer *b = NULL;
    th_gate gate;
    opener o;
    pthread_t t;
    th_gate_init(&gate);
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 1 << 20, &b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x5a, 1 << 20), GF_OK);   /* runs after the gate opens */
    o.gate = &gate;
    o.ms = 100;
    pthread_create(&t, NULL, open_later, &o);
    th_prime();
    ra_fail_here = 1;          /* this thread gets no host memory during the destroy */
    gf_buffer_destroy(b);      /* must wait for the fill, not free what it will write */
    ra_fail_here = 0;
    pthread_join(t, NULL);
    CHECK(TH_GATE_LEFT(&gate) == 1, "3: the destroy returned only after the queued fill could run");
    /* the fuzzer's finding: the failed fence's text stayed, so the caller took the destroy for a
       refusal and used the freed buffer again */
    CHECK(!strcmp(gf_last_error(), th_sentinel), "3: the destroy went through: it leaves no error text");
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_stream_destroy(s);
    th_gate_destroy(&gate);
}

/* ---- 4: the stream-ordered cache gives memory back ------------------------------------------- */
static void test_cache_gives_memory_back(void)
{
    gf_stream *s = mk_stream("growing");
    size_t mib = (size_t)1 << 20, size;
    int ok = 1, rounds = 0;
    /* 1..40 MiB, each freed before the next: never more than 40 MiB live on a 64 MiB device,
       but without a release the cache would hold 1+2+...: out of memory after ~10 rounds */
    for (size = mib; size <= 40 * mib; size += mib) {
        gf_buffer *b = NULL;
        if (gf_buffer_create_async(s, size, &b) != GF_OK) { ok = 0; break; }
        if (gf_fill_async(s, b, 0, 1, size) != GF_OK || gf_buffer_destroy_async(s, b) != GF_OK) { ok = 0; break; }
        rounds++;
    }
    CHECK(ok && rounds == 40, "4: growing stream-ordered allocations on a 64 MiB device never run out");
    {   /* and a plain allocation of most of the device succeeds even right after */
        gf_buffer *big = NULL;
        CHECK_EQ_RESULT(gf_buffer_create(R.dev, 60 * mib, &big), GF_OK);
        if (big) gf_buffer_destroy(big);
    }
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_stream_destroy(s);
}

/* ---- 5: the first stream-ordered allocations of a device, from two threads ----------------- */
typedef struct { gf_device *dev; int failures; } first_use;
static void *first_alloc(void *p)
{
    first_use *f = (first_use *)p;
    gf_stream *s = NULL;
    int i;
    if (gf_stream_create(f->dev, NULL, &s) != GF_OK) { f->failures++; return NULL; }
    for (i = 0; i < 50; i++) {
        gf_buffer *b = NULL;
        if (gf_buffer_create_async(s, 4096 + (size_t)i, &b) != GF_OK || gf_buffer_destroy_async(s, b) != GF_OK) f->failures++;
    }
    gf_stream_synchronize(s);
    gf_stream_destroy(s);
    return NULL;
}
static void test_cache_first_use_race(void)
{
    int round;
    for (round = 0; round < 4; round++) {   /* a fresh device each time: the cache's first use races */
        first_use a, b;
        pthread_t t1, t2;
        gf_device *dev = NULL;
        if (!CHECK_EQ_RESULT(gf_device_open(R.backend, 0, &dev), GF_OK)) return;
        a.dev = b.dev = dev;
        a.failures = b.failures = 0;
        pthread_create(&t1, NULL, first_alloc, &a);
        pthread_create(&t2, NULL, first_alloc, &b);
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        CHECK(a.failures == 0 && b.failures == 0, "5: two threads' first stream-ordered allocations succeed");
        gf_device_close(dev);
    }
}

/* ---- 6: one event recorded from two threads while others wait on it and query it ----------- */
typedef struct { gf_event *ev; gf_stream *s; int recorder; int *stop; int failures; } ev_race;
static void *ev_race_main(void *p)
{
    ev_race *e = (ev_race *)p;
    while (!__atomic_load_n(e->stop, __ATOMIC_ACQUIRE)) {
        gf_result r = e->recorder ? gf_event_record(e->ev, e->s) : gf_stream_wait_event(e->s, e->ev);
        gf_result q = gf_event_query(e->ev);
        if (r != GF_OK || (q != GF_OK && q != GF_NOT_READY)) e->failures++;
    }
    return NULL;
}
static void test_event_record_race(void)
{
    gf_event *ev = NULL;
    gf_stream *s[4];
    ev_race e[4];
    pthread_t t[4];
    int stop = 0;
    int i, failures = 0;
    CHECK_EQ_RESULT(gf_event_create(R.dev, 0, &ev), GF_OK);
    for (i = 0; i < 4; i++) {
        s[i] = mk_stream("racer");
        e[i].ev = ev; e[i].s = s[i]; e[i].recorder = i < 2; e[i].stop = &stop; e[i].failures = 0;
        pthread_create(&t[i], NULL, ev_race_main, &e[i]);
    }
    th_sleep_ms(200);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 4; i++) { pthread_join(t[i], NULL); failures += e[i].failures; }
    CHECK(failures == 0, "6: concurrent records, waits and queries of one event all succeed");
    for (i = 0; i < 4; i++) { gf_stream_synchronize(s[i]); gf_stream_destroy(s[i]); }
    gf_event_destroy(ev);
}

/* ---- 7, 8: a failing flow task or capture function keeps its own message ------------------- */
static gf_buffer *msg_buf;
static gf_result task_out_of_range(gf_stream *s, void *user)
{
    (void)user;
    return gf_fill_async(s, msg_buf, 1000, 0, 64);   /* past the 256-byte buffer: OUT_OF_RANGE */
}
static gf_result task_silent_failure(gf_stream *s, void *user)
{
    (void)s; (void)user;
    return GF_ERROR_INVALID_STATE;   /* a user's own failure: no gpuflow call made a message */
}
static gf_result task_ok(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, msg_buf, 0, 1, 16); }

static void test_failure_messages(void)
{
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_stream *s = mk_stream("capturer");
    gf_graph *g = NULL;
    gf_task a = 0, b = 0;   /* 0: no task, if an add fails */
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 256, &msg_buf), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_create(R.dev, NULL, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_flow_create(R.dev, NULL, &flow), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "first", task_ok, NULL, &a), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "ranged", task_out_of_range, NULL, &b), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, a, b), GF_OK);
    CHECK_FAIL(gf_flow_run(flow, pool), GF_ERROR_OUT_OF_RANGE);
    CHECK(contains(gf_last_error(), "task 'ranged'") && contains(gf_last_error(), "past the buffer"),
          "7: a failing task's message names the task and keeps the task's own detail");
    gf_flow_destroy(flow);
    flow = NULL;   /* not the freed one, should the next create fail before it writes flow */
    CHECK_EQ_RESULT(gf_flow_create(R.dev, NULL, &flow), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "silent", task_silent_failure, NULL, &a), GF_OK);
    CHECK_FAIL(gf_flow_run(flow, pool), GF_ERROR_INVALID_STATE);
    CHECK(contains(gf_last_error(), "task 'silent'") && contains(gf_last_error(), "without a message"),
          "7: a task that fails silently is named, and the text says it gave no message");
    CHECK_EQ_RESULT(gf_flow_add(flow, "fine", task_ok, NULL, &b), GF_OK);   /* the flow stays usable */
    gf_flow_destroy(flow);

    CHECK_FAIL(gf_graph_capture(s, 0, task_out_of_range, NULL, &g), GF_ERROR_OUT_OF_RANGE);
    CHECK(contains(gf_last_error(), "capture function") && contains(gf_last_error(), "past the buffer"),
          "8: gf_graph_capture's failure carries the capture function's message");
    CHECK_FAIL(gf_graph_capture(s, 1, task_silent_failure, NULL, &g), GF_ERROR_INVALID_STATE);
    CHECK(contains(gf_last_error(), "warm-up") && contains(gf_last_error(), "without a message"),
          "8: a silent failure in a warm-up run is reported as such");
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, task_ok, NULL, &g), GF_OK);   /* and the stream captures again */
    gf_graph_destroy(g);
    gf_stream_pool_destroy(pool);
    gf_buffer_destroy(msg_buf);
    gf_stream_destroy(s);
}

/* ---- 9: a size near SIZE_MAX never reaches the allocator ----------------------------------- */
static void test_huge_sizes(void)
{
    gf_buffer *b = NULL;
    size_t sizes[3];
    int i;
    sizes[0] = SIZE_MAX; sizes[1] = SIZE_MAX - 4095; sizes[2] = SIZE_MAX / 2 + 1;
    for (i = 0; i < 3; i++) {
        __atomic_store_n(&ra_largest, 0, __ATOMIC_RELAXED);
        CHECK_FAIL(gf_buffer_create(R.dev, sizes[i], &b), GF_ERROR_OUT_OF_MEMORY);
        CHECK(b == NULL, "9: no buffer handed out");
        if (R.backend == GF_BACKEND_STUB)
            CHECK(__atomic_load_n(&ra_largest, __ATOMIC_RELAXED) < ((size_t)64 << 20), "9: the stub never asked the allocator for it");
    }
}

/* ---- 10, 12: launch arguments no driver takes ----------------------------------------------- */
static void test_launch_arguments(void)
{
    gf_module *mod = NULL;
    gf_kernel *fill = NULL;
    gf_stream *s = mk_stream("launcher");
    gf_buffer *b = NULL;
    gf_device_info info = {0};   /* zeros if gf_device_info fails */
    gf_launch_dims dims;
    gf_arg args[4];
    uint32_t n = 16, v = 7;
    static unsigned char big[8192];
    gf_result r = gf_module_load(R.dev, &tk_module, &mod);
    if (r == GF_ERROR_NOT_SUPPORTED) { SKIP("no form of the test kernels for this backend"); gf_stream_destroy(s); return; }
    CHECK_EQ_RESULT(r, GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &fill), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 64, &b), GF_OK);
    gf_device_info(R.dev, &info);
    CHECK(info.max_kernel_args_bytes >= 256, "10: the device states its kernel-argument limit");
    memset(&dims, 0, sizeof dims);
    dims.grid[0] = dims.grid[1] = dims.grid[2] = 1;
    dims.block[0] = 16; dims.block[1] = dims.block[2] = 1;
    args[0].value = 0; args[0].size = 0; args[0].buffer = b;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &v; args[2].size = sizeof v; args[2].buffer = 0;
    args[3] = args[2];
    args[2].value = big; args[2].size = SIZE_MAX;                       /* wraps (size + 15) & ~15 */
    CHECK_FAIL(gf_launch(s, fill, dims, args, 3), GF_ERROR_INVALID_ARGUMENT);
    args[2].size = info.max_kernel_args_bytes + 1;                      /* just past the limit */
    if (info.max_kernel_args_bytes + 1 <= sizeof big) {
        CHECK_FAIL(gf_launch(s, fill, dims, args, 3), GF_ERROR_INVALID_ARGUMENT);
        CHECK(contains(gf_last_error(), "limit"), "10: the refusal names the limit");
    }
    args[2].value = &v; args[2].size = sizeof v;
    if (R.backend == GF_BACKEND_STUB) {   /* the stub kernels declare their parameter counts */
        CHECK_FAIL(gf_launch(s, fill, dims, args, 2), GF_ERROR_INVALID_ARGUMENT);
        CHECK_FAIL(gf_launch(s, fill, dims, args, 4), GF_ERROR_INVALID_ARGUMENT);
        CHECK(contains(gf_last_error(), "takes 3 arguments"), "12: the refusal gives the kernel's parameter count");
    }
    CHECK_EQ_RESULT(gf_launch(s, fill, dims, args, 3), GF_OK);          /* the right launch still runs */
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    {
        uint32_t h[16] = { 0 };
        int i, ok = 1;
        CHECK_EQ_RESULT(gf_copy_to_host(h, b, 0, sizeof h), GF_OK);
        for (i = 0; i < 16; i++) ok &= h[i] == 7;
        CHECK(ok, "10: the launch after the refusals wrote its values");
    }
    gf_buffer_destroy(b);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
}

/* ---- 11: an idle stream queries GF_OK --------------------------------------------------------- */
static void test_idle_stream_query(void)
{
    gf_stream *s = mk_stream("idle");
    gf_event *ev = NULL;
    gf_buffer *b = NULL;
    int i, ready = 0;
    CHECK_EQ_RESULT(gf_event_create(R.dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 4096, &b), GF_OK);
    for (i = 0; i < 100; i++) {
        gf_fill_async(s, b, 0, (unsigned char)i, 4096);
        gf_event_record(ev, s);
        if (gf_event_synchronize(ev) == GF_OK && gf_stream_query(s) == GF_OK) ready++;
    }
    CHECK(ready == 100, "11: right after an event behind all of a stream's work completed, the stream queries GF_OK");
    gf_buffer_destroy(b);
    gf_event_destroy(ev);
    gf_stream_destroy(s);
}

/* ---- the logger, and gf_last_error() on success --------------------------------------------- */
typedef struct { int errors, notices; gf_result last_code; char last[256]; } log_seen;
static void test_logger_fn(void *user, gf_log_level level, gf_result code, const char *message)
{
    log_seen *l = (log_seen *)user;
    if (level == GF_LOG_ERROR) l->errors++; else l->notices++;
    l->last_code = code;
    snprintf(l->last, sizeof l->last, "%s", message);
}
static void test_logger(void)
{
    log_seen seen;
    gf_stream *s = mk_stream("logged");
    gf_result r;
    char before[1024];
    memset(&seen, 0, sizeof seen);
    gf_set_logger(test_logger_fn, &seen);
    /* plain calls: CHECK_FAIL's own priming is a logged failure too */
    r = gf_stream_wait_event(s, NULL);
    CHECK(r == GF_ERROR_INVALID_HANDLE && seen.errors == 1 && seen.last_code == GF_ERROR_INVALID_HANDLE &&
          strcmp(seen.last, gf_last_error()) == 0,
          "logger: a failure reaches it with its code and the same text as gf_last_error()");
    gf_stream_destroy((gf_stream *)(void *)&seen);   /* a void call's refusal is logged too (NULL: nothing to do, as free) */
    CHECK(seen.errors == 2 && contains(seen.last, "gf_stream_destroy"), "logger: a destroy given a bad handle is logged");
    snprintf(before, sizeof before, "%s", gf_last_error());
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(strcmp(before, gf_last_error()) == 0, "gf_last_error() does not change on success");
    CHECK(seen.errors == 2, "logger: a success logs nothing");
    gf_set_logger(NULL, NULL);
    r = gf_stream_wait_event(s, NULL);
    CHECK(r == GF_ERROR_INVALID_HANDLE && seen.errors == 2, "logger: NULL makes it silent again");
    gf_stream_destroy(s);
}

/* A stream callback that enqueues: the stub did it silently, and CUDA and HIP fail it (an outside
   review of the stub as a bug catcher). The stub says so, once, as a warning. */
static gf_stream *cb_other;
static gf_buffer *cb_buf;
static void enqueuing_cb(void *user, gf_result status) { (void)user; (void)status; (void)gf_fill_async(cb_other, cb_buf, 0, 1, 16); }
static void test_callback_enqueues(void)
{
    log_seen seen;
    gf_stream *s = mk_stream("calls back");
    int i;
    if (R.backend != GF_BACKEND_STUB) { SKIP("the stub's warning about a stream callback's calls"); gf_stream_destroy(s); return; }
    cb_other = mk_stream("other");
    memset(&seen, 0, sizeof seen);
    gf_set_logger(test_logger_fn, &seen);
    if (CHECK_EQ_RESULT(gf_buffer_create(R.dev, 16, &cb_buf), GF_OK)) {
        for (i = 0; i < 2; i++) CHECK_EQ_RESULT(gf_stream_add_callback(s, enqueuing_cb, NULL), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(cb_other), GF_OK);
        CHECK(seen.notices == 1 && contains(seen.last, "a stream callback enqueued work") && contains(seen.last, "CUDA and HIP"),
              "a stream callback that enqueues: the stub warns, once, that CUDA and HIP fail it");
        gf_buffer_destroy(cb_buf);
    }
    gf_set_logger(NULL, NULL);
    gf_stream_destroy(cb_other);
    gf_stream_destroy(s);
}

/* A logger that asks about the object whose call failed: the failure was logged while that
   object's lock was held, and the logger's call waited on it for good (found by review). Now
   a message waits until the thread holds no lock of the library's. */
static gf_stream_set *logged_set;
static int logger_queried;
static void querying_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    gf_frame_info fi;
    (void)user; (void)level; (void)code; (void)message;
    if (gf_stream_set_frames(logged_set, &fi) == GF_OK) logger_queried++;
}
/* A failure inside a flow's task is told before its call returns (the run holds the flow's
   lock, and messages waited for the run's end; past four they were dropped: found by review). */
static int task_logged;
static void counting_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    (void)user; (void)level; (void)code; (void)message;
    task_logged++;
}
static gf_result failing_task(gf_stream *s, void *user)
{
    int i, *told_in_time = (int *)user;
    for (i = 0; i < 6; i++) {
        int before = task_logged;
        (void)gf_stream_wait_event(s, NULL);   /* refused: logged */
        *told_in_time += task_logged == before + 1;
    }
    return GF_OK;
}
static void test_logger_in_flow_task(void)
{
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_task t;
    int told_in_time = 0;
    if (!CHECK_EQ_RESULT(gf_stream_pool_create(R.dev, NULL, &pool), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_flow_create(R.dev, NULL, &flow), GF_OK) && CHECK_EQ_RESULT(gf_flow_add(flow, "fails", failing_task, &told_in_time, &t), GF_OK)) {
        task_logged = 0;
        gf_set_logger(counting_logger, NULL);
        CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
        gf_set_logger(NULL, NULL);
        CHECK(told_in_time == 6 && task_logged == 6, "logger: each failure in a flow's task is told before its call returns, none dropped");
    }
    gf_flow_destroy(flow);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    gf_stream_pool_destroy(pool);
}
/* A logger whose own gpuflow call fails: that failure's message called the logger inside
   itself, for ever, until the stack overflowed (found by review). It is now left out, and the
   call's result and gf_last_error() still tell the logger. */
static int failing_logger_calls;
static gf_result failing_logger_got;
static int failing_logger_text;
static void failing_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    (void)user; (void)level; (void)code;
    if (!contains(message, "gf_stream_query")) return;   /* th_prime's own */
    failing_logger_calls++;
    failing_logger_got = gf_stream_query(NULL);
    failing_logger_text = contains(gf_last_error(), "gf_stream_query");
}
static void test_logger_calls_back(void)
{
    failing_logger_calls = 0;
    gf_set_logger(failing_logger, NULL);
    CHECK_FAIL(gf_stream_query(NULL), GF_ERROR_INVALID_HANDLE);
    gf_set_logger(NULL, NULL);
    CHECK(failing_logger_calls == 1 && failing_logger_got == GF_ERROR_INVALID_HANDLE && failing_logger_text,
          "logger: its own failing call is not logged to it (it recursed until the stack overflowed); the result and text still tell it");
    if (!CHECK_EQ_RESULT(gf_stream_set_create(R.dev, 2, "logged set", &logged_set), GF_OK)) return;
    logger_queried = 0;
    gf_set_logger(querying_logger, NULL);
    CHECK_FAIL(gf_stream_set_end_frame(logged_set), GF_ERROR_INVALID_STATE);   /* no frame open */
    gf_set_logger(NULL, NULL);
    CHECK(logger_queried >= 1, "logger: it may query the object whose call failed (no deadlock), and it heard the failure");
    CHECK(contains(gf_last_error(), "gf_stream_set_end_frame"), "logger: the failure keeps its own text after the logger's calls");
    gf_stream_set_destroy(logged_set);
}

/* ---- bounded waits ----------------------------------------------------------------------------- */
static void test_timeouts(void)
{
    gf_stream *s = mk_stream("blocked");
    gf_event *ev = NULL;
    th_gate gate;
    double t0;
    th_gate_init(&gate);
    CHECK_EQ_RESULT(gf_event_create(R.dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(s, 0), GF_OK);          /* idle: at once */
    CHECK_EQ_RESULT(gf_event_synchronize_timeout(ev, 0), GF_OK);          /* never recorded: complete */
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    t0 = th_now_ms();
    CHECK_FAIL(gf_stream_synchronize_timeout(s, 50), GF_TIMEOUT);
    CHECK(th_now_ms() - t0 >= 40, "timeout: the stream wait lasted about its bound");
    CHECK_FAIL(gf_event_synchronize_timeout(ev, 20), GF_TIMEOUT);
    CHECK_FAIL(gf_stream_synchronize_timeout(NULL, 1), GF_ERROR_INVALID_HANDLE);
    th_gate_open(&gate);
    CHECK_EQ_RESULT(gf_event_synchronize_timeout(ev, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(s, TH_WAIT_MS), GF_OK);
    gf_event_destroy(ev);
    gf_stream_destroy(s);
    th_gate_destroy(&gate);
}

/* ---- what the fuzzer found (tests/fuzz.c, KD1-KD5) -------------------------------------------- */
static gf_result count_runs(gf_stream *s, void *user) { (void)s; (*(int *)user)++; return GF_OK; }
static void test_fuzz_findings(void)
{
    gf_stream *a = mk_stream("recorder"), *b = mk_stream("waiter");
    gf_event *ev = NULL;
    gf_buffer *buf = NULL;
    gf_capture_desc d;
    gf_graph *g = NULL;
    int runs = 0;
    char state[2048];
    /* KD5: a wait names the stream that recorded its event, which may be gone by then */
    CHECK_EQ_RESULT(gf_event_create(R.dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, a), GF_OK);
    gf_stream_destroy(a);
    CHECK_EQ_RESULT(gf_stream_wait_event(b, ev), GF_OK);
    CHECK_EQ_RESULT(gf_device_write_state(R.dev, state, sizeof state), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
    /* KD1: handles are checked before ranges */
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 64, &buf), GF_OK);
    CHECK_FAIL(gf_copy_buffer_async(b, (gf_buffer *)ev, 0, (gf_buffer *)ev, 4, 16), GF_ERROR_INVALID_HANDLE);
    /* KD4: a refused capture description changes nothing, warm-up runs included */
    memset(&d, 0, sizeof d);
    d.warmup_runs = 2;
    d.pool = (gf_graph_pool *)buf;
    CHECK_FAIL(gf_graph_capture_desc(b, &d, count_runs, &runs, &g), GF_ERROR_INVALID_HANDLE);
    d.pool = NULL;
    d.mode = (gf_capture_mode)7;
    CHECK_FAIL(gf_graph_capture_desc(b, &d, count_runs, &runs, &g), GF_ERROR_INVALID_ARGUMENT);
    CHECK(runs == 0, "KD4: the capture function never ran for a refused description");
    gf_buffer_destroy(buf);
    gf_event_destroy(ev);
    gf_stream_destroy(b);
}

/* ==== interop: foreign streams and buffers, views of them, records across devices, graph args ====
   A "foreign" object is one gpuflow did not make: on the stub, host memory from malloc (the
   stub's native buffer); on OpenCL, a cl_mem and a cl_command_queue this test makes itself with
   the OpenCL API, in the gpuflow device's own context (gf_device_get_native). The contract
   (gpuflow.h, "interop: native handles out and in"): gpuflow uses what it is given and never
   destroys or resets it; a wrapped stream's destroy drains what gpuflow enqueued. So after the
   wrapper goes, the foreign object must be exactly as usable as before, its reference count
   unchanged, and (on the stub, under ASan) never freed or touched by gpuflow. */
#ifdef GPUFLOW_OPENCL
#include <dlfcn.h>
typedef struct foreign_cl {
    int tried, ok;
    void *lib;
    cl_context ctx;
    cl_device_id device;
    cl_command_queue queue;   /* the test's own queue, for its reads and writes */
    cl_mem (CL_API_CALL *CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (CL_API_CALL *ReleaseMemObject)(cl_mem);
    cl_int (CL_API_CALL *GetMemObjectInfo)(cl_mem, cl_mem_info, size_t, void *, size_t *);
    cl_command_queue (CL_API_CALL *CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties, cl_int *);
    cl_int (CL_API_CALL *ReleaseCommandQueue)(cl_command_queue);
    cl_int (CL_API_CALL *GetCommandQueueInfo)(cl_command_queue, cl_command_queue_info, size_t, void *, size_t *);
    cl_int (CL_API_CALL *EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint, const cl_event *, cl_event *);
    cl_int (CL_API_CALL *Finish)(cl_command_queue);
} foreign_cl;
static foreign_cl FCL;
static int fcl_sym(const char *name, void *fp, size_t size)
{
    void *p = dlsym(FCL.lib, name);
    if (!p) return 0;
    memcpy(fp, &p, size);   /* a function pointer carried as an object pointer */
    return 1;
}
#define FCL_SYM(field, name) fcl_sym(name, &FCL.field, sizeof FCL.field)
/* Loads the entry points and makes the test's queue on R.dev's context; 0 when unavailable. */
static int fcl_ready(void)
{
    gf_native_device nd;
    cl_int e = CL_SUCCESS;
    if (FCL.tried) return FCL.ok;
    FCL.tried = 1;
    if (!(FCL.lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL))) return 0;
    if (!FCL_SYM(CreateBuffer, "clCreateBuffer") || !FCL_SYM(ReleaseMemObject, "clReleaseMemObject") ||
        !FCL_SYM(GetMemObjectInfo, "clGetMemObjectInfo") || !FCL_SYM(CreateCommandQueue, "clCreateCommandQueue") ||
        !FCL_SYM(ReleaseCommandQueue, "clReleaseCommandQueue") || !FCL_SYM(GetCommandQueueInfo, "clGetCommandQueueInfo") ||
        !FCL_SYM(EnqueueWriteBuffer, "clEnqueueWriteBuffer") || !FCL_SYM(EnqueueReadBuffer, "clEnqueueReadBuffer") ||
        !FCL_SYM(Finish, "clFinish"))
        return 0;
    if (gf_device_get_native(R.dev, &nd) != GF_OK || !nd.context || !nd.device) return 0;
    FCL.ctx = (cl_context)nd.context;
    FCL.device = (cl_device_id)nd.device;
    FCL.queue = FCL.CreateCommandQueue(FCL.ctx, FCL.device, 0, &e);
    FCL.ok = FCL.queue != NULL && e == CL_SUCCESS;
    return FCL.ok;
}
static void fcl_done(void)
{
    if (FCL.queue) FCL.ReleaseCommandQueue(FCL.queue);
    if (FCL.lib) dlclose(FCL.lib);
    memset(&FCL, 0, sizeof FCL);
}
static long fcl_mem_refs(cl_mem m)
{
    cl_uint n = 0;
    return FCL.GetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, NULL) == CL_SUCCESS ? (long)n : -1;
}
static long fcl_queue_refs(cl_command_queue q)
{
    cl_uint n = 0;
    return FCL.GetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL) == CL_SUCCESS ? (long)n : -1;
}
#endif

/* A foreign buffer: made, read, written and released without gpuflow. */
typedef struct foreign_buf { uint64_t native; size_t bytes; gf_backend kind; } foreign_buf;   /* kind: whose API made it */
/* 1: this backend has foreign buffers the test can make; 0: SKIP (said once per test). */
static int foreign_available(void)
{
    if (R.backend == GF_BACKEND_STUB) return 1;
#ifdef GPUFLOW_OPENCL
    if (R.backend == GF_BACKEND_OPENCL) return fcl_ready();
#endif
    return 0;
}
static int foreign_make(foreign_buf *f, size_t bytes, unsigned char fill)
{
    f->bytes = bytes;
    f->native = 0;
    f->kind = R.backend;   /* read, written and released through the API that made it */
    if (f->kind == GF_BACKEND_STUB) {
        unsigned char *p = (unsigned char *)malloc(bytes);
        if (!p) return 0;
        memset(p, fill, bytes);
        f->native = (uint64_t)(uintptr_t)p;
        return 1;
    }
#ifdef GPUFLOW_OPENCL
    if (f->kind == GF_BACKEND_OPENCL) {
        cl_int e = CL_SUCCESS;
        unsigned char *tmp = (unsigned char *)malloc(bytes);
        cl_mem m = tmp ? FCL.CreateBuffer(FCL.ctx, CL_MEM_READ_WRITE, bytes, NULL, &e) : NULL;
        if (m && tmp) {
            memset(tmp, fill, bytes);
            e = FCL.EnqueueWriteBuffer(FCL.queue, m, CL_TRUE, 0, bytes, tmp, 0, NULL, NULL);
        }
        free(tmp);
        if (!m || e != CL_SUCCESS) { if (m) FCL.ReleaseMemObject(m); return 0; }
        f->native = (uint64_t)(uintptr_t)m;
        return 1;
    }
#endif
    return 0;
}
/* Reads and writes through the foreign API only (1: the API accepted it). */
static int foreign_read(const foreign_buf *f, size_t off, void *dst, size_t n)
{
    if (f->kind == GF_BACKEND_STUB) { memcpy(dst, (const unsigned char *)(uintptr_t)f->native + off, n); return 1; }
#ifdef GPUFLOW_OPENCL
    if (f->kind == GF_BACKEND_OPENCL)
        return FCL.EnqueueReadBuffer(FCL.queue, (cl_mem)(uintptr_t)f->native, CL_TRUE, off, n, dst, 0, NULL, NULL) == CL_SUCCESS;
#endif
    return 0;
}
static int foreign_write(const foreign_buf *f, size_t off, const void *src, size_t n)
{
    if (f->kind == GF_BACKEND_STUB) { memcpy((unsigned char *)(uintptr_t)f->native + off, src, n); return 1; }
#ifdef GPUFLOW_OPENCL
    if (f->kind == GF_BACKEND_OPENCL)
        return FCL.EnqueueWriteBuffer(FCL.queue, (cl_mem)(uintptr_t)f->native, CL_TRUE, off, n, src, 0, NULL, NULL) == CL_SUCCESS;
#endif
    return 0;
}
/* The owner lets it go: free() on the stub (ASan: a double free if gpuflow had freed it). */
static int foreign_release(foreign_buf *f)
{
    int ok = 0;
    if (f->kind == GF_BACKEND_STUB) { free((void *)(uintptr_t)f->native); ok = 1; }
#ifdef GPUFLOW_OPENCL
    if (f->kind == GF_BACKEND_OPENCL) ok = FCL.ReleaseMemObject((cl_mem)(uintptr_t)f->native) == CL_SUCCESS;
#endif
    f->native = 0;
    return ok;
}
/* The foreign reference count (OpenCL), or -1 where there is none. */
static long foreign_refs(const foreign_buf *f)
{
#ifdef GPUFLOW_OPENCL
    if (f->kind == GF_BACKEND_OPENCL) return fcl_mem_refs((cl_mem)(uintptr_t)f->native);
#endif
    (void)f;
    return -1;
}
/* The count once the driver has let go of finished commands that used the object (they may
   hold it a moment after they completed): waits, bounded, for it to come down to want. */
static long foreign_refs_settled(const foreign_buf *f, long want)
{
    double end = th_now_ms() + TH_WAIT_MS;
    long now;
    while ((now = foreign_refs(f)) > want && th_now_ms() < end) th_sleep_ms(1);
    return now;
}
/* n bytes at off all equal v, read through the foreign API. */
static int foreign_all(const foreign_buf *f, size_t off, size_t n, unsigned char v)
{
    unsigned char tmp[4096];
    size_t i;
    if (n > sizeof tmp || !foreign_read(f, off, tmp, n)) return 0;
    for (i = 0; i < n; i++) if (tmp[i] != v) return 0;
    return 1;
}
static int buffer_all(gf_buffer *b, size_t off, size_t n, unsigned char v)
{
    unsigned char tmp[4096] = { 0 };   /* the copy writes it from the stream's thread: said here for a reader (and the analyzer) */
    size_t i;
    if (n > sizeof tmp || gf_copy_to_host(tmp, b, off, n) != GF_OK) return 0;
    for (i = 0; i < n; i++) if (tmp[i] != v) return 0;
    return 1;
}
/* What gpuflow accounts as its own device memory: wrapping must not change it. */
static uint64_t device_bytes(void)
{
    gf_memory_stats ms = {0};
    memset(&ms, 0, sizeof ms);
    gf_device_memory_stats(R.dev, &ms);
    return ms.device_bytes;
}
/* The last call left gf_last_error() alone: the primed sentinel is still this thread's text. */
static int no_new_error(void) { return strcmp(gf_last_error(), th_sentinel) == 0; }

/* ---- I1: a wrapped buffer is destroyed while the foreign one lives --------------------------- */
static void test_wrap_buffer_wrapper_first(void)
{
    gf_stream *s;
    gf_buffer *w = NULL;
    foreign_buf f;
    uint64_t before_bytes;
    long refs0;
    unsigned char back[64];
    if (!foreign_available()) { SKIP("I1: no foreign buffers for this backend here"); return; }
    if (!CHECK(foreign_make(&f, 4096, 0xab), "I1: the foreign buffer is made")) return;
    s = mk_stream("wrap user");
    before_bytes = device_bytes();
    refs0 = foreign_refs(&f);
    CHECK_EQ_RESULT(gf_buffer_wrap(R.dev, f.native, 4096, &w), GF_OK);
    if (!w) { foreign_release(&f); gf_stream_destroy(s); return; }
    CHECK(gf_buffer_native(w) == f.native, "I1: gf_buffer_native gives back the wrapped handle");
    CHECK(gf_buffer_size(w) == 4096, "I1: the wrapper has the size it was given");
    CHECK(device_bytes() == before_bytes, "I1: wrapped memory is not counted as gpuflow's device memory");
    CHECK(foreign_refs(&f) == refs0, "I1: wrapping takes no reference on the foreign object");
    CHECK(buffer_all(w, 0, 4096, 0xab), "I1: gpuflow reads what the foreign side wrote");
    CHECK_EQ_RESULT(gf_fill_async(s, w, 100, 0x5c, 200), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(foreign_all(&f, 100, 200, 0x5c) && foreign_all(&f, 0, 100, 0xab) && foreign_all(&f, 300, 3796, 0xab),
          "I1: gpuflow's fill reached the foreign memory, in its range only");
    th_prime();
    gf_buffer_destroy(w);
    CHECK(no_new_error(), "I1: destroying the wrapper succeeds");
    CHECK(device_bytes() == before_bytes, "I1: destroying the wrapper leaves the device's accounting as it was");
    CHECK(foreign_refs_settled(&f, refs0) == refs0, "I1: destroying the wrapper releases nothing of the foreign object");
    CHECK(foreign_all(&f, 100, 200, 0x5c) && foreign_all(&f, 0, 100, 0xab), "I1: the foreign memory is untouched by the destroy");
    memset(back, 0x3e, sizeof back);
    CHECK(foreign_write(&f, 0, back, sizeof back) && foreign_all(&f, 0, sizeof back, 0x3e),
          "I1: the foreign buffer is still usable after the wrapper is gone");
    CHECK(foreign_release(&f), "I1: the owner releases it (not freed twice: ASan would say)");
    gf_stream_destroy(s);
}

/* ---- I2: the foreign buffer is released first, the wrapper destroyed later ------------------- */
/* The contract says gpuflow never destroys what it was given; it says nothing of a wrapper that
   outlives its memory. What this asserts: with no work pending, a wrapper's (and its view's)
   destroy touches nothing of the released memory (ASan on the stub), succeeds, and accounts
   nothing. */
static void test_wrap_buffer_foreign_first(void)
{
    gf_stream *s;
    gf_buffer *w = NULL, *v = NULL;
    foreign_buf f;
    uint64_t before_bytes;
    if (!foreign_available()) { SKIP("I2: no foreign buffers for this backend here"); return; }
    if (!CHECK(foreign_make(&f, 4096, 0x11), "I2: the foreign buffer is made")) return;
    s = mk_stream("released first");
    before_bytes = device_bytes();
    CHECK_EQ_RESULT(gf_buffer_wrap(R.dev, f.native, 4096, &w), GF_OK);
    if (!w) { foreign_release(&f); gf_stream_destroy(s); return; }
    CHECK_EQ_RESULT(gf_buffer_view(w, 1024, 1024, &v), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, w, 0, 0x22, 4096), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, v, 0, 0x33, 1024), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(foreign_all(&f, 0, 1024, 0x22) && foreign_all(&f, 1024, 1024, 0x33), "I2: both fills reached the foreign memory");
    CHECK(foreign_release(&f), "I2: the owner releases the foreign buffer while gpuflow still wraps it");
    th_prime();
    gf_buffer_destroy(v);
    CHECK(no_new_error(), "I2: the view of released foreign memory is destroyed without complaint");
    th_prime();
    gf_buffer_destroy(w);
    CHECK(no_new_error(), "I2: the wrapper of released foreign memory is destroyed without complaint");
    CHECK(device_bytes() == before_bytes, "I2: and the device's accounting is as before");
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_stream_destroy(s);
}

/* ---- I3: a wrapped stream (OpenCL: the test's own queue; the stub has none) ------------------ */
static void test_wrap_stream(void)
{
    gf_stream *ws = NULL;
    int dummy = 0;
    if (R.backend == GF_BACKEND_STUB) {
        CHECK_FAIL(gf_stream_wrap(R.dev, &dummy, NULL, &ws), GF_ERROR_NOT_SUPPORTED);
        CHECK(ws == NULL && contains(gf_last_error(), "native streams"), "I3: the stub refuses to wrap a stream, and says why");
        CHECK_FAIL(gf_stream_wrap(R.dev, NULL, NULL, &ws), GF_ERROR_INVALID_ARGUMENT);
        {
            gf_stream *s = mk_stream("no native");
            CHECK(gf_stream_native(s) == NULL, "I3: a stub stream has no native handle");
            gf_stream_destroy(s);
        }
        return;
    }
#ifdef GPUFLOW_OPENCL
    if (R.backend == GF_BACKEND_OPENCL && fcl_ready()) {
        cl_int e = CL_SUCCESS;
        cl_command_queue q = FCL.CreateCommandQueue(FCL.ctx, FCL.device, 0, &e), ooo;
        gf_stream_desc d;
        gf_buffer *b = NULL;
        foreign_buf f;
        unsigned char host[4096];
        long refs0;
        th_gate gate;
        opener o;
        pthread_t t;
        if (!CHECK(q != NULL && e == CL_SUCCESS, "I3: the foreign queue is made")) return;
        refs0 = fcl_queue_refs(q);
        d.label = "foreign queue";
        d.priority = GF_PRIORITY_NORMAL;
        CHECK_EQ_RESULT(gf_stream_wrap(R.dev, q, &d, &ws), GF_OK);
        if (!ws) { FCL.ReleaseCommandQueue(q); return; }
        CHECK(gf_stream_native(ws) == (void *)q, "I3: gf_stream_native gives back the wrapped queue");
        CHECK(strcmp(gf_stream_label(ws), "foreign queue") == 0, "I3: the wrapped stream keeps its label");
        CHECK(fcl_queue_refs(q) == refs0, "I3: wrapping takes no reference on the queue");
        CHECK_EQ_RESULT(gf_buffer_create(R.dev, sizeof host, &b), GF_OK);
        th_gate_init(&gate);
        memset(host, 0, sizeof host);
        /* destroy drains what gpuflow enqueued: held behind a gate opened 100 ms later */
        CHECK_EQ_RESULT(gf_stream_add_callback(ws, th_gate_cb, &gate), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(ws, b, 0, 0x6d, sizeof host), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host_async(ws, host, b, 0, sizeof host), GF_OK);
        o.gate = &gate;
        o.ms = 100;
        pthread_create(&t, NULL, open_later, &o);
        gf_stream_destroy(ws);
        CHECK(TH_GATE_LEFT(&gate) == 1 && host[0] == 0x6d && host[sizeof host - 1] == 0x6d,
              "I3: destroying a wrapped stream drained its work (the copy had landed when it returned)");
        pthread_join(t, NULL);
        th_gate_destroy(&gate);
        /* Commands hold their queue: PoCL keeps a buffer's last command until the cl_mem goes, and
           a callback's marker is let go by the callback thread just after the work it held ran.
           So the count comes back to the owner's alone soon after; it must never drop below. */
        gf_buffer_destroy(b);
        b = NULL;
        {
            double end = th_now_ms() + TH_WAIT_MS;
            long now;
            while ((now = fcl_queue_refs(q)) > refs0 && th_now_ms() < end) th_sleep_ms(1);
            CHECK(now == refs0, "I3: once its commands are let go, the queue has the owner's reference count: gpuflow released none and kept none");
        }
        /* the queue is still the owner's and still works */
        if (foreign_make(&f, 256, 0)) {
            unsigned char pat[256];
            memset(pat, 0x47, sizeof pat);
            e = FCL.EnqueueWriteBuffer(q, (cl_mem)(uintptr_t)f.native, CL_FALSE, 0, sizeof pat, pat, 0, NULL, NULL);
            CHECK(e == CL_SUCCESS && FCL.Finish(q) == CL_SUCCESS && foreign_all(&f, 0, sizeof pat, 0x47),
                  "I3: the foreign queue still runs work after its wrapper is gone");
            foreign_release(&f);
        }
        CHECK(FCL.ReleaseCommandQueue(q) == CL_SUCCESS, "I3: the owner releases the queue (its last reference)");
        /* an out-of-order queue cannot be a stream */
        ooo = FCL.CreateCommandQueue(FCL.ctx, FCL.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &e);
        if (ooo && e == CL_SUCCESS) {
            long r0 = fcl_queue_refs(ooo);
            ws = NULL;
            CHECK_FAIL(gf_stream_wrap(R.dev, ooo, NULL, &ws), GF_ERROR_INVALID_ARGUMENT);
            CHECK(ws == NULL && contains(gf_last_error(), "in-order") && fcl_queue_refs(ooo) == r0,
                  "I3: an out-of-order queue is refused, named, and left as it was");
            FCL.ReleaseCommandQueue(ooo);
        } else {
            SKIP("I3: the OpenCL device has no out-of-order queues");
        }
        return;
    }
#endif
    SKIP("I3: no foreign streams for this backend here");
}

/* ---- I4: views of wrapped buffers, the parent destroyed before and after the view ------------- */
static void test_wrap_views(void)
{
    gf_stream *s;
    gf_buffer *w = NULL, *v = NULL, *vv = NULL, *src = NULL;
    gf_module *mod = NULL;
    gf_kernel *fill = NULL;
    foreign_buf f;
    unsigned char pat[512];
    long refs0;
    int order;
    if (!foreign_available()) { SKIP("I4: no foreign buffers for this backend here"); return; }
    s = mk_stream("views");
    if (gf_module_load(R.dev, &tk_module, &mod) == GF_OK) gf_kernel_get(mod, "fill_u32", &fill);
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 512, &src), GF_OK);
    memset(pat, 0x77, sizeof pat);
    CHECK_EQ_RESULT(gf_copy_to_device(src, 0, pat, sizeof pat), GF_OK);
    for (order = 0; order < 2; order++) {   /* 0: the parent goes first; 1: the view goes first */
        if (!CHECK(foreign_make(&f, 4096, 0x01), "I4: the foreign buffer is made")) break;
        refs0 = foreign_refs(&f);
        w = v = NULL;
        CHECK_EQ_RESULT(gf_buffer_wrap(R.dev, f.native, 4096, &w), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_view(w, 1024, 512, &v), GF_OK);
        if (!w || !v) { if (v) gf_buffer_destroy(v); if (w) gf_buffer_destroy(w); foreign_release(&f); break; }
        CHECK_FAIL(gf_buffer_view(v, 0, 16, &vv), GF_ERROR_INVALID_ARGUMENT);        /* views of views */
        CHECK_FAIL(gf_buffer_view(w, 3840, 512, &vv), GF_ERROR_OUT_OF_RANGE);        /* past the end */
        CHECK(gf_buffer_size(v) == 512, "I4: the view has its own size");
        /* copy through the view: buffer -> view, then the view -> host */
        CHECK_EQ_RESULT(gf_copy_buffer_async(s, v, 0, src, 0, 512), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK(foreign_all(&f, 1024, 512, 0x77) && foreign_all(&f, 0, 1024, 0x01) && foreign_all(&f, 1536, 2560, 0x01),
              "I4: a copy into the view lands at its offset in the foreign memory, and only there");
        pat[0] = 0x55;
        CHECK(foreign_write(&f, 1024, pat, 1), "I4: the foreign side writes under the view");
        {
            unsigned char h[512];
            memset(h, 0, sizeof h);   /* what the copy did not write fails the check */
            CHECK(gf_copy_to_host(h, v, 0, sizeof h) == GF_OK && h[0] == 0x55 && h[1] == 0x77 && h[511] == 0x77,
                  "I4: a copy out of the view reads the foreign memory at its offset");
        }
        if (order == 0) {
            th_prime();
            gf_buffer_destroy(w);               /* the parent first: the view keeps using the memory */
            CHECK(no_new_error(), "I4: the wrapped parent is destroyed while its view lives");
            CHECK_EQ_RESULT(gf_fill_async(s, v, 256, 0x99, 256), GF_OK);
            if (fill) {                          /* and a kernel writes through it */
                uint32_t n = 64, val = 0x42424242u;
                gf_arg a[3];
                gf_launch_dims d;
                memset(&d, 0, sizeof d);
                d.grid[0] = d.grid[1] = d.grid[2] = 1;
                d.block[0] = 64; d.block[1] = d.block[2] = 1;
                a[0].value = 0; a[0].size = 0; a[0].buffer = v;
                a[1].value = &n; a[1].size = sizeof n; a[1].buffer = 0;
                a[2].value = &val; a[2].size = sizeof val; a[2].buffer = 0;
                CHECK_EQ_RESULT(gf_launch(s, fill, d, a, 3), GF_OK);   /* bytes 0..255 of the view */
            }
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            CHECK(foreign_all(&f, 1024 + 256, 256, 0x99) && (!fill || foreign_all(&f, 1024, 256, 0x42)),
                  "I4: work through the view of a destroyed wrapper still reaches the foreign memory");
            th_prime();
            gf_buffer_destroy(v);
            CHECK(no_new_error(), "I4: then the view is destroyed");
        } else {
            th_prime();
            gf_buffer_destroy(v);               /* the view first: the parent is unaffected */
            CHECK(no_new_error(), "I4: the view of a wrapped buffer is destroyed first");
            CHECK_EQ_RESULT(gf_fill_async(s, w, 1024, 0x66, 512), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            CHECK(foreign_all(&f, 1024, 512, 0x66), "I4: the wrapped parent still works after its view is gone");
            th_prime();
            gf_buffer_destroy(w);
            CHECK(no_new_error(), "I4: then the parent is destroyed");
        }
        CHECK(foreign_refs_settled(&f, refs0) == refs0, "I4: wrapper and view together leave the foreign reference count as it was");
        memset(pat, 0x12, sizeof pat);
        CHECK(foreign_write(&f, 0, pat, sizeof pat) && foreign_all(&f, 0, sizeof pat, 0x12),
              "I4: the foreign buffer is still usable after wrapper and view are gone");
        CHECK(foreign_release(&f), "I4: the owner releases it (once: ASan would see a double free)");
        memset(pat, 0x77, sizeof pat);
    }
    gf_buffer_destroy(src);
    if (mod) gf_module_destroy(mod);
    gf_stream_destroy(s);
}

/* ---- I5: gf_buffer_record_stream with a stream of another device ------------------------------ */
static void test_record_stream_two_devices(void)
{
    gf_device *d2 = NULL;
    gf_stream *s1, *s1b, *s2 = NULL;
    gf_buffer *b1 = NULL, *b2 = NULL, *w = NULL, *v = NULL, *a = NULL;
    gf_stream_stats st0 = {0}, st1 = {0};
    foreign_buf f;
    int have_foreign;
    if (!CHECK_EQ_RESULT(gf_device_open(R.backend, 0, &d2), GF_OK)) return;
    have_foreign = foreign_available() && foreign_make(&f, 1024, 0x0f);   /* after the open: nothing to free on its failure */
    CHECK(d2 != R.dev, "I5: a second open is a second device");
    s1 = mk_stream("dev1 a");
    s1b = mk_stream("dev1 b");
    CHECK_EQ_RESULT(gf_stream_create(d2, NULL, &s2), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 1024, &b1), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(d2, 1024, &b2), GF_OK);
    if (have_foreign) {
        CHECK_EQ_RESULT(gf_buffer_wrap(R.dev, f.native, 1024, &w), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_view(w, 0, 512, &v), GF_OK);
    }
    memset(&st0, 0, sizeof st0);
    memset(&st1, 0, sizeof st1);
    gf_stream_get_stats(s2, &st0);
    CHECK_FAIL(gf_buffer_record_stream(b1, s2), GF_ERROR_WRONG_DEVICE);
    CHECK(contains(gf_last_error(), "gf_buffer_record_stream") && contains(gf_last_error(), "device"),
          "I5: the refusal names the call and the mixed devices");
    CHECK_FAIL(gf_buffer_record_stream(b2, s1), GF_ERROR_WRONG_DEVICE);
    if (w) CHECK_FAIL(gf_buffer_record_stream(w, s2), GF_ERROR_WRONG_DEVICE);
    if (v) CHECK_FAIL(gf_buffer_record_stream(v, s2), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_buffer_record_stream(b1, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_record_stream(b1, (gf_stream *)b2), GF_ERROR_INVALID_HANDLE);
    gf_stream_get_stats(s2, &st1);
    CHECK(st1.ops == st0.ops && gf_stream_query(s2) == GF_OK, "I5: the refused records enqueued nothing on the other device's stream");
#ifdef GPUFLOW_OPENCL
    if (R.backend == GF_BACKEND_OPENCL && have_foreign) {   /* a cl_mem of device 1's context, wrapped on device 2 */
        gf_buffer *x = NULL;
        CHECK_FAIL(gf_buffer_wrap(d2, f.native, 1024, &x), GF_ERROR_WRONG_DEVICE);
        CHECK(x == NULL, "I5: a cl_mem of another context is refused by gf_buffer_wrap");
        CHECK_FAIL(gf_buffer_wrap(R.dev, f.native, 4096, &x), GF_ERROR_OUT_OF_RANGE);   /* more than the cl_mem holds */
    }
#endif
    /* the refusals changed nothing: the same objects record and free in order on their own device */
    CHECK_EQ_RESULT(gf_buffer_create_async(s1, 1024, &a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_stream(s1b, s1), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s1b, a, 0, 3, 1024), GF_OK);
    CHECK_FAIL(gf_buffer_record_stream(a, s2), GF_ERROR_WRONG_DEVICE);
    CHECK_EQ_RESULT(gf_buffer_record_stream(a, s1b), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_destroy_async(s1, a), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_record_stream(b1, s1), GF_OK);
    if (w) {
        CHECK_EQ_RESULT(gf_fill_async(s1, w, 0, 0x44, 1024), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_record_stream(w, s1), GF_OK);   /* a wrapped buffer's record goes with it */
        CHECK_EQ_RESULT(gf_buffer_record_stream(v, s1b), GF_OK);
    }
    CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s1b), GF_OK);
    if (v) gf_buffer_destroy(v);
    if (w) gf_buffer_destroy(w);
    if (have_foreign) {
        CHECK(foreign_all(&f, 0, 1024, 0x44), "I5: the wrapped buffer's work landed, and its destroy left the memory");
        CHECK(foreign_release(&f), "I5: the foreign buffer is released by its owner");
    }
    gf_buffer_destroy(b1);
    gf_buffer_destroy(b2);
    gf_stream_destroy(s1);
    gf_stream_destroy(s1b);
    gf_stream_destroy(s2);
    gf_device_close(d2);
}

/* ---- I6: gf_graph_set_kernel_args after gf_graph_update, and on a destroyed graph -------------- */
static gf_kernel *ga_fill;
static gf_launch_dims ga_dims(void)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    d.block[0] = 16; d.block[1] = d.block[2] = 1;
    return d;
}
static void ga_args(gf_arg a[3], gf_buffer *b, const uint32_t *n, const uint32_t *v)
{
    a[0].value = 0; a[0].size = 0; a[0].buffer = b;
    a[1].value = n; a[1].size = sizeof *n; a[1].buffer = 0;
    a[2].value = v; a[2].size = sizeof *v; a[2].buffer = 0;
}
static gf_graph *ga_capture(gf_stream *s, gf_buffer *b, uint32_t v)
{
    static const uint32_t n = 16;
    gf_graph *g = NULL;
    gf_arg a[3];
    ga_args(a, b, &n, &v);
    if (gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) != GF_OK) return NULL;
    if (gf_launch(s, ga_fill, ga_dims(), a, 3) != GF_OK) { gf_stream_end_capture(s, &g); if (g) gf_graph_destroy(g); return NULL; }
    if (gf_stream_end_capture(s, &g) != GF_OK) return NULL;
    return g;
}
static int u32_all(gf_buffer *b, uint32_t v)
{
    uint32_t h[16];
    int i;
    for (i = 0; i < 16; i++) h[i] = ~v;   /* what the copy did not write fails the check */
    if (gf_copy_to_host(h, b, 0, sizeof h) != GF_OK) return 0;
    for (i = 0; i < 16; i++) if (h[i] != v) return 0;
    return 1;
}
static int u32_zero(gf_buffer *b)
{
    static const uint32_t z[16];
    return gf_copy_to_device(b, 0, z, sizeof z) == GF_OK;
}
static int launch_sync(gf_graph *g, gf_stream *s) { return gf_graph_launch(g, s) == GF_OK && gf_stream_synchronize(s) == GF_OK; }

static void test_graph_args_after_update(void)
{
    gf_module *mod = NULL;
    gf_stream *s;
    gf_buffer *b1 = NULL, *b2 = NULL, *w = NULL;
    gf_graph *g, *h;
    gf_graph_info gi = {0};
    gf_arg a[3];
    uint32_t n = 16, v3 = 3, v7 = 7, v9 = 9, v5 = 0x05050505u;
    foreign_buf f;
    gf_result r = gf_module_load(R.dev, &tk_module, &mod);
    if (r == GF_ERROR_NOT_SUPPORTED) { SKIP("I6: no form of the test kernels for this backend"); return; }
    if (!CHECK_EQ_RESULT(r, GF_OK) || !CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &ga_fill), GF_OK)) return;
    s = mk_stream("graph args");
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 64, &b1), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(R.dev, 64, &b2), GF_OK);
    u32_zero(b1);
    u32_zero(b2);
    g = ga_capture(s, b1, 1);
    h = ga_capture(s, b2, 2);
    if (!CHECK(g && h, "I6: two one-launch graphs are captured")) goto out;
    /* set before the update: the update replaces it with h's arguments */
    ga_args(a, b1, &n, &v7);
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 0, a, 3), GF_OK);
    CHECK_EQ_RESULT(gf_graph_update(g, h), GF_OK);
    CHECK(launch_sync(g, s) && u32_all(b1, 0) && u32_all(b2, 2), "I6: after the update g runs h's launch (b2 = 2), not its earlier arguments");
    /* set after the update: a defined result, and the next launch uses the new arguments */
    u32_zero(b2);
    ga_args(a, b1, &n, &v3);
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 0, a, 3), GF_OK);
    CHECK(launch_sync(g, s) && u32_all(b1, 3) && u32_all(b2, 0), "I6: arguments set after the update are what the next launch uses");
    CHECK_EQ_RESULT(gf_graph_get_info(g, &gi), GF_OK);
    CHECK(gi.launches == 1, "I6: the updated graph still has one launch");
    /* g took copies: changing or destroying h leaves g alone */
    ga_args(a, b1, &n, &v9);
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(h, 0, a, 3), GF_OK);
    u32_zero(b1);
    CHECK(launch_sync(g, s) && u32_all(b1, 3), "I6: new arguments for the graph g was updated from do not reach g");
    gf_graph_destroy(h);
    h = NULL;
    u32_zero(b1);
    CHECK(launch_sync(g, s) && u32_all(b1, 3), "I6: g still runs after the graph it was updated from is destroyed");
    /* refusals change nothing */
    CHECK_FAIL(gf_graph_set_kernel_args(g, 1, a, 3), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_graph_set_kernel_args(g, 0, a, 2), GF_ERROR_INVALID_ARGUMENT);
    a[0].buffer = 0; a[0].value = &n; a[0].size = sizeof n;
    CHECK_FAIL(gf_graph_set_kernel_args(g, 0, a, 3), GF_ERROR_INVALID_ARGUMENT);   /* a value where a buffer was */
    ga_args(a, b1, &n, &v9);
    a[2].size = 2;
    CHECK_FAIL(gf_graph_set_kernel_args(g, 0, a, 3), GF_ERROR_INVALID_ARGUMENT);   /* another size */
    u32_zero(b1);
    CHECK(launch_sync(g, s) && u32_all(b1, 3), "I6: refused set_kernel_args calls left the launch as it was");
    /* the new arguments may name a wrapped buffer: the launch writes the foreign memory */
    if (foreign_available() && foreign_make(&f, 64, 0)) {
        CHECK_EQ_RESULT(gf_buffer_wrap(R.dev, f.native, 64, &w), GF_OK);
        ga_args(a, w, &n, &v5);
        if (w && CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 0, a, 3), GF_OK))
            CHECK(launch_sync(g, s) && foreign_all(&f, 0, 64, 0x05), "I6: a graph launch with a wrapped buffer set as its argument writes the foreign memory");
        ga_args(a, b1, &n, &v3);
        CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 0, a, 3), GF_OK);   /* before the wrapper goes */
        if (w) gf_buffer_destroy(w);
        CHECK(foreign_release(&f), "I6: the foreign buffer is released by its owner");
    }
    /* a destroyed graph: its handle is refused (graphs are recycled as shells, so this reads no
       freed memory even without GPUFLOW_DEBUG; no graph is made in between) */
    u32_zero(b1);
    gf_graph_destroy(g);
    ga_args(a, b1, &n, &v3);
    CHECK_FAIL(gf_graph_set_kernel_args(g, 0, a, 3), GF_ERROR_INVALID_HANDLE);
    CHECK(contains(gf_last_error(), "gf_graph_set_kernel_args"), "I6: the refusal names the call");
    CHECK_FAIL(gf_graph_set_kernel_args(g, 0, NULL, 0), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_launch(g, s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_update(g, g), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_get_info(g, &gi), GF_ERROR_INVALID_HANDLE);
    CHECK_SETS_ERROR(gf_graph_destroy(g));
    g = NULL;
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(u32_all(b1, 0), "I6: the refused launch of the destroyed graph ran nothing");
out:
    if (g) gf_graph_destroy(g);
    if (h) gf_graph_destroy(h);
    gf_buffer_destroy(b1);
    gf_buffer_destroy(b2);
    gf_stream_destroy(s);
    gf_module_destroy(mod);
}

/* ---- I7: set_kernel_args and launches of a graph while another thread updates it --------------- */
typedef struct { gf_graph *g, *h, *k; int iters, failures; } ga_upd;
typedef struct { gf_graph *g; gf_stream *s; gf_buffer *b; int iters, failures; } ga_set;
static void *ga_updater(void *p)
{
    ga_upd *u = (ga_upd *)p;
    int i;
    for (i = 0; i < u->iters; i++)
        if (gf_graph_update(u->g, (i & 1) ? u->h : u->k) != GF_OK) u->failures++;
    return NULL;
}
static void *ga_setter(void *p)
{
    ga_set *t = (ga_set *)p;
    uint32_t n = 16, v;
    gf_arg a[3];
    int i;
    for (i = 0; i < t->iters; i++) {
        v = (uint32_t)i + 100;
        ga_args(a, t->b, &n, &v);
        if (gf_graph_set_kernel_args(t->g, 0, a, 3) != GF_OK) t->failures++;
        if (gf_graph_launch(t->g, t->s) != GF_OK) t->failures++;
    }
    return NULL;
}
static void test_graph_args_update_threads(void)
{
    gf_module *mod = NULL;
    gf_stream *s;
    gf_buffer *bg = NULL, *bh = NULL, *bk = NULL, *ba = NULL;
    ga_upd u;
    ga_set t;
    pthread_t t1, t2;
    uint32_t n = 16, v = 77;
    gf_arg a[3];
    gf_result r = gf_module_load(R.dev, &tk_module, &mod);
    if (r == GF_ERROR_NOT_SUPPORTED) { SKIP("I7: no form of the test kernels for this backend"); return; }
    if (!CHECK_EQ_RESULT(r, GF_OK) || !CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &ga_fill), GF_OK)) return;
    s = mk_stream("args vs update");
    gf_buffer_create(R.dev, 64, &bg);
    gf_buffer_create(R.dev, 64, &bh);
    gf_buffer_create(R.dev, 64, &bk);
    gf_buffer_create(R.dev, 64, &ba);
    memset(&u, 0, sizeof u);
    memset(&t, 0, sizeof t);
    u.g = t.g = ga_capture(s, bg, 1);
    u.h = ga_capture(s, bh, 2);
    u.k = ga_capture(s, bk, 3);
    if (CHECK(u.g && u.h && u.k, "I7: three graphs captured")) {
        u.iters = t.iters = 300;
        t.s = s;
        t.b = ba;
        pthread_create(&t1, NULL, ga_updater, &u);
        pthread_create(&t2, NULL, ga_setter, &t);
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        CHECK(u.failures == 0 && t.failures == 0, "I7: updates, set_kernel_args and launches of one graph from two threads all succeed");
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        ga_args(a, ba, &n, &v);
        u32_zero(ba);
        CHECK(gf_graph_set_kernel_args(u.g, 0, a, 3) == GF_OK && launch_sync(u.g, s) && u32_all(ba, 77),
              "I7: afterwards the graph runs exactly the arguments set last");
    }
    if (u.g) gf_graph_destroy(u.g);
    if (u.h) gf_graph_destroy(u.h);
    if (u.k) gf_graph_destroy(u.k);
    gf_buffer_destroy(bg);
    gf_buffer_destroy(bh);
    gf_buffer_destroy(bk);
    gf_buffer_destroy(ba);
    gf_stream_destroy(s);
    gf_module_destroy(mod);
}

/* An allocation past the memory limit waits for a cached block whose last use is behind a
   stream callback that allocates on that stream: the wait held the cache's lock, which the
   callback's allocation takes, and both waited for good (found by review). Stub and OpenCL,
   where callbacks may call gpuflow. */
static gf_stream *cache_cb_stream;
static void allocating_cb(void *user, gf_result status)
{
    gf_buffer *b = NULL;
    (void)status;
    th_sleep_ms(100);   /* the allocation below is waiting by now */
    *(gf_result *)user = gf_buffer_create_async(cache_cb_stream, 1024, &b);
    if (b) gf_buffer_destroy_async(cache_cb_stream, b);
}
static void cache_wait_case(int async);
static void test_cache_wait_behind_allocating_callback(void)
{
    if (R.backend != GF_BACKEND_STUB && R.backend != GF_BACKEND_OPENCL) return;
    cache_wait_case(0);
    cache_wait_case(1);   /* gf_buffer_create_async on the callback's stream: it held the stream while it waited */
}
static void cache_wait_case(int async)
{
    gf_buffer *big = NULL, *other = NULL;
    gf_result in_cb = GF_ERROR_INVALID_STATE;
    gf_memory_stats ms;
    if (!CHECK_EQ_RESULT(gf_stream_create(R.dev, NULL, &cache_cb_stream), GF_OK)) return;
    CHECK_EQ_RESULT(gf_device_synchronize(R.dev), GF_OK);
    CHECK_EQ_RESULT(gf_device_trim(R.dev, 0), GF_OK);
    CHECK_EQ_RESULT(gf_device_memory_stats(R.dev, &ms), GF_OK);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(R.dev, ms.device_bytes + (1 << 20)), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create_async(cache_cb_stream, 768 << 10, &big), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(cache_cb_stream, allocating_cb, &in_cb), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_destroy_async(cache_cb_stream, big), GF_OK);   /* cached, its last use behind the callback */
    if (async) CHECK_EQ_RESULT(gf_buffer_create_async(cache_cb_stream, 300 << 10, &other), GF_OK);   /* past the limit but for the cached block */
    else CHECK_EQ_RESULT(gf_buffer_create(R.dev, 512 << 10, &other), GF_OK);                     /* needs the cached block back */
    CHECK_EQ_RESULT(gf_stream_synchronize(cache_cb_stream), GF_OK);
    CHECK(in_cb == GF_OK, "the callback's allocation went on while an allocation waited for the cache");
    if (other && async) gf_buffer_destroy_async(cache_cb_stream, other);
    else if (other) gf_buffer_destroy(other);
    gf_stream_destroy(cache_cb_stream);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(R.dev, 0), GF_OK);
}

/* Review Z1: gf_buffer_destroy_async of a stream-ordered buffer a graph holds (its commands use
   it) was refused as "views of the buffer are still alive": the graph's hold counted as a view.
   It goes through now, as gf_buffer_destroy does (the memory goes with the graph); a live view
   is still refused, and its destroy lets the parent go. */
static void test_destroy_async_held_by_graph(void)
{
    gf_stream *s = mk_stream("z1");
    gf_buffer *b = NULL, *v = NULL;
    gf_graph *g = NULL;
    CHECK_EQ_RESULT(gf_buffer_create_async(s, 64, &b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x5a, 64), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_view(b, 0, 16, &v), GF_OK);
    CHECK_FAIL(gf_buffer_destroy_async(s, b), GF_ERROR_INVALID_STATE);
    CHECK(contains(gf_last_error(), "views"), "Z1: a live view is still named");
    gf_buffer_destroy(v);
    CHECK_EQ_RESULT(gf_buffer_destroy_async(s, b), GF_OK);   /* held by g: the handle goes, the memory with g */
    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);           /* g still fills the memory it holds */
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_graph_destroy(g);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_stream_destroy(s);
}

/* The waiter thread looked for a completed wait from the front of its list each time: with n
   waits still pending ahead of completed ones, each callback fired cost n event queries (a
   soak's backlog grew without end). It now goes on round the list from where it last fired. The
   device's table is a copy whose event query counts, put in before any thread of the device
   starts. */
static gf_result (*real_event_query)(gf_event *);
static int waiter_queries;
static gf_result counted_event_query(gf_event *ev) { __atomic_fetch_add(&waiter_queries, 1, __ATOMIC_RELAXED); return real_event_query(ev); }
static void count_fired(void *user, gf_result status) { (void)status; th_flag_add((th_flag *)user, 1); }
static void test_waiter_backlog(void)
{
    enum { PENDING = 400, DONE = 400 };
    static gf__backend counting;
    gf_device *dev = NULL;
    gf_stream *held = NULL, *open_ = NULL;
    gf_event *ev[PENDING + DONE];
    th_gate gates[2];
    th_flag fired;
    int i, queries;
    memset(ev, 0, sizeof ev);
    if (!CHECK_EQ_RESULT(gf_device_open(R.backend, 0, &dev), GF_OK)) return;
    counting = *dev->be;
    real_event_query = counting.event_query;
    counting.event_query = counted_event_query;
    dev->be = &counting;
    th_gate_init(&gates[0]); th_gate_init(&gates[1]);
    th_flag_init(&fired);
    if (CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &held), GF_OK) && CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &open_), GF_OK) &&
        CHECK_EQ_RESULT(gf_stream_add_callback(held, th_gate_cb, &gates[0]), GF_OK) &&
        CHECK_EQ_RESULT(gf_stream_add_callback(open_, th_gate_cb, &gates[1]), GF_OK)) {
        int ok = 1;
        for (i = 0; i < PENDING + DONE && ok; i++)   /* the held stream's waits first in the list */
            ok = gf_event_create(dev, 0, &ev[i]) == GF_OK && gf_event_record(ev[i], i < PENDING ? held : open_) == GF_OK &&
                 gf_event_on_complete(ev[i], count_fired, &fired, NULL) == GF_OK;
        if (CHECK(ok, "waiter backlog: the waits are made")) {
            th_gate_wait_entered(&gates[1], 1, TH_WAIT_MS);
            queries = __atomic_load_n(&waiter_queries, __ATOMIC_RELAXED);
            th_gate_open(&gates[1]);
            CHECK(th_flag_wait(&fired, DONE, TH_WAIT_MS), "waiter backlog: the open stream's waits fire while the held stream's wait");
            queries = __atomic_load_n(&waiter_queries, __ATOMIC_RELAXED) - queries;
            printf("  waiter backlog: %d event queries fired %d callbacks behind %d pending waits\n", queries, DONE, PENDING);
            CHECK(queries < 20 * (PENDING + DONE), "waiter backlog: a query or so per wait and round, not the whole pending list per callback");
        }
    }
    th_gate_open(&gates[0]);
    th_gate_open(&gates[1]);
    if (dev) CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);
    CHECK(th_flag_wait(&fired, PENDING + DONE, TH_WAIT_MS), "waiter backlog: every wait fired once the stream went on");
    for (i = 0; i < PENDING + DONE; i++) if (ev[i]) gf_event_destroy(ev[i]);
    if (held) gf_stream_destroy(held);
    if (open_) gf_stream_destroy(open_);
    gf_device_close(dev);
    th_gate_destroy(&gates[0]); th_gate_destroy(&gates[1]);
    th_flag_destroy(&fired);
}

/* The waiter thread held its lock through a whole round of event queries: with thousands of
   waits pending, a thread adding or cancelling a wait was held up for the round (8.8 ms at
   10,000 waits on the stub, 18 ms at 50,000), and rounds a millisecond apart kept it busy (a
   hidden stall, and 40-54% of a core). It now hands the lock to a thread that waits for it after
   each batch of GF__WAIT_LOOK_BATCH queries, and naps a multiple of what a fruitless round took.
   Measured without clocks, by the waiter's own queries (it holds its lock through each): at the
   100th of a round, this thread is let go to add a wait, and once it waits for the lock
   (w->wanted), the queries until its add has gone in (w->next_id moved) are counted. */
enum { STALL_PENDING = 6000, STALL_AT = 100 };
static gf__waiter *stall_waiter;
static int stall_queries, stall_go, stall_run = -1;
static gf_result stall_event_query(gf_event *ev)
{
    static uint64_t id_before;
    gf__waiter *w = __atomic_load_n(&stall_waiter, __ATOMIC_ACQUIRE);
    if (w) {   /* the waiter thread, w->lock held */
        int n = __atomic_add_fetch(&stall_queries, 1, __ATOMIC_RELAXED), spins;
        if (n == STALL_AT) {
            __atomic_store_n(&stall_go, 1, __ATOMIC_RELEASE);
            for (spins = 0; spins < 5000 && !gf__atomic_load_int(&w->wanted); spins++) th_sleep_ms(1);
            id_before = w->next_id;
            __atomic_store_n(&stall_run, 0, __ATOMIC_RELAXED);
        } else if (n > STALL_AT && w->next_id == id_before && __atomic_load_n(&stall_run, __ATOMIC_RELAXED) >= 0 && n < STALL_AT + STALL_PENDING) {
            __atomic_add_fetch(&stall_run, 1, __ATOMIC_RELAXED);
        }
    }
    return real_event_query(ev);
}
static void test_waiter_lets_go(void)
{
    static gf__backend hooked;
    gf_device *dev = NULL;
    gf_stream *held = NULL;
    gf_event **ev = (gf_event **)calloc(STALL_PENDING, sizeof *ev);
    th_gate gate;
    th_flag fired;
    int i, ok = ev != NULL;
    unsigned waited;
    if (!CHECK(ok, "waiter lets go: memory") || !CHECK_EQ_RESULT(gf_device_open(R.backend, 0, &dev), GF_OK)) { free(ev); return; }
    hooked = *dev->be;
    real_event_query = hooked.event_query;
    hooked.event_query = stall_event_query;
    dev->be = &hooked;
    th_gate_init(&gate);
    th_flag_init(&fired);
    if (CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &held), GF_OK) && CHECK_EQ_RESULT(gf_stream_add_callback(held, th_gate_cb, &gate), GF_OK)) {
        for (i = 0; i < STALL_PENDING && ok; i++)
            ok = gf_event_create(dev, 0, &ev[i]) == GF_OK && gf_event_record(ev[i], held) == GF_OK &&
                 gf_event_on_complete(ev[i], count_fired, &fired, NULL) == GF_OK;
        if (CHECK(ok, "waiter lets go: the waits are made")) {
            uint64_t id = 0;
            int run;
            __atomic_store_n(&stall_waiter, dev->waiter, __ATOMIC_RELEASE);
            for (waited = 0; waited < TH_WAIT_MS && !__atomic_load_n(&stall_go, __ATOMIC_ACQUIRE); waited++) th_sleep_ms(1);
            CHECK(__atomic_load_n(&stall_go, __ATOMIC_ACQUIRE), "waiter lets go: the waiter looks at the backlog");
            CHECK_EQ_RESULT(gf_event_on_complete(ev[0], count_fired, &fired, &id), GF_OK);   /* while the waiter is in its round */
            CHECK_EQ_RESULT(gf_event_cancel_wait(dev, id), GF_OK);
            for (waited = 0; waited < TH_WAIT_MS && __atomic_load_n(&stall_queries, __ATOMIC_RELAXED) < STALL_AT + STALL_PENDING; waited++) th_sleep_ms(1);
            __atomic_store_n(&stall_waiter, NULL, __ATOMIC_RELEASE);
            run = __atomic_load_n(&stall_run, __ATOMIC_RELAXED);
            printf("  waiter lets go: %d queries of the waiter's round went by while an add waited for its lock (%d waits pending)\n",
                   run, STALL_PENDING);
            CHECK(run >= 0 && run <= STALL_PENDING / 8,   /* a batch or two; more where the machine is loaded, never a round */
                  "waiter lets go: a thread adding a wait waits for a batch of queries, not a round of the whole backlog");
        }
    }
    th_gate_open(&gate);
    if (dev) CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);
    CHECK(th_flag_wait(&fired, STALL_PENDING, TH_WAIT_MS), "waiter lets go: every wait fired once the stream went on");
    if (dev && dev->waiter) {   /* and the list's peak went back (it kept 8192 slots until the device closed) */
        int cap;
        gf__lock(&dev->waiter->lock);
        cap = dev->waiter->cap;
        gf__unlock(&dev->waiter->lock);
        CHECK(cap <= 512, "waiter lets go: the list of waits shrinks once they have fired");
    }
    for (i = 0; i < STALL_PENDING; i++) if (ev[i]) gf_event_destroy(ev[i]);
    if (held) gf_stream_destroy(held);
    gf_device_close(dev);
    th_gate_destroy(&gate);
    th_flag_destroy(&fired);
    free(ev);
}

/* On Windows, rename() refuses a name that exists: a kernel cache entry found corrupt or made
   for something else ("... rebuilding it") was never replaced, so every later load warned and
   compiled again (found under wine). Entries now go over the old name there too. Run on every
   platform (tests/windows.sh runs this file under wine). */
static void test_cache_entry_replaced(void)
{
    char dir[64], *path;
    gf__cache_identity id;
    void *bin = NULL;
    size_t size = 0;
    snprintf(dir, sizeof dir, "gf-cache-replace-%lu", (unsigned long)gf__getpid());
    if (!CHECK(gf__cache_dir_usable(dir, 0), "cache replace: a directory of its own") ||
        !CHECK_EQ_RESULT(gf__cache_identity_make(&id, "kernel text", "", "test compiler"), GF_OK))
        return;
    if (CHECK((path = gf__cache_path(dir, id.key)) != NULL, "cache replace: the entry's path")) {
        gf__cache_write(path, &id, GF_BACKEND_OPENCL, "first", 6);
        gf__cache_write(path, &id, GF_BACKEND_OPENCL, "second", 7);   /* the old entry is there */
        if (CHECK_EQ_RESULT(gf__cache_read(path, &id, GF_BACKEND_OPENCL, &bin, &size), GF_OK))
            CHECK(size == 7 && !memcmp(bin, "second", 7), "cache replace: a new entry replaces the one under its name");
        gf__free(bin);
        remove(path);
        gf__free(path);
    }
    gf__free(id.bytes);
    rmdir(dir);
}

/* A build log longer than the message holds showed its first part: on NVIDIA's OpenCL (and
   NVRTC, hiprtc), warnings come in the source's order, so a page of them ahead of the error
   left the error out (an outside review of the OpenCL backend). The part shown starts at the
   first error's line when warnings come before it. */
static void test_build_log_start(void)
{
    static char log[4096];
    int i, n = 0;
    for (i = 0; i < 30; i++) n += snprintf(log + n, sizeof log - (size_t)n, "<kernel>:%d:2: warning: warning number %d of a long page\n", i + 1, i);
    snprintf(log + n, sizeof log - (size_t)n, "<kernel>:31:43: error: use of undeclared identifier 'x'\n");
    CHECK(!strncmp(gf__build_log_start(log, 900), "<kernel>:31:43: error:", 22), "build log: past the message's share, it starts at the first error's line");
    CHECK(gf__build_log_start(log, sizeof log) == log, "build log: one that fits is shown from its start");
    CHECK(gf__build_log_start("<kernel>:1:1: error: first\n", 10) != NULL, "build log: an error on the first line is the start");
}

/* A kernel cache directory had no bound (an open item of the last notes): every edit under hot
   reload, every driver update, left an entry for good. Past GPUFLOW_CACHE_LIMIT bytes the least
   recently used entries go (a hit touches its entry), never the one just written, and so do a
   dead writer's temporary files; a young temporary file (a writer at work) stays. */
static void cache_limit_set_age(const char *path, time_t when)
{
#if defined(_WIN32)
    struct _utimbuf t;
    t.actime = t.modtime = when;
    _utime(path, &t);
#else
    struct utimbuf t;
    t.actime = t.modtime = when;
    utime(path, &t);
#endif
}
static void cache_limit_env(const char *value)
{
#if defined(_WIN32)
    _putenv_s("GPUFLOW_CACHE_LIMIT", value ? value : "");
#else
    if (value) setenv("GPUFLOW_CACHE_LIMIT", value, 1);
    else unsetenv("GPUFLOW_CACHE_LIMIT");
#endif
}
static void cache_limit_count(void *user, const char *name, uint64_t bytes, int64_t age) { (void)name; (void)bytes; (void)age; ++*(int *)user; }
static void test_cache_limit(void)
{
    enum { ENTRIES = 5, BYTES = 1000 };
    static const char binary[BYTES] = "compiled";
    static const int kept[ENTRIES] = { 1, 1, 0, 0, 1 };
    char dir[64], text[32], tmp_old[256], tmp_new[256], limit[32], *paths[ENTRIES];
    gf__cache_identity ids[ENTRIES];
    gf__stat_t st;
    time_t now = time(NULL);
    void *bin = NULL;
    size_t size = 0;
    FILE *f;
    int i, listed = 0;
    memset(paths, 0, sizeof paths);
    memset(ids, 0, sizeof ids);
    snprintf(dir, sizeof dir, "gf-cache-limit-%lu", (unsigned long)gf__getpid());
    if (!CHECK(gf__cache_dir_usable(dir, 0), "cache limit: a directory of its own")) return;
    for (i = 0; i < ENTRIES; i++) {   /* entry 0 the oldest, 4 the newest */
        snprintf(text, sizeof text, "kernel %d", i);
        if (!CHECK_EQ_RESULT(gf__cache_identity_make(&ids[i], text, "", "test compiler"), GF_OK) ||
            !CHECK((paths[i] = gf__cache_path(dir, ids[i].key)) != NULL, "cache limit: the entry's path"))
            break;
        gf__cache_write(paths[i], &ids[i], GF_BACKEND_OPENCL, binary, BYTES);
        cache_limit_set_age(paths[i], now - 1000 + 100 * i);
    }
    if (i == ENTRIES && !gf__dir_each(dir, "gpuflow-", cache_limit_count, &listed))
        SKIP("cache limit: this platform cannot list the directory (qemu-user's 32-bit readdir on a 64-bit file system)");
    else if (i == ENTRIES && CHECK(gf__stat(paths[0], &st) == 0 && listed == ENTRIES, "cache limit: the entries are written, and listed")) {
        if (CHECK_EQ_RESULT(gf__cache_read(paths[0], &ids[0], GF_BACKEND_OPENCL, &bin, &size), GF_OK))   /* a hit: the newest now */
            gf__free(bin);
        snprintf(tmp_old, sizeof tmp_old, "%s.123.1.tmp", paths[0]);
        snprintf(tmp_new, sizeof tmp_new, "%s.123.2.tmp", paths[0]);
        if ((f = fopen(tmp_old, "wb")) != NULL) fclose(f);
        if ((f = fopen(tmp_new, "wb")) != NULL) fclose(f);
        cache_limit_set_age(tmp_old, now - 2 * GF__CACHE_TMP_STALE_S);
        snprintf(limit, sizeof limit, "%llu", (unsigned long long)st.st_size * 3);   /* three entries' worth */
        cache_limit_env(limit);
        gf__cache_dir_trim(dir, paths[1]);   /* entry 1 was just written: it stays, though the oldest */
        cache_limit_env(NULL);
        for (i = 0; i < ENTRIES; i++)
            if (!CHECK((gf__stat(paths[i], &st) == 0) == kept[i], "cache limit: the least recently used entries went, down to the limit"))
                printf("  entry %d is %s\n", i, kept[i] ? "gone" : "still there");
        CHECK(gf__stat(tmp_old, &st) != 0, "cache limit: a dead writer's temporary file went");
        CHECK(gf__stat(tmp_new, &st) == 0, "cache limit: a young temporary file stayed");
        gf__remove(tmp_old);
        gf__remove(tmp_new);
    }
    for (i = 0; i < ENTRIES; i++) {
        if (paths[i]) gf__remove(paths[i]);
        gf__free(paths[i]);
        gf__free(ids[i].bytes);
    }
    rmdir(dir);
}

/* Processes (here threads) trimming one cache at once: each went its own whole share past the
   limit, since an entry another had removed was not subtracted (an outside review: 8 trimmers
   left 0 of 400 entries where 200 fit). Entries of distinct ages: each trimmer sees one order. */
enum { TRIM_ENTRIES = 120, TRIM_KEEP = 60, TRIM_THREADS = 4 };
static char trim_dir[64], trim_keep[256];
static void *trim_main(void *p) { (void)p; gf__cache_dir_trim(trim_dir, trim_keep); return NULL; }
static void test_cache_trim_together(void)
{
    static const char binary[1000] = "compiled";
    char text[32], limit[32], *path = NULL;
    pthread_t t[TRIM_THREADS];
    gf__cache_identity id;
    gf__stat_t st;
    time_t now = time(NULL);
    int i, listed = 0, started = 0;
    snprintf(trim_dir, sizeof trim_dir, "gf-cache-trim-%lu", (unsigned long)gf__getpid());
    if (!CHECK(gf__cache_dir_usable(trim_dir, 0), "trims together: a directory of its own")) return;
    for (i = 0; i < TRIM_ENTRIES; i++) {
        snprintf(text, sizeof text, "kernel %d", i);
        if (gf__cache_identity_make(&id, text, "", "test compiler") != GF_OK) break;
        if ((path = gf__cache_path(trim_dir, id.key)) != NULL) {
            gf__cache_write(path, &id, GF_BACKEND_OPENCL, binary, sizeof binary);
            cache_limit_set_age(path, now - 10000 + i);   /* entry i younger than i - 1 */
            if (i == TRIM_ENTRIES - 1) gf__copy_str(trim_keep, sizeof trim_keep, path);
            if (i == TRIM_ENTRIES - 1 && gf__stat(path, &st) != 0) st.st_size = 0;   /* the largest ("kernel 119") */
        }
        gf__free(path);
        gf__free(id.bytes);
    }
    if (!gf__dir_each(trim_dir, "gpuflow-", cache_limit_count, &listed)) {
        SKIP("trims together: this platform cannot list the directory");
    } else if (CHECK(i == TRIM_ENTRIES && listed == TRIM_ENTRIES && st.st_size > 0, "trims together: the entries are written")) {
        snprintf(limit, sizeof limit, "%llu", (unsigned long long)st.st_size * TRIM_KEEP);
        cache_limit_env(limit);
        for (i = 0; i < TRIM_THREADS; i++) started += pthread_create(&t[i], NULL, trim_main, NULL) == 0;
        for (i = 0; i < started; i++) pthread_join(t[i], NULL);
        cache_limit_env(NULL);
        listed = 0;
        gf__dir_each(trim_dir, "gpuflow-", cache_limit_count, &listed);
        CHECK(listed == TRIM_KEEP, "trims together: as many entries stay as fit, however many trim at once");
        if (listed != TRIM_KEEP) printf("  %d of %d entries stayed, %d fit\n", listed, TRIM_ENTRIES, TRIM_KEEP);
    }
    for (i = 0; i < TRIM_ENTRIES; i++) {   /* what is left goes */
        snprintf(text, sizeof text, "kernel %d", i);
        if (gf__cache_identity_make(&id, text, "", "test compiler") != GF_OK) continue;
        if ((path = gf__cache_path(trim_dir, id.key)) != NULL) gf__remove(path);
        gf__free(path);
        gf__free(id.bytes);
    }
    rmdir(trim_dir);
}

/* Paths are UTF-8 on every platform (an open item of the last notes): Windows handed them to
   the ANSI file functions, where a name outside the code page is '?' and MAX_PATH bounds every
   path. A kernel cache directory made as mkdir -p, its entry, a profiler trace and a recording,
   under a name with u-umlaut and two CJK characters nested past 260 characters; on Windows the
   name is looked up wide too (an ANSI round trip writes a mangled name and reads it back). */
static void utf8_paths_remove_dir(const char *dir)
{
#if defined(_WIN32)
    wchar_t *w = gf__path_wide(dir);
    if (w) RemoveDirectoryW(w);
    gf__free(w);
#else
    rmdir(dir);
#endif
}
#if defined(_WIN32)
/* Windows path forms (an outside review under wine): a cache directory given absolute (C:\...)
   was never made (mkdir -p stopped at "C:", which stat does not find); one with a trailing
   separator was made but then refused (msvcrt's stat refuses "dir\"); a long UNC path written
   with forward slashes was prefixed as \\?\\\server. */
static void test_windows_path_forms(void)
{
    char cwd[MAX_PATH], abs_dir[MAX_PATH + 64], trail[64], unc[400];
    wchar_t *w;
    int i;
    if (!CHECK(GetCurrentDirectoryA(sizeof cwd, cwd) > 0, "windows paths: the current directory")) return;
    snprintf(abs_dir, sizeof abs_dir, "%s\\gf-abs-%lu\\a\\b", cwd, (unsigned long)gf__getpid());
    CHECK(gf__cache_dir_usable(abs_dir, 0), "windows paths: an absolute cache directory with missing levels is made");
    snprintf(trail, sizeof trail, "gf-trail-%lu/x/", (unsigned long)gf__getpid());
    CHECK(gf__cache_dir_usable(trail, 0) && gf__cache_dir_usable(trail, 0), "windows paths: a trailing separator is made, then used");
    snprintf(unc, sizeof unc, "//srv/share/");
    for (i = (int)strlen(unc); i < 300; i++) unc[i] = 'a';
    unc[300] = 0;
    if ((w = gf__path_wide(unc)) != NULL) {
        CHECK(!wcsncmp(w, L"\\\\?\\UNC\\srv\\share\\", 18), "windows paths: a long UNC path with forward slashes is \\\\?\\UNC\\server\\share");
        gf__free(w);
    }
    if ((w = gf__path_wide("//?/C:/x")) != NULL) {
        CHECK(!wcscmp(w, L"//?/C:/x"), "windows paths: a verbatim path is left as the program gave it");
        gf__free(w);
    }
    for (i = 0; i < 3; i++) {   /* b, a, then the top */
        utf8_paths_remove_dir(abs_dir);
        *strrchr(abs_dir, '\\') = 0;
    }
    trail[strlen(trail) - 1] = 0;
    utf8_paths_remove_dir(trail);
    *strrchr(trail, '/') = 0;
    utf8_paths_remove_dir(trail);
}
#endif
static void test_utf8_long_paths(void)
{
    enum { DEPTH = 26 };
    char base[64], dir[640], trace[700], rec[700], *entry = NULL, *cut;
    gf__cache_identity id;
    gf__file_version version;
    gf_record_desc rd;
    gf_replay_desc pd;
    gf_replay_report rep;
    gf_device *dev = NULL;
    void *bin = NULL;
    size_t size = 0;
    int i, n;
    snprintf(base, sizeof base, "gf-utf8-\xc3\xbc\xe6\x97\xa5\xe6\x9c\xac-%lu", (unsigned long)gf__getpid());
    n = snprintf(dir, sizeof dir, "%s", base);
    for (i = 0; i < DEPTH; i++) n += snprintf(dir + n, sizeof dir - (size_t)n, "/segment-%02d", i);
    snprintf(trace, sizeof trace, "%s/trace-\xc3\xa9.json", dir);
    snprintf(rec, sizeof rec, "%s/calls-\xc3\xa9.gfrec", dir);
    if (!CHECK(strlen(trace) > 300 && gf__cache_dir_usable(dir, 0), "utf-8 paths: a nested directory past MAX_PATH is made") ||
        !CHECK_EQ_RESULT(gf__cache_identity_make(&id, "kernel text", "", "test compiler"), GF_OK))
        return;
    if (CHECK((entry = gf__cache_path(dir, id.key)) != NULL, "utf-8 paths: the entry's path")) {
        gf__cache_write(entry, &id, GF_BACKEND_OPENCL, "binary", 7);
        if (CHECK_EQ_RESULT(gf__cache_read(entry, &id, GF_BACKEND_OPENCL, &bin, &size), GF_OK))
            CHECK(size == 7 && !memcmp(bin, "binary", 7), "utf-8 paths: the cache entry reads back");
        gf__free(bin);
        CHECK(gf__file_version_of(entry, &version) && version.size > 7, "utf-8 paths: a hot reload's poll sees the file");
    }
    memset(&rd, 0, sizeof rd);
    rd.path = rec;
    if (CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK)) {
        if (CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) {
            CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK);
            CHECK_EQ_RESULT(gf_profiler_write_trace(dev, trace), GF_OK);
            gf_device_close(dev);
        }
        CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
        memset(&pd, 0, sizeof pd);
        pd.path = rec; pd.backend = GF_BACKEND_STUB;
        CHECK_EQ_RESULT(gf_replay(&pd, &rep), GF_OK);
    }
#if defined(_WIN32)
    {   /* the first level's name as Windows spells it: L"gf-utf8-" U+00FC U+65E5 U+672C "-" pid */
        wchar_t wide[64] = L"gf-utf8-\u00fc\u65e5\u672c-";
        size_t at = wcslen(wide);
        for (cut = base + strlen("gf-utf8-\xc3\xbc\xe6\x97\xa5\xe6\x9c\xac-"); *cut; cut++) wide[at++] = (wchar_t)*cut;
        wide[at] = 0;
        CHECK(GetFileAttributesW(wide) != INVALID_FILE_ATTRIBUTES, "utf-8 paths: Windows names the directory in Unicode");
    }
#endif
    CHECK(gf__remove(trace) == 0 && gf__remove(rec) == 0 && (!entry || gf__remove(entry) == 0), "utf-8 paths: the files are there to remove");
    gf__free(entry);
    gf__free(id.bytes);
    for (i = 0; i <= DEPTH; i++) {   /* the deepest level first */
        utf8_paths_remove_dir(dir);
        if ((cut = strrchr(dir, '/')) != NULL) *cut = 0;
    }
}

/* The race detector gave every stream created while it was on a clock slot of its own, for
   good: a program that makes a stream per job grew every clock (and each operation's cost)
   with every stream it ever made (found by a soak: 150 us per round after 50,000 streams). A
   destroyed stream's slot is now the next stream's, and the detector's verdicts stay right. */
static void test_race_slots_reused(void)
{
    gf_device *dev = NULL;
    gf_stream *keep = NULL, *s = NULL, *t = NULL;
    gf_buffer *x = NULL;
    gf_race_info info;
    unsigned char host[64];
    int i, ok = 1;
    if (TH_UNDER_TSAN) { SKIP("race slots: its racy pair races for real on the stub (ASan runs it)"); return; }
    if (!CHECK_EQ_RESULT(gf_device_open(R.backend, 0, &dev), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_race_check_enable(dev, GF_RACE_CHECK_ON), GF_OK) && CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &keep), GF_OK) &&
        CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &x), GF_OK)) {
        for (i = 0; i < 1000 && ok; i++) {   /* a stream per job, each writing x, synchronized and gone */
            ok = gf_stream_create(dev, NULL, &s) == GF_OK && gf_fill_async(s, x, 0, (unsigned char)i, sizeof host) == GF_OK;
            if (s) gf_stream_destroy(s);
            s = NULL;
        }
        CHECK(ok && gf_fill_async(keep, x, 0, 1, sizeof host) == GF_OK && gf_stream_synchronize(keep) == GF_OK, "race slots: 1000 streams made, used and destroyed");
        CHECK(dev->race->next_slot <= 3, "race slots: a destroyed stream's slot is the next stream's (one per stream ever, before)");
        CHECK(gf_race_report(dev, &info) == GF_OK && info.count == 0, "race slots: no race among the synchronized jobs, nor with the kept stream");
        if (CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK) && CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &t), GF_OK)) {
            CHECK_EQ_RESULT(gf_fill_async(s, x, 0, 2, sizeof host), GF_OK);
            CHECK_EQ_RESULT(gf_copy_to_host_async(t, host, x, 0, sizeof host), GF_OK);   /* unordered with s's fill */
            CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);
            CHECK(gf_race_report(dev, &info) == GF_OK && info.count == 1, "race slots: streams on reused slots still race (s's fill with t's read)");
        }
    }
    if (s) gf_stream_destroy(s);
    if (t) gf_stream_destroy(t);
    if (keep) gf_stream_destroy(keep);
    if (x) gf_buffer_destroy(x);
    gf_device_close(dev);
}

/* Two callbacks that each wait anew on their own completed event kept the waiter thread from
   ever reaching the waits between them (found by review: the look went on at the moved wait,
   which was always one of the two). Every completed wait now fires within a round. */
typedef struct rearming { gf_event *ev; int rearms, plain, rearms_at_last_plain; th_flag plain_done, rearms_done; } rearming;
static void rearm_cb(void *user, gf_result status)
{
    rearming *r = (rearming *)user;
    (void)status;
    if (++r->rearms < 20000) (void)gf_event_on_complete(r->ev, rearm_cb, r, NULL);
    else th_flag_add(&r->rearms_done, 1);
}
static void plain_cb(void *user, gf_result status)
{
    rearming *r = (rearming *)user;
    (void)status;
    if (++r->plain == 6) r->rearms_at_last_plain = r->rearms;
    th_flag_add(&r->plain_done, 1);
}
static void test_waiter_rearming(void)
{
    gf_stream *s = mk_stream("rearm");
    rearming r;
    th_gate gate;
    int i, ok = 1;
    memset(&r, 0, sizeof r);
    th_flag_init(&r.plain_done);
    th_flag_init(&r.rearms_done);
    th_gate_init(&gate);
    if (CHECK_EQ_RESULT(gf_event_create(R.dev, 0, &r.ev), GF_OK) && CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK) &&
        CHECK_EQ_RESULT(gf_event_record(r.ev, s), GF_OK)) {
        ok = gf_event_on_complete(r.ev, rearm_cb, &r, NULL) == GF_OK;
        for (i = 0; i < 6 && ok; i++) ok = gf_event_on_complete(r.ev, plain_cb, &r, NULL) == GF_OK;
        ok = ok && gf_event_on_complete(r.ev, rearm_cb, &r, NULL) == GF_OK;
        th_gate_open(&gate);
        CHECK(ok && th_flag_wait(&r.plain_done, 6, TH_WAIT_MS) && th_flag_wait(&r.rearms_done, 2, TH_WAIT_MS), "waiter rearming: every wait fired");
        printf("  waiter rearming: the 6 plain waits had fired after %d callbacks that waited anew\n", r.rearms_at_last_plain);
        CHECK(r.rearms_at_last_plain < 100, "waiter rearming: waits between two callbacks that wait anew fire within a round (they waited for the 20,000th)");
    }
    th_gate_open(&gate);
    gf_stream_synchronize(s);
    if (r.ev) gf_event_destroy(r.ev);
    gf_stream_destroy(s);
    th_gate_destroy(&gate);
    th_flag_destroy(&r.plain_done);
    th_flag_destroy(&r.rearms_done);
}

/* The race detector and a host wait (found by review): a synchronize taught the host the
   stream's clock as the wait returned, so what another thread queued on the stream while the
   wait ran counted as done. It now teaches the clock as the wait began. The device's table is a
   copy whose stream synchronize lets another thread queue a fill first, then answers as a
   driver that waited for the earlier work alone (the fill waits behind a held callback). */
static gf_result (*real_stream_synchronize)(gf_stream *);
static th_flag sync_began, queued_meanwhile;
static int sync_hooked;
static gf_result hooked_stream_synchronize(gf_stream *s)
{
    if (!sync_hooked) return real_stream_synchronize(s);
    th_flag_add(&sync_began, 1);
    th_flag_wait(&queued_meanwhile, 1, TH_WAIT_MS);
    return GF_OK;   /* what was queued when the wait began had run */
}
typedef struct meanwhile { gf_stream *s; gf_buffer *x; th_gate *held; } meanwhile;
static void *queue_meanwhile(void *arg)
{
    meanwhile *m = (meanwhile *)arg;
    th_flag_wait(&sync_began, 1, TH_WAIT_MS);
    (void)gf_stream_add_callback(m->s, th_gate_cb, m->held);
    (void)gf_fill_async(m->s, m->x, 0, 7, 256);
    th_flag_add(&queued_meanwhile, 1);
    return NULL;
}
static void test_race_host_wait_began(void)
{
    static gf__backend hooked;
    gf_device *dev = NULL;
    gf_stream *a = NULL, *b = NULL;
    gf_buffer *x = NULL;
    gf_race_info info;
    unsigned char host[256];
    th_gate held;
    meanwhile m;
    pthread_t t;
    if (TH_UNDER_TSAN) { SKIP("race host wait: its racy read races for real on the stub (ASan runs it)"); return; }
    if (!CHECK_EQ_RESULT(gf_device_open(R.backend, 0, &dev), GF_OK)) return;
    hooked = *dev->be;
    real_stream_synchronize = hooked.stream_synchronize;
    hooked.stream_synchronize = hooked_stream_synchronize;
    dev->be = &hooked;
    th_gate_init(&held);
    th_flag_init(&sync_began);
    th_flag_init(&queued_meanwhile);
    if (CHECK_EQ_RESULT(gf_race_check_enable(dev, GF_RACE_CHECK_ON), GF_OK) && CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &a), GF_OK) &&
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &b), GF_OK) && CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &x), GF_OK)) {
        m.s = a; m.x = x; m.held = &held;
        if (CHECK(pthread_create(&t, NULL, queue_meanwhile, &m) == 0, "race host wait: a second thread")) {
            sync_hooked = 1;
            CHECK_EQ_RESULT(gf_stream_synchronize(a), GF_OK);
            sync_hooked = 0;
            pthread_join(t, NULL);
            CHECK_EQ_RESULT(gf_copy_to_host_async(b, host, x, 0, sizeof host), GF_OK);   /* the fill on a has not run */
            th_gate_open(&held);
            CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);
            CHECK(gf_race_report(dev, &info) == GF_OK && info.count == 1,
                  "race host wait: a fill queued by another thread while the synchronize waited is unordered with a later read (it was taken as done)");
        }
    }
    th_gate_open(&held);
    if (x) gf_buffer_destroy(x);
    if (a) gf_stream_destroy(a);
    if (b) gf_stream_destroy(b);
    gf_device_close(dev);
    th_gate_destroy(&held);
    th_flag_destroy(&sync_began);
    th_flag_destroy(&queued_meanwhile);
}

/* What the host knows is done on a stream (found by a memory-ordering review). gf_device_write_state
   read the stream's count of submitted work after the driver's "idle": work queued meanwhile
   counted as done, so stats said 0 pending and a pool's acquire_ready handed the stream out as
   idle. And two settlers answering in either order set the count back. The device's table is a
   copy whose stream query lets the test queue work, or wait, between the count and the answer. */
static gf_result (*real_stream_query)(gf_stream *);
static gf_stream *query_hooked;   /* the stream whose next query is hooked; the hook clears it */
static int query_hook_kind;       /* 1: queue a held callback first; 2: wait until told */
static th_gate query_held;
static th_flag query_began, query_go;
static gf_result hooked_stream_query(gf_stream *s)
{
    if (s != __atomic_load_n(&query_hooked, __ATOMIC_ACQUIRE)) return real_stream_query(s);
    __atomic_store_n(&query_hooked, NULL, __ATOMIC_RELEASE);
    if (query_hook_kind == 1) {
        (void)gf_stream_add_callback(s, th_gate_cb, &query_held);   /* queued after the answer below was true */
    } else {
        th_flag_add(&query_began, 1);
        th_flag_wait(&query_go, 1, TH_WAIT_MS);
    }
    return GF_OK;
}
static void *query_stream(void *s) { (void)gf_stream_query((gf_stream *)s); return NULL; }
static void test_settled_counts(void)
{
    static gf__backend hooked;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_buffer *x = NULL;
    gf_stream_stats st;
    char text[4096];
    pthread_t t;
    if (!CHECK_EQ_RESULT(gf_device_open(R.backend, 0, &dev), GF_OK)) return;
    hooked = *dev->be;
    real_stream_query = hooked.stream_query;
    hooked.stream_query = hooked_stream_query;
    dev->be = &hooked;
    th_gate_init(&query_held);
    th_flag_init(&query_began);
    th_flag_init(&query_go);
    if (CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK) && CHECK_EQ_RESULT(gf_buffer_create(dev, 256, &x), GF_OK)) {
        query_hook_kind = 1;
        __atomic_store_n(&query_hooked, s, __ATOMIC_RELEASE);
        CHECK_EQ_RESULT(gf_device_write_state(dev, text, sizeof text), GF_OK);
        CHECK(gf_stream_get_stats(s, &st) == GF_OK && st.pending == 1,
              "settled counts: a callback queued while gf_device_write_state asked the driver is not taken as done");
        th_gate_open(&query_held);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);

        query_hook_kind = 2;   /* a query that answers late, after a synchronize that saw more */
        __atomic_store_n(&query_hooked, s, __ATOMIC_RELEASE);
        if (CHECK(pthread_create(&t, NULL, query_stream, s) == 0, "settled counts: a second thread")) {
            th_flag_wait(&query_began, 1, TH_WAIT_MS);
            CHECK_EQ_RESULT(gf_fill_async(s, x, 0, 1, 256), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            th_flag_add(&query_go, 1);
            pthread_join(t, NULL);
            CHECK(gf_stream_get_stats(s, &st) == GF_OK && st.pending == 0,
                  "settled counts: a late answer to an older query does not set the count of done work back");
        }
    }
    __atomic_store_n(&query_hooked, NULL, __ATOMIC_RELEASE);
    th_gate_open(&query_held);
    th_flag_add(&query_go, 1);
    if (x) gf_buffer_destroy(x);
    if (s) gf_stream_destroy(s);
    gf_device_close(dev);
    th_gate_destroy(&query_held);
    th_flag_destroy(&query_began);
    th_flag_destroy(&query_go);
}

/* Unmatched gf_range_push (found by a long-run review): the depth was an int, and 2^31 pushes
   without their pops (one leaked per error path) wrapped it negative, then a push wrote the
   stream's open spans at index INT_MIN. */
static void test_range_depth_unbounded(void)
{
    gf_stream *s = NULL;
    if (!CHECK_EQ_RESULT(gf_stream_create(R.dev, NULL, &s), GF_OK)) return;
    s->range_depth = INT_MAX;   /* as after 2^31 - 1 pushes left open */
    gf_range_push(s, "one more");
    gf_range_push(s, "and another");
    gf_range_pop(s);
    gf_range_pop(s);
    gf_range_pop(s);
    CHECK(s->range_depth == (uint64_t)INT_MAX - 1, "range depth: pushes past INT_MAX are counted and popped");
    s->range_depth = 0;
    gf_range_push(s, "fresh");
    gf_range_pop(s);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_stream_destroy(s);
}

/* Flow ids (found by a long-run review): a count modulo 65535 gave a flow made 65535 flows later
   (a flow per frame: 18 minutes) the id of one still alive, and that one's tasks were taken as
   the new flow's own. */
static gf_result flow_nothing(gf_stream *s, void *user) { (void)s; (void)user; return GF_OK; }
static void test_flow_ids_live(void)
{
    gf_flow *a = NULL, *b = NULL, *tmp = NULL;
    gf_task ta, tb0, tb1;
    int i, made = 1;
    if (!CHECK_EQ_RESULT(gf_flow_create(R.dev, NULL, &a), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_flow_add(a, "a0", flow_nothing, NULL, &ta), GF_OK)) {
        for (i = 0; i < 65534 && made; i++) {   /* b comes 65535 flows after a */
            made = gf_flow_create(R.dev, NULL, &tmp) == GF_OK;
            if (made) gf_flow_destroy(tmp);
        }
        CHECK(made, "flow ids: 65534 flows made and destroyed one by one beside a live one");
        if (CHECK_EQ_RESULT(gf_flow_create(R.dev, NULL, &b), GF_OK) && CHECK_EQ_RESULT(gf_flow_add(b, "b0", flow_nothing, NULL, &tb0), GF_OK) &&
            CHECK_EQ_RESULT(gf_flow_add(b, "b1", flow_nothing, NULL, &tb1), GF_OK))
            CHECK_FAIL(gf_flow_depend(b, ta, tb1), GF_ERROR_INVALID_ARGUMENT);   /* a's task, not b's first */
    }
    if (b) gf_flow_destroy(b);
    gf_flow_destroy(a);
}

/* Counts that ran on for ever (found by a long-run review): a flow with graph_after that can
   never become a graph (a task with on_complete) counted its runs in an int that overflowed
   after 2^31; a growing list doubled its int capacity past INT_MAX and then looped for good;
   the count of threads that used an event pool was an int that overflowed (UBSan). */
static void flow_done(void *user, gf_result status) { (void)user; (void)status; }
static void *pool_cycle(void *pool)
{
    gf_event *ev = NULL;
    if (gf_event_pool_acquire((gf_event_pool *)pool, 0, &ev) == GF_OK) (void)gf_event_pool_release((gf_event_pool *)pool, ev);
    return ev;
}
static void test_counts_bounded(void)
{
    gf_flow_desc fd;
    gf_task_desc td;
    gf_flow *flow = NULL;
    gf_stream_pool *pool = NULL;
    gf_event_pool *events = NULL;
    gf_task t;
    void *items = NULL, *got = NULL;
    int cap = 8, i;
    pthread_t th;
    memset(&fd, 0, sizeof fd);
    memset(&td, 0, sizeof td);
    fd.graph_after = 2;
    td.fn = flow_nothing; td.on_complete = flow_done;
    if (CHECK_EQ_RESULT(gf_flow_create(R.dev, &fd, &flow), GF_OK) && CHECK_EQ_RESULT(gf_flow_add_desc(flow, &td, &t), GF_OK) &&
        CHECK_EQ_RESULT(gf_stream_pool_create(R.dev, NULL, &pool), GF_OK)) {
        for (i = 0; i < 5; i++) CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
        CHECK(flow->same_runs <= 2, "counts bounded: a flow that cannot become a graph stops counting its runs at graph_after");
        CHECK_EQ_RESULT(gf_device_synchronize(R.dev), GF_OK);
    }
    if (flow) gf_flow_destroy(flow);
    if (pool) gf_stream_pool_destroy(pool);
    CHECK(!gf__grow(&items, &cap, INT_MAX / 2 + 1, 1) && cap == 8, "counts bounded: a list asked past INT_MAX / 2 items refuses at once");
    gf__free(items);
    if (CHECK_EQ_RESULT(gf_event_pool_create(R.dev, NULL, &events), GF_OK)) {
        __atomic_store_n(&gf__threads_numbered, INT_MAX, __ATOMIC_RELAXED);   /* as after 2^31 - 1 threads */
        if (CHECK(pthread_create(&th, NULL, pool_cycle, events) == 0, "counts bounded: a thread")) {
            pthread_join(th, &got);
            CHECK(got != NULL, "counts bounded: a thread numbered past INT_MAX takes an event from a pool");
        }
        gf_event_pool_destroy(events);
    }
}

/* The stream-ordered allocation cache (stub, OpenCL) keeps blocks in bins by size (four per power
   of two), so that a take looks at blocks of fitting sizes only (it scanned every block, 113 us
   at 20k): a block of the smallest bin that holds one of bytes to 2 x bytes, none past that. */
static void test_cache_best_fit(void)
{
    static const size_t sizes[] = { 1000, 4000, 2000, 1500, 1500, 64 << 10 };
    gf_stream *s = NULL;
    gf_buffer *b[6], *got = NULL;
    size_t bytes_before;
    int i, n = 0;
    if (R.dev->be->buffer_alloc_async) { SKIP("cache best fit: the driver has stream-ordered allocation"); return; }
    if (!CHECK_EQ_RESULT(gf_stream_create(R.dev, NULL, &s), GF_OK)) return;
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_device_trim(R.dev, 0);
    bytes_before = R.dev->cache.bytes;
    for (i = 0; i < 6; i++) if (CHECK_EQ_RESULT(gf_buffer_create_async(s, sizes[i], &b[n]), GF_OK)) n++;
    for (i = 0; i < n; i++) CHECK_EQ_RESULT(gf_buffer_destroy_async(s, b[i]), GF_OK);
    CHECK(R.dev->cache.count == n && R.dev->cache.bytes == bytes_before + 1000 + 4000 + 2000 + 3000 + (64 << 10),
          "cache best fit: six freed blocks cached, their bytes counted");
    if (CHECK_EQ_RESULT(gf_buffer_create_async(s, 1400, &got), GF_OK)) {
        CHECK(got->capacity == 1500, "cache best fit: 1400 bytes take a block of 1500 (its bin; not 2000)");
        CHECK_EQ_RESULT(gf_buffer_destroy_async(s, got), GF_OK);
    }
    if (CHECK_EQ_RESULT(gf_buffer_create_async(s, 2500, &got), GF_OK)) {
        CHECK(got->capacity == 4000, "cache best fit: 2500 bytes take the block of 4000, the only one from 2500 to 5000");
        CHECK_EQ_RESULT(gf_buffer_destroy_async(s, got), GF_OK);
    }
    if (CHECK_EQ_RESULT(gf_buffer_create_async(s, 400, &got), GF_OK)) {
        CHECK(got->capacity == 400, "cache best fit: 400 bytes take no block (each wastes more than half)");
        CHECK_EQ_RESULT(gf_buffer_destroy_async(s, got), GF_OK);
    }
    if (CHECK_EQ_RESULT(gf_buffer_create_async(s, 2000, &got), GF_OK)) {
        CHECK(got->capacity == 2000, "cache best fit: an exact fit is taken");
        CHECK_EQ_RESULT(gf_buffer_destroy_async(s, got), GF_OK);
    }
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_device_trim(R.dev, 0), GF_OK);
    CHECK(R.dev->cache.count == 0 && R.dev->cache.bytes == 0, "cache best fit: a trim gives every block back");
    gf_stream_destroy(s);
}

/* Cancelling waits finds them through an index by id (a cancel searched the whole list: 97 us
   at 100k pending, and a pool destroyed with n completions pending cancelled in n^2). Random
   cancels of 5000 pending waits against a model: each cancel answers as the model says, each
   wait left fires once. */
#define CW_WAITS 5000
static int cw_fired[CW_WAITS];
static void cw_count(void *user, gf_result status) { (void)status; __atomic_add_fetch(&cw_fired[(size_t)user], 1, __ATOMIC_RELAXED); }
static void test_cancel_index(void)
{
    static uint64_t ids[CW_WAITS];
    static unsigned char gone[CW_WAITS];
    gf_stream *s = NULL;
    gf_event *ev = NULL;
    th_gate held;
    unsigned seed = 12345;
    int i, round, wrong = 0, left = 0, spins;
    th_gate_init(&held);
    if (CHECK_EQ_RESULT(gf_stream_create(R.dev, NULL, &s), GF_OK) && CHECK_EQ_RESULT(gf_event_create(R.dev, 0, &ev), GF_OK) &&
        CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &held), GF_OK) && CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK)) {
        for (i = 0; i < CW_WAITS; i++) wrong += gf_event_on_complete(ev, cw_count, (void *)(size_t)i, &ids[i]) != GF_OK;
        for (round = 0; round < 3; round++)
            for (i = 0; i < CW_WAITS; i++) {
                seed = seed * 1103515245u + 12345u;
                if ((seed >> 16) % 3) continue;
                wrong += (gf_event_cancel_wait(R.dev, ids[i]) == GF_OK) != !gone[i];
                gone[i] = 1;
            }
        CHECK(wrong == 0, "cancel index: every add succeeds and every cancel answers as the model says");
        th_gate_open(&held);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        for (i = 0; i < CW_WAITS; i++) left += !gone[i];
        for (spins = 0; spins < 5000; spins++) {
            int fired = 0;
            for (i = 0; i < CW_WAITS; i++) fired += __atomic_load_n(&cw_fired[i], __ATOMIC_RELAXED);
            if (fired >= left) break;
            th_sleep_ms(1);
        }
        for (i = 0, wrong = 0; i < CW_WAITS; i++) wrong += __atomic_load_n(&cw_fired[i], __ATOMIC_RELAXED) != !gone[i];
        CHECK(wrong == 0, "cancel index: each wait not cancelled fired once, none cancelled did");
        for (i = 0, wrong = 0; i < CW_WAITS; i++) wrong += gf_event_cancel_wait(R.dev, ids[i]) != GF_ERROR_NOT_FOUND;
        CHECK(wrong == 0, "cancel index: no wait is found once fired or cancelled");
    }
    th_gate_open(&held);
    if (ev) gf_event_destroy(ev);
    if (s) gf_stream_destroy(s);
    th_gate_destroy(&held);
}

/* The 64-bit fields gpuflow updates with atomics are 8-aligned, where the ABI puts a uint64_t on
   4 bytes inside a struct (i386: tests/cross.sh runs this file so): a device's next_id was at
   4 mod 8, and a locked access across two cache lines is a split lock (a fault where the
   kernel refuses them; a torn read of a plain 64-bit load). */
#define RA_ALIGNED(p) ((((uintptr_t)(const void *)(p)) & 7u) == 0)
static void test_atomics_aligned(void)
{
    gf_device *dev = R.dev;
    gf_stream *s = NULL;
    gf_stream_pool *pool = NULL;
    if (CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK)) {
        CHECK(RA_ALIGNED(&dev->next_id) && RA_ALIGNED(&dev->next_label), "atomics aligned: a device's id counters are 8-aligned");
        CHECK(RA_ALIGNED(&s->submitted) && RA_ALIGNED(&s->retired) && RA_ALIGNED(&s->ops) && RA_ALIGNED(&s->bridged_waits),
              "atomics aligned: a stream's counters are 8-aligned");
        gf_stream_destroy(s);
    }
    if (CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK)) {
        CHECK(RA_ALIGNED(&pool->next) && RA_ALIGNED(&pool->lease[0].acquisitions) && RA_ALIGNED(&pool->lease[1].releases),
              "atomics aligned: a stream pool's cursor and lease counters are 8-aligned");
        gf_stream_pool_destroy(pool);
    }
}

int main(int argc, char **argv)
{
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!(R.name = th_backend_arg(argc, argv, &R.backend))) return 2;
    r = gf_device_open(R.backend, 0, &R.dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: reliability %s skipped: %s: %s\n", R.name, gf_result_name(r), gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return th_finish();
    printf("reliability on %s: %s\n", R.name, gf_device_name(R.dev));
    test_pool_destroy_with_pending_wait();
    test_destroy_while_wait_runs();
    test_graph_update_races();
    test_destroy_without_memory();
    if (R.backend == GF_BACKEND_STUB) test_cache_gives_memory_back();   /* needs the 64 MiB stub */
    test_cache_first_use_race();
    test_event_record_race();
    test_failure_messages();
    test_huge_sizes();
    test_launch_arguments();
    test_idle_stream_query();
    test_logger();
    test_callback_enqueues();
    test_logger_calls_back();
    test_logger_in_flow_task();
    test_timeouts();
    test_fuzz_findings();
    test_wrap_buffer_wrapper_first();
    test_wrap_buffer_foreign_first();
    test_wrap_stream();
    test_wrap_views();
    test_record_stream_two_devices();
    test_graph_args_after_update();
    test_graph_args_update_threads();
    test_cache_wait_behind_allocating_callback();
    test_destroy_async_held_by_graph();
    test_waiter_backlog();
    test_waiter_lets_go();
    test_cache_entry_replaced();
    test_utf8_long_paths();
#if defined(_WIN32)
    test_windows_path_forms();
#endif
    test_build_log_start();
    test_cache_limit();
    test_cache_trim_together();
    test_waiter_rearming();
    test_race_slots_reused();
    test_race_host_wait_began();
    test_atomics_aligned();
    test_settled_counts();
    test_range_depth_unbounded();
    test_flow_ids_live();
    test_counts_bounded();
    test_cache_best_fit();
    test_cancel_index();
#ifdef GPUFLOW_OPENCL
    fcl_done();
#endif
    gf_device_close(R.dev);
    return th_finish();
}
