#!/usr/bin/env bash
# A job of a few milliseconds (sh + awk printing three iteration lines) gated on lm loss and
# host-peak-pss-bytes against a golden that holds the PSS, N times, with B busy loops beside it.
# Usage: short-jobs.sh GOLDGATE_FOR_THE_GOLDEN GOLDGATE_UNDER_TEST [N=10] [B=3] [INTERVAL=50ms]
# Run from the repository root; prints one line: passes and failures, and the load average.
set -u
blesser=$1 tested=$2 n=${3:-10} busy=${4:-3} interval=${5:-50ms}
script=$PWD/runner/tests/fixtures/faults/iterations.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/cases/m/quick"
cat > "$dir/cases/m/quick/model_config.yaml" <<YAML
TEST_TYPE: regular
LAUNCHER: direct
MODEL_ARGS: {}
METRICS: ["lm loss", "host-peak-pss-bytes"]
GOLDGATE:
  entry: ["sh", "$script", "3"]
YAML
cd "$dir"
"$blesser" run --root cases --out golden-run --no-compare --sample-interval "$interval" >/dev/null 2>&1
"$blesser" bless --from golden-run >/dev/null 2>&1
grep -q host-peak-pss golden/m/quick/*.json || { echo "the golden has no PSS"; exit 2; }
pids=()
for _ in $(seq 1 "$busy"); do (while :; do :; done) & pids+=($!); done
pass=0 fail=0
for _ in $(seq 1 "$n"); do
  rm -rf out
  if "$tested" run --root cases --out out --sample-interval "$interval" >last.log 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
  fi
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
for p in "${pids[@]}"; do kill "$p"; done
echo "$tested: $pass passed, $fail failed of $n (interval $interval, $busy busy loops, load $load); last: $(tail -1 last.log)"
