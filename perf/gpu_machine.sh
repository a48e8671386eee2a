#!/usr/bin/env bash
# perf/gpu_machine.sh — issue 17's targets 3 (many cores) and 4 (a real GPU
# kept busy), and issue 23's GPU check on a bare GPU machine.
#
# On a machine with Debian 12's development packages (./bootstrap.sh deps):
#
#   perf/gpu_machine.sh [--quick] [--with-tests] [--out DIR] [--jobs N] [--recipe R]
#
#   1. builds build/release (Release, -DRINGFEED_CUDA=AUTO: the CUDA stage
#      when nvcc is at /usr/local/cuda; the Python module for $PYTHON);
#      --with-tests also builds build/default and runs `ctest -L cuda`
#   2. generates a dataset with `ringfeed gen` (reused when complete)
#   3. perf/h2d_bench: the upload stage vs a plain pinned cudaMemcpyAsync
#      loop (goal >= 0.90) and the synchronizing CUDA calls per batch of the
#      stage and of a real loader (goal 0), counted with CUPTI
#   4. perf/compare/scaling.py: ringfeed bench train/val and decode_limit at 1, 2,
#      4, ... and all threads (goal: efficiency >= 85% up to the physical
#      cores); on a GPU also train at all threads with device upload
#   5. perf/gpu/train_gpu.py: ResNet-50 fed by ringfeed.Loader(device="cuda")
#      vs DataLoader(num_workers=cores, pin_memory=True); without a GPU its
#      --dry-run --device cpu instead (the measuring path, no numbers)
#
# On a bare GPU machine (Python with torch, pybind11, CMake, ninja, nvcc;
# no Debian development packages, no apt, no network):
#
#   perf/gpu_machine.sh --prepare DIR [--python PY]...
#       on a Debian 12 machine with network: DIR gets the Debian packages
#       the build needs, unpacked into a private prefix, Boost trimmed to
#       the headers the build includes, pkgconf, and Python headers of
#       PY (default: a python3.12 here) for an interpreter without its own
#       (perf/gpu/gpu_deps.sh; 14.3 MiB)
#   perf/gpu_machine.sh --deps DIR --out RESULTS [--quick] [--step S[,S...]] [--jobs N]
#                       [--recipe R]
#       on the GPU machine, against DIR alone; S is one or more of
#         build   Release + CUDA + the Python module for python3, into
#                 build/gpu-deps (the CUDA tests' targets, the CLI, h2d_bench)
#         tests   ctest -L cuda, and pytest tests/python/test_device*.py
#         goldens the transform golden tests (test_transforms.py,
#                 test_augmix.py -k golden: no torchvision needed): the
#                 SIMD kernels, built by that machine's compiler for its
#                 CPU, against the committed torchvision 0.14 bytes
#         bench   `ringfeed gen`, then h2d_bench with the synchronizing-call count
#         train   perf/gpu/train_gpu.py (ResNet-50, ringfeed vs DataLoader;
#                 --recipe R: its --recipe, default train)
#         node    perf/node_sim.py with 4 and 8 ranks on this machine's cores
#                 (issue 39: ringfeed's defaults vs hand-set threads)
#         decode  perf/gpu/decode_gpu.py (issue 43): decode=gpu vs decode=cpu,
#                 loader only, ImageNet-like and large photos; DataLoader with
#                 draft() on the large ones; the GPU decode's accuracy
#         decode_train  perf/gpu/train_gpu.py --loaders ringfeed with
#                 --decode gpu and cpu: ResNet-50, then ResNet-18 at 176
#         parity  issue 42: the transform tests (v1, v2, timm, tensor ops, the
#                 DataLoader's translation) live against this machine's torch
#                 and torchvision, and timm from DIR/python-wheels (the GPU
#                 machine has none; --prepare puts its wheel there)
#         cache_train  perf/gpu/train_gpu.py --loaders ringfeed,ringfeed_pixels
#                 (issue 40): the same loop fed with a warm pixel cache beside
#                 the uncached run, CPU decode: ResNet-50, then ResNet-18 at 176
#         all     the ten in order (default; the full run takes longer
#                 than one 10-minute command: run a few steps per command there)
#       each step under `timeout 540` (9 minutes; each reuses the build
#       before it). RESULTS gets plain files: summary.txt (the
#       machine and every step's status so far, kept across steps in
#       build/gpu-deps) and build.log, tests.txt, goldens.txt, h2d_bench.txt,
#       h2d_bench.json, train_gpu.txt, train_gpu.json, decode_gpu.txt,
#       decode_gpu.json, decode_train.txt, decode_train_{resnet50,resnet18}_{gpu,cpu}.json,
#       cache_train.txt, cache_train_{resnet50,resnet18}.json, parity.txt.
#       RINGFEED_CUDA=OFF builds without CUDA; --targets all builds every
#       target and --step-limit S changes the 540 s (the self-test does both);
#       --build-dir D builds in D instead of build/gpu-deps.
#   perf/gpu_machine.sh --selftest-hidden DIR [--out RESULTS]
#       (root, here) the proof: in a mount namespace whose /usr hides every
#       development package but the compiler's own, builds with --deps DIR
#       (CUDA off, every target) and runs ctest (perf/gpu/gpu_hidden_selftest.sh)
#
# Steps that need a GPU exit 77 without one, saying "no CUDA device: <why>";
# the script goes on, and exits 0 when every step passed or was skipped, 1
# when one failed. --quick: smaller datasets, fewer rounds and steps.
#
# Environment: PYTHON (an interpreter with torch and torchvision; default:
# the first of python3 on PATH and /usr/bin/python3 that imports torch),
# RINGFEED_CUDA (AUTO|ON|OFF, default AUTO).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here" || exit 1

