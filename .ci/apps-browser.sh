#!/usr/bin/env bash
# The MCP Apps browser test: headless Chromium loads the example host page
# (built with the ext-apps host bridge), which connects to examples/apps
# over streamable HTTP, renders the inventory view in a sandboxed iframe
# and forwards the view's tool calls (examples/apps/browsertest).
#
# Steps:
#   1. Chromium: Debian's chromium, installed with apt-get when missing
#      (KEEL_CHROMIUM names another binary).
#   2. The npm packages of examples/apps/web, pinned in its
#      package-lock.json (npm ci, a few seconds).
#   3. The bundle: web/build.mjs rebuilds the view and the host page into a
#      temporary directory; they must equal the committed examples/apps/dist
#      (else: cd examples/apps/web && npm ci && node build.mjs, and commit).
#   4. go test -run Browser in examples/apps/browsertest (a module of its
#      own, so chromedp stays out of keel's module graph).
#
# The screenshot of the rendered view is written to
# $KEEL_ARTIFACTS/apps-view.png (default: a directory under $TMPDIR).
# Where Chromium or node cannot be installed, the script says so and exits
# 0 without testing; KEEL_REQUIRE_BROWSER=1 makes that a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$(date +%s)

skip() {
  echo "apps-browser.sh: SKIPPED: $*" >&2
  echo "apps-browser.sh: to run the browser test, install Debian's chromium and node (apt-get install -y chromium nodejs npm) and run .ci/apps-browser.sh again" >&2
  [ "${KEEL_REQUIRE_BROWSER:-0}" = 1 ] && exit 1
  exit 0
}

apt_install() { # apt_install PACKAGE...: as root, with apt-get
  command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] || return 1
  if [ -z "${apt_updated:-}" ]; then
    apt-get update -qq >/dev/null || return 1
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

echo "== chromium"
chrome=${KEEL_CHROMIUM:-}
if [ -z "$chrome" ]; then
  chrome=$(command -v chromium || true)
  if [ -z "$chrome" ]; then
    echo "installing Debian's chromium"
    apt_install chromium || skip "chromium is not installed and apt-get could not install it"
    chrome=$(command -v chromium) || skip "apt-get installed no chromium binary"
  fi
fi
"$chrome" --version

echo "== node and the npm packages of examples/apps/web"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  apt_install nodejs npm || skip "node and npm are not installed and apt-get could not install them"
fi
node --version
web=$root/examples/apps/web
(cd "$web" && npm ci --no-audit --no-fund --loglevel=error)

echo "== the committed bundle is what web/build.mjs builds"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$web" && APPS_DIST="$out" node build.mjs)
for f in view.html host.html host.js; do
  if ! cmp -s "$out/$f" "$root/examples/apps/dist/$f"; then
    echo "examples/apps/dist/$f differs from what web/build.mjs builds: run (cd examples/apps/web && npm ci && node build.mjs) and commit dist/" >&2
    exit 1
  fi
done
echo "dist/ matches the sources"

echo "== go test -run Browser (examples/apps/browsertest)"
artifacts=${KEEL_ARTIFACTS:-${TMPDIR:-/tmp}/keel-artifacts}
mkdir -p "$artifacts"
(cd "$root/examples/apps/browsertest" &&
  go vet ./... &&
  KEEL_BROWSER_TEST=1 KEEL_CHROMIUM="$chrome" KEEL_APPS_SCREENSHOT="$artifacts/apps-view.png" \
    go test -count=1 -v -run Browser ./...)
echo "screenshot of the view: $artifacts/apps-view.png"
echo "== apps-browser.sh finished in $(( $(date +%s) - start )) s"
