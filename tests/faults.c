/* Fault loops: one representative scenario (devices, streams, buffers, async copies and fills,
   events, an event pool and an async waiter, kernels, a stream pool, a stream set, a flow run
   over the pool and captured into a graph, a capture with launch and update, stream-ordered
   allocation, the profiler's report and trace, device synchronize, destroy and close) is run
   once to count its calls of one kind, then once per N with the N-th call failing. On the
   backends that compile source (opencl, cuda, hip) it also loads a module from dialect source
   twice through a disk cache (the first compiles and writes it, the second is a hit) and runs
   kernels of both: the compiler's entry points (clBuildProgram ..., nvrtc*, hiprtc*) and the
   cache's file operations (mkdir, open, read, write, rename, remove) are entry points here.

       faults alloc [stub|opencl]       GPUFLOW_MALLOC / GPUFLOW_REALLOC return NULL
       faults slots stub|opencl|cuda|hip    a backend vtable slot returns GF_ERROR_DRIVER
       faults entries opencl|cuda|hip   a native driver entry point fails (gpuflow_fault_hit,
                                        asked by the backends through GF__FAULT)
   options:
       --once | --from    only "the N-th call fails" | only "every call from the N-th on fails"
                          (default: both; from N on, entry points that give an object back
                          to the driver pass: releases_driver_object says why)
       --only N           just that N (a reproducer)
       --every K          every K-th N (default: all N up to a per-mode budget of runs, then
                          an even sample; the output says which)
       --all              every N, whatever the count
       -v                 one line per run
   environment:
       FAULTS_NO_RECOVERY=1   do not retry, with faults off, the destroys a fault made the
                              library refuse: what they kept is then reported as leaked
       FAULTS_RUN_LIMIT_S     a run that takes longer is a hang (default 20): the program
                              reports it, with its N, and exits

   Every run must: not crash (the sanitizer build: make sanitize); not hang; return from each
   failing call a negative gf_result with a fresh gf_last_error() (the text is primed with a
   sentinel before every call), the first failure naming the failed slot or entry point; keep
   every GF_OK honest (the scenario's data checks run in each run in which no call reported a
   failure, so a fault the library swallowed must not change a result); leave every object it
   did not destroy usable once the faults stop (a probe with faults off); go on past a failed
   kernel cache file operation (the cache is an optimisation: a load in which nothing else
   failed returns GF_OK, compiles instead and logs a warning) and leave no temporary cache file
   behind unless a remove failed too; either free an object on destroy or keep it and say why
   (the gf_last_error text), the kept ones freeable once the faults stop; and end with every
   block the library allocated freed (this program supplies GPUFLOW_MALLOC / REALLOC / FREE
   and counts them, so leaks show in plain builds too, attributed to the run and to the
   scenario step that allocated them; under ASan LSan checks at exit as well).

   Only calls made by the scenario's thread are counted and failed, so that the N-th call is
   the same call in every run: calls from the library's own threads (stub stream workers, the
   async waiter, OpenCL callback threads) pass through. Driver loading happens once per
   process, before the loop, so its one-time allocations are not in the count either. The
   cache lives in a directory of this process ($TMPDIR or /tmp, gpuflow-faults-cache-*, mode
   0700, removed at exit); each run starts without its subdirectory, so every run compiles,
   makes the directory, writes and hits alike. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <errno.h>
#include <dirent.h>
#include <sys/stat.h>

/* ---- the fault switch: counts calls of each kind, fails the chosen one(s) ------------------ */
enum { K_ALLOC, K_SLOT, K_ENTRY, K_COUNT };
static const char *const kind_names[K_COUNT] = { "allocation", "slot", "entry-point" };

#define MAX_TALLY 160
typedef struct { char name[96]; unsigned long count, first; } tally_item;   /* first: its first call's N */

