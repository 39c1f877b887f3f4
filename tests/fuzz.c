/* Fuzz target: gpuflow's public API on the stub backend, driven by bytes.

   An input is a sequence of 16-byte records. A record's first byte picks an API call, the
   other 15 pick its arguments: a live object, NULL, or an object of another type; sizes and
   offsets that are small and valid, exactly at a buffer's end, zero, one past it or near
   SIZE_MAX; enum values out of range; capture misuse (begin twice, end on a stream that is not
   capturing, a synchronize inside a capture); flow edges that close cycles; double releases.
   The calls cover devices, buffers (views, wrapped host memory, stream-ordered ones), copies
   and fills (2D, 16/32-bit), streams, events and waiters, event and stream pools, stream sets,
   barriers, flows, captures, graphs and graph pools, stub kernels (block barriers and atomics
   included, launches at and past the device's limits), the profiler, memory accounting and
   limits, native handles, the race checker and the state dump; op_oom runs
   another call while gpuflow's allocations fail (gf_set_allocator). At most a few objects of
   each kind are live at once, and everything is destroyed and the devices closed at the end
   of each input, so inputs are independent and leaks show.

   The oracle, besides crashes, sanitizer reports and hangs (abort() with a message):
   - a call that fails (< 0) leaves a fresh, non-empty gf_last_error() text (the text is primed
     with a sentinel before each call, as tests/harness.h does);
   - a call given an argument the fuzzer built to be bad does not succeed, and returns the
     contract's code where it is clear: INVALID_HANDLE for NULL and wrong-type handles,
     OUT_OF_RANGE for ranges past a buffer's end (offset + size overflowing included),
     INVALID_ARGUMENT for zero sizes, NULL out-pointers and out-of-range enums, WRONG_DEVICE,
     CYCLE, CAPTURE, INVALID_STATE for double releases;
   - a void call (destroy, close) given a bad handle sets the error text; every destroy at the
     end of an input succeeds (sets no error text);
   - every failure reaches the logger (gf_set_logger), at GF_LOG_ERROR, with the same text;
   - the results that can be checked cheaply are: sizes of new buffers and views, a view's
     native handle, memory statistics that add up, a limit that shows, stats of pools, plain
     gf_stub_atomic calls, and what a barrier or atomics kernel leaves in a new buffer (the
     host computes the same);
   - a refused gf_graph_capture never ran its function nor touched the stream's capture;
   - a kernel whose barriers diverge (misuse) fails its stream with GF_ERROR_DRIVER, and only
     that stream, which keeps the failure.

   The fuzzer keeps itself memory-safe, so that what the sanitizers find is the library's: it
   never uses a handle after destroying it (a destroyed graph only within the same call, while
   its shell is known to be unused); host memory given to async copies is static scratch, or a
   pinned allocation that is freed only after the devices are synchronized; a recorded graph is
   not launched once a buffer, pinned allocation or module that was live while it was captured
   is gone (it is "stale": its commands may point at freed memory, by the user's fault); stub
   kernels are launched with the arguments they declare and an element count within the buffer,
   and a kernel with misused barriers only on a stream of its own.
   Two facts the public API does not give are read from the implementation (fz_graph_owned,
   fz_capture_role): whether a buffer belongs to a graph, and whether a stream is capturing.

   Builds (see the Makefile's fuzz and test targets):
     clang -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined tests/fuzz.c -o fuzz -pthread -ldl
         ./fuzz -max_total_time=60 CORPUS_DIR tests/fuzz_corpus
     cc -std=c99 -DFUZZ_REPLAY tests/fuzz.c -o fuzz_replay -pthread -ldl   (no libFuzzer)
         ./fuzz_replay DIR|FILE...      runs each input once; prints `N passed, 0 failed`
         ./fuzz_replay --generate DIR   writes the seed corpus (tests/fuzz_corpus)
     sh tests/fuzz_coverage.sh BUILD [CORPUS]   the lines and functions of gpuflow.h that the corpus
         (and CORPUS, e.g. build/fuzz_corpus) reaches: clang source-based coverage of fuzz_replay
   Environment: FUZZ_TRACE=1 prints every call, the handles picked and the result (to read a
   reproducer). A library defect that is known and not fixed yet is steered around at one place
   marked with its name (KDn); there are none at present (KD1-KD7 are fixed, each with a test).
   One thing the oracle does not model: a stub stream that fails on its own, as a kernel with
   barriers does when its fiber stacks cannot be allocated (GF_ERROR_OUT_OF_MEMORY, kept by the
   stream). So op_oom first waits for queued barrier kernels and starts none itself. */
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_STUB_MEMORY ((uint64_t)64 << 20)   /* small: out-of-memory is reachable */
#include "../gpuflow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#ifdef FUZZ_REPLAY
#  include <dirent.h>
#  include <sys/stat.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- limits ------------------------------------------------------------------------------ */
#define FZ_REC      16          /* bytes per call: the op, then its arguments */
#define FZ_MAX_OPS  256         /* calls per input */
#define FZ_NBUF     4
#define FZ_NHOST    2
#define FZ_NSTREAM  8           /* plain streams, pool leases and set streams together */
#define FZ_NEVENT   8           /* plain events and pool-acquired ones */
#define FZ_NEPOOL   2
#define FZ_NSPOOL   2
#define FZ_NSET     2
#define FZ_NFLOW    2
#define FZ_TASKS    8
#define FZ_NGRAPH   4
#define FZ_NGPOOL   2
#define FZ_NMOD     2
#define FZ_NWAIT    8
#define FZ_NCAP     16
#define FZ_SCRATCH  65536       /* static host memory for copies */
#define FZ_WORK_MAX (256u << 10)/* bytes a valid fill or device copy touches, for speed */

/* ---- the input ---------------------------------------------------------------------------- */
typedef struct fz_in { const uint8_t *p; size_t n, at; } fz_in;
static unsigned fz_u8(fz_in *in) { return in->at < in->n ? in->p[in->at++] : 0u; }
static unsigned fz_u16(fz_in *in) { unsigned lo = fz_u8(in); return lo | fz_u8(in) << 8; }
static uint32_t fz_u32(fz_in *in) { uint32_t lo = fz_u16(in); return lo | (uint32_t)fz_u16(in) << 16; }

/* ---- the objects of the current input ------------------------------------------------------- */
/* Every table entry starts with this header, so one picker serves all tables. */
typedef struct fz_hdr { int live; int dev; } fz_hdr;

enum { FZ_S_PLAIN, FZ_S_LEASE, FZ_S_SET };   /* where a stream comes from */

/* async: from gf_buffer_create_async; view: from gf_buffer_view (parent: its parent's slot while
   that lives, else -1); wrapped: gf_buffer_wrap of fz_wrapmem */
typedef struct fz_buf { fz_hdr h; gf_buffer *b; size_t size; int async, view, parent, wrapped; } fz_buf;
typedef struct fz_host { fz_hdr h; unsigned char *p; size_t size; } fz_host;
typedef struct fz_str { fz_hdr h; gf_stream *s; int kind; int owner; } fz_str;   /* owner: pool or set slot */
/* pool: -1 plain; recorded: gf_event_record succeeded on it once */
typedef struct fz_ev { fz_hdr h; gf_event *e; int pool; unsigned flags; int recorded; } fz_ev;
typedef struct fz_epool { fz_hdr h; gf_event_pool *p; } fz_epool;
typedef struct fz_spool { fz_hdr h; gf_stream_pool *p; } fz_spool;
typedef struct fz_set { fz_hdr h; gf_stream_set *s; int depth; } fz_set;
typedef struct fz_flow { fz_hdr h; gf_flow *f; gf_task task[FZ_TASKS]; int tasks; unsigned succ[FZ_TASKS]; } fz_flow;
typedef struct fz_graph { fz_hdr h; gf_graph *g; unsigned deps; int stale, gpool; } fz_graph;   /* gpool: slot or -1 */
typedef struct fz_gpool { fz_hdr h; gf_graph_pool *p; } fz_gpool;
/* k: kernels fetched by name, FZ_K_* order (op_launch and op_kernel_get use the first three) */
#define FZ_NKERN    6
typedef struct fz_mod { fz_hdr h; gf_module *m; gf_kernel *k[FZ_NKERN]; } fz_mod;
/* id 0: made without a wait id, so it cannot be cancelled and must fire; e is compared only */
typedef struct fz_wait { fz_hdr h; uint64_t id; gf_event *e; } fz_wait;
/* A capture begun on s (a stream of kind/owner): what its graph will depend on. */
typedef struct fz_cap { fz_hdr h; gf_stream *s; int kind, owner; unsigned deps; int stale, gpool; } fz_cap;

typedef struct fz_state {
    gf_device *dev[2];               /* dev[0] is open for the whole input; dev[1] on demand */
    int profiled[2];                 /* the profiler was enabled once: reports are allowed */
    size_t arg_limit[2];             /* gf_device_info.max_kernel_args_bytes */
    gf_device_info info[2];          /* launch limits (op_block_kernels) */
    fz_buf buf[FZ_NBUF];
    fz_host host[FZ_NHOST];
    fz_str str[FZ_NSTREAM];
    fz_ev ev[FZ_NEVENT];
    fz_epool epool[FZ_NEPOOL];
    fz_spool spool[FZ_NSPOOL];
    fz_set set[FZ_NSET];
    fz_flow flow[FZ_NFLOW];
    fz_graph graph[FZ_NGRAPH];
    fz_gpool gpool[FZ_NGPOOL];
    fz_mod mod[FZ_NMOD];
    fz_wait wait[FZ_NWAIT];
    fz_cap cap[FZ_NCAP];
    unsigned op_deps;                /* deps of graphs launched in this op (copied into captures) */
    int kb_queued;                   /* a kernel with barriers was queued or captured (op_oom) */
    gf_buffer *kept[64]; int kept_dev[64], kept_count;   /* task buffers whose destroy was refused (kept, as the contract says) */
    int op;                          /* index of the op being run, for messages */
    const char *op_name;
} fz_state;

static fz_state F;
static unsigned char fz_scratch[FZ_SCRATCH];
static unsigned char fz_wrapmem[2 * 4096];   /* host memory that stub buffers wrap (gf_buffer_wrap) */
static uint32_t fz_garbage[16] = { 0xdeadbeefu, 0xdeadbeefu };   /* a "handle" of no gpuflow type */
static int fz_trace;
static int fz_oom;                   /* allocations may fail (op_oom): destroys may be refused */
static int fz_logged;                /* atomic: messages the logger got (fz_log) */
static int fz_callbacks;             /* atomic: stream callbacks and waiters that ran */

/* A graph's dependencies: one bit per buffer, pinned-host and module slot. */
#define FZ_BIT_BUF(i)  (1u << (i))
#define FZ_BIT_HOST(i) (1u << (FZ_NBUF + (i)))
#define FZ_BIT_MOD(i)  (1u << (FZ_NBUF + FZ_NHOST + (i)))

/* ---- white-box peeks ------------------------------------------------------------------------- */
/* Two facts the public API does not tell and the fuzzer needs to stay memory-safe and to know
   the expected result; read from the implementation here, in one place. */
static int fz_graph_owned(const gf_buffer *b) { return b->graph_owner != NULL; }   /* freed with its graph */
static int fz_capture_role(const gf_stream *s)   /* 0: not capturing, 1: began a capture, 2: joined one */
{
    return !s->capture ? 0 : s->capture->origin == s ? 1 : 2;
}

/* ---- the oracle ----------------------------------------------------------------------------------- */
static char fz_sentinel[1024];

static void fz_die(int line, const char *call, const char *why)
{
    fflush(stdout);
    fprintf(stderr, "fuzz: oracle failed at op #%d (%s), tests/fuzz.c:%d\n  call: %s\n  %s\n  gf_last_error: %s\n",
            F.op, F.op_name ? F.op_name : "cleanup", line, call, why, gf_last_error());
    fflush(stderr);
    abort();
}

/* Makes a known text this thread's error text: a failure that no fuzzed call shares. */
static int fz_log_mark;
static void fz_prime(void)
{
    gf_device *d = NULL;
    gf_device_open((gf_backend)0x7777, 0, &d);
    if (!fz_sentinel[0]) snprintf(fz_sentinel, sizeof fz_sentinel, "%s", gf_last_error());
    fz_log_mark = __atomic_load_n(&fz_logged, __ATOMIC_RELAXED);
}
static int fz_was_logged(void) { return __atomic_load_n(&fz_logged, __ATOMIC_RELAXED) != fz_log_mark; }
static int fz_error_set(void)   /* the last call changed the error text */
{
    const char *m = gf_last_error();
    return m && m[0] && strcmp(m, fz_sentinel) != 0;
}

/* What a call should return: bad > 0 when the fuzzer built known-bad arguments. */
typedef struct fz_exp {
    int bad;
    gf_result code;      /* the code the bad arguments call for; GF_OK when they disagree */
    gf_result alt[4];    /* also accepted: codes of conditions the fuzzer does not model */
    int alts;
} fz_exp;
static void fz_bad(fz_exp *e, gf_result code)
{
    if (e->bad++ == 0) e->code = code;
    else if (e->code != code) e->code = GF_OK;
}
static void fz_alt(fz_exp *e, gf_result code) { if (e->alts < 4) e->alt[e->alts++] = code; }
static void fz_same_dev(fz_exp *e, int a, int b) { if (a >= 0 && b >= 0 && a != b) fz_bad(e, GF_ERROR_WRONG_DEVICE); }

static gf_result fz_check(gf_result r, const fz_exp *e, const char *call, int line)
{
    char why[256];
    int i;
    if (fz_trace) printf("    %s -> %s%s%s\n", call, gf_result_name(r), r != GF_OK ? ": " : "", r != GF_OK ? gf_last_error() : "");
    if (r < 0 && !fz_error_set()) {
        snprintf(why, sizeof why, "failed with %s but set no gf_last_error() text", gf_result_name(r));
        fz_die(line, call, why);
    }
    if (r < 0 && !fz_was_logged()) fz_die(line, call, "failed but nothing was logged");
    if (!e || !e->bad) return r;
    if (fz_oom && r == GF_ERROR_OUT_OF_MEMORY) return r;   /* an allocation failed before the check */
    if (r >= 0) {
        snprintf(why, sizeof why, "returned %s for a known-bad argument (expected %s)", gf_result_name(r),
                 e->code ? gf_result_name(e->code) : "a failure");
        fz_die(line, call, why);
    }
    if (e->code == GF_OK || r == e->code) return r;
    for (i = 0; i < e->alts; i++) if (r == e->alt[i]) return r;
    snprintf(why, sizeof why, "returned %s, expected %s", gf_result_name(r), gf_result_name(e->code));
    fz_die(line, call, why);
    return r;
}
/* A call with its expectation (e may be NULL: anything, but a failure must say why). */
#define FZ_CALL(e, expr) (fz_prime(), fz_check((expr), (e), #expr, __LINE__))
/* A create's other half of the contract, after FZ_CALL checked r: GF_OK gives a handle in *out,
   a failure leaves *out NULL (nothing made, nothing to free). 1: it made out. */
static int fz_made(gf_result r, const void *out, const char *call, int line)
{
    if (r == GF_OK && !out) fz_die(line, call, "returned GF_OK but gave no handle");
    if (r != GF_OK && out) fz_die(line, call, "failed but left a handle in *out");
    return r == GF_OK && out != NULL;
}

