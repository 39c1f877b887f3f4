/* The library with every vendor backend the Makefile found: it passes -DGPUFLOW_<B> only when
   the vendor headers and gpuflow_<b>.h exist, and gpuflow.h pulls each defined backend's header
   in (one macro per backend). Each test program includes this file first, in the one
   translation unit that also defines GPUFLOW_IMPLEMENTATION, unless the Makefile links the
   implementation compiled once (GF_TEST_LINKED_IMPL: build/gpuflow_impl.o). */
#ifdef GF_TEST_LINKED_IMPL
#  undef GPUFLOW_IMPLEMENTATION
#endif
#include "../gpuflow.h"
