#!/bin/sh
# Debugging an unmodified program from the environment: tests/env_debug.c (no logger, nothing
# of gpuflow's debugging in its code) run under each switch, its stderr checked.
#   usage: tests/env_debug.sh BUILD_DIR "CC AND FLAGS"     Ends with `N passed, N failed`.
set -u
out=$1 cc=$2
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
mkdir -p "$out" || exit 1
if ! $cc -I. tests/env_debug.c -o "$out/env_debug" -pthread -ldl; then
    echo "FAIL tests/env_debug.c does not build"; echo "0 passed, 1 failed"; exit 1
fi
# run VARS...: the program under env VARS (the GPUFLOW_ switches of the caller's own
# environment are cleared first), stderr in $out/err
run() {
    env -u GPUFLOW_LOG -u GPUFLOW_RACE_CHECK -u GPUFLOW_HANG_MS -u GPUFLOW_SYNC_DEBUG -u GPUFLOW_SYNC -u GPUFLOW_STATS \
        -u GPUFLOW_TRACE "$@" "$out/env_debug" \
        >"$out/out" 2>"$out/err"
}
has()   { grep -q "$1" "$out/err"; }
lines() { grep -c '^gpuflow: ' "$out/err"; }

run
if [ "$(lines)" -eq 0 ] && grep -q '^done$' "$out/out"; then ok "no switch: nothing on stderr (a vendored library says nothing unless asked)"
else fail "no switch: stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_LOG=error
if has '^gpuflow: gf_buffer_create: size is 0$' && ! has 'race'; then ok "GPUFLOW_LOG=error: the failed call, one line, prefixed gpuflow:"
else fail "GPUFLOW_LOG=error: stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_LOG=ERROR   # its words in any case, as every switch's
if has '^gpuflow: gf_buffer_create: size is 0$' && ! has 'expected error, warning'; then ok "GPUFLOW_LOG=ERROR: read as error"
else fail "GPUFLOW_LOG=ERROR: stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_RACE_CHECK=1
if has "^gpuflow: race: buffer .* written by copy-to-device on 'stream 1', read by copy-to-host on 'stream 2'"; then
    ok "GPUFLOW_RACE_CHECK=1: the race report reaches stderr with no logger installed"
else fail "GPUFLOW_RACE_CHECK=1: no race report on stderr: $(head -c 300 "$out/err")"; fi
if has '^gpuflow: gf_buffer_create: size is 0$'; then ok "GPUFLOW_RACE_CHECK=1: errors too (the default level while a switch is on is warning: errors and warnings)"
else fail "GPUFLOW_RACE_CHECK=1: the failed call is missing: $(head -c 300 "$out/err")"; fi

# abort: a CI job that reads only the exit status sees the race (an outside review: it exited 0)
rc=0; (ulimit -c 0 2>/dev/null; run GPUFLOW_RACE_CHECK=abort) || rc=$?   # no core file left behind
if [ "$rc" -ne 0 ] && has "^gpuflow: GPUFLOW_RACE_CHECK=abort: the process ends at its first race: race: buffer " && ! grep -q '^done$' "$out/out"; then
    ok "GPUFLOW_RACE_CHECK=abort: the first race ends the process (exit status $rc), said on stderr"
else fail "GPUFLOW_RACE_CHECK=abort: exit status $rc; stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_RACE_CHECK=1 GPUFLOW_LOG=off
if [ "$(lines)" -eq 0 ]; then ok "GPUFLOW_LOG=off silences even a switch's reports"
else fail "GPUFLOW_LOG=off: stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_HANG_MS=100
if has "^gpuflow: .*100 ms" || has "^gpuflow: .*still waiting\|^gpuflow: .*hang"; then ok "GPUFLOW_HANG_MS=100: the hang report reaches stderr"
else fail "GPUFLOW_HANG_MS=100: no hang report on stderr: $(head -c 400 "$out/err")"; fi
if has "kernel 'slow_kernel' is running now"; then ok "GPUFLOW_HANG_MS=100: the report names the kernel that does not end"
else fail "GPUFLOW_HANG_MS=100: the running kernel is not named: $(head -c 600 "$out/err")"; fi