/* A void call (destroy, close): 1 if it refused, which it says only by setting the error text. */
static int fz_void_done(const char *call, int line, int must_refuse, int must_succeed)
{
    int refused = fz_error_set();
    if (refused && !fz_was_logged()) fz_die(line, call, "refused but nothing was logged");
    if (fz_trace) printf("    %s -> %s%s\n", call, refused ? "refused: " : "done", refused ? gf_last_error() : "");
    if (must_refuse && !refused) fz_die(line, call, "a void call given a bad handle set no gf_last_error() text");
    if (must_succeed && refused) fz_die(line, call, "refused a destroy that must succeed");
    return refused;
}
#define FZ_VOID(must_refuse, must_succeed, stmt) \
    (fz_prime(), (stmt), fz_void_done(#stmt, __LINE__, (must_refuse), (must_succeed) && !fz_oom))

/* The logger sees every failure: the same text gf_last_error() gives, at level ERROR for codes
   below zero. fz_check asks that a failure was logged since the call was primed. */
static void fz_log(void *user, gf_log_level level, gf_result code, const char *message)
{
    (void)user;
    if (!message || !message[0]) fz_die(__LINE__, "logger", "a log message is empty");
    if (code < 0 && level != GF_LOG_ERROR) fz_die(__LINE__, "logger", "a failure was not logged at GF_LOG_ERROR");
    if (code == GF_OK && level == GF_LOG_ERROR) fz_die(__LINE__, "logger", "a notice was logged as an error");
    if (code != GF_OK && strcmp(message, gf_last_error()) != 0) fz_die(__LINE__, "logger", "the message is not this thread's gf_last_error()");
    if (fz_trace) printf("    log: %s\n", message);
    __atomic_fetch_add(&fz_logged, 1, __ATOMIC_RELAXED);
}

/* An allocator that fails (op_oom): the fz_alloc_at-th allocation from now, or every one from
   it on, so that each out-of-memory path can be reached. */
static int fz_alloc_at = -1, fz_alloc_all;   /* atomic; -1: never fail */
static int fz_alloc_fails(void)
{
    int k = __atomic_fetch_sub(&fz_alloc_at, 1, __ATOMIC_RELAXED);
    return fz_alloc_all ? k <= 0 : k == 0;
}
static void *fz_alloc(void *user, size_t n) { (void)user; return fz_alloc_fails() ? NULL : malloc(n); }
static void *fz_realloc(void *user, void *p, size_t n) { (void)user; return fz_alloc_fails() ? NULL : realloc(p, n); }
static void fz_free(void *user, void *p) { (void)user; free(p); }

/* ---- callbacks, tasks and stub kernels ------------------------------------------------------------- */
static void fz_count_cb(void *user, gf_result status)
{
    (void)user; (void)status;
    __atomic_fetch_add(&fz_callbacks, 1, __ATOMIC_RELAXED);
}

/* 1-D index over the whole launch: every thread of every block gets one. */
static unsigned fz_k_index(const gf_kernel_ctx *c)
{
    unsigned block = (c->block_idx[2] * c->grid[1] + c->block_idx[1]) * c->grid[0] + c->block_idx[0];
    unsigned thread = (c->thread_idx[2] * c->block[1] + c->thread_idx[1]) * c->block[0] + c->thread_idx[0];
    return block * c->block[0] * c->block[1] * c->block[2] + thread;
}
/* fill_u32(uint *p, uint n, uint v) and add_u32(...): p[i] = v, p[i] += v for i < n */
static void fz_k_fill(const gf_kernel_ctx *ctx, void *const *args)
{
    unsigned char *p = *(unsigned char *const *)args[0];
    uint32_t n, v;
    unsigned i = fz_k_index(ctx);
    memcpy(&n, args[1], sizeof n);
    memcpy(&v, args[2], sizeof v);
    if (i < n) memcpy(p + 4 * (size_t)i, &v, sizeof v);
}
static void fz_k_add(const gf_kernel_ctx *ctx, void *const *args)
{
    unsigned char *p = *(unsigned char *const *)args[0];
    uint32_t n, v, x;
    unsigned i = fz_k_index(ctx);
    memcpy(&n, args[1], sizeof n);
    memcpy(&v, args[2], sizeof v);
    if (i >= n) return;
    memcpy(&x, p + 4 * (size_t)i, sizeof x);
    x += v;
    memcpy(p + 4 * (size_t)i, &x, sizeof x);
}
static void fz_k_empty(const gf_kernel_ctx *ctx, void *const *args) { (void)ctx; (void)args; }

/* Kernels of the dialect's C side (gf_stub_barrier, gf_stub_atomic), run by op_block_kernels.
   Same parameters as fill_u32, and they touch only p[i] for i < n, so that any launch of them
   (through gf_graph_set_kernel_args too) stays within its buffer. Blocks have at most
   FZ_KB_THREADS threads. */
#define FZ_KB_THREADS 64
#define FZ_KB_PAD     0xa5a5a5a5u   /* what a thread past n holds */
static unsigned fz_k_thread(const gf_kernel_ctx *c)   /* within its block */
{
    return (c->thread_idx[2] * c->block[1] + c->thread_idx[1]) * c->block[0] + c->thread_idx[0];
}
/* The rounds of reverse_u32 in block b: (v >> 30) + b mod 4, so that block 0 may have none
   while others have some (barriers in block-uniform code, KD6). */
static unsigned fz_kb_rounds(uint32_t v, unsigned block)
{
    return ((v >> 30) + block) % 4;
}
/* reverse_u32: rounds of "each thread takes the value of thread nt-1-t of its block, plus v",
   through block-shared memory with a barrier after the writes and one after the reads; then
   p[i] = the value, for i < n. A thread past n holds FZ_KB_PAD. fz_kb_check does the same on
   the host. The barriers are in block-uniform code, as CUDA requires. */
static void fz_k_reverse(const gf_kernel_ctx *ctx, void *const *args)
{
    GF_SHARED uint32_t sh[FZ_KB_THREADS];
    unsigned char *p = *(unsigned char *const *)args[0];
    uint32_t n, v, cur = FZ_KB_PAD;
    unsigned i = fz_k_index(ctx), t = fz_k_thread(ctx), nt = ctx->block[0] * ctx->block[1] * ctx->block[2], r, rounds;
    memcpy(&n, args[1], sizeof n);
    memcpy(&v, args[2], sizeof v);
    if (nt > FZ_KB_THREADS) return;   /* never launched so */
    rounds = fz_kb_rounds(v, i / nt);
    if (i < n) memcpy(&cur, p + 4 * (size_t)i, sizeof cur);
    for (r = 0; r < rounds; r++) {
        sh[t] = cur;
        gf_block_sync();
        cur = sh[nt - 1 - t] + v;
        gf_block_sync();
    }
    if (i < n) memcpy(p + 4 * (size_t)i, &cur, sizeof cur);
}
/* atomics_u32 (p 4-byte aligned): each thread g (global index) does p[0] += v, p[1] = max(p[1], g ^ v),
   p[2] = min(p[2], g ^ v), p[3] = g ^ v (exchange), p[4] += 1 by a compare-and-swap loop, and
   p[5] = v + 1 + g if p[5] == v (one compare-and-swap; only the first can succeed). */
/* Device memory nobody wrote holds unknown but defined bits, as on a GPU: MemorySanitizer is
   told so before atomics branch on it (a compare-and-swap compares). */
#if defined(__has_feature)
#  if __has_feature(memory_sanitizer)
#    include <sanitizer/msan_interface.h>
#    define FZ_DEVICE_BYTES(p, n) __msan_unpoison((p), (n))
#  endif
#endif
#ifndef FZ_DEVICE_BYTES
#  define FZ_DEVICE_BYTES(p, n) ((void)0)
#endif
static void fz_k_atomics(const gf_kernel_ctx *ctx, void *const *args)
{
    unsigned *p = *(unsigned *const *)args[0];
    uint32_t n, v;
    unsigned g = fz_k_index(ctx), old, seen;
    memcpy(&n, args[1], sizeof n);
    memcpy(&v, args[2], sizeof v);
    if ((uintptr_t)p % sizeof *p) return;   /* a view or wrapped memory at an odd offset: no atomics there */
    FZ_DEVICE_BYTES(p, sizeof *p * (n < 6 ? n : 6));
    if (n > 0) gf_atomic_add(&p[0], v);
    if (n > 1) gf_atomic_max(&p[1], g ^ v);
    if (n > 2) gf_atomic_min(&p[2], g ^ v);
    if (n > 3) gf_atomic_xchg(&p[3], g ^ v);
    if (n > 4) for (old = gf_atomic_add(&p[4], 0); (seen = gf_atomic_cas(&p[4], old, old + 1)) != old; ) old = seen;
    if (n > 5) gf_atomic_cas(&p[5], v, v + 1 + g);
}
/* diverge_u32: thread t of its block meets (t + v) % 3 barriers: misuse (undefined on a GPU),
   which the stub reports as a failure of the stream (GF_ERROR_DRIVER, kept); then p[i] += its
   count, for i < n. Launched only on a stream of its own (op_block_kernels). */
static void fz_k_diverge(const gf_kernel_ctx *ctx, void *const *args)
{
    unsigned *p = *(unsigned *const *)args[0];
    uint32_t n, v;
    unsigned i = fz_k_index(ctx), k, j;
    memcpy(&n, args[1], sizeof n);
    memcpy(&v, args[2], sizeof v);
    k = (fz_k_thread(ctx) + v) % 3;
    for (j = 0; j < k; j++) gf_block_sync();
    if (i < n && (uintptr_t)p % sizeof *p == 0) { FZ_DEVICE_BYTES(&p[i], sizeof *p); gf_atomic_add(&p[i], k); }
}

enum { FZ_K_FILL, FZ_K_ADD, FZ_K_EMPTY, FZ_K_REVERSE, FZ_K_ATOMICS, FZ_K_DIVERGE };
static const char *const fz_kernel_names[FZ_NKERN] = { "fill_u32", "add_u32", "empty", "reverse_u32", "atomics_u32", "diverge_u32" };
static const int fz_kernel_params[FZ_NKERN] = { 3, 3, 0, 3, 3, 3 };
static const gf_stub_param fz_u32_params[3] = {
    { "p", "uint32_t *", sizeof(uint32_t *) }, { "n", "uint32_t", sizeof(uint32_t) }, { "v", "uint32_t", sizeof(uint32_t) },
};
static const gf_stub_kernel fz_stub_kernels[] = {
    { "fill_u32", fz_k_fill, 3, fz_u32_params, 0, NULL, 0 },
    { "add_u32", fz_k_add, 3, fz_u32_params, 0, NULL, 0 },
    { "empty", fz_k_empty, 0, NULL, 0, NULL, 0 },
    { "nofn", NULL, 0, NULL, 0, NULL, 0 },     /* a kernel without a function: not found by name */
    { NULL, fz_k_empty, 0, NULL, 0, NULL, 0 }, /* and one without a name */
    { "reverse_u32", fz_k_reverse, 3, fz_u32_params, 0, NULL, 0 },
    { "atomics_u32", fz_k_atomics, 3, fz_u32_params, 0, NULL, 0 },
    { "diverge_u32", fz_k_diverge, 3, fz_u32_params, 0, NULL, 0 },
};

static int fz_first_buf(int dev);
static int fz_task_runs;           /* flow tasks and capture functions that ran */

/* A flow task or capture function; what it does is the int that user points at. It reads the
   fuzzer's tables when it runs (inside the op), so it never holds a stale buffer. */
enum { FZ_T_FILL, FZ_T_CALLBACK, FZ_T_COPY, FZ_T_NOP, FZ_T_FAIL, FZ_T_ASYNC_BUF, FZ_T_SYNC, FZ_T_COUNT };
static const int fz_task_kind[FZ_T_COUNT] = { FZ_T_FILL, FZ_T_CALLBACK, FZ_T_COPY, FZ_T_NOP, FZ_T_FAIL, FZ_T_ASYNC_BUF, FZ_T_SYNC };
static const char *const fz_task_names[FZ_T_COUNT] = { "fill", "callback", "copy", "nop", "fail", "async-buffer", "sync" };

/* A buffer whose destroy the library refused (and so kept, with a message): destroyed when the
   input ends, with allocations working again. */
static void fz_keep(gf_buffer *b, int dev)
{
    if (F.kept_count == 64) fz_die(__LINE__, "fz_keep", "more than 64 buffers kept");
    F.kept_dev[F.kept_count] = dev;
    F.kept[F.kept_count++] = b;
}

static gf_result fz_task(gf_stream *s, void *user)
{
    int kind = *(const int *)user, i, dev;
    gf_buffer *tmp = NULL;
    gf_result r;
    fz_task_runs++;
    dev = gf_stream_device(s) == F.dev[1] ? 1 : 0;
    i = fz_first_buf(dev);
    switch (kind) {
    case FZ_T_FILL:
        if (i < 0) return gf_stream_add_callback(s, fz_count_cb, NULL);
        return gf_fill_async(s, F.buf[i].b, 0, 0x5a, F.buf[i].size < 64 ? F.buf[i].size : 64);
    case FZ_T_COPY:
        if (i < 0) return GF_OK;
        return gf_copy_to_host_async(s, fz_scratch, F.buf[i].b, 0, F.buf[i].size < 64 ? F.buf[i].size : 64);
    case FZ_T_CALLBACK: return gf_stream_add_callback(s, fz_count_cb, NULL);
    case FZ_T_FAIL: return GF_ERROR_INVALID_STATE;   /* a task whose work cannot be enqueued */
    case FZ_T_ASYNC_BUF: {   /* stream-ordered memory: inside a capture the graph owns it */
        gf_result freed;
        if ((r = gf_buffer_create_async(s, 256, &tmp)) != GF_OK) return r;
        r = gf_fill_async(s, tmp, 0, 1, 256);
        /* a refused destroy keeps the buffer (out of memory, say): it is destroyed at the end */
        if ((freed = gf_buffer_destroy_async(s, tmp)) != GF_OK) fz_keep(tmp, dev);
        return r != GF_OK ? r : freed;
    }
    case FZ_T_SYNC: return gf_stream_synchronize(s);   /* inside a capture: misuse, refused */
    default: return GF_OK;
    }
}

/* ---- tables ------------------------------------------------------------------------------------------ */
static fz_hdr *fz_hdr_at(void *tab, size_t stride, int i) { return (fz_hdr *)(void *)((char *)tab + stride * (size_t)i); }

/* The index of the sel-th live entry (of device dev, or any when dev < 0); -1 if none. */
static int fz_nth(void *tab, size_t stride, int n, unsigned sel, int dev)
{
    int i, live = 0, k;
    for (i = 0; i < n; i++) { fz_hdr *h = fz_hdr_at(tab, stride, i); live += h->live && (dev < 0 || h->dev == dev); }
    if (!live) return -1;
    k = (int)(sel % (unsigned)live);
    for (i = 0; i < n; i++) {
        fz_hdr *h = fz_hdr_at(tab, stride, i);
        if (h->live && (dev < 0 || h->dev == dev) && k-- == 0) return i;
    }
    return -1;
}
static int fz_free_slot(void *tab, size_t stride, int n)
{
    int i;
    for (i = 0; i < n; i++) if (!fz_hdr_at(tab, stride, i)->live) return i;
    return -1;
}
#define FZ_NTH(tab, sel, dev) fz_nth((tab), sizeof (tab)[0], (int)(sizeof (tab) / sizeof (tab)[0]), (sel), (dev))
#define FZ_FREE(tab) fz_free_slot((tab), sizeof (tab)[0], (int)(sizeof (tab) / sizeof (tab)[0]))

static int fz_first_buf(int dev) { return FZ_NTH(F.buf, 0, dev); }

/* Kinds of handle, for picking one of the wrong type. */
enum { K_DEV, K_BUF, K_STREAM, K_EVENT, K_EPOOL, K_SPOOL, K_SET, K_FLOW, K_GRAPH, K_MODULE, K_KERNEL, K_GPOOL };
static const char *const fz_kind_names[] = { "device", "buffer", "stream", "event", "event pool", "stream pool", "set",
                                             "flow", "graph", "module", "kernel", "graph pool" };

/* An object that is not of kind want: another live object, or memory of no gpuflow type. */
static void *fz_foreign(int want, unsigned sel)
{
    void *c[64];
    int n = 0, i, k;
    c[n++] = fz_garbage;
#define FZ_ADD(kind, tab, field) \
    if (want != (kind)) for (i = 0; i < (int)(sizeof (tab) / sizeof (tab)[0]); i++) if ((tab)[i].h.live) c[n++] = (void *)(tab)[i].field
    for (i = 0; i < 2; i++) if (want != K_DEV && F.dev[i]) c[n++] = F.dev[i];
    FZ_ADD(K_BUF, F.buf, b);
    FZ_ADD(K_STREAM, F.str, s);
    FZ_ADD(K_EVENT, F.ev, e);
    FZ_ADD(K_EPOOL, F.epool, p);
    FZ_ADD(K_SPOOL, F.spool, p);
    FZ_ADD(K_SET, F.set, s);
    FZ_ADD(K_FLOW, F.flow, f);
    FZ_ADD(K_GRAPH, F.graph, g);
    FZ_ADD(K_MODULE, F.mod, m);
    FZ_ADD(K_GPOOL, F.gpool, p);
#undef FZ_ADD
    if (want != K_KERNEL)
        for (i = 0; i < FZ_NMOD; i++) for (k = 0; k < FZ_NKERN; k++) if (F.mod[i].h.live && F.mod[i].k[k] && n < 64) c[n++] = F.mod[i].k[k];
    return c[sel % (unsigned)n];
}

/* How a handle argument is chosen: mostly a live object, now and then NULL or an object of
   another type, both of which the library must refuse with GF_ERROR_INVALID_HANDLE. */
enum { FZ_LIVE, FZ_NULL, FZ_WRONG };
static int fz_hmode(fz_in *in)
{
    unsigned v = fz_u8(in) % 32;
    return v == 30 ? FZ_NULL : v == 31 ? FZ_WRONG : FZ_LIVE;
}

/* Picks a handle from a table: returns the entry's index, or -1 with *bad set to NULL or to a
   foreign object (and e told to expect GF_ERROR_INVALID_HANDLE). */
static int fz_pick(fz_in *in, fz_exp *e, void *tab, size_t stride, int n, int kind, void **bad)
{
    int mode = fz_hmode(in), i = -1;
    unsigned sel = fz_u8(in);
    *bad = NULL;
    if (mode == FZ_LIVE) i = fz_nth(tab, stride, n, sel, -1);
    if (i >= 0) {
        if (fz_trace) printf("      %s: slot %d (device %d)\n", fz_kind_names[kind], i, fz_hdr_at(tab, stride, i)->dev);
        return i;
    }
    if (mode == FZ_WRONG) *bad = fz_foreign(kind, sel);
    if (fz_trace) printf("      %s: %s %p\n", fz_kind_names[kind], *bad ? "wrong type" : mode == FZ_LIVE ? "none live, NULL" : "NULL", *bad);
    fz_bad(e, GF_ERROR_INVALID_HANDLE);
    return -1;
}
#define FZ_PICK(in, e, tab, kind, bad) \
    fz_pick((in), (e), (tab), sizeof (tab)[0], (int)(sizeof (tab) / sizeof (tab)[0]), (kind), (bad))

/* Each typed picker returns the handle and its device (-1 when bad). */
static gf_device *fz_pick_dev(fz_in *in, fz_exp *e, int *dev)
{
    int mode = fz_hmode(in);
    unsigned sel = fz_u8(in);
    *dev = -1;
    if (mode == FZ_LIVE) { *dev = (sel & 1) && F.dev[1] ? 1 : 0; return F.dev[*dev]; }
    fz_bad(e, GF_ERROR_INVALID_HANDLE);
    return mode == FZ_WRONG ? (gf_device *)fz_foreign(K_DEV, sel) : NULL;
}
static gf_buffer *fz_pick_buf(fz_in *in, fz_exp *e, int *dev, int *slot)
{
    void *bad;
    int i = FZ_PICK(in, e, F.buf, K_BUF, &bad);
    *dev = i >= 0 ? F.buf[i].h.dev : -1;
    if (slot) *slot = i;
    return i >= 0 ? F.buf[i].b : (gf_buffer *)bad;
}
static gf_stream *fz_pick_stream(fz_in *in, fz_exp *e, int *dev, int *slot)
{
    void *bad;
    int i = FZ_PICK(in, e, F.str, K_STREAM, &bad);
    *dev = i >= 0 ? F.str[i].h.dev : -1;
    if (slot) *slot = i;
    return i >= 0 ? F.str[i].s : (gf_stream *)bad;
}
static gf_event *fz_pick_event(fz_in *in, fz_exp *e, int *dev, int *slot)
{
    void *bad;
    int i = FZ_PICK(in, e, F.ev, K_EVENT, &bad);
    *dev = i >= 0 ? F.ev[i].h.dev : -1;
    if (slot) *slot = i;
    return i >= 0 ? F.ev[i].e : (gf_event *)bad;
}

/* Sizes and offsets. A count of bytes for a range within limit bytes: usually valid, sometimes
   zero, exactly the limit, one past it, a power of two, or near SIZE_MAX. */
static size_t fz_count(fz_in *in, size_t limit)
{
    unsigned sel = fz_u8(in) % 16, v = fz_u16(in);
    switch (sel) {
    case 11: return limit;
    case 12: return 0;
    case 13: return limit + 1;
    case 14: return SIZE_MAX - (v & 0xff);
    case 15: return (size_t)1 << (v % (8 * sizeof(size_t)));
    default: return limit ? (size_t)v % limit + 1 : (size_t)(v % 8) + 1;
    }
}
/* An offset into limit bytes: usually inside, sometimes at the end, past it, or near SIZE_MAX. */
static size_t fz_offset(fz_in *in, size_t limit)
{
    unsigned sel = fz_u8(in) % 16, v = fz_u16(in);
    switch (sel) {
    case 12: return limit;
    case 13: return limit + 1 + (v & 0xf);
    case 14: return SIZE_MAX - (v & 0xff);
    case 15: return (size_t)1 << (v % (8 * sizeof(size_t)));
    default: return sel < 6 ? 0 : limit ? (size_t)v % limit : 0;
    }
}
/* The contract for a range of a buffer: zero bytes is INVALID_ARGUMENT, past the end (without
   overflow tricks) OUT_OF_RANGE. Returns 1 if the range is bad. */
static int fz_range(fz_exp *e, size_t size, size_t off, size_t bytes)
{
    if (bytes == 0) { fz_bad(e, GF_ERROR_INVALID_ARGUMENT); return 1; }
    if (bytes > size || off > size - bytes) { fz_bad(e, GF_ERROR_OUT_OF_RANGE); return 1; }
    return 0;
}

/* Host memory for a copy: static scratch, a pinned allocation, or NULL (bad). *cap: the bytes
   that may be used from the returned pointer. */
static unsigned char *fz_host_mem(fz_in *in, fz_exp *e, size_t *cap)
{
    unsigned sel = fz_u8(in) % 16, v = fz_u16(in);
    int i;
    if (sel == 15) { fz_bad(e, GF_ERROR_INVALID_ARGUMENT); *cap = 0; return NULL; }
    if (sel >= 12 && (i = FZ_NTH(F.host, v, -1)) >= 0) {
        size_t off = (size_t)(v >> 4) % F.host[i].size;
        *cap = F.host[i].size - off;
        return F.host[i].p + off;
    }
    *cap = FZ_SCRATCH - (size_t)(v % 4096);
    return fz_scratch + v % 4096;
}
/* Keeps a valid copy within what the host side and the time budget allow (still valid). */
static size_t fz_clamp(size_t bytes, size_t cap) { return bytes > cap ? cap : bytes; }

/* ---- graph dependencies ------------------------------------------------------------------------------- */
static unsigned fz_deps_live(void)
{
    unsigned m = 0;
    int i;
    for (i = 0; i < FZ_NBUF; i++) if (F.buf[i].h.live) m |= FZ_BIT_BUF(i);
    for (i = 0; i < FZ_NHOST; i++) if (F.host[i].h.live) m |= FZ_BIT_HOST(i);
    for (i = 0; i < FZ_NMOD; i++) if (F.mod[i].h.live) m |= FZ_BIT_MOD(i);
    return m;
}
/* The object in a slot is gone: graphs and captures that may refer to it are stale. */
static void fz_gone(unsigned bit)
{
    int i;
    for (i = 0; i < FZ_NGRAPH; i++) if (F.graph[i].h.live && (F.graph[i].deps & bit)) F.graph[i].stale = 1;
    for (i = 0; i < FZ_NCAP; i++) if (F.cap[i].h.live && (F.cap[i].deps & bit)) F.cap[i].stale = 1;
}
static int fz_cap_of(const gf_stream *s)
{
    int i;
    for (i = 0; i < FZ_NCAP; i++) if (F.cap[i].h.live && F.cap[i].s == s) return i;
    return -1;
}
/* A record for a capture about to begin on stream entry si; 0 if the table has no room. */
static int fz_cap_room(const gf_stream *s) { return fz_cap_of(s) >= 0 || FZ_FREE(F.cap) >= 0; }
static void fz_cap_begun(int si, int gpool)
{
    int i = fz_cap_of(F.str[si].s);
    if (i < 0) i = FZ_FREE(F.cap);
    F.cap[i].h.live = 1; F.cap[i].h.dev = F.str[si].h.dev;
    F.cap[i].s = F.str[si].s; F.cap[i].kind = F.str[si].kind; F.cap[i].owner = F.str[si].owner;
    F.cap[i].deps = fz_deps_live(); F.cap[i].stale = 0; F.cap[i].gpool = gpool;
}
/* Streams that are freed: their capture records go, before anything peeks at them. Events
   last recorded on them stay usable (waits name the stream by id: "a destroyed stream"). */
static void fz_stream_gone(const gf_stream *s)
{
    int i = fz_cap_of(s);
    if (i >= 0) F.cap[i].h.live = 0;
}
static void fz_streams_gone(int kind, int owner)   /* a pool's or a set's streams */
{
    int i;
    for (i = 0; i < FZ_NCAP; i++) if (F.cap[i].h.live && F.cap[i].kind == kind && F.cap[i].owner == owner) F.cap[i].h.live = 0;
}
/* After each op: captures still going collect what is live; ended ones are forgotten. */
static void fz_caps_update(void)
{
    int i;
    for (i = 0; i < FZ_NCAP; i++) {
        if (!F.cap[i].h.live) continue;
        if (fz_capture_role(F.cap[i].s) != 1) { F.cap[i].h.live = 0; continue; }
        F.cap[i].deps |= fz_deps_live() | F.op_deps;
    }
}
/* Keeps a new graph (or destroys it when the table is full). */
static void fz_graph_add(gf_graph *g, int dev, unsigned deps, int stale, int gpool)
{
    int i = FZ_FREE(F.graph);
    if (i < 0) { FZ_VOID(0, 1, gf_graph_destroy(g)); return; }
    F.graph[i].h.live = 1; F.graph[i].h.dev = dev;
    F.graph[i].g = g; F.graph[i].deps = deps | F.op_deps; F.graph[i].stale = stale; F.graph[i].gpool = gpool;
}
/* Graphs and captures of graph pool i still alive: its destroy is refused while there are any. */
static int fz_gpool_users(int i)
{
    int k, n = 0;
    for (k = 0; k < FZ_NGRAPH; k++) n += F.graph[k].h.live && F.graph[k].gpool == i;
    for (k = 0; k < FZ_NCAP; k++) n += F.cap[k].h.live && F.cap[k].gpool == i;
    return n;
}

/* ---- destroying table entries -------------------------------------------------------------------------- */
static void fz_forget_waits(const gf_event *e)   /* the event is gone: its waits run without it */
{
    int i;
    for (i = 0; i < FZ_NWAIT; i++) if (F.wait[i].h.live && F.wait[i].e == e) F.wait[i].h.live = 0;
}
/* Cancels the waits of device dev (on event only, if set) that have an id; those without one
   stay until they fire. */
static void fz_cancel_waits(int dev, const gf_event *only)
{
    int i;
    for (i = 0; i < FZ_NWAIT; i++) {
        if (!F.wait[i].h.live || F.wait[i].h.dev != dev || !F.wait[i].id || (only && F.wait[i].e != only)) continue;
        FZ_CALL(NULL, gf_event_cancel_wait(F.dev[dev], F.wait[i].id));   /* NOT_FOUND once fired */
        F.wait[i].h.live = 0;
    }
}
/* Destroys plain event i, with its waits cancelled first or left pending (the event goes when
   they have run). A destroy must succeed. */
static void fz_destroy_event(int i, int cancel_first)
{
    if (cancel_first) fz_cancel_waits(F.ev[i].h.dev, F.ev[i].e);
    FZ_VOID(0, 1, gf_event_destroy(F.ev[i].e));
    fz_forget_waits(F.ev[i].e);
    F.ev[i].h.live = 0;
}
static void fz_drop_buf(int i)
{
    int k;
    F.buf[i].h.live = 0;
    fz_gone(FZ_BIT_BUF(i));
    for (k = 0; k < FZ_NBUF; k++) if (F.buf[k].h.live && F.buf[k].view && F.buf[k].parent == i) F.buf[k].parent = -1;
}
static int fz_views_of(int i)
{
    int k, n = 0;
    for (k = 0; k < FZ_NBUF; k++) n += F.buf[k].h.live && F.buf[k].view && F.buf[k].parent == i;
    return n;
}
/* Stream entries that come from pool or set slot owner go with it. */
static void fz_drop_streams(int kind, int owner)
{
    int i;
    fz_streams_gone(kind, owner);
    for (i = 0; i < FZ_NSTREAM; i++) if (F.str[i].h.live && F.str[i].kind == kind && F.str[i].owner == owner) F.str[i].h.live = 0;
}
/* An event pool, and the events acquired from it; cancel_first: their waits cancelled first,
   else left pending (the pool goes when they have run). A destroy must succeed. */
static int fz_destroy_epool(int i, int cancel_first)
{
    int k;
    for (k = 0; k < FZ_NEVENT; k++)
        if (cancel_first && F.ev[k].h.live && F.ev[k].pool == i) fz_cancel_waits(F.ev[k].h.dev, F.ev[k].e);
    if (FZ_VOID(0, 1, gf_event_pool_destroy(F.epool[i].p))) return 0;
    for (k = 0; k < FZ_NEVENT; k++)
        if (F.ev[k].h.live && F.ev[k].pool == i) { fz_forget_waits(F.ev[k].e); F.ev[k].h.live = 0; }
    F.epool[i].h.live = 0;
    return 1;
}
static int fz_destroy_spool(int i)
{
    if (FZ_VOID(0, 1, gf_stream_pool_destroy(F.spool[i].p))) return 0;
    fz_drop_streams(FZ_S_LEASE, i);
    F.spool[i].h.live = 0;
    return 1;
}
static int fz_destroy_set(int i)
{
    if (FZ_VOID(0, 1, gf_stream_set_destroy(F.set[i].s))) return 0;
    fz_drop_streams(FZ_S_SET, i);
    F.set[i].h.live = 0;
    return 1;
}
static int fz_destroy_module(int i)
{
    if (FZ_VOID(0, 1, gf_module_destroy(F.mod[i].m))) return 0;
    F.mod[i].h.live = 0;
    fz_gone(FZ_BIT_MOD(i));
    return 1;
}
static int fz_destroy_stream(int i)   /* a plain one */
{
    if (FZ_VOID(0, 1, gf_stream_destroy(F.str[i].s))) return 0;
    fz_stream_gone(F.str[i].s);   /* compares the pointer only */
    F.str[i].h.live = 0;
    return 1;
}
static int fz_destroy_buf(int i)
{
    /* a view and its parent may go in either order: the memory stays until the last of them */
    if (FZ_VOID(0, 0, gf_buffer_destroy(F.buf[i].b))) return 0;   /* refused while a capture uses it */
    fz_drop_buf(i);
    return 1;
}
/* Pinned memory may be in use by queued copies on any stream: wait for both devices first. */
static int fz_free_host(int i)
{
    int d;
    for (d = 0; d < 2; d++) if (F.dev[d]) FZ_CALL(NULL, gf_device_synchronize(F.dev[d]));
    if (FZ_VOID(0, 1, gf_host_free(F.dev[F.host[i].h.dev], F.host[i].p))) return 0;
    F.host[i].h.live = 0;
    fz_gone(FZ_BIT_HOST(i));
    return 1;
}

/* Destroys every object of device d, then closes it; each destroy must succeed. */
static void fz_close_device(int d)
{
    int i;
    if (!F.dev[d]) return;
    fz_cancel_waits(d, NULL);
    for (i = 0; i < FZ_NFLOW; i++) if (F.flow[i].h.live && F.flow[i].h.dev == d) { FZ_VOID(0, 1, gf_flow_destroy(F.flow[i].f)); F.flow[i].h.live = 0; }
    for (i = 0; i < FZ_NGRAPH; i++) if (F.graph[i].h.live && F.graph[i].h.dev == d) { FZ_VOID(0, 1, gf_graph_destroy(F.graph[i].g)); F.graph[i].h.live = 0; }
    for (i = 0; i < FZ_NSET; i++) if (F.set[i].h.live && F.set[i].h.dev == d) fz_destroy_set(i);
    for (i = 0; i < FZ_NSPOOL; i++) if (F.spool[i].h.live && F.spool[i].h.dev == d) fz_destroy_spool(i);
    for (i = 0; i < FZ_NSTREAM; i++) if (F.str[i].h.live && F.str[i].h.dev == d) fz_destroy_stream(i);   /* plain ones: the rest went with their owners */
    for (i = 0; i < FZ_NCAP; i++) if (F.cap[i].h.live && F.cap[i].h.dev == d) F.cap[i].h.live = 0;   /* their streams are gone */
    for (i = 0; i < FZ_NGPOOL; i++) if (F.gpool[i].h.live && F.gpool[i].h.dev == d) { FZ_VOID(0, 1, gf_graph_pool_destroy(F.gpool[i].p)); F.gpool[i].h.live = 0; }
    for (i = 0; i < FZ_NMOD; i++) if (F.mod[i].h.live && F.mod[i].h.dev == d) fz_destroy_module(i);
    for (i = 0; i < FZ_NEPOOL; i++) if (F.epool[i].h.live && F.epool[i].h.dev == d) fz_destroy_epool(i, 0);
    for (i = 0; i < FZ_NEVENT; i++) if (F.ev[i].h.live && F.ev[i].h.dev == d) fz_destroy_event(i, 0);
    for (i = 0; i < FZ_NWAIT; i++) if (F.wait[i].h.live && F.wait[i].h.dev == d) F.wait[i].h.live = 0;
    /* views and parents in slot order: either may go first, the memory goes with the last */
    for (i = 0; i < FZ_NBUF; i++) if (F.buf[i].h.live && F.buf[i].h.dev == d && !fz_destroy_buf(i))
        fz_die(__LINE__, "gf_buffer_destroy", "refused with no capture left");
    for (i = 0; i < FZ_NHOST; i++) if (F.host[i].h.live && F.host[i].h.dev == d) fz_free_host(i);
    for (i = 0; i < FZ_NCAP; i++) if (F.cap[i].h.live && F.cap[i].h.dev == d) F.cap[i].h.live = 0;
    for (i = 0; i < F.kept_count; i++)
        if (F.kept[i] && F.kept_dev[i] == d) { FZ_VOID(0, 1, gf_buffer_destroy(F.kept[i])); F.kept[i] = NULL; }
    FZ_VOID(0, 1, gf_device_close(F.dev[d]));
    F.dev[d] = NULL;
    F.profiled[d] = 0;
}

/* ---- ops ---------------------------------------------------------------------------------------------------- */
static void fz_dev_opened(int d, gf_device *dev)
{
    gf_device_info info = {0};
    F.dev[d] = dev;
    F.profiled[d] = 0;
    if (FZ_CALL(NULL, gf_device_get_info(dev, &info)) != GF_OK || info.backend != GF_BACKEND_STUB || !info.max_kernel_args_bytes)
        fz_die(__LINE__, "gf_device_get_info", "does not describe an open stub device");
    F.arg_limit[d] = info.max_kernel_args_bytes;
    F.info[d] = info;
}

/* Each op reads its arguments from in (zeros past the record's end: a zeroed record is a
   plain, valid call). */

static void op_dev_open(fz_in *in)
{
    fz_exp e = { 0 };
    gf_device *d = NULL;
    unsigned sel = fz_u8(in) % 8;
    if (sel == 1) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_device_open(GF_BACKEND_STUB, 0, NULL)); return; }
    if (sel == 2) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_device_open((gf_backend)(GF_BACKEND_COUNT + fz_u8(in)), 0, &d)); return; }
    if (sel == 3) {   /* a stub device index that does not exist */
        int index = fz_u8(in) & 1 ? -1 : 1 + (int)fz_u8(in);
        fz_bad(&e, GF_ERROR_NO_DEVICE);
        fz_alt(&e, GF_ERROR_INVALID_ARGUMENT);
        FZ_CALL(&e, gf_device_open(GF_BACKEND_STUB, index, &d));
        return;
    }
    if (sel == 4) { fz_bad(&e, GF_ERROR_BACKEND_UNAVAILABLE); FZ_CALL(&e, gf_device_open(GF_BACKEND_CUDA, 0, &d)); return; }
    if (F.dev[1]) return;
    if (FZ_CALL(&e, gf_device_open(sel == 5 ? GF_BACKEND_AUTO : GF_BACKEND_STUB, 0, &d)) == GF_OK) {
        if (gf_device_backend(d) != GF_BACKEND_STUB) { FZ_VOID(0, 1, gf_device_close(d)); return; }   /* AUTO found another */
        fz_dev_opened(1, d);
    }
}

