#!/bin/bash
# Builds the corpus folder parity.sh reads: the two Megatron corpus cases it runs, with their
# golden files, and Megatron's recipes (goldgate finds them at <root>/../../test_utils/recipes,
# as in a Megatron-LM checkout). About 0.5 MB. Run from the repository root:
#
#   docs/archive/h200-proofs/parity-carry.sh [CORPUS]   # default ../shared/megatron_corpus
#
# and carry `.device/corpus` (it is ignored by git, so name it in the device call's carry list).
set -euo pipefail
SRC=${1:-${GOLDGATE_MEGATRON_CORPUS:-../shared/megatron_corpus}}
DST=.device/corpus
CASES=(
  gpt/gpt3_mcore_tp1_pp1_dist_optimizer_overlap_grad_reduce_param_gather
  gpt/gpt3_mcore_tp1_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_param_gather
)
[ -d "$SRC/tests/functional_tests/test_cases" ] || { echo "no Megatron corpus at $SRC" >&2; exit 2; }
rm -rf "$DST"
mkdir -p "$DST/tests/functional_tests/test_cases/gpt" "$DST/tests/test_utils"
for case in "${CASES[@]}"; do
  cp -a "$SRC/tests/functional_tests/test_cases/$case" "$DST/tests/functional_tests/test_cases/gpt/"
done
cp -a "$SRC/tests/test_utils/recipes" "$DST/tests/test_utils/"
du -sh "$DST"
