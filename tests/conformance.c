/* The conformance suite: written once against the public API, run once per backend.

       ./conformance stub|cuda|hip|opencl [TEST...]    all tests, or only those named
       ./conformance --list                            the tests' names

   A backend that is not compiled in, or has no device here, is one skipped check with a
   notice. Everything else must hold on every backend: where a backend legitimately differs
   (native graphs, managed memory, kernel forms) the test reads gf_device_info and says so.
   Nothing here asserts speed; time is only ever a lower bound (a 30 ms sleep takes >= 15 ms)
   and every wait is bounded, so a slow machine or a sanitizer cannot make it flaky. */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include <unistd.h>
#include "harness.h"
#include "test_kernels.h"

static struct {
    gf_backend backend;
    const char *name;
    gf_device *dev;
    gf_device_info info;
    gf_module *mod;                      /* NULL: no form of the test kernels for this backend */
    gf_kernel *k_fill, *k_add, *k_empty;
    gf_buffer *scratch;                  /* for stream_usable() */
} C;

/* ---- helpers ------------------------------------------------------------------------------ */
static gf_stream *mk_stream(const char *label)
{
    gf_stream_desc d;
    gf_stream *s = NULL;
    d.label = label;
    d.priority = GF_PRIORITY_NORMAL;
    CHECK_EQ_RESULT(gf_stream_create(C.dev, &d, &s), GF_OK);
    return s;
}

static gf_buffer *mk_buffer(size_t bytes)
{
    gf_buffer *b = NULL;
    CHECK_EQ_RESULT(gf_buffer_create(C.dev, bytes, &b), GF_OK);
    return b;
}

static int all_bytes(const void *p, size_t n, unsigned char v)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != v) return 0;
    return 1;
}

static int all_u32(const uint32_t *p, size_t n, uint32_t v)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

static void sleep_cb(void *user, gf_result status)   /* holds the stream ~20 ms, then counts */
{
    th_sleep_ms(20);
    th_flag_cb(user, status);
}

typedef struct { th_log *log; int value; } log_item;
static void log_cb(void *user, gf_result status)
{
    log_item *it = (log_item *)user;
    (void)status;
    th_log_add(it->log, it->value);
}

/* A stream "stays usable": a fill and a read-back on it work and give the right bytes. */
static int stream_usable(gf_stream *s, const char *what)
{
    unsigned char h[64] = { 0 };
    gf_result r1, r2, r3;
    memset(h, 0, sizeof h);
    r1 = gf_fill_async(s, C.scratch, 0, 0x3c, sizeof h);
    r2 = gf_copy_to_host_async(s, h, C.scratch, 0, sizeof h);
    r3 = gf_stream_synchronize(s);
    return CHECK(r1 == GF_OK && r2 == GF_OK && r3 == GF_OK && all_bytes(h, sizeof h, 0x3c) &&
                 gf_stream_query(s) == GF_OK, what);
}

static gf_launch_dims dims_1d(unsigned n, unsigned block)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = (n + block - 1) / block; d.grid[1] = d.grid[2] = 1;
    d.block[0] = block; d.block[1] = d.block[2] = 1;
    return d;
}

/* p[i] op= v for i < n, with a grid that overshoots n (the kernels bound-check). */
static gf_result launch_u32(gf_stream *s, gf_kernel *k, gf_buffer *b, uint32_t n, uint32_t v)
{
    gf_arg args[3];
    args[0].value = 0; args[0].size = 0; args[0].buffer = b;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &v; args[2].size = sizeof v; args[2].buffer = 0;
    return gf_launch(s, k, dims_1d(n, 64), args, 3);
}

/* Reads a buffer of n u32 back synchronously and checks every element is v. */
static int buffer_is_u32(gf_buffer *b, uint32_t n, uint32_t v, const char *what)
{
    uint32_t *h = (uint32_t *)calloc(n, sizeof *h);   /* zeros where a failing copy wrote nothing */
    int ok = h && gf_copy_to_host(h, b, 0, n * sizeof *h) == GF_OK && all_u32(h, n, v);
    free(h);
    return CHECK(ok, what);
}

static int starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- results, backends, devices ------------------------------------------------------------- */
static void test_results_and_backends(void)
{
    static const gf_result codes[] = {
        GF_OK, GF_NOT_READY, GF_TIMEOUT, GF_ERROR_INVALID_ARGUMENT, GF_ERROR_INVALID_HANDLE,
        GF_ERROR_OUT_OF_RANGE, GF_ERROR_OUT_OF_MEMORY, GF_ERROR_BACKEND_UNAVAILABLE,
        GF_ERROR_NO_DEVICE, GF_ERROR_NOT_SUPPORTED, GF_ERROR_WRONG_DEVICE, GF_ERROR_CAPTURE,
        GF_ERROR_CYCLE, GF_ERROR_INVALID_STATE, GF_ERROR_NOT_FOUND, GF_ERROR_BUILD, GF_ERROR_DRIVER
    };
    int n = (int)(sizeof codes / sizeof codes[0]), i, j, named = 1, distinct = 1;
    for (i = 0; i < n; i++) {
        const char *a = gf_result_name(codes[i]);
        if (!a || !a[0]) named = 0;
        for (j = 0; j < i && a; j++)
            if (gf_result_name(codes[j]) && strcmp(a, gf_result_name(codes[j])) == 0) distinct = 0;
    }
    CHECK(named, "gf_result_name names every code");
    CHECK(distinct, "gf_result_name gives each code its own name");
    CHECK(strstr(gf_result_name(GF_ERROR_CYCLE), "CYCLE") != NULL, "gf_result_name(GF_ERROR_CYCLE) says CYCLE");
    named = 1; distinct = 1;
    for (i = GF_BACKEND_AUTO; i < GF_BACKEND_COUNT; i++) {   /* AUTO and every backend in the registry */
        const char *a = gf_backend_name((gf_backend)i);
        if (!a || !a[0]) named = 0;
        for (j = GF_BACKEND_AUTO; j < i && a; j++)
            if (gf_backend_name((gf_backend)j) && strcmp(a, gf_backend_name((gf_backend)j)) == 0) distinct = 0;
    }
    CHECK(named && distinct, "gf_backend_name names each backend distinctly");
    CHECK(gf_backend_available(C.backend) == 1, "gf_backend_available for the backend under test");
    CHECK(gf_device_count(C.backend) >= 1, "gf_device_count >= 1");
    if (C.backend == GF_BACKEND_STUB)
        CHECK(gf_device_count(GF_BACKEND_STUB) == 1, "stub: exactly one device");
}

static void test_device(void)
{
    gf_device_info info = {0};
    gf_device *second = NULL;
    size_t free_b = 0, total_b = 0;
    const char *name = gf_device_name(C.dev);
    gf_stream *a, *b;
    th_flag f;

    CHECK(gf_device_backend(C.dev) == C.backend, "gf_device_backend");
    CHECK(name && name[0], "gf_device_name is not empty");
    CHECK_EQ_RESULT(gf_device_info(C.dev, &info), GF_OK);
    CHECK(info.backend == C.backend, "info.backend");
    CHECK(name && strcmp(info.name, name) == 0, "info.name matches gf_device_name");
    CHECK(info.total_memory > 0, "info.total_memory > 0");
    CHECK(info.compute_units > 0, "info.compute_units > 0");
    if (C.backend == GF_BACKEND_STUB) {
        CHECK(info.native_graphs == 0 && info.stream_priorities == 0 && info.managed_memory == 1 &&
              info.async_alloc == 0, "stub info: no native graphs or priorities, managed memory, core allocator");
    }
    CHECK_EQ_RESULT(gf_device_memory_info(C.dev, &free_b, &total_b), GF_OK);
    CHECK(total_b > 0 && free_b <= total_b, "memory_info: 0 <= free <= total, total > 0");

    /* the same device opened again is another gf_device */
    CHECK_EQ_RESULT(gf_device_open(C.backend, 0, &second), GF_OK);
    CHECK(second && second != C.dev, "a second open gives its own gf_device");
    gf_device_close(second);

    /* gf_device_synchronize waits for every stream */
    th_flag_init(&f);
    a = mk_stream("devsync-a");
    b = mk_stream("devsync-b");
    CHECK_EQ_RESULT(gf_stream_add_callback(a, sleep_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(b, sleep_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_device_synchronize(C.dev), GF_OK);
    CHECK(th_flag_get(&f) == 2, "gf_device_synchronize waited for the work of both streams");
    CHECK(gf_stream_query(a) == GF_OK && gf_stream_query(b) == GF_OK, "both streams idle after device sync");
    gf_stream_destroy(a);
    gf_stream_destroy(b);
    th_flag_destroy(&f);
}

/* ---- memory ----------------------------------------------------------------------------------- */
static void test_buffers(void)
{
    enum { N = 4096 };
    static unsigned char src[N], dst[N], expect[N];
    unsigned char part[9] = { 0 };
    size_t i, big_n = (size_t)8 << 20;
    unsigned char *big_src, *big_dst;
    gf_buffer *b = mk_buffer(N), *one = mk_buffer(1), *big = mk_buffer(big_n);
    unsigned char x = 0x5e, y = 0;

    CHECK(gf_buffer_size(b) == N, "gf_buffer_size");
    for (i = 0; i < N; i++) src[i] = (unsigned char)(i * 7 + 3);
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, src, N), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(dst, b, 0, N), GF_OK);
    CHECK(memcmp(src, dst, N) == 0, "sync round trip of 4 KiB");

    memcpy(expect, src, N);
    memcpy(expect + 100, "hello", 5);
    CHECK_EQ_RESULT(gf_copy_to_device(b, 100, "hello", 5), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(part, b, 98, sizeof part), GF_OK);
    CHECK(memcmp(part, expect + 98, sizeof part) == 0, "copies at offsets touch exactly their bytes");
    CHECK_EQ_RESULT(gf_copy_to_host(part, b, N - 4, 4), GF_OK);
    CHECK(memcmp(part, expect + N - 4, 4) == 0, "a copy that ends exactly at the buffer's end");

    CHECK_FAIL(gf_copy_to_host(part, b, N - 3, 4), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device(b, SIZE_MAX, src, 1), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device(b, 1, src, SIZE_MAX), GF_ERROR_OUT_OF_RANGE);
    CHECK_EQ_RESULT(gf_copy_to_host(dst, b, 0, N), GF_OK);
    CHECK(memcmp(dst, expect, N) == 0, "refused copies changed nothing");

    CHECK(gf_buffer_size(one) == 1, "a 1-byte buffer");
    CHECK(gf_copy_to_device(one, 0, &x, 1) == GF_OK && gf_copy_to_host(&y, one, 0, 1) == GF_OK && y == x,
          "1-byte round trip");

    big_src = (unsigned char *)malloc(big_n);
    big_dst = (unsigned char *)malloc(big_n);
    if (CHECK(big_src && big_dst, "host memory for 8 MiB")) {
        for (i = 0; i < big_n; i++) big_src[i] = (unsigned char)(i ^ (i >> 9));
        memset(big_dst, 0, big_n);
        CHECK(gf_copy_to_device(big, 0, big_src, big_n) == GF_OK &&
              gf_copy_to_host(big_dst, big, 0, big_n) == GF_OK && memcmp(big_src, big_dst, big_n) == 0,
              "8 MiB sync round trip");
    }
    free(big_src);
    free(big_dst);
    gf_buffer_destroy(b);
    gf_buffer_destroy(one);
    gf_buffer_destroy(big);
}

static void test_managed(void)
{
    gf_buffer_desc d;
    gf_buffer *m = NULL;
    gf_stream *s;
    unsigned char h[256] = { 0 }, back[256] = { 0 };
    gf_result r;
    gf_stream_stats st = {0};

    memset(&d, 0, sizeof d);   /* every field this test does not name at its default */
    d.size = sizeof h;
    d.managed = 1;
    r = gf_buffer_create_desc(C.dev, &d, &m);
    if (!C.info.managed_memory) {
        CHECK(r == GF_ERROR_NOT_SUPPORTED, "managed buffer refused where info.managed_memory is 0");
        if (r == GF_OK) gf_buffer_destroy(m);
        return;
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return;
    s = mk_stream("managed");
    memset(h, 0x71, sizeof h);
    memset(back, 0, sizeof back);
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, m, 0, h, sizeof h), GF_OK);
    r = gf_prefetch_async(s, m, 1);
    if (C.backend == GF_BACKEND_STUB || C.backend == GF_BACKEND_CUDA)
        CHECK_EQ_RESULT(r, GF_OK);
    else
        CHECK(r == GF_OK || r == GF_ERROR_NOT_SUPPORTED, "prefetch to device: done or not supported");
    if (r == GF_OK) CHECK_EQ_RESULT(gf_prefetch_async(s, m, 0), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, back, m, 0, sizeof back), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(memcmp(h, back, sizeof h) == 0, "managed buffer round trip around prefetches");
    CHECK(gf_stream_stats(s, &st) == GF_OK && st.ops == (r == GF_OK ? 4u : 2u),
          "stream stats count prefetches as operations");
    gf_stream_destroy(s);
    gf_buffer_destroy(m);
}

static void test_host_memory(void)
{
    size_t n = (size_t)1 << 20, i;
    void *h1 = NULL, *h2 = NULL;
    gf_stream *s;
    gf_buffer *b;

    CHECK_EQ_RESULT(gf_host_alloc(C.dev, n, &h1), GF_OK);
    CHECK_EQ_RESULT(gf_host_alloc(C.dev, n, &h2), GF_OK);
    if (!CHECK(h1 && h2, "gf_host_alloc gives memory")) return;
    for (i = 0; i < n; i++) ((unsigned char *)h1)[i] = (unsigned char)(i * 13);
    memset(h2, 0, n);
    s = mk_stream("pinned");
    b = mk_buffer(n);
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, b, 0, h1, n), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, h2, b, 0, n), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(memcmp(h1, h2, n) == 0, "pinned 1 MiB async round trip");
    gf_host_free(C.dev, h1);
    gf_host_free(C.dev, h2);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

static void test_async_copies(void)
{
    enum { N = 65536 };
    static unsigned char src[N], dst[N], model[N];
    gf_stream *s = mk_stream("copies");
    gf_buffer *a = mk_buffer(N), *b = mk_buffer(N);
    gf_stream_stats st = {0};
    size_t i;

    for (i = 0; i < N; i++) src[i] = (unsigned char)(i * 31 + 1);
    memset(dst, 0, N);
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, a, 0, src, N), GF_OK);                  /* H2D */
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x00, N), GF_OK);
    CHECK_EQ_RESULT(gf_copy_buffer_async(s, b, 0, a, 0, N / 2), GF_OK);                /* D2D */
    CHECK_EQ_RESULT(gf_copy_buffer_async(s, b, 40000, a, 1000, 3000), GF_OK);          /* D2D offsets */
    CHECK_EQ_RESULT(gf_fill_async(s, b, 50001, 0xab, 777), GF_OK);                     /* fill, odd */
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, dst, b, 0, N), GF_OK);                    /* D2H */
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    memset(model, 0, N);
    memcpy(model, src, N / 2);
    memcpy(model + 40000, src + 1000, 3000);
    memset(model + 50001, 0xab, 777);
    CHECK(memcmp(dst, model, N) == 0, "H2D, D2D (with offsets), fill and D2H in stream order");

    CHECK_EQ_RESULT(gf_stream_stats(s, &st), GF_OK);
    CHECK(st.ops == 6, "stats.ops counts copies and fills (6)");
    CHECK(st.copies == 4, "stats.copies (4)");
    CHECK(st.bytes_copied == (uint64_t)N + N / 2 + 3000 + N, "stats.bytes_copied");
    CHECK(st.launches == 0 && st.callbacks == 0, "stats: no launches or callbacks");
    CHECK(st.pending == 0, "stats.pending is 0 after synchronize");

    /* a partial device-to-host read at an offset */
    memset(dst, 0, N);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, dst + 5, b, 50000, 10), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(all_bytes(dst, 5, 0) && memcmp(dst + 5, model + 50000, 10) == 0 && all_bytes(dst + 15, 20, 0),
          "partial D2H at an offset writes exactly its bytes");
    gf_buffer_destroy(a);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

