// The header compiled as C++ with the implementation (and every backend the Makefile found),
// then used: a small round trip through a stream, a stub kernel, an event and a graph, so
// C++ compatibility is tested by building and running, not just by parsing.
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <vector>
#include "harness.h"
#include "test_kernels.h"

int main()
{
    gf_device *dev = nullptr;
    gf_stream *s = nullptr;
    gf_buffer *b = nullptr;
    gf_event *ev = nullptr;
    gf_module *mod = nullptr;
    gf_kernel *k = nullptr;
    gf_graph *g = nullptr;
    std::vector<uint32_t> up(64), down(64, 0);
    if (!CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) return th_finish();
    for (size_t i = 0; i < up.size(); i++) up[i] = static_cast<uint32_t>(i);
    gf_stream_desc d = { "c++", GF_PRIORITY_NORMAL };
    CHECK_EQ_RESULT(gf_stream_create(dev, &d, &s), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, up.size() * sizeof(uint32_t), &b), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, GF_EVENT_TIMING, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_module_load(dev, &tk_module, &mod), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "add_u32", &k), GF_OK);

    uint32_t n = 64, v = 10;
    gf_arg args[3] = { GF_ARG_BUFFER(b), GF_ARG(n), GF_ARG(v) };
    gf_launch_dims dims = { { 2, 1, 1 }, { 32, 1, 1 }, 0 };
    CHECK_EQ_RESULT(gf_copy_to_device_async(s, b, 0, up.data(), up.size() * sizeof(uint32_t)), GF_OK);
    CHECK_EQ_RESULT(gf_launch(s, k, dims, args, 3), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, down.data(), b, 0, down.size() * sizeof(uint32_t)), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    bool ok = true;
    for (size_t i = 0; i < down.size(); i++) ok = ok && down[i] == i + 10;
    CHECK(ok, "C++: upload, add_u32 (GF_ARG, GF_ARG_BUFFER), download");
    CHECK_EQ_RESULT(gf_event_query(ev), GF_OK);

    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_launch(s, k, dims, args, 3), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, down.data(), b, 0, down.size() * sizeof(uint32_t)), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(down[5] == 25, "C++: a captured launch replays");
    gf_stream_stats st;
    CHECK(gf_stream_stats(s, &st) == GF_OK && st.launches >= 1, "C++: the contract's gf_stream_stats() spelling");
    CHECK_FAIL(gf_stream_query(nullptr), GF_ERROR_INVALID_HANDLE);

    gf_graph_destroy(g);
    gf_module_destroy(mod);
    gf_event_destroy(ev);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return th_finish();
}
