#!/usr/bin/env bash
# Rollup maintenance against ingest: BENCH_GPUS GPUs (8 per host) each report one sample per
# minute of simulated time (one batch per host and minute, the agent's columnar form), pushed as
# fast as the server takes them by BENCH_CLIENTS connections (bench/rollup_gen.mjs), twice on a
# fresh database each: with the usage:rollup job running as it does in production (every 60 s),
# then with it off (`gpuinv serve --no-rollup`). Reports for each the samples/s ingested and the
# rollup backlog (rows of usage_dirty) over time: with the job on it must stay bounded and drain
# once the push ends; with it off it only grows. Simulated time ends before the real present, so
# every pushed hour is a past hour the job must roll up; it runs far faster than real time, so the
# job's work per real second is many times what 10,000 GPUs reporting every minute give it.
# After the run without the job, one on-demand rollup (POST /api/v1/usage/rollup) works off the
# backlog that run left, timed: the job's own rate in GPU-hours per second, with no ingest, and
# its CPU time per GPU-hour (the server's and, on PostgreSQL, the database backends').
# Usage: bench/rollup_rate.sh   (needs build/gpuinv, node, sqlite3; psql for PostgreSQL)
# Environment:
#   BENCH_STORE=sqlite    or postgresql (a throwaway server, tests/lib/pg.sh)
#   BENCH_GPUS=10000      GPUs
#   BENCH_MINUTES=30      simulated minutes pushed per run
#   BENCH_CLIENTS=4       concurrent connections
#   BENCH_DRAIN=240       seconds to watch the backlog drain after the push (job on)
#   BENCH_EVERY=5         seconds between backlog readings
#   BENCH_MAX_S=0         stop each push after this many seconds (0: push every minute)
#   BENCH_MODES="on off"  which runs
#   GPUINV=build/gpuinv   binary to measure
#   BENCH_DEMAND=1        0: skip the on-demand rollup after the run without the job
#   BENCH_OUT=            where the results go (default bench/results/rollup_rate[-pg]-DATE.json)
#   BENCH_STMTS=          a library built from bench/ingest_stmts.c: the server runs with it
#                         preloaded and the statements it ran are counted per run
#   BENCH_PG_STATS=0      1 (PostgreSQL): the bench's cluster loads pg_stat_statements, and each
#                         run writes its statements by total time, beside the results
#                         (…-pgss-MODE.txt: calls, total and mean ms, rows, the statement)
# Each run also reports the CPU time per batch of the server and of PostgreSQL's backends over
# the sustained part of the push (cpu_sustained).
# Writes bench/results/rollup_rate[-pg]-DATE.json (one object per run) and prints a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
gpus=${BENCH_GPUS:-10000}
minutes=${BENCH_MINUTES:-30}
clients=${BENCH_CLIENTS:-4}
drain=${BENCH_DRAIN:-240}
every=${BENCH_EVERY:-5}
modes=${BENCH_MODES:-on off}
bin=${GPUINV:-build/gpuinv}
store=${BENCH_STORE:-sqlite}
die() { echo "bench: $*" >&2; exit 1; }
for tool in node curl sqlite3; do command -v "$tool" >/dev/null 2>&1 || die "$tool is missing"; done
[ -x "$bin" ] || die "$bin not found; build it first (make build)"
case "$store" in
  sqlite) suffix="" ;;
  postgresql | postgres | pg) store=postgresql suffix=-pg; command -v psql >/dev/null || die "psql is missing" ;;
  *) die "BENCH_STORE must be sqlite or postgresql" ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-rollup.XXXXXX")