quick=0
with_tests=0
out=""
jobs="$(nproc)"
prepare=""
deps=""
selftest=""
step_name="all"
recipe="train"
targets="gpu"
limit=540
bdir="$here/build/gpu-deps"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --with-tests) with_tests=1 ;;
    --out) out="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --prepare) prepare="$2"; shift ;;
    --python) extra+=(--python "$2"); shift ;;
    --deps) deps="$2"; shift ;;
    --step) step_name="$2"; shift ;;
    --recipe) recipe="$2"; shift ;;
    --targets) targets="$2"; shift ;;
    --step-limit) limit="$2"; shift ;;
    --build-dir) bdir="$(mkdir -p "$2" && cd "$2" && pwd)"; shift ;;
    --selftest-hidden) selftest="$2"; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu_machine: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$prepare" ]; then
  exec "$here/perf/gpu/gpu_deps.sh" prepare "$prepare" "${extra[@]}"
fi
if [ -n "$selftest" ]; then
  exec "$here/perf/gpu/gpu_hidden_selftest.sh" "$selftest" ${out:+--out "$out"}
fi
IFS=, read -ra steps <<<"$step_name"
[ "${#steps[@]}" -gt 0 ] || { echo "gpu_machine: --step needs at least one step" >&2; exit 2; }
for s in "${steps[@]}"; do
  case "$s" in
    build|tests|goldens|bench|train|node|decode|decode_train|parity|cache_train|all) ;;
    *) echo "gpu_machine: --step takes build, tests, goldens, bench, train, node, decode, decode_train," \
         "parity, cache_train or all" \
         "(comma-separated), not '$s'" >&2
       exit 2 ;;
  esac
done
case "$recipe" in
  train|ta_wide|autoaugment) ;;
  *) echo "gpu_machine: --recipe is train, ta_wide or autoaugment (perf/gpu/train_gpu.py), not $recipe" >&2; exit 2 ;;
esac
# has_step S: S was asked for (by name or by all)
has_step() { [[ ",$step_name," == *",$1,"* || ",$step_name," == *",all,"* ]]; }
case "$targets" in
  gpu|all) ;;
  *) echo "gpu_machine: --targets is gpu or all, not $targets" >&2; exit 2 ;;
esac

out="${out:-build/gpu-machine/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
summary="$out/summary.txt"
failed=0

say() { printf '[gpu_machine] %s\n' "$*" | tee -a "$summary"; }

# step NAME COMMAND...: runs it, output to $out/NAME.txt (or $step_file) and
# the terminal, notes its status: 0 ok, 77 skipped (the line saying why),
# 124 over its time limit (timeout's), else failed.
step_file=""
step_what=""
step() {
  local name="$1" file="${step_file:-$out/$1.txt}"
  shift
  local what="${step_what:-$*}"
  printf '\n[gpu_machine] %s: %s\n' "$name" "$what"
  "$@" 2>&1 | tee -a "$file"
  local rc=${PIPESTATUS[0]}
  case "$rc" in
    0) say "$name: ok" ;;
    77) say "$name: skipped: $(grep -m1 'no CUDA device' "$file" || grep -m1 -i 'skipped\|cannot' "$file" || tail -n1 "$file")" ;;
    124) say "$name: FAILED (over its time limit)"; failed=1 ;;
    *) say "$name: FAILED (exit $rc)"; failed=1 ;;
  esac
  return "$rc"
}

