#!/usr/bin/env bash
# Before/after of the usage report's paths on one database: bench/usage.sh
# on a fresh copy of DB (a SQLite file kept by BENCH_KEEP=1, or the URL of
# a PostgreSQL database a BENCH_KEEP=1 run left, copied as a template;
# either left as it is)
# with BEFORE measured first (it must not know the newer migrations), then
# build/gpuinv after it migrated the copy (timed): CPU ms per request of
# each /api/v1/usage path and whether both answered the same bytes.
# Usage: bench/usage_pages_ab.sh DB BEFORE [OUT]
#   DB      the SQLite file or postgres:// URL to copy (bench/usage.sh with BENCH_KEEP=1)
#   BEFORE  the earlier binary
#   OUT     results name under bench/results (default usage-pages-ab)
# Environment: BENCH_CPU_N (default 20), BENCH_SKIP (default: every path
# but /api/v1/usage's), TMPDIR (where the copy goes; it is removed after).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 DB BEFORE [OUT]" >&2; exit 2; }
db=$1 before=$2 out=${3:-usage-pages-ab}
[ -x "$before" ] || { echo "$0: $before is not an executable" >&2; exit 2; }
copy=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-ab.XXXXXX")
case "$db" in
  postgres://* | postgresql://*)
    name=ab_$$
    admin=${db/\/gpuinv\?/\/postgres?}
    psql -X -q -v ON_ERROR_STOP=1 "$admin" -c "CREATE DATABASE $name TEMPLATE gpuinv"
    trap 'psql -X -q "$admin" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)"; rm -rf "$copy"' EXIT
    reuse=${db/\/gpuinv\?/\/$name?} ;;
  *)
    [ -f "$db" ] || { echo "$0: no database at $db" >&2; exit 2; }
    trap 'rm -rf "$copy"' EXIT
    cp "$db" "$copy/gpuinv.db"
    reuse=$copy/gpuinv.db ;;
esac
skip='heatmap|showback|trend|waste|savings|consumers|allocated-idle|overrequest|^idle$'
echo "bench: load before: $(cut -d' ' -f1-3 /proc/loadavg)"
BENCH_REUSE=$reuse BENCH_BEFORE=$before BENCH_CPU_N=${BENCH_CPU_N:-20} BENCH_WRK=0 \
  BENCH_VM=0 BENCH_RAW=0 BENCH_SKIP=${BENCH_SKIP:-$skip} BENCH_OUT=$out bench/usage.sh
echo "bench: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
