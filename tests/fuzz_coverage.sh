#!/bin/sh
# How much of gpuflow.h the fuzz corpus reaches: sh tests/fuzz_coverage.sh BUILD_DIR [EXTRA_CORPUS]
#
# Builds the replay target (tests/fuzz.c -DFUZZ_REPLAY, the stub backend) with clang's
# source-based coverage, runs it over tests/fuzz_corpus (and EXTRA_CORPUS, e.g. build/fuzz_corpus
# that `make fuzz` grows), merges the profiles and prints one line: the lines and functions of
# gpuflow.h that ran. The vendor backends are not compiled in, so their code does not count.
# Files go to BUILD_DIR/fuzz_coverage (coverage.profdata there feeds `llvm-cov show`).
# Without clang, llvm-profdata or llvm-cov (or clang's profile runtime) it prints "skipped" and
# exits 0; it exits non-zero when a tool or the replay itself fails.
#
# Environment: CLANG (default clang), LLVM_PROFDATA, LLVM_COV (default: the ones of clang's
# major version when installed as llvm-*-N, else llvm-profdata and llvm-cov).

usage() { echo "usage: sh tests/fuzz_coverage.sh BUILD_DIR [EXTRA_CORPUS]" >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then usage; fi

here=$(pwd)
abs() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$here/$1" ;; esac; }
out=$(abs "$1")/fuzz_coverage
extra=
if [ $# -eq 2 ]; then
    extra=$(abs "$2")
    [ -d "$extra" ] || { echo "fuzz_coverage: no such directory: $2" >&2; exit 2; }
fi
root=$(cd "$(dirname "$0")/.." && pwd) || exit 1
cd "$root" || exit 1

CLANG=${CLANG:-clang}
if ! command -v "$CLANG" >/dev/null 2>&1; then echo "fuzz coverage: skipped ($CLANG not found)"; exit 0; fi
major=$("$CLANG" -dumpversion 2>/dev/null | cut -d. -f1)
pick() {   # pick VAR_VALUE TOOL: the value given, else TOOL-<clang major>, else TOOL
    if [ -n "$1" ]; then printf '%s\n' "$1"
    elif [ -n "$major" ] && command -v "$2-$major" >/dev/null 2>&1; then printf '%s\n' "$2-$major"
    else printf '%s\n' "$2"; fi
}
PROFDATA=$(pick "${LLVM_PROFDATA:-}" llvm-profdata)
COV=$(pick "${LLVM_COV:-}" llvm-cov)
for t in "$PROFDATA" "$COV"; do
    if ! command -v "$t" >/dev/null 2>&1; then echo "fuzz coverage: skipped ($t not found)"; exit 0; fi
done

mkdir -p "$out" || exit 1
rm -f "$out"/*.profraw "$out"/coverage.profdata
flags="-std=c99 -g -O0 -fprofile-instr-generate -fcoverage-mapping"   # split on purpose where used
if ! printf 'int main(void) { return 0; }\n' | "$CLANG" $flags -x c - -o "$out/probe" >/dev/null 2>&1; then
    echo "fuzz coverage: skipped ($CLANG cannot link its profile runtime; Debian: apt-get install libclang-rt-dev)"
    exit 0
fi
rm -f "$out/probe"

"$CLANG" $flags -DFUZZ_REPLAY tests/fuzz.c -o "$out/fuzz_replay" -pthread -ldl -lm ||
    { echo "fuzz_coverage: building the replay target failed" >&2; exit 1; }
LLVM_PROFILE_FILE="$out/replay-%p.profraw" "$out/fuzz_replay" tests/fuzz_corpus ${extra:+"$extra"} >"$out/replay.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
    tail -n 20 "$out/replay.log" >&2
    echo "fuzz_coverage: the replay failed (exit $rc); see $out/replay.log" >&2
    exit 1
fi
inputs=$(sed -n 's/^\([0-9][0-9]*\) passed, 0 failed$/\1/p' "$out/replay.log" | tail -n 1)

"$PROFDATA" merge -sparse "$out"/*.profraw -o "$out/coverage.profdata" ||
    { echo "fuzz_coverage: $PROFDATA merge failed" >&2; exit 1; }
# The summary of gpuflow.h alone: {"filename":".../gpuflow.h","summary":{...,"functions":{"count":N,"covered":M,...},...,"lines":{...}}}
"$COV" export -summary-only -instr-profile="$out/coverage.profdata" "$out/fuzz_replay" "$root/gpuflow.h" >"$out/summary.json" ||
    { echo "fuzz_coverage: $COV export failed" >&2; exit 1; }
tr -d ' \n' <"$out/summary.json" | awk -v inputs="${inputs:-?}" '
    function field(s, key,    at, rest, c, v) {   # key:{"count":C,"covered":V  ->  "C V"
        at = index(s, "\"" key "\":{")
        if (!at) return ""
        rest = substr(s, at)
        if (!match(rest, /"count":[0-9]+/)) return ""
        c = substr(rest, RSTART + 8, RLENGTH - 8)
        if (!match(rest, /"covered":[0-9]+/)) return ""
        v = substr(rest, RSTART + 10, RLENGTH - 10)
        return c " " v
    }
    {
        at = index($0, "gpuflow.h\",\"summary\":{")
        if (!at) { print "fuzz_coverage: gpuflow.h is not in the coverage summary" > "/dev/stderr"; exit 1 }
        s = substr($0, at)
        split(field(s, "lines"), l, " "); split(field(s, "functions"), f, " ")
        if (l[1] == "" || f[1] == "") { print "fuzz_coverage: cannot read the summary" > "/dev/stderr"; exit 1 }
        printf "fuzz coverage of gpuflow.h (stub backend, %s inputs): lines %d/%d (%.1f%%), functions %d/%d (%.1f%%)\n",
               inputs, l[2], l[1], l[1] ? 100 * l[2] / l[1] : 0, f[2], f[1], f[1] ? 100 * f[2] / f[1] : 0
    }' || exit 1
