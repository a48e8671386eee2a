#!/usr/bin/env bash
# ringfeed bootstrap: install what is missing (Debian 12), build, and run.
#
#   ./bootstrap.sh demo   install, build Release, generate a sample dataset, run `ringfeed bench` on it
#   ./bootstrap.sh test   install, build, run every test: normal build (C++, C API, Python under Debian's
#                         torch 1.13 and again under torch 2.14.1 in a cached venv), ASan+UBSan, TSan,
#                         and the libFuzzer targets (corpus replay, then 30 s of fuzzing each; 15 s under CI)
#   ./bootstrap.sh deps   only install the Debian packages the build needs, s3rver (npm) for the
#                         object-store tests, into ~/.cache/ringfeed/node (RINGFEED_NODE_PREFIX), and
#                         nvJPEG's header (the nvidia-nvjpeg wheel) into ~/.cache/ringfeed/nvjpeg-cu13
#
# demo and test also install the Python package for Debian's /usr/bin/python3
# (into /usr/local/lib/python3.X/dist-packages): `python3 -c "import ringfeed"`.
# Idempotent: packages already present are not touched, builds are incremental.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

jobs="${RINGFEED_JOBS:-$(nproc)}"

# Everything the build, tests and CLI use. The CUDA toolkit is not a Debian
# package here: it is used from /usr/local/cuda when present (RINGFEED_CUDA=AUTO).
packages=(
  g++ cmake ninja-build pkg-config git
  liburing-dev libboost1.81-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev
  libtiff-dev libtiff-tools             # TIFF decoding (>= 4.5: per-open error handlers); make_tiff.py
                                        # makes tiled, planar and YCbCr-JPEG files with tiffcp
  catch2 libbenchmark-dev libtbb-dev
  libcli11-dev nlohmann-json3-dev
  libnfs-dev                            # nfs:// sources
  libwebp-dev                           # WebP decoding (libwebp + libwebpdemux, as Pillow uses)
  nfs-ganesha nfs-ganesha-vfs rpcbind   # a real NFS server on 127.0.0.1 for nfs_tests
  libfuse3-dev                          # flaky_fs_tests: a FUSE mount that fails reads on demand
  libxxhash-dev                         # the pixel cache's checksums and keys (XXH3)
  liblmdb-dev libmsgpuck-dev            # lmdb:// sources; msgpuck decodes their msgpack records (msgpack-c's
                                        # C++ package needs libboost-dev 1.74, which conflicts with 1.81)
  python3-lmdb python3-msgpack          # lmdb_tests and test_lmdb.py write their databases with these
  fio gnuplot-nox                       # perf/run and perf/compare/compare_fio.sh: the device's limit, plots
  python3 tar  # tests build tar shards with GNU tar and Python's tarfile
  python3-torchvision python3-pil python3-numpy  # torchvision parity tests; the DataLoader baseline in perf/
  clang libclang-rt-14-dev              # the libFuzzer targets in tests/fuzz (the fuzz preset)
  pybind11-dev python3-pybind11 python3-dev python3-pytest python3-pip libdlpack-dev  # the Python module (zero-copy tensors through DLPack) and its tests
  python3-venv                          # the torch 2.x venv the Python tests run in a second time
  libcurl4-openssl-dev libssl-dev       # s3:// and https:// sources: libcurl's multi interface; SigV4's HMAC/SHA-256
  libexpat1-dev                         # S3 ListObjectsV2, error and STS responses
  python3-boto3 openssl                 # the object-store tests' uploads and perf baseline; their TLS certificates
)

# The object-store tests' S3 server: s3rver from npm, into a folder of its
# own (never a global npm install). Node and npm come from Debian unless a
# node with npm is already on PATH.
node_prefix="${RINGFEED_NODE_PREFIX:-$HOME/.cache/ringfeed/node}"
s3rver_version=3.7.1