static void copy_name(char *dst, size_t cap, const char *src)   /* truncating strcpy */
{
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

static struct {
    int armed;                      /* counting the scenario thread's calls */
    int kind;                       /* the kind that fails */
    unsigned long fail_at;          /* 0: nothing fails */
    int from;                       /* every call from fail_at on fails */
    unsigned long calls[K_COUNT];   /* counted in this run */
    unsigned long injected;         /* failures injected in this run */
    char first_name[64];            /* the first injected call, and the step it was in */
    const char *first_step; int first_line;
    char names[32][64]; int name_count;   /* distinct names injected in this run */
    unsigned long cache_injected, other_injected;   /* injected: the kernel cache's file operations, the rest */
    const char *step; int line;     /* the scenario step running now */
    const char *phase;              /* scenario, probe, cleanup, recovery, close */
    int tally_on;                   /* counting run: names of the calls of the failing kind */
    tally_item tally[MAX_TALLY]; int tally_count;
} F;
static __thread int faults_main;    /* the scenario's thread */

static void tally_add(const char *name, unsigned long n)
{
    int i;
    for (i = 0; i < F.tally_count; i++)
        if (!strcmp(F.tally[i].name, name)) { F.tally[i].count++; return; }
    if (F.tally_count < MAX_TALLY) {
        copy_name(F.tally[F.tally_count].name, sizeof F.tally[0].name, name);
        F.tally[F.tally_count].first = n;
        F.tally[F.tally_count++].count = 1;
    }
}

/* The kernel cache's file operations (GF__FAULT("open") ...): counted and failed like driver
   entry points, but a cache that fails is only an optimisation lost: the load goes on and
   compiles (with a warning), so such a fault must not fail it. */
static int cache_op(const char *name)
{
    static const char *const ops[] = { "mkdir", "open", "read", "write", "rename", "remove" };
    size_t i;
    for (i = 0; i < sizeof ops / sizeof ops[0]; i++) if (!strcmp(name, ops[i])) return 1;
    return 0;
}

/* Called before every allocation, slot call and entry point: nonzero fails it. */
/* An entry point that gives an object back to the driver. From N on (--from) these pass: had
   every later release failed as well, each run would leave its queues and events, and with them
   its context, with the driver for good, and NVIDIA's OpenCL refuses clCreateContext
   (CL_OUT_OF_HOST_MEMORY) after about fifty such runs, in this process and in every test
   beside it. --once still fails each of them in turn, as does --from when N falls on one. */
static int releases_driver_object(const char *name)
{
    return strstr(name, "Release") || strstr(name, "Destroy") || strstr(name, "Unload") || strstr(name, "Free");
}

static int faults_hit(int kind, const char *name)
{
    unsigned long n;
    int i;
    if (!faults_main || !F.armed) return 0;
    n = ++F.calls[kind];
    if (kind != F.kind) return 0;
    if (F.tally_on) tally_add(kind == K_ALLOC ? (F.step ? F.step : F.phase ? F.phase : "(outside a step)") : name, n);
    if (!F.fail_at || n < F.fail_at || (n > F.fail_at && !F.from)) return 0;
    if (n > F.fail_at && kind == K_ENTRY && releases_driver_object(name)) return 0;
    if (F.injected++ == 0) {
        copy_name(F.first_name, sizeof F.first_name, name);
        F.first_step = F.step;
        F.first_line = F.line;
    }
    for (i = 0; i < F.name_count; i++) if (!strcmp(F.names[i], name)) break;
    if (i == F.name_count && F.name_count < 32) copy_name(F.names[F.name_count++], sizeof F.names[0], name);
    if (kind == K_ENTRY && cache_op(name)) F.cache_injected++;
    else F.other_injected++;
    return 1;
}

/* ---- the library's memory: counted, each block on a list with the step that made it ------- */
typedef struct blk {
    struct blk *prev, *next;
    size_t size;
    const char *step; int line;     /* scenario step (NULL: outside one, or another thread) */
} blk;
#define BLK_HDR ((sizeof(blk) + 15) & ~(size_t)15)
static blk blk_head = { &blk_head, &blk_head, 0, NULL, 0 };
static pthread_mutex_t blk_lock = PTHREAD_MUTEX_INITIALIZER;
static long blk_live;
static void *watch_ptr;             /* a destroy's object: did the library free it? */
static int watch_hit;

static void blk_link(blk *b)
{
    pthread_mutex_lock(&blk_lock);
    b->next = blk_head.next; b->prev = &blk_head;
    blk_head.next->prev = b; blk_head.next = b;
    blk_live++;
    pthread_mutex_unlock(&blk_lock);
}
static void blk_unlink(blk *b)
{
    pthread_mutex_lock(&blk_lock);
    if (b->next != b) {             /* else reported as leaked and detached: freed late after all */
        b->prev->next = b->next; b->next->prev = b->prev;
        blk_live--;
    }
    pthread_mutex_unlock(&blk_lock);
}
static void blk_note(blk *b, size_t n)
{
    b->size = n;
    b->step = faults_main ? F.step : NULL;
    b->line = faults_main ? F.line : 0;
}

static void *faults_malloc(size_t n)
{
    blk *b;
    if (faults_hit(K_ALLOC, "malloc")) return NULL;
    if (!(b = (blk *)malloc(BLK_HDR + n))) return NULL;
    blk_note(b, n);
    blk_link(b);
    return (char *)b + BLK_HDR;
}
static void faults_free(void *p)
{
    blk *b;
    if (!p) return;
    if (p == __atomic_load_n(&watch_ptr, __ATOMIC_ACQUIRE)) __atomic_store_n(&watch_hit, 1, __ATOMIC_RELEASE);
    b = (blk *)((char *)p - BLK_HDR);
    blk_unlink(b);
    free(b);
}
static void *faults_realloc(void *p, size_t n)
{
    blk *b, *nb;
    if (!p) return faults_malloc(n);
    if (faults_hit(K_ALLOC, "realloc")) return NULL;
    b = (blk *)((char *)p - BLK_HDR);
    blk_unlink(b);
    if (!(nb = (blk *)realloc(b, BLK_HDR + n))) { blk_link(b); return NULL; }   /* (a detached block rejoins) */
    nb->size = n;
    blk_link(nb);
    return (char *)nb + BLK_HDR;
}

#define GPUFLOW_MALLOC(n)     faults_malloc(n)
#define GPUFLOW_REALLOC(p, n) faults_realloc((p), (n))
#define GPUFLOW_FREE(p)       faults_free(p)

/* The vtable seam: the core passes each backend's table through faults_wrap before use. */
struct gf__backend;
static const struct gf__backend *faults_wrap(const struct gf__backend *be);
#define GF__BACKEND_WRAP(be) faults_wrap(be)

#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_FAULT_INJECTION
#include "backends.h"
#include "harness.h"
#include "test_kernels.h"

/* ---- the backends' entry points ---------------------------------------------------------- */
int gpuflow_fault_hit(const char *entry)
{
    return faults_hit(K_ENTRY, entry);
}

/* ---- the wrapped vtable: every fallible slot first asks the switch --------------------------- */
/* Slots that return nothing (frees, destroys, compiler_id) cannot fail and pass through, as
   does host_pinned (a question, not an operation). A slot added to struct gf__backend later and
   not listed here passes through too: add it to FAULTS_SLOTS. */
#define FAULTS_SLOTS(X, I) \
    X(I, load, (void), ()) \
    X(I, device_count, (int *count), (count)) \
    X(I, device_open, (gf_device *dev, int index), (dev, index)) \
    X(I, memory_info, (gf_device *dev, size_t *f, size_t *t), (dev, f, t)) \
    X(I, buffer_alloc, (gf_buffer *buf), (buf)) \
    X(I, buffer_alloc_async, (gf_stream *s, gf_buffer *buf), (s, buf)) \
    X(I, buffer_free_async, (gf_stream *s, gf_buffer *buf), (s, buf)) \
    X(I, host_alloc, (gf_device *dev, size_t bytes, void **out), (dev, bytes, out)) \
    X(I, stream_create, (gf_stream *s), (s)) \
    X(I, stream_synchronize, (gf_stream *s), (s)) \
    X(I, stream_query, (gf_stream *s), (s)) \
    X(I, copy, (gf_stream *s, const gf__copy *c), (s, c)) \
    X(I, fill, (gf_stream *s, gf_buffer *buf, size_t off, unsigned char v, size_t n), (s, buf, off, v, n)) \
    X(I, prefetch, (gf_stream *s, gf_buffer *buf, int to_device), (s, buf, to_device)) \
    X(I, host_callback, (gf_stream *s, void (*fn)(void *), void *user), (s, fn, user)) \
    X(I, event_create, (gf_event *ev), (ev)) \
    X(I, event_record, (gf_event *ev, gf_stream *s), (ev, s)) \
    X(I, stream_wait_event, (gf_stream *s, gf_event *ev), (s, ev)) \
    X(I, event_synchronize, (gf_event *ev), (ev)) \
    X(I, event_query, (gf_event *ev), (ev)) \
    X(I, event_elapsed_ms, (gf_event *a, gf_event *b, float *ms), (a, b, ms)) \
    X(I, module_load, (gf_module *mod, const gf_module_desc *desc), (mod, desc)) \
    X(I, kernel_get, (gf_kernel *k), (k)) \
    X(I, compile, (gf_device *dev, const char *name, const char *text, const char *options, void **binary, \
                   size_t *size), (dev, name, text, options, binary, size)) \
    X(I, module_load_compiled, (gf_module *mod, const void *binary, size_t size), (mod, binary, size)) \
    X(I, launch, (gf_stream *s, gf_kernel *k, const gf_launch_dims *d, const gf_arg *a, int n), (s, k, d, a, n)) \
    X(I, capture_begin, (gf_stream *s, gf_capture_mode mode), (s, mode)) \
    X(I, graph_launch, (gf_graph *g, gf_stream *s), (g, s)) \
    X(I, graph_update, (gf_graph *target, gf_graph *from), (target, from)) \
    X(I, buffer_import, (gf_buffer *buf, const gf_external_memory_desc *d), (buf, d)) \
    X(I, buffer_export, (gf_buffer *buf, gf_external_type t, gf_external_handle *o), (buf, t, o)) \
    X(I, semaphore_create, (gf_semaphore *sem), (sem)) \
    X(I, semaphore_import, (gf_semaphore *sem, const gf_semaphore_desc *d), (sem, d)) \
    X(I, semaphore_export, (gf_semaphore *sem, gf_external_type t, gf_external_handle *o), (sem, t, o)) \
    X(I, semaphore_signal, (gf_stream *s, gf_semaphore *sem, uint64_t v), (s, sem, v)) \
    X(I, semaphore_wait, (gf_stream *s, gf_semaphore *sem, uint64_t v), (s, sem, v))

static const gf__backend *faults_orig[GF_BACKEND_COUNT];
static gf__backend faults_wrapped[GF_BACKEND_COUNT];
static int faults_wrapped_ready[GF_BACKEND_COUNT];
static pthread_mutex_t faults_wrap_lock = PTHREAD_MUTEX_INITIALIZER;

static gf_result faults_slot_fail(const char *slot)
{
    return gf__fail(GF_ERROR_DRIVER, "%s: injected driver failure (tests/faults.c)", slot);
}

#define FAULTS_DEFINE(I, slot, params, args) \
    static gf_result faults_##slot##_##I params { \
        if (faults_hit(K_SLOT, "slot:" #slot)) return faults_slot_fail("slot:" #slot); \
        return faults_orig[GF_BACKEND_##I]->slot args; \
    }
/* capture_end's contract is that on failure the capture is over, as a failing driver leaves
   it: so its fault ends the driver's capture for real, throws that graph away, then fails. */
#define FAULTS_DEFINE_CAPTURE_END(I) \
    static gf_result faults_capture_end_##I(gf_stream *s, gf_graph *g) { \
        gf_result r = faults_orig[GF_BACKEND_##I]->capture_end(s, g); \
        if (!faults_hit(K_SLOT, "slot:capture_end")) return r; \
        if (r == GF_OK && faults_orig[GF_BACKEND_##I]->graph_destroy) faults_orig[GF_BACKEND_##I]->graph_destroy(g); \
        return faults_slot_fail("slot:capture_end"); \
    }
#define FAULTS_INSTALL(I, slot, params, args) if (w->slot) w->slot = faults_##slot##_##I;
#define FAULTS_FAMILY(I) \
    FAULTS_SLOTS(FAULTS_DEFINE, I) \
    FAULTS_DEFINE_CAPTURE_END(I) \
    static void faults_install_##I(gf__backend *w) { \
        FAULTS_SLOTS(FAULTS_INSTALL, I) \
        if (w->capture_end) w->capture_end = faults_capture_end_##I; \
    }
/* one family per backend in the registry (I is its ID: CUDA, HIP, ...) */
#define FAULTS_FAMILY_ROW(ID, name) FAULTS_FAMILY(ID)
GF__BACKENDS(FAULTS_FAMILY_ROW)
#undef FAULTS_FAMILY_ROW

static const struct gf__backend *faults_wrap(const struct gf__backend *be)
{
    int i = (int)be->kind;
    if (i <= GF_BACKEND_AUTO || i >= GF_BACKEND_COUNT) return be;
    pthread_mutex_lock(&faults_wrap_lock);
    if (!faults_wrapped_ready[i]) {
        faults_orig[i] = be;
        faults_wrapped[i] = *be;
        switch ((gf_backend)i) {
#define FAULTS_INSTALL_CASE(ID, name) case GF_BACKEND_##ID: faults_install_##ID(&faults_wrapped[i]); break;
        GF__BACKENDS(FAULTS_INSTALL_CASE)
#undef FAULTS_INSTALL_CASE
        default: break;
        }
        faults_wrapped_ready[i] = 1;
    }
    pthread_mutex_unlock(&faults_wrap_lock);
    return &faults_wrapped[i];
}

/* ---- one run's record ---------------------------------------------------------------------- */
static struct {
    const char *argv0, *mode, *backend_name;   /* "build/faults", "alloc", "stub" */
    const char *how;                   /* "count", "once", "from" */
    unsigned long n;
    int defects;                       /* in this run */
    int failed_calls;                  /* calls that reported a failure */
    int first_checked;                 /* the first failure's message was checked */
    int verbose;
    int no_recovery;
    int printed;                       /* defect lines printed in this mode */
    int defects_total;
    unsigned long absorbed_runs;       /* a fault injected, no call reported one */
    unsigned long kept_runs, kept_objects;   /* destroys refused under a fault, redone with faults off */
    tally_item absorbed[MAX_TALLY]; int absorbed_count;
    tally_item cache_ok[MAX_TALLY]; int cache_ok_count;   /* loads that went on past failed cache operations */
} R;
static int max_printed = 30;        /* FAULTS_PRINT=n changes it */

/* A library defect found in this run: one failed check, printed with how to reproduce it. */
static void defect(int line, const char *fmt, ...) GF__PRINTF(2, 3);
static void defect(int line, const char *fmt, ...)
{
    char what[1400], where[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    R.defects++;
    R.defects_total++;
    pthread_mutex_lock(&th_count_lock);
    th_failed++;
    pthread_mutex_unlock(&th_count_lock);
    if (++R.printed > max_printed) {
        if (R.printed == max_printed + 1) printf("   (further defects of this mode are counted, not printed)\n");
        return;
    }
    if (F.injected)
        snprintf(where, sizeof where, "N=%lu, first injected: %s during `%s` (line %d)", R.n, F.first_name,
                 F.first_step ? F.first_step : "(between steps)", F.first_line);
    else if (R.n)
        snprintf(where, sizeof where, "N=%lu, before any injected fault", R.n);
    else
        snprintf(where, sizeof where, "counting run, no fault injected");
    printf("FAIL faults %s %s %s [%s] (faults.c:%d): %s\n", R.mode, R.backend_name, R.how, where, line, what);
    printf("     reproduce: %s %s %s --%s --only %lu\n", R.argv0, R.mode, R.backend_name,
           !strcmp(R.how, "count") ? "once" : R.how, R.n ? R.n : 1);
    fflush(stdout);
}

/* ---- steps: every call of the scenario goes through DO / DOQ ---------------------------------- */
static int msg_fresh(void)
{
    const char *m = gf_last_error();
    return m && m[0] && strcmp(m, th_sentinel) != 0;
}
static int msg_names_fault(const char *m)   /* names one of the calls failed in this run */
{
    int i;
    for (i = 0; i < F.name_count; i++) if (strstr(m, F.names[i])) return 1;
    return 0;
}

static void step_begin(const char *what, int line)
{
    th_prime();
    F.step = what;
    F.line = line;
}

/* Judges one call's result. allow_pos: GF_NOT_READY / GF_TIMEOUT are answers here. */
static gf_result step_end(gf_result r, int allow_pos, int line)
{
    const char *what = F.step;
    F.step = NULL;
    if (r == GF_OK) return r;
    if (r > 0) {
        if (!allow_pos || (r != GF_NOT_READY && r != GF_TIMEOUT))
            defect(line, "`%s` returned %s (%d), not a result this call gives", what, gf_result_name(r), (int)r);
        return r;
    }
    R.failed_calls++;
    if (!F.injected)
        defect(line, "`%s` failed with no fault injected: %s: %s", what, gf_result_name(r), gf_last_error());
    else if (!msg_fresh())
        defect(line, "`%s` returned %s without a message (gf_last_error: \"%s\")", what, gf_result_name(r), gf_last_error());
    else if (!R.first_checked) {
        R.first_checked = 1;
        if (F.kind != K_ALLOC && !msg_names_fault(gf_last_error()))
            defect(line, "`%s` returned %s, its message does not name the failed %s (%s): \"%s\"", what,
                   gf_result_name(r), kind_names[F.kind], F.first_name, gf_last_error());
    }
    return r;
}
#define DO(expr)  (step_begin(#expr, __LINE__), step_end((expr), 0, __LINE__))
#define DOQ(expr) (step_begin(#expr, __LINE__), step_end((expr), 1, __LINE__))

/* A data check: runs only while no call of this run has reported a failure (a reported
   failure legitimately leaves data unwritten); then a mismatch is a GF_OK that lied. */
#define DATA(cond, what) \
    do { if (!R.failed_calls && !(cond)) defect(__LINE__, "data check failed after every call returned GF_OK: %s", (what)); } while (0)

/* ---- the scenario's objects ------------------------------------------------------------------ */
#define BUF 1024                    /* bytes per buffer */
#define N32 (BUF / 4)

typedef enum { OBJ_STREAM, OBJ_BUFFER, OBJ_EVENT, OBJ_EVENT_POOL, OBJ_STREAM_POOL, OBJ_STREAM_SET,
               OBJ_FLOW, OBJ_GRAPH, OBJ_MODULE, OBJ_HOST, OBJ_SEMAPHORE } obj_kind;
typedef struct { obj_kind kind; void *p; const char *name; } kept_obj;

static struct {
    gf_backend backend;
    gf_device *dev;
    gf_stream *s1, *s2;
    gf_buffer *a, *b, *c, *ab, *ab2;
    gf_buffer *xb, *xi;             /* interop (the stub): an exportable buffer, and it imported again */
    gf_semaphore *sem, *sem2;       /* a semaphore, and it imported again */
    void *pin;
    gf_event *t0, *t1, *pe;
    gf_event_pool *ep;
    gf_module *mod;
    gf_kernel *kfill, *kadd;
    gf_module *smod1, *smod2;       /* from dialect source: compiled (cache written), then a cache hit */
    gf_kernel *siota1, *saxpy1, *siota2, *saxpy2;
    gf_stream_pool *pool;
    gf_stream_set *set;
    gf_flow *flow;
    gf_graph *g1, *g2, *gflow;
    kept_obj kept[32]; int kept_count;
    int callbacks;                  /* atomic: host callbacks run */
    int waiter_fired;               /* atomic */
    gf_result waiter_status;
    char trace_path[256];
    double t_open;                  /* when the run began */
} S;

static unsigned char src_bytes[BUF], host[BUF];
static gf_profile_report report;

/* ---- kernels from dialect source, through the disk cache (the backends that compile) -------- */
/* FK_MUL comes from the build options: they reach the compiler, and the cache key, on a hit too. */
static const char fk_source[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(fk_iota, GF_PARAM(GF_GLOBAL unsigned *, p), GF_PARAM(unsigned, n), GF_PARAM(unsigned, base))
{
    unsigned i = gf_global_id(0);
    if (i < n) p[i] = base + i;
}
GF_KERNEL(fk_axpy, GF_PARAM(GF_GLOBAL unsigned *, p), GF_PARAM(unsigned, n), GF_PARAM(unsigned, add))
{
    unsigned i = gf_global_id(0);
    if (i < n) p[i] = p[i] * FK_MUL + add;
}
);
#define FK_OPTIONS "-DFK_MUL=3"
static uint32_t fk_expect(uint32_t i) { return ((100 + i) * 3 + 1) * 3 + 2; }   /* iota 100, axpy 1, axpy 2 */
static uint32_t fk_iota_5(uint32_t i) { return 0x10000u + i; }
static int fk_check(const unsigned char *p, uint32_t n, uint32_t (*want)(uint32_t))
{
    uint32_t i, x;
    for (i = 0; i < n; i++) { memcpy(&x, p + 4 * i, 4); if (x != want(i)) return 0; }
    return 1;
}

/* The cache: a directory of this process's own (mkdtemp: mode 0700), removed at exit; each run
   starts without its cache_dir, a subdirectory, so that every run compiles, writes and hits
   alike and the N-th call is the same call in every run. */
static char cache_base[256], cache_dir[300];

/* Removes what is under dir (not following links), and dir itself unless keep_top. 0: all gone. */
static int tree_remove(const char *dir, int keep_top)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int bad = 0;
    if (!d) return keep_top || rmdir(dir) == 0 || errno == ENOENT ? 0 : -1;
    while ((e = readdir(d)) != NULL) {
        char p[600];
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) bad |= tree_remove(p, 0);
        else if (unlink(p) != 0) bad = -1;
    }
    closedir(d);
    if (!keep_top && rmdir(dir) != 0) bad = -1;
    return bad;
}
/* The names in cache_dir ending in suffix: how many; the first in first. */
static int cache_files(const char *suffix, char *first, size_t cap)
{
    DIR *d = opendir(cache_dir);
    struct dirent *e;
    size_t k = strlen(suffix);
    int n = 0;
    if (first && cap) first[0] = 0;
    if (!d) return 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < k || strcmp(e->d_name + len - k, suffix)) continue;
        if (!n++ && first) copy_name(first, cap, e->d_name);
    }
    closedir(d);
    return n;
}
static void cache_base_remove(void)
{
    if (cache_base[0]) tree_remove(cache_base, 0);
    cache_base[0] = 0;
}

/* What the library logged from the scenario's thread: warnings (a cache it could not use) and
   cache hits. */
static struct { int warnings, hits; } L;
static void faults_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    (void)user; (void)code;
    if (!faults_main) return;
    if (level == GF_LOG_WARNING) L.warnings++;
    if (strstr(message, "from the kernel cache")) L.hits++;
}

