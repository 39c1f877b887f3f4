/* A tiny test harness of our own.

   CHECK(cond, what)              one assertion; prints file:line, what, and gf_last_error()
                                  when it fails; evaluates to 1 when it passed, else 0
   CHECK_EQ_RESULT(expr, code)    expr must return exactly that gf_result
   CHECK_FAIL(expr, code)         a refused call: that code, and a fresh gf_last_error() text
                                  (the text is primed with a sentinel first, so a stale
                                  message from an earlier failure does not count); two checks
   CHECK_SETS_ERROR(stmt)         a void call given a bad handle sets gf_last_error()
   SKIP(reason)                   counts one skipped check and says why
   th_finish()                    prints `N passed, N failed[, N skipped]`; returns the exit code

   Plus the host-side tools the tests share: millisecond sleep and clock, a flag that other
   threads (stream callbacks, waiters) set and the test waits on with a timeout, and a gate: a
   stream callback that holds its stream until the test opens it. Every wait here is bounded,
   so a library bug shows up as a failed check, never as a hung test. Each test program is one
   translation unit and includes gpuflow.h before this file. */
#ifndef GPUFLOW_TEST_HARNESS_H
#define GPUFLOW_TEST_HARNESS_H

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include "../gpuflow.h"

/* TH_UNDER_TSAN: built with ThreadSanitizer. A program that races on purpose (for the race
   detector to report) races for real on the stub, so such parts skip under TSan (ASan runs them). */
#if defined(__SANITIZE_THREAD__)
#  define TH_UNDER_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define TH_UNDER_TSAN 1
#  endif
#endif
#ifndef TH_UNDER_TSAN
#  define TH_UNDER_TSAN 0
#endif
/* TH_UNDER_SANITIZER: any sanitizer whose allocator stops the program on a request it cannot
   meet (a test of gpuflow's answer to a huge allocation skips there). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define TH_UNDER_SANITIZER 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#    define TH_UNDER_SANITIZER 1
#  endif
#endif
#ifndef TH_UNDER_SANITIZER
#  define TH_UNDER_SANITIZER 0
#endif

/* Each test program uses only some of these helpers. */
#if defined(__GNUC__)
#  define TH_FN static __attribute__((unused))
#else
#  define TH_FN static
#endif

static int th_passed, th_failed, th_skipped;
static pthread_mutex_t th_count_lock = PTHREAD_MUTEX_INITIALIZER;  /* checks from threads */

TH_FN int th_record(int ok, const char *file, int line, const char *what, const char *detail)
{
    pthread_mutex_lock(&th_count_lock);
    if (ok) {
        th_passed++;
    } else {
        th_failed++;
        printf("FAIL %s:%d: %s%s%s [gf_last_error: %s]\n", file, line, what,
               detail[0] ? ": " : "", detail, gf_last_error());
        fflush(stdout);
    }
    pthread_mutex_unlock(&th_count_lock);
    return ok;
}

TH_FN int th_check(int ok, const char *file, int line, const char *what)
{
    return th_record(ok, file, line, what, "");
}

TH_FN int th_check_result(gf_result got, gf_result want, const char *file, int line, const char *expr)
{
    char detail[160];
    detail[0] = 0;
    if (got != want)
        snprintf(detail, sizeof detail, "returned %s (%d), expected %s (%d)",
                 gf_result_name(got), (int)got, gf_result_name(want), (int)want);
    return th_record(got == want, file, line, expr, detail);
}

/* The sentinel text: the message of a failure that no tested call shares (an unknown
   backend). th_prime() makes it this thread's current text before a refused call. */
static char th_sentinel[1024];
static int th_sentinel_taken;
TH_FN void th_prime(void)
{
    gf_device *d = NULL;
    gf_device_open((gf_backend)0x7777, 0, &d);
    pthread_mutex_lock(&th_count_lock);
    if (!th_sentinel_taken) {
        snprintf(th_sentinel, sizeof th_sentinel, "%s", gf_last_error());
        th_sentinel_taken = 1;
    }
    pthread_mutex_unlock(&th_count_lock);
}

/* gf_last_error() holds a message that is not the sentinel: the last call set it. */
TH_FN int th_check_error_set(const char *file, int line, const char *expr)
{
    const char *msg = gf_last_error();
    char what[320];
    snprintf(what, sizeof what, "%s: sets gf_last_error()", expr);
    return th_record(msg && msg[0] && strcmp(msg, th_sentinel) != 0, file, line, what, "");
}

TH_FN int th_check_fail(gf_result got, gf_result want, const char *file, int line, const char *expr)
{
    int ok = th_check_result(got, want, file, line, expr);
    return th_check_error_set(file, line, expr) && ok;
}

