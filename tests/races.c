/* The race detector and hang diagnostics (issue 13).

       ./races stub|opencl|cuda|hip
       RACES_TOGGLE_SECONDS=s   how long the detector is toggled from threads (default 2 on the
                                stub, 1 elsewhere)

   A table of small programs, racy and correctly synchronized: each runs on a fresh device with
   the detector on, and must be reported exactly as often as it races (once, however often the
   race repeats; never for a correct one). Then a program that hangs on purpose until a helper
   thread lets it go: with GPUFLOW_HANG_MS set, its wait logs a state report naming the chain. */
#define _POSIX_C_SOURCE 200809L   /* setenv */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include <sched.h>
#if !defined(_WIN32)
#  include <unistd.h>
#  include <sys/types.h>
#  include <sys/wait.h>
#  define RACES_HAVE_FORK 1
#endif
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
/* A flow of first and second (after it, when ordered), with aside on a lane of its own, run
   runs times, each run after the last one's work (gf_flow_wait_frames(flow, 0)). */
static void run_flow_of(env *e, gf_task_fn first, gf_task_fn second, gf_task_fn aside, int ordered, int runs)
{
    gf_stream_pool_desc pd;
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_task a = 0, b = 0, c = 0;
    int run;
    memset(&pd, 0, sizeof pd);
    pd.count = 4;
    gf_stream_pool_create(e->dev, &pd, &pool);
    gf_flow_create(e->dev, NULL, &flow);
    flow_buf = e->b;
    gf_flow_add(flow, "first", first, NULL, &a);
    if (aside) gf_flow_add(flow, "aside", aside, NULL, &c);
    gf_flow_add(flow, "second", second, NULL, &b);
    if (ordered) gf_flow_depend(flow, a, b);    /* else two lanes: two streams */
    for (run = 0; run < runs; run++) {
        gf_flow_run(flow, pool);
        if (runs > 1) gf_flow_wait_frames(flow, 0, TH_WAIT_MS);
    }
    gf_stream_pool_synchronize(pool);
    gf_flow_destroy(flow);
    gf_stream_pool_destroy(pool);
}
static void ok_flow(env *e) { run_flow_of(e, flow_write, flow_read, NULL, 1, 1); }
/* Runs paced by gf_flow_wait_frames(flow, 0): each run comes after the last one's work (found by
   a differential fuzzer: the wait taught the detector nothing about lanes already done). */
static gf_result flow_low1(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, flow_buf, 0, 1, 16); }
static gf_result flow_high(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, flow_buf, 512, 2, 16); }
static gf_result flow_low2(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, flow_buf, 0, 3, 16); }
static void ok_flow_paced(env *e) { run_flow_of(e, flow_low1, flow_low2, flow_high, 1, 3); }
static void racy_flow(env *e) { run_flow_of(e, flow_write, flow_read, NULL, 0, 1); }
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
/* destroyed with no synchronize since the fill: no race, since the memory waits for the work
   queued before the destroy (it was reported as one, which the destroy's contract makes false) */
static void ok_destroy_in_use(env *e)
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
static void ok_stream_callback(env *e)          /* the callback ran: the host knows the fill is done (an outside review: reported) */
{
    th_flag ran;
    th_flag_init(&ran);
    gf_fill_async(e->s1, e->b, 0, 1, 1024);
    gf_stream_add_callback(e->s1, th_flag_cb, &ran);
    th_flag_wait(&ran, 1, TH_WAIT_MS);
    gf_copy_to_host_async(e->s2, e->host, e->b, 0, 1024);
    gf_device_synchronize(e->dev);
    th_flag_destroy(&ran);
}
/* fill_u32 (tests/test_kernels.h) writing *v into b's first *n words: one block of 16 threads
   (d may be NULL: arguments only). */
