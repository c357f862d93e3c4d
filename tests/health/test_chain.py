#!/usr/bin/env python3
"""health_chain_*: the epoch chain (docs/contract.md §7, docs/journal.md §2,
docs/operations.md §1.3.3). Receipts come from the real `shardgate dispatch` run against
different shards files; epoch records are built here. Each chain rule broken once gives its
exact issue; a receipt is judged against the epoch it names."""
import http.client
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sgtest  # noqa: E402
from sgtest import (case, checks_per_epoch, checks_per_receipt, deep, eq, ok, run_gateway,  # noqa: E402
                    tmpdir, write, CONF, SHARDS)
import ketama  # noqa: E402

C = ketama.contract()
SH_A = json.load(open(SHARDS, encoding="utf-8"))["shards"]  # the worked example
SH_B = [dict(s, state="online") if s["id"] == "shard-d" else s for s in SH_A]  # shard-d joins
SH_CAP = [dict(s, capacity=5) if s["id"] == "shard-a" else s for s in SH_A]  # same ring
E_A, E_B, E_CAP = (ketama.epoch_id(C, s) for s in (SH_A, SH_B, SH_CAP))
RING_A, RING_B = ketama.Ring("sha1", 160, SH_A), ketama.Ring("sha1", 160, SH_B)
T = None


def tdir():
    global T
    if T is None:
        T = tmpdir()
    return T


def shards_file(name, shards):
    return write(os.path.join(tdir(), name + ".json"), ketama.dumps({"shards": shards}) + "\n")


def keys_moving(n):
    """n keys that shard-d takes when it comes online (placed elsewhere by the worked example)."""
    out, i = [], 0
    while len(out) < n:
        key = "move:%d" % i
        h = ketama.key_hash("sha1", key)
        if RING_B.lookup(h)[1] == "shard-d":
            out.append(key)
        i += 1
    return out


def dispatch(batch_id, shards, keys):
    """The receipt `shardgate dispatch` prints for these keys (size 1 each) on `shards`, as
    version 2: the gateway's own when it writes version 2, else its version 1 with the epoch
    of the files inserted after batch_id (docs/contract.md §5)."""
    batch = {"batch_id": batch_id,
             "changes": [{"id": "c%d" % i, "key": k, "size": 1} for i, k in enumerate(keys)]}
    bpath = write(os.path.join(tdir(), batch_id + ".batch.json"), json.dumps(batch))
    spath = shards_file(batch_id + ".shards", shards)
    r = run_gateway("dispatch", "--conf", CONF, "--shards", spath, "--batch", bpath)
    eq(r.returncode, 0, "shardgate dispatch %s exit (%s)" % (batch_id, r.stderr))
    rcpt = json.loads(r.stdout)
    return ketama.to_v2(rcpt, ketama.epoch_id(C, shards))


def epoch_rec(ring, seq, prev, first_seq, source="start"):
    return ketama.chain_record(ring, C, seq, prev, first_seq, source=source)


def journal(records):
    return write(os.path.join(tdir(), "journal.jsonl"), sgtest.journal_text(records))


def check(records, shards=SH_B):
    """Runs `shardgate-health check --journal`; returns (exit code, parsed output)."""
    rc, out, err = sgtest.check_journal(sgtest.HEALTH, journal(records),
                                        shards=shards_file("files", shards))
    doc = sgtest.parse_line(out)
    ok(doc is not None, "check printed one JSON line: %r %r" % (out, err))
    return rc, doc


def rec(seq, rcpt):
    return ketama.receipt_record(seq, rcpt)


_GOOD = None


def good():
    """epoch 1 = the worked example, two receipts; epoch 2 = shard-d online, one receipt, then
    a batch in flight during the switch (named epoch 1, placed on ring A, journaled after
    epoch 2), then one more on epoch 2."""
    global _GOOD
    if _GOOD is None:
        moving = keys_moving(2)
        _GOOD = {
            "r1": dispatch("a-1", SH_A, ["user:42", "order:1001", "cart:9"]),
            "r2": dispatch("a-2", SH_A, ["sku:55", "user:7"]),
            "r3": dispatch("b-1", SH_B, ["order:1002"] + moving),
            "late": dispatch("a-late", SH_A, moving + ["invoice:8"]),
            "r5": dispatch("b-2", SH_B, ["user:842"]),
            "moving": moving,
        }
    g = deep(_GOOD)
    g["records"] = [epoch_rec(RING_A, 1, None, 1), rec(1, g["r1"]), rec(2, g["r2"]),
                    epoch_rec(RING_B, 2, E_A, 3, source="sighup"), rec(3, g["r3"]),
                    rec(4, g["late"]), rec(5, g["r5"])]
    return g


