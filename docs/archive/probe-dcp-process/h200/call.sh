#!/usr/bin/env bash
# The probe's DCP check on the device's own PyTorch (docs/archive/probe-dcp-process/check.sh),
# with this tree's probe (new/) and with the probe of 5ef9688, before DCP saves got windows
# (old/). Run from the repository root on the device; writes under $OUT.
set -uo pipefail
{ date -u +%FT%TZ; git log -1 --format='tree of %H' 2>/dev/null || true
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } > "$OUT/device.txt" 2>&1
mkdir -p "$OUT/new" "$OUT/old"
OUT=$OUT/new bash docs/archive/probe-dcp-process/check.sh; echo "new: exit $?" | tee -a "$OUT/device.txt"
OUT=$OUT/old bash docs/archive/probe-dcp-process/check.sh .device/probe-5ef9688.py; echo "old: exit $?" | tee -a "$OUT/device.txt"
