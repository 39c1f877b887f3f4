/* Kernels from one source (issue 14): each word of the dialect on every backend, build errors
   with their logs, and the disk cache.

       ./dialect stub|opencl|cuda|hip

   The kernels live in tests/dialect_kernels.gfk, included twice below: as text for the device
   compilers, as C for the stub. */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
#ifndef _WIN32
#include <sys/wait.h>
#endif
#include "harness.h"

static const char dialect_source[] =
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "dialect_kernels.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "../gpuflow.h"   /* again: the C side's rsqrtf, which the math kernel calls */
#include "dialect_kernels.gfk"
static const gf_stub_kernel dialect_stub[] = {
    GF_STUB_KERNEL(index3d), GF_STUB_KERNEL(block_sum), GF_STUB_KERNEL(atomics), GF_STUB_KERNEL(atomics_int), GF_STUB_KERNEL(math), GF_STUB_KERNEL(nothing),
    GF_STUB_KERNEL(block_rounds), GF_STUB_KERNEL(block_nothing)
};

static gf_device *dev;
static gf_stream *s;
static void k_nothing_c(const gf_kernel_ctx *c, void *const *a) { (void)c; (void)a; }
static const char *backend_name;

static gf_module_desc desc_of(const char *source, const char *cache_dir)
{
    gf_module_desc d;
    memset(&d, 0, sizeof d);
    d.source = source;
    d.source_name = "dialect_kernels.gfk";
    d.cache_dir = cache_dir;
    d.stub_kernels = dialect_stub;
    d.stub_kernel_count = (int)(sizeof dialect_stub / sizeof dialect_stub[0]);
    return d;
}

static gf_launch_dims dims(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = gx; d.grid[1] = gy; d.grid[2] = gz;
    d.block[0] = bx; d.block[1] = by; d.block[2] = bz;
    return d;
}

static void test_index_math(gf_module *mod)
{
    enum { W = 37, H = 9, D = 5 };
    static unsigned host[W * H * D];
    unsigned w = W, h = H, d = D;
    gf_kernel *k = NULL;
    gf_buffer *b = NULL;
    gf_arg a[4];
    int x, y, z, ok = 1;
    CHECK_EQ_RESULT(gf_kernel_get(mod, "index3d", &k), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &b), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0xff, sizeof host), GF_OK);
    a[0].value = 0; a[0].size = 0; a[0].buffer = b;
    a[1].value = &w; a[1].size = sizeof w; a[1].buffer = 0;
    a[2].value = &h; a[2].size = sizeof h; a[2].buffer = 0;
    a[3].value = &d; a[3].size = sizeof d; a[3].buffer = 0;
    CHECK_EQ_RESULT(gf_launch(s, k, dims(5, 3, 3, 8, 4, 2), a, 4), GF_OK);   /* overshoots in every dimension */
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(host, b, 0, sizeof host), GF_OK);
    for (z = 0; z < D; z++) for (y = 0; y < H; y++) for (x = 0; x < W; x++)
        ok &= host[(z * H + y) * W + x] == (unsigned)(x + 100 * y + 10000 * z + 1000000);
    CHECK(ok, "dialect: global, local and group ids and sizes in three dimensions");
    gf_buffer_destroy(b);
}

static void test_block_sum(gf_module *mod)
{
    enum { N = 1000, BLOCK = 256, GROUPS = (N + BLOCK - 1) / BLOCK };
    static float in[N], out[GROUPS];
    unsigned n = N;
    gf_kernel *k = NULL;
    gf_buffer *bi = NULL, *bo = NULL;
    gf_arg a[3];
    int i, g, ok = 1;
    for (i = 0; i < N; i++) in[i] = (float)(i % 17) * 0.5f;
    CHECK_EQ_RESULT(gf_kernel_get(mod, "block_sum", &k), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof in, &bi), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof out, &bo), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device(bi, 0, in, sizeof in), GF_OK);
    a[0].value = 0; a[0].size = GF_ARG_READ_ONLY; a[0].buffer = bi;
    a[1].value = 0; a[1].size = 0; a[1].buffer = bo;
    a[2].value = &n; a[2].size = sizeof n; a[2].buffer = 0;
    CHECK_EQ_RESULT(gf_launch(s, k, dims(GROUPS, 1, 1, BLOCK, 1, 1), a, 3), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(out, bo, 0, sizeof out), GF_OK);
    for (g = 0; g < GROUPS; g++) {
        float want = 0;
        for (i = g * BLOCK; i < (g + 1) * BLOCK && i < N; i++) want += in[i];
        ok &= fabsf(out[g] - want) <= 1e-3f * want + 1e-3f;
    }
    CHECK(ok, "dialect: a shared-memory reduction with block barriers gives each block's sum");
