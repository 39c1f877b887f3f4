/* The race detector and hang diagnostics (issue 13).

       ./races stub|opencl|cuda|hip

   A table of small programs, racy and correctly synchronized: each runs on a fresh device with
   the detector on, and must be reported exactly as often as it races (once, however often the
   race repeats; never for a correct one). Then a program that hangs on purpose until a helper
   thread lets it go: with GPUFLOW_HANG_MS set, its wait logs a state report naming the chain. */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include "harness.h"
#include "test_kernels.h"

static gf_backend backend;
static const char *backend_name;

typedef struct env {
    gf_device *dev;
    gf_stream *s1, *s2;
    gf_buffer *b;           /* 1024 bytes */
    unsigned char host[1024];
} env;

static gf_stream *stream_named(gf_device *dev, const char *label)
{
    gf_stream_desc d;
    gf_stream *s = NULL;
    d.label = label;
    d.priority = GF_PRIORITY_NORMAL;
    gf_stream_create(dev, &d, &s);
    return s;
}

/* ---- the programs ---------------------------------------------------------------------------- */
static void racy_write_read(env *e)            /* the same race three times: reported once */
{
    int i;
    for (i = 0; i < 3; i++) {
        gf_fill_async(e->s1, e->b, 0, 1, 1024);
        gf_copy_to_host_async(e->s2, e->host, e->b, 0, 1024);
    }
}
static void racy_write_write(env *e)
{
    gf_fill_async(e->s1, e->b, 0, 1, 600);
    gf_fill_async(e->s2, e->b, 500, 2, 500);
}
static void ok_read_read(env *e)
{
    gf_copy_to_host_async(e->s1, e->host, e->b, 0, 512);
    gf_copy_to_host_async(e->s2, e->host + 512, e->b, 0, 512);
}
static void ok_disjoint(env *e)
{
    gf_fill_async(e->s1, e->b, 0, 1, 512);
    gf_fill_async(e->s2, e->b, 512, 2, 512);
}
static void ok_event(env *e)
{
    gf_event *ev = NULL;
    gf_event_create(e->dev, 0, &ev);
    gf_fill_async(e->s1, e->b, 0, 1, 1024);
    gf_event_record(ev, e->s1);
    gf_stream_wait_event(e->s2, ev);
    gf_copy_to_host_async(e->s2, e->host, e->b, 0, 1024);
    gf_device_synchronize(e->dev);
    gf_event_destroy(ev);
}
static void ok_fork_join(env *e)               /* wait_stream both ways */
{
    gf_fill_async(e->s1, e->b, 0, 1, 1024);
    gf_stream_wait_stream(e->s2, e->s1);
    gf_fill_async(e->s2, e->b, 0, 2, 512);
    gf_stream_wait_stream(e->s1, e->s2);
    gf_copy_to_host_async(e->s1, e->host, e->b, 0, 1024);
}
static void ok_barrier(env *e)
{
    gf_stream *both[2];
    both[0] = e->s1; both[1] = e->s2;
    gf_fill_async(e->s1, e->b, 0, 1, 1024);
    gf_barrier(both, 2);
    gf_copy_to_host_async(e->s2, e->host, e->b, 0, 1024);
}
static void ok_host_sync(env *e)
{
    gf_fill_async(e->s1, e->b, 0, 1, 1024);
    gf_stream_synchronize(e->s1);
    gf_copy_to_host_async(e->s2, e->host, e->b, 0, 1024);
}
static void racy_views_overlap(env *e)
{
    gf_buffer *a = NULL, *c = NULL;
    gf_buffer_view(e->b, 0, 600, &a);
    gf_buffer_view(e->b, 500, 500, &c);
    gf_fill_async(e->s1, a, 0, 1, 600);
    gf_fill_async(e->s2, c, 0, 2, 500);         /* bytes 500..599 written by both */
    gf_device_synchronize(e->dev);
    gf_buffer_destroy(a);
    gf_buffer_destroy(c);
}
static void ok_views_disjoint(env *e)
{
    gf_buffer *a = NULL, *c = NULL;
    gf_buffer_view(e->b, 0, 512, &a);
    gf_buffer_view(e->b, 512, 512, &c);
    gf_fill_async(e->s1, a, 0, 1, 512);
    gf_fill_async(e->s2, c, 0, 2, 512);
    gf_device_synchronize(e->dev);
    gf_buffer_destroy(a);
    gf_buffer_destroy(c);
}
static void racy_stream_set(env *e)            /* slot 1 does not wait for slot 0's round */
{
    gf_stream_set *set = NULL;
    gf_stream *s = NULL;
    gf_stream_set_create(e->dev, 2, "ring", &set);
    gf_stream_set_next(set, 0, &s);
    gf_fill_async(s, e->b, 0, 1, 1024);
    gf_stream_set_next(set, 1, &s);
    gf_copy_to_host_async(s, e->host, e->b, 0, 1024);
    gf_stream_set_synchronize(set);
    gf_stream_set_destroy(set);
}
static void ok_stream_set(env *e)              /* round 3 on slot 1 comes after round 2 waited for slot 0 */
{
    gf_stream_set *set = NULL;
    gf_stream *s = NULL;
    gf_stream_set_create(e->dev, 2, "ring", &set);
    gf_stream_set_next(set, 0, &s);
    gf_fill_async(s, e->b, 0, 1, 512);
    gf_stream_set_next(set, 1, &s);
    gf_fill_async(s, e->b, 512, 2, 512);
    gf_stream_set_next(set, 2, &s);
    gf_stream_set_next(set, 3, &s);
    gf_copy_to_host_async(s, e->host, e->b, 0, 512);
    gf_stream_set_synchronize(set);
    gf_stream_set_destroy(set);
}
static gf_buffer *flow_buf;
static unsigned char flow_host[1024];
static gf_result flow_write(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, flow_buf, 0, 7, 1024); }
static gf_result flow_read(gf_stream *s, void *user) { (void)user; return gf_copy_to_host_async(s, flow_host, flow_buf, 0, 1024); }
static void run_flow(env *e, int ordered)
{
    gf_stream_pool_desc pd;
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_task a, b;
    memset(&pd, 0, sizeof pd);
    pd.count = 4;
    gf_stream_pool_create(e->dev, &pd, &pool);
    gf_flow_create(e->dev, NULL, &flow);
    flow_buf = e->b;
    gf_flow_add(flow, "write", flow_write, NULL, &a);
    gf_flow_add(flow, "read", flow_read, NULL, &b);
    if (ordered) gf_flow_depend(flow, a, b);    /* else two lanes: two streams */
    gf_flow_run(flow, pool);
    gf_stream_pool_synchronize(pool);
    gf_flow_destroy(flow);
    gf_stream_pool_destroy(pool);
}
static void ok_flow(env *e) { run_flow(e, 1); }
static void racy_flow(env *e) { run_flow(e, 0); }
static void ok_pool(env *e)                    /* one stream: acquisitions follow each other */
{
    gf_stream_pool_desc pd;
    gf_stream_pool *pool = NULL;
    gf_stream *s = NULL;
    memset(&pd, 0, sizeof pd);
    pd.count = 1;
    gf_stream_pool_create(e->dev, &pd, &pool);
    gf_stream_pool_acquire(pool, NULL, &s);
    gf_fill_async(s, e->b, 0, 1, 1024);
    gf_stream_pool_release(pool, s);
    gf_stream_pool_acquire(pool, NULL, &s);
    gf_copy_to_host_async(s, e->host, e->b, 0, 1024);
    gf_stream_pool_release(pool, s);
    gf_stream_pool_synchronize(pool);
    gf_stream_pool_destroy(pool);
}
static gf_result capture_fill(gf_stream *s, void *user) { return gf_fill_async(s, (gf_buffer *)user, 0, 3, 1024); }
static void replay(env *e, int racy)
{
    gf_graph *g = NULL;
    gf_graph_capture(e->s1, 0, capture_fill, e->b, &g);
    gf_graph_launch(g, e->s1);
    gf_graph_launch(g, e->s1);                  /* the same stream: ordered */
    if (!racy) gf_stream_wait_stream(e->s2, e->s1);
    gf_copy_to_host_async(e->s2, e->host, e->b, 0, 1024);
    gf_device_synchronize(e->dev);
    gf_graph_destroy(g);
}
static void ok_graph_replay(env *e) { replay(e, 0); }
static void racy_graph_replay(env *e) { replay(e, 1); }
static void racy_destroy_in_use(env *e)        /* destroyed with no synchronize since the fill */
{
    gf_buffer *tmp = NULL;
    gf_buffer_create(e->dev, 256, &tmp);
    gf_fill_async(e->s1, tmp, 0, 1, 256);
    gf_buffer_destroy(tmp);
}
static void ok_destroy_after_sync(env *e)
{
    gf_buffer *tmp = NULL;
    gf_buffer_create(e->dev, 256, &tmp);
    gf_fill_async(e->s1, tmp, 0, 1, 256);
    gf_stream_synchronize(e->s1);
    gf_buffer_destroy(tmp);
}
static void async_free(env *e, int record)
{
    gf_buffer *tmp = NULL;
    gf_buffer_create_async(e->s1, 256, &tmp);
    gf_stream_wait_stream(e->s2, e->s1);
    gf_fill_async(e->s2, tmp, 0, 1, 256);       /* another stream still writes it... */
    if (record) gf_buffer_record_stream(tmp, e->s2);
    gf_buffer_destroy_async(e->s1, tmp);        /* ...when s1 frees it */
}
static void racy_destroy_async(env *e) { async_free(e, 0); }
static void ok_destroy_async_recorded(env *e) { async_free(e, 1); }
static void ok_waiter(env *e)                  /* the waiter fired: the host knows the fill is done */
{
    gf_event *ev = NULL;
    th_flag fired;
    th_flag_init(&fired);
    gf_event_create(e->dev, 0, &ev);
    gf_fill_async(e->s1, e->b, 0, 1, 1024);
    gf_event_record(ev, e->s1);
    gf_event_on_complete(ev, th_flag_cb, &fired, NULL);
    th_flag_wait(&fired, 1, TH_WAIT_MS);
    gf_copy_to_host_async(e->s2, e->host, e->b, 0, 1024);
    gf_device_synchronize(e->dev);
    gf_event_destroy(ev);
    th_flag_destroy(&fired);
}
static gf_module *race_mod;
static void launch_args(env *e, int read_only_second)
{
    gf_kernel *k = NULL;
    gf_launch_dims d;
    gf_arg a[3];
    uint32_t n = 16, v = 1;
    if (!race_mod || gf_kernel_get(race_mod, "fill_u32", &k) != GF_OK) return;
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    d.block[0] = 16; d.block[1] = d.block[2] = 1;
    a[0].value = 0; a[0].size = 0; a[0].buffer = e->b;
    a[1].value = &n; a[1].size = sizeof n; a[1].buffer = 0;
    a[2].value = &v; a[2].size = sizeof v; a[2].buffer = 0;
    gf_copy_to_host_async(e->s1, e->host, e->b, 0, 64);    /* a read on s1 */
    if (read_only_second) a[0].size = GF_ARG_READ_ONLY;     /* the kernel says it only reads */
    gf_launch(e->s2, k, d, a, 3);                           /* a write on s2, unless read-only */
}
static void racy_launch(env *e) { launch_args(e, 0); }
static void ok_launch_read_only(env *e) { launch_args(e, 1); }

