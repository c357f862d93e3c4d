#!/usr/bin/env python3
"""Writes a large, valid journal for measuring shardgate-health (docs/performance.md).

usage: gen_journal.py OUTDIR [--placements N] [--per-receipt K] [--epochs E]
Writes OUTDIR/dispatch.env, OUTDIR/shards.json and OUTDIR/journal.jsonl: E epochs (the
membership changes at each, the last is the one in shards.json), receipts of K changes each,
N placements in all, every fact computed by the test-side ketama (tests/health/ketama.py).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ketama  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--placements", type=int, default=1000000)
    ap.add_argument("--per-receipt", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--shards", type=int, default=16)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    c = ketama.contract()
    seq = 0
    left = a.placements
    per_epoch = -(-a.placements // a.epochs)
    with open(os.path.join(a.outdir, "journal.jsonl"), "w", encoding="utf-8") as out:
        for e in range(a.epochs):
            shards = [{"id": "shard-%02d" % i,
                       "state": "online" if (i + e) % 5 else "draining",
                       "capacity": 10**9, "weight": 1 + i % 3} for i in range(a.shards)]
            ring = ketama.Ring("sha1", 160, shards)
            out.write(ketama.dumps(ketama.epoch_record(ring, c)) + "\n")
            todo = min(per_epoch, left)
            while todo > 0:
                k = min(a.per_receipt, todo)
                seq += 1
                chs = [{"id": "c%d" % i, "key": "key:%d:%d" % (seq, i), "size": (seq + i) % 9}
                       for i in range(k)]
                rcpt = ketama.receipt(ring, "batch-%07d" % seq, chs)
                out.write(ketama.dumps(ketama.receipt_record(seq, rcpt)) + "\n")
                todo -= k
                left -= k
    with open(os.path.join(a.outdir, "shards.json"), "w") as f:
        json.dump({"shards": shards}, f)
    with open(os.path.join(a.outdir, "dispatch.env"), "w") as f:
        f.write(ketama.contract_text(c))
    print("%s: %d receipts, %d placements, %d epochs" % (a.outdir, seq, a.placements, a.epochs))


if __name__ == "__main__":
    main()
