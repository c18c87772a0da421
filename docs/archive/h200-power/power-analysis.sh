#!/bin/bash
# Issue 17's power study, the analysis: turns what `docs/archive/h200-power/power.sh` returned
# (power-*.tgz, power-*.log) into one markdown file — the provenance, `goldgate power`'s tables
# (each rule's false alarms on unchanged jobs and detection per planted size, real and
# synthetic, side by side) and a per-job table of what the fingerprint saw.
#
#   bash docs/archive/h200-power/power-analysis.sh DIR [MARKDOWN] [GOLDGATE]
#
# DIR holds the tarballs (several parts are merged: each unpacks into power/); MARKDOWN defaults
# to DIR/power.md; GOLDGATE to target/release/goldgate. The rules judged are this checkout's
# goldgate.yaml (its band rule and its two-sample rule for each metric).
set -eu
D=${1:?usage: power-analysis.sh DIR [MARKDOWN] [GOLDGATE]}
MD=${2:-$D/power.md}
G=${3:-target/release/goldgate}
[ -x "$G" ] || { echo "no goldgate binary at $G (cargo build --release -p goldgate)"; exit 2; }
X=$(mktemp -d)
trap 'rm -rf "$X"' EXIT
shopt -s nullglob
tarballs=("$D"/power-*.tgz)
[ ${#tarballs[@]} -gt 0 ] || { echo "no power-*.tgz under $D"; exit 2; }
for t in "${tarballs[@]}"; do tar xzf "$t" -C "$X"; done
P=$X/power
planted=()
for f in "$P"/planted-*.seconds; do
  label=$(basename "$f" .seconds)
  [ -d "$P/$label" ] && planted+=(--planted "$(cat "$f")s=$P/$label")
done
{
  echo "<!-- written by docs/archive/h200-power/power-analysis.sh from ${tarballs[*]##*/} -->"
  echo
  echo "Device calls (from power-*.log):"
  echo
  echo '```'
  for part in sync async extra; do
    [ -f "$D/power-$part.log" ] && grep -vE '^(total|[-d]rw)' "$D/power-$part.log"
  done
  echo '```'
  echo
  echo "\`goldgate power --results unchanged ${planted[*]//$P\//}\` (goldgate.yaml of this checkout):"
  echo
} > "$MD.tmp"
"$G" power --results "$P/unchanged" "${planted[@]}" --markdown "$X/power.md" > "$X/power.txt"
cat "$X/power.md" >> "$MD.tmp"
{
  echo
  echo "### Every job"
  echo
  python3 "$(dirname "$0")/power_jobs.py" "$P"/unchanged "$P"/planted-*
} >> "$MD.tmp"
mv "$MD.tmp" "$MD"
cat "$X/power.txt"
echo "wrote $MD"
