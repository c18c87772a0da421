#!/usr/bin/env bash
# Step "run", in the head's checkout: lists and plans the selection, then by mode
#   gate   goldgate run (judged against the goldens: comparison JSON, JUnit, markdown)
#   ab     goldgate ab per case of ab-cases: arm A the base's tree (step "base"), arm B the head's;
#          a within-job A/B (ab-args --within-job or a switch) both arms in the head's tree
#   both   the two, one after the other; the gate's clocks are then diagnostic (`--clocks ab`):
#          the A/B gates timing, as the PR comment shows it
# Input clocks (ab or golden) sets the gate's `--clocks` in any mode: `ab` in a gate job whose
# check runs `goldgate ab` in another job (functional-tests.yml's gpu job beside gpu-ab).
#   bless  goldgate run --no-compare, goldgate bless, and the golden files that changed
# and stages what is uploaded in OUT (the records, not checkpoints): comparison.json,
# junit.xml, report.md, ab-*.json/.junit.xml/.md, each job's results.json, run.json, ab.json and
# logs, the pull request's number and the event. goldgate's exit code (the worst of the
# commands) becomes the step output exit-code; the step itself passes, so the upload runs, and
# the last step (verdict.sh) ends the job with the code.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/common.sh"

mode=${INPUT_MODE:?}
platform=${INPUT_PLATFORM:?}
out=${OUT:?}
work=${RUNNER_TEMP:?}/goldgate/work/${out##*/}
rm -rf "$work" && mkdir -p "$work"
root=${INPUT_ROOT:-test_cases}
golden_root=${INPUT_GOLDEN_ROOT:-golden}

words cases "${INPUT_CASES:-}"
# Filled by `lines` through a nameref.
extra=() ab_extra=()
lines extra args "${INPUT_ARGS:-}"
lines ab_extra ab-args "${INPUT_AB_ARGS:-}"
# The filter is one argument whatever it holds (spaces in a `(?x)` regex).
filter=()
[ -n "${INPUT_FILTER:-}" ] && filter=(--filter "$INPUT_FILTER")
# What judges the gate's clocks: the input, else `ab` in mode both (its A/B gates timing).
clocks=${INPUT_CLOCKS:-}
case "$clocks" in '' | ab | golden) ;; *) fail "clocks must be ab or golden, not '$clocks'" ;; esac
if [ -z "$clocks" ] && [ "$mode" = both ]; then clocks=ab; fi
gate_clocks=()
if [ -n "$clocks" ]; then
  gate_clocks=(--clocks "$clocks")
  echo "the gate's clocks: $clocks (--clocks $clocks)"
fi
# Which cases: list, plan and run take the root and the scope; list, run and ab also the goldens.
where=(--root "$root" --platform "$platform")
[ -n "${INPUT_SCOPE:-}" ] && where+=(--scope "$INPUT_SCOPE")
select=("${where[@]}" --golden-root "$golden_root")
shard=()
[ -n "${INPUT_PARTITION:-}" ] && shard=(--partition "$INPUT_PARTITION")
# A Megatron-LM fork (the case root is Megatron's): the checkout is the tree the training
# scripts come from (`${MEGATRON_LM_DIR}/pretrain_gpt.py`), unless the runner sets its own.
megatron=false
case "$root" in tests/functional_tests/test_cases | tests/functional_tests/test_cases/) megatron=true ;; esac
if [ "$megatron" = true ] && [ -z "${MEGATRON_LM_DIR:-}" ]; then
  export MEGATRON_LM_DIR=$PWD
  echo "MEGATRON_LM_DIR=$PWD (the checkout under test)"
fi

code=0
# worst CODE: the job's code is the worst of its commands' (3 and 2 over 1 over 0).
worst() {
  local c=$1
  case "$c" in 0 | 1 | 2 | 3) ;; *) c=3 ;; esac
  if [ "$c" -gt "$code" ]; then code=$c; fi
}
gg() {
  echo "+ goldgate $*" >&2
  local c=0
  goldgate "$@" || c=$?
  worst "$c"
  return 0
}

words ab_cases "${INPUT_AB_CASES:-${INPUT_CASES:-}}"
# What is listed and planned: the A/B's cases in mode ab, else the selection.
listed=("${shard[@]}" "${filter[@]}" "${cases[@]}")
[ "$mode" = ab ] && listed=("${ab_cases[@]}")
echo "::group::goldgate list"
# Not through a pipe: gg records the exit code in this shell.
gg list "${select[@]}" "${listed[@]}" > "$out/list.txt"
cat "$out/list.txt"
echo "::endgroup::"
echo "::group::goldgate plan"
gg plan "${where[@]}" "${listed[@]}" --out "$work/results" > "$out/plan.txt"
cat "$out/plan.txt"
echo "::endgroup::"
if [ "$code" -ne 0 ]; then
  echo "::error title=goldgate action::the selection does not plan (exit $code): see goldgate plan's messages above" >&2
fi

