#!/bin/sh
# The HIP backend on an NVIDIA GPU, through the stand-in HIP runtime over CUDA (hip_on_cuda.c).
# Builds the stand-in three ways: with every entry point (hiprtc inside, as ROCm 5 has it);
# with -DHOC_HIP_5_2, without those HIP 5.2's runtime lacks (hipLaunchHostFunc,
# hipStreamGetDevice, hipGraphDebugDotPrint), so that both of gpuflow's paths run; and split as
# ROCm 6 has it (libamdhip64 without hiprtc, and without hipGetDeviceProperties so that hiprtc
# compiles for the current device, beside a libhiprtc.so.5). Then the tests and the examples
# with GPUFLOW_HIP and GPUFLOW_TEST_HIP_ON_CUDA against the carried HIP headers, run on the hip
# backend: conformance and threads on the first two, reliability, races, the dialect, interop,
# the multi-device tests (alone and beside a stub device),
# Vulkan interop (VULKAN_INCLUDE: its headers), the hiprtc check and every example on the full
# one, the dialect on the split one. Ends with
# `N passed, N failed` (tests/run.sh sums the parts). Run from the repository root.
#   usage: sh tests/hip_on_cuda/run.sh [OUT_DIR]        (default build/hip_on_cuda)
#   environment: CC (cc), HIP_HEADERS (.hip-headers: holds hip/hip_runtime_api.h and
#     hip/hiprtc.h), CUDA_INCLUDE (/usr/local/cuda/include: cuda.h and nvrtc.h), CUDA_LIBDIR
#     (/usr/local/cuda/lib64/stubs: a libcuda.so to link against; the driver's libcuda.so.1 is
#     the one loaded). The stand-in's hiprtc loads NVRTC at run time (libnvrtc.so.13 or .12,
#     from the loader's path or /usr/local/cuda/lib64).
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
mkdir -p "$out/lib" "$out/lib-hip52" "$out/lib-split" || exit 1

stand_in() {   # FILE [FLAGS]
    echo "$cc -std=c99 $warn -O2 -fPIC -shared -D__HIP_PLATFORM_AMD__ -isystem $hip -isystem $cuda ${2:-} tests/hip_on_cuda/hip_on_cuda.c -o $1 -L$culib -lcuda -ldl -pthread"
    $cc -std=c99 $warn -O2 -fPIC -shared -D__HIP_PLATFORM_AMD__ -isystem "$hip" -isystem "$cuda" ${2:-} \
        tests/hip_on_cuda/hip_on_cuda.c -o "$1" -L"$culib" -lcuda -ldl -pthread
}
stand_in "$out/lib/libamdhip64.so" && ln -sf libamdhip64.so "$out/lib/libamdhip64.so.5"
stand_in "$out/lib-hip52/libamdhip64.so" -DHOC_HIP_5_2 && ln -sf libamdhip64.so "$out/lib-hip52/libamdhip64.so.5"
stand_in "$out/lib-split/libamdhip64.so" "-DHOC_NO_HIPRTC -DHOC_NO_PROPERTIES" && ln -sf libamdhip64.so "$out/lib-split/libamdhip64.so.5"
stand_in "$out/lib-split/libhiprtc.so.5" -DHOC_HIPRTC_ONLY
for t in conformance threads reliability races dialect faults cache newcomer no_stalls interop multi_device decide; do
    echo "$cc -std=c99 $warn -g -O1 $gf tests/$t.c -o $out/$t -pthread -ldl -lm"
    $cc -std=c99 $warn -g -O1 $gf "tests/$t.c" -o "$out/$t" -pthread -ldl -lm
done
# tests/vulkan.c with Vulkan's headers from VULKAN_INCLUDE (else the system's; without them it
# skips, as it does without a Vulkan driver)
vk=${VULKAN_INCLUDE:+-isystem $VULKAN_INCLUDE}
echo "$cc -std=c99 $warn -g -O1 $gf $vk tests/vulkan.c -o $out/vulkan -pthread -ldl -lm"
$cc -std=c99 $warn -g -O1 $gf $vk tests/vulkan.c -o "$out/vulkan" -pthread -ldl -lm
echo "$cc -std=c99 $warn -g -O1 -isystem $hip tests/hip_on_cuda/hiprtc_check.c -o $out/hiprtc_check -pthread -ldl -lm"
$cc -std=c99 $warn -g -O1 -isystem "$hip" tests/hip_on_cuda/hiprtc_check.c -o "$out/hiprtc_check" -pthread -ldl -lm

# A missing build shows up below as a command without a summary line: one failure each.
lib=$(cd "$out/lib" && pwd) old=$(cd "$out/lib-hip52" && pwd) split=$(cd "$out/lib-split" && pwd)
kernels=$(ls examples/*.gfk tests/*.gfk | tr '\n' ' ')
TEST_TIMEOUT=${TEST_TIMEOUT:-240} sh tests/run.sh \
    "sh tests/hip_on_cuda/check_exports.sh $lib/libamdhip64.so" \
    "sh tests/hip_on_cuda/check_exports.sh $old/libamdhip64.so hipLaunchHostFunc hipStreamGetDevice hipGraphDebugDotPrint" \
    "sh tests/hip_on_cuda/check_exports.sh $split/libamdhip64.so 'hiprtc.*' hipGetDeviceProperties" \
    "sh tests/hip_on_cuda/check_exports.sh $split/libhiprtc.so.5 'hip[A-Z].*'" \
    "LD_LIBRARY_PATH=$lib $out/conformance hip" \
    "LD_LIBRARY_PATH=$lib $out/threads hip" \
    "LD_LIBRARY_PATH=$lib $out/reliability hip" \
    "LD_LIBRARY_PATH=$lib $out/races hip" \
    "LD_LIBRARY_PATH=$lib $out/dialect hip" \
    "LD_LIBRARY_PATH=$lib $out/cache hip" \
    "LD_LIBRARY_PATH=$lib $out/newcomer hip" \
    "LD_LIBRARY_PATH=$lib $out/no_stalls hip" \
    "LD_LIBRARY_PATH=$lib $out/interop hip" \
    "LD_LIBRARY_PATH=$lib $out/multi_device hip" \
    "LD_LIBRARY_PATH=$lib $out/decide hip" \
    "LD_LIBRARY_PATH=$lib $out/multi_device mixed hip" \
    "LD_LIBRARY_PATH=$lib $out/vulkan hip" \
    "LD_LIBRARY_PATH=$lib $out/faults entries hip" \
    "LD_LIBRARY_PATH=$lib $out/faults slots hip" \
    "LD_LIBRARY_PATH=$lib $out/hiprtc_check --require --arch sm_75 $kernels" \
    "LD_LIBRARY_PATH=$lib sh tests/examples.sh $out/examples '$cc -std=c99 $warn $gf' hip" \
    "LD_LIBRARY_PATH=$old $out/conformance hip" \
    "LD_LIBRARY_PATH=$old $out/threads hip" \
    "LD_LIBRARY_PATH=$split $out/dialect hip"
