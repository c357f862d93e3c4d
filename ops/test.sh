#!/usr/bin/env bash
# The test command (docs/tools.md §4): installs what is missing, then runs every stage and
# prints each stage's seconds, and a table of them at the end.
#
#   ops/test.sh           the full run, CI's: -Werror build and suite, the mutation gate,
#                         ASan+UBSan build and suite, valgrind, ThreadSanitizer, the image and
#                         the .deb in containers, fuzzing
#   ops/test.sh --quick   the edit loop: the -Werror build and the suite less its heavy labels
#                         (the gate, reliability, PostgreSQL, the cluster, packaging, property,
#                         the 1,000 reloads), a few minutes
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$SHARDGATE_ROOT"

quick=0
case "${1-}" in
'') ;;
--quick) quick=1 ;;
*)
    echo "usage: ops/test.sh [--quick]" >&2
    exit 64
    ;;
esac

# Every temp file of the run (state dirs, databases, browser profiles) goes under one dir of
# its own: removed when the run passed, kept for a look when it failed (docs/tools.md §4).
# World-traversable, as the databases' dirs inside it belong to the postgres user.
RUN_TMP=$(mktemp -d "${TMPDIR:-/tmp}/shardgate-run-XXXXXXXX")
chmod 0755 "$RUN_TMP"
export TMPDIR=$RUN_TMP
run_tmp_done() {
    if [ "$1" -eq 0 ]; then
        rm -rf "$RUN_TMP"
    else
        echo "temp files of the failed run kept in: $RUN_TMP"
    fi
}
trap 'run_tmp_done $?' EXIT

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The labels the quick tier leaves out: each names tests that take seconds to minutes apiece.
QUICK_SKIP='gate|reliability|postgres|cluster|package|property|reload'

STAGES=()
# stage NAME COMMAND...: runs one stage, prints its time; a failed stage stops the run.
stage() {
    local name=$1 t0=$SECONDS rc=0
    shift
    echo "== $name"
    "$@" || rc=$?
    STAGES+=("$(printf '%-28s %5d s%s' "$name" $((SECONDS - t0)) "$([ $rc -eq 0 ] || echo ' FAILED')")")
    echo "-- $name: $((SECONDS - t0)) s"
    if [ $rc -ne 0 ]; then
        summary
        exit $rc
    fi
}

summary() {
    echo "== stage times"
    printf '%s\n' "${STAGES[@]}"
    echo "total $SECONDS s"
}

werror_build() { sg_build build/werror -DSHARDGATE_WERROR=ON -DSHARDGATE_BENCH=ON; }
asan_build() {
    sg_build build/asan -DSHARDGATE_WERROR=ON -DSHARDGATE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
}

stage "install dependencies" sg_install_deps
stage "build: -Werror" werror_build
if [ $quick -eq 1 ]; then
    stage "tests: quick tier" ctest --test-dir build/werror --output-on-failure -j 2 \
        -LE "$QUICK_SKIP"
    summary
    exit 0
fi
stage "tests: -Werror build" ctest --test-dir build/werror --output-on-failure -j 2 -LE gate
# The gate rebuilds its own tree per defect: alone, so its time is its own (docs/tools.md §5).
stage "mutation gate" ctest --test-dir build/werror --output-on-failure -V -L gate
stage "build: ASan+UBSan" asan_build
stage "tests: ASan+UBSan build" ctest --test-dir build/asan --output-on-failure -j 2 \
    -LE no_sanitize
stage "valgrind" bash ops/valgrind.sh
stage "ThreadSanitizer" bash ops/tsan.sh
stage "image and .deb" bash ops/image.sh all
stage "fuzz (30 s a target)" bash ops/fuzz.sh 30
summary
