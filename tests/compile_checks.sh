#!/bin/sh
# Compile-time contracts, checked by compiling small programs:
#   - defining only some of GPUFLOW_MALLOC / REALLOC / FREE is an error that says so;
#   - one macro per backend: GPUFLOW_<B> with gpuflow.h alone emits that backend;
#   - a backend macro without its vendor header, or without gpuflow_<b>.h beside gpuflow.h,
#     stops with an #error naming what to install or add (skipped where the header is on
#     the compiler's default path, so it cannot be taken away);
#   - GPUFLOW_STATIC builds warning-free under -Werror though the program calls one function;
#     so does GPUFLOW_STUB_INLINE; two GPUFLOW_STATIC copies link and run under gcc's LTO;
#   - the implementation is warning-free as C++20 (g++, clang++); what every includer compiles
#     (declarations, kernel files as C) is under stricter flags, and its pragmas do not leak;
#   - only gf_/GF_/GPUFLOW_ names reach an includer: a program with its own rsqrtf builds, and a
#     kernel file compiled as C (gpuflow.h included again with GF_KERNELS) gets the dialect's;
#   - the implementation builds after <stdio.h> and <math.h> under -std=c99, and after a header
#     that already hid POSIX (<time.h>, <fcntl.h>, <pthread.h> with or without -pthread) stops with
#     an #error saying what to do;
#   - a program calling gf_device_open(GF_BACKEND_AUTO) builds warning-free at -O3 (-O2: tools/gfreplay),
#     and with NDEBUG (every backend here);
#   - gpuflow.h compiled on its own (-x c, as a library build does) is warning-free under clang;
#   - GPUFLOW_DEPRECATED makes a use warn with its message; GPUFLOW_NO_DEPRECATION_WARNINGS not;
#   - the driver tables are checked against the vendor headers: tests/cuda_sigcheck_fail.c and
#     tests/opencl_sigcheck_fail.c (an entry of another signature) must not compile, and
#     compile once nothing is redirected.
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
    if $cc -I. "-D$only" -fsyntax-only "$dir/partial.c" 2>"$dir/partial.err"; then
        fail "defining only -D$only compiled"
    elif grep -q "define all three of GPUFLOW_MALLOC, GPUFLOW_REALLOC and GPUFLOW_FREE" "$dir/partial.err"; then
        ok "defining only -D$only is refused with a message that says so"
    else
        fail "defining only -D$only failed without the message: $(head -c 300 "$dir/partial.err")"
    fi
done

# Optimised builds warn no more than the tests' -Og: gcc's -O2 and -O3 see through inlining
# (a bounded snprintf in gf_device_open's AUTO path was once -Wformat-truncation there). -O2 is
# make test's build of tools/gfreplay (every backend, -Werror); -O3 is here.
printf '#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\nint main(void) { gf_device *d; if (gf_device_open(GF_BACKEND_AUTO, 0, &d) != GF_OK) return 1; gf_device_close(d); return 0; }\n' > "$dir/optimised.c"
if $cc -O3 -I. -c "$dir/optimised.c" -o "$dir/optimised.o" 2>"$dir/optimised.err"; then ok "warning-free at -O3 (gf_device_open with AUTO inlined)"
else fail "-O3: $(head -c 300 "$dir/optimised.err")"; fi

# A release build: NDEBUG (or a GPUFLOW_ASSERT that reads nothing) leaves no variable or parameter
# read only by an assert (an outside review: OpenCL's marker callback warned).
defs=; for b in "$@"; do defs="$defs -DGPUFLOW_$(echo "$b" | tr a-z A-Z)"; done
# shellcheck disable=SC2086
if $cc -I. $defs -DNDEBUG -fsyntax-only "$dir/optimised.c" 2>"$dir/release.err"; then ok "warning-free with NDEBUG (${defs:- stub only})"
else fail "NDEBUG: $(grep -m1 -E 'warning|error' "$dir/release.err")"; fi

