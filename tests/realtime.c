/* Frame budgets for real-time programs (issue "For the people who build on gpuflow every
   day"): frames on stream sets, and memory budgets.

     frames   a set's frames begin at gf_stream_set_next and end at gf_stream_set_end_frame or
              the next gf_stream_set_next; gf_stream_set_frames counts them begun, completed
              and in flight without waiting, with the last completed frame's time on the
              device (held frames show it); gf_stream_set_wait_frames returns once at most N
              are in flight, times out while the device holds them, refuses to wait for the
              open frame; a paced loop never has more than N + 1 in flight
     flow frames  every run of a flow is a frame: counted begun, completed and in flight, the
              last completed run's time on the device, waits that pace and time out, a paced
              loop of 200 runs, and a flow that became a graph counting its replays
     budgets  bad descriptions refused; charges, the warn_at crossing and a refusal (callback,
              code, message naming the budget, nothing allocated); figures in
              gf_budget_get_stats and gf_device_memory_stats; a destroy gives the bytes back; a
              budget of another device refused; a budget destroyed before its buffers; the
              trace's counter track

   usage: realtime stub|opencl|cuda|hip */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include <stdlib.h>
#include <unistd.h>

static gf_device *dev;
static const char *backend_name;

static void test_frames(void)
{
    gf_stream_set *set = NULL;
    gf_frame_info fi;
    gf_stream *s = NULL;
    th_gate gates[3];
    int i, ok = 1;
    uint64_t most = 0;
    memset(&fi, 0, sizeof fi);   /* read by the checks after each gf_stream_set_frames, which may have failed */
    CHECK_EQ_RESULT(gf_stream_set_create(dev, 3, "frames", &set), GF_OK);
    if (!set) return;
    CHECK_FAIL(gf_stream_set_end_frame(set), GF_ERROR_INVALID_STATE);   /* none begun */
    CHECK_EQ_RESULT(gf_stream_set_frames(set, &fi), GF_OK);
    CHECK(fi.frames == 0 && fi.in_flight == 0 && fi.last_gpu_ms == 0.0f, "frames: a new set has none");
    /* three frames, each held on the device by a gate */
    for (i = 0; i < 3; i++) {
        th_gate_init(&gates[i]);
        CHECK_EQ_RESULT(gf_stream_set_next(set, (size_t)i, &s), GF_OK);
        if (s) CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gates[i]), GF_OK);
    }
    CHECK_EQ_RESULT(gf_stream_set_frames(set, &fi), GF_OK);
    CHECK(fi.frames == 3 && fi.completed == 0 && fi.in_flight == 3 && fi.open == 1, "frames: three begun, none complete, the last open");
    CHECK_FAIL(gf_stream_set_wait_frames(set, 0, 50), GF_ERROR_INVALID_STATE);   /* would need the open frame */
    CHECK(strstr(gf_last_error(), "gf_stream_set_end_frame") != NULL, "frames: waiting for the open frame says to end it");
    CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
    CHECK_FAIL(gf_stream_set_end_frame(set), GF_ERROR_INVALID_STATE);
    CHECK_FAIL(gf_stream_set_wait_frames(set, 1, 50), GF_TIMEOUT);   /* the device holds them */
    CHECK_FAIL(gf_stream_set_wait_frames(set, -1, 50), GF_ERROR_INVALID_ARGUMENT);
    CHECK(th_gate_wait_entered(&gates[0], 1, TH_WAIT_MS), "frames: frame 0 reached its gate");   /* its start is recorded */
    th_sleep_ms(30);
    th_gate_open(&gates[0]);
    CHECK_EQ_RESULT(gf_stream_set_wait_frames(set, 2, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_frames(set, &fi), GF_OK);
    CHECK(fi.completed >= 1 && fi.in_flight <= 2 && fi.last_frame == 0, "frames: frame 0 completed once its gate opened");
    CHECK(fi.last_gpu_ms >= 20.0f, "frames: its time on the device covers the 30 ms it was held");
    printf("  frame 0: %.2f ms on the device (held at least 30 ms)\n", (double)fi.last_gpu_ms);
    th_gate_open(&gates[1]);
    th_gate_open(&gates[2]);
    CHECK_EQ_RESULT(gf_stream_set_wait_frames(set, 0, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_frames(set, &fi), GF_OK);
    CHECK(fi.completed == 3 && fi.in_flight == 0 && fi.last_frame == 2, "frames: all three complete, the last is frame 2");
    for (i = 0; i < 3; i++) th_gate_destroy(&gates[i]);
    /* a paced loop: at most 2 in flight before each new frame */
    for (i = 3; i < 40 && ok; i++) {
        ok = gf_stream_set_wait_frames(set, 1, TH_WAIT_MS) == GF_OK && gf_stream_set_end_frame(set) != GF_ERROR_INVALID_ARGUMENT;
        ok = ok && gf_stream_set_next(set, (size_t)i, &s) == GF_OK;
        ok = ok && gf_stream_set_frames(set, &fi) == GF_OK;
        if (fi.in_flight > most) most = fi.in_flight;
    }
    CHECK(ok && most <= 3, "frames: a paced loop keeps at most max + 1 in flight (the one just begun)");
    CHECK_EQ_RESULT(gf_stream_set_synchronize(set), GF_OK);
    gf_stream_set_destroy(set);
}

/* ---- frames of a flow: every run is one ---- */
static th_gate *flow_gate;   /* the gate the next run's first task holds its lane on */
static gf_result hold_task(gf_stream *on, void *user) { (void)user; return flow_gate ? gf_stream_add_callback(on, th_gate_cb, flow_gate) : GF_OK; }
static gf_result idle_task(gf_stream *on, void *user) { (void)on; (void)user; return GF_OK; }
static void sleep_cb(void *user, gf_result status);
static gf_result sleep_task(gf_stream *on, void *user);
/* A frame's time on the device leaves out the host's time preparing it: its start was marked
   at gf_stream_set_next, which an idle device passed at once, so 60 ms of host work before a
   5 ms operation read as 65 ms on the device (a review: 45 for a 5 ms kernel). A frame with no
   operation at all reads (about) nothing. */
static void test_frame_time_is_the_devices(void)
{
    gf_stream_set *set = NULL;
    gf_stream *s = NULL;
    gf_frame_info fi;
    memset(&fi, 0, sizeof fi);
    if (!CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "prepared", &set), GF_OK)) return;
    CHECK_EQ_RESULT(gf_stream_set_next(set, 0, &s), GF_OK);
    th_sleep_ms(60);   /* the host prepares the frame */
    if (s) CHECK_EQ_RESULT(gf_stream_add_callback(s, sleep_cb, (void *)(size_t)5), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_wait_frames(set, 0, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_frames(set, &fi), GF_OK);
    CHECK(fi.last_gpu_ms >= 4.0f && fi.last_gpu_ms < 45.0f, "frames: the time on the device is its 5 ms operation, not the 60 ms the host took first");
    printf("  a 5 ms frame prepared for 60 ms: %.2f ms on the device\n", (double)fi.last_gpu_ms);
    CHECK_EQ_RESULT(gf_stream_set_next(set, 1, &s), GF_OK);   /* no operation */
    th_sleep_ms(40);
    CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_wait_frames(set, 0, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_frames(set, &fi), GF_OK);
    CHECK(fi.completed == 2 && fi.last_frame == 1 && fi.last_gpu_ms < 20.0f, "frames: a frame with no operation takes (about) no time on the device");
    gf_stream_set_destroy(set);
}

