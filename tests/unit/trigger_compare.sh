#!/bin/sh
# Usage: trigger_compare.sh SQLITE_DB PG_CONNINFO
#
# Checks that the PostgreSQL migrations keep the same derived data as the
# SQLite ones. SQLITE_DB must not exist yet (it is created) and PG_CONNINFO
# (a postgres:// URL or a libpq key=value string) must name an empty
# database. Both get migrations 001-004, the same seed rows, migrations
# 005-009 (so the back-fill statements of 005, 006 and 008 run over data)
# and the later ones,
# then the same sequence of writes: inserts of several kinds and states, an
# upsert, updates of state, count, data center, attrs and metadata, a data
# center rename, deletes and a data center delete that cascades. After the
# migrations and after every write the two databases must agree on
# dc_counts, on every resources.doc (compared as parsed JSON: key order and
# spacing may differ), on the gpus columns 008 fills, and on gpu_samples.
# Exits 0 when they all agree, 1 on the first disagreement (with the diff),
# 2 on a usage or setup error.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 SQLITE_DB PG_CONNINFO" >&2
    exit 2
fi
sqlite_db=$1
pg=$2
here=$(cd "$(dirname "$0")" && pwd)
migrations="$here/../../src/store/migrations"
if [ -e "$sqlite_db" ]; then
    echo "$0: $sqlite_db already exists; give a new path" >&2
    exit 2
fi
if [ "$(psql -X -q -A -t -d "$pg" -c "SELECT count(*) FROM pg_class
        WHERE relnamespace = current_schema()::regnamespace")" != 0 ]; then
    echo "$0: the PostgreSQL database is not empty (or cannot be reached)" >&2
    exit 2
fi

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
tab=$(printf '\t')

# Runs SQL text (stdin) on SQLite, as the store does: foreign keys on, one
# transaction.
sq() {
    { echo "PRAGMA foreign_keys=ON; BEGIN IMMEDIATE;"; cat; echo "COMMIT;"; } |
        sqlite3 -bail -batch -noheader -list -separator "$tab" "$sqlite_db"
}
# The same on PostgreSQL.
pq() {
    psql -X -q -A -t -F "$tab" -v ON_ERROR_STOP=1 --single-transaction -d "$pg"
}

migrate() { # FIRST LAST
    for f in "$migrations"/[0-9][0-9][0-9]_*.sql; do
        n=$(basename "$f" | cut -c1-3)
        [ "$n" -ge "$1" ] && [ "$n" -le "$2" ] || continue
        sq <"$f" || { echo "$0: SQLite migration $f failed" >&2; exit 2; }
        pq <"$migrations/pg/$(basename "$f")" >/dev/null ||
            { echo "$0: PostgreSQL migration pg/$(basename "$f") failed" >&2; exit 2; }
    done
}

# Both sides run the same write.
both() {
    cat >"$tmp/step.sql"
    sq <"$tmp/step.sql" >/dev/null || { echo "$0: SQLite rejected: $step" >&2; exit 1; }
    pq <"$tmp/step.sql" >/dev/null || { echo "$0: PostgreSQL rejected: $step" >&2; exit 1; }
}

# Canonical JSON: "id<TAB>json" lines with their JSON re-serialized with
# sorted keys, so that only content is compared.
canon() {
    node -e '
const canon = (v) => Array.isArray(v) ? v.map(canon)
  : v !== null && typeof v === "object"
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]))
    : v;
let text = "";
process.stdin.on("data", (d) => { text += d; });
process.stdin.on("end", () => {
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const i = line.indexOf("\t");
    const id = i < 0 ? line : line.slice(0, i);
    const doc = i < 0 ? "" : line.slice(i + 1);
    let out;
    if (doc === "") out = "(null)";
    else {
      try { out = JSON.stringify(canon(JSON.parse(doc))); }
      catch (e) { out = "INVALID " + doc; }
    }
    process.stdout.write(id + "\t" + out + "\n");
  }
});'
}

snapshot() { # RUNNER OUTFILE
    {
        echo "-- dc_counts"
        echo "SELECT datacenter_id, kind, state, n, gpus FROM dc_counts
              ORDER BY datacenter_id, kind, state;" | $1
        echo "-- gpus"
        echo "SELECT id, observed_at, reading_source_id FROM gpus ORDER BY id;" | $1
        echo "-- gpu_samples"
        echo "SELECT ts, gpu_id, CAST(round(util_avg * 1000) AS BIGINT),
                     CAST(round(temp_c * 1000) AS BIGINT), xid, source_id
              FROM gpu_samples ORDER BY ts, gpu_id, source_id;" | $1
        echo "-- resources.doc"
        echo "SELECT id, doc FROM resources ORDER BY id;" | $1 | canon
    } >"$2"
}

