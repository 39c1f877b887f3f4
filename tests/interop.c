/* External memory and semaphores (issue "Graphics and process interop"), on any backend: what
   it takes is used, what it does not is refused with GF_ERROR_NOT_SUPPORTED naming what it
   does take. On the stub (host fds: POSIX shared memory) every path runs:

     refusals   each bad description gets its code and a message, and leaves nothing behind
                (no buffer, no semaphore, no memory counted); the caller's fd stays open
     import     a shared-memory fd imported at an offset is a buffer like any other: copies,
                fills, a view, a kernel, the race detector, GF_MEMORY_IMPORTED; the bytes are
                the caller's own mapping's (no copy)
     export     an exportable buffer's fd imported again: one memory, two buffers
     semaphores a timeline orders two streams (the race detector agrees); a binary one is
                consumed by its wait; a wait for a value nobody signals times out, and the state
                report names the semaphore and the value; destroyed while a stream waits on it:
                the destroy returns at once, the wait ends when the value comes
     processes  a second process (this program again, started with the fds) imports a buffer
                and a semaphore, waits for this one's signal, checks and rewrites the bytes,
                signals back

   usage: interop stub|opencl|cuda|hip        (interop --child BUF_FD SIZE SEM_FD: the other process) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include <stdlib.h>
#include <pthread.h>
#if !defined(_WIN32)   /* Windows (MinGW, wine): gpuflow's own semaphores and the refusals only */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#define GF_KERNELS GF_KERNELS_AS_C
GF_KERNELS(
GF_KERNEL(ip_add_one, GF_PARAM(GF_GLOBAL unsigned char *, x), GF_PARAM(unsigned, n))
{
    unsigned i = (unsigned)gf_global_id(0);
    if (i < n) x[i] = (unsigned char)(x[i] + 1);
}
)
#undef GF_KERNELS

#define IP_N 65536u
static gf_device *dev;
static gf_backend backend;
static int takes_host_fd;   /* the device imports and exports host fds (the stub) */
static int exports;         /* the device makes exportable buffers (stub: host fds; CUDA: shareable fds) */
static gf_external_type export_type(void) { return backend == GF_BACKEND_STUB ? GF_EXTERNAL_HOST_FD : GF_EXTERNAL_SHAREABLE_FD; }

#if !defined(_WIN32)
/* A POSIX shared-memory object of bytes (its name gone at once), or -1. */
static int shm_fd(size_t bytes)
{
    char name[64];
    int fd;
    snprintf(name, sizeof name, "/gpuflow-test-%ld", (long)getpid());
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return -1;
    shm_unlink(name);
    if (ftruncate(fd, (off_t)bytes) != 0) { close(fd); return -1; }
    return fd;
}
static int fd_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }
#endif
static uint64_t imported_bytes(void)
{
    gf_memory_stats st;
    memset(&st, 0, sizeof st);
    if (gf_device_memory_stats(dev, &st) != GF_OK) return (uint64_t)-1;
    return st.kind[GF_MEMORY_IMPORTED].bytes;
}
static gf_external_memory_desc mem_desc(gf_external_type type, int fd, uint64_t size, uint64_t offset)
{
    gf_external_memory_desc d;
    memset(&d, 0, sizeof d);
    d.type = type; d.fd = fd; d.size = size; d.offset = offset;
    return d;
}

/* A fill on w and a copy on r with nothing between them that the streams see: a race to the
   race detector. In fact the copy runs first (w is held by a gate until r is done), so
   ThreadSanitizer sees no race of its own. */
static void racy_pair(gf_stream *w, gf_stream *r, gf_buffer *b, unsigned char *host, size_t bytes)
{
    th_gate g;
    th_gate_init(&g);
    gf_stream_add_callback(w, th_gate_cb, &g);
    CHECK_EQ_RESULT(gf_fill_async(w, b, 0, 1, bytes), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(r, host, b, 0, bytes), GF_OK);
    gf_stream_synchronize(r);
    th_gate_open(&g);
    gf_stream_synchronize(w);
    th_gate_destroy(&g);
}

