/* GPUFLOW_DEBUG: a destroyed object stays a refused shell until its device closes, so using a
   stale handle is GF_ERROR_INVALID_HANDLE and never a read of freed memory (this test runs
   under ASan in make sanitize, where a read of freed memory would abort it).

       ./debug_shells */
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_DEBUG
#include "backends.h"
#include "harness.h"
#include "test_kernels.h"

static gf_result nothing(gf_stream *s, void *user) { (void)s; (void)user; return GF_OK; }
static int out_mark;   /* an address no gf_stream has: a failed call must not leave it in *out */

int main(void)
{
    gf_device *dev = NULL;
    gf_stream *s = NULL, *other = NULL;
    gf_buffer *b = NULL, *v = NULL;
    gf_event *ev = NULL, *pe = NULL;
    gf_event_pool *ep = NULL;
    gf_stream_pool *sp = NULL;
    gf_stream_set *set = NULL;
    gf_flow *flow = NULL;
    gf_graph *g = NULL;
    gf_graph_pool *gp = NULL;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_budget *bud = NULL, *held = NULL;
    gf_buffer *charged = NULL;
    gf_stream *acquired = (gf_stream *)(void *)&out_mark;
    gf_budget_desc bd;
    gf_budget_stats bs;
    gf_buffer_desc buf_desc;
    gf_task t;
    unsigned char h[16];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) return th_finish();
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &other), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &b), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_view(b, 0, 16, &v), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_create(dev, NULL, &ep), GF_OK);
    CHECK_EQ_RESULT(gf_event_pool_acquire(ep, 0, &pe), GF_OK);
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &sp), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "set", &set), GF_OK);
    CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK);
    CHECK_EQ_RESULT(gf_flow_add(flow, "t", nothing, NULL, &t), GF_OK);
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, nothing, NULL, &g), GF_OK);
    CHECK_EQ_RESULT(gf_graph_pool_create(dev, &gp), GF_OK);
    CHECK_EQ_RESULT(gf_module_load(dev, &tk_module, &mod), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "fill_u32", &k), GF_OK);
    memset(&bd, 0, sizeof bd);
    bd.label = "frame";
    bd.limit = 1 << 20;
    CHECK_EQ_RESULT(gf_budget_create(dev, &bd, &bud), GF_OK);
    CHECK_EQ_RESULT(gf_budget_create(dev, &bd, &held), GF_OK);   /* destroyed while a buffer holds it */
    memset(&buf_desc, 0, sizeof buf_desc);
    buf_desc.size = 64;
    buf_desc.budget = held;
    CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &buf_desc, &charged), GF_OK);

    gf_buffer_destroy(v);
    gf_buffer_destroy(b);
    gf_event_destroy(ev);
    gf_event_pool_release(ep, pe);
    gf_event_pool_destroy(ep);
    gf_stream_pool_destroy(sp);
    gf_stream_set_destroy(set);
    gf_flow_destroy(flow);
    gf_graph_destroy(g);
    gf_graph_pool_destroy(gp);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_budget_destroy(bud);
    gf_budget_destroy(held);
    gf_buffer_destroy(charged);   /* the budget's last hold: freed now (a shell) */

    /* every stale handle is refused with INVALID_HANDLE; nothing reads freed memory */
    CHECK_FAIL(gf_fill_async(other, b, 0, 1, 16), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_copy_to_host(h, v, 0, 16), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_record(ev, other), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_event_pool_acquire(ep, 0, &pe), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_pool_acquire(sp, NULL, &acquired), GF_ERROR_INVALID_HANDLE);
    CHECK(acquired == NULL, "a failed acquire leaves NULL in *out");
    CHECK_FAIL(gf_stream_set_synchronize(set), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_flow_run(flow, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_graph_launch(g, other), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_stream_begin_capture_pool(other, GF_CAPTURE_GLOBAL, gp), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_kernel_get(mod, "fill_u32", &k), GF_ERROR_INVALID_HANDLE);
    {
        gf_launch_dims d = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
        CHECK_FAIL(gf_launch(other, k, d, NULL, 0), GF_ERROR_INVALID_HANDLE);
    }
    CHECK_FAIL(gf_stream_synchronize(s), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_budget_get_stats(bud, &bs), GF_ERROR_INVALID_HANDLE);   /* budgets were freed, not kept (found by review) */
    CHECK_FAIL(gf_budget_get_stats(held, &bs), GF_ERROR_INVALID_HANDLE);
    buf_desc.budget = bud;
    CHECK_FAIL(gf_buffer_create_desc(dev, &buf_desc, &charged), GF_ERROR_INVALID_HANDLE);
    CHECK_SETS_ERROR(gf_budget_destroy(held));
    CHECK_SETS_ERROR(gf_buffer_destroy(b));          /* a second destroy: refused, not a double free */
    CHECK_SETS_ERROR(gf_stream_destroy(s));
    CHECK_EQ_RESULT(gf_stream_synchronize(other), GF_OK);
    gf_stream_destroy(other);
    gf_device_close(dev);                          /* frees the shells */
    return th_finish();
}
