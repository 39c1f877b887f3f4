/* Bad input, on the stub: every refused call must return its specific code, set a fresh
   gf_last_error() text, and leave every object as it was (checked by using the objects
   afterwards). CHECK_FAIL is two checks: the code, and the message.

   Codes (gpuflow.h's CONVENTIONS and each group's notes): NULL, wrong-type or destroyed
   handle (a graph; any object under GPUFLOW_DEBUG, which conformance_debug runs) -> INVALID_HANDLE; NULL out-pointer, zero size, zero dims, count <= 0,
   unknown enum -> INVALID_ARGUMENT; offset + size past the end -> OUT_OF_RANGE; objects of
   two devices -> WRONG_DEVICE; and the pool, event and flow rules named at each case. */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include <limits.h>
#include "harness.h"
#include "test_kernels.h"

static gf_device *dev, *dev2;            /* two stub devices: for WRONG_DEVICE */
static gf_stream *s, *s2;                /* s on dev, s2 on dev2 */
static gf_buffer *b, *b2;                /* 16 bytes each, b on dev, b2 on dev2 */
static gf_event *ev, *ev2;
static unsigned char pattern[16];

static void noop_cb(void *user, gf_result status) { (void)user; (void)status; }
static gf_result failing_capture(gf_stream *st, void *user)
{
    (void)user;
    gf_fill_async(st, b, 0, 0x5f, 16);
    return GF_ERROR_INVALID_STATE;
}

/* b still holds pattern, and s still works. */
static void b_unchanged(const char *what)
{
    unsigned char h[16];
    memset(h, 0, sizeof h);
    CHECK(gf_copy_to_host(h, b, 0, 16) == GF_OK && memcmp(h, pattern, 16) == 0, what);
}
static void stream_works(gf_stream *st, const char *what)
{
    unsigned char h[16];
    gf_buffer *tmp = NULL;
    int ok = gf_buffer_create(gf_stream_device(st), 16, &tmp) == GF_OK;
    memset(h, 0, sizeof h);
    ok = ok && gf_fill_async(st, tmp, 0, 0x6b, 16) == GF_OK && gf_copy_to_host_async(st, h, tmp, 0, 16) == GF_OK &&
         gf_stream_synchronize(st) == GF_OK && h[0] == 0x6b && h[15] == 0x6b;
    CHECK(ok, what);
    gf_buffer_destroy(tmp);
}