#if defined(_WIN32) && defined(GPUFLOW_STUB_INLINE)
    /* Windows fibers: the launch ran on this thread, which it made a fiber; it is a thread again */
    CHECK(!IsThreadAFiber(), "dialect: a launch with barriers run inline leaves the program's thread a thread, not a fiber");
#endif
    gf_buffer_destroy(bi);
    gf_buffer_destroy(bo);
}

/* Block kernels: each region ends with the whole block, in 1, 2 and 3 dimensions. */
static void test_block_kernel(gf_module *mod)
{
    static const unsigned shapes[][5] = { { 64, 1, 1, 3, 1 }, { 8, 4, 2, 2, 3 }, { 5, 3, 1, 4, 2 }, { 1, 1, 1, 2, 1 } };
    unsigned host[8 * 64], rounds = 3, sh;
    gf_kernel *k = NULL, *none = NULL;
    gf_buffer *b = NULL;
    CHECK_EQ_RESULT(gf_kernel_get(mod, "block_rounds", &k), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "block_nothing", &none), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &b), GF_OK);
    if (!k || !b) { if (b) gf_buffer_destroy(b); return; }
    for (sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        const unsigned *d = shapes[sh];
        unsigned count = d[0] * d[1] * d[2], gx, gy, l, r, ok = 1;
        gf_arg a[2];
        char what[160];
        a[0].value = 0; a[0].size = 0; a[0].buffer = b;
        a[1].value = &rounds; a[1].size = sizeof rounds; a[1].buffer = 0;
        CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0xff, sizeof host), GF_OK);
        CHECK_EQ_RESULT(gf_launch(s, k, dims(d[3], d[4], 1, d[0], d[1], d[2]), a, 2), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(host, b, 0, sizeof host), GF_OK);
        for (gy = 0; gy < d[4]; gy++) for (gx = 0; gx < d[3]; gx++) for (l = 0; l < count; l++) {
            unsigned kept = 0, g = gx + d[3] * gy, value[64];
            unsigned i;
            for (i = 0; i < count; i++) value[i] = i * 3u + gx + 7u * gy;
            for (r = 0; r < rounds; r++) {
                kept += value[(l + 1) % count];
                for (i = 0; i < count; i++) value[i] += r + 1;
            }
            ok &= host[g * 64 + l] == kept * 10u + (l % 2 ? 1u : 2u);
        }
        snprintf(what, sizeof what, "dialect: a block kernel's regions each end with the whole block (blocks of %u x %u x %u, grid %u x %u)",
                 d[0], d[1], d[2], d[3], d[4]);
        CHECK(ok, what);
    }
    CHECK_EQ_RESULT(gf_launch(s, none, dims(3, 1, 1, 16, 1, 1), NULL, 0), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_buffer_destroy(b);
}

/* The stub's own checks of a block kernel: gf_block_sync in it cannot hold (its regions are
   loops), so the launch fails, naming the kernel and saying why. */
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
GF_KERNELS(
GF_BLOCK_KERNEL(block_with_sync, GF_PARAM(GF_GLOBAL unsigned *, out))
{
    GF_EACH_THREAD { out[gf_local_id(0)] = 1u; gf_block_sync(); }
}
GF_BLOCK_KERNEL(block_sync_between, GF_PARAM(GF_GLOBAL unsigned *, out))
{
    GF_EACH_THREAD { out[gf_local_id(0)] = 1u; }
    gf_block_sync();   /* between regions: the block is together already */
    GF_EACH_THREAD { if (gf_local_id(0) == 0) out[0] += out[gf_local_size(0) - 1u]; }
}
GF_BLOCK_KERNEL(block_break, GF_PARAM(GF_GLOBAL unsigned *, out))
{
    GF_EACH_THREAD { if (gf_local_id(0) == 3u) break; out[gf_local_id(0)] = 1u; }
}
GF_BLOCK_KERNEL(block_return, GF_PARAM(GF_GLOBAL unsigned *, out))
{
    GF_EACH_THREAD { if (gf_local_id(0) == 3u) return; out[gf_local_id(0)] = 1u; }
}
GF_KERNEL(row_thread0_returns, GF_PARAM(GF_GLOBAL unsigned *, out))
{
    if (gf_local_id(0) == 0) return;
    out[gf_local_id(0)] = 1u;
    gf_block_sync();
}
)
/* Launches name on a block of 16 threads (out: 16 unsigned) on a fresh stream; its result
   (the first failure's message in gf_last_error), out copied to host. */