/* The same for a flow's run: each lane's start is recorded at its first operation, so the
   host's time in a task's function before it is not the device's (the start was marked before
   the tasks' functions ran: 60 ms of host work before a 5 ms operation read as 65 ms). */
static gf_result prepare_then_sleep_task(gf_stream *on, void *user) { th_sleep_ms(60); return gf_stream_add_callback(on, sleep_cb, user); }
static void test_flow_frame_time_is_the_devices(void)
{
    int streams;
    for (streams = 4; streams >= 1; streams -= 3) {   /* 1: the pool gives both lanes one stream (the second's start was marked at once) */
        gf_stream_pool_desc pd;
        gf_flow *flow = NULL;
        gf_stream_pool *pool = NULL;
        gf_frame_info fi;
        gf_task a = 0, b = 0;
        memset(&fi, 0, sizeof fi);
        memset(&pd, 0, sizeof pd);
        pd.count = streams;
        if (!CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK)) return;
        CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &pool), GF_OK);
        CHECK_EQ_RESULT(gf_flow_add(flow, "prepares", prepare_then_sleep_task, (void *)(size_t)5, &a), GF_OK);
        CHECK_EQ_RESULT(gf_flow_add(flow, "queues nothing", idle_task, NULL, &b), GF_OK);   /* a second lane */
        CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
        CHECK_EQ_RESULT(gf_flow_wait_frames(flow, 0, TH_WAIT_MS), GF_OK);
        CHECK_EQ_RESULT(gf_flow_frames(flow, &fi), GF_OK);
        CHECK(fi.completed == 1 && fi.last_gpu_ms >= 4.0f && fi.last_gpu_ms < 45.0f,
              "flow frames: the time on the device is its 5 ms operation, not the 60 ms its task's function took first");
        printf("  a flow's 5 ms run prepared for 60 ms, a pool of %d: %.2f ms on the device\n", streams, (double)fi.last_gpu_ms);
        gf_flow_destroy(flow);
        gf_stream_pool_destroy(pool);
    }
}
/* Two runs on one pool stream at once (a task that runs another flow first): the stream holds
   the outer run's start, still due, when the inner run begins on it; the inner run's start is
   recorded then, so it is timed too (it read 0 ms: no start of its own). */
