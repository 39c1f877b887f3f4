/* Kernel-cache stress: many processes and threads over ONE disk cache that a corrupter keeps
   damaging. Bounded; judged by behaviour (every load succeeds, every result is right, nothing
   crashes or hangs), not by the cache's file format.

   1. threads: two threads of one process load the same module at the same instant (and, every
      other round, the same source with other options) into an emptied cache; afterwards the
      directory holds exactly the entries, no temporary files, and the next load is a hit.
      This part also probes the backend: no device, no run-time compiler, or a driver that
      builds the source itself (no entries) skips the whole program.
   2. storm: CACHE_STRESS_PROCS processes (fork, default 6) each load three modules (two
      sources, one of them with two -DSALT values) in a loop for CACHE_STRESS_SECONDS (default
      10), half through desc.cache_dir, half through GPUFLOW_CACHE_DIR; every load is launched
      and its data checked (each module computes its own values, so a wrong binary from the
      cache shows). All three define the same kernel, `probe`, with one signature: a foreign
      binary loads and runs, and only its data betray it. Meanwhile a corrupter process
      truncates entries, empties them, flips bytes, makes them sparse and 1 GiB larger,
      replaces them by garbage, by another entry's file ("foreign"), by another entry's file
      with its key patched to this name's ("forged": only a check of the whole identity
      refuses it), by symlinks (to another entry, to /dev/zero, dangling), by FIFOs and by
      directories, and deletes them; temporary files are damaged in place or deleted.
   3. after: with the corrupter stopped, each module loads twice: the second load is a hit with
      the right data; the directory is still 0700, every entry is a 0600 regular file, and
      nothing but the entries is left.

   Every process is watched by the parent: a load (or corrupter step) that takes longer than
   CACHE_STRESS_OP_LIMIT seconds (default 30) is a hang: the process is killed and its kernel
   wait channel printed.

       ./cache_stress opencl|cuda|hip|stub [seconds]

   Environment: CACHE_STRESS_SECONDS (10), CACHE_STRESS_PROCS (6, at most 32),
   CACHE_STRESS_PACE_MS (corrupter: ms between damages, default 10), CACHE_STRESS_OP_LIMIT
   (30 s), CACHE_STRESS_THREAD_ROUNDS (6), CACHE_STRESS_SEED (1). TMPDIR: where the cache
   directory is made (mkdtemp, 0700; removed at the end). */
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include "harness.h"

#define A_ADD(p, v)   __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define A_LOAD(p)     __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define A_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

enum { NM = 3, N = 1000, MAX_PROCS = 32, SAMPLES = 6, SKIP_EXIT = 77, MAX_NAMES = 256 };

/* ---- the modules: one kernel name and signature, values of their own ---------------------- */
static const char src_a[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(probe, GF_PARAM(GF_GLOBAL unsigned *, out), GF_PARAM(unsigned, n))
{
    unsigned i = gf_global_id(0);
    if (i < n) out[i] = i * 3u + (unsigned)(SALT);
}
);
static const char src_b[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(probe, GF_PARAM(GF_GLOBAL unsigned *, out), GF_PARAM(unsigned, n))
{
    unsigned i = gf_global_id(0);
    if (i < n) out[i] = i * 5u + 7u * (unsigned)(SALT);
}
);
static const struct { const char *src, *name, *options; unsigned mul, add; } mods[NM] = {
    { src_a, "cache_stress_a.gfk", "-DSALT=1000", 3, 1000 },
    { src_a, "cache_stress_a.gfk", "-DSALT=2000", 3, 2000 },   /* same source, other options */
    { src_b, "cache_stress_b.gfk", "-DSALT=1000", 5, 7000 },   /* other source, same options */
};

/* ---- what the processes share (a MAP_SHARED file mapping) ------------------------------------ */
enum { K_TRUNC, K_ZERO, K_FLIP, K_GROW, K_GARBAGE, K_FOREIGN, K_FORGED, K_SYMLINK, K_FIFO, K_DIR, K_DELETE, NK };
static const char *const kind_names[NK] = {
    "truncated", "zero-length", "bytes flipped", "sparse +1 GiB", "garbage", "foreign", "forged key", "symlink", "FIFO",
    "directory", "deleted"
};
typedef struct slot {
    int pid, started, exited;
    long long op_start;          /* ms (CLOCK_MONOTONIC) when the current step began; 0: none */
    int op_what;                 /* module index, or -1 */
    long loads, hits, rebuilds, other_warnings, failed, wrong, hit_wrong, steps;
    double max_load_ms, sum_load_ms;
    int fail_count;
    char first_fail[400];
    int samples;
    char sample[SAMPLES][200];
    char skip_reason[300];
} slot;
typedef struct shared_area {
    long long start_ms;
    slot threads, corrupter, final_check;
    slot w[MAX_PROCS];
    long damage[NK], damage_tries;
    int entry_state[NM];         /* 0 unknown, 1 being written, 2 entry_name holds the entry's file name */
    char entry_name[NM][128];
    char final_path[NM][512];
} shared_area;

static shared_area *sh;
static struct {
    gf_backend backend;
    const char *backend_name;
    double seconds, op_limit;
    int procs, pace_ms, rounds;
    unsigned seed;
    char dir[256];
} cfg;

static double env_num(const char *name, double dflt)
{
    const char *v = getenv(name);
    return v && *v ? atof(v) : dflt;
}
static long long now_ms(void) { return (long long)th_now_ms(); }

/* ---- a child's record of what happened ------------------------------------------------------ */
static slot *me;                 /* this child's slot */
static pthread_mutex_t me_lock = PTHREAD_MUTEX_INITIALIZER;
static int cur_module = -1;      /* the module the (single-threaded) worker is loading; -1: do not publish */

