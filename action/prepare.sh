#!/usr/bin/env bash
# Step "prepare": checks the inputs, names the records artifact and the sticky comment's key,
# and decides how goldgate is installed (a release binary or a cached build of this action's own
# source), with the cache key for the build.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/common.sh"

mode=${INPUT_MODE:-gate}
case "$mode" in
  gate | ab | both | bless | comment) ;;
  *) fail "mode must be gate, ab, both, bless or comment, not '$mode'" ;;
esac
platform=${INPUT_PLATFORM:-}
if [ "$mode" != comment ] && [ -z "$platform" ]; then
  fail "the platform input is required for mode $mode (a platform of goldgate.yaml)"
fi
key=${INPUT_COMMENT_KEY:-$platform}
# The key names the artifact (goldgate-<key>-<shard>) and the comment; keep it to a safe set.
case "$key" in
  *[!A-Za-z0-9._-]*) fail "comment-key '$key' may hold only letters, digits, '.', '_' and '-'" ;;
esac
shard=1
if [ -n "${INPUT_PARTITION:-}" ]; then
  # hash:K/N or K/N: the shard's number names its artifact.
  spec=${INPUT_PARTITION#hash:}
  shard=${spec%%/*}
  case "$shard" in '' | *[!0-9]*) fail "partition '$INPUT_PARTITION' is not K/N or hash:K/N" ;; esac
fi

temp=${RUNNER_TEMP:?RUNNER_TEMP is not set}/goldgate
mkdir -p "$temp"
output key "$key"
if [ "$mode" = comment ]; then
  output inbox "$temp/inbox"
else
  # goldgate-<key>-<shard>; an A/B job beside the gate's shards is goldgate-<key>-ab, and the
  # goldens of a bless are goldgate-goldens-<key>-<shard> (no comment reads those).
  artifact="goldgate-$key-$shard"
  [ "$mode" = ab ] && artifact="goldgate-$key-ab"
  [ "$mode" = bless ] && artifact="goldgate-goldens-$key-$shard"
  output artifact "$artifact"
  out="$temp/out/$artifact"
  rm -rf "$out" && mkdir -p "$out"
  output out "$out"
fi

# auto: the release of `version`, else of the action's own ref when that is a release tag
# (uses: goldgate/goldgate@v0.2.0), else a build of the action's checkout (a branch or a SHA,
# or `uses: ./` in goldgate's own repository).
install=${INPUT_INSTALL:-auto}
tag=${INPUT_VERSION:-}
case "$install" in
  auto)
    if [ -z "$tag" ] && [[ ${ACTION_REF:-} =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then tag=$ACTION_REF; fi
    if [ -n "$tag" ]; then install=release; else install=build; fi
    ;;
  release)
    tag=${tag:-${ACTION_REF:-}}
    [[ $tag =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]] || fail "install: release needs version (a release tag such as v0.2.0), not '$tag'"
    ;;
  build) ;;
  *) fail "install must be auto, release or build, not '$install'" ;;
esac
output install "$install"
output tag "$tag"
if [ "$install" = build ]; then
  lock=$(sha256sum "${GITHUB_ACTION_PATH:-$here/..}/Cargo.lock" | cut -c1-16)
  src=$(cd "${GITHUB_ACTION_PATH:-$here/..}" && git rev-parse HEAD 2>/dev/null || echo none)
  output cache-path "$HOME/.cache/goldgate-action/target"
  output cache-key "goldgate-build-${RUNNER_OS:-Linux}-$(uname -m)-$lock-$src"
  output cache-restore-key "goldgate-build-${RUNNER_OS:-Linux}-$(uname -m)-$lock-"
fi
echo "goldgate action: mode $mode, platform ${platform:-—}, key $key, install $install${tag:+ $tag}"