static void fill_u32_args(gf_launch_dims *d, gf_arg a[3], gf_buffer *b, const uint32_t *n, const uint32_t *v)
{
    if (d) {
        memset(d, 0, sizeof *d);
        d->grid[0] = d->grid[1] = d->grid[2] = 1;
        d->block[0] = 16; d->block[1] = d->block[2] = 1;
    }
    a[0].value = 0; a[0].size = 0; a[0].buffer = b;
    a[1].value = n; a[1].size = sizeof *n; a[1].buffer = 0;
    a[2].value = v; a[2].size = sizeof *v; a[2].buffer = 0;
}
/* The test kernels' fill_u32 on dev, or a skip named by what (then NULL, and nothing loaded). */
static gf_kernel *fill_u32_kernel(gf_device *dev, gf_module **mod, const char *what)
{
    gf_kernel *k = NULL;
    char why[120];
    *mod = NULL;
    if (gf_module_load(dev, &tk_module, mod) == GF_OK && gf_kernel_get(*mod, "fill_u32", &k) == GF_OK) return k;
    snprintf(why, sizeof why, "%s: no test kernels for this backend", what);
    SKIP(why);
    if (*mod) gf_module_destroy(*mod);
    *mod = NULL;
    return NULL;
}
static gf_module *race_mod;
static void launch_args(env *e, int read_only_second)
{
    gf_kernel *k = NULL;
    gf_launch_dims d;
    gf_arg a[3];
    uint32_t n = 16, v = 1;
    if (!race_mod || gf_kernel_get(race_mod, "fill_u32", &k) != GF_OK) return;
    fill_u32_args(&d, a, e->b, &n, &v);
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
    { "flow runs paced by gf_flow_wait_frames", ok_flow_paced, 0, 0 },
    { "a one-stream pool", ok_pool, 0, 0 },
    { "graph replay, then a waited read", ok_graph_replay, 0, 0 },
    { "graph replay, then an unordered read", racy_graph_replay, 1, 0 },
    { "destroy while in use (the memory waits for the work)", ok_destroy_in_use, 0, 0 },
    { "destroy after a synchronize", ok_destroy_after_sync, 0, 0 },
    { "stream-ordered free while another stream writes", racy_destroy_async, 1, 0 },
    { "the same with gf_buffer_record_stream", ok_destroy_async_recorded, 0, 0 },
    { "a waiter fired first", ok_waiter, 0, 0 },
    { "a stream callback ran first", ok_stream_callback, 0, 0 },
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

/* ==== the detector past its tables, toggled from threads, and after graph argument changes ====
   Sizes (gpuflow.h): vector clocks start empty and grow per stream slot; a buffer keeps up to
   GF__RACE_ACCESSES (4096) accesses that no synchronize has retired; an operation's accesses
   beyond GF__RACE_MAX_USES (64) go to the heap; GF_RACE_REPORTS (8) report texts, while count
   counts every distinct race; an access keeps its stream's whole label. Each program below runs
   on a fresh device: the expected count is exact. Regressions for the defects an outside tester
   found (numbered as in the closing note of the reliability issue):
     D1 a destroy on the host weighed accesses from before the detector was last turned off
        (a false report);
     D2 gf_graph_set_kernel_args and gf_graph_update did not renew what a graph's replays check
        (false reports, missed races, and a read of a destroyed gf_buffer);
     D3 an event recorded again kept an older record's ticks past the recording stream's clock
        (missed races);
     D4 the 256 newest accesses per buffer were kept, retired or not (a race with an older one
        was missed);
     D5 an access kept 47 characters of its stream's label (cut names; one race counted twice);
     D6 an operation reported at most 64 accesses (rows of a 2D copy past them were missed). */
static gf_device *fresh_device(void)
{
    gf_device *dev = NULL;
    if (gf_device_open(backend, 0, &dev) != GF_OK) return NULL;
    if (gf_race_check_enable(dev, GF_RACE_CHECK_ON) != GF_OK) { gf_device_close(dev); return NULL; }
    return dev;
}
static uint64_t races_of(gf_device *dev)
{
    gf_race_info info;
    memset(&info, 0, sizeof info);
    gf_race_report(dev, &info);
    return info.count;
}
static void print_reports(gf_device *dev)
{
    gf_race_info info;
    int k;
    memset(&info, 0, sizeof info);
    gf_race_report(dev, &info);
    for (k = 0; k < info.reports; k++) printf("    %s\n", info.report[k]);
}
/* Some report names both sides: what each did and on which stream, as the detector words it. */
static int report_names(gf_device *dev, const char *first_op, const char *first_stream, const char *second_op, const char *second_stream)
{
    gf_race_info info;
    char a[200], b[200];
    int k;
    memset(&info, 0, sizeof info);
    gf_race_report(dev, &info);
    snprintf(a, sizeof a, "%s on '%s'", first_op, first_stream);
    snprintf(b, sizeof b, "%s on '%s'", second_op, second_stream);
    for (k = 0; k < info.reports; k++)
        if (strstr(info.report[k], a) && strstr(info.report[k], b)) return 1;
    return 0;
}
static double env_seconds(const char *name, double dflt)
{
    const char *v = getenv(name);
    char *end = NULL;
    double d;
    if (!v || !*v) return dflt;
    d = strtod(v, &end);
    return (end && !*end && d > 0 && d < 3600) ? d : dflt;
}

/* ---- toggled on and off from 4 threads while 4 others run correctly ordered streams ----------- */
typedef struct tog_shared { gf_device *dev; gf_kernel *add; int stop, destroys; } tog_shared;
typedef struct tog_worker { tog_shared *sh; int id; long rounds; int failures, wrong; } tog_worker;
typedef struct tog_toggler { tog_shared *sh; int id; long toggles; int failures; } tog_toggler;

static int tog_add(gf_stream *s, gf_kernel *k, gf_buffer *b, uint32_t n, uint32_t v)
{
    gf_launch_dims d;
    gf_arg a[3];
    memset(&d, 0, sizeof d);
    d.grid[0] = n / 64; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 64; d.block[1] = d.block[2] = 1;
    a[0].value = 0; a[0].size = 0; a[0].buffer = b;
    a[1].value = &n; a[1].size = sizeof n; a[1].buffer = 0;
    a[2].value = &v; a[2].size = sizeof v; a[2].buffer = 0;
    return gf_launch(s, k, d, a, 3) == GF_OK;
}
static void *tog_work(void *p)
{
    enum { N = 256 };
    tog_worker *w = (tog_worker *)p;
    gf_device *dev = w->sh->dev;
    gf_stream *a, *b, *both[2];
    gf_buffer *x = NULL, *y = NULL;
    gf_event *ev = NULL;
    char la[32], lb[32];
    uint32_t h[N], r;
    int i;
    snprintf(la, sizeof la, "worker %d a", w->id);
    snprintf(lb, sizeof lb, "worker %d b", w->id);
    a = stream_named(dev, la);
    b = stream_named(dev, lb);
    both[0] = a; both[1] = b;
    if (!a || !b || gf_buffer_create(dev, sizeof h, &x) != GF_OK || gf_buffer_create(dev, sizeof h, &y) != GF_OK ||
        gf_event_create(dev, 0, &ev) != GF_OK) {
        w->failures++;
    } else {
        for (r = 1; !__atomic_load_n(&w->sh->stop, __ATOMIC_ACQUIRE); r++) {
            int ok = 1;
            ok &= gf_fill32_async(a, x, 0, r, N) == GF_OK;                  /* a writes x */
            if (r & 1) ok &= gf_event_record(ev, a) == GF_OK && gf_stream_wait_event(b, ev) == GF_OK;
            else ok &= gf_barrier(both, 2) == GF_OK;
            if (w->sh->add) ok &= tog_add(b, w->sh->add, x, N, 1);          /* b: x += 1 (a kernel) */
            else ok &= gf_fill32_async(b, x, 0, r + 1, N) == GF_OK;
            ok &= gf_copy_buffer_async(b, y, 0, x, 0, sizeof h) == GF_OK;   /* b: y = x */
            ok &= gf_stream_wait_stream(a, b) == GF_OK;
            ok &= gf_copy_to_host_async(a, h, y, 0, sizeof h) == GF_OK;     /* a reads y */
            ok &= gf_stream_synchronize(a) == GF_OK;
            if (ok)   /* h is read only when the round's calls worked: a failed one counts in failures */
                for (i = 0; i < N; i++) if (h[i] != r + 1) { w->wrong++; break; }
            if (w->sh->destroys) {   /* a buffer that lives one round: written, synchronized, destroyed */
                gf_buffer *tmp = NULL;
                ok &= gf_buffer_create(dev, 256, &tmp) == GF_OK;
                ok &= gf_fill_async(a, tmp, 0, (unsigned char)r, 256) == GF_OK;
                ok &= gf_stream_synchronize(a) == GF_OK;
                if (tmp) gf_buffer_destroy(tmp);
            }
            if (r % 4 == 2) {   /* b writes y, the host waits for an event behind it, a reads y */
                ok &= gf_fill32_async(b, y, 0, r + 2, N) == GF_OK;
                ok &= gf_event_record(ev, b) == GF_OK && gf_event_synchronize(ev) == GF_OK;
                ok &= gf_copy_to_host_async(a, h, y, 0, sizeof h) == GF_OK;
                ok &= gf_stream_synchronize(a) == GF_OK;
                if (ok) for (i = 0; i < N; i++) if (h[i] != r + 2) { w->wrong++; break; }
            }
            if (!ok) w->failures++;
            w->rounds++;
        }
        if (gf_stream_synchronize(b) != GF_OK) w->failures++;
    }
    if (ev) gf_event_destroy(ev);
    if (x) gf_buffer_destroy(x);
    if (y) gf_buffer_destroy(y);
    if (a) gf_stream_destroy(a);
    if (b) gf_stream_destroy(b);
    return NULL;
}
static void *tog_toggle(void *p)
{
    tog_toggler *t = (tog_toggler *)p;
    unsigned i;
    for (i = 0; !__atomic_load_n(&t->sh->stop, __ATOMIC_ACQUIRE); i++) {
        if (gf_race_check_enable(t->sh->dev, ((i + (unsigned)t->id) & 1) ? 0 : GF_RACE_CHECK_ON) != GF_OK) t->failures++;
        t->toggles++;
        if (i % 4 == 3) sched_yield();
    }
    return NULL;
}
/* destroys: the workers also destroy a buffer after synchronizing its writer (defect D1 made
   that a false report when the synchronize came while the detector was off). */
static void toggle_program(double seconds, int destroys)
{
    tog_shared sh;
    tog_worker w[4];
    tog_toggler t[4];
    pthread_t wt[4], tt[4];
    gf_module *mod = NULL;
    long rounds = 0, toggles = 0;
    int i, failures = 0, wrong = 0, min_rounds = 1 << 30;
    uint64_t before;
    memset(&sh, 0, sizeof sh);
    sh.destroys = destroys;
    if (!(sh.dev = fresh_device())) { CHECK(0, "toggle: device"); return; }
    if (gf_module_load(sh.dev, &tk_module, &mod) == GF_OK) gf_kernel_get(mod, "add_u32", &sh.add);
    for (i = 0; i < 4; i++) {
        w[i].sh = &sh; w[i].id = i; w[i].rounds = 0; w[i].failures = w[i].wrong = 0;
        t[i].sh = &sh; t[i].id = i; t[i].toggles = 0; t[i].failures = 0;
        pthread_create(&wt[i], NULL, tog_work, &w[i]);
        pthread_create(&tt[i], NULL, tog_toggle, &t[i]);
    }
    th_sleep_ms((unsigned)(seconds * 1000));
    __atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 4; i++) {
        pthread_join(wt[i], NULL);
        pthread_join(tt[i], NULL);
        rounds += w[i].rounds;
        toggles += t[i].toggles;
        failures += w[i].failures + t[i].failures;
        wrong += w[i].wrong;
        if (w[i].rounds < min_rounds) min_rounds = (int)w[i].rounds;
    }
    printf("toggle%s: %.1f s, %ld rounds, %ld toggles\n", destroys ? " with destroys" : "", seconds, rounds, toggles);
    CHECK(failures == 0, "toggle: every call of the workers and togglers succeeded");
    CHECK(wrong == 0, "toggle: every round read back the values its ordered work wrote");
    CHECK(min_rounds >= 5 && toggles >= 20, "toggle: every worker ran rounds while the detector was toggled");
    CHECK_EQ_RESULT(gf_race_check_enable(sh.dev, GF_RACE_CHECK_ON), GF_OK);
    before = races_of(sh.dev);
    if (!CHECK(before == 0, destroys ? "toggle: D1: no race reported for correct programs that also destroy synchronized buffers while the detector is toggled"
                                     : "toggle: no race reported for correctly ordered programs (copies, fills, kernels, events, barriers) while the detector was toggled"))
        print_reports(sh.dev);
    {   /* the detector still works once left on: a real race is seen, named by both sides */
        gf_stream *x = stream_named(sh.dev, "after x"), *y = stream_named(sh.dev, "after y");
        gf_buffer *b = NULL;
        unsigned char host[256];
        gf_buffer_create(sh.dev, 256, &b);
        gf_fill_async(x, b, 0, 1, 256);
        gf_copy_to_host_async(y, host, b, 0, 256);
        gf_device_synchronize(sh.dev);
        CHECK(races_of(sh.dev) == before + 1 && (before >= GF_RACE_REPORTS || report_names(sh.dev, "written by fill", "after x", "read by copy-to-host", "after y")),
              "toggle: afterwards a real race is reported once, naming both streams and both operations");
        gf_buffer_destroy(b);
        gf_stream_destroy(x);
        gf_stream_destroy(y);
    }
    if (mod) gf_module_destroy(mod);
    gf_device_close(sh.dev);
}
static void test_toggle_threads(void)   /* RACES_TOGGLE_SECONDS: the whole time, split in two */
{
    double seconds = env_seconds("RACES_TOGGLE_SECONDS", backend == GF_BACKEND_STUB ? 2.0 : 1.0);
    toggle_program(seconds / 2, 0);
    toggle_program(seconds / 2, 1);
}

