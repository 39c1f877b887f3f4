#!/bin/sh
# Record and replay over the examples: each example (built by tests/examples.sh into DIR) runs
# with GPUFLOW_RECORD on each backend named, and tools/gfreplay replays the file on the backend
# it was recorded on and on the stub; each replay must end "0 mismatched". An example that
# ran and made no gpuflow call here (vulkan_interop without a Vulkan driver) is skipped and
# counted. Ends with `N passed, N failed, N skipped`.
#   usage: tests/replay.sh GFREPLAY EXAMPLES_DIR backend...
set -u
gfreplay=$1 dir=$2
shift 2
passed=0 failed=0 skipped=0
check() {   # what, then the command
    what=$1; shift
    if out=$("$@" 2>&1) && echo "$out" | grep -q " 0 mismatched"; then
        echo "ok   $what: $(echo "$out" | tail -n 1)"; passed=$((passed + 1))
    else
        echo "FAIL $what:"; echo "$out" | tail -n 5; failed=$((failed + 1))
    fi
}
for exe in "$dir"/*; do
    name=$(basename "$exe")
    [ -x "$exe" ] && [ -f "examples/$name.c" ] || continue
    case $name in nccl_allreduce) continue ;; esac   # needs NCCL and a CUDA device
    for backend in "$@"; do
        rec="$dir/$name.$backend.gfrec"
        rm -f "$rec"
        if ! (cd "$dir" && GPUFLOW_BACKEND=$backend GPUFLOW_RECORD="$name.$backend.gfrec" "./$name" >/dev/null 2>&1); then
            echo "FAIL $name on $backend: did not run"; failed=$((failed + 1)); continue
        fi
        if [ ! -s "$rec" ]; then
            echo "SKIP $name on $backend: it opened no device here (nothing to record)"; skipped=$((skipped + 1)); continue
        fi
        check "$name recorded on $backend, replayed there" "$gfreplay" "$rec"
        [ "$backend" = stub ] || check "$name recorded on $backend, replayed on the stub" "$gfreplay" --backend stub "$rec"
        rm -f "$rec"
    done
done
echo "$passed passed, $failed failed, $skipped skipped"
