/* frame.c -- the shape of a game frame: a flow once, then a graph replayed every frame.

   A frame here is five tasks:

        upload --> simulate --> light -------> readback
                           \--> particles --/

   upload copies this frame's input to the device, simulate moves the world (the example
   kernel: x = x * a + b), and two independent passes each copy the world into scratch
   memory of their own and shade it; readback brings both passes home. The light pass is the
   frame's critical path, so it and the tasks on its path run at high priority; particles
   can wait, and run at low priority on a stream of their own.

   Frame 0 runs as a flow on a stream pool (GF_POOL_PRIORITY: the task's priority picks its
   stream), and gf_flow_write_dot draws it to frame.dot (`dot -Tsvg frame.dot`). Every later
   frame is a replay of a graph captured once, in a graph pool: the passes' scratch buffers,
   allocated inside the capture, come from the pool's blocks, which every graph captured in
   the same pool shares (a menu frame, a loading frame: the pool's graphs never run at once).
   Per-frame values (the time step, the light, the particle offset) reach the replays through
   gf_graph_set_kernel_args, with no new capture. The profiler records it all, with a range
   per frame, into frame_trace.json (open it in https://ui.perfetto.dev).

   Build and run:
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/frame.c -o frame -pthread -ldl && ./frame
*/
#include "example.h"

enum { N = 4096, FRAMES = 6 };

typedef struct frame {
    gf_kernel *scale;
    gf_buffer *world;                /* lives across frames */
    gf_buffer *light, *particles;    /* each pass's scratch: made inside the frame */
    float *in, *light_out, *particles_out;   /* pinned host memory: see main */
    float dt, brightness, offset;    /* this frame's arguments */
} frame;

/* The example kernel over all of x: x = x * a + b. The graph's launches are these, in the
   order the capture made them: 0 simulate, 1 light, 2 particles. */
