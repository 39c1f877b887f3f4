/* bench/gpu_clocks.h -- the GPU's clocks, power and clock-limit reasons, for the benchmarks.

   Included by cuda_bench.c and threads_bench.c (after gpuflow, which brings pthreads). NVML
   (libnvidia-ml.so.1) is loaded at run time like the driver: nothing is linked, and without
   it every figure is "n/a" (then `nvidia-smi` is asked instead, once per note, where it exists).

     clocks_open(pci_bus_id)         find the GPU (by PCI bus id, else NVML index 0)
     clocks_note(label, machine)     one line: SM and memory clock, power, P-state, temperature,
                                     and the reasons the clocks are held down now
     clocks_trace_begin()            sample every CLOCKS_TRACE_MS in a thread of its own ...
     clocks_trace_end(label, machine)  ... and print min / median / max SM clock, mean and max
                                     power, and every reason seen, over the samples

   A trace's thread sleeps between samples; an NVML query is an ioctl to the kernel driver,
   which the launch, copy and event paths measured here never take, so sampling at 10 ms does
   not slow them (run_h100.sh runs the same section with and without a trace to show it). */
#ifndef BENCH_GPU_CLOCKS_H
#define BENCH_GPU_CLOCKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <pthread.h>

#if defined(__GNUC__)
#  define CLOCKS_UNUSED __attribute__((unused))
#else
#  define CLOCKS_UNUSED
#endif
#define CLOCKS_TRACE_MS 10
#define CLOCKS_TRACE_MAX 16384

typedef struct clocks_sample {
    int ok;
    unsigned sm, mem;              /* MHz */
    double watts;
    int pstate;                    /* 0 = P0 (fastest); -1 unknown */
    unsigned temp;                 /* C */
    unsigned long long reasons;    /* NVML clocks-event (throttle) reasons, a bit set */
} clocks_sample;

static struct {
    int tried, ok;
    void *dev;
    int (*ClockInfo)(void *, int, unsigned *);
    int (*PowerUsage)(void *, unsigned *);
    int (*Reasons)(void *, unsigned long long *);
    int (*Pstate)(void *, int *);
    int (*Temperature)(void *, int, unsigned *);
    /* the trace */
    pthread_t thread; int thread_started;
    pthread_mutex_t lock;
    int active, stop, count;
    clocks_sample *samples;
} clocks;

static void *clocks_sym(void *lib, const char *a, const char *b) {
    void *p = dlsym(lib, a);
    if (!p && b) p = dlsym(lib, b);
    return p;
}

