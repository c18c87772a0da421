#!/bin/bash
# Session 11, device call K (a probe before the real calls): does Megatron-LM main (the
# corpus commit) run the corpus ckpt-resume case's first run on one H200 with mock data
# (ft_launcher, local transformer)? What does a reference-case job with 8 sync saves cost?
# Are sync/drop_caches permitted? What does one smaps_rollup read of a Megatron rank cost?
set -u
exec > >(tee $OUT/callK.log) 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export PATH=/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g | head -2; df -h /tmp | tail -1
head -2 /etc/os-release; uname -r; ldd --version | head -1
tar xzf .device/megatron-lm.tgz -C /tmp && touch /tmp/mlm/megatron/core/datasets/helpers_cpp*.so
which ft_launcher torchrun g++ make gcc || true
sync; echo 3 > /proc/sys/vm/drop_caches && echo DROP_CACHES_OK
grep -E "^(Dirty|Writeback|MemAvailable):" /proc/meminfo; findmnt -T /tmp -o TARGET,FSTYPE,SOURCE | tail -1
cat /proc/sys/vm/dirty_ratio /proc/sys/vm/dirty_background_ratio
# smaps_rollup cost of the biggest python process, sampled while a job runs
probe_smaps() {
  sleep "$1"; pid=$(for p in $(pgrep -f "$2"); do echo "$(awk '{print $2}' /proc/$p/statm 2>/dev/null || echo 0) $p"; done | sort -n | tail -1 | cut -d' ' -f2); [ -n "$pid" ] || { echo "no pid for $2"; return; }
  python3 - "$pid" <<'PY'
import sys, time, os
pid = sys.argv[1]
def rd(p):
    with open(p, 'rb') as f: return f.read()
for name in ("statm", "smaps_rollup"):
    t = time.process_time(); w = time.perf_counter(); n = 200
    for _ in range(n): rd(f"/proc/{pid}/{name}")
    print(f"SMAPS {name}: {(time.process_time()-t)/n*1e6:.1f} us cpu, {(time.perf_counter()-w)/n*1e6:.1f} us wall per read (pid {pid})")
print(rd(f"/proc/{pid}/smaps_rollup").decode()[:400])
PY
}
# 1. the corpus ckpt-resume case, run 1 only, mock data, 1 rank
CASE=/tmp/case; mkdir -p $CASE/ckpt $CASE/tb $CASE/cache
python3 - > $CASE/argv.txt <<'PY'
import yaml
cfg = yaml.safe_load(open('.device/probe/resume_model_config.yaml'))
drop = {'--data-path', '--vocab-file', '--merge-file', '--split'}
sub = {'${CHECKPOINT_SAVE_PATH}': '/tmp/case/ckpt', '${CHECKPOINT_LOAD_PATH}': '/tmp/case/ckpt',
       '${TENSORBOARD_PATH}': '/tmp/case/tb', '${DATA_CACHE_PATH}': '/tmp/case/cache'}
out = []
for k, v in cfg['MODEL_ARGS'].items():
    if k in drop: continue
    if v is True: out.append(k); continue
    v = str(v); out += [k, sub.get(v, v)]
out += ['--mock-data', '--tokenizer-type', 'NullTokenizer', '--vocab-size', '8192']
print('\n'.join(out))
PY
mapfile -t ARGS < $CASE/argv.txt
t=$(date +%s.%N)
( cd /tmp/mlm && CUDA_DEVICE_MAX_CONNECTIONS=1 NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 NCCL_ALGO=Ring CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONPATH=/tmp/mlm:/tmp/site \
  timeout 200 ft_launcher --nproc_per_node 1 --nnodes 1 --master_addr 127.0.0.1 --master_port 29511 --node_rank 0 --max-restarts=0 pretrain_gpt.py "${ARGS[@]}" > $OUT/corpus-resume-run1.log 2>&1; echo "CORPUS exit $?" ) &
probe_smaps 30 pretrain_gpt.py
wait
echo "CORPUS wall $(python3 -c "import time;print(round(time.time()-$t,1))") s"; grep -cE "iteration +[0-9]+/" $OUT/corpus-resume-run1.log; tail -5 $OUT/corpus-resume-run1.log
# 2. the reference case with 8 sync saves (every 3 iterations, 24 iterations)
mkdir -p /tmp/ref/ckpt /tmp/ref/tb /tmp/ref/cache
mapfile -t RARGS < <(python3 - <<'PY'
import yaml
cfg = yaml.safe_load(open('test_cases/gpt/h200-ckpt-allocator/model_config.yaml'))
sub = {'${CHECKPOINT_SAVE_PATH}': '/tmp/ref/ckpt', '${TENSORBOARD_PATH}': '/tmp/ref/tb', '${DATA_CACHE_PATH}': '/tmp/ref/cache'}
over = {'--train-iters': '24', '--save-interval': '3'}
out = []
for k, v in cfg['MODEL_ARGS'].items():
    if v is True: out.append(k); continue
    v = over.get(k, str(v)); out += [k, sub.get(v, v)]
print('\n'.join(out))
PY
)
sync; echo 3 > /proc/sys/vm/drop_caches
t=$(date +%s.%N)
( CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_ALGO=Ring CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1 timeout 200 torchrun --nproc-per-node 1 --nnodes 1 --master-addr 127.0.0.1 --master-port 29512 --tee 3 workloads/megatron/train_gpt.py "${RARGS[@]}" > $OUT/ref-8saves.log 2>&1; echo "REF exit $?" ) &
probe_smaps 40 train_gpt.py
wait
echo "REF wall $(python3 -c "import time;print(round(time.time()-$t,1))") s"
grep -E "save-checkpoint \.|Dirty" $OUT/ref-8saves.log | head -20
grep -E "^(Dirty|Writeback|MemAvailable):" /proc/meminfo
du -sh /tmp/ref/ckpt/iter_0000024 2>/dev/null
echo "TOTAL $(( $(date +%s) - T0 )) s"
