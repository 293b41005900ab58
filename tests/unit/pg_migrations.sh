#!/bin/sh
# Usage: pg_migrations.sh
#
# Starts a throw-away PostgreSQL (initdb in a temporary directory, Unix
# socket only, as an unprivileged user when run as root), then runs
# trigger_compare.sh (migrations, back-fills and triggers against SQLite),
# schema_compare.sh on the two databases that left, and partitions_check.sh,
# and stops the server. Exits 0 when all pass, 1 when one fails, 77 (skip)
# when no PostgreSQL server binaries are installed. PG_BINDIR overrides
# where initdb, pg_ctl and postgres are looked for.
set -u

here=$(cd "$(dirname "$0")" && pwd)
bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && bindir=$d
    done
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ] || ! command -v psql >/dev/null 2>&1 ||
    ! command -v sqlite3 >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "pg_migrations: needs PostgreSQL server binaries, psql, sqlite3 and node; skipped" >&2
    exit 77
fi

tmp=$(mktemp -d) || exit 1
as_owner() { "$@"; }
if [ "$(id -u)" = 0 ]; then
    chown nobody "$tmp" || exit 1
    as_owner() { runuser -u nobody -- "$@"; }
fi
stop() {
    if [ -f "$tmp/data/postmaster.pid" ]; then
        as_owner "$bindir/pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1
    fi
    rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 1' INT TERM

as_owner "$bindir/initdb" -D "$tmp/data" -U postgres -A trust -E UTF8 --no-locale \
    >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log" >&2; exit 1; }
# The port only names the socket file, in this test's own directory.
as_owner "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w \
    -o "-c listen_addresses= -k $tmp -p 5432 -c fsync=off" start >/dev/null ||
    { cat "$tmp/server.log" >&2; exit 1; }

conn="host=$tmp port=5432 user=postgres"
for db in triggers partitions; do
    psql -X -q -d "$conn dbname=postgres" -c "CREATE DATABASE $db" || exit 1
done

status=0
sh "$here/trigger_compare.sh" "$tmp/triggers.sqlite" "$conn dbname=triggers" || status=1
if [ -f "$tmp/triggers.sqlite" ]; then
    sh "$here/schema_compare.sh" "$tmp/triggers.sqlite" "$conn dbname=triggers" || status=1
fi
sh "$here/partitions_check.sh" "$conn dbname=partitions" || status=1
exit $status
