#!/bin/sh
# The idempotency index bake-off (docs/performance.md §17): for every engine, N ids in
# transactions of TXN, lookups, disk bytes, a warm and a cold reopen (the page cache dropped:
# needs root), kill -9 in the middle of inserts, and a copy of the grown index whose newest file
# lost its tail (truncated) or had it zeroed, as a power loss can leave it.
# Usage: bench/index_bakeoff.sh BAKEOFF_BINARY WORK_DIR N TXN [ENGINE...]
set -eu
bin=$1 work=$2 n=$3 txn=$4
shift 4
engines=${*:-index lmdb sqlite rocksdb}

# The engine's file written last (the one a power loss leaves short) or its largest, not locks
# or logs.
pick_file() {
    find "$1" -type f ! -name 'lock*' ! -name LOCK ! -name '*.log' ! -name LOG ! -name 'LOG.*' \
        -printf "$2 %p\n" | sort -n | tail -1 | cut -d' ' -f2-
}

for e in $engines; do
    d=$work/$e
    rm -rf "$d"
    "$bin" "$e" insert "$d" "$n" "$txn"
    bytes=$(du -sb "$d" | cut -f1)
    echo "$e disk: $bytes bytes, $((bytes / n)) per id"
    "$bin" "$e" reopen "$d" "$n" | sed 's/reopen/reopen warm/'
    sync
    if echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
        "$bin" "$e" reopen "$d" "$n" | sed 's/reopen/reopen cold/'
    fi
    for damage in truncate:%T@ zero:%T@ truncate:%s zero:%s; do
        c=$work/$e.damaged
        rm -rf "$c"
        cp -a "$d" "$c"
        f=$(pick_file "$c" "${damage#*:}")
        damage=${damage%:*}
        size=$(stat -c %s "$f")
        cut=$((size < 65536 ? size / 2 : 65536))
        if [ "$damage" = truncate ]; then
            truncate -s $((size - cut)) "$f"
        else
            dd if=/dev/zero of="$f" bs=1 seek=$((size - cut)) count=$cut conv=notrunc 2>/dev/null
        fi
        echo "$e $damage: the last $cut bytes of $(basename "$f") ($size bytes)"
        "$bin" "$e" check "$c" "$n" 2>&1 | tail -3 || true
        rm -rf "$c"
    done
    rm -rf "$d"
    "$bin" "$e" crash "$d" "$txn" 3000
    rm -rf "$d"
done
