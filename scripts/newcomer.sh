#!/usr/bin/env bash
# The newcomer path, timed (issue 28): what a person who brings six servers they already
# use goes through on day one. In a scratch folder with a HOME of its own (so empty npm and
# uv caches: ~/.npm and ~/.cache/uv), it adds the six servers with `gatehouse mcp add` in a
# project folder, lists them with `gatehouse mcp list`, then calls one tool of each with
# `gatehouse call`, and prints the seconds of each step. The first run downloads every
# package from the npm registry and PyPI; a second run in the same scratch folder is warm.
# No manual step; the only traffic besides the registries is loopback (the fetch server
# reads a page this script serves on 127.0.0.1).
#
#   scripts/newcomer.sh                   # cold, in a new scratch folder (kept; its path is printed)
#   scripts/newcomer.sh SCRATCH           # again in that folder: warm caches
#   GATEHOUSE=target/release/gatehouse scripts/newcomer.sh
#
# Needs: the gatehouse binary (GATEHOUSE, default target/release/gatehouse, else
# target/debug/gatehouse), npx (Node and npm), uvx (on the PATH, else the test peer
# target/peers/uv from `scripts/install-test-peers.sh uv`), git and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

gatehouse="${GATEHOUSE:-}"
if [ -z "$gatehouse" ]; then
  for built in target/release/gatehouse target/debug/gatehouse; do
    if [ -x "$built" ]; then gatehouse="$built"; break; fi
  done
fi
[ -n "$gatehouse" ] && [ -x "$gatehouse" ] || {
  echo "newcomer: no gatehouse binary: cargo build -p gatehouse-cli (or set GATEHOUSE)" >&2
  exit 2
}
gatehouse="$(cd "$(dirname "$gatehouse")" && pwd)/$(basename "$gatehouse")"
if ! command -v uvx >/dev/null 2>&1; then
  [ -x "$repo/target/peers/uv/bin/uvx" ] || {
    echo "newcomer: no uvx: run scripts/install-test-peers.sh uv" >&2
    exit 2
  }
  PATH="$repo/target/peers/uv/bin:$PATH"
fi
for program in npx git python3; do
  command -v "$program" >/dev/null 2>&1 || { echo "newcomer: $program is missing" >&2; exit 2; }
done

scratch="${1:-$(mktemp -d -t gatehouse-newcomer.XXXXXX)}"
mkdir -p "$scratch"
scratch="$(cd "$scratch" && pwd)"
if [ -d "$scratch/home/.npm" ] || [ -d "$scratch/home/.cache/uv" ]; then run=warm; else run=cold; fi

# A clean world: the scratch HOME, nothing of the person's configuration or caches.
export HOME="$scratch/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME XDG_CACHE_HOME GATEHOUSE_CONFIG \
  npm_config_cache NPM_CONFIG_CACHE UV_CACHE_DIR UV_TOOL_DIR
project="$scratch/project"
files="$scratch/files"
repository="$scratch/repository"
mkdir -p "$HOME" "$project" "$files"
rm -f "$project/.mcp.json"
echo "notes for day one" >"$files/notes.txt"
if [ ! -d "$repository/.git" ]; then
  git init -q "$repository"
  echo "# a scratch repository" >"$repository/README.md"
  git -C "$repository" add README.md
  git -C "$repository" -c user.name=newcomer -c user.email=newcomer@example.invalid \
    commit -q -m "first commit"
fi

# The page mcp-server-fetch reads, served on loopback.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 -m http.server --bind 127.0.0.1 --directory "$files" "$port" >/dev/null 2>&1 &
page_server=$!
trap 'kill "$page_server" 2>/dev/null || true' EXIT

cd "$project"
log="$scratch/newcomer-$run.log"
: >"$log"
total=0
failed=0
# step NAME COMMAND...: run it, its output to the log, and say its seconds.
step() {
  local name="$1"; shift
  local start end status=0
  start="$(date +%s.%N)"
  echo "\$ $*" >>"$log"
  "$@" >>"$log" 2>&1 || status=$?
  end="$(date +%s.%N)"
  local seconds
  seconds="$(python3 -c "print(f'{$end - $start:.1f}')")"
  total="$(python3 -c "print(f'{$total + $seconds:.1f}')")"
  if [ "$status" = 0 ]; then
    printf '%-52s %6s s\n' "$name" "$seconds"
  else
    printf '%-52s %6s s  FAILED (exit %s; see %s)\n' "$name" "$seconds" "$status" "$log"
    failed=$((failed + 1))
  fi
}

echo "newcomer path ($run), $gatehouse, in $scratch"
step "mcp add filesystem (npx)" "$gatehouse" mcp add filesystem -- npx -y @modelcontextprotocol/server-filesystem "$files"
step "mcp add memory (npx)" "$gatehouse" mcp add memory -- npx -y @modelcontextprotocol/server-memory
step "mcp add everything (npx)" "$gatehouse" mcp add everything -- npx -y @modelcontextprotocol/server-everything
# The fetch server refuses loopback addresses unless told otherwise; a person would fetch
# a public page, which this machine may not reach.
step "mcp add fetch (uvx)" "$gatehouse" mcp add fetch -- uvx mcp-server-fetch --allow-private-ips
step "mcp add git (uvx)" "$gatehouse" mcp add git -- uvx mcp-server-git --repository "$repository"
step "mcp add time (uvx)" "$gatehouse" mcp add time -- uvx mcp-server-time
step "mcp list (starts all six)" "$gatehouse" mcp list
step "call filesystem__list_directory" "$gatehouse" call --yes filesystem__list_directory "{\"path\": \"$files\"}"
step "call memory__read_graph" "$gatehouse" call --yes memory__read_graph
step "call everything__echo" "$gatehouse" call --yes everything__echo '{"message": "day one"}'
step "call fetch__fetch" "$gatehouse" call --yes fetch__fetch "{\"url\": \"http://127.0.0.1:$port/notes.txt\"}"
step "call git__git_status" "$gatehouse" call --yes git__git_status "{\"repo_path\": \"$repository\"}"
step "call time__get_current_time" "$gatehouse" call --yes time__get_current_time '{"timezone": "UTC"}'
printf '%-52s %6s s\n' "total" "$total"
echo "log: $log"
[ "$failed" = 0 ]