typedef struct nested_runs { gf_flow *inner; gf_stream_pool *pool; } nested_runs;
static gf_result run_inner_task(gf_stream *on, void *user)
{
    nested_runs *n = (nested_runs *)user;
    (void)on;
    return gf_flow_run(n->inner, n->pool);
}
static void test_flow_frames_share_a_stream(void)
{
    gf_stream_pool_desc pd;
    nested_runs n;
    gf_flow *outer = NULL;
    gf_frame_info fi;
    gf_task t = 0;
    memset(&n, 0, sizeof n);
    memset(&pd, 0, sizeof pd);
    memset(&fi, 0, sizeof fi);
    pd.count = 1;
    if (!CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &n.pool), GF_OK)) return;
    CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &outer), GF_OK);
    CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &n.inner), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(n.inner, "sleeps", sleep_task, (void *)(size_t)5, &t), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(outer, "runs the inner flow", run_inner_task, &n, &t), GF_OK);
    CHECK_EQ_RESULT(gf_flow_run(outer, n.pool), GF_OK);
    CHECK_EQ_RESULT(gf_flow_wait_frames(outer, 0, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_flow_wait_frames(n.inner, 0, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_flow_frames(n.inner, &fi), GF_OK);
    CHECK(fi.completed == 1 && fi.last_gpu_ms >= 4.0f, "flow frames: a run begun on a stream that holds another run's start is timed");
    CHECK_EQ_RESULT(gf_flow_frames(outer, &fi), GF_OK);
    CHECK(fi.completed == 1 && fi.last_gpu_ms >= 4.0f, "flow frames: the outer run's time covers the inner run's operation");
    gf_flow_destroy(outer);
    gf_flow_destroy(n.inner);
    gf_stream_pool_destroy(n.pool);
}

static void test_flow_frames(void)
{
    gf_flow *flow = NULL;
    gf_stream_pool *pool = NULL;
    gf_frame_info fi;
    gf_task a = 0, b = 0, c = 0;   /* 0: no flow's task, refused if an add failed */
    th_gate gates[3];
    int i, ok = 1;
    uint64_t most = 0;
    memset(&fi, 0, sizeof fi);   /* read by the checks after each gf_flow_frames, which may have failed */
    if (!CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK)) return;
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "hold", hold_task, NULL, &a), GF_OK);   /* two lanes: a -> c, b -> c */
    CHECK_EQ_RESULT(gf_flow_add(flow, "other", idle_task, NULL, &b), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "join", idle_task, NULL, &c), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, a, c), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, b, c), GF_OK);
    CHECK_EQ_RESULT(gf_flow_frames(flow, &fi), GF_OK);
    CHECK(fi.frames == 0 && fi.in_flight == 0 && fi.open == 0, "flow frames: a new flow has none");
    for (i = 0; i < 3; i++) {
        th_gate_init(&gates[i]);
        flow_gate = &gates[i];
        CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
    }
    flow_gate = NULL;
    CHECK_EQ_RESULT(gf_flow_frames(flow, &fi), GF_OK);
    CHECK(fi.frames == 3 && fi.completed == 0 && fi.in_flight == 3 && fi.open == 0, "flow frames: three runs begun, none complete");
    CHECK_FAIL(gf_flow_wait_frames(flow, 1, 50), GF_TIMEOUT);   /* the device holds them */
    CHECK(strstr(gf_last_error(), "in flight") != NULL, "flow frames: a timeout says how many are in flight");
    CHECK_FAIL(gf_flow_wait_frames(flow, -1, 50), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_flow_wait_frames(NULL, 1, 50), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_frames(flow, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(th_gate_wait_entered(&gates[0], 1, TH_WAIT_MS), "flow frames: run 0 reached its gate");   /* its start is recorded */
    th_sleep_ms(30);
    th_gate_open(&gates[0]);
    CHECK_EQ_RESULT(gf_flow_wait_frames(flow, 2, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_flow_frames(flow, &fi), GF_OK);
    CHECK(fi.completed >= 1 && fi.in_flight <= 2 && fi.last_frame == 0, "flow frames: run 0 completed once its gate opened");
    CHECK(fi.last_gpu_ms >= 20.0f, "flow frames: its time on the device covers the 30 ms it was held");
    printf("  flow run 0: %.2f ms on the device (held at least 30 ms)\n", (double)fi.last_gpu_ms);
    th_gate_open(&gates[1]);
    th_gate_open(&gates[2]);
    CHECK_EQ_RESULT(gf_flow_wait_frames(flow, 0, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_flow_frames(flow, &fi), GF_OK);
    CHECK(fi.completed == 3 && fi.in_flight == 0 && fi.last_frame == 2, "flow frames: all three complete, the last is run 2");
    for (i = 0; i < 3; i++) th_gate_destroy(&gates[i]);
    for (i = 0; i < 200 && ok; i++) {   /* a paced loop; the pending list stays bounded (ASan: no growth, no leak) */
        ok = gf_flow_wait_frames(flow, 1, TH_WAIT_MS) == GF_OK && gf_flow_run(flow, pool) == GF_OK && gf_flow_frames(flow, &fi) == GF_OK;
        if (fi.in_flight > most) most = fi.in_flight;
    }
    CHECK(ok && most <= 2 && fi.frames == 203, "flow frames: a paced loop keeps at most max + 1 in flight (the run just queued)");
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    gf_flow_destroy(flow);
    /* a flow that becomes a graph: its replays are frames too */
    {
        gf_flow_desc fd;
        memset(&fd, 0, sizeof fd);
        fd.graph_after = 1;
        if (CHECK_EQ_RESULT(gf_flow_create(dev, &fd, &flow), GF_OK)) {
            gf_flow_stats st;
            CHECK_EQ_RESULT(gf_flow_add(flow, "a", idle_task, NULL, &a), GF_OK);
            for (i = 0; i < 4; i++) CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
            CHECK_EQ_RESULT(gf_flow_wait_frames(flow, 0, TH_WAIT_MS), GF_OK);
            CHECK(gf_flow_frames(flow, &fi) == GF_OK && gf_flow_get_stats(flow, &st) == GF_OK && fi.frames == 4 && fi.completed == 4 &&
                  st.graph_runs == 3, "flow frames: a flow that became a graph counts its replays as frames");
            gf_flow_destroy(flow);
        }
    }
    gf_stream_pool_destroy(pool);
}

/* Runs that overlap (paced to two in flight): a run's time was taken from its first lane's
   start, which may wait behind the last run while its other lanes have long begun (an outside
   review: 10 ms for a run of at least 13). Lanes a (10 ms) and b (25 ms) before c (10 ms): a
   run takes at least 35 ms on the device. */
static void sleep_cb(void *user, gf_result status) { (void)status; th_sleep_ms((unsigned)(size_t)user); }
static gf_result sleep_task(gf_stream *on, void *user) { return gf_stream_add_callback(on, sleep_cb, user); }
static void test_flow_frames_overlap(void)
{
    gf_flow *flow = NULL;
    gf_stream_pool *pool = NULL;
    gf_frame_info fi;
    gf_task a = 0, b = 0, c = 0;
    float least = 1e9f;
    int i, ok = 1;
    if (!CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK)) return;
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "a", sleep_task, (void *)(size_t)10, &a), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "b", sleep_task, (void *)(size_t)25, &b), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "c", sleep_task, (void *)(size_t)10, &c), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, a, c), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, b, c), GF_OK);
    for (i = 0; i < 10 && ok && pool; i++) {
        ok = gf_flow_wait_frames(flow, 2, TH_WAIT_MS) == GF_OK && gf_flow_run(flow, pool) == GF_OK && gf_flow_frames(flow, &fi) == GF_OK;
        if (ok && fi.completed > 0 && fi.last_gpu_ms < least) least = fi.last_gpu_ms;
    }
    CHECK(ok && gf_flow_wait_frames(flow, 0, TH_WAIT_MS) == GF_OK && gf_flow_frames(flow, &fi) == GF_OK, "flow frames, overlapping: ten runs");
    if (fi.last_gpu_ms < least) least = fi.last_gpu_ms;
    CHECK(least >= 33.0f, "flow frames, overlapping: each run's time covers its longest path (b then c, 35 ms)");
    printf("  overlapping runs: the shortest run time read %.2f ms (at least 35 on the device)\n", (double)least);
    if (pool) CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    gf_flow_destroy(flow);
    if (pool) gf_stream_pool_destroy(pool);
}

