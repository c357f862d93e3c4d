#!/bin/sh
# bench/idx_bench.c built against the idempotency table of an earlier commit (default 3d07b80,
# the last before journal segments: one chained hash map, doubled under its mutex), from `git show`,
# so the growth stall of the old table is measured by the same harness (docs/performance.md §10).
# Usage: bench/idx_baseline.sh [N] [OUT_DIR]; IDX_BASELINE_REV picks another commit.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${IDX_BASELINE_REV:-3d07b80}
n=${1:-10000000}
out=${2:-$root/build/idx-baseline}
mkdir -p "$out/src"
for f in store/idempotency.c store/idempotency.h core/fnv.c core/fnv.h core/batch.h; do
    git -C "$root" show "$rev:gateway/$f" > "$out/src/$(basename "$f")"
done
cc -std=c11 -O2 -DNDEBUG -D_POSIX_C_SOURCE=200809L -DIDX_BENCH_BASELINE -I"$out/src" \
    -I"$root/gateway/core" "$root/bench/idx_bench.c" "$out/src/idempotency.c" "$out/src/fnv.c" \
    -o "$out/idx_bench_baseline" -lpthread
exec "$out/idx_bench_baseline" "$n" 100000 "$out/state"
