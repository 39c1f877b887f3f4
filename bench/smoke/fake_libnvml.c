/* bench/smoke/fake_libnvml.c -- a stand-in libnvidia-ml.so.1 for smoke-testing bench/gpu_clocks.h
   without an NVIDIA driver: a clock that wanders, a constant power and no reasons.

       cc -std=c99 -O2 -shared -fPIC bench/smoke/fake_libnvml.c -o build/fake/libnvidia-ml.so.1
*/
#define EXPORT __attribute__((visibility("default")))
static int device, calls;
EXPORT int nvmlInit_v2(void) { return 0; }
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { if (i) return 2; *d = &device; return 0; }
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *id, void **d) { (void)id; *d = &device; return 0; }
EXPORT int nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz) {
    (void)d;
    *mhz = type == 1 ? 1980u - (unsigned)(calls++ % 4) * 15u : 2619u;
    return 0;
}
EXPORT int nvmlDeviceGetPowerUsage(void *d, unsigned *mw) { (void)d; *mw = 123456; return 0; }
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r) { (void)d; *r = calls % 7 ? 0 : 1; return 0; }
EXPORT int nvmlDeviceGetPerformanceState(void *d, int *p) { (void)d; *p = 0; return 0; }
EXPORT int nvmlDeviceGetTemperature(void *d, int sensor, unsigned *c) { (void)d; (void)sensor; *c = 41; return 0; }