/* ---- D1: a buffer destroyed after a synchronize the detector did not see (it was off) --------- */
static void test_destroy_after_toggle(void)
{
    gf_device *dev = fresh_device();
    gf_stream *s;
    gf_buffer *tmp = NULL;
    if (!CHECK(dev != NULL, "toggle destroy: device")) return;
    s = stream_named(dev, "toggled");
    gf_buffer_create(dev, 256, &tmp);
    gf_fill_async(s, tmp, 0, 1, 256);
    gf_race_check_enable(dev, 0);
    gf_stream_synchronize(s);                      /* not seen: the detector is off */
    gf_race_check_enable(dev, GF_RACE_CHECK_ON);   /* on again: the fill is from before, forgotten */
    gf_buffer_destroy(tmp);                        /* after the synchronize: correct */
    if (!CHECK(races_of(dev) == 0, "toggle destroy: D1: destroying a buffer synchronized while the detector was off is no race"))
        print_reports(dev);
    /* the same with the detector on throughout: the control */
    tmp = NULL;   /* a create that fails early leaves its out alone: no stale handle */
    gf_buffer_create(dev, 256, &tmp);
    gf_fill_async(s, tmp, 0, 1, 256);
    gf_stream_synchronize(s);
    gf_buffer_destroy(tmp);
    gf_stream_destroy(s);
    gf_device_close(dev);
}