static void slot_fail(slot *s, const char *fmt, const char *a, const char *b)
{
    pthread_mutex_lock(&me_lock);
    if (s->fail_count++ == 0) snprintf(s->first_fail, sizeof s->first_fail, fmt, a, b);
    pthread_mutex_unlock(&me_lock);
}
static void op_begin(slot *s, int what) { A_STORE(&s->op_what, what); A_STORE(&s->op_start, now_ms()); }
static void op_end(slot *s) { A_STORE(&s->op_start, 0LL); }

/* A message with its quoted paths cut to their file's kind: one sample per kind of warning. */
static void normalize(const char *msg, char *out, size_t cap)
{
    size_t o = 0;
    const char *p = msg;
    while (*p && o + 1 < cap) {
        if (*p == '\'') {
            const char *q = strchr(p + 1, '\'');
            if (q && memchr(p, '/', (size_t)(q - p))) {
                const char *t = "'<path>'";
                while (*t && o + 1 < cap) out[o++] = *t++;
                p = q + 1;
                continue;
            }
        }
        out[o++] = *p++;
    }
    out[o] = 0;
}
static void take_sample(const char *msg)
{
    char n[200];
    int i;
    normalize(msg, n, sizeof n);
    pthread_mutex_lock(&me_lock);
    for (i = 0; i < me->samples; i++) if (!strcmp(me->sample[i], n)) break;
    if (i == me->samples && me->samples < SAMPLES) snprintf(me->sample[me->samples++], sizeof me->sample[0], "%s", n);
    pthread_mutex_unlock(&me_lock);
}
/* "... from the kernel cache (<path>)": the entry's path, published for the corrupter. */
static void publish_entry(const char *msg, int m, char *keep, size_t keep_cap)
{
    const char *open = strstr(msg, "from the kernel cache (");
    const char *path, *end, *base;
    size_t n;
    int expect = 0;
    if (!open) return;
    path = open + strlen("from the kernel cache (");
    end = strrchr(path, ')');
    if (!end || end <= path) return;
    n = (size_t)(end - path);
    if (keep && n < keep_cap) { memcpy(keep, path, n); keep[n] = 0; }
    if (m < 0) return;
    for (base = end; base > path && base[-1] != '/'; base--) {}
    if ((size_t)(end - base) >= sizeof sh->entry_name[0]) return;
    if (__atomic_compare_exchange_n(&sh->entry_state[m], &expect, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        memcpy(sh->entry_name[m], base, (size_t)(end - base));
        sh->entry_name[m][end - base] = 0;
        A_STORE(&sh->entry_state[m], 2);
    }
}
static char *final_keep;         /* the final check: where the hit's path goes */
static void child_logger(void *user, gf_log_level level, gf_result code, const char *msg)
{
    (void)user; (void)code;
    if (level == GF_LOG_INFO && strstr(msg, "from the kernel cache")) {
        A_ADD(&me->hits, 1);
        publish_entry(msg, A_LOAD(&cur_module), final_keep, 512);
    } else if (level == GF_LOG_WARNING) {
        if (strstr(msg, "rebuild")) A_ADD(&me->rebuilds, 1);
        else A_ADD(&me->other_warnings, 1);
        take_sample(msg);
    }
}

static gf_module_desc desc_of(int m, int by_env)
{
    gf_module_desc d;
    memset(&d, 0, sizeof d);
    d.source = mods[m].src;
    d.source_name = mods[m].name;
    d.build_options = mods[m].options;
    d.cache_dir = by_env ? NULL : cfg.dir;
    return d;
}
static gf_launch_dims dims_1d(unsigned threads, unsigned block)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = (threads + block - 1) / block; d.grid[1] = d.grid[2] = 1;
    d.block[0] = block; d.block[1] = d.block[2] = 1;
    return d;
}

/* Launches module m's probe and checks every value: 1 right, 0 a call failed, -1 wrong data
   (why says which module's values they look like). */
static int run_probe(gf_stream *s, gf_buffer *b, gf_module *mod, int m, char *why, size_t cap)
{
    unsigned host[N];   /* per call: two threads probe at once */
    gf_kernel *k = NULL;
    unsigned n = N, i;
    gf_arg a[2];
    gf_result r;
    a[0].value = 0; a[0].size = 0; a[0].buffer = b;
    a[1].value = &n; a[1].size = sizeof n; a[1].buffer = 0;
    if ((r = gf_kernel_get(mod, "probe", &k)) != GF_OK ||
        (r = gf_fill_async(s, b, 0, 0xff, sizeof host)) != GF_OK ||
        (r = gf_launch(s, k, dims_1d(N, 64), a, 2)) != GF_OK ||
        (r = gf_copy_to_host_async(s, host, b, 0, sizeof host)) != GF_OK ||
        (r = gf_stream_synchronize_timeout(s, (unsigned)(cfg.op_limit * 1e3))) != GF_OK) {
        snprintf(why, cap, "%s: %.300s", gf_result_name(r), gf_last_error());
        return 0;
    }
    for (i = 0; i < N; i++)
        if (host[i] != i * mods[m].mul + mods[m].add) {
            int j, like = -1;
            for (j = 0; j < NM; j++) if (host[0] == mods[j].add && host[1] == mods[j].mul + mods[j].add) like = j;
            snprintf(why, cap, "module %d (%s %s): out[%u] = %u, expected %u%s%d%s", m, mods[m].name, mods[m].options, i, host[i],
                     i * mods[m].mul + mods[m].add, like >= 0 ? " (module " : "", like, like >= 0 ? "'s values: its binary was used)" : "");
            return -1;
        }
    return 1;
}

