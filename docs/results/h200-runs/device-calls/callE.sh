#!/bin/bash
# Session 9, device call E: the samplers' CPU cost on the H200 (NVML alone, host + NVML, none),
# 3 interleaved rounds of 20 s at 10 ms, and the spike check again with the one-thread sampler.
set -u
S=$PWD/.device/sampler
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc; uptime
$S cost --seconds 20 --interval 10ms --repeat 3 --rows none,nvml,host,host+nvml 2>&1 | tee $OUT/sampler-cost.txt
for iv in 10ms 1ms; do
  $S job --interval $iv -- python3 workloads/spike/spike.py --hold-gib 8 --spike-gib 20 --spike-ms 50 --spikes 3 --gap-ms 1000 2>&1 | tee -a $OUT/sampler-job.txt
done
ls -la $OUT
