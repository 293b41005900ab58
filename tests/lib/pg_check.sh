#!/bin/sh
# Runs one of the migration checks of tests/unit/ on a fresh database of
# the throwaway PostgreSQL that tests/lib/pg.sh started in PGDIR:
#
#   tests/lib/pg_check.sh PGDIR GPUINV schema      schema_compare.sh on a SQLite and a
#                                                  PostgreSQL database, each migrated by
#                                                  `GPUINV token list --db`
#   tests/lib/pg_check.sh PGDIR GPUINV triggers    trigger_compare.sh
#   tests/lib/pg_check.sh PGDIR GPUINV partitions  partitions_check.sh
#
# The database (gi_<random hex>) and the temporary SQLite directory are
# removed afterwards. Exits with the check's status (2 on a setup error).
set -u

if [ $# -ne 3 ]; then
    echo "usage: tests/lib/pg_check.sh PGDIR GPUINV schema|triggers|partitions" >&2
    exit 2
fi
pgdir=$1
gpuinv=$2
check=$3
here=$(cd "$(dirname "$0")" && pwd)
unit=$here/../unit

base=$(cat "$pgdir/conninfo") || exit 2
name=gi_$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
# The URL base with a database name: what follows the authority, up to
# the query, is the database.
url_for() {
    printf '%s\n' "$base" | sed -E "s#^(postgres(ql)?://[^/?]*)/?[^?]*#\\1/$1#"
}
admin=$(url_for postgres)
url=$(url_for "$name")
psql -X -q -v ON_ERROR_STOP=1 -d "$admin" -c "CREATE DATABASE $name" || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gi-pgcheck-XXXXXX") || exit 2

case "$check" in
schema)
    if "$gpuinv" token list --db "$tmp/s.db" >/dev/null && "$gpuinv" token list --db "$url" >/dev/null; then
        sh "$unit/schema_compare.sh" "$tmp/s.db" "$url"
        rc=$?
    else
        echo "pg_check: migrating the two databases failed" >&2
        rc=2
    fi
    ;;
triggers)
    sh "$unit/trigger_compare.sh" "$tmp/t.db" "$url"
    rc=$?
    ;;
partitions)
    sh "$unit/partitions_check.sh" "$url"
    rc=$?
    ;;
*)
    echo "pg_check: unknown check $check" >&2
    rc=2
    ;;
esac

rm -rf "$tmp"
psql -X -q -d "$admin" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1
exit $rc
