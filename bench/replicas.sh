#!/usr/bin/env bash
# gpuinv replicas benchmark: several `gpuinv serve` on one PostgreSQL behind
# haproxy. Starts a throwaway PostgreSQL (tests/lib/pg.sh), loads the benchmark's 50,000 resources, starts three
# replicas on that database and one haproxy (its configuration generated from
# deploy/haproxy.cfg), then runs wrk on the filtered list page
#   direct  straight to replica 1 (no balancer: the reference)
#   one     through haproxy to a backend of replica 1 alone
#   three   through haproxy to a backend of the three replicas
# in BENCH_ROUNDS rounds, each round all three in that order, so that the
# machine's other load falls on all of them alike. "one" against "direct" is
# the balancer's own cost; "three" against "one" is what more replicas give.
# Writes bench/results/replicas-latest.json and .md and prints the table.
#
# Usage: bench/replicas.sh   (from `make bench`, which builds build/gpuinv first)
# Environment:
#   BENCH_ROWS=50000      resources to load
#   BENCH_DURATION=20     seconds of each measured wrk run (after a 2 s warm-up)
#   BENCH_CONNECTIONS=32  wrk connections
#   BENCH_ROUNDS=2        rounds of the three runs
#   BENCH_PIN=1           0: do not pin processes to CPUs
#   BENCH_KEEP=0          1: keep the temporary directory (configuration, logs)
#   GPUINV=build/gpuinv   binary to measure
set -euo pipefail
cd "$(dirname "$0")/.."

rows=${BENCH_ROWS:-50000}
dur=${BENCH_DURATION:-20}
conns=${BENCH_CONNECTIONS:-32}
rounds=${BENCH_ROUNDS:-2}
pin=${BENCH_PIN:-1}
bin=${GPUINV:-build/gpuinv}
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
results=bench/results
nrep=3

die() { echo "bench: $*" >&2; exit 1; }
for tool in wrk haproxy psql curl awk taskset ss; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (scripts/deps.sh --bench installs it)"
done
[ -x "$pg_bin/postgres" ] || die "PostgreSQL 15 is missing (scripts/deps.sh --bench installs postgresql-15)"
[ -x "$bin" ] || die "$bin not found; build it first (make build)"
[ "$rows" -ge 30 ] && [ "$rows" -le 50000 ] || die "BENCH_ROWS must be 30..50000"
pg_sh=tests/lib/pg.sh

# As bench/run.sh: the serving side (replicas, postgres, haproxy) on CPU 0,
# this script, curl and wrk on CPU 1. On two CPUs the three replicas then
# share one CPU with everything they need, so "three" measures what running
# three costs, not what it gains.
ncpu=$(nproc)
if [ "$pin" = 1 ] && [ "$ncpu" -ge 2 ]; then
  srv_cpu=(taskset -c 0)
  taskset -cp 1 $$ >/dev/null
  pinning="replicas, postgres and haproxy on CPU 0; wrk, curl and this script on CPU 1"
else
  srv_cpu=()
  pinning="none"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-replicas.XXXXXX")
