/* The stub as a checker (issue "Reliability of the new surface"): kernels that misuse block
   barriers, and (GPUFLOW_DEBUG, defined here) kernels that write outside their buffers.

     barriers  a thread that returns before a barrier the others reach (thread 0 of the
               launch, or another thread, in a later block), barriers in divergent code: the
               launch runs to its end (no hang), the stream fails with GF_ERROR_DRIVER naming
               the kernel, the block and how many threads arrived, the next synchronize
               reports it, the state report shows it, and the device stays usable. Correct
               kernels (barriers in loops, in conditions uniform across a block) never fail.
     running   the state report names a kernel that runs now and the block it is at
     guards    a write one element past a buffer's end, one before its start, past the end
               through a view: the stream fails naming the kernel and the argument; wrapped
               memory (no guard zones) and in-bounds kernels do not.
     spent     the run items a stream keeps for its next push to free: at most 64, then freed
     events    a stream's failure reaches what comes after it: an event recorded later
               answers its query, synchronize and elapsed time with it, gf_event_on_complete's
               callback gets it, and a stream that waits for the event fails with it
     flows     a warm flow run keeps its plan and scratch: few allocations a run

   usage: stub_checks (the stub only) */
#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_DEBUG
#include "../gpuflow.h"
#include "harness.h"
#include <stdlib.h>
#if !defined(_WIN32)
#  include <signal.h>
#  include <sys/wait.h>
#endif
/* A sanitizer reports a fault itself and exits (1, or its exitcode) rather than die by the signal */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define SC_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#    define SC_SANITIZED 1
#  endif
#endif
#ifndef SC_SANITIZED
#  define SC_SANITIZED 0
#endif

static gf_device *dev;

/* ---- kernels: one float buffer x, then its length n ---- */
static const gf_stub_param x_n_params[2] = { { "x", "float *", sizeof(float *) }, { "n", "unsigned", sizeof(unsigned) } };
static unsigned lin(const gf_kernel_ctx *c) { return c->block_idx[0] * c->block[0] + c->thread_idx[0]; }
static float *arg_x(void *const *a) { float *x; memcpy(&x, a[0], sizeof x); return x; }
static unsigned arg_n(void *const *a) { unsigned n; memcpy(&n, a[1], sizeof n); return n; }

/* block 2's thread 3 returns before the barrier the other 7 reach */
static void k_early_return(const gf_kernel_ctx *c, void *const *a)
{
    float *x = arg_x(a);
    if (c->block_idx[0] == 2 && c->thread_idx[0] == 3) return;
    x[lin(c)] = 1.0f;
    gf_block_sync();
    x[lin(c)] += 1.0f;
}
/* thread 0 of every block returns first: the launch's first thread decides it has no barrier */
static void k_thread0_returns(const gf_kernel_ctx *c, void *const *a)
{
    float *x = arg_x(a);
    if (c->thread_idx[0] == 0) return;
    gf_block_sync();
    x[lin(c)] = 2.0f;
}
/* half the block at one barrier, half at another */
static void k_divergent(const gf_kernel_ctx *c, void *const *a)
{
    float *x = arg_x(a);
    if (c->thread_idx[0] < 4) { x[lin(c)] = 1.0f; gf_block_sync(); x[lin(c)] += 3.0f; }
    else { x[lin(c)] = 2.0f; gf_block_sync(); x[lin(c)] *= 5.0f; }
}
/* correct: a shared-memory-free reverse within each block, barriers in a loop, and a barrier
   under a condition that is the same for the whole block */
static void k_correct(const gf_kernel_ctx *c, void *const *a)
{
    float *x = arg_x(a);
    unsigned base = c->block_idx[0] * c->block[0], t = c->thread_idx[0], n = c->block[0], round;
    for (round = 0; round < 3; round++) {
        float mine = x[base + (n - 1 - t)];
        gf_block_sync();
        x[base + t] = mine;
        gf_block_sync();
    }
    if (c->block_idx[0] % 2) { gf_block_sync(); x[base + t] += 1.0f; }
}
/* block 0 returns at once; the others reverse their 8 elements through a barrier: legal (the
   condition is the same for a whole block) */
