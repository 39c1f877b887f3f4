/* Regressions for the defects a newcomer and an outside tester found (issue "Defects found by
   a newcomer and an outside tester"), one function per defect:

     2  a backend that is not compiled in says -DGPUFLOW_<B> (one macro), not "include ..."
     5  the stub checks launches as GPUs do: each argument against its GF_PARAM (kind, size,
        named), block and grid sizes against gf_device_info's limits, in 64 bits
     6  the kernel cache: a refused entry that cannot be removed is rebuilt once (no
        recursion); a long directory is used whole; a forged size field allocates nothing big
     7  waits that could never end are refused: from a stream's own callback (synchronize,
        destroy, device synchronize / trim, buffer destroy, an event recorded after it), and
        on a device opened before fork()
     8  GPUFLOW_RACE_CHECK / GPUFLOW_HANG_MS parsed strictly, every value that is not
        understood named in a warning
     9  gf_device_close names the objects the program left alive
    10  a dialect build error is reported on the line of the kernel in the user's file
    11  the first stream the program makes is "stream 1"
    12  the messages a newcomer meets first each say, in one line, what to do next (a test
        lists them)

   (1, 3 and 4 are build-system and compile-time checks: tests/package.sh and
   tests/compile_checks.sh.)  usage: newcomer stub|opencl|cuda|hip */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_FAULT_INJECTION
#include "backends.h"
#include "harness.h"
#include "test_kernels.h"
#include <stdlib.h>
#include <math.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

/* ---- the kernels: a good file, and one whose second kernel the device compiler refuses ---- */
static const char nc_source[] =
#define GF_KERNELS GF_KERNELS_AS_TEXT
#include "newcomer.gfk"
;
static const char nc_error_source[] =
#include "newcomer_error.inc"
;
#undef GF_KERNELS
#define GF_KERNELS GF_KERNELS_AS_C
#include "newcomer.gfk"
#undef GF_KERNELS
/* function-like, so that gcc gives each GF_KERNEL its own __LINE__ (clang does either way) */
#define GF_KERNELS(...) GF_KERNELS_AS_C(__VA_ARGS__)
static unsigned nc_host_only_value = 3;   /* what nc_broken reads on the host */
#include "newcomer_error.inc"
static const gf_stub_kernel nc_stub[] = { GF_STUB_KERNEL(nc_scale) };
static const gf_stub_kernel nc_error_stub[] = { GF_STUB_KERNEL(nc_fine), GF_STUB_KERNEL(nc_broken) };

static gf_device *dev;
static gf_backend backend;
static const char *backend_name;

/* ---- the log (tests/harness.h keeps what the library said) ---- */
#define log_clear th_said_clear
#define log_count th_said_count
#define log_has(words) (th_said_count(words) > 0)

static int contains(const char *text, const char *words) { return strstr(text, words) != NULL; }

/* ---- host memory: the largest single request (the forged cache size must not reach it) ---- */
static size_t largest_alloc;   /* under alloc_lock: stream workers allocate too */
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static void note_alloc(size_t n) { pthread_mutex_lock(&alloc_lock); if (n > largest_alloc) largest_alloc = n; pthread_mutex_unlock(&alloc_lock); }
static void *nc_alloc(void *u, size_t n) { (void)u; note_alloc(n); return malloc(n); }
static void *nc_realloc(void *u, void *p, size_t n) { (void)u; note_alloc(n); return realloc(p, n); }
static void nc_free(void *u, void *p) { (void)u; free(p); }

/* ---- fault injection: the cache's remove() fails while this is set ---- */
static int fail_remove;
int gpuflow_fault_hit(const char *entry) { return fail_remove && strcmp(entry, "remove") == 0; }

static gf_module_desc source_desc(const char *source, const char *name, const gf_stub_kernel *stub, int count, const char *cache)
{
    gf_module_desc d;
    memset(&d, 0, sizeof d);
    d.source = source;
    d.source_name = name;
    d.stub_kernels = stub;
    d.stub_kernel_count = count;
    d.cache_dir = cache;
    return d;
}
static gf_launch_dims dims_1d(unsigned grid, unsigned block)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = grid; d.grid[1] = d.grid[2] = 1;
    d.block[0] = block; d.block[1] = d.block[2] = 1;
    return d;
}

/* 2: the refusal for a backend that is not compiled in names the one macro to define. */
static void test_not_compiled_in(void)
{
    static const struct { gf_backend b; const char *macro; int in; } all[] = {
#ifdef GPUFLOW_CUDA
        { GF_BACKEND_CUDA, "-DGPUFLOW_CUDA", 1 },
#else
        { GF_BACKEND_CUDA, "-DGPUFLOW_CUDA", 0 },
#endif
#ifdef GPUFLOW_HIP
        { GF_BACKEND_HIP, "-DGPUFLOW_HIP", 1 },
#else
        { GF_BACKEND_HIP, "-DGPUFLOW_HIP", 0 },
#endif
#ifdef GPUFLOW_OPENCL
        { GF_BACKEND_OPENCL, "-DGPUFLOW_OPENCL", 1 },
#else
        { GF_BACKEND_OPENCL, "-DGPUFLOW_OPENCL", 0 },
#endif
    };
    int i, tested = 0;
    for (i = 0; i < 3; i++) {
        gf_device *d = NULL;
        if (all[i].in) continue;
        tested++;
        CHECK_FAIL(gf_device_open(all[i].b, 0, &d), GF_ERROR_BACKEND_UNAVAILABLE);
        CHECK(contains(gf_last_error(), all[i].macro), "2: the refusal names the one macro to define");
        CHECK(!contains(gf_last_error(), "include gpuflow_"), "2: and asks for no second step");
    }
    if (!tested) SKIP("2: every backend is compiled into this build (the stub-only build checks it)");
}

/* 5: launches the stub would once run wrongly (or crash on) are refused as a GPU refuses them. */
static void test_launch_checks(gf_stream *s)
{
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_buffer *y = NULL;
    gf_device_info info = {0};   /* zeros (no limits) if gf_device_info fails */
    gf_module_desc desc = source_desc(nc_source, "newcomer.gfk", nc_stub, 1, NULL);
    unsigned n = 4;
    float a = 2.0f, out[4] = {0}, in[4] = { 1, 2, 3, 4 };
    double wrong_n = 4.0;
    gf_launch_dims d;
    gf_arg args[3];
    gf_result r;
    gf_device_info(dev, &info);
    CHECK(info.max_threads_per_block > 0 && info.max_block[0] > 0, "5: the device states its launch limits");
    r = gf_module_load(dev, &desc, &mod);
    if (r == GF_ERROR_NOT_SUPPORTED) { SKIP("5: no kernel compiler for this backend here"); return; }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return;
    CHECK_EQ_RESULT(gf_kernel_get(mod, "nc_scale", &k), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof in, &y), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_device(y, 0, in, sizeof in), GF_OK);
    args[0].value = NULL; args[0].size = 0; args[0].buffer = y;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = NULL;
    args[2].value = &a; args[2].size = sizeof a; args[2].buffer = NULL;
    d = dims_1d(1, 4);

    /* The parameter table comes from GF_STUB_KERNEL, on every backend: a value passed for a
       buffer reached OpenCL's clSetKernelArg as a cl_mem and crashed inside PoCL (found by an
       outside tester). */
    args[1].value = &wrong_n; args[1].size = sizeof wrong_n;
    CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
    CHECK(contains(gf_last_error(), "'n'") && contains(gf_last_error(), "unsigned"), "5: a double for an unsigned is refused, naming the parameter");
    args[1].value = &n; args[1].size = sizeof n;
    args[0].value = &n; args[0].size = sizeof n; args[0].buffer = NULL;
    CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
    CHECK(contains(gf_last_error(), "'y'") && contains(gf_last_error(), "GF_ARG_BUFFER"), "5: a value where a GF_GLOBAL pointer goes is refused");
    args[0].value = NULL; args[0].size = 0; args[0].buffer = y;
    args[2].value = NULL; args[2].size = 0; args[2].buffer = y;
    CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
    CHECK(contains(gf_last_error(), "'a'"), "5: a buffer where a float goes is refused");
    args[2].value = &a; args[2].size = sizeof a; args[2].buffer = NULL;
    if (backend == GF_BACKEND_STUB) {
        /* CUDA's limits: 1024 threads, 1024 x 1024 x 64, grids of 2^31-1 x 65535 x 65535 */
        d = dims_1d(1, 2048);
        CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
        d = dims_1d(1, 32); d.block[1] = 33;
        CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
        CHECK(contains(gf_last_error(), "1056 threads"), "5: a 32 x 33 block (1056 threads) is past 1024");
        d = dims_1d(1, 32); d.block[2] = 65;
        CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
        d = dims_1d(1, 1); d.grid[1] = 65536;
        CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
        d = dims_1d(1, 1024);
        CHECK_EQ_RESULT(gf_launch(s, k, d, args, 3), GF_OK);          /* 1024 exactly: taken */
    }
    /* 2^32 threads read as 0 in 32 bits, 65536 x 65537 as 65536: each refused on every backend */
    d = dims_1d(1, 65536); d.block[1] = 65536;
    CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
    d.block[1] = 65537;
    CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);
    d = dims_1d(1, info.max_threads_per_block + 1u);
    if (info.max_threads_per_block < 0xffffffffu) CHECK_FAIL(gf_launch(s, k, d, args, 3), GF_ERROR_INVALID_ARGUMENT);

    d = dims_1d(1, 4);
    CHECK_EQ_RESULT(gf_launch(s, k, d, args, 3), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host_async(s, out, y, 0, sizeof out), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK(out[0] == (backend == GF_BACKEND_STUB ? 4.0f : 2.0f) && out[3] == (backend == GF_BACKEND_STUB ? 16.0f : 8.0f),
          "5: the right launches ran, and only they");
    gf_buffer_destroy(y);
    gf_module_destroy(mod);
}