chmod 755 "$tmp"
pids=() hap_pid="" pg_dir=""
cleanup() {
  local p
  set +e # stop everything, whatever each one's exit status
  [ -n "$hap_pid" ] && kill -TERM "$hap_pid" 2>/dev/null
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  [ -n "$hap_pid" ] && wait "$hap_pid" 2>/dev/null
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [ -n "$pg_dir" ] && "$pg_sh" stop "$pg_dir"
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "bench: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

token="bench-$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy')"
export BENCH_TOKEN=$token
auth=(-H "Authorization: Bearer $token")

# A free loopback port (none is held between this test and its use; the
# listener check after start-up catches a race).
free_port() {
  local p
  while :; do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    [ -z "$(ss -ltnH "( sport = :$p )")" ] && { echo "$p"; return; }
  done
}
only_listener() {
  local n
  n=$(ss -ltnH "( sport = :$1 )" | wc -l)
  [ "$n" = 1 ] || die "port $1 has $n listeners; another process shares it"
}

echo "bench: replicas on PostgreSQL, $rows resources, wrk ${dur}s x $conns connections, $rounds rounds; pinning: $pinning"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- PostgreSQL ----
pg_dir=$tmp/pg
"$pg_sh" start "$pg_dir" >"$tmp/pg-start.log" 2>&1 || die "PostgreSQL did not start: $(tail -5 "$tmp/pg-start.log")"
conninfo=$(cat "$pg_dir/conninfo")
db=${conninfo/@\//@/gpuinv}
pg_pid=$(head -1 "$pg_dir/data/postmaster.pid")
if [ "${#srv_cpu[@]}" -gt 0 ]; then
  for p in $pg_pid $(cat "/proc/$pg_pid/task/$pg_pid/children"); do taskset -pc 0 "$p" >/dev/null 2>&1 || true; done
fi

# ---- replicas ----
# Starts replica $1 on the database; sets rep_port[$1].
declare -a rep_port
start_replica() {
  local i=$1 out=$tmp/serve-$1.out line=""
  : >"$out"
  GPUINV_ADMIN_TOKEN=$token "${srv_cpu[@]}" "$bin" serve --db "$db" --listen 127.0.0.1:0 \
    --per-ip-connections 0 >"$out" 2>>"$tmp/serve-$i.err" &
  pids+=($!)
  until [[ $line == *listening* ]]; do
    kill -0 "${pids[-1]}" 2>/dev/null || die "replica $i exited: $(tail -3 "$tmp/serve-$i.err")"
    read -r line <"$out" || true
  done
  line=${line##*:}
  rep_port[i]=${line%/}
  only_listener "${rep_port[i]}"
}

# ---- data ----
# Replica 1 creates the schema and the data centers; the 50,000 rows then go
# straight into the database with psql (the bench/run.sh import through the
# API takes minutes on PostgreSQL and is measured there), 1,000 rows per
# transaction. The triggers fill in the documents and counts as for any write.
# Replica 1 is then restarted: at start-up a server matches the inventory
# servers that have no match keys yet (all of them, here). Only then does
# ANALYZE gather the planner's statistics (before it, they would say that
# match_keys is empty, and the matching would scan it once per server).
awk -v n="$rows" -v out="$tmp" -f bench/gen.awk >"$tmp/gen.txt"
echo "bench: generated $(cat "$tmp/gen.txt")"
start_replica 1
for dc in fra1 ams2 iad3; do
  curl -sf "${auth[@]}" -H 'Content-Type: application/json' -o /dev/null \
    -d "{\"name\":\"$dc\",\"location\":\"bench\"}" "http://127.0.0.1:${rep_port[1]}/api/v1/datacenters" ||
    die "cannot create data center $dc"
done
t0=$EPOCHREALTIME
grep '^INSERT' "$tmp/rows.sql" | awk '(NR - 1) % 1000 == 0 { if (NR > 1) print "COMMIT;"; print "BEGIN;" } { print } END { print "COMMIT;" }' |
  psql -X -q -v ON_ERROR_STOP=1 "$db" >/dev/null || die "loading the rows"
t1=$EPOCHREALTIME
n=$(psql -X -At "$db" -c 'SELECT count(*) FROM resources')
[ "$n" = "$rows" ] || die "$n rows loaded, not $rows"
load_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
echo "bench: loaded $rows rows with psql in ${load_s}s"
kill -TERM "${pids[0]}"
wait "${pids[0]}" || die "replica 1 did not stop cleanly"
pids=()
t0=$EPOCHREALTIME
start_replica 1
t1=$EPOCHREALTIME
refresh_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
echo "bench: replica 1 restarted, matching the loaded servers, in ${refresh_s}s"
psql -X -q "$db" -c 'ANALYZE' || die "ANALYZE"
for i in $(seq 2 "$nrep"); do start_replica "$i"; done

list_path="/api/v1/resources?datacenter=2&kind=server&state=available&limit=100"
for i in $(seq "$nrep"); do
  curl -sf "${auth[@]}" -o "$tmp/list-$i.json" "http://127.0.0.1:${rep_port[i]}$list_path" || die "GET list on replica $i"
  cmp -s "$tmp/list-1.json" "$tmp/list-$i.json" || die "replica $i answers the list page with other bytes"
done
list_bytes=$(wc -c <"$tmp/list-1.json")

# ---- haproxy ----
# deploy/haproxy.cfg as it stands (defaults, health checks on /readyz,
# leastconn, maxconn per server), adapted to loopback: no user, group,
# daemon or syslog; one thread, as the serving side has one CPU; and two
# front ends, one per back end, plus a statistics page that tells when every
# server is up and how the requests were spread.
hap_one=$(free_port) hap_three=$(free_port) hap_stats=$(free_port)
[ "$hap_one" != "$hap_three" ] && [ "$hap_one" != "$hap_stats" ] && [ "$hap_three" != "$hap_stats" ] ||
  die "port clash, run again"
awk -v one="$hap_one" -v three="$hap_three" -v stats="$hap_stats" -v p1="${rep_port[1]}" \
  -v p2="${rep_port[2]}" -v p3="${rep_port[3]}" '
  /^[ \t]*(user|group|daemon|log \/dev\/log)([ \t]|$)/ { next }
  /^global/ { print; print "    nbthread 1"; next }
  /^[ \t]*bind / { print "    bind 127.0.0.1:" three; next }
  /^frontend / { in_servers = 0 }
  /^[ \t]*server / { if (!in_servers) { in_servers = 1
      print "    server gpuinv-1 127.0.0.1:" p1
      print "    server gpuinv-2 127.0.0.1:" p2
      print "    server gpuinv-3 127.0.0.1:" p3 }
    next }
  { print }
  END {
    print ""
    print "frontend gpuinv_one"
    print "    bind 127.0.0.1:" one
    print "    default_backend gpuinv_one"
    print ""
    print "backend gpuinv_one"
    print "    balance leastconn"
    print "    option httpchk GET /readyz"
    print "    http-check expect status 200"
    print "    default-server inter 2s fall 3 rise 2 check maxconn 1000"
    print "    server gpuinv-1 127.0.0.1:" p1
    print ""
    print "listen stats"
    print "    bind 127.0.0.1:" stats
    print "    stats enable"
    print "    stats uri /stats"
  }' deploy/haproxy.cfg >"$tmp/haproxy.cfg"
grep -q "^    server gpuinv-3 127.0.0.1:${rep_port[3]}$" "$tmp/haproxy.cfg" || die "deploy/haproxy.cfg has changed shape"
haproxy -c -q -f "$tmp/haproxy.cfg" || die "generated haproxy configuration is invalid ($tmp/haproxy.cfg)"
"${srv_cpu[@]}" haproxy -db -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
hap_pid=$!
stats_csv() { { curl -s "http://127.0.0.1:$hap_stats/stats;csv" || true; } | sed "1s/^# //"; }
# Until the four servers (three in one back end, one in the other) are UP.
for try in $(seq 200); do
  up=$(stats_csv | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $2 ~ /^gpuinv-/ && $c["status"] == "UP"' | wc -l)
  [ "$up" = 4 ] && break
  kill -0 "$hap_pid" 2>/dev/null || die "haproxy exited: $(tail -3 "$tmp/haproxy.log")"
  [ "$try" = 200 ] && die "haproxy has $up of 4 servers up after 20 s"
  sleep 0.1
done
for p in "$hap_one" "$hap_three" "$hap_stats"; do only_listener "$p"; done
cmp -s "$tmp/list-1.json" <(curl -sf "${auth[@]}" "http://127.0.0.1:$hap_three$list_path") ||
  die "haproxy answers other bytes"

# ---- wrk ----
# Prints "rps p50_ms p90_ms p99_ms max_ms non2xx sockerr" (as bench/run.sh).
wrk_run() {
  local url=$1 out
  wrk -t1 -c"$conns" -d2s -s bench/wrk-auth.lua "$url" >/dev/null # warm-up
  out=$(wrk -t1 -c"$conns" -d"${dur}s" --latency -s bench/wrk-auth.lua "$url")
  echo "$out" >>"$tmp/wrk.log"
  echo "$out" | grep '^RESULT ' | awk '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "%.0f %.2f %.2f %.2f %.2f %d %d\n", v["rps"], v["p50_us"] / 1000, v["p90_us"] / 1000,
           v["p99_us"] / 1000, v["max_us"] / 1000, v["non2xx"], v["sockerr"] }'
}
# Requests each replica got through haproxy's three-replica back end.
spread() {
  stats_csv | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == "gpuinv_replicas" && $2 ~ /^gpuinv-/ { printf "%s%s", sep, $c["stot"]; sep = " " }'
}
declare -A res
for r in $(seq "$rounds"); do
  for s in direct one three; do
    case $s in
      direct) url=http://127.0.0.1:${rep_port[1]}$list_path ;;
      one) url=http://127.0.0.1:$hap_one$list_path ;;
      three) url=http://127.0.0.1:$hap_three$list_path ;;
    esac
    echo "bench: round $r: wrk $s"
    res[$s.$r]=$(wrk_run "$url")
    set -- ${res[$s.$r]}
    [ "$6" = 0 ] && [ "$7" = 0 ] || echo "bench: WARNING: $s, round $r: $6 non-2xx replies, $7 socket errors" >&2
  done
