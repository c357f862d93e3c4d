#!/usr/bin/env bash
# Shared helpers for the ops scripts: dependency install and builds.

SHARDGATE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build, the tests and the tools need (docs/tools.md §7).
SHARDGATE_PACKAGES=(build-essential cmake pkg-config libssl-dev libmicrohttpd-dev libjansson-dev
    libmemcached-dev python3 curl wrk clang libclang-rt-14-dev gnuplot-nox docker-compose
    valgrind strace)

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

# The release build the ops scripts run: build/release.
sg_build_release() {
    sg_build "$SHARDGATE_ROOT/build/release" -DCMAKE_BUILD_TYPE=Release >&2
    SHARDGATE_BIN="$SHARDGATE_ROOT/build/release/gateway/shardgate"
    SHARDGATE_HEALTH_BIN="$SHARDGATE_ROOT/build/release/health/shardgate-health"
}