checks=0
compare() {
    snapshot sq "$tmp/sqlite"
    snapshot pq "$tmp/postgresql"
    if ! grep -q '"datacenter"' "$tmp/sqlite"; then
        echo "$0: after $step: no rendered documents at all, nothing to compare" >&2
        exit 1
    fi
    if ! (cd "$tmp" && diff -u sqlite postgresql); then
        echo "trigger_compare: after $step the derived data differ (- SQLite, + PostgreSQL)" >&2
        exit 1
    fi
    checks=$((checks + 1))
}

migrate 1 4

step="seed before 005"
both <<'EOF'
INSERT INTO datacenters (id, name, location, created_at, updated_at) VALUES
    (10, 'dc-a', 'Berlin', 1700000000, 1700000000),
    (20, 'dc-b', '', 1700000100, 1700000200);
INSERT INTO resources (datacenter_id, kind, name, state, tenant, project, gpu_model, gpu_count,
    attrs, metadata, created_at, updated_at) VALUES
    (10, 'server', 's1', 'available', NULL, NULL, 'H100', 8, '{}', '{}', 1700000000, 1700000000),
    (10, 'server', 's2', 'allocated', 'acme', 'p1', 'H100', 8,
     '{"hostname": "s2.example.com", "rack": "r1"}', '{"owner": "ops", "tags": ["a", "b"]}',
     1700000001, 1700000002),
    (10, 'rack', 'r1', 'available', 'acme', NULL, NULL, 0, '{"tenant": null, "units": 42}', '{}',
     1700000003, 1700000003),
    (20, 'server', 's1', 'maintenance', 'beta', NULL, 'A100', 4,
     '{"metadata": {"owner": null, "extra": 1}}', '{"owner": "x", "keep": true}',
     1700000004, 1700000005),
    (20, 'switch', 'sw1', 'available', NULL, NULL, NULL, 0, '{"state": "custom"}',
     '{"n": 1.50, "e": 1e2, "s": "\u00fc \"q\" \\ /", "deep": {"a": [1, {"b": null}]}}',
     1700000006, 1700000007);
INSERT INTO sources (id, name, kind, created_at, updated_at) VALUES
    (1, 'push-a', 'push', 1700000000, 1700000000),
    (2, 'pull-b', 'dcgm', 1700000000, 1700000000);
INSERT INTO hosts (id, hostname, source_id, first_seen_at, last_seen_at) VALUES
    (1, 'h1', 1, 1700000000, 1700000300);
INSERT INTO gpus (id, uuid, host_id, source_id, first_seen_at, last_seen_at, sample_at) VALUES
    (1, 'GPU-1', 1, 1, 1700000000, 1700000300, 1700000250),
    (2, 'GPU-2', 1, 2, 1700000000, 1700000300, NULL),
    (3, 'GPU-3', NULL, NULL, 1700000000, 1700000400, 1700000100);
INSERT INTO gpu_samples (ts, gpu_id, util_avg, temp_c, xid, source_id) VALUES
    (1700000000, 1, 12.5, 40.25, NULL, 1),
    (1700000000, 2, 0, NULL, 79, NULL),
    (1700086400, 1, 99.125, 71, NULL, NULL);
EOF

migrate 5 9
step="migrations 005-009 (back-fill)"
compare

migrate 10 999
step="migrations 010 onwards (016: counting per statement on PostgreSQL)"
compare

step="insert resources of several kinds and states"
both <<'EOF'
INSERT INTO datacenters (id, name, location, created_at, updated_at) VALUES
    (30, 'dc-c', 'Paris', 1700001000, 1700001000);
