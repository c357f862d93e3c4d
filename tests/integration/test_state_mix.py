#!/usr/bin/env python3
"""The state dir survives what operators mix (docs/journal.md §6-§8, docs/operations.md §5):
a live membership change then rotations, a checkpoint written after an epoch record, archive
then verify, each followed by a kill -9 or a clean stop and a start. After each, the gateway
starts, every acknowledged batch reads back byte for byte, and `journal verify`,
`shardgate-health check` and `probe.py journal` pass.

usage: test_state_mix.py SHARDGATE_BINARY SHARDGATE_HEALTH SOURCE_DIR [CASE... | --group G]
"""
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, batch, case, eq, main, ok, read, run, run_server, src, tmpdir, write

SMALL = ["--segment-bytes", "65536"]


def shards_doc(**states):
    """The worked example's membership with some states changed (shard_d="online", ...)."""
    with open(src("input", "shards.json")) as f:
        doc = json.load(f)
    for s in doc["shards"]:
        key = s["id"].replace("-", "_")
        if key in states:
            s["state"] = states[key]
    return doc


def shards_file(doc):
    path = os.path.join(tmpdir(), "shards.json")
    write(path, json.dumps(doc))
    return path


def sealed(d):
    return sorted(f for f in os.listdir(d) if f.startswith("journal-"))


def fill(s, n, prefix, changes=20):
    return sgtest.post_batches(s, n, prefix, changes)


def filled_and_stopped(n=100, before_stop=None):
    """A state dir after n batches (and `before_stop(server, shards file)`), stopped cleanly:
    (state dir, shards file, bodies)."""
    d = tmpdir()
    path = shards_file(shards_doc())
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        bodies = fill(s, n, "a")
        if before_stop:
            before_stop(s, path)
        eq(s.stop(), 0, "clean stop")
    return d, path, bodies


def sighup_to(s, path, doc):
    """Writes the membership file and reloads; waits for the reload to be recorded."""
    before = len(s.events("reload_applied"))
    write(path, json.dumps(doc))
    s.proc.send_signal(signal.SIGHUP)
    sgtest.wait_until(lambda: len(s.events("reload_applied")) > before, 30, "reload_applied")


def journal_verify(d):
    return run_server(["journal", "verify", "--state-dir", d])


def archived_seqs(adir):
    """{batch_id: seq} of every receipt in the archive dir's plain segment files."""
    out = {}
    for name in os.listdir(adir or "/nonexistent") if adir else []:
        for l in read(os.path.join(adir, name)).split(b"\n"):
            if l.startswith(b'{"type":"receipt"'):
                rec = json.loads(l)
                out[rec["receipt"]["batch_id"]] = rec["seq"]
    return out


def all_agree(d, shards, bodies, adir=None):
    """The state dir starts, serves every acknowledged batch byte for byte (410 when archived
    into `adir`, plain), and the three verifiers pass it."""
    gone = archived_seqs(adir)
    with Server(state_dir=d, shards=shards, args=SMALL) as s:
        for bid, body in bodies.items():
            r = s.get("/v1/batches/" + bid)
            if bid in gone:
                eq((r.status, r.json()["seq"]), (410, gone[bid]), "GET %s: archived" % bid)
            else:
                eq((r.status, r.body), (200, body), "GET %s after the restart" % bid)
        eq(s.stop(), 0, "clean stop")
    r = journal_verify(d)
    eq((r.returncode, r.stderr), (0, ""), "journal verify")
    extra = ["--archive-dir", adir] if adir else []
    r = run([sgtest.HEALTH, "check", "--conf", src("conf", "dispatch.env"), "--shards", shards,
             "--journal", os.path.join(d, "journal.jsonl")] + extra)
    eq((r.returncode, json.loads(r.stdout)["status"]), (0, "pass"), "health: " + r.stdout[:2000])
    r = run([sys.executable, src("client", "probe.py"), "journal", "--state-dir", d] + extra)
    eq((r.returncode, json.loads(r.stdout)["result"]), (0, "ok"), "probe.py journal: " + r.stdout)
    return gone


@case("state_mix")
def rotation_after_a_live_change_repeats_the_new_epoch():
    """A rotation repeats the epoch record in force (docs/journal.md §6), not the one of the
    start: a SIGHUP membership change, then enough batches for several rotations, kill -9."""
    d = tmpdir()
    path = shards_file(shards_doc())
    new = shards_doc(shard_d="online")
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        bodies = fill(s, 5, "a")
        sighup_to(s, path, new)
        bodies.update(fill(s, 150, "b"))
        s.kill()
    names = sealed(d)
    ok(len(names) >= 4, "several rotations after the change: %r" % names)
    latest = [l for l in read(os.path.join(d, names[0])).split(b"\n")
              if l.startswith(b'{"type":"epoch"')][-1]
    for name in names[1:] + ["journal.jsonl"]:
        eq(read(os.path.join(d, name)).split(b"\n")[1], latest,
           name + ": line 2 repeats the epoch record of the SIGHUP")
    all_agree(d, path, bodies)
    for name in os.listdir(d):  # deleting the checkpoints is always safe (docs/journal.md §7)
        if name.startswith("checkpoint-"):
            os.unlink(os.path.join(d, name))
    all_agree(d, path, bodies)



def checkpoints(d):
    return sorted(f for f in os.listdir(d) if f.startswith("checkpoint-"))


def present_checkpoints(d):
    """[(name, bytes)] of the checkpoints a running server has not pruned (it keeps the newest
    two, docs/journal.md §7, and may remove one between the listing and the read)."""
    found = []
    for name in checkpoints(d):
        try:
            found.append((name, read(os.path.join(d, name))))
        except FileNotFoundError:
            pass
    return found


