#!/usr/bin/env bash
# A one-node Slurm on a machine without Slurm (the H200: Ubuntu 24.04, root, no network) from
# Debian 12's packages carried in .device/slurm-debs (slurmctld, slurmd, slurm-client,
# slurm-wlm-basic-plugins, munge and the libraries Ubuntu may lack, libdbus-1-3 for the
# cgroup/v2 plugin among them), unpacked with `dpkg -x`
# into a prefix (no dpkg install: Ubuntu's package names and versions differ).
#
#   bash docs/archive/h200-slurm/slurm-up.sh        # from the repository root
#   bash .../slurm-up.sh stop                                    # stop what it started
#
# Environment: SLURM_UP_DEBS (default .device/slurm-debs), SLURM_UP_PREFIX (default
# /tmp/gg-slurm), SLURM_UP_BIN (where the client wrappers go; default /usr/local/bin, which is
# on PATH, so that goldgate finds sbatch/squeue/scontrol/scancel/srun in later steps),
# SLURM_UP_PORT (slurmctld's port, default 6917; slurmd takes the next), SLURM_UP_GRES
# (`gpu:1` when /dev/nvidia0 exists, else none), SLURM_UP_GRES_FILE (the GPU's device file,
# default /dev/nvidia0; a rehearsal without a GPU names /dev/null).
#
# Every call stops the daemons an earlier call left and starts them on the config it just
# wrote: a slurmctld or slurmd still running from a call whose config had no gres keeps
# that config (the daemons read slurm.conf and gres.conf only when they start), which is
# how a node shows `GRES (null)` and slurmd logs "A line in gres.conf for GRES gpu has 1
# more configured than expected in slurm.conf" while the file on disk says `Gres=gpu:1`.
# With a gres it then checks that Slurm sees it (`scontrol show node`, and a one-task
# `srun --gres` that prints CUDA_VISIBLE_DEVICES) and, if not, prints the gres lines of
# both daemons' logs and exits 1.
#
# The node is `localhost` (so `scontrol show hostnames` names a host torchrun resolves), all
# CPUs of the machine, half its memory, `Gres=gpu:1` with `GresTypes=gpu` and a gres.conf
# `NodeName=localhost Name=gpu File=/dev/nvidia0`. Daemons: munged (its own socket and key), slurmctld, slurmd
# (`-d` points it at the prefix's slurmstepd; all three started by their own names, see unpack). Each client
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

# shellcheck source=.ci/pidfiles.sh
source "$(dirname "$0")/../../../.ci/pidfiles.sh"
stop() {
  stop_pidfiles "$state/slurmd.pid" "$state/slurmctld.pid" "$state/munged.pid"
}
if [ "${1:-}" = stop ]; then
  stop
  exit 0
fi

unpack() {
  compgen -G "$debs/*.deb" >/dev/null || { echo "slurm-up: no .deb files in $debs"; exit 2; }
  mkdir -p "$root" "$state" "$bin"
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$root"; done
  # Debian installs the daemons as `*-wlm` and names them through alternatives symlinks,
  # which `dpkg -x` does not make. Slurm's daemons tell what they are by the name they were
  # started as: `slurmctld-wlm` and `slurmd-wlm` do not set up node GRES as slurmctld and
  # slurmd (the node shows GRES (null); slurmd logs "A line in gres.conf for GRES gpu has 1
  # more configured than expected in slurm.conf"). Start them by their own names.
  for daemon in slurmctld slurmd slurmstepd; do
    ln -sf "$daemon-wlm" "$root/usr/sbin/$daemon"
  done
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

# The node's gres: SLURM_UP_GRES, else gpu:1 when the machine has a GPU.
gres=${SLURM_UP_GRES-}
if [ -z "${SLURM_UP_GRES+set}" ] && [ -e /dev/nvidia0 ]; then gres=gpu:1; fi

write_config() {
  local cpus mem
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
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
    echo "NodeName=localhost Name=gpu File=${SLURM_UP_GRES_FILE:-/dev/nvidia0}" > "$state/gres.conf"
  else
    rm -f "$state/gres.conf"
  fi
  mkdir -p "$state/ctld" "$state/spool"
}

# The gres lines of both daemons' logs and the node as slurmctld sees it.
gres_report() {
  echo "slurm-up: Slurm does not see the gres $gres; slurm.conf and gres.conf:"
  grep -iE '^(GresTypes|NodeName)' "$conf" || true
  cat "$state/gres.conf" || true
  "$bin/scontrol" show node localhost || true
  grep -iE 'gres|gpu' "$state/slurmctld.log" "$state/slurmd.log" | tail -n 20 || true
}

# With a gres: slurmctld's node has it, and a job that asks for it gets the GPU.
check_gres() {
  [ -n "$gres" ] || return 0
  local shown
  shown=$("$bin/scontrol" show node localhost | tr ' ' '\n' | grep '^Gres=' || true)
  echo "slurm-up: node localhost $shown"
  if [ "$shown" != "Gres=$gres" ]; then gres_report; return 1; fi
  local cvd
  cvd=$(timeout 60 "$bin/srun" --gres="$gres" -N1 -n1 printenv CUDA_VISIBLE_DEVICES) ||
    { gres_report; return 1; }
  echo "slurm-up: srun --gres=$gres: CUDA_VISIBLE_DEVICES=$cvd"
}

unpack
start_munge
# Daemons of an earlier call run on its config: stop them, so they start on this one.
stop_daemons() {
  stop_pidfiles "$state/slurmd.pid" "$state/slurmctld.pid"
}
stop_daemons
write_config
# slurmd's cgroup/v2 plugin (IgnoreSystemd) makes its scope under /sys/fs/cgroup/system.slice and
# wants the cpuset, cpu and memory controllers delegated there. On the H200 of device call U
# (2026-12-01) neither was so, and slurmd died at start ("Could not create scope directory
# /sys/fs/cgroup/system.slice/localhost_slurmstepd.scope", "Controller cpuset is not enabled");
# with the two lines below it came up and ran the gres job. Best effort: elsewhere they may fail.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  mkdir -p /sys/fs/cgroup/system.slice 2>/dev/null || true
  for d in /sys/fs/cgroup /sys/fs/cgroup/system.slice; do
    echo "+cpuset +cpu +memory" > "$d/cgroup.subtree_control" 2>/dev/null || true
  done
fi
"$root/usr/sbin/slurmctld" -f "$conf"
"$root/usr/sbin/slurmd" -f "$conf" -N localhost -d "$root/usr/sbin/slurmstepd"
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
check_gres || exit 1
cat <<EOF
slurm-up: Slurm 22.05 from $root is up (config $conf, logs in $state).
Its commands are wrappers in $bin. Then, from the repository root:
  goldgate run gpt/h200-ckpt-allocator --platform h200_slurm --repeat 1 --timeout 300s
  goldgate repro gpt/h200-ckpt-allocator --platform h200_slurm     # the batch script
Stop it with: bash docs/archive/h200-slurm/slurm-up.sh stop
EOF
