#!/usr/bin/env python3
"""The movement plan (docs/contract.md §8, docs/tools.md §1, §2): `shardgate plan` against a
golden file, against `client/probe.py plan` byte for byte on random membership pairs, against
1,000,000 sampled keys placed by a third ring (tests/health/ketama.py), its journal counts, and
its exit codes and messages."""

import bisect
import hashlib
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "health"))
import ketama  # noqa: E402
from sgtest import (Server, case, eq, ok, post_batches, run, run_gateway, src, tmpdir, write,  # noqa: E402
                    main)

SPACE = 2**32
D_ONLINE = os.path.join(HERE, "shards-d-online.json")


def c_plan(*args):
    return run_gateway("plan", *args)


def probe_plan(*args):
    env = dict(os.environ)
    env.pop("SHARDGATE_CONF", None)
    return run([sys.executable, src("client", "probe.py"), "plan"] + list(args), env=env)


def both(*args):
    """Runs the C plan and the probe's; asserts the same exit, stdout and stderr."""
    c, p = c_plan(*args), probe_plan(*args)
    eq((p.returncode, p.stdout, p.stderr), (c.returncode, c.stdout, c.stderr),
       "probe plan == shardgate plan for %s" % " ".join(args))
    return c


def plan_ok(*args):
    r = both(*args)
    eq(r.returncode, 0, "plan exit (stderr %r)" % r.stderr)
    return json.loads(r.stdout)


def check_sums(plan, what):
    """Pairs sum to moved_points; before and after each sum to 2^32; the fraction's text."""
    eq(sum(p["moved_points"] for p in plan["pairs"]), plan["moved_points"], what + ": pairs sum")
    eq(sum(s["before"] for s in plan["shards"]), SPACE, what + ": before sums to 2^32")
    eq(sum(s["after"] for s in plan["shards"]), SPACE, what + ": after sums to 2^32")
    ok(all(p["moved_points"] > 0 and p["from"] != p["to"] for p in plan["pairs"]),
       what + ": only non-zero pairs between distinct shards")
    keys = [(p["from"].encode(), p["to"].encode()) for p in plan["pairs"]]
    eq(keys, sorted(set(keys)), what + ": pairs sorted by from then to, each once")
    lost = sum(max(0, s["before"] - s["after"]) for s in plan["shards"])
    eq(plan["minimum_points"], lost, what + ": minimum_points, what the losing shards lose")
    ok(plan["minimum_points"] <= plan["moved_points"], what + ": the minimum is no more than moved")
    eq(plan["minimum_fraction"], float("%.9f" % (lost / SPACE)), what + ": minimum_fraction")


def conf_text(hash_name="sha1", vnodes=160):
    return ketama.contract_text(ketama.contract(hash_name, vnodes))


@case("plan_golden")
def worked_example_shard_d_online():
    """tests/golden/plan-shard-d-online.json: only shard-d gains, and it gains what moved."""
    r = both("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
             "--to", D_ONLINE)
    eq(r.returncode, 0, "exit")
    with open(src("tests", "golden", "plan-shard-d-online.json"), encoding="utf-8") as f:
        eq(r.stdout, f.read(), "the golden plan, byte for byte")
    plan = json.loads(r.stdout)
    check_sums(plan, "golden")
    eq(plan["from_epoch"], "f60a5fb19effc4cfa95aed0af45997f72905f6ae", "from_epoch (docs/contract.md §7)")
    eq(plan["from_ring"], "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc", "from_ring (docs/contract.md §6)")
    with open(D_ONLINE, encoding="utf-8") as f:
        to = json.load(f)["shards"]
    eq(plan["to_ring"], ketama.Ring("sha1", 160, to).ring_id(), "to_ring")
    eq({p["to"] for p in plan["pairs"]}, {"shard-d"}, "every moved value goes to shard-d")
    d = [s for s in plan["shards"] if s["id"] == "shard-d"][0]
    eq((d["before"], d["after"]), (0, plan["moved_points"]), "shard-d before/after")
    eq(plan["moved_fraction"], float("%.9f" % (plan["moved_points"] / SPACE)), "fraction")
    eq((plan["minimum_points"], plan["minimum_fraction"]), (938094517, 0.218417150),
       "adding a shard, ketama moves only what it must")


