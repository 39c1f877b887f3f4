/* pipeline.c -- triple buffering over a stream set.

   A long array is processed in chunks: upload a chunk, run a kernel on it, download it. On
   one stream those three steps run one after another. A stream set is a ring of streams
   (here 3): chunk i goes to stream i % 3 with its own device buffer, so while chunk i
   computes, chunk i+1 can upload and chunk i-1 download: copies overlap kernels.
   gf_stream_set_next(set, i) hands out stream i % 3 only once the chunk that used it three
   rounds ago is done, so the slot's buffer is free to reuse. The host never waits for the
   whole device, only for the slot it is about to refill.

   Build and run:
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/pipeline.c -o pipeline -pthread -ldl && ./pipeline
*/
#include "example.h"

enum { DEPTH = 3, CHUNKS = 16, CHUNK = 4096 };

int main(void) {
    gf_device *dev;
    gf_stream_set *set;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();
    gf_buffer *slot_buf[DEPTH];
    float *host;
    unsigned n = CHUNK, i;
    float a = 2.0f, b = 1.0f;
    int s;

    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    printf("pipeline on %s (%s)\n", gf_device_name(dev), gf_backend_name(gf_device_backend(dev)));
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &scale));
    CHECK(gf_stream_set_create(dev, DEPTH, "chunk", &set));
    for (s = 0; s < DEPTH; s++) CHECK(gf_buffer_create(dev, CHUNK * sizeof(float), &slot_buf[s]));
    CHECK(gf_host_alloc(dev, (size_t)CHUNKS * CHUNK * sizeof(float), (void **)&host));   /* pinned */
    for (i = 0; i < (unsigned)CHUNKS * CHUNK; i++) host[i] = (float)i;

    for (i = 0; i < CHUNKS; i++) {
        gf_stream *st;
        gf_buffer *buf = slot_buf[i % DEPTH];
        float *chunk = host + (size_t)i * CHUNK;
        gf_arg args[] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
        CHECK(gf_stream_set_next(set, i, &st));   /* waits only for this slot's previous chunk */
        CHECK(gf_copy_to_device_async(st, buf, 0, chunk, CHUNK * sizeof(float)));
        CHECK(gf_launch(st, scale, example_dims(n), args, 4));
        CHECK(gf_copy_to_host_async(st, chunk, buf, 0, CHUNK * sizeof(float)));
    }
    CHECK(gf_stream_set_synchronize(set));

    for (i = 0; i < (unsigned)CHUNKS * CHUNK; i++)
        if (host[i] != (float)i * a + b) { fprintf(stderr, "element %u: %f, expected %f\n", i, host[i], (float)i * a + b); return 1; }
    printf("%d chunks of %d floats through a %d-deep stream set: ok\n", CHUNKS, CHUNK, DEPTH);

    gf_host_free(dev, host);
    for (s = 0; s < DEPTH; s++) gf_buffer_destroy(slot_buf[s]);
    gf_stream_set_destroy(set);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}