/* One load, launch and check of module m, counted in s. */
static void load_and_check(slot *s, gf_device *dev, gf_stream *st, gf_buffer *b, int m, int by_env)
{
    gf_module_desc d = desc_of(m, by_env);
    gf_module *mod = NULL;
    char why[400];
    long hits0 = A_LOAD(&s->hits);
    double t0 = th_now_ms(), dt;
    gf_result r = gf_module_load(dev, &d, &mod);
    int hit = A_LOAD(&s->hits) != hits0, ok;
    dt = th_now_ms() - t0;
    s->loads++;
    s->sum_load_ms += dt;
    if (dt > s->max_load_ms) s->max_load_ms = dt;
    if (r != GF_OK) {
        s->failed++;
        snprintf(why, sizeof why, "%s: %.300s", gf_result_name(r), gf_last_error());
        slot_fail(s, "gf_module_load of module %s failed: %s", m == 0 ? "0" : m == 1 ? "1" : "2", why);
        return;
    }
    ok = run_probe(st, b, mod, m, why, sizeof why);
    if (ok == 0) { s->failed++; slot_fail(s, "the probe of a loaded module failed: %s%s", why, ""); }
    if (ok < 0) {
        s->wrong++;
        if (hit) s->hit_wrong++;
        slot_fail(s, "WRONG RESULT (%s): %s", hit ? "served from the kernel cache" : "compiled", why);
    }
    gf_module_destroy(mod);
}

/* ---- the directory ----------------------------------------------------------------------------- */
static int list_dir(const char *dir, char names[][128], int cap)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    if (!d) return 0;
    while ((de = readdir(d)) != NULL && n < cap) {
        size_t len = strlen(de->d_name);
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || len >= 128) continue;
        memcpy(names[n++], de->d_name, len + 1);
    }
    closedir(d);
    return n;
}
static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", cfg.dir, name); }
static void remove_name(const char *name)   /* a file, link, FIFO, or directory (one level) */
{
    char p[512];
    struct stat st;
    path_of(p, sizeof p, name);
    if (lstat(p, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        static char sub[MAX_NAMES][128];
        char q[800];
        int i, n = list_dir(p, sub, MAX_NAMES);
        for (i = 0; i < n; i++) { snprintf(q, sizeof q, "%.500s/%.127s", p, sub[i]); unlink(q); }
        rmdir(p);
    } else {
        unlink(p);
    }
}
static void clear_dir(void)
{
    static char names[MAX_NAMES][128];
    int i, n = list_dir(cfg.dir, names, MAX_NAMES);
    for (i = 0; i < n; i++) remove_name(names[i]);
}

/* ---- part 1: two threads compile the same kernel at once --------------------------------------- */
typedef struct racer {
    gf_device *dev;
    gf_stream *s;
    gf_buffer *b;
    int m, ok;
    char why[400];
} racer;
static struct { pthread_mutex_t m; pthread_cond_t c; int waiting, generation; } gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
static void gate_meet(int parties)
{
    int gen;
    pthread_mutex_lock(&gate.m);
    gen = gate.generation;
    if (++gate.waiting == parties) { gate.waiting = 0; gate.generation++; pthread_cond_broadcast(&gate.c); }
    else while (gen == gate.generation) pthread_cond_wait(&gate.c, &gate.m);
    pthread_mutex_unlock(&gate.m);
}
static void *racer_main(void *p)
{
    racer *r = (racer *)p;
    gf_module_desc d = desc_of(r->m, 0);
    gf_module *mod = NULL;
    gf_result res;
    gate_meet(2);
    res = gf_module_load(r->dev, &d, &mod);
    A_ADD(&me->loads, 1);
    if (res != GF_OK) {
        r->ok = 0;
        snprintf(r->why, sizeof r->why, "gf_module_load of module %d: %s: %.300s", r->m, gf_result_name(res), gf_last_error());
        return NULL;
    }
    r->ok = run_probe(r->s, r->b, mod, r->m, r->why, sizeof r->why);
    gf_module_destroy(mod);
    return NULL;
}

static int count_regular(int *others)
{
    static char names[MAX_NAMES][128];
    char p[512];
    struct stat st;
    int i, n = list_dir(cfg.dir, names, MAX_NAMES), reg = 0;
    *others = 0;
    for (i = 0; i < n; i++) {
        path_of(p, sizeof p, names[i]);
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) reg++;
        else (*others)++;
    }
    return reg;
}

