#!/usr/bin/env bash
# Step "base" (mode ab and both): which commit arm A runs and where its tree goes. Arm A is the
# merge base of the head and BASE_REF (the pull request's base) when the checkout's history
# holds both; a pull request's default checkout is GitHub's merge commit, whose first parent is
# the base itself (so A is the base, B the base with the change merged); otherwise BASE_REF as
# it is, with a notice. The next step (actions/checkout) puts that commit at `path`, beside
# the head's checkout, under the workspace.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/common.sh"

ref=${BASE_REF:-}
[ -n "$ref" ] || fail "mode ab needs base-ref (the pull request's base, or a branch or commit)"
git rev-parse --git-dir >/dev/null 2>&1 || fail "working-directory $(pwd) is not a git checkout"
head=$(git rev-parse HEAD)
sha=""
if base=$(git rev-parse --verify --quiet "$ref^{commit}") && mb=$(git merge-base HEAD "$base" 2>/dev/null); then
  sha=$mb
  echo "arm A: the merge base of $head and $ref, $sha"
else
  parents=$(git cat-file -p HEAD | sed -n 's/^parent //p')
  first=$(echo "$parents" | head -n1)
  if [ "$(echo "$parents" | grep -c .)" -eq 2 ] && [ "$first" = "$ref" ]; then
    sha=$first
    echo "arm A: $sha, the base of the pull request's merge commit $head"
  else
    sha=$ref
    note "arm A: $ref as it is (the checkout's history does not reach it: check out with fetch-depth: 0 to run the merge base)"
  fi
fi
[ "$sha" != "$head" ] || note "arm A and arm B are the same commit $head: the A/B compares a commit with itself"
workspace=${GITHUB_WORKSPACE:-$(pwd)}
output sha "$sha"
output path "goldgate-base"
echo "arm A's tree: $workspace/goldgate-base"