/* ---- more streams alive at once than anything starts with: a chain of 100 ---------------------- */
static void test_many_streams(void)
{
    enum { NS = 100 };
    gf_device *dev = fresh_device();
    gf_stream *s[NS];
    gf_event *ev = NULL;
    gf_buffer *b = NULL;
    unsigned char host[512];
    char label[32];
    int i, ok = 1;
    if (!CHECK(dev != NULL, "many streams: device")) return;
    for (i = 0; i < NS; i++) {
        snprintf(label, sizeof label, "chain %d", i);
        if (!(s[i] = stream_named(dev, label))) ok = 0;
    }
    if (!CHECK(ok, "many streams: 100 streams made")) { for (i = 0; i < NS; i++) if (s[i]) gf_stream_destroy(s[i]); gf_device_close(dev); return; }
    gf_buffer_create(dev, 512, &b);
    gf_event_create(dev, 0, &ev);
    gf_fill_async(s[0], b, 0, 0, 512);
    for (i = 1; i < NS; i++) {   /* each link waits for the one before, then writes the buffer */
        gf_event_record(ev, s[i - 1]);
        gf_stream_wait_event(s[i], ev);
        gf_fill_async(s[i], b, 0, (unsigned char)i, 512);
    }
    if (!CHECK(races_of(dev) == 0, "many streams: a chain of 100 streams ordered by events has no race"))
        print_reports(dev);
    gf_copy_to_host_async(s[3], host, b, 0, 512);   /* 'chain 3' has not seen 'chain 99''s fill */
    CHECK(races_of(dev) == 1 && report_names(dev, "written by fill", "chain 99", "read by copy-to-host", "chain 3"),
          "many streams: the last link's write and an early stream's read race, and the report names both");
    gf_device_synchronize(dev);
    gf_event_destroy(ev);
    gf_buffer_destroy(b);
    for (i = 0; i < NS; i++) gf_stream_destroy(s[i]);
    gf_device_close(dev);
}

/* ---- more byte ranges in one buffer than it keeps (GF__RACE_ACCESSES 256) ---------------------- */
enum { RANGES = 600, RANGE_BYTES = 8 };
static void ranges_program(int variant)
{
    gf_device *dev = fresh_device();
    gf_stream *wr, *rd;
    gf_buffer *b = NULL;
    gf_event *ev = NULL;
    static unsigned char host[RANGES * RANGE_BYTES + 64];
    int i, first = variant == 2 ? 1 : 0;
    if (!CHECK(dev != NULL, "ranges: device")) return;
    wr = stream_named(dev, "ranges w");
    rd = stream_named(dev, "ranges r");
    gf_buffer_create(dev, sizeof host, &b);
    gf_event_create(dev, 0, &ev);
    if (variant == 2) gf_fill_async(wr, b, 0, 0xee, RANGE_BYTES);          /* range 0 first, then 600 others */
    for (i = first; i < RANGES + first; i++) gf_fill_async(wr, b, (size_t)i * RANGE_BYTES, (unsigned char)i, RANGE_BYTES);
    switch (variant) {
    case 0:   /* correct: the reader waits for the writer */
        gf_event_record(ev, wr);
        gf_stream_wait_event(rd, ev);
        for (i = 0; i < RANGES; i++) gf_copy_to_host_async(rd, host + (size_t)i * RANGE_BYTES, b, (size_t)i * RANGE_BYTES, RANGE_BYTES);
        gf_stream_wait_stream(wr, rd);
        for (i = 0; i < RANGES; i++) gf_fill_async(wr, b, (size_t)i * RANGE_BYTES, 0, RANGE_BYTES);   /* after the reads */
        gf_device_synchronize(dev);
        if (!CHECK(races_of(dev) == 0, "ranges: 600 ranges written, then read after an event, then rewritten: no race"))
            print_reports(dev);
        CHECK(host[0] == 0 && host[(RANGES - 1) * RANGE_BYTES] == (unsigned char)(RANGES - 1), "ranges: the reads saw the writes");
        break;
    case 1:   /* racy: the reader reads the newest range unordered */
        gf_copy_to_host_async(rd, host, b, (size_t)(RANGES - 1) * RANGE_BYTES, RANGE_BYTES);
        CHECK(races_of(dev) == 1 && report_names(dev, "written by fill", "ranges w", "read by copy-to-host", "ranges r"),
              "ranges: a read of the newest of 600 written ranges, unordered, is one race naming both sides");
        break;
    case 2:   /* racy: the reader reads the oldest range unordered */
        gf_copy_to_host_async(rd, host, b, 0, RANGE_BYTES);
        CHECK(races_of(dev) == 1 && report_names(dev, "written by fill", "ranges w", "read by copy-to-host", "ranges r"),
              "ranges: D4: a read of the oldest of 601 written ranges, unordered, is a race too");
        break;
    }
    gf_device_synchronize(dev);
    gf_event_destroy(ev);
    gf_buffer_destroy(b);
    gf_stream_destroy(wr);
    gf_stream_destroy(rd);
    gf_device_close(dev);
}
static void test_many_ranges(void) { ranges_program(0); ranges_program(1); ranges_program(2); }

/* ---- more buffers, and more distinct races than the report keeps (GF_RACE_REPORTS 8) ----------- */
static void test_many_races(void)
{
    enum { NB = 1000, PAIRS = 12 };
    gf_device *dev = fresh_device();
    gf_stream *s1, *s2, *w[PAIRS], *r[PAIRS];
    gf_buffer **bufs;
    gf_event *ev = NULL;
    gf_race_info info;
    static unsigned char host[NB][16];
    char lw[32], lr[32];
    int i, k, named = 0, round;
    if (!CHECK(dev != NULL, "many races: device")) return;
    bufs = (gf_buffer **)calloc(NB, sizeof *bufs);
    s1 = stream_named(dev, "many 1");
    s2 = stream_named(dev, "many 2");
    gf_event_create(dev, 0, &ev);
    for (i = 0; i < NB; i++) { gf_buffer_create(dev, 16, &bufs[i]); gf_fill_async(s1, bufs[i], 0, 1, 16); }
    gf_event_record(ev, s1);
    gf_stream_wait_event(s2, ev);
    for (i = 0; i < NB; i++) gf_copy_to_host_async(s2, host[i], bufs[i], 0, 16);
    gf_device_synchronize(dev);
    if (!CHECK(races_of(dev) == 0, "many races: 1000 buffers, each written then read after an event: no race"))
        print_reports(dev);
    for (k = 0; k < PAIRS; k++) {
        snprintf(lw, sizeof lw, "pair %02d w", k);
        snprintf(lr, sizeof lr, "pair %02d r", k);
        w[k] = stream_named(dev, lw);
        r[k] = stream_named(dev, lr);
    }
    for (round = 0; round < 2; round++)   /* the second round repeats every race: no new ones */
        for (k = 0; k < PAIRS; k++) {
            gf_fill_async(w[k], bufs[k], 0, 2, 16);
            gf_copy_to_host_async(r[k], host[k], bufs[k], 0, 16);
        }
    gf_device_synchronize(dev);
    memset(&info, 0, sizeof info);
    gf_race_report(dev, &info);
    CHECK(info.count == PAIRS && info.reports == GF_RACE_REPORTS, "many races: 12 distinct races counted once each, 8 of them kept as text");
    for (k = 0; k < GF_RACE_REPORTS && k < info.reports; k++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "written by fill on 'pair %02d w'", k);
        snprintf(b, sizeof b, "read by copy-to-host on 'pair %02d r'", k);
        named += strstr(info.report[k], a) && strstr(info.report[k], b);
    }
    CHECK(named == GF_RACE_REPORTS, "many races: the kept reports are the first 8, each naming its write and its read with their streams");
    for (k = 0; k < PAIRS; k++) { gf_stream_destroy(w[k]); gf_stream_destroy(r[k]); }
    for (i = 0; i < NB; i++) gf_buffer_destroy(bufs[i]);
    free(bufs);
    gf_event_destroy(ev);
    gf_stream_destroy(s1);
    gf_stream_destroy(s2);
    gf_device_close(dev);
}

