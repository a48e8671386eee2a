#!/usr/bin/env bash
# perf/gpu/gpu_hidden_selftest.sh DIR [--out RESULTS] [--ctest-args "..."] [--build-only] [--cuda]
#
# The proof, on this Debian 12 machine, that a folder made by
# `perf/gpu_machine.sh --prepare DIR` is all a bare GPU machine needs: in a
# private mount namespace (root; nothing outside it changes) /usr is an
# overlay that hides every file of every installed development package
# (*-dev, catch2, pkg-config/pkgconf) except the compiler's own (g++'s and
# libc6-dev's -dev dependencies: the GPU machine has a compiler and libc
# headers) and pybind11-dev (standing in for pip's pybind11 there).
# Python's headers (libpython3.X-dev) are hidden too, so the build takes
# them from DIR as it does on a GPU machine whose venv Python has none.
# Runtime libraries (libjpeg62-turbo, libtiff6, ...) stay visible: Debian's
# own Python modules (Pillow, used by the tests) link them; the build's
# binaries load ours through their RPATH, and the check below shows it.
#
# Inside, it checks that the hidden files are gone, then runs
#   perf/gpu_machine.sh --deps DIR --step build --targets all   (RINGFEED_CUDA=OFF;
#   no 9-minute limit: this machine has 2 cores, the GPU machine 16)
# and ctest on that build, less what needs services the GPU machine
# lacks (labels nfs: a ganesha NFS server; flaky_fs_tests needs libfuse3,
# not shipped, so it is not even built). Exit status: the build's or
# ctest's. The build directory is build/gpu-deps. --build-only builds what
# the GPU machine's steps build (--targets gpu: the CLI, the Python module,
# the CUDA tests' targets) and stops there: the quick check of a new --prepare
# before spending device time on it. --cuda builds with RINGFEED_CUDA=AUTO
# instead (nvcc at /usr/local/cuda is not hidden): the CUDA stage, nvJPEG's
# calls against DIR's nvjpeg.h and the CUDA tests' targets compile as they
# will on the GPU machine (for every architecture nvcc targets by default).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${1:?usage: perf/gpu/gpu_hidden_selftest.sh DIR [--out RESULTS] [--ctest-args ARGS]}"
shift
out=""
ctest_args="-LE nfs"
build_only=0
cuda=OFF
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --ctest-args) ctest_args="$2"; shift ;;
    --build-only) build_only=1 ;;
    --cuda) cuda=AUTO ;;
    *) echo "gpu_hidden_selftest: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
dir="$(cd "$dir" && pwd)" || exit 1
out="${out:-$here/build/gpu-machine/selftest-hidden}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
log() { printf '[selftest-hidden] %s\n' "$*" | tee -a "$out/selftest.txt"; }

if [ -z "${RINGFEED_HIDDEN_NS:-}" ]; then
  [ "$(id -u)" = 0 ] || { echo "gpu_hidden_selftest: needs root (a mount namespace and an overlay on /usr)" >&2; exit 1; }
  : >"$out/selftest.txt"
  only=()
  [ "$build_only" = 1 ] && only=(--build-only)
  [ "$cuda" = AUTO ] && only+=(--cuda)
  RINGFEED_HIDDEN_NS=1 exec unshare --mount --propagation private -- "$0" "$dir" --out "$out" --ctest-args "$ctest_args" "${only[@]}"
fi

# --- inside the namespace: hide the development packages ------------------------------------
keep="$(apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts --no-breaks \
          --no-replaces --no-enhances g++ libc6-dev 2>/dev/null | grep -v '^ ' | grep -- '-dev$' | sort -u)"
keep="$keep"$'\n'"pybind11-dev"
mapfile -t hidden_pkgs < <(dpkg-query -W -f '${Package}\n' | grep -E -- '-dev$|^catch2$|^pkgconf(-bin)?$|^pkg-config$' |
                            grep -vxF -f <(echo "$keep") | sort -u)
log "hiding ${#hidden_pkgs[@]} packages; kept visible: $(echo "$keep" | tr '\n' ' ')"
scratch=/run/ringfeed-hidden
mkdir -p "$scratch" && mount -t tmpfs tmpfs "$scratch" && mkdir -p "$scratch/upper" "$scratch/work"
# One whiteout (a 0/0 character device in the upper layer) per file; in
# Python, since a process per file takes minutes for ~26,000 files.
n="$(dpkg -L "${hidden_pkgs[@]}" 2>/dev/null | python3 -c '
import os, stat, sys
upper, n = sys.argv[1], 0
for f in sorted(set(sys.stdin.read().split("\n"))):
    if not f.startswith("/") or (os.path.isdir(f) and not os.path.islink(f)):
        continue
    if not os.path.lexists(f):
        continue
    real = os.path.join(os.path.realpath(os.path.dirname(f)), os.path.basename(f))  # merged /usr: /lib -> usr/lib
    if not real.startswith("/usr/"):
        continue
    w = os.path.join(upper, real[len("/usr/"):])
    os.makedirs(os.path.dirname(w), exist_ok=True)
    if not os.path.lexists(w):
        os.mknod(w, stat.S_IFCHR | 0o600, os.makedev(0, 0))
        n += 1
