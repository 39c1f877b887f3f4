/* Stress and soak on one device.

   Stress: NT threads (default 8) for a bounded time over SHARED objects of one device:
   shared streams (fills, copies, kernels, callbacks from every thread), one stream pool
   (acquire with hints, acquire_ready with timeouts, completion timing on), one event pool
   (acquire / record / wait / release), async waiters with cancels racing the firing, a flow
   (a diamond DAG) run from every thread over the pool, and graphs captured up front and
   launched from every thread. Optional ('update'): gf_graph_update of a graph from several
   threads while others launch it (a race, fixed in e14d585, that TSan reported in
   gf__same_shape / gf__cmds_free). At the end every total is checked exactly: each callback and waiter ran exactly once
   (or was cancelled with GF_OK and never ran), buffer contents, stream statistics, pool
   acquisitions and completions, event-pool balance.

   Soak: rounds of create / use / destroy of every device-level object on a fresh device,
   sampling RSS, open fds, threads and device memory in use every N rounds; growth from the
   first sample to the last must stay under a small bound ("flat is the target").

   Toggle: the race detector switched on and off (gf_race_check_enable) by STRESS_TOGGLERS
   threads (default 2) as fast as they can, while STRESS_TOGGLE_THREADS threads (default 4) do
   correct, synchronized work on a fresh device: per thread two streams, fills (kernel and
   gf_fill32_async), add_u32 kernels, copies (device to device, to host, from a buffer every
   thread reads), events and stream waits between the two, a graph replayed each round, a
   stream-ordered buffer, callbacks, and each round joined in one of seven ways (event wait,
   stream wait, stream, event and device synchronize, an event polled to completion, a
   barrier). Each round's data is checked; at the end gf_race_report must say 0 races (the
   program is correct, whatever the detector saw of it), and then one real race, made on
   purpose (held apart by a gate, so it is not a race in memory), must still be reported.

       ./stress [stub|opencl|cuda|hip] [seconds] [update] [stress] [soak] [toggle]
                                         (default stub, 20 s, all three parts; naming parts runs only those)

   Environment (arguments win):
       STRESS_SECONDS        stress duration (default 20); also the soak's time cap
       STRESS_SOAK_SECONDS   the soak's time cap (default STRESS_SECONDS)
       STRESS_ROUNDS         soak rounds (default 50000)
       STRESS_SOAK_EVERY     rounds between soak samples (default 10000)
       STRESS_SOAK_HEAVY     rounds between the soak's thread-making objects (default 4)
       STRESS_THREADS        stress threads (default 8, at most 32)
       STRESS_GRAPH_UPDATE=1 also race gf_graph_update against launches of the same graph
       STRESS_SEED           the threads' random seed (default 1)
       STRESS_TOGGLE_SECONDS the toggle storm's duration (default the smaller of STRESS_SECONDS and 10)
       STRESS_TOGGLE_THREADS threads doing work in the toggle storm (default 4, at most 16)
       STRESS_TOGGLERS       threads switching the detector (default 2, at most 8)
       STRESS_TOGGLE_CONTROL=1  the togglers only ever switch it on (the detector stays on): a
                             control run, to tell a race report the switching caused from one it did not */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include <dirent.h>
#include <unistd.h>
#include "harness.h"
#include "test_kernels.h"

#if defined(__SANITIZE_ADDRESS__)
#  define STRESS_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define STRESS_ASAN 1
#  endif
#endif
#ifndef STRESS_ASAN
#  define STRESS_ASAN 0
#endif

/* Sequentially consistent: the totals are compared across threads at the end. */
#define A_ADD(p, v)   __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define A_LOAD(p)     __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define A_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

enum {
    MAX_THREADS = 32,
    NS = 3,                  /* shared streams */
    NG = 3,                  /* graphs captured up front; graph g runs on shared stream g % NS */
    R = 1024,                /* bytes of each thread's region of the shared buffers */
    KN = 64,                 /* uint32 elements one kernel launch touches */
    POOL_STREAMS = 6,
    EPOOL_PLAIN = 8, EPOOL_TIMING = 4,
    MAX_OUT = 16,            /* waiters a thread lets fire and releases later */
    TOKENS_PER_CHUNK = 4096,
    PREFILL_BLOCKS = 96      /* MiB put through the soak's stream-ordered cache before round 0 */
};

static double env_num(const char *name, double dflt)
{
    const char *v = getenv(name);
    return v && *v ? atof(v) : dflt;
}

/* ---- configuration -------------------------------------------------------------------- */
static struct {
    gf_backend backend;
    double seconds, soak_seconds;
    long rounds, every;
    int threads, update, run_stress, run_soak, run_toggle;
    double toggle_seconds;
    int toggle_threads, togglers, toggle_control;
    uint32_t seed;
} cfg;

/* ---- errors of a thread or phase: counted, the first one kept with its detail ---------- */
typedef struct errs { int count; char first[256]; } errs;

static int e_call(errs *e, gf_result r, const char *expr, int line)
{
    if (r == GF_OK) return 1;
    if (e->count++ == 0)   /* the detail is cut to fit */
        snprintf(e->first, sizeof e->first, "line %d: %s returned %s: %.120s", line, expr, gf_result_name(r), gf_last_error());
    return 0;
}
static void e_fail(errs *e, int line, const char *what)
{
    if (e->count++ == 0) snprintf(e->first, sizeof e->first, "line %d: %s", line, what);
}
#define E_CALL(e, expr) e_call((e), (expr), #expr, __LINE__)
#define E_FAIL(e, what) e_fail((e), __LINE__, (what))

/* ---- tokens: one per callback or waiter, checked one by one at the end ----------------- */
typedef struct token {
    int hits;                /* atomic: times the callback ran */
    int bad;                 /* atomic: a status other than GF_OK, or a refused release inside it */
    int want;                /* runs expected: 1, or 0 once cancelled or never enqueued (owner only) */
    gf_event *ev;            /* waiters: the pooled event (self-releasing ones give it back) */
} token;
typedef struct token_chunk { struct token_chunk *next; int used; token t[TOKENS_PER_CHUNK]; } token_chunk;

/* ---- per-thread state ------------------------------------------------------------------ */
typedef struct worker {
    int index;
    uint32_t rng;
    pthread_t thread;
    errs e;
    token_chunk *tokens;
    /* this thread's region of the shared buffers: one chain of sequences across the shared
       streams, ordered by pooled events */
    gf_event *chain;
    unsigned seq;
    unsigned char last_v;
    int region_known;        /* the last sequence was enqueued whole: its result is known */
    unsigned char hA[R], hB[R], pattern[R / 4];
    gf_buffer *kbuf;         /* add_u32 target, launched only inside the chain */
    uint64_t klaunches;
    uint64_t verified;
    /* waiters left to fire, released once they did */
    token *out[MAX_OUT];
    int out_count;
    volatile unsigned spin_sink;   /* the cancel delay loop's result, kept */
    /* figures */
    uint64_t iters, n_seq, n_cb, n_pool, n_ready_ok, n_ready_timeout, n_waiters, n_cancel_ok,
             n_cancel_late, n_let_fire, n_flow, n_graph, n_update, n_ulaunch, n_misc;
} worker;

static worker W[MAX_THREADS];

/* ---- shared objects and the totals they must end at ---------------------------------------- */
static gf_device *dev;
static gf_kernel *k_add, *k_empty;           /* NULL when the backend has no test kernels */
static gf_stream *shared[NS], *ustream;
static gf_buffer *bufA, *bufB, *gbuf[NG], *ubuf;
static gf_stream_pool *pool;
static gf_event_pool *epool;
static gf_flow *flow;
static gf_graph *graphs[NG], *ugraph, *ufrom[2];
static int g_stop;                           /* atomic: the threads finish */

typedef struct sstats { uint64_t ops, copies, bytes, launches, callbacks; } sstats;
static sstats expect_shared[NS], expect_u, expect_pool;   /* atomics: what was submitted */
static uint64_t pool_acquired;               /* atomic: every successful acquisition, flows' lanes too */
static int flow_lanes;                       /* acquisitions one gf_flow_run makes */
static uint64_t flow_runs, flow_hits[4], flow_order_bad, flow_bad_status;
static uint64_t graph_launches[NG], graph_hits[NG], graph_bad_status;
static uint64_t u_launches, u_hits[3], u_updates;
static uint64_t cb_enqueued, cb_ran, waiters_made;
static const int task_ids[4] = { 0, 1, 2, 3 };

static uint32_t rnd(worker *w)   /* xorshift32 */
{
    uint32_t x = w->rng;
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    return w->rng = x;
}

static gf_launch_dims dims_1d(unsigned threads)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    d.block[0] = threads; d.block[1] = d.block[2] = 1;
    return d;
}

/* Where a submission on s is counted: each shared stream exactly, the pool's streams summed. */
static sstats *stats_of(gf_stream *s)
{
    int i;
    for (i = 0; i < NS; i++) if (s == shared[i]) return &expect_shared[i];
    if (s && s == ustream) return &expect_u;
    return &expect_pool;
}
static void note(gf_stream *s, uint64_t copy_bytes, int launch, int callback)
{
    sstats *st = stats_of(s);
    A_ADD(&st->ops, 1);
    if (copy_bytes) { A_ADD(&st->copies, 1); A_ADD(&st->bytes, copy_bytes); }
    if (launch) A_ADD(&st->launches, 1);
    if (callback) A_ADD(&st->callbacks, 1);
}

static token *token_new(worker *w)
{
    token_chunk *c = w->tokens;
    token *t;
    if (!c || c->used == TOKENS_PER_CHUNK) {
        if (!(c = (token_chunk *)calloc(1, sizeof *c))) { E_FAIL(&w->e, "out of host memory for tokens"); return NULL; }
        c->next = w->tokens;
        w->tokens = c;
    }
    t = &c->t[c->used++];
    t->want = 1;
    return t;
}

/* ---- callbacks (stream callbacks run on stream threads, waiters on the waiter thread) ----- */
static void cb_token(void *user, gf_result status)
{
    token *t = (token *)user;
    if (status != GF_OK) A_ADD(&t->bad, 1);
    A_ADD(&t->hits, 1);
    A_ADD(&cb_ran, 1);
}
static void cb_waiter(void *user, gf_result status)
{
    token *t = (token *)user;
    if (status != GF_OK) A_ADD(&t->bad, 1);
    A_ADD(&t->hits, 1);
}
/* Waiters may call gpuflow: this one gives its event back to the pool itself. */
static void cb_waiter_release(void *user, gf_result status)
{
    token *t = (token *)user;
    if (status != GF_OK) A_ADD(&t->bad, 1);
    if (gf_event_pool_release(epool, t->ev) != GF_OK) A_ADD(&t->bad, 1);
    A_ADD(&t->hits, 1);
}
static void cb_graph(void *user, gf_result status)
{
    if (status != GF_OK) A_ADD(&graph_bad_status, 1);
    A_ADD((uint64_t *)user, 1);
}
/* A task's n-th completion implies n completions of each of its predecessors: each of the n
   runs whose task has run had its predecessors' callbacks run before it. */