static void op_dev_close(fz_in *in)
{
    unsigned sel = fz_u8(in) % 4;
    if (sel == 1) { FZ_VOID(0, 1, gf_device_close(NULL)); return; }   /* as free(NULL): nothing done, nothing said */
    if (sel == 2) { FZ_VOID(1, 0, gf_device_close((gf_device *)fz_foreign(K_DEV, fz_u8(in)))); return; }
    fz_close_device(1);
}

static void op_dev_query(fz_in *in)
{
    fz_exp e = { 0 };
    int d;
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_device_info info = { 0 };
    size_t fr = 0, tot = 0;
    unsigned sel = fz_u8(in) % 6;
    const char *n;
    switch (sel) {
    case 0:
        if (fz_u8(in) % 8 == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_device_get_info(dev, NULL)); }
        else FZ_CALL(&e, gf_device_get_info(dev, &info));
        break;
    case 1: {
        unsigned which = fz_u8(in) % 4;
        if (which == 3) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        FZ_CALL(&e, gf_device_memory_info(dev, which & 1 ? NULL : &fr, which & 2 ? NULL : &tot));
        break;
    }
    case 2: FZ_CALL(&e, gf_device_synchronize(dev)); break;
    default:
        n = gf_device_name(dev);
        if (!n) fz_die(__LINE__, "gf_device_name", "returned NULL");
        if (d < 0 && n[0]) fz_die(__LINE__, "gf_device_name", "named a bad handle");
        if (d < 0 && gf_device_backend(dev) == GF_BACKEND_STUB) fz_die(__LINE__, "gf_device_backend", "named a bad handle's backend");
        break;
    }
}

static void op_names(fz_in *in)
{
    uint32_t v = fz_u32(in);
    const char *a = gf_result_name((gf_result)(int32_t)v), *b = gf_backend_name((gf_backend)(v % 9));
    if (!a || !a[0] || !b || !b[0]) fz_die(__LINE__, "gf_result_name / gf_backend_name", "returned an empty name");
    if (gf_backend_available((gf_backend)((v >> 8) % 9)) < 0 || gf_device_count((gf_backend)((v >> 12) % 9)) < 0)
        fz_die(__LINE__, "gf_backend_available / gf_device_count", "returned a negative count");
}

static void op_buf_create(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i = FZ_FREE(F.buf);
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_buffer *b = NULL;
    unsigned sel = fz_u8(in) % 16, v = fz_u16(in);
    size_t size;
    gf_result r;
    switch (sel) {
    case 9: size = (size_t)1 << 20; break;
    case 10: size = (size_t)(16 + v % 24) << 20; break;                 /* a few of these exhaust the 64 MiB */
    case 11: size = (size_t)GPUFLOW_STUB_MEMORY + 1 + v; fz_bad(&e, GF_ERROR_OUT_OF_MEMORY); break;
    case 12: size = SIZE_MAX - (v & 0xff); fz_bad(&e, GF_ERROR_OUT_OF_MEMORY); break;   /* must not wrap the capacity check */
    case 13: size = 0; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;
    case 14: size = 1 + v % 64; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;   /* NULL out, below */
    default: size = sel < 4 ? 256 + v % 64 : sel < 6 ? 1 + v % 64 : 64 + (size_t)v * 2; break;
    }
    if (i < 0 && sel != 14 && !e.bad) return;   /* table full */
    if (sel == 14) { FZ_CALL(&e, gf_buffer_create(dev, size, NULL)); return; }
    if (fz_u8(in) & 1) {   /* the desc variant, sometimes managed (the stub has managed memory) */
        gf_buffer_desc desc;
        int nodesc = fz_u8(in) % 16 == 15;
        memset(&desc, 0, sizeof desc);   /* the fields not fuzzed here at their defaults */
        desc.size = size;
        desc.managed = (int)(fz_u8(in) & 1);
        if (nodesc) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        r = FZ_CALL(&e, gf_buffer_create_desc(dev, nodesc ? NULL : &desc, &b));
    } else {
        r = FZ_CALL(&e, gf_buffer_create(dev, size, &b));
    }
    if (r != GF_OK) return;
    if (i < 0) { FZ_VOID(0, 1, gf_buffer_destroy(b)); return; }
    if (gf_buffer_size(b) != size) fz_die(__LINE__, "gf_buffer_size", "is not the size the buffer was created with");
    F.buf[i].h.live = 1; F.buf[i].h.dev = d; F.buf[i].b = b; F.buf[i].size = size; F.buf[i].async = 0;
    F.buf[i].view = 0; F.buf[i].parent = -1; F.buf[i].wrapped = 0;
}

static void op_buf_destroy(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i;
    gf_buffer *b = fz_pick_buf(in, &e, &d, &i);
    if (i < 0) { FZ_VOID(b != NULL, b == NULL, gf_buffer_destroy(b)); return; }
    fz_destroy_buf(i);   /* refused while a capture in progress uses it (GF_ERROR_CAPTURE); then it stays */
}

static void op_buf_create_async(fz_in *in)
{
    fz_exp e = { 0 };
    int d, si, i = FZ_FREE(F.buf);
    gf_stream *s = fz_pick_stream(in, &e, &d, &si);
    gf_buffer *b = NULL;
    unsigned sel = fz_u8(in) % 16, v = fz_u16(in);
    size_t size = sel == 13 ? 0 : sel == 14 ? (size_t)GPUFLOW_STUB_MEMORY + 1 + v : 1 + v % 4096;
    gf_result r;
    if (sel == 13) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    if (sel == 14) fz_bad(&e, GF_ERROR_OUT_OF_MEMORY);
    if (sel == 15) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_buffer_create_async(s, size, NULL)); return; }
    r = FZ_CALL(&e, gf_buffer_create_async(s, size, &b));
    if (!fz_made(r, b, "gf_buffer_create_async", __LINE__)) return;
    if (fz_graph_owned(b)) {
        /* Made inside a capture: the graph owns it and frees it with itself (or when the
           capture is discarded), so it is used now, within the capture, and not kept. */
        fz_exp own = { 0 };
        FZ_CALL(NULL, gf_fill_async(s, b, 0, (unsigned char)v, size < 512 ? size : 512));
        FZ_CALL(NULL, gf_copy_to_host_async(s, fz_scratch, b, 0, size < 512 ? size : 512));
        FZ_CALL(&own, gf_buffer_destroy_async(s, b));   /* a no-op: GF_OK */
        FZ_VOID(1, 0, gf_buffer_destroy(b));   /* the graph's: refused (the last use of b here) */
        return;
    }
    if (i < 0) {   /* not capturing: to the cache (under op_oom that may be refused: the buffer is kept) */
        fz_exp ok = { 0 };
        if (FZ_CALL(fz_oom ? NULL : &ok, gf_buffer_destroy_async(s, b)) != GF_OK) fz_keep(b, d);
        return;
    }
    F.buf[i].h.live = 1; F.buf[i].h.dev = d; F.buf[i].b = b; F.buf[i].size = size; F.buf[i].async = 1;
    F.buf[i].view = 0; F.buf[i].parent = -1; F.buf[i].wrapped = 0;
}

static void op_buf_destroy_async(fz_in *in)
{
    fz_exp e = { 0 };
    int ds, db, si, bi;
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    gf_buffer *b = fz_pick_buf(in, &e, &db, &bi);
    fz_same_dev(&e, ds, db);
    if (bi >= 0 && !F.buf[bi].async) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);   /* not stream-ordered */
    else if (bi >= 0 && fz_views_of(bi)) fz_bad(&e, GF_ERROR_INVALID_STATE);  /* its views are alive */
    if (bi >= 0 && si >= 0 && e.bad == 0) {
        fz_alt(&e, GF_ERROR_NOT_SUPPORTED);   /* the stream captures: refused */
        fz_alt(&e, GF_ERROR_CAPTURE);         /* a capture uses the buffer */
    }
    if (FZ_CALL(&e, gf_buffer_destroy_async(s, b)) == GF_OK && bi >= 0) fz_drop_buf(bi);   /* fz_check dies on GF_OK for a bad handle */
}

/* Synchronous copies both ways. */
static void op_copy_sync(fz_in *in)
{
    fz_exp e = { 0 };
    int d, bi, to_device = (int)(fz_u8(in) & 1);
    gf_buffer *b = fz_pick_buf(in, &e, &d, &bi);
    size_t cap, size = bi >= 0 ? F.buf[bi].size : 64;
    unsigned char *h = fz_host_mem(in, &e, &cap);
    size_t off = fz_offset(in, size), bytes = fz_count(in, off < size ? size - off : 16);
    if (bi >= 0) {
        fz_exp probe = { 0 };
        if (!fz_range(&probe, size, off, bytes) && h) bytes = fz_clamp(bytes, cap < FZ_WORK_MAX ? cap : FZ_WORK_MAX);
        fz_range(&e, size, off, bytes);
        fz_alt(&e, GF_ERROR_CAPTURE);   /* a capture in progress uses the buffer */
    }
    if (fz_trace) printf("      offset %zu, bytes %zu, host %p\n", off, bytes, (void *)h);
    if (to_device) FZ_CALL(&e, gf_copy_to_device(b, off, h, bytes));
    else FZ_CALL(&e, gf_copy_to_host(h, b, off, bytes));
}

/* Async host copies: kind 0 host to device, 1 device to host. */
static void op_copy_host_async(fz_in *in, int kind)
{
    fz_exp e = { 0 };
    int ds, db, si, bi;
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    gf_buffer *b = fz_pick_buf(in, &e, &db, &bi);
    size_t cap, size = bi >= 0 ? F.buf[bi].size : 64;
    unsigned char *h = fz_host_mem(in, &e, &cap);
    size_t off = fz_offset(in, size), bytes = fz_count(in, off < size ? size - off : 16);
    fz_same_dev(&e, ds, db);
    if (bi >= 0) {
        fz_exp probe = { 0 };
        if (!fz_range(&probe, size, off, bytes) && h) bytes = fz_clamp(bytes, cap < FZ_WORK_MAX ? cap : FZ_WORK_MAX);
        fz_range(&e, size, off, bytes);
    }
    if (fz_trace) printf("      offset %zu, bytes %zu, host %p\n", off, bytes, (void *)h);
    if (kind == 0) FZ_CALL(&e, gf_copy_to_device_async(s, b, off, h, bytes));
    else FZ_CALL(&e, gf_copy_to_host_async(s, h, b, off, bytes));
}

static void op_copy_d2d_async(fz_in *in)
{
    fz_exp e = { 0 };
    int ds, d1, d2, si, b1, b2;
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    gf_buffer *dst = fz_pick_buf(in, &e, &d1, &b1), *src = fz_pick_buf(in, &e, &d2, &b2);
    size_t s1 = b1 >= 0 ? F.buf[b1].size : 64, s2 = b2 >= 0 ? F.buf[b2].size : 64, lim = s1 < s2 ? s1 : s2;
    size_t doff = fz_offset(in, s1), soff = fz_offset(in, s2), bytes = fz_count(in, lim);
    if (d1 >= 0 && d2 >= 0 && d1 != d2) {   /* between devices: on a stream of either */
        if (ds >= 0 && ds != d1 && ds != d2) fz_bad(&e, GF_ERROR_WRONG_DEVICE);
    } else {
        fz_same_dev(&e, ds, d1);
        fz_same_dev(&e, ds, d2);
    }
    if (b1 >= 0 && b2 >= 0) {
        fz_exp probe = { 0 };
        if (!fz_range(&probe, s1, doff, bytes) && !fz_range(&probe, s2, soff, bytes)) bytes = fz_clamp(bytes, FZ_WORK_MAX);
    }
    if (b1 >= 0) fz_range(&e, s1, doff, bytes);
    if (b2 >= 0) fz_range(&e, s2, soff, bytes);
    if (b1 >= 0 && b1 == b2 && bytes && (doff < soff ? soff - doff : doff - soff) < bytes)
        fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);   /* overlapping ranges of one buffer */
    if (fz_trace) printf("      dst_offset %zu, src_offset %zu, bytes %zu\n", doff, soff, bytes);
    FZ_CALL(&e, gf_copy_buffer_async(s, dst, doff, src, soff, bytes));
}

static void op_fill_async(fz_in *in)
{
    fz_exp e = { 0 };
    int ds, db, si, bi;
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    gf_buffer *b = fz_pick_buf(in, &e, &db, &bi);
    size_t size = bi >= 0 ? F.buf[bi].size : 64;
    size_t off = fz_offset(in, size), bytes = fz_count(in, off < size ? size - off : 16);
    unsigned char value = (unsigned char)fz_u8(in);
    fz_same_dev(&e, ds, db);
    if (bi >= 0) {
        fz_exp probe = { 0 };
        if (!fz_range(&probe, size, off, bytes)) bytes = fz_clamp(bytes, FZ_WORK_MAX);
        fz_range(&e, size, off, bytes);
    }
    if (fz_trace) printf("      offset %zu, bytes %zu\n", off, bytes);
    FZ_CALL(&e, gf_fill_async(s, b, off, value, bytes));
}

