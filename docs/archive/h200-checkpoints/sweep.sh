#!/bin/bash
# The H200 checkpoint sweep (sessions 9-10, device calls A-D): cells of the reference case
# gpt/h200-ckpt-allocator under chosen variants, each a number of repeats with the probe on and
# 10 ms sampling, packed as one tarball. One call runs one or more cells:
#
#   OUT=... bash docs/archive/h200-checkpoints/sweep.sh TARBALL NAME TIMEOUT_S REPEATS VARIANT... [:: NAME ...]
#
# e.g. call B: sweep.sh results-callB.tgz async_shm 250 3 --variant allocator=default
#   --variant checkpoint=async_shm :: gc80_async 250 3 --variant allocator=gc80 --variant
#   checkpoint=async (docs/archive/README.md lists every call's cells).
# Carry: .whl (megatron's Python wheels), .device/goldgate, .device/goldgate.yaml.
set -u
: "${OUT:?set OUT}"
tarball=${1:?tarball name}
shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
G=$PWD/.device/goldgate; C=$PWD/.device/goldgate.yaml; R=/tmp/r; rm -rf $R; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
cell() {
  local out=$1 t=$2 n=$3
  shift 3
  timeout "$t" "$G" run gpt/h200-ckpt-allocator --config "$C" --platform h200 --no-compare \
    --repeat "$n" --out "$R/$out" --timeout 200s --sample-interval 10ms "$@" 2>&1 |
    grep -E "^(ok|FAIL|results|warning|error)"
}
args=()
for a in "$@" ::; do
  if [ "$a" = "::" ]; then
    [ ${#args[@]} -gt 0 ] && cell "${args[@]}"
    args=()
  else
    args+=("$a")
  fi
done
tar czf "$OUT/$tarball" --exclude=data-cache --exclude=tensorboard --exclude=checkpoints \
  --exclude=checkpoint -C /tmp r
ls -la "$OUT"
