/* More than one device (issue "More than one GPU"): peers, copies between devices, waits
   across devices, barriers and flows over several devices. Runs on whatever devices there are:

     multi_device stub      GPUFLOW_STUB_DEVICES=4 unless set: four stub devices
     multi_device cuda|hip|opencl   the first two devices of the backend; with one, two
                            gf_devices opened on it (distinct devices to gpuflow's rules)
     multi_device mixed [B] a stub device and a device of backend B (default: OpenCL, else
                            CUDA, else HIP): copies through host memory, waits bridged by the host
     multi_device staged    four stub devices with the stub's peer copy and waits switched off:
                            the paths through host memory and host bridges, under the sanitizers
                            too (make sanitize), and a device closed while another's stream
                            still has to hand its stages back

   Each pair is checked both ways round:
     copies     before any peer access is enabled (none is needed), a stream of either device
                copies between them (4 KiB and 20 MiB + 123 bytes at
                offsets: several chunks where the copy is staged), every byte checked; a stream
                of a third device is refused; past the other buffer's end is refused
     peers      a device reaches itself; enable where the backend says it can, a clear refusal
                where not; bad handles; on CUDA and HIP with two GPUs, a kernel of one writes
                the other's stream-ordered (pool) memory once peer access is on
     order      a copy queued after a wait for the other device's event sees what came before
                the event (the event's stream held by a gate meanwhile); the event destroyed at
                once after the wait; a never-recorded event is complete
     barriers   gf_stream_wait_stream, gf_barrier and gf_synchronize_all over both devices
     capture    a copy or a wait across devices inside a capture: GF_ERROR_CAPTURE
     memory     each device counts its own buffers
     flows      a flow whose tasks sit on two devices: each edge across devices is waited for */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include "test_kernels.h"
#include <stdlib.h>

#define MD_BIG ((size_t)20 * 1024 * 1024 + 123)

static void *open_later(void *gates)   /* two gates, 100 ms apart */
{
    th_sleep_ms(100);
    th_gate_open(&((th_gate *)gates)[0]);
    th_sleep_ms(150);
    th_gate_open(&((th_gate *)gates)[1]);
    return NULL;
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)(i * 131u + seed);
}

static void test_peers(gf_device *a, gf_device *b)
{
    int can = gf_device_can_access_peer(a, b);
    gf_result r;
    CHECK(gf_device_can_access_peer(a, a) == 1, "peers: a device reaches itself");
    CHECK(can == 0 || can == 1, "peers: can_access_peer is 0 or 1");
    r = gf_device_enable_peer(a, b);
    CHECK(can ? r == GF_OK : r == GF_ERROR_NOT_SUPPORTED, "peers: enable succeeds where the backend says it can, else NOT_SUPPORTED");
    if (r == GF_ERROR_NOT_SUPPORTED) CHECK(strstr(gf_last_error(), "host memory") != NULL, "peers: the refusal says copies still go through host memory");
    if (can) CHECK_EQ_RESULT(gf_device_enable_peer(a, b), GF_OK);   /* again: still fine */
    CHECK(gf_device_can_access_peer(NULL, b) == 0, "peers: a bad handle is 0");
    CHECK_FAIL(gf_device_enable_peer(NULL, b), GF_ERROR_INVALID_HANDLE);
}

/* Peer access reaches pool memory too: after gf_device_enable_peer(a, b), a kernel on a writes
   a stream-ordered buffer of b through its address, a value argument (gf_launch's buffer
   arguments are the stream's device's own; the driver's peer enable alone maps b's
   plain allocations only: the kernel faulted). Two GPUs of CUDA or HIP; elsewhere nothing
   to check (one GPU: the same memory; the stub: host memory). */