chmod 755 "$work"
pid="" pg_dir=""
cleanup() {
  set +e
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$pg_dir" ] && tests/lib/pg.sh stop "$pg_dir" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
if [ "$store" = postgresql ]; then
  pg_dir="$work/pg"
  mkdir -p "$pg_dir"
  tests/lib/pg.sh start "$pg_dir" >/dev/null
  base=$(cat "$pg_dir/conninfo")
  if [ "${BENCH_PG_STATS:-0}" = 1 ]; then
    printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\npg_stat_statements.max = 2000\n" \
      >>"$pg_dir/data/postgresql.conf"
    owner=(); [ "$(id -u)" = 0 ] && owner=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    "${owner[@]}" /usr/lib/postgresql/15/bin/pg_ctl -D "$pg_dir/data" -l "$pg_dir/postgres.log" -w -t 60 restart >/dev/null
  fi
  export BENCH_PG_PID
  BENCH_PG_PID=$(head -n 1 "$pg_dir/data/postmaster.pid")
fi
# CPU ticks (1/100 s) of process $1 and, on PostgreSQL, of every backend of the bench's cluster.
cpu_ticks() {
  local t=0 f pp
  for f in /proc/[0-9]*/stat; do
    read -r -a st <"$f" 2>/dev/null || continue
    pp=${st[3]}
    if [ "${st[0]}" = "$1" ] || { [ -n "${BENCH_PG_PID:-}" ] && [ "$pp" = "$BENCH_PG_PID" ]; }; then
      t=$((t + st[13] + st[14]))
    fi
  done 2>/dev/null
  echo "$t"
}
out=${BENCH_OUT:-bench/results/rollup_rate${suffix}-$(date -u +%Y-%m-%d).json}
results="[]"
# Simulated time: whole minutes ending at least an hour before now.
now=$(date +%s)
t0=$(( now - now % 3600 - ( (minutes + 59) / 60 + 1 ) * 3600 ))
for mode in $modes; do
  if [ "$store" = postgresql ]; then
    PGOPTIONS=--client-min-messages=warning psql -X -q -d "${base/\/\?//postgres?}" \
      -c "DROP DATABASE IF EXISTS rr_$mode" -c "CREATE DATABASE rr_$mode" >/dev/null
    db="${base/\/\?//rr_$mode?}"
    if [ "${BENCH_PG_STATS:-0}" = 1 ]; then
      psql -X -q -d "$db" -c "CREATE EXTENSION pg_stat_statements" -c "SELECT pg_stat_statements_reset()" >/dev/null
    fi
  else
    db="$work/rr_$mode.db"
  fi
  flags=()
  [ "$mode" = off ] && flags+=(--no-rollup)
  token=bench-token-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
  : >"$work/out"
  preload=()
  [ -n "${BENCH_STMTS:-}" ] && preload=(env LD_PRELOAD="$BENCH_STMTS" GI_STMT_COUNTS="$work/stmts-$mode")
  GPUINV_ADMIN_TOKEN=$token "${preload[@]}" "$bin" serve --db "$db" --listen 127.0.0.1:0 "${flags[@]}" >"$work/out" 2>"$work/err-$mode" &
  pid=$!
  for _ in $(seq 200); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
  [ -n "$url" ] || die "the server did not start: $(cat "$work/err-$mode")"
  ptoken=$(curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"name":"bench","role":"pusher","source":"bench"}' "$url/api/v1/tokens" | sed 's/.*"token":"\([^"]*\)".*/\1/')
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  res=$(BENCH_SERVER_PID=$pid node bench/rollup_gen.mjs "$url" "$ptoken" "$db" "$gpus" "$minutes" "$clients" "$t0" \
    "$([ "$mode" = on ] && echo "$drain" || echo 0)" "$every" "${BENCH_MAX_S:-0}") ||
    { tail -20 "$work/err-$mode" >&2; die "the load generator failed (server log above)"; }
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  demand="null"
  if [ "$mode" = off ] && [ "${BENCH_DEMAND:-1}" != 0 ]; then
    c1=$(cpu_ticks "$pid")
    t1=$(date +%s.%N)
    r=$(curl -s -X POST -H "Authorization: Bearer $token" "$url/api/v1/usage/rollup")
    t2=$(date +%s.%N)
    c2=$(cpu_ticks "$pid")
    demand=$(node -e 'const r = JSON.parse(process.argv[1]); const s = Number(process.argv[3]) - Number(process.argv[2]);
      const cpu = (Number(process.argv[5]) - Number(process.argv[4])) * 10;
      console.log(JSON.stringify({ seconds: Math.round(s * 10) / 10, gpu_hours: r.hours, dirty_left: r.dirty_left,
        gpu_hours_per_s: Math.round(r.hours / s), cpu_ms_per_gpu_hour: r.hours ? Math.round(cpu / r.hours * 100) / 100 : null }));' \
      "$r" "$t1" "$t2" "$c1" "$c2")
  fi
  if [ "$store" = postgresql ] && [ "${BENCH_PG_STATS:-0}" = 1 ]; then
    mkdir -p bench/results
    psql -X -A -F ' | ' -q -d "$db" -c "SELECT calls, round(total_exec_time::numeric, 1) AS total_ms,
      round(mean_exec_time::numeric, 3) AS mean_ms, rows, regexp_replace(query, '\s+', ' ', 'g')
      FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'rr_$mode'
      ORDER BY total_exec_time DESC LIMIT 80" >"${out%.json}-pgss-$mode.txt"
  fi
  kill -TERM "$pid"; wait "$pid" || true; pid=""
  rolled=$(grep -c 'job usage:rollup' "$work/err-$mode" || true)
  if [ -n "${BENCH_STMTS:-}" ] && [ -f "$work/stmts-$mode" ]; then
    mkdir -p bench/results
    sort -rn "$work/stmts-$mode" >"${out%.json}-stmts-$mode.txt"
  fi
  res=$(node -e 'const r = JSON.parse(process.argv[1]); Object.assign(r, { store: process.argv[2], rollup: process.argv[3],
    loadavg_before: process.argv[4], loadavg_after: process.argv[5], nproc: Number(process.argv[6]),
    rollup_log_lines: Number(process.argv[7]), rollup_on_demand_after: JSON.parse(process.argv[8]),
    measured_at: new Date().toISOString() }); console.log(JSON.stringify(r));' \
    "$res" "$store" "$mode" "$load_before" "$load_after" "$(nproc)" "$rolled" "$demand")
  results=$(node -e 'const a = JSON.parse(process.argv[1]); a.push(JSON.parse(process.argv[2])); console.log(JSON.stringify(a));' "$results" "$res")
done
node -e 'console.log(JSON.stringify(JSON.parse(process.argv[1]), null, 1))' "$results" >"$out"
node -e '
const a = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
console.log("| store | rollup job | samples/s (sustained) | samples/s (all) | batch p99 ms | backlog max | at push end | drained after | load before → after |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of a) console.log(`| ${r.store} | ${r.rollup} | ${r.samples_per_s_sustained ?? "first minute not done"} | ${r.samples_per_s_all} | ${r.batch_p99_ms} | ${r.backlog_max} | ${r.backlog_at_push_end} | ${r.drained_after_push_s === null ? "not drained (end " + r.backlog_end + ")" : r.drained_after_push_s + " s"} | ${r.loadavg_before} → ${r.loadavg_after} |`);
for (const r of a) {
  const d = r.rollup_on_demand_after;
  if (d) console.log(`${r.store}: one rollup on demand after the run without the job: ${d.gpu_hours} GPU-hours in ${d.seconds} s (${d.gpu_hours_per_s}/s, ${d.cpu_ms_per_gpu_hour} ms of CPU each, server and database), ${d.dirty_left} left`);
}
' "$out"
echo "results: $out"
