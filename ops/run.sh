#!/usr/bin/env bash
# Serves the gateway on 127.0.0.1:8080 with the shipped contract and a state/ journal, after
# installing what is missing and building the two Release binaries (nothing else). The
# membership in force is state/shards.json, a copy of the shipped input/shards.json made when
# absent: a membership change (PUT, `shardgate admin apply`) rewrites the copy, never a tracked
# file, and removing the copy resets it at the next start. Extra arguments go to `shardgate
# serve` (a later --listen wins, e.g. ops/run.sh --listen 127.0.0.1:9090). The README's first
# hour is open on loopback: --no-token, warned at start; --token-file FILE among the extra
# arguments wins over it (docs/api.md §11).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$SHARDGATE_ROOT"

sg_install_deps
sg_build_binaries build/release -DCMAKE_BUILD_TYPE=Release
mkdir -p -m 0750 state # as serve makes it: not group-writable
[ -e state/shards.json ] || cp input/shards.json state/shards.json
exec build/release/gateway/shardgate serve --conf conf/dispatch.env --shards state/shards.json \
    --state-dir state --listen 127.0.0.1:8080 --no-token "$@"
