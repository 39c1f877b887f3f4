/* bench/interop_bench.c -- gpuflow's external semaphores and imported memory on CUDA against
   the raw driver calls, in one run, with Vulkan as the exporter (NVIDIA's Vulkan driver).

    cc -std=c99 -O2 -I. -isystem /usr/local/cuda/include bench/interop_bench.c -o build/bench/interop_bench -pthread -ldl
    ./build/bench/interop_bench          (needs a Vulkan loader and NVIDIA's Vulkan driver: the
                                          device README's recipe; without them it says so)

   Vulkan makes a 256 MiB device-local buffer and a timeline semaphore and exports each twice as
   an opaque fd: one copy for gpuflow (gf_buffer_import, gf_semaphore_import), one for this
   file's own cu* table (cuImportExternalMemory, cuImportExternalSemaphore: dlopen'd, nothing of
   gpuflow's internals). Each figure is measured for both sides in alternating batches (the side
   that goes first rotates) and the median batch is printed with the ratio:

     signal        1000 timeline signals enqueued on a stream, then a synchronize: per signal
                   (gf_semaphore_signal_async against cuSignalExternalSemaphoresAsync)
     wake          the host signals the timeline through Vulkan (vkSignalSemaphore) while a
                   stream waits for that value: from the signal to the stream's synchronize
                   returning (gf_semaphore_wait_async against cuWaitExternalSemaphoresAsync)
     copy          a 128 MiB device-to-device copy inside the imported buffer, through gpuflow,
                   against the same copy inside a buffer of gpuflow's own (imported/native), and
                   the raw cuMemcpyDtoDAsync on the imported memory (gpuflow/raw) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#include "gpuflow.h"
#include "examples/vulkan_setup.h"
#include "bench_stats.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifndef VULKAN_SETUP_OK
int main(void) { puts("built without the Vulkan headers: nothing to measure"); return 0; }
#else
/* The raw side: the driver's own entry points, by their exported names, each typed. */
typedef CUresult (*import_mem_fn)(CUexternalMemory *, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *);
typedef CUresult (*mapped_fn)(CUdeviceptr *, CUexternalMemory, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *);
typedef CUresult (*import_sem_fn)(CUexternalSemaphore *, const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC *);
typedef CUresult (*signal_fn)(const CUexternalSemaphore *, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS *, unsigned, CUstream);
typedef CUresult (*wait_fn)(const CUexternalSemaphore *, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS *, unsigned, CUstream);
typedef CUresult (*sync_fn)(CUstream);
typedef CUresult (*copy_fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned);
typedef CUresult (*ctx_fn)(CUcontext);
#define RAW_FNS(X) X(cuImportExternalMemory, import_mem_fn) X(cuExternalMemoryGetMappedBuffer, mapped_fn) \
    X(cuImportExternalSemaphore, import_sem_fn) X(cuSignalExternalSemaphoresAsync, signal_fn) \
    X(cuWaitExternalSemaphoresAsync, wait_fn) X(cuStreamSynchronize, sync_fn) X(cuMemcpyDtoDAsync_v2, copy_fn) \
    X(cuStreamCreate, stream_create_fn) X(cuCtxSetCurrent, ctx_fn)
#define RAW_SLOT(name, type) type name;
static struct { RAW_FNS(RAW_SLOT) } raw;
#undef RAW_SLOT

#define BYTES ((VkDeviceSize)256 << 20)
#define COPY_BYTES ((size_t)128 << 20)
#define SIGNALS 1000
#define BATCHES 41

static gf_device *dev;
static gf_stream *gs;
static gf_semaphore *gsem;
static gf_buffer *gimported, *gnative;
static CUstream rs;
static CUexternalSemaphore rsem;
static CUdeviceptr rptr;
static uint64_t next_value;    /* the timeline only goes up: every side takes the next values */
static vk_ctx v;

/* One batch of side (0: gpuflow, 1: raw, 2: gpuflow on a native buffer); seconds per unit. */
static double batch_signal(int side) {
    double t0 = now_s();
    int i;
    for (i = 0; i < SIGNALS; i++) {
        uint64_t value = ++next_value;
        if (side == 0) gf_semaphore_signal_async(gs, gsem, value);
        else {
            CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS p;
            memset(&p, 0, sizeof p);
            p.params.fence.value = value;
            raw.cuSignalExternalSemaphoresAsync(&rsem, &p, 1, rs);
        }
    }
    if (side == 0) gf_stream_synchronize(gs); else raw.cuStreamSynchronize(rs);
    return (now_s() - t0) / SIGNALS;
}
static double batch_wake(int side) {
    VkSemaphoreSignalInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = v.timeline };
    uint64_t value = ++next_value;
    struct timespec pause = { 0, 2000000 };   /* the wait is surely on the GPU before the signal */
    double t0;
    if (side == 0) gf_semaphore_wait_async(gs, gsem, value);
    else {
        CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS p;
        memset(&p, 0, sizeof p);
        p.params.fence.value = value;
        raw.cuWaitExternalSemaphoresAsync(&rsem, &p, 1, rs);
    }
    nanosleep(&pause, NULL);
    si.value = value;
    t0 = now_s();
    vk.vkSignalSemaphore(v.dev, &si);
    if (side == 0) gf_stream_synchronize(gs); else raw.cuStreamSynchronize(rs);
    return now_s() - t0;
}
static double batch_copy(int side) {
    double t0 = now_s();
    int i;
    for (i = 0; i < 4; i++) {
        if (side == 0) gf_copy_buffer_async(gs, gimported, COPY_BYTES, gimported, 0, COPY_BYTES);
        else if (side == 2) gf_copy_buffer_async(gs, gnative, COPY_BYTES, gnative, 0, COPY_BYTES);
        else raw.cuMemcpyDtoDAsync_v2(rptr + COPY_BYTES, rptr, COPY_BYTES, rs);
    }
    if (side == 1) raw.cuStreamSynchronize(rs); else gf_stream_synchronize(gs);
    return (now_s() - t0) / 4;
}

