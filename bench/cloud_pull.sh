#!/usr/bin/env bash
# An aws pull of N instances (default 5,000) over P pages (default 10)
# from the EC2 stand-in (tests/lib/cloud/aws.mjs): the wall time and the
# server's CPU of POST /api/v1/sources/{id}/run and its peak RSS, beside
# the time to merely download the same pages (curl, signed the same way)
# and parse them (bench/aws_parse.c). Instances are p4d.24xlarge (8 GPUs),
# g5.xlarge (1), g6e.12xlarge (4) and m5.large (none), mostly running,
# tagged with a team and a Name; a second pull replays the same listing
# (every instance compared, nothing new).
# BENCH_STORE=postgresql runs the server on a throwaway PostgreSQL
# (bench/store.sh) and reports the database's CPU beside the server's.
# Usage: bench/cloud_pull.sh [INSTANCES] [PAGES] [--db URL]   (needs build/gpuinv)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5000}
pages=${2:-10}
db_arg=${4:-}
work=$(mktemp -d)
pids=()
# shellcheck source=bench/store.sh
. bench/store.sh
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; bench_store_stop; rm -rf "$work"' EXIT
now=$(date +%s)

awk -v n="$n" -v p="$pages" -v now="$now" -v dir="$work" 'BEGIN {
  srand(7); per = int((n + p - 1) / p)
  split("p4d.24xlarge g5.xlarge g6e.12xlarge m5.large", types, " ")
  split("running running running running stopped", states, " ")
  for (pg = 1; pg <= p; pg++) {
    f = sprintf("%s/page-%02d.xml", dir, pg)
    print "<?xml version=\"1.0\" encoding=\"UTF-8\"?>" > f
    print "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">" > f
    printf "    <requestId>bench-%d</requestId>\n    <reservationSet>\n", pg > f
    for (i = (pg - 1) * per; i < pg * per && i < n; i++) {
      if (i % 4 == 0 || i == (pg - 1) * per)
        printf "%s        <item>\n            <reservationId>r-%017d</reservationId>\n            <ownerId>123456789012</ownerId>\n            <instancesSet>\n", (i == (pg - 1) * per ? "" : "            </instancesSet>\n        </item>\n"), i > f
      st = states[1 + int(rand() * 5)]; code = st == "running" ? 16 : 80
      t = types[1 + int(rand() * 4)]
      printf "                <item>\n                    <instanceId>i-%017x</instanceId>\n", i + 1 > f
      printf "                    <instanceState><code>%d</code><name>%s</name></instanceState>\n", code, st > f
      printf "                    <instanceType>%s</instanceType>\n", t > f
      printf "                    <launchTime>%s</launchTime>\n", strftime("%Y-%m-%dT%H:%M:%S.000Z", now - 3600 - int(rand() * 86400), 1) > f
      printf "                    <placement><availabilityZone>us-east-1%c</availabilityZone><tenancy>default</tenancy></placement>\n", 97 + i % 4 > f
      printf "                    <privateIpAddress>10.%d.%d.%d</privateIpAddress>\n", int(i / 65536) % 256, int(i / 256) % 256, i % 256 > f
      printf "                    <tagSet><item><key>Name</key><value>bench-%05d</value></item><item><key>team</key><value>team%d</value></item></tagSet>\n", i, i % 20 > f
      print "                </item>" > f
    }
    print "            </instancesSet>\n        </item>\n    </reservationSet>" > f
    if (pg < p) printf "    <nextToken>page-%d</nextToken>\n", pg + 1 > f
    print "</DescribeInstancesResponse>" > f
    close(f)
  }
}'
cp tests/fixtures/aws/describe-instance-types.xml tests/fixtures/aws/error-*.xml "$work/"
bytes=$(cat "$work"/page-*.xml | wc -c)
page_list=$(cd "$work" && ls page-*.xml | sed 's/.*/"&"/' | paste -sd, -)

# The stand-in, fed from a pipe that stays open while it serves.
mkfifo "$work/standin-in"
node tests/lib/cloud/aws.mjs "{\"dir\":\"$work\",\"pages\":{\"us-east-1\":[$page_list]}}" \
  <"$work/standin-in" >"$work/standin-out" &