static void test_peer_pool(gf_device *a, gf_device *b)
{
    gf_backend be = gf_device_backend(a);
    gf_native_device na, nb;
    gf_module_desc raw = tk_module;   /* no declared parameters: an address goes as a value */
    gf_module *mod = NULL;
    gf_kernel *fill = NULL;
    gf_stream *sa = NULL, *sb = NULL;
    gf_buffer *buf = NULL;
    gf_launch_dims dims;
    uint32_t out[1024], n = 1024, v = 0x5eed0000u, i, bad = 0;
    uint64_t at;
    gf_arg args[3];
    if ((be != GF_BACKEND_CUDA && be != GF_BACKEND_HIP) || gf_device_backend(b) != be) return;
    raw.stub_kernels = NULL;
    raw.stub_kernel_count = 0;
    memset(&na, 0, sizeof na);
    memset(&nb, 0, sizeof nb);
    (void)gf_device_get_native(a, &na);
    (void)gf_device_get_native(b, &nb);
    if (na.ordinal == nb.ordinal || !gf_device_can_access_peer(a, b)) {
        SKIP("peers: a kernel writing another GPU's pool memory needs two GPUs with peer access");
        return;
    }
    if (!CHECK_EQ_RESULT(gf_device_enable_peer(a, b), GF_OK) || !CHECK_EQ_RESULT(gf_module_load(a, &raw, &mod), GF_OK) ||
        !CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &fill), GF_OK) || !CHECK_EQ_RESULT(gf_stream_create(a, NULL, &sa), GF_OK) ||
        !CHECK_EQ_RESULT(gf_stream_create(b, NULL, &sb), GF_OK) || !CHECK_EQ_RESULT(gf_buffer_create_async(sb, sizeof out, &buf), GF_OK))
        goto done;
    CHECK_EQ_RESULT(gf_fill_async(sb, buf, 0, 0, sizeof out), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(sb), GF_OK);
    at = gf_buffer_native(buf);
    args[0].value = &at; args[0].size = sizeof at; args[0].buffer = NULL;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = NULL;
    args[2].value = &v; args[2].size = sizeof v; args[2].buffer = NULL;
    memset(&dims, 0, sizeof dims);
    dims.grid[0] = n / 256; dims.block[0] = 256;
    dims.grid[1] = dims.grid[2] = dims.block[1] = dims.block[2] = 1;
    CHECK_EQ_RESULT(gf_launch(sa, fill, dims, args, 3), GF_OK);
    if (CHECK_EQ_RESULT(gf_stream_synchronize(sa), GF_OK) && CHECK_EQ_RESULT(gf_copy_to_host(out, buf, 0, sizeof out), GF_OK)) {
        for (i = 0; i < n; i++) bad += out[i] != v;
        CHECK(bad == 0, "peers: a kernel of one GPU wrote every word of the other's stream-ordered buffer");
    }
done:
    if (buf) gf_buffer_destroy_async(sb, buf);
    if (sb) gf_stream_synchronize(sb);
    gf_stream_destroy(sa);
    gf_stream_destroy(sb);
    gf_module_destroy(mod);
}

/* src on a, dst on b, copied on s (of a or b) at offsets; every byte checked. */
static void copy_checked(gf_stream *s, gf_device *a, gf_device *b, size_t n, const char *what)
{
    gf_buffer *src = NULL, *dst = NULL;
    unsigned char *in = (unsigned char *)malloc(n), *out = (unsigned char *)calloc(1, n);
    char msg[160];
    CHECK_EQ_RESULT(gf_buffer_create(a, n + 64, &src), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(b, n + 32, &dst), GF_OK);
    if (!src || !dst || !in || !out) goto done;
    pattern(in, n, (unsigned)n);
    CHECK_EQ_RESULT(gf_copy_to_device(src, 64, in, n), GF_OK);
    CHECK_EQ_RESULT(gf_copy_buffer_async(s, dst, 32, src, 64, n), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(out, dst, 32, n), GF_OK);
    snprintf(msg, sizeof msg, "copies: %s, %zu bytes at offsets: every byte arrived", what, n);
    CHECK(memcmp(in, out, n) == 0, msg);
done:
    gf_buffer_destroy(src);
    gf_buffer_destroy(dst);
    free(in);
    free(out);
}

static void test_copies(gf_device *a, gf_device *b, gf_device *third, int staged)
{
    gf_stream *sa = NULL, *sb = NULL, *sc = NULL;
    gf_buffer *x = NULL, *y = NULL;
    gf_stream_stats st;
    CHECK_EQ_RESULT(gf_stream_create(a, NULL, &sa), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(b, NULL, &sb), GF_OK);
    if (!sa || !sb) return;
    copy_checked(sb, a, b, 4096, "pulled by the destination's stream");
    copy_checked(sa, a, b, 4096, "pushed by the source's stream");
    copy_checked(sb, a, b, MD_BIG, "pulled by the destination's stream");
    copy_checked(sa, a, b, MD_BIG, "pushed by the source's stream");
    copy_checked(sa, b, a, MD_BIG, "pulled, the other way round");
    memset(&st, 0, sizeof st);
    CHECK_EQ_RESULT(gf_stream_get_stats(sb, &st), GF_OK);
    CHECK(staged ? st.staged_copies == 2 : st.staged_copies == 0,
          staged ? "copies: each copy through host memory counted as staged" : "copies: the backend's peer copies are not staged");
    CHECK_EQ_RESULT(gf_buffer_create(a, 4096, &x), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(b, 4096, &y), GF_OK);
    if (x && y) {
        CHECK_FAIL(gf_copy_buffer_async(sb, y, 0, x, 1, 4096), GF_ERROR_OUT_OF_RANGE);   /* past the other device's buffer */
        CHECK_FAIL(gf_copy_buffer_async(sa, y, 4095, x, 0, 2), GF_ERROR_OUT_OF_RANGE);
        if (third && gf_stream_create(third, NULL, &sc) == GF_OK) {
            CHECK_FAIL(gf_copy_buffer_async(sc, y, 0, x, 0, 16), GF_ERROR_WRONG_DEVICE);
            CHECK(strstr(gf_last_error(), "runs on a stream of one of them") != NULL, "copies: a third device's stream is refused, said why");
            gf_stream_destroy(sc);
        }
    }
    gf_buffer_destroy(x);
    gf_buffer_destroy(y);
    gf_stream_destroy(sa);
    gf_stream_destroy(sb);
}

