/* gfreplay -- replays a gpuflow recording (GPUFLOW_RECORD=file, gf_record_start) and checks
   that every call returns what it returned when it was recorded.

       gfreplay [--backend stub|cuda|hip|opencl] [--race] [--trace out.json] [--cc CC] [--list] FILE

   --backend   run every device on this backend (default: the one each was recorded on)
   --race      the race detector on for every device; each race found is named (stderr; as
               every warning, unless GPUFLOW_LOG says otherwise), and counted
   --trace     the profiler on, the first device's Perfetto trace written to this file
   --cc        the C compiler that builds the stub's kernels (default: $CC, else cc)
   --list      print each call: its index, thread, time, name, recorded and replayed results

   On the stub, a module recorded with dialect source gets its C kernels here: the recorded
   source is compiled with the system's C compiler into a shared library (against the
   gpuflow.h this program was built from, GFREPLAY_INCLUDE) and loaded (not on Windows, where
   such modules and their launches are skipped, and said so). Exit status: 0 when every
   result matched, 1 when one did not, 2 for bad usage, 3 when the file could not be replayed
   (missing, not a recording, of another version), 4 when every result matched but the stub's
   kernels did not build (their modules and launches were skipped).

       cc -std=c99 -O2 tools/gfreplay.c -o gfreplay -pthread -ldl -lm -rdynamic   (make tools)
*/
#define GPUFLOW_IMPLEMENTATION
#include "../gpuflow.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#  include <dlfcn.h>
#  include <unistd.h>
#endif

#ifndef GFREPLAY_INCLUDE
#  define GFREPLAY_INCLUDE "."
#endif

typedef struct compiler { const char *cc; int builds, list, failed; char dir[256]; } compiler;   /* failed: a build of the stub's kernels */

static void list_call(void *user, const gf_replay_call *c) {
    (void)user;
    printf("%6llu  thread %d  %10.3f ms  %-30s recorded %-26s", (unsigned long long)c->index, c->thread, c->at_ms, c->name, gf_result_name(c->recorded));
    if (c->skipped) printf(" skipped\n");
    else printf(" replayed %s%s\n", gf_result_name(c->replayed), c->compared && c->replayed != c->recorded ? "  <-- differs" : "");
}

#if !defined(_WIN32)
/* The recorded source as C, each named kernel listed in a table the library exports. */
static gf_result compile_stub(void *user, gf_device *dev, const char *source, const char *const *names, int count, const gf_stub_kernel **out) {
    compiler *c = (compiler *)user;
    char src[512], lib[512], cmd[2048], table[64];
    FILE *f;
    void *h;
    int i;
    if (gf_device_backend(dev) != GF_BACKEND_STUB) return GF_ERROR_NOT_SUPPORTED;   /* the others compile the source themselves */
    if (!source) { fprintf(stderr, "gfreplay: a module with stub kernels and no dialect source: its C kernels cannot be made here\n"); return GF_ERROR_NOT_FOUND; }
    snprintf(src, sizeof src, "%s/kernels%d.c", c->dir, c->builds);
    snprintf(lib, sizeof lib, "%s/kernels%d.so", c->dir, c->builds);
    snprintf(table, sizeof table, "gfreplay_kernels%d", c->builds);
    c->builds++;
    if (!(f = fopen(src, "w"))) return GF_ERROR_NOT_FOUND;
    fprintf(f, "#include \"gpuflow.h\"\n#include <math.h>\n#undef GF_KERNELS\n#define GF_KERNELS(...) __VA_ARGS__\n"
               "GF_KERNELS(\n%s\n)\nconst gf_stub_kernel %s[] = {\n", source, table);
    for (i = 0; i < count; i++) fprintf(f, "    GF_STUB_KERNEL(%s),\n", names[i]);
    fprintf(f, "};\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s -std=c99 -O2 -shared -fPIC -w -I'%s' '%s' -o '%s' -lm", c->cc, GFREPLAY_INCLUDE, src, lib);
    if (system(cmd) != 0) { fprintf(stderr, "gfreplay: the stub's kernels did not build: %s\n", cmd); c->failed = 1; return GF_ERROR_BUILD; }
    if (!(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) || !(*out = (const gf_stub_kernel *)dlsym(h, table))) {
        fprintf(stderr, "gfreplay: cannot load %s: %s\n", lib, dlerror());
        c->failed = 1;
        return GF_ERROR_BUILD;
    }
    return GF_OK;   /* the library stays loaded: the replay's modules run its code */
}
#endif