def stopped_after_a_reload(n=3, args=()):
    """POSTs n batches, reloads a changed membership, stops cleanly: the shutdown checkpoint
    lies after the SIGHUP's epoch record. Returns (state dir, shards file, bodies)."""
    d = tmpdir()
    path = shards_file(shards_doc())
    with Server(state_dir=d, shards=path, args=SMALL + list(args)) as s:
        bodies = fill(s, n, "a")
        sighup_to(s, path, shards_doc(shard_d="online"))
        eq(s.stop(), 0, "clean stop")
    last = read(os.path.join(d, "journal.jsonl")).split(b"\n")[-2]
    ok(last.startswith(b'{"type":"epoch"'), "the journal ends with the reload's epoch record")
    return d, path, bodies


@case("state_mix")
def a_checkpoint_beside_a_membership_change_holds_the_state_at_its_position():
    """A checkpoint taken while a membership change is between its durable epoch record and its
    view (SHARDGATE_TEST_PAUSE_AT=epoch-recorded holds it 1 s; checkpoints every 100 ms): the
    batches committed meanwhile, on the old view, bring a checkpoint whose position follows the
    record, and its ledger holds the record's weight for shard-a, 2 (docs/journal.md §7), so
    health finds it agreeing with its position."""
    d = tmpdir()
    path = shards_file(shards_doc())
    doc = shards_doc()
    doc["shards"][0]["weight"] = 2
    with Server(state_dir=d, shards=path, args=SMALL + ["--checkpoint-interval", "100ms"],
                env={"SHARDGATE_TEST_PAUSE_AT": "epoch-recorded"}) as s:
        bodies = fill(s, 3, "a")
        write(path, json.dumps(doc))
        s.proc.send_signal(signal.SIGHUP)
        sgtest.wait_until(lambda: s.events("test_pause_point"), 10, "the pause after the record")
        time.sleep(0.3)  # past the checkpoint interval, within the 1 s pause
        written = len(s.events("checkpoint_written"))
        bodies.update(fill(s, 2, "p"))
        sgtest.wait_until(lambda: len(s.events("checkpoint_written")) > written, 10,
                          "a checkpoint during the pause")
        ck = s.events("checkpoint_written")[-1]
        sgtest.wait_until(lambda: s.events("reload_applied"), 10, "the reload")
        s.kill()  # no shutdown checkpoint after it
    eq(ck["last_seq"], 5, "the checkpoint follows the batches of the pause")
    ledger = {e["id"]: e["weight"] for e in json.loads(read(ck["file"]))["ledger"]}
    eq(ledger["shard-a"], 2, "the checkpoint's weight of shard-a: the record's")
    r = run([sgtest.HEALTH, "check", "--conf", src("conf", "dispatch.env"), "--shards", path,
             "--journal", os.path.join(d, "journal.jsonl")])
    eq((r.returncode, json.loads(r.stdout)["status"]), (0, "pass"), "health: " + r.stdout[:2000])
    all_agree(d, path, bodies)


def posted(d, ids, keys=None):
    """A state dir with one 3-change batch per id posted (its keys those of batch `keys[i]`),
    stopped cleanly: {id: body}."""
    with Server(state_dir=d) as s:
        bodies = {}
        for i, bid in enumerate(ids):
            r = s.post(batch(bid, prefix=keys[i] if keys else None))
            eq(r.status, 200, "POST %s" % bid)
            bodies[bid] = r.body
        eq(s.stop(), 0, "clean stop")
    return bodies


def cut_after(d, seq):
    """The repair of docs/operations.md §5.2: journal.jsonl moved aside, its lines through the
    receipt with `seq` kept."""
    path = os.path.join(d, "journal.jsonl")
    lines = read(path).split(b"\n")[:-1]
    keep = next(i for i, l in enumerate(lines)
                if l.startswith(b'{"type":"receipt","seq":%d,' % seq)) + 1
    os.rename(path, path + ".bad-1")
    write(path, b"".join(l + b"\n" for l in lines[:keep]), "wb")


@case("state_derived")
def an_index_ahead_of_the_journal_is_rebuilt_at_the_start():
    """The journal cut back to seq 5 (docs/operations.md §5.2), index/ kept with b-0001 .. b-0008:
    the start logs index_ahead_of_journal and rebuilds the index from the journal, so the cut
    batches are never acknowledged here: GET is 404, a POST of b-0006's body dispatches it anew,
    and no read serves another batch's bytes."""
    d = tmpdir()
    bodies = posted(d, ["b-%04d" % i for i in range(1, 9)])
    cut_after(d, 5)
    past = sorted(f for f in os.listdir(d) if f.startswith("checkpoint-") and int(f[11:31]) > 5)
    ok("checkpoint-%020d.json" % 8 in past, "the shutdown checkpoint is past the cut: %r" % past)
    with Server(state_dir=d) as s:
        eq([(e["index_seq"], e["journal_seq"]) for e in s.events("index_ahead_of_journal")],
           [(8, 5)], "the start says the index was ahead")
        eq(sorted((os.path.basename(e["file"]), e["journal_seq"])
                  for e in s.events("checkpoint_removed")),
           [(f, 5) for f in past], "the checkpoints past the journal removed")
        r = s.post(batch("n-0006"))
        eq((r.status, r.json()["batch_id"]), (200, "n-0006"), "a new batch takes seq 6")
        for i in range(1, 6):
            r = s.get("/v1/batches/b-%04d" % i)
            eq((r.status, r.body), (200, bodies["b-%04d" % i]), "b-%04d reads back" % i)
        for i in (6, 7, 8):
            r = s.get("/v1/batches/b-%04d" % i)
            eq((r.status, r.error()[0]), (404, "not_found"), "b-%04d was cut" % i)
        r = s.post(batch("b-0006"))
        eq((r.status, r.headers.get("idempotent-replayed"), r.json()["batch_id"]),
           (200, None, "b-0006"), "b-0006 dispatched anew")
        eq(s.get("/v1/batches/b-0006").body, r.body, "and read back")
        eq(s.post(batch("b-0007")).status, 200, "b-0007 too")
        eq(s.stop(), 0, "clean stop")
    r = journal_verify(d)
    eq((r.returncode, r.stderr), (0, ""), "journal verify after the repair")
    r = run([sgtest.HEALTH, "check", "--conf", src("conf", "dispatch.env"), "--shards",
             src("input", "shards.json"), "--journal", os.path.join(d, "journal.jsonl")])
    eq((r.returncode, json.loads(r.stdout)["status"]), (0, "pass"), "health: " + r.stdout[:2000])