/* ---- streams and callbacks ---------------------------------------------------------------------- */
static void test_streams(void)
{
    gf_stream_desc d;
    gf_stream *a = NULL, *b = NULL, *c = NULL;
    char long_label[100];
    const char *l;
    th_flag f;
    unsigned char h[128] = { 0 };
    gf_buffer *buf = mk_buffer(sizeof h);

    d.label = "alpha";
    d.priority = GF_PRIORITY_HIGH;
    CHECK_EQ_RESULT(gf_stream_create(C.dev, &d, &a), GF_OK);
    CHECK(a && strcmp(gf_stream_label(a), "alpha") == 0, "gf_stream_label is the desc's label");
    CHECK(gf_stream_device(a) == C.dev, "gf_stream_device");
    CHECK_EQ_RESULT(gf_stream_create(C.dev, NULL, &b), GF_OK);
    CHECK(b && gf_stream_label(b) != NULL, "a NULL desc gives a stream with a (default) label");
    d.label = NULL;
    d.priority = GF_PRIORITY_LOW;
    CHECK_EQ_RESULT(gf_stream_create(C.dev, &d, &c), GF_OK);
    CHECK(gf_stream_id(a) != gf_stream_id(b) && gf_stream_id(b) != gf_stream_id(c) &&
          gf_stream_id(a) != gf_stream_id(c), "stream ids are distinct");
    CHECK_EQ_RESULT(gf_stream_query(a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
    stream_usable(c, "a low-priority stream works");
    gf_stream_destroy(b);
    gf_stream_destroy(c);

    memset(long_label, 'L', sizeof long_label - 1);
    long_label[sizeof long_label - 1] = 0;
    d.label = long_label;
    d.priority = GF_PRIORITY_NORMAL;
    b = NULL;
    CHECK_EQ_RESULT(gf_stream_create(C.dev, &d, &b), GF_OK);
    l = b ? gf_stream_label(b) : NULL;
    CHECK(l && strlen(l) > 0 && strlen(l) < sizeof long_label && strncmp(l, long_label, strlen(l)) == 0,
          "a long label is kept as a prefix");
    gf_stream_destroy(b);

    /* destroying a stream with pending work drains it first */
    th_flag_init(&f);
    memset(h, 0, sizeof h);
    CHECK_EQ_RESULT(gf_copy_to_device(buf, 0, "drained!drained!", 16), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(a, sleep_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(a, h, buf, 0, 16), GF_OK);
    gf_stream_destroy(a);
    CHECK(th_flag_get(&f) == 1 && memcmp(h, "drained!drained!", 16) == 0,
          "gf_stream_destroy drains pending work (callback ran, copy landed)");
    th_flag_destroy(&f);
    gf_buffer_destroy(buf);
}

typedef struct { const uint32_t *h; uint32_t n, expect; th_flag seen; } check_after;
static void check_after_cb(void *user, gf_result status)
{
    check_after *c = (check_after *)user;
    if (status == GF_OK && all_u32(c->h, c->n, c->expect)) th_flag_add(&c->seen, 1);
}

static void test_callbacks(void)
{
    enum { N = 64 };
    static th_log log;
    static log_item items[N];
    gf_stream *s = mk_stream("callbacks");
    gf_buffer *b = mk_buffer(1024 * sizeof(uint32_t));
    static uint32_t h[1024];
    check_after ca;
    th_flag f;
    gf_stream_stats st = {0};
    int i, in_order = 1;

    th_log_init(&log);
    for (i = 0; i < N; i++) {
        items[i].log = &log;
        items[i].value = i;
        if (gf_stream_add_callback(s, log_cb, &items[i]) != GF_OK) in_order = 0;
    }
    CHECK(in_order, "64 callbacks enqueued");
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(th_log_count(&log) == N, "every callback ran once");
    for (i = 0; i < N; i++)
        if (th_log_find(&log, i, 0) != i) in_order = 0;
    CHECK(in_order, "callbacks ran in enqueue order");

    /* a callback runs after all prior work: it sees the data of a D2H copy before it */
    for (i = 0; i < 1024; i++) h[i] = 0;
    ca.h = h; ca.n = 1024; ca.expect = 0x01010101u;
    th_flag_init(&ca.seen);
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x01, 1024 * sizeof(uint32_t)), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, h, b, 0, 1024 * sizeof(uint32_t)), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, check_after_cb, &ca), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(th_flag_get(&ca.seen) == 1, "a callback sees the results of the work before it, status GF_OK");

    th_flag_init(&f);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_flag_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(th_flag_get(&f) == 1 && f.status == GF_OK, "callback status is GF_OK on a healthy stream");
    CHECK(gf_stream_stats(s, &st) == GF_OK && st.callbacks == N + 2 && st.ops == N + 4 && st.pending == 0,
          "stats count callbacks (66) and ops (68)");
    th_flag_destroy(&f);
    th_flag_destroy(&ca.seen);
    th_log_destroy(&log);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

/* The stub must be faithful: async calls return before their work runs. A gate (a callback
   that blocks until opened) holds stream s1; everything behind it must wait, visibly. */
static void test_async_faithful(void)
{
    enum { N = 256 };
    static unsigned char hb[N];
    static th_log log;
    log_item after_gate = { &log, 1 }, on_s2 = { &log, 2 }, on_s3 = { &log, 3 };
    gf_stream *s1 = mk_stream("gated"), *s2 = mk_stream("waiter"), *s3 = mk_stream("other");
    gf_buffer *b = mk_buffer(N);
    gf_event *ev = NULL;
    gf_stream_stats st = {0};
    th_gate g;

    th_gate_init(&g);
    th_log_init(&log);
    memset(hb, 0xee, N);
    CHECK_EQ_RESULT(gf_fill_async(s1, b, 0, 0x5a, N), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev), GF_OK);

    CHECK_EQ_RESULT(gf_stream_add_callback(s1, th_gate_cb, &g), GF_OK);   /* returned: not run inline */
    CHECK_EQ_RESULT(gf_copy_to_host_async(s1, hb, b, 0, N), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s1, log_cb, &after_gate), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s1), GF_OK);
    CHECK(all_bytes(hb, N, 0xee), "an async D2H behind a blocked callback has not run yet");
    CHECK_EQ_RESULT(gf_stream_query(s1), GF_NOT_READY);
    CHECK_EQ_RESULT(gf_event_query(ev), GF_NOT_READY);
    CHECK(gf_stream_stats(s1, &st) == GF_OK && st.pending > 0, "stats.pending > 0 while blocked");

    /* s2 waits on the event, s3 on the whole of s1 so far */
    CHECK_EQ_RESULT(gf_stream_wait_event(s2, ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s2, log_cb, &on_s2), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_stream(s3, s1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s3, log_cb, &on_s3), GF_OK);
    th_sleep_ms(30);
    CHECK(th_log_count(&log) == 0, "nothing behind the gate ran, on s1 or on the streams waiting for it");
    CHECK_EQ_RESULT(gf_stream_query(s2), GF_NOT_READY);
    CHECK_EQ_RESULT(gf_stream_query(s3), GF_NOT_READY);

    th_gate_open(&g);
    CHECK_EQ_RESULT(gf_stream_synchronize(s2), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s3), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
    CHECK(!TH_GATE_TIMED_OUT(&g), "the gate was opened by the test, not by its timeout");
    CHECK(all_bytes(hb, N, 0x5a), "the D2H ran after the gate opened");
    CHECK(th_log_count(&log) == 3 && th_log_find(&log, 1, 0) == 0,
          "s1's own work ran first; the waiting streams' work after it");
    CHECK_EQ_RESULT(gf_event_query(ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_query(s1), GF_OK);
    CHECK(gf_stream_stats(s1, &st) == GF_OK && st.pending == 0, "stats.pending back to 0");

    gf_event_destroy(ev);
    gf_buffer_destroy(b);
    gf_stream_destroy(s1);
    gf_stream_destroy(s2);
    gf_stream_destroy(s3);
    th_log_destroy(&log);
    th_gate_destroy(&g);
}

/* A wait sees the event's record at the time of the wait call (CUDA's meaning): recording the
   event again elsewhere afterwards, even where it completes at once, does not release it. */
static void test_event_rerecord(void)
{
    static th_log log;
    log_item on_waiter = { &log, 1 };
    gf_stream *s1 = mk_stream("rerecord-gated"), *s2 = mk_stream("rerecord-waiter"), *s3 = mk_stream("rerecord-idle");
    gf_event *ev = NULL;
    th_gate g;

    th_gate_init(&g);
    th_log_init(&log);
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s1, th_gate_cb, &g), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(s2, ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s2, log_cb, &on_waiter), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s3), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s3), GF_OK);
    CHECK_EQ_RESULT(gf_event_query(ev), GF_OK);                 /* its latest record is complete */
    th_sleep_ms(30);
    CHECK(th_log_count(&log) == 0 && gf_stream_query(s2) == GF_NOT_READY,
          "an earlier wait still waits for the record it saw, after the event is re-recorded elsewhere");
    th_gate_open(&g);
    CHECK_EQ_RESULT(gf_stream_synchronize(s2), GF_OK);
    CHECK(th_log_count(&log) == 1, "the waiter ran once its record completed");
    CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
    gf_event_destroy(ev);
    gf_stream_destroy(s1);
    gf_stream_destroy(s2);
    gf_stream_destroy(s3);
    th_log_destroy(&log);
    th_gate_destroy(&g);
}

/* ---- events ----------------------------------------------------------------------------------- */
static void test_events(void)
{
    gf_stream *s = mk_stream("events");
    gf_event *plain = NULL, *t0 = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL;
    float ms = -1.0f;
    th_flag f;
    th_gate g;

    th_flag_init(&f);
    th_gate_init(&g);
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &plain), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(C.dev, GF_EVENT_TIMING, &t0), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(C.dev, GF_EVENT_TIMING, &t1), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(C.dev, GF_EVENT_TIMING, &t2), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(C.dev, GF_EVENT_TIMING, &t3), GF_OK);

    CHECK_EQ_RESULT(gf_event_query(plain), GF_OK);          /* never recorded: CUDA's meaning */
    CHECK_EQ_RESULT(gf_event_synchronize(plain), GF_OK);

    CHECK_EQ_RESULT(gf_event_record(t0, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, sleep_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, sleep_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(t1, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(plain, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_synchronize(t1), GF_OK);
    CHECK(th_flag_get(&f) == 2, "gf_event_synchronize waited for the work before the event");
    CHECK_EQ_RESULT(gf_event_query(t1), GF_OK);
    CHECK_EQ_RESULT(gf_event_synchronize(plain), GF_OK);
    CHECK_EQ_RESULT(gf_event_elapsed_ms(t0, t1, &ms), GF_OK);
    CHECK(ms >= 15.0f && ms < 600000.0f, "elapsed over two 20 ms callbacks is at least 15 ms");

    CHECK_FAIL(gf_event_elapsed_ms(plain, t1, &ms), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_event_elapsed_ms(t0, plain, &ms), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_event_elapsed_ms(t0, t2, &ms), GF_ERROR_INVALID_STATE);
    CHECK_FAIL(gf_event_elapsed_ms(t2, t1, &ms), GF_ERROR_INVALID_STATE);
    CHECK_FAIL(gf_event_elapsed_ms(t0, t1, NULL), GF_ERROR_INVALID_ARGUMENT);

    /* recorded but not complete: GF_NOT_READY */
    CHECK_EQ_RESULT(gf_event_record(t2, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &g), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(t3, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_elapsed_ms(t2, t3, &ms), GF_NOT_READY);
    th_gate_open(&g);
    CHECK_EQ_RESULT(gf_event_synchronize(t3), GF_OK);
    CHECK_EQ_RESULT(gf_event_elapsed_ms(t2, t3, &ms), GF_OK);
    CHECK(ms >= 0.0f, "elapsed after completion is >= 0");

    gf_event_destroy(plain);
    gf_event_destroy(t0);
    gf_event_destroy(t1);
    gf_event_destroy(t2);
    gf_event_destroy(t3);
    gf_stream_destroy(s);
    th_flag_destroy(&f);
    th_gate_destroy(&g);
}

/* ---- kernels ---------------------------------------------------------------------------------- */
static void load_kernels(void)
{
    gf_module_desc lacking = tk_module, broken = tk_module;
    gf_module *m = NULL;
    gf_kernel *k = NULL;
    gf_result r = gf_module_load(C.dev, &tk_module, &C.mod);

    if (r == GF_ERROR_NOT_SUPPORTED && C.backend == GF_BACKEND_HIP) {
        printf("notice: no HIP code object of the test kernels is built here (%s)\n", gf_last_error());
        SKIP("kernel tests: no HIP code object");
        C.mod = NULL;
        return;
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) { C.mod = NULL; return; }
    CHECK_EQ_RESULT(gf_kernel_get(C.mod, "fill_u32", &C.k_fill), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(C.mod, "add_u32", &C.k_add), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(C.mod, "empty", &C.k_empty), GF_OK);
    CHECK_FAIL(gf_kernel_get(C.mod, "no_such_kernel", &k), GF_ERROR_NOT_FOUND);
    CHECK(gf_kernel_get(C.mod, "add_u32", &k) == GF_OK && k != NULL, "a kernel can be got twice");
    if (!C.k_fill || !C.k_add || !C.k_empty) { C.mod = NULL; return; }

    /* a module without this backend's form of the kernels */
    switch (C.backend) {
    case GF_BACKEND_STUB: lacking.stub_kernels = NULL; lacking.stub_kernel_count = 0; break;
    case GF_BACKEND_CUDA: lacking.ptx = NULL; lacking.cubin = NULL; lacking.cubin_size = 0; break;
    case GF_BACKEND_OPENCL: lacking.opencl_source = NULL; lacking.spirv = NULL; lacking.spirv_size = 0; break;
    default: lacking.hip_code = NULL; lacking.hip_code_size = 0; break;
    }
    CHECK_FAIL(gf_module_load(C.dev, &lacking, &m), GF_ERROR_NOT_SUPPORTED);

    /* a module that does not compile: GF_ERROR_BUILD with the log in the message */
    if (C.backend == GF_BACKEND_OPENCL || C.backend == GF_BACKEND_CUDA) {
        broken.opencl_source = "__kernel void broken(__global uint *p) { p[0] = undeclared_name; }\n";
        broken.ptx = ".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry broken( { ret; }\n";
        printf("notice: a module that does not compile follows; a compiler may print its errors\n");
        CHECK_FAIL(gf_module_load(C.dev, &broken, &m), GF_ERROR_BUILD);
        CHECK(C.backend != GF_BACKEND_OPENCL || strstr(gf_last_error(), "undeclared_name") != NULL,
              "the OpenCL build log (naming the bad identifier) is in gf_last_error");
    }
}

static void test_kernels(void)
{
    enum { N = 1000 };
    static uint32_t h[N];
    gf_stream *s, *s2;
    gf_buffer *b, *b2;
    gf_event *ev = NULL;
    gf_stream_stats st = {0};
    gf_arg none[1];
    uint32_t i;
    int ok = 1;

    if (!C.mod) { SKIP("kernel launches: no kernels for this backend"); return; }
    s = mk_stream("kernels");
    s2 = mk_stream("kernels-2");
    b = mk_buffer(N * sizeof(uint32_t));   /* exactly N: the grid overshoots, the kernel bounds it */
    b2 = mk_buffer(N * sizeof(uint32_t));
    CHECK_EQ_RESULT(launch_u32(s, C.k_fill, b, N, 7), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    buffer_is_u32(b, N, 7, "fill_u32 wrote 7 to all 1000 elements (16 blocks of 64)");
    CHECK_EQ_RESULT(launch_u32(s, C.k_add, b, N, 5), GF_OK);
    CHECK_EQ_RESULT(launch_u32(s, C.k_add, b, N, 5), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    buffer_is_u32(b, N, 17, "two add_u32 launches in stream order: 7 + 5 + 5");

    /* copies and kernels in one stream's order */
    for (i = 0; i < N; i++) h[i] = i;
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, b, 0, h, sizeof h), GF_OK);
    CHECK_EQ_RESULT(launch_u32(s, C.k_add, b, N, 1), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, h, b, 0, sizeof h), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    for (i = 0; i < N; i++)
        if (h[i] != i + 1) ok = 0;
    CHECK(ok, "H2D, add_u32, D2H on one stream: h[i] == i + 1");

    memset(none, 0, sizeof none);
    CHECK_EQ_RESULT(gf_launch(s, C.k_empty, dims_1d(1, 1), none, 0), GF_OK);
    CHECK_EQ_RESULT(gf_launch(s, C.k_empty, dims_1d(4096, 256), NULL, 0), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(gf_stream_stats(s, &st) == GF_OK && st.launches == 6, "stats.launches counts 6 launches");

    /* a kernel on another stream after an event: the data dependency holds */
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(launch_u32(s, C.k_fill, b2, N, 3), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(s2, ev), GF_OK);
    CHECK_EQ_RESULT(launch_u32(s2, C.k_add, b2, N, 1), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s2, h, b2, 0, sizeof h), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s2), GF_OK);
    CHECK(all_u32(h, N, 4), "fill on s1, event, add on s2: 3 + 1");

    CHECK_FAIL(gf_launch(s, C.k_empty, dims_1d(0, 1), NULL, 0), GF_ERROR_INVALID_ARGUMENT);
    if (C.backend == GF_BACKEND_STUB) {   /* its kernels are C: no memory sized at the launch reaches them (it was ignored) */
        gf_launch_dims shared = dims_1d(1, 1);
        shared.shared_bytes = 256;
        CHECK_FAIL(gf_launch(s, C.k_empty, shared, NULL, 0), GF_ERROR_NOT_SUPPORTED);
    }
    stream_usable(s, "the stream works after a refused launch");
    gf_event_destroy(ev);
    gf_buffer_destroy(b);
    gf_buffer_destroy(b2);
    gf_stream_destroy(s);
    gf_stream_destroy(s2);
}

/* ---- stream pools ----------------------------------------------------------------------------- */
static gf_stream_pool *mk_pool(int count, gf_pool_strategy strategy, const char *label, int measure)
{
    gf_stream_pool_desc d;
    gf_stream_pool *p = NULL;
    memset(&d, 0, sizeof d);
    d.count = count;
    d.strategy = strategy;
    d.label = label;
    d.measure_completion = measure;
    CHECK_EQ_RESULT(gf_stream_pool_create(C.dev, &d, &p), GF_OK);
    return p;
}

static gf_stream *pool_take(gf_stream_pool *p, gf_priority pr, gf_workload w)
{
    gf_acquire_hint h;
    gf_stream *s = NULL;
    h.priority = pr;
    h.workload = w;
    if (gf_stream_pool_acquire(p, &h, &s) != GF_OK) return NULL;
    return s;
}

/* The streams of 4 acquisitions with one hint, as a set (up to 4 distinct entries). */
static int pool_class(gf_stream_pool *p, gf_priority pr, gf_workload w, gf_stream **set)
{
    int i, j, n = 0, ok = 1;
    for (i = 0; i < 4; i++) {
        gf_stream *s = pool_take(p, pr, w);
        if (!s) { ok = 0; continue; }
        for (j = 0; j < n && set[j] != s; j++) {}
        if (j == n) set[n++] = s;
        if (gf_stream_pool_release(p, s) != GF_OK) ok = 0;
    }
    return ok ? n : -1;
}
static int disjoint(gf_stream **a, int na, gf_stream **b, int nb)
{
    int i, j;
    for (i = 0; i < na; i++)
        for (j = 0; j < nb; j++)
            if (a[i] == b[j]) return 0;
    return 1;
}

static void test_pool_round_robin(void)
{
    gf_stream_pool *p = mk_pool(4, GF_POOL_ROUND_ROBIN, "rr", 0);
    gf_stream *got[8], *plain = mk_stream("not-in-pool");
    gf_stream_pool_stats st = {0};
    int i, ok = 1;

    if (!p) return;
    for (i = 0; i < 8; i++) {
        got[i] = NULL;
        if (gf_stream_pool_acquire(p, NULL, &got[i]) != GF_OK || !got[i]) ok = 0;
        if (got[i] && gf_stream_pool_release(p, got[i]) != GF_OK) ok = 0;
    }
    CHECK(ok, "8 acquire/release pairs");
    for (i = 0; i < 4; i++)
        if (!ok || got[i] != got[i + 4] || got[i] == got[(i + 1) % 4] || got[i] == got[(i + 2) % 4]) ok = 0;
    CHECK(ok, "round robin: 4 distinct streams in turn, then the same again");
    CHECK(got[0] && starts_with(gf_stream_label(got[0]), "rr/"), "pool streams are labelled <label>/<i>");
    CHECK_EQ_RESULT(gf_stream_pool_stats(p, &st), GF_OK);
    CHECK(st.count == 4 && st.acquisitions[0] == 2 && st.acquisitions[1] == 2 && st.acquisitions[2] == 2 &&
          st.acquisitions[3] == 2, "stats: 2 acquisitions on each of 4 streams");

    /* misuse leaves the pool as it was */
    CHECK_FAIL(gf_stream_pool_release(p, got[0]), GF_ERROR_INVALID_STATE);     /* not acquired now */
    CHECK_FAIL(gf_stream_pool_release(p, plain), GF_ERROR_INVALID_ARGUMENT);   /* not from this pool */
    if (got[0]) {
        CHECK_SETS_ERROR(gf_stream_destroy(got[0]));                             /* a pool member */
        stream_usable(got[0], "a pool stream survives a refused gf_stream_destroy");
    }
    CHECK(gf_stream_pool_stats(p, &st) == GF_OK && st.acquisitions[0] == 2, "refused calls changed no stats");
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(p), GF_OK);
    gf_stream_pool_destroy(p);
    gf_stream_destroy(plain);
}

static void test_pool_least_pending(void)
{
    gf_stream_pool *p = mk_pool(3, GF_POOL_LEAST_PENDING, "lp", 0);
    gf_stream *a, *b, *c, *d;
    th_gate ga, gb;

    if (!p) return;
    th_gate_init(&ga);
    th_gate_init(&gb);
    a = pool_take(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_ANY);
    CHECK(a != NULL, "least pending: acquire");
    if (a) {
        gf_stream_add_callback(a, th_gate_cb, &ga);
        gf_fill_async(a, C.scratch, 0, 1, 16);
        gf_stream_pool_release(p, a);
    }
    b = pool_take(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_ANY);
    CHECK(b && b != a, "least pending: an idle stream beats the busy one");
    if (b) {
        gf_stream_add_callback(b, th_gate_cb, &gb);
        gf_stream_pool_release(p, b);
    }
    c = pool_take(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_ANY);
    CHECK(c && c != a && c != b, "least pending: the only idle stream of three");
    if (c) gf_stream_pool_release(p, c);
    d = pool_take(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_ANY);
    CHECK(d == c, "least pending: the idle stream again, not a busy one");
    if (d) gf_stream_pool_release(p, d);
    th_gate_open(&ga);
    th_gate_open(&gb);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(p), GF_OK);
    CHECK((!a || gf_stream_query(a) == GF_OK) && (!b || gf_stream_query(b) == GF_OK),
          "pool synchronize finished every stream");
    gf_stream_pool_destroy(p);
    th_gate_destroy(&ga);
    th_gate_destroy(&gb);
}

