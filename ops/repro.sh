#!/usr/bin/env bash
# Dispatches the worked example and has the independent probe recompute it; exits with the
# probe's code (0 RESULT: OK, 1 RESULT: BAD, 3 unusable contract).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$SHARDGATE_ROOT" || exit 1
sg_install_deps >&2 || exit 1
sg_build_release || exit 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$SHARDGATE_BIN" dispatch --conf conf/dispatch.env --shards input/shards.json \
    --batch input/changes.json --out "$out/receipt.json"
echo "dispatch exit $?"
python3 client/probe.py --conf conf/dispatch.env --shards input/shards.json \
    --receipt "$out/receipt.json" --batch input/changes.json
rc=$?
echo "probe rc=$rc"
exit $rc
