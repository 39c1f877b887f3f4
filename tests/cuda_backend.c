/* cuda_backend: what only the CUDA backend does, on a GPU (the GPU machine; elsewhere it skips).
     - gf_graph_set_kernel_args on a native graph: the exec's node is named by the graph it was
       instantiated from, also after gf_graph_update; the graph that describes the exec (what a
       launch inside a capture embeds) takes the new arguments too;
     - gf_graph_write_dot through cuGraphDebugDotPrint;
     - kernels from one source through NVRTC (skipped, with the reason, where NVRTC is missing),
       its build errors with NVRTC's log;
     - the messages: a missing kernel, an allocation the device cannot give;
     - NVTX ranges (build with -DGPUFLOW_NVTX to have them reach Nsight Systems).

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -isystem /usr/local/cuda/include \
          [-DGPUFLOW_NVTX] tests/cuda_backend.c -o build/cuda_backend -pthread -ldl -lm
       build/cuda_backend                    prints `N passed, N failed[, N skipped]` */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <dlfcn.h>

#define GPUFLOW_IMPLEMENTATION
#ifndef GPUFLOW_CUDA
#define GPUFLOW_CUDA
#endif
#include "../gpuflow.h"
#include "harness.h"
#include "test_kernels.h"

#define N 256u

static gf_device *dev;
static gf_kernel *k_fill, *k_add;

static gf_launch_dims dims_1d(unsigned n)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = (n + 63) / 64; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 64; d.block[1] = d.block[2] = 1;
    return d;
}

static void args_u32(gf_arg args[3], gf_buffer *b, const uint32_t *n, const uint32_t *v)
{
    args[0].value = 0; args[0].size = 0; args[0].buffer = b;
    args[1].value = n; args[1].size = sizeof *n; args[1].buffer = 0;
    args[2].value = v; args[2].size = sizeof *v; args[2].buffer = 0;
}

static gf_result launch_u32(gf_stream *s, gf_kernel *k, gf_buffer *b, uint32_t n, uint32_t v)
{
    gf_arg args[3];
    args_u32(args, b, &n, &v);
    return gf_launch(s, k, dims_1d(n), args, 3);
}

static int is_u32(gf_buffer *b, uint32_t v, const char *what)
{
    uint32_t h[N];
    unsigned i;
    gf_result r;
    int ok;
    for (i = 0; i < N; i++) h[i] = ~v;   /* what the copy did not write fails the check */
    r = gf_copy_to_host(h, b, 0, sizeof h);
    ok = r == GF_OK;
    for (i = 0; ok && i < N; i++) ok = h[i] == v;
    if (r != GF_OK) printf("  %s: copying the buffer back failed: %s\n", what, gf_result_name(r));
    else if (!ok) printf("  %s: element 0 is %u, expected %u\n", what, (unsigned)h[0], (unsigned)v);
    return CHECK(ok, what);
}

typedef struct { gf_buffer *b; uint32_t fill, add; } two_launches;
static gf_result capture_two(gf_stream *s, void *user)
{
    two_launches *t = (two_launches *)user;
    gf_result r = launch_u32(s, k_fill, t->b, N, t->fill);
    return r == GF_OK ? launch_u32(s, k_add, t->b, N, t->add) : r;
}

typedef struct { gf_graph *child; } embed;
static gf_result capture_embed(gf_stream *s, void *user)
{
    return gf_graph_launch(((embed *)user)->child, s);
}

