#!/usr/bin/env bash
# `make run`: gpuinv with the demo fleet on its embedded SQLite database,
# plus simulated GPU hosts running the real agent against the stand-in NVML,
# and 30 days of their history, loaded in the background (raw samples are
# kept 35 days here, so the whole history stays).
set -euo pipefail
cd "$(dirname "$0")/.."
listen=${LISTEN:-127.0.0.1:8080}
dir=build/demo
mkdir -p "$dir"
# The history's record (its end, whether it is loaded) belongs to the database.
[ -e "$dir/gpuinv.db" ] || rm -f "$dir/agents/history.json"
[ -s "$dir/admin-password" ] || (umask 077; head -c 18 /dev/urandom | base64 | tr '+/' 'xy' > "$dir/admin-password")
token=demo-admin-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
GPUINV_ADMIN_PASSWORD="$(cat "$dir/admin-password")" GPUINV_ADMIN_TOKEN="$token" \
  build/gpuinv serve --demo --db "$dir/gpuinv.db" --listen "$listen" --retain-samples-days 35 > "$dir/serve.out" &
server=$!
agents=
cleanup() {
  [ -n "$agents" ] && kill "$agents" 2>/dev/null || true
  kill "$server" 2>/dev/null || true
  # The server finishes the requests in flight; a rollup over the whole
  # history may take minutes, and the demo need not wait for it (each
  # rollup chunk is its own transaction: a stop loses only that chunk).
  for _ in $(seq 150); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$server" 2>/dev/null; then
    echo "gpuinv: stopping the server in the middle of a long request (the usage rollup resumes next time)"
    kill -9 "$server" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM
for _ in $(seq 100); do grep -q listening "$dir/serve.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$dir/serve.out")
[ -n "$url" ] || { echo "gpuinv did not start"; exit 1; }
# Tokens travel in the environment and in private files, never on a command
# line, where `ps` would show them to every user of the machine.
GPUINV_DEMO_TOKEN="$token" node scripts/demo-agents.mjs "$url" build "$dir/agents" "${DEMO_HOSTS:-12}" &
agents=$!
echo "gpuinv: dashboard at $url/"
echo "gpuinv: sign in as user 'admin' with password '$(cat "$dir/admin-password")'"
echo "gpuinv: (the password is kept in $dir/admin-password)"
echo "gpuinv: press Ctrl-C to stop the server and the simulated hosts. $dir keeps the"
echo "gpuinv: database, the password, and the agents' logs, spools and token files;"
echo "gpuinv: the next 'make run' reuses them, 'rm -rf $dir' starts afresh."
wait "$server"
