#!/usr/bin/env python3
"""`client/probe.py chain` (docs/contract.md §7, docs/journal.md §2, docs/tools.md §2): OK on a
multi-epoch journal built here (epoch ids computed by this file, rings and receipts by
tests/health/ketama.py), and BAD with the exact line for each broken chain rule."""

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "health"))
import ketama  # noqa: E402
from sgtest import (Server, batch, case, eq, ok, run, run_gateway, src, tmpdir,  # noqa: E402
                    write, main)

TIME = "2026-12-01T03:29:18.123Z"
CONTRACT_ORDER = ("DISPATCH_HASH_RING", "DISPATCH_VNODES", "DISPATCH_RING_HASH",
                  "DISPATCH_CAPACITY_POLICY")


def base_shards():
    with open(src("input", "shards.json"), encoding="utf-8") as f:
        shards = json.load(f)["shards"]
    return sorted(({"id": s["id"], "state": s["state"], "capacity": s["capacity"],
                    "weight": s.get("weight", 1)} for s in shards), key=lambda s: s["id"].encode())


def epoch_of(contract, shards):
    """docs/contract.md §7, written out here rather than taken from the probe."""
    text = "shardgate-epoch\n" + "".join("%s=%s\n" % (k, contract[k]) for k in CONTRACT_ORDER)
    text += "".join("%s %s %d %d\n" % (s["id"], s["state"], s["capacity"], s["weight"])
                    for s in sorted(shards, key=lambda s: s["id"].encode()))
    return hashlib.sha1(text.encode()).hexdigest()


class Journal:
    """Builds a journal record by record, keeping the chain's links right unless told not to."""

    def __init__(self):
        self.lines, self.epochs, self.seq, self.prev = [], [], 0, None

    def epoch(self, shards, source="start", contract=None, **override):
        contract = contract or ketama.contract()
        ring = ketama.Ring(contract["DISPATCH_RING_HASH"], contract["DISPATCH_VNODES"], shards)
        rec = {"type": "epoch", "epoch": epoch_of(contract, shards),
               "epoch_seq": len(self.epochs) + 1, "prev": self.prev, "source": source,
               "time": TIME, "first_seq": self.seq + 1, "ring_id": ring.ring_id(),
               "contract": contract, "shards": shards}
        rec.update(override)
        self.epochs.append((rec["epoch"], ring, contract, shards))
        self.prev = rec["epoch"]
        self.lines.append(ketama.dumps(rec))
        return rec["epoch"]

    def legacy_epoch(self, shards):
        ring = ketama.Ring("sha1", 160, shards)
        self.lines.append(ketama.dumps(ketama.epoch_record(ring, ketama.contract())))
        self.epochs.append((epoch_of(ketama.contract(), shards), ring, ketama.contract(), shards))
        self.prev = self.epochs[-1][0]

    def receipt(self, epoch_index=-1, version=2, edit=None, seq=None):
        epoch, ring, _, _ = self.epochs[epoch_index]
        self.seq = seq or self.seq + 1
        changes = [{"id": "c%d" % i, "key": "k:%d:%d" % (self.seq, i), "size": i % 4}
                   for i in range(6)]
        r = ketama.receipt(ring, "b-%d" % self.seq, changes)
        if version == 2:
            r = dict([("receipt_version", 2), ("batch_id", r["batch_id"]), ("epoch", epoch)]
                     + [(k, v) for k, v in r.items() if k not in ("receipt_version", "batch_id")])
        if edit:
            edit(r)
        self.lines.append('{"type":"receipt","seq":%d,"fingerprint":"%s","receipt":%s}'
                          % (self.seq, ketama.fingerprint(r), ketama.dumps(r)))

    def write(self, tail=""):
        return write(os.path.join(tmpdir(), "journal.jsonl"),
                     "".join(l + "\n" for l in self.lines) + tail)


def probe_chain(path):
    return run([sys.executable, src("client", "probe.py"), "chain", "--journal", path])


