#!/bin/sh
# The HIP backend on an NVIDIA GPU, through the stand-in HIP runtime over CUDA (hip_on_cuda.c).
# Builds the stand-in twice (with hipLaunchHostFunc, and without it as HIP 5.2 ships, so that
# both of gpuflow's callback paths run), the tests and the examples with GPUFLOW_HIP and
# GPUFLOW_TEST_HIP_ON_CUDA against the carried HIP headers, then runs with GPUFLOW_BACKEND=hip:
# the conformance suite and the thread test on each stand-in, and every example. Ends with
# `N passed, N failed` (tests/run.sh sums the parts). Run from the repository root.
#   usage: sh tests/hip_on_cuda/run.sh [OUT_DIR]        (default build/hip_on_cuda)
#   environment: CC (cc), HIP_HEADERS (.hip-headers: holds hip/hip_runtime_api.h),
#     CUDA_INCLUDE (/usr/local/cuda/include), CUDA_LIBDIR (/usr/local/cuda/lib64/stubs: a
#     libcuda.so to link against; the driver's libcuda.so.1 is the one loaded)
set -u
out=${1:-build/hip_on_cuda}
cc=${CC:-cc}
hip=${HIP_HEADERS:-.hip-headers}
cuda=${CUDA_INCLUDE:-/usr/local/cuda/include}
culib=${CUDA_LIBDIR:-/usr/local/cuda/lib64/stubs}
warn="-Wall -Wextra -Wpedantic -Werror"
gf="-DGPUFLOW_HIP -DGPUFLOW_TEST_HIP_ON_CUDA -isystem $hip"

if [ ! -f "$hip/hip/hip_runtime_api.h" ]; then
    echo "FAIL no $hip/hip/hip_runtime_api.h: copy /usr/include/hip (Debian's libamdhip64-dev) there, see tests/hip_on_cuda/README.md"
    echo "0 passed, 1 failed"; exit 1
fi
grep -q GPUFLOW_TEST_HIP_ON_CUDA tests/test_kernels.h ||
    echo "notice: tests/test_kernels.h has no hip_code under GPUFLOW_TEST_HIP_ON_CUDA: the kernel tests will skip"
mkdir -p "$out/lib" "$out/lib-no-hostfunc" || exit 1

stand_in() {   # DIR [FLAGS]
    echo "$cc -std=c99 $warn -O2 -fPIC -shared -D__HIP_PLATFORM_AMD__ -isystem $hip -isystem $cuda ${2:-} tests/hip_on_cuda/hip_on_cuda.c -o $1/libamdhip64.so -L$culib -lcuda -pthread"
    $cc -std=c99 $warn -O2 -fPIC -shared -D__HIP_PLATFORM_AMD__ -isystem "$hip" -isystem "$cuda" ${2:-} \
        tests/hip_on_cuda/hip_on_cuda.c -o "$1/libamdhip64.so" -L"$culib" -lcuda -pthread &&
    ln -sf libamdhip64.so "$1/libamdhip64.so.5"
}
stand_in "$out/lib"
stand_in "$out/lib-no-hostfunc" -DHOC_NO_LAUNCH_HOST_FUNC
for t in conformance threads reliability races; do
    echo "$cc -std=c99 $warn -g -O1 $gf tests/$t.c -o $out/$t -pthread -ldl"
    $cc -std=c99 $warn -g -O1 $gf "tests/$t.c" -o "$out/$t" -pthread -ldl
done

# A missing build shows up below as a command without a summary line: one failure each.
lib=$(cd "$out/lib" && pwd) nohf=$(cd "$out/lib-no-hostfunc" && pwd)
TEST_TIMEOUT=${TEST_TIMEOUT:-240} sh tests/run.sh \
    "sh tests/hip_on_cuda/check_exports.sh $lib/libamdhip64.so" \
    "sh tests/hip_on_cuda/check_exports.sh $nohf/libamdhip64.so hipLaunchHostFunc" \
    "LD_LIBRARY_PATH=$lib $out/conformance hip" \
    "LD_LIBRARY_PATH=$lib $out/threads hip" \
    "LD_LIBRARY_PATH=$lib $out/reliability hip" \
    "LD_LIBRARY_PATH=$lib $out/races hip" \
    "LD_LIBRARY_PATH=$lib sh tests/examples.sh $out/examples '$cc -std=c99 $warn $gf' hip" \
    "LD_LIBRARY_PATH=$nohf $out/conformance hip" \
    "LD_LIBRARY_PATH=$nohf $out/threads hip"
