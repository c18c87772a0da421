#!/bin/bash
# Issue 20's counters on real Megatron, in one device call: one unchanged job blessed as the
# golden, then an unchanged job, a job with the seed's empty_cache planted in every save
# (GOLDGATE_PLANT_EMPTY_CACHE=1, read by workloads/megatron/train_gpt.py and fake-trainer) and a
# job of `--variant empty_cache=level2`, each gated against that golden with `goldgate compare`.
#
#   OUT=/tmp/out bash docs/archive/h200-counters/counters.sh GOLDGATE
#
# What it should show (docs/book/src/guide/counters.md): the unchanged job passes every counter
# (an A/A check of their exact rules on real Megatron: a counter that fails here is not
# deterministic there); the planted job fails `checkpoint-empty-cache-calls` and
# `checkpoint-sync-all-streams-calls` (+1 in each save: from 1 to 2 where Megatron's own
# save_checkpoint_and_time already empties the cache once, docs/book/src/results/h200.md) and
# `empty-cache-calls` (+11 for the case's 11 saves), exit 1; the level-2 job fails
# `empty-cache-calls` (two more calls a step) and likely the allocator counts, exit 1. Timing
# verdicts do not decide any of it. About 4 jobs x ~35 s of gpt/h200-ckpt-power: ~2.5-3 min.
# Writes $OUT/call.log (lib.sh's), $OUT/counters-table.md (each counter, per job) and
# $OUT/counters.tgz (the job folders without checkpoints, the golden, the comparisons as JSON).
#
# Environment: GG_CASE (default gpt/h200-ckpt-power), GG_ROOT (the case root; default: the
# repository's test_cases), GG_PLATFORM (h200), BUDGET_S (560), GG_SETUP (1: lib.sh's setup_device, wheels and
# Megatron-LM, as ab.sh; 0 to skip, the rehearsal), JOB_TIMEOUT_S (240), WORK (/tmp/counters).
# Rehearsal with fake-trainer (what was run before committing it):
#   OUT=/tmp/out GG_CASE=fake/counters GG_ROOT=runner/tests/fixtures/cases GG_PLATFORM=dev_cpu \
#     GG_SETUP=0 bash docs/archive/h200-counters/counters.sh target/debug/goldgate
set -u
G=$(realpath "${1:-.device/goldgate}") || exit 2
: "${OUT:?set OUT to the folder the results go to}"
source docs/archive/device-lib.sh
CASE=${GG_CASE:-gpt/h200-ckpt-power}
PLATFORM=${GG_PLATFORM:-h200}
JOB_TIMEOUT=${JOB_TIMEOUT_S:-240}
W=${WORK:-/tmp/counters}
ROOT=()
[ -n "${GG_ROOT:-}" ] && ROOT=(--root "$GG_ROOT")
rm -rf "$W"
mkdir -p "$W"
[ -x "$G" ] || { log "no goldgate binary at $G"; exit 2; }
if [ "${GG_SETUP:-1}" = 1 ]; then setup_device || exit 1; fi
log "counters: case $CASE, platform $PLATFORM, $("$G" --version 2>&1)"

# job NAME PLANT [EXTRA ARGS...]: one goldgate run of one job into $W/NAME, not started when
# less than JOB_EXPECT_S (90) of lib.sh's BUDGET_S (560) is left.
job() {
  local name=$1 plant=$2
  shift 2
  if [ "$(left)" -lt "${JOB_EXPECT_S:-90}" ]; then
    log "budget: not starting $name ($(left) s left)"
    return 99
  fi
  local start=$(date +%s) limit=$(( JOB_TIMEOUT + 30 ))
  [ "$limit" -gt "$(( $(left) - 5 ))" ] && limit=$(( $(left) - 5 ))
  GOLDGATE_PLANT_EMPTY_CACHE=$plant timeout "$limit" "$G" run "${ROOT[@]}" "$CASE" \
    --platform "$PLATFORM" --repeat 1 --no-compare --out "$W/$name" --timeout "${JOB_TIMEOUT}s" "$@" \
    >> "$W/goldgate-console.log" 2>&1
  local rc=$?
  log "$name plant_empty_cache=$plant $* -> exit $rc in $(( $(date +%s) - start )) s"
  return $rc
}

# gate NAME: the job against the golden; the exit code and the counters' verdicts go to the log.
gate() {
  "$G" compare "${ROOT[@]}" --results "$W/$1" --golden-root "$W/goldens" --platform "$PLATFORM" \
    --json "$W/compare-$1.json" >> "$W/goldgate-console.log" 2>&1
  log "compare $1 -> exit $?"
}

job golden 0 || { log "no golden job: nothing to compare"; tail -40 "$W/goldgate-console.log" > "$OUT/counters-console-tail.log" 2>/dev/null; exit 1; }
"$G" bless --from "$W/golden" --golden-root "$W/goldens" >> "$W/goldgate-console.log" 2>&1
log "bless -> exit $?"
# The level-2 job is judged against the level-0 golden: the seed's question.
for d in "$W/goldens/$CASE"; do
  mkdir -p "$d/variants/empty_cache-level2"
  cp "$d"/golden_values_*.json "$d/variants/empty_cache-level2/"
done
job unchanged 0 && gate unchanged
job planted 1 && gate planted
job level2 0 --variant empty_cache=level2 && gate level2

python3 - "$W" > "$OUT/counters-table.md" <<'PY'
import glob, json, os, sys
w = sys.argv[1]
jobs = ["golden", "unchanged", "planted", "level2"]
rec, verdicts = {}, {}
for j in jobs:
    found = glob.glob(os.path.join(w, j, "**", "results.json"), recursive=True)
    if found:
        rec[j] = json.load(open(found[0]))["metrics"]
    cmp = os.path.join(w, "compare-%s.json" % j)
    if os.path.exists(cmp):
        job = json.load(open(cmp))["jobs"][0]
        verdicts[j] = {m["metric"]: m["verdict"] for m in job["metrics"]}
names = sorted({n for m in rec.values() for n in m
                if any(n.endswith(s) for s in ("-calls", "-retries", "-ooms", "written-bytes", "folder-bytes"))
                or n in ("checkpoint-blocking-time", "checkpoint-empty-cache-seconds")})
def cell(j, n):
    s = rec.get(j, {}).get(n)
    if s is None:
        return "—"
    vals = list(s.values())
    text = "%g" % vals[0] if len(vals) == 1 else "per save " + ", ".join("%g" % v for v in vals)
    v = verdicts.get(j, {}).get(n)
    return text + ("" if v is None else " (%s)" % v)
print("| metric | " + " | ".join(jobs) + " |")
print("|---|" + "---|" * len(jobs))
for n in names:
    print("| %s | %s |" % (n, " | ".join(cell(j, n) for j in jobs)))
PY
cat "$OUT/counters-table.md" >> "$LOG"
find "$W" -type d -name checkpoints -prune -exec rm -rf {} + 2>/dev/null
tar -czf "$OUT/counters.tgz" -C "$W" . 2>/dev/null
log "done: $OUT/counters.tgz ($(du -h "$OUT/counters.tgz" | cut -f1))"
