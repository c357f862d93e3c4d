#!/usr/bin/env bash
# HTTP throughput: a Release `shardgate serve` on 127.0.0.1 with a temp journal, driven by wrk
# (bench/http_post.lua) with 1000-change batches, then 1-change batches, each with unique ids.
# env: DURATION (15s), CONNS (64), WRK_THREADS (1), SERVER_THREADS (2), BUILD (build/release),
#      OUT (bench/results/http_bench.json), SERVER_ARGS (more `serve` options, e.g.
#      "--scrub-rate 0").
set -euo pipefail
. "$(dirname "$0")/../ops/lib.sh"
cd "$SHARDGATE_ROOT"

BUILD=${BUILD:-build/release}
DURATION=${DURATION:-15s}
CONNS=${CONNS:-64}
WRK_THREADS=${WRK_THREADS:-1}
SERVER_THREADS=${SERVER_THREADS:-2}
OUT=${OUT:-bench/results/http_bench.json}

command -v wrk >/dev/null || sg_install_deps
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j 2 --target shardgate >/dev/null

tmp=$(mktemp -d)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck disable=SC2086 # SERVER_ARGS is a list of options
sg_bench_serve "$BUILD/gateway/shardgate" "$tmp/state" "$tmp/server.log" --threads "$SERVER_THREADS" \
    ${SERVER_ARGS:-}
server=$SG_SERVE_PID
port=$SG_SERVE_PORT

results=()
for changes in 1000 1; do
    echo "== wrk: $CONNS connections, $DURATION, $changes change(s) per batch" >&2
    line=$(wrk -t"$WRK_THREADS" -c"$CONNS" -d"$DURATION" --latency -s bench/http_post.lua \
        "http://127.0.0.1:$port" -- "$changes" "run$$-$changes" | tail -n 1)
    echo "$line"
    results+=("$line")
done
journal=$(du -cb "$tmp"/state/journal*.jsonl | tail -n 1 | cut -f1)
commits=$(curl -s "http://127.0.0.1:$port/metrics" |
    sed -n 's/^shardgate_journal_commits_total //p')
mkdir -p "$(dirname "$OUT")"
printf '{"bench":"http_post","connections":%s,"duration":"%s","server_threads":%s,"cpus":%s,' \
    "$CONNS" "$DURATION" "$SERVER_THREADS" "$(nproc)" >"$OUT"
printf '"journal_bytes":%s,"group_commits":%s,"runs":[%s,%s]}\n' "$journal" "${commits:-0}" \
    "${results[0]}" "${results[1]}" >>"$OUT"
echo "wrote $OUT" >&2