static void count_cb(void *user, gf_result status)
{
    (void)status;
    __atomic_add_fetch((int *)user, 1, __ATOMIC_ACQ_REL);
}
static void waiter_cb(void *user, gf_result status)
{
    (void)user;
    S.waiter_status = status;
    __atomic_store_n(&S.waiter_fired, 1, __ATOMIC_RELEASE);
}

static gf_launch_dims dims_1d(unsigned n, unsigned block)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = (n + block - 1) / block; d.grid[1] = d.grid[2] = 1;
    d.block[0] = block; d.block[1] = d.block[2] = 1;
    return d;
}
static gf_result launch_u32(gf_stream *s, gf_kernel *k, gf_buffer *b, uint32_t n, uint32_t v)
{
    gf_arg args[3];
    args[0].value = 0; args[0].size = 0; args[0].buffer = b;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = 0;
    args[2].value = &v; args[2].size = sizeof v; args[2].buffer = 0;
    return gf_launch(s, k, dims_1d(n, 64), args, 3);
}
static int all_bytes(const void *p, size_t n, unsigned char v)
{
    const unsigned char *q = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) if (q[i] != v) return 0;
    return 1;
}
static int all_u32(const void *p, size_t n, uint32_t v)
{
    const unsigned char *q = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, q + 4 * i, 4);
        if (x != v) return 0;
    }
    return 1;
}

/* A flow task: a fill or a copy inside buffer c. */
typedef struct { int copy; size_t dst, src; unsigned char value; } task_arg;
static gf_result task_fn(gf_stream *s, void *user)
{
    const task_arg *t = (const task_arg *)user;
    if (t->copy) return gf_copy_buffer_async(s, S.c, t->dst, S.c, t->src, BUF / 4);
    return gf_fill_async(s, S.c, t->dst, t->value, BUF / 4);
}
static const task_arg task_a = { 0, 0, 0, 1 }, task_b = { 1, BUF / 4, 0, 0 },
                      task_c = { 1, BUF / 2, 0, 0 }, task_d = { 1, 3 * BUF / 4, BUF / 4, 0 };

/* Every time in the report lies within the run: starts at or after the base, spans less.
   0 and what is wrong in report_bad when not. */