/* The replay's warnings (each mismatch, each race the detector finds, what it skipped and why)
   to stderr; refusals the recorded program met again are errors, and stay quiet. */
static void warnings(void *user, gf_log_level level, gf_result code, const char *message) {
    (void)user; (void)code;
    if (level == GF_LOG_WARNING) fprintf(stderr, "gpuflow: %s\n", message);
}

static int usage(void) {
    fprintf(stderr, "usage: gfreplay [--backend stub|cuda|hip|opencl] [--race] [--trace out.json] [--cc CC] [--list] FILE\n"
                    "exit status: 0 every result matched, 1 one did not, 2 bad usage, 3 the file could not be replayed,\n"
                    "4 the stub's kernels did not build (their launches skipped)\n");
    return 2;
}

int main(int argc, char **argv) {
    gf_replay_desc d;
    gf_replay_report rep;
    compiler c;
    gf_result r;
    int i, b;
    memset(&d, 0, sizeof d);
    memset(&c, 0, sizeof c);
    memset(&rep, 0, sizeof rep);
    c.cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            const char *name = argv[++i];
            for (b = 1; b < GF_BACKEND_COUNT && strcmp(gf_backend_name((gf_backend)b), name); b++) {}
            if (b == GF_BACKEND_COUNT) { fprintf(stderr, "gfreplay: no backend '%s'\n", name); return usage(); }
            d.backend = (gf_backend)b;
        } else if (!strcmp(argv[i], "--race")) d.flags |= GF_REPLAY_RACE_CHECK;
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc) { d.flags |= GF_REPLAY_PROFILE; d.trace_path = argv[++i]; }
        else if (!strcmp(argv[i], "--cc") && i + 1 < argc) c.cc = argv[++i];
        else if (!strcmp(argv[i], "--list")) d.on_call = list_call;
        else if (argv[i][0] == '-' || d.path) return usage();
        else d.path = argv[i];
    }
    if (!d.path) return usage();
#if !defined(_WIN32)
    snprintf(c.dir, sizeof c.dir, "%s/gfreplay.XXXXXX", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(c.dir)) { d.compile_stub = compile_stub; d.user = &c; }
    else fprintf(stderr, "gfreplay: cannot make a folder in %s for the stub's kernels (%s): modules recorded on the stub are skipped\n",
                 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", strerror(errno));
#else
    fprintf(stderr, "gfreplay: on Windows the stub's kernels are not built from a recording's source: modules loaded on the "
                    "stub, and their launches, are skipped (counted)\n");
#endif
    if (!getenv("GPUFLOW_LOG")) gf_set_logger(warnings, NULL);   /* else as it says */
    r = gf_replay(&d, &rep);
#if !defined(_WIN32)
    if (d.compile_stub) { char cmd[400]; snprintf(cmd, sizeof cmd, "rm -rf '%s'", c.dir); if (system(cmd) != 0) {} }
#endif
    printf("%s: %llu calls from %d thread%s%s: %llu replayed, %llu skipped, %llu mismatched",
           d.path, (unsigned long long)rep.calls, rep.threads, rep.threads == 1 ? "" : "s", rep.cut ? " (the recording was cut short)" : "",
           (unsigned long long)rep.replayed, (unsigned long long)rep.skipped, (unsigned long long)rep.mismatches);
    if (d.flags & GF_REPLAY_RACE_CHECK) printf(", %llu races", (unsigned long long)rep.races);
    printf("\n");
    if (r != GF_OK) fprintf(stderr, "gfreplay: %s: %s\n", gf_result_name(r), gf_last_error());
    if (r != GF_OK && !rep.mismatches) return 3;   /* not a replay's answer: the file or the machine */
    if (r != GF_OK) return 1;
    if (c.failed) { fprintf(stderr, "gfreplay: the stub's kernels did not build: their modules and launches were skipped\n"); return 4; }
    return 0;
}