static void cb_flow(void *user, gf_result status)
{
    int i = *(const int *)user;
    uint64_t n = A_ADD(&flow_hits[i], 1) + 1;
    if (status != GF_OK) A_ADD(&flow_bad_status, 1);
    if ((i == 1 || i == 2) && A_LOAD(&flow_hits[0]) < n) A_ADD(&flow_order_bad, 1);
    if (i == 3 && (A_LOAD(&flow_hits[1]) < n || A_LOAD(&flow_hits[2]) < n)) A_ADD(&flow_order_bad, 1);
}

/* A flow task: a callback and an empty kernel on its lane (a pool stream). */
static gf_result task_fn(gf_stream *s, void *user)
{
    gf_result r = gf_stream_add_callback(s, cb_flow, user);
    if (r != GF_OK) return r;
    note(s, 0, 0, 1);
    if (k_empty) {
        if ((r = gf_launch(s, k_empty, dims_1d(1), NULL, 0)) != GF_OK) return r;
        note(s, 0, 1, 0);
    }
    return GF_OK;
}

/* ---- counted submissions ---------------------------------------------------------------- */
static int op_fill(worker *w, gf_stream *s, gf_buffer *b, size_t off, unsigned char v, size_t n)
{
    if (!E_CALL(&w->e, gf_fill_async(s, b, off, v, n))) return 0;
    note(s, 0, 0, 0);
    return 1;
}
static int op_callback(worker *w, gf_stream *s)
{
    token *t = token_new(w);
    if (!t) return 0;
    if (!E_CALL(&w->e, gf_stream_add_callback(s, cb_token, t))) { t->want = 0; return 0; }
    A_ADD(&cb_enqueued, 1);
    note(s, 0, 0, 1);
    w->n_cb++;
    return 1;
}
static int op_add(worker *w, gf_stream *s, gf_buffer *b)
{
    uint32_t n = KN, one = 1;
    gf_arg args[3];
    args[0].value = 0; args[0].size = 0; args[0].buffer = b;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &one; args[2].size = sizeof one; args[2].buffer = 0;
    if (!E_CALL(&w->e, gf_launch(s, k_add, dims_1d(KN), args, 3))) return 0;
    note(s, 0, 1, 0);
    return 1;
}

/* ---- actions ------------------------------------------------------------------------------ */
/* Checks the host copies of this thread's last sequence (after its chain event completed). */
static void verify_region(worker *w)
{
    unsigned char v = w->last_v;
    int j;
    char what[160];
    if (!w->region_known || !w->chain || !E_CALL(&w->e, gf_event_synchronize(w->chain))) return;
    for (j = 0; j < R; j++) {
        unsigned char wantB = j < R / 4 ? w->pattern[j] : v;
        unsigned char wantA = j < R / 4 ? w->pattern[j] : j < R / 2 ? v : (unsigned char)(v ^ 0x5a);
        if (w->hB[j] != wantB || w->hA[j] != wantA) {
            snprintf(what, sizeof what, "thread %d sequence %u: byte %d reads A=0x%02x B=0x%02x, expected A=0x%02x B=0x%02x",
                     w->index, w->seq, j, w->hA[j], w->hB[j], wantA, wantB);
            E_FAIL(&w->e, what);
            return;
        }
    }
    w->verified++;
}

/* One sequence on this thread's region, on a random shared stream, after the previous one
   (a pooled event carries the order from stream to stream). */
static void do_sequence(worker *w)
{
    gf_stream *s = shared[rnd(w) % NS];
    size_t off = (size_t)w->index * R;
    unsigned char v = (unsigned char)(w->seq * 7u + (unsigned)w->index * 31u + 1u);
    gf_event *e = NULL;
    int ok = 1;
    if (w->chain) {
        ok = E_CALL(&w->e, gf_stream_wait_event(s, w->chain));
        E_CALL(&w->e, gf_event_pool_release(epool, w->chain));   /* the wait holds its own record */
        w->chain = NULL;
    }
    ok = ok && op_fill(w, s, bufA, off, v, R);
    ok = ok && E_CALL(&w->e, gf_copy_to_device_async(s, bufA, off, w->pattern, R / 4));
    if (ok) note(s, R / 4, 0, 0);
    ok = ok && E_CALL(&w->e, gf_copy_buffer_async(s, bufB, off, bufA, off, R));
    if (ok) note(s, R, 0, 0);
    ok = ok && op_fill(w, s, bufA, off + R / 2, (unsigned char)(v ^ 0x5a), R / 2);
    if (ok && k_add) { ok = op_add(w, s, w->kbuf); if (ok) w->klaunches++; }
    ok = ok && E_CALL(&w->e, gf_copy_to_host_async(s, w->hB, bufB, off, R));
    if (ok) note(s, R, 0, 0);
    ok = ok && E_CALL(&w->e, gf_copy_to_host_async(s, w->hA, bufA, off, R));
    if (ok) note(s, R, 0, 0);
    ok = ok && op_callback(w, s);
    if (E_CALL(&w->e, gf_event_pool_acquire(epool, (rnd(w) & 3) == 0 ? GF_EVENT_TIMING : 0, &e))) {
        if (E_CALL(&w->e, gf_event_record(e, s))) w->chain = e;
        else E_CALL(&w->e, gf_event_pool_release(epool, e));
    }
    w->region_known = ok && w->chain;
    w->last_v = v;
    w->seq++;
    w->n_seq++;
    if (w->seq % 8 == 0) verify_region(w);
}

static void do_callbacks(worker *w)
{
    gf_stream *s = shared[rnd(w) % NS];
    int n = 1 + (int)(rnd(w) % 4), i;
    for (i = 0; i < n; i++) op_callback(w, s);
}

/* A lease with a hint; sometimes a second lease that waits for the first via the event pool. */
static void do_pool(worker *w)
{
    gf_acquire_hint h;
    gf_stream *a = NULL, *b = NULL;
    gf_event *e = NULL;
    h.priority = (gf_priority)(rnd(w) % 3);
    h.workload = (gf_workload)(rnd(w) % GF_WORKLOAD_COUNT);
    if (!E_CALL(&w->e, gf_stream_pool_acquire(pool, &h, &a))) return;
    A_ADD(&pool_acquired, 1);
    w->n_pool++;
    op_callback(w, a);
    if (k_empty && E_CALL(&w->e, gf_launch(a, k_empty, dims_1d(1), NULL, 0))) note(a, 0, 1, 0);
    if (rnd(w) & 1) {
        h.workload = (gf_workload)(rnd(w) % GF_WORKLOAD_COUNT);
        if (E_CALL(&w->e, gf_stream_pool_acquire(pool, &h, &b))) {
            A_ADD(&pool_acquired, 1);
            if (E_CALL(&w->e, gf_event_pool_acquire(epool, (rnd(w) & 1) ? GF_EVENT_TIMING : 0, &e))) {
                E_CALL(&w->e, gf_event_record(e, a));
                E_CALL(&w->e, gf_stream_wait_event(b, e));
                op_callback(w, b);
                E_CALL(&w->e, gf_event_pool_release(epool, e));
            }
            E_CALL(&w->e, gf_stream_pool_release(pool, b));
        }
    }
    E_CALL(&w->e, gf_stream_pool_release(pool, a));
}

static void do_ready(worker *w)
{
    gf_stream *s = NULL;
    gf_result r = gf_stream_pool_acquire_ready(pool, rnd(w) % 4, &s);
    if (r == GF_TIMEOUT) { w->n_ready_timeout++; return; }
    if (!E_CALL(&w->e, r)) return;
    A_ADD(&pool_acquired, 1);
    w->n_ready_ok++;
    op_callback(w, s);
    E_CALL(&w->e, gf_stream_pool_release(pool, s));
}

/* Releases the events of let-fire waiters that fired; all: wait (bounded) for every one. */
static void poll_waiters(worker *w, int all)
{
    double end = th_now_ms() + TH_WAIT_MS;
    for (;;) {
        int i = 0;
        while (i < w->out_count) {
            token *t = w->out[i];
            if (A_LOAD(&t->hits) > 0) {
                E_CALL(&w->e, gf_event_pool_release(epool, t->ev));
                w->out[i] = w->out[--w->out_count];
            } else {
                i++;
            }
        }
        if (!all || w->out_count == 0) return;
        if (th_now_ms() > end) {
            E_FAIL(&w->e, "a waiter did not fire within 20 s");
            w->out_count = 0;   /* their tokens still fail the per-token check */
            return;
        }
        th_sleep_ms(1);
    }
}

/* An async waiter on a pooled event; most are cancelled after a random delay, racing the
   firing. GF_OK from the cancel: it never runs. GF_ERROR_NOT_FOUND: it ran, and has
   returned by the time the cancel does. */
static void do_waiter(worker *w)
{
    gf_stream *s = shared[rnd(w) % NS];
    gf_event *e = NULL;
    token *t;
    uint64_t id = 0;
    unsigned mode = rnd(w) % 4;   /* 0, 1: cancel race; 2: let fire; 3: self-releasing, cancel race */
    unsigned spin, k;
    gf_result r;
    if (mode == 2 && w->out_count == MAX_OUT) poll_waiters(w, 0);
    if (mode == 2 && w->out_count == MAX_OUT) poll_waiters(w, 1);
    if (!E_CALL(&w->e, gf_event_pool_acquire(epool, 0, &e))) return;
    if (rnd(w) % 8 != 0 && !E_CALL(&w->e, gf_event_record(e, s))) {   /* 1 in 8: never recorded, fires at once */
        E_CALL(&w->e, gf_event_pool_release(epool, e));
        return;
    }
    if (!(t = token_new(w))) { E_CALL(&w->e, gf_event_pool_release(epool, e)); return; }
    t->ev = e;
    if (!E_CALL(&w->e, gf_event_on_complete(e, mode == 3 ? cb_waiter_release : cb_waiter, t, &id))) {
        t->want = 0;
        E_CALL(&w->e, gf_event_pool_release(epool, e));
        return;
    }
    A_ADD(&waiters_made, 1);
    w->n_waiters++;
    if (mode == 2) { w->out[w->out_count++] = t; w->n_let_fire++; return; }
    spin = rnd(w) % 4096;
    for (k = 0; k < spin; k++) w->spin_sink += k;
    r = gf_event_cancel_wait(dev, id);
    if (r == GF_OK) {
        t->want = 0;
        w->n_cancel_ok++;
        E_CALL(&w->e, gf_event_pool_release(epool, e));   /* the cancelled wait no longer counts */
    } else if (r == GF_ERROR_NOT_FOUND) {
        w->n_cancel_late++;
        if (A_LOAD(&t->hits) != 1) E_FAIL(&w->e, "gf_event_cancel_wait said NOT_FOUND but the waiter has not run (exactly once)");
        if (mode != 3) E_CALL(&w->e, gf_event_pool_release(epool, e));
    } else {
        E_CALL(&w->e, r);
    }
}

