#!/bin/bash
# Issue 13's proof on one H200: Megatron-LM main runs two unmodified corpus cases through
# goldgate, each blessed from a first job and gated by a second (exit 0 = both pass their own
# goldgate goldens):
#   (a) gpt/gpt3_mcore_tp1_pp1_dist_optimizer_overlap_grad_reduce_param_gather — regular,
#       local transformer, TP1 PP1 (1 rank), 50 iterations. The only regular local-transformer
#       GPT case of one rank; it has no recipe row, so goldgate runs pretrain_gpt.py, the
#       training script every GPT recipe names. (Every other GPT case of one rank uses
#       Transformer Engine, which this box lacks.)
#   (b) gpt/gpt3_mcore_tp1_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_param_gather
#       — ckpt-resume (recipe h100/gpt.yaml, nightly): run 1 trains 100 iterations and saves at
#       50 and 100; goldgate removes iter_0000100 and writes 50 to latest_checkpointed_iteration.txt;
#       run 2 resumes from iteration 50. The gate judges run 1 against the golden values and
#       run 2's iterations 51-100 against run 1's (`lm loss (resumed)`, `num-zeros (resumed)`).
# Both with `--variant data=mock` (Megatron's mock data set and NullTokenizer: the box has none
# of Megatron's data sets) and `--variant fused=none` (--no-persist-layer-norm and the
# --no-*-fusion flags: the box has no Apex), nothing else changed: iteration counts, batch sizes,
# launcher (ft_launcher) and flags are the case's.
#
# Usage, from the repository root on the device machine:
#   docs/archive/h200-proofs/parity.sh GOLDGATE OUTDIR
# GOLDGATE: a goldgate binary built on the development machine (`cargo build --release -p
# goldgate`), carried. Needs: the corpus folder .device/corpus (built by parity-carry.sh, carried),
# Megatron-LM main at $MEGATRON_LM_DIR (default /tmp/mlm), the wheels installed in /tmp/site and
# on PYTHONPATH (ft_launcher from nvidia-resiliency-ext in /tmp/site/bin), one GPU.
# PARITY_GATE_ARGS adds words to the gating run (a dry run on a machine without a GPU, with
# a stand-in ft_launcher on PATH, needs `--allow-env-mismatch`).
# Device time: 4 Megatron launches per job pair (about 4-6 minutes in all, estimated from the
# 12-layer, 512-hidden model; not yet measured). Goldgate's results (without checkpoints) and
# the goldens land in OUTDIR.
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 GOLDGATE OUTDIR" >&2
  exit 2
fi
GG=$(realpath "$1")
OUT=$(mkdir -p "$2" && realpath "$2")
CORPUS=${PARITY_CORPUS:-.device/corpus}
ROOT=$CORPUS/tests/functional_tests/test_cases
WORK=${PARITY_WORK:-/tmp/parity}
# PARITY_CASES (space-separated) picks cases; default both.
read -r -a CASES <<< "${PARITY_CASES:-gpt/gpt3_mcore_tp1_pp1_dist_optimizer_overlap_grad_reduce_param_gather gpt/gpt3_mcore_tp1_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_param_gather}"
COMMON=(--config goldgate.yaml --root "$ROOT" --platform h200 --variant data=mock --variant fused=none)
# Per job (a ckpt-resume job is both its runs); a second job starts only if this much is left.
JOB_TIMEOUT=${PARITY_JOB_TIMEOUT:-240s}
SECOND_JOB_BY_S=${PARITY_SECOND_JOB_BY_S:-330}

preflight() {
  export MEGATRON_LM_DIR=${MEGATRON_LM_DIR:-/tmp/mlm}
  export PATH=/tmp/site/bin:$PATH
  export PYTHONPATH=$MEGATRON_LM_DIR${PYTHONPATH:+:$PYTHONPATH}
  local ok=0
  [ -x "$GG" ] || { echo "no goldgate binary at $GG"; ok=1; }
  [ -d "$ROOT" ] || { echo "no corpus at $ROOT (run parity-carry.sh and carry .device/corpus)"; ok=1; }
  [ -f "$MEGATRON_LM_DIR/pretrain_gpt.py" ] || { echo "no Megatron-LM at $MEGATRON_LM_DIR"; ok=1; }
  command -v ft_launcher >/dev/null || { echo "no ft_launcher on PATH"; ok=1; }
  # The extracted tarball's compiled dataset helpers are older than their source; keep them.
  touch "$MEGATRON_LM_DIR"/megatron/core/datasets/helpers_cpp*.so 2>/dev/null || true
  "$GG" --version
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1 | head -1
  return $ok
}

# Goldgate's records without checkpoints or anything over 20 MB, into OUTDIR.
collect() {
  local from=$1 to=$2
  [ -d "$from" ] || return 0
  mkdir -p "$to"
  (cd "$from" && find . -type d -name 'checkpoints*' -prune -o -type f -size -20M -print0 |
    xargs -0 -r cp --parents -t "$to")
}

main() {
  local t0=$SECONDS
  preflight || return 2
  rm -rf "$WORK" && mkdir -p "$WORK"
  echo "== plan (the argv each run gets)"
  "$GG" plan "${COMMON[@]}" "${CASES[@]}" >"$OUT/plan.txt" 2>&1
  local rc=$?
  cat "$OUT/plan.txt"
  [ $rc -eq 0 ] || return $rc
  for case in "${CASES[@]}"; do
    "$GG" repro "${COMMON[@]}" "$case" >"$OUT/repro-$(basename "$case").sh" 2>&1
  done
  echo "== job 1: run to bless ($((SECONDS - t0)) s)"
  "$GG" run "${COMMON[@]}" --out "$WORK/bless" --no-compare --timeout "$JOB_TIMEOUT" "${CASES[@]}"
  rc=$?
  collect "$WORK/bless" "$OUT/bless"
  echo "JOB1 exit $rc after $((SECONDS - t0)) s"
  [ $rc -eq 0 ] || return $rc
  "$GG" bless --config goldgate.yaml --from "$WORK/bless" \
    --golden-root "$OUT/goldens" "${CASES[@]}"
  rc=$?
  echo "BLESS exit $rc"
  [ $rc -eq 0 ] || return $rc
  if [ $((SECONDS - t0)) -gt "$SECOND_JOB_BY_S" ]; then
    echo "job 1 took $((SECONDS - t0)) s: no time left for job 2 in this call"
    return 3
  fi
  echo "== job 2: run and gate against the goldens just blessed ($((SECONDS - t0)) s)"
  "$GG" run "${COMMON[@]}" --out "$WORK/gate" --golden-root "$OUT/goldens" \
    --timeout "$JOB_TIMEOUT" --junit "$OUT/gate.junit.xml" --markdown "$OUT/gate.md" \
    --json "$OUT/gate.json" ${PARITY_GATE_ARGS:-} "${CASES[@]}"
  rc=$?
  collect "$WORK/gate" "$OUT/gate"
  echo "JOB2 exit $rc after $((SECONDS - t0)) s"
  return $rc
}

main 2>&1 | tee "$OUT/parity.log"
exit "${PIPESTATUS[0]}"