#if !defined(_WIN32)
static void test_refusals(void)
{
    gf_external_memory_desc d;
    gf_semaphore_desc sd;
    gf_external_handle h = { GF_EXTERNAL_NONE, -1, NULL, 0 };
    gf_buffer *b = NULL, *plain = NULL, *view = NULL;
    gf_semaphore *sem = NULL;
    gf_stream *s = NULL;
    int fd = shm_fd(IP_N), pipes[2] = { -1, -1 }, closed;
    uint64_t before = imported_bytes();

    CHECK(fd >= 0, "refusals: a shared-memory fd to offer");
    if (fd < 0) return;
    CHECK(!strcmp(gf_external_type_name(GF_EXTERNAL_HOST_FD), "GF_EXTERNAL_HOST_FD") &&
          !strcmp(gf_external_type_name((gf_external_type)99), "(not a gf_external_type)"), "gf_external_type_name");
    d = mem_desc(GF_EXTERNAL_NONE, fd, IP_N, 0);
    CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);
    d.type = (gf_external_type)99;
    CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);
    d.type = GF_EXTERNAL_D3D12_FENCE;   /* a semaphore type */
    CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(gf_last_error(), "not a memory handle type") != NULL, "a semaphore type for memory: said so");
    CHECK_FAIL(gf_buffer_import(NULL, &d, &b), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_buffer_import(dev, NULL, &b), GF_ERROR_INVALID_ARGUMENT);
    CHECK_FAIL(gf_buffer_import(dev, &d, NULL), GF_ERROR_INVALID_ARGUMENT);
    d = mem_desc(GF_EXTERNAL_HOST_FD, fd, IP_N, 0);
    d.flags = 0x80000000u;   /* unknown flags: refused, as everywhere (they were taken; found by review) */
    CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);
    CHECK(b == NULL && strstr(gf_last_error(), "unknown flags") != NULL, "an import with unknown flags is refused, said why");
    d = mem_desc(GF_EXTERNAL_OPAQUE_FD, fd, IP_N, 0);
    if (takes_host_fd) {
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_NOT_SUPPORTED);
        CHECK(strstr(gf_last_error(), "GF_EXTERNAL_HOST_FD") != NULL, "an opaque fd on the stub: the message names what it takes");
        d = mem_desc(GF_EXTERNAL_HOST_FD, fd, 0, 0);
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);                     /* size 0 */
        d = mem_desc(GF_EXTERNAL_HOST_FD, fd, IP_N, IP_N);
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);                     /* offset past size */
        d = mem_desc(GF_EXTERNAL_HOST_FD, fd, 2 * IP_N, 0);
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_OUT_OF_RANGE);                         /* past what the fd holds */
        d = mem_desc(GF_EXTERNAL_HOST_FD, -1, IP_N, 0);
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);
        closed = dup(fd);
        close(closed);
        d = mem_desc(GF_EXTERNAL_HOST_FD, closed, IP_N, 0);
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(gf_last_error(), "is not open") != NULL, "a closed fd: named as not open");
        if (pipe(pipes) == 0) {   /* an fd the host cannot map */
            d = mem_desc(GF_EXTERNAL_HOST_FD, pipes[0], 4096, 0);
            CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);
            CHECK(strstr(gf_last_error(), "cannot be mapped") != NULL, "a pipe: cannot be mapped, said so");
            close(pipes[0]);
            close(pipes[1]);
        }
        {   /* an fd that holds nothing: was taken, and the first copy died of SIGBUS (found by review) */
            int empty = shm_fd(0);
            if (CHECK(empty >= 0, "an empty shared-memory fd")) {
                d = mem_desc(GF_EXTERNAL_HOST_FD, empty, 4096, 0);
                CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_OUT_OF_RANGE);
                memset(&sd, 0, sizeof sd);
                sd.type = GF_EXTERNAL_HOST_FD; sd.fd = empty; sd.timeline = 1;
                CHECK_FAIL(gf_semaphore_import(dev, &sd, &sem), GF_ERROR_OUT_OF_RANGE);
                close(empty);
            }
        }
        CHECK(b == NULL && imported_bytes() == before, "refused imports: no buffer, no memory counted");
        CHECK(fd_open(fd), "refused imports: the caller's fd stays open (it is still the caller's)");
        /* exports: only an exportable buffer, never a view */
        CHECK_EQ_RESULT(gf_buffer_create(dev, 4096, &plain), GF_OK);
        CHECK_FAIL(gf_buffer_export(plain, GF_EXTERNAL_HOST_FD, &h), GF_ERROR_INVALID_ARGUMENT);
        CHECK(h.fd == -1, "a refused export gives no fd");
        CHECK_FAIL(gf_buffer_export(plain, GF_EXTERNAL_OPAQUE_WIN32, &h), GF_ERROR_NOT_SUPPORTED);
        if (plain && gf_buffer_view(plain, 0, 1024, &view) == GF_OK) {
            CHECK_FAIL(gf_buffer_export(view, GF_EXTERNAL_HOST_FD, &h), GF_ERROR_INVALID_ARGUMENT);
            gf_buffer_destroy(view);
        }
        gf_buffer_destroy(plain);
        /* semaphores */
        memset(&sd, 0, sizeof sd);
        sd.type = GF_EXTERNAL_D3D12_HEAP;   /* a memory type */
        sd.fd = fd;
        CHECK_FAIL(gf_semaphore_import(dev, &sd, &sem), GF_ERROR_INVALID_ARGUMENT);
        sd.type = GF_EXTERNAL_OPAQUE_FD;
        CHECK_FAIL(gf_semaphore_import(dev, &sd, &sem), GF_ERROR_NOT_SUPPORTED);
        CHECK(sem == NULL && fd_open(fd), "refused semaphore imports: no semaphore, the fd still the caller's");
        CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &sem), GF_OK);
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
        if (sem && s) {
            CHECK_FAIL(gf_semaphore_signal_async(s, sem, 0), GF_ERROR_INVALID_ARGUMENT);   /* a timeline starts at 0 */
            CHECK_FAIL(gf_semaphore_signal_async(NULL, sem, 1), GF_ERROR_INVALID_HANDLE);
            CHECK_FAIL(gf_semaphore_wait_async(s, NULL, 1), GF_ERROR_INVALID_HANDLE);
            CHECK_FAIL(gf_semaphore_wait_async(s, (gf_semaphore *)s, 1), GF_ERROR_INVALID_HANDLE);
            CHECK_FAIL(gf_semaphore_export(sem, GF_EXTERNAL_OPAQUE_FD, &h), GF_ERROR_NOT_SUPPORTED);
        }
        gf_semaphore_destroy(sem);
        CHECK_QUIET(gf_semaphore_destroy(NULL));   /* as free(NULL) */
        gf_stream_destroy(s);
    } else {
        gf_result r;
        d = mem_desc(GF_EXTERNAL_HOST_FD, fd, IP_N, 0);
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_NOT_SUPPORTED);
        CHECK(strstr(gf_last_error(), "does not take GF_EXTERNAL_HOST_FD") != NULL, "a host fd elsewhere: refused, named");
        memset(&sd, 0, sizeof sd);
        sd.type = GF_EXTERNAL_HOST_FD;
        sd.fd = fd;
        CHECK_FAIL(gf_semaphore_import(dev, &sd, &sem), GF_ERROR_NOT_SUPPORTED);
        r = gf_semaphore_create(dev, 1, &sem);
        CHECK(r == GF_OK || r == GF_ERROR_NOT_SUPPORTED, "gf_semaphore_create: made, or NOT_SUPPORTED with a reason");
        if (r == GF_OK) gf_semaphore_destroy(sem);
        sem = NULL;
        if (backend == GF_BACKEND_CUDA || backend == GF_BACKEND_HIP) {   /* a shared-memory fd is no driver's opaque fd */
            d = mem_desc(GF_EXTERNAL_OPAQUE_FD, fd, IP_N, 0);
            r = gf_buffer_import(dev, &d, &b);
            CHECK(r != GF_OK && b == NULL && strstr(gf_last_error(), backend == GF_BACKEND_HIP ? "hipImportExternalMemory" : "cuImportExternalMemory") != NULL,
                  "CUDA, HIP: a host fd given as an opaque fd is refused by the driver, and named");
            closed = dup(fd);
            close(closed);
            d = mem_desc(GF_EXTERNAL_OPAQUE_FD, closed, IP_N, 0);
            CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_INVALID_ARGUMENT);
            CHECK_FAIL(gf_semaphore_export(NULL, GF_EXTERNAL_OPAQUE_FD, &h), GF_ERROR_INVALID_HANDLE);
        }
        CHECK(b == NULL && sem == NULL && imported_bytes() == before, "refused imports: nothing made, nothing counted");
        CHECK(fd_open(fd), "refused: the caller's fd stays open");
    }
    close(fd);
}

