#!/usr/bin/env python3
"""The Python reference of the gateway's in-process job, for the benchmark (item 5).

The same job as gw_batch_parse + gw_dispatch_run + gw_receipt_write, in the standard library
only (json, hashlib, bisect): strict batch validation (duplicate keys, exact fields, byte
lengths, unique ids), the SHA-256 fingerprint of the canonical batch, placement on the ketama
ring of docs/contract.md §3 and the receipt of docs/contract.md §5 as compact JSON. The
receipt bytes must equal the C gateway's; run.sh and check.sh compare them with cmp.

The ring is built once, outside the timed job, as the gateway builds it once at start.

usage: reference.py --conf F --shards F --batch F --out F [--rounds N] [--json F]
"""
import argparse
import bisect
import hashlib
import json
import re
import statistics
import sys
import time

NAME_RE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
SAFE_MAX = 2 ** 53 - 1


class Invalid(Exception):
    """A batch the gateway would reject; the message names the JSON path."""


def load_contract(text):
    values = dict(line.split("=", 1) for line in text.splitlines()
                  if line and not line.startswith("#"))
    return {"hash": values["DISPATCH_RING_HASH"], "vnodes": int(values["DISPATCH_VNODES"]),
            "policy": values["DISPATCH_CAPACITY_POLICY"]}


def load_shards(text):
    shards = json.loads(text)["shards"]
    for s in shards:
        s.setdefault("weight", 1)
    return sorted(shards, key=lambda s: s["id"].encode())


def le32(digest, j=0):
    return int.from_bytes(digest[4 * j:4 * j + 4], "little")


def build_ring(contract, shards):
    """Sorted point values and, parallel to them, (shard index in `online`, vnode)."""
    digest = getattr(hashlib, contract["hash"])
    words = digest().digest_size // 4
    online = [s for s in shards if s["state"] == "online"]
    points = []
    for rank, s in enumerate(online):
        sid = s["id"].encode()
        count = contract["vnodes"] * s["weight"]
        for k in range(count):
            g, j = divmod(k, words)
            if j == 0:
                d = digest(sid + b"-" + str(g).encode()).digest()
            points.append((le32(d, j), sid, k, rank))
    points.sort()
    ring_text = "ketama\n%s\n%d\n" % (contract["hash"], contract["vnodes"])
    ring_text += "".join("%s %d\n" % (s["id"], s["weight"]) for s in online)
    epoch_text = "shardgate-epoch\nDISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=%d\n" % contract["vnodes"]
    epoch_text += "DISPATCH_RING_HASH=%s\nDISPATCH_CAPACITY_POLICY=%s\n" % (contract["hash"],
                                                                          contract["policy"])
    epoch_text += "".join("%s %s %d %d\n" % (s["id"], s["state"], s["capacity"], s["weight"])
                          for s in shards)  # docs/contract.md §7
    return {
        "epoch": hashlib.sha1(epoch_text.encode()).hexdigest(),
        "values": [p[0] for p in points],
        "entries": [(p[3], p[2]) for p in points],
        "online": online,
        "id": hashlib.sha1(ring_text.encode()).hexdigest(),
        "digest": digest,
        "contract": contract,
    }


def no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise Invalid("$: duplicate object key %r" % k)
        obj[k] = v
    return obj


def checked_string(change, field, i, limit):
    v = change.get(field)
    if not isinstance(v, str):
        raise Invalid("changes[%d].%s: must be a string" % (i, field))
    b = v.encode("utf-8")
    if not 1 <= len(b) <= limit:
        raise Invalid("changes[%d].%s: must be 1..%d bytes" % (i, field, limit))
    return v, b


