# Helpers for a device call script (sourced, not run). A call has one wall-clock budget; every
# step says what it expects to cost and is skipped, with a line saying so, when that would not
# fit. Output goes to $OUT/call.log by explicit appends (never `exec > >(tee …)`: with a bare
# `wait` that hung a call).
#
#   source docs/results/h200-runs/device-calls/lib.sh
#   BUDGET_S=560 setup_device
#   step NAME EXPECTED_S command args...
#   pack NAME FOLDER            # FOLDER as $OUT/NAME.tgz, checkpoints and caches left out

: "${OUT:?set OUT}"
T0=$(date +%s)
BUDGET_S=${BUDGET_S:-560}
LOG=$OUT/call.log
mkdir -p "$OUT"

log() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$LOG"; }
left() { echo $(( BUDGET_S - ($(date +%s) - T0) )); }

# step NAME EXPECTED_S CMD...: runs CMD (stdout+stderr to $OUT/NAME.log) when EXPECTED_S fits
# into what is left of the budget, and under a timeout of what is left.
step() {
  local name=$1 expected=$2
  shift 2
  local rest
  rest=$(left)
  if [ "$rest" -lt "$expected" ]; then
    log "SKIP $name: expects ${expected} s, ${rest} s left"
    return 99
  fi
  log "START $name (expects ${expected} s, ${rest} s left)"
  local start=$(date +%s)
  timeout --kill-after=5 "$(( rest - 5 ))" "$@" >> "$OUT/$name.log" 2>&1
  local rc=$?
  log "END $name: exit $rc in $(( $(date +%s) - start )) s"
  return $rc
}

# pack NAME FOLDER: the folder without checkpoints, data caches and core files.
pack() {
  tar -czf "$OUT/$1.tgz" --exclude='ckpt*' --exclude='checkpoints' --exclude='*cache*' \
    --exclude='core*' -C "$(dirname "$2")" "$(basename "$2")" 2>>"$LOG" || log "pack $1 failed"
}

# setup_device: wheels into /tmp/site, Megatron-LM main into /tmp/mlm, facts into the log.
setup_device() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >> "$LOG" 2>&1 || { log "pip install failed"; return 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
  tar -xzf .device/megatron-lm.tgz -C /tmp && touch /tmp/mlm/megatron/core/datasets/helpers_cpp*.so
  export MEGATRON_LM_DIR=/tmp/mlm
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >> "$LOG" 2>&1
  .device/goldgate --version >> "$LOG" 2>&1
  log "setup done"
}