pick_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  for p in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$p" ] && "$p" -c 'import torch, torchvision' >/dev/null 2>&1; then echo "$p"; return; fi
  done
  command -v python3 || echo /usr/bin/python3
}
py="$(pick_python)"

system_info() {
  echo "date: $(date -u +%FT%TZ)"
  echo "checkout: $(git rev-parse HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | wc -l) files changed"
  echo "cpus allowed: $("$py" -c 'import os; print(len(os.sched_getaffinity(0)))' 2>/dev/null || nproc)"
  lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)' || true
  grep MemTotal /proc/meminfo
  echo "python: $py ($("$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1 | tail -n1))"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1
  [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -n1
  command -v cmake >/dev/null && cmake --version | head -n1
}

pybind=()
if dir="$("$py" -m pybind11 --cmakedir 2>/dev/null)" && [ -n "$dir" ]; then pybind=(-Dpybind11_DIR="$dir"); fi

# Both modes: `ringfeed gen`, reused when the folder is complete.
gen_dataset() {  # cli out images: `ringfeed gen`, reused when complete
  "$py" - "$@" <<'EOF'
import json, subprocess, sys
cli, out, images = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    m = json.load(open(f"{out}/ringfeed-gen.json"))
    if m.get("complete") and m.get("train_images") == images:
        print(f"{out}: complete, reused"); sys.exit(0)
except (OSError, ValueError):
    pass
sys.exit(subprocess.run([cli, "gen", out, "--images", str(images), "--classes", "100", "--force"]).returncode)
EOF
}

# --- a bare GPU machine: --deps DIR -------------------------------------------------------