/* ---- 6: the kernel cache against what is on disk ---- */
static int cache_entry(const char *dir, char *path, size_t cap)   /* the one gpuflow-*.bin in dir */
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return 0;
    while ((e = readdir(d)) != NULL)
        if (!strncmp(e->d_name, "gpuflow-", 8) && strstr(e->d_name, ".bin") && !strstr(e->d_name, ".tmp")) {
            n++;
            snprintf(path, cap, "%s/%s", dir, e->d_name);
        }
    closedir(d);
    return n;
}
static int entries_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}
static uint64_t fnv_more(uint64_t h, const unsigned char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
    return h;
}
static uint64_t fnv(const unsigned char *p, size_t n) { return fnv_more(1469598103934665603u, p, n); }
/* An entry is a 48-byte header (magic, key, kind, identity size, binary size, checksum), the
   identity (source, options, compiler), then the binary; the checksum covers both. */
static int rewrite_entry(const char *path, int forge_size, int garbage_payload)
{
    FILE *f = fopen(path, "r+b");
    unsigned char head[48], *rest = NULL;
    uint64_t size, sum;
    uint32_t identity;
    long end;
    int ok = 0;
    if (!f) return 0;
    if (fread(head, 1, sizeof head, f) == sizeof head && fseek(f, 0, SEEK_END) == 0 && (end = ftell(f)) > 48) {
        memcpy(&identity, head + 28, 4);
        size = (uint64_t)(end - 48);
        if (garbage_payload && size > identity && (rest = (unsigned char *)malloc((size_t)size)) != NULL &&
            fseek(f, 48, SEEK_SET) == 0 && fread(rest, 1, (size_t)size, f) == size) {
            memset(rest + identity, 'x', (size_t)size - identity);
            sum = fnv_more(fnv(rest, (size_t)size), head + 24, 4);   /* identity, binary, then the kind */
            memcpy(head + 40, &sum, 8);
            ok = fseek(f, 48, SEEK_SET) == 0 && fwrite(rest, 1, (size_t)size, f) == size;
        }
        if (forge_size) { size = 0x7ffffff0u; memcpy(head + 32, &size, 8); ok = 1; }
        ok = ok && fseek(f, 0, SEEK_SET) == 0 && fwrite(head, 1, sizeof head, f) == sizeof head;
    }
    free(rest);
    return fclose(f) == 0 && ok;
}
static void test_cache(void)
{
    char base[] = "/tmp/gpuflow-newcomer-XXXXXX", dir[1600], entry[1800], leaf[1700];
    gf_module *mod = NULL;
    gf_module_desc desc;
    gf_result r;
    int i, clean = 1;
    if (backend == GF_BACKEND_STUB) { SKIP("6: the stub compiles its kernels with the program: nothing to cache"); return; }
    if (!mkdtemp(base)) { CHECK(0, "6: a temporary directory"); return; }

    /* a directory path of ~1,400 bytes (PATH_MAX is 4096): the entry lands inside it */
    snprintf(dir, sizeof dir, "%s", base);
    for (i = 0; i < 7; i++) {
        size_t at = strlen(dir);
        dir[at] = '/';
        memset(dir + at + 1, 'a' + i, 199);
        dir[at + 200] = 0;
        if (mkdir(dir, 0700) != 0) { CHECK(0, "6: making the long directory"); return; }
    }
    desc = source_desc(nc_source, "newcomer.gfk", nc_stub, 1, dir);
    r = gf_module_load(dev, &desc, &mod);
    if (r == GF_ERROR_NOT_SUPPORTED) { SKIP("6: no kernel compiler for this backend here"); return; }
    CHECK_EQ_RESULT(r, GF_OK);
    gf_module_destroy(mod);
    CHECK(cache_entry(dir, entry, sizeof entry) == 1, "6: a 1,400-byte cache directory holds the entry");
    for (i = 0; i <= 7; i++) {   /* each level holds one thing: the next level, at the end the entry */
        size_t cut = strlen(base) + (size_t)i * 200;
        memcpy(leaf, dir, cut);
        leaf[cut] = 0;
        clean &= entries_in(leaf) == 1;
    }
    CHECK(clean, "6: nothing was written anywhere above the cache directory");

    /* a forged size field: nothing near 2 GiB is allocated for a small file */
    CHECK(rewrite_entry(entry, 1, 0), "6: forging the entry's size field");
    pthread_mutex_lock(&alloc_lock);
    largest_alloc = 0;
    pthread_mutex_unlock(&alloc_lock);
    CHECK_EQ_RESULT(gf_module_load(dev, &desc, &mod), GF_OK);
    gf_module_destroy(mod);
    pthread_mutex_lock(&alloc_lock);
    r = largest_alloc < ((size_t)256 << 20) ? GF_OK : GF_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&alloc_lock);
    CHECK(r == GF_OK, "6: a forged size field allocates nothing big (the file's size is checked first)");

    /* an entry the driver refuses, in a directory it cannot be removed from: rebuilt once */
    CHECK(cache_entry(dir, entry, sizeof entry) == 1 && rewrite_entry(entry, 0, 1), "6: an entry with a valid checksum but a binary the driver refuses");
    log_clear();
    fail_remove = 1;
    r = gf_module_load(dev, &desc, &mod);
    fail_remove = 0;
    CHECK_EQ_RESULT(r, GF_OK);
    if (r == GF_OK) gf_module_destroy(mod);
    CHECK(log_count("did not load and cannot be removed") == 1, "6: one notice, one fresh compile (no recursion)");
}

/* ---- 7: waits that could never end ---- */
typedef struct nc_inside {
    gf_stream *s; gf_buffer *b; gf_event *before, *after;
    gf_result stream_sync, device_sync, trim, event_before, event_after;
    gf_result stream_sync_timeout, event_after_timeout;   /* bounded: they used to wait the time out */
    int buffer_kept, stream_kept;
    th_flag recorded;             /* the test recorded `after`: the callback may look at it */
    th_flag done;
} nc_inside;
static void nc_waits_from_callback(void *user, gf_result status)
{
    nc_inside *t = (nc_inside *)user;
    (void)status;
    th_flag_wait(&t->recorded, 1, TH_WAIT_MS);   /* else it could run before `after` is recorded, which is then complete */
    t->stream_sync = gf_stream_synchronize(t->s);
    t->device_sync = gf_device_synchronize(dev);
    t->trim = gf_device_trim(dev, 0);
    t->event_before = gf_event_synchronize(t->before);
    t->event_after = gf_event_synchronize(t->after);
    t->stream_sync_timeout = gf_stream_synchronize_timeout(t->s, 50);
    t->event_after_timeout = gf_event_synchronize_timeout(t->after, 50);
    th_prime();
    gf_buffer_destroy(t->b);   /* refused: the buffer stays (its destroy outside the callback frees it; ASan sees a double free) */
    t->buffer_kept = contains(gf_last_error(), "host callback");
    th_prime();
    gf_stream_destroy(t->s);
    t->stream_kept = gf_stream_label(t->s)[0] != 0 && contains(gf_last_error(), "host callback");
    th_flag_add(&t->done, 1);
}
/* The profiler's report and trace, and a stream pool's destroy, from a callback of one of the
   pool's streams: each waited for the callback for good (found by review). */