static void k_block0_skips(const gf_kernel_ctx *c, void *const *a)
{
    float *x = arg_x(a), mine;
    unsigned base = c->block_idx[0] * c->block[0], t = c->thread_idx[0];
    if (c->block_idx[0] == 0) return;
    mine = x[base + 7 - t];
    gf_block_sync();
    x[base + t] = mine;
}
/* spins until the host lets it go, in block 1 */
static int spin_release;
static void k_spin(const gf_kernel_ctx *c, void *const *a)
{
    (void)a;
    if (c->block_idx[0] == 1 && c->thread_idx[0] == 0)
        while (!__atomic_load_n(&spin_release, __ATOMIC_ACQUIRE)) {}
}
/* writes x[n + off] (off = -1 - n: x[-1]) */
static int write_at;
static void k_write_at(const gf_kernel_ctx *c, void *const *a)
{
    float *x = arg_x(a);
    if (lin(c) == 0) x[write_at] = 42.0f;
}
static void k_in_bounds(const gf_kernel_ctx *c, void *const *a)
{
    float *x = arg_x(a);
    if (lin(c) < arg_n(a)) x[lin(c)] = 7.0f;
}
/* threads that sync and need a little more stack than a fiber has (2 KiB past it: what lies
   below a stack without a guard is mapped, and was written over), each page written */
static void k_deep(const gf_kernel_ctx *c, void *const *a)
{
    volatile unsigned char deep[GF__FIBER_STACK + 2048];
    size_t i;
    float *x = arg_x(a);
    for (i = 0; i < sizeof deep; i += 512) deep[i] = (unsigned char)i;
    gf_block_sync();
    x[lin(c)] = (float)deep[512];
}
static const gf_stub_kernel kernels[] = {
    { "deep", k_deep, 2, x_n_params, 0, NULL, 0 },
    { "early_return", k_early_return, 2, x_n_params, 0, NULL, 0 }, { "thread0_returns", k_thread0_returns, 2, x_n_params, 0, NULL, 0 },
    { "divergent", k_divergent, 2, x_n_params, 0, NULL, 0 },       { "correct", k_correct, 2, x_n_params, 0, NULL, 0 },
    { "spin", k_spin, 2, x_n_params, 0, NULL, 0 },                 { "write_at", k_write_at, 2, x_n_params, 0, NULL, 0 },
    { "in_bounds", k_in_bounds, 2, x_n_params, 0, NULL, 0 },       { "block0_skips", k_block0_skips, 2, x_n_params, 0, NULL, 0 },
};
static gf_module *mod;

/* Launches `name` with grid x block 8 threads over x (n floats) on a fresh stream; returns
   what the stream's synchronize said, and leaves the stream in *out (or destroys it). */
static gf_result run(const char *name, gf_buffer *x, unsigned n, unsigned grid, gf_stream **out)
{
    gf_kernel *k = NULL;
    gf_stream *s = NULL;
    gf_launch_dims d;
    gf_arg args[2];
    gf_result r;
    memset(&d, 0, sizeof d);
    d.grid[0] = grid; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 8; d.block[1] = d.block[2] = 1;
    args[0].value = NULL; args[0].size = 0; args[0].buffer = x;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = NULL;
    if (gf_kernel_get(mod, name, &k) != GF_OK || gf_stream_create(dev, NULL, &s) != GF_OK) return GF_ERROR_INVALID_STATE;
    r = gf_launch(s, k, d, args, 2);
    if (r == GF_OK) r = gf_stream_synchronize(s);
    if (out) *out = s; else gf_stream_destroy(s);
    return r;
}
static int error_has(const char *words) { return strstr(gf_last_error(), words) != NULL; }

