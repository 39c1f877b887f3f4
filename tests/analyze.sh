#!/bin/sh
# make analyze: clang's static analyzer (scan-build, Debian's clang-tools) over gpuflow.h with
# every backend compiled in (the header as its own translation unit with the backend headers'
# functions analyzed too, each on its own, not only where a test reaches it) and over each test
# program (the header's code again, along the paths the tests take). Every report is a
# failure; none is silenced by switching a checker off. The one setting changed is a budget:
# by default the analyzer follows a function of 14 or more blocks into at most 32 calls per
# translation unit and then guesses its result; gpuflow's argument checks are such functions,
# called from every entry point, so a test that calls many entry points got reports along
# paths those checks rule out (a NULL stream list passed on after the check refused it).
#   usage: tests/analyze.sh OUT_DIR "CC AND FLAGS" [FILE[=CC AND FLAGS OF ITS OWN]...]
#          (default: the header and every tests/*.c). One file per core. Ends with
#          `N passed, N failed[, N skipped]`.
set -u
out=$1 cc=$2
shift 2
scan=$(command -v scan-build || ls /usr/bin/scan-build-[0-9]* 2>/dev/null | tail -n 1)
budget="-analyzer-config max-times-inline-large=1000"

if [ "${ANALYZE_ONE:-}" ]; then   # one file (started below, one per core): its log and status
    f=${1%%=*} name=$(echo "${1%%=*}" | tr '/.' '__')
    case $1 in *=*) cc=${1#*=} ;; esac
    if [ "$f" = gpuflow.h ]; then
        # shellcheck disable=SC2086
        "$scan" --status-bugs $budget -analyze-headers -o "$out/$name" $cc -DGPUFLOW_IMPLEMENTATION -x c -c gpuflow.h -o /dev/null >"$out/$name.log" 2>&1
    else
        # shellcheck disable=SC2086
        "$scan" --status-bugs $budget -o "$out/$name" $cc -c "$f" -o /dev/null >"$out/$name.log" 2>&1
    fi
    echo $? >"$out/$name.rc"
    exit 0
fi

if [ -z "$scan" ]; then
    echo "skip static analysis: scan-build not found (Debian: apt-get install clang-tools)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
# the *_sigcheck_fail programs must fail to compile (tests/compile_checks.sh runs them)
[ "$#" -gt 0 ] || set -- gpuflow.h $(ls tests/*.c | grep -v '_sigcheck_fail\.c$')
rm -rf "$out" && mkdir -p "$out" || exit 1
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
printf '%s\n' "$@" | ANALYZE_ONE=1 xargs -P "$jobs" -I{} sh "$0" "$out" "$cc" {}

passed=0 failed=0 reports=0
for f in "$@"; do
    f=${f%%=*} name=$(echo "${f%%=*}" | tr '/.' '__')
    n=$(grep -c ' warning: .*\[[a-zA-Z.]*\]$' "$out/$name.log" 2>/dev/null)
    rc=$(cat "$out/$name.rc" 2>/dev/null || echo missing)
    if [ "$rc" = 0 ] && [ "${n:-0}" -eq 0 ] && grep -q 'No bugs found' "$out/$name.log"; then
        echo "ok   analyze $f: 0 reports"; passed=$((passed + 1))
    else
        echo "FAIL analyze $f: ${n:-?} report(s), status $rc (reports: $out/$name)"
        grep ' warning: \|error:' "$out/$name.log" | sed 's/^/     /' | head -n 40
        failed=$((failed + 1)); reports=$((reports + ${n:-0}))
    fi
done
echo "static analysis: $reports report(s) in $# file(s) ($scan)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
