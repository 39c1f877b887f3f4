#!/bin/sh
# A program on the stub under Valgrind, as engine developers run theirs: examples/histogram.c,
# whose kernel syncs its blocks (its threads run as fibers on heap stacks). memcheck must see
# no error and no leak, with the fiber switch written out and with ucontext; the build that does
# not tell Valgrind of the stacks (GPUFLOW_VALGRIND=0) must show errors, so the check is known to
# reach the fibers; DRD and helgrind run it to its end (their reports of gpuflow's atomics are
# not counted: ThreadSanitizer, `make sanitize`, is the race checker that knows them).
#   usage: tests/valgrind.sh BUILD_DIR "CC AND FLAGS"     Ends with `N passed, N failed[, N skipped]`.
set -u
out=$1 cc=$2
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
skip() { echo "SKIP $1"; skipped=$((skipped + 1)); }
summary() {
    if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
    [ "$failed" -eq 0 ]; exit
}
if ! command -v valgrind >/dev/null 2>&1 || ! valgrind --version >/dev/null 2>&1; then skip "Valgrind: not installed (Debian: valgrind)"; summary; fi
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
printf '#include <valgrind/valgrind.h>\nint main(void) { return RUNNING_ON_VALGRIND; }\n' > "$out/probe.c"
if ! $cc "$out/probe.c" -o "$out/probe" 2>/dev/null; then skip "Valgrind: <valgrind/valgrind.h> not found"; summary; fi

# build NAME FLAGS...: examples/histogram.c as $out/NAME
build() {
    name=$1; shift
    $cc "$@" -g -O1 -I. examples/histogram.c -o "$out/$name" -pthread -ldl -lm || { fail "examples/histogram.c does not build with $*"; return 1; }
}
# vg NAME TOOL ARGS...: the program under Valgrind in examples/ (it reads histogram.gfk there)
vg() {
    name=$1 tool=$2; shift 2
    (cd examples && GPUFLOW_BACKEND=stub timeout 240 valgrind --tool="$tool" "$@" "$out/$name") >"$out/$name.$tool.out" 2>&1
}
errors() { sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$out/$1.$2.out" | tail -1; }
ran()    { grep -q 'on stub: ok$' "$out/$1.$2.out"; }

for variant in "asm" "ucontext -DGF__FIBER_ASM=0"; do
    set -- $variant; name=histogram_$1; shift
    build "$name" "$@" || continue
    rc=0; vg "$name" memcheck --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect || rc=$?
    if [ "$rc" -eq 0 ] && ran "$name" memcheck && [ "$(errors "$name" memcheck)" = 0 ]; then
        ok "memcheck, fibers switched by $name: no error, no leak"
    else fail "memcheck, fibers switched by $name: exit $rc, $(errors "$name" memcheck) errors: $(grep -m3 -A3 'Invalid\|uninitialised\|lost in' "$out/$name.memcheck.out" | head -c 600)"; fi
done

# the stacks a device keeps between launches, used again (tests/valgrind_relaunch.c), by one
# block runner and by two
if $cc -g -O1 -I. tests/valgrind_relaunch.c -o "$out/relaunch" -pthread -ldl -lm; then
    for threads in 1 2; do
        rc=0
        GPUFLOW_STUB_THREADS=$threads timeout 240 valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            "$out/relaunch" >"$out/relaunch.$threads.out" 2>&1 || rc=$?
        if [ "$rc" -eq 0 ] && grep -q 'relaunched: ok' "$out/relaunch.$threads.out"; then ok "memcheck, a kernel that syncs launched three times ($threads block thread(s)): no error"
        else fail "memcheck, three launches ($threads block thread(s)): exit $rc: $(grep -m3 -A3 'Invalid\|uninitialised\|lost in\|relaunched' "$out/relaunch.$threads.out" | head -c 600)"; fi
    done
else fail "tests/valgrind_relaunch.c does not build"; fi

if build histogram_unregistered -DGPUFLOW_VALGRIND=0; then
    vg histogram_unregistered memcheck -q || true
    n=$(errors histogram_unregistered memcheck); [ -n "$n" ] || n=$(grep -c 'Invalid\|switching stacks' "$out/histogram_unregistered.memcheck.out")
    if [ "${n:-0}" -gt 0 ]; then ok "without GPUFLOW_VALGRIND memcheck reports the fibers' stacks ($n errors): the check above reaches them"
    else fail "without GPUFLOW_VALGRIND memcheck reported nothing: the check does not reach the fibers"; fi
fi

if [ -x "$out/histogram_asm" ]; then
    for tool in drd helgrind; do
        rc=0; vg histogram_asm "$tool" || rc=$?
        if [ "$rc" -eq 0 ] && ran histogram_asm "$tool" && ! grep -q 'Assertion' "$out/histogram_asm.$tool.out"; then ok "$tool runs the program to its end"
        else fail "$tool: exit $rc: $(grep -m1 -B2 -A2 'Assertion\|error' "$out/histogram_asm.$tool.out" | head -c 600)"; fi
    done
fi
summary
