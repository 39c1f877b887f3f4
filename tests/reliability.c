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

/* ---- 1: destroying an event pool while a waiter is pending on one of its events ------------ */
static void test_pool_destroy_with_pending_wait(void)
{
    gf_event_pool *pool = NULL;
    gf_event *ev = NULL;
    gf_stream *s = mk_stream("gated");
    gf_event_pool_stats st;
    th_gate gate;
    th_flag fired;
    th_gate_init(&gate);
    th_flag_init(&fired);
    CHECK_EQ_RESULT(gf_event_pool_create(R.dev, NULL, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_acquire(pool, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(ev, th_flag_cb, &fired, NULL), GF_OK);
    CHECK_SETS_ERROR(gf_event_pool_destroy(pool));
    CHECK(contains(gf_last_error(), "pending"), "1: the refusal says a wait is pending");
    CHECK_EQ_RESULT(gf_event_pool_get_stats(pool, &st), GF_OK);   /* kept: still a live pool */
    CHECK(st.in_use == 1, "1: the refused destroy changed nothing");
    th_gate_open(&gate);
    CHECK(th_flag_wait(&fired, 1, TH_WAIT_MS), "1: the pending wait fires once its event completes");
    CHECK_EQ_RESULT(gf_event_pool_release(pool, ev), GF_OK);
    gf_event_pool_destroy(pool);   /* nothing pending now: the waiter never touched freed memory */
    gf_stream_destroy(s);
    th_flag_destroy(&fired);
    th_gate_destroy(&gate);
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
    ra_fail_here = 1;          /* this thread gets no host memory during the destroy */
    gf_buffer_destroy(b);      /* must wait for the fill, not free what it will write */
    ra_fail_here = 0;
    pthread_join(t, NULL);
    CHECK(TH_GATE_LEFT(&gate) == 1, "3: the destroy returned only after the queued fill could run");
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
    gf_task a, b;
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
    gf_device_info info;
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
        uint32_t h[16];
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
    gf_stream_destroy(NULL);   /* a void call's refusal is logged too */
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

int main(int argc, char **argv)
{
    static const struct { const char *name; gf_backend b; } known[] = {
        { "stub", GF_BACKEND_STUB }, { "cuda", GF_BACKEND_CUDA },
        { "hip", GF_BACKEND_HIP }, { "opencl", GF_BACKEND_OPENCL }
    };
    gf_result r;
    int i;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; argc == 2 && i < 4; i++)
        if (strcmp(argv[1], known[i].name) == 0) { R.name = known[i].name; R.backend = known[i].b; }
    if (!R.name) { fprintf(stderr, "usage: %s stub|cuda|hip|opencl\n", argv[0]); return 2; }
    r = gf_device_open(R.backend, 0, &R.dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: reliability %s skipped: %s: %s\n", R.name, gf_result_name(r), gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return th_finish();
    printf("reliability on %s: %s\n", R.name, gf_device_name(R.dev));
    test_pool_destroy_with_pending_wait();
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
    test_timeouts();
    test_fuzz_findings();
    gf_device_close(R.dev);
    return th_finish();
}