static void test_graph_args(void)
{
    gf_stream *s = NULL;
    gf_buffer *b = NULL, *b2 = NULL, *c = NULL;
    gf_graph *a = NULL, *from = NULL, *parent = NULL;
    two_launches ta, tb;
    embed e;
    gf_arg args[3];
    uint32_t n = N, v;
    char path[256];
    FILE *f;

    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, N * 4, &b), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, N * 4, &b2), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, N * 4, &c), GF_OK);
    if (!s || !b || !b2 || !c) goto done;
    ta.b = b; ta.fill = 10; ta.add = 1;
    tb.b = b2; tb.fill = 3; tb.add = 4;
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, capture_two, &ta, &a), GF_OK);
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, capture_two, &tb, &from), GF_OK);
    if (!a || !from) goto done;

    /* a: fill(b, 10), add(b, 2) */
    v = 2;
    args_u32(args, b, &n, &v);
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(a, 1, args, 3), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(a, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    is_u32(b, 12, "set_kernel_args: the exec runs the new arguments");

    /* after an update a runs from's launches: fill(b2, 3), add(b2, 4) */
    CHECK_EQ_RESULT(gf_graph_update(a, from), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0, N * 4), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(a, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    is_u32(b2, 7, "update: the target runs the other graph's arguments");
    is_u32(b, 0, "update: the target's old arguments are gone");

    /* and its launches can still be changed: the exec's nodes are named by the graph it was
       instantiated from, which the update left in place */
    v = 100;
    args_u32(args, c, &n, &v);
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(a, 0, args, 3), GF_OK);   /* fill(c, 100), add(b2, 4) */
    CHECK_EQ_RESULT(gf_graph_launch(a, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    is_u32(c, 100, "set_kernel_args after an update: the exec runs the new arguments");
    is_u32(b2, 11, "set_kernel_args after an update: the other launch is as the update left it");
    CHECK(gf_graph_launch(from, s) == GF_OK && gf_stream_synchronize(s) == GF_OK, "the update's source graph still runs");
    is_u32(b2, 7, "the update's source graph keeps its own arguments");

    /* a launched inside a capture embeds what a runs now, the new arguments included */
    e.child = a;
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, capture_embed, &e, &parent), GF_OK);
    if (parent) {
        CHECK_EQ_RESULT(gf_fill_async(s, c, 0, 0, N * 4), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(s, b2, 0, 0, N * 4), GF_OK);
        CHECK_EQ_RESULT(gf_graph_launch(parent, s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        is_u32(c, 100, "embedded: the child's changed launch runs as changed");
        is_u32(b2, 4, "embedded: the child's other launch as the update left it");
        /* an embedded graph is a copy: later changes to the child leave it alone */
        v = 5;
        args_u32(args, c, &n, &v);
        CHECK_EQ_RESULT(gf_graph_set_kernel_args(a, 0, args, 3), GF_OK);
        CHECK_EQ_RESULT(gf_graph_launch(parent, s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        is_u32(c, 100, "embedded: a copy, which later changes to the child leave alone");
        CHECK_EQ_RESULT(gf_graph_launch(a, s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        is_u32(c, 5, "the child itself runs its latest arguments");
    }

    /* refusals change nothing */
    CHECK_FAIL(gf_graph_set_kernel_args(a, 2, args, 3), GF_ERROR_OUT_OF_RANGE);
    args[1].size = 8;
    CHECK_FAIL(gf_graph_set_kernel_args(a, 0, args, 3), GF_ERROR_INVALID_ARGUMENT);

    /* DOT from the driver */
    snprintf(path, sizeof path, "%s/gpuflow_cuda_backend.dot", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    CHECK_EQ_RESULT(gf_graph_write_dot(a, path), GF_OK);
    if ((f = fopen(path, "r")) != NULL) {
        char text[65536];
        size_t len = fread(text, 1, sizeof text - 1, f);
        text[len] = 0;
        fclose(f);
        CHECK(strstr(text, "digraph") != NULL, "write_dot: cuGraphDebugDotPrint wrote a digraph");
        printf("notice: the DOT %s the kernels' names (%u bytes)\n", strstr(text, "fill_u32") && strstr(text, "add_u32") ? "names" : "does not name", (unsigned)len);
        remove(path);
    } else CHECK(0, "write_dot: the file is there");
    CHECK_FAIL(gf_graph_write_dot(a, "/nonexistent-dir/x.dot"), GF_ERROR_INVALID_ARGUMENT);

    gf_range_push(s, "cuda_backend range");
    CHECK_EQ_RESULT(launch_u32(s, k_add, c, N, 1), GF_OK);
    gf_range_pop(s);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    is_u32(c, 6, "work inside a range runs");
done:
    if (parent) gf_graph_destroy(parent);
    if (a) gf_graph_destroy(a);
    if (from) gf_graph_destroy(from);
    if (b) gf_buffer_destroy(b);
    if (b2) gf_buffer_destroy(b2);
    if (c) gf_buffer_destroy(c);
    if (s) gf_stream_destroy(s);
}

/* A kernel written once, in the dialect, compiled by NVRTC at load. */
static const char saxpy_source[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(saxpy, GF_PARAM(GF_GLOBAL float *, y), GF_PARAM(GF_GLOBAL const float *, x), GF_PARAM(float, a), GF_PARAM(unsigned, n))
{
    unsigned i = gf_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
GF_KERNEL(block_sum, GF_PARAM(GF_GLOBAL const unsigned *, in), GF_PARAM(GF_GLOBAL unsigned *, out))
{
    GF_SHARED unsigned part[64];
    unsigned t = gf_local_id(0), s;
    part[t] = in[gf_global_id(0)];
    gf_block_sync();
    for (s = 32; s > 0; s /= 2) {
        if (t < s) part[t] += part[t + s];
        gf_block_sync();
    }
    if (t == 0) gf_atomic_add(&out[0], part[0]);
}
);
static const char broken_source[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(broken, GF_PARAM(GF_GLOBAL float *, y)) { y[0] = undefined_name; }
);

static void test_source(void)
{
    gf_module_desc d;
    gf_module *m = NULL, *refused = NULL;
    gf_kernel *saxpy = NULL, *sum = NULL;
    gf_stream *s = NULL;
    gf_buffer *x = NULL, *y = NULL, *in = NULL, *out = NULL;
    float hx[N], hy[N], a = 2.0f;
    uint32_t ones[N], total = 0, n = N;
    gf_arg args[4];
    gf_result r;
    unsigned i;
    int ok;

    memset(&d, 0, sizeof d);
    d.source = saxpy_source;
    d.source_name = "saxpy.gf";
    r = gf_module_load(dev, &d, &m);
    if (r == GF_ERROR_NOT_SUPPORTED && strstr(gf_last_error(), "NVRTC")) {
        printf("notice: %s\n", gf_last_error());
        CHECK(strstr(gf_last_error(), "install") != NULL, "no NVRTC: the message says what to install");
        SKIP("kernels from source: no NVRTC on this machine");
        return;
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return;
    CHECK_EQ_RESULT(gf_kernel_get(m, "saxpy", &saxpy), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(m, "block_sum", &sum), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof hx, &x), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof hy, &y), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof ones, &in), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof total, &out), GF_OK);
    if (saxpy && sum && s && x && y && in && out) {
        for (i = 0; i < N; i++) { hx[i] = (float)i; hy[i] = 1.0f; ones[i] = 1; }
        CHECK_EQ_RESULT(gf_copy_to_device(x, 0, hx, sizeof hx), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_device(y, 0, hy, sizeof hy), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_device(in, 0, ones, sizeof ones), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_device(out, 0, &total, sizeof total), GF_OK);
        args[0].value = 0; args[0].size = 0; args[0].buffer = y;
        args[1].value = 0; args[1].size = 0; args[1].buffer = x;
        args[2].value = &a; args[2].size = sizeof a; args[2].buffer = 0;
        args[3].value = &n; args[3].size = sizeof n; args[3].buffer = 0;
        CHECK_EQ_RESULT(gf_launch(s, saxpy, dims_1d(N), args, 4), GF_OK);
        args[0].buffer = in; args[1].buffer = out;
        CHECK_EQ_RESULT(gf_launch(s, sum, dims_1d(N), args, 2), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(hy, y, 0, sizeof hy), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(&total, out, 0, sizeof total), GF_OK);
        for (i = 0, ok = 1; i < N; i++) ok = ok && hy[i] == 2.0f * (float)i + 1.0f;
        CHECK(ok, "NVRTC: saxpy from dialect source runs");
        CHECK(total == N, "NVRTC: shared memory, barriers and an atomic from dialect source");
    }
    memset(&d, 0, sizeof d);
    d.source = broken_source;
    d.source_name = "broken.gf";
    CHECK_FAIL(gf_module_load(dev, &d, &refused), GF_ERROR_BUILD);
    CHECK(strstr(gf_last_error(), "NVRTC: broken.gf: ") && strstr(gf_last_error(), "undefined_name"), "a build error carries NVRTC's log");
    d.source = saxpy_source;
    d.build_options = "--no-such-option";
    CHECK_FAIL(gf_module_load(dev, &d, &refused), GF_ERROR_BUILD);
    CHECK(refused == NULL, "refused loads give no module");
    if (x) gf_buffer_destroy(x);
    if (y) gf_buffer_destroy(y);
    if (in) gf_buffer_destroy(in);
    if (out) gf_buffer_destroy(out);
    if (s) gf_stream_destroy(s);
    gf_module_destroy(m);
}

static void test_messages(gf_module *mod)
{
    gf_kernel *k = NULL;
    gf_buffer *b = NULL;
    CHECK_FAIL(gf_kernel_get(mod, "no_such_kernel", &k), GF_ERROR_NOT_FOUND);
    CHECK(strstr(gf_last_error(), "no_such_kernel") && strstr(gf_last_error(), "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (500)"),
          "a missing kernel: named, with the driver's call and code");
    CHECK_FAIL(gf_buffer_create(dev, (size_t)1 << 50, &b), GF_ERROR_OUT_OF_MEMORY);
    CHECK(strstr(gf_last_error(), "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)") != NULL, "an allocation too large: the driver's call and code");
}

/* The device's default pool is the process's (cudaMallocAsync's, PyTorch's): opening, trimming
   and closing gf_devices leaves its release threshold and what it keeps alone, and
   gf_device_memory_stats does not count its memory as gpuflow's (gpuflow set the threshold at
   open and trimmed the pool at close, an outside review found). Driver calls of the test's own,
   through the driver library gpuflow loaded. */
typedef CUresult (*pool_get_fn)(CUmemoryPool *, CUdevice);
typedef CUresult (*pool_attr_fn)(CUmemoryPool, CUmemPool_attribute, void *);
typedef CUresult (*pool_alloc_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*pool_free_fn)(CUdeviceptr, CUstream);
typedef CUresult (*stream_sync_fn)(CUstream);
static void test_default_pool(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    pool_get_fn get_pool = NULL;
    pool_attr_fn get_attr = NULL, set_attr = NULL;
    pool_alloc_fn alloc = NULL;
    pool_free_fn free_async = NULL;
    stream_sync_fn sync = NULL;
    const size_t bytes = (size_t)64 << 20;
    cuuint64_t before = 0, keep_all = ~(cuuint64_t)0, threshold = 0, reserved = 0;
    CUmemoryPool pool = NULL;
    CUdeviceptr p = 0;
    gf_device *other = NULL;
    gf_stream *s = NULL;
    gf_buffer *b = NULL;
    gf_memory_stats st;
    gf_device_info info;
    gf_native_device nd;
    memset(&info, 0, sizeof info);
    memset(&nd, 0, sizeof nd);
    (void)gf_device_get_info(dev, &info);
    (void)gf_device_get_native(dev, &nd);
    if (lib) {
        *(void **)&get_pool = dlsym(lib, "cuDeviceGetDefaultMemPool");
        *(void **)&get_attr = dlsym(lib, "cuMemPoolGetAttribute");
        *(void **)&set_attr = dlsym(lib, "cuMemPoolSetAttribute");
        *(void **)&alloc = dlsym(lib, "cuMemAllocFromPoolAsync");
        *(void **)&free_async = dlsym(lib, "cuMemFreeAsync");
        *(void **)&sync = dlsym(lib, "cuStreamSynchronize");
    }
    if (!get_pool || !get_attr || !set_attr || !alloc || !free_async || !sync || !info.async_alloc) {
        SKIP("default pool: no libcuda.so.1 with memory pools to ask");
        return;
    }
    if (!CHECK(get_pool(&pool, (CUdevice)nd.ordinal) == CUDA_SUCCESS, "default pool: the driver names it") ||
        !CHECK(get_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &before) == CUDA_SUCCESS, "default pool: its threshold read") ||
        !CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK))
        return;
    /* The program's own: 64 MiB from the default pool, freed and kept (threshold: keep all). */
    CHECK(set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all) == CUDA_SUCCESS, "default pool: the program sets its threshold");
    CHECK(alloc(&p, bytes, pool, (CUstream)gf_stream_native(s)) == CUDA_SUCCESS && free_async(p, (CUstream)gf_stream_native(s)) == CUDA_SUCCESS &&
          sync((CUstream)gf_stream_native(s)) == CUDA_SUCCESS, "default pool: the program allocates and frees 64 MiB of it");
    /* gpuflow's stream-ordered memory, a trim, another device opened and closed on the GPU */
    CHECK_EQ_RESULT(gf_buffer_create_async(s, 4096, &b), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_destroy_async(s, b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_device_trim(dev, 0), GF_OK);
    if (CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_CUDA, nd.ordinal, &other), GF_OK)) gf_device_close(other);
    CHECK(get_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) == CUDA_SUCCESS && threshold == keep_all,
          "default pool: its threshold is still the program's after gpuflow's open, trim and close");
    CHECK(get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) == CUDA_SUCCESS && reserved >= bytes,
          "default pool: the 64 MiB it keeps for the program are still there after gpuflow's trim and close");
    CHECK(gf_device_memory_stats(dev, &st) == GF_OK && st.kind[GF_MEMORY_CACHED].bytes < bytes,
          "default pool: what it keeps is not counted as gpuflow's cached memory");
    (void)set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &before);
    gf_stream_destroy(s);
}