/* pci_bus_id: "0000:xx:yy.z" as cuDeviceGetPCIBusId gives it (NULL: NVML's device 0). */
CLOCKS_UNUSED static int clocks_open(const char *pci_bus_id) {
    int (*init)(void);
    int (*by_index)(unsigned, void **);
    int (*by_pci)(const char *, void **);
    void *lib, *p;
    if (clocks.tried) return clocks.ok;
    clocks.tried = 1;
    pthread_mutex_init(&clocks.lock, NULL);
    if (!(lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) &&
        !(lib = dlopen("/usr/local/nvidia/lib64/libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) &&
        !(lib = dlopen("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL))) return 0;
    p = clocks_sym(lib, "nvmlInit_v2", "nvmlInit");                          memcpy(&init, &p, sizeof p);
    if (!p) return 0;
    p = clocks_sym(lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"); memcpy(&by_index, &p, sizeof p);
    if (!p) return 0;
    p = clocks_sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"); memcpy(&by_pci, &p, sizeof p);
    p = clocks_sym(lib, "nvmlDeviceGetClockInfo", NULL);                    memcpy(&clocks.ClockInfo, &p, sizeof p);
    if (!p) return 0;
    p = clocks_sym(lib, "nvmlDeviceGetPowerUsage", NULL);                   memcpy(&clocks.PowerUsage, &p, sizeof p);
    p = clocks_sym(lib, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
    memcpy(&clocks.Reasons, &p, sizeof p);
    p = clocks_sym(lib, "nvmlDeviceGetPerformanceState", NULL);             memcpy(&clocks.Pstate, &p, sizeof p);
    p = clocks_sym(lib, "nvmlDeviceGetTemperature", NULL);                  memcpy(&clocks.Temperature, &p, sizeof p);
    if (init() != 0) return 0;
    if (!(pci_bus_id && by_pci && by_pci(pci_bus_id, &clocks.dev) == 0) && by_index(0, &clocks.dev) != 0) return 0;
    clocks.ok = 1;
    return 1;
}

static clocks_sample clocks_read(void) {
    clocks_sample s;
    unsigned mw = 0;
    memset(&s, 0, sizeof s);
    s.pstate = -1;
    if (!clocks.ok) return s;
    if (clocks.ClockInfo(clocks.dev, 1 /* NVML_CLOCK_SM */, &s.sm) != 0) return s;
    (void)clocks.ClockInfo(clocks.dev, 2 /* NVML_CLOCK_MEM */, &s.mem);
    if (clocks.PowerUsage && clocks.PowerUsage(clocks.dev, &mw) == 0) s.watts = mw / 1000.0;
    if (clocks.Reasons) (void)clocks.Reasons(clocks.dev, &s.reasons);
    if (clocks.Pstate) (void)clocks.Pstate(clocks.dev, &s.pstate);
    if (clocks.Temperature) (void)clocks.Temperature(clocks.dev, 0 /* NVML_TEMPERATURE_GPU */, &s.temp);
    s.ok = 1;
    return s;
}

/* The reasons' names (nvml.h's nvmlClocksEventReason* bits). */
static const char *clocks_reasons(unsigned long long r, char *buf, size_t cap) {
    static const struct { unsigned long long bit; const char *name; } names[] = {
        { 0x1, "idle" }, { 0x2, "app-clocks" }, { 0x4, "sw-power-cap" }, { 0x8, "hw-slowdown" },
        { 0x10, "sync-boost" }, { 0x20, "sw-thermal" }, { 0x40, "hw-thermal" }, { 0x80, "hw-power-brake" },
        { 0x100, "display-clock" } };
    size_t i, n = 0;
    buf[0] = 0;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (r & names[i].bit) n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", n ? "," : "", names[i].name);
    if (!r) snprintf(buf, cap, "none");
    return buf;
}

CLOCKS_UNUSED static void clocks_note(const char *label, int machine) {
    clocks_sample s = clocks_read();
    char why[160];
    if (s.ok) {
        printf("clocks %-22s SM %4u MHz  mem %4u MHz  %6.1f W  P%d  %u C  held by: %s\n", label, s.sm, s.mem, s.watts,
               s.pstate, s.temp, clocks_reasons(s.reasons, why, sizeof why));
        if (machine) printf("@clock %s %u %u %.1f %d 0x%llx\n", label, s.sm, s.mem, s.watts, s.pstate, s.reasons);
    } else {
        /* no NVML here: nvidia-smi, where it exists, says the same (slower: a process) */
        char line[256] = "";
        FILE *f = popen("nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,pstate --format=csv,noheader 2>/dev/null", "r");
        if (f) {
            if (!fgets(line, sizeof line, f)) line[0] = 0;
            pclose(f);
        }
        line[strcspn(line, "\n")] = 0;
        printf("clocks %-22s %s\n", label, line[0] ? line : "n/a (no NVML, no nvidia-smi)");
    }
    fflush(stdout);
}

CLOCKS_UNUSED static void clocks_sleep_ms(unsigned ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static void *clocks_trace_main(void *arg) {
    (void)arg;
    for (;;) {
        clocks_sample s;
        int stop, active;
        pthread_mutex_lock(&clocks.lock);
        stop = clocks.stop;
        active = clocks.active;
        pthread_mutex_unlock(&clocks.lock);
        if (stop) return NULL;
        if (active) {
            s = clocks_read();
            pthread_mutex_lock(&clocks.lock);
            if (clocks.active && s.ok && clocks.count < CLOCKS_TRACE_MAX) clocks.samples[clocks.count++] = s;
            pthread_mutex_unlock(&clocks.lock);
        }
        clocks_sleep_ms(CLOCKS_TRACE_MS);
    }
}

CLOCKS_UNUSED static void clocks_trace_begin(void) {
    if (!clocks.ok) return;
    if (!clocks.thread_started) {
        if (!(clocks.samples = (clocks_sample *)malloc(sizeof *clocks.samples * CLOCKS_TRACE_MAX))) return;
        if (pthread_create(&clocks.thread, NULL, clocks_trace_main, NULL) != 0) return;
        clocks.thread_started = 1;
    }
    pthread_mutex_lock(&clocks.lock);
    clocks.count = 0;
    clocks.active = 1;
    pthread_mutex_unlock(&clocks.lock);
}

static int clocks_cmp_u(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

CLOCKS_UNUSED static void clocks_trace_end(const char *label, int machine) {
    unsigned sm[CLOCKS_TRACE_MAX];
    double watts = 0, max_w = 0;
    unsigned long long reasons = 0;
    char why[160];
    int i, n;
    if (!clocks.thread_started) return;
    pthread_mutex_lock(&clocks.lock);
    clocks.active = 0;
    n = clocks.count;
    for (i = 0; i < n; i++) {
        sm[i] = clocks.samples[i].sm;
        watts += clocks.samples[i].watts;
        if (clocks.samples[i].watts > max_w) max_w = clocks.samples[i].watts;
        reasons |= clocks.samples[i].reasons;
    }
    pthread_mutex_unlock(&clocks.lock);
    if (n == 0) { printf("trace  %-22s no samples\n", label); return; }
    qsort(sm, (size_t)n, sizeof *sm, clocks_cmp_u);
    printf("trace  %-22s SM min/median/max %4u/%4u/%4u MHz over %d samples (every %d ms)  power mean %.1f W max %.1f W  held by: %s\n",
           label, sm[0], sm[n / 2], sm[n - 1], n, CLOCKS_TRACE_MS, watts / n, max_w, clocks_reasons(reasons, why, sizeof why));
    if (machine) printf("@trace %s %u %u %u %.1f 0x%llx\n", label, sm[0], sm[n / 2], sm[n - 1], watts / n, reasons);
    fflush(stdout);
}

CLOCKS_UNUSED static void clocks_close(void) {
    if (!clocks.thread_started) return;
    pthread_mutex_lock(&clocks.lock);
    clocks.stop = 1;
    pthread_mutex_unlock(&clocks.lock);
    pthread_join(clocks.thread, NULL);
    clocks.thread_started = 0;
    free(clocks.samples);
    clocks.samples = NULL;
}

#endif
