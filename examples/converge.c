/* converge.c -- a convergence loop inside one graph: iterate until the answer stops moving,
   without the host deciding each iteration.

   Newton's method for square roots, x <- (x + a / x) / 2, on N numbers at once. Each
   iteration clears a flag, runs the step, and the step raises the flag wherever an element
   still moved by more than a tolerance. The loop is captured once:

       while (flag != 0) { flag = 0; step }      -- gf_stream_begin_while / gf_stream_end_while

   and every replay runs the loop to convergence by itself: the int is read before each
   iteration (the first included), so the flag starts at 1. Where the backend records graphs
   (the stub, OpenCL) the replay reads the flag back at each iteration; see the README's
   "Graphs that decide" for what each backend does and costs.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/converge.c -o converge -pthread -ldl && ./converge
*/
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"
#include <stdio.h>
#include <string.h>

#define GF_KERNELS GF_KERNELS_AS_TEXT
static const char converge_source[] =
#include "converge.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "converge.gfk"
#undef GF_KERNELS

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); return 1; } } while (0)

int main(void) {
    enum { N = 4096 };
    static const gf_stub_kernel stub[] = { GF_STUB_KERNEL(newton_step) };
    static float a[N], x[N];
    gf_device *dev;
    gf_stream *s;
    gf_module *mod;
    gf_kernel *k;
    gf_buffer *ab, *xb, *flag;
    gf_graph *loop;
    gf_graph_info info;
    gf_module_desc desc;
    gf_launch_dims dims;
    unsigned n = N, run, i, worst = 0;
    float tolerance = 1e-6f;
    gf_arg args[5];
    int one = 1;

    memset(&desc, 0, sizeof desc);
    memset(&dims, 0, sizeof dims);
    dims.grid[0] = N / 256; dims.grid[1] = dims.grid[2] = 1;
    dims.block[0] = 256; dims.block[1] = dims.block[2] = 1;
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_stream_create(dev, NULL, &s));
    desc.source = converge_source; desc.source_name = "converge.gfk";
    desc.stub_kernels = stub; desc.stub_kernel_count = 1;
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "newton_step", &k));
    CHECK(gf_buffer_create(dev, sizeof a, &ab));
    CHECK(gf_buffer_create(dev, sizeof x, &xb));
    CHECK(gf_buffer_create(dev, sizeof(int), &flag));
    args[0] = (gf_arg)GF_ARG_BUFFER(xb); args[1] = (gf_arg)GF_ARG_BUFFER_READ(ab); args[2] = (gf_arg)GF_ARG_BUFFER(flag);
    args[3] = (gf_arg)GF_ARG(n); args[4] = (gf_arg)GF_ARG(tolerance);

    /* the loop, once: the body clears the flag and steps; the step raises it where x moved.
       A backend that makes no loops in its graphs (HIP, for now) says so: then the host runs
       the loop, reading the flag back after each step. */
    CHECK(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL));
    if (gf_stream_begin_while(s, flag, 0) == GF_OK) {
        CHECK(gf_fill_async(s, flag, 0, 0, sizeof(int)));
        CHECK(gf_launch(s, k, dims, args, 5));
        CHECK(gf_stream_end_while(s));
        CHECK(gf_stream_end_capture(s, &loop));
        CHECK(gf_graph_info(loop, &info));
        printf("converge on %s: the loop is a %s graph of %d nodes\n", gf_device_name(dev), info.native ? "native" : "recorded", info.nodes);
    } else {
        printf("converge on %s: %s\n  so the host runs the loop\n", gf_device_name(dev), gf_last_error());
        CHECK(gf_stream_end_capture(s, &loop));
        gf_graph_destroy(loop);
        loop = NULL;
    }

    for (run = 0; run < 3; run++) {   /* three problems, one graph */
        for (i = 0; i < N; i++) { a[i] = 2.0f + (float)(i % 97) * (float)(run + 1); x[i] = a[i]; }
        CHECK(gf_copy_to_device_async(s, ab, 0, a, sizeof a));
        CHECK(gf_copy_to_device_async(s, xb, 0, x, sizeof x));
        CHECK(gf_copy_to_device_async(s, flag, 0, &one, sizeof one));   /* read before the first iteration */
        if (loop) CHECK(gf_graph_launch(loop, s));
        else {
            int go = 1;
            while (go) {   /* what the graph does by itself, with the host deciding each step */
                CHECK(gf_fill_async(s, flag, 0, 0, sizeof(int)));
                CHECK(gf_launch(s, k, dims, args, 5));
                CHECK(gf_copy_to_host_async(s, &go, flag, 0, sizeof go));
                CHECK(gf_stream_synchronize(s));
            }
        }
        CHECK(gf_copy_to_host_async(s, x, xb, 0, sizeof x));
        CHECK(gf_stream_synchronize(s));
        for (i = 0; i < N; i++) {   /* x * x against a: no libm needed */
            float err = x[i] * x[i] - a[i];
            if ((err < 0 ? -err : err) > 1e-5f * a[i]) worst++;
        }
        printf("problem %u: sqrt(%.0f) = %.6f (%s)\n", run, (double)a[N - 1], (double)x[N - 1], worst ? "WRONG" : "every element converged");
    }
    if (loop) gf_graph_destroy(loop);
    gf_buffer_destroy(flag);
    gf_buffer_destroy(xb);
    gf_buffer_destroy(ab);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return worst ? 1 : 0;
}