@case("state_derived")
def an_index_of_another_history_never_serves_its_batches():
    """index/ of one history (b-0001 .. b-0008) beside the journal of another of the same shape
    (x-0001 .. x-0010 with the same keys, so every line has the same length; no checkpoint): a
    read names its receipt by seq, batch id and fingerprint (docs/journal.md §9), so GET b-0003 and a retry of b-0003 are 500 index_corrupt naming the
    batch, the seq and the repair, never x-0003's bytes; after the repair (index/ removed) b-0003
    is unknown and x-0003 reads back."""
    d, other = tmpdir(), tmpdir()
    posted(d, ["b-%04d" % i for i in range(1, 9)])
    theirs = posted(other, ["x-%04d" % i for i in range(1, 11)],
                    keys=["b-%04d" % i for i in range(1, 11)])  # lines of the same lengths
    for name in os.listdir(d):
        if name.startswith("checkpoint-") or name.startswith("journal"):
            os.unlink(os.path.join(d, name))
    shutil.copy(os.path.join(other, "journal.jsonl"), os.path.join(d, "journal.jsonl"))
    with Server(state_dir=d) as s:
        eq(s.events("index_ahead_of_journal"), [], "the index is not ahead")
        for r in (s.get("/v1/batches/b-0003"), s.post(batch("b-0003"))):
            eq((r.status, r.error()[0]), (500, "index_corrupt"), "b-0003")
            msg = r.json()["error"]["message"]
            ok(msg.startswith('idempotency index: it places batch_id "b-0003" at seq 3 in '
                              'journal.jsonl (the line at offset ') and "remove the state dir's "
               "index/ directory" in msg, msg)
        sgtest.wait_until(lambda: len(s.events("index_mismatch")) == 2, 10, "both logged")
        eq([e["batch_id"] for e in s.events("index_mismatch")], ["b-0003", "b-0003"], "logged")
        eq(s.stop(), 0, "clean stop")
    shutil.rmtree(os.path.join(d, "index"))
    with Server(state_dir=d) as s:
        eq(s.get("/v1/batches/b-0003").status, 404, "b-0003 unknown after the repair")
        eq(s.get("/v1/batches/x-0003").body, theirs["x-0003"], "x-0003 reads back")


@case("state_derived")
def archive_refuses_a_damaged_segment_and_writes_nothing():
    """One changed byte in a sealed segment (a-0003 -> a-9003): `journal verify` and
    `journal archive` both exit 3 with the same message naming the line (docs/journal.md §8);
    archive writes no copy, no archive.jsonl and no ids file, and removes nothing. Put back, the
    archive goes through."""
    d = tmpdir()
    with Server(state_dir=d, args=SMALL + ["--checkpoint-interval", "200ms"]) as s:
        for i in range(40):
            eq(s.post(batch("a-%04d" % i, n=60)).status, 200, "POST a-%04d" % i)
        eq(s.stop(), 0, "clean stop")
    first = sorted(f for f in os.listdir(d) if f.startswith("journal-"))[0]
    path = os.path.join(d, first)
    good = read(path)
    write(path, good.replace(b'"batch_id":"a-0003"', b'"batch_id":"a-9003"', 1), "wb")
    before = sorted(os.listdir(d))
    number = good[:good.index(b'"batch_id":"a-0003"')].count(b"\n") + 1
    want = "journal: %s:%d: checksum mismatch: the line's crc32 is not that of its bytes\n" % (
        path, number)
    r = journal_verify(d)
    eq((r.returncode, r.stderr), (3, want), "journal verify")
    adir = os.path.join(tmpdir(), "archive")
    os.mkdir(adir)
    r = run_server(["journal", "archive", "--state-dir", d, "--dir", adir, "--plain"])
    eq((r.returncode, r.stdout, r.stderr), (3, "", want), "journal archive refuses")
    eq((os.listdir(adir), sorted(os.listdir(d))), ([], before), "nothing written or removed")
    # A line changed with its crc32 made again: only the seal's sha256 tells (docs/journal.md §6).
    lines = good.split(b"\n")
    k = number - 1
    lines[k] = sgtest.with_crc(sgtest.record_of(lines[k]).replace(b'"a-0003"', b'"a-9003"'))
    write(path, b"\n".join(lines), "wb")
    r = journal_verify(d)
    eq(r.returncode, 3, "journal verify on a sound line under a wrong seal")
    ok(r.stderr.startswith("journal: %s: " % path) and "sha256" in r.stderr, r.stderr)
    said = r.stderr
    r = run_server(["journal", "archive", "--state-dir", d, "--dir", adir, "--plain"])
    eq((r.returncode, r.stdout, r.stderr), (3, "", said), "journal archive refuses it too")
    eq((os.listdir(adir), sorted(os.listdir(d))), ([], before), "nothing written or removed")
    write(path, good, "wb")
    r = run_server(["journal", "archive", "--state-dir", d, "--dir", adir, "--plain"])
    eq(r.returncode, 0, "the archive after the repair: " + r.stderr)
    ok(first in os.listdir(adir), "the segment archived")


@case("state_mix")
def checkpoint_after_an_epoch_record_is_used():
    """A checkpoint whose offset follows an epoch record is used (docs/journal.md §7): the
    replay resumes after its last receipt and reads the epoch record again."""
    d, path, bodies = stopped_after_a_reload()
    name = "checkpoint-%020d.json" % 3
    eq(checkpoints(d)[-1], name, "the shutdown checkpoint")
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        eq(s.events("checkpoint_skipped"), [], "no checkpoint skipped")
        used = s.events("checkpoint_used")
        eq([(u["file"], u["last_seq"]) for u in used], [(os.path.join(d, name), 3)], "used")
        eq([e["epoch_seq"] for e in s.get("/v1/epochs").json()["epochs"]], [1, 2],
           "the chain: the start and the reload, once each")
        eq(s.stop(), 0, "clean stop")
    all_agree(d, path, bodies)