/* One thread paces (a wait for a frame the device holds) while another asks how many frames
   are in flight and begins work on another slot: the pacing calls held the set's (the flow's)
   lock across their wait, so the "without waiting" queries waited as long (found by review). */
static gf_stream_set *pace_set;
static gf_flow *pace_flow;
static th_flag pace_done;
static void *pace_main(void *arg)
{
    (void)arg;
    if (pace_set) (void)gf_stream_set_wait_frames(pace_set, 0, TH_WAIT_MS);
    else (void)gf_flow_wait_frames(pace_flow, 0, TH_WAIT_MS);
    th_flag_add(&pace_done, 1);
    return NULL;
}
static void test_pacing_holds_nothing(void)
{
    gf_stream_pool *pool = NULL;
    gf_stream *s = NULL;
    gf_frame_info fi;
    th_gate gate;
    pthread_t t;
    int round;
    gf_task a = 0;
    for (round = 0; round < 2; round++) {   /* a stream set, then a flow */
        th_gate_init(&gate);
        th_flag_init(&pace_done);
        pace_set = NULL; pace_flow = NULL;
        if (round == 0) {
            if (!CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "paced", &pace_set), GF_OK)) return;
            CHECK_EQ_RESULT(gf_stream_set_next(pace_set, 0, &s), GF_OK);
            if (s) CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
            CHECK_EQ_RESULT(gf_stream_set_end_frame(pace_set), GF_OK);
        } else {
            if (!CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &pace_flow), GF_OK)) return;
            CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK);
            CHECK_EQ_RESULT(gf_flow_add(pace_flow, "hold", hold_task, NULL, &a), GF_OK);
            flow_gate = &gate;
            CHECK_EQ_RESULT(gf_flow_run(pace_flow, pool), GF_OK);
            flow_gate = NULL;
        }
        if (CHECK(pthread_create(&t, NULL, pace_main, NULL) == 0, "pacing thread started")) {
            th_sleep_ms(50);   /* it waits by now, for the frame the gate holds */
            CHECK(round == 0 ? gf_stream_set_frames(pace_set, &fi) == GF_OK : gf_flow_frames(pace_flow, &fi) == GF_OK, "pacing: the query answers");
            CHECK(th_flag_get(&pace_done) == 0 && fi.in_flight == 1,
                  round == 0 ? "pacing: gf_stream_set_frames answers while another thread's gf_stream_set_wait_frames waits (it waited as long)"
                             : "pacing: gf_flow_frames answers while another thread's gf_flow_wait_frames waits (it waited as long)");
            if (round == 0) {
                CHECK_EQ_RESULT(gf_stream_set_next(pace_set, 1, &s), GF_OK);   /* another slot: its own last round is done */
                CHECK(th_flag_get(&pace_done) == 0, "pacing: gf_stream_set_next on another slot goes on meanwhile");
                CHECK_EQ_RESULT(gf_stream_set_end_frame(pace_set), GF_OK);
            }
            th_gate_open(&gate);
            pthread_join(t, NULL);
            CHECK(th_flag_get(&pace_done) == 1 && !TH_GATE_TIMED_OUT(&gate), "pacing: the wait returns once the frame completes");
        } else {
            th_gate_open(&gate);
        }
        if (pace_set) { CHECK_EQ_RESULT(gf_stream_set_synchronize(pace_set), GF_OK); gf_stream_set_destroy(pace_set); }
        if (pace_flow) { CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK); gf_flow_destroy(pace_flow); gf_stream_pool_destroy(pool); }
        th_gate_destroy(&gate);
        th_flag_destroy(&pace_done);
    }
    pace_set = NULL; pace_flow = NULL;
}