#define CHECK(cond, what) th_check((cond) ? 1 : 0, __FILE__, __LINE__, (what))
#define CHECK_EQ_RESULT(expr, code) th_check_result((expr), (code), __FILE__, __LINE__, #expr)
#define CHECK_FAIL(expr, code) \
    th_check_fail((th_prime(), (expr)), (code), __FILE__, __LINE__, #expr)
/* For the void calls (destroy of a bad handle): they must set the error text. */
#define CHECK_SETS_ERROR(stmt) \
    do { th_prime(); stmt; th_check_error_set(__FILE__, __LINE__, #stmt); } while (0)
/* For a destroy of NULL: nothing to do, nothing said (gf_last_error() left as it was). */
#define CHECK_QUIET(stmt) \
    do { th_prime(); stmt; th_check(strcmp(gf_last_error(), th_sentinel) == 0, __FILE__, __LINE__, #stmt ": leaves gf_last_error() alone"); } while (0)
#define SKIP(reason) th_skip(__FILE__, __LINE__, (reason))

TH_FN void th_skip(const char *file, int line, const char *reason)
{
    pthread_mutex_lock(&th_count_lock);
    th_skipped++;
    printf("SKIP %s:%d: %s\n", file, line, reason);
    fflush(stdout);
    pthread_mutex_unlock(&th_count_lock);
}

TH_FN int th_finish(void)
{
    if (th_skipped)
        printf("%d passed, %d failed, %d skipped\n", th_passed, th_failed, th_skipped);
    else
        printf("%d passed, %d failed\n", th_passed, th_failed);
    fflush(stdout);
    return th_failed ? 1 : 0;
}

/* ---- time -------------------------------------------------------------------------------- */
TH_FN void th_sleep_ms(unsigned ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000u);
    ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
    while (nanosleep(&ts, &ts) != 0) {}
}

TH_FN double th_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Generous bound for anything that should happen "soon": slow CI machines and sanitizers. */
#define TH_WAIT_MS 20000u

/* ---- a counter other threads bump and the test waits on --------------------------------- */
typedef struct th_flag {
    pthread_mutex_t m;
    int value;
    gf_result status;     /* last status a callback saw */
} th_flag;

TH_FN void th_flag_init(th_flag *f)
{
    pthread_mutex_init(&f->m, NULL);
    f->value = 0;
    f->status = GF_OK;
}
TH_FN void th_flag_destroy(th_flag *f) { pthread_mutex_destroy(&f->m); }
TH_FN void th_flag_add(th_flag *f, int n)
{
    pthread_mutex_lock(&f->m);
    f->value += n;
    pthread_mutex_unlock(&f->m);
}
TH_FN int th_flag_get(th_flag *f)
{
    int v;
    pthread_mutex_lock(&f->m);
    v = f->value;
    pthread_mutex_unlock(&f->m);
    return v;
}
/* Waits until the value reaches at least want; returns 1 if it did within timeout_ms. */
TH_FN int th_flag_wait(th_flag *f, int want, unsigned timeout_ms)
{
    double end = th_now_ms() + timeout_ms;
    while (th_flag_get(f) < want) {
        if (th_now_ms() > end) return 0;
        th_sleep_ms(1);
    }
    return 1;
}
/* A gf_callback that bumps a th_flag and keeps the status it was given. */
TH_FN void th_flag_cb(void *user, gf_result status)
{
    th_flag *f = (th_flag *)user;
    pthread_mutex_lock(&f->m);
    f->value++;
    f->status = status;
    pthread_mutex_unlock(&f->m);
}

/* ---- a gate: a stream callback that holds its stream until the test opens it ------------- */
typedef struct th_gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    int open, entered, left, timed_out;
} th_gate;

TH_FN void th_gate_init(th_gate *g)
{
    pthread_mutex_init(&g->m, NULL);
    pthread_cond_init(&g->c, NULL);
    g->open = g->entered = g->left = g->timed_out = 0;
}
TH_FN void th_gate_destroy(th_gate *g)
{
    pthread_cond_destroy(&g->c);
    pthread_mutex_destroy(&g->m);
}
/* The callback: blocks until opened, or gives up after TH_WAIT_MS (a failed test, not a hang). */
TH_FN void th_gate_cb(void *user, gf_result status)
{
    th_gate *g = (th_gate *)user;
    struct timespec ts;
    (void)status;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += TH_WAIT_MS / 1000u;
    pthread_mutex_lock(&g->m);
    g->entered++;
    while (!g->open) {
        if (pthread_cond_timedwait(&g->c, &g->m, &ts) != 0 && !g->open) {
            g->timed_out = 1;
            break;
        }
    }
    g->left++;
    pthread_mutex_unlock(&g->m);
}
TH_FN void th_gate_open(th_gate *g)
{
    pthread_mutex_lock(&g->m);
    g->open = 1;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}
TH_FN int th_gate_get(th_gate *g, const int *field)
{
    int v;
    pthread_mutex_lock(&g->m);
    v = *field;
    pthread_mutex_unlock(&g->m);
    return v;
}
/* Waits (bounded) until n callbacks have entered the gate: the work before it has run. A test
   that times what the gate holds starts its clock after this, not after the enqueue (a loaded
   machine may start the stream's thread late). */
TH_FN int th_gate_wait_entered(th_gate *g, int n, unsigned timeout_ms)
{
    double until = th_now_ms() + timeout_ms;
    while (th_gate_get(g, &g->entered) < n) {
        if (th_now_ms() > until) return 0;
        th_sleep_ms(1);
    }
    return 1;
}
#define TH_GATE_LEFT(g) th_gate_get((g), &(g)->left)
#define TH_GATE_TIMED_OUT(g) th_gate_get((g), &(g)->timed_out)

/* ---- the backend a test runs on: its one argument ----------------------------------------- */
/* "stub", "cuda", "hip" or "opencl" as argv[1]: its name, with *b set; NULL after printing the
   usage (the caller returns 2). */
/* A backend by its registry name (gf_backend_name): the name, with *b set; NULL if none has it. */
TH_FN const char *th_backend_named(const char *name, gf_backend *b)
{
    gf_backend k;
    for (k = (gf_backend)(GF_BACKEND_AUTO + 1); name && k < GF_BACKEND_COUNT; k = (gf_backend)(k + 1))
        if (!strcmp(name, gf_backend_name(k))) { *b = k; return gf_backend_name(k); }
    return NULL;
}
/* "stub|cuda|..." from the registry, for usage lines. */
TH_FN const char *th_backend_choices(void)
{
    static char text[128];
    gf_backend k;
    text[0] = 0;
    for (k = (gf_backend)(GF_BACKEND_AUTO + 1); k < GF_BACKEND_COUNT; k = (gf_backend)(k + 1))
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", text[0] ? "|" : "", gf_backend_name(k));
    return text;
}
TH_FN const char *th_backend_arg(int argc, char **argv, gf_backend *b)
{
    const char *name = argc == 2 ? th_backend_named(argv[1], b) : NULL;
    if (!name) fprintf(stderr, "usage: %s %s\n", argv[0], th_backend_choices());
    return name;
}

/* ---- what the library said: a logger that keeps the text, for checks that look for words --- */
static pthread_mutex_t th_said_lock = PTHREAD_MUTEX_INITIALIZER;
static char th_said_text[1 << 16];
static size_t th_said_used;
/* gf_set_logger(th_said_logger, NULL): each message as "E|W|I text" on a line of its own */
TH_FN void th_said_logger(void *user, gf_log_level level, gf_result code, const char *message)
{
    size_t n = strlen(message);
    (void)user; (void)code;
    pthread_mutex_lock(&th_said_lock);
    if (th_said_used + n + 8 < sizeof th_said_text)
        th_said_used += (size_t)sprintf(th_said_text + th_said_used, "%c %s\n",
                                        level == GF_LOG_ERROR ? 'E' : level == GF_LOG_WARNING ? 'W' : 'I', message);
    pthread_mutex_unlock(&th_said_lock);
}
TH_FN void th_said_clear(void)
{
    pthread_mutex_lock(&th_said_lock);
    th_said_used = 0;
    th_said_text[0] = 0;
    pthread_mutex_unlock(&th_said_lock);
}
TH_FN int th_said_count(const char *words)   /* how many times words appear */
{
    int n = 0;
    const char *p;
    pthread_mutex_lock(&th_said_lock);
    for (p = th_said_text; (p = strstr(p, words)) != NULL; p++) n++;
    pthread_mutex_unlock(&th_said_lock);
    return n;
}

/* ---- an order log: callbacks append small integers; the test reads it after a sync ------- */
typedef struct th_log {
    pthread_mutex_t m;
    int n;
    int items[4096];
} th_log;
TH_FN void th_log_init(th_log *l) { pthread_mutex_init(&l->m, NULL); l->n = 0; }
TH_FN void th_log_destroy(th_log *l) { pthread_mutex_destroy(&l->m); }
TH_FN void th_log_add(th_log *l, int v)
{
    pthread_mutex_lock(&l->m);
    if (l->n < (int)(sizeof l->items / sizeof l->items[0])) l->items[l->n++] = v;
    pthread_mutex_unlock(&l->m);
}
TH_FN int th_log_count(th_log *l)
{
    int n;
    pthread_mutex_lock(&l->m);
    n = l->n;
    pthread_mutex_unlock(&l->m);
    return n;
}
/* Index of the first entry equal to v at or after from, or -1. */
TH_FN int th_log_find(th_log *l, int v, int from)
{
    int i, at = -1;
    pthread_mutex_lock(&l->m);
    for (i = from; i < l->n; i++)
        if (l->items[i] == v) { at = i; break; }
    pthread_mutex_unlock(&l->m);
    return at;
}

#endif
