#!/usr/bin/env bash
# Push-API ingest throughput next to a raw bulk insert of the same rows into the same store.
# Usage: bench/ingest.sh [THREADS] [BATCHES_PER_THREAD] [columns|objects]; needs build/gpuinv.
# columns (default) is the form the agent sends; objects has one JSON object per sample.
# With BENCH_PG set to the connection string of an empty PostgreSQL database (or to "auto": a
# throwaway one started here with tests/lib/pg.sh), the server runs on it and the reference is a
# multi-row INSERT into that database's gpu_samples, and a COPY of the same rows beside it.
# GPUINV_BIN picks another server binary (default build/gpuinv), to compare two builds in one session.
# BENCH_PG_STATS=FILE (with BENCH_PG=auto): the throwaway PostgreSQL loads pg_stat_statements (planning
# timed too), and FILE gets the statements of the whole run (the server's, then the references')
# ordered by the time spent in them: calls, planning and execution milliseconds, rows, the text.
# BENCH_STMTS=FILE: the server runs with bench/ingest_stmts.c preloaded, and FILE gets its counts of
# statements and of round trips by text (the whole server run, start-up included).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
per=${2:-100}
work=$(mktemp -d)
pg_dir=""
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; [ -z "$pg_dir" ] || tests/lib/pg.sh stop "$pg_dir"; rm -rf "$work"' EXIT
pid=""
if [ "${BENCH_PG:-}" = auto ]; then
  pg_dir="$work/pg"
  chmod 755 "$work"
  mkdir -p "$pg_dir"
  tests/lib/pg.sh start "$pg_dir" >/dev/null
  base=$(cat "$pg_dir/conninfo")
  if [ -n "${BENCH_PG_STATS:-}" ]; then
    cat >>"$pg_dir/data/postgresql.conf" <<EOF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track_planning = on
pg_stat_statements.max = 2000
EOF
    # The cluster belongs to nobody when we are root (see tests/lib/pg.sh).
    owner=()
    [ "$(id -u)" != 0 ] || owner=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    "${owner[@]}" /usr/lib/postgresql/15/bin/pg_ctl -D "$pg_dir/data" -l "$pg_dir/postgres.log" \
      -w -t 60 restart >/dev/null
  fi
  psql -X -q -d "${base/\/\?//postgres?}" -c "CREATE DATABASE bench" >/dev/null
  BENCH_PG="${base/\/\?//bench?}"
  [ -z "${BENCH_PG_STATS:-}" ] || psql -X -q -d "$BENCH_PG" -c "CREATE EXTENSION pg_stat_statements"
fi
cc -O2 -o "$work/ingest_bench" bench/ingest_bench.c $(pkg-config --cflags --libs libcurl sqlite3 libpq) -lpthread
db=${BENCH_PG:-$work/gpuinv.db}
ref=${BENCH_PG:-$work/ref.db}
token=bench-token-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
preload=()
if [ -n "${BENCH_STMTS:-}" ]; then
  cc -shared -fPIC -O2 -o "$work/ingest_stmts.so" bench/ingest_stmts.c $(pkg-config --cflags libpq) -ldl
  preload=(env LD_PRELOAD="$work/ingest_stmts.so" GI_STMT_COUNTS="$work/stmts")
fi
GPUINV_ADMIN_TOKEN=$token "${preload[@]}" "${GPUINV_BIN:-build/gpuinv}" serve --db "$db" --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 100); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
ptoken=$(curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"name":"bench","role":"pusher","source":"bench"}' "$url/api/v1/tokens" | sed 's/.*"token":"\([^"]*\)".*/\1/')
# CPU accounting: the server, and the throwaway PostgreSQL's postmaster with its backends.
export BENCH_SERVER_PID=$pid
if [ -n "$pg_dir" ]; then
  BENCH_PG_PID=$(head -n 1 "$pg_dir/data/postmaster.pid")
  export BENCH_PG_PID
fi
"$work/ingest_bench" "$url" "$ptoken" "$threads" "$per" "$ref" "${3:-columns}"
if [ -n "${BENCH_STMTS:-}" ]; then
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  sort -t $'\t' -k1,1nr "$work/stmts" >"$BENCH_STMTS"
fi
if [ -n "$pg_dir" ] && [ -n "${BENCH_PG_STATS:-}" ]; then
  psql -X -q -A -F $'\t' -d "$BENCH_PG" -c "SELECT calls, round(total_plan_time::numeric, 1) AS plan_ms,
    round(total_exec_time::numeric, 1) AS exec_ms, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 160)
    AS query FROM pg_stat_statements WHERE calls >= 10 ORDER BY total_plan_time + total_exec_time DESC LIMIT 60" \
    >"$BENCH_PG_STATS"
fi
