#!/usr/bin/env bash
# perf/gpu/gpu_deps.sh — the private dependency prefix for a bare GPU machine
# (no Debian development packages, no apt, no network). Called by
# perf/gpu_machine.sh; usable alone:
#
#   perf/gpu/gpu_deps.sh prepare DIR [--python PY]...   (a Debian 12 machine with
#        network to Debian's archive): puts into DIR what the build needs and
#        such a machine lacks, and prints its size; Python headers of a
#        python3.12 found here and of each PY
#   source perf/gpu/gpu_deps.sh; gpu_deps_env DIR PY    (the GPU machine): exports
#        PATH, CMAKE_PREFIX_PATH and friends for a build against DIR alone and
#        sets the array gpu_deps_cmake_args (pass it to cmake's configure)
#
# DIR's layout (relocatable: everything is found relative to DIR):
#   root/usr/...           the Debian packages below, `dpkg -x`-ed, trimmed
#   bin/pkg-config         Debian's pkgconf, reading root/'s .pc files only
#   python/include/pythonX.Y   Python's headers, used only when the target
#                              interpreter has none (a pip/venv Python without
#                              the distribution's -dev package)
#   nvjpeg/include/nvjpeg.h, nvjpeg/lib/libnvjpeg.so.13   nvJPEG's header and
#                          library from the nvidia-nvjpeg wheel (bootstrap.sh's
#                          cache): the GPU decoder is compiled against the
#                          header; the library is loaded at run time (RINGFEED_NVJPEG)
#   MANIFEST.txt           packages, versions, what was trimmed, sizes
#
# Shared libraries come from Debian 12 (glibc 2.36): they run on any newer
# glibc. The build links them with an RPATH (DT_RPATH, which also serves the
# libraries' own dependencies) to root/usr/lib/x86_64-linux-gnu, so nothing
# needs LD_LIBRARY_PATH at run time. Assumed present on the target (every
# Debian/Ubuntu base image has them): libc6, libstdc++6, libgcc-s1, zlib1g,
# libzstd1, liblzma5; gpu_deps_env checks them.
set -uo pipefail

gpu_deps_arch=x86_64-linux-gnu

# Development packages: headers, .so links, .pc files, CMake configs.
gpu_deps_dev=(
  liburing-dev libjpeg62-turbo-dev libturbojpeg0-dev libspng-dev libwebp-dev libtiff-dev
  libnfs-dev liblmdb-dev libmsgpuck-dev nlohmann-json3-dev libcli11-dev catch2
  libdlpack-dev libbenchmark-dev libboost1.81-dev
  libcurl4-openssl-dev libssl-dev libexpat1-dev
  libxxhash-dev
)
# The shared libraries behind them, and their dependencies beyond the base
# set above (libcurl's closure, `ldd libcurl.so.4` mapped by `dpkg -S`: the
# GPU image need not have libcurl4 or Debian's libssl3); pkgconf for CMake's
# pkg_check_modules.
gpu_deps_runtime=(
  liburing2 libjpeg62-turbo libturbojpeg0 libspng0 libwebp7 libwebpdemux2 libwebpmux3
  libtiff6 libdeflate0 libjbig0 liblerc4 libnfs13 liblmdb0 libbenchmark1debian
  libpkgconf3 pkgconf-bin
  libcurl4 libssl3 libexpat1 libxxhash0
  libbrotli1 libnghttp2-14 libidn2-0 libunistring2 libpsl5 librtmp1 libssh2-1
  libgnutls30 libnettle8 libhogweed6 libgmp10 libp11-kit0 libffi8 libtasn1-6
  libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1
  libldap-2.5-0 libsasl2-2
)
gpu_deps_base_libs=(libstdc++.so.6 libgcc_s.so.1 libz.so.1 libzstd.so.1 liblzma.so.5)

gpu_deps_log() { printf '[gpu_deps] %s\n' "$*" >&2; }

