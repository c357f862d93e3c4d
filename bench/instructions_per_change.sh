#!/usr/bin/env bash
# Instructions per change of the gateway's own job per batch (parse, place, receipt: the
# in-process bench/gateway_bench.c), two commits side by side (docs/performance.md §19).
# callgrind counts instructions, not time: the same binary and input give the same count
# whatever else the machine is doing, so a step of a few percent shows where wall-clock CPU
# figures on a shared machine scatter by ten. Each commit is built Release from `git archive`
# (once, into $TMPDIR/shardgate-instructions/REV); each input is run with 1 and with 5 rounds,
# and the difference over 4 rounds of 1000 changes is the count per change (start-up and the
# ring's build cancel out). Inputs, 1000 changes on bench/gen_batch.py's 100 shards:
#   compact  the shape bench/http_post.lua sends: compact, plain ASCII ids and keys
#   mixed    bench/gen_batch.py's batch: whitespace, escapes, UTF-8 in keys
# valgrind does not run the CPU's SHA instructions, so OpenSSL's portable SHA-1 and SHA-256 are
# counted: hashing weighs more here than on the hardware.
#
# usage: bench/instructions_per_change.sh OLD NEW
set -euo pipefail
. "$(dirname "$0")/../ops/lib.sh"
cd "$SHARDGATE_ROOT"

if [ $# -ne 2 ]; then
    echo "usage: bench/instructions_per_change.sh OLD NEW" >&2
    exit 64
fi
old=$(git rev-parse --short=12 "$1^{commit}")
new=$(git rev-parse --short=12 "$2^{commit}")
work=${TMPDIR:-/tmp}/shardgate-instructions
mkdir -p "$work"

# build REV: REV's Release gateway_bench, built once into $work/REV.
build() { sg_build_commit "$work/$1" "$1" gateway_bench -DSHARDGATE_BENCH=ON; }

inputs() {
    python3 bench/gen_batch.py --out-dir "$work/mixed" --changes 1000 >/dev/null
    mkdir -p "$work/compact"
    cp "$work/mixed/dispatch.env" "$work/mixed/shards.json" "$work/compact/"
    python3 -c '
import sys
changes = ",".join("{\"id\":\"c%d\",\"key\":\"key:%d\",\"size\":%d}" % (i, i * 7919, 1 + i % 9)
                   for i in range(1, 1001))
open(sys.argv[1], "w").write("{\"batch_id\":\"b-1\",\"changes\":[" + changes + "]}")
' "$work/compact/batch.json"
}

# instructions REV INPUT ROUNDS: callgrind's total for one run.
instructions() {
    local in=$work/$2
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/$1/build/bench/gateway_bench" \
        --conf "$in/dispatch.env" --shards "$in/shards.json" --batch "$in/batch.json" \
        --out "$work/$1/receipt-$2.json" --rounds "$3" 2>&1 | sed -n 's/.*Collected : //p'
}

per_change() {
    local one five
    one=$(instructions "$1" "$2" 1)
    five=$(instructions "$1" "$2" 5)
    echo $(((five - one) / 4000))
}

build "$old"
build "$new"
inputs
printf '%-8s %14s %14s %9s\n' input "$old" "$new" new/old
for input in compact mixed; do
    a=$(per_change "$old" "$input")
    b=$(per_change "$new" "$input")
    cmp -s "$work/$old/receipt-$input.json" "$work/$new/receipt-$input.json" ||
        echo "note: the two commits' receipts of $input differ" >&2
    printf '%-8s %14s %14s %9s\n' "$input" "$a" "$b" "$(python3 -c "print('%.3f' % ($b / $a))")"
done
