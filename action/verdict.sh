#!/usr/bin/env bash
# Last step: the job ends with goldgate's exit code (recorded by run.sh, after the records were
# uploaded whatever it was).
set -euo pipefail
code=${EXIT_CODE:-}
case "$code" in
  0) echo "goldgate: pass" ;;
  1 | 2 | 3) echo "goldgate: exit $code (1 regression, 2 usage or configuration error, 3 job or infrastructure failure)" ;;
  *) echo "::error title=goldgate action::goldgate did not finish (no exit code recorded)" >&2; exit 3 ;;
esac
exit "$code"
