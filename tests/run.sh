#!/bin/sh
# Runs each test command given as an argument, shows its output, and sums the summary lines
# (`N passed, N failed[, N skipped]`, the last one each command prints) into one final line
# of the same form. A command that crashes, exits non-zero, runs past TEST_TIMEOUT seconds
# (default 120) or prints no summary line counts as one more failure. Exits 1 if anything failed.
set -u
limit=${TEST_TIMEOUT:-120}
out=$(mktemp "${TMPDIR:-/tmp}/gpuflow-test.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT INT TERM
passed=0 failed=0 skipped=0
for cmd in "$@"; do
    echo "== $cmd"
    t0=$(date +%s)
    if command -v timeout >/dev/null 2>&1; then
        timeout -k 10 "$limit" sh -c "$cmd" >"$out" 2>&1
    else
        sh -c "$cmd" >"$out" 2>&1
    fi
    rc=$?
    cat "$out"
    echo "-- $(( $(date +%s) - t0 )) s"   # where the run's time goes (make test must stay under 10 minutes on 2 cores)
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$out" | tail -n 1)
    if [ -z "$line" ]; then
        [ "$rc" -eq 124 ] && why="timed out after ${limit}s" || why="exit status $rc"
        echo "!! $cmd: no summary line ($why): counted as 1 failed"
        failed=$((failed + 1))
        continue
    fi
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    s=$(echo "$line" | sed -nE 's/.*, ([0-9]+) skipped$/\1/p')
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + ${s:-0}))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "!! $cmd: exit status $rc with no failed check: counted as 1 failed"
        failed=$((failed + 1))
    fi
done
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
