/* No hidden stalls (issue "No hidden stalls"): destroys never hold the host, and every wait the
   program did not ask for by name is reported by GPUFLOW_SYNC_DEBUG.

   Each case puts a gate in front of the work (a stream callback that holds its stream until the
   test opens it), so work is queued behind it for as long as the test wants; a destroy that
   waited for that work would wait for ever (the gate gives up after TH_WAIT_MS: a failure, not
   a hang). No timing is asserted: "returned while the gate was shut" is the check.

     buffer     a buffer destroyed with a copy from it queued: returns at once, its memory shows
                as pending (GF_MEMORY_PENDING), the copy still reads the right bytes, then the
                memory goes at the next synchronize
     release    the memory of a destroyed buffer whose work has passed is freed without waiting for
                another stream's queued work
     idle       a destroyed module's unload and gf_host_free, whose driver calls wait for the whole
                device on CUDA, wait for no other stream: made once the device is idle
     bound      past 64 MiB of pinned memory let go of while the device stays busy, the next
                synchronize frees it, waiting (CUDA and HIP only)
     views      a view destroyed with a launch on it queued: at once, and its parent's memory is
                not pending; the parent destroyed before its last view: pending with the view
     module     a module destroyed with a launch of its kernel queued: at once, its kernel is
                refused from then on, and the launch still runs
     graph      a launched graph that owns memory, destroyed while a replay is queued: at once
     pool       a graph pool destroyed with its last graph's replay queued: at once
     alloc      under a memory limit, an allocation that needs a pending buffer's memory waits
                for it (the gate opens from another thread) and succeeds
     trim       gf_device_trim frees what is pending
     syncdebug  GPUFLOW_SYNC_DEBUG=warn names each hidden wait (a busy stream's destroy, a stream
                pool's destroy, synchronous copies both ways, trim, a capture's warm-up runs) with
                the call and the stream (the allocation that waits for pending frees: "alloc"); =error refuses each with
                GF_ERROR_INVALID_STATE (a destroy keeps its object); unset says nothing
     fills      large fills (OpenCL fills them with a kernel of gpuflow's own past 64 KiB): every
                width, aligned and odd offsets, a view at an odd offset, byte for byte
     close      a device closed with memory pending frees it (no leak under ASan)

   usage: no_stalls stub|opencl|cuda|hip */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include <stdlib.h>

static const char ns_source[] =
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "no_stalls.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "no_stalls.gfk"
#undef GF_KERNELS

#define NS_N 4096u
static gf_device *dev;
static gf_backend backend;

static uint64_t pending_count(void)
{
    gf_memory_stats st = {0};
    if (gf_device_memory_stats(dev, &st) != GF_OK) return (uint64_t)-1;
    return st.kind[GF_MEMORY_PENDING].count;
}
static uint64_t pending_bytes(void)
{
    gf_memory_stats st = {0};
    if (gf_device_memory_stats(dev, &st) != GF_OK) return (uint64_t)-1;
    return st.kind[GF_MEMORY_PENDING].bytes;
}

static gf_module *load_module(void)
{
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(ns_add) };
    gf_module_desc d;
    gf_module *m = NULL;
    memset(&d, 0, sizeof d);
    d.source = ns_source;
    d.source_name = "no_stalls.gfk";
    d.stub_kernels = stub;
    d.stub_kernel_count = 1;
    CHECK_EQ_RESULT(gf_module_load(dev, &d, &m), GF_OK);
    return m;
}

static gf_result launch_add(gf_stream *s, gf_kernel *k, gf_buffer *x)
{
    unsigned n = NS_N;
    gf_launch_dims dims = { { (NS_N + 127) / 128, 1, 1 }, { 128, 1, 1 }, 0 };
    gf_arg args[2] = { GF_ARG_BUFFER(x), GF_ARG(n) };
    return gf_launch(s, k, dims, args, 2);
}

