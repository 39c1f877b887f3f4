/* An unmodified program (no logger installed, nothing of gpuflow's debugging in its code) that
   tests/env_debug.sh runs under the environment's debugging switches, checking what reaches
   stderr. It makes a race (a copy to the device on one stream, a copy back on another, no
   event between), holds a stream for a while with a host callback and synchronizes it, makes
   one failed call (a zero-sized buffer) and one synchronous copy, launches a kernel with a
   barrier that not every thread reaches on a third stream, and a kernel that runs 0.4 s on a
   fourth (GPUFLOW_HANG_MS=100 names it). With a second stub device (GPUFLOW_STUB_DEVICES=2) it
   copies there too, and closes that device last. It follows the environment's locale, as
   programs that call setlocale(LC_ALL, "") do. Its own output: one line, "done" (and before it
   "decimal point ," where the locale writes numbers so). ENV_DEBUG_LATE_SYNC_DEBUG=v: it sets
   GPUFLOW_SYNC_DEBUG=v itself once its device is open, as a program may (read at each wait). */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdio.h>

#include <time.h>
static void nap_400ms(void)
{
    struct timespec ts = { 0, 400 * 1000000L };
    nanosleep(&ts, NULL);
}
/* A kernel whose barrier only thread 0 of each block reaches: the stub fails its stream (on a
   GPU it would hang). And one that takes 0.4 s: a kernel that "does not end" for a hang
   report of 100 ms. */
#define GF_KERNELS GF_KERNELS_AS_C
GF_KERNELS(
GF_KERNEL(slow_kernel, GF_PARAM(GF_GLOBAL float *, x))
{
    nap_400ms();
    x[gf_global_id(0)] = 2.0f;
}
GF_KERNEL(bad_sync, GF_PARAM(GF_GLOBAL float *, x))
{
    if (gf_local_id(0) == 0) gf_block_sync();
    x[gf_global_id(0)] = 1.0f;
}
)
#undef GF_KERNELS
#include <string.h>
#include <time.h>
#include <locale.h>

static void hold(void *user, gf_result status)
{
    struct timespec ts = { 0, 0 };
    (void)user; (void)status;
    ts.tv_nsec = 400 * 1000000L;   /* a stream held 0.4 s: GPUFLOW_HANG_MS=100 reports it */
    nanosleep(&ts, NULL);
}

int main(void)
{
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(bad_sync), GF_STUB_KERNEL(slow_kernel) };
    gf_launch_dims one = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    gf_kernel *slow = NULL;
    gf_launch_dims dims = { { 1, 1, 1 }, { 32, 1, 1 }, 0 };
    gf_module_desc md;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_device *dev;
    gf_stream *a, *b, *c, *d;
    gf_buffer *buf, *none = NULL;
    char host[1024], back[1024];
    if (setlocale(LC_ALL, "") && strcmp(localeconv()->decimal_point, ".") != 0) printf("decimal point %s\n", localeconv()->decimal_point);
    memset(host, 1, sizeof host);
    if (getenv("GPUFLOW_BACKEND")) {   /* AUTO under the variable (the rest runs on the stub as named) */
        if (gf_device_open(GF_BACKEND_AUTO, 0, &dev) == GF_OK) gf_device_close(dev);
        else puts("auto refused");
    }
    if (gf_device_open(GF_BACKEND_STUB, 0, &dev) != GF_OK) return 1;
    if (gf_stream_create(dev, NULL, &a) != GF_OK || gf_stream_create(dev, NULL, &b) != GF_OK ||
        gf_buffer_create(dev, sizeof host, &buf) != GF_OK) return 1;
    gf_copy_to_device_async(a, buf, 0, host, sizeof host);
    gf_copy_to_host_async(b, back, buf, 0, sizeof back);   /* races the copy on a */
    gf_stream_synchronize(a);
    gf_stream_synchronize(b);
    gf_stream_add_callback(a, hold, NULL);
    gf_stream_synchronize(a);
    (void)gf_buffer_create(dev, 0, &none);                  /* fails: size 0 */
    if (getenv("ENV_DEBUG_LATE_SYNC_DEBUG")) setenv("GPUFLOW_SYNC_DEBUG", getenv("ENV_DEBUG_LATE_SYNC_DEBUG"), 1);
    gf_copy_to_host(back, buf, 0, sizeof back);             /* a synchronous copy: a wait by another name */
    memset(&md, 0, sizeof md);
    md.stub_kernels = stub;
    md.stub_kernel_count = 2;
    if (gf_stream_create(dev, NULL, &c) == GF_OK && gf_module_load(dev, &md, &mod) == GF_OK &&
        gf_kernel_get(mod, "bad_sync", &k) == GF_OK) {
        gf_arg args[1] = { GF_ARG_BUFFER(buf) };
        gf_launch(c, k, dims, args, 1);                     /* its failure shows at the stream's next wait */
        gf_fill_async(c, buf, 0, 0, 16);                    /* GPUFLOW_SYNC=1: not blamed for the launch's failure */
        gf_stream_synchronize(c);
        if (gf_kernel_get(mod, "slow_kernel", &slow) == GF_OK && gf_stream_create(dev, NULL, &d) == GF_OK) {
            gf_launch(d, slow, one, args, 1);
            gf_stream_synchronize(d);                       /* GPUFLOW_HANG_MS=100: names the running kernel */
            gf_stream_destroy(d);
        }
        gf_module_destroy(mod);
        gf_stream_destroy(c);
    }
    gf_buffer_destroy(buf);
    gf_stream_destroy(a);
    gf_stream_destroy(b);
    if (gf_device_count(GF_BACKEND_STUB) > 1) {   /* GPUFLOW_STUB_DEVICES=2: a second device, closed last */
        gf_device *other = NULL;
        gf_stream *o = NULL;
        gf_buffer *ob = NULL;
        if (gf_device_open(GF_BACKEND_STUB, 1, &other) == GF_OK) {
            if (gf_stream_create(other, NULL, &o) == GF_OK && gf_buffer_create(other, sizeof host, &ob) == GF_OK) {
                gf_copy_to_device_async(o, ob, 0, host, sizeof host);
                gf_stream_synchronize(o);
            }
            if (ob) gf_buffer_destroy(ob);
            if (o) gf_stream_destroy(o);
            gf_device_close(dev);
            dev = other;
        }
    }
    gf_device_close(dev);
    puts("done");
    return 0;
}
