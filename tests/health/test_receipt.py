#!/usr/bin/env python3
"""health_receipt: the worked example passes with an exact check count; every criterion
catches a receipt altered in exactly one field (exit 2, exact issue string)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Failures, check_receipt, deep, golden, parse_line, tmpdir, write, GOLDEN)  # noqa: E402
import ketama  # noqa: E402

BIN = sys.argv[1]
F = Failures()
T = tmpdir()
B = "sample-0001"

# --- the golden receipt --------------------------------------------------------------------
rc, out, err = check_receipt(BIN, GOLDEN)
F.check(rc == 0 and out == '{"status":"pass","checks":92,"receipts":1,"issues":[]}\n',
        "golden receipt passes with 92 checks", "rc=%d out=%r err=%r" % (rc, out, err))


def pl(r, cid):
    return next(p for p in r["placements"] if p["id"] == cid)


def t_set(path, value):
    """Alteration setting one nested field, path like ("ring", "vnodes_total")."""
    def f(r):
        o = r
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = value
    return f


def t_pl(cid, field, value):
    def f(r):
        pl(r, cid)[field] = value
    return f


def t_drop_placement(cid):
    def f(r):
        r["placements"] = [p for p in r["placements"] if p["id"] != cid]
    return f


def t_drop_shard(sid):
    def f(r):
        del r["shards"][sid]
    return f


def t_extra_shard(r):
    r["shards"]["shard-z"] = {"state": "online", "weight": 1, "capacity": 20, "load": 0,
                              "received": 0, "over_capacity": False}


def t_drop_key(key):
    def f(r):
        del r[key]
    return f


RID = "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc"
# (case name, alteration, exact issue that must be present)
CASES = [
    ("hash", t_pl("ch-001", "hash", 3001802921),
     "placement_hash: %s: ch-001 hash: expected 3001802920, got 3001802921" % B),
    ("point", t_pl("ch-002", "point", 593769254),
     "placement_point: %s: ch-002 point: expected 593769253, got 593769254" % B),
    ("vnode", t_pl("ch-003", "vnode", 149),
     "placement_vnode: %s: ch-003 vnode: expected 150, got 149" % B),
    ("shard", t_pl("ch-003", "shard", "shard-b"),
     "placement_shard: %s: ch-003 shard: expected shard-a, got shard-b" % B),
    ("reason", t_pl("ch-005", "reason", "ring"),
     "placement_reason: %s: ch-005 reason: expected wrap, got ring" % B),
    ("reason-wrap", t_pl("ch-001", "reason", "wrap"),
     "placement_reason: %s: ch-001 reason: expected ring, got wrap" % B),
    ("offline-shard", t_pl("ch-001", "shard", "shard-d"),
     "placement_online: %s: ch-001 shard: shard-d is offline, not online" % B),
    ("draining-shard", t_pl("ch-001", "shard", "shard-e"),
     "placement_online: %s: ch-001 shard: shard-e is draining, not online" % B),
    ("unknown-shard", t_pl("ch-001", "shard", "shard-q"),
     "placement_online: %s: ch-001 shard: shard-q is not in the membership" % B),
    ("missing-placement", t_drop_placement("ch-008"),
     "placement_count: %s: placements: expected one per change (counts.changes 8), got 7" % B),
    ("duplicate-id", t_pl("ch-002", "id", "ch-001"),
     "placement_ids: %s: ch-001 id: duplicate change id (placements[0] and placements[1])" % B),
    ("load", t_set(("shards", "shard-a", "load"), 2),
     "shard_load: %s: shards.shard-a.load: expected 8 (sum of sizes), got 2" % B),
    ("received", t_set(("shards", "shard-c", "received"), 3),
     "shard_received: %s: shards.shard-c.received: expected 4, got 3" % B),
    ("shard-capacity", t_set(("shards", "shard-b", "capacity"), 30),
     "shard_capacity: %s: shards.shard-b.capacity: expected 20, got 30" % B),
    ("over-capacity", t_set(("shards", "shard-c", "over_capacity"), True),
     "shard_over_capacity: %s: shards.shard-c.over_capacity: expected false, got true" % B),
    ("shard-state", t_set(("shards", "shard-e", "state"), "online"),
     "shard_state: %s: shards.shard-e.state: expected draining, got online" % B),
    ("shard-weight", t_set(("shards", "shard-a", "weight"), 2),
     "shard_weight: %s: shards.shard-a.weight: expected 1, got 2" % B),
    ("shard-missing", t_drop_shard("shard-d"), "shard_members: %s: shards: missing shard-d" % B),
    ("shard-extra", t_extra_shard,
     "shard_members: %s: shards: unexpected shard-z (not in the membership)" % B),
    ("total-capacity", t_set(("capacity",), 100),
     "capacity: %s: capacity: expected 60 (sum over online shards), got 100" % B),
    ("counts-changes", t_set(("counts", "changes"), 9),
     "counts: %s: counts.changes: expected 8, got 9" % B),
    ("counts-dispatched", t_set(("counts", "dispatched"), 7),
     "counts: %s: counts.dispatched: expected 8, got 7" % B),
    ("counts-over", t_set(("counts", "over_capacity_shards"), 1),
     "counts: %s: counts.over_capacity_shards: expected 0, got 1" % B),
    ("ok", t_set(("ok",), False), "ok: %s: ok: expected true, got false" % B),
    ("vnodes-total", t_set(("ring", "vnodes_total"), 800),
     "vnodes_total: %s: ring.vnodes_total: expected 480, got 800" % B),
    ("ring-id", t_set(("ring", "id"), RID[:-1] + "d"),
     "ring_id: %s: ring.id: expected %s, got %s" % (B, RID, RID[:-1] + "d")),
    ("online-list", t_set(("ring", "online"), ["shard-a", "shard-b", "shard-c", "shard-d"]),
     "ring_online: %s: ring.online: expected [shard-a,shard-b,shard-c], "
     "got [shard-a,shard-b,shard-c,shard-d]" % B),
    ("online-order", t_set(("ring", "online"), ["shard-b", "shard-a", "shard-c"]),
     "ring_online: %s: ring.online: expected [shard-a,shard-b,shard-c], "
     "got [shard-b,shard-a,shard-c]" % B),
    ("ring-hash", t_set(("ring", "hash"), "md5"),
     "ring_contract: %s: ring.hash: expected sha1, got md5" % B),
    ("ring-vnodes", t_set(("ring", "vnodes"), 32),
     "ring_contract: %s: ring.vnodes: expected 160, got 32" % B),
    ("ring-algorithm", t_set(("ring", "algorithm"), "modulo"),
     "ring_contract: %s: ring.algorithm: expected ketama, got modulo" % B),
    ("receipt-version", t_set(("receipt_version",), 3),
     "receipt_version: %s: receipt_version: expected 1 or 2, got 3" % B),
    ("schema-missing-ok", t_drop_key("ok"), "schema: %s: $.ok: missing" % B),
    ("schema-type", t_pl("ch-001", "size", "4"),
     "schema: %s: placements[0].size: must be an integer" % B),
]

for name, alter, issue in CASES:
    r = golden()
    alter(r)
    path = write(os.path.join(T, "%s.json" % name), ketama.dumps(r) + "\n")
    rc, out, err = check_receipt(BIN, path)
    doc = parse_line(out)
    ok = rc == 2 and doc is not None and doc["status"] == "fail" and issue in doc["issues"]
    F.check(ok, "tamper %s -> exit 2 + %r" % (name, issue),
            "rc=%d out=%s err=%s" % (rc, out, err))

# A receipt written by a gateway with offline/draining shards in the ring (seed failure 1):
# every derived fact differs; ch-001 lands on shard-d there (docs/contract.md §6).
shards = [dict(s, state="online") for s in __import__("sgtest").golden_shards()]
leaky = ketama.receipt(ketama.Ring("sha1", 160, shards), B, golden()["placements"])
for s in ("shard-d", "shard-e"):
    leaky["shards"][s]["state"] = {"shard-d": "offline", "shard-e": "draining"}[s]
path = write(os.path.join(T, "leaky.json"), ketama.dumps(leaky) + "\n")
rc, out, _ = check_receipt(BIN, path)
doc = parse_line(out) or {"issues": []}
F.check(rc == 2 and "placement_online: %s: ch-001 shard: shard-d is offline, not online" % B
        in doc["issues"], "offline shards in the ring are caught", out)

# VNODES divided by the number of shards (seed failure 2): 160/5 = 32 points per shard.
div = ketama.receipt(ketama.Ring("sha1", 32, __import__("sgtest").golden_shards()), B,
                     golden()["placements"])
div["ring"]["vnodes"] = 160
path = write(os.path.join(T, "divided.json"), ketama.dumps(div) + "\n")
rc, out, _ = check_receipt(BIN, path)
doc = parse_line(out) or {"issues": []}
F.check(rc == 2 and "vnodes_total: %s: ring.vnodes_total: expected 480, got 96" % B
        in doc["issues"], "VNODES divided by shard count is caught", out)

# --- receipt version 2 (docs/contract.md §5): the epoch key after batch_id ------------------
EPOCH = "f60a5fb19effc4cfa95aed0af45997f72905f6ae"  # docs/contract.md §7, the worked example
F.check(ketama.epoch_id(ketama.contract(), __import__("sgtest").golden_shards()) == EPOCH,
        "the test-side epoch id of the worked example is the golden one")
V2 = ketama.to_v2(golden(), EPOCH)
V2_TEXT = ketama.dumps(V2) + "\n"
GOLDEN_V2 = GOLDEN.replace(".receipt.json", ".receipt.v2.json")
if os.path.exists(GOLDEN_V2):  # written by the gateway (receipt version 2)
    with open(GOLDEN_V2, encoding="utf-8") as f:
        F.check(f.read() == V2_TEXT, "tests/golden v2 = the v1 golden with version 2 and its epoch")
rc, out, err = check_receipt(BIN, write(os.path.join(T, "v2.json"), V2_TEXT))
F.check(rc == 0 and out == '{"status":"pass","checks":93,"receipts":1,"issues":[]}\n',
        "golden v2 receipt passes with 93 checks (92 + epoch)", "rc=%d out=%r err=%r" % (rc, out, err))


def v2_case(name, alter, issue):
    r = deep(V2)
    alter(r)
    path = write(os.path.join(T, "v2-%s.json" % name), ketama.dumps(r) + "\n")
    rc, out, err = check_receipt(BIN, path)
    doc = parse_line(out)
    F.check(rc == 2 and doc is not None and issue in doc["issues"],
            "v2 %s -> exit 2 + %r" % (name, issue), "rc=%d out=%s err=%s" % (rc, out, err))


v2_case("other-epoch", t_set(("epoch",), "0" * 40),
        "epoch: %s: epoch: expected %s, got %s" % (B, EPOCH, "0" * 40))
v2_case("no-epoch", lambda r: r.pop("epoch"), "schema: %s: $.epoch: missing (receipt_version 2)" % B)
v2_case("epoch-not-string", t_set(("epoch",), 7), "schema: %s: $.epoch: must be a string" % B)
v2_case("epoch-out-of-order", lambda r: r.update({k: r.pop(k) for k in ["batch_id"]}),
        "schema: %s: $: key epoch out of order (expected batch_id)" % B)
v2_case("version-1-with-epoch", t_set(("receipt_version",), 1), "schema: %s: $.epoch: unknown key" % B)
# the files health reads name another epoch (a capacity changed: same ring, other epoch)
cap = __import__("sgtest").golden_shards()
cap[0]["capacity"] = 21
shards_cap = write(os.path.join(T, "capacity21.json"), ketama.dumps({"shards": cap}) + "\n")
rc, out, err = check_receipt(BIN, write(os.path.join(T, "v2.json"), V2_TEXT), shards=shards_cap)
doc = parse_line(out)
F.check(rc == 2 and doc is not None and doc["issues"] == [
    "epoch: %s: epoch: expected %s, got %s" % (B, ketama.epoch_id(ketama.contract(), cap), EPOCH),
    "shard_capacity: %s: shards.shard-a.capacity: expected 21, got 20" % B,
    "capacity: %s: capacity: expected 61 (sum over online shards), got 60" % B],
        "v2 receipt against files of another epoch (capacity 21): epoch and capacity issues",
        "rc=%d out=%s" % (rc, out))

# --- a Maglev table's receipt (docs/contract.md §11): the worked example's batch ------------
MAGLEV_DIR = os.path.join(os.path.dirname(GOLDEN), "..", "cases", "valid", "maglev")
MAGLEV_CONF = os.path.join(MAGLEV_DIR, "dispatch.env")
with open(os.path.join(MAGLEV_DIR, "stdout"), encoding="utf-8") as f:
    MAGLEV = __import__("json").loads(f.read())
rc, out, err = check_receipt(BIN, os.path.join(MAGLEV_DIR, "stdout"), conf=MAGLEV_CONF)
F.check(rc == 0 and out == '{"status":"pass","checks":76,"receipts":1,"issues":[]}\n',
        "the maglev receipt passes with 76 checks", "rc=%d out=%r err=%r" % (rc, out, err))
MAGLEV_CASES = [
    ("slot", t_pl("ch-001", "slot", 3878),
     "placement_point: %s: ch-001 slot: expected 3877, got 3878" % B),
    ("shard", t_pl("ch-002", "shard", "shard-b"),
     "placement_shard: %s: ch-002 shard: expected shard-a, got shard-b" % B),
    ("reason", t_pl("ch-003", "reason", "ring"),
     "placement_reason: %s: ch-003 reason: expected table, got ring" % B),
    ("table", t_set(("ring", "table"), 65521),
     "ring_contract: %s: ring.table: expected 65537, got 65521" % B),
    ("ring-id", t_set(("ring", "id"), RID),
     "ring_id: %s: ring.id: expected 6ac599c206403d194aed12bdc90b2c1a939520a4, got %s"
     % (B, RID)),
    ("load", t_set(("shards", "shard-b", "load"), 15),
     "shard_load: %s: shards.shard-b.load: expected 16 (sum of sizes), got 15" % B),
    ("schema-point", lambda r: pl(r, "ch-001").update(point=1),
     "schema: %s: placements[0].point: unknown key" % B),
]
for name, alter, issue in MAGLEV_CASES:
    r = deep(MAGLEV)
    alter(r)
    path = write(os.path.join(T, "maglev-%s.json" % name), ketama.dumps(r) + "\n")
    rc, out, err = check_receipt(BIN, path, conf=MAGLEV_CONF)
    doc = parse_line(out)
    F.check(rc == 2 and doc is not None and issue in doc["issues"],
            "maglev tamper %s -> exit 2 + %r" % (name, issue), "rc=%d out=%s err=%s" % (rc, out, err))
# The same receipt judged against the ketama contract, and the ketama one against the table's.
rc, out, _ = check_receipt(BIN, os.path.join(MAGLEV_DIR, "stdout"))
doc = parse_line(out) or {"issues": []}
F.check(rc == 2 and "ring_contract: %s: ring.algorithm: expected ketama, got maglev" % B
        in doc["issues"], "a maglev receipt under a ketama contract fails", out)
rc, out, _ = check_receipt(BIN, GOLDEN, conf=MAGLEV_CONF)
doc = parse_line(out) or {"issues": []}
F.check(rc == 2 and "ring_contract: %s: ring.algorithm: expected maglev, got ketama" % B
        in doc["issues"], "a ketama receipt under a maglev contract fails", out)

# --- a jump table's receipt (docs/contract.md §10): the same batch over 65,536 slots --------
JUMP_DIR = os.path.join(os.path.dirname(GOLDEN), "..", "cases", "valid", "jump")
JUMP_CONF = os.path.join(JUMP_DIR, "dispatch.env")
with open(os.path.join(JUMP_DIR, "stdout"), encoding="utf-8") as f:
    JUMP = __import__("json").loads(f.read())
rc, out, err = check_receipt(BIN, os.path.join(JUMP_DIR, "stdout"), conf=JUMP_CONF)
F.check(rc == 0 and out == '{"status":"pass","checks":76,"receipts":1,"issues":[]}\n',
        "the jump receipt passes with 76 checks", "rc=%d out=%r err=%r" % (rc, out, err))
JUMP_CASES = [
    ("slot", t_pl("ch-001", "slot", 64188),
     "placement_point: %s: ch-001 slot: expected 64189, got 64188" % B),
    ("shard", t_pl("ch-002", "shard", "shard-b"),
     "placement_shard: %s: ch-002 shard: expected shard-a, got shard-b" % B),
    ("table", t_set(("ring", "table"), 65537),
     "ring_contract: %s: ring.table: expected 65536, got 65537" % B),
    ("algorithm", t_set(("ring", "algorithm"), "maglev"),
     "ring_contract: %s: ring.algorithm: expected jump, got maglev" % B),
    ("ring-id", t_set(("ring", "id"), RID),
     "ring_id: %s: ring.id: expected 5dd228263b4173b279cf2d0f5f03652e48a84322, got %s"
     % (B, RID)),
    ("load", t_set(("shards", "shard-a", "load"), 16),
     "shard_load: %s: shards.shard-a.load: expected 17 (sum of sizes), got 16" % B),
]
for name, alter, issue in JUMP_CASES:
    r = deep(JUMP)
    alter(r)
    path = write(os.path.join(T, "jump-%s.json" % name), ketama.dumps(r) + "\n")
    rc, out, err = check_receipt(BIN, path, conf=JUMP_CONF)
    doc = parse_line(out)
    F.check(rc == 2 and doc is not None and issue in doc["issues"],
            "jump tamper %s -> exit 2 + %r" % (name, issue), "rc=%d out=%s err=%s" % (rc, out, err))
rc, out, _ = check_receipt(BIN, os.path.join(JUMP_DIR, "stdout"), conf=MAGLEV_CONF)
doc = parse_line(out) or {"issues": []}
F.check(rc == 2 and "ring_contract: %s: ring.algorithm: expected maglev, got jump" % B
        in doc["issues"], "a jump receipt under a maglev contract fails", out)

# --- the test hook: with the criteria table emptied nothing can pass ----------------------
r = golden()
t_pl("ch-003", "shard", "shard-b")(r)
path = write(os.path.join(T, "tampered-empty.json"), ketama.dumps(r) + "\n")
hook = {"SHARDGATE_HEALTH_TEST_EMPTY_CRITERIA": "1"}
rc, out, err = check_receipt(BIN, path, env_extra=hook)
F.check(rc == 2 and out == '{"status":"fail","checks":0,"receipts":1,"issues":["no checks ran"]}\n',
        "emptied criteria: tampered receipt fails with 'no checks ran'", "rc=%d out=%r" % (rc, out))
rc, out, err = check_receipt(BIN, GOLDEN, env_extra=hook)
F.check(rc == 2 and '"no checks ran"' in out, "emptied criteria: golden receipt fails too",
        "rc=%d out=%r" % (rc, out))

F.exit()
