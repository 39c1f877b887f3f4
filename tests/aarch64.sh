#!/bin/sh
# AArch64 Linux, cross-built (aarch64-linux-gnu-gcc, static) and run under qemu-aarch64 on the
# stub: the conformance suite and the dialect tests (block barriers: the stub's hand-written
# AArch64 fiber switch), each built twice, with the switch and with ucontext
# (-DGF__FIBER_ASM=0), so the two can be compared. One check per build and per run; skipped
# without the cross compiler, runs skipped without qemu-aarch64.
#   usage: tests/aarch64.sh BUILD_DIR
set -u
cc=aarch64-linux-gnu-gcc
out=${1:-build}/aarch64
if ! command -v $cc >/dev/null 2>&1; then
    echo "notice: $cc not found: the AArch64 checks are skipped"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
mkdir -p "$out" || exit 1
qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static)
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
flags="-std=c99 -Wall -Wextra -Wpedantic -Werror -Og -static -pthread"
for t in conformance dialect; do
    for switch in asm ucontext; do
        def=; [ $switch = ucontext ] && def=-DGF__FIBER_ASM=0
        exe="$out/$t-$switch"
        if ! $cc $flags $def "tests/$t.c" -o "$exe" -ldl -lm; then fail "aarch64 build: tests/$t.c ($switch)"; continue; fi
        ok "aarch64 build: tests/$t.c ($switch)"
        if [ -z "$qemu" ]; then skipped=$((skipped + 1)); continue; fi
        log=$(timeout 300 "$qemu" "$exe" stub 2>&1); rc=$?
        last=$(echo "$log" | grep -v '^$' | tail -n 1)
        case $rc:$last in
            0:*" passed, 0 failed"*) ok "qemu-aarch64: $t stub ($switch): $last" ;;
            *) fail "qemu-aarch64: $t stub ($switch) (exit $rc)"; echo "$log" | tail -n 8 ;;
        esac
    done
done
[ -z "$qemu" ] && echo "notice: qemu-aarch64 not found: the AArch64 runs are skipped"
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
