#!/bin/bash
# The samplers' cost on the H200 (sessions 9-10, device calls E, G-J): what NVML's memory
# queries and the host sampler cost goldgate per tick, and whether a 50 ms spike is seen. One
# call runs one or more parts, in order; each part's output is appended to $OUT/<part>.txt:
#
#   OUT=... bash docs/archive/h200-sampler/sampler.sh PART ARGS... [:: PART ARGS...]
#
#   cost SECONDS INTERVALS REPEAT ROWS   the sampler bench's interleaved rounds
#                                        (`sampler cost`; ROWS e.g. none,nvml,host,host+nvml)
#   spike INTERVAL [QUERIES]             a job holding 8 GiB that spikes 20 GiB for 50 ms, 3 times
#   nvml CALLS TICKS [INTERVAL_MS]       benches/nvml_query.py: v1 against v2 from Python
#   unittests                            goldgate's observe::sample tests on the GPU
#
# e.g. call E: sampler.sh cost 20 10ms 3 none,nvml,host,host+nvml :: spike 10ms :: spike 1ms
# (docs/archive/README.md lists every call's parts). Carry: .device/sampler (the sampler
# bench), .device/unittests (for `unittests`).
set -u
: "${OUT:?set OUT}"
S=$PWD/.device/sampler
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc; uptime
part() {
  local what=$1
  shift
  case $what in
    cost) $S cost --seconds "$1" --interval "$2" --repeat "$3" --rows "$4" 2>&1 |
      tee -a "$OUT/sampler-cost.txt" ;;
    spike) $S job --interval "$1" ${2:+--query "$2"} -- python3 workloads/spike/spike.py \
      --hold-gib 8 --spike-gib 20 --spike-ms 50 --spikes 3 --gap-ms 1000 2>&1 |
      grep -v "^  |" | tee -a "$OUT/sampler-job.txt" ;;
    nvml) python3 benches/nvml_query.py --calls "$1" --ticks "$2" ${3:+--interval-ms "$3"} 2>&1 |
      tee -a "$OUT/nvml-query.txt" ;;
    unittests) .device/unittests --test-threads 1 observe::sample 2>&1 | tail -25 |
      tee "$OUT/unittests.txt" ;;
    *) echo "sampler.sh: unknown part $what" >&2; return 2 ;;
  esac
}
args=()
for a in "$@" ::; do
  if [ "$a" = "::" ]; then
    [ ${#args[@]} -gt 0 ] && part "${args[@]}"
    args=()
  else
    args+=("$a")
  fi
done
ls -la "$OUT"
