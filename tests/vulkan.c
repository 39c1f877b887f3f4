/* A real Vulkan driver exports memory and a timeline semaphore, gpuflow imports both (issue
   "Real Vulkan on the GPU machine"). Runs where the Vulkan driver exports opaque fds and the
   backend imports them (NVIDIA's Vulkan and the CUDA backend); elsewhere it skips, saying why.

     frames     Vulkan writes, gpuflow waits for Vulkan's value, computes, signals; Vulkan waits
                for that, reads back; every element of every frame checked
     graph      the wait, the kernel and the signal captured into a graph (CUDA: external
                semaphore nodes), replayed, then given new values by a new capture and
                gf_graph_update, replayed again
     flow       a flow whose first task waits for Vulkan's value and whose last signals Vulkan
     bad input  a size past the exported allocation; a wait nobody signals (a bounded wait
                times out, the state report names the semaphore and the value); the semaphore
                destroyed while a stream waits on it (returns at once; the wait ends when
                Vulkan signals)
     memory+binary  a backend that imports memory but no timeline (NVIDIA's OpenCL): Vulkan
                writes and signals a binary semaphore, the stream waits and computes on the
                imported memory, the host waits for the stream, Vulkan reads; an import at an
                offset, the fds imports leave behind, a refused offset

   usage: vulkan cuda|hip|opencl|stub   (make test-vulkan; the Vulkan headers at build time:
          Debian's libvulkan-dev, or VULKAN_INCLUDE=dir) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include "../examples/vulkan_setup.h"
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <dirent.h>

#ifndef VULKAN_SETUP_OK
int main(void)
{
    printf("notice: built without the Vulkan headers (libvulkan-dev, or make VULKAN_INCLUDE=dir)\n");
    SKIP("no Vulkan headers at build time");
    return th_finish();
}
#else
static const char scale_source[] =   /* examples/scale.gfk: x = x * a + b */
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "../examples/scale.gfk"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "../examples/scale.gfk"
#undef GF_KERNELS

#define VN (1u << 16)                       /* floats in the shared buffer */
static gf_launch_dims scale_dims(void)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = VN / 128; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 128; d.block[1] = d.block[2] = 1;
    return d;
}
static gf_device *dev;
static gf_stream *s;
static gf_kernel *k;
static gf_buffer *buf;
static gf_semaphore *sem;
static vk_ctx v;
static VkDeviceSize bytes = (VkDeviceSize)VN * sizeof(float);
static uint64_t value;                      /* the timeline's next free value */

static int vk_record_frame(float f)
{
    VkCommandBufferBeginInfo begin = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    VkBufferCopy region = { 0, 0, 0 };
    uint32_t bits;
    region.size = bytes;
    memcpy(&bits, &f, sizeof bits);
    if (vk.vkResetCommandBuffer(v.write_cmd, 0) != VK_SUCCESS || vk.vkBeginCommandBuffer(v.write_cmd, &begin) != VK_SUCCESS) return 1;
    vk.vkCmdFillBuffer(v.write_cmd, v.shared, 0, bytes, bits);
    if (vk.vkEndCommandBuffer(v.write_cmd) != VK_SUCCESS) return 1;
    if (vk.vkResetCommandBuffer(v.read_cmd, 0) != VK_SUCCESS || vk.vkBeginCommandBuffer(v.read_cmd, &begin) != VK_SUCCESS) return 1;
    vk.vkCmdCopyBuffer(v.read_cmd, v.shared, v.readback, 1, &region);
    return vk.vkEndCommandBuffer(v.read_cmd) != VK_SUCCESS;
}
static int host_wait(uint64_t target)
{
    VkSemaphoreWaitInfo wi = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, .semaphoreCount = 1, .pSemaphores = &v.timeline,
                               .pValues = &target };
    return vk.vkWaitSemaphores(v.dev, &wi, (uint64_t)TH_WAIT_MS * 1000000u) == VK_SUCCESS;
}
static int frame_ok(float f)
{
    const float *out = (const float *)v.readback_map;
    unsigned i;
    for (i = 0; i < VN; i++) if (out[i] != 2.0f * f + 1.0f) return 0;
    return 1;
}
/* gpuflow's part of a frame: wait for w, scale, signal w + 1. */
static gf_result compute(gf_stream *on, uint64_t w)
{
    gf_launch_dims dims = scale_dims();
    unsigned n = VN;
    float two = 2.0f, one = 1.0f;
    gf_arg args[4] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(two), GF_ARG(one) };
    gf_result r;
    if ((r = gf_semaphore_wait_async(on, sem, w)) != GF_OK) return r;
    if ((r = gf_launch(on, k, dims, args, 4)) != GF_OK) return r;
    return gf_semaphore_signal_async(on, sem, w + 1);
}

