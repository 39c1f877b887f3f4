/* Record and replay (issue "For the people who build on gpuflow every day"): every call of a
   session goes to a file, and a replay makes them again and compares each result.

     session    one device's life recorded (buffers, views, copies sync and async, fills of
                every width, 2D copies, streams, events, event pools, stream pools and sets, a
                barrier, modules and launches, a capture with a branch, graph replays, a
                refused call, callbacks, switches); replayed on the same backend and on the
                stub (the C kernels given by name, or made by compile_stub), with the race
                detector and the profiler; every result as recorded
     data       device-to-host bytes recorded on request and compared: one byte changed in the
                file is a mismatch, named with its call
     results    a recorded result changed in the file is a mismatch with the call's index and
                both results
     missing    without the stub's C kernels the module's load and the calls on its kernels are
                skipped and a warning says why (the replay's shortfall, not a mismatch); the
                bytes read back then differ, and that is the mismatch
     cut        a size limit ends the file with CUT; every prefix of a file, and files with
                bytes flipped, replay safely (untrusted mode bounds what could run for ever)
     threads    four threads recording at once; replayed in the file's order
     race       a racy run recorded with the detector off: its replay with the detector on
                names the race
     review     outside reviews' reproducers (R1-R6; review 6's R1-R7 and review 7's R8-R9), each a regression
     faults     alloc fault rules recorded: the replay's own memory is not counted, so the
                same calls fail
     flow       a flow's own events are made in the replay: its lanes' records and waits replay;
                a captured flow's loop is in the file, so its replay loops as often
     budget     the calls a budget's callback makes are recorded after the call that ran it
     snapshot   an async copy from host memory that earlier work on its stream fills: the
                bytes it read are recorded (taken in stream order), so its replay matches
     interop    semaphores, an import and a wrapped buffer replayed with stand-ins: the order
                the semaphores kept holds (no race), nothing waits for ever
     input      the codes of bad calls
     env        GPUFLOW_RECORD in a new process (this program again), and its %p

   usage: record stub|opencl|cuda|hip       (record --env-child|--env-open-fails BACKEND: the children;
                                             record stub --corpus DIR: tests/replay_corpus's seeds) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include "test_kernels.h"
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <sys/resource.h>


#define N 1024u
static gf_backend backend;
static char path[256], path2[256];
static uint32_t final_words[N];   /* what the session read back last */

static gf_launch_dims dims_n(void)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = N / 64; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 64; d.block[1] = d.block[2] = 1;
    return d;
}
static void on_done(void *user, gf_result status) { (void)status; *(int *)user += 1; }

/* One device's life; the calls it counts are the ones a replay will find. */
static int session(void)
{
    static uint32_t up[N], down[N];
    static unsigned char rows[4 * 64], rows_up[4 * 64];
    gf_device *dev;
    gf_stream *s, *s2, *ps, *ss;
    gf_stream_desc sd;
    gf_buffer_desc bd;
    gf_event_pool_desc pd;
    gf_stream_pool_desc qd;
    gf_buffer *buf, *big, *view, *cond;
    gf_event *ev, *pooled;
    gf_event_pool *pool;
    gf_stream_pool *streams;
    gf_stream_set *set;
    gf_module *mod;
    gf_kernel *fill, *add;
    gf_graph *g, *g2;
    gf_copy_2d c2;
    uint32_t n = N, v = 5, one = 1, zero = 0, seven = 7;
    gf_arg args[3], args2[3];
    int calls = 0, i, done = 0;
    if (gf_device_open(backend, 0, &dev) != GF_OK) return 0;
    for (i = 0; i < (int)N; i++) up[i] = (uint32_t)i * 3u;
    memset(&sd, 0, sizeof sd); sd.label = "recorded"; sd.priority = GF_PRIORITY_HIGH;
    memset(&bd, 0, sizeof bd); bd.size = 4 * N;
    memset(&pd, 0, sizeof pd); pd.capacity = 2; pd.timing_capacity = 2;
    memset(&qd, 0, sizeof qd); qd.count = 2; qd.label = "workers";
    CHECK_EQ_RESULT(gf_stream_create(dev, &sd, &s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s2), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 4 * N, &buf), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &bd, &big), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 4, &cond), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_view(big, 256, 512, &view), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device(buf, 0, up, sizeof up), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, big, 0, up, sizeof up), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, view, 0, 0x11, 64), GF_OK);
    CHECK_EQ_RESULT(gf_fill16_async(s, view, 64, 0x2233, 16), GF_OK);
    CHECK_EQ_RESULT(gf_fill32_async(s, view, 128, 0x44556677u, 16), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, view, 500, 0, 64), GF_ERROR_OUT_OF_RANGE);   /* refused, and recorded so */
    memset(&c2, 0, sizeof c2);
    c2.src = big; c2.src_pitch = 128; c2.dst_host = rows; c2.dst_pitch = 64; c2.width = 64; c2.height = 4;
    CHECK_EQ_RESULT(gf_copy_2d_async(s, &c2), GF_OK);
    memset(&c2, 0, sizeof c2);
    for (i = 0; i < (int)sizeof rows_up; i++) rows_up[i] = (unsigned char)i;
    c2.src_host = rows_up; c2.src_pitch = 64; c2.dst = buf; c2.dst_offset = 2048; c2.dst_pitch = 256; c2.width = 32; c2.height = 4;
    CHECK_EQ_RESULT(gf_copy_2d_async(s, &c2), GF_OK);
    CHECK_EQ_RESULT(gf_copy_buffer_async(s, big, 0, buf, 0, 4 * N), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, GF_EVENT_TIMING, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(s2, ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_stream(s, s2), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, on_done, &done), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_create(dev, &pd, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_acquire(pool, 0, &pooled), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(pooled, s2), GF_OK);
    CHECK_EQ_RESULT(gf_event_synchronize(pooled), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_release(pool, pooled), GF_OK);
    CHECK_EQ_RESULT(gf_module_load(dev, &tk_module, &mod), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &fill), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "add_u32", &add), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "no_such_kernel", &fill), GF_ERROR_NOT_FOUND);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &fill), GF_OK);
    args[0].value = NULL; args[0].size = 0; args[0].buffer = big;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = NULL;
    args[2].value = &v; args[2].size = sizeof v; args[2].buffer = NULL;
    CHECK_EQ_RESULT(gf_launch(s, add, dims_n(), args, 3), GF_OK);
    /* a capture with a branch, replayed taken and not taken */
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, cond, 0, &one, 4), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_if(s, cond, 0), GF_OK);
    CHECK_EQ_RESULT(gf_launch(s, add, dims_n(), args, 3), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_if(s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, cond, 0, &zero, 4), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
    /* a plain graph whose launch gets new arguments (recorded too): 7 added where 5 was */
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_launch(s, add, dims_n(), args, 3), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g2), GF_OK);
    memcpy(args2, args, sizeof args2);
    args2[2].value = &seven;
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(g2, 0, args2, 3), GF_OK);
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(g2, 5, args2, 3), GF_ERROR_OUT_OF_RANGE);   /* refused, and recorded so */
    CHECK_EQ_RESULT(gf_graph_launch(g2, s), GF_OK);
    /* pools, sets, a barrier */
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, &qd, &streams), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_acquire(streams, NULL, &ps), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_stream(ps, s), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(ps, buf, 0, 0, 16), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_release(streams, ps), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "frames", &set), GF_OK);
    CHECK(gf_stream_set_get(set, 1) != NULL, "a stream set's stream");
    CHECK_EQ_RESULT(gf_stream_set_next(set, 0, &ss), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_stream(ss, s), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(ss, view, 0, 7, 4), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
    {
        gf_stream *all[3];
        all[0] = s; all[1] = s2; all[2] = ss;
        CHECK_EQ_RESULT(gf_barrier(all, 3), GF_OK);
    }
    CHECK_EQ_RESULT(gf_stream_set_synchronize(set), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(streams), GF_OK);
    CHECK_EQ_RESULT(gf_race_check_enable(dev, GF_RACE_CHECK_ON), GF_OK);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, down, big, 0, sizeof down), GF_OK);
    (void)gf_stream_query(s);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(final_words, big, 0, sizeof final_words), GF_OK);
    CHECK(final_words[0] == 17u && final_words[N - 1] == (N - 1) * 3u + 17u, "session: the kernels ran (5 added twice, then 7 by new arguments)");
    CHECK(done == 1, "session: the callback ran");
    gf_graph_destroy(g);
    gf_graph_destroy(g2);
    gf_stream_set_destroy(set);
    gf_stream_pool_destroy(streams);
    gf_module_destroy(mod);
    gf_event_pool_destroy(pool);
    gf_event_destroy(ev);
    gf_buffer_destroy(view);
    gf_buffer_destroy(cond);
    gf_buffer_destroy(big);
    gf_buffer_destroy(buf);
    gf_stream_destroy(s2);
    gf_stream_destroy(s);
    gf_device_close(dev);
    calls = 1;
    return calls;
}

static int record_session(const char *file, int device_to_host, uint64_t limit)
{
    gf_record_desc rd;
    int ok;
    memset(&rd, 0, sizeof rd);
    rd.path = file; rd.device_to_host = device_to_host; rd.max_bytes = limit;
    if (!CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK)) return 0;
    ok = session();
    CHECK_EQ_RESULT(gf_record_stop(), limit ? GF_ERROR_INVALID_STATE : GF_OK);   /* a cut ended it already */
    return ok;
}

static unsigned char *slurp(const char *file, size_t *n)
{
    FILE *f = fopen(file, "rb");
    unsigned char *d;
    long len;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END); len = ftell(f); fseek(f, 0, SEEK_SET);
    d = (unsigned char *)malloc((size_t)len + 1);
    if (d && fread(d, 1, (size_t)len, f) != (size_t)len) { free(d); d = NULL; }
    fclose(f);
    *n = (size_t)len;
    return d;
}
/* The stub's C kernels made "from source": here, the program's own, found by name. */
static int compiled;
static gf_result compile_stub(void *user, gf_device *dev, const char *source, const char *const *names, int count, const gf_stub_kernel **out)
{
    static gf_stub_kernel made[8];
    int i, j;
    (void)user;
    if (gf_device_backend(dev) != GF_BACKEND_STUB) return GF_ERROR_NOT_SUPPORTED;
    (void)source;   /* tk_module has no dialect source: each backend's own forms */
    if (count > 8) return GF_ERROR_BUILD;
    for (i = 0; i < count; i++) {
        for (j = 0; j < 3 && strcmp(tk_stub_kernels[j].name, names[i]); j++) {}
        if (j == 3) return GF_ERROR_NOT_FOUND;
        made[i] = tk_stub_kernels[j];
    }
    compiled += count;
    *out = made;
    return GF_OK;
}

static char said[1024];
static void keep_warning(void *user, gf_log_level level, gf_result code, const char *message)
{
    (void)user; (void)code;
    if (level == GF_LOG_WARNING && strstr(message, "gf_replay:") && !said[0]) snprintf(said, sizeof said, "%s", message);
}

static void replay_desc(gf_replay_desc *d, const char *file, gf_backend b)
{
    memset(d, 0, sizeof *d);
    d->path = file; d->backend = b;
    d->stub_kernels = tk_stub_kernels; d->stub_kernel_count = 3;
}

static void test_session(void)
{
    gf_replay_desc d;
    gf_replay_report rep;
    snprintf(path, sizeof path, "record_%d_session.gfrec", (int)getpid());
    if (!record_session(path, 1, 0)) return;
    replay_desc(&d, path, GF_BACKEND_AUTO);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.calls >= 70 && rep.replayed == rep.calls && rep.skipped == 0 && rep.mismatches == 0 && !rep.cut,
          "session: every call replayed on its own backend, as recorded");
    printf("session: %llu calls, %llu replayed, %llu skipped\n", (unsigned long long)rep.calls, (unsigned long long)rep.replayed,
           (unsigned long long)rep.skipped);
    replay_desc(&d, path, GF_BACKEND_STUB);
    d.flags = GF_REPLAY_RACE_CHECK | GF_REPLAY_PROFILE;
    snprintf(path2, sizeof path2, "record_%d_trace.json", (int)getpid());
    d.trace_path = path2;
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.mismatches == 0 && rep.races == 0 && access(path2, R_OK) == 0, "session: replayed on the stub, race detector and profiler on");
    remove(path2);
    replay_desc(&d, path, GF_BACKEND_STUB);
    d.stub_kernels = NULL; d.stub_kernel_count = 0;
    d.compile_stub = compile_stub;
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(compiled == 3 && rep.mismatches == 0, "session: the stub's kernels from compile_stub, by the recorded names");
    /* missing: no C kernels at all: the replay's shortfall, skipped and said, not a mismatch */
    d.compile_stub = NULL;
    said[0] = 0;
    gf_set_logger(keep_warning, NULL);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_ERROR_INVALID_STATE);
    gf_set_logger(NULL, NULL);
    CHECK(rep.skipped >= 6 && strstr(said, "(gf_module_load) is skipped: 3 of the module's stub kernels were not given"),
          "missing: without C kernels the module's load and the calls on its kernels are skipped, and a warning says why");
    CHECK(rep.mismatches == 1 && strstr(rep.first_mismatch, "gf_copy_to_host") && strstr(rep.first_mismatch, "differ"),
          "missing: what the skipped launches did not write is still caught, by the bytes read back");
}

