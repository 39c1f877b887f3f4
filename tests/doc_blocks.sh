#!/bin/sh
# The C code blocks of README.md and docs/*.md, compiled (and run where they say so), so that
# the documentation cannot drift from the header. Every ```c block is preceded by a marker
# that says what it is (an HTML comment: invisible on the rendered page); a block without one
# fails:
#
#   <!-- check: program -->         a whole program: compiled, then run on the stub
#   <!-- check: file NAME -->       saved as NAME beside the blocks after it (a .gfk, say)
#   <!-- check: fragment -->        compiled inside a main of its own; "fragment run": run too.
#                                   Lines before a line "..." are file scope, those after it the
#                                   main's body; without "...", the leading #-lines and comments
#                                   are file scope. Optional, before the block:
#   <!-- prelude: C -->             file-scope lines put before the block's own
#   <!-- given: C -->               the main's first lines (the names the fragment assumes)
#   <!-- then: C -->                the main's last lines (default: return 0;)
#
# Each compiles with -std=c99 -Wall -Wextra -Wpedantic -Werror; a block that defines
# GPUFLOW_OPENCL needs OpenCL's headers (skipped and counted without them). Runs use the stub
# (GPUFLOW_BACKEND=stub). Each `>>tag` a page of docs/ names must be a section tag of the
# headers. Ends with `N passed, N failed[, N skipped]`.
#   usage: tests/doc_blocks.sh BUILD_DIR
set -u
src=$(pwd)
out=$(cd "$1" && pwd)/doc_blocks
rm -rf "$out" && mkdir -p "$out" || exit 1
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ -f "$out/log" ] && tail -n 12 "$out/log"; failed=$((failed + 1)); }
skip() { echo "SKIP $1"; skipped=$((skipped + 1)); }
CC=${CC:-cc}
flags="-std=c99 -Wall -Wextra -Wpedantic -Werror"
# A block that builds the implementation (GPUFLOW_IMPLEMENTATION, itself or through
# examples/example.h) and sets none of its other GPUFLOW_* switches is built without it and
# linked to one compile of it with the same flags (tests/examples.sh says why): its own code
# builds as before, examples/example.h from a copy without that line.
mkdir -p "$out/linked/examples" || exit 1
for f in examples/*; do sed '/^#define GPUFLOW_IMPLEMENTATION$/d' "$f" > "$out/linked/$f"; done
if ! $CC $flags -I"$src" -DGPUFLOW_IMPLEMENTATION -x c -c gpuflow.h -o "$out/linked/gpuflow_impl.o" 2>"$out/log"; then
    fail "gpuflow.h: the implementation does not build with $CC $flags"
fi
have_cl_headers=0
printf '#include <CL/cl.h>\n' | $CC -E -x c - >/dev/null 2>&1 && have_cl_headers=1

for md in README.md docs/*.md; do
    [ -f "$md" ] || continue
    dir="$out/$(echo "$md" | tr '/.' '__')"
    mkdir -p "$dir"
    # Split into blocks: dir/N.code, dir/N.kind (the check line), dir/N.{prelude,given,then},
    # dir/N.line (where the fence is).
    awk -v dir="$dir" '
        function flush_meta(  k) { for (k in meta) delete meta[k] }
        BEGIN { n = 0; inblock = 0; incomment = 0 }
        inblock {
            if ($0 ~ /^```[[:space:]]*$/) { inblock = 0; close(dir "/" n ".code"); next }
            print > (dir "/" n ".code"); next
        }
        incomment {
            if (index($0, "-->")) { sub(/-->.*/, ""); meta[key] = meta[key] $0 "\n"; incomment = 0 }
            else meta[key] = meta[key] $0 "\n"
            next
        }
        /^<!-- (check|prelude|given|then):/ {
            line = $0
            sub(/^<!-- /, "", line)
            key = line; sub(/:.*/, "", key)
            sub(/^[a-z]+:[[:space:]]*/, "", line)
            if (index(line, "-->")) { sub(/[[:space:]]*-->.*/, "", line); meta[key] = meta[key] line "\n" }
            else { meta[key] = meta[key] line "\n"; incomment = 1 }
            next
        }
        /^```c[[:space:]]*$/ {
            n++; inblock = 1
            printf "%s", meta["check"] > (dir "/" n ".kind")
            printf "%s", meta["prelude"] > (dir "/" n ".prelude")
            printf "%s", meta["given"] > (dir "/" n ".given")
            printf "%s", meta["then"] > (dir "/" n ".then")
            print NR > (dir "/" n ".line")
            close(dir "/" n ".kind"); close(dir "/" n ".prelude"); close(dir "/" n ".given"); close(dir "/" n ".then"); close(dir "/" n ".line")
            printf "" > (dir "/" n ".code")
            flush_meta()
            next
        }
        /^[^<[:space:]]/ { flush_meta() }   # prose between a marker and its block drops the marker
    ' "$md"
    n=1
    while [ -f "$dir/$n.code" ]; do
        where="$md:$(cat "$dir/$n.line")"
        kind=$(head -n 1 "$dir/$n.kind")
        code="$dir/$n.code"
        c="$dir/$n.c"
        : > "$out/log"
        case $kind in
            file\ *)
                name=${kind#file }
                cp "$code" "$dir/$name" && ok "$where: saved as $name" || fail "$where: cannot save $name"
                n=$((n + 1)); continue ;;
            program|program\ *)
                { cat "$dir/$n.prelude"; cat "$code"; } > "$c"
                run=1 ;;
            fragment|fragment\ run)
                run=0; [ "$kind" = "fragment run" ] && run=1
                if grep -qx '[[:space:]]*\.\.\.[[:space:]]*' "$code"; then
                    sed '/^[[:space:]]*\.\.\.[[:space:]]*$/,$d' "$code" > "$dir/$n.top"
                    sed '1,/^[[:space:]]*\.\.\.[[:space:]]*$/d' "$code" > "$dir/$n.body"
                else
                    awk 'body { print > b; next }
                         /^[[:space:]]*(#|\/\*.*\*\/[[:space:]]*$|$)/ { print > t; next }
                         { body = 1; print > b }' t="$dir/$n.top" b="$dir/$n.body" "$code"
                    touch "$dir/$n.top" "$dir/$n.body"
                fi
                {
                    cat "$dir/$n.prelude"
                    cat "$dir/$n.top"
                    printf '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint main(void)\n{\n'
                    cat "$dir/$n.given"
                    printf '{\n'
                    cat "$dir/$n.body"
                    printf '}\n'
                    if [ -s "$dir/$n.then" ]; then cat "$dir/$n.then"; else printf 'return 0;\n'; fi
                    printf '}\n'
                } > "$c" ;;
            "")
                fail "$where: a \`\`\`c block with no <!-- check: ... --> marker (program, fragment or file NAME)"
                n=$((n + 1)); continue ;;
            *)
                fail "$where: unknown marker 'check: $kind'"
                n=$((n + 1)); continue ;;
        esac
        if grep -q 'GPUFLOW_OPENCL' "$c" && [ $have_cl_headers -eq 0 ]; then
            skip "$where: defines GPUFLOW_OPENCL and this machine has no OpenCL headers (opencl-headers)"
            n=$((n + 1)); continue
        fi
        build="$c" inc=
        if grep -q '^#define GPUFLOW_IMPLEMENTATION\|^#include "examples/example.h"' "$c" &&
           ! grep '^#define GPUFLOW_' "$c" | grep -qv '^#define GPUFLOW_IMPLEMENTATION$'; then
            sed '/^#define GPUFLOW_IMPLEMENTATION$/d' "$c" > "$dir/$n.linked.c"
            build="$dir/$n.linked.c $out/linked/gpuflow_impl.o" inc="-I$out/linked"
        fi
        # shellcheck disable=SC2086
        if ! (cd "$dir" && $CC $flags $inc -I"$src" $build -o "$dir/$n.bin" -pthread -ldl -lm) >"$out/log" 2>&1; then
            fail "$where: $kind block does not compile ($c)"
        elif [ $run -eq 1 ] && ! (cd "$dir" && GPUFLOW_BACKEND=stub timeout 60 "$dir/$n.bin") >"$out/log" 2>&1; then
            fail "$where: $kind block compiled, but its run on the stub failed"
        else
            if [ $run -eq 1 ]; then ok "$where: $kind block compiled and ran on the stub"; else ok "$where: $kind block compiled"; fi
        fi
        n=$((n + 1))
    done
done

# The pages point into the header by its >>tags: each must be one the headers have.
for md in docs/*.md; do
    [ -f "$md" ] || continue
    for tag in $(grep -o '>>[a-z][a-z]*' "$md" | sort -u); do
        if grep -q -- "$tag" gpuflow.h gpuflow_*.h; then ok "$md: $tag is a section of the header"
        else fail "$md: $tag names no section of gpuflow.h or a backend header"; fi
    done
done

# The header's SECTIONS index names every section of the implementation, in the file's order
# (a section's banner, or boxed header, is a comment line that ends with its >>tag).
indexed=$(sed -n '/^    SECTIONS/,/^    OVERVIEW/p' gpuflow.h | sed -n '/Implementation, the core/,$p' | grep -o '>>[a-z][a-z]*' | tr '\n' ' ')
present=$(sed -n '/^    OVERVIEW/,$p' gpuflow.h | grep '^/\*.*>>[a-z][a-z]* *\*/$' | grep -o '>>[a-z][a-z]*' | tr '\n' ' ')
if [ -n "$present" ] && [ "$indexed" = "$present" ]; then ok "gpuflow.h: the SECTIONS index names its sections in order"
else fail "gpuflow.h: the SECTIONS index says '$indexed'; the sections are '$present'"; fi

if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then fail "no C blocks found in README.md or docs/"; fi
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