static void test_frames(void)
{
    int f, ok = 1;
    for (f = 0; f < 50 && ok; f++) {
        uint64_t w = value + 1;
        value += 3;
        ok = !vk_record_frame((float)f) && !vk_submit(&v, v.write_cmd, 0, w, 0) && compute(s, w) == GF_OK &&
             !vk_submit(&v, v.read_cmd, w + 1, w + 2, 0) && host_wait(w + 2) && frame_ok((float)f);
    }
    CHECK(ok, "frames: 50 frames of Vulkan write, gpuflow wait/compute/signal, Vulkan read, every element right");
}

static gf_result capture_frame(gf_stream *on, void *user)
{
    return compute(on, *(const uint64_t *)user);
}
static void test_graph(void)
{
    gf_graph *g = NULL, *g2 = NULL;
    gf_graph_info info;
    uint64_t w = value + 1;
    value += 3;
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, capture_frame, &w, &g), GF_OK);
    if (!g) return;
    memset(&info, 0, sizeof info);
    gf_graph_get_info(g, &info);
    printf("graph: %s, %d nodes\n", info.native ? "native" : "recorded", info.nodes);
    CHECK(!vk_record_frame(60.0f) && !vk_submit(&v, v.write_cmd, 0, w, 0) && gf_graph_launch(g, s) == GF_OK &&
          !vk_submit(&v, v.read_cmd, w + 1, w + 2, 0) && host_wait(w + 2) && frame_ok(60.0f),
          "graph: the captured wait, kernel and signal replay against Vulkan's timeline");
    w = value + 1;
    value += 3;
    CHECK_EQ_RESULT(gf_graph_capture(s, 0, capture_frame, &w, &g2), GF_OK);
    if (g2) {
        CHECK_EQ_RESULT(gf_graph_update(g, g2), GF_OK);
        CHECK(!vk_record_frame(61.0f) && !vk_submit(&v, v.write_cmd, 0, w, 0) && gf_graph_launch(g, s) == GF_OK &&
              !vk_submit(&v, v.read_cmd, w + 1, w + 2, 0) && host_wait(w + 2) && frame_ok(61.0f),
              "graph: gf_graph_update gives the replay the next frame's values");
        gf_graph_destroy(g2);
    }
    gf_graph_destroy(g);
}

typedef struct flow_frame { uint64_t w; } flow_frame;
static gf_result task_wait(gf_stream *on, void *user) { return gf_semaphore_wait_async(on, sem, ((flow_frame *)user)->w); }
static gf_result task_scale(gf_stream *on, void *user)
{
    gf_launch_dims dims = scale_dims();
    unsigned n = VN;
    float two = 2.0f, one = 1.0f;
    gf_arg args[4] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(two), GF_ARG(one) };
    (void)user;
    return gf_launch(on, k, dims, args, 4);
}
static gf_result task_signal(gf_stream *on, void *user) { return gf_semaphore_signal_async(on, sem, ((flow_frame *)user)->w + 1); }
static void test_flow(void)
{
    gf_stream_pool_desc pd;
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_task a = 0, b = 0, c = 0;
    flow_frame fr;
    fr.w = value + 1;
    value += 3;
    memset(&pd, 0, sizeof pd);
    pd.count = 2;
    CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &pool), GF_OK);
    CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK);
    if (!pool || !flow) return;
    CHECK(gf_flow_add(flow, "wait for Vulkan", task_wait, &fr, &a) == GF_OK && gf_flow_add(flow, "scale", task_scale, &fr, &b) == GF_OK &&
          gf_flow_add(flow, "signal Vulkan", task_signal, &fr, &c) == GF_OK && gf_flow_depend(flow, a, b) == GF_OK &&
          gf_flow_depend(flow, b, c) == GF_OK, "flow: three tasks in a chain");
    CHECK(!vk_record_frame(70.0f) && !vk_submit(&v, v.write_cmd, 0, fr.w, 0) && gf_flow_run(flow, pool) == GF_OK &&
          !vk_submit(&v, v.read_cmd, fr.w + 1, fr.w + 2, 0) && host_wait(fr.w + 2) && frame_ok(70.0f),
          "flow: the first task waits for Vulkan's value, the last signals Vulkan's next");
    gf_stream_pool_synchronize(pool);
    gf_flow_destroy(flow);
    gf_stream_pool_destroy(pool);
}

