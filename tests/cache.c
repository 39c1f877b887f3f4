/* The kernel cache on disk, attacked (issue "Reliability of the new surface"): whatever is on
   disk, a load gives the right kernel or a clear error, never a wrong one, and never hangs.

     entries   truncated, zero-length, a flipped byte, another module's entry under this name,
               this entry with one byte of its identity changed (checksum fixed): each ignored
               with a warning that says why, rebuilt, and the next load a cache hit
     options   the same source with other build options: another entry, another result
     files     an entry replaced by a symlink (its target left alone) or by a FIFO (no hang):
               refused and replaced by a regular file; entries are 0600, no temporary is left
     dirs      missing (made 0700, by desc and by GPUFLOW_CACHE_DIR, nested levels too), a file,
               writable by others, unwritable by us: the load works, the cache is skipped or
               read-only, with a warning
     threads   4 threads compiling the same module at once into an empty cache

   Every load's kernel is launched and its result checked, so a wrong binary cannot pass.
   usage: cache stub|opencl|cuda|hip (the stub compiles no source: it skips) */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include <stdlib.h>
#include <unistd.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

/* y[i] = y[i] * 2 + OFFSET: OFFSET comes from the build options, so an entry built with other
   options gives another answer. */
static const char cache_source[] =
    "#ifndef OFFSET\n#define OFFSET 1.0f\n#endif\n"
    "GF_KERNEL(cache_affine, GF_GLOBAL float *y, unsigned n)\n"
    "{\n    unsigned i = gf_global_id(0);\n    if (i < n) y[i] = y[i] * 2.0f + OFFSET;\n}\n";
static const char other_source[] =
    "GF_KERNEL(cache_other, GF_GLOBAL float *y, unsigned n)\n"
    "{\n    unsigned i = gf_global_id(0);\n    if (i < n) y[i] = -y[i];\n}\n";

/* the same kernel on one line, as a stringified GF_KERNELS gives it (then each kernel gets a #line) */
static const char one_line_source[] =
    "GF_KERNEL(cache_affine, GF_GLOBAL float *y, unsigned n) { unsigned i = gf_global_id(0); if (i < n) y[i] = y[i] * 2.0f + 1.0f; }";
static const char *source_name;   /* NULL: "cache.gfk" (or "other.gfk") */

static gf_device *dev;
static gf_backend backend;
static const char *backend_name;
static int as_root;

/* ---- the log (tests/harness.h keeps what the library said) ---- */
#define log_clear th_said_clear
#define log_count th_said_count
#define log_has(words) (th_said_count(words) > 0)

/* ---- loads, each checked by running its kernel ---- */
/* Loads (source, options) from dir and runs the kernel on {1, 2, 3, 4}: 1 when every element
   is x * 2 + offset (or -x for the other module). */
static int load_and_run(const char *dir, const char *source, const char *options, float offset)
{
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_buffer *y = NULL;
    gf_stream *s = NULL;
    gf_launch_dims dims;
    gf_arg args[2];
    unsigned n = 4, i;
    float in[4] = { 1, 2, 3, 4 }, out[4] = { 0, 0, 0, 0 };
    int other = source == other_source, ok;
    memset(&d, 0, sizeof d);
    d.source = source;
    d.source_name = source_name ? source_name : other ? "other.gfk" : "cache.gfk";
    d.build_options = options;
    d.cache_dir = dir;
    memset(&dims, 0, sizeof dims);
    dims.grid[0] = dims.grid[1] = dims.grid[2] = 1;
    dims.block[0] = 4; dims.block[1] = dims.block[2] = 1;
    args[0].value = NULL; args[0].size = 0; args[0].buffer = NULL;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = NULL;
    ok = gf_module_load(dev, &d, &mod) == GF_OK && gf_kernel_get(mod, other ? "cache_other" : "cache_affine", &k) == GF_OK &&
         gf_buffer_create(dev, sizeof in, &y) == GF_OK && gf_copy_to_device(y, 0, in, sizeof in) == GF_OK;
    args[0].buffer = y;
    ok = ok && gf_stream_create(dev, NULL, &s) == GF_OK && gf_launch(s, k, dims, args, 2) == GF_OK && gf_stream_synchronize(s) == GF_OK &&
         gf_copy_to_host(out, y, 0, sizeof out) == GF_OK;
    for (i = 0; ok && i < 4; i++) ok = out[i] == (other ? -in[i] : in[i] * 2.0f + offset);
    if (!ok) printf("  load_and_run(%s, %s): %s; out = %g %g %g %g\n", dir ? dir : "(no cache)", options ? options : "-",
                    gf_last_error(), out[0], out[1], out[2], out[3]);
    if (s) gf_stream_destroy(s);
    if (y) gf_buffer_destroy(y);
    if (mod) gf_module_destroy(mod);
    return ok;
}

