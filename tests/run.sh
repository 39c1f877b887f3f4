#!/bin/sh
# Runs each test command given as an argument, TEST_JOBS at a time (default: the number of
# cores; 1 runs them one by one, in order), shows each one's output as a block when it ends,
# and sums the summary lines (`N passed, N failed[, N skipped]`, the last one each command
# prints) into one final line of the same form. A command that crashes, exits non-zero, runs
# past TEST_TIMEOUT seconds (default 120) or prints no summary line counts as one more
# failure. Before the final line, a recap names each failed command and its first FAIL lines
# (a CI log that keeps only its tail still says what failed). Exits 1 if anything failed. Commands must not share output files: each writes
# under its own build directory. A command written "then: CMD" starts only after the one
# before it has ended (it uses what that one made).
set -u
limit=${TEST_TIMEOUT:-120}
jobs=${TEST_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
case $jobs in ''|*[!0-9]*|0) jobs=1 ;; esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuflow-test.XXXXXX") || exit 1
passed=0 failed=0 skipped=0
recap=   # the keys of the commands that failed, in the order they ended
total=$# running=0 pending=
# Ctrl-C or TERM stops the commands still running (a background command ignores the terminal's
# INT, and timeout puts its command in a process group of its own): each one's timeout (or sh)
# gets TERM, which it passes on to the whole command, and is waited for.
stop_all() {
    for k in $pending; do
        [ -f "$dir/$k.pid" ] && kill -TERM "$(cat "$dir/$k.pid")" 2>/dev/null
    done
    wait
}
trap 'rm -rf "$dir"' EXIT
# The tests write under build/ and remove what they write elsewhere: the working directory's
# entries are listed before and after (editors' dot and backup files aside), and one that
# appeared is a failure (a test that left its recording in the checkout went unseen).
entries() { ls -A | grep -v -e '^[.#]' -e '~$' | sort; }
entries >"$dir/cwd.before"
trap 'stop_all; exit 130' INT TERM

launch() {   # launch K CMD: runs CMD in the background; its output in K.out, then K.rc holds "status seconds"
    (
        t0=$(date +%s)
        if command -v timeout >/dev/null 2>&1; then
            timeout -k 10 "$limit" sh -c "$2" >"$dir/$1.out" 2>&1 </dev/null &
        else
            sh -c "$2" >"$dir/$1.out" 2>&1 </dev/null &
        fi
        echo $! >"$dir/$1.pid"
        wait $!
        echo "$? $(( $(date +%s) - t0 ))" >"$dir/$1.tmp" && mv "$dir/$1.tmp" "$dir/$1.rc"
    ) &
}

report() {   # report K CMD: shows the block and adds its summary line to the totals
    out="$dir/$1.out"
    read -r rc secs <"$dir/$1.rc"
    echo "== $2"
    cat "$out"
    echo "-- $secs s"   # where the run's time goes (make test must stay under 10 minutes on 2 cores)
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$out" | tail -n 1)
    if [ -z "$line" ]; then
        why="exit status $rc"   # 137: killed, as timeout -k does to a command that outlives its TERM
        if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ "$secs" -ge "$limit" ]; }; then why="timed out after ${limit}s"; fi
        echo "!! $2: no summary line ($why): counted as 1 failed"
        echo "no summary line ($why)" >"$dir/$1.why"
        failed=$((failed + 1)) recap="$recap $1"
        return
    fi
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    s=$(echo "$line" | sed -nE 's/.*, ([0-9]+) skipped$/\1/p')
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + ${s:-0}))
    [ "$f" -gt 0 ] && { echo "$line" >"$dir/$1.why"; recap="$recap $1"; }
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "!! $2: exit status $rc with no failed check: counted as 1 failed"
        echo "exit status $rc with no failed check" >"$dir/$1.why"
        failed=$((failed + 1)) recap="$recap $1"
    fi
}

i=1 todo=
while [ "$i" -le "$total" ]; do todo="$todo $i" i=$((i + 1)); done
while [ -n "$todo$pending" ]; do
    later=
    for k in $todo; do
        eval "cmd=\${$k}"
        case $cmd in "then: "*)
            case " $todo $pending " in *" $((k - 1)) "*) later="$later $k"; continue ;; esac ;;
        esac
        if [ "$running" -lt "$jobs" ]; then
            launch "$k" "${cmd#then: }"
            pending="$pending $k" running=$((running + 1))
        else
            later="$later $k"
        fi
    done
    todo=$later still=
    for k in $pending; do
        if [ -f "$dir/$k.rc" ]; then
            eval "cmd=\${$k}"
            report "$k" "${cmd#then: }"
            running=$((running - 1))
        else
            still="$still $k"
        fi
    done
    pending=$still
    [ -n "$pending" ] && { sleep 0.2 2>/dev/null || sleep 1; }
done
wait
entries | comm -13 "$dir/cwd.before" - >"$dir/cwd.new"
if [ -s "$dir/cwd.new" ]; then
    echo "!! the tests left files in $(pwd): $(tr '\n' ' ' <"$dir/cwd.new")"
    echo "left files in the working directory: $(tr '\n' ' ' <"$dir/cwd.new")" >"$dir/cwd.why"
    failed=$((failed + 1)) recap="$recap cwd"
else
    passed=$((passed + 1))
fi
if [ -n "$recap" ]; then
    echo "== failed:"
    for k in $recap; do
        if [ "$k" = cwd ]; then echo "!! $(cat "$dir/cwd.why")"; continue; fi
        eval "cmd=\${$k}"
        echo "!! ${cmd#then: }: $(cat "$dir/$k.why")"
        grep -E '^(FAIL|!!) ' "$dir/$k.out" | head -n 5 | sed 's/^/   /'
    done
fi
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
