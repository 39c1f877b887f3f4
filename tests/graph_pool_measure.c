/* Shared graph memory, measured: two graphs that each allocate 1 GiB inside their captures,
   instantiated and launched, with their memory private and then from one gf_graph_pool. Prints
   the device memory in use (gf_device_memory_info: the driver's own count) for each.

       ./graph_pool_measure [cuda|hip|opencl|stub]   (the GPU machine: make test-gpu runs it on CUDA)

   A check each: both graphs compute, and the pooled pair holds no more than one graph's memory
   plus a margin (the least of up to three tries: other programs' memory counts too) (the private pair's use is printed, not asserted: how a driver keeps graph
   memory is its own business). */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include "harness.h"

#define GIB ((size_t)1 << 30)
typedef struct { gf_buffer *out; unsigned char v; } fill_job;

static gf_result capture_1gib(gf_stream *s, void *user)   /* 1 GiB allocated inside the capture */
{
    fill_job *j = (fill_job *)user;
    gf_buffer *tmp = NULL;
    gf_result r = gf_buffer_create_async(s, GIB, &tmp);
    if (r == GF_OK) r = gf_fill_async(s, tmp, 0, j->v, GIB);
    if (r == GF_OK) r = gf_copy_buffer_async(s, j->out, 0, tmp, GIB - 64, 64);
    if (r == GF_OK) r = gf_buffer_destroy_async(s, tmp);
    return r;
}

static size_t used(gf_device *dev)
{
    size_t f = 0, t = 0;
    gf_device_synchronize(dev);
    gf_device_memory_info(dev, &f, &t);
    return t - f;
}

/* Two graphs, launched once each, in the pool or not; returns the memory they add. */
static double pair(gf_device *dev, gf_stream *s, gf_graph_pool *pool, const char *what)
{
    gf_buffer *out1 = NULL, *out2 = NULL;
    gf_graph *g1 = NULL, *g2 = NULL;
    gf_capture_desc d;
    fill_job j1, j2;
    unsigned char h[64];
    size_t before;
    double added;
    gf_buffer_create(dev, 64, &out1);
    gf_buffer_create(dev, 64, &out2);
    gf_device_trim(dev, 0);
    before = used(dev);
    memset(&d, 0, sizeof d);
    d.mode = GF_CAPTURE_RELAXED;
    d.pool = pool;
    j1.out = out1; j1.v = 0x11;
    j2.out = out2; j2.v = 0x22;
    CHECK_EQ_RESULT(gf_graph_capture_desc(s, &d, capture_1gib, &j1, &g1), GF_OK);
    CHECK_EQ_RESULT(gf_graph_capture_desc(s, &d, capture_1gib, &j2, &g2), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g1, s), GF_OK);
    CHECK_EQ_RESULT(gf_graph_launch(g2, s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    added = (double)(used(dev) - before) / (double)GIB;
    CHECK(gf_copy_to_host(h, out1, 0, 64) == GF_OK && h[0] == 0x11 && gf_copy_to_host(h, out2, 0, 64) == GF_OK && h[63] == 0x22,
          "both graphs ran and computed");
    printf("%s: two graphs of 1 GiB each, instantiated and launched: %.2f GiB of device memory in use\n", what, added);
    gf_graph_destroy(g1);
    gf_graph_destroy(g2);
    gf_buffer_destroy(out1);
    gf_buffer_destroy(out2);
    return added;
}

int main(int argc, char **argv)
{
    gf_backend b = GF_BACKEND_CUDA;
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_graph_pool *pool = NULL;
    double shared, apart;
    int tries;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2) th_backend_named(argv[1], &b);   /* a backend's name, else CUDA */
    if (gf_device_open(b, 0, &dev) != GF_OK) {
        printf("notice: graph_pool_measure skipped: %s\n", gf_last_error());
        SKIP("no device");
        return th_finish();
    }
    printf("graph pool on %s\n", gf_device_name(dev));
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    apart = pair(dev, s, NULL, "private");
    CHECK_EQ_RESULT(gf_graph_pool_create(dev, &pool), GF_OK);
    shared = pair(dev, s, pool, "pool");
    /* the driver's count is the whole device's: make test-gpu runs other tests beside this one,
       whose memory comes and goes meanwhile and only ever adds. The least of three tries. */
    for (tries = 1; tries < 3 && shared >= 1.25; tries++) {
        double again = pair(dev, s, pool, "pool, again");
        if (again < shared) shared = again;
    }
    gf_graph_pool_destroy(pool);
    CHECK(shared < 1.25, "the pooled pair holds about one graph's memory");
    printf("pool %.2f GiB against private %.2f GiB\n", shared, apart);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return th_finish();
}