def expect(path, lines, what):
    r = probe_chain(path)
    if not lines:
        eq((r.returncode, r.stdout, r.stderr), (0, "RESULT: OK\n", ""), what)
        return
    want = "RESULT: BAD (%d mismatches)\n" % len(lines) + "".join(l + "\n" for l in lines)
    eq((r.returncode, r.stdout), (1, want), what + " (stderr %r)" % r.stderr)


def d_online(shards):
    return [dict(s, state="online") if s["id"] == "shard-d" else dict(s) for s in shards]


def capacity(shards, shard_id, value):
    return [dict(s, capacity=value) if s["id"] == shard_id else dict(s) for s in shards]


def three_epochs():
    """start -> sighup (shard-d online) -> admin (shard-a capacity 50, the same ring): v2
    receipts on each, one in flight on the epoch before the latest, and a v1 receipt judged
    with the latest record of its ring id (epoch 3's capacities)."""
    j = Journal()
    base = base_shards()
    j.epoch(base)
    j.receipt()
    j.receipt()
    j.epoch(d_online(base), "sighup")
    j.receipt()
    j.receipt(epoch_index=0)
    j.epoch(capacity(d_online(base), "shard-a", 50), "admin")
    j.receipt()
    j.receipt(version=1)
    return j


@case("chain_ok")
def multi_epoch_journal_ok():
    j = three_epochs()
    expect(j.write(), [], "three epochs")
    expect(j.write('{"type":"receipt","seq":7'), [], "an unterminated last line is not judged")
    expect(Journal().write(), [], "an empty journal")


@case("chain_ok")
def legacy_records_then_new_ones_ok():
    """A legacy epoch record and v1 receipts, then a full record numbered 2 linking to it."""
    j = Journal()
    j.legacy_epoch(base_shards())
    j.receipt(version=1)
    j.epoch(d_online(base_shards()), "start")
    j.receipt()
    expect(j.write(), [], "legacy then full")


def broken(build, what, lines):
    expect(build().write(), lines, what)


@case("chain_bad")
def epoch_record_rules():
    base = base_shards()
    e1 = epoch_of(ketama.contract(), base)
    e2 = epoch_of(ketama.contract(), d_online(base))
    ring2 = ketama.Ring("sha1", 160, d_online(base)).ring_id()

    def second(**fields):
        def build():
            override = dict(fields)
            j = Journal()
            j.epoch(base)
            j.receipt()
            j.epoch(d_online(base), override.pop("source", "sighup"), **override)
            return j
        return build

    broken(second(epoch="0" * 40), "epoch id", ["line 3: epoch: expected %s actual %s"
                                                % (e2, "0" * 40)])
    broken(second(ring_id="1" * 40), "ring id", ["line 3: ring_id: expected %s actual %s"
                                                 % (ring2, "1" * 40)])
    broken(second(epoch_seq=3), "epoch_seq", ["line 3: epoch_seq: expected 2 actual 3"])
    broken(second(prev=None), "prev", ['line 3: prev: expected "%s" actual null' % e1])
    broken(second(first_seq=1), "first_seq", ["line 3: first_seq: expected 2 actual 1"])
    broken(second(source="cron"), "source",
           ["line 3: source: expected one of start, sighup, admin actual cron"])
    broken(second(time="2026-12-01 03:29:18"), "time",
           ["line 3: time: expected YYYY-MM-DDTHH:MM:SS.mmmZ actual 2026-12-01 03:29:18"])

    def repeated():
        j = Journal()
        j.epoch(base)
        j.epoch(base, "sighup")
        return j
    broken(repeated, "the same epoch twice in a row",
           ["line 2: epoch: expected an epoch other than the previous one actual %s" % e1])


