#!/usr/bin/env bash
# Numbered acceptance checks on the release build: PASS=n FAIL=m and RESULT: OK|BAD.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
sg_install_deps >&2 || exit 1
sg_build_release || exit 1
exec python3 "$SHARDGATE_ROOT/ops/verify.py" "$SHARDGATE_BIN" "$SHARDGATE_HEALTH_BIN"
