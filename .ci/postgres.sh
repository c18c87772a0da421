#!/usr/bin/env bash
# A real PostgreSQL server on loopback for goldgate's history-store tests
# (runner/tests/integration/history_store.rs run the same suite against SQLite and against this server):
# Debian's postgresql package, one cluster owned by the `postgres` user, listening on
# 127.0.0.1 only, a database `goldgate` with trust authentication for loopback.
# Idempotent: a server already answering is left as it is.
#
#   .ci/postgres.sh          install when missing, init, start, wait until it answers;
#                            prints the URL to export as GOLDGATE_POSTGRES_URL
#   .ci/postgres.sh stop     stop the server it started
#
# Installing needs root and apt-get; without them it says so and exits 1, and .ci/run then
# leaves GOLDGATE_POSTGRES_URL unset (the PostgreSQL tests fail under CI=true).
# State lives in $GOLDGATE_PG_DIR (default /var/tmp/goldgate-postgres); port $GOLDGATE_PG_PORT
# (default 55432, away from a system server on 5432).
set -euo pipefail

if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  exec sudo -n -E bash "$0" "$@"
fi

dir=${GOLDGATE_PG_DIR:-/var/tmp/goldgate-postgres}
port=${GOLDGATE_PG_PORT:-55432}
url="postgres://postgres@127.0.0.1:$port/goldgate"

bindir() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$found" ] && [ -x "$found/pg_ctl" ] && echo "$found"
}

as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}

if [ "${1:-}" = stop ]; then
  bin=$(bindir) || exit 0
  [ -f "$dir/data/postmaster.pid" ] && as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
  exit 0
fi

if ! bin=$(bindir); then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "postgres.sh: PostgreSQL is not installed and cannot be (needs root and apt-get)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # Debian's package creates and starts a default cluster on 5432; this script uses its own.
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  bin=$(bindir)
fi

if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  echo "$url"
  exit 0
fi

id postgres >/dev/null 2>&1 || useradd --system --home-dir "$dir" --shell /bin/bash postgres
mkdir -p "$dir"
chown postgres "$dir"
if [ ! -f "$dir/data/PG_VERSION" ]; then
  as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
fi
# Loopback only, a socket folder the postgres user owns, fsync off: a test server, not a store.
as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  start >/dev/null
for _ in $(seq 100); do
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break
  sleep 0.1
done
"$bin/pg_isready" -q -h 127.0.0.1 -p "$port"
as_postgres "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = 'goldgate'" | grep -q 1 ||
  as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres goldgate
echo "$url"
