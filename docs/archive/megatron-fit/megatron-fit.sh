#!/bin/bash
# Which Megatron corpus cases fit one H200 (1 GPU, 141 GB), and why the others do not, as
# goldgate itself sees them: `goldgate plan` on the platform `h200` (1 GPU) with
# `--variant data=mock --variant fused=none` (the rank check refuses a case whose parallel
# layout needs more ranks and names the minimum), the planned argv (what still needs Megatron's
# data or checkpoints, Transformer Engine, NeMo), `goldgate list` (mode) and
# `goldgate list --cadence` (the nodes x GPUs Megatron's recipes give each case).
# Memory is not estimated: a case of one rank is counted as fitting.
#
#   docs/archive/megatron-fit/megatron-fit.sh GOLDGATE CORPUS > docs/book/src/results/megatron-fit.md
# CORPUS: a Megatron-LM checkout (or ../shared/megatron_corpus), holding tests/.
set -euo pipefail
GG=$1
ROOT=$2/tests/functional_tests/test_cases
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Names left as written mark what a case still needs from Megatron's machines.
export MEGATRON_LM_DIR=/opt/megatron-lm DATA_PATH='${DATA_PATH}'
"$GG" plan --root "$ROOT" --platform h200 --variant data=mock --variant fused=none \
  --format json >"$TMP/plan.json" 2>"$TMP/plan.err" || true
"$GG" list --root "$ROOT" --format json >"$TMP/list.json"
for cadence in pr mergegroup nightly weekly; do
  "$GG" list --root "$ROOT" --cadence "$cadence" --format json >"$TMP/rows-$cadence.json"
done
python3 - "$TMP" <<'PY'
import collections, glob, json, re, sys

tmp = sys.argv[1]
plan = json.load(open(f"{tmp}/plan.json"))["jobs"]
cases = {c["name"]: c for c in json.load(open(f"{tmp}/list.json"))["cases"]}
size = collections.defaultdict(set)
for path in glob.glob(f"{tmp}/rows-*.json"):
    for row in json.load(open(path))["workloads"]:
        if row["nodes"] and row["gpus"]:
            size[row["case"]].add(f'{row["nodes"]}x{row["gpus"]}')
ranks = {}
other = {}
for line in open(f"{tmp}/plan.err"):
    m = re.match(r"error: (\S+): run \d+ needs at least (\d+) ranks \(([^)]*)\)", line)
    if m:
        ranks.setdefault(m[1], (int(m[2]), m[3]))
    elif line.startswith("error: "):
        name, _, why = line[7:].partition(": ")
        other.setdefault(name, why.strip())

FROZEN = {"frozen-start", "frozen-resume", "release", "checkpoint-consistency"}

def reason(job):
    words = [w for run in job["runs"] for w in run["argv"]]
    case = cases.get(job["case"], {})
    if "nemo" in job["env"].get("TRAINING_SCRIPT_PATH", "").lower():
        return "needs NeMo (its recipe runs a NeMo script)"
    if job["test_type"] in FROZEN or case.get("mode") == "inference":
        return "needs Megatron's checkpoints (/mnt/artifacts): " + (
            case.get("mode") if case.get("mode") == "inference" else job["test_type"])
    data = sorted({words[i - 1] for i, w in enumerate(words) if "${DATA_PATH}" in w and i > 0})
    if data:
        return "needs Megatron's data sets beyond data=mock: " + " ".join(data[:3])
    impl = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--transformer-impl"), None)
    if impl != "local":
        return "fits; needs Transformer Engine (not on the measured box)"
    return "fits as is (data=mock, fused=none)"

rows = []
for job in plan:
    rows.append((job["case"], 1, reason(job)))
for name, (n, how) in ranks.items():
    rows.append((name, n, f"needs {n} GPUs ({how})"))
for name, why in other.items():
    if name not in ranks and all(r[0] != name for r in rows):
        rows.append((name, None, f"not planned: {why}"))

def group(r):
    return re.sub(r"\(.*\)|: .*", "", r).strip()

print("# Megatron corpus cases on one H200\n")
print("Computed by `docs/archive/megatron-fit/megatron-fit.sh GOLDGATE CORPUS` (goldgate's plan on the `h200`")
print("platform, 1 GPU, with `data=mock` and `fused=none`). Memory is not estimated.\n")
print(f"{len(rows)} cases.\n")
print("| why | cases |")
print("|---|---|")
for why, n in collections.Counter(group(r[2]) for r in rows).most_common():
    print(f"| {why} | {n} |")
mins = collections.Counter(r[1] for r in rows if r[1] and r[1] > 1)
print("\nCases that need more than one GPU, by the smallest world size their layout allows:\n")
print("| GPUs | cases |")
print("|---|---|")
for n in sorted(mins):
    print(f"| {n} | {mins[n]} |")
print("\n| case | Megatron's recipes (nodes x GPUs) | min GPUs | on one H200 |")
print("|---|---|---|---|")
for name, n, why in sorted(rows):
    print(f"| {name} | {', '.join(sorted(size.get(name, []))) or '-'} | {n or '-'} | {why} |")
PY
