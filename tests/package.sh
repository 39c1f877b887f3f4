#!/bin/sh
# Packaging: a temporary `make install`, then a tiny consumer built four ways -- find_package
# after the install, pkg-config, add_subdirectory and FetchContent of this checkout -- each
# run once. Ends with `N passed, N failed` (a missing cmake or pkg-config is a skip).
#   usage: tests/package.sh BUILD_DIR
set -u
out=$(cd "$1" && pwd)/package; src=$(pwd)
rm -rf "$out" && mkdir -p "$out/consumer" || exit 1
passed=0 failed=0 skipped=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ -f "$out/log" ] && tail -n 15 "$out/log"; failed=$((failed + 1)); }
skip() { echo "SKIP $1"; skipped=$((skipped + 1)); }

cat > "$out/consumer/main.c" <<'C'
#define GPUFLOW_IMPLEMENTATION
#include "gpuflow.h"
#include <stdio.h>
int main(void) {
    gf_device *dev;
    gf_buffer *b;
    unsigned char x = 0;
    if (gf_device_open(GF_BACKEND_STUB, 0, &dev) != GF_OK || gf_buffer_create(dev, 16, &b) != GF_OK) return 1;
    if (gf_copy_to_device(b, 3, "\x2a", 1) != GF_OK || gf_copy_to_host(&x, b, 3, 1) != GF_OK) return 1;
    gf_buffer_destroy(b);
    gf_device_close(dev);
    /* which backends the build system compiled in: the test compares this line */
    printf("backends:%s%s%s stub\n",
#ifdef GPUFLOW_CUDA
           " cuda",
#else
           "",
#endif
#ifdef GPUFLOW_HIP
           " hip",
#else
           "",
#endif
#ifdef GPUFLOW_OPENCL
           " opencl"
#else
           ""
#endif
    );
    printf("consumer: %s\n", x == 42 ? "ok" : "WRONG");
    return x != 42;
}
C

if make -s install PREFIX="$out/prefix" >"$out/log" 2>&1 && [ -f "$out/prefix/include/gpuflow.h" ] &&
   [ -f "$out/prefix/lib/pkgconfig/gpuflow.pc" ] && [ -f "$out/prefix/share/cmake/gpuflow/gpuflowConfig.cmake" ]; then
    ok "make install: headers, gpuflow.pc and gpuflowConfig.cmake"
else
    fail "make install"
fi

# One version everywhere: the header's macros (and the number they make), CMakeLists.txt, the
# installed CMake package (it reads the header), gpuflow.pc, meson.build, and CHANGELOG.md's current release.
macro() { sed -n "s/^#define GPUFLOW_VERSION_$1 \\([0-9]*\\)\$/\\1/p" gpuflow.h; }
hv="$(macro MAJOR).$(macro MINOR).$(macro PATCH)"
nv=$(printf '#include "gpuflow.h"\nGPUFLOW_VERSION\n' | cc -E -P -I. -x c - 2>/dev/null | tail -n 1 | tr -d ' ()')
cv=$(sed -n 's/^project(gpuflow VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
pv=$(sed -n 's/^Version: //p' cmake/gpuflow.pc)
mv=$(sed -n "s/^project('gpuflow', 'c', version : '\([0-9.]*\)'.*/\1/p" meson.build)
lv=$(sed -n 's/^## \([0-9.]*\) .* -- current$/\1/p' CHANGELOG.md)
want=$(echo "$hv" | awk -F. '{ print $1 * 10000 + $2 * 100 + $3 }')
case $nv in *[!0-9+*]*|"") nv=invalid ;; *) nv=$(( $nv )) ;; esac   # the macro's expression, evaluated
if [ -n "$hv" ] && [ "$hv" = "$cv" ] && [ "$hv" = "$pv" ] && [ "$hv" = "$mv" ] && [ "$hv" = "$lv" ] &&
   [ "$nv" = "$want" ]; then ok "one version everywhere: $hv (GPUFLOW_VERSION $want)"
else fail "versions differ: gpuflow.h $hv ($nv), CMakeLists.txt $cv, gpuflow.pc $pv, meson.build $mv, CHANGELOG.md $lv"; fi
# (the CMake package reads gpuflow.h's: find_package with a version, below)

if command -v pkg-config >/dev/null 2>&1; then
    if PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig" sh -c \
         'cc -std=c99 -Wall -Wextra -Wpedantic -Werror $(pkg-config --cflags gpuflow) "$0/consumer/main.c" -o "$0/pc_consumer" $(pkg-config --libs gpuflow)' "$out" \
         >"$out/log" 2>&1 && "$out/pc_consumer" >>"$out/log" 2>&1; then ok "pkg-config: cc \$(pkg-config --cflags --libs gpuflow)"
    else fail "pkg-config consumer"; fi
    # an install under a path with a space, then moved: the .pc names its prefix by where it lies
    # (make install wrote the prefix into it, unescaped: -I cut at the space; found by review)
    if make -s install PREFIX="$out/spaced prefix" >"$out/log" 2>&1 && mv "$out/spaced prefix" "$out/moved prefix" &&
       PKG_CONFIG_PATH="$out/moved prefix/lib/pkgconfig" pkg-config --cflags gpuflow >"$out/pc_flags" 2>>"$out/log" &&
       grep -q 'moved\\ prefix' "$out/pc_flags"; then ok "pkg-config: an install moved, under a path with a space: $(cat "$out/pc_flags")"
    else fail "pkg-config, an install moved under a path with a space: $(cat "$out/pc_flags" 2>/dev/null)"; fi
