#!/bin/bash
# Where a Megatron job's start-up goes on the device, outside goldgate (issue 31, item 4): Python
# itself, `import torch`, CUDA's first context, torchrun's own start, Megatron's imports (with
# `-X importtime`, the 30 slowest by cumulative time into $OUT/importtime.txt), and the
# write-results Manager that Megatron starts at the first save with the `spawn` method, from an
# entry file that imports torch and Megatron at its top (as goldgate's workload did) and from one
# that imports them inside main() (as it does now). Needs the wheels in /tmp/site (injob.sh's
# setup) and $OUT.
set -u
: "${OUT:?set OUT}"
# t LABEL CMD...: wall seconds of CMD (its output dropped), one line.
t() {
  local label=$1
  shift
  local s e
  s=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  local rc=$?
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" -v rc="$rc" 'BEGIN { printf "%7.2f s  rc=%d  ", e - s, rc }'
  echo "$label"
}
python3 -c 'import os, sys; print("python", sys.version.split()[0], "dont_write_bytecode", sys.flags.dont_write_bytecode, "PYTHONDONTWRITEBYTECODE", os.environ.get("PYTHONDONTWRITEBYTECODE"))'
echo "megatron .pyc files before: $(find /tmp/site/megatron -name '*.pyc' 2>/dev/null | wc -l)"
t "python3 -c pass" python3 -c pass
t "import torch (1st)" python3 -c 'import torch'
t "import torch (2nd)" python3 -c 'import torch'
t "import torch; torch.cuda.init()" python3 -c 'import torch; torch.cuda.init()'
t "import torch.distributed.run (torchrun's agent)" python3 -c 'import torch.distributed.run'
t "import megatron.training.training (1st)" python3 -c 'import megatron.training.training'
echo "megatron .pyc files after: $(find /tmp/site/megatron -name '*.pyc' 2>/dev/null | wc -l)"
t "import megatron.training.training (2nd)" python3 -c 'import megatron.training.training'
python3 -X importtime -c 'import megatron.training.training' 2> /tmp/importtime.raw
python3 - /tmp/importtime.raw > "$OUT/importtime.txt" <<'PY'
import sys
rows = []
for line in open(sys.argv[1]):
    if not line.startswith("import time:"):
        continue
    fields = line[len("import time:"):].split("|")
    if len(fields) != 3 or "cumulative" in fields[1]:
        continue
    rows.append((int(fields[1]), int(fields[0]), fields[2].strip()))
total = max(r[0] for r in rows)
print(f"import megatron.training.training: {total / 1e6:.2f} s cumulative ({len(rows)} modules)")
for cum, own, name in sorted(rows, reverse=True)[:30]:
    print(f"{cum / 1e6:7.3f} s cumulative {own / 1e6:7.3f} s self  {name}")
PY
t "torchrun --nproc-per-node 1 --no-python true" torchrun --nproc-per-node 1 --no-python true
# The first save's Manager: spawn re-runs the entry file as __mp_main__ before it serves.
for kind in eager lazy; do
  {
    [ "$kind" = eager ] && printf 'import torch\nimport megatron.training.training\n'
    cat <<'PY'
import time


def main():
    import multiprocessing as mp

    t = time.time()
    manager = mp.get_context("spawn").Manager()
    manager.Queue()
    print(f"{time.time() - t:7.2f} s  spawn Manager + Queue from an entry that imports", KIND)


if __name__ == "__main__":
    main()
PY
  } > "/tmp/entry_$kind.py"
  sed -i "s/KIND)/\"$( [ "$kind" = eager ] && echo 'torch and Megatron at its top' || echo 'them inside main()' )\")/" "/tmp/entry_$kind.py"
  (cd /tmp && python3 "/tmp/entry_$kind.py")
done