@case("state_mix")
def checkpoint_after_a_rotation_by_an_epoch_record():
    """Reloads alone fill the segment until one rotates it: the new segment holds its header,
    the repeat and the reload's record, no receipt; the shutdown checkpoint lies there."""
    d = tmpdir()
    path = shards_file(shards_doc())
    docs = [shards_doc(shard_d="online"), shards_doc()]
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        bodies = fill(s, 5, "a")
        for i in range(400):
            if sealed(d):
                break
            sighup_to(s, path, docs[i % 2])
        eq(len(sealed(d)), 1, "a reload rotated the segment")
        sighup_to(s, path, docs[i % 2])
        eq(s.stop(), 0, "clean stop")
    lines = read(os.path.join(d, "journal.jsonl")).split(b"\n")[:-1]
    eq([json.loads(l)["type"] for l in lines], ["segment", "epoch", "epoch", "epoch"],
       "the active segment: header, repeat, two reloads")
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        eq(s.events("checkpoint_skipped"), [], "no checkpoint skipped")
        eq(len(s.events("checkpoint_used")), 1, "checkpoint used")
        eq(s.stop(), 0, "clean stop")
    all_agree(d, path, bodies)


def archive(d):
    adir = os.path.join(tmpdir(), "archive")
    os.mkdir(adir)
    r = run_server(["journal", "archive", "--state-dir", d, "--dir", adir, "--plain"])
    eq((r.returncode, r.stderr), (0, ""), "journal archive")
    return adir


@case("state_mix")
def verify_after_an_archive():
    """journal verify checks what is present from the checkpoint a start uses
    (docs/journal.md §8), before and after a start."""
    d = tmpdir()
    path = shards_file(shards_doc())
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        bodies = fill(s, 10, "a", changes=60)
        ok(sealed(d), "a rotation")
        sgtest.wait_until(lambda: checkpoints(d), 30, "the rotation's checkpoint")
        old, kept = present_checkpoints(d)[0]
        bodies.update(fill(s, 30, "b", changes=60))
        eq(s.stop(), 0, "clean stop")
    eq(journal_verify(d).returncode, 0, "verified before the archive")
    n = len(sealed(d))
    adir = archive(d)
    left = len(sealed(d))
    ok(n - left >= 3, "segments archived: %d of %d" % (n - left, n))
    r = journal_verify(d)
    # the checkpoints resumed from: those not older than the archive's end (docs/journal.md
    # §8); which the server kept (the newest two) depends on when its interval ones came
    end = max(json.loads(l)["last_seq"] for l in read(os.path.join(d, "archive.jsonl"))
              .split(b"\n") if l)
    usable = len([c for c in checkpoints(d) if int(c[11:31]) >= end])
    eq((r.returncode, r.stdout, r.stderr),
       (0, "journal: OK: %d sealed segments, 40 receipts, %d checkpoints; %d archived segments "
        "not read (from checkpoint-%020d.json on)\n" % (left, usable, n - left, 40), ""),
       "verified")
    # A checkpoint older than the archive (left by a crash mid-prune) is not usable, not damage.
    write(os.path.join(d, old), kept, "wb")
    eq(journal_verify(d).stdout, r.stdout, "an older checkpoint inside the archive is passed by")
    gone = all_agree(d, path, bodies, adir)
    ok(0 < len(gone) < 40, "archived and present batches both met: %d" % len(gone))
    eq(journal_verify(d).returncode, 0, "verified after a start")



@case("state_mix")
def verify_passes_by_a_checkpoint_older_than_the_archive():
    """A checkpoint that ends exactly at an archived segment's end, with later segments archived
    too, is older than the archive: verify passes it by, as a start never uses it."""
    d = tmpdir()
    path = shards_file(shards_doc())
    saved = {}
    with Server(state_dir=d, shards=path, args=SMALL + ["--checkpoint-interval", "100ms"]) as s:
        bodies = {}
        for i in range(30):
            bodies.update(fill(s, 1, "a%d-" % i, changes=60))
            name = "checkpoint-%020d.json" % (i + 1)
            sgtest.wait_until(lambda: name in checkpoints(d), 30,
                              "the checkpoint after batch %d" % (i + 1))
            # The newest checkpoint stays until the next receipt; older ones are pruned at any
            # moment, so only the one just waited for is read.
            saved[name] = read(os.path.join(d, name))
        eq(s.stop(), 0, "clean stop")
    adir = archive(d)
    ends = [json.loads(l)["last_seq"] for l in read(os.path.join(d, "archive.jsonl")).split(b"\n")
            if l]
    ok(len(ends) >= 2, "two segments archived: %r" % ends)
    r = journal_verify(d)
    eq(r.returncode, 0, "verified: " + r.stderr)
    old = "checkpoint-%020d.json" % ends[0]
    write(os.path.join(d, old), saved[old], "wb")
    eq(json.loads(saved[old])["segment"], 1, "it lies at the end of the first segment")
    r2 = journal_verify(d)
    eq((r2.returncode, r2.stdout, r2.stderr), (0, r.stdout, ""), "passed by")
    all_agree(d, path, bodies, adir)

def epoch_record_after_a_checkpoint_then_a_rotation():
    """A state dir whose first segment holds receipts up to a shutdown checkpoint, then a
    SIGHUP's epoch record, then its seal (the next run's batch rotates; that run stops cleanly).
    Returns (state dir, shards file, bodies, the checkpoint's last_seq, its bytes)."""
    d = tmpdir()
    path = shards_file(shards_doc())
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        bodies = {}
        while os.path.getsize(os.path.join(d, "journal.jsonl")) < 40000:
            bodies.update(fill(s, 1, "a%d-" % len(bodies)))
        eq(s.stop(), 0, "clean stop: a checkpoint at the last receipt")
    last = len(bodies)
    saved = read(os.path.join(d, "checkpoint-%020d.json" % last))
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        sighup_to(s, path, shards_doc(shard_d="online"))
        bodies.update(fill(s, 1, "b", changes=250))  # it rotates
        eq(s.stop(), 0, "clean stop")
    return d, path, bodies, last, saved


