#!/bin/bash
# Session 10, device call H: what one NVML memory query costs against the time since the
# previous one (Python, v1 and v2), and the NVML-alone sampler's cost against its interval.
set -u
S=$PWD/.device/sampler
for ms in 1 100; do
  python3 benches/nvml_query.py --calls 2000 --ticks 300 --interval-ms $ms 2>&1 | tee -a $OUT/nvml-query-interval.txt
done
$S cost --seconds 15 --interval 10ms,20ms,50ms,100ms --repeat 3 --rows nvml 2>&1 | tee $OUT/sampler-cost-interval.txt
