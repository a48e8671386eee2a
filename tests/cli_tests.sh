#!/usr/bin/env bash
# End-to-end checks of the `ringfeed` CLI as a user runs it.
#   usage: cli_tests.sh PATH/TO/ringfeed [PATH/TO/without_io_uring]
set -uo pipefail
cli="$1"
no_uring="${2:-}"  # runs a command where io_uring_setup fails with EPERM (seccomp)
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
# Start-up apart from the steady state: 8 batches (4 per epoch), half of them warm-up at most.
check "bench reports its start-up: opening and the first batch" \
  grep -q '"first_batch_s":[0-9.e+-]*,.*"open_s":[0-9.e+-]*,' <<<"$json"
check "bench's default warm-up is at most half the batches" grep -q '"warmup_batches":4[,}]' <<<"$json"
json="$("$cli" bench "$work/a/train" --pipeline val --batch 8 --device -1 --json --epochs 2 --warmup-batches 2 \
  2>/dev/null | tail -n 1)"
check "bench --warmup-batches 2 leaves 2 batches of 8 out of the steady state" \
  grep -q '"steady_images":44,.*"steady_images_per_s":[0-9.e+]*,.*"warmup_batches":2[,}]' <<<"$json"
check "bench reports the CPU cores its steady state kept busy" \
  grep -Eq '"steady_cpu_cores":(0\.0*[1-9]|[1-9])[0-9.e+-]*,' <<<"$json"

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

# export --on-error: fail (the default) stops naming the bad file; skip
# writes the rest and lists what it left out, with the reason.
out="$("$cli" export "$work/c" --out "$work/exp-fail" 2>&1)"; rc=$?
check "export stops at a corrupt file by default, naming it" test "$rc" -eq 1 -a -n "$(grep -F zz_bad.jpg <<<"$out")"
out="$("$cli" export "$work/c" --out "$work/exp-skip" --on-error skip 2>&1)"; rc=$?
check "export --on-error skip writes every good sample" \
  test "$rc" -eq 0 -a "$(ls "$work/exp-skip" | grep -c '\.ppm$')" -eq 30
check "export --on-error skip lists the skipped file and why in skipped.tsv" \
  test "$(grep -c zz_bad.jpg "$work/exp-skip/skipped.tsv")" -eq 1 -a "$(wc -l < "$work/exp-skip/skipped.tsv")" -eq 2

# A completed export leaves no INCOMPLETE marker; a failed one keeps it.
check "a completed export has no INCOMPLETE marker" test ! -e "$work/exp-skip/INCOMPLETE" -a ! -e "$work/exp/INCOMPLETE"
check "a failed export is marked INCOMPLETE" test -f "$work/exp-fail/INCOMPLETE"
# export writes images: a list ending with RandomErasing (which runs on the
# float output) is refused before any sample, naming it.
out="$("$cli" export "$work/a/train" --out "$work/exp-erase" --transform 'CenterCrop(8); ToTensor(); RandomErasing()' 2>&1)"; rc=$?
check "export refuses a list that ends with RandomErasing, naming it" \
  test "$rc" -ne 0 -a -n "$(grep -F 'ends with RandomErasing' <<<"$out")"

# A second export into the same OUT: the first one's images were left among
# the new ones (14 files for an export of 5). A foreign file is refused.
"$cli" export "$work/a/train" --out "$work/exp-twice" --count 10 >/dev/null 2>&1
"$cli" export "$work/a/train" --out "$work/exp-twice" --count 5 --seed 2 >/dev/null 2>&1; rc=$?
check "export into a previous export's directory replaces it" \
  test "$rc" -eq 0 -a "$(ls -A "$work/exp-twice" | wc -l)" -eq 5
mkdir -p "$work/exp-foreign" && echo keep > "$work/exp-foreign/notes.txt"
out="$("$cli" export "$work/a/train" --out "$work/exp-foreign" --count 2 2>&1)"; rc=$?
check "export refuses a directory holding other files, naming one" \
  test "$rc" -ne 0 -a -n "$(grep -F notes.txt <<<"$out")" -a "$(cat "$work/exp-foreign/notes.txt")" = keep
