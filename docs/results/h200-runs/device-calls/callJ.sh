#!/bin/bash
# Session 10, device call J: the issue's own measurement on the H200: goldgate's CPU while a
# 60 s job runs with both samplers at 10 ms, 5 runs (sampler bench built at 4ae4e72).
set -u
nproc; uptime
.device/sampler cost --seconds 60 --interval 10ms --repeat 5 --rows host+nvml 2>&1 | tee $OUT/sampler-cost-J.txt
