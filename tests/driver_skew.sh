#!/bin/sh
# The CUDA backend against an older or partial driver: bench/smoke's stand-in libcuda, told by
# FAKE_CUDA_HIDE which entry points it lacks, and tests/driver_skew.c against it.
#   usage: tests/driver_skew.sh BUILD_DIR "CC AND FLAGS" CUDA_INCLUDE   Ends with `N passed, N failed`.
set -u
out=$1 cc=$2 inc=$3
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
finish() {
    if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
    [ "$failed" -eq 0 ]; exit
}
if [ ! -f "$inc/cuda.h" ]; then echo "notice: driver_skew skipped: no $inc/cuda.h"; skipped=1; finish; fi
mkdir -p "$out/lib" || exit 1
if ! $cc -shared -fPIC -isystem "$inc" bench/smoke/fake_libcuda.c -o "$out/lib/libcuda.so.1" -pthread ||
   ! $cc -isystem "$inc" -I. -Itests tests/driver_skew.c -o "$out/driver_skew" -pthread -ldl -lm; then
    fail "the stand-in driver or tests/driver_skew.c does not build"; finish
fi
# run WHAT HIDDEN: the test against a driver that lacks HIDDEN (comma-separated names)
run() {
    if env LD_LIBRARY_PATH="$out/lib" FAKE_CUDA_OP_NS=0 FAKE_CUDA_HIDE="$2" "$out/driver_skew" "$1" >"$out/log" 2>&1 &&
       tail -n 1 "$out/log" | grep -q ' 0 failed'; then ok "$1, without '${2:-nothing}': $(tail -n 1 "$out/log")"
    else fail "$1, without '${2:-nothing}' (exit $?): $(grep -m2 'FAIL' "$out/log") $(tail -n 1 "$out/log")"; fi
}
run full ""
# each set's entries beside the one the backend asks for first: a driver without them crashed
# in the destroy (semaphores) or the import (memory)
for entry in cuDestroyExternalSemaphore cuSignalExternalSemaphoresAsync cuExternalMemoryGetMappedBuffer cuDestroyExternalMemory; do
    run lacking "$entry"
done
run capture ""
run capture cuGraphAddNode          # a conditional node's entry: the capture set stays
run capture_lacking cuStreamUpdateCaptureDependencies
finish
