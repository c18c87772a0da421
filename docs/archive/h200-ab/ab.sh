#!/bin/bash
# Issue 20's A/B proof: one `goldgate ab` per part, each part one device call of at most BUDGET_S
# (default 540 s), everything under $OUT/ab-PART.tgz plus $OUT/call.log and $OUT/ab-PART.log.
#
#   OUT=... bash docs/archive/h200-ab/ab.sh PART
#
# PART:
#   seed      the seed's question as one command: default against --b-variant empty_cache=level2
#             (Megatron's --empty-unused-memory-level 2: torch.cuda.empty_cache() in the step and
#             save path); the counters (issue 20 item 3) and the timing change in one table
#   emptycache  the seed's change re-added: B with GOLDGATE_PLANT_EMPTY_CACHE=1 (one
#             torch.cuda.empty_cache() more in every save_checkpoint, train_gpt.py and fake-trainer
#             read it); the counters (checkpoint-empty-cache-calls, -sync-all-streams-calls) must
#             decide it in the first pair, with no statistics (docs/book/src/guide/counters.md)
#   gc80      default against --b-variant allocator=gc80
#   aa        A/A: both arms the case as is (a false alarm here is a real false alarm)
#   plant5, plant10, plant20, plant30
#             A/B with GOLDGATE_PLANT_SAVE_DELAY_S in B: 5/10/20/30 % of the median save of one
#             unchanged job run first (which is also the warm-up), as power.sh's plant() does
# Every part runs `goldgate ab ... --budget` so the sequence ends (with its verdict and reports)
# before the call's budget: no pair starts that would not finish.
#
# Environment: GG (goldgate binary, default .device/goldgate), GG_CASE (gpt/h200-ckpt-power),
# GG_PLATFORM (h200), GG_SETUP (1: lib.sh's setup_device, wheels and Megatron-LM; 0 to skip, the
# rehearsal), BUDGET_S (540), JOB_TIMEOUT_S (150), GG_MAX_PAIRS (default: goldgate.yaml's ab.max_pairs),
# WORK (/tmp/ab).
# On the H200 (one call per part, each <= 540 s; carry .device/goldgate, a release build of this
# commit, plus .whl/ and .device/megatron-lm.tgz as lib.sh's setup_device wants them):
#   OUT=$OUT bash docs/archive/h200-ab/ab.sh seed
# Expected: seed ~250 s (warm-up + 1 pair: the counters decide), aa/gc80/plant* up to ~520 s
# (--budget stops before 540 s: a warm-up or unchanged job and 3 pairs at ~65 s a job). Files:
# call.log, ab-PART.log, ab-PART.tgz (+ unchanged-PART.log for plant parts).
# Rehearsal with the fake trainer (any machine, no GPU):
#   OUT=/tmp/ab-out GG=target/debug/goldgate GG_CASE=demo/ckpt-power GG_PLATFORM=dev_cpu \
#     GG_SETUP=0 bash docs/archive/h200-ab/ab.sh plant30
set -u
PART=${1:?usage: ab.sh seed|emptycache|gc80|aa|plant5|plant10|plant20|plant30}
D=docs/archive/h200-ab
BUDGET_S=${BUDGET_S:-540}
source docs/archive/device-lib.sh
G=$(realpath "${GG:-.device/goldgate}") || exit 2
CASE=${GG_CASE:-gpt/h200-ckpt-power}
PLATFORM=${GG_PLATFORM:-h200}
JOB_TIMEOUT=${JOB_TIMEOUT_S:-150}
W=${WORK:-/tmp/ab}/$PART
mkdir -p "$W"
case $PART in seed|emptycache|gc80|aa|plant5|plant10|plant20|plant30) ;; *) log "unknown part $PART"; exit 2 ;; esac
[ -x "$G" ] || { log "no goldgate binary at $G"; exit 2; }
if [ "${GG_SETUP:-1}" = 1 ]; then setup_device || exit 1; fi
log "part $PART, case $CASE, platform $PLATFORM, budget $BUDGET_S s, $("$G" --version 2>&1)"

# The median save after the first one, over the unchanged job's record (power.sh's reading).
median_save() {
  python3 - "$W/unchanged" <<'PY'
import glob, json, statistics, sys
for p in glob.glob(sys.argv[1] + "/**/results.json", recursive=True):
    r = json.load(open(p))
    s = r["metrics"].get("checkpoint-blocking-time", {})
    v = [x for _, x in sorted((int(k), x) for k, x in s.items() if isinstance(x, (int, float)))][1:]
    if r["outcome"]["status"] == "passed" and v:
        print(f"{statistics.median(v):.4f}")
        break
else:
    print("0")
PY
}

# ab NAME ARGS...: one goldgate ab, its report in $OUT/ab-$PART.log, the budget what is left.
ab() {
  local rest=$(( $(left) - 20 ))
  step "ab-$PART" 60 "$G" ab "$CASE" --platform "$PLATFORM" --out "$W/runs" \
    --timeout "${JOB_TIMEOUT}s" --budget "${rest}s" ${GG_MAX_PAIRS:+--max-pairs "$GG_MAX_PAIRS"} \
    --markdown "$W/ab.md" --junit "$W/ab.junit.xml" --json "$W/ab-report.json" "$@"
  log "ab exit $?"
}

warmup=1
case $PART in
  plant*)
    size=${PART#plant}
    step "unchanged-$PART" 60 "$G" run "$CASE" --platform "$PLATFORM" --repeat 1 --no-compare \
      --out "$W/unchanged" --timeout "${JOB_TIMEOUT}s"
    median=$(median_save)
    delay=$(python3 -c "print(f'{$median * $size / 100:.4f}')")
    log "unchanged median save ${median} s: planting ${delay} s (+${size} %) per save in B"
    echo "$delay" > "$W/planted.seconds"
    [ "$delay" = "0.0000" ] && { log "no unchanged save time: nothing planted"; exit 1; }
    # The unchanged job warmed the machine up.
    ab --warmup 0 --b-env "GOLDGATE_PLANT_SAVE_DELAY_S=$delay"
    ;;
  seed) ab --warmup "$warmup" --b-variant empty_cache=level2 ;;
  emptycache) ab --warmup "$warmup" --b-env GOLDGATE_PLANT_EMPTY_CACHE=1 ;;
  gc80) ab --warmup "$warmup" --b-variant allocator=gc80 ;;
  aa) ab --warmup "$warmup" ;;
esac

tail -45 "$OUT/ab-$PART.log" | tee -a "$LOG" >/dev/null
# Not lib.sh's pack: its '*cache*' would drop the empty_cache variant's job folders.
tar -czf "$OUT/ab-$PART.tgz" --exclude='checkpoints' --exclude='checkpoints-tmp' --exclude='data-cache' \
  --exclude='tensorboard' --exclude='*.distcp' --exclude='core*' -C "$(dirname "$W")" "$(basename "$W")" \
  || log "packing failed"
log "part $PART done; $(du -h "$OUT/ab-$PART.tgz" 2>/dev/null | cut -f1)"