# gpuflow.h as a translation unit of its own (cc -x c -DGPUFLOW_IMPLEMENTATION -c gpuflow.h: a
# library build's one object), with the backends here: what it leaves unused warns only in the
# main file (clang: a static inline; MinGW's gcc: tests/windows.sh builds it so).
if command -v clang >/dev/null 2>&1; then
    defs=; for b in "$@"; do defs="$defs -DGPUFLOW_$(echo "$b" | tr a-z A-Z)"; done
    clang_cc=$(echo "$cc" | sed 's/^[^ ]*/clang/')
    # shellcheck disable=SC2086
    if $clang_cc -I. $defs -DGPUFLOW_IMPLEMENTATION -x c -fsyntax-only gpuflow.h 2>"$dir/alone.err"; then
        ok "gpuflow.h compiled on its own by clang (${defs:- stub only}): warning-free under -Werror"
    else fail "gpuflow.h compiled on its own by clang: $(grep -m1 -E 'warning|error' "$dir/alone.err")"; fi
fi

# GPUFLOW_DEPRECATED: a use of a call so marked warns, naming what replaces it (an error under
# -Werror); GPUFLOW_NO_DEPRECATION_WARNINGS silences it.
printf '#include "gpuflow.h"\nGPUFLOW_DEPRECATED("use gf_new_call instead") int gf_old_call(void);\nint main(void){ return gf_old_call(); }\nint gf_old_call(void) { return 0; }\n' > "$dir/deprecated.c"
if $cc -I. -c "$dir/deprecated.c" -o "$dir/deprecated.o" 2>"$dir/deprecated.err"; then
    fail "a call marked GPUFLOW_DEPRECATED was used without a warning"
elif grep -q "use gf_new_call instead" "$dir/deprecated.err"; then
    ok "a call marked GPUFLOW_DEPRECATED warns at its use, saying what replaces it"
else fail "GPUFLOW_DEPRECATED: $(head -c 300 "$dir/deprecated.err")"; fi
if $cc -I. -DGPUFLOW_NO_DEPRECATION_WARNINGS -c "$dir/deprecated.c" -o "$dir/deprecated.o" 2>"$dir/deprecated.err"; then
    ok "GPUFLOW_NO_DEPRECATION_WARNINGS silences it"
else fail "GPUFLOW_NO_DEPRECATION_WARNINGS: $(head -c 300 "$dir/deprecated.err")"; fi

for b in "$@"; do
    B=$(echo "$b" | tr a-z A-Z)
    printf '#define GPUFLOW_IMPLEMENTATION\n#define GPUFLOW_%s\n#include "gpuflow.h"\n#include <stdio.h>\nint main(void){ printf("%%d\\n", gf_backend_available(GF_BACKEND_%s) || 1); return 0; }\n' "$B" "$B" > "$dir/one_$b.c"
    if $cc -I. "$dir/one_$b.c" -o "$dir/one_$b" -pthread -ldl 2>"$dir/one_$b.err"; then
        ok "GPUFLOW_$B with gpuflow.h alone builds the $b backend"
    else
        fail "GPUFLOW_$B with gpuflow.h alone: $(head -c 300 "$dir/one_$b.err")"
    fi