static int threads_child(void)
{
    gf_device *dev = NULL;
    gf_stream *s[3] = { NULL, NULL, NULL };
    gf_buffer *b[3] = { NULL, NULL, NULL };
    gf_result r;
    int i, round, others;
    char what[600];
    me = &sh->threads;
    gf_set_logger(child_logger, NULL);
    r = gf_device_open(cfg.backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        snprintf(me->skip_reason, sizeof me->skip_reason, "%s: %.250s", gf_result_name(r), gf_last_error());
        return SKIP_EXIT;
    }
    if (r != GF_OK) { slot_fail(me, "gf_device_open: %s: %s", gf_result_name(r), gf_last_error()); return 1; }
    me->started = 1;
    for (i = 0; i < 3; i++)
        if (gf_stream_create(dev, NULL, &s[i]) != GF_OK || gf_buffer_create(dev, N * sizeof(unsigned), &b[i]) != GF_OK) {
            slot_fail(me, "stream or buffer: %s%s", gf_last_error(), "");
            return 1;
        }
    /* the probe: a cold load that must write an entry */
    {
        gf_module_desc d = desc_of(0, 0);
        gf_module *mod = NULL;
        char why[400];
        op_begin(me, 0);
        r = gf_module_load(dev, &d, &mod);
        op_end(me);
        if (r == GF_ERROR_NOT_SUPPORTED) {
            snprintf(me->skip_reason, sizeof me->skip_reason, "no run-time compiler: %.250s", gf_last_error());
            return SKIP_EXIT;
        }
        me->loads++;
        if (r != GF_OK) { slot_fail(me, "the first load: %s: %s", gf_result_name(r), gf_last_error()); return 1; }
        if (run_probe(s[0], b[0], mod, 0, why, sizeof why) != 1) slot_fail(me, "the first load's probe: %s%s", why, "");
        gf_module_destroy(mod);
        if (count_regular(&others) == 0) {
            snprintf(me->skip_reason, sizeof me->skip_reason, "%s's driver builds the source itself: no cache entries", cfg.backend_name);
            return SKIP_EXIT;
        }
    }
    printf("threads: %s: %s\n", cfg.backend_name, gf_device_name(dev));
    for (round = 0; round < cfg.rounds; round++) {
        racer rc[2];
        pthread_t t[2];
        int same = round % 2 == 0, want, reg, k, started = 0;
        clear_dir();
        memset(rc, 0, sizeof rc);
        for (i = 0; i < 2; i++) {
            rc[i].dev = dev; rc[i].s = s[i]; rc[i].b = b[i];
            rc[i].m = same ? (round / 2) % NM : i;   /* different: the same source, other options */
        }
        op_begin(me, rc[0].m);
        for (i = 0; i < 2; i++) if (pthread_create(&t[i], NULL, racer_main, &rc[i]) == 0) started++;
        if (started < 2) {   /* a lone racer waits at the gate: let it through */
            if (started == 1) gate_meet(2);
            slot_fail(me, "pthread_create failed%s%s", "", "");
        }
        for (i = 0; i < started; i++) pthread_join(t[i], NULL);
        op_end(me);
        for (i = 0; i < started; i++) {
            if (rc[i].ok == 1) continue;
            if (rc[i].ok < 0) me->wrong++; else me->failed++;
            snprintf(what, sizeof what, "round %d, thread %d (%s): %s", round, i, same ? "same module" : "same source, other options", rc[i].why);
            slot_fail(me, "concurrent compile: %s%s", what, "");
        }
        want = same ? 1 : 2;
        reg = count_regular(&others);
        if (reg != want || others != 0) {
            snprintf(what, sizeof what, "round %d (%s): the directory holds %d regular files and %d other names, expected %d entries and nothing else",
                     round, same ? "same module" : "same source, other options", reg, others, want);
            slot_fail(me, "concurrent compile: %s%s", what, "");
        }
        /* the entries two writers left are whole: the next loads are hits */
        for (k = 0; k < (same ? 1 : 2); k++) {
            long h0 = A_LOAD(&me->hits), bad0 = me->wrong + me->failed;
            op_begin(me, rc[k].m);
            load_and_check(me, dev, s[2], b[2], rc[k].m, 0);
            op_end(me);
            if (A_LOAD(&me->hits) == h0 || me->wrong + me->failed != bad0) {
                snprintf(what, sizeof what, "round %d: after two concurrent compiles, a load of module %d was %s", round, rc[k].m,
                         A_LOAD(&me->hits) == h0 ? "not served from the cache" : "served but failed");
                slot_fail(me, "concurrent compile: %s%s", what, "");
            }
        }
    }
    clear_dir();
    for (i = 0; i < 3; i++) { gf_buffer_destroy(b[i]); gf_stream_destroy(s[i]); }
    gf_device_close(dev);
    return 0;
}

/* ---- part 2: the storm's workers ------------------------------------------------------------- */
static unsigned rnd_state;
static unsigned rnd(void)
{
    unsigned x = rnd_state;
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    return rnd_state = x ? x : 0x9e3779b9u;
}

static int worker_child(int idx)
{
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_buffer *b = NULL;
    long long end;
    int by_env = idx & 1;
    me = &sh->w[idx];
    rnd_state = cfg.seed * 2654435761u + (unsigned)idx * 40503u + 1u;
    if (by_env && setenv("GPUFLOW_CACHE_DIR", cfg.dir, 1) != 0) { slot_fail(me, "setenv failed%s%s", "", ""); return 1; }
    gf_set_logger(child_logger, NULL);
    if (gf_device_open(cfg.backend, 0, &dev) != GF_OK || gf_stream_create(dev, NULL, &s) != GF_OK ||
        gf_buffer_create(dev, N * sizeof(unsigned), &b) != GF_OK) {
        slot_fail(me, "device, stream or buffer: %s%s", gf_last_error(), "");
        return 1;
    }
    me->started = 1;
    end = sh->start_ms + (long long)(cfg.seconds * 1e3);
    while (now_ms() < end) {
        int m = (int)(rnd() % NM);
        op_begin(me, m);
        A_STORE(&cur_module, m);
        load_and_check(me, dev, s, b, m, by_env);
        A_STORE(&cur_module, -1);
        op_end(me);
    }
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return 0;
}

/* ---- part 2: the corrupter --------------------------------------------------------------------- */
static int read_entry(const char *name, unsigned char **data, size_t *size)
{
    char p[512];
    struct stat st;
    int fd;
    size_t at = 0;
    path_of(p, sizeof p, name);
    if ((fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)) < 0) return 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > (64 << 20) ||
        !(*data = (unsigned char *)malloc((size_t)st.st_size))) { close(fd); return 0; }
    while (at < (size_t)st.st_size) {
        ssize_t got = read(fd, *data + at, (size_t)st.st_size - at);
        if (got <= 0) break;
        at += (size_t)got;
    }
    close(fd);
    *size = at;
    if (at == 0) { free(*data); return 0; }
    return 1;
}
/* data under a fresh name of the corrupter's own, renamed over name (atomic: readers see the
   old file or this one) */
static int replace_with(const char *name, const unsigned char *data, size_t size)
{
    static unsigned serial;
    char tmp[512], p[512];
    int fd, ok;
    size_t at = 0;
    snprintf(tmp, sizeof tmp, "%s/zz-corrupt-%ld-%u", cfg.dir, (long)getpid(), serial++);
    path_of(p, sizeof p, name);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0) return 0;
    while (at < size) {
        ssize_t put = write(fd, data + at, size - at);
        if (put <= 0) break;
        at += (size_t)put;
    }
    ok = close(fd) == 0 && at == size && rename(tmp, p) == 0;
    if (!ok) unlink(tmp);
    return ok;
}
static int key_of(const char *name, unsigned char key[16])   /* the 32 hex digits of an entry's name, as two LE uint64 */
{
    const char *p;
    int i, k;
    for (p = name; *p; p++) {
        uint64_t v[2] = { 0, 0 };
        for (i = 0; i < 32; i++) {
            char c = p[i];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) break;
            v[i / 16] = v[i / 16] << 4 | (uint64_t)d;
        }
        if (i == 32) {
            for (k = 0; k < 8; k++) { key[k] = (unsigned char)(v[0] >> (8 * k)); key[8 + k] = (unsigned char)(v[1] >> (8 * k)); }
            return 1;
        }
    }
    return 0;
}

