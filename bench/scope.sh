#!/usr/bin/env bash
# The cost of the data-center scope on the asset list: CPU per request of
# GET /api/v1/assets?limit=100 (SQLite) for the unconfined admin, with and
# without a data-center filter, for a token of one data center and for a
# token of two (the union, no filter), on ASSETS assets spread over four
# data centers. With GPUINV_REF=path the same runs are made with that
# binary first (the reference: a build without the scope filter).
# Usage: bench/scope.sh [ASSETS]   (default 100000)
# Environment: BENCH_DURATION=10 (seconds per wrk run), BENCH_CONNECTIONS=8,
# GPUINV=build/gpuinv, GPUINV_REF (optional).
set -euo pipefail
assets=${1:-100000}
dur=${BENCH_DURATION:-10}
conns=${BENCH_CONNECTIONS:-8}
bin=${GPUINV:-build/gpuinv}
ref=${GPUINV_REF:-}
for tool in wrk sqlite3 curl python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "bench: $bin not found (make build)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-scope.XXXXXX")
pid=""
cleanup() {
  set +e
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
admin=bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
out_file=bench/results/scope-$(date -u +%F).jsonl
mkdir -p bench/results

start() { # start BINARY DB: the server, its URL in $url
  : >"$work/out"
  GPUINV_ADMIN_TOKEN=$admin "$1" serve --db "$2" --listen 127.0.0.1:0 --no-rollup \
    >"$work/out" 2>>"$work/err" &
  pid=$!
  for _ in $(seq 300); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
  [ -n "$url" ] || { echo "bench: gpuinv did not start: $(tail -3 "$work/err")" >&2; exit 1; }
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
ticks() { sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }'; }
# "rps p99_ms non2xx cpu_ms_per_request" of one wrk run with token $2.
run() {
  local t0 t1 res
  BENCH_TOKEN=$2 wrk -t1 -c"$conns" -d2s -s bench/wrk-auth.lua "$1" >/dev/null
  t0=$(ticks)
  res=$(BENCH_TOKEN=$2 wrk -t1 -c"$conns" -d"${dur}s" -s bench/wrk-auth.lua "$1" |
    sed -n 's/^RESULT //p')
  t1=$(ticks)
  echo "$res ticks=$((t1 - t0)) hz=$(getconf CLK_TCK)" | tr ' ' '\n' | awk -F= '{ v[$1] = $2 } END {
      printf "%.0f %.2f %d %.3f", v["rps"], v["p99_us"] / 1000, v["non2xx"],
        v["requests"] ? v["ticks"] * 1000 / v["hz"] / v["requests"] : 0 }'
}
token() { # token NAME DCS_JSON: a viewer token confined to DCS_JSON
  curl -sf -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
    -d "{\"name\":\"$1\",\"role\":\"viewer\",\"datacenters\":$2}" "$url/api/v1/tokens" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
measure() { # measure LABEL BINARY
  local one two r
  cp "$work/base.db" "$work/run.db"
  start "$2" "$work/run.db"
  one=$(token one '[1]')
  two=$(token two '[1,2]')
  for c in "admin|$admin|" "admin, datacenter=1|$admin|&datacenter=1" "one data center|$one|" \
    "two data centers|$two|"; do
    IFS='|' read -r who tok q <<<"$c"
    read -r rps p99 non2xx cpu <<<"$(run "$url/api/v1/assets?limit=100$q" "$tok")"
    r="{\"binary\":\"$1\",\"who\":\"$who\",\"assets\":$assets,\"rps\":$rps,\"p99_ms\":$p99,"
    r="$r\"non2xx\":$non2xx,\"cpu_ms_per_request\":$cpu,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"
    echo "$r" | tee -a "$out_file"
  done
  stop
}

# The fleet straight into a migrated database, its documents rendered.
start "$bin" "$work/base.db"
stop
python3 bench/assets_gen.py "$work/base.db" "$assets" 1000 "$work/chain.bin"
start "$bin" "$work/base.db"
until [ "$(sqlite3 "$work/base.db" 'SELECT COUNT(*) FROM assets WHERE doc IS NULL')" = 0 ]; do
  sleep 0.5
done
stop
[ -n "$ref" ] && measure reference "$ref"
measure scope "$bin"