INSERT INTO resources (datacenter_id, kind, name, state, tenant, project, gpu_model, gpu_count,
    attrs, metadata, created_at, updated_at) VALUES
    (30, 'server', 'c1', 'allocated', 'gamma', 'train', 'MI300X', 8, '{"hostname": "C1.lab"}',
     '{}', 1700001001, 1700001001),
    (30, 'server', 'c2', 'allocated', 'gamma', NULL, 'MI300X', 8, '{}', '{"a": {"b": 1}}',
     1700001002, 1700001002),
    (30, 'storage', 'nas1', 'retired', NULL, NULL, NULL, 0, '[1, 2]', '{}', 1700001003, 1700001003),
    (10, 'server', 's3', 'available', NULL, NULL, 'H100', 8,
     '{"gpu_count": 16, "id": "overridden", "created_at": null}', '{}', 1700001004, 1700001004);
INSERT INTO resources (datacenter_id, kind, name, created_at, updated_at) VALUES
    (20, 'pdu', 'p1', 1700001005, 1700001005);
EOF
compare

step="allocate and release"
both <<'EOF'
UPDATE resources SET state = 'allocated', tenant = 'delta', project = 'inf',
    version = version + 1, updated_at = 1700002000 WHERE datacenter_id = 10 AND name = 's1';
UPDATE resources SET state = 'available', tenant = NULL, project = NULL,
    version = version + 1, updated_at = 1700002001 WHERE datacenter_id = 10 AND name = 's2';
EOF
compare

step="one statement moves rows both ways between two groups"
both <<'EOF'
UPDATE resources SET state = CASE state WHEN 'available' THEN 'maintenance'
    WHEN 'maintenance' THEN 'available' ELSE state END, updated_at = 1700002050;
UPDATE resources SET tenant = tenant WHERE datacenter_id = 10;
EOF
compare

step="change GPU counts"
both <<'EOF'
UPDATE resources SET gpu_count = 2, updated_at = 1700002100 WHERE kind = 'server' AND datacenter_id = 20;
UPDATE resources SET gpu_count = gpu_count + 1 WHERE datacenter_id = 30;
EOF
compare

step="move a resource to another data center"
both <<'EOF'
UPDATE resources SET datacenter_id = 20, updated_at = 1700002200
    WHERE datacenter_id = 10 AND kind = 'rack' AND name = 'r1';
EOF
compare

step="change attrs and metadata"
both <<'EOF'
UPDATE resources SET attrs = '{"hostname": "s1.example.com", "tenant": null}',
    metadata = '{"note": "line\nbreak", "n": -0.5}' WHERE datacenter_id = 10 AND name = 's1';
UPDATE resources SET attrs = '{"metadata": {"a": {"b": null, "c": 3}}}'
    WHERE datacenter_id = 30 AND name = 'c2';
UPDATE resources SET attrs = '"just a string"' WHERE datacenter_id = 20 AND kind = 'pdu';
EOF
compare

step="rename data centers (and a document an unlisted column write left alone)"
both <<'EOF'
UPDATE resources SET doc = '{"stale": true}' WHERE datacenter_id = 30 AND name = 'c1';
UPDATE resources SET doc = NULL WHERE datacenter_id = 30 AND name = 'nas1';
UPDATE datacenters SET name = 'dc-a renamed "x"', updated_at = 1700003000 WHERE id = 10;
UPDATE datacenters SET name = 'dc-c2' WHERE id = 30;
UPDATE datacenters SET location = 'Lyon' WHERE id = 20;
EOF
compare

step="a write of a listed column renders the document again"
both <<'EOF'
UPDATE resources SET version = version + 1 WHERE datacenter_id = 30 AND name = 'c1';
UPDATE resources SET updated_at = 1700003100 WHERE datacenter_id = 30 AND name = 'nas1';
EOF
compare

step="upsert of an existing resource"
both <<'EOF'
INSERT INTO resources (datacenter_id, kind, name, state, gpu_count, created_at, updated_at)
VALUES (10, 'server', 's3', 'maintenance', 4, 1700004000, 1700004000)
ON CONFLICT (datacenter_id, kind, name) DO UPDATE SET state = excluded.state,
    gpu_count = excluded.gpu_count, updated_at = excluded.updated_at,
    version = resources.version + 1;
EOF
compare

step="delete resources"
both <<'EOF'
DELETE FROM resources WHERE datacenter_id = 30 AND name = 'c2';
DELETE FROM resources WHERE kind = 'switch';
EOF
compare

step="delete a data center (cascades to its resources and counts)"
both <<'EOF'
DELETE FROM datacenters WHERE id = 20;
EOF
compare

echo "trigger_compare: SQLite and PostgreSQL agree after all $checks steps"
exit 0