/* The state report of sb's device names the stream of the other device that sb waits for, and
   that device (stream ids are per device: it named a stream of sb's own device, or "a
   destroyed stream"; an outside review). */
static void order_state_names(gf_stream *sa, gf_stream *sb, int stream_wait)
{
    static char state[16384];
    char want[512];
    const char *at;
    snprintf(want, sizeof want, "waits for the event recorded on '%s' of ", gf_stream_label(sa));
    if (!CHECK_EQ_RESULT(gf_device_write_state(gf_stream_device(sb), state, sizeof state), GF_OK)) return;
    at = strstr(state, want);
    if (at) at += strlen(want);
    CHECK(at && *at == '\'' && !strncmp(at + 1, gf_device_name(gf_stream_device(sa)), 10),
          stream_wait ? "order: the state report names the other device's stream and its device (a stream wait)"
                      : "order: the state report names the other device's stream and its device (an event wait)");
    if (!at) printf("%s\n", state);
}
static void test_order(gf_device *a, gf_device *b)
{
    gf_stream *sa = NULL, *sb = NULL;
    gf_buffer *x = NULL, *y = NULL;
    gf_event *ev = NULL, *never = NULL;
    unsigned char host[8192];
    th_gate gate;
    CHECK_EQ_RESULT(gf_stream_create(a, NULL, &sa), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(b, NULL, &sb), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(a, sizeof host, &x), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(b, sizeof host, &y), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(a, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(a, 0, &never), GF_OK);
    if (!sa || !sb || !x || !y || !ev || !never) return;
    /* a never-recorded event of another device is complete */
    CHECK_EQ_RESULT(gf_stream_wait_event(sb, never), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(sb, TH_WAIT_MS), GF_OK);
    /* sb's copy waits for a's fill behind a gate */
    th_gate_init(&gate);
    CHECK_EQ_RESULT(gf_fill_async(sa, x, 0, 0x11, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(sa), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(sa, th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(sa, x, 0, 0x33, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, sa), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(sb, ev), GF_OK);
    gf_event_destroy(ev);   /* at once: the wait holds what it needs */
    CHECK_EQ_RESULT(gf_copy_buffer_async(sb, y, 0, x, 0, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(sb, host, y, 0, sizeof host), GF_OK);
    th_sleep_ms(30);
    CHECK_EQ_RESULT(gf_stream_query(sb), GF_NOT_READY);
    order_state_names(sa, sb, 0);
    th_gate_open(&gate);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(sb, TH_WAIT_MS), GF_OK);
    CHECK(host[0] == 0x33 && host[sizeof host - 1] == 0x33, "order: the copy after a wait for the other device's event saw the fill before it");
    gf_stream_synchronize(sa);
    th_gate_destroy(&gate);
    /* gf_stream_wait_stream across devices */
    th_gate_init(&gate);
    CHECK_EQ_RESULT(gf_stream_add_callback(sa, th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_stream(sb, sa), GF_OK);
    th_sleep_ms(20);
    CHECK_EQ_RESULT(gf_stream_query(sb), GF_NOT_READY);
    order_state_names(sa, sb, 1);
    th_gate_open(&gate);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(sb, TH_WAIT_MS), GF_OK);
    gf_stream_synchronize(sa);
    th_gate_destroy(&gate);
    gf_event_destroy(never);
    gf_buffer_destroy(x);
    gf_buffer_destroy(y);
    gf_stream_destroy(sa);
    gf_stream_destroy(sb);
}

static void test_barriers(gf_device *a, gf_device *b)
{
    gf_stream *st[2] = { NULL, NULL };
    gf_graph *g = NULL;
    gf_buffer *x = NULL, *y = NULL;
    gf_event *ev = NULL;
    th_gate gate;
    double ms = -1;
    CHECK_EQ_RESULT(gf_stream_create(a, NULL, &st[0]), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(b, NULL, &st[1]), GF_OK);
    if (!st[0] || !st[1]) return;
    th_gate_init(&gate);
    CHECK_EQ_RESULT(gf_stream_add_callback(st[0], th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_barrier(st, 2), GF_OK);
    th_sleep_ms(20);
    CHECK_EQ_RESULT(gf_stream_query(st[1]), GF_NOT_READY);   /* held by a's gate through the barrier */
    th_gate_open(&gate);
    CHECK_EQ_RESULT(gf_synchronize_all(st, 2, &ms), GF_OK);
    CHECK(ms >= 0, "barriers: synchronize_all over two devices gives its time");
    th_gate_destroy(&gate);
    /* across devices inside a capture: refused */
    CHECK_EQ_RESULT(gf_buffer_create(a, 256, &x), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(b, 256, &y), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(a, 0, &ev), GF_OK);
    if (x && y && ev && gf_stream_begin_capture(st[1], GF_CAPTURE_GLOBAL) == GF_OK) {
        CHECK_EQ_RESULT(gf_event_record(ev, st[0]), GF_OK);
        CHECK_FAIL(gf_copy_buffer_async(st[1], y, 0, x, 0, 256), GF_ERROR_CAPTURE);
        CHECK_FAIL(gf_stream_wait_event(st[1], ev), GF_ERROR_CAPTURE);
        CHECK_FAIL(gf_stream_wait_stream(st[1], st[0]), GF_ERROR_CAPTURE);
        /* a barrier too, named as such, before any of it is captured (it named gf_stream_wait_event
           and left its mark's record in the graph; found by review) */
        CHECK_FAIL(gf_barrier(st, 2), GF_ERROR_CAPTURE);
        CHECK(!strncmp(gf_last_error(), "gf_barrier:", 11), "barriers: a barrier across devices into a capture is refused as gf_barrier");
        CHECK_EQ_RESULT(gf_fill_async(st[1], y, 0, 1, 256), GF_OK);
        CHECK_EQ_RESULT(gf_stream_end_capture(st[1], &g), GF_OK);   /* the capture itself goes on */
        if (g) {
            gf_graph_info gi;
            memset(&gi, 0, sizeof gi);
            CHECK(gf_graph_get_info(g, &gi) == GF_OK && gi.nodes == 1, "barriers: the graph holds the fill alone, nothing of the refused calls");
            gf_graph_destroy(g);
        }
    }
    gf_stream_synchronize(st[0]);
    gf_event_destroy(ev);
    gf_buffer_destroy(x);
    gf_buffer_destroy(y);
    gf_stream_destroy(st[0]);
    gf_stream_destroy(st[1]);
}

static void test_memory(gf_device *a, gf_device *b)
{
    gf_memory_stats before_a, before_b, after_a, after_b;
    gf_buffer *x = NULL;
    memset(&before_a, 0, sizeof before_a); memset(&before_b, 0, sizeof before_b);
    memset(&after_a, 0, sizeof after_a); memset(&after_b, 0, sizeof after_b);
    gf_device_memory_stats(a, &before_a);
    gf_device_memory_stats(b, &before_b);
    CHECK_EQ_RESULT(gf_buffer_create(a, 1 << 20, &x), GF_OK);
    gf_device_memory_stats(a, &after_a);
    gf_device_memory_stats(b, &after_b);
    CHECK(after_a.kind[GF_MEMORY_DEVICE].bytes == before_a.kind[GF_MEMORY_DEVICE].bytes + (1 << 20) &&
          after_b.kind[GF_MEMORY_DEVICE].bytes == before_b.kind[GF_MEMORY_DEVICE].bytes,
          "memory: a buffer counts on its own device only");
    gf_buffer_destroy(x);
}

/* A buffer of a, read by a copy queued on a stream of b, destroyed before the copy runs: its
   memory stays until the copy has passed, though only b's stream reads it (found by an outside
   tester: gf_device_synchronize(a) freed it under b's queued peer copy; ASan: use after free),
   and a's synchronize does not wait for b's stream (a review of that fix: it did, and hung
   behind b's earlier work). */
static uint64_t pending_on(gf_device *d)
{
    gf_memory_stats st;
    memset(&st, 0, sizeof st);
    return gf_device_memory_stats(d, &st) == GF_OK ? st.kind[GF_MEMORY_PENDING].count : (uint64_t)-1;
}
static void test_release_under_peer_copy(gf_device *a, gf_device *b, int staged)
{
    enum { N = 4096 };
    gf_stream *sb = NULL;
    gf_buffer *x = NULL, *y = NULL;
    th_gate gate;
    unsigned char host[N], back[N];
    if (!CHECK_EQ_RESULT(gf_stream_create(b, NULL, &sb), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_buffer_create(a, N, &x), GF_OK) && CHECK_EQ_RESULT(gf_buffer_create(b, N, &y), GF_OK)) {
        pattern(host, N, 7);
        memset(back, 0, sizeof back);
        CHECK_EQ_RESULT(gf_copy_to_device(x, 0, host, N), GF_OK);
        th_gate_init(&gate);
        CHECK_EQ_RESULT(gf_stream_add_callback(sb, th_gate_cb, &gate), GF_OK);
        CHECK_EQ_RESULT(gf_copy_buffer_async(sb, y, 0, x, 0, N), GF_OK);   /* reads a's buffer when it runs */
        gf_buffer_destroy(x);
        x = NULL;
        if (staged) th_gate_open(&gate);   /* a's own peer stream reads the buffer: a's synchronize waits for it */
        CHECK_EQ_RESULT(gf_device_synchronize(a), GF_OK);   /* a's releases come due here */
        if (!staged) {
            CHECK(TH_GATE_LEFT(&gate) == 0, "release: a's synchronize did not wait for b's stream");
            CHECK(pending_on(a) > 0, "release: a's destroyed buffer waits for b's copy");
            th_gate_open(&gate);
        }
        CHECK_EQ_RESULT(gf_stream_synchronize(sb), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(back, y, 0, N), GF_OK);
        CHECK(memcmp(back, host, N) == 0, "release: b's copy read the destroyed buffer's bytes");
        CHECK_EQ_RESULT(gf_device_trim(a, 0), GF_OK);
        CHECK(pending_on(a) == 0, "release: the buffer went once the copy had passed");
        th_gate_destroy(&gate);
    }
    if (x) gf_buffer_destroy(x);
    if (y) gf_buffer_destroy(y);
    gf_stream_destroy(sb);
}

/* A flow of three tasks: fill on a, copy to b on b, read back on b; edges across devices. */
typedef struct flow_ctx { gf_buffer *x, *y; unsigned char *host; size_t n; } flow_ctx;
static gf_result task_fill(gf_stream *s, void *user) { flow_ctx *c = (flow_ctx *)user; return gf_fill_async(s, c->x, 0, 0x5c, c->n); }
static gf_result task_copy(gf_stream *s, void *user) { flow_ctx *c = (flow_ctx *)user; return gf_copy_buffer_async(s, c->y, 0, c->x, 0, c->n); }
static gf_result task_read(gf_stream *s, void *user) { flow_ctx *c = (flow_ctx *)user; return gf_copy_to_host_async(s, c->host, c->y, 0, c->n); }

static void test_flow(gf_device *a, gf_device *b)
{
    gf_flow *flow = NULL;
    gf_stream_pool *pools[2] = { NULL, NULL };
    gf_task t1 = 0, t2 = 0, t3 = 0;
    gf_task_desc d;
    unsigned char host[4096];
    flow_ctx ctx;
    char dot[8192];
    FILE *f;
    size_t got;
    memset(host, 0, sizeof host);
    ctx.n = sizeof host;
    ctx.host = host;
    ctx.x = ctx.y = NULL;
    CHECK_EQ_RESULT(gf_buffer_create(a, ctx.n, &ctx.x), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(b, ctx.n, &ctx.y), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_create(a, NULL, &pools[0]), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_create(b, NULL, &pools[1]), GF_OK);
    CHECK_EQ_RESULT(gf_flow_create(a, NULL, &flow), GF_OK);
    if (!ctx.x || !ctx.y || !pools[0] || !pools[1] || !flow) goto done;
    memset(&d, 0, sizeof d);
    d.name = "fill on a"; d.fn = task_fill; d.user = &ctx;
    CHECK_EQ_RESULT(gf_flow_add_desc(flow, &d, &t1), GF_OK);
    d.name = "copy to b"; d.fn = task_copy; d.device = b;
    CHECK_EQ_RESULT(gf_flow_add_desc(flow, &d, &t2), GF_OK);
    d.name = "read on b"; d.fn = task_read; d.device = b;
    CHECK_EQ_RESULT(gf_flow_add_desc(flow, &d, &t3), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, t1, t2), GF_OK);
    CHECK_EQ_RESULT(gf_flow_depend(flow, t2, t3), GF_OK);
    CHECK_FAIL(gf_flow_run(flow, pools[0]), GF_ERROR_WRONG_DEVICE);   /* a task on b needs b's pool */
    CHECK(strstr(gf_last_error(), "gf_flow_run_multi") != NULL, "flows: one pool for tasks on two devices: refused, naming gf_flow_run_multi");
    CHECK_FAIL(gf_flow_run_multi(flow, pools, 1), GF_ERROR_WRONG_DEVICE);
    CHECK_FAIL(gf_flow_run_multi(flow, pools, 0), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_flow_run_multi(flow, NULL, 2), GF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(gf_last_error(), "pools is NULL") != NULL, "flows: a NULL pools array is named");
    {
        gf_stream_pool *twice[2];
        twice[0] = twice[1] = pools[1];
        CHECK_FAIL(gf_flow_run_multi(flow, twice, 2), GF_ERROR_INVALID_ARGUMENT);
    }
    CHECK_EQ_RESULT(gf_flow_run_multi(flow, pools, 2), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pools[1]), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pools[0]), GF_OK);   /* each device's race detector sees its own waits only */
    CHECK(host[0] == 0x5c && host[sizeof host - 1] == 0x5c, "flows: tasks on two devices ran in their order (each edge across devices waited for)");
    memset(host, 0, sizeof host);
    CHECK_EQ_RESULT(gf_flow_run_multi(flow, pools, 2), GF_OK);   /* again */
    CHECK_EQ_RESULT(gf_stream_pool_synchronize(pools[1]), GF_OK);
    CHECK(host[0] == 0x5c, "flows: a second run too");
    {   /* a run over two devices is not timed (no one clock): its time read as device a's part alone */
        gf_frame_info fi;
        memset(&fi, 0, sizeof fi);
        fi.last_gpu_ms = -1.0f;
        CHECK_EQ_RESULT(gf_flow_wait_frames(flow, 0, TH_WAIT_MS), GF_OK);
        CHECK(gf_flow_frames(flow, &fi) == GF_OK && fi.completed == 2 && fi.last_gpu_ms == 0.0f, "flows: a run over two devices reads 0 ms on the device");
    }
    if (gf_flow_write_dot(flow, "build/multi_device_flow.dot") == GF_OK && (f = fopen("build/multi_device_flow.dot", "r")) != NULL) {
        got = fread(dot, 1, sizeof dot - 1, f);
        dot[got] = 0;
        fclose(f);
        CHECK(strstr(dot, gf_device_name(b)) != NULL, "flows: the DOT names each task's device");
    }
done:
    if (flow) gf_flow_destroy(flow);
    if (pools[0]) gf_stream_pool_destroy(pools[0]);
    if (pools[1]) gf_stream_pool_destroy(pools[1]);
    gf_buffer_destroy(ctx.x);
    gf_buffer_destroy(ctx.y);
}

/* Objects left over from a closed device (leaked on purpose, so not under ASan's leak check):
   refused by name, their device never read. */
#if defined(__SANITIZE_ADDRESS__)
#  define MD_LEAK_CHECKED 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define MD_LEAK_CHECKED 1
#  endif
#endif
static void test_closed_device(gf_device *a, gf_backend backend, int index)
{
#ifndef MD_LEAK_CHECKED
    gf_device *gone = NULL;
    gf_buffer *x = NULL, *left = NULL;
    gf_event *ev = NULL;
    gf_stream *s = NULL;
    gf_task_desc d;
    gf_flow *flow = NULL;
    gf_task t;
    if (gf_device_open(backend, index, &gone) != GF_OK) return;
    CHECK_EQ_RESULT(gf_buffer_create(gone, 64, &left), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(gone, 0, &ev), GF_OK);
    gf_device_close(gone);   /* reports the buffer and the event as live */
    CHECK_EQ_RESULT(gf_stream_create(a, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(a, 64, &x), GF_OK);
    if (s && x && left && ev) {
        CHECK_FAIL(gf_copy_buffer_async(s, x, 0, left, 0, 16), GF_ERROR_INVALID_HANDLE);
        CHECK(strstr(gf_last_error(), "closed") != NULL, "closed device: a copy from its buffer is refused, saying the device was closed");
        CHECK_FAIL(gf_copy_buffer_async(s, left, 0, x, 0, 16), GF_ERROR_INVALID_HANDLE);
        CHECK_FAIL(gf_stream_wait_event(s, ev), GF_ERROR_INVALID_HANDLE);
        CHECK_EQ_RESULT(gf_flow_create(a, NULL, &flow), GF_OK);
        memset(&d, 0, sizeof d);
        d.fn = task_fill; d.device = gone;
        if (flow) CHECK_FAIL(gf_flow_add_desc(flow, &d, &t), GF_ERROR_INVALID_HANDLE);
        if (flow) gf_flow_destroy(flow);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    }
    gf_buffer_destroy(x);
    gf_stream_destroy(s);
#else
    (void)a; (void)backend; (void)index;
#endif
}

/* The source's device closed right after the copy is queued, while the destination's stream
   (held by a gate before the copy and one after it) has yet to hand the source device's stages
   back: the close waits for that (ASan saw a use after free before). */
static void test_close_during_staged_copy(void)
{
    gf_device *src_dev = NULL, *dst_dev = NULL;
    gf_buffer *src = NULL, *dst = NULL;
    gf_stream *s = NULL;
    th_gate gate[2];
    pthread_t opener;
    unsigned char *in = (unsigned char *)malloc(MD_BIG), *out = (unsigned char *)calloc(1, MD_BIG);
    if (!in || !out) { free(in); free(out); return; }
    CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 2, &src_dev), GF_OK);
    CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 3, &dst_dev), GF_OK);
    if (src_dev && dst_dev && gf_buffer_create(src_dev, MD_BIG, &src) == GF_OK && gf_buffer_create(dst_dev, MD_BIG, &dst) == GF_OK &&
        gf_stream_create(dst_dev, NULL, &s) == GF_OK) {
        pattern(in, MD_BIG, 7);
        CHECK_EQ_RESULT(gf_copy_to_device(src, 0, in, MD_BIG), GF_OK);
        th_gate_init(&gate[0]);
        th_gate_init(&gate[1]);
        CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate[0]), GF_OK);
        CHECK_EQ_RESULT(gf_copy_buffer_async(s, dst, 0, src, 0, MD_BIG), GF_OK);
        CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate[1]), GF_OK);   /* before the stages go back */
        gf_buffer_destroy(src);   /* retired: freed once the source device's queued work passed */
        pthread_create(&opener, NULL, open_later, gate);
        gf_device_close(src_dev);   /* waits for the peer stream (behind the gate), then for the stages */
        src_dev = NULL;
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        pthread_join(opener, NULL);
        CHECK_EQ_RESULT(gf_copy_to_host(out, dst, 0, MD_BIG), GF_OK);
        CHECK(memcmp(in, out, MD_BIG) == 0, "staged: the source device closed while the copy was queued: every byte arrived");
        th_gate_destroy(&gate[0]);
        th_gate_destroy(&gate[1]);
    }
    gf_stream_destroy(s);
    gf_buffer_destroy(dst);
    if (src_dev) gf_device_close(src_dev);
    if (dst_dev) gf_device_close(dst_dev);
    free(in);
    free(out);
}

