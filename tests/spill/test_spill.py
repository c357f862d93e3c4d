#!/usr/bin/env python3
"""The spill policy (docs/contract.md §9): the worked example's golden receipts, the
no-room refusal (exit 2 / 422 with the receipt), non-online shards never taking a spill, and
loads that start at 0 for every batch (two batches through the real `shardgate serve`).

The goldens are made by the gateway itself: tests/golden/spill/regen.sh BUILD_DIR rewrites
them (after a change of the receipt's form); their placements and loads are asserted here
value by value too, so a regenerated golden that moved a placement still fails.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, case, eq, ok, read, run, run_gateway, src, tmpdir, write  # noqa: E402


def g(*parts):
    return src("tests", "golden", "spill", *parts)


def dispatch(conf, shards, batch):
    return run_gateway("dispatch", "--conf", conf, "--shards", shards, "--batch", batch)


def probe(conf, shards, receipt, batch=None):
    args = [sys.executable, src("client", "probe.py"), "--conf", conf, "--shards", shards,
            "--receipt", receipt] + (["--batch", batch] if batch else [])
    return run(args)


def health(conf, shards, receipt):
    r = run([sgtest.HEALTH, "check", "--conf", conf, "--shards", shards, "--receipt", receipt])
    return r.returncode, json.loads(r.stdout)


def placement(receipt, change_id):
    return next(p for p in receipt["placements"] if p["id"] == change_id)


@case("golden")
def spill_worked_example_golden_bytes():
    r = dispatch(g("dispatch.env"), g("shards.json"), src("input", "changes.json"))
    eq((r.returncode, r.stderr), (0, ""), "dispatch exit and stderr")
    eq(r.stdout.encode(), read(g("spill-0001.receipt.json")), "receipt bytes")
    doc = json.loads(r.stdout)
    # ch-007 (size 6) finds shard-c with room 3: the walk meets shard-b (room 1) at two
    # points, then shard-a at vnode 72 with load 8 + 6 = 14 <= 14.
    eq(placement(doc, "ch-007"), {"id": "ch-007", "key": "invoice:8", "size": 6,
                                  "hash": 340884089, "point": 363320547, "vnode": 72,
                                  "shard": "shard-a", "reason": "spill", "home": "shard-c"},
       "ch-007 spilled")
    eq(list(placement(doc, "ch-007")), ["id", "key", "size", "hash", "point", "vnode", "shard",
                                        "reason", "home"], "home follows reason")
    eq([p["id"] for p in doc["placements"] if "home" in p], ["ch-007"], "only ch-007 has home")
    eq({k: (v["load"], v["received"]) for k, v in doc["shards"].items()},
       {"shard-a": (14, 3), "shard-b": (6, 2), "shard-c": (4, 3), "shard-d": (0, 0),
        "shard-e": (0, 0)}, "loads")
    eq(doc["counts"], {"changes": 8, "dispatched": 8, "over_capacity_shards": 0, "spilled": 1},
       "counts, spilled last")
    eq(doc["ok"], True, "ok")


@case("golden")
def spill_worked_example_verified_by_probe_and_health():
    receipt = g("spill-0001.receipt.json")
    p = probe(g("dispatch.env"), g("shards.json"), receipt, src("input", "changes.json"))
    eq((p.returncode, p.stdout), (0, "RESULT: OK\n"), "probe")
    rc, verdict = health(g("dispatch.env"), g("shards.json"), receipt)
    eq((rc, verdict["status"], verdict["issues"]), (0, "pass", []), "health")


@case("golden")
def no_room_receipt_printed_exit_2():
    r = dispatch(g("dispatch.env"), g("shards-noroom.json"), src("input", "changes.json"))
    eq((r.returncode, r.stderr), (2, ""), "dispatch exit and stderr")
    eq(r.stdout.encode(), read(g("noroom-0001.receipt.json")), "receipt bytes")
    doc = json.loads(r.stdout)
    # ch-007 (6) has room nowhere (a 0, b 1, c 2): rule 3 keeps it home, shard-c over capacity.
    eq(placement(doc, "ch-007")["shard"], "shard-c", "ch-007 stays home")
    eq(placement(doc, "ch-007")["reason"], "ring", "rule 1's reason")
    ok("home" not in placement(doc, "ch-007"), "no home key when nothing had room")
    # ch-008 (1): home shard-c is over capacity; the walk passes shard-c's own next point
    # (32748901) and takes shard-b at 33273757 with 6 + 1 = 7 <= 7.
    eq(placement(doc, "ch-008"), {"id": "ch-008", "key": "user:7", "size": 1,
                                  "hash": 27024618, "point": 33273757, "vnode": 62,
                                  "shard": "shard-b", "reason": "spill", "home": "shard-c"},
       "ch-008 spilled")
    eq(doc["counts"], {"changes": 8, "dispatched": 8, "over_capacity_shards": 1, "spilled": 1},
       "counts")
    eq((doc["shards"]["shard-c"]["load"], doc["shards"]["shard-c"]["over_capacity"], doc["ok"]),
       (9, True, False), "shard-c over capacity, not ok")


@case("golden")
def no_room_receipt_probe_ok_health_refuses_it_as_accepted():
    receipt = g("noroom-0001.receipt.json")
    p = probe(g("dispatch.env"), g("shards-noroom.json"), receipt)
    eq((p.returncode, p.stdout), (0, "RESULT: OK\n"), "probe: the placements are right")
    rc, verdict = health(g("dispatch.env"), g("shards-noroom.json"), receipt)
    eq((rc, verdict["issues"]), (2, [
        "capacity_policy: sample-0001: counts.over_capacity_shards: 1 shard(s) over capacity in "
        "an accepted batch under DISPATCH_CAPACITY_POLICY=spill"]), "health: never journaled")


@case("golden")
def report_on_the_same_shards_has_no_spill_keys():
    conf = write(os.path.join(tmpdir(), "report.env"),
                 read(g("dispatch.env"), "r").replace("=spill", "=report"))
    r = dispatch(conf, g("shards.json"), src("input", "changes.json"))
    doc = json.loads(r.stdout)
    eq(r.returncode, 2, "shard-c over capacity under report")
    eq(placement(doc, "ch-007")["shard"], "shard-c", "no spill under report")
    eq([p for p in doc["placements"] if "home" in p or p["reason"] == "spill"], [], "no home")
    eq(list(doc["counts"]), ["changes", "dispatched", "over_capacity_shards"], "no spilled")


@case("rules")
def exact_fits_fill_every_shard_with_a_draining_shard_first():
    """The mutation gate's spill scenario (ops/negative.py): ch-007 and ch-009 spill, each an
    exact fit, every online shard ends exactly full, and shard-0 (draining, first in id order,
    so ring and membership indexes differ) receives nothing."""
    d = tmpdir()
    doc = json.loads(read(g("shards.json")))
    doc["shards"].insert(0, {"id": "shard-0", "state": "draining", "capacity": 20})
    shards = write(os.path.join(d, "s.json"), json.dumps(doc))
    batch = json.loads(read(src("input", "changes.json")))
    batch["batch_id"] = "spill-1"
    batch["changes"][7]["size"] = 3
    batch["changes"].append({"id": "ch-009", "key": "user:7", "size": 1})
    batch_path = write(os.path.join(d, "b.json"), json.dumps(batch))
    r = dispatch(g("dispatch.env"), shards, batch_path)
    eq(r.returncode, 0, "dispatch exit")
    out = json.loads(r.stdout)
    eq([(p["id"], p["shard"], p["point"], p["vnode"], p.get("home")) for p in out["placements"]
        if p["reason"] == "spill"],
       [("ch-007", "shard-a", 363320547, 72, "shard-c"),
        ("ch-009", "shard-b", 33273757, 62, "shard-c")], "the two spills")
    eq({k: (v["load"], v["capacity"]) for k, v in out["shards"].items()},
       {"shard-0": (0, 20), "shard-a": (14, 14), "shard-b": (7, 7), "shard-c": (6, 6),
        "shard-d": (0, 20), "shard-e": (0, 20)}, "every online shard exactly full")
    receipt = write(os.path.join(d, "r.json"), r.stdout)
    eq(probe(g("dispatch.env"), shards, receipt, batch_path).stdout, "RESULT: OK\n", "probe")
    eq(health(g("dispatch.env"), shards, receipt)[1]["issues"], [], "health")


def tampered(edit):
    """The spill golden receipt after edit(doc), written compactly; returns its path."""
    doc = json.loads(read(g("spill-0001.receipt.json")))
    edit(doc)
    return write(os.path.join(tmpdir(), "t.json"), json.dumps(doc, separators=(",", ":")) + "\n")


def drop_home(doc):
    del placement(doc, "ch-007")["home"]


def add_home(doc):
    placement(doc, "ch-001")["home"] = "shard-c"


def move_spill(doc):
    p = placement(doc, "ch-007")
    p.update(point=346138349, vnode=128, shard="shard-b")  # shard-b, which had no room
    doc["shards"]["shard-a"]["load"] -= 6
    doc["shards"]["shard-b"]["load"] += 6


@case("verifiers")
def health_names_each_spill_fault():
    cases = [
        (drop_home, ["placement_reason: sample-0001: ch-007 home: expected shard-c, got none"]),
        (add_home, ["placement_reason: sample-0001: ch-001 home: expected no home (the change "
                    "did not spill), got shard-c"]),
        (lambda d: d["counts"].update(spilled=2),
         ["counts: sample-0001: counts.spilled: expected 1, got 2"]),
        (lambda d: d["counts"].pop("spilled"),
         ["counts: sample-0001: counts.spilled: expected 1, got none"]),
        (lambda d: placement(d, "ch-007").update(reason="ring"),
         ["placement_reason: sample-0001: ch-007 reason: expected spill, got ring"]),
    ]
    for edit, issues in cases:
        rc, verdict = health(g("dispatch.env"), g("shards.json"), tampered(edit))
        eq((rc, verdict["issues"]), (2, issues), "health on %s" % getattr(edit, "__name__", "")
           or issues[0])
    rc, verdict = health(g("dispatch.env"), g("shards.json"), tampered(move_spill))
    eq((rc, sorted(verdict["issues"])), (2, sorted([
        "placement_point: sample-0001: ch-007 point: expected 363320547, got 346138349",
        "placement_vnode: sample-0001: ch-007 vnode: expected 72, got 128",
        "placement_shard: sample-0001: ch-007 shard: expected shard-a, got shard-b",
        "shard_load: sample-0001: shards.shard-a.load: expected 14 (sum of sizes), got 8",
        "shard_load: sample-0001: shards.shard-b.load: expected 6 (sum of sizes), got 12"])),
       "health on a spill moved to a shard without room")


@case("verifiers")
def health_refuses_spill_keys_under_report():
    conf = write(os.path.join(tmpdir(), "report.env"),
                 read(g("dispatch.env"), "r").replace("=spill", "=report"))
    rc, verdict = health(conf, g("shards.json"), g("spill-0001.receipt.json"))
    ok(rc == 2 and "counts: sample-0001: counts.spilled: expected none (policy report), got 1"
       in verdict["issues"], "health: %r" % verdict["issues"])


@case("verifiers")
def probe_names_each_spill_fault():
    p = probe(g("dispatch.env"), g("shards.json"), tampered(drop_home))
    eq((p.returncode, p.stdout.splitlines()[:2]),
       (1, ["RESULT: BAD (1 mismatches)", "placements[6].home: expected shard-c actual <missing>"]),
       "probe without home")
    p = probe(g("dispatch.env"), g("shards.json"), tampered(move_spill))
    eq((p.returncode, p.stdout.splitlines()[0]), (1, "RESULT: BAD (5 mismatches)"), "probe moved")
    ok("placements[6].shard: expected shard-a actual shard-b" in p.stdout, p.stdout)


def tiny_online_big_others(d):
    """Online shards of capacity 2 and 3 next to draining and offline shards of huge capacity."""
    shards = [{"id": "on-1", "state": "online", "capacity": 2},
              {"id": "dr-1", "state": "draining", "capacity": 10 ** 9},
              {"id": "on-2", "state": "online", "capacity": 3},
              {"id": "off-1", "state": "offline", "capacity": 10 ** 9},
              {"id": "dr-2", "state": "draining", "capacity": 10 ** 9}]
    return write(os.path.join(d, "shards.json"), json.dumps({"shards": shards}))


@case("rules")
def draining_and_offline_shards_never_take_a_spill():
    d = tmpdir()
    shards = tiny_online_big_others(d)
    changes = [{"id": "c%d" % i, "key": "k:%d" % i, "size": 1} for i in range(8)]
    batch = write(os.path.join(d, "b.json"), json.dumps({"batch_id": "b", "changes": changes}))
    r = dispatch(g("dispatch.env"), shards, batch)
    doc = json.loads(r.stdout)
    eq(r.returncode, 2, "5 units of room for 8 changes: refused")
    eq({s: (v["load"], v["received"]) for s, v in doc["shards"].items() if s[:2] != "on"},
       {"dr-1": (0, 0), "dr-2": (0, 0), "off-1": (0, 0)}, "non-online shards untouched")
    eq(sorted({p["shard"] for p in doc["placements"]}), ["on-1", "on-2"], "only online shards")
    eq((doc["shards"]["on-1"]["load"] + doc["shards"]["on-2"]["load"], doc["counts"]["spilled"]
        > 0), (8, True), "every change on an online shard, some spilled")
    path = write(os.path.join(d, "r.json"), r.stdout)
    eq(probe(g("dispatch.env"), shards, path, batch).stdout, "RESULT: OK\n", "probe agrees")


@case("rules")
def size_zero_spills_only_off_an_over_capacity_home():
    d = tmpdir()
    shards = write(os.path.join(d, "s.json"), json.dumps({"shards": [
        {"id": "a", "state": "online", "capacity": 0},
        {"id": "b", "state": "online", "capacity": 0}]}))
    batch = write(os.path.join(d, "b.json"), json.dumps({"batch_id": "z", "changes": [
        {"id": "z0", "key": "k0", "size": 0}, {"id": "big", "key": "k1", "size": 1},
        {"id": "z1", "key": "k1", "size": 0}]}))
    doc = json.loads(dispatch(g("dispatch.env"), shards, batch).stdout)
    eq(placement(doc, "z0")["reason"] in ("ring", "wrap"), True, "0 <= 0: stays home")
    home = placement(doc, "big")["shard"]
    eq("home" in placement(doc, "big"), False, "no room anywhere: home, over capacity")
    z1 = placement(doc, "z1")
    eq((z1["reason"], z1["home"], z1["shard"] != home), ("spill", home, True),
       "size 0 leaves the over-capacity home for the other shard (0 + 0 <= 0)")


def spill_batch(batch_id):
    """Six changes whose sizes fill the three online shards of shards.json (capacity 27) so
    that the same spills happen in every batch that starts from zero loads."""
    return {"batch_id": batch_id, "changes": json.load(open(src("input", "changes.json")))[
        "changes"]}


@case("serve")
def serve_loads_start_at_zero_for_every_batch():
    with Server(conf=g("dispatch.env"), shards=g("shards.json")) as s:
        first = s.post(spill_batch("first"), headers={"Idempotency-Key": "first"})
        second = s.post(spill_batch("second"), headers={"Idempotency-Key": "second"})
        eq((first.status, second.status), (200, 200), "both accepted")
        golden = json.loads(read(g("spill-0001.receipt.json")))
        for resp, bid in ((first, "first"), (second, "second")):
            doc = resp.json()
            eq(doc["batch_id"], bid, "batch id")
            eq(doc["placements"], golden["placements"], "%s: the golden placements" % bid)
            eq(doc["counts"], golden["counts"], "%s: counts" % bid)
        sgtest.health_check(s.state_dir, conf=g("dispatch.env"), shards=g("shards.json"))


@case("serve")
def serve_restart_replays_spill_receipts_into_the_same_totals():
    d = tmpdir()
    s = Server(state_dir=d, conf=g("dispatch.env"), shards=g("shards.json"))
    with s:
        eq(s.post(spill_batch("one"), headers={"Idempotency-Key": "one"}).status, 200, "one")
        before = s.shard_totals()
    # shard-a took ch-007 from shard-c: the totals count the spill where it landed.
    eq(before, {"shard-a": [14, 3], "shard-b": [6, 2], "shard-c": [4, 3], "shard-d": [0, 0],
                "shard-e": [0, 0]}, "totals after one spill batch")
    with Server(state_dir=d, conf=g("dispatch.env"), shards=g("shards.json")) as again:
        eq(again.shard_totals(), before, "the same totals from the journal after a restart")
        replay = again.post(spill_batch("one"), headers={"Idempotency-Key": "one"})
        eq((replay.status, replay.headers.get("idempotent-replayed")), (200, "true"), "replayed")


@case("serve")
def serve_no_room_is_422_with_the_receipt_and_nothing_journaled():
    with Server(conf=g("dispatch.env"), shards=g("shards-noroom.json")) as s:
        before = read(os.path.join(s.state_dir, "journal.jsonl"))
        batch = json.loads(read(src("input", "changes.json")))
        r = s.post(batch, headers={"Idempotency-Key": "sample-0001"})
        eq(r.status, 422, "refused")
        doc = r.json()
        eq(list(doc), ["error", "receipt"], "error, then the receipt")
        eq(doc["error"], {"code": "over_capacity", "path": "",
                          "message": "refused under DISPATCH_CAPACITY_POLICY=spill: shard-c "
                                     "load 9 > capacity 5;"}, "error")
        eq(r.body, b'{"error":' + json.dumps(doc["error"], separators=(",", ":")).encode()
           + b',"receipt":' + read(g("noroom-0001.receipt.json")).rstrip(b"\n") + b"}\n",
           "body bytes: the receipt is the golden no-room receipt")
        eq(read(os.path.join(s.state_dir, "journal.jsonl")), before, "journal untouched")
        eq(s.get("/v1/batches/sample-0001").status, 404, "nothing stored")


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("shardgate", "health", "source")))