/* Walks the file's records: the offset of the first with this result (0: none). */
static size_t find_result(const unsigned char *d, size_t n, int32_t result)
{
    size_t at = 16;
    while (at + 20 <= n) {
        uint32_t size = (uint32_t)d[at] | (uint32_t)d[at + 1] << 8 | (uint32_t)d[at + 2] << 16 | (uint32_t)d[at + 3] << 24;
        int32_t r = (int32_t)((uint32_t)d[at + 16] | (uint32_t)d[at + 17] << 8 | (uint32_t)d[at + 18] << 16 | (uint32_t)d[at + 19] << 24);
        if (r == result) return at + 16;
        at += 4 + size;
    }
    return 0;
}

static void test_tampered(void)
{
    gf_replay_desc d;
    gf_replay_report rep;
    size_t n, at, i;
    unsigned char *data = slurp(path, &n);
    if (!CHECK(data != NULL, "the session's file reads back")) return;
    replay_desc(&d, NULL, GF_BACKEND_AUTO);
    d.data = data; d.size = n;
    /* data: the last read back's bytes are in the file; one changed is a mismatch */
    for (at = 0, i = 16; i + sizeof final_words <= n && !at; i++) if (!memcmp(data + i, final_words, sizeof final_words)) at = i;
    if (CHECK(at != 0, "data: gf_copy_to_host's bytes are in the file (device_to_host)")) {
        data[at + 40] ^= 0x5a;
        CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_ERROR_INVALID_STATE);
        CHECK(rep.mismatches == 1 && strstr(rep.first_mismatch, "gf_copy_to_host") && strstr(rep.first_mismatch, "differ from the recorded ones, first at byte 40"),
              "data: a changed byte is named with its call and offset");
        data[at + 40] ^= 0x5a;
    }
    /* results: the refused fill said OK in the file */
    at = find_result(data, n, (int32_t)GF_ERROR_OUT_OF_RANGE);
    if (CHECK(at != 0, "results: the refused fill is in the file with its code")) {
        int32_t ok = 0;
        memcpy(data + at, &ok, 4);
        CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_ERROR_INVALID_STATE);
        CHECK(rep.mismatches == 1 && strstr(rep.first_mismatch, "gf_fill_async: recorded GF_OK, replayed GF_ERROR_OUT_OF_RANGE") &&
              !strncmp(rep.first_mismatch, "call ", 5), "results: the mismatch names the call's index and both results");
    }
    free(data);
}

static void test_cut(void)
{
    gf_replay_desc d;
    gf_replay_report rep;
    size_t n, len, step;
    unsigned seed = 12345u;
    int bad = 0, trials;
    unsigned char *data, *copy;
    snprintf(path2, sizeof path2, "record_%d_cut.gfrec", (int)getpid());
    if (!record_session(path2, 0, 3000)) return;
    data = slurp(path2, &n);
    CHECK(data && n <= 3000, "cut: the file keeps to its size limit");
    replay_desc(&d, path2, GF_BACKEND_STUB);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.cut == 1 && rep.calls > 3, "cut: the replay says the recording was cut, and replays what is there");
    free(data);
    remove(path2);
    /* every prefix (a crash's file) and flipped bytes: a result, never a crash or a hang */
    if (!(data = slurp(path, &n))) return;
    replay_desc(&d, NULL, GF_BACKEND_STUB);
    d.untrusted = 1;
    d.memory_limit = (size_t)64 << 20;
    step = n / 150 + 1;
    for (len = 0; len < n; len += len < 300 ? 1 : step) {
        gf_result r;
        d.data = data; d.size = len;
        r = gf_replay(&d, &rep);
        if (r != GF_OK && r != GF_ERROR_INVALID_ARGUMENT && r != GF_ERROR_INVALID_STATE) bad++;
    }
    CHECK(bad == 0, "cut: every prefix of a file replays to a result");
    copy = (unsigned char *)malloc(n);
#if TH_UNDER_TSAN   /* a flipped byte can drop a wait: two streams then write one buffer at once, as the file says */
    SKIP("cut: the flipped files under ThreadSanitizer (their races are the file's; ASan runs them)");
    free(copy);
    copy = NULL;
#endif
    for (trials = 0; copy && trials < 150; trials++) {
        int flips = 1 + trials % 4, k;
        gf_result r;
        memcpy(copy, data, n);
        for (k = 0; k < flips; k++) { seed = seed * 1103515245u + 12345u; copy[16 + (seed >> 8) % (n - 16)] ^= (unsigned char)(1u << (seed % 8)); }
        d.data = copy; d.size = n;
        gf_faults_set(NULL);   /* a flipped fault rule must not outlive its replay */
        r = gf_replay(&d, &rep);
        if (r > GF_OK || r < GF_ERROR_DEVICE_LOST) bad++;
    }
    gf_faults_set(NULL);
    if (!TH_UNDER_TSAN) CHECK(bad == 0, "cut: 150 files with bytes flipped replay to a result");
    free(copy);
    free(data);
}

/* A teacher's case: a racy run recorded with the detector off, replayed with it on. */
static void test_race(void)
{
    gf_record_desc rd;
    gf_replay_desc d;
    gf_replay_report rep;
    gf_device *dev;
    gf_stream *a, *b;
    gf_buffer *buf;
    if (TH_UNDER_TSAN) { SKIP("race: its racy run races for real on the stub (ASan runs it)"); return; }
    snprintf(path2, sizeof path2, "record_%d_race.gfrec", (int)getpid());
    memset(&rd, 0, sizeof rd);
    rd.path = path2;
    if (!CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK)) return;
    if (gf_device_open(backend, 0, &dev) == GF_OK) {
        if (gf_stream_create(dev, NULL, &a) == GF_OK && gf_stream_create(dev, NULL, &b) == GF_OK && gf_buffer_create(dev, 256, &buf) == GF_OK) {
            gf_fill_async(a, buf, 0, 1, 256);
            gf_fill_async(b, buf, 128, 2, 128);   /* no event orders it after a's */
            gf_stream_synchronize(a);
            gf_stream_synchronize(b);
            gf_buffer_destroy(buf);
            gf_stream_destroy(b);
            gf_stream_destroy(a);
        }
        gf_device_close(dev);
    }
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    replay_desc(&d, path2, GF_BACKEND_STUB);
    d.flags = GF_REPLAY_RACE_CHECK;
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.races == 1 && rep.mismatches == 0, "race: the replay on the stub with the detector on finds the recorded run's race");
    remove(path2);
}

/* ---- review: an outside review's reproducers, each a regression (its memory errors show under
   make sanitize's ASan build of this test; the rest fail here) ---- */