# Output inside the source: the next read took it for samples or classes.
cp -r "$work/a/train" "$work/inside"
listing="$(cd "$work/inside" && find . | sort)"
for cmdline in "export $work/inside --out $work/inside/n00000000/x --count 2" \
               "pack $work/inside $work/inside/shards" \
               "cache build $work/inside --cache-dir $work/inside"; do
  # shellcheck disable=SC2086  # split on purpose
  out="$("$cli" $cmdline 2>&1)"; rc=$?
  check "${cmdline%% *} into its own source is refused" test "$rc" -ne 0 -a -n "$(grep -F 'inside the source' <<<"$out")"
done
out="$(cd "$work/inside" && "$cli" export . --out rel-out --count 2 2>&1)"; rc=$?
check "export into its own source by a relative path is refused" \
  test "$rc" -ne 0 -a -n "$(grep -F 'inside the source' <<<"$out")"
check "the source is as it was" test "$(cd "$work/inside" && find . | sort)" = "$listing"
"$cli" export "$work/no-such-source" --out "$work/exp-twice" >/dev/null 2>&1
check "an export that cannot open its source leaves the previous one" \
  test "$(ls -A "$work/exp-twice" | wc -l)" -eq 5

# Numbers as typed: a negative count was wrapped to 2^64 - 1 (--io-depth -1
# aborted, --count -1 exported nothing and said it was done), NaN passed
# every range, and --threads 1e9 made threads until the OOM killer came.
for args in "--threads -1" "--io-depth -1" "--seed -1" "--step-ms nan" "--cache-gb 1e300" \
            "--memory-mb 17592186044416" "--io-depth 65536" "--threads 5000"; do
  # shellcheck disable=SC2086  # split on purpose
  out="$(timeout 60 "$cli" bench "$work/a/train" --device -1 $args 2>&1)"; rc=$?
  check "bench $args is refused, naming the option" test "$rc" -ne 0 -a "$rc" -ne 124 -a "$rc" -lt 128 \
    -a -n "$(grep -F -- "${args%% *}" <<<"$out" || grep -F "$(sed 's/^--//; s/-/_/' <<<"${args%% *}")" <<<"$out")"
done
out="$("$cli" export "$work/a/train" --out "$work/exp-neg" --count -1 2>&1)"; rc=$?
check "export --count -1 is refused" test "$rc" -ne 0 -a ! -e "$work/exp-neg"
"$cli" export "$work/a/train" --out "$work/exp-all" --count 18446744073709551615 >/dev/null 2>&1; rc=$?
check "export --count 2^64-1 writes the whole epoch" test "$rc" -eq 0 -a "$(ls "$work/exp-all" | wc -l)" -eq 30

# Hostile bytes: file names in Latin-1 (bytes, not UTF-8; one with a tab and
# a newline) and images whose bytes quote raw into a decoder's message. The
# JSON stays valid UTF-8 (a name that is not UTF-8 is written as Python's
# surrogateescape, \udcNN, so os.fsencode(path) opens the file), the good
# files are delivered, and skipped.tsv keeps one line per file.
if command -v python3 >/dev/null; then
  python3 - "$work/a/train" "$work/latin1" <<'PY'
import os, shutil, sys
src, dst = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
lines = []
for i, c in enumerate(sorted(os.listdir(src))):
    d = os.path.join(dst, c + (b"_caf\xe9" if i == 0 else b""))
    os.makedirs(d)
    for j, f in enumerate(sorted(os.listdir(os.path.join(src, c)))):
        name = f if j % 2 else b"img\xe9\xff_" + f
        shutil.copyfile(os.path.join(src, c, f), os.path.join(d, name))
        lines.append(b"%s,%d\n" % (os.path.relpath(os.path.join(d, name), dst), i))
