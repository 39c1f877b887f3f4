/* Faults on demand (issue "For the people who build on gpuflow every day"): gf_faults_set and
   GPUFLOW_FAULTS make chosen operations fail, in an ordinary build (no test hook), so that a
   program's recovery paths run on any machine.

     rules      what is not a rule is refused by name and leaves the rules as they were; NULL
                clears them
     kinds      launch:N, copy:N/K, fill:N+, buffer:N, sync:N, alloc:N, op:N: exactly the
                operations named fail, with the code the issue gives and a message that says
                GPUFLOW_FAULTS and the rule; the others run and their results are right;
                captured work is not counted, a graph's replay counts as one operation
     lost       lost:N: that operation and every later one on the device return
                GF_ERROR_DEVICE_LOST; another device goes on; the lost one still closes
     entries    a driver entry point by name (OpenCL: clEnqueueNDRangeKernel; CUDA:
                cuLaunchKernel) fails as the driver's call would, named
     env        GPUFLOW_FAULTS in the environment of a new process (this program again)

   usage: on_demand stub|opencl|cuda|hip       (on_demand --env-child BACKEND: the child) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include "test_kernels.h"
#include <stdlib.h>
#include <unistd.h>
#include <dirent.h>

#define N 256u
static gf_device *dev;
static gf_stream *s;
static gf_kernel *fill, *add;
static gf_buffer *buf;

static gf_launch_dims dims_n(void)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = N / 64; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 64; d.block[1] = d.block[2] = 1;
    return d;
}
static gf_result launch(gf_kernel *k, uint32_t v)
{
    uint32_t n = N;
    gf_arg args[3] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(v) };
    return gf_launch(s, k, dims_n(), args, 3);
}
static int said(const char *words) { return strstr(gf_last_error(), words) != NULL; }
static uint32_t first_word(void)
{
    uint32_t v = 0xdeadbeefu;   /* after s's work: the blocking copy orders after nothing */
    if (gf_copy_to_host_async(s, &v, buf, 0, sizeof v) != GF_OK || gf_stream_synchronize(s) != GF_OK) return 0xdeadbeefu;
    return v;
}

