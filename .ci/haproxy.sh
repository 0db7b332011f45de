#!/usr/bin/env bash
# Makes sure haproxy is installed (from Debian's package "haproxy" when it
# is missing, as .ci/postgres.sh does for PostgreSQL) and prints the path
# of its binary on stdout. Everything else goes to stderr.
#
#   haproxy=$(.ci/haproxy.sh)
set -euo pipefail

log() { echo "haproxy.sh: $*" >&2; }

if ! command -v haproxy >/dev/null; then
  log "haproxy not found: installing it from Debian packages"
  if [ "$(id -u)" -ne 0 ]; then
    log "root is needed to install packages"; exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2
  apt-get install -y --no-install-recommends haproxy >&2
  # The package starts a system service; this project runs its own.
  if command -v systemctl >/dev/null && systemctl is-active --quiet haproxy 2>/dev/null; then
    systemctl stop haproxy >&2 || true
  fi
fi
command -v haproxy
