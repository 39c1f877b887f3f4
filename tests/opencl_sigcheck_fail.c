/* Compiled by tests/compile_checks.sh (make test), which wants it to fail: shows that the OpenCL backend's driver table (GF__CL_ENTRIES in
   gpuflow_opencl.h) is checked against CL/cl.h when the implementation compiles.

   As it stands this file must FAIL to compile. It stands in for a CL/cl.h whose
   clEnqueueWriteBuffer has another signature than the table's slot (a non-const host
   pointer): the name is redirected to a declaration of that type, which the table's
   compile-time check then compares with the slot.

       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -c tests/opencl_sigcheck_fail.c -o /dev/null
         -> error: comparison of distinct pointer types lacks a cast
            (in expansion of macro 'GF__CL_SAME_TYPE' ... 'GF__CL_ENTRIES')

   With -DGF_SIGCHECK_OK nothing is redirected and it must compile (and, run, open the first
   OpenCL device). g++ -x c++ -std=c++11 fails the same way without -Werror. */
#define _POSIX_C_SOURCE 200809L   /* CL/cl.h comes first here, before gpuflow.h could set it */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#ifndef GF_SIGCHECK_OK
#define clEnqueueWriteBuffer gf_sigcheck_clEnqueueWriteBuffer
#ifdef __cplusplus
extern "C"
#endif
cl_int CL_API_CALL gf_sigcheck_clEnqueueWriteBuffer(cl_command_queue, cl_mem, cl_bool, size_t, size_t,
                                                    void *, cl_uint, const cl_event *, cl_event *);
#endif

#define GPUFLOW_IMPLEMENTATION
#define GPUFLOW_OPENCL
#include "../gpuflow.h"

int main(void) {
    gf_device *d = NULL;
    if (gf_device_open(GF_BACKEND_OPENCL, 0, &d) != GF_OK) return 1;
    gf_device_close(d);
    return 0;
}
