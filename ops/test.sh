#!/usr/bin/env bash
# The test command: installs what is missing, then builds and runs the whole suite twice,
# once with -Werror and once under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$SHARDGATE_ROOT"

sg_install_deps

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== build: -Werror"
sg_build build/werror -DSHARDGATE_WERROR=ON -DSHARDGATE_BENCH=ON
echo "== tests: -Werror build"
ctest --test-dir build/werror --output-on-failure -j 2

echo "== build: ASan+UBSan"
sg_build build/asan -DSHARDGATE_WERROR=ON -DSHARDGATE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
echo "== tests: ASan+UBSan build"
ctest --test-dir build/asan --output-on-failure -j 2 -LE no_sanitize

echo "== reliability: valgrind (plain Debug build) and ThreadSanitizer (docs/operations.md, Reliability)"
bash ops/valgrind.sh
bash ops/tsan.sh

echo "== packaging: image + docker-compose.yml, .deb installed in a container (docs/operations.md, Packaging and containers)"
bash ops/image.sh all

echo "== fuzz: every libFuzzer target for 30 s (docs/operations.md, Fuzzing)"
bash ops/fuzz.sh 30
