#!/usr/bin/env bash
# Restart after kill -9 under full 1-change ingest (docs/performance.md §19.3), two commits side
# by side: each commit built Release from `git archive`; each round draws a moment in
# [LOAD/3, LOAD] seconds, and for OLD then NEW a fresh `shardgate serve` (100 online shards)
# takes 1-change batches from wrk (2 threads, 64 connections) until it is killed with SIGKILL at
# that moment; a start on the same state dir is then timed from exec to the first /readyz 200.
# Printed per run: receipts journaled, bytes replayed (the active segment's past the checkpoint
# the start used), and the time to ready; then per commit the median and the worst.
#
# usage: bench/restart_after_kill.sh OLD NEW [ROUNDS]      (ROUNDS 4; env LOAD=9, SEED=1)
set -euo pipefail
. "$(dirname "$0")/../ops/lib.sh"
cd "$SHARDGATE_ROOT"

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: bench/restart_after_kill.sh OLD NEW [ROUNDS]" >&2
    exit 64
fi
old=$(git rev-parse --short=12 "$1^{commit}")
new=$(git rev-parse --short=12 "$2^{commit}")
rounds=${3:-4}
load=${LOAD:-9}
work=${TMPDIR:-/tmp}/shardgate-restart-after-kill
mkdir -p "$work"

build() { sg_build_commit "$work/$1" "$1" shardgate; }

shards=$work/shards.json
sg_hundred_shards "$shards"

# serve REV DIR LOG: the gateway of REV on a free port with its state in DIR; sets pid, port.
serve() {
    SHARDGATE_NO_TOKEN=1 "$work/$1/build/gateway/shardgate" serve --conf conf/dispatch.env \
        --shards "$shards" --state-dir "$2" --listen 127.0.0.1:0 2>"$3" &
    pid=$!
    port=""
    for _ in $(seq 6000); do # every 10 ms for a minute: the start is what is timed
        port=$(sed -n 's/.*"event":"listening","address":"127.0.0.1:\([0-9]*\)".*/\1/p' "$3")
        [ -n "$port" ] || ! kill -0 "$pid" 2>/dev/null && break
        sleep 0.01
    done
    [ -n "$port" ] || {
        cat "$3" >&2
        exit 1
    }
}

ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz")" = 200 ]; }

# run REV ROUND KILL_AT: load, kill -9 at KILL_AT s, restart; appends a line to $results.
run() {
    local dir t0 t1 used bytes receipts
    dir=$(mktemp -d)
    serve "$1" "$dir/state" "$dir/log1"
    timeout $((load + 5)) wrk -t2 -c64 -d"${load}s" -s bench/http_post.lua \
        "http://127.0.0.1:$port" -- 1 "k$2-$1" >/dev/null 2>&1 &
    local wrk_pid=$!
    sleep "$3"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    kill "$wrk_pid" 2>/dev/null || true
    wait "$wrk_pid" 2>/dev/null || true
    t0=$(date +%s.%N)
    serve "$1" "$dir/state" "$dir/log2"
    for _ in $(seq 6000); do
        ready "$port" && break
        sleep 0.01
    done
    t1=$(date +%s.%N)
    ready "$port" || {
        echo "$1: not ready within a minute" >&2
        exit 1
    }
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    used=$(sed -n 's/.*"event":"checkpoint_used".*"offset":\([0-9]*\).*/\1/p' "$dir/log2" | tail -n 1)
    bytes=$(sed -n 's/.*"event":"journal_replayed".*"bytes":\([0-9]*\).*/\1/p' "$dir/log2")
    receipts=$(sed -n 's/.*"event":"journal_replayed".*"receipts":\([0-9]*\).*/\1/p' "$dir/log2")
    used=${used:-0}
    [ "$bytes" -ge "$used" ] || used=0
    printf '%s %s %s %s %s %s\n' "$1" "$2" "$3" "$receipts" "$((bytes - used))" \
        "$(python3 -c "print($t1 - $t0)")" >>"$results"
    rm -rf "$dir"
}

build "$old"
build "$new"
results=$work/results-$old-$new.txt
: >"$results"
seed=${SEED:-1}
for round in $(seq 1 "$rounds"); do
    at=$(python3 -c "import random; r = random.Random($seed * 1000 + $round); \
print('%.2f' % r.uniform($load / 3, $load))")
    for rev in "$old" "$new"; do
        run "$rev" "$round" "$at"
    done
done

python3 - "$results" "$old" "$new" <<'PY'
import statistics, sys
path, old, new = sys.argv[1:]
rows = [l.split() for l in open(path)]
print("%-12s %5s %8s %10s %14s %10s" % ("commit", "round", "kill at", "receipts", "replayed MB",
                                        "ready s"))
for rev, rnd, at, receipts, replayed, secs in rows:
    print("%-12s %5s %8s %10s %14.1f %10.3f" % (rev, rnd, at, receipts, int(replayed) / 1e6,
                                                float(secs)))
for rev in (old, new):
    t = [float(r[5]) for r in rows if r[0] == rev]
    print("%-12s ready after kill -9: median %.3f s, worst %.3f s" % (
        rev, statistics.median(t), max(t)))
PY
