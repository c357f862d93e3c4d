#!/usr/bin/env bash
# A scale-out of shardgate on this machine (docs/operations.md §9): one PostgreSQL,
# three gateway replicas sharing it (--store postgres), HAProxy in front of them and the health
# service reading the same database read-only. Everything listens on 127.0.0.1.
#
#   ops/cluster.sh up [--state DIR] [--no-health]   build, start all, wait until ready
#   ops/cluster.sh down [--state DIR]               stop all (idempotent)
#   ops/cluster.sh status [--state DIR]             one line per component; exit 0 if all run
#
# DIR (default state/cluster) holds gw-N.log/.pid, haproxy.cfg/.log/.pid, health.log/.pid,
# token and admin.token (the gateways' client and admin tokens, made at the first `up`, 0600:
# every request but the probes needs the first), the PostgreSQL of ops/pg.sh
# under DIR/pg (or, when the postgres user cannot reach DIR, under its home), and cluster.env
# (the ports and paths `up` used, which `down` and `status` read). Ports, below the ephemeral
# range and clear of ops/run.sh's 8080 and the health service's 8081: SHARDGATE_CLUSTER_PORT
# (HAProxy, 7080), SHARDGATE_CLUSTER_BASE_PORT (gateways BASE..BASE+2, 7081),
# SHARDGATE_CLUSTER_HEALTH_PORT (7090), SHARDGATE_CLUSTER_PG_PORT (7432). A port in use stops
# `up` before anything starts. --no-health leaves the health service out.
# SHARDGATE_BIN and SHARDGATE_HEALTH_BIN (both set) run those binaries instead of building
# build/release (the tests run the build under test).
# Needs root (or the postgres user) for PostgreSQL, which refuses to run as root: ops/pg.sh
# runs it as postgres with runuser.
set -euo pipefail
# shellcheck source=ops/lib.sh
. "$(dirname "$0")/lib.sh"

CONF="$SHARDGATE_ROOT/conf/dispatch.env"
SHARDS="$SHARDGATE_ROOT/input/shards.json"
GATEWAYS=(1 2 3)

die() {
    echo "ops/cluster.sh: $*" >&2
    exit 1
}

usage() {
    echo "usage: ops/cluster.sh up [--state DIR] [--no-health] | down [--state DIR] | status [--state DIR]" >&2
    exit 64
}

# --- configuration -----------------------------------------------------------------------

# The ports of a new `up`, from the environment.
ports_from_env() {
    PROXY_PORT=${SHARDGATE_CLUSTER_PORT:-7080}
    BASE_PORT=${SHARDGATE_CLUSTER_BASE_PORT:-7081}
    HEALTH_PORT=${SHARDGATE_CLUSTER_HEALTH_PORT:-7090}
    PG_PORT=${SHARDGATE_CLUSTER_PG_PORT:-7432}
    PG_DIR=$STATE/pg
    HEALTH=1
}

# The ports the last `up` of DIR used (down and status), else those of the environment.
ports_load() {
    ports_from_env
    if [ -f "$STATE/cluster.env" ]; then
        # shellcheck source=/dev/null
        . "$STATE/cluster.env"
    fi
}

ports_save() {
    printf 'PROXY_PORT=%s\nBASE_PORT=%s\nHEALTH_PORT=%s\nPG_PORT=%s\nHEALTH=%s\nPG_DIR=%q\n' \
        "$PROXY_PORT" "$BASE_PORT" "$HEALTH_PORT" "$PG_PORT" "$HEALTH" "$PG_DIR" >"$STATE/cluster.env"
}

gw_port() { echo $((BASE_PORT + $1 - 1)); }
store_url() { echo "postgres://$1@127.0.0.1:$PG_PORT/shardgate?passfile=$PG_DIR/$1.pgpass"; }

# --- processes ---------------------------------------------------------------------------

pid_in() { if [ -f "$1" ]; then head -n 1 "$1"; fi; }

# alive PID NAME: PID runs and is NAME (its argv[0]'s base name), not a reused pid.
alive() {
    local pid=$1 argv0
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    argv0=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1) || return 1
    [ "$(basename "$argv0")" = "$2" ]
}

# start_bg PIDFILE LOG CMD...: CMD in the background, stdin closed, output to LOG (new).
start_bg() {
    local pidfile=$1 log=$2
    shift 2
    "$@" </dev/null >"$log" 2>&1 &
    echo $! >"$pidfile"
}