static void do_flow(worker *w)
{
    if (!E_CALL(&w->e, gf_flow_run(flow, pool))) return;
    A_ADD(&flow_runs, 1);
    A_ADD(&pool_acquired, (uint64_t)flow_lanes);
    w->n_flow++;
}

static void do_graph(worker *w)
{
    int g = (int)(rnd(w) % NG);
    gf_stream *s = shared[g % NS];   /* one stream per graph: its launches never overlap */
    if (!E_CALL(&w->e, gf_graph_launch(graphs[g], s))) return;
    A_ADD(&graph_launches[g], 1);
    note(s, 0, 0, 0);
    w->n_graph++;
}

/* gf_graph_update of ugraph from two same-shaped graphs, while others launch it. */
static void do_update(worker *w)
{
    if (rnd(w) % 4 == 0) {
        if (E_CALL(&w->e, gf_graph_update(ugraph, ufrom[rnd(w) & 1]))) { A_ADD(&u_updates, 1); w->n_update++; }
        return;
    }
    if (!E_CALL(&w->e, gf_graph_launch(ugraph, ustream))) return;
    A_ADD(&u_launches, 1);
    note(ustream, 0, 0, 0);
    w->n_ulaunch++;
}

static void do_misc(worker *w)
{
    gf_stream *a = shared[rnd(w) % NS], *b = shared[rnd(w) % NS];
    gf_stream_stats st = { 0 };
    gf_event_pool_stats es = { 0 };
    gf_result r;
    w->n_misc++;
    switch (rnd(w) % 8) {
    case 0:
        r = gf_stream_query(a);
        if (r != GF_NOT_READY) E_CALL(&w->e, r);
        break;
    case 1: E_CALL(&w->e, gf_stream_synchronize(a)); break;
    case 2: E_CALL(&w->e, gf_stream_wait_stream(a, b)); break;
    case 3: E_CALL(&w->e, gf_barrier(shared, NS)); break;
    case 4: E_CALL(&w->e, gf_stream_get_stats(a, &st)); break;
    case 5: E_CALL(&w->e, gf_event_pool_get_stats(epool, &es)); break;
    case 6: if (rnd(w) % 8 == 0) E_CALL(&w->e, gf_device_synchronize(dev)); break;
    default: if (rnd(w) % 8 == 0) E_CALL(&w->e, gf_stream_pool_synchronize(pool)); break;
    }
}

static void *worker_main(void *p)
{
    worker *w = (worker *)p;
    while (!A_LOAD(&g_stop)) {
        unsigned a = rnd(w) % 100;
        if (a < 30) do_sequence(w);
        else if (a < 42) do_callbacks(w);
        else if (a < 56) do_pool(w);
        else if (a < 61) do_ready(w);
        else if (a < 75) do_waiter(w);
        else if (a < 82) do_flow(w);
        else if (a < 92) do_graph(w);
        else if (a < 96) { if (cfg.update) do_update(w); else do_graph(w); }
        else do_misc(w);
        if (w->out_count) poll_waiters(w, 0);
        w->iters++;
    }
    poll_waiters(w, 1);
    if (w->chain) {
        verify_region(w);   /* the final state of the region */
        E_CALL(&w->e, gf_event_pool_release(epool, w->chain));
        w->chain = NULL;
    }
    return NULL;
}

/* ---- a watchdog: a hang is a failed run with a summary line, not a silent timeout --------- */
static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static double wd_deadline;      /* ms; 0: none */
static const char *wd_phase = "";
static int wd_quit;

static void wd_arm(const char *phase, double seconds)
{
    pthread_mutex_lock(&wd_lock);
    wd_phase = phase;
    wd_deadline = seconds > 0 ? th_now_ms() + seconds * 1e3 : 0;
    pthread_mutex_unlock(&wd_lock);
}
static void *watchdog_main(void *p)
{
    (void)p;
    for (;;) {
        int quit, fired;
        const char *phase;
        th_sleep_ms(200);
        pthread_mutex_lock(&wd_lock);
        quit = wd_quit;
        fired = wd_deadline > 0 && th_now_ms() > wd_deadline;
        phase = wd_phase;
        pthread_mutex_unlock(&wd_lock);
        if (quit) return NULL;
        if (fired) {
            pthread_mutex_lock(&th_count_lock);
            printf("FAIL stress.c: the %s did not finish in time (a hang?)\n", phase);
            printf("%d passed, %d failed\n", th_passed, th_failed + 1);
            fflush(stdout);
            _exit(1);
        }
    }
}

/* ---- /proc readers ---------------------------------------------------------------------------- */
static long proc_status(const char *key)   /* "VmRSS" (kB), "Threads"; -1 if absent */
{
    char line[256];
    size_t n = strlen(key);
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':') { v = strtol(line + n + 1, NULL, 10); break; }
    fclose(f);
    return v;
}
static long count_fds(void)   /* includes the directory's own descriptor: a constant offset */
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    long n = 0;
    if (!d) return -1;
    while ((de = readdir(d)) != NULL) if (de->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* ---- stress ---------------------------------------------------------------------------------- */
static gf_result capture_graph(gf_stream *s, gf_buffer *b, uint64_t *hits, unsigned char fill, gf_graph **out)
{
    gf_result r;
    uint32_t n = KN, one = 1;
    gf_arg args[3];
    args[0].value = 0; args[0].size = 0; args[0].buffer = b;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &one; args[2].size = sizeof one; args[2].buffer = 0;
    if ((r = gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL)) != GF_OK) return r;
    r = k_add ? gf_launch(s, k_add, dims_1d(KN), args, 3) : gf_fill_async(s, b, 0, fill, KN * sizeof(uint32_t));
    if (r == GF_OK) r = gf_stream_add_callback(s, cb_graph, hits);
    if (r != GF_OK) { gf_graph *g = NULL; gf_stream_end_capture(s, &g); if (g) gf_graph_destroy(g); return r; }
    return gf_stream_end_capture(s, out);
}

static gf_buffer *zeroed_buffer(size_t bytes)
{
    static const unsigned char zeros[4096] = { 0 };
    gf_buffer *b = NULL;
    if (!CHECK_EQ_RESULT(gf_buffer_create(dev, bytes, &b), GF_OK)) return NULL;
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, zeros, bytes), GF_OK);
    return b;
}

/* A graph's or thread's uint32 buffer: each element is its launch count (add_u32), or without
   kernels every byte is the graph's fill value once it ran at all. */
static int buffer_holds(gf_buffer *b, uint64_t launches, unsigned char fill)
{
    uint32_t h[KN];
    const unsigned char *c = (const unsigned char *)h;
    size_t i;
    /* what the copy did not write fails the checks below */
    if (k_add) for (i = 0; i < KN; i++) h[i] = ~(uint32_t)launches;
    else memset(h, (unsigned char)~fill, sizeof h);
    if (gf_copy_to_host(h, b, 0, sizeof h) != GF_OK) return 0;
    for (i = 0; k_add && i < KN; i++) if (h[i] != (uint32_t)launches) return 0;
    for (i = 0; !k_add && launches && i < sizeof h; i++) if (c[i] != fill) return 0;
    return 1;
}

