#!/usr/bin/env python3
"""CPU cost of one NVML memory query: v1 (`nvmlDeviceGetMemoryInfo`) against v2
(`nvmlDeviceGetMemoryInfo_v2`, what nvml-wrapper's `memory_info()` and so goldgate call),
back to back ("hot") and one call per tick after a sleep ("cold", the way goldgate's sampler
calls it). It separates the two suspects for the sampler's NVML cost on the H200 (README, "How
goldgate measures"): the v2 call, or calling once per wakeup with cold caches.

    python3 benches/nvml_query.py [--calls 20000] [--ticks 1000] [--interval-ms 10] [--device 0]

CPU time is the calling thread's (`time.thread_time_ns`); "none" is the same measurement
around no call, the overhead to subtract. Needs nvidia-ml-py (`import pynvml`).
"""

import argparse
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000, help="hot calls per version")
    ap.add_argument("--ticks", type=int, default=1000, help="cold calls per version")
    ap.add_argument("--interval-ms", type=float, default=10.0, help="sleep before a cold call")
    ap.add_argument("--device", type=int, default=0, help="NVML index")
    args = ap.parse_args()
    try:
        import pynvml
    except ImportError:
        print("nvidia-ml-py (pynvml) is not installed")
        return 2
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        print(f"NVML unavailable ({e})")
        return 2
    h = pynvml.nvmlDeviceGetHandleByIndex(args.device)
    print(f"device {args.device}: {pynvml.nvmlDeviceGetName(h)}, "
          f"driver {pynvml.nvmlSystemGetDriverVersion()}")
    queries = {
        "none": lambda: None,
        "v1": lambda: pynvml.nvmlDeviceGetMemoryInfo(h),
        "v2": lambda: pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2),
    }
    for version in ("v1", "v2"):
        try:
            m = queries[version]()
        except pynvml.NVMLError as e:
            print(f"{version}: {e}")
            queries.pop(version)
            continue
        reserved = getattr(m, "reserved", None)
        print(f"{version}: used {m.used} B, free {m.free} B, total {m.total} B"
              + (f", reserved {reserved} B" if reserved is not None else ""))

    print(f"\nhot: {args.calls} calls back to back, CPU µs per call")
    for version, query in queries.items():
        t0 = time.thread_time_ns()
        for _ in range(args.calls):
            query()
        print(f"  {version:<4} {(time.thread_time_ns() - t0) / args.calls / 1000:8.2f}")

    names = list(queries)
    cold = {v: [] for v in names}
    for i in range(args.ticks * len(names)):
        time.sleep(args.interval_ms / 1000)
        version = names[i % len(names)]
        t0 = time.thread_time_ns()
        queries[version]()
        cold[version].append(time.thread_time_ns() - t0)
    print(f"\ncold: one call per {args.interval_ms:g} ms sleep, {args.ticks} per version "
          "(interleaved), CPU µs per call")
    print(f"  {'':<4} {'median':>8} {'p90':>8} {'mean':>8}")
    for version, xs in cold.items():
        xs.sort()
        print(f"  {version:<4} {statistics.median(xs) / 1000:8.2f} "
              f"{xs[int(len(xs) * 0.9)] / 1000:8.2f} {statistics.fmean(xs) / 1000:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
