/* rtc_check.h: what tests/nvrtc_check.c and tests/hip_on_cuda/hiprtc_check.c share: the
   counters and check(), the built-in kernels in the dialect (index math, shared memory and
   block barriers, atomics, math, a kernel without parameters, a compile error), the names a
   kernel file declares, reading and compiling a kernel file, and the checks of
   gf__split_options. Each includes it after gpuflow.h and defines compile_ok. */
#ifndef GF_TEST_RTC_CHECK_H
#define GF_TEST_RTC_CHECK_H

static int passed, failed, skipped;

static int check(int ok, const char *what, const char *detail) {
    if (ok) passed++;
    else {
        failed++;
        printf("FAIL %s%s%s\n", what, detail && *detail ? ": " : "", detail ? detail : "");
    }
    return ok;
}

/* ---- the built-in kernels: the dialect as users write it ----------------------------------- */
static const char k_index[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(index3d, GF_PARAM(GF_GLOBAL unsigned *, out), GF_PARAM(unsigned, nx), GF_PARAM(unsigned, ny), GF_PARAM(unsigned, nz))
{
    unsigned x = gf_global_id(0), y = gf_global_id(1), z = gf_global_id(2);
    if (x < nx && y < ny && z < nz)
        out[(z * ny + y) * nx + x] = gf_group_id(0) + gf_group_id(1) + gf_group_id(2) + gf_local_id(0) + gf_local_id(1) +
            gf_local_id(2) + gf_local_size(0) * gf_local_size(1) * gf_local_size(2) + gf_num_groups(0) + gf_num_groups(1) +
            gf_num_groups(2) + gf_global_size(0) + gf_global_size(1) + gf_global_size(2);
}
GF_KERNEL(index1d, GF_PARAM(GF_GLOBAL unsigned *, out), GF_PARAM(unsigned, n))
{
    unsigned i = gf_global_id(0);
    if (i < n) out[i] = i;
}
);

static const char k_reduce[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(reduce_sum, GF_PARAM(GF_GLOBAL const float *, in), GF_PARAM(GF_GLOBAL float *, out), GF_PARAM(unsigned, n))
{
    GF_SHARED float part[256];
    unsigned t = gf_local_id(0), i = gf_global_id(0), s;
    part[t] = i < n ? in[i] : 0.0f;
    gf_block_sync();
    for (s = gf_local_size(0) / 2; s > 0; s /= 2) {
        if (t < s) part[t] += part[t + s];
        gf_block_sync();
    }
    if (t == 0) out[gf_group_id(0)] = part[0];
}
);

static const char k_atomics[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(atomics, GF_PARAM(GF_GLOBAL unsigned *, g), GF_PARAM(unsigned, v))
{
    GF_SHARED unsigned s[5];
    unsigned t = gf_local_id(0);
    if (t < 5) s[t] = t == 1 ? 0xffffffffu : 0u;
    gf_block_sync();
    gf_atomic_add(&s[0], v);
    gf_atomic_min(&s[1], t);
    gf_atomic_max(&s[2], t);
    gf_atomic_xchg(&s[3], t);
    gf_atomic_cas(&s[4], 0u, t + 1);
    gf_block_sync();
    if (t == 0) {
        unsigned old = gf_atomic_add(&g[0], s[0]);
        old += gf_atomic_min(&g[1], s[1]) + gf_atomic_max(&g[2], s[2]) + gf_atomic_xchg(&g[3], s[3]);
        g[5] = old + gf_atomic_cas(&g[4], 0u, s[4]);
    }
}
);

static const char k_math[] = GF_KERNELS_AS_TEXT(
GF_DEVICE float square(float x) { return x * x; }
GF_KERNEL(math, GF_PARAM(GF_GLOBAL float *, y), GF_PARAM(GF_GLOBAL const float *, x), GF_PARAM(unsigned, n))
{
    unsigned i = gf_global_id(0);
    if (i < n) {
        float a = x[i];
        y[i] = sqrtf(a) + rsqrtf(a + 1.0f) + expf(-a) + logf(a + 1.0f) + powf(a, 1.5f) + sinf(a) + cosf(a) + tanhf(a) +
               fabsf(-a) + fminf(a, 1.0f) + fmaxf(a, 0.5f) + floorf(a) + ceilf(a) + square(a);
    }
}
GF_KERNEL0(nothing)
{
}
);

static const char k_broken[] = GF_KERNELS_AS_TEXT(
GF_KERNEL(broken, GF_PARAM(GF_GLOBAL float *, y))
{
    y[0] = undefined_name;
}
);

/* The kernels text declares: GF_KERNEL(name / GF_KERNEL0(name / __global__ void name. */
static int kernel_names(const char *text, char names[][64], int cap) {
    static const char *const marks[] = { "GF_KERNEL(", "GF_KERNEL0(", "__global__ void " };
    int count = 0;
    size_t m;
    for (m = 0; m < sizeof marks / sizeof marks[0]; m++) {
        const char *p = text;
        while ((p = strstr(p, marks[m])) != NULL) {
            size_t n = 0;
            p += strlen(marks[m]);
            while (*p == ' ' || *p == '\t' || *p == '\n') p++;
            while (n < 63 && (p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9'))) n++;
            if (n && count < cap) { memcpy(names[count], p, n); names[count][n] = 0; count++; }
        }
    }
    return count;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = (char *)malloc((size_t)n + 1)) != NULL) {
        if (fread(text, 1, (size_t)n, f) != (size_t)n) { free(text); text = NULL; }
        else text[n] = 0;
    }
    fclose(f);
    return text;
}

/* Each checker's own: text compiled (with the dialect's prelude if dialect), every kernel it
   declares in the result. */
static void compile_ok(const char *name, const char *source, int dialect, const char *options);

/* A kernel file: GF_KERNELS( ... ) is stringified by the program that includes it; its
   contents, as written, are the same text to the compiler (the stringizing only drops
   comments and joins lines). */
static void compile_file(const char *path) {
    char *text = read_text(path), *body, *end;
    int dialect;
    if (!check(text != NULL, "a kernel file can be read", path)) return;
    dialect = strstr(text, "GF_KERNEL") != NULL;
    if ((body = strstr(text, "GF_KERNELS(")) != NULL && (end = strrchr(text, ')')) != NULL && end > body) {
        body += strlen("GF_KERNELS(");
        *end = 0;
    } else body = text;
    compile_ok(path, body, dialect, NULL);
    free(text);
}

/* build_options reach NVRTC and hiprtc as an argv: split at spaces, quotes keep spaces. */
static void split_checks(void) {
    char buf[] = "  -DA=1 \"-DB=2 + 3\" -D'C=4 5'\t--x ";
    const char *opts[32];
    int n = gf__split_options(buf, opts);
    check(n == 4 && !strcmp(opts[0], "-DA=1") && !strcmp(opts[1], "-DB=2 + 3") && !strcmp(opts[2], "-DC=4 5") && !strcmp(opts[3], "--x"),
          "build_options split at spaces, quotes keep spaces inside one option", "");
    buf[0] = 0;
    check(gf__split_options(buf, opts) == 0, "empty build_options: no option", "");
}

#endif