@case("state_mix")
def verify_passes_by_a_checkpoint_before_an_archived_epoch_record():
    """A shutdown checkpoint, then a SIGHUP's epoch record in the same segment, then a rotation
    and an archive of that segment: the checkpoint has its segment's last_seq but not its end,
    and the epoch record after it cannot be read any more. Neither verify nor a start may resume
    from it (docs/journal.md §8)."""
    d, path, bodies, last, saved = epoch_record_after_a_checkpoint_then_a_rotation()
    old = "checkpoint-%020d.json" % last
    adir = archive(d)
    write(os.path.join(d, old), saved, "wb")  # kept, as by a longer retention or a backup
    first = json.loads(read(os.path.join(d, "archive.jsonl")).split(b"\n")[0])
    eq(first["last_seq"], last, "the first archived segment ends at the checkpoint's seq")
    r = journal_verify(d)
    eq((r.returncode, r.stderr), (0, ""), "verify passes the checkpoint by")
    all_agree(d, path, bodies, adir)


@case("state_mix")
def archive_keeps_the_segment_of_a_checkpoint_short_of_its_seal():
    """The newest checkpoint holds its segment's last receipt, but an epoch record follows it
    before the seal (a SIGHUP, then a rotation; the checkpoints after it gone, as when the
    server was killed before it wrote one). Archiving that segment would leave a start no
    checkpoint to resume from (docs/journal.md §8): `journal archive` keeps it, and the state
    dir starts and passes every verifier."""
    d, path, bodies, last, _ = epoch_record_after_a_checkpoint_then_a_rotation()
    kept = "checkpoint-%020d.json" % last
    ok(any(n.startswith("journal-") for n in os.listdir(d)), "a sealed segment")
    for name in os.listdir(d):
        if name.startswith("checkpoint-") and name != kept:
            os.remove(os.path.join(d, name))
    adir = archive(d)
    listed = os.path.join(d, "archive.jsonl")
    eq(read(listed) if os.path.exists(listed) else b"", b"",
       "nothing archived: the segment holds the newest checkpoint short of its seal")
    all_agree(d, path, bodies, adir)

@case("state_mix")
def verify_resumes_after_an_archive_onto_a_legacy_repeat():
    """An upgraded state dir: the epoch in force is a legacy record, repeated in its legacy form
    at the head of every later segment. A checkpoint at the seal of the last archived segment is
    resumed from; the next segment's repeat has no epoch of its own and is taken by its ring id,
    whatever epoch record (here a SIGHUP's) the replay before it ended on (docs/journal.md §8)."""
    d = tmpdir()
    write(os.path.join(d, "journal.jsonl"),
          read(src("tests", "golden", "legacy-state", "journal.jsonl")), "wb")
    path = shards_file(shards_doc())
    saved, bodies = {}, {}
    with Server(state_dir=d, shards=path, args=SMALL + ["--checkpoint-interval", "100ms"]) as s:
        while len(sealed(d)) < 3:
            bodies.update(fill(s, 1, "a%d-" % len(bodies), changes=60))
            last = json.loads(sgtest.record_of(
                read(os.path.join(d, "journal.jsonl")).split(b"\n")[-2]))["seq"]
            name = "checkpoint-%020d.json" % last
            sgtest.wait_until(lambda: name in checkpoints(d), 30, "the checkpoint at %d" % last)
            saved[name] = read(os.path.join(d, name))
        sighup_to(s, path, shards_doc(shard_d="online"))
        eq(s.stop(), 0, "clean stop")
    adir = archive(d)
    end = json.loads(read(os.path.join(d, "archive.jsonl")).split(b"\n")[-2])["last_seq"]
    name = "checkpoint-%020d.json" % end
    write(os.path.join(d, name), saved[name], "wb")  # as it was before the rotation's own
    r = journal_verify(d)
    eq((r.returncode, r.stderr), (0, ""), "verify resumes from it")
    all_agree(d, path, bodies, adir)


@case("state_mix")
def archive_after_a_reload_then_start():
    """A shutdown checkpoint after an epoch record covers an archive: the start uses it."""
    d, path, bodies = filled_and_stopped(
        before_stop=lambda s, path: sighup_to(s, path, shards_doc(shard_d="online")))
    adir = archive(d)
    ok(len(archived_seqs(adir)) > 0, "segments archived")
    all_agree(d, path, bodies, adir)



def archived_and_stopped():
    """A state dir with segments archived (plain): (d, shards file, bodies, archive dir)."""
    d, path, bodies = filled_and_stopped()
    adir = archive(d)
    ok(len(archived_seqs(adir)) > 0, "segments archived")
    ids = sorted(f for f in os.listdir(d) if f.startswith("archived-"))
    eq(ids, ["archived-%020d.ids" % int(n[8:28]) for n in sorted(os.listdir(adir))],
       "an ids file for each archived segment")
    return d, path, bodies, adir


def ids_file_lines(d, adir):
    """The ids files' expected bytes, from the archived copies (docs/journal.md §8)."""
    for name in sorted(os.listdir(adir)):
        body = b""
        for l in read(os.path.join(adir, name)).split(b"\n"):
            if l.startswith(b'{"type":"receipt"'):
                rec = json.loads(l)
                body += (b'{"type":"receipt","seq":%d,"fingerprint":"%s","receipt":'
                         b'{"batch_id":"%s"}}\n' % (rec["seq"], rec["fingerprint"].encode(),
                                                    rec["receipt"]["batch_id"].encode()))
            elif l.startswith(b'{"type":"seal"'):
                last = json.loads(l)["last_seq"]
        body += b'{"type":"seal","last_seq":%d,"bytes":%d,"sha256":"%s"}\n' % (
            last, len(body), hashlib.sha256(body).hexdigest().encode())
        eq(read(os.path.join(d, "archived-%s.ids" % name[8:28])), body, name + ": ids file")