done
# expect_error NAME FILE FLAGS TEXT: compiling FILE with FLAGS fails, and the output has TEXT.
# The checks that must fail stop at the front end (-fsyntax-only: a third of a full compile);
# the ones that must build compile whole (gcc warns of some things only after parsing).
expect_error() {
    # shellcheck disable=SC2086
    if $plain $3 -fsyntax-only "$2" 2>"$dir/x.err"; then fail "$1 compiled"
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

# GPUFLOW_STUB_INLINE (the stub runs work in the caller: no worker thread is compiled in).
printf '#define GPUFLOW_IMPLEMENTATION\n#define GPUFLOW_STUB_INLINE\n#include "gpuflow.h"\nint main(void){ gf_device *d; return gf_device_open(GF_BACKEND_STUB, 0, &d) != GF_OK; }\n' > "$dir/inline.c"
if $cc -I. -c "$dir/inline.c" -o "$dir/inline.o" 2>"$dir/inline.err"; then ok "GPUFLOW_STUB_INLINE: warning-free under -Werror"
else fail "GPUFLOW_STUB_INLINE: $(grep -m1 -E 'warning|error' "$dir/inline.err")"; fi

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
# GPUFLOW_DEBUG as C++ (a thread-local defined twice compiled as C, not as C++: found by review)
for other in g++ clang++; do
    command -v $other >/dev/null 2>&1 || continue
    if $other -x c++ -std=c++11 -DGPUFLOW_DEBUG -Wall -Wextra -Wpedantic -Werror -I. -fsyntax-only "$dir/static.c" 2>"$dir/static.err"; then
        ok "GPUFLOW_DEBUG under $other -std=c++11: warning-free under -Werror"
    else fail "GPUFLOW_DEBUG under $other -std=c++11: $(grep -m1 -E 'warning|error' "$dir/static.err")"; fi
done
# What every includer compiles (the declarations, and kernel files compiled as C) under an
# engine's stricter flags (a review): clang's -Wconditional-uninitialized in C, the dialect's
# C casts under -Wold-style-cast, g++'s -Wuseless-cast and a 0 pointer in GF_ARG in C++; the program's own code after
# them still warns (the header's pragmas are popped).
printf '#include "gpuflow.h"\n#define GF_KERNELS GF_KERNELS_AS_C\n#include "examples/reduce.gfk"\n#include "examples/histogram.gfk"\n#undef GF_KERNELS\nint user_code(double x);\nint user_code(double x) { return (int)x; }\nvoid user_args(gf_buffer *b, int n);\nvoid user_args(gf_buffer *b, int n) { gf_arg a[3] = { GF_ARG(n), GF_ARG_BUFFER(b), GF_ARG_BUFFER_READ(b) }; (void)a; }\n' > "$dir/strict_user.c"
for other in clang g++ clang++; do
    command -v $other >/dev/null 2>&1 || continue
    case $other in
        clang) flags="-x c -std=c99 -Wconditional-uninitialized" ;;
        g++) flags="-x c++ -std=c++11 -Wold-style-cast -Wuseless-cast -Wzero-as-null-pointer-constant" ;;
        *) flags="-x c++ -std=c++11 -Wold-style-cast -Wconditional-uninitialized -Wzero-as-null-pointer-constant" ;;
    esac
    # shellcheck disable=SC2086
    $other $flags -Wall -Wextra -Wpedantic -Wno-unused-function -I. -fsyntax-only "$dir/strict_user.c" 2>"$dir/strict.err"
    header=$(grep -c 'gpuflow.h.*warning\|gfk.*warning' "$dir/strict.err") own=$(grep -c 'strict_user.c:7.*old-style' "$dir/strict.err")
    expect_own=0; case $other in g++|clang++) expect_own=1 ;; esac
    if [ "$header" -eq 0 ] && [ "$own" -eq "$expect_own" ]; then ok "an includer under $other $flags: nothing of the header warns, the program's own cast still does"
    else fail "an includer under $other $flags: $header warnings from the header, $own of the program's: $(grep -m1 warning "$dir/strict.err")"; fi
done
# C++20 deprecates ++ and compound assignment on a volatile (gcc and clang warn by default).
for other in g++ clang++; do
    command -v $other >/dev/null 2>&1 || continue
    if $other -x c++ -std=c++20 -Wall -Wextra -Wpedantic -Werror -I. -fsyntax-only "$dir/static.c" 2>"$dir/static.err"; then
        ok "the implementation under $other -std=c++20: warning-free under -Werror"
    else fail "the implementation under $other -std=c++20: $(grep -m1 warning "$dir/static.err")"; fi
done
for b in "$@"; do
    B=$(echo "$b" | tr a-z A-Z)
    if $cc -I. "-DGPUFLOW_$B" -c "$dir/static.c" -o "$dir/static_$b.o" 2>"$dir/static.err"; then
        ok "GPUFLOW_STATIC with GPUFLOW_$B: warning-free under -Werror"
    else
        fail "GPUFLOW_STATIC with GPUFLOW_$B: $(grep -m1 -E 'warning|error' "$dir/static.err")"
    fi