static void test_rules(void)
{
    CHECK_FAIL(gf_faults_set("launch"), GF_ERROR_INVALID_ARGUMENT);
    CHECK(said("'launch' is not a rule"), "rules: a rule without a count is named");
    CHECK_FAIL(gf_faults_set("launch:0"), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_faults_set("launch:2x"), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_faults_set("lost:2/3"), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_faults_set("lanch:1"), GF_ERROR_INVALID_ARGUMENT);   /* were taken as driver entries that never fire (found by review) */
    CHECK_FAIL(gf_faults_set("LAUNCH:1"), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_faults_set("launch:99999999999999999999"), GF_ERROR_INVALID_ARGUMENT);   /* past 2^64: was its largest */
    CHECK_FAIL(gf_faults_set("copy:1/99999999999999999999"), GF_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_RESULT(gf_faults_set("cuMemAlloc:1,clFinish:2/3,hipMalloc:1+,hiprtcCompileProgram:1,nvrtcCompileProgram:1,rename:1"), GF_OK);
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
    CHECK_FAIL(gf_faults_set("copy:1,bad name:2"), GF_ERROR_INVALID_ARGUMENT);
    CHECK(said("'bad"), "rules: the first rule not understood is named");
    CHECK_EQ_RESULT(gf_faults_set("launch:2"), GF_OK);
    CHECK_FAIL(gf_faults_set("launch:1,launch:"), GF_ERROR_INVALID_ARGUMENT);   /* refused: launch:2 stays */
    CHECK_EQ_RESULT(launch(fill, 1), GF_OK);
    CHECK_FAIL(launch(fill, 2), GF_ERROR_DRIVER);
    CHECK(said("GPUFLOW_FAULTS") && said("launch:2"), "rules: a refused set leaves the rules as they were");
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
    CHECK_EQ_RESULT(launch(fill, 3), GF_OK);
    CHECK(first_word() == 3, "rules: cleared, launches run again");
}

static void test_kinds(void)
{
    uint64_t before = gf_faults_injected();
    int i, ok = 1;
    uint32_t words[4];
    gf_buffer *b2 = NULL, *b3 = NULL;
    gf_stream *extra = NULL;
    gf_graph *g = NULL;
    /* launch:3 -- the third launch alone; the kernels that ran left their results */
    CHECK_EQ_RESULT(gf_faults_set("launch:3"), GF_OK);
    CHECK_EQ_RESULT(launch(fill, 10), GF_OK);
    CHECK_EQ_RESULT(launch(add, 1), GF_OK);
    CHECK_FAIL(launch(add, 100), GF_ERROR_DRIVER);
    CHECK(said("launch is number 3") && said("'launch:3'"), "launch:3: the message says which rule");
    CHECK_EQ_RESULT(launch(add, 1), GF_OK);
    { uint32_t w = first_word(); CHECK(w == 12, "launch:3: the failed launch did nothing, the others ran"); if (w != 12) printf("  first word %u\n", w); }
    /* copy:2/2 -- copies 2, 4, 6 */
    CHECK_EQ_RESULT(gf_faults_set("copy:2/2"), GF_OK);
    for (i = 1; i <= 6; i++) {
        gf_result r = gf_copy_to_host_async(s, words, buf, 0, sizeof words);
        ok &= r == (i % 2 == 0 ? GF_ERROR_DRIVER : GF_OK);
    }
    CHECK(ok, "copy:2/2: copies 2, 4 and 6 fail, 1, 3 and 5 run");
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(words[0] == 12, "copy:2/2: what ran is right");
    /* fill:1+ -- every fill from the first */
    CHECK_EQ_RESULT(gf_faults_set("fill:1+"), GF_OK);
    for (ok = 1, i = 0; i < 3; i++) ok &= gf_fill32_async(s, buf, 0, 7u, N) == GF_ERROR_DRIVER;
    CHECK(ok, "fill:1+: every fill fails");
    CHECK(first_word() == 12, "fill:1+: none of them ran");
    /* buffer:2 -- the second buffer; nothing left behind */
    CHECK_EQ_RESULT(gf_faults_set("buffer:2"), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &b2), GF_OK);
    CHECK_FAIL(gf_buffer_create(dev, 64, &b3), GF_ERROR_OUT_OF_MEMORY);
    CHECK(b3 == NULL, "buffer:2: no buffer comes out");
    if (b2) gf_buffer_destroy(b2);
    /* sync:1 -- one host wait; the next waits */
    CHECK_EQ_RESULT(gf_faults_set("sync:1"), GF_OK);
    CHECK_EQ_RESULT(launch(add, 1), GF_OK);
    CHECK_FAIL(gf_stream_synchronize(s), GF_ERROR_DRIVER);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    /* alloc:1 -- the library's next host allocation (a stream's) */
    CHECK_EQ_RESULT(gf_faults_set("alloc:1"), GF_OK);
    CHECK_FAIL(gf_stream_create(dev, NULL, &extra), GF_ERROR_OUT_OF_MEMORY);
    CHECK(extra == NULL, "alloc:1: the stream whose memory failed is not made");
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &extra), GF_OK);
    if (extra) gf_stream_destroy(extra);
    /* op:2 with a capture: captured work is not counted, a replay is one operation */
    CHECK_EQ_RESULT(gf_faults_set("op:2"), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(launch(add, 1), GF_OK);
    CHECK_EQ_RESULT(launch(add, 1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    if (g) {
        CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);           /* op 1 */
        CHECK_FAIL(gf_graph_launch(g, s), GF_ERROR_DRIVER);      /* op 2 */
        CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);           /* op 3 */
        CHECK(first_word() == 17, "op:2: the capture's launches were not counted; two of three replays ran");
        gf_graph_destroy(g);
    }
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
    CHECK(gf_faults_injected() - before == 11, "gf_faults_injected counts every failure injected (1 + 3 + 3 + 1 + 1 + 1 + 1)");
    printf("  injected so far: %llu\n", (unsigned long long)(gf_faults_injected() - before));
    /* the message counts what the rule counts (it said "this fill is number 1" of op's count) */
    CHECK_EQ_RESULT(gf_faults_set("op:1"), GF_OK);
    CHECK_FAIL(gf_fill32_async(s, buf, 0, 1u, 1), GF_ERROR_DRIVER);
    CHECK(strstr(gf_last_error(), "this fill is op number 1, which rule 'op:1' fails") != NULL, "op:1: the message says which count the rule kept");
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
}

static volatile int slow_done;
static void slow_cb(void *user, gf_result status) { (void)user; (void)status; th_sleep_ms(100); slow_done = 1; }

