#!/usr/bin/env bash
# conformance.sh ARGS...   the MCP conformance harness 0.2.0-alpha.12 on Node 22
# (it crashes on Node 20: fs.globSync). It speaks Streamable HTTP only, e.g.
#   conformance.sh list
#   conformance.sh server --url http://127.0.0.1:3000/mcp --requirements 2026-07-28
# The same as tests/conformance/conformance.sh, which it runs.
set -euo pipefail
exec "$(dirname "$0")/../conformance/conformance.sh" "$@"
