#!/bin/sh
# Compile-time contracts, checked by compiling small programs:
#   - defining only some of GPUFLOW_MALLOC / REALLOC / FREE is an error that says so;
#   - one macro per backend: GPUFLOW_<B> with gpuflow.h alone emits that backend;
#   - a backend macro without its vendor header, or without gpuflow_<b>.h beside gpuflow.h,
#     stops with an #error naming what to install or add (skipped where the header is on
#     the compiler's default path, so it cannot be taken away);
#   - GPUFLOW_STATIC builds warning-free under -Werror though the program calls one function.
# usage: compile_checks.sh BUILD_DIR 'CC FLAGS' [backend...]   (backends whose headers are here)
set -u
dir=$1/compile-checks; cc=$2; shift 2
mkdir -p "$dir"
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
skip() { echo "SKIP $1"; skipped=$((skipped + 1)); }
# The compiler without the vendor include directories the caller added.
plain=$(echo "$cc" | sed 's/-isystem [^ ]*//g')

for only in "GPUFLOW_MALLOC(n)=malloc(n)" "GPUFLOW_FREE(p)=free(p)" "GPUFLOW_MALLOC(n)=malloc(n) -DGPUFLOW_REALLOC(p,n)=realloc(p,n)"; do
    printf '#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\nint main(void){return 0;}\n' > "$dir/partial.c"
    if $cc -I. "-D$only" -c "$dir/partial.c" -o "$dir/partial.o" 2>"$dir/partial.err"; then
        fail "defining only -D$only compiled"
    elif grep -q "define all three of GPUFLOW_MALLOC, GPUFLOW_REALLOC and GPUFLOW_FREE" "$dir/partial.err"; then
        ok "defining only -D$only is refused with a message that says so"
    else
        fail "defining only -D$only failed without the message: $(head -c 300 "$dir/partial.err")"
    fi
done

for b in "$@"; do
    B=$(echo "$b" | tr a-z A-Z)
    printf '#define GPUFLOW_IMPLEMENTATION\n#define GPUFLOW_%s\n#include "gpuflow.h"\n#include <stdio.h>\nint main(void){ printf("%%d\\n", gf_backend_available(GF_BACKEND_%s) || 1); return 0; }\n' "$B" "$B" > "$dir/one_$b.c"
    if $cc -I. "$dir/one_$b.c" -o "$dir/one_$b" -pthread -ldl 2>"$dir/one_$b.err"; then
        ok "GPUFLOW_$B with gpuflow.h alone builds the $b backend"
    else
        fail "GPUFLOW_$B with gpuflow.h alone: $(head -c 300 "$dir/one_$b.err")"
    fi
done
# expect_error NAME FILE FLAGS TEXT: compiling FILE with FLAGS fails, and the output has TEXT
expect_error() {
    # shellcheck disable=SC2086
    if $plain $3 -c "$2" -o "$dir/x.o" 2>"$dir/x.err"; then fail "$1 compiled"
    elif grep -q "$4" "$dir/x.err"; then ok "$1: #error \"$4 ...\""
    else fail "$1 failed without the message: $(head -c 300 "$dir/x.err")"; fi
}
printf '#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\nint main(void){return 0;}\n' > "$dir/impl.c"
for pair in CUDA:cuda.h HIP:hip/hip_version.h OPENCL:CL/cl.h; do
    B=${pair%%:*} h=${pair#*:}
    if printf '#include <%s>\n' "$h" | $plain -E -x c - >/dev/null 2>&1; then
        skip "GPUFLOW_$B without <$h>: the header is on the compiler's default path here"
    else
        expect_error "GPUFLOW_$B without <$h>" "$dir/impl.c" "-I. -DGPUFLOW_$B" "gpuflow: GPUFLOW_$B needs"
    fi
done
mkdir -p "$dir/lone"
cp gpuflow.h "$dir/lone/"
for B in CUDA HIP OPENCL; do
    b=$(echo "$B" | tr A-Z a-z)
    expect_error "GPUFLOW_$B with gpuflow.h but no gpuflow_$b.h beside it" "$dir/impl.c" "-I$dir/lone -DGPUFLOW_$B" \
        "GPUFLOW_$B needs gpuflow_$b.h in the same directory as gpuflow.h"
done

# GPUFLOW_STATIC: every public function static in one translation unit that calls one of them.
printf '#define GPUFLOW_IMPLEMENTATION\n#define GPUFLOW_STATIC\n#include "gpuflow.h"\nint main(void){ gf_device *d; return gf_device_open(GF_BACKEND_STUB, 0, &d) != GF_OK; }\n' > "$dir/static.c"
if $cc -I. -c "$dir/static.c" -o "$dir/static.o" 2>"$dir/static.err"; then
    ok "GPUFLOW_STATIC: warning-free under -Werror with one function called"
else
    fail "GPUFLOW_STATIC: $(grep -c warning "$dir/static.err") warnings, first: $(grep -m1 warning "$dir/static.err")"
fi
for other in clang g++; do
    command -v $other >/dev/null 2>&1 || continue
    lang="-x c -std=c99"; [ $other = g++ ] && lang="-x c++ -std=c++11"
    if $other $lang -Wall -Wextra -Wpedantic -Werror -I. -c "$dir/static.c" -o "$dir/static.o" 2>"$dir/static.err"; then
        ok "GPUFLOW_STATIC under $other: warning-free under -Werror"
    else fail "GPUFLOW_STATIC under $other: $(grep -m1 warning "$dir/static.err")"; fi
done
for b in "$@"; do
    B=$(echo "$b" | tr a-z A-Z)
    if $cc -I. "-DGPUFLOW_$B" -c "$dir/static.c" -o "$dir/static_$b.o" 2>"$dir/static.err"; then
        ok "GPUFLOW_STATIC with GPUFLOW_$B: warning-free under -Werror"
    else
        fail "GPUFLOW_STATIC with GPUFLOW_$B: $(grep -m1 -E 'warning|error' "$dir/static.err")"
    fi
done

if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
