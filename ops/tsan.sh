#!/usr/bin/env bash
# ThreadSanitizer run of the gateway's concurrent paths: builds shardgate with clang
# -fsanitize=thread (build/tsan) and runs the HTTP tests that drive the worker threads, the
# journal writer and suspend/resume at once (concurrency, idempotency with 409 in flight,
# kill -9 under load, SIGTERM drain, restarts) plus the slow/hostile-client reliability cases
# and 10 s of the reliability load (64 connections, fresh/invalid/replayed batches), and the
# --store postgres replicas (their writer, listener and reader connections; libpq uninstrumented),
# and libshardgate placing from eight threads on one topology,
# with TSAN_OPTIONS=halt_on_error=1. Any report fails the run: each server writes its reports to
# a log file, and a non-empty one is printed and counted even when its test still passed.
# libmicrohttpd itself is not instrumented; tests/reliability/tsan.supp lists what is suppressed
# in it, and why (never a race of our own code). docs/operations.md, Reliability.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$SHARDGATE_ROOT"

BUILD=build/tsan
command -v clang >/dev/null || sg_install_deps
echo "== tsan: build $BUILD (clang -fsanitize=thread)"
CC=clang cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDGATE_SANITIZE=OFF \
    -DSHARDGATE_FUZZ=OFF -DCMAKE_C_COMPILER=clang \
    "-DCMAKE_C_FLAGS=-fsanitize=thread -fno-omit-frame-pointer" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target shardgate shardgate-health libshardgate

LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$LOGS/tsan:suppressions=$SHARDGATE_ROOT/tests/reliability/tsan.supp"

rc=0
ctest --test-dir "$BUILD" --output-on-failure -j 2 \
    -R '^(http_(concurrency|idempotency|kill9|drain|restart|limits)|reliability_slow_clients|pg_store_(replicas|membership|feed))$' ||
    rc=1
# The mixed load (fresh, invalid, replayed batches on 64 connections), shorter than in ctest.
echo "-- tsan: reliability load, 10 s"
LOAD_SECONDS=10 timeout 300 python3 tests/reliability/test_load.py \
    "$BUILD/gateway/shardgate" "$BUILD/health/shardgate-health" "$SHARDGATE_ROOT" || rc=1
# libshardgate read from eight threads at once (docs/tools.md §13), its driver built with clang
# and -fsanitize=thread against the instrumented library.
echo "-- tsan: libshardgate, eight threads on one topology"
CC=clang SHARDGATE_LIBRARY_CFLAGS=-fsanitize=thread timeout 300 python3 \
    tests/library/test_libshardgate.py "$BUILD/gateway/shardgate" "$SHARDGATE_ROOT" \
    threads_share_one_topology || rc=1
if compgen -G "$LOGS/tsan*" >/dev/null; then
    cat "$LOGS"/tsan*
    echo "tsan: ThreadSanitizer reported (above)" >&2
    rc=1
fi
if [ "$rc" -ne 0 ]; then
    echo "tsan: FAILED" >&2
    exit 1
fi
echo "tsan: no reports"
