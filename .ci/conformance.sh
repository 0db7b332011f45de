#!/usr/bin/env bash
# Runs the official MCP conformance suite against examples/everything over
# streamable HTTP, in four invocations:
#
#   0.1.16          --suite all                        (every server scenario)
#   0.2.0-alpha.12  --alpha --requirements 2025-11-25  (the frozen 2025-11-25 set)
#   0.2.0-alpha.12  --alpha --requirements 2026-07-28  (the stateless revision,
#                                                       against everything -stateless)
#   0.2.0-alpha.12  --alpha --requirements 2026-07-28  (the same, against everything
#                                                       built with -tags keel_omit2025:
#                                                       the 2026-07-28 rules alone)
#
# and exits non-zero unless all four print "N passed, 0 failed".
#
# The suite lives in ../shared/tools/conformance (read-only); it is copied
# to a temporary directory, where run-conformance.sh installs its pinned npm
# package (npm ci, a few seconds; needs node and the npm registry or cache).
# Set CONFORMANCE_HOME to a writable copy of that directory to keep the
# installs between runs:
#
#   cp -r ../shared/tools/conformance ~/.cache/keel-conformance
#   chmod -R u+w ~/.cache/keel-conformance
#   CONFORMANCE_HOME=~/.cache/keel-conformance .ci/conformance.sh
#
# Other settings: KEEL_SHARED (default: the repository's ../shared).
# Each run's full report is printed when it fails (or with VERBOSE=1).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
shared=${KEEL_SHARED:-$root/../shared}

command -v node >/dev/null || { echo "conformance.sh: node is required (the suite is a Node.js program)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${CONFORMANCE_HOME:-}" ]; then
  suite=$CONFORMANCE_HOME
  [ -x "$suite/run-conformance.sh" ] || { echo "conformance.sh: no run-conformance.sh in CONFORMANCE_HOME=$suite" >&2; exit 1; }
else
  src=$shared/tools/conformance
  [ -x "$src/run-conformance.sh" ] || { echo "conformance.sh: no conformance suite at $src" >&2; exit 1; }
  suite=$work/conformance
  cp -r "$src" "$suite"
  chmod -R u+w "$suite"
fi

echo "== build examples/everything"
# examples/everything is a module of its own (it imports the otel and postgres modules).
(cd examples/everything && GOWORK=off go build -o "$work/everything" .)
(cd examples/everything && GOWORK=off go build -tags keel_omit2025 -o "$work/everything-omit2025" .)

# free_port prints a loopback TCP port nobody listens on right now.
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

status=0
# run LABEL SUITE-OPTIONS... [-- SERVER-OPTIONS...]: one suite invocation
# against a fresh server; options after -- go to examples/everything.
run() {
  local label=$1; shift
  local suite_args=() server_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do suite_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift # the --
  server_args=("$@")
  local port log rc=0
  port=$(free_port)
  log=$work/$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_').log
  echo "== conformance $label (port $port)"
  # run-conformance.sh reads CONFORMANCE_HOME as the package folder: keep ours from it.
  env -u CONFORMANCE_HOME "$suite/run-conformance.sh" "${suite_args[@]}" "http://127.0.0.1:$port/mcp" \
    -- "$work/${server:-everything}" -http "127.0.0.1:$port" ${server_args[@]+"${server_args[@]}"} >"$log" 2>&1 || rc=$?
  if [ $rc -ne 0 ] || [ "${VERBOSE:-0}" = 1 ]; then
    cat "$log"
  else
    grep -E '^suite wall time|scenarios: ' "$log" || true
    tail -n 1 "$log"
  fi
  if [ $rc -ne 0 ] || ! tail -n 1 "$log" | grep -qE '^[0-9]+ passed, 0 failed$'; then
    echo "FAILED: conformance $label"
    status=1
  fi
}

run "0.1.16 --suite all" --suite all
run "alpha --requirements 2025-11-25" --alpha --requirements 2025-11-25
run "alpha --requirements 2026-07-28 (stateless)" --alpha --requirements 2026-07-28 -- -stateless
server=everything-omit2025 run "alpha --requirements 2026-07-28 (keel_omit2025)" --alpha --requirements 2026-07-28
exit $status
