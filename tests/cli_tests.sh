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

# bench on a missing path: a clear error naming it, non-zero exit, no hang.
out="$(timeout 30 "$cli" bench "$work/missing" 2>&1)"; rc=$?
check "bench on a missing dataset fails" test "$rc" -eq 1
check "the error names the missing path" grep -qF "$work/missing" <<<"$out"

echo "cli: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