static char report_bad[256];
static int report_sane(double run_ms)
{
    int i, k;
    report_bad[0] = 0;
    if (report.span_ms < 0 || report.span_ms > run_ms) {
        snprintf(report_bad, sizeof report_bad, "span %.3f ms in a run of %.3f ms", report.span_ms, run_ms);
        return 0;
    }
    for (i = 0; i < report.stream_count; i++) {
        if (report.streams[i].busy_ms < 0 || report.streams[i].busy_ms > run_ms) {
            snprintf(report_bad, sizeof report_bad, "stream '%s' busy %.3f ms in a run of %.3f ms",
                     report.streams[i].label, report.streams[i].busy_ms, run_ms);
            return 0;
        }
        for (k = 0; k < GF_PROFILE_LONGEST; k++) {
            const gf_profile_op *op = &report.streams[i].longest[k];
            if (!op->name[0]) continue;
            if (op->start_ms < 0 || op->duration_ms < 0 || op->duration_ms > run_ms || op->start_ms > run_ms) {
                snprintf(report_bad, sizeof report_bad, "stream '%s' op '%s' starts at %.3f ms, lasts %.3f ms, in a run of %.3f ms",
                         report.streams[i].label, op->name, op->start_ms, op->duration_ms, run_ms);
                return 0;
            }
        }
    }
    return 1;
}

/* ---- destroys: freed, or kept with a reason ------------------------------------------------- */
static int graph_dead(gf_graph *g)
{
    gf_graph_info info = {0};
    return gf_graph_get_info(g, &info) == GF_ERROR_INVALID_HANDLE;   /* shells stay until close */
}

static void destroy_call(obj_kind kind, void *p)
{
    switch (kind) {
    case OBJ_STREAM: gf_stream_destroy((gf_stream *)p); break;
    case OBJ_BUFFER: gf_buffer_destroy((gf_buffer *)p); break;
    case OBJ_EVENT: gf_event_destroy((gf_event *)p); break;
    case OBJ_EVENT_POOL: gf_event_pool_destroy((gf_event_pool *)p); break;
    case OBJ_STREAM_POOL: gf_stream_pool_destroy((gf_stream_pool *)p); break;
    case OBJ_STREAM_SET: gf_stream_set_destroy((gf_stream_set *)p); break;
    case OBJ_FLOW: gf_flow_destroy((gf_flow *)p); break;
    case OBJ_GRAPH: gf_graph_destroy((gf_graph *)p); break;
    case OBJ_MODULE: gf_module_destroy((gf_module *)p); break;
    case OBJ_HOST: gf_host_free(S.dev, p); break;
    case OBJ_SEMAPHORE: gf_semaphore_destroy((gf_semaphore *)p); break;
    }
}

/* Destroys p; returns 1 when the library freed it. Kept: it must say why. */
static int destroy_once(obj_kind kind, void *p, const char *name, int line)
{
    int freed, said;
    th_prime();
    F.step = name;
    F.line = line;
    __atomic_store_n(&watch_hit, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&watch_ptr, p, __ATOMIC_RELEASE);
    destroy_call(kind, p);
    said = msg_fresh();
    __atomic_store_n(&watch_ptr, (void *)NULL, __ATOMIC_RELEASE);
    F.step = NULL;
    if (kind == OBJ_HOST) return 1;   /* cannot be refused; OpenCL's pinned memory is not a block of ours */
    freed = kind == OBJ_GRAPH ? graph_dead((gf_graph *)p) : __atomic_load_n(&watch_hit, __ATOMIC_ACQUIRE);
    /* a buffer's, module's or semaphore's destroy may retire it instead (its memory or code goes once the
       work queued before it has passed): the handle is dead at once, the object not yet freed,
       so its tag can still be read */
    if (!freed && (kind == OBJ_BUFFER || kind == OBJ_MODULE || kind == OBJ_SEMAPHORE)) freed = *(const uint32_t *)p == GF__T_DEAD;
    if (freed) return 1;
    if (!said) defect(line, "destroy of %s neither freed it nor said why (no gf_last_error)", name);
    else if (!F.injected) defect(line, "destroy of %s kept it with no fault injected: %s", name, gf_last_error());
    return 0;
}
static void destroy_obj(obj_kind kind, void *p, const char *name, int line)
{
    if (!p) return;
    if (!destroy_once(kind, p, name, line) && S.kept_count < 32) {
        S.kept[S.kept_count].kind = kind;
        S.kept[S.kept_count].p = p;
        S.kept[S.kept_count].name = name;
        S.kept_count++;
    }
}
#define DESTROY(kind, field) do { destroy_obj((kind), S.field, "S." #field, __LINE__); S.field = NULL; } while (0)

/* ---- the probe: with faults off, every object the scenario still holds works ---------------- */
static void probe_stream(gf_stream *s, gf_buffer *pb, const char *what, int line)
{
    unsigned char h[256];
    gf_result r1, r2, r3;
    if (!s || !pb) return;
    memset(h, 0, sizeof h);
    r1 = gf_fill_async(s, pb, 0, 0x5c, sizeof h);
    r2 = gf_copy_to_host_async(s, h, pb, 0, sizeof h);
    r3 = gf_stream_synchronize(s);
    if (r1 != GF_OK || r2 != GF_OK || r3 != GF_OK || !all_bytes(h, sizeof h, 0x5c))
        defect(line, "%s is not usable after the fault (faults off): fill %s, copy %s, sync %s: %s", what,
               gf_result_name(r1), gf_result_name(r2), gf_result_name(r3), gf_last_error());
}

static void probe(void)
{
    gf_buffer *pb = NULL;
    unsigned char h[256], back[256];
    gf_buffer *bufs[3];
    const char *names[3] = { "S.a", "S.b", "S.c" };
    gf_stream *ps = NULL;
    int i;
    if (gf_buffer_create(S.dev, 256, &pb) != GF_OK) {
        defect(__LINE__, "the device cannot make a buffer after the fault (faults off): %s", gf_last_error());
        return;
    }
    probe_stream(S.s1, pb, "stream S.s1", __LINE__);
    probe_stream(S.s2, pb, "stream S.s2", __LINE__);
    if (S.set) {
        probe_stream(gf_stream_set_get(S.set, 0), pb, "stream set slot 0", __LINE__);
        probe_stream(gf_stream_set_get(S.set, 1), pb, "stream set slot 1", __LINE__);
    }
    if (S.pool) {
        for (i = 0; i < 2; i++) {
            if (gf_stream_pool_acquire(S.pool, NULL, &ps) != GF_OK) { defect(__LINE__, "pool acquire after the fault: %s", gf_last_error()); break; }
            probe_stream(ps, pb, "a pool stream", __LINE__);
            if (gf_stream_pool_release(S.pool, ps) != GF_OK) defect(__LINE__, "pool release after the fault: %s", gf_last_error());
        }
    }
    bufs[0] = S.a; bufs[1] = S.b; bufs[2] = S.c;
    for (i = 0; i < 3; i++) {
        if (!bufs[i]) continue;
        memset(h, 0x30 + i, sizeof h);
        memset(back, 0, sizeof back);
        if (gf_copy_to_device(bufs[i], 0, h, sizeof h) != GF_OK || gf_copy_to_host(back, bufs[i], 0, sizeof back) != GF_OK ||
            memcmp(h, back, sizeof h) != 0)
            defect(__LINE__, "buffer %s is not usable after the fault (faults off): %s", names[i], gf_last_error());
    }
    if (S.t1 && S.s1 && (gf_event_record(S.t1, S.s1) != GF_OK || gf_event_synchronize(S.t1) != GF_OK))
        defect(__LINE__, "event S.t1 is not usable after the fault (faults off): %s", gf_last_error());
    if (S.kfill && S.s1) {
        memset(back, 0, sizeof back);
        if (launch_u32(S.s1, S.kfill, pb, 64, 0xabcd) != GF_OK || gf_copy_to_host_async(S.s1, back, pb, 0, 256) != GF_OK ||
            gf_stream_synchronize(S.s1) != GF_OK || !all_u32(back, 64, 0xabcd))
            defect(__LINE__, "kernel fill_u32 is not usable after the fault (faults off): %s", gf_last_error());
    }
    {
        gf_kernel *iota[2], *axpy[2];
        iota[0] = S.siota1; iota[1] = S.siota2; axpy[0] = S.saxpy1; axpy[1] = S.saxpy2;
        for (i = 0; i < 2 && S.s1; i++) {
            if (!iota[i] || !axpy[i]) continue;
            memset(back, 0, sizeof back);
            if (launch_u32(S.s1, iota[i], pb, 64, 100) != GF_OK || launch_u32(S.s1, axpy[i], pb, 64, 1) != GF_OK ||
                launch_u32(S.s1, axpy[i], pb, 64, 2) != GF_OK || gf_copy_to_host_async(S.s1, back, pb, 0, 256) != GF_OK ||
                gf_stream_synchronize(S.s1) != GF_OK || !fk_check(back, 64, fk_expect))
                defect(__LINE__, "the kernels of S.smod%d (from source) are not usable after the fault (faults off): %s", i + 1, gf_last_error());
        }
    }
    if (S.g1 && S.s2 && (gf_graph_launch(S.g1, S.s2) != GF_OK || gf_stream_synchronize(S.s2) != GF_OK))
        defect(__LINE__, "graph S.g1 is not usable after the fault (faults off): %s", gf_last_error());
    if (S.flow && S.pool && S.c && (gf_flow_run(S.flow, S.pool) != GF_OK || gf_stream_pool_synchronize(S.pool) != GF_OK))
        defect(__LINE__, "flow S.flow is not usable after the fault (faults off): %s", gf_last_error());
    if (gf_device_synchronize(S.dev) != GF_OK) defect(__LINE__, "device synchronize after the fault (faults off): %s", gf_last_error());
    gf_buffer_destroy(pb);
}

/* ---- loads from dialect source ---------------------------------------------------------------- */

static void note(tally_item *t, int *count, const char *key)
{
    int i;
    for (i = 0; i < *count; i++) if (!strcmp(t[i].name, key)) { t[i].count++; return; }
    if (*count < MAX_TALLY) { copy_name(t[*count].name, sizeof t[0].name, key); t[(*count)++].count = 1; }
}
static void cache_names(char *out, size_t cap)   /* the cache operations injected so far in this run */
{
    size_t used = 0;
    int i;
    out[0] = 0;
    for (i = 0; i < F.name_count && used < cap - 1; i++)
        if (cache_op(F.names[i])) {
            used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? ", " : "", F.names[i]);
            if (used >= cap) used = cap - 1;
        }
}