static void test_bad_input(int mem_fd_spare, int sem_fd_spare)
{
    gf_external_memory_desc md;
    gf_semaphore_desc sd;
    gf_semaphore *alias = NULL;
    gf_buffer *big = NULL;
    gf_result r;
    char state[4096];
    char want[64];
    VkSemaphoreSignalInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO };
    double t0;
    uint64_t never;
    memset(&md, 0, sizeof md);
    md.type = GF_EXTERNAL_OPAQUE_FD; md.fd = mem_fd_spare; md.size = v.shared_bytes * 4;
    r = gf_buffer_import(dev, &md, &big);
    CHECK(r != GF_OK && big == NULL, "bad input: a size past the exported allocation is refused by the driver");
    printf("  (%s: %s)\n", gf_result_name(r), gf_last_error());
    if (big) gf_buffer_destroy(big);
    /* a wait nobody signals, on a second handle of the same timeline */
    memset(&sd, 0, sizeof sd);
    sd.type = GF_EXTERNAL_OPAQUE_FD; sd.fd = sem_fd_spare; sd.timeline = 1;
    CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &alias), GF_OK);
    if (!alias) return;
    never = value + 1;
    value += 1;
    CHECK_EQ_RESULT(gf_semaphore_wait_async(s, alias, never), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(s, 100), GF_TIMEOUT);
    CHECK_EQ_RESULT(gf_device_write_state(dev, state, sizeof state), GF_OK);
    snprintf(want, sizeof want, ": %llu'", (unsigned long long)never);
    CHECK(strstr(state, "wait 'semaphore ") != NULL && strstr(state, want) != NULL,
          "bad input: a wait nobody signals: the state report names the semaphore and the value");
    if (!strstr(state, want)) printf("%s", state);
    t0 = th_now_ms();
    gf_semaphore_destroy(alias);   /* the stream still waits on it */
    CHECK(th_now_ms() - t0 < 100.0 && gf_stream_query(s) == GF_NOT_READY, "bad input: destroyed while a stream waits on it: at once");
    si.semaphore = v.timeline;
    si.value = never;
    CHECK(vk.vkSignalSemaphore && vk.vkSignalSemaphore(v.dev, &si) == VK_SUCCESS, "Vulkan signals the value from the host");
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(s, TH_WAIT_MS), GF_OK);
}

/* A binary semaphore Vulkan exports: Vulkan signals it (after a timeline value the host
   gives), the stream waits; the stream signals it (held by a gate), Vulkan waits (a fence).
   Runs where the backend imports semaphores, memory or not (NVIDIA's OpenCL). */