d0 = os.path.join(dst, sorted(os.listdir(dst))[0])
bad = {b"bad\xe9\tname\n.ppm": b"P3\n2 1\n255\n1\xe00 0 0 0 0 0\n",  # the issue's token
       b"bad\xff.jpg": b"\xff\xd8\xff" + bytes(range(0x80, 0x100)) + bytes(range(0x20))}
for name, content in bad.items():
    with open(os.path.join(d0, name), "wb") as f:
        f.write(content)
    lines.append(b"\"%s\",0\n" % os.path.relpath(os.path.join(d0, name), dst))
with open(os.path.join(dst, b"manifest.csv"), "wb") as f:
    f.writelines(lines)
PY
  latin1_json() {  # file holding bench's stdout, images expected, skips expected
    python3 - "$@" <<'PY'
import json, os, sys
last = open(sys.argv[1], "rb").read().splitlines()[-1]
s = json.loads(last.decode("utf-8"))  # strict: raises on invalid UTF-8
assert s["images"] == int(sys.argv[2]), s["images"]
skipped = s["skipped"]
assert len(skipped) == int(sys.argv[3]), skipped
for k in skipped:
    assert os.path.isfile(os.fsencode(k["path"])), k["path"]  # the reported path opens the file
    assert all(c >= " " for c in k["reason"]), k["reason"]
if skipped:
    reasons = " ".join(k["reason"] for k in skipped)
    assert "invalid token '1\\xe00' in image data" in reasons, reasons
PY
  }
  "$cli" bench "$work/latin1" --pipeline val --batch 8 --device -1 --json >"$work/latin1.out" 2>/dev/null; rc=$?
  check "bench --json over Latin-1 names and hostile bytes exits 0 (got $rc)" test "$rc" -eq 0
  check "its JSON is valid UTF-8, the 30 good images are delivered, the 2 bad paths open" \
    latin1_json "$work/latin1.out" 30 2
  "$cli" bench "$work/latin1" --pipeline none --json >"$work/latin1-none.out" 2>/dev/null; rc=$?
  check "bench --pipeline none --json over Latin-1 names: valid JSON, every file read" \
    test "$rc" -eq 0 -a -n "$(latin1_json "$work/latin1-none.out" 32 0 && echo ok)"
  "$cli" bench "$work/latin1/manifest.csv" --pipeline val --batch 8 --device -1 --json \
    >"$work/latin1-manifest.out" 2>/dev/null; rc=$?
  check "bench --json over a manifest of Latin-1 names: valid JSON, 30 delivered, 2 skipped (rc $rc)" \
    latin1_json "$work/latin1-manifest.out" 30 2
  "$cli" export "$work/latin1" --out "$work/latin1-exp" --pipeline val --on-error skip >/dev/null 2>&1; rc=$?
  check "export --on-error skip over Latin-1 names writes the 30 good samples" \
    test "$rc" -eq 0 -a "$(ls "$work/latin1-exp" | grep -c '\.ppm$')" -eq 30
  check "skipped.tsv: one line per file, two fields, names escaped reversibly" python3 - "$work/latin1-exp/skipped.tsv" <<'PY'
import codecs, os, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8").split("\n")
assert lines[0] == "path\treason" and lines[-1] == "", lines
rows = [l.split("\t") for l in lines[1:-1]]
assert len(rows) == 2 and all(len(r) == 2 for r in rows), rows
for path, reason in rows:
    raw = codecs.escape_decode(path.encode())[0]  # \xNN and \\ back to bytes
    assert os.path.isfile(raw), path
PY
fi

