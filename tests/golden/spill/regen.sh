#!/bin/sh
# Regenerates the spill goldens (docs/contract.md §9) with the gateway itself, after a change
# of the receipt's form (e.g. a new receipt version): `tests/golden/spill/regen.sh BUILD_DIR`.
# Review the diff: the placements, loads and counts must not move.
set -eu
dir=$(dirname "$0")
bin=${1:?usage: regen.sh BUILD_DIR}/gateway/shardgate
"$bin" dispatch --conf "$dir/dispatch.env" --shards "$dir/shards.json" \
    --batch "$dir/../../../input/changes.json" --out "$dir/spill-0001.receipt.json"
rc=0
"$bin" dispatch --conf "$dir/dispatch.env" --shards "$dir/shards-noroom.json" \
    --batch "$dir/../../../input/changes.json" --out "$dir/noroom-0001.receipt.json" || rc=$?
[ "$rc" -eq 2 ] || { echo "regen.sh: the no-room batch must exit 2, got $rc" >&2; exit 1; }
