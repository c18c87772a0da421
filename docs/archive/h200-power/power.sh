#!/bin/bash
# Issue 17's power study: unchanged and planted jobs of one case, one `goldgate run` per job, in
# an interleaved order, everything the analysis needs tarred under $OUT.
#
#   bash docs/archive/h200-power/power.sh GOLDGATE [PART]
#
# PART (default `sync`) picks the plan; each part is one device call, stays within BUDGET_S
# (default 540 s: no job starts that would not finish before it, by the slowest job so far),
# and writes $OUT/power-PART.tgz (the job folders, without checkpoints) and $OUT/power-PART.log:
#   sync   a warm-up job, then 10 unchanged jobs (sync saves; --settle alternating none and
#          drop-caches, or sync where dropping caches is refused) with 3 jobs planted +10 %
#          between them (every save slower by 10 % of the unchanged jobs' median save time, from
#          GOLDGATE_PLANT_SAVE_DELAY_S, which the Megatron entry and fake-trainer both read)
#   async  a warm-up job and 5 unchanged jobs of the async variant ($GG_ASYNC_VARIANT)
#   extra  3 unchanged jobs with 3 jobs planted +20 % and 3 planted +5 % between them
# The priority is the order: if the budget runs out, the jobs run so far are still balanced.
#
# Environment: GG_CASE (default gpt/h200-ckpt-power), GG_PLATFORM (h200), GG_ASYNC_VARIANT
# (checkpoint=async_nvrx), BUDGET_S, JOB_TIMEOUT_S (240), WORK (/tmp/power). Wheels under .whl/ are
# installed into /tmp/site first (as the other device calls do). Rehearsal with fake-trainer:
#   OUT=/tmp/out GG_CASE=demo/ckpt-power GG_PLATFORM=dev_cpu GG_SETTLED=sync \
#     bash .../power.sh target/release/goldgate
# Analysis: docs/archive/h200-power/power-analysis.sh DIR_WITH_THE_TARBALLS.
set -u
G=$(realpath "${1:?usage: power.sh GOLDGATE [sync|async|extra]}") || exit 2
PART=${2:-sync}
: "${OUT:?set OUT to the folder the results go to}"
CASE=${GG_CASE:-gpt/h200-ckpt-power}
PLATFORM=${GG_PLATFORM:-h200}
ASYNC=${GG_ASYNC_VARIANT:-checkpoint=async_nvrx}
BUDGET=${BUDGET_S:-540}
JOB_TIMEOUT=${JOB_TIMEOUT_S:-240}
W=${WORK:-/tmp/power}
T0=$(date +%s)
mkdir -p "$W" "$OUT"
LOG=$OUT/power-$PART.log
log() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$LOG"; }

case $PART in sync|async|extra) ;; *) echo "unknown part \`$PART\` (sync, async or extra)"; exit 2 ;; esac
[ -x "$G" ] || { echo "no goldgate binary at $G"; exit 2; }
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} || { log "pip install failed"; exit 1; }
fi
log "part $PART, case $CASE, platform $PLATFORM, budget $BUDGET s, $($G --version 2>&1)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$LOG"
findmnt -T "$W" -o TARGET,FSTYPE,SOURCE 2>/dev/null | tail -1 | tee -a "$LOG"

