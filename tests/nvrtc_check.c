/* nvrtc_check: kernels compiled through NVRTC to PTX, as the CUDA backend compiles them for
   gf_module_load, on a machine with no GPU and no driver (NVRTC needs neither). So a dialect
   mistake for CUDA fails CI, not only the GPU machine.

       nvrtc_check [--arch compute_XY] [--ptxas PATH] [--require] [--expect-missing] [FILE...]

   Built in: each feature of the dialect (index math in 1 to 3 dimensions, shared memory and
   block barriers, every atomic on buffers and shared arrays, the math functions, helper
   functions, a kernel without parameters), plain CUDA C++, build_options (quotes keep spaces),
   and the refusals: a compile error and an option NVRTC does not know are GF_ERROR_BUILD with
   NVRTC's log, "NVRTC: <name>: <log>".
   FILE: a kernel file. The dialect's form (a GF_KERNELS( ... ) file, or any text that uses
   GF_KERNEL) is compiled with gpuflow's CUDA prelude, as gf_module_load does; other files
   (tests/kernels.cu) as CUDA C++ as they are. Every kernel a file declares (GF_KERNEL(name,
   GF_KERNEL0(name, __global__ void name) must be in the PTX as `.entry name`.
   --arch       the virtual architecture (default compute_75, the oldest CUDA 13 compiles for)
   --ptxas      also assemble each PTX with this ptxas for the matching sm_XY
   --require    no NVRTC is a failure (default: a notice and one skipped check)
   --expect-missing   the check of the "no NVRTC" path: built with
                 -DGF__NVRTC_NAMES='"libnvrtc-missing.so.13"', loading must fail with
                 GF_ERROR_NOT_SUPPORTED, naming the library and what to install
   Prints `N passed, N failed[, N skipped]`.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -isystem /usr/local/cuda/include \
          tests/nvrtc_check.c -o build/nvrtc_check -pthread -ldl -lm
       build/nvrtc_check --ptxas /usr/local/cuda/bin/ptxas tests/kernels.cu examples/<kernel files> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPUFLOW_IMPLEMENTATION
#ifndef GPUFLOW_CUDA
#define GPUFLOW_CUDA
#endif
#include "../gpuflow.h"

#include "rtc_check.h"

static const char *arch = "compute_75", *ptxas;

static const char k_plain_cuda[] =
    "extern \"C\" __global__ void add_one(unsigned *p, unsigned n)\n"
    "{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] += VALUE; }\n";

/* ---- compiling and checking ------------------------------------------------------------ */
static int has_entry(const char *ptx, const char *name) {
    char want[160];
    snprintf(want, sizeof want, ".entry %.100s(", name);
    return strstr(ptx, want) != NULL;
}

/* Assembles the PTX with ptxas for the sm_ of the arch; 1 if it assembled. */
static int assemble(const char *name, const char *ptx) {
    char path[256], cmd[768], *c;
    FILE *f;
    int ok;
    snprintf(path, sizeof path, "%s/nvrtc_check_%ld_", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)passed + failed);
    c = path + strlen(path);
    snprintf(c, sizeof path - (size_t)(c - path), "%s.ptx", name);
    for (; *c; c++) if (*c == '/' || *c == '\\' || *c == '\'' || *c == ' ') *c = '_';
    if (!(f = fopen(path, "w"))) return 0;
    ok = fwrite(ptx, 1, strlen(ptx), f) == strlen(ptx);
    ok = fclose(f) == 0 && ok;
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%s -o /dev/null '%s'", ptxas, strchr(arch, '_') ? strchr(arch, '_') + 1 : arch, path);
    ok = ok && system(cmd) == 0;
    remove(path);
    return ok;
}

/* text compiled as CUDA source (with the dialect's prelude if dialect): it must compile, and
   every kernel it declares must be in the PTX. */
