/* record_bench.c -- what recording costs per call: off (the wrapper every recorded call now
   passes through) against the call's body alone, and on (a file written) against off, in one
   run.

   ./record_bench [stub|cuda|opencl]      (default: the device GF_BACKEND_AUTO opens)

   The benchmark includes the implementation, so it can call a recorded call's body
   (gf__call_*) directly: that is the call as it was before recording existed, the floor. Three
   calls, each timed in batches that alternate body / wrapper (medians of BATCHES):
     - gf_stream_query on an idle stream (no driver work on the stub: the wrapper's share is
       largest here);
     - gf_event_record of one event on one stream;
     - gf_launch of an empty kernel (stub: 1 block of 1 thread; a GPU: the driver's launch);
     - gf_copy_to_device_async of 256 bytes from pinned memory: recording takes its bytes as
       the stream reaches the copy, through a host callback queued before it (the snapshot).
   Then the same three with recording on (to a file in TMPDIR, device-to-host bytes off),
   against the wrapper with it off, batches alternating again. Last, how a replay's time grows:
   programs of 10k and 40k frames (each frame makes a buffer and an event, fills and records;
   every 1000 frames all are destroyed) recorded, then replayed; the replay's time per call against the recorded
   run's, and the 40k replay's time per call against the 10k one's (1.0: linear). The stub runs inline here
   (GPUFLOW_STUB_INLINE), so its figures do not swing with a worker thread's wake-ups. Nothing
   here is asserted.

   Build (the Makefile's bench rule):
       cc -std=c99 -O2 -I. -isystem /usr/local/cuda/include bench/record_bench.c -o build/bench/record_bench -pthread -ldl -lm
*/
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_STUB_INLINE   /* the stub runs work in the calling thread: its figures are the calls' own, not a worker's wake-ups */
#define GPUFLOW_CUDA
#if defined(__has_include)
#  if __has_include(<CL/cl.h>)
#    define GPUFLOW_OPENCL
#  endif
#endif
#include "gpuflow.h"
#include "tests/test_kernels.h"
#include "bench/bench.h"

enum { BATCHES = 11, ROUNDS = 20000 };

static double now_ns(void) { return bench_now_us() * 1e3; }

static gf_stream *s;
static gf_event *ev;
static gf_kernel *empty;
static gf_buffer *dst;
static void *pinned;
enum { COPY_BYTES = 256 };

/* One operation, by its body (0) or its public, recorded entry point (1). */
static void query(int wrapped) { if (wrapped) (void)gf_stream_query(s); else (void)gf__call_stream_query(s); }
static void record(int wrapped) { CHECK(wrapped ? gf_event_record(ev, s) : gf__call_event_record(ev, s)); }
static void launch(int wrapped) {
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    d.block[0] = d.block[1] = d.block[2] = 1;
    CHECK(wrapped ? gf_launch(s, empty, d, NULL, 0) : gf__call_launch(s, empty, d, NULL, 0));
}
static void upload(int wrapped) {
    CHECK(wrapped ? gf_copy_to_device_async(s, dst, 0, pinned, COPY_BYTES) : gf__call_copy_to_device_async(s, dst, 0, pinned, COPY_BYTES));
}

/* ns per call of op, for side 0 and side 1, batches alternating; the stream drained after each. */
static void time_pair(void (*op)(int), double out[2]) {
    double t[2][BATCHES];
    int b, side, i;
    for (b = 0; b < BATCHES; b++)
        for (side = 0; side < 2; side++) {
            double t0 = now_ns();
            for (i = 0; i < ROUNDS; i++) op(side);
            t[side][b] = (now_ns() - t0) / ROUNDS;
            CHECK(gf_stream_synchronize(s));
        }
    out[0] = bench_median(t[0], BATCHES);
    out[1] = bench_median(t[1], BATCHES);
}
/* ns per call of the wrapper with recording off, then on (batches alternating). */
static void time_recording(void (*op)(int), const char *path, double out[2]) {
    double t[2][BATCHES];
    gf_record_desc rd;
    int b, side, i;
    memset(&rd, 0, sizeof rd);
    rd.path = path;
    rd.max_bytes = (uint64_t)4 << 30;
    for (b = 0; b < BATCHES; b++)
        for (side = 0; side < 2; side++) {
            double t0;
            if (side) CHECK(gf_record_start(&rd));
            t0 = now_ns();
            for (i = 0; i < ROUNDS; i++) op(1);
            t[side][b] = (now_ns() - t0) / ROUNDS;
            if (side) CHECK(gf_record_stop());
            CHECK(gf_stream_synchronize(s));
        }
    out[0] = bench_median(t[0], BATCHES);
    out[1] = bench_median(t[1], BATCHES);
}

/* Records a program of `frames` frames on a device of backend b, opened inside the recording:
   each frame makes a buffer and an event, fills the buffer and records the event; every 1000
   frames it waits and destroys what it made (so 1000 of each live at once, at most). Returns
   the seconds the program's calls took. */