static void test_barriers(void)
{
    gf_buffer *x = NULL;
    gf_stream *s = NULL;
    char state[4096] = "";
    float host[32] = {0};   /* zeros if the copy back fails */
    int i, ok;
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &x), GF_OK);

    CHECK_EQ_RESULT(run("early_return", x, 32, 4, &s), GF_ERROR_DRIVER);
    CHECK(error_has("kernel 'early_return'") && error_has("block (2, 0, 0)") && error_has("7 of its 8 threads reached gf_block_sync"),
          "a thread returning early: the kernel, the block and how many arrived");
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_ERROR_DRIVER);
    CHECK(error_has("kernel 'early_return'"), "the stream keeps the failure: every later synchronize reports it");
    CHECK_EQ_RESULT(gf_device_write_state(dev, state, sizeof state), GF_OK);
    CHECK(strstr(state, "failed: stub: kernel 'early_return', block (2, 0, 0)") != NULL, "the state report (and so the hang report) shows it");
    CHECK_EQ_RESULT(gf_copy_to_host(host, x, 0, sizeof host), GF_OK);
    for (i = 0, ok = 1; i < 32; i++) ok &= i == 2 * 8 + 3 || host[i] == 2.0f;
    CHECK(ok, "the launch ran to its end: every other thread passed the barrier");
    gf_stream_destroy(s);
    CHECK(error_has("kernel 'early_return'"), "destroying the failed stream says its failure once more, and frees it");
    CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);   /* no failed stream is left: the device is usable */

    CHECK_EQ_RESULT(run("thread0_returns", x, 32, 4, NULL), GF_ERROR_DRIVER);
    CHECK(error_has("kernel 'thread0_returns'") && error_has("block (0, 0, 0)") && error_has("7 of its 8 threads reached gf_block_sync") &&
          error_has("thread 0 returned without it"), "thread 0 returning first (the launch then runs as plain calls): still named");

    CHECK_EQ_RESULT(run("divergent", x, 32, 2, NULL), GF_ERROR_DRIVER);
    CHECK(error_has("kernel 'divergent'") && error_has("block (0, 0, 0)") && error_has("different gf_block_sync calls"),
          "barriers in divergent code: named");

    /* the device stays usable, and correct kernels never fail */
    for (i = 0; i < 32; i++) host[i] = (float)i;
    CHECK_EQ_RESULT(gf_copy_to_device(x, 0, host, sizeof host), GF_OK);
    CHECK_EQ_RESULT(run("correct", x, 32, 4, NULL), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(host, x, 0, sizeof host), GF_OK);
    for (i = 0, ok = 1; i < 32; i++) ok &= host[i] == (float)((i / 8) * 8 + (7 - i % 8)) + (float)((i / 8) % 2);
    CHECK(ok, "after misuse the device runs a correct kernel with barriers in a loop and uniform conditions, right");

    /* fuzzer KD6: block 0 decided for the whole launch, so later blocks' barriers did not hold */
    for (i = 0; i < 32; i++) host[i] = (float)i;
    CHECK_EQ_RESULT(gf_copy_to_device(x, 0, host, sizeof host), GF_OK);
    CHECK_EQ_RESULT(run("block0_skips", x, 32, 4, NULL), GF_OK);
    CHECK_EQ_RESULT(gf_copy_to_host(host, x, 0, sizeof host), GF_OK);
    for (i = 0, ok = 1; i < 32; i++) ok &= host[i] == (i < 8 ? (float)i : (float)((i / 8) * 8 + 7 - i % 8));
    CHECK(ok, "a barrier that block 0 skips and the other blocks reach (uniform per block): no failure, every block right");
    gf_buffer_destroy(x);
}

/* fuzzer KD7: no memory for a block's fiber stacks (a fiber's block: its stack and a guard page): the stream fails with OUT_OF_MEMORY, no
   thread runs twice, nothing crashes (ASan) */