static gf_result misuse_cb_status = GF_NOT_READY;   /* what the callback after the launch was told */
static void misuse_cb(void *user, gf_result status) { (void)user; misuse_cb_status = status; }
static gf_result run_misuse(gf_module *mod, const char *name, gf_buffer *b, unsigned *host)
{
    gf_kernel *k = NULL;
    gf_stream *t = NULL;
    gf_arg a;
    gf_result r;
    a.value = 0; a.size = 0; a.buffer = b;
    if ((r = gf_kernel_get(mod, name, &k)) != GF_OK || (r = gf_stream_create(dev, NULL, &t)) != GF_OK) return r;
    (void)gf_fill_async(t, b, 0, 0, 16 * sizeof *host);
    misuse_cb_status = GF_NOT_READY;
    if ((r = gf_launch(t, k, dims(1, 1, 1, 16, 1, 1), &a, 1)) == GF_OK && (r = gf_stream_add_callback(t, misuse_cb, NULL)) == GF_OK)
        r = gf_stream_synchronize(t);
    (void)gf_copy_to_host(host, b, 0, 16 * sizeof *host);
    gf_stream_destroy(t);
    return r;
}
static void test_block_kernel_misuse(void)
{
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(block_with_sync), GF_STUB_KERNEL(block_sync_between), GF_STUB_KERNEL(block_break),
                                           GF_STUB_KERNEL(block_return), GF_STUB_KERNEL(row_thread0_returns) };
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_buffer *b = NULL;
    unsigned host[16];
    if (strcmp(backend_name, "stub")) { SKIP("the stub's own checks of block kernels (a GPU runs them as written)"); return; }
    memset(&d, 0, sizeof d);
    d.stub_kernels = stub; d.stub_kernel_count = (int)(sizeof stub / sizeof stub[0]);
    CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &b), GF_OK);
    if (!mod || !b) return;
    CHECK_FAIL(run_misuse(mod, "block_with_sync", b, host), GF_ERROR_DRIVER);
    CHECK(strstr(gf_last_error(), "block_with_sync") && strstr(gf_last_error(), "inside a GF_EACH_THREAD"),
          "gf_block_sync inside a region of a block kernel fails the launch on the stub, naming the kernel and the rule");
    CHECK(misuse_cb_status == GF_ERROR_DRIVER, "a callback queued after a launch that failed is given the failure (it was told GF_OK)");
    CHECK_EQ_RESULT(run_misuse(mod, "block_sync_between", b, host), GF_OK);
    CHECK(misuse_cb_status == GF_OK, "a callback after a launch that ran is told GF_OK");
    CHECK(host[0] == 2 && host[15] == 1, "gf_block_sync between a block kernel's regions is no misuse (the block is together there)");
    CHECK_FAIL(run_misuse(mod, "block_break", b, host), GF_ERROR_DRIVER);
    CHECK(strstr(gf_last_error(), "block_break") && strstr(gf_last_error(), "with break"),
          "break in a region fails the launch on the stub (on a GPU it skips the barrier), naming the kernel (review 8)");
    CHECK_FAIL(run_misuse(mod, "block_return", b, host), GF_ERROR_DRIVER);
    CHECK(strstr(gf_last_error(), "block_return") && strstr(gf_last_error(), "returned from inside"),
          "return in a region fails the launch on the stub (on a GPU the others wait at the barrier), naming the kernel (review 8)");
    {   /* a synchronize that returns a launch's failure still waited for it: the race detector learns
           that (it took the failed launch for one still running, and every later access raced it) */
        gf_race_info info;
        memset(&info, 0, sizeof info);
        CHECK_EQ_RESULT(gf_race_check_enable(dev, GF_RACE_CHECK_ON), GF_OK);
        CHECK_FAIL(run_misuse(mod, "block_with_sync", b, host), GF_ERROR_DRIVER);
        CHECK_EQ_RESULT(gf_copy_to_device(b, 0, host, sizeof host), GF_OK);
        CHECK(gf_race_report(dev, &info) == GF_OK && info.count == 0, "after a synchronize that returned a launch's failure, the host's access races nothing");
        if (info.reports) printf("  %s\n", info.report[0]);
        gf_race_check_enable(dev, 0);
    }
    CHECK_FAIL(run_misuse(mod, "row_thread0_returns", b, host), GF_ERROR_DRIVER);
    CHECK(strstr(gf_last_error(), "15 of its 16 threads reached gf_block_sync"),
          "a GF_KERNEL whose thread 0 returns while the rest sync: the count names every thread that arrived (review 8: 1 of 16)");
    gf_buffer_destroy(b);
    gf_module_destroy(mod);
}