/* A gate in front of everything queued on s after it. */
static void shut(gf_stream *s, th_gate *g)
{
    th_gate_init(g);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, g), GF_OK);
}
static void open_and_sync(gf_stream *s, th_gate *g)
{
    th_gate_open(g);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(!TH_GATE_TIMED_OUT(g), "the gate was opened by the test, not by its timeout (nothing waited for it)");
    th_gate_destroy(g);
}

static void test_buffer(gf_stream *s)
{
    float host[NS_N], back[NS_N];
    gf_buffer *b = NULL;
    th_gate g;
    unsigned i;
    for (i = 0; i < NS_N; i++) host[i] = (float)i;
    memset(back, 0, sizeof back);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &b), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, host, sizeof host), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, back, b, 0, sizeof back), GF_OK);
    gf_buffer_destroy(b);
    CHECK(TH_GATE_LEFT(&g) == 0, "buffer: gf_buffer_destroy returned while work using the buffer was queued behind a shut gate");
    CHECK(pending_bytes() == sizeof host, "buffer: its memory shows as pending (GF_MEMORY_PENDING) until the queued copy has run");
    CHECK(gf_buffer_size(b) == 0, "buffer: the handle is gone at once");
    open_and_sync(s, &g);
    CHECK(memcmp(back, host, sizeof host) == 0, "buffer: the copy queued before the destroy read the buffer's bytes (the memory outlived its handle)");
    CHECK(pending_bytes() == 0, "buffer: after gf_stream_synchronize nothing is pending");
}

/* The release itself: a destroyed buffer whose work has passed is freed at the next
   synchronize of its stream, and that free must not wait for another stream's queued work
   (on CUDA, cuMemFree waited for every stream of the device, here for the shut gate: found by
   a test of this stop; gpuflow_cuda.h's free_stream). */
static void test_release(gf_stream *s)
{
    gf_stream *other = NULL;
    gf_buffer *b = NULL;
    th_gate busy, g;
    if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &other), GF_OK)) return;
    CHECK_EQ_RESULT(gf_buffer_create(dev, 1 << 20, &b), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 7, 1 << 20), GF_OK);
    gf_buffer_destroy(b);                        /* pending behind g: fenced on s alone */
    shut(other, &busy);                          /* another stream's work, queued for as long as the test wants */
    th_gate_open(&g);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);   /* the fill has passed: the memory is released here */
    CHECK(TH_GATE_LEFT(&busy) == 0, "release: freeing a passed buffer's memory did not wait for another stream's queued work");
    CHECK(pending_bytes() == 0, "release: the memory was freed");
    th_gate_destroy(&g);
    open_and_sync(other, &busy);
    gf_stream_destroy(other);
}

static int releases_wait(void) { return backend == GF_BACKEND_CUDA || backend == GF_BACKEND_HIP; }
static uint64_t pinned_count(void)
{
    gf_memory_stats st;
    memset(&st, 0, sizeof st);
    if (gf_device_memory_stats(dev, &st) != GF_OK) return (uint64_t)-1;
    return st.kind[GF_MEMORY_PINNED].count;
}

/* Releases whose driver call waits for every stream of the device (CUDA's cuModuleUnload and
   cuMemFreeHost: 280 ms behind another stream's 300 ms host function on an H100) are made only
   once no stream has work queued: neither the synchronize after a destroyed module's last
   launch nor gf_host_free waits for another stream's queued work, and the synchronize that
   leaves the device idle makes them (found by a census of the driver's releases on the H100). */