static void test_lost(gf_backend backend)
{
    gf_device *other = NULL;
    gf_stream *os = NULL;
    gf_buffer *ob = NULL, *nb = NULL;
    uint32_t v = 0;
    gf_stream *slow = NULL, *none = NULL, *second = NULL;
    gf_event *before = NULL, *none_ev = NULL;
    float ms = 0;
    th_flag told;
    th_flag_init(&told);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &slow), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &second), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, GF_EVENT_TIMING, &before), GF_OK);
    if (before) CHECK_EQ_RESULT(gf_event_record(before, s), GF_OK);
    CHECK_EQ_RESULT(gf_faults_set("lost:4"), GF_OK);
    CHECK_EQ_RESULT(launch(add, 1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    if (slow) CHECK_EQ_RESULT(gf_stream_add_callback(slow, slow_cb, NULL), GF_OK);   /* op 3: queued work the close must wait for */
    if (slow) gf_stream_destroy(slow);   /* never waits: the callback still runs */
    CHECK_FAIL(launch(add, 1), GF_ERROR_DEVICE_LOST);
    CHECK(strstr(gf_last_error(), "number 4") != NULL, "lost:4: the message names the operation");
    CHECK(said("is lost from now on"), "lost:4: the fourth operation loses the device, and says so");
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);   /* the device stays lost */
    CHECK_FAIL(gf_copy_to_host_async(s, &v, buf, 0, 4), GF_ERROR_DEVICE_LOST);
    CHECK_FAIL(gf_fill32_async(s, buf, 0, 1u, 1), GF_ERROR_DEVICE_LOST);
    CHECK_FAIL(gf_stream_synchronize(s), GF_ERROR_DEVICE_LOST);
    CHECK_FAIL(gf_device_synchronize(dev), GF_ERROR_DEVICE_LOST);
    CHECK_FAIL(gf_buffer_create(dev, 64, &nb), GF_ERROR_DEVICE_LOST);
    CHECK(said("close it"), "lost: later calls say the device is lost and to close it");
    /* what is not a counted operation fails too, as on a real lost device: queries, creations,
       captures, trims and event callbacks answered as if all were well (a failure review) */
    CHECK_FAIL(gf_stream_query(s), GF_ERROR_DEVICE_LOST);
    CHECK_FAIL(gf_stream_create(dev, NULL, &none), GF_ERROR_DEVICE_LOST);
    CHECK(none == NULL, "lost: no stream made");
    CHECK_FAIL(gf_event_create(dev, 0, &none_ev), GF_ERROR_DEVICE_LOST);
    CHECK_FAIL(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_ERROR_DEVICE_LOST);
    CHECK_FAIL(gf_device_trim(dev, 0), GF_ERROR_DEVICE_LOST);
    if (second) CHECK_FAIL(gf_stream_wait_stream(second, s), GF_ERROR_DEVICE_LOST);   /* as gf_stream_wait_event: it returned GF_OK */
    if (before) {
        CHECK_FAIL(gf_event_elapsed_ms(before, before, &ms), GF_ERROR_DEVICE_LOST);
        CHECK_FAIL(gf_event_query(before), GF_ERROR_DEVICE_LOST);
        CHECK_EQ_RESULT(gf_event_on_complete(before, th_flag_cb, &told, NULL), GF_OK);
        CHECK(th_flag_wait(&told, 1, TH_WAIT_MS) && told.status == GF_ERROR_DEVICE_LOST, "lost: an event callback is told the device is lost");
        gf_event_destroy(before);
    }
    gf_stream_destroy(second);
    th_flag_destroy(&told);
    /* another device of the backend goes on */
    if (gf_device_open(backend, 0, &other) == GF_OK) {
        CHECK_EQ_RESULT(gf_stream_create(other, NULL, &os), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(other, 64, &ob), GF_OK);
        if (os && ob) {
            CHECK_EQ_RESULT(gf_fill32_async(os, ob, 0, 5u, 16), GF_OK);
            CHECK_EQ_RESULT(gf_copy_to_host_async(os, &v, ob, 0, 4), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(os), GF_OK);
            CHECK(v == 5, "lost: a second device works on");
        }
        if (ob) gf_buffer_destroy(ob);
        if (os) gf_stream_destroy(os);
        gf_device_close(other);
    }
}

/* A stream set's own frame events were operations to op and lost rules (a flow's are not): op:N
   counts shifted by two a frame (an outside review). */
