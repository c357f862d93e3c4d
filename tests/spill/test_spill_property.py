#!/usr/bin/env python3
"""Spill property test (docs/contract.md §9): over seeded random contracts, memberships and
batches under DISPATCH_CAPACITY_POLICY=spill, the gateway's receipt equals the probe's
independent recomputation byte for byte and shardgate-health passes it, and the receipt keeps
the rule's invariants (home only and always on a spilled placement, never the shard itself,
counts.spilled, nothing on a shard that is not online, exit 2 exactly when not ok).

Small rounds check all three; every tenth round is large (hundreds of shards x 160 points,
2,000 changes, most shards full) so the gateway's walk crosses many blocks of its tree: there
the health service is the oracle (the probe's point-by-point walk would take minutes).
SPILL_SEED=<n> and SPILL_ROUNDS=<n> rerun a draw; a failing round keeps its inputs.
"""

import json
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import case, eq, ok, run, run_gateway, tmpdir, write  # noqa: E402

ROUNDS = int(os.environ.get("SPILL_ROUNDS", "200"))
SEED = int(os.environ.get("SPILL_SEED", "20261201"))
CAPACITIES = [0, 0, 1, 2, 3, 5, 8, 13, 40, 10 ** 6]
STATES = ["online"] * 5 + ["draining", "offline"]


def membership(rng, n, capacities):
    shards = []
    for i in range(n):
        s = {"id": "s%d-%s" % (i, rng.choice(["a", "B", "z.9", "q:1"])),
             "state": rng.choice(STATES), "capacity": rng.choice(capacities)}
        if rng.random() < 0.3:
            s["weight"] = rng.randint(1, 3)
        shards.append(s)
    if not any(s["state"] == "online" for s in shards):
        shards[rng.randrange(n)]["state"] = "online"
    rng.shuffle(shards)
    return {"shards": shards}


def size(rng):
    return rng.choice([0, 1, 1, 2, 3, 5, 8]) if rng.random() < 0.9 else rng.randint(9, 60)


def draw(rng, round_no):
    """(contract text, membership, batch, large)."""
    large = round_no % 10 == 9
    vnodes = 160 if large else rng.choice([1, 2, 3, 8, 40, 160])
    digest = rng.choice(["sha1", "md5"])
    conf = ("DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=%d\nDISPATCH_RING_HASH=%s\n"
            "DISPATCH_CAPACITY_POLICY=spill\n" % (vnodes, digest))
    caps = [0] * 6 + [1, 2, 5, 10 ** 6] if large else CAPACITIES
    members = membership(rng, rng.randint(150, 400) if large else rng.randint(1, 40), caps)
    n = 2000 if large else rng.randint(1, 80)
    changes = [{"id": "c%d" % i, "key": "k%d:%d" % (round_no, rng.randrange(10 ** 6)),
                "size": size(rng)} for i in range(n)]
    return conf, members, {"batch_id": "spill-%d" % round_no, "changes": changes}, large


def invariants(doc, members):
    states = {s["id"]: s["state"] for s in members["shards"]}
    spilled = [p for p in doc["placements"] if "home" in p]
    eq([p["id"] for p in doc["placements"] if p["reason"] == "spill"],
       [p["id"] for p in spilled], "home exactly on the placements with reason spill")
    eq([p["id"] for p in spilled if p["home"] == p["shard"] or states[p["home"]] != "online"],
       [], "a spill leaves an online home for another shard")
    eq(doc["counts"]["spilled"], len(spilled), "counts.spilled")
    eq([p["id"] for p in doc["placements"] if states[p["shard"]] != "online"], [],
       "nothing on a shard that is not online")
    eq([s for s, v in doc["shards"].items() if states[s] != "online" and v["received"]], [],
       "non-online shards receive nothing")


def health_verdict(conf, shards, receipt):
    r = run([sgtest.HEALTH, "check", "--conf", conf, "--shards", shards, "--receipt", receipt])
    return r.returncode, json.loads(r.stdout)


def one_round(sg, rng, round_no, d):
    conf_text, members, batch, large = draw(rng, round_no)
    conf = write(os.path.join(d, "c.env"), conf_text)
    shards = write(os.path.join(d, "s.json"), json.dumps(members))
    batch_path = write(os.path.join(d, "b.json"), json.dumps(batch))
    r = run_gateway("dispatch", "--conf", conf, "--shards", shards, "--batch", batch_path,
                    timeout=120)
    ok(r.returncode in (0, 2), "dispatch exit %d: %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    eq(r.returncode == 0, doc["ok"], "exit 0 exactly when ok")
    invariants(doc, members)
    if not large:
        want = sg.receipt.canonical(sg.receipt.expected_receipt(
            sg.contract.load_contract(conf), sg.contract.load_shards(shards), batch["batch_id"],
            batch["changes"], sg.receipt.receipt_version_of(doc)))
        eq(r.stdout, want, "gateway bytes = probe bytes")
    receipt = write(os.path.join(d, "r.json"), r.stdout)
    rc, verdict = health_verdict(conf, shards, receipt)
    # A receipt with a shard over capacity is refused, never journaled: health says so, and
    # only so.
    want_issues = [] if doc["ok"] else ["capacity_policy"]
    eq((rc == 0, sorted({i.split(":")[0] for i in verdict["issues"]})),
       (doc["ok"], want_issues), "health verdict")
    return doc["counts"]["spilled"], not doc["ok"], large


@case("property")
def gateway_probe_and_health_agree_on_random_spill_batches():
    sg = sgtest.client_package()
    rng = random.Random(SEED)
    tally = {"spilled": 0, "refused": 0, "large": 0}
    d = tmpdir()
    for round_no in range(ROUNDS):
        try:
            spilled, refused, large = one_round(sg, rng, round_no, d)
        except sgtest.Failure as e:
            kept = tempfile.mkdtemp(prefix="shardgate-spill-fail-%d-" % round_no)
            shutil.copytree(d, kept, dirs_exist_ok=True)
            raise sgtest.Failure("round %d (SPILL_SEED=%d, inputs in %s): %s"
                                 % (round_no, SEED, kept, e))
        tally["spilled"] += spilled
        tally["refused"] += refused
        tally["large"] += large
    print("seed %d: %d rounds, %d spilled placements, %d refused, %d large"
          % (SEED, ROUNDS, tally["spilled"], tally["refused"], tally["large"]))
    ok(tally["spilled"] > 1000 and tally["refused"] > 10, "the draws exercise spills and refusals")


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("shardgate", "health", "source")))
