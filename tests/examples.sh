#!/bin/sh
# Builds every example with the test build's backends and runs it once per backend named,
# each run one check (GPUFLOW_BACKEND forces the backend, so a backend without a device
# fails here rather than falling back). Ends with `N passed, N failed`.
#   usage: tests/examples.sh OUT_DIR "CC AND FLAGS" backend...
set -u
out=$1 cc=$2
shift 2
mkdir -p "$out/src" || exit 1
passed=0 failed=0
# Each example defines GPUFLOW_IMPLEMENTATION (one cc line builds it: tests/readme.sh builds them
# so). Here the implementation is compiled once, with the same flags, and linked into copies of
# the examples with that one line taken out: each example's own code still builds warning-free,
# and make test spends one compile of the header where it spent one per example.
for f in examples/*; do sed '/^#define GPUFLOW_IMPLEMENTATION$/d' "$f" > "$out/src/${f#examples/}"; done
if ! $cc -I. -DGPUFLOW_IMPLEMENTATION -x c -c gpuflow.h -o "$out/gpuflow_impl.o"; then
    echo "FAIL gpuflow.h: the implementation does not build with: $cc"
    echo "0 passed, 1 failed"
    exit 1
fi
for src in examples/*.c; do
    name=$(basename "$src" .c)
    if ! grep -q '^#define GPUFLOW_IMPLEMENTATION$' "$src" &&
       ! { grep -q '^#include "example.h"' "$src" && grep -q '^#define GPUFLOW_IMPLEMENTATION$' examples/example.h; }; then
        echo "FAIL $src: defines GPUFLOW_IMPLEMENTATION neither itself nor through example.h (one cc line must build it)"
        failed=$((failed + 1))
        continue
    fi
    if grep -q '^#include <\(cuda\|CL/\|hip/\)' "$src"; then
        build="$src"   # whole: it uses the vendor headers as the implementation set them up
    else
        build="$out/src/$name.c $out/gpuflow_impl.o"
    fi
    # shellcheck disable=SC2086
    if ! $cc -I. $build -o "$out/$name" -pthread -ldl; then
        echo "FAIL $src: does not build"
        failed=$((failed + 1))
        continue
    fi
    for backend in "$@"; do
        if log=$(cd "$out" && GPUFLOW_BACKEND=$backend "./$name" 2>&1); then
            echo "ok   $name on $backend: $(echo "$log" | tail -n 1)"
            passed=$((passed + 1))
        else
            echo "FAIL $name on $backend:"
            echo "$log" | tail -n 5
            failed=$((failed + 1))
        fi
    done
done
echo "$passed passed, $failed failed"
