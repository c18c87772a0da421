#!/usr/bin/env bash
# Peak RSS of goldgate on the large inputs of issue 22 item 7: a results.json of many steps
# (compare and bless), a golden file in list form (check) and a long log of iteration lines
# (extract), and TensorBoard folders (extract --tensorboard). Each figure is /usr/bin/time's
# "maximum resident set size" of one run.
#
#   GOLDGATE=target/release/goldgate benches/memory.sh            # the sizes of the issue
#   STEPS=1000000 GOLDEN_VALUES=800000 LOG_LINES=330000 benches/memory.sh   # a quick look
#
# Prints one line per measurement: what, input bytes, exit code, peak RSS in MiB, and the RSS
# as a multiple of the input. Needs python3 and awk; writes only under a temp folder.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
GOLDGATE=$(realpath "${GOLDGATE:-target/release/goldgate}")
STEPS=${STEPS:-10000000}
GOLDEN_VALUES=${GOLDEN_VALUES:-8000000}
LOG_LINES=${LOG_LINES:-3300000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# `measure WHAT INPUT CMD...`: one line of figures for CMD's run.
measure() {
  local what=$1 input=$2
  shift 2
  local bytes code=0
  bytes=$(du -bs "$input" | cut -f1)
  /usr/bin/time -f '%M' -o rss "$@" >/dev/null 2>err || code=$?
  local kib
  kib=$(tail -1 rss)
  awk -v w="$what" -v b="$bytes" -v c="$code" -v k="$kib" 'BEGIN {
    printf "%-34s input %8.1f MB  exit %d  peak RSS %7.1f MiB  (%.1fx the input)\n",
      w, b / 1e6, c, k / 1024, k * 1024 / b }'
  if [ "$code" -ne 0 ]; then sed 's/^/    /' err | head -3; fi
}

# A case whose job prints three iteration lines; its run gives a real results.json.
mkdir -p cases/m/big
cat >cases/m/big/job.sh <<'EOF'
for i in 1 2 3; do
  echo " [2026-11-29 20:16:14.1] iteration $i/3 | consumed samples: 32 | elapsed time per iteration (ms): 10.0 | lm loss: 9.5 | loss scale: 1.0 |"
done
EOF
printf 'TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {}\nMETRICS: ["lm loss"]\nGOLDGATE:\n  entry: ["sh", "%s"]\n' \
  "$work/cases/m/big/job.sh" >cases/m/big/model_config.yaml
"$GOLDGATE" run --root cases --out out --no-compare >/dev/null 2>&1
record=$(find out -name results.json)

# The record's `lm loss` series replaced by STEPS steps, written in pieces.
python3 - "$record" "$STEPS" <<'EOF'
import json, sys
path, steps = sys.argv[1], int(sys.argv[2])
record = json.load(open(path))
record["metrics"]["lm loss"] = "@SERIES@"
head, tail = json.dumps(record, indent=2).split('"@SERIES@"')
with open(path, "w") as f:
    f.write(head + "{")
    for start in range(1, steps + 1, 100000):
        end = min(start + 100000, steps + 1)
        sep = "" if start == 1 else ", "
        f.write(sep + ", ".join(f'"{s}": 9.5' for s in range(start, end)))
    f.write("}" + tail)
EOF
mkdir -p golden/m/big
printf '{"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": {"1": 9.5, "2": 9.5, "3": 9.5}}}' \
  >golden/m/big/golden_values_dev_dev_cpu.json
measure "compare (results.json, $STEPS steps)" "$record" \
  "$GOLDGATE" compare --results out --root cases --golden-root golden
measure "bless --dry-run (same record)" "$record" \
  "$GOLDGATE" bless --from out --golden-root blessed --dry-run

# A golden file in Megatron's legacy list form, GOLDEN_VALUES values, beside its case.
python3 - cases/m/big/golden_values_dev_dgx_h100.json "$GOLDEN_VALUES" <<'EOF'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write('{"lm loss": {"start_step": 1, "end_step": %d, "step_interval": 1, "values": [' % n)
    for start in range(0, n, 100000):
        sep = "" if start == 0 else ", "
        f.write(sep + ", ".join("9.50001" for _ in range(start, min(start + 100000, n))))
    f.write("]}}")
EOF
measure "check (golden list, $GOLDEN_VALUES values)" cases/m/big/golden_values_dev_dgx_h100.json \
  "$GOLDGATE" check --root cases
rm cases/m/big/golden_values_dev_dgx_h100.json

# LOG_LINES iteration lines as Megatron prints them.
awk -v n="$LOG_LINES" 'BEGIN {
  for (i = 1; i <= n; i++)
    printf " [2026-11-29 20:16:14.1] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): 10.0 | learning rate: 3.000000E-04 | global batch size:    32 | lm loss: %E | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |\n", i, n, i * 32, 10 - i / (n + 1)
}' >big.log
measure "extract (log, $LOG_LINES lines)" big.log "$GOLDGATE" extract big.log --format json

# TensorBoard folders (`extract --tensorboard`): one file of TB_RECORDS tiny scalar records, and
# TB_FILES copies of a 2 MB file of four tags (benches/tb_events.py writes them).
TB_RECORDS=${TB_RECORDS:-5200000}
TB_FILES=${TB_FILES:-400}
tb=$repo/benches/tb_events.py
mkdir -p tb-one tb-many
python3 "$tb" tb-one/events.out.tfevents.1.one "$TB_RECORDS"
python3 "$tb" tb-many/base 40000 4
for i in $(seq -w 1 "$TB_FILES"); do cp tb-many/base "tb-many/events.out.tfevents.$i.host"; done
rm tb-many/base
measure "extract --tensorboard (1 file)" tb-one "$GOLDGATE" extract --tensorboard tb-one
measure "extract --tensorboard ($TB_FILES files)" tb-many "$GOLDGATE" extract --tensorboard tb-many
