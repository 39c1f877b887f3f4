/* driver_skew: the CUDA backend against a driver that lacks some of its optional entry points
   (bench/smoke's stand-in libcuda with FAKE_CUDA_HIDE; run by tests/driver_skew.sh, which
   builds both). A feature whose entry points the driver lacks, even one of several, is
   GF_ERROR_NOT_SUPPORTED, and nothing calls through a missing entry.
       build/driver-skew/driver_skew full     the driver has every entry: the imports work
       build/driver-skew/driver_skew lacking  the driver lacks one of them: both refused
       build/driver-skew/driver_skew capture  a captured launch's new arguments reach the
                                              driver (it has the capture set, whatever else it lacks)
       build/driver-skew/driver_skew capture_lacking   they are refused (it lacks the set)
   Prints `N passed, N failed`. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <unistd.h>
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#define GPUFLOW_NO_NVRTC
#include "../gpuflow.h"
#include "harness.h"

/* gf_graph_set_kernel_args on a captured launch: with the capture set (cuStreamGetCaptureInfo,
   cuStreamUpdateCaptureDependencies) the backend asks the driver for the launch's node (the
   stand-in refuses cuGraphKernelNodeGetParams); without it, it refuses at once. The set was
   lost with cuGraphAddNode, a conditional node's entry, when sets went by CUDA version. */
static void check_capture(gf_device *dev, gf_stream *s, int has_set) {
    static const char ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\nret;\n}\n";
    gf_module_desc md;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_buffer *b = NULL;
    gf_graph *g = NULL;
    gf_launch_dims dims = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    gf_arg arg[1];
    memset(&md, 0, sizeof md);
    md.ptx = ptx;
    if (!CHECK_EQ_RESULT(gf_module_load(dev, &md, &mod), GF_OK) || !CHECK_EQ_RESULT(gf_kernel_get(mod, "k", &k), GF_OK) ||
        !CHECK_EQ_RESULT(gf_buffer_create(dev, 256, &b), GF_OK)) goto done;
    arg[0].value = NULL; arg[0].size = 0; arg[0].buffer = b;
    if (!CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK)) goto done;
    CHECK_EQ_RESULT(gf_launch(s, k, dims, arg, 1), GF_OK);
    if (!CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK)) goto done;
    th_prime();
    (void)gf_graph_set_kernel_args(g, 0, arg, 1);
    if (has_set) CHECK(strstr(gf_last_error(), "cuGraphKernelNodeGetParams") != NULL, "the capture set is there: new arguments go to the driver's node");
    else CHECK(strstr(gf_last_error(), "cuStreamGetCaptureInfo") != NULL, "without the capture set: refused, naming it");
done:
    if (g) gf_graph_destroy(g);
    if (b) gf_buffer_destroy(b);
    if (mod) gf_module_destroy(mod);
}

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
    if (argc > 1 && strncmp(argv[1], "capture", 7) == 0) {
        check_capture(dev, s, strcmp(argv[1], "capture") == 0);
        gf_stream_destroy(s);
        gf_device_close(dev);
        return th_finish();
    }

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