static const struct { const char *name; void (*fn)(env *); int races; int needs_kernels; } cases[] = {
    { "write then read on two streams, three times", racy_write_read, 1, 0 },
    { "writes to overlapping ranges", racy_write_write, 1, 0 },
    { "reads only", ok_read_read, 0, 0 },
    { "writes to disjoint ranges", ok_disjoint, 0, 0 },
    { "an event orders them", ok_event, 0, 0 },
    { "fork and join with wait_stream", ok_fork_join, 0, 0 },
    { "a barrier", ok_barrier, 0, 0 },
    { "a host synchronize", ok_host_sync, 0, 0 },
    { "overlapping views", racy_views_overlap, 1, 0 },
    { "disjoint views", ok_views_disjoint, 0, 0 },
    { "stream set slots without a wait", racy_stream_set, 1, 0 },
    { "stream set rounds", ok_stream_set, 0, 0 },
    { "flow with the dependency", ok_flow, 0, 0 },
    { "flow without it", racy_flow, 1, 0 },
    { "a one-stream pool", ok_pool, 0, 0 },
    { "graph replay, then a waited read", ok_graph_replay, 0, 0 },
    { "graph replay, then an unordered read", racy_graph_replay, 1, 0 },
    { "destroy while in use", racy_destroy_in_use, 1, 0 },
    { "destroy after a synchronize", ok_destroy_after_sync, 0, 0 },
    { "stream-ordered free while another stream writes", racy_destroy_async, 1, 0 },
    { "the same with gf_buffer_record_stream", ok_destroy_async_recorded, 0, 0 },
    { "a waiter fired first", ok_waiter, 0, 0 },
    { "a kernel writes what another stream reads", racy_launch, 1, 1 },
    { "the kernel's argument is read-only", ok_launch_read_only, 0, 1 },
};

