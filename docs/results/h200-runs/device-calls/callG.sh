#!/bin/bash
# Session 10, device call G: which NVML memory call the sampler should make.
# 1. benches/nvml_query.py: v1 against v2 from Python, hot and one per 10 ms tick.
# 2. goldgate's lib tests on a GPU (the NVML ones run only there), release build.
# 3. sampler cost, 5 interleaved rounds of 15 s at 10 ms: none, nvml (v1), nvml-v2, host+nvml.
# 4. spike check with both queries at 10 ms and 1 ms.
# 5. the reference Megatron case once, default cell, compared with its golden (exit code).
set -u
S=$PWD/.device/sampler
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc; uptime
python3 benches/nvml_query.py --calls 20000 --ticks 1000 2>&1 | tee $OUT/nvml-query.txt
.device/unittests --test-threads 1 observe::sample 2>&1 | tail -25 | tee $OUT/unittests.txt
$S cost --seconds 15 --interval 10ms --repeat 5 --rows none,nvml,nvml-v2,host+nvml 2>&1 | tee $OUT/sampler-cost.txt
for iv in 10ms 1ms; do
  $S job --interval $iv --query v1,v2 -- python3 workloads/spike/spike.py --hold-gib 8 --spike-gib 20 --spike-ms 50 --spikes 3 --gap-ms 1000 2>&1 | grep -v "^  |" | tee -a $OUT/sampler-job.txt
done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
R=/tmp/r; mkdir -p $R
timeout 200 .device/goldgate run gpt/h200-ckpt-allocator --config goldgate.yaml --platform h200 --repeat 1 --out $R/v1-default --timeout 180s --sample-interval 10ms > $OUT/megatron-run.txt 2>&1
echo "goldgate run exit $?" | tee -a $OUT/megatron-run.txt
tail -40 $OUT/megatron-run.txt
tar czf $OUT/results-callG.tgz --exclude=data-cache --exclude=tensorboard --exclude=checkpoints --exclude=checkpoint -C /tmp r
ls -la $OUT
