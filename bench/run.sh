#!/usr/bin/env bash
# gpuinv benchmark: loads 50,000 resources through the CSV import, then
# measures, each next to a reference taken in the same run,
#   1. HTTP: DC overview and a filtered list page under wrk (reference:
#      nginx serving the same bytes as a static file);
#   2. server memory when idle after loading (reference: nginx);
#   3. start-up time on the loaded database (reference: sqlite3 CLI count);
#   4. import throughput (reference: sqlite3 CLI inserting the same rows in
#      one transaction).
# Writes bench/results/latest.json and latest.md and prints the table.
#
# With BENCH_STORE=postgresql the server runs on a throwaway PostgreSQL that
# the script starts itself (tests/lib/pg.sh) and the same measurements are made on it, with PostgreSQL's
# references: psql running the same INSERTs in one transaction (import) and
# psql's count(*) (start-up, to /readyz 200). The HTTP runs also measure a
# second server on SQLite loaded with the same rows, beside the one on
# PostgreSQL and nginx. Results: bench/results/latest-pg.json and .md.
#
# Usage: bench/run.sh   (from `make bench`, which builds build/gpuinv first)
# Environment:
#   BENCH_STORE=sqlite    or postgresql
#   BENCH_ROWS=50000      resources to load (at most 50,000 per import request)
#   BENCH_DURATION=20     seconds of each measured wrk run (after a 2 s warm-up)
#   BENCH_CONNECTIONS=32  wrk connections
#   BENCH_C1_DURATION=5   seconds of the extra single-connection gpuinv runs
#   BENCH_STARTS=10       start-up samples of each kind
#   BENCH_PIN=1           0: do not pin processes to CPUs
#   BENCH_KEEP=0          1: keep the temporary directory (database, logs)
#   GPUINV=build/gpuinv   binary to measure
set -euo pipefail
cd "$(dirname "$0")/.."

rows=${BENCH_ROWS:-50000}
dur=${BENCH_DURATION:-20}
conns=${BENCH_CONNECTIONS:-32}
starts=${BENCH_STARTS:-10}
c1dur=${BENCH_C1_DURATION:-5}
pin=${BENCH_PIN:-1}
bin=${GPUINV:-build/gpuinv}
store=${BENCH_STORE:-sqlite}
results=bench/results
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}

die() { echo "bench: $*" >&2; exit 1; }
for tool in wrk nginx sqlite3 curl awk taskset ss; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (scripts/deps.sh --bench installs it)"
done
[ -x "$bin" ] || die "$bin not found; build it first (make build)"
[ "$rows" -ge 30 ] && [ "$rows" -le 50000 ] || die "BENCH_ROWS must be 30..50000"
case "$store" in
  sqlite) out_name=latest ;;
  postgresql | postgres | pg)
    store=postgresql out_name=latest-pg
    command -v psql >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 && [ -x "$pg_bin/postgres" ] ||
      die "PostgreSQL 15 or python3 is missing (scripts/deps.sh --bench installs them)"
    pg_sh=tests/lib/pg.sh
    ;;
  *) die "BENCH_STORE must be sqlite or postgresql" ;;
esac

# Two CPUs: the measured server (and nginx, and the sqlite3 reference) get
# CPU 0; this script, curl and wrk get CPU 1, so the load generator never
# takes time from the server it measures.
ncpu=$(nproc)
if [ "$pin" = 1 ] && [ "$ncpu" -ge 2 ]; then
  srv_cpu=(taskset -c 0)
  taskset -cp 1 $$ >/dev/null
  pinning="server, nginx and sqlite3 on CPU 0; wrk, curl and this script on CPU 1"
  [ "$store" = sqlite ] || pinning="servers, postgres, nginx, psql on CPU 0; wrk, curl and this script on CPU 1"
else
  srv_cpu=()
  pinning="none"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-bench.XXXXXX")