static void run_stress(void)
{
    gf_module *mod = NULL;
    gf_stream_pool_desc pd;
    gf_event_pool_desc ed;
    gf_stream_pool_stats ps = { 0 };
    gf_event_pool_stats es = { 0 };
    gf_task t[4];
    gf_result r;
    pthread_t tid[MAX_THREADS];
    int started = 0, i, j, g;
    uint64_t before, acq, completions, tokens = 0, token_bad = 0, fired = 0, cancelled = 0, bad_status = 0;
    double t0, elapsed;
    char what[256];

    printf("== stress: %d threads, %.1f s, %s, graph update race %s, seed %u\n", cfg.threads, cfg.seconds,
           gf_backend_name(cfg.backend), cfg.update ? "ON" : "off (STRESS_GRAPH_UPDATE=1 or 'update' turns it on)", cfg.seed);

    /* kernels, when the backend has a form of them */
    r = gf_module_load(dev, &tk_module, &mod);
    if (r == GF_OK) {
        CHECK_EQ_RESULT(gf_kernel_get(mod, "add_u32", &k_add), GF_OK);
        CHECK_EQ_RESULT(gf_kernel_get(mod, "empty", &k_empty), GF_OK);
    } else {
        CHECK(r == GF_ERROR_NOT_SUPPORTED, "stress: no kernel form for this backend (else the module loads)");
        mod = NULL;
    }

    for (i = 0; i < NS; i++) {
        gf_stream_desc sd;
        char label[32];
        snprintf(label, sizeof label, "shared/%d", i);
        sd.label = label;
        sd.priority = (gf_priority)(i % 3);
        CHECK_EQ_RESULT(gf_stream_create(dev, &sd, &shared[i]), GF_OK);
    }
    CHECK_EQ_RESULT(gf_buffer_create(dev, (size_t)cfg.threads * R, &bufA), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, (size_t)cfg.threads * R, &bufB), GF_OK);
    for (g = 0; g < NG; g++) gbuf[g] = zeroed_buffer(KN * sizeof(uint32_t));
    memset(&pd, 0, sizeof pd);
    pd.count = POOL_STREAMS;
    pd.strategy = GF_POOL_WORKLOAD;
    pd.label = "stress";
    pd.measure_completion = 1;   /* every release also puts a waiter on the device's waiter thread */
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &pool), GF_OK);
    ed.capacity = EPOOL_PLAIN;
    ed.timing_capacity = EPOOL_TIMING;
    CHECK_EQ_RESULT(gf_event_pool_create(dev, &ed, &epool), GF_OK);
    if (!shared[NS - 1] || !bufA || !bufB || !gbuf[NG - 1] || !pool || !epool) return;

    for (g = 0; g < NG; g++)
        CHECK_EQ_RESULT(capture_graph(shared[g % NS], gbuf[g], &graph_hits[g], (unsigned char)(0x40 + g), &graphs[g]), GF_OK);
    if (cfg.update) {
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &ustream), GF_OK);
        ubuf = zeroed_buffer(KN * sizeof(uint32_t));
        if (ustream && ubuf) {
            CHECK_EQ_RESULT(capture_graph(ustream, ubuf, &u_hits[0], 0x77, &ugraph), GF_OK);
            CHECK_EQ_RESULT(capture_graph(ustream, ubuf, &u_hits[1], 0x77, &ufrom[0]), GF_OK);
            CHECK_EQ_RESULT(capture_graph(ustream, ubuf, &u_hits[2], 0x77, &ufrom[1]), GF_OK);
        }
        if (!ugraph || !ufrom[0] || !ufrom[1]) cfg.update = 0;
    }

    /* the diamond a -> {b, c} -> d; one run alone first, to learn how many lanes it leases */
    CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK);
    if (!flow) return;
    for (i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        CHECK_EQ_RESULT(gf_flow_add(flow, name, task_fn, (void *)&task_ids[i], &t[i]), GF_OK);
    }
    CHECK_EQ_RESULT(gf_flow_depend(flow, t[0], t[1]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, t[0], t[2]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, t[1], t[3]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, t[2], t[3]), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_get_stats(pool, &ps), GF_OK);
    for (before = 0, i = 0; i < ps.count; i++) before += ps.acquisitions[i];
    CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
    flow_runs = 1;
    CHECK_EQ_RESULT(gf_stream_pool_get_stats(pool, &ps), GF_OK);
    for (acq = 0, i = 0; i < ps.count; i++) acq += ps.acquisitions[i];
    flow_lanes = (int)(acq - before);
    pool_acquired = acq;
    CHECK(flow_lanes >= 1 && flow_lanes <= 4, "stress: a run of the diamond flow leases 1..4 pool streams");

    for (i = 0; i < cfg.threads; i++) {
        worker *w = &W[i];
        w->index = i;
        w->rng = (cfg.seed + 1u) * 0x9E3779B9u ^ (uint32_t)(i + 1) * 0x85EBCA6Bu;
        if (!w->rng) w->rng = 1;
        for (j = 0; j < R / 4; j++) w->pattern[j] = (unsigned char)(i * 7 + j * 13 + 3);
        w->kbuf = zeroed_buffer(KN * sizeof(uint32_t));
        if (!w->kbuf) return;
    }

    /* run */
    wd_arm("stress phase", cfg.seconds + 120);
    t0 = th_now_ms();
    for (i = 0; i < cfg.threads; i++)
        if (pthread_create(&tid[i], NULL, worker_main, &W[i]) == 0) started++;
    CHECK(started == cfg.threads, "stress: every thread started");
    while (th_now_ms() - t0 < cfg.seconds * 1e3) th_sleep_ms(50);
    A_STORE(&g_stop, 1);
    for (i = 0; i < started; i++) pthread_join(tid[i], NULL);
    elapsed = (th_now_ms() - t0) / 1e3;
    CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);

    /* ---- exact totals ---- */
    for (i = 0; i < cfg.threads; i++) {
        snprintf(what, sizeof what, "stress thread %d: every call succeeded and every check held (%d failures; first: %.160s)",
                 i, W[i].e.count, W[i].e.count ? W[i].e.first : "-");
        CHECK(W[i].e.count == 0, what);
    }
    /* per token: a callback or waiter ran exactly once, or was cancelled and never ran */
    for (i = 0; i < cfg.threads; i++) {
        token_chunk *c;
        for (c = W[i].tokens; c; c = c->next)
            for (j = 0; j < c->used; j++) {
                token *k = &c->t[j];
                int hits = A_LOAD(&k->hits);
                tokens++;
                if (hits != k->want) token_bad++;
                if (A_LOAD(&k->bad)) bad_status++;
                if (k->ev) { if (k->want) fired++; else cancelled++; }
            }
    }
    snprintf(what, sizeof what, "stress: each of %llu callbacks and waiters ran exactly once, or never after a successful cancel (%llu wrong)",
             (unsigned long long)tokens, (unsigned long long)token_bad);
    CHECK(token_bad == 0, what);
    CHECK(bad_status == 0, "stress: every callback and waiter saw GF_OK, and self-releasing waiters' releases succeeded");
    snprintf(what, sizeof what, "stress: stream callbacks ran == enqueued (%llu == %llu)",
             (unsigned long long)A_LOAD(&cb_ran), (unsigned long long)A_LOAD(&cb_enqueued));
    CHECK(A_LOAD(&cb_ran) == A_LOAD(&cb_enqueued), what);
    CHECK(fired + cancelled == waiters_made, "stress: waiters fired + cancelled == waiters made");

    /* buffers: each thread's region holds its last sequence, its kernel buffer its launches */
    for (i = 0; i < cfg.threads; i++) {
        unsigned char h[R];
        int ok = 1;
        if (!W[i].region_known) continue;
        CHECK_EQ_RESULT(gf_copy_to_host(h, bufB, (size_t)i * R, R), GF_OK);
        for (j = 0; j < R; j++) if (h[j] != (j < R / 4 ? W[i].pattern[j] : W[i].last_v)) ok = 0;
        snprintf(what, sizeof what, "stress: thread %d's region of the shared buffer holds its last sequence", i);
        CHECK(ok, what);
        if (k_add) {
            snprintf(what, sizeof what, "stress: thread %d's kernel buffer holds its %llu add_u32 launches", i, (unsigned long long)W[i].klaunches);
            CHECK(buffer_holds(W[i].kbuf, W[i].klaunches, 0), what);
        }
    }
    for (g = 0; g < NG; g++) {
        snprintf(what, sizeof what, "stress: graph %d launched %llu times: its callback ran as often (%llu) and its buffer holds the count",
                 g, (unsigned long long)graph_launches[g], (unsigned long long)A_LOAD(&graph_hits[g]));
        CHECK(A_LOAD(&graph_hits[g]) == graph_launches[g] && buffer_holds(gbuf[g], graph_launches[g], (unsigned char)(0x40 + g)), what);
    }
    CHECK(graph_bad_status == 0, "stress: graph callbacks saw GF_OK");
    if (cfg.update) {
        uint64_t sum = A_LOAD(&u_hits[0]) + A_LOAD(&u_hits[1]) + A_LOAD(&u_hits[2]);
        snprintf(what, sizeof what, "stress: graph updated %llu times while launched %llu times: callbacks (%llu) and buffer match the launches",
                 (unsigned long long)u_updates, (unsigned long long)u_launches, (unsigned long long)sum);
        CHECK(sum == u_launches && buffer_holds(ubuf, u_launches, 0x77), what);
    }

    /* flows */
    snprintf(what, sizeof what, "stress: each of the flow's 4 tasks ran once per run (%llu runs: %llu %llu %llu %llu)",
             (unsigned long long)flow_runs, (unsigned long long)flow_hits[0], (unsigned long long)flow_hits[1],
             (unsigned long long)flow_hits[2], (unsigned long long)flow_hits[3]);
    CHECK(flow_hits[0] == flow_runs && flow_hits[1] == flow_runs && flow_hits[2] == flow_runs && flow_hits[3] == flow_runs, what);
    CHECK(flow_order_bad == 0 && flow_bad_status == 0, "stress: flow tasks ran after their predecessors, with GF_OK");

    /* stream statistics: exactly what was submitted */
    for (i = 0; i < NS + 1; i++) {
        gf_stream *s = i < NS ? shared[i] : ustream;
        sstats *e = i < NS ? &expect_shared[i] : &expect_u;
        gf_stream_stats st = { 0 };
        if (!s) continue;
        CHECK_EQ_RESULT(gf_stream_get_stats(s, &st), GF_OK);
        snprintf(what, sizeof what, "stress: stats of '%s': ops %llu/%llu copies %llu/%llu bytes %llu/%llu launches %llu/%llu callbacks %llu/%llu pending %llu (got/submitted)",
                 gf_stream_label(s), (unsigned long long)st.ops, (unsigned long long)e->ops, (unsigned long long)st.copies,
                 (unsigned long long)e->copies, (unsigned long long)st.bytes_copied, (unsigned long long)e->bytes,
                 (unsigned long long)st.launches, (unsigned long long)e->launches, (unsigned long long)st.callbacks,
                 (unsigned long long)e->callbacks, (unsigned long long)st.pending);
        CHECK(st.ops == e->ops && st.copies == e->copies && st.bytes_copied == e->bytes && st.launches == e->launches &&
              st.callbacks == e->callbacks && st.pending == 0, what);
    }

    /* the pool: acquisitions, completions (one per release), then every lease was given back:
       acquire_ready finds each stream idle and unheld */
    CHECK_EQ_RESULT(gf_stream_pool_get_stats(pool, &ps), GF_OK);
    for (acq = 0, i = 0; i < ps.count; i++) acq += ps.acquisitions[i];
    snprintf(what, sizeof what, "stress: pool acquisitions %llu == counted %llu", (unsigned long long)acq, (unsigned long long)pool_acquired);
    CHECK(acq == pool_acquired, what);
    {
        double end = th_now_ms() + TH_WAIT_MS;
        do {
            gf_stream_pool_get_stats(pool, &ps);
            for (completions = 0, i = 0; i < GF_WORKLOAD_COUNT; i++) completions += ps.completions[i];
            if (completions >= pool_acquired) break;
            th_sleep_ms(5);
        } while (th_now_ms() < end);
        snprintf(what, sizeof what, "stress: pool completions %llu == releases %llu (measure_completion)",
                 (unsigned long long)completions, (unsigned long long)pool_acquired);
        CHECK(completions == pool_acquired, what);
    }
    {
        gf_stream *got[POOL_STREAMS];
        sstats sum;
        int n = 0, distinct = 1;
        memset(&sum, 0, sizeof sum);
        for (i = 0; i < POOL_STREAMS; i++) {
            if (gf_stream_pool_acquire_ready(pool, 2000, &got[n]) != GF_OK) break;
            for (j = 0; j < n; j++) if (got[j] == got[n]) distinct = 0;
            n++;
        }
        CHECK(n == POOL_STREAMS && distinct, "stress: afterwards acquire_ready leases every pool stream once (no lease leaked)");
        for (i = 0; i < n; i++) {
            gf_stream_stats st = { 0 };
            if (gf_stream_get_stats(got[i], &st) == GF_OK) {
                sum.ops += st.ops; sum.launches += st.launches; sum.callbacks += st.callbacks; sum.copies += st.copies;
            }
            CHECK_EQ_RESULT(gf_stream_pool_release(pool, got[i]), GF_OK);
        }
        if (n == POOL_STREAMS) {
            snprintf(what, sizeof what, "stress: pool streams' stats sum: ops %llu/%llu launches %llu/%llu callbacks %llu/%llu (got/submitted)",
                     (unsigned long long)sum.ops, (unsigned long long)expect_pool.ops, (unsigned long long)sum.launches,
                     (unsigned long long)expect_pool.launches, (unsigned long long)sum.callbacks, (unsigned long long)expect_pool.callbacks);
            CHECK(sum.ops == expect_pool.ops && sum.launches == expect_pool.launches && sum.callbacks == expect_pool.callbacks && sum.copies == 0, what);
        }
    }

    /* the event pool: every event back, and it grew no further than the threads held at once */
    CHECK_EQ_RESULT(gf_event_pool_get_stats(epool, &es), GF_OK);
    snprintf(what, sizeof what, "stress: event pool balanced: in use %d, available %d of %d created (bound %d)",
             es.in_use, es.available, es.created, EPOOL_PLAIN + EPOOL_TIMING + cfg.threads * (3 + MAX_OUT));
    CHECK(es.in_use == 0 && es.available == es.created && es.created <= EPOOL_PLAIN + EPOOL_TIMING + cfg.threads * (3 + MAX_OUT), what);

    /* figures */
    {
        uint64_t it = 0, seq = 0, cb = 0, pl = 0, rok = 0, rto = 0, wt = 0, cok = 0, clate = 0, lf = 0, gr = 0,
                 up = 0, ul = 0, misc = 0, ver = 0, ops = expect_pool.ops + expect_u.ops;
        for (i = 0; i < NS; i++) ops += expect_shared[i].ops;
        for (i = 0; i < cfg.threads; i++) {
            worker *w = &W[i];
            it += w->iters; seq += w->n_seq; cb += w->n_cb; pl += w->n_pool; rok += w->n_ready_ok; rto += w->n_ready_timeout;
            wt += w->n_waiters; cok += w->n_cancel_ok; clate += w->n_cancel_late; lf += w->n_let_fire;
            gr += w->n_graph; up += w->n_update; ul += w->n_ulaunch; misc += w->n_misc; ver += w->verified;
        }
        printf("stress figures: %.1f thread-seconds (%d threads x %.1f s); %llu actions; %llu stream ops (%.0f/s)\n",
               elapsed * cfg.threads, cfg.threads, elapsed, (unsigned long long)it, (unsigned long long)ops, (double)ops / elapsed);
        printf("  sequences %llu (verified %llu), stream callbacks %llu, pool leases %llu, acquire_ready %llu ok / %llu timed out\n",
               (unsigned long long)seq, (unsigned long long)ver, (unsigned long long)cb, (unsigned long long)pl,
               (unsigned long long)rok, (unsigned long long)rto);
        printf("  waiters %llu: cancelled %llu, cancel too late (fired) %llu, let fire %llu\n", (unsigned long long)wt,
               (unsigned long long)cok, (unsigned long long)clate, (unsigned long long)lf);
        printf("  flow runs %llu (%d lanes each), graph launches %llu, graph updates %llu / launches of the updated graph %llu, misc %llu\n",
               (unsigned long long)flow_runs, flow_lanes, (unsigned long long)gr, (unsigned long long)up, (unsigned long long)ul,
               (unsigned long long)misc);
        printf("  pool acquisitions %llu, tokens checked %llu, event pool created %d\n", (unsigned long long)pool_acquired,
               (unsigned long long)tokens, es.created);
    }

    /* teardown */
    for (i = 0; i < cfg.threads; i++) {
        token_chunk *c = W[i].tokens, *next;
        for (; c; c = next) { next = c->next; free(c); }
        W[i].tokens = NULL;
        gf_buffer_destroy(W[i].kbuf);
    }
    for (g = 0; g < NG; g++) { gf_graph_destroy(graphs[g]); gf_buffer_destroy(gbuf[g]); }
    if (ugraph) { gf_graph_destroy(ugraph); gf_graph_destroy(ufrom[0]); gf_graph_destroy(ufrom[1]); }
    if (ubuf) gf_buffer_destroy(ubuf);
    if (ustream) gf_stream_destroy(ustream);
    gf_flow_destroy(flow);
    gf_stream_pool_destroy(pool);
    gf_event_pool_destroy(epool);
    gf_buffer_destroy(bufA);
    gf_buffer_destroy(bufB);
    for (i = 0; i < NS; i++) gf_stream_destroy(shared[i]);
    if (mod) gf_module_destroy(mod);
    k_add = k_empty = NULL;
}