static void test_release_when_idle(gf_stream *s)
{
    gf_module *m = load_module();
    gf_kernel *k = NULL;
    gf_buffer *x = NULL;
    gf_stream *other = NULL;
    void *pinned = NULL;
    th_gate g, busy;
    if (!m) return;
    if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &other), GF_OK)) { gf_module_destroy(m); return; }
    CHECK_EQ_RESULT(gf_kernel_get(m, "ns_add", &k), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, NS_N * sizeof(float), &x), GF_OK);
    CHECK_EQ_RESULT(gf_host_alloc(dev, 1 << 20, &pinned), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(launch_add(s, k, x), GF_OK);
    gf_module_destroy(m);                        /* retired behind the launch, gated on s */
    shut(other, &busy);                          /* another stream's work, queued until the test opens it */
    open_and_sync(s, &g);                        /* the launch has passed: the module's release comes due */
    gf_host_free(dev, pinned);
    CHECK(TH_GATE_LEFT(&busy) == 0, "release when idle: a module's unload or gf_host_free waited for another stream's queued work");
    if (releases_wait()) CHECK(pinned_count() == 1, "release when idle: the pinned memory waits for an idle device (counted meanwhile)");
    open_and_sync(other, &busy);                 /* the device is idle after it: the releases are made */
    CHECK(pinned_count() == 0, "release when idle: the pinned memory was freed once the device was idle");
    CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);
    gf_buffer_destroy(x);
    gf_stream_destroy(other);
}

/* What waits for an idle device is bounded: past 64 MiB of pinned memory let go of while
   another stream stays busy, the next synchronize makes the releases, waiting for the device
   (found by an outside review: a device that never went idle kept every free). */
static void *open_later(void *p);
static void test_idle_bound(gf_stream *s)
{
    gf_stream *other = NULL;
    void *a = NULL, *b = NULL;
    pthread_t opener;
    th_gate busy;
    if (!releases_wait()) { SKIP("idle bound: only where the driver's pinned free waits for the device (CUDA, HIP)"); return; }
    if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &other), GF_OK)) return;
    CHECK_EQ_RESULT(gf_host_alloc(dev, (size_t)40 << 20, &a), GF_OK);
    CHECK_EQ_RESULT(gf_host_alloc(dev, (size_t)40 << 20, &b), GF_OK);
    shut(other, &busy);
    gf_host_free(dev, a);
    gf_host_free(dev, b);                        /* 80 MiB wait for an idle device: past the bound */
    CHECK(pinned_count() == 2, "idle bound: the frees returned at once, the memory still counted");
    pthread_create(&opener, NULL, open_later, &busy);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);   /* over the bound: releases, waiting for the device */
    CHECK(TH_GATE_LEFT(&busy) == 1, "idle bound: past the bound the releases waited for the busy stream");
    CHECK(pinned_count() == 0, "idle bound: past the bound the pinned memory was freed");
    pthread_join(opener, NULL);
    open_and_sync(other, &busy);
    gf_stream_destroy(other);
}