/* Limits the detector once had: more than 64 streams over a device's life, turning it off and on
   again, more than 256 distinct races. Each once gave wrong counts. */
static void test_detector_limits(void)
{
    gf_device *dev = NULL;
    gf_buffer *b = NULL, *many[300];
    gf_stream *x, *y;
    gf_race_info info;
    unsigned char host[64];
    int i, round;
    if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) return;
    gf_race_check_enable(dev, GF_RACE_CHECK_ON);
    gf_buffer_create(dev, 64, &b);
    for (i = 0; i < 70; i++) {   /* 70 streams come and go, each synchronized */
        gf_stream *t = stream_named(dev, "passing");
        gf_fill_async(t, b, 0, (unsigned char)i, 64);
        gf_stream_synchronize(t);
        gf_stream_destroy(t);
    }
    x = stream_named(dev, "x");
    y = stream_named(dev, "y");
    gf_fill_async(x, b, 0, 1, 64);
    gf_stream_synchronize(x);
    gf_copy_to_host_async(y, host, b, 0, 64);
    gf_device_synchronize(dev);
    gf_race_report(dev, &info);
    CHECK(info.count == 0, "detector: a host synchronize orders work after 70 streams have been used");
    gf_fill_async(x, b, 0, 2, 64);      /* off: its synchronize is not seen... */
    gf_race_check_enable(dev, 0);
    gf_stream_synchronize(x);
    gf_race_check_enable(dev, GF_RACE_CHECK_ON);
    gf_copy_to_host_async(y, host, b, 0, 64);   /* ...so what came before is forgotten, not misjudged */
    gf_device_synchronize(dev);
    gf_race_report(dev, &info);
    CHECK(info.count == 0, "detector: turning it off and on again reports no stale race");
    for (i = 0; i < 300; i++) gf_buffer_create(dev, 16, &many[i]);
    for (round = 0; round < 3; round++)
        for (i = 0; i < 300; i++) { gf_fill_async(x, many[i], 0, 1, 16); gf_fill_async(y, many[i], 0, 2, 16); }
    gf_device_synchronize(dev);
    gf_race_report(dev, &info);
    CHECK(info.count == 300, "detector: 300 distinct races, each repeated, are counted once each");
    for (i = 0; i < 300; i++) gf_buffer_destroy(many[i]);
    gf_buffer_destroy(b);
    gf_stream_destroy(x);
    gf_stream_destroy(y);
    gf_device_close(dev);
}