@case("state_mix")
def index_deleted_after_an_archive_is_rebuilt():
    """index/ is derived (docs/journal.md §9): deleted after an archive, the start rebuilds it
    from the segments and the archived ids files; every id stays known."""
    d, path, bodies, adir = archived_and_stopped()
    ids_file_lines(d, adir)
    shutil.rmtree(os.path.join(d, "index"))
    all_agree(d, path, bodies, adir)
    with Server(state_dir=d, shards=path, args=SMALL) as s:  # a retry is never dispatched again
        r = s.post(batch("a0", n=20))
        eq((r.status, r.json()["error"]["code"]), (410, "receipt_archived"), "retry of a0")


@case("state_mix")
def index_byte_flipped_after_an_archive():
    """One flipped byte of index/CURRENT (which names the database's manifest): the index is
    unusable, removed and rebuilt from the segments and the archived ids files, nothing lost."""
    d, path, bodies, adir = archived_and_stopped()
    m = os.path.join(d, "index", "CURRENT")
    data = bytearray(read(m))
    data[0] ^= 0x01
    write(m, bytes(data), "wb")
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        eq([e["reason"] for e in s.events("index_unusable")],
           ["Corruption: CURRENT file corrupted"], "logged")
        eq(s.stop(), 0, "clean stop")
    all_agree(d, path, bodies, adir)


@case("state_mix")
def archive_right_after_a_rebuild():
    """A start that rebuilt the index, then an archive at once: the next start knows every id."""
    d, path, bodies = filled_and_stopped()
    shutil.rmtree(os.path.join(d, "index"))
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        s.kill()
    adir = archive(d)
    all_agree(d, path, bodies, adir)


@case("state_mix")
def archived_ids_file_missing_or_damaged_is_repaired_by_archive():
    """Without a good ids file and without the index the ids of an archived segment are nowhere
    in the state dir: the start refuses (exit 3, the file and the repair named) and changes
    nothing; `journal archive` run again writes the file from the archived copy."""
    d, path, bodies, adir = archived_and_stopped()
    names = sorted(f for f in os.listdir(d) if f.startswith("archived-"))
    os.unlink(os.path.join(d, names[0]))
    damaged = os.path.join(d, names[1])
    data = bytearray(read(damaged))
    data[10] ^= 0x01
    write(damaged, bytes(data), "wb")
    shutil.rmtree(os.path.join(d, "index"))
    before = sorted(os.listdir(d))
    r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards", path,
                    "--state-dir", d, "--listen", "127.0.0.1:0"] + SMALL)
    eq((r.returncode, r.stderr),
       (3, "journal: %s/%s: missing: the ids of the archived journal-%s.jsonl are in neither it "
        "nor the idempotency index (docs/operations.md §5.2: `shardgate journal archive "
        "--state-dir %s --dir <the archive dir>` writes it again)\n" % (d, names[0],
                                                                         names[0][9:29], d)),
       "refused, naming the file")
    eq(sorted(f for f in os.listdir(d) if f != "index"), [f for f in before if f != "index"],
       "nothing removed")
    r = run_server(["journal", "archive", "--state-dir", d, "--dir", adir, "--plain"])
    eq(r.returncode, 0, "archive again: " + r.stderr)
    ids_file_lines(d, adir)
    all_agree(d, path, bodies, adir)



def earlier_version_state():
    """tests/golden/index-v1-state copied: (d, shards file, bodies, archive dir)."""
    root = os.path.join(tmpdir(), "v1")
    shutil.copytree(src("tests", "golden", "index-v1-state"), root)
    with open(os.path.join(root, "bodies.json"), encoding="utf-8") as f:
        bodies = {k: v.encode() for k, v in json.load(f).items()}
    return os.path.join(root, "state"), src("input", "shards.json"), bodies, \
        os.path.join(root, "archive")


def earlier_files(d):
    return sorted(f for f in os.listdir(os.path.join(d, "index"))
                  if f == "manifest.json" or f.startswith("run-"))


@case("state_mix")
def index_of_the_earlier_version_is_converted():
    """An index written by 8e3573f (its runs, docs/journal.md §9.1) is converted at the first
    start: every id it held, the archived ones included (that version kept no ids files), is
    known at once; its files are removed; every batch answers as before. `journal verify` (which
    builds an index of its own) wants the ids files until `journal archive` writes them."""
    d, path, bodies, adir = earlier_version_state()
    eq(earlier_files(d), ["manifest.json", "run-00000000000000000005.idx"], "the golden index")
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        eq(s.events("index_converted"), [{"event": "index_converted", "dir": d + "/index",
                                          "ids": 44, "durable_seq": 44}], "converted")
        eq(s.events("index_unusable"), [], "nothing unusable")
        r = s.post(batch("up-a7", n=20))  # its retry: known, archived, never dispatched again
        eq((r.status, r.json()["error"]["code"], r.json()["seq"]), (410, "receipt_archived", 8),
           "retry of an archived id")
        r = s.post(batch("up-a7", n=2))
        eq((r.status, r.json()["error"]["code"]), (422, "batch_id_reused"), "other content")
        eq(s.stop(), 0, "clean stop")
    eq(earlier_files(d), [], "the earlier files removed")
    first = sorted(os.listdir(adir))[0]
    eq(journal_verify(d).stderr.split(": ")[:2],
       ["journal", "%s/archived-%s.ids" % (d, first[8:28])], "verify names the ids file")
    r = run_server(["journal", "archive", "--state-dir", d, "--dir", adir, "--plain"])
    eq(r.returncode, 0, "archive again: " + r.stderr)
    gone = all_agree(d, path, bodies, adir)
    eq(len(gone), 44, "44 archived batches (the run also moved the segment sealed since)")


