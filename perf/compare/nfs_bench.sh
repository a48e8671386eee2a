#!/usr/bin/env bash
# perf/compare/nfs_bench.sh DIR [ROUNDS]
#
# ringfeed over NFS without a kernel mount: DIR (an ImageFolder, e.g. from
# `ringfeed gen`) is exported by a real nfs-ganesha server (VFS backend) on
# 127.0.0.1, started here with rpcbind and stopped at exit, and read as
# nfs://127.0.0.1/rfbench through libnfs:
#   1. raw reads (`--pipeline none`), depth 1 vs depth 32, ROUNDS interleaved
#      rounds, the server's page cache dropped before each;
#   2. the val pipeline at --size 64 for 2 epochs with --cache-dir: epoch 1
#      reads the server and fills the local cache (cold), epoch 2 reads the
#      cache (warm); then the same without a cache for comparison.
# Everything runs on this one machine: server, client and decode share its
# cores, and "the network" is loopback. Needs root (ganesha binds the NFS
# ports and opens files by handle; drop_caches). RINGFEED_BIN: the binary.
set -euo pipefail
dir=$(cd "${1:?usage: perf/compare/nfs_bench.sh DIR [ROUNDS]}" && pwd)
rounds=${2:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${RINGFEED_BIN:-$root/build/release/bin/ringfeed}
say() { echo "nfs_bench: $*" >&2; }
[ -x "$bin" ] || { say "no ringfeed binary at $bin (set RINGFEED_BIN)"; exit 1; }
[ "$(id -u)" -eq 0 ] || { say "needs root (ganesha binds the NFS ports; drop_caches)"; exit 1; }
ganesha=$(command -v ganesha.nfsd || true)
rpcbind=$(command -v rpcbind || echo /usr/sbin/rpcbind)
[ -n "$ganesha" ] || { say "ganesha.nfsd not found (apt-get install nfs-ganesha nfs-ganesha-vfs)"; exit 1; }
[ -x "$rpcbind" ] || { say "rpcbind not found (apt-get install rpcbind)"; exit 1; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if port_open 2049; then say "port 2049 is taken (another NFS server runs here): stop it first"; exit 1; fi

work=$(mktemp -d /tmp/rf-nfs-bench.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
port_open 111 || "$rpcbind" -w
for _ in $(seq 50); do port_open 111 && break; sleep 0.1; done
cores=$(nproc)
cat > "$work/ganesha.conf" <<EOF
NFS_CORE_PARAM {
  Protocols = 3; NFS_Port = 2049; MNT_Port = 20048;
  Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false;
  Bind_addr = 127.0.0.1; Mount_Path_Pseudo = true;
  Nb_Worker = $((cores < 2 ? 2 : cores)); RPC_Ioq_ThrdMax = $((cores < 2 ? 2 : cores));
}
NFSV4 { Graceless = true; }
EXPORT {
  Export_Id = 1; Path = $dir; Pseudo = /rfbench; Protocols = 3; Transports = TCP;
  SecType = sys; Squash = None; Access_Type = None;
  CLIENT { Clients = 127.0.0.1; Access_Type = RO; }
  FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
EOF
"$ganesha" -F -f "$work/ganesha.conf" -L "$work/ganesha.log" -p "$work/ganesha.pid" > "$work/ganesha.out" 2>&1 &
pid=$!
for _ in $(seq 100); do port_open 2049 && break; sleep 0.1; done
port_open 2049 || { say "ganesha did not start:"; tail -5 "$work/ganesha.log" >&2; exit 1; }
url=nfs://127.0.0.1/rfbench
# The first mount can race ganesha's registration with rpcbind: retry briefly.
for _ in $(seq 20); do "$bin" bench "$url" --pipeline none --io-depth 8 --json > /dev/null 2>&1 && break; sleep 0.25; done

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
field() { python3 -c "import json,sys; j=json.loads(sys.stdin.read().strip().splitlines()[-1]); print($1)"; }
raw() { "$bin" bench "$url" --pipeline none --io-depth "$1" --json 2>/dev/null | field '"%.0f %.1f" % (j["images_per_s"], j["mb_per_s"])'; }

n=$(find "$dir" -type f | wc -l)
echo "nfs_bench: $url ($n images from $dir), ganesha $("$ganesha" -v 2>&1 | grep -o 'Release = V[^ ]*' | head -1), $cores cores"
echo "raw reads (--pipeline none), files/s and MB/s, server page cache dropped before each run:"
s1=(); s32=()
for ((i = 1; i <= rounds; i++)); do
  drop; a=($(raw 1))
  drop; b=($(raw 32))
  s1+=("${a[0]}"); s32+=("${b[0]}")
  printf "  round %d: depth 1 %6s files/s %6s MB/s | depth 32 %6s files/s %6s MB/s | ratio %.2fx\n" \
    "$i" "${a[0]}" "${a[1]}" "${b[0]}" "${b[1]}" "$(python3 -c "print(${b[0]}/${a[0]})")"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
m1=$(median "${s1[@]}"); m32=$(median "${s32[@]}")
printf "  median: depth 1 %s, depth 32 %s files/s: %.2fx\n" "$m1" "$m32" "$(python3 -c "print($m32/$m1)")"

echo "val pipeline (--size 64, fast mode), 2 epochs, io-depth 32, server page cache dropped first:"
cache="$work/cache"
drop
"$bin" bench "$url" --pipeline val --size 64 --epochs 2 --io-depth 32 --device -1 --cache-dir "$cache" --json 2>/dev/null |
  field '"  with --cache-dir: epoch 1 (server, filling the cache) %.0f images/s, epoch 2 (local cache) %.0f images/s: %.2fx; hit rate %.1f%%, %.1f MB cached" % (j["epoch_images_per_s"][0], j["epoch_images_per_s"][1], j["epoch_images_per_s"][1]/j["epoch_images_per_s"][0], 100*j["cache"]["hit_rate"], j["cache"]["bytes"]/1e6)'
drop
"$bin" bench "$url" --pipeline val --size 64 --epochs 2 --io-depth 32 --device -1 --json 2>/dev/null |
  field '"  without a cache:  epoch 1 %.0f images/s, epoch 2 %.0f images/s (both from the server)" % (j["epoch_images_per_s"][0], j["epoch_images_per_s"][1])'
