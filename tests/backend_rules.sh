#!/bin/sh
# The two structural rules of gpuflow.h's backends, checked on the code (comments and string
# literals removed), not on its prose:
#  1. the core names no backend: outside the registry (GF__BACKENDS and the "backend headers"
#     block) and the stub's own section, no identifier of gpuflow.h's implementation has a
#     vendor backend's name as one of its parts (cuda in gf__cuda_x, GF_BACKEND_CUDA,
#     opencl_source). The stub, the registry's last row, is named only by the core's own
#     words for it (gf__stub_*, GF__STUB_*, GF_BACKEND_STUB): its public C-kernel API
#     (gf_stub_kernel, gf_module_desc.stub_kernels) is the dialect's, which the core checks;
#  2. a backend header uses only the kit: every gf__/GF__ name a gpuflow_<name>.h uses that it
#     does not define itself is listed in the ">>kit" block, and no backend reaches into the
#     core's capture state (->capture, launch_nodes, ->launches, ->cmds).
# Ends with `N passed, N failed`.   usage: tests/backend_rules.sh [CC]
set -u
cc=${1:-cc}
cd "$(dirname "$0")/.." || exit 1
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuflow-rules.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
passed=0 failed=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# Code only: the preprocessor drops comments without expanding anything (-fpreprocessed),
# then string and character literals become empty. Line markers keep the file's numbering.
code_of() {
    $cc -fpreprocessed -dD -E -P -C "$1" >/dev/null 2>&1 || return 1
    $cc -x c -fpreprocessed -dD -E "$1" 2>/dev/null |
        sed -e 's/"\([^"\\]\|\\.\)*"/""/g' -e "s/'\\([^'\\\\]\\|\\\\.\\)*'/''/g"
}

# The registry's names: X(ID, name) rows of GF__BACKENDS.
names=$(sed -n '/^#define GF__BACKENDS(X)/,/^$/p' gpuflow.h | sed -n 's/^ *X( *[A-Z0-9_]*, *\([a-z0-9_]*\)).*/\1/p')
[ -n "$names" ] || { fail "no X(ID, name) rows found in GF__BACKENDS"; echo "$passed passed, $failed failed"; exit 1; }
echo "backends in the registry: $(echo $names)"

# 1. The implementation from its opening #if to the stub's section, less the registry's block
#    at the end; each line keeps its number for the report.
first=$(grep -n '^#if defined(GPUFLOW_IMPLEMENTATION) && !defined(GPUFLOW_IMPLEMENTATION_DONE)' gpuflow.h | cut -d: -f1)
stub=$(grep -n 'Stub backend: a CPU emulation' gpuflow.h | cut -d: -f1)
regb=$(grep -n 'backend headers: the registry' gpuflow.h | cut -d: -f1)
last=$(grep -n '^#endif /\* GPUFLOW_IMPLEMENTATION \*/' gpuflow.h | cut -d: -f1)
if [ -z "$first" ] || [ -z "$stub" ] || [ -z "$regb" ] || [ -z "$last" ]; then
    fail "the implementation's landmarks (its #if, the stub's banner, the registry block) are not where this script looks"
else
    awk -v a="$first" -v b="$stub" -v c="$regb" -v d="$last" \
        '{ print ((NR > a && NR < b) || (NR > d) ? $0 : "") }' gpuflow.h > "$dir/core.c"
    code_of "$dir/core.c" > "$dir/core.code" || fail "the preprocessor could not read the core"
    terminator=$(echo $names | awk '{ print $NF }')
    vendors=$(echo $names | awk '{ $NF = ""; print }' | sed 's/ *$//; s/ /|/g')
    # every identifier, split at '_' into lower-case parts
    awk -v pat="^($vendors)\$" -v term="$terminator" '
        /^# [0-9]+ / { line = $2 - 1; next }
        { line++
          s = $0
          while (match(s, /[A-Za-z_][A-Za-z0-9_]*/)) {
              id = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
              low = tolower(id)
              if (index(low, "gf__" term "_") == 1 || low == "gf_backend_" term) { print line ": " id; continue }
              n = split(low, part, "_")
              for (i = 1; i <= n; i++) if (part[i] ~ pat) { print line ": " id; break }
          }
        }' "$dir/core.code" | sort -u -t: -k1,1n > "$dir/hits"
    if [ -s "$dir/hits" ]; then
        fail "the core names a backend outside the registry ($(wc -l < "$dir/hits") places; gpuflow.h line: identifier):"
        head -n 20 "$dir/hits" | sed 's/^/       /'
    else
        ok "the core names no backend outside the registry and the stub's section ($(echo $names | wc -w) names checked)"
    fi
fi

# 2. The kit: the names listed in the >>kit comment block.
sed -n '/>>kit \*\//,/^\*\//p' gpuflow.h | grep -o '\b\(gf__\|GF__\)[A-Za-z0-9_]*' | sort -u > "$dir/kit"
[ -s "$dir/kit" ] || fail "no names found in the >>kit block of gpuflow.h"
grep -o '\b\(gf__\|GF__\)[A-Za-z0-9_]*' gpuflow.h | sort -u > "$dir/core_names"
for name in $names; do
    h=gpuflow_$name.h
    [ -f "$h" ] || continue
    code_of "$h" > "$dir/$name.code" || { fail "$h: the preprocessor could not read it"; continue; }
    grep -o '\b\(gf__\|GF__\)[A-Za-z0-9_]*' "$dir/$name.code" | sort -u > "$dir/$name.used"
    # its own: defined in the header (as a function, type, variable or macro) rather than in the core
    comm -12 "$dir/$name.used" "$dir/core_names" | comm -23 - "$dir/kit" > "$dir/$name.outside"
    # names the registry gives it (its table getter) are its own
    grep -v "^gf__${name}_backend\$" "$dir/$name.outside" > "$dir/$name.out2"
    if [ -s "$dir/$name.out2" ]; then
        fail "$h uses core names that are not in the kit: $(tr '\n' ' ' < "$dir/$name.out2")"
    else
        ok "$h uses only the kit ($(comm -12 "$dir/$name.used" "$dir/kit" | wc -l) of its $(wc -l < "$dir/kit") names)"
    fi
    if grep -n -- '->capture\b\|\blaunch_nodes\b\|->launches\b\|->cmds\b' "$dir/$name.code" > "$dir/$name.state"; then
        fail "$h reaches into the core's capture state: $(head -n 3 "$dir/$name.state" | tr '\n' ' ')"
    else
        ok "$h leaves the core's capture state alone (it has the captured_node hook and gf__graph_launch_*)"
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
