#!/usr/bin/env bash
# A one-node Slurm on a machine without Slurm (the H200: Ubuntu 24.04, root, no network) from
# Debian 12's packages carried in .device/slurm-debs (slurmctld, slurmd, slurm-client,
# slurm-wlm-basic-plugins, munge and the libraries Ubuntu may lack, libdbus-1-3 for the
# cgroup/v2 plugin among them), unpacked with `dpkg -x`
# into a prefix (no dpkg install: Ubuntu's package names and versions differ).
#
#   bash docs/results/h200-runs/device-calls/slurm-up.sh        # from the repository root
#   bash .../slurm-up.sh stop                                    # stop what it started
#
# Environment: SLURM_UP_DEBS (default .device/slurm-debs), SLURM_UP_PREFIX (default
# /tmp/gg-slurm), SLURM_UP_BIN (where the client wrappers go; default /usr/local/bin, which is
# on PATH, so that goldgate finds sbatch/squeue/scontrol/scancel/srun in later steps),
# SLURM_UP_PORT (slurmctld's port, default 6917; slurmd takes the next), SLURM_UP_GRES
# (`gpu:1` when /dev/nvidia0 exists, else none).
#
# The node is `localhost` (so `scontrol show hostnames` names a host torchrun resolves), all
# CPUs of the machine, half its memory, `Gres=gpu:1` with `GresTypes=gpu` and a gres.conf
# `Name=gpu File=/dev/nvidia0`. Daemons: munged (its own socket and key), slurmctld, slurmd
# (`-d` points it at the prefix's slurmstepd; Debian names the daemons `*-wlm`). Each client
# wrapper sets SLURM_CONF and hands the libraries to the dynamic loader (`ld.so
# --library-path`), so no LD_LIBRARY_PATH reaches a job: Debian's libraries never shadow
# Ubuntu's in the training process.
set -euo pipefail

prefix=${SLURM_UP_PREFIX:-/tmp/gg-slurm}
root=$prefix/root
state=$prefix/state
bin=${SLURM_UP_BIN:-/usr/local/bin}
port=${SLURM_UP_PORT:-6917}
debs=${SLURM_UP_DEBS:-.device/slurm-debs}
lib=$root/usr/lib/x86_64-linux-gnu
# Debian ships some libraries (libdbus) below /lib, the rest below /usr/lib.
libs=$lib/slurm-wlm:$lib:$root/lib/x86_64-linux-gnu
conf=$state/slurm.conf
socket=$state/munge.socket

stop() {
  for pidfile in "$state/slurmd.pid" "$state/slurmctld.pid" "$state/munged.pid"; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$pidfile"
  done
}
if [ "${1:-}" = stop ]; then
  stop
  exit 0
fi

unpack() {
  compgen -G "$debs/*.deb" >/dev/null || { echo "slurm-up: no .deb files in $debs"; exit 2; }
  mkdir -p "$root" "$state" "$bin"
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$root"; done
  # The daemons find their plugins in PluginDir and their libraries through LD_LIBRARY_PATH
  # (searched before the binaries' RUNPATH), which start_munge sets for them alone.
  for tool in sbatch squeue scontrol scancel srun sinfo sdiag; do
    cat > "$bin/$tool" <<EOF
#!/usr/bin/env bash
# slurm-up.sh's $tool: Debian's, from $root; its libraries go to the dynamic loader, not
# into LD_LIBRARY_PATH, which jobs would inherit.
export SLURM_CONF=$conf
exec /lib64/ld-linux-x86-64.so.2 --library-path $libs $root/usr/bin/$tool "\$@"
EOF
    chmod +x "$bin/$tool"
  done
}

start_munge() {
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if [ ! -s "$state/munge.key" ]; then
    dd if=/dev/urandom of="$state/munge.key" bs=1024 count=1 status=none
    chmod 400 "$state/munge.key"
  fi
  chmod 700 "$state"
  if ! "$root/usr/bin/munge" --socket="$socket" -n 2>/dev/null |
      "$root/usr/bin/unmunge" --socket="$socket" >/dev/null 2>&1; then
    "$root/usr/sbin/munged" --force --socket="$socket" --key-file="$state/munge.key" \
      --pid-file="$state/munged.pid" --log-file="$state/munged.log" --seed-file="$state/munged.seed"
  fi
  "$root/usr/bin/munge" --socket="$socket" -n | "$root/usr/bin/unmunge" --socket="$socket" | grep -q Success
}

write_config() {
  local cpus mem gres
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
  gres=${SLURM_UP_GRES-}
  if [ -z "${SLURM_UP_GRES+set}" ] && [ -e /dev/nvidia0 ]; then gres=gpu:1; fi
  cat > "$conf" <<EOF
# goldgate's one-node Slurm (slurm-up.sh)
ClusterName=goldgate
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
PluginDir=$lib/slurm-wlm
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
JobCompType=jobcomp/none
MinJobAge=300
KillWait=10
InactiveLimit=0
${gres:+GresTypes=gpu}
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem ${gres:+Gres=$gres} State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  # slurmd 22.05 always starts its cgroup plugin; on a cgroup v2 host (the H200) that is
  # cgroup/v2, which links libdbus (carried) and would ask systemd over D-Bus for a scope:
  # no systemd here, so it makes its cgroup itself.
  printf 'IgnoreSystemd=yes\nIgnoreSystemdOnFailure=yes\n' > "$state/cgroup.conf"
  if [ -n "$gres" ]; then
    echo "Name=gpu File=/dev/nvidia0" > "$state/gres.conf"
  else
    rm -f "$state/gres.conf"
  fi
  mkdir -p "$state/ctld" "$state/spool"
}

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

unpack
start_munge
write_config
running "$state/slurmctld.pid" || "$root/usr/sbin/slurmctld-wlm" -f "$conf"
running "$state/slurmd.pid" || "$root/usr/sbin/slurmd-wlm" -f "$conf" -N localhost -d "$root/usr/sbin/slurmstepd-wlm"
for _ in $(seq 120); do
  if "$bin/sinfo" -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)$'; then break; fi
  sleep 0.5
done
if ! "$bin/sinfo" -h -o '%t' | grep -qE '^(idle|mix|alloc)$'; then
  echo "slurm-up: the node did not become idle:"
  "$bin/sinfo" -N || true
  tail -n 20 "$state/slurmctld.log" "$state/slurmd.log" || true
  exit 1
fi
"$bin/sinfo" -N -o '%N %t %c %m %G'
cat <<EOF
slurm-up: Slurm 22.05 from $root is up (config $conf, logs in $state).
Its commands are wrappers in $bin. Then, from the repository root:
  goldgate run gpt/h200-ckpt-allocator --platform h200_slurm --repeat 1 --timeout 300s
  goldgate repro gpt/h200-ckpt-allocator --platform h200_slurm     # the batch script
Stop it with: bash docs/results/h200-runs/device-calls/slurm-up.sh stop
EOF
