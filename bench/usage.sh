#!/usr/bin/env bash
# gpuinv usage benchmark: a fleet of BENCH_GPUS GPUs with BENCH_DAYS days of
# hourly rollups and BENCH_RAW_DAYS days of raw samples (bench/usage_gen.sh),
# then, each next to a reference measured in the same run:
#   1. /api/v1/usage (and the cost and summary routes that exist) over 30
#      days, every grouping and a few filters, at 1 connection: p50/p95/p99;
#   2. the question "measured GPU-hours per team over the raw window"
#      answered three ways: gpuinv's /api/v1/usage, the same from the raw
#      samples in gpuinv's own database (SQL), and PromQL on VictoriaMetrics
#      loaded with the same samples. The three answers must agree.
# Writes bench/results/usage[-pg].json and .md and prints the table.
# Usage: bench/usage.sh   (from `make bench`, which builds build/gpuinv first)
# Environment:
#   BENCH_STORE=sqlite      or postgresql
#   BENCH_GPUS=10000        GPUs (8 per host)
#   BENCH_DAYS=90           days of hourly rollups
#   BENCH_CONSUMER_DAYS=30  days with a consumer per allocated GPU-hour
#   BENCH_RAW_DAYS=14       days of raw samples
#   BENCH_RAW_STEP=60       seconds between raw samples
#   BENCH_DURATION=5        seconds of each measured wrk run
#   BENCH_VM=1              0: skip the VictoriaMetrics reference
#   BENCH_SKIP=             a regular expression: queries whose name matches are not measured
#   BENCH_REUSE=            an existing database to measure instead of loading a new one: a
#                           SQLite file (one BENCH_KEEP=1 kept), or a postgres:// URL (then
#                           BENCH_STORE is postgresql); the binary migrates it at start-up.
#                           On PostgreSQL the CPU counted is the server's and that of the
#                           database's backends (pg_stat_activity), not the cluster's others
#   BENCH_KEEP=0            1: keep the temporary directory (and leave a PostgreSQL the
#                           bench started running, its URL printed)
#   BENCH_WRK=1             0: no wrk latency runs (on a shared machine: CPU time only)
#   BENCH_CPU_N=0           N > 0: also the CPU time per request of the server's request
#                           threads (utime + stime from /proc over N identical requests
#                           after one warm-up; on PostgreSQL the database's processes
#                           counted in; a path with __N__ asks each request anew, the
#                           answers the server keeps (the savings) not reused)
#   BENCH_BEFORE=           a binary measured first on the same data (it migrates the
#                           database before the load); then GPUINV applies its own newer
#                           migrations (timed) and is measured: CPU time before and after,
#                           and whether the two answers are the same bytes ("same")
#   BENCH_SETTLE=0          1: wait after each start until the background jobs are idle
#   BENCH_RAW=1             0: skip part 2 (the raw-samples and PromQL reference)
#   BENCH_OUT=              results file name (default usage, usage-pg)
#   GPUINV=build/gpuinv     binary to measure
set -euo pipefail
cd "$(dirname "$0")/.."

gpus=${BENCH_GPUS:-10000}
days=${BENCH_DAYS:-90}
cdays=${BENCH_CONSUMER_DAYS:-30}
rdays=${BENCH_RAW_DAYS:-14}
rstep=${BENCH_RAW_STEP:-60}
dur=${BENCH_DURATION:-5}
use_vm=${BENCH_VM:-1}
bin=${GPUINV:-build/gpuinv}
store=${BENCH_STORE:-sqlite}
use_wrk=${BENCH_WRK:-1}
cpu_n=${BENCH_CPU_N:-0}
before_bin=${BENCH_BEFORE:-}
use_raw=${BENCH_RAW:-1}
results=bench/results
pg_sh=tests/lib/pg.sh

die() { echo "bench: $*" >&2; exit 1; }
for tool in wrk sqlite3 curl python3; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (scripts/deps.sh --bench installs it)"
done
[ "$use_vm" = 0 ] || command -v victoria-metrics >/dev/null 2>&1 ||
  die "victoria-metrics is missing (scripts/deps.sh --bench installs it; BENCH_VM=0 skips it)"
[ -x "$bin" ] || die "$bin not found; build it first (make build)"
[ "$days" -ge 31 ] || die "BENCH_DAYS must be at least 31 (the queries cover 30 days)"
[ "$rdays" -ge 1 ] && [ "$rdays" -le "$days" ] || die "BENCH_RAW_DAYS must be 1..BENCH_DAYS"
case "$store" in
  sqlite) out_name=usage ;;
  postgresql | postgres | pg) store=postgresql out_name=usage-pg ;;
  *) die "BENCH_STORE must be sqlite or postgresql" ;;