static void rv_noop_kernel(const gf_kernel_ctx *ctx, void *const *args) { (void)ctx; (void)args; }
static void rv_barrier_misuse(const gf_kernel_ctx *ctx, void *const *args) { (void)args; if (ctx->thread_idx[0] == 1) gf_stub_barrier_at(0); }
static const gf_stub_kernel rv_kernels[] = {
    { "one_arg", rv_noop_kernel, 1, NULL, 0, NULL, 0 }, { "misuse", rv_barrier_misuse, 0, NULL, 0, NULL, 0 },
};
static gf_kernel *rv_flow_kernel;
static gf_result rv_flow_task(gf_stream *on, void *user)
{
    unsigned v = 1;
    gf_arg arg;
    gf_launch_dims d;
    (void)user;
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1; d.block[0] = d.block[1] = d.block[2] = 1;
    arg.buffer = NULL; arg.value = &v; arg.size = sizeof v;
    return gf_launch(on, rv_flow_kernel, d, &arg, 1);
}
/* A stub device, a stream, the module of rv_kernels and its "one_arg" kernel, one-thread dims. */
static void rv_one_arg_setup(gf_device **dev, gf_stream **s, gf_module **m, gf_kernel **k, gf_launch_dims *dims)
{
    gf_module_desc md;
    gf_device_open(GF_BACKEND_STUB, 0, dev);
    gf_stream_create(*dev, NULL, s);
    memset(&md, 0, sizeof md); md.stub_kernels = rv_kernels; md.stub_kernel_count = 2;
    gf_module_load(*dev, &md, m);
    gf_kernel_get(*m, "one_arg", k);
    memset(dims, 0, sizeof *dims); dims->grid[0] = dims->grid[1] = dims->grid[2] = 1; dims->block[0] = dims->block[1] = dims->block[2] = 1;
}
static gf_result rv_replay(const char *file, gf_replay_report *rep)
{
    gf_replay_desc d;
    memset(&d, 0, sizeof d);
    d.path = file; d.backend = GF_BACKEND_STUB; d.stub_kernels = rv_kernels; d.stub_kernel_count = 2;
    return gf_replay(&d, rep);
}
static int rv_start(const char *what)
{
    gf_record_desc rd;
    memset(&rd, 0, sizeof rd);
    snprintf(path2, sizeof path2, "record_%d_%s.gfrec", (int)getpid(), what);
    rd.path = path2;
    return gf_record_start(&rd) == GF_OK;
}
/* Builds a recording by hand (the file format of gpuflow.h's >>record): a hostile file. */
static unsigned char hb_buf[4096];
static size_t hb_len, hb_rec;
static void hb_le(uint64_t v, int n) { int i; for (i = 0; i < n; i++) hb_buf[hb_len++] = (unsigned char)(v >> (8 * i)); }
static void hb_begin_result(int call, int32_t result) {
    hb_rec = hb_len; hb_le(0, 4); hb_le((uint64_t)call, 2); hb_le(1, 2); hb_le(0, 8); hb_le((uint32_t)result, 4);
}
static void hb_begin(int call) { hb_begin_result(call, GF_OK); }
static void hb_end(void) { uint32_t n = (uint32_t)(hb_len - hb_rec - 4); int i; for (i = 0; i < 4; i++) hb_buf[hb_rec + i] = (unsigned char)(n >> (8 * i)); }
static gf_device *rv_dev;
static gf_stream *rv_stream;
static void *rv_frees(void *arg)
{
    gf_buffer *b;
    int i;
    (void)arg;
    for (i = 0; i < 3000; i++)
        if (gf_buffer_create_async(rv_stream, 256, &b) == GF_OK) { gf_fill_async(rv_stream, b, 0, 1, 256); gf_buffer_destroy_async(rv_stream, b); }
    return NULL;
}
static void test_review(void)
{
    gf_replay_report rep;
    gf_device *dev;
    gf_stream *s;
    gf_buffer *b;
    gf_graph *g;
    gf_module *m;
    gf_kernel *k;
    gf_module_desc md;
    gf_launch_dims dims;
    gf_event_pool *pool;
    gf_event *ev;
    int i;
    if (backend != GF_BACKEND_STUB) return;   /* the stub's own kernels and its barrier rules */
    /* R1: buffers a capture allocated are its graph's, or gone with a discarded capture: the
       replay's clean-up destroyed them again (a use after free) */
    for (i = 0; i < 2; i++) {
        if (!rv_start("r1")) return;
        gf_device_open(GF_BACKEND_STUB, 0, &dev);
        gf_stream_create(dev, NULL, &s);
        gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL);
        gf_buffer_create_async(s, 64, &b);
        if (i == 0) gf_stream_end_capture(s, &g);
        else gf_stream_synchronize(s);   /* refused inside a capture: the capture is discarded */
        gf_record_stop();
        if (i == 0) gf_graph_destroy(g);
        gf_stream_destroy(s);
        gf_device_close(dev);
        CHECK(rv_replay(path2, &rep) == GF_OK && rep.mismatches == 0,
              i == 0 ? "review R1: a capture's buffer left with its graph replays cleanly" : "review R1: a discarded capture's buffer replays cleanly");
        remove(path2);
    }
    /* R2: a stream destroyed after its kernel failed (its destroy reports the failure and frees it) */
    if (rv_start("r2")) {
        gf_device_open(GF_BACKEND_STUB, 0, &dev);
        gf_stream_create(dev, NULL, &s);
        memset(&md, 0, sizeof md); md.stub_kernels = rv_kernels; md.stub_kernel_count = 2;
        gf_module_load(dev, &md, &m);
        gf_kernel_get(m, "misuse", &k);
        memset(&dims, 0, sizeof dims); dims.grid[0] = dims.grid[1] = dims.grid[2] = 1; dims.block[0] = 2; dims.block[1] = dims.block[2] = 1;
        gf_launch(s, k, dims, NULL, 0);
        gf_stream_destroy(s);
        gf_record_stop();
        gf_module_destroy(m);
        gf_device_close(dev);
        CHECK(rv_replay(path2, &rep) == GF_OK && rep.replayed == rep.calls, "review R2: a stream destroyed after its kernel failed is gone from the replay too");
        remove(path2);
    }
    /* R3: a hand-made file: a 2D copy's host bytes shorter than its rows (a pitch past 2^32) */
    hb_len = 0;
    memcpy(hb_buf, "gpuflowR", 8); hb_len = 8; hb_le(1, 4); hb_le(0, 4);
    hb_begin(GF__RC_device_open); hb_le(GF_BACKEND_STUB, 4); hb_le(0, 4); hb_le(1, 4); hb_end();
    hb_begin(GF__RC_buffer_create); hb_le(1, 4); hb_le(64, 8); hb_le(2, 4); hb_end();
    hb_begin(GF__RC_stream_create); hb_le(1, 4); hb_le(0, 4); hb_le(3, 4); hb_end();
    hb_begin(GF__RC_copy_2d_async); hb_le(3, 4); hb_le(1, 4);
    hb_le(2, 4); hb_le(0, 8); hb_le(64, 8); hb_le(0, 4); hb_le(0, 8); hb_le((uint64_t)1 << 33, 8); hb_le(64, 8); hb_le(1, 8);
    hb_le(0, 4); hb_le(0, 8); hb_le(3, 4); hb_le(0, 8); hb_end();
    {
        gf_replay_desc d;
        memset(&d, 0, sizeof d);
        d.data = hb_buf; d.size = hb_len; d.backend = GF_BACKEND_STUB; d.untrusted = 1;
        CHECK(gf_replay(&d, &rep) == GF_ERROR_INVALID_ARGUMENT && strstr(gf_last_error(), "gf_copy_2d_async) is malformed"),
              "review R3: host bytes shorter than the rows they stand for are a malformed file, not a read past it");
    }
    /* S1: a record's result code is read as an int and checked before it becomes a gf_result (a
       value outside the enum is undefined behaviour in C++): one no gf_result has is a malformed
       file; a backend no gf_backend has opens as refused, as it was */
    {
        gf_replay_desc d;
        memset(&d, 0, sizeof d);
        hb_len = 0;
        memcpy(hb_buf, "gpuflowR", 8); hb_len = 8; hb_le(1, 4); hb_le(0, 4);
        hb_begin_result(GF__RC_device_open, 100); hb_le(GF_BACKEND_STUB, 4); hb_le(0, 4); hb_le(1, 4); hb_end();
        d.data = hb_buf; d.size = hb_len; d.backend = GF_BACKEND_STUB; d.untrusted = 1;
        CHECK(gf_replay(&d, &rep) == GF_ERROR_INVALID_ARGUMENT && strstr(gf_last_error(), "holds no result code (100)"),
              "review S1: a record whose result no gf_result has is a malformed file");
        hb_len = 16;
        hb_begin_result(GF__RC_device_open, GF_ERROR_INVALID_ARGUMENT); hb_le(77, 4); hb_le(0, 4); hb_le(0, 4); hb_end();
        d.size = hb_len; d.backend = GF_BACKEND_AUTO;
        CHECK(gf_replay(&d, &rep) == GF_OK && rep.replayed == 1 && rep.mismatches == 0,
              "review S1: a device open on a backend no gf_backend has is refused again, as it was");
    }
    /* R4: a refused destroy keeps the object's number: the calls after it are replayed */
    if (rv_start("r4")) {
        gf_device_open(GF_BACKEND_STUB, 0, &dev);
        gf_stream_create(dev, NULL, &s);
        gf_event_pool_create(dev, NULL, &pool);
        gf_event_pool_acquire(pool, 0, &ev);
        gf_event_destroy(ev);   /* refused: the pool's */
        gf_event_record(ev, s);
        gf_event_pool_release(pool, ev);
        gf_record_stop();
        gf_event_pool_destroy(pool);
        gf_stream_destroy(s);
        gf_device_close(dev);
        CHECK(rv_replay(path2, &rep) == GF_OK && rep.skipped == 0 && rep.replayed == 7, "review R4: a refused destroy keeps its object's number");
        remove(path2);
    }
    /* R5: a launch refused before it read its arguments: the recorder does not read them either */
    if (gf_device_open(GF_BACKEND_STUB, 0, &dev) == GF_OK) {
        gf_arg *one = (gf_arg *)malloc(sizeof *one);   /* one entry, count 3: ASan sees a read past it */
        unsigned v = 1;
        gf_stream_create(dev, NULL, &s);
        memset(&md, 0, sizeof md); md.stub_kernels = rv_kernels; md.stub_kernel_count = 2;
        gf_module_load(dev, &md, &m);
        gf_kernel_get(m, "one_arg", &k);
        memset(&dims, 0, sizeof dims); dims.grid[0] = dims.grid[1] = dims.grid[2] = 1; dims.block[0] = dims.block[1] = dims.block[2] = 1;
        one->buffer = NULL; one->value = &v; one->size = sizeof v;
        if (rv_start("r5")) {
            CHECK_EQ_RESULT(gf_launch(s, k, dims, one, 3), GF_ERROR_INVALID_ARGUMENT);
            gf_record_stop();
            remove(path2);
        }
        free(one);
        gf_module_destroy(m);
        gf_stream_destroy(s);
        gf_device_close(dev);
    }
    /* R6: stream-ordered frees from two threads: a freed buffer handed to the other thread at
       once; its free is written first, so nothing is skipped */
    if (rv_start("r6")) {
        pthread_t t[2];
        gf_device_open(GF_BACKEND_STUB, 0, &rv_dev);
        gf_stream_create(rv_dev, NULL, &rv_stream);
        for (i = 0; i < 2; i++) pthread_create(&t[i], NULL, rv_frees, NULL);
        for (i = 0; i < 2; i++) pthread_join(t[i], NULL);
        gf_stream_synchronize(rv_stream);
        gf_stream_destroy(rv_stream);
        gf_device_close(rv_dev);
        gf_record_stop();
        CHECK(rv_replay(path2, &rep) == GF_OK && rep.skipped == 0 && rep.calls == 2 + 2 * 3 * 3000 + 3,
              "review R6: frees and allocations from two threads replay with nothing skipped");
        remove(path2);
    }
    /* R7: a launch refused for a handle in its arguments (a stream passed as a buffer; under
       GPUFLOW_DEBUG a destroyed buffer): the file has no arguments for a refused launch, so its
       replay cannot reach the same refusal; skipped, not a mismatch (it was "args[0] has
       neither a buffer nor a value" against GF_ERROR_INVALID_HANDLE) */
    if (rv_start("r7")) {
        gf_arg bad;
        rv_one_arg_setup(&dev, &s, &m, &k, &dims);
        bad.buffer = (gf_buffer *)(void *)s; bad.value = NULL; bad.size = 0;
        CHECK_EQ_RESULT(gf_launch(s, k, dims, &bad, 1), GF_ERROR_INVALID_HANDLE);
        gf_record_stop();
        gf_module_destroy(m);
        gf_stream_destroy(s);
        gf_device_close(dev);
        CHECK(rv_replay(path2, &rep) == GF_OK && rep.mismatches == 0 && rep.skipped == 1,
              "review R7: a launch refused for a handle among its arguments is skipped in the replay, not a mismatch");
        remove(path2);
    }
    /* R9: an op fault rule over a flow's runs: the run's own frame events were counted as
       operations, which the file does not have, so the replay's failures fell on other calls */
    if (rv_start("r9")) {
        gf_flow *flow = NULL;
        gf_stream_pool *sp = NULL;
        gf_task task = 0;
        gf_device_open(GF_BACKEND_STUB, 0, &dev);
        memset(&md, 0, sizeof md); md.stub_kernels = rv_kernels; md.stub_kernel_count = 2;
        gf_module_load(dev, &md, &m);
        gf_kernel_get(m, "one_arg", &rv_flow_kernel);
        gf_stream_pool_create(dev, NULL, &sp);
        gf_flow_create(dev, NULL, &flow);
        gf_flow_add(flow, "launch", rv_flow_task, NULL, &task);
        gf_faults_set("op:2/2");
        for (i = 0; i < 4; i++) { (void)gf_flow_run(flow, sp); gf_stream_pool_synchronize(sp); }
        gf_faults_set(NULL);
        gf_flow_destroy(flow);
        gf_stream_pool_destroy(sp);
        gf_module_destroy(m);
        gf_device_close(dev);
        gf_record_stop();
        CHECK(rv_replay(path2, &rep) == GF_OK && rep.mismatches == 0 && rep.skipped == 0,
              "review R9: an op fault rule over a flow's runs fails the same calls in the replay");
        remove(path2);
    }
    /* R8: a buffer a pooled capture made is its graph's: its gf_buffer_destroy_async in the
       capture is a no-op and the handle stays valid (examples/frame.c gives it to
       gf_graph_set_kernel_args); the recorder retired its number, so those calls were skipped */
    if (rv_start("r8")) {
        gf_graph_pool *gp = NULL;
        gf_buffer *scratch = NULL;
        gf_arg arg;
        rv_one_arg_setup(&dev, &s, &m, &k, &dims);
        gf_graph_pool_create(dev, &gp);
        CHECK_EQ_RESULT(gf_stream_begin_capture_pool(s, GF_CAPTURE_GLOBAL, gp), GF_OK);
        gf_buffer_create_async(s, 64, &scratch);
        arg.buffer = scratch; arg.value = NULL; arg.size = 0;
        gf_launch(s, k, dims, &arg, 1);
        CHECK_EQ_RESULT(gf_buffer_destroy_async(s, scratch), GF_OK);
        CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
        CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 0, &arg, 1), GF_OK);
        gf_graph_launch(g, s);
        gf_stream_synchronize(s);
        gf_graph_destroy(g);
        gf_graph_pool_destroy(gp);
        gf_record_stop();
        gf_module_destroy(m);
        gf_stream_destroy(s);
        gf_device_close(dev);
        CHECK(rv_replay(path2, &rep) == GF_OK && rep.mismatches == 0 && rep.skipped == 0 && rep.replayed == rep.calls,
              "review R8: a pooled capture's own buffer, freed in the capture, keeps its number: its later use replays");
        remove(path2);
    }
}

static gf_device *shared_dev;
static void *recorded_thread(void *arg)
{
    gf_stream *s;
    gf_buffer *b;
    uint32_t host[64];
    int i, ok = 1;
    (void)arg;
    memset(host, 0, sizeof host);
    if (gf_stream_create(shared_dev, NULL, &s) != GF_OK) return NULL;
    if (gf_buffer_create(shared_dev, sizeof host, &b) == GF_OK) {
        for (i = 0; i < 50 && ok; i++) {
            host[0] = (uint32_t)i;
            ok = gf_copy_to_device_async(s, b, 0, host, sizeof host) == GF_OK && gf_fill_async(s, b, 8, (unsigned char)i, 8) == GF_OK &&
                 gf_copy_to_host_async(s, host, b, 0, sizeof host) == GF_OK && gf_stream_synchronize(s) == GF_OK;
        }
        gf_buffer_destroy(b);
    }
    gf_stream_destroy(s);
    return NULL;
}
/* Review 3: a call skipped in the replay (its kernel's module lacks C kernels there) on a stream
   forked into a capture makes that capture's graph lack a launch: new arguments for the graph
   are skipped, not applied to another launch nor reported as a mismatch; and the forked stream's
   own clean capture afterwards is replayed in full. */
static void rv_kernel(const gf_kernel_ctx *c, void *const *a) { (void)c; (void)a; }
static int rv_skipped_args, rv_replayed_args;
static void rv_on_call(void *user, const gf_replay_call *c)
{
    (void)user;
    if (strcmp(c->name, "gf_graph_set_kernel_args") != 0) return;
    if (c->skipped) rv_skipped_args++;
    else if (c->replayed == GF_OK) rv_replayed_args++;
}
static void test_forked_skip(void)
{
    static const gf_stub_kernel ka[1] = { { "ka", rv_kernel, 2, NULL, 0, NULL, 0 } }, kb[1] = { { "kb", rv_kernel, 0, NULL, 0, NULL, 0 } };
    gf_record_desc rd;
    gf_replay_desc d;
    gf_replay_report rep;
    gf_device *dev = NULL;
    gf_stream *s1 = NULL, *s2 = NULL;
    gf_buffer *buf = NULL;
    gf_event *fork = NULL, *join = NULL;
    gf_module *ma = NULL, *mb = NULL;
    gf_kernel *a = NULL, *b = NULL;
    gf_graph *g = NULL;
    gf_module_desc md;
    gf_launch_dims dims;
    gf_arg args[2];
    int one = 1, seven = 7;
    snprintf(path2, sizeof path2, "record_%d_fork.gfrec", (int)getpid());
    memset(&rd, 0, sizeof rd);
    rd.path = path2;
    memset(&dims, 0, sizeof dims);
    dims.grid[0] = dims.grid[1] = dims.grid[2] = dims.block[0] = dims.block[1] = dims.block[2] = 1;
    if (!CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK)) return;
    if (gf_device_open(GF_BACKEND_STUB, 0, &dev) == GF_OK) {
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s1), GF_OK);
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s2), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &buf), GF_OK);
        CHECK_EQ_RESULT(gf_event_create(dev, 0, &fork), GF_OK);
        CHECK_EQ_RESULT(gf_event_create(dev, 0, &join), GF_OK);
        memset(&md, 0, sizeof md); md.stub_kernels = ka; md.stub_kernel_count = 1;
        CHECK_EQ_RESULT(gf_module_load(dev, &md, &ma), GF_OK);
        memset(&md, 0, sizeof md); md.stub_kernels = kb; md.stub_kernel_count = 1;
        CHECK_EQ_RESULT(gf_module_load(dev, &md, &mb), GF_OK);
        if (ma) CHECK_EQ_RESULT(gf_kernel_get(ma, "ka", &a), GF_OK);
        if (mb) CHECK_EQ_RESULT(gf_kernel_get(mb, "kb", &b), GF_OK);
        args[0].buffer = buf; args[0].value = NULL; args[0].size = 0;
        args[1].buffer = NULL; args[1].value = &one; args[1].size = sizeof one;
        CHECK_EQ_RESULT(gf_stream_begin_capture(s1, GF_CAPTURE_GLOBAL), GF_OK);
        CHECK_EQ_RESULT(gf_event_record(fork, s1), GF_OK);
        CHECK_EQ_RESULT(gf_stream_wait_event(s2, fork), GF_OK);
        CHECK_EQ_RESULT(gf_launch(s2, b, dims, NULL, 0), GF_OK);   /* launch 0: skipped in the replay */
        CHECK_EQ_RESULT(gf_launch(s1, a, dims, args, 2), GF_OK);   /* launch 1 */
        CHECK_EQ_RESULT(gf_event_record(join, s2), GF_OK);
        CHECK_EQ_RESULT(gf_stream_wait_event(s1, join), GF_OK);
        CHECK_EQ_RESULT(gf_stream_end_capture(s1, &g), GF_OK);
        args[1].value = &seven;
        CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 1, args, 2), GF_OK);
        if (g) gf_graph_destroy(g);
        g = NULL;
        CHECK_EQ_RESULT(gf_stream_begin_capture(s2, GF_CAPTURE_GLOBAL), GF_OK);   /* s2's own capture: complete */
        CHECK_EQ_RESULT(gf_launch(s2, a, dims, args, 2), GF_OK);
        CHECK_EQ_RESULT(gf_stream_end_capture(s2, &g), GF_OK);
        args[1].value = &one;
        CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 0, args, 2), GF_OK);
        if (g) gf_graph_destroy(g);
        CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
        if (ma) gf_module_destroy(ma);
        if (mb) gf_module_destroy(mb);
        if (fork) gf_event_destroy(fork);
        if (join) gf_event_destroy(join);
        if (buf) gf_buffer_destroy(buf);
        if (s2) gf_stream_destroy(s2);
        if (s1) gf_stream_destroy(s1);
        gf_device_close(dev);
    }
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    memset(&d, 0, sizeof d);
    d.path = path2; d.backend = GF_BACKEND_STUB; d.stub_kernels = ka; d.stub_kernel_count = 1; d.on_call = rv_on_call;
    rv_skipped_args = rv_replayed_args = 0;
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.mismatches == 0 && rv_skipped_args == 1 && rv_replayed_args == 1,
          "forked skip (review 3): new arguments for a graph whose forked stream's launch was skipped are skipped; the forked stream's own later capture's are replayed");
    if (rv_skipped_args != 1 || rv_replayed_args != 1) printf("  set_kernel_args skipped %d, replayed %d, mismatches %llu\n", rv_skipped_args, rv_replayed_args, (unsigned long long)rep.mismatches);
    remove(path2);
}

