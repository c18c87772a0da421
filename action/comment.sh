#!/usr/bin/env bash
# Mode comment, in a workflow_run job of the default branch: keeps one sticky comment per pull
# request and key from the records the tested run uploaded (INBOX holds its goldgate-<key>-<shard>
# artifacts). It runs no code of the pull request: it reads data (the comparison JSON, the
# pull request's number, which must be a number; the A/B JSON of mode ab, the timing section) and
# renders it with `goldgate comment`, which
# never judges again, so the comment says what the check said.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/common.sh"

inbox=${INBOX:?}
if ! compgen -G "$inbox/goldgate-*/key.txt" >/dev/null; then
  note "the tested run uploaded no goldgate records: no comment"
  exit 0
fi
pr=""
for f in "$inbox"/goldgate-*/pr-number.txt; do
  [ -f "$f" ] || continue
  n=$(head -c 20 "$f" | tr -d '[:space:]')
  case "$n" in '' | *[!0-9]*) fail "$f is not a pull request number" ;; esac
  [ -z "$pr" ] || [ "$pr" = "$n" ] || fail "the records name two pull requests ($pr and $n)"
  pr=$n
done
if [ -z "$pr" ]; then
  note "the tested run was not a pull request's: no comment"
  exit 0
fi
keys=$(cat "$inbox"/goldgate-*/key.txt | tr -d '\r' | sort -u)
code=0
for key in $keys; do
  case "$key" in *[!A-Za-z0-9._-]*) fail "key '$key' in the records is not a key" ;; esac
  files=()
  for dir in "$inbox"/goldgate-"$key"-*/; do
    [ "$(cat "$dir/key.txt")" = "$key" ] || continue
    [ -f "$dir/comparison.json" ] && files+=(--comparison "$dir/comparison.json")
    # The A/B results of mode ab/both: the comment's timing section.
    for f in "$dir"/ab-*.json; do
      if [ -f "$f" ]; then files+=(--ab "$f"); fi
    done
  done
  if [ "${#files[@]}" -eq 0 ]; then
    echo "key $key: no comparison or A/B result in the records (the run failed before judging): no comment"
    continue
  fi
  echo "+ goldgate comment ${files[*]} --key $key --pr $pr --only-on-change"
  c=0
  goldgate comment "${files[@]}" --key "$key" --pr "$pr" --only-on-change || c=$?
  if [ "$c" -gt "$code" ]; then code=$c; fi
done
exit "$code"
