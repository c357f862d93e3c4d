#!/usr/bin/env python3
"""The probe's own ketama ring (docs/contract.md §3) against the docs/contract.md §6 golden
table and published values."""

import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import case, client_package, eq, ok, src, main  # noqa: E402

# docs/contract.md §6: id, key, size, hash, point, vnode, shard, reason
GOLDEN = [
    ("ch-001", "order:1001", 4, 3001802920, 3046879832, 15, "shard-b", "ring"),
    ("ch-002", "user:42", 2, 592310701, 593769253, 2, "shard-c", "ring"),
    ("ch-003", "cart:9", 3, 2934343843, 2942651850, 150, "shard-a", "ring"),
    ("ch-004", "sku:55", 5, 1904427621, 1911314043, 151, "shard-a", "ring"),
    ("ch-005", "user:842", 1, 4294347913, 3038923, 87, "shard-c", "wrap"),
    ("ch-006", "order:1002", 2, 1627255193, 1632378279, 119, "shard-b", "ring"),
    ("ch-007", "invoice:8", 6, 340884089, 342641705, 159, "shard-c", "ring"),
    ("ch-008", "user:7", 1, 27024618, 30688554, 141, "shard-c", "ring"),
]


def shard(sid, state="online", weight=1, capacity=20):
    return {"id": sid, "state": state, "capacity": capacity, "weight": weight}


def worked_example_shards():
    return [shard("shard-a"), shard("shard-b"), shard("shard-c"), shard("shard-d", "offline"),
            shard("shard-e", "draining")]


@case("probe_ring")
def golden_table_all_rows():
    sg = client_package()
    ring = sg.ring.Ring("sha1", 160, worked_example_shards())
    for cid, key, _size, h, point, vnode, sid, reason in GOLDEN:
        eq(ring.lookup(key.encode()), (h, point, vnode, sid, reason), "%s %s" % (cid, key))


@case("probe_ring")
def golden_ring_summary():
    sg = client_package()
    ring = sg.ring.Ring("sha1", 160, worked_example_shards())
    eq(ring.ring_id, "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc", "ring id")
    eq(ring.vnodes_total, 480, "vnodes_total")
    eq(len(ring.entries), 480, "points on the ring")
    eq([s["id"] for s in ring.online], ["shard-a", "shard-b", "shard-c"], "online")
    eq(ring.entries, sorted(ring.entries), "ring sorted")


@case("probe_ring")
def golden_receipt_from_contract():
    sg = client_package()
    contract = sg.contract.load_contract(src("conf", "dispatch.env"))
    eq(contract, {"DISPATCH_HASH_RING": "ketama", "DISPATCH_VNODES": 160,
                  "DISPATCH_RING_HASH": "sha1", "DISPATCH_CAPACITY_POLICY": "report"}, "contract")
    shards = sg.contract.load_shards(src("input", "shards.json"))
    changes = [{"id": c, "key": k, "size": s} for c, k, s, *_ in GOLDEN]
    r = sg.receipt.expected_receipt(contract, shards, "sample-0001", changes, 1)
    with open(src("tests", "golden", "sample-0001.receipt.json"), encoding="utf-8") as f:
        v1 = f.read()
    eq(sg.contract.canonical(r), v1, "the probe's v1 receipt is the golden receipt byte for byte")
    r2 = sg.receipt.expected_receipt(contract, shards, "sample-0001", changes, 2)
    eq(sg.contract.canonical(r2), v1.replace(
        '"receipt_version":1,"batch_id":"sample-0001",',
        '"receipt_version":2,"batch_id":"sample-0001",'
        '"epoch":"f60a5fb19effc4cfa95aed0af45997f72905f6ae",'), "the v2 golden (docs/contract.md §5)")


@case("probe_ring")
def lookup_boundaries():
    """>= not >: a hash equal to a point lands on that point; above the last point wraps
    to the first point, not the last."""
    sg = client_package()
    ring = sg.ring.Ring("sha1", 160, worked_example_shards())
    first, second, last = ring.entries[0], ring.entries[1], ring.entries[-1]
    middle = ring.entries[240]
    eq(ring.lookup_hash(middle[0]), (middle[0], middle[2], middle[1].decode(), "ring"), "exact")
    eq(ring.lookup_hash(middle[0] + 1)[0], ring.entries[241][0], "just above a point")
    eq(ring.lookup_hash(0), (first[0], first[2], first[1].decode(), "ring"), "hash 0")
    eq(ring.lookup_hash(first[0]), (first[0], first[2], first[1].decode(), "ring"), "first")
    eq(ring.lookup_hash(first[0] + 1)[0], second[0], "above first")
    eq(ring.lookup_hash(last[0]), (last[0], last[2], last[1].decode(), "ring"), "last exact")
    if last[0] < 2**32 - 1:
        eq(ring.lookup_hash(last[0] + 1), (first[0], first[2], first[1].decode(), "wrap"),
           "above last wraps to entry 0")
    eq(ring.lookup_hash(2**32 - 1)[3], "wrap", "max hash")


