#!/usr/bin/env bash
# Throughput of goldgate's one log stream (split, clean, redact, parse, summarise, tail) on
# real Megatron stdout, side by side with a Python `re` parser (benches/log_parse_re.py) in
# the same run: `goldgate extract LOG` against `python3 log_parse_re.py LOG`,
# each timed on the same file in the page cache, alternately.
#
#   GOLDGATE=target/release/goldgate benches/log_throughput.sh         # 1000 MB, 3 rounds
#   SIZE_MB=105 ROUNDS=5 benches/log_throughput.sh                     # the issue's size
#
# The log is benches/data/h200-async-console.log (the console log of one H200 job: startup,
# 15 iterations, memory reports, an async checkpoint save) repeated until SIZE_MB, each copy's
# iteration numbers shifted so the whole reads as one long run. Prints, per tool and round,
# wall seconds, CPU seconds (user + sys: one core) and MB/s of each, then the best of each.
# Needs python3 and /usr/bin/time; writes only under a temp folder.
set -euo pipefail
cd "$(dirname "$0")/.."
GOLDGATE=$(realpath "${GOLDGATE:-target/release/goldgate}")
SIZE_MB=${SIZE_MB:-1000}
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - benches/data/h200-async-console.log "$work/big.log" "$SIZE_MB" <<'PY'
import re, sys
src, dst, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(src, "rb").read().splitlines(keepends=True)
number = re.compile(rb"(iteration\s+)(\d+)")
steps = max(int(m.group(1)) for l in lines for m in [re.search(rb"iteration\s+(\d+)/", l)] if m)
total = 0
with open(dst, "wb") as out:
    copy = 0
    while total < size_mb * 1_000_000:
        shift = copy * steps
        for line in lines:
            if b"iteration" in line:
                line = number.sub(lambda m: m.group(1) + str(int(m.group(2)) + shift).encode(), line)
            out.write(line)
            total += len(line)
        copy += 1
print(f"log: {total / 1e6:.1f} MB, {copy} copies of {src} ({len(lines)} lines, {steps} steps each)")
PY
log=$work/big.log
bytes=$(stat -c %s "$log")
cat "$log" >/dev/null # into the page cache

# `measure NAME CMD...`: one timed run; prints wall, CPU and MB/s, appends to $work/NAME.
measure() {
  local name=$1
  shift
  /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >"$work/out" 2>"$work/err" || {
    echo "$name failed:"; cat "$work/err"; exit 1; }
  read -r wall user sys <"$work/time"
  awk -v n="$name" -v b="$bytes" -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN {
    c = u + s; printf "%-8s wall %6.2f s  %7.0f MB/s   cpu %6.2f s  %7.0f MB/s\n",
      n, w, b / 1e6 / w, c, b / 1e6 / c }' | tee -a "$work/$name"
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(python3 --version)"
for round in $(seq "$ROUNDS"); do
  measure goldgate "$GOLDGATE" extract "$log"
  measure python python3 benches/log_parse_re.py "$log"
done
python3 benches/log_parse_re.py "$log" | awk '{printf "python saw %d lines, %d steps\n", $1, $2}'
"$GOLDGATE" extract --format json "$log" | python3 -c 'import json, sys
s = json.load(sys.stdin)["logs"][0]["summary"]
print("goldgate saw %d lines, %d steps" % (s["lines"], s["steps_seen"]))'
for name in goldgate python; do
  sort -k3 -n "$work/$name" | head -1 | sed "s/^/best /"
done
