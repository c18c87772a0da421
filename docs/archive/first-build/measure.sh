#!/usr/bin/env bash
# measure.sh NAME COMMIT: a fresh clone of COMMIT (no ../shared beside it, empty target/) in
# /tmp/bb/NAME/goldgate, then `cargo build --release --locked --timings` under /usr/bin/time -v
# at nice 5, the 1-minute load average sampled every 15 s meanwhile.
set -euo pipefail
name=$1 commit=$2
d=${BUILDS:-/tmp/bb}/$name
rm -rf "$d" && mkdir -p "$d"
git clone --quiet "${SRC:?a clone of goldgate holding COMMIT}" "$d/goldgate"
cd "$d/goldgate"
git checkout --quiet --detach "$commit"
git log --oneline -1 > "$d/commit.txt"
( while sleep 15; do cut -d' ' -f1 /proc/loadavg; done ) > "$d/load.txt" &
sampler=$!
start=$(date +%s.%N)
status=0
/usr/bin/time -v -o "$d/time.txt" nice -n 5 cargo build --release --locked --timings > "$d/build.log" 2>&1 || status=$?
end=$(date +%s.%N)
kill "$sampler"
{
  echo "commit: $(cat "$d/commit.txt")"
  echo "status: $status"
  echo "wall: $(echo "$end - $start" | bc) s"
  grep -E "User time|System time|Elapsed|Maximum resident" "$d/time.txt"
  echo "load median: $(sort -n "$d/load.txt" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') (n=$(wc -l < "$d/load.txt"))"
  echo "binary: $(stat -c %s target/release/goldgate 2>/dev/null) bytes"
  echo "target: $(du -sb target | cut -f1) bytes"
} > "$d/summary.txt"
cp target/cargo-timings/cargo-timing.html "$d/" 2>/dev/null || true
cat "$d/summary.txt"