static void op_prefetch(fz_in *in)
{
    fz_exp e = { 0 };
    int ds, db, si, bi;
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    gf_buffer *b = fz_pick_buf(in, &e, &db, &bi);
    fz_same_dev(&e, ds, db);
    FZ_CALL(&e, gf_prefetch_async(s, b, (int)(fz_u8(in) % 3) - 1));   /* plain buffers: refused */
}

static void op_host(fz_in *in)
{
    fz_exp e = { 0 };
    gf_result r;
    int d, i;
    unsigned sel = fz_u8(in) % 8;
    if (sel >= 5) {   /* free one (after the devices are idle) */
        i = FZ_NTH(F.host, fz_u8(in), -1);
        if (sel == 7 && i >= 0) { FZ_VOID(1, 0, gf_host_free(NULL, F.host[i].p)); return; }   /* refused: stays */
        if (i >= 0) fz_free_host(i);
        else FZ_VOID(0, 0, gf_host_free(F.dev[0], NULL));   /* freeing NULL does nothing */
        return;
    } else {
        gf_device *dev = fz_pick_dev(in, &e, &d);
        void *p = NULL;
        size_t size = sel == 3 ? 0 : 1 + fz_u16(in) % 8192;
        if (sel == 3) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (sel == 4) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_host_alloc(dev, size, NULL)); return; }
        i = FZ_FREE(F.host);
        if (i < 0 && !e.bad) return;
        r = FZ_CALL(&e, gf_host_alloc(dev, size, &p));
        if (!fz_made(r, p, "gf_host_alloc", __LINE__)) return;
        memset(p, 0x3c, size);
        F.host[i].h.live = 1; F.host[i].h.dev = d; F.host[i].p = (unsigned char *)p; F.host[i].size = size;
    }
}

static const char *const fz_labels[] = {
    NULL, "", "s", "a label that is longer than the sixty-four bytes a stream keeps for its label, cut",
    "quote\" backslash\\ ctl\x01 high\xff", "pool"
};
#define FZ_LABEL(v) fz_labels[(v) % (sizeof fz_labels / sizeof fz_labels[0])]

static void op_stream_create(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i = FZ_FREE(F.str);
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_stream_desc desc;
    gf_stream *s = NULL;
    unsigned sel = fz_u8(in) % 8;
    desc.label = FZ_LABEL(fz_u8(in));
    desc.priority = (gf_priority)(fz_u8(in) % 3);
    if (sel == 6) { desc.priority = (gf_priority)(3 + fz_u8(in)); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_stream_create(dev, &desc, NULL)); return; }
    if (i < 0 && !e.bad) return;
    if (FZ_CALL(&e, gf_stream_create(dev, sel < 3 ? NULL : &desc, &s)) != GF_OK) return;
    if (gf_stream_device(s) != dev || !gf_stream_label(s) || gf_stream_id(s) == 0)
        fz_die(__LINE__, "gf_stream_device / label / id", "do not describe the new stream");
    F.str[i].h.live = 1; F.str[i].h.dev = d; F.str[i].s = s; F.str[i].kind = FZ_S_PLAIN; F.str[i].owner = -1;
}

static void op_stream_destroy(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i;
    gf_stream *s = fz_pick_stream(in, &e, &d, &i);
    if (i < 0) { FZ_VOID(s != NULL, s == NULL, gf_stream_destroy(s)); return; }
    if (F.str[i].kind != FZ_S_PLAIN) { FZ_VOID(1, 0, gf_stream_destroy(s)); return; }   /* a pool's or set's: refused */
    fz_destroy_stream(i);
}

/* Synchronize or query: on a capturing stream both end the capture with GF_ERROR_CAPTURE. */
static void op_stream_sync(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i, sel;
    gf_stream *s = fz_pick_stream(in, &e, &d, &i);
    gf_stream_stats st = { 0 };
    sel = (int)(fz_u8(in) % 5);
    if (i >= 0 && (sel < 2 || sel == 4) && fz_capture_role(s)) fz_bad(&e, GF_ERROR_CAPTURE);
    switch (sel) {
    case 0: FZ_CALL(&e, gf_stream_synchronize(s)); break;
    case 1: FZ_CALL(&e, gf_stream_query(s)); break;
    case 4: FZ_CALL(&e, gf_stream_synchronize_timeout(s, fz_u8(in) % 4)); break;   /* GF_TIMEOUT while busy */
    case 2:
        if (fz_u8(in) % 8 == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_stream_get_stats(s, NULL)); }
        else if (FZ_CALL(&e, gf_stream_get_stats(s, &st)) == GF_OK && st.copies > st.ops)
            fz_die(__LINE__, "gf_stream_get_stats", "counts more copies than operations");
        break;
    default:
        if (i < 0 && (gf_stream_id(s) != 0 || gf_stream_device(s) != NULL || (gf_stream_label(s) && gf_stream_label(s)[0])))
            fz_die(__LINE__, "gf_stream_id / device / label", "describe a bad handle");
        break;
    }
    if (i >= 0 && (sel < 2 || sel == 4) && fz_capture_role(s))
        fz_die(__LINE__, "gf_stream_synchronize / query", "left the stream capturing");
}

static void op_stream_wait(fz_in *in)
{
    fz_exp e = { 0 };
    int ds, dx, si, xi;
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    if (fz_u8(in) & 1) {
        gf_event *ev = fz_pick_event(in, &e, &dx, &xi);   /* of any device: a wait across devices is bridged */
        (void)dx;
        if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);   /* capture rules: another capture's event, ... */
        FZ_CALL(&e, gf_stream_wait_event(s, ev));
    } else {
        gf_stream *other = fz_pick_stream(in, &e, &dx, &xi);   /* of any device, as above */
        (void)dx;
        if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);   /* a capturing waiter, another capture's stream */
        FZ_CALL(&e, gf_stream_wait_stream(s, other));
    }
}

static void op_stream_callback(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i;
    gf_stream *s = fz_pick_stream(in, &e, &d, &i);
    int nofn = fz_u8(in) % 8 == 7;
    if (nofn) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    FZ_CALL(&e, gf_stream_add_callback(s, nofn ? NULL : fz_count_cb, NULL));
}

static void op_event_create(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i = FZ_FREE(F.ev);
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_event *ev = NULL;
    unsigned sel = fz_u8(in) % 8, flags = sel & 1 ? GF_EVENT_TIMING : 0;
    if (sel == 6) { flags = 2u << (fz_u8(in) % 8); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_event_create(dev, flags, NULL)); return; }
    if (i < 0 && !e.bad) return;
    if (FZ_CALL(&e, gf_event_create(dev, flags, &ev)) != GF_OK) return;
    memset(&F.ev[i], 0, sizeof F.ev[i]);
    F.ev[i].h.live = 1; F.ev[i].h.dev = d; F.ev[i].e = ev; F.ev[i].pool = -1; F.ev[i].flags = flags;
}

static void op_event_destroy(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i;
    gf_event *ev = fz_pick_event(in, &e, &d, &i);
    if (i < 0 || F.ev[i].pool >= 0) { FZ_VOID(ev != NULL, ev == NULL, gf_event_destroy(ev)); return; }   /* a pool's: refused */
    fz_destroy_event(i, (int)(fz_u8(in) & 1));   /* pending waits put the free off, not the destroy */
}

static void op_event_record(fz_in *in)
{
    fz_exp e = { 0 };
    int ds, dx, si, xi;
    gf_event *ev = fz_pick_event(in, &e, &dx, &xi);
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    fz_same_dev(&e, dx, ds);
    if (FZ_CALL(&e, gf_event_record(ev, s)) == GF_OK) {
        F.ev[xi].recorded = 1;
    }
}

static void op_event_sync(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i;
    gf_event *ev = fz_pick_event(in, &e, &d, &i);
    unsigned sel = fz_u8(in) % 3;
    if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);   /* recorded in a capture in progress */
    if (sel == 0) FZ_CALL(&e, gf_event_synchronize(ev));
    else if (sel == 1) FZ_CALL(&e, gf_event_query(ev));
    else FZ_CALL(&e, gf_event_synchronize_timeout(ev, fz_u8(in) % 4));   /* GF_TIMEOUT while pending */
}

static void op_event_elapsed(fz_in *in)
{
    fz_exp e = { 0 };
    int d1, d2, i1, i2;
    gf_event *a = fz_pick_event(in, &e, &d1, &i1), *b = fz_pick_event(in, &e, &d2, &i2);
    float ms = 0;
    int noms = fz_u8(in) % 8 == 7;
    if (noms) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    fz_same_dev(&e, d1, d2);
    if ((i1 >= 0 && !(F.ev[i1].flags & GF_EVENT_TIMING)) || (i2 >= 0 && !(F.ev[i2].flags & GF_EVENT_TIMING)))
        fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    else if ((i1 >= 0 && !F.ev[i1].recorded) || (i2 >= 0 && !F.ev[i2].recorded))
        fz_bad(&e, GF_ERROR_INVALID_STATE);
    if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);
    FZ_CALL(&e, gf_event_elapsed_ms(a, b, noms ? NULL : &ms));
}

static void op_event_wait(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i, w;
    unsigned sel = fz_u8(in) % 8;
    if (sel >= 5) {   /* cancel: a pending wait, one that fired, or an id never made */
        gf_device *dev = fz_pick_dev(in, &e, &d);
        w = FZ_NTH(F.wait, fz_u8(in), -1);
        if (sel == 7 || w < 0) {
            if (!e.bad) fz_bad(&e, GF_ERROR_NOT_FOUND);
            FZ_CALL(&e, gf_event_cancel_wait(dev, sel == 7 ? 0 : (uint64_t)1 << 62));
            return;
        }
        /* NOT_FOUND once fired; given another device, an id that device may also have made */
        if (FZ_CALL(&e, gf_event_cancel_wait(dev, F.wait[w].id)) == GF_OK && !F.wait[w].id)
            fz_die(__LINE__, "gf_event_cancel_wait", "cancelled wait id 0");
        if (d == F.wait[w].h.dev && F.wait[w].id) F.wait[w].h.live = 0;
        return;
    } else {
        gf_event *ev = fz_pick_event(in, &e, &d, &i);
        uint64_t id = 0;
        int nofn = sel == 4;
        if (nofn) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);
        if ((w = FZ_FREE(F.wait)) < 0 && !e.bad) return;
        /* sel 3: without an id; it cannot be cancelled and must fire on its own */
        if (FZ_CALL(&e, gf_event_on_complete(ev, nofn ? NULL : fz_count_cb, NULL, sel == 3 ? NULL : &id)) != GF_OK) return;
        if (sel != 3 && id == 0) fz_die(__LINE__, "gf_event_on_complete", "gave wait id 0");
        F.wait[w].h.live = 1; F.wait[w].h.dev = d; F.wait[w].id = id; F.wait[w].e = ev;
    }
}

static void op_epool_create(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i = FZ_FREE(F.epool);
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_event_pool_desc desc;
    gf_event_pool *p = NULL;
    unsigned sel = fz_u8(in) % 8;
    desc.capacity = (int)(fz_u8(in) % 6);
    desc.timing_capacity = (int)(fz_u8(in) % 6);
    if (sel == 5) { desc.capacity = -1 - (int)fz_u8(in); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 6) { desc.timing_capacity = -1; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_event_pool_create(dev, &desc, NULL)); return; }
    if (i < 0 && !e.bad) return;
    if (FZ_CALL(&e, gf_event_pool_create(dev, sel < 2 ? NULL : &desc, &p)) != GF_OK) return;
    F.epool[i].h.live = 1; F.epool[i].h.dev = d; F.epool[i].p = p;
}

static void op_epool_destroy(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.epool, K_EPOOL, &bad);
    if (i < 0) { FZ_VOID(bad != NULL, bad == NULL, gf_event_pool_destroy((gf_event_pool *)bad)); return; }
    fz_destroy_epool(i, (int)(fz_u8(in) & 1));
}

static void op_epool_use(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int pi = FZ_PICK(in, &e, F.epool, K_EPOOL, &bad), d, xi, k;
    gf_event_pool *p = pi >= 0 ? F.epool[pi].p : (gf_event_pool *)bad;
    unsigned sel = fz_u8(in) % 8;
    if (sel < 3) {   /* acquire */
        gf_event *ev = NULL;
        unsigned flags = sel == 1 ? GF_EVENT_TIMING : 0;
        int i = FZ_FREE(F.ev);
        if (sel == 2 && fz_u8(in) & 1) { flags = 4; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        else if (sel == 2) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_event_pool_acquire(p, 0, NULL)); return; }
        if (i < 0 && !e.bad) return;
        if (FZ_CALL(&e, gf_event_pool_acquire(p, flags, &ev)) != GF_OK) return;
        memset(&F.ev[i], 0, sizeof F.ev[i]);
        F.ev[i].h.live = 1; F.ev[i].h.dev = F.epool[pi].h.dev; F.ev[i].e = ev; F.ev[i].pool = pi; F.ev[i].flags = flags;
    } else if (sel < 6) {   /* release; twice in a row is refused, and so is recording a released event */
        gf_event *ev = fz_pick_event(in, &e, &d, &xi);
        if (xi >= 0 && pi >= 0 && F.ev[xi].pool != pi && fz_u8(in) & 1)   /* mostly one of this pool's */
            for (k = 0; k < FZ_NEVENT; k++) if (F.ev[k].h.live && F.ev[k].pool == pi) { xi = k; ev = F.ev[k].e; d = F.ev[k].h.dev; break; }
        if (xi >= 0 && F.ev[xi].pool != pi && pi >= 0) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);   /* not this pool's */
        if (xi >= 0 && pi >= 0 && F.ev[xi].h.dev != F.epool[pi].h.dev) fz_alt(&e, GF_ERROR_WRONG_DEVICE);
        if (FZ_CALL(&e, gf_event_pool_release(p, ev)) != GF_OK) return;
        F.ev[xi].h.live = 0;
        fz_forget_waits(ev);
        if (sel == 4) { fz_exp twice = { 0 }; fz_bad(&twice, GF_ERROR_INVALID_STATE); FZ_CALL(&twice, gf_event_pool_release(p, ev)); }
        if (sel == 5 && (k = FZ_NTH(F.str, fz_u8(in), F.epool[pi].h.dev)) >= 0) {
            fz_exp rec = { 0 };
            fz_bad(&rec, GF_ERROR_INVALID_STATE);
            FZ_CALL(&rec, gf_event_record(ev, F.str[k].s));
        }
    } else {
        gf_event_pool_stats st = { 0 };
        int noout = sel == 7 && fz_u8(in) % 4 == 3;
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (FZ_CALL(&e, gf_event_pool_get_stats(p, noout ? NULL : &st)) == GF_OK && (st.available < 0 || st.in_use < 0 || st.available + st.in_use != st.created))
            fz_die(__LINE__, "gf_event_pool_get_stats", "available + in_use != created");
    }
}

static void op_spool_create(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i = FZ_FREE(F.spool);
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_stream_pool_desc desc;
    gf_stream_pool *p = NULL;
    unsigned sel = fz_u8(in) % 8;
    memset(&desc, 0, sizeof desc);
    desc.count = (int)(fz_u8(in) % 5);            /* 0: the default, 4 */
    desc.strategy = (gf_pool_strategy)(fz_u8(in) % 4);
    desc.label = FZ_LABEL(fz_u8(in));
    desc.measure_completion = (int)(fz_u8(in) & 1);
    if (sel == 5) { desc.count = fz_u8(in) & 1 ? -1 : GF_POOL_MAX_STREAMS + 1; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 6) { desc.strategy = (gf_pool_strategy)(4 + fz_u8(in)); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_stream_pool_create(dev, &desc, NULL)); return; }
    if (i < 0 && !e.bad) return;
    if (FZ_CALL(&e, gf_stream_pool_create(dev, sel == 0 ? NULL : &desc, &p)) != GF_OK) return;
    F.spool[i].h.live = 1; F.spool[i].h.dev = d; F.spool[i].p = p;
}

static void op_spool_destroy(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.spool, K_SPOOL, &bad);
    if (i < 0) { FZ_VOID(bad != NULL, bad == NULL, gf_stream_pool_destroy((gf_stream_pool *)bad)); return; }
    fz_destroy_spool(i);
}

static int fz_leases(const gf_stream *s)
{
    int i, n = 0;
    for (i = 0; i < FZ_NSTREAM; i++) n += F.str[i].h.live && F.str[i].kind == FZ_S_LEASE && F.str[i].s == s;
    return n;
}

static void op_spool_use(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int pi = FZ_PICK(in, &e, F.spool, K_SPOOL, &bad), d, si;
    gf_stream_pool *p = pi >= 0 ? F.spool[pi].p : (gf_stream_pool *)bad;
    unsigned sel = fz_u8(in) % 8;
    gf_stream *s = NULL;
    if (sel < 3) {   /* acquire, with a hint or without; acquire_ready with a short timeout */
        gf_acquire_hint hint;
        int i = FZ_FREE(F.str);
        gf_result r;
        hint.priority = (gf_priority)(fz_u8(in) % 3);
        hint.workload = (gf_workload)(fz_u8(in) % GF_WORKLOAD_COUNT);
        if (fz_u8(in) % 16 == 15 && sel == 1) { hint.workload = (gf_workload)(GF_WORKLOAD_COUNT + fz_u8(in)); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        if (i < 0 && !e.bad) return;
        if (sel == 2) r = FZ_CALL(&e, gf_stream_pool_acquire_ready(p, fz_u8(in) % 3, &s));   /* GF_TIMEOUT when all are busy */
        else r = FZ_CALL(&e, gf_stream_pool_acquire(p, sel == 0 ? NULL : &hint, &s));
        if (r != GF_OK) return;
        if (i < 0) { FZ_CALL(NULL, gf_stream_pool_release(p, s)); return; }
        F.str[i].h.live = 1; F.str[i].h.dev = F.spool[pi].h.dev; F.str[i].s = s; F.str[i].kind = FZ_S_LEASE; F.str[i].owner = pi;
    } else if (sel < 5) {   /* release: a lease of this pool; twice in a row is refused */
        s = fz_pick_stream(in, &e, &d, &si);
        if (si >= 0 && pi >= 0 && (F.str[si].kind != FZ_S_LEASE || F.str[si].owner != pi) && fz_u8(in) & 1) {   /* mostly a lease */
            int k;
            for (k = 0; k < FZ_NSTREAM; k++)
                if (F.str[k].h.live && F.str[k].kind == FZ_S_LEASE && F.str[k].owner == pi) { si = k; s = F.str[k].s; d = F.str[k].h.dev; break; }
        }
        if (si >= 0 && pi >= 0 && (F.str[si].kind != FZ_S_LEASE || F.str[si].owner != pi))
            fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);   /* not a stream of this pool */
        if (FZ_CALL(&e, gf_stream_pool_release(p, s)) != GF_OK) return;
        F.str[si].h.live = 0;
        if (sel == 4 && fz_leases(s) == 0) { fz_exp twice = { 0 }; fz_bad(&twice, GF_ERROR_INVALID_STATE); FZ_CALL(&twice, gf_stream_pool_release(p, s)); }
    } else if (sel < 7) {
        if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);   /* a pool stream was capturing */
        FZ_CALL(&e, gf_stream_pool_synchronize(p));
    } else {
        gf_stream_pool_stats st = { 0 };
        int noout = fz_u8(in) % 4 == 3;
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        FZ_CALL(&e, gf_stream_pool_get_stats(p, noout ? NULL : &st));
    }
}

static void op_set_create(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i = FZ_FREE(F.set), depth;
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_stream_set *set = NULL;
    unsigned sel = fz_u8(in) % 8;
    depth = 1 + (int)(fz_u8(in) % 3);
    if (sel == 5) { depth = -(int)(fz_u8(in) % 3); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 6) { depth = GF_POOL_MAX_STREAMS + 1; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_stream_set_create(dev, depth, "set", NULL)); return; }
    if (i < 0 && !e.bad) return;
    if (FZ_CALL(&e, gf_stream_set_create(dev, depth, FZ_LABEL(fz_u8(in)), &set)) != GF_OK) return;
    F.set[i].h.live = 1; F.set[i].h.dev = d; F.set[i].s = set; F.set[i].depth = depth;
}

static void op_set_destroy(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.set, K_SET, &bad);
    if (i < 0) { FZ_VOID(bad != NULL, bad == NULL, gf_stream_set_destroy((gf_stream_set *)bad)); return; }
    fz_destroy_set(i);
}

static void op_set_use(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.set, K_SET, &bad), k, have = 0;
    gf_stream_set *set = i >= 0 ? F.set[i].s : (gf_stream_set *)bad;
    unsigned sel = fz_u8(in) % 4;
    size_t at = fz_u8(in) % 16 == 15 ? SIZE_MAX - fz_u8(in) : fz_u8(in);
    gf_stream *s = NULL;
    if (sel == 0) {   /* get: NULL (and an error text) for a bad set */
        fz_prime();
        s = gf_stream_set_get(set, at);
        if (fz_trace) printf("    gf_stream_set_get -> %p\n", (void *)s);
        if (i < 0 && (s || !fz_error_set())) fz_die(__LINE__, "gf_stream_set_get", "gave a stream for a bad set, or set no error text");
        if (i >= 0 && !s) fz_die(__LINE__, "gf_stream_set_get", "gave no stream for a live set");
        if (i >= 0 && at < SIZE_MAX - 64 && gf_stream_set_get(set, at + (size_t)F.set[i].depth) != s)
            fz_die(__LINE__, "gf_stream_set_get", "slot i and slot i + depth are different streams");
    } else if (sel == 1) {   /* next: waits for the slot's previous round */
        int noout = fz_u8(in) % 8 == 7;
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);
        if (FZ_CALL(&e, gf_stream_set_next(set, at, noout ? NULL : &s)) != GF_OK) s = NULL;
    } else {
        if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);
        FZ_CALL(&e, gf_stream_set_synchronize(set));
    }
    if (!s || i < 0) return;
    for (k = 0; k < FZ_NSTREAM; k++) have |= F.str[k].h.live && F.str[k].s == s;
    if (have || (k = FZ_FREE(F.str)) < 0) return;
    F.str[k].h.live = 1; F.str[k].h.dev = F.set[i].h.dev; F.str[k].s = s; F.str[k].kind = FZ_S_SET; F.str[k].owner = i;
}

