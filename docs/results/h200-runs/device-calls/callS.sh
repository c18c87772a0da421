#!/bin/bash
# Device call S (issue 20): an A/A ab (both arms the case as is), as many pairs as the call holds.
# this machine (not ~35 s), so O's budgets stopped every ab after its first job. The machine is
# warm from O, so no warm-up job; the planted delays come from O's unchanged job (median save
# 0.3848 s): +30 % = 0.1154 s. Parts: the seed's question (one pair: the counters decide), +30 %.
#   OUT=... bash docs/results/h200-runs/device-calls/callP.sh
exec bash docs/results/h200-runs/device-calls/ab-direct.sh abS.tgz aa "${AA_S:-540}"
