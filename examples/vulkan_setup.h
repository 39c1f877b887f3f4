/* vulkan_setup.h -- the Vulkan side of examples/vulkan_interop.c (and of gpuflow's Vulkan test
   and bench on the GPU machine): Vulkan loaded at run time (as gpuflow loads its drivers), an
   instance and a device with whichever interop extensions the driver has, buffers (exported
   as opaque fds, or over imported host memory), an exportable timeline semaphore, submits that
   wait for and signal it. Needs <vulkan/vulkan.h> (Debian: libvulkan-dev) for the types only:
   without it VULKAN_SETUP_OK stays undefined and the includer says so. Include after
   example.h. */
#ifndef VULKAN_SETUP_H
#define VULKAN_SETUP_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__has_include)
#  if __has_include(<vulkan/vulkan.h>)
#    define VULKAN_SETUP_OK 1
#  endif
#endif
#ifdef VULKAN_SETUP_OK
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#if defined(_WIN32)
#  include <windows.h>
#  define vk_library() ((void *)LoadLibraryA("vulkan-1.dll"))
#  define vk_symbol(lib, name) ((void *)(uintptr_t)GetProcAddress((HMODULE)(lib), (name)))
#  define host_alloc(p, align, bytes) ((*(p) = _aligned_malloc((bytes), (align))) == NULL)
#  define host_free(p) _aligned_free(p)
#else
#  include <dlfcn.h>
#  include <unistd.h>
#  define vk_library() dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL)
#  define vk_symbol(lib, name) dlsym((lib), (name))
#  define host_alloc(p, align, bytes) posix_memalign((p), (align), (bytes))
#  define host_free(p) free(p)
#endif

/* The Vulkan entry points this example uses: one list makes the table and the loading. */
#define VK_INSTANCE_FNS(X) X(vkCreateInstance) X(vkEnumerateInstanceVersion)
#define VK_PHYSICAL_FNS(X) X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties) \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkGetPhysicalDeviceMemoryProperties) \
    X(vkEnumerateDeviceExtensionProperties) X(vkGetPhysicalDeviceFeatures2) X(vkCreateDevice) X(vkGetDeviceProcAddr)
#define VK_DEVICE_FNS(X) X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkCreateBuffer) X(vkDestroyBuffer) \
    X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) \
    X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) \
    X(vkEndCommandBuffer) X(vkResetCommandBuffer) X(vkCmdFillBuffer) X(vkCmdCopyBuffer) X(vkQueueSubmit) \
    X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences) X(vkCreateSemaphore) X(vkDestroySemaphore) \
    X(vkWaitSemaphores) X(vkGetFenceStatus)
#define VK_OPTIONAL_DEVICE_FNS(X) X(vkGetMemoryFdKHR) X(vkGetSemaphoreFdKHR) X(vkGetMemoryHostPointerPropertiesEXT) X(vkSignalSemaphore)
#define VK_SLOT(name) PFN_##name name;
static struct {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    VK_INSTANCE_FNS(VK_SLOT) VK_PHYSICAL_FNS(VK_SLOT) VK_DEVICE_FNS(VK_SLOT) VK_OPTIONAL_DEVICE_FNS(VK_SLOT)
} vk;
#undef VK_SLOT

#define VKCHECK(call) do { VkResult v_ = (call); if (v_ != VK_SUCCESS) { \
    fprintf(stderr, "%s failed: VkResult %d\n", #call, (int)v_); return 1; } } while (0)

typedef struct vk_ctx {
    VkInstance instance; VkPhysicalDevice phys; VkDevice dev; VkQueue queue; uint32_t family;
    int zero_copy_exts, host_ext;          /* what the device has */
    VkDeviceSize host_align;                /* minImportedHostPointerAlignment */
    VkPhysicalDeviceMemoryProperties mem;
    VkCommandPool pool; VkCommandBuffer write_cmd, read_cmd;
    VkBuffer shared, readback; VkDeviceMemory shared_mem, readback_mem; void *readback_map;
    VkDeviceSize shared_bytes;              /* the allocation's size (what an importer is told) */
    VkSemaphore timeline; VkFence fence;
} vk_ctx;

static inline int has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    uint32_t i;
    for (i = 0; i < n; i++) if (!strcmp(e[i].extensionName, name)) return 1;
    return 0;
}
static inline uint32_t memory_type(const vk_ctx *v, uint32_t bits, VkMemoryPropertyFlags want) {
    uint32_t i;
    for (i = 0; i < v->mem.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (v->mem.memoryTypes[i].propertyFlags & want) == want) return i;
    return UINT32_MAX;
}