/* gf_module_load of fk_source through the cache: DO's checks, and a load in which nothing but
   the cache's file operations failed must succeed (compiling instead) and say so in a warning
   (gf_set_logger); such loads are counted by the operations that failed. */
static gf_result source_load(gf_module **out, const char *what, int line)
{
    gf_module_desc d;
    unsigned long cache0 = F.cache_injected, other0 = F.other_injected;
    int warn0 = L.warnings;
    char ops[160];
    gf_result r;
    memset(&d, 0, sizeof d);
    d.source = fk_source;
    d.source_name = "faults_kernels";
    d.build_options = FK_OPTIONS;
    d.cache_dir = cache_dir;
    step_begin(what, line);
    r = step_end(gf_module_load(S.dev, &d, out), 0, line);
    if (F.cache_injected == cache0) return r;
    cache_names(ops, sizeof ops);
    if (r != GF_OK && F.other_injected == other0)
        defect(line, "`%s` returned %s when only the kernel cache's file operations failed in it (%s): a cache it "
               "cannot use must not fail the load (it compiles instead): \"%s\"", what, gf_result_name(r), ops, gf_last_error());
    else if (r == GF_OK && F.other_injected == other0) {
        note(R.cache_ok, &R.cache_ok_count, ops);
        if (L.warnings == warn0)
            defect(line, "`%s` went on past failed kernel cache operations (%s) without a warning", what, ops);
    }
    return r;
}
#define SOURCE_LOAD(field, how) source_load(&S.field, "gf_module_load(S.dev, {fk_source, cache_dir}, &S." #field ") " how, __LINE__)

