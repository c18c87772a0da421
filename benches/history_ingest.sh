#!/usr/bin/env bash
# The history store at size: ingest (1) the results of the whole Megatron corpus plan (one job
# per case, the fake trainer standing in for Megatron with 20 short steps, local executor) and
# (2) 1,000 synthetic runs made from one of those records (each its own run id, start time and
# values), into SQLite and, when GOLDGATE_POSTGRES_URL names a server, into PostgreSQL.
# Prints the wall time of each ingest, of a rerun (idempotent: adds nothing), of
# `history show` over the 1,000 runs, and the database's size.
#
#   benches/history_ingest.sh   (GOLDGATE=path/to/goldgate, GOLDGATE_MEGATRON_CORPUS=...,
#                                GOLDGATE_POSTGRES_URL=postgres://...; HISTORY_BENCH_DIR=reuse)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
gg=${GOLDGATE:-$repo/target/release/goldgate}
corpus=${GOLDGATE_MEGATRON_CORPUS:-$repo/../shared/megatron_corpus}
cases=$corpus/tests/functional_tests/test_cases
[ -d "$cases" ] || { echo "no corpus at $cases"; exit 2; }
[ -x "$gg" ] || { echo "no goldgate at $gg"; exit 2; }
work=${HISTORY_BENCH_DIR:-$(mktemp -d /var/tmp/goldgate-history-bench.XXXXXX)}
mkdir -p "$work"
cd "$work" || exit 2
cat > fake-entry.sh <<ENTRY
#!/usr/bin/env bash
exec $gg fake-trainer "\$@" --train-iters 20 --exit-interval 20 --step-ms 2 --model-mb 4 \
  --activation-mb 1 --ckpt-mb 1 --save-interval 5
ENTRY
chmod +x fake-entry.sh
# The corpus cases start torchrun or ft_launcher: stand-ins that drop the launcher's own
# arguments and the case's entry and run the fake trainer with the case's flags.
mkdir -p bin
cat > bin/torchrun <<'LAUNCHER'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do
  case $1 in
    --nproc_per_node|--nnodes|--master_addr|--master_port|--node_rank|--log-dir|--tee|--redirects) shift 2 ;;
    --max-restarts=*|--no-python) shift ;;
    *) break ;;
  esac
done
shift
exec WORK/fake-entry.sh "$@"
LAUNCHER
sed -i "s#WORK#$work#" bin/torchrun
chmod +x bin/torchrun
cp bin/torchrun bin/ft_launcher
export PATH=$work/bin:$PATH
cat > goldgate.yaml <<CONFIG
platforms:
  bench:
    gpus_per_node: 8
    launcher: direct
    entry: [$work/fake-entry.sh]
CONFIG
export GOLDGATE_CONFIG=$work/goldgate.yaml
if [ ! -d corpus-out ]; then
  t0=$(date +%s.%N)
  "$gg" run --root "$cases" --platform bench --nodes 1 --gpus-per-node 128 --repeat 1 \
    --out corpus-out --jobs 2 --no-compare --sample-interval 200ms >run.log 2>&1 || true
  echo "corpus plan ran in $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s"
fi
echo "corpus plan: $(find corpus-out -name results.json | wc -l) results.json"

if [ ! -d synthetic ]; then
  python3 - corpus-out synthetic <<'SYNTH'
import glob, json, os, random, sys
src, out = sys.argv[1], sys.argv[2]
template = None
for p in sorted(glob.glob(f"{src}/**/results.json", recursive=True)):
    r = json.load(open(p))
    if r["outcome"].get("status") == "passed" and len(r["metrics"]) > 5:
        template = r
        break
assert template, "no passed record to copy"
rng = random.Random(1)
for i in range(1000):
    r = json.loads(json.dumps(template))
    day = 1 + i // 24
    run = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{i % 24:02d}-00-00Z-s{i:04d}"
    r["run_id"] = run
    r["started_at"] = run[:13] + ":00:00Z"
    level = 1.1 if i >= 600 else 1.0
    for series in r["metrics"].values():
        for k, v in list(series.items()):
            if isinstance(v, (int, float)):
                series[k] = v * level * (1 + rng.gauss(0, 0.02))
    rel = os.path.join(r["case"], r["variant"]["slug"], str(r["repeat"]))
    d = os.path.join(out, run, rel)
    os.makedirs(d, exist_ok=True)
    json.dump(r, open(os.path.join(d, "results.json"), "w"))
    # ingest stores only the jobs a run's run.json names.
    index = {"schema_version": r["schema_version"], "run_id": run, "started_at": r["started_at"],
             "finished_at": r["started_at"], "platform": r["platform"],
             "goldgate_version": r["fingerprint"]["goldgate_version"], "command": ["synthetic"],
             "jobs": [{"job_id": r["job_id"], "dir": rel, "outcome": r["outcome"]}]}
    json.dump(index, open(os.path.join(out, run, "run.json"), "w"))
print(f"synthetic runs of {template['case']}")
SYNTH
fi
echo "synthetic: $(find synthetic -name results.json | wc -l) runs"
syn_case=$(find synthetic -name results.json -print -quit | xargs python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["case"])')

timeit() {
  python3 -c '
import subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
lines = (r.stdout or r.stderr).strip().splitlines() or [""]
print(f"{time.monotonic() - t:.2f} s (exit {r.returncode}): {lines[0]}")' "$@"
}
bench() { # db label
  echo "== $2"
  echo "corpus ingest:     $(timeit "$gg" history --db "$1" ingest corpus-out --commit c0rpus --branch main)"
  echo "corpus rerun:      $(timeit "$gg" history --db "$1" ingest corpus-out --commit c0rpus --branch main)"
  echo "synthetic ingest:  $(timeit "$gg" history --db "$1" ingest synthetic --commit synth --branch main)"
  echo "synthetic rerun:   $(timeit "$gg" history --db "$1" ingest synthetic --commit synth --branch main)"
  echo "show (1,000 runs): $(timeit "$gg" history --db "$1" show --case "$syn_case" --platform bench --metric "lm loss")"
}
rm -f "$work"/history.sqlite "$work"/history.sqlite-wal "$work"/history.sqlite-shm
bench "$work/history.sqlite" "SQLite ($work/history.sqlite)"
echo "SQLite size: $(du -cb "$work"/history.sqlite* | tail -1 | cut -f1) bytes"
if [ -n "${GOLDGATE_POSTGRES_URL:-}" ]; then
  base=${GOLDGATE_POSTGRES_URL%/*}
  psql "$GOLDGATE_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS gg_bench WITH (FORCE)" >/dev/null
  psql "$GOLDGATE_POSTGRES_URL" -qc "CREATE DATABASE gg_bench" >/dev/null
  bench "$base/gg_bench" "PostgreSQL ($base/gg_bench)"
  echo "PostgreSQL size: $(psql "$base/gg_bench" -tAc "SELECT pg_database_size('gg_bench')") bytes (an empty database: $(psql "$GOLDGATE_POSTGRES_URL" -tAc "SELECT pg_database_size('template1')"))"
fi
echo "work folder: $work"