esac
out_name=${BENCH_OUT:-$out_name}
[ -z "$before_bin" ] || [ -x "$before_bin" ] || die "BENCH_BEFORE: $before_bin not found"
[ "$use_raw" = 1 ] || use_vm=0
reuse=${BENCH_REUSE:-}
case "$reuse" in
  postgres://* | postgresql://*) store=postgresql out_name=${BENCH_OUT:-usage-pg} ;;
  "") ;;
  *) [ "$store" = sqlite ] && [ -f "$reuse" ] || die "BENCH_REUSE must name a SQLite database or a postgres:// URL" ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-usage.XXXXXX")
chmod 755 "$tmp" # PostgreSQL runs as an unprivileged user
srv_pid="" vm_pid="" pg_dir=""
cleanup() {
  set +e
  [ -n "$srv_pid" ] && stop_server 2>/dev/null
  [ -n "$vm_pid" ] && kill -TERM "$vm_pid" 2>/dev/null && wait "$vm_pid" 2>/dev/null
  if [ "${BENCH_KEEP:-0}" = 1 ]; then
    # A kept PostgreSQL stays up: its database is the template for copies
    # (CREATE DATABASE ... TEMPLATE gpuinv) measured with BENCH_REUSE.
    [ -z "$pg_dir" ] || echo "bench: PostgreSQL left running: $db (tests/lib/pg.sh stop $pg_dir)"
    echo "bench: kept $tmp"
  else
    [ -n "$pg_dir" ] && "$pg_sh" stop "$pg_dir"
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

token="bench-$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy')"
export BENCH_TOKEN=$token
auth=(-H "Authorization: Bearer $token")
db=$tmp/gpuinv.db
[ -z "$reuse" ] || db=$reuse
if [ "$store" = postgresql ] && [ -n "$reuse" ]; then
  db=$reuse
elif [ "$store" = postgresql ]; then
  pg_dir=$tmp/pg
  "$pg_sh" start "$pg_dir" >"$tmp/pg-start.log" 2>&1 || die "PostgreSQL did not start: $(tail -5 "$tmp/pg-start.log")"
  c=$(cat "$pg_dir/conninfo")
  db=${c/@\//@/gpuinv}
fi
dbq() {
  if [ "$store" = postgresql ]; then psql -X -At -q -v ON_ERROR_STOP=1 "$db" "$@"; else sqlite3 -bail "$db" "$@"; fi
}
elapsed_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.1f", v[(NR + 1) / 2]; else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

start_server() { # [binary]
  local out=$tmp/serve.out line="" run=${1:-$bin}
  : >"$out"
  GPUINV_ADMIN_TOKEN=$token "$run" serve --db "$db" --listen 127.0.0.1:0 >"$out" 2>>"$tmp/serve.err" &
  srv_pid=$!
  until [[ $line == *listening* ]]; do
    kill -0 "$srv_pid" 2>/dev/null || die "gpuinv exited: $(tail -3 "$tmp/serve.err")"
    read -r line <"$out" || true
  done
  srv_port=${line##*:}
  srv_port=${srv_port%/}
  base=http://127.0.0.1:$srv_port
}
# Stops the server; one that a background job holds past 10 s (a health
# rollup backfilling a reused database) is killed.
stop_server() {
  local i
  kill -TERM "$srv_pid"
  for i in $(seq 100); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$srv_pid" 2>/dev/null || true
  wait "$srv_pid" || true
  srv_pid=""
}
# The database's processes: the bench's own cluster whole; on a reused one
# the backends connected to the measured database, less the one the health
# rollup is running on (it backfills every GPU-day of a database it has not
# seen, for an hour and more at 10,000 GPUs, beside the requests) and its
# parallel workers.
db_pids() {
  local pm
  if [ -n "$pg_dir" ]; then
    pm=$(head -1 "$pg_dir/data/postmaster.pid")
    echo "$pm $(cat "/proc/$pm/task/$pm/children")"
  else
    dbq -c "WITH a AS (SELECT * FROM pg_stat_activity WHERE datname = current_database()),
              job AS (SELECT pid FROM a WHERE state = 'active' AND query ~ 'gpu_health|gpu_samples')
            SELECT pid FROM a WHERE pid <> pg_backend_pid() AND pid NOT IN (SELECT pid FROM job)
              AND COALESCE(leader_pid, 0) NOT IN (SELECT pid FROM job)"
  fi
}
# The CPU ticks of the server's request threads (libmicrohttpd's and the request workers,
# so that the background jobs of a fresh database are not counted); on
# PostgreSQL with the database's added (the postmaster and its backends,
# which run the SQL; on a reused cluster only the backends connected to the
# measured database).
cpu_ticks() { # [the database's pids, else db_pids]
  local pids=${1:-} t
  [ "$store" != postgresql ] || [ -n "$pids" ] || pids=$(db_pids)
  {
    for t in /proc/"$srv_pid"/task/*; do case "$(cat "$t/comm" 2>/dev/null)" in MHD-worker | gi-worker) cat "$t/stat" ;; esac; done
    for p in $pids; do cat "/proc/$p/stat" 2>/dev/null; done
  } | awk '{ t += $14 + $15 } END { print t + 0 }'
}
clk_tck=$(getconf CLK_TCK)
# Every thread of the server and the database's backends.
all_ticks() {
  local pids=$srv_pid
  [ "$store" != postgresql ] || pids="$pids $(db_pids)"
  for p in $pids; do cat "/proc/$p/stat" 2>/dev/null; done | awk '{ t += $14 + $15 } END { print t + 0 }'
}
# With BENCH_SETTLE=1, waits (at most BENCH_SETTLE_S, default 900 s) after each
# start until the server's background jobs are done with the database: the
# whole process and the database's backends together use less than 5% of a
# CPU over 3 s.
settle() {
  local t0=$SECONDS a b
  while [ $((SECONDS - t0)) -lt "${BENCH_SETTLE_S:-900}" ]; do
    a=$(all_ticks); sleep 3; b=$(all_ticks)
    [ $((b - a)) -lt $((clk_tck * 3 / 20)) ] && { echo "bench: settled after $((SECONDS - t0)) s"; return; }
  done
  echo "bench: still busy after ${BENCH_SETTLE_S:-900} s; measuring anyway"
}

now=$(date +%s)
end=$((now - now % 3600))
day_end=$((end - end % 86400))
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
echo "bench: usage on $store: $gpus GPUs, $days days hourly, $rdays days raw every ${rstep}s"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- data ----
t0=$EPOCHREALTIME
start_server "${before_bin:-$bin}" # applies the migrations
stop_server
t1=$EPOCHREALTIME
migrate_ms=$(elapsed_ms "$t0" "$t1")
if [ -n "$reuse" ]; then
  load_ms=0
  echo "bench: reusing $reuse (start-up with its migrations: $migrate_ms ms)"
else
# The derived tables the rollup job keeps, where the binary's schema has them.
has_table() {
  if [ "$store" = postgresql ]; then
    [ "$(dbq -c "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = '$1'")" != 0 ]
  else
    [ "$(dbq "SELECT COUNT(*) FROM sqlite_master WHERE name = '$1'")" != 0 ]
  fi
}
! has_table usage_groups_hourly || export BENCH_GEN_HOURLY_GROUPS=1
! has_table usage_team_hours || export BENCH_GEN_TEAM_HOURS=1
! has_table usage_team_days || export BENCH_GEN_TEAM_DAYS=1
! has_table usage_idle_days || export BENCH_GEN_IDLE_DAYS=1
if [ "$store" = postgresql ]; then
  [ "$(dbq -c "SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'usage_idle_days'
                AND column_name = 'first_hour'")" = 0 ] || export BENCH_GEN_IDLE_TAILS=1
else
  [ "$(dbq "SELECT COUNT(*) FROM pragma_table_info('usage_idle_days') WHERE name = 'first_hour'")" = 0 ] ||
    export BENCH_GEN_IDLE_TAILS=1
fi
! has_table usage_host_days || export BENCH_GEN_HOST_DAYS=1
# migration 061's host days carry every report sum (and come with the GPUs' blocks)
if [ "$store" = postgresql ]; then
  hd_sums=$(dbq -c "SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'usage_host_days' AND column_name = 'allocated_s'")
else
  hd_sums=$(dbq "SELECT COUNT(*) FROM pragma_table_info('usage_host_days') WHERE name = 'allocated_s'")
fi
[ "$hd_sums" = 0 ] || export BENCH_GEN_HOST_DAYS=2
# Secondary indexes are dropped for the load and built again after it.
tables="'usage_hourly','usage_daily','usage_consumers','usage_consumers_daily','usage_consumer_spans','usage_consumer_totals','gpu_samples'"
if [ "$store" = postgresql ]; then
  dbq -c "SELECT indexdef || ';' FROM pg_indexes WHERE tablename IN ($tables) AND indexname NOT LIKE '%pkey'
          AND indexname NOT IN (SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid)" >"$tmp/indexes.sql"
  sed 's/^CREATE \(UNIQUE \)\?INDEX \([^ ]*\) ON .*/DROP INDEX \2;/' "$tmp/indexes.sql" >"$tmp/drop.sql"
  # Raw samples go to daily partitions, created for the whole window.
  dbq -c "SELECT gi_samples_partitions($((end - rdays * 86400)), $((rdays + 2)), 100000)" >/dev/null
else
  dbq "SELECT sql || ';' FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ($tables)" >"$tmp/indexes.sql"
  sed 's/^CREATE \(UNIQUE \)\?INDEX \([^ ]*\) ON .*/DROP INDEX \2;/' "$tmp/indexes.sql" >"$tmp/drop.sql"
fi
dbq <"$tmp/drop.sql"
# The daily consumer rows, where the binary's schema has them.
cdaily=0
! has_table usage_consumers_daily || cdaily=1
bench/usage_gen.sh "$store" "$gpus" "$days" "$cdays" "$rdays" "$rstep" "$now" "$cdaily" >"$tmp/gen.sql"
# The consumer-day spans of those consumer days, where the schema has them,
# filled with migration 062's own statements (from its first INSERT to its
# first CREATE INDEX).
if [ "$cdaily" = 1 ] && has_table usage_consumer_spans; then
  mig=src/store/migrations
  [ "$store" = sqlite ] || mig=src/store/migrations/pg
  { echo "BEGIN;"; sed -n '/^INSERT INTO usage_consumer_spans/,/^CREATE INDEX/p' "$mig/062_usage_consumer_spans.sql" |
      grep -v '^CREATE INDEX'; echo "COMMIT;"; } >>"$tmp/gen.sql"
fi
# The consumer totals of those consumer days, where the schema has them, with
# migration 065's own statement.
if [ "$cdaily" = 1 ] && has_table usage_consumer_totals; then
  mig=src/store/migrations
  [ "$store" = sqlite ] || mig=src/store/migrations/pg
  { echo "BEGIN;"; sed -n '/^INSERT INTO usage_consumer_totals/,/^CREATE INDEX/p' "$mig/065_usage_consumer_totals.sql" |
      grep -v '^CREATE INDEX'; echo "COMMIT;"; } >>"$tmp/gen.sql"
fi
t0=$EPOCHREALTIME
if [ "$store" = postgresql ]; then
  dbq -c "SET maintenance_work_mem = '512MB'" -f "$tmp/gen.sql" -f "$tmp/indexes.sql" -c "VACUUM ANALYZE"
else
  { echo "PRAGMA cache_size = -1000000;"; cat "$tmp/gen.sql" "$tmp/indexes.sql"; echo "ANALYZE;"; } | dbq
fi
t1=$EPOCHREALTIME
load_ms=$(elapsed_ms "$t0" "$t1")
fi
hourly_rows=$(dbq -c "SELECT count(*) FROM usage_hourly" 2>/dev/null || dbq "SELECT count(*) FROM usage_hourly")
raw_rows=$(dbq -c "SELECT count(*) FROM gpu_samples" 2>/dev/null || dbq "SELECT count(*) FROM gpu_samples")
echo "bench: loaded $hourly_rows hourly rows and $raw_rows raw samples in $((${load_ms%.*} / 1000)) s"
if [ "$store" = sqlite ]; then db_bytes=$(stat -c %s "$db"); else db_bytes=$(dbq -c "SELECT pg_database_size(current_database())"); fi

upgrade_ms=null
if [ -n "$before_bin" ]; then
  start_server "$before_bin"
else
  start_server
fi
[ "${BENCH_SETTLE:-0}" = 0 ] || settle

# ---- 1. the analytics routes over 30 days ----
from=$(iso $((day_end - 30 * 86400)))
to=$(iso "$day_end")
range="from=$from&to=$to"
month=$(date -u -d "@$((day_end - 86400))" +%Y-%m)
d1=$(iso $((day_end - 86400)))
d7=$(iso $((day_end - 7 * 86400)))
queries=(
  "team|/api/v1/usage?group_by=team&$range&step=day"
  "env|/api/v1/usage?group_by=env&$range&step=day"
  "pool|/api/v1/usage?group_by=pool&$range&step=day"
  "cluster|/api/v1/usage?group_by=cluster&$range&step=day"
  "cloud|/api/v1/usage?group_by=cloud&$range&step=day"
  "model|/api/v1/usage?group_by=model&$range&step=day"
  "datacenter|/api/v1/usage?group_by=datacenter&$range&step=day"
  "host, team filter|/api/v1/usage?group_by=host&team=team-7&$range&step=day"
  "gpu, team filter|/api/v1/usage?group_by=gpu&team=team-7&$range&step=day"
  "consumer, env filter|/api/v1/usage?group_by=consumer&env=prod&$range&step=day"
  "team, week steps|/api/v1/usage?group_by=team&$range&step=week"
  "team, month|/api/v1/usage?group_by=team&$range&step=month"
  "model, team+env filter|/api/v1/usage?group_by=model&team=team-3&env=poc&$range&step=day"
  "team, hour steps, 1 day|/api/v1/usage?group_by=team&from=$d1&to=$to&step=hour"
  "team, hour steps, 7 days|/api/v1/usage?group_by=team&from=$d7&to=$to&step=hour"
  "model, hour steps, 1 day, team filter|/api/v1/usage?group_by=model&team=team-7&from=$d1&to=$to&step=hour"
  "team, hour steps, 30 days|/api/v1/usage?group_by=team&$range&step=hour"
  "host page 1|/api/v1/usage?group_by=host&$range&step=day&limit=100"
  "host page 3|/api/v1/usage?group_by=host&$range&step=day&limit=100&offset=200"
  "gpu page 1|/api/v1/usage?group_by=gpu&$range&step=day&limit=100"
  "gpu page 1, team filter|/api/v1/usage?group_by=gpu&team=team-7&$range&step=day&limit=100"
  "host page 1, team filter|/api/v1/usage?group_by=host&team=team-7&$range&step=day&limit=100"
  "gpu page 1, hour steps, 1 day|/api/v1/usage?group_by=gpu&from=$d1&to=$to&step=hour&limit=100"
  "heatmap 30 days|/api/v1/usage/heatmap?$range"
  "heatmap 30 days, team filter|/api/v1/usage/heatmap?team=team-7&$range"
  "showback (cost)|/api/v1/reports/showback?month=$month"
  "trend (summary)|/api/v1/usage/trend?period=week&group_by=team"
  "waste by team|/api/v1/insights/waste-by-team?$range"
  "savings|/api/v1/insights/savings?$range"
  "savings, first request|/api/v1/insights/savings?$range&limit=__N__"
  "trend, month, to at midnight (day groups only)|/api/v1/usage/trend?period=month&group_by=team&to=$to"
  "trend by gpu, week, to at midnight|/api/v1/usage/trend?period=week&group_by=gpu&to=$to&limit=100"
  "trend by host, week, to at midnight|/api/v1/usage/trend?period=week&group_by=host&to=$to&limit=100"
  "trend by host, week|/api/v1/usage/trend?period=week&group_by=host&limit=100"
  "trend by gpu, week|/api/v1/usage/trend?period=week&group_by=gpu&limit=100"
  "trend by gpu, month, to at midnight|/api/v1/usage/trend?period=month&group_by=gpu&to=$to&limit=100"
  "trend by gpu, week, to at midnight, team filter|/api/v1/usage/trend?period=week&group_by=gpu&team=team-7&to=$to&limit=100"
  "waste by team, team filter|/api/v1/insights/waste-by-team?team=team-3&$range"
  "showback (cost), CSV|/api/v1/reports/showback?month=$month&format=csv"
  "showback (cost), one data center|/api/v1/reports/showback?month=$month&datacenter=fra1"
  "consumer, team filter|/api/v1/usage?group_by=consumer&team=team-7&$range&step=day"
  "consumer, team filter, month|/api/v1/usage?group_by=consumer&team=team-7&$range&step=month"
  "top consumers|/api/v1/insights/top-consumers?$range"
  "top consumers, team filter|/api/v1/insights/top-consumers?team=team-3&$range"
  "top consumers, default range|/api/v1/insights/top-consumers"
  "allocated-idle|/api/v1/insights/allocated-idle?$range"
  "overrequest|/api/v1/insights/overrequest?$range"
  "idle|/api/v1/insights/idle?$range"
  "idle, team+env filter|/api/v1/insights/idle?team=team-3&env=poc&$range"
  "idle, 48 hours, from 01:30|/api/v1/insights/idle?min_hours=48&from=$(iso $((day_end - 30 * 86400 + 5400)))&to=$to"
)
wrk_run() { # url -> "rps p50_ms p95_ms p99_ms non2xx"
  local out
  wrk -t1 -c1 -d1s -s bench/wrk-auth.lua "$1" >/dev/null
  out=$(wrk -t1 -c1 -d"${dur}s" --latency -s bench/wrk-auth.lua "$1")
  echo "$out" >>"$tmp/wrk.log"
  echo "$out" | grep '^RESULT ' | awk '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "%.1f %.2f %.2f %.2f %d\n", v["rps"], v["p50_us"] / 1000, v["p95_us"] / 1000,
           v["p99_us"] / 1000, v["non2xx"] }'
}
# A path with __N__ in it asks a question the server keeps the answer of
# (the savings): each request puts another number there (as the limit), so
# that every one is a first request.
cpu_run() { # url -> CPU ms per request over cpu_n requests (after one warm-up); their times in $tmp/times
  local a b i pids=""
  curl -s "${auth[@]}" -o /dev/null "${1//__N__/99}"
  [ "$store" != postgresql ] || pids=$(db_pids | tr '\n' ' ')
  : >"$tmp/times"
  a=$(cpu_ticks "$pids")
  for i in $(seq "$cpu_n"); do
    curl -s "${auth[@]}" -o /dev/null -w '%{time_total}\n' "${1//__N__/$((100 + i))}" >>"$tmp/times"
  done
  b=$(cpu_ticks "$pids")
  awk -v a="$a" -v b="$b" -v n="$cpu_n" -v t="$clk_tck" 'BEGIN { printf "%.1f", (b - a) * 1000 / t / n }'
}
declare -A cpu_before=()
if [ -n "$before_bin" ] && [ "$cpu_n" -gt 0 ]; then
  qi=0
  for q in "${queries[@]}"; do
    name=${q%%|*} path=${q#*|} qi=$((qi + 1))
    if [ -n "${BENCH_SKIP:-}" ] && [[ $name =~ $BENCH_SKIP ]]; then continue; fi
    code=$(curl -s "${auth[@]}" -o "$tmp/before-$qi.body" -w '%{http_code}' "$base${path//__N__/100}")
    [ "$code" = 200 ] || { cpu_before[$name]=null; echo "bench: before: $name: HTTP $code"; continue; }
    cpu_before[$name]=$(cpu_run "$base$path")
    echo "bench: before: $name: ${cpu_before[$name]} ms CPU per request"
  done
fi
if [ -n "$before_bin" ]; then
  stop_server
  t0=$EPOCHREALTIME
  start_server # applies this binary's newer migrations
  t1=$EPOCHREALTIME
  upgrade_ms=$(elapsed_ms "$t0" "$t1")
  echo "bench: $bin migrated the database in $((${upgrade_ms%.*} / 1000)) s"
  [ "${BENCH_SETTLE:-0}" = 0 ] || settle
fi

rows_json=""
qi=0
for q in "${queries[@]}"; do
  name=${q%%|*} path=${q#*|} qi=$((qi + 1))
  if [ -n "${BENCH_SKIP:-}" ] && [[ $name =~ $BENCH_SKIP ]]; then
    echo "bench: $name: skipped (BENCH_SKIP)"
    rows_json+="{\"query\":\"$name\",\"path\":\"${path%%\?*}\",\"status\":0},"
    continue
  fi
  read -r code first_s <<<"$(curl -s "${auth[@]}" -o "$tmp/q.json" --max-time 600 -w '%{http_code} %{time_total}' "$base${path//__N__/100}")"
  if [ "$code" != 200 ]; then
    echo "bench: $name: HTTP $code, not measured"
    rows_json+="{\"query\":\"$name\",\"path\":\"${path%%\?*}\",\"status\":$code},"
    continue
  fi
  bytes=$(wc -c <"$tmp/q.json")
  rps=null p50=null p95=null p99=null non2xx=null cpu=null single=null same=null
  if [ -f "$tmp/before-$qi.body" ]; then
    if cmp -s "$tmp/before-$qi.body" "$tmp/q.json"; then same=true; else same=false; fi
    echo "bench: $name: the same bytes as before: $same"
  fi
  if awk -v t="$first_s" 'BEGIN { exit !(t > 2) }'; then
    # Slower than wrk's timeout: the time of the single request instead.
    single=$(awk -v t="$first_s" 'BEGIN { printf "%.1f", t * 1000 }')
    echo "bench: $name: $single ms (one request; $bytes bytes)"
  elif [ "$use_wrk" != 0 ] && [[ $path != *__N__* ]]; then
    read -r rps p50 p95 p99 non2xx <<<"$(wrk_run "$base$path")"
    echo "bench: $name: p50 $p50 ms, p95 $p95 ms, p99 $p99 ms ($bytes bytes)"
  fi
  if [ "$cpu_n" -gt 0 ]; then
    cpu=$(cpu_run "$base$path")
    echo "bench: $name: $cpu ms CPU per request (before: ${cpu_before[$name]:-null}; $bytes bytes)"
    if [[ $path == *__N__* ]]; then # each a first request: their own times, not wrk's
      read -r p50 p95 p99 <<<"$(sort -g "$tmp/times" | awk '{ v[NR] = $1 * 1000 } END {
        for (i = 1; i <= 3; i++) { q = (i == 1 ? 0.5 : i == 2 ? 0.95 : 0.99); k = int(q * NR + 0.999999); if (k < 1) k = 1
          printf "%.2f ", v[k] } }')"
      echo "bench: $name: p50 $p50 ms, p95 $p95 ms, p99 $p99 ms over $cpu_n first requests"
    fi
  fi
  rows_json+="{\"query\":\"$name\",\"path\":\"${path%%\?*}\",\"status\":200,\"bytes\":$bytes,\"rps\":$rps,\"p50_ms\":$p50,\"p95_ms\":$p95,\"p99_ms\":$p99,\"non2xx\":$non2xx,\"cpu_ms\":$cpu,\"cpu_ms_before\":${cpu_before[$name]:-null},\"single_ms\":$single,\"same\":$same},"
done

# ---- 2. one question, three ways: measured GPU-hours per team over the raw window ----
api_ms=null raw_ms=null vm_ms=null vm_p95=null vm_load_s=null
if [ "$use_raw" != 0 ]; then
# The raw window ends where the loaded samples do: on a reused database,
# loaded in an earlier hour, that is not the current hour.
rend=$end rnow=$now
if [ -n "$reuse" ]; then
  rlast=$(dbq -c "SELECT MAX(ts) FROM gpu_samples" 2>/dev/null || dbq "SELECT MAX(ts) FROM gpu_samples")
  [ -z "$rlast" ] || { rend=$((rlast - rlast % 3600 + 3600)) rnow=$rend; }
fi
rfrom=$((rend - rdays * 86400))
q_api="/api/v1/usage?group_by=team&from=$(iso "$rfrom")&to=$(iso "$rend")&step=month"
curl -sf "${auth[@]}" -o "$tmp/api-team.json" "$base$q_api" || die "GET $q_api"
python3 - "$tmp/api-team.json" >"$tmp/api-team.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
acc = {}
for it in d["items"]:
    h = it["gpu_hours"]
    acc[it["group"]] = acc.get(it["group"], 0) + h["owned"] - h["unknown"]
for k in sorted(acc):
    print("%s %.1f" % (k, acc[k]))
PY
api_times=()
for _ in 1 2 3 4 5 6 7 8 9 10 11; do
  api_times+=("$(curl -s "${auth[@]}" -o /dev/null -w '%{time_total}' "$base$q_api" | awk '{ printf "%.1f", $1 * 1000 }')")
done
api_ms=$(echo "${api_times[@]}" | median)

raw_sql="SELECT g.team, count(*) * $rstep / 3600.0 FROM gpu_samples s JOIN gpus g ON g.id = s.gpu_id
         WHERE s.ts >= $rfrom AND s.ts < $rend GROUP BY g.team ORDER BY g.team"
raw_times=()
for i in 1 2 3; do
  t0=$EPOCHREALTIME
  if [ "$store" = postgresql ]; then dbq -F ' ' -c "$raw_sql" >"$tmp/raw-team.txt"; else dbq -separator ' ' "$raw_sql" >"$tmp/raw-team.txt"; fi
  t1=$EPOCHREALTIME
  raw_times+=("$(elapsed_ms "$t0" "$t1")")
done
raw_ms=$(echo "${raw_times[@]}" | median)
same_answer() { python3 - "$1" "$2" <<'PY'
import sys
a, b = ({l.split()[0]: float(l.split()[1]) for l in open(f) if l.strip()} for f in sys.argv[1:3])
ok = a.keys() == b.keys() and all(abs(a[k] - b[k]) <= max(0.5, 1e-3 * abs(a[k])) for k in a)
sys.exit(0 if ok else 1)
PY
}
same_answer "$tmp/api-team.txt" "$tmp/raw-team.txt" || die "the API and the raw samples disagree: $(paste "$tmp/api-team.txt" "$tmp/raw-team.txt" | head -3)"

if [ "$use_vm" != 0 ]; then
  for p in $(seq 18428 18440); do
    victoria-metrics -storageDataPath "$tmp/vm" -httpListenAddr "127.0.0.1:$p" -retentionPeriod 100y \
      -search.maxPointsPerTimeseries 1000000 -search.maxSamplesPerQuery 10000000000 >"$tmp/vm.log" 2>&1 &
    vm_pid=$!
    for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$p/health" && break; sleep 0.2; done
    if curl -sf -o /dev/null "http://127.0.0.1:$p/health"; then vm="http://127.0.0.1:$p"; break; fi
    kill "$vm_pid" 2>/dev/null; wait "$vm_pid" 2>/dev/null || true; vm_pid=""
  done
  [ -n "${vm:-}" ] || die "VictoriaMetrics did not start: $(tail -3 "$tmp/vm.log")"
  t0=$EPOCHREALTIME
  bench/usage_vm.py "$gpus" "$rdays" "$rstep" "$rnow" | curl -sf -X POST -T - "$vm/api/v1/import" || die "VictoriaMetrics import"
  curl -sf -o /dev/null "$vm/internal/force_flush" || true
  t1=$EPOCHREALTIME
  vm_load_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
  promql="sum by (team) (count_over_time(gpu_util[${rdays}d])) * $rstep / 3600"
  vm_q=(--data-urlencode "query=$promql" --data-urlencode "time=$((rend - 1))")
  curl -sf "$vm/api/v1/query" "${vm_q[@]}" -o "$tmp/vm.json" || die "PromQL query"
  python3 -c 'import json, sys
for r in sorted(json.load(open(sys.argv[1]))["data"]["result"], key=lambda r: r["metric"]["team"]):
    print(r["metric"]["team"], "%.1f" % float(r["value"][1]))' "$tmp/vm.json" >"$tmp/vm-team.txt"
  same_answer "$tmp/api-team.txt" "$tmp/vm-team.txt" || die "the API and VictoriaMetrics disagree: $(paste "$tmp/api-team.txt" "$tmp/vm-team.txt" | head -3)"
  vm_times=()
  for _ in 1 2 3 4 5 6 7 8 9 10 11; do
    vm_times+=("$(curl -s -o /dev/null -w '%{time_total}' "$vm/api/v1/query" "${vm_q[@]}" -d nocache=1 | awk '{ printf "%.1f", $1 * 1000 }')")
  done
  vm_ms=$(echo "${vm_times[@]}" | median)
fi
echo "bench: team GPU-hours over $rdays days: gpuinv $api_ms ms, raw samples SQL $raw_ms ms, PromQL $vm_ms ms"
fi

# ---- results ----
mkdir -p "$results"
cat >"$results/$out_name.json" <<JSON
{"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","store":"$store","gpus":$gpus,"days":$days,"raw_days":$rdays,
 "raw_step_s":$rstep,"hourly_rows":$hourly_rows,"raw_rows":$raw_rows,"load_ms":$load_ms,"db_bytes":$db_bytes,
 "binary":"$bin","reused":$([ -n "$reuse" ] && echo true || echo false),"startup_migrate_ms":$migrate_ms,
 "loadavg_before":"$load_start","cpu_requests":$cpu_n,"before":"$before_bin","upgrade_ms":$upgrade_ms,
 "queries":[${rows_json%,}],
 "team_gpu_hours":{"window_days":$rdays,"gpuinv_ms":$api_ms,"raw_sql_ms":$raw_ms,"promql_ms":$vm_ms,
   "victoria_metrics_load_s":$vm_load_s}}
JSON
python3 - "$results/$out_name.json" >"$results/$out_name.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("usage on %s: %d GPUs, %d days hourly (%d rows), %d days raw (%d samples), %s" %
      (d["store"], d["gpus"], d["days"], d["hourly_rows"], d["raw_days"], d["raw_rows"], d["date"]))
print()
num = lambda v: "" if v is None else "%.1f" % v
print("| query (30 days) | p50 ms | p95 ms | p99 ms | CPU ms before | CPU ms | bytes | same |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
same = lambda q: {True: "yes", False: "no"}.get(q.get("same"), "")
for q in d["queries"]:
    if q["status"] == 0:
        print("| %s | skipped | | | | | | |" % q["query"])
    elif q["status"] != 200:
        print("| %s | HTTP %d | | | | | | |" % (q["query"], q["status"]))
    elif q.get("single_ms") is not None:
        print("| %s | %.1f (one request) | | | %s | %s | %d | %s |" % (q["query"], q["single_ms"],
              num(q.get("cpu_ms_before")), num(q.get("cpu_ms")), q["bytes"], same(q)))
    else:
        print("| %s | %s | %s | %s | %s | %s | %d | %s |" % (q["query"], num(q["p50_ms"]), num(q["p95_ms"]), num(q["p99_ms"]),
              num(q.get("cpu_ms_before")), num(q.get("cpu_ms")), q["bytes"], same(q)))
if d.get("upgrade_ms") is not None:
    print()
    print("migrations of the measured binary on the loaded database: %.1f s" % (d["upgrade_ms"] / 1000))
t = d["team_gpu_hours"]
if t["gpuinv_ms"] is not None:
    print()
    print("team GPU-hours over %d days (median ms): gpuinv %s, raw samples SQL %s, PromQL on VictoriaMetrics %s"
          % (t["window_days"], t["gpuinv_ms"], t["raw_sql_ms"], t["promql_ms"]))
PY
cat "$results/$out_name.md"
