#!/bin/sh
# A test that make test runs in the background while it builds (its output into PREFIX.log,
# its exit status into PREFIX.rc when it ends):
#   tests/await.sh start PREFIX CMD [ARG...]   starts CMD (under timeout: its process group, so
#                                             that stop reaches what it started too)
#   tests/await.sh stop PREFIX                 stops it if it is still running (make test's exit,
#                                             whatever the cause: a failed build, Ctrl-C)
#   tests/await.sh PREFIX [LIMIT]              waits for it, at most LIMIT seconds (default 600),
#                                             then shows its output and exits with its status, so
#                                             that tests/run.sh counts it like any other test
case $1 in
start)
    prefix=$2
    shift 2
    rm -f "$prefix.rc" "$prefix.pid"
    # a process group of its own, so that stop reaches everything it starts: timeout makes one
    # (and bounds the run), else setsid (a background job is no group leader: it does not
    # fork); with neither, stop reaches the command alone
    if command -v timeout >/dev/null 2>&1; then set -- timeout -k 10 1200 "$@"
    elif command -v setsid >/dev/null 2>&1; then set -- setsid "$@"; fi
    # the pid file appears whole (stop reads it), and goes before the status is written
    ( "$@" >"$prefix.log" 2>&1 </dev/null & echo $! >"$prefix.pid.new"; mv "$prefix.pid.new" "$prefix.pid"
      wait $!; status=$?; rm -f "$prefix.pid"; echo $status >"$prefix.rc" ) 2>/dev/null &
    exit 0 ;;
stop)
    prefix=$2 waited=0
    while [ ! -s "$prefix.pid" ] && [ ! -f "$prefix.rc" ] && [ "$waited" -lt 5 ]; do sleep 1; waited=$((waited + 1)); done
    if [ -s "$prefix.pid" ] && [ ! -f "$prefix.rc" ]; then
        pid=$(cat "$prefix.pid")
        kill -TERM -"$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null   # its group, else it alone
    fi
    exit 0 ;;
esac
prefix=$1 limit=${2:-600} waited=0
while [ ! -f "$prefix.rc" ]; do
    if [ "$waited" -ge "$limit" ]; then echo "FAIL $prefix: still running after ${limit}s"; echo "0 passed, 1 failed"; exit 1; fi
    sleep 1
    waited=$((waited + 1))
done
cat "$prefix.log"
exit "$(cat "$prefix.rc")"