pids+=($!)
exec 9>"$work/standin-in"
for _ in $(seq 100); do [ -s "$work/standin-out" ] && break; sleep 0.1; done
endpoint=$(head -1 "$work/standin-out")

# The reference: download the same pages, signed the same way, then parse them.
cc -O2 -Isrc bench/aws_parse.c src/parse/aws.c src/parse/cloud.c src/core/util.c src/core/status.c \
  $(pkg-config --cflags --libs libxml-2.0 jansson) -lm -o "$work/aws_parse"
d0=$(date +%s.%N)
token=""
for i in $(seq "$pages"); do
  form="Action=DescribeInstances&Version=2016-11-15${token:+&NextToken=$token}"
  curl -s --aws-sigv4 "aws:amz:us-east-1:ec2" --user "AKID:bench-secret" -d "$form" \
    -H 'Content-Type: application/x-www-form-urlencoded; charset=utf-8' "$endpoint" >"$work/dl-$(printf %02d "$i").xml"
  token=page-$((i + 1))
done
d1=$(date +%s.%N)
parse=$("$work/aws_parse" "$work"/dl-*.xml)

token=bench-token-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
if [ -n "$db_arg" ]; then
  db=$db_arg
else
  bench_store_start "$work" cloudbench
  db=$bench_db
fi
GPUINV_ADMIN_TOKEN=$token build/gpuinv serve --db "$db" --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
pid=$!
pids+=($pid)
for _ in $(seq 100); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
api() { curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
id=$(api -d "{\"name\":\"bench-aws\",\"kind\":\"aws\",\"enabled\":false,\"config\":{\"regions\":[\"us-east-1\"],\"access_key_id\":\"AKID\",\"secret_access_key\":\"bench-secret\",\"endpoint\":\"$endpoint\",\"timeout_s\":300}}" \
  "$url/api/v1/sources" | sed 's/^{"id":\([0-9]*\),.*/\1/')
bench_two_pulls "$url" "$id"
stored=$(api "$url/api/v1/cloud/instances?limit=1" | sed 's/.*"total":\([0-9]*\).*/\1/')
gpus=$(echo "$run1" | sed 's/.*"run":{[^}]*"gpus":\([0-9]*\).*/\1/')
awk -v n="$n" -v pg="$pages" -v b="$bytes" -v p="$parse" -v d0="$d0" -v d1="$d1" -v t0="$t0" -v t1="$t1" -v t2="$t2" \
    -v r0="$rss0" -v h1="$hwm1" -v h2="$hwm2" -v c0="$c0" -v c1="$c1" -v c2="$c2" -v p0="$p0" -v p1="$p1" -v p2="$p2" -v store="$bench_store" \
    -v la="$(cut -d' ' -f1 /proc/loadavg)" -v s="$stored" -v o1="$ok1" -v o2="$ok2" -v g="$gpus" 'BEGIN {
  onpg = p0 != "null"
  printf "{\"store\":\"%s\",", store
  printf "\"instances\":%d,\"pages\":%d,\"bytes\":%d,\"download_alone_s\":%.2f,\"parse_alone\":%s,", n, pg, b, d1 - d0, p
  printf "\"first_pull\":{\"%s,\"seconds\":%.2f,\"server_cpu_s\":%.2f,\"postgres_cpu_s\":%s,\"gpus\":%s},", substr(o1, 2), t1 - t0, c1 - c0, onpg ? sprintf("%.2f", p1 - p0) : "null", g
  printf "\"second_pull\":{\"%s,\"seconds\":%.2f,\"server_cpu_s\":%.2f,\"postgres_cpu_s\":%s},\"instances_stored\":%s,\"load_avg\":%s,", substr(o2, 2), t2 - t1, c2 - c1, onpg ? sprintf("%.2f", p2 - p1) : "null", s, la
  printf "\"server_rss_mib\":{\"before\":%.1f,\"peak_after_first\":%.1f,\"peak_after_second\":%.1f}}\n", r0 / 1024, h1 / 1024, h2 / 1024
}'
