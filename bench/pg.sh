#!/bin/sh
# A throwaway PostgreSQL 15 for the benchmarks, with the same interface and
# layout as tests/lib/pg.sh (which the benchmarks use instead when present):
#
#   bench/pg.sh start DIR   initdb into DIR/data, start postgres on a Unix
#                           socket in a fresh directory under /tmp (recorded
#                           in DIR/sockdir; no TCP listener), wait until it
#                           answers, create database gpuinv and write
#                           DIR/conninfo: postgresql://gpuinv@/?host=SOCKDIR
#   bench/pg.sh stop DIR    stop that server, remove DIR/data and the socket
#                           directory. Always succeeds.
#
# Local connections are trusted (user gpuinv, no password); fsync,
# synchronous_commit and full_page_writes are off (a benchmark database is
# thrown away). As root, initdb and postgres run as nobody.
# PG_BIN: directory of the PostgreSQL binaries. BENCH_PG_PORT (default
# 55435): the port number, which names the socket file.
set -eu

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
port=${BENCH_PG_PORT:-55435}

[ $# -eq 2 ] || { echo "usage: bench/pg.sh start|stop DIR" >&2; exit 2; }
cmd=$1
dir=$2

# Runs a command as the owner of the cluster: nobody when we are root.
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
    if [ -f "$dir/sockdir" ]; then
        sock=$(cat "$dir/sockdir")
        case "$sock" in
        /tmp/gibench-pg.*) rm -rf "$sock" ;;
        esac
    fi
    rm -rf "$dir/data" "$dir/sockdir" "$dir/conninfo" "$dir/postgres.log" "$dir/initdb.log"
}

start() {
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    stop
    [ -x "$PG_BIN/postgres" ] || { echo "bench/pg.sh: no PostgreSQL in $PG_BIN (install postgresql-15)" >&2; exit 1; }
    sock=$(mktemp -d /tmp/gibench-pg.XXXXXX)
    echo "$sock" >"$dir/sockdir"
    mkdir "$dir/data"
    : >"$dir/postgres.log"
    if [ "$(id -u)" = 0 ]; then
        chown nobody:nogroup "$dir/data" "$sock" "$dir/postgres.log"
        chmod a+x "$dir"
        as_owner test -w "$dir/data" ||
            { echo "bench/pg.sh: nobody cannot reach $dir/data" >&2; exit 1; }
    fi
    chmod 700 "$dir/data"
    as_owner "$PG_BIN/initdb" -D "$dir/data" --auth=trust -U gpuinv -E UTF8 --locale=C --no-sync \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = ''
port = $port
unix_socket_directories = '$sock'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 300
shared_buffers = 32MB
EOF
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start >/dev/null ||
        { cat "$dir/postgres.log" >&2; exit 1; }
    "$PG_BIN/createdb" -h "$sock" -p "$port" -U gpuinv gpuinv
    if [ "$port" = 5432 ]; then
        echo "postgresql://gpuinv@/?host=$sock" >"$dir/conninfo"
    else
        echo "postgresql://gpuinv@/?host=$sock&port=$port" >"$dir/conninfo"
    fi
}

case "$cmd" in
start) start ;;
stop) if [ -d "$dir" ]; then dir=$(cd "$dir" && pwd); stop; fi ;;
*) echo "usage: bench/pg.sh start|stop DIR" >&2; exit 2 ;;
esac