typedef struct nc_pool_inside { gf_stream_pool *pool; gf_stream_set *set; gf_result report, trace; int pool_kept, set_kept; th_flag done; } nc_pool_inside;
static void nc_more_waits_from_callback(void *user, gf_result status)
{
    nc_pool_inside *u = (nc_pool_inside *)user;
    gf_profile_report rep;
    char path[64];
    (void)status;
    snprintf(path, sizeof path, "/tmp/gpuflow-nc-trace-%ld.json", (long)getpid());
    u->report = gf_profiler_report(dev, &rep);
    u->trace = gf_profiler_write_trace(dev, path);
    remove(path);
    th_prime();
    gf_stream_pool_destroy(u->pool);
    u->pool_kept = contains(gf_last_error(), "host callback");
    th_flag_add(&u->done, 1);
}
static void nc_set_destroy_from_callback(void *user, gf_result status)
{
    nc_pool_inside *u = (nc_pool_inside *)user;
    (void)status;
    th_prime();
    gf_stream_set_destroy(u->set);   /* hung for good (found by review) */
    u->set_kept = contains(gf_last_error(), "host callback") && gf_stream_set_get(u->set, 0) != NULL;
    th_flag_add(&u->done, 1);
}
/* A set's next slot and a capture's warm-up, from a callback they would wait for: refused,
   but the text named an inner call (gf_event_synchronize, gf_stream_synchronize), and the
   capture had run its warm-ups first (an outside review). */
typedef struct nc_named { gf_stream_set *set; gf_stream *s; gf_result next, capture; char next_text[160], capture_text[160]; int warmups; th_flag ended, done; } nc_named;
static nc_named *nc_named_now;
static gf_result nc_warmup_fn(gf_stream *s, void *user) { (void)s; (void)user; nc_named_now->warmups++; return GF_OK; }
static void nc_named_from_callback(void *user, gf_result status)
{
    nc_named *u = (nc_named *)user;
    gf_stream *x = NULL;
    gf_graph *g = NULL;
    (void)status;
    th_flag_wait(&u->ended, 1, TH_WAIT_MS);   /* the frame ended: set_next only waits (CUDA and HIP refuse an enqueue from a callback) */
    u->next = gf_stream_set_next(u->set, 0, &x);
    snprintf(u->next_text, sizeof u->next_text, "%.100s", gf_last_error());
    u->capture = gf_graph_capture(u->s, 2, nc_warmup_fn, NULL, &g);
    snprintf(u->capture_text, sizeof u->capture_text, "%.100s", gf_last_error());
    if (g) gf_graph_destroy(g);
    th_flag_add(&u->done, 1);
}
static void test_named_waits_in_callbacks(void)
{
    static nc_named u;
    gf_stream *first = NULL;
    memset(&u, 0, sizeof u);
    th_flag_init(&u.done);
    th_flag_init(&u.ended);
    nc_named_now = &u;
    if (CHECK_EQ_RESULT(gf_stream_set_create(dev, 1, "named", &u.set), GF_OK) && CHECK_EQ_RESULT(gf_stream_set_next(u.set, 0, &first), GF_OK)) {
        u.s = first;
        CHECK_EQ_RESULT(gf_stream_add_callback(first, nc_named_from_callback, &u), GF_OK);
        CHECK_EQ_RESULT(gf_stream_set_end_frame(u.set), GF_OK);
        th_flag_add(&u.ended, 1);
        if (CHECK(th_flag_wait(&u.done, 1, TH_WAIT_MS), "7: the callback returned")) {
            CHECK(u.next == GF_ERROR_INVALID_STATE && !strncmp(u.next_text, "gf_stream_set_next:", 19), "7: gf_stream_set_next from a callback it would wait for: refused, named");
            CHECK(u.capture == GF_ERROR_INVALID_STATE && !strncmp(u.capture_text, "gf_graph_capture:", 17) && u.warmups == 0,
                  "7: gf_graph_capture with warm-ups from its stream's callback: refused before any warm-up, named");
        }
        CHECK_EQ_RESULT(gf_stream_set_synchronize(u.set), GF_OK);
    }
    if (u.set) gf_stream_set_destroy(u.set);
    th_flag_destroy(&u.done);
    th_flag_destroy(&u.ended);
}
static void test_more_waits_in_callbacks(void)
{
    nc_pool_inside u;
    gf_stream *ps = NULL;
    memset(&u, 0, sizeof u);
    th_flag_init(&u.done);
    if (!CHECK_EQ_RESULT(gf_profiler_enable(dev, GF_PROFILE_ON), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &u.pool), GF_OK) && CHECK_EQ_RESULT(gf_stream_pool_acquire(u.pool, NULL, &ps), GF_OK)) {
        CHECK_EQ_RESULT(gf_stream_add_callback(ps, nc_more_waits_from_callback, &u), GF_OK);
        if (CHECK(th_flag_wait(&u.done, 1, TH_WAIT_MS), "7: the callback returned (no report, trace or pool destroy inside it hung)")) {
            CHECK_EQ_RESULT(u.report, GF_ERROR_INVALID_STATE);
            CHECK_EQ_RESULT(u.trace, GF_ERROR_INVALID_STATE);
            CHECK(u.pool_kept, "7: gf_stream_pool_destroy from a callback of its stream is refused and keeps the pool");
        }
        gf_stream_pool_release(u.pool, ps);
        gf_stream_pool_destroy(u.pool);
    }
    if (CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "set", &u.set), GF_OK)) {
        CHECK_EQ_RESULT(gf_stream_add_callback(gf_stream_set_get(u.set, 1), nc_set_destroy_from_callback, &u), GF_OK);
        if (CHECK(th_flag_wait(&u.done, 2, TH_WAIT_MS), "7: the callback returned (the set's destroy inside it did not hang)"))
            CHECK(u.set_kept, "7: gf_stream_set_destroy from a callback of one of its streams is refused and keeps the set");
        gf_stream_set_destroy(u.set);
    }
    CHECK_EQ_RESULT(gf_profiler_enable(dev, 0), GF_OK);
    th_flag_destroy(&u.done);
}
/* Waits that wait for the callback through another stream (found by review: each hung): B
   waits for an event recorded on A after A's running callback, C waits for B's event; from
   the callback, waiting for B, B's event or C, or destroying B, is refused. Streams that wait
   for A's work before the callback, or not at all, are waited for as usual. */