/* An async copy from host memory that earlier work on its stream fills (here a copy to the
   host): recorded with the bytes the copy read, taken as the stream reaches it, not those in
   memory when the call returned. A callback holds the stream until every call is made, so a
   recorder that took the bytes at the call would write the memory's old bytes, and the
   replay's read-back would differ. A 2D copy's rows too. Then a recording stopped while a
   snapshot is still queued: taken at the stop, and the file replays. */
/* The round's tests record into path2 (named for the test) and replay it: these two do both. */
static int record_into(const char *name, int device_to_host)
{
    gf_record_desc rd;
    snprintf(path2, sizeof path2, "record_%d_%s.gfrec", (int)getpid(), name);
    memset(&rd, 0, sizeof rd);
    rd.path = path2;
    rd.device_to_host = device_to_host;
    return CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK);
}
static gf_result replay_on(gf_backend on, unsigned flags, void (*on_call)(void *user, const gf_replay_call *call), gf_replay_report *rep)
{
    gf_replay_desc d;
    memset(&d, 0, sizeof d);
    d.path = path2; d.backend = on; d.flags = flags; d.on_call = on_call;
    d.stub_kernels = tk_stub_kernels; d.stub_kernel_count = 3;
    return gf_replay(&d, rep);
}

static void hold_until_open(void *user, gf_result status) { (void)status; th_flag_wait((th_flag *)user, 1, TH_WAIT_MS); }
/* One recorded session: a device, a stream held by a callback until every call is made, a copy
   to the host that fills h, then async copies from h (whole, and 16 rows of it in 2D) and the
   results read back; stop_early: the recording stops while the first copy from h waits. */
static void snapshot_session(int stop_early, uint32_t *back, unsigned char *rows, const uint32_t *words)
{
    enum { ROWS = 16, PITCH = 64, WIDTH = 32 };
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_buffer *a = NULL, *b = NULL, *c = NULL;
    unsigned char *h = NULL;
    gf_copy_2d c2;
    th_flag gate;
    if (!record_into("snapshot", 1)) return;   /* the replay compares what is read back */
    th_flag_init(&gate);
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, N * 4, &a), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, N * 4, &b), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, ROWS * WIDTH, &c), GF_OK);
        CHECK_EQ_RESULT(gf_host_alloc(dev, N * 4, (void **)&h), GF_OK);
    }
    if (s && a && b && c && h) {
        CHECK_EQ_RESULT(gf_copy_to_device(a, 0, words, N * 4), GF_OK);
        memset(h, 0x11, N * 4);   /* the old bytes */
        CHECK_EQ_RESULT(gf_stream_add_callback(s, hold_until_open, &gate), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host_async(s, h, a, 0, N * 4), GF_OK);   /* fills h when the stream runs */
        CHECK_EQ_RESULT(gf_copy_to_device_async(s, b, 0, h, N * 4), GF_OK);
        if (stop_early) CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
        memset(&c2, 0, sizeof c2);
        c2.dst = c; c2.dst_pitch = WIDTH; c2.src_host = h; c2.src_pitch = PITCH; c2.width = WIDTH; c2.height = ROWS;
        CHECK_EQ_RESULT(gf_copy_2d_async(s, &c2), GF_OK);
        th_flag_add(&gate, 1);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(back, b, 0, N * 4), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(rows, c, 0, ROWS * WIDTH), GF_OK);
    }
    if (h) gf_host_free(dev, h);
    if (c) gf_buffer_destroy(c);
    if (b) gf_buffer_destroy(b);
    if (a) gf_buffer_destroy(a);
    if (s) gf_stream_destroy(s);
    if (dev) gf_device_close(dev);
    if (!stop_early) CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    th_flag_destroy(&gate);
}
/* An async copy from host memory that earlier work on its stream fills (here a copy to the
   host): recorded with the bytes the copy read, taken as the stream reaches it, not those in
   memory when the call returned (which a recorder taking them at the call would write, so the
   replay's read-back would differ). Then a recording stopped while that snapshot is queued:
   the file is whole, and the snapshot follows its END once the stream reaches the copy. */
static void test_snapshot(void)
{
    uint32_t words[N], back[N];
    unsigned char rows[16 * 32];
    gf_replay_report rep;
    unsigned i;
    int replays, good_rows = 1;
    for (i = 0; i < N; i++) words[i] = i * 2654435761u + 7;
    memset(back, 0, sizeof back);
    memset(rows, 0, sizeof rows);
    snapshot_session(0, back, rows, words);
    CHECK(memcmp(back, words, sizeof words) == 0, "snapshot: the program's own copies ran in stream order");
    for (i = 0; i < 16; i++) good_rows &= memcmp(rows + i * 32, (unsigned char *)words + i * 64, 32) == 0;
    CHECK(good_rows, "snapshot: the 2D copy read the rows the copy to the host wrote");
    for (replays = 0; replays < 2; replays++) {   /* on the stub, and on the backend it was recorded on */
        CHECK_EQ_RESULT(replay_on(replays ? backend : GF_BACKEND_STUB, 0, NULL, &rep), GF_OK);
        CHECK(rep.mismatches == 0 && rep.skipped == 0 && rep.replayed >= 14,
              "snapshot: an async copy's bytes are those its stream gave it, so the replay reads back the same words");
        if (rep.mismatches || rep.skipped) printf("  replay on %s: %llu replayed, %llu skipped: %s\n", replays ? "the recorded backend" : "the stub",
                                                  (unsigned long long)rep.replayed, (unsigned long long)rep.skipped, rep.first_mismatch);
    }
    snapshot_session(1, back, rows, words);
    CHECK_EQ_RESULT(replay_on(GF_BACKEND_STUB, 0, NULL, &rep), GF_OK);
    CHECK(rep.mismatches == 0 && rep.skipped == 0 && rep.replayed >= 9 && !rep.cut,
          "snapshot: a recording stopped with a snapshot queued ends whole");
    {   /* the words are in the file twice: the upload of a, and the snapshot taken after the stop */
        size_t n = 0, at, found = 0;
        unsigned char *file = slurp(path2, &n);
        for (at = 0; file && at + sizeof words <= n; at++) if (!memcmp(file + at, words, sizeof words)) found++;
        CHECK(found == 2, "snapshot: one queued when the recording stopped is taken as its stream reaches it, after the file's END");
        if (found != 2) printf("  the words are in the file %u times\n", (unsigned)found);
        free(file);
    }
    remove(path2);
}

/* Pageable memory on CUDA and HIP is staged at the call (the copy reads it there, and the
   program may reuse it on return): the recording takes its bytes there too, not in stream
   order (review 4, D1: the snapshot read memory the program had already changed or freed). */
static void test_snapshot_staged(void)
{
    gf_replay_report rep;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_buffer *b = NULL;
    unsigned char *p = (unsigned char *)malloc(4096), back[4096];
    th_flag gate;
    if (backend != GF_BACKEND_CUDA && backend != GF_BACKEND_HIP) { free(p); return; }   /* the backends that stage */
    th_flag_init(&gate);
    if (p && record_into("staged", 1)) {
        if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
            CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
            CHECK_EQ_RESULT(gf_buffer_create(dev, 4096, &b), GF_OK);
        }
        if (s && b) {
            memset(p, 0x5a, 4096);
            CHECK_EQ_RESULT(gf_stream_add_callback(s, hold_until_open, &gate), GF_OK);
            CHECK_EQ_RESULT(gf_copy_to_device_async(s, b, 0, p, 4096), GF_OK);
            memset(p, 0x77, 4096);   /* legal: pageable memory was read at the call */
            th_flag_add(&gate, 1);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            CHECK_EQ_RESULT(gf_copy_to_host(back, b, 0, sizeof back), GF_OK);
            CHECK(back[0] == 0x5a && back[4095] == 0x5a, "snapshot, staged: the copy read pageable memory at the call");
        }
        if (b) gf_buffer_destroy(b);
        if (s) gf_stream_destroy(s);
        if (dev) gf_device_close(dev);
        CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
        CHECK_EQ_RESULT(replay_on(GF_BACKEND_STUB, 0, NULL, &rep), GF_OK);
        CHECK(rep.mismatches == 0, "snapshot, staged: pageable memory's bytes are recorded as the copy read them, at the call");
    }
    th_flag_destroy(&gate);
    free(p);
    remove(path2);
}

/* An async copy from host memory under `alloc:1`, its result: recording's snapshot of the
   bytes must not take the failure meant for the copy (review 4, D4). */
static gf_result copy_under_first_alloc_fault(gf_stream *s, gf_buffer *buf, const void *host, size_t n)
{
    gf_result r;
    CHECK_EQ_RESULT(gf_faults_set("alloc:1"), GF_OK);
    r = gf_copy_to_device_async(s, buf, 0, host, n);
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
    return r;
}
/* `alloc` fault rules recorded with a session: the replay's own memory (for bytes read back,
   copies' scratch, its tables) is not counted, so the same call fails as when recorded; nor
   is a recording's own, so a recorded copy fails as an unrecorded one does. */
/* Object numbers over a long recording (found by a long-run review): a 32-bit count wrapped to
   GF__REC_UNKNOWN, then 0 (NULL) and the numbers of live objects; the recording now stops at
   GF__REC_MAX_ID, saying so. A replay given a number past that refuses it: its table's 32-bit
   size doubled to 0 for ever. */
static void test_numbers_spent(void)
{
    gf_record_desc rd;
    gf_device *dev = NULL;
    gf_event *ev[3] = { NULL, NULL, NULL };
    gf__replay rp;
    gf_replay_report rep;
    gf__rp_arg a;
    int i;
    memset(&rd, 0, sizeof rd);
    rd.path = path2;
    if (!CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
        gf__rec.next_id = GF__REC_MAX_ID - 1;   /* as after 2^31 - 2 objects */
        (void)gf_event_create(dev, 0, &ev[0]);
        CHECK(gf__rec_find(ev[0]) && gf__rec_find(ev[0])->id == GF__REC_MAX_ID, "numbers spent: the last number is given");
        for (i = 1; i < 3; i++) (void)gf_event_create(dev, 0, &ev[i]);   /* no number left: the recording stops */
        for (i = 0; i < 3; i++) if (ev[i]) gf_event_destroy(ev[i]);
        gf_device_close(dev);
    }
    CHECK(gf_record_stop() == GF_ERROR_INVALID_STATE && strstr(gf_last_error(), "2^31 - 1 objects"),
          "numbers spent: the recording stopped at the last object number and says why");
    memset(&rp, 0, sizeof rp);
    memset(&rep, 0, sizeof rep);
    memset(&a, 0, sizeof a);
    rep.calls = 3000000000u;   /* as in a file of 3e9 calls */
    rp.out = &rep;
    a.id = 0x80000001u;
    CHECK(gf__rp_made(&rp, &a, 'e', NULL, 0, 0) == 0, "numbers spent: a replay refuses an object number past 2^31 - 1");
    gf__free(rp.objs);
    remove(path2);
}

