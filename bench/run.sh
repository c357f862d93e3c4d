#!/usr/bin/env bash
# The benchmark: builds with -O2, runs every item, prints the table of figures
# against targets and writes bench/results/*.json and *.png. Fails if any placement or receipt
# differs from its reference (a slow figure is reported, not a failure).
# usage: bench/run.sh [--build-dir DIR] [--rounds N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$root/build/bench
rounds=5
while [ $# -gt 0 ]; do
    case $1 in
    --build-dir) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: bench/run.sh [--build-dir DIR] [--rounds N]" >&2; exit 64 ;;
    esac
done
results=$here/results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$results"
(cd "$results" && rm -f ring.json memory_ring.json memory_serve.json flat_memory.json feed_memory.json gateway.json reference.json \
    summary.json table.md receipts.json ./*.dat lookup.png keys_per_shard.png keys_moved.png)
start=$SECONDS

echo "== build ($build, -O2)"
cmake -S "$root" -B "$build" -DSHARDGATE_BENCH=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$build" -j2 --target ring_bench gateway_bench shardgate >/dev/null

echo "== items 1-4: ring lookups, libmemcached, build, distribution ($rounds rounds each)"
"$build/bench/ring_bench" --rounds "$rounds" --json "$results/ring.json"

echo "== item 7: memory"
"$build/bench/ring_bench" --memory 10000 --json "$results/memory_ring.json"
if "$build/gateway/shardgate" serve --help >/dev/null 2>&1; then
    python3 "$here/serve_memory.py" "$build/gateway/shardgate" "$results/memory_serve.json"
fi
echo "== flat memory: RssAnon over 40,000 requests (tests/reliability/test_flat_memory.py)"
python3 "$root/tests/reliability/test_flat_memory.py" "$build/gateway/shardgate" "" "$root" \
    --rounds 10000 --json "$results/flat_memory.json"
echo "== feed memory: 30 and 200 stalled readers of 27 MB receipts (bench/feed_memory.py)"
python3 "$here/feed_memory.py" "$build/gateway/shardgate" "$root" --json "$results/feed_memory.json"
echo "== feed read: one reader of 27 MB receipts and of a shard's assignments (bench/feed_read.py)"
python3 "$here/feed_read.py" "$build/gateway/shardgate" "$root" --json "$results/feed_read.json"

echo "== the status page at 10,000 shards in headless chromium (bench/ui_render.py)"
/usr/bin/python3 "$here/ui_render.py" "$build/gateway/shardgate" "$root" --json "$results/ui_render.json"

echo "== item 5: gateway in-process against the Python reference (100,000 changes)"
python3 "$here/gen_batch.py" --out-dir "$work" --changes 100000 --shards 100
"$build/bench/gateway_bench" --conf "$work/dispatch.env" --shards "$work/shards.json" \
    --batch "$work/batch.json" --out "$work/c.json" --rounds "$rounds" \
    --json "$results/gateway.json"
python3 "$here/reference.py" --conf "$work/dispatch.env" --shards "$work/shards.json" \
    --batch "$work/batch.json" --out "$work/py.json" --rounds 3 --json "$results/reference.json"
cmp "$work/c.json" "$work/py.json"
bytes=$(wc -c <"$work/c.json")
echo "receipts byte-identical ($bytes bytes)"
echo "{\"equal\": true, \"bytes\": $bytes}" >"$results/receipts.json"

if [ -x "$here/http_bench.sh" ]; then
    echo "== item 6: HTTP (bench/http_bench.sh)"
    "$here/http_bench.sh" || echo "http_bench.sh failed (exit $?)"
fi

echo "== report ($((SECONDS - start)) s so far)"
python3 "$here/report.py" "$results"
echo "bench/run.sh: done in $((SECONDS - start)) s; results in $results"
