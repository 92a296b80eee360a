#!/bin/bash
# What traces over OTLP cost a gateway: one SQLite replica (the release build:
# `cargo build --release -p gatehouse-cli -p gatehouse-bench`) under gh-gateload's closed
# loop, with OTEL=on its spans sent to a Rotel collector (blackhole exporter;
# `scripts/install-test-peers.sh collector`), with OTEL=off none. Run the two in turns:
#   for o in off on off on; do OTEL=$o bench/otel_ab.sh --calls 20000; done
# CALLERS (16) callers; the collector on 127.0.0.1:14318.
set -euo pipefail
RP=
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
EXE="$TARGET/release/gatehouse"
LOAD="$TARGET/release/gh-gateload"
ROTEL="$ROOT/target/peers/collector/bin/rotel-agent"
W=$(mktemp -d)
$LOAD --write-tokens $W/tokens.json --callers "${CALLERS:-16}" >/dev/null
cat > $W/servers.json <<JSON
{"mcpServers": {"support": {"command": "$EXE", "args": ["serve", "support"],
   "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"}}},
 "gatehouse": {"rules": [
   {"tool": "support__get_ticket", "when": {"pointer": "/ticket_id", "glob": "T-9*"}, "decision": "deny", "reason": "archived tickets are not read"},
   {"tool": "support__get_ticket", "when": {"pointer": "/ticket_id", "equals": "T-30001"}, "decision": "ask"},
   {"tool": "support__*", "decision": "allow"}],
   "gatewayNames": "unprefixed", "ledger": {"path": "$W/ledger.jsonl"}}}
JSON
ENVS=()
if [ "${OTEL:-off}" = on ]; then
  $ROTEL start --exporter blackhole --otlp-http-endpoint 127.0.0.1:14318 --otlp-grpc-endpoint 127.0.0.1:14317 > $W/rotel.log 2>&1 &
  RP=$!
  sleep 0.5
  ENVS=(env OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:14318)
fi
"${ENVS[@]}" $EXE gateway --config $W/servers.json --state $W/state.db --http 127.0.0.1:0 --tokens $W/tokens.json -q 2> $W/gw.log &
GW=$!
for i in $(seq 100); do grep -q "http://" $W/gw.log 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o "http://127.0.0.1:[0-9]*/mcp" $W/gw.log | head -1)
$LOAD --urls "$URL" --pids $GW --callers "${CALLERS:-16}" "$@"
kill $GW; wait $GW 2>/dev/null || true
grep -i "did not reach" $W/gw.log || true
if [ -n "$RP" ]; then kill "$RP"; fi
rm -rf $W