# signal_pid NAME PIDFILE SIGNAL: sends SIGNAL when the component runs.
signal_pid() {
    local pid
    pid=$(pid_in "$2")
    if alive "$pid" "$(comm_of "$1")"; then
        echo "stopping $1 (pid $pid, SIG$3)" >&2
        kill -"$3" "$pid" 2>/dev/null || true
    fi
}

# await_pid NAME PIDFILE SECONDS: waits for a signalled component to exit, SIGKILL after SECONDS.
await_pid() {
    local name=$1 pidfile=$2 secs=$3 pid i
    pid=$(pid_in "$pidfile")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        for ((i = 0; i < secs * 10; i++)); do
            alive "$pid" "$(comm_of "$name")" || break
            sleep 0.1
        done
        if alive "$pid" "$(comm_of "$name")"; then
            echo "ops/cluster.sh: $name (pid $pid) still runs after $secs s: SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$pidfile"
}

# stop_pid NAME PIDFILE SIGNAL SECONDS: signal, then wait (SIGKILL when it is still there).
stop_pid() {
    signal_pid "$1" "$2" "$3"
    await_pid "$1" "$2" "$4"
}

# The program name behind a component.
comm_of() {
    case $1 in
    gateway-*) echo shardgate ;;
    health) echo shardgate-health ;;
    *) echo "$1" ;;
    esac
}

# wait_http URL STATUS SECONDS [PID NAME]: polls until URL answers STATUS; fails early when
# the process PID is gone.
wait_http() {
    local url=$1 want=$2 secs=$3 pid=${4:-} name=${5:-} i got=""
    for ((i = 0; i < secs * 10; i++)); do
        got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" || true)
        [ "$got" = "$want" ] && return 0
        if [ -n "$pid" ] && ! alive "$pid" "$name"; then
            return 1
        fi
        sleep 0.1
    done
    return 1
}

# --- up ----------------------------------------------------------------------------------

any_running() {
    local n
    for n in "${GATEWAYS[@]}"; do
        alive "$(pid_in "$STATE/gw-$n.pid")" shardgate && return 0
    done
    alive "$(pid_in "$STATE/haproxy.pid")" haproxy && return 0
    alive "$(pid_in "$STATE/health.pid")" shardgate-health && return 0
    pg_running
}

pg_running() { [ -f "$PG_DIR/pgdata/PG_VERSION" ] && ops/pg.sh status "$PG_DIR" 2>/dev/null; }

# fail_with NAME LOG WHAT: the component that failed, its log's path and its last lines; exit 1.
fail_with() {
    {
        echo "ops/cluster.sh: $1: $3"
        echo "ops/cluster.sh: its log, $2, ends with:"
        tail -n 15 "$2" 2>/dev/null | sed 's/^/    /'
        echo "ops/cluster.sh: \`ops/cluster.sh down --state $STATE\` stops what did start"
    } >&2
    exit 1
}

# in_use PORT: something accepts connections on 127.0.0.1:PORT.
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Every port of the cluster free before anything starts, else which one and how to move it.
check_ports() {
    local n
    in_use "$PG_PORT" && die "127.0.0.1:$PG_PORT (postgres) is in use: stop what holds it, or set SHARDGATE_CLUSTER_PG_PORT"
    for n in "${GATEWAYS[@]}"; do
        in_use "$(gw_port "$n")" &&
            die "127.0.0.1:$(gw_port "$n") (gateway-$n) is in use: stop what holds it, or set SHARDGATE_CLUSTER_BASE_PORT"
    done
    in_use "$PROXY_PORT" && die "127.0.0.1:$PROXY_PORT (haproxy) is in use: stop what holds it, or set SHARDGATE_CLUSTER_PORT"
    if [ "$HEALTH" = 1 ] && in_use "$HEALTH_PORT"; then
        die "127.0.0.1:$HEALTH_PORT (health) is in use: stop what holds it, or set SHARDGATE_CLUSTER_HEALTH_PORT"
    fi
    return 0
}

# PostgreSQL runs as postgres: its data goes under STATE when that user can reach it, else
# under the postgres user's home (a state dir made by ops/run.sh is 0750, a mktemp -d one 0700).
choose_pg_dir() {
    PG_DIR=$STATE/pg
    [ "$(id -un)" = postgres ] && return 0
    runuser -u postgres -- test -x "$STATE" && return 0
    local home
    home=$(getent passwd postgres | cut -d: -f6)
    PG_DIR="$home/shardgate-cluster-$(printf '%s' "$STATE" | cksum | cut -d' ' -f1)"
    echo "== the postgres user cannot reach $STATE: PostgreSQL's data goes to $PG_DIR" >&2
}