/* ---- soak --------------------------------------------------------------------------------- */
static uint64_t soak_cb_enq, soak_cb_ran, soak_waits, soak_fired, soak_cancelled;

static void soak_cb(void *user, gf_result status) { (void)user; (void)status; A_ADD(&soak_cb_ran, 1); }
static void soak_waiter(void *user, gf_result status) { (void)user; (void)status; A_ADD(&soak_fired, 1); }
/* Counted by the caller per run or replay: inside a capture nothing runs yet. */
static gf_result soak_task(gf_stream *s, void *user) { return gf_stream_add_callback(s, soak_cb, user); }
static void soak_noop(const gf_kernel_ctx *ctx, void *const *args) { (void)ctx; (void)args; }
/* Filled at run time: gf_stub_kernel gains fields (param_count), named fields keep up. */
static gf_stub_kernel soak_kernels[1];
static gf_module_desc soak_module;
static void soak_module_init(void)
{
    memset(soak_kernels, 0, sizeof soak_kernels);
    soak_kernels[0].name = "soak_noop";
    soak_kernels[0].fn = soak_noop;
    memset(&soak_module, 0, sizeof soak_module);   /* no device forms: a stub kernel only */
    soak_module.stub_kernels = soak_kernels;
    soak_module.stub_kernel_count = 1;
}

typedef struct sample { long round; double t; long rss_kb, fds, threads; uint64_t used; } sample;

static gf_device *sdev;
static gf_stream *ps;                      /* persistent: captures, async buffers, records */
static gf_stream_pool *pp;                 /* persistent: most rounds' flows */
static gf_buffer *sb;                      /* persistent: what the round's graph fills */

static sample take_sample(long round, double t0)
{
    sample s;
    size_t free_b = 0, total_b = 0;
    int i;
    s.round = round;
    s.t = (th_now_ms() - t0) / 1e3;
    s.rss_kb = proc_status("VmRSS");
    s.fds = count_fds();
    /* a thread that pthread_join already returned for can stay counted until the kernel
       reaps it: the fewest of a few spaced reads */
    s.threads = proc_status("Threads");
    for (i = 0; i < 10; i++) {
        long n;
        th_sleep_ms(2);
        if ((n = proc_status("Threads")) < s.threads) s.threads = n;
    }
    gf_device_memory_info(sdev, &free_b, &total_b);
    s.used = (uint64_t)(total_b - free_b);
    printf("soak: round %6ld  %6.1f s  RSS %7ld kB  fds %3ld  threads %3ld  device memory in use %10llu B\n",
           s.round, s.t, s.rss_kb, s.fds, s.threads, (unsigned long long)s.used);
    fflush(stdout);
    return s;
}

/* The round's waiters have all settled (fired or cancelled), bounded. */
static void soak_settle_waiters(errs *e)
{
    double end = th_now_ms() + TH_WAIT_MS;
    while (A_LOAD(&soak_fired) + A_LOAD(&soak_cancelled) < A_LOAD(&soak_waits)) {
        if (th_now_ms() > end) { E_FAIL(e, "a soak waiter did not fire within 20 s"); return; }
        th_sleep_ms(0);
    }
}

/* The size of round r's growing stream-ordered buffer: 1.5 bytes more each round, so every
   round needs a new block (a cached one is too small) and the freed blocks add up to 64 MiB,
   the cache's release threshold, by round ~6800; past it the cache must give blocks back. */
static size_t grow_size(long r) { return 4096u + (size_t)r * 3u / 2u; }

static void soak_round(long r, errs *e, int heavy, int module_now)
{
    gf_buffer *b = NULL;
    gf_event *ev = NULL, *pe = NULL;
    gf_event_pool *ep = NULL;
    gf_event_pool_desc ed;
    gf_flow *fl = NULL;
    gf_graph *g = NULL;
    gf_module *m = NULL;
    gf_kernel *k = NULL;
    gf_task t[3];
    uint64_t id = 0;
    gf_result res;
    size_t bytes;
    int i;

    /* a buffer */
    bytes = 64 + (size_t)(r % 1024) * 16;
    if (E_CALL(e, gf_buffer_create(sdev, bytes, &b))) {
        E_CALL(e, gf_fill_async(ps, b, 0, (unsigned char)r, bytes));
        gf_buffer_destroy(b);
    }
    /* an event with a waiter, cancelled one round in three */
    if (E_CALL(e, gf_event_create(sdev, (r & 1) ? GF_EVENT_TIMING : 0, &ev))) {
        E_CALL(e, gf_event_record(ev, ps));
        if (r % 3 != 0) E_CALL(e, gf_event_synchronize(ev));   /* fires at once: no waiter-thread backoff to sit out */
        if (E_CALL(e, gf_event_on_complete(ev, soak_waiter, NULL, &id))) {
            A_ADD(&soak_waits, 1);
            if (r % 3 == 0) {
                res = gf_event_cancel_wait(sdev, id);
                if (res == GF_OK) A_ADD(&soak_cancelled, 1);
                else if (res != GF_ERROR_NOT_FOUND) E_CALL(e, res);
            }
        }
        soak_settle_waiters(e);
        gf_event_destroy(ev);
    }
    /* an event pool */
    ed.capacity = 2;
    ed.timing_capacity = 1;
    if (E_CALL(e, gf_event_pool_create(sdev, &ed, &ep))) {
        if (E_CALL(e, gf_event_pool_acquire(ep, (r & 1) ? GF_EVENT_TIMING : 0, &pe))) {
            E_CALL(e, gf_event_record(pe, ps));
            E_CALL(e, gf_event_synchronize(pe));
            E_CALL(e, gf_event_pool_release(ep, pe));
        }
        gf_event_pool_destroy(ep);
    }
    /* a flow over the persistent pool */
    if (E_CALL(e, gf_flow_create(sdev, NULL, &fl))) {
        for (i = 0; i < 3; i++) E_CALL(e, gf_flow_add(fl, NULL, soak_task, NULL, &t[i]));
        E_CALL(e, gf_flow_depend(fl, t[0], t[1]));
        E_CALL(e, gf_flow_depend(fl, t[0], t[2]));
        if (E_CALL(e, gf_flow_run(fl, pp))) A_ADD(&soak_cb_enq, 3);
        if (heavy) {   /* capture it too: the flow makes (and owns) a fork stream */
            g = NULL;
            if (E_CALL(e, gf_flow_capture(fl, ps, &g))) {
                if (E_CALL(e, gf_graph_launch(g, ps))) A_ADD(&soak_cb_enq, 3);
                gf_graph_destroy(g);
            }
        }
        gf_flow_destroy(fl);
    }
    /* a graph */
    if (E_CALL(e, gf_stream_begin_capture(ps, GF_CAPTURE_GLOBAL))) {
        E_CALL(e, gf_fill_async(ps, sb, 0, (unsigned char)r, 256));
        E_CALL(e, gf_stream_add_callback(ps, soak_cb, NULL));
        g = NULL;
        if (E_CALL(e, gf_stream_end_capture(ps, &g))) {
            for (i = 0; i < 2; i++) if (E_CALL(e, gf_graph_launch(g, ps))) A_ADD(&soak_cb_enq, 1);
            gf_graph_destroy(g);
        }
    }
    /* a module */
    if (module_now) {
        const gf_module_desc *md = cfg.backend == GF_BACKEND_STUB ? &soak_module : &tk_module;
        if (E_CALL(e, gf_module_load(sdev, md, &m))) {
            if (E_CALL(e, gf_kernel_get(m, cfg.backend == GF_BACKEND_STUB ? "soak_noop" : "empty", &k)))
                E_CALL(e, gf_launch(ps, k, dims_1d(1), NULL, 0));
            gf_module_destroy(m);
        }
    }
    /* stream-ordered buffers: one of a fixed size, one growing */
    for (i = 0; i < 2; i++) {
        bytes = i == 0 ? 4096 : grow_size(r);
        b = NULL;
        if (E_CALL(e, gf_buffer_create_async(ps, bytes, &b))) {
            E_CALL(e, gf_fill_async(ps, b, 0, (unsigned char)(r + i), bytes));   /* touches it: RSS */
            E_CALL(e, gf_buffer_destroy_async(ps, b));
        }
    }
    if (!heavy) return;

    /* a stream, with a stream-ordered buffer (reuse across streams) */
    {
        gf_stream *s = NULL;
        if (E_CALL(e, gf_stream_create(sdev, NULL, &s))) {
            b = NULL;
            if (E_CALL(e, gf_buffer_create_async(s, 4096, &b))) {
                E_CALL(e, gf_fill_async(s, b, 0, 1, 4096));
                E_CALL(e, gf_buffer_destroy_async(s, b));
            }
            if (E_CALL(e, gf_stream_add_callback(s, soak_cb, NULL))) A_ADD(&soak_cb_enq, 1);
            gf_stream_destroy(s);
        }
    }
    /* a stream pool */
    {
        gf_stream_pool *p = NULL;
        gf_stream_pool_desc pd;
        gf_acquire_hint h;
        gf_stream *s = NULL;
        memset(&pd, 0, sizeof pd);
        pd.count = 2;
        pd.strategy = (gf_pool_strategy)(r % 4);
        pd.measure_completion = (int)(r & 1);
        if (E_CALL(e, gf_stream_pool_create(sdev, &pd, &p))) {
            h.priority = (gf_priority)(r % 3);
            h.workload = (gf_workload)(r % GF_WORKLOAD_COUNT);
            if (E_CALL(e, gf_stream_pool_acquire(p, &h, &s))) {
                if (E_CALL(e, gf_stream_add_callback(s, soak_cb, NULL))) A_ADD(&soak_cb_enq, 1);
                E_CALL(e, gf_stream_pool_release(p, s));
            }
            E_CALL(e, gf_stream_pool_synchronize(p));
            if (E_CALL(e, gf_stream_pool_acquire_ready(p, 1000, &s))) E_CALL(e, gf_stream_pool_release(p, s));
            gf_stream_pool_destroy(p);
        }
    }
    /* a stream set */
    {
        gf_stream_set *set = NULL;
        gf_stream *s = NULL;
        if (E_CALL(e, gf_stream_set_create(sdev, 2, "soak", &set))) {
            for (i = 0; i < 3; i++)
                if (E_CALL(e, gf_stream_set_next(set, (size_t)i, &s)) && E_CALL(e, gf_stream_add_callback(s, soak_cb, NULL)))
                    A_ADD(&soak_cb_enq, 1);
            E_CALL(e, gf_stream_set_synchronize(set));
            gf_stream_set_destroy(set);
        }
    }
}