/* ---- the scenario ----------------------------------------------------------------------------- */
static void scenario_body(void)
{
    gf_stream_desc sd;
    gf_event_pool_desc epd;
    gf_stream_pool_desc pd;
    gf_stream *ps = NULL, *ss = NULL, *pair[2];
    gf_task ta = 0, tb = 0, tc = 0, td = 0;
    uint64_t wid = 0;
    float ms = 0;
    double all_ms = 0;
    int i;
    size_t free_b = 0, total_b = 0;

    /* streams, buffers, pinned host memory */
    sd.label = "s1"; sd.priority = GF_PRIORITY_NORMAL;
    DO(gf_stream_create(S.dev, &sd, &S.s1));
    sd.label = "s2"; sd.priority = GF_PRIORITY_HIGH;
    DO(gf_stream_create(S.dev, &sd, &S.s2));
    DO(gf_buffer_create(S.dev, BUF, &S.a));
    DO(gf_buffer_create(S.dev, BUF, &S.b));
    DO(gf_buffer_create(S.dev, BUF, &S.c));
    DO(gf_host_alloc(S.dev, BUF, &S.pin));
    DO(gf_device_memory_info(S.dev, &free_b, &total_b));

    /* async fills and copies across two streams, ordered by an event */
    DO(gf_event_create(S.dev, GF_EVENT_TIMING, &S.t0));
    DO(gf_event_create(S.dev, GF_EVENT_TIMING, &S.t1));
    DO(gf_event_record(S.t0, S.s1));
    DO(gf_fill_async(S.s1, S.a, 0, 0x11, BUF));
    DO(gf_copy_to_device_async(S.s1, S.b, 0, src_bytes, BUF));
    DO(gf_copy_buffer_async(S.s1, S.a, BUF / 2, S.b, 0, BUF / 2));
    DO(gf_event_record(S.t1, S.s1));
    DO(gf_stream_wait_event(S.s2, S.t1));
    DO(gf_copy_to_host_async(S.s2, S.pin, S.a, 0, BUF));
    DO(gf_stream_add_callback(S.s2, count_cb, &S.callbacks));
    DO(gf_stream_synchronize(S.s2));
    DOQ(gf_event_query(S.t1));
    DOQ(gf_event_elapsed_ms(S.t0, S.t1, &ms));   /* GF_NOT_READY when a fault left them pending */
    DATA(S.pin && all_bytes(S.pin, BUF / 2, 0x11) && memcmp((unsigned char *)S.pin + BUF / 2, src_bytes, BUF / 2) == 0,
         "a = fill 0x11 then b's first half; read back on s2 after s1's event");
    DATA(__atomic_load_n(&S.callbacks, __ATOMIC_ACQUIRE) == 1, "the stream callback ran before the synchronize returned");
    DOQ(gf_stream_query(S.s1));

    /* synchronous copies */
    memset(host, 0, sizeof host);
    DO(gf_copy_to_device(S.c, 0, src_bytes, BUF));
    DO(gf_copy_to_host(host, S.c, 0, BUF));
    DATA(memcmp(host, src_bytes, BUF) == 0, "gf_copy_to_device then gf_copy_to_host round trip");

    /* an event pool, an async waiter, stream joins, a barrier */
    epd.capacity = 2; epd.timing_capacity = 1;
    DO(gf_event_pool_create(S.dev, &epd, &S.ep));
    DO(gf_event_pool_acquire(S.ep, 0, &S.pe));
    DO(gf_fill_async(S.s2, S.b, 0, 0x22, BUF));
    DO(gf_event_record(S.pe, S.s2));
    __atomic_store_n(&S.waiter_fired, 0, __ATOMIC_RELEASE);
    if (DO(gf_event_on_complete(S.pe, waiter_cb, NULL, &wid)) == GF_OK) {
        double end = th_now_ms() + 10000;
        while (!__atomic_load_n(&S.waiter_fired, __ATOMIC_ACQUIRE) && th_now_ms() < end) th_sleep_ms(1);
        if (!__atomic_load_n(&S.waiter_fired, __ATOMIC_ACQUIRE)) {
            defect(__LINE__, "gf_event_on_complete returned GF_OK but its callback did not run within 10 s");
            gf_event_cancel_wait(S.dev, wid);
        }
    }
    DATA(!__atomic_load_n(&S.waiter_fired, __ATOMIC_ACQUIRE) || S.waiter_status == GF_OK, "the event's async waiter ran with GF_OK");
    DO(gf_event_synchronize(S.pe));
    DO(gf_stream_wait_stream(S.s1, S.s2));
    pair[0] = S.s1; pair[1] = S.s2;
    DO(gf_barrier(pair, 2));
    DO(gf_synchronize_all(pair, 2, &all_ms));
    if (DO(gf_event_pool_release(S.ep, S.pe)) == GF_OK) S.pe = NULL;
    memset(host, 0, sizeof host);
    DO(gf_copy_to_host(host, S.b, 0, BUF));
    DATA(all_bytes(host, BUF, 0x22), "b = fill 0x22 on s2, read after the event pool event completed");

    /* kernels */
    DO(gf_module_load(S.dev, &tk_module, &S.mod));
    DO(gf_kernel_get(S.mod, "fill_u32", &S.kfill));
    DO(gf_kernel_get(S.mod, "add_u32", &S.kadd));
    DO(launch_u32(S.s1, S.kfill, S.c, N32, 3));
    DO(launch_u32(S.s1, S.kadd, S.c, N32, 4));
    DO(gf_copy_to_host_async(S.s1, S.pin, S.c, 0, BUF));
    DO(gf_stream_synchronize(S.s1));
    DATA(S.pin && all_u32(S.pin, N32, 7), "c = fill_u32 3 then add_u32 4");

    /* kernels from dialect source, where the device compiles it (the stub runs C): the first
       load compiles and writes the cache, the second is a hit; both modules' kernels run */
    if (S.backend != GF_BACKEND_STUB) {
        int hits0;
        SOURCE_LOAD(smod1, "(compiles, writes the cache)");
        if (!F.injected) {
            int bins = cache_files(".bin", NULL, 0), tmps = cache_files(".tmp", NULL, 0);
            if (bins != 1 || tmps)
                defect(__LINE__, "after a first load from source, no fault injected, %s holds %d entr%s and %d temporary "
                       "file%s (1 and 0 expected)", cache_dir, bins, bins == 1 ? "y" : "ies", tmps, tmps == 1 ? "" : "s");
        }
        hits0 = L.hits;
        SOURCE_LOAD(smod2, "(a cache hit)");
        if (!F.injected && L.hits == hits0)
            defect(__LINE__, "the second load of the same source, options and device was not a cache hit (%s)", cache_dir);
        DO(gf_kernel_get(S.smod1, "fk_iota", &S.siota1));
        DO(gf_kernel_get(S.smod1, "fk_axpy", &S.saxpy1));
        DO(gf_kernel_get(S.smod2, "fk_iota", &S.siota2));
        DO(gf_kernel_get(S.smod2, "fk_axpy", &S.saxpy2));
        DO(launch_u32(S.s1, S.siota1, S.c, N32, 100));
        DO(launch_u32(S.s1, S.saxpy2, S.c, N32, 1));
        DO(launch_u32(S.s1, S.saxpy1, S.c, N32, 2));
        DO(launch_u32(S.s1, S.siota2, S.b, N32, 0x10000));
        DO(gf_copy_to_host_async(S.s1, S.pin, S.c, 0, BUF));
        memset(host, 0, sizeof host);
        DO(gf_copy_to_host_async(S.s1, host, S.b, 0, BUF));
        DO(gf_stream_synchronize(S.s1));
        DATA(S.pin && fk_check((const unsigned char *)S.pin, N32, fk_expect),
             "c = fk_iota 100 (compiled), fk_axpy 1 (cached), fk_axpy 2 (compiled); FK_MUL 3 from the build options");
        DATA(fk_check(host, N32, fk_iota_5), "b = fk_iota 0x10000 (cached)");
    }

    /* the profiler, from here on */
    DO(gf_profiler_enable(S.dev, GF_PROFILE_ON));

    /* a stream pool (measuring completion: events and the waiter thread) */
    memset(&pd, 0, sizeof pd);
    pd.count = 2; pd.strategy = GF_POOL_ROUND_ROBIN; pd.label = "pool"; pd.measure_completion = 1;
    DO(gf_stream_pool_create(S.dev, &pd, &S.pool));
    if (DO(gf_stream_pool_acquire(S.pool, NULL, &ps)) == GF_OK) {
        DO(gf_fill_async(ps, S.b, 0, 0x44, BUF));
        DO(gf_stream_pool_release(S.pool, ps));
    }
    DO(gf_stream_pool_synchronize(S.pool));
    if (DOQ(gf_stream_pool_acquire_ready(S.pool, 50, &ps)) == GF_OK) DO(gf_stream_pool_release(S.pool, ps));

    /* a stream set: next(2) waits for slot 0's first round */
    DO(gf_stream_set_create(S.dev, 2, "set", &S.set));
    for (i = 0; i < 3; i++) {
        ss = NULL;
        DO(gf_stream_set_next(S.set, (size_t)i, &ss));
        DO(gf_fill_async(ss, S.a, (size_t)(i % 2) * (BUF / 2), (unsigned char)(0x50 + i), BUF / 2));
    }
    DO(gf_stream_set_synchronize(S.set));
    memset(host, 0, sizeof host);
    DO(gf_copy_to_host(host, S.a, 0, BUF));
    DATA(all_bytes(host, BUF / 2, 0x52) && all_bytes(host + BUF / 2, BUF / 2, 0x51), "a = the stream set's fills, slot 0 twice");

    /* a flow: A -> B, A -> C (another stream: an event), B -> D, C -> D; run over the pool */
    DO(gf_fill_async(S.s1, S.c, 0, 0, BUF));
    DO(gf_stream_synchronize(S.s1));
    DO(gf_flow_create(S.dev, NULL, &S.flow));
    DO(gf_flow_add(S.flow, "A", task_fn, (void *)&task_a, &ta));
    DO(gf_flow_add(S.flow, "B", task_fn, (void *)&task_b, &tb));
    DO(gf_flow_add(S.flow, "C", task_fn, (void *)&task_c, &tc));
    DO(gf_flow_add(S.flow, "D", task_fn, (void *)&task_d, &td));
    DO(gf_flow_depend(S.flow, ta, tb));
    DO(gf_flow_depend(S.flow, ta, tc));
    DO(gf_flow_depend(S.flow, tb, td));
    DO(gf_flow_depend(S.flow, tc, td));
    DO(gf_flow_run(S.flow, S.pool));
    DO(gf_stream_pool_synchronize(S.pool));
    memset(host, 0, sizeof host);
    DO(gf_copy_to_host(host, S.c, 0, BUF));
    DATA(all_bytes(host, BUF, 1), "c = the flow's fill and copies (run over the pool)");
    /* ... and captured into a graph */
    DO(gf_fill_async(S.s1, S.c, 0, 0, BUF));
    DO(gf_flow_capture(S.flow, S.s1, &S.gflow));
    DO(gf_graph_launch(S.gflow, S.s1));
    DO(gf_stream_synchronize(S.s1));
    memset(host, 0, sizeof host);
    DO(gf_copy_to_host(host, S.c, 0, BUF));
    DATA(all_bytes(host, BUF, 1), "c = the flow's graph, launched after a fill of 0");

    /* captures: two of one shape, launch, update, launch */
    if (DO(gf_stream_begin_capture(S.s2, GF_CAPTURE_GLOBAL)) == GF_OK) {
        DO(launch_u32(S.s2, S.kfill, S.b, N32, 5));
        DO(launch_u32(S.s2, S.kadd, S.b, N32, 1));
        DO(gf_stream_add_callback(S.s2, count_cb, &S.callbacks));
        DO(gf_fill_async(S.s2, S.a, 0, 0x66, 64));
        DO(gf_stream_end_capture(S.s2, &S.g1));
    }
    if (DO(gf_stream_begin_capture(S.s2, GF_CAPTURE_GLOBAL)) == GF_OK) {
        DO(launch_u32(S.s2, S.kfill, S.b, N32, 7));
        DO(launch_u32(S.s2, S.kadd, S.b, N32, 2));
        DO(gf_stream_add_callback(S.s2, count_cb, &S.callbacks));
        DO(gf_fill_async(S.s2, S.a, 0, 0x77, 64));
        DO(gf_stream_end_capture(S.s2, &S.g2));
    }
    DO(gf_graph_launch(S.g1, S.s2));
    DO(gf_copy_to_host_async(S.s2, S.pin, S.b, 0, BUF));
    DO(gf_stream_synchronize(S.s2));
    DATA(S.pin && all_u32(S.pin, N32, 6), "b = graph g1 (fill_u32 5, add_u32 1)");
    DO(gf_graph_update(S.g1, S.g2));
    DO(gf_graph_launch(S.g1, S.s2));
    DO(gf_copy_to_host_async(S.s2, S.pin, S.b, 0, BUF));
    DO(gf_copy_to_host_async(S.s2, host, S.a, 0, 64));
    DO(gf_stream_synchronize(S.s2));
    DATA(S.pin && all_u32(S.pin, N32, 9) && all_bytes(host, 64, 0x77), "b, a = graph g1 updated from g2 (fill_u32 7, add_u32 2, fill 0x77)");
    DATA(__atomic_load_n(&S.callbacks, __ATOMIC_ACQUIRE) == 3, "stream callback + two graph callbacks ran");

    /* stream-ordered allocation: a block, freed, then reused from the cache */
    DO(gf_buffer_create_async(S.s2, 512, &S.ab));
    DO(gf_fill_async(S.s2, S.ab, 0, 0x33, 512));
    DO(gf_copy_to_host_async(S.s2, S.pin, S.ab, 0, 512));
    if (DO(gf_buffer_destroy_async(S.s2, S.ab)) == GF_OK) S.ab = NULL;
    DO(gf_buffer_create_async(S.s2, 400, &S.ab2));
    DO(gf_fill_async(S.s2, S.ab2, 0, 0x34, 400));
    if (DO(gf_buffer_destroy_async(S.s2, S.ab2)) == GF_OK) S.ab2 = NULL;
    DO(gf_stream_synchronize(S.s2));
    DATA(S.pin && all_bytes(S.pin, 512, 0x33), "a stream-ordered buffer: fill 0x33, read back before its free");

    /* interop (the stub's host fds): an exportable buffer exported and imported again, a
       semaphore exported, imported again and signalled through one handle, waited through the other */
    if (S.backend == GF_BACKEND_STUB) {
        gf_buffer_desc xd;
        gf_external_handle h = { GF_EXTERNAL_NONE, -1, NULL, 0 };
        gf_external_memory_desc md;
        gf_semaphore_desc smd;
        memset(&xd, 0, sizeof xd);
        xd.size = BUF;
        xd.exportable = 1;
        if (DO(gf_buffer_create_desc(S.dev, &xd, &S.xb)) == GF_OK && DO(gf_buffer_export(S.xb, GF_EXTERNAL_HOST_FD, &h)) == GF_OK) {
            memset(&md, 0, sizeof md);
            md.type = GF_EXTERNAL_HOST_FD; md.fd = h.fd; md.size = h.size;
            DO(gf_buffer_import(S.dev, &md, &S.xi));
            close(h.fd);
        }
        h.fd = -1;
        if (DO(gf_semaphore_create(S.dev, 1, &S.sem)) == GF_OK && DO(gf_semaphore_export(S.sem, GF_EXTERNAL_HOST_FD, &h)) == GF_OK) {
            memset(&smd, 0, sizeof smd);
            smd.type = GF_EXTERNAL_HOST_FD; smd.fd = h.fd; smd.timeline = 1;
            DO(gf_semaphore_import(S.dev, &smd, &S.sem2));
            close(h.fd);
        }
        if (S.xb) DO(gf_fill_async(S.s1, S.xb, 0, 0x5e, BUF));
        /* a wait only behind a signal that was enqueued: else it would wait for ever */
        if (S.sem && DO(gf_semaphore_signal_async(S.s1, S.sem, 1)) == GF_OK && S.sem2)
            DO(gf_semaphore_wait_async(S.s2, S.sem2, 1));
        if (S.xi) DO(gf_copy_to_host_async(S.s2, S.pin, S.xi, 0, BUF));
        DO(gf_stream_synchronize(S.s1));
        DO(gf_stream_synchronize(S.s2));
        DATA(S.pin && all_bytes(S.pin, BUF, 0x5e), "interop: a fill of the exported buffer, read through its import after the semaphore");
    }

    /* the profiler's report and trace */
    memset(&report, 0, sizeof report);
    DO(gf_profiler_report(S.dev, &report));
    DATA(report.total_ops > 0 && report.stream_count > 0, "the profiler report counts the operations since enable");
    if (!R.failed_calls && !report_sane(th_now_ms() - S.t_open))
        defect(__LINE__, "data check failed after every call returned GF_OK: the profiler's times lie within the run: %s", report_bad);
    DO(gf_profiler_write_trace(S.dev, S.trace_path));
    remove(S.trace_path);

    DO(gf_device_synchronize(S.dev));
}

