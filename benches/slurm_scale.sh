#!/usr/bin/env bash
# goldgate's Slurm executor at scale, against the test cluster of .ci/slurm-cluster.sh:
# the whole Megatron corpus plan (one job per case, the fake trainer standing in for Megatron
# with 3 short steps) submitted with `--jobs 64`. Measures
#   - scheduler calls per minute (sdiag's RPC counters, reset first): goldgate's polling
#     (squeue = REQUEST_JOB_INFO, scontrol show job = REQUEST_JOB_INFO_SINGLE) apart from its
#     submissions (REQUEST_SUBMIT_BATCH_JOB) and from what the jobs' own srun steps ask;
#   - goldgate's CPU time and peak RSS (getrusage of its process and the Slurm commands it ran);
#   - wall overhead per job: the same batch scripts submitted by hand with sbatch (all at once,
#     waited for by their exit lines) against goldgate's makespan, and one job end to end
#     (`goldgate run` of one case against sbatch + waiting for its exit line), 5 times each.
#
#   benches/slurm_scale.sh            (GOLDGATE=path/to/goldgate, GOLDGATE_MEGATRON_CORPUS=...)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
gg=${GOLDGATE:-$repo/target/debug/goldgate}
trainer=$(dirname "$gg")/fake-trainer
corpus=${GOLDGATE_MEGATRON_CORPUS:-$repo/../shared/megatron_corpus}
cases=$corpus/tests/functional_tests/test_cases
[ -d "$cases" ] || { echo "no corpus at $cases"; exit 2; }
sinfo -h >/dev/null 2>&1 || { echo "no Slurm cluster (run .ci/slurm-cluster.sh)"; exit 2; }
work=$(mktemp -d /var/tmp/goldgate-slurm-bench.XXXXXX)
cd "$work"
cat > fake-entry.sh <<EOF
#!/usr/bin/env bash
# The corpus case's flags, then short-job overrides (fake-trainer takes the last value).
exec $trainer "\$@" --train-iters 3 --exit-interval 3 --step-ms 5 --model-mb 4 \
  --activation-mb 1 --ckpt-mb 1 --save-interval 1000
EOF
chmod +x fake-entry.sh
cat > goldgate.yaml <<EOF
platforms:
  bench:
    gpus_per_node: 8
    launcher: direct
    entry: [$work/fake-entry.sh]
    executor: slurm
EOF
# One node per job, whatever the case's layout asks (the test cluster has two small nodes).
select=(--root "$cases" --platform bench --nodes 1 --gpus-per-node 128 --repeat 1)
read -r jobs one < <("$gg" plan "${select[@]}" --format json 2>/dev/null |
  python3 -c 'import json,sys; d=json.load(sys.stdin); j=d["jobs"] if isinstance(d, dict) else d; print(len(j), j[0]["case"])')

rpc() { sdiag | awk -v t="$1" '$1 == t { for (i = 1; i <= NF; i++) if ($i ~ /^count:/) { sub("count:", "", $i); print $i; exit } }'; }
measure() { # command...: prints "wall_s cpu_s maxrss_kb" of the command and its children
  python3 - "$@" <<'EOF'
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{time.monotonic() - t:.2f} {ru.ru_utime + ru.ru_stime:.2f} {ru.ru_maxrss}")
EOF
}
wait_exit_lines() { # log files...: until each holds the batch script's exit line
  for log in "$@"; do
    until grep -qs '^goldgate: the nodes exited with' "$log"; do sleep 0.05; done
  done
}

echo "== $jobs corpus jobs, --jobs 64, poll interval 10 s (goldgate: $gg)"
sdiag --reset
read -r wall cpu rss < <(measure "$gg" run "${select[@]}" --out "$work/out" --jobs 64 \
  --no-compare --sample-interval 200ms)
info=$(rpc REQUEST_JOB_INFO); single=$(rpc REQUEST_JOB_INFO_SINGLE)
submit=$(rpc REQUEST_SUBMIT_BATCH_JOB)
passed=$(grep -rl '"status": "passed"' "$work"/out/*/ --include=results.json | wc -l)
echo "goldgate: $passed of $jobs passed in $wall s; CPU $cpu s; peak RSS $((rss / 1024)) MiB"
python3 -c "w=$wall/60; print(f'scheduler calls: squeue {${info:-0}} + scontrol {${single:-0}} = {(${info:-0}+${single:-0})/w:.1f}/min; sbatch {${submit:-0}} ({${submit:-0}/w:.0f}/min)')"

echo "== the same $jobs batch scripts by hand: sbatch each, wait for every exit line"
mapfile -t scripts < <(find "$work/out" -name slurm-job.attempt1.sh | sort)
logs=()
for s in "${scripts[@]}"; do logs+=("$(dirname "$s")/logs/console.log"); done
rm -f "${logs[@]}"
t0=$(date +%s.%N)
for s in "${scripts[@]}"; do sbatch --parsable "$s" >/dev/null; done
wait_exit_lines "${logs[@]}"
hand=$(python3 -c "import time; print(f'{time.time() - $t0:.2f}')")
python3 -c "print(f'by hand: {$hand} s; goldgate adds {($wall - $hand) / $jobs:.3f} s per job over the whole plan')"

echo "== one job end to end, 5 times: goldgate run vs sbatch + waiting for the exit line"
for i in 1 2 3 4 5; do
  read -r g _ _ < <(measure "$gg" run "${select[@]}" "$one" --out "$work/one$i" --no-compare)
  script=$(find "$work/one$i" -name slurm-job.attempt1.sh)
  log=$(dirname "$script")/logs/console.log
  rm -f "$log"
  t0=$(date +%s.%N)
  sbatch --parsable "$script" >/dev/null
  wait_exit_lines "$log"
  h=$(python3 -c "import time; print(f'{time.time() - $t0:.2f}')")
  echo "goldgate $g s, by hand $h s, extra $(python3 -c "print(f'{$g - $h:.2f}')") s"
done
echo "work folder: $work"