static void test_views(gf_stream *s, gf_kernel *k)
{
    gf_buffer *p = NULL, *v = NULL, *w = NULL;
    float back[NS_N] = {0};   /* zeros if the copy back fails */
    th_gate g;
    unsigned i;
    CHECK_EQ_RESULT(gf_buffer_create(dev, 2 * NS_N * sizeof(float), &p), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, p, 0, 0, 2 * NS_N * sizeof(float)), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_view(p, 0, NS_N * sizeof(float), &v), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(launch_add(s, k, v), GF_OK);
    {
        uint64_t before = pending_count();
        gf_buffer_destroy(v);
        /* an OpenCL view is a sub-buffer, whose release NVIDIA's driver makes wait for the queued
           work (20 ms on an H100 where the raw call after a finish takes 0.0003): it is retired,
           never released under queued work; elsewhere a view has nothing of its own to free */
        CHECK(pending_count() == before + (backend == GF_BACKEND_OPENCL ? 1u : 0u),
              "views: the view's own handle (an OpenCL sub-buffer) waits for the queued launch instead of being released under it");
    }
    CHECK(TH_GATE_LEFT(&g) == 0, "views: a view's destroy returned at once with a launch on it queued");
    CHECK(pending_bytes() == 0, "views: the parent's memory is not pending (the parent is alive)");
    open_and_sync(s, &g);
    CHECK_EQ_RESULT(gf_copy_to_host(back, p, 0, sizeof back), GF_OK);
    for (i = 0; i < NS_N && back[i] == 1.0f; i++) {}
    CHECK(i == NS_N, "views: the launch on the destroyed view ran on the parent's memory");
    /* the parent first, then its last view */
    CHECK_EQ_RESULT(gf_buffer_view(p, 0, NS_N * sizeof(float), &w), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(launch_add(s, k, w), GF_OK);
    gf_buffer_destroy(p);
    CHECK(pending_bytes() == 0, "views: a parent destroyed under a live view keeps its memory for the view");
    gf_buffer_destroy(w);
    CHECK(TH_GATE_LEFT(&g) == 0, "views: the last view's destroy returned at once");
    CHECK(pending_bytes() == 2 * NS_N * sizeof(float), "views: the parent's memory is pending once its last view is destroyed");
    open_and_sync(s, &g);
    CHECK(pending_bytes() == 0, "views: freed after the queued launch");
}

static void test_module(gf_stream *s)
{
    gf_module *m = load_module();
    gf_kernel *k = NULL;
    gf_buffer *x = NULL;
    float back[NS_N] = {0};   /* zeros if the copy back fails */
    unsigned i;
    th_gate g;
    if (!m) return;
    CHECK_EQ_RESULT(gf_kernel_get(m, "ns_add", &k), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof back, &x), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, x, 0, 0, sizeof back), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(launch_add(s, k, x), GF_OK);
    gf_module_destroy(m);
    CHECK(TH_GATE_LEFT(&g) == 0, "module: gf_module_destroy returned at once with a launch of its kernel queued");
    CHECK_FAIL(launch_add(s, k, x), GF_ERROR_INVALID_HANDLE);
    open_and_sync(s, &g);
    CHECK_EQ_RESULT(gf_copy_to_host(back, x, 0, sizeof back), GF_OK);
    for (i = 0; i < NS_N && back[i] == 1.0f; i++) {}
    CHECK(i == NS_N, "module: the launch queued before the destroy ran with the module's code");
    gf_buffer_destroy(x);
}

static gf_result capture_owning(gf_stream *s, void *user)
{
    gf_buffer *t = NULL;
    gf_result r;
    (void)user;
    if ((r = gf_buffer_create_async(s, 1 << 16, &t)) != GF_OK) return r;
    if ((r = gf_fill_async(s, t, 0, 7, 1 << 16)) != GF_OK) return r;
    return gf_buffer_destroy_async(s, t);
}

static void test_graph(gf_stream *s)
{
    gf_graph *gr = NULL;
    gf_graph_pool *pool = NULL;
    gf_capture_desc cd;
    th_gate g;
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, capture_owning, NULL, &gr), GF_OK);
    if (!gr) return;
    CHECK_EQ_RESULT(gf_graph_launch(gr, s), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(gf_graph_launch(gr, s), GF_OK);
    gf_graph_destroy(gr);
    CHECK(TH_GATE_LEFT(&g) == 0, "graph: a launched graph that owns memory was destroyed at once with a replay queued");
    open_and_sync(s, &g);
    /* a graph pool whose last graph's replay is queued */
    CHECK_EQ_RESULT(gf_graph_pool_create(dev, &pool), GF_OK);
    memset(&cd, 0, sizeof cd);
    cd.pool = pool;
    CHECK_EQ_RESULT(gf_graph_capture_desc(s, &cd, capture_owning, NULL, &gr), GF_OK);
    if (!gr) { gf_graph_pool_destroy(pool); return; }
    shut(s, &g);
    CHECK_EQ_RESULT(gf_graph_launch(gr, s), GF_OK);
    gf_graph_destroy(gr);
    gf_graph_pool_destroy(pool);
    CHECK(TH_GATE_LEFT(&g) == 0, "pool: gf_graph_pool_destroy returned at once with its graph's replay queued");
    open_and_sync(s, &g);
    CHECK(pending_bytes() == 0, "graph, pool: nothing pending once the replays have run");
}

static void *open_later(void *p)
{
    th_sleep_ms(200);
    th_gate_open((th_gate *)p);
    return NULL;
}