done
spread_total=$(spread)
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- results ----
mkdir -p "$results"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- src CMakeLists.txt 2>/dev/null || commit="$commit+dirty"
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
jrun() { set -- $1; printf '{"rps": %s, "p50_ms": %s, "p90_ms": %s, "p99_ms": %s, "max_ms": %s, "non2xx": %s, "socket_errors": %s}' "$@"; }
jscenario() {
  local r sep=""
  printf '['
  for r in $(seq "$rounds"); do printf '%s%s' "$sep" "$(jrun "${res[$1.$r]}")"; sep=", "; done
  printf ']'
}
# min..max of field $2 (1 rps, 2 p50, 4 p99) over the rounds of scenario $1
range() {
  local r
  for r in $(seq "$rounds"); do set -- "$1" "$2" ${res[$1.$r]}; echo "${@:$(($2 + 2)):1}"; done |
    sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (lo == hi) print lo; else print lo "–" hi }'
}
cat >"$results/replicas-latest.json" <<EOF
{
  "date": "$date_utc",
  "commit": "$commit",
  "machine": {"cpus": $ncpu, "cpu_model": "$cpu_model", "kernel": "$(uname -r)",
              "loadavg_start": "$load_start", "loadavg_end": "$load_end"},
  "config": {"rows": $rows, "path": "$list_path", "bytes": $list_bytes, "wrk_duration_s": $dur,
             "wrk_connections": $conns, "wrk_threads": 1, "rounds": $rounds, "replicas": $nrep,
             "server_threads": 8, "pinning": "$pinning", "haproxy": "$(haproxy -v | awk 'NR == 1 { print $3 }')",
             "haproxy_threads": 1, "balance": "leastconn",
             "postgresql": "$("$pg_bin/postgres" --version | awk '{ print $3 }')", "postgresql_via": "Unix socket",
             "load_with_psql_s": $load_s, "first_start_after_load_s": $refresh_s},
  "direct_one_replica": $(jscenario direct),
  "haproxy_one_replica": $(jscenario one),
  "haproxy_three_replicas": $(jscenario three),
  "haproxy_three_replicas_requests_per_server": [$(echo "$spread_total" | tr ' ' ',')]
}
EOF
{
  echo "gpuinv replicas on one PostgreSQL, $date_utc, commit $commit, $ncpu CPUs ($cpu_model), load $load_start -> $load_end"
  echo "$rows resources; list page ($list_bytes B); wrk -t1 -c$conns -d${dur}s --latency, $rounds rounds; pinning: $pinning"
  echo
  echo "| list page, $conns connections | req/s | p50 | p99 |"
  echo "|---|---|---|---|"
  echo "| straight to one replica | $(range direct 1) | $(range direct 2) ms | $(range direct 4) ms |"
  echo "| haproxy, one replica | $(range one 1) | $(range one 2) ms | $(range one 4) ms |"
  echo "| haproxy, three replicas | $(range three 1) | $(range three 2) ms | $(range three 4) ms |"
  echo
  echo "Requests per replica through the three-replica back end (all rounds, warm-ups included): $spread_total"
} >"$results/replicas-latest.md"
cat "$results/replicas-latest.md"
echo
echo "bench: results in $results/replicas-latest.json and $results/replicas-latest.md"
