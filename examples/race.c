/* race.c -- a deliberate race, the detector's report, then the fix.

   Two streams share a buffer: `upload` copies data into it and `compute` runs a kernel on
   it. Nothing tells `compute` to wait for the upload, so the kernel may read the buffer
   before, during or after the copy: a race, and on a GPU the kind that works on your
   machine and fails on another. With the race detector on, gpuflow follows every operation
   it enqueues (which bytes of which buffer it reads and writes) and every ordering it knows
   (stream order, events, waits, synchronizes), and reports two accesses to the same bytes,
   one of them a write, that nothing orders. Here both the kernel and the read-back after it
   on `compute` touch what the upload writes, so one missing wait makes two races. Each is
   reported once (however often it repeats): as a warning through the logger, at the moment
   the second operation is enqueued, and kept for gf_race_report.
   The fix is the one the report suggests: an event recorded after the upload, waited for by
   `compute`. (GPUFLOW_RACE_CHECK=1 in the environment turns the detector on for every device,
   with no change to the program.)

   Build and run:
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/race.c -o race -pthread -ldl && ./race
*/
#include "example.h"

enum { N = 1024 };

/* Warnings (a race is one) printed as they happen; errors are printed by CHECK already. */
static void print_warnings(void *user, gf_log_level level, gf_result code, const char *message) {
    (void)user;
    (void)code;
    if (level == GF_LOG_WARNING) printf("  logger: warning: %s\n", message);
}

/* Uploads 0, 1, 2, ... on `upload` and computes x = 2x + 1 on `compute`; with fixed set, an
   event orders the two. Each version runs on a device of its own, so its count is its own. */
static int run(int fixed) {
    static float input[N], output[N];
    gf_device *dev;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();
    gf_stream *upload, *compute;
    gf_event *uploaded;
    gf_buffer *x;
    gf_race_info info;
    unsigned n = N;
    float a = 2.0f, b = 1.0f;
    int i;

    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_race_check_enable(dev, GF_RACE_CHECK_ON));
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &scale));
    gf_stream_desc upload_desc = { .label = "upload" };     /* reports name streams by their labels */
    gf_stream_desc compute_desc = { .label = "compute" };
    CHECK(gf_stream_create(dev, &upload_desc, &upload));
    CHECK(gf_stream_create(dev, &compute_desc, &compute));
    CHECK(gf_event_create(dev, 0, &uploaded));
    CHECK(gf_buffer_create(dev, sizeof input, &x));
    for (i = 0; i < N; i++) input[i] = (float)i;

    printf("%s version:\n", fixed ? "fixed" : "racy");
    {
        gf_arg args[] = { GF_ARG_BUFFER(x), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
        CHECK(gf_copy_to_device_async(upload, x, 0, input, sizeof input));   /* writes x */
        if (fixed) {
            CHECK(gf_event_record(uploaded, upload));     /* "the upload is done" ... */
            CHECK(gf_stream_wait_event(compute, uploaded));   /* ... comes before what follows */
        }
        CHECK(gf_launch(compute, scale, example_dims(n), args, 4));         /* reads and writes x */
        CHECK(gf_copy_to_host_async(compute, output, x, 0, sizeof output));
    }
    CHECK(gf_device_synchronize(dev));

    CHECK(gf_race_report(dev, &info));
    printf("  gf_race_report: %llu race%s\n", (unsigned long long)info.count, info.count == 1 ? "" : "s");
    for (i = 0; i < info.reports; i++) printf("    %s\n", info.report[i]);
    if (fixed) {   /* ordered, so the result is right every time */
        for (i = 0; i < N; i++)
            if (output[i] != 2.0f * (float)i + 1.0f) { fprintf(stderr, "element %d: %g\n", i, output[i]); return 1; }
        if (info.count != 0) return 1;
    } else if (info.count == 0) {
        fprintf(stderr, "the detector missed the race\n");
        return 1;
    }

    gf_buffer_destroy(x);
    gf_event_destroy(uploaded);
    gf_stream_destroy(compute);
    gf_stream_destroy(upload);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}

int main(void) {
    gf_set_logger(print_warnings, NULL);
    if (run(0) != 0 || run(1) != 0) return 1;
    printf("the race was found, and the fixed version has none: ok\n");
    return 0;
}