else skip "pkg-config not installed"; fi

# One consumer project per way of taking gpuflow in; $1: the way, $2: extra cmake arguments.
# Prints the consumer's "backends:" line into $out/log.
cmake_consumer() {
    d="$out/cmake_$1_$3"
    rm -rf "$d" && mkdir -p "$d"
    {
        echo "cmake_minimum_required(VERSION 3.14)"
        echo "project(consumer C)"
        case $1 in
            find_package) echo "find_package(gpuflow REQUIRED)" ;;
            add_subdirectory) echo "add_subdirectory(\"$src\" gpuflow)" ;;
            FetchContent) echo "include(FetchContent)"
                          echo "FetchContent_Declare(gpuflow SOURCE_DIR \"$src\")"
                          echo "FetchContent_MakeAvailable(gpuflow)" ;;
        esac
        echo "add_executable(consumer \"$out/consumer/main.c\")"
        echo "target_link_libraries(consumer PRIVATE gpuflow::gpuflow)"
    } > "$d/CMakeLists.txt"
    # shellcheck disable=SC2086
    cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$out/prefix" $2 >"$out/log" 2>&1 &&
        cmake --build "$d/build" >>"$out/log" 2>&1 && "$d/build/consumer" >>"$out/log" 2>&1
}

if command -v cmake >/dev/null 2>&1; then
    # Vendor headers hidden: every find_path is re-rooted into an empty directory, as on a
    # machine without CUDA, HIP or OpenCL headers. OFF and AUTO must then build the stub alone,
    # and ON must stop with a message naming the missing header.
    mkdir -p "$out/no_headers"
    hide="-DCMAKE_FIND_ROOT_PATH=$out/no_headers -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY"
    for how in find_package add_subdirectory FetchContent; do
        for mode in OFF AUTO; do
            if cmake_consumer $how "$hide -DGPUFLOW_CUDA=$mode -DGPUFLOW_HIP=$mode -DGPUFLOW_OPENCL=$mode" "hidden_$mode" &&
               grep -qx "backends: stub" "$out/log"; then
                ok "cmake: $how, every backend $mode, no vendor headers: the stub alone"
            else fail "cmake: $how, every backend $mode, no vendor headers"; fi
        done
    done
    for b in CUDA HIP OPENCL; do
        if ! cmake_consumer add_subdirectory "$hide -DGPUFLOW_$b=ON" "hidden_on_$b" &&
           grep -q "GPUFLOW_$b=ON but its vendor header was not found" "$out/log"; then
            ok "cmake: GPUFLOW_$b=ON without its header stops and says why"
        else fail "cmake: GPUFLOW_$b=ON without its header"; fi
    done
    if ! cmake_consumer add_subdirectory "-DGPUFLOW_CUDA=maybe" bad_value && grep -q "GPUFLOW_CUDA=maybe is not understood" "$out/log"; then
        ok "cmake: GPUFLOW_CUDA=maybe is refused by name"
    else fail "cmake: GPUFLOW_CUDA=maybe"; fi
    # A version asked of the installed package (it had none, so every request failed: review).
    # One configure asks each in turn (QUIET: a refusal is a result, not an error).
    d="$out/cmake_versions"; rm -rf "$d" && mkdir -p "$d"
    {
        echo "cmake_minimum_required(VERSION 3.14)"
        echo "project(versions C)"
        for v in 0.3 "$hv EXACT" 0.1 "0.1...<1.0" 99 1.0 0.4 "0.1...<0.3"; do
            echo "find_package(gpuflow $v QUIET)"
            echo "message(STATUS \"asked $v: found \${gpuflow_FOUND} \${gpuflow_VERSION}\")"
            echo "unset(gpuflow_FOUND)"
        done
    } > "$d/CMakeLists.txt"
    cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$out/prefix" >"$out/log" 2>&1
    for v in 0.3 "$hv EXACT" 0.1 "0.1...<1.0"; do
        if grep -q -- "asked $v: found 1 $hv" "$out/log"; then ok "cmake: find_package(gpuflow $v) finds $hv"
        else fail "cmake: find_package(gpuflow $v): $(grep -- "asked $v:" "$out/log")"; fi
    done
    for v in 99 1.0 0.4 "0.1...<0.3"; do
        if grep -q -- "asked $v: found 0" "$out/log"; then ok "cmake: find_package(gpuflow $v) is refused"
        else fail "cmake: find_package(gpuflow $v) was not refused: $(grep -- "asked $v:" "$out/log")"; fi
    done
    # A consumer's own variables choose the backends at the first configure (review: under the
    # old CMP0126 the option's cache entry removed them, so only a second configure took them);
    # configured only: the backends it compiles in are named there
    for how in find_package add_subdirectory FetchContent; do
        d="$out/cmake_own_$how"; rm -rf "$d" && mkdir -p "$d"
        {
            echo "cmake_minimum_required(VERSION 3.14)"
            echo "project(consumer C)"
            printf 'set(GPUFLOW_CUDA OFF)\nset(GPUFLOW_HIP OFF)\nset(GPUFLOW_OPENCL OFF)\n'
            case $how in
                find_package) echo "find_package(gpuflow REQUIRED)" ;;
                add_subdirectory) echo "add_subdirectory(\"$src\" gpuflow)" ;;
                FetchContent) printf 'include(FetchContent)\nFetchContent_Declare(gpuflow SOURCE_DIR "%s")\nFetchContent_MakeAvailable(gpuflow)\n' "$src" ;;
            esac
        } > "$d/CMakeLists.txt"
        if cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$out/prefix" >"$out/log" 2>&1 && ! grep -q "backend compiled in" "$out/log"; then
            ok "cmake: $how after set(GPUFLOW_<B> OFF) in the consumer: the stub alone, at the first configure"
        else fail "cmake: $how, the consumer's own GPUFLOW_<B> variables: $(grep 'backend compiled in' "$out/log" | head -n 3)"; fi
    done
    # cmake --install writes the pkg-config file too
    if cmake -S "$src" -B "$out/cmake_self" >"$out/log" 2>&1 && cmake --install "$out/cmake_self" --prefix "$out/cmake_prefix" >>"$out/log" 2>&1 &&
       [ -f "$out/cmake_prefix/lib/pkgconfig/gpuflow.pc" ] && [ -f "$out/cmake_prefix/share/cmake/gpuflow/gpuflowConfigVersion.cmake" ]; then
        ok "cmake --install: the headers, the CMake package with its version, and gpuflow.pc"
    else fail "cmake --install"; fi
    # This machine's headers as they are: each backend OFF stays out even where its header is.
    for how in find_package add_subdirectory FetchContent; do
        if cmake_consumer $how "-DGPUFLOW_CUDA=OFF -DGPUFLOW_HIP=OFF -DGPUFLOW_OPENCL=OFF" real_off &&
           grep -qx "backends: stub" "$out/log"; then
            ok "cmake: $how with every backend OFF, headers present or not: the stub alone"
        else fail "cmake: $how, every backend OFF"; fi
        if cmake_consumer $how "" real_auto; then
            ok "cmake: $how, defaults (AUTO): $(grep '^backends:' "$out/log")"
        else fail "cmake: $how, defaults (AUTO)"; fi
    done
