#!/usr/bin/env bash
# perf/compare/compare_fio.sh DIR [ROUNDS] [DEPTH]
#
# Raw read throughput, cold cache, ringfeed's reader against fio's io_uring
# engine on the same files at the same depth, interleaved in one run:
#   fio --opendir=DIR --rw=read --bs=16k --direct=1 --ioengine=io_uring
#       --iodepth=DEPTH --file_service_type=random --loops=5
#   ringfeed bench DIR --pipeline none --direct --io-depth DEPTH --epochs 5
#   ringfeed bench DIR --pipeline none --io-depth DEPTH --epochs 5 (buffered)
# Before each measurement: sync; echo 3 > /proc/sys/vm/drop_caches (root).
# fio reads whole 16 KiB blocks of each file (it skips a file's last partial
# block); ringfeed reads every byte. Both are reported as MB/s of bytes read.
# Needs root (drop_caches). RINGFEED_BIN: the ringfeed binary.
# RINGFEED_BASELINE_BIN (optional): another build's ringfeed binary (e.g. the
# commit before a change, built in a worktree of its own); each round then
# also measures it, --direct and buffered, next to the current binary (which
# of the two goes first alternates by round), and the summary prints
# current/baseline ratios: of the medians and the median per-round ratio.
set -euo pipefail
dir=${1:?usage: perf/compare/compare_fio.sh DIR [ROUNDS] [DEPTH]}
rounds=${2:-3}
depth=${3:-32}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${RINGFEED_BIN:-$root/build/release/bin/ringfeed}
[ -x "$bin" ] || { echo "compare_fio: no ringfeed binary at $bin (set RINGFEED_BIN)" >&2; exit 1; }
base=${RINGFEED_BASELINE_BIN:-}
[ -z "$base" ] || [ -x "$base" ] ||
  { echo "compare_fio: RINGFEED_BASELINE_BIN=$base is not an executable" >&2; exit 1; }
command -v fio >/dev/null || { echo "compare_fio: fio is not installed (apt-get install fio)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "compare_fio: needs root to drop the page cache" >&2; exit 1; }

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
mbps_fio() {
  # fio prints "fio: opendir added N files" before its JSON.
  fio --name=r --opendir="$dir" --rw=read --bs=16k --direct=1 --ioengine=io_uring --iodepth="$depth" \
      --file_service_type=random --loops=5 --output-format=json 2>/dev/null |
    sed -n '/^{/,$p' | python3 -c 'import json,sys; r=json.load(sys.stdin)["jobs"][0]["read"]; print("%.1f" % (r["bw_bytes"]/1e6))'
}
mbps_ringfeed() {  # extra bench flags
  run_bench "$bin" "$@"
}
run_bench() {  # binary, extra bench flags
  local b=$1; shift
  "$b" bench "$dir" --pipeline none --io-depth "$depth" --epochs 5 --json "$@" 2>/dev/null | tail -n 1 |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.1f %s direct=%s" % (j["mb_per_s"], j["backend"], j["direct"]))'
}

echo "compare_fio: $dir, depth $depth, $rounds interleaved rounds, cold cache before each run"
[ -z "$base" ] || echo "compare_fio: current $bin, baseline $base"
for ((i = 1; i <= rounds; i++)); do
  drop; f=$(mbps_fio)
  if [ -z "$base" ]; then
    drop; d=$(mbps_ringfeed --direct)
    drop; b=$(mbps_ringfeed)
    echo "round $i: fio ${f} MB/s | ringfeed --direct ${d%% *} MB/s | ringfeed buffered ${b%% *} MB/s | direct/fio $(python3 -c "print(f'{${d%% *}/$f:.3f}')")"
    echo "$f ${d%% *} ${b%% *}" >>"${TMPDIR:-/tmp}/compare_fio.$$"
  elif ((i % 2)); then  # odd rounds: current first
    drop; d=$(run_bench "$bin" --direct)
    drop; bd=$(run_bench "$base" --direct)
    drop; b=$(run_bench "$bin")
    drop; bb=$(run_bench "$base")
  else
    drop; bd=$(run_bench "$base" --direct)
    drop; d=$(run_bench "$bin" --direct)
    drop; bb=$(run_bench "$base")
    drop; b=$(run_bench "$bin")
  fi
  if [ -n "$base" ]; then
    echo "round $i: fio ${f} MB/s | --direct current ${d%% *} baseline ${bd%% *} MB/s" \
         "($(python3 -c "print(f'{${d%% *}/${bd%% *}:.3f}')")x) | buffered current ${b%% *} baseline ${bb%% *} MB/s" \
         "($(python3 -c "print(f'{${b%% *}/${bb%% *}:.3f}')")x)"
    echo "$f ${d%% *} ${b%% *} ${bd%% *} ${bb%% *}" >>"${TMPDIR:-/tmp}/compare_fio.$$"
  fi
done
python3 - "${TMPDIR:-/tmp}/compare_fio.$$" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
cols = list(zip(*rows))
f, d, b = (statistics.median(c) for c in cols[:3])
print(f"median: fio {f:.1f} MB/s, ringfeed --direct {d:.1f} MB/s ({d/f:.3f}x fio), buffered {b:.1f} MB/s ({b/f:.3f}x fio)")
if len(cols) == 5:
    bd, bb = statistics.median(cols[3]), statistics.median(cols[4])
    print(f"median: baseline --direct {bd:.1f} MB/s ({bd/f:.3f}x fio), buffered {bb:.1f} MB/s ({bb/f:.3f}x fio)")
    for name, cur, old, c, o in (("--direct", d, bd, 1, 3), ("buffered", b, bb, 2, 4)):
        per_round = [r[c] / r[o] for r in rows]
        print(f"current/baseline {name}: {cur/old:.3f}x of the medians, median per-round ratio "
              f"{statistics.median(per_round):.3f}x (per round {min(per_round):.3f}-{max(per_round):.3f}x)")
PY
rm -f "${TMPDIR:-/tmp}/compare_fio.$$"