static void run_soak(void)
{
    errs e;
    sample first, last, s0;
    int have_first = 0, heavy_every, module_every;
    long r, done = 0;
    double t0, deadline;
    char what[512];
    gf_result res;

    memset(&e, 0, sizeof e);
    memset(&first, 0, sizeof first);
    heavy_every = (int)env_num("STRESS_SOAK_HEAVY", 4);   /* rounds between the thread-making objects (streams, pools, sets, forks) */
    if (heavy_every < 1) heavy_every = 1;
    module_every = cfg.backend == GF_BACKEND_STUB ? 1 : 500;   /* a device compile is slow */
    printf("== soak: up to %ld rounds or %.1f s, a sample every %ld rounds, %s\n", cfg.rounds, cfg.soak_seconds, cfg.every,
           gf_backend_name(cfg.backend));
    soak_module_init();
    res = gf_device_open(cfg.backend, 0, &sdev);
    if (!CHECK_EQ_RESULT(res, GF_OK)) return;
    CHECK_EQ_RESULT(gf_stream_create(sdev, NULL, &ps), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(sdev, 256, &sb), GF_OK);
    {
        gf_stream_pool_desc pd;
        memset(&pd, 0, sizeof pd);
        pd.count = 2;
        CHECK_EQ_RESULT(gf_stream_pool_create(sdev, &pd, &pp), GF_OK);
    }
    if (!ps || !sb || !pp) return;

    wd_arm("soak phase", cfg.soak_seconds + 180);
    t0 = th_now_ms();
    deadline = t0 + cfg.soak_seconds * 1e3;
    /* The stream-ordered cache keeps freed blocks up to its release threshold (64 MiB today):
       fill it past that with blocks too large for any round to reuse, so that every sample
       sees the cache at its steady state and growth means a leak, not a warming cache. */
    {
        gf_buffer *big[PREFILL_BLOCKS];
        int i, n = 0;
        for (i = 0; i < PREFILL_BLOCKS; i++) {
            if (!E_CALL(&e, gf_buffer_create_async(ps, (size_t)1 << 20, &big[n]))) break;
            E_CALL(&e, gf_fill_async(ps, big[n], 0, 0xcc, (size_t)1 << 20));
            n++;
        }
        for (i = 0; i < n; i++) E_CALL(&e, gf_buffer_destroy_async(ps, big[i]));
        E_CALL(&e, gf_stream_synchronize(ps));
    }
    soak_round(0, &e, 1, 1);   /* every kind of object once, so lazy state (the waiter thread) exists */
    CHECK_EQ_RESULT(gf_device_synchronize(sdev), GF_OK);
    s0 = take_sample(0, t0);
    (void)s0;
    last = s0;
    for (r = 1; r <= cfg.rounds && th_now_ms() < deadline; r++) {
        soak_round(r, &e, r % heavy_every == 0, r % module_every == 0);
        done = r;
        if (r % cfg.every == 0) {
            E_CALL(&e, gf_device_synchronize(sdev));
            soak_settle_waiters(&e);
            last = take_sample(r, t0);
            if (!have_first) { first = last; have_first = 1; }
        }
    }
    if (done % cfg.every != 0) {   /* stopped by the time cap between samples */
        E_CALL(&e, gf_device_synchronize(sdev));
        soak_settle_waiters(&e);
        last = take_sample(done, t0);
    }
    printf("soak figures: %ld rounds in %.1f s (%.0f rounds/s); growing stream-ordered buffer reached %llu B\n",
           done, last.t, last.t > 0 ? (double)done / last.t : 0.0, (unsigned long long)grow_size(done));

    snprintf(what, sizeof what, "soak: every call succeeded (%d failures; first: %s)", e.count, e.count ? e.first : "-");
    CHECK(e.count == 0, what);
    snprintf(what, sizeof what, "soak: callbacks ran == enqueued (%llu == %llu)", (unsigned long long)A_LOAD(&soak_cb_ran),
             (unsigned long long)A_LOAD(&soak_cb_enq));
    CHECK(A_LOAD(&soak_cb_ran) == A_LOAD(&soak_cb_enq), what);
    snprintf(what, sizeof what, "soak: waiters fired + cancelled == made (%llu + %llu == %llu)", (unsigned long long)A_LOAD(&soak_fired),
             (unsigned long long)A_LOAD(&soak_cancelled), (unsigned long long)A_LOAD(&soak_waits));
    CHECK(A_LOAD(&soak_fired) + A_LOAD(&soak_cancelled) == A_LOAD(&soak_waits), what);

    if (!have_first || last.round == first.round) {
        printf("notice: soak ran %ld rounds, fewer than two samples of %ld: growth not judged\n", done, cfg.every);
        SKIP("soak too short to compare two samples (raise STRESS_SOAK_SECONDS or lower STRESS_SOAK_EVERY)");
    } else {
        long drss = last.rss_kb - first.rss_kb;
        long long dused = (long long)last.used - (long long)first.used;
        snprintf(what, sizeof what, "soak: RSS growth from round %ld to %ld is %ld kB (bound 8192 kB)", first.round, last.round, drss);
        if (STRESS_ASAN) {   /* its quarantine keeps freed memory resident: growth by design */
            printf("notice: %s; not judged under AddressSanitizer\n", what);
            SKIP("soak RSS growth under AddressSanitizer (the quarantine holds freed memory)");
        } else {
            CHECK(drss < 8192, what);
        }
        snprintf(what, sizeof what, "soak: open fds flat (%ld at round %ld, %ld at round %ld)", first.fds, first.round, last.fds, last.round);
        CHECK(last.fds == first.fds, what);
        snprintf(what, sizeof what, "soak: threads flat (%ld at round %ld, %ld at round %ld)", first.threads, first.round, last.threads, last.round);
        CHECK(last.threads == first.threads, what);
        snprintf(what, sizeof what, "soak: device memory in use with every buffer freed grew %lld B from round %ld to %ld (bound 1 MiB; "
                 "the stream-ordered cache holds freed blocks)", dused, first.round, last.round);
        CHECK(dused < (1 << 20), what);
    }

    gf_stream_pool_destroy(pp);
    gf_buffer_destroy(sb);
    gf_stream_destroy(ps);
    gf_device_close(sdev);
    printf("soak: after gf_device_close: RSS %ld kB, fds %ld, threads %ld\n", proc_status("VmRSS"), count_fds(), proc_status("Threads"));
}

/* ---- toggle: the race detector switched on and off under correct work ----------------------- */
enum { TG_MAX_THREADS = 16, TG_MAX_TOGGLERS = 8, TG_N = 256, TG_METHODS = 7 };
static const char *const tg_method_names[TG_METHODS] = {
    "event wait", "stream wait", "stream sync", "event sync", "event polled", "device sync", "barrier"
};
typedef struct tworker {
    int index;
    uint32_t rng;
    errs e;
    gf_stream *sa, *sb;
    gf_buffer *A, *B, *C;        /* A: written on sa, read on sb; B: sb's; C: the graph's counter (sa) */
    gf_event *e1, *e2;
    gf_graph *g;                 /* add_u32 (+1) on C */
    uint64_t g_launches, iters, verified, async_bufs, by_method[TG_METHODS];
    uint64_t cb_enq;             /* callbacks enqueued; cb_ran counts them run (atomic) */
    uint64_t cb_ran;
    uint32_t host[TG_N];
} tworker;
typedef struct ttoggler { int index; uint32_t rng; errs e; uint64_t toggles, reports; } ttoggler;

static gf_device *tdev;
static gf_kernel *tg_fill, *tg_add;          /* NULL when the backend has no test kernels */
static gf_buffer *tg_shared;                 /* read by every thread; written once, before */
static uint32_t tg_shared_host[TG_N / 2];
static int tg_stop, tg_fill32_ok;
static tworker TW[TG_MAX_THREADS];
static ttoggler TT[TG_MAX_TOGGLERS];
static pthread_mutex_t tg_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t tg_race_seen;                /* under tg_lock: the largest race count a toggler's report saw */
static char tg_race_text[512];

static uint32_t trnd(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    return *state = x;
}
static void tg_cb(void *user, gf_result status)
{
    tworker *w = (tworker *)user;
    (void)status;
    A_ADD(&w->cb_ran, 1);
}
static gf_result tg_u32(gf_stream *s, gf_kernel *k, gf_buffer *b, uint32_t n, uint32_t v)
{
    gf_arg args[3];
    args[0].value = 0; args[0].size = 0; args[0].buffer = b;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &v; args[2].size = sizeof v; args[2].buffer = 0;
    return gf_launch(s, k, dims_1d(n), args, 3);
}

