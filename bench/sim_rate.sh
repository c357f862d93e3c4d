#!/usr/bin/env bash
# The simulator's rate (docs/operations.md §5.6): a Release build of tests/sim/sim runs SEEDS
# histories of 200 operations on one core; printed: its totals, simulated operations a second,
# crash points a CPU-minute (user + system time of the run), and the CPU-minutes that 10^6
# crash points would take at that rate.
#
# usage: bench/sim_rate.sh [SEEDS]      (SEEDS 40; env FIRST=1, the first seed)
set -euo pipefail
. "$(dirname "$0")/../ops/lib.sh"
cd "$SHARDGATE_ROOT"

seeds=${1:-40}
first=${FIRST:-1}
build=${TMPDIR:-/tmp}/shardgate-sim-rate
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target sim >/dev/null
python3 - "$build/tests/sim/sim" "$first" "$seeds" <<'PY'
import re, resource, subprocess, sys, time
sim, first, seeds = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.monotonic()
out = subprocess.run([sim, "--seed", first, "--seeds", seeds, "--ops", "200"],
                     capture_output=True, text=True, check=True).stdout
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
print(out.strip())
ops = int(re.search(r"(\d+) operations", out).group(1))
crashes = int(re.search(r"(\d+) crash points", out).group(1))
per_min = crashes / (cpu / 60)
print(f"sim rate: {ops / wall:,.0f} operations/s, {per_min:,.0f} crash points per CPU-minute "
      f"({ru.ru_utime:.1f} s user + {ru.ru_stime:.1f} s system, {wall:.1f} s wall); "
      f"10^6 crash points: {1e6 / per_min:,.0f} CPU-minutes")
PY
