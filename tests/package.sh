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

# One version everywhere: the header's macros, CMakeLists.txt, the CMake package and gpuflow.pc.
hv="$(sed -n 's/^#define GPUFLOW_VERSION_MAJOR \([0-9]*\)$/\1/p' gpuflow.h).$(sed -n 's/^#define GPUFLOW_VERSION_MINOR \([0-9]*\)$/\1/p' gpuflow.h)"
cv=$(sed -n 's/^project(gpuflow VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
kv=$(sed -n 's/^set(gpuflow_VERSION \([0-9.]*\))$/\1/p' cmake/gpuflowConfig.cmake)
pv=$(sed -n 's/^Version: //p' cmake/gpuflow.pc.in)
if [ -n "$hv" ] && [ "$hv" = "$cv" ] && [ "$hv" = "$kv" ] && [ "$hv" = "$pv" ]; then ok "one version everywhere: $hv"
else fail "versions differ: gpuflow.h $hv, CMakeLists.txt $cv, gpuflowConfig.cmake $kv, gpuflow.pc $pv"; fi

if command -v pkg-config >/dev/null 2>&1; then
    if PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig" sh -c \
         'cc -std=c99 -Wall -Wextra -Wpedantic -Werror $(pkg-config --cflags gpuflow) "$0/consumer/main.c" -o "$0/pc_consumer" $(pkg-config --libs gpuflow)' "$out" \
         >"$out/log" 2>&1 && "$out/pc_consumer" >>"$out/log" 2>&1; then ok "pkg-config: cc \$(pkg-config --cflags --libs gpuflow)"
    else fail "pkg-config consumer"; fi
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

if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