if [ -n "$deps" ]; then
  # shellcheck source=perf/gpu/gpu_deps.sh
  source "$here/perf/gpu/gpu_deps.sh"
  mkdir -p "$bdir"
  kept="$bdir/gpu-machine-summary.txt"  # every step's status on this machine, across commands
  has_step build && rm -f "$kept"  # a new run starts with the build
  if [ -f "$kept" ]; then cp "$kept" "$summary"; else : >"$summary"; fi
  if ! grep -q '^date:' "$summary"; then
    system_info >>"$summary" 2>&1
    echo "deps: $deps ($(du -sb "$deps" 2>/dev/null | cut -f1) bytes); build: $bdir; quick: $quick" >>"$summary"
  fi
  cp "$summary" "$kept"
  if ! gpu_deps_env "$deps" "$py" 2>&1 | tee -a "$summary"; then
    say "deps: FAILED: $deps cannot serve this build (above)"
    cp "$summary" "$kept"
    exit 1
  fi
  gpu_deps_env "$deps" "$py" 2>/dev/null  # again, in this shell (the tee ran it in a subshell)
  has_gpu=0
  gpu_why="$("$py" -c 'import torch; print("ok" if torch.cuda.is_available() else f"no CUDA device: torch {torch.__version__} (CUDA {torch.version.cuda}) sees none")' 2>&1 | tail -n1)"
  [ "$gpu_why" = ok ] && has_gpu=1

  deps_build() {
    local arch=()
    [ "$has_gpu" = 1 ] && arch=(-DCMAKE_CUDA_ARCHITECTURES=native)  # this machine's GPU only: a faster build
    cmake -S "$here" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGFEED_BUILD_TESTS=ON \
      -DRINGFEED_BUILD_PERF=ON -DRINGFEED_BUILD_APPS=ON -DRINGFEED_PYTHON=ON \
      -DRINGFEED_CUDA="${RINGFEED_CUDA:-AUTO}" -DPython3_EXECUTABLE="$py" "${pybind[@]}" \
      "${gpu_deps_cmake_args[@]}" "${arch[@]}" || return 1
    local want=(all)
    if [ "$targets" = gpu ]; then  # what the later steps run, not the whole test suite
      want=()
      local t
      for t in ringfeed_cli ringfeed_python cuda_tests uploader_tests loader_cuda_tests h2d_bench \
               device_resize_cuda_tests nvjpeg_decoder_tests loader_gpu_decode_sim_tests; do
        grep -q "^build $t: phony" "$bdir/build.ninja" && want+=("$t")  # a target of this configuration
      done
    fi
    echo "building: ${want[*]}"
    cmake --build "$bdir" -j "$jobs" --target "${want[@]}" || return 1
    # The private prefix, not the system, serves every library at run time.
    echo "libraries of $bdir/bin/ringfeed:"
    ldd "$bdir/bin/ringfeed" | grep -E 'uring|jpeg|spng|webp|tiff|nfs|lmdb|curl|crypto|expat|xxhash'
  }
  deps_tests() {
    local rc=0
    (cd "$bdir" && ctest -L cuda --output-on-failure --timeout 300) || rc=1
    PYTHONPATH="$bdir/python" RINGFEED_CLI="$bdir/bin/ringfeed" PYTHONDONTWRITEBYTECODE=1 \
      "$py" -m pytest -q -p no:cacheprovider -rs tests/python/test_device*.py || rc=1
    if [ "$has_gpu" = 0 ] && [ "$rc" = 0 ]; then echo "$gpu_why: the CUDA tests above skipped"; return 77; fi
    return "$rc"
  }
  deps_goldens() {
    PYTHONPATH="$bdir/python" PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -q -p no:cacheprovider -rs \
      -k golden tests/python/test_transforms.py tests/python/test_augmix.py
  }
  deps_bench() {
    local h2d="$bdir/perf/h2d_bench" images=10000 data
    [ "$quick" = 1 ] && images=3000
    data="$here/build/gpu-machine/gen-$images"
    [ -x "$h2d" ] || { echo "h2d_bench: not built (no CUDA toolkit or CUPTI: see build.log); skipped"; return 77; }
    "$h2d" --probe || { echo "no CUDA device: h2d_bench --probe found none; skipped"; return 77; }
    gen_dataset "$bdir/bin/ringfeed" "$data" "$images" || return 1
    local args=(--rounds 5 --batches 60)
    [ "$quick" = 1 ] && args=(--rounds 2 --batches 30)
    "$h2d" "${args[@]}" --loader "$data/train" --loader-batch 256 --decode cpu --json "$out/h2d_bench.json" || return 1
    # decode=gpu's stage must not synchronize per batch either (issue 43)
    "$h2d" --rounds 1 --batches 20 --loader "$data/train" --loader-batch 256 --decode gpu \
      --json "$out/h2d_bench_decode_gpu.json"
  }
  deps_train() {
    local args=() rc
    [ "$quick" = 1 ] && args=(--steps 30 --warmup 10)
    "$py" perf/gpu/train_gpu.py "${args[@]}" --recipe "$recipe" --ringfeed "$bdir/bin/ringfeed" --python-path "$bdir/python" \
      --json "$out/train_gpu.json"
    rc=$?
    [ "$rc" = 77 ] || return "$rc"
    echo "no CUDA device: the measuring path on the CPU instead (--dry-run --device cpu, no numbers)"
    "$py" perf/gpu/train_gpu.py --dry-run --device cpu --ringfeed "$bdir/bin/ringfeed" --python-path "$bdir/python" \
      --gen-dir "$here/build/gpu-machine/train-gpu-dry-run" --json "$out/train_gpu.json" || return 1
    return 77
  }
  deps_decode() {  # issue 43: decode=gpu vs cpu, perf/gpu/decode_gpu.py
    local args=()
    [ "$quick" = 1 ] && args=(--quick)
    "$py" perf/gpu/decode_gpu.py "${args[@]}" --ringfeed "$bdir/bin/ringfeed" --python-path "$bdir/python" \
      --gen-dir "$here/build/gpu-machine" --json "$out/decode_gpu.json"
  }
  deps_decode_train() {  # issue 43: a real model fed with decode=gpu and decode=cpu
    local args=(--steps 60 --warmup 15) rc=0 d
    [ "$quick" = 1 ] && args=(--steps 30 --warmup 10)
    for d in gpu cpu; do
      "$py" perf/gpu/train_gpu.py "${args[@]}" --loaders ringfeed --decode "$d" --ringfeed "$bdir/bin/ringfeed" \
        --python-path "$bdir/python" --json "$out/decode_train_resnet50_$d.json" || rc=$?
      "$py" perf/gpu/train_gpu.py "${args[@]}" --loaders ringfeed --decode "$d" --model resnet18 --size 176 \
        --ringfeed "$bdir/bin/ringfeed" --python-path "$bdir/python" --json "$out/decode_train_resnet18_$d.json" || rc=$?
    done
    return "$rc"
  }
  deps_parity() {  # issue 42: the transform tests against this machine's torchvision (and timm from DIR)
    local site="$bdir/python-packages" whl
    for whl in "$deps"/python-wheels/*.whl; do  # timm, from --prepare: unpacked once per build dir
      [ -f "$whl" ] && [ ! -f "$site/.$(basename "$whl")" ] &&
        "$py" -m zipfile -e "$whl" "$site" && : >"$site/.$(basename "$whl")"
    done
    [ -d "$site" ] || site=""
    PYTHONPATH="$bdir/python${site:+:$site}" "$py" -c 'import torch, torchvision, PIL, numpy
try:
    import timm; t = timm.__version__
except Exception as e:
    t = f"absent ({type(e).__name__}: {e}): its tests skip"
print(f"parity: torch {torch.__version__}, torchvision {torchvision.__version__}, Pillow {PIL.__version__}, "
      f"numpy {numpy.__version__}, timm {t}")'
    PYTHONPATH="$bdir/python${site:+:$site}" RINGFEED_CLI="$bdir/bin/ringfeed" PYTHONDONTWRITEBYTECODE=1 \
      "$py" -m pytest -q -p no:cacheprovider -rs --durations=5 tests/python/test_transforms.py \
      tests/python/test_transforms_v2.py tests/python/test_augment_v2.py tests/python/test_tensor_geometry.py \
      tests/python/test_timm_transforms.py tests/python/test_transform_signatures.py tests/python/test_augmix.py \
      tests/python/test_transform_loader.py tests/python/test_output_dtypes.py tests/python/test_dataloader.py
  }
  deps_cache_train() {  # issue 40: a real model fed from a warm pixel cache, beside the uncached loader
    local args=(--steps 60 --warmup 15) rc=0
    [ "$quick" = 1 ] && args=(--steps 30 --warmup 10)
    local common=("${args[@]}" --loaders ringfeed,ringfeed_pixels --decode cpu --ringfeed "$bdir/bin/ringfeed"
                  --python-path "$bdir/python" --pixel-cache-dir "$here/build/gpu-machine/pixel-cache")
    "$py" perf/gpu/train_gpu.py "${common[@]}" --json "$out/cache_train_resnet50.json" || rc=$?
    "$py" perf/gpu/train_gpu.py "${common[@]}" --model resnet18 --size 176 --json "$out/cache_train_resnet18.json" ||
      rc=$?
    return "$rc"
  }
  deps_node() {  # issue 39: 4 and 8 ranks on this machine's cores (CPU output), perf/node_sim.py
    local data="$here/build/gpu-machine/gen-3000" rounds=2 n rc=0
    gen_dataset "$bdir/bin/ringfeed" "$data" 3000 || return 1
    for n in 4 8; do
      PYTHONPATH="$bdir/python" "$py" perf/node_sim.py "$data/train" --ranks "$n" --rounds "$rounds" --epochs 1 \
        --json "$out/node_sim_$n.json" || rc=1
    done
    return "$rc"
  }
  # run_step NAME FUNCTION FILE: the function in a shell of its own under
  # timeout, with the variables it reads; output to $out/FILE.
  run_step() {
    local rc
    step_file="$out/$3"
    step_what="$2 (at most ${limit}s) -> $out/$3"
    step "$1" timeout "$limit" bash -c "set -uo pipefail; $(declare -f "$2" gen_dataset)
      $(declare -p bdir out py quick has_gpu gpu_why targets jobs here pybind gpu_deps_cmake_args recipe deps); cd \"\$here\"; $2"
    rc=$?
    step_file="" step_what=""
    cp "$summary" "$kept"
    return "$rc"
  }
  export PATH CMAKE_PREFIX_PATH PKG_CONFIG CMAKE_POLICY_VERSION_MINIMUM
  if has_step build; then run_step build deps_build build.log || exit 1; fi
  if has_step tests; then run_step tests deps_tests tests.txt; fi
  if has_step goldens; then run_step goldens deps_goldens goldens.txt; fi
  if has_step bench; then run_step bench deps_bench h2d_bench.txt; fi
  if has_step train; then run_step train deps_train train_gpu.txt; fi
  if has_step node; then run_step node deps_node node_sim.txt; fi
  if has_step decode; then run_step decode deps_decode decode_gpu.txt; fi
  if has_step decode_train; then run_step decode_train deps_decode_train decode_train.txt; fi
  if has_step parity; then run_step parity deps_parity parity.txt; fi
  if has_step cache_train; then run_step cache_train deps_cache_train cache_train.txt; fi
  echo
  cat "$summary"
  echo "[gpu_machine] results in $out ($(find "$out" -maxdepth 1 -type f | wc -l) files)"
  exit "$failed"
fi

# --- a machine with Debian's development packages -------------------------------------------
: >"$summary"
system_info >"$out/system.txt" 2>&1
cat "$out/system.txt"

# --- 1. build ---------------------------------------------------------------------------
build() {
  cmake --preset release -DRINGFEED_CUDA="${RINGFEED_CUDA:-AUTO}" -DPython3_EXECUTABLE="$py" "${pybind[@]}" &&
    cmake --build --preset release -j "$jobs"
}
if ! step build build; then
  say "the build failed (see $out/build.txt; missing packages: ./bootstrap.sh deps)"
  exit 1
fi
mv "$out/build.txt" "$out/build.log"
cli="$here/build/release/bin/ringfeed"
h2d="$here/build/release/perf/h2d_bench"
[ -x "$h2d" ] || say "h2d_bench: not built (no CUDA toolkit or CUPTI: see build.log)"

if [ "$with_tests" = 1 ]; then
  tests() {
    cmake --preset default -DRINGFEED_CUDA="${RINGFEED_CUDA:-AUTO}" -DPython3_EXECUTABLE="$py" "${pybind[@]}" &&
      cmake --build --preset default -j "$jobs" && (cd build/default && ctest -L cuda --output-on-failure)
  }
  step ctest_cuda tests
fi

# --- 2. dataset -------------------------------------------------------------------------
if [ "$quick" = 1 ]; then images=3000; else images=10000; fi
data="$here/build/gpu-machine/gen-$images"
step gen gen_dataset "$cli" "$data" "$images"

# --- 3. target 4: the H2D stage and synchronizing calls -----------------------------------
cuda=0
if [ -x "$h2d" ]; then
  "$h2d" --probe && cuda=1
  if [ "$quick" = 1 ]; then h2d_args=(--rounds 2 --batches 30); else h2d_args=(--rounds 5 --batches 60); fi
  step h2d_bench "$h2d" "${h2d_args[@]}" --loader "$data/train" --loader-batch 256 --json "$out/h2d_bench.json"
fi

# --- 4. target 3: many cores --------------------------------------------------------------
if [ "$quick" = 1 ]; then sc_args=(--rounds 2 --seconds 3); else sc_args=(--rounds 3 --seconds 5); fi
step scaling "$py" perf/compare/scaling.py --source "$data/train" "${sc_args[@]}" --ringfeed "$cli" \
  --decode-limit "$here/build/release/perf/decode_limit" --json "$out/scaling.json"
if [ "$cuda" = 1 ]; then
  all="$("$py" -c 'import os; print(len(os.sched_getaffinity(0)))')"
  step scaling_device "$py" perf/compare/scaling.py --source "$data/train" --workloads train --device 0 --threads "1,$all" \
    "${sc_args[@]}" --ringfeed "$cli" --json "$out/scaling_device.json"
else
  say "scaling_device: skipped: no CUDA device (h2d_bench --probe)"
fi

# --- 5. target 4: a real training loop ----------------------------------------------------
if [ "$quick" = 1 ]; then tg_args=(--steps 30 --warmup 10); else tg_args=(); fi
step train_gpu "$py" perf/gpu/train_gpu.py "${tg_args[@]}" --recipe "$recipe" --ringfeed "$cli" --python-path "$here/build/release/python" \
  --json "$out/train_gpu.json"
if [ $? = 77 ]; then  # no GPU: at least the whole measuring path, on the CPU (it measures nothing)
  step train_gpu_dry_run "$py" perf/gpu/train_gpu.py --dry-run --device cpu --ringfeed "$cli" \
    --python-path "$here/build/release/python" --gen-dir "$here/build/gpu-machine/train-gpu-dry-run" \
    --json "$out/train_gpu_dry_run.json"
fi

echo
cat "$summary"
echo "[gpu_machine] results in $out"
exit "$failed"