static int stacks_limited, stacks_left;   /* atomics: while limited, fiber stacks that may still be allocated */
static long allocations;                  /* atomic: every alloc and realloc, counted */
static void *stacks_alloc(void *user, size_t n)
{
    (void)user;
    __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    if (n >= GF__FIBER_STACK && n < GF__FIBER_STACK + (1u << 20) && __atomic_load_n(&stacks_limited, __ATOMIC_ACQUIRE) && __atomic_fetch_sub(&stacks_left, 1, __ATOMIC_ACQ_REL) <= 0)
        return NULL;
    return malloc(n);
}
static void stacks_limit(int left)   /* -1: no limit */
{
    __atomic_store_n(&stacks_left, left, __ATOMIC_RELEASE);
    __atomic_store_n(&stacks_limited, left >= 0, __ATOMIC_RELEASE);
}
static void *stacks_realloc(void *user, void *p, size_t n) { (void)user; __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED); return realloc(p, n); }
static void stacks_free(void *user, void *p) { (void)user; free(p); }
static void test_no_memory_for_fibers(void)
{
    gf_buffer *x = NULL;
    gf_stream *s = NULL;
    float host[32] = {0};   /* zeros if the copy back fails */
    int i, ok;
    CHECK_EQ_RESULT(gf_buffer_create(dev, sizeof host, &x), GF_OK);
    for (i = 0; i < 32; i++) host[i] = (float)i;
    CHECK_EQ_RESULT(gf_copy_to_device(x, 0, host, sizeof host), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_device_trim(dev, 0), GF_OK);   /* the stacks earlier launches left to the device go */
    stacks_limit(1);   /* thread 1's stack (thread 0 runs on the worker's own), then none */
    {
        gf_kernel *k = NULL;
        gf_launch_dims d;
        gf_arg args[2];
        unsigned n = 32;
        memset(&d, 0, sizeof d);
        d.grid[0] = 4; d.grid[1] = d.grid[2] = 1;
        d.block[0] = 8; d.block[1] = d.block[2] = 1;
        args[0].value = NULL; args[0].size = 0; args[0].buffer = x;
        args[1].value = &n; args[1].size = sizeof n; args[1].buffer = NULL;
        CHECK_EQ_RESULT(gf_kernel_get(mod, "correct", &k), GF_OK);
        CHECK_EQ_RESULT(gf_launch(s, k, d, args, 2), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_ERROR_OUT_OF_MEMORY);
    }
    CHECK(error_has("kernel 'correct', block (0, 0, 0): no host memory for its threads' fiber stacks") && error_has("the launch stopped there"),
          "no memory for fiber stacks: OUT_OF_MEMORY naming the kernel and block");
    CHECK(error_has("(7 x "), "... counting the stacks its threads but thread 0 need (7 of a block of 8)");
    gf_stream_destroy(s);
    {   /* no stack at all: a kernel without barriers runs as plain calls, right */
        gf_stream *t = NULL;
        gf_kernel *k = NULL;
        gf_launch_dims d;
        gf_arg args[2];
        unsigned n = 8;
        float y[8];
        memset(&d, 0, sizeof d);
        d.grid[0] = d.grid[1] = d.grid[2] = 1;
        d.block[0] = 8; d.block[1] = d.block[2] = 1;
        args[0].value = NULL; args[0].size = 0; args[0].buffer = x;
        args[1].value = &n; args[1].size = sizeof n; args[1].buffer = NULL;
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &t), GF_OK);
        CHECK_EQ_RESULT(gf_kernel_get(mod, "in_bounds", &k), GF_OK);
        stacks_limit(0);
        CHECK_EQ_RESULT(gf_launch(t, k, d, args, 2), GF_OK);
        CHECK_EQ_RESULT(gf_stream_synchronize(t), GF_OK);
        stacks_limit(-1);
        CHECK_EQ_RESULT(gf_copy_to_host(y, x, 0, sizeof y), GF_OK);
        for (i = 0, ok = 1; i < 8; i++) ok &= y[i] == 7.0f;
        CHECK(ok, "no memory for any fiber stack: a kernel without barriers runs right as plain calls");
        gf_stream_destroy(t);
    }
    stacks_limit(-1);
    CHECK_EQ_RESULT(gf_copy_to_host(host, x, 0, sizeof host), GF_OK);
    for (i = 8, ok = 1; i < 32; i++) ok &= host[i] == (float)i;
    CHECK(ok, "... and the blocks after it did not run");
    gf_buffer_destroy(x);
}

/* The device keeps its fiber stacks for its next launches (each launch of a kernel that syncs
   made and freed one per thread but the first: 7-9 ms a launch of 256-thread blocks, whatever
   its size); gf_device_trim frees them. */
static void test_fiber_stacks_kept(void)
{
    gf_buffer *x = NULL;
    CHECK_EQ_RESULT(gf_buffer_create(dev, 32 * sizeof(float), &x), GF_OK);
    CHECK_EQ_RESULT(run("correct", x, 32, 4, NULL), GF_OK);   /* the device has stacks for 8-thread blocks now */
    stacks_limit(0);
    CHECK_EQ_RESULT(run("correct", x, 32, 4, NULL), GF_OK);   /* no stack allocated: the device kept them */
    CHECK_EQ_RESULT(gf_device_trim(dev, 0), GF_OK);
    CHECK_EQ_RESULT(run("correct", x, 32, 4, NULL), GF_ERROR_OUT_OF_MEMORY);   /* trimmed: none left, none allocated */
    stacks_limit(-1);
    CHECK_EQ_RESULT(run("correct", x, 32, 4, NULL), GF_OK);
    gf_buffer_destroy(x);
}

