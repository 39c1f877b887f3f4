/* flow.c -- a small DAG of GPU tasks.

   A flow is a graph of tasks; each task only enqueues work on the stream it is handed. You
   say which task must finish before which, and gpuflow picks the streams: a chain stays on
   one stream (stream order is free), and only an edge that crosses streams costs an event.
   An edge that would close a cycle is refused when you add it, with the cycle's names.

        load --> scale_a --> gather
          \---> scale_b -----/

   The flow runs on a stream pool without blocking the host, twice, and then becomes a graph.

   Build and run:
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/flow.c -o flow -pthread -ldl && ./flow
*/
#include "example.h"

enum { N = 1000 };

typedef struct {
    gf_kernel *scale;
    gf_buffer *a, *b;
    float input[N], result_a[N], result_b[N];
} job;

static gf_result load(gf_stream *s, void *user) {
    job *j = (job *)user;
    gf_result r = gf_copy_to_device_async(s, j->a, 0, j->input, sizeof j->input);
    return r != GF_OK ? r : gf_copy_to_device_async(s, j->b, 0, j->input, sizeof j->input);
}
static gf_result scale_into(gf_stream *s, job *j, gf_buffer *buf, float a, float b) {
    unsigned n = N;
    gf_arg args[] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
    return gf_launch(s, j->scale, example_dims(n), args, 4);
}
static gf_result scale_a(gf_stream *s, void *user) { return scale_into(s, (job *)user, ((job *)user)->a, 2.0f, 0.0f); }
static gf_result scale_b(gf_stream *s, void *user) { return scale_into(s, (job *)user, ((job *)user)->b, 3.0f, 0.0f); }
static gf_result gather(gf_stream *s, void *user) {   /* needs both branches done */
    job *j = (job *)user;
    gf_result r = gf_copy_to_host_async(s, j->result_a, j->a, 0, sizeof j->result_a);
    return r != GF_OK ? r : gf_copy_to_host_async(s, j->result_b, j->b, 0, sizeof j->result_b);
}

int main(void) {
    static job j;
    gf_device *dev;
    gf_module *mod;
    gf_module_desc desc = example_module_desc();
    gf_stream_pool *pool;
    gf_stream *s;
    gf_flow *flow;
    gf_graph *graph;
    gf_graph_info info;
    gf_task t_load, t_a, t_b, t_gather;
    gf_result r;
    int i, run;

    for (i = 0; i < N; i++) j.input[i] = (float)i;
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &j.scale));
    CHECK(gf_buffer_create(dev, sizeof j.input, &j.a));
    CHECK(gf_buffer_create(dev, sizeof j.input, &j.b));
    CHECK(gf_stream_pool_create(dev, NULL, &pool));

    CHECK(gf_flow_create(dev, NULL, &flow));
    CHECK(gf_flow_add(flow, "load", load, &j, &t_load));
    CHECK(gf_flow_add(flow, "scale_a", scale_a, &j, &t_a));
    CHECK(gf_flow_add(flow, "scale_b", scale_b, &j, &t_b));
    CHECK(gf_flow_add(flow, "gather", gather, &j, &t_gather));
    CHECK(gf_flow_depend(flow, t_load, t_a));
    CHECK(gf_flow_depend(flow, t_load, t_b));
    CHECK(gf_flow_depend(flow, t_a, t_gather));
    CHECK(gf_flow_depend(flow, t_b, t_gather));

    r = gf_flow_depend(flow, t_gather, t_load);   /* would close a cycle: refused, flow unchanged */
    printf("adding gather -> load: %s\n  %s\n", gf_result_name(r), gf_last_error());

    for (run = 0; run < 2; run++) {
        CHECK(gf_flow_run(flow, pool));            /* returns at once */
        CHECK(gf_stream_pool_synchronize(pool));
        for (i = 0; i < N; i++)
            if (j.result_a[i] != 2.0f * (float)i || j.result_b[i] != 3.0f * (float)i) {
                fprintf(stderr, "run %d: element %d: %f %f\n", run, i, j.result_a[i], j.result_b[i]);
                return 1;
            }
        printf("run %d: ok\n", run);
    }

    CHECK(gf_stream_create(dev, NULL, &s));
    CHECK(gf_flow_capture(flow, s, &graph));
    CHECK(gf_graph_info(graph, &info));
    CHECK(gf_graph_launch(graph, s));
    CHECK(gf_stream_synchronize(s));
    printf("as a graph: %d nodes (%s), ok\n", info.nodes, info.native ? "native" : "recorded");

    gf_graph_destroy(graph);
    gf_stream_destroy(s);
    gf_flow_destroy(flow);
    gf_stream_pool_destroy(pool);
    gf_buffer_destroy(j.b);
    gf_buffer_destroy(j.a);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}