/* gf_barrier and gf_synchronize_all over a list of streams (NULL, wrong-type, another device's). */
static void op_barrier(fz_in *in)
{
    fz_exp e = { 0 };
    gf_stream *list[6] = { 0 };
    int n = 1 + (int)(fz_u8(in) % 5), i, d, si;
    unsigned sel = fz_u8(in) % 8;
    double ms = 0;
    for (i = 0; i < n; i++) list[i] = fz_pick_stream(in, &e, &d, &si);   /* of any devices: waits bridge them */
    if (sel == 6) { n = -(int)(fz_u8(in) % 2); e.bad = 0; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 7) { e.bad = 0; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel & 1) {
        if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);
        FZ_CALL(&e, gf_synchronize_all(sel == 7 ? NULL : list, n, fz_u8(in) & 1 ? &ms : NULL));
    } else {
        if (!e.bad) fz_alt(&e, GF_ERROR_CAPTURE);
        FZ_CALL(&e, gf_barrier(sel == 7 ? NULL : list, n));
    }
}

static void op_flow_create(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i = FZ_FREE(F.flow);
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_flow_desc desc;
    gf_flow *f = NULL;
    unsigned sel = fz_u8(in) % 8;
    memset(&desc, 0, sizeof desc);   /* the fields it does not set: their defaults */
    desc.label = FZ_LABEL(fz_u8(in));
    desc.workload = (gf_workload)(fz_u8(in) % GF_WORKLOAD_COUNT);
    if (sel == 6) { desc.workload = (gf_workload)(GF_WORKLOAD_COUNT + fz_u8(in)); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_flow_create(dev, &desc, NULL)); return; }
    if (i < 0 && !e.bad) return;
    if (FZ_CALL(&e, gf_flow_create(dev, sel < 2 ? NULL : &desc, &f)) != GF_OK) return;
    memset(&F.flow[i], 0, sizeof F.flow[i]);
    F.flow[i].h.live = 1; F.flow[i].h.dev = d; F.flow[i].f = f;
}

static void op_flow_destroy(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.flow, K_FLOW, &bad);
    if (i < 0) { FZ_VOID(bad != NULL, bad == NULL, gf_flow_destroy((gf_flow *)bad)); return; }
    FZ_VOID(0, 1, gf_flow_destroy(F.flow[i].f));
    F.flow[i].h.live = 0;
}

static void op_flow_add(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.flow, K_FLOW, &bad);
    gf_flow *f = i >= 0 ? F.flow[i].f : (gf_flow *)bad;
    unsigned sel = fz_u8(in) % 8, kind = fz_u8(in) % FZ_T_COUNT;
    gf_task t = 0;
    if (sel == 6) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_flow_add(f, "x", NULL, NULL, &t)); return; }
    if (sel == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_flow_add(f, "x", fz_task, (void *)&fz_task_kind[kind], NULL)); return; }
    if (i >= 0 && F.flow[i].tasks == FZ_TASKS) return;   /* as many as the fuzzer tracks */
    if (FZ_CALL(&e, gf_flow_add(f, sel < 2 ? NULL : sel < 4 ? fz_task_names[kind] : FZ_LABEL(fz_u8(in)), fz_task,
                                (void *)&fz_task_kind[kind], &t)) != GF_OK) return;
    F.flow[i].task[F.flow[i].tasks] = t;
    F.flow[i].succ[F.flow[i].tasks] = 0;
    F.flow[i].tasks++;
}

/* Whether task 'to' is reachable from 'from' in the fuzzer's copy of the flow's edges. */
static int fz_reaches(const fz_flow *fl, int from, int to)
{
    unsigned seen = 1u << from, frontier = 1u << from;
    int k;
    while (frontier) {
        unsigned next = 0;
        for (k = 0; k < fl->tasks; k++) if (frontier & (1u << k)) next |= fl->succ[k];
        next &= ~seen;
        seen |= next;
        frontier = next;
    }
    return (seen >> to) & 1u;
}

static void op_flow_depend(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.flow, K_FLOW, &bad), a, b, o;
    gf_flow *f = i >= 0 ? F.flow[i].f : (gf_flow *)bad;
    unsigned sel = fz_u8(in) % 8;
    gf_task before = 0, after = 0;
    a = (int)fz_u8(in); b = (int)fz_u8(in);
    if (i >= 0 && F.flow[i].tasks > 0) {
        a %= F.flow[i].tasks; b %= F.flow[i].tasks;
        before = F.flow[i].task[a]; after = F.flow[i].task[b];
    } else {
        a = b = -1;
    }
    if (sel == 6) {   /* a task id that is not one of this flow's */
        o = FZ_NTH(F.flow, fz_u8(in), -1);
        after = o >= 0 && o != i && F.flow[o].tasks ? F.flow[o].task[0] : fz_u8(in) & 1 ? 0xffffffffu : before + 0x100;
        b = -1;
        if (!e.bad) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    } else if (a < 0 && !e.bad) {
        fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);   /* the flow has no tasks */
    } else if (!e.bad && a == b) {
        fz_bad(&e, GF_ERROR_CYCLE);
    } else if (!e.bad && fz_reaches(&F.flow[i], b, a)) {
        fz_bad(&e, GF_ERROR_CYCLE);               /* after already leads to before */
    }
    /* a refusal was expected (and checked) wherever i, a or b is -1: only a real edge is recorded */
    if (FZ_CALL(&e, gf_flow_depend(f, before, after)) == GF_OK && i >= 0 && a >= 0 && b >= 0) F.flow[i].succ[a] |= 1u << b;
}

static void op_flow_run(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.flow, K_FLOW, &bad), d;
    gf_flow *f = i >= 0 ? F.flow[i].f : (gf_flow *)bad;
    if (fz_u8(in) & 1) {
        int pi = FZ_PICK(in, &e, F.spool, K_SPOOL, &bad);
        fz_same_dev(&e, i >= 0 ? F.flow[i].h.dev : -1, pi >= 0 ? F.spool[pi].h.dev : -1);
        FZ_CALL(&e, gf_flow_run(f, pi >= 0 ? F.spool[pi].p : (gf_stream_pool *)bad));   /* tasks may fail */
    } else {
        int si;
        gf_graph *g = NULL;
        gf_stream *s = fz_pick_stream(in, &e, &d, &si);
        unsigned deps = fz_deps_live();
        int noout = fz_u8(in) % 8 == 7;
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        fz_same_dev(&e, i >= 0 ? F.flow[i].h.dev : -1, d);
        if (!e.bad && si >= 0 && fz_capture_role(s)) fz_bad(&e, GF_ERROR_CAPTURE);   /* captures do not nest */
        if (FZ_CALL(&e, gf_flow_capture(f, s, noout ? NULL : &g)) == GF_OK) fz_graph_add(g, d, deps | fz_deps_live(), 0, -1);
    }
}

/* A graph pool argument: none (NULL is allowed), a live one, or one of another type. */
static gf_graph_pool *fz_pick_gpool(fz_in *in, fz_exp *e, int sdev, int *slot)
{
    unsigned sel = fz_u8(in) % 8;
    void *bad;
    *slot = -1;
    if (sel < 4) return NULL;
    if ((*slot = FZ_PICK(in, e, F.gpool, K_GPOOL, &bad)) < 0) {
        if (!bad) { e->bad--; if (!e->bad) e->code = GF_OK; }   /* NULL: no pool, not a bad handle */
        return (gf_graph_pool *)bad;
    }
    fz_same_dev(e, sdev, F.gpool[*slot].h.dev);
    return F.gpool[*slot].p;
}

static void op_capture_begin(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i, pi = -1;
    gf_stream *s = fz_pick_stream(in, &e, &d, &i);
    unsigned mode = fz_u8(in) % 4, with_pool = fz_u8(in) & 1;
    gf_graph_pool *gp = with_pool ? fz_pick_gpool(in, &e, d, &pi) : NULL;
    if (mode == 3) { mode = 3 + fz_u8(in); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    else if (i >= 0 && fz_capture_role(s)) fz_bad(&e, GF_ERROR_CAPTURE);   /* begin twice, or on a joined stream */
    if (i >= 0 && !fz_cap_room(s)) return;
    if (with_pool) { if (FZ_CALL(&e, gf_stream_begin_capture_pool(s, (gf_capture_mode)mode, gp)) == GF_OK) fz_cap_begun(i, pi); }
    else if (FZ_CALL(&e, gf_stream_begin_capture(s, (gf_capture_mode)mode)) == GF_OK) fz_cap_begun(i, -1);
}

static void op_capture_end(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i, c, role = 0;
    gf_stream *s = fz_pick_stream(in, &e, &d, &i);
    gf_graph *g = NULL;
    int noout = fz_u8(in) % 8 == 7;
    if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    else if (i >= 0 && (role = fz_capture_role(s)) != 1) fz_bad(&e, GF_ERROR_CAPTURE);   /* not capturing, or joined */
    c = i >= 0 ? fz_cap_of(s) : -1;
    if (FZ_CALL(&e, gf_stream_end_capture(s, noout ? NULL : &g)) == GF_OK) {
        gf_graph_info gi = {0};
        if (c < 0) fz_die(__LINE__, "gf_stream_end_capture", "ended a capture the fuzzer did not begin");
        fz_graph_add(g, d, F.cap[c].deps | fz_deps_live(), F.cap[c].stale, F.cap[c].gpool);
        if (FZ_CALL(NULL, gf_graph_get_info(g, &gi)) == GF_OK && gi.nodes < 0) fz_die(__LINE__, "gf_graph_get_info", "negative node count");
    }
    if (i >= 0 && role == 1 && !noout && fz_capture_role(s)) fz_die(__LINE__, "gf_stream_end_capture", "left the stream capturing");
}

static gf_graph *fz_pick_graph(fz_in *in, fz_exp *e, int *slot)
{
    void *bad;
    int i = FZ_PICK(in, e, F.graph, K_GRAPH, &bad);
    *slot = i;
    return i >= 0 ? F.graph[i].g : (gf_graph *)bad;
}

static void op_graph_launch(fz_in *in)
{
    fz_exp e = { 0 };
    int gi, d, si;
    gf_graph *g = fz_pick_graph(in, &e, &gi);
    gf_stream *s = fz_pick_stream(in, &e, &d, &si);
    if (gi >= 0 && F.graph[gi].stale) return;   /* its commands may point at freed memory */
    fz_same_dev(&e, gi >= 0 ? F.graph[gi].h.dev : -1, d);
    if (!e.bad) { fz_alt(&e, GF_ERROR_NOT_SUPPORTED); fz_alt(&e, GF_ERROR_CAPTURE); }   /* a memory-owning graph inside a capture */
    if (gi >= 0) F.op_deps |= F.graph[gi].deps;      /* a capture copies its commands in */
    FZ_CALL(&e, gf_graph_launch(g, s));
}

static void op_graph_update(fz_in *in)
{
    fz_exp e = { 0 };
    int a, b;
    gf_graph *target = fz_pick_graph(in, &e, &a), *from = fz_pick_graph(in, &e, &b);
    fz_same_dev(&e, a >= 0 ? F.graph[a].h.dev : -1, b >= 0 ? F.graph[b].h.dev : -1);
    if (FZ_CALL(&e, gf_graph_update(target, from)) == GF_OK && a != b) {   /* shape mismatch, owned memory: refused */
        F.graph[a].deps |= F.graph[b].deps;
        F.graph[a].stale |= F.graph[b].stale;
    }
}

/* gf_graph_capture runs fn warmup times, then once under capture. Its arguments (desc's mode
   and pool included) are checked before the first run: a refused call changes nothing. */
static void op_graph_capture(fz_in *in)
{
    fz_exp e = { 0 }, run = { 0 };   /* e: refused up front; run: failures of fn's runs */
    int d, si, runs = fz_task_runs, role;
    gf_stream *s = fz_pick_stream(in, &e, &d, &si);
    fz_exp e_stream = e;   /* what a NULL desc (every default) is refused for */
    unsigned sel = fz_u8(in) % 16, kind = fz_u8(in) % FZ_T_COUNT;
    int warmup = (int)(fz_u8(in) % 3);
    unsigned deps = fz_deps_live();
    gf_graph *g = NULL;
    if (sel == 13) { warmup = -1 - (int)fz_u8(in); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
    if (sel == 14) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_graph_capture(s, warmup, NULL, NULL, &g)); return; }
    if (sel == 15) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_graph_capture(s, warmup, fz_task, (void *)&fz_task_kind[kind], NULL)); return; }
    role = si >= 0 ? fz_capture_role(s) : 0;
    if (si >= 0 && role) fz_bad(&e, GF_ERROR_CAPTURE);   /* captures do not nest: refused before any warm-up run */
    if (kind == FZ_T_FAIL) fz_bad(&run, GF_ERROR_INVALID_STATE);          /* fn's own failure comes back */
    else if (kind == FZ_T_SYNC) fz_bad(&run, GF_ERROR_CAPTURE);           /* a sync inside the capture */
    if (fz_u8(in) & 1) {   /* the desc form: warm-up runs, mode and a graph pool */
        gf_capture_desc desc;
        int pi = -1, nodesc = fz_u8(in) % 16 == 15;
        desc.warmup_runs = warmup;
        desc.mode = (gf_capture_mode)(fz_u8(in) % 4);
        if (desc.mode == 3) { desc.mode = (gf_capture_mode)(3 + fz_u8(in)); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        desc.pool = fz_pick_gpool(in, &e, d, &pi);
        if (nodesc) {   /* NULL: warm-up 0, GF_CAPTURE_GLOBAL, no pool; the stream's refusals alone */
            e = e_stream;
            if (si >= 0 && role) fz_bad(&e, GF_ERROR_CAPTURE);
            pi = -1;
        }
        if (FZ_CALL(e.bad ? &e : &run, gf_graph_capture_desc(s, nodesc ? NULL : &desc, fz_task, (void *)&fz_task_kind[kind], &g)) == GF_OK)
            fz_graph_add(g, d, deps | fz_deps_live(), 0, pi);
    } else if (FZ_CALL(e.bad ? &e : &run, gf_graph_capture(s, warmup, fz_task, (void *)&fz_task_kind[kind], &g)) == GF_OK)
        fz_graph_add(g, d, deps | fz_deps_live(), 0, -1);
    if (e.bad && !fz_oom && fz_task_runs != runs) fz_die(__LINE__, "gf_graph_capture", "ran fn although its arguments were refused");
    if (e.bad && !fz_oom && si >= 0 && fz_capture_role(s) != role)
        fz_die(__LINE__, "gf_graph_capture", "a refused call changed the stream's capture");
    if (si >= 0 && fz_capture_role(s) == 1 && fz_cap_of(s) < 0) fz_die(__LINE__, "gf_graph_capture", "left the stream capturing");
}

/* A path for a DOT or trace file: /dev/null, or bad (empty, NULL, unwritable). *bad: the code. */
static const char *fz_path(fz_in *in, gf_result *bad)
{
    switch (fz_u8(in) % 8) {
    case 5: *bad = GF_ERROR_INVALID_ARGUMENT; return "";
    case 6: *bad = GF_ERROR_INVALID_ARGUMENT; return NULL;
    case 7: *bad = GF_OK; return "/nonexistent-gpuflow-fuzz/dir/out.dot";   /* some failure */
    default: *bad = (gf_result)1; return "/dev/null";
    }
}

static void op_graph_misc(fz_in *in)
{
    fz_exp e = { 0 };
    int gi, d, si;
    gf_graph *g = fz_pick_graph(in, &e, &gi);
    unsigned sel = fz_u8(in) % 5;
    gf_graph_info info = {0};
    if (sel == 4) {
        gf_result bad;
        const char *path = fz_path(in, &bad);
        if (bad != (gf_result)1) fz_bad(&e, bad);
        FZ_CALL(&e, gf_graph_write_dot(g, path));
        return;
    }
    if (sel == 0) {
        int noout = fz_u8(in) % 8 == 7;
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        FZ_CALL(&e, gf_graph_get_info(g, noout ? NULL : &info));
        return;
    }
    if (gi < 0) { FZ_VOID(g != NULL, g == NULL, gf_graph_destroy(g)); return; }
    if (FZ_VOID(0, 0, gf_graph_destroy(g))) return;   /* refused only if waiting for the device failed */
    F.graph[gi].h.live = 0;
    if (sel == 2) {   /* the destroyed handle, before any capture can reuse its shell: refused */
        fz_exp dead = { 0 };
        gf_stream *s = fz_pick_stream(in, &dead, &d, &si);
        fz_bad(&dead, GF_ERROR_INVALID_HANDLE);
        FZ_CALL(&dead, gf_graph_launch(g, s));
        FZ_CALL(&dead, gf_graph_get_info(g, &info));
        FZ_VOID(1, 0, gf_graph_destroy(g));
    }
}


static void op_module(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i;
    unsigned sel = fz_u8(in) % 8;
    if (sel >= 6) {   /* destroy */
        void *bad;
        i = FZ_PICK(in, &e, F.mod, K_MODULE, &bad);
        if (i < 0) { FZ_VOID(bad != NULL, bad == NULL, gf_module_destroy((gf_module *)bad)); return; }
        if (sel == 7 && F.mod[i].k[0]) { FZ_VOID(1, 0, gf_module_destroy((gf_module *)(void *)F.mod[i].k[0])); return; }
        fz_destroy_module(i);
    } else {
        gf_device *dev = fz_pick_dev(in, &e, &d);
        gf_module_desc desc;
        gf_module *m = NULL;
        memset(&desc, 0, sizeof desc);   /* only the stub's form; fields added later stay zero */
        desc.stub_kernels = fz_stub_kernels;
        desc.stub_kernel_count = (int)(sizeof fz_stub_kernels / sizeof fz_stub_kernels[0]);
        i = FZ_FREE(F.mod);
        if (sel == 2) { desc.stub_kernel_count = 0; fz_bad(&e, GF_ERROR_NOT_SUPPORTED); }      /* nothing for the stub */
        if (sel == 3) { desc.stub_kernel_count = -1; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        if (sel == 4) { desc.stub_kernels = NULL; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        if (sel == 5) {
            fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
            FZ_CALL(&e, fz_u8(in) & 1 ? gf_module_load(dev, NULL, &m) : gf_module_load(dev, &desc, NULL));
            return;
        }
        if (i < 0 && !e.bad) return;
        if (FZ_CALL(&e, gf_module_load(dev, &desc, &m)) != GF_OK) return;
        memset(&F.mod[i], 0, sizeof F.mod[i]);
        F.mod[i].h.live = 1; F.mod[i].h.dev = d; F.mod[i].m = m;
    }
}

static void op_kernel_get(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.mod, K_MODULE, &bad), k = (int)(fz_u8(in) % 3);
    gf_module *m = i >= 0 ? F.mod[i].m : (gf_module *)bad;
    unsigned sel = fz_u8(in) % 16;
    gf_kernel *kp = NULL;
    char longname[200];
    const char *name = fz_kernel_names[k];
    memset(longname, 'k', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    switch (sel) {
    case 10: name = "missing"; fz_bad(&e, GF_ERROR_NOT_FOUND); break;
    case 11: name = "nofn"; fz_bad(&e, GF_ERROR_NOT_FOUND); break;
    case 12: name = ""; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;
    case 13: name = NULL; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;
    case 14: name = longname; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;
    case 15: fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_kernel_get(m, name, NULL)); return;
    default: break;
    }
    if (FZ_CALL(&e, gf_kernel_get(m, name, &kp)) != GF_OK) return;
    if (F.mod[i].k[k] && F.mod[i].k[k] != kp) fz_die(__LINE__, "gf_kernel_get", "gave another kernel for the same name");
    F.mod[i].k[k] = kp;
}

static void op_launch(fz_in *in)
{
    fz_exp e = { 0 }, ignored = { 0 };
    int mi = -1, k = 0, d, si, db, bi, count, params, n, i;
    gf_stream *s = fz_pick_stream(in, &e, &d, &si);
    gf_kernel *kp = NULL;
    gf_launch_dims dims;
    gf_arg args[4];
    uint32_t vals[2][64];   /* argument values, up to 256 bytes each */
    unsigned sel, bad;
    size_t limit = F.arg_limit[d >= 0 ? d : 0], total = 0;
    gf_buffer *b;
    /* the kernel: one fetched with gf_kernel_get, or NULL / an object of another type */
    if (fz_hmode(in) == FZ_LIVE) {
        unsigned pick = fz_u8(in), j;
        for (j = 0; j < FZ_NMOD * 3 && !kp; j++) {
            unsigned at = (pick + j) % (FZ_NMOD * 3);
            if (F.mod[at / 3].h.live && F.mod[at / 3].k[at % 3]) { mi = (int)(at / 3); k = (int)(at % 3); kp = F.mod[mi].k[k]; }
        }
        if (!kp) fz_bad(&e, GF_ERROR_INVALID_HANDLE);
    } else {
        kp = fz_u8(in) & 1 ? (gf_kernel *)fz_foreign(K_KERNEL, fz_u8(in)) : NULL;
        fz_bad(&e, GF_ERROR_INVALID_HANDLE);
    }
    if (mi >= 0) fz_same_dev(&e, d, F.mod[mi].h.dev);
    params = mi >= 0 ? fz_kernel_params[k] : 3;
    /* small grids: the stub runs every thread, one after another */
    sel = fz_u8(in);
    dims.grid[0] = 1 + (sel & 3); dims.grid[1] = 1 + ((sel >> 2) & 1); dims.grid[2] = 1;
    dims.block[0] = 1 + ((sel >> 3) & 7); dims.block[1] = 1 + ((sel >> 6) & 1); dims.block[2] = 1 + (sel >> 7);
    sel = fz_u8(in);
    dims.shared_bytes = sel >= 248 ? sel : 0;   /* rarely: no kernel here takes dynamic shared memory */
    /* (buffer, n, v); the kernel writes n words, so n stays within the buffer */
    b = fz_pick_buf(in, &ignored, &db, &bi);   /* judged per argument below */
    n = (int)fz_u8(in) * 4;
    if (bi >= 0 && (size_t)n > F.buf[bi].size / 4) n = (int)(F.buf[bi].size / 4);
    memset(vals, 0, sizeof vals);
    vals[0][0] = (uint32_t)n;
    vals[1][0] = fz_u32(in);
    args[0].value = NULL; args[0].size = 0; args[0].buffer = b;
    args[1].value = vals[0]; args[1].size = 4; args[1].buffer = NULL;
    args[2].value = vals[1]; args[2].size = 4; args[2].buffer = NULL;
    args[3] = args[2];
    sel = fz_u8(in);
    if (sel & 0x10) args[1].size = 4 + (size_t)(sel & 0xe0);   /* bigger values: the kernel reads the first word */
    if (sel & 0x01) args[0].size = GF_ARG_READ_ONLY;            /* GF_ARG_BUFFER_READ: a hint for the race checker */
    count = params;
    bad = fz_u8(in) % 16;
    switch (bad) {
    case 1: dims.grid[fz_u8(in) % 3] = 0; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;
    case 2: dims.block[fz_u8(in) % 3] = 0; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;
    case 3: if (!count) count = 1; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;   /* args NULL, below */
    case 4: count = -1 - (int)fz_u8(in); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break;
    case 5: count = params ? params - 1 : 1; break;     /* the declared count is checked; 0 declares none */
    case 6: count = params + 1; break;
    case 7: args[1].value = NULL; break;
    case 8: args[2].size = 0; break;
    case 9: args[0].buffer = NULL; break;                /* neither a buffer nor a value */
    case 10: args[1].size = SIZE_MAX - fz_u8(in); break; /* past any driver's limit */
    case 11: args[1].size = (size_t)1 << (12 + fz_u8(in) % 40); break;
    default: break;
    }
    if (params && count >= 0 && count != params) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    if (bad != 3 && count > 0)
        for (i = 0; i < count; i++) {   /* each argument given, as gf_launch judges it */
            size_t bytes = args[i].buffer ? sizeof(uint64_t) : args[i].size;
            if (args[i].buffer) {
                if (args[i].buffer != b || bi < 0) fz_bad(&e, GF_ERROR_INVALID_HANDLE);
                else fz_same_dev(&e, d, db);
            } else if (!args[i].value || args[i].size == 0) {
                fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
            }
            if (bytes > limit - total) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); break; }   /* past the device's limit */
            total += bytes;
        }
    if (dims.shared_bytes) {   /* a GF_KERNEL's refused on every backend; the stub's own: not supported; OpenCL's: a __local too few */
        fz_bad(&e, params ? GF_ERROR_INVALID_ARGUMENT : GF_ERROR_NOT_SUPPORTED);
        fz_alt(&e, GF_ERROR_INVALID_ARGUMENT);
    }
    FZ_CALL(&e, gf_launch(s, kp, dims, bad == 3 ? NULL : args, count));
}