static void compile_ok(const char *name, const char *source, int dialect, const char *options) {
    const char *prelude = dialect ? gf__kernel_prelude_cxx : "";
    size_t n = strlen(prelude) + strlen(source) + 2, size = 0;
    char *text = (char *)malloc(n), what[512], names[64][64];
    void *ptx = NULL;
    gf_result r;
    int i, count;
    if (!text) { check(0, name, "out of memory"); return; }
    snprintf(text, n, "%s\n%s", prelude, source);
    r = gf__cuda_nvrtc_build(arch, name, text, options, &ptx, &size);
    snprintf(what, sizeof what, "%s compiles to PTX for %s", name, arch);
    if (check(r == GF_OK && ptx && size > 1, what, r == GF_OK ? "" : gf_last_error())) {
        snprintf(what, sizeof what, "%s: the PTX is text of the size NVRTC gave, for the architecture", name);
        check(strlen((const char *)ptx) + 1 == size && strstr((const char *)ptx, ".target sm_") != NULL, what, "");
        count = kernel_names(source, names, 64);
        for (i = 0; i < count; i++) {
            snprintf(what, sizeof what, "%.100s: kernel '%.63s' is in the PTX as .entry %.63s (extern \"C\", not mangled)", name, names[i], names[i]);
            check(has_entry((const char *)ptx, names[i]), what, "");
        }
        if (ptxas) {
            snprintf(what, sizeof what, "%s: ptxas assembles the PTX", name);
            check(assemble(name, (const char *)ptx), what, "");
        }
    }
    gf__free(ptx);
    free(text);
}

/* Must fail as a build error whose message holds each of want[]. */
static void compile_fails(const char *name, const char *source, const char *options, const char *const *want, int wants) {
    const char *prelude = gf__kernel_prelude_cxx;
    size_t n = strlen(prelude) + strlen(source) + 2, size = 0;
    char *text = (char *)malloc(n), what[512];
    void *ptx = NULL;
    gf_result r;
    int i;
    if (!text) { check(0, name, "out of memory"); return; }
    snprintf(text, n, "%s\n%s", prelude, source);
    r = gf__cuda_nvrtc_build(arch, name, text, options, &ptx, &size);
    snprintf(what, sizeof what, "%s is refused as GF_ERROR_BUILD, with no PTX", name);
    check(r == GF_ERROR_BUILD && !ptx && !size, what, gf_result_name(r));
    for (i = 0; i < wants; i++) {
        snprintf(what, sizeof what, "%s: the message holds \"%s\"", name, want[i]);
        check(strstr(gf_last_error(), want[i]) != NULL, what, gf_last_error());
    }
    gf__free(ptx);
    free(text);
}

int main(int argc, char **argv) {
    int i, require = 0, expect_missing = 0;
    gf_result r;
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (!strcmp(argv[i], "--require")) require = 1;
        else if (!strcmp(argv[i], "--expect-missing")) expect_missing = 1;
        else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
        else if (!strcmp(argv[i], "--ptxas") && i + 1 < argc) ptxas = argv[++i];
        else { fprintf(stderr, "usage: %s [--arch compute_XY] [--ptxas PATH] [--require] [--expect-missing] [FILE...]\n", argv[0]); return 2; }
    }
    split_checks();
    r = gf__nvrtc_load();
    if (expect_missing) {
        check(r == GF_ERROR_NOT_SUPPORTED, "without NVRTC, loading it is GF_ERROR_NOT_SUPPORTED", gf_result_name(r));
        check(strstr(gf_last_error(), "NVRTC: cannot load ") && strstr(gf_last_error(), "install the CUDA toolkit's NVRTC") &&
              strstr(gf_last_error(), "PTX and cubin modules work without it"),
              "the message names the library, what to install, and what works without it", gf_last_error());
        {
            void *ptx = NULL;
            size_t size = 0;
            r = gf__cuda_nvrtc_build(arch, "kernels", k_plain_cuda, NULL, &ptx, &size);
            check(r == GF_ERROR_NOT_SUPPORTED && !ptx && !size, "a compile without NVRTC is GF_ERROR_NOT_SUPPORTED as well", gf_result_name(r));
        }
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    if (r != GF_OK) {
        printf("notice: NVRTC is not available here: %s\n", gf_last_error());
        if (require) failed++; else skipped++;
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
        return failed ? 1 : 0;
    }
    printf("NVRTC %d.%d, architecture %s\n", gf__nvrtc_version / 1000, gf__nvrtc_version % 1000 / 10, arch);

    compile_ok("index.gf", k_index, 1, NULL);
    compile_ok("reduce.gf", k_reduce, 1, NULL);
    compile_ok("atomics.gf", k_atomics, 1, NULL);
    compile_ok("math.gf", k_math, 1, "-use_fast_math");
    compile_ok("plain.cu", k_plain_cuda, 0, "\"-DVALUE=(1 + 2)\"");
    {
        const char *want[] = { "NVRTC: broken.gf: ", "undefined_name", "error" };
        compile_fails("broken.gf", k_broken, NULL, want, 3);
    }
    {
        const char *want[] = { "NVRTC: options.gf: ", "--no-such-option" };
        compile_fails("options.gf", k_index, "--no-such-option", want, 2);
    }
    for (; i < argc; i++) compile_file(argv[i]);

    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
