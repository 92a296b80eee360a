#!/usr/bin/env bash
# tests/conformance/server-leg.sh REV [HARNESS ARGS...]  -- the server leg: start
# target/debug/conformance-fixture on a free loopback port, run the harness's server
# scenarios of requirement set REV (2026-07-28 or 2025-11-25) against it with the
# expected-failures file of that revision, stop the fixture, exit with the harness's code.
#   tests/conformance/server-leg.sh 2026-07-28 -o /tmp/conformance-2026
#   tests/conformance/server-leg.sh 2026-07-28 --scenario caching      (one scenario, no baseline)
# CONFORMANCE_FIXTURE overrides the fixture binary.
set -euo pipefail
. "$(dirname "$0")/leg.sh"
fixture="${CONFORMANCE_FIXTURE:-$root/target/debug/conformance-fixture}"
[ -x "$fixture" ] || { echo "server-leg.sh: $fixture is missing; cargo build -p gatehouse-conformance" >&2; exit 3; }
log="$(mktemp)"
"$fixture" --listen 127.0.0.1:0 2>"$log" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$log"; }
trap cleanup EXIT
url=""
for _ in $(seq 1 100); do
  url="$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$log")"
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 3; }
  sleep 0.1
done
[ -n "$url" ] || { echo "server-leg.sh: the fixture did not start" >&2; cat "$log" >&2; exit 3; }
set +e
"$here/conformance.sh" server --url "$url" "${select[@]}" "$@"
rc=$?
set -e
exit "$rc"