run GPUFLOW_SYNC_DEBUG=warn
if has "^gpuflow: GPUFLOW_SYNC_DEBUG: gf_copy_to_host holds the host until the copy is done"; then ok "GPUFLOW_SYNC_DEBUG=warn: hidden waits reach stderr"
else fail "GPUFLOW_SYNC_DEBUG=warn: stderr has: $(head -c 300 "$out/err")"; fi
# a switch's words in any case (WARN was refused), set by the program after its open (its
# warnings were lost: the level was read once), and a value not understood named once (it was
# at every wait)
for how in GPUFLOW_SYNC_DEBUG=WARN ENV_DEBUG_LATE_SYNC_DEBUG=warn; do
    run "$how"
    if has "^gpuflow: GPUFLOW_SYNC_DEBUG: gf_copy_to_host holds the host until the copy is done"; then ok "$how: hidden waits reach stderr"
    else fail "$how: stderr has: $(head -c 300 "$out/err")"; fi
done
run GPUFLOW_SYNC_DEBUG=sometimes
if [ "$(grep -c 'GPUFLOW_SYNC_DEBUG=sometimes: expected warn, error or off' "$out/err")" -eq 1 ]; then ok "GPUFLOW_SYNC_DEBUG=a value not understood: named once"
else fail "GPUFLOW_SYNC_DEBUG=sometimes: stderr has: $(head -c 300 "$out/err")"; fi
run GPUFLOW_RACE_CHECK=always
if has "GPUFLOW_RACE_CHECK=always is not understood (1, on, yes, true, abort or 0"; then ok "GPUFLOW_RACE_CHECK=a value not understood: the message lists abort"
else fail "GPUFLOW_RACE_CHECK=always: stderr has: $(head -c 300 "$out/err")"; fi
# a switch turned off in any words says nothing (OFF, No, 00 turned stderr logging on)
for how in GPUFLOW_SYNC=OFF GPUFLOW_STATS=No GPUFLOW_HANG_MS=00 GPUFLOW_HANG_MS=off GPUFLOW_RACE_CHECK=FALSE GPUFLOW_FAULTS=off GPUFLOW_LOG=no; do
    run "$how"
    if [ "$(lines)" -eq 0 ]; then ok "$how: nothing on stderr"
    else fail "$how: stderr has: $(head -c 300 "$out/err")"; fi
done
# GPUFLOW_TRACE=0 or off, GPUFLOW_RECORD=0: off, not a file of that name
mkdir -p "$out/offdir" && rm -f "$out/offdir/"*
for how in GPUFLOW_TRACE=0 GPUFLOW_TRACE=off GPUFLOW_RECORD=0; do
    (cd "$out/offdir" && env -u GPUFLOW_LOG -u GPUFLOW_TRACE -u GPUFLOW_RECORD "$how" ../env_debug >/dev/null 2>"../err")
    if [ -z "$(ls "$out/offdir")" ] && [ "$(lines)" -eq 0 ]; then ok "$how: off, no file named so"
    else fail "$how: files: $(ls "$out/offdir"); stderr: $(head -c 300 "$out/err")"; rm -f "$out/offdir/"*; fi
done

run GPUFLOW_SYNC=1
if has "^gpuflow: GPUFLOW_SYNC: launch of 'bad_sync' on stream 'stream 3' failed: " && grep -q '^done$' "$out/out"; then
    ok "GPUFLOW_SYNC=1: the launch that fails is named with its kernel and stream, at the launch"
else fail "GPUFLOW_SYNC=1: stderr has: $(head -c 400 "$out/err")"; fi
if has "^gpuflow: GPUFLOW_SYNC: stream 'stream 3' failed before this fill" && ! has "^gpuflow: GPUFLOW_SYNC: fill on stream 'stream 3' failed"; then
    ok "GPUFLOW_SYNC=1: an operation after the failure is not named as failing itself (a failure review)"
else fail "GPUFLOW_SYNC=1: the fill after the failed launch: $(grep fill "$out/err" | head -c 400)"; fi

run GPUFLOW_STATS=1
if has "^gpuflow: GPUFLOW_STATS: 'gpuflow CPU stub' (stub 0) at close" && has "^gpuflow: GPUFLOW_STATS:   memory device " &&
   has "^gpuflow: GPUFLOW_STATS:   memory pending  0 bytes in 0 (peak 1024 bytes" &&
   has "^gpuflow: GPUFLOW_STATS:   stream 'gpuflow/sync': 1 operations, 0 launches, 1 copies (1024 bytes)"; then
    ok "GPUFLOW_STATS=1: memory by kind with peaks, and each stream still open (here the device's own), at close"
else fail "GPUFLOW_STATS=1: stderr has: $(head -c 400 "$out/err")"; fi

