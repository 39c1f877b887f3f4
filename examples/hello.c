/* hello.c -- the smallest gpuflow program.

   Opens the best device there is, then moves a buffer through two streams: stream `up`
   uploads it, stream `down` waits for an event recorded after the upload and reads it back.
   Nothing here blocks until the final synchronize: the event is what orders the streams.

   Build and run (stub backend; add -DGPUFLOW_OPENCL or -DGPUFLOW_CUDA -I/usr/local/cuda/include
   for those, with their headers below):
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/hello.c -o hello -pthread -ldl && ./hello
*/
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"          /* with GPUFLOW_CUDA / _HIP / _OPENCL defined, it brings in those backends */
#include <stdio.h>

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); return 1; } } while (0)

int main(void) {
    enum { N = 1024 };
    static int in[N], out[N];
    gf_device *dev;
    gf_device_info info;
    gf_stream *up, *down;
    gf_stream_desc up_desc = { .label = "upload" }, down_desc = { .label = "download" };
    gf_event *uploaded;
    gf_buffer *buf;
    int i;

    for (i = 0; i < N; i++) in[i] = i * 3;

    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_device_info(dev, &info));
    printf("backend: %s\ndevice:  %s\n", gf_backend_name(info.backend), info.name);
    if (info.note[0]) printf("note:    %s\n", info.note);

    CHECK(gf_stream_create(dev, &up_desc, &up));
    CHECK(gf_stream_create(dev, &down_desc, &down));
    CHECK(gf_event_create(dev, 0, &uploaded));
    CHECK(gf_buffer_create(dev, sizeof in, &buf));

    CHECK(gf_copy_to_device_async(up, buf, 0, in, sizeof in));   /* returns at once */
    CHECK(gf_event_record(uploaded, up));                         /* marks "upload done" */
    CHECK(gf_stream_wait_event(down, uploaded));                  /* down waits on the device */
    CHECK(gf_copy_to_host_async(down, out, buf, 0, sizeof out));
    CHECK(gf_stream_synchronize(down));                           /* the host waits once */

    for (i = 0; i < N; i++)
        if (out[i] != in[i]) { fprintf(stderr, "mismatch at %d: %d != %d\n", i, out[i], in[i]); return 1; }
    printf("round trip of %d ints through two streams: ok\n", N);

    gf_buffer_destroy(buf);
    gf_event_destroy(uploaded);
    gf_stream_destroy(down);
    gf_stream_destroy(up);
    gf_device_close(dev);
    return 0;
}