typedef struct nc_behind {
    gf_stream *b, *c, *d, *e;
    gf_event *ev_b;
    gf_result sync_b, sync_b_timeout, event_b, sync_c, sync_d, sync_e;
    int b_kept;
    th_flag queued, done;
} nc_behind;
static void nc_waits_behind_from_callback(void *user, gf_result status)
{
    nc_behind *u = (nc_behind *)user;
    (void)status;
    th_flag_wait(&u->queued, 1, TH_WAIT_MS);
    u->sync_b = gf_stream_synchronize(u->b);
    u->sync_b_timeout = gf_stream_synchronize_timeout(u->b, 50);
    u->event_b = gf_event_synchronize(u->ev_b);
    u->sync_c = gf_stream_synchronize(u->c);
    u->sync_d = gf_stream_synchronize(u->d);
    u->sync_e = gf_stream_synchronize(u->e);
    th_prime();
    gf_stream_destroy(u->b);
    u->b_kept = gf_stream_label(u->b)[0] != 0 && contains(gf_last_error(), "after that callback");
    th_flag_add(&u->done, 1);
}
static void test_waits_behind_callbacks(void)
{
    nc_behind u;
    gf_stream *a = NULL;
    gf_event *before = NULL, *after = NULL;
    gf_buffer *buf = NULL;
    memset(&u, 0, sizeof u);
    th_flag_init(&u.queued);
    th_flag_init(&u.done);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &u.b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &u.c), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &u.d), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &u.e), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &before), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &after), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &u.ev_b), GF_OK);
    if (!CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &buf), GF_OK)) return;
    CHECK_EQ_RESULT(gf_event_record(before, a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(a, nc_waits_behind_from_callback, &u), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(after, a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(u.b, after), GF_OK);      /* B waits behind the callback */
    CHECK_EQ_RESULT(gf_fill_async(u.b, buf, 0, 1, 64), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(u.ev_b, u.b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(u.c, u.ev_b), GF_OK);     /* C through B */
    CHECK_EQ_RESULT(gf_fill_async(u.d, buf, 0, 2, 64), GF_OK);     /* D: its own work only */
    CHECK_EQ_RESULT(gf_stream_wait_event(u.e, before), GF_OK);     /* E: A's work before the callback */
    th_flag_add(&u.queued, 1);
    if (CHECK(th_flag_wait(&u.done, 1, TH_WAIT_MS), "the callback returned (no wait behind it hung)")) {
        CHECK_EQ_RESULT(u.sync_b, GF_ERROR_INVALID_STATE);
        CHECK_EQ_RESULT(u.sync_b_timeout, GF_ERROR_INVALID_STATE);
        CHECK_EQ_RESULT(u.event_b, GF_ERROR_INVALID_STATE);
        CHECK_EQ_RESULT(u.sync_c, GF_ERROR_INVALID_STATE);
        CHECK_EQ_RESULT(u.sync_d, GF_OK);
        CHECK_EQ_RESULT(u.sync_e, GF_OK);
        CHECK(u.b_kept, "destroying B from the callback is refused, saying why, and keeps it");
    }
    CHECK_EQ_RESULT(gf_stream_synchronize(a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(u.c), GF_OK);   /* outside the callback: fine */
    gf_stream_destroy(u.b); gf_stream_destroy(u.c); gf_stream_destroy(u.d); gf_stream_destroy(u.e); gf_stream_destroy(a);
    gf_event_destroy(before); gf_event_destroy(after); gf_event_destroy(u.ev_b);
    gf_buffer_destroy(buf);
    th_flag_destroy(&u.queued);
    th_flag_destroy(&u.done);
}
/* The check above, attacked (found by review): it waited for a stream's lock that another
   thread held while waiting for the callback (a recorded loop's launch reading its condition
   back), so a legal wait for a finished stream or event hung; and a stream set's frame wait
   from the callback, made under the set's lock, was never checked (it waited its time out). */
typedef struct nc_lock_held { gf_stream *c, *frame; gf_event *done_ev; gf_stream_set *set; gf_result sync_c, event, frames; th_flag go, done; } nc_lock_held;
static void nc_wait_while_locked(void *user, gf_result status)
{
    nc_lock_held *u = (nc_lock_held *)user;
    (void)status;
    th_flag_wait(&u->go, 1, TH_WAIT_MS);
    th_sleep_ms(100);                          /* the main thread is in gf_graph_launch, holding B */
    u->sync_c = gf_stream_synchronize(u->c);   /* C waits only for B's work before B waits behind us */
    u->event = gf_event_synchronize(u->done_ev);
    u->frames = gf_stream_set_wait_frames(u->set, 0, 3000);   /* its frame waits behind us */
    th_flag_add(&u->done, 1);
}
static void test_waits_behind_callbacks_locked(void)
{
    nc_lock_held u;
    gf_stream *a = NULL, *b = NULL;
    gf_buffer *cond = NULL, *buf = NULL;
    gf_event *after = NULL;
    gf_graph *g = NULL;
    double t0;
    memset(&u, 0, sizeof u);
    th_flag_init(&u.go);
    th_flag_init(&u.done);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &u.c), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &cond), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &buf), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &u.done_ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &after), GF_OK);
    if (!CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "frames", &u.set), GF_OK)) return;
    CHECK_EQ_RESULT(gf_fill_async(b, cond, 0, 0, 64), GF_OK);   /* the loop's condition: 0 */
    CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_capture(b, GF_CAPTURE_GLOBAL), GF_OK);
    CHECK_EQ_RESULT(gf_stream_begin_while(b, cond, 0), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(b, buf, 0, 1, 64), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_while(b), GF_OK);
    if (!CHECK_EQ_RESULT(gf_stream_end_capture(b, &g), GF_OK)) return;
    CHECK_EQ_RESULT(gf_fill_async(b, buf, 0, 2, 64), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(u.done_ev, b), GF_OK);      /* B's work before it waits behind the callback */
    CHECK_EQ_RESULT(gf_stream_wait_event(u.c, u.done_ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_next(u.set, 0, &u.frame), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(a, nc_wait_while_locked, &u), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(after, a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(b, after), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(u.frame, after), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_end_frame(u.set), GF_OK);
    th_flag_add(&u.go, 1);
    t0 = th_now_ms();
    CHECK_EQ_RESULT(gf_graph_launch(g, b), GF_OK);   /* holds B while it reads the condition back */
    if (CHECK(th_flag_wait(&u.done, 1, TH_WAIT_MS), "the callback returned (no wait in it hung on a busy stream's lock)")) {
        CHECK_EQ_RESULT(u.sync_c, GF_OK);
        CHECK_EQ_RESULT(u.event, GF_OK);
        CHECK_EQ_RESULT(u.frames, GF_ERROR_INVALID_STATE);
        CHECK(th_now_ms() - t0 < 2500, "the frame wait was refused at once, not after its time out");
    }
    CHECK_EQ_RESULT(gf_stream_synchronize(a), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(b), GF_OK);
    CHECK_EQ_RESULT(gf_stream_set_synchronize(u.set), GF_OK);
    gf_graph_destroy(g);
    gf_stream_set_destroy(u.set);
    gf_event_destroy(u.done_ev); gf_event_destroy(after);
    gf_buffer_destroy(cond); gf_buffer_destroy(buf);
    gf_stream_destroy(u.c); gf_stream_destroy(b); gf_stream_destroy(a);
    th_flag_destroy(&u.go);
    th_flag_destroy(&u.done);
}
static void test_waits_in_callbacks(void)
{
    nc_inside t;
    unsigned char x = 7, back = 0;
    memset(&t, 0, sizeof t);
    th_flag_init(&t.done);
    th_flag_init(&t.recorded);
    if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &t.s), GF_OK)) return;
    CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &t.b), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &t.before), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &t.after), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(t.before, t.s), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(t.s, nc_waits_from_callback, &t), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(t.after, t.s), GF_OK);
    th_flag_add(&t.recorded, 1);
    if (!CHECK(th_flag_wait(&t.done, 1, TH_WAIT_MS), "7: the callback returned (no wait inside it hung)")) return;
    CHECK_EQ_RESULT(t.stream_sync, GF_ERROR_INVALID_STATE);
    CHECK_EQ_RESULT(t.device_sync, GF_ERROR_INVALID_STATE);
    CHECK_EQ_RESULT(t.trim, GF_ERROR_INVALID_STATE);
    CHECK_EQ_RESULT(t.stream_sync_timeout, GF_ERROR_INVALID_STATE);   /* it could only time out */
    if (backend == GF_BACKEND_STUB || backend == GF_BACKEND_OPENCL) {   /* CUDA and HIP forbid driver calls in callbacks */
        CHECK_EQ_RESULT(t.event_before, GF_OK);                   /* done before the callback: no wait */
        CHECK_EQ_RESULT(t.event_after, GF_ERROR_INVALID_STATE);   /* recorded after it on its stream */
        CHECK_EQ_RESULT(t.event_after_timeout, GF_ERROR_INVALID_STATE);
    }
    CHECK(t.buffer_kept, "7: gf_buffer_destroy from a callback is refused, saying why, and keeps the buffer");
    CHECK(t.stream_kept, "7: gf_stream_destroy of the callback's own stream is refused and keeps it");
    CHECK_EQ_RESULT(gf_stream_synchronize(t.s), GF_OK);            /* outside the callback: fine */
    CHECK_EQ_RESULT(gf_copy_to_device(t.b, 3, &x, 1), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(&back, t.b, 3, 1), GF_OK);
    CHECK(back == 7, "7: the kept buffer still works");
    gf_event_destroy(t.before);
    gf_event_destroy(t.after);
    gf_buffer_destroy(t.b);
    gf_stream_destroy(t.s);
    th_flag_destroy(&t.done);
    test_more_waits_in_callbacks();
    test_named_waits_in_callbacks();
    if (backend == GF_BACKEND_STUB || backend == GF_BACKEND_OPENCL) {   /* CUDA, HIP: no calls there */
        test_waits_behind_callbacks();
        test_waits_behind_callbacks_locked();
    }
}
/* Found by review: (a) two allocations at once, short of memory while a destroyed buffer's free
   waited for its queued work, and one got GF_ERROR_OUT_OF_MEMORY: it found the list of pending
   frees empty while the other thread was still waiting to release them; (b) an allocation
   inside a host callback, short of memory, waited for a free queued behind that callback, for
   good; (c) gf_device_close from a completion callback freed the waiter thread it ran on. */
