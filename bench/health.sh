#!/usr/bin/env bash
# The health rollup from scratch on a copy of a usage database (one that
# `BENCH_KEEP=1 bench/usage.sh` kept): its health rows and watermark are
# cleared, then each binary serves it with the usage rollup off until every
# GPU-day of usage_daily has its health row (at most 1,500 s). Prints per
# binary the GPU-days done, wall and CPU seconds of the server, how long it
# took to stop after SIGTERM, and the load.
# Usage: bench/health.sh DB BIN...
set -u
src=$1
shift
for bin in "$@"; do
  db=${TMPDIR:-/tmp}/gpuinv-health-bench.db
  rm -f $db $db-wal $db-shm
  cp $src $db
  sqlite3 $db "DELETE FROM gpu_health_daily; UPDATE health_watermark SET updated_at = 0, gpu_id = 0, day = 0"
  total=$(sqlite3 $db "SELECT count(*) FROM usage_daily")
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  t0=$(date +%s.%N)
  GPUINV_ADMIN_TOKEN=bench-health-xxxxxxxxxxxxxxxxxxxx $bin serve --db $db --listen 127.0.0.1:0 --no-rollup > "$db.log" 2>&1 &
  pid=$!
  n=0
  while sleep 5; do
    n=$(sqlite3 $db "SELECT count(*) FROM gpu_health_daily" 2>/dev/null || echo 0)
    [ "$n" -ge "$total" ] && break
    el=$(echo "$(date +%s.%N) - $t0" | bc)
    [ "${el%.*}" -gt 1500 ] && break
  done
  t1=$(date +%s.%N)
  read -r ut st < <(awk '{print $14, $15}' /proc/$pid/stat)
  tk=$(getconf CLK_TCK)
  ks=$(date +%s.%N); kill -TERM $pid; wait $pid; ke=$(date +%s.%N)
  echo "$bin: $n of $total GPU-days, wall $(echo "$t1 - $t0" | bc) s, CPU $(echo "($ut + $st) / $tk" | bc -l | cut -c1-6) s, stop after SIGTERM $(echo "$ke - $ks" | bc) s, load $load0 -> $(cut -d' ' -f1-3 /proc/loadavg)"
  rm -f $db $db-wal $db-shm $db.log
done