static void slow_frame_work(void *user, gf_result status) { (void)status; th_sleep_ms(200); th_flag_add((th_flag *)user, 1); }
static void test_set_frames(gf_backend backend)
{
    gf_stream_set *set = NULL;
    gf_stream *t = NULL;
    gf_frame_info fi;
    if (!CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "frames", &set), GF_OK)) return;
    CHECK_EQ_RESULT(gf_faults_set("op:2"), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_next(set, 0, &t), GF_OK);
    if (t) CHECK_EQ_RESULT(gf_fill32_async(t, buf, 0, 1u, 1), GF_OK);      /* op 1 */
    CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_next(set, 1, &t), GF_OK);
    if (t) CHECK_FAIL(gf_fill32_async(t, buf, 0, 1u, 1), GF_ERROR_DRIVER);   /* op 2: the frame's events were not counted */
    CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
    {   /* the end's record fails: the frame stays open, changed in nothing, and a retry ends it.
           It was ended and counted complete all the same, so a wait for it returned while its work
           still ran (a review of partial failures) */
        const char *rule = backend == GF_BACKEND_OPENCL ? "clEnqueueMarkerWithWaitList:1" : backend == GF_BACKEND_CUDA ? "cuEventRecord:1"
                         : backend == GF_BACKEND_HIP ? "hipEventRecord:1" : "alloc:1";
        th_flag slow;
        th_flag_init(&slow);
        CHECK_EQ_RESULT(gf_stream_set_next(set, 0, &t), GF_OK);
        if (t) CHECK_EQ_RESULT(gf_stream_add_callback(t, slow_frame_work, &slow), GF_OK);
        CHECK_EQ_RESULT(gf_faults_set(rule), GF_OK);
        CHECK(gf_stream_set_end_frame(set) != GF_OK, "sets: the frame's end failed on purpose");
        CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
        CHECK(gf_stream_set_frames(set, &fi) == GF_OK && fi.open && fi.in_flight >= 1, "sets: a frame whose end failed stays open, not counted complete");
        CHECK_FAIL(gf_stream_set_wait_frames(set, 0, TH_WAIT_MS), GF_ERROR_INVALID_STATE);   /* open: end it first */
        CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
        CHECK_EQ_RESULT(gf_stream_set_wait_frames(set, 0, TH_WAIT_MS), GF_OK);
        CHECK(th_flag_get(&slow) == 1, "sets: after the retried end, a wait for the frame waits for its work");
        CHECK_EQ_RESULT(gf_stream_set_next(set, 1, &t), GF_OK);   /* the set goes on */
        CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
        CHECK_EQ_RESULT(gf_stream_set_synchronize(set), GF_OK);
        th_flag_destroy(&slow);
    }
    CHECK_EQ_RESULT(gf_stream_set_synchronize(set), GF_OK);
    gf_stream_set_destroy(set);
}

/* A kernel-cache file operation failed on purpose and was recovered from (the module was
   built anew): its "GPUFLOW_FAULTS:" note went into the next failure of the thread, unrelated,
   whose text held the operation's name ("gf_device_open" holds "open"; an outside review). */
static void test_note_not_kept(void)
{
    static const char src[] = "GF_KERNEL(note_k, GF_GLOBAL float *y, unsigned n)\n{\n    unsigned i = gf_global_id(0);\n    if (i < n) y[i] = 1.0f;\n}\n";
    char dir[96], path[96 + 260];
    gf_module_desc d;
    gf_module *m = NULL;
    gf_device *bad = NULL;
    DIR *listed;
    struct dirent *e;
    snprintf(dir, sizeof dir, "/tmp/gpuflow-on-demand-%ld", (long)getpid());
    memset(&d, 0, sizeof d);
    d.source = src;
    d.cache_dir = dir;
    CHECK_EQ_RESULT(gf_faults_set("open:1"), GF_OK);
    CHECK_EQ_RESULT(gf_module_load(dev, &d, &m), GF_OK);   /* the cache's open fails: built anew */
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
    CHECK(gf_device_open((gf_backend)77, 0, &bad) == GF_ERROR_INVALID_ARGUMENT && !strstr(gf_last_error(), "GPUFLOW_FAULTS"),
          "entries: a fault recovered from leaves no note on a later, unrelated failure");   /* no CHECK_FAIL: its priming is a failure too */
    if (m) gf_module_destroy(m);
    if ((listed = opendir(dir)) != NULL) {
        while ((e = readdir(listed)) != NULL)
            if (e->d_name[0] != '.') { snprintf(path, sizeof path, "%s/%s", dir, e->d_name); remove(path); }
        closedir(listed);
    }
    rmdir(dir);
}