typedef struct nc_alloc_race { gf_device *d; gf_result r; size_t bytes; char said[256]; } nc_alloc_race;
static void *nc_alloc_half(void *p)
{
    nc_alloc_race *a = (nc_alloc_race *)p;
    gf_buffer *b = NULL;
    a->r = gf_buffer_create(a->d, a->bytes ? a->bytes : 512u << 10, &b);
    if (a->r != GF_OK) {   /* what it said, for the failure's report */
        const char *e = gf_last_error();
        size_t n = strlen(e) < sizeof a->said - 1 ? strlen(e) : sizeof a->said - 1;
        memcpy(a->said, e, n);
        a->said[n] = 0;
    }
    if (a->r == GF_OK) gf_buffer_destroy(b);
    return NULL;
}
typedef struct nc_cb_alloc { gf_device *d; th_flag destroyed, done; gf_result r; int said_limit; } nc_cb_alloc;
static void nc_alloc_in_callback(void *user, gf_result status)
{
    nc_cb_alloc *u = (nc_cb_alloc *)user;
    gf_buffer *b = NULL;
    (void)status;
    th_flag_wait(&u->destroyed, 1, TH_WAIT_MS);
    u->r = gf_buffer_create(u->d, 1u << 20, &b);   /* the free it needs is queued behind this callback */
    u->said_limit = contains(gf_last_error(), "memory limit");
    if (u->r == GF_OK) gf_buffer_destroy(b);
    th_flag_add(&u->done, 1);
}
typedef struct nc_close_in_waiter { gf_device *d; gf_result r; th_flag done; } nc_close_in_waiter;
static void nc_close_from_waiter(void *user, gf_result status)
{
    nc_close_in_waiter *u = (nc_close_in_waiter *)user;
    (void)status;
    th_prime();
    gf_device_close(u->d);   /* refused: the close would stop the thread this runs on */
    u->r = contains(gf_last_error(), "waiter thread") ? GF_ERROR_INVALID_STATE : GF_OK;
    th_flag_add(&u->done, 1);
}
static void test_memory_waits_and_closes(void)
{
    gf_device *d = NULL;
    gf_stream *s = NULL;
    gf_buffer *big = NULL;
    gf_event *ev = NULL;
    th_gate gate;
    pthread_t t[2];
    nc_alloc_race a[2];
    nc_cb_alloc u;
    nc_close_in_waiter w;
    int i;
    if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &d), GF_OK)) return;
    CHECK_EQ_RESULT(gf_stream_create(d, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_device_set_memory_limit(d, 2u << 20), GF_OK);
    /* (a) */
    th_gate_init(&gate);
    CHECK_EQ_RESULT(gf_buffer_create(d, 2u << 20, &big), GF_OK);
    CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, big, 0, 1, 2u << 20), GF_OK);
    gf_buffer_destroy(big);   /* its memory is pending until the fill behind the gate has run */
    for (i = 0; i < 2; i++) {
        a[i].d = d; a[i].r = GF_ERROR_INVALID_STATE; a[i].bytes = 0;
        pthread_create(&t[i], NULL, nc_alloc_half, &a[i]);
        th_sleep_ms(30);      /* the first has taken the pending frees when the second asks */
    }
    th_sleep_ms(30);
    th_gate_open(&gate);
    for (i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK_EQ_RESULT(a[0].r, GF_OK);
    CHECK_EQ_RESULT(a[1].r, GF_OK);   /* was GF_ERROR_OUT_OF_MEMORY */
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    th_gate_destroy(&gate);
    /* (a'): frees that became pending while the allocation waited are waited for too (was:
       the allocation waited for what was pending when it asked, then failed while a free
       destroyed meanwhile was still pending). Gates order it: p, then q, then r go. Not on
       CUDA or HIP: on the H100 the test's own enqueues were held until its gates timed out,
       as if the driver's free (cuMemFree) in the waiting thread waited for the gated work
       and held the driver's other calls meanwhile. */
    if (backend == GF_BACKEND_STUB || backend == GF_BACKEND_OPENCL) {
        gf_stream *s2 = NULL, *s3 = NULL;
        gf_buffer *p = NULL, *q = NULL, *r = NULL;
        th_gate g1, g2, g3;
        th_gate_init(&g1); th_gate_init(&g2); th_gate_init(&g3);
        CHECK_EQ_RESULT(gf_stream_create(d, NULL, &s2), GF_OK);
        CHECK_EQ_RESULT(gf_stream_create(d, NULL, &s3), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(d, 1u << 20, &p), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(d, 512u << 10, &q), GF_OK);
        CHECK_EQ_RESULT(gf_buffer_create(d, 512u << 10, &r), GF_OK);
        CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &g1), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(s, p, 0, 1, 1u << 20), GF_OK);
        gf_buffer_destroy(p);
        a[0].d = d; a[0].r = GF_ERROR_INVALID_STATE; a[0].bytes = 2u << 20;   /* all three must go */
        pthread_create(&t[0], NULL, nc_alloc_half, &a[0]);
        th_sleep_ms(30);
        CHECK_EQ_RESULT(gf_stream_add_callback(s2, th_gate_cb, &g2), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(s2, q, 0, 1, 512u << 10), GF_OK);
        gf_buffer_destroy(q);
        th_sleep_ms(30);
        th_gate_open(&g1);                         /* p goes; the allocation waits for q */
        th_sleep_ms(30);
        CHECK_EQ_RESULT(gf_stream_add_callback(s3, th_gate_cb, &g3), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(s3, r, 0, 1, 512u << 10), GF_OK);
        gf_buffer_destroy(r);                      /* pending while it waits for q */
        th_sleep_ms(30);
        th_gate_open(&g2);                         /* q goes: r is still pending */
        th_sleep_ms(30);
        th_gate_open(&g3);                         /* r goes: now it fits */
        pthread_join(t[0], NULL);
        if (!CHECK_EQ_RESULT(a[0].r, GF_OK)) {      /* was GF_ERROR_OUT_OF_MEMORY */
            gf_memory_stats ms;
            int k;
            printf("  the allocation said: %s\n", a[0].said);
            if (gf_device_memory_stats(d, &ms) == GF_OK)
                for (k = 0; k < GF_MEMORY_KIND_COUNT; k++) printf("  memory kind %d: %llu bytes\n", k, (unsigned long long)ms.kind[k].bytes);
        }
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        gf_stream_destroy(s2);
        gf_stream_destroy(s3);
        th_gate_destroy(&g1); th_gate_destroy(&g2); th_gate_destroy(&g3);
    }
    /* (b): CUDA and HIP forbid driver calls in callbacks */
    if (backend == GF_BACKEND_STUB || backend == GF_BACKEND_OPENCL) {
        memset(&u, 0, sizeof u);
        u.d = d;
        th_flag_init(&u.destroyed);
        th_flag_init(&u.done);
        CHECK_EQ_RESULT(gf_buffer_create(d, 2u << 20, &big), GF_OK);
        CHECK_EQ_RESULT(gf_stream_add_callback(s, nc_alloc_in_callback, &u), GF_OK);
        CHECK_EQ_RESULT(gf_fill_async(s, big, 0, 1, 2u << 20), GF_OK);
        gf_buffer_destroy(big);
        th_flag_add(&u.destroyed, 1);
        if (CHECK(th_flag_wait(&u.done, 1, TH_WAIT_MS), "an allocation in a callback, short of memory, returns")) {
            CHECK_EQ_RESULT(u.r, GF_ERROR_OUT_OF_MEMORY);
            CHECK(u.said_limit, "it says the limit was reached");
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
        }
        th_flag_destroy(&u.destroyed);
        th_flag_destroy(&u.done);
    }
    gf_stream_destroy(s);
    /* (c) */
    memset(&w, 0, sizeof w);
    w.d = d;
    th_flag_init(&w.done);
    CHECK_EQ_RESULT(gf_event_create(d, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(d, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(ev, nc_close_from_waiter, &w, NULL), GF_OK);
    if (CHECK(th_flag_wait(&w.done, 1, TH_WAIT_MS), "the completion callback returned"))
        CHECK_EQ_RESULT(w.r, GF_ERROR_INVALID_STATE);
    CHECK(gf_device_name(d)[0] != 0, "the device is still open");
    th_flag_destroy(&w.done);
    gf_event_destroy(ev);
    gf_stream_destroy(s);
    gf_device_close(d);
}
/* GPUFLOW_TRACE in a process with two copies of gpuflow (plugins each with its own): the
   second copy's close replaced the first's trace, silently (a review). A second copy is
   played here by forgetting this copy's trace run, as a fresh copy has none. And a file of an
   earlier process with this process's id (a container's pid 1) is still replaced. */
static int trace_processes_in(const char *path, int *whole)
{
    char buf[1 << 16];
    size_t n;
    int count = 0;
    const char *at = buf;
    FILE *f = fopen(path, "rb");
    *whole = 0;
    if (!f) return -1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    while ((at = strstr(at, "\"process_name\"")) != NULL) { count++; at++; }
    *whole = n > 4 && !strcmp(buf + n - 4, "\n]}\n") && !strncmp(buf, "{\"displayTimeUnit\"", 18);
    return count;
}
static void trace_one_device(void)
{
    gf_device *d = NULL;
    gf_buffer *b = NULL;
    unsigned char x[64] = { 1 };
    if (gf_device_open(GF_BACKEND_STUB, 0, &d) != GF_OK) return;
    if (gf_buffer_create(d, sizeof x, &b) == GF_OK) { gf_copy_to_device(b, 0, x, sizeof x); gf_buffer_destroy(b); }
    gf_device_close(d);
}
static void test_trace_two_copies(void)
{
    char path[64];
    FILE *f;
    int whole = 0, n;
    snprintf(path, sizeof path, "/tmp/gpuflow-nc-copies-%ld.json", (long)getpid());
    setenv("GPUFLOW_TRACE", path, 1);
    remove(path);
    trace_one_device();
    gf__trace_run.epoch_ns = 0;   /* "another copy": its own trace run, begun later */
    trace_one_device();
    n = trace_processes_in(path, &whole);
    CHECK(n == 2 && whole, "GPUFLOW_TRACE, two copies of gpuflow in one process: both devices in the one file, whole");
    if (n != 2 || !whole) printf("  %d processes in the trace, %s\n", n, whole ? "whole" : "not whole");
    /* an earlier process of this id left its trace: replaced, not added to */
    if ((f = fopen(path, "wb")) != NULL) {
        fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"gpuflow_run\":\"%lu-1-5\"},\"traceEvents\":[\n"
                   "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"old\"}}\n]}\n", (unsigned long)getpid());
        fclose(f);
    }
    gf__trace_run.epoch_ns = 0;
    trace_one_device();
    n = trace_processes_in(path, &whole);
    CHECK(n == 1 && whole, "GPUFLOW_TRACE: a file an earlier process of the same id wrote is replaced");
    unsetenv("GPUFLOW_TRACE");
    remove(path);
}
/* A device without stream priorities says so once, as the README says ("logged once"); it was
   said at every create (a review). On a device with priorities, never. */
