/* vulkan_interop.c -- a renderer's frame loop sharing memory and a timeline with gpuflow.

   Each frame Vulkan writes a buffer (vkCmdFillBuffer with the frame number), gpuflow computes
   on it (the scale kernel: x = 2x + 1) and Vulkan reads the result back (vkCmdCopyBuffer
   into host-visible memory), which the host checks. Vulkan is loaded at run time, as gpuflow
   loads its drivers. It takes the first way the pair of drivers can go:

   zero-copy  Vulkan owns the memory and a timeline semaphore and exports both as opaque fds
              (VK_KHR_external_memory_fd, VK_KHR_external_semaphore_fd); gpuflow imports
              them (CUDA on NVIDIA's Vulkan). Vulkan signals 3f+1 after its write, gpuflow
              waits for it, computes and signals 3f+2, Vulkan waits for that, copies and
              signals 3f+3, which the host waits for. No host copy, no host wait but the last.
   host       gpuflow's memory in Vulkan (VK_EXT_external_memory_host): on the stub an
              exportable buffer's own pages (the kernel runs in the memory Vulkan reads; Mesa's
              lavapipe does this in CI), elsewhere page-aligned host memory gpuflow copies in
              and out. The host waits for each side before the other goes on (a fence; a
              stream synchronize): lavapipe exports no semaphore, the stub imports no driver's.

   Without a Vulkan loader or device it says so and exits 0. VULKAN_INTEROP_FRAMES=n (8).

       cc -std=c99 -I. examples/vulkan_interop.c -o vulkan_interop -pthread -ldl && ./vulkan_interop
   (the Vulkan headers: Debian's libvulkan-dev; with -DGPUFLOW_CUDA -I/usr/local/cuda/include
   the zero-copy way runs on NVIDIA's driver) */
#define _POSIX_C_SOURCE 200809L
#include "example.h"
#include "vulkan_setup.h"
#include <stdlib.h>
#ifndef VULKAN_SETUP_OK
int main(void) {
    puts("built without the Vulkan headers (Debian: libvulkan-dev): nothing to share with");
    return 0;
}
#else
/* Records the frame's write (the float f into every element) and the read back. */
static int vk_record(vk_ctx *v, float f, VkDeviceSize bytes) {
    VkCommandBufferBeginInfo begin = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    VkBufferCopy region = { 0, 0, bytes };
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    VKCHECK(vk.vkResetCommandBuffer(v->write_cmd, 0));
    VKCHECK(vk.vkBeginCommandBuffer(v->write_cmd, &begin));
    vk.vkCmdFillBuffer(v->write_cmd, v->shared, 0, bytes, bits);
    VKCHECK(vk.vkEndCommandBuffer(v->write_cmd));
    VKCHECK(vk.vkResetCommandBuffer(v->read_cmd, 0));
    VKCHECK(vk.vkBeginCommandBuffer(v->read_cmd, &begin));
    vk.vkCmdCopyBuffer(v->read_cmd, v->shared, v->readback, 1, &region);
    VKCHECK(vk.vkEndCommandBuffer(v->read_cmd));
    return 0;
}
static int check_frame(const vk_ctx *v, unsigned n, float f) {
    const float *out = (const float *)v->readback_map;
    unsigned i;
    for (i = 0; i < n; i++)
        if (out[i] != 2.0f * f + 1.0f) { fprintf(stderr, "frame %g: element %u is %g, expected %g\n", f, i, out[i], 2.0f * f + 1.0f); return 1; }
    return 0;
}

int main(void) {
    enum { N = 1 << 16 };
    const char *env = getenv("VULKAN_INTEROP_FRAMES");
    unsigned frames = env && atoi(env) > 0 ? (unsigned)atoi(env) : 8, f, n = N;
    vk_ctx v;
    gf_device *dev;
    gf_stream *s;
    gf_module *mod;
    gf_kernel *k;
    gf_buffer *buf = NULL;
    gf_semaphore *sem = NULL;
    gf_module_desc md = example_module_desc();
    float two = 2.0f, one = 1.0f;
    void *host = NULL;
    int own_host = 0;                       /* host memory this example allocated (the host way, off the stub) */
    VkDeviceSize bytes = (VkDeviceSize)N * sizeof(float);
    VkCommandPoolCreateInfo cpi = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT };
    VkCommandBufferAllocateInfo cai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1 };
    VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    int zero_copy = 0;

    memset(&v, 0, sizeof v);
    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    printf("gpuflow: %s (%s)\n", gf_device_name(dev), gf_backend_name(gf_device_backend(dev)));
    if (vk_open(&v)) { gf_device_close(dev); return 0; }
    CHECK(gf_stream_create(dev, NULL, &s));
    CHECK(gf_module_load(dev, &md, &mod));
    CHECK(gf_kernel_get(mod, "scale", &k));
    cpi.queueFamilyIndex = v.family;
    VKCHECK(vk.vkCreateCommandPool(v.dev, &cpi, NULL, &v.pool));
    cai.commandPool = v.pool;
    VKCHECK(vk.vkAllocateCommandBuffers(v.dev, &cai, &v.write_cmd));
    VKCHECK(vk.vkAllocateCommandBuffers(v.dev, &cai, &v.read_cmd));
    VKCHECK(vk.vkCreateFence(v.dev, &fci, NULL, &v.fence));
    if (vk_buffer(&v, bytes, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0, &v.readback, &v.readback_mem, NULL))
        return 1;
    VKCHECK(vk.vkMapMemory(v.dev, v.readback_mem, 0, bytes, 0, &v.readback_map));

    /* The zero-copy way: Vulkan's memory and timeline, imported; tried first (POSIX fds). */
