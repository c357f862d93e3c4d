#!/usr/bin/env python3
"""Writes the gateway benchmark's input: a contract, a 100-shard membership and one batch.

Deterministic for a given --seed. The batch mixes plain ASCII keys with UTF-8, quotes,
backslashes and control characters (escaped in the JSON), so both the C gateway and the
Python reference exercise their escaping paths; one shard has a small capacity, so the
receipt reports it over capacity and `ok` is computed false, not assumed.

usage: gen_batch.py --out-dir DIR [--changes N] [--shards N] [--seed S]
"""
import argparse
import json
import os
import random

CONTRACT = ("DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=160\nDISPATCH_RING_HASH=sha1\n"
            "DISPATCH_CAPACITY_POLICY=report\n")


def shards_doc(n, rng):
    shards = []
    for i in range(n):
        state = "online"
        if i % 20 == 3:
            state = "draining"
        elif i % 20 == 11:
            state = "offline"
        shard = {"id": "shard-%03d" % i, "state": state, "capacity": 10 ** 12}
        if i % 4 == 1:
            shard["weight"] = rng.randint(1, 3)
        shards.append(shard)
    shards[7]["capacity"] = 1000
    return {"shards": shards}


def make_key(i, rng):
    kind = i % 10
    if kind < 5:
        return "user:%d" % rng.randrange(10 ** 9)
    if kind < 7:
        return "order:%d:%x" % (i, rng.randrange(1 << 32))
    if kind == 7:
        return "ключ-%d-キー-\U0001F600" % i
    if kind == 8:
        return 'path\\to "thing" %d\t%s' % (i, "x" * rng.randint(0, 30))
    return "sku:%d:%s" % (i, "".join(rng.choice("abcdef0123456789") for _ in range(12)))


def batch_text(n, rng):
    lines = []
    for i in range(n):
        change = {"id": "ch-%07d" % i, "key": make_key(i, rng), "size": rng.randrange(10 ** 6)}
        lines.append("  " + json.dumps(change, ensure_ascii=(i % 50 == 9)))
    return '{"batch_id": "bench-%d",\n "changes": [\n%s\n]}\n' % (n, ",\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--changes", type=int, default=100000)
    ap.add_argument("--shards", type=int, default=100)
    ap.add_argument("--seed", type=int, default=6)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "dispatch.env"), "w") as f:
        f.write(CONTRACT)
    with open(os.path.join(a.out_dir, "shards.json"), "w") as f:
        json.dump(shards_doc(a.shards, rng), f, indent=1)
    with open(os.path.join(a.out_dir, "batch.json"), "w", encoding="utf-8") as f:
        f.write(batch_text(a.changes, rng))


if __name__ == "__main__":
    main()