static int priority_notes;
static void count_priority_notes(void *user, gf_log_level level, gf_result code, const char *message)
{
    (void)user; (void)level; (void)code;
    if (strstr(message, "has no stream priorities")) priority_notes++;
}
static void test_priority_note_once(void)
{
    gf_device *d = NULL;
    gf_device_info info;
    gf_stream_desc desc;
    gf_stream *s[3] = { NULL, NULL, NULL };
    int i;
    if (!CHECK_EQ_RESULT(gf_device_open(backend, 0, &d), GF_OK)) return;   /* a device of its own: nothing said on it yet */
    CHECK_EQ_RESULT(gf_device_get_info(d, &info), GF_OK);
    memset(&desc, 0, sizeof desc);
    priority_notes = 0;
    gf_set_logger(count_priority_notes, NULL);
    for (i = 0; i < 3; i++) {
        desc.priority = i == 1 ? GF_PRIORITY_LOW : GF_PRIORITY_HIGH;
        CHECK_EQ_RESULT(gf_stream_create(d, &desc, &s[i]), GF_OK);
    }
    gf_set_logger(th_said_logger, NULL);
    CHECK(priority_notes == (info.stream_priorities ? 0 : 1), "three streams of other priorities: \"no stream priorities\" said once per device (never where they take effect)");
    for (i = 0; i < 3; i++) gf_stream_destroy(s[i]);
    gf_device_close(d);
}
/* A priority pool of one stream made it HIGH, so all its work, NORMAL and LOW hints too, ran at
   high priority (a review); of two, HIGH and NORMAL, LOW hints on the NORMAL one. (The stream's
   priority is the implementation's: this file compiles it.) */
static void test_priority_pool_small(void)
{
    gf_stream_pool_desc pd;
    gf_stream_pool *pool = NULL;
    gf_acquire_hint hint;
    gf_stream *got = NULL;
    gf_priority wanted[3] = { GF_PRIORITY_HIGH, GF_PRIORITY_NORMAL, GF_PRIORITY_LOW };
    int count, i, bad = 0;
    memset(&pd, 0, sizeof pd);
    memset(&hint, 0, sizeof hint);
    pd.strategy = GF_POOL_PRIORITY;
    for (count = 1; count <= 3; count++) {
        pd.count = count;
        if (!CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &pool), GF_OK)) return;
        for (i = 0; i < 3; i++) {
            gf_priority expect = count == 1 ? GF_PRIORITY_NORMAL : count == 2 && wanted[i] == GF_PRIORITY_LOW ? GF_PRIORITY_NORMAL : wanted[i];
            hint.priority = wanted[i];
            if (gf_stream_pool_acquire(pool, &hint, &got) != GF_OK) { bad++; continue; }
            if (got->priority != expect) { printf("  pool of %d: a hint of priority %d got a stream of %d\n", count, (int)wanted[i], (int)got->priority); bad++; }
            gf_stream_pool_release(pool, got);
        }
        gf_stream_pool_destroy(pool);
    }
    CHECK(bad == 0, "priority pools of 1, 2 and 3 streams: no hint runs above its priority (one stream: NORMAL)");
}
/* With stderr closed, the next open() gives 2, and the stderr logger then wrote into that file
   (a review: log lines inside a GPUFLOW_RECORD recording, which replayed cut short). Every
   descriptor gpuflow keeps is above 2: a recording's, a stub buffer's or semaphore's memory,
   an export's. */
static int fd2_closed(void) { return fcntl(2, F_GETFD) == -1 && errno == EBADF; }
static void test_low_fds(void)
{
    char path[64];
    gf_record_desc rd;
    gf_buffer_desc bd;
    gf_buffer *buf = NULL;
    gf_semaphore *sem = NULL;
    gf_external_handle h;
    int saved = dup(2), kept_record = 0, kept_memory = 0, kept_semaphore = 0, export_fd = -1;
    if (!CHECK(saved > 2, "low fds: stderr set aside")) return;
    fflush(stderr);
    snprintf(path, sizeof path, "/tmp/gpuflow-nc-lowfd-%ld.bin", (long)getpid());
    memset(&rd, 0, sizeof rd);
    rd.path = path;
    memset(&bd, 0, sizeof bd);
    bd.size = 4096;
    bd.exportable = 1;
    close(2);
    if (gf_record_start(&rd) == GF_OK) { kept_record = fd2_closed(); gf_record_stop(); }
    if (gf_buffer_create_desc(dev, &bd, &buf) == GF_OK) {
        kept_memory = fd2_closed();
        if (gf_buffer_export(buf, GF_EXTERNAL_HOST_FD, &h) == GF_OK) { export_fd = h.fd; close(h.fd); }
    }
    if (gf_semaphore_create(dev, 0, &sem) == GF_OK) kept_semaphore = fd2_closed();
    dup2(saved, 2);
    close(saved);
    remove(path);
    CHECK(kept_record, "low fds: a recording's file is not opened as fd 2 when stderr is closed");
    CHECK(kept_memory, "low fds: a stub buffer's shared memory is not fd 2 when stderr is closed");
    CHECK(export_fd > 2, "low fds: an export's fd is above 2");
    CHECK(kept_semaphore, "low fds: a stub semaphore's shared memory is not fd 2 when stderr is closed");
    gf_buffer_destroy(buf);
    gf_semaphore_destroy(sem);
}
static void test_fork(void)
{
    gf_stream *s = NULL;
    gf_buffer *b = NULL;
    unsigned char x = 1;
    pid_t child;
    int status = 0, waited = 0;
    if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK)) return;
    CHECK_EQ_RESULT(gf_buffer_create(dev, 16, &b), GF_OK);
    fflush(stdout);
    child = fork();
    if (child == 0) {   /* the child: every call on the parent's device is refused, none hangs */
        int bad = 0;
        alarm(20);
        gf_set_logger(NULL, NULL);
        bad |= gf_copy_to_device_async(s, b, 0, &x, 1) != GF_ERROR_INVALID_STATE;
        bad |= (!contains(gf_last_error(), "fork()")) << 1;
        bad |= (gf_stream_synchronize(s) != GF_ERROR_INVALID_STATE) << 2;
        bad |= (gf_device_synchronize(dev) != GF_ERROR_INVALID_STATE) << 3;
        bad |= (gf_copy_to_device(b, 0, &x, 1) != GF_ERROR_INVALID_STATE) << 4;
        _exit(bad);
    }
    if (!CHECK(child > 0, "7: fork")) return;
    while (waited++ < 400 && waitpid(child, &status, WNOHANG) == 0) th_sleep_ms(50);
    if (waited > 400) { kill(child, SIGKILL); waitpid(child, &status, 0); }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "7: in a child of fork(), enqueues and waits on the parent's device are refused (no hang), naming fork()");
    if (WIFEXITED(status) && WEXITSTATUS(status)) printf("  child's failed checks (bits): 0x%x\n", WEXITSTATUS(status));
    CHECK_EQ_RESULT(gf_copy_to_device(b, 0, &x, 1), GF_OK);        /* the parent is unaffected */
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