chmod 755 "$tmp" # nginx workers may run as an unprivileged user
srv_pid="" ngx_pid="" sq_pid="" pg_dir=""
cleanup() {
  set +e # stop everything, whatever each one's exit status
  [ -n "$srv_pid" ] && kill -TERM "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
  [ -n "$sq_pid" ] && kill -TERM "$sq_pid" 2>/dev/null && wait "$sq_pid" 2>/dev/null
  [ -n "$ngx_pid" ] && kill -QUIT "$ngx_pid" 2>/dev/null && wait "$ngx_pid" 2>/dev/null
  [ -n "$pg_dir" ] && "$pg_sh" stop "$pg_dir"
  if [ "${BENCH_KEEP:-0}" = 1 ]; then
    echo "bench: kept $tmp"
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

token="bench-$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy')"
export BENCH_TOKEN=$token
auth=(-H "Authorization: Bearer $token")
sqlite_db=$tmp/gpuinv.db
db=$sqlite_db

# On PostgreSQL: the server's database "gpuinv" and the reference's "ref"
# on one throwaway cluster, its processes on the server's CPU (backends
# started later inherit the postmaster's affinity).
pg_url() { local c; c=$(cat "$pg_dir/conninfo"); echo "${c/@\//@/$1}"; }
if [ "$store" = postgresql ]; then
  pg_dir=$tmp/pg
  "$pg_sh" start "$pg_dir" >"$tmp/pg-start.log" 2>&1 || die "PostgreSQL did not start: $(tail -5 "$tmp/pg-start.log")"
  db=$(pg_url gpuinv)
  psql -X -q -v ON_ERROR_STOP=1 "$db" -c 'CREATE DATABASE ref' || die "CREATE DATABASE ref"
  pg_pid=$(head -1 "$pg_dir/data/postmaster.pid")
  if [ "${#srv_cpu[@]}" -gt 0 ]; then
    for p in $pg_pid $(cat "/proc/$pg_pid/task/$pg_pid/children"); do taskset -pc 0 "$p" >/dev/null 2>&1 || true; done
  fi
fi
# One value from the server's database, as text.
dbq() {
  if [ "$store" = postgresql ]; then psql -X -At -v ON_ERROR_STOP=1 "$db" -c "$1"; else sqlite3 "$db" "$1"; fi
}

# ms between two $EPOCHREALTIME stamps
elapsed_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) * 1000 }'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
vm_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
only_listener() { # port pid: the port must have exactly one listener, ours
  local n
  n=$(ss -ltnH "( sport = :$1 )" | wc -l)
  [ "$n" = 1 ] || die "port $1 has $n listeners; another process shares it"
}