static int damage(int kind, const char *name, int is_entry)
{
    char p[512], tmp[512];
    struct stat st;
    int fd, ok = 0;
    path_of(p, sizeof p, name);
    switch (kind) {
    case K_TRUNC: case K_ZERO: case K_FLIP: case K_GROW:
        if ((fd = open(p, O_RDWR | O_NOFOLLOW | O_NONBLOCK)) < 0) return 0;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            if (kind == K_TRUNC) ok = ftruncate(fd, (off_t)(rnd() % (unsigned long)st.st_size)) == 0;
            else if (kind == K_ZERO) ok = ftruncate(fd, 0) == 0;
            else if (kind == K_GROW) ok = ftruncate(fd, st.st_size + ((off_t)1 << 30)) == 0;
            else {
                int i, flips = 1 + (int)(rnd() % 4);
                for (i = 0; i < flips; i++) {
                    /* half in the first 64 bytes (a header, whatever its layout), half anywhere */
                    off_t span = (rnd() & 1) || st.st_size < 64 ? st.st_size : 64;
                    off_t at = (off_t)(rnd() % (unsigned long)span);
                    unsigned char c;
                    if (pread(fd, &c, 1, at) == 1) {
                        c ^= (unsigned char)(1u << (rnd() % 8));
                        ok = pwrite(fd, &c, 1, at) == 1;
                    }
                }
            }
        }
        close(fd);
        return ok;
    case K_GARBAGE: {
        unsigned char junk[4096];
        size_t n = 1 + rnd() % sizeof junk, i;
        for (i = 0; i < n; i++) junk[i] = (unsigned char)rnd();
        if (rnd() & 1) memcpy(junk, "gpuflow", n < 7 ? n : 7);   /* looks like an entry at first */
        return replace_with(name, junk, n);
    }
    case K_FOREIGN: case K_FORGED: {
        int other = (int)(rnd() % NM), i;
        unsigned char *data = NULL, kf[16], kt[16];
        size_t size = 0;
        if (A_LOAD(&sh->entry_state[other]) != 2 || !strcmp(sh->entry_name[other], name)) return 0;
        if (!read_entry(sh->entry_name[other], &data, &size)) return 0;
        if (kind == K_FORGED) {   /* the other entry's key bytes, wherever they are, become this name's */
            ok = 0;
            if (key_of(sh->entry_name[other], kf) && key_of(name, kt))
                for (i = 0; i + 16 <= (int)size; i++)
                    if (!memcmp(data + i, kf, 16)) { memcpy(data + i, kt, 16); ok = 1; break; }
            if (!ok) { free(data); return 0; }
        }
        ok = replace_with(name, data, size);
        free(data);
        return ok;
    }
    case K_SYMLINK: {
        int other = (int)(rnd() % NM), how = (int)(rnd() % 3);
        const char *to = how == 0 ? "/dev/zero" : how == 1 ? "gpuflow-dangling.bin" : NULL;
        if (!to && A_LOAD(&sh->entry_state[other]) == 2 && strcmp(sh->entry_name[other], name)) to = sh->entry_name[other];
        if (!to) to = "/dev/zero";
        snprintf(tmp, sizeof tmp, "%s/zz-link-%ld", cfg.dir, (long)getpid());
        unlink(tmp);
        if (symlink(to, tmp) != 0) return 0;
        if (rename(tmp, p) != 0) { unlink(tmp); return 0; }
        return 1;
    }
    case K_FIFO:
        snprintf(tmp, sizeof tmp, "%s/zz-fifo-%ld", cfg.dir, (long)getpid());
        unlink(tmp);
        if (mkfifo(tmp, 0600) != 0) return 0;
        if (rename(tmp, p) != 0) { unlink(tmp); return 0; }
        return 1;
    case K_DIR:
        if (!is_entry || (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
        unlink(p);
        return mkdir(p, 0700) == 0;
    case K_DELETE:
        if (unlink(p) == 0) return 1;
        return errno == EISDIR || errno == EPERM ? rmdir(p) == 0 : 0;
    }
    return 0;
}

static int corrupter_child(void)
{
    static char names[MAX_NAMES][128];
    long long end;
    int i;
    me = &sh->corrupter;
    me->started = 1;
    rnd_state = cfg.seed * 7919u + 12345u;
    end = sh->start_ms + (long long)(cfg.seconds * 1e3);
    while (now_ms() < end) {
        int kind = (int)(rnd() % NK), known = 0, is_entry = 0, m = (int)(rnd() % NM);
        char name[128];
        th_sleep_ms((unsigned)cfg.pace_ms);
        for (i = 0; i < NM; i++) known += A_LOAD(&sh->entry_state[i]) == 2;
        if (known && rnd() % 4 != 0 && A_LOAD(&sh->entry_state[m]) == 2) {
            snprintf(name, sizeof name, "%s", sh->entry_name[m]);   /* an entry's name, there or not */
            is_entry = 1;
        } else {
            int n = list_dir(cfg.dir, names, MAX_NAMES), pick;
            if (n == 0) continue;
            pick = (int)(rnd() % (unsigned)n);
            if (!strncmp(names[pick], "zz-", 3)) continue;
            snprintf(name, sizeof name, "%s", names[pick]);
            for (i = 0; i < NM; i++) if (A_LOAD(&sh->entry_state[i]) == 2 && !strcmp(sh->entry_name[i], name)) is_entry = 1;
        }
        /* names that are not entries (a writer's temporary file): damaged in place or deleted,
           never replaced (a file put there could outlive its writer) */
        if (!is_entry && kind >= K_GARBAGE && kind != K_DELETE) kind = rnd() & 1 ? K_FLIP : K_TRUNC;
        op_begin(me, kind);
        sh->damage_tries++;
        if (damage(kind, name, is_entry)) sh->damage[kind]++;
        op_end(me);
        me->steps++;
    }
    /* its own leftovers, and the directories (nothing could write an entry over one) */
    {
        int n = list_dir(cfg.dir, names, MAX_NAMES);
        char p[512];
        struct stat st;
        for (i = 0; i < n; i++) {
            path_of(p, sizeof p, names[i]);
            if (!strncmp(names[i], "zz-", 3) || (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))) remove_name(names[i]);
        }
    }
    return 0;
}