@case("probe_ring")
def only_online_shards_and_weights_multiply():
    sg = client_package()
    shards = [shard("a", weight=3), shard("b"), shard("c", "draining", weight=5),
              shard("d", "offline"), shard("e", "Online")]
    ring = sg.ring.Ring("sha1", 40, shards)
    eq([s["id"] for s in ring.online], ["a", "b"], "whitelist: only state == online")
    eq(ring.vnodes_total, 160, "V * weight summed over online shards")
    counts = {}
    for _value, sid, _vnode in ring.entries:
        counts[sid] = counts.get(sid, 0) + 1
    eq(counts, {b"a": 120, b"b": 40}, "points per shard = V * weight, not divided")
    eq(sorted(v for _, sid, v in ring.entries if sid == b"a"), list(range(120)), "vnodes of a")
    empty = sg.ring.Ring("sha1", 160, [shard("d", "offline")])
    eq(empty.lookup(b"k")[1:], (None, None, None, None), "empty ring places nothing")


@case("probe_ring")
def points_layout_sha1_and_md5():
    """W words per digest, LE32, vnode k = g*W + j; md5 values published by twemproxy and
    libmemcached (tests/hash_results.h): ketama_hash("server1-8", 0) == 3853726576,
    index 3 == 2667054752, md5 key hash of "apple" == 3195025439."""
    sg = client_package()
    md5 = dict((v, val) for val, v in sg.ring.shard_points("md5", "server1", 160))
    eq(len(md5), 160, "md5 points")
    eq(md5[8 * 4 + 0], 3853726576, "md5 server1-8 word 0")
    eq(md5[8 * 4 + 3], 2667054752, "md5 server1-8 word 3")
    eq(sg.ring.key_hash("md5", b"apple"), 3195025439, "md5 key hash of apple")
    sha1 = sg.ring.shard_points("sha1", "shard-b", 160)
    eq([v for _, v in sha1], list(range(160)), "sha1 vnodes 0..159")
    eq(sha1[15][0], 3046879832, "shard-b vnode 15 (ch-001's point, docs/contract.md §6)")
    eq(len(sg.ring.shard_points("sha1", "x", 7)), 7, "a count that is not a multiple of W")
    eq(len(sg.ring.shard_points("md5", "x", 7)), 7, "md5 count not a multiple of W")
    ring = sg.ring.Ring("md5", 160, [shard("a"), shard("b")])
    eq(ring.ring_id, __import__("hashlib").sha1(b"ketama\nmd5\n160\na 1\nb 1\n").hexdigest(),
       "ring id text (SHA-1 whatever the ring hash)")


@case("probe_ring")
def equal_values_are_kept_and_ordered_by_id():
    """Many shards make 32-bit point collisions certain; none may be dropped, and ties
    are ordered by shard id bytes, then vnode."""
    sg = client_package()
    shards = [shard("s%d" % i) for i in range(2000)]
    ring = sg.ring.Ring("sha1", 160, shards)
    eq(len(ring.entries), 320000, "every point kept")
    ties = [(a, b) for a, b in zip(ring.entries, ring.entries[1:]) if a[0] == b[0]]
    ok(ties, "the test data has colliding point values")
    for a, b in ties:
        ok((a[1], a[2]) < (b[1], b[2]), "tie order %r %r" % (a, b))
    eq(sg.ring.id_order([shard("ab"), shard("a"), shard("B")]), [shard("B"), shard("a"), shard("ab")],
       "id order is bytewise, shorter first")


@case("probe_ring")
def design_counterfactuals():
    """docs/contract.md §6: shard-d and shard-e wrongly online send ch-001 to shard-d; VNODES divided by 5
    moves exactly ch-003..ch-006."""
    sg = client_package()
    leaky = [dict(s, state="online") for s in worked_example_shards()]
    eq(sg.ring.Ring("sha1", 160, leaky).lookup(b"order:1001")[3], "shard-d", "leak: ch-001")
    divided = sg.ring.Ring("sha1", 32, worked_example_shards())
    moved = [row[0] for row in GOLDEN if divided.lookup(row[1].encode())[3] != row[6]]
    eq(moved, ["ch-003", "ch-004", "ch-005", "ch-006"], "moved by VNODES/5")