# Starts gpuinv on $1 (default $db) with an ephemeral port; sets srv_pid and srv_port.
start_server() {
  local out=$tmp/serve.out line=""
  : >"$out"
  GPUINV_ADMIN_TOKEN=$token "${srv_cpu[@]}" "$bin" serve --db "${1:-$db}" --listen 127.0.0.1:0 \
    --max-body $((64 << 20)) >"$out" 2>>"$tmp/serve.err" &
  srv_pid=$!
  until [[ $line == *listening* ]]; do
    kill -0 "$srv_pid" 2>/dev/null || die "gpuinv exited: $(tail -3 "$tmp/serve.err")"
    read -r line <"$out" || true
  done
  srv_port=${line##*:}
  srv_port=${srv_port%/}
}
stop_server() {
  kill -TERM "$srv_pid"
  wait "$srv_pid" || true
  srv_pid=""
}
# One GET of $probe (/healthz; /readyz on PostgreSQL, where it answers 200
# once the database does) over bash's /dev/tcp (no process started); true on 200.
probe=/healthz
[ "$store" = sqlite ] || probe=/readyz
healthz() {
  local status=""
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$probe" >&3
  read -r status <&3 || true
  exec 3<&-
  [[ $status == *" 200 "* ]]
}

echo "bench: $store, $rows resources, wrk ${dur}s x $conns connections; pinning: $pinning"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- data ----
awk -v n="$rows" -v out="$tmp" -f bench/gen.awk >"$tmp/gen.txt"
echo "bench: generated $(cat "$tmp/gen.txt")"
nservers=$(($(wc -l <"$tmp/servers.csv") - 1))

# ---- 4. import through the API ----
# Creates the three data centers and imports both CSV files through the
# server at $base, whose database dbq reads; sets import_s (curl's
# time_total of each request), import_total and import_rps.
import_rows() {
  local dc part res
  for dc in fra1 ams2 iad3; do
    curl -sf "${auth[@]}" -H 'Content-Type: application/json' -o /dev/null \
      -d "{\"name\":\"$dc\",\"location\":\"bench\"}" "$base/api/v1/datacenters" ||
      die "cannot create data center $dc"
  done
  import_s=()
  for part in servers others; do
    res=$(curl -s "${auth[@]}" -H 'Content-Type: text/csv' --data-binary "@$tmp/$part.csv" \
      -o "$tmp/import-$part.json" -w '%{http_code} %{time_total}' "$base/api/v1/resources/import")
    [ "${res% *}" = 201 ] || die "import of $part.csv: HTTP ${res% *}: $(head -c 300 "$tmp/import-$part.json")"
    import_s+=("${res#* }")
    if [ "$part" = servers ]; then
      # others.csv names hosts by id: server k must be resource k.
      [ "$(dbq "SELECT min(id) || ' ' || max(id) FROM resources")" = "1 $nservers" ] ||
        die "servers did not get ids 1..$nservers"
    fi
  done
  import_total=$(awk -v a="${import_s[0]}" -v b="${import_s[1]}" 'BEGIN { printf "%.3f", a + b }')
  import_rps=$(awk -v n="$rows" -v t="$import_total" 'BEGIN { printf "%.0f", n / t }')
  [ "$(dbq 'SELECT count(*) FROM resources')" = "$rows" ] || die "row count after import"
}

if [ "$store" = postgresql ]; then
  # The SQLite server of the comparison, loaded with the same rows; it
  # idles until its HTTP runs.
  start_server "$sqlite_db"
  base=http://127.0.0.1:$srv_port
  only_listener "$srv_port"
  store=sqlite db=$sqlite_db import_rows
  sq_import_s=("${import_s[@]}") sq_import_total=$import_total sq_import_rps=$import_rps
  sq_pid=$srv_pid sq_port=$srv_port
  sq_base=$base
  echo "bench: SQLite server for the comparison loaded (${sq_import_total}s, $sq_import_rps rows/s)"
fi
start_server
base=http://127.0.0.1:$srv_port
only_listener "$srv_port"
import_rows

if [ "$store" = sqlite ]; then
  # Reference: the same rows as INSERTs in one transaction through the CLI,
  # into the same schema with the server's pragmas.
  ref=$tmp/ref.db
  cat src/store/migrations/*.sql | sqlite3 "$ref"
  sqlite3 "$ref" "PRAGMA journal_mode=WAL;" >/dev/null
  sqlite3 "$ref" "INSERT INTO datacenters (name, created_at, updated_at) VALUES ('fra1',0,0), ('ams2',0,0), ('iad3',0,0);"
  t0=$EPOCHREALTIME
  "${srv_cpu[@]}" sqlite3 -cmd 'PRAGMA foreign_keys=ON' -cmd 'PRAGMA synchronous=NORMAL' "$ref" <"$tmp/rows.sql"
  t1=$EPOCHREALTIME
  ref_count=$(sqlite3 "$ref" 'SELECT count(*) FROM resources')
  ref_tool="sqlite3 CLI"
else
  # Reference: the same INSERTs in one transaction through psql, into a
  # database with the same schema (the PostgreSQL migrations, triggers
  # included) on the same cluster.
  ref=$(pg_url ref)
  cat src/store/migrations/pg/*.sql | psql -X -q -v ON_ERROR_STOP=1 "$ref" >/dev/null || die "reference schema"
  psql -X -q -v ON_ERROR_STOP=1 "$ref" \
    -c "INSERT INTO datacenters (name, created_at, updated_at) VALUES ('fra1',0,0), ('ams2',0,0), ('iad3',0,0)" ||
    die "reference data centers"
  t0=$EPOCHREALTIME
  "${srv_cpu[@]}" psql -X -q -v ON_ERROR_STOP=1 "$ref" <"$tmp/rows.sql" >/dev/null || die "reference import"
  t1=$EPOCHREALTIME
  ref_count=$(psql -X -At "$ref" -c 'SELECT count(*) FROM resources')
  ref_tool="psql"
fi
ref_import_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
ref_import_rps=$(awk -v n="$rows" -v t="$ref_import_s" 'BEGIN { printf "%.0f", n / t }')
[ "$ref_count" = "$rows" ] || die "reference row count"
echo "bench: import ${import_total}s ($import_rps rows/s); $ref_tool ${ref_import_s}s ($ref_import_rps rows/s)"

# ---- 2. memory, idle after loading ----
sleep 2
rss_load=$(vm_kb "$srv_pid" VmRSS)
hwm_load=$(vm_kb "$srv_pid" VmHWM)

# ---- 1. HTTP ----
ov_path=/api/v1/datacenters/2/overview
list_path="/api/v1/resources?datacenter=2&kind=server&state=available&limit=100"
www=$tmp/www
mkdir -p "$www" "$tmp/nginx"
curl -sf "${auth[@]}" -o "$www/overview.json" "$base$ov_path" || die "GET overview"
curl -sf "${auth[@]}" -o "$www/list.json" "$base$list_path" || die "GET list"
ov_bytes=$(wc -c <"$www/overview.json")
list_bytes=$(wc -c <"$www/list.json")
list_items=$(grep -o '"id":' "$www/list.json" | wc -l)
[ "$list_items" = 100 ] || die "the list page has $list_items items, not 100"
chmod -R a+rX "$www"
if [ "$store" = postgresql ]; then
  # Both stores hold the same rows: the same JSON (PostgreSQL writes its
  # documents with other spacing and key order) but for the import's time stamps.
  same_json() {
    python3 -c 'import json, sys
def norm(v):
    if isinstance(v, dict): return {k: (0 if k in ("created_at", "updated_at") else norm(x)) for k, x in v.items()}
    if isinstance(v, list): return [norm(x) for x in v]
    return v
a, b = (norm(json.load(open(f))) for f in sys.argv[1:3])
sys.exit(a != b)' "$1" "$2"
  }
  for ep in overview list; do
    if [ "$ep" = overview ]; then path=$ov_path; else path=$list_path; fi
    curl -sf "${auth[@]}" -o "$tmp/$ep-sqlite.json" "$sq_base$path" || die "GET $ep on SQLite"
    same_json "$www/$ep.json" "$tmp/$ep-sqlite.json" ||
      die "the $ep differs between PostgreSQL and SQLite (BENCH_KEEP=1 keeps both under $tmp)"
  done
  sq_list_bytes=$(wc -c <"$tmp/list-sqlite.json")
  sq_ov_bytes=$(wc -c <"$tmp/overview-sqlite.json")
fi

# nginx on a free port with its own config; everything under $tmp.
ngx_port=""
for try in 1 2 3 4 5 6 7 8; do
  p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
  [ -z "$(ss -ltnH "( sport = :$p )")" ] || continue
  cat >"$tmp/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    default_type application/json;
    sendfile on;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    server {
        listen 127.0.0.1:$p;
        root $www;
    }
}
EOF
  "${srv_cpu[@]}" nginx -p "$tmp/nginx" -e "$tmp/nginx/error.log" -c "$tmp/nginx/nginx.conf" &
  ngx_pid=$!
  for _ in $(seq 50); do
    curl -sf -o /dev/null "http://127.0.0.1:$p/overview.json" && { ngx_port=$p; break; }
    kill -0 "$ngx_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$ngx_port" ] && break
  kill -QUIT "$ngx_pid" 2>/dev/null || true
  wait "$ngx_pid" 2>/dev/null || true
  ngx_pid=""
done
[ -n "$ngx_port" ] || die "nginx did not start: $(tail -3 "$tmp/nginx/error.log" 2>/dev/null)"
only_listener "$ngx_port"
cmp -s "$www/list.json" <(curl -s "http://127.0.0.1:$ngx_port/list.json") || die "nginx serves other bytes"

# Runs wrk against a URL with $2 connections for $3 seconds; prints
# "rps p50_ms p90_ms p99_ms max_ms non2xx sockerr".
wrk_run() {
  local url=$1 c=$2 d=$3 out line
  wrk -t1 -c"$c" -d2s -s bench/wrk-auth.lua "$url" >/dev/null # warm-up
  out=$(wrk -t1 -c"$c" -d"${d}s" --latency -s bench/wrk-auth.lua "$url")
  echo "$out" >>"$tmp/wrk.log"
  line=$(echo "$out" | grep '^RESULT ')
  echo "$line" | awk '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "%.0f %.2f %.2f %.2f %.2f %d %d\n", v["rps"], v["p50_us"] / 1000, v["p90_us"] / 1000,
           v["p99_us"] / 1000, v["max_us"] / 1000, v["non2xx"], v["sockerr"] }'
}
declare -A http
for ep in overview list; do
  if [ "$ep" = overview ]; then path=$ov_path; else path=$list_path; fi
  echo "bench: wrk $ep: gpuinv"
  http[$ep.gpuinv]=$(wrk_run "$base$path" "$conns" "$dur")
  if [ "$store" = postgresql ]; then
    echo "bench: wrk $ep: gpuinv on SQLite"
    http[$ep.gpuinv_sqlite]=$(wrk_run "$sq_base$path" "$conns" "$dur")
  fi
  echo "bench: wrk $ep: nginx"
  http[$ep.nginx]=$(wrk_run "http://127.0.0.1:$ngx_port/$ep.json" "$conns" "$dur")
  # One connection: the time one request takes when nothing queues.
  echo "bench: wrk $ep: gpuinv, 1 connection, ${c1dur}s"
  http[$ep.gpuinv_c1]=$(wrk_run "$base$path" 1 "$c1dur")
done
for k in "${!http[@]}"; do
  set -- ${http[$k]}
  [ "$6" = 0 ] && [ "$7" = 0 ] || echo "bench: WARNING: $k had $6 non-2xx replies and $7 socket errors" >&2
done

rss_http=$(vm_kb "$srv_pid" VmRSS)
hwm_http=$(vm_kb "$srv_pid" VmHWM)
ngx_worker=$(cat "/proc/$ngx_pid/task/$ngx_pid/children" | awk '{ print $1 }')
ngx_rss=$(($(vm_kb "$ngx_pid" VmRSS) + $(vm_kb "$ngx_worker" VmRSS)))
if [ "$store" = postgresql ]; then
  # PostgreSQL's memory: the proportional set size (shared buffers split
  # between the processes that map them) of the postmaster and its children.
  pg_pss=0
  for p in $pg_pid $(cat "/proc/$pg_pid/task/$pg_pid/children"); do
    pg_pss=$((pg_pss + $(awk '$1 == "Pss:" { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
  done
  sq_rss=$(vm_kb "$sq_pid" VmRSS)
  kill -TERM "$sq_pid" && wait "$sq_pid" || true
  sq_pid=""
fi
stop_server

# ---- 3. start-up on the loaded database ----
start_ms=()
for _ in $(seq "$starts"); do
  t0=$EPOCHREALTIME
  start_server
  until healthz "$srv_port" 2>/dev/null; do :; done
  t1=$EPOCHREALTIME
  start_ms+=("$(elapsed_ms "$t0" "$t1")")
  stop_server
done
ref_ms=()
for _ in $(seq "$starts"); do
  t0=$EPOCHREALTIME
  if [ "$store" = sqlite ]; then
    "${srv_cpu[@]}" sqlite3 "$db" 'SELECT count(*) FROM resources' >/dev/null
  else
    "${srv_cpu[@]}" psql -X -At "$db" -c 'SELECT count(*) FROM resources' >/dev/null
  fi
  t1=$EPOCHREALTIME
  ref_ms+=("$(elapsed_ms "$t0" "$t1")")
done
start_med=$(echo "${start_ms[*]}" | median)
ref_med=$(echo "${ref_ms[*]}" | median)

# Memory of a fresh server on the loaded database after one request of each
# kind: what a restarted server holds, without the import's peak.
start_server
base=http://127.0.0.1:$srv_port
curl -sf "${auth[@]}" -o /dev/null "$base$ov_path" && curl -sf "${auth[@]}" -o /dev/null "$base$list_path" ||
  die "GET after restart"
sleep 1
rss_fresh=$(vm_kb "$srv_pid" VmRSS)
hwm_fresh=$(vm_kb "$srv_pid" VmHWM)
stop_server
kill -QUIT "$ngx_pid" && wait "$ngx_pid" 2>/dev/null || true
ngx_pid=""
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- results ----
mkdir -p "$results"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- src CMakeLists.txt 2>/dev/null || commit="$commit+dirty"
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
kernel=$(uname -r)
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
jnum() { set -- ${http[$1]}; printf '{"rps": %s, "p50_ms": %s, "p90_ms": %s, "p99_ms": %s, "max_ms": %s, "non2xx": %s, "socket_errors": %s}' "$@"; }
list_json() { local IFS=,; echo "[$*]"; }
if [ "$store" = postgresql ]; then
  pg_version=$("$pg_bin/postgres" --version | awk '{ print $3 }')
  pg_settings=$(psql -X -At "$db" -c "SELECT string_agg(name || '=' || current_setting(name), ' ' ORDER BY name)
    FROM pg_settings WHERE name IN ('shared_buffers', 'fsync', 'synchronous_commit', 'max_connections')")
  "$pg_sh" stop "$pg_dir"
  pg_dir=""
fi

if [ "$store" = sqlite ]; then
cat >"$results/latest.json" <<EOF
{
  "date": "$date_utc",
  "commit": "$commit",
  "machine": {"cpus": $ncpu, "cpu_model": "$cpu_model", "kernel": "$kernel",
              "loadavg_start": "$load_start", "loadavg_end": "$load_end"},
  "config": {"rows": $rows, "wrk_duration_s": $dur, "wrk_connections": $conns, "wrk_threads": 1,
             "server_threads": 8, "pinning": "$pinning", "wrk": "$(wrk -v 2>&1 | head -1 | awk '{ print $2 }')",
             "nginx": "$(nginx -v 2>&1 | sed 's/.*nginx\///')", "sqlite3": "$(sqlite3 --version | awk '{ print $1 }')"},
  "http": {
    "overview": {"path": "$ov_path", "bytes": $ov_bytes,
                 "gpuinv": $(jnum overview.gpuinv), "nginx": $(jnum overview.nginx),
                 "gpuinv_1_connection": $(jnum overview.gpuinv_c1)},
    "list": {"path": "$list_path", "bytes": $list_bytes,
             "gpuinv": $(jnum list.gpuinv), "nginx": $(jnum list.nginx),
             "gpuinv_1_connection": $(jnum list.gpuinv_c1)}
  },
  "memory_kb": {"gpuinv_idle_after_import_rss": $rss_load, "gpuinv_idle_after_import_hwm": $hwm_load,
                "gpuinv_after_http_rss": $rss_http, "gpuinv_after_http_hwm": $hwm_http,
                "gpuinv_restarted_rss": $rss_fresh, "gpuinv_restarted_hwm": $hwm_fresh,
                "nginx_rss_master_plus_worker": $ngx_rss},
  "startup_ms": {"gpuinv_median": $start_med, "gpuinv_runs": $(list_json "${start_ms[@]}"),
                 "sqlite3_count_median": $ref_med, "sqlite3_count_runs": $(list_json "${ref_ms[@]}")},
  "import": {"gpuinv_rows_per_s": $import_rps, "gpuinv_s": $import_total,
             "gpuinv_requests_s": $(list_json "${import_s[@]}"),
             "sqlite3_cli_rows_per_s": $ref_import_rps, "sqlite3_cli_s": $ref_import_s}
}
EOF

else
cat >"$results/$out_name.json" <<EOF
{
  "date": "$date_utc",
  "commit": "$commit",
  "store": "postgresql",
  "machine": {"cpus": $ncpu, "cpu_model": "$cpu_model", "kernel": "$kernel",
              "loadavg_start": "$load_start", "loadavg_end": "$load_end"},
  "config": {"rows": $rows, "wrk_duration_s": $dur, "wrk_connections": $conns, "wrk_threads": 1,
             "server_threads": 8, "pinning": "$pinning", "wrk": "$(wrk -v 2>&1 | head -1 | awk '{ print $2 }')",
             "nginx": "$(nginx -v 2>&1 | sed 's/.*nginx\///')", "sqlite3": "$(sqlite3 --version | awk '{ print $1 }')",
             "postgresql": "$pg_version", "postgresql_via": "Unix socket", "postgresql_settings": "$pg_settings"},
  "http": {
    "overview": {"path": "$ov_path", "bytes": $ov_bytes, "bytes_sqlite": $sq_ov_bytes,
                 "gpuinv_postgresql": $(jnum overview.gpuinv), "gpuinv_sqlite": $(jnum overview.gpuinv_sqlite),
                 "nginx": $(jnum overview.nginx), "gpuinv_postgresql_1_connection": $(jnum overview.gpuinv_c1)},
    "list": {"path": "$list_path", "bytes": $list_bytes, "bytes_sqlite": $sq_list_bytes,
             "gpuinv_postgresql": $(jnum list.gpuinv), "gpuinv_sqlite": $(jnum list.gpuinv_sqlite),
             "nginx": $(jnum list.nginx), "gpuinv_postgresql_1_connection": $(jnum list.gpuinv_c1)}
  },
  "memory_kb": {"gpuinv_idle_after_import_rss": $rss_load, "gpuinv_idle_after_import_hwm": $hwm_load,
                "gpuinv_after_http_rss": $rss_http, "gpuinv_after_http_hwm": $hwm_http,
                "gpuinv_restarted_rss": $rss_fresh, "gpuinv_restarted_hwm": $hwm_fresh,
                "postgres_pss_after_http": $pg_pss, "gpuinv_sqlite_after_http_rss": $sq_rss,
                "nginx_rss_master_plus_worker": $ngx_rss},
  "startup_ms": {"to": "$probe", "gpuinv_median": $start_med, "gpuinv_runs": $(list_json "${start_ms[@]}"),
                 "psql_count_median": $ref_med, "psql_count_runs": $(list_json "${ref_ms[@]}")},
  "import": {"gpuinv_rows_per_s": $import_rps, "gpuinv_s": $import_total,
             "gpuinv_requests_s": $(list_json "${import_s[@]}"),
             "psql_rows_per_s": $ref_import_rps, "psql_s": $ref_import_s,
             "gpuinv_sqlite_rows_per_s": $sq_import_rps, "gpuinv_sqlite_s": $sq_import_total}
}
EOF
fi

verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v < t) ? "met" : "**missed**" }'; }
row() { # label endpoint
  local g n
  g=(${http[$2.gpuinv]}) n=(${http[$2.nginx]})
  printf '| %s | %s req/s | %s ms | %s ms | %s req/s | %s ms | %s ms | %s |\n' "$1" \
    "${g[0]}" "${g[1]}" "${g[3]}" "${n[0]}" "${n[1]}" "${n[3]}" "$(verdict "${g[3]}" 20)"
}
pg_row() { # label endpoint
  local g q n
  g=(${http[$2.gpuinv]}) q=(${http[$2.gpuinv_sqlite]}) n=(${http[$2.nginx]})
  printf '| %s | %s req/s | %s ms | %s ms | %s req/s | %s ms | %s ms | %s req/s | %s ms | %s ms | %s |\n' "$1" \
    "${g[0]}" "${g[1]}" "${g[3]}" "${q[0]}" "${q[1]}" "${q[3]}" "${n[0]}" "${n[1]}" "${n[3]}" "$(verdict "${g[3]}" 20)"
}
if [ "$store" = sqlite ]; then
{
  echo "gpuinv benchmark, $date_utc, commit $commit, $ncpu CPUs ($cpu_model), load $load_start -> $load_end"
  echo "$rows resources; wrk -t1 -c$conns -d${dur}s --latency; pinning: $pinning"
  echo
  echo "| HTTP (target p99 < 20 ms) | gpuinv | p50 | p99 | nginx (same bytes) | p50 | p99 | target |"
  echo "|---|---|---|---|---|---|---|---|"
  row "DC overview ($ov_bytes B)" overview
  row "filtered list, 100 items ($list_bytes B)" list
  echo
  echo "| gpuinv, 1 connection (${c1dur} s) | req/s | p50 | p99 |"
  echo "|---|---|---|---|"
  for ep in overview list; do
    set -- ${http[$ep.gpuinv_c1]}
    echo "| $ep | $1 | $2 ms | $4 ms |"
  done
  echo
  echo "| measure | gpuinv | reference | target |"
  echo "|---|---|---|---|"
  echo "| RSS idle after import (VmRSS / VmHWM) | $(mb "$rss_load") / $(mb "$hwm_load") MiB | nginx $(mb "$ngx_rss") MiB (master+worker) | < 50 MB: $(verdict "$(mb "$rss_load")" 47.68) |"
  echo "| RSS after the HTTP runs (VmRSS / VmHWM) | $(mb "$rss_http") / $(mb "$hwm_http") MiB | | |"
  echo "| RSS of a restarted server (VmRSS / VmHWM) | $(mb "$rss_fresh") / $(mb "$hwm_fresh") MiB | | < 50 MB: $(verdict "$(mb "$rss_fresh")" 47.68) |"
  echo "| start-up to /healthz 200, median of $starts | $start_med ms | sqlite3 count(*) $ref_med ms | < 200 ms: $(verdict "$start_med" 200) |"
  echo "| import of $rows rows (2 requests) | $import_rps rows/s (${import_total} s) | sqlite3 CLI, 1 transaction: $ref_import_rps rows/s (${ref_import_s} s) | |"
} >"$results/latest.md"
else
{
  echo "gpuinv benchmark on PostgreSQL $pg_version ($pg_settings), $date_utc, commit $commit, $ncpu CPUs ($cpu_model), load $load_start -> $load_end"
  echo "$rows resources; wrk -t1 -c$conns -d${dur}s --latency; pinning: $pinning"
  echo
  echo "| HTTP (target p99 < 20 ms) | gpuinv on PostgreSQL | p50 | p99 | gpuinv on SQLite | p50 | p99 | nginx (same bytes) | p50 | p99 | target |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  pg_row "DC overview ($ov_bytes B; on SQLite $sq_ov_bytes B)" overview
  pg_row "filtered list, 100 items ($list_bytes B; on SQLite $sq_list_bytes B)" list
  echo
  echo "| gpuinv on PostgreSQL, 1 connection (${c1dur} s) | req/s | p50 | p99 |"
  echo "|---|---|---|---|"
  for ep in overview list; do
    set -- ${http[$ep.gpuinv_c1]}
    echo "| $ep | $1 | $2 ms | $4 ms |"
  done
  echo
  echo "| measure | gpuinv on PostgreSQL | reference | target |"
  echo "|---|---|---|---|"
  echo "| RSS idle after import (VmRSS / VmHWM) | $(mb "$rss_load") / $(mb "$hwm_load") MiB | postgres PSS after the HTTP runs $(mb "$pg_pss") MiB; gpuinv on SQLite $(mb "$sq_rss") MiB | |"
  echo "| RSS after the HTTP runs (VmRSS / VmHWM) | $(mb "$rss_http") / $(mb "$hwm_http") MiB | | |"
  echo "| RSS of a restarted server (VmRSS / VmHWM) | $(mb "$rss_fresh") / $(mb "$hwm_fresh") MiB | | |"
  echo "| start-up to $probe 200, median of $starts | $start_med ms | psql count(*) $ref_med ms | < 500 ms: $(verdict "$start_med" 500) |"
  echo "| import of $rows rows (2 requests) | $import_rps rows/s (${import_total} s) | psql, 1 transaction: $ref_import_rps rows/s (${ref_import_s} s); gpuinv on SQLite $sq_import_rps rows/s | |"
} >"$results/$out_name.md"
fi
cat "$results/$out_name.md"
echo
echo "bench: results in $results/$out_name.json and $results/$out_name.md"