/* exit and teardown review: a fork while another thread was inside the logger left the child's
   gf_set_logger waiting for that call for ever; a fresh device of the parent's vendor driver in
   the child hung at its first synchronize (PoCL). The child now gets the log's state free, its
   stub device works, and the parent's driver is refused with NOT_SUPPORTED, naming fork(). */
static volatile int in_slow_logger;
static void slow_logger(void *user, gf_log_level level, gf_result code, const char *text)
{
    (void)user; (void)level; (void)code; (void)text;
    __atomic_store_n(&in_slow_logger, 1, __ATOMIC_RELEASE);
    th_sleep_ms(300);
    __atomic_store_n(&in_slow_logger, 0, __ATOMIC_RELEASE);
}
static void *fail_once(void *arg) { (void)arg; (void)gf_stream_synchronize(NULL); return NULL; }
static void test_fork_child_fresh(void)
{
    pthread_t t;
    pid_t child;
    int status = 0, waited = 0, i;
    gf_set_logger(slow_logger, NULL);
    pthread_create(&t, NULL, fail_once, NULL);
    for (i = 0; i < 2000 && !__atomic_load_n(&in_slow_logger, __ATOMIC_ACQUIRE); i++) th_sleep_ms(1);
    fflush(stdout);
    child = fork();
    if (child == 0) {
        int bad = 0;
        gf_device *fresh = NULL, *again = NULL;
        gf_stream *s = NULL;
        gf_buffer *b = NULL;
        alarm(20);
        gf_set_logger(NULL, NULL);   /* the parent's thread inside the logger is not the child's */
        bad |= gf_device_open(GF_BACKEND_STUB, 0, &fresh) != GF_OK;
        if (fresh) {
            bad |= (gf_stream_create(fresh, NULL, &s) != GF_OK || gf_buffer_create(fresh, 64, &b) != GF_OK ||
                    gf_fill_async(s, b, 0, 7, 64) != GF_OK || gf_stream_synchronize(s) != GF_OK) << 1;
            gf_buffer_destroy(b); gf_stream_destroy(s); gf_device_close(fresh);
        }
        if (gf_device_backend(dev) != GF_BACKEND_STUB) {   /* the parent loaded this driver */
            bad |= (gf_device_open(gf_device_backend(dev), 0, &again) != GF_ERROR_NOT_SUPPORTED) << 2;
            bad |= (!contains(gf_last_error(), "fork")) << 3;
            bad |= (again != NULL) << 4;
        }
        _exit(bad);
    }
    pthread_join(t, NULL);
    gf_set_logger(th_said_logger, NULL);
    if (!CHECK(child > 0, "fork")) return;
    while (waited++ < 400 && waitpid(child, &status, WNOHANG) == 0) th_sleep_ms(50);
    if (waited > 400) { kill(child, SIGKILL); waitpid(child, &status, 0); }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "a fork's child: gf_set_logger returns though a parent's thread was in the logger, a fresh stub device runs work, "
          "and the parent's vendor driver is refused naming fork() (no hang)");
    if (WIFEXITED(status) && WEXITSTATUS(status)) printf("  child's failed checks (bits): 0x%x\n", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) printf("  child ended by signal %d\n", WTERMSIG(status));
}

/* 8: each value opens a stub device under the variable; the log says what was understood. */
static void test_environment(void)
{
    static const struct { const char *name, *value, *expect; } cases[] = {
        { "GPUFLOW_RACE_CHECK", "yes", "race detector is on" }, { "GPUFLOW_RACE_CHECK", "ON", "race detector is on" },
        { "GPUFLOW_RACE_CHECK", "true", "race detector is on" }, { "GPUFLOW_RACE_CHECK", "1", "race detector is on" },
        { "GPUFLOW_RACE_CHECK", "2147483648", "GPUFLOW_RACE_CHECK=2147483648 is not understood" },
        { "GPUFLOW_RACE_CHECK", "\x11", "GPUFLOW_RACE_CHECK=\x11 is not understood" },   /* was read as \"1\": case folded on every byte (a fuzzer) */
        { "GPUFLOW_RACE_CHECK", "99999999999", "GPUFLOW_RACE_CHECK=99999999999 is not understood" },
        { "GPUFLOW_RACE_CHECK", "maybe", "GPUFLOW_RACE_CHECK=maybe is not understood" },
        { "GPUFLOW_HANG_MS", "1000", "GPUFLOW_HANG_MS=1000:" },
        { "GPUFLOW_HANG_MS", "1e3", "GPUFLOW_HANG_MS=1e3 is not understood" },
        { "GPUFLOW_HANG_MS", "abc", "GPUFLOW_HANG_MS=abc is not understood" },
        { "GPUFLOW_HANG_MS", "-5", "GPUFLOW_HANG_MS=-5 is not understood" },
        { "GPUFLOW_HANG_MS", "99999999999", "GPUFLOW_HANG_MS=99999999999 is not understood" },
    };
    int i;
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        gf_device *d = NULL;
        char what[200];
        setenv(cases[i].name, cases[i].value, 1);
        log_clear();
        CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &d), GF_OK);
        snprintf(what, sizeof what, "8: %s=%s: the log says \"%s\"", cases[i].name, cases[i].value, cases[i].expect);
        CHECK(log_has(cases[i].expect), what);
        if (d && !strcmp(cases[i].value, "yes")) {   /* and the detector is really on: a race is found */
            gf_stream *a = NULL, *b = NULL;
            gf_buffer *buf = NULL;
            gf_race_info info;
            static unsigned char in[256], out[256];
            th_gate gate;   /* holds a's write until b's read is done: unordered for gpuflow, not a real race */
            th_gate_init(&gate);
            gf_stream_create(d, NULL, &a);
            gf_stream_create(d, NULL, &b);
            gf_buffer_create(d, sizeof in, &buf);
            gf_stream_add_callback(a, th_gate_cb, &gate);
            gf_copy_to_device_async(a, buf, 0, in, sizeof in);
            gf_copy_to_host_async(b, out, buf, 0, sizeof out);
            gf_stream_synchronize(b);
            th_gate_open(&gate);
            gf_stream_synchronize(a);
            th_gate_destroy(&gate);
            CHECK(gf_race_report(d, &info) == GF_OK && info.count >= 1, "8: GPUFLOW_RACE_CHECK=yes turns the detector on");
            gf_buffer_destroy(buf);
            gf_stream_destroy(a);
            gf_stream_destroy(b);
        }
        if (d) gf_device_close(d);
        unsetenv(cases[i].name);
    }
}

/* 9 and 11 */
static void test_close_names_the_living(void)
{
    gf_device *d = NULL;
    gf_stream *s = NULL, *first = NULL;
    gf_stream_desc sd;
    gf_buffer *b = NULL;
    gf_event *ev = NULL;
    gf_module *mod = NULL;
    if (!CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &d), GF_OK)) return;
    CHECK_EQ_RESULT(gf_stream_create(d, NULL, &first), GF_OK);
    CHECK(!strcmp(gf_stream_label(first), "stream 1"), "11: the first stream the program makes is 'stream 1'");
    gf_stream_destroy(first);
    log_clear();
    gf_device_close(d);
    CHECK(!log_has("objects still alive"), "9: a device closed clean says nothing of the kind");

    CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &d), GF_OK);
    memset(&sd, 0, sizeof sd);
    sd.label = "decode";
    CHECK_EQ_RESULT(gf_stream_create(d, &sd, &s), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(d, 4096, &b), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(d, 0, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_module_load(d, &tk_module, &mod), GF_OK);
    log_clear();
    gf_device_close(d);   /* deliberately: what is left leaks, and the log must name it */
    CHECK(log_has("objects still alive"), "9: closing with objects alive is not silent");
    CHECK(log_has("1 stream ('decode')"), "9: the streams by label");
    CHECK(log_has("1 buffer (4096 bytes)"), "9: the buffers, with bytes");
    CHECK(log_has("1 event") && log_has("1 module"), "9: events and modules, counted");
}

