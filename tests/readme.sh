#!/bin/sh
# The README's commands, run as a newcomer would: every indented line of README.md (then of
# docs/*.md, in name order) that builds
# an example (`cc ... examples/...`) or runs one (`GPUFLOW_BACKEND=... ./...`, `./name`) is
# run, in order, in a fresh copy of this working tree that is its own git repository. Then
# `git status` must be clean there (what the commands leave behind is ignored by .gitignore).
# A line that needs what this machine lacks (OpenCL headers, an OpenCL platform) is skipped
# and counted. Ends with `N passed, N failed[, N skipped]`.
#   usage: tests/readme.sh BUILD_DIR
set -u
src=$(pwd)
out=$(cd "$1" && pwd)/readme
rm -rf "$out" && mkdir -p "$out/tree" || exit 1
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ -f "$out/log" ] && tail -n 8 "$out/log"; failed=$((failed + 1)); }
skip() { echo "SKIP $1"; skipped=$((skipped + 1)); }

# The working tree as a user would clone it (tracked and new files, nothing ignored).
if git ls-files -co --exclude-standard >"$out/files" 2>/dev/null && [ -s "$out/files" ]; then
    while IFS= read -r f; do
        [ -f "$f" ] || continue
        mkdir -p "$out/tree/$(dirname "$f")" && cp "$f" "$out/tree/$f"
    done <"$out/files"
else
    echo "not a git checkout: cannot copy the tree as a clone"; echo "0 passed, 1 failed"; exit 1
fi
cd "$out/tree" || exit 1
git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -qm tree || { echo "0 passed, 1 failed"; exit 1; }

have_cl_headers=0
printf '#include <CL/cl.h>\n' | cc -E -x c - >/dev/null 2>&1 && have_cl_headers=1
have_cl_platform=0
ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 && have_cl_platform=1

# Indented command lines, the trailing "# comment" dropped.
sed -n 's/^    \(cc -std=c99 -I\. .*examples\/.*\|GPUFLOW_BACKEND=[a-z]* \.\/.*\|\.\/[a-z_]*\)$/\1/p' README.md docs/*.md |
    sed 's/[[:space:]]*#.*$//' >"$out/commands"
[ -s "$out/commands" ] || { echo "FAIL no example commands found in README.md"; echo "0 passed, 1 failed"; exit 1; }
while IFS= read -r line; do
    case $line in
        *-DGPUFLOW_OPENCL*)
            if [ $have_cl_headers -eq 0 ]; then skip "$line: no OpenCL headers here (opencl-headers)"; continue; fi ;;
        GPUFLOW_BACKEND=opencl*)
            if [ $have_cl_headers -eq 0 ] || [ $have_cl_platform -eq 0 ]; then
                skip "$line: needs OpenCL headers and a platform (opencl-headers, pocl-opencl-icd)"; continue
            fi ;;
    esac
    if sh -c "$line" </dev/null >"$out/log" 2>&1; then ok "$line"; else fail "$line"; fi
done <"$out/commands"

left=$(git status --porcelain)
if [ -z "$left" ]; then ok "git status is clean after the README's commands"
else fail "the README's commands leave files git does not ignore: $(echo "$left" | tr '\n' ' ')"; fi

cd "$src" || exit 1
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
