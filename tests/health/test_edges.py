#!/usr/bin/env python3
"""health_edges: the ring corners of docs/contract.md §3 that small examples never reach: equal
point values (tie order by shard id then vnode), a key hash equal to a point (>=, not >), the
wrap, md5, weights, and many keys on a large ring. A wrong tie order, '>' for '>=', or a
broken merge lookup in health/ makes a correct receipt fail here."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Failures, check_receipt, parse_line, tmpdir, write)  # noqa: E402
import ketama  # noqa: E402

BIN = sys.argv[1]
F = Failures()
T = tmpdir()


def verify(name, ring, contract, chs, shards):
    conf = write(os.path.join(T, name + ".env"), ketama.contract_text(contract))
    sh = write(os.path.join(T, name + "-shards.json"), json.dumps({"shards": shards}))
    r = ketama.receipt(ring, name, chs)
    path = write(os.path.join(T, name + ".json"), ketama.dumps(r) + "\n")
    rc, out, err = check_receipt(BIN, path, conf=conf, shards=sh)
    return rc, out, err, r


# --- a large ring with equal point values ------------------------------------------------------
shards = [{"id": "node-%02d" % i, "state": "online", "capacity": 10**12} for i in range(64)]
ring = ketama.Ring("sha1", 4096, shards)
pts = ring.points
ties = [i for i in range(1, len(pts) - 1) if pts[i][0] == pts[i + 1][0] and pts[i][1] != pts[i + 1][1]]
F.check(len(ties) >= 3, "the 64x4096 ring has ties between shards (%d)" % len(ties))
want = {}  # tie index -> key whose hash falls in (previous value, tie value]
exact = None
chs = []
i = 0
while (len(want) < len(ties) or exact is None) and i < 3000000:
    key = "tie:%d" % i
    h = ketama.key_hash("sha1", key)
    j = ring.lookup(h)
    if exact is None and j[0] == h:
        exact = key
        chs.append({"id": "exact", "key": key, "size": 1})
        # the same key again: its lookup starts on the equal point itself
        chs.append({"id": "exact-again", "key": key, "size": 2})
    for t in ties:
        if t not in want and pts[t - 1][0] < h <= pts[t][0]:
            want[t] = key
            chs.append({"id": "tie-%d" % t, "key": key, "size": 1})
    i += 1
F.check(len(want) == len(ties), "found a key for every tie (%d)" % len(want))
F.check(exact is not None, "found a key whose hash equals a point value: %s" % exact)
# the expected answers really exercise the order: the first of each tie (smaller shard id)
r = ketama.receipt(ring, "ties", chs)
for p in r["placements"]:
    if p["id"].startswith("tie-"):
        t = int(p["id"][4:])
        F.check(p["shard"] == pts[t][1].decode() and pts[t][1] < pts[t + 1][1],
                "tie at %d goes to the smaller id %s, not %s" % (pts[t][0], p["shard"],
                                                                 pts[t + 1][1].decode()))
chs += [{"id": "r%d" % n, "key": "rand:%d" % n, "size": n % 5} for n in range(20000)]
rc, out, err, _ = verify("ties", ring, ketama.contract(vnodes=4096), chs, shards)
F.check(rc == 0 and '"status":"pass"' in out, "ties, exact hit and 20000 keys on a 262144-point ring",
        "rc=%d out=%s err=%s" % (rc, out[:3000], err))

# --- wrap, md5, weights, non-online states ------------------------------------------------------
shards = [{"id": "a", "state": "online", "capacity": 100, "weight": 3},
          {"id": "a.b", "state": "online", "capacity": 5},
          {"id": "B:9", "state": "online", "capacity": 100, "weight": 2},
          {"id": "c", "state": "draining", "capacity": 100, "weight": 7},
          {"id": "d", "state": "offline", "capacity": 0}]
for hname in ("md5", "sha1"):
    for v in (1, 7, 160):
        ring = ketama.Ring(hname, v, shards)
        chs = [{"id": "w%d" % n, "key": "wkey-%d" % n, "size": n % 4} for n in range(3000)]
        wraps = 0
        n = 0
        while wraps < 2 and n < 2000000:
            key = "wrap-%d" % n
            if ketama.key_hash(hname, key) > ring.values[-1]:
                chs.append({"id": "wrap%d" % n, "key": key, "size": 2})
                wraps += 1
            n += 1
        rc, out, err, r = verify("%s-%d" % (hname, v), ring, ketama.contract(hname, v), chs, shards)
        reasons = {p["reason"] for p in r["placements"]}
        F.check(rc in (0, 2) and "wrap" in reasons and r["ring"]["vnodes_total"] == 6 * v,
                "%s V=%d: receipt has wraps and vnodes_total %d" % (hname, v, 6 * v))
        doc = parse_line(out)
        # over capacity is a valid state under report (ok false); any issue is a real mismatch
        F.check(doc is not None and doc["issues"] == [] and rc == 0,
                "%s V=%d weights 3/1/2, draining and offline shards: pass" % (hname, v),
                "rc=%d out=%s" % (rc, out[:2000]))

# md5 point values equal libmemcached's ketama for V=160 (docs/contract.md §3): a known pair from
# the md5 of "a-0": digest words give the first four points of shard "a".
import hashlib
import struct
d = hashlib.md5(b"a-0").digest()
ring = ketama.Ring("md5", 160, shards)
first = sorted(k for (val, sid, k) in ring.points if sid == b"a")[:4]
vals = {k: val for (val, sid, k) in ring.points if sid == b"a"}
F.check([vals[k] for k in first] == list(struct.unpack("<4I", d)),
        "test ring: md5 points are LE32 words of md5(id-g)")
F.exit()
