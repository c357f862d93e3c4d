#!/usr/bin/env bash
# The gateway's CPU per acknowledged change, two commits side by side (docs/performance.md §19):
# each commit built Release from `git archive`, then ROUNDS rounds alternating OLD and NEW, each
# a fresh `shardgate serve` (100 online shards, conf/dispatch.env) loaded by wrk (2 threads, 64
# connections, DURATION seconds) with 1000-change, then 1-change batches. Per commit and batch
# size: the median changes/s, p99 and CPU µs per change (utime + stime of the gateway process
# from /proc/PID/stat over shardgate_changes_total), then NEW/OLD as the ratio of the medians
# and the geometric mean of the per-round ratios. PROFILE=1 adds a `perf record` of NEW under
# 1000-change batches, by function.
#
# usage: bench/cpu_per_change.sh OLD NEW [ROUNDS]      (ROUNDS 3; env DURATION=10, PROFILE=0)
set -euo pipefail
. "$(dirname "$0")/../ops/lib.sh"
cd "$SHARDGATE_ROOT"

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: bench/cpu_per_change.sh OLD NEW [ROUNDS]" >&2
    exit 64
fi
old=$(git rev-parse --short=12 "$1^{commit}")
new=$(git rev-parse --short=12 "$2^{commit}")
rounds=${3:-3}
duration=${DURATION:-10}
work=${TMPDIR:-/tmp}/shardgate-cpu-per-change
mkdir -p "$work"
tick=$(getconf CLK_TCK)

# build REV: the Release gateway of commit REV, built once into $work/REV.
build() { sg_build_commit "$work/$1" "$1" shardgate; }

shards=$work/shards.json
sg_hundred_shards "$shards"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
changes() { curl -fsS "http://127.0.0.1:$1/metrics" | sed -n 's/^shardgate_changes_total //p'; }

# p99 of wrk --latency output, in ms.
p99_ms() {
    awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
        print v * (u == "us" ? 0.001 : u == "s" ? 1000 : 1) }'
}

# serve REV DIR: a fresh gateway of REV on a free port, state in DIR; sets pid and port.
serve() {
    SHARDGATE_NO_TOKEN=1 "$work/$1/build/gateway/shardgate" serve --conf conf/dispatch.env \
        --shards "$shards" --state-dir "$2/state" --listen 127.0.0.1:0 2>"$2/log" &
    pid=$!
    port=$(sg_listen_port "$2/log" "$pid")
    [ -n "$port" ] || {
        cat "$2/log" >&2
        exit 1
    }
}

# measure REV ROUND N: one wrk run of N-change batches; appends a line to $results.
measure() {
    local c0 k0 c1 k1 t0 t1 out
    c0=$(cpu_ticks "$pid")
    k0=$(changes "$port")
    t0=$(date +%s.%N)
    out=$(wrk -t2 -c64 -d"${duration}s" --latency -s bench/http_post.lua \
        "http://127.0.0.1:$port" -- "$3" "r$2-$1-$3")
    t1=$(date +%s.%N)
    c1=$(cpu_ticks "$pid")
    k1=$(changes "$port")
    printf '%s %s %s %s %s %s %s\n' "$1" "$3" "$2" "$((k1 - k0))" "$(python3 -c "print($t1 - $t0)")" \
        "$(python3 -c "print(($c1 - $c0) / $tick)")" "$(p99_ms <<<"$out")" >>"$results"
}

build "$old"
build "$new"
results=$work/results-$old-$new.txt
: >"$results"
for round in $(seq 1 "$rounds"); do
    for rev in "$old" "$new"; do
        run=$(mktemp -d)
        serve "$rev" "$run"
        for n in 1000 1; do
            measure "$rev" "$round" "$n"
        done
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        rm -rf "$run"
    done
done

python3 - "$results" "$old" "$new" <<'EOF'
import math, statistics, sys
path, old, new = sys.argv[1:]
rows = [l.split() for l in open(path)]
runs = {}  # (rev, n) -> [(changes/s, cpu µs per change, p99 ms)] in round order
for rev, n, _round, changes, secs, cpu_s, p99 in rows:
    runs.setdefault((rev, n), []).append(
        (int(changes) / float(secs), float(cpu_s) / int(changes) * 1e6, float(p99)))
print("%-12s %6s %14s %10s %16s" % ("commit", "batch", "changes/s", "p99 ms", "CPU us/change"))
for n in ("1000", "1"):
    for rev in (old, new):
        r = runs[(rev, n)]
        print("%-12s %6s %14.0f %10.1f %16.3f" % (rev, n, statistics.median(x[0] for x in r),
              statistics.median(x[2] for x in r), statistics.median(x[1] for x in r)))
    o, w = runs[(old, n)], runs[(new, n)]
    geo = math.exp(statistics.fmean(math.log(b[1] / a[1]) for a, b in zip(o, w)))
    print("%-12s %6s %14.3f %10.3f %16.3f   (NEW/OLD, medians; CPU geomean of rounds %.3f)" % (
        "new/old", n, statistics.median(x[0] for x in w) / statistics.median(x[0] for x in o),
        statistics.median(x[2] for x in w) / statistics.median(x[2] for x in o),
        statistics.median(x[1] for x in w) / statistics.median(x[1] for x in o), geo))
EOF

if [ "${PROFILE:-0}" = 1 ]; then
    run=$(mktemp -d)
    serve "$new" "$run"
    perf record -F 999 -g -o "$work/perf-$new.data" -p "$pid" -- sleep "$duration" \
        2>/dev/null &
    perf_pid=$!
    wrk -t2 -c64 -d"${duration}s" -s bench/http_post.lua "http://127.0.0.1:$port" -- 1000 \
        "profile-$new" >/dev/null
    wait "$perf_pid" || true
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rm -rf "$run"
    echo "== profile of $new, 1000-change batches: self time by function"
    perf report -i "$work/perf-$new.data" --no-children --sort symbol --stdio -g none \
        2>/dev/null | sed -n 's/ *$//; /^ *[0-9.]*%/p' | sed -n 1,30p
fi