/* ---- labels as long as a stream keeps (63 characters) ----------------------------------------- */
static void labels_program(const char *l1, const char *l2, int want_named)
{
    gf_device *dev = fresh_device();
    gf_stream *s1, *s2;
    gf_buffer *b = NULL;
    int i;
    char what[200];
    if (!CHECK(dev != NULL, "labels: device")) return;
    s1 = stream_named(dev, l1);
    s2 = stream_named(dev, l2);
    gf_buffer_create(dev, 1024, &b);
    for (i = 0; i < 2; i++) {   /* the same write-write race, twice: each side comes first once */
        gf_fill_async(s1, b, 0, 1, 600);
        gf_fill_async(s2, b, 500, 2, 500);
    }
    gf_device_synchronize(dev);
    snprintf(what, sizeof what, "labels: %s%zu-character labels: one race however often it repeats",
             want_named ? "D5: " : "", strlen(gf_stream_label(s1)));
    if (!CHECK(races_of(dev) == 1, what)) print_reports(dev);
    if (want_named && !CHECK(report_names(dev, "written by fill", gf_stream_label(s1), "written by fill", gf_stream_label(s2)),
                             "labels: D5: the report names both streams by their whole labels"))
        print_reports(dev);
    gf_buffer_destroy(b);
    gf_stream_destroy(s1);
    gf_stream_destroy(s2);
    gf_device_close(dev);
}
static void test_long_labels(void)
{
    char l1[64], l2[64];
    labels_program("left", "right", 0);   /* the control */
    memset(l1, 'a', 63); l1[63] = 0; l1[62] = '1';
    memset(l2, 'a', 63); l2[63] = 0; l2[62] = '2';
    labels_program(l1, l2, 1);
}

/* ---- an access outlives its kernel's module: the report still names the launch ----------------- */
/* The detector keeps each operation's name as its own text (interned once per name, not copied
   per access): an access made by a kernel whose module is already destroyed is reported by the
   kernel's name (under ASan, a name that pointed into the module would be a use after free). */
static void test_kernel_gone(void)
{
    gf_device *dev = fresh_device();
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_stream *w, *r;
    gf_buffer *b = NULL;
    gf_launch_dims d;
    gf_arg a[3];
    uint32_t n = 16, v = 5;
    unsigned char host[64];
    if (!CHECK(dev != NULL, "kernel gone: device")) return;
    if (!(k = fill_u32_kernel(dev, &mod, "kernel gone"))) { gf_device_close(dev); return; }
    w = stream_named(dev, "kernel w");
    r = stream_named(dev, "kernel r");
    gf_buffer_create(dev, 64, &b);
    fill_u32_args(&d, a, b, &n, &v);
    CHECK_EQ_RESULT(gf_launch(w, k, d, a, 3), GF_OK);
    gf_module_destroy(mod);                     /* never waits: the code goes after the launch */
    gf_copy_to_host_async(r, host, b, 0, 64);   /* unordered with the launch */
    if (!CHECK(races_of(dev) == 1 && report_names(dev, "written by launch 'fill_u32'", "kernel w", "read by copy-to-host", "kernel r"),
               "kernel gone: a launch's write, its module destroyed since, and an unordered read: one race naming the launch"))
        print_reports(dev);
    gf_device_synchronize(dev);
    gf_buffer_destroy(b);
    gf_stream_destroy(w);
    gf_stream_destroy(r);
    gf_device_close(dev);
}

/* ---- names: a kernel's name of 127 characters, and names that found no memory --------------- */
/* The detector keeps each distinct name once (interned, per device). A report shows 63
   characters of an operation's name, as when every access kept a 64-byte copy, so that a
   127-character kernel name leaves the report's advice whole; a stream whose label found no
   host memory at its first use is named at a later one (not "a stream" for its life). */
static void names_kernel(const gf_kernel_ctx *ctx, void *const *args) { (void)ctx; (void)args; }
static void test_names(void)
{
    static const gf_stub_param param = { "out", "GF_GLOBAL uint32_t *", sizeof(void *) };
    static char long_name[128];
    gf_stub_kernel kernel;
    gf_module_desc md;
    gf_device *dev;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_stream *w, *r;
    gf_buffer *b = NULL;
    gf_launch_dims d;
    gf_arg a;
    gf_race_info info;
    unsigned char host[64];
    char want[120], what[200];
    int n, unnamed = 0;
    if (backend != GF_BACKEND_STUB) { SKIP("names: stub kernels (the stub's own module)"); return; }
    memset(long_name, 'k', 127);
    memset(&kernel, 0, sizeof kernel);
    kernel.name = long_name; kernel.fn = names_kernel; kernel.param_count = 1; kernel.params = &param;
    memset(&md, 0, sizeof md);
    md.stub_kernels = &kernel; md.stub_kernel_count = 1;
    if (!CHECK((dev = fresh_device()) != NULL, "names: device")) return;
    CHECK_EQ_RESULT(gf_module_load(dev, &md, &mod), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, long_name, &k), GF_OK);
    w = stream_named(dev, "names w");
    r = stream_named(dev, "names r");
    gf_buffer_create(dev, 64, &b);
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    d.block[0] = d.block[1] = d.block[2] = 1;
    a.value = 0; a.size = 0; a.buffer = b;
    if (k) gf_launch(w, k, d, &a, 1);
    gf_copy_to_host_async(r, host, b, 0, 64);   /* unordered with the launch */
    memset(&info, 0, sizeof info);
    gf_race_report(dev, &info);
    snprintf(want, sizeof want, "written by launch '%.55s on 'names w'", long_name);   /* 63 characters of the operation */
    if (!CHECK(info.count == 1 && strstr(info.report[0], want) && strstr(info.report[0], "make 'names r' wait on it)"),
               "names: a launch of a kernel named with 127 characters races: the report shows 63 characters of it and its advice whole"))
        print_reports(dev);
    gf_device_synchronize(dev);
    gf_buffer_destroy(b);
    gf_stream_destroy(w);
    gf_stream_destroy(r);
    gf_module_destroy(mod);
    gf_device_close(dev);

    for (n = 1; n <= 40; n++) {   /* each host allocation in turn fails while two streams are first used */
        gf_buffer *b2 = NULL;
        char spec[32];
        if (!(dev = fresh_device())) continue;
        w = stream_named(dev, "label w");
        r = stream_named(dev, "label r");
        gf_buffer_create(dev, 64, &b);
        gf_buffer_create(dev, 64, &b2);
        snprintf(spec, sizeof spec, "alloc:%d", n);
        gf_faults_set(spec);
        gf_fill_async(w, b, 0, 1, 64);
        gf_fill_async(r, b2, 0, 1, 64);
        gf_faults_set(NULL);
        gf_device_synchronize(dev);
        gf_fill_async(w, b, 0, 2, 64);
        gf_copy_to_host_async(r, host, b, 0, 64);   /* unordered with the fill */
        if (races_of(dev) != 1 || !report_names(dev, "written by fill", "label w", "read by copy-to-host", "label r")) {
            if (!unnamed++) { printf("    alloc:%d:\n", n); print_reports(dev); }
        }
        gf_device_synchronize(dev);
        gf_buffer_destroy(b);
        gf_buffer_destroy(b2);
        gf_stream_destroy(w);
        gf_stream_destroy(r);
        gf_device_close(dev);
    }
    snprintf(what, sizeof what, "names: the 1st to 40th host allocation failed at two streams' first use: each later race names both streams "
             "(%d did not)", unnamed);
    CHECK(unnamed == 0, what);
}