static void test_alloc_and_trim(gf_stream *s)
{
    gf_memory_stats st = {0};
    gf_buffer *a = NULL, *b = NULL;
    size_t big = 3u << 20;
    pthread_t opener;
    th_gate g;
    CHECK_EQ_RESULT(gf_device_memory_stats(dev, &st), GF_OK);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, (size_t)st.device_bytes + big + (big / 2)), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, big, &a), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(gf_fill_async(s, a, 0, 1, big), GF_OK);
    gf_buffer_destroy(a);
    CHECK(pending_bytes() == big, "alloc: the destroyed buffer's memory is pending");
    setenv("GPUFLOW_SYNC_DEBUG", "error", 1);
    CHECK_FAIL(gf_buffer_create(dev, big, &b), GF_ERROR_INVALID_STATE);   /* it would wait: refused */
    CHECK(strstr(gf_last_error(), "gf_buffer_create would hold the host") != NULL, "alloc: GPUFLOW_SYNC_DEBUG=error refuses the allocation that would wait, and says so");
    unsetenv("GPUFLOW_SYNC_DEBUG");
    pthread_create(&opener, NULL, open_later, &g);
    CHECK_EQ_RESULT(gf_buffer_create(dev, big, &b), GF_OK);   /* needs a's memory: waits for the gate */
    CHECK(TH_GATE_LEFT(&g) == 1, "alloc: an allocation that needed pending memory waited for the queued work, then got it");
    pthread_join(opener, NULL);
    open_and_sync(s, &g);
    gf_buffer_destroy(b);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, 0), GF_OK);
    /* trim: what is pending goes */
    CHECK_EQ_RESULT(gf_buffer_create(dev, big, &a), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(gf_fill_async(s, a, 0, 1, big), GF_OK);
    gf_buffer_destroy(a);
    th_gate_open(&g);
    CHECK_EQ_RESULT(gf_device_trim(dev, 0), GF_OK);
    CHECK(pending_bytes() == 0, "trim: gf_device_trim frees what is pending");
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    th_gate_destroy(&g);
}

static void test_fills(gf_stream *s)
{
    size_t n_all = ((size_t)1 << 20) + 37, i;
    unsigned char *h = (unsigned char *)malloc(n_all), *e = (unsigned char *)malloc(n_all);
    gf_buffer *b = NULL, *v = NULL;
    int t;
    if (!h || !e) { free(h); free(e); CHECK(0, "fills: host memory"); return; }
    CHECK_EQ_RESULT(gf_buffer_create(dev, n_all, &b), GF_OK);
    for (t = 0; b && t < 4; t++) {
        size_t off = t == 1 ? 4 : t == 2 ? 16 : t == 3 ? 3 : 0, n = n_all - off - 6;
        char what[96];
        memset(e, 0xEE, n_all);
        CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0xEE, n_all), GF_OK);
        if (t == 0 || t == 3) { CHECK_EQ_RESULT(gf_fill_async(s, b, off, 0x5A, n), GF_OK); memset(e + off, 0x5A, n); }
        if (t == 1) {
            n &= ~(size_t)1;
            CHECK_EQ_RESULT(gf_fill16_async(s, b, off, 0xA1B2, n / 2), GF_OK);
            for (i = 0; i < n; i += 2) { uint16_t x = 0xA1B2; memcpy(e + off + i, &x, 2); }
        }
        if (t == 2) {
            n &= ~(size_t)3;
            CHECK_EQ_RESULT(gf_fill32_async(s, b, off, 0x11223344u, n / 4), GF_OK);
            for (i = 0; i < n; i += 4) { uint32_t x = 0x11223344u; memcpy(e + off + i, &x, 4); }
        }
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(h, b, 0, n_all), GF_OK);
        snprintf(what, sizeof what, "fills: %s of %llu bytes at offset %llu, byte for byte",
                 t == 1 ? "16-bit fill" : t == 2 ? "32-bit fill" : "byte fill", (unsigned long long)n, (unsigned long long)off);
        CHECK(memcmp(h, e, n_all) == 0, what);
    }
    if (b) {
        CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0, n_all), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_view(b, 5, n_all - 10, &v), GF_OK);
        if (v) CHECK_EQ_RESULT(gf_fill_async(s, v, 0, 0x33, n_all - 10), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(h, b, 0, n_all), GF_OK);
        memset(e, 0, n_all);
        memset(e + 5, 0x33, n_all - 10);
        CHECK(memcmp(h, e, n_all) == 0, "fills: a view at an odd offset, its bytes alone");
        gf_buffer_destroy(v);
        gf_buffer_destroy(b);
    }
    free(h);
    free(e);
}

