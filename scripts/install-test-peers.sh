#!/usr/bin/env bash
# Installs the foreign peers the tests drive. Idempotent: a peer already in place is left
# as it is. One function per peer; `main` at the bottom calls them in order.
#
#   scripts/install-test-peers.sh            # every peer
#   scripts/install-test-peers.sh browser    # only the named ones
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "[install-test-peers] $*" >&2; }

# Run apt-get update only when the package has no install candidate yet.
apt_install() {
  local pkg="$1"
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    log "$pkg: already installed"
    return 0
  fi
  if ! apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [^(]'; then
    log "$pkg: no candidate yet, running apt-get update"
    apt-get update
  fi
  log "$pkg: installing"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg"
}

# ---------------------------------------------------------------------------------------
# browser: Debian's Chromium and the npm project in tests/browser (playwright-core, driven
# by crates/cli/tests/lab_browser.rs). Playwright's own browser download is never used.
# ---------------------------------------------------------------------------------------
install_browser() {
  apt_install chromium
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs
    apt_install npm
  fi
  (
    cd tests/browser
    export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
    if [ -f package-lock.json ] && [ -f node_modules/playwright-core/package.json ] && node -e '
        const want = require("./package-lock.json").packages["node_modules/playwright-core"].version;
        const have = require("./node_modules/playwright-core/package.json").version;
        process.exit(want === have ? 0 : 1);' 2>/dev/null; then
      log "tests/browser: playwright-core already installed as locked"
    elif [ -f package-lock.json ]; then
      npm ci --no-audit --no-fund
    else
      npm install --no-audit --no-fund
    fi
  )
}

# (Other peers go here, each as its own install_<peer> function, listed in PEERS.)

PEERS=(browser)

main() {
  local wanted=("$@")
  if [ ${#wanted[@]} -eq 0 ]; then
    wanted=("${PEERS[@]}")
  fi
  for peer in "${wanted[@]}"; do
    if ! declare -F "install_$peer" >/dev/null; then
      log "unknown peer: $peer (known: ${PEERS[*]})"
      exit 2
    fi
    "install_$peer"
  done
}

main "$@"
