#!/bin/bash
# Device call P (issue 20), after call O showed a job of gpt/h200-ckpt-power takes 62-68 s on
# this machine (not ~35 s), so O's budgets stopped every ab after its first job. The machine is
# warm from O, so no warm-up job; the planted delays come from O's unchanged job (median save
# 0.3848 s): +30 % = 0.1154 s. Parts: the seed's question (one pair: the counters decide), +30 %.
#   OUT=... bash docs/results/h200-runs/device-calls/callP.sh
exec bash docs/results/h200-runs/device-calls/ab-direct.sh abP.tgz seed "${SEED_S:-200}" --b-variant empty_cache=level2 :: plant30 "${PLANT30_S:-330}" --b-env GOLDGATE_PLANT_SAVE_DELAY_S=0.1154
