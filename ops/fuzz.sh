#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets in build/fuzz (clang, ASan+UBSan), runs each for SECONDS
# (default 30) on a temporary copy of its seeds, one per core at a time, prints executions per
# target, fails on a crash.
# usage: ops/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$SHARDGATE_ROOT"

seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(contract membership batch health_receipt journal)
case $seconds in '' | *[!0-9]*)
    echo "usage: ops/fuzz.sh [SECONDS] [TARGET...]" >&2
    exit 64
    ;;
esac

# UBSan findings must stop the run (libFuzzer then keeps the input), and leaks are findings.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== fuzz: build (clang, libFuzzer, ASan+UBSan)"
# -O1: libFuzzer's usual level; Debug alone would fuzz unoptimised code several times slower.
cmake -S . -B build/fuzz -DCMAKE_C_COMPILER=clang -DSHARDGATE_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS_DEBUG="-g -O1 -fno-omit-frame-pointer" >/dev/null
cmake --build build/fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

work=$(mktemp -d "${TMPDIR:-/tmp}/shardgate-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
# One target: seeds into a temporary corpus, then libFuzzer for $seconds; its exit code goes to
# $work/$t/rc and its log to $work/$t/log.
fuzz_one() {
    local t=$1 src dict=tests/fuzz/json.dict rc=0
    # Seeds: corpus/$t (inputs in no case folder), the copies of the case folders' inputs the
    # build made (build/fuzz/tests/fuzz/corpus/$t) and regressions/$t. New corpus entries go to
    # the temporary copy, never into the source tree.
    mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
    for src in "tests/fuzz/corpus/$t" "build/fuzz/tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t"; do
        [ -d "$src" ] && find "$src" -maxdepth 1 -type f ! -name '.*' -exec cp {} "$work/$t/corpus/" \;
    done
    [ -n "$(ls -A "$work/$t/corpus")" ] || { echo "fuzz: no seeds for $t" >&2; echo 64 >"$work/$t/rc"; return; }
    [ "$t" = contract ] && dict=tests/fuzz/env.dict
    "build/fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -dict="$dict" -print_final_stats=1 \
        -artifact_prefix="$work/$t/artifacts/" -timeout=10 -rss_limit_mb=2048 \
        "$work/$t/corpus" >"$work/$t/log" 2>&1 || rc=$?
    echo $rc >"$work/$t/rc"
}

# The targets run as many at a time as there are cores: each is one process on one core.
echo "== fuzz: ${targets[*]}, ${seconds}s each, $(nproc) at a time"
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
    fuzz_one "$t" &
done
wait

failed=0
summary=()
for t in "${targets[@]}"; do
    rc=$(cat "$work/$t/rc")
    [ "$rc" = 64 ] && exit 64
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t/log" | tail -1)
    if [ "$rc" -ne 0 ]; then
        failed=1
        summary+=("$t: CRASH (exit $rc) after ${execs:-?} executions")
        tail -60 "$work/$t/log" >&2
        mkdir -p build/fuzz/artifacts/$t
        cp "$work/$t/artifacts/"* build/fuzz/artifacts/$t/ 2>/dev/null || true
        echo "fuzz: $t: crashing input kept in build/fuzz/artifacts/$t/" >&2
    else
        summary+=("$t: ${execs:-?} executions in ${seconds}s, no crash")
    fi
done
echo "== fuzz: summary"
printf '%s\n' "${summary[@]}"
if [ $failed -ne 0 ]; then
    echo "RESULT: BAD"
    exit 1
fi
echo "RESULT: OK"
