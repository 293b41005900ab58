#!/usr/bin/env bash
# One evaluation of the five example lifecycle rules over 10,000 GPU assets with 30 days of
# health rollup rows each, and the push-ingest batch p99 measured while the rules run against
# the same ingest on an idle server. The five rules are evaluated in one pass
# (POST /lifecycle-rules/evaluate); the reference beside it is the five rules dry-run one at a
# time (one pass each). Wall time and the server's CPU time (utime + stime from /proc) for
# each. Usage: bench/rules.sh [GPUS] [INGEST_BATCHES] [JSONL]; needs build/gpuinv (Release)
# and the sqlite3 CLI. With JSONL, one line of figures is appended to it.
# BENCH_STORE=postgresql runs the server on a throwaway PostgreSQL (bench/store.sh): the fleet
# is written into a SQLite file as for SQLite, then `gpuinv db copy` moves it onto each
# database the runs use, and each CPU figure adds the database's (server + cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/store.sh
gpus=${1:-10000}
batches=${2:-400}
jsonl=${3:-}
work=$(mktemp -d)
pid=""
# BENCH_KEEP=1 keeps the work directory (and a PostgreSQL the bench started, running) to look into.
if [ "${BENCH_KEEP:-0}" = 1 ]; then
  trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; echo "bench: kept $work"' EXIT
else
  trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; bench_store_stop; rm -rf "$work"' EXIT
fi
cc -O2 -o "$work/ingest_bench" bench/ingest_bench.c $(pkg-config --cflags --libs libcurl sqlite3 libpq) -lpthread
token=bench-token-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')

start() { # start DB: the server on a database file, its URL in $url
  GPUINV_ADMIN_TOKEN=$token build/gpuinv serve --db "$1" --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 600); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
  [ -n "$url" ] || { echo "bench: the server did not start:" >&2; cat "$work/err" >&2; exit 1; }
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
cpu() { # CPU seconds so far of the server and, on PostgreSQL, of the database cluster
  local pg
  pg=$(bench_pg_cpu)
  [ "$pg" = null ] && pg=0
  awk -v pg="$pg" '{ printf "%.2f", ($14 + $15) / 100 + pg }' "/proc/$pid/stat"
}
# copy NAME: the fleet (base.db) as a database of its own, its path or URL in $db
copy() {
  if [ "$bench_store" = sqlite ]; then
    db="$work/$1.db"
    cp "$work/base.db" "$db"
    return
  fi
  bench_store_start "$work" "$1"
  db=$bench_db
  build/gpuinv db copy --from "$work/base.db" --to "$db" >"$work/copy-$1.out"
}
# ref NAME: the ingest reference's target (bench/ingest_bench.c): a file of its own on SQLite,
# the server's own database on PostgreSQL
ref() { if [ "$bench_store" = sqlite ]; then echo "$work/ref-$1.db"; else echo "$db"; fi; }
api() { curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }

# The schema, then the fleet straight into the file: GPUs, their assets, spares, and 30 days of
# health rows. GPU i with i % 100 = 1 has XID errors on 5 days, = 2 an uncorrectable ECC error
# today, = 3 runs hot every day, = 4 idles every day; i % 100 = 5 has a warranty ending in 10 days.
start "$work/base.db"
stop
now=$(date +%s)
today=$((now - now % 86400))
warranty=$(date -u -d "@$((now + 10 * 86400))" +%F)
sqlite3 "$work/base.db" <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
INSERT INTO datacenters (id, name, created_at, updated_at) VALUES (1, 'bench-dc', $now, $now);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $gpus)
INSERT INTO gpus (id, uuid, serial, model, first_seen_at, last_seen_at)
  SELECT i, printf('GPU-rb-%06d', i), printf('RS%06d', i), 'H100', $now, $now FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $gpus)
INSERT INTO assets (tag, kind, serial, model, datacenter_id, stage, stage_since, gpu_uuid, source,
                    warranty_end, created_at, updated_at)
  SELECT printf('RB-%06d', i), 'gpu', printf('RS%06d', i), 'H100', 1, 'active', $now,
         printf('GPU-rb-%06d', i), 'api', CASE WHEN i % 100 = 5 THEN '$warranty' END, $now, $now
  FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $gpus / 50)
INSERT INTO assets (tag, kind, model, datacenter_id, stage, stage_since, source, created_at, updated_at)
  SELECT printf('RB-SPARE-%05d', i), 'gpu', 'H100', 1, 'spare', $now, 'api', $now, $now FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $gpus),
     d(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM d WHERE k < 29)
INSERT INTO gpu_health_daily (gpu_id, day, samples, xid_events, xid_codes, ecc_corrected_inc,
                              ecc_uncorrected_inc, temp_p95_c, temp_max_c, util_avg, energy_wh, updated_at)
  SELECT i, $today - k * 86400, 8640,
         CASE WHEN i % 100 = 1 AND k % 6 = 0 THEN 2 ELSE 0 END,
         CASE WHEN i % 100 = 1 AND k % 6 = 0 THEN '[79]' ELSE '[]' END, 0,
         CASE WHEN i % 100 = 2 AND k = 0 THEN 1 ELSE 0 END,
         CASE WHEN i % 100 = 3 THEN 90 ELSE 60 + (i + k) % 20 END,
         CASE WHEN i % 100 = 3 THEN 95 ELSE 70 + (i + k) % 20 END,
         CASE WHEN i % 100 = 4 THEN 3 ELSE 20 + (i * 7 + k) % 70 END, 10000, $now
  FROM n, d;
