/* bench/kernel_bench_native.cu -- the hand-written side of bench/kernel_bench.c: the three
   kernels of examples/vector_add.gfk, reduce.gfk and histogram.gfk written directly in CUDA C,
   as a person would write them by hand: the same algorithm, the same parameters in the same
   order, the same block size and the same work per thread, so that a difference in time is
   the dialect's and not the algorithm's. (No __restrict__: the dialect cannot say it either.)

   kernel_bench builds this file itself at run time:
       nvcc -O3 -cubin -arch=sm_XY bench/kernel_bench_native.cu -o build/bench/kernel_bench_native.cubin
   and loads the cubin with cuModuleLoad in gpuflow's context. */

/* c[i] = a[i] + b[i], one thread per element; the grid is whole blocks, so the tail is guarded. */
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

/* Each block of 256 threads sums its 256 elements in shared memory, halving the active threads
   at each step with the block meeting at a barrier in between; blocks[g] = block g's sum. */
extern "C" __global__ void block_sum(const float *x, float *blocks, unsigned n)
{
    __shared__ float part[256];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x, step;
    part[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (step = blockDim.x / 2; step > 0; step /= 2) {
        if (t < step) part[t] += part[t + step];
        __syncthreads();
    }
    if (t == 0) blocks[blockIdx.x] = part[0];
}

/* 64 bins of the low six bits of every byte: per-block counts in shared memory (grid-stride
   over the words), then one global atomic per non-empty bin. */
extern "C" __global__ void histogram(const unsigned *words, unsigned n_words, unsigned *bins)
{
    __shared__ unsigned counts[64];
    unsigned t = threadIdx.x, i, byte;
    if (t < 64) counts[t] = 0;
    __syncthreads();
    for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n_words; i += gridDim.x * blockDim.x)
        for (byte = 0; byte < 4; byte++)
            atomicAdd(&counts[(words[i] >> (8 * byte)) & 63u], 1u);
    __syncthreads();
    if (t < 64 && counts[t]) atomicAdd(&bins[t], counts[t]);
}