/* One round: A = v (+1) on sa; sb waits for it, copies A to B, adds 2 to B's first half (the
   kernel) and puts the shared buffer in its second half, copies B out; the graph adds 1 to C
   on sa; then a join, after which the host checks B's copy. */
static void tg_round(tworker *w)
{
    uint32_t it = (uint32_t)w->iters, v = ((uint32_t)w->index << 24) + it * 7u + 1u, i;
    unsigned method = trnd(&w->rng) % TG_METHODS;
    int ok = 1, kernels = tg_fill && tg_add;
    size_t bytes = TG_N * sizeof(uint32_t), half = bytes / 2;
    gf_result r;

    if (kernels && (!tg_fill32_ok || (it & 1)))
        ok = E_CALL(&w->e, tg_u32(w->sa, tg_fill, w->A, TG_N, v));
    else
        ok = E_CALL(&w->e, gf_fill32_async(w->sa, w->A, 0, v, TG_N));
    if (ok && kernels) ok = E_CALL(&w->e, tg_u32(w->sa, tg_add, w->A, TG_N, 1));
    if (ok) {
        if (it % 3 == 0) ok = E_CALL(&w->e, gf_stream_wait_stream(w->sb, w->sa));
        else ok = E_CALL(&w->e, gf_event_record(w->e1, w->sa)) && E_CALL(&w->e, gf_stream_wait_event(w->sb, w->e1));
    }
    ok = ok && E_CALL(&w->e, gf_copy_buffer_async(w->sb, w->B, 0, w->A, 0, bytes));
    if (ok && kernels) ok = E_CALL(&w->e, tg_u32(w->sb, tg_add, w->B, TG_N / 2, 2));
    ok = ok && E_CALL(&w->e, gf_copy_buffer_async(w->sb, w->B, half, tg_shared, 0, half));
    if (ok && it % 8 == 5) {   /* a stream-ordered buffer: made, used and freed on sb */
        gf_buffer *t = NULL;
        if ((ok = E_CALL(&w->e, gf_buffer_create_async(w->sb, bytes, &t))) != 0) {
            ok = E_CALL(&w->e, gf_copy_buffer_async(w->sb, t, 0, w->B, 0, bytes));
            ok = E_CALL(&w->e, gf_buffer_destroy_async(w->sb, t)) && ok;
            w->async_bufs++;
        }
    }
    ok = ok && E_CALL(&w->e, gf_copy_to_host_async(w->sb, w->host, w->B, 0, bytes));
    if (ok && E_CALL(&w->e, gf_stream_add_callback(w->sb, tg_cb, w))) w->cb_enq++;
    ok = ok && E_CALL(&w->e, gf_event_record(w->e2, w->sb));
    if (w->g && E_CALL(&w->e, gf_graph_launch(w->g, w->sa))) w->g_launches++;
    if (!ok) { w->iters++; E_CALL(&w->e, gf_device_synchronize(tdev)); return; }

    switch (method) {
    case 0: ok = E_CALL(&w->e, gf_stream_wait_event(w->sa, w->e2)) && E_CALL(&w->e, gf_stream_synchronize(w->sa)); break;
    case 1: ok = E_CALL(&w->e, gf_stream_wait_stream(w->sa, w->sb)) && E_CALL(&w->e, gf_stream_synchronize(w->sa)); break;
    case 2: ok = E_CALL(&w->e, gf_stream_synchronize(w->sb)); break;
    case 3: ok = E_CALL(&w->e, gf_event_synchronize(w->e2)); break;
    case 4: {
        double end = th_now_ms() + TH_WAIT_MS;
        while ((r = gf_event_query(w->e2)) == GF_NOT_READY && th_now_ms() < end) th_sleep_ms(0);
        ok = E_CALL(&w->e, r);
        break;
    }
    case 5: ok = E_CALL(&w->e, gf_device_synchronize(tdev)); break;
    default: {
        gf_stream *both[2];
        both[0] = w->sa; both[1] = w->sb;
        ok = E_CALL(&w->e, gf_barrier(both, 2)) && E_CALL(&w->e, gf_stream_synchronize(w->sa));
        break;
    }
    }
    w->by_method[method]++;
    w->iters++;
    if (!ok) return;
    for (i = 0; i < TG_N; i++) {
        uint32_t want = i < TG_N / 2 ? v + (kernels ? 3u : 0u) : tg_shared_host[i - TG_N / 2];
        if (w->host[i] != want) {
            char what[200];
            snprintf(what, sizeof what, "toggle thread %d round %u (joined by %s): B[%u] = 0x%08x, expected 0x%08x", w->index, it,
                     tg_method_names[method], i, w->host[i], want);
            E_FAIL(&w->e, what);
            return;
        }
    }
    w->verified++;
}

static void *tg_worker_main(void *p)
{
    tworker *w = (tworker *)p;
    while (!A_LOAD(&tg_stop)) tg_round(w);
    E_CALL(&w->e, gf_stream_synchronize(w->sa));
    E_CALL(&w->e, gf_stream_synchronize(w->sb));
    return NULL;
}

static void *tg_toggler_main(void *p)
{
    ttoggler *t = (ttoggler *)p;
    while (!A_LOAD(&tg_stop)) {
        unsigned pause = trnd(&t->rng) % 8;
        unsigned flags = cfg.toggle_control || ((t->toggles + (uint64_t)t->index) & 1) == 0 ? GF_RACE_CHECK_ON : 0;
        if (E_CALL(&t->e, gf_race_check_enable(tdev, flags))) t->toggles++;
        if (pause < 3) th_sleep_ms(pause);   /* else at once: toggles back to back */
        if (t->toggles % 64 == 0) {   /* reports meanwhile: a correct program has none */
            gf_race_info info;
            if (E_CALL(&t->e, gf_race_report(tdev, &info))) {
                t->reports++;
                pthread_mutex_lock(&tg_lock);
                if (info.count > tg_race_seen) {
                    tg_race_seen = info.count;
                    if (info.reports > 0) snprintf(tg_race_text, sizeof tg_race_text, "%s", info.report[0]);
                }
                pthread_mutex_unlock(&tg_lock);
            }
        }
    }
    return NULL;
}