def check_ranges(plan, what):
    """The ranges ascend, never overlap, are maximal (a neighbour differs in its pair or is not
    adjacent), and sum to moved_points; each pair's ranges sum to its count."""
    ranges = plan["ranges"]
    ok(all(0 <= r["lo"] < r["hi"] <= SPACE and r["from"] != r["to"] for r in ranges),
       what + ": each range [lo, hi) within the hash space, between two shards")
    ok(all(a["hi"] <= b["lo"] for a, b in zip(ranges, ranges[1:])), what + ": ascending, disjoint")
    ok(all(a["hi"] < b["lo"] or (a["from"], a["to"]) != (b["from"], b["to"])
           for a, b in zip(ranges, ranges[1:])), what + ": maximal")
    eq(sum(r["hi"] - r["lo"] for r in ranges), plan["moved_points"], what + ": sum to moved")
    per_pair = {}
    for r in ranges:
        per_pair[(r["from"], r["to"])] = per_pair.get((r["from"], r["to"]), 0) + r["hi"] - r["lo"]
    eq(per_pair, {(p["from"], p["to"]): p["moved_points"] for p in plan["pairs"]},
       what + ": the ranges of each pair sum to its moved_points")


@case("plan_golden")
def ranges_hold_exactly_the_keys_that_move():
    """--ranges (docs/contract.md §8): for the worked example with shard-d online and with
    shard-a at weight 3 and shard-b offline, the gateway and the probe list the same ranges, and
    for 200,000 random keys, placed by tests/health/ketama.py's ring, a key's hash lies in a
    listed range exactly when its shard changes, going from and to the range's shards."""
    tmp = tmpdir()
    with open(src("input", "shards.json"), encoding="utf-8") as f:
        base = json.load(f)["shards"]
    other = [dict(s) for s in base]
    other[0]["weight"], other[1]["state"] = 3, "offline"
    other_path = write(os.path.join(tmp, "other.json"), json.dumps({"shards": other}))
    with open(D_ONLINE, encoding="utf-8") as f:
        d_online = json.load(f)["shards"]
    for name, to, to_path in (("shard-d online", d_online, D_ONLINE),
                              ("weight and offline", other, other_path)):
        plan = plan_ok("--conf", src("conf", "dispatch.env"), "--shards",
                       src("input", "shards.json"), "--to", to_path, "--ranges")
        check_sums(plan, name)
        check_ranges(plan, name)
        ring_a, ring_b = ketama.Ring("sha1", 160, base), ketama.Ring("sha1", 160, to)
        los = [r["lo"] for r in plan["ranges"]]
        rng = random.Random(5)
        for _ in range(200000):
            h = rng.getrandbits(32)
            k = bisect.bisect_right(los, h) - 1
            inside = plan["ranges"][k] if k >= 0 and h < plan["ranges"][k]["hi"] else None
            a, b = ring_a.lookup(h)[1], ring_b.lookup(h)[1]
            if (a != b) != (inside is not None) or (inside and (inside["from"], inside["to"]) != (a, b)):
                eq((h, a, b, inside), (h, a, b, "a range iff the owner changes"), name)
    plan = plan_ok("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
                   "--to", D_ONLINE)
    ok("ranges" not in plan, "no ranges without --ranges")


@case("plan_golden")
def weight_change_moves_more_than_the_minimum():
    """shard-a at weight 3: ketama adds shard-a's points and moves exactly what shard-a gains,
    the minimum; with shard-b offline as well, shard-c hands arcs to shard-a while it takes
    some of shard-b's, more than the new shares require (docs/contract.md §8)."""
    tmp = tmpdir()
    with open(src("input", "shards.json"), encoding="utf-8") as f:
        base = json.load(f)["shards"]
    heavy = [dict(s) for s in base]
    heavy[0]["weight"] = 3
    plan = plan_ok("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
                   "--to", write(os.path.join(tmp, "heavy.json"), json.dumps({"shards": heavy})))
    check_sums(plan, "weight 3")
    eq(plan["minimum_points"], plan["moved_points"], "weight up: only what shard-a gains moves")
    heavy[1]["state"] = "offline"
    plan = plan_ok("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
                   "--to", write(os.path.join(tmp, "both.json"), json.dumps({"shards": heavy})))
    check_sums(plan, "weight 3 and shard-b offline")
    ok(plan["minimum_points"] < plan["moved_points"],
       "shard-c both gives and takes: %d < %d"
       % (plan["minimum_points"], plan["moved_points"]))


def sampled_fraction(conf_a, shards_a, conf_b, shards_b, n, seed):
    """The fraction of n random keys (random bytes, the contract's key hash) whose shard
    differs, placed by tests/health/ketama.py's ring (neither the gateway's nor the probe's)."""
    ring_a = ketama.Ring(conf_a[0], conf_a[1], shards_a)
    ring_b = ketama.Ring(conf_b[0], conf_b[1], shards_b)
    rng = random.Random(seed)
    moved = 0
    for _ in range(n):
        key = rng.getrandbits(96).to_bytes(12, "little")
        ha = int.from_bytes(hashlib.new(conf_a[0], key).digest()[:4], "little")
        hb = ha if conf_b[0] == conf_a[0] else int.from_bytes(
            hashlib.new(conf_b[0], key).digest()[:4], "little")
        moved += ring_a.lookup(ha)[1] != ring_b.lookup(hb)[1]
    return moved / n


