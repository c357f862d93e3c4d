#!/usr/bin/env python3
"""health_journal: whole journals: clean ones pass with an exact check count; seq order,
epochs (ring id, latest = contract, older epochs judged by their own membership), fingerprint,
duplicate batch ids, torn and bad lines, missing or empty journals fail."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Failures, check_journal, deep, golden_shards, journal_text, parse_line, tmpdir,
                    write, changes, checks_per_receipt, checks_per_epoch, CONF, SHARDS)  # noqa: E402
import ketama  # noqa: E402

BIN = sys.argv[1]
F = Failures()
T = tmpdir()
C = ketama.contract()
SH = golden_shards()
RING = ketama.Ring("sha1", 160, SH)


def receipts(ring, n, start_seq=1, per=5, tag="b"):
    out = []
    for i in range(n):
        r = ketama.receipt(ring, "%s-%04d" % (tag, i), changes(per, prefix=tag, seed=i))
        out.append(ketama.receipt_record(start_seq + i, r))
    return out


def jcheck(name, records, conf=CONF, shards=SHARDS, raw=None):
    path = write(os.path.join(T, name + ".jsonl"), raw if raw is not None else journal_text(records))
    rc, out, err = check_journal(BIN, path, conf=conf, shards=shards)
    return rc, out, err, parse_line(out)


def expect_issue(name, records, issue, **kw):
    rc, out, err, doc = jcheck(name, records, **kw)
    F.check(rc == 2 and doc is not None and issue in doc["issues"],
            "%s -> exit 2 + %r" % (name, issue), "rc=%d out=%s err=%s" % (rc, out[:2000], err))
    return doc


# --- clean journal: exact checks --------------------------------------------------------
epoch = ketama.epoch_record(RING, C)
recs = receipts(RING, 20)
rc, out, err, doc = jcheck("clean", [epoch] + recs)
want = 20 * checks_per_receipt(5, 5) + checks_per_epoch() + 1  # + epoch_current
F.check(rc == 0 and out == '{"status":"pass","checks":%d,"receipts":20,"issues":[]}\n' % want,
        "clean journal passes with %d checks" % want, "rc=%d out=%s err=%s" % (rc, out, err))

rc, out, err, doc = jcheck("epoch-only", [epoch])
F.check(rc == 0 and out == '{"status":"pass","checks":6,"receipts":0,"issues":[]}\n',
        "journal with only an epoch passes", out)

# --- seq ------------------------------------------------------------------------------------
bad = deep(recs)
bad[2]["seq"], bad[3]["seq"] = 4, 3
expect_issue("seq-order", [epoch] + bad,
             "journal_seq: b-0003: seq: 3 is not greater than the previous seq 4")
bad = deep(recs)
bad[5]["seq"] = 5
expect_issue("seq-repeat", [epoch] + bad,
             "journal_seq: b-0005: seq: 5 is not greater than the previous seq 5")
bad = deep(recs)
for i, r in enumerate(bad[10:]):
    r["seq"] = 12 + i
expect_issue("seq-gap", [epoch] + bad,
             "journal_seq: b-0010: seq: expected 11, got 12 (receipts missing)")

# --- epochs ---------------------------------------------------------------------------------
bad = deep(recs)
bad[7]["receipt"]["ring"]["id"] = "0" * 40
expect_issue("ring-id-no-epoch", [epoch] + bad,
             "journal_epoch: b-0007: ring.id: %s matches no earlier epoch record" % ("0" * 40))
expect_issue("no-epoch-record", recs,
             "journal_epoch: b-0000: ring.id: no epoch record precedes this receipt")
doc = expect_issue("no-epoch-at-all", recs, "epoch_current: journal: epoch: no epoch record in the journal")

# latest epoch differs from the contract: a journal written with VNODES=80, judged with 160
c80 = ketama.contract(vnodes=80)
r80 = ketama.Ring("sha1", 80, SH)
doc = expect_issue("epoch-vs-contract", [ketama.epoch_record(r80, c80)] + receipts(r80, 3),
                   "epoch_current: journal: epoch@line 1 DISPATCH_VNODES: journal 80, contract 160")
F.check(doc is not None and doc["issues"][0] ==
        "epoch_current: journal: epoch: the latest epoch record (line 1) is %s, the files read "
        "are %s" % (ketama.epoch_id(c80, SH), ketama.epoch_id(C, SH)) and len(doc["issues"]) == 2,
        "epoch-vs-contract: receipts are judged by their own epoch (only the epoch issues)",
        str(doc))
# latest epoch differs in the membership (shard-d online in the journal only)
sh_d = deep(SH)
sh_d[3]["state"] = "online"
rd = ketama.Ring("sha1", 160, sh_d)
expect_issue("epoch-vs-shards", [ketama.epoch_record(rd, C)] + receipts(rd, 2),
             "epoch_current: journal: epoch@line 1 shards.shard-d.state: journal online, "
             "shards file offline")

# membership change: older receipts are judged against their own (recorded) epoch
old = receipts(rd, 5, tag="old")
new = receipts(RING, 5, start_seq=6, tag="new")
two = [ketama.epoch_record(rd, C)] + old + [epoch] + new
rc, out, err, doc = jcheck("two-epochs", two)
want = 10 * checks_per_receipt(5, 5) + 2 * checks_per_epoch() + 1
F.check(rc == 0 and out == '{"status":"pass","checks":%d,"receipts":10,"issues":[]}\n' % want,
        "two epochs: old receipts verified against the old membership", out + err)

# the old epoch's recorded ring id is not what its membership gives
e1 = ketama.epoch_record(rd, C)
forged = "f" * 40
e1["ring_id"] = forged
old_f = deep(old)
for r in old_f:
    r["receipt"]["ring"]["id"] = forged
doc = expect_issue("epoch-ring-id", [e1] + old_f + [epoch] + new,
                   "epoch_ring_id: epoch@line 1: ring_id: expected %s (recomputed from the "
                   "recorded membership), got %s" % (rd.ring_id(), forged))
F.check(doc is not None and "ring_id: old-0000: ring.id: expected %s, got %s" % (rd.ring_id(), forged)
        in doc["issues"], "epoch-ring-id: receipts of the forged epoch fail ring_id too", str(doc))

# a receipt of the old ring journaled after the new epoch (a batch in flight during the switch,
# docs/contract.md §7) is judged against the epoch it names and passes
late = receipts(rd, 1, start_seq=11, tag="late")
rc, out, err, doc = jcheck("earlier-epoch", two + late)
F.check(rc == 0 and doc is not None and doc["checks"] == want + checks_per_receipt(5, 5),
        "earlier-epoch: a late receipt of the old ring is judged by its own epoch", out + err)

# --- the new epoch record form and version-2 receipts (docs/journal.md §2) ------------------
EP = ketama.epoch_id(C, SH)
chain1 = ketama.chain_record(RING, C, 1, None, 1)
v2 = [dict(r, receipt=ketama.to_v2(r["receipt"], EP)) for r in recs]
rc, out, err, doc = jcheck("chain-v2", [chain1] + v2)
want = 20 * checks_per_receipt(5, 5, version=2) + checks_per_epoch(False) + 1
F.check(rc == 0 and out == '{"status":"pass","checks":%d,"receipts":20,"issues":[]}\n' % want,
        "new-form epoch record + v2 receipts pass with %d checks" % want, out + err)
bad = deep(v2)
bad[3]["receipt"]["epoch"] = "e" * 40
expect_issue("v2-unknown-epoch", [chain1] + bad,
             "journal_epoch: b-0003: epoch: %s matches no earlier epoch record" % ("e" * 40))
expect_issue("v2-no-epoch-record", v2,
             "journal_epoch: b-0000: epoch: no epoch record precedes this receipt")
# v1 and v2 receipts, legacy and new records, in one journal
EPD = ketama.epoch_id(C, sh_d)
rd_v2 = [dict(r, receipt=ketama.to_v2(r["receipt"], EPD)) for r in receipts(rd, 5, 6, tag="d")]
mixed = [epoch] + recs[:5] + [ketama.chain_record(rd, C, 2, EP, 6)] + rd_v2
rc, out, err, doc = jcheck("legacy-then-new", mixed, shards=write(
    os.path.join(T, "shards-d.json"), ketama.dumps({"shards": sh_d})))
F.check(rc == 0 and doc is not None and doc["receipts"] == 10,
        "legacy record + v1 receipts, then a new record (epoch_seq 2, prev = the legacy epoch) "
        "+ v2 receipts", out + err)

# --- record facts ---------------------------------------------------------------------------
bad = deep(recs)
fp = bad[4]["fingerprint"]
bad[4]["fingerprint"] = "0" * 64
expect_issue("fingerprint", [epoch] + bad,
             "fingerprint: b-0004: fingerprint: expected %s (canonical batch), got %s" % (fp, "0" * 64))
bad = deep(recs)
bad[6]["receipt"] = deep(bad[1]["receipt"])
bad[6]["fingerprint"] = bad[1]["fingerprint"]
expect_issue("duplicate-batch", [epoch] + bad,
             "journal_batch_unique: b-0001: batch_id: already journaled on line 3")
# a receipt altered inside the journal is judged like a bare one
bad = deep(recs)
p = bad[9]["receipt"]["placements"][2]
p["shard"] = "shard-a" if p["shard"] != "shard-a" else "shard-b"
expect_issue("tampered-inside", [epoch] + bad,
             "placement_shard: b-0009: %s shard: expected %s, got %s"
             % (p["id"], recs[9]["receipt"]["placements"][2]["shard"], p["shard"]))
# keys with control characters and non-ASCII: fingerprint escaping as decisions.md
odd = ketama.receipt(RING, "odd", [{"id": "x\u00e9", "key": "k\n\t\"\\\u0001\u00fc\u4e2d", "size": 3},
                                   {"id": "y", "key": "\u0000", "size": 0}])
rc, out, err, doc = jcheck("odd-keys", [epoch, ketama.receipt_record(1, odd)])
F.check(rc == 0, "keys with escapes and UTF-8 hash and fingerprint like decisions.md", out + err)

# --- lines ----------------------------------------------------------------------------------
text = journal_text([epoch] + recs)
# an unterminated last line may be a group commit in progress: neither judged nor counted,
# reported as pending_tail_bytes (docs/operations.md, "The in-progress tail")
rc, out, err, doc = jcheck("torn-last-line", None, raw=text + '{"type":"receipt","seq":21,')
F.check(rc == 0 and out == '{"status":"pass","checks":%d,"receipts":20,"pending_tail_bytes":27,'
        '"issues":[]}\n' % (20 * checks_per_receipt(5, 5) + checks_per_epoch() + 1),
        "in-progress tail on a clean journal: exit 0, pending_tail_bytes 27", out + err)
bad_tail = deep(recs)
bad_tail[19]["receipt"]["ok"] = False
rc, out, err, doc = jcheck("bad-line-then-tail", None,
                           raw=journal_text([epoch] + bad_tail) + '{"type":"receipt","seq":21,')
F.check(rc == 2 and doc is not None and doc.get("pending_tail_bytes") == 27 and
        "ok: b-0019: ok: expected true, got false" in doc["issues"],
        "in-progress tail after a bad complete line: exit 2 by the complete lines", out + err)
expect_issue("not-json", None, "journal_line: line 3: not JSON: '[' or '{' expected near 'garbage' (column 7)",
             raw=journal_text([epoch, recs[0]]) + "garbage\n" + journal_text(recs[1:]))
expect_issue("unknown-type", None, 'journal_line: line 2: type: must be "epoch" or "receipt"',
             raw=journal_text([epoch, {"type": "note"}]))
rc, out, err, doc = jcheck("empty", None, raw="")
F.check(rc == 2 and doc is not None and doc["issues"] ==
        ["epoch_current: journal: epoch: no epoch record in the journal"],
        "empty journal fails", out)
rc, out, err = check_journal(BIN, os.path.join(T, "nowhere.jsonl"))
F.check(rc == 2 and parse_line(out) is not None and parse_line(out)["issues"] ==
        ["input: journal: %s: cannot open: No such file or directory" % os.path.join(T, "nowhere.jsonl"),
         "no checks ran"], "missing journal -> exit 2", "rc=%d out=%s" % (rc, out))

# capacity policy reject: an accepted receipt over capacity is an issue
cr = ketama.contract(policy="reject")
conf_reject = write(os.path.join(T, "reject.env"), ketama.contract_text(cr))
big = ketama.receipt(RING, "big", [{"id": "a", "key": "order:1001", "size": 50}])
expect_issue("policy-reject", [ketama.epoch_record(RING, cr), ketama.receipt_record(1, big)],
             "capacity_policy: big: counts.over_capacity_shards: 1 shard(s) over capacity in an "
             "accepted batch under DISPATCH_CAPACITY_POLICY=reject", conf=conf_reject)
rc, out, err, doc = jcheck("policy-report", [epoch, ketama.receipt_record(1, big)])
F.check(rc == 0, "over capacity under policy report is a valid receipt (ok false)", out)

F.exit()