/* 10: the compiler's error lands on the line of the kernel in the user's file. */
static void test_build_error_lines(void)
{
    gf_module *mod = NULL;
    gf_module_desc desc = source_desc(nc_error_source, "newcomer_error.inc", nc_error_stub, 2, NULL);
    gf_result r;
    char mapped[200];
    /* a compiler that ignores #line (NVIDIA's OpenCL: "<kernel>:38:80") is read through them */
    gf__build_log_lines("prelude\n#line 1 \"k.gfk\"\nGF_KERNELS( \n#line 9 \"k.gfk\"\nGF_KERNEL(b) {}\n",
                        "<kernel>:5:80: error: x\n<kernel>:77:1: y", mapped, sizeof mapped);
    CHECK(!strcmp(mapped, "k.gfk:9:80: error: x\n<kernel>:77:1: y"), "10: \"<kernel>:L\" lines are mapped through the text's #line directives");
    if (backend == GF_BACKEND_STUB) { SKIP("10: the stub's kernels are compiled with the program"); return; }
    r = gf_module_load(dev, &desc, &mod);
    if (r == GF_ERROR_NOT_SUPPORTED) { SKIP("10: no kernel compiler for this backend here"); return; }
    if (!CHECK_EQ_RESULT(r, GF_ERROR_BUILD)) { if (r == GF_OK) gf_module_destroy(mod); return; }
    CHECK(contains(gf_last_error(), "newcomer_error.inc:9") || contains(gf_last_error(), "newcomer_error.inc(9)"),
          "10: the error is reported on line 9, where GF_KERNEL(nc_broken, ...) stands");
    CHECK(!contains(gf_last_error(), "newcomer_error.inc:1:"), "10: not on line 1 of a one-line text");
    /* without the C form's table the kernel is still named */
    desc.stub_kernels = NULL; desc.stub_kernel_count = 0;
    CHECK_FAIL(gf_module_load(dev, &desc, &mod), GF_ERROR_BUILD);
    CHECK(contains(gf_last_error(), "kernel nc_broken"), "10: without line numbers, the kernel is named");
}

/* 12: the messages a newcomer meets first, each one line that says what to do next. The list
   (printed as it runs): a device index past the count; a backend whose driver is absent (here:
   whichever vendor backend is compiled in but cannot load); a stub module without its C
   kernels; a kernel name not found; an argument count, kind and size that are not the
   kernel's; a block past the device's limit; a capture ended that was never begun; a wait
   inside a capture. Each: its code, no newline, and the words of its next step. */
static void first_message(const char *what, gf_result got, gf_result want, const char *next_step)
{
    const char *m = gf_last_error();
    int ok = got == want && m && !strchr(m, '\n') && contains(m, next_step);
    printf("  %-34s %s\n", what, m ? m : "(none)");
    CHECK(ok, "12: a first message: its code, one line, and what to do next");
    if (!ok) printf("    wanted %s with \"%s\"; got %s\n", gf_result_name(want), next_step, gf_result_name(got));
}
static void test_first_messages(gf_device *d)
{
    static const struct { gf_backend b; const char *next; } drivers[] = {
        { GF_BACKEND_CUDA, "NVIDIA's driver installs it" }, { GF_BACKEND_HIP, "ROCm's HIP runtime installs it" },
        { GF_BACKEND_OPENCL, "install one and a driver" } };
    gf_device *other = NULL;
    gf_module *mod = NULL, *none = NULL;
    gf_kernel *k = NULL;
    gf_graph *g = NULL;
    gf_stream *s = NULL;
    gf_buffer *b = NULL;
    gf_module_desc md;
    unsigned n = 16;
    float a = 2.0f;
    double wide = 1.0;
    int i, absent = 0;
    first_message("a device index past the count", gf_device_open(GF_BACKEND_STUB, gf_device_count(GF_BACKEND_STUB) + 3, &other),
                  GF_ERROR_NO_DEVICE, "gf_device_count says how many");
    for (i = 0; i < 3; i++) {   /* compiled in, and its driver cannot load here */
        gf_result r = gf_device_open(drivers[i].b, 0, &other);
        if (r == GF_OK) { gf_device_close(other); other = NULL; continue; }
        if (strstr(gf_last_error(), "not compiled in") || strstr(gf_last_error(), "cannot load") == NULL) continue;
        first_message("a driver that is not installed", r, GF_ERROR_BACKEND_UNAVAILABLE, drivers[i].next);
        absent++;
    }
    if (!absent) SKIP("12: every compiled-in backend's driver loads here (no missing-driver message to read)");
    if (gf_device_backend(d) != GF_BACKEND_STUB) return;   /* the rest reads the stub's own messages */
    md = source_desc(nc_source, "newcomer.gfk", NULL, 0, NULL);
    first_message("a stub module without its C kernels", gf_module_load(d, &md, &none), GF_ERROR_NOT_SUPPORTED, "GF_KERNELS_AS_C");
    md = source_desc(nc_source, "newcomer.gfk", nc_stub, 1, NULL);
    if (!CHECK_EQ_RESULT(gf_module_load(d, &md, &mod), GF_OK)) return;
    first_message("a kernel name not found", gf_kernel_get(mod, "nc_sacle", &k), GF_ERROR_NOT_FOUND, "its stub kernels are nc_scale");
    if (CHECK_EQ_RESULT(gf_kernel_get(mod, "nc_scale", &k), GF_OK) && CHECK_EQ_RESULT(gf_stream_create(d, NULL, &s), GF_OK) &&
        CHECK_EQ_RESULT(gf_buffer_create(d, 64, &b), GF_OK)) {
        gf_arg right[3] = { GF_ARG_BUFFER(b), GF_ARG(n), GF_ARG(a) };
        gf_arg kind[3] = { GF_ARG(n), GF_ARG(n), GF_ARG(a) };
        gf_arg size[3] = { GF_ARG_BUFFER(b), GF_ARG(wide), GF_ARG(a) };
        first_message("an argument count", gf_launch(s, k, dims_1d(1, 16), right, 2), GF_ERROR_INVALID_ARGUMENT, "takes 3 arguments: y, n, a;");
        first_message("an argument of the wrong kind", gf_launch(s, k, dims_1d(1, 16), kind, 3), GF_ERROR_INVALID_ARGUMENT, "takes a buffer (GF_ARG_BUFFER)");
        first_message("an argument of the wrong size", gf_launch(s, k, dims_1d(1, 16), size, 3), GF_ERROR_INVALID_ARGUMENT,
                      "pass a variable of the parameter's type");
        first_message("a block past the device's limit", gf_launch(s, k, dims_1d(1, 1u << 20), right, 3), GF_ERROR_INVALID_ARGUMENT,
                      "use smaller blocks and more of them");
        first_message("a capture ended that never began", gf_stream_end_capture(s, &g), GF_ERROR_CAPTURE, "gf_stream_begin_capture starts");
        CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
        first_message("a wait inside a capture", gf_stream_synchronize(s), GF_ERROR_CAPTURE, "wait after gf_stream_end_capture");
    }
    if (b) gf_buffer_destroy(b);
    if (s) gf_stream_destroy(s);
    if (mod) gf_module_destroy(mod);
}

int main(int argc, char **argv)
{
    gf_allocator counting;
    gf_stream *s = NULL;
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!(backend_name = th_backend_arg(argc, argv, &backend))) return 2;
    counting.alloc = nc_alloc; counting.realloc = nc_realloc; counting.free = nc_free; counting.user = NULL;
    gf_set_allocator(&counting);
    gf_set_logger(th_said_logger, NULL);
    unsetenv("GPUFLOW_RACE_CHECK");
    unsetenv("GPUFLOW_HANG_MS");
    test_not_compiled_in();
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: newcomer %s skipped: %s\n", backend_name, gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return th_finish();
    printf("newcomer on %s: %s\n", backend_name, gf_device_name(dev));
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    test_launch_checks(s);
    gf_stream_destroy(s);
    test_cache();
    test_waits_in_callbacks();
    test_memory_waits_and_closes();
    test_fork();
    test_fork_child_fresh();
    test_build_error_lines();
    test_priority_note_once();
    test_priority_pool_small();
    printf("the first messages a newcomer meets:\n");
    test_first_messages(dev);
    if (backend == GF_BACKEND_STUB) {
        test_environment();
        test_low_fds();
#if defined(__linux__)
        test_trace_two_copies();
#endif
        test_close_names_the_living();
    }
    gf_device_close(dev);
    return th_finish();
}