/* Runs kernel name(cells, n) over n = 1000 threads in 128-thread blocks, the cells (bytes of
   them) set from init first and read back into got (left as it was if a step fails). */
static void run_cells(gf_module *mod, const char *name, const void *init, void *got, size_t bytes, int n)
{
    gf_kernel *k = NULL;
    gf_buffer *b = NULL;
    gf_arg a[2];
    CHECK_EQ_RESULT(gf_kernel_get(mod, name, &k), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, bytes, &b), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, init, bytes), GF_OK);
    a[0].value = 0; a[0].size = 0; a[0].buffer = b;
    a[1].value = &n; a[1].size = sizeof n; a[1].buffer = 0;
    CHECK_EQ_RESULT(gf_launch(s, k, dims(((unsigned)n + 127) / 128, 1, 1, 128, 1, 1), a, 2), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(got, b, 0, bytes), GF_OK);
    gf_buffer_destroy(b);
}

static void test_atomics(gf_module *mod)
{
    enum { N = 1000 };
    unsigned init[6] = { 0, 0xffffffffu, 0, 0, 5, 0 }, got[6] = { 0 };   /* got: zeros if the copy fails */
    run_cells(mod, "atomics", init, got, sizeof got, N);
    CHECK(got[0] == N, "dialect: atomic add on a buffer counts every thread");
    CHECK(got[1] == 0 && got[2] == N - 1, "dialect: atomic min and max");
    CHECK(got[3] == 77, "dialect: atomic exchange");
    CHECK(got[4] == 9, "dialect: compare-and-swap takes only the expected value");
    CHECK(got[5] == 2 * N, "dialect: atomic add on a shared array, summed per block");
}

/* An int's min and max compare signed, as CUDA's and OpenCL's overloads do (the stub compared
   the bits unsigned: a review's min over -499..500 read 0 on the stub, -499 on PoCL). */
static void test_atomics_int(gf_module *mod)
{
    enum { N = 1000 };
    int init[4] = { 0x7fffffff, -0x7fffffff - 1, 0, 0x7fffffff }, got[4] = { 0 };
    run_cells(mod, "atomics_int", init, got, sizeof got, N);
    CHECK(got[0] == -N / 2 && got[1] == N / 2, "dialect: atomic min and max of an int compare signed (buffer)");
    CHECK(got[2] == -N, "dialect: atomic add of -1 to an int");
    CHECK(got[3] == -N / 2, "dialect: atomic min of an int compares signed (shared array)");
}

/* shared_bytes with a GF_KERNEL: refused alike on every backend (OpenCL refused it for a missing
   __local parameter, CUDA took it, the stub ignored it: a review), captured too. */
static void test_no_dynamic_shared(gf_module *mod)
{
    unsigned n = 4;
    gf_kernel *k = NULL;
    gf_buffer *b = NULL;
    gf_graph *g = NULL;
    gf_arg a[2];
    gf_launch_dims d = dims(1, 1, 1, 4, 1, 1);
    d.shared_bytes = 64;
    CHECK_EQ_RESULT(gf_kernel_get(mod, "atomics", &k), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &b), GF_OK);
    a[0].value = 0; a[0].size = 0; a[0].buffer = b;
    a[1].value = &n; a[1].size = sizeof n; a[1].buffer = 0;
    CHECK_FAIL(gf_launch(s, k, d, a, 2), GF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(gf_last_error(), "no dynamic shared memory") != NULL, "shared_bytes with a GF_KERNEL: refused, said why");
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_FAIL(gf_launch(s, k, d, a, 2), GF_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    if (g) gf_graph_destroy(g);
    gf_buffer_destroy(b);
}

static void test_math(gf_module *mod)
{
    float x = 2.25f, out[16] = { 0 };   /* zeros (all wrong) if the launch or copy fails */
    double want[16];
    gf_kernel *k = NULL;
    gf_buffer *b = NULL;
    gf_arg a[2];
    int i, ok = 1;
    want[0] = sqrt(x); want[1] = exp(x); want[2] = log(x); want[3] = pow(x, 1.5); want[4] = sin(x); want[5] = cos(x);
    want[6] = tanh(x); want[7] = x; want[8] = 1.0; want[9] = x; want[10] = 2.0; want[11] = 3.0; want[12] = 1.0 / sqrt(x); want[13] = x * x;
    want[14] = 2.0; want[15] = 0.5;   /* sqrtf and fmaxf of unsigned ids: OpenCL's overloads refused them (a review's differential) */
    CHECK_EQ_RESULT(gf_kernel_get(mod, "math", &k), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof out, &b), GF_OK);
    a[0].value = 0; a[0].size = 0; a[0].buffer = b;
    a[1].value = &x; a[1].size = sizeof x; a[1].buffer = 0;
    CHECK_EQ_RESULT(gf_launch(s, k, dims(1, 1, 1, 1, 1, 1), a, 2), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, out, b, 0, sizeof out), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    for (i = 0; i < 16; i++) {   /* within 4 ulp-ish: 1e-5 relative, the devices' fast paths included */
        int close = fabs(out[i] - want[i]) <= 1e-5 * fabs(want[i]) + 1e-6;
        if (!close) printf("    math[%d] = %.9g, expected %.9g\n", i, out[i], want[i]);
        ok &= close;
    }
    CHECK(ok, "dialect: the math functions agree with libm within 1e-5 relative");
    {
        gf_kernel *none = NULL;
        CHECK_EQ_RESULT(gf_kernel_get(mod, "nothing", &none), GF_OK);
        CHECK_EQ_RESULT(gf_launch(s, none, dims(2, 1, 1, 4, 1, 1), NULL, 0), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    }
    gf_buffer_destroy(b);
}

