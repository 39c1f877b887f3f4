/* pool_threads.c -- several threads sharing one stream pool.

   Creating a stream costs tens of microseconds on a GPU; a pool makes a few once and hands
   them out. Here four threads each do a round of work many times: acquire a stream (with a
   hint that says what kind of work follows), fill a buffer, read it back, wait, release.
   The pool is thread-safe, and the WORKLOAD strategy keeps memory-bound work and
   compute-bound work on different streams so that they can overlap.

   Build and run:
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/pool_threads.c -o pool_threads -pthread -ldl && ./pool_threads
*/
#include "example.h"
#include <pthread.h>

enum { THREADS = 4, ROUNDS = 50, BYTES = 4096 };

typedef struct { gf_device *dev; gf_stream_pool *pool; int id; int failures; } worker;

static void *work(void *arg) {
    worker *w = (worker *)arg;
    unsigned char host[BYTES];
    gf_buffer *buf;
    int round, i;
    if (gf_buffer_create(w->dev, BYTES, &buf) != GF_OK) { w->failures++; return NULL; }
    for (round = 0; round < ROUNDS; round++) {
        gf_acquire_hint hint = { .workload = GF_WORKLOAD_MEMORY };
        unsigned char value = (unsigned char)(w->id * 16 + round);
        gf_stream *s;
        if (gf_stream_pool_acquire(w->pool, &hint, &s) != GF_OK) { w->failures++; break; }
        memset(host, 0, sizeof host);
        if (gf_fill_async(s, buf, 0, value, BYTES) != GF_OK ||
            gf_copy_to_host_async(s, host, buf, 0, BYTES) != GF_OK ||
            gf_stream_synchronize(s) != GF_OK)
            w->failures++;
        gf_stream_pool_release(w->pool, s);
        for (i = 0; i < BYTES; i++) if (host[i] != value) { w->failures++; break; }
    }
    gf_buffer_destroy(buf);
    return NULL;
}

int main(void) {
    gf_device *dev;
    gf_stream_pool *pool;
    gf_stream_pool_stats stats;
    pthread_t threads[THREADS];
    worker workers[THREADS];
    int i, failures = 0;

    if (gf_device_open(GF_BACKEND_AUTO, 0, &dev) != GF_OK) { fprintf(stderr, "open: %s\n", gf_last_error()); return 1; }
    gf_stream_pool_desc desc = { .count = 6, .strategy = GF_POOL_WORKLOAD, .label = "workers" };
    if (gf_stream_pool_create(dev, &desc, &pool) != GF_OK) { fprintf(stderr, "pool: %s\n", gf_last_error()); return 1; }

    for (i = 0; i < THREADS; i++) {
        workers[i].dev = dev; workers[i].pool = pool; workers[i].id = i; workers[i].failures = 0;
        pthread_create(&threads[i], NULL, work, &workers[i]);
    }
    for (i = 0; i < THREADS; i++) { pthread_join(threads[i], NULL); failures += workers[i].failures; }

    gf_stream_pool_stats(pool, &stats);
    printf("acquisitions per stream:");
    for (i = 0; i < stats.count; i++) printf(" %llu", (unsigned long long)stats.acquisitions[i]);
    printf("\n%d threads x %d rounds through one pool: %s\n", THREADS, ROUNDS, failures ? "FAILED" : "ok");
    gf_stream_pool_destroy(pool);
    gf_device_close(dev);
    return failures != 0;
}
