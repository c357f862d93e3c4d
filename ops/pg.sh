#!/usr/bin/env bash
# A PostgreSQL of its own for shardgate's --store postgres (docs/operations.md, Scale-out):
# run by the postgres user, its data dir under DIR, listening on 127.0.0.1:PORT only, with a
# database `shardgate`, the owner role `shardgate` and the read-only role `shardgate_ro`.
# Closed to the other users of the host (docs/operations.md §9.2): TCP takes SCRAM-SHA-256
# passwords only, the Unix socket (in DIR) peer authentication only. Each role's password is in
# DIR/<role>.pgpass, a libpq password file (mode 0600): the operator's when it is there, else
# made at the first start from /dev/urandom; it is never printed, logged or put on a command
# line, and each start sets the role's password from it. Run as root, each file goes to the
# user of its role's client when made: SHARDGATE_PGPASS_OWNER gets shardgate.pgpass (the
# gateways), SHARDGATE_PGPASS_RO_OWNER shardgate_ro.pgpass (the health service), so the health
# service's user cannot read the owner's secret (docs/operations.md §9.2). SHARDGATE_PG_LISTEN: the listen
# address at the first start (default 127.0.0.1; another one takes passwords on every address).
#   ops/pg.sh start DIR PORT   initdb when DIR has no cluster yet, then start (waits until ready)
#   ops/pg.sh stop DIR         fast shutdown
#   ops/pg.sh kill DIR         SIGKILL of the postmaster (tests: a crash of the database)
#   ops/pg.sh status DIR       exit 0 when it runs
#   ops/pg.sh run DIR PORT     as start, then the server in the foreground (the compose
#                              `cluster` profile's postgres service; SIGTERM stops it)
# Prints nothing on success but the URL of `start`:
# postgres://shardgate@127.0.0.1:PORT/shardgate?passfile=DIR/shardgate.pgpass
set -euo pipefail

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$PG_BIN/pg_ctl" ] || { echo "ops/pg.sh: PostgreSQL is not installed (ops/lib.sh installs it)" >&2; exit 1; }

# As the postgres user, from / (the caller's directory may be closed to that user).
as_postgres() {
    if [ "$(id -un)" = postgres ]; then "$@"; else (cd / && runuser -u postgres -- "$@"); fi
}

data_dir() { echo "$1/pgdata"; }

init_cluster() {
    local dir=$1 data
    data=$(data_dir "$dir")
    mkdir -p "$dir"
    chown postgres: "$dir" 2>/dev/null || true
    # --data-checksums: every page a read brings from disk is checked (docs/decisions.md §44).
    as_postgres "$PG_BIN/initdb" -D "$data" -U postgres --auth-local=peer \
        --auth-host=scram-sha-256 --data-checksums --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 ||
        { echo "ops/pg.sh: initdb failed; its log, $dir/initdb.log:" >&2; cat "$dir/initdb.log" >&2; exit 1; }
    # Loopback only; the socket in DIR, not in /var/run; durability as production has it.
    cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '${SHARDGATE_PG_LISTEN:-127.0.0.1}'
unix_socket_directories = '$dir'
synchronous_commit = on
fsync = on
max_connections = 100
EOF
    # Another address than loopback (a container on its project's network): passwords there too.
    if [ "${SHARDGATE_PG_LISTEN:-127.0.0.1}" != 127.0.0.1 ]; then
        printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' \
            >>"$data/pg_hba.conf"
    fi
}

