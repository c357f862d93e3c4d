#!/usr/bin/env python3
"""client/migrate.py: moves keys between per-shard stores as shardgate's membership changes
(docs/tools.md §15), following GET /v1/moves (docs/api.md §20) with a cursor.

Each shard's data is one SQLite file, STORES/<shard id>.sqlite, table kv(key TEXT PRIMARY KEY,
value BLOB). For each change after the cursor, every key of a shard that gives ranges is placed
on the change's space (its 32-bit hash, or its slot under a Maglev or jump table) and, when it
lies in a range the shard gives, copied to the range's new shard (committed there) and then
deleted from the old one (committed). The cursor, STORES/migrate.cursor, is written (to a
temporary file, synced, renamed) only after a change is done, so a migrator killed at any point
does that change again from the start: copies are INSERT OR REPLACE and deletes of keys already
gone do nothing, so doing it again is safe. `--verify` reads every store and reports each key
that is not on the shard the ring in force places it on, and each key found on two shards.

usage: migrate.py --url URL [--token-file F] --stores DIR [--verify]
exit: 0 done (verify: every key on its owner); 1 verify found keys misplaced; 2 the gateway
      could not be read or a change has no plan (its reason printed: compare every key);
      64 usage.
"""
import argparse
import bisect
import json
import os
import sqlite3
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shardgate.ring import jump, key_u64  # noqa: E402


class Unavailable(Exception):
    """The gateway answered nothing usable; the message says what."""


def get(args, path):
    """The JSON of GET path on the gateway."""
    req = urllib.request.Request(args.url.rstrip("/") + path)
    if args.token:
        req.add_header("Authorization", "Bearer " + args.token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)
    except (OSError, ValueError) as e:
        raise Unavailable("%s: %s" % (path, e))


def store(args, shard):
    """The SQLite store of one shard, its table made when new."""
    db = sqlite3.connect(os.path.join(args.stores, shard + ".sqlite"))
    db.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB)")
    return db


def position(ring, key):
    """Where a key is in the space a change's ranges cut: its slot under a table, else its
    32-bit hash (docs/contract.md §3, §10, §11)."""
    bits = key_u64(ring["hash"], key.encode("utf-8"))
    if ring["algorithm"] == "jump":
        return jump(bits, ring["table"])
    if ring["algorithm"] == "maglev":
        return bits % ring["table"]
    return bits & 0xFFFFFFFF


def read_cursor(args):
    try:
        with open(os.path.join(args.stores, "migrate.cursor")) as f:
            return int(f.read())
    except FileNotFoundError:
        return 0


def write_cursor(args, cursor):
    """The cursor, replaced whole: a crash leaves the old one or the new one."""
    path = os.path.join(args.stores, "migrate.cursor")
    with open(path + ".tmp", "w") as f:
        f.write("%d\n" % cursor)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
    fd = os.open(args.stores, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def move_change(args, ring, item, progress):
    """Every key in a range the change moved: copied to its new shard, then deleted."""
    by_from = {}
    for g in item["ranges"]:
        by_from.setdefault(g["from"], []).append(g)
    for shard, ranges in sorted(by_from.items()):
        los = [g["lo"] for g in ranges]
        source = store(args, shard)
        moving = {}
        for key, value in source.execute("SELECT key, value FROM kv"):
            at = position(ring, key)
            i = bisect.bisect_right(los, at) - 1
            if i >= 0 and at < ranges[i]["hi"]:
                moving.setdefault(ranges[i]["to"], []).append((key, value))
        for to, rows in sorted(moving.items()):
            target = store(args, to)
            with target:
                target.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?)", rows)
            target.close()
            with source:
                source.executemany("DELETE FROM kv WHERE key = ?", [(k,) for k, _ in rows])
            progress["keys"] += len(rows)
        source.close()
        progress["ranges"] += len(ranges)
        elapsed = time.monotonic() - progress["t0"]
        left = progress["total"] - progress["ranges"]
        eta = elapsed / progress["ranges"] * left if progress["ranges"] else 0
        print(json.dumps({"event": "progress", "epoch_seq": item["epoch_seq"],
                          "ranges_done": progress["ranges"], "ranges": progress["total"],
                          "keys_copied": progress["keys"], "eta_s": round(eta, 1)}), flush=True)


def migrate(args):
    ring = get(args, "/v1/ring")
    cursor = read_cursor(args)
    while True:
        page = get(args, "/v1/moves?after=%d" % cursor)
        for item in page["items"]:
            if item.get("plan", 0) is None:
                raise Unavailable("epoch_seq %d has no plan: %s (compare every key)"
                                  % (item["epoch_seq"], item["reason"]))
            progress = {"ranges": 0, "keys": 0, "total": len(item["ranges"]),
                        "t0": time.monotonic()}
            move_change(args, ring, item, progress)
            write_cursor(args, item["epoch_seq"])
        if page["last_epoch_seq"] == cursor:
            return 0
        cursor = page["last_epoch_seq"]
        write_cursor(args, cursor)


def owner_function(args):
    """The shard the ring in force places a key on, from GET /v1/ring?points=1."""
    ring = get(args, "/v1/ring?points=1")
    if "slots" in ring:
        slots = ring["slots"]
        return lambda key: slots[position(ring, key)]
    values = [p["value"] for p in ring["points"]]
    shards = [p["shard"] for p in ring["points"]]

    def owner(key):
        i = bisect.bisect_left(values, position(ring, key))
        return shards[i % len(shards)]
    return owner


def verify(args):
    owner = owner_function(args)
    seen, wrong, twice = {}, 0, 0
    for name in sorted(os.listdir(args.stores)):
        if not name.endswith(".sqlite"):
            continue
        shard = name[:-len(".sqlite")]
        db = store(args, shard)
        for (key,) in db.execute("SELECT key FROM kv"):
            if key in seen:
                twice += 1
                print("twice: %r on %s and %s" % (key, seen[key], shard))
            seen[key] = shard
            if owner(key) != shard:
                wrong += 1
                print("misplaced: %r on %s, owner %s" % (key, shard, owner(key)))
        db.close()
    print(json.dumps({"event": "verify", "keys": len(seen), "misplaced": wrong, "twice": twice}))
    return 1 if wrong or twice else 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="migrate.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--token-file")
    p.add_argument("--stores", required=True)
    p.add_argument("--verify", action="store_true")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 64
    args.token = None
    if args.token_file:
        with open(args.token_file) as f:
            args.token = f.read().strip()
    os.makedirs(args.stores, exist_ok=True)
    try:
        return verify(args) if args.verify else migrate(args)
    except Unavailable as e:
        print("migrate.py: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
