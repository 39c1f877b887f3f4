/* The library with every vendor backend the Makefile found: it passes -DGPUFLOW_<B> only when
   the vendor headers and gpuflow_<b>.h exist. Each test program includes this file first, in
   the one translation unit that also defines GPUFLOW_IMPLEMENTATION. */
#ifdef GPUFLOW_CUDA
#include "../gpuflow_cuda.h"
#endif
#ifdef GPUFLOW_HIP
#include "../gpuflow_hip.h"
#endif
#ifdef GPUFLOW_OPENCL
#include "../gpuflow_opencl.h"
#endif
#include "../gpuflow.h"