static void test_results_and_devices(void)
{
    gf_device *d = NULL;
    gf_device_info info = {0};
    size_t fr, tot;
    const char *n;
    gf_result r;

    n = gf_result_name((gf_result)12345);
    CHECK(n != NULL && n[0], "gf_result_name of an unknown code is a string");
    n = gf_backend_name((gf_backend)99);
    CHECK(n != NULL && n[0], "gf_backend_name of an unknown backend is a string");
    CHECK(gf_backend_available((gf_backend)99) == 0, "an unknown backend is not available");
    CHECK(!strncmp(gf_last_error(), "gf_backend_available: backend 99", 32), "an unknown backend: the text names the call");
    CHECK(gf_backend_available(GF_BACKEND_AUTO) == 1, "GF_BACKEND_AUTO is available (it finds the stub at least; it said 'backend 0 is not a gf_backend')");
    CHECK(gf_device_count((gf_backend)99) == 0, "an unknown backend has no devices");

    CHECK_FAIL(gf_device_open((gf_backend)42, 0, &d), GF_ERROR_INVALID_ARGUMENT);
    CHECK(d == NULL, "no device from a refused open");
    CHECK_FAIL(gf_device_open(GF_BACKEND_STUB, 0, NULL), GF_ERROR_INVALID_ARGUMENT);
    th_prime();
    r = gf_device_open(GF_BACKEND_STUB, 1, &d);
    CHECK(r == GF_ERROR_NO_DEVICE || r == GF_ERROR_INVALID_ARGUMENT, "stub device index 1 does not exist");
    th_check_error_set(__FILE__, __LINE__, "gf_device_open(STUB, 1)");
    th_prime();
    r = gf_device_open(GF_BACKEND_STUB, -1, &d);
    CHECK(r == GF_ERROR_NO_DEVICE || r == GF_ERROR_INVALID_ARGUMENT, "stub device index -1 does not exist");
    th_check_error_set(__FILE__, __LINE__, "gf_device_open(STUB, -1)");

    CHECK_QUIET(gf_device_close(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_device_close((gf_device *)s));
    CHECK(gf_device_backend(NULL) != GF_BACKEND_STUB, "gf_device_backend(NULL) names no backend");
    n = gf_device_name(NULL);
    CHECK(n == NULL || n[0] == 0, "gf_device_name(NULL) is empty");
    CHECK_FAIL(gf_device_get_info(NULL, &info), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_device_get_info((gf_device *)b, &info), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_device_get_info(dev, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_device_memory_info(NULL, &fr, &tot), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_device_synchronize(NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_device_synchronize((gf_device *)ev), GF_ERROR_INVALID_HANDLE);
    CHECK(gf_device_get_info(dev, &info) == GF_OK && info.backend == GF_BACKEND_STUB &&
          gf_device_synchronize(dev) == GF_OK, "the device works after refused calls");
}

static void test_memory(void)
{
    gf_buffer *x = NULL;
    gf_buffer_desc d;
    void *p = NULL;
    unsigned char h[16], big[32];

    memset(h, 0xcc, sizeof h);
    memset(big, 0xdd, sizeof big);
    CHECK_FAIL(gf_buffer_create(NULL, 16, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_create((gf_device *)s, 16, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_create(dev, 0, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_create(dev, 16, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_create_desc(dev, NULL, &x), GF_ERROR_INVALID_ARGUMENT);
    memset(&d, 0, sizeof d);   /* only the size is wrong: every other field at its default */
    d.size = 0;
    d.managed = 0;
    CHECK_FAIL(gf_buffer_create_desc(dev, &d, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK(x == NULL, "no buffer from refused creates");
    CHECK_QUIET(gf_buffer_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_buffer_destroy((gf_buffer *)s));
    stream_works(s, "a stream passed to gf_buffer_destroy still works");
    CHECK(gf_buffer_size(NULL) == 0 && gf_buffer_size((gf_buffer *)s) == 0, "gf_buffer_size of a bad handle is 0");

    CHECK_FAIL(gf_host_alloc(NULL, 16, &p), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_host_alloc(dev, 0, &p), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_host_alloc(dev, 16, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(p == NULL, "no host memory from refused allocs");
    CHECK_SETS_ERROR(gf_host_free(NULL, h));

    /* synchronous copies */
    CHECK_FAIL(gf_copy_to_device(NULL, 0, h, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_device((gf_buffer *)ev, 0, h, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_device(b, 0, NULL, 4), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_to_device(b, 0, h, 0), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_to_device(b, 14, h, 4), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device(b, 16, h, 1), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device(b, 0, big, 17), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device(b, SIZE_MAX, h, 1), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device(b, 1, h, SIZE_MAX), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device(b, SIZE_MAX - 3, h, 8), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_host(h, NULL, 0, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_host(NULL, b, 0, 4), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_to_host(h, b, 0, 0), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_to_host(h, b, 13, 4), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_host(h, b, SIZE_MAX, 2), GF_ERROR_OUT_OF_RANGE);
    CHECK(h[0] == 0xcc && h[15] == 0xcc, "refused D2H copies wrote nothing to the host");

    /* asynchronous copies, fills, prefetch */
    CHECK_FAIL(gf_copy_to_device_async(NULL, b, 0, h, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_device_async((gf_stream *)b, b, 0, h, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_device_async(s, NULL, 0, h, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_device_async(s, (gf_buffer *)s, 0, h, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_device_async(s, b, 0, NULL, 4), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_to_device_async(s, b, 0, h, 0), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_to_device_async(s, b, 15, h, 2), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device_async(s, b, SIZE_MAX, h, 1), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_device_async(s, b2, 0, h, 4), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_copy_to_host_async(NULL, h, b, 0, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_host_async(s, h, NULL, 0, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_host_async(s, NULL, b, 0, 4), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_to_host_async(s, h, b, 0, 0), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_to_host_async(s, h, b, 8, 9), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_host_async(s, h, b, 2, SIZE_MAX), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_to_host_async(s, h, b2, 0, 4), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_copy_buffer_async(NULL, b, 0, b, 8, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_buffer_async(s, NULL, 0, b, 8, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_buffer_async(s, b, 0, NULL, 8, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_buffer_async(s, b, 0, (gf_buffer *)ev, 8, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_buffer_async(s, b, 0, b, 8, 0), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_copy_buffer_async(s, b, 13, b, 0, 4), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_buffer_async(s, b, 0, b, 13, 4), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_buffer_async(s, b, SIZE_MAX, b, 0, 4), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_buffer_async(s, b, 0, b, SIZE_MAX - 1, 4), GF_ERROR_OUT_OF_RANGE);
    /* between devices (valid: tests/multi_device.c): a stream of neither device, a range past the other's buffer */
    CHECK_FAIL(gf_copy_buffer_async(s2, b, 0, b, 8, 4), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_copy_buffer_async(s, b, 0, b2, SIZE_MAX - 1, 4), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_copy_buffer_async(s, b2, SIZE_MAX, b, 0, 4), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_fill_async(NULL, b, 0, 1, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_fill_async(s, NULL, 0, 1, 4), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_fill_async(s, b, 0, 1, 0), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_fill_async(s, b, 10, 1, 7), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_fill_async(s, b, SIZE_MAX, 1, 1), GF_ERROR_OUT_OF_RANGE);
    CHECK_FAIL(gf_fill_async(s, b2, 0, 1, 4), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_prefetch_async(NULL, b, 1), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_prefetch_async(s, NULL, 1), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_prefetch_async(s, b2, 1), GF_ERROR_WRONG_DEVICE);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    b_unchanged("refused copies and fills left the buffer as it was");
    CHECK(h[0] == 0xcc && h[15] == 0xcc, "refused async D2H copies wrote nothing to the host");

    /* stream-ordered allocation */
    x = NULL;
    CHECK_FAIL(gf_buffer_create_async(NULL, 16, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_create_async(s, 0, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_create_async(s, 16, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(x == NULL, "no buffer from refused async creates");
    {   /* the same bytes through a view overlap too (found by an outside tester: the stub ran
           such a copy, OpenCL failed in the driver, CUDA's is undefined) */
        gf_buffer *p = NULL, *v = NULL;
        gf_copy_2d c;
        if (CHECK_EQ_RESULT(gf_buffer_create(dev, 256, &p), GF_OK) && CHECK_EQ_RESULT(gf_buffer_view(p, 4, 128, &v), GF_OK)) {
            CHECK_FAIL(gf_copy_buffer_async(s, v, 0, p, 0, 64), GF_ERROR_INVALID_ARGUMENT);
            CHECK(strstr(gf_last_error(), "overlap") != NULL, "a copy between a view and its parent's overlapping bytes is refused");
            CHECK_EQ_RESULT(gf_copy_buffer_async(s, v, 0, p, 132, 64), GF_OK);   /* apart: taken */
            /* a range past its buffer is named first, overlapping or not (the fuzzer's model) */
            CHECK_FAIL(gf_copy_buffer_async(s, v, 100, p, 90, 61), GF_ERROR_OUT_OF_RANGE);
            memset(&c, 0, sizeof c);
            c.dst = v; c.dst_pitch = 16; c.src = p; c.src_pitch = 16; c.width = 8; c.height = 4;
            CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_INVALID_ARGUMENT);
            c.src_offset = 192;                     /* rows 192..247: apart from the view's 4..59 */
            CHECK_EQ_RESULT(gf_copy_2d_async(s, &c), GF_OK);
            /* interleaved rows share no byte: taken (a review found them refused by a span check) */
            c.dst_offset = 4; c.src_offset = 0; c.dst_pitch = c.src_pitch = 16; c.width = 8; c.height = 4;
            CHECK_EQ_RESULT(gf_copy_2d_async(s, &c), GF_OK);   /* p's 0..7, 16..23, ... into 8..15, 24..31, ... */
            c.width = 9;                            /* one byte more: row 0 of the view meets row 0's end */
            CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_INVALID_ARGUMENT);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        }
        if (v) gf_buffer_destroy(v);
        if (p) gf_buffer_destroy(p);
    }
    {   /* host rows whose pitch overflows, or spans more than host memory can, are refused like a buffer's (they were
           taken: the copy read and wrote outside host memory; found by an outside tester) */
        gf_buffer *p = NULL;
        gf_copy_2d c;
        unsigned char rows[64];
        if (CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &p), GF_OK)) {
            memset(&c, 0, sizeof c);
            c.dst = p; c.dst_pitch = 16; c.src_host = rows; c.src_pitch = SIZE_MAX; c.width = 4; c.height = 2;
            CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_OUT_OF_RANGE);
            memset(&c, 0, sizeof c);
            c.dst_host = rows; c.dst_pitch = SIZE_MAX / 2 + 1; c.src = p; c.src_pitch = 16; c.width = 4; c.height = 3;
            CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_OUT_OF_RANGE);
            c.height = 2;                           /* no overflow, but more than any host memory can be */
            CHECK_FAIL(gf_copy_2d_async(s, &c), GF_ERROR_OUT_OF_RANGE);
            CHECK(strstr(gf_last_error(), "no host memory is that large") != NULL, "host rows larger than any host memory are refused, said why");
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            gf_buffer_destroy(p);
        }
    }
    CHECK_FAIL(gf_buffer_destroy_async(NULL, b), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_destroy_async(s, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_destroy_async(s, b), GF_ERROR_INVALID_ARGUMENT);      /* not stream-ordered */
    CHECK_EQ_RESULT(gf_buffer_create_async(s, 16, &x), GF_OK);
    CHECK_FAIL(gf_buffer_destroy_async(s2, x), GF_ERROR_WRONG_DEVICE);
    CHECK(gf_fill_async(s, x, 0, 3, 16) == GF_OK && gf_buffer_destroy_async(s, x) == GF_OK &&
          gf_stream_synchronize(s) == GF_OK, "the async buffer still works after refused frees");
    {   /* memory cached only for reuse does not refuse a lower limit (found by an outside tester) */
        gf_buffer *c = NULL;
        if (CHECK_EQ_RESULT(gf_buffer_create_async(s, 1 << 20, &c), GF_OK)) {
            CHECK_EQ_RESULT(gf_buffer_destroy_async(s, c), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
            CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, 512 << 10), GF_OK);   /* below the 1 MiB cached */
            /* past the limit: the failure names the call made (it said gf_buffer_create) */
            CHECK_FAIL(gf_buffer_create_async(s, 1 << 20, &c), GF_ERROR_OUT_OF_MEMORY);
            CHECK(!strncmp(gf_last_error(), "gf_buffer_create_async:", 23), "a stream-ordered allocation past the memory limit is named as such");
            CHECK_EQ_RESULT(gf_device_set_memory_limit(dev, 0), GF_OK);
        }
    }
    b_unchanged("the plain buffer passed to destroy_async still holds its data");
    /* the stub's device addresses are host pointers: a range past the end of the address space
       (or, on a 32-bit host, above 4 GiB) was wrapped, cut to a pointer that wrote elsewhere */
    x = NULL;
    CHECK_FAIL(gf_buffer_wrap(dev, UINT64_MAX - 7, 16, &x), GF_ERROR_OUT_OF_RANGE);
    CHECK(x == NULL, "a refused wrap leaves *out NULL");
    /* a refusal of a shared helper names the call made (it said gf__copy_async) */
    CHECK_FAIL(gf_copy_buffer_async(NULL, b, 0, b, 8, 4), GF_ERROR_INVALID_HANDLE);
    CHECK(!strncmp(gf_last_error(), "gf_copy_buffer_async:", 21), "a NULL stream is named by the call made");
    CHECK_FAIL(gf_fill32_async(NULL, b, 0, 7u, 1), GF_ERROR_INVALID_HANDLE);
    CHECK(!strncmp(gf_last_error(), "gf_fill32_async:", 16), "... for a fill too");
}

static void test_streams_and_events(void)
{
    gf_stream *x = NULL;
    gf_stream_desc d;
    gf_stream_stats st = {0};
    gf_event *e = NULL;
    float ms;
    uint64_t id = 0;

    d.label = "bad";
    d.priority = (gf_priority)99;
    CHECK_FAIL(gf_stream_create(NULL, NULL, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_create((gf_device *)b, NULL, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_create(dev, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    x = (gf_stream *)&d;   /* a refused create clears *out (a bad priority left it as it was: found by review) */
    CHECK_FAIL(gf_stream_create(dev, &d, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK(x == NULL, "no stream from refused creates");
    CHECK_QUIET(gf_stream_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_stream_destroy((gf_stream *)ev));
    CHECK(gf_event_record(ev, s) == GF_OK && gf_event_synchronize(ev) == GF_OK,
          "an event passed to gf_stream_destroy still works");
    CHECK_FAIL(gf_stream_synchronize(NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_synchronize((gf_stream *)ev), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_query(NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_query((gf_stream *)b), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_wait_event(NULL, ev), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_wait_event(s, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_wait_event(s, (gf_event *)s), GF_ERROR_INVALID_HANDLE);
    (void)ev2;   /* a wait for another device's event is valid (tests/multi_device.c) */
    CHECK_FAIL(gf_stream_wait_stream(NULL, s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_wait_stream(s, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_wait_stream(s, (gf_stream *)ev), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_add_callback(NULL, noop_cb, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_add_callback(s, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_stream_get_stats(NULL, &st), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_get_stats(s, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(gf_stream_label(NULL) == NULL || gf_stream_label(NULL)[0] == 0, "gf_stream_label(NULL) is empty");
    CHECK(gf_stream_id(NULL) == 0, "gf_stream_id(NULL) is 0");
    CHECK(gf_stream_device(NULL) == NULL && gf_stream_device((gf_stream *)b) == NULL, "gf_stream_device of a bad handle is NULL");
    CHECK(gf_stream_get_stats(s, &st) == GF_OK && st.pending == 0, "refused waits and callbacks enqueued nothing");
    stream_works(s, "the stream works after refused calls");

    CHECK_FAIL(gf_event_create(NULL, 0, &e), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_create(dev, 0, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_QUIET(gf_event_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_event_destroy((gf_event *)s));
    stream_works(s, "a stream passed to gf_event_destroy still works");
    CHECK_FAIL(gf_event_record(NULL, s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_record(ev, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_record((gf_event *)b, s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_record(ev, s2), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_event_synchronize(NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_query(NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_query((gf_event *)s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_elapsed_ms(NULL, ev, &ms), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_elapsed_ms(ev, NULL, &ms), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_elapsed_ms(ev, ev, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_event_on_complete(NULL, noop_cb, NULL, &id), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_on_complete(ev, NULL, NULL, &id), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_event_on_complete((gf_event *)s, noop_cb, NULL, &id), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_cancel_wait(NULL, 1), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_cancel_wait((gf_device *)s, 1), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_cancel_wait(dev, 987654321), GF_ERROR_NOT_FOUND);
    CHECK(gf_event_record(ev, s) == GF_OK && gf_event_synchronize(ev) == GF_OK && gf_event_query(ev) == GF_OK,
          "the event works after refused calls");
}

/* A released pooled event used from another event's gf_event_on_complete callback: refused as
   anywhere else (every callback on the waiter's thread was let through, not only the event's
   own: a use after release went unseen there, while another thread might have it again). */
typedef struct released_use { gf_event *ev; gf_stream *s; gf_result query, wait, record; th_flag done; } released_use;
static void use_released_cb(void *user, gf_result status)
{
    released_use *u = (released_use *)user;
    (void)status;
    u->query = gf_event_query(u->ev);
    u->wait = gf_stream_wait_event(u->s, u->ev);
    u->record = gf_event_record(u->ev, u->s);
    th_flag_add(&u->done, 1);
}
static void released_event_in_other_callback(gf_event *released, gf_stream *on)
{
    released_use u;
    gf_event *other = NULL;   /* not from the pool: it would hand back the released one */
    memset(&u, 0, sizeof u);
    th_flag_init(&u.done);
    u.ev = released;
    u.s = on;
    if (CHECK_EQ_RESULT(gf_event_create(dev, 0, &other), GF_OK) && CHECK_EQ_RESULT(gf_event_record(other, on), GF_OK) &&
        CHECK_EQ_RESULT(gf_event_on_complete(other, use_released_cb, &u, NULL), GF_OK) &&
        CHECK(th_flag_wait(&u.done, 1, TH_WAIT_MS), "the other event's callback ran")) {
        CHECK(u.query == GF_ERROR_INVALID_STATE && u.wait == GF_ERROR_INVALID_STATE && u.record == GF_ERROR_INVALID_STATE,
              "a released event is refused in another event's callback too (query, wait, record)");
    }
    CHECK_EQ_RESULT(gf_stream_synchronize(on), GF_OK);
    gf_event_destroy(other);
    th_flag_destroy(&u.done);
}
/* ...and let through in its own callbacks, which a release with them pending waits for. */
static void query_own_cb(void *user, gf_result status)
{
    released_use *u = (released_use *)user;
    (void)status;
    u->query = gf_event_query(u->ev);
    th_flag_add(&u->done, 1);
}
static void released_event_in_own_callback(gf_event_pool *ep, gf_stream *on)
{
    released_use u;
    th_gate gate;
    memset(&u, 0, sizeof u);
    th_flag_init(&u.done);
    th_gate_init(&gate);
    u.query = GF_ERROR_INVALID_STATE;   /* what a refusal would leave */
    if (CHECK_EQ_RESULT(gf_event_pool_acquire(ep, 0, &u.ev), GF_OK) && CHECK_EQ_RESULT(gf_stream_add_callback(on, th_gate_cb, &gate), GF_OK) &&
        CHECK_EQ_RESULT(gf_event_record(u.ev, on), GF_OK) && CHECK_EQ_RESULT(gf_event_on_complete(u.ev, query_own_cb, &u, NULL), GF_OK)) {
        CHECK_EQ_RESULT(gf_event_pool_release(ep, u.ev), GF_OK);   /* its wait pending */
        th_gate_open(&gate);
        CHECK(th_flag_wait(&u.done, 1, TH_WAIT_MS) && u.query == GF_OK, "a released event's own callback may still query it");
    } else th_gate_open(&gate);
    CHECK_EQ_RESULT(gf_stream_synchronize(on), GF_OK);
    th_gate_destroy(&gate);
    th_flag_destroy(&u.done);
}

static void test_pools(void)
{
    gf_event_pool_desc ed;
    gf_event_pool *ep = NULL, *ep_other = NULL, *ep2 = NULL, *x = NULL;
    gf_event_pool_stats es, es0;
    gf_event *e = NULL, *e_other = NULL, *e_dev2 = NULL;
    gf_stream_pool_desc pd;
    gf_stream_pool *p = NULL, *p_other = NULL, *px = NULL;
    gf_stream_pool_stats ps, ps0;
    gf_acquire_hint hint;
    gf_stream *m = NULL, *m_other = NULL;
    gf_stream_set *set = NULL, *sx = NULL;
    gf_result r;

    /* zeros, not garbage, where a failing get_stats call (itself a reported failure) writes nothing */
    memset(&es, 0, sizeof es);
    memset(&es0, 0, sizeof es0);
    memset(&ps, 0, sizeof ps);
    memset(&ps0, 0, sizeof ps0);

    /* event pools */
    ed.capacity = -1;
    ed.timing_capacity = 0;
    CHECK_FAIL(gf_event_pool_create(NULL, NULL, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_create(dev, &ed, &x), GF_ERROR_INVALID_ARGUMENT);
    ed.capacity = 0;
    ed.timing_capacity = -3;
    CHECK_FAIL(gf_event_pool_create(dev, &ed, &x), GF_ERROR_INVALID_ARGUMENT);
    ed.capacity = INT_MAX;   /* made events for minutes (found by review) */
    ed.timing_capacity = 0;
    CHECK_FAIL(gf_event_pool_create(dev, &ed, &x), GF_ERROR_INVALID_ARGUMENT);
    ed.capacity = 0;
    ed.timing_capacity = GF_EVENT_POOL_MAX + 1;
    CHECK_FAIL(gf_event_pool_create(dev, &ed, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(gf_last_error(), "GF_EVENT_POOL_MAX") != NULL, "an event pool too large: the message names the limit");
    CHECK_FAIL(gf_event_pool_create(dev, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(x == NULL, "no event pool from refused creates");
    CHECK_EQ_RESULT(gf_event_pool_create(dev, NULL, &ep), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_create(dev, NULL, &ep_other), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_create(dev2, NULL, &ep2), GF_OK);
    if (!ep || !ep_other || !ep2) return;
    CHECK_FAIL(gf_event_pool_acquire(NULL, 0, &e), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_acquire((gf_event_pool *)s, 0, &e), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_acquire(ep, 0, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_RESULT(gf_event_pool_acquire(ep, 0, &e), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_acquire(ep_other, 0, &e_other), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_acquire(ep2, 0, &e_dev2), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_get_stats(ep, &es0), GF_OK);
    CHECK_FAIL(gf_event_pool_release(NULL, e), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_release(ep, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_release(ep, (gf_event *)s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_release(ep, ev), GF_ERROR_INVALID_ARGUMENT);          /* gf_event_create's */
    CHECK_FAIL(gf_event_pool_release(ep, e_other), GF_ERROR_INVALID_ARGUMENT);     /* another pool's */
    th_prime();
    r = gf_event_pool_release(ep, e_dev2);                                         /* another device's */
    CHECK(r == GF_ERROR_INVALID_ARGUMENT || r == GF_ERROR_WRONG_DEVICE, "an event of another device's pool is refused");
    th_check_error_set(__FILE__, __LINE__, "gf_event_pool_release(ep, e_dev2)");
    CHECK(gf_event_pool_get_stats(ep, &es) == GF_OK && es.in_use == es0.in_use && es.available == es0.available &&
          es.created == es0.created, "refused releases left the pool's stats as they were");
    CHECK_EQ_RESULT(gf_event_pool_release(ep, e), GF_OK);
    CHECK_FAIL(gf_event_pool_release(ep, e), GF_ERROR_INVALID_STATE);              /* twice */
    {   /* a released event is the pool's: every use of it is refused (only a record was) */
        float ms = 0;
        CHECK_FAIL(gf_event_record(e, s), GF_ERROR_INVALID_STATE);
        CHECK_FAIL(gf_stream_wait_event(s, e), GF_ERROR_INVALID_STATE);
        CHECK_FAIL(gf_event_synchronize(e), GF_ERROR_INVALID_STATE);
        CHECK_FAIL(gf_event_synchronize_timeout(e, 10), GF_ERROR_INVALID_STATE);
        CHECK_FAIL(gf_event_query(e), GF_ERROR_INVALID_STATE);
        CHECK_FAIL(gf_event_on_complete(e, noop_cb, NULL, NULL), GF_ERROR_INVALID_STATE);
        CHECK_FAIL(gf_event_elapsed_ms(e, e, &ms), GF_ERROR_INVALID_STATE);
        CHECK(strstr(gf_last_error(), "released to its pool") != NULL, "a released event's use: the refusal says why");
        released_event_in_other_callback(e, s);
        released_event_in_own_callback(ep, s);
    }
    CHECK(gf_event_pool_get_stats(ep, &es) == GF_OK && es.in_use == es0.in_use - 1 && es.available == es0.available + 1,
          "a double release did not count twice");
    CHECK_FAIL(gf_event_pool_get_stats(NULL, &es), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_get_stats(ep, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_QUIET(gf_event_pool_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_event_pool_destroy((gf_event_pool *)s));
    e = NULL;
    CHECK(gf_event_pool_acquire(ep, 0, &e) == GF_OK && gf_event_record(e, s) == GF_OK &&
          gf_event_synchronize(e) == GF_OK && gf_event_pool_release(ep, e) == GF_OK, "the event pool still works");
    CHECK_EQ_RESULT(gf_event_pool_release(ep_other, e_other), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_release(ep2, e_dev2), GF_OK);

    /* stream pools */
    memset(&pd, 0, sizeof pd);
    pd.count = -1;
    CHECK_FAIL(gf_stream_pool_create(NULL, NULL, &px), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_create(dev, &pd, &px), GF_ERROR_INVALID_ARGUMENT);
    pd.count = GF_POOL_MAX_STREAMS + 1;
    CHECK_FAIL(gf_stream_pool_create(dev, &pd, &px), GF_ERROR_INVALID_ARGUMENT);
    pd.count = 2;
    pd.strategy = (gf_pool_strategy)99;
    CHECK_FAIL(gf_stream_pool_create(dev, &pd, &px), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_stream_pool_create(dev, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(px == NULL, "no stream pool from refused creates");
    pd.strategy = GF_POOL_ROUND_ROBIN;
    pd.label = "bad-pool";
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &p), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &p_other), GF_OK);
    if (!p || !p_other) return;
    hint.priority = (gf_priority)99;
    hint.workload = GF_WORKLOAD_ANY;
    CHECK_FAIL(gf_stream_pool_acquire(NULL, NULL, &m), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_acquire((gf_stream_pool *)ep, NULL, &m), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_acquire(p, &hint, &m), GF_ERROR_INVALID_ARGUMENT);
    hint.priority = GF_PRIORITY_NORMAL;
    hint.workload = (gf_workload)99;
    CHECK_FAIL(gf_stream_pool_acquire(p, &hint, &m), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_stream_pool_acquire(p, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_stream_pool_acquire_ready(NULL, 10, &m), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_acquire_ready(p, 10, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(m == NULL, "no stream from refused acquires");
    CHECK_EQ_RESULT(gf_stream_pool_get_stats(p, &ps0), GF_OK);
    CHECK(ps0.acquisitions[0] == 0 && ps0.acquisitions[1] == 0, "refused acquires counted nothing");
    CHECK_EQ_RESULT(gf_stream_pool_acquire(p, NULL, &m), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_acquire(p_other, NULL, &m_other), GF_OK);
    CHECK_FAIL(gf_stream_pool_release(NULL, m), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_release(p, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_release(p, (gf_stream *)ev), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_release(p, s), GF_ERROR_INVALID_ARGUMENT);           /* a plain stream */
    CHECK_FAIL(gf_stream_pool_release(p, m_other), GF_ERROR_INVALID_ARGUMENT);     /* another pool's */
    CHECK_FAIL(gf_stream_pool_release(p, s2), GF_ERROR_INVALID_ARGUMENT);          /* another device's */
    CHECK_EQ_RESULT(gf_stream_pool_release(p, m), GF_OK);
    CHECK_FAIL(gf_stream_pool_release(p, m), GF_ERROR_INVALID_STATE);              /* twice */
    CHECK_EQ_RESULT(gf_stream_pool_release(p_other, m_other), GF_OK);
    /* a pool member cannot be destroyed, the second attempt neither */
    CHECK_SETS_ERROR(gf_stream_destroy(m));
    CHECK_SETS_ERROR(gf_stream_destroy(m));
    stream_works(m, "a pool stream still works after two refused destroys");
    CHECK_FAIL(gf_stream_pool_synchronize(NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_get_stats(NULL, &ps), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_get_stats(p, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_QUIET(gf_stream_pool_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_stream_pool_destroy((gf_stream_pool *)ep));
    CHECK(gf_stream_pool_get_stats(p, &ps) == GF_OK && ps.acquisitions[0] + ps.acquisitions[1] == 1,
          "the pool counted exactly the one real acquisition");
    m = NULL;
    CHECK(gf_stream_pool_acquire(p, NULL, &m) == GF_OK && gf_stream_pool_release(p, m) == GF_OK &&
          gf_stream_pool_synchronize(p) == GF_OK, "the pool still works");

    /* stream sets */
    CHECK_FAIL(gf_stream_set_create(NULL, 2, "x", &sx), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_set_create(dev, 0, "x", &sx), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_stream_set_create(dev, -2, "x", &sx), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_stream_set_create(dev, 2, "x", NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(sx == NULL, "no set from refused creates");
    CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "set", &set), GF_OK);
    if (set) {
        gf_stream *got = NULL;
        th_prime();
        CHECK(gf_stream_set_get(NULL, 0) == NULL, "gf_stream_set_get(NULL) is NULL");
        th_check_error_set(__FILE__, __LINE__, "gf_stream_set_get(NULL, 0)");
        CHECK(gf_stream_set_get((gf_stream_set *)p, 0) == NULL, "gf_stream_set_get of a pool is NULL");
        CHECK_FAIL(gf_stream_set_next(NULL, 0, &got), GF_ERROR_INVALID_HANDLE);
        CHECK_FAIL(gf_stream_set_next(set, 0, NULL), GF_ERROR_INVALID_ARGUMENT);
        CHECK_FAIL(gf_stream_set_synchronize(NULL), GF_ERROR_INVALID_HANDLE);
        CHECK_FAIL(gf_stream_set_synchronize((gf_stream_set *)p), GF_ERROR_INVALID_HANDLE);
        CHECK_QUIET(gf_stream_set_destroy(NULL));   /* as free(NULL) */
        CHECK_SETS_ERROR(gf_stream_set_destroy((gf_stream_set *)p));
        CHECK_SETS_ERROR(gf_stream_destroy(gf_stream_set_get(set, 1)));
        CHECK_SETS_ERROR(gf_stream_destroy(gf_stream_set_get(set, 1)));
        stream_works(gf_stream_set_get(set, 1), "a set stream still works after two refused destroys");
        CHECK(gf_stream_set_next(set, 3, &got) == GF_OK && got == gf_stream_set_get(set, 1) &&
              gf_stream_set_synchronize(set) == GF_OK, "the set still works");
        gf_stream_set_destroy(set);
    }
    CHECK(gf_stream_pool_synchronize(p) == GF_OK, "the pool survived refused set calls");
    gf_stream_pool_destroy(p);
    gf_stream_pool_destroy(p_other);
    gf_event_pool_destroy(ep);
    gf_event_pool_destroy(ep_other);
    gf_event_pool_destroy(ep2);
}

static void test_barriers(void)
{
    gf_stream *list[3], *typed[2];
    gf_stream *free_s = NULL;
    th_gate g;
    th_flag f;
    double ms = 0;

    th_gate_init(&g);
    th_flag_init(&f);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &free_s), GF_OK);
    list[0] = s; list[1] = free_s; list[2] = NULL;
    typed[0] = s; typed[1] = (gf_stream *)ev;
    CHECK_FAIL(gf_barrier(NULL, 1), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_barrier(list, 0), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_barrier(list, -1), GF_ERROR_INVALID_ARGUMENT);
    /* s is held by a gate: a half-done barrier would make free_s wait for it */
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &g), GF_OK);
    CHECK_FAIL(gf_barrier(list, 3), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_barrier(typed, 2), GF_ERROR_INVALID_HANDLE);
    CHECK_EQ_RESULT(gf_stream_add_callback(free_s, th_flag_cb, &f), GF_OK);
    CHECK(th_flag_wait(&f, 1, TH_WAIT_MS), "a refused barrier made no stream wait for another");
    th_gate_open(&g);
    CHECK_FAIL(gf_synchronize_all(NULL, 1, &ms), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_synchronize_all(list, 0, &ms), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_synchronize_all(list, 3, &ms), GF_ERROR_INVALID_HANDLE);
    CHECK(gf_barrier(list, 2) == GF_OK && gf_synchronize_all(list, 2, &ms) == GF_OK, "barriers work after refusals");
    gf_stream_destroy(free_s);
    th_gate_destroy(&g);
    th_flag_destroy(&f);
}

static int flow_runs;
static void count_cb(void *user, gf_result status) { (void)user; (void)status; flow_runs++; }
static gf_result count_task(gf_stream *st, void *user) { (void)user; return gf_stream_add_callback(st, count_cb, NULL); }

static void test_flows(void)
{
    gf_flow *f = NULL, *other = NULL, *x = NULL;
    gf_flow_desc fd;
    gf_task a = 0, bb = 0, c = 0, t_other = 0, t = 0;
    gf_stream_pool *pool = NULL, *pool2 = NULL;
    gf_graph *g = NULL;

    memset(&fd, 0, sizeof fd);
    fd.label = "bad-flow";
    fd.workload = (gf_workload)99;
    CHECK_FAIL(gf_flow_create(NULL, NULL, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_create(dev, &fd, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_flow_create(dev, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(x == NULL, "no flow from refused creates");
    fd.workload = GF_WORKLOAD_ANY;
    CHECK_EQ_RESULT(gf_flow_create(dev, &fd, &f), GF_OK);
    CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &other), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_create(dev2, NULL, &pool2), GF_OK);
    if (!f || !other || !pool || !pool2) return;
    CHECK_FAIL(gf_flow_add(NULL, "a", count_task, NULL, &a), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_add((gf_flow *)s, "a", count_task, NULL, &a), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_add(f, "a", NULL, NULL, &a), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_flow_add(f, "a", count_task, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_RESULT(gf_flow_add(f, "alpha", count_task, NULL, &a), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(f, "beta", count_task, NULL, &bb), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(f, "gamma", count_task, NULL, &c), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(other, "omega", count_task, NULL, &t_other), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(f, a, bb), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(f, bb, c), GF_OK);
    CHECK_FAIL(gf_flow_depend(NULL, a, bb), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_depend(f, a, a), GF_ERROR_CYCLE);                 /* self edge */
    CHECK_FAIL(gf_flow_depend(f, c, a), GF_ERROR_CYCLE);                 /* closes alpha -> beta -> gamma */
    CHECK(strstr(gf_last_error(), "alpha") && strstr(gf_last_error(), "beta") && strstr(gf_last_error(), "gamma"),
          "the cycle message names all three tasks");
    CHECK_FAIL(gf_flow_depend(f, a, c + 100), GF_ERROR_INVALID_ARGUMENT); /* out of range */
    CHECK_FAIL(gf_flow_depend(f, a, (gf_task)0xffffffffu), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_flow_depend(f, t_other, a), GF_ERROR_INVALID_ARGUMENT); /* another flow's task */
    CHECK_FAIL(gf_flow_run(NULL, pool), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_run(f, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_run(f, (gf_stream_pool *)s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_run(f, pool2), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_flow_capture(NULL, s, &g), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_capture(f, NULL, &g), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_capture(f, s, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_flow_capture(f, s2, &g), GF_ERROR_WRONG_DEVICE);
    CHECK(g == NULL, "no graph from refused flow captures");
    CHECK(flow_runs == 0, "refused runs and captures ran no task");
    stream_works(s, "the stream works after refused flow captures");
    CHECK(gf_flow_run(f, pool) == GF_OK && gf_stream_pool_synchronize(pool) == GF_OK && flow_runs == 3,
          "the flow still runs its 3 tasks");
    /* and the refused edges were not added: adding the reverse of a refused edge is fine */
    CHECK_EQ_RESULT(gf_flow_add(f, "delta", count_task, NULL, &t), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(f, t, a), GF_OK);
    CHECK_QUIET(gf_flow_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_flow_destroy((gf_flow *)pool));
    CHECK(gf_stream_pool_synchronize(pool) == GF_OK, "a pool passed to gf_flow_destroy still works");
    gf_flow_destroy(f);
    gf_flow_destroy(other);
    gf_stream_pool_destroy(pool);
    gf_stream_pool_destroy(pool2);
}

static void test_graphs(void)
{
    gf_graph *g = NULL, *g_dev2 = NULL, *dead = NULL, *x = NULL;
    gf_graph_info gi = {0};

    CHECK_FAIL(gf_stream_begin_capture(NULL, GF_CAPTURE_GLOBAL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_begin_capture((gf_stream *)b, GF_CAPTURE_GLOBAL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_begin_capture(s, (gf_capture_mode)99), GF_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_RESULT(gf_stream_query(s), GF_OK);                  /* not capturing */
    CHECK_FAIL(gf_stream_end_capture(NULL, &g), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_end_capture(s, &g), GF_ERROR_CAPTURE);   /* end without begin */
    /* NULL out while capturing: refused, and the capture goes on */
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x42, 16), GF_OK);
    CHECK_FAIL(gf_stream_end_capture(s, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    b_unchanged("the captured fill did not run");
    CHECK_EQ_RESULT(gf_stream_begin_capture(s2, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s2, b2, 0, 0x43, 16), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s2, &g_dev2), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &dead), GF_OK);
    gf_graph_destroy(dead);
    if (!g || !g_dev2) return;

    CHECK_FAIL(gf_graph_launch(NULL, s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_launch(g, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_launch((gf_graph *)s, s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_launch(dead, s), GF_ERROR_INVALID_HANDLE);        /* destroyed */
    CHECK_FAIL(gf_graph_launch(g_dev2, s), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_graph_update(NULL, g), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_update(g, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_update(g, dead), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_update(g, g_dev2), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_graph_get_info(NULL, &gi), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_get_info(g, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_graph_capture(NULL, 0, failing_capture, NULL, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_capture(s, -1, failing_capture, NULL, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_graph_capture(s, 0, NULL, NULL, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_graph_capture(s, 0, failing_capture, NULL, NULL), GF_ERROR_INVALID_ARGUMENT);
    /* a capture function that fails: its error comes back, nothing is left capturing */
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, failing_capture, NULL, &x), GF_ERROR_INVALID_STATE);
    CHECK(x == NULL, "no graph from a failed capture function");
    CHECK_EQ_RESULT(gf_stream_query(s), GF_OK);
    b_unchanged("the failed capture's fill never ran");
    CHECK_QUIET(gf_graph_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_graph_destroy(dead));
    CHECK_SETS_ERROR(gf_graph_destroy((gf_graph *)s));
    stream_works(s, "a stream passed to gf_graph_destroy still works");
    CHECK(gf_graph_get_info(g, &gi) == GF_OK && gi.nodes == 1, "the graph is unchanged by refused calls");
    gf_graph_destroy(g);
    gf_graph_destroy(g_dev2);
}

static void test_kernels_and_profiler(void)
{
    gf_module *m = NULL, *m2 = NULL, *x = NULL;
    gf_module_desc none;
    gf_kernel *k = NULL, *k2 = NULL, *kx = NULL;
    gf_launch_dims dims;
    gf_arg args[3], bad_args[3];
    uint32_t n = 4, v = 9, h[4];
    gf_profile_report *rep;

    memset(&none, 0, sizeof none);
    none.opencl_source = tk_module.opencl_source;
    CHECK_FAIL(gf_module_load(NULL, &tk_module, &x), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_module_load(dev, NULL, &x), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_module_load(dev, &tk_module, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_module_load(dev, &none, &x), GF_ERROR_NOT_SUPPORTED);
    CHECK(x == NULL, "no module from refused loads");
    CHECK_EQ_RESULT(gf_module_load(dev, &tk_module, &m), GF_OK);
    CHECK_EQ_RESULT(gf_module_load(dev2, &tk_module, &m2), GF_OK);
    if (!m || !m2) return;
    CHECK_FAIL(gf_kernel_get(NULL, "add_u32", &kx), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_kernel_get((gf_module *)s, "add_u32", &kx), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_kernel_get(m, NULL, &kx), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_kernel_get(m, "add_u32", NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_kernel_get(m, "missing", &kx), GF_ERROR_NOT_FOUND);
    CHECK(kx == NULL, "no kernel from refused gets");
    CHECK_EQ_RESULT(gf_kernel_get(m, "fill_u32", &k), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(m2, "fill_u32", &k2), GF_OK);
    if (!k || !k2) return;

    memset(&dims, 0, sizeof dims);
    dims.grid[0] = dims.grid[1] = dims.grid[2] = 1;
    dims.block[0] = 4; dims.block[1] = dims.block[2] = 1;
    args[0].value = 0; args[0].size = 0; args[0].buffer = b;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &v; args[2].size = sizeof v; args[2].buffer = 0;
    memcpy(bad_args, args, sizeof args);
    CHECK_FAIL(gf_launch(NULL, k, dims, args, 3), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_launch(s, NULL, dims, args, 3), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_launch(s, (gf_kernel *)m, dims, args, 3), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_launch(s, k2, dims, args, 3), GF_ERROR_WRONG_DEVICE);     /* kernel of dev2 */
    bad_args[0].buffer = b2;
    CHECK_FAIL(gf_launch(s, k, dims, bad_args, 3), GF_ERROR_WRONG_DEVICE);  /* buffer of dev2 */
    bad_args[0].buffer = (gf_buffer *)s;
    CHECK_FAIL(gf_launch(s, k, dims, bad_args, 3), GF_ERROR_INVALID_HANDLE);
    bad_args[0] = args[0];
    bad_args[1].value = NULL;
    CHECK_FAIL(gf_launch(s, k, dims, bad_args, 3), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_launch(s, k, dims, NULL, 3), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_launch(s, k, dims, args, -1), GF_ERROR_INVALID_ARGUMENT);
    dims.grid[0] = 0;
    CHECK_FAIL(gf_launch(s, k, dims, args, 3), GF_ERROR_INVALID_ARGUMENT);
    dims.grid[0] = 1; dims.grid[2] = 0;
    CHECK_FAIL(gf_launch(s, k, dims, args, 3), GF_ERROR_INVALID_ARGUMENT);
    dims.grid[2] = 1; dims.block[0] = 0;
    CHECK_FAIL(gf_launch(s, k, dims, args, 3), GF_ERROR_INVALID_ARGUMENT);
    dims.block[0] = 4;
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    b_unchanged("refused launches wrote nothing");
    CHECK(gf_launch(s, k, dims, args, 3) == GF_OK && gf_stream_synchronize(s) == GF_OK &&
          gf_copy_to_host(h, b, 0, sizeof h) == GF_OK && h[0] == 9 && h[3] == 9, "the kernel launches after refusals");
    {   /* a captured launch's new arguments: another device's buffer is WRONG_DEVICE, as for gf_launch (fuzzer KD3) */
        gf_graph *g = NULL;
        CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
        CHECK_EQ_RESULT(gf_launch(s, k, dims, args, 3), GF_OK);
        CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
        bad_args[0].buffer = b2;
        if (g) CHECK_FAIL(gf_graph_set_kernel_args(g, 0, bad_args, 3), GF_ERROR_WRONG_DEVICE);
        bad_args[0] = args[0];
        if (g) gf_graph_destroy(g);
    }
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, pattern, 16), GF_OK);
    CHECK_QUIET(gf_module_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_module_destroy((gf_module *)k));
    CHECK(gf_kernel_get(m, "add_u32", &kx) == GF_OK, "the module works after a refused destroy of its kernel");
    gf_module_destroy(m);
    gf_module_destroy(m2);

    rep = (gf_profile_report *)malloc(sizeof *rep);   /* here: the early returns above have nothing to free */
    CHECK_FAIL(gf_profiler_enable(NULL, GF_PROFILE_ON), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_profiler_enable((gf_device *)s, GF_PROFILE_ON), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_profiler_report(NULL, rep), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_profiler_report(dev, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_profiler_write_trace(NULL, "/tmp/x.json"), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_profiler_write_trace(dev, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK);
    th_prime();
    CHECK(gf_profiler_write_trace(dev, "/nonexistent-dir/sub/trace.json") < 0, "an unwritable trace path fails");
    th_check_error_set(__FILE__, __LINE__, "gf_profiler_write_trace(dev, unwritable)");
    CHECK(rep && gf_profiler_report(dev, rep) == GF_OK, "the profiler works after refusals");
    CHECK_EQ_RESULT(gf_profiler_enable(dev, 0), GF_OK);
    free(rep);
}

/* External memory and semaphores: bad handles, types and values; each refusal leaves nothing. */
static void test_interop(void)
{
    gf_external_memory_desc md;
    gf_semaphore_desc sd;
    gf_external_handle h;
    gf_buffer *out = (gf_buffer *)&h;     /* set to NULL by each refusal that has an out */
    gf_semaphore *sem = NULL, *sem2 = NULL;
    gf_buffer_desc bd;
    memset(&md, 0, sizeof md);
    memset(&sd, 0, sizeof sd);
    memset(&h, 0, sizeof h);
    md.type = GF_EXTERNAL_HOST_FD; md.fd = -1; md.size = 16;
    CHECK_FAIL(gf_buffer_import(NULL, &md, &out), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_import((gf_device *)s, &md, &out), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_import(dev, &md, &out), GF_ERROR_INVALID_ARGUMENT);           /* fd -1 */
    CHECK(out == NULL, "a refused import sets *out to NULL");
    md.type = (gf_external_type)-3;
    CHECK_FAIL(gf_buffer_import(dev, &md, &out), GF_ERROR_INVALID_ARGUMENT);
    md.type = GF_EXTERNAL_TYPE_COUNT;
    CHECK_FAIL(gf_buffer_import(dev, &md, &out), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_export(NULL, GF_EXTERNAL_HOST_FD, &h), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_export((gf_buffer *)ev, GF_EXTERNAL_HOST_FD, &h), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_export(b, GF_EXTERNAL_HOST_FD, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_export(b, GF_EXTERNAL_D3D12_FENCE, &h), GF_ERROR_INVALID_ARGUMENT);   /* a semaphore type */
    CHECK(h.fd == -1, "a refused export gives fd -1");
    CHECK_FAIL(gf_buffer_export(b, GF_EXTERNAL_NONE, &h), GF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(gf_last_error(), "GF_EXTERNAL_NONE") != NULL, "an export of GF_EXTERNAL_NONE says so (it said type 0 is no gf_external_type)");
    memset(&bd, 0, sizeof bd);
    bd.size = 16; bd.exportable = 1; bd.managed = 1;
    CHECK_FAIL(gf_buffer_create_desc(dev, &bd, &out), GF_ERROR_INVALID_ARGUMENT);          /* managed and exportable */
    sd.type = GF_EXTERNAL_HOST_FD; sd.fd = -1;
    CHECK_FAIL(gf_semaphore_import(NULL, &sd, &sem), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_semaphore_import(dev, NULL, &sem), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_semaphore_import(dev, &sd, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_semaphore_import(dev, &sd, &sem), GF_ERROR_INVALID_ARGUMENT);              /* fd -1 */
    sd.type = GF_EXTERNAL_D3D12_HEAP;
    CHECK_FAIL(gf_semaphore_import(dev, &sd, &sem), GF_ERROR_INVALID_ARGUMENT);              /* a memory type */
    CHECK_FAIL(gf_semaphore_create(NULL, 1, &sem), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_semaphore_create(dev, 1, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK(sem == NULL, "refused semaphore calls made none");
    if (!CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &sem), GF_OK) || !CHECK_EQ_RESULT(gf_semaphore_create(dev2, 0, &sem2), GF_OK)) return;
    CHECK_FAIL(gf_semaphore_signal_async(s2, sem, 1), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_semaphore_wait_async(s, sem2, 1), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_semaphore_signal_async((gf_stream *)b, sem, 1), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_semaphore_signal_async(s, (gf_semaphore *)ev, 1), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_semaphore_signal_async(s, sem, 0), GF_ERROR_INVALID_ARGUMENT);            /* a timeline is at 0 already */
    CHECK_FAIL(gf_semaphore_export(sem, GF_EXTERNAL_D3D12_HEAP, &h), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_semaphore_export(sem, GF_EXTERNAL_HOST_FD, NULL), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_semaphore_export((gf_semaphore *)s, GF_EXTERNAL_HOST_FD, &h), GF_ERROR_INVALID_HANDLE);
    CHECK_QUIET(gf_semaphore_destroy(NULL));   /* as free(NULL) */
    CHECK_SETS_ERROR(gf_semaphore_destroy((gf_semaphore *)b));
    b_unchanged("refused interop calls left the buffer as it was");
    stream_works(s, "refused interop calls left the stream working");
    CHECK_EQ_RESULT(gf_semaphore_signal_async(s, sem, 3), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(s, sem, 3), GF_OK);
    /* a timeline moved back by a later signal on the same stream (was accepted; found by review) */
    CHECK_FAIL(gf_semaphore_signal_async(s, sem, 3), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_semaphore_signal_async(s, sem, 2), GF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(gf_last_error(), "above 3") != NULL, "the refusal names the value to pass");
    CHECK_EQ_RESULT(gf_semaphore_signal_async(s, sem, 4), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(s, sem, 4), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    gf_semaphore_destroy(sem);
    gf_semaphore_destroy(sem2);
}

/* An outside audit of the error reports (this session's): refused calls that still changed
   things, successes that replaced gf_last_error, and messages naming the wrong call or argument. */
static gf_result audit_warm_fill(gf_stream *st, void *user) { (void)user; return gf_fill_async(st, b, 0, 0x44, 4); }
static gf_buffer *audit_buf;
static gf_result audit_syncing_task(gf_stream *st, void *user)   /* cannot be captured: a flow of it stays a flow */
{
    (void)user;
    if (gf_fill_async(st, audit_buf, 0, 1, 4) != GF_OK) return GF_ERROR_INVALID_STATE;
    return gf_stream_synchronize(st);
}
/* A call that makes an object leaves NULL in *out on every failure: it did only for some (a
   bad size), and left the caller's value for a bad handle (an outside review). */
static void test_out_null_on_failure(void)
{
    static int marker;
    void *was = &marker;
    gf_stream *s = (gf_stream *)was;
    gf_buffer *b = (gf_buffer *)was;
    gf_event *e = (gf_event *)was;
    gf_event_pool *ep = (gf_event_pool *)was;
    gf_stream_pool *sp = (gf_stream_pool *)was;
    gf_flow *f = (gf_flow *)was;
    gf_module *m = (gf_module *)was;
    gf_kernel *k = (gf_kernel *)was;
    void *h = was;
    CHECK_FAIL(gf_stream_create(NULL, NULL, &s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_create(NULL, 64, &b), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_create(NULL, 0, &e), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_create(NULL, NULL, &ep), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_create(NULL, NULL, &sp), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_create(NULL, NULL, &f), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_module_load(NULL, NULL, &m), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_kernel_get(NULL, "k", &k), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_host_alloc(NULL, 64, &h), GF_ERROR_INVALID_HANDLE);
    CHECK(!s && !b && !e && !ep && !sp && !f && !m && !k && !h, "a failed create leaves NULL in *out, a bad handle's too");
}
static gf_result audit_capture_fill(gf_stream *st, void *user)
{
    (void)user;
    return gf_fill_async(st, audit_buf, 0, 2, 4);
}
static gf_result audit_failing_task(gf_stream *st, void *user)
{
    (void)st; (void)user;
    return GF_ERROR_INVALID_STATE;
}
static void test_audit(void)
{
    gf_stream *a = NULL, *c = NULL, *l[2];
    gf_graph *g = NULL;
    gf_device *d = NULL;
    gf_semaphore *sem = NULL;
    gf_profile_report rep;
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_flow_desc fd;
    gf_task task;
    unsigned char h = 0;
    int i;
    if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &a), GF_OK) || !CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &c), GF_OK)) return;
    /* a barrier of a capturing stream and a free one: a joined c's capture (its work captured,
       never run), then c's wait was refused; refused whole now */
    CHECK_EQ_RESULT(gf_stream_begin_capture(c, GF_CAPTURE_GLOBAL), GF_OK);
    l[0] = a; l[1] = c;
    CHECK_FAIL(gf_barrier(l, 2), GF_ERROR_CAPTURE);
    stream_works(a, "audit: a refused barrier left the free stream out of the capture");
    /* gf_graph_capture with a warm-up on a capturing stream: the warm-up went into that capture
       and its synchronize discarded it; refused before the warm-up now */
    CHECK_FAIL(gf_graph_capture(c, 1, audit_warm_fill, NULL, &g), GF_ERROR_CAPTURE);
    CHECK(!strncmp(gf_last_error(), "gf_graph_capture:", 17), "audit: the refusal names gf_graph_capture");
    CHECK(gf_stream_end_capture(c, &g) == GF_OK && g != NULL, "audit: the capture both refusals met is whole");
    if (g) gf_graph_destroy(g);
    g = NULL;
    CHECK_FAIL(gf_graph_capture(NULL, 0, audit_warm_fill, NULL, &g), GF_ERROR_INVALID_HANDLE);
    CHECK(!strncmp(gf_last_error(), "gf_graph_capture:", 17), "audit: gf_graph_capture names itself, not its _desc form");
    g = NULL;   /* a NULL desc is every default, as for every other desc (it was refused) */
    audit_buf = b;
    CHECK_EQ_RESULT(gf_graph_capture_desc(a, NULL, audit_capture_fill, NULL, &g), GF_OK);
    if (g) {
        gf_graph_info gi;
        CHECK(gf_graph_get_info(g, &gi) == GF_OK && gi.mode == GF_CAPTURE_GLOBAL && gi.nodes >= 1, "audit: a NULL capture desc captures in the default mode");
        gf_graph_destroy(g);
    }
    {   /* the other pairs where one public call wraps another: each names the call the program made */
        gf_buffer_desc bd;
        gf_task_desc td;
        gf_task task;
        gf_buffer *nb = NULL;
        memset(&bd, 0, sizeof bd);
        memset(&td, 0, sizeof td);
        CHECK_FAIL(gf_buffer_create(NULL, 16, &nb), GF_ERROR_INVALID_HANDLE);
        CHECK(!strncmp(gf_last_error(), "gf_buffer_create:", 17), "audit: gf_buffer_create names itself");
        CHECK_FAIL(gf_buffer_create_desc(dev, &bd, &nb), GF_ERROR_INVALID_ARGUMENT);
        CHECK(!strncmp(gf_last_error(), "gf_buffer_create_desc:", 22), "audit: gf_buffer_create_desc names itself");
        CHECK_FAIL(gf_flow_add(NULL, "t", NULL, NULL, &task), GF_ERROR_INVALID_HANDLE);
        CHECK(!strncmp(gf_last_error(), "gf_flow_add:", 12), "audit: gf_flow_add names itself");
        CHECK_FAIL(gf_stream_begin_capture(NULL, GF_CAPTURE_GLOBAL), GF_ERROR_INVALID_HANDLE);
        CHECK(!strncmp(gf_last_error(), "gf_stream_begin_capture:", 24), "audit: gf_stream_begin_capture names itself");
        CHECK(gf_device_native(NULL) == NULL && !strncmp(gf_last_error(), "gf_device_native:", 17), "audit: gf_device_native names itself");
    }
    {   /* calls made of others: the one the program made, then the inner call's words */
        gf_stream *list[1];
        gf_graph *cg = NULL;
        list[0] = a;
        CHECK_EQ_RESULT(gf_stream_begin_capture(a, GF_CAPTURE_GLOBAL), GF_OK);
        CHECK_FAIL(gf_synchronize_all(list, 1, NULL), GF_ERROR_CAPTURE);
        CHECK(!strncmp(gf_last_error(), "gf_synchronize_all: gf_stream_synchronize:", 42), "audit: gf_synchronize_all names itself, then the stream's refusal");
        CHECK_FAIL(gf_stream_end_capture(a, &cg), GF_ERROR_CAPTURE);   /* the refusal discarded it, as documented */
    }
    /* names: an internal helper's, and the parameters of the synchronous copies */
    CHECK_FAIL(gf_fill16_async(s, b2, 0, 1, 1), GF_ERROR_WRONG_DEVICE);
    CHECK(!strncmp(gf_last_error(), "gf_fill16_async:", 16), "audit: a fill of another device's buffer names gf_fill16_async");
    CHECK_FAIL(gf_copy_to_device(NULL, 0, pattern, 4), GF_ERROR_INVALID_HANDLE);
    CHECK(strstr(gf_last_error(), "dst") != NULL, "audit: gf_copy_to_device names its NULL dst");
    CHECK_FAIL(gf_copy_to_host(&h, NULL, 0, 1), GF_ERROR_INVALID_HANDLE);
    CHECK(strstr(gf_last_error(), "src") != NULL, "audit: gf_copy_to_host names its NULL src");
    /* a refused operation is not a dropped one in the profiler's report */
    if (CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK) && CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &sem), GF_OK)) {
        CHECK_EQ_RESULT(gf_semaphore_signal_async(a, sem, 5), GF_OK);
        CHECK_FAIL(gf_semaphore_signal_async(a, sem, 3), GF_ERROR_INVALID_ARGUMENT);   /* a timeline does not go back */
        CHECK_EQ_RESULT(gf_stream_synchronize(a), GF_OK);
        CHECK(gf_profiler_report(dev, &rep) == GF_OK && rep.dropped_ops == 0, "audit: a refused signal is not counted as dropped");
    }
    if (sem) gf_semaphore_destroy(sem);
    gf_profiler_enable(dev, 0);
    /* successes leave gf_last_error as it was: GF_BACKEND_AUTO passing backends over, and a
       flow that could not become a graph (it runs as a flow, with a warning) */
    gf_stream_query(NULL);
    if (gf_device_open(GF_BACKEND_AUTO, 0, &d) == GF_OK) {
        CHECK(!strncmp(gf_last_error(), "gf_stream_query:", 16), "audit: a successful GF_BACKEND_AUTO open leaves the last error alone");
        gf_device_close(d);
    }
    memset(&fd, 0, sizeof fd);
    fd.graph_after = 1;
    audit_buf = b;
    if (CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK) && CHECK_EQ_RESULT(gf_flow_create(dev, &fd, &flow), GF_OK) &&
        CHECK_EQ_RESULT(gf_flow_add(flow, "syncs", audit_syncing_task, NULL, &task), GF_OK)) {
        for (i = 0; i < 2; i++) {
            gf_stream_query(NULL);
            CHECK_EQ_RESULT(gf_flow_run(flow, pool), GF_OK);
            CHECK(!strncmp(gf_last_error(), "gf_stream_query:", 16), "audit: a flow run that stays a flow leaves the last error alone");
        }
        CHECK_EQ_RESULT(gf_flow_wait_frames(flow, 0, 10000), GF_OK);
    }
    if (flow) gf_flow_destroy(flow);
    flow = NULL;
    /* a task's failure names the public call that ran it (it said "gf_flow: task ...") */
    if (pool && CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK) &&
        CHECK_EQ_RESULT(gf_flow_add(flow, "refuses", audit_failing_task, NULL, &task), GF_OK)) {
        CHECK_FAIL(gf_flow_run(flow, pool), GF_ERROR_INVALID_STATE);
        CHECK(!strncmp(gf_last_error(), "gf_flow_run: task 'refuses'", 27), "audit: a task's failure names gf_flow_run");
        CHECK_FAIL(gf_flow_capture(flow, c, &g), GF_ERROR_INVALID_STATE);
        CHECK(!strncmp(gf_last_error(), "gf_flow_capture: task 'refuses'", 31), "audit: a task's failure names gf_flow_capture");
        CHECK_EQ_RESULT(gf_stream_pool_synchronize(pool), GF_OK);
    }
    if (flow) gf_flow_destroy(flow);
    if (pool) gf_stream_pool_destroy(pool);
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, pattern, 16), GF_OK);   /* the flow's fills undone */
    gf_stream_destroy(a);
    gf_stream_destroy(c);
}

int main(void)
{
    int i;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; i < 16; i++) pattern[i] = (unsigned char)(0xa0 + i);
    if (!CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK) ||
        !CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev2), GF_OK) ||
        !CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK) ||
        !CHECK_EQ_RESULT(gf_stream_create(dev2, NULL, &s2), GF_OK) ||
        !CHECK_EQ_RESULT(gf_buffer_create(dev, 16, &b), GF_OK) ||
        !CHECK_EQ_RESULT(gf_buffer_create(dev2, 16, &b2), GF_OK) ||
        !CHECK_EQ_RESULT(gf_event_create(dev, 0, &ev), GF_OK) ||
        !CHECK_EQ_RESULT(gf_event_create(dev2, 0, &ev2), GF_OK) ||
        !CHECK_EQ_RESULT(gf_copy_to_device(b, 0, pattern, 16), GF_OK))
        return th_finish();
    test_results_and_devices();
    test_memory();
    test_streams_and_events();
    test_pools();
    test_barriers();
    test_flows();
    test_graphs();
    test_kernels_and_profiler();
    test_interop();
    test_audit();
    test_out_null_on_failure();
    gf_event_destroy(ev);
    gf_event_destroy(ev2);
    gf_buffer_destroy(b);
    gf_buffer_destroy(b2);
    gf_stream_destroy(s);
    gf_stream_destroy(s2);
    gf_device_close(dev);
    gf_device_close(dev2);
    return th_finish();
}