static void test_binary(void);
/* A backend that takes semaphores but no memory: the binary semaphore test alone. 1: it ran. */
static int test_semaphores_only(void)
{
    gf_semaphore_desc probe;
    gf_semaphore *p = NULL;
    VkExportSemaphoreCreateInfo es = { .sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                       .handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphoreCreateInfo sci = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &es };
    VkSemaphoreGetFdInfoKHR sfd = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphore bin = VK_NULL_HANDLE;
    gf_result r = GF_ERROR_NOT_SUPPORTED;
    memset(&probe, 0, sizeof probe);
    probe.type = GF_EXTERNAL_OPAQUE_FD; probe.fd = -1;
    if (vk.vkCreateSemaphore(v.dev, &sci, NULL, &bin) == VK_SUCCESS) {
        sfd.semaphore = bin;
        if (vk.vkGetSemaphoreFdKHR(v.dev, &sfd, &probe.fd) == VK_SUCCESS) {
            r = gf_semaphore_import(dev, &probe, &p);
            if (r == GF_OK) gf_semaphore_destroy(p);
            close(probe.fd);
        }
        vk.vkDestroySemaphore(v.dev, bin, NULL);
    }
    if (r != GF_OK) { printf("notice: and no binary semaphore: %s\n", gf_last_error()); return 0; }
    test_binary();
    return 1;
}
static void test_binary(void)
{
    VkExportSemaphoreCreateInfo es = { .sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                       .handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphoreCreateInfo sci = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &es };
    VkSemaphoreGetFdInfoKHR sfd = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphore bin = VK_NULL_HANDLE, bin2 = VK_NULL_HANDLE;   /* one semaphore each way */
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    uint64_t gate_value = value + 1, none = 0;
    VkTimelineSemaphoreSubmitInfo ts = { .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, .waitSemaphoreValueCount = 1,
                                         .pWaitSemaphoreValues = &gate_value, .signalSemaphoreValueCount = 1, .pSignalSemaphoreValues = &none };
    VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = &ts, .waitSemaphoreCount = 1, .pWaitSemaphores = &v.timeline,
                        .pWaitDstStageMask = &stage, .signalSemaphoreCount = 1, .pSignalSemaphores = &bin };
    VkSubmitInfo back = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .waitSemaphoreCount = 1, .pWaitSemaphores = &bin2,
                          .pWaitDstStageMask = &stage };
    VkSemaphoreSignalInfo host = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO };
    gf_semaphore_desc sd;
    gf_semaphore *gbin = NULL, *gbin2 = NULL;
    gf_stream *st = NULL;
    th_gate g;
    int fd = -1;
    value += 1;
    if (vk.vkCreateSemaphore(v.dev, &sci, NULL, &bin) != VK_SUCCESS || vk.vkCreateSemaphore(v.dev, &sci, NULL, &bin2) != VK_SUCCESS) {
        CHECK(0, "binary: Vulkan makes exportable binary semaphores");
        return;
    }
    memset(&sd, 0, sizeof sd);
    sd.type = GF_EXTERNAL_OPAQUE_FD; sd.timeline = 0;
    sfd.semaphore = bin;
    CHECK(vk.vkGetSemaphoreFdKHR(v.dev, &sfd, &fd) == VK_SUCCESS, "binary: Vulkan exports it");
    sd.fd = fd;
    CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &gbin), GF_OK);
    if (fd >= 0) close(fd);
    fd = -1;
    sfd.semaphore = bin2;
    CHECK(vk.vkGetSemaphoreFdKHR(v.dev, &sfd, &fd) == VK_SUCCESS, "binary: Vulkan exports the second");
    sd.fd = fd;
    CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &gbin2), GF_OK);
    if (fd >= 0) close(fd);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &st), GF_OK);
    if (gbin && gbin2 && st) {
        /* Vulkan -> gpuflow: Vulkan's signal waits for the host's timeline value */
        CHECK(vk.vkQueueSubmit(v.queue, 1, &si, VK_NULL_HANDLE) == VK_SUCCESS, "binary: Vulkan's signal is submitted");
        CHECK_EQ_RESULT(gf_semaphore_wait_async(st, gbin, 0), GF_OK);
        th_sleep_ms(30);
        CHECK_EQ_RESULT(gf_stream_query(st), GF_NOT_READY);
        host.semaphore = v.timeline; host.value = gate_value;
        CHECK(vk.vkSignalSemaphore(v.dev, &host) == VK_SUCCESS && gf_stream_synchronize_timeout(st, TH_WAIT_MS) == GF_OK,
              "binary: the stream's wait ended with Vulkan's signal");
        /* gpuflow -> Vulkan: the stream's signal behind a gate, Vulkan waits with a fence
           (where the backend signals: OpenCL's refusal says why it does not) */
        th_gate_init(&g);
        gf_stream_add_callback(st, th_gate_cb, &g);
        if (gf_semaphore_signal_async(st, gbin2, 0) != GF_OK) {
            printf("notice: binary: no signal on this backend: %s\n", gf_last_error());
            SKIP("the backend signals no imported semaphore");
            th_gate_open(&g);
            gf_stream_synchronize(st);
            th_gate_destroy(&g);
            goto done;
        }
        CHECK(vk.vkQueueSubmit(v.queue, 1, &back, v.fence) == VK_SUCCESS, "binary: Vulkan's wait is submitted");
        th_sleep_ms(30);
        CHECK(vk.vkGetFenceStatus(v.dev, v.fence) == VK_NOT_READY, "binary: Vulkan waits while the stream's signal is held");
        th_gate_open(&g);
        CHECK(vk.vkWaitForFences(v.dev, 1, &v.fence, VK_TRUE, (uint64_t)TH_WAIT_MS * 1000000u) == VK_SUCCESS,
              "binary: Vulkan's wait ended with the stream's signal");
        vk.vkResetFences(v.dev, 1, &v.fence);
        gf_stream_synchronize(st);
        th_gate_destroy(&g);
    }
