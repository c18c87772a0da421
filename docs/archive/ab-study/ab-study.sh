#!/bin/bash
# Reruns the A/B resampling study (docs/book/src/results/ab-study.md) on real H200 records of unchanged
# jobs of `gpt/h200-ckpt-power`:
#   - the per-save records of 2026-12-01 14:31-14:50 (/work/shared/data/h200-save-noise-2026-12-01,
#     or $DATA): sessions `power` and `abba`, and the real interleaved A/B session;
#   - this repository's own `goldgate ab` records (docs/archive/h200-ab/calls-O-S.tgz,
#     17:08-17:25, and docs/archive/h200-ab/calls-V-Z/ab-*.tgz, 18:52-19:15): one session per
#     `goldgate ab` with two or more unchanged jobs (arm A, both arms of an A/A, the unchanged job
#     a plant part ran first; warm-ups are left out by the loader).
# Writes docs/book/src/results/ab-study-tables.md (checkpoint-blocking-time, the median of saves 2..),
# docs/book/src/results/ab-study-iteration.md (iteration-time, steps 3..) and
# docs/book/src/results/ab-study-covariate.md (the save/iteration covariate of `ab --covariate`:
# every group of two or more jobs of one session and one arm, planted arms included, since the
# covariate looks at each job's offset from its group). Deterministic (fixed seed).
#   bash docs/archive/ab-study/ab-study.sh [GOLDGATE]
set -eu
G=${1:-target/debug/goldgate}
DATA=${DATA:-/work/shared/data/h200-save-noise-2026-12-01}
R=docs/archive/h200-ab
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for f in session-a-power session-a-abba; do mkdir -p "$T/$f" && tar -xzf "$DATA/$f.tgz" -C "$T/$f"; done
mkdir -p "$T/ot" "$T/vz"
tar -xzf "$R/calls-O-S.tgz" -C "$T/ot"
for f in "$R"/calls-V-Z/ab-*.tgz; do tar -xzf "$f" -C "$T/vz"; done
# session NAME PART_DIR [b]: the unchanged jobs of one goldgate ab (its A jobs, its B jobs too
# when the third word is `b`, and the unchanged job before a plant part) into $T/s/NAME.
sessions=()
session() {
  local out="$T/s/$1" part=$2 arms=${3:-a}
  mkdir -p "$out"
  for job in "$part"/runs/*/[0-9][0-9]-[$arms]*; do cp -r "$job" "$out/"; done
  [ -d "$part/unchanged" ] && cp -r "$part/unchanged" "$out/"
  sessions+=(--session "$1=$out")
}
session S-aa "$T/ot/ab/aa" ab
session plant30-afternoon "$T/ot/ab/plant30"
session X-plant10 "$T/vz/plant10"
session Y-plant20 "$T/vz/plant20"
session Z-aa "$T/vz/aa" ab
shared=(--session power="$T/session-a-power/power/unchanged" --session abba="$T/session-a-abba/ab/A")
real=(--real-a "$T/session-a-abba/ab/A" --real-b "$T/session-a-abba/ab/B")
"$G" ab-study --draws "${DRAWS:-2000}" "${shared[@]}" "${sessions[@]}" "${real[@]}" \
  --markdown docs/book/src/results/ab-study-tables.md > /dev/null
"$G" ab-study --draws "${DRAWS:-2000}" --metric iteration-time --skip-saves 2 "${shared[@]}" \
  "${sessions[@]}" --markdown docs/book/src/results/ab-study-iteration.md > /dev/null

# The covariate: one group per session and arm (a plant shifts its arm's level, not the jobs'
# offsets from it). group NAME DIR...: those job folders into $T/g/NAME.
groups=()
group() {
  local name=$1 out="$T/g/$1" n=0
  shift
  mkdir -p "$out"
  # Numbered: two goldgate ab runs both have a `01-b`.
  for job in "$@"; do
    if [ -d "$job" ]; then n=$((n + 1)) && cp -r "$job" "$out/$n-${job##*/}"; fi
  done
  groups+=(--session "$name=$out")
}
group power-unchanged "$T"/session-a-power/power/unchanged/*
group power-planted10 "$T"/session-a-power/power/planted-10/*
group abba-a "$T"/session-a-abba/ab/A/*
group abba-b-planted10 "$T"/session-a-abba/ab/B/*
group S-aa "$T"/ot/ab/aa/runs/*/[0-9][0-9]-[ab]
group O-plant10-a "$T"/ot/ab/plant10/runs/*/[0-9][0-9]-a
group O-plant10-b "$T"/ot/ab/plant10/runs/*/[0-9][0-9]-b
group O-plant30-a "$T"/ot/ab/plant30/unchanged "$T"/ot/ab/plant30/runs/*/[0-9][0-9]-a
group O-plant30-b "$T"/ot/ab/plant30/runs/*/[0-9][0-9]-b
group Z-aa "$T"/vz/aa/runs/*/[0-9][0-9]-[ab]
group X-plant10-a "$T"/vz/plant10/unchanged "$T"/vz/plant10/runs/*/[0-9][0-9]-a
group X-plant10-b "$T"/vz/plant10/runs/*/[0-9][0-9]-b
group Y-plant20-a "$T"/vz/plant20/unchanged "$T"/vz/plant20/runs/*/[0-9][0-9]-a
"$G" ab-study --covariate --draws "${DRAWS:-2000}" "${groups[@]}" "${real[@]}" \
  --markdown docs/book/src/results/ab-study-covariate.md > /dev/null
