/* bench.h -- what the benchmarks share: a CHECK that ends the run on a failure, a monotonic
   clock, medians of batches, and the backend named on the command line. Included after
   gpuflow.h (each benchmark defines the backends it compiles in itself, so that the Makefile's
   bench rule sees them). */
#ifndef GPUFLOW_BENCH_H
#define GPUFLOW_BENCH_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__)
#  define BENCH_FN static __attribute__((unused))   /* each benchmark uses some of these */
#else
#  define BENCH_FN static
#endif

#define CHECK(call) do { gf_result r_ = (call); if (r_ != GF_OK) { \
    fprintf(stderr, "%s failed: %s (%s)\n", #call, gf_result_name(r_), gf_last_error()); exit(1); } } while (0)

BENCH_FN double bench_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
BENCH_FN int bench_by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
BENCH_FN double bench_median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, bench_by_value); return v[n / 2]; }

/* argv[1] as a backend's name (GF_BACKEND_AUTO without one); exits with usage for an unknown one. */
BENCH_FN gf_backend bench_backend(int argc, char **argv, const char *usage) {
    gf_backend b;
    if (argc < 2) return GF_BACKEND_AUTO;
    for (b = (gf_backend)1; b < GF_BACKEND_COUNT && strcmp(gf_backend_name(b), argv[1]); b = (gf_backend)(b + 1)) {}
    if (b == GF_BACKEND_COUNT) { fprintf(stderr, "usage: %s\n", usage); exit(2); }
    return b;
}
#endif