/* The loader, an instance (Vulkan 1.2: timeline semaphores), the first device with a queue
   that copies, and a device with whichever interop extensions it has. 1: none here. */
static inline int vk_open(vk_ctx *v) {
    void *lib = vk_library();
    VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "gpuflow vulkan_interop",
                              .apiVersion = VK_API_VERSION_1_2 };
    VkInstanceCreateInfo ici = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app };
    VkPhysicalDevice phys[8];
    uint32_t n = 8, i, q = 0, version = 0;
    VkResult r;
    VkQueueFamilyProperties families[16];
    VkExtensionProperties exts[512];
    uint32_t next = 512;
    const char *want[4];
    uint32_t nwant = 0;
    float prio = 1.0f;
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12 };
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT hostp = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT };
    VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &hostp };
    VkPhysicalDeviceVulkan12Features enable12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .timelineSemaphore = VK_TRUE };
    VkDeviceQueueCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueCount = 1, .pQueuePriorities = &prio };
    VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &enable12, .queueCreateInfoCount = 1,
                               .pQueueCreateInfos = &qci };
    if (!lib || !(vk.vkGetInstanceProcAddr = (PFN_vkGetInstanceProcAddr)(uintptr_t)vk_symbol(lib, "vkGetInstanceProcAddr"))) {
        printf("no Vulkan loader here: nothing to share with\n");
        return 1;
    }
#define VK_LOAD_GLOBAL(name) vk.name = (PFN_##name)vk.vkGetInstanceProcAddr(NULL, #name);
    VK_INSTANCE_FNS(VK_LOAD_GLOBAL)