static void test_import(gf_kernel *k)
{
    gf_external_memory_desc d;
    gf_buffer *b = NULL, *view = NULL;
    gf_stream *s1 = NULL, *s2 = NULL;
    unsigned char *mine, host[256];
    int fd = shm_fd(2 * IP_N), i, ok;
    if (fd < 0) { CHECK(0, "import: a shared-memory fd"); return; }
    mine = (unsigned char *)mmap(NULL, 2 * IP_N, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mine == MAP_FAILED) { CHECK(0, "import: the test maps its own fd"); close(fd); return; }
    memset(mine, 5, 2 * IP_N);
    d = mem_desc(GF_EXTERNAL_HOST_FD, fd, 2 * IP_N, IP_N);   /* the second half */
    CHECK_EQ_RESULT(gf_buffer_import(dev, &d, &b), GF_OK);
    close(fd);   /* the fd was ours all along: the import does not need it */
    if (!b) { munmap(mine, 2 * IP_N); return; }
    CHECK(gf_buffer_size(b) == IP_N, "import: the buffer covers [offset, size)");
    CHECK(imported_bytes() == IP_N, "import: counted as GF_MEMORY_IMPORTED");
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s2), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s1, b, 0, 7, IP_N), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
    ok = 1;
    for (i = 0; i < (int)IP_N; i++) ok &= mine[IP_N + (unsigned)i] == 7 && mine[i] == 5;
    CHECK(ok, "import: a fill lands in the exporter's memory, at the offset, and nowhere else (no copy)");
    if (k) {
        gf_launch_dims dims = { { IP_N / 256, 1, 1 }, { 256, 1, 1 }, 0 };
        unsigned n = IP_N;
        gf_arg args[2] = { GF_ARG_BUFFER(b), GF_ARG(n) };
        CHECK_EQ_RESULT(gf_launch(s1, k, dims, args, 2), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host_async(s1, host, b, 1000, sizeof host), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
        CHECK(host[0] == 8 && host[255] == 8 && mine[IP_N + 5] == 8, "import: a kernel reads and writes imported memory");
    }
    CHECK_EQ_RESULT(gf_buffer_view(b, 4096, 4096, &view), GF_OK);
    if (view) {
        CHECK_EQ_RESULT(gf_fill_async(s1, view, 0, 9, 4096), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s1), GF_OK);
        CHECK(mine[IP_N + 4096] == 9 && mine[IP_N + 8191] == 9 && mine[IP_N + 8192] != 9, "import: a view of an imported buffer");
        gf_buffer_destroy(view);
    }
    /* the race detector sees imported memory like any other */
    th_said_clear();
    gf_set_logger(th_said_logger, NULL);
    gf_race_check_enable(dev, GF_RACE_CHECK_ON);
    racy_pair(s1, s2, b, host, sizeof host);
    CHECK(th_said_count("race: buffer") >= 1, "import: a race on an imported buffer is reported");
    gf_race_check_enable(dev, 0);
    gf_set_logger(NULL, NULL);
    gf_buffer_destroy(b);
    gf_device_synchronize(dev);
    CHECK(imported_bytes() == 0, "import: the destroy gives it back (GF_MEMORY_IMPORTED 0)");
    CHECK(mine[IP_N] == 1, "import: the exporter's memory outlives the import");
    munmap(mine, 2 * IP_N);
    gf_stream_destroy(s1);
    gf_stream_destroy(s2);
}

