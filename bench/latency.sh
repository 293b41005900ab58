#!/usr/bin/env bash
# Where a request waits at 32 connections: one gpuinv server on an existing
# database, wrk with BENCH_CONNECTIONS connections on one path, and beside
# the latency the server's CPU per request (with the PostgreSQL cluster's,
# when the database is one), how that CPU was spread over the server's
# threads (a thread that served no request is left out) and the pool's
# borrow waits from /metrics. Two binaries measured in turn on the same
# database compare threading models in one session.
# Usage: bench/latency.sh LABEL BIN DB PATH [SECONDS] [serve flags...]
#   DB: a SQLite file or a PostgreSQL URL; PG_PID: the cluster's postmaster
#   pid, to count its backends' CPU; BENCH_TOKEN: an admin token the
#   database already has or that the server creates (default
#   bench-token-0123456789abcdef); BENCH_CONNECTIONS (default 32).
# Prints one line: LABEL non2xx rps p50 p99 max (ms), cpu_ms per request,
# load, pool metrics, thr=CPU ticks per busy thread.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
label=$1 bin=$2 db=$3 path=$4 dur=${5:-8}
shift $(($# < 5 ? 4 : 5))
conns=${BENCH_CONNECTIONS:-32}
tok=${BENCH_TOKEN:-bench-token-0123456789abcdef}
export BENCH_TOKEN=$tok
w=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-latency.XXXXXX")
pid=""
trap '[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$w"' EXIT
GPUINV_ADMIN_TOKEN=$tok "$bin" serve --db "$db" --listen 127.0.0.1:0 --no-rollup "$@" >"$w/out" 2>"$w/err" &
pid=$!
for _ in $(seq 300); do grep -q listening "$w/out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$w/out")
[ -n "$url" ] || { echo "bench: gpuinv did not start: $(tail -3 "$w/err")" >&2; exit 1; }
pg_pids=""
if [ -n "${PG_PID:-}" ]; then pg_pids="$PG_PID $(cat "/proc/$PG_PID/task/$PG_PID/children")"; fi
ticks() { # user + system clock ticks of the server and the cluster
  local t=0 p
  for p in $pid $pg_pids; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
  done
  echo "$t"
}
threads() { # "tid ticks" of each server thread, sorted by tid as text
  for t in /proc/$pid/task/*; do
    echo "$(basename "$t") $(sed 's/^.*) //' "$t/stat" | awk '{ print $12 + $13 }')"
  done | sort
}
wrk -t1 -c"$conns" -d2s -s bench/wrk-auth.lua "$url$path" >/dev/null
threads >"$w/t0"
t0=$(ticks)
res=$(wrk -t1 -c"$conns" -d"${dur}s" -s bench/wrk-auth.lua "$url$path" | sed -n 's/^RESULT //p')
t1=$(ticks)
threads >"$w/t1"
thr=$(join "$w/t0" "$w/t1" | awk '{ d = $3 - $2; if (d > 0) printf "%d,", d }')
pool=$(curl -s -H "Authorization: Bearer $tok" "$url/metrics" | sed -n 's/^gpuinv_db_pool_\([a-z_]*\) \(.*\)/\1=\2/p' | tr '\n' ' ')
echo "$res ticks=$((t1 - t0)) hz=$(getconf CLK_TCK)" | tr ' ' '\n' | awk -F= -v l="$label" \
  -v ld="$(cut -d' ' -f1 /proc/loadavg)" -v pool="$pool" -v thr="$thr" '{ v[$1] = $2 } END {
    printf "%s non2xx=%d rps=%.0f p50=%.1f p99=%.1f max=%.0f cpu_ms=%.3f load=%s %sthr=%s\n", l,
      v["non2xx"], v["rps"], v["p50_us"] / 1000, v["p99_us"] / 1000, v["max_us"] / 1000,
      v["requests"] ? v["ticks"] * 1000 / v["hz"] / v["requests"] : 0, ld, pool, thr }'