done

# Link-time optimisation (gcc): two GPUFLOW_STATIC copies of the implementation in one program
# link and run, with every function in a partition of its own (the stub's fiber switch, in
# top-level asm, was a local symbol that its callers' partitions could not see) and with one
# partition for all (both copies' switch then went into one assembly: defined twice).
if $cc -v 2>&1 | grep -q '^gcc version'; then
    for n in 1 2; do
        printf '#define GPUFLOW_IMPLEMENTATION\n#define GPUFLOW_STATIC\n#include "gpuflow.h"\nint open_%s(void);\nint open_%s(void) { gf_device *d; if (gf_device_open(GF_BACKEND_STUB, 0, &d) != GF_OK) return 1; gf_device_close(d); return 0; }\n' $n $n > "$dir/lto$n.c"
    done
    printf 'int open_1(void);\nint open_2(void);\nint main(void) { return open_1() + open_2(); }\n' > "$dir/lto_main.c"
    for part in max one; do
        if $cc -O1 -flto=2 -flto-partition=$part -I. "$dir/lto1.c" "$dir/lto2.c" "$dir/lto_main.c" -o "$dir/lto_$part" -pthread -ldl -lm 2>"$dir/lto.err" &&
           "$dir/lto_$part"; then
            ok "gcc LTO (-flto-partition=$part), two GPUFLOW_STATIC copies: linked and ran"
        else fail "gcc LTO (-flto-partition=$part), two GPUFLOW_STATIC copies: $(grep -m1 -E 'error|undefined' "$dir/lto.err")"; fi
    done
fi

# The dialect's C words stay out of other includers; a kernel file compiled as C gets them.
printf '#include <math.h>\n#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\nstatic float rsqrtf(float x) { return 1.0f / sqrtf(x); }\nint main(void){ return rsqrtf(4.0f) == 0.5f ? 0 : 1; }\n' > "$dir/own.c"
for c in "$cc" "$(echo "$cc" | sed 's/^[^ ]*/clang/')"; do
    command -v "${c%% *}" >/dev/null 2>&1 || continue
    if $c -I. "$dir/own.c" -o "$dir/own" -pthread -ldl -lm 2>"$dir/own.err" && "$dir/own"; then
        ok "a program with its own rsqrtf builds and calls it (${c%% *})"
    else fail "a program with its own rsqrtf (${c%% *}): $(head -c 300 "$dir/own.err")"; fi
done
printf '#include <math.h>\n#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\n#define GF_KERNELS GF_KERNELS_AS_C\n#include "gpuflow.h"\nGF_KERNELS(GF_KERNEL(k, GF_PARAM(GF_GLOBAL float *, x)) { x[gf_global_id(0)] = rsqrtf(x[0]); })\nstatic const gf_stub_kernel ks[] = { GF_STUB_KERNEL(k) };\nint main(void){ return ks[0].fn ? 0 : 1; }\n' > "$dir/kernel_c.c"
if $cc -I. -c "$dir/kernel_c.c" -o "$dir/kernel_c.o" 2>"$dir/kernel_c.err"; then ok "a kernel file compiled as C gets the dialect's rsqrtf"
else fail "a kernel file compiled as C: $(head -c 300 "$dir/kernel_c.err")"; fi

# A block kernel's rules that the C form checks at compile time: a thread's id outside its
# GF_EACH_THREAD regions, or a region inside a region, does not compile; the right form does,
# warning-free, as C and as C++.
block_kernel() {   # block_kernel FILE BODY
    printf '#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\n#define GF_KERNELS GF_KERNELS_AS_C\n#include "gpuflow.h"\nGF_KERNELS(GF_BLOCK_KERNEL(k, GF_PARAM(GF_GLOBAL unsigned *, x)) { unsigned r; %s })\nstatic const gf_stub_kernel ks[] = { GF_STUB_KERNEL(k) };\nint main(void){ return ks[0].per_block ? 0 : 1; }\n' "$2" > "$1"
}
block_kernel "$dir/block_ok.c" 'for (r = 0; r < gf_local_size(0); r++) GF_EACH_THREAD { if (gf_local_id(0) == r) continue; x[gf_global_id(0)] += r + gf_group_id(0); }'
if $cc -I. -c "$dir/block_ok.c" -o "$dir/block_ok.o" 2>"$dir/block.err"; then ok "a block kernel compiles warning-free as C"
else fail "a block kernel as C: $(head -c 300 "$dir/block.err")"; fi
if command -v g++ >/dev/null 2>&1; then
    if g++ -x c++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -I. -c "$dir/block_ok.c" -o "$dir/block_ok.o" 2>"$dir/block.err"; then ok "... and as C++11"
    else fail "a block kernel as C++11: $(head -c 300 "$dir/block.err")"; fi