/* ---- the directory's files ---- */
static int count_files(const char *dir, const char *suffix, char *first, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), s = strlen(suffix);
        if (e->d_name[0] == '.' || len < s || strcmp(e->d_name + len - s, suffix)) continue;
        if (n++ == 0 && first) snprintf(first, cap, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return n;
}
static void remove_tree(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    if (system(cmd) != 0) printf("  note: could not remove %s\n", dir);
}
static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}
static unsigned char *read_file(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *p = NULL;
    *size = file_size(path);
    if (f && *size > 0 && (p = (unsigned char *)malloc((size_t)*size)) != NULL && fread(p, 1, (size_t)*size, f) != (size_t)*size) {
        free(p);
        p = NULL;
    }
    if (f) fclose(f);
    return p;
}
static int write_file(const char *path, const void *data, long size)
{
    FILE *f = fopen(path, "wb");
    int ok = f && (size == 0 || fwrite(data, 1, (size_t)size, f) == (size_t)size);
    return f ? (fclose(f) == 0 && ok) : 0;
}
static uint64_t fnv_more(uint64_t h, const unsigned char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
    return h;
}
static uint64_t fnv(const unsigned char *p, size_t n) { return fnv_more(1469598103934665603u, p, n); }

/* ---- entries ---- */
typedef enum { DAMAGE_TRUNCATE, DAMAGE_EMPTY, DAMAGE_FLIP, DAMAGE_FOREIGN, DAMAGE_IDENTITY, DAMAGE_SIZE } damage;
static const char *const damage_names[] = { "truncated", "zero-length", "a flipped byte in the binary",
                                            "another module's entry under this name", "one byte of its identity changed (checksum fixed)",
                                            "a forged size (2^64-1, the file one byte short of its identity; a review's fuzzer: it read past its buffer)" };
static const char *const damage_words[] = { "is truncated", "is truncated", "is corrupt", "made for other source", "made for other source", "is truncated" };

