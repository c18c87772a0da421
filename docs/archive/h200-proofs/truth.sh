#!/bin/bash
# Issue 14 items 1-3 on the H200: the reference case gpt/h200-ckpt-allocator (64 iterations,
# saves every 16) run once synchronously and once under each async strategy, printing side by
# side what goldgate recorded: host peak PSS (the gated figure), summed RSS, the system's
# MemAvailable drop (PSS should be within 5 % of it), the PSS reads' count and CPU time, and
# the overlapping saves (there should be none now that saves are 16 iterations apart). For
# async_shm compare PSS + the /dev/shm peak with the drop: tmpfs pages are in no process's PSS.
#
#   bash docs/archive/h200-proofs/truth.sh GOLDGATE OUTDIR
#
# Expects the wheels (megatron-core, nvidia-resiliency-ext) installed to /tmp/site, as the
# lead's call script does first; /tmp/site is put on PYTHONPATH here. Jobs in order: sync
# (default), async_nvrx, async_mcore, async_shm; a job that would not finish within BUDGET_S
# (default 250 s, judged by the previous job's time: the first job pays for compiling and is
# slower) is not started, so async_shm runs only when the others were quick. On the H200 the
# first job took ~130 s and later ones ~60 s at 15 iterations (the case now runs 64). Writes OUTDIR/truth.log, OUTDIR/truth-table.txt and OUTDIR/truth.tgz
# (every job folder without checkpoints, tensorboard or data cache). Rehearsal with the fake
# trainer: GG_CASE=demo/ckpt-demo GG_PLATFORM=dev_cpu bash .../truth.sh target/debug/goldgate /tmp/o
set -u
G=$(realpath "${1:?usage: truth.sh GOLDGATE OUTDIR}") || exit 2
O=$(mkdir -p "${2:?usage: truth.sh GOLDGATE OUTDIR}" && realpath "$2") || exit 2
BUDGET=${BUDGET_S:-250}
CASE=${GG_CASE:-gpt/h200-ckpt-allocator}
PLATFORM=${GG_PLATFORM:-h200}
W=${WORK:-/tmp/truth}
T0=$(date +%s)
rm -rf "$W"; mkdir -p "$W"
LOG=$O/truth.log
log() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$LOG"; }
[ -x "$G" ] || { echo "no goldgate binary at $G"; exit 2; }
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
log "$($G --version 2>&1); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
grep MemAvailable /proc/meminfo | tee -a "$LOG"

LAST=0
job() {
  local name=$1; shift
  local now=$(( $(date +%s) - T0 ))
  if [ "$LAST" -gt 0 ] && [ $(( now + LAST )) -gt "$BUDGET" ]; then
    log "budget: not starting $name (${now} s used, last job ${LAST} s, budget ${BUDGET} s)"
    return 1
  fi
  local start=$(date +%s)
  timeout 400 "$G" run "$CASE" --platform "$PLATFORM" --repeat 1 --no-compare \
    --sample-interval 10ms --timeout 300s --out "$W/$name" "$@" >> "$W/console-$name.log" 2>&1
  local rc=$? took=$(( $(date +%s) - start ))
  LAST=$took
  log "$name $* -> exit $rc in ${took} s"
  grep -E "^(ok|FAIL|warning|error)" "$W/console-$name.log" | head -5 | tee -a "$LOG"
}
# GG_JOBS picks and orders the jobs (default: all four); a later call with another WORK adds more.
for name in ${GG_JOBS:-sync async_nvrx async_mcore async_shm}; do
  case $name in
    sync) job sync ;;
    async_nvrx|async_mcore|async_shm) job "$name" --variant "checkpoint=$name" ;;
    *) log "unknown job $name (sync, async_nvrx, async_mcore, async_shm)" ;;
  esac
done

python3 - "$W" <<'PY' | tee "$O/truth-table.txt" | tee -a "$LOG"
import glob, json, os, sys
GIB = 1024 ** 3
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], *["*"] * 6, "results.json"))):
    r = json.load(open(path))
    m = r["memory"]
    pss, rss = m.get("host_peak_pss_bytes"), m.get("host_peak_rss_bytes")
    drop = (m.get("mem_available") or {}).get("drop_bytes")
    saves = r.get("checkpoints", [])
    rows.append((
        r["variant"]["name"], r["outcome"]["status"],
        pss, rss, drop, m.get("shm_peak_bytes"),
        m.get("host_pss_reads"), m.get("host_pss_read_cpu_seconds"), r.get("observer_cpu_seconds"),
        r.get("overlapping_saves", 0),
        ",".join(str(c["iteration"]) for c in saves if c.get("overlapped_by_next")) or "-",
        " ".join(f'{c["async_latency_seconds"]:.2f}' for c in saves if c.get("async_latency_seconds") is not None) or "-",
        " ".join(f'{c["blocking_max_seconds"]:.2f}' for c in saves if c.get("blocking_max_seconds") is not None),
    ))
g = lambda b: "-" if b is None else f"{b / GIB:.2f}"
print(f'{"variant":32} {"outcome":8} {"PSS GiB":>8} {"RSS GiB":>8} {"drop GiB":>8} {"shm GiB":>7} {"PSS/drop":>8} {"(PSS+shm)/drop":>14} '
      f'{"reads":>5} {"read cpu s":>10} {"gg cpu s":>8} {"warned":>6} {"overlapped":>10}  async latency s | blocking s')
for v, o, pss, rss, drop, shm, reads, cpu, gcpu, warned, over, lat, blk in rows:
    ratio = f"{pss / drop:.3f}" if pss and drop else "-"
    # /dev/shm is tmpfs: what a job stages there lowers MemAvailable but is in no PSS.
    with_shm = f"{(pss + (shm or 0)) / drop:.3f}" if pss and drop else "-"
    print(f"{v:32} {o:8} {g(pss):>8} {g(rss):>8} {g(drop):>8} {g(shm):>7} {ratio:>8} {with_shm:>14} {reads or '-':>5} "
          f"{cpu if cpu is None else round(cpu, 3)!s:>10} {gcpu if gcpu is None else round(gcpu, 2)!s:>8} "
          f"{warned:>6} {over:>10}  {lat} | {blk}")
PY
tar czf "$O/truth.tgz" --exclude=checkpoints --exclude=tensorboard --exclude=data-cache -C "$W" . 2>>"$LOG"
log "done; $(ls -la "$O" | wc -l) entries in $O"