static void test_running_kernel_in_report(void)
{
    gf_buffer *x = NULL;
    gf_stream *s = NULL;
    gf_kernel *k = NULL;
    gf_launch_dims d;
    gf_arg args[2];
    unsigned n = 8;
    char state[4096] = "";
    int tries;
    memset(&d, 0, sizeof d);
    d.grid[0] = 3; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 8; d.block[1] = d.block[2] = 1;
    CHECK_EQ_RESULT(gf_buffer_create(dev, 256, &x), GF_OK);
    CHECK_EQ_RESULT(gf_kernel_get(mod, "spin", &k), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    args[0].value = NULL; args[0].size = 0; args[0].buffer = x;
    args[1].value = &n; args[1].size = sizeof n; args[1].buffer = NULL;
    __atomic_store_n(&spin_release, 0, __ATOMIC_RELEASE);
    CHECK_EQ_RESULT(gf_launch(s, k, d, args, 2), GF_OK);
    for (tries = 0; tries < 2000; tries++) {   /* until the worker is inside block 1 */
        if (gf_device_write_state(dev, state, sizeof state) == GF_OK &&
            strstr(state, "kernel 'spin' is running now, at block (1, 0, 0) of (3, 1, 1)")) break;
        th_sleep_ms(1);
    }
    CHECK(tries < 2000, "the state report names the kernel that runs now and its block");
    __atomic_store_n(&spin_release, 1, __ATOMIC_RELEASE);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    CHECK_EQ_RESULT(gf_device_write_state(dev, state, sizeof state), GF_OK);
    CHECK(strstr(state, "is running now") == NULL, "... and no longer once it finished");
    gf_stream_destroy(s);
    gf_buffer_destroy(x);
}

static void test_guards(void)
{
    gf_buffer *x = NULL, *view = NULL, *wrapped = NULL;
    static float outside[64];
    float host[16] = {0};   /* zeros if the copy back fails */
    int i, ok;
    CHECK_EQ_RESULT(gf_buffer_create(dev, 16 * sizeof(float), &x), GF_OK);

    CHECK_EQ_RESULT(run("in_bounds", x, 16, 2, NULL), GF_OK);
    write_at = 16;
    CHECK_EQ_RESULT(run("write_at", x, 16, 1, NULL), GF_ERROR_DRIVER);
    CHECK(error_has("kernel 'write_at' wrote outside its buffer argument 0 'x' of 64 bytes") && error_has("4 of the 64 after it changed") &&
          error_has("0 of the 64 guard bytes before"), "one element past the end: the kernel, the argument, the side");
    CHECK_EQ_RESULT(run("in_bounds", x, 16, 2, NULL), GF_OK);   /* the zone was filled again */
    write_at = -1;
    CHECK_EQ_RESULT(run("write_at", x, 16, 1, NULL), GF_ERROR_DRIVER);
    CHECK(error_has("4 of the 64 guard bytes before it") && error_has("0 of the 64 after"), "one element before the start: the side named");
    CHECK_EQ_RESULT(gf_copy_to_host(host, x, 0, sizeof host), GF_OK);
    for (i = 0, ok = 1; i < 16; i++) ok &= host[i] == 7.0f;
    CHECK(ok, "the buffer's own bytes are untouched by the checks");

    CHECK_EQ_RESULT(gf_buffer_view(x, 8 * sizeof(float), 8 * sizeof(float), &view), GF_OK);
    write_at = 8;   /* the view's end is the buffer's end */
    CHECK_EQ_RESULT(run("write_at", view, 8, 1, NULL), GF_ERROR_DRIVER);
    CHECK(error_has("kernel 'write_at' wrote outside its buffer argument 0 'x'"), "past the end through a view: caught");
    gf_buffer_destroy(view);

    CHECK_EQ_RESULT(gf_buffer_wrap(dev, (uint64_t)(uintptr_t)(outside + 8), 16 * sizeof(float), &wrapped), GF_OK);
    write_at = 16;
    CHECK_EQ_RESULT(run("write_at", wrapped, 16, 1, NULL), GF_OK);
    CHECK(outside[8 + 16] == 42.0f, "wrapped memory has no guard zones: no report (and the write landed in the program's own array)");
    gf_buffer_destroy(wrapped);
    gf_buffer_destroy(x);
}

/* The queue's run items: the worker hands them back to the next push, which frees them on the
   thread that made them; at most GF__STUB_SPENT_MAX wait, so a stream nobody pushes to any
   more holds no more than that (and its destroy frees those: ASan's leak check). */
static int spent_items(gf__stub_stream *q, int *listed)
{
    gf__stub_item *it;
    int count;
    gf__lock(&q->lock);
    count = q->spent_count;
    for (*listed = 0, it = q->spent; it; it = it->next) (*listed)++;
    gf__unlock(&q->lock);
    return count;
}
/* A kernel deeper than a fiber's stack stops at the guard page below it (SIGSEGV), in a child
   process: it wrote over the heap below the stack, silently, or returned GF_OK (found by review). */
static void test_fiber_stack_guard(void)
{
#if !defined(_WIN32)
    pid_t child;
    int status = 0;
    fflush(stdout);
    if ((child = fork()) == 0) {   /* a device of its own: the parent's stays the parent's */
        gf_module_desc md;
        gf_buffer *x = NULL;
        memset(&md, 0, sizeof md);
        md.stub_kernels = kernels;
        md.stub_kernel_count = (int)(sizeof kernels / sizeof kernels[0]);
        if (gf_device_open(GF_BACKEND_STUB, 0, &dev) != GF_OK || gf_module_load(dev, &md, &mod) != GF_OK ||
            gf_buffer_create(dev, 64 * sizeof(float), &x) != GF_OK) _exit(3);
        if (run("deep", x, 64, 1, NULL) != GF_OK) { printf("  the deep kernel failed: %s\n", gf_last_error()); fflush(stdout); _exit(4); }
        _exit(0);
    }
    if (!CHECK(child > 0, "guard: a child process to run the deep kernel in")) return;
    waitpid(child, &status, 0);
    CHECK((WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS)) ||
          (SC_SANITIZED && WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3 && WEXITSTATUS(status) != 4),
          "guard: a kernel deeper than a fiber's stack stops at the guard page, not past it");
    if (!WIFSIGNALED(status)) printf("  the child exited with %d\n", WEXITSTATUS(status));
#else
    SKIP("guard pages: POSIX only");
#endif
}

