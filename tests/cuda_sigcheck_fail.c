/* Compiled by tests/compile_checks.sh (make test), which wants it to fail: shows that the CUDA backend's driver table (GF__CUDA_API in
   gpuflow_cuda.h) is checked against cuda.h when the implementation compiles.

   As it stands this file must FAIL to compile. It stands in for a cuda.h whose cuMemAlloc
   has another signature than the table's slot: the name now means a function of the CUDA
   2.0 ABI (an unsigned int size), where the slot is typed for cuMemAlloc_v2 (size_t).

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -isystem /usr/local/cuda/include \
          -c tests/cuda_sigcheck_fail.c -o /dev/null
         -> error: comparison of distinct pointer types lacks a cast
            (in expansion of macro 'GF__CUDA_SAME' ... 'GF__CUDA_API')

   With -DGF_SIGCHECK_ABI it must compile: nothing is redirected, and every entry's ABI
   version is checked against the toolkit's cudaTypedefs.h, whose PFN_cu<name>_v<abi> is
   the type of the variant that cuGetProcAddress hands out when asked for cu<name> at <abi>.
   So the loader asks for exactly the variant each slot is typed for.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -isystem /usr/local/cuda/include \
          -DGF_SIGCHECK_ABI -c tests/cuda_sigcheck_fail.c -o /dev/null */
#define _POSIX_C_SOURCE 200809L   /* cuda.h comes first here, before gpuflow.h could set it */
#include <cuda.h>

#ifndef GF_SIGCHECK_ABI
#undef cuMemAlloc
#define cuMemAlloc gf_sigcheck_cuMemAlloc_v1
CUresult CUDAAPI gf_sigcheck_cuMemAlloc_v1(CUdeviceptr *dptr, unsigned int bytesize);
#endif

#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_CUDA
#include "../gpuflow.h"

#ifdef GF_SIGCHECK_ABI
#include <cudaTypedefs.h>
static void sigcheck_abi_versions(void) {
#define SIGCHECK_ABI(name, ret, params, fails_as, decl, abi) (void)sizeof(gf__cu.name == (PFN_cu##name##_v##abi)0);
#define SIGCHECK_ABI_OPT(name, ret, params, fails_as, decl, abi, set) SIGCHECK_ABI(name, ret, params, fails_as, decl, abi)
    GF__CUDA_API(SIGCHECK_ABI, SIGCHECK_ABI_OPT)
#undef SIGCHECK_ABI
#undef SIGCHECK_ABI_OPT
}
#endif

int main(void) {
    gf_device *d = NULL;
#ifdef GF_SIGCHECK_ABI
    (void)sigcheck_abi_versions;
#endif
    if (gf_device_open(GF_BACKEND_AUTO, 0, &d) != GF_OK) return 1;
    gf_device_close(d);
    return 0;
}