static void test_entry(gf_backend backend)
{
    const char *entry = backend == GF_BACKEND_OPENCL ? "clEnqueueNDRangeKernel" : backend == GF_BACKEND_CUDA ? "cuLaunchKernel"
                      : backend == GF_BACKEND_HIP ? "hipModuleLaunchKernel" : NULL;
    char rule[64];
    if (!entry) { SKIP("entries: the stub calls no driver"); return; }
    snprintf(rule, sizeof rule, "%s:2", entry);
    CHECK_EQ_RESULT(gf_faults_set(rule), GF_OK);
    CHECK_EQ_RESULT(launch(fill, 4), GF_OK);
    CHECK(launch(fill, 5) != GF_OK && said(entry), "entries: the named driver call fails as the driver's would, and is named");
    CHECK(strstr(gf_last_error(), entry) && strstr(gf_last_error(), "GPUFLOW_FAULTS:") && strstr(gf_last_error(), rule),
          "entries: the failure's message says GPUFLOW_FAULTS and names the rule (only an info notice did)");
    CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
    CHECK_EQ_RESULT(launch(fill, 6), GF_OK);
    CHECK(first_word() == 6, "entries: the device works on");
    {   /* a wait that failed once, then answered GF_OK: its failure stayed the status of every later
           callback of the stream for good (an outside review of failure parity) */
        const char *sync_rule = backend == GF_BACKEND_OPENCL ? "clFinish:1" : backend == GF_BACKEND_CUDA ? "cuStreamSynchronize:1" : "hipStreamSynchronize:1";
        th_flag told;
        th_flag_init(&told);
        CHECK_EQ_RESULT(launch(fill, 7), GF_OK);
        CHECK_EQ_RESULT(gf_faults_set(sync_rule), GF_OK);
        CHECK(gf_stream_synchronize(s) != GF_OK, "entries: the stream's wait fails once, on purpose");
        CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_add_callback(s, th_flag_cb, &told), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK(th_flag_wait(&told, 1, TH_WAIT_MS) && told.status == GF_OK, "entries: once the stream's wait answers GF_OK, its callbacks are told GF_OK");
        th_flag_destroy(&told);
    }
    if (backend == GF_BACKEND_OPENCL) {   /* platform names unread, under GPUFLOW_OPENCL_PLATFORM: the failure is named (found by the fault loop on NVIDIA's OpenCL) */
        char platform[128];
        gf_device *other = NULL;
        const char *was = getenv("GPUFLOW_OPENCL_PLATFORM");
        char saved[128];
        snprintf(saved, sizeof saved, "%s", was ? was : "");
        snprintf(platform, sizeof platform, "%.*s", (int)strcspn(gf_device_name(dev), ":"), gf_device_name(dev));
        setenv("GPUFLOW_OPENCL_PLATFORM", platform, 1);
        CHECK_EQ_RESULT(gf_faults_set("clGetPlatformInfo:1+"), GF_OK);
        CHECK(gf_device_open(GF_BACKEND_OPENCL, 0, &other) == GF_ERROR_NO_DEVICE && said("clGetPlatformInfo"),
              "entries: platform names that cannot be read, under a platform filter: the failed call is named");
        CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
        if (other) gf_device_close(other);
        if (was) setenv("GPUFLOW_OPENCL_PLATFORM", saved, 1); else unsetenv("GPUFLOW_OPENCL_PLATFORM");
        /* a wait for another device's event is a user event completed from a callback: one
           failed clSetUserEventStatus left it unset, and the waiting stream stalled for good
           (its destroy and its device's close with it; found by review) */
        other = NULL;
        if (gf_device_open(GF_BACKEND_OPENCL, 0, &other) == GF_OK) {
            gf_stream *os = NULL;
            gf_event *ev = NULL;
            int stalled = 0;
            if (gf_stream_create(other, NULL, &os) == GF_OK && gf_event_create(dev, 0, &ev) == GF_OK) {
                uint64_t before = gf_faults_injected();
                CHECK_EQ_RESULT(gf_faults_set("clSetUserEventStatus:1"), GF_OK);
                CHECK_EQ_RESULT(gf_fill_async(s, buf, 0, 7, 64), GF_OK);
                CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
                CHECK_EQ_RESULT(gf_stream_wait_event(os, ev), GF_OK);
                CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
                stalled = !CHECK_EQ_RESULT(gf_stream_synchronize_timeout(os, TH_WAIT_MS), GF_OK);
                CHECK(gf_faults_injected() == before + 1 && !stalled,
                      "entries: clSetUserEventStatus failed once in a wait across devices, and the wait still ended");
                CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
            }
            if (ev) gf_event_destroy(ev);
            {   /* pinned memory's unmap failing once is tried again; failing for good is said (it
                   was ignored, and the driver kept the mapped memory) */
                void *pinned = NULL;
                uint64_t before = gf_faults_injected();
                gf_set_logger(th_said_logger, NULL);
                th_said_clear();
                CHECK_EQ_RESULT(gf_faults_set("clEnqueueUnmapMemObject:1"), GF_OK);
                if (CHECK_EQ_RESULT(gf_host_alloc(other, 4096, &pinned), GF_OK)) gf_host_free(other, pinned);
                CHECK(gf_faults_injected() == before + 1 && th_said_count("stays mapped") == 0, "entries: a failed unmap of pinned memory is tried again");
                CHECK_EQ_RESULT(gf_faults_set("clEnqueueUnmapMemObject:1+"), GF_OK);
                if (CHECK_EQ_RESULT(gf_host_alloc(other, 4096, &pinned), GF_OK)) gf_host_free(other, pinned);
                CHECK_EQ_RESULT(gf_faults_set(NULL), GF_OK);
                CHECK(th_said_count("stays mapped") == 1, "entries: an unmap that keeps failing is said, not ignored");
                gf_set_logger(NULL, NULL);
            }
            if (!stalled) {   /* a stalled stream's destroy and close would wait for ever */
                if (os) gf_stream_destroy(os);
                gf_device_close(other);
            }
        }
    }
}