static void test_export(void)
{
    gf_buffer_desc bd;
    gf_buffer *b = NULL, *again = NULL;
    gf_external_handle h = { GF_EXTERNAL_NONE, -1, NULL, 0 };
    gf_external_memory_desc d;
    unsigned char back[64];
    memset(&bd, 0, sizeof bd);
    bd.size = IP_N;
    bd.exportable = 1;
    CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &bd, &b), GF_OK);
    if (!b) return;
    CHECK_EQ_RESULT(gf_buffer_export(b, export_type(), &h), GF_OK);
    CHECK(h.fd >= 0 && h.size >= IP_N && h.type == export_type(), "export: an fd and the allocation's size");
    CHECK(h.fd >= 0 && (fcntl(h.fd, F_GETFD) & FD_CLOEXEC), "export: the fd is close-on-exec");
    if (h.fd >= 0) {
        d = mem_desc(export_type(), h.fd, h.size, 0);
        CHECK_EQ_RESULT(gf_buffer_import(dev, &d, &again), GF_OK);
        close(h.fd);   /* ours to close */
    }
    if (again) {
        static unsigned char pattern[IP_N];
        memset(pattern, 0x3c, sizeof pattern);
        CHECK_EQ_RESULT(gf_copy_to_device(b, 0, pattern, IP_N), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host(back, again, 100, sizeof back), GF_OK);
        CHECK(back[0] == 0x3c && back[63] == 0x3c, "export: the exported memory imported again is the same memory");
        gf_buffer_destroy(again);
    }
    gf_buffer_destroy(b);
}

#else
/* Windows: no fd type is taken (each named as POSIX), nor a Windows type by the stub; gpuflow's
   own semaphores work (test_semaphores, test_captured). */
static void test_refusals(void)
{
    static const gf_external_type fd_types[] = { GF_EXTERNAL_OPAQUE_FD, GF_EXTERNAL_SHAREABLE_FD, GF_EXTERNAL_HOST_FD };
    gf_external_memory_desc d;
    gf_semaphore_desc sd;
    gf_external_handle h = { GF_EXTERNAL_NONE, -1, NULL, 0 };
    gf_buffer *b = NULL;
    gf_semaphore *sem = NULL;
    size_t i;
    uint64_t before = imported_bytes();
    for (i = 0; i < sizeof fd_types / sizeof fd_types[0]; i++) {
        d = mem_desc(fd_types[i], 3, IP_N, 0);
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_NOT_SUPPORTED);
        CHECK(strstr(gf_last_error(), "this is Windows") != NULL || strstr(gf_last_error(), "does not take") != NULL,
              "Windows: an fd type is refused, and the message says why");
    }
    d = mem_desc(GF_EXTERNAL_OPAQUE_WIN32, -1, IP_N, 0);
    d.win32_handle = (void *)(size_t)4;
    if (backend == GF_BACKEND_STUB) {
        CHECK_FAIL(gf_buffer_import(dev, &d, &b), GF_ERROR_NOT_SUPPORTED);
        CHECK(strstr(gf_last_error(), "GF_EXTERNAL_OPAQUE_WIN32") != NULL, "Windows stub: a Win32 handle refused, named");
        memset(&sd, 0, sizeof sd);
        sd.type = GF_EXTERNAL_D3D12_FENCE;
        sd.win32_handle = (void *)(size_t)4;
        CHECK_FAIL(gf_semaphore_import(dev, &sd, &sem), GF_ERROR_NOT_SUPPORTED);
    }
    CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &sem), GF_OK);
    if (sem) {
        CHECK_FAIL(gf_semaphore_export(sem, GF_EXTERNAL_HOST_FD, &h), GF_ERROR_NOT_SUPPORTED);
        CHECK_FAIL(gf_semaphore_export(sem, GF_EXTERNAL_OPAQUE_WIN32, &h), GF_ERROR_NOT_SUPPORTED);
        gf_semaphore_destroy(sem);
    }
    CHECK(b == NULL && imported_bytes() == before, "Windows: refused imports made nothing, counted nothing");
}
#endif

