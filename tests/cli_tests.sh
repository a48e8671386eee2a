#!/usr/bin/env bash
# End-to-end checks of the `ringfeed` CLI as a user runs it.
#   usage: cli_tests.sh PATH/TO/ringfeed
set -uo pipefail
cli="$1"
work="$(mktemp -d "${TMPDIR:-/tmp}/ringfeed-cli-XXXXXX")"
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() {  # description, then a command that must succeed
  local what="$1"; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi
}

# gen: deterministic, ImageFolder layout, only JPEGs, nothing left half-written.
"$cli" gen "$work/a" --images 30 --classes 3 --seed 5 >/dev/null 2>&1
"$cli" gen "$work/b" --images 30 --classes 3 --seed 5 >/dev/null 2>&1
check "gen is byte-identical for one seed" diff -r "$work/a" "$work/b"
check "gen writes 30 training images in 3 class folders" \
  test "$(find "$work/a/train" -type f | wc -l)" -eq 30 -a "$(find "$work/a/train" -mindepth 1 -type d | wc -l)" -eq 3
check "gen leaves no temporary files" test -z "$(find "$work/a" -name '.*' -type f)"

# gen refuses a foreign, non-empty directory and names it.
mkdir -p "$work/foreign" && echo keep > "$work/foreign/notes.txt"
out="$("$cli" gen "$work/foreign" --images 10 --classes 2 2>&1)"; rc=$?
check "gen refuses a non-empty foreign directory" test "$rc" -ne 0
check "the refusal names the directory" grep -qF "$work/foreign" <<<"$out"
check "the foreign file is untouched" grep -qx keep "$work/foreign/notes.txt"

# bench --pipeline none reads every byte of every image.
json="$("$cli" bench "$work/a/train" --pipeline none --json --epochs 2 | tail -n 1)"
bytes="$(find "$work/a/train" -type f -printf '%s\n' | awk '{s += $1} END {print s * 2}')"
check "bench counts every image of both epochs" grep -q '"images":60' <<<"$json"
check "bench reads every byte ($bytes)" grep -q "\"bytes\":$bytes," <<<"$json"
check "bench reports its backend and an empty skip list" grep -q '"backend":"io_uring".*"skipped":\[\]' <<<"$json"

# bench --pipeline train runs the whole loader and accounts for every image.
json="$("$cli" bench "$work/a/train" --pipeline train --batch 8 --device -1 --json --epochs 2 2>/dev/null | tail -n 1)"
check "bench train delivers every image of both epochs" grep -q '"images":60' <<<"$json"
check "bench train reports stages and a bottleneck" \
  grep -q '"bottleneck":"[a-z]*".*"stages":{.*"consumer_wait_s"' <<<"$json"

# bench skips a corrupt image, names it, and still delivers the rest.
cp -r "$work/a/train" "$work/c"
printf 'not a jpeg' > "$work/c/$(ls "$work/c" | head -n 1)/zz_bad.jpg"
json="$("$cli" bench "$work/c" --pipeline val --batch 8 --device -1 --json 2>/dev/null | tail -n 1)"
check "bench skips the bad file and names it" grep -q '"images":30.*"skipped":\[{"path":"[^"]*zz_bad.jpg","reason":"[^"]' <<<"$json"
out="$("$cli" bench "$work/c" --pipeline val --batch 8 --device -1 --on-error fail 2>&1)"; rc=$?
check "bench --on-error fail stops with the file's name" test "$rc" -eq 1 -a -n "$(grep -F zz_bad.jpg <<<"$out")"

# export writes the samples as delivered: val is ImageFolder order, and the
# exact pipeline matches torchvision's Resize(256) + CenterCrop(224).
"$cli" export "$work/a/train" --out "$work/exp" --pipeline val --exact --count 12 >/dev/null 2>&1
check "export writes <position>_<label>.ppm for --count samples" \
  test "$(ls "$work/exp" | grep -cE '^[0-9]+_[0-9]+\.ppm$')" -eq 12 -a -f "$work/exp/0_0.ppm" -a -f "$work/exp/11_1.ppm"
if /usr/bin/python3 -c 'import torchvision, numpy' 2>/dev/null; then
  check "export --exact equals torchvision's val transform" /usr/bin/python3 - "$work/a/train" "$work/exp" <<'PY'
import sys, numpy as np, torchvision, torchvision.transforms as T
from PIL import Image
ds = torchvision.datasets.ImageFolder(sys.argv[1], transform=T.Compose([T.Resize(256), T.CenterCrop(224)]))
for i in range(12):
    img, label = ds[i]
    got = np.asarray(Image.open(f"{sys.argv[2]}/{i}_{label}.ppm"))
    if not np.array_equal(np.asarray(img), got):
        sys.exit(f"sample {i} differs")
PY
else
  echo "SKIPPED (not counted): torchvision parity of export needs python3-torchvision"
fi
"$cli" export "$work/a/train" --out "$work/t1" --pipeline train --seed 3 --epoch 2 --count 5 --threads 1 >/dev/null 2>&1
"$cli" export "$work/a/train" --out "$work/t2" --pipeline train --seed 3 --epoch 2 --count 5 --threads 2 >/dev/null 2>&1
"$cli" export "$work/a/train" --out "$work/t3" --pipeline train --seed 3 --epoch 3 --count 5 >/dev/null 2>&1
check "export train is identical whatever the threads" diff -r "$work/t1" "$work/t2"
check "another epoch gives other samples" bash -c "! diff -rq '$work/t1' '$work/t3' >/dev/null"

# bench on a missing path: a clear error naming it, non-zero exit, no hang.
out="$(timeout 30 "$cli" bench "$work/missing" 2>&1)"; rc=$?
check "bench on a missing dataset fails" test "$rc" -eq 1
check "the error names the missing path" grep -qF "$work/missing" <<<"$out"

echo "cli: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