# The Boost headers the build includes, and only those: libboost1.81-dev is
# 180 MB unpacked, the build uses Boost.Asio and what it pulls in. The set is
# the compiler's own dependency list (g++ -M) for one translation unit that
# includes every <boost/...> header named in the repository's sources, under
# the flags that change what Asio includes (-pthread, -DNDEBUG, C++20), plus
# all of boost/config/ (its compiler and library branches differ between GCC
# versions). A header added to the sources later needs a new --prepare.
gpu_deps_trim_boost() {  # root repo
  local root="$1" repo="$2" tu list
  tu="$(mktemp --suffix=.cpp)" list="$(mktemp)"
  grep -rhoE '#include <boost/[^>]+>' --include='*.cpp' --include='*.hpp' --include='*.h' \
    --include='*.cu' "$repo/include" "$repo/lib" "$repo/apps" "$repo/tests" "$repo/perf" | sort -u >"$tu"
  [ -s "$tu" ] || { gpu_deps_log "no <boost/...> include in the sources?"; rm -f "$tu" "$list"; return 1; }
  local flags
  for flags in "-std=c++20 -pthread" "-std=c++20 -pthread -DNDEBUG -O3" "-std=c++20 -pthread -D_GNU_SOURCE"; do
    # shellcheck disable=SC2086  # the flags are words
    # -isystem puts the prefix before /usr/include: its Boost is the one listed.
    g++ $flags -M -MT x -isystem "$root/usr/include" -x c++ "$tu" | tr ' \\' '\n\n' |
      grep -F "$root/usr/include/boost/" >>"$list" || { rm -f "$tu" "$list"; return 1; }
  done
  (cd "$root/usr/include" && find boost/config -type f) | sed "s|^|$root/usr/include/|" >>"$list"
  local keep kept
  keep="$(mktemp -d)"
  sort -u "$list" | sed "s|^$root/usr/include/||" | (cd "$root/usr/include" && xargs cp --parents -t "$keep")
  rm -rf "$root/usr/include/boost" && mv "$keep/boost" "$root/usr/include/boost" && rmdir "$keep"
  kept="$(find "$root/usr/include/boost" -type f | wc -l)"
  gpu_deps_log "boost: kept $kept headers ($(du -sh "$root/usr/include/boost" | cut -f1)) of libboost1.81-dev, the ones $(wc -l <"$tu") includes need"
  echo "boost: $kept headers kept (g++ -M closure of: $(tr '\n' ' ' <"$tu"))" >>"$root/../MANIFEST.txt"
  rm -f "$tu" "$list"
}

# .pc files: every /usr they name becomes ${gpu_deps_root}/usr, defined from
# pkgconf's ${pcfiledir} so DIR can move; Requires.private/Libs.private go
# (shared linking only: libtiff's private zlib/zstd/... modules are not shipped).
gpu_deps_fix_pc() {  # root
  local pc rel
  while IFS= read -r pc; do
    rel="$(realpath --relative-to="$(dirname "$pc")" "$1")"
    sed -E -i -e '/^(Requires|Libs)\.private:/d' \
      -e "s#(^[a-z_]+=|[ =]|-I|-L)/usr(/|\$| )#\1\${gpu_deps_root}/usr\2#g" "$pc"
    sed -i "1i gpu_deps_root=\${pcfiledir}/$rel" "$pc"
  done < <(find "$1" -name '*.pc')
}

gpu_deps_python_headers() {  # dir python...
  local dir="$1" py inc plat ver
  shift
  for py in "$@"; do
    read -r ver inc plat < <("$py" -c 'import sys, sysconfig; print(f"{sys.version_info[0]}.{sys.version_info[1]}", sysconfig.get_path("include"), sysconfig.get_path("platinclude"))' 2>/dev/null) ||
      { gpu_deps_log "python $py: cannot run it, no headers copied"; continue; }
    if [ ! -f "$inc/Python.h" ]; then gpu_deps_log "python $py ($ver): no Python.h in $inc"; continue; fi
    mkdir -p "$dir/python/include"
    rm -rf "$dir/python/include/python$ver"
    cp -rL "$inc" "$dir/python/include/python$ver"
    # Debian's pyconfig.h is a multiarch wrapper: take the real one.
    [ -f "$plat/pyconfig.h" ] && cp -L "$plat/pyconfig.h" "$dir/python/include/python$ver/pyconfig.h"
    [ -f "/usr/include/$gpu_deps_arch/python$ver/pyconfig.h" ] &&
      cp -L "/usr/include/$gpu_deps_arch/python$ver/pyconfig.h" "$dir/python/include/python$ver/pyconfig.h"
    gpu_deps_log "python $ver headers from $py ($inc)"
    echo "python$ver headers: from $py ($inc)" >>"$dir/MANIFEST.txt"
  done
}