/* Messages tell devices apart: two GPUs of one model share a name, and so do two opens of one
   device (the message named all three devices below 'gpuflow CPU stub'). */
static void test_tags(gf_backend backend)
{
    gf_device *d[3] = { NULL, NULL, NULL };
    gf_buffer *x = NULL, *y = NULL;
    gf_stream *s = NULL;
    char want[64];
    int i;
    for (i = 0; i < 3; i++) CHECK_EQ_RESULT(gf_device_open(backend, 0, &d[i]), GF_OK);
    if (d[0] && d[1] && d[2] && gf_buffer_create(d[0], 64, &x) == GF_OK && gf_buffer_create(d[1], 64, &y) == GF_OK &&
        gf_stream_create(d[2], NULL, &s) == GF_OK) {
        CHECK_FAIL(gf_copy_buffer_async(s, y, 0, x, 0, 16), GF_ERROR_WRONG_DEVICE);
        snprintf(want, sizeof want, "(%s 0)", gf_backend_name(backend));
        CHECK(strstr(gf_last_error(), want) != NULL, "tags: the first open of device 0 is named with its backend and index");
        for (i = 2; i <= 3; i++) {
            snprintf(want, sizeof want, "(%s 0, open #%d)", gf_backend_name(backend), i);
            CHECK(strstr(gf_last_error(), want) != NULL, i == 2 ? "tags: the second open of one device is told apart" : "tags: and the third");
        }
        /* the second closed and opened again: a number no open handle has (it was #3 again) */
        gf_buffer_destroy(y);
        y = NULL;
        gf_device_close(d[1]);
        d[1] = NULL;
        if (CHECK_EQ_RESULT(gf_device_open(backend, 0, &d[1]), GF_OK) && CHECK_EQ_RESULT(gf_buffer_create(d[1], 64, &y), GF_OK)) {
            CHECK_FAIL(gf_copy_buffer_async(s, y, 0, x, 0, 16), GF_ERROR_WRONG_DEVICE);
            snprintf(want, sizeof want, "(%s 0, open #4)", gf_backend_name(backend));
            CHECK(strstr(gf_last_error(), want) != NULL, "tags: an open after a close takes a number no open handle has");
        }
    }
    gf_stream_destroy(s);
    gf_buffer_destroy(x);
    gf_buffer_destroy(y);
    for (i = 0; i < 3; i++) if (d[i]) gf_device_close(d[i]);
}

