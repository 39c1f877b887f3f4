/* The CUDA form of the test kernels (tests/test_kernels.h). `make ptx` turns this file into
   the PTX text kept in test_kernels.h: nvcc -ptx -arch=compute_75 tests/kernels.cu */
extern "C" __global__ void fill_u32(unsigned *p, unsigned n, unsigned v)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

extern "C" __global__ void add_u32(unsigned *p, unsigned n, unsigned v)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}

extern "C" __global__ void empty(void) {}
