#!/bin/bash
# Device call N (what call M could not bring back: the device returns at most 8 files, and
# slurm-up.sh failed silently there): slurm-up.sh traced, then the reference case through the
# one-node Slurm; the sync job again (its records and golden); the corpus ckpt-resume case's
# first minute (its failure). Everything in one tarball.
set -u
D=docs/results/h200-runs/device-calls
source "$D/lib.sh"
G=$(realpath .device/goldgate)
setup_device || exit 1
export PATH=/usr/local/bin:$PATH
if step slurm-up 40 bash -x "$D/slurm-up.sh"; then
  step slurm-run 110 "$G" run gpt/h200-ckpt-allocator --platform h200_slurm --repeat 1 \
    --no-compare --out /tmp/n/slurm-run --timeout 300s --sample-interval 10ms
fi
mkdir -p /tmp/n/slurm-state && cp /tmp/gg-slurm/state/*.log /tmp/gg-slurm/state/slurm.conf /tmp/n/slurm-state/ 2>/dev/null
GG_JOBS=sync WORK=/tmp/n/truth step truth-sync 95 bash "$D/truth.sh" "$G" /tmp/n/truth-out
step bless-allocator 10 "$G" bless --from /tmp/n/truth/sync --golden-root /tmp/n/goldens \
  --platform h200 gpt/h200-ckpt-allocator
PARITY_CASES=gpt/gpt3_mcore_tp1_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_param_gather \
  PARITY_JOB_TIMEOUT=$(( $(left) - 15 ))s PARITY_WORK=/tmp/n/parity \
  step parity-first 45 bash "$D/parity.sh" "$G" /tmp/n/parity-out
cp "$OUT"/*.log /tmp/n/ 2>/dev/null
tar -czf "$OUT/callN.tgz" --exclude='checkpoints' --exclude='iter_*' --exclude='tensorboard' \
  --exclude='data-cache' --exclude='*.distcp' -C /tmp n
log "call N done; $(du -h "$OUT/callN.tgz" | cut -f1)"
