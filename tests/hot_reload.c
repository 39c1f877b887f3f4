/* Kernel hot reload (issue "For the people who build on gpuflow every day"): a module loaded
   from a source file is reloaded, by a call or by a poll of the file at a frame boundary.

     file     the .gfk on disk edited: gf_module_poll sees it, the live gf_kernel launches the
              new code; no change, no reload
     broken   an edit that does not compile: GF_ERROR_BUILD with the compiler's log, the old
              code runs on
     missing  new code without a kernel the program holds: refused, the old code runs on
     flight   a launch queued before the reload (held on the device) runs the old code, one
              after it the new
     graph    a graph captured before the reload launches the new code (CUDA, HIP: the node's
              function updated in place; recorded graphs: at their next replay)
     stub     the stub runs the C form compiled into the program: a reload takes new
              stub_kernels (desc), and a reload from the file alone says so

   usage: hot_reload stub|opencl|cuda|hip */
#define _POSIX_C_SOURCE 200809L
#define GPUFLOW_IMPLEMENTATION
#include "backends.h"
#include "harness.h"
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <fcntl.h>

#define N 64u
static gf_device *dev;
static gf_stream *s;
static gf_buffer *buf;
static char path[512];

/* The stub's two versions of hr_val: the C a program would get from a library it reloaded. */
static const gf_stub_param hr_params[2] = { { "p", "GF_GLOBAL unsigned *", sizeof(unsigned *) }, { "n", "unsigned", sizeof(unsigned) } };
static void hr_fill(const gf_kernel_ctx *c, void *const *a, unsigned v)
{
    unsigned *p, n, i = c->block_idx[0] * c->block[0] + c->thread_idx[0];
    memcpy(&p, a[0], sizeof p);
    memcpy(&n, a[1], sizeof n);
    if (i < n) p[i] = v;
}
static void hr_v1(const gf_kernel_ctx *c, void *const *a) { hr_fill(c, a, 1); }
static void hr_v2(const gf_kernel_ctx *c, void *const *a) { hr_fill(c, a, 2); }
static void hr_v4(const gf_kernel_ctx *c, void *const *a) { hr_fill(c, a, 4); }
static const gf_stub_kernel stub_v1[] = { { "hr_val", hr_v1, 2, hr_params, 0, NULL, 0 } };
static const gf_stub_kernel stub_v2[] = { { "hr_val", hr_v2, 2, hr_params, 0, NULL, 0 } };
static const gf_stub_kernel stub_v4[] = { { "hr_val", hr_v4, 2, hr_params, 0, NULL, 0 } };
static const gf_stub_param hr3_params[3] = { { "p", "GF_GLOBAL unsigned *", sizeof(unsigned *) }, { "n", "unsigned", sizeof(unsigned) },
                                             { "extra", "unsigned", sizeof(unsigned) } };
static const gf_stub_kernel stub_v3args[] = { { "hr_val", hr_v4, 3, hr3_params, 0, NULL, 0 } };

/* The kernel file at version v (a value it writes), or a broken one, or one that renamed it,
   or one with a third parameter it adds to v. */
static int write_source(const char *body, unsigned v, int bump)
{
    FILE *f = fopen(path, "w");
    struct stat st;
    struct timeval times[2];
    int three = body && !strcmp(body, "three");
    if (!f) return 0;
    fprintf(f, "GF_KERNELS(\nGF_KERNEL(%s, GF_PARAM(GF_GLOBAL unsigned *, p), GF_PARAM(unsigned, n)%s)\n{\n"
               "    unsigned i = gf_global_id(0);\n    if (i < n) p[i] = %s%u%s;\n}\n)\n",
            body && !strcmp(body, "renamed") ? "hr_other" : "hr_val", three ? ", GF_PARAM(unsigned, extra)" : "",
            body && !strcmp(body, "broken") ? "undeclared_name + " : "", v, three ? " + extra" : "");
    if (fclose(f) != 0) return 0;
    /* a modification time the poll cannot miss, whatever the file system's resolution */
    if (bump && stat(path, &st) == 0) {
        static long step = 10;
        times[0].tv_sec = times[1].tv_sec = st.st_mtime + step;
        times[0].tv_usec = times[1].tv_usec = 0;
        step += 10;
        utimes(path, times);
    }
    return 1;
}