#if !defined(_WIN32)
    {
        gf_external_memory_desc md_in = { .type = GF_EXTERNAL_OPAQUE_FD, .fd = -1 };
        gf_semaphore_desc sd_in = { .type = GF_EXTERNAL_OPAQUE_FD, .fd = -1, .timeline = 1 };
        if (vk_export_shared(&v, bytes, &md_in.fd, &sd_in.fd) == 0) {
            md_in.size = v.shared_bytes;
            if (gf_buffer_import(dev, &md_in, &buf) == GF_OK && gf_semaphore_import(dev, &sd_in, &sem) == GF_OK) zero_copy = 1;
            else printf("gpuflow's %s backend does not import them: %s\n", gf_backend_name(gf_device_backend(dev)), gf_last_error());
            close(md_in.fd);   /* gpuflow keeps its own: ours to close either way */
            close(sd_in.fd);
            if (!zero_copy) {   /* back to a clean slate for the host way */
                if (buf) { gf_buffer_destroy(buf); buf = NULL; }
                vk_drop_shared(&v);
            }
        }
    }
#endif
    if (zero_copy) {
        gf_launch_dims dims = example_dims(n);
        gf_arg args[4] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(two), GF_ARG(one) };
        VkSemaphoreWaitInfo wi = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, .semaphoreCount = 1, .pSemaphores = &v.timeline };
        printf("way: zero-copy (Vulkan's memory and timeline semaphore imported; no host copies, no host waits inside a frame)\n");
        for (f = 0; f < frames; f++) {
            uint64_t base = 3u * (uint64_t)f, done = base + 3;
            if (vk_record(&v, (float)f, bytes)) return 1;
            if (vk_submit(&v, v.write_cmd, 0, base + 1, 0)) return 1;       /* Vulkan writes, signals base+1 */
            CHECK(gf_semaphore_wait_async(s, sem, base + 1));              /* gpuflow waits for it on the device */
            CHECK(gf_launch(s, k, dims, args, 4));
            CHECK(gf_semaphore_signal_async(s, sem, base + 2));
            if (vk_submit(&v, v.read_cmd, base + 2, done, 0)) return 1;     /* Vulkan reads after gpuflow's signal */
            wi.pValues = &done;
            VKCHECK(vk.vkWaitSemaphores(v.dev, &wi, UINT64_MAX));          /* the host waits once, at the frame's end */
            if (check_frame(&v, n, (float)f)) return 1;
        }
    } else if (v.host_ext) {
        /* The host way: gpuflow's memory in Vulkan. On the stub, an exportable buffer's own
           (page-aligned) pages; elsewhere aligned host memory that gpuflow copies. */
        VkDeviceSize rounded = (bytes + v.host_align - 1) / v.host_align * v.host_align;
        gf_buffer_desc bd = { .size = (size_t)rounded, .exportable = 1 };
        int in_place = gf_device_backend(dev) == GF_BACKEND_STUB && gf_buffer_create_desc(dev, &bd, &buf) == GF_OK;
        gf_launch_dims dims = example_dims(n);
        if (in_place) host = (void *)(uintptr_t)gf_buffer_native(buf);
        else {
            if (host_alloc(&host, (size_t)v.host_align, (size_t)rounded) != 0) return 1;
            own_host = 1;
            CHECK(gf_buffer_create(dev, (size_t)bytes, &buf));
        }
        if (vk_import_host(&v, host, rounded)) return 1;
        printf("way: host memory (%s imported into Vulkan with VK_EXT_external_memory_host; host waits on both sides%s)\n",
               in_place ? "gpuflow's stub buffer's own pages" : "page-aligned host memory",
               in_place ? "" : "; gpuflow copies in and out");
        for (f = 0; f < frames; f++) {
            gf_arg args[4] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(two), GF_ARG(one) };
            if (vk_record(&v, (float)f, bytes)) return 1;
            if (vk_submit(&v, v.write_cmd, 0, 0, 1)) return 1;             /* Vulkan writes; the host waits (a fence) */
            if (!in_place) CHECK(gf_copy_to_device_async(s, buf, 0, host, (size_t)bytes));
            CHECK(gf_launch(s, k, dims, args, 4));
            if (!in_place) CHECK(gf_copy_to_host_async(s, host, buf, 0, (size_t)bytes));
            CHECK(gf_stream_synchronize(s));                                /* gpuflow computes; the host waits */
            if (vk_submit(&v, v.read_cmd, 0, 0, 1)) return 1;              /* Vulkan reads what gpuflow wrote */
            if (check_frame(&v, n, (float)f)) return 1;
        }
    } else {
        printf("this Vulkan device neither exports opaque fds that gpuflow's %s backend imports nor imports host memory: "
               "nothing to share\n", gf_backend_name(gf_device_backend(dev)));
        frames = 0;
    }
    if (frames) printf("%u frames: Vulkan wrote, gpuflow computed, Vulkan read back 2x+1 in every element\n", frames);

    vk_close(&v);
    if (sem) gf_semaphore_destroy(sem);
    if (buf) gf_buffer_destroy(buf);
    gf_module_destroy(mod);
    gf_stream_destroy(s);
    gf_device_close(dev);
    if (own_host) host_free(host);
    return 0;
}
#endif /* VULKAN_SETUP_OK */
