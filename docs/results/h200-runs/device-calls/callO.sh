#!/bin/bash
# Device call O (issue 20): three `goldgate ab` runs of gpt/h200-ckpt-power in one call, each a
# part of ab.sh with its own budget: the seed's question (default against empty_cache=level2:
# counters and timing in one table), +30 % planted per save (decided in <= 2 pairs?), and an A/A.
# Run from the repository root with .device/goldgate and .whl/ carried:
#   OUT=... bash docs/results/h200-runs/device-calls/callO.sh
set -u
D=docs/results/h200-runs/device-calls
: "${OUT:?set OUT}"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl >> "$OUT/call.log" 2>&1 || { echo "pip install failed"; exit 1; }
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >> "$OUT/call.log" 2>&1
BUDGET_S=${SEED_S:-150} GG_SETUP=0 bash "$D/ab.sh" seed
BUDGET_S=${PLANT30_S:-220} GG_SETUP=0 bash "$D/ab.sh" plant30
BUDGET_S=${AA_S:-190} GG_SETUP=0 bash "$D/ab.sh" aa
ls -la "$OUT"