static void scenario_cleanup(void)
{
    int i, kept;
    DESTROY(OBJ_GRAPH, g1);
    DESTROY(OBJ_GRAPH, g2);
    DESTROY(OBJ_GRAPH, gflow);
    DESTROY(OBJ_FLOW, flow);
    DESTROY(OBJ_STREAM_SET, set);
    DESTROY(OBJ_STREAM_POOL, pool);
    if (S.pe && S.ep) { if (DO(gf_event_pool_release(S.ep, S.pe)) == GF_OK) S.pe = NULL; }
    DESTROY(OBJ_EVENT_POOL, ep);
    S.pe = NULL;                     /* the pool's destroy frees its events */
    DESTROY(OBJ_EVENT, t0);
    DESTROY(OBJ_EVENT, t1);
    DESTROY(OBJ_MODULE, mod);
    S.kfill = S.kadd = NULL;
    DESTROY(OBJ_MODULE, smod1);
    DESTROY(OBJ_MODULE, smod2);
    S.siota1 = S.saxpy1 = S.siota2 = S.saxpy2 = NULL;
    DESTROY(OBJ_SEMAPHORE, sem2);
    DESTROY(OBJ_SEMAPHORE, sem);
    DESTROY(OBJ_BUFFER, xi);
    DESTROY(OBJ_BUFFER, xb);
    DESTROY(OBJ_BUFFER, ab2);
    DESTROY(OBJ_BUFFER, ab);
    DESTROY(OBJ_BUFFER, a);
    DESTROY(OBJ_BUFFER, b);
    DESTROY(OBJ_BUFFER, c);
    DESTROY(OBJ_HOST, pin);
    DESTROY(OBJ_STREAM, s1);
    DESTROY(OBJ_STREAM, s2);

    /* What a fault made the library keep, the program frees once the faults stop. */
    kept = S.kept_count;
    if (kept) { R.kept_runs++; R.kept_objects += (unsigned long)kept; }
    if (kept && !R.no_recovery) {
        int armed = F.armed;
        F.armed = 0;
        F.phase = "destroying what was kept (faults off)";
        for (i = 0; i < S.kept_count; i++)
            if (!destroy_once(S.kept[i].kind, S.kept[i].p, S.kept[i].name, __LINE__))
                defect(__LINE__, "%s is still kept when destroyed again with faults off: %s", S.kept[i].name, gf_last_error());
        F.armed = armed;
    }
    S.kept_count = 0;

    F.phase = "gf_device_close";
    th_prime();
    F.step = "gf_device_close(S.dev)";
    F.line = __LINE__;
    gf_device_close(S.dev);
    F.step = NULL;
    S.dev = NULL;
}

/* One run: open, the scenario, the probe (after a fault), cleanup, close, the leak check. */
static void run_once(gf_backend b)
{
    int pending_probe;
    memset(&S, 0, sizeof S);
    S.backend = b;
    snprintf(S.trace_path, sizeof S.trace_path, "%s/gpuflow-faults-%ld.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    S.t_open = th_now_ms();
    R.defects = 0;
    R.failed_calls = 0;
    R.first_checked = 0;
    if (b != GF_BACKEND_STUB && tree_remove(cache_dir, 0) != 0)
        defect(__LINE__, "cannot empty the kernel cache directory %s before the run", cache_dir);
    F.armed = 1;
    F.phase = "the scenario";
    if (DO(gf_device_open(b, 0, &S.dev)) == GF_OK) {
        scenario_body();
        pending_probe = F.injected > 0;
        if (pending_probe) {
            F.armed = 0;
            F.phase = "the probe (faults off)";
            probe();
            F.armed = 1;
        }
        F.phase = "cleanup";
        scenario_cleanup();
    }
    F.armed = 0;
    if (b != GF_BACKEND_STUB) {
        /* a cache write that failed removes its temporary file (unless that remove failed too) */
        char tmp[256];
        int i, removes = 0;
        for (i = 0; i < F.name_count; i++) if (!strcmp(F.names[i], "remove")) removes = 1;
        if (cache_files(".tmp", tmp, sizeof tmp) && !removes)
            defect(__LINE__, "a temporary kernel cache file is left behind in %s: %s", cache_dir, tmp);
        tree_remove(cache_dir, 0);
    }
    F.phase = "the leak check";
}

/* Blocks allocated through GPUFLOW_MALLOC and not freed since the last check. */
static void leak_check(void)
{
    blk *b, *next;
    long n = 0, shown = 0;
    size_t bytes = 0;
    char list[900];
    size_t used = 0;
    list[0] = 0;
    pthread_mutex_lock(&blk_lock);
    for (b = blk_head.next; b != &blk_head; b = next) {
        next = b->next;
        /* detached, so that LeakSanitizer, too, sees it unreferenced (if the library lost it) */
        b->prev->next = b->next; b->next->prev = b->prev;
        b->prev = b->next = b;
        blk_live--;
        n++;
        bytes += b->size;
        if (shown < 6 && used < sizeof list - 1) {
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%lu bytes from `%s` (line %d)",
                                     shown ? "; " : "", (unsigned long)b->size, b->step ? b->step : "(outside a step)", b->line);
            if (used >= sizeof list) used = sizeof list - 1;
            shown++;
        }
    }
    pthread_mutex_unlock(&blk_lock);
    if (n) defect(__LINE__, "leak: %ld block%s (%lu bytes) the library allocated are not freed after gf_device_close: %s%s",
                  n, n == 1 ? "" : "s", (unsigned long)bytes, list, n > shown ? "; ..." : "");
}

/* ---- the watchdog: a run that does not end is a hang, reported with its N ------------------ */
static double run_limit_ms = 20000;
static uint64_t run_started;        /* atomic: ms at the run's start; 0 when no run is in progress */
static char run_desc[200];

/* What the run was doing, for a hang or crash report. */
static void run_state(char *out, size_t cap)
{
    const char *step = F.step;
    if (F.injected)
        snprintf(out, cap, "%s, first injected: %s during `%s` (line %d); now in %s%s%s%s", run_desc, F.first_name,
                 F.first_step ? F.first_step : "(between steps)", F.first_line, F.phase ? F.phase : "?",
                 step ? ", `" : "", step ? step : "", step ? "`" : "");
    else
        snprintf(out, cap, "%s, nothing injected yet; now in %s%s%s%s", run_desc, F.phase ? F.phase : "?",
                 step ? ", `" : "", step ? step : "", step ? "`" : "");
}

static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        uint64_t t0 = __atomic_load_n(&run_started, __ATOMIC_ACQUIRE);
        if (t0 > 0 && th_now_ms() - (double)t0 > run_limit_ms) {
            char state[1024];
            run_state(state, sizeof state);
            printf("FAIL faults %s: the run did not finish within %.0f s (a hang); stopping\n", state, run_limit_ms / 1000);
            printf("     reproduce: %s %s %s --%s --only %lu\n", R.argv0, R.mode, R.backend_name, R.how, R.n);
            printf("%d passed, %d failed\n", th_passed, th_failed + 1);
            fflush(stdout);
            cache_base_remove();
            _exit(1);
        }
        th_sleep_ms(100);
    }
    return NULL;
}

