#!/usr/bin/env bash
# Push-API ingest throughput next to a raw bulk insert of the same rows into the same store.
# Usage: bench/ingest.sh [THREADS] [BATCHES_PER_THREAD] [columns|objects]; needs build/gpuinv.
# columns (default) is the form the agent sends; objects has one JSON object per sample.
# With BENCH_PG set to the connection string of an empty PostgreSQL database (or to "auto": a
# throwaway one started here with tests/lib/pg.sh), the server runs on it and the reference is a
# multi-row INSERT into that database's gpu_samples, and a COPY of the same rows beside it.
# GPUINV_BIN picks another server binary (default build/gpuinv), to compare two builds in one session.
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
  psql -X -q -d "${base/\/\?//postgres?}" -c "CREATE DATABASE bench" >/dev/null
  BENCH_PG="${base/\/\?//bench?}"
fi
cc -O2 -o "$work/ingest_bench" bench/ingest_bench.c $(pkg-config --cflags --libs libcurl sqlite3 libpq) -lpthread
db=${BENCH_PG:-$work/gpuinv.db}
ref=${BENCH_PG:-$work/ref.db}
token=bench-token-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
GPUINV_ADMIN_TOKEN=$token "${GPUINV_BIN:-build/gpuinv}" serve --db "$db" --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
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
