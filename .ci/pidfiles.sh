# Sourced, not run: stops the daemons named by pid files, for .ci/slurm-cluster.sh (the test
# cluster) and docs/archive/h200-slurm/slurm-up.sh (the H200's one-node Slurm). Each file's
# process gets SIGTERM and up to 5 s to end; the file goes either way.
#
#   stop_pidfiles FILE...

stop_pidfiles() {
  local pidfile pid
  for pidfile in "$@"; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$pidfile"
  done
}