# Unreadable files and directories (chmod 000) are named and skipped or
# fatal as --on-error says. As root, setpriv drops the capabilities that
# bypass the mode bits; where they still do not deny access, say so.
as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(setpriv --bounding-set=-dac_override,-dac_read_search --)
cp -r "$work/a/train" "$work/perm"
first_class="$(ls "$work/perm" | head -n 1)"
victim="$(ls "$work/perm/$first_class" | head -n 1)"
mkdir "$work/perm/$first_class/locked" && cp "$work/perm/$first_class/$victim" "$work/perm/$first_class/locked/"
chmod 000 "$work/perm/$first_class/$victim" "$work/perm/$first_class/locked"
if ! "${as_user[@]}" cat "$work/perm/$first_class/$victim" >/dev/null 2>&1; then
  out="$("${as_user[@]}" "$cli" export "$work/perm" --out "$work/perm-skip" --on-error skip 2>&1)"; rc=$?
  check "export --on-error skip over unreadable entries succeeds with the others" \
    test "$rc" -eq 0 -a "$(ls "$work/perm-skip" | grep -c '\.ppm$')" -eq 29
  check "skipped.tsv names the unreadable file and directory with the reason" \
    test "$(grep -F "$victim" "$work/perm-skip/skipped.tsv" | grep -c 'Permission denied')" -eq 1 \
      -a "$(grep -F "$first_class/locked" "$work/perm-skip/skipped.tsv" | grep -c 'Permission denied')" -eq 1
  out="$("${as_user[@]}" "$cli" export "$work/perm" --out "$work/perm-fail" 2>&1)"; rc=$?
  check "export --on-error fail names the unreadable directory" \
    test "$rc" -eq 1 -a -n "$(grep -F "$first_class/locked" <<<"$out" | grep -F 'Permission denied')"
  json="$("${as_user[@]}" "$cli" bench "$work/perm" --pipeline none --on-error skip --json 2>/dev/null | tail -n 1)"
  check "bench --pipeline none lists both in its JSON skipped" \
    test -n "$(grep '"images":29,' <<<"$json" | grep -F "$first_class/locked" | grep -F "$victim")"
else
  echo "SKIPPED (not counted): chmod 000 does not deny access here (uid $(id -u))"
fi
chmod 755 "$work/perm/$first_class/locked"; chmod 644 "$work/perm/$first_class/$victim"

