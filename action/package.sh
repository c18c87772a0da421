#!/usr/bin/env bash
# The release archives that the action's install step reads, made the one way: the release
# workflow (.github/workflows/release.yml) runs it, and so does the action's test.
#   package.sh archive TAG TARGET BINARY DIST  DIST/goldgate-TAG-TARGET.tar.gz: the binary,
#                                              README.md, LICENSE and CHANGELOG.md in one folder
#   package.sh sums DIST                       DIST/SHA256SUMS over DIST's archives
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
case "${1:-}" in
  archive)
    tag=${2:?TAG} target=${3:?TARGET} binary=${4:?BINARY} dist=${5:?DIST}
    dir="goldgate-$tag-$target"
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' EXIT
    mkdir -p "$stage/$dir" "$dist"
    install -m 0755 "$binary" "$stage/$dir/goldgate"
    cp "$repo/README.md" "$repo/LICENSE" "$repo/CHANGELOG.md" "$stage/$dir/"
    tar -C "$stage" -czf "$dist/$dir.tar.gz" "$dir"
    echo "$dist/$dir.tar.gz"
    ;;
  sums)
    dist=${2:?DIST}
    (cd "$dist" && sha256sum goldgate-*.tar.gz > SHA256SUMS && cat SHA256SUMS)
    ;;
  *)
    echo "usage: package.sh archive TAG TARGET BINARY DIST | package.sh sums DIST" >&2
    exit 2
    ;;
esac