@case("probe_ring")
def jump_published_values_and_golden_file():
    """docs/contract.md §10: Lamping and Veach's values, then every row of tests/golden/jump.txt
    (which unit/test_jump checks against the gateway's and health's)."""
    sg = client_package()
    eq([sg.ring.jump(k, 100) for k in range(20)],
       [0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83],
       "keys 0..19 among 100 buckets")
    eq(sg.ring.jump(2, 100001), 80343, "key 2 among 100,001 buckets")
    eq((sg.ring.jump(7, 0), sg.ring.jump(2**64 - 1, 1)), (-1, 0), "no bucket; one bucket")
    with open(src("tests", "golden", "jump.txt"), encoding="utf-8") as f:
        rows = [tuple(int(x) for x in line.split()) for line in f if not line.startswith("#")]
    eq(len(rows), 261, "rows")
    for key, buckets, bucket in rows:
        eq(sg.ring.jump(key, buckets), bucket, "jump(%d, %d)" % (key, buckets))


@case("probe_ring")
def maglev_worked_example_and_golden_file():
    """docs/contract.md §11: the worked example slot by slot, then every table of
    tests/golden/maglev.txt (which unit/test_maglev checks against the gateway's and health's),
    the small ones listed the other way round too, and the keys' 64 bits."""
    sg = client_package()
    table = sg.ring.maglev_table([(b"s2", 1), (b"s0", 1), (b"s1", 1)], 13, "sha1")
    eq("".join("201"[i] for i in table), "2001210220110", "worked example")
    for bad in (([], 13), ([(b"a", 1)], 15), ([(b"a", 1), (b"a", 1)], 13), ([(b"a", 0)], 13)):
        try:
            sg.ring.maglev_table(bad[0], bad[1], "sha1")
            eq(bad, "refused", "maglev_table accepted")
        except ValueError:
            pass
    tables = keys = 0
    with open(src("tests", "golden", "maglev.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            if line.startswith("key "):
                _, algo, key, want = line.split()
                key_bytes = b"" if key == "-" else bytes.fromhex(key)
                eq(sg.ring.key_u64(algo, key_bytes), int(want), "key_u64 %s %s" % (algo, key))
                keys += 1
                continue
            algo, size, listed, slots, digest = line.split()
            shards = [(i.rsplit(":", 1)[0].encode(), int(i.rsplit(":", 1)[1]))
                      for i in listed.split(",")]
            want = [int(x) for x in slots.split(",")]
            for order in ([1, -1] if int(size) < 2000 else [1]):
                listing = shards[::order]
                table = sg.ring.maglev_table(listing, int(size), algo)
                eq([table.count(i) for i in range(len(listing))], want[::order],
                   "slots each, %s %s" % (algo, size))
                owners = b"".join(listing[i][0] + b"\n" for i in table)
                eq(hashlib.sha1(owners).hexdigest(), digest, "table %s %s" % (algo, size))
            tables += 1
    eq((tables, keys), (12, 8), "rows")


@case("probe_ring")
def jump_ring_worked_example():
    """docs/contract.md §10's worked example: s0, s1, s2 over 13 slots (the same figures as
    unit/test_jump's for the gateway), each slot the ketama owner of its start, keys a, b, c at
    slots 3, 10, 2, and an added shard taking slots only."""
    sg = client_package()
    ring = sg.ring.JumpRing("sha1", 13, [shard("s2"), shard("s0"), shard("s1")])
    eq("".join(ring.online[i]["id"][1] for i in ring.table), "1110011012220", "table")
    eq(ring.ring_id, "3372cede41e717b33f44256369ccd6c9ade0254c", "ring id")
    eq([ring.lookup(k) for k in (b"a", b"b", b"c")], [(3, "s0"), (10, "s2"), (2, "s1")], "keys")
    ketama = sg.ring.Ring("sha1", 160, [shard("s2"), shard("s0"), shard("s1")])
    eq([ring.online[i]["id"] for i in ring.table],
       [ketama.lookup_hash(s * 2**32 // 13)[2] for s in range(13)], "owners of the starts")
    eq(ring.summary(), {"id": ring.ring_id, "algorithm": "jump", "hash": "sha1", "table": 13,
                        "online": ["s0", "s1", "s2"]}, "summary")
    more = sg.ring.JumpRing("sha1", 1000, [shard("s2"), shard("s0"), shard("s1"), shard("s3")])
    less = sg.ring.JumpRing("sha1", 1000, [shard("s2"), shard("s0"), shard("s1")])
    moved = [(less.online[a]["id"], more.online[b]["id"]) for a, b in zip(less.table, more.table)
             if less.online[a]["id"] != more.online[b]["id"]]
    ok(moved and all(to == "s3" for _, to in moved), "an added shard only takes slots")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("source",)))
