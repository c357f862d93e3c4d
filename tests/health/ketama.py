"""Test-side ketama (docs/contract.md §3) in Python stdlib, independent of health/ and ring/.

Builds rings, receipts (docs/contract.md §5, bytes as docs/decisions.md) and journals, so the
health service's tests can make large valid inputs and alter exactly one fact of them.
"""
import bisect
import hashlib
import json
import struct

SAFE_MAX = 2**53 - 1


def digest(hash_name, data):
    return hashlib.new(hash_name, data).digest()


def key_hash(hash_name, key):
    return struct.unpack_from("<I", digest(hash_name, key.encode("utf-8")))[0]


def online(shards):
    return sorted((s for s in shards if s["state"] == "online"), key=lambda s: s["id"].encode())


class Ring:
    """Points sorted by (value, shard id bytes, vnode); lookups by bisect."""

    def __init__(self, hash_name, vnodes, shards):
        self.hash_name = hash_name
        self.vnodes = vnodes
        self.shards = sorted(shards, key=lambda s: s["id"].encode())
        pts = []
        words = len(digest(hash_name, b"")) // 4
        for s in online(self.shards):
            want = vnodes * s.get("weight", 1)
            k, g = 0, 0
            while k < want:
                d = digest(hash_name, ("%s-%d" % (s["id"], g)).encode())
                for j in range(words):
                    if k >= want:
                        break
                    pts.append((struct.unpack_from("<I", d, 4 * j)[0], s["id"].encode(), k))
                    k += 1
                g += 1
        pts.sort()
        self.points = pts
        self.values = [p[0] for p in pts]
        self.vnodes_total = len(pts)

    def ring_id(self):
        text = "ketama\n%s\n%d\n" % (self.hash_name, self.vnodes)
        for s in online(self.shards):
            text += "%s %d\n" % (s["id"], s.get("weight", 1))
        return hashlib.sha1(text.encode()).hexdigest()

    def lookup(self, h):
        i = bisect.bisect_left(self.values, h)
        if i == len(self.points):
            v, sid, k = self.points[0]
            return v, sid.decode(), k, "wrap"
        v, sid, k = self.points[i]
        return v, sid.decode(), k, "ring"


def contract(hash_name="sha1", vnodes=160, policy="report"):
    return {"DISPATCH_HASH_RING": "ketama", "DISPATCH_VNODES": vnodes,
            "DISPATCH_RING_HASH": hash_name, "DISPATCH_CAPACITY_POLICY": policy}


def contract_text(c):
    return "".join("%s=%s\n" % (k, v) for k, v in c.items())


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def receipt(ring, batch_id, changes):
    """The receipt dict, keys in docs/contract.md §5 order."""
    placements = []
    load = {s["id"]: 0 for s in ring.shards}
    received = {s["id"]: 0 for s in ring.shards}
    for ch in changes:
        h = key_hash(ring.hash_name, ch["key"])
        point, sid, vnode, reason = ring.lookup(h)
        placements.append({"id": ch["id"], "key": ch["key"], "size": ch["size"], "hash": h,
                           "point": point, "vnode": vnode, "shard": sid, "reason": reason})
        load[sid] += ch["size"]
        received[sid] += 1
    shards = {}
    over_count = 0
    for s in ring.shards:
        over = s["state"] == "online" and load[s["id"]] > s["capacity"]
        over_count += over
        shards[s["id"]] = {"state": s["state"], "weight": s.get("weight", 1),
                           "capacity": s["capacity"], "load": load[s["id"]],
                           "received": received[s["id"]], "over_capacity": over}
    return {
        "receipt_version": 1,
        "batch_id": batch_id,
        "ring": {"id": ring.ring_id(), "algorithm": "ketama", "hash": ring.hash_name,
                 "vnodes": ring.vnodes, "vnodes_total": ring.vnodes_total,
                 "online": [s["id"] for s in online(ring.shards)]},
        "placements": placements,
        "shards": shards,
        "capacity": sum(s["capacity"] for s in online(ring.shards)),
        "counts": {"changes": len(changes), "dispatched": len(changes),
                   "over_capacity_shards": over_count},
        "ok": over_count == 0,
    }


def fingerprint(rcpt):
    batch = {"batch_id": rcpt["batch_id"],
             "changes": [{"id": p["id"], "key": p["key"], "size": p["size"]}
                         for p in rcpt["placements"]]}
    return hashlib.sha256(dumps(batch).encode("utf-8")).hexdigest()


def epoch_record(ring, c):
    shards = [{"id": s["id"], "state": s["state"], "capacity": s["capacity"],
               "weight": s.get("weight", 1)} for s in ring.shards]
    return {"type": "epoch", "ring_id": ring.ring_id(), "contract": c, "shards": shards}


def receipt_record(seq, rcpt):
    return {"type": "receipt", "seq": seq, "fingerprint": fingerprint(rcpt), "receipt": rcpt}


def epoch_id(c, shards):
    """The epoch id of docs/contract.md §7: contract lines, then every shard in id order."""
    text = "shardgate-epoch\n"
    for k in ("DISPATCH_HASH_RING", "DISPATCH_VNODES", "DISPATCH_RING_HASH",
              "DISPATCH_CAPACITY_POLICY"):
        text += "%s=%s\n" % (k, c[k])
    for s in sorted(shards, key=lambda s: s["id"].encode()):
        text += "%s %s %d %d\n" % (s["id"], s["state"], s["capacity"], s.get("weight", 1))
    return hashlib.sha1(text.encode()).hexdigest()


def to_v2(rcpt, epoch):
    """A version-1 receipt as version 2: "epoch" after batch_id (docs/contract.md §5). A
    version-2 receipt is returned as it is."""
    if rcpt["receipt_version"] == 2:
        return rcpt
    out = {"receipt_version": 2}
    for k, v in rcpt.items():
        if k != "receipt_version":
            out[k] = v
        if k == "batch_id":
            out["epoch"] = epoch
    return out


def chain_record(ring, c, seq, prev, first_seq, source="start", time="2026-12-01T03:29:18.123Z"):
    """A new-form epoch record (docs/journal.md §2) for ring's membership under contract c."""
    legacy = epoch_record(ring, c)
    return {"type": "epoch", "epoch": epoch_id(c, ring.shards), "epoch_seq": seq, "prev": prev,
            "source": source, "time": time, "first_seq": first_seq, "ring_id": legacy["ring_id"],
            "contract": c, "shards": legacy["shards"]}
