# Sourced by the pull benchmarks (bench/cloud_pull.sh, bench/slurm.sh):
# the store they run the server on, picked by BENCH_STORE.
#   BENCH_STORE=sqlite      (default) a database file in the work directory
#   BENCH_STORE=postgresql  a throwaway PostgreSQL (tests/lib/pg.sh) in the
#                           work directory, stopped by bench_store_stop
# bench_store_start WORK NAME sets bench_db (a path or a libpq URL) and,
# on PostgreSQL, bench_pg_dir (called again, it adds database NAME to the
# same cluster); bench_pg_cpu prints the CPU seconds (user +
# system) the cluster has used so far: the postmaster and every process of
# it, live or already ended (the postmaster's reaped children), so that the
# difference over a pull is what the database spent on it.
# bench_two_pulls URL ID runs source ID of the server at URL (process
# $pid, token $token) twice and sets, for before (0) and after each run
# (1, 2): t0..t2 (wall clock), c0..c2 (the server's CPU seconds), p0..p2
# (bench_pg_cpu), rss0, hwm1, hwm2 (KiB), run1, run2 (the answers) and
# ok1, ok2 ("ok":true or false).
bench_store=${BENCH_STORE:-sqlite}
bench_pg_dir=""
case "$bench_store" in
  sqlite) ;;
  postgresql | postgres | pg) bench_store=postgresql ;;
  *) echo "bench: BENCH_STORE must be sqlite or postgresql" >&2; exit 2 ;;
esac

bench_store_start() {
  local work=$1 name=$2 base
  if [ "$bench_store" = sqlite ]; then
    bench_db="$work/$name.db"
    return
  fi
  command -v psql >/dev/null || { echo "bench: psql is missing" >&2; exit 2; }
  if [ -z "$bench_pg_dir" ]; then # a second call adds a database to the running cluster
    chmod 755 "$work"
    bench_pg_dir="$work/pg"
    mkdir -p "$bench_pg_dir"
    tests/lib/pg.sh start "$bench_pg_dir" >/dev/null
  fi
  base=$(cat "$bench_pg_dir/conninfo")
  PGOPTIONS=--client-min-messages=warning psql -X -q -d "${base/\/\?//postgres?}" -c "CREATE DATABASE $name" >/dev/null
  bench_db="${base/\/\?//$name?}"
}

bench_store_stop() {
  [ -n "$bench_pg_dir" ] && tests/lib/pg.sh stop "$bench_pg_dir" >/dev/null 2>&1
  bench_pg_dir=""
}

bench_pg_cpu() {
  local pm t=0 p hz
  if [ -z "$bench_pg_dir" ] || [ ! -f "$bench_pg_dir/data/postmaster.pid" ]; then
    echo null
    return
  fi
  hz=$(getconf CLK_TCK)
  pm=$(head -n 1 "$bench_pg_dir/data/postmaster.pid")
  # utime + stime of the postmaster and its live children; cutime + cstime
  # of the postmaster (the children it reaped).
  t=$(sed 's/^.*) //' "/proc/$pm/stat" | awk '{ print $12 + $13 + $14 + $15 }')
  for p in $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
    [ -r "/proc/$p/stat" ] || continue
    t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
  done
  awk -v t="$t" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }'
}

bench_two_pulls() {
  local url=$1 id=$2 hz
  hz=$(getconf CLK_TCK)
  _cpu() { awk -v hz="$hz" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat"; }
  _run() { curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -X POST "$url/api/v1/sources/$id/run"; }
  _hwm() { awk '$1 == "VmHWM:" {print $2}' "/proc/$pid/status"; }
  rss0=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$pid/status")
  c0=$(_cpu) p0=$(bench_pg_cpu) t0=$(date +%s.%N)
  run1=$(_run)
  t1=$(date +%s.%N) c1=$(_cpu) p1=$(bench_pg_cpu) hwm1=$(_hwm)
  run2=$(_run)
  t2=$(date +%s.%N) c2=$(_cpu) p2=$(bench_pg_cpu) hwm2=$(_hwm)
  ok1=$(echo "$run1" | grep -o '"ok":[a-z]*' | head -1)
  ok2=$(echo "$run2" | grep -o '"ok":[a-z]*' | head -1)
}