static void test_pool_priority_and_workload(void)
{
    gf_stream_pool *p = mk_pool(3, GF_POOL_PRIORITY, "prio", 0);
    gf_stream *hi[4], *lo[4], *no[4], *cm[4], *mem[4], *co[4], *s;
    int nh, nl, nn, nc, nm, nk;

    if (p) {
        nh = pool_class(p, GF_PRIORITY_HIGH, GF_WORKLOAD_ANY, hi);
        nl = pool_class(p, GF_PRIORITY_LOW, GF_WORKLOAD_ANY, lo);
        nn = pool_class(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_ANY, no);
        CHECK(nh > 0 && nl > 0 && nn > 0, "priority pool: acquisitions at each priority");
        CHECK(nh > 0 && nl > 0 && nn > 0 && disjoint(hi, nh, lo, nl) && disjoint(hi, nh, no, nn) &&
              disjoint(lo, nl, no, nn), "priority pool: HIGH, NORMAL and LOW get separate streams");
        s = NULL;
        CHECK(gf_stream_pool_acquire(p, NULL, &s) == GF_OK && s && gf_stream_pool_release(p, s) == GF_OK,
              "priority pool: acquire without a hint");
        gf_stream_pool_destroy(p);
    }
    p = mk_pool(4, GF_POOL_WORKLOAD, "work", 0);
    if (p) {
        nc = pool_class(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_COMPUTE, cm);
        nm = pool_class(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_MEMORY, mem);
        nk = pool_class(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_COORDINATION, co);
        CHECK(nc > 0 && nm > 0 && nk > 0, "workload pool: acquisitions per workload");
        CHECK(nc > 0 && nm > 0 && nk > 0 && disjoint(cm, nc, mem, nm) && disjoint(cm, nc, co, nk) &&
              disjoint(mem, nm, co, nk), "workload pool: compute, memory, coordination on separate streams");
        s = pool_take(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_MIXED);
        CHECK(s && gf_stream_pool_release(p, s) == GF_OK, "workload pool: MIXED is served");
        s = pool_take(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_ANY);
        CHECK(s && gf_stream_pool_release(p, s) == GF_OK, "workload pool: ANY is served");
        gf_stream_pool_destroy(p);
    }
}

static void test_pool_acquire_ready(void)
{
    gf_stream_pool *p = mk_pool(2, GF_POOL_ROUND_ROBIN, "ready", 0);
    gf_stream *s0 = NULL, *s1 = NULL, *r = NULL;
    th_gate g0, g1;
    double t0;

    if (!p) return;
    th_gate_init(&g0);
    th_gate_init(&g1);
    CHECK_EQ_RESULT(gf_stream_pool_acquire(p, NULL, &s0), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_acquire(p, NULL, &s1), GF_OK);
    CHECK(s0 && s1 && s0 != s1, "two streams of a pool of two");
    if (!s0 || !s1 || s0 == s1) return;
    gf_stream_add_callback(s0, th_gate_cb, &g0);
    gf_stream_add_callback(s1, th_gate_cb, &g1);
    gf_stream_pool_release(p, s0);
    gf_stream_pool_release(p, s1);
    t0 = th_now_ms();
    CHECK_EQ_RESULT(gf_stream_pool_acquire_ready(p, 50, &r), GF_TIMEOUT);
    CHECK(th_now_ms() - t0 >= 40.0, "acquire_ready waited (about) its timeout before GF_TIMEOUT");
    th_gate_open(&g0);
    r = NULL;
    CHECK_EQ_RESULT(gf_stream_pool_acquire_ready(p, TH_WAIT_MS, &r), GF_OK);
    CHECK(r == s0, "acquire_ready returns the stream that became idle");
    if (r) gf_stream_pool_release(p, r);
    th_gate_open(&g1);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(p), GF_OK);
    gf_stream_pool_destroy(p);
    th_gate_destroy(&g0);
    th_gate_destroy(&g1);
}

static void test_pool_completion_stats(void)
{
    gf_stream_pool *p = mk_pool(2, GF_POOL_ROUND_ROBIN, "meas", 1);
    gf_stream_pool_stats st = {0};
    gf_stream *s;
    th_flag f;
    double end;

    if (!p) return;
    th_flag_init(&f);
    s = pool_take(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_COMPUTE);
    if (s) {
        gf_stream_add_callback(s, sleep_cb, &f);
        CHECK_EQ_RESULT(gf_stream_pool_release(p, s), GF_OK);
    }
    s = pool_take(p, GF_PRIORITY_NORMAL, GF_WORKLOAD_MEMORY);
    if (s) {
        gf_fill_async(s, C.scratch, 0, 2, 64);
        CHECK_EQ_RESULT(gf_stream_pool_release(p, s), GF_OK);
    }
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(p), GF_OK);
    /* completion is observed asynchronously: give it a (bounded) moment */
    end = th_now_ms() + TH_WAIT_MS;
    memset(&st, 0, sizeof st);
    while (gf_stream_pool_stats(p, &st) == GF_OK &&
           (st.completions[GF_WORKLOAD_COMPUTE] < 1 || st.completions[GF_WORKLOAD_MEMORY] < 1) &&
           th_now_ms() < end)
        th_sleep_ms(2);
    CHECK(st.completions[GF_WORKLOAD_COMPUTE] == 1 && st.completions[GF_WORKLOAD_MEMORY] == 1,
          "completion measured once per workload");
    CHECK(st.avg_completion_ms[GF_WORKLOAD_COMPUTE] >= 15.0, "compute completion covers its 20 ms of work");
    CHECK(st.avg_completion_ms[GF_WORKLOAD_MEMORY] >= 0.0, "memory completion time is >= 0");
    CHECK(st.acquisitions[0] + st.acquisitions[1] == 2, "2 acquisitions counted");
    gf_stream_pool_destroy(p);
    th_flag_destroy(&f);
}

/* A measuring pool destroyed from a gf_event_on_complete callback: on the waiter thread, which
   would run the pool's completion callbacks itself. The destroy settles them (cancels their
   waits, gives their events back) and returns; under ASan a completion leaked or used after
   the destroy is a failure too. */
typedef struct pool_destroyer { gf_stream_pool *pool; th_flag done; } pool_destroyer;
static void destroy_pool_cb(void *user, gf_result status)
{
    pool_destroyer *d = (pool_destroyer *)user;
    (void)status;
    gf_stream_pool_destroy(d->pool);
    th_flag_add(&d->done, 1);
}

static void test_pool_destroy_on_waiter_thread(void)
{
    pool_destroyer d;
    gf_stream *t = NULL, *s;
    gf_event *e = NULL;
    th_gate g;
    int i;

    if (!(d.pool = mk_pool(2, GF_POOL_ROUND_ROBIN, "dropped", 1))) return;
    th_flag_init(&d.done);
    th_gate_init(&g);
    if (gf_stream_create(C.dev, NULL, &t) != GF_OK || gf_event_create(C.dev, 0, &e) != GF_OK) {
        CHECK(0, "a stream and an event for the waiter-thread destroy");
        return;
    }
    gf_stream_add_callback(t, th_gate_cb, &g);
    gf_event_record(e, t);
    CHECK_EQ_RESULT(gf_event_on_complete(e, destroy_pool_cb, &d, NULL), GF_OK);
    for (i = 0; i < 2; i++)   /* two leases whose completions wait behind e */
        if ((s = pool_take(d.pool, GF_PRIORITY_NORMAL, GF_WORKLOAD_COMPUTE)) != NULL) {
            gf_stream_wait_event(s, e);
            CHECK_EQ_RESULT(gf_stream_pool_release(d.pool, s), GF_OK);
        }
    th_gate_open(&g);
    CHECK(th_flag_wait(&d.done, 1, TH_WAIT_MS),
          "a measuring pool destroyed on the waiter thread returns (it settles its own pending completions)");
    CHECK_EQ_RESULT(gf_stream_synchronize(t), GF_OK);
    gf_event_destroy(e);
    gf_stream_destroy(t);
    th_gate_destroy(&g);
    th_flag_destroy(&d.done);
}

/* ---- stream sets ------------------------------------------------------------------------------ */
typedef struct { gf_stream_set *set; gf_stream *got; gf_result r; th_flag done; } next_call;
static void *next_thread(void *arg)
{
    next_call *c = (next_call *)arg;
    c->r = gf_stream_set_next(c->set, 3, &c->got);
    th_flag_add(&c->done, 1);
    return NULL;
}

static void test_stream_sets(void)
{
    enum { CHUNKS = 12, CN = 256 };
    static uint32_t src[CHUNKS * CN], dst[CHUNKS * CN];
    gf_stream_set *set = NULL;
    gf_stream *s = NULL, *g0, *g1, *g2;
    gf_buffer *slot[3], *out[3];
    next_call nc;
    pthread_t t;
    th_gate gate;
    uint32_t i;
    int ok = 1;

    CHECK_EQ_RESULT(gf_stream_set_create(C.dev, 3, "pipe", &set), GF_OK);
    if (!set) return;
    g0 = gf_stream_set_get(set, 0);
    g1 = gf_stream_set_get(set, 1);
    g2 = gf_stream_set_get(set, 2);
    CHECK(g0 && g1 && g2 && g0 != g1 && g1 != g2 && g0 != g2, "a set of depth 3 has 3 streams");
    CHECK(gf_stream_set_get(set, 3) == g0 && gf_stream_set_get(set, 7) == g1, "get(i) is stream i % depth");
    CHECK(starts_with(gf_stream_label(g0), "pipe"), "set streams carry the set's label");
    for (i = 0; i < 6; i++)
        if (gf_stream_set_next(set, i, &s) != GF_OK || s != gf_stream_set_get(set, i)) ok = 0;
    CHECK(ok, "next(i) gives stream i % depth");

    /* a triple-buffered pipeline: upload, work, download, each chunk on next(i) */
    for (i = 0; i < 3; i++) {
        slot[i] = mk_buffer(CN * sizeof(uint32_t));
        out[i] = mk_buffer(CN * sizeof(uint32_t));
    }
    for (i = 0; i < CHUNKS * CN; i++) { src[i] = i * 3u; dst[i] = 0; }
    ok = 1;
    for (i = 0; i < CHUNKS; i++) {
        gf_buffer *in = slot[i % 3], *o = out[i % 3];
        if (gf_stream_set_next(set, i, &s) != GF_OK) { ok = 0; break; }
        if (gf_copy_to_device_async(s, in, 0, src + i * CN, CN * sizeof(uint32_t)) != GF_OK) ok = 0;
        if (C.mod) {
            if (launch_u32(s, C.k_add, in, CN, 1) != GF_OK) ok = 0;
        }
        if (gf_copy_buffer_async(s, o, 0, in, 0, CN * sizeof(uint32_t)) != GF_OK) ok = 0;
        if (gf_copy_to_host_async(s, dst + i * CN, o, 0, CN * sizeof(uint32_t)) != GF_OK) ok = 0;
    }
    CHECK(ok, "pipeline enqueued");
    CHECK_EQ_RESULT(gf_stream_set_synchronize(set), GF_OK);
    for (i = 0; i < CHUNKS * CN; i++)
        if (dst[i] != src[i] + (C.mod ? 1u : 0u)) { ok = 0; break; }
    CHECK(ok, "12 chunks through a 3-deep set: every element right");

    /* next(3) waits until slot 0's earlier work is done */
    th_gate_init(&gate);
    th_flag_init(&nc.done);
    nc.set = set; nc.got = NULL; nc.r = GF_ERROR_DRIVER;
    CHECK_EQ_RESULT(gf_stream_set_next(set, 0, &s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_next(set, 1, &s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_next(set, 2, &s), GF_OK);
    if (CHECK(pthread_create(&t, NULL, next_thread, &nc) == 0, "thread for next(3)")) {
        th_sleep_ms(50);
        CHECK(th_flag_get(&nc.done) == 0, "next(3) waits while slot 0's previous work is blocked");
        th_gate_open(&gate);
        pthread_join(t, NULL);
        CHECK(nc.r == GF_OK && nc.got == g0, "next(3) returns slot 0's stream once it is free");
        CHECK(!TH_GATE_TIMED_OUT(&gate), "next(3) was released by the gate, not its timeout");
    } else {
        th_gate_open(&gate);
    }
    CHECK_SETS_ERROR(gf_stream_destroy(g1));
    stream_usable(g1, "a set stream survives a refused gf_stream_destroy");
    CHECK_EQ_RESULT(gf_stream_set_synchronize(set), GF_OK);
    for (i = 0; i < 3; i++) {
        gf_buffer_destroy(slot[i]);
        gf_buffer_destroy(out[i]);
    }
    gf_stream_set_destroy(set);
    th_flag_destroy(&nc.done);
    th_gate_destroy(&gate);
}

/* ---- event pools -------------------------------------------------------------------------------- */
static void test_event_pools(void)
{
    gf_event_pool_desc d;
    gf_event_pool *p = NULL, *q = NULL;
    gf_event *e[3] = { 0, 0, 0 }, *t[2] = { 0, 0 }, *r = NULL, *mine = NULL, *other = NULL;
    gf_event_pool_stats st = {0};
    gf_stream *s = mk_stream("evpool");
    th_flag f;
    float ms = 0.0f;
    int i, created, ok = 1;

    th_flag_init(&f);
    d.capacity = 2;
    d.timing_capacity = 1;
    CHECK_EQ_RESULT(gf_event_pool_create(C.dev, &d, &p), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_create(C.dev, NULL, &q), GF_OK);
    if (!p || !q) return;
    CHECK(gf_event_pool_stats(p, &st) == GF_OK && st.available == 3 && st.in_use == 0 && st.created == 3,
          "a new pool holds capacity + timing_capacity events");
    for (i = 0; i < 3; i++)
        if (gf_event_pool_acquire(p, 0, &e[i]) != GF_OK || !e[i]) ok = 0;
    CHECK(ok && e[0] != e[1] && e[1] != e[2] && e[0] != e[2], "3 plain events from a capacity of 2 (growth)");
    for (i = 0; i < 2; i++)
        if (gf_event_pool_acquire(p, GF_EVENT_TIMING, &t[i]) != GF_OK || !t[i]) ok = 0;
    CHECK(ok && t[0] != t[1], "2 timing events from a timing capacity of 1 (growth)");
    CHECK(gf_event_pool_stats(p, &st) == GF_OK && st.in_use == 5 && st.created == 5 && st.available == 0,
          "stats: 5 in use, 5 created");

    /* pool events work as events */
    if (ok) {
        CHECK_EQ_RESULT(gf_event_record(t[0], s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_add_callback(s, sleep_cb, &f), GF_OK);
        CHECK_EQ_RESULT(gf_event_record(t[1], s), GF_OK);
        CHECK_EQ_RESULT(gf_event_record(e[0], s), GF_OK);
        CHECK_EQ_RESULT(gf_event_synchronize(e[0]), GF_OK);
        CHECK(gf_event_elapsed_ms(t[0], t[1], &ms) == GF_OK && ms >= 10.0f, "pooled timing events time work");
        CHECK_FAIL(gf_event_elapsed_ms(e[0], e[1], &ms), GF_ERROR_INVALID_ARGUMENT);
    }
    ok = 1;
    for (i = 0; i < 3; i++)
        if (gf_event_pool_release(p, e[i]) != GF_OK) ok = 0;
    for (i = 0; i < 2; i++)
        if (gf_event_pool_release(p, t[i]) != GF_OK) ok = 0;
    CHECK(ok, "all events released");
    CHECK(gf_event_pool_stats(p, &st) == GF_OK && st.in_use == 0 && st.available == 5 && st.created == 5,
          "stats after release: 5 available, none in use");
    created = st.created;

    /* reuse: released events come back, nothing new is created */
    CHECK(gf_event_pool_acquire(p, 0, &r) == GF_OK && (r == e[0] || r == e[1] || r == e[2]),
          "a plain acquire reuses a released plain event");
    CHECK_EQ_RESULT(gf_event_pool_release(p, r), GF_OK);
    CHECK(gf_event_pool_acquire(p, GF_EVENT_TIMING, &r) == GF_OK && (r == t[0] || r == t[1]),
          "a timing acquire reuses a released timing event");
    CHECK_EQ_RESULT(gf_event_pool_release(p, r), GF_OK);
    CHECK(gf_event_pool_stats(p, &st) == GF_OK && st.created == created, "reuse created nothing");

    /* refused releases change nothing */
    CHECK_FAIL(gf_event_pool_release(p, r), GF_ERROR_INVALID_STATE);           /* twice */
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &mine), GF_OK);
    CHECK_FAIL(gf_event_pool_release(p, mine), GF_ERROR_INVALID_ARGUMENT);      /* not pooled */
    CHECK_EQ_RESULT(gf_event_pool_acquire(q, 0, &other), GF_OK);
    CHECK_FAIL(gf_event_pool_release(p, other), GF_ERROR_INVALID_ARGUMENT);     /* another pool */
    CHECK(gf_event_pool_stats(p, &st) == GF_OK && st.in_use == 0 && st.available == created,
          "refused releases left the pool as it was");
    CHECK_EQ_RESULT(gf_event_pool_release(q, other), GF_OK);

    gf_event_destroy(mine);
    gf_event_pool_destroy(p);
    gf_event_pool_destroy(q);
    gf_stream_destroy(s);
    th_flag_destroy(&f);
}

static void *open_later(void *gate)   /* opens a gate 30 ms from now */
{
    th_sleep_ms(30);
    th_gate_open((th_gate *)gate);
    return NULL;
}

/* ---- barriers ----------------------------------------------------------------------------------- */
static void test_barriers(void)
{
    static th_log log;
    gf_stream *s[3];
    log_item pre0 = { &log, 0 }, pre1 = { &log, 1 }, post[3];
    th_gate g;
    th_flag f;
    double ms = -1.0;
    int i, ok;

    th_log_init(&log);
    th_gate_init(&g);
    th_flag_init(&f);
    s[0] = mk_stream("bar-0");
    s[1] = mk_stream("bar-1");
    s[2] = mk_stream("bar-2");
    CHECK_EQ_RESULT(gf_stream_add_callback(s[0], th_gate_cb, &g), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s[0], log_cb, &pre0), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s[1], sleep_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s[1], log_cb, &pre1), GF_OK);
    CHECK_EQ_RESULT(gf_barrier(s, 3), GF_OK);
    CHECK(TH_GATE_LEFT(&g) == 0, "gf_barrier returned without waiting on the host");
    for (i = 0; i < 3; i++) {
        post[i].log = &log;
        post[i].value = 100 + i;
        CHECK_EQ_RESULT(gf_stream_add_callback(s[i], log_cb, &post[i]), GF_OK);
    }
    th_sleep_ms(40);
    CHECK(th_log_find(&log, 100, 0) < 0 && th_log_find(&log, 101, 0) < 0 && th_log_find(&log, 102, 0) < 0,
          "no stream passed the barrier while s0's earlier work is blocked");
    th_gate_open(&g);
    CHECK_EQ_RESULT(gf_synchronize_all(s, 3, &ms), GF_OK);
    ok = th_log_count(&log) == 5;
    for (i = 0; i < 3 && ok; i++) {
        int at = th_log_find(&log, 100 + i, 0);
        ok = at > th_log_find(&log, 0, 0) && at > th_log_find(&log, 1, 0);
    }
    CHECK(ok, "every stream's post-barrier work ran after all pre-barrier work");
    CHECK(ms >= 0.0, "synchronize_all reports a time");

    /* synchronize_all blocks until all are done (a gate another thread opens later) and
       reports how long it took: more than nothing, no more than the host saw */
    {
        th_gate g2;
        pthread_t opener;
        double t0, outer;
        th_gate_init(&g2);
        for (i = 0; i < 3; i++) CHECK_EQ_RESULT(gf_stream_add_callback(s[i], sleep_cb, &f), GF_OK);
        CHECK_EQ_RESULT(gf_stream_add_callback(s[2], th_gate_cb, &g2), GF_OK);
        if (CHECK(pthread_create(&opener, NULL, open_later, &g2) == 0, "gate opener thread")) {
            ms = -1.0;
            t0 = th_now_ms();
            CHECK_EQ_RESULT(gf_synchronize_all(s, 3, &ms), GF_OK);
            outer = th_now_ms() - t0;
            CHECK(TH_GATE_LEFT(&g2) == 1 && th_flag_get(&f) == 4, "synchronize_all waited for every stream");
            CHECK(ms > 0.0 && ms <= outer + 1.0, "synchronize_all reports the time it blocked");
            pthread_join(opener, NULL);
        } else {
            th_gate_open(&g2);
        }
        CHECK(gf_stream_query(s[0]) == GF_OK && gf_stream_query(s[1]) == GF_OK && gf_stream_query(s[2]) == GF_OK,
              "all streams idle after synchronize_all");
        th_gate_destroy(&g2);
    }
    for (i = 0; i < 3; i++) gf_stream_destroy(s[i]);
    th_log_destroy(&log);
    th_gate_destroy(&g);
    th_flag_destroy(&f);
}