/* A task that waits (on the host) for a gf_event_on_complete callback that asks the flow for its
   stats and frames: the run holds the flow meanwhile, and the queries waited for it while it
   waited for them, for good (found by review). They now answer with the counts as the last run
   left them. */
typedef struct ask_flow { gf_flow *flow; gf_event *ev; gf_result stats, frames; uint64_t runs; th_flag asked; } ask_flow;
static void ask_flow_cb(void *user, gf_result status)
{
    ask_flow *u = (ask_flow *)user;
    gf_flow_stats st;
    gf_frame_info fi;
    (void)status;
    memset(&st, 0, sizeof st);
    u->stats = gf_flow_get_stats(u->flow, &st);
    u->frames = gf_flow_frames(u->flow, &fi);
    u->runs = st.runs;
    th_flag_add(&u->asked, 1);
}
static gf_result ask_flow_task(gf_stream *on, void *user)
{
    ask_flow *u = (ask_flow *)user;
    gf_result r;
    if ((r = gf_event_record(u->ev, on)) != GF_OK || (r = gf_event_on_complete(u->ev, ask_flow_cb, u, NULL)) != GF_OK) return r;
    return th_flag_wait(&u->asked, 1, 5000) ? GF_OK : GF_TIMEOUT;
}
static void test_queries_from_callbacks(void)
{
    gf_stream_pool *pool = NULL;
    gf_task t = 0;
    ask_flow u;
    memset(&u, 0, sizeof u);
    th_flag_init(&u.asked);
    u.stats = u.frames = GF_ERROR_INVALID_STATE;
    if (CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &u.flow), GF_OK) && CHECK_EQ_RESULT(gf_event_create(dev, 0, &u.ev), GF_OK) &&
        CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK) && CHECK_EQ_RESULT(gf_flow_add(u.flow, "asks", ask_flow_task, &u, &t), GF_OK)) {
        CHECK_EQ_RESULT(gf_flow_run(u.flow, pool), GF_OK);
        CHECK(th_flag_get(&u.asked) == 1 && u.stats == GF_OK && u.frames == GF_OK && u.runs == 0,
              "queries: a callback that a running task waits for gets the flow's stats and frames as the last run left them");
        CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    }
    if (pool) gf_stream_pool_destroy(pool);
    if (u.ev) gf_event_destroy(u.ev);
    if (u.flow) gf_flow_destroy(u.flow);
    th_flag_destroy(&u.asked);
}

