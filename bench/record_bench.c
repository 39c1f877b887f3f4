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
   against the wrapper with it off, batches alternating again. The stub runs inline here
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
    remove(path);
    gf_host_free(dev, pinned);
    gf_buffer_destroy(dst);
    gf_module_destroy(mod);
    gf_event_destroy(ev);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return 0;
}
