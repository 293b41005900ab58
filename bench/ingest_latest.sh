#!/usr/bin/env bash
# The newest values of a push batch's GPUs on PostgreSQL, each way the driver could send them
# (bench/ingest_latest.c): backend CPU per batch. A throwaway PostgreSQL (tests/lib/pg.sh), its
# schema made by the server's migrations (build/gpuinv, or GPUINV_BIN).
# Usage: bench/ingest_latest.sh [GPUS_PER_BATCH] [BATCHES] [GPUS_IN_TABLE]
set -euo pipefail
cd "$(dirname "$0")/.."
gpus=${1:-8}
rounds=${2:-2000}
rows=${3:-10000}
work=$(mktemp -d)
pid=""
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; tests/lib/pg.sh stop "$work/pg"; rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/pg"
tests/lib/pg.sh start "$work/pg" >/dev/null
base=$(cat "$work/pg/conninfo")
psql -X -q -d "${base/\/\?//postgres?}" -c "CREATE DATABASE bench" >/dev/null
db="${base/\/\?//bench?}"
cc -O2 -o "$work/ingest_latest" bench/ingest_latest.c $(pkg-config --cflags --libs libpq)
# The server migrates the empty database at start-up; it is stopped once listening.
GPUINV_ADMIN_TOKEN=bench-latest-migrate-only "${GPUINV_BIN:-build/gpuinv}" serve --db "$db" --listen 127.0.0.1:0 \
  >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 300); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done

kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""
echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$work/ingest_latest" "$db" "$gpus" "$rounds" "$rows"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