static void measure(double (*fn)(int), int sides, double *med) { measure_sides(fn, sides, BATCHES, med); }

int main(void) {
    gf_external_memory_desc md = { .type = GF_EXTERNAL_OPAQUE_FD };
    gf_semaphore_desc sd = { .type = GF_EXTERNAL_OPAQUE_FD, .timeline = 1 };
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC rmd;
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC rbd;
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC rsd;
    CUexternalMemory rmem;
    VkMemoryGetFdInfoKHR mfd = { .sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR, .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphoreGetFdInfoKHR sfd = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    gf_native_device nd;
    void *lib;
    double med[3];
    int raw_mem_fd = -1, raw_sem_fd = -1;

    if (gf_device_open(GF_BACKEND_CUDA, 0, &dev) != GF_OK) { printf("no CUDA device: %s\n", gf_last_error()); return 0; }
    if (vk_open(&v)) return 0;
    if (!(lib = dlopen("libcuda.so.1", RTLD_NOW))) { printf("no libcuda\n"); return 1; }
#define RAW_LOAD(name, type) { void *sym_ = dlsym(lib, #name); \
        if (!sym_) { printf("libcuda lacks %s\n", #name); return 1; } memcpy(&raw.name, &sym_, sizeof sym_); }
    RAW_FNS(RAW_LOAD)
#undef RAW_LOAD
    if (vk_export_shared(&v, BYTES, &md.fd, &sd.fd) != 0) { printf("this Vulkan driver exports no opaque fds\n"); return 0; }
    mfd.memory = v.shared_mem;
    sfd.semaphore = v.timeline;
    if (vk.vkGetMemoryFdKHR(v.dev, &mfd, &raw_mem_fd) != VK_SUCCESS || vk.vkGetSemaphoreFdKHR(v.dev, &sfd, &raw_sem_fd) != VK_SUCCESS ||
        !vk.vkSignalSemaphore) { printf("second export failed\n"); return 1; }
    md.size = v.shared_bytes;
    if (gf_buffer_import(dev, &md, &gimported) != GF_OK || gf_semaphore_import(dev, &sd, &gsem) != GF_OK ||
        gf_buffer_create(dev, (size_t)BYTES, &gnative) != GF_OK || gf_stream_create(dev, NULL, &gs) != GF_OK) {
        printf("gpuflow: %s\n", gf_last_error());
        return 1;
    }
    close(md.fd);
    close(sd.fd);
    /* the raw side, in gpuflow's context (the device's primary context) */
    gf_device_get_native(dev, &nd);
    raw.cuCtxSetCurrent((CUcontext)nd.context);
    memset(&rmd, 0, sizeof rmd);
    rmd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
    rmd.handle.fd = raw_mem_fd;   /* the driver owns it from here */
    rmd.size = v.shared_bytes;
    memset(&rbd, 0, sizeof rbd);
    rbd.size = v.shared_bytes;
    memset(&rsd, 0, sizeof rsd);
    rsd.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
    rsd.handle.fd = raw_sem_fd;
    if (raw.cuImportExternalMemory(&rmem, &rmd) != CUDA_SUCCESS ||
        raw.cuExternalMemoryGetMappedBuffer(&rptr, rmem, &rbd) != CUDA_SUCCESS ||
        raw.cuImportExternalSemaphore(&rsem, &rsd) != CUDA_SUCCESS ||
        raw.cuStreamCreate(&rs, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        printf("raw imports failed\n");
        return 1;
    }
    printf("interop bench: gpuflow %s on %s, Vulkan %s; medians of %d batches, sides alternating\n",
           gf_backend_name(gf_device_backend(dev)), gf_device_name(dev), "(NVIDIA)", BATCHES);
    measure(batch_signal, 2, med);
    printf("%-34s gpuflow %8.3f us  raw %8.3f us  ratio %.3f\n", "signal (per signal, 1000 queued)", med[0] * 1e6, med[1] * 1e6, med[0] / med[1]);
    measure(batch_wake, 2, med);
    printf("%-34s gpuflow %8.3f us  raw %8.3f us  ratio %.3f\n", "wake (vkSignalSemaphore to sync)", med[0] * 1e6, med[1] * 1e6, med[0] / med[1]);
    measure(batch_copy, 3, med);
    printf("%-34s gpuflow %8.1f GB/s raw %8.1f GB/s ratio %.3f (gpuflow/raw)\n", "copy 128 MiB in imported memory",
           COPY_BYTES / med[0] / 1e9, COPY_BYTES / med[1] / 1e9, med[1] / med[0]);
    printf("%-34s imported %6.1f GB/s native %6.1f GB/s ratio %.3f (imported/native, both gpuflow)\n", "copy 128 MiB: imported vs native",
           COPY_BYTES / med[0] / 1e9, COPY_BYTES / med[2] / 1e9, med[2] / med[0]);
    gf_semaphore_destroy(gsem);
    gf_buffer_destroy(gimported);
    gf_buffer_destroy(gnative);
    gf_stream_destroy(gs);
    gf_device_close(dev);
    vk_close(&v);
    return 0;
}
#endif