static void test_entries(const char *dir)
{
    char entry[1024], other[1024], other_dir[1100];
    int i;
    log_clear();
    CHECK(load_and_run(dir, cache_source, NULL, 1.0f), "cold load: the kernel is right");
    CHECK(count_files(dir, ".bin", entry, sizeof entry) == 1, "cold load: one entry");
    {
        struct stat st;
        CHECK(stat(entry, &st) == 0 && (st.st_mode & 0777) == 0600, "an entry is 0600");
    }
    CHECK(load_and_run(dir, cache_source, NULL, 1.0f) && log_count("from the kernel cache") == 1, "warm load: a cache hit, the kernel is right");
    snprintf(other_dir, sizeof other_dir, "%s-other", dir);
    CHECK(mkdir(other_dir, 0700) == 0 && load_and_run(other_dir, other_source, NULL, 0) &&
          count_files(other_dir, ".bin", other, sizeof other) == 1, "another module's entry, in a directory of its own");
    for (i = 0; i <= DAMAGE_SIZE; i++) {
        long size, other_size;
        unsigned char *data = read_file(entry, &size), *foreign = read_file(other, &other_size);
        char what[160];
        int damaged = data && foreign && size > 64;
        if (damaged) {
            switch ((damage)i) {
            case DAMAGE_TRUNCATE: damaged = write_file(entry, data, size / 2); break;
            case DAMAGE_EMPTY:    damaged = write_file(entry, data, 0); break;
            case DAMAGE_FLIP:     data[size - 3] ^= 0x40; damaged = write_file(entry, data, size); break;
            case DAMAGE_FOREIGN:  damaged = write_file(entry, foreign, other_size); break;
            case DAMAGE_IDENTITY: {   /* the header's key and checksum stay right for the changed bytes */
                uint32_t identity;
                uint64_t sum;
                memcpy(&identity, data + 28, 4);
                data[48 + identity / 2] ^= 0x01;
                sum = fnv_more(fnv(data + 48, (size_t)size - 48), data + 24, 4);   /* identity, binary, kind */
                memcpy(data + 40, &sum, 8);
                damaged = write_file(entry, data, size);
                break;
            }
            case DAMAGE_SIZE: {   /* size + identity wraps to the bytes the file holds */
                uint32_t identity;
                uint64_t forged = UINT64_MAX, sum;
                memcpy(&identity, data + 28, 4);
                memcpy(data + 32, &forged, 8);
                sum = fnv_more(fnv(data + 48, (size_t)identity - 1), data + 24, 4);
                memcpy(data + 40, &sum, 8);
                damaged = identity > 1 && 48 + (long)identity - 1 <= size && write_file(entry, data, 48 + (long)identity - 1);
                break;
            }
            }
        }
        free(data);
        free(foreign);
        snprintf(what, sizeof what, "entry %s: damaged", damage_names[i]);
        if (!CHECK(damaged, what)) continue;
        log_clear();
        snprintf(what, sizeof what, "entry %s: ignored, the kernel is right", damage_names[i]);
        CHECK(load_and_run(dir, cache_source, NULL, 1.0f), what);
        snprintf(what, sizeof what, "entry %s: a warning says it '%s'", damage_names[i], damage_words[i]);
        CHECK(log_count(damage_words[i]) == 1 && log_count("W gf_module_load: kernel cache entry") == 1 &&
              log_count("from the kernel cache") == 0, what);
        log_clear();
        snprintf(what, sizeof what, "entry %s: rebuilt, the next load is a hit", damage_names[i]);
        CHECK(load_and_run(dir, cache_source, NULL, 1.0f) && log_count("from the kernel cache") == 1 && log_count("W ") == 0, what);
    }
    remove_tree(other_dir);

    /* other options: another entry and another answer, the first entry still a hit */
    log_clear();
    CHECK(load_and_run(dir, cache_source, "-DOFFSET=5.0f", 5.0f) && log_count("from the kernel cache") == 0 &&
          count_files(dir, ".bin", NULL, 0) == 2, "other build options: another entry, another result");
    CHECK(load_and_run(dir, cache_source, "-DOFFSET=5.0f", 5.0f) && load_and_run(dir, cache_source, NULL, 1.0f) &&
          log_count("from the kernel cache") == 2, "each options' entry is a hit, with its own result");
    CHECK(count_files(dir, ".tmp", NULL, 0) == 0, "no temporary file is left behind");
}

