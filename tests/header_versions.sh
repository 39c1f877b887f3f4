#!/bin/sh
# Compile-only checks of the vendor backends against the oldest and the newest vendor headers
# they support: each compiles the implementation with one backend (gpuflow.h pulls in
# gpuflow_<b>.h and the vendor headers) under -std=c99 -Wall -Wextra -Wpedantic -Werror, into
# a temporary folder, and nothing runs.
#   - CUDA: cuda.h (+ nvrtc.h) of CUDA 12.3, the oldest gpuflow_cuda.h supports (fetched), and of
#     the toolkit here (CUDA_INCLUDE, the newest): with NVRTC, without it (GPUFLOW_NO_NVRTC), with
#     NVTX (GPUFLOW_NVTX), and as C++; and tests/cuda_sigcheck_fail.c -DGF_SIGCHECK_ABI, which
#     checks every driver-table slot against that toolkit's cudaTypedefs.h PFN_cu<name>_v<abi>.
#     The vendor directory is given with -I, as gpuflow_cuda.h's #error advises, so a warning
#     of cuda.h itself that gpuflow does not silence fails too (the sigcheck file includes
#     cuda.h before gpuflow: -isystem, as tests/compile_checks.sh).
#   - OpenCL: CL_TARGET_OPENCL_VERSION=210 (the oldest level gpuflow_opencl.h accepts) and
#     gpuflow's default (300), and as C++, against the compiler's own CL/cl.h and the oldest and
#     newest Khronos OpenCL-Headers fetched (opencl-oldest, opencl-newest: SOURCE says which).
# A header set that was not fetched, or is not on this machine, is skipped, never failed:
# tests/fetch_headers.sh HEADERS_DIR (make vendor-headers) fetches them.
# usage: header_versions.sh HEADERS_DIR [CUDA_INCLUDE]   (CUDA_INCLUDE: /usr/local/cuda/include)
#        CC and CXX name the compilers (cc, g++)
set -u
[ $# -ge 1 ] || { echo "usage: header_versions.sh HEADERS_DIR [CUDA_INCLUDE]" >&2; exit 2; }
hdrs=$1
cuda_here=${2:-/usr/local/cuda/include}
cc=${CC:-cc}
cxx=${CXX:-g++}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuflow-headers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
skip() { echo "skip $1"; skipped=$((skipped + 1)); }
fail() {
    echo "FAIL $1"; failed=$((failed + 1))
    { grep -E -m 6 '(error|warning|Error):' "$tmp/err" || head -n 6 "$tmp/err"; } | sed 's/^/       /'
}
# check WHAT FILE COMPILER FLAGS...: FILE compiles with FLAGS, without a warning. The front end
# only (-fsyntax-only, a third of a compile): what a headers' version changes is declarations and
# types; the warnings gcc gives after parsing are make test's whole builds' (the headers here).
check() {
    check_what=$1 check_file=$2 check_cc=$3; shift 3
    if $check_cc -Wall -Wextra -Wpedantic -Werror -I"$root" "$@" -fsyntax-only "$check_file" 2>"$tmp/err"; then ok "$check_what"
    else fail "$check_what"; fi
}

for b in CUDA OPENCL; do
    printf '#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\n#include <stdio.h>\nint main(void) { printf("%%d\\n", gf_backend_available(GF_BACKEND_%s)); return 0; }\n' \
        "$b" >"$tmp/$b.c"
    cp "$tmp/$b.c" "$tmp/$b.cpp"
done
have_cxx=; command -v "$cxx" >/dev/null 2>&1 && have_cxx=1

# ---- CUDA ------------------------------------------------------------------------------------
# cuda_checks NAME INCLUDE_DIR
cuda_checks() {
    name=$1 inc=$2
    v=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$inc/cuda.h")
    what="$name (CUDA_VERSION $v, $inc)"
    check "$what: GPUFLOW_CUDA with cuda.h and nvrtc.h" "$tmp/CUDA.c" "$cc" -std=c99 -DGPUFLOW_CUDA -I"$inc"
    check "$what: GPUFLOW_CUDA with GPUFLOW_NO_NVRTC (cuda.h alone)" "$tmp/CUDA.c" "$cc" -std=c99 -DGPUFLOW_CUDA -DGPUFLOW_NO_NVRTC -I"$inc"
    if [ -f "$inc/nvtx3/nvToolsExtCuda.h" ]; then
        check "$what: GPUFLOW_CUDA with GPUFLOW_NVTX (nvtx3)" "$tmp/CUDA.c" "$cc" -std=c99 -DGPUFLOW_CUDA -DGPUFLOW_NVTX -I"$inc"
    else skip "$what: GPUFLOW_NVTX: no nvtx3/nvToolsExtCuda.h there"; fi
    if [ -n "$have_cxx" ]; then
        check "$what: GPUFLOW_CUDA as C++ ($cxx -std=c++11)" "$tmp/CUDA.cpp" "$cxx" -std=c++11 -DGPUFLOW_CUDA -I"$inc"
    else skip "$what: GPUFLOW_CUDA as C++: no $cxx"; fi
    if [ -f "$inc/cudaTypedefs.h" ]; then
        check "$what: every driver-table slot is the PFN_cu<name>_v<abi> of its cudaTypedefs.h (tests/cuda_sigcheck_fail.c -DGF_SIGCHECK_ABI)" \
            "$root/tests/cuda_sigcheck_fail.c" "$cc" -std=c99 -DGF_SIGCHECK_ABI -isystem "$inc"
    else skip "$what: driver-table ABI check: no cudaTypedefs.h there"; fi
}
if [ -f "$hdrs/cuda-12.3/SOURCE" ] && [ -f "$hdrs/cuda-12.3/include/cuda.h" ]; then
    cuda_checks "CUDA 12.3, the oldest supported" "$hdrs/cuda-12.3/include"
else
    skip "CUDA 12.3, the oldest supported: $hdrs/cuda-12.3 not fetched (sh tests/fetch_headers.sh $hdrs, or make vendor-headers)"
fi
if [ -f "$cuda_here/cuda.h" ]; then
    cuda_checks "CUDA here, the newest" "$cuda_here"
else
    skip "CUDA here, the newest: no cuda.h in $cuda_here (the second argument names the toolkit's include directory)"
fi

# ---- OpenCL ----------------------------------------------------------------------------------
# opencl_checks NAME [-I DIR]: the levels, against the CL/cl.h that the flags find
opencl_checks() {
    what=$1; shift
    check "$what: GPUFLOW_OPENCL with CL_TARGET_OPENCL_VERSION=210" "$tmp/OPENCL.c" "$cc" -std=c99 -DGPUFLOW_OPENCL -DCL_TARGET_OPENCL_VERSION=210 "$@"
    check "$what: GPUFLOW_OPENCL with gpuflow's CL_TARGET_OPENCL_VERSION (300)" "$tmp/OPENCL.c" "$cc" -std=c99 -DGPUFLOW_OPENCL "$@"
    if [ -n "$have_cxx" ]; then
        check "$what: GPUFLOW_OPENCL as C++ ($cxx -std=c++11)" "$tmp/OPENCL.cpp" "$cxx" -std=c++11 -DGPUFLOW_OPENCL "$@"
    else skip "$what: GPUFLOW_OPENCL as C++: no $cxx"; fi
}
if printf '#include <CL/cl.h>\n' | $cc -E -x c - >/dev/null 2>&1; then
    opencl_checks "the compiler's own CL/cl.h"
else
    skip "the compiler's own CL/cl.h: there is none (Debian: opencl-headers)"
fi
for s in opencl-oldest opencl-newest; do
    if [ -f "$hdrs/$s/SOURCE" ] && [ -f "$hdrs/$s/CL/cl.h" ]; then
        opencl_checks "$s: $(head -n 1 "$hdrs/$s/SOURCE" | cut -d: -f1) ($hdrs/$s)" -I"$hdrs/$s"
    else
        skip "$s OpenCL headers: $hdrs/$s not fetched (sh tests/fetch_headers.sh $hdrs, or make vendor-headers)"
    fi
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
