#!/bin/bash
# Reruns the A/B resampling study (docs/results/ab-study.md) on the H200 per-save records of
# 2026-12-01 (/work/shared/data/h200-save-noise-2026-12-01, or $DATA): unpacks them, then
#   goldgate ab-study --session power=... --session abba=... --real-a ... --real-b ...
# and writes the tables to docs/results/ab-study-tables.md. Deterministic (fixed seed).
#   bash docs/results/ab-study.sh [GOLDGATE]
set -eu
G=${1:-target/debug/goldgate}
DATA=${DATA:-/work/shared/data/h200-save-noise-2026-12-01}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for f in session-a-power session-a-abba; do mkdir -p "$T/$f" && tar -xzf "$DATA/$f.tgz" -C "$T/$f"; done
"$G" ab-study --draws "${DRAWS:-2000}" \
  --session power="$T/session-a-power/power/unchanged" --session abba="$T/session-a-abba/ab/A" \
  --real-a "$T/session-a-abba/ab/A" --real-b "$T/session-a-abba/ab/B" \
  --markdown docs/results/ab-study-tables.md