/* ---- files that are not entries: a symlink, a FIFO ---- */
static void test_special_files(const char *dir)
{
    char entry[1400], target[1100];
    long size;
    unsigned char *before;
    struct stat st;
    log_clear();
    CHECK(load_and_run(dir, cache_source, "-DOFFSET=7.0f", 7.0f), "symlink: the entry made");
    CHECK(count_files(dir, ".bin", entry, sizeof entry) == 1, "symlink: one entry in its own directory");
    log_clear();
    CHECK(load_and_run(dir, cache_source, "-DOFFSET=7.0f", 7.0f) && log_count("from the kernel cache") == 1, "symlink: the entry found");
    /* the symlink points at a copy of the real entry: a valid entry reached through a link is
       still refused (an attacker's link could point anywhere) */
    snprintf(target, sizeof target, "%s.target", dir);
    before = read_file(entry, &size);
    CHECK(before && write_file(target, before, size) && remove(entry) == 0 && symlink(target, entry) == 0, "symlink: planted");
    log_clear();
    CHECK(load_and_run(dir, cache_source, "-DOFFSET=7.0f", 7.0f), "symlink: the kernel is right");
    CHECK(log_count("a symbolic link") == 1 && log_count("from the kernel cache") == 0, "symlink: refused with a warning");
    CHECK(lstat(entry, &st) == 0 && S_ISREG(st.st_mode), "symlink: replaced by a regular file");
    {
        long now;
        unsigned char *after = read_file(target, &now);
        CHECK(after && now == size && !memcmp(after, before, (size_t)size), "symlink: its target was left alone");
        free(after);
    }
    free(before);
    remove(target);

    CHECK(remove(entry) == 0 && mkfifo(entry, 0600) == 0, "FIFO: planted under the entry's name");
    log_clear();
    CHECK(load_and_run(dir, cache_source, "-DOFFSET=7.0f", 7.0f), "FIFO: no hang, the kernel is right");
    CHECK(log_count("not a regular file") == 1, "FIFO: refused with a warning");
    CHECK(lstat(entry, &st) == 0 && S_ISREG(st.st_mode), "FIFO: replaced by a regular file");
    log_clear();
    CHECK(load_and_run(dir, cache_source, "-DOFFSET=7.0f", 7.0f) && log_count("from the kernel cache") == 1, "FIFO: the next load is a hit");
}

