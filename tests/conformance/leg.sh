# Sourced by client-leg.sh and server-leg.sh for their shared first steps. Sets `here`
# (this folder), `root` (the checkout), `rev` (the requirement set: the leg's first
# argument, shifted off) and `select`, the harness arguments that pick the scenarios: the
# revision's requirements and expected failures, or with --scenario its spec version.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
leg="$(basename "$0")"
rev="${1:?usage: $leg 2026-07-28|2025-11-25 [harness args...]}"; shift
select=(--requirements "$rev" --expected-failures "$here/expected-failures.$rev.yml")
for arg in "$@"; do
  if [ "$arg" = --scenario ]; then select=(--spec-version "$rev"); fi
done