static void run_toggle(void)
{
    gf_module *mod = NULL;
    gf_race_info info;
    pthread_t wt[TG_MAX_THREADS], tt[TG_MAX_TOGGLERS];
    int nw = 0, nt = 0, i, m;
    uint64_t iters = 0, verified = 0, toggles = 0, reports = 0, launches = 0, by_method[TG_METHODS], async_bufs = 0;
    double t0, elapsed;
    char what[700];
    gf_result r;

    printf("== toggle: %d threads of synchronized work, %d threads switching the race detector%s, %.1f s, %s\n", cfg.toggle_threads,
           cfg.togglers, cfg.toggle_control ? " (control run: on only)" : "", cfg.toggle_seconds, gf_backend_name(cfg.backend));
    r = gf_device_open(cfg.backend, 0, &tdev);
    if (!CHECK_EQ_RESULT(r, GF_OK)) return;
    CHECK_EQ_RESULT(gf_race_check_enable(tdev, GF_RACE_CHECK_ON), GF_OK);   /* set-up is seen by the detector */
    r = gf_module_load(tdev, &tk_module, &mod);
    if (r == GF_OK) {
        CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &tg_fill), GF_OK);
        CHECK_EQ_RESULT(gf_kernel_get(mod, "add_u32", &tg_add), GF_OK);
    } else {
        CHECK(r == GF_ERROR_NOT_SUPPORTED, "toggle: no kernel form for this backend (else the module loads)");
        mod = NULL;
    }
    for (i = 0; i < TG_N / 2; i++) tg_shared_host[i] = 0xA5000000u + (uint32_t)i * 2654435761u % 1000003u;
    CHECK_EQ_RESULT(gf_buffer_create(tdev, sizeof tg_shared_host, &tg_shared), GF_OK);
    if (!tg_shared) return;
    CHECK_EQ_RESULT(gf_copy_to_device(tg_shared, 0, tg_shared_host, sizeof tg_shared_host), GF_OK);
    /* wide fills: used where the backend has them */
    {
        gf_stream *s = NULL;
        CHECK_EQ_RESULT(gf_stream_create(tdev, NULL, &s), GF_OK);
        if (s) {
            gf_buffer *b = NULL;
            CHECK_EQ_RESULT(gf_buffer_create(tdev, 64, &b), GF_OK);
            r = b ? gf_fill32_async(s, b, 0, 7, 16) : GF_ERROR_INVALID_HANDLE;
            tg_fill32_ok = r == GF_OK;
            if (!tg_fill32_ok) CHECK(r == GF_ERROR_NOT_SUPPORTED, "toggle: gf_fill32_async works or is not supported");
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            if (b) gf_buffer_destroy(b);
            gf_stream_destroy(s);
        }
    }
    if (!tg_fill32_ok && !(tg_fill && tg_add)) {
        printf("notice: toggle on %s: neither kernels nor wide fills: skipped\n", gf_backend_name(cfg.backend));
        SKIP("toggle storm: no way to write a known pattern on this backend");
        gf_device_close(tdev);
        return;
    }

    for (i = 0; i < cfg.toggle_threads; i++) {
        static const uint32_t zeros[TG_N] = { 0 };
        tworker *w = &TW[i];
        char la[32], lb[32];
        gf_stream_desc sd;
        memset(w, 0, sizeof *w);
        w->index = i;
        w->rng = (cfg.seed + 7u) * 0x9E3779B9u ^ (uint32_t)(i + 1) * 0x85EBCA6Bu;
        if (!w->rng) w->rng = 1;
        snprintf(la, sizeof la, "toggle/%d/a", i);
        snprintf(lb, sizeof lb, "toggle/%d/b", i);
        sd.priority = GF_PRIORITY_NORMAL;
        sd.label = la;
        CHECK_EQ_RESULT(gf_stream_create(tdev, &sd, &w->sa), GF_OK);
        sd.label = lb;
        CHECK_EQ_RESULT(gf_stream_create(tdev, &sd, &w->sb), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(tdev, sizeof zeros, &w->A), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(tdev, sizeof zeros, &w->B), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(tdev, sizeof zeros, &w->C), GF_OK);
        CHECK_EQ_RESULT(gf_event_create(tdev, 0, &w->e1), GF_OK);
        CHECK_EQ_RESULT(gf_event_create(tdev, (i & 1) ? GF_EVENT_TIMING : 0, &w->e2), GF_OK);
        if (!w->sa || !w->sb || !w->A || !w->B || !w->C || !w->e1 || !w->e2) return;
        CHECK_EQ_RESULT(gf_copy_to_device(w->C, 0, zeros, sizeof zeros), GF_OK);
        if (tg_add) {   /* captured with the detector on for even threads, off for odd ones */
            CHECK_EQ_RESULT(gf_race_check_enable(tdev, (i & 1) ? 0 : GF_RACE_CHECK_ON), GF_OK);
            CHECK_EQ_RESULT(gf_stream_begin_capture(w->sa, GF_CAPTURE_GLOBAL), GF_OK);
            r = tg_u32(w->sa, tg_add, w->C, TG_N, 1);
            CHECK_EQ_RESULT(r, GF_OK);
            CHECK_EQ_RESULT(gf_stream_end_capture(w->sa, &w->g), GF_OK);
        }
    }
    CHECK_EQ_RESULT(gf_race_check_enable(tdev, GF_RACE_CHECK_ON), GF_OK);
    for (i = 0; i < cfg.togglers; i++) {
        memset(&TT[i], 0, sizeof TT[i]);
        TT[i].index = i;
        TT[i].rng = (cfg.seed + 11u) * 0x27d4eb2du ^ (uint32_t)(i + 1) * 0x165667b1u;
        if (!TT[i].rng) TT[i].rng = 1;
    }

    wd_arm("toggle phase", cfg.toggle_seconds + 120);
    A_STORE(&tg_stop, 0);
    t0 = th_now_ms();
    for (i = 0; i < cfg.toggle_threads; i++) if (pthread_create(&wt[nw], NULL, tg_worker_main, &TW[i]) == 0) nw++;
    for (i = 0; i < cfg.togglers; i++) if (pthread_create(&tt[nt], NULL, tg_toggler_main, &TT[i]) == 0) nt++;
    CHECK(nw == cfg.toggle_threads && nt == cfg.togglers, "toggle: every thread started");
    while (th_now_ms() - t0 < cfg.toggle_seconds * 1e3) th_sleep_ms(50);
    A_STORE(&tg_stop, 1);
    for (i = 0; i < nw; i++) pthread_join(wt[i], NULL);
    for (i = 0; i < nt; i++) pthread_join(tt[i], NULL);
    elapsed = (th_now_ms() - t0) / 1e3;
    CHECK_EQ_RESULT(gf_device_synchronize(tdev), GF_OK);

    memset(by_method, 0, sizeof by_method);
    for (i = 0; i < cfg.toggle_threads; i++) {
        tworker *w = &TW[i];
        iters += w->iters; verified += w->verified; launches += w->g_launches; async_bufs += w->async_bufs;
        for (m = 0; m < TG_METHODS; m++) by_method[m] += w->by_method[m];
        snprintf(what, sizeof what, "toggle thread %d: every call succeeded and every round's data was right (%d failures; first: %s)",
                 i, w->e.count, w->e.count ? w->e.first : "-");
        CHECK(w->e.count == 0, what);
        snprintf(what, sizeof what, "toggle thread %d: callbacks ran == enqueued (%llu == %llu)", i,
                 (unsigned long long)A_LOAD(&w->cb_ran), (unsigned long long)w->cb_enq);
        CHECK(A_LOAD(&w->cb_ran) == w->cb_enq, what);
        if (w->g) {
            uint32_t h[TG_N];
            int ok = gf_copy_to_host(h, w->C, 0, sizeof h) == GF_OK, j;
            for (j = 0; ok && j < TG_N; j++) ok = h[j] == (uint32_t)w->g_launches;
            snprintf(what, sizeof what, "toggle thread %d: its graph's counter holds its %llu replays", i, (unsigned long long)w->g_launches);
            CHECK(ok, what);
        }
    }
    for (i = 0; i < nt; i++) {
        toggles += TT[i].toggles;
        reports += TT[i].reports;
        snprintf(what, sizeof what, "toggler %d: every gf_race_check_enable and gf_race_report succeeded (%d failures; first: %s)",
                 i, TT[i].e.count, TT[i].e.count ? TT[i].e.first : "-");
        CHECK(TT[i].e.count == 0, what);
    }
    printf("toggle figures: %llu rounds (%llu verified) in %.1f s, %llu detector switches (%.0f/s), %llu reports taken meanwhile, "
           "%llu graph replays, %llu stream-ordered buffers; joins:", (unsigned long long)iters, (unsigned long long)verified, elapsed,
           (unsigned long long)toggles, elapsed > 0 ? (double)toggles / elapsed : 0.0, (unsigned long long)reports,
           (unsigned long long)launches, (unsigned long long)async_bufs);
    for (m = 0; m < TG_METHODS; m++) printf(" %s %llu%s", tg_method_names[m], (unsigned long long)by_method[m], m + 1 < TG_METHODS ? "," : "\n");
    CHECK(iters > 0 && verified > 0 && toggles > 0, "toggle: work was done and the detector was switched");

    pthread_mutex_lock(&tg_lock);
    snprintf(what, sizeof what, "toggle: no race was reported while the detector was switched (largest count seen %llu%s%.400s)",
             (unsigned long long)tg_race_seen, tg_race_seen ? "; first: " : "", tg_race_text);
    pthread_mutex_unlock(&tg_lock);
    CHECK(tg_race_seen == 0, what);
    if (CHECK_EQ_RESULT(gf_race_report(tdev, &info), GF_OK)) {
        snprintf(what, sizeof what, "toggle: gf_race_report says 0 races for the correct program (%llu%s%.400s)",
                 (unsigned long long)info.count, info.reports ? "; first: " : "", info.reports ? info.report[0] : "");
        CHECK(info.count == 0, what);
    }

    /* the detector still works: one real race (in the detector's eyes: no event orders the two
       fills), kept apart in memory by a gate so it is not a race for TSan */
    {
        gf_stream *x = NULL, *y = NULL;
        gf_buffer *b = NULL;
        th_gate gate;
        uint64_t before = info.count;
        th_gate_init(&gate);
        CHECK_EQ_RESULT(gf_race_check_enable(tdev, GF_RACE_CHECK_ON), GF_OK);
        CHECK_EQ_RESULT(gf_stream_create(tdev, NULL, &x), GF_OK);
        CHECK_EQ_RESULT(gf_stream_create(tdev, NULL, &y), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(tdev, 256, &b), GF_OK);
        if (x && y && b) {
            CHECK_EQ_RESULT(gf_stream_add_callback(x, th_gate_cb, &gate), GF_OK);
            CHECK_EQ_RESULT(gf_fill_async(x, b, 0, 1, 256), GF_OK);
            CHECK_EQ_RESULT(gf_fill_async(y, b, 0, 2, 256), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(y), GF_OK);
            th_gate_open(&gate);
            CHECK_EQ_RESULT(gf_stream_synchronize(x), GF_OK);
            CHECK_EQ_RESULT(gf_race_report(tdev, &info), GF_OK);
            snprintf(what, sizeof what, "toggle: after the storm the detector still reports a real race (%llu races, was %llu)",
                     (unsigned long long)info.count, (unsigned long long)before);
            CHECK(info.count == before + 1, what);
        }
        if (b) gf_buffer_destroy(b);
        if (x) gf_stream_destroy(x);
        if (y) gf_stream_destroy(y);
        th_gate_destroy(&gate);
    }

    for (i = 0; i < cfg.toggle_threads; i++) {
        tworker *w = &TW[i];
        if (w->g) gf_graph_destroy(w->g);
        gf_event_destroy(w->e1);
        gf_event_destroy(w->e2);
        gf_buffer_destroy(w->A);
        gf_buffer_destroy(w->B);
        gf_buffer_destroy(w->C);
        gf_stream_destroy(w->sa);
        gf_stream_destroy(w->sb);
    }
    gf_buffer_destroy(tg_shared);
    if (mod) gf_module_destroy(mod);
    wd_arm("device close after the toggle phase", 120);
    gf_device_close(tdev);
    tdev = NULL;
}

/* ---- main --------------------------------------------------------------------------------- */
int main(int argc, char **argv)
{
    pthread_t wd;
    int i, wd_started;
    gf_result r;

    setvbuf(stdout, NULL, _IOLBF, 0);
    cfg.backend = GF_BACKEND_STUB;
    cfg.seconds = env_num("STRESS_SECONDS", 20);
    cfg.rounds = (long)env_num("STRESS_ROUNDS", 50000);
    cfg.every = (long)env_num("STRESS_SOAK_EVERY", 10000);
    cfg.threads = (int)env_num("STRESS_THREADS", 8);
    cfg.update = env_num("STRESS_GRAPH_UPDATE", 0) != 0;
    cfg.seed = (uint32_t)env_num("STRESS_SEED", 1);
    cfg.run_stress = cfg.run_soak = cfg.run_toggle = 0;
    for (i = 1; i < argc; i++) {
        int known_arg = th_backend_named(argv[i], &cfg.backend) != NULL;
        if (strcmp(argv[i], "update") == 0) { cfg.update = 1; known_arg = 1; }
        if (strcmp(argv[i], "stress") == 0) { cfg.run_stress = 1; known_arg = 1; }
        if (strcmp(argv[i], "soak") == 0) { cfg.run_soak = 1; known_arg = 1; }
        if (strcmp(argv[i], "toggle") == 0) { cfg.run_toggle = 1; known_arg = 1; }
        if (!known_arg && atof(argv[i]) > 0) { cfg.seconds = atof(argv[i]); known_arg = 1; }
        if (!known_arg) {
            printf("usage: %s [%s] [seconds] [update] [stress] [soak] [toggle]\n", argv[0], th_backend_choices());
            return 2;
        }
    }
    if (!cfg.run_stress && !cfg.run_soak && !cfg.run_toggle) cfg.run_stress = cfg.run_soak = cfg.run_toggle = 1;
    cfg.soak_seconds = env_num("STRESS_SOAK_SECONDS", cfg.seconds);
    cfg.toggle_seconds = env_num("STRESS_TOGGLE_SECONDS", cfg.seconds < 10 ? cfg.seconds : 10);
    cfg.toggle_threads = (int)env_num("STRESS_TOGGLE_THREADS", 4);
    cfg.togglers = (int)env_num("STRESS_TOGGLERS", 2);
    cfg.toggle_control = env_num("STRESS_TOGGLE_CONTROL", 0) != 0;
    if (cfg.toggle_threads < 1) cfg.toggle_threads = 1;
    if (cfg.toggle_threads > TG_MAX_THREADS) cfg.toggle_threads = TG_MAX_THREADS;
    if (cfg.togglers < 1) cfg.togglers = 1;
    if (cfg.togglers > TG_MAX_TOGGLERS) cfg.togglers = TG_MAX_TOGGLERS;
    if (cfg.threads < 1) cfg.threads = 1;
    if (cfg.threads > MAX_THREADS) cfg.threads = MAX_THREADS;
    if (cfg.every < 1) cfg.every = 1;

    r = gf_device_open(cfg.backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: stress on %s skipped: %s\n", gf_backend_name(cfg.backend), gf_last_error());
        SKIP("backend not available here");
        return th_finish();
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return th_finish();
    wd_started = pthread_create(&wd, NULL, watchdog_main, NULL) == 0;
    if (cfg.run_stress) run_stress();
    wd_arm("device close after the stress phase", 120);
    gf_device_close(dev);
    if (cfg.run_soak) run_soak();
    if (cfg.run_toggle) run_toggle();
    if (wd_started) {
        pthread_mutex_lock(&wd_lock);
        wd_quit = 1;
        pthread_mutex_unlock(&wd_lock);
        pthread_join(wd, NULL);
    }
    return th_finish();
}