/* A module from the kernel file at file_path, with the stub's version 1. */
static gf_module_desc file_desc(const char *file_path)
{
    gf_module_desc d;
    memset(&d, 0, sizeof d);
    d.source_path = file_path;
    d.stub_kernels = stub_v1;
    d.stub_kernel_count = 1;
    return d;
}

static gf_launch_dims dims_n(void)
{
    gf_launch_dims d;
    memset(&d, 0, sizeof d);
    d.grid[0] = 1; d.grid[1] = d.grid[2] = 1;
    d.block[0] = N; d.block[1] = d.block[2] = 1;
    return d;
}
static gf_result run(gf_kernel *k, gf_buffer *into)
{
    unsigned n = N;
    gf_arg args[2] = { GF_ARG_BUFFER(into), GF_ARG(n) };
    return gf_launch(s, k, dims_n(), args, 2);
}
static unsigned last_word(gf_buffer *from)
{
    unsigned v = 0xdeadbeefu;
    if (gf_copy_to_host_async(s, &v, from, (N - 1) * sizeof v, sizeof v) != GF_OK || gf_stream_synchronize(s) != GF_OK) return 0xdeadbeefu;
    return v;
}

static void test_file(gf_backend backend)
{
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    gf_buffer *early = NULL, *late = NULL;
    gf_graph *g = NULL;
    gf_graph_info info;
    th_gate gate;
    int reloaded = -1;
    d = file_desc(path);
    if (!CHECK(write_source(NULL, 1, 0), "file: the kernel file is written")) return;
    if (!CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK)) return;
    CHECK_EQ_RESULT(gf_kernel_get(mod, "hr_val", &k), GF_OK);
    if (!k) { gf_module_destroy(mod); return; }
    CHECK_EQ_RESULT(run(k, buf), GF_OK);
    CHECK(last_word(buf) == 1, "file: version 1 runs");
    CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
    CHECK(reloaded == 0, "file: no change, no reload");
    if (backend == GF_BACKEND_STUB) {   /* the C form is the program's: a reload from the file cannot change it */
        write_source(NULL, 2, 1);
        CHECK_FAIL(gf_module_poll(mod, &reloaded), GF_ERROR_NOT_SUPPORTED);
        CHECK(strstr(gf_last_error(), "stub_kernels") != NULL, "stub: a reload from the file says to give new stub_kernels");
        d.stub_kernels = stub_v2;
        CHECK_EQ_RESULT(gf_module_reload(mod, &d), GF_OK);
    } else {
        write_source(NULL, 2, 1);
        CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
        CHECK(reloaded == 1, "file: an edit is seen and reloaded");
    }
    CHECK_EQ_RESULT(run(k, buf), GF_OK);
    CHECK(last_word(buf) == 2, "file: the same gf_kernel launches version 2");
    /* a broken edit, then one that drops the kernel the program holds: the old code runs on */
    if (backend != GF_BACKEND_STUB) {
        write_source("broken", 3, 1);
        CHECK_FAIL(gf_module_poll(mod, &reloaded), GF_ERROR_BUILD);
        CHECK(strstr(gf_last_error(), "undeclared_name") != NULL, "broken: the build log comes back");
        CHECK(reloaded == 0, "broken: nothing reloaded");
        CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
        CHECK(reloaded == 0, "broken: the same broken file is not compiled again at every poll");
        write_source("renamed", 3, 1);
        CHECK_FAIL(gf_module_poll(mod, &reloaded), GF_ERROR_NOT_FOUND);
        CHECK(strstr(gf_last_error(), "hr_val") != NULL, "missing: the kernel in use is named");
    } else {
        static const gf_stub_kernel other[] = { { "hr_other", hr_v4, 2, hr_params, 0, NULL, 0 } };
        d.stub_kernels = other;
        CHECK_FAIL(gf_module_reload(mod, &d), GF_ERROR_NOT_FOUND);
    }
    CHECK_EQ_RESULT(run(k, buf), GF_OK);
    CHECK(last_word(buf) == 2, "broken, missing: the old code runs on");
    /* in flight: a launch held on the device before the reload runs the old code */
    CHECK_EQ_RESULT(gf_buffer_create(dev, N * sizeof(unsigned), &early), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, N * sizeof(unsigned), &late), GF_OK);
    if (early && late) {
        th_gate_init(&gate);
        CHECK_EQ_RESULT(gf_stream_add_callback(s, th_gate_cb, &gate), GF_OK);
        CHECK_EQ_RESULT(run(k, early), GF_OK);
        if (backend == GF_BACKEND_STUB) { d.stub_kernels = stub_v4; CHECK_EQ_RESULT(gf_module_reload(mod, &d), GF_OK); }
        else { write_source(NULL, 4, 1); CHECK_EQ_RESULT(gf_module_reload(mod, NULL), GF_OK); }
        CHECK_EQ_RESULT(run(k, late), GF_OK);
        th_gate_open(&gate);
        CHECK(last_word(early) == 2 && last_word(late) == 4, "flight: queued before the reload: old code; after: new");
        th_gate_destroy(&gate);
    }
    /* a graph captured before a reload launches the new code */
    CHECK_EQ_RESULT(gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL), GF_OK);
    if (late) CHECK_EQ_RESULT(gf_fill_async(s, late, 0, 0x55, 4), GF_OK);   /* a node before the launch */
    CHECK_EQ_RESULT(run(k, buf), GF_OK);
    CHECK_EQ_RESULT(gf_stream_end_capture(s, &g), GF_OK);
    if (g) {
        CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
        CHECK(last_word(buf) == 4, "graph: version 4 before the reload");
        if (backend == GF_BACKEND_STUB) { d.stub_kernels = stub_v2; CHECK_EQ_RESULT(gf_module_reload(mod, &d), GF_OK); }
        else { write_source(NULL, 7, 1); CHECK_EQ_RESULT(gf_module_reload(mod, NULL), GF_OK); }
        CHECK_EQ_RESULT(gf_graph_launch(g, s), GF_OK);
        CHECK_EQ_RESULT(gf_graph_info(g, &info), GF_OK);
        CHECK(last_word(buf) == (backend == GF_BACKEND_STUB ? 2u : 7u), "graph: the replay after the reload runs the new code");
        printf("  graph: %s, %d nodes\n", info.native ? "native (its launch updated in place)" : "recorded", info.nodes);
        if (backend == GF_BACKEND_STUB) {   /* new parameters: the recorded launch is refused, not run with the old arguments */
            unsigned word = 1;
            d.stub_kernels = stub_v3args;
            CHECK_EQ_RESULT(gf_module_reload(mod, &d), GF_OK);
            if (late) CHECK_EQ_RESULT(gf_fill_async(s, late, 0, 0, 4), GF_OK);
            CHECK_FAIL(gf_graph_launch(g, s), GF_ERROR_INVALID_STATE);
            CHECK(strstr(gf_last_error(), "takes 3 arguments") != NULL, "graph: a kernel whose parameters changed makes the replay say to re-capture");
            if (late && gf_stream_synchronize(s) == GF_OK && gf_copy_to_host(&word, late, 0, sizeof word) == GF_OK)
                CHECK(word == 0, "graph: the refused replay ran none of its nodes (the fill before the launch too)");   /* an outside audit: half a replay ran */
            d.stub_kernels = stub_v2;
            CHECK_EQ_RESULT(gf_module_reload(mod, &d), GF_OK);
        }
        gf_graph_destroy(g);
    }
    if (early) gf_buffer_destroy(early);
    if (late) gf_buffer_destroy(late);
    gf_module_destroy(mod);
}

