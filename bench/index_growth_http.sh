#!/usr/bin/env bash
# POST latency while the idempotency index grows (docs/performance.md §10.2): a Release
# `shardgate serve` on 127.0.0.1 with a fresh state dir, driven by wrk (bench/http_post.lua) with
# 1-change batches, each a new batch id, for GROWTH, then for STEADY more on the grown index; the
# p99.9 of each phase and the ids the index holds after each.
# usage: bench/index_growth_http.sh STATE_PARENT
# env: GROWTH (540s), STEADY (60s), CONNS (64), BUILD (build/bench-rel), OUT
#      (bench/results/index_growth_http.json).
set -euo pipefail
. "$(dirname "$0")/../ops/lib.sh"
cd "$SHARDGATE_ROOT"

parent=${1:?usage: bench/index_growth_http.sh STATE_PARENT (a file system with ~15 GB free)}
BUILD=${BUILD:-build/bench-rel}
GROWTH=${GROWTH:-540s}
STEADY=${STEADY:-60s}
CONNS=${CONNS:-64}
OUT=${OUT:-bench/results/index_growth_http.json}

tmp=$(mktemp -d -p "$parent")
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

sg_bench_serve "$BUILD/gateway/shardgate" "$tmp/state" "$tmp/server.log" --threads 2
server=$SG_SERVE_PID
port=$SG_SERVE_PORT

batches() {
    curl -s "http://127.0.0.1:$port/metrics" | sed -n 's/^shardgate_batches_total{result="accepted"} //p'
}

phase() { # NAME DURATION
    local line
    line=$(wrk -t1 -c"$CONNS" -d"$2" --timeout 10s --latency -s bench/http_post.lua \
        "http://127.0.0.1:$port" -- 1 "$1$$" | tail -n 1)
    printf '{"phase":"%s","ids_after":%s,"wrk":%s}' "$1" "$(batches)" "$line"
}

growth=$(phase growth "$GROWTH")
echo "$growth" >&2
steady=$(phase steady "$STEADY")
echo "$steady" >&2
mkdir -p "$(dirname "$OUT")"
printf '{"bench":"index_growth_http","connections":%s,"cpus":%s,"phases":[%s,%s]}\n' \
    "$CONNS" "$(nproc)" "$growth" "$steady" >"$OUT"
echo "wrote $OUT" >&2