/* ---- part 3: after the storm -------------------------------------------------------------------- */
static int final_child(void)
{
    gf_device *dev = NULL;
    gf_stream *s = NULL;
    gf_buffer *b = NULL;
    int m, pass;
    char what[300];
    me = &sh->final_check;
    gf_set_logger(child_logger, NULL);
    if (gf_device_open(cfg.backend, 0, &dev) != GF_OK || gf_stream_create(dev, NULL, &s) != GF_OK ||
        gf_buffer_create(dev, N * sizeof(unsigned), &b) != GF_OK) {
        slot_fail(me, "device, stream or buffer: %s%s", gf_last_error(), "");
        return 1;
    }
    me->started = 1;
    for (m = 0; m < NM; m++)
        for (pass = 0; pass < 2; pass++) {
            long h0 = A_LOAD(&me->hits), bad0 = me->failed + me->wrong;
            final_keep = pass ? sh->final_path[m] : NULL;
            op_begin(me, m);
            load_and_check(me, dev, s, b, m, 0);
            op_end(me);
            if (pass == 1 && (A_LOAD(&me->hits) == h0 || me->failed + me->wrong != bad0)) {
                snprintf(what, sizeof what, "module %d's second load after the storm was %s", m,
                         A_LOAD(&me->hits) == h0 ? "not served from the cache" : "served, but failed");
                slot_fail(me, "%s%s", what, "");
            }
        }
    final_keep = NULL;
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
    gf_device_close(dev);
    return 0;
}

/* ---- the parent: forks, watches, judges ------------------------------------------------------- */
typedef struct child { pid_t pid; slot *s; const char *what; int status, done, hung; } child;

static void print_wchan(pid_t pid)
{
    char p[64], w[128] = "?", st[256] = "?";
    FILE *f;
    snprintf(p, sizeof p, "/proc/%ld/wchan", (long)pid);
    if ((f = fopen(p, "r")) != NULL) { if (!fgets(w, sizeof w, f)) snprintf(w, sizeof w, "?"); fclose(f); }
    snprintf(p, sizeof p, "/proc/%ld/stat", (long)pid);
    if ((f = fopen(p, "r")) != NULL) { if (!fgets(st, sizeof st, f)) snprintf(st, sizeof st, "?"); fclose(f); }
    st[strcspn(st, "\n")] = 0;
    printf("    pid %ld: kernel wait channel '%s'; stat: %.120s\n", (long)pid, w, st);
}

static pid_t spawn(int (*fn)(int), int arg)
{
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int rc = fn(arg);
        fflush(stdout);
        _exit(rc);
    }
    return pid;
}
static int threads_entry(int a) { (void)a; return threads_child(); }
static int worker_entry(int a) { return worker_child(a); }
static int corrupter_entry(int a) { (void)a; return corrupter_child(); }
static int final_entry(int a) { (void)a; return final_child(); }

/* Waits for every child, killing one whose step outlasts the limit, and all at hard_ms. */
static void watch(child *c, int n, long long hard_ms)
{
    int left = n, i;
    long long limit = (long long)(cfg.op_limit * 1e3);
    while (left > 0) {
        for (i = 0; i < n; i++) {
            long long since;
            int st;
            if (c[i].done) continue;
            if (waitpid(c[i].pid, &st, WNOHANG) == c[i].pid) {
                c[i].done = 1;
                c[i].status = st;
                left--;
                continue;
            }
            since = A_LOAD(&c[i].s->op_start);
            if ((since && now_ms() - since > limit) || now_ms() > hard_ms) {
                printf("FAIL (hang): %s %s (step %d) did not finish in %.0f s: killed\n", c[i].what,
                       since ? "is stuck in one step" : "ran past the whole run's bound", A_LOAD(&c[i].s->op_what),
                       since ? (double)(now_ms() - since) / 1e3 : (double)(now_ms() - sh->start_ms) / 1e3);
                print_wchan(c[i].pid);
                fflush(stdout);
                kill(c[i].pid, SIGKILL);
                waitpid(c[i].pid, &st, 0);
                c[i].done = 1;
                c[i].hung = 1;
                c[i].status = st;
                left--;
            }
        }
        if (left > 0) th_sleep_ms(20);
    }
}

static void judge_exit(const child *c)
{
    char what[300];
    if (c->hung) {
        snprintf(what, sizeof what, "%s: no hang (bounded: %.0f s a step)", c->what, cfg.op_limit);
        CHECK(0, what);
    } else if (WIFSIGNALED(c->status)) {
        snprintf(what, sizeof what, "%s: no crash (died of signal %d)", c->what, WTERMSIG(c->status));
        CHECK(0, what);
    } else {
        snprintf(what, sizeof what, "%s: exited normally (status %d)", c->what, WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1);
        CHECK(WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0, what);
    }
    if (c->s->fail_count) {
        snprintf(what, sizeof what, "%s: %d failures; first: %.230s", c->what, c->s->fail_count, c->s->first_fail);
        CHECK(0, what);
    }
}