start() {
    local dir=$1 port=$2 data
    data=$(data_dir "$dir")
    [ -f "$data/PG_VERSION" ] || init_cluster "$dir"
    as_postgres "$PG_BIN/pg_ctl" -D "$data" -o "-p $port" -l "$dir/postgres.log" -w -t 60 start >/dev/null ||
        { echo "ops/pg.sh: PostgreSQL did not start on port $port; its log, $dir/postgres.log, ends with:" >&2
          tail -20 "$dir/postgres.log" >&2; exit 1; }
    # The superuser over the socket, by peer authentication: no password exists for it.
    local psql=("$PG_BIN/psql" -h "$dir" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1)
    if [ "$(as_postgres "${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'shardgate'")" != 1 ]; then
        as_postgres "${psql[@]}" -c "CREATE ROLE shardgate LOGIN" \
            -c "CREATE ROLE shardgate_ro LOGIN" -c "CREATE DATABASE shardgate OWNER shardgate" >/dev/null
    fi
    local role
    for role in shardgate shardgate_ro; do
        set_password "$dir" "$role" "${psql[@]}"
    done
    echo "postgres://shardgate@127.0.0.1:$port/shardgate?passfile=$dir/shardgate.pgpass"
}

# set_password DIR ROLE PSQL...: DIR/ROLE.pgpass (made when absent: 0600, a random password
# for ROLE on any host, port and database), and ROLE's password set from it through psql's
# stdin, never its command line.
set_password() {
    local dir=$1 role=$2 file pw
    shift 2
    file="$dir/$role.pgpass"
    if [ ! -s "$file" ]; then
        pw=$(head -c 24 /dev/urandom | base64)
        (umask 077 && printf '*:*:*:%s:%s\n' "$role" "$pw" >"$file")
        # The user the role's clients run as, when it is not this one (the compose cluster
        # profile): one user per role.
        local owner=${SHARDGATE_PGPASS_OWNER:-}
        [ "$role" = shardgate ] || owner=${SHARDGATE_PGPASS_RO_OWNER:-}
        [ -z "$owner" ] || chown "$owner:" "$file"
    fi
    pw=$(awk -F: -v r="$role" '$4 == r { print $5; exit }' "$file")
    [ -n "$pw" ] || { echo "ops/pg.sh: $file holds no password for $role" >&2; exit 1; }
    printf "ALTER ROLE %s PASSWORD '%s';\n" "$role" "${pw//\'/\'\'}" |
        as_postgres "$@" -f - >/dev/null
}

# The same cluster as start, then postgres itself in the foreground (no pg_ctl): a container's
# main process, logging to stderr.
run() {
    local dir=$1 port=$2 data
    data=$(data_dir "$dir")
    start "$dir" "$port" >/dev/null
    as_postgres "$PG_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null
    if [ "$(id -un)" = postgres ]; then
        exec "$PG_BIN/postgres" -D "$data" -p "$port"
    fi
    exec runuser -u postgres -- "$PG_BIN/postgres" -D "$data" -p "$port"
}

# A live (not zombie) process whose working directory is the data dir: the postmaster or one of
# its backends (they all run there).
cluster_alive() {
    local data=$1 p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/cwd" 2>/dev/null)" = "$data" ] || continue
        grep -q '^State:[[:space:]]*Z' "$p/status" 2>/dev/null || return 0
    done
    return 1
}

# kill -9 of the postmaster, then waits (10 s at most) until its backends have noticed and
# exited, so a start can reuse the data dir. A postmaster not yet reaped by whoever inherited
# it (a zombie still answers kill -0) would make that start refuse: its stale pid file and
# socket lock files go.
crash() {
    local data pid
    data=$(data_dir "$1")
    pid=$(head -1 "$data/postmaster.pid")
    kill -9 "$pid"
    for _ in $(seq 100); do cluster_alive "$data" || break; sleep 0.1; done
    cluster_alive "$data" && { echo "ops/pg.sh: $data: still running after kill -9" >&2; exit 1; }
    rm -f "$data/postmaster.pid" "$1"/.s.PGSQL.*.lock
}

cmd=${1:-}
[ $# -lt 2 ] || set -- "$1" "$(realpath -m -- "$2")" "${@:3}" # DIR, absolute
case "$cmd" in
start) [ $# -eq 3 ] || { echo "usage: ops/pg.sh start DIR PORT" >&2; exit 64; }
    start "$2" "$3" ;;
run) [ $# -eq 3 ] || { echo "usage: ops/pg.sh run DIR PORT" >&2; exit 64; }
    run "$2" "$3" ;;
stop) as_postgres "$PG_BIN/pg_ctl" -D "$(data_dir "$2")" -m fast -w stop >/dev/null ;;
kill) crash "$2" ;;
status) as_postgres "$PG_BIN/pg_ctl" -D "$(data_dir "$2")" status >/dev/null ;;
*) echo "usage: ops/pg.sh start DIR PORT | run DIR PORT | stop DIR | kill DIR | status DIR" >&2; exit 64 ;;
esac