static gf_result scale(gf_stream *s, frame *f, gf_buffer *x, float a, float b) {
    unsigned n = N;
    gf_arg args[] = { GF_ARG_BUFFER(x), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
    return gf_launch(s, f->scale, example_dims(n), args, 4);
}
/* The same arguments, given to launch `index` of a captured graph for its next replays. */
static gf_result set_scale(gf_graph *g, int index, gf_buffer *x, float a, float b) {
    unsigned n = N;
    gf_arg args[] = { GF_ARG_BUFFER(x), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
    return gf_graph_set_kernel_args(g, index, args, 4);
}

/* The tasks: each only enqueues work on the stream it is given. */
static gf_result upload(gf_stream *s, void *user) {
    frame *f = (frame *)user;
    return gf_copy_to_device_async(s, f->world, 0, f->in, N * sizeof(float));
}
static gf_result simulate(gf_stream *s, void *user) {
    frame *f = (frame *)user;
    return scale(s, f, f->world, 1.0f, f->dt);
}
/* A pass: scratch memory, stream-ordered (from the graph pool inside a capture), a copy of
   the world into it, then the kernel. */
static gf_result pass(gf_stream *s, frame *f, gf_buffer **scratch, float a, float b) {
    gf_result r = gf_buffer_create_async(s, N * sizeof(float), scratch);
    if (r == GF_OK) r = gf_copy_buffer_async(s, *scratch, 0, f->world, 0, N * sizeof(float));
    return r != GF_OK ? r : scale(s, f, *scratch, a, b);
}
static gf_result light(gf_stream *s, void *user) {
    frame *f = (frame *)user;
    return pass(s, f, &f->light, f->brightness, 0.0f);
}
static gf_result particles(gf_stream *s, void *user) {
    frame *f = (frame *)user;
    return pass(s, f, &f->particles, -1.0f, f->offset);
}
/* Both results home, then the scratch goes back (in stream order: after the copies). Inside
   a capture of a pool the graph owns its scratch: these frees are no-ops, and the handles
   stay valid while the graph lives. */
static gf_result readback(gf_stream *s, void *user) {
    frame *f = (frame *)user;
    gf_result r = gf_copy_to_host_async(s, f->light_out, f->light, 0, N * sizeof(float));
    if (r == GF_OK) r = gf_copy_to_host_async(s, f->particles_out, f->particles, 0, N * sizeof(float));
    if (r == GF_OK) r = gf_buffer_destroy_async(s, f->light);
    return r != GF_OK ? r : gf_buffer_destroy_async(s, f->particles);
}

/* The frame for the graph. gf_flow_capture makes a graph of a flow, but it begins its capture
   itself, with no graph pool; a pooled capture goes through gf_graph_capture_desc (desc.pool),
   so this function enqueues the flow's tasks itself, in the flow's order, with particles
   forked onto the low-priority stream and joined back as the flow's lanes have it. */
typedef struct { frame *f; gf_stream *low; } frame_capture;
static gf_result capture_frame(gf_stream *s, void *user) {
    frame_capture *c = (frame_capture *)user;
    gf_result r = upload(s, c->f);
    if (r == GF_OK) r = simulate(s, c->f);
    if (r == GF_OK) r = gf_stream_wait_stream(c->low, s);   /* fork: low waits for the world */
    if (r == GF_OK) r = light(s, c->f);
    if (r == GF_OK) r = particles(c->low, c->f);
    if (r == GF_OK) r = gf_stream_wait_stream(s, c->low);   /* join: readback waits for both */
    return r != GF_OK ? r : readback(s, c->f);
}

/* Frame n's input and arguments, and its check. */
static void prepare(frame *f, int n) {
    int i;
    for (i = 0; i < N; i++) f->in[i] = (float)(i + n);
    f->dt = 0.5f * (float)n;
    f->brightness = 1.0f + (float)n;
    f->offset = 100.0f * (float)n;
}
static int frame_ok(const frame *f, int n) {
    int i;
    for (i = 0; i < N; i++) {
        float world = f->in[i] + f->dt;
        if (f->light_out[i] != world * f->brightness || f->particles_out[i] != f->offset - world) {
            fprintf(stderr, "frame %d, element %d: light %g, particles %g\n", n, i, f->light_out[i], f->particles_out[i]);
            return 0;
        }
    }
    return 1;
}

int main(void) {
    static frame f;
    frame_capture fc;
    gf_device *dev;
    gf_module *mod;
    gf_module_desc desc = example_module_desc();
    gf_stream_pool *pool;
    gf_flow *flow;
    gf_flow_stats stats;
    gf_task t_upload, t_simulate, t_light, t_particles, t_readback;
    gf_stream *s;
    gf_graph_pool *graph_pool;
    gf_graph *graph;
    gf_graph_info info;
    char range[32];
    int n;

    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_profiler_enable(dev, GF_PROFILE_ON));
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &f.scale));
    CHECK(gf_buffer_create(dev, N * sizeof(float), &f.world));
    /* Pinned: a replay's copies read and write the host memory when they run, so the next
       frame's input written here is what the graph uploads. */
    CHECK(gf_host_alloc(dev, N * sizeof(float), (void **)&f.in));
    CHECK(gf_host_alloc(dev, N * sizeof(float), (void **)&f.light_out));
    CHECK(gf_host_alloc(dev, N * sizeof(float), (void **)&f.particles_out));

    gf_stream_pool_desc pool_desc = {
        .count = 3,                            /* one stream per priority: high, normal, low */
        .strategy = GF_POOL_PRIORITY,
        .label = "frame",
    };
    CHECK(gf_stream_pool_create(dev, &pool_desc, &pool));

    /* The flow: tasks with priorities, then the edges. */
    gf_flow_desc flow_desc = { .label = "frame" };
    CHECK(gf_flow_create(dev, &flow_desc, &flow));
    gf_task_desc td = { .user = &f, .priority = GF_PRIORITY_HIGH };   /* name and fn: per task, below */
    td.name = "upload";    td.fn = upload;    CHECK(gf_flow_add_desc(flow, &td, &t_upload));
    td.name = "simulate";  td.fn = simulate;  CHECK(gf_flow_add_desc(flow, &td, &t_simulate));
    td.name = "light";     td.fn = light;     CHECK(gf_flow_add_desc(flow, &td, &t_light));
    td.name = "readback";  td.fn = readback;  CHECK(gf_flow_add_desc(flow, &td, &t_readback));
    td.priority = GF_PRIORITY_LOW;
    td.name = "particles"; td.fn = particles; CHECK(gf_flow_add_desc(flow, &td, &t_particles));
    CHECK(gf_flow_depend(flow, t_upload, t_simulate));
    CHECK(gf_flow_depend(flow, t_simulate, t_light));
    CHECK(gf_flow_depend(flow, t_simulate, t_particles));
    CHECK(gf_flow_depend(flow, t_light, t_readback));
    CHECK(gf_flow_depend(flow, t_particles, t_readback));

    /* Frame 0: the flow itself. */
    prepare(&f, 0);
    CHECK(gf_flow_run(flow, pool));
    CHECK(gf_stream_pool_synchronize(pool));
    if (!frame_ok(&f, 0)) return 1;
    CHECK(gf_flow_get_stats(flow, &stats));
    CHECK(gf_flow_write_dot(flow, "frame.dot"));
    printf("frame 0: a flow of %llu tasks, %llu edge%s across streams (an event each): ok; wrote frame.dot\n",
           (unsigned long long)stats.tasks_run, (unsigned long long)stats.cross_edges, stats.cross_edges == 1 ? "" : "s");

    /* The same frame, captured once on the pool's high and low streams, in a graph pool. */
    gf_acquire_hint high = { .priority = GF_PRIORITY_HIGH }, low = { .priority = GF_PRIORITY_LOW };
    CHECK(gf_stream_pool_acquire(pool, &high, &s));
    CHECK(gf_stream_pool_acquire(pool, &low, &fc.low));
    fc.f = &f;
    CHECK(gf_graph_pool_create(dev, &graph_pool));
    gf_capture_desc cd = { .pool = graph_pool };
    CHECK(gf_graph_capture_desc(s, &cd, capture_frame, &fc, &graph));
    CHECK(gf_graph_info(graph, &info));
    printf("captured: %d nodes, %d launches (%s graph)\n", info.nodes, info.launches, info.native ? "native" : "recorded");

    /* Frames 1..: new input in the pinned buffer, new arguments in the graph, one launch. */
    for (n = 1; n < FRAMES; n++) {
        prepare(&f, n);
        CHECK(set_scale(graph, 0, f.world, 1.0f, f.dt));
        CHECK(set_scale(graph, 1, f.light, f.brightness, 0.0f));
        CHECK(set_scale(graph, 2, f.particles, -1.0f, f.offset));
        snprintf(range, sizeof range, "frame %d", n);
        gf_range_push(s, range);
        CHECK(gf_graph_launch(graph, s));
        gf_range_pop(s);
        CHECK(gf_stream_synchronize(s));
        if (!frame_ok(&f, n)) return 1;
        printf("frame %d: replayed with dt %.1f, brightness %.0f, offset %.0f: ok\n", n, f.dt, f.brightness, f.offset);
    }

    CHECK(gf_profiler_write_trace(dev, "frame_trace.json"));
    printf("wrote frame_trace.json; %d frames: ok\n", FRAMES);

    gf_graph_destroy(graph);                    /* the graphs first, then their pool */
    gf_graph_pool_destroy(graph_pool);
    CHECK(gf_stream_pool_release(pool, fc.low));
    CHECK(gf_stream_pool_release(pool, s));
    gf_flow_destroy(flow);
    gf_stream_pool_destroy(pool);
    gf_host_free(dev, f.particles_out);
    gf_host_free(dev, f.light_out);
    gf_host_free(dev, f.in);
    gf_buffer_destroy(f.world);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}