/* A pacing wait whose run another thread counts meanwhile: the run's end event goes back to
   the device's pool, and a profiled operation held by a gate takes it and records it anew.
   The wait waited for that unrelated work until it timed out (found by review). */
static gf_result reuse_result = GF_ERROR_INVALID_STATE;
static void *reuse_main(void *arg)
{
    (void)arg;
    reuse_result = gf_flow_wait_frames(pace_flow, 0, 1500);
    return NULL;
}
static void test_pacing_event_reused(gf_backend backend)
{
    gf_stream_pool *pool = NULL;
    gf_stream *held = NULL;
    gf_buffer *buf = NULL;
    gf_frame_info fi;
    th_gate first, second;
    pthread_t t;
    gf_task a = 0;
    int spins = 0;
    if (backend == GF_BACKEND_CUDA || backend == GF_BACKEND_HIP) {   /* their host callbacks share one thread: the second gate would hold the first */
        SKIP("pacing with a reused event: two gates at once need callbacks that run side by side");
        return;
    }
    th_gate_init(&first); th_gate_init(&second);
    pace_set = NULL;
    if (!CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &pace_flow), GF_OK)) return;
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(pace_flow, "hold", hold_task, NULL, &a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &held), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 4096, &buf), GF_OK);
    if (held) CHECK_EQ_RESULT(gf_stream_add_callback(held, th_gate_cb, &second), GF_OK);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK);   /* its operations take events from the device's pool */
    flow_gate = &first;
    CHECK_EQ_RESULT(gf_flow_run(pace_flow, pool), GF_OK);
    flow_gate = NULL;
    if (CHECK(pthread_create(&t, NULL, reuse_main, NULL) == 0, "reuse: pacing thread started")) {
        th_sleep_ms(50);
        th_gate_open(&first);
        do { memset(&fi, 0, sizeof fi); (void)gf_flow_frames(pace_flow, &fi); } while (fi.completed < 1 && ++spins < 100000000);   /* counted here first */
        CHECK_EQ_RESULT(gf_fill_async(held, buf, 0, 1, 64), GF_OK);   /* profiled behind the second gate */
        pthread_join(t, NULL);
        CHECK_EQ_RESULT(reuse_result, GF_OK);
        CHECK(reuse_result == GF_OK, "pacing: a wait for a run another thread counted returns, whatever its event is used for next");
    }
    th_gate_open(&second);
    if (held) CHECK_EQ_RESULT(gf_stream_synchronize(held), GF_OK);
    if (pool) CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, 0), GF_OK);
    gf_buffer_destroy(buf);
    gf_stream_destroy(held);
    gf_flow_destroy(pace_flow);
    gf_stream_pool_destroy(pool);
    pace_flow = NULL;
    th_gate_destroy(&first); th_gate_destroy(&second);
}

typedef struct heard { int crossed, refused; uint64_t used, asked; } heard;
static void on_budget(void *user, gf_budget *b, gf_budget_event event, uint64_t used, uint64_t asked)
{
    heard *h = (heard *)user;
    (void)b;
    if (event == GF_BUDGET_CROSSED) h->crossed++;
    if (event == GF_BUDGET_REFUSED) h->refused++;
    h->used = used;
    h->asked = asked;
}

