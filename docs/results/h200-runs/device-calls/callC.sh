#!/bin/bash
# Session 9, device call C: the synchronous default and gc80 cells again with the fixed probe
# (the first batch ran the probe version that mis-attributed save windows), 3 repeats each, probe on, 10 ms sampling.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
G=$PWD/.device/goldgate; C=$PWD/.device/goldgate.yaml; R=/tmp/r; rm -rf $R; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
run() { out=$1; t=$2; n=$3; shift 3; timeout $t $G run gpt/h200-ckpt-allocator --config $C --platform h200 --no-compare --repeat $n --out $R/$out --timeout 200s --sample-interval 10ms "$@" 2>&1 | grep -E "^(ok|FAIL|results|warning|error)"; }
run default 250 3 --variant allocator=default --variant checkpoint=sync
run gc80 250 3 --variant allocator=gc80 --variant checkpoint=sync
tar czf $OUT/results-callC.tgz --exclude=data-cache --exclude=tensorboard --exclude=checkpoints --exclude=checkpoint -C /tmp r
ls -la $OUT
