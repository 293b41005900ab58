#!/usr/bin/env bash
# gpuinv dashboard benchmark: the home page over a fleet of BENCH_GPUS GPUs
# with BENCH_DAYS days of hourly rollups (bench/usage_gen.sh, the usage
# benchmark's fleet), in headless Chromium: time to the first chart and to
# every panel, beside the GPU list's time to its first row in the same run.
# Writes bench/results/home.json and .md and prints the table.
# Usage: bench/home.sh
# Environment:
#   BENCH_GPUS=10000   GPUs (8 per host)
#   BENCH_DAYS=31      days of hourly rollups (the page asks for 30)
#   BENCH_RUNS=5       measured loads per page
#   BENCH_WARMUP=1     loads per page before those, not counted
#   BENCH_TIMEOUT=300  seconds a load may take to reach a mark (past it: null)
#   GPUINV=build/gpuinv
#   BENCH_PAGES=       comma-separated pages to measure (home_30d, home_7d, gpu_list; default all)
#   BENCH_OUT=home     name of the results (bench/results/NAME.json and .md)
#   BENCH_DB=          a database bench/usage_gen.sh filled before (SQLite file), copied
#                      and served instead of generating one (BENCH_GPUS/DAYS then only label it)
#   BENCH_REUSE=       the same, but served where it is, not copied (a copy of its own: the
#                      server migrates it and its jobs write to it)
set -euo pipefail
cd "$(dirname "$0")/.."

gpus=${BENCH_GPUS:-10000}
days=${BENCH_DAYS:-31}
runs=${BENCH_RUNS:-5}
warmup=${BENCH_WARMUP:-1}
timeout_s=${BENCH_TIMEOUT:-300}
bin=${GPUINV:-build/gpuinv}
results=bench/results
out_name=${BENCH_OUT:-home}

die() { echo "bench: $*" >&2; exit 1; }
for tool in sqlite3 node; do command -v "$tool" >/dev/null 2>&1 || die "$tool is missing"; done
[ -x "$bin" ] || die "$bin not found; build it first (make build)"
[ -d node_modules/playwright-core ] || die "node_modules lacks playwright-core: run npm ci"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-home.XXXXXX")
srv_pid=""
cleanup() {
  set +e
  [ -n "$srv_pid" ] && stop_server 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

db=$tmp/gpuinv.db
[ -z "${BENCH_REUSE:-}" ] || { [ -f "$BENCH_REUSE" ] || die "BENCH_REUSE: $BENCH_REUSE not found"; db=$BENCH_REUSE; }
password="bench-$(head -c 12 /dev/urandom | base64 | tr '+/' 'xy')"
start_server() {
  local out=$tmp/serve.out line=""
  : >"$out"
  GPUINV_ADMIN_PASSWORD=$password "$bin" serve --db "$db" --listen 127.0.0.1:0 >"$out" 2>>"$tmp/serve.err" &
  srv_pid=$!
  until [[ $line == *listening* ]]; do
    kill -0 "$srv_pid" 2>/dev/null || die "gpuinv exited: $(tail -3 "$tmp/serve.err")"
    read -r line <"$out" || true
  done
  port=${line##*:}
  base=http://127.0.0.1:${port%/}
}
# Stops the server; one that a background job holds past 10 s (a health
# rollup backfilling a reused database) is killed.
stop_server() {
  local i
  kill -TERM "$srv_pid"
  for i in $(seq 100); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$srv_pid" 2>/dev/null || true
  wait "$srv_pid" || true
  srv_pid=""
}

now=$(date +%s)
echo "bench: home page over $gpus GPUs, $days days of hourly rollups"
if [ -n "${BENCH_REUSE:-}" ]; then
  echo "bench: serving $db in place"
elif [ -n "${BENCH_DB:-}" ]; then
  sqlite3 -bail "$BENCH_DB" ".backup '$db'"
else
  start_server # applies the migrations
  stop_server
  # The hour groups and team hours too, as the rollup job keeps them.
  BENCH_GEN_HOURLY_GROUPS=1 BENCH_GEN_TEAM_HOURS=1 bench/usage_gen.sh sqlite "$gpus" "$days" 1 1 3600 "$now" >"$tmp/gen.sql"
  { echo "PRAGMA cache_size = -1000000;"; cat "$tmp/gen.sql"; echo "ANALYZE;"; } | sqlite3 -bail "$db"
fi
hourly=$(sqlite3 "$db" "SELECT count(*) FROM usage_hourly")
echo "bench: loaded $hourly hourly rows"
start_server
load=$(cut -d' ' -f1-3 /proc/loadavg)
node bench/home.mjs "$base" "$password" "$runs" "$warmup" "$timeout_s" >"$tmp/home.json"
mkdir -p "$results"
python3 - "$tmp/home.json" "$gpus" "$days" "$hourly" "$load" "$results" "$out_name" <<'PY'
import json, sys, datetime
d = json.load(open(sys.argv[1]))
gpus, days, hourly, load, results, name = sys.argv[2:8]
d.update({"date": datetime.datetime.utcnow().strftime("%Y-%m-%d"), "gpus": int(gpus), "days": int(days),
          "hourly_rows": int(hourly), "load_before": load})
json.dump(d, open(f"{results}/{name}.json", "w"), indent=2)
lines = [f"Home page over {gpus} GPUs ({hourly} hourly rows), headless Chromium 1440x900, "
         f"median of {d['runs']} loads, load before: {load}", "",
         "over the limit: the mark was not reached within the benchmark's time limit", "",
         "| page | mark | median ms | runs (ms) |", "| --- | --- | --- | --- |"]
for page, marks in d["pages"].items():
    for mark, v in marks.items():
        if isinstance(v, dict):
            show = lambda x: "over the limit" if x is None else str(x)
            lines.append(f"| {page} | {mark} | {show(v['median_ms'])} | {' '.join(show(x) for x in v['runs_ms'])} |")
    lines.append(f"| {page} | charts drawn | {marks.get('charts_drawn', 0)} | |")
open(f"{results}/{name}.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