/* Polls from two threads beside reloads that give the module its file again (each reload
   swaps in a new copy of the path and frees the old): a poll reads the path and its stamp
   under the module's lock, and reloads run one at a time (TSan found a poll reading them
   bare; an outside tester). make sanitize runs it under TSan. */
static gf_module *poll_mod;
static th_gate poll_stop;
static void *poll_loop(void *p)
{
    int reloaded;
    (void)p;
    while (!th_gate_get(&poll_stop, &poll_stop.open)) (void)gf_module_poll(poll_mod, &reloaded);
    return NULL;
}
/* A reload from the file may change a kernel's parameters: the program's stub_kernels table
   describes the code it was built with, so it no longer checks the launches (a review found
   the reloaded kernel refused with its new arguments and refused by the driver with its old). */
/* Two saves of the same length within one second: the poll compared whole seconds and missed
   the second save until another edit came (editors save twice quickly; found on Linux and
   Windows alike). The stamp keeps the file system's finer times now. */
static void test_same_second(gf_backend backend)
{
    gf_module_desc d = file_desc(path);
    gf_module *mod = NULL;
    int reloaded = -1;
    if (!CHECK(write_source(NULL, 1, 0), "same second: the kernel file is written") ||
        !CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK))
        return;
    th_sleep_ms(20);   /* past the kernel's coarse clock for file times (a few ms), within the second mostly */
    CHECK(write_source(NULL, 2, 0), "same second: saved again, the same length, no time forged");
    if (backend == GF_BACKEND_STUB) CHECK_FAIL(gf_module_poll(mod, &reloaded), GF_ERROR_NOT_SUPPORTED);   /* seen: the stub asks for stub_kernels */
    else {
        CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
        CHECK(reloaded == 1, "same second: the second save is seen and reloaded");
    }
    gf_module_destroy(mod);
}

