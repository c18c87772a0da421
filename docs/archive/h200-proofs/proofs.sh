#!/bin/bash
# Device call M (one H200, one call of at most 600 s): the session's proofs, most important
# first, each skipped with a line saying so when the budget would not hold it.
#   1. truth: the reference case gpt/h200-ckpt-allocator (64 iterations, 4 sync saves) once,
#      alone on the machine: host peak PSS against the system's MemAvailable drop (issue 14 #1).
#   2. its golden blessed from that job, on the device (the case changed to 64 iterations).
#   3. slurm: a one-node Slurm from Debian's packages (slurm-up.sh), the same case through
#      `--executor slurm`-platform h200_slurm with gres gpu:1, gated against step 2's golden.
#   4. parity: the corpus ckpt-resume case, blessed from one job and gated on a second.
#   5. truth: the async strategies (async_nvrx, async_mcore, async_shm), one job each.
# Carry: .whl .device (goldgate, megatron-lm.tgz, corpus, slurm-debs).
#   OUT=$OUT bash docs/archive/h200-proofs/proofs.sh
set -u
D=docs/archive/h200-proofs
SLURM_UP=docs/archive/h200-slurm/slurm-up.sh
source docs/archive/device-lib.sh
G=$(realpath .device/goldgate)
setup_device || exit 1
nproc >> "$LOG"; free -g | head -2 >> "$LOG"

# 1. PSS vs the MemAvailable drop, the sync default job alone.
GG_JOBS=sync WORK=/tmp/truth step truth-sync 150 bash "$D/truth.sh" "$G" "$OUT/truth-sync"
# 2. the golden for the 64-iteration case, from that job.
# Blessed twice: as the h200 golden, and under the Slurm platform's name so that step 3's job
# is judged against the local job's figures.
step bless-allocator 10 "$G" bless --from /tmp/truth/sync --golden-root "$OUT/goldens" \
  --platform h200 gpt/h200-ckpt-allocator
step bless-allocator-slurm 10 "$G" bless --from /tmp/truth/sync --golden-root "$OUT/goldens" \
  --platform h200_slurm gpt/h200-ckpt-allocator
# 3. the same case through a one-node Slurm on this machine, gated against step 2's golden.
if [ -f "$SLURM_UP" ] && [ -d .device/slurm-debs ]; then
  step slurm-up 40 bash "$SLURM_UP" && {
    step slurm-run 110 "$G" run gpt/h200-ckpt-allocator --platform h200_slurm --repeat 1 \
      --golden-root "$OUT/goldens" --out /tmp/slurm-run --timeout 300s \
      --junit "$OUT/slurm-gate.junit.xml" --json "$OUT/slurm-gate.json"
    pack slurm-run /tmp/slurm-run
  }
else
  log "SKIP slurm: no slurm-up.sh or .device/slurm-debs"
fi
# 4. the corpus ckpt-resume case, bless + gate.
PARITY_CASES=gpt/gpt3_mcore_tp1_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_param_gather \
  PARITY_SECOND_JOB_BY_S=$(( $(left) / 2 + 20 )) \
  step parity-resume 170 bash "$D/parity.sh" "$G" "$OUT/parity"
# 5. the async strategies, one job each, as the budget allows.
BUDGET_S=$(( $(left) - 10 )) GG_JOBS="async_nvrx async_mcore async_shm" WORK=/tmp/truth-async \
  step truth-async 70 bash "$D/truth.sh" "$G" "$OUT/truth-async"
log "call M done"