def one_issue(records, issue, shards=SH_B):
    rc, doc = check(records, shards)
    eq((rc, doc["issues"]), (2, [issue]), "exit code and issues")


def has_issue(records, issue, shards=SH_B):
    rc, doc = check(records, shards)
    eq(rc, 2, "exit code")
    ok(issue in doc["issues"], "issue %r not in %r" % (issue, doc["issues"]))
    return doc


# --- receipts judged against the epoch they name -----------------------------------------

@case("epochs")
def good_chain_passes_with_exact_checks():
    g = good()
    # the late batch really would be placed elsewhere by epoch 2: shard-d takes its keys
    ok(all(p["shard"] != "shard-d" for p in g["late"]["placements"][:2]), "late is on ring A")
    rc, doc = check(g["records"])
    n = [len(g[k]["placements"]) for k in ("r1", "r2", "r3", "late", "r5")]
    want = (sum(checks_per_receipt(p, 5, version=2) for p in n) + 2 * checks_per_epoch(False)
            + 1)
    eq((rc, doc), (0, {"status": "pass", "checks": want, "receipts": 5, "issues": []}),
       "a two-epoch chain with a batch in flight during the switch")


@case("epochs")
def receipt_naming_new_epoch_with_old_placements_fails():
    g = good()
    g["records"][5]["receipt"]["epoch"] = E_B  # a batch placed on the old ring after the switch
    c0, c1 = g["late"]["placements"][0], g["late"]["placements"][1]
    doc = has_issue(g["records"], "ring_id: a-late: ring.id: expected %s, got %s"
                    % (RING_B.ring_id(), RING_A.ring_id()))
    for c in (c0, c1):
        ok("placement_shard: a-late: %s shard: expected shard-d, got %s" % (c["id"], c["shard"])
           in doc["issues"], "placement of %s judged on ring B: %r" % (c["id"], doc["issues"]))


@case("epochs")
def v1_receipts_judged_by_ring_id():
    g = good()
    for r in g["records"]:
        if r["type"] == "receipt":
            r["receipt"] = {k: v for k, v in r["receipt"].items() if k != "epoch"}
            r["receipt"]["receipt_version"] = 1
    rc, doc = check(g["records"])
    eq((rc, doc["issues"]), (0, []), "version-1 receipts across two epochs, one in flight")


@case("epochs")
def receipt_naming_unrecorded_epoch():
    g = good()
    g["records"][4]["receipt"]["epoch"] = E_CAP  # same ring as A, capacities never recorded
    has_issue(g["records"], "journal_epoch: b-1: epoch: %s matches no earlier epoch record" % E_CAP)


@case("epochs")
def receipt_before_its_epoch_record():
    g = good()
    r = g["records"]
    r[3], r[4] = r[4], r[3]  # b-1 names epoch 2, journaled before epoch 2's record
    r[3]["seq"], r[4]["first_seq"] = 3, 4
    has_issue(r, "journal_epoch: b-1: epoch: %s matches no earlier epoch record" % E_B)


@case("epochs")
def capacities_come_from_the_named_epoch():
    # epoch 2 changes only shard-a's capacity (5): the ring and ring id stay, the epoch does
    # not; a receipt of epoch 1 loading shard-a with 6 is fine there, over capacity in epoch 2
    ring_cap = ketama.Ring("sha1", 160, SH_CAP)
    keys = [k for k in ("k:%d" % i for i in range(200))
            if RING_A.lookup(ketama.key_hash("sha1", k))[1] == "shard-a"][:6]
    r1 = dispatch("cap-1", SH_A, keys)
    recs = [epoch_rec(RING_A, 1, None, 1), epoch_rec(ring_cap, 2, E_A, 1), rec(1, r1)]
    rc, doc = check(recs, SH_CAP)
    eq((rc, doc["issues"]), (0, []), "judged with epoch 1's capacities")
    recs[2]["receipt"]["epoch"] = E_CAP
    doc = has_issue(recs, "shard_capacity: cap-1: shards.shard-a.capacity: expected 5, got 20",
                    SH_CAP)
    ok("shard_over_capacity: cap-1: shards.shard-a.over_capacity: expected true, got false"
       in doc["issues"], "over capacity in epoch 2: %r" % doc["issues"])


# --- one case per chain rule --------------------------------------------------------------