@case("plan_sampled")
def one_million_sampled_keys_agree():
    """moved_fraction within 0.003 of 1,000,000 sampled keys: shard-d online, and a weight and
    state change on the worked example. Bounded: under 30 s."""
    tmp = tmpdir()
    with open(src("input", "shards.json"), encoding="utf-8") as f:
        base = json.load(f)["shards"]
    with open(D_ONLINE, encoding="utf-8") as f:
        d_online = json.load(f)["shards"]
    other = [dict(s) for s in base]
    other[0]["weight"], other[2]["state"], other[4]["state"] = 3, "draining", "online"
    other_path = write(os.path.join(tmp, "other.json"), json.dumps({"shards": other}))
    started = time.monotonic()
    for name, to, to_path, n in (("shard-d online", d_online, D_ONLINE, 600000),
                                 ("weight and states", other, other_path, 400000)):
        plan = plan_ok("--conf", src("conf", "dispatch.env"), "--shards",
                       src("input", "shards.json"), "--to", to_path)
        sampled = sampled_fraction(("sha1", 160), base, ("sha1", 160), to, n, 12)
        ok(abs(sampled - plan["moved_fraction"]) <= 0.003,
           "%s: sampled %.6f vs moved_fraction %s" % (name, sampled, plan["moved_fraction"]))
    ok(time.monotonic() - started < 30, "1,000,000 samples within 30 s")


def random_membership(rng, n):
    states = ("online", "online", "online", "draining", "offline")
    shards = [{"id": "s%02d-%s" % (i, rng.choice("abcxyz")), "state": rng.choice(states),
               "capacity": rng.randrange(0, 1000), "weight": rng.randrange(1, 5)}
              for i in range(n)]
    shards[rng.randrange(n)]["state"] = "online"
    return shards


def mutate(rng, shards, kind):
    """A new membership from `shards` by one kind of change; at least one shard stays online."""
    new = [dict(s) for s in shards]
    if kind == "add":
        new.append({"id": "new-%d" % rng.randrange(1000), "state": "online", "capacity": 5,
                    "weight": rng.randrange(1, 4)})
    elif kind == "remove" and len(new) > 1:
        new.pop(rng.randrange(len(new)))
    elif kind == "weight":
        rng.choice(new)["weight"] = rng.randrange(1, 8)
    elif kind == "state":
        rng.choice(new)["state"] = rng.choice(("online", "draining", "offline"))
    elif kind == "capacity":
        for s in new:
            s["capacity"] = rng.randrange(0, 1000)
    if not any(s["state"] == "online" for s in new):
        new[0]["state"] = "online"
    rng.shuffle(new)
    return new


KINDS = ("add", "remove", "weight", "state", "capacity", "vnodes", "md5")


@case("plan_random")
def c_plan_equals_probe_plan_on_random_pairs():
    """56 random pairs (8 of each kind): same bytes from C and the probe, every other one with
    its ranges; the sums hold; capacity-only changes move 0 points and keep the ring."""
    rng = random.Random(20261201)
    tmp = tmpdir()
    for i in range(56):
        kind = KINDS[i % len(KINDS)]
        hash_name = "md5" if kind == "md5" else "sha1"
        vnodes = rng.randrange(1, 200)
        a = random_membership(rng, rng.randrange(1, 12))
        b = mutate(rng, a, rng.choice(KINDS[:4]) if kind in ("vnodes", "md5") else kind)
        conf_a = write(os.path.join(tmp, "a%d.env" % i), conf_text(hash_name, vnodes))
        conf_b = write(os.path.join(tmp, "b%d.env" % i), conf_text(
            hash_name, rng.randrange(1, 200) if kind == "vnodes" else vnodes))
        pa = write(os.path.join(tmp, "a%d.json" % i), json.dumps({"shards": a}))
        pb = write(os.path.join(tmp, "b%d.json" % i), json.dumps({"shards": b}))
        ranges = ("--ranges",) if i % 2 else ()
        plan = plan_ok("--conf", conf_a, "--shards", pa, "--to", pb, "--to-conf", conf_b, *ranges)
        check_sums(plan, "pair %d (%s)" % (i, kind))
        if ranges:
            check_ranges(plan, "pair %d (%s)" % (i, kind))
        if kind == "capacity":
            eq((plan["moved_points"], plan["pairs"], plan["moved_fraction"]), (0, [], 0.0),
               "pair %d: a capacity-only change moves nothing" % i)
            eq(plan["to_ring"], plan["from_ring"], "pair %d: same ring" % i)


