/* The no-driver path, as CI sees it: CUDA (and HIP) compiled in, no GPU driver or device.

   - gf_device_open(GF_BACKEND_CUDA) fails cleanly: GF_ERROR_BACKEND_UNAVAILABLE or
     GF_ERROR_NO_DEVICE, with a message that names CUDA; nothing is returned.
   - GF_BACKEND_AUTO falls back to another backend and its info.note says why CUDA was passed
     over; GPUFLOW_BACKEND=cuda makes AUTO fail the same clean way; GPUFLOW_BACKEND=stub picks
     the stub.
   Skipped (one skipped check, with a notice) when the CUDA backend is not compiled in (no
   cuda.h or no gpuflow_cuda.h at build time), or when a real CUDA device is present. */
#define _POSIX_C_SOURCE 200809L   /* setenv */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include "harness.h"

#ifndef GPUFLOW_CUDA
int main(void)
{
    printf("notice: no_driver skipped: the CUDA backend is not compiled in (cuda.h or gpuflow_cuda.h absent)\n");
    SKIP("CUDA backend not compiled in");
    return th_finish();
}
#else
static void check_clean_refusal(gf_backend b, const char *name)
{
    gf_device *d = NULL;
    gf_result r;
    char what[128];
    th_prime();
    r = gf_device_open(b, 0, &d);
    snprintf(what, sizeof what, "forcing %s without a driver or device: BACKEND_UNAVAILABLE or NO_DEVICE", name);
    CHECK(r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE, what);
    snprintf(what, sizeof what, "the message names %s", name);
    CHECK(strstr(gf_last_error(), name) != NULL, what);
    CHECK(d == NULL, "no device handed out");
    printf("notice: %s refused as expected: %s: %s\n", name, gf_result_name(r), gf_last_error());
    if (d) gf_device_close(d);
}

int main(void)
{
    gf_device *d = NULL;
    gf_device_info info = {0};
    gf_result r;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (gf_device_count(GF_BACKEND_CUDA) > 0) {
        printf("notice: no_driver skipped: a CUDA device is present (this is the GPU machine)\n");
        SKIP("a real CUDA device is present");
        return th_finish();
    }
    unsetenv("GPUFLOW_BACKEND");
    CHECK(gf_backend_available(GF_BACKEND_CUDA) == 0 || gf_device_count(GF_BACKEND_CUDA) == 0,
          "CUDA is unavailable or has no device");
    check_clean_refusal(GF_BACKEND_CUDA, "CUDA");
    check_clean_refusal(GF_BACKEND_CUDA, "CUDA");    /* the stored outcome, told again */
#ifdef GPUFLOW_HIP
    if (gf_device_count(GF_BACKEND_HIP) == 0) check_clean_refusal(GF_BACKEND_HIP, "HIP");
#endif

    /* AUTO falls back and says why */
    r = gf_device_open(GF_BACKEND_AUTO, 0, &d);
    if (CHECK_EQ_RESULT(r, GF_OK)) {
        CHECK(gf_device_backend(d) != GF_BACKEND_CUDA, "AUTO chose another backend");
        CHECK(gf_device_info(d, &info) == GF_OK && info.note[0] != 0, "AUTO's info.note is not empty");
        CHECK(strstr(info.note, "CUDA") != NULL, "the note says why CUDA was passed over");
        printf("notice: AUTO chose %s; note: %s\n", gf_backend_name(gf_device_backend(d)), info.note);
        gf_device_close(d);
    }

    /* GPUFLOW_BACKEND forces AUTO's choice */
    setenv("GPUFLOW_BACKEND", "cuda", 1);
    d = NULL;
    th_prime();
    r = gf_device_open(GF_BACKEND_AUTO, 0, &d);
    CHECK(r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE, "GPUFLOW_BACKEND=cuda: AUTO fails cleanly");
    CHECK(strstr(gf_last_error(), "CUDA") != NULL, "GPUFLOW_BACKEND=cuda: the message names CUDA");
    CHECK(d == NULL, "GPUFLOW_BACKEND=cuda: no device handed out");
    setenv("GPUFLOW_BACKEND", "stub", 1);
    r = gf_device_open(GF_BACKEND_AUTO, 0, &d);
    CHECK(r == GF_OK && gf_device_backend(d) == GF_BACKEND_STUB, "GPUFLOW_BACKEND=stub: AUTO opens the stub");
    if (r == GF_OK) gf_device_close(d);
    unsetenv("GPUFLOW_BACKEND");
    return th_finish();
}
#endif