/* A callback of b's stream that closed (or synchronized) device a hung for good when a copy
   or wait between the two was queued behind it: a's close waited for gpuflow's own stage,
   bridge or peer stream, ordered after the callback. Such whole-device waits from another
   device's callback are refused now, and both devices go on. */
typedef struct other_close { gf_device *a; gf_result sync; int close_refused; } other_close;
static void close_other_cb(void *user, gf_result status)
{
    other_close *o = (other_close *)user;
    (void)status;
    o->sync = gf_device_synchronize(o->a);
    gf_device_close(o->a);
    o->close_refused = strstr(gf_last_error(), "gf_device_close: called from a host callback") != NULL;
}
static void test_wait_from_other_callback(gf_device *a, gf_device *b)
{
    gf_stream *sb = NULL;
    gf_buffer *x = NULL, *y = NULL;
    other_close o = { NULL, GF_OK, 0 };
    unsigned char v = 0, src[4096];
    o.a = a;
    memset(src, 0x5a, sizeof src);
    if (CHECK_EQ_RESULT(gf_stream_create(b, NULL, &sb), GF_OK) && CHECK_EQ_RESULT(gf_buffer_create(a, 4096, &x), GF_OK) &&
        CHECK_EQ_RESULT(gf_buffer_create(b, 4096, &y), GF_OK) && CHECK_EQ_RESULT(gf_copy_to_device(x, 0, src, sizeof src), GF_OK) &&
        CHECK_EQ_RESULT(gf_stream_add_callback(sb, close_other_cb, &o), GF_OK) &&
        CHECK_EQ_RESULT(gf_copy_buffer_async(sb, y, 0, x, 0, 4096), GF_OK)) {   /* behind the callback: a's side waits for it */
        CHECK_EQ_RESULT(gf_stream_synchronize_timeout(sb, 20000), GF_OK);
        CHECK_EQ_RESULT(o.sync, GF_ERROR_INVALID_STATE);
        CHECK(o.close_refused, "gf_device_close of another device from a stream callback is refused, with a message");
        CHECK_EQ_RESULT(gf_copy_to_host(&v, y, 4095, 1), GF_OK);
        CHECK(v == 0x5a, "the copy behind that callback ran, and both devices go on");
    }
    if (y) gf_buffer_destroy(y);
    if (x) gf_buffer_destroy(x);
    if (sb) gf_stream_destroy(sb);
}

