#!/usr/bin/env bash
# Correctness-only run of the benchmark programs (ctest label `bench`): placements equal
# libmemcached's and the reference's, and Python's receipt equals ours byte for byte. No timing.
# usage: check.sh RING_BENCH GATEWAY_BENCH PYTHON
set -euo pipefail
ring_bench=$1 gateway_bench=$2 python=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$ring_bench" --check

# Same receipt bytes from C and from Python, on generated input (escapes, UTF-8, surrogate
# pairs, weights, offline and draining shards, one shard over capacity) ...
"$python" "$here/gen_batch.py" --out-dir "$work" --changes 3000 --shards 30
"$gateway_bench" --conf "$work/dispatch.env" --shards "$work/shards.json" \
    --batch "$work/batch.json" --out "$work/c.json" --rounds 1
"$python" "$here/reference.py" --conf "$work/dispatch.env" --shards "$work/shards.json" \
    --batch "$work/batch.json" --out "$work/py.json"
cmp "$work/c.json" "$work/py.json"

# ... and on the worked example, where both must also equal the golden receipt.
golden=$root/tests/golden/sample-0001.receipt.v2.json
"$gateway_bench" --conf "$root/conf/dispatch.env" --shards "$root/input/shards.json" \
    --batch "$root/input/changes.json" --out "$work/c0.json" --rounds 1
"$python" "$here/reference.py" --conf "$root/conf/dispatch.env" \
    --shards "$root/input/shards.json" --batch "$root/input/changes.json" --out "$work/py0.json"
cmp "$work/c0.json" "$golden"
cmp "$work/py0.json" "$golden"
echo "bench check: placements equal libmemcached's and the reference's; receipts byte-identical"
