#!/usr/bin/env bash
# Step "install": puts goldgate on PATH. Either the release archive for this machine
# (goldgate-<tag>-<target>.tar.gz), verified against the release's SHA256SUMS and, when given,
# the sha256 input, or a build of this action's own checkout into the cached target folder.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/common.sh"

bin=${RUNNER_TEMP:?RUNNER_TEMP is not set}/goldgate/bin
mkdir -p "$bin"
case "${INSTALL:?}" in
  release)
    case "$(uname -m)" in
      x86_64 | amd64) target=x86_64-unknown-linux-gnu ;;
      aarch64 | arm64) target=aarch64-unknown-linux-gnu ;;
      *) fail "no goldgate release binary for $(uname -m); use install: build" ;;
    esac
    archive="goldgate-$TAG-$target.tar.gz"
    base=${INPUT_RELEASE_URL:-${GITHUB_SERVER_URL:-https://github.com}/${ACTION_REPOSITORY:?}/releases/download/$TAG}
    dl=$(mktemp -d)
    trap 'rm -rf "$dl"' EXIT
    for f in "$archive" SHA256SUMS; do
      curl --fail --silent --show-error --location --retry 3 -o "$dl/$f" "$base/$f" ||
        { echo "::error title=goldgate action::could not download $base/$f" >&2; exit 3; }
    done
    want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$dl/SHA256SUMS")
    [ -n "$want" ] || fail "SHA256SUMS of $TAG lists no $archive"
    got=$(sha256sum "$dl/$archive" | cut -d' ' -f1)
    [ "$got" = "$want" ] || fail "$archive: SHA-256 $got does not match SHA256SUMS ($want)"
    if [ -n "${INPUT_SHA256:-}" ] && [ "$got" != "${INPUT_SHA256,,}" ]; then
      fail "$archive: SHA-256 $got does not match the sha256 input ($INPUT_SHA256)"
    fi
    echo "$archive: SHA-256 $got (matches SHA256SUMS${INPUT_SHA256:+ and the sha256 input})"
    tar -xzf "$dl/$archive" -C "$dl"
    install -m 0755 "$dl/goldgate-$TAG-$target/goldgate" "$bin/goldgate"
    ;;
  build)
    src=${GITHUB_ACTION_PATH:-$here/..}
    command -v cargo >/dev/null || fail "install: build needs a Rust toolchain (cargo) on the runner"
    CARGO_TARGET_DIR=${CACHE_PATH:?} cargo build --release --locked -p goldgate \
      --manifest-path "$src/Cargo.toml"
    install -m 0755 "$CACHE_PATH/release/goldgate" "$bin/goldgate"
    ;;
  *) fail "unknown install '$INSTALL'" ;;
esac
version=$("$bin/goldgate" --version)
echo "installed: $version"
# The release workflow checks that its binaries name the tag; here the version must be the tag's.
if [ "$INSTALL" = release ] && [[ $version != "goldgate ${TAG#v} ("* ]]; then
  fail "the $TAG archive holds '$version', not goldgate ${TAG#v}"
fi
echo "$bin" >> "${GITHUB_PATH:?}"
output goldgate "$bin/goldgate"
