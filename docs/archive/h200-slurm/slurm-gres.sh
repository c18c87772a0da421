#!/bin/bash
# Device call for issue 23 item 8: the GPU gres on the H200's one-node Slurm. slurm-up.sh now
# starts the daemons by their own names (`slurmctld`, `slurmd`, `slurmstepd`, symlinks to
# Debian's `*-wlm` binaries): started as `slurmctld-wlm`/`slurmd-wlm` they did not set up the
# node's GRES (GRES (null); "A line in gres.conf for GRES gpu has 1 more configured than
# expected in slurm.conf"). Reproduced and fixed on the CPU machine with the same Debian
# packages and a stand-in device file (SLURM_UP_GRES=gpu:1 SLURM_UP_GRES_FILE=/dev/null):
# before, `sinfo` showed GRES (null); after, `gpu:1`, and `srun --gres=gpu:1` got
# CUDA_VISIBLE_DEVICES=0.
#
# One step: slurm-up.sh (with /dev/nvidia0 it sets Gres=gpu:1 and checks that slurmctld sees it
# and that `srun --gres=gpu:1` gets the GPU; it exits 1 with both daemons' gres log lines if
# not), then the reference case through `--platform h200_slurm` (its `gres: gpu:1`).
#
#   OUT=/path/to/out bash docs/archive/h200-slurm/slurm-gres.sh
#
# Expected: ~25 s setup, ~5 s slurm-up, ~70 s the job (~100 s); a 150 s budget caps it. Carry: .whl and .device
# (goldgate, megatron-lm.tgz, slurm-debs). Brings back $OUT/call.log, slurm-up.log,
# slurm-run.log and slurm-gres.tgz (the run's records, the batch script, slurm.conf, gres.conf
# and the daemons' logs).
set -u
D=docs/archive/h200-slurm
BUDGET_S=${BUDGET_S:-150}
source docs/archive/device-lib.sh
G=$(realpath .device/goldgate)
setup_device || exit 1
export PATH=/usr/local/bin:$PATH
if step slurm-up 20 bash "$D/slurm-up.sh"; then
  step slurm-run 80 "$G" run gpt/h200-ckpt-allocator --platform h200_slurm --repeat 1 \
    --no-compare --out /tmp/gres/slurm-run --timeout 300s --pending-limit 60s
fi
mkdir -p /tmp/gres/slurm-state
cp /tmp/gg-slurm/state/*.log /tmp/gg-slurm/state/*.conf /tmp/gres/slurm-state/ 2>/dev/null
tar -czf "$OUT/slurm-gres.tgz" --exclude='checkpoints' --exclude='iter_*' --exclude='*.distcp' \
  -C /tmp gres
log "slurm-gres done; $(du -h "$OUT/slurm-gres.tgz" | cut -f1)"
