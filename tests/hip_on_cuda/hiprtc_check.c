/* hiprtc_check: kernels compiled through hiprtc into code objects, as the HIP backend compiles
   them for gf_module_load, on a machine with no GPU (hiprtc needs none when the target is
   named). So a dialect mistake for HIP fails where this runs, not only on an AMD GPU: with
   Debian's ROCm 5.2 (libamdhip64-dev) it makes real AMD code objects; through the stand-in
   (tests/hip_on_cuda, whose hiprtc is NVRTC) it makes PTX.

       hiprtc_check [--arch TARGET] [--require] [--expect-missing] [FILE...]

   Built in: each feature of the dialect (index math in 1 to 3 dimensions, shared memory and
   block barriers, every atomic on buffers and shared arrays, the math functions, helper
   functions, a kernel without parameters), plain HIP C++, build_options (quotes keep spaces),
   and the refusals: a compile error and an option hiprtc does not know are GF_ERROR_BUILD with
   hiprtc's log, "hiprtc: <name>: <log>".
   FILE: a kernel file in the dialect's form (a GF_KERNELS( ... ) file), compiled with
   gpuflow's HIP prelude, as gf_module_load does. Every kernel a file declares (GF_KERNEL(name,
   GF_KERNEL0(name, __global__ void name) must be in the code object: its kernel descriptor
   name.kd in an AMD code object, .entry name in PTX.
   --arch       the target, as --offload-arch takes it (default gfx90a; the stand-in takes sm_XY)
   --require    no hiprtc is a failure (default: a notice and one skipped check)
   --expect-missing   the check of the "no hiprtc" path: built with -DGF__HIPRTC_IN_RUNTIME=0
                 -DGF__HIPRTC_NAMES='"libhiprtc-missing.so.5"', loading must fail with
                 GF_ERROR_NOT_SUPPORTED, naming the library and what to install
   Prints `N passed, N failed[, N skipped]`.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -isystem /opt/rocm/include \
          tests/hip_on_cuda/hiprtc_check.c -o build/hiprtc_check -pthread -ldl -lm
       build/hiprtc_check --require examples/<kernel files> tests/<kernel files> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_HIP
#include "../../gpuflow.h"

#include "../rtc_check.h"

static const char *arch = "gfx90a";

static const char k_plain_hip[] =
    "extern \"C\" __global__ void add_one(unsigned *p, unsigned n)\n"
    "{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] += VALUE; }\n";

/* ---- compiling and checking ------------------------------------------------------------ */
/* n bytes at p hold the NUL-terminated string s (with a NUL before it unless at the start). */
static int holds(const char *p, size_t n, const char *s, int whole) {
    size_t len = strlen(s) + 1, i;
    for (i = 0; i + len <= n; i++)
        if (!memcmp(p + i, s, len) && (!whole || i == 0 || p[i - 1] == 0)) return 1;
    return 0;
}

/* What the compiler made: an AMD code object (ELF), an offload bundle holding one, or (the
   stand-in) PTX. */
typedef enum { CODE_UNKNOWN, CODE_ELF, CODE_BUNDLE, CODE_PTX } code_form;
static code_form form_of(const char *code, size_t n) {
    if (n > 4 && !memcmp(code, "\177ELF", 4)) return CODE_ELF;
    if (n > 24 && !memcmp(code, "__CLANG_OFFLOAD_BUNDLE__", 24)) return CODE_BUNDLE;
    if (memchr(code, 0, n) && strstr(code, ".version") && strstr(code, ".target")) return CODE_PTX;
    return CODE_UNKNOWN;
}

/* A kernel in the code: its descriptor symbol (AMD: name.kd in the symbol table) or its entry
   (PTX: .entry name(). */
static int has_kernel(const char *code, size_t n, code_form form, const char *name) {
    char want[160];
    if (form == CODE_PTX) {
        snprintf(want, sizeof want, ".entry %.100s(", name);
        return strstr(code, want) != NULL;
    }
    snprintf(want, sizeof want, "%.100s.kd", name);
    return holds(code, n, want, 1);
}

/* text compiled as HIP source (with the dialect's prelude if dialect): it must compile into a
   code object, and every kernel it declares must be in it. */