/* ---- async waiters ------------------------------------------------------------------------------ */
static void test_waiters(void)
{
    gf_stream *s = mk_stream("waiters");
    gf_event *ev = NULL, *ev2 = NULL, *ev3 = NULL;
    uint64_t id = 0, id2 = 0, id3 = 0;
    th_flag f, f2, f3;
    th_gate g, g2;

    th_flag_init(&f); th_flag_init(&f2); th_flag_init(&f3);
    th_gate_init(&g); th_gate_init(&g2);
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev2), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev3), GF_OK);

    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &g), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(ev, th_flag_cb, &f, &id), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &g2), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev2, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(ev2, th_flag_cb, &f2, &id2), GF_OK);
    CHECK(id != id2, "wait ids are distinct");
    th_sleep_ms(30);
    CHECK(th_flag_get(&f) == 0, "the waiter has not fired before its event completes");
    CHECK_EQ_RESULT(gf_event_cancel_wait(C.dev, id2), GF_OK);
    th_gate_open(&g);
    CHECK(th_flag_wait(&f, 1, TH_WAIT_MS), "the waiter fired after the event completed");
    CHECK(f.status == GF_OK, "the waiter got GF_OK");
    th_gate_open(&g2);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    th_sleep_ms(50);
    CHECK(th_flag_get(&f) == 1, "the waiter fired exactly once");
    CHECK(th_flag_get(&f2) == 0, "a cancelled waiter never fires");
    CHECK_FAIL(gf_event_cancel_wait(C.dev, id2), GF_ERROR_NOT_FOUND);   /* already cancelled */
    CHECK_FAIL(gf_event_cancel_wait(C.dev, id), GF_ERROR_NOT_FOUND);    /* already fired */
    CHECK_FAIL(gf_event_cancel_wait(C.dev, 0x7fffffffull), GF_ERROR_NOT_FOUND);

    /* an event already complete: the waiter fires soon */
    CHECK_EQ_RESULT(gf_event_record(ev3, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(ev3, th_flag_cb, &f3, &id3), GF_OK);
    CHECK(th_flag_wait(&f3, 1, TH_WAIT_MS), "a waiter on a completed event fires");

    gf_event_destroy(ev);
    gf_event_destroy(ev2);
    gf_event_destroy(ev3);
    gf_stream_destroy(s);
    th_flag_destroy(&f); th_flag_destroy(&f2); th_flag_destroy(&f3);
    th_gate_destroy(&g); th_gate_destroy(&g2);
}

/* ---- stream-ordered allocation ------------------------------------------------------------------ */
static void test_async_alloc(void)
{
    enum { N = 4096 };
    static unsigned char h1[N], h2[N], h3[N];
    gf_stream *s1 = mk_stream("alloc-1"), *s2 = mk_stream("alloc-2");
    gf_buffer *a = NULL, *b = NULL, *c = NULL;
    th_gate g;
    double end;
    int round, fresh_ok = 1;

    th_gate_init(&g);
    CHECK_EQ_RESULT(gf_buffer_create_async(s1, N, &a), GF_OK);
    if (!a) return;
    CHECK(gf_buffer_size(a) == N, "a stream-ordered buffer has its size");
    memset(h1, 0, N);
    CHECK_EQ_RESULT(gf_fill_async(s1, a, 0, 0x11, N), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s1, h1, a, 0, N), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_destroy_async(s1, a), GF_OK);
    /* on the same stream the memory may come back at once: stream order protects it */
    for (round = 0; round < 3; round++) {
        c = NULL;
        if (gf_buffer_create_async(s1, N, &c) != GF_OK || !c) { fresh_ok = 0; break; }
        memset(h3, 0, N);
        if (gf_fill_async(s1, c, 0, (unsigned char)(0x40 + round), N) != GF_OK ||
            gf_copy_to_host_async(s1, h3, c, 0, N) != GF_OK || gf_buffer_destroy_async(s1, c) != GF_OK ||
            gf_stream_synchronize(s1) != GF_OK || !all_bytes(h3, N, (unsigned char)(0x40 + round)))
            fresh_ok = 0;
    }
    CHECK(all_bytes(h1, N, 0x11), "stream-ordered buffer usable by later work on its stream");
    CHECK(fresh_ok, "allocate / use / free on one stream, 3 rounds");

    /* reuse only after completion: s1 still needs A (behind a gate) when it frees it; s2 then
       allocates the same size and writes. If s2 got A's memory early, s1's read would see it. */
    a = NULL;
    CHECK_EQ_RESULT(gf_buffer_create_async(s1, N, &a), GF_OK);
    if (!a) return;
    CHECK_EQ_RESULT(gf_fill_async(s1, a, 0, 0x11, N), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
    memset(h1, 0, N);
    memset(h2, 0, N);
    CHECK_EQ_RESULT(gf_stream_add_callback(s1, th_gate_cb, &g), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s1, h1, a, 0, N), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_destroy_async(s1, a), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create_async(s2, N, &b), GF_OK);
    if (b) {
        CHECK_EQ_RESULT(gf_fill_async(s2, b, 0, 0x22, N), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host_async(s2, h2, b, 0, N), GF_OK);
    }
    /* let s2 run if it may (it may also wait for s1: both are correct) */
    end = th_now_ms() + 300;
    while (gf_stream_query(s2) == GF_NOT_READY && th_now_ms() < end) th_sleep_ms(2);
    th_gate_open(&g);
    CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s2), GF_OK);
    CHECK(all_bytes(h1, N, 0x11), "work still using a freed block never saw another stream's writes");
    CHECK(all_bytes(h2, N, 0x22), "the other stream's new block holds its own data");
    if (b) CHECK_EQ_RESULT(gf_buffer_destroy_async(s2, b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s2), GF_OK);
    gf_stream_destroy(s1);
    gf_stream_destroy(s2);
    th_gate_destroy(&g);
}

/* ---- flows -------------------------------------------------------------------------------------- */
enum { FLOW_N = 1024 };
typedef struct {
    gf_buffer *buf;             /* 3 * FLOW_N bytes */
    unsigned char *host;        /* 3 * FLOW_N bytes */
    th_log *log;
    th_gate *gate;              /* load waits on it (NULL: no gate) */
    th_flag *slow;              /* left's sleeping callback counts here */
    log_item items[4];
    int calls[4];
} flow_data;
typedef struct { flow_data *d; int which; } flow_task;

static gf_result flow_fn(gf_stream *s, void *user)
{
    flow_task *t = (flow_task *)user;
    flow_data *d = t->d;
    gf_result r = GF_OK;
    d->calls[t->which]++;
    switch (t->which) {
    case 0:   /* load */
        if (d->gate) r = gf_stream_add_callback(s, th_gate_cb, d->gate);
        if (r == GF_OK) r = gf_fill_async(s, d->buf, 0, 0x01, FLOW_N);
        break;
    case 1:   /* left (slow) */
        r = gf_stream_add_callback(s, sleep_cb, d->slow);
        if (r == GF_OK) r = gf_copy_buffer_async(s, d->buf, FLOW_N, d->buf, 0, FLOW_N);
        break;
    case 2:   /* right */
        r = gf_copy_buffer_async(s, d->buf, 2 * FLOW_N, d->buf, 0, FLOW_N);
        break;
    default:  /* store */
        r = gf_copy_to_host_async(s, d->host, d->buf, 0, 3 * FLOW_N);
        break;
    }
    if (r == GF_OK) r = gf_stream_add_callback(s, log_cb, &d->items[t->which]);
    return r;
}

/* The log of one run (4 entries from `from`): load first, store last. */
static int flow_order_ok(th_log *log, int from)
{
    int load = th_log_find(log, 0, from), left = th_log_find(log, 1, from);
    int right = th_log_find(log, 2, from), store = th_log_find(log, 3, from);
    return load == from && left > load && right > load && store == from + 3 && th_log_count(log) >= from + 4;
}

/* A task that calls its own flow: refused, never a wait for the run that holds it (found by
   review: gf_flow_add and gf_flow_get_stats from a task waited for good). */
typedef struct inner_calls {
    gf_flow *flow, *nested; gf_stream_pool *pool;
    gf_result add, stats, run, nested_run, outer_stats; int pool_kept;
} inner_calls;
static gf_result calls_outer_flow(gf_stream *s, void *user)   /* a task of a flow run from a task of c->flow */
{
    inner_calls *c = (inner_calls *)user;
    gf_flow_stats st;
    (void)s;
    c->outer_stats = gf_flow_get_stats(c->flow, &st);
    return GF_OK;
}
static gf_result calls_own_flow(gf_stream *s, void *user)
{
    inner_calls *c = (inner_calls *)user;
    gf_flow_stats st;
    gf_task t;
    (void)s;
    c->add = gf_flow_add(c->flow, "inner", calls_own_flow, c, &t);
    c->stats = gf_flow_get_stats(c->flow, &st);
    c->run = gf_flow_run(c->flow, NULL);
    c->nested_run = gf_flow_run(c->nested, c->pool);
    gf_stream_pool_destroy(c->pool);   /* the task runs on one of its streams */
    c->pool_kept = strstr(gf_last_error(), "gf_stream_pool_destroy") != NULL;
    return GF_OK;
}
static void test_flow_calls_from_own_task(void)
{
    gf_stream_pool *pool = mk_pool(2, GF_POOL_ROUND_ROBIN, "own-task", 0);
    inner_calls c;
    gf_flow_stats st;
    gf_task t;
    memset(&c, 0, sizeof c);
    c.pool = pool;
    if (!pool || !CHECK_EQ_RESULT(gf_flow_create(C.dev, NULL, &c.flow), GF_OK)) return;
    CHECK_EQ_RESULT(gf_flow_create(C.dev, NULL, &c.nested), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(c.nested, "nested", calls_outer_flow, &c, &t), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(c.flow, "caller", calls_own_flow, &c, &t), GF_OK);
    CHECK_EQ_RESULT(gf_flow_run(c.flow, pool), GF_OK);
    CHECK(c.add == GF_ERROR_INVALID_STATE && c.stats == GF_ERROR_INVALID_STATE && c.run == GF_ERROR_INVALID_STATE,
          "flow: its own calls from inside one of its tasks are refused (add, stats, run)");
    CHECK(c.nested_run == GF_OK && c.outer_stats == GF_ERROR_INVALID_STATE,
          "flow: another flow runs from a task, and its task's call on the outer flow is refused (it waited for good)");
    CHECK(c.pool_kept, "flow: destroying the pool a task runs on, from the task, is refused (the run then used freed streams)");
    CHECK(gf_flow_get_stats(c.flow, &st) == GF_OK && st.runs == 1 && st.tasks_run == 1, "flow: ... and changed nothing (one run of its one task)");
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    gf_flow_destroy(c.nested);
    gf_flow_destroy(c.flow);
    gf_stream_pool_destroy(pool);
}

static void test_flows(void)
{
    static th_log log;
    static unsigned char host[3 * FLOW_N];
    static th_flag slow;
    flow_data d;
    flow_task tasks[4];
    static const char *names[4] = { "load", "left", "right", "store" };
    gf_flow *flow = NULL, *other = NULL;
    gf_flow_desc fd;
    gf_task id[4], foreign = 0;
    gf_stream_pool *pool = mk_pool(3, GF_POOL_ROUND_ROBIN, "flowpool", 0);
    gf_stream *s = mk_stream("flow-capture");
    gf_graph *g = NULL;
    th_gate gate;
    const char *msg;
    int i, ok = 1;

    th_log_init(&log);
    th_flag_init(&slow);
    th_gate_init(&gate);
    memset(&d, 0, sizeof d);
    d.buf = mk_buffer(3 * FLOW_N);
    d.host = host;
    d.log = &log;
    d.gate = &gate;
    d.slow = &slow;
    for (i = 0; i < 4; i++) {
        d.items[i].log = &log;
        d.items[i].value = i;
        tasks[i].d = &d;
        tasks[i].which = i;
    }
    memset(&fd, 0, sizeof fd);
    fd.label = "flow";
    fd.workload = GF_WORKLOAD_ANY;
    CHECK_EQ_RESULT(gf_flow_create(C.dev, &fd, &flow), GF_OK);
    if (!flow || !pool) return;
    for (i = 0; i < 4; i++)
        if (gf_flow_add(flow, names[i], flow_fn, &tasks[i], &id[i]) != GF_OK) ok = 0;
    CHECK(ok, "4 tasks added");
    CHECK_EQ_RESULT(gf_flow_depend(flow, id[0], id[1]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, id[0], id[2]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, id[1], id[3]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, id[2], id[3]), GF_OK);

    /* refused edges: a cycle (named), a self edge, out of range, another flow's task */
    CHECK_FAIL(gf_flow_depend(flow, id[3], id[0]), GF_ERROR_CYCLE);
    msg = gf_last_error();
    CHECK(strstr(msg, "load") && strstr(msg, "store"), "the cycle message names its tasks");
    CHECK_FAIL(gf_flow_depend(flow, id[1], id[1]), GF_ERROR_CYCLE);
    CHECK_FAIL(gf_flow_depend(flow, id[0], (gf_task)999), GF_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_RESULT(gf_flow_create(C.dev, NULL, &other), GF_OK);
    if (other) {
        CHECK_EQ_RESULT(gf_flow_add(other, "stranger", flow_fn, &tasks[2], &foreign), GF_OK);
        CHECK_FAIL(gf_flow_depend(flow, foreign, id[0]), GF_ERROR_INVALID_ARGUMENT);
        CHECK_FAIL(gf_flow_depend(flow, id[3], foreign), GF_ERROR_INVALID_ARGUMENT);
        gf_flow_destroy(other);
    }

    /* run: dependency order, cross-stream waits, the host does not block */
    memset(host, 0, sizeof host);
    CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
    CHECK(TH_GATE_LEFT(&gate) == 0 && th_log_count(&log) == 0, "gf_flow_run returned without waiting for the work");
    th_gate_open(&gate);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    CHECK(flow_order_ok(&log, 0), "run 1: load, then left and right, then store");
    CHECK(all_bytes(host, 3 * FLOW_N, 0x01), "run 1: the data went through every task");
    CHECK(d.calls[0] == 1 && d.calls[3] == 1, "each task function called once per run");

    /* a second run of the same flow (and the refused edges changed nothing) */
    d.gate = NULL;
    memset(host, 0, sizeof host);
    CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    CHECK(flow_order_ok(&log, 4), "run 2: same order");
    CHECK(all_bytes(host, 3 * FLOW_N, 0x01) && th_log_count(&log) == 8, "run 2: data and exactly 4 more tasks");

    /* capture: the flow becomes one graph; nothing runs until it is launched */
    memset(host, 0, sizeof host);
    CHECK_EQ_RESULT(gf_flow_capture(flow, s, &g), GF_OK);
    th_sleep_ms(30);
    CHECK(th_log_count(&log) == 8 && all_bytes(host, 3 * FLOW_N, 0), "nothing ran while the flow was captured");
    if (g) {
        CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK(flow_order_ok(&log, 8) && all_bytes(host, 3 * FLOW_N, 0x01), "the captured flow runs in order");
        CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK(flow_order_ok(&log, 12) && th_log_count(&log) == 16, "and again");
        gf_graph_destroy(g);
    }
    stream_usable(s, "the capture stream works after gf_flow_capture");
    gf_flow_destroy(flow);
    gf_stream_pool_destroy(pool);
    gf_stream_destroy(s);
    gf_buffer_destroy(d.buf);
    th_log_destroy(&log);
    th_flag_destroy(&slow);
    th_gate_destroy(&gate);
}

/* ---- graphs ------------------------------------------------------------------------------------- */
static gf_graph *capture_fill(gf_stream *s, gf_buffer *b, unsigned char v, unsigned char *h, size_t n, int fills)
{
    gf_graph *g = NULL;
    int i;
    if (gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) != GF_OK) return NULL;
    for (i = 0; i < fills; i++) gf_fill_async(s, b, 0, v, n);
    gf_copy_to_host_async(s, h, b, 0, n);
    if (gf_stream_end_capture(s, &g) != GF_OK) return NULL;
    return g;
}

