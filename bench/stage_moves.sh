#!/usr/bin/env bash
# The server's CPU time per stage move (POST /assets/{tag}/stage): ASSETS assets never linked to
# an asset manager are moved active -> spare, then spare -> active, one request at a time. Three
# servers, each on a fresh SQLite database: REF_BIN (the reference, e.g. the main branch's
# build/gpuinv) and build/gpuinv without any push source, and build/gpuinv with a NetBox push
# source that serves another data center (so every move runs the lookup check of asset_sync_queue
# and queues nothing; nothing is sent). CPU is utime + stime from /proc, so the figure does not
# depend on curl's own start-up. Usage: bench/stage_moves.sh [ASSETS] [REF_BIN] [JSONL]; needs
# build/gpuinv and the sqlite3 CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
ref=${2:-build/gpuinv}
jsonl=${3:-}
work=$(mktemp -d)
pid=""
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
token=bench-token-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')

start() { # start BIN DB: the server on a database file, its URL in $url
  GPUINV_ADMIN_TOKEN=$token "$1" serve --db "$2" --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
cpu() { awk '{ printf "%.3f", ($14 + $15) / 100 }' "/proc/$pid/stat"; }
api() { curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }

# moves TO: every asset to stage TO, one request each; prints the server CPU ms per move
moves() {
  local c0 c1 bad
  c0=$(cpu)
  bad=$(for i in $(seq "$n"); do
    api -X POST -d "{\"stage\":\"$1\",\"reason\":\"bench\"}" "$url/api/v1/assets/BS-$i/stage"
  done | grep -vc '^200$' || true)
  c1=$(cpu)
  [ "$bad" = 0 ] || { echo "stage_moves: $bad moves to $1 failed" >&2; exit 1; }
  awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN { printf "%.3f", (b - a) * 1000 / n }'
}

# one run: BIN LABEL PUSH(0|1); prints "LABEL to_spare_ms to_active_ms"
run() {
  local db="$work/$2.db" now
  start "$1" "$db"
  api -X POST -d '{"name":"bench-dc","location":"x"}' "$url/api/v1/datacenters" >/dev/null
  api -X POST -d '{"name":"other-dc","location":"x"}' "$url/api/v1/datacenters" >/dev/null
  if [ "$3" = 1 ]; then
    api -X POST -d '{"name":"nb","kind":"netbox","enabled":false,"config":{"url":"http://127.0.0.1:9/","push":true,"push_sites":{"other-dc":1}}}' \
      "$url/api/v1/sources" >/dev/null
  fi
  stop
  now=$(date +%s)
  sqlite3 "$db" <<SQL
BEGIN;
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < $n)
INSERT INTO assets (tag, kind, serial, model, datacenter_id, stage, stage_since, source, created_at, updated_at)
  SELECT printf('BS-%d', i), 'server', printf('BSSER%06d', i), 'X', (SELECT id FROM datacenters WHERE name = 'bench-dc'),
         'active', $now, 'api', $now, $now FROM k;
COMMIT;
SQL
  start "$1" "$db"
  sleep 2 # the scheduler renders the asset documents first
  local s a
  s=$(moves spare)
  a=$(moves active)
  stop
  echo "$2 $s $a"
}

load=$(cut -d' ' -f1 /proc/loadavg)
date -u +"%F %T UTC, load $load, $n assets"
r1=$(run "$ref" reference 0)
r2=$(run build/gpuinv no_source 0)
r3=$(run build/gpuinv push_source 1)
printf '%-12s %14s %14s\n' server "to spare ms" "to active ms"
for r in "$r1" "$r2" "$r3"; do printf '%-12s %14s %14s\n' $r; done
if [ -n "$jsonl" ]; then
  set -- $r1 $r2 $r3
  printf '{"bench":"stage_moves","date":"%s","assets":%s,"load1":%s,"ref_spare_ms":%s,"ref_active_ms":%s,"spare_ms":%s,"active_ms":%s,"push_spare_ms":%s,"push_active_ms":%s}\n' \
    "$(date -u +%FT%TZ)" "$n" "$load" "$2" "$3" "$5" "$6" "$8" "$9" >>"$jsonl"
fi