else skip "cmake not installed"; fi

# Meson: the checkout as a subproject (dependency() with a fallback), built with ninja; then the
# stub alone with every backend disabled, and an enabled backend whose header is missing stops.
meson_consumer() {   # name, meson setup options
    d="$out/meson_$1"
    rm -rf "$d" && mkdir -p "$d/subprojects" && ln -s "$src" "$d/subprojects/gpuflow" && cp "$out/consumer/main.c" "$d/" || return 1
    printf "%s\n" "project('consumer', 'c', default_options : ['c_std=c99', 'warning_level=3', 'werror=true'])" \
        "executable('consumer', 'main.c', dependencies : dependency('gpuflow', fallback : ['gpuflow', 'gpuflow_dep']))" > "$d/meson.build"
    # shellcheck disable=SC2086
    (cd "$d" && meson setup build $2 >"$out/log" 2>&1 && ninja -C build >>"$out/log" 2>&1 && ./build/consumer >>"$out/log" 2>&1)
}
if command -v meson >/dev/null 2>&1 && command -v ninja >/dev/null 2>&1; then
    if meson_consumer auto ""; then ok "meson: a subproject, defaults (auto): $(grep '^backends:' "$out/log")"
    else fail "meson: a subproject, defaults"; fi
    if meson_consumer off "-Dgpuflow:cuda=disabled -Dgpuflow:hip=disabled -Dgpuflow:opencl=disabled" && grep -qx "backends: stub" "$out/log"; then
        ok "meson: every backend disabled: the stub alone"
    else fail "meson: every backend disabled"; fi
    if ! meson_consumer enabled_missing "-Dgpuflow:cuda=enabled -Dgpuflow:include_cuda=$out/no_such_dir" &&
       grep -q "the cuda option is enabled but cuda.h was not found" "$out/log"; then
        ok "meson: cuda enabled without its header stops and says why"
    else fail "meson: cuda enabled without its header"; fi
    if (cd "$src" && meson setup "$out/meson_self" --prefix "$out/meson_prefix" >"$out/log" 2>&1 && meson install -C "$out/meson_self" >>"$out/log" 2>&1) &&
       [ -f "$out/meson_prefix/include/gpuflow.h" ] && PKG_CONFIG_PATH=$(dirname "$(find "$out/meson_prefix" -name gpuflow.pc | head -n 1)") \
       pkg-config --exists 'gpuflow >= 0.3' 2>>"$out/log"; then ok "meson install: the headers and gpuflow.pc"
    else fail "meson install"; fi
else skip "meson or ninja not installed (Debian: meson, ninja-build)"; fi

if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
