#!/bin/sh
# A throwaway PostgreSQL 15 for the test suites.
#
#   tests/lib/pg.sh start DIR   initdb into DIR/data, start postgres listening
#                               only on a Unix socket in a short directory
#                               under /tmp (recorded in DIR/sockdir), wait
#                               until it answers, and write DIR/conninfo: a
#                               libpq URL without a database name, such as
#                               postgresql://gpuinv@/?host=/tmp/gipg.abc123
#                               (a test appends its own database name after
#                               the slash: postgresql://gpuinv@/gi_1f2e?host=...).
#   tests/lib/pg.sh stop DIR    stop that server and remove DIR's data and
#                               the socket directory. Always succeeds.
#
# start is idempotent: a server left behind by a killed run is stopped and
# its files removed before a fresh one is created. The server trusts local
# connections (user gpuinv, no password) and is tuned for tests, not for
# durability (fsync, synchronous_commit and full_page_writes off). Run as
# root, initdb and postgres run as nobody on directories chowned to it.
# PG_BIN overrides the directory of the PostgreSQL binaries.
set -eu

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

usage() {
    echo "usage: tests/lib/pg.sh start|stop DIR" >&2
    exit 2
}

[ $# -eq 2 ] || usage
cmd=$1
dir=$2

# Runs a command as the unprivileged owner of the cluster: nobody when we
# are root (postgres refuses to run as root), ourselves otherwise.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
    else
        "$@"
    fi
}

stop() {
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    # A postmaster that pg_ctl could not stop: the first line of
    # postmaster.pid is its process id, killed only while that process is
    # still a postgres on this data directory (the id may have been reused).
    if [ -f "$dir/data/postmaster.pid" ]; then
        pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
        case "$pid" in
        '' | *[!0-9]*) ;;
        *)
            if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "postgres -D $dir/data"; then
                kill -9 "$pid" 2>/dev/null || true
            fi
            ;;
        esac
    fi
    if [ -f "$dir/sockdir" ]; then
        sock=$(cat "$dir/sockdir")
        case "$sock" in
        /tmp/gipg.*) rm -rf "$sock" ;;
        esac
    fi
    rm -rf "$dir/data" "$dir/sockdir" "$dir/conninfo" "$dir/postgres.log" "$dir/initdb.log"
}

start() {
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    stop
    if [ ! -x "$PG_BIN/postgres" ]; then
        echo "pg.sh: no PostgreSQL in $PG_BIN (install postgresql-15)" >&2
        exit 1
    fi
    sock=$(mktemp -d /tmp/gipg.XXXXXX)
    echo "$sock" >"$dir/sockdir"
    mkdir "$dir/data"
    : >"$dir/postgres.log"
    if [ "$(id -u)" = 0 ]; then
        chown nobody:nogroup "$dir/data" "$sock" "$dir/postgres.log"
        # nobody must be able to reach DIR/data through DIR's parents.
        chmod a+x "$dir"
        if ! as_owner test -w "$dir/data"; then
            echo "pg.sh: nobody cannot reach $dir/data (a parent directory is not searchable)" >&2
            exit 1
        fi
    fi
    chmod 700 "$dir/data"
    if ! as_owner "$PG_BIN/initdb" -D "$dir/data" --auth=trust -U gpuinv -E UTF8 --locale=C \
        --no-sync >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        exit 1
    fi
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$sock'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 300
shared_buffers = 32MB
EOF
    if ! as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start \
        >/dev/null; then
        cat "$dir/postgres.log" >&2
        exit 1
    fi
    tries=0
    until "$PG_BIN/pg_isready" -q -h "$sock" -U gpuinv -d postgres; do
        tries=$((tries + 1))
        if [ "$tries" -gt 100 ]; then
            echo "pg.sh: postgres did not become ready" >&2
            cat "$dir/postgres.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    # A database named like the user, so that the base URL alone connects.
    "$PG_BIN/createdb" -h "$sock" -U gpuinv gpuinv
    echo "postgresql://gpuinv@/?host=$sock" >"$dir/conninfo"
}

case "$cmd" in
start) start ;;
stop)
    if [ -d "$dir" ]; then
        dir=$(cd "$dir" && pwd)
        stop
    fi
    ;;
*) usage ;;
esac