static void test_semaphores(void)
{
    gf_semaphore *t = NULL, *bin = NULL, *alias = NULL;
    gf_semaphore_desc sd;
    gf_external_handle h;
    gf_stream *a = NULL, *b = NULL, *c = NULL;
    gf_buffer *buf = NULL;
    unsigned char host[1024];
    char state[4096];
    double t0;
    th_gate gate;
    CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &t), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_create(dev, 0, &bin), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &c), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &buf), GF_OK);
    if (!t || !bin || !a || !b || !c || !buf) return;
    /* a timeline orders a's fill before b's copy, the wait queued before the signal */
    CHECK_EQ_RESULT(gf_semaphore_wait_async(b, t, 1), GF_OK);   /* queued first: b holds until a signals */
    CHECK_EQ_RESULT(gf_copy_to_host_async(b, host, buf, 0, sizeof host), GF_OK);
    th_sleep_ms(20);
    CHECK_EQ_RESULT(gf_stream_query(b), GF_NOT_READY);
    CHECK_EQ_RESULT(gf_fill_async(a, buf, 0, 0x5a, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_signal_async(a, t, 1), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
    CHECK(host[0] == 0x5a && host[sizeof host - 1] == 0x5a, "timeline: the wait held b until a's signal, after a's fill");
    /* the race detector: a wait is ordered after the signals queued before it (as an event
       wait is after the record it sees); without the wait, the same pair is a race */
    th_said_clear();
    gf_set_logger(th_said_logger, NULL);
    gf_race_check_enable(dev, GF_RACE_CHECK_ON);
    CHECK_EQ_RESULT(gf_fill_async(a, buf, 0, 0x5b, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_signal_async(a, t, 2), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(b, t, 2), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(b, host, buf, 0, sizeof host), GF_OK);
    gf_stream_synchronize(b);
    CHECK(th_said_count("race:") == 0 && host[0] == 0x5b, "timeline: the race detector sees the order the semaphore makes");
    racy_pair(a, c, buf, host, sizeof host);
    CHECK(th_said_count("race:") == 1, "timeline: the same pair without the wait is a race");
    gf_race_check_enable(dev, 0);
    gf_set_logger(NULL, NULL);
    /* binary: a wait consumes the signal */
    CHECK_EQ_RESULT(gf_semaphore_signal_async(a, bin, 0), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(b, bin, 0), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(b, bin, 0), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(b, 50), GF_TIMEOUT);   /* consumed: the second wait waits */
    CHECK_EQ_RESULT(gf_semaphore_signal_async(a, bin, 0), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
    /* a value nobody signals: bounded waits time out, the state report names it */
    CHECK_EQ_RESULT(gf_semaphore_wait_async(c, t, 5), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(c, 50), GF_TIMEOUT);
    CHECK_EQ_RESULT(gf_device_write_state(dev, state, sizeof state), GF_OK);
    CHECK(strstr(state, "semaphore") && strstr(state, "to reach 5") && strstr(state, "it is at 2"),
          "a wait nobody signals: the state report names the semaphore, the value and where it is");
    /* destroyed while c still waits: at once; the wait ends when another handle signals */
#if !defined(_WIN32)
    CHECK_EQ_RESULT(gf_semaphore_export(t, GF_EXTERNAL_HOST_FD, &h), GF_OK);
    memset(&sd, 0, sizeof sd);
    sd.type = GF_EXTERNAL_HOST_FD;
    sd.fd = h.fd;
    sd.timeline = 1;
    if (h.fd >= 0) {
        CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &alias), GF_OK);
        close(h.fd);
    }
#else
    (void)sd; (void)h;
#endif
    th_gate_init(&gate);
    if (!alias) {   /* no second handle (Windows): the signal is queued first, held by a gate */
        gf_stream_add_callback(a, th_gate_cb, &gate);
        CHECK_EQ_RESULT(gf_semaphore_signal_async(a, t, 5), GF_OK);
    }
    t0 = th_now_ms();
    gf_semaphore_destroy(t);
    CHECK(th_now_ms() - t0 < 1000.0 && gf_stream_query(c) == GF_NOT_READY, "destroy while a stream waits on it: returns at once");
    if (alias) {
        CHECK_EQ_RESULT(gf_semaphore_signal_async(a, alias, 5), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(c), GF_OK);
        gf_semaphore_destroy(alias);
    } else {
        th_gate_open(&gate);
        CHECK_EQ_RESULT(gf_stream_synchronize_timeout(c, TH_WAIT_MS), GF_OK);
    }
    gf_stream_synchronize(a);
    th_gate_destroy(&gate);
    gf_semaphore_destroy(bin);
    gf_buffer_destroy(buf);
    gf_stream_destroy(a);
    gf_stream_destroy(b);
    gf_stream_destroy(c);
}

#if !defined(_WIN32)
/* What a holder of an exported fd (a peer process) could do to the exporter, and a stream's
   timeline signal forgotten (found by review): cutting a buffer's or a semaphore's fd killed
   the exporter at its next touch (SIGBUS); a timeline imported as binary, whose wait set the
   counter back to 0 for every holder; a stream that signalled 5, then another 10, could signal
   3. On Linux the stub's memory is a memfd sealed against shrinking. */
static void test_hostile_peer(void)
{
    gf_buffer_desc bd;
    gf_buffer *buf = NULL;
    gf_external_handle h;
    gf_semaphore *t = NULL, *imported = NULL;
    gf_semaphore_desc sd;
    gf_stream *a = NULL, *b = NULL;
    unsigned char host[64];
    memset(&bd, 0, sizeof bd);
    bd.size = 4096;
    bd.exportable = 1;
    if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &a), GF_OK) || !CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &b), GF_OK)) return;
#if defined(__linux__)
    if (CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &bd, &buf), GF_OK) && CHECK_EQ_RESULT(gf_buffer_export(buf, GF_EXTERNAL_HOST_FD, &h), GF_OK)) {
        CHECK(ftruncate(h.fd, 0) != 0, "hostile peer: an exported buffer's fd cannot be cut (sealed against shrinking)");
        close(h.fd);
        CHECK_EQ_RESULT(gf_fill_async(a, buf, 0, 0x3c, bd.size), GF_OK);   /* SIGBUS here, once cut */
        CHECK_EQ_RESULT(gf_copy_to_host_async(a, host, buf, 0, sizeof host), GF_OK);
        CHECK(gf_stream_synchronize(a) == GF_OK && host[0] == 0x3c, "hostile peer: the exporter's memory stays whole");
    }
    if (buf) gf_buffer_destroy(buf);