/* ---- the hang ---------------------------------------------------------------------------------- */
typedef struct { char text[8192]; int logged; pthread_mutex_t m; } hang_log;
static void hang_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    hang_log *l = (hang_log *)user;
    (void)level;
    if (code != GF_TIMEOUT || !strstr(message, "GPUFLOW_HANG_MS")) return;
    pthread_mutex_lock(&l->m);
    if (!l->logged++) snprintf(l->text, sizeof l->text, "%s", message);
    pthread_mutex_unlock(&l->m);
}
static void set_env(const char *name, const char *value)   /* "" unsets, as far as gpuflow reads it */
{
#if defined(_WIN32)
    _putenv_s(name, value);
#else
    setenv(name, value, 1);
#endif
}
typedef struct { th_gate *gate; unsigned ms; } opener;
static void *open_later(void *p) { opener *o = (opener *)p; th_sleep_ms(o->ms); th_gate_open(o->gate); return NULL; }

static void test_hang_report(void)
{
    static hang_log log;
    gf_device *dev = NULL;
    gf_stream *held, *waiting;
    gf_event *ev = NULL;
    th_gate gate;
    opener o;
    pthread_t t;
    char state[4096];
    th_gate_init(&gate);
    pthread_mutex_init(&log.m, NULL);
    set_env("GPUFLOW_HANG_MS", "50");
    if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) return;
    set_env("GPUFLOW_HANG_MS", "");
    gf_set_logger(hang_logger, &log);
    held = stream_named(dev, "held");
    waiting = stream_named(dev, "waiting");
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(held, th_gate_cb, &gate), GF_OK);   /* waits for the host */
    CHECK_EQ_RESULT(gf_event_record(ev, held), GF_OK);                         /* behind the callback */
    CHECK_EQ_RESULT(gf_stream_wait_event(waiting, ev), GF_OK);
    CHECK_EQ_RESULT(gf_device_write_state(dev, state, sizeof state), GF_OK);
    CHECK(strstr(state, "'held'") && strstr(state, "'waiting'") && strstr(state, "waits for the event recorded on 'held'"),
          "write_state: names both streams and what 'waiting' waits for");
    o.gate = &gate;
    o.ms = 400;
    pthread_create(&t, NULL, open_later, &o);
    CHECK_EQ_RESULT(gf_stream_synchronize(waiting), GF_OK);                    /* hangs until the gate opens */
    pthread_join(t, NULL);
    gf_set_logger(NULL, NULL);
    pthread_mutex_lock(&log.m);
    CHECK(log.logged == 1, "GPUFLOW_HANG_MS: the long wait logged the state once");
    CHECK(strstr(log.text, "waiting for stream 'waiting'") && strstr(log.text, "stream 'held'") &&
          strstr(log.text, "a host callback is running now") && strstr(log.text, "waits for the event recorded on 'held'"),
          "the hang report names the chain: 'waiting' waits for an event behind 'held''s running callback");
    if (!strstr(log.text, "host callback is running")) printf("%s\n", log.text);
    pthread_mutex_unlock(&log.m);
    CHECK_FAIL(gf_device_write_state(dev, NULL, 10), GF_ERROR_INVALID_ARGUMENT);
    gf_event_destroy(ev);
    gf_stream_destroy(held);
    gf_stream_destroy(waiting);
    gf_device_close(dev);
    th_gate_destroy(&gate);
}

