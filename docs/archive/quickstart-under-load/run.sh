#!/usr/bin/env bash
# run.sh SRC COMMIT OUT: README's quickstart on a fresh clone of COMMIT while another build loads
# the machine (the caller starts that build), then the demo's gate twice: `goldgate compare` on
# the first command's results, and a gated `goldgate run` of the same matrix (no --no-compare).
# Writes OUT/{commit,load,build,demo,compare,gated-run}.txt; exit codes are in OUT/summary.txt.
set -uo pipefail
src=${1:?SRC: a clone holding COMMIT} commit=${2:?COMMIT} out=$(realpath -m "${3:?OUT}")
mkdir -p "$out"
work=$(mktemp -d)
git clone --quiet "$src" "$work/goldgate" && cd "$work/goldgate" && git checkout --quiet --detach "$commit"
git log --oneline -1 > "$out/commit.txt"
( while sleep 15; do echo "$(date -u +%T) $(cut -d' ' -f1 /proc/loadavg)"; done ) > "$out/load.txt" &
sampler=$!
step() { # step NAME CMD...: time CMD, keep its output and exit code
  local name=$1; shift
  local start=$(date +%s.%N) rc=0
  "$@" > "$out/$name.txt" 2>&1 || rc=$?
  echo "$name: rc=$rc wall=$(echo "$(date +%s.%N) - $start" | bc) s" >> "$out/summary.txt"
}
: > "$out/summary.txt"
step build cargo build --release --locked
step demo ./target/release/goldgate run demo/ckpt-demo --matrix checkpoint --no-compare
step compare ./target/release/goldgate compare
step gated-run ./target/release/goldgate run demo/ckpt-demo --matrix checkpoint
kill "$sampler"
cat "$out/summary.txt"
rm -rf "$work"