static void test_graph_replay(void)
{
    enum { N = 256 };
    static uint32_t h[N];
    static uint32_t zero[N];
    gf_stream *s = mk_stream("graph"), *s2 = mk_stream("graph-other");
    gf_buffer *b = mk_buffer(N * sizeof(uint32_t));
    gf_graph *g = NULL;
    gf_graph_info gi = {0};
    gf_stream_stats st0 = {0}, st1 = {0};
    th_flag f;
    size_t i;

    th_flag_init(&f);
    for (i = 0; i < N; i++) h[i] = 0xdeadbeefu;
    memset(zero, 0, sizeof zero);
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, zero, sizeof zero), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    if (C.mod) CHECK_EQ_RESULT(launch_u32(s, C.k_add, b, N, 1), GF_OK);
    else CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x01, sizeof zero), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_flag_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, h, b, 0, sizeof h), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    if (!g) return;
    th_sleep_ms(30);
    CHECK(th_flag_get(&f) == 0 && all_u32(h, N, 0xdeadbeefu), "nothing ran during capture");
    CHECK_EQ_RESULT(gf_graph_info(g, &gi), GF_OK);
    CHECK(gi.native == (C.info.native_graphs ? 1 : 0), "graph info: native where the backend has native graphs");
    CHECK(gi.mode == GF_CAPTURE_GLOBAL, "graph info: capture mode");
    CHECK(gi.native ? gi.nodes >= 1 : gi.nodes == 3, "graph info: node count (3 recorded operations)");

    CHECK_EQ_RESULT(gf_stream_stats(s, &st0), GF_OK);
    for (i = 0; i < 3; i++) CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(th_flag_get(&f) == 3, "3 launches ran the callback 3 times");
    if (C.mod) CHECK(all_u32(h, N, 3), "3 launches ran the kernel 3 times (0 + 1 + 1 + 1)");
    else CHECK(all_u32(h, N, 0x01010101u), "3 launches wrote the fill");
    CHECK(gf_stream_stats(s, &st1) == GF_OK && st1.ops == st0.ops + 3, "stats count each graph launch as one op");

    CHECK_EQ_RESULT(gf_graph_launch(g, s2), GF_OK);     /* any stream of the device */
    CHECK_EQ_RESULT(gf_stream_synchronize(s2), GF_OK);
    CHECK(th_flag_get(&f) == 4, "a launch on another stream runs the graph");
    if (C.mod) CHECK(all_u32(h, N, 4), "... and its kernel");
    gf_graph_destroy(g);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
    gf_stream_destroy(s2);
    th_flag_destroy(&f);
}

/* The buffer and module a graph uses, destroyed while it lives: its launches still run them
   (their memory and code go with the graph). A replay read freed memory (found by review). */
static void test_graph_outlives_its_objects(void)
{
    enum { N = 64 };
    static uint32_t h[N];
    gf_stream *s = mk_stream("graph-holds");
    gf_buffer *b = mk_buffer(N * sizeof(uint32_t));
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_graph *g = NULL;
    int have_kernel = C.mod && gf_module_load(C.dev, &tk_module, &mod) == GF_OK && gf_kernel_get(mod, "add_u32", &k) == GF_OK;
    memset(h, 0, sizeof h);
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, h, sizeof h), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    if (have_kernel) CHECK_EQ_RESULT(launch_u32(s, k, b, N, 2), GF_OK);
    else CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x02, N * sizeof(uint32_t)), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, h, b, 0, sizeof h), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    gf_buffer_destroy(b);
    if (mod) gf_module_destroy(mod);
    if (g) {
        CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
        CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK(have_kernel ? all_u32(h, N, 4) : all_u32(h, N, 0x02020202u),
              "a graph whose buffer and module were destroyed still runs them (they go with the graph)");
        gf_graph_destroy(g);
    }
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    if (C.mod) {   /* a module destroyed inside the capture, and a buffer a launch was retargeted to */
        gf_buffer *b1 = mk_buffer(N * sizeof(uint32_t)), *b2 = mk_buffer(N * sizeof(uint32_t));
        gf_arg args[3];
        uint32_t n = N, v = 3;
        g = NULL;
        memset(h, 0, sizeof h);
        CHECK_EQ_RESULT(gf_copy_to_device(b2, 0, h, sizeof h), GF_OK);
        if (gf_module_load(C.dev, &tk_module, &mod) == GF_OK && gf_kernel_get(mod, "add_u32", &k) == GF_OK) {
            CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
            CHECK_EQ_RESULT(launch_u32(s, k, b1, N, 1), GF_OK);
            gf_module_destroy(mod);   /* inside the capture: its code must outlive the graph to come */
            CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
        }
        args[0].value = 0; args[0].size = 0; args[0].buffer = b2;
        args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
        args[2].value = &v; args[2].size = sizeof v; args[2].buffer = 0;
        if (g && CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 0, args, 3), GF_OK)) {
            gf_buffer_destroy(b2);   /* the graph's launch now uses it */
            CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            CHECK(1, "a graph whose module went inside its capture, retargeted to a buffer then destroyed, runs (ASan: no freed memory)");
        } else gf_buffer_destroy(b2);
        if (g) gf_graph_destroy(g);
        gf_buffer_destroy(b1);
    }
    {   /* a graph updated from fresh captures whose buffers go at once: it holds only its latest's */
        gf_graph *target = NULL, *fresh = NULL;
        gf_memory_stats m0, m1;
        int i, ok = 1;
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &m0), GF_OK);
        for (i = 0; i < 8 && ok; i++) {
            gf_buffer *t = mk_buffer(1 << 16);
            gf_graph **into = i ? &fresh : &target;
            ok = t && gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) == GF_OK && gf_fill_async(s, t, 0, (unsigned char)i, 1 << 16) == GF_OK &&
                 gf_stream_end_capture(s, into) == GF_OK;
            if (t) gf_buffer_destroy(t);
            if (ok && i) { ok = gf_graph_update(target, fresh) == GF_OK; gf_graph_destroy(fresh); fresh = NULL; }
            if (ok) ok = gf_graph_launch(target, s) == GF_OK && gf_stream_synchronize(s) == GF_OK;
        }
        CHECK(ok, "8 updates of a graph from captures whose buffers were destroyed");
        CHECK_EQ_RESULT(gf_device_trim(C.dev, 0), GF_OK);
        CHECK(gf_device_memory_stats(C.dev, &m1) == GF_OK && m1.device_bytes <= m0.device_bytes + (1 << 16),
              "... holds the latest capture's buffer alone, not each earlier one's");
        if (target) gf_graph_destroy(target);
    }
    gf_stream_destroy(s);
}

static void test_graph_update(void)
{
    enum { N = 512 };
    static unsigned char h[N];
    static uint32_t hk[N];
    gf_stream *s = mk_stream("graph-update");
    gf_buffer *b = mk_buffer(N), *bk = mk_buffer(N * sizeof(uint32_t));
    gf_graph *g1 = capture_fill(s, b, 0x11, h, N, 1), *g2 = capture_fill(s, b, 0x22, h, N, 1);
    gf_graph *g3 = capture_fill(s, b, 0x33, h, N, 2);
    gf_graph *k7 = NULL, *k9 = NULL;

    CHECK(g1 && g2 && g3, "three graphs captured");
    if (!g1 || !g2 || !g3) return;
    CHECK(gf_graph_launch(g1, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && all_bytes(h, N, 0x11),
          "g1 writes 0x11");
    CHECK_EQ_RESULT(gf_graph_update(g1, g2), GF_OK);
    memset(h, 0, N);
    CHECK(gf_graph_launch(g1, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && all_bytes(h, N, 0x22),
          "after update g1 writes g2's 0x22");
    CHECK_FAIL(gf_graph_update(g1, g3), GF_ERROR_INVALID_ARGUMENT);
    memset(h, 0, N);
    CHECK(gf_graph_launch(g1, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && all_bytes(h, N, 0x22),
          "a refused update (other shape) left g1 unchanged");
    CHECK(gf_graph_launch(g2, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && all_bytes(h, N, 0x22),
          "the source graph still works");

    if (C.mod) {
        if (gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) == GF_OK) {
            launch_u32(s, C.k_fill, bk, N, 7);
            gf_copy_to_host_async(s, hk, bk, 0, sizeof hk);
            gf_stream_end_capture(s, &k7);
        }
        if (gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL) == GF_OK) {
            launch_u32(s, C.k_fill, bk, N, 9);
            gf_copy_to_host_async(s, hk, bk, 0, sizeof hk);
            gf_stream_end_capture(s, &k9);
        }
        CHECK(k7 && k9, "two kernel graphs captured");
        if (k7 && k9) {
            CHECK(gf_graph_launch(k7, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && all_u32(hk, N, 7),
                  "kernel graph writes 7");
            CHECK_EQ_RESULT(gf_graph_update(k7, k9), GF_OK);
            CHECK(gf_graph_launch(k7, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && all_u32(hk, N, 9),
                  "after update the kernel argument is 9");
        }
        gf_graph_destroy(k7);
        gf_graph_destroy(k9);
    }
    gf_graph_destroy(g1);
    gf_graph_destroy(g2);
    gf_graph_destroy(g3);
    gf_buffer_destroy(b);
    gf_buffer_destroy(bk);
    gf_stream_destroy(s);
}

typedef struct { int calls; th_flag runs; gf_buffer *buf; } warm_data;
static gf_result warm_fn(gf_stream *s, void *user)
{
    warm_data *w = (warm_data *)user;
    gf_result r;
    w->calls++;
    r = gf_stream_add_callback(s, th_flag_cb, &w->runs);
    if (r == GF_OK && C.mod) r = launch_u32(s, C.k_add, w->buf, 64, 1);
    return r;
}

static void test_graph_capture_fn(void)
{
    gf_stream *s = mk_stream("graph-capture");
    gf_graph *g = NULL;
    warm_data w;
    static uint32_t zero[64];

    memset(zero, 0, sizeof zero);
    w.calls = 0;
    th_flag_init(&w.runs);
    w.buf = mk_buffer(sizeof zero);
    CHECK_EQ_RESULT(gf_copy_to_device(w.buf, 0, zero, sizeof zero), GF_OK);
    CHECK_EQ_RESULT(gf_graph_capture(s, 2, warm_fn, &w, &g), GF_OK);
    CHECK(w.calls == 3, "fn called for 2 warm-ups and the capture");
    CHECK(th_flag_get(&w.runs) == 2, "the 2 warm-up runs executed (and were synchronized); the capture did not");
    if (C.mod) buffer_is_u32(w.buf, 64, 2, "warm-up kernels ran twice");
    if (g) {
        CHECK(gf_graph_launch(g, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && th_flag_get(&w.runs) == 3,
              "the captured call runs on launch");
        if (C.mod) buffer_is_u32(w.buf, 64, 3, "... with its kernel");
        gf_graph_destroy(g);
    }
    g = NULL;
    w.calls = 0;
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, warm_fn, &w, &g), GF_OK);
    CHECK(w.calls == 1 && th_flag_get(&w.runs) == 3, "no warm-up: one call, captured, not run");
    gf_graph_destroy(g);
    gf_buffer_destroy(w.buf);
    gf_stream_destroy(s);
    th_flag_destroy(&w.runs);
}

static void test_graph_fork_join(void)
{
    enum { N = 300 };
    static unsigned char ha[N], hb[N];
    gf_stream *s = mk_stream("fork-main"), *s2 = mk_stream("fork-side");
    gf_buffer *a = mk_buffer(N), *b = mk_buffer(N);
    gf_event *e1 = NULL, *e2 = NULL;
    gf_graph *g = NULL;
    gf_graph_info gi = {0};

    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &e1), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &e2), GF_OK);
    memset(ha, 0, N);
    memset(hb, 0, N);
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, a, 0, 0x0a, N), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(e1, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(s2, e1), GF_OK);          /* s2 joins the capture */
    CHECK_EQ_RESULT(gf_fill_async(s2, b, 0, 0x0b, N), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(e2, s2), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(s, e2), GF_OK);           /* joined back */
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, ha, a, 0, N), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, hb, b, 0, N), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    th_sleep_ms(20);
    CHECK(all_bytes(ha, N, 0) && all_bytes(hb, N, 0), "fork/join: nothing ran during capture");
    if (g) {
        CHECK(gf_graph_get_info(g, &gi) == GF_OK && gi.nodes >= 4, "fork/join graph holds both streams' work");
        CHECK(gf_graph_launch(g, s) == GF_OK && gf_stream_synchronize(s) == GF_OK &&
              all_bytes(ha, N, 0x0a) && all_bytes(hb, N, 0x0b), "fork/join graph replays both branches");
        gf_graph_destroy(g);
    }
    stream_usable(s2, "the forked stream works after the capture");

    /* end_capture with an unjoined fork: GF_ERROR_CAPTURE, both streams usable */
    g = NULL;
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(e1, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(s2, e1), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s2, b, 0, 0x0c, N), GF_OK);
    CHECK_FAIL(gf_stream_end_capture(s, &g), GF_ERROR_CAPTURE);
    CHECK(g == NULL, "no graph from a failed capture");
    stream_usable(s, "the capturing stream works after an unjoined end_capture");
    stream_usable(s2, "the forked stream works after an unjoined end_capture");
    CHECK(gf_copy_to_host(hb, b, 0, N) == GF_OK && all_bytes(hb, N, 0x0b), "the discarded capture's fill never ran");

    gf_event_destroy(e1);
    gf_event_destroy(e2);
    gf_buffer_destroy(a);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
    gf_stream_destroy(s2);
}

static void test_graph_misuse(void)
{
    enum { N = 64 };
    static unsigned char h[N], src[N];
    gf_stream *s = mk_stream("misuse");
    gf_buffer *b = mk_buffer(N), *other = mk_buffer(N);
    gf_event *ev = NULL;
    gf_graph *g = NULL, *dead = NULL;
    gf_result r;
    gf_graph_info gi = {0};
    static const gf_capture_mode modes[3] = { GF_CAPTURE_GLOBAL, GF_CAPTURE_THREAD_LOCAL, GF_CAPTURE_RELAXED };
    int i;

    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev), GF_OK);
    memset(src, 0x77, N);
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, src, N), GF_OK);

    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_FAIL(gf_stream_synchronize(s), GF_ERROR_CAPTURE);
    CHECK_FAIL(gf_stream_end_capture(s, &g), GF_ERROR_CAPTURE);          /* the capture was discarded */
    stream_usable(s, "usable after synchronize inside a capture");

    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_FAIL(gf_stream_query(s), GF_ERROR_CAPTURE);
    CHECK_FAIL(gf_stream_end_capture(s, &g), GF_ERROR_CAPTURE);
    stream_usable(s, "usable after query inside a capture");

    CHECK_FAIL(gf_stream_end_capture(s, &g), GF_ERROR_CAPTURE);          /* end without begin */
    stream_usable(s, "usable after end without begin");

    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_FAIL(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_ERROR_CAPTURE);   /* nested */
    r = gf_stream_end_capture(s, &g);
    CHECK(r == GF_OK || r == GF_ERROR_CAPTURE, "end after a refused nested begin: ended either way");
    if (r == GF_OK) gf_graph_destroy(g);
    g = NULL;
    stream_usable(s, "usable after a nested begin");

    /* a sync copy into a buffer the capture uses is refused; into another buffer it is fine */
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x12, N), GF_OK);
    memset(src, 0x99, N);
    CHECK_FAIL(gf_copy_to_device(b, 0, src, N), GF_ERROR_CAPTURE);
    CHECK_EQ_RESULT(gf_copy_to_device(other, 0, src, N), GF_OK);
    r = gf_stream_end_capture(s, &g);
    CHECK(r == GF_OK || r == GF_ERROR_CAPTURE, "end after a refused sync copy: ended either way");
    if (r == GF_OK) gf_graph_destroy(g);
    g = NULL;
    {   /* the same memory through a view: the capture uses the view, the copy the parent, and
           the other way round (each was accepted, an outside review found) */
        gf_buffer *v = NULL;
        int round;
        if (CHECK_EQ_RESULT(gf_buffer_view(b, 0, N / 2, &v), GF_OK))
            for (round = 0; round < 2; round++) {
                CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
                CHECK_EQ_RESULT(gf_fill_async(s, round ? b : v, 0, 0x12, N / 2), GF_OK);
                CHECK_FAIL(gf_copy_to_device(round ? v : b, 0, src, N / 2), GF_ERROR_CAPTURE);
                CHECK_FAIL(gf_copy_to_host(h, round ? v : b, 0, N / 2), GF_ERROR_CAPTURE);
                r = gf_stream_end_capture(s, &g);
                if (r == GF_OK) gf_graph_destroy(g);
                g = NULL;
            }
        gf_buffer_destroy(v);
    }
    CHECK(gf_copy_to_host(h, b, 0, N) == GF_OK && all_bytes(h, N, 0x77),
          "the refused sync copy and the unlaunched capture wrote nothing");
    stream_usable(s, "usable after a refused sync copy");

    /* an event recorded inside a capture cannot be queried or waited on by the host */
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_FAIL(gf_event_query(ev), GF_ERROR_CAPTURE);
    CHECK_FAIL(gf_event_synchronize(ev), GF_ERROR_CAPTURE);
    r = gf_stream_end_capture(s, &g);
    CHECK(r == GF_OK || r == GF_ERROR_CAPTURE, "end after refused event calls: ended either way");
    if (r == GF_OK) gf_graph_destroy(g);
    g = NULL;
    stream_usable(s, "usable after refused event calls");

    {   /* after the capture: timing events recorded inside it are complete and have no time,
           on every backend (the stub answered 0 ms, and a huge span against an event recorded
           outside, with GF_OK; OpenCL refused: an outside review) */
        gf_event *t0 = NULL, *t1 = NULL, *out = NULL;
        gf_stream *other_s = mk_stream("misuse-other");
        float ms = -1.0f;
        if (CHECK_EQ_RESULT(gf_event_create(gf_stream_device(s), GF_EVENT_TIMING, &t0), GF_OK) &&
            CHECK_EQ_RESULT(gf_event_create(gf_stream_device(s), GF_EVENT_TIMING, &t1), GF_OK) &&
            CHECK_EQ_RESULT(gf_event_create(gf_stream_device(s), GF_EVENT_TIMING, &out), GF_OK)) {
            CHECK_EQ_RESULT(gf_event_record(out, s), GF_OK);
            CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
            CHECK_EQ_RESULT(gf_event_record(t0, s), GF_OK);
            CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x21, N), GF_OK);
            CHECK_EQ_RESULT(gf_event_record(t1, s), GF_OK);
            if (CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK)) {
                CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
                CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
                CHECK_EQ_RESULT(gf_event_query(t1), GF_OK);
                CHECK_EQ_RESULT(gf_event_synchronize(t1), GF_OK);
                CHECK_EQ_RESULT(gf_event_synchronize_timeout(t1, 1000), GF_OK);
                CHECK_EQ_RESULT(gf_stream_wait_event(other_s, t1), GF_OK);
                CHECK_EQ_RESULT(gf_stream_synchronize(other_s), GF_OK);
                CHECK_FAIL(gf_event_elapsed_ms(t0, t1, &ms), GF_ERROR_INVALID_STATE);
                CHECK(strstr(gf_last_error(), "inside a capture") != NULL, "a captured event's elapsed time: refused, said why");
                CHECK_FAIL(gf_event_elapsed_ms(out, t1, &ms), GF_ERROR_INVALID_STATE);
                CHECK_FAIL(gf_event_elapsed_ms(t1, out, &ms), GF_ERROR_INVALID_STATE);
                gf_graph_destroy(g);
            }
            g = NULL;
            CHECK_EQ_RESULT(gf_event_record(t0, s), GF_OK);   /* recorded outside again: timed as ever */
            CHECK_EQ_RESULT(gf_event_record(t1, s), GF_OK);
            CHECK_EQ_RESULT(gf_event_synchronize(t1), GF_OK);
            CHECK(gf_event_elapsed_ms(t0, t1, &ms) == GF_OK && ms >= 0.0f, "events recorded outside a capture again have a time");
        }
        gf_event_destroy(t0);
        gf_event_destroy(t1);
        gf_event_destroy(out);
        gf_stream_destroy(other_s);
    }

    CHECK_FAIL(gf_graph_launch(NULL, s), GF_ERROR_INVALID_HANDLE);
    dead = capture_fill(s, b, 0x01, h, N, 1);
    if (CHECK(dead != NULL, "a graph to destroy")) {
        gf_graph_destroy(dead);
        CHECK_FAIL(gf_graph_launch(dead, s), GF_ERROR_INVALID_HANDLE);
    }
    stream_usable(s, "usable after launching bad graphs");

    /* every capture mode is accepted */
    for (i = 0; i < 3; i++) {
        g = NULL;
        memset(h, 0, N);
        if (!CHECK_EQ_RESULT(gf_stream_begin_capture(s, modes[i]), GF_OK)) continue;
        gf_fill_async(s, b, 0, (unsigned char)(0x50 + i), N);
        gf_copy_to_host_async(s, h, b, 0, N);
        CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
        if (!g) continue;
        CHECK(gf_graph_info(g, &gi) == GF_OK && gi.mode == modes[i], "graph info keeps the capture mode");
        CHECK(gf_graph_launch(g, s) == GF_OK && gf_stream_synchronize(s) == GF_OK &&
              all_bytes(h, N, (unsigned char)(0x50 + i)), "a graph of each capture mode replays");
        gf_graph_destroy(g);
    }
    gf_event_destroy(ev);
    gf_buffer_destroy(b);
    gf_buffer_destroy(other);
    gf_stream_destroy(s);
}