#endif
    if (CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &t), GF_OK) && CHECK_EQ_RESULT(gf_semaphore_export(t, GF_EXTERNAL_HOST_FD, &h), GF_OK)) {
#if defined(__linux__)
        CHECK(ftruncate(h.fd, 0) != 0, "hostile peer: an exported semaphore's fd cannot be cut");
#endif
        memset(&sd, 0, sizeof sd);
        sd.type = GF_EXTERNAL_HOST_FD;
        sd.fd = h.fd;
        sd.timeline = 0;
        CHECK_FAIL(gf_semaphore_import(dev, &sd, &imported), GF_ERROR_INVALID_ARGUMENT);
        CHECK(imported == NULL && strstr(gf_last_error(), "timeline") != NULL, "hostile peer: a timeline's fd imported as binary is refused, naming the kind");
        sd.timeline = 1;
        CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &imported), GF_OK);
        close(h.fd);
        CHECK_EQ_RESULT(gf_semaphore_signal_async(a, t, 5), GF_OK);
        CHECK_EQ_RESULT(gf_semaphore_signal_async(b, t, 10), GF_OK);
        CHECK_FAIL(gf_semaphore_signal_async(a, t, 3), GF_ERROR_INVALID_ARGUMENT);   /* a's last was 5 */
        CHECK_EQ_RESULT(gf_semaphore_signal_async(a, t, 11), GF_OK);
        CHECK_EQ_RESULT(gf_semaphore_wait_async(b, imported, 11), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize_timeout(b, TH_WAIT_MS), GF_OK);
    }
    if (imported) gf_semaphore_destroy(imported);
    if (t) gf_semaphore_destroy(t);
    /* the last 8 streams to signal are remembered, the least recent forgotten first: s0, which
       signalled again since s1..s7 first did, is still known after s8 comes (review B3) */
    if (CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &t), GF_OK)) {
        gf_stream *q[9];
        int i, ok = 1;
        memset(q, 0, sizeof q);
        for (i = 0; i < 9 && ok; i++) ok = gf_stream_create(dev, NULL, &q[i]) == GF_OK;
        if (CHECK(ok, "timeline memory: nine streams")) {
            ok = gf_semaphore_signal_async(q[0], t, 10) == GF_OK;
            for (i = 1; i < 8 && ok; i++) ok = gf_semaphore_signal_async(q[i], t, (uint64_t)(30 + i)) == GF_OK;
            ok = ok && gf_semaphore_signal_async(q[0], t, 20) == GF_OK && gf_semaphore_signal_async(q[8], t, 200) == GF_OK;
            CHECK(ok, "timeline memory: the signals go");
            CHECK_FAIL(gf_semaphore_signal_async(q[0], t, 5), GF_ERROR_INVALID_ARGUMENT);
        }
        for (i = 0; i < 9; i++) if (q[i]) { gf_stream_synchronize(q[i]); gf_stream_destroy(q[i]); }
        gf_semaphore_destroy(t);
    }
    gf_stream_destroy(a);
    gf_stream_destroy(b);
}

/* The trap of a host wait behind a wait for an imported semaphore: gpuflow says so once (here
   the signal comes from another thread, so the wait does return). */
typedef struct late_signal { gf_stream *s; gf_semaphore *sem; uint64_t value; } late_signal;
static void *signal_later(void *arg)
{
    late_signal *l = (late_signal *)arg;
    th_sleep_ms(100);
    gf_semaphore_signal_async(l->s, l->sem, l->value);
    return NULL;
}
static void test_foreign_wait_warning(void)
{
    gf_semaphore *t = NULL, *alias = NULL;
    gf_semaphore_desc sd;
    gf_external_handle h = { GF_EXTERNAL_NONE, -1, NULL, 0 };
    gf_stream *waiter = NULL, *other = NULL;
    late_signal l;
    pthread_t th;
    CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &t), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &waiter), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &other), GF_OK);
    if (!t || !waiter || !other || gf_semaphore_export(t, GF_EXTERNAL_HOST_FD, &h) != GF_OK) return;
    memset(&sd, 0, sizeof sd);
    sd.type = GF_EXTERNAL_HOST_FD; sd.fd = h.fd; sd.timeline = 1;
    CHECK_EQ_RESULT(gf_semaphore_import(dev, &sd, &alias), GF_OK);
    close(h.fd);
    if (!alias) return;
    th_said_clear();
    gf_set_logger(th_said_logger, NULL);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(waiter, alias, 9), GF_OK);   /* imported: another API's to signal */
    l.s = other; l.sem = t; l.value = 9;
    pthread_create(&th, NULL, signal_later, &l);
    CHECK_EQ_RESULT(gf_stream_synchronize(waiter), GF_OK);
    pthread_join(th, NULL);
    CHECK(th_said_count("never returns") == 1 && th_said_count(": 9, imported") == 1,
          "a host wait behind a wait for an imported semaphore: said once, naming the semaphore and the value");
    CHECK_EQ_RESULT(gf_stream_synchronize(waiter), GF_OK);
    CHECK(th_said_count("never returns") == 1, "said once per such wait (a second synchronize says nothing)");
    gf_set_logger(NULL, NULL);
    gf_stream_synchronize(other);
    gf_semaphore_destroy(alias);
    gf_semaphore_destroy(t);
    gf_stream_destroy(waiter);
    gf_stream_destroy(other);
}