static void test_alloc_faults(void)
{
    gf_replay_report rep;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_buffer *buf = NULL;
    gf_event *evs[8];
    unsigned char bytes[256];
    int i, refused = 0;
    gf_result unrecorded = GF_OK;
    memset(evs, 0, sizeof evs);
    memset(bytes, 0, sizeof bytes);
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {   /* the copy unrecorded */
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof bytes, &buf), GF_OK);
        if (s && buf) unrecorded = copy_under_first_alloc_fault(s, buf, bytes, sizeof bytes);
        if (s) CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        if (buf) gf_buffer_destroy(buf);
        if (s) gf_stream_destroy(s);
        gf_device_close(dev);
    }
    dev = NULL; s = NULL; buf = NULL;
    if (!record_into("alloc_faults", 0)) return;
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof bytes, &buf), GF_OK);
        if (s && buf) CHECK_EQ_RESULT(copy_under_first_alloc_fault(s, buf, bytes, sizeof bytes), unrecorded);
        CHECK_EQ_RESULT(gf_faults_set("alloc:12"), GF_OK);   /* one host allocation, the 12th from here, fails */
        for (i = 0; i < 8 && s && buf; i++) {
            CHECK_EQ_RESULT(gf_copy_to_host(bytes, buf, 0, sizeof bytes), GF_OK);   /* the replay reads into memory of its own */
            refused += gf_event_create(dev, 0, &evs[i]) == GF_ERROR_OUT_OF_MEMORY;
        }
        CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
        if (s && buf) {   /* a launch failed by the rule after its checks: written with its arguments (review 5, D3) */
            gf_module *mod = NULL;
            gf_kernel *add = NULL;
            gf_launch_dims dims = dims_n();
            uint32_t n = 64, v = 1;
            gf_arg args[3];
            CHECK_EQ_RESULT(gf_module_load(dev, &tk_module, &mod), GF_OK);
            if (mod) CHECK_EQ_RESULT(gf_kernel_get(mod, "add_u32", &add), GF_OK);
            args[0].buffer = buf; args[0].value = NULL; args[0].size = 0;
            args[1].buffer = NULL; args[1].value = &n; args[1].size = sizeof n;
            args[2].buffer = NULL; args[2].value = &v; args[2].size = sizeof v;
            CHECK_EQ_RESULT(gf_faults_set("op:1"), GF_OK);
            if (add) CHECK_FAIL(gf_launch(s, add, dims, args, 3), GF_ERROR_DRIVER);
            CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            if (mod) gf_module_destroy(mod);
        }
        for (i = 0; i < 8; i++) if (evs[i]) gf_event_destroy(evs[i]);
        if (buf) gf_buffer_destroy(buf);
        if (s) gf_stream_destroy(s);
        gf_device_close(dev);
    }
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    CHECK(refused == 1 || backend != GF_BACKEND_STUB, "alloc faults: the rule refused one call while recording");   /* the stub's count; a GPU backend allocates differently */
    CHECK_EQ_RESULT(replay_on(backend, 0, NULL, &rep), GF_OK);   /* a backend's calls allocate as that backend does */
    CHECK(rep.mismatches == 0, "alloc faults: the replay's own allocations are not counted, so the same call fails as recorded");
    if (rep.mismatches) printf("  %s\n", rep.first_mismatch);
    remove(path2);
}

/* A budget's callback that destroys a spare buffer charged to the budget when the warning line
   is crossed: its destroy is recorded after the create that crossed, so the replay (which has
   no callback) frees the same bytes at the same point and refuses the same create. */
static gf_buffer *bc_spare;
static int bc_refused, bc_crossed;
static void bc_budget_fn(void *user, gf_budget *budget, gf_budget_event event, uint64_t used, uint64_t asked)
{
    (void)user; (void)budget; (void)used; (void)asked;
    if (event == GF_BUDGET_REFUSED) { bc_refused++; return; }
    bc_crossed++;
    if (bc_spare) gf_buffer_destroy(bc_spare);
    bc_spare = NULL;
}
static int bc_destroys;
static void bc_on_call(void *user, const gf_replay_call *c) { (void)user; if (!strcmp(c->name, "gf_buffer_destroy") && !c->skipped) bc_destroys++; }
static void test_budget_calls(void)
{
    gf_replay_report rep;
    gf_device *dev = NULL;
    gf_budget *budget = NULL;
    gf_budget_desc bd;
    gf_buffer_desc desc;
    gf_buffer *bufs[5];
    int i, made = 0;
    memset(bufs, 0, sizeof bufs);
    bc_spare = NULL; bc_refused = bc_crossed = 0;
    if (!record_into("budget", 0)) return;
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
        memset(&bd, 0, sizeof bd);
        bd.label = "frame"; bd.limit = 4096; bd.warn_at = 0.5f; bd.fn = bc_budget_fn;
        CHECK_EQ_RESULT(gf_budget_create(dev, &bd, &budget), GF_OK);
        memset(&desc, 0, sizeof desc);
        desc.size = 1024; desc.budget = budget;
        if (budget) CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &desc, &bc_spare), GF_OK);
        for (i = 0; i < 5 && budget; i++) made += gf_buffer_create_desc(dev, &desc, &bufs[i]) == GF_OK;   /* the 1st crosses 50%: the spare goes */
        for (i = 0; i < 5; i++) if (bufs[i]) gf_buffer_destroy(bufs[i]);
        if (bc_spare) gf_buffer_destroy(bc_spare);
        if (budget) gf_budget_destroy(budget);
        gf_device_close(dev);
    }
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    CHECK(made == 4 && bc_crossed == 2 && bc_refused == 1, "budget calls: the callback freed the spare when the line was first crossed (the 2nd create crossed it again), and the 5th create was refused");
    if (made != 4 || bc_crossed != 2 || bc_refused != 1) printf("  made %d, crossed %d, refused %d\n", made, bc_crossed, bc_refused);
    bc_destroys = 0;
    CHECK_EQ_RESULT(replay_on(GF_BACKEND_STUB, 0, bc_on_call, &rep), GF_OK);
    CHECK(rep.mismatches == 0 && bc_destroys == 5, "budget calls: the calls a budget's callback makes are recorded after the call that ran it, and replay alike");
    if (rep.mismatches || bc_destroys != 5) printf("  destroys replayed %d: %s\n", bc_destroys, rep.first_mismatch);
    remove(path2);
}

/* A flow's own events (made by gpuflow, for the edges between its lanes) and, captured, its
   fork streams: the first call that names one brings a record that makes it, so the replay
   records, waits and forks as the run did and skips nothing. */
static gf_buffer *fe_a, *fe_b, *fe_c;
static gf_result fe_fill_a(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, fe_a, 0, 0x3c, 4096); }
static gf_result fe_fill_b(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, fe_b, 0, 0x4d, 4096); }
static gf_result fe_join(gf_stream *s, void *user)
{
    gf_result r = gf_copy_buffer_async(s, fe_c, 0, fe_a, 0, 2048);
    (void)user;
    return r != GF_OK ? r : gf_copy_buffer_async(s, fe_c, 2048, fe_b, 0, 2048);
}
static void test_flow_events(void)
{
    gf_replay_report rep;
    gf_device *dev = NULL;
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_flow_stats st;
    gf_stream *s = NULL;
    gf_graph *g = NULL;
    gf_task ta = 0, tb = 0, tj = 0;
    unsigned char back[4096];
    int run;
    memset(&st, 0, sizeof st);
    fe_a = fe_b = fe_c = NULL;
    if (!record_into("flow", 1)) return;
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
        CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, 4096, &fe_a), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, 4096, &fe_b), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, 4096, &fe_c), GF_OK);
        CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK);
        if (flow) {
            CHECK_EQ_RESULT(gf_flow_add(flow, "a", fe_fill_a, NULL, &ta), GF_OK);
            CHECK_EQ_RESULT(gf_flow_add(flow, "b", fe_fill_b, NULL, &tb), GF_OK);
            CHECK_EQ_RESULT(gf_flow_add(flow, "join", fe_join, NULL, &tj), GF_OK);
            CHECK_EQ_RESULT(gf_flow_depend(flow, ta, tj), GF_OK);
            CHECK_EQ_RESULT(gf_flow_depend(flow, tb, tj), GF_OK);
            for (run = 0; run < 3 && pool; run++) {   /* runs may overlap: each waits for the one before */
                CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
                CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
            }
            CHECK_EQ_RESULT(gf_flow_get_stats(flow, &st), GF_OK);
            if (pool && CHECK_EQ_RESULT(gf_stream_pool_acquire(pool, NULL, &s), GF_OK)) {   /* captured: its lanes fork from s */
                if (CHECK_EQ_RESULT(gf_flow_capture(flow, s, &g), GF_OK)) {
                    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
                    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
                    gf_graph_destroy(g);
                }
                CHECK_EQ_RESULT(gf_stream_pool_release(pool, s), GF_OK);
            }
            if (fe_c) CHECK_EQ_RESULT(gf_copy_to_host(back, fe_c, 0, sizeof back), GF_OK);
            gf_flow_destroy(flow);
        }
        if (fe_c) gf_buffer_destroy(fe_c);
        if (fe_b) gf_buffer_destroy(fe_b);
        if (fe_a) gf_buffer_destroy(fe_a);
        if (pool) gf_stream_pool_destroy(pool);
        gf_device_close(dev);
    }
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    CHECK(st.cross_edges > 0, "flow events: the join waited across lanes");
    CHECK_EQ_RESULT(replay_on(GF_BACKEND_STUB, 0, NULL, &rep), GF_OK);
    CHECK(rep.mismatches == 0 && rep.skipped == 0, "flow events: the flow's own events and fork streams are made in the replay, so its records, waits and captured forks replay, none skipped");
    if (rep.mismatches || rep.skipped) printf("  %llu replayed, %llu skipped: %s\n", (unsigned long long)rep.replayed, (unsigned long long)rep.skipped, rep.first_mismatch);
    remove(path2);
}

/* Interop: calls on what came from outside are recorded without their handles, and a replay
   stands in for them with objects of its own: a semaphore by events (a signal records one, a
   wait waits for it), so the replay orders what the semaphore ordered (the race detector finds
   nothing) and a wait that the other API ended (here, through a second handle, an import of
   the export) waits for nothing rather than for ever; a wrapped buffer by a buffer of its size.
   The export's handle means nothing to a replay: skipped, and only it. Semaphores of gpuflow's
   own are the stub's; elsewhere only the wrapped buffer. */
/* A captured flow's condition tasks: the graph's loops and branches (their begins test the int
   against the pick's index), the copies of each condition's int to the graph's own slots and
   those slots' buffer are recorded, so the replay's graph loops as the run's did. Here the body
   shifts a tape of ints left by one and the condition reads its head: 1 goes round again, 0
   ends; four times round from 0,1,1,1,0. Read back, the tape says how often the body ran. */
static gf_buffer *fc_tape, *fc_tmp, *fc_flag;
static gf_result fc_shift(gf_stream *s, void *user)
{
    gf_result r = gf_copy_buffer_async(s, fc_tmp, 0, fc_tape, 4, 60);
    (void)user;
    return r != GF_OK ? r : gf_copy_buffer_async(s, fc_tape, 0, fc_tmp, 0, 60);
}
static gf_result fc_init(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, fc_tmp, 0, 0, 64); }
static gf_result fc_done(gf_stream *s, void *user) { (void)user; return gf_fill32_async(s, fc_flag, 0, 7, 1); }
static void test_flow_conditions(void)
{
    static const uint32_t start[16] = { 0, 1, 1, 1 };
    gf_replay_report rep;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_flow *flow = NULL;
    gf_graph *g = NULL;
    gf_task init = 0, body = 0, cond = 0, done = 0;
    uint32_t tape[16], flag = 0;
    int i, zeros = 1;
    fc_tape = fc_tmp = fc_flag = NULL;
    memset(tape, 0xff, sizeof tape);
    if (!record_into("flow_cond", 1)) return;
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &fc_tape), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &fc_tmp), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, 4, &fc_flag), GF_OK);
        CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK);
        if (flow && s && fc_tape && fc_tmp && fc_flag) {
            CHECK_EQ_RESULT(gf_flow_add(flow, "init", fc_init, NULL, &init), GF_OK);   /* a loop is entered by a plain edge */
            CHECK_EQ_RESULT(gf_flow_add(flow, "shift", fc_shift, NULL, &body), GF_OK);
            CHECK_EQ_RESULT(gf_flow_add_condition(flow, "again?", fc_tape, 0, &cond), GF_OK);
            CHECK_EQ_RESULT(gf_flow_add(flow, "done", fc_done, NULL, &done), GF_OK);
            CHECK_EQ_RESULT(gf_flow_depend(flow, init, body), GF_OK);
            CHECK_EQ_RESULT(gf_flow_depend(flow, body, cond), GF_OK);
            CHECK_EQ_RESULT(gf_flow_depend(flow, cond, done), GF_OK);   /* pick 0 */
            CHECK_EQ_RESULT(gf_flow_depend(flow, cond, body), GF_OK);   /* pick 1: round again */
            if (CHECK_EQ_RESULT(gf_flow_capture(flow, s, &g), GF_OK)) {
                CHECK_EQ_RESULT(gf_copy_to_device(fc_tape, 0, start, sizeof start), GF_OK);
                CHECK_EQ_RESULT(gf_fill32_async(s, fc_flag, 0, 0, 1), GF_OK);
                CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
                CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
                CHECK_EQ_RESULT(gf_copy_to_host(tape, fc_tape, 0, sizeof tape), GF_OK);
                CHECK_EQ_RESULT(gf_copy_to_host(&flag, fc_flag, 0, sizeof flag), GF_OK);
                gf_graph_destroy(g);
            }
        }
        if (flow) gf_flow_destroy(flow);
        if (fc_flag) gf_buffer_destroy(fc_flag);
        if (fc_tmp) gf_buffer_destroy(fc_tmp);
        if (fc_tape) gf_buffer_destroy(fc_tape);
        if (s) gf_stream_destroy(s);
        gf_device_close(dev);
    }
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    for (i = 0; i < 16; i++) zeros &= tape[i] == 0;
    CHECK(zeros && flag == 7, "flow conditions: the captured loop ran four times, then done");
    if (!zeros || flag != 7) printf("  tape %u %u %u %u %u, flag %u\n", tape[0], tape[1], tape[2], tape[3], tape[15], flag);
    CHECK_EQ_RESULT(replay_on(GF_BACKEND_STUB, 0, NULL, &rep), GF_OK);
    CHECK(rep.mismatches == 0 && rep.skipped == 0, "flow conditions: the recording has the graph's loop: the replay's tape reads back as the run's");
    if (rep.mismatches || rep.skipped) printf("  %llu replayed, %llu skipped: %s\n", (unsigned long long)rep.replayed, (unsigned long long)rep.skipped, rep.first_mismatch);
    if (backend != GF_BACKEND_STUB) {
        CHECK_EQ_RESULT(replay_on(backend, 0, NULL, &rep), GF_OK);
        CHECK(rep.mismatches == 0 && rep.skipped == 0, "flow conditions: replayed where it was recorded, the same");
    }
    remove(path2);
}

