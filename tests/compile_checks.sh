#!/bin/sh
# Compile-time contracts, checked by compiling small programs:
#   - defining only some of GPUFLOW_MALLOC / REALLOC / FREE is an error that says so;
#   - one macro per backend: GPUFLOW_<B> with gpuflow.h alone emits that backend.
# usage: compile_checks.sh BUILD_DIR 'CC FLAGS' [backend...]   (backends whose headers are here)
set -u
dir=$1/compile-checks; cc=$2; shift 2
mkdir -p "$dir"
passed=0 failed=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

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
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
