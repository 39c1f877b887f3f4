#!/bin/sh
# Fetches the vendor headers that tests/header_versions.sh compiles the backends against into
# DIR, which git ignores: no NVIDIA or Khronos file is committed. Only the headers (and each
# package's license) are kept; the archives are deleted once extracted.
#
#   DIR/cuda-12.3/include      cuda.h, cudaTypedefs.h, nvrtc.h, nvtx3/ of CUDA 12.3.2, the oldest
#                              toolkit gpuflow_cuda.h supports: NVIDIA's redistributable archives
#                              cuda_cudart 12.3.101 (1.1 MB), cuda_nvrtc 12.3.107 (31 MB: the library
#                              is in it too) and cuda_nvtx 12.3.101 (48 kB), each checked against the
#                              sha256 that NVIDIA's redistrib_12.3.2.json lists for it
#   DIR/opencl-oldest/CL       the Khronos OpenCL-Headers of $OPENCL_OLDEST_TAG (v2020.03.13, the first
#                              tag: it has CL_TARGET_OPENCL_VERSION and OpenCL 2.1) from GitHub; where
#                              GitHub cannot be reached, Debian bullseye's opencl-c-headers
#                              (3.0~2020.12.18, the oldest Debian still serves) through apt-get
#   DIR/opencl-newest/CL       likewise $OPENCL_NEWEST_TAG (v2026.05.29), else Debian unstable's
#
# Each set is complete once DIR/<set>/SOURCE exists (it says where the files came from); a
# complete set is kept as it is, so a second run downloads nothing. Remove DIR/<set> to fetch
# it again. Exits 1, saying which download failed and why, when a set could not be fetched;
# header_versions.sh then skips that set's checks.
#
# usage: fetch_headers.sh DIR [cuda-12.3] [opencl-oldest] [opencl-newest]   (default: all three)
# The sources can be mirrored: NVIDIA_REDIST, GITHUB and DEBIAN_MIRROR are the base addresses.
set -u
[ $# -ge 1 ] || { echo "usage: fetch_headers.sh DIR [cuda-12.3] [opencl-oldest] [opencl-newest]" >&2; exit 2; }
dir=$1; shift
sets=${*:-cuda-12.3 opencl-oldest opencl-newest}
NVIDIA_REDIST=${NVIDIA_REDIST:-https://developer.download.nvidia.com/compute/cuda/redist}
GITHUB=${GITHUB:-https://github.com}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
OPENCL_OLDEST_TAG=${OPENCL_OLDEST_TAG:-v2020.03.13}
OPENCL_NEWEST_TAG=${OPENCL_NEWEST_TAG:-v2026.05.29}
me=fetch_headers.sh
mkdir -p "$dir" || exit 1
dir=$(cd "$dir" && pwd)
failed=0

say() { echo "$me: $*"; }
# get URL FILE: downloads URL to FILE; on failure FILE is gone and $why says what went wrong
get() {
    why=
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --connect-timeout 20 --max-time 900 --retry 2 -o "$2" "$1" 2>"$2.err"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -T 20 -t 3 -O "$2" "$1" 2>"$2.err"
    else
        echo "neither curl nor wget is installed" >"$2.err"; false
    fi
    rc=$?
    if [ $rc -ne 0 ]; then why=$(tail -n 1 "$2.err"); why=${why:-exit status $rc}; rm -f "$2"; fi
    rm -f "$2.err"
    return $rc
}
sha256() {
    if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
    else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

# ---- CUDA 12.3 -------------------------------------------------------------------------------
# NEED COMPONENT VERSION SHA256 SIZE MEMBER...: the members (paths under the archive's top
# folder) to keep, from NVIDIA's redistrib_12.3.2.json (linux-x86_64; the headers are the same
# for every platform). An optional part that fails leaves its checks skipped.
CUDA_PARTS="need cuda_cudart 12.3.101 e37d478d1e7a10490d55fb87a5ef379a18c648f3010e1d3687c4298ddc3e9e19 1088388 include/cuda.h include/cudaTypedefs.h
need cuda_nvrtc 12.3.107 bc9d2f9d8f8847f76cc936f61d66f55ea4a898294e1799e2a63480b553b60e0b 31329444 include/nvrtc.h
optional cuda_nvtx 12.3.101 cd21f7fc329337f3c1be888e68aef5d580f243b5cc9a63d392cdb08e49be1689 48380 include/nvtx3"

fetch_cuda() {
    set_dir=$dir/cuda-12.3 part=$dir/.partial-cuda-12.3
    rm -rf "$part" && mkdir -p "$part/include" "$part/x" || return 1
    : >"$part/SOURCE.new"
    echo "$CUDA_PARTS" | while read -r need comp ver sum size members; do
        top=$comp-linux-x86_64-$ver-archive
        url=$NVIDIA_REDIST/$comp/linux-x86_64/$top.tar.xz
        [ "$need" = need ] && stop="exit 1" || stop="continue"
        say "cuda-12.3: downloading $url ($size bytes)"
        if ! get "$url" "$part/a.tar.xz"; then
            say "cuda-12.3: cannot download $url: $why"; $stop
        fi
        got=$(sha256 "$part/a.tar.xz")
        if [ "$got" != "$sum" ]; then
            say "cuda-12.3: $url has sha256 $got, not $sum (redistrib_12.3.2.json): refused"; rm -f "$part/a.tar.xz"; $stop
        fi
        list=
        for m in $members; do list="$list $top/$m"; done
        # shellcheck disable=SC2086
        if ! tar -xJf "$part/a.tar.xz" -C "$part/x" $list; then
            say "cuda-12.3: $top.tar.xz lacks one of:$list"; rm -f "$part/a.tar.xz"; $stop
        fi
        tar -xJf "$part/a.tar.xz" -C "$part/x" "$top/LICENSE" 2>/dev/null && cp "$part/x/$top/LICENSE" "$part/LICENSE.$comp"
        rm -f "$part/a.tar.xz"
        cp -R "$part/x/$top/include/." "$part/include/" || exit 1
        echo "$url sha256=$sum" >>"$part/SOURCE.new"
    done || return 1
    rm -rf "$part/x"
    v=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$part/include/cuda.h")
    if [ "$v" != 12030 ]; then say "cuda-12.3: its cuda.h says CUDA_VERSION ${v:-(none)}, not 12030"; return 1; fi
    for f in nvrtc.h:nvrtcGetSupportedArchs cudaTypedefs.h:PFN_cuStreamGetCaptureInfo_v12030; do
        grep -q "${f#*:}" "$part/include/${f%%:*}" 2>/dev/null || { say "cuda-12.3: include/${f%%:*} has no ${f#*:}"; return 1; }
    done
    nvtx=", nvtx3/"
    grep -qs nvtxNameCuStream "$part/include/nvtx3/nvToolsExtCuda.h" || { nvtx=" (no nvtx3/: its check is skipped)"; rm -rf "$part/include/nvtx3"; }
    { echo "CUDA 12.3.2 (CUDA_VERSION 12030): NVIDIA's redistributable archives"; cat "$part/SOURCE.new"; } >"$part/SOURCE"
    rm -f "$part/SOURCE.new"
    mv "$part" "$set_dir" && say "cuda-12.3: $set_dir/include: cuda.h (CUDA_VERSION 12030), cudaTypedefs.h, nvrtc.h$nvtx"
}

# ---- OpenCL ----------------------------------------------------------------------------------
apt_dir=
# debian_download PACKAGE SUITE FOLDER: the package's .deb from that Debian suite into FOLDER,
# through apt-get with a sources list of its own (the archive's signatures are checked)
debian_download() {
    if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then why="no apt-get/dpkg-deb here"; return 1; fi
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -f "$keyring" ] || { why="no $keyring (package debian-archive-keyring)"; return 1; }
    apt_dir=$dir/.apt
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" || return 1
    apt_opts="-q -o Dir::Etc::SourceList=$apt_dir/sources.list -o Dir::Etc::SourceParts=$apt_dir/none -o Dir::State::Lists=$apt_dir/lists
              -o Dir::Cache=$apt_dir/cache -o Dir::State::status=/dev/null -o Acquire::Languages=none -o APT::Sandbox::User=root"
    if ! grep -qs " $2 main\$" "$apt_dir/sources.list"; then
        echo "deb [arch=all signed-by=$keyring] $DEBIAN_MIRROR $2 main" >>"$apt_dir/sources.list"
        # shellcheck disable=SC2086
        apt-get $apt_opts update >"$apt_dir/log" 2>&1 || { why="apt-get update: $(grep -m1 -E '^(E|W|Err):' "$apt_dir/log")"; return 1; }
    fi
    # shellcheck disable=SC2086
    (cd "$3" && apt-get $apt_opts download "$1/$2") >"$apt_dir/log" 2>&1 ||
        { why="apt-get download $1/$2: $(grep -m1 -E '^(E|W|Err):' "$apt_dir/log")"; return 1; }
}

# fetch_opencl SET TAG DEBIAN_SUITE
fetch_opencl() {
    set_dir=$dir/$1 part=$dir/.partial-$1
    rm -rf "$part" && mkdir -p "$part/x" || return 1
    url=$GITHUB/KhronosGroup/OpenCL-Headers/archive/refs/tags/$2.tar.gz
    say "$1: downloading $url"
    if get "$url" "$part/a.tar.gz" && tar -xzf "$part/a.tar.gz" -C "$part/x" && src=$(ls -d "$part"/x/*/CL 2>/dev/null) &&
       [ "$(echo "$src" | wc -l)" -eq 1 ]; then
        cp -R "$src" "$part/CL" && cp "${src%/CL}/LICENSE" "$part/LICENSE" 2>/dev/null
        echo "Khronos OpenCL-Headers $2: $url" >"$part/SOURCE.new"
    else
        say "$1: cannot download $url: ${why:-not an OpenCL-Headers archive}; trying Debian $3's opencl-c-headers"
        rm -rf "$part/x" && mkdir -p "$part/x" || return 1
        if ! debian_download opencl-c-headers "$3" "$part"; then say "$1: $why"; return 1; fi
        deb=$(ls "$part"/opencl-c-headers_*.deb)
        if ! dpkg-deb -x "$deb" "$part/x" || ! cp -R "$part/x/usr/include/CL" "$part/CL"; then say "$1: $deb has no usr/include/CL"; return 1; fi
        cp "$part/x/usr/share/doc/opencl-c-headers/copyright" "$part/LICENSE" 2>/dev/null
        echo "Debian $3 opencl-c-headers $(dpkg-deb -f "$deb" Version): $DEBIAN_MIRROR" >"$part/SOURCE.new"
        rm -f "$deb"
    fi
    rm -rf "$part/x" "$part/a.tar.gz"
    for h in cl.h cl_ext.h cl_platform.h cl_version.h; do
        [ -f "$part/CL/$h" ] || { say "$1: CL/$h is missing"; return 1; }
    done
    if ! grep -q 'CL_TARGET_OPENCL_VERSION' "$part/CL/cl_version.h" || ! grep -q 'CL_VERSION_2_1' "$part/CL/cl_version.h"; then
        say "$1: CL/cl_version.h has no CL_TARGET_OPENCL_VERSION or CL_VERSION_2_1"; return 1
    fi
    mv "$part/SOURCE.new" "$part/SOURCE" && mv "$part" "$set_dir" && say "$1: $set_dir/CL: $(head -n 1 "$set_dir/SOURCE")"
}

for s in $sets; do
    if [ -f "$dir/$s/SOURCE" ]; then say "$s: have it ($(head -n 1 "$dir/$s/SOURCE" | cut -d: -f1))"; continue; fi
    rm -rf "${dir:?}/$s"
    case $s in
        cuda-12.3)     fetch_cuda ;;
        opencl-oldest) fetch_opencl "$s" "$OPENCL_OLDEST_TAG" bullseye ;;
        opencl-newest) fetch_opencl "$s" "$OPENCL_NEWEST_TAG" sid ;;
        *) say "unknown set $s (cuda-12.3, opencl-oldest, opencl-newest)"; false ;;
    esac || { failed=$((failed + 1)); rm -rf "$dir/.partial-$s"; say "$s: NOT fetched: tests/header_versions.sh skips its checks"; }
done
[ -n "$apt_dir" ] && rm -rf "$apt_dir"
if [ "$failed" -gt 0 ]; then say "$failed header set(s) could not be fetched (see above)"; exit 1; fi
