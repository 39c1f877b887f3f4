#!/bin/sh
# The HIP backend on an NVIDIA GPU, through the stand-in HIP runtime over CUDA (hip_on_cuda.c).
# Builds the stand-in twice (with every entry point, and with -DHOC_HIP_5_2 without those that
# HIP 5.2's runtime lacks: hipLaunchHostFunc, hipStreamGetDevice; so that both of gpuflow's paths
# run), the tests and the examples with GPUFLOW_HIP and GPUFLOW_TEST_HIP_ON_CUDA against the
# carried HIP headers, then runs them on the hip backend: conformance and threads on each
# stand-in, reliability, races and every example on the full one. Ends with
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
mkdir -p "$out/lib" "$out/lib-hip52" || exit 1

stand_in() {   # DIR [FLAGS]
    echo "$cc -std=c99 $warn -O2 -fPIC -shared -D__HIP_PLATFORM_AMD__ -isystem $hip -isystem $cuda ${2:-} tests/hip_on_cuda/hip_on_cuda.c -o $1/libamdhip64.so -L$culib -lcuda -pthread"
    $cc -std=c99 $warn -O2 -fPIC -shared -D__HIP_PLATFORM_AMD__ -isystem "$hip" -isystem "$cuda" ${2:-} \
        tests/hip_on_cuda/hip_on_cuda.c -o "$1/libamdhip64.so" -L"$culib" -lcuda -pthread &&
    ln -sf libamdhip64.so "$1/libamdhip64.so.5"
}
stand_in "$out/lib"
stand_in "$out/lib-hip52" -DHOC_HIP_5_2
for t in conformance threads reliability races dialect; do
    echo "$cc -std=c99 $warn -g -O1 $gf tests/$t.c -o $out/$t -pthread -ldl -lm"
    $cc -std=c99 $warn -g -O1 $gf "tests/$t.c" -o "$out/$t" -pthread -ldl -lm
done

# A missing build shows up below as a command without a summary line: one failure each.
lib=$(cd "$out/lib" && pwd) old=$(cd "$out/lib-hip52" && pwd)
TEST_TIMEOUT=${TEST_TIMEOUT:-240} sh tests/run.sh \
    "sh tests/hip_on_cuda/check_exports.sh $lib/libamdhip64.so" \
    "sh tests/hip_on_cuda/check_exports.sh $old/libamdhip64.so hipLaunchHostFunc hipStreamGetDevice" \
    "LD_LIBRARY_PATH=$lib $out/conformance hip" \
    "LD_LIBRARY_PATH=$lib $out/threads hip" \
    "LD_LIBRARY_PATH=$lib $out/reliability hip" \
    "LD_LIBRARY_PATH=$lib $out/races hip" \
    "LD_LIBRARY_PATH=$lib $out/dialect hip" \
    "LD_LIBRARY_PATH=$lib sh tests/examples.sh $out/examples '$cc -std=c99 $warn $gf' hip" \
    "LD_LIBRARY_PATH=$old $out/conformance hip" \
    "LD_LIBRARY_PATH=$old $out/threads hip"
