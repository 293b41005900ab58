#!/usr/bin/env bash
# The consumer lists before and after, on the same data: bench/usage.sh over
# the routes that read the consumer days (top consumers with and without a
# team filter and over the default range, allocated-idle, over-requesting
# workloads, savings, the consumer report), each asked of BENCH_BEFORE first
# and then of GPUINV on the database it migrated: CPU ms per request of both
# and whether their answers are the same bytes. No wrk, no VictoriaMetrics,
# no raw-samples reference: CPU time only, for a shared machine.
# Usage: BENCH_BEFORE=/path/to/old/gpuinv BENCH_REUSE=kept.db bench/consumer_lists.sh
# Environment (besides those of bench/usage.sh, passed through):
#   BENCH_BEFORE=         the earlier binary (required)
#   BENCH_REUSE=          a SQLite database kept by bench/usage.sh (BENCH_KEEP=1),
#                         copied first so that the kept one stays unmigrated; or a
#                         postgres:// URL (then BENCH_STORE=postgresql), used as it is
#   BENCH_CPU_N=5         requests per route whose CPU time is counted
#   BENCH_OUT=consumer-lists  results name (bench/results/NAME.json and .md)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${BENCH_BEFORE:-}" ] || { echo "consumer_lists: set BENCH_BEFORE" >&2; exit 2; }
[ -n "${BENCH_REUSE:-}" ] || { echo "consumer_lists: set BENCH_REUSE" >&2; exit 2; }
db=$BENCH_REUSE
case "$db" in
  postgres://* | postgresql://*) ;;
  *)
    copy=$(mktemp "${TMPDIR:-/tmp}/consumer-lists.XXXXXX.db")
    trap 'rm -f "$copy" "$copy-wal" "$copy-shm"' EXIT
    cp "$db" "$copy"
    db=$copy
    ;;
esac
# Everything but the consumer routes is skipped.
BENCH_SKIP='^(team|env|pool|cluster|cloud|model|datacenter|host|gpu|heatmap|showback|trend|waste|idle)' \
  BENCH_REUSE=$db BENCH_CPU_N=${BENCH_CPU_N:-5} BENCH_WRK=0 BENCH_VM=0 BENCH_RAW=0 \
  BENCH_OUT=${BENCH_OUT:-consumer-lists} bench/usage.sh
