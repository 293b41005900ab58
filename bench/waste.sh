#!/usr/bin/env bash
# gpuinv waste-by-team benchmark on an existing usage database (one that
# bench/usage.sh kept, or a copy of it): the CPU time per request of the
# server's request threads (and, on PostgreSQL, of the database's backends),
# and the wall time of each request, for waste by team over 30 days with no
# filter, a team filter, the default range, a range inside days and an env
# filter; with BENCH_BEFORE, the same first with that binary on the same
# database, and the answers of the two compared byte for byte.
# Usage: bench/waste.sh DB    (a SQLite file or a postgresql:// URL; the
#        binary migrates it, so pass a copy)
# Environment:
#   GPUINV=build/gpuinv   binary to measure
#   BENCH_BEFORE=         a binary measured first (e.g. main's)
#   BENCH_N=5             requests per query after the first
#   BENCH_OUT=            directory for the answers and logs (default: a temporary one)
set -uo pipefail
cd "$(dirname "$0")/.."
db=${1:?usage: bench/waste.sh DB}
bin=${GPUINV:-build/gpuinv}
n=${BENCH_N:-5}
out=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-waste.XXXXXX")}
token="bench-$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy')"
tck=$(getconf CLK_TCK)
now=$(date +%s) end=$((now - now % 3600))
de=$((end - end % 86400))
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
range="from=$(iso $((de - 30 * 86400)))&to=$(iso "$de")"
queries=(
  "waste|/api/v1/insights/waste-by-team?$range"
  "waste-team|/api/v1/insights/waste-by-team?team=team-3&$range"
  "waste-default|/api/v1/insights/waste-by-team"
  "waste-odd|/api/v1/insights/waste-by-team?from=$(iso $((de - 20 * 86400 + 5 * 3600)))&to=$(iso $((de - 3 * 86400 + 17 * 3600)))"
  "waste-env|/api/v1/insights/waste-by-team?env=prod&$range"
)
# utime + stime of the server's request threads, and of the database's
# backends on PostgreSQL.
req_ticks() {
  local t=0 d
  for d in /proc/"$pid"/task/*; do
    case "$(cat "$d/comm" 2>/dev/null)" in MHD-worker | gi-worker) t=$((t + $(awk '{print $14 + $15}' "$d/stat"))) ;; esac
  done
  echo "$t"
}
# "pid ticks" lines of the database's backends (none on SQLite); a backend
# that comes or goes between two readings is left out of their difference.
db_ticks() {
  local p
  case "$db" in postgres://* | postgresql://*) ;; *) return ;; esac
  for p in $(psql "$db" -Atc "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"); do
    awk -v p="$p" '{ print p, $14 + $15 }' "/proc/$p/stat" 2>/dev/null
  done
}
db_ms() { # before after: CPU ms per request of the backends in both
  awk -v n="$n" -v t="$tck" 'NR == FNR { a[$1] = $2; next } ($1 in a) { d += $2 - a[$1] }
    END { printf "%.0f", d * 1000 / t / n }' <(echo "$1") <(echo "$2")
}
ms() { awk -v a="$1" -v b="$2" -v n="$n" -v t="$tck" 'BEGIN { printf "%.0f", (b - a) * 1000 / t / n }'; }
measure() { # binary label
  local line="" port base q name path a b c d walls
  mkdir -p "$out/$2"
  GPUINV_ADMIN_TOKEN=$token "$1" serve --db "$db" --listen 127.0.0.1:0 >"$out/$2/serve.out" 2>"$out/$2/serve.err" &
  pid=$!
  until [[ $line == *listening* ]]; do
    kill -0 "$pid" 2>/dev/null || { echo "bench: $1 exited: $(tail -3 "$out/$2/serve.err")"; exit 1; }
    sleep 0.5
    line=$(grep listening "$out/$2/serve.out" | head -1)
  done
  port=${line##*:} port=${port%/} base=http://127.0.0.1:$port
  echo "bench: $2 ($1), load $(cut -d' ' -f1-3 /proc/loadavg)"
  for q in "${queries[@]}"; do
    name=${q%%|*} path=${q#*|}
    curl -s -H "Authorization: Bearer $token" -o "$out/$2/$name.json" "$base$path"
    a=$(req_ticks) c=$(db_ticks) walls=""
    for _ in $(seq "$n"); do
      walls+="$(curl -s -H "Authorization: Bearer $token" -o /dev/null -w '%{time_total}' "$base$path") "
    done
    b=$(req_ticks) d=$(db_ticks)
    echo "bench: $2: $name: request threads $(ms "$a" "$b") ms, database $(db_ms "$c" "$d") ms CPU per request; wall s: $walls($(wc -c <"$out/$2/$name.json") bytes)"
  done
  # The background jobs may hold the shutdown for minutes on a big database.
  kill -TERM "$pid"
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
[ -z "${BENCH_BEFORE:-}" ] || measure "$BENCH_BEFORE" before
measure "$bin" after
if [ -n "${BENCH_BEFORE:-}" ]; then
  for q in "${queries[@]}"; do
    name=${q%%|*}
    if cmp -s "$out/before/$name.json" "$out/after/$name.json"; then echo "bench: $name: same answer"; else echo "bench: $name: ANSWERS DIFFER"; fi
  done
fi
echo "bench: answers and logs in $out"