# The gateways' client token (every request but the probes) and admin token (PUT
# /v1/admin/membership), each made once, readable by this user only (docs/decisions.md §48).
make_tokens() {
    local f
    for f in token admin.token; do
        [ -s "$STATE/$f" ] || (umask 077 && head -c 24 /dev/urandom | base64 >"$STATE/$f")
    done
}

up_postgres() {
    echo "== postgres on 127.0.0.1:$PG_PORT ($PG_DIR)" >&2
    ops/pg.sh start "$PG_DIR" "$PG_PORT" >/dev/null ||
        die "postgres did not start on 127.0.0.1:$PG_PORT (its log above)"
    # An empty database gets the whole schema, an older one only what it lacks.
    "$SHARDGATE_BIN" db migrate --store "$(store_url shardgate)" >&2 ||
        fail_with postgres "$PG_DIR/postgres.log" "shardgate db migrate failed"
}

up_gateway() {
    local n=$1 port log="$STATE/gw-$1.log" pid got
    port=$(gw_port "$n")
    start_bg "$STATE/gw-$n.pid" "$log" "$SHARDGATE_BIN" serve --conf "$CONF" --shards "$SHARDS" \
        --store "$(store_url shardgate)" --listen "127.0.0.1:$port" \
        --token-file "$STATE/token" --admin-token-file "$STATE/admin.token"
    pid=$(pid_in "$STATE/gw-$n.pid")
    got=$(sg_listen_port "$log" "$pid")
    [ "$got" = "$port" ] || fail_with "gateway-$n" "$log" "did not listen on 127.0.0.1:$port"
    wait_http "http://127.0.0.1:$port/readyz" 200 30 "$pid" shardgate ||
        fail_with "gateway-$n" "$log" "its /readyz did not answer 200 on 127.0.0.1:$port"
    echo "== gateway-$n on 127.0.0.1:$port (pid $pid)" >&2
}

render_haproxy_cfg() {
    sg_haproxy_cfg "$STATE/haproxy.cfg" "$PROXY_PORT" "$(gw_port 1)" "$(gw_port 2)" "$(gw_port 3)" ||
        die "haproxy -c refused $STATE/haproxy.cfg"
}

up_haproxy() {
    render_haproxy_cfg
    start_bg "$STATE/haproxy.pid" "$STATE/haproxy.log" haproxy -db -f "$STATE/haproxy.cfg"
    echo "== haproxy on 127.0.0.1:$PROXY_PORT (pid $(pid_in "$STATE/haproxy.pid"))" >&2
}

up_health() {
    local pid
    start_bg "$STATE/health.pid" "$STATE/health.log" "$SHARDGATE_HEALTH_BIN" serve \
        --conf "$CONF" --shards "$SHARDS" --store "$(store_url shardgate_ro)" \
        --listen "127.0.0.1:$HEALTH_PORT"
    pid=$(pid_in "$STATE/health.pid")
    wait_http "http://127.0.0.1:$HEALTH_PORT/livez" 200 30 "$pid" shardgate-health ||
        fail_with health "$STATE/health.log" "did not come up on 127.0.0.1:$HEALTH_PORT (does \
this shardgate-health take --store? \`up --no-health\` runs without it)"
    echo "== health on 127.0.0.1:$HEALTH_PORT (pid $pid)" >&2
}

print_urls() {
    echo "cluster up (state $STATE):"
    echo "  http://127.0.0.1:$PROXY_PORT  HAProxy -> gateway-1..3"
    local n
    for n in "${GATEWAYS[@]}"; do echo "  http://127.0.0.1:$(gw_port "$n")  gateway-$n"; done
    [ "$HEALTH" = 1 ] && echo "  http://127.0.0.1:$HEALTH_PORT/healthz  health"
    echo "  $(store_url shardgate)  PostgreSQL ($PG_DIR)"
    echo "  $STATE/token  the client token: curl -H \"Authorization: Bearer \$(cat $STATE/token)\" ..."
    echo "  $STATE/admin.token  the admin token: shardgate admin apply --url http://127.0.0.1:$PROXY_PORT --admin-token-file $STATE/admin.token --to FILE"
}

