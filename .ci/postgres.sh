#!/usr/bin/env bash
# Starts (once; idempotent and fast when it runs) the throw-away PostgreSQL cluster the
# run store's tests use, and prints its URL. The cluster lives under $TMPDIR (default
# /tmp), listens on 127.0.0.1 only, trusts local connections, and holds nothing but
# test data. `.ci/setup` installs Debian's `postgresql` and runs this script; the
# tests run it too, so `cargo test` works on a machine where setup already ran.
set -euo pipefail

PORT="${IRIS_TEST_PG_PORT:-55439}"
DIR="${TMPDIR:-/tmp}/iris-test-pg-$PORT"
URL="postgresql://iris@127.0.0.1:$PORT/iris"

BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
    echo "PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)" >&2
    exit 1
fi

ready() { "$BIN/pg_isready" -h 127.0.0.1 -p "$PORT" -q 2>/dev/null; }
if ready && "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U iris -d iris -qtAc 'select 1' >/dev/null 2>&1; then
    echo "$URL"
    exit 0
fi

# initdb and the server refuse to run as root: run them as the `postgres` user the
# Debian package creates.
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

exec 9>"${TMPDIR:-/tmp}/iris-test-pg-$PORT.lock"
flock 9
if ! ready; then
    if [ ! -f "$DIR/PG_VERSION" ]; then
        rm -rf "$DIR"
        mkdir -p "$DIR"
        if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$DIR"; fi
        as_pg "$BIN/initdb" -D "$DIR" -U iris --auth=trust -E UTF8 >/dev/null
    fi
    as_pg "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w -t 60 \
        -o "-p $PORT -c listen_addresses=127.0.0.1 -k $DIR -c fsync=off -c max_connections=200" start >/dev/null
fi
if ! "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U iris -d postgres -qtAc "select 1 from pg_database where datname = 'iris'" | grep -q 1; then
    "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U iris iris
fi
echo "$URL"
