// Kernels of bench/cuda_bench.c. Their PTX is pasted into cuda_bench.c as strings:
//   nvcc -ptx -arch=compute_75 bench/cuda_bench_kernels.cu -o -
// compute_75 PTX is JIT-compiled by the driver for whatever GPU runs the bench.

// The launch-cost probe: no parameters, no work.
extern "C" __global__ void empty_kernel() {}

// The same with two parameters (a buffer and a value), to see the argument mapping's cost.
extern "C" __global__ void args_kernel(float *p, int n) {
    if (n < 0) p[0] = 0.0f;   // never true: keeps both parameters live
}

// The pipeline's compute stage: iters dependent FMAs per element, grid-stride, so its time
// scales with iters and can be matched to the copy time of one chunk.
extern "C" __global__ void work_kernel(float *d, int n, int iters) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = d[i];
        for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f;
        d[i] = v;
    }
}
