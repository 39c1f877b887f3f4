#!/bin/sh
# Record and replay over the examples and some test programs: each example (built by
# tests/examples.sh into EXAMPLES_DIR) runs with GPUFLOW_RECORD on each backend named, and
# tools/gfreplay replays the file on the backend it was recorded on and on the stub; each
# replay must end "0 mismatched". So do four test programs of BUILD_DIR, replayed on the
# backend they ran on (they check that backend's own behaviour): conformance (8500 calls from
# 11 threads, bad input included), decide, realtime and, off the stub, hot_reload (on the stub
# its reloads pass C kernels compiled into the test, which no recording can carry:
# tests/record.c replays such a run with the program's own table). An example that ran
# and made no gpuflow call here (vulkan_interop without a Vulkan driver) is skipped and
# counted. Ends with `N passed, N failed, N skipped`.
#   usage: tests/replay.sh GFREPLAY EXAMPLES_DIR BUILD_DIR backend...
set -u
gfreplay=$1 dir=$2 build=$3
shift 3
passed=0 failed=0 skipped=0
check() {   # what, then the command
    what=$1; shift
    if out=$("$@" 2>&1) && echo "$out" | grep -q " 0 mismatched"; then
        echo "ok   $what: $(echo "$out" | tail -n 1)"; passed=$((passed + 1))
    else
        echo "FAIL $what:"; echo "$out" | tail -n 5; failed=$((failed + 1))
    fi
}
record() {   # name, backend, then the command (run in $dir)
    name=$1 backend=$2; shift 2
    rec="$dir/$name.$backend.gfrec"
    rm -f "$rec"
    (cd "$dir" && GPUFLOW_BACKEND=$backend GPUFLOW_RECORD="$name.$backend.gfrec" GPUFLOW_LOG=off "$@" >/dev/null 2>&1)
}
tests=${REPLAY_TESTS:-"conformance decide realtime hot_reload"}   # make test-vulkan: REPLAY_TESTS=vulkan
for exe in "$dir"/* $tests; do
    case $exe in
    */*) name=$(basename "$exe"); [ -f "examples/$name.c" ] && [ -x "$exe" ] || continue; run="./$name" args= ;;
    *) [ -x "$build/$exe" ] || continue; name="test-$exe" run="$(cd "$build" && pwd)/$exe" ;;
    esac
    case $name in example-nccl_allreduce|nccl_allreduce) continue ;; esac   # needs NCCL and a CUDA device
    for backend in "$@"; do
        rec="$dir/$name.$backend.gfrec"
        [ "$name:$backend" = test-hot_reload:stub ] && continue
        case $name in test-*) args=$backend ;; esac
        if ! record "$name" "$backend" $run $args; then
            echo "FAIL $name on $backend: did not run"; failed=$((failed + 1)); continue
        fi
        if [ ! -s "$rec" ]; then
            echo "SKIP $name on $backend: it opened no device here (nothing to record)"; skipped=$((skipped + 1)); continue
        fi
        check "$name recorded on $backend, replayed there" "$gfreplay" "$rec"
        case $backend:$name in   # a test program checks its backend's own behaviour: replayed there only
        stub:*|*:test-*) ;;
        *) check "$name recorded on $backend, replayed on the stub" "$gfreplay" --backend stub "$rec" ;;
        esac
        rm -f "$rec"
    done
done
# the exit status tells a replay's answer from a file it could not replay (a support engineer's
# review: both were 1)
for bad in "$dir/no-such-recording.gfrec" tests/replay.sh; do
    "$gfreplay" "$bad" >/dev/null 2>&1; status=$?
    if [ "$status" -eq 3 ]; then echo "ok   gfreplay $bad: exit 3 (could not be replayed)"; passed=$((passed + 1))
    else echo "FAIL gfreplay $bad: exit $status, not 3"; failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed, $skipped skipped"