# SIGINT and SIGTERM: bench and export stop cleanly within a bound, exit
# 128 + the signal, say so in one line; export leaves only whole images and
# its INCOMPLETE marker. Each run is signalled once it is provably under
# way (polled, with a deadline); env --default-signal undoes the SIG_IGN a
# script gives its background jobs, which ringfeed respects.
wait_until() {  # condition (a shell expression) true within 60 s
  local deadline=$((SECONDS + 60))
  until eval "$1"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
loader_running() {  # SIGINT and SIGTERM blocked by ringfeed's watch, its worker threads started
  local blk
  blk="$(awk '/^SigBlk/ {print $2}' "/proc/$1/status" 2>/dev/null)" || return 1
  [ -n "$blk" ] && (((16#$blk & 0x4002) == 0x4002)) && [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -ge 4 ]
}
signal_run() {  # signal, readiness condition (may use $pid), command...: sets sig_rc, sig_secs
  local sig="$1" ready="$2"; shift 2
  env --default-signal=INT,TERM "$@" >"$work/sig.out" 2>"$work/sig.err" &
  pid=$!
  sig_rc=none sig_secs=0
  if ! wait_until "$ready"; then
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    echo "not ready within 60 s: $*"; return
  fi
  kill -s "$sig" "$pid"
  local t0=$SECONDS
  if ! wait_until "! kill -0 $pid 2>/dev/null"; then kill -KILL "$pid"; fi
  wait "$pid"; sig_rc=$?
  sig_secs=$((SECONDS - t0))
}
ppm_whole() {  # every .ppm in $1 has exactly the bytes its header announces
  /usr/bin/python3 - "$1" <<'PY'
import os, re, sys
for name in os.listdir(sys.argv[1]):
    if not name.endswith(".ppm"):
        continue
    data = open(os.path.join(sys.argv[1], name), "rb").read()
    m = re.match(rb"P6\n(\d+) (\d+)\n255\n", data)
    if not m or len(data) - m.end() != int(m[1]) * int(m[2]) * 3:
        sys.exit(f"{name}: torn or malformed")
PY
}
"$cli" gen "$work/big" --images 600 --classes 3 --seed 9 >/dev/null 2>&1
for sig in INT TERM; do
  want=$((128 + $(kill -l "$sig")))
  out_dir="$work/sig-exp-$sig"
  signal_run "$sig" 'compgen -G "$out_dir/*.ppm" >/dev/null' \
    "$cli" export "$work/big/train" --out "$out_dir" --size 512 --threads 1
  check "export stops on SIG$sig with status $want within 10 s (got $sig_rc after ${sig_secs}s)" \
    test "$sig_rc" = "$want" -a "$sig_secs" -le 10
  check "export says it was interrupted by SIG$sig, in one line" \
    test "$(grep -c "interrupted by SIG$sig after [0-9]* samples" "$work/sig.err")" -eq 1
  check "the interrupted export is marked INCOMPLETE, saying why" grep -q "interrupted by SIG$sig" "$out_dir/INCOMPLETE"
  n="$(ls "$out_dir" | grep -c '\.ppm$')"
  check "the interrupted export wrote some but not all images ($n)" test "$n" -ge 1 -a "$n" -lt 600
  check "every image of the interrupted export is whole" ppm_whole "$out_dir"
  check "the interrupted export leaves no temporary file" test -z "$(find "$out_dir" -name '.*')"
done
# pack on SIGINT: left shards and no classes.txt, which read as a smaller
# dataset. It is stopped (SIGSTOP) until it has written a shard, so the
# signal lands mid-pack however fast the machine is; then nothing is kept.
pack_caught=0
for attempt in 1 2 3; do
  rm -rf "$work/sig-pack"
  env --default-signal=INT "$cli" pack "$work/big/train" "$work/sig-pack" --shard-mb 1 --threads 1 \
    >/dev/null 2>"$work/sig-pack.err" &
  pid=$!
  while kill -STOP "$pid" 2>/dev/null; do
    if [ -e "$work/sig-pack/shard-000002.tar" ] && [ ! -e "$work/sig-pack/classes.txt" ]; then
      kill -INT "$pid"; kill -CONT "$pid"; pack_caught=1; break
    fi
    kill -CONT "$pid"
  done
  wait "$pid"; pack_rc=$?
  [ "$pack_caught" -eq 1 ] && break
done
check "pack was caught mid-way for the SIGINT check (in 3 tries)" test "$pack_caught" -eq 1
check "pack stops on SIGINT with status 130 (got $pack_rc)" test "$pack_rc" -eq 130
check "pack says it was interrupted and kept nothing" grep -q "interrupted by SIGINT.*nothing was kept" "$work/sig-pack.err"
check "an interrupted pack leaves no shard" test -z "$(ls -A "$work/sig-pack")"
signal_run INT 'loader_running $pid' \
  "$cli" bench "$work/big/train" --pipeline val --size 64 --batch 8 --threads 2 --device -1 --epochs 1000
check "bench stops on SIGINT with status 130 within 10 s (got $sig_rc after ${sig_secs}s)" \
  test "$sig_rc" = 130 -a "$sig_secs" -le 10
check "bench says it was interrupted, in one line, and prints no summary" \
  test "$(grep -c 'interrupted by SIGINT after' "$work/sig.err")" -eq 1 -a ! -s "$work/sig.out"
signal_run TERM 'loader_running $pid' \
  "$cli" bench "$work/big/train" --pipeline none --threads 2 --epochs 100000 --json
check "bench --pipeline none stops on SIGTERM with status 143 within 10 s (got $sig_rc after ${sig_secs}s)" \
  test "$sig_rc" = 143 -a "$sig_secs" -le 10
check "bench --pipeline none says it was interrupted by SIGTERM" grep -q 'interrupted by SIGTERM after' "$work/sig.err"

# --no-dct-scale: fast mode's region decode alone (for measuring what DCT
# scaling adds); exact mode never scales, so the two together are refused.
json="$("$cli" bench "$work/a/train" --pipeline train --batch 8 --device -1 --no-dct-scale --json 2>/dev/null | tail -n 1)"
check "bench --no-dct-scale delivers every image and says it did not scale" \
  grep -q '"dct_scaling":false.*"images":30' <<<"$json"
json="$("$cli" bench "$work/a/train" --pipeline train --batch 8 --device -1 --json 2>/dev/null | tail -n 1)"
check "bench in fast mode says it may scale" grep -q '"dct_scaling":true' <<<"$json"
out="$("$cli" bench "$work/a/train" --exact --no-dct-scale 2>&1)"; rc=$?
check "bench --exact --no-dct-scale is refused with the reason" test "$rc" -eq 1 -a -n "$(grep -F 'fast-mode switch' <<<"$out")"

# --decode auto|cpu|gpu (issue 43): settled as every front end settles it
# (ringfeed::resolve), reported in the JSON and the summary.
json="$("$cli" bench "$work/a/train" --pipeline train --batch 8 --device -1 --json 2>/dev/null | tail -n 1)"
check "bench --decode auto with host batches decodes on the CPU, saying why" \
  grep -q '"decode_reason":"cpu: batches stay on the host.*"gpu_decode":{.*"where":"cpu"' <<<"$json"
json="$("$cli" bench "$work/a/train" --pipeline train --batch 8 --device -1 --decode cpu --json 2>/dev/null | tail -n 1)"
check "bench --decode cpu delivers every image, reported as asked" \
  grep -q '"decode_reason":"asked".*"images":30' <<<"$json"
out="$("$cli" bench "$work/a/train" --pipeline train --batch 8 --device -1 --decode cpu 2>&1)"
check "bench's summary says where images were decoded" grep -q 'decoded on the CPU: asked' <<<"$out"
out="$("$cli" bench "$work/a/train" --decode nvjpeg 2>&1)"; rc=$?
check "bench --decode nvjpeg is refused, listing the names" \
  test "$rc" -ne 0 -a -n "$(grep -F '"auto", "cpu" or "gpu", not "nvjpeg"' <<<"$out")"
out="$("$cli" bench "$work/a/train" --device -1 --decode gpu 2>&1)"; rc=$?
check "bench --device -1 --decode gpu is refused: the GPU decodes into device batches" \
  test "$rc" -eq 1 -a -n "$(grep -F 'decodes into batches on a CUDA device' <<<"$out")"
out="$("$cli" bench "$work/a/train" --exact --decode gpu 2>&1)"; rc=$?
check "bench --exact --decode gpu is refused with the reason" \
  test "$rc" -eq 1 -a -n "$(grep -F "chroma upsampling are not libjpeg-turbo's" <<<"$out")"

# --max-pixels: an image over the limit is refused before it is decoded,
# named, and the limit is said; 0 is not a limit.
out="$("$cli" export "$work/a/train" --out "$work/exp-px" --max-pixels 1 2>&1)"; rc=$?
check "export --max-pixels 1 refuses the first image, naming it and the limit" \
  test "$rc" -eq 1 -a -n "$(grep -F "$work/a/train/" <<<"$out" | grep -F 'more than the limit of 1 ')"
out="$("$cli" bench "$work/a/train" --pipeline train --batch 8 --device -1 --max-pixels 1 --on-error fail 2>&1)"; rc=$?
check "bench --max-pixels 1 fails naming the limit" test "$rc" -eq 1 -a -n "$(grep -F 'limit of 1 ' <<<"$out")"
out="$("$cli" export "$work/a/train" --out "$work/exp-px2" --max-pixels 100000000 2>&1)"; rc=$?
check "export under a large --max-pixels writes every image" \
  test "$rc" -eq 0 -a "$(ls "$work/exp-px2" | grep -c '\.ppm$')" -eq 30
out="$("$cli" export "$work/a/train" --out "$work/exp-px3" --max-pixels 0 2>&1)"; rc=$?
check "--max-pixels 0 is refused" test "$rc" -ne 0 -a -n "$(grep -F -- --max-pixels <<<"$out")"

# bench on a missing path: a clear error naming it, non-zero exit, no hang.
out="$(timeout 30 "$cli" bench "$work/missing" 2>&1)"; rc=$?
check "bench on a missing dataset fails" test "$rc" -eq 1
check "the error names the missing path" grep -qF "$work/missing" <<<"$out"

# pack: WebDataset shards (<key>.<ext> + <key>.cls) that open as a dataset
# holding the same samples, shuffled, byte-identical for one seed.
out="$("$cli" pack "$work/a/train" "$work/pk" --shard-mb 1 --seed 7 2>&1)"; rc=$?
shards="$(find "$work/pk" -name 'shard-*.tar' | wc -l)"
check "pack succeeds" test "$rc" -eq 0
check "pack writes at least 3 shards of at most 1 MiB, as its summary says" \
  test "$shards" -ge 3 -a -z "$(find "$work/pk" -name '*.tar' -size +1024k)" -a -n "$(grep -F " $shards shards" <<<"$out")"
check "pack leaves no temporary files" test -z "$(find "$work/pk" -name '*.tmp')"
check "pack keeps the class names" cmp -s "$work/pk/classes.txt" <(ls "$work/a/train")
members="$(for f in "$work"/pk/shard-*.tar; do tar -tf "$f"; done)"
check "the shards hold an image and a .cls member for each of 30 keys, in key order" test \
  "$(grep -cE '^[0-9]{8}\.(jpg|jpeg)$' <<<"$members")" -eq 30 -a "$(grep -cE '^[0-9]{8}\.cls$' <<<"$members")" -eq 30 -a \
  "$(sed 's/\..*//' <<<"$members" | uniq -c | awk '$1 == 2' | wc -l)" -eq 30 -a \
  "$(sed 's/\..*//' <<<"$members" | uniq | tr -d '\n')" = "$(seq -f '%08g' 0 29 | tr -d '\n')"
label_sums() {  # "<label> <md5 of pixels>" of each exported sample, sorted
  (cd "$1" && for f in *.ppm; do l="${f#*_}"; echo "${l%.ppm} $(md5sum <"$f" | cut -d' ' -f1)"; done) | sort
}
"$cli" export "$work/a/train" --out "$work/pk-src" --pipeline val --exact >/dev/null 2>&1
"$cli" export "$work/pk" --out "$work/pk-exp" --pipeline val --exact >/dev/null 2>&1
check "the packed dataset exports the source's (label, pixels) pairs" \
  test "$(label_sums "$work/pk-exp" | wc -l)" -eq 30 -a "$(label_sums "$work/pk-exp")" = "$(label_sums "$work/pk-src")"
check "pack shuffles (mixed order)" bash -c "! diff -rq '$work/pk-src' '$work/pk-exp' >/dev/null"
"$cli" pack "$work/a/train" "$work/pk2" --shard-mb 1 --seed 7 --threads 1 >/dev/null 2>&1
same=1
for f in "$work"/pk/shard-*.tar; do cmp -s "$f" "$work/pk2/${f##*/}" || same=0; done
check "pack is byte-identical for one seed, whatever the threads" \
  test "$same" -eq 1 -a "$(ls "$work/pk2" | grep -c '^shard-')" -eq "$shards"
"$cli" pack "$work/a/train" "$work/pk3" --no-shuffle >/dev/null 2>&1
"$cli" export "$work/pk3" --out "$work/pk3-exp" --pipeline val --exact >/dev/null 2>&1
check "pack --no-shuffle keeps the source order" diff -r "$work/pk-src" "$work/pk3-exp"

# pack failures name the file; a failed pack leaves no shard and no .tmp.
out="$("$cli" pack "$work/missing-src" "$work/pk4" 2>&1)"; rc=$?
check "pack of a missing source fails and names it" test "$rc" -eq 1 -a -n "$(grep -F "$work/missing-src" <<<"$out")"
cp -r "$work/a/train" "$work/d"
ln -s "$work/nowhere.jpg" "$work/d/$(ls "$work/d" | tail -n 1)/zz_gone.jpg"
out="$("$cli" pack "$work/d" "$work/pk5" --shard-mb 1 2>&1)"; rc=$?
check "pack of an unreadable sample fails and names it" test "$rc" -eq 1 -a -n "$(grep -F zz_gone.jpg <<<"$out")"
check "the failed pack leaves no shard and no .tmp" test -z "$(find "$work/pk5" -name '*.tar*')"

# --stream reads the shards front to back; every sample arrives once per epoch.
json="$("$cli" bench "$work/pk" --pipeline val --size 32 --batch 4 --epochs 2 --device -1 --stream --json 2>/dev/null | tail -n 1)"
check "bench --stream delivers every packed image of both epochs" grep -q '"images":60' <<<"$json"
check "bench --stream says it streamed, with per-epoch rates" grep -q '"epoch_images_per_s":\[[0-9.e+]*,[0-9.e+]*\].*"stream_shards":true' <<<"$json"
out="$("$cli" bench "$work/a/train" --pipeline val --stream 2>&1)"; rc=$?
check "bench --stream on small files fails and says to pack" test "$rc" -eq 1 -a -n "$(grep -F 'ringfeed pack' <<<"$out")"
out="$("$cli" bench "$work/a/train" --pipeline none --cache-dir "$work/unused-cache" 2>&1)"; rc=$?
check "bench --cache-dir with --pipeline none is refused" test "$rc" -eq 1 -a -n "$(grep -F -- '--cache-dir' <<<"$out")"
out="$("$cli" bench "$work/a/train" --pipeline val --size 32 --device -1 --cache-dir "$work/unused-cache" 2>&1)"; rc=$?
check "bench --cache-dir on local files runs and says the cache is not used" \
  test "$rc" -eq 0 -a -n "$(grep -F 'not used' <<<"$out")" -a ! -e "$work/unused-cache"

# With io_uring blocked by the real seccomp filter (Docker's default profile
# does the same), bench and export run on pread threads with one log line
# saying why; --io uring fails and says why.
if [ -n "$no_uring" ]; then
  json="$("$no_uring" "$cli" bench "$work/a/train" --pipeline none --json 2>"$work/nu.err" | tail -n 1)"; rc=$?
  check "bench without io_uring succeeds" test "$rc" -eq 0
  check "bench without io_uring reads every image on pread" \
    test -n "$(grep '"backend":"pread"' <<<"$json" | grep '"images":30')"
  check "bench without io_uring logs the fallback once" \
    test "$(grep -c 'io_uring unavailable, reading with pread threads' "$work/nu.err")" -eq 1
  json="$("$no_uring" "$cli" bench "$work/a/train" --pipeline train --batch 8 --device -1 --json 2>/dev/null | tail -n 1)"; rc=$?
  check "bench --pipeline train without io_uring delivers every image on pread" \
    test "$rc" -eq 0 -a -n "$(grep '"backend":"pread"' <<<"$json" | grep '"images":30')"
  out="$("$no_uring" "$cli" export "$work/a/train" --out "$work/nu-exp" --count 4 2>&1)"; rc=$?
  check "export without io_uring succeeds on pread" test "$rc" -eq 0 -a -n "$(grep -F 'read with pread' <<<"$out")"
  out="$("$no_uring" "$cli" bench "$work/a/train" --pipeline none --io uring 2>&1)"; rc=$?
  check "bench --io uring without io_uring fails saying why" test "$rc" -eq 1 -a -n "$(grep -F seccomp <<<"$out")"
else
  echo "SKIPPED (not counted): the io_uring-blocked checks need the without_io_uring helper"
fi

echo "cli: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