done:
    vk.vkDeviceWaitIdle(v.dev);
    if (gbin) gf_semaphore_destroy(gbin);
    if (gbin2) gf_semaphore_destroy(gbin2);
    if (st) gf_stream_destroy(st);
    vk.vkDestroySemaphore(v.dev, bin, NULL);
    vk.vkDestroySemaphore(v.dev, bin2, NULL);
}

/* Open fds of this process (-1: unknown): an import must leave the count as it found it. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A backend that imports memory but no timeline (NVIDIA's OpenCL): each frame Vulkan writes
   and signals a binary semaphore, the stream waits for it and computes on the imported memory;
   OpenCL signals nothing (see gpuflow_opencl.h), so the host waits for the stream before
   Vulkan reads. Then: copies, a fill and an import at an offset, and the fds the imports
   leave behind (none). mem_spare: a second fd of the same memory. */
static void test_memory_binary(int mem_spare)
{
    VkExportSemaphoreCreateInfo es = { .sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                       .handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphoreCreateInfo sci = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &es };
    VkSemaphoreGetFdInfoKHR sfd = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphore bin = VK_NULL_HANDLE;
    VkSubmitInfo write = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &v.write_cmd,
                           .signalSemaphoreCount = 1, .pSignalSemaphores = &bin };
    VkSubmitInfo read = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &v.read_cmd };
    gf_launch_dims dims = scale_dims();
    unsigned n = VN;
    float two = 2.0f, one = 1.0f, got[4] = { 0, 0, 0, 0 };
    gf_arg args[4] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(two), GF_ARG(one) };
    gf_semaphore_desc sd;
    gf_external_memory_desc md;
    gf_semaphore *gbin = NULL;
    gf_buffer *at = NULL, *big = NULL;
    int f, ok = 1, fd = -1, fds;
    const size_t offset = 4096;   /* a multiple of every device's CL_DEVICE_MEM_BASE_ADDR_ALIGN */
    printf("notice: memory and binary semaphores (no timeline here): Vulkan signals, the stream waits; the host waits for the stream before Vulkan reads\n");
    if (vk.vkCreateSemaphore(v.dev, &sci, NULL, &bin) != VK_SUCCESS) { CHECK(0, "memory+binary: an exportable binary semaphore"); return; }
    sfd.semaphore = bin;
    memset(&sd, 0, sizeof sd);
    sd.type = GF_EXTERNAL_OPAQUE_FD;
    CHECK(vk.vkGetSemaphoreFdKHR(v.dev, &sfd, &fd) == VK_SUCCESS, "memory+binary: Vulkan exports the binary semaphore");
    sd.fd = fd;
    CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &gbin), GF_OK);
    if (fd >= 0) close(fd);
    for (f = 0; f < 50 && ok && gbin; f++) {
        ok = !vk_record_frame((float)f) && vk.vkQueueSubmit(v.queue, 1, &write, VK_NULL_HANDLE) == VK_SUCCESS &&
             gf_semaphore_wait_async(s, gbin, 0) == GF_OK && gf_launch(s, k, dims, args, 4) == GF_OK &&
             gf_stream_synchronize_timeout(s, TH_WAIT_MS) == GF_OK &&
             vk.vkQueueSubmit(v.queue, 1, &read, v.fence) == VK_SUCCESS &&
             vk.vkWaitForFences(v.dev, 1, &v.fence, VK_TRUE, (uint64_t)TH_WAIT_MS * 1000000u) == VK_SUCCESS &&
             vk.vkResetFences(v.dev, 1, &v.fence) == VK_SUCCESS && frame_ok((float)f);
        if (!ok) printf("  frame %d: %s\n", f, gf_last_error());
    }
    CHECK(ok, "memory+binary: 50 frames of Vulkan write+signal, gpuflow wait/compute on the imported memory, Vulkan read, every element right");
    /* the imported memory is a buffer like any other: a fill, a copy back, a second import of
       the same memory at an offset sees the same bytes */
    CHECK_EQ_RESULT(gf_fill32_async(s, buf, 0, 0x40400000u, VN), GF_OK);   /* 3.0f */
    CHECK_EQ_RESULT(gf_launch(s, k, dims, args, 4), GF_OK);                  /* 7.0f */
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, got, buf, 0, sizeof got), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(got[0] == 7.0f && got[3] == 7.0f, "memory+binary: fill, kernel and copy back on the imported buffer");
    /* each import holds one fd (the driver's duplicate) until it is destroyed, none after */
    fds = open_fds();
    memset(&md, 0, sizeof md);
    md.type = GF_EXTERNAL_OPAQUE_FD; md.fd = mem_spare; md.size = v.shared_bytes; md.offset = offset;
    CHECK_EQ_RESULT(gf_buffer_import(dev, &md, &at), GF_OK);
    if (at) {
        CHECK_EQ_RESULT(gf_fill32_async(s, at, 0, 0x41000000u, 1), GF_OK);   /* 8.0f at element offset / 4 */
        CHECK_EQ_RESULT(gf_copy_to_host_async(s, got, buf, offset - 4, 2 * sizeof(float)), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK(got[0] == 7.0f && got[1] == 8.0f, "memory+binary: an import at an offset is a window on the same memory");
        {   /* a view of that window, as a kernel argument (OpenCL: a sub-buffer of the whole import) */
            gf_buffer *view = NULL;
            gf_launch_dims vd = scale_dims();
            unsigned vn = 16;
            float in = 3.0f, out[2] = { 0, 0 };
            gf_arg vargs[4] = { GF_ARG_BUFFER(NULL), GF_ARG(vn), GF_ARG(two), GF_ARG(one) };
            vd.grid[0] = 1;
            CHECK_EQ_RESULT(gf_buffer_view(at, offset, 64 * sizeof(float), &view), GF_OK);
            if (view) {
                vargs[0].buffer = view;
                CHECK_EQ_RESULT(gf_fill32_async(s, view, 0, 0x40400000u, 16), GF_OK);   /* 3.0f */
                CHECK_EQ_RESULT(gf_launch(s, k, vd, vargs, 4), GF_OK);                  /* 7.0f */
                CHECK_EQ_RESULT(gf_copy_to_host_async(s, out, buf, 2 * offset, sizeof out), GF_OK);
                CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
                CHECK(out[0] == 2.0f * in + 1.0f && out[1] == 7.0f, "memory+binary: a view of an import at an offset takes a kernel");
                gf_buffer_destroy(view);
            }
        }
        gf_buffer_destroy(at);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    }
    CHECK(fds < 0 || open_fds() == fds, "memory+binary: an import, used and destroyed, leaves no fd open behind it");
    md.size = v.shared_bytes; md.offset = 4;
    CHECK_FAIL(gf_buffer_import(dev, &md, &big), GF_ERROR_INVALID_ARGUMENT);   /* no sub-buffer at byte 4 */
    CHECK(fds < 0 || open_fds() == fds, "memory+binary: a refused import leaves no fd open behind it");
    /* A size past the allocation: an opaque fd does not tell its size (fstat says 0), so only
       the driver can refuse it. NVIDIA's OpenCL (580) takes it, and keeps its duplicate of the
       fd after the release (measured here; README: interop): reported, not failed. */
    md.offset = 0; md.size = v.shared_bytes * 4;
    if (gf_buffer_import(dev, &md, &big) == GF_OK) {
        printf("notice: the driver took a size past the exported allocation (%llu of %llu bytes)\n",
               (unsigned long long)md.size, (unsigned long long)v.shared_bytes);
        gf_buffer_destroy(big);
    } else {
        printf("  (refused: %s)\n", gf_last_error());
        CHECK(fds < 0 || open_fds() == fds, "memory+binary: a refused oversized import leaves no fd open behind it");
    }
    big = NULL;
    CHECK(fcntl(mem_spare, F_GETFD) >= 0, "memory+binary: the caller's fd stays the caller's");
    if (gbin) gf_semaphore_destroy(gbin);
    vk.vkDeviceWaitIdle(v.dev);
    vk.vkDestroySemaphore(v.dev, bin, NULL);
}