#endif

/* Semaphores inside a capture: the graph waits and signals on each replay (recorded on the
   stub, a native graph's nodes on CUDA) and holds the semaphore: its handle destroyed, the
   graph still replays. */
static void test_captured(void)
{
    gf_semaphore *t = NULL, *u = NULL;
    gf_stream *s = NULL, *other = NULL;
    gf_buffer *buf = NULL;
    gf_graph *g = NULL, *g2 = NULL;
    unsigned char host[256] = { 0 };
    CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &t), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &other), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &buf), GF_OK);
    if (!t || !s || !other || !buf) return;
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(s, t, 1), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, buf, 0, 0x6d, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_signal_async(s, t, 2), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    if (!g) return;
    CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
    th_sleep_ms(20);
    CHECK_EQ_RESULT(gf_stream_query(s), GF_NOT_READY);   /* the replay waits for 1 */
    CHECK_EQ_RESULT(gf_semaphore_signal_async(other, t, 1), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(other, t, 2), GF_OK);   /* the replay's own signal */
    CHECK_EQ_RESULT(gf_copy_to_host_async(other, host, buf, 0, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize_timeout(other, TH_WAIT_MS), GF_OK);
    CHECK(host[0] == 0x6d && host[sizeof host - 1] == 0x6d, "captured: the replay waited for 1, filled, signalled 2");
    /* the race detector orders a graph's launch by the signals and waits it captured (review 7:
       a wait outside for a launch's signal was a race), for a graph captured with it on */
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    th_said_clear();
    gf_set_logger(th_said_logger, NULL);
    gf_race_check_enable(dev, GF_RACE_CHECK_ON);
    CHECK_EQ_RESULT(gf_semaphore_create(dev, 1, &u), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_wait_async(s, u, 1), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, buf, 0, 0x6e, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_semaphore_signal_async(s, t, 4), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g2), GF_OK);
    if (u && g2) {
        CHECK_EQ_RESULT(gf_fill_async(other, buf, 0, 0x11, sizeof host), GF_OK);
        CHECK_EQ_RESULT(gf_semaphore_signal_async(other, u, 1), GF_OK);
        CHECK_EQ_RESULT(gf_graph_launch(g2, s), GF_OK);   /* its wait is after that signal: its fill after the fill */
        CHECK_EQ_RESULT(gf_semaphore_wait_async(other, t, 4), GF_OK);   /* the launch's signal: the copy after its fill */
        CHECK_EQ_RESULT(gf_copy_to_host_async(other, host, buf, 0, sizeof host), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(other), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        CHECK(host[0] == 0x6e && th_said_count("race:") == 0,
              "captured: a launch's captured wait and signal order it against the streams that signal and wait outside (no race)");
        if (TH_UNDER_TSAN) SKIP("captured: the racy copy races for real on the stub (ASan runs it)");
        else {
            CHECK_EQ_RESULT(gf_graph_launch(g2, s), GF_OK);
            CHECK_EQ_RESULT(gf_copy_to_host_async(other, host, buf, 0, sizeof host), GF_OK);   /* no wait: a race */
            gf_stream_synchronize(other);
            gf_stream_synchronize(s);
            CHECK(th_said_count("race:") == 1, "captured: the same copy without the wait is a race");
        }
    }
    gf_race_check_enable(dev, 0);
    gf_set_logger(NULL, NULL);
    if (g2) gf_graph_destroy(g2);
    if (u) gf_semaphore_destroy(u);
    gf_semaphore_destroy(t);   /* the graph holds it */
    CHECK(gf_graph_launch(g, s) == GF_OK && gf_stream_synchronize_timeout(s, TH_WAIT_MS) == GF_OK,
          "captured: the graph replays after the semaphore's handle is destroyed (it holds the semaphore; ASan sees no use after free)");
    gf_graph_destroy(g);
    gf_buffer_destroy(buf);
    gf_stream_destroy(s);
    gf_stream_destroy(other);
}

#if !defined(_WIN32)
/* The other process: imports the buffer (and the semaphore, where there is one), waits for 1
   (else the parent wrote before starting it), checks the bytes (0x11), writes 0x22, signals 2.
   Exit status 0: all as expected. */
static int child_main(const char *name, int buf_fd, uint64_t size, int sem_fd)
{
    gf_external_memory_desc d;
    gf_semaphore_desc sd;
    gf_buffer *b = NULL;
    gf_semaphore *sem = NULL;
    gf_stream *s = NULL;
    unsigned char host[256];
    int bad = 0;
    if (!th_backend_named(name, &backend)) return 2;
    d = mem_desc(export_type(), buf_fd, size, 0);
    memset(&sd, 0, sizeof sd);
    sd.type = GF_EXTERNAL_HOST_FD; sd.fd = sem_fd; sd.timeline = 1;
    if (gf_device_open(backend, 0, &dev) != GF_OK || gf_stream_create(dev, NULL, &s) != GF_OK ||
        gf_buffer_import(dev, &d, &b) != GF_OK || (sem_fd >= 0 && gf_semaphore_import(dev, &sd, &sem) != GF_OK)) {
        fprintf(stderr, "child: %s\n", gf_last_error());
        return 3;
    }
    if (sem) gf_semaphore_wait_async(s, sem, 1);
    gf_copy_to_host_async(s, host, b, 0, sizeof host);
    if (gf_stream_synchronize(s) != GF_OK) return 4;
    bad = host[0] != 0x11 || host[255] != 0x11;
    gf_fill_async(s, b, 0, 0x22, (size_t)gf_buffer_size(b));
    if (sem) gf_semaphore_signal_async(s, sem, 2);
    if (gf_stream_synchronize(s) != GF_OK) return 5;
    if (sem) gf_semaphore_destroy(sem);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return bad ? 6 : 0;
}

