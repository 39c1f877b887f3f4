#!/bin/sh
# Windows, built with MinGW (x86_64-w64-mingw32-gcc) and run under wine64 on the stub: the
# conformance suite, the thread test, the reliability, race, dialect and interop tests (dialect
# again with Windows fibers, run inline), and every
# example. Also compile checks of the CUDA and OpenCL backends for Windows (no driver there).
# One check per build and per run; skipped without MinGW, runs skipped without wine64. PART
# (tests or examples; both when left out) lets make test run the two halves side by side, each
# in its own wine prefix. The examples build at -O0 (twice as fast to compile; what they check
# is that each builds and runs there), the tests at -Og.
#   usage: tests/windows.sh BUILD_DIR [PART]
set -u
cc=x86_64-w64-mingw32-gcc
out=${1:-build}/windows
part=${2:-all}
case $part in all|tests|examples) ;; *) echo "usage: tests/windows.sh BUILD_DIR [tests|examples]" >&2; exit 2 ;; esac
wine=$(command -v wine64 || ls /usr/lib/wine/wine64 2>/dev/null)
if ! command -v $cc >/dev/null 2>&1; then
    echo "notice: $cc not found: the Windows checks are skipped"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
mkdir -p "$out/CL" || exit 1
# CL/cl.h is plain C for every platform; a copy keeps Linux's /usr/include off MinGW's path.
[ -f /usr/include/CL/cl.h ] && cp /usr/include/CL/*.h "$out/CL/"
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
flags="-std=c99 -Wall -Wextra -Wpedantic -Werror -static -pthread"

compile_only() {   # name, define, include flags
    printf '#define GPUFLOW_IMPLEMENTATION\n%s\n#include "gpuflow.h"\nint main(void) { gf_device *d; return gf_device_open(GF_BACKEND_AUTO, 0, &d) == GF_OK ? 0 : 1; }\n' "$2" > "$out/$1.c"
    if $cc $flags -Og -I. $3 "$out/$1.c" -o "$out/$1.exe"; then ok "windows build: $1"; else fail "windows build: $1"; fi
}
if [ "$part" != examples ]; then
    compile_only stub "" ""
    [ -f /usr/local/cuda/include/cuda.h ] && compile_only cuda "#define GPUFLOW_CUDA" "-I/usr/local/cuda/include"
    [ -f "$out/CL/cl.h" ] && compile_only opencl "#define GPUFLOW_OPENCL" "-I$out"
fi

if [ -z "$wine" ]; then
    echo "notice: wine64 not found: the Windows runs are skipped"
    skipped=1
else
    export WINEDEBUG=-all WINEPREFIX="$(cd "$out" && pwd)/wineprefix-$part"
    run() {   # what, exe, args...: it must exit 0, and a test's summary must say 0 failed
        what=$1; exe=$2; shift 2
        log=$(cd "$out" && timeout 300 "$wine" "./$exe" "$@" 2>&1); rc=$?
        last=$(echo "$log" | tr -d '\r' | grep -v '^$' | tail -n 1)
        case $rc:$last in
            0:*" passed, 0 failed"*|0:*) ok "wine: $what: $last" ;;
            *) fail "wine: $what (exit $rc)"; echo "$log" | tail -n 8 ;;
        esac
    }
    # The implementation is compiled once per optimisation level and linked in, as make test does
    # natively: the tests that take GF_TEST_LINKED_IMPL, and the examples as copies with their
    # GPUFLOW_IMPLEMENTATION line taken out (tests/examples.sh says why). Each program is built
    # while the one before it runs under wine (the two overlap on two cores).
    impl() {   # opt: $out/gpuflow_impl-PART-OPT.o, compiled on first use (each part its own)
        [ -f "$out/gpuflow_impl-$part$1.o" ] ||
            $cc $flags "$1" -I. -DGPUFLOW_IMPLEMENTATION -x c -c gpuflow.h -o "$out/gpuflow_impl-$part$1.o"
    }
    build() {   # source: builds $out/NAME.exe, its status in $out/NAME.rc, its output in $out/NAME.log
        b=$(basename "$1" .c) opt=-Og src=$1 linked=yes defs=
        case $1 in
            examples/*) opt=-O0 src=$out/examples/$b.c ;;
            tests/reliability.c) linked=no ;;   # its own allocator: the implementation in the same file
            tests/*) defs=-DGF_TEST_LINKED_IMPL ;;
        esac
        if [ $linked = no ]; then $cc $flags $opt -I. -Itests "$src" -o "$out/$b.exe" -lm
        else impl $opt && $cc $flags $opt -I. -Itests $defs "$src" "$out/gpuflow_impl-$part$opt.o" -o "$out/$b.exe" -lm
        fi > "$out/$b.log" 2>&1; echo $? > "$out/$b.rc"
    }
    rm -f "$out/gpuflow_impl-$part"-*.o
    if [ "$part" != tests ]; then
        mkdir -p "$out/examples" || exit 1
        for f in examples/*; do sed '/^#define GPUFLOW_IMPLEMENTATION$/d' "$f" > "$out/$f"; done
    fi
    tests="tests/conformance.c tests/threads.c tests/reliability.c tests/races.c tests/dialect.c tests/interop.c"
    case $part in
        tests) set -- $tests ;;
        examples) set -- examples/*.c ;;
        all) set -- $tests examples/*.c ;;
    esac
    build "$1" & pid=$!
    while [ $# -gt 0 ]; do
        src=$1; shift
        wait $pid
        if [ $# -gt 0 ]; then build "$1" & pid=$!; fi
        name=$(basename "$src" .c)
        if [ "$(cat "$out/$name.rc")" != 0 ]; then fail "windows build: $src"; cat "$out/$name.log"; continue; fi
        case $src in
            tests/*) run "$name stub" "$name.exe" stub ;;
            *) run "example $name" "$name.exe" ;;
        esac
    done
    # Windows fibers (the fallback where the asm switch is not built, -DGF__FIBER_ASM=0) with the
    # work run inline on the program's thread: the barriers hold, and that thread is a thread again
    if [ "$part" != examples ]; then
        if $cc $flags -Og -I. -Itests -DGF__FIBER_ASM=0 -DGPUFLOW_STUB_INLINE tests/dialect.c -o "$out/dialect_fibers.exe" -lm; then
            run "dialect stub (Windows fibers, inline)" dialect_fibers.exe stub
        else fail "windows build: tests/dialect.c with Windows fibers, inline"; fi
    fi
    # a misspelt switch is named on Windows too (the environment read through _environ)
    if [ "$part" != examples ] && [ -f "$out/stub.exe" ]; then
        log=$(cd "$out" && GPUFLOW_RACECHECK=1 timeout 120 "$wine" ./stub.exe 2>&1 | tr -d '\r')
        if echo "$log" | grep -q "GPUFLOW_RACECHECK is not a variable gpuflow reads"; then ok "wine: a misspelt GPUFLOW_ variable is named in a warning"
        else fail "wine: a misspelt GPUFLOW_ variable got no warning"; echo "$log" | tail -n 3; fi
    fi
fi
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
