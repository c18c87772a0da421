#!/bin/bash
# Issue 31's H200 proof: `goldgate ab --within-job` on gpt/h200-ckpt-injob (45 saves a job, 22
# save pairs after the first), parts run in the order given, each under what is left of one
# call's budget, everything under $OUT (call.log, PART.log, injob-CALL.tgz).
#
#   OUT=... bash injob.sh CALL PART...        (from the repository root)
#
# PART:
#   gc        gc_switch.py: does PyTorch apply garbage_collection_threshold mid-run (counters)
#   aa        in-job A/A, 3 jobs (--max-jobs 3)
#   plantP    B saves sleep P % of the median window of A/A job 1 (or $GG_MEDIAN_S): 5, 10, 20
#   seed      the seed's change: B without save_checkpoint_and_time's empty_cache
#             (--b-switch empty-cache=remove), 3 jobs (--min-effect 0.001: no early pass, the
#             interval is the answer)
#   gcab      gc-threshold 0.99 (A) against 0.8 (B), one job
#   startup   startup.sh: Python, torch, torchrun, Megatron's imports and the first save's
#             spawned Manager timed outside goldgate
#   eager     one in-job A/A job of $GG_EAGER_CASE (the case with the entry as it was before
#             it imported Megatron inside main(): $GG_EAGER_ROOT), checkpoints kept, then their
#             removal timed (what goldgate's end of a job does)
#   aaN       in-job A/A, N jobs, --min-effect 0.001 (no early pass: every job runs)
#   seedp     the seed's change to a precision: --precision ${GG_PRECISION:-3%},
#             --max-jobs ${GG_SEED_JOBS:-8}, the gate's own min-effect
# Environment: GG (.device/goldgate), GG_ROOT (.device/injob/test_cases), GG_CASE
# (gpt/h200-ckpt-injob), GG_PLATFORM (h200), GG_SETUP (1), BUDGET_S (560), GG_MEDIAN_S.
# Rehearsal (no GPU, fake trainer): GG=target/release/goldgate GG_ROOT=runner/tests/fixtures/cases
#   GG_CASE=fake/injob GG_PLATFORM=dev_cpu GG_SETUP=0 OUT=/tmp/o bash injob.sh r aa plant10
set -u
CALL=${1:?usage: injob.sh CALL PART...}
shift
H=$(dirname "$(realpath "$0")")
BUDGET_S=${BUDGET_S:-560}
source "$H/lib.sh"
G=$(realpath "${GG:-.device/goldgate}") || exit 2
ROOT=${GG_ROOT:-.device/injob/test_cases}
CASE=${GG_CASE:-gpt/h200-ckpt-injob}
PLATFORM=${GG_PLATFORM:-h200}
W=${WORK:-/tmp/injob}/$CALL
mkdir -p "$W"
[ -x "$G" ] || { log "no goldgate binary at $G"; exit 2; }
# The wheels (megatron-core, nvidia-resiliency-ext, defusedxml) into /tmp/site; the case's entry
# (workloads/megatron/train_gpt.py) needs no Megatron-LM checkout.
if [ "${GG_SETUP:-1}" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >> "$LOG" 2>&1 || { log "pip install failed"; exit 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader >> "$LOG" 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count())' >> "$LOG" 2>&1
  log "setup done"
fi
log "call $CALL: parts $*, case $CASE, platform $PLATFORM, budget $BUDGET_S s, $("$G" --version 2>&1)"

# The median window of arm A's saves in the A/A run's first job (what a plant is sized by).
median_window() {
  [ -n "${GG_MEDIAN_S:-}" ] && { echo "$GG_MEDIAN_S"; return; }
  python3 - "$W" <<'PY'
import glob, json, statistics, sys
for p in sorted(glob.glob(sys.argv[1] + "/aa/**/results.json", recursive=True)):
    r = json.load(open(p))
    v = [c["probe"]["seconds"] for c in r["checkpoints"] if (c.get("probe") or {}).get("arm") == "a"]
    if v:
        print(f"{statistics.median(v):.4f}")
        break
else:
    print("0")
PY
}

# ab PART ARGS...: one goldgate ab --within-job under what is left of the budget (AB_CASE and
# AB_ROOT, when set, instead of CASE and ROOT).
ab() {
  local part=$1
  shift
  local rest=$(( $(left) - 15 ))
  step "$part" 100 "$G" ab "${AB_CASE:-$CASE}" --root "${AB_ROOT:-$ROOT}" --platform "$PLATFORM" --out "$W/$part" \
    --within-job --timeout 200s --budget "${rest}s" \
    --markdown "$W/$part.md" --json "$W/$part.json" "$@"
  log "$part: exit $?"
}

for part in "$@"; do
  case $part in
    gc) step gc 40 python3 "$H/gc_switch.py" ;;
    aa) ab aa --max-jobs 3 --seed 3101 ;;
    aa[0-9]*) ab "$part" --max-jobs "${part#aa}" --seed "31${part#aa}0" --min-effect 0.001 ;;
    startup) step startup 60 bash "$H/startup.sh" ;;
    eager)
      AB_CASE=${GG_EAGER_CASE:-gpt/h200-ckpt-injob-eager} AB_ROOT=${GG_EAGER_ROOT:-.device/injob/eager_cases} \
        ab eager --max-jobs 1 --seed 3120 --min-effect 0.001 --keep-checkpoints
      for c in $(find "$W/eager" -type d -name checkpoints -prune); do
        s=$(date +%s.%N)
        rm -rf "$c"
        log "eager: rm -rf of the kept checkpoints ($c) took $(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }') s"
      done
      ;;
    seedp) ab seedp --max-jobs "${GG_SEED_JOBS:-8}" --seed 3115 --precision "${GG_PRECISION:-3%}" \
      --b-switch empty-cache=remove ;;
    plant*)
      size=${part#plant}
      median=$(median_window)
      delay=$(python3 -c "print(f'{$median * $size / 100:.4f}')")
      log "median window ${median} s: planting ${delay} s (+${size} %) in B's saves"
      [ "$delay" = "0.0000" ] && { log "no median: $part skipped"; continue; }
      echo "$delay" > "$W/$part.seconds"
      ab "$part" --max-jobs 3 --seed "31$size" --b-switch "save-delay=$delay"
      ;;
    seed) ab seed --max-jobs 3 --seed 3105 --min-effect 0.001 --b-switch empty-cache=remove ;;
    gcab) ab gcab --max-jobs 1 --seed 3108 --a-switch gc-threshold=0.99 --b-switch gc-threshold=0.8 ;;
    *) log "unknown part $part" ;;
  esac
done

# Records only: no checkpoints, TensorBoard or data caches.
tar -czf "$OUT/injob-$CALL.tgz" --exclude='checkpoints' --exclude='checkpoints-tmp' \
  --exclude='data-cache' --exclude='tensorboard' --exclude='*.distcp' --exclude='core*' \
  -C "$(dirname "$W")" "$(basename "$W")" || log "packing failed"
log "call $CALL done; $(du -h "$OUT/injob-$CALL.tgz" 2>/dev/null | cut -f1)"
