#!/usr/bin/env bash
# Shared helpers for the ops scripts: dependency install and builds.

SHARDGATE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build, the tests and the tools need (docs/tools.md §7).
SHARDGATE_PACKAGES=(build-essential cmake pkg-config libssl-dev libmicrohttpd-dev libjansson-dev libsystemd-dev
    libmemcached-dev python3 curl wrk clang libclang-rt-14-dev gnuplot-nox docker-compose
    valgrind strace)
# shardgate-health reads zstd-compressed archived journal segments (docs/tools.md §7);
# the zstd CLI lets the tests and probe.py write/read them.
SHARDGATE_PACKAGES+=(libzstd-dev zstd)
# Every journal line carries a CRC-32, zlib's, which the gateway computes with ISA-L
# (docs/decisions.md §10).
SHARDGATE_PACKAGES+=(zlib1g-dev libisal-dev)

# The packaging checks' tools (docs/operations.md, Packaging and containers): containers
# (podman, a local Debian 12 base image made by mmdebstrap), man page lint, metrics lint,
# unit verification and the OpenAPI check (python3-jsonschema, python3-yaml).
SHARDGATE_PACKAGES+=(podman podman-compose catatonit mmdebstrap mandoc prometheus systemd dpkg-dev
    fakeroot python3-jsonschema python3-yaml)
# --store postgres (PostgreSQL 15 and libpq: the store every replica shares) and the
# cluster of ops/cluster.sh (HAProxy 2.6: routing in front of the replicas).
SHARDGATE_PACKAGES+=(postgresql libpq-dev haproxy)
# The model-based operation test's sequence generator and shrinker (docs/decisions.md §31).
SHARDGATE_PACKAGES+=(python3-hypothesis)
# The idempotency index's engine, RocksDB, and the two it was measured against in the
# bake-off, LMDB and SQLite (docs/decisions.md §34).
SHARDGATE_PACKAGES+=(librocksdb-dev liblmdb-dev libsqlite3-dev)
# `shardgate admin`'s HTTP client (docs/decisions.md §36).
SHARDGATE_PACKAGES+=(libcurl4-openssl-dev)
# The status pages' tests: a real headless browser, driven over the DevTools protocol
# (docs/decisions.md §37).
SHARDGATE_PACKAGES+=(chromium python3-websocket)
# The habits the quick tier checks (docs/decisions.md §49, §53): C formatting, shell linting and
# a static analyser.
SHARDGATE_PACKAGES+=(clang-format shellcheck cppcheck)
# The Python package installed as the README says, into a venv of Debian's python3 (its
# ensurepip; docs/tools.md §14).
SHARDGATE_PACKAGES+=(python3-venv)
# The README's install of libshardgate, run as written (`sudo cmake --install`) by
# package/readme: sudo itself (docs/tools.md §7).
SHARDGATE_PACKAGES+=(sudo)

# Installs the packages that are missing; does nothing when all are present.
sg_install_deps() {
    local missing=() p
    for p in "${SHARDGATE_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "ops: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
}

# sg_build DIR [cmake args...]: configures and builds into DIR.
sg_build() {
    local dir=$1
    shift
    cmake -S "$SHARDGATE_ROOT" -B "$dir" "$@" >/dev/null
    cmake --build "$dir" -j "$(nproc)"
}

# sg_build_binaries DIR [cmake args...]: configures DIR and builds only the two binaries the
# ops scripts run (not the tests, fuzzers and benches): a first start in about a minute.
sg_build_binaries() {
    local dir=$1
    shift
    cmake -S "$SHARDGATE_ROOT" -B "$dir" "$@" >/dev/null
    cmake --build "$dir" -j "$(nproc)" --target shardgate shardgate-health
}

# sg_build_commit DIR REV TARGET [cmake args...]: commit REV's Release TARGET, from `git archive`
# into DIR/src and built in DIR/build, once (the benchmarks that put two commits side by side).
sg_build_commit() {
    local dir=$1 rev=$2 target=$3
    shift 3
    [ ! -e "$dir/build/.built-$target" ] || return 0
    rm -rf "$dir"
    mkdir -p "$dir/src"
    git -C "$SHARDGATE_ROOT" archive "$rev" | tar -x -C "$dir/src"
    cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DSHARDGATE_TESTS=OFF "$@" \
        >"$dir/configure.log"
    cmake --build "$dir/build" -j "$(nproc)" --target "$target" >"$dir/build.log"
    touch "$dir/build/.built-$target"
}

