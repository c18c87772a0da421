#!/usr/bin/env python3
"""Per-job table of a power study (issue 17): one markdown row per results.json under the given
folders, warm-up jobs included and marked, with what the fingerprint says about the node.

    python3 docs/archive/h200-power/power_jobs.py FOLDER...

Columns: group (the folder under the study's work folder: unchanged, planted-10, ...), job,
settle mode, wall seconds, the first save's blocking time, the median of the later saves, the
number of overlapping-save warnings in the console log, Dirty at start and its peak, Writeback's
peak, the I/O pressure stall and the node's disk writes while the job ran, and the boot id (the
first 8 characters: jobs with the same one ran on the same machine).
"""

import glob
import json
import os
import statistics
import sys

MIB = 1024 * 1024


def saves(record):
    series = record["metrics"].get("checkpoint-blocking-time", {})
    pairs = sorted((int(k), v) for k, v in series.items() if isinstance(v, (int, float)))
    return [v for _, v in pairs]


def overlaps(path):
    log = os.path.join(os.path.dirname(path), "logs", "console.log")
    try:
        with open(log, errors="replace") as f:
            return sum("before previous has finished" in line for line in f)
    except OSError:
        return None


def cell(v, scale=1.0, digits=0):
    return "—" if v is None else f"{v / scale:.{digits}f}"


def row(path, root):
    with open(path) as f:
        r = json.load(f)
    io = (r.get("fingerprint") or {}).get("io") or {}
    s = saves(r)
    group = os.path.relpath(path, root).split(os.sep)[0]
    job = r["job_id"] + (" (warm-up)" if r.get("warmup") else "")
    return [
        group,
        job,
        io.get("settle", "—"),
        f"{r['wall_seconds']:.1f}",
        f"{s[0]:.3f}" if s else "—",
        f"{statistics.median(s[1:]):.3f}" if len(s) > 1 else "—",
        str(len(s)),
        cell(overlaps(path)),
        cell(io.get("dirty_start_bytes"), MIB, 1),
        cell(io.get("dirty_peak_bytes"), MIB, 1),
        cell(io.get("writeback_peak_bytes"), MIB, 1),
        cell(io.get("io_pressure_some_us"), 1000.0, 0),
        cell(io.get("disk_write_bytes"), MIB, 0),
        (io.get("boot_id") or "—")[:8],
        r["outcome"]["status"],
    ]


def main(folders):
    header = [
        "group", "job", "settle", "wall s", "first save s", "later saves s (median)",
        "saves", "overlaps", "Dirty at start MiB", "Dirty peak MiB", "Writeback peak MiB",
        "I/O stall ms", "disk writes MiB", "boot", "outcome",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for folder in folders:
        paths = glob.glob(os.path.join(folder, "**", "results.json"), recursive=True)
        for path in sorted(paths, key=lambda p: (json.load(open(p))["started_at"], p)):
            print("| " + " | ".join(row(path, os.path.dirname(folder.rstrip("/")))) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