static void test_budgets(gf_backend backend)
{
    gf_budget_desc bd;
    gf_budget *b = NULL, *bad = NULL;
    gf_buffer_desc d;
    gf_buffer *a = NULL, *c = NULL, *x = NULL;
    gf_budget_stats st;
    gf_memory_stats ms;
    heard h;
    gf_device *other = NULL;
    memset(&bd, 0, sizeof bd);
    memset(&h, 0, sizeof h);
    CHECK_FAIL(gf_budget_create(dev, &bd, &bad), GF_ERROR_INVALID_ARGUMENT);       /* no label */
    bd.label = "textures";
    CHECK_FAIL(gf_budget_create(dev, &bd, &bad), GF_ERROR_INVALID_ARGUMENT);       /* limit 0 */
    bd.limit = 1 << 20; bd.warn_at = 1.5f;
    CHECK_FAIL(gf_budget_create(dev, &bd, &bad), GF_ERROR_INVALID_ARGUMENT);
    CHECK(bad == NULL, "budgets: refused descriptions make nothing");
    bd.warn_at = 0.5f; bd.fn = on_budget; bd.user = &h;
    {   /* a limit near 2^64 at warn_at 1: the threshold wrapped to 1 byte and the first buffer "crossed" it (found by review) */
        gf_budget_desc big = bd;
        gf_budget *huge = NULL;
        gf_buffer *one = NULL;
        heard quiet;
        memset(&quiet, 0, sizeof quiet);
        big.label = "huge"; big.limit = UINT64_MAX; big.warn_at = 1.0f; big.user = &quiet;
        if (CHECK_EQ_RESULT(gf_budget_create(dev, &big, &huge), GF_OK)) {
            gf_buffer_desc hd;
            memset(&hd, 0, sizeof hd);
            hd.size = 16; hd.budget = huge;
            CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &hd, &one), GF_OK);
            CHECK(quiet.crossed == 0, "budgets: a limit of 2^64 - 1 warns near it, not at the first byte");
            gf_buffer_destroy(one);
            gf_budget_destroy(huge);
        }
    }
    CHECK_EQ_RESULT(gf_budget_create(dev, &bd, &b), GF_OK);
    if (!b) return;
    CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK);
    memset(&d, 0, sizeof d);
    d.budget = b;
    d.size = 400 << 10;
    CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &d, &a), GF_OK);
    CHECK(h.crossed == 0 && h.refused == 0, "budgets: 400 KiB of 1 MiB: nothing to say");
    d.size = 200 << 10;
    CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &d, &c), GF_OK);
    CHECK(h.crossed == 1 && h.used == 600u << 10 && h.asked == 200u << 10, "budgets: crossing warn_at (half) calls back once, with the bytes");
    d.size = 500 << 10;
    CHECK_FAIL(gf_buffer_create_desc(dev, &d, &x), GF_ERROR_OUT_OF_MEMORY);
    CHECK(x == NULL && h.refused == 1 && strstr(gf_last_error(), "budget 'textures'") != NULL &&
          !strncmp(gf_last_error(), "gf_buffer_create_desc:", 22),
          "budgets: past the limit: refused, called back, the message names the budget and the call");
    CHECK_EQ_RESULT(gf_budget_get_stats(b, &st), GF_OK);
    CHECK(!strcmp(st.label, "textures") && st.bytes == 600u << 10 && st.peak_bytes == 600u << 10 && st.count == 2 && st.refused == 1 &&
          st.limit == 1u << 20, "budgets: gf_budget_get_stats");
    CHECK_EQ_RESULT(gf_device_memory_stats(dev, &ms), GF_OK);
    CHECK(ms.budget_count == 1 && !strcmp(ms.budgets[0].label, "textures") && ms.budgets[0].bytes == 600u << 10,
          "budgets: gf_device_memory_stats carries each budget's figures");
    gf_buffer_destroy(a);
    a = NULL;
    CHECK_EQ_RESULT(gf_budget_get_stats(b, &st), GF_OK);
    CHECK(st.bytes == 200u << 10 && st.count == 1 && st.peak_bytes == 600u << 10, "budgets: a destroy gives its bytes back");
    /* within the budget but past the device's memory limit: not made, and the budget's figures
       are as they were (its peak had risen to bytes never held; found by review) */
    CHECK_EQ_RESULT(gf_device_memory_stats(dev, &ms), GF_OK);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, ms.device_bytes + (100u << 10)), GF_OK);
    d.size = 700 << 10;
    CHECK_FAIL(gf_buffer_create_desc(dev, &d, &x), GF_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, 0), GF_OK);
    CHECK_EQ_RESULT(gf_budget_get_stats(b, &st), GF_OK);
    CHECK(x == NULL && st.bytes == 200u << 10 && st.count == 1 && st.peak_bytes == 600u << 10 && h.crossed == 1,
          "budgets: a buffer the device's limit refused leaves the budget's bytes, peak and callbacks as they were");
    d.size = 400 << 10;
    CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &d, &a), GF_OK);   /* fits again; crosses again */
    CHECK(h.crossed == 2, "budgets: crossing upward again calls back again");
    {   /* the trace has a counter track per budget */
        char path[256], text[1 << 16];
        FILE *f;
        size_t n = 0;
        snprintf(path, sizeof path, "%s/gpuflow-realtime-%d.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
        CHECK_EQ_RESULT(gf_profiler_write_trace(dev, path), GF_OK);
        if ((f = fopen(path, "r")) != NULL) { n = fread(text, 1, sizeof text - 1, f); fclose(f); }
        text[n] = 0;
        remove(path);
        CHECK(strstr(text, "\"budget textures\",\"ph\":\"C\"") != NULL, "budgets: the trace has the budget's counter");
    }
    if (gf_device_count(backend) > 1 || backend == GF_BACKEND_STUB) {
        if (gf_device_open(backend, backend == GF_BACKEND_STUB ? 0 : 1, &other) == GF_OK) {
            d.size = 64;
            CHECK_FAIL(gf_buffer_create_desc(other, &d, &x), GF_ERROR_WRONG_DEVICE);
            gf_device_close(other);
        }
    }
    gf_budget_destroy(b);   /* a and c still charged: the budget stays until they go */
    CHECK_EQ_RESULT(gf_device_memory_stats(dev, &ms), GF_OK);
    CHECK(ms.budget_count == 0, "budgets: a destroyed budget leaves the device's figures");
    gf_buffer_destroy(a);
    gf_buffer_destroy(c);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, 0), GF_OK);
}