gpu_deps_prepare() {  # DIR [--python PY]...
  local dir="${1:?usage: gpu_deps.sh prepare DIR [--python PY]...}" repo pythons=()
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --python) pythons+=("$2"); shift ;;
      *) gpu_deps_log "unknown argument $1"; return 2 ;;
    esac
    shift
  done
  # Always a python3.12 (the GPU machines' Python), besides those named.
  local p found=""
  for p in "$(command -v python3.12 || true)" "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
    [ -x "$p" ] && "$p" -c 'import sysconfig' >/dev/null 2>&1 && { found="$p"; break; }
  done
  if [ -n "$found" ]; then pythons=("$found" "${pythons[@]}"); else
    gpu_deps_log "no python3.12 here: DIR gets no Python 3.12 headers (--python PY to name one)"
  fi
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  command -v apt-get >/dev/null && command -v dpkg >/dev/null || { gpu_deps_log "needs apt-get and dpkg (Debian 12)"; return 1; }
  mkdir -p "$dir" && dir="$(cd "$dir" && pwd)"
  rm -rf "${dir:?}/root" "${dir:?}/bin" "${dir:?}/python" "${dir:?}/debs"
  mkdir -p "$dir/debs" "$dir/root" "$dir/bin"
  : >"$dir/MANIFEST.txt"
  gpu_deps_log "downloading ${#gpu_deps_dev[@]} development and ${#gpu_deps_runtime[@]} runtime packages"
  (cd "$dir/debs" && apt-get download "${gpu_deps_dev[@]}" "${gpu_deps_runtime[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed') ||
    { gpu_deps_log "apt-get download failed (apt-get update first?)"; return 1; }
  local deb
  for deb in "$dir"/debs/*.deb; do
    dpkg -x "$deb" "$dir/root"
    echo "deb: $(basename "$deb") $(stat -c %s "$deb") bytes" >>"$dir/MANIFEST.txt"
  done
  # Packages not yet merged into /usr (libexpat1, libcom-err2, libkeyutils1)
  # unpack to lib/: into usr/lib/ with the rest, where the RPATH looks.
  if [ -d "$dir/root/lib" ]; then
    cp -a "$dir/root/lib/." "$dir/root/usr/lib/" && rm -rf "$dir/root/lib"
  fi
  local debs_bytes
  debs_bytes="$(du -sb "$dir/debs" | cut -f1)"
  rm -rf "$dir/debs"
  # What the build never reads: docs, man pages, static archives beside a .so.
  rm -rf "$dir/root/usr/share/doc" "$dir/root/usr/share/man" "$dir/root/usr/share/lintian" \
    "$dir/root/usr/share/Catch2"
  find "$dir/root" -xtype l -delete  # links into packages not shipped (libtiffxx.so)
  local a
  for a in "$dir/root/usr/lib/$gpu_deps_arch"/*.a; do
    [ -e "${a%.a}.so" ] && rm -f "$a"
  done
  gpu_deps_trim_boost "$dir/root" "$repo" || { gpu_deps_log "could not list the Boost headers the build uses"; return 1; }
  gpu_deps_fix_pc "$dir/root"
  cat >"$dir/bin/pkg-config" <<'EOF'
#!/bin/sh
# Debian's pkgconf from the private prefix, reading only the prefix's .pc files.
root="$(cd "$(dirname "$(readlink -f "$0")")/../root" && pwd)"
PKG_CONFIG_LIBDIR="$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig" \
PKG_CONFIG_PATH="" LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  exec "$root/usr/bin/pkgconf" "$@"
EOF
  chmod +x "$dir/bin/pkg-config"
  [ ${#pythons[@]} -gt 0 ] && gpu_deps_python_headers "$dir" "${pythons[@]}"
  # nvJPEG (issue 43): the bootstrap's copy of the nvidia-nvjpeg wheel.
  local nvj="${RINGFEED_NVJPEG_CACHE:-$HOME/.cache/ringfeed/nvjpeg-cu13}"
  [ -f "$nvj/include/nvjpeg.h" ] || (cd "$repo" && ./bootstrap.sh deps >/dev/null 2>&1)
  rm -rf "${dir:?}/nvjpeg"
  if [ -f "$nvj/include/nvjpeg.h" ]; then
    mkdir -p "$dir/nvjpeg" && cp -r "$nvj/include" "$nvj/lib" "$dir/nvjpeg/"
    echo "nvjpeg: $(cat "$nvj/.version" 2>/dev/null) from $nvj" >>"$dir/MANIFEST.txt"
  else
    gpu_deps_log "no nvjpeg.h in $nvj (./bootstrap.sh deps fetches it): the GPU decoder will not be built there"
  fi
  # timm (issue 42's parity step): the GPU machine has torch and torchvision
  # but no timm and no network. Its pure-Python wheel (the version the torch
  # 2.x venv pins) imports with torch, torchvision, numpy and Pillow alone;
  # the step unpacks it there (2.5 MB here, 17 MB unpacked).
  local timm
  timm="$(grep -m1 '^timm==' "$repo/tests/python/torch2-requirements.txt")"
  rm -rf "${dir:?}/python-wheels"
  if [ -n "$timm" ] && python3 -m pip download -q --no-deps --only-binary=:all: -d "$dir/python-wheels" "$timm" \
       >/dev/null 2>&1; then
    echo "python wheel: $(basename "$dir"/python-wheels/*.whl)" >>"$dir/MANIFEST.txt"
  else
    gpu_deps_log "could not download ${timm:-timm} (pip): the parity step's timm tests will skip there"
  fi
  local total
  total="$(du -sb "$dir" | cut -f1)"
  echo "downloaded: $debs_bytes bytes of .deb; DIR now: $total bytes" >>"$dir/MANIFEST.txt"
  gpu_deps_log "prepared $dir: $((total / 1024)) KiB ($((debs_bytes / 1024)) KiB of .deb downloaded); see $dir/MANIFEST.txt"
  # The check the GPU machine would fail at: every module resolves in DIR.
  "$dir/bin/pkg-config" --cflags --libs liburing libjpeg libturbojpeg spng libwebp libwebpdemux libtiff-4 libnfs lmdb libcurl openssl expat libxxhash >/dev/null ||
    { gpu_deps_log "pkg-config cannot resolve the prefix's modules"; return 1; }
}

# gpu_deps_env DIR PY: the environment of a build against DIR alone.
gpu_deps_env() {
  local dir="$1" py="$2" lib missing=() l
  dir="$(cd "$dir" && pwd)" || return 1
  [ -x "$dir/bin/pkg-config" ] && [ -d "$dir/root/usr/include" ] ||
    { gpu_deps_log "$dir is not a prepared folder (perf/gpu_machine.sh --prepare DIR)"; return 1; }
  lib="$dir/root/usr/lib/$gpu_deps_arch"
  for l in "${gpu_deps_base_libs[@]}"; do
    ldconfig -p 2>/dev/null | grep -q " $l " || [ -e "/usr/lib/$gpu_deps_arch/$l" ] || [ -e "/lib/$gpu_deps_arch/$l" ] || missing+=("$l")
  done
  [ ${#missing[@]} -eq 0 ] || { gpu_deps_log "the base libraries ${missing[*]} are missing here: add their Debian packages to gpu_deps_runtime"; return 1; }
  export PATH="$dir/bin:$PATH"
  export PKG_CONFIG="$dir/bin/pkg-config"
  export CMAKE_PREFIX_PATH="$dir/root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  # CMake 4 (pip's) refuses configs declaring cmake_minimum_required < 3.5.
  export CMAKE_POLICY_VERSION_MINIMUM=3.5
  # DT_RPATH (not RUNPATH): it also serves the libraries' own dependencies
  # (libtiff's libdeflate), so no LD_LIBRARY_PATH is needed to run anything.
  local ld="-Wl,--disable-new-dtags -Wl,-rpath,$lib -Wl,-rpath-link,$lib"
  gpu_deps_cmake_args=(
    -DPKG_CONFIG_EXECUTABLE="$dir/bin/pkg-config" -DCMAKE_POLICY_VERSION_MINIMUM=3.5
    -DCMAKE_EXE_LINKER_FLAGS="$ld" -DCMAKE_SHARED_LINKER_FLAGS="$ld" -DCMAKE_MODULE_LINKER_FLAGS="$ld"
  )
  [ -f "$dir/nvjpeg/include/nvjpeg.h" ] && gpu_deps_cmake_args+=(-DRINGFEED_NVJPEG_INCLUDE="$dir/nvjpeg/include")
  # The wheel's library unless the caller names one (the GPU decoder's
  # search would find a torchvision.libs copy of another major first).
  [ -z "${RINGFEED_NVJPEG:-}" ] && [ -f "$dir/nvjpeg/lib/libnvjpeg.so.13" ] &&
    export RINGFEED_NVJPEG="$dir/nvjpeg/lib/libnvjpeg.so.13"
  local ver inc
  read -r ver inc < <("$py" -c 'import sys, sysconfig; print(f"{sys.version_info[0]}.{sys.version_info[1]}", sysconfig.get_path("include"))' 2>/dev/null) ||
    { gpu_deps_log "cannot run $py"; return 1; }
  if [ -f "$inc/Python.h" ]; then
    gpu_deps_log "python $ver ($py): its own headers ($inc)"
  elif [ -f "$dir/python/include/python$ver/Python.h" ]; then
    gpu_deps_log "python $ver ($py) has no headers in $inc: using $dir/python/include/python$ver"
    gpu_deps_cmake_args+=(-DPython3_INCLUDE_DIR="$dir/python/include/python$ver")
  else
    gpu_deps_log "python $ver ($py) has no Python.h and $dir has none for $ver: prepare with --python (a python$ver with headers)"
    return 1
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-}" in
    prepare) shift; gpu_deps_prepare "$@" ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
fi