rm -f "$out/trace.json"
run GPUFLOW_TRACE="$out/trace.json"
if [ -s "$out/trace.json" ] && grep -q '"traceEvents"' "$out/trace.json" && grep -q "copy" "$out/trace.json" && has "GPUFLOW_TRACE: the trace of"; then
    ok "GPUFLOW_TRACE=file: the whole run profiled, its Perfetto trace written at close"
else fail "GPUFLOW_TRACE: no trace ($(ls -l "$out/trace.json" 2>&1)); stderr: $(head -c 300 "$out/err")"; fi
# two devices, one file: the second close wrote over the first's trace (an outside review)
rm -f "$out/trace.json"
run GPUFLOW_TRACE="$out/trace.json" GPUFLOW_STUB_DEVICES=2
procs=$(grep -c '"process_name"' "$out/trace.json" 2>/dev/null)
if [ "$procs" = 2 ] && grep -q '"gpuflow CPU stub #1"' "$out/trace.json" && grep -q '"gpuflow CPU stub"' "$out/trace.json"; then
    ok "GPUFLOW_TRACE with two devices: one file, each device a process of its own"
else fail "GPUFLOW_TRACE with two devices: $procs processes in the file; stderr: $(head -c 300 "$out/err")"; fi
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP the two devices' trace as JSON: no python3"; skipped=$((skipped + 1))
elif python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/trace.json" 2>"$out/json.err"; then ok "GPUFLOW_TRACE with two devices: the file is JSON"
else fail "GPUFLOW_TRACE with two devices: not JSON: $(head -c 300 "$out/json.err")"; fi
# a FIFO (or /dev/stdout piped): gpuflow read the file first, to add to it, and that read waited
# for ever (a review); written whole now
rm -f "$out/fifo" "$out/fifo.json"
if command -v mkfifo >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 && mkfifo "$out/fifo"; then
    cat "$out/fifo" > "$out/fifo.json" &
    reader=$!
    rc=0; timeout 60 env GPUFLOW_TRACE="$out/fifo" "$out/env_debug" >"$out/out" 2>"$out/err" || rc=$?
    kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
    if [ "$rc" -eq 0 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/fifo.json" 2>/dev/null; then ok "GPUFLOW_TRACE=a FIFO: the trace is written through it, whole"
    else fail "GPUFLOW_TRACE=a FIFO: exit $rc (124: it waited for ever); $(head -c 200 "$out/fifo.json")"; fi
else echo "SKIP GPUFLOW_TRACE=a FIFO: no mkfifo or python3"; skipped=$((skipped + 1)); fi
# a FIFO that no process reads: the close waited for a reader for ever (a review); refused, said
rm -f "$out/fifo"
if command -v mkfifo >/dev/null 2>&1 && mkfifo "$out/fifo"; then
    rc=0; timeout 60 env GPUFLOW_TRACE="$out/fifo" "$out/env_debug" >"$out/out" 2>"$out/err" || rc=$?
    if [ "$rc" -eq 0 ] && grep -q "a FIFO that no process reads" "$out/err"; then ok "GPUFLOW_TRACE=a FIFO no one reads: said, and the program ends"
    else fail "GPUFLOW_TRACE=a FIFO no one reads: exit $rc (124: it waited for ever); $(head -c 300 "$out/err")"; fi
else echo "SKIP GPUFLOW_TRACE=a FIFO no one reads: no mkfifo"; skipped=$((skipped + 1)); fi
# a program that follows a locale writing "0,5": the trace's numbers were written so, and the
# file was not JSON (a review). The locale is built here (Debian: locales).
rm -rf "$out/loc" "$out/trace.json"; mkdir -p "$out/loc"
if ! command -v python3 >/dev/null 2>&1 || ! command -v localedef >/dev/null 2>&1 || [ ! -f /usr/share/i18n/locales/de_DE ] ||
   ! localedef -i de_DE -f UTF-8 "$out/loc/de_DE.UTF-8" >/dev/null 2>&1; then
    echo "SKIP the trace under a decimal-comma locale: no python3, or no de_DE locale to build (Debian: locales)"; skipped=$((skipped + 1))
else
    run LOCPATH="$out/loc" LC_ALL=de_DE.UTF-8 GPUFLOW_TRACE="$out/trace.json"
    if ! grep -q '^decimal point ,$' "$out/out"; then fail "the de_DE locale did not take: $(head -c 200 "$out/out")"
    elif python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/trace.json" 2>"$out/json.err" && grep -q '"ts":[0-9]*\.[0-9]' "$out/trace.json"; then
        ok "GPUFLOW_TRACE in a program whose locale writes a decimal comma: the file is JSON"
    else fail "GPUFLOW_TRACE under a decimal-comma locale: not JSON: $(head -c 300 "$out/json.err")"; fi
fi

run GPUFLOW_RACECHECK=1
if has "^gpuflow: GPUFLOW_RACECHECK is not a variable gpuflow reads"; then ok "a misspelt GPUFLOW_ variable is named in a warning"
else fail "GPUFLOW_RACECHECK=1: stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_RECORD=/nonexistent-dir/run.gfrec
if has '^gpuflow: GPUFLOW_RECORD=/nonexistent-dir/run.gfrec: ' && grep -q '^done$' "$out/out"; then
    ok "GPUFLOW_RECORD=file that cannot be opened: named in a warning (it was silent), and the program runs"
else fail "GPUFLOW_RECORD=/nonexistent-dir/run.gfrec: stderr has: $(head -c 300 "$out/err")"; fi

# a value gpuflow cannot follow is heard with no switch on, and turns on no other message
run GPUFLOW_STUB_THREADS=abc
if has '^gpuflow: GPUFLOW_STUB_THREADS=abc is not understood' && ! has 'size is 0' && grep -q '^done$' "$out/out"; then
    ok "GPUFLOW_STUB_THREADS=abc: named in a warning with no switch on (it was silent), and nothing else is"
else fail "GPUFLOW_STUB_THREADS=abc: stderr has: $(head -c 300 "$out/err")"; fi
run GPUFLOW_STUB_THREADS=' 4'   # strtol skipped the space: read strictly, as the header says (a review)
if has '^gpuflow: GPUFLOW_STUB_THREADS= 4 is not understood' && grep -q '^done$' "$out/out"; then ok "GPUFLOW_STUB_THREADS=' 4': a leading space is not understood either"
else fail "GPUFLOW_STUB_THREADS=' 4': stderr has: $(head -c 300 "$out/err")"; fi

for v in -1 99999999999999999999999; do   # strtoull read both as huge limits (review S)
    run GPUFLOW_RECORD="$out/limit.gfrec" GPUFLOW_RECORD_LIMIT=$v
    if has "^gpuflow: GPUFLOW_RECORD_LIMIT=$v: expected a number of bytes" && grep -q '^done$' "$out/out"; then
        ok "GPUFLOW_RECORD_LIMIT=$v: named in a warning, the default limit holds"
    else fail "GPUFLOW_RECORD_LIMIT=$v: stderr has: $(head -c 300 "$out/err")"; fi
    rm -f "$out/limit.gfrec"
done

run GPUFLOW_BACKEND=bogus
if has '^gpuflow: GPUFLOW_BACKEND=bogus: expected one of' && grep -q '^auto refused$' "$out/out" && grep -q '^done$' "$out/out"; then
    ok "GPUFLOW_BACKEND=bogus: AUTO's open fails and the warning says why (it was silent)"
else fail "GPUFLOW_BACKEND=bogus: stderr has: $(head -c 300 "$out/err"); stdout: $(head -c 100 "$out/out")"; fi

run GPUFLOW_STUB_DEVICES=2
if [ "$(lines)" -eq 0 ]; then ok "GPUFLOW_STUB_DEVICES=2 is no debugging switch: nothing on stderr (it printed every refused call)"
else fail "GPUFLOW_STUB_DEVICES=2: stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_RACECHECK=1
if [ "$(lines)" -eq 1 ]; then ok "a misspelt GPUFLOW_ variable is named, and turns on no other message"
else fail "GPUFLOW_RACECHECK=1: stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_LOG=warn GPUFLOW_RACECHECK=1
if has '^gpuflow: GPUFLOW_RACECHECK is not a variable gpuflow reads'; then ok "a GPUFLOW_LOG value not understood does not silence the other variables' warnings"
else fail "GPUFLOW_LOG=warn GPUFLOW_RACECHECK=1: stderr has: $(head -c 300 "$out/err")"; fi

run GPUFLOW_LOG=loud
if has '^gpuflow: GPUFLOW_LOG=loud: expected error, warning, info or off'; then ok "GPUFLOW_LOG=loud: the value is named and ignored"
else fail "GPUFLOW_LOG=loud: stderr has: $(head -c 300 "$out/err")"; fi

if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