/* A new version with the old one's size and modification time (found by an editor review): a
   copy that keeps the time (cp -p, rsync -a, tar, unzip), a symlink turned to another file,
   put in place by rename as editors save. The poll saw only time and size, and ran the old
   code on; the file's status-change time and identity tell them apart. A file that goes is
   said once and the old code runs on; once back, it is loaded. */
static void test_same_time(gf_backend backend)
{
    gf_module_desc d = file_desc(path);
    gf_module *mod = NULL;
    char other[sizeof path];
    struct stat st;
    struct timespec times[2];
    int reloaded = -1;
    if (!CHECK(strlen(path) + 5 < sizeof other, "same time: a path beside the file")) return;
    memcpy(other, path, strlen(path));
    memcpy(other + strlen(path), ".new", 5);
    if (!CHECK(write_source(NULL, 1, 0), "same time: the kernel file is written") ||
        !CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK))
        return;
    if (CHECK(stat(path, &st) == 0, "same time: the file's times")) {
        gf_kernel *k = NULL;
        {   /* the new version, the same length, written beside it with the old one's times, then renamed over it */
            char keep[sizeof path];
            memcpy(keep, path, sizeof path);
            memcpy(path, other, sizeof path);
            CHECK(write_source(NULL, 3, 0), "same time: the next version written beside it");
            memcpy(path, keep, sizeof path);
        }
        times[0] = st.st_atim;
        times[1] = st.st_mtim;
        CHECK(utimensat(AT_FDCWD, other, times, 0) == 0 && rename(other, path) == 0, "same time: renamed over, the old time kept");
        if (backend == GF_BACKEND_STUB) CHECK_FAIL(gf_module_poll(mod, &reloaded), GF_ERROR_NOT_SUPPORTED);   /* seen: the stub asks for stub_kernels */
        else {
            CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
            CHECK(reloaded == 1, "same time: a file of the same size and time put in place is seen and reloaded");
            if (CHECK_EQ_RESULT(gf_kernel_get(mod, "hr_val", &k), GF_OK) && CHECK_EQ_RESULT(run(k, buf), GF_OK))
                CHECK(last_word(buf) == 3, "same time: the new version runs");
        }
        CHECK(remove(path) == 0, "same time: the file deleted");
        CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
        CHECK(reloaded == 0, "same time: a deleted file is no change (the old code runs on)");
        CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
        CHECK(write_source(NULL, 5, 1), "same time: the file back");
        if (backend != GF_BACKEND_STUB) {
            CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
            CHECK(reloaded == 1, "same time: a file back after a delete is loaded");
        }
    }
    remove(other);
    gf_module_destroy(mod);
}

static void test_file_params(gf_backend backend)
{
    gf_module_desc d;
    gf_module *mod = NULL;
    gf_kernel *k = NULL;
    unsigned n = N, extra = 100;
    int reloaded = 0;
    gf_arg args[3];
    if (backend == GF_BACKEND_STUB) return;   /* the stub's code is the program's: no file reload */
    d = file_desc(path);
    if (!CHECK(write_source(NULL, 1, 1), "params: the kernel file is written")) return;
    if (!CHECK_EQ_RESULT(gf_module_load(dev, &d, &mod), GF_OK)) return;
    if (CHECK_EQ_RESULT(gf_kernel_get(mod, "hr_val", &k), GF_OK) && CHECK(write_source("three", 5, 1), "params: a third parameter")) {
        CHECK_EQ_RESULT(gf_module_poll(mod, &reloaded), GF_OK);
        CHECK(reloaded == 1, "params: the edit is reloaded");
        args[0] = (gf_arg)GF_ARG_BUFFER(buf); args[1] = (gf_arg)GF_ARG(n); args[2] = (gf_arg)GF_ARG(extra);
        CHECK_EQ_RESULT(gf_launch(s, k, dims_n(), args, 3), GF_OK);
        CHECK(last_word(buf) == 105, "params: the reloaded kernel runs with its new third argument");
    }
    gf_module_destroy(mod);
}