/* ---- directories ---- */
static void test_directories(const char *base)
{
    char dir[1024], nested[1100], file[1024];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/missing", base);
    log_clear();
    CHECK(load_and_run(dir, cache_source, NULL, 1.0f), "missing directory: the load works");
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700 && count_files(dir, ".bin", NULL, 0) == 1,
          "missing directory: made 0700, the entry in it");
    snprintf(nested, sizeof nested, "%s/a/b/c", base);
    CHECK(load_and_run(nested, cache_source, NULL, 1.0f) && count_files(nested, ".bin", NULL, 0) == 1, "missing nested directories: made");

    snprintf(dir, sizeof dir, "%s/from-env", base);
    setenv("GPUFLOW_CACHE_DIR", dir, 1);
    CHECK(load_and_run(NULL, cache_source, NULL, 1.0f) && count_files(dir, ".bin", NULL, 0) == 1,
          "GPUFLOW_CACHE_DIR naming a directory that does not exist: made and used");
    unsetenv("GPUFLOW_CACHE_DIR");

    snprintf(file, sizeof file, "%s/a-file", base);
    CHECK(write_file(file, "x", 1), "a file where the directory should be");
    log_clear();
    CHECK(load_and_run(file, cache_source, NULL, 1.0f) && log_count("is not a directory") == 1, "a file as the directory: compiled, a warning");

    {   /* named by GPUFLOW_CACHE_DIR: said with no logger and no GPUFLOW_LOG, as every variable
           gpuflow cannot follow (a warning only GPUFLOW_LOG=warning showed), and once */
        char said[1100], text[4096] = "";
        FILE *f;
        int saved, fd, n;
        const char *mark = "GPUFLOW_CACHE_DIR=";
        snprintf(said, sizeof said, "%s/stderr", base);
        fflush(stderr);
        saved = dup(2);
        fd = open(said, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        gf_set_logger(NULL, NULL);
        setenv("GPUFLOW_CACHE_DIR", file, 1);
        if (saved >= 0 && fd >= 0 && dup2(fd, 2) >= 0) {
            (void)load_and_run(NULL, cache_source, NULL, 1.0f);
            (void)load_and_run(NULL, cache_source, "-DOFFSET=1.0f", 2.0f);
            fflush(stderr);
            dup2(saved, 2);
        }
        unsetenv("GPUFLOW_CACHE_DIR");
        gf_set_logger(th_said_logger, NULL);
        if (fd >= 0) close(fd);
        if (saved >= 0) close(saved);
        if ((f = fopen(said, "rb")) != NULL) { text[fread(text, 1, sizeof text - 1, f)] = 0; fclose(f); }
        for (n = 0, mark = strstr(text, mark); mark; mark = strstr(mark + 1, "GPUFLOW_CACHE_DIR=")) n++;
        CHECK(n == 1 && strstr(text, "is not a directory"), "GPUFLOW_CACHE_DIR naming a file: said on stderr by default, once");
    }
    {   /* GPUFLOW_CACHE_DIR=off: no cache, not a directory named off */
        char here[1024];
        if (getcwd(here, sizeof here) && chdir(base) == 0) {
            setenv("GPUFLOW_CACHE_DIR", "off", 1);
            CHECK(load_and_run(NULL, cache_source, NULL, 1.0f), "GPUFLOW_CACHE_DIR=off: the load works");
            unsetenv("GPUFLOW_CACHE_DIR");
            CHECK(stat("off", &st) != 0, "GPUFLOW_CACHE_DIR=off: no cache, no directory named off");
            CHECK(chdir(here) == 0, "back to the test's directory");
        }
    }

    snprintf(dir, sizeof dir, "%s/shared", base);
    CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0777) == 0, "a directory writable by everyone");
    log_clear();
    CHECK(load_and_run(dir, cache_source, NULL, 1.0f), "world-writable: the load works");
    CHECK(log_count("writable by other users") == 1 && count_files(dir, ".bin", NULL, 0) == 0, "world-writable: refused with a warning, nothing written");
    CHECK(chmod(dir, 0770) == 0 && load_and_run(dir, cache_source, NULL, 1.0f) && count_files(dir, ".bin", NULL, 0) == 0,
          "group-writable: refused too");

    snprintf(dir, sizeof dir, "%s/read-only", base);
    CHECK(mkdir(dir, 0700) == 0, "a read-only directory");
    if (as_root) SKIP("unwritable directory: root writes anyway");
    else {
        CHECK(chmod(dir, 0500) == 0, "chmod 500");
        log_clear();
        CHECK(load_and_run(dir, cache_source, NULL, 1.0f), "unwritable: the load works");
        CHECK(log_count("cannot write the kernel cache entry") == 1 && count_files(dir, ".bin", NULL, 0) == 0, "unwritable: a warning, nothing written");
        chmod(dir, 0700);
    }
}

/* ---- threads ---- */
typedef struct racer { const char *dir; int ok; pthread_barrier_t *start; } racer;
/* GPUFLOW_CACHE_LIMIT through real loads: with room for one entry, a load that writes a second
   removes the first (the least recently used), keeps its own, and says so; both modules still
   run, the first compiled again. */
static void test_limit(const char *base)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/limit", base);
    CHECK(mkdir(dir, 0700) == 0, "limit: a directory of its own");
    CHECK(load_and_run(dir, cache_source, NULL, 1.0f), "limit: the first module runs");
    CHECK(count_files(dir, ".bin", NULL, 0) == 1, "limit: its entry is written");
    setenv("GPUFLOW_CACHE_LIMIT", "1", 1);   /* room for the newest entry alone */
    log_clear();
    CHECK(load_and_run(dir, other_source, NULL, 0.0f), "limit: a second module runs");
    CHECK(count_files(dir, ".bin", NULL, 0) == 1 && log_has("least recently used entries"),
          "limit: past the limit, the older entry is removed (and said), the new one kept");
    CHECK(load_and_run(dir, other_source, NULL, 0.0f) && log_has("from the kernel cache"), "limit: the kept entry is used");
    unsetenv("GPUFLOW_CACHE_LIMIT");
    CHECK(load_and_run(dir, cache_source, NULL, 1.0f) && count_files(dir, ".bin", NULL, 0) == 2,
          "limit: the removed module compiles again, and the default limit keeps both");
    setenv("GPUFLOW_CACHE_LIMIT", "lots", 1);   /* not a number: the default holds, said once (it was said at every write) */
    log_clear();
    CHECK(load_and_run(dir, cache_source, "-DGF_LIMIT_A", 1.0f) && load_and_run(dir, cache_source, "-DGF_LIMIT_B", 1.0f) &&
          log_count("GPUFLOW_CACHE_LIMIT=lots") == 1 && count_files(dir, ".bin", NULL, 0) == 4,
          "limit: a value not understood is said once, and the default limit holds");
    unsetenv("GPUFLOW_CACHE_LIMIT");
}