static void test_processes(const char *self, const char *name)
{
    gf_buffer_desc bd;
    gf_buffer *b = NULL;
    gf_semaphore *sem = NULL;
    gf_external_handle hb, hs;
    gf_stream *s = NULL;
    unsigned char host[256];
    char a1[32], a2[32], a3[32];
    gf_result sr;
    pid_t pid;
    int status = -1;
    memset(&bd, 0, sizeof bd);
    bd.size = 4096;
    bd.exportable = 1;
    CHECK_EQ_RESULT(gf_buffer_create_desc(dev, &bd, &b), GF_OK);
    sr = gf_semaphore_create(dev, 1, &sem);   /* where the backend makes none, the host orders the two */
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    if (!b || !s) return;
    CHECK_EQ_RESULT(gf_buffer_export(b, export_type(), &hb), GF_OK);
    hs.fd = -1;
    if (sr == GF_OK) CHECK_EQ_RESULT(gf_semaphore_export(sem, GF_EXTERNAL_HOST_FD, &hs), GF_OK);
    if (hb.fd < 0 || (sem && hs.fd < 0)) return;
    if (!sem) {
        CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x11, 4096), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    }
    snprintf(a1, sizeof a1, "%d", hb.fd);
    snprintf(a2, sizeof a2, "%llu", (unsigned long long)hb.size);
    snprintf(a3, sizeof a3, "%d", hs.fd);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {   /* exported fds are close-on-exec: this child is meant to have them */
        fcntl(hb.fd, F_SETFD, 0);
        if (hs.fd >= 0) fcntl(hs.fd, F_SETFD, 0);
        execl(self, self, "--child", name, a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    close(hb.fd);
    if (hs.fd >= 0) close(hs.fd);
    CHECK(pid > 0, "processes: the second process started");
    if (pid <= 0) return;
    if (sem) {
        CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 0x11, 4096), GF_OK);
        CHECK_EQ_RESULT(gf_semaphore_signal_async(s, sem, 1), GF_OK);
        CHECK_EQ_RESULT(gf_semaphore_wait_async(s, sem, 2), GF_OK);
        CHECK_EQ_RESULT(gf_copy_to_host_async(s, host, b, 0, sizeof host), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize_timeout(s, TH_WAIT_MS), GF_OK);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "processes: the other process imported this one's buffer and saw its bytes (exit status 0)");
    if (!sem) CHECK_EQ_RESULT(gf_copy_to_host(host, b, 0, sizeof host), GF_OK);
    CHECK(host[0] == 0x22 && host[255] == 0x22, "processes: this one sees the bytes the other wrote");
    if (sem) gf_semaphore_destroy(sem);
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

#endif

static gf_kernel *stub_kernel(gf_module **m)
{
    static const gf_stub_kernel kernels[] = { GF_STUB_KERNEL(ip_add_one) };
    gf_module_desc md;
    gf_kernel *k = NULL;
    memset(&md, 0, sizeof md);
    md.stub_kernels = kernels;
    md.stub_kernel_count = 1;
    if (gf_module_load(dev, &md, m) != GF_OK) return NULL;
    if (gf_kernel_get(*m, "ip_add_one", &k) != GF_OK) return NULL;
    return k;
}

int main(int argc, char **argv)
{
    const char *name;
    gf_module *m = NULL;
    gf_kernel *k = NULL;
    gf_result r;
#if !defined(_WIN32)
    if (argc == 6 && !strcmp(argv[1], "--child")) return child_main(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10), atoi(argv[5]));
#endif
    if (!(name = th_backend_arg(argc, argv, &backend))) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: interop %s skipped: %s: %s\n", name, gf_result_name(r), gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    printf("interop on %s: %s\n", name, gf_device_name(dev));
#if !defined(_WIN32)
    takes_host_fd = backend == GF_BACKEND_STUB;
#endif
    {
        gf_buffer_desc bd;
        gf_buffer *probe = NULL;
        memset(&bd, 0, sizeof bd);
        bd.size = 4096;
        bd.exportable = 1;
        exports = gf_buffer_create_desc(dev, &bd, &probe) == GF_OK;
        if (probe) gf_buffer_destroy(probe);
        printf("interop on %s: %s exportable buffers\n", name, exports ? "makes" : "makes no");
    }
    test_refusals();
#if !defined(_WIN32)
    if (takes_host_fd) {
        k = stub_kernel(&m);
        test_import(k);
        test_semaphores();
        test_captured();
        test_foreign_wait_warning();
        test_hostile_peer();
    }
    if (exports) {
        test_export();
        test_processes(argv[0], name);
    }
#else
    (void)k; (void)stub_kernel; (void)export_type; (void)takes_host_fd;
    if (backend == GF_BACKEND_STUB) {   /* the stub's own semaphores run on Windows too */
        test_semaphores();
        test_captured();
    }
#endif
    if (m) gf_module_destroy(m);
    gf_device_close(dev);
    return th_finish();
}
