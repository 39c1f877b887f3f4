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

if command -v pkg-config >/dev/null 2>&1; then
    if PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig" sh -c \
         'cc -std=c99 -Wall -Wextra -Wpedantic -Werror $(pkg-config --cflags gpuflow) "$0/consumer/main.c" -o "$0/pc_consumer" $(pkg-config --libs gpuflow)' "$out" \
         >"$out/log" 2>&1 && "$out/pc_consumer" >>"$out/log" 2>&1; then ok "pkg-config: cc \$(pkg-config --cflags --libs gpuflow)"
    else fail "pkg-config consumer"; fi
else skip "pkg-config not installed"; fi

if command -v cmake >/dev/null 2>&1; then
    for how in find_package add_subdirectory FetchContent; do
        d="$out/cmake_$how"
        mkdir -p "$d"
        {
            echo "cmake_minimum_required(VERSION 3.14)"
            echo "project(consumer C)"
            case $how in
                find_package) echo "find_package(gpuflow REQUIRED)" ;;
                add_subdirectory) echo "add_subdirectory(\"$src\" gpuflow)" ;;
                FetchContent) echo "include(FetchContent)"
                              echo "FetchContent_Declare(gpuflow SOURCE_DIR \"$src\")"
                              echo "FetchContent_MakeAvailable(gpuflow)" ;;
            esac
            echo "add_executable(consumer \"$out/consumer/main.c\")"
            echo "target_link_libraries(consumer PRIVATE gpuflow::gpuflow)"
        } > "$d/CMakeLists.txt"
        if cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$out/prefix" -DGPUFLOW_CUDA=OFF -DGPUFLOW_HIP=OFF >"$out/log" 2>&1 &&
           cmake --build "$d/build" >>"$out/log" 2>&1 && "$d/build/consumer" >>"$out/log" 2>&1; then
            ok "cmake: $how, then target_link_libraries(... gpuflow::gpuflow)"
        else fail "cmake: $how"; fi
    done
else skip "cmake not installed"; fi

if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