static void test_graph_nested_and_alloc(void)
{
    enum { N = 128 };
    static unsigned char h[N], h2[N];
    gf_stream *s = mk_stream("graph-nested");
    gf_buffer *b = mk_buffer(N), *tmp = NULL;
    gf_graph *inner = capture_fill(s, b, 0x44, h, N, 1), *outer = NULL, *ga = NULL;

    if (inner) {
        CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
        CHECK_EQ_RESULT(gf_graph_launch(inner, s), GF_OK);
        CHECK_EQ_RESULT(gf_stream_end_capture(s, &outer), GF_OK);
        memset(h, 0, N);
        CHECK(outer && gf_graph_launch(outer, s) == GF_OK && gf_stream_synchronize(s) == GF_OK &&
              all_bytes(h, N, 0x44), "a graph launched inside a capture replays within the outer graph");
        gf_graph_destroy(inner);
        memset(h, 0, N);
        CHECK(outer && gf_graph_launch(outer, s) == GF_OK && gf_stream_synchronize(s) == GF_OK &&
              all_bytes(h, N, 0x44), "the outer graph still replays after the inner one is destroyed");
        gf_graph_destroy(outer);
    }

    /* stream-ordered allocation inside a capture */
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create_async(s, N, &tmp), GF_OK);
    if (tmp) {
        CHECK_EQ_RESULT(gf_fill_async(s, tmp, 0, 0x66, N), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host_async(s, h2, tmp, 0, N), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_destroy_async(s, tmp), GF_OK);
    }
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &ga), GF_OK);
    if (ga) {
        gf_graph *other = capture_fill(s, b, 0x45, h, N, 1);
        gf_result ru = gf_graph_update(ga, other);   /* memory nodes do not update (CUDA: the shapes differ) */
        CHECK(ru == GF_ERROR_NOT_SUPPORTED || ru == GF_ERROR_INVALID_ARGUMENT, "updating a graph that allocates memory is refused");
        if (other) gf_graph_destroy(other);
        memset(h2, 0, N);
        CHECK(gf_graph_launch(ga, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && all_bytes(h2, N, 0x66),
              "a captured allocate / fill / read / free replays");
        memset(h2, 0, N);
        CHECK(gf_graph_launch(ga, s) == GF_OK && gf_stream_synchronize(s) == GF_OK && all_bytes(h2, N, 0x66),
              "and replays again");
        gf_graph_destroy(ga);
    }
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

/* ---- profiler: a minimal JSON checker for the trace --------------------------------------------- */
typedef struct {
    char ph[8], name[128], args_name[128], cat[32];
    int has_ts, has_dur;
} js_event;
typedef struct {
    const char *p, *end;
    int ok, depth, trace_events;
    js_event ev[2048];
    int n;
} js;

static void js_ws(js *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}
static int js_fail(js *j) { j->ok = 0; return 0; }
static void js_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}
static int js_hex(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
/* A string at j->p (the opening quote), decoded into out (truncated to cap, ASCII escapes). */
static int js_string(js *j, char *out, size_t cap)
{
    size_t n = 0;
    if (j->p >= j->end || *j->p != '"') return js_fail(j);
    j->p++;
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if ((unsigned char)c < 0x20) return js_fail(j);
        if (c == '\\') {
            if (j->p >= j->end) return js_fail(j);
            c = *j->p++;
            switch (c) {
            case '"': case '\\': case '/': break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                int k, v = 0;
                if (j->end - j->p < 4) return js_fail(j);
                for (k = 0; k < 4; k++) {
                    int d = js_hex(j->p[k]);
                    if (d < 0) return js_fail(j);
                    v = v * 16 + d;
                }
                j->p += 4;
                c = v < 0x80 ? (char)v : '?';
                break;
            }
            default: return js_fail(j);
            }
        }
        if (out && n + 1 < cap) out[n++] = c;
    }
    if (j->p >= j->end) return js_fail(j);
    j->p++;
    if (out) out[n] = 0;
    return 1;
}
static int js_number(js *j)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p < j->end && *j->p == '0') j->p++;
    else if (j->p < j->end && *j->p >= '1' && *j->p <= '9') { while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++; }
    else return js_fail(j);
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return js_fail(j);
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return js_fail(j);
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    return j->p > s;
}
static int js_value(js *j, char *str_out, size_t cap, js_event *obj_out);
static int js_object(js *j, js_event *out)
{
    js_event e;
    memset(&e, 0, sizeof e);
    j->p++;
    js_ws(j);
    if (j->p < j->end && *j->p == '}') { j->p++; goto done; }
    for (;;) {
        char key[64], sval[128];
        js_event sub;
        const char *before;
        js_ws(j);
        if (!js_string(j, key, sizeof key)) return 0;
        js_ws(j);
        if (j->p >= j->end || *j->p != ':') return js_fail(j);
        j->p++;
        js_ws(j);
        sval[0] = 0;
        before = j->p;
        if (j->depth == 1 && strcmp(key, "traceEvents") == 0 && j->p < j->end && *j->p == '[') j->trace_events = 1;
        if (!js_value(j, sval, sizeof sval, &sub)) return 0;
        if (*before == '"') {
            if (strcmp(key, "ph") == 0) js_copy(e.ph, sizeof e.ph, sval);
            else if (strcmp(key, "name") == 0) js_copy(e.name, sizeof e.name, sval);
            else if (strcmp(key, "cat") == 0) js_copy(e.cat, sizeof e.cat, sval);
        } else if (*before == '{' && strcmp(key, "args") == 0) {
            js_copy(e.args_name, sizeof e.args_name, sub.name);
        } else if (*before != '[' && *before != '{') {
            if (strcmp(key, "ts") == 0) e.has_ts = 1;
            if (strcmp(key, "dur") == 0) e.has_dur = 1;
        }
        js_ws(j);
        if (j->p < j->end && *j->p == ',') { j->p++; continue; }
        if (j->p < j->end && *j->p == '}') { j->p++; break; }
        return js_fail(j);
    }
done:
    if (e.ph[0] && j->n < (int)(sizeof j->ev / sizeof j->ev[0])) j->ev[j->n++] = e;
    if (out) *out = e;
    return 1;
}
static int js_value(js *j, char *str_out, size_t cap, js_event *obj_out)
{
    int r = 1;
    if (++j->depth > 64) return js_fail(j);
    js_ws(j);
    if (j->p >= j->end) r = js_fail(j);
    else if (*j->p == '{') r = js_object(j, obj_out);
    else if (*j->p == '[') {
        j->p++;
        js_ws(j);
        if (j->p < j->end && *j->p == ']') j->p++;
        else for (;;) {
            if (!js_value(j, NULL, 0, NULL)) { r = 0; break; }
            js_ws(j);
            if (j->p < j->end && *j->p == ',') { j->p++; continue; }
            if (j->p < j->end && *j->p == ']') { j->p++; break; }
            r = js_fail(j);
            break;
        }
    }
    else if (*j->p == '"') r = js_string(j, str_out, cap);
    else if (j->end - j->p >= 4 && memcmp(j->p, "true", 4) == 0) j->p += 4;
    else if (j->end - j->p >= 5 && memcmp(j->p, "false", 5) == 0) j->p += 5;
    else if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) j->p += 4;
    else r = js_number(j);
    j->depth--;
    return r && j->ok;
}
/* Parses a whole document; 1 if it is valid JSON (one value, nothing after it). */
static int js_parse(js *j, const char *text, size_t n)
{
    memset(j, 0, sizeof *j);
    j->p = text;
    j->end = text + n;
    j->ok = 1;
    if (!js_value(j, NULL, 0, NULL)) return 0;
    js_ws(j);
    return j->p == j->end;
}
static int js_count(js *j, const char *ph)
{
    int i, n = 0;
    for (i = 0; i < j->n; i++)
        if (strcmp(j->ev[i].ph, ph) == 0) n++;
    return n;
}
static int js_has_thread_name(js *j, const char *label)
{
    int i;
    for (i = 0; i < j->n; i++)
        if (strcmp(j->ev[i].ph, "M") == 0 && strcmp(j->ev[i].name, "thread_name") == 0 &&
            strcmp(j->ev[i].args_name, label) == 0) return 1;
    return 0;
}

static void test_json_checker(void)
{
    static js j;
    static const char good[] = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\\\"b\",\"ts\":1.5,\"dur\":2e3},"
                               "{\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":\"q\\u0041\"}}],\"x\":[true,false,null,-0.5]}";
    static const char *bad[] = { "{\"a\":1,}", "[1 2]", "{\"a\":\"\x01\"}", "{\"a\":01}", "{\"a\":\"\\q\"}", "{} x" };
    int i, all_bad = 1;
    CHECK(js_parse(&j, good, strlen(good)) && j.trace_events && js_count(&j, "X") == 1 &&
          strcmp(j.ev[0].name, "a\"b") == 0 && j.ev[0].has_ts && j.ev[0].has_dur && js_has_thread_name(&j, "qA"),
          "the test's JSON checker reads a known trace");
    for (i = 0; i < 6; i++)
        if (js_parse(&j, bad[i], strlen(bad[i]))) all_bad = 0;
    CHECK(all_bad, "the test's JSON checker rejects malformed JSON");
}

static const gf_profile_stream *find_profiled(const gf_profile_report *r, gf_stream *s)
{
    int i;
    for (i = 0; i < r->stream_count && i < GF_PROFILE_MAX_STREAMS; i++)
        if (r->streams[i].id == gf_stream_id(s)) return &r->streams[i];
    return NULL;
}

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *text;
    long len;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = (char *)malloc(len > 0 ? (size_t)len : 1u);
    *n = text && len > 0 ? fread(text, 1, (size_t)len, f) : 0;
    fclose(f);
    return text;
}

static void test_profiler(void)
{
    static const char label1[] = "up\"lo\\ad";           /* the trace must escape it */
    static unsigned char h[4096];
    static js j;
    static gf_profile_report rep, rep2;
    static const char label2[] = "compute \xc3\xa9t\xc3\xa9 \xe2\x9a\x99";   /* UTF-8: kept as it is (each byte was a code point) */
    gf_stream *s1 = mk_stream(label1), *s2 = mk_stream(label2);
    gf_buffer *b = mk_buffer(sizeof h), *k = mk_buffer(256 * sizeof(uint32_t));
    gf_event *ev = NULL;
    const gf_profile_stream *p1, *p2;
    gf_stream_stats st = {0};
    char path[256];
    char *text;
    size_t n = 0;
    int xs, all_timed = 1, i, launches = C.mod ? 1 : 0;
    uint64_t sum = 0;
    th_flag f;

    th_flag_init(&f);
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev), GF_OK);
    memset(h, 0x21, sizeof h);
    CHECK_EQ_RESULT(gf_profiler_enable(C.dev, GF_PROFILE_ON), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device_async(s1, b, 0, h, sizeof h), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s1, b, 0, 0x01, 100), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s1, h, b, 0, sizeof h), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(s2, ev), GF_OK);          /* a cross-stream arrow */
    if (C.mod) CHECK_EQ_RESULT(launch_u32(s2, C.k_fill, k, 256, 5), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s2, sleep_cb, &f), GF_OK);
    CHECK_EQ_RESULT(gf_profiler_report(C.dev, &rep), GF_OK);       /* waits for profiled work */
    CHECK(th_flag_get(&f) == 1, "gf_profiler_report waited for the profiled work");
    p1 = find_profiled(&rep, s1);
    p2 = find_profiled(&rep, s2);
    CHECK(p1 && p2, "the report lists both streams");
    if (p1) {
        CHECK(p1->ops[GF_OP_COPY] == 2 && p1->ops[GF_OP_FILL] == 1 && p1->ops[GF_OP_LAUNCH] == 0,
              "stream 1: 2 copies and 1 fill");
        CHECK(p1->bytes >= 2 * sizeof h, "stream 1: bytes moved");
        CHECK(strcmp(p1->label, label1) == 0, "stream 1: its label");
        CHECK(p1->longest[0].duration_ms >= 0.0 && p1->busy_ms >= 0.0, "stream 1: times");
    }
    if (p2) {
        CHECK(p2->ops[GF_OP_CALLBACK] == 1 && p2->ops[GF_OP_LAUNCH] == (uint64_t)launches,
              "stream 2: the callback and the launch");
        CHECK(p2->busy_ms >= 10.0, "stream 2: busy time covers its 20 ms callback");
        CHECK(p2->longest[0].kind == GF_OP_CALLBACK && p2->longest[0].duration_ms >= 10.0,
              "stream 2: the callback is its longest operation");
    }
    for (i = 0; i < rep.stream_count && i < GF_PROFILE_MAX_STREAMS; i++) {
        int kk;
        for (kk = 0; kk < GF_OP_KIND_COUNT; kk++) sum += rep.streams[i].ops[kk];
    }
    CHECK(rep.total_ops == sum && rep.total_ops >= (uint64_t)(4 + launches), "total_ops is the sum over streams");
    CHECK(gf_stream_stats(s2, &st) == GF_OK && st.busy_ms >= 10.0, "stream stats busy_ms while profiling");

    snprintf(path, sizeof path, "%s/gpuflow_trace_%s_%ld.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", C.name, (long)getpid());
    CHECK_EQ_RESULT(gf_profiler_write_trace(C.dev, path), GF_OK);
    text = read_file(path, &n);
    if (CHECK(text && n > 0, "the trace file was written")) {
        CHECK(js_parse(&j, text, n), "the trace parses as JSON");
        CHECK(j.trace_events, "the trace is {\"traceEvents\": [...]}");
        xs = js_count(&j, "X");
        CHECK((uint64_t)xs == rep.total_ops, "one X span per profiled operation");
        for (i = 0; i < j.n; i++)
            if (strcmp(j.ev[i].ph, "X") == 0 && !(j.ev[i].has_ts && j.ev[i].has_dur)) all_timed = 0;
        CHECK(all_timed, "every span has ts and dur");
        CHECK(js_has_thread_name(&j, label1), "thread_name metadata carries stream 1's (escaped) label");
        CHECK(js_has_thread_name(&j, label2), "thread_name metadata for stream 2, its UTF-8 label as it is");
        CHECK(js_count(&j, "s") >= 1 && js_count(&j, "f") >= 1, "a flow arrow for the cross-stream wait");
    }
    free(text);
    remove(path);

    /* turned off: nothing more is counted */
    CHECK_EQ_RESULT(gf_profiler_enable(C.dev, 0), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s1, b, 0, 0x02, 100), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
    CHECK(gf_profiler_report(C.dev, &rep2) == GF_OK && rep2.total_ops == rep.total_ops,
          "with the profiler off, operations are not profiled");

    /* on again: a new history (review L2: every record was kept until the device closed, so a
       program profiling a frame at a time grew by ~200 bytes an operation, for ever) */
    {
        int w, windows_ok = 1;
        for (w = 0; w < 200; w++) {
            gf_profile_report win;
            if (gf_profiler_enable(C.dev, GF_PROFILE_ON) != GF_OK || gf_fill_async(s1, b, 0, (unsigned char)w, 100) != GF_OK ||
                gf_profiler_report(C.dev, &win) != GF_OK || win.total_ops != 1 || win.dropped_ops != 0 ||
                gf_profiler_enable(C.dev, 0) != GF_OK)
                windows_ok = 0;
        }
        CHECK(windows_ok, "profiler switched on again: each window's report holds that window's one operation");
        CHECK_EQ_RESULT(gf_profiler_enable(C.dev, GF_PROFILE_ON), GF_OK);   /* a wait whose source went with a restart: no arrow, no crash */
        CHECK_EQ_RESULT(gf_stream_wait_event(s2, ev), GF_OK);
        snprintf(path, sizeof path, "%s/gpuflow_trace_restart_%s_%ld.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", C.name, (long)getpid());
        CHECK_EQ_RESULT(gf_profiler_write_trace(C.dev, path), GF_OK);
        remove(path);
        CHECK_EQ_RESULT(gf_profiler_enable(C.dev, 0), GF_OK);
    }

    gf_event_destroy(ev);
    gf_buffer_destroy(b);
    gf_buffer_destroy(k);
    gf_stream_destroy(s1);
    gf_stream_destroy(s2);
    th_flag_destroy(&f);
}

/* ---- 8 threads on one stream pool and one event pool --------------------------------------------- */
enum { T8 = 8, T8_ITER = 150 };
typedef struct {
    gf_stream_pool *pool;
    gf_event_pool *events;
    pthread_mutex_t *own_lock;
    gf_event **owned;               /* events currently held by some thread */
    int index, errors;
    th_flag done;                   /* callbacks that ran */
} t8_arg;

static void *t8_main(void *p)
{
    t8_arg *a = (t8_arg *)p;
    int i, k;
    for (i = 0; i < T8_ITER; i++) {
        gf_acquire_hint hint;
        gf_stream *s = NULL;
        gf_event *e = NULL;
        hint.priority = GF_PRIORITY_NORMAL;
        hint.workload = (gf_workload)(i % GF_WORKLOAD_COUNT);
        if (gf_stream_pool_acquire(a->pool, &hint, &s) != GF_OK || !s) { a->errors++; continue; }
        if (gf_event_pool_acquire(a->events, (i & 1) ? GF_EVENT_TIMING : 0, &e) != GF_OK || !e) {
            a->errors++;
        } else {
            pthread_mutex_lock(a->own_lock);
            for (k = 0; k < T8; k++)
                if (a->owned[k] == e) a->errors++;      /* handed to two threads at once */
            a->owned[a->index] = e;
            pthread_mutex_unlock(a->own_lock);
            if (gf_event_record(e, s) != GF_OK) a->errors++;
        }
        if (gf_stream_add_callback(s, th_flag_cb, &a->done) != GF_OK) a->errors++;
        if (e) {
            pthread_mutex_lock(a->own_lock);
            a->owned[a->index] = NULL;
            pthread_mutex_unlock(a->own_lock);
            if (gf_event_pool_release(a->events, e) != GF_OK) a->errors++;
        }
        if (gf_stream_pool_release(a->pool, s) != GF_OK) a->errors++;
    }
    return NULL;
}