# Every component still runs once the last one answered (one that died after its start, such
# as a HAProxy that lost its port, is named with its log).
check_all_alive() {
    local n
    pg_running || fail_with postgres "$PG_DIR/postgres.log" "is not running"
    for n in "${GATEWAYS[@]}"; do
        alive "$(pid_in "$STATE/gw-$n.pid")" shardgate || fail_with "gateway-$n" "$STATE/gw-$n.log" "exited"
    done
    alive "$(pid_in "$STATE/haproxy.pid")" haproxy || fail_with haproxy "$STATE/haproxy.log" "exited"
    if [ "$HEALTH" = 1 ]; then
        alive "$(pid_in "$STATE/health.pid")" shardgate-health ||
            fail_with health "$STATE/health.log" "exited"
    fi
    return 0
}

cmd_up() {
    ports_from_env
    [ "$NO_HEALTH" = 1 ] && HEALTH=0
    mkdir -p "$STATE"
    sg_install_deps
    choose_pg_dir
    any_running && die "$STATE already runs a cluster: \`ops/cluster.sh down --state $STATE\` first"
    check_ports
    make_tokens
    if [ -z "${SHARDGATE_BIN:-}" ] || [ -z "${SHARDGATE_HEALTH_BIN:-}" ]; then
        sg_build_release
    fi
    ports_save
    up_postgres
    local n
    for n in "${GATEWAYS[@]}"; do up_gateway "$n"; done
    up_haproxy
    [ "$HEALTH" = 1 ] && up_health
    wait_http "http://127.0.0.1:$PROXY_PORT/readyz" 200 30 "$(pid_in "$STATE/haproxy.pid")" haproxy ||
        fail_with haproxy "$STATE/haproxy.log" "its /readyz did not answer 200 on 127.0.0.1:$PROXY_PORT"
    check_all_alive
    print_urls
}

# --- down --------------------------------------------------------------------------------

# The front door closes first (SIGUSR1: HAProxy finishes what it forwards), then the gateways
# drain (SIGTERM, up to 30 s each, in parallel), then health, then the database.
cmd_down() {
    ports_load
    [ -d "$STATE" ] || return 0
    stop_pid haproxy "$STATE/haproxy.pid" USR1 10
    local n
    for n in "${GATEWAYS[@]}"; do signal_pid "gateway-$n" "$STATE/gw-$n.pid" TERM; done
    for n in "${GATEWAYS[@]}"; do await_pid "gateway-$n" "$STATE/gw-$n.pid" 35; done
    stop_pid health "$STATE/health.pid" TERM 10
    if pg_running; then
        echo "stopping postgres" >&2
        ops/pg.sh stop "$PG_DIR"
    fi
}

# --- status ------------------------------------------------------------------------------

# status_line NAME PID PORT RUNNING(0|1): one line; counts what is not running in DOWN.
status_line() {
    if [ "$4" = 1 ]; then
        printf '%-10s running pid=%s port=%s\n' "$1" "$2" "$3"
    else
        printf '%-10s stopped pid=- port=%s\n' "$1" "$3"
        DOWN=$((DOWN + 1))
    fi
}

status_process() {
    local name=$1 pidfile=$2 port=$3 pid ok=0
    pid=$(pid_in "$pidfile")
    alive "$pid" "$(comm_of "$name")" && ok=1
    status_line "$name" "${pid:--}" "$port" "$ok"
}

cmd_status() {
    ports_load
    DOWN=0
    local pid="" ok=0 n
    if pg_running; then
        ok=1
        pid=$(head -n 1 "$PG_DIR/pgdata/postmaster.pid")
    fi
    status_line postgres "$pid" "$PG_PORT" "$ok"
    for n in "${GATEWAYS[@]}"; do
        status_process "gateway-$n" "$STATE/gw-$n.pid" "$(gw_port "$n")"
    done
    status_process haproxy "$STATE/haproxy.pid" "$PROXY_PORT"
    if [ "$HEALTH" = 1 ]; then
        status_process health "$STATE/health.pid" "$HEALTH_PORT"
    else
        printf '%-10s disabled (up --no-health) port=%s\n' health "$HEALTH_PORT"
    fi
    [ "$DOWN" = 0 ]
}

# --- main --------------------------------------------------------------------------------

CMD=${1:-}
[ $# -gt 0 ] && shift
STATE="$SHARDGATE_ROOT/state/cluster"
NO_HEALTH=0
while [ $# -gt 0 ]; do
    case $1 in
    --state) [ $# -ge 2 ] || usage; STATE=$(realpath -m -- "$2"); shift 2 ;;
    --no-health) [ "$CMD" = up ] || usage; NO_HEALTH=1; shift ;;
    *) usage ;;
    esac
done
cd "$SHARDGATE_ROOT"
case $CMD in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*) usage ;;
esac
