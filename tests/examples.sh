#!/bin/sh
# Builds every example with the test build's backends and runs it once per backend named,
# each run one check (GPUFLOW_BACKEND forces the backend, so a backend without a device
# fails here rather than falling back). Ends with `N passed, N failed`.
#   usage: tests/examples.sh OUT_DIR "CC AND FLAGS" backend...
set -u
out=$1 cc=$2
shift 2
mkdir -p "$out" || exit 1
passed=0 failed=0
for src in examples/*.c; do
    name=$(basename "$src" .c)
    if ! $cc -I. "$src" -o "$out/$name" -pthread -ldl; then
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