@case("rules")
def epoch_id_recomputed():
    g = good()
    g["records"][3]["shards"][0]["capacity"] = 21  # the record's epoch no longer names it
    has_issue(g["records"], "epoch_id: epoch@line 4: epoch: expected %s (recomputed from the "
              "recorded contract and shards), got %s"
              % (ketama.epoch_id(C, g["records"][3]["shards"]), E_B))


@case("rules")
def epoch_ring_id_recomputed():
    g = good()
    g["records"][3]["ring_id"] = "f" * 40
    has_issue(g["records"], "epoch_ring_id: epoch@line 4: ring_id: expected %s (recomputed from "
              "the recorded membership), got %s" % (RING_B.ring_id(), "f" * 40))


@case("rules")
def epoch_seq_steps_by_one():
    g = good()
    g["records"][3]["epoch_seq"] = 3
    one_issue(g["records"], "epoch_seq: epoch@line 4: epoch_seq: expected 2, got 3")
    g = good()
    g["records"][0]["epoch_seq"] = 2
    g["records"][3]["epoch_seq"] = 3
    one_issue(g["records"], "epoch_seq: epoch@line 1: epoch_seq: expected 1, got 2")


@case("rules")
def epoch_prev_links():
    g = good()
    g["records"][3]["prev"] = E_CAP
    one_issue(g["records"], "epoch_prev: epoch@line 4: prev: expected %s (the epoch before it), "
              "got %s" % (E_A, E_CAP))
    g = good()
    g["records"][3]["prev"] = None
    one_issue(g["records"], "epoch_prev: epoch@line 4: prev: expected %s (the epoch before it), "
              "got null" % E_A)
    g = good()
    g["records"][0]["prev"] = E_B
    one_issue(g["records"], "epoch_prev: epoch@line 1: prev: expected null (the epoch before "
              "it), got %s" % E_B)


@case("rules")
def consecutive_epochs_differ():
    g = good()
    recs = g["records"][:3] + [epoch_rec(RING_A, 2, E_A, 3, source="admin"),
                               rec(3, dispatch("a-3", SH_A, ["user:9"]))]
    one_issue(recs, "epoch_changed: epoch@line 4: epoch: %s is the epoch of the record just "
              "before it (line 1): a reload to the same contract and membership writes no "
              "record" % E_A, shards=SH_A)


@case("rules")
def epoch_first_seq():
    g = good()
    g["records"][3]["first_seq"] = 2
    one_issue(g["records"], "epoch_first_seq: epoch@line 4: first_seq: expected 3 (1 + the last "
              "receipt seq before it), got 2")
    g = good()
    g["records"][0]["first_seq"] = 7
    one_issue(g["records"], "epoch_first_seq: epoch@line 1: first_seq: expected 1 (1 + the last "
              "receipt seq before it), got 7")


@case("rules")
def latest_epoch_equals_the_files():
    g = good()
    doc = has_issue(g["records"], "epoch_current: journal: epoch: the latest epoch record (line "
                    "4) is %s, the files read are %s" % (E_B, E_A), shards=SH_A)
    ok("epoch_current: journal: epoch@line 4 shards.shard-d.state: journal online, shards file "
       "offline" in doc["issues"], "the differing field is named: %r" % doc["issues"])


@case("rules")
def legacy_records_continue_the_numbering():
    g = good()
    legacy = ketama.epoch_record(RING_A, C)
    recs = [legacy] + g["records"][1:]
    rc, doc = check(recs)
    eq((rc, doc["issues"]), (0, []), "legacy epoch 1 (implicit seq 1), new epoch 2 prev = it")
    recs[3]["epoch_seq"] = 1
    one_issue(recs, "epoch_seq: epoch@line 4: epoch_seq: expected 2, got 1")


@case("rules")
def epoch_record_values():
    for key, value, what in (
            ("time", "2026-12-01 03:29:18Z", "time: must be UTC as YYYY-MM-DDTHH:MM:SS.mmmZ"),
            ("source", "cron", "source: must be one of start, sighup, admin"),
            ("epoch", E_B.upper(), "epoch: must be 40 lowercase hex digits"),
            ("epoch_seq", 0, "epoch_seq: must be an integer 1..9007199254740991"),
            ("prev", 7, "prev: must be null or 40 lowercase hex digits"),
            ("first_seq", "3", "first_seq: must be an integer 1..9007199254740991")):
        g = good()
        g["records"][3][key] = value
        has_issue(g["records"], "epoch_record: epoch@line 4: %s" % what)
    g = good()
    del g["records"][3]["first_seq"]
    has_issue(g["records"], "epoch_record: epoch@line 4: first_seq: missing")
    g = good()
    g["records"][3] = {k: g["records"][3][k] for k in
                       ["type", "epoch_seq", "epoch"] + list(g["records"][3])[3:]}
    has_issue(g["records"], "epoch_record: epoch@line 4: not the bytes the gateway writes for "
              "this record (first difference at byte 22, column 23)")


