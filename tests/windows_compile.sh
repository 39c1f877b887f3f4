#!/bin/sh
# Windows is compile-tested only: builds a program with the implementation (Win32 threads,
# LoadLibrary) for x86_64 Windows with MinGW, stub alone and with each vendor backend whose
# headers are here, warnings as errors. One check per build; skipped without MinGW.
set -u
cc=x86_64-w64-mingw32-gcc
out=${1:-build}/windows
if ! command -v $cc >/dev/null 2>&1; then
    echo "notice: $cc not found: the Windows compile check is skipped"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
mkdir -p "$out/CL" || exit 1
# CL/cl.h is plain C for every platform; a copy keeps Linux's /usr/include off MinGW's path.
[ -f /usr/include/CL/cl.h ] && cp /usr/include/CL/*.h "$out/CL/"
passed=0 failed=0
check() {   # name, defines, include flags
    printf '#define GPUFLOW_IMPLEMENTATION\n%s\n#include "gpuflow.h"\n#include "gpuflow_cuda.h"\n#include "gpuflow_opencl.h"\nint main(void) { gf_device *d; return gf_device_open(GF_BACKEND_AUTO, 0, &d) == GF_OK ? 0 : 1; }\n' "$2" > "$out/$1.c"
    if $cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. $3 "$out/$1.c" -o "$out/$1.exe"; then
        echo "ok   windows build: $1"; passed=$((passed + 1))
    else
        echo "FAIL windows build: $1"; failed=$((failed + 1))
    fi
}
check stub "" ""
[ -f /usr/local/cuda/include/cuda.h ] && check cuda "#define GPUFLOW_CUDA" "-I/usr/local/cuda/include"
[ -f "$out/CL/cl.h" ] && check opencl "#define GPUFLOW_OPENCL" "-I$out"
echo "$passed passed, $failed failed"