static void test_spent_items(void)
{
    gf_stream *s;
    gf_buffer *b;
    int i, n, listed, ok = 1;
    if (!CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK)) return;
    if (!CHECK_EQ_RESULT(gf_buffer_create(dev, 64, &b), GF_OK)) { gf_stream_destroy(s); return; }
    for (i = 0; i < 1000; i++) ok &= gf_fill_async(s, b, 0, (unsigned char)i, 64) == GF_OK;
    CHECK(ok, "1000 fills queued");
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    n = spent_items((gf__stub_stream *)s->native, &listed);
    CHECK(n == listed && n >= 1 && n <= GF__STUB_SPENT_MAX, "after 1000 fills, the items kept for the next push are counted and at most GF__STUB_SPENT_MAX");
    CHECK_EQ_RESULT(gf_fill_async(s, b, 0, 7, 64), GF_OK);
    CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_OK);
    n = spent_items((gf__stub_stream *)s->native, &listed);
    CHECK(n == listed && n == 1, "the next push freed them: only its own item waits");
    gf_buffer_destroy(b);
    gf_stream_destroy(s);
}

/* early_return over 32 floats of x, 4 blocks of 8: its stream fails */
static gf_result launch_early_return(gf_stream *s, gf_buffer *x)
{
    gf_kernel *k = NULL;
    gf_launch_dims d;
    gf_arg args[2];
    unsigned n = 32;
    memset(&d, 0, sizeof d); memset(args, 0, sizeof args);
    d.grid[0] = 4; d.grid[1] = d.grid[2] = 1; d.block[0] = 8; d.block[1] = d.block[2] = 1;
    args[0].buffer = x; args[1].value = &n; args[1].size = sizeof n;
    if (gf_kernel_get(mod, "early_return", &k) != GF_OK) return GF_ERROR_NOT_FOUND;
    return gf_launch(s, k, d, args, 2);
}
/* failure propagation review: the stub's events answered GF_OK after a failed launch (CUDA and
   OpenCL report the failure), so gf_event_on_complete and flow tasks were told all went well */
static void test_failure_reaches_events(void)
{
    gf_buffer *x = NULL;
    gf_stream *s = NULL, *after = NULL;
    gf_event *start = NULL, *ev = NULL, *fine = NULL;
    uint64_t wait_id = 0;
    float ms = 0;
    th_flag told;   /* the waiter thread's callback: its count and the status it was given */
    if (!CHECK_EQ_RESULT(gf_buffer_create(dev, 32 * sizeof(float), &x), GF_OK)) return;
    th_flag_init(&told);
    CHECK_EQ_RESULT(gf_event_create(dev, GF_EVENT_TIMING, &start), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, GF_EVENT_TIMING, &ev), GF_OK);
    CHECK_EQ_RESULT(gf_event_create(dev, 0, &fine), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &after), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(fine, after), GF_OK);
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(start, s), GF_OK);
    CHECK_EQ_RESULT(launch_early_return(s, x), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(s, x, 0, 0, 32 * sizeof(float)), GF_OK);
    CHECK_EQ_RESULT(gf_event_record(ev, s), GF_OK);
    CHECK_EQ_RESULT(gf_event_on_complete(ev, th_flag_cb, &told, &wait_id), GF_OK);
    CHECK_EQ_RESULT(gf_stream_wait_event(after, ev), GF_OK);
    CHECK_EQ_RESULT(gf_fill_async(after, x, 0, 0, 32 * sizeof(float)), GF_OK);

    CHECK_EQ_RESULT(gf_event_synchronize(ev), GF_ERROR_DRIVER);
    CHECK(error_has("kernel 'early_return'"), "an event recorded after a failed launch: its synchronize names the failure");
    CHECK_EQ_RESULT(gf_event_query(ev), GF_ERROR_DRIVER);
    CHECK_EQ_RESULT(gf_event_synchronize_timeout(ev, 1000), GF_ERROR_DRIVER);
    CHECK_EQ_RESULT(gf_event_elapsed_ms(start, ev, &ms), GF_ERROR_DRIVER);
    CHECK_EQ_RESULT(gf_stream_synchronize(after), GF_ERROR_DRIVER);
    CHECK(error_has("kernel 'early_return'") && error_has("waited for"), "a stream that waited for the failed work fails with it, and says so");
    CHECK(th_flag_wait(&told, 1, TH_WAIT_MS) && told.status == GF_ERROR_DRIVER, "gf_event_on_complete's callback is told the failure");
    CHECK_EQ_RESULT(gf_event_query(fine), GF_OK);   /* recorded before, on a healthy stream */
    CHECK_EQ_RESULT(gf_event_query(start), GF_OK);  /* before the failed launch */
    gf_stream_destroy(s);
    gf_stream_destroy(after);
    CHECK_EQ_RESULT(gf_device_synchronize(dev), GF_OK);
    gf_event_destroy(start); gf_event_destroy(ev); gf_event_destroy(fine);
    gf_buffer_destroy(x);
    th_flag_destroy(&told);
}
/* A review of the above: the library's own waits took the failure too. A stream set never
   counted a failed frame complete (its next on that slot failed for good), and a copy to
   another device left that device's own stream failed for good. Both see completion. */