static void compile_ok(const char *name, const char *source, int dialect, const char *options) {
    const char *prelude = dialect ? gf__kernel_prelude_cxx : "";
    size_t n = strlen(prelude) + strlen(source) + 2, size = 0;
    char *text = (char *)malloc(n), what[512], names[64][64];
    void *code = NULL;
    gf_result r;
    code_form form;
    int i, count;
    if (!text) { check(0, name, "out of memory"); return; }
    snprintf(text, n, "%s\n%s", prelude, source);
    r = gf__hip_hiprtc_to_code(arch, name, text, options, &code, &size);
    snprintf(what, sizeof what, "%s compiles to a code object for %s", name, arch);
    if (check(r == GF_OK && code && size > 0, what, r == GF_OK ? "" : gf_last_error())) {
        form = form_of((const char *)code, size);
        snprintf(what, sizeof what, "%s: the code is an AMD code object, an offload bundle or (the stand-in) PTX", name);
        check(form != CODE_UNKNOWN, what, "");
        count = kernel_names(source, names, 64);
        for (i = 0; i < count; i++) {
            snprintf(what, sizeof what, "%.100s: kernel '%.63s' is in the code (extern \"C\", not mangled)", name, names[i]);
            check(has_kernel((const char *)code, size, form, names[i]), what, "");
        }
    }
    gf__free(code);
    free(text);
}

/* Must fail as a build error whose message holds each of want[]. */
static void compile_fails(const char *name, const char *source, const char *options, const char *const *want, int wants) {
    const char *prelude = gf__kernel_prelude_cxx;
    size_t n = strlen(prelude) + strlen(source) + 2, size = 0;
    char *text = (char *)malloc(n), what[512];
    void *code = NULL;
    gf_result r;
    int i;
    if (!text) { check(0, name, "out of memory"); return; }
    snprintf(text, n, "%s\n%s", prelude, source);
    r = gf__hip_hiprtc_to_code(arch, name, text, options, &code, &size);
    snprintf(what, sizeof what, "%s is refused as GF_ERROR_BUILD, with no code", name);
    check(r == GF_ERROR_BUILD && !code && !size, what, gf_result_name(r));
    for (i = 0; i < wants; i++) {
        snprintf(what, sizeof what, "%s: the message holds \"%s\"", name, want[i]);
        check(strstr(gf_last_error(), want[i]) != NULL, what, gf_last_error());
    }
    gf__free(code);
    free(text);
}

int main(int argc, char **argv) {
    int i, require = 0, expect_missing = 0;
    gf_result r;
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (!strcmp(argv[i], "--require")) require = 1;
        else if (!strcmp(argv[i], "--expect-missing")) expect_missing = 1;
        else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
        else { fprintf(stderr, "usage: %s [--arch TARGET] [--require] [--expect-missing] [FILE...]\n", argv[0]); return 2; }
    }
    split_checks();
    r = gf__hiprtc_load();
    if (expect_missing) {
        check(r == GF_ERROR_NOT_SUPPORTED, "without hiprtc, loading it is GF_ERROR_NOT_SUPPORTED", gf_result_name(r));
        check(strstr(gf_last_error(), "hiprtc: ") && strstr(gf_last_error(), "libhiprtc-missing") &&
              strstr(gf_last_error(), "install ROCm's hiprtc") && strstr(gf_last_error(), "code objects in hip_code work without it"),
              "the message names the library, what to install, and what works without it", gf_last_error());
        {
            void *code = NULL;
            size_t size = 0;
            r = gf__hip_hiprtc_to_code(arch, "kernels", k_plain_hip, NULL, &code, &size);
            check(r == GF_ERROR_NOT_SUPPORTED && !code && !size, "a compile without hiprtc is GF_ERROR_NOT_SUPPORTED as well", gf_result_name(r));
        }
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    if (r != GF_OK) {
        printf("notice: hiprtc is not available here: %s\n", gf_last_error());
        if (require) failed++; else skipped++;
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
        return failed ? 1 : 0;
    }
    printf("hiprtc %d.%d from %s, target %s\n", gf__hiprtc_version / 1000, gf__hiprtc_version % 1000 / 10, gf__hiprtc_where, arch);

    compile_ok("index.gf", k_index, 1, NULL);
    compile_ok("reduce.gf", k_reduce, 1, NULL);
    compile_ok("atomics.gf", k_atomics, 1, NULL);
    compile_ok("math.gf", k_math, 1, "-ffast-math");
    compile_ok("plain.hip", k_plain_hip, 0, "\"-DVALUE=(1 + 2)\"");
    {
        const char *want[] = { "hiprtc: broken.gf: ", "undefined_name", "error" };
        compile_fails("broken.gf", k_broken, NULL, want, 3);
    }
    {
        const char *want[] = { "hiprtc: options.gf: ", "--no-such-option" };
        compile_fails("options.gf", k_index, "--no-such-option", want, 2);
    }
    for (; i < argc; i++) compile_file(argv[i]);

    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