/* Review 6's reproducers, each a regression: stand-ins are made outside fault rules and the
   memory limit (as the handles they stand for were), a captured flow's slots buffer is made and
   kept as gpuflow makes and keeps it, a capture a flow gives up is given up in the replay too,
   and an untrusted replay's device bound holds for native opens. Stub only. */
static gf_buffer *r6_cond, *r6_data;
static gf_result r6_work(gf_stream *s, void *user) { (void)user; return gf_fill_async(s, r6_data, 0, 1, 64); }
static gf_result r6_fail(gf_stream *s, void *user) { (void)user; (void)s; return GF_ERROR_INVALID_ARGUMENT; }
static gf_flow *r6_flow(gf_device *dev, int cond, gf_task_fn last)
{
    gf_flow *flow = NULL;
    gf_task a = 0, c = 0, b = 0;
    if (gf_flow_create(dev, NULL, &flow) != GF_OK) return NULL;
    gf_flow_add(flow, "a", r6_work, NULL, &a);
    if (cond) gf_flow_add_condition(flow, "c", r6_cond, 0, &c);
    gf_flow_add(flow, "b", last, NULL, &b);
    if (cond) { gf_flow_depend(flow, a, c); gf_flow_depend(flow, c, b); }
    else gf_flow_depend(flow, a, b);
    return flow;
}
static void test_review6(void)
{
    gf_replay_report rep;
    gf_replay_desc d;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_buffer *a = NULL, *w = NULL, *b = NULL;
    gf_flow *flow;
    gf_graph *g;
    unsigned char back[64];
    int i, cond;
    if (backend != GF_BACKEND_STUB) return;
    /* R1: a wrapped buffer is no buffer operation and no device memory: its stand-in neither */
    for (i = 0; i < 2; i++) {
        if (!record_into("r6_wrap", 0) || !CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) return;
        if (i == 0) gf_faults_set("buffer:2");
        else gf_device_set_memory_limit(dev, 128 << 10);
        a = w = b = NULL;
        gf_buffer_create(dev, 64 << 10, &a);
        if (a) gf_buffer_wrap(dev, gf_buffer_native(a), 64 << 10, &w);
        CHECK_EQ_RESULT(gf_buffer_create(dev, 64 << 10, &b), i == 0 ? GF_ERROR_OUT_OF_MEMORY : GF_OK);
        gf_faults_set(NULL);
        if (b) gf_buffer_destroy(b);
        if (w) gf_buffer_destroy(w);
        if (a) gf_buffer_destroy(a);
        gf_device_close(dev);
        gf_record_stop();
        CHECK(replay_on(GF_BACKEND_STUB, 0, NULL, &rep) == GF_OK && rep.mismatches == 0,
              i == 0 ? "review 6 R1: a wrapped buffer's stand-in is counted by no buffer fault rule" : "review 6 R1: nor against the memory limit");
        gf_faults_set(NULL);
        remove(path2);
    }
    /* R2: a captured flow's slots buffer, made three times under a memory limit, then a buffer
       that exactly fits: the replay's slots are the graph's as the run's were (freed with it) */
    if (record_into("r6_slots", 0) && CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) {
        gf_stream_create(dev, NULL, &s);
        gf_buffer_create(dev, 4, &r6_cond); gf_buffer_create(dev, 64, &r6_data);
        gf_fill_async(s, r6_cond, 0, 0, 4);
        gf_stream_synchronize(s);
        gf_device_set_memory_limit(dev, 68 + 65536);
        if ((flow = r6_flow(dev, 1, r6_work)) != NULL) {
            for (i = 0; i < 3; i++)
                if (gf_flow_capture(flow, s, &g) == GF_OK) { gf_graph_launch(g, s); gf_stream_synchronize(s); gf_graph_destroy(g); }
            gf_device_synchronize(dev);
            b = NULL;
            CHECK_EQ_RESULT(gf_buffer_create(dev, 65536, &b), GF_OK);
            if (b) gf_buffer_destroy(b);
            gf_flow_destroy(flow);
        }
        gf_buffer_destroy(r6_cond); gf_buffer_destroy(r6_data); gf_stream_destroy(s); gf_device_close(dev);
        gf_record_stop();
        CHECK(replay_on(GF_BACKEND_STUB, 0, NULL, &rep) == GF_OK && rep.mismatches == 0 && rep.skipped == 0,
              "review 6 R2: a captured flow's slots are made and freed in the replay as in the run");
        remove(path2);
    }
    /* R3: a flow capture whose task fails gives its capture up; so does the replay (else its
       stream stays capturing, and the calls after it differ) */
    for (cond = 0; cond < 2; cond++) {
        if (!record_into("r6_abandon", 1) || !CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) return;
        gf_stream_create(dev, NULL, &s);
        gf_buffer_create(dev, 4, &r6_cond); gf_buffer_create(dev, 64, &r6_data);
        if ((flow = r6_flow(dev, cond, r6_fail)) != NULL) {
            g = NULL;
            CHECK_FAIL(gf_flow_capture(flow, s, &g), GF_ERROR_INVALID_ARGUMENT);
            gf_fill_async(s, r6_data, 0, 9, 64);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            gf_copy_to_host(back, r6_data, 0, sizeof back);
            gf_flow_destroy(flow);
        }
        gf_buffer_destroy(r6_cond); gf_buffer_destroy(r6_data); gf_stream_destroy(s); gf_device_close(dev);
        gf_record_stop();
        CHECK(replay_on(GF_BACKEND_STUB, 0, NULL, &rep) == GF_OK && rep.mismatches == 0 && rep.skipped == 0,
              cond ? "review 6 R3: a flow with a condition that gives its capture up replays" : "review 6 R3: a flow that gives its capture up replays");
        remove(path2);
    }
    /* R5: a wait queued before the signal that ends it (a timeline of gpuflow's own): a replay
       cannot hold a stream for a signal it has not made yet (review 7: holding it on a real
       semaphore could hang the replay), so it waits for nothing there and says so, once, rather
       than quietly reading other bytes (they are not compared here) */
    if (record_into("r6_early", 0) && CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) {
        gf_stream *other = NULL;
        gf_semaphore *t = NULL;
        gf_stream_create(dev, NULL, &s); gf_stream_create(dev, NULL, &other);
        a = b = NULL;
        gf_buffer_create(dev, 64, &a); gf_buffer_create(dev, 64, &b);
        if (s && other && a && b && CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &t), GF_OK)) {
            gf_fill_async(other, a, 0, 0, 64); gf_fill_async(other, b, 0, 0, 64);
            gf_stream_synchronize(other);
            CHECK_EQ_RESULT(gf_semaphore_wait_async(s, t, 1), GF_OK);   /* s holds until other signals */
            gf_fill_async(s, b, 0, 0x22, 64);   /* (no buffer of other's: unordered in the replay, it must not race for real) */
            gf_fill_async(other, a, 0, 0x77, 64);
            CHECK_EQ_RESULT(gf_semaphore_signal_async(other, t, 1), GF_OK);
            gf_stream_synchronize(s);
            CHECK(gf_copy_to_host(back, b, 0, sizeof back) == GF_OK && back[0] == 0x22, "review 6 R5: the run's fill waited for the signal");
            gf_semaphore_destroy(t);
        }
        if (a) gf_buffer_destroy(a);
        if (b) gf_buffer_destroy(b);
        gf_stream_destroy(s); gf_stream_destroy(other); gf_device_close(dev);
        gf_record_stop();
        said[0] = 0;
        gf_set_logger(keep_warning, NULL);
        CHECK(replay_on(GF_BACKEND_STUB, 0, NULL, &rep) == GF_OK && rep.mismatches == 0 && strstr(said, "waits for a signal the file makes later"),
              "review 6 R5: a wait made before its signal: the replay returns, and says it could not hold the stream");
        gf_set_logger(NULL, NULL);
        remove(path2);
    }
    /* R6: a signal the backend refused (NVIDIA's OpenCL signals no imported semaphore): a
       stand-in has nothing to refuse it, so the replay skips it rather than differ */
    hb_len = 0;
    memcpy(hb_buf, "gpuflowR", 8); hb_len = 8; hb_le(3, 4); hb_le(0, 4);
    hb_begin(GF__RC_device_open); hb_le(GF_BACKEND_STUB, 4); hb_le(0, 4); hb_le(1, 4); hb_end();
    hb_begin(GF__RC_stream_create); hb_le(1, 4); hb_le(0, 4); hb_le(2, 4); hb_end();
    hb_begin(GF__RC_semaphore_create); hb_le(1, 4); hb_le(1, 4); hb_le(3, 4); hb_end();
    hb_begin(GF__RC_semaphore_signal_async); hb_len -= 4; hb_le((uint64_t)(uint32_t)GF_ERROR_NOT_SUPPORTED, 4);
    hb_le(2, 4); hb_le(3, 4); hb_le(1, 8); hb_end();
    memset(&d, 0, sizeof d);
    d.data = hb_buf; d.size = hb_len;
    CHECK(gf_replay(&d, &rep) == GF_OK && rep.replayed == 3 && rep.skipped == 1 && rep.mismatches == 0,
          "review 6 R6: a semaphore signal the backend refused is skipped, not a mismatch");
    /* R7: a signal captured in a graph is made at the graph's launch: a wait on another stream
       for it is ordered after that launch in the replay, so the detector finds no race (the
       Vulkan test's frames in a graph, on the GPU machine, replayed on the stub) */
    if (record_into("r6_graph", 0) && CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) {
        gf_stream *other = NULL;
        gf_semaphore *t = NULL, *alias = NULL;
        gf_semaphore_desc sd;
        gf_external_handle h;
        gf_stream_create(dev, NULL, &s); gf_stream_create(dev, NULL, &other);
        a = NULL;
        gf_buffer_create(dev, 64, &a);
        if (s && other && a && gf_semaphore_create(dev, 1, &t) == GF_OK && gf_semaphore_export(t, GF_EXTERNAL_HOST_FD, &h) == GF_OK) {
            memset(&sd, 0, sizeof sd);
            sd.type = GF_EXTERNAL_HOST_FD; sd.fd = h.fd; sd.timeline = 1;
            CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &alias), GF_OK);   /* another API's handle, as Vulkan's would be */
            close(h.fd);
            g = NULL;
            if (alias && CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK)) {
                gf_fill_async(s, a, 0, 0x11, 64);
                gf_semaphore_signal_async(s, alias, 1);
                CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
            }
            if (g) {
                CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
                CHECK_EQ_RESULT(gf_semaphore_wait_async(other, alias, 1), GF_OK);
                gf_fill_async(other, a, 0, 0x22, 64);
                CHECK_EQ_RESULT(gf_stream_synchronize(other), GF_OK);
                gf_stream_synchronize(s);
                gf_graph_destroy(g);
            }
        }
        if (alias) gf_semaphore_destroy(alias);
        if (t) gf_semaphore_destroy(t);
        if (a) gf_buffer_destroy(a);
        gf_stream_destroy(s); gf_stream_destroy(other); gf_device_close(dev);
        gf_record_stop();
        CHECK(replay_on(GF_BACKEND_STUB, GF_REPLAY_RACE_CHECK, NULL, &rep) == GF_OK && rep.mismatches == 0 && rep.races == 0,
              "review 6 R7: a wait for a signal captured in a graph is ordered after the graph's launch in the replay (no race)");
        if (rep.races) printf("  %llu races\n", (unsigned long long)rep.races);
        remove(path2);
    }
    /* Review 7 R8: gpuflow's own timeline signalled inside a graph, another stream waiting for
       the launch's signal: the launch's event is found past the capture's (which no stream
       outside it can wait for), so the copy after the wait reads what the graph filled.
       R9: the other way round: a wait captured in a graph for a signal made outside it is
       made by each launch (the launch stream waits first), so the graph's fill comes after the
       other stream's (no race). */
    for (i = 0; i < 2; i++) {
        gf_stream *other = NULL;
        gf_semaphore *t = NULL;
        if (!record_into("r7_graph", i == 0) || !CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) return;
        gf_stream_create(dev, NULL, &s); gf_stream_create(dev, NULL, &other);
        a = b = NULL; g = NULL;
        gf_buffer_create(dev, 64, &a); gf_buffer_create(dev, 64, &b);
        if (s && other && a && b && gf_semaphore_create(dev, 1, &t) == GF_OK && gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) == GF_OK) {
            if (i == 0) { gf_fill_async(s, a, 0, 0x33, 64); gf_semaphore_signal_async(s, t, 1); }
            else { gf_semaphore_wait_async(s, t, 1); gf_fill_async(s, a, 0, 0x44, 64); }
            CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
        }
        if (g && i == 0) {
            gf_fill_async(other, b, 0, 0, 64);
            CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
            CHECK_EQ_RESULT(gf_semaphore_wait_async(other, t, 1), GF_OK);
            gf_copy_buffer_async(other, b, 0, a, 0, 64);
            gf_stream_synchronize(other);
            CHECK(gf_copy_to_host(back, b, 0, sizeof back) == GF_OK && back[0] == 0x33, "review 7 R8: the run's copy read the graph's fill");
        } else if (g) {
            gf_fill_async(other, a, 0, 0x55, 64);
            gf_semaphore_signal_async(other, t, 1);
            CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
            gf_stream_synchronize(s);
        }
        gf_stream_synchronize(s);
        if (g) gf_graph_destroy(g);
        if (t) gf_semaphore_destroy(t);
        if (a) gf_buffer_destroy(a);
        if (b) gf_buffer_destroy(b);
        gf_stream_destroy(s); gf_stream_destroy(other); gf_device_close(dev);
        gf_record_stop();
        CHECK(replay_on(GF_BACKEND_STUB, GF_REPLAY_RACE_CHECK, NULL, &rep) == GF_OK && rep.mismatches == 0 && rep.races == 0,
              i == 0 ? "review 7 R8: a wait for an own semaphore's signal made by a graph's launch replays (the bytes match, no race)"
                     : "review 7 R9: a wait captured in a graph is made by its launch in the replay (no race)");
        if (rep.mismatches || rep.races) printf("  %llu mismatches, %llu races: %s\n", (unsigned long long)rep.mismatches, (unsigned long long)rep.races, rep.first_mismatch);
        remove(path2);
    }
    /* R4: a hand-made file of native opens: untrusted, two devices at most, as for plain opens */
    hb_len = 0;
    memcpy(hb_buf, "gpuflowR", 8); hb_len = 8; hb_le(3, 4); hb_le(0, 4);
    for (i = 0; i < 6; i++) { hb_begin(GF__RC_device_open_native); hb_le(GF_BACKEND_STUB, 4); hb_le(0, 4); hb_le((uint64_t)i + 1, 4); hb_end(); }
    memset(&d, 0, sizeof d);
    d.data = hb_buf; d.size = hb_len; d.untrusted = 1;
    CHECK(gf_replay(&d, &rep) == GF_OK && rep.replayed == 2 && rep.skipped == 4,
          "review 6 R4: an untrusted replay opens two devices at most, native opens too");
}

