#!/bin/bash
# The CPU per request of a server's whole process (every thread, where
# bench/usage.sh counts only the request threads, MHD-worker and gi-worker;
# binaries before the workers were named read about 0 there) for the
# paged host/GPU reports and the 30-day hour-step team report, over the 30
# days to the last midnight. The process's CPU over 5 idle seconds is
# measured first and its rate taken off (background jobs of a database
# the binary has not seen).
# Usage: bench/usage_whole_cpu.sh BINARY SQLITE_DB [PORT] [N]
# BENCH_PATHS (space-separated paths with their query, such as
# "/api/v1/reports/showback?month=M") replaces the usage reports measured.
set -euo pipefail
bin=$1 db=$2 port=${3:-18731} n=${4:-20}
tok=benchtok$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
GPUINV_ADMIN_TOKEN=$tok setsid "$bin" serve --db "$db" --listen 127.0.0.1:"$port" >/dev/null 2>&1 </dev/null &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
sleep 4
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
now=$(date +%s) end=$((now - now % 3600)) de=$((end - end % 86400))
to=$(date -u -d "@$de" +%Y-%m-%dT%H:%M:%SZ) from=$(date -u -d "@$((de - 30 * 86400))" +%Y-%m-%dT%H:%M:%SZ)
a=$(ticks); sleep 5; idle=$(($(ticks) - a))
echo "$bin: idle ticks over 5 s: $idle; load $(cut -d' ' -f1-3 /proc/loadavg)"
paths=()
for q in "group_by=host&step=day&limit=100" "group_by=host&step=day&limit=100&offset=200" \
  "group_by=gpu&step=day&limit=100" "group_by=team&step=hour"; do
  paths+=("/api/v1/usage?$q&from=$from&to=$to")
done
[ -z "${BENCH_PATHS:-}" ] || read -r -a paths <<<"$BENCH_PATHS"
for q in "${paths[@]}"; do
  u="http://127.0.0.1:$port$q"
  curl -sf -o /dev/null -H "Authorization: Bearer $tok" "$u"
  a=$(ticks) t0=$(date +%s.%N)
  for _ in $(seq "$n"); do curl -sf -o /dev/null -H "Authorization: Bearer $tok" "$u"; done
  t1=$(date +%s.%N) b=$(ticks)
  awk -v q="$q" -v d=$((b - a)) -v t0="$t0" -v t1="$t1" -v idle="$idle" -v hz="$hz" -v n="$n" \
    'BEGIN { w = t1 - t0; printf "%s: %.1f ms CPU per request (wall %.0f ms)\n", q,
             (d - idle * w / 5) * 1000 / hz / n, w * 1000 / n }'
done
