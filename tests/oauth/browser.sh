#!/usr/bin/env bash
# tests/oauth/browser.sh URL: the browser of the OAuth end-to-end tests ($BROWSER), Debian's
# Chromium, headless, in its own profile. With as.mjs in AS_LOGIN=auto mode the sign-in and
# consent finish by themselves, so the browser only follows the authorization server's
# redirects back to the host's listener on 127.0.0.1. Each URL is appended to
# $OAUTH_BROWSER_LOG, so a test can count the sign-ins that needed the browser; with
# OAUTH_BROWSER_ONLY_LOG=1 nothing is opened (the test answers the host's listener itself,
# as an attacker would). Its own passwords stay in its profile (--password-store=basic): a
# keychain on the session bus, locked in a test, is the host's to meet, not the browser's.
set -euo pipefail
[ -n "${OAUTH_BROWSER_LOG:-}" ] && printf '%s\n' "$1" >>"$OAUTH_BROWSER_LOG"
[ "${OAUTH_BROWSER_ONLY_LOG:-}" = 1 ] && exit 0
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}"
timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --password-store=basic \
  --user-data-dir="$profile" --dump-dom "$1" >/dev/null 2>&1
