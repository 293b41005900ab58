# Sourced by the pull benchmarks (bench/cloud_pull.sh, bench/slurm.sh):
# the store they run the server on, picked by BENCH_STORE.
#   BENCH_STORE=sqlite      (default) a database file in the work directory
#   BENCH_STORE=postgresql  a throwaway PostgreSQL (tests/lib/pg.sh) in the
#                           work directory, stopped by bench_store_stop
# bench_store_start WORK NAME sets bench_db (a path or a libpq URL) and,
# on PostgreSQL, bench_pg_dir; bench_pg_cpu prints the CPU seconds (user +
# system) the cluster has used so far: the postmaster and every process of
# it, live or already ended (the postmaster's reaped children), so that the
# difference over a pull is what the database spent on it.
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
  chmod 755 "$work"
  bench_pg_dir="$work/pg"
  mkdir -p "$bench_pg_dir"
  tests/lib/pg.sh start "$bench_pg_dir" >/dev/null
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