static int env_child(gf_backend backend)
{
    gf_device *d = NULL;
    gf_buffer *a = NULL, *b = NULL;
    if (gf_device_open(backend, 0, &d) != GF_OK) return 3;
    if (gf_buffer_create(d, 64, &a) != GF_OK) return 4;
    if (gf_buffer_create(d, 64, &b) != GF_ERROR_OUT_OF_MEMORY || !strstr(gf_last_error(), "GPUFLOW_FAULTS")) return 5;
    gf_buffer_destroy(a);
    gf_device_close(d);
    return 0;
}

int main(int argc, char **argv)
{
    gf_backend backend;
    const char *name;
    gf_module *mod = NULL;
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && !strcmp(argv[1], "--env-child")) {
        char *sub[2];
        sub[0] = argv[0]; sub[1] = argv[2];
        return th_backend_arg(2, sub, &backend) ? env_child(backend) : 2;
    }
    if (!(name = th_backend_arg(argc, argv, &backend))) return 2;
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: on_demand %s skipped: %s\n", name, gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    printf("faults on demand on %s: %s\n", name, gf_device_name(dev));
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, N * 4, &buf), GF_OK);
    CHECK_EQ_RESULT(gf_module_load(dev, &tk_module, &mod), GF_OK);
    if (mod) { CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &fill), GF_OK); CHECK_EQ_RESULT(gf_kernel_get(mod, "add_u32", &add), GF_OK); }
    if (s && buf && fill && add) {
        char cmd[4096];
        test_rules();
        test_kinds();
        test_entry(backend);
        test_set_frames(backend);
        if (backend != GF_BACKEND_STUB) test_note_not_kept();   /* a module from source: a driver's compiler */
        snprintf(cmd, sizeof cmd, "GPUFLOW_FAULTS=buffer:2 GPUFLOW_LOG=off '%s' --env-child %s", argv[0], name);
        {
            int rc = system(cmd);
            if (!CHECK(rc == 0, "env: GPUFLOW_FAULTS=buffer:2 fails a new process's second buffer"))
                printf("  the child's status: %d (3: no device opened, 4: the first buffer failed, 5: the second did not)\n", rc);
        }
        test_lost(backend);   /* last: the device stays lost */
    }
    if (mod) gf_module_destroy(mod);
    if (buf) gf_buffer_destroy(buf);
    if (s) gf_stream_destroy(s);
    gf_device_close(dev);
    CHECK(slow_done == 1, "lost: the lost device's close still waited for its queued work");
    return th_finish();
}