/* A crash: say which run it was (under the sanitizers, after their report). */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));
static void crash_report(const char *why)
{
    char state[1024], line[1400];
    int n;
    if (!__atomic_load_n(&run_started, __ATOMIC_ACQUIRE))   /* between runs: LeakSanitizer at exit, say */
        n = snprintf(line, sizeof line, "FAIL faults %s %s: %s, outside any run (a leak at exit is also reported by the "
                     "run that made it, as `leak:` above)\n%d passed, %d failed\n", R.mode ? R.mode : "", R.backend_name ? R.backend_name : "",
                     why, th_passed, th_failed + 1);
    else {
        run_state(state, sizeof state);
        n = snprintf(line, sizeof line, "FAIL faults %s: %s\n     reproduce: %s %s %s --%s --only %lu\n%d passed, %d failed\n",
                     state, why, R.argv0, R.mode, R.backend_name, R.how ? R.how : "once", R.n, th_passed, th_failed + 1);
    }
    fflush(stdout);
    if (n > 0 && write(1, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0) {}
}
static void on_sanitizer_death(void)
{
    crash_report("the sanitizer stopped the program (its report is above)");
    cache_base_remove();   /* (not from a signal handler: opendir allocates) */
}
static void on_signal(int sig)
{
    char why[64];
    snprintf(why, sizeof why, "crashed with signal %d", sig);
    crash_report(why);
    signal(sig, SIG_DFL);
    raise(sig);
}
static void crash_handlers(void)
{
    if (__sanitizer_set_death_callback) { __sanitizer_set_death_callback(on_sanitizer_death); return; }
    signal(SIGSEGV, on_signal);
    signal(SIGBUS, on_signal);
    signal(SIGABRT, on_signal);
    signal(SIGFPE, on_signal);
    signal(SIGILL, on_signal);
}

/* ---- the loop ------------------------------------------------------------------------------- */
static void absorbed_note(void)
{
    int i;
    char key[160];
    snprintf(key, sizeof key, "%s%s", F.first_name, F.injected > 1 ? " (+later)" : "");
    R.absorbed_runs++;
    for (i = 0; i < R.absorbed_count; i++)
        if (!strcmp(R.absorbed[i].name, key)) { R.absorbed[i].count++; return; }
    if (R.absorbed_count < MAX_TALLY) {
        copy_name(R.absorbed[R.absorbed_count].name, sizeof R.absorbed[0].name, key);
        R.absorbed[R.absorbed_count++].count = 1;
    }
}

static void one(gf_backend b, int kind, unsigned long n, int from)
{
    int defects_before = R.defects_total;
    double t0 = th_now_ms();
    memset(F.calls, 0, sizeof F.calls);
    F.kind = kind;
    F.fail_at = n;
    F.from = from;
    F.injected = 0;
    F.first_name[0] = 0;
    F.first_step = NULL;
    F.first_line = 0;
    F.name_count = 0;
    F.cache_injected = F.other_injected = 0;
    R.n = n;
    R.how = n == 0 ? "count" : from ? "from" : "once";
    snprintf(run_desc, sizeof run_desc, "%s %s %s N=%lu", R.mode, R.backend_name, R.how, n);
    __atomic_store_n(&run_started, (uint64_t)t0 + 1, __ATOMIC_RELEASE);
    run_once(b);
    leak_check();
    __atomic_store_n(&run_started, (uint64_t)0, __ATOMIC_RELEASE);
    if (n && !F.injected)
        printf("notice: %s: call %lu was never reached (the scenario made %lu %s calls this time)\n",
               run_desc, n, F.calls[kind], kind_names[kind]);
    if (F.injected && !R.failed_calls) absorbed_note();
    if (R.verbose)
        printf("   %s: %s%s, %d failed call%s, %lu %s calls, %d defect%s, %.1f ms\n", run_desc,
               F.injected ? "injected " : "nothing injected", F.injected ? F.first_name : "", R.failed_calls,
               R.failed_calls == 1 ? "" : "s", F.calls[kind], kind_names[kind], R.defects_total - defects_before,
               R.defects_total - defects_before == 1 ? "" : "s", th_now_ms() - t0);
    if (R.defects_total == defects_before) th_record(1, __FILE__, __LINE__, run_desc, "");
}

static unsigned long opt_ul(const char *s)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    return *end ? 0 : v;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *bname = NULL, *env;
    gf_backend b = GF_BACKEND_STUB;
    int kind, i, want_once = 1, want_from = 1, all = 0, pass;
    unsigned long only = 0, every = 0, total, budget, n;
    unsigned char *pick = NULL;
    pthread_t wd;
    double t_start;

    setvbuf(stdout, NULL, _IOLBF, 0);
    faults_main = 1;
    memset(&R, 0, sizeof R);
    if (!strcmp(mode, "alloc")) kind = K_ALLOC;
    else if (!strcmp(mode, "slots")) kind = K_SLOT;
    else if (!strcmp(mode, "entries")) kind = K_ENTRY;
    else kind = -1;
    for (i = 2; kind >= 0 && i < argc; i++) {
        const char *named = th_backend_named(argv[i], &b);
        if (named) { bname = named; continue; }
        if (!strcmp(argv[i], "--once")) { want_once = 1; want_from = 0; }
        else if (!strcmp(argv[i], "--from")) { want_from = 1; want_once = 0; }
        else if (!strcmp(argv[i], "--all")) all = 1;
        else if (!strcmp(argv[i], "-v")) R.verbose = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc && (only = opt_ul(argv[i + 1])) != 0) i++;
        else if (!strcmp(argv[i], "--every") && i + 1 < argc && (every = opt_ul(argv[i + 1])) != 0) i++;
        else kind = -1;
    }
    if (kind == K_ALLOC && !bname) bname = "stub";
    if (kind < 0 || !bname || (kind == K_ENTRY && b == GF_BACKEND_STUB)) {
        fprintf(stderr, "usage: %s alloc [BACKEND] | slots BACKEND | entries BACKEND (not stub)\n"
                        "          [--once|--from] [--only N] [--every K] [--all] [-v]\n"
                        "       BACKEND: %s (alloc: stub if none)\n", argv[0], th_backend_choices());
        return 2;
    }
    R.argv0 = argv[0];
    R.mode = mode;
    R.backend_name = bname;
    env = getenv("FAULTS_NO_RECOVERY");
    R.no_recovery = env && atoi(env) != 0;
    if ((env = getenv("FAULTS_PRINT")) != NULL && atoi(env) > 0) max_printed = atoi(env);
    if ((env = getenv("FAULTS_RUN_LIMIT_S")) != NULL && atof(env) > 0) run_limit_ms = atof(env) * 1000;
    for (i = 0; i < BUF; i++) src_bytes[i] = (unsigned char)(i * 7 + 3);
    th_prime();

    /* The driver loads once per process: before the loop, so every run starts alike. */
    if (!gf_backend_available(b)) {
        printf("notice: faults %s %s skipped: %s\n", mode, bname, gf_last_error());
        SKIP("backend not compiled in or its driver is missing");
        return th_finish();
    }
    {
        gf_device *d = NULL;
        if (gf_device_open(b, 0, &d) != GF_OK) {
            printf("notice: faults %s %s skipped: %s\n", mode, bname, gf_last_error());
            SKIP("no device");
            return th_finish();
        }
        gf_device_close(d);
        leak_check();   /* nothing of the library's is allocated between runs */
    }
    if (b != GF_BACKEND_STUB) {   /* the backends that compile dialect source: its kernel cache */
        snprintf(cache_base, sizeof cache_base, "%s/gpuflow-faults-cache-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(cache_base)) {
            printf("faults: cannot make a directory %s: %s\n", cache_base, strerror(errno));
            return 1;
        }
        atexit(cache_base_remove);
        snprintf(cache_dir, sizeof cache_dir, "%s/kernels", cache_base);
    }
    gf_set_logger(faults_logger, NULL);
    crash_handlers();
    pthread_create(&wd, NULL, watchdog, NULL);
    pthread_detach(wd);

    /* The counting run: nothing fails; every call must succeed and every data check hold. */
    t_start = th_now_ms();
    F.tally_on = 1;
    one(b, kind, 0, 0);
    F.tally_on = 0;
    total = F.calls[kind];
    printf("faults %s %s: the scenario made %lu allocations, %lu slot calls, %lu entry-point calls (%.1f ms)\n",
           mode, bname, F.calls[K_ALLOC], F.calls[K_SLOT], F.calls[K_ENTRY], th_now_ms() - t_start);
    if ((kind != K_ALLOC || R.verbose) && F.tally_count) {
        char line[8192];
        size_t used = 0;
        for (i = 0; i < F.tally_count && used < sizeof line - 1; i++) {
            used += (size_t)snprintf(line + used, sizeof line - used, kind == K_ALLOC ? "%s`%s` x%lu" : "%s%s x%lu",
                                     i ? ", " : "", F.tally[i].name, F.tally[i].count);
            if (used >= sizeof line) used = sizeof line - 1;
        }
        printf("   %s calls%s: %s\n", kind_names[kind], kind == K_ALLOC ? " by step" : "", line);
    }
    if (total == 0) {
        printf("notice: faults %s %s: the scenario made no %s calls: nothing to fail%s\n", mode, bname, kind_names[kind],
               kind == K_ENTRY ? " (the backend does not ask gpuflow_fault_hit yet)" : "");
        SKIP("no calls of this kind to fail");
        return th_finish();
    }

    /* The loop: every N up to the budget; beyond it a sample: every K-th N, the first call of
       each slot / entry point / allocating step, and the last call (or --every / --all). */
    budget = b == GF_BACKEND_STUB ? 600 : 80;   /* runs per kind: a driver's device open costs ~50-300 ms */
    if ((env = getenv("FAULTS_BUDGET")) != NULL && atol(env) > 0) budget = (unsigned long)atol(env);
    if (!every) every = all || total <= budget ? 1 : (total + budget - 1) / budget;
    if (!(pick = (unsigned char *)calloc(total + 1, 1))) { printf("faults: out of memory\n"); return 1; }
    for (n = 1; n <= total; n += every) pick[n] = 1;
    for (i = 0; i < F.tally_count; i++) if (F.tally[i].first >= 1 && F.tally[i].first <= total) pick[F.tally[i].first] = 1;
    pick[total] = 1;
    for (pass = 0; pass < 2; pass++) {
        int from = pass == 1;
        unsigned long runs = 0;
        int defects_before = R.defects_total;
        double t0 = th_now_ms();
        if (from ? !want_from : !want_once) continue;
        R.printed = 0;
        R.absorbed_runs = 0;
        R.absorbed_count = 0;
        R.kept_runs = R.kept_objects = 0;
        R.cache_ok_count = 0;
        if (only) {
            one(b, kind, only, from);
            runs = 1;
        } else {
            for (n = 1; n <= total; n++) if (pick[n]) { one(b, kind, n, from); runs++; }
        }
        printf("faults %s %s %s: N = %lu..%lu%s: %lu run%s, %d defect%s, %.1f s\n", mode, bname,
               from ? "from N on" : "once", only ? only : 1, only ? only : total,
               every > 1 && !only ? " (sampled)" : "", runs, runs == 1 ? "" : "s",
               R.defects_total - defects_before, R.defects_total - defects_before == 1 ? "" : "s",
               (th_now_ms() - t0) / 1000);
        if (every > 1 && !only)
            printf("   sampled: every %lu-th N of %lu, the first call of each %s%s, and the last; `%s %s %s --all` runs every N\n",
                   every, total, kind == K_ALLOC ? "allocating step" : kind_names[kind], kind == K_ALLOC ? "" : " name",
                   argv[0], mode, bname);
        if (R.kept_runs)
            printf("   destroys refused under the fault (the object kept, with a message): %lu in %lu run%s; %s\n",
                   R.kept_objects, R.kept_runs, R.kept_runs == 1 ? "" : "s",
                   R.no_recovery ? "not retried (FAULTS_NO_RECOVERY)" : "each destroyed again once the faults stopped");
        if (R.absorbed_runs) {
            char line[4096];
            size_t used = 0;
            for (i = 0; i < R.absorbed_count && used < sizeof line - 1; i++) {
                used += (size_t)snprintf(line + used, sizeof line - used, "%s%s x%lu", i ? ", " : "", R.absorbed[i].name, R.absorbed[i].count);
                if (used >= sizeof line) used = sizeof line - 1;
            }
            printf("   absorbed (a fault was injected, no call reported one, the data checks held) in %lu run%s: %s\n",
                   R.absorbed_runs, R.absorbed_runs == 1 ? "" : "s", line);
        }
        if (R.cache_ok_count) {
            char line[2048];
            size_t used = 0;
            for (i = 0; i < R.cache_ok_count && used < sizeof line - 1; i++) {
                used += (size_t)snprintf(line + used, sizeof line - used, "%s%s x%lu", i ? ", " : "", R.cache_ok[i].name,
                                         R.cache_ok[i].count);
                if (used >= sizeof line) used = sizeof line - 1;
            }
            printf("   loads from source that went on past failed kernel cache operations (GF_OK, a warning, data checked): %s\n", line);
        }
    }
    free(pick);
    return th_finish();
}