fi
block_kernel "$dir/block_outside.c" 'r = gf_local_id(0); GF_EACH_THREAD { x[gf_global_id(0)] = r; }'
if $cc -I. -fsyntax-only "$dir/block_outside.c" 2>"$dir/block.err"; then fail "a block kernel reading a thread id outside its regions compiled"
elif grep -q "thread_idx" "$dir/block.err"; then ok "a block kernel reading a thread id outside its regions does not compile"
else fail "a thread id outside the regions failed otherwise: $(head -c 300 "$dir/block.err")"; fi
# (without -Werror too: a wrong pointer type is only a warning in C, a wrong struct an error)
lax=$(echo "$cc" | sed 's/-Werror//g')
block_kernel "$dir/block_nested.c" '(void)r; GF_EACH_THREAD { GF_EACH_THREAD { x[gf_global_id(0)] = 1; } }'
if $lax -I. -fsyntax-only "$dir/block_nested.c" 2>"$dir/block.err"; then fail "a region inside a region compiled"
elif grep -q "gf__region_first" "$dir/block.err"; then ok "a region inside a region does not compile (without -Werror too)"
else fail "a region inside a region failed otherwise: $(head -c 300 "$dir/block.err")"; fi
printf '#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\n#define GF_KERNELS GF_KERNELS_AS_C\n#include "gpuflow.h"\nGF_KERNELS(GF_KERNEL(k, GF_PARAM(GF_GLOBAL unsigned *, x)) { GF_EACH_THREAD { x[gf_global_id(0)] = 1; } })\nint main(void){ return 0; }\n' > "$dir/region_in_kernel.c"
if $lax -I. -fsyntax-only "$dir/region_in_kernel.c" 2>"$dir/block.err"; then fail "a region in a GF_KERNEL compiled"
elif grep -q "gf__region_first" "$dir/block.err"; then ok "a region in a GF_KERNEL (not a block kernel) does not compile"
else fail "a region in a GF_KERNEL failed otherwise: $(head -c 300 "$dir/block.err")"; fi

# Atomics take 32-bit integers only: a float, a 64-bit or 16-bit or a const pointer does not compile as C
# (without -Werror too: a float's bits were summed as an integer, with a warning at most);
# unsigned and int compile warning-free, as C and as C++11.
atomic_kernel() {   # atomic_kernel FILE TYPE
    printf '#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\n#define GF_KERNELS GF_KERNELS_AS_C\n#include "gpuflow.h"\nGF_KERNELS(GF_KERNEL(k, GF_PARAM(GF_GLOBAL %s *, x), GF_PARAM(GF_GLOBAL double *, y)) { y[0] = gf_atomic_add(&x[0], 1) + gf_atomic_min(&x[0], 2) + gf_atomic_max(&x[0], 3) + gf_atomic_xchg(&x[0], 4) + gf_atomic_cas(&x[0], 4, 5); })\nstatic const gf_stub_kernel ks[] = { GF_STUB_KERNEL(k) };\nint main(void){ return ks[0].fn ? 0 : 1; }\n' "$2" > "$1"
}
for t in float double "unsigned long long" "unsigned short" "const unsigned"; do
    atomic_kernel "$dir/atomic_bad.c" "$t"
    if $lax -I. -fsyntax-only "$dir/atomic_bad.c" 2>"$dir/atomic.err"; then fail "an atomic on a $t compiled"
    else ok "an atomic on a $t does not compile (without -Werror too)"; fi
