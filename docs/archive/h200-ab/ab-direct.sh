#!/bin/bash
# `goldgate ab` parts of gpt/h200-ckpt-power run directly (no warm-up, no unchanged job first),
# for a machine already warm from an earlier call; what device calls P-S ran.
#
#   OUT=... bash docs/archive/h200-ab/ab-direct.sh TARBALL NAME BUDGET_S [ARGS...] [:: NAME BUDGET_S [ARGS...]]...
#
# Each part is one `goldgate ab` into /tmp/ab/NAME, its console in $OUT/ab-NAME.log, its exit in
# $OUT/call.log; at the end all of /tmp/ab (every part so far on this machine) goes to
# $OUT/TARBALL without checkpoints. GG: the goldgate binary (default .device/goldgate).
set -u
: "${OUT:?set OUT}"
TARBALL=${1:?usage: ab-direct.sh TARBALL NAME BUDGET_S [ARGS...] [:: NAME BUDGET_S [ARGS...]]...}
shift
G=$(realpath "${GG:-.device/goldgate}")
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl > "$OUT/call.log" 2>&1 || { echo "pip install failed"; exit 1; }
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
# part NAME BUDGET_S ARGS...: one goldgate ab.
part() {
  local name=$1 budget=$2
  shift 2
  mkdir -p "/tmp/ab/$name"
  "$G" ab "${GG_CASE:-gpt/h200-ckpt-power}" --platform "${GG_PLATFORM:-h200}" \
    --out "/tmp/ab/$name/runs" --timeout 150s --budget "${budget}s" --max-pairs 12 --warmup 0 \
    --markdown "/tmp/ab/$name/ab.md" --junit "/tmp/ab/$name/ab.junit.xml" \
    --json "/tmp/ab/$name/ab-report.json" "$@" > "$OUT/ab-$name.log" 2>&1
  echo "$name: exit $?" | tee -a "$OUT/call.log"
}
args=()
for word in "$@" ::; do
  if [ "$word" = :: ]; then
    [ ${#args[@]} -ge 2 ] && part "${args[@]}"
    args=()
  else
    args+=("$word")
  fi
done
tar -czf "$OUT/$TARBALL" --exclude='checkpoints' --exclude='checkpoints-tmp' --exclude='data-cache' \
  --exclude='tensorboard' --exclude='*.distcp' --exclude='core*' -C /tmp ab
ls -la "$OUT"
