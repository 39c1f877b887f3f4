/* graph.c -- capture once, replay many times.

   Between gf_stream_begin_capture and gf_stream_end_capture nothing runs: the work enqueued
   on the stream is recorded into a graph. Launching the graph replays all of it as one
   unit, which costs far less per operation than issuing each call again (on CUDA and HIP
   one driver launch for the whole graph). gf_graph_update gives a graph the parameters of
   another graph of the same shape without rebuilding it.

   Build and run:
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/graph.c -o graph -pthread -ldl && ./graph
*/
#include "example.h"

enum { N = 256 };

/* Records: x = x * a + b, then a copy of x to the host. */
static gf_result record_step(gf_stream *s, gf_kernel *k, gf_buffer *x, float a, float b, float *out) {
    unsigned n = N;
    gf_arg args[] = { GF_ARG_BUFFER(x), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
    gf_result r;
    if ((r = gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL)) != GF_OK) return r;
    if ((r = gf_launch(s, k, example_dims(n), args, 4)) != GF_OK ||
        (r = gf_copy_to_host_async(s, out, x, 0, N * sizeof(float))) != GF_OK)
        return r;
    return GF_OK;
}

int main(void) {
    static float out[N];
    gf_device *dev;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();
    gf_stream *s;
    gf_buffer *x;
    gf_graph *add_one, *add_ten;
    gf_graph_info info;
    int i;

    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &scale));
    CHECK(gf_stream_create(dev, NULL, &s));
    CHECK(gf_buffer_create(dev, N * sizeof(float), &x));
    CHECK(gf_fill_async(s, x, 0, 0, N * sizeof(float)));     /* x = 0 */
    CHECK(gf_stream_synchronize(s));

    CHECK(record_step(s, scale, x, 1.0f, 1.0f, out));         /* x += 1: recorded, not run */
    CHECK(gf_stream_end_capture(s, &add_one));
    CHECK(gf_graph_info(add_one, &info));
    printf("captured %d nodes (%s graph)\n", info.nodes, info.native ? "native" : "recorded");

    for (i = 0; i < 3; i++) CHECK(gf_graph_launch(add_one, s));
    CHECK(gf_stream_synchronize(s));
    printf("after 3 launches: x[0] = %g (expected 3)\n", out[0]);
    if (out[0] != 3.0f) return 1;

    CHECK(record_step(s, scale, x, 1.0f, 10.0f, out));        /* same shape, new value */
    CHECK(gf_stream_end_capture(s, &add_ten));
    CHECK(gf_graph_update(add_one, add_ten));                  /* add_one now adds 10 */
    CHECK(gf_graph_launch(add_one, s));
    CHECK(gf_stream_synchronize(s));
    printf("after update and 1 launch: x[0] = %g (expected 13)\n", out[0]);
    if (out[0] != 13.0f) return 1;

    gf_graph_destroy(add_ten);
    gf_graph_destroy(add_one);
    gf_buffer_destroy(x);
    gf_stream_destroy(s);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}