static void run_pair(gf_device *a, gf_device *b, gf_device *third, int staged)
{
    printf("pair: '%s' (%s) and '%s' (%s)%s\n", gf_device_name(a), gf_backend_name(gf_device_backend(a)), gf_device_name(b),
           gf_backend_name(gf_device_backend(b)), staged ? ": copies through host memory" : "");
    test_copies(a, b, third, staged);   /* first: copies need no peer access */
    test_peers(a, b);
    test_peers(b, a);
    test_peer_pool(a, b);
    test_order(a, b);
    test_order(b, a);
    test_barriers(a, b);
    test_memory(a, b);
    test_release_under_peer_copy(a, b, staged);
    test_flow(a, b);
    test_wait_from_other_callback(a, b);
}

int main(int argc, char **argv)
{
    gf_device *dev[4] = { NULL, NULL, NULL, NULL };
    gf_backend backend = GF_BACKEND_STUB, other = GF_BACKEND_AUTO;
    int n = 0, i, count, mixed = argc >= 2 && !strcmp(argv[1], "mixed"), staged = argc == 2 && !strcmp(argv[1], "staged");
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (staged) {   /* the stub without its peer copy and waits: what other backends' pairs take */
        gf__backend *t = (gf__backend *)gf__stub_backend();
        t->copy_peer = NULL;
        t->stream_wait_peer = NULL;
    } else if (!mixed && !th_backend_arg(argc, argv, &backend)) return 2;
    if (mixed) {
        static const gf_backend others[] = { GF_BACKEND_OPENCL, GF_BACKEND_CUDA, GF_BACKEND_HIP };
        gf_backend named = GF_BACKEND_AUTO;
        if (argc == 3 && !th_backend_named(argv[2], &named)) { printf("usage: multi_device mixed [%s]\n", th_backend_choices()); return 2; }
        for (i = 0; i < 3 && other == GF_BACKEND_AUTO; i++)
            if ((named == GF_BACKEND_AUTO || named == others[i]) && gf_device_count(others[i]) > 0) other = others[i];
        if (other == GF_BACKEND_AUTO) {
            printf("notice: multi_device mixed skipped: no device of another backend than the stub here\n");
            SKIP("no second backend");
            return th_finish();
        }
        CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev[0]), GF_OK);
        CHECK_EQ_RESULT(gf_device_open(other, 0, &dev[1]), GF_OK);
        if (dev[0] && dev[1]) {
            run_pair(dev[0], dev[1], NULL, 1);
            run_pair(dev[1], dev[0], NULL, 1);
        }
        for (i = 0; i < 2; i++) if (dev[i]) gf_device_close(dev[i]);
        return th_finish();
    }