static void test_eight_threads(void)
{
    gf_stream_pool *pool = mk_pool(4, GF_POOL_LEAST_PENDING, "t8", 0);
    gf_event_pool *events = NULL;
    gf_event_pool_desc d;
    static t8_arg args[T8];
    static gf_event *owned[T8];
    pthread_mutex_t own_lock;
    pthread_t t[T8];
    gf_stream_pool_stats ps = {0};
    gf_event_pool_stats es = {0};
    int i, started = 0, errors = 0, all_ran = 1;
    uint64_t sum = 0;

    d.capacity = 4;
    d.timing_capacity = 2;
    CHECK_EQ_RESULT(gf_event_pool_create(C.dev, &d, &events), GF_OK);
    if (!pool || !events) return;
    pthread_mutex_init(&own_lock, NULL);
    for (i = 0; i < T8; i++) {
        owned[i] = NULL;
        args[i].pool = pool;
        args[i].events = events;
        args[i].own_lock = &own_lock;
        args[i].owned = owned;
        args[i].index = i;
        args[i].errors = 0;
        th_flag_init(&args[i].done);
    }
    for (i = 0; i < T8; i++)
        if (pthread_create(&t[i], NULL, t8_main, &args[i]) == 0) started++;
    CHECK(started == T8, "8 threads started");
    for (i = 0; i < started; i++) pthread_join(t[i], NULL);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    for (i = 0; i < T8; i++) {
        errors += args[i].errors;
        if (th_flag_get(&args[i].done) != T8_ITER) all_ran = 0;
    }
    CHECK(errors == 0, "8 threads: every acquire, record, callback and release succeeded; no event shared");
    CHECK(all_ran, "8 threads: every thread's 150 callbacks ran");
    CHECK_EQ_RESULT(gf_stream_pool_stats(pool, &ps), GF_OK);
    for (i = 0; i < ps.count && i < GF_POOL_MAX_STREAMS; i++) sum += ps.acquisitions[i];
    CHECK(sum == (uint64_t)T8 * T8_ITER, "pool stats: 1200 acquisitions");
    CHECK_EQ_RESULT(gf_event_pool_stats(events, &es), GF_OK);
    CHECK(es.in_use == 0 && es.available == es.created, "event pool: all events back");
    CHECK(es.created <= 6 + 2 * T8, "event pool: events were reused (created <= capacity + 2 per thread)");
    for (i = 0; i < T8; i++) th_flag_destroy(&args[i].done);
    pthread_mutex_destroy(&own_lock);
    gf_event_pool_destroy(events);
    gf_stream_pool_destroy(pool);
}

/* ---- main ----------------------------------------------------------------------------------------- */
/* ---- interop and memory (issue 11) ----------------------------------------------------------- */
static void test_views(void)
{
    gf_stream *s = mk_stream("views");
    gf_buffer *b = mk_buffer(4096), *v = NULL, *w = NULL, *vv = NULL;
    unsigned char h[4096] = { 0 };
    int ok;
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x11, 4096), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_view(b, 1024, 1024, &v), GF_OK);
    CHECK(gf_buffer_size(v) == 1024, "views: a view has its own size");
    CHECK_EQ_RESULT(gf_fill_async(s, v, 0, 0x22, 1024), GF_OK);           /* the view's first byte is 1024 */
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(h, b, 0, 4096), GF_OK);
    CHECK(all_bytes(h, 1024, 0x11) && all_bytes(h + 1024, 1024, 0x22) && all_bytes(h + 2048, 2048, 0x11),
          "views: a fill through a view writes exactly its window of the parent");
    CHECK_EQ_RESULT(gf_copy_to_host(h, v, 0, 1024), GF_OK);
    CHECK(all_bytes(h, 1024, 0x22), "views: a read through a view reads its window");
    if (C.mod) {   /* a kernel sees the view's first byte */
        CHECK_EQ_RESULT(gf_buffer_view(b, 2048, 256, &w), GF_OK);
        CHECK_EQ_RESULT(launch_u32(s, C.k_fill, w, 64, 0x5a5a5a5au), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(h, b, 0, 4096), GF_OK);
        CHECK(all_bytes(h + 2048, 256, 0x5a) && h[2047] == 0x22 && h[2048 + 256] == 0x11, "views: a kernel given a view writes at the view's offset");
    }
    CHECK_FAIL(gf_buffer_view(b, 4000, 200, &vv), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_buffer_view(b, SIZE_MAX, 2, &vv), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_buffer_view(b, 0, 0, &vv), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_view(v, 0, 16, &vv), GF_ERROR_INVALID_ARGUMENT);   /* a view of a view */
    CHECK(vv == NULL, "views: refused views hand nothing out");
    {   /* a view destroyed first leaves its parent whole */
        gf_buffer *tmp = NULL;
        CHECK_EQ_RESULT(gf_buffer_view(b, 0, 64, &tmp), GF_OK);
        gf_buffer_destroy(tmp);
        CHECK(gf_buffer_size(b) == 4096 && gf_fill_async(s, b, 0, 0x11, 64) == GF_OK, "views: destroying a view leaves its parent live");
    }
    gf_buffer_destroy(b);                       /* the parent first: its views keep the memory */
    CHECK_EQ_RESULT(gf_fill_async(s, v, 0, 0x33, 1024), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    ok = gf_copy_to_host(h, v, 0, 1024) == GF_OK && all_bytes(h, 1024, 0x33);
    CHECK(ok, "views: a view outlives its destroyed parent's handle and still works");
    gf_buffer_destroy(v);
    if (w) gf_buffer_destroy(w);
    gf_stream_destroy(s);
}

static void test_wide_fills(void)
{
    gf_stream *s = mk_stream("fills");
    gf_buffer *b = mk_buffer(1024);
    uint16_t h16[512] = { 0 };
    uint32_t h32[256] = { 0 };
    int i, ok16 = 1, ok32 = 1;
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0, 1024), GF_OK);
    CHECK_EQ_RESULT(gf_fill16_async(s, b, 2, 0xbeef, 100), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(h16, b, 0, sizeof h16), GF_OK);
    for (i = 0; i < 512; i++) ok16 &= h16[i] == ((i >= 1 && i <= 100) ? 0xbeef : 0);
    CHECK(ok16, "fill16: exactly count values from the offset");
    CHECK_EQ_RESULT(gf_fill32_async(s, b, 0, 0xdeadbeefu, 256), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(h32, b, 0, sizeof h32), GF_OK);
    for (i = 0; i < 256; i++) ok32 &= h32[i] == 0xdeadbeefu;
    CHECK(ok32, "fill32: the whole buffer");
    CHECK_FAIL(gf_fill16_async(s, b, 1, 1, 4), GF_ERROR_INVALID_ARGUMENT);          /* misaligned */
    CHECK_FAIL(gf_fill32_async(s, b, 2, 1, 4), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_fill32_async(s, b, 0, 1, 257), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_fill32_async(s, b, 0, 1, SIZE_MAX / 2), GF_ERROR_OUT_OF_RANGE);    /* count * 4 overflows */
    CHECK_FAIL(gf_fill16_async(s, b, 0, 1, 0), GF_ERROR_INVALID_ARGUMENT);
    {   /* through a view at byte 3: alignment counts from the memory's start (3 + 1 = 4), on every
           backend (OpenCL asserted on the view's own offset and aborted) */
        gf_buffer *v = NULL;
        CHECK_EQ_RESULT(gf_buffer_view(b, 3, 64, &v), GF_OK);
        CHECK_EQ_RESULT(gf_fill32_async(s, v, 1, 0x01020304u, 2), GF_OK);
        CHECK_EQ_RESULT(gf_fill16_async(s, v, 9, 0xabcd, 1), GF_OK);
        CHECK_FAIL(gf_fill32_async(s, v, 0, 1, 1), GF_ERROR_INVALID_ARGUMENT);     /* byte 3 */
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(h32, b, 0, sizeof h32), GF_OK);
        CHECK(h32[0] == 0xdeadbeefu && h32[1] == 0x01020304u && h32[2] == 0x01020304u && (h32[3] & 0xffffu) == 0xabcd &&
              h32[4] == 0xdeadbeefu, "fill32 and fill16 through a view at byte 3: the values where the offsets say");
        gf_buffer_destroy(v);
    }
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

static void test_copy_2d(void)
{
    enum { W = 24, H = 10, HP = 32, DP = 40 };
    gf_stream *s = mk_stream("2d");
    gf_buffer *d = mk_buffer(DP * H), *e = mk_buffer(DP * H);
    unsigned char host[HP * H] = { 0 }, back[HP * H] = { 0 }, raw[DP * H] = { 0 };
    gf_copy_2d c;
    int x, y, ok = 1;
    for (y = 0; y < H; y++) for (x = 0; x < HP; x++) host[y * HP + x] = (unsigned char)(y * 16 + x);
    CHECK_EQ_RESULT(gf_fill_async(s, d, 0, 0xee, DP * H), GF_OK);
    memset(&c, 0, sizeof c);
    c.dst = d; c.dst_offset = 4; c.dst_pitch = DP;
    c.src_host = host; c.src_pitch = HP;
    c.width = W; c.height = H - 1;       /* the last row of d stays 0xee past offset 4 */
    CHECK_EQ_RESULT(gf_copy_2d_async(s, &c), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(raw, d, 0, sizeof raw), GF_OK);
    for (y = 0; y < H; y++) for (x = 0; x < DP; x++) {
        unsigned char want = (y < H - 1 && x >= 4 && x < 4 + W) ? (unsigned char)(y * 16 + x - 4) : 0xee;
        ok &= raw[y * DP + x] == want;
    }
    CHECK(ok, "copy_2d: host to device writes each row at the pitch and nothing between");
    memset(&c, 0, sizeof c);               /* device to device, then back to the host */
    c.dst = e; c.dst_pitch = DP; c.src = d; c.src_offset = 4; c.src_pitch = DP; c.width = W; c.height = H - 1;
    CHECK_EQ_RESULT(gf_copy_2d_async(s, &c), GF_OK);
    memset(&c, 0, sizeof c);
    memset(back, 0, sizeof back);
    c.dst_host = back; c.dst_pitch = HP; c.src = e; c.src_pitch = DP; c.width = W; c.height = H - 1;
    CHECK_EQ_RESULT(gf_copy_2d_async(s, &c), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    ok = 1;
    for (y = 0; y < H - 1; y++) for (x = 0; x < HP; x++) ok &= back[y * HP + x] == (x < W ? host[y * HP + x] : 0);
    CHECK(ok, "copy_2d: device to device and device to host keep the rows");
    /* one buffer on both sides: rows that share no byte are copied (it was refused outright, an
       outside review found: views of one buffer were accepted), rows that do are refused */
    memset(&c, 0, sizeof c);
    c.dst = e; c.dst_offset = DP + W; c.dst_pitch = DP; c.src = e; c.src_pitch = DP; c.width = DP - W; c.height = 2;
    CHECK_EQ_RESULT(gf_copy_2d_async(s, &c), GF_OK);   /* rows 0-1, bytes 0..15 to rows 1-2, bytes 24..39 */
    c.dst_offset = 1; c.width = W; c.height = 1;
    CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(gf_last_error(), "share bytes") != NULL, "copy_2d: one buffer whose rows overlap is refused, said why");
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(raw, e, 0, sizeof raw), GF_OK);
    ok = 1;
    for (y = 1; y < 3; y++) for (x = 0; x < DP - W; x++) ok &= raw[y * DP + W + x] == (x < W ? host[(y - 1) * HP + x] : 0);
    CHECK(ok, "copy_2d: within one buffer, rows that share no byte arrive");
    memset(&c, 0, sizeof c);               /* bad input: each refused, nothing enqueued */
    c.dst = d; c.dst_pitch = 8; c.src_host = host; c.src_pitch = HP; c.width = W; c.height = 2;
    CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_INVALID_ARGUMENT);             /* pitch < width */
    c.dst_pitch = DP; c.height = H + 1;
    CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_OUT_OF_RANGE);                 /* past the end */
    c.height = SIZE_MAX / 2; 
    CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_OUT_OF_RANGE);                 /* extent overflows */
    c.height = 2; c.dst_host = back;
    CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_INVALID_ARGUMENT);             /* two destinations */
    c.dst = NULL;
    CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_INVALID_ARGUMENT);             /* host to host */
    c.dst = d; c.dst_host = NULL; c.width = 0;
    CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_2d_async(s, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(stream_usable(s, "copy_2d: the stream works after the refusals"), "copy_2d: usable");
    gf_buffer_destroy(d);
    gf_buffer_destroy(e);
    gf_stream_destroy(s);
}

static void test_record_stream(void)
{
    gf_stream *a = mk_stream("owner"), *b = mk_stream("user");
    gf_buffer *buf = NULL, *next = NULL;
    th_gate gate;
    unsigned char h[256] = { 0 };   /* written by the copy, on the stream's thread */
    th_gate_init(&gate);
    CHECK_EQ_RESULT(gf_buffer_create_async(a, 256, &buf), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(a, buf, 0, 0x77, 256), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_stream(b, a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(b, th_gate_cb, &gate), GF_OK);   /* b's read is held up */
    CHECK_EQ_RESULT(gf_copy_to_host_async(b, h, buf, 0, 256), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_record_stream(buf, b), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_destroy_async(a, buf), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create_async(a, 256, &next), GF_OK);          /* may reuse the memory... */
    CHECK_EQ_RESULT(gf_fill_async(a, next, 0, 0x99, 256), GF_OK);           /* ...but only after b's read */
    th_sleep_ms(30);
    th_gate_open(&gate);
    CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(a), GF_OK);
    CHECK(all_bytes(h, 256, 0x77), "record_stream: memory freed on one stream is not reused before another stream's recorded work is done");
    CHECK_FAIL(gf_buffer_record_stream(NULL, a), GF_ERROR_INVALID_HANDLE);
    CHECK_EQ_RESULT(gf_buffer_destroy_async(a, next), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(a), GF_OK);
    gf_stream_destroy(a);
    gf_stream_destroy(b);
    th_gate_destroy(&gate);
}

static void test_memory_stats(void)
{
    gf_memory_stats st = {0}, st2 = {0};
    gf_buffer *b = NULL, *over = NULL;
    void *pinned = NULL;
    uint64_t base;
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &st), GF_OK);
    base = st.kind[GF_MEMORY_DEVICE].bytes;
    CHECK_EQ_RESULT(gf_buffer_create(C.dev, 1 << 20, &b), GF_OK);
    CHECK_EQ_RESULT(gf_host_alloc(C.dev, 4096, &pinned), GF_OK);
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &st2), GF_OK);
    CHECK(st2.kind[GF_MEMORY_DEVICE].bytes == base + (1 << 20) && st2.kind[GF_MEMORY_DEVICE].count == st.kind[GF_MEMORY_DEVICE].count + 1,
          "memory stats: a device buffer is counted");
    CHECK(st2.kind[GF_MEMORY_PINNED].bytes == st.kind[GF_MEMORY_PINNED].bytes + 4096, "memory stats: pinned memory is counted");
    gf_buffer_destroy(b);
    gf_host_free(C.dev, pinned);
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &st2), GF_OK);
    CHECK(st2.kind[GF_MEMORY_DEVICE].bytes == base && st2.kind[GF_MEMORY_DEVICE].peak_bytes >= base + (1 << 20),
          "memory stats: freeing lowers the current figure, the peak stays");
    CHECK_EQ_RESULT(gf_device_reset_peak(C.dev), GF_OK);
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &st2), GF_OK);
    CHECK(st2.kind[GF_MEMORY_DEVICE].peak_bytes == base, "memory stats: reset_peak brings peaks to the current use");
    /* a limit below what is in use is refused; memory kept only for reuse would go back first */
    CHECK_EQ_RESULT(gf_device_trim(C.dev, 0), GF_OK);
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &st2), GF_OK);
    CHECK_FAIL(gf_device_set_memory_limit(C.dev, st2.device_bytes ? (size_t)st2.device_bytes - 1 : 0), st2.device_bytes ? GF_ERROR_INVALID_ARGUMENT : GF_OK);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(C.dev, (size_t)st2.device_bytes + (2 << 20)), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(C.dev, 1 << 20, &b), GF_OK);
    CHECK_FAIL(gf_buffer_create(C.dev, 2 << 20, &over), GF_ERROR_OUT_OF_MEMORY);
    CHECK(strstr(gf_last_error(), "limit") != NULL, "memory limit: the refusal names the limit");
    CHECK_EQ_RESULT(gf_device_set_memory_limit(C.dev, 0), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(C.dev, 2 << 20, &over), GF_OK);
    gf_buffer_destroy(over);
    gf_buffer_destroy(b);
    {   /* trim gives cached stream-ordered memory back */
        gf_stream *s = mk_stream("trim");
        gf_buffer *a = NULL;
        CHECK_EQ_RESULT(gf_buffer_create_async(s, 1 << 20, &a), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_destroy_async(s, a), GF_OK);
        CHECK_EQ_RESULT(gf_device_trim(C.dev, 0), GF_OK);
        CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &st2), GF_OK);
        CHECK(st2.kind[GF_MEMORY_CACHED].bytes == 0 && st2.kind[GF_MEMORY_ASYNC].bytes == 0, "trim: nothing stays cached");
        gf_stream_destroy(s);
    }
    CHECK_SETS_ERROR(gf_host_free(C.dev, (void *)&st));   /* not from gf_host_alloc */
    CHECK_FAIL(gf_device_memory_stats(C.dev, NULL), GF_ERROR_INVALID_ARGUMENT);
}