/* One hidden wait under each GPUFLOW_SYNC_DEBUG mode. */
static void test_sync_debug(void)
{
    static const char *const modes[3] = { "off", "warn", "error" };
    float host[64];
    int m;
    memset(host, 0, sizeof host);
    gf_set_logger(th_said_logger, NULL);
    for (m = 0; m < 3; m++) {
        gf_stream *s = NULL, *t = NULL;
        gf_stream_pool *sp = NULL;
        gf_stream_pool_desc pd;
        gf_buffer *b = NULL;
        gf_result want = m == 2 ? GF_ERROR_INVALID_STATE : GF_OK;
        int said;
        char what[160];
        pthread_t opener;
        th_gate g;
        setenv("GPUFLOW_SYNC_DEBUG", modes[m], 1);
        th_said_clear();
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &b), GF_OK);
        /* synchronous copies, both ways */
        CHECK_EQ_RESULT(gf_copy_to_device(b, 0, host, sizeof host), want);
        CHECK_EQ_RESULT(gf_copy_to_host(host, b, 0, sizeof host), want);
        /* a busy stream's destroy: error keeps the stream; otherwise the destroy waits for the
           gate, which another thread opens */
        shut(s, &g);
        if (m != 2) pthread_create(&opener, NULL, open_later, &g);
        gf_stream_destroy(s);
        if (m != 2) pthread_join(opener, NULL);
        if (m == 2) {
            CHECK(strstr(gf_last_error(), "GPUFLOW_SYNC_DEBUG=error") != NULL, "syncdebug error: a busy stream's destroy is refused and says why");
            CHECK_EQ_RESULT(gf_stream_query(s), GF_NOT_READY);   /* still a live stream, still held by its gate */
            th_gate_open(&g);
            setenv("GPUFLOW_SYNC_DEBUG", "off", 1);
            gf_stream_destroy(s);
            setenv("GPUFLOW_SYNC_DEBUG", modes[m], 1);
        }
        th_gate_destroy(&g);
        /* a stream pool with a busy stream */
        memset(&pd, 0, sizeof pd);
        pd.count = 1;
        CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &sp), GF_OK);
        if (sp) {
            CHECK_EQ_RESULT(gf_stream_pool_acquire(sp, NULL, &t), GF_OK);
            shut(t, &g);
            if (t) gf_stream_pool_release(sp, t);
            if (m != 2) pthread_create(&opener, NULL, open_later, &g);
            gf_stream_pool_destroy(sp);
            if (m != 2) pthread_join(opener, NULL);
            else th_gate_open(&g);
            if (m == 2) {
                setenv("GPUFLOW_SYNC_DEBUG", "off", 1);
                gf_stream_pool_destroy(sp);
                setenv("GPUFLOW_SYNC_DEBUG", modes[m], 1);
            }
            th_gate_destroy(&g);
        }
        /* a stream set with a busy slot (its destroy was not in the list: an outside review) */
        {
            gf_stream_set *set = NULL;
            if (CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "busy set", &set), GF_OK)) {
                shut(gf_stream_set_get(set, 0), &g);
                if (m != 2) pthread_create(&opener, NULL, open_later, &g);
                gf_stream_set_destroy(set);
                if (m != 2) pthread_join(opener, NULL);
                else {
                    CHECK(strstr(gf_last_error(), "GPUFLOW_SYNC_DEBUG=error") != NULL, "syncdebug error: a busy set's destroy is refused and says why");
                    th_gate_open(&g);
                    setenv("GPUFLOW_SYNC_DEBUG", "off", 1);
                    gf_stream_set_destroy(set);
                    setenv("GPUFLOW_SYNC_DEBUG", modes[m], 1);
                }
                th_gate_destroy(&g);
            }
        }
        /* trim */
        CHECK_EQ_RESULT(gf_device_trim(dev, 0), want);
        /* a capture with warm-up runs waits for them */
        {
            gf_stream *c = NULL;
            gf_graph *gr = NULL;
            CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &c), GF_OK);
            CHECK_EQ_RESULT(gf_graph_capture(c, 1, capture_owning, NULL, &gr), want);
            if (gr) gf_graph_destroy(gr);
            setenv("GPUFLOW_SYNC_DEBUG", "off", 1);
            gf_stream_destroy(c);
            setenv("GPUFLOW_SYNC_DEBUG", modes[m], 1);
        }
        gf_buffer_destroy(b);
        said = th_said_count("GPUFLOW_SYNC_DEBUG:");
        snprintf(what, sizeof what, "syncdebug %s: %d hidden waits named (2 copies, a stream's, a pool's and a set's destroy, trim, a capture's warm-up)", modes[m], said);
        CHECK(m == 1 ? said == 7 : said == 0, what);
        if (m == 1) {
            CHECK(th_said_count("gf_copy_to_device holds the host") == 1 && th_said_count("gf_copy_to_host holds the host") == 1,
                  "syncdebug warn: each synchronous copy is named with its call");
            CHECK(th_said_count("gf_stream_destroy holds the host until its queued work has run on stream") == 1,
                  "syncdebug warn: a busy stream's destroy names the call and the stream");
            CHECK(th_said_count("gf_stream_pool_destroy holds the host") == 1, "syncdebug warn: a busy pool's destroy is named");
            CHECK(th_said_count("gf_stream_set_destroy holds the host") == 1, "syncdebug warn: a busy set's destroy is named");
            CHECK(th_said_count("gf_device_trim holds the host") == 1, "syncdebug warn: trim is named");
            CHECK(th_said_count("gf_graph_capture holds the host until its warm-up runs have run") == 1, "syncdebug warn: a capture's warm-up is named");
        }
    }
    unsetenv("GPUFLOW_SYNC_DEBUG");
    gf_set_logger(NULL, NULL);
}

