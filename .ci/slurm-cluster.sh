#!/usr/bin/env bash
# A real two-node Slurm cluster on this machine for goldgate's Slurm tests
# (runner/tests/integration/slurm.rs): Debian's slurm-wlm and munge, one slurmctld and two slurmd started
# with `slurmd -N n1` / `-N n2` (two nodes of one host, each with its own port), one
# partition `debug` over both. Idempotent: a cluster already up is left as it is.
#
#   .ci/slurm-cluster.sh          install when missing, write the config, start, wait for idle
#   .ci/slurm-cluster.sh stop     stop the daemons it started (by their pid files)
#
# Installing needs root and apt-get; without them it says so and exits 0, and the Slurm
# tests then say that they skipped. State lives in $GOLDGATE_SLURM_DIR
# (default /var/tmp/goldgate-slurm); the config is /etc/slurm/slurm.conf, which Slurm's
# commands read, and is only written when absent or written by this script.
set -euo pipefail

# Daemons, /etc/slurm and apt need root: a runner with passwordless sudo (GitHub's) reruns
# this script under sudo.
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  exec sudo -n -E bash "$0" "$@"
fi

dir=${GOLDGATE_SLURM_DIR:-/var/tmp/goldgate-slurm}
conf=/etc/slurm/slurm.conf
marker="# goldgate test cluster (.ci/slurm-cluster.sh)"

# shellcheck source=.ci/pidfiles.sh
source "$(dirname "$0")/pidfiles.sh"
stop() {
  stop_pidfiles "$dir"/slurmd-n2.pid "$dir"/slurmd-n1.pid "$dir"/slurmctld.pid "$dir"/munged.pid
}

if [ "${1:-}" = stop ]; then
  stop
  exit 0
fi

install() {
  command -v slurmctld >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "slurm-cluster: slurm-wlm is not installed and this is not a root Debian machine; Slurm tests will skip"
    return 1
  fi
  echo "slurm-cluster: installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq >/dev/null &&
    timeout 600 apt-get install -y -qq slurm-wlm munge >/dev/null ||
    { echo "slurm-cluster: apt-get could not install slurm-wlm munge; Slurm tests will skip"; return 1; }
}

write_config() {
  if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
    echo "slurm-cluster: $conf exists and is not ours; using it as it is"
    return 0
  fi
  local host mem
  host=$(hostname)
  # Half the machine's memory, split between the two nodes of one host.
  mem=$(awk '/MemTotal/ {print int($2 / 1024 / 4)}' /proc/meminfo)
  mkdir -p /etc/slurm "$dir/ctld"
  cat > "$conf.tmp" <<EOF
$marker
ClusterName=goldgate
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=6817
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
JobCompType=jobcomp/none
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmdTimeout=60
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=17001 CPUs=2 RealMemory=$mem State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=17002 CPUs=2 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$conf.tmp" "$conf"
}

running() {
  local pidfile=$1
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

start() {
  mkdir -p "$dir" /run/munge
  chown munge:munge /run/munge 2>/dev/null || true
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
    cp /run/munge/munged.pid "$dir/munged.pid"
  fi
  running "$dir/slurmctld.pid" || slurmctld
  for node in n1 n2; do
    running "$dir/slurmd-$node.pid" || slurmd -N "$node"
  done
}

wait_idle() {
  for _ in $(seq 120); do
    # Both nodes idle (or already running jobs): the cluster takes work.
    if [ "$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc)$')" = 2 ]; then
      sinfo -N
      return 0
    fi
    sleep 0.5
  done
  echo "slurm-cluster: the nodes did not become idle in 60 s:"
  sinfo -N || true
  tail -n 20 "$dir/slurmctld.log" || true
  return 1
}

install || exit 0
write_config
start
# Nodes an earlier test left down come back.
scontrol update nodename=n1,n2 state=resume >/dev/null 2>&1 || true
wait_idle