/* Vulkan's command pool, the two command buffers and the host-visible readback. 0: made. */
static int vk_setup_commands(void)
{
    VkCommandPoolCreateInfo cpi = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT };
    VkCommandBufferAllocateInfo cai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = 1 };
    cpi.queueFamilyIndex = v.family;
    if (vk.vkCreateCommandPool(v.dev, &cpi, NULL, &v.pool) != VK_SUCCESS) return 1;
    cai.commandPool = v.pool;
    return vk.vkAllocateCommandBuffers(v.dev, &cai, &v.write_cmd) != VK_SUCCESS ||
           vk.vkAllocateCommandBuffers(v.dev, &cai, &v.read_cmd) != VK_SUCCESS ||
           vk_buffer(&v, bytes, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0, &v.readback, &v.readback_mem, NULL) ||
           vk.vkMapMemory(v.dev, v.readback_mem, 0, bytes, 0, &v.readback_map) != VK_SUCCESS;
}

int main(int argc, char **argv)
{
    gf_backend backend;
    const char *name = th_backend_arg(argc, argv, &backend);
    static const gf_stub_kernel stub_kernels[] = { GF_STUB_KERNEL(scale) };
    gf_module_desc mdesc;
    gf_module *mod = NULL;
    gf_external_memory_desc md;
    gf_semaphore_desc sd;
    VkMemoryGetFdInfoKHR mfd = { .sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR, .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphoreGetFdInfoKHR sfd = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    int mem_spare = -1, sem_spare = -1;
    gf_result r;
    if (!name) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&mdesc, 0, sizeof mdesc);
    mdesc.source = scale_source;
    mdesc.source_name = "scale.gfk";
    mdesc.stub_kernels = stub_kernels;
    mdesc.stub_kernel_count = 1;
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: vulkan %s skipped: %s\n", name, gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    memset(&v, 0, sizeof v);
    memset(&md, 0, sizeof md);
    memset(&sd, 0, sizeof sd);
    md.type = sd.type = GF_EXTERNAL_OPAQUE_FD;
    sd.timeline = 1;
    if (vk_open(&v) || vk_export_shared(&v, bytes, &md.fd, &sd.fd) != 0) {
        printf("notice: vulkan %s skipped: no Vulkan driver here that exports opaque fds\n", name);
        SKIP("no Vulkan driver that exports opaque fds");
        gf_device_close(dev);
        return th_finish();
    }
    md.size = v.shared_bytes;
    if (vk.vkCreateFence(v.dev, &fci, NULL, &v.fence) != VK_SUCCESS) { CHECK(0, "a Vulkan fence"); return th_finish(); }
    r = gf_buffer_import(dev, &md, &buf);
    if (r == GF_ERROR_NOT_SUPPORTED) {
        printf("notice: vulkan %s: %s; only semaphores are tried\n", name, gf_last_error());
        close(md.fd); close(sd.fd);
        if (test_semaphores_only()) {
            vk_close(&v);
            gf_device_close(dev);
            return th_finish();
        }
        SKIP("the backend imports no opaque fds");
        vk_close(&v);
        gf_device_close(dev);
        return th_finish();
    }
    CHECK_EQ_RESULT(r, GF_OK);
    r = gf_semaphore_import(dev, &sd, &sem);
    if (r == GF_ERROR_NOT_SUPPORTED) printf("notice: vulkan %s: %s\n", name, gf_last_error());
    else CHECK_EQ_RESULT(r, GF_OK);
    close(md.fd);
    close(sd.fd);
    mfd.memory = v.shared_mem;
    sfd.semaphore = v.timeline;
    vk.vkGetMemoryFdKHR(v.dev, &mfd, &mem_spare);
    vk.vkGetSemaphoreFdKHR(v.dev, &sfd, &sem_spare);
    if (!buf || (!sem && r != GF_ERROR_NOT_SUPPORTED) || vk_setup_commands()) {
        CHECK(0, "Vulkan and gpuflow set up");
        return th_finish();
    }
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_module_load(dev, &mdesc, &mod), GF_OK);
    if (mod) CHECK_EQ_RESULT(gf_kernel_get(mod, "scale", &k), GF_OK);
    if (s && k && !sem) {   /* memory, and no timeline semaphores */
        test_memory_binary(mem_spare);
        test_binary();
    } else if (s && k) {
        test_frames();
        test_graph();
        test_flow();
        test_bad_input(mem_spare, sem_spare);
        test_binary();
    }
    close(mem_spare);
    close(sem_spare);
    gf_stream_synchronize(s);
    if (sem) gf_semaphore_destroy(sem);
    gf_buffer_destroy(buf);
    if (mod) gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_device_close(dev);
    vk_close(&v);
    return th_finish();
}
#endif
