#!/bin/sh
# A test that make test started in the background (its output into PREFIX.log, its exit
# status into PREFIX.rc when it ends): waits for it, at most LIMIT seconds (default 600), then
# shows its output and exits with its status, so that tests/run.sh counts it like any other.
#   usage: tests/await.sh PREFIX [LIMIT]
prefix=$1 limit=${2:-600} waited=0
while [ ! -f "$prefix.rc" ]; do
    if [ "$waited" -ge "$limit" ]; then echo "FAIL $prefix: still running after ${limit}s"; echo "0 passed, 1 failed"; exit 1; fi
    sleep 1
    waited=$((waited + 1))
done
cat "$prefix.log"
exit "$(cat "$prefix.rc")"