@case("chain_bad")
def receipt_rules():
    base = base_shards()
    e2 = epoch_of(ketama.contract(), d_online(base))

    def naming_a_later_epoch():
        j = Journal()
        j.epoch(base)
        j.epochs.append((e2, None, None, None))  # known to the builder, not yet in the journal
        j.receipt(edit=lambda r: r.update(epoch=e2), epoch_index=0)
        return j
    broken(naming_a_later_epoch, "an epoch not recorded before the receipt",
           ["line 2: receipt.epoch: expected the epoch of an earlier epoch record actual %s" % e2])

    def wrong_ring_for_epoch():
        j = Journal()
        e1 = j.epoch(base)
        j.epoch(d_online(base), "sighup")
        j.receipt(edit=lambda r: r.update(epoch=e1))  # placed on epoch 2's ring, names epoch 1
        return j
    out = probe_chain(wrong_ring_for_epoch().write()).stdout.splitlines()
    eq((out[0][:13], out[1].split(" actual ")[0]),
       ("RESULT: BAD (",
        "line 3: receipt.ring.id: expected ce0ad72e7a89a4843f1199a33e0c83fcba059cfc"),
       "a receipt judged with the ring of the epoch it names")

    def capacities_of_another_epoch():
        j = Journal()
        j.epoch(base)
        j.epoch(capacity(base, "shard-a", 50), "admin")
        j.receipt(epoch_index=0, edit=lambda r: r["shards"]["shard-a"].update(capacity=50))
        return j
    broken(capacities_of_another_epoch, "capacities of an epoch it does not name",
           ["line 3: receipt.shards.shard-a.capacity: expected 20 actual 50"])

    def v1_unknown_ring():
        j = Journal()
        j.epoch(base)
        j.receipt(version=1, edit=lambda r: r["ring"].update(id="2" * 40))
        return j
    broken(v1_unknown_ring, "a v1 receipt on a ring never recorded",
           ["line 2: receipt.ring.id: expected the ring of an earlier epoch record actual "
            + "2" * 40])

    def seq_gap():
        j = Journal()
        j.epoch(base)
        j.receipt()
        j.receipt(seq=3)
        return j
    broken(seq_gap, "a seq gap", ["line 3: seq: expected 2 actual 3"])


@case("chain_serve")
def serve_journal_over_two_memberships_ok():
    """The real gateway: batches on the worked example, a restart with shard-d online (a new
    epoch record), more batches; probe chain says OK, and shardgate plan --journal counts every
    placement the gateway journaled."""
    state = tmpdir()
    d_online_path = os.path.join(HERE, "shards-d-online.json")
    posted = 0
    for shards, n in ((src("input", "shards.json"), 3), (d_online_path, 2)):
        with Server(state_dir=state, shards=shards) as server:
            for i in range(n):
                b = batch("serve-%d" % posted, n=5)
                r = server.post(b, headers={"Idempotency-Key": b["batch_id"]})
                eq(r.status, 200, "POST %s" % b["batch_id"])
                posted += 1
    journal = os.path.join(state, "journal.jsonl")
    expect(journal, [], "a journal written by shardgate serve")
    with open(journal, "rb") as f:
        kinds = [json.loads(l)["type"] for l in f.read().splitlines()]
    eq(kinds, ["epoch"] + ["receipt"] * 3 + ["epoch"] + ["receipt"] * 2, "record types")
    r = run_gateway("plan", "--conf", src("conf", "dispatch.env"), "--shards",
                    src("input", "shards.json"), "--to", d_online_path, "--journal", journal)
    eq(r.returncode, 0, "plan --journal (stderr %r)" % r.stderr)
    eq(json.loads(r.stdout)["journal"]["changes"], 25, "every journaled placement counted")
    ok(os.path.getsize(journal) > 0, "journal left in place")


@case("chain_bad")
def unreadable_and_usage():
    missing = os.path.join(tmpdir(), "none.jsonl")
    r = probe_chain(missing)
    eq((r.returncode, r.stdout, r.stderr),
       (2, "", "chain: journal: %s: cannot read: No such file or directory\n" % missing),
       "missing journal")
    r = run([sys.executable, src("client", "probe.py"), "chain"])
    eq(r.returncode, 64, "no --journal")
    j = three_epochs()
    j.lines.insert(1, "{nope")
    j.lines.insert(2, '{"type":"other"}')
    out = probe_chain(j.write()).stdout
    eq(out.splitlines()[1:3], ["line 2: $: expected a JSON record actual not JSON",
                               "line 3: type: expected epoch or receipt actual other"],
       "lines that are not records")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "source")))
