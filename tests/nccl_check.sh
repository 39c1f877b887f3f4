#!/bin/sh
# Runs examples/nccl_allreduce (built as $1) and turns its last line into a test summary: the
# sum checked on every GPU passes; no GPU or no NCCL is skipped; anything else fails.
#   usage: tests/nccl_check.sh BINARY
out=$("$1" 2>&1); rc=$?
echo "$out"
case $rc:$out in
    0:*"every element of every GPU is "*": yes"*) echo "1 passed, 0 failed" ;;
    0:*"nothing to reduce"*|0:*"not found or incomplete"*) echo "0 passed, 0 failed, 1 skipped" ;;
    *) echo "0 passed, 1 failed"; exit 1 ;;
esac
