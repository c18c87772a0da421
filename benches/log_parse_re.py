#!/usr/bin/env python3
"""The Python side of benches/log_throughput.sh: a plain `re` parser of Megatron stdout, what
a CI script would write (iteration fields, memory reports, checkpoint saves, failure markers).

    python3 benches/log_parse_re.py LOG    # prints: lines steps saves failures
"""
import re
import sys

ITERATION = re.compile(rb"iteration\s+(\d+)/\s*(\d+) \|(.*)")
FIELD = re.compile(rb"\s*([^|:]+?):\s*([-+0-9.eE]+|nan|inf)\s*\|")
MEMORY = re.compile(rb"\[Rank (\d+)\] \((.*?)\) memory \(MB\) \|(.*)")
SAVING = re.compile(rb"saving checkpoint at iteration\s+(\d+)")
SAVED = re.compile(rb"successfully saved checkpoint from iteration\s+(\d+)")
FAILURE = re.compile(rb"CUDA out of memory|OutOfMemoryError|illegal memory access|found NaN in"
                     rb"|Segmentation fault|TimeoutError|Some NCCL operations have failed")


def main(path):
    lines = steps = saves = failures = 0
    metrics = {}
    with open(path, "rb") as log:
        for line in log:
            lines += 1
            m = ITERATION.search(line)
            if m:
                steps += 1
                step = int(m.group(1))
                for name, value in FIELD.findall(m.group(3)):
                    metrics.setdefault(name.strip(), {})[step] = float(value)
            elif MEMORY.search(line):
                pass
            elif SAVING.search(line) or SAVED.search(line):
                saves += 1
            elif FAILURE.search(line):
                failures += 1
    print(lines, steps, saves, failures, len(metrics))


if __name__ == "__main__":
    main(sys.argv[1])