# Dropping caches needs root and a writable /proc/sys; where refused, the settled half syncs.
# GG_SETTLED=sync keeps a shared machine's caches (the rehearsal).
SETTLED=${GG_SETTLED:-drop-caches}
if [ "$SETTLED" = drop-caches ] && ! (sync && echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then
  SETTLED=sync
fi
log "settled jobs use --settle $SETTLED"

SLOWEST=0
STOPPED=0
JOBS=0
# job GROUP SETTLE [DELAY_S [EXTRA ARGS...]]: one goldgate run of one repeat into $W/GROUP.
job() {
  local group=$1 settle=$2 delay=$3
  shift 3
  local now=$(( $(date +%s) - T0 ))
  if [ "$STOPPED" = 1 ] || [ $(( now + SLOWEST * 12 / 10 )) -gt "$BUDGET" ]; then
    [ "$STOPPED" = 1 ] || log "budget: not starting $group (slowest job so far ${SLOWEST} s)"
    STOPPED=1; return 1
  fi
  local start=$(date +%s)
  GOLDGATE_PLANT_SAVE_DELAY_S=$delay timeout $(( JOB_TIMEOUT + 30 )) "$G" run "$CASE" --platform "$PLATFORM" \
    --repeat 1 --no-compare --out "$W/$group" --timeout "${JOB_TIMEOUT}s" --settle "$settle" "$@" \
    >> "$W/goldgate-console.log" 2>&1
  local rc=$? took=$(( $(date +%s) - start )) per=0
  JOBS=$(( JOBS + 1 ))
  # A run with --warmup 1 ran two jobs: the budget looks at one.
  case " $* " in *" --warmup 1 "*) per=$(( took / 2 )) ;; *) per=$took ;; esac
  [ "$per" -gt "$SLOWEST" ] && SLOWEST=$per
  log "$group settle=$settle delay=${delay}s $* -> exit $rc in ${took} s"
  if [ "$rc" != 0 ] && [ "$JOBS" = 1 ]; then
    log "the first run failed: no further jobs (see power-$PART-console-tail.log)"
    STOPPED=1
  fi
  return $rc
}

# The median save time after the first, over the passed unchanged jobs so far (0 if none).
median_save() {
  python3 - "$W/unchanged" <<'PY'
import glob, json, statistics, sys
meds = []
for p in glob.glob(sys.argv[1] + "/**/results.json", recursive=True):
    r = json.load(open(p))
    if r.get("warmup") or r["outcome"]["status"] != "passed" or r["variant"]["name"] != "default":
        continue
    s = r["metrics"].get("checkpoint-blocking-time", {})
    v = [x for _, x in sorted(((int(k), x) for k, x in s.items() if isinstance(x, (int, float))))][1:]
    if v:
        meds.append(statistics.median(v))
print(f"{statistics.median(meds):.4f}" if meds else "0")
PY
}

# plant SIZE LABEL: a planted job whose every save is SIZE (0.10 = 10 %) of the median save
# slower; the delay is fixed from the unchanged jobs before the first planted job of LABEL, so
# every job of a planted set carries the same one (the analysis reads it from the .seconds file).
plant() {
  local size=$1 label=$2 d file=$W/planted-$2.seconds
  if [ ! -s "$file" ]; then
    d=$(python3 -c "print(f'{float(\"$(median_save)\") * $size:.4f}')")
    if [ "$d" = "0.0000" ]; then log "no unchanged job yet: $label not planted"; return 1; fi
    echo "$d" > "$file"
  fi
  job "planted-$label" none "$(cat "$file")"
}

case $PART in
  sync)
    # The warm-up job comes first in the first unchanged run (goldgate run --warmup 1).
    job unchanged none 0 --warmup 1
    job unchanged "$SETTLED" 0
    plant 0.10 10
    for i in 1 2 3 4; do
      job unchanged none 0; job unchanged "$SETTLED" 0
      [ "$i" -le 2 ] && plant 0.10 10
    done
    ;;
  async)
    job unchanged none 0 --variant "$ASYNC" --warmup 1
    for i in 1 2 3 4; do job unchanged none 0 --variant "$ASYNC"; done
    ;;
  extra)
    job unchanged none 0 --warmup 1
    for i in 1 2 3; do plant 0.20 20; plant 0.05 5; job unchanged none 0; done
    ;;
esac

log "done: $(find "$W" -name results.json | wc -l) results.json under $W"
tail -40 "$W/goldgate-console.log" > "$OUT/power-$PART-console-tail.log" 2>/dev/null
tar czf "$OUT/power-$PART.tgz" --exclude=checkpoints --exclude=tensorboard --exclude=data-cache \
  -C "$(dirname "$W")" "$(basename "$W")"
ls -la "$OUT" | tee -a "$LOG"