/* a build error comes back as GF_ERROR_BUILD with the compiler's log */
static void test_build_error(void)
{
    gf_module_desc d = desc_of("GF_KERNEL(broken, GF_PARAM(GF_GLOBAL float *, x)) { x[0] = undeclared_name; }", NULL);
    gf_module *mod = NULL;
    if (backend_name && !strcmp(backend_name, "stub")) { SKIP("the stub compiles its kernels with the program"); return; }
    d.stub_kernels = NULL; d.stub_kernel_count = 0;
    CHECK_FAIL(gf_module_load(dev, &d, &mod), GF_ERROR_BUILD);
    CHECK(strstr(gf_last_error(), "undeclared_name") != NULL, "a build error's message carries the compiler's log");
    d.source = "GF_BLOCK_KERNEL(broken_block, GF_PARAM(GF_GLOBAL float *, x)) { GF_EACH_THREAD { x[0] = undeclared_name; } }";
    CHECK_FAIL(gf_module_load(dev, &d, &mod), GF_ERROR_BUILD);
    CHECK(strstr(gf_last_error(), "kernel broken_block") != NULL, "a build error in a block kernel names the kernel");
    /* atomics take 32-bit integers on every backend: CUDA's float atomicAdd compiled, and the
       stub summed the float's bits (the stub's refusal: tests/compile_checks.sh) */
    d.source = "GF_KERNEL(float_sum, GF_PARAM(GF_GLOBAL float *, x)) { gf_atomic_add(&x[0], 1.0f); }";
    CHECK_FAIL(gf_module_load(dev, &d, &mod), GF_ERROR_BUILD);
    d.source = "GF_KERNEL(float_swap, GF_PARAM(GF_GLOBAL float *, x)) { x[1] = gf_atomic_xchg(&x[0], 1.0f); }";
    CHECK_FAIL(gf_module_load(dev, &d, &mod), GF_ERROR_BUILD);
}

/* ---- module loading under attack: each input a clear code, never a crash ---- */
static const char good_kernel[] = "GF_KERNEL(hostile_ok, GF_PARAM(GF_GLOBAL float *, x)) { x[gf_global_id(0)] = VALUE; }\n";
/* Loads source (defining VALUE unless options do) and runs hostile_ok on 4 floats: 1 if every
   element is want; 0 with *code set if the load or launch failed (a message must say why). */
static int load_run(const char *source, const char *name, const char *options, float want, gf_result *code)
{
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_buffer *x = NULL;
    gf_arg arg;
    float out[4] = { 0, 0, 0, 0 };
    int ok = 1, i;
    memset(&d, 0, sizeof d);
    d.source = source;
    d.source_name = name;
    d.build_options = options;
    *code = gf_module_load(dev, &d, &mod);
    if (*code == GF_OK) *code = gf_kernel_get(mod, "hostile_ok", &k);
    if (*code == GF_OK) *code = gf_buffer_create(dev, sizeof out, &x);
    arg.value = NULL; arg.size = 0; arg.buffer = x;
    if (*code == GF_OK) *code = gf_launch(s, k, dims(1, 1, 1, 4, 1, 1), &arg, 1);
    if (*code == GF_OK) *code = gf_stream_synchronize(s);
    if (*code == GF_OK) *code = gf_copy_to_host(out, x, 0, sizeof out);
    for (i = 0; i < 4; i++) ok &= *code == GF_OK && out[i] == want;
    if (*code != GF_OK && !gf_last_error()[0]) { printf("  a failure without a message\n"); *code = GF_ERROR_INVALID_STATE; }
    if (x) gf_buffer_destroy(x);
    if (mod) gf_module_destroy(mod);
    return ok;
}
/* Shared memory past the device's limit: a build or launch failure with a message, or a driver
   that fits it after all and runs it right. 1: as it should be. */
