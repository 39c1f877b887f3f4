#!/bin/sh
# Linux on other CPUs, cross-built (static) and run under qemu on the stub, one check per build
# and per run; skipped without the cross compiler, runs skipped without qemu.
#   aarch64: the conformance suite and the dialect tests (block barriers: the stub's
#            hand-written AArch64 fiber switch), each built twice, with the switch and with
#            ucontext (-DGF__FIBER_ASM=0), so the two can be compared;
#   i686:    a 32-bit host (size_t of 32 bits, 4-aligned uint64_t in structs; ucontext fibers): the
#            conformance suite, the bad-input suite and the reliability tests.
#   usage: tests/cross.sh BUILD_DIR aarch64|i686
set -u
arch=${2:-aarch64}
case $arch in
    aarch64) cc=aarch64-linux-gnu-gcc qemu_name=qemu-aarch64 tests="conformance dialect" switches="asm ucontext" ;;
    i686) cc=i686-linux-gnu-gcc qemu_name=qemu-i386 tests="conformance bad_input reliability" switches="auto" ;;
    *) echo "usage: tests/cross.sh BUILD_DIR aarch64|i686" >&2; exit 2 ;;
esac
out=${1:-build}/$arch
if ! command -v $cc >/dev/null 2>&1; then
    echo "notice: $cc not found: the $arch checks are skipped"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
mkdir -p "$out" || exit 1
qemu=$(command -v $qemu_name || command -v $qemu_name-static)
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
flags="-std=c99 -Wall -Wextra -Wpedantic -Werror -Og -static -pthread"
for t in $tests; do
    for switch in $switches; do
        def=; [ $switch = ucontext ] && def=-DGF__FIBER_ASM=0
        exe="$out/$t-$switch"
        if ! $cc $flags $def "tests/$t.c" -o "$exe" -ldl -lm; then fail "$arch build: tests/$t.c ($switch)"; continue; fi
        ok "$arch build: tests/$t.c ($switch)"
        if [ -z "$qemu" ]; then skipped=$((skipped + 1)); continue; fi
        log=$(timeout 300 "$qemu" "$exe" stub 2>&1); rc=$?
        last=$(echo "$log" | grep -v '^$' | tail -n 1)
        case $rc:$last in
            0:*" passed, 0 failed"*) ok "$qemu_name: $t stub ($switch): $last" ;;
            *) fail "$qemu_name: $t stub ($switch) (exit $rc)"; echo "$log" | grep '^FAIL' | head -n 5; echo "$log" | tail -n 4 ;;
        esac
    done
done
[ -z "$qemu" ] && echo "notice: $qemu_name not found: the $arch runs are skipped"
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