/* Last, since it ends the process's context for good: a kernel that writes to address 0. Its
   CUDA_ERROR_ILLEGAL_ADDRESS, which cuda.h says every later call returns too, was
   GF_ERROR_DRIVER like any refusal (an outside review): GF_ERROR_DEVICE_LOST now, and said. */
static void test_sticky_fault(void)
{
    static const char ptx[] =
        ".version 7.0\n.target sm_50\n.address_size 64\n"
        ".visible .entry gf_test_crash() { .reg .u64 %rd<1>; .reg .u32 %r<1>; mov.u64 %rd0, 0; mov.u32 %r0, 1; st.global.u32 [%rd0], %r0; ret; }\n";
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_stream *s = NULL;
    gf_launch_dims dims;
    memset(&d, 0, sizeof d);
    d.ptx = ptx;
    memset(&dims, 0, sizeof dims);
    dims.grid[0] = dims.grid[1] = dims.grid[2] = 1;
    dims.block[0] = dims.block[1] = dims.block[2] = 1;
    if (!CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK) || !CHECK_EQ_RESULT(gf_kernel_get(mod, "gf_test_crash", &k), GF_OK) ||
        !CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK))
        return;
    if (CHECK_EQ_RESULT(gf_launch(s, k, dims, NULL, 0), GF_OK)) {
        CHECK_FAIL(gf_stream_synchronize(s), GF_ERROR_DEVICE_LOST);
        CHECK(strstr(gf_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS") && strstr(gf_last_error(), "unusable"),
              "a kernel's illegal address: GF_ERROR_DEVICE_LOST, with the driver's code and what it means");
    }
}

int main(void)
{
    gf_module *mod = NULL;
    gf_result r = gf_device_open(GF_BACKEND_CUDA, 0, &dev);
    if (r != GF_OK) {
        printf("notice: no CUDA device: %s\n", gf_last_error());
        SKIP("CUDA backend tests: no CUDA device");
        return th_finish();
    }
    printf("device: %s\n", gf_device_name(dev));
    if (CHECK_EQ_RESULT(gf_module_load(dev, &tk_module, &mod), GF_OK) &&
        CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &k_fill), GF_OK) &&
        CHECK_EQ_RESULT(gf_kernel_get(mod, "add_u32", &k_add), GF_OK)) {
        test_graph_args();
        test_messages(mod);
    }
    test_default_pool();
    test_source();
    test_sticky_fault();   /* last: the context does not come back */
    gf_device_close(dev);
    return th_finish();
}