/* ---- a 2D copy of more rows than one operation reports (GF__RACE_MAX_USES 64) ------------------ */
static void rows_program(size_t read_row, int known_defect)
{
    enum { ROWS = 100, WIDTH = 8, PITCH = 16 };
    gf_device *dev = fresh_device();
    gf_stream *wr, *rd;
    gf_buffer *b = NULL;
    static unsigned char src[ROWS * WIDTH], host[WIDTH];
    gf_copy_2d c;
    char what[200];
    if (!CHECK(dev != NULL, "rows: device")) return;
    wr = stream_named(dev, "rows w");
    rd = stream_named(dev, "rows r");
    gf_buffer_create(dev, ROWS * PITCH, &b);
    memset(&c, 0, sizeof c);
    c.dst = b; c.dst_pitch = PITCH;
    c.src_host = src; c.src_pitch = WIDTH;
    c.width = WIDTH; c.height = ROWS;
    CHECK_EQ_RESULT(gf_copy_2d_async(wr, &c), GF_OK);
    gf_copy_to_host_async(rd, host, b, read_row * PITCH, WIDTH);   /* unordered */
    snprintf(what, sizeof what, "rows: %sa read of row %zu of a 100-row 2D copy, unordered, is a race naming both sides",
             known_defect ? "D6: " : "", read_row);
    CHECK(races_of(dev) == 1 && report_names(dev, "written by 2D copy", "rows w", "read by copy-to-host", "rows r"), what);
    gf_device_synchronize(dev);
    gf_buffer_destroy(b);
    gf_stream_destroy(wr);
    gf_stream_destroy(rd);
    gf_device_close(dev);
}
static void test_many_rows(void) { rows_program(5, 0); rows_program(90, 1); }

/* ---- D3: an event recorded again, on a stream with a shorter clock --------------------------- */
/* A record copies the recording stream's clock into the event; entries past that clock's end
   must not keep what an earlier record (on a stream with a later slot) put there. */
static void reuse_program(int how)
{
    gf_device *dev = fresh_device();
    gf_stream *lo, *hi, *w, *other;
    gf_buffer *x = NULL, *y = NULL;
    gf_event *ev = NULL, *ev2 = NULL;
    unsigned char host[256];
    static const char *names[3] = { "a fresh event (control)", "gf_event_record again", "gf_stream_wait_stream's pooled events" };
    char what[200];
    if (!CHECK(dev != NULL, "reuse: device")) return;
    lo = stream_named(dev, "lo");
    hi = stream_named(dev, "hi");
    w = stream_named(dev, "waiter");
    other = stream_named(dev, "other");
    gf_buffer_create(dev, 256, &x);
    gf_buffer_create(dev, 256, &y);
    gf_event_create(dev, 0, &ev);
    gf_event_create(dev, 0, &ev2);
    gf_fill_async(lo, y, 0, 1, 256);        /* lo takes the first slot of the clocks */
    gf_fill_async(hi, x, 0, 2, 256);        /* hi a later one; it writes x */
    switch (how) {
    case 0:   /* the control: hi's record is another event */
        gf_event_record(ev2, hi);
        gf_event_record(ev, lo);
        gf_stream_wait_event(w, ev);
        break;
    case 1:   /* one event: recorded on hi, then again on lo; w waits for the latest record (lo's) */
        gf_event_record(ev, hi);
        gf_event_record(ev, lo);
        gf_stream_wait_event(w, ev);
        break;
    case 2:   /* the same through the device's event pool */
        gf_stream_wait_stream(other, hi);
        gf_stream_wait_stream(w, lo);
        break;
    }
    gf_copy_to_host_async(w, host, x, 0, 256);   /* nothing orders hi's fill before this read */
    snprintf(what, sizeof what, "reuse: %swith %s, a read that waited only for 'lo' races 'hi''s write",
             how ? "D3: " : "", names[how]);
    CHECK(races_of(dev) == 1 && report_names(dev, "written by fill", "hi", "read by copy-to-host", "waiter"), what);
    gf_device_synchronize(dev);
    gf_event_destroy(ev);
    gf_event_destroy(ev2);
    gf_buffer_destroy(x);
    gf_buffer_destroy(y);
    gf_stream_destroy(lo);
    gf_stream_destroy(hi);
    gf_stream_destroy(w);
    gf_stream_destroy(other);
    gf_device_close(dev);
}
static void test_event_reuse(void) { reuse_program(0); reuse_program(1); reuse_program(2); }

/* ---- D2: a graph's launch arguments changed after its capture (set_kernel_args, update) -------- */
static gf_graph *capture_fill_u32(gf_stream *s, gf_kernel *k, gf_buffer *b, uint32_t v)
{
    uint32_t n = 16;
    gf_launch_dims d;
    gf_arg a[3];
    gf_graph *g = NULL;
    fill_u32_args(&d, a, b, &n, &v);
    if (gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) != GF_OK) return NULL;
    if (gf_launch(s, k, d, a, 3) != GF_OK) { gf_stream_end_capture(s, &g); if (g) gf_graph_destroy(g); return NULL; }
    return gf_stream_end_capture(s, &g) == GF_OK ? g : NULL;
}
static int set_fill_u32(gf_graph *g, gf_buffer *b, uint32_t v)
{
    uint32_t n = 16;
    gf_arg a[3];
    fill_u32_args(NULL, a, b, &n, &v);
    return gf_graph_set_kernel_args(g, 0, a, 3) == GF_OK;
}
/* how: 0 set_kernel_args to B; 1 gf_graph_update from a graph that writes B. racy: 0, another
   stream writes A (which the graph no longer touches): correct; 1, another stream reads B. */
