#!/usr/bin/env python3
"""Launch overhead of the whole `goldgate run` (README, "How goldgate measures"): a case whose
entry is `true`, run through `goldgate run --no-compare` (case loading, planning, samplers and
their baselines, process group, log, results.json written atomically, run.json, the summary
table), against `true` run directly; the two interleaved, median of `--runs`.

    cargo build --release -p goldgate
    python3 benches/run_overhead.py [--runs 21] [--goldgate target/release/goldgate]

Wall time from Python's `subprocess.run` to the child's exit, output discarded; the spawn
cost of `subprocess.run` is in both columns, so the difference is goldgate's.
"""

import argparse
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASE = """\
ENV_VARS: {}
TEST_TYPE: regular
MODE: pretraining
LAUNCHER: direct
MODEL_ARGS: {}
GOLDGATE:
  entry: ["true"]
"""


def timed(argv: list[str], cwd: pathlib.Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        sys.exit(f"{argv[0]} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--goldgate", default="target/release/goldgate")
    args = ap.parse_args()
    goldgate = pathlib.Path(args.goldgate).resolve()
    true = shutil.which("true")
    if not goldgate.is_file() or true is None:
        sys.exit(f"need {goldgate} (cargo build --release -p goldgate) and `true` in PATH")
    with tempfile.TemporaryDirectory(prefix="goldgate-overhead-") as tmp:
        root = pathlib.Path(tmp)
        case = root / "test_cases" / "bench" / "instant"
        case.mkdir(parents=True)
        (case / "model_config.yaml").write_text(CASE)
        run = [str(goldgate), "run", "bench/instant", "--root", "test_cases",
               "--out", "results", "--no-compare"]
        timed(run, root)  # warm the page cache: the first run of a fresh build reads it from disk
        direct, ours = [], []
        for _ in range(args.runs):
            direct.append(timed([true], root))
            ours.append(timed(run, root))
    d, g = statistics.median(direct), statistics.median(ours)
    print(f"median of {args.runs}: `true` directly {d:.2f} ms, through `goldgate run` {g:.2f} ms, "
          f"extra {g - d:.2f} ms (goldgate run min {min(ours):.2f}, max {max(ours):.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