/* gf_buffer_view: a window on a buffer's memory, itself a gf_buffer (views of views refused). */
static void op_buf_view(fz_in *in)
{
    fz_exp e = { 0 };
    gf_result r;
    int d, bi, i = FZ_FREE(F.buf);
    gf_buffer *b = fz_pick_buf(in, &e, &d, &bi), *v = NULL;
    size_t size = bi >= 0 ? F.buf[bi].size : 64;
    size_t off = fz_offset(in, size), bytes = fz_count(in, off < size ? size - off : 16);
    int noout = fz_u8(in) % 16 == 15;
    if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    if (bi >= 0 && F.buf[bi].view) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    if (bi >= 0) fz_range(&e, size, off, bytes);
    if (i < 0 && !e.bad) return;
    if (fz_trace) printf("      offset %zu, bytes %zu\n", off, bytes);
    r = FZ_CALL(&e, gf_buffer_view(b, off, bytes, noout ? NULL : &v));
    if (!fz_made(r, v, "gf_buffer_view", __LINE__)) return;
    if (gf_buffer_size(v) != bytes) fz_die(__LINE__, "gf_buffer_size", "a view's size is not the bytes asked for");
    if (gf_buffer_native(v) != gf_buffer_native(b) + off) fz_die(__LINE__, "gf_buffer_native", "a stub view is not at its parent's memory + offset");
    F.buf[i].h.live = 1; F.buf[i].h.dev = d; F.buf[i].b = v; F.buf[i].size = bytes;
    F.buf[i].async = 0; F.buf[i].view = 1; F.buf[i].parent = bi; F.buf[i].wrapped = 0;
}

/* gf_fill16_async / gf_fill32_async: count values at an offset that is a multiple of their size. */
static void op_fill_wide(fz_in *in)
{
    fz_exp e = { 0 };
    int ds, db, si, bi;
    size_t w = fz_u8(in) & 1 ? 4 : 2;
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    gf_buffer *b = fz_pick_buf(in, &e, &db, &bi);
    size_t size = bi >= 0 ? F.buf[bi].size : 64, off = fz_offset(in, size), count, room;
    unsigned sel = fz_u8(in) % 16, v = fz_u16(in);
    uint32_t value = fz_u32(in);
    if (sel < 10 && off % w && off <= size) off -= off % w;   /* mostly aligned */
    room = off <= size ? (size - off) / w : 0;
    switch (sel) {
    case 12: count = 0; break;
    case 13: count = SIZE_MAX / w + 1 + (v & 0xff); break;   /* count * size overflows */
    case 14: count = SIZE_MAX / w; break;
    case 15: count = room + 1; break;                        /* one past the end */
    default: count = room ? 1 + v % room : 1; break;
    }
    fz_same_dev(&e, ds, db);
    if (count == 0) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    else if (count > SIZE_MAX / w) fz_bad(&e, GF_ERROR_OUT_OF_RANGE);
    else {
        /* the drivers align the address: a view's offset in its parent counts */
        size_t base = bi >= 0 && gf__is(b, GF__T_BUFFER) ? b->view_offset : 0;
        if ((base + off) % w) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (bi >= 0) {
            fz_exp probe = { 0 };
            if (!fz_range(&probe, size, off, count * w) && count * w > FZ_WORK_MAX) count = FZ_WORK_MAX / w;
            fz_range(&e, size, off, count * w);
        }
    }
    if (fz_trace) printf("      %zu-byte values: offset %zu, count %zu\n", w, off, count);
    if (w == 2) FZ_CALL(&e, gf_fill16_async(s, b, off, (uint16_t)value, count));
    else FZ_CALL(&e, gf_fill32_async(s, b, off, value, count));
}

/* One side of a 2D copy: a buffer (live, NULL or foreign), static host memory, both, or
   neither; judged as gf_copy_2d_async does. Host pitches stay small and heights stay small
   whenever a host side is given, so a copy that is accepted stays inside fz_scratch. */
static void fz_2d_side(fz_in *in, fz_exp *e, int sdev, gf_buffer **buf, size_t *off, void **host, size_t *pitch,
                       size_t width, size_t height, int *slot)
{
    unsigned mode = fz_u8(in) % 8, v = fz_u16(in);
    int d = -1, bi = -1;
    fz_exp ignored = { 0 };
    *buf = NULL; *host = NULL; *off = 0; *slot = -1;
    if (mode < 4 || mode == 6) {
        *buf = fz_pick_buf(in, &ignored, &d, &bi);
        *slot = bi;
        *off = fz_offset(in, bi >= 0 ? F.buf[bi].size : 64);
    }
    if (mode >= 4 && mode != 7) *host = fz_scratch + v % 4096;
    *pitch = width + (fz_u8(in) % 4 == 0 ? fz_u8(in) : 0);
    if (*buf && fz_u8(in) % 8 == 7) *pitch = fz_u8(in) & 1 ? SIZE_MAX - fz_u8(in) : width - 1;   /* huge, or below the width */
    if (!*buf && fz_u8(in) % 8 == 7) *pitch = width - 1;
    if (!*buf == !*host) { fz_bad(e, GF_ERROR_INVALID_ARGUMENT); return; }   /* exactly one of the two */
    if (*pitch < width) { fz_bad(e, GF_ERROR_INVALID_ARGUMENT); return; }
    if (!*buf) {   /* host rows: their span must fit a size, and host memory */
        if (height - 1 > (SIZE_MAX - width) / *pitch || *pitch * (height - 1) + width > (size_t)PTRDIFF_MAX ||
            *pitch * (height - 1) + width > UINTPTR_MAX - (uintptr_t)*host)
            fz_bad(e, GF_ERROR_OUT_OF_RANGE);
        return;
    }
    if (bi < 0) { fz_bad(e, GF_ERROR_INVALID_HANDLE); return; }
    if (d != sdev && sdev >= 0) { fz_bad(e, GF_ERROR_WRONG_DEVICE); return; }
    if (height - 1 > (SIZE_MAX - width) / *pitch) { fz_bad(e, GF_ERROR_OUT_OF_RANGE); return; }
    fz_range(e, F.buf[bi].size, *off, *pitch * (height - 1) + width);
}

static void op_copy_2d(fz_in *in)
{
    fz_exp e = { 0 };
    gf_copy_2d c;
    int ds, si, dslot, sslot;
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    unsigned sel = fz_u8(in) % 16;
    size_t width = 1 + fz_u8(in) % 128, height = 1 + fz_u8(in) % 32;
    memset(&c, 0, sizeof c);
    if (sel == 12) width = 0;
    if (sel == 13) height = 0;
    if (sel == 14) width = SIZE_MAX - fz_u8(in);   /* every side is refused: the pitch or the range */
    c.width = width; c.height = height;
    fz_2d_side(in, &e, ds, &c.dst, &c.dst_offset, &c.dst_host, &c.dst_pitch, width ? width : 1, height ? height : 1, &dslot);
    {
        void *src_host = NULL;
        fz_2d_side(in, &e, ds, &c.src, &c.src_offset, &src_host, &c.src_pitch, width ? width : 1, height ? height : 1, &sslot);
        c.src_host = src_host;
    }
    if (sel == 15 && c.dst && !c.dst_host && !c.src_host && !fz_u8(in)) { c.src = c.dst; sslot = dslot; }
    if (c.width == 0 || c.height == 0) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    if (!c.dst && !c.src) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);                 /* host to host */
    if (c.dst && c.dst == c.src) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);         /* one buffer both ways */
    if (!e.bad && (c.dst_host || c.src_host) && height > 32) return;            /* cannot happen: kept small above */
    if (fz_u8(in) % 16 == 15) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_copy_2d_async(s, NULL)); return; }
    if (fz_trace) printf("      width %zu, height %zu, dst %s off %zu pitch %zu, src %s off %zu pitch %zu\n", c.width, c.height,
                         c.dst ? "buffer" : c.dst_host ? "host" : "none", c.dst_offset, c.dst_pitch,
                         c.src ? "buffer" : c.src_host ? "host" : "none", c.src_offset, c.src_pitch);
    FZ_CALL(&e, gf_copy_2d_async(s, &c));
}

static void op_buf_record_stream(fz_in *in)
{
    fz_exp e = { 0 };
    int db, ds, bi, si;
    gf_buffer *b = fz_pick_buf(in, &e, &db, &bi);
    gf_stream *s = fz_pick_stream(in, &e, &ds, &si);
    fz_same_dev(&e, db, ds);
    if (si >= 0 && fz_capture_role(s)) fz_bad(&e, GF_ERROR_CAPTURE);
    FZ_CALL(&e, gf_buffer_record_stream(b, s));
}

/* Memory accounting: stats (checked for consistency), peaks, a limit, trim. */
static void op_memory(fz_in *in)
{
    fz_exp e = { 0 };
    int d, k;
    gf_device *dev = fz_pick_dev(in, &e, &d);
    gf_memory_stats st, after = { 0 };
    unsigned sel = fz_u8(in) % 8;
    size_t bytes;
    memset(&st, 0, sizeof st);
    if (d >= 0 && FZ_CALL(NULL, gf_device_memory_stats(dev, &st)) == GF_OK) {
        uint64_t sum = st.kind[GF_MEMORY_DEVICE].bytes + st.kind[GF_MEMORY_MANAGED].bytes + st.kind[GF_MEMORY_ASYNC].bytes +
                       st.kind[GF_MEMORY_CACHED].bytes + st.kind[GF_MEMORY_PENDING].bytes;
        if (sum != st.device_bytes) fz_die(__LINE__, "gf_device_memory_stats", "device_bytes is not the sum of the device kinds");
        for (k = 0; k < GF_MEMORY_KIND_COUNT; k++)
            if (st.kind[k].peak_bytes < st.kind[k].bytes || st.kind[k].peak_count < st.kind[k].count)
                fz_die(__LINE__, "gf_device_memory_stats", "a peak is below the current use");
    }
    switch (sel) {
    case 0: fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_device_memory_stats(dev, NULL)); break;
    case 1:
        if (FZ_CALL(&e, gf_device_reset_peak(dev)) == GF_OK && FZ_CALL(NULL, gf_device_memory_stats(dev, &after)) == GF_OK &&
            after.kind[GF_MEMORY_DEVICE].peak_bytes != after.kind[GF_MEMORY_DEVICE].bytes)
            fz_die(__LINE__, "gf_device_reset_peak", "the peak is not the current use after a reset");
        break;
    case 2: case 3: case 4: {
        unsigned how = fz_u8(in) % 4;
        bytes = how == 0 ? 0 : how == 1 ? (size_t)st.device_bytes + ((size_t)fz_u16(in) << 10)
              : how == 2 && st.device_bytes ? (size_t)st.device_bytes - 1 - fz_u8(in) % (size_t)st.device_bytes : SIZE_MAX - fz_u8(in);
        if (d >= 0 && bytes && bytes < st.device_bytes) {   /* below what is in use */
            uint64_t live = st.kind[GF_MEMORY_DEVICE].bytes + st.kind[GF_MEMORY_MANAGED].bytes + st.kind[GF_MEMORY_ASYNC].bytes;
            if (bytes < live) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
            else fz_alt(&e, GF_ERROR_INVALID_ARGUMENT);   /* cached or pending memory whose work passed goes back first */
        }
        if (FZ_CALL(&e, gf_device_set_memory_limit(dev, bytes)) == GF_OK && FZ_CALL(NULL, gf_device_memory_stats(dev, &after)) == GF_OK &&
            after.limit != bytes)
            fz_die(__LINE__, "gf_device_set_memory_limit", "the stats do not show the limit set");
        break;
    }
    default:
        bytes = fz_u8(in) & 1 ? 0 : (size_t)fz_u16(in) << 8;
        FZ_CALL(&e, gf_device_trim(dev, bytes));
        break;
    }
}

/* Native handles out and in. The stub has no native device or stream; its buffers' native
   handles are their host memory, and gf_buffer_wrap wraps host memory. */
static void op_native(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i;
    unsigned sel = fz_u8(in) % 10;
    gf_native_device nd;
    switch (sel) {
    case 0: {
        gf_device *dev = fz_pick_dev(in, &e, &d);
        int noout = fz_u8(in) % 8 == 7;
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        FZ_CALL(&e, gf_device_get_native(dev, noout ? NULL : &nd));
        fz_prime();
        if (!gf_device_native(dev) && d < 0 && !fz_error_set()) fz_die(__LINE__, "gf_device_native", "a bad handle set no error text");
        break;
    }
    case 1: case 2: case 3: {   /* stream, buffer, event handles out: a bad handle gives NULL / 0 and an error text */
        void *bad;
        int bad_given, ok;
        fz_exp ignored = { 0 };
        if (sel == 1) { gf_stream *s = fz_pick_stream(in, &ignored, &d, &i); bad_given = i < 0; fz_prime(); ok = gf_stream_native(s) == NULL; }
        else if (sel == 2) {
            gf_buffer *b = fz_pick_buf(in, &ignored, &d, &i);
            bad_given = i < 0; fz_prime();
            ok = bad_given ? gf_buffer_native(b) == 0 : gf_buffer_native(b) != 0;   /* the stub: its host memory */
        } else {
            i = FZ_PICK(in, &ignored, F.ev, K_EVENT, &bad);
            bad_given = i < 0; fz_prime();
            ok = gf_event_native(i >= 0 ? F.ev[i].e : (gf_event *)bad) == NULL;
        }
        if (bad_given && (!ok || !fz_error_set())) fz_die(__LINE__, "gf_*_native", "a bad handle gave a native handle, or no error text");
        if (!bad_given && !ok) fz_die(__LINE__, "gf_*_native", "a live stub object gave an unexpected native handle");
        break;
    }
    case 4: {
        gf_kernel *k = NULL;
        int m = FZ_NTH(F.mod, fz_u8(in), -1), bad_given;
        if (m >= 0) k = F.mod[m].k[fz_u8(in) % 3];
        if (fz_u8(in) % 4 == 3) k = (gf_kernel *)fz_foreign(K_KERNEL, fz_u8(in));
        bad_given = !k || (m >= 0 && k != F.mod[m].k[0] && k != F.mod[m].k[1] && k != F.mod[m].k[2]) || m < 0;
        fz_prime();
        if (gf_kernel_native(k) != NULL || (bad_given && !fz_error_set()))
            fz_die(__LINE__, "gf_kernel_native", "a stub kernel gave a native handle, or a bad handle no error text");
        break;
    }
    case 5: {   /* gf_device_open_native: the stub has no native device to open on */
        gf_device *dev = NULL;
        unsigned how = fz_u8(in) % 5;
        memset(&nd, 0, sizeof nd);
        nd.context = fz_garbage;
        fz_bad(&e, how == 0 ? GF_ERROR_NOT_SUPPORTED : how == 4 ? GF_ERROR_BACKEND_UNAVAILABLE : GF_ERROR_INVALID_ARGUMENT);
        FZ_CALL(&e, gf_device_open_native(how == 3 ? (gf_backend)(GF_BACKEND_COUNT + fz_u8(in)) : how == 4 ? GF_BACKEND_CUDA : GF_BACKEND_STUB,
                                          how == 1 ? NULL : &nd, how == 2 ? NULL : &dev));
        break;
    }
    case 6: {   /* gf_stream_wrap: NULL native refused; the stub has no native streams */
        gf_device *dev = fz_pick_dev(in, &e, &d);
        gf_stream *s = NULL;
        unsigned how = fz_u8(in) % 3;
        fz_bad(&e, how == 0 ? GF_ERROR_NOT_SUPPORTED : GF_ERROR_INVALID_ARGUMENT);
        FZ_CALL(&e, gf_stream_wrap(dev, how == 1 ? NULL : fz_garbage, NULL, how == 2 ? NULL : &s));
        break;
    }
    default: {   /* gf_buffer_wrap of static host memory: a buffer whose memory stays ours */
        gf_device *dev = fz_pick_dev(in, &e, &d);
        gf_buffer *b = NULL;
        unsigned how = fz_u8(in) % 8, v = fz_u16(in);
        size_t off = v % 4096, bytes = how == 6 ? 0 : 1 + (size_t)fz_u16(in) % 4096;
        uint64_t native = how == 5 ? 0 : (uint64_t)(uintptr_t)(fz_wrapmem + off);
        i = FZ_FREE(F.buf);
        if (how == 5 || how == 6) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (how == 7) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_buffer_wrap(dev, native, bytes, NULL)); break; }
        if (i < 0 && !e.bad) break;
        if (FZ_CALL(&e, gf_buffer_wrap(dev, native, bytes, &b)) != GF_OK) break;
        if (gf_buffer_native(b) != native || gf_buffer_size(b) != bytes) fz_die(__LINE__, "gf_buffer_wrap", "the buffer is not the memory wrapped");
        F.buf[i].h.live = 1; F.buf[i].h.dev = d; F.buf[i].b = b; F.buf[i].size = bytes;
        F.buf[i].async = 0; F.buf[i].view = 0; F.buf[i].parent = -1; F.buf[i].wrapped = 1;
        break;
    }
    }
}

/* Runs another op while gpuflow's allocations fail: the n-th from now, or all from it on.
   Every failure must be clean (a code, a message, nothing half-done or leaked). */
static const struct fz_op *fz_op_at(unsigned i);
static void fz_run_op(const struct fz_op *op, fz_in *in);
static int fz_op_may_start_barriers(const struct fz_op *op);
static void op_oom(fz_in *in)
{
    gf_allocator a;
    unsigned n = fz_u8(in) % 48, all = fz_u8(in) & 1;
    const struct fz_op *sub = fz_op_at(fz_u8(in));
    int d;
    if (!sub) return;   /* not itself, nor device close (its destroys must succeed) */
    /* no worker may start a kernel with barriers while allocations fail: its stream would
       fail on its own (see the header) */
    if (fz_op_may_start_barriers(sub)) return;
    for (d = 0; d < 2 && F.kb_queued; d++) if (F.dev[d] && FZ_CALL(NULL, gf_device_synchronize(F.dev[d])) != GF_OK) return;
    a.alloc = fz_alloc; a.realloc = fz_realloc; a.free = fz_free; a.user = NULL;
    __atomic_store_n(&fz_alloc_all, (int)all, __ATOMIC_RELAXED);
    __atomic_store_n(&fz_alloc_at, (int)n, __ATOMIC_RELAXED);
    FZ_VOID(0, 1, gf_set_allocator(&a));
    fz_oom = 1;
    if (fz_trace) printf("    allocations fail from #%u%s\n", n, all ? " on" : " only");
    fz_run_op(sub, in);
    fz_oom = 0;
    FZ_VOID(0, 1, gf_set_allocator(NULL));   /* back to malloc: what was allocated meanwhile frees the same */
    __atomic_store_n(&fz_alloc_at, -1, __ATOMIC_RELAXED);
}

static void op_allocator(fz_in *in)   /* gf_set_allocator's refusals: all three functions are needed */
{
    gf_allocator a;
    a.alloc = fz_alloc; a.realloc = fz_realloc; a.free = fz_free; a.user = NULL;
    switch (fz_u8(in) % 3) {
    case 0: a.alloc = NULL; break;
    case 1: a.realloc = NULL; break;
    default: a.free = NULL; break;
    }
    FZ_VOID(1, 0, gf_set_allocator(&a));
}

