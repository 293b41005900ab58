#!/bin/sh
# Usage: partitions_check.sh PG_CONNINFO
#
# Checks gi_samples_partitions() on an empty PostgreSQL database (a
# postgres:// URL or libpq key=value string), which it migrates with
# src/store/migrations/pg: partitions are created for the day before to
# ahead_days after now_s, named gpu_samples_pYYYYMMDD by UTC day, with rows
# of those days moved out of the DEFAULT partition; a second call changes
# nothing; retention drops whole old partitions and deletes old DEFAULT rows;
# bad arguments are refused; inserts (with the ingest's ON CONFLICT) reach
# the right partition. Times are fixed (July 2036), away from the partitions
# the migration itself made for the current day. Exits 0 when all checks
# pass, 1 on the first failure, 2 on a setup error.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 PG_CONNINFO" >&2
    exit 2
fi
pg=$1
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(psql -X -q -A -t -d "$pg" -c "SELECT count(*) FROM pg_class
        WHERE relnamespace = current_schema()::regnamespace")" != 0 ]; then
    echo "$0: the PostgreSQL database is not empty (or cannot be reached)" >&2
    exit 2
fi
for f in "$here"/../../src/store/migrations/pg/[0-9][0-9][0-9]_*.sql; do
    psql -X -q -v ON_ERROR_STOP=1 --single-transaction -d "$pg" -f "$f" >/dev/null ||
        { echo "$0: migration $f failed" >&2; exit 2; }
done

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$pg" -c "$1"; }
checks=0
expect() { # WHAT ACTUAL EXPECTED
    if [ "$2" != "$3" ]; then
        printf '%s: %s\n  expected: %s\n  got:      %s\n' "partitions_check" "$1" "$3" "$2" >&2
        exit 1
    fi
    checks=$((checks + 1))
}
# Partitions as "name:from:to" lines (the DEFAULT one as "name:DEFAULT").
parts() {
    q "SELECT c.relname || ':' || regexp_replace(pg_get_expr(c.relpartbound, c.oid),
              '^FOR VALUES FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)$', '\1:\2')
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'gpu_samples'::regclass ORDER BY c.relname"
}
# Where each sample row is stored, as "ts:partition" lines.
placed() { q "SELECT ts || ':' || tableoid::regclass FROM gpu_samples ORDER BY ts, source_id"; }

# The day of now_s (2036-07-18 13:20 UTC) starts at 2099952000.
now=2100000000
day=86400
before=$(parts | grep -c '_p')
expect "the migration made partitions for the current days" "$([ "$before" -ge 2 ] && echo yes)" yes
expect "the migration made a DEFAULT partition" "$(parts | grep -c ':DEFAULT$')" 1

# Rows of days that have no partition yet wait in DEFAULT.
q "INSERT INTO gpu_samples (ts, gpu_id, util_avg, source_id) VALUES
    (2099865600, 1, 1, 1), (2099952000, 1, 2, 1), (2099952000, 1, 3, 2),
    (2100211199, 2, 4, 1), (2100211200 + 86399, 2, 5, 1),
    (2100643200 + 10, 3, 6, 1), (2101248000 + 10, 3, 7, 1)" >/dev/null
expect "rows of days without a partition are in DEFAULT" \
    "$(q "SELECT count(*) FROM gpu_samples_default")" 7

expect "creates the day before to ahead_days after" \
    "$(q "SELECT gi_samples_partitions($now, 3, 36500)")" 5
expect "partitions by UTC day with their bounds" "$(parts | grep -E '_p2036')" \
    "gpu_samples_p20360717:2099865600:2099952000
gpu_samples_p20360718:2099952000:2100038400
gpu_samples_p20360719:2100038400:2100124800
gpu_samples_p20360720:2100124800:2100211200
gpu_samples_p20360721:2100211200:2100297600"
expect "DEFAULT rows of the new days moved into them, others stayed" "$(placed)" \
    "2099865600:gpu_samples_p20360717
2099952000:gpu_samples_p20360718
2099952000:gpu_samples_p20360718
2100211199:gpu_samples_p20360720
2100297599:gpu_samples_p20360721
2100643210:gpu_samples_default
2101248010:gpu_samples_default"
expect "moved rows keep their values" \
    "$(q "SELECT string_agg(util_avg::text, ',' ORDER BY util_avg) FROM gpu_samples")" \
    "1,2,3,4,5,6,7"

expect "a second call changes nothing" "$(q "SELECT gi_samples_partitions($now, 3, 36500)")" 0
expect "a call later the same day changes nothing" \
    "$(q "SELECT gi_samples_partitions($((now + 30000)), 3, 36500)")" 0
expect "one more day ahead adds one partition" \
    "$(q "SELECT gi_samples_partitions($now, 4, 36500)")" 1
expect "the partitions after those calls" "$(parts | grep -c '_p2036')" 6

q "INSERT INTO gpu_samples (ts, gpu_id, util_avg, source_id) VALUES
    ($now + 3 * $day, 9, 8, 1), ($now + 3 * $day, 9, 8, 2)
    ON CONFLICT DO NOTHING" >/dev/null
q "INSERT INTO gpu_samples (ts, gpu_id, util_avg, source_id) VALUES
    ($now + 3 * $day, 9, 9, 1) ON CONFLICT DO NOTHING" >/dev/null
expect "new rows reach their day's partition, one per (ts, gpu, source)" \
    "$(q "SELECT tableoid::regclass || ':' || count(*) || ':' || max(util_avg)
          FROM gpu_samples WHERE gpu_id = 9 GROUP BY tableoid")" "gpu_samples_p20360721:2:8"

expect "keep_days under 1 is refused" \
    "$(q "SELECT gi_samples_partitions($now, 3, 0)" 2>&1 | grep -c 'keep_days >= 1')" 1
expect "negative ahead_days is refused" \
    "$(q "SELECT gi_samples_partitions($now, -1, 30)" 2>&1 | grep -c 'ahead_days must be')" 1
expect "NULL arguments are refused" \
    "$(q "SELECT gi_samples_partitions(NULL, 3, 30)" 2>&1 | grep -c 'are required')" 1

# 30 days on, keeping 20: every partition ending by day +10 goes (ours and
# the migration's), so does the DEFAULT row of day +8; the row of day +15
# stays; days +29 and +30 are created.
later=$((now + 30 * day))
expect "retention drops old partitions and creates the new days" \
    "$(q "SELECT gi_samples_partitions($later, 0, 20)")" $((before + 6 + 2))
expect "only the new days' partitions and DEFAULT are left" "$(parts)" \
    "gpu_samples_default:DEFAULT
gpu_samples_p20360816:2102457600:2102544000
gpu_samples_p20360817:2102544000:2102630400"
expect "old rows went with their partitions, old DEFAULT rows were deleted" "$(placed)" \
    "2101248010:gpu_samples_default"
expect "retention again changes nothing" "$(q "SELECT gi_samples_partitions($later, 0, 20)")" 0

# A day boundary: now_s at 00:00:00 UTC exactly is that day, not the one before.
expect "now_s at midnight belongs to the day it starts" \
    "$(q "SELECT gi_samples_partitions(2102630400, 0, 20)")" 1
expect "the partition made for that day" "$(parts | tail -1)" \
    "gpu_samples_p20360818:2102630400:2102716800"

echo "partitions_check: all $checks checks pass"
exit 0
