#!/usr/bin/env bash
# Measures what the demo case's `checkpoint` variants change, with fake-trainer alone (no goldgate):
# per mode, the save-checkpoint blocking time of each save (the timer fake-trainer prints) and, for
# async modes, the completion latency (scheduled -> successfully saved, from the line timestamps),
# plus the mean iteration time and the wall time of the run.
#
# usage: workloads/fake-trainer/bench/checkpoint_modes.sh [FAKE_TRAINER] [REPEATS] [SAVE_ROOT]
#   FAKE_TRAINER defaults to target/debug/fake-trainer, REPEATS to 3, SAVE_ROOT to a temp dir.
set -euo pipefail
bin=${1:-target/debug/fake-trainer}
repeats=${2:-3}
root=${3:-$(mktemp -d)}
# The MODEL_ARGS of test_cases/demo/ckpt-demo that fake-trainer models.
demo=(--train-iters 24 --log-interval 1 --seed 1234 --save-interval 8 --ckpt-format torch_dist
      --step-ms 60 --model-mb 256 --ckpt-mb 64)
declare -A modes=(
  [sync]=""
  [async]="--async-save --use-persistent-ckpt-worker"
  [async_shm]="--async-save --use-persistent-ckpt-worker --async-strategy nvrx --async-ckpt-use-cpu-shm"
)
secs() { # "[2026-11-30 06:35:41.752971]" anywhere in the line -> seconds since midnight
  sed -E 's/.*\[[0-9-]+ ([0-9]+):([0-9]+):([0-9.]+)\].*/\1 \2 \3/' | awk '{printf "%.6f\n", $1*3600+$2*60+$3}'
}
echo "host: $(nproc) cores, $(uname -r); fake-trainer: $bin; repeats: $repeats"
for mode in sync async async_shm; do
  for r in $(seq "$repeats"); do
    dir="$root/$mode-$r"; rm -rf "$dir"; log="$root/$mode-$r.log"
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    "$bin" "${demo[@]}" --save "$dir" ${modes[$mode]} >"$log" 2>/dev/null
    wall=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN {printf "%.2f", (b - a) / 1e9}')
    blocking=$(grep -A1 'time across ranks' "$log" | grep -oE '\(([0-9.]+),' | tr -d '(,' | paste -sd' ')
    iter=$(grep -oE 'elapsed time per iteration \(ms\): [0-9.]+' "$log" | awk '{s+=$NF} END {printf "%.1f", s/NR}')
    latency=""
    for it in 8 16 24; do
      sched=$(grep -E "scheduled an async checkpoint save at iteration +$it " "$log" | secs || true)
      saved=$(grep -E "successfully saved checkpoint from iteration +$it " "$log" | secs)
      [ -n "$sched" ] && latency+="$(awk -v a="$sched" -v b="$saved" 'BEGIN {printf "%.1f", (b - a) * 1000}') "
    done
    printf '%-9s run %s: wall %s s | mean iteration %s ms | blocking ms (8,16,24): %s | async latency ms: %s\n' \
      "$mode" "$r" "$wall" "$iter" "$blocking" "${latency:--}"
    rm -rf "$dir"
  done
done