static void cleanup_dir(void)
{
    clear_dir();
    if (rmdir(cfg.dir) != 0) printf("notice: could not remove %s: %s\n", cfg.dir, strerror(errno));
}

int main(int argc, char **argv)
{
    child c[MAX_PROCS + 1], tc, fc;
    char shm_path[300], what[600];
    const char *tmpdir = getenv("TMPDIR");
    int fd, i, k, nc = 0;
    long loads = 0, hits = 0, rebuilds = 0, other_w = 0, failed = 0, wrong = 0, hit_wrong = 0, damages = 0;
    double max_ms = 0, sum_ms = 0;
    struct stat st;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
    cfg.seconds = env_num("CACHE_STRESS_SECONDS", 10);
    cfg.procs = (int)env_num("CACHE_STRESS_PROCS", 6);
    cfg.pace_ms = (int)env_num("CACHE_STRESS_PACE_MS", 10);
    cfg.op_limit = env_num("CACHE_STRESS_OP_LIMIT", 30);
    cfg.rounds = (int)env_num("CACHE_STRESS_THREAD_ROUNDS", 6);
    cfg.seed = (unsigned)env_num("CACHE_STRESS_SEED", 1);
    for (i = 1; i < argc; i++) {
        const char *name = th_backend_named(argv[i], &cfg.backend);
        int ok = 0;
        if (name) { cfg.backend_name = name; ok = 1; }
        if (!ok && atof(argv[i]) > 0) { cfg.seconds = atof(argv[i]); ok = 1; }
        if (!ok) { printf("usage: %s %s [seconds]\n", argv[0], th_backend_choices()); return 2; }
    }
    if (!cfg.backend_name) { printf("usage: %s %s [seconds]\n", argv[0], th_backend_choices()); return 2; }
    if (cfg.procs < 1) cfg.procs = 1;
    if (cfg.procs > MAX_PROCS) cfg.procs = MAX_PROCS;
    if (cfg.pace_ms < 0) cfg.pace_ms = 0;
    if (cfg.op_limit <= 0) cfg.op_limit = 30;
    if (cfg.backend == GF_BACKEND_STUB) {
        printf("notice: cache_stress on stub skipped: the stub runs its kernels as C and compiles nothing, so it has no kernel cache\n");
        SKIP("the stub has no kernel cache");
        return th_finish();
    }

    /* the shared area: an unlinked file, mapped shared (MAP_ANONYMOUS is not POSIX) */
    snprintf(shm_path, sizeof shm_path, "%s/gpuflow-cache-stress-shm.XXXXXX", tmpdir);
    if ((fd = mkstemp(shm_path)) < 0 || ftruncate(fd, sizeof *sh) != 0 ||
        (sh = (shared_area *)mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == (shared_area *)MAP_FAILED) {
        CHECK(0, "cache_stress: a shared mapping for the processes' counts");
        return th_finish();
    }
    unlink(shm_path);
    close(fd);
    memset(sh, 0, sizeof *sh);
    snprintf(cfg.dir, sizeof cfg.dir, "%s/gpuflow-cache-stress.XXXXXX", tmpdir);
    if (!mkdtemp(cfg.dir)) { CHECK(0, "cache_stress: mkdtemp for the cache directory"); return th_finish(); }
    chmod(cfg.dir, 0700);

    /* ---- 1: two threads ---- */
    printf("== cache_stress threads: two threads compile the same module at once, %d rounds, %s, cache %s\n", cfg.rounds,
           cfg.backend_name, cfg.dir);
    memset(&tc, 0, sizeof tc);
    tc.s = &sh->threads;
    tc.what = "threads process";
    sh->start_ms = now_ms();
    tc.pid = spawn(threads_entry, 0);
    if (tc.pid < 0) { CHECK(0, "fork"); cleanup_dir(); return th_finish(); }
    watch(&tc, 1, now_ms() + (long long)(cfg.op_limit * 1e3) * (cfg.rounds * 2 + 2) + 60000);
    if (!tc.hung && WIFEXITED(tc.status) && WEXITSTATUS(tc.status) == SKIP_EXIT) {
        printf("notice: cache_stress on %s skipped: %s\n", cfg.backend_name, sh->threads.skip_reason);
        SKIP("backend unavailable, or no run-time compiler or no cache entries on it");
        cleanup_dir();
        return th_finish();
    }
    judge_exit(&tc);
    snprintf(what, sizeof what, "threads: %ld loads, %ld from the cache, no failure, no wrong result", sh->threads.loads, sh->threads.hits);
    CHECK(sh->threads.failed == 0 && sh->threads.wrong == 0 && sh->threads.loads >= 1 + 3 * cfg.rounds, what);
    clear_dir();

    /* ---- 2: the storm ---- */
    printf("== cache_stress storm: %d processes x %.1f s over one cache, 3 modules, a corrupter every %d ms, %.0f s a step at most\n",
           cfg.procs, cfg.seconds, cfg.pace_ms, cfg.op_limit);
    sh->start_ms = now_ms();
    for (i = 0; i < cfg.procs; i++) {
        static char names[MAX_PROCS][32];
        memset(&c[nc], 0, sizeof c[nc]);
        snprintf(names[i], sizeof names[i], "worker %d", i);
        c[nc].what = names[i];
        c[nc].s = &sh->w[i];
        if ((c[nc].pid = spawn(worker_entry, i)) < 0) { CHECK(0, "fork of a worker"); break; }
        nc++;
    }
    memset(&c[nc], 0, sizeof c[nc]);
    c[nc].what = "corrupter";
    c[nc].s = &sh->corrupter;
    if ((c[nc].pid = spawn(corrupter_entry, 0)) >= 0) nc++;
    else CHECK(0, "fork of the corrupter");
    watch(c, nc, sh->start_ms + (long long)((cfg.seconds + cfg.op_limit) * 1e3) + 60000);
    for (i = 0; i < nc; i++) {
        slot *s = c[i].s;
        judge_exit(&c[i]);
        if (s == &sh->corrupter) continue;
        loads += s->loads; hits += s->hits; rebuilds += s->rebuilds; other_w += s->other_warnings;
        failed += s->failed; wrong += s->wrong; hit_wrong += s->hit_wrong; sum_ms += s->sum_load_ms;
        if (s->max_load_ms > max_ms) max_ms = s->max_load_ms;
        printf("  %s (%s): %ld loads, %ld from the cache, %ld rebuilds warned, %ld other warnings, %ld failed, %ld wrong, "
               "max load %.1f ms\n", c[i].what, (i & 1) ? "GPUFLOW_CACHE_DIR" : "cache_dir", s->loads, s->hits, s->rebuilds,
               s->other_warnings, s->failed, s->wrong, s->max_load_ms);
    }
    for (k = 0; k < NK; k++) damages += sh->damage[k];
    printf("storm figures: %ld loads, %ld served from the cache (%.0f%%), %ld rebuilds after a bad entry (warnings), "
           "%ld other warnings, %ld failed loads, %ld wrong results (%ld of them from the cache); mean load %.1f ms, max %.1f ms\n",
           loads, hits, loads ? 100.0 * (double)hits / (double)loads : 0.0, rebuilds, other_w, failed, wrong, hit_wrong,
           loads ? sum_ms / (double)loads : 0.0, max_ms);
    printf("damage done (%ld of %ld tries):", damages, sh->damage_tries);
    for (k = 0; k < NK; k++) printf(" %s %ld%s", kind_names[k], sh->damage[k], k + 1 < NK ? "," : "\n");
    printf("warnings seen (one of each kind):\n");
    {
        char seen[64][200];
        int ns = 0, j, q;
        slot *all[MAX_PROCS + 1];
        for (i = 0; i < nc; i++) all[i] = c[i].s;
        all[nc] = &sh->threads;
        for (i = 0; i <= nc; i++)
            for (j = 0; j < all[i]->samples; j++) {
                for (q = 0; q < ns; q++) if (!strcmp(seen[q], all[i]->sample[j])) break;
                if (q == ns && ns < 64) { snprintf(seen[ns++], sizeof seen[0], "%s", all[i]->sample[j]); printf("    %s\n", all[i]->sample[j]); }
            }
        if (!ns) printf("    (none)\n");
    }
    snprintf(what, sizeof what, "storm: every load succeeded (%ld failed of %ld)", failed, loads);
    CHECK(failed == 0 && loads > 0, what);
    snprintf(what, sizeof what, "storm: every result right (%ld wrong, %ld of them served from the cache)", wrong, hit_wrong);
    CHECK(wrong == 0, what);
    snprintf(what, sizeof what, "storm: the cache served loads (%ld of %ld)", hits, loads);
    CHECK(hits > 0, what);
    if (damages >= 20) {
        snprintf(what, sizeof what, "storm: bad entries were noticed and warned about (%ld rebuild warnings for %ld damages)", rebuilds, damages);
        CHECK(rebuilds > 0, what);
    } else {
        printf("notice: only %ld damages done: the warnings are not judged\n", damages);
    }

    /* ---- 3: after the storm ---- */
    printf("== cache_stress after: each module twice, the corrupter stopped\n");
    memset(&fc, 0, sizeof fc);
    fc.s = &sh->final_check;
    fc.what = "final check";
    sh->start_ms = now_ms();
    fc.pid = spawn(final_entry, 0);
    if (fc.pid < 0) CHECK(0, "fork of the final check");
    else {
        watch(&fc, 1, now_ms() + (long long)(cfg.op_limit * 1e3) * (2 * NM) + 60000);
        judge_exit(&fc);
        snprintf(what, sizeof what, "after: %ld loads, %ld from the cache (each module's second load a hit, right data)",
                 sh->final_check.loads, sh->final_check.hits);
        CHECK(sh->final_check.hits >= NM && sh->final_check.failed == 0 && sh->final_check.wrong == 0, what);
    }
    snprintf(what, sizeof what, "after: the cache directory is still 0700 (it is %03o)", stat(cfg.dir, &st) == 0 ? (unsigned)(st.st_mode & 0777) : 0u);
    CHECK(stat(cfg.dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, what);
    {
        static char names[MAX_NAMES][128];
        int n = list_dir(cfg.dir, names, MAX_NAMES), entries = 0, loose = 0, leftover = 0, j;
        char p[512], firstl[200] = "", firstm[200] = "";
        /* names[i] printed with its row's bound: without it GCC's -Wformat-truncation may take it as the whole array */
        for (i = 0; i < n; i++) {
            int is_entry = 0;
            path_of(p, sizeof p, names[i]);
            for (j = 0; j < NM; j++) if (!strcmp(p, sh->final_path[j])) is_entry = 1;
            if (lstat(p, &st) != 0) continue;
            if (!is_entry) { if (!leftover++) snprintf(firstl, sizeof firstl, "%.*s", (int)sizeof names[i] - 1, names[i]); continue; }
            entries++;
            if (!S_ISREG(st.st_mode) || (st.st_mode & 0777) != 0600) {
                if (!loose++) snprintf(firstm, sizeof firstm, "%.*s: mode %06o", (int)sizeof names[i] - 1, names[i], (unsigned)st.st_mode);
            }
        }
        printf("after: the directory holds %d names: %d entries of the three modules, %d others%s%s\n", n, entries, leftover,
               leftover ? ", e.g. " : "", firstl);
        snprintf(what, sizeof what, "after: every entry is a regular file of mode 0600 (%d are not%s%s)", loose, loose ? "; " : "", firstm);
        CHECK(entries > 0 && loose == 0, what);
        snprintf(what, sizeof what, "after: nothing but the entries is left in the directory (%d others%s%s)", leftover, leftover ? ", e.g. " : "", firstl);
        CHECK(leftover == 0, what);
    }
    cleanup_dir();
    return th_finish();
}
