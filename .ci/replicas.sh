#!/usr/bin/env bash
# Three examples/everything replicas sharing PostgreSQL behind haproxy
# (round-robin; 2025 sessions stuck to their replica by Mcp-Session-Id):
# TestReplicasBehindHAProxy checks tasks followed, answered and cancelled
# through other replicas, a listen stream seeing a change made through
# another replica, a killed runner's task failed within the lease timeout,
# a single-use state refused on its second use, a 2025 session's
# affinity and the Client's recovery when its replica dies, and runs the
# 2026-07-28 conformance suite and the 2025 one (--suite all, sessions
# stuck to their replicas) through the balancer (0 failed).
#
# Needs KEEL_TEST_POSTGRES_DSN (eval "$(.ci/postgres.sh)"); installs
# haproxy with .ci/haproxy.sh when it is missing. The conformance suite is
# copied from KEEL_SHARED (default ../shared) as .ci/conformance.sh does;
# when it or node is missing the script fails under CI (CI=true or
# KEEL_REQUIRE_CONFORMANCE=1) and only warns otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
shared=${KEEL_SHARED:-$root/../shared}
: "${KEEL_TEST_POSTGRES_DSN:?set it first: eval \"\$(.ci/postgres.sh)\"}"

KEEL_HAPROXY=$(.ci/haproxy.sh)
export KEEL_HAPROXY

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -x "$shared/tools/conformance/run-conformance.sh" ] && command -v node >/dev/null; then
  cp -r "$shared/tools/conformance" "$work/conformance"
  chmod -R u+w "$work/conformance"
  export KEEL_CONFORMANCE=$work/conformance/run-conformance.sh
elif [ "${CI:-}" = true ] || [ "${KEEL_REQUIRE_CONFORMANCE:-}" = 1 ]; then
  # Under CI the suite's "0 failed" must not vanish with a missing tool.
  echo "FAILED: replicas.sh: no conformance suite at $shared/tools/conformance or no node (CI=true or KEEL_REQUIRE_CONFORMANCE=1 requires them)" >&2
  exit 1
else
  echo "replicas.sh: no conformance suite (or node): the suite does not run through the balancer" >&2
fi
cd examples/everything
rc=0
go test -count=1 -run '^TestReplicasBehindHAProxy$' -v . >"$work/replicas.log" 2>&1 || rc=$?
# The replicas' logs are printed only when the test fails.
if [ $rc -ne 0 ]; then
  cat "$work/replicas.log"
  echo "FAILED: the replica test"
  exit 1
fi
grep -E '^(--- |\s+--- |ok|\s+replicas_test)' "$work/replicas.log"