static void graph_args_program(int how, int racy)
{
    gf_device *dev = fresh_device();
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_stream *gs, *os;
    gf_buffer *a = NULL, *b = NULL;
    gf_graph *g = NULL, *h = NULL;
    unsigned char host[64];
    char what[240];
    if (!CHECK(dev != NULL, "graph args: device")) return;
    if (!(k = fill_u32_kernel(dev, &mod, "graph args"))) { gf_device_close(dev); return; }
    gs = stream_named(dev, "graph");
    os = stream_named(dev, "other");
    gf_buffer_create(dev, 64, &a);
    gf_buffer_create(dev, 64, &b);
    g = capture_fill_u32(gs, k, a, 1);     /* captured writing A, with the detector on */
    if (how == 0) CHECK(g && set_fill_u32(g, b, 2), "graph args: the launch now writes B");
    else {
        h = capture_fill_u32(gs, k, b, 2);
        CHECK(g && h && gf_graph_update(g, h) == GF_OK, "graph args: g updated from a graph that writes B");
    }
    gf_graph_launch(g, gs);
    if (!racy) gf_fill_async(os, a, 0, 7, 64);              /* A: nothing else uses it now */
    else gf_copy_to_host_async(os, host, b, 0, 64);         /* B: the graph's launch writes it */
    gf_device_synchronize(dev);
    snprintf(what, sizeof what, "graph args: D2: after %s, %s",
             how ? "gf_graph_update" : "gf_graph_set_kernel_args",
             racy ? "reading B unordered with the launch that writes it is a race" : "writing A, which the launch no longer touches, is no race");
    if (!CHECK(races_of(dev) == (uint64_t)racy, what)) print_reports(dev);
    if (racy) CHECK(report_names(dev, "launch 'fill_u32'", "graph", "read by copy-to-host", "other"), "graph args: D2: and the report names the launch and the read");
    if (g) gf_graph_destroy(g);
    if (h) gf_graph_destroy(h);
    gf_buffer_destroy(a);
    gf_buffer_destroy(b);
    gf_stream_destroy(gs);
    gf_stream_destroy(os);
    gf_module_destroy(mod);
    gf_device_close(dev);
}
#ifdef RACES_HAVE_FORK
/* The graph keeps the buffers its capture saw, as pointers: after set_kernel_args moved the
   launch off A and A was destroyed, a launch with the detector on reads A's freed gf_buffer
   (ASan: heap-use-after-free). Run in a child process so that the rest of this file still runs;
   without ASan the child may not notice. */
static void graph_args_freed_child(void)
{
    gf_device *dev = fresh_device();
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_stream *gs;
    gf_buffer *a = NULL, *b = NULL;
    gf_graph *g;
    if (!dev || gf_module_load(dev, &tk_module, &mod) != GF_OK || gf_kernel_get(mod, "fill_u32", &k) != GF_OK) _exit(3);
    gs = stream_named(dev, "graph");
    gf_buffer_create(dev, 64, &a);
    gf_buffer_create(dev, 64, &b);
    if (!(g = capture_fill_u32(gs, k, a, 1)) || !set_fill_u32(g, b, 2)) _exit(4);
    gf_buffer_destroy(a);                 /* the graph no longer uses A */
    if (gf_graph_launch(g, gs) != GF_OK || gf_stream_synchronize(gs) != GF_OK) _exit(5);
    gf_graph_destroy(g);
    gf_buffer_destroy(b);
    gf_stream_destroy(gs);
    gf_module_destroy(mod);
    gf_device_close(dev);
    _exit(0);
}
#endif
static void test_graph_args(void)
{
    graph_args_program(0, 0);
    graph_args_program(0, 1);
    graph_args_program(1, 0);
    graph_args_program(1, 1);
#ifdef RACES_HAVE_FORK
    if (backend == GF_BACKEND_STUB) {
        pid_t pid;
        int status = 0;
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid == 0) graph_args_freed_child();
        if (CHECK(pid > 0, "graph args: fork") && waitpid(pid, &status, 0) == pid)
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "graph args: D2: a launch after the buffer it was captured with is destroyed reads no freed memory (ASan)");
    }
#endif
}

/* ---- the hang ---------------------------------------------------------------------------------- */
typedef struct { char text[8192]; int logged; pthread_mutex_t m; unsigned delay_ms; } hang_log;   /* delay_ms: a slow logger */
static void hang_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    hang_log *l = (hang_log *)user;
    (void)level;
    if (code != GF_TIMEOUT || !strstr(message, "GPUFLOW_HANG_MS")) return;
    pthread_mutex_lock(&l->m);
    if (!l->logged++) snprintf(l->text, sizeof l->text, "%s", message);
    pthread_mutex_unlock(&l->m);
    if (l->delay_ms) th_sleep_ms(l->delay_ms);
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
    CHECK(th_gate_wait_entered(&gate, 1, TH_WAIT_MS), "hang: 'held' runs its callback");   /* what the report must see */
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

/* Waits whose hang report was empty or missing (an outside review): a stream's destroy (the
   stream had left the device's list before its wait, so the report listed nothing), a
   _timeout synchronize longer than GPUFLOW_HANG_MS (no report at all), and a device's close
   waiting for an async waiter's callback (none either). */
