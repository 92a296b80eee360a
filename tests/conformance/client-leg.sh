#!/usr/bin/env bash
# tests/conformance/client-leg.sh REV [HARNESS ARGS...]  -- the client leg: the harness's
# client scenarios of requirement set REV (2026-07-28 or 2025-11-25) run against
# target/debug/conformance-client, with the expected-failures file of that revision and
# a 60 s time limit per scenario (as the Python SDK's CI), exit with the harness's code.
#   tests/conformance/client-leg.sh 2026-07-28 -o /tmp/conformance-client-2026
#   tests/conformance/client-leg.sh 2026-07-28 --scenario request-metadata   (one, no baseline)
# CONFORMANCE_CLIENT overrides the client binary (its path must hold no spaces).
set -euo pipefail
. "$(dirname "$0")/leg.sh"
client="${CONFORMANCE_CLIENT:-$root/target/debug/conformance-client}"
[ -x "$client" ] || { echo "client-leg.sh: $client is missing; cargo build -p gatehouse-conformance" >&2; exit 3; }
case "$client" in *" "*) echo "client-leg.sh: the harness splits --command on spaces: $client" >&2; exit 3 ;; esac
exec "$here/conformance.sh" client --command "$client" --timeout 60000 "${select[@]}" "$@"