done
for t in unsigned int; do
    atomic_kernel "$dir/atomic_ok.c" "$t"
    if $cc -I. -c "$dir/atomic_ok.c" -o "$dir/atomic_ok.o" 2>"$dir/atomic.err" && { ! command -v g++ >/dev/null 2>&1 ||
       g++ -x c++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -I. -c "$dir/atomic_ok.c" -o "$dir/atomic_ok.o" 2>>"$dir/atomic.err"; }; then
        ok "atomics on an $t compile warning-free (C, C++11)"
    else fail "atomics on an $t: $(head -c 300 "$dir/atomic.err")"; fi
done

# Include order under -std=c99: system headers first.
printf '#include <stdio.h>\n#include <math.h>\n#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\nfloat rsqrtf(float x);\nint main(void){return 0;}\n' > "$dir/order.c"
if $cc -I. -c "$dir/order.c" -o "$dir/order.o" 2>"$dir/order.err"; then ok "<stdio.h> and <math.h> before the implementation (-std=c99): it builds"
else fail "<stdio.h> and <math.h> before the implementation: $(head -c 300 "$dir/order.err")"; fi
# (-pthread too: its _REENTRANT gave <pthread.h> POSIX 1995 threads, CLOCK_MONOTONIC but no
# pthread_condattr_setclock, and no #error caught it: an outside review)
for h in time.h pthread.h "pthread.h -pthread" fcntl.h; do
    hdr=${h%% *} extra=; [ "$hdr" != "$h" ] && extra=${h#* }
    printf '#include <%s>\n#define GPUFLOW_IMPLEMENTATION\n#include "gpuflow.h"\nint main(void){return 0;}\n' "$hdr" > "$dir/order_$hdr.c"
    # shellcheck disable=SC2086
    if printf '#include <%s>\n#if !defined(CLOCK_MONOTONIC) && !defined(O_NOFOLLOW) || defined(__GLIBC__) && defined(_PTHREAD_H) && !defined(PTHREAD_BARRIER_SERIAL_THREAD)\nhidden\n#endif\n' "$hdr" | $cc $extra -E -x c - 2>/dev/null | grep -q '^hidden$'; then
        expect_error "<$h> before the implementation (-std=c99)" "$dir/order_$hdr.c" "-I. $extra $(echo "$cc" | sed 's/^[^ ]* //')" "gpuflow: the .* needs POSIX 2008"
    elif $cc $extra -I. -c "$dir/order_$hdr.c" -o "$dir/order.o" 2>"$dir/order.err"; then ok "<$h> before the implementation: it builds (the header hid nothing)"
    else fail "<$h> before the implementation: $(head -c 300 "$dir/order.err")"; fi
done

# The driver tables' compile-time signature checks, both ways.
for pair in cuda:GF_SIGCHECK_ABI opencl:GF_SIGCHECK_OK; do
    b=${pair%%:*} ok_macro=${pair#*:}
    case " $* " in *" $b "*) ;; *) skip "signature check of the $b table: its headers are not here"; continue ;; esac
    if $cc -I. -fsyntax-only "tests/${b}_sigcheck_fail.c" 2>"$dir/sig.err"; then
        fail "tests/${b}_sigcheck_fail.c compiled: an entry of another signature went unseen"
    elif grep -q "distinct pointer types\|incompatible pointer types" "$dir/sig.err"; then
        ok "the $b table refuses an entry of another signature at compile time"
    else fail "tests/${b}_sigcheck_fail.c failed otherwise: $(head -c 300 "$dir/sig.err")"; fi
    if $cc -I. "-D$ok_macro" -c "tests/${b}_sigcheck_fail.c" -o "$dir/sig.o" 2>"$dir/sig.err"; then
        ok "the $b table matches the headers (-D$ok_macro)"
    else fail "tests/${b}_sigcheck_fail.c -D$ok_macro: $(head -c 300 "$dir/sig.err")"; fi
done

if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