summary() {
  if [ -f "$1" ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$1" >> "$GITHUB_STEP_SUMMARY"; fi
}

if [ "$code" -eq 0 ] && { [ "$mode" = gate ] || [ "$mode" = both ]; }; then
  gg run "${select[@]}" "${shard[@]}" "${filter[@]}" "${cases[@]}" "${extra[@]}" "${gate_clocks[@]}" \
    --out "$work/results" \
    --json "$out/comparison.json" --junit "$out/junit.xml" --markdown "$out/report.md"
  summary "$out/report.md"
fi

# A within-job A/B (ab-args --within-job, --a-switch or --b-switch): both arms in every job of
# the head's tree, switched save by save; goldgate ab refuses arm trees there (a checkout is
# fixed when a job starts), so the base's tree is not passed.
within=false
for arg in "${ab_extra[@]}"; do
  case "$arg" in --within-job | --a-switch* | --b-switch*) within=true ;; esac
done
if [ "$code" -le 1 ] && { [ "$mode" = ab ] || [ "$mode" = both ]; }; then
  arms=()
  if [ "$within" = true ]; then
    echo "a within-job A/B (ab-args): both arms run in this checkout, switched save by save; the base's tree is not used"
  else
    [ -n "${BASE_DIR:-}" ] || fail "mode $mode: no base tree (step base did not run)"
    base=${GITHUB_WORKSPACE:-$PWD}/$BASE_DIR
    [ -d "$base" ] || fail "mode $mode: the base tree $base is missing"
    arms=(--a-dir "$base" --b-dir "$PWD")
    # A Megatron-LM fork: each arm's training script comes from its own checkout.
    if [ "$megatron" = true ]; then
      arms+=(--a-env "MEGATRON_LM_DIR=$base" --b-env "MEGATRON_LM_DIR=$PWD")
    fi
  fi
  [ "${#ab_cases[@]}" -gt 0 ] || fail "mode $mode needs ab-cases (or cases): the cases goldgate ab runs"
  for case in "${ab_cases[@]}"; do
    name=${case//\//-}
    gg ab "$case" --root "$root" --golden-root "$golden_root" --platform "$platform" "${arms[@]}" \
      "${ab_extra[@]}" --out "$work/ab-results" \
      --json "$out/ab-$name.json" --junit "$out/ab-$name.junit.xml" --markdown "$out/ab-$name.md"
    summary "$out/ab-$name.md"
  done
fi

if [ "$code" -eq 0 ] && [ "$mode" = bless ]; then
  gg run "${select[@]}" "${shard[@]}" "${filter[@]}" "${cases[@]}" "${extra[@]}" --out "$work/results" --no-compare
  if [ "$code" -eq 0 ]; then
    gg bless --golden-root "$golden_root" --platform "$platform" --from "$work/results"
    # The golden files bless wrote or changed, at their paths in the repository: unpack the
    # artifact at the checkout's root and commit them.
    top=$(git rev-parse --show-toplevel)
    prefix=$(git rev-parse --show-prefix)
    git -C "$top" status --porcelain --untracked-files=all -- "$prefix$golden_root" |
      sed -n 's/^.. //p' | while IFS= read -r path; do
        mkdir -p "$out/goldens/$(dirname "$path")"
        cp "$top/$path" "$out/goldens/$path"
        echo "blessed: $path"
      done
  fi
fi

# History: the default branch's runs only (a pull request's runs are not its history).
if [ -n "${GOLDGATE_HISTORY:-}" ] && [ -d "$work/results" ]; then
  if [ "${GITHUB_EVENT_NAME:-}" = push ] && [ "${GITHUB_REF_NAME:-}" = "${DEFAULT_BRANCH:-}" ]; then
    gg history ingest "$work/results"
  else
    echo "history: not ingesting a ${GITHUB_EVENT_NAME:-local} run of ${GITHUB_REF_NAME:-this branch} (only pushes to ${DEFAULT_BRANCH:-the default branch})"
  fi
fi

# The records: what each job recorded, not its checkpoints or data. The logs are the masked
# ones goldgate stores, never a raw copy `--keep-raw-log` kept (`*.raw.log`): an artifact is
# not masked by GitHub as the Actions log is.
for dir in results ab-results; do
  [ -d "$work/$dir" ] || continue
  (cd "$work" && find "$dir" \( -name results.json -o -name run.json -o -name ab.json -o -name index.json \) -type f -print0 |
    xargs -0 -r cp --parents -t "$out")
  (cd "$work" && find "$dir" -path '*/logs/*' -type f ! -name '*.raw.log' -print0 |
    xargs -0 -r cp --parents -t "$out")
done
echo "$KEY" > "$out/key.txt"
[ -n "${PR_NUMBER:-}" ] && echo "$PR_NUMBER" > "$out/pr-number.txt"
[ -n "${GITHUB_EVENT_PATH:-}" ] && [ -f "$GITHUB_EVENT_PATH" ] && cp "$GITHUB_EVENT_PATH" "$out/event.json"
echo "goldgate: exit $code; records staged in $out"
output exit-code "$code"
output results "$work/results"