log() { printf '\033[1m[bootstrap +%ss]\033[0m %s\n' "$SECONDS" "$*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_deps() {
  local missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "all ${#packages[@]} Debian packages present"
    return
  fi
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Install from the current lists first; refresh them only if that fails.
  if ! as_root apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    as_root apt-get update -q
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

install_s3rver() {
  if ! command -v npm >/dev/null 2>&1; then
    log "installing Debian's nodejs and npm (for s3rver)"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get install -y -q --no-install-recommends nodejs npm ||
      { as_root apt-get update -q && as_root apt-get install -y -q --no-install-recommends nodejs npm; }
  fi
  local installed="$node_prefix/node_modules/s3rver/package.json"
  if [ -f "$installed" ] && grep -q "\"version\": \"$s3rver_version\"" "$installed"; then
    log "s3rver $s3rver_version present in $node_prefix"
    return
  fi
  log "installing s3rver $s3rver_version into $node_prefix (npm install --prefix)"
  mkdir -p "$node_prefix"
  npm install --prefix "$node_prefix" --no-audit --no-fund --loglevel=error "s3rver@$s3rver_version"
}

# The torch 2.x world: a venv of Debian's python3 (the same ABI as the
# module the build makes) with tests/python/torch2-requirements.txt, every
# package pinned; torch's CUDA build runs on the CPU. Several GB, so one
# venv, cached across clones and runs (RINGFEED_TORCH2_VENV), never a
# global install; rebuilt only when the requirements change.
# RINGFEED_TORCH2=0 skips it (and the tests that need it say so).
torch2_venv="${RINGFEED_TORCH2_VENV:-$HOME/.cache/ringfeed/venv-torch2}"
torch2_python=""
ensure_torch2_venv() {
  [ "${RINGFEED_TORCH2:-1}" = 0 ] && { log "RINGFEED_TORCH2=0: no torch 2.x venv, its test leg is not run"; return; }
  local req="$here/tests/python/torch2-requirements.txt" stamp="$torch2_venv/.ringfeed-requirements"
  if [ -x "$torch2_venv/bin/python" ] && cmp -s "$req" "$stamp"; then
    log "torch 2.x venv present: $torch2_venv"
  else
    log "creating the torch 2.x venv in $torch2_venv (pip, pinned: tests/python/torch2-requirements.txt)"
    rm -rf "$torch2_venv"
    /usr/bin/python3 -m venv "$torch2_venv"
    "$torch2_venv/bin/pip" install -q --no-input -r "$req" ||
      { log "pip could not install $req (no PyPI? set RINGFEED_TORCH2=0 to test without torch 2.x)"; return 1; }
    cp "$req" "$stamp"
  fi
  torch2_python="$torch2_venv/bin/python"
}

# nvJPEG's header for the GPU JPEG decoder (lib/cuda/nvjpeg_decoder.cpp):
# the CUDA toolkit here has no nvjpeg.h, so the build takes it from the
# nvidia-nvjpeg wheel on PyPI (CUDA 13; the header and libnvjpeg.so.13),
# unpacked into a cache folder of its own, never committed, fetched once per
# version (a stamp file holds it). CMake finds it there (RINGFEED_NVJPEG_INCLUDE;
# CMakeLists.txt). 13.0.x matches the toolkit's 13.0: the header declares
# nothing its library lacks. The library stays optional at run time: ringfeed
# loads it with dlopen (lib/cuda/nvjpeg_library.hpp), and the wheel's copy in
# this cache is found only through RINGFEED_NVJPEG. RINGFEED_NVJPEG_FETCH=0
# skips the download (the decoder is then left out of the build, and CI fails).
nvjpeg_cache="${RINGFEED_NVJPEG_CACHE:-$HOME/.cache/ringfeed/nvjpeg-cu13}"
nvjpeg_version=13.0.4.44  # nvidia-nvjpeg on PyPI; x86_64 wheel 3,727,905 bytes
fetch_nvjpeg() {
  if [ -f "$nvjpeg_cache/include/nvjpeg.h" ] && [ "$(cat "$nvjpeg_cache/.version" 2>/dev/null)" = "$nvjpeg_version" ]; then
    log "nvJPEG header present: $nvjpeg_cache (nvidia-nvjpeg $nvjpeg_version)"
    return
  fi
  if [ "${RINGFEED_NVJPEG_FETCH:-1}" = 0 ]; then
    log "RINGFEED_NVJPEG_FETCH=0: no nvjpeg.h, the nvJPEG decoder is not built"
    return
  fi
  log "fetching nvidia-nvjpeg $nvjpeg_version (nvjpeg.h, libnvjpeg.so.13) into $nvjpeg_cache (pip download)"
  local tmp
  tmp="$(mktemp -d)"
  if ! /usr/bin/python3 -m pip download -q --no-input --no-deps --only-binary=:all: \
         --platform "manylinux2014_$(uname -m)" -d "$tmp" "nvidia-nvjpeg==$nvjpeg_version"; then
    rm -rf "$tmp"
    log "pip could not download nvidia-nvjpeg $nvjpeg_version (no PyPI?): the nvJPEG decoder is not built"
    [ "${CI:-}" = true ] && return 1  # CI compiles the real nvJPEG calls
    return 0
  fi
  # The wheel is a zip: nvidia/cu13/{include/nvjpeg.h,lib/libnvjpeg.so.13}.
  rm -rf "$nvjpeg_cache" && mkdir -p "$nvjpeg_cache"
  /usr/bin/python3 - "$tmp"/nvidia_nvjpeg-*.whl "$nvjpeg_cache" <<'PY'
import pathlib, shutil, sys, zipfile
wheel, dest = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    for name in ("nvidia/cu13/include/nvjpeg.h", "nvidia/cu13/lib/libnvjpeg.so.13"):
        out = dest / pathlib.PurePosixPath(name).relative_to("nvidia/cu13")
        out.parent.mkdir(parents=True, exist_ok=True)
        with z.open(name) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
PY
  rm -rf "$tmp"
  echo "$nvjpeg_version" >"$nvjpeg_cache/.version"
}

configure_and_build() {  # preset
  log "configure + build: preset $1"
  local flags=()
  # CI keeps line tables only in the default build, as the sanitizer presets
  # always do (reports still name file:line): full debug info doubles a
  # tree's size and a third of its compile time.
  # The CLI and the tests take -O1 there (RINGFEED_OUTER_CXX_FLAGS): a
  # quarter less compile time; the library they run keeps -O2.
  [ "${CI:-}" = true ] && [ "$1" = default ] && flags=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
                                                       -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
                                                       -DRINGFEED_OUTER_CXX_FLAGS=-O1)
  # the Python tests' second world (default preset only: the others run C++)
  [ "$1" = default ] && flags+=(-DRINGFEED_TORCH2_PYTHON="$torch2_python")
  # nvJPEG's header where fetch_nvjpeg put it (CMake's default search looks
  # there too; an explicit RINGFEED_NVJPEG_CACHE must reach it)
  [ -f "$nvjpeg_cache/include/nvjpeg.h" ] && flags+=(-DRINGFEED_NVJPEG_INCLUDE="$nvjpeg_cache/include")
  # CI's 45 minutes on 2 cores pay for the torch 2.x leg with 15 s less
  # fuzzing per target (26 targets); the corpus replay is unchanged.
  [ "$1" = fuzz ] && [ "${CI:-}" = true ] && flags+=(-DRINGFEED_FUZZ_SECONDS=15)
  cmake --preset "$1" "${flags[@]}" >/dev/null
  cmake --build --preset "$1" -j "$jobs"
}