/* Graph pools: shared memory for the graphs captured into one; refused destroy while any lives. */
static void op_gpool(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i;
    unsigned sel = fz_u8(in) % 4;
    if (sel < 2) {
        gf_device *dev = fz_pick_dev(in, &e, &d);
        gf_graph_pool *p = NULL;
        int noout = fz_u8(in) % 8 == 7;
        i = FZ_FREE(F.gpool);
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (i < 0 && !e.bad) return;
        if (FZ_CALL(&e, gf_graph_pool_create(dev, noout ? NULL : &p)) != GF_OK) return;
        F.gpool[i].h.live = 1; F.gpool[i].h.dev = d; F.gpool[i].p = p;
    } else {
        void *bad;
        i = FZ_PICK(in, &e, F.gpool, K_GPOOL, &bad);
        if (i < 0) { FZ_VOID(bad != NULL, bad == NULL, gf_graph_pool_destroy((gf_graph_pool *)bad)); return; }
        /* refused (GF_ERROR_INVALID_STATE) while a graph or capture of the pool is alive */
        if (!FZ_VOID(0, !fz_gpool_users(i), gf_graph_pool_destroy(F.gpool[i].p))) F.gpool[i].h.live = 0;
    }
}

/* New arguments for a recorded launch: as captured (count, kinds, sizes), else refused. The
   element count stays within the new buffer, whatever kernel the launch was. */
static void op_graph_set_args(fz_in *in)
{
    fz_exp e = { 0 };
    int gi, db, bi, index = (int)(fz_u8(in) % 5) - 1, count = 3, n;   /* -1: no such launch */
    gf_graph *g = fz_pick_graph(in, &e, &gi);
    gf_buffer *b;
    gf_arg args[4];
    uint32_t vals[2][64];
    fz_exp ignored = { 0 };
    unsigned sel;
    b = fz_pick_buf(in, &ignored, &db, &bi);
    n = (int)fz_u8(in) * 4;
    if (bi >= 0 && (size_t)n > F.buf[bi].size / 4) n = (int)(F.buf[bi].size / 4);
    memset(vals, 0, sizeof vals);
    vals[0][0] = (uint32_t)n;
    vals[1][0] = fz_u32(in);
    args[0].value = NULL; args[0].size = 0; args[0].buffer = b;
    args[1].value = vals[0]; args[1].size = 4; args[1].buffer = NULL;
    args[2].value = vals[1]; args[2].size = 4; args[2].buffer = NULL;
    args[3] = args[2];
    sel = fz_u8(in) % 16;
    if (sel == 12) count = -1;
    if (sel == 13) count = (int)(fz_u8(in) % 5);
    if (sel == 14) args[1].size = 8;
    if (count < 0 || sel == 15) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    if (!e.bad && count > 0 && bi < 0 && b) fz_alt(&e, GF_ERROR_INVALID_HANDLE);   /* if the launch took a buffer there */
    if (!e.bad && count > 0 && bi >= 0 && gi >= 0 && db != F.graph[gi].h.dev) fz_alt(&e, GF_ERROR_WRONG_DEVICE);
    if (FZ_CALL(&e, gf_graph_set_kernel_args(g, index, sel == 15 ? NULL : args, sel == 15 ? 3 : count)) == GF_OK && bi >= 0)
        F.graph[gi].deps |= FZ_BIT_BUF(bi);   /* the graph now uses it */
}

/* Flow tasks from a desc (priority, workload, completion callback), stats and DOT. */
static void op_flow_misc(fz_in *in)
{
    fz_exp e = { 0 };
    void *bad;
    int i = FZ_PICK(in, &e, F.flow, K_FLOW, &bad);
    gf_flow *f = i >= 0 ? F.flow[i].f : (gf_flow *)bad;
    unsigned sel = fz_u8(in) % 6;
    if (sel < 3) {
        gf_task_desc desc;
        gf_task t = 0;
        unsigned kind = fz_u8(in) % FZ_T_COUNT, how = fz_u8(in) % 16;
        memset(&desc, 0, sizeof desc);
        desc.name = FZ_LABEL(fz_u8(in));
        desc.fn = fz_task;
        desc.user = (void *)&fz_task_kind[kind];
        desc.priority = (gf_priority)(fz_u8(in) % 3);
        desc.workload = (gf_workload)(fz_u8(in) % GF_WORKLOAD_COUNT);
        if (fz_u8(in) & 1) desc.on_complete = fz_count_cb;
        if (how == 12) { desc.fn = NULL; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        if (how == 13) { desc.priority = (gf_priority)(3 + fz_u8(in)); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        if (how == 14) { desc.workload = (gf_workload)(GF_WORKLOAD_COUNT + fz_u8(in)); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        if (how == 15) { fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, fz_u8(in) & 1 ? gf_flow_add_desc(f, NULL, &t) : gf_flow_add_desc(f, &desc, NULL)); return; }
        if (i >= 0 && F.flow[i].tasks == FZ_TASKS) return;
        if (FZ_CALL(&e, gf_flow_add_desc(f, &desc, &t)) != GF_OK) return;
        F.flow[i].task[F.flow[i].tasks] = t;
        F.flow[i].succ[F.flow[i].tasks] = 0;
        F.flow[i].tasks++;
    } else if (sel < 5) {
        gf_flow_stats st = { 0 };
        int noout = fz_u8(in) % 8 == 7;
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (FZ_CALL(&e, gf_flow_get_stats(f, noout ? NULL : &st)) == GF_OK && (st.timed_runs > st.runs || st.avg_run_ms < 0))
            fz_die(__LINE__, "gf_flow_get_stats", "more timed runs than runs, or a negative average");
    } else {
        gf_result b;
        const char *path = fz_path(in, &b);
        if (b != (gf_result)1) fz_bad(&e, b);
        FZ_CALL(&e, gf_flow_write_dot(f, path));
    }
}

/* Ranges: push and pop, nested or not, in captures or not; a bad stream sets the error text. */
static void op_range(fz_in *in)
{
    fz_exp e = { 0 };
    int d, i, k, n = 1 + (int)(fz_u8(in) % 3);
    gf_stream *s = fz_pick_stream(in, &e, &d, &i);
    unsigned sel = fz_u8(in) % 4;
    for (k = 0; k < n; k++) {
        if (sel < 2) FZ_VOID(i < 0, 0, gf_range_push(s, sel ? NULL : FZ_LABEL(fz_u8(in))));
        else FZ_VOID(i < 0, 0, gf_range_pop(s));   /* more pops than pushes: nothing to end */
    }
}

/* The race checker (on, off, reports) and gf_device_write_state into a buffer of exactly the
   size given, so that writing past it is an ASan report. */
static void op_race_state(fz_in *in)
{
    fz_exp e = { 0 };
    int d;
    gf_device *dev = fz_pick_dev(in, &e, &d);
    unsigned sel = fz_u8(in) % 6;
    if (sel < 2) {
        unsigned flags = sel == 0 ? GF_RACE_CHECK_ON : 0;
        if (fz_u8(in) % 8 == 7) { flags = 2u << (fz_u8(in) % 8); fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }
        FZ_CALL(&e, gf_race_check_enable(dev, flags));
    } else if (sel < 4) {
        static gf_race_info info;   /* 4 KiB */
        int noout = fz_u8(in) % 8 == 7;
        if (noout) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (FZ_CALL(&e, gf_race_report(dev, noout ? NULL : &info)) == GF_OK &&
            (info.reports < 0 || info.reports > GF_RACE_REPORTS || (uint64_t)info.reports > info.count))
            fz_die(__LINE__, "gf_race_report", "more reports than races, or than the array holds");
    } else {
        size_t size = fz_u8(in) % 4 == 0 ? 1 + fz_u8(in) % 16 : 64 + (size_t)fz_u16(in) % 8192;
        char *text;
        unsigned how = fz_u8(in) % 8;
        if (how == 6) size = 0;
        if (how >= 6) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        if (!(text = (char *)malloc(size ? size : 1))) return;
        if (FZ_CALL(&e, gf_device_write_state(dev, how == 7 ? NULL : text, size)) == GF_OK && !memchr(text, 0, size))
            fz_die(__LINE__, "gf_device_write_state", "the text is not NUL-terminated within the size given");
        free(text);
    }
}

/* The kernel cache's reader against what a file system can hold (the stub compiles no source,
   so the op calls the library's own cache functions): a valid entry for one of a few
   identities is written, then damaged as the input says (truncated, bytes changed, a header
   field forged, replaced by the input's own bytes, by a symlink, a FIFO, a directory, or left
   valid), and read back for an identity the input picks. The oracle: the reader never crashes
   or blocks, and it returns GF_OK only for an undamaged entry of the same identity, with the
   exact binary and kind that were written; every entry it refuses is named in a warning. */
static char fz_cache_dir[64];
static void fz_cache_cleanup(void)
{
    char cmd[160];
    if (!fz_cache_dir[0]) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fz_cache_dir);
    if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", fz_cache_dir);
}
static void op_cache_file(fz_in *in)
{
    static const char *const texts[3] = { "GF_KERNEL(a, GF_GLOBAL float *x) { x[0] = 1.0f; }", "GF_KERNEL(a, GF_GLOBAL float *x) { x[0] = 2.0f; }", "" };
    static const char *const options[3] = { NULL, "-DX=1", "-DX=1 " };
    static const char *const compilers[3] = { "stub compiler 1", "stub compiler 1", "stub compiler 2" };   /* identities differ in one part each */
    unsigned write_as = fz_u8(in) % 3, read_as = fz_u8(in) % 3, how = fz_u8(in) % 10, at = fz_u16(in), value = fz_u8(in);
    unsigned kind = fz_u8(in) % 4, size = 1 + fz_u8(in) % 200;
    gf__cache_identity w, r;
    unsigned char binary[200], raw[16];
    char path[128];
    void *got = NULL;
    size_t got_size = 0;
    gf_backend made_by = (gf_backend)(GF_BACKEND_AUTO + 1 + kind % (GF_BACKEND_COUNT - 1)), read_by = made_by;
    FILE *f;
    long end;
    int i, damaged = how != 0, logged;
    if (!fz_cache_dir[0]) {
        snprintf(fz_cache_dir, sizeof fz_cache_dir, "/tmp/gpuflow-fuzz-cache-XXXXXX");
        if (!mkdtemp(fz_cache_dir)) { fz_cache_dir[0] = 0; return; }
        atexit(fz_cache_cleanup);
    }
    for (i = 0; i < (int)sizeof raw; i++) raw[i] = (unsigned char)fz_u8(in);
    for (i = 0; i < (int)size; i++) binary[i] = (unsigned char)(raw[i % 16] ^ i);
    if (gf__cache_identity_make(&w, texts[write_as], options[write_as], compilers[write_as]) != GF_OK) return;
    if (gf__cache_identity_make(&r, texts[read_as], options[read_as], compilers[read_as]) != GF_OK) { gf__free(w.bytes); return; }
    snprintf(path, sizeof path, "%s/entry.bin", fz_cache_dir);
    remove(path);
    rmdir(path);
    gf__cache_write(path, &w, made_by, binary, size);   /* under op_oom it may write nothing */
    f = fopen(path, "r+b");
    if (!f) damaged = 1;
    end = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) end = ftell(f);
    if (f && end > 0) {
        switch (how) {
        case 1: if (truncate(path, (off_t)(at % (unsigned long)end)) != 0) damaged = 0; break;
        case 2: case 3:   /* a byte changed: in the header, or anywhere */
            if (fseek(f, (long)(how == 2 ? at % 48 : at % (unsigned long)end), SEEK_SET) == 0) {
                int old = fgetc(f);
                if (old == EOF || old == (int)value) { damaged = 0; break; }
                fseek(f, -1, SEEK_CUR);
                fputc((int)value, f);
            }
            break;
        case 4: {   /* a header field forged: backend, identity size or binary size */
            static const long fields[3] = { 24, 28, 32 };
            uint64_t big = (uint64_t)at << (value % 48), was = 0;
            size_t width = value % 3 == 2 ? 8 : 4;
            if (fseek(f, fields[value % 3], SEEK_SET) != 0 || fread(&was, width, 1, f) != 1 || !memcmp(&was, &big, width)) { damaged = 0; break; }
            fseek(f, fields[value % 3], SEEK_SET);
            if (fwrite(&big, width, 1, f) != 1) damaged = 0;
            break;
        }
        case 5: fclose(f); f = NULL; remove(path); f = fopen(path, "wb"); if (f) fwrite(raw, 1, sizeof raw, f); break;
        case 6: fclose(f); f = NULL; remove(path); if (symlink("/etc/hostname", path) != 0) damaged = 0; break;
        case 7: fclose(f); f = NULL; remove(path); if (mkfifo(path, 0600) != 0) damaged = 0; break;
        case 8: fclose(f); f = NULL; remove(path); if (mkdir(path, 0700) != 0) damaged = 0; break;
        case 9: read_by = (gf_backend)(GF_BACKEND_AUTO + 1 + (kind + 1) % (GF_BACKEND_COUNT - 1)); break;   /* another backend asks */
        default: damaged = 0; break;   /* 0: left as written */
        }
    }
    if (f) fclose(f);
    logged = __atomic_load_n(&fz_logged, __ATOMIC_RELAXED);
    if (gf__cache_read(path, &r, read_by, &got, &got_size) == GF_OK) {
        if (damaged || write_as != read_as)
            fz_die(__LINE__, "gf__cache_read", "a damaged entry, or another identity's, was taken for the one asked for");
        if (got_size != size || memcmp(got, binary, size))
            fz_die(__LINE__, "gf__cache_read", "the binary read back is not the one written");
        gf__free(got);
    } else if (!damaged && write_as == read_as && !fz_oom) {   /* under op_oom the reader may have no memory for it */
        fz_die(__LINE__, "gf__cache_read", "an undamaged entry of the same identity was refused");
    } else if (__atomic_load_n(&fz_logged, __ATOMIC_RELAXED) == logged && (damaged || write_as != read_as)) {
        struct stat st;
        if (lstat(path, &st) == 0) fz_die(__LINE__, "gf__cache_read", "a refused entry was not named in a warning");
    }
    gf__free(w.bytes);
    gf__free(r.bytes);
}

/* The dialect's C side. gf_stub_barrier and gf_stub_atomic called plainly (outside a kernel:
   the barrier returns, each atomic gives the old value and leaves the new one), and the kernels
   that use them (reverse_u32, atomics_u32, diverge_u32) launched with dimensions around the
   device's limits (gf_device_info: max_block, max_grid, max_threads_per_block) and arguments
   of the wrong kind or size, which gf_launch judges against the declared parameters. A launch
   of reverse_u32 or atomics_u32 on a stream that is not capturing may be checked: a new
   buffer of known words, the launch, a synchronize, and every word compared with the host's
   computation (the barrier orders each block's reads before its writes; atomics lose nothing). */
static uint32_t fz_kb_rng(uint32_t *x) { *x = *x * 1664525u + 1013904223u; return *x >> 8 ^ *x << 9; }

static void fz_kb_host_calls(fz_in *in)
{
    uint32_t a = fz_u32(in), b = fz_u32(in), c = fz_u8(in) & 1 ? a : fz_u32(in), x, r;
    unsigned op = fz_u8(in) % 5;
    uint32_t want;
    gf_stub_barrier();   /* not in a kernel: returns at once */
    x = a;
    r = gf_stub_atomic((gf_stub_atomic_op)op, &x, b, c);
    switch (op) {
    case GF_STUB_ATOMIC_ADD: want = a + b; break;
    case GF_STUB_ATOMIC_MIN: want = b < a ? b : a; break;
    case GF_STUB_ATOMIC_MAX: want = b > a ? b : a; break;
    case GF_STUB_ATOMIC_XCHG: want = b; break;
    default: want = a == b ? c : a; break;   /* CAS: b is the expected value, c the desired one */
    }
    if (fz_trace) printf("    gf_stub_atomic(%u, %u -> %u, %u, %u) -> old %u\n", op, (unsigned)a, (unsigned)x, (unsigned)b, (unsigned)c, (unsigned)r);
    if (r != a || x != want) fz_die(__LINE__, "gf_stub_atomic", "a plain call gave a wrong old value or left a wrong value");
}

/* What reverse_u32 and atomics_u32 leave in p (words in all, n given): 0, or the index of the
   first word that is wrong, plus 1. */
static size_t fz_kb_check(int kind, const gf_launch_dims *dims, const uint32_t *init, const uint32_t *got, size_t words, uint32_t n, uint32_t v)
{
    unsigned nt = dims->block[0] * dims->block[1] * dims->block[2], blocks = dims->grid[0] * dims->grid[1] * dims->grid[2];
    unsigned total = nt * blocks, b, t, r, g;
    size_t i;
    if (kind == FZ_K_REVERSE) {
        uint32_t cur[FZ_KB_THREADS], next[FZ_KB_THREADS];
        for (i = 0; i < words; i++) if (i >= n || i >= (size_t)total) { if (got[i] != init[i]) return i + 1; }
        for (b = 0; b < blocks; b++) {
            for (t = 0; t < nt; t++) cur[t] = (size_t)b * nt + t < n ? init[(size_t)b * nt + t] : FZ_KB_PAD;
            for (r = 0; r < fz_kb_rounds(v, b); r++) {
                for (t = 0; t < nt; t++) next[t] = cur[nt - 1 - t] + v;
                memcpy(cur, next, sizeof cur[0] * nt);
            }
            for (t = 0; t < nt; t++) if ((i = (size_t)b * nt + t) < n && got[i] != cur[t]) return i + 1;
        }
        return 0;
    }
    {   /* atomics */
        uint32_t mx = init[1], mn = init[2];
        int xchg = 0;
        for (g = 0; g < total; g++) {
            if ((g ^ v) > mx) mx = g ^ v;
            if ((g ^ v) < mn) mn = g ^ v;
            if (n > 3 && got[3] == (g ^ v)) xchg = 1;
        }
        if (n > 0 && got[0] != init[0] + total * v) return 1;
        if (n > 1 && got[1] != mx) return 2;
        if (n > 2 && got[2] != mn) return 3;
        if (n > 3 && !xchg) return 4;
        if (n > 4 && got[4] != init[4] + total) return 5;
        if (n > 5 && (init[5] != v ? got[5] != init[5] : got[5] - v - 1 >= total)) return 6;
        for (i = n < 6 ? n : 6; i < words; i++) if (got[i] != init[i]) return i + 1;
        return 0;
    }
}

