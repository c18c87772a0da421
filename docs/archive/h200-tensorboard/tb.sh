#!/bin/bash
# Device call "tb" (issue 26): Megatron's TensorBoard golden source on the H200, in one call.
#   1. ref:          gpt/h200-tensorboard (30 steps, scalars and memory to TensorBoard) through
#                    `goldgate run --tensorboard`;
#   2. golden bytes: `goldgate bless --tensorboard` and Megatron-LM's own
#                    get_test_results_from_tensorboard_logs.py on that job's tensorboard/ folder,
#                    then a byte comparison (cmp; a diff into the log when they differ);
#   3. gate-mem:     the run blessed (`bless --from`), a second job gated against it: the case
#                    gates on mem-allocated-bytes, which comes per step from TensorBoard only;
#   4. resume:       gpt/h200-ckpt-resume: run 1 (40 steps, saves 20 and 40), run 2 resumed from
#                    the middle checkpoint; blessed, then `compare` judges run 1 against that
#                    golden and the resumed half against run 1 ("lm loss (resumed)").
# Expected: ~250 s of the 290 s budget (setup ~15, ref ~45, goldens ~10, gate ~45, resume ~110,
# judging ~5); every step is skipped with a line when it would not fit (lib.sh).
#
#   OUT=/tmp/out bash docs/archive/h200-tensorboard/tb.sh .device/goldgate
#
# Comes back: call.log, verdicts.txt, both golden files, tb.tgz (the step logs, job folders
# without checkpoints, the comparisons as JSON).
# Carry: .device/goldgate (release build), .device/megatron-lm.tgz (Megatron-LM main, for
# get_test_results_from_tensorboard_logs.py; lib.sh's setup_device unpacks it to /tmp/mlm) and
# .whl/ (megatron-core and what train_gpt.py needs). The device has `tensorboard`; Megatron's
# script also imports click, pydantic and numpy (the log says which are missing: carry their
# wheels in .whl/ then).
#
# Rehearsal with the fake trainer (no GPU, no wheels; what was run before committing it):
#   PATH=$PWD/target/debug:$PATH OUT=/tmp/tb-out GG_ROOT=runner/tests/fixtures/cases GG_PLATFORM=dev_cpu \
#     GG_REF_CASE=fake/tb-scalars GG_RESUME_CASE=fake/tb-resume \
#     MEGATRON_LM_DIR=../shared/megatron_corpus bash docs/archive/h200-tensorboard/tb.sh \
#     target/debug/goldgate
set -u
D=docs/archive/h200-tensorboard
: "${OUT:?set OUT to the folder the results go to}"
BUDGET_S=${BUDGET_S:-290}
source docs/archive/device-lib.sh
G=$(realpath "${1:-.device/goldgate}") || exit 2
PLATFORM=${GG_PLATFORM:-h200}
REF=${GG_REF_CASE:-gpt/h200-tensorboard}
RESUME=${GG_RESUME_CASE:-gpt/h200-ckpt-resume}
REF_ITERS=${GG_REF_ITERS:-30}
W=${WORK:-/tmp/tb}
ROOT=()
[ -n "${GG_ROOT:-}" ] && ROOT=(--root "$GG_ROOT")
rm -rf "$W"
mkdir -p "$W"
if ls .whl/*.whl >/dev/null 2>&1; then setup_device || exit 1; fi
MLM=$(realpath "${MEGATRON_LM_DIR:-/tmp/mlm}")
python3 -c 'import tensorboard, click, pydantic, numpy' >> "$LOG" 2>&1 ||
  log "python3 lacks a module Megatron's golden script imports (above); step megatron-tb will fail"

# `goldgate run --tensorboard` of one job (step runs it under `timeout`: no shell function).
GG=("$G" run "${ROOT[@]}" --platform "$PLATFORM" --repeat 1 --tensorboard --timeout 200s)
# job_dir NAME CASE: the one job folder of a run (OUT/<run-id>/<case>/<variant>/<repeat>).
job_dir() { ls -d "$W/$1"/*/"$2"/default/1 2>/dev/null | head -n 1; }

step ref 60 "${GG[@]}" --out "$W/ref" --no-compare "$REF"
TB=$(job_dir ref "$REF")/tensorboard
log "event files: $(ls "$TB" 2>/dev/null | tr '\n' ' ')"
step bless-tb 10 "$G" bless --tensorboard "$TB" --train-iters "$REF_ITERS" \
  --output "$W/goldgate-golden.json"
step megatron-tb 20 env -C "$MLM" python3 -m \
  tests.functional_tests.python_test_utils.get_test_results_from_tensorboard_logs \
  --logs-dir "$TB" --train-iters "$REF_ITERS" --output-path "$W/megatron-golden.json"
if cmp "$W/goldgate-golden.json" "$W/megatron-golden.json" >> "$LOG" 2>&1; then
  log "GOLDEN BYTES IDENTICAL: $(wc -c < "$W/goldgate-golden.json") bytes, sha256 $(sha256sum < "$W/goldgate-golden.json" | cut -c1-16)"
else
  log "GOLDEN BYTES DIFFER (or one is missing)"
  diff "$W/goldgate-golden.json" "$W/megatron-golden.json" >> "$LOG" 2>&1
fi
step bless-ref 10 "$G" bless --from "$W/ref" --golden-root "$W/golden" --platform "$PLATFORM" "$REF"
step gate-mem 60 "${GG[@]}" --out "$W/gate" --golden-root "$W/golden" --json "$W/gate-mem.json" "$REF"
log "gate-mem exit $?"
step resume 120 "${GG[@]}" --out "$W/resume" --no-compare "$RESUME"
step bless-resume 10 "$G" bless --from "$W/resume" --golden-root "$W/golden" --platform "$PLATFORM" "$RESUME"
step judge-resume 10 "$G" compare --results "$W/resume" --golden-root "$W/golden" \
  --platform "$PLATFORM" --json "$W/judge-resume.json"
log "judge-resume exit $?"
# The verdicts that matter here (every row goes to $OUT/verdicts.txt): Megatron's golden
# metrics, the resumed half, and any regression (learning-rate may regress on a resume job
# judged against its own bless: 5-decimal golden rounding of a ~1e-5 value, not TensorBoard).
for f in "$W/gate-mem.json" "$W/judge-resume.json"; do
  [ -f "$f" ] && python3 - "$f" >> "$OUT/verdicts.txt" 2>&1 <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for job in doc["jobs"]:
    for m in job["metrics"]:
        print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {job['case']} {m['metric']}: {m['verdict']} "
              f"(golden {m['golden']}, now {m['now']})")
PY
done
grep -E ' (lm loss|num-zeros|iteration-time|mem-allocated-bytes|mem-max-allocated-bytes)( \(resumed\))?: |regression' \
  "$OUT/verdicts.txt" 2>/dev/null | while read -r line; do log "$line"; done
# At most a few files come back: the step logs go into the tarball.
cp "$W/goldgate-golden.json" "$W/megatron-golden.json" "$OUT"/ 2>/dev/null
mkdir -p "$W/steps"
for f in "$OUT"/*.log; do [ "$f" = "$LOG" ] || mv "$f" "$W/steps/"; done
log "call tb done"
pack tb "$W"
