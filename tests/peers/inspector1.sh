#!/usr/bin/env bash
# inspector1.sh TARGET... --method M [opts] [-- server args]
# The inspector's CLI 1.0.3 (TS SDK 1.32.2; `initialize` only, so revision <= 2025-11-25).
# It must run from its own build/ folder (it looks for ../package.json relative to the
# working directory), so give absolute paths. The server inherits this environment.
# Exit 0 even when the tool returns isError: read the JSON it prints.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PEERS="${GATEHOUSE_PEERS:-$here/../../target/peers}"
build="$PEERS/inspector-cli/node_modules/@modelcontextprotocol/inspector-cli/build"
[ -f "$build/index.js" ] || { echo "inspector-cli 1.0.3 is missing: run scripts/install-test-peers.sh inspector_cli" >&2; exit 127; }
cd "$build"
exec node index.js "$@"