static void op_block_kernels(fz_in *in)
{
    fz_exp e = { 0 }, ignored = { 0 };
    unsigned sel = fz_u8(in) % 8, dsel, gsel, bad, how, nb;
    int kind = sel < 3 ? FZ_K_REVERSE : sel < 6 ? FZ_K_ATOMICS : FZ_K_DIVERGE;
    int d, si, mi = -1, db = -1, bi = -1, check, slot, k;
    gf_stream *s;
    gf_kernel *kp = NULL;
    gf_launch_dims dims;
    gf_arg args[3];
    gf_buffer *b;
    uint32_t n, v, seed, total;
    const gf_device_info *info;
    if (sel == 7) { fz_kb_host_calls(in); return; }
    s = fz_pick_stream(in, &e, &d, &si);
    info = &F.info[d >= 0 ? d : 0];
    if (fz_hmode(in) == FZ_LIVE && (mi = FZ_NTH(F.mod, fz_u8(in), -1)) >= 0) {
        if (!F.mod[mi].k[kind]) {
            gf_kernel *got = NULL;
            if (FZ_CALL(NULL, gf_kernel_get(F.mod[mi].m, fz_kernel_names[kind], &got)) != GF_OK) return;
            F.mod[mi].k[kind] = got;
        }
        kp = F.mod[mi].k[kind];
        fz_same_dev(&e, d, F.mod[mi].h.dev);
    } else {
        kp = fz_u8(in) & 1 ? (gf_kernel *)fz_foreign(K_KERNEL, fz_u8(in)) : NULL;
        fz_bad(&e, GF_ERROR_INVALID_HANDLE);
    }
    /* blocks of at most 8 x 4 x 2 threads, grids of at most 4 x 2 x 2 blocks */
    dsel = fz_u8(in); gsel = fz_u8(in);
    dims.block[0] = 1 + (dsel & 7); dims.block[1] = 1 + ((dsel >> 3) & 3); dims.block[2] = 1 + ((dsel >> 5) & 1);
    dims.grid[0] = 1 + (gsel & 3); dims.grid[1] = 1 + ((gsel >> 2) & 1); dims.grid[2] = 1 + ((gsel >> 3) & 1);
    dims.shared_bytes = 0;
    bad = fz_u8(in) % 16;
    switch (bad) {   /* past the limits (each call refused before anything runs) */
    case 1: dims.grid[dsel % 3] = 0; break;
    case 2: dims.block[dsel % 3] = 0; break;
    case 3: dims.block[dsel % 3] = info->max_block[dsel % 3] + 1; break;
    case 4: dims.grid[dsel % 3] = info->max_grid[dsel % 3] + 1; break;   /* 2^31 - 1 + 1 for x */
    case 5: dims.block[0] = info->max_threads_per_block; dims.block[1] = 2; dims.block[2] = 1; break;
    case 6: dims.block[0] = dims.block[1] = 65536; dims.block[2] = 1; break;   /* 2^32 threads: 0 in 32 bits */
    default: break;
    }
    for (k = 0; k < 3; k++) {   /* the contract: each dimension >= 1 and within its limit, threads within theirs */
        if (!dims.grid[k] || !dims.block[k] || (info->max_block[k] && dims.block[k] > info->max_block[k]) ||
            (info->max_grid[k] && dims.grid[k] > info->max_grid[k])) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    }
    if (info->max_threads_per_block && (uint64_t)dims.block[0] * dims.block[1] * dims.block[2] > info->max_threads_per_block)
        fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
    if (bad >= 1 && bad <= 6 && !e.bad) fz_die(__LINE__, "op_block_kernels", "a launch past the limits was not modelled as bad");
    total = dims.block[0] * dims.block[1] * dims.block[2] * dims.grid[0] * dims.grid[1] * dims.grid[2];
    if (kind == FZ_K_DIVERGE && mi >= 0 && (bad == 0 || bad > 6)) {
        /* misuse, on a stream of its own: the launch is taken, its synchronize fails with
           GF_ERROR_DRIVER (or succeeds: one thread a block, no barrier met), the failure stays
           with that stream, and destroying the stream frees it (reporting the failure) */
        gf_stream *own = NULL;
        gf_result r;
        int md = F.mod[mi].h.dev, ok;
        if ((bi = FZ_NTH(F.buf, fz_u8(in), md)) < 0) return;
        n = (uint32_t)(F.buf[bi].size / 4);
        v = fz_u8(in);
        args[0].value = NULL; args[0].size = 0; args[0].buffer = F.buf[bi].b;
        args[1].value = &n; args[1].size = 4; args[1].buffer = NULL;
        args[2].value = &v; args[2].size = 4; args[2].buffer = NULL;
        if (FZ_CALL(NULL, gf_stream_create(F.dev[md], NULL, &own)) != GF_OK) return;
        if (fz_trace) printf("      %s, %u threads, n %u, v %u, on a stream of its own\n", fz_kernel_names[kind], (unsigned)total, (unsigned)n, (unsigned)v);
        r = FZ_CALL(NULL, gf_launch(own, kp, dims, args, 3));
        if (r != GF_OK && !fz_oom) fz_die(__LINE__, "gf_launch", "refused a launch of a kernel whose barriers diverge (that is found when it runs)");
        r = FZ_CALL(NULL, gf_stream_synchronize(own));
        ok = r == GF_OK || (r == GF_ERROR_DRIVER && total > dims.grid[0] * dims.grid[1] * dims.grid[2]);
        if (!ok && !fz_oom) fz_die(__LINE__, "gf_stream_synchronize", "a stream whose kernel's barriers diverged did not fail with GF_ERROR_DRIVER, or one-thread blocks failed");
        if (r == GF_ERROR_DRIVER && FZ_CALL(NULL, gf_stream_query(own)) != GF_ERROR_DRIVER && !fz_oom)
            fz_die(__LINE__, "gf_stream_query", "the stream's failure was not kept");
        FZ_VOID(0, r == GF_OK, gf_stream_destroy(own));   /* reports the kept failure, frees the stream */
        return;
    }
    how = fz_u8(in) % 4;
    v = (uint32_t)fz_u16(in) * 0x9e3779b1u;   /* high bits too: reverse_u32's rounds */
    /* a checked launch: a new buffer, a stream that is not capturing, nothing else wrong */
    check = how < 3 && kind != FZ_K_DIVERGE && !e.bad && si >= 0 && !fz_oom && !fz_capture_role(s) && (slot = FZ_FREE(F.buf)) >= 0 && bad < 7;
    if (check) {
        uint32_t init[FZ_KB_THREADS * 16 + 16], got[FZ_KB_THREADS * 16 + 16];
        size_t words, at;
        int dv = d;
        nb = fz_u8(in) % 9;
        if (kind == FZ_K_ATOMICS) n = (nb + 6) % 8;                       /* 6 words are used */
        else n = nb < 5 ? total + nb : total > nb - 4 ? total - (nb - 4) : 0;   /* around the thread count */
        words = n + fz_u8(in) % 8;
        if (!words) words = 1;
        seed = (uint32_t)fz_u16(in) << 8 | 1u;
        for (at = 0; at < words; at++) init[at] = fz_kb_rng(&seed);
        if (kind == FZ_K_ATOMICS && words > 5 && (v & 1)) init[5] = v;   /* the compare-and-swap succeeds once */
        if (FZ_CALL(NULL, gf_buffer_create(F.dev[dv], words * 4, &b)) != GF_OK) return;
        F.buf[slot].h.live = 1; F.buf[slot].h.dev = dv; F.buf[slot].b = b; F.buf[slot].size = words * 4;
        F.buf[slot].async = 0; F.buf[slot].view = 0; F.buf[slot].parent = -1; F.buf[slot].wrapped = 0;
        if (FZ_CALL(NULL, gf_copy_to_device(b, 0, init, words * 4)) != GF_OK) return;
        if (FZ_CALL(NULL, gf_stream_synchronize(s)) != GF_OK) return;   /* a failure kept from earlier work: not checked */
        args[0].value = NULL; args[0].size = 0; args[0].buffer = b;
        args[1].value = &n; args[1].size = 4; args[1].buffer = NULL;
        args[2].value = &v; args[2].size = 4; args[2].buffer = NULL;
        if (fz_trace) printf("      %s, %u threads, n %u of %lu words, v %#x: checked\n", fz_kernel_names[kind], (unsigned)total, (unsigned)n, (unsigned long)words, (unsigned)v);
        if (FZ_CALL(&e, gf_launch(s, kp, dims, args, 3)) != GF_OK) return;
        if (FZ_CALL(NULL, gf_stream_synchronize(s)) != GF_OK) fz_die(__LINE__, fz_kernel_names[kind], "a valid launch failed when it ran");
        if (FZ_CALL(NULL, gf_copy_to_host(got, b, 0, words * 4)) != GF_OK) return;
        if ((at = fz_kb_check(kind, &dims, init, got, words, n, v)) != 0) {
            char why[200];
            snprintf(why, sizeof why, "word %lu of the buffer is %#x after the launch (it was %#x); %u threads, n %u, v %#x",
                     (unsigned long)(at - 1), (unsigned)got[at - 1], (unsigned)init[at - 1], (unsigned)total, (unsigned)n, (unsigned)v);
            fz_die(__LINE__, fz_kernel_names[kind], why);
        }
        fz_destroy_buf(slot);   /* its slot for the next one (kept if refused) */
        return;
    }
    /* on a buffer of the tables (or NULL, or of another type): the kernel touches p[i < n] */
    b = fz_pick_buf(in, &ignored, &db, &bi);
    n = (uint32_t)fz_u8(in) * 4;
    if (bi >= 0 && n > F.buf[bi].size / 4) n = (uint32_t)(F.buf[bi].size / 4);
    if (!b) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);    /* neither a buffer nor a value */
    else if (bi < 0) fz_bad(&e, GF_ERROR_INVALID_HANDLE);
    else fz_same_dev(&e, d, db);
    args[0].value = NULL; args[0].size = 0; args[0].buffer = b;
    args[1].value = &n; args[1].size = 4; args[1].buffer = NULL;
    args[2].value = &v; args[2].size = 4; args[2].buffer = NULL;
    if (bad == 7) { args[0].value = &n; args[0].size = 4; args[0].buffer = NULL; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }   /* a value for the buffer */
    if (bad == 8) { args[2].size = 8; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }   /* 8 bytes for a uint32_t */
    if (bad == 9 && bi >= 0) { args[1].buffer = b; fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); }   /* a buffer for a value */
    if (fz_trace) printf("      %s, %u threads, n %u, v %#x\n", fz_kernel_names[kind], (unsigned)total, (unsigned)n, (unsigned)v);
    if (FZ_CALL(&e, gf_launch(s, kp, dims, args, 3)) == GF_OK && kind != FZ_K_ATOMICS) F.kb_queued = 1;   /* op_oom */
}

static void op_profiler(fz_in *in)
{
    static gf_profile_report rep;   /* large */
    fz_exp e = { 0 };
    int d;
    gf_device *dev = fz_pick_dev(in, &e, &d);
    unsigned sel = fz_u8(in) % 10;
    switch (sel) {
    case 0: case 1:
        if (FZ_CALL(&e, gf_profiler_enable(dev, sel == 0 ? GF_PROFILE_ON : 0)) == GF_OK && sel == 0) F.profiled[d] = 1;
        break;
    case 2: fz_bad(&e, GF_ERROR_INVALID_ARGUMENT); FZ_CALL(&e, gf_profiler_enable(dev, 2u << (fz_u8(in) % 8))); break;
    case 3: case 4:
        if (sel == 4) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        else if (d >= 0 && !F.profiled[d]) fz_bad(&e, GF_ERROR_INVALID_STATE);
        FZ_CALL(&e, gf_profiler_report(dev, sel == 4 ? NULL : &rep));
        break;
    case 5: case 6: case 7: case 8: {
        const char *path = sel == 5 ? "/dev/null" : sel == 6 ? "" : sel == 7 ? NULL : "/nonexistent-gpuflow-fuzz/dir/trace.json";
        if (sel == 6 || sel == 7) fz_bad(&e, GF_ERROR_INVALID_ARGUMENT);
        else if (d >= 0 && !F.profiled[d]) fz_bad(&e, GF_ERROR_INVALID_STATE);
        else if (sel == 8) fz_bad(&e, GF_OK);   /* some failure */
        FZ_CALL(&e, gf_profiler_write_trace(dev, path));
        break;
    }
    default: FZ_CALL(&e, gf_device_synchronize(dev)); break;
    }
}

/* ---- the op table ----------------------------------------------------------------------------------------- */
typedef struct fz_op { const char *name; void (*fn)(fz_in *in); } fz_op;
static void op_copy_h2d_async(fz_in *in) { op_copy_host_async(in, 0); }
static void op_copy_d2h_async(fz_in *in) { op_copy_host_async(in, 1); }

static const fz_op fz_ops[] = {
    { "dev_open", op_dev_open },           { "dev_close", op_dev_close },
    { "dev_query", op_dev_query },         { "names", op_names },
    { "buf_create", op_buf_create },       { "buf_destroy", op_buf_destroy },
    { "buf_create_async", op_buf_create_async }, { "buf_destroy_async", op_buf_destroy_async },
    { "copy_sync", op_copy_sync },         { "copy_h2d_async", op_copy_h2d_async },
    { "copy_d2h_async", op_copy_d2h_async }, { "copy_d2d_async", op_copy_d2d_async },
    { "fill_async", op_fill_async },       { "prefetch", op_prefetch },
    { "host", op_host },                   { "stream_create", op_stream_create },
    { "stream_destroy", op_stream_destroy }, { "stream_sync", op_stream_sync },
    { "stream_wait", op_stream_wait },     { "stream_callback", op_stream_callback },
    { "event_create", op_event_create },   { "event_destroy", op_event_destroy },
    { "event_record", op_event_record },   { "event_sync", op_event_sync },
    { "event_elapsed", op_event_elapsed }, { "event_wait", op_event_wait },
    { "epool_create", op_epool_create },   { "epool_destroy", op_epool_destroy },
    { "epool_use", op_epool_use },         { "spool_create", op_spool_create },
    { "spool_destroy", op_spool_destroy }, { "spool_use", op_spool_use },
    { "set_create", op_set_create },       { "set_destroy", op_set_destroy },
    { "set_use", op_set_use },             { "barrier", op_barrier },
    { "flow_create", op_flow_create },     { "flow_destroy", op_flow_destroy },
    { "flow_add", op_flow_add },           { "flow_depend", op_flow_depend },
    { "flow_run", op_flow_run },           { "capture_begin", op_capture_begin },
    { "capture_end", op_capture_end },     { "graph_launch", op_graph_launch },
    { "graph_update", op_graph_update },   { "graph_capture", op_graph_capture },
    { "graph_misc", op_graph_misc },       { "module", op_module },
    { "kernel_get", op_kernel_get },       { "launch", op_launch },
    { "profiler", op_profiler },
    { "buf_view", op_buf_view },           { "fill_wide", op_fill_wide },
    { "copy_2d", op_copy_2d },             { "buf_record_stream", op_buf_record_stream },
    { "memory", op_memory },               { "native", op_native },
    { "oom", op_oom },                     { "allocator", op_allocator },
    { "gpool", op_gpool },                 { "graph_set_args", op_graph_set_args },
    { "flow_misc", op_flow_misc },         { "range", op_range },
    { "race_state", op_race_state },       { "block_kernels", op_block_kernels },
    { "cache_file", op_cache_file },
};
#define FZ_OPS ((unsigned)(sizeof fz_ops / sizeof fz_ops[0]))

static void fz_run_op(const struct fz_op *op, fz_in *in) { op->fn(in); }
static int fz_op_may_start_barriers(const struct fz_op *op)   /* op_oom */
{
    return op->fn == op_block_kernels || (F.kb_queued && op->fn == op_graph_launch);
}
static const struct fz_op *fz_op_at(unsigned i)   /* an op to run under op_oom */
{
    const fz_op *op = &fz_ops[i % FZ_OPS];
    return op->fn == op_oom || op->fn == op_dev_close ? NULL : op;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int started;
    gf_device *dev = NULL;
    size_t at;
    if (!started) {
        const char *t = getenv("FUZZ_TRACE");
        fz_trace = t && *t && *t != '0';
        gf_set_logger(fz_log, NULL);
        fz_prime();
        started = 1;
    }
    memset(&F, 0, sizeof F);
    __atomic_store_n(&fz_callbacks, 0, __ATOMIC_RELAXED);
    fz_task_runs = 0;
    F.op = -1;
    F.op_name = "open";
    if (FZ_CALL(NULL, gf_device_open(GF_BACKEND_STUB, 0, &dev)) != GF_OK) fz_die(__LINE__, "gf_device_open", "the stub did not open");
    fz_dev_opened(0, dev);
    for (at = 0; at < size && F.op + 1 < FZ_MAX_OPS; at += FZ_REC) {
        fz_in in;
        const fz_op *op = &fz_ops[data[at] % FZ_OPS];
        in.p = data + at + 1;
        in.n = size - at - 1 < FZ_REC - 1 ? size - at - 1 : FZ_REC - 1;
        in.at = 0;
        F.op++;
        F.op_name = op->name;
        F.op_deps = 0;
        if (fz_trace) printf("#%d %s\n", F.op, op->name);
        op->fn(&in);
        fz_caps_update();
    }
    F.op_name = NULL;
    fz_close_device(1);
    fz_close_device(0);
    if (fz_trace) {
        printf("end: %d stream callbacks and waiters ran, %d flow tasks and capture functions\n",
               __atomic_load_n(&fz_callbacks, __ATOMIC_RELAXED), fz_task_runs);
        fflush(stdout);
    }
    return 0;
}

/* ---- replay and seeds (no libFuzzer) -------------------------------------------------------------------------- */
#ifdef FUZZ_REPLAY
static int fz_replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0, got;
    if (!f) { fprintf(stderr, "fuzz_replay: cannot open %s\n", path); exit(2); }
    do {
        if (n == cap) {
            unsigned char *p = (unsigned char *)realloc(buf, cap = cap ? cap * 2 : 4096);
            if (!p) { fprintf(stderr, "fuzz_replay: out of memory\n"); exit(2); }
            buf = p;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    if (fz_trace) printf("== %s (%lu bytes)\n", path, (unsigned long)n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

static int fz_replay_path(const char *path)
{
    struct stat st;
    DIR *dir;
    struct dirent *de;
    int runs = 0;
    if (stat(path, &st) != 0) { fprintf(stderr, "fuzz_replay: no such file or directory: %s\n", path); exit(2); }
    if (!S_ISDIR(st.st_mode)) return fz_replay_file(path);
    if (!(dir = opendir(path))) { fprintf(stderr, "fuzz_replay: cannot read %s\n", path); exit(2); }
    while ((de = readdir(dir)) != NULL) {
        char full[4096];
        if (de->d_name[0] == '.') continue;
        snprintf(full, sizeof full, "%s/%s", path, de->d_name);
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) runs += fz_replay_file(full);
    }
    closedir(dir);
    return runs;
}

/* ---- the seed corpus: a few inputs per family of calls, from a fixed generator ---------------------------------- */
static uint32_t fz_rng = 12345u;
static unsigned fz_rand(void) { fz_rng = fz_rng * 1103515245u + 12345u; return (fz_rng >> 16) & 0x7fffu; }

static int fz_op_index(const char *name)
{
    unsigned i;
    for (i = 0; i < FZ_OPS; i++) if (!strcmp(fz_ops[i].name, name)) return (int)i;
    fprintf(stderr, "fuzz_replay: no op %s\n", name);
    exit(2);
}

/* One record: the op and its argument bytes; zeroes (a plain valid call) where random is 0,
   pseudo-random bytes (now and then a bad argument) otherwise. */
static void fz_emit(FILE *f, const char *op, int random)
{
    unsigned char rec[FZ_REC];
    int i;
    memset(rec, 0, sizeof rec);
    rec[0] = (unsigned char)fz_op_index(op);
    for (i = 1; i < FZ_REC && random; i++) rec[i] = (unsigned char)fz_rand();
    fwrite(rec, 1, sizeof rec, f);
}

static const char *const fz_setup[] = { "stream_create", "stream_create", "buf_create", "buf_create", "event_create", "event_create" };

/* Families: the ops each seed draws from (after a plain setup of streams, buffers, events). */
static const char *const fz_families[][10] = {
    { "buffers", "buf_create", "buf_destroy", "copy_sync", "copy_h2d_async", "copy_d2h_async", "copy_d2d_async", "fill_async", "prefetch", "host" },
    { "async-memory", "buf_create_async", "buf_destroy_async", "fill_async", "copy_d2h_async", "stream_sync", "buf_destroy", "capture_begin", "capture_end", "graph_launch" },
    { "streams", "stream_create", "stream_destroy", "stream_sync", "stream_wait", "stream_callback", "fill_async", "barrier", "dev_query", "names" },
    { "events", "event_create", "event_destroy", "event_record", "event_sync", "event_elapsed", "event_wait", "stream_wait", "fill_async", "event_wait" },
    { "event-pools", "epool_create", "epool_use", "epool_use", "epool_destroy", "event_record", "event_wait", "event_sync", "stream_wait", "epool_use" },
    { "stream-pools", "spool_create", "spool_use", "spool_use", "spool_destroy", "fill_async", "stream_sync", "barrier", "capture_begin", "spool_use" },
    { "sets", "set_create", "set_use", "set_use", "set_destroy", "fill_async", "stream_callback", "barrier", "set_use", "stream_sync" },
    { "flows", "flow_create", "flow_add", "flow_add", "flow_depend", "flow_depend", "flow_run", "spool_create", "flow_destroy", "flow_run" },
    { "graphs", "capture_begin", "fill_async", "copy_d2h_async", "capture_end", "graph_launch", "graph_update", "graph_capture", "graph_misc", "stream_sync" },
    { "kernels", "module", "kernel_get", "kernel_get", "launch", "launch", "launch", "capture_begin", "capture_end", "graph_launch" },
    { "devices", "dev_open", "dev_close", "dev_query", "buf_create", "stream_create", "copy_d2d_async", "stream_wait", "profiler", "names" },
    { "profiler", "profiler", "profiler", "fill_async", "copy_d2h_async", "stream_wait", "launch", "profiler", "stream_sync", "profiler" },
    { "views", "buf_view", "buf_view", "fill_wide", "copy_d2h_async", "buf_destroy", "launch", "buf_destroy_async", "buf_create_async", "copy_d2d_async" },
    { "copies-2d", "copy_2d", "copy_2d", "copy_2d", "fill_wide", "buf_view", "capture_begin", "capture_end", "graph_launch", "stream_sync" },
    { "memory", "memory", "memory", "buf_create", "buf_create_async", "buf_destroy_async", "buf_record_stream", "buf_destroy", "native", "memory" },
    { "native", "native", "native", "native", "fill_async", "copy_2d", "buf_view", "buf_destroy", "allocator", "stream_sync" },
    { "out-of-memory", "oom", "oom", "oom", "oom", "stream_sync", "buf_create", "event_create", "flow_run", "graph_capture" },
    { "graph-pools", "gpool", "capture_begin", "buf_create_async", "capture_end", "graph_capture", "graph_launch", "graph_misc", "gpool", "graph_set_args" },
    { "flows-more", "flow_misc", "flow_misc", "flow_depend", "flow_run", "flow_misc", "range", "range", "spool_create", "flow_run" },
    { "races-state", "race_state", "race_state", "fill_async", "launch", "copy_d2d_async", "stream_wait", "event_wait", "race_state", "race_state" },
    { "block-kernels", "block_kernels", "block_kernels", "block_kernels", "capture_begin", "capture_end", "graph_launch", "graph_set_args", "stream_sync", "oom" },
    { "cache-files", "cache_file", "cache_file", "cache_file", "cache_file", "cache_file", "cache_file", "cache_file", "cache_file", "race_state" },
};
#define FZ_FAMILIES (sizeof fz_families / sizeof fz_families[0])

static void fz_generate(const char *dir)
{
    unsigned fam, seed, i;
    for (fam = 0; fam < FZ_FAMILIES; fam++)
        for (seed = 0; seed < 3; seed++) {
            char path[4096];
            FILE *f;
            snprintf(path, sizeof path, "%s/%02u-%s-%u", dir, fam, fz_families[fam][0], seed);
            if (!(f = fopen(path, "wb"))) { fprintf(stderr, "fuzz_replay: cannot write %s\n", path); exit(2); }
            fz_rng = 1000u * fam + seed + 1;
            for (i = 0; i < sizeof fz_setup / sizeof fz_setup[0]; i++) fz_emit(f, fz_setup[i], 0);
            if (!strcmp(fz_families[fam][0], "kernels") || !strcmp(fz_families[fam][0], "block-kernels")) { fz_emit(f, "module", 0); fz_emit(f, "kernel_get", 0); }
            if (!strcmp(fz_families[fam][0], "flows")) { fz_emit(f, "spool_create", 0); fz_emit(f, "flow_create", 0); }
            for (i = 0; i < 24 + 8 * seed; i++) {
                /* the first seed of each family calls plainly, the others with random arguments */
                fz_emit(f, fz_families[fam][1 + fz_rand() % 9], seed > 0 || fz_rand() % 4 == 0);
            }
            fclose(f);
        }
    printf("wrote %u seeds to %s\n", (unsigned)(FZ_FAMILIES * 3), dir);
}

int main(int argc, char **argv)
{
    int i, runs = 0;
    if (argc == 3 && !strcmp(argv[1], "--generate")) { fz_generate(argv[2]); return 0; }
    if (argc < 2) { fprintf(stderr, "usage: %s DIR|FILE...   |   %s --generate DIR\n", argv[0], argv[0]); return 2; }
    for (i = 1; i < argc; i++) runs += fz_replay_path(argv[i]);
    printf("%d passed, 0 failed\n", runs);   /* a failed input aborts before this line */
    return 0;
}
#endif
