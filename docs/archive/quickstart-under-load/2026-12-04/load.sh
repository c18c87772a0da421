#!/usr/bin/env bash
# The load around ../run.sh on 2026-12-04: a second fresh clone's `cargo build --release` and
# three busy loops, started 20 s before the quickstart's clone and stopped when it ends
# (/tmp/qs/loadclone is a clone of /work/main at the same commit).
cd /tmp/qs
( cd loadclone && cargo build --release --locked > /tmp/qs/loadbuild.log 2>&1 ) &
lb=$!
for i in 1 2 3; do ( timeout 3600 sh -c 'while :; do :; done' ) & done
sleep 20
bash /work/main/docs/archive/quickstart-under-load/run.sh /work/main 5afb36f /tmp/qs/out > /tmp/qs/run.log 2>&1
pkill -f "while :; do :; done"
kill $lb 2>/dev/null
echo done >> /tmp/qs/run.log
