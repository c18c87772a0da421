#!/usr/bin/env bash
# Sampler cost and launch overhead (README, "How goldgate measures").
#
#   benches/sampler.sh                 build the bench in release and run it here
#   benches/sampler.sh --binary-only   only build it and copy it to target/bench-bin/sampler
#                                      (carry that one file to a GPU machine and run the same
#                                      commands there: the "nvml" and "host + nvml" rows, which
#                                      say "unavailable" without a driver, then sample its GPUs)
#
# SECONDS_PER_RUN (default 60), INTERVALS (default 10ms,20ms) and REPEAT (runs per row,
# interleaved; default 1, README's figures use 5) override the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."

exe=$(cargo bench -p goldgate --bench sampler --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*sampler-[^"]*\)".*/\1/p' | tail -n 1)
mkdir -p target/bench-bin
cp "$exe" target/bench-bin/sampler
[[ "${1:-}" == "--binary-only" ]] && exit 0

target/bench-bin/sampler overhead --runs 21
target/bench-bin/sampler cost --seconds "${SECONDS_PER_RUN:-60}" --interval "${INTERVALS:-10ms,20ms}" \
    --repeat "${REPEAT:-1}"
# On a GPU machine with PyTorch, also check the NVML peak against a workload of known shape:
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    target/bench-bin/sampler job --interval 10ms,1ms -- python3 workloads/spike/spike.py \
        --hold-gib 8 --spike-gib 20 --spike-ms 50 --spikes 3 --gap-ms 1000
fi