static int shared_past_limit(void)
{
    gf_device_info info;
    char src[512];
    gf_result code = GF_OK;
    unsigned floats;
    memset(&info, 0, sizeof info);
    gf_device_info(dev, &info);
    if (!CHECK(info.max_shared_per_block > 0, "the device states its shared memory per block")) return 0;
    floats = info.max_shared_per_block / 2 + 1024;
    snprintf(src, sizeof src, "#define VALUE 1.0f\nGF_KERNEL(hostile_ok, GF_PARAM(GF_GLOBAL float *, x)) {\n"
             "    GF_SHARED float big[%u];\n    big[gf_local_id(0) * 997u %% %uu] = 1.0f;\n    gf_block_sync();\n"
             "    x[gf_global_id(0)] = big[gf_local_id(0) * 997u %% %uu] * VALUE;\n}\n", floats, floats, floats);
    if (load_run(src, "shared.gfk", NULL, 1.0f, &code)) {
        printf("notice: %s took %u bytes of static shared memory (twice its stated %u): the kernel ran right\n", backend_name,
               floats * 4, info.max_shared_per_block);
        return 1;
    }
    return CHECK(code != GF_OK, "static shared memory twice the device's: refused with a message");
}

/* shared_past_limit, on PoCL in a child process (this program again, with --shared-past-limit):
   PoCL 5's CPU device reads CL_KERNEL_LOCAL_MEM_SIZE as 0 for a kernel's own arrays and then
   aborts the process at the launch ("PoCL detected an OpenCL program error"), a size gpuflow is
   never told and so cannot refuse. That abort is a counted skip; any other end of the child is
   its verdict. Elsewhere in this process: a child could be given another device (a GPU in
   exclusive-process mode is then PoCL's CPU). */
static const char *self_path;
static void test_shared_past_limit(void)
{
#ifdef _WIN32
    shared_past_limit();
#else
    if (strncmp(gf_device_name(dev), "Portable Computing Language", 27) != 0) { shared_past_limit(); return; }
    char out[8192], spill[512];
    size_t used = 0;
    ssize_t n;
    int fds[2], status = 0;
    pid_t pid;
    if (!CHECK(pipe(fds) == 0, "a pipe for the shared-memory check's child")) return;
    fflush(stdout);
    fflush(stderr);
    if ((pid = fork()) == 0) {   /* only async-signal-safe calls before the exec */
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execl(self_path, self_path, backend_name, "--shared-past-limit", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    if (!CHECK(pid > 0, "fork for the shared-memory check")) { close(fds[0]); return; }
    while ((n = read(fds[0], used + 1 < sizeof out ? out + used : spill,
                     used + 1 < sizeof out ? sizeof out - 1 - used : sizeof spill)) > 0)
        if (used + 1 < sizeof out) used += (size_t)n;   /* past the buffer: read and dropped, so the child never blocks */
    out[used] = 0;
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status) && strstr(out, "PoCL detected an OpenCL program error")) {
        printf("notice: %s: the driver aborted the process at a launch past its local memory, whose size gpuflow was "
               "not told: %.200s\n", gf_device_name(dev), strstr(out, "PoCL detected"));
        SKIP("static shared memory twice the device's: PoCL 5 aborts the process where gpuflow is not told the size");
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        const char *notice = strstr(out, "notice:");
        if (notice) printf("%.*s\n", (int)strcspn(notice, "\n"), notice);
        CHECK(1, "static shared memory twice the device's: refused with a message, or right (in a child process)");
    } else {
        printf("%s", out);
        CHECK(0, "static shared memory twice the device's: the child process failed (its output above)");
    }
#endif
}

