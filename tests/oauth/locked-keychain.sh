#!/usr/bin/env bash
# tests/oauth/locked-keychain.sh COMMAND...: run COMMAND with a real Secret Service whose
# default collection is locked. Run it on a session bus of its own, one that starts nothing
# by activation (dbus-run-session --config-file=tests/oauth/session-bus.conf --): Debian's
# gnome-keyring starts on that bus with a new "login" collection (unlocked with a
# throwaway password, which creates it), the collection is locked again through the
# Secret Service's own Lock call, and COMMAND runs against it. The keyrings live under
# $XDG_DATA_HOME/keyrings, so each test's data folder has its own. Every wait is bounded.
set -euo pipefail
[ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] || { echo "no session bus: run under dbus-run-session" >&2; exit 2; }
runtime="$(mktemp -d)"
daemon=""
# The daemon forks away from this script: it is stopped by its id, which the bus knows.
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; rm -rf "$runtime"' EXIT
export XDG_RUNTIME_DIR="$runtime"
printf 'throwaway' | gnome-keyring-daemon --unlock --components=secrets >/dev/null
call() {
  dbus-send --session --dest=org.freedesktop.secrets --print-reply "$@"
}
# The daemon takes its name on the bus a moment after it forks: wait for it (10 s at most).
for _ in $(seq 100); do
  dbus-send --session --dest=org.freedesktop.DBus --print-reply /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null \
    | grep -q 'boolean true' && break
  sleep 0.1
done
daemon="$(dbus-send --session --dest=org.freedesktop.DBus --print-reply /org/freedesktop/DBus \
  org.freedesktop.DBus.GetConnectionUnixProcessID string:org.freedesktop.secrets \
  | awk '/uint32/ {print $2}')"
login=/org/freedesktop/secrets/collection/login
call /org/freedesktop/secrets org.freedesktop.Secret.Service.Lock "array:objpath:$login" >/dev/null
call "$login" org.freedesktop.DBus.Properties.Get string:org.freedesktop.Secret.Collection \
  string:Locked | grep -q 'boolean true' || { echo "the login collection did not lock" >&2; exit 2; }
"$@"