static double record_frames(gf_backend b, const char *path, int frames) {
    enum { KEEP = 1000 };
    static gf_buffer *bufs[KEEP];
    static gf_event *evs[KEEP];
    gf_record_desc rd;
    gf_device *dev;
    gf_stream *q;
    double t0;
    int f, k;
    memset(&rd, 0, sizeof rd);
    rd.path = path;
    rd.max_bytes = (uint64_t)4 << 30;
    CHECK(gf_record_start(&rd));
    t0 = bench_now_us();
    CHECK(gf_device_open(b, 0, &dev));
    CHECK(gf_stream_create(dev, NULL, &q));
    for (f = 0; f < frames; f++) {
        CHECK(gf_buffer_create(dev, 4096, &bufs[f % KEEP]));
        CHECK(gf_fill_async(q, bufs[f % KEEP], 0, (unsigned char)f, 4096));
        CHECK(gf_event_create(dev, 0, &evs[f % KEEP]));
        CHECK(gf_event_record(evs[f % KEEP], q));
        if (f % KEEP == KEEP - 1 || f == frames - 1) {
            CHECK(gf_stream_synchronize(q));
            for (k = 0; k <= f % KEEP; k++) { gf_event_destroy(evs[k]); gf_buffer_destroy(bufs[k]); }
        }
    }
    gf_stream_destroy(q);
    gf_device_close(dev);
    t0 = bench_now_us() - t0;
    CHECK(gf_record_stop());
    return t0 * 1e-6;
}
static void replay_growth(gf_backend b, const char *path) {
    static const int frames[2] = { 10000, 40000 };
    double per_call[2];
    int i;
    printf("replay's growth: %-8s %8s %12s %12s %14s %12s\n", "frames", "calls", "recorded s", "replayed s", "replay/record", "ns per call");
    for (i = 0; i < 2; i++) {
        gf_replay_desc d;
        gf_replay_report rep;
        double recorded = record_frames(b, path, frames[i]), t0;
        memset(&d, 0, sizeof d);
        memset(&rep, 0, sizeof rep);
        d.path = path;
        t0 = bench_now_us();
        CHECK(gf_replay(&d, &rep));
        t0 = (bench_now_us() - t0) * 1e-6;
        per_call[i] = t0 * 1e9 / (double)(rep.calls ? rep.calls : 1);
        printf("                 %-8d %8llu %12.3f %12.3f %14.3f %12.1f (replayed %llu, skipped %llu)\n", frames[i], (unsigned long long)rep.calls, recorded, t0,
               t0 / recorded, per_call[i], (unsigned long long)rep.replayed, (unsigned long long)rep.skipped);
    }
    printf("replay's time per call, 40k frames against 10k: %.3f (1.0: linear in calls)\n", per_call[1] / per_call[0]);
}

int main(int argc, char **argv) {
    static const struct { const char *name; void (*op)(int); } ops[] = {
        { "gf_stream_query, idle stream", query }, { "gf_event_record", record }, { "gf_launch, empty kernel", launch },
        { "gf_copy_to_device_async, 256 B", upload },
    };
    gf_backend b = bench_backend(argc, argv, "record_bench [stub|cuda|opencl|hip]");
    gf_device *dev;
    gf_module *mod;
    char path[512];
    const char *tmp = getenv("TMPDIR");
    size_t i;
    CHECK(gf_device_open(b, 0, &dev));
    CHECK(gf_stream_create(dev, NULL, &s));
    CHECK(gf_event_create(dev, 0, &ev));
    CHECK(gf_module_load(dev, &tk_module, &mod));
    CHECK(gf_kernel_get(mod, "empty", &empty));
    CHECK(gf_buffer_create(dev, COPY_BYTES, &dst));
    CHECK(gf_host_alloc(dev, COPY_BYTES, &pinned));
    memset(pinned, 7, COPY_BYTES);
    snprintf(path, sizeof path, "%s/record_bench.gfrec", tmp && *tmp ? tmp : "/tmp");
    printf("record_bench on %s (%s backend), medians of %d batches of %d calls\n", gf_device_name(dev),
           gf_backend_name(gf_device_backend(dev)), BATCHES, ROUNDS);
    printf("%-32s %10s %10s %8s %9s | %10s %10s %8s\n", "call", "body ns", "off ns", "off/body", "off-body", "off ns", "on ns", "on/off");
    for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        double pair[2], rec[2];
        time_pair(ops[i].op, pair);
        time_recording(ops[i].op, path, rec);
        printf("%-32s %10.1f %10.1f %8.3f %+9.1f | %10.1f %10.1f %8.3f\n", ops[i].name, pair[0], pair[1], pair[1] / pair[0], pair[1] - pair[0],
               rec[0], rec[1], rec[1] / rec[0]);
    }
    replay_growth(b, path);
    remove(path);
    gf_host_free(dev, pinned);
    gf_buffer_destroy(dst);
    gf_module_destroy(mod);
    gf_event_destroy(ev);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return 0;
}