/* Review 5: a budget's callback is told as its own create returns, never inside another call
   (D1: a logger that creates on a second budget ran the first budget's callback early and lost
   the second's); one that closes its device is refused (D4: read after free). */
static gf_budget *bl_a, *bl_b;
static int bl_in_logger, bl_a_in_logger, bl_a_heard, bl_b_heard;
static gf_result bl_close_result = GF_OK;
static void bl_on_a(void *user, gf_budget *b, gf_budget_event event, uint64_t used, uint64_t asked)
{
    (void)user; (void)b; (void)event; (void)used; (void)asked;
    bl_a_heard++;
    bl_a_in_logger += bl_in_logger;
}
static void bl_on_b(void *user, gf_budget *b, gf_budget_event event, uint64_t used, uint64_t asked)
{
    (void)user; (void)b; (void)event; (void)used; (void)asked;
    bl_b_heard++;
    gf_device_close(dev);   /* refused: the callback holds the budget */
    bl_close_result = strstr(gf_last_error(), "gf_device_close") ? GF_ERROR_INVALID_STATE : GF_OK;
}
static void bl_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    gf_buffer_desc d;
    gf_buffer *x = NULL;
    (void)user; (void)level; (void)code;
    if (bl_in_logger || !strstr(message, "budget 'a'")) return;
    bl_in_logger = 1;
    memset(&d, 0, sizeof d);
    d.size = 4096; d.budget = bl_b;
    CHECK_FAIL(gf_buffer_create_desc(dev, &d, &x), GF_ERROR_OUT_OF_MEMORY);
    bl_in_logger = 0;
}
static void test_budget_callbacks(void)
{
    gf_budget_desc bd;
    gf_buffer_desc d;
    gf_buffer *x = NULL;
    memset(&bd, 0, sizeof bd);
    bd.label = "a"; bd.limit = 1024; bd.fn = bl_on_a;
    CHECK_EQ_RESULT(gf_budget_create(dev, &bd, &bl_a), GF_OK);
    bd.label = "b"; bd.fn = bl_on_b;
    CHECK_EQ_RESULT(gf_budget_create(dev, &bd, &bl_b), GF_OK);
    if (!bl_a || !bl_b) return;
    gf_set_logger(bl_logger, NULL);
    memset(&d, 0, sizeof d);
    d.size = 4096; d.budget = bl_a;
    CHECK_FAIL(gf_buffer_create_desc(dev, &d, &x), GF_ERROR_OUT_OF_MEMORY);
    gf_set_logger(NULL, NULL);
    CHECK(strstr(gf_last_error(), "budget 'a'") != NULL, "budget callbacks: the refused create keeps its own error text");
    CHECK(bl_a_heard == 1 && bl_a_in_logger == 0, "budget callbacks: a's callback ran once, as a's create returned, not inside the logger's call");
    CHECK(bl_b_heard == 1, "budget callbacks: b's refusal, inside the logger, was told to b's callback");
    CHECK(bl_close_result == GF_ERROR_INVALID_STATE, "budget callbacks: closing the device from a budget's callback is refused");
    gf_budget_destroy(bl_b);
    gf_budget_destroy(bl_a);
}

int main(int argc, char **argv)
{
    gf_backend backend;
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!(backend_name = th_backend_arg(argc, argv, &backend))) return 2;
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: realtime %s skipped: %s\n", backend_name, gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    printf("realtime on %s: %s\n", backend_name, gf_device_name(dev));
    test_frames();
    test_frame_time_is_the_devices();
    test_flow_frame_time_is_the_devices();
    test_flow_frames_share_a_stream();
    test_flow_frames();
    test_flow_frames_overlap();
    test_pacing_holds_nothing();
    test_queries_from_callbacks();
    test_pacing_event_reused(backend);
    test_budgets(backend);
    test_budget_callbacks();
    gf_device_close(dev);
    return th_finish();
}
