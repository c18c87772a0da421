#!/bin/bash
# Session 10, device call I: the samplers' cost on the H200 after the launch supervisor stopped
# ticking (sampler bench built at 4ae4e72): 5 interleaved rounds of 30 s at 10 ms.
set -u
S=$PWD/.device/sampler
nproc; uptime
$S cost --seconds 30 --interval 10ms --repeat 5 --rows none,host,host+nvml 2>&1 | tee $OUT/sampler-cost-I.txt