# The release build the ops scripts run: build/release.
sg_build_release() {
    sg_build_binaries "$SHARDGATE_ROOT/build/release" -DCMAKE_BUILD_TYPE=Release >&2
    # shellcheck disable=SC2034 # read by the scripts that source this file
    SHARDGATE_BIN="$SHARDGATE_ROOT/build/release/gateway/shardgate"
    # shellcheck disable=SC2034 # read by the scripts that source this file
    SHARDGATE_HEALTH_BIN="$SHARDGATE_ROOT/build/release/health/shardgate-health"
}

# Podman as this sandbox needs it: its default ulimits cannot be applied here, so they are
# cleared in /etc/containers/containers.conf. Idempotent: an existing setting is kept.
sg_podman_setup() {
    local conf=/etc/containers/containers.conf sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if [ -f "$conf" ] && grep -q '^[[:space:]]*default_ulimits' "$conf"; then
        return 0
    fi
    $sudo mkdir -p /etc/containers
    if [ -f "$conf" ] && grep -q '^\[containers\]' "$conf"; then
        $sudo sed -i '/^\[containers\]/a default_ulimits = []' "$conf"
    else
        printf '[containers]\ndefault_ulimits = []\n' | $sudo tee -a "$conf" >/dev/null
    fi
}

# The container tool: docker when its daemon answers, else podman (set up as above).
sg_container_tool() {
    if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
        echo docker
    else
        sg_podman_setup
        echo podman
    fi
}

# sg_base_image TOOL: makes the local debian:12 base image from the Debian archive when the
# tool has none (no image registry is needed): mmdebstrap minbase bookworm, then import.
sg_base_image() {
    local tool=$1 tar
    "$tool" image inspect debian:12 >/dev/null 2>&1 && return 0
    echo "ops: making the debian:12 base image with mmdebstrap" >&2
    tar=$(mktemp --suffix=.tar)
    mmdebstrap --quiet --variant=minbase bookworm "$tar" &&
        "$tool" import --quiet "$tar" debian:12 >/dev/null
    local rc=$?
    rm -f "$tar"
    return $rc
}

# sg_hundred_shards FILE: 100 online shards, shard-000 to shard-099, with room for any batch
# (capacity is not what the load benches measure).
sg_hundred_shards() {
    python3 -c 'import json; print(json.dumps({"shards": [{"id": "shard-%03d" % i,
        "state": "online", "capacity": 10**12} for i in range(100)]}))' >"$1"
}

# sg_listen_port LOG PID [TENTHS]: waits (up to TENTHS tenths of a second, 100 by default, while
# PID lives) for the "listening" event a `shardgate serve` writes to LOG; prints its port, or
# nothing when it never came.
sg_listen_port() {
    local log=$1 pid=$2 tries=${3:-100} port=""
    for _ in $(seq "$tries"); do
        port=$(sed -n 's/.*"event":"listening","address":"127.0.0.1:\([0-9]*\)".*/\1/p' "$log" |
            head -n 1)
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "$port"
}

# sg_bench_serve BIN STATE_DIR LOG [ARGS...]: `BIN serve ARGS` of the worked example on
# 127.0.0.1, in the background; sets SG_SERVE_PID and SG_SERVE_PORT, or exits 1 with the log when
# it does not listen.
sg_bench_serve() {
    # Old builds ignore SHARDGATE_NO_TOKEN, new ones need it or --no-token (docs/api.md §11).
    SHARDGATE_NO_TOKEN=1 "$1" serve --conf conf/dispatch.env --shards input/shards.json --state-dir "$2" \
        --listen 127.0.0.1:0 "${@:4}" 2>"$3" &
    SG_SERVE_PID=$!
    SG_SERVE_PORT=$(sg_listen_port "$3" "$SG_SERVE_PID")
    [ -n "$SG_SERVE_PORT" ] || { cat "$3" >&2; exit 1; }
}

# sg_haproxy_cfg OUT PORT GATEWAY_PORT...: renders ops/cluster/haproxy.cfg.in into OUT (HAProxy
# on 127.0.0.1:PORT in front of gateway-1.. at the 1 to 3 ports given; the template's servers
# past those are left out) and checks it with `haproxy -c`. ops/cluster.sh and
# bench/pg_scale.sh use it.
sg_haproxy_cfg() {
    local out=$1 port=$2 i
    shift 2
    if [ $# -lt 1 ] || [ $# -gt 3 ]; then
        echo "sg_haproxy_cfg: 1 to 3 gateway ports, not $#" >&2
        return 64
    fi
    local args=(-e "s/@PORT@/$port/g")
    for i in 1 2 3; do
        if [ "$i" -le $# ]; then
            args+=(-e "s/@GATEWAY_${i}_PORT@/${!i}/g")
        else
            args+=(-e "/^[[:space:]]*server gateway-$i /d")
        fi
    done
    sed "${args[@]}" "$SHARDGATE_ROOT/ops/cluster/haproxy.cfg.in" >"$out" &&
        haproxy -c -q -f "$out"
}