static void hang_log_reset(hang_log *l) { pthread_mutex_lock(&l->m); l->logged = 0; l->text[0] = 0; pthread_mutex_unlock(&l->m); }
static int hang_log_has(hang_log *l, const char *a, const char *b)
{
    int yes;
    pthread_mutex_lock(&l->m);
    yes = l->logged == 1 && strstr(l->text, a) && strstr(l->text, b);
    if (!yes) printf("hang log (%d): %s\n", l->logged, l->text);
    pthread_mutex_unlock(&l->m);
    return yes;
}
static void test_hang_reports_elsewhere(void)
{
    static hang_log log;
    gf_device *dev = NULL;
    gf_stream *s;
    gf_event *ev = NULL;
    th_gate gate;
    opener o;
    pthread_t t;
    int k;
    pthread_mutex_init(&log.m, NULL);
    set_env("GPUFLOW_HANG_MS", "50");
    if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) return;
    set_env("GPUFLOW_HANG_MS", "");
    gf_set_logger(hang_logger, &log);
    o.ms = 300;
    /* a destroy */
    th_gate_init(&gate);
    o.gate = &gate;
    s = stream_named(dev, "doomed");
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
    CHECK(th_gate_wait_entered(&gate, 1, TH_WAIT_MS), "hang, destroy: the callback runs");
    pthread_create(&t, NULL, open_later, &o);
    gf_stream_destroy(s);   /* waits for the callback */
    pthread_join(t, NULL);
    CHECK(hang_log_has(&log, "stream 'doomed'", "a host callback is running now"), "hang, destroy: the report shows the stream being destroyed");
    th_gate_destroy(&gate);
    /* bounded waits past the hang bound: an event's (k 0), then a stream's */
    s = stream_named(dev, "slow");
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &ev), GF_OK);
    for (k = 0; k < 2; k++) {
        hang_log_reset(&log);
        th_gate_init(&gate);
        o.gate = &gate;
        CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
        if (k == 0) CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
        CHECK(th_gate_wait_entered(&gate, 1, TH_WAIT_MS), "hang, bounded: the callback runs");
        pthread_create(&t, NULL, open_later, &o);
        CHECK_EQ_RESULT(k == 0 ? gf_event_synchronize_timeout(ev, TH_WAIT_MS) : gf_stream_synchronize_timeout(s, TH_WAIT_MS), GF_OK);
        pthread_join(t, NULL);
        CHECK(hang_log_has(&log, k == 0 ? "gf_event_synchronize_timeout: waiting for an event recorded on 'slow'"
                                        : "gf_stream_synchronize_timeout: waiting for stream 'slow'", "a host callback is running now"),
              k == 0 ? "hang, bounded: gf_event_synchronize_timeout past GPUFLOW_HANG_MS reports the state"
                     : "hang, bounded: gf_stream_synchronize_timeout past GPUFLOW_HANG_MS reports the state");
        th_gate_destroy(&gate);
    }
    /* a bounded wait's report comes out of its bound (timeout review: the report's time, here a
       logger that takes 300 ms, was added on top: 50 + 300 + 350 ms for a bound of 400) */
    {
        double t0, took;
        hang_log_reset(&log);
        log.delay_ms = 300;
        th_gate_init(&gate);
        CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
        CHECK(th_gate_wait_entered(&gate, 1, TH_WAIT_MS), "hang, bounded: the callback runs");
        t0 = th_now_ms();
        CHECK_FAIL(gf_stream_synchronize_timeout(s, 400), GF_TIMEOUT);
        took = th_now_ms() - t0;
        CHECK(took < 600, "hang, bounded: a wait that logs its report still ends at its bound");
        if (took >= 600) printf("  the 400 ms wait took %.0f ms\n", took);
        log.delay_ms = 0;
        th_gate_open(&gate);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        th_gate_destroy(&gate);
    }
    /* a close behind an async waiter's callback */
    hang_log_reset(&log);
    th_gate_init(&gate);
    o.gate = &gate;
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(ev, th_gate_cb, &gate, NULL), GF_OK);
    CHECK(th_gate_wait_entered(&gate, 1, TH_WAIT_MS), "hang, close: the waiter's callback runs");
    gf_event_destroy(ev);
    gf_stream_destroy(s);
    pthread_create(&t, NULL, open_later, &o);
    gf_device_close(dev);   /* waits for the callback */
    pthread_join(t, NULL);
    CHECK(hang_log_has(&log, "gf_device_close: waiting for the async waiter", "its callback is running now"),
          "hang, close: a close waiting for an async waiter's callback reports the state");
    th_gate_destroy(&gate);
    gf_set_logger(NULL, NULL);
}

/* A synchronous copy racing a stream's fill: the advice named the device's internal stream
   ("make 'gpuflow/sync' wait on it"), which the program cannot reach (an outside review). */
static void test_sync_copy_advice(void)
{
    gf_device *dev = NULL;
    gf_stream *x = NULL;
    gf_buffer *b = NULL;
    gf_race_info info;
    unsigned char host[64];
    if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) return;
    gf_race_check_enable(dev, GF_RACE_CHECK_ON);
    x = stream_named(dev, "x");
    if (CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &b), GF_OK)) {
        gf_fill_async(x, b, 0, 1, 64);
        gf_copy_to_host(host, b, 0, 64);   /* no wait for x */
        gf_device_synchronize(dev);
        memset(&info, 0, sizeof info);
        gf_race_report(dev, &info);
        CHECK(info.count == 1 && info.reports && strstr(info.report[0], "by a synchronous copy-to-host") &&
              strstr(info.report[0], "synchronize 'x'") && !strstr(info.report[0], "gpuflow/sync"),
              "a synchronous copy's race: the advice is to synchronize the other stream, not to order an internal one");
        if (info.reports) printf("  %s\n", info.report[0]);
        gf_buffer_destroy(b);
    }
    gf_stream_destroy(x);
    gf_device_close(dev);
}

/* A host wait whose copy of a clock found no memory taught the host nothing, and the race it
   then made up read as any other (a chaos soak under alloc faults): it says it may not be one. */
static void test_lost_ordering(void)
{
    gf_device *dev = NULL;
    gf_stream *x, *y;
    gf_buffer *b = NULL;
    gf_race_info info;
    if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) return;
    gf_race_check_enable(dev, GF_RACE_CHECK_ON);
    x = stream_named(dev, "x");
    y = stream_named(dev, "y");
    if (CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &b), GF_OK)) {
        CHECK_EQ_RESULT(gf_fill_async(x, b, 0, 1, 64), GF_OK);
        CHECK_EQ_RESULT(gf_faults_set("alloc:1+"), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(x), GF_OK);   /* it waits; its copy of x's clock finds no memory */
        CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(y, b, 0, 2, 64), GF_OK);   /* after x, by the host's wait: no race */
        CHECK_EQ_RESULT(gf_stream_synchronize(y), GF_OK);
        memset(&info, 0, sizeof info);
        gf_race_report(dev, &info);
        CHECK(info.count == 1 && info.reports && strstr(info.report[0], "may not be a race"),
              "a race reported after the detector lost an ordering to memory says it may not be one");
        if (info.reports) printf("  %s\n", info.report[0]);
        gf_buffer_destroy(b);
    }
    gf_stream_destroy(x);
    gf_stream_destroy(y);
    gf_device_close(dev);
}

int main(int argc, char **argv)
{
    gf_device *probe = NULL;
    gf_result r;
    int i;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!(backend_name = th_backend_arg(argc, argv, &backend))) return 2;
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
            memset(&info, 0, sizeof info);   /* read below even if the call failed */
            CHECK_EQ_RESULT(gf_race_report(e.dev, &info), GF_OK);
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
    test_toggle_threads();
    test_destroy_after_toggle();
    test_many_streams();
    test_many_ranges();
    test_many_races();
    test_long_labels();
    test_kernel_gone();
    test_names();
    test_many_rows();
    test_event_reuse();
    test_graph_args();
    test_hang_report();
    test_hang_reports_elsewhere();
    test_sync_copy_advice();
    test_lost_ordering();
    return th_finish();
}