static int io_replayed_sems;
static void io_on_call(void *user, const gf_replay_call *c)
{
    (void)user;
    if (!strncmp(c->name, "gf_semaphore_", 13) && !c->skipped && c->replayed == GF_OK) io_replayed_sems++;
}
static void interop_session(void)
{
    gf_device *dev = NULL;
    gf_stream *a = NULL, *b = NULL;
    gf_buffer *buf = NULL, *wrapped = NULL;
    gf_semaphore *t = NULL, *alias = NULL, *bin = NULL;
    gf_semaphore_desc sd;
    gf_external_handle h;
    unsigned char back[4096];
    int own = backend == GF_BACKEND_STUB;
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &a), GF_OK);
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &b), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof back, &buf), GF_OK);
        if (own) {
            CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &t), GF_OK);
            CHECK_EQ_RESULT(gf_semaphore_create(dev, 0, &bin), GF_OK);
            if (t && CHECK_EQ_RESULT(gf_semaphore_export(t, GF_EXTERNAL_HOST_FD, &h), GF_OK)) {
                memset(&sd, 0, sizeof sd);
                sd.type = GF_EXTERNAL_HOST_FD; sd.fd = h.fd; sd.timeline = 1;
                CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &alias), GF_OK);
                close(h.fd);
            }
        }
        if (a && b && buf && t && bin && alias) {
            CHECK_EQ_RESULT(gf_fill_async(a, buf, 0, 0x5a, 2048), GF_OK);
            CHECK_EQ_RESULT(gf_semaphore_signal_async(a, t, 1), GF_OK);
            CHECK_EQ_RESULT(gf_semaphore_wait_async(b, t, 1), GF_OK);       /* b reads what a filled */
            CHECK_EQ_RESULT(gf_semaphore_wait_async(b, alias, 1), GF_OK);   /* ended through the other handle */
            CHECK_EQ_RESULT(gf_fill_async(a, buf, 2048, 0x6b, 2048), GF_OK);
            CHECK_EQ_RESULT(gf_semaphore_signal_async(a, bin, 0), GF_OK);
            CHECK_EQ_RESULT(gf_semaphore_wait_async(b, bin, 0), GF_OK);
            CHECK_EQ_RESULT(gf_copy_to_host_async(b, back, buf, 0, sizeof back), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
            CHECK(back[0] == 0x5a && back[4095] == 0x6b, "interop: the recorded run read what the other stream filled");
        }
        if (buf && CHECK_EQ_RESULT(gf_buffer_wrap(dev, gf_buffer_native(buf), sizeof back, &wrapped), GF_OK) && a) {
            CHECK_EQ_RESULT(gf_fill_async(a, wrapped, 0, 0x11, 64), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(a), GF_OK);
        }
        if (wrapped) gf_buffer_destroy(wrapped);
        if (alias) gf_semaphore_destroy(alias);
        if (bin) gf_semaphore_destroy(bin);
        if (t) gf_semaphore_destroy(t);
        if (buf) gf_buffer_destroy(buf);
        if (b) gf_stream_destroy(b);
        if (a) gf_stream_destroy(a);
        gf_device_close(dev);
    }
}
static void test_interop(void)
{
    gf_replay_report rep;
    int own = backend == GF_BACKEND_STUB;
    if (!record_into("interop", 1)) return;
    interop_session();
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    io_replayed_sems = 0;
    CHECK_EQ_RESULT(replay_on(GF_BACKEND_STUB, GF_REPLAY_RACE_CHECK, io_on_call, &rep), GF_OK);
    CHECK(rep.mismatches == 0 && rep.races == 0 && rep.skipped == (own ? 1u : 0u),
          "interop: replayed with stand-ins, no mismatch, no race (the semaphores' order kept), only the export skipped");
    if (own) CHECK(io_replayed_sems == 11, "interop: every semaphore call but the export is replayed (11)");
    if (rep.mismatches || rep.races || rep.skipped != (own ? 1u : 0u) || (own && io_replayed_sems != 11))
        printf("  %llu replayed, %llu skipped, %llu races, %d semaphore calls: %s\n", (unsigned long long)rep.replayed,
               (unsigned long long)rep.skipped, (unsigned long long)rep.races, io_replayed_sems, rep.first_mismatch);
    remove(path2);
}

static void test_threads(void)
{
    gf_record_desc rd;
    gf_replay_desc d;
    gf_replay_report rep;
    pthread_t t[4];
    int i;
    snprintf(path2, sizeof path2, "record_%d_threads.gfrec", (int)getpid());
    memset(&rd, 0, sizeof rd);
    rd.path = path2;
    if (!CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK)) return;
    if (gf_device_open(backend, 0, &shared_dev) == GF_OK) {
        for (i = 0; i < 4; i++) pthread_create(&t[i], NULL, recorded_thread, NULL);
        for (i = 0; i < 4; i++) pthread_join(t[i], NULL);
        gf_device_close(shared_dev);
    }
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    replay_desc(&d, path2, GF_BACKEND_AUTO);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.calls == 2 + 4 * (4 + 4 * 50) && rep.threads >= 4 && rep.mismatches == 0,
          "threads: four threads' calls, in the order they returned, replayed as recorded");
    remove(path2);
}

static void test_input(void)
{
    gf_record_desc rd;
    gf_replay_desc d;
    gf_replay_report rep;
    static const char not_a_file[] = "hello, this is not a recording";
    memset(&rd, 0, sizeof rd);
    CHECK_FAIL(gf_record_start(NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_record_start(&rd), GF_ERROR_INVALID_ARGUMENT);
    rd.path = "/nonexistent-dir/for/sure.gfrec";
    CHECK_FAIL(gf_record_start(&rd), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_record_stop(), GF_ERROR_INVALID_STATE);
    snprintf(path2, sizeof path2, "record_%d_twice.gfrec", (int)getpid());
    rd.path = path2;
    if (CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK)) {
        CHECK_FAIL(gf_record_start(&rd), GF_ERROR_INVALID_STATE);
        CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    }
    remove(path2);
    CHECK_FAIL(gf_replay(NULL, &rep), GF_ERROR_INVALID_ARGUMENT);
    memset(&d, 0, sizeof d);
    d.path = "/nonexistent-dir/for/sure.gfrec";
    CHECK_FAIL(gf_replay(&d, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_replay(&d, &rep), GF_ERROR_NOT_FOUND);
    /* a kernel table and flags are checked like gf_module_reload's (they were taken; found by review) */
    d.flags = 0x80u;
    CHECK_FAIL(gf_replay(&d, &rep), GF_ERROR_INVALID_ARGUMENT);
    d.flags = 0; d.stub_kernel_count = 3;
    CHECK_FAIL(gf_replay(&d, &rep), GF_ERROR_INVALID_ARGUMENT);
    d.stub_kernel_count = -1; d.stub_kernels = rv_kernels;
    CHECK_FAIL(gf_replay(&d, &rep), GF_ERROR_INVALID_ARGUMENT);
    d.stub_kernel_count = 0; d.stub_kernels = NULL;
    /* a path that cannot be written to is refused at the start (the header was buffered: /dev/full started) */
    if (access("/dev/full", W_OK) == 0) {
        rd.path = "/dev/full";
        CHECK_FAIL(gf_record_start(&rd), GF_ERROR_INVALID_ARGUMENT);
        CHECK_FAIL(gf_record_stop(), GF_ERROR_INVALID_STATE);
    }
    d.path = ".";   /* a directory: its length read as LONG_MAX, and 2^63 bytes were asked for (found by review) */
    CHECK_FAIL(gf_replay(&d, &rep), GF_ERROR_NOT_FOUND);
    {   /* a FIFO: the open waited for a writer for good */
        char fifo[64];
        snprintf(fifo, sizeof fifo, "/tmp/gpuflow-record-fifo-%ld", (long)getpid());
        remove(fifo);
        if (mkfifo(fifo, 0600) == 0) {
            d.path = fifo;
            CHECK_FAIL(gf_replay(&d, &rep), GF_ERROR_NOT_FOUND);
            remove(fifo);
        }
    }
    d.path = NULL; d.data = not_a_file; d.size = sizeof not_a_file;
    CHECK_FAIL(gf_replay(&d, &rep), GF_ERROR_INVALID_ARGUMENT);
    d.backend = (gf_backend)99;
    CHECK_FAIL(gf_replay(&d, &rep), GF_ERROR_INVALID_ARGUMENT);
}

static int env_child(void)
{
    gf_device *dev;
    gf_buffer *b, *second;
    if (gf_device_open(backend, 0, &dev) != GF_OK) return 1;
    if (gf_buffer_create(dev, 64, &b) != GF_OK) return 1;
    if (gf_buffer_create(dev, 64, &second) != GF_ERROR_OUT_OF_MEMORY) return 1;   /* GPUFLOW_FAULTS=buffer:2: recorded too */
    gf_buffer_destroy(b);
    gf_device_close(dev);
    return 0;   /* the recording ends at exit */
}
/* A program whose device does not open: its recording holds that open (an outside review: the
   recording began at the first open that succeeded, so "it does not open" left no file). */
static int env_child_open_fails(void)
{
    gf_device *dev = NULL;
    return gf_device_open(backend, 1000, &dev) == GF_OK ? 1 : 0;   /* no device 1000 */
}
static void test_env_open_fails(char *self, const char *name)
{
    char cmd[1200];
    gf_replay_desc d;
    gf_replay_report rep;
    snprintf(path2, sizeof path2, "record_%d_open_fails.gfrec", (int)getpid());
    remove(path2);
    snprintf(cmd, sizeof cmd, "GPUFLOW_RECORD=%s GPUFLOW_LOG=off '%s' --env-open-fails %s", path2, self, name);
    fflush(stdout);
    CHECK(system(cmd) == 0, "env open fails: the child ran");
    replay_desc(&d, path2, GF_BACKEND_AUTO);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.calls == 1 && rep.mismatches == 0, "env open fails: the failed open is recorded, and fails alike in the replay");
    remove(path2);
}
/* GPUFLOW_RECORD's %p: each process its own file, so a program that starts another (as
   tests/interop.c does) keeps its recording. */
static void test_env_pid(char *self, const char *name)
{
    char pattern[256];
    gf_replay_desc d;
    gf_replay_report rep;
    int status = -1;
    pid_t pid;
    snprintf(pattern, sizeof pattern, "record_%d_env_%%p.gfrec", (int)getpid());
    fflush(stdout);
    if ((pid = fork()) == 0) {
        setenv("GPUFLOW_RECORD", pattern, 1);
        setenv("GPUFLOW_FAULTS", "buffer:2", 1);
        setenv("GPUFLOW_LOG", "off", 1);
        execl(self, self, "--env-child", name, (char *)NULL);
        _exit(127);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "env %p: the child ran");
    snprintf(path2, sizeof path2, "record_%d_env_%d.gfrec", (int)getpid(), (int)pid);
    replay_desc(&d, path2, GF_BACKEND_AUTO);
    gf_faults_set(NULL);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.calls == 6 && rep.mismatches == 0, "env %p: the file is named for the child's process id");
    gf_faults_set(NULL);
    remove(path2);
}
/* An unusable GPUFLOW_RECORD is said once (found by a Windows review: gf_record_start's own
   failure was logged, then the variable's warning said it again). */
static void test_env_unusable(char *self, const char *name)
{
    char cmd[1200], line[1024];
    FILE *p;
    int said = 0;
    snprintf(cmd, sizeof cmd, "GPUFLOW_RECORD=/gpuflow-no-such-dir-%d/x.gfrec '%s' --env-child %s 2>&1", (int)getpid(), self, name);
    fflush(stdout);
    if (!CHECK((p = popen(cmd, "r")) != NULL, "env unusable: the child runs")) return;
    while (fgets(line, sizeof line, p)) said += strstr(line, "gpuflow-no-such-dir") != NULL;
    pclose(p);
    CHECK(said == 1, "env unusable: a GPUFLOW_RECORD that cannot be written is said once");
}
/* One recorder to a file (review S4): a process given the same GPUFLOW_RECORD while this one
   records, or a copy of gpuflow in this process that holds the file (an open file description's
   lock, as another copy's would be), leaves the file alone instead of cutting it and writing
   over its records. */