# --- serve follows the files and the journal (docs/operations.md §1.4) -------------------

class Health:
    """`shardgate-health serve` on an ephemeral 127.0.0.1 port, killed when the block ends."""

    def __init__(self, shards_path, journal_path):
        self.args = ["serve", "--conf", CONF, "--shards", shards_path, "--journal", journal_path]

    def __enter__(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([sgtest.HEALTH] + self.args +
                                     ["--listen", "127.0.0.1:%d" % self.port],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sgtest.wait_until(lambda: self.get("/livez")[0] == 200, 10, "health /livez")
        return self

    def get(self, path="/healthz"):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read().decode()
            conn.close()
            return resp.status, json.loads(body)
        except (OSError, http.client.HTTPException):
            return None, None

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait(timeout=10)


def replace_atomically(path, text):
    """What the gateway's PUT does to --shards: a temp file renamed over it (a new inode)."""
    tmp = write(path + ".tmp", text)
    os.rename(tmp, path)


def append(path, records):
    with open(path, "a", encoding="utf-8") as f:
        f.write(sgtest.journal_text(records))


@case("serve")
def serve_follows_a_reload():
    g = good()
    files = shards_file("serve-files", SH_A)
    jpath = journal(g["records"][:3])  # epoch 1 and two receipts
    with Health(files, jpath) as h:
        st, doc = h.get()
        eq((st, doc["files_epoch"], doc["issues"]), (200, E_A, []), "epoch 1 served")
        # the gateway reloads: the shards file is replaced, the epoch record and a receipt follow
        replace_atomically(files, ketama.dumps({"shards": SH_B}) + "\n")
        append(jpath, g["records"][3:5])
        st, doc = h.get()
        eq((st, doc["files_epoch"], doc["issues"]), (200, E_B, []),
           "the next request judges with the new files and the new epoch record")
        eq(doc["checks"]["receipts_verified"][0]["observedValue"], 3, "receipts verified")
        # an in-place edit back to the worked example (same inode): the journal still says B
        with open(files, "w", encoding="utf-8") as f:
            f.write(ketama.dumps({"shards": SH_A}) + "\n\n")
        st, doc = h.get()
        eq((st, doc["files_epoch"], doc["issues"]), (503, E_A, [
            "epoch_current: journal: epoch: the latest epoch record (line 4) is %s, the files read "
            "are %s" % (E_B, E_A),
            "epoch_current: journal: epoch@line 4 shards.shard-d.state: journal online, shards "
            "file offline"]), "files ahead of the journal: 503 until the epoch record comes")
        append(jpath, [epoch_rec(RING_A, 3, E_B, 4, source="admin"),
                       rec(4, dispatch("a-4", SH_A, ["user:1"]))])
        st, doc = h.get()
        eq((st, doc["files_epoch"], doc["issues"]), (200, E_A, []), "epoch 3 = the files again")


@case("serve")
def serve_fails_closed_on_unreadable_files():
    g = good()
    files = shards_file("stale-files", SH_B)
    jpath = journal(g["records"])
    with Health(files, jpath) as h:
        eq(h.get()[0], 200, "the good chain")
        replace_atomically(files, '{"shards":[{"id":"shard-a","state":"up","capacity":1}]}\n')
        st, doc = h.get()
        eq((st, doc["files_epoch"], doc["issues"]), (503, None, [
            "input: shards: %s: shards[0].state: must be one of online, draining, offline" % files]),
            "an unusable shards file: 503, nothing judged by the old view")
        os.unlink(files)
        st, doc = h.get()
        eq((st, doc["issues"]), (503, [
            "input: shards: %s: $: cannot open: No such file or directory" % files]),
            "a missing shards file: 503")
        sgtest.wait_until(lambda: h.get()[0] == 503, 5, "still 503 on the next call")
        replace_atomically(files, ketama.dumps({"shards": SH_B}) + "\n")
        st, doc = h.get()
        eq((st, doc["files_epoch"], doc["issues"]), (200, E_B, []), "readable again: 200")


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("shardgate", "health", "source")))