static void test_failure_stays_with_the_program(void)
{
    gf_stream_set *set = NULL;
    gf_stream *t = NULL;
    gf_buffer *x = NULL, *far = NULL;
    gf_device *other = NULL;
    gf_frame_info fi;
    char state[4096] = "";
    if (!CHECK_EQ_RESULT(gf_buffer_create(dev, 32 * sizeof(float), &x), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_stream_set_create(dev, 2, "failing", &set), GF_OK)) {
        CHECK_EQ_RESULT(gf_stream_set_next(set, 0, &t), GF_OK);
        if (t) CHECK_EQ_RESULT(launch_early_return(t, x), GF_OK);
        CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
        CHECK_EQ_RESULT(gf_stream_set_next(set, 1, &t), GF_OK);
        CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
        CHECK_EQ_RESULT(gf_stream_set_next(set, 0, &t), GF_OK);   /* waits for the failed frame: it is over */
        CHECK_EQ_RESULT(gf_stream_set_end_frame(set), GF_OK);
        {   /* a set's own timing of a failed frame logged the failure and set the thread's error, in a call that returned GF_OK */
            gf_buffer *none = NULL;
            CHECK_FAIL(gf_buffer_create(dev, 0, &none), GF_ERROR_INVALID_ARGUMENT);
        }
        CHECK_EQ_RESULT(gf_stream_set_wait_frames(set, 0, TH_WAIT_MS), GF_OK);
        CHECK(error_has("size"), "a wait for frames that succeeds leaves the thread's last error alone (a failed frame's timing set it)");
        CHECK(gf_stream_set_frames(set, &fi) == GF_OK && fi.frames == 3 && fi.completed == 3 && fi.in_flight == 0,
              "a stream set counts a frame whose work failed as complete: its pacing goes on");
        CHECK_EQ_RESULT(gf_stream_set_synchronize(set), GF_ERROR_DRIVER);   /* the failure is still told */
        gf_stream_set_destroy(set);
    }
    {   /* a pool whose one stream failed: acquire_ready timed out saying only that no stream became idle */
        gf_stream_pool *pool = NULL;
        gf_stream_pool_desc pd;
        gf_stream *held = NULL, *ready = NULL;
        memset(&pd, 0, sizeof pd);
        pd.count = 1;
        if (CHECK_EQ_RESULT(gf_stream_pool_create(dev, &pd, &pool), GF_OK)) {
            CHECK_EQ_RESULT(gf_stream_pool_acquire(pool, NULL, &held), GF_OK);
            if (held) CHECK_EQ_RESULT(launch_early_return(held, x), GF_OK);
            CHECK_EQ_RESULT(gf_stream_pool_release(pool, held), GF_OK);
            CHECK_FAIL(gf_stream_pool_synchronize(pool), GF_ERROR_DRIVER);
            CHECK_FAIL(gf_stream_pool_acquire_ready(pool, 0, &ready), GF_TIMEOUT);
            CHECK(error_has("1 of the pool's 1 streams failed"), "acquire_ready on a pool whose streams failed says so, not only that none became idle");
            gf_stream_pool_destroy(pool);
        }
    }
    if (gf_device_count(GF_BACKEND_STUB) > 1 && CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 1, &other), GF_OK)) {
        gf_stream *s = NULL;
        CHECK_EQ_RESULT(gf_buffer_create(other, 32 * sizeof(float), &far), GF_OK);
        CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
        if (s && far) {
            CHECK_EQ_RESULT(launch_early_return(s, x), GF_OK);
            CHECK_EQ_RESULT(gf_copy_buffer_async(s, far, 0, x, 0, 32 * sizeof(float)), GF_OK);
            CHECK_EQ_RESULT(gf_stream_synchronize(s), GF_ERROR_DRIVER);
        }
        gf_stream_destroy(s);
        CHECK_EQ_RESULT(gf_device_synchronize(other), GF_OK);
        CHECK_EQ_RESULT(gf_device_write_state(other, state, sizeof state), GF_OK);
        CHECK(strstr(state, "failed") == NULL, "a copy to another device after a failure leaves that device's own streams healthy");
        if (strstr(state, "failed")) printf("%s\n", state);
        gf_buffer_destroy(far);
        gf_device_close(other);
    }
    gf_buffer_destroy(x);
}