print(n)
' "$scratch/upper")" || { log "could not make the whiteouts"; exit 1; }
mount -t overlay overlay -o "lowerdir=/usr,upperdir=$scratch/upper,workdir=$scratch/work" /usr ||
  { log "cannot mount an overlay on /usr"; exit 1; }
log "hidden: $n files under /usr"

# They are gone: headers, .so links, .pc files, CMake configs, pkg-config.
gone=(/usr/include/boost/version.hpp /usr/include/jpeglib.h /usr/include/turbojpeg.h /usr/include/liburing.h
      /usr/include/spng.h /usr/include/x86_64-linux-gnu/tiffconf.h /usr/include/webp/decode.h /usr/include/nfsc/libnfs.h
      /usr/include/lmdb.h /usr/include/msgpuck.h /usr/include/nlohmann/json.hpp /usr/include/CLI/CLI.hpp
      /usr/include/catch2/catch.hpp /usr/include/dlpack/dlpack.h /usr/include/benchmark/benchmark.h
      /usr/include/fuse3/fuse.h /usr/include/python3.11/Python.h
      /usr/lib/x86_64-linux-gnu/libjpeg.so /usr/lib/x86_64-linux-gnu/libtiff.so /usr/lib/x86_64-linux-gnu/liburing.so
      /usr/lib/x86_64-linux-gnu/pkgconfig/libtiff-4.pc /usr/lib/x86_64-linux-gnu/cmake/Boost-1.81.0/BoostConfig.cmake
      /usr/include/x86_64-linux-gnu/curl/curl.h /usr/include/openssl/evp.h /usr/include/expat.h /usr/include/xxhash.h
      /usr/bin/pkg-config /usr/bin/pkgconf)
for f in "${gone[@]}"; do
  if [ -e "$f" ]; then log "FAILED: $f is still visible"; exit 1; fi
done
command -v pkg-config >/dev/null && { log "FAILED: pkg-config still on PATH ($(command -v pkg-config))"; exit 1; }
log "checked: ${#gone[@]} sentinel files (Boost, libjpeg, liburing, libtiff, Catch2, Python.h, pkg-config, ...) are gone"

# --- the build and its tests, against DIR alone ---------------------------------------------
cd "$here" || exit 1
rc=0
targets=all
[ "$build_only" = 1 ] && targets=gpu
RINGFEED_CUDA="$cuda" "$here/perf/gpu_machine.sh" --deps "$dir" --out "$out" --step build --targets "$targets" \
  --step-limit 7200 --jobs "$(nproc)" || rc=$?
if [ "$rc" != 0 ]; then log "the build against $dir FAILED (exit $rc): $out/build.log"; exit "$rc"; fi
# ldd, inside the namespace: every library the build links comes from DIR.
bad="$(ldd build/gpu-deps/bin/ringfeed build/gpu-deps/python/ringfeed/_ringfeed*.so |
       grep -E 'uring|jpeg|spng|webp|tiff|nfs|lmdb|deflate|jbig|Lerc|curl|crypto|expat|xxhash' | grep -vF "$dir/" || true)"
[ -z "$bad" ] || { log "FAILED: libraries from outside $dir: $bad"; exit 1; }
log "ldd: ringfeed and _ringfeed load liburing, libjpeg, libturbojpeg, libspng, libwebp, libtiff, libnfs, liblmdb, libcurl, libcrypto, libxxhash from $dir"
[ "$build_only" = 1 ] && exit 0
# ctest's children (install_consumer configures a consumer project) find
# pkg-config and the packages through the same environment as the build.
# shellcheck source=perf/gpu/gpu_deps.sh
source "$here/perf/gpu/gpu_deps.sh"
gpu_deps_env "$dir" "$(command -v python3)" 2>/dev/null || { log "gpu_deps_env $dir failed"; exit 1; }
# shellcheck disable=SC2086  # ctest_args are words
(cd build/gpu-deps && ctest -j 2 --timeout 900 --output-on-failure $ctest_args) 2>&1 | tee -a "$out/ctest.txt"
rc=${PIPESTATUS[0]}
log "ctest $ctest_args: $(grep -E 'tests passed|tests failed' "$out/ctest.txt" | tail -n1) (exit $rc)"
if [ "$rc" != 0 ]; then
  # Two jobs on this machine's 2 shared cores can starve the tests that time
  # their own threads (loader_tests' decode busy time): the failed ones once
  # more, alone. Both results stay in ctest.txt and selftest.txt.
  (cd build/gpu-deps && ctest --rerun-failed --timeout 900 --output-on-failure) 2>&1 | tee -a "$out/ctest.txt"
  rc=${PIPESTATUS[0]}
  log "ctest --rerun-failed, one at a time: $(grep -E 'tests passed|tests failed' "$out/ctest.txt" | tail -n1) (exit $rc)"
fi
exit "$rc"