@case("state_mix")
def index_of_the_earlier_version_damaged_names_the_repair():
    """A run of the earlier index that fails its checksum is not converted (logged unusable);
    the archived ids are then in no file of the state dir, so the start refuses and names the
    repair, `journal archive`, which writes the ids files from the archive; then all agree."""
    d, path, bodies, adir = earlier_version_state()
    run_file = os.path.join(d, "index", "run-00000000000000000005.idx")
    data = bytearray(read(run_file))
    data[64 + 100] ^= 0x01  # a record byte: its block's digest no longer matches
    write(run_file, bytes(data), "wb")
    first = sorted(os.listdir(adir))[0]
    r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards", path,
                    "--state-dir", d, "--listen", "127.0.0.1:0"] + SMALL)
    unusable = [json.loads(l) for l in r.stdout.splitlines() + r.stderr.splitlines()
                if '"index_unusable"' in l]
    eq([e["reason"] for e in unusable],
       ["written by an earlier version: run block checksum mismatch"], "logged")
    ids = "archived-%s.ids" % first[8:28]
    eq((r.returncode, r.stderr.splitlines()[-1]),
       (3, "journal: %s/%s: missing: the ids of the archived %s are in neither it nor the "
        "idempotency index (docs/operations.md §5.2: `shardgate journal archive --state-dir %s "
        "--dir <the archive dir>` writes it again)" % (d, ids, first, d)), "refused")
    r = run_server(["journal", "archive", "--state-dir", d, "--dir", adir, "--plain"])
    eq(r.returncode, 0, "archive again: " + r.stderr)
    all_agree(d, path, bodies, adir)


def start_refused(d, path, message):
    r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards", path,
                    "--state-dir", d, "--listen", "127.0.0.1:0"] + SMALL)
    eq((r.returncode, r.stderr), (3, message + "\n"), "refused: " + message[:60])


def tree_bytes(d):
    """Every file under d with its bytes: what "nothing touched" compares."""
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, d)] = fh.read()
    return out


@case("state_mix")
def state_dir_format_marker_written_checked_and_never_guessed():
    """docs/journal.md §1.1: the first start writes format 1 (also on a state dir from before the
    marker); a newer or unreadable marker refuses serve, verify and archive, exit 3, and nothing
    of the state dir changes."""
    d, path, bodies, adir = earlier_version_state()
    marker = os.path.join(d, "format")
    ok(not os.path.exists(marker), "the golden state dir predates the marker")
    journal_verify(d)
    ok(not os.path.exists(marker), "verify writes nothing")
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        eq(read(marker), b"shardgate-state 1\n", "written at the start")
        eq(s.post(batch("fmt-1")).status, 200, "serves")
        eq(s.stop(), 0, "clean stop")
    for text, message in [
            (b"shardgate-state 2\n", "journal: %s: state dir format 2 is newer than this "
             "shardgate's (1): run the version that wrote it, or a newer one" % marker),
            (b"shardgate-state 1", 'journal: %s:1: not "shardgate-state N" '
             "(docs/journal.md §1.1)" % marker),
            (b"shardgate-state 0\n", 'journal: %s:1: not "shardgate-state N" '
             "(docs/journal.md §1.1)" % marker)]:
        write(marker, text, "wb")
        before = tree_bytes(d)
        start_refused(d, path, message)
        r = journal_verify(d)
        eq((r.returncode, r.stderr), (3, message + "\n"), "journal verify")
        r = run_server(["journal", "archive", "--state-dir", d, "--dir", adir, "--plain"])
        eq((r.returncode, r.stderr.splitlines()[-1:]), (3, [message]), "journal archive")
        eq(tree_bytes(d) == before, True, "nothing of the state dir changed: %r" % text)
    write(marker, b"shardgate-state 1\n", "wb")
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        eq(s.post(batch("fmt-1")).status, 200, "format 1 again: the batch replays")


@case("state_mix")
def a_receipt_of_a_newer_version_is_never_read_as_ours():
    """docs/journal.md §5: a receipt record whose receipt_version is newer than 2 refuses
    verify and the start (exit 3), naming the line; 0 is refused too."""
    d = tmpdir()
    path = shards_file(shards_doc())
    with Server(state_dir=d, shards=path) as s:
        eq(s.post(batch("rv-1")).status, 200, "POST")
        eq(s.stop(), 0, "clean stop")
    for f in os.listdir(d):
        if f.startswith("checkpoint-"):
            os.unlink(os.path.join(d, f))  # derived (docs/journal.md §7): the start replays all
    journal = os.path.join(d, "journal.jsonl")
    lines = read(journal).split(b"\n")
    eq(lines[1].count(b'"receipt_version":2'), 1, "line 2 is the receipt")
    for version, what in [(3, "receipt_version 3 is newer than this shardgate's (2): run the "
                              "version that wrote it, or a newer one"),
                          (0, "receipt_version must be 1 or 2")]:
        record = sgtest.record_of(lines[1]).replace(b'"receipt_version":2',
                                                    b'"receipt_version":%d' % version)
        write(journal, b"\n".join([lines[0], sgtest.with_crc(record)] + lines[2:]), "wb")
        message = "journal: %s:2: receipt record: %s" % (journal, what)
        r = journal_verify(d)
        eq((r.returncode, r.stderr), (3, message + "\n"), "journal verify, version %d" % version)
        start_refused(d, path, message)


@case("state_mix")
def each_documented_repair_then_starts():
    """docs/operations.md §5.2: a refusal to start, its repair, a start that serves every batch."""
    d, path, bodies, adir = archived_and_stopped()
    with Server(state_dir=d, shards=path, args=SMALL) as s:
        bodies.update(fill(s, 80, "c"))
        eq(s.stop(), 0, "clean stop")
    ok(len(sealed(d)) >= 3, "sealed segments present after the archive")
    backup = tmpdir()
    for name in os.listdir(d):
        if os.path.isfile(os.path.join(d, name)):
            shutil.copy2(os.path.join(d, name), os.path.join(backup, name))
    middle = sealed(d)[len(sealed(d)) // 2]
    os.unlink(os.path.join(d, middle))
    r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards", path,
                    "--state-dir", d, "--listen", "127.0.0.1:0"] + SMALL)
    eq((r.returncode, "(a segment is missing)" in r.stderr), (3, True), "a deleted segment")
    shutil.copy2(os.path.join(backup, middle), os.path.join(d, middle))  # restore it
    all_agree(d, path, bodies, adir)
    ckpts = checkpoints(d)
    for name in ckpts:
        os.unlink(os.path.join(d, name))
    first = sorted(os.listdir(adir))[0]
    start_refused(d, path, "journal: %s/%s: archived (archive.jsonl) and no usable checkpoint "
                  "covers it" % (d, first))
    for name in ckpts:  # restore the checkpoints from the backup taken after the archive
        shutil.copy2(os.path.join(backup, name), os.path.join(d, name))
    all_agree(d, path, bodies, adir)


