#!/usr/bin/env bash
# python.sh SCRIPT ARGS...   the venv's Python, with the official MCP SDK (mcp 2.3.0), e.g.
#   tests/peers/python.sh tests/peers/py_mcp_client.py --mode legacy -- target/debug/gatehouse serve support
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PEERS="${GATEHOUSE_PEERS:-$here/../../target/peers}"
[ -x "$PEERS/pyvenv/bin/python" ] || { echo "the Python SDK is missing: run scripts/install-test-peers.sh python_sdk" >&2; exit 127; }
exec "$PEERS/pyvenv/bin/python" "$@"
