#!/usr/bin/env bash
# Benchmark: `goldgate list` and `goldgate check` over the Megatron corpus (333 cases,
# 915 golden files, 36 MB). Release build; median of 5 runs after 1 warm-up run.
# Uses hyperfine when installed (apt-get install hyperfine), else (or with NO_HYPERFINE=1)
# a `date +%s%N` loop.
# Wall time depends on machine load (reported with the load average); CPU time less so.
# `check` exits 2 on the corpus (it holds two 0-byte golden files): that is expected.
#
#   benches/list_check.sh            # from the repository root
#   CORPUS=/path/to/test_cases benches/list_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/megatron_corpus/tests/functional_tests/test_cases}
RUNS=${RUNS:-5}
cargo build --release --locked -p goldgate >&2
BIN=target/release/goldgate
LIST="$BIN list --root $CORPUS"
CHECK="$BIN check --root $CORPUS --golden-root $CORPUS"

median_ms() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m}'; }

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "${NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null; then
    json=$(mktemp)
    hyperfine --warmup 1 --runs "$RUNS" -i --export-json "$json" -n list "$LIST" -n check "$CHECK" >&2
    python3 - "$json" "$RUNS" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    cpu = (r["user"] + r["system"]) * 1000
    print(f"{r['command']}: median {r['median']*1000:.1f} ms over {sys.argv[2]} runs, "
          f"cpu (user+sys) mean {cpu:.1f} ms (hyperfine)")
PY
    rm -f "$json"
else
    for name in list check; do
        cmd=$LIST; [ "$name" = check ] && cmd=$CHECK
        $cmd >/dev/null 2>&1 || true
        samples=()
        for _ in $(seq "$RUNS"); do
            t0=$(date +%s%N); $cmd >/dev/null 2>&1 || true; t1=$(date +%s%N)
            samples+=("$(( (t1 - t0) / 1000 ))")
        done
        m=$(printf '%s\n' "${samples[@]}" | median_ms)
        echo "$name: median $(awk -v m="$m" 'BEGIN {printf "%.1f", m/1000}') ms over $RUNS runs (date loop)"
    done
fi
