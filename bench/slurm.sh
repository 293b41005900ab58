#!/usr/bin/env bash
# A Slurm pull of N job records (default 100,000) through the stand-in
# sacct (tests/lib/sacct/): the wall time of POST /api/v1/sources/{id}/run
# and the server's peak RSS, beside the time to parse the same bytes alone
# (bench/slurm_parse.c). The jobs run on 500 nodes of which 50 are known
# hosts with 8 GPUs each (so a tenth of the jobs match GPUs), 1 to 8 GPUs
# each, over the last day; a second pull replays the same listing (the
# overlap: nothing new, every job compared).
# BENCH_STORE=postgresql runs the server on a throwaway PostgreSQL
# (bench/store.sh) and reports the database's CPU beside the server's.
# Usage: bench/slurm.sh [JOBS] [--db URL]   (needs build/gpuinv)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-100000}
db_arg=${3:-}
work=$(mktemp -d)
pids=()
# shellcheck source=bench/store.sh
. bench/store.sh
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; bench_store_stop; rm -rf "$work"' EXIT
now=$(date +%s)

awk -v n="$jobs" -v now="$now" 'BEGIN {
  srand(42); us = sprintf("%c", 31)
  for (i = 1; i <= n; i++) {
    node = int(rand() * 500); g = 1 + int(rand() * 8)
    start = now - 86400 + int(rand() * 80000); dur = 60 + int(rand() * 14400)
    end = start + dur; state = "COMPLETED"
    if (end > now) { end = "Unknown"; state = "RUNNING"; dur = now - start }
    acct = "acct" int(rand() * 40); user = "user" int(rand() * 300)
    printf "%d%s%d%s%s%s%s%s%s%sgpu%snormal%sgpu%03d%s%d%s%d%s%s%s%d%s%s%scpu=%d,gres/gpu:a100=%d,gres/gpu=%d,mem=%dM,node=1%s%s%s%s%sjob %d\n",
      100000 + i, us, 100000 + i, us, "bench", us, user, us, acct, us, us, us, node, us, start - 30, us, start, us, end, us, dur, us, state, us,
      g * 4, g, g, g * 16000, us, "", us, "", us, i
  }
}' >"$work/reply"
bytes=$(wc -c <"$work/reply")

cc -O2 -Isrc bench/slurm_parse.c src/parse/slurm.c src/core/util.c src/core/status.c \
  $(pkg-config --cflags --libs jansson) -lm -o "$work/slurm_parse"
parse=$("$work/slurm_parse" "$work/reply")

token=bench-token-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
if [ -n "$db_arg" ]; then
  db=$db_arg
else
  bench_store_start "$work" slurmbench
  db=$bench_db
fi
PATH=$PWD/tests/lib/sacct:$PATH SACCT_STANDIN_DIR=$work GPUINV_ADMIN_TOKEN=$token \
  build/gpuinv serve --db "$db" --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
pid=$!
pids+=($pid)
for _ in $(seq 100); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
api() { curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
ptoken=$(api -d '{"name":"bench","role":"pusher","source":"bench-agents"}' "$url/api/v1/tokens" |
  sed 's/.*"token":"\([^"]*\)".*/\1/')
# 50 known hosts with 8 GPUs each.
for h in $(seq 0 49); do
  gpus=$(for i in 0 1 2 3 4 5 6 7; do printf '{"uuid":"GPU-be0c0000-0000-4000-8000-%09d%03d","index":%d,"name":"NVIDIA A100-SXM4-80GB"},' "$h" "$i" "$i"; done)
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ptoken" -H 'Content-Type: application/json' \
    -d "{\"batch_id\":\"b$h\",\"host\":{\"hostname\":\"gpu$(printf %03d "$h").bench.example\"},\"gpus\":[${gpus%,}]}" \
    "$url/api/v1/ingest")
  [ "$code" = 201 ] || { echo "ingest answered $code" >&2; exit 1; }
done
id=$(api -d '{"name":"bench-slurm","kind":"slurm","enabled":false,"config":{"cluster":"bench","timeout_s":600}}' \
  "$url/api/v1/sources" | sed 's/^{"id":\([0-9]*\),.*/\1/')
# The server's CPU seconds (user + system), beside the wall time: on a
# shared machine the wall time also holds waiting for a CPU.
bench_two_pulls "$url" "$id"
stored=$(api "$url/api/v1/slurm/jobs?limit=1" | sed 's/.*"total":\([0-9]*\).*/\1/')
matched=$(echo "$run1" | sed 's/.*"run":{[^}]*"gpus":\([0-9]*\).*/\1/')
awk -v j="$jobs" -v b="$bytes" -v p="$parse" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v r0="$rss0" \
    -v h1="$hwm1" -v h2="$hwm2" -v c0="$c0" -v c1="$c1" -v c2="$c2" -v p0="$p0" -v p1="$p1" -v p2="$p2" -v store="$bench_store" -v la="$(cut -d' ' -f1 /proc/loadavg)" -v s="$stored" -v o1="$ok1" -v o2="$ok2" -v m="$matched" 'BEGIN {
  onpg = p0 != "null"
  printf "{\"store\":\"%s\",", store
  printf "\"jobs\":%d,\"bytes\":%d,\"parse_alone\":%s,\"first_pull\":{\"%s,\"seconds\":%.2f,\"server_cpu_s\":%.2f,\"postgres_cpu_s\":%s,\"gpus_matched\":%s},", j, b, p, substr(o1, 2), t1 - t0, c1 - c0, onpg ? sprintf("%.2f", p1 - p0) : "null", m
  printf "\"second_pull\":{\"%s,\"seconds\":%.2f,\"server_cpu_s\":%.2f,\"postgres_cpu_s\":%s},\"jobs_stored\":%s,\"load_avg\":%s,", substr(o2, 2), t2 - t1, c2 - c1, onpg ? sprintf("%.2f", p2 - p1) : "null", s, la
  printf "\"server_rss_mib\":{\"before\":%.1f,\"peak_after_first\":%.1f,\"peak_after_second\":%.1f}}\n", r0 / 1024, h1 / 1024, h2 / 1024
}'