#undef VK_LOAD_GLOBAL
    if (vk.vkEnumerateInstanceVersion) vk.vkEnumerateInstanceVersion(&version);
    if (version < VK_API_VERSION_1_2) {
        printf("the Vulkan loader is %u.%u, older than 1.2 (timeline semaphores): nothing to share with\n",
               VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
        return 1;
    }
    if ((r = vk.vkCreateInstance(&ici, NULL, &v->instance)) != VK_SUCCESS) {
        printf("no Vulkan instance here (vkCreateInstance: VkResult %d; no driver?): nothing to share with\n", (int)r);
        return 1;
    }
#define VK_LOAD_INSTANCE(name) vk.name = (PFN_##name)vk.vkGetInstanceProcAddr(v->instance, #name);
    VK_PHYSICAL_FNS(VK_LOAD_INSTANCE)
#undef VK_LOAD_INSTANCE
    if (vk.vkEnumeratePhysicalDevices(v->instance, &n, phys) < 0 || n == 0) { printf("no Vulkan device here\n"); return 1; }
    v->phys = phys[0];
    vk.vkGetPhysicalDeviceQueueFamilyProperties(v->phys, &q, NULL);
    if (q > 16) q = 16;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(v->phys, &q, families);
    for (i = 0; i < q && !(families[i].queueFlags & (VK_QUEUE_TRANSFER_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT)); i++) {}
    if (i == q) { printf("no Vulkan queue that copies\n"); return 1; }
    v->family = qci.queueFamilyIndex = i;
    vk.vkEnumerateDeviceExtensionProperties(v->phys, NULL, &next, exts);
    v->zero_copy_exts = has_ext(exts, next, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) &&
                        has_ext(exts, next, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
    v->host_ext = has_ext(exts, next, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    vk.vkGetPhysicalDeviceFeatures2(v->phys, &f2);
    dci.pNext = f12.timelineSemaphore ? &enable12 : NULL;   /* the zero-copy way needs timelines */
    if (!f12.timelineSemaphore) v->zero_copy_exts = 0;
    if (v->zero_copy_exts) { want[nwant++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME; want[nwant++] = VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME; }
    if (v->host_ext) want[nwant++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    dci.enabledExtensionCount = nwant;
    dci.ppEnabledExtensionNames = want;
    vk.vkGetPhysicalDeviceProperties2(v->phys, &p2);
    v->host_align = hostp.minImportedHostPointerAlignment ? hostp.minImportedHostPointerAlignment : 4096;
    vk.vkGetPhysicalDeviceMemoryProperties(v->phys, &v->mem);
    VKCHECK(vk.vkCreateDevice(v->phys, &dci, NULL, &v->dev));
#define VK_LOAD_DEVICE(name) vk.name = (PFN_##name)vk.vkGetDeviceProcAddr(v->dev, #name);
    VK_DEVICE_FNS(VK_LOAD_DEVICE)
    VK_OPTIONAL_DEVICE_FNS(VK_LOAD_DEVICE)
#undef VK_LOAD_DEVICE
    vk.vkGetDeviceQueue(v->dev, v->family, 0, &v->queue);
    printf("Vulkan: %s (%s%s)\n", p2.properties.deviceName, v->zero_copy_exts ? "exports opaque fds" : "no fd exports",
           v->host_ext ? ", imports host memory" : "");
    return 0;
}

/* A buffer of bytes with its own memory of the given properties; export: as an opaque fd. */
static inline int vk_buffer(vk_ctx *v, VkDeviceSize bytes, VkMemoryPropertyFlags props, int export_fd, VkBuffer *buf,
                     VkDeviceMemory *mem, VkDeviceSize *allocated) {
    VkExternalMemoryBufferCreateInfo ext = { .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                             .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkBufferCreateInfo bci = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .pNext = export_fd ? &ext : NULL, .size = bytes,
                               .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT };
    VkExportMemoryAllocateInfo exp = { .sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                       .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkMemoryRequirements req;
    VkMemoryAllocateInfo mai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = export_fd ? &exp : NULL };
    VKCHECK(vk.vkCreateBuffer(v->dev, &bci, NULL, buf));
    vk.vkGetBufferMemoryRequirements(v->dev, *buf, &req);
    mai.allocationSize = req.size;
    if ((mai.memoryTypeIndex = memory_type(v, req.memoryTypeBits, props)) == UINT32_MAX) { fprintf(stderr, "no memory type\n"); return 1; }
    VKCHECK(vk.vkAllocateMemory(v->dev, &mai, NULL, mem));
    VKCHECK(vk.vkBindBufferMemory(v->dev, *buf, *mem, 0));
    if (allocated) *allocated = req.size;
    return 0;
}

/* Host memory at p (aligned) as a Vulkan buffer: VK_EXT_external_memory_host. */
static inline int vk_import_host(vk_ctx *v, void *p, VkDeviceSize bytes) {
    VkExternalMemoryBufferCreateInfo ext = { .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                             .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT };
    VkBufferCreateInfo bci = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .pNext = &ext, .size = bytes,
                               .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT };
    VkMemoryHostPointerPropertiesEXT hp = { .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT };
    VkImportMemoryHostPointerInfoEXT imp = { .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                                             .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, .pHostPointer = p };
    VkMemoryAllocateInfo mai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &imp, .allocationSize = bytes };
    VkMemoryRequirements req;
    VKCHECK(vk.vkCreateBuffer(v->dev, &bci, NULL, &v->shared));
    vk.vkGetBufferMemoryRequirements(v->dev, v->shared, &req);
    VKCHECK(vk.vkGetMemoryHostPointerPropertiesEXT(v->dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, p, &hp));
    if ((mai.memoryTypeIndex = memory_type(v, hp.memoryTypeBits & req.memoryTypeBits, 0)) == UINT32_MAX) {
        fprintf(stderr, "no memory type imports this host memory\n");
        return 1;
    }
    VKCHECK(vk.vkAllocateMemory(v->dev, &mai, NULL, &v->shared_mem));
    VKCHECK(vk.vkBindBufferMemory(v->dev, v->shared, v->shared_mem, 0));
    return 0;
}

/* One submit of cmd: waits for wait_value of the timeline (0: none), signals signal_value
   (0: none), and the fence when asked. */
static inline int vk_submit(vk_ctx *v, VkCommandBuffer cmd, uint64_t wait_value, uint64_t signal_value, int fence) {
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkTimelineSemaphoreSubmitInfo ts = { .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                         .waitSemaphoreValueCount = wait_value ? 1 : 0, .pWaitSemaphoreValues = &wait_value,
                                         .signalSemaphoreValueCount = signal_value ? 1 : 0, .pSignalSemaphoreValues = &signal_value };
    VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .pNext = v->timeline ? &ts : NULL,
                        .waitSemaphoreCount = wait_value ? 1 : 0, .pWaitSemaphores = &v->timeline, .pWaitDstStageMask = &stage,
                        .commandBufferCount = 1, .pCommandBuffers = &cmd,
                        .signalSemaphoreCount = signal_value ? 1 : 0, .pSignalSemaphores = &v->timeline };
    VKCHECK(vk.vkQueueSubmit(v->queue, 1, &si, fence ? v->fence : VK_NULL_HANDLE));
    if (fence) {
        VKCHECK(vk.vkWaitForFences(v->dev, 1, &v->fence, VK_TRUE, UINT64_MAX));
        VKCHECK(vk.vkResetFences(v->dev, 1, &v->fence));
    }
    return 0;
}

/* The shared buffer and the timeline, gone (the host way starts from a clean slate). */
static inline void vk_drop_shared(vk_ctx *v) {
    if (v->timeline) { vk.vkDestroySemaphore(v->dev, v->timeline, NULL); v->timeline = VK_NULL_HANDLE; }
    if (v->shared) { vk.vkDestroyBuffer(v->dev, v->shared, NULL); v->shared = VK_NULL_HANDLE; }
    if (v->shared_mem) { vk.vkFreeMemory(v->dev, v->shared_mem, NULL); v->shared_mem = VK_NULL_HANDLE; }
}

#if !defined(_WIN32)
/* A device-local buffer of bytes and a timeline semaphore, both exported as opaque fds (ours
   to close). 1: the driver cannot (then nothing is left made). */
static inline int vk_export_shared(vk_ctx *v, VkDeviceSize bytes, int *mem_fd, int *sem_fd) {
    VkExportSemaphoreCreateInfo es = { .sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                       .handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphoreTypeCreateInfo st = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, .pNext = &es,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE };
    VkSemaphoreCreateInfo sci = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &st };
    VkMemoryGetFdInfoKHR mfd = { .sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
                                 .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT };
    VkSemaphoreGetFdInfoKHR sfd = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
                                    .handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT };
    *mem_fd = *sem_fd = -1;
    if (!v->zero_copy_exts || !vk.vkGetMemoryFdKHR || !vk.vkGetSemaphoreFdKHR) return 1;
    if (vk_buffer(v, bytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 1, &v->shared, &v->shared_mem, &v->shared_bytes) == 0 &&
        vk.vkCreateSemaphore(v->dev, &sci, NULL, &v->timeline) == VK_SUCCESS) {
        mfd.memory = v->shared_mem;
        sfd.semaphore = v->timeline;
        if (vk.vkGetMemoryFdKHR(v->dev, &mfd, mem_fd) == VK_SUCCESS && vk.vkGetSemaphoreFdKHR(v->dev, &sfd, sem_fd) == VK_SUCCESS) return 0;
    }
    if (*mem_fd >= 0) close(*mem_fd);
    *mem_fd = -1;
    vk_drop_shared(v);
    return 1;
}
#endif

/* Everything vk_open and the helpers made. */
static inline void vk_close(vk_ctx *v) {
    vk.vkDeviceWaitIdle(v->dev);
    vk_drop_shared(v);
    if (v->readback) vk.vkDestroyBuffer(v->dev, v->readback, NULL);
    if (v->readback_mem) vk.vkFreeMemory(v->dev, v->readback_mem, NULL);
    if (v->fence) vk.vkDestroyFence(v->dev, v->fence, NULL);
    if (v->pool) vk.vkDestroyCommandPool(v->dev, v->pool, NULL);
    vk.vkDestroyDevice(v->dev, NULL);
    vk.vkDestroyInstance(v->instance, NULL);
}
#endif /* VULKAN_SETUP_OK */
#endif /* VULKAN_SETUP_H */