def parse_batch(data, max_changes=100000):
    """The validated batch: (batch_id, [(id, key, key bytes, size)]), or raises Invalid."""
    doc = json.loads(data, object_pairs_hook=no_duplicates)
    if not isinstance(doc, dict) or set(doc) != {"batch_id", "changes"}:
        raise Invalid("$: must be an object with exactly batch_id and changes")
    batch_id, changes = doc["batch_id"], doc["changes"]
    if not isinstance(batch_id, str) or not NAME_RE.fullmatch(batch_id):
        raise Invalid("batch_id: must be 1..128 bytes of [A-Za-z0-9._:-]")
    if not isinstance(changes, list) or not 1 <= len(changes) <= max_changes:
        raise Invalid("changes: must hold 1..%d changes" % max_changes)
    out, seen, total = [], set(), 0
    for i, c in enumerate(changes):
        if not isinstance(c, dict) or c.keys() != {"id", "key", "size"}:
            raise Invalid("changes[%d]: must be an object with exactly id, key, size" % i)
        cid, _ = checked_string(c, "id", i, 128)
        key, kb = checked_string(c, "key", i, 1024)
        size = c["size"]
        if type(size) is not int or not 0 <= size <= SAFE_MAX:
            raise Invalid("changes[%d].size: must be an integer 0..%d" % (i, SAFE_MAX))
        if cid in seen:
            raise Invalid("changes[%d].id: duplicate" % i)
        seen.add(cid)
        total += size
        out.append((cid, key, kb, size))
    if total > SAFE_MAX:
        raise Invalid("changes: total size exceeds %d" % SAFE_MAX)
    return batch_id, out


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def fingerprint(batch_id, changes):
    canon = {"batch_id": batch_id,
             "changes": [{"id": c[0], "key": c[1], "size": c[3]} for c in changes]}
    return hashlib.sha256(dumps(canon).encode()).digest()


def place(ring, changes):
    values, entries, digest = ring["values"], ring["entries"], ring["digest"]
    online, n = ring["online"], len(values)
    placements = []
    for cid, key, kb, size in changes:
        h = le32(digest(kb).digest())
        i = bisect.bisect_left(values, h)
        wrapped = i == n
        if wrapped:
            i = 0
        rank, vnode = entries[i]
        placements.append({"id": cid, "key": key, "size": size, "hash": h, "point": values[i],
                           "vnode": vnode, "shard": online[rank]["id"],
                           "reason": "wrap" if wrapped else "ring"})
    return placements


def receipt(ring, shards, batch_id, placements):
    load = {s["id"]: [0, 0] for s in shards}
    for p in placements:
        t = load[p["shard"]]
        t[0] += p["size"]
        t[1] += 1
    table, over = {}, 0
    for s in shards:
        is_over = load[s["id"]][0] > s["capacity"]
        over += is_over
        table[s["id"]] = {"state": s["state"], "weight": s["weight"], "capacity": s["capacity"],
                          "load": load[s["id"]][0], "received": load[s["id"]][1],
                          "over_capacity": is_over}
    dispatched = len(placements)  # every placement is on an online shard of the ring
    c = ring["contract"]
    doc = {
        "receipt_version": 2,
        "batch_id": batch_id,
        "epoch": ring["epoch"],
        "ring": {"id": ring["id"], "algorithm": "ketama", "hash": c["hash"],
                 "vnodes": c["vnodes"], "vnodes_total": len(ring["values"]),
                 "online": [s["id"] for s in ring["online"]]},
        "placements": placements,
        "shards": table,
        "capacity": sum(s["capacity"] for s in ring["online"]),
        "counts": {"changes": len(placements), "dispatched": dispatched,
                   "over_capacity_shards": over},
        "ok": dispatched == len(placements) and over == 0,
    }
    return dumps(doc).encode()


def job(ring, shards, data):
    """Parse + fingerprint + place + receipt: what the C gateway's timed job does."""
    batch_id, changes = parse_batch(data)
    fingerprint(batch_id, changes)
    return receipt(ring, shards, batch_id, place(ring, changes))


def main():
    ap = argparse.ArgumentParser()
    for name in ("--conf", "--shards", "--batch", "--out"):
        ap.add_argument(name, required=True)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    contract = load_contract(open(a.conf).read())
    shards = load_shards(open(a.shards, "rb").read())
    ring = build_ring(contract, shards)
    data = open(a.batch, "rb").read()
    times = []
    for _ in range(a.rounds):
        t0 = time.perf_counter_ns()
        out = job(ring, shards, data)
        times.append(time.perf_counter_ns() - t0)
    changes = json.loads(out)["counts"]["changes"]
    with open(a.out, "wb") as f:
        f.write(out + b"\n")
    per_change = statistics.median(times) / changes
    print("reference.py: %d changes, %.1f ns per change (median of %d)"
          % (changes, per_change, a.rounds))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"changes": changes, "rounds": a.rounds, "ns_per_change": per_change,
                       "job_ms": [t / 1e6 for t in times],
                       "python": sys.version.split()[0]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