COMMIT;
SQL
echo "fleet: $gpus GPUs, $((gpus * 30)) health rows"

# Baseline: the ingest alone.
copy a
start "$db"
ptoken=$(api -d '{"name":"bench","role":"pusher","source":"bench"}' "$url/api/v1/tokens" | sed 's/.*"token":"\([^"]*\)".*/\1/')
"$work/ingest_bench" "$url" "$ptoken" 1 "$batches" "$(ref a)" columns | tee "$work/alone.json"
ids=$(api "$url/api/v1/lifecycle-rules" | grep -o '"id": *[0-9]*' | grep -o '[0-9]*' | head -5)

# The five rules dry-run on the idle server, nothing written: one at a time (the reference),
# then all five in one pass.
csv=$(echo $ids | tr ' ' ',')
c0=$(cpu); t0=$(date +%s.%N)
for id in $ids; do api -X POST "$url/api/v1/lifecycle-rules/$id/dry-run" >/dev/null; done
t1=$(date +%s.%N); c1=$(cpu)
api -X POST -d "{\"ids\":[$csv]}" "$url/api/v1/lifecycle-rules/evaluate" >"$work/pass.json"
t2=$(date +%s.%N); c2=$(cpu)
one_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
one_cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
pass_wall=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
pass_cpu=$(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.2f", b - a }')
echo "dry run of the five rules, idle server: one at a time $one_wall s wall ($one_cpu s CPU), one pass $pass_wall s wall ($pass_cpu s CPU)"
echo "one pass matches: $(grep -o '"matched": *[0-9]*' "$work/pass.json" | tr '\n' ' ')"
# The same pass with its writes (every firing's actions), still on the idle server.
c2=$(cpu); t2=$(date +%s.%N)
api -X POST -d "{\"ids\":[$csv],\"dry_run\":false}" "$url/api/v1/lifecycle-rules/evaluate" >"$work/first.json"
t3=$(date +%s.%N); c3=$(cpu)
run_wall=$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.2f", b - a }')
run_cpu=$(awk -v a="$c2" -v b="$c3" 'BEGIN { printf "%.2f", b - a }')
echo "first pass with its writes, idle server: $run_wall s wall ($run_cpu s CPU)"
stop

# The same ingest while the five rules run back to back, over and over, on a fresh copy.
copy b
start "$db"
ptoken=$(api -d '{"name":"bench","role":"pusher","source":"bench"}' "$url/api/v1/tokens" | sed 's/.*"token":"\([^"]*\)".*/\1/')
(
  while [ ! -e "$work/ingest-done" ]; do
    t0=$(date +%s.%N)
    api -X POST -d "{\"ids\":[$csv],\"dry_run\":false}" "$url/api/v1/lifecycle-rules/evaluate" >"$work/run.json"
    t1=$(date +%s.%N)
    echo "$t0 $t1" >>"$work/evals"
  done
) &
loop=$!
"$work/ingest_bench" "$url" "$ptoken" 1 "$batches" "$(ref b)" columns | tee "$work/during.json"
touch "$work/ingest-done"
wait "$loop"
stop
echo "last pass: $(grep -o '"matched": *[0-9]*\|"evaluated": *[0-9]*' "$work/run.json" | tr '\n' ' ')"
evals=$(awk '{ d = $2 - $1; n++; s += d; if (n == 1) f = d; if (d > m) m = d } END {
  printf "%d %.2f %.2f %.2f", n, f, s / n, m }' "$work/evals")
set -- $evals
echo "passes of the five rules during the ingest: $1, first (with its writes) $2 s, mean $3 s, max $4 s"
p99a=$(grep -o '"batch_p99_ms":[0-9.]*' "$work/alone.json" | cut -d: -f2)
p99b=$(grep -o '"batch_p99_ms":[0-9.]*' "$work/during.json" | cut -d: -f2)
echo "ingest batch p99: alone $p99a ms, during the rule passes $p99b ms"
if [ -n "$jsonl" ]; then
  printf '{"bench":"rules","store":"%s","date":"%s","gpus":%s,"health_rows":%s,"load1":%s,"dry_one_at_a_time_wall_s":%s,"dry_one_at_a_time_cpu_s":%s,"dry_one_pass_wall_s":%s,"dry_one_pass_cpu_s":%s,"first_run_wall_s":%s,"first_run_cpu_s":%s,"passes_during_ingest":%s,"first_pass_s":%s,"mean_pass_s":%s,"max_pass_s":%s,"ingest_p99_alone_ms":%s,"ingest_p99_during_ms":%s}\n' \
    "$bench_store" "$(date -u +%FT%TZ)" "$gpus" "$((gpus * 30))" "$(cut -d' ' -f1 /proc/loadavg)" "$one_wall" "$one_cpu" \
    "$pass_wall" "$pass_cpu" "$run_wall" "$run_cpu" "$1" "$2" "$3" "$4" "$p99a" "$p99b" >>"$jsonl"
fi