# The Python package of a build, for Debian's python3 (/usr/local site-packages).
install_python() {  # preset
  if [ -d "build/$1/python/ringfeed" ]; then
    log "installing the Python package (build/$1) for /usr/bin/python3"
    as_root cmake --install "build/$1" --component python >/dev/null
  fi
}

# Runs one ctest preset, prints its summary, and adds its counts to the totals.
passed=0 failed=0 skipped=0
run_tests() {  # preset
  local junit="build/$1/ctest-junit.xml" rc=0
  log "tests: preset $1"
  ctest --preset "$1" -j "$jobs" --output-junit "$here/$junit" || rc=$?
  if [ -f "$junit" ]; then
    local line t f s
    line="$(tr '\n\t' '  ' <"$junit" | grep -o '<testsuite [^>]*>' | head -n 1 || true)"
    t="$(sed -n 's/.* tests="\([0-9]*\)".*/\1/p' <<<"$line")"
    f="$(sed -n 's/.* failures="\([0-9]*\)".*/\1/p' <<<"$line")"
    s="$(sed -n 's/.* skipped="\([0-9]*\)".*/\1/p' <<<"$line")"
    t="${t:-0}" f="${f:-0}" s="${s:-0}"
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1  # ctest failed without a failing test: count it
    passed=$((passed + t - f - s)) failed=$((failed + f)) skipped=$((skipped + s))
  elif [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
  fi
  return 0
}

# Free disk space where the build tree lives, in MiB.
free_mib() { df -Pm "$here" | awk 'NR == 2 { print $4 }'; }

# Under CI a build tree is not reused: once its tests ran and another preset
# follows, it is removed (its JUnit report kept as build/<preset>-junit.xml),
# so the four trees never sit on the disk together. A CI machine once ran out
# of disk in the second one. The last (fuzz) keeps its found inputs.
prune_build() {  # preset
  [ "${CI:-}" = true ] || return 0
  [ -f "build/$1/ctest-junit.xml" ] && cp "build/$1/ctest-junit.xml" "build/$1-junit.xml"
  rm -rf "build/$1"
  log "removed build/$1 (CI); $(free_mib) MiB free"
}

test_preset() {  # preset [last]
  log "$(free_mib) MiB free before preset $1"
  configure_and_build "$1"
  [ "$1" = default ] && install_python default
  run_tests "$1"
  [ -n "${2:-}" ] || prune_build "$1"
}

cmd_test() {
  install_deps
  install_s3rver
  fetch_nvjpeg
  ensure_torch2_venv
  test_preset default
  test_preset asan
  test_preset tsan
  test_preset fuzz last
  echo
  echo "ringfeed tests (default + asan + tsan + fuzz):"
  echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
  [ "$failed" -eq 0 ]
}

cmd_demo() {
  install_deps
  fetch_nvjpeg
  configure_and_build release
  install_python release
  local cli="build/release/bin/ringfeed" data="build/sample-dataset"
  log "generating a sample ImageNet-like dataset in $data"
  "$cli" gen "$data" --images 2000 --classes 10 --seed 1
  log "ringfeed bench $data/train --pipeline train (read + decode + RandomResizedCrop + flip + normalize, batches of 64)"
  "$cli" bench "$data/train" --pipeline train --batch 64 --epochs 2
}

case "${1:-}" in
  demo) cmd_demo ;;
  test) cmd_test ;;
  deps) install_deps && install_s3rver && fetch_nvjpeg ;;
  *)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
