/* cuBLAS on gpuflow's streams and buffers, through the native handles (GPU machine only).

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -DGPUFLOW_CUDA -isystem /usr/local/cuda/include \
          tests/cublas_interop.c -o build/cublas_interop -pthread -ldl
       ./build/cublas_interop

   The toolkit's cuBLAS (libcublas.so.13, else .12; loaded at run time, as gpuflow loads the
   driver) runs SGEMM on a gpuflow stream (cublasSetStream with gf_stream_native) over gpuflow
   buffers (device pointers from gf_buffer_native):
     1. A and B uploaded and C filled by gpuflow, then REPEAT SGEMMs accumulating into C on
        the same stream: C = 1 + REPEAT * A*B, checked against a CPU reference;
     2. ordering: an event recorded on that stream after the SGEMMs, waited for by another
        gpuflow stream that reads C, and a gpuflow copy on the SGEMM's own stream after them
        (a 1 GiB fill first keeps the GPU well behind the host, so a missing wait would read
        C before the SGEMMs had written it);
     3. a gpuflow capture of a stream running cuBLAS: the SGEMMs become part of the native
        graph, and replaying it recomputes C.
   Without a CUDA driver or device, or without cuBLAS, it skips (SKIP) and passes. Ends with
   `N passed, N failed[, N skipped]`. */
#define GPUFLOW_IMPLEMENTATION
#ifndef GPUFLOW_CUDA
#define GPUFLOW_CUDA
#endif
#include "../gpuflow.h"
#include <stdlib.h>
#include <stdint.h>
#include <dlfcn.h>
/* The toolkit's headers use anonymous unions (C11): quiet under -Wpedantic with -I too. */
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cublas_v2.h>
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif
#include "harness.h"

enum { M = 512, N = 384, K = 448, REPEAT = 16 };
#define LAG_BYTES ((size_t)1 << 30)

/* The cuBLAS entries used, typed as cublas_api.h declares them (checked below). */
static struct {
    cublasStatus_t (CUBLASWINAPI *Create)(cublasHandle_t *);
    cublasStatus_t (CUBLASWINAPI *Destroy)(cublasHandle_t);
    cublasStatus_t (CUBLASWINAPI *GetVersion)(cublasHandle_t, int *);
    cublasStatus_t (CUBLASWINAPI *SetStream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (CUBLASWINAPI *Sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const float *, const float *, int, const float *, int, const float *, float *, int);
} cb;

/* Never called: each slot's type against the header's declaration (no symbol is referenced). */
static void signatures_match_header(void)
{
    (void)sizeof(cb.Create == &cublasCreate_v2);
    (void)sizeof(cb.Destroy == &cublasDestroy_v2);
    (void)sizeof(cb.GetVersion == &cublasGetVersion_v2);
    (void)sizeof(cb.SetStream == &cublasSetStream_v2);
    (void)sizeof(cb.Sgemm == &cublasSgemm_v2);
}

static int resolve(void *lib, const char *name, void *slot)
{
    void *sym = dlsym(lib, name);
    if (!sym) { printf("notice: %s lacks %s\n", "libcublas", name); return 0; }
    memcpy(slot, &sym, sizeof sym);   /* object pointer into a function pointer slot */
    return 1;
}

static void *load_cublas(void)
{
    static const char *names[] = { "libcublas.so.13", "libcublas.so.12",
                                   "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12" };
    void *lib = NULL;
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        if ((lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) != NULL) printf("cuBLAS: %s\n", names[i]);
    if (!lib) { printf("notice: no libcublas.so.13 or .12: %s\n", dlerror()); return NULL; }
    if (!resolve(lib, "cublasCreate_v2", &cb.Create) || !resolve(lib, "cublasDestroy_v2", &cb.Destroy) ||
        !resolve(lib, "cublasGetVersion_v2", &cb.GetVersion) || !resolve(lib, "cublasSetStream_v2", &cb.SetStream) ||
        !resolve(lib, "cublasSgemm_v2", &cb.Sgemm)) {
        dlclose(lib);
        return NULL;
    }
    return lib;
}

/* Entries that are multiples of 1/4 in [-1.5, 1.5]: every product and partial sum is exact in
   float (and in TF32), so any summation order gives the same C. */
static float entry(int i, int salt) { return (float)((i * 7 + salt) % 13 - 6) / 4.0f; }

/* C = 1 + REPEAT * A*B, column-major: A is M x K, B is K x N, C is M x N. */
static void reference(const float *a, const float *b, float *c)
{
    int i, j, k;
    for (j = 0; j < N; j++)
        for (i = 0; i < M; i++) {
            double sum = 0;
            for (k = 0; k < K; k++) sum += (double)a[i + (size_t)k * M] * b[k + (size_t)j * K];
            c[i + (size_t)j * M] = (float)(1.0 + REPEAT * sum);
        }
}

static int matches(const float *got, const float *want, const char *what)
{
    size_t i, bad = 0, first = 0;
    for (i = 0; i < (size_t)M * N; i++) {
        float tol = 1e-4f * (want[i] < 0 ? -want[i] : want[i]) + 1e-3f;
        float d = got[i] - want[i];
        if (d > tol || d < -tol) { if (!bad++) first = i; }
    }
    if (bad) printf("    %s: %lu of %lu differ; first at %lu: %g, expected %g\n", what, (unsigned long)bad,
                    (unsigned long)((size_t)M * N), (unsigned long)first, got[first], want[first]);
    return bad == 0;
}

/* REPEAT SGEMMs on the handle's stream: C = A*B + C, each. */
static int gemms(cublasHandle_t h, gf_buffer *da, gf_buffer *db, gf_buffer *dc)
{
    const float alpha = 1.0f, beta = 1.0f;
    const float *pa = (const float *)(uintptr_t)gf_buffer_native(da), *pb = (const float *)(uintptr_t)gf_buffer_native(db);
    float *pc = (float *)(uintptr_t)gf_buffer_native(dc);
    int i;
    for (i = 0; i < REPEAT; i++) {
        cublasStatus_t st = cb.Sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, pa, M, pb, K, &beta, pc, M);
        if (st != CUBLAS_STATUS_SUCCESS) { printf("    cublasSgemm_v2: status %d\n", (int)st); return 0; }
    }
    return 1;
}

