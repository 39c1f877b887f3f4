#!/bin/sh
# Checks that a stand-in library exports exactly the entry points gpuflow_hip.h loads, no
# more and no fewer: hip<name> for the X(name, ...) lines of its GF__HIP_API list and the
# V(name, ...) lines of GF__HIP_VERSIONED_API (as HIP 5.2's headers name them), and
# hiprtc<name> for the X(name, ...) lines of GF__HIPRTC_API.
#   usage: check_exports.sh LIB [absent...]   (absent: entry points this build leaves out on
#          purpose; each a grep pattern of whole names: 'hiprtc.*' for all of hiprtc)
# Ends with `N passed, N failed`.
set -u
lib=$1; shift
here=$(dirname "$0")
want=$(awk '/^#define GF__HIPRTC_API\(/ { rtc = 1 }
            rtc && /^ *X\(/ { sub(/^ *X\(/, ""); sub(/,.*/, ""); print "hiprtc" $0; next }
            !rtc && /^ *[XV]\(/ { sub(/^ *[XV]\(/, ""); sub(/,.*/, ""); print "hip" $0 }
            rtc && !/\\$/ && !/^#define/ { rtc = 0 }' "$here/../../gpuflow_hip.h" | sort)
for a in "$@"; do want=$(echo "$want" | grep -v "^$a\$"); done
have=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort)
if [ -z "$want" ]; then
    echo "FAIL no entry points found in gpuflow_hip.h's GF__HIP_API list"
    echo "0 passed, 1 failed"; exit 1
fi
if [ "$want" = "$have" ]; then
    echo "ok   $lib exports the $(echo "$want" | wc -l) entry points gpuflow_hip.h loads${1:+ (without $*)}"
    echo "1 passed, 0 failed"
else
    echo "FAIL $lib: exports differ from gpuflow_hip.h's list (< wanted, > exported):"
    echo "$want" > "$lib.want"; echo "$have" > "$lib.have"
    diff "$lib.want" "$lib.have" | grep '^[<>]'
    echo "0 passed, 1 failed"; exit 1
fi
