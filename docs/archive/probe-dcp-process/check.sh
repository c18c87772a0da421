#!/usr/bin/env bash
# The probe against the device's own PyTorch: does a torch.distributed.checkpoint async save
# count the bytes its writer wrote for it, with a writer thread (MODE=THREAD) and with DCP's
# persistent background process (MODE=PROCESS)? Runs record/src/observe/probe/dcp_async_save.py
# (the workload of the test record/src/observe/probe/torch_tests.rs) on CPU, gloo, world size 1,
# under the probe file given, and checks each save's count against its folder on disk, as that
# test does. Run from the repository root with OUT set:
#
#   bash docs/archive/probe-dcp-process/check.sh [PROBE_FILE]   (default: the probe in this tree)
#
# PYTHON picks the interpreter (default python3). Writes $OUT/check.txt (the table) and
# $OUT/probe-<mode>.tgz (each job's probe files); exits 1 if a save's count is off.
set -euo pipefail
probe=${1:-record/src/observe/probe/sitecustomize.py}
python=${PYTHON:-python3}
: "${OUT:?set OUT}"
[ -f "$probe" ] || { echo "no probe file $probe" >&2; exit 2; }
workload=$PWD/record/src/observe/probe/dcp_async_save.py
"$python" -c 'import torch, numpy; print("torch", torch.__version__)' | tee "$OUT/check.txt"
status=0
for mode in THREAD PROCESS; do
  job=$OUT/job-$mode
  rm -rf "$job" && mkdir -p "$job/probe"
  cp "$probe" "$job/probe/sitecustomize.py"
  PYTHONPATH=$job/probe GOLDGATE_PROBE_DIR=$job/probe GOLDGATE_PROBE_INTERVAL_S=0.05 RANK=0 \
    MODE=$mode timeout 300 "$python" "$workload" "$job" >"$OUT/workload-$mode.log" 2>&1 ||
    { echo "$mode: the workload failed (workload-$mode.log)" | tee -a "$OUT/check.txt"; status=1; continue; }
  # What goldgate's reader does (record/src/observe/probe/read.rs): each save window's own bytes
  # plus the parts credited to it (the rank file's `parts`, the probe-part-*.json files).
  "$python" - "$job" "$mode" <<'PY' | tee -a "$OUT/check.txt" || status=1
import glob, json, os, sys
job, mode = sys.argv[1], sys.argv[2]
files = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(job, "probe", "probe-*.json")))]
parts = [f for f in files if "writer_pid" in f]
parts += [p for f in files if "writer_pid" not in f for p in f.get("parts", [])]
saver = [f for f in files if any("counters" in w for w in f.get("saves", []))]
if len(saver) != 1:
    print("%-7s %d probe files with counted save windows (1 expected): OFF" % (mode, len(saver)))
    sys.exit(1)
rank = saver[0]
windows = [w for w in rank["saves"] if "counters" in w]
ckpt = os.path.join(job, "ckpt")
folders = []
for name in sorted(os.listdir(ckpt)):
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(ckpt, name)) for f in fs)
    folders.append((name, size))
bad = len(windows) != len(folders)
for w, (name, folder) in zip(windows, folders):
    mine = [p for p in parts if p["pid"] == rank["pid"] and p["index"] == w["index"]]
    counted = w["counters"]["wchar"] + sum(p["wchar"] for p in mine)
    ok = folder <= counted < folder + 4096
    bad |= not ok
    print("%-7s %-40s %s folder %9d B counted %9d B parts %d (%s) %s" % (
        mode, w["function"], name, folder, counted, sum(p["parts"] for p in mine),
        ",".join(str(p.get("writer_pid") or "saving process") for p in mine), "ok" if ok else "OFF"))
sys.exit(1 if bad else 0)
PY
  tar -czf "$OUT/probe-$mode.tgz" -C "$job" probe
  rm -rf "$job"
done
exit $status