int main(int argc, char **argv)
{
    const char *name = th_backend_arg(argc, argv, &backend);
    gf_stream *s = NULL;
    gf_module *m;
    gf_kernel *k = NULL;
    gf_buffer *leak = NULL;
    gf_result r;
    th_gate g;
    if (!name) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    unsetenv("GPUFLOW_SYNC_DEBUG");
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: no_stalls %s skipped: %s: %s\n", name, gf_result_name(r), gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    printf("no_stalls on %s: %s\n", name, gf_device_name(dev));
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    m = load_module();
    if (m) CHECK_EQ_RESULT(gf_kernel_get(m, "ns_add", &k), GF_OK);
    test_buffer(s);
    test_release(s);
    test_release_when_idle(s);
    test_idle_bound(s);
    if (k) test_views(s, k);
    test_module(s);
    test_graph(s);
    test_alloc_and_trim(s);
    test_fills(s);
    test_sync_debug();
    /* close with memory pending: freed by the close (ASan would see a leak) */
    CHECK_EQ_RESULT(gf_buffer_create(dev, 1 << 20, &leak), GF_OK);
    shut(s, &g);
    CHECK_EQ_RESULT(gf_fill_async(s, leak, 0, 3, 1 << 20), GF_OK);
    gf_buffer_destroy(leak);
    CHECK(pending_bytes() == 1u << 20, "close: memory is pending before the close");
    th_gate_open(&g);
    if (m) gf_module_destroy(m);
    gf_stream_destroy(s);
    gf_device_close(dev);
    th_gate_destroy(&g);
    return th_finish();
}