static void test_alone(char *self, const char *name)
{
    char cmd[1024];
    gf_record_desc rd;
    gf_replay_desc d;
    gf_replay_report rep;
    gf_device *dev;
    gf_buffer *b;
    snprintf(path2, sizeof path2, "record_%d_alone.gfrec", (int)getpid());
    memset(&rd, 0, sizeof rd);
    rd.path = path2;
    CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK);
    CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK);
    snprintf(cmd, sizeof cmd, "GPUFLOW_RECORD=%s GPUFLOW_FAULTS=buffer:2 GPUFLOW_LOG=off '%s' --env-child %s", path2, self, name);
    CHECK(system(cmd) == 0, "alone: a process given the recording's file runs on without recording");
    CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &b), GF_OK);
    gf_buffer_destroy(b);
    gf_device_close(dev);
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    replay_desc(&d, path2, GF_BACKEND_AUTO);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.calls == 4 && rep.mismatches == 0 && !rep.cut, "alone: the first recorder's file replays its own four calls after another process named it");
#if defined(__linux__)
    {
        struct flock whole;
        char kept[8] = "";
        FILE *f;
        int fd = open(path2, O_RDWR | O_TRUNC);
        memset(&whole, 0, sizeof whole);
        whole.l_type = F_WRLCK; whole.l_whence = SEEK_SET;
        CHECK(fd >= 0 && write(fd, "kept", 4) == 4 && fcntl(fd, 37 /* F_OFD_SETLK */, &whole) == 0, "alone: the file held as another copy would");
        CHECK_FAIL(gf_record_start(&rd), GF_ERROR_INVALID_STATE);
        CHECK(strstr(gf_last_error(), "another recorder writes") != NULL, "alone: the refusal says another recorder writes the file");
        close(fd);
        CHECK((f = fopen(path2, "rb")) && fread(kept, 1, 4, f) == 4 && !strcmp(kept, "kept"), "alone: the held file was not cut");
        if (f) fclose(f);
    }
#endif
    remove(path2);
}
/* The process around a recording (review S1-S5). A fork's child drops the parent's recording:
   its exit writes nothing into the parent's file, and a recorder's lock that a parent thread
   held at the fork does not hang the child's first call. The file is close-on-exec, a FIFO with
   no reader is refused rather than waited for, and a signal (EINTR) in the middle of a write
   is retried instead of ending the recording. */
static volatile sig_atomic_t ticks;
static void on_tick(int sig) { (void)sig; ticks++; }
typedef struct { int fd; const char *to; pthread_t main; int done; } pipe_reader;
static void *drain_pipe(void *user)   /* lets the pipe fill, then copies it to a file */
{
    pipe_reader *pr = (pipe_reader *)user;
    FILE *f = fopen(pr->to, "wb");
    char chunk[4096];
    ssize_t got;
    th_sleep_ms(100);
    while ((got = read(pr->fd, chunk, sizeof chunk)) > 0) if (f) fwrite(chunk, 1, (size_t)got, f);
    if (f) fclose(f);
    return NULL;
}
static void *ticker(void *user)   /* a signal to the recording thread every 0.5 ms */
{
    pipe_reader *pr = (pipe_reader *)user;
    struct timespec half = { 0, 500 * 1000 };
    while (!__atomic_load_n(&pr->done, __ATOMIC_ACQUIRE)) { pthread_kill(pr->main, SIGUSR1); nanosleep(&half, NULL); }
    return NULL;
}
static void test_process(void)
{
    gf_record_desc rd;
    gf_replay_desc d;
    gf_replay_report rep;
    gf_device *dev = NULL;
    gf_buffer *b = NULL;
    gf_stream *s = NULL;
    int status = -1, i, fds[2];
    pid_t pid;
    snprintf(path2, sizeof path2, "record_%d_process.gfrec", (int)getpid());
    memset(&rd, 0, sizeof rd);
    rd.path = path2;
    CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK);
    {
        struct stat want, st;
        int fd, found = 0, inherited = 0;
        if (stat(path2, &want) == 0)
            for (fd = 3; fd < 1024; fd++)
                if (fstat(fd, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino) {
                    found++;
                    if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC)) inherited++;
                }
        CHECK(found && !inherited, "process: every fd of the recording is close-on-exec");
    }
    if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK) && CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &b), GF_OK) &&
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK)) {
        for (i = 0; i < 8; i++) gf_fill32_async(s, b, 0, (uint32_t)i, 16);   /* records not yet written at the fork */
        fflush(stdout);
        if ((pid = fork()) == 0) exit(0);   /* exit, not _exit: what is left to write at exit is written */
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "process: a child that only exits");
        gf__spin_lock(&gf__rec.lock);   /* as a thread in the middle of a record at the fork */
        fflush(stdout);
        if ((pid = fork()) == 0) {   /* a recorded call that starts no thread (TSan allows none after such a fork) */
            gf_buffer *none = NULL;
            alarm(20);
            if (gf_buffer_create(NULL, 64, &none) != GF_ERROR_INVALID_HANDLE) _exit(3);
            _exit(gf_record_stop() == GF_ERROR_INVALID_STATE ? 0 : 4);   /* the parent's recording is not the child's */
        }
        gf__spin_unlock(&gf__rec.lock);
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "process: a child whose parent held the recorder's lock at the fork opens a device, unrecorded");
    }
    if (s) gf_stream_destroy(s);
    if (b) gf_buffer_destroy(b);
    if (dev) gf_device_close(dev);
    CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    replay_desc(&d, path2, GF_BACKEND_AUTO);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.calls == 14 && rep.mismatches == 0 && !rep.cut, "process: the file has the parent's 14 calls and no child's");
    remove(path2);

    if (CHECK(mkfifo(path2, 0600) == 0, "process: a FIFO")) {
        fflush(stdout);
        if ((pid = fork()) == 0) { alarm(20); _exit(gf_record_start(&rd) == GF_ERROR_INVALID_ARGUMENT && strstr(gf_last_error(), "FIFO") ? 0 : 3); }
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "process: a FIFO that no process reads is refused, not waited for");
        remove(path2);
    }

    /* review A: a reader that left a pipe killed the process (SIGPIPE); /dev/null was locked as
       a file, so a second recorder of it was refused; a failed write at the stop was told only
       when no snapshot was left to take */
    fflush(stdout);
    if ((pid = fork()) == 0) {
        char at[64];
        int fine = 1;
        alarm(20);
        if (pipe(fds) != 0) _exit(3);
        snprintf(at, sizeof at, "/dev/fd/%d", fds[1]);
        rd.path = at;
        if (gf_record_start(&rd) != GF_OK) _exit(4);
        close(fds[0]);
        close(fds[1]);
        if (gf_device_open(GF_BACKEND_STUB, 0, &dev) == GF_OK) gf_device_close(dev);   /* flushed: EPIPE (the stub: a driver's context stays in the parent) */
        fine = gf_record_stop() == GF_ERROR_INVALID_STATE && strstr(gf_last_error(), "Broken pipe") != NULL;
        _exit(fine ? 0 : 5);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "process: a pipe whose reader left ends the recording with EPIPE, told by gf_record_stop (SIGPIPE killed the process)");
    rd.path = "/dev/null";
    if (CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK)) {
        fflush(stdout);
        if ((pid = fork()) == 0) { alarm(20); _exit(gf_record_start(&rd) == GF_OK && gf_record_stop() == GF_OK ? 0 : 3); }
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "process: /dev/null takes two recorders (only a regular file is locked)");
        CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
    }
    rd.path = path2;
    fflush(stdout);
    if ((pid = fork()) == 0) {
        static unsigned char host[256 * 1024];
        struct rlimit small;
        gf_buffer *big = NULL;
        th_gate held;
        alarm(20);
        signal(SIGXFSZ, SIG_IGN);
        small.rlim_cur = small.rlim_max = 4096;
        if (setrlimit(RLIMIT_FSIZE, &small) != 0 || gf_record_start(&rd) != GF_OK) _exit(3);
        th_gate_init(&held);
        if (gf_device_open(GF_BACKEND_STUB, 0, &dev) != GF_OK || gf_stream_create(dev, NULL, &s) != GF_OK || gf_buffer_create(dev, sizeof host, &big) != GF_OK ||
            gf_stream_add_callback(s, th_gate_cb, &held) != GF_OK)
            _exit(4);
        for (i = 0; i < 600; i++) gf_fill32_async(s, big, 0, (uint32_t)i, 16);   /* buffered, past the file's 4 KiB */
        if (gf_copy_to_device_async(s, big, 0, host, sizeof host) != GF_OK) _exit(5);   /* its snapshot waits behind the gate */
        i = gf_record_stop() != GF_OK;
        th_gate_open(&held);
        _exit(i ? 0 : 6);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "process: a write that fails at the stop is told while a snapshot is still to come (it returned GF_OK)");
    remove(path2);

    if (CHECK(pipe(fds) == 0, "process: a pipe")) {
        struct sigaction sa, old;
        pipe_reader pr;
        pthread_t reader, tick;
        char at[64];
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_tick;   /* no SA_RESTART: a write the signal interrupts fails with EINTR */
        sigaction(SIGUSR1, &sa, &old);
        snprintf(at, sizeof at, "/dev/fd/%d", fds[1]);
        pr.fd = fds[0]; pr.to = path2; pr.main = pthread_self(); pr.done = 0;
        rd.path = at;
        CHECK_EQ_RESULT(gf_record_start(&rd), GF_OK);
        close(fds[1]);   /* the recording holds its own */
        pthread_create(&reader, NULL, drain_pipe, &pr);
        pthread_create(&tick, NULL, ticker, &pr);
        if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &dev), GF_OK)) {
            if (CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK)) {
                for (i = 0; i < 20000; i++) gf_fill32_async(s, NULL, 0, 0, 1);   /* refused fills: about 1 MB of records */
                gf_stream_destroy(s);
            }
            gf_device_close(dev);
        }
        CHECK_EQ_RESULT(gf_record_stop(), GF_OK);
        __atomic_store_n(&pr.done, 1, __ATOMIC_RELEASE);
        pthread_join(tick, NULL);
        pthread_join(reader, NULL);
        close(fds[0]);
        sigaction(SIGUSR1, &old, NULL);
        CHECK(ticks > 0, "process: signals came while the pipe was full");
        rd.path = path2;
        replay_desc(&d, path2, GF_BACKEND_AUTO);
        CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
        CHECK(rep.calls == 20004 && rep.mismatches == 0 && !rep.cut, "process: signals in the middle of writes lose no record");
        remove(path2);
    }
}
static void test_env(char *self, const char *name)
{
    char cmd[1024];
    gf_replay_desc d;
    gf_replay_report rep;
    snprintf(path2, sizeof path2, "record_%d_env.gfrec", (int)getpid());
    snprintf(cmd, sizeof cmd, "GPUFLOW_RECORD=%s GPUFLOW_FAULTS=buffer:2 GPUFLOW_LOG=off '%s' --env-child %s", path2, self, name);
    CHECK(system(cmd) == 0, "env: the child ran with GPUFLOW_RECORD");
    replay_desc(&d, path2, GF_BACKEND_AUTO);
    gf_faults_set(NULL);
    CHECK_EQ_RESULT(gf_replay(&d, &rep), GF_OK);
    CHECK(rep.calls == 6 && rep.mismatches == 0 && !rep.cut, "env: GPUFLOW_RECORD wrote the open, the fault rules, both buffers and the close");
    gf_faults_set(NULL);
    remove(path2);
}

int main(int argc, char **argv)
{
    gf_record_desc rd;
    const char *name;
    gf_device *probe;
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && (!strcmp(argv[1], "--env-child") || !strcmp(argv[1], "--env-open-fails"))) {
        char *sub[2];
        sub[0] = argv[0]; sub[1] = argv[2];
        if (!th_backend_arg(2, sub, &backend)) return 2;
        return !strcmp(argv[1], "--env-child") ? env_child() : env_child_open_fails();
    }
    if (argc == 4 && !strcmp(argv[2], "--corpus")) {   /* the fuzz target's seeds: the session, small and racy */
        if (!th_backend_arg(2, argv, &backend)) return 2;
        snprintf(path, sizeof path, "%s/session.gfrec", argv[3]);
        record_session(path, 1, 0);
        snprintf(path, sizeof path, "%s/session_cut.gfrec", argv[3]);
        record_session(path, 0, 1500);
        snprintf(path, sizeof path, "%s/session_interop.gfrec", argv[3]);
        memset(&rd, 0, sizeof rd);
        rd.path = path;
        if (gf_record_start(&rd) == GF_OK) { interop_session(); gf_record_stop(); }
        return th_finish();
    }
    if (!(name = th_backend_arg(argc, argv, &backend))) return 2;
    r = gf_device_open(backend, 0, &probe);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: record %s skipped: %s\n", name, gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    printf("record and replay on %s: %s\n", name, gf_device_name(probe));
    gf_device_close(probe);
    test_input();
    test_session();
    test_tampered();
    test_cut();
    test_threads();
    test_race();
    test_review();
    test_forked_skip();
    test_snapshot();
    test_snapshot_staged();
    test_alloc_faults();
    test_numbers_spent();
    test_budget_calls();
    test_flow_events();
    test_flow_conditions();
    test_interop();
    test_review6();
    test_env(argv[0], name);
    test_env_pid(argv[0], name);
    test_env_open_fails(argv[0], name);
    test_env_unusable(argv[0], name);
    test_alone(argv[0], name);
    test_process();
    remove(path);
    return th_finish();
}
