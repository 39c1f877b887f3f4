/* hot_reload.c -- edit a kernel while the program runs: a frame loop that polls the kernel
   file at each frame's start and, when it changed, launches the new code from then on.

   The program writes its own kernel file (so that it runs anywhere), runs six frames, and
   "edits" the file after the third, as you would in your editor: tint's constant goes from 1
   to 2. gf_module_poll sees the new modification time, compiles the file again and points the
   gf_kernel the loop holds at the new code; a graph captured before the edit follows too. An
   edit that does not compile keeps the old code and hands back the compiler's log.

   On the CPU stub the kernels are the C form compiled into this program, which no file can
   change: the poll says so once and the loop goes on with the old code. Build with
   -DGPUFLOW_OPENCL (PoCL will do) and run with GPUFLOW_BACKEND=opencl to see the reload.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/hot_reload.c -o hot_reload -pthread -ldl && ./hot_reload
*/
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(_WIN32)
#  include <sys/utime.h>
#  define utimbuf _utimbuf
#  define utime _utime
#else
#  include <utime.h>
#endif

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); return 1; } } while (0)

/* The stub's form of the first version (what a program compiles in with GF_KERNELS_AS_C). */
#define GF_KERNELS GF_KERNELS_AS_C
GF_KERNELS(
GF_KERNEL(tint, GF_PARAM(GF_GLOBAL float *, x), GF_PARAM(unsigned, n))
{
    unsigned i = gf_global_id(0);
    if (i < n) x[i] = 1.0f;
}
)
#undef GF_KERNELS

/* The kernel file as an editor would leave it; a later modification time than the last. */
static int write_kernel(const char *path, int version) {
    static time_t stamp;
    struct utimbuf t;
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fprintf(f, "GF_KERNELS(\nGF_KERNEL(tint, GF_PARAM(GF_GLOBAL float *, x), GF_PARAM(unsigned, n))\n{\n"
               "    unsigned i = gf_global_id(0);\n    if (i < n) x[i] = %d.0f;\n}\n)\n", version);
    if (fclose(f) != 0) return 0;
    stamp = stamp ? stamp + 2 : time(NULL);   /* editors save within a second; the poll must still see it */
    t.actime = t.modtime = stamp;
    return utime(path, &t) == 0;
}

int main(void) {
    enum { N = 1024, FRAMES = 6 };
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(tint) };
    static float x[N];
    char path[256];
    gf_device *dev;
    gf_stream *s;
    gf_buffer *buf;
    gf_module *mod;
    gf_kernel *k;
    gf_graph *g;
    gf_module_desc desc;
    gf_launch_dims dims;
    unsigned n = N;
    gf_arg args[2];
    int frame, told = 0;

#if defined(_WIN32)
    snprintf(path, sizeof path, "gpuflow-hot-reload-example.gfk");
#else
    snprintf(path, sizeof path, "%s/gpuflow-hot-reload-example.gfk", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
#endif
    if (!write_kernel(path, 1)) { fprintf(stderr, "cannot write %s\n", path); return 1; }
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    printf("hot reload on %s; the kernel file is %s\n", gf_device_name(dev), path);
    CHECK(gf_stream_create(dev, NULL, &s));
    CHECK(gf_buffer_create(dev, sizeof x, &buf));
    memset(&desc, 0, sizeof desc);
    desc.source_path = path;          /* the device compiles the file; the stub runs stub[] */
    desc.stub_kernels = stub;
    desc.stub_kernel_count = 1;
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "tint", &k));
    memset(&dims, 0, sizeof dims);
    dims.grid[0] = N / 256; dims.grid[1] = dims.grid[2] = 1;
    dims.block[0] = 256; dims.block[1] = dims.block[2] = 1;
    args[0] = (gf_arg)GF_ARG_BUFFER(buf);
    args[1] = (gf_arg)GF_ARG(n);
    CHECK(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL));   /* a graph made before the edit */
    CHECK(gf_launch(s, k, dims, args, 2));
    CHECK(gf_stream_end_capture(s, &g));

    for (frame = 0; frame < FRAMES; frame++) {
        int reloaded = 0;
        gf_result r = gf_module_poll(mod, &reloaded);   /* the frame boundary: the file changed? */
        if (r == GF_ERROR_NOT_SUPPORTED && !told++) printf("  (%s)\n", gf_last_error());
        else if (r != GF_OK && r != GF_ERROR_NOT_SUPPORTED) printf("  the edit does not build; the old code runs on: %s\n", gf_last_error());
        if (reloaded) printf("  frame %d: the kernel file changed: reloaded\n", frame);
        CHECK(gf_graph_launch(g, s));
        CHECK(gf_copy_to_host_async(s, x, buf, 0, sizeof x));
        CHECK(gf_stream_synchronize(s));
        printf("frame %d: x[0] = %.1f\n", frame, x[0]);
        if (frame == 2 && !write_kernel(path, 2)) { fprintf(stderr, "cannot write %s\n", path); return 1; }
    }
    gf_graph_destroy(g);
    gf_module_destroy(mod);
    gf_buffer_destroy(buf);
    gf_stream_destroy(s);
    gf_device_close(dev);
    remove(path);
    return 0;
}