static void test_hostile_sources(void)
{
    static const char *const option_forms[] = { "-DVALUE=3.0f", "  -DVALUE=3.0f\t  -DUNUSED=1  ", "\"-DVALUE=3.0f\"", "-DVALUE='3.0f'",
                                                "-DVALUE=\"3.0f\"", "-DUNUSED=\"a b c\" -DVALUE=3.0f" };
    static const char *const malformed[] = { "GF_KERNEL(", "GF_KERNEL(hostile_ok, GF_PARAM(GF_GLOBAL float *, x)) { x[0] = ",
                                             "\x01\x02\x7f garbage {{{ ]]", "#error stop here\n", "GF_KERNEL(hostile_ok) }}}" };
    size_t big = (size_t)8 << 20, at;
    char *huge, name[600], what[200];
    gf_result code;
    unsigned i;
    if (!strcmp(backend_name, "stub")) { SKIP("hostile sources: the stub compiles its kernels with the program"); return; }

    /* a source of 8 MiB (comments, then one kernel) */
    huge = (char *)malloc(big + sizeof good_kernel + 64);
    if (CHECK(huge != NULL, "8 MiB of source")) {
        for (at = 0; at + 64 < big; at += 64) memcpy(huge + at, "// padding padding padding padding padding padding padding padd\n", 64);
        snprintf(huge + at, sizeof good_kernel + 64, "#define VALUE 5.0f\n%s", good_kernel);
        CHECK(load_run(huge, "huge.gfk", NULL, 5.0f, &code), "8 MiB of source: compiled, the kernel is right");
        free(huge);
    }
    /* malformed sources: GF_ERROR_BUILD with the compiler's log */
    for (i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        snprintf(what, sizeof what, "malformed source %u: GF_ERROR_BUILD with a log", i);
        CHECK(!load_run(malformed[i], "malformed.gfk", "-DVALUE=1.0f", 1.0f, &code) && code == GF_ERROR_BUILD && strlen(gf_last_error()) > 20, what);
    }
    /* names with path and quoting characters: the name is only a label (never a path) */
    snprintf(name, sizeof name, "../../etc/\"quoted\"\\back\nslash/%0400d.gfk", 0);
    {
        char src[512];
        snprintf(src, sizeof src, "#define VALUE 2.0f\n%s", good_kernel);
        CHECK(load_run(src, name, NULL, 2.0f, &code), "a source name with ../, quotes, backslashes, a newline, 430 bytes: loads");
    }
    CHECK(!load_run("GF_KERNEL(hostile_ok, GF_PARAM(GF_GLOBAL float *, x)) { x[0] = nope; }", name, NULL, 0, &code) &&
          code == GF_ERROR_BUILD && strstr(gf_last_error(), "nope"), "... and its build error still carries the log");
    /* build options with spaces and quotes: the right value, or a clear refusal, never a wrong kernel */
    for (i = 0; i < sizeof option_forms / sizeof option_forms[0]; i++) {
        int ok = load_run(good_kernel, "options.gfk", option_forms[i], 3.0f, &code);
        snprintf(what, sizeof what, "build options [%s]: the right value or GF_ERROR_BUILD", option_forms[i]);
        CHECK(ok || code == GF_ERROR_BUILD, what);
        if (!ok) printf("notice: %s refuses build options [%s]: %.120s\n", backend_name, option_forms[i], gf_last_error());
    }
    test_shared_past_limit();
}

/* a kernel named in one form but not the other: NOT_FOUND naming it, where it is missing */
static void test_kernel_in_one_form(void)
{
    static const char src[] = "GF_KERNEL(in_both, GF_PARAM(GF_GLOBAL float *, x)) { x[0] = 1.0f; }\n"
                              "GF_KERNEL(only_in_source, GF_PARAM(GF_GLOBAL float *, x)) { x[0] = 2.0f; }\n";
    static const gf_stub_kernel stub[] = { { "in_both", k_nothing_c, 1, NULL, 0, NULL, 0 }, { "only_in_stub", k_nothing_c, 1, NULL, 0, NULL, 0 } };
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    char long_name[300];
    memset(&d, 0, sizeof d);
    d.source = src;
    d.source_name = "forms.gfk";
    d.stub_kernels = stub;
    d.stub_kernel_count = 2;
    if (!CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK)) return;
    CHECK_EQ_RESULT(gf_kernel_get(mod, "in_both", &k), GF_OK);
    if (!strcmp(backend_name, "stub")) {
        CHECK_FAIL(gf_kernel_get(mod, "only_in_source", &k), GF_ERROR_NOT_FOUND);
        CHECK(strstr(gf_last_error(), "only_in_source") != NULL, "a kernel only in the source: NOT_FOUND on the stub, named");
        CHECK_EQ_RESULT(gf_kernel_get(mod, "only_in_stub", &k), GF_OK);
    } else {
        CHECK_EQ_RESULT(gf_kernel_get(mod, "only_in_source", &k), GF_OK);
        CHECK_FAIL(gf_kernel_get(mod, "only_in_stub", &k), GF_ERROR_NOT_FOUND);
        CHECK(strstr(gf_last_error(), "only_in_stub") != NULL, "a kernel only in stub_kernels: NOT_FOUND on a GPU, named");
    }
    CHECK_FAIL(gf_kernel_get(mod, "../in_both", &k), GF_ERROR_NOT_FOUND);
    memset(long_name, 'k', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    CHECK(gf_kernel_get(mod, long_name, &k) < 0 && gf_last_error()[0], "a 299-byte kernel name: refused with a message, no overflow");
    gf_module_destroy(mod);
}

