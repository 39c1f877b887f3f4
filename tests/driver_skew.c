/* driver_skew: the CUDA backend against a driver that lacks some of its optional entry points
   (bench/smoke's stand-in libcuda with FAKE_CUDA_HIDE; run by tests/driver_skew.sh, which
   builds both). A feature whose entry points the driver lacks, even one of several, is
   GF_ERROR_NOT_SUPPORTED, and nothing calls through a missing entry.
       build/driver-skew/driver_skew full     the driver has every entry: the imports work
       build/driver-skew/driver_skew lacking  the driver lacks one of them: both refused
   Prints `N passed, N failed`. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <unistd.h>
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#define GPUFLOW_NO_NVRTC
#include "../gpuflow.h"
#include "harness.h"

int main(int argc, char **argv) {
    int full = argc > 1 && strcmp(argv[1], "full") == 0;
    gf_result expect = full ? GF_OK : GF_ERROR_NOT_SUPPORTED;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_semaphore *sem = NULL;
    gf_buffer *imported = NULL;
    gf_external_memory_desc md;
    gf_semaphore_desc sd;
    gf_result r;
    if ((r = gf_device_open(GF_BACKEND_CUDA, 0, &dev)) != GF_OK) {
        CHECK(0, "the stand-in driver opens");
        printf("  %s\n", gf_last_error());
        return th_finish();
    }
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);

    memset(&sd, 0, sizeof sd);
    sd.type = GF_EXTERNAL_OPAQUE_FD;
    sd.fd = dup(1);   /* the stand-in takes any fd (and, as the driver, owns it on success) */
    r = gf_semaphore_import(dev, &sd, &sem);
    CHECK(r == expect, full ? "an opaque-fd semaphore imports" : "a semaphore import where the driver lacks one of its entries: NOT_SUPPORTED");
    if (r != GF_OK) close(sd.fd);
    if (sem) {
        CHECK_EQ_RESULT(gf_semaphore_signal_async(s, sem, 1), GF_OK);
        CHECK_EQ_RESULT(gf_semaphore_wait_async(s, sem, 1), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        gf_semaphore_destroy(sem);
    }

    memset(&md, 0, sizeof md);
    md.type = GF_EXTERNAL_OPAQUE_FD;
    md.fd = dup(1);
    md.size = 4096;
    r = gf_buffer_import(dev, &md, &imported);
    CHECK(r == expect, full ? "an opaque-fd buffer imports" : "a buffer import where the driver lacks one of its set's entries: NOT_SUPPORTED");
    if (r != GF_OK) close(md.fd);
    if (imported) {
        CHECK_EQ_RESULT(gf_fill_async(s, imported, 0, 7, 4096), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        gf_buffer_destroy(imported);
    }
    gf_stream_destroy(s);
    gf_device_close(dev);
    return th_finish();
}