@case("state_mix")
def the_other_documented_repairs_each_keep_every_batch():
    """docs/operations.md §5.2, each repair as written there, then every batch reads back byte
    for byte and the verifiers pass: the archived segments brought back (checkpoints gone),
    line 2 of a sealed segment edited and the segment restored, and a receipt line rebuilt with
    `shardgate dispatch` and the documented CRC-32."""
    d, path, bodies, adir = archived_and_stopped()
    for name in checkpoints(d):
        os.unlink(os.path.join(d, name))
    first = sorted(os.listdir(adir))[0]
    start_refused(d, path, "journal: %s/%s: archived (archive.jsonl) and no usable checkpoint "
                  "covers it" % (d, first))
    for name in os.listdir(adir):  # plain copies: --plain; a .zst would be decompressed
        shutil.copy2(os.path.join(adir, name), os.path.join(d, name))
    write(os.path.join(d, "archive.jsonl"), b"", "wb")  # their lines removed
    all_agree(d, path, bodies)

    victim = os.path.join(d, sealed(d)[1])
    good = read(victim)
    lines = good.split(b"\n")
    at = lines[1].index(b'"source":"') + 10
    record = bytearray(sgtest.record_of(lines[1]))
    record[at] = ord("x") if record[at] != ord("x") else ord("y")  # the same length
    record = bytes(record)
    write(victim, b"\n".join([lines[0], sgtest.with_crc(record)] + lines[2:]), "wb")
    r = journal_verify(d)  # the start replays from the newest checkpoint, past this segment
    eq((r.returncode, r.stderr), (3, "journal: %s:2: not a repeat of the latest epoch record\n"
                                  % victim), "journal verify names the line")
    write(victim, good, "wb")  # restored from a backup
    all_agree(d, path, bodies)

    journal = os.path.join(d, "journal.jsonl")
    lines = read(journal).split(b"\n")
    k = max(i for i, l in enumerate(lines) if l.startswith(b'{"type":"receipt"'))
    rec = json.loads(lines[k])
    lines[k] = lines[k].replace(b'"receipt_version":2', b'"receipt_version":3', 1)
    write(journal, b"\n".join(lines), "wb")
    r = journal_verify(d)
    eq((r.returncode, r.stderr.split(": ", 2)[1:]),
       (3, ["%s:%d" % (journal, k + 1), "checksum mismatch: the line's crc32 is not that of "
            "its bytes\n"]), "journal verify names the line")
    doc = os.path.join(tmpdir(), "batch.json")
    write(doc, json.dumps(sgtest.batch(rec["receipt"]["batch_id"], n=20)))
    r = run_server(["dispatch", "--conf", src("conf", "dispatch.env"), "--shards", path,
                    "--batch", doc])
    eq(r.returncode, 0 if rec["receipt"]["ok"] else 2, "shardgate dispatch: %s" % r.stderr)
    record = (b'{"type":"receipt","seq":%d,"fingerprint":"%s","receipt":'
              % (rec["seq"], rec["fingerprint"].encode()) + r.stdout.rstrip("\n").encode() + b"}")
    crc = subprocess.run(["python3", "-c", 'import zlib,sys; print("%08x" % '
                          'zlib.crc32(sys.stdin.buffer.read()))'], input=record[:-1],
                         capture_output=True, check=True).stdout.strip()
    lines[k] = record[:-1] + b',"crc32":"' + crc + b'"}'
    write(journal, b"\n".join(lines), "wb")
    all_agree(d, path, bodies)


@case("state_mix")
def put_begun_before_a_sighup_keeps_its_contract():
    """A PUT whose headers arrived before a SIGHUP changed the contract, its If-Match naming the
    SIGHUP's epoch: the epoch it records is built on that contract, not on the one the request
    began under (docs/api.md §15)."""
    conf = os.path.join(tmpdir(), "dispatch.env")
    write(conf, read(src("conf", "dispatch.env")), "wb")
    path = shards_file(shards_doc())
    admin = os.path.join(tmpdir(), "admin")
    write(admin, "admin-s3cret\n")
    os.chmod(admin, 0o600)
    with Server(state_dir=tmpdir(), conf=conf, shards=path,
                args=["--admin-token-file", admin]) as s:
        doc = shards_doc(shard_d="online")
        body = json.dumps(doc).encode()
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        sock.sendall(("PUT /v1/admin/membership HTTP/1.1\r\nHost: x\r\n"
                      "Content-Type: application/json\r\nAuthorization: Bearer admin-s3cret\r\n"
                      "If-Match: \"%s\"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                      % (sgtest.epoch_of(shards_doc(), "reject"), len(body))).encode() + body[:10])
        time.sleep(0.2)  # the request has begun on the view of the start
        write(conf, read(conf).replace(b"DISPATCH_CAPACITY_POLICY=report",
                                       b"DISPATCH_CAPACITY_POLICY=reject"), "wb")
        s.proc.send_signal(signal.SIGHUP)
        sgtest.wait_until(lambda: s.events("reload_applied"), 30, "reload_applied")
        status, payload = sgtest.finish_request(sock, body[10:])
        eq((status, json.loads(payload)["epoch"]), (200, sgtest.epoch_of(doc, "reject")),
           "the PUT's epoch keeps the SIGHUP's policy")
        eq(s.get("/v1/ring").json()["epoch"], sgtest.epoch_of(doc, "reject"), "the ring's epoch")
        eq(s.stop(), 0, "clean stop")
    last = [json.loads(l) for l in read(os.path.join(s.state_dir, "journal.jsonl")).split(b"\n")
            if l.startswith(b'{"type":"epoch"')][-1]
    eq((last["source"], last["contract"]["DISPATCH_CAPACITY_POLICY"]), ("admin", "reject"),
       "the recorded epoch")

if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "health", "source")))