typedef struct { int hits, rebuilds; } cache_seen;
static void cache_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    cache_seen *c = (cache_seen *)user;
    (void)level; (void)code;
    if (strstr(message, "from the kernel cache")) c->hits++;
    if (strstr(message, "did not load; rebuilding")) c->rebuilds++;
}

/* the disk cache: a miss writes an entry, a hit loads it, a corrupt entry is rebuilt */
static void test_cache(void)
{
    char dir[256], cmd[600];
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    cache_seen seen;
    double t0, cold, warm;
    FILE *f;
    int files = 0;
    if (!strcmp(backend_name, "stub")) { SKIP("the stub has nothing to cache"); return; }
    snprintf(dir, sizeof dir, "%s/gpuflow_cache_%s_%ld", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", backend_name, (long)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0) { SKIP("cannot make a cache directory"); return; }
    memset(&seen, 0, sizeof seen);
    gf_set_logger(cache_logger, &seen);
    d = desc_of(dialect_source, dir);
    t0 = th_now_ms();
    CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK);
    cold = th_now_ms() - t0;
    if (mod) gf_module_destroy(mod);
    snprintf(cmd, sizeof cmd, "ls '%s'/gpuflow-*.bin 2>/dev/null | wc -l", dir);
    if ((f = popen(cmd, "r")) != NULL) { if (fscanf(f, "%d", &files) != 1) files = 0; pclose(f); }
    if (files == 0) {   /* a backend without a compile step (OpenCL that builds its own) has nothing to keep */
        SKIP("this backend's driver builds the source itself: no cache entries");
        gf_set_logger(NULL, NULL);
        return;
    }
    CHECK(files == 1 && seen.hits == 0, "cache: a miss compiles and writes one entry");
    t0 = th_now_ms();
    CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK);
    warm = th_now_ms() - t0;
    CHECK(seen.hits == 1, "cache: the second load is a hit");
    if (mod) { CHECK_EQ_RESULT(gf_kernel_get(mod, "block_sum", &k), GF_OK); test_block_sum(mod); gf_module_destroy(mod); }
    printf("notice: module load on %s: cold %.2f ms, warm (cached) %.2f ms\n", backend_name, cold, warm);
    /* corrupt the entry's payload: detected by its checksum, rebuilt, rewritten */
    snprintf(cmd, sizeof cmd, "for f in '%s'/gpuflow-*.bin; do printf 'garbage' | dd of=\"$f\" bs=1 seek=80 conv=notrunc 2>/dev/null; done", dir);
    CHECK(system(cmd) == 0, "cache: corrupted the entry");
    seen.hits = 0;
    CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK);
    CHECK(seen.hits == 0, "cache: a corrupt entry is not trusted");
    if (mod) gf_module_destroy(mod);
    CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK);
    CHECK(seen.hits == 1, "cache: the rebuilt entry is a hit again");
    if (mod) gf_module_destroy(mod);
    gf_set_logger(NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("notice: could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    gf_backend backend = GF_BACKEND_STUB;
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_result r;
    int only_shared;
    setvbuf(stdout, NULL, _IOLBF, 0);
    only_shared = argc == 3 && !strcmp(argv[2], "--shared-past-limit");   /* test_shared_past_limit's child */
    self_path = argv[0];
    if (!(backend_name = th_backend_arg(only_shared ? 2 : argc, argv, &backend))) return 2;
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: dialect %s skipped: %s: %s\n", backend_name, gf_result_name(r), gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    if (only_shared) {
        shared_past_limit();
        gf_stream_destroy(s);
        gf_device_close(dev);
        return th_finish();
    }
    d = desc_of(dialect_source, NULL);
    r = gf_module_load(dev, &d, &mod);
    if (r == GF_ERROR_NOT_SUPPORTED) {
        printf("notice: no run-time compiler: %s\n", gf_last_error());
        SKIP("no run-time compiler for this backend");
    } else if (CHECK_EQ_RESULT(r, GF_OK)) {
        printf("dialect on %s: %s\n", backend_name, gf_device_name(dev));
        test_index_math(mod);
        test_block_sum(mod);
        test_block_kernel(mod);
        test_atomics(mod);
        test_atomics_int(mod);
        test_no_dynamic_shared(mod);
        test_math(mod);
        gf_module_destroy(mod);
    }
    test_build_error();
    test_block_kernel_misuse();
    test_hostile_sources();
    test_kernel_in_one_form();
    test_cache();
    gf_stream_destroy(s);
    gf_device_close(dev);
    return th_finish();
}