static void *race_load(void *p)
{
    racer *r = (racer *)p;
    pthread_barrier_wait(r->start);
    r->ok = load_and_run(r->dir, cache_source, NULL, 1.0f);
    return NULL;
}
static void test_threads(const char *base)
{
    char dir[1024];
    pthread_t t[4];
    racer r[4];
    pthread_barrier_t start;
    int i, ok = 1;
    snprintf(dir, sizeof dir, "%s/threads", base);
    pthread_barrier_init(&start, NULL, 4);
    for (i = 0; i < 4; i++) { r[i].dir = dir; r[i].ok = 0; r[i].start = &start; pthread_create(&t[i], NULL, race_load, &r[i]); }
    for (i = 0; i < 4; i++) { pthread_join(t[i], NULL); ok &= r[i].ok; }
    pthread_barrier_destroy(&start);
    CHECK(ok, "4 threads compiling the same module into an empty cache: every kernel right");
    CHECK(count_files(dir, ".bin", NULL, 0) == 1 && count_files(dir, ".tmp", NULL, 0) == 0, "4 threads: one entry, no temporary left");
    log_clear();
    CHECK(load_and_run(dir, cache_source, NULL, 1.0f) && log_count("from the kernel cache") == 1 && log_count("W ") == 0, "4 threads: the entry is whole");
}

int main(int argc, char **argv)
{
    char base[] = "/tmp/gpuflow-cache-XXXXXX", dir[1024];
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!(backend_name = th_backend_arg(argc, argv, &backend))) return 2;
    as_root = geteuid() == 0;
    gf_set_logger(th_said_logger, NULL);
    unsetenv("GPUFLOW_CACHE_DIR");
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: cache %s skipped: %s\n", backend_name, gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    if (!CHECK_EQ_RESULT(r, GF_OK)) return th_finish();
    printf("cache on %s: %s\n", backend_name, gf_device_name(dev));
    if (backend == GF_BACKEND_STUB) {
        SKIP("the stub compiles its kernels with the program: nothing to cache");
        gf_device_close(dev);
        return th_finish();
    }
    if (!CHECK(mkdtemp(base) != NULL, "a temporary directory")) return th_finish();
    snprintf(dir, sizeof dir, "%s/entries", base);
    CHECK(mkdir(dir, 0700) == 0, "the cache directory");
    test_entries(dir);
    snprintf(dir, sizeof dir, "%s/special", base);
    CHECK(mkdir(dir, 0700) == 0, "a directory for the special files");
    test_special_files(dir);
    test_directories(base);
    test_threads(base);
    test_limit(base);
    {   /* a long source name cut the #line before each kernel of a one-line source short, and
           the kernel went into the directive: the module did not build (a review's fuzzer) */
        char name[1001];
        memset(name, 'n', sizeof name - 1);
        name[sizeof name - 1] = 0;
        source_name = name;
        snprintf(dir, sizeof dir, "%s/longname", base);
        CHECK(mkdir(dir, 0700) == 0 && load_and_run(dir, one_line_source, NULL, 1.0f), "a one-line source under a 1000-character name builds and runs");
        source_name = NULL;
    }
    gf_device_close(dev);
    remove_tree(base);
    return th_finish();
}
