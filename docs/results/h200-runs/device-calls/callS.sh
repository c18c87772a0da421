#!/bin/bash
# Device call S (issue 20): an A/A ab (both arms the case as is), as many pairs as the call holds.
# this machine (not ~35 s), so O's budgets stopped every ab after its first job. The machine is
# warm from O, so no warm-up job; the planted delays come from O's unchanged job (median save
# 0.3848 s): +30 % = 0.1154 s. Parts: the seed's question (one pair: the counters decide), +30 %.
#   OUT=... bash docs/results/h200-runs/device-calls/callP.sh
set -u
: "${OUT:?set OUT}"
G=$(realpath .device/goldgate)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl > "$OUT/call.log" 2>&1 || { echo "pip install failed"; exit 1; }
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
# part NAME BUDGET_S ARGS...: one goldgate ab into /tmp/ab/NAME, its console in $OUT/ab-NAME.log.
part() {
  local name=$1 budget=$2
  shift 2
  mkdir -p "/tmp/ab/$name"
  "$G" ab gpt/h200-ckpt-power --platform h200 --out "/tmp/ab/$name/runs" --timeout 150s \
    --budget "${budget}s" --max-pairs 12 --warmup 0 --markdown "/tmp/ab/$name/ab.md" \
    --junit "/tmp/ab/$name/ab.junit.xml" --json "/tmp/ab/$name/ab-report.json" "$@" \
    > "$OUT/ab-$name.log" 2>&1
  echo "$name: exit $?" | tee -a "$OUT/call.log"
}

part aa "${AA_S:-540}"
tar -czf "$OUT/abS.tgz" --exclude='checkpoints' --exclude='checkpoints-tmp' --exclude='data-cache' \
  --exclude='tensorboard' --exclude='*.distcp' --exclude='core*' -C /tmp ab
ls -la "$OUT"
