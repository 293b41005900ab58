#!/bin/sh
# Usage: schema_compare.sh SQLITE_DB PG_CONNINFO
#
# Compares the logical schema of a SQLite database and a PostgreSQL one
# (PG_CONNINFO: a postgres:// URL or a libpq key=value string; the current
# schema is compared), both migrated by their own migration lists. Lists from
# each side, in one normalized form, and diffs:
#   column  TABLE POSITION COLUMN TYPE NULLABILITY DEFAULT
#           (TYPE integer, text (PostgreSQL: collation "C", as SQLite's BINARY) or double)
#   pk      TABLE COLUMNS
#   unique  TABLE COLUMNS
#   fk      TABLE COLUMNS -> TABLE(COLUMNS) ON UPDATE .. ON DELETE ..
#   index   NAME TABLE COLUMNS unique|plain partial|full
#   trigger NAME TABLE
# Partition child tables, their indexes, and schema_version (kept by the
# migration runner, not by migrations) are left out. The indexes in
# PG_ONLY exist on PostgreSQL alone by design (each named with the
# migration that says why): they must be there, and are not compared. A primary-key column
# counts as NOT NULL on SQLite too. Exits 0 when both lists are equal, 1 with
# the diff when they differ, 2 on a usage or connection error.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 SQLITE_DB PG_CONNINFO" >&2
    exit 2
fi
sqlite_db=$1
pg=$2
if [ ! -f "$sqlite_db" ]; then
    echo "$0: no SQLite database at $sqlite_db" >&2
    exit 2
fi

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

sqlite3 -bail -batch -noheader -list "$sqlite_db" >"$tmp/sqlite.raw" <<'EOF' || exit 2
WITH t AS (
    SELECT name FROM sqlite_master
    WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name <> 'schema_version'
)
SELECT 'column ' || t.name || ' ' || c.cid || ' ' || c.name || ' ' ||
       CASE upper(c.type) WHEN 'INTEGER' THEN 'integer' WHEN 'BIGINT' THEN 'integer'
            WHEN 'TEXT' THEN 'text' WHEN 'DOUBLE PRECISION' THEN 'double'
            ELSE 'other:' || c.type END || ' ' ||
       CASE WHEN c."notnull" OR c.pk > 0 THEN 'not-null' ELSE 'null' END || ' ' ||
       COALESCE(c.dflt_value, '-')
FROM t, pragma_table_info(t.name) c
UNION ALL
SELECT 'pk ' || t.name || ' ' ||
       (SELECT group_concat(name, ',') FROM
            (SELECT c.name FROM pragma_table_info(t.name) c WHERE c.pk > 0 ORDER BY c.pk))
FROM t WHERE EXISTS (SELECT 1 FROM pragma_table_info(t.name) c WHERE c.pk > 0)
UNION ALL
SELECT 'unique ' || t.name || ' ' ||
       (SELECT group_concat(name, ',') FROM
            (SELECT ii.name FROM pragma_index_info(il.name) ii ORDER BY ii.seqno))
FROM t, pragma_index_list(t.name) il WHERE il.origin = 'u'
UNION ALL
SELECT 'fk ' || t.name || ' ' ||
       (SELECT group_concat("from", ',') FROM
            (SELECT f2."from" FROM pragma_foreign_key_list(t.name) f2 WHERE f2.id = f.id
             ORDER BY f2.seq)) || ' -> ' || f."table" || '(' ||
       (SELECT group_concat("to", ',') FROM
            (SELECT f2."to" FROM pragma_foreign_key_list(t.name) f2 WHERE f2.id = f.id
             ORDER BY f2.seq)) || ') ON UPDATE ' || f.on_update || ' ON DELETE ' || f.on_delete
FROM t, pragma_foreign_key_list(t.name) f WHERE f.seq = 0
UNION ALL
SELECT 'index ' || il.name || ' ' || t.name || ' ' ||
       (SELECT group_concat(name, ',') FROM
            (SELECT ii.name FROM pragma_index_info(il.name) ii ORDER BY ii.seqno)) || ' ' ||
       CASE WHEN il."unique" THEN 'unique' ELSE 'plain' END || ' ' ||
       CASE WHEN il.partial THEN 'partial' ELSE 'full' END
FROM t, pragma_index_list(t.name) il WHERE il.origin = 'c'
UNION ALL
SELECT 'trigger ' || name || ' ' || tbl_name FROM sqlite_master WHERE type = 'trigger';
EOF

psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$pg" >"$tmp/pg.raw" <<'EOF' || exit 2
WITH t AS (
    SELECT c.oid, c.relname FROM pg_class c
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
      AND NOT c.relispartition AND c.relname <> 'schema_version'
),
cols AS (
    SELECT con.oid, con.contype, t.relname,
           (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
            FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum) AS cols
    FROM pg_constraint con JOIN t ON t.oid = con.conrelid
)
SELECT 'column ' || t.relname || ' ' ||
       (row_number() OVER (PARTITION BY t.oid ORDER BY a.attnum) - 1) || ' ' || a.attname || ' ' ||
       CASE format_type(a.atttypid, a.atttypmod) WHEN 'bigint' THEN 'integer'
            WHEN 'integer' THEN 'integer'
            WHEN 'text' THEN CASE WHEN a.attcollation = 'pg_catalog."C"'::regcollation THEN 'text'
                                  ELSE 'text:' || a.attcollation::regcollation END
            WHEN 'double precision' THEN 'double'
            ELSE 'other:' || format_type(a.atttypid, a.atttypmod) END || ' ' ||
       CASE WHEN a.attnotnull THEN 'not-null' ELSE 'null' END || ' ' ||
       COALESCE(regexp_replace(pg_get_expr(d.adbin, d.adrelid), '::[a-z ]+$', ''), '-')
FROM t JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
UNION ALL
SELECT 'pk ' || relname || ' ' || cols FROM cols WHERE contype = 'p'
UNION ALL
SELECT 'unique ' || relname || ' ' || cols FROM cols WHERE contype = 'u'
UNION ALL
SELECT 'fk ' || cols.relname || ' ' || cols.cols || ' -> ' || ref.relname || '(' ||
       (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
        FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
        JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum) ||
       ') ON UPDATE ' || CASE con.confupdtype WHEN 'a' THEN 'NO ACTION' WHEN 'r' THEN 'RESTRICT'
            WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' ELSE 'SET DEFAULT' END ||
       ' ON DELETE ' || CASE con.confdeltype WHEN 'a' THEN 'NO ACTION' WHEN 'r' THEN 'RESTRICT'
            WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' ELSE 'SET DEFAULT' END
FROM cols JOIN pg_constraint con ON con.oid = cols.oid
JOIN pg_class ref ON ref.oid = con.confrelid WHERE cols.contype = 'f'
UNION ALL
SELECT 'index ' || ic.relname || ' ' || t.relname || ' ' ||
       (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
        FROM unnest(i.indkey::smallint[]) WITH ORDINALITY k(attnum, ord)
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) || ' ' ||
       CASE WHEN i.indisunique THEN 'unique' ELSE 'plain' END || ' ' ||
       CASE WHEN i.indpred IS NOT NULL THEN 'partial' ELSE 'full' END
FROM t JOIN pg_index i ON i.indrelid = t.oid JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid
                  AND con.conrelid = t.oid AND con.contype IN ('p', 'u', 'x'))
UNION ALL
SELECT 'trigger ' || tg.tgname || ' ' || t.relname
FROM t JOIN pg_trigger tg ON tg.tgrelid = t.oid WHERE NOT tg.tgisinternal;
EOF

# migration 060: one GPU's raw samples by time (too dear for SQLite's ingest)
PG_ONLY='index gpu_samples_gpu_ts gpu_samples gpu_id,ts plain full'
printf '%s\n' "$PG_ONLY" >"$tmp/pg_only"
while IFS= read -r line; do
    if ! grep -qxF "$line" "$tmp/pg.raw"; then
        echo "schema_compare: PostgreSQL lacks its own $line" >&2
        exit 1
    fi
done <"$tmp/pg_only"
LC_ALL=C sort "$tmp/sqlite.raw" >"$tmp/sqlite"
grep -vxF -f "$tmp/pg_only" "$tmp/pg.raw" | LC_ALL=C sort >"$tmp/postgresql"
if [ ! -s "$tmp/sqlite" ] || [ ! -s "$tmp/postgresql" ]; then
    echo "$0: one side lists no schema at all" >&2
    exit 1
fi
if (cd "$tmp" && diff -u sqlite postgresql); then
    echo "schema_compare: same schema ($(wc -l <"$tmp/sqlite") items)"
    exit 0
fi
echo "schema_compare: the schemas differ (- SQLite, + PostgreSQL)" >&2
exit 1