/* A flow run every frame allocates little once warm (an outside audit: it made its plan, ten
   arrays, and its scratch anew at every run, 27 allocations a run here for three tasks and two
   lanes; 13 now, most of them the stub's own queue items for the events a run records). */
static gf_result empty_task(gf_stream *s, void *user) { (void)s; (void)user; return GF_OK; }
static void test_flow_run_allocations(void)
{
    gf_stream_pool *pool = NULL;
    gf_flow *flow = NULL;
    gf_task a, b, c;
    long before = 0;
    int i;
    if (CHECK_EQ_RESULT(gf_stream_pool_create(dev, NULL, &pool), GF_OK) && CHECK_EQ_RESULT(gf_flow_create(dev, NULL, &flow), GF_OK) &&
        CHECK_EQ_RESULT(gf_flow_add(flow, "a", empty_task, NULL, &a), GF_OK) && CHECK_EQ_RESULT(gf_flow_add(flow, "b", empty_task, NULL, &b), GF_OK) &&
        CHECK_EQ_RESULT(gf_flow_add(flow, "c", empty_task, NULL, &c), GF_OK) && CHECK_EQ_RESULT(gf_flow_depend(flow, a, b), GF_OK) &&
        CHECK_EQ_RESULT(gf_flow_depend(flow, a, c), GF_OK)) {
        for (i = 0; i < 150; i++) {
            if (i == 50) before = __atomic_load_n(&allocations, __ATOMIC_RELAXED);
            if (gf_flow_run(flow, pool) != GF_OK || gf_flow_wait_frames(flow, 0, 10000) != GF_OK) break;
        }
        CHECK(i == 150, "a flow runs 150 times");
        i = (int)((__atomic_load_n(&allocations, __ATOMIC_RELAXED) - before) / 100);
        if (!CHECK(i <= 16, "a warm flow run: its plan and scratch kept (at most 16 allocations a run, the stub's queue items included)"))
            printf("  %d allocations a run\n", i);
    }
    if (flow) gf_flow_destroy(flow);
    if (pool) gf_stream_pool_destroy(pool);
}

int main(void)
{
    gf_module_desc md;
    gf_allocator a;   /* set before anything: the library's threads allocate too */
    a.alloc = stacks_alloc; a.realloc = stacks_realloc; a.free = stacks_free; a.user = NULL;
    gf_set_allocator(&a);
    setvbuf(stdout, NULL, _IOLBF, 0);
    gf_set_logger(NULL, NULL);
    /* one thread runs a launch's blocks, in order: what these checks count on (which block a
       memory failure stops at, which block the state report names); the dialect and
       conformance tests run blocks on every core */
    setenv("GPUFLOW_STUB_THREADS", "1", 1);
    setenv("GPUFLOW_STUB_DEVICES", "2", 1);   /* a second device for a copy across */
    if (!CHECK_EQ_RESULT(gf_device_open(GF_BACKEND_STUB, 0, &dev), GF_OK)) return th_finish();
    memset(&md, 0, sizeof md);
    md.stub_kernels = kernels;
    md.stub_kernel_count = (int)(sizeof kernels / sizeof kernels[0]);
    if (!CHECK_EQ_RESULT(gf_module_load(dev, &md, &mod), GF_OK)) return th_finish();
    test_barriers();
    test_no_memory_for_fibers();
    test_fiber_stacks_kept();
    test_running_kernel_in_report();
    test_guards();
    test_spent_items();
    test_failure_reaches_events();
    test_failure_stays_with_the_program();
    test_fiber_stack_guard();
    test_flow_run_allocations();
    gf_module_destroy(mod);
    gf_device_close(dev);
    return th_finish();
}