#if !defined(_WIN32)
    if (backend == GF_BACKEND_STUB) setenv("GPUFLOW_STUB_DEVICES", "4", 0);
#endif
    count = gf_device_count(backend);
    if (count < 1) {
        printf("notice: multi_device %s skipped: no device\n", gf_backend_name(backend));
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    if (backend == GF_BACKEND_STUB) CHECK(count == 4 || getenv("GPUFLOW_STUB_DEVICES"), "GPUFLOW_STUB_DEVICES=4: four stub devices");
    for (i = 0; i < (count < 4 ? (count < 2 ? 2 : count) : 4); i++) {   /* one device: two gf_devices on it */
        r = gf_device_open(backend, count < 2 ? 0 : i, &dev[n]);
        CHECK_EQ_RESULT(r, GF_OK);
        if (r == GF_OK) n++;
    }
    printf("multi_device on %s: %d device(s) present, %d gf_devices open%s\n", gf_backend_name(backend), count, n,
           count < 2 ? " (two on one device)" : "");
    if (n >= 2) {
        if (backend == GF_BACKEND_STUB && count > 1) CHECK(strcmp(gf_device_name(dev[0]), gf_device_name(dev[1])) != 0, "stub devices have names of their own");
        run_pair(dev[0], dev[1], n > 2 ? dev[2] : NULL, backend == GF_BACKEND_OPENCL || staged);
        if (n > 3) run_pair(dev[3], dev[2], dev[0], backend == GF_BACKEND_OPENCL || staged);
        test_closed_device(dev[0], backend, count < 2 ? 0 : count - 1);
        if (staged && count >= 4) test_close_during_staged_copy();
    }
    for (i = 0; i < n; i++) gf_device_close(dev[i]);
    test_tags(backend);
    return th_finish();
}
