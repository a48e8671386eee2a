#!/usr/bin/env bash
# perf/gpu_machine.sh — issue 17's targets 3 (many cores) and 4 (a real GPU
# kept busy) in one command, on a many-core machine with a CUDA GPU:
#
#   perf/gpu_machine.sh [--quick] [--with-tests] [--out DIR] [--jobs N]
#
#   1. builds build/release (Release, -DRINGFEED_CUDA=AUTO: the CUDA stage
#      when nvcc is at /usr/local/cuda; the Python module for $PYTHON);
#      --with-tests also builds build/default and runs `ctest -L cuda`
#   2. generates a dataset with `ringfeed gen` (reused when complete)
#   3. perf/h2d_bench: the upload stage vs a plain pinned cudaMemcpyAsync
#      loop (goal >= 0.90) and the synchronizing CUDA calls per batch of the
#      stage and of a real loader (goal 0), counted with CUPTI
#   4. perf/scaling.py: ringfeed bench train/val and decode_limit at 1, 2,
#      4, ... and all threads (goal: efficiency >= 85% up to the physical
#      cores); on a GPU also train at all threads with device upload
#   5. perf/train_gpu.py: ResNet-50 fed by ringfeed.Loader(device="cuda")
#      vs DataLoader(num_workers=cores, pin_memory=True); without a GPU its
#      --dry-run --device cpu instead (the measuring path, no numbers)
#
# Everything lands in one directory (default build/gpu-machine/<UTC time>):
# system.txt, build.log, <step>.txt (the step's output) and <step>.json,
# and summary.txt with each step's exit status. Steps that need a GPU exit
# 77 without one, saying "no CUDA device: <why>"; the script goes on, and
# exits 0 when every step passed or was skipped, 1 when one failed.
# --quick: smaller datasets, fewer rounds and steps (estimated: about 5
# minutes on 16 cores, the full run about 15; 72 s on 2 cores without a GPU).
#
# Environment: PYTHON (an interpreter with torch and torchvision; default:
# the first of python3 on PATH and /usr/bin/python3 that imports torch),
# RINGFEED_CUDA (AUTO|ON|OFF, default AUTO). Missing Debian packages:
# ./bootstrap.sh deps.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

quick=0
with_tests=0
out=""
jobs="$(nproc)"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --with-tests) with_tests=1 ;;
    --out) out="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu_machine: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out="${out:-build/gpu-machine/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
summary="$out/summary.txt"
: >"$summary"
failed=0

say() { printf '[gpu_machine] %s\n' "$*" | tee -a "$summary"; }

# step NAME COMMAND...: runs it, output to $out/NAME.txt (and the terminal),
# notes its status: 0 ok, 77 skipped (the last line saying why), else failed.
step() {
  local name="$1"
  shift
  printf '\n[gpu_machine] %s: %s\n' "$name" "$*"
  "$@" 2>&1 | tee "$out/$name.txt"
  local rc=${PIPESTATUS[0]}
  case "$rc" in
    0) say "$name: ok" ;;
    77) say "$name: skipped: $(grep -m1 -i 'no CUDA device\|skipped\|cannot' "$out/$name.txt" || tail -n1 "$out/$name.txt")" ;;
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

# --- the machine ------------------------------------------------------------------------
{
  echo "date: $(date -u +%FT%TZ)"
  echo "checkout: $(git rev-parse HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | wc -l) files changed"
  echo "cpus allowed: $("$py" -c 'import os; print(len(os.sched_getaffinity(0)))' 2>/dev/null || nproc)"
  lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)' || true
  grep MemTotal /proc/meminfo
  echo "python: $py ($("$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1 | tail -n1))"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1
  [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -n1
} >"$out/system.txt" 2>&1
cat "$out/system.txt"

# --- 1. build ---------------------------------------------------------------------------
pybind=()
if dir="$("$py" -m pybind11 --cmakedir 2>/dev/null)" && [ -n "$dir" ]; then pybind=(-Dpybind11_DIR="$dir"); fi
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
step gen "$py" - "$cli" "$data" "$images" <<'EOF'
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

# --- 3. target 4: the H2D stage and synchronizing calls -----------------------------------
cuda=0
if [ -x "$h2d" ]; then
  "$h2d" --probe && cuda=1
  if [ "$quick" = 1 ]; then h2d_args=(--rounds 2 --batches 30); else h2d_args=(--rounds 5 --batches 60); fi
  step h2d_bench "$h2d" "${h2d_args[@]}" --loader "$data/train" --loader-batch 256 --json "$out/h2d_bench.json"
fi

# --- 4. target 3: many cores --------------------------------------------------------------
if [ "$quick" = 1 ]; then sc_args=(--rounds 2 --seconds 3); else sc_args=(--rounds 3 --seconds 5); fi
step scaling "$py" perf/scaling.py --source "$data/train" "${sc_args[@]}" --ringfeed "$cli" \
  --decode-limit "$here/build/release/perf/decode_limit" --json "$out/scaling.json"
if [ "$cuda" = 1 ]; then
  all="$("$py" -c 'import os; print(len(os.sched_getaffinity(0)))')"
  step scaling_device "$py" perf/scaling.py --source "$data/train" --workloads train --device 0 --threads "1,$all" \
    "${sc_args[@]}" --ringfeed "$cli" --json "$out/scaling_device.json"
else
  say "scaling_device: skipped: no CUDA device (h2d_bench --probe)"
fi

# --- 5. target 4: a real training loop ----------------------------------------------------
if [ "$quick" = 1 ]; then tg_args=(--steps 30 --warmup 10); else tg_args=(); fi
step train_gpu "$py" perf/train_gpu.py "${tg_args[@]}" --ringfeed "$cli" --python-path "$here/build/release/python" \
  --json "$out/train_gpu.json"
if [ $? = 77 ]; then  # no GPU: at least the whole measuring path, on the CPU (it measures nothing)
  step train_gpu_dry_run "$py" perf/train_gpu.py --dry-run --device cpu --ringfeed "$cli" \
    --python-path "$here/build/release/python" --gen-dir "$here/build/gpu-machine/train-gpu-dry-run" \
    --json "$out/train_gpu_dry_run.json"
fi

echo
cat "$summary"
echo "[gpu_machine] results in $out"
exit "$failed"