static void test_interop(void)
{
    gf_stream *s = mk_stream("interop");
    gf_buffer *b = mk_buffer(256), *w = NULL;
    gf_event *ev = NULL;
    gf_stream *ws = NULL;
    int stub = C.backend == GF_BACKEND_STUB;
    CHECK_EQ_RESULT(gf_event_create(C.dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK(gf_buffer_native(b) != 0, "interop: a buffer has a native handle (the host pointer on the stub)");
    CHECK(stub ? gf_stream_native(s) == NULL : gf_stream_native(s) != NULL, "interop: a stream's native handle (none on the stub)");
    if (C.backend != GF_BACKEND_HIP)   /* HIP's is a device index: 0 is a fine one */
        CHECK(stub ? gf_device_native(C.dev) == NULL : gf_device_native(C.dev) != NULL, "interop: a device's native handle");
    CHECK(stub ? gf_event_native(ev) == NULL : gf_event_native(ev) != NULL, "interop: an event's native handle (of its latest record on OpenCL)");
    if (C.mod) CHECK(stub ? gf_kernel_native(C.k_fill) == NULL : gf_kernel_native(C.k_fill) != NULL, "interop: a kernel's native handle");
    CHECK(gf_stream_native(NULL) == NULL && gf_buffer_native(NULL) == 0, "interop: bad handles give NULL and set the error");
    /* wrapping: a native stream and buffer of this device become gpuflow objects */
    if (stub) {
        static unsigned char mem[128];
        CHECK_FAIL(gf_stream_wrap(C.dev, (void *)&mem, NULL, &ws), GF_ERROR_NOT_SUPPORTED);
        CHECK_EQ_RESULT(gf_buffer_wrap(C.dev, (uint64_t)(uintptr_t)mem, sizeof mem, &w), GF_OK);
    } else {
        CHECK_EQ_RESULT(gf_stream_wrap(C.dev, gf_stream_native(s), NULL, &ws), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_wrap(C.dev, gf_buffer_native(b), 256, &w), GF_OK);
    }
    if (w) {
        unsigned char h[128] = { 0 };
        gf_stream *use = ws ? ws : s;
        CHECK_EQ_RESULT(gf_fill_async(use, w, 0, 0x6b, 128), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host_async(use, h, w, 0, 128), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(use), GF_OK);
        CHECK(all_bytes(h, 128, 0x6b), "interop: gpuflow work on wrapped objects");
        gf_buffer_destroy(w);   /* leaves the memory to its owner */
    }
    if (ws) gf_stream_destroy(ws);   /* leaves the native stream alive: s still works */
    CHECK(stream_usable(s, "interop: the native stream survives its wrapper's destroy"), "interop: usable");
    CHECK(stub || buffer_is_u32(b, 1, 0x6b6b6b6bu, "interop: the wrapped buffer's owner sees the writes"), "interop: owner");
    CHECK_FAIL(gf_stream_wrap(C.dev, NULL, NULL, &ws), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_wrap(C.dev, 0, 16, &w), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_wrap(C.dev, 1, 0, &w), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_device_open_native(C.backend, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    {   /* a refused gf_device_get_native leaves zeros, not what was there (the analyzer's path:
           a failed call, then its output opened) */
        gf_native_device junk;
        memset(&junk, 0xab, sizeof junk);
        CHECK_FAIL(gf_device_get_native(NULL, &junk), GF_ERROR_INVALID_HANDLE);
        CHECK(!junk.context && !junk.device && !junk.ordinal, "interop: a refused gf_device_get_native zeroes its output");
    }
    if (stub) {
        gf_native_device nd;
        gf_device *d2 = NULL;
        memset(&nd, 0, sizeof nd);
        CHECK_FAIL(gf_device_open_native(GF_BACKEND_STUB, &nd, &d2), GF_ERROR_NOT_SUPPORTED);
    } else {   /* a second gpuflow device on this one's native device; closing it leaves ours working */
        gf_native_device nd;
        gf_device *d2 = NULL;
        gf_buffer *x = NULL;
        CHECK_EQ_RESULT(gf_device_get_native(C.dev, &nd), GF_OK);
        CHECK_EQ_RESULT(gf_device_open_native(C.backend, &nd, &d2), GF_OK);
        if (d2) {
            CHECK_EQ_RESULT(gf_buffer_create(d2, 64, &x), GF_OK);
            if (x) gf_buffer_destroy(x);
            gf_device_close(d2);
        }
        CHECK(stream_usable(s, "interop: closing a device opened on ours leaves ours working"), "interop: native open");
    }
    gf_event_destroy(ev);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

/* ---- graphs and flows (issue 12) -------------------------------------------------------------- */
static void temp_path(char *path, size_t cap, const char *what)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, cap, "%s/gpuflow_%s_%s_%ld", dir && *dir ? dir : "/tmp", what, C.name, (long)getpid());
}

typedef struct { gf_buffer *a, *b; size_t bytes; gf_buffer **made; } pool_capture;
static gf_result capture_alloc_fill(gf_stream *s, void *user)   /* allocates inside the capture */
{
    pool_capture *pc = (pool_capture *)user;
    gf_result r = gf_buffer_create_async(s, pc->bytes, pc->made);
    if (r == GF_OK) r = gf_fill_async(s, *pc->made, 0, 0x42, pc->bytes);
    if (r == GF_OK) r = gf_copy_buffer_async(s, pc->a, 0, *pc->made, 0, 64);
    if (r == GF_OK) r = gf_buffer_destroy_async(s, *pc->made);
    return r;
}

static void test_graph_pools(void)
{
    const size_t big = (size_t)8 << 20;
    gf_stream *s = mk_stream("pooled");
    gf_graph_pool *pool = NULL;
    gf_graph *g1 = NULL, *g2 = NULL, *g3 = NULL, *g4 = NULL;
    gf_buffer *out1 = mk_buffer(64), *out2 = mk_buffer(64), *m1 = NULL, *m2 = NULL;
    gf_memory_stats before = {0}, pooled = {0}, privately = {0};
    gf_capture_desc d;
    pool_capture pc;
    unsigned char h[64] = { 0 };
    CHECK_EQ_RESULT(gf_graph_pool_create(C.dev, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_device_trim(C.dev, 0), GF_OK);
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &before), GF_OK);
    memset(&d, 0, sizeof d);
    d.mode = GF_CAPTURE_RELAXED;
    d.pool = pool;
    pc.a = out1; pc.bytes = big; pc.made = &m1;
    CHECK_EQ_RESULT(gf_graph_capture_desc(s, &d, capture_alloc_fill, &pc, &g1), GF_OK);
    pc.a = out2; pc.made = &m2;
    CHECK_EQ_RESULT(gf_graph_capture_desc(s, &d, capture_alloc_fill, &pc, &g2), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g1, s), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g2, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &pooled), GF_OK);
    CHECK(pooled.kind[GF_MEMORY_DEVICE].bytes - before.kind[GF_MEMORY_DEVICE].bytes == big,
          "graph pool: two graphs each allocating 8 MiB in one pool hold 8 MiB together");
    CHECK_EQ_RESULT(gf_copy_to_host(h, out2, 0, 64), GF_OK);
    CHECK(all_bytes(h, 64, 0x42), "graph pool: the pooled graphs run and compute");
    CHECK_SETS_ERROR(gf_graph_pool_destroy(pool));         /* graphs alive: refused, pool kept */
    /* private: the same two captures without a pool hold 16 MiB */
    d.pool = NULL;
    pc.a = out1; pc.made = &m1;
    CHECK_EQ_RESULT(gf_graph_capture_desc(s, &d, capture_alloc_fill, &pc, &g3), GF_OK);
    pc.a = out2; pc.made = &m2;
    CHECK_EQ_RESULT(gf_graph_capture_desc(s, &d, capture_alloc_fill, &pc, &g4), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g3, s), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g4, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &privately), GF_OK);
    if (!C.info.native_graphs)   /* a native graph's memory nodes are the driver's, not counted here */
        CHECK(privately.kind[GF_MEMORY_DEVICE].bytes - pooled.kind[GF_MEMORY_DEVICE].bytes == 2 * big,
              "graph pool: the same graphs without a pool hold their memory each");
    gf_graph_destroy(g3);
    gf_graph_destroy(g4);
    gf_graph_destroy(g1);
    gf_graph_destroy(g2);
    gf_graph_pool_destroy(pool);
    CHECK_EQ_RESULT(gf_device_memory_stats(C.dev, &pooled), GF_OK);
    CHECK(pooled.kind[GF_MEMORY_DEVICE].bytes == before.kind[GF_MEMORY_DEVICE].bytes, "graph pool: destroying the graphs and the pool gives the memory back");
    CHECK_FAIL(gf_stream_begin_capture_pool(s, GF_CAPTURE_GLOBAL, (gf_graph_pool *)out1), GF_ERROR_INVALID_HANDLE);
    gf_buffer_destroy(out1);
    gf_buffer_destroy(out2);
    gf_stream_destroy(s);
}

typedef struct { gf_buffer *b; uint32_t n, v; } kernel_capture;
static gf_result capture_two_launches(gf_stream *s, void *user)
{
    kernel_capture *kc = (kernel_capture *)user;
    gf_result r = launch_u32(s, C.k_fill, kc->b, kc->n, kc->v);
    return r == GF_OK ? launch_u32(s, C.k_add, kc->b, kc->n, 1) : r;
}

static void test_graph_kernel_args(void)
{
    gf_stream *s = mk_stream("args");
    gf_buffer *b = mk_buffer(64 * sizeof(uint32_t)), *other = mk_buffer(64 * sizeof(uint32_t));
    gf_graph *g = NULL;
    gf_graph_info info = {0};
    gf_arg args[3];
    kernel_capture kc;
    uint32_t n = 64, v = 10;
    char path[256];
    size_t len = 0;
    char *text;
    if (!C.mod) { SKIP("no test kernels on this backend"); gf_buffer_destroy(b); gf_buffer_destroy(other); gf_stream_destroy(s); return; }
    kc.b = b; kc.n = n; kc.v = v;
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, capture_two_launches, &kc, &g), GF_OK);
    CHECK_EQ_RESULT(gf_graph_info(g, &info), GF_OK);
    CHECK(info.launches == 2, "set_kernel_args: the graph counts its launches");
    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(buffer_is_u32(b, n, 11, "set_kernel_args: as captured, fill 10 then add 1"), "captured");
    v = 20;   /* launch 0: another value, and the other buffer */
    args[0].value = 0; args[0].size = 0; args[0].buffer = other;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &v; args[2].size = sizeof v; args[2].buffer = 0;
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 0, args, 3), GF_OK);
    args[0].buffer = other;
    v = 5;
    CHECK_EQ_RESULT(gf_graph_set_kernel_args(g, 1, args, 3), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(buffer_is_u32(other, n, 25, "set_kernel_args: both launches take their new arguments"), "updated");
    CHECK(buffer_is_u32(b, n, 11, "set_kernel_args: the old buffer is left alone"), "old");
    CHECK_FAIL(gf_graph_set_kernel_args(g, 2, args, 3), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_graph_set_kernel_args(g, -1, args, 3), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_graph_set_kernel_args(g, 0, args, 2), GF_ERROR_INVALID_ARGUMENT);
    args[1].size = 8;
    CHECK_FAIL(gf_graph_set_kernel_args(g, 0, args, 3), GF_ERROR_INVALID_ARGUMENT);   /* size differs */
    args[1].size = sizeof n; args[0].buffer = 0; args[0].value = &n; args[0].size = sizeof n;
    CHECK_FAIL(gf_graph_set_kernel_args(g, 0, args, 3), GF_ERROR_INVALID_ARGUMENT);   /* kind differs */
    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);                                     /* unchanged by refusals */
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(buffer_is_u32(other, n, 25, "set_kernel_args: refused changes change nothing"), "refused");
    temp_path(path, sizeof path, "graph.dot");
    CHECK_EQ_RESULT(gf_graph_write_dot(g, path), GF_OK);
    text = read_file(path, &len);
    CHECK(text && strstr(text, "digraph") && (C.info.native_graphs || strstr(text, "fill_u32")), "graph DOT: a digraph naming its launches");
    free(text);
    remove(path);
    gf_graph_destroy(g);
    gf_buffer_destroy(b);
    gf_buffer_destroy(other);
    gf_stream_destroy(s);
}

typedef struct { gf_buffer *b; size_t at; unsigned char v; } flow_fill;
static gf_result flow_fill_task(gf_stream *s, void *user)
{
    flow_fill *ff = (flow_fill *)user;
    return gf_fill_async(s, ff->b, ff->at, ff->v, 64);
}

static void test_flow_tasks(void)
{
    gf_stream_pool_desc pd;
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_buffer *b = mk_buffer(256);
    gf_task_desc td;
    gf_task t[4];
    gf_flow_stats st = {0};
    flow_fill ff[4];
    th_flag done;
    unsigned char h[256] = { 0 };
    char path[256];
    size_t len = 0;
    char *text;
    int i;
    th_flag_init(&done);
    memset(&pd, 0, sizeof pd);
    pd.count = 6;
    pd.strategy = GF_POOL_WORKLOAD;
    CHECK_EQ_RESULT(gf_stream_pool_create(C.dev, &pd, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_flow_create(C.dev, NULL, &flow), GF_OK);
    for (i = 0; i < 4; i++) {
        static const char *names[4] = { "upload", "simulate", "shade", "readback" };
        ff[i].b = b; ff[i].at = (size_t)i * 64; ff[i].v = (unsigned char)(i + 1);
        memset(&td, 0, sizeof td);
        td.name = names[i];
        td.fn = flow_fill_task;
        td.user = &ff[i];
        td.workload = i == 0 || i == 3 ? GF_WORKLOAD_MEMORY : GF_WORKLOAD_COMPUTE;
        td.priority = i == 1 ? GF_PRIORITY_HIGH : GF_PRIORITY_NORMAL;
        td.on_complete = th_flag_cb;
        td.on_complete_user = &done;
        CHECK_EQ_RESULT(gf_flow_add_desc(flow, &td, &t[i]), GF_OK);
    }
    CHECK_EQ_RESULT(gf_flow_depend(flow, t[0], t[1]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, t[0], t[2]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, t[1], t[3]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, t[2], t[3]), GF_OK);
    CHECK_EQ_RESULT(gf_profiler_enable(C.dev, GF_PROFILE_ON), GF_OK);
    CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
    /* runs are not ordered with each other, and the second writes the bytes the first wrote:
       without this wait, two lanes' fills of the same bytes may run at once (TSan saw it) */
    CHECK_EQ_RESULT(gf_flow_wait_frames(flow, 0, TH_WAIT_MS), GF_OK);
    CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
    CHECK(th_flag_wait(&done, 8, TH_WAIT_MS), "flow tasks: each task's completion callback ran once per run");
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(h, b, 0, 256), GF_OK);
    CHECK(all_bytes(h, 64, 1) && all_bytes(h + 64, 64, 2) && all_bytes(h + 128, 64, 3) && all_bytes(h + 192, 64, 4), "flow tasks: every task's work ran");
    CHECK_EQ_RESULT(gf_flow_get_stats(flow, &st), GF_OK);
    CHECK(st.runs == 2 && st.tasks_run == 8, "flow stats: runs and tasks run");
    CHECK(st.cross_edges >= 2 && st.events >= st.cross_edges / 2, "flow stats: cross-stream edges (workloads put tasks on different streams) and their events");
    CHECK(st.timed_runs == 2 && st.avg_run_ms >= 0, "flow stats: runs timed on the device with the profiler on");
    temp_path(path, sizeof path, "flow.dot");
    CHECK_EQ_RESULT(gf_flow_write_dot(flow, path), GF_OK);
    text = read_file(path, &len);
    CHECK(text && strstr(text, "digraph") && strstr(text, "\"simulate\"") && strstr(text, "cluster_lane") && strstr(text, "event"),
          "flow DOT: tasks, lanes and cross-stream events");
    free(text);
    remove(path);
    temp_path(path, sizeof path, "ranges.json");
    {
        gf_stream *s = NULL;
        CHECK_EQ_RESULT(gf_stream_pool_acquire(pool, NULL, &s), GF_OK);
        gf_range_push(s, "outer range");
        gf_range_push(s, "inner range");
        CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 9, 16), GF_OK);
        gf_range_pop(s);
        gf_range_pop(s);
        gf_range_pop(s);   /* unmatched: ignored */
        CHECK_EQ_RESULT(gf_stream_pool_release(pool, s), GF_OK);
    }
    CHECK_EQ_RESULT(gf_profiler_write_trace(C.dev, path), GF_OK);
    text = read_file(path, &len);
    CHECK(text && strstr(text, "outer range") && strstr(text, "inner range") && strstr(text, "\"shade\""),
          "ranges: user ranges and flow tasks are spans in the trace");
    free(text);
    remove(path);
    CHECK_EQ_RESULT(gf_profiler_enable(C.dev, 0), GF_OK);
    memset(&td, 0, sizeof td);
    CHECK_FAIL(gf_flow_add_desc(flow, &td, &t[0]), GF_ERROR_INVALID_ARGUMENT);        /* no fn */
    td.fn = flow_fill_task;
    td.workload = (gf_workload)99;
    CHECK_FAIL(gf_flow_add_desc(flow, &td, &t[0]), GF_ERROR_INVALID_ARGUMENT);
    gf_flow_destroy(flow);
    gf_stream_pool_destroy(pool);
    gf_buffer_destroy(b);
    th_flag_destroy(&done);
}

int main(int argc, char **argv)
{
    static const struct { const char *name; void (*fn)(void); } tests[] = {
        { "results_and_backends", test_results_and_backends },
        { "device", test_device },
        { "buffers", test_buffers },
        { "managed", test_managed },
        { "host_memory", test_host_memory },
        { "async_copies", test_async_copies },
        { "streams", test_streams },
        { "callbacks", test_callbacks },
        { "async_faithful", test_async_faithful },
        { "event_rerecord", test_event_rerecord },
        { "events", test_events },
        { "kernels", test_kernels },
        { "pool_round_robin", test_pool_round_robin },
        { "pool_least_pending", test_pool_least_pending },
        { "pool_priority_and_workload", test_pool_priority_and_workload },
        { "pool_acquire_ready", test_pool_acquire_ready },
        { "pool_completion_stats", test_pool_completion_stats },
        { "pool_destroy_on_waiter_thread", test_pool_destroy_on_waiter_thread },
        { "stream_sets", test_stream_sets },
        { "event_pools", test_event_pools },
        { "barriers", test_barriers },
        { "waiters", test_waiters },
        { "async_alloc", test_async_alloc },
        { "flows", test_flows },
        { "flow_calls_from_own_task", test_flow_calls_from_own_task },
        { "graph_replay", test_graph_replay },
        { "graph_update", test_graph_update },
        { "graph_outlives_its_objects", test_graph_outlives_its_objects },
        { "graph_capture_fn", test_graph_capture_fn },
        { "graph_fork_join", test_graph_fork_join },
        { "graph_misuse", test_graph_misuse },
        { "graph_nested_and_alloc", test_graph_nested_and_alloc },
        { "json_checker", test_json_checker },
        { "profiler", test_profiler },
        { "eight_threads", test_eight_threads },
        { "views", test_views },
        { "wide_fills", test_wide_fills },
        { "copy_2d", test_copy_2d },
        { "record_stream", test_record_stream },
        { "memory_stats", test_memory_stats },
        { "interop", test_interop },
        { "graph_pools", test_graph_pools },
        { "graph_kernel_args", test_graph_kernel_args },
        { "flow_tasks", test_flow_tasks },
    };

    const int test_count = (int)(sizeof tests / sizeof tests[0]);
    gf_result r;
    int i, k;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (i = 0; i < test_count; i++) printf("%s\n", tests[i].name);
        return 0;
    }
    C.name = argc >= 2 ? th_backend_named(argv[1], &C.backend) : NULL;
    for (k = 2; C.name && k < argc; k++) {   /* named tests must exist */
        for (i = 0; i < test_count && strcmp(argv[k], tests[i].name) != 0; i++) {}
        if (i == test_count) { fprintf(stderr, "%s: no test named '%s' (--list lists them)\n", argv[0], argv[k]); return 2; }
    }
    if (!C.name) {
        fprintf(stderr, "usage: %s %s [TEST...]   or   %s --list\n", argv[0], th_backend_choices(), argv[0]);
        return 2;
    }
    r = gf_device_open(C.backend, 0, &C.dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: conformance %s skipped: %s: %s\n", C.name, gf_result_name(r), gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return th_finish();
    gf_device_info(C.dev, &C.info);
    printf("conformance on %s: %s\n", C.name, gf_device_name(C.dev));
    C.scratch = mk_buffer(256);

    load_kernels();   /* every test that launches reads C.mod */
    for (i = 0; i < test_count; i++) {
        int wanted = argc <= 2, k;
        for (k = 2; k < argc && !wanted; k++) wanted = strcmp(argv[k], tests[i].name) == 0;
        if (wanted) tests[i].fn();
    }
    if (C.mod) gf_module_destroy(C.mod);
    gf_buffer_destroy(C.scratch);
    gf_device_close(C.dev);
    return th_finish();
}