int main(void)
{
    const size_t a_bytes = sizeof(float) * M * K, b_bytes = sizeof(float) * K * N, c_bytes = sizeof(float) * M * N;
    static float a[M * K], b[K * N], want[M * N], got[M * N], got2[M * N];   /* static: nothing to free on the early returns */
    gf_device *dev = NULL;
    gf_stream *s = NULL, *reader = NULL;
    gf_stream_desc sd;
    gf_event *done = NULL;
    gf_buffer *da = NULL, *db = NULL, *dc = NULL, *lag = NULL;
    gf_graph *graph = NULL;
    gf_graph_info info = {0};
    cublasHandle_t h = NULL;
    void *lib;
    gf_result r;
    int i, version = 0;

    (void)signatures_match_header;
    setvbuf(stdout, NULL, _IOLBF, 0);
    r = gf_device_open(GF_BACKEND_CUDA, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: %s: %s\n", gf_result_name(r), gf_last_error());
        SKIP("no CUDA driver or device here");
        return th_finish();
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return th_finish();
    if (!(lib = load_cublas())) {
        SKIP("no cuBLAS here");
        gf_device_close(dev);
        return th_finish();
    }
    printf("device: %s\n", gf_device_name(dev));

    for (i = 0; i < M * K; i++) a[i] = entry(i, 3);
    for (i = 0; i < K * N; i++) b[i] = entry(i, 5);
    reference(a, b, want);

    memset(&sd, 0, sizeof sd);
    sd.label = "gemm";
    CHECK_EQ_RESULT(gf_stream_create(dev, &sd, &s), GF_OK);
    sd.label = "reader";
    CHECK_EQ_RESULT(gf_stream_create(dev, &sd, &reader), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &done), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, a_bytes, &da), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, b_bytes, &db), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, c_bytes, &dc), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, LAG_BYTES, &lag), GF_OK);
    if (!s || !reader || !done || !da || !db || !dc || !lag) return th_finish();
    CHECK(gf_stream_native(s) != NULL && gf_buffer_native(da) != 0, "native handles: a CUstream and a CUdeviceptr");

    if (!CHECK(cb.Create(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate_v2")) return th_finish();
    if (cb.GetVersion(h, &version) == CUBLAS_STATUS_SUCCESS) printf("cuBLAS version %d\n", version);
    CHECK(cb.SetStream(h, (cudaStream_t)gf_stream_native(s)) == CUBLAS_STATUS_SUCCESS, "cublasSetStream_v2 with gf_stream_native");

    /* 1 and 2: gpuflow fills the inputs, cuBLAS computes on the same stream, gpuflow reads. */
    CHECK_EQ_RESULT(gf_fill_async(s, lag, 0, 0, LAG_BYTES), GF_OK);   /* the GPU falls behind */
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, da, 0, a, a_bytes), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, db, 0, b, b_bytes), GF_OK);
    CHECK_EQ_RESULT(gf_fill32_async(s, dc, 0, 0x3f800000u, (size_t)M * N), GF_OK);   /* C = 1.0f */
    CHECK(gemms(h, da, db, dc), "cublasSgemm_v2 on gpuflow's stream over gpuflow's buffers");
    CHECK_EQ_RESULT(gf_event_record(done, s), GF_OK);                 /* after the SGEMMs */
    CHECK_EQ_RESULT(gf_stream_wait_event(reader, done), GF_OK);
    memset(got, 0, c_bytes);
    memset(got2, 0, c_bytes);
    CHECK_EQ_RESULT(gf_copy_to_host_async(reader, got, dc, 0, c_bytes), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, got2, dc, 0, c_bytes), GF_OK);   /* stream order after cuBLAS */
    CHECK_EQ_RESULT(gf_stream_synchronize(reader), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(matches(got, want, "reader stream"), "SGEMM result, read by another gpuflow stream that waited for an event recorded after it");
    CHECK(matches(got2, want, "same stream"), "SGEMM result, read by gpuflow on the SGEMM's own stream");

    /* 3: the same work captured by gpuflow; the graph holds cuBLAS's kernels. */
    r = gf_stream_begin_capture(s, GF_CAPTURE_RELAXED);
    CHECK_EQ_RESULT(r, GF_OK);
    if (r == GF_OK) {
        int ok = gf_fill32_async(s, dc, 0, 0x3f800000u, (size_t)M * N) == GF_OK && gemms(h, da, db, dc);
        gf_result end = gf_stream_end_capture(s, &graph);
        CHECK(ok, "gpuflow fill and cuBLAS SGEMMs enqueued in a gpuflow capture");
        CHECK_EQ_RESULT(end, GF_OK);
    }
    if (graph) {
        CHECK_EQ_RESULT(gf_graph_info(graph, &info), GF_OK);
        CHECK(info.native, "the capture is a native CUDA graph");
        CHECK_EQ_RESULT(gf_fill_async(s, lag, 0, 0, LAG_BYTES), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(s, dc, 0, 0, c_bytes), GF_OK);    /* C = 0: the replay must recompute it */
        CHECK_EQ_RESULT(gf_graph_launch(graph, s), GF_OK);
        CHECK_EQ_RESULT(gf_event_record(done, s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_wait_event(reader, done), GF_OK);
        memset(got, 0, c_bytes);
        CHECK_EQ_RESULT(gf_copy_to_host_async(reader, got, dc, 0, c_bytes), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(reader), GF_OK);
        CHECK(matches(got, want, "graph replay"), "a replay of the captured graph recomputes the SGEMM result");
        gf_graph_destroy(graph);
    }

    cb.Destroy(h);
    gf_buffer_destroy(lag);
    gf_buffer_destroy(dc);
    gf_buffer_destroy(db);
    gf_buffer_destroy(da);
    gf_event_destroy(done);
    gf_stream_destroy(reader);
    gf_stream_destroy(s);
    gf_device_close(dev);
    dlclose(lib);
    return th_finish();
}
