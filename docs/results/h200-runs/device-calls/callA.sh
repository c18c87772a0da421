#!/bin/bash
# Session 9, device call A: allocator=expandable (sync saves) and checkpoint=async (default
# allocator), 3 repeats each, probe on, 10 ms sampling.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
G=$PWD/.device/goldgate; C=$PWD/.device/goldgate.yaml; R=/tmp/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
run() { out=$1; t=$2; n=$3; shift 3; timeout $t $G run gpt/h200-ckpt-allocator --config $C --platform h200 --no-compare --repeat $n --out $R/$out --timeout 200s --sample-interval 10ms "$@" 2>&1 | grep -E "^(ok|FAIL|results|warning|error)"; }
run expandable 250 3 --variant allocator=expandable --variant checkpoint=sync
run async 250 3 --variant allocator=default --variant checkpoint=async
tar czf $OUT/results-callA.tgz --exclude=data-cache --exclude=tensorboard --exclude=checkpoints --exclude=checkpoint -C /tmp r
ls -la $OUT
