#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on 127.0.0.1 for the tests that need
# one (the aacp/sqlstore module with its two-process tests, examples/agentops) and prints
#
#   export KEEL_TEST_POSTGRES_DSN='postgres://keel:keel@127.0.0.1:PORT/keel_test?sslmode=disable'
#
# on stdout, for the caller to eval:  eval "$(.ci/postgres.sh)"
# Everything else goes to stderr. PostgreSQL is installed from Debian's
# packages when no server binaries are found. Running it again while the
# server is up only prints the line again.
#
# Settings (environment): KEEL_PG_PORT (default 55432), KEEL_PG_DIR (the
# cluster's directory, default a new one under /tmp). Stop the server with
#   pg_ctl -D "$KEEL_PG_DIR/data" stop   (as the user that owns the cluster)
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

port=${KEEL_PG_PORT:-55432}
dsn="postgres://keel:keel@127.0.0.1:${port}/keel_test?sslmode=disable"

find_bindir() {
  local d best=""
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && best=$d
  done
  echo "$best"
}

bindir=$(find_bindir)
if [ -z "$bindir" ]; then
  log "no PostgreSQL server found: installing it from Debian packages"
  if [ "$(id -u)" -ne 0 ]; then
    log "root is needed to install packages"; exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2
  apt-get install -y --no-install-recommends postgresql >&2
  bindir=$(find_bindir)
  [ -n "$bindir" ] || { log "PostgreSQL installed but initdb not found"; exit 1; }
fi
log "using $bindir"

# Run PostgreSQL's programs as the postgres user when we are root (initdb
# refuses to run as root), as ourselves otherwise.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  log "a server is running on 127.0.0.1:$port already"
else
  dir=${KEEL_PG_DIR:-$(mktemp -d /tmp/keel-pg.XXXXXX)}
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir "$dir" postgres
    chown postgres: "$dir"
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    log "initdb in $dir/data"
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C >&2
  fi
  # Loopback only, socket in the cluster directory. Durability settings are
  # relaxed: this server holds test data only.
  log "starting on 127.0.0.1:$port"
  as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >&2
  log "stop it with: pg_ctl -D $dir/data stop"
fi

psql_admin() {
  "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"
}
if [ "$(psql_admin -d postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'keel'")" != "1" ]; then
  psql_admin -d postgres -c "CREATE ROLE keel LOGIN PASSWORD 'keel'" >&2
fi
if [ "$(psql_admin -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'keel_test'")" != "1" ]; then
  psql_admin -d postgres -c "CREATE DATABASE keel_test OWNER keel" >&2
fi
"$bindir/psql" -X -q "$dsn" -c "SELECT 1" >/dev/null
log "ready: $dsn"
echo "export KEEL_TEST_POSTGRES_DSN='$dsn'"