def maglev_text(table, hash_name="sha1", algorithm="maglev"):
    key = "DISPATCH_JUMP_SLOTS" if algorithm == "jump" else "DISPATCH_MAGLEV_TABLE"
    return ("DISPATCH_HASH_RING=%s\n%s=%d\nDISPATCH_RING_HASH=%s\n"
            "DISPATCH_CAPACITY_POLICY=report\n" % (algorithm, key, table, hash_name))


@case("plan_maglev")
def maglev_plans_count_slots():
    """Two Maglev or two jump tables of one size (docs/contract.md §11, §10): 24 random pairs,
    the same bytes from C and the probe, every other one with its ranges; the plan names its
    slots, before and after each sum to them, the ranges are slots that moved and sum to
    moved_points; a shard added to a jump table takes slots from the others and no other slot
    moves; the worked example's table to shard s1 draining and s3 added moves 7 of 13 slots. A
    table and a ketama ring, tables of two algorithms or of two sizes, have no plan: exit 2 with
    one message from both."""
    rng = random.Random(20261207)
    tmp = tmpdir()
    for i in range(24):
        algorithm = ("maglev", "jump")[i % 2]
        table = rng.choice((13, 251, 65537) if algorithm == "maglev" else (1, 16, 1000, 65536))
        hash_name = rng.choice(("sha1", "md5"))
        a = random_membership(rng, rng.randrange(1, 12))
        b = mutate(rng, a, KINDS[i // 2 % 4])
        conf = write(os.path.join(tmp, "m%d.env" % i), maglev_text(table, hash_name, algorithm))
        pa = write(os.path.join(tmp, "ma%d.json" % i), json.dumps({"shards": a}))
        pb = write(os.path.join(tmp, "mb%d.json" % i), json.dumps({"shards": b}))
        if not any(s["state"] == "online" for s in a) or not any(
                s["state"] == "online" for s in b):
            continue
        ranges = ("--ranges",) if i // 2 % 2 else ()
        plan = plan_ok("--conf", conf, "--shards", pa, "--to", pb, *ranges)
        what = "%s pair %d" % (algorithm, i)
        eq(plan["slots"], table, what + ": slots")
        eq(sum(x["before"] for x in plan["shards"]), table, what + ": before sums to the slots")
        eq(sum(x["after"] for x in plan["shards"]), table, what + ": after sums to the slots")
        eq(sum(x["moved_points"] for x in plan["pairs"]), plan["moved_points"], what + ": pairs")
        eq(plan["moved_fraction"], float("%.9f" % (plan["moved_points"] / table)), what)
        if ranges:
            eq(sum(r["hi"] - r["lo"] for r in plan["ranges"]), plan["moved_points"],
               what + ": ranges sum to the moved slots")
            ok(all(0 <= r["lo"] < r["hi"] <= table for r in plan["ranges"]), what + ": in range")
    conf = write(os.path.join(tmp, "m13.env"), maglev_text(13))
    s_a = write(os.path.join(tmp, "s-a.json"), json.dumps({"shards": [
        {"id": i, "state": "online", "capacity": 1} for i in ("s2", "s0", "s1")]}))
    s_b = write(os.path.join(tmp, "s-b.json"), json.dumps({"shards": [
        {"id": "s2", "state": "online", "capacity": 1}, {"id": "s0", "state": "online",
         "capacity": 1}, {"id": "s1", "state": "draining", "capacity": 1},
        {"id": "s3", "state": "online", "capacity": 1}]}))
    plan = plan_ok("--conf", conf, "--shards", s_a, "--to", s_b, "--ranges")
    eq((plan["moved_points"], plan["minimum_points"], len(plan["ranges"])), (7, 4, 7),
       "the worked example's table, s1 draining and s3 added")
    eq(plan["ranges"][0], {"lo": 1, "hi": 2, "from": "s0", "to": "s3"}, "its first range")
    s_c = write(os.path.join(tmp, "s-c.json"), json.dumps({"shards": [
        {"id": i, "state": "online", "capacity": 1} for i in ("s2", "s0", "s1", "s3")]}))
    jump = write(os.path.join(tmp, "j4096.env"), maglev_text(4096, "sha1", "jump"))
    plan = plan_ok("--conf", jump, "--shards", s_a, "--to", s_c, "--ranges")
    eq({(r["to"]) for r in plan["ranges"]}, {"s3"}, "jump: a shard added only takes slots")
    eq(plan["moved_points"], plan["minimum_points"], "jump: adding a shard moves the minimum")
    message = ("plan: no plan between two algorithms or between tables of two sizes: their "
               "places share no unit of the hash space (docs/contract.md §11)\n")
    others = (src("conf", "dispatch.env"), write(os.path.join(tmp, "m17.env"), maglev_text(17)),
              write(os.path.join(tmp, "j13.env"), maglev_text(13, "sha1", "jump")))
    for to_conf in others:
        for args in (("--conf", conf, "--to-conf", to_conf), ("--conf", to_conf, "--to-conf", conf)):
            r = both(*args, "--shards", s_a, "--to", s_b)
            eq((r.returncode, r.stdout, r.stderr), (2, "", message), " ".join(args))
    r = both("--conf", jump, "--to-conf", others[2], "--shards", s_a, "--to", s_b)
    eq((r.returncode, r.stdout, r.stderr), (2, "", message), "jump tables of two sizes")


def dispatch_journal(tmp, batches):
    """A journal of receipt records whose receipts `shardgate dispatch` printed (the worked
    example's contract and membership), after the epoch record of that membership."""
    base = ketama.Ring("sha1", 160, json.load(open(src("input", "shards.json")))["shards"])
    lines = [ketama.dumps(ketama.epoch_record(base, ketama.contract()))]
    for seq, b in enumerate(batches, 1):
        path = write(os.path.join(tmp, "batch%d.json" % seq), json.dumps(b))
        r = run_gateway("dispatch", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--batch", path)
        # 2: over a capacity of 20, which DISPATCH_CAPACITY_POLICY=report still journals
        ok(r.returncode in (0, 2) and r.stdout, "dispatch %d: %r" % (seq, r))
        receipt = json.loads(r.stdout)
        lines.append('{"type":"receipt","seq":%d,"fingerprint":"%s","receipt":%s}'
                     % (seq, ketama.fingerprint(receipt), r.stdout.rstrip("\n")))
    return "".join(l + "\n" for l in lines)


def expected_journal_block(batches, ring_a, ring_b):
    changes = [c for b in batches for c in b["changes"]]
    moved = [c for c in changes if ring_a.lookup(ketama.key_hash("sha1", c["key"]))[1]
             != ring_b.lookup(ketama.key_hash("sha1", c["key"]))[1]]
    return {"changes": len(changes), "moved_changes": len(moved),
            "moved_load": sum(c["size"] for c in moved)}


@case("plan_journal")
def journal_counts_dispatch_receipts():
    """--journal counts every placement of every receipt record: the keys whose shard differs
    and their sizes, checked against tests/health/ketama.py's rings; an unterminated last line
    is not counted."""
    tmp = tmpdir()
    rng = random.Random(7)
    batches = [{"batch_id": "b-%d" % i, "changes": [
        {"id": "c%d" % j, "key": "k:%d:%d" % (i, j), "size": rng.randrange(0, 9)}
        for j in range(rng.randrange(1, 40))]} for i in range(12)]
    text = dispatch_journal(tmp, batches)
    journal = write(os.path.join(tmp, "journal.jsonl"), text + '{"type":"receipt","seq":13')
    base = json.load(open(src("input", "shards.json")))["shards"]
    to = json.load(open(D_ONLINE))["shards"]
    want = expected_journal_block(batches, ketama.Ring("sha1", 160, base),
                                  ketama.Ring("sha1", 160, to))
    ok(0 < want["moved_changes"] < want["changes"], "some keys move, not all: %r" % want)
    plan = plan_ok("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
                   "--to", D_ONLINE, "--journal", journal)
    eq(plan["journal"], want, "journal block")
    eq(list(plan), ["from_epoch", "to_epoch", "from_ring", "to_ring", "moved_points",
                    "moved_fraction", "minimum_points", "minimum_fraction", "pairs", "shards",
                    "journal"], "key order")
    empty = write(os.path.join(tmp, "empty.jsonl"), "")
    plan = plan_ok("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
                   "--to", D_ONLINE, "--journal", empty)
    eq(plan["journal"], {"changes": 0, "moved_changes": 0, "moved_load": 0}, "empty journal")


@case("plan_journal")
def journal_of_a_rotated_state_dir_checked_line_by_line():
    """--journal reads the state dir of J as `journal verify` does (docs/journal.md §8): every
    sealed segment present, then J, so a rotated state dir counts all its receipts; a line of a
    checked segment whose crc32 fails is exit 2 naming its file and line, in both
    implementations, never counted."""
    import sgtest
    d = tmpdir()
    batches = []
    with sgtest.Server(state_dir=d, args=["--segment-bytes", "65536"]) as s:
        for i in range(30):
            b = sgtest.batch("r-%d" % i, n=40)
            eq(s.post(b).status, 200, "POST r-%d" % i)
            batches.append(b)
        eq(s.stop(), 0, "clean stop")
    sealed = sorted(f for f in os.listdir(d) if f.startswith("journal-"))
    ok(len(sealed) >= 2, "rotated: %r" % sealed)
    base = json.load(open(src("input", "shards.json")))["shards"]
    to = json.load(open(D_ONLINE))["shards"]
    args = ("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
            "--to", D_ONLINE, "--journal", os.path.join(d, "journal.jsonl"))
    eq(plan_ok(*args)["journal"],
       expected_journal_block(batches, ketama.Ring("sha1", 160, base),
                              ketama.Ring("sha1", 160, to)), "every segment counted")
    path = os.path.join(d, sealed[0])
    data = read_bytes(path)
    at = data.index(b'"batch_id":"r-3"')
    write(path, (data[:at] + b'"batch_id":"r-9"' + data[at + 16:]).decode())
    number = data[:at].count(b"\n") + 1
    r = both(*args)
    eq((r.returncode, r.stdout, r.stderr),
       (2, "", "plan: journal: %s:%d: crc32: checksum mismatch\n" % (path, number)),
       "a damaged line is refused")


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


@case("plan_journal")
def journal_spills_under_a_spill_contract():
    """With a spill contract on the to side, the journal block ends with `spilled`: each
    receipt's changes replayed in order on the to ring with loads from 0 (docs/contract.md §9).
    The worked example on shard-c with capacity 5: ch-002 (2), ch-005 (1) fit, ch-007 (6) spills,
    ch-008 (1) fits again: one per batch, so two batches give 2 (loads carried over would give
    more)."""
    tmp = tmpdir()
    example = json.load(open(src("input", "changes.json")))
    batches = [dict(example, batch_id="s-1"), dict(example, batch_id="s-2")]
    journal = write(os.path.join(tmp, "journal.jsonl"), dispatch_journal(tmp, batches))
    doc = json.load(open(src("input", "shards.json")))
    for s in doc["shards"]:
        if s["id"] == "shard-c":
            s["capacity"] = 5
    to = write(os.path.join(tmp, "to.json"), json.dumps(doc))
    spill_conf = write(os.path.join(tmp, "spill.env"), open(src("conf", "dispatch.env")).read()
                       .replace("DISPATCH_CAPACITY_POLICY=report", "DISPATCH_CAPACITY_POLICY=spill"))
    args = ("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
            "--to", to, "--journal", journal)
    plan = plan_ok(*(args + ("--to-conf", spill_conf)))
    eq(plan["journal"], {"changes": 16, "moved_changes": 0, "moved_load": 0, "spilled": 2},
       "journal block under spill")
    eq(plan["moved_points"], 0, "a capacity change moves no hash value")
    plan = plan_ok(*args)
    eq(list(plan["journal"]), ["changes", "moved_changes", "moved_load"],
       "no spilled key when the to contract's policy is not spill")


@case("plan_journal")
def journal_v2_receipts_and_bad_lines():
    """A v2 receipt counts like a v1 one; a complete line that is not a record is exit 2."""
    tmp = tmpdir()
    batches = [{"batch_id": "v2", "changes": [{"id": "c1", "key": "order:1001", "size": 4},
                                             {"id": "c2", "key": "user:42", "size": 2}]}]
    text = dispatch_journal(tmp, batches).replace(
        '"receipt_version":1,"batch_id":"v2",',
        '"receipt_version":2,"batch_id":"v2","epoch":"f60a5fb19effc4cfa95aed0af45997f72905f6ae",')
    journal = write(os.path.join(tmp, "journal.jsonl"), text)
    base = json.load(open(src("input", "shards.json")))["shards"]
    to = json.load(open(D_ONLINE))["shards"]
    plan = plan_ok("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
                   "--to", D_ONLINE, "--journal", journal)
    eq(plan["journal"], expected_journal_block(batches, ketama.Ring("sha1", 160, base),
                                               ketama.Ring("sha1", 160, to)), "v2 journal")
    args = ("--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
            "--to", D_ONLINE, "--journal")
    for line, what in (("{nope", "not JSON"),
                       ('{"type":"other"}', "type: must be epoch or receipt"),
                       ('{"type":"receipt","receipt":{}}',
                        "receipt.placements: must be an array")):
        bad = write(os.path.join(tmp, "bad.jsonl"), text + line + "\n")
        r = both(*(args + (bad,)))
        eq((r.returncode, r.stdout, r.stderr), (2, "", "plan: journal: %s:3: %s\n" % (bad, what)),
           what)
    missing = os.path.join(tmp, "missing.jsonl")
    r = both(*(args + (missing,)))
    eq((r.returncode, r.stderr), (2, "plan: journal: %s: cannot read: No such file or directory\n"
                                  % missing), "missing journal")


@case("plan_exits")
def empty_rings_exit_2():
    tmp = tmpdir()
    none = write(os.path.join(tmp, "none.json"), json.dumps({"shards": [
        {"id": "shard-a", "state": "offline", "capacity": 1}]}))
    conf = src("conf", "dispatch.env")
    for args, which in (((none, D_ONLINE), "from"), ((D_ONLINE, none), "to"),
                        ((none, none), "from")):
        r = both("--conf", conf, "--shards", args[0], "--to", args[1])
        eq((r.returncode, r.stdout, r.stderr),
           (2, "", "plan: %s ring has no online shard\n" % which), "empty %s ring" % which)


@case("plan_exits")
def unusable_inputs_exit_3_with_start_messages():
    tmp = tmpdir()
    bad_conf = write(os.path.join(tmp, "bad.env"), conf_text().replace("160", "0"))
    bad_shards = write(os.path.join(tmp, "bad.json"), '{"shards":[{"id":"a","state":"up",'
                       '"capacity":1}]}')
    conf, shards = src("conf", "dispatch.env"), src("input", "shards.json")
    cases = [
        (("--conf", bad_conf, "--shards", shards, "--to", D_ONLINE),
         'contract: %s:2: DISPATCH_VNODES: "0" is not an integer 1..4096\n' % bad_conf),
        (("--conf", conf, "--shards", shards, "--to", D_ONLINE, "--to-conf", bad_conf),
         'contract: %s:2: DISPATCH_VNODES: "0" is not an integer 1..4096\n' % bad_conf),
        (("--conf", conf, "--shards", bad_shards, "--to", D_ONLINE),
         "shards: %s: shards[0].state: must be one of online, draining, offline\n" % bad_shards),
        (("--conf", conf, "--shards", shards, "--to", bad_shards),
         "shards: %s: shards[0].state: must be one of online, draining, offline\n" % bad_shards),
        (("--shards", shards, "--to", D_ONLINE),
         "contract: no contract file: pass --conf FILE or set SHARDGATE_CONF\n"),
    ]
    for args, message in cases:
        r = both(*args)
        eq((r.returncode, r.stdout, r.stderr), (3, "", message), " ".join(args))


@case("plan_exits")
def usage_exit_64():
    conf, shards = src("conf", "dispatch.env"), src("input", "shards.json")
    for args in (("--conf", conf, "--shards", shards),
                 ("--conf", conf, "--to", D_ONLINE),
                 ("--conf", conf, "--shards", shards, "--to", D_ONLINE, "--bogus")):
        eq(c_plan(*args).returncode, 64, "shardgate plan %s" % " ".join(args))
        eq(probe_plan(*args).returncode, 64, "probe.py plan %s" % " ".join(args))
    r = c_plan("--help")
    eq((r.returncode, r.stdout.splitlines()[0]), (0, "usage: shardgate plan --conf FILE "
       "--shards CURRENT --to NEW [--to-conf FILE]"), "--help")


def both_moves(*args):
    """`shardgate moves` and `probe.py moves`; asserts the same exit, stdout and stderr."""
    c = run_gateway("moves", *args)
    p = run([sys.executable, src("client", "probe.py"), "moves"] + list(args))
    eq((p.returncode, p.stdout, p.stderr), (c.returncode, c.stdout, c.stderr),
       "probe moves == shardgate moves for %s" % " ".join(args))
    return c


def epoch_files(tmp, state):
    """epoch_seq -> (conf path, shards path) of every epoch record of a state dir, written out
    from the records (the repeat after a segment header skipped)."""
    out, after_header = {}, False
    names = sorted(n for n in os.listdir(state) if n.startswith("journal-")) + ["journal.jsonl"]
    for name in names:
        for line in open(os.path.join(state, name), encoding="utf-8"):
            rec = json.loads(line)
            repeat, after_header = after_header, rec["type"] == "segment"
            if rec["type"] != "epoch" or repeat:
                continue
            n = rec["epoch_seq"]
            conf = write(os.path.join(tmp, "e%d.env" % n), "".join(
                "%s=%s\n" % kv for kv in rec["contract"].items()))
            out[n] = (conf, write(os.path.join(tmp, "e%d.json" % n),
                                  json.dumps({"shards": rec["shards"]})))
    return out


@case("plan_moves")
def moves_between_epochs_of_a_journal():
    """`shardgate moves` (docs/tools.md §1.4) on a real gateway's state dir of five epochs (a
    shard added, a weight changed, a switch to jump over 1,000 slots, a shard taken out), with
    segments rotated every 64 KiB so that epoch records repeat after segment headers: for every
    pair of epochs the same bytes from C and the probe, which are `plan --ranges` of the two
    records' files; 3,000 keys each change shard exactly when they lie in a range (ketama) or
    their slot does (jump); an epoch not in the journal, a pair across algorithms and a
    damaged epoch record get one message from both."""
    tmp = tmpdir()
    state = os.path.join(tmp, "state")
    base = json.load(open(src("input", "shards.json")))["shards"]
    s2 = json.loads(json.dumps(base))
    s2[3]["state"] = "online"
    s3 = json.loads(json.dumps(s2))
    s3[0]["weight"] = 3
    s5 = json.loads(json.dumps(s3))
    s5[1]["state"] = "offline"
    jump = write(os.path.join(tmp, "jump.env"), maglev_text(1000, "sha1", "jump"))
    steps = [(None, base), (None, s2), (None, s3), (jump, s3), (jump, s5)]
    for i, (conf, shards) in enumerate(steps):
        path = write(os.path.join(tmp, "s%d.json" % i), json.dumps({"shards": shards}))
        server = Server(state_dir=state, conf=conf, shards=path,
                        args=["--segment-bytes", "65536", "--no-token"]).start()
        try:
            post_batches(server, 12, "e%d-" % i, changes=40)
        finally:
            server.stop()
    ok(len([n for n in os.listdir(state) if n.startswith("journal-")]) >= 3, "segments rotated")
    files = epoch_files(tmp, state)
    eq(sorted(files), [1, 2, 3, 4, 5], "five epochs")
    rng = random.Random(20261208)
    keys = [("k%d" % rng.getrandbits(40)).encode() for _ in range(3000)]
    for a in range(1, 6):
        for b in range(1, 6):
            r = both_moves("--state-dir", state, "--from", str(a), "--to", str(b))
            if (a <= 3) != (b <= 3):
                eq((r.returncode, r.stdout), (2, ""), "%d -> %d: across algorithms" % (a, b))
                continue
            eq(r.returncode, 0, "%d -> %d: %s" % (a, b, r.stderr))
            plan_r = both("--conf", files[a][0], "--to-conf", files[b][0], "--shards",
                          files[a][1], "--to", files[b][1], "--ranges")
            eq(r.stdout, plan_r.stdout, "%d -> %d: the plan of the two records" % (a, b))
            moved = json.loads(r.stdout)["ranges"]
            los = [m["lo"] for m in moved]
            ring_a = probe_ring(files[a])
            ring_b = probe_ring(files[b])
            for key in keys:
                where = (ring_a.slot(key) if hasattr(ring_a, "slot")
                         else ketama.key_hash("sha1", key.decode()))
                i = bisect.bisect_right(los, where) - 1
                inside = i >= 0 and where < moved[i]["hi"]
                eq(inside, ring_a.owner(key) != ring_b.owner(key),
                   "%d -> %d: key %r in a range iff its owner changed" % (a, b, key))
    r = both_moves("--state-dir", state, "--from", "1", "--to", "6")
    eq((r.returncode, r.stdout), (2, ""), "an epoch not in the journal")
    ok("no epoch record with epoch_seq 6" in r.stderr, r.stderr)
    c = run_gateway("moves", "--state-dir", state, "--from", "0", "--to", "1")
    p = run([sys.executable, src("client", "probe.py"), "moves", "--state-dir", state, "--from",
             "0", "--to", "1"])
    eq((c.returncode, p.returncode, c.stdout, p.stdout), (64, 64, "", ""), "usage: --from 0")
    active = os.path.join(state, "journal.jsonl")
    lines = open(active, "rb").read().split(b"\n")
    at = next(i for i, l in enumerate(lines) if l.startswith(b'{"type":"epoch"') and i > 1)
    lines[at] = lines[at].replace(b'"capacity":20', b'"capacity":21', 1)
    write(active, b"\n".join(lines), "wb")
    r = both_moves("--state-dir", state, "--from", "1", "--to", "5")
    eq((r.returncode, r.stdout, r.stderr), (2, "", "moves: journal: %s:%d: crc32: checksum "
                                                   "mismatch\n" % (active, at + 1)),
       "a damaged epoch record")


def probe_ring(files):
    """The probe's ring of an epoch's contract and shards files."""
    sys.path.insert(0, src("client"))
    from shardgate.contract import load_contract, load_shards
    from shardgate.ring import make_ring
    return make_ring(load_contract(files[0]), load_shards(files[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "source")))