int main(int argc, char **argv)
{
    static const struct { const char *name; gf_backend b; } known[] = {
        { "stub", GF_BACKEND_STUB }, { "cuda", GF_BACKEND_CUDA }, { "hip", GF_BACKEND_HIP }, { "opencl", GF_BACKEND_OPENCL }
    };
    gf_device *probe = NULL;
    gf_result r;
    int i;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; argc == 2 && i < 4; i++)
        if (strcmp(argv[1], known[i].name) == 0) { backend_name = known[i].name; backend = known[i].b; }
    if (!backend_name) { fprintf(stderr, "usage: %s stub|cuda|hip|opencl\n", argv[0]); return 2; }
    r = gf_device_open(backend, 0, &probe);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: races %s skipped: %s: %s\n", backend_name, gf_result_name(r), gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    gf_device_close(probe);
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        env e;
        gf_race_info info;
        char what[200];
        memset(&e, 0, sizeof e);
        if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &e.dev), GF_OK)) continue;
        CHECK_EQ_RESULT(gf_race_check_enable(e.dev, GF_RACE_CHECK_ON), GF_OK);
        e.s1 = stream_named(e.dev, "upload");
        e.s2 = stream_named(e.dev, "compute");
        gf_buffer_create(e.dev, 1024, &e.b);
        race_mod = NULL;
        if (cases[i].needs_kernels && gf_module_load(e.dev, &tk_module, &race_mod) != GF_OK) {
            SKIP("no test kernels for this backend");
        } else {
            cases[i].fn(&e);
            gf_device_synchronize(e.dev);
            gf_race_report(e.dev, &info);
            snprintf(what, sizeof what, "%s: %s (%d expected, %llu reported)", cases[i].races ? "racy" : "correct",
                     cases[i].name, cases[i].races, (unsigned long long)info.count);
            if (!CHECK(info.count == (uint64_t)cases[i].races, what))
                for (int k = 0; k < info.reports; k++) printf("    %s\n", info.report[k]);
            if (i == 0 && info.reports)
                CHECK(strstr(info.report[0], "written by fill on 'upload'") && strstr(info.report[0], "read by copy-to-host on 'compute'") &&
                      strstr(info.report[0], "no event orders them"), "a report names both operations, their streams and the fix");
        }
        if (race_mod) gf_module_destroy(race_mod);
        gf_buffer_destroy(e.b);
        gf_stream_destroy(e.s1);
        gf_stream_destroy(e.s2);
        gf_device_close(e.dev);
    }
    test_detector_limits();
    test_hang_report();
    return th_finish();
}
