#!/usr/bin/env bash
# The mutation gate (docs/tools.md §5): prints one line per defect and NPASS=n NFAIL=m RESULT: OK|BAD.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
exec python3 "$SHARDGATE_ROOT/ops/negative.py" "$@"