static void test_poll_threads(void)
{
    gf_module_desc d;
    pthread_t a, b;
    int i, ok = 1;
    d = file_desc(path);
    if (!CHECK(write_source(NULL, 1, 1), "threads: the kernel file is written")) return;
    if (!CHECK_EQ_RESULT(gf_module_load(dev, &d, &poll_mod), GF_OK)) return;
    th_gate_init(&poll_stop);
    pthread_create(&a, NULL, poll_loop, NULL);
    pthread_create(&b, NULL, poll_loop, NULL);
    for (i = 0; i < 4; i++) {   /* the stub reloads only new stub_kernels */
        d.stub_kernels = i % 2 ? stub_v1 : stub_v2;
        ok &= gf_module_reload(poll_mod, &d) == GF_OK;
    }
    th_gate_open(&poll_stop);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(ok, "threads: reloads beside two polling threads succeed");
    th_gate_destroy(&poll_stop);
    gf_module_destroy(poll_mod);
}

static void test_bad_input(void)
{
    gf_module_desc d;
    gf_module *mod = NULL;
    int reloaded;
    d = file_desc("/nonexistent/gpuflow/kernels.gfk");
    CHECK_FAIL(gf_module_load(dev, &d, &mod), GF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(gf_last_error(), "/nonexistent/gpuflow/kernels.gfk") != NULL, "bad input: a source file that cannot be read is named");
    d.source_path = ".";   /* a directory: 2^63 bytes were asked for (found by review) */
    CHECK_FAIL(gf_module_load(dev, &d, &mod), GF_ERROR_INVALID_ARGUMENT);
    {   /* a FIFO: the open waited for a writer for good */
        char fifo[64];
        snprintf(fifo, sizeof fifo, "/tmp/gpuflow-reload-fifo-%ld", (long)getpid());
        remove(fifo);
        if (mkfifo(fifo, 0600) == 0) {
            d.source_path = fifo;
            CHECK_FAIL(gf_module_load(dev, &d, &mod), GF_ERROR_INVALID_ARGUMENT);
            remove(fifo);
        }
    }
    CHECK_FAIL(gf_module_reload(NULL, NULL), GF_ERROR_INVALID_HANDLE);
    CHECK_FAIL(gf_module_poll(NULL, &reloaded), GF_ERROR_INVALID_HANDLE);
    d.source_path = NULL;
    d.source = "GF_KERNELS()";
    if (gf_module_load(dev, &d, &mod) == GF_OK) {   /* not from a file: polling has nothing to read */
        CHECK_FAIL(gf_module_poll(mod, &reloaded), GF_ERROR_INVALID_STATE);
        CHECK_FAIL(gf_module_poll(mod, NULL), GF_ERROR_INVALID_ARGUMENT);
        gf_module_destroy(mod);
    }
}

int main(int argc, char **argv)
{
    gf_backend backend;
    const char *name;
    gf_result r;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!(name = th_backend_arg(argc, argv, &backend))) return 2;
    r = gf_device_open(backend, 0, &dev);
    if (r == GF_ERROR_BACKEND_UNAVAILABLE || r == GF_ERROR_NO_DEVICE) {
        printf("notice: hot_reload %s skipped: %s\n", name, gf_last_error());
        SKIP("backend not compiled in or no device here");
        return th_finish();
    }
    snprintf(path, sizeof path, "%s/gpuflow-hot-reload-%d.gfk", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    printf("hot reload on %s: %s\n", name, gf_device_name(dev));
    CHECK_EQ_RESULT(gf_stream_create(dev, NULL, &s), GF_OK);
    CHECK_EQ_RESULT(gf_buffer_create(dev, N * sizeof(unsigned), &buf), GF_OK);
    if (s && buf) {
        test_file(backend);
        test_same_second(backend);
        test_same_time(backend);
        test_file_params(backend);
        test_poll_threads();
        test_bad_input();
    }
    remove(path);
    if (buf) gf_buffer_destroy(buf);
    if (s) gf_stream_destroy(s);
    gf_device_close(dev);
    return th_finish();
}
