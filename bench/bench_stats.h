/* bench/bench_stats.h -- the clock, the median and the alternating batches the benches that
   time batches share. */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H
#include <stdlib.h>
#include <time.h>

static double now_s(void) {   /* seconds on the monotonic clock */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {   /* sorts v */
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
/* Like for like: after one warm-up batch per side, batches of fn(side) for each of sides (up
   to 3) alternate, the side that goes first rotating batch by batch; med[side] is each side's
   median over batches (up to 64). */
#define BENCH_MAX_BATCHES 64
static inline void measure_sides(double (*fn)(int side), int sides, int batches, double *med) {
    double t[3][BENCH_MAX_BATCHES];
    int b, k;
    if (batches > BENCH_MAX_BATCHES) batches = BENCH_MAX_BATCHES;
    for (k = 0; k < sides; k++) (void)fn(k);
    for (b = 0; b < batches; b++)
        for (k = 0; k < sides; k++) {
            int side = (b + k) % sides;
            t[side][b] = fn(side);
        }
    for (k = 0; k < sides; k++) med[k] = median(t[k], batches);
}
#endif
