#!/usr/bin/env bash
# Assets at scale, on SQLite and then on PostgreSQL (the same database
# moved with `gpuinv db copy`):
#   1. the asset list with filters and the lifecycle board under wrk with
#      32 connections, beside nginx serving the same bytes as static files;
#   2. `gpuinv audit verify` over the audit trail, beside `sha256sum` of the
#      very bytes the verification hashes (bench/assets_gen.py writes them).
# Usage: bench/assets.sh [ASSETS] [EVENTS]   (default 100000 1000000)
# Environment: BENCH_DURATION=15 (seconds per wrk run), BENCH_CONNECTIONS=32,
#   BENCH_PG=1 (0: SQLite only), GPUINV=build/gpuinv (a Release build),
#   BENCH_BEFORE=PATH (another gpuinv binary, such as main's: measured after
#   GPUINV on each store's same database, its lines marked "binary":"before",
#   each page's bytes compared with GPUINV's).
# Prints one line per measure and writes bench/results/assets-<date>.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
assets=${1:-100000}
events=${2:-1000000}
dur=${BENCH_DURATION:-15}
conns=${BENCH_CONNECTIONS:-32}
bin=${GPUINV:-build/gpuinv}
use_pg=${BENCH_PG:-1}
before=${BENCH_BEFORE:-}
pg_sh=tests/lib/pg.sh
for tool in wrk nginx sqlite3 curl python3 sha256sum bc; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "bench: $bin not found (make build)" >&2; exit 1; }
[ -z "$before" ] || [ -x "$before" ] || { echo "bench: $before not found" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-assets.XXXXXX")
chmod 755 "$work"
pid="" ngx_pid="" pg_dir=""
cleanup() {
  set +e
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$ngx_pid" ] && kill -QUIT "$ngx_pid" 2>/dev/null && wait "$ngx_pid" 2>/dev/null
  [ -n "$pg_dir" ] && "$pg_sh" stop "$pg_dir" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
token=bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
export BENCH_TOKEN=$token
out_file=bench/results/assets-$(date -u +%F).jsonl
mkdir -p bench/results

start() { # start DB [BINARY]: the server on a database, its URL in $url
  : >"$work/out"
  GPUINV_ADMIN_TOKEN=$token "${2:-$bin}" serve --db "$1" --listen 127.0.0.1:0 --no-rollup \
    >"$work/out" 2>>"$work/err" &
  pid=$!
  for _ in $(seq 300); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
  [ -n "$url" ] || { echo "bench: gpuinv did not start: $(tail -3 "$work/err")" >&2; exit 1; }
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
record() { echo "$1" | tee -a "$out_file"; }
# CPU seconds (user + system) a command used, and its wall seconds: "cpu wall".
timed() {
  local t
  t=$( { /usr/bin/time -f '%U %S %e' "$@" >/dev/null 2>"$work/timed.err"; } 2>&1 || true)
  tail -1 "$work/timed.err" | awk '{ printf "%.2f %.2f", $1 + $2, $3 }'
}

# The fleet straight into a migrated database file.
start "$work/base.db"
stop
echo "bench: generating $assets assets and $events events"
python3 bench/assets_gen.py "$work/base.db" "$assets" "$events" "$work/chain.bin"
chain_mb=$(du -m "$work/chain.bin" | cut -f1)
# Rows written straight into the database have no stored document yet: the
# server's scheduler renders them on its first tick. Wait for that, so that
# the runs below measure the list as it is once every asset was written
# through gpuinv.
start "$work/base.db"
t0=$(date +%s.%N)
until [ "$(sqlite3 "$work/base.db" 'SELECT COUNT(*) FROM assets WHERE doc IS NULL')" = 0 ]; do
  sleep 0.5
done
stop
record "{\"store\":\"sqlite\",\"measure\":\"documents rendered\",\"assets\":$assets,\"wall_s\":$(echo "$(date +%s.%N) - $t0" | bc),\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"

# nginx serving the files under $work/www, on a free port.
mkdir -p "$work/www" "$work/nginx"
ngx_port=""
start_nginx() {
  local p
  for _ in 1 2 3 4 5 6; do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    default_type application/json;
    keepalive_requests 100000000;
    server { listen 127.0.0.1:$p; root $work/www; }
}
EOF
    nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" &
    ngx_pid=$!
    for _ in $(seq 30); do
      curl -s -o /dev/null "http://127.0.0.1:$p/" && { ngx_port=$p; return; }
      sleep 0.1
    done
    kill -QUIT "$ngx_pid" 2>/dev/null || true
    ngx_pid=""
  done
  echo "bench: nginx did not start" >&2
  exit 1
}

# CPU clock ticks (user + system) used so far by the server and, on
# PostgreSQL, by every process of the cluster (the backends serving it).
cpu_ticks() {
  local pids=$pid p t=0
  if [ -n "$pg_dir" ] && [ "$cur_store" = postgresql ]; then
    p=$(head -1 "$pg_dir/data/postmaster.pid")
    pids="$pids $p $(cat "/proc/$p/task/$p/children")"
  fi
  for p in $pids; do
    [ -r "/proc/$p/stat" ] || continue
    t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
  done
  echo "$t"
}
# "rps p50_ms p99_ms non2xx cpu_ms_per_request" of one wrk run (the CPU:
# gpuinv's and, on PostgreSQL, the database's; 0 for nginx).
wrk_run() {
  local t0 t1 res
  wrk -t1 -c"$conns" -d2s -s bench/wrk-auth.lua "$1" >/dev/null
  t0=$(cpu_ticks)
  res=$(wrk -t1 -c"$conns" -d"${dur}s" -s bench/wrk-auth.lua "$1" | sed -n 's/^RESULT //p')
  t1=$(cpu_ticks)
  echo "$res ticks=$((t1 - t0)) hz=$(getconf CLK_TCK)" | tr ' ' '\n' | awk -F= '{ v[$1] = $2 } END {
      printf "%.0f %.2f %.2f %d %.2f", v["rps"], v["p50_us"] / 1000, v["p99_us"] / 1000, v["non2xx"],
        v["requests"] ? v["ticks"] * 1000 / v["hz"] / v["requests"] : 0 }'
}

warranty=$(date -u -d "+30 days" +%F)
paths=(
  "list|/api/v1/assets?limit=100"
  "list kind+stage+datacenter|/api/v1/assets?kind=gpu&stage=spare&datacenter=2&limit=100"
  "list warranty_before|/api/v1/assets?warranty_before=$warranty&limit=100"
  "list model+q|/api/v1/assets?model=NVIDIA%20L40S&q=SN0000&limit=100"
  "lifecycle board|/api/v1/asset-stages"
)

cur_store=""
measure() { # store [before]: wrk every path against gpuinv, then nginx with the same bytes
  local store=$1 which=${2:-} i name path r n f tag=""
  cur_store=$store
  start_nginx_once
  i=0
  for entry in "${paths[@]}"; do
    name=${entry%%|*} path=${entry#*|}
    i=$((i + 1))
    f=$work/www/p$i.json
    [ -z "$which" ] || f=$work/before.json
    curl -sf -H "Authorization: Bearer $token" -o "$f" "$url$path" ||
      { echo "bench: GET $path failed" >&2; exit 1; }
    n=$(wc -c <"$f")
    if [ -n "$which" ]; then # the before binary: does it answer the same bytes?
      tag=",\"binary\":\"before\",\"same_bytes\":$(cmp -s "$f" "$work/www/p$i.json" && echo true || echo false)"
    fi
    read -r rps p50 p99 bad cpu <<<"$(wrk_run "$url$path")"
    read -r nrps np50 np99 _ <<<"$(wrk_run "http://127.0.0.1:$ngx_port/p$i.json")"
    record "{\"store\":\"$store\",\"measure\":\"$name\"$tag,\"assets\":$assets,\"bytes\":$n,\"connections\":$conns,\"rps\":$rps,\"p50_ms\":$p50,\"p99_ms\":$p99,\"non2xx\":$bad,\"cpu_ms_per_request\":$cpu,\"nginx_rps\":$nrps,\"nginx_p50_ms\":$np50,\"nginx_p99_ms\":$np99,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"
  done
}
start_nginx_once() { [ -n "$ngx_port" ] || start_nginx; }

verify() { # store db
  local store=$1 db=$2 v s
  v=$(timed "$bin" audit verify --db "$db")
  s=$(timed sha256sum "$work/chain.bin")
  "$bin" audit verify --db "$db" >/dev/null || { echo "bench: the chain does not verify on $store" >&2; exit 1; }
  record "{\"store\":\"$store\",\"measure\":\"audit verify\",\"events\":$events,\"bytes_mb\":$chain_mb,\"verify_cpu_s\":${v% *},\"verify_wall_s\":${v#* },\"sha256sum_cpu_s\":${s% *},\"sha256sum_wall_s\":${s#* },\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"
}

verify sqlite "$work/base.db"
start "$work/base.db"
measure sqlite
stop
if [ -n "$before" ]; then
  start "$work/base.db" "$before"
  measure sqlite before
  stop
fi

if [ "$use_pg" = 1 ]; then
  pg_dir=$work/pg
  "$pg_sh" start "$pg_dir" >"$work/pg.log" 2>&1 || { echo "bench: PostgreSQL did not start" >&2; exit 1; }
  pg=$(cat "$pg_dir/conninfo")
  "$bin" db copy --from "$work/base.db" --to "$pg" >"$work/copy.log" 2>&1 ||
    { echo "bench: db copy failed: $(tail -3 "$work/copy.log")" >&2; exit 1; }
  verify postgresql "$pg"
  start "$pg"
  measure postgresql
  stop
  if [ -n "$before" ]; then
    start "$pg" "$before"
    measure postgresql before
    stop
  fi
fi
