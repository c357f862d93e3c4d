"""Journal segments and checkpoints (issue #13, docs/journal.md §6 and §7): rotation over real
HTTP with exact files, header and seal bytes; receipts served from sealed segments; checkpoints
at shutdown used at restart, a corrupt one skipped, none at all (a full replay); the start
checks (deleted, truncated, swapped, replaced segment: exit 3); the crash states of a rotation;
a state dir written by an older main upgraded."""

import hashlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import Server, batch, case, eq, main, ok, read, run_server, src, tmpdir, write

SMALL = ["--segment-bytes", "65536"]


def seg_name(first):
    return "journal-%020d.jsonl" % first


def ckpt_name(last):
    return "checkpoint-%020d.json" % last


def sealed(d):
    return sorted(f for f in os.listdir(d) if f.startswith("journal-"))


def checkpoints(d):
    return sorted(f for f in os.listdir(d) if f.startswith("checkpoint-"))


def fill(s, n, prefix="b", changes=20):
    """Posts n batches; returns {batch_id: response body}."""
    bodies = {}
    for i in range(n):
        r = s.post(batch("%s%d" % (prefix, i), n=changes))
        eq(r.status, 200, "post %s%d" % (prefix, i))
        bodies["%s%d" % (prefix, i)] = r.body
    return bodies


def seal_of(data):
    """(seal dict, the bytes before the seal line) of a sealed segment's bytes."""
    lines = data.split(b"\n")
    eq(lines[-1], b"", "a sealed segment ends with a newline")
    return json.loads(lines[-2]), data[:len(data) - len(lines[-2]) - 1]


def rotated_state(n=150):
    """A state dir with several sealed segments, the server stopped cleanly."""
    d = tmpdir()
    with Server(state_dir=d, args=SMALL) as s:
        bodies = fill(s, n)
        totals = s.shard_totals()
        eq(s.stop(), 0, "clean stop")
    ok(len(sealed(d)) >= 4, "at least four sealed segments: %r" % sealed(d))
    return d, bodies, totals


def start_fails(d, message):
    r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                    src("input", "shards.json"), "--state-dir", d, "--listen", "127.0.0.1:0"]
                   + SMALL)
    eq((r.returncode, r.stderr), (3, message + "\n"), "exit 3 and the message")


@case("segments")
def rotation_files_header_seal_and_replay_from_sealed():
    d = tmpdir()
    with Server(state_dir=d, args=SMALL) as s:
        bodies = fill(s, 150)
        names = sealed(d)
        eq(names[0], seg_name(1), "the first segment keeps seq 1")
        prev_seal, epoch_line = None, None
        for name in names:
            data = read(os.path.join(d, name))
            seal, body = seal_of(data)
            eq(list(seal), ["type", "last_seq", "bytes", "sha256"], "seal keys in order")
            eq(data.split(b"\n")[-2],
               b'{"type":"seal","last_seq":%d,"bytes":%d,"sha256":"%s"}'
               % (seal["last_seq"], len(body), hashlib.sha256(body).hexdigest().encode()),
               name + ": seal line")
            ok(len(data) <= 65536 + 4096, name + ": about --segment-bytes")
            first = int(name[8:28])
            lines = body.split(b"\n")
            if first == 1:
                epoch_line = lines[0]
            else:
                eq(lines[0], b'{"type":"segment","first_seq":%d,"prev":"%s"}'
                   % (first, prev_seal["sha256"].encode()), name + ": header")
                eq(lines[1], epoch_line, name + ": the epoch record repeated byte for byte")
                eq(first, prev_seal["last_seq"] + 1, name + ": first_seq follows")
            prev_seal = seal
        active = read(os.path.join(d, "journal.jsonl")).split(b"\n")
        eq(active[0], b'{"type":"segment","first_seq":%d,"prev":"%s"}'
           % (prev_seal["last_seq"] + 1, prev_seal["sha256"].encode()), "active header")
        again = s.post(batch("b0", n=20))  # b0 lies in journal-...01.jsonl, sealed
        eq((again.status, again.body), (200, bodies["b0"]), "replay from a sealed segment")
        eq(again.headers.get("idempotent-replayed"), "true", "replay header")
        eq(s.get("/v1/batches/b1").body, bodies["b1"], "GET from a sealed segment")


@case("segments")
def checkpoint_at_shutdown_used_at_restart():
    d, bodies, totals = rotated_state()
    ok(ckpt_name(150) in checkpoints(d), "a checkpoint at shutdown: %r" % checkpoints(d))
    eq(len(checkpoints(d)), 2, "the newest two are kept")
    line = read(os.path.join(d, ckpt_name(150)))
    eq(line.count(b"\n"), 1, "one line")
    doc = json.loads(line)
    eq(list(doc), ["type", "version", "last_seq", "segment", "offset", "index_seq", "epochs",
                   "ledger", "totals", "sha256"], "checkpoint keys in order")
    head = line[:line.rindex(b',"sha256"')]
    eq(doc["sha256"], hashlib.sha256(head).hexdigest(), "sha256 of the bytes before it")
    eq((doc["type"], doc["version"], doc["last_seq"]), ("checkpoint", 1, 150), "header keys")
    ok(doc["index_seq"] >= doc["last_seq"], "index_seq >= last_seq")
    eq({e["id"]: [e["load"], e["received"]] for e in doc["ledger"]}, totals, "ledger = totals")
    with Server(state_dir=d, args=SMALL) as s:
        used = s.events("checkpoint_used")
        eq([u["file"] for u in used], [os.path.join(d, ckpt_name(150))], "checkpoint used")
        eq(s.shard_totals(), totals, "totals kept")
        conn = s.connect()
        for bid, body in sorted(bodies.items()):
            r = s.post(batch(bid, n=20), conn=conn)
            eq((r.status, r.body, r.headers.get("idempotent-replayed")), (200, body, "true"),
               "every id the checkpoint covers: " + bid)
        conn.close()
        eq(s.post(batch("fresh", n=20)).status, 200, "a new id")


@case("segments")
def corrupt_newest_checkpoint_falls_back_to_older():
    d, bodies, totals = rotated_state()
    older, newest = checkpoints(d)
    path = os.path.join(d, newest)
    data = bytearray(read(path))
    data[40] ^= 1  # a digit of an edited field
    write(path, bytes(data), "wb")
    with Server(state_dir=d, args=SMALL) as s:
        eq([(e["file"], e["reason"]) for e in s.events("checkpoint_skipped")],
           [(path, "sha256 does not match its bytes (torn or edited)")], "skipped, logged")
        eq([e["file"] for e in s.events("checkpoint_used")], [os.path.join(d, older)], "older")
        eq(s.shard_totals(), totals, "totals kept")
        eq(s.post(batch("b149", n=20)).body, bodies["b149"], "the last id is known")


@case("segments")
def no_checkpoint_full_replay_same_totals():
    d, bodies, totals = rotated_state()
    for f in checkpoints(d):
        os.unlink(os.path.join(d, f))
    with Server(state_dir=d, args=SMALL) as s:
        eq([e["reason"] for e in s.events("journal_full_replay")], ["no checkpoint"], "logged")
        eq(s.shard_totals(), totals, "identical /v1/shards")
        eq(s.post(batch("b3", n=20)).body, bodies["b3"], "ids kept")


@case("segments")
def truncated_checkpoint_is_skipped():
    d, _, totals = rotated_state()
    older, newest = checkpoints(d)
    path = os.path.join(d, newest)
    write(path, read(path)[:100], "wb")
    with Server(state_dir=d, args=SMALL) as s:
        eq([e["reason"] for e in s.events("checkpoint_skipped")],
           ["not one line ending with its sha256 (torn)"], "skipped")
        eq(s.shard_totals(), totals, "totals kept")


@case("segment_faults")
def deleted_middle_segment_exit_3():
    d, _, _ = rotated_state()
    names = sealed(d)
    os.unlink(os.path.join(d, names[1]))
    seal1 = seal_of(read(os.path.join(d, names[0])))[0]
    start_fails(d, "journal: %s/%s: does not follow %s, which ends at seq %d (a segment is "
                "missing)" % (d, names[2], names[0], seal1["last_seq"]))


@case("segment_faults")
def truncated_middle_segment_exit_3():
    d, _, _ = rotated_state()
    name = sealed(d)[1]
    path = os.path.join(d, name)
    write(path, read(path)[:-30], "wb")
    start_fails(d, "journal: %s/%s: truncated: it does not end with a seal line" % (d, name))


@case("segment_faults")
def cut_after_seal_bytes_exit_3():
    d, _, _ = rotated_state()
    name = sealed(d)[1]
    path = os.path.join(d, name)
    data = read(path)
    lines = data.split(b"\n")
    write(path, b"\n".join(lines[:2] + lines[3:]), "wb")  # a whole record cut out
    start_fails(d, "journal: %s/%s: truncated: the seal's byte count is not the file's"
                % (d, name))


@case("segment_faults")
def swapped_segments_exit_3():
    d, _, _ = rotated_state()
    a, b = sealed(d)[1:3]
    os.rename(os.path.join(d, a), os.path.join(d, "x"))
    os.rename(os.path.join(d, b), os.path.join(d, a))
    os.rename(os.path.join(d, "x"), os.path.join(d, b))
    start_fails(d, "journal: %s/%s: its header's first_seq is not the one of its name (renamed "
                "or swapped)" % (d, a))


@case("segment_faults")
def replaced_segment_exit_3():
    d, _, _ = rotated_state()
    other, _, _ = rotated_state()
    names = sealed(d)
    # A segment of another history with the same first_seq: its prev links elsewhere.
    one = os.path.join(other, names[0])
    data = bytearray(read(one))
    data[data.index(b'"time":"') + 8] ^= 1  # another time: other bytes, another seal
    seal, body = seal_of(bytes(data))
    body = bytes(body)
    write(one, body + b'{"type":"seal","last_seq":%d,"bytes":%d,"sha256":"%s"}\n'
          % (seal["last_seq"], len(body), hashlib.sha256(body).hexdigest().encode()), "wb")
    shutil.copy(one, os.path.join(d, names[0]))
    start_fails(d, "journal: %s/%s: its header's prev is not the sha256 of %s's seal (swapped or "
                "replaced)" % (d, names[1], names[0]))


@case("segment_crash")
def active_ending_with_seal_finishes_rotation():
    d = tmpdir()
    with Server(state_dir=d, args=SMALL) as s:
        bodies = fill(s, 10)
        totals = s.shard_totals()
        eq(s.stop(), 0, "stop")
    for f in checkpoints(d):
        os.unlink(os.path.join(d, f))
    active = os.path.join(d, "journal.jsonl")
    body = read(active)
    write(active, body + b'{"type":"seal","last_seq":10,"bytes":%d,"sha256":"%s"}\n'
          % (len(body), hashlib.sha256(body).hexdigest().encode()), "wb")
    write(os.path.join(d, "journal.jsonl.new"), b"half a header", "wb")
    with Server(state_dir=d, args=SMALL) as s:
        eq(sealed(d), [seg_name(1)], "sealed under its name")
        ok(not os.path.exists(os.path.join(d, "journal.jsonl.new")), "leftover removed")
        body_sha = hashlib.sha256(body).hexdigest().encode()
        eq(read(active).split(b"\n")[0],
           b'{"type":"segment","first_seq":11,"prev":"%s"}' % body_sha, "the next segment")
        eq(s.shard_totals(), totals, "totals kept")
        eq(s.post(batch("b4", n=20)).body, bodies["b4"], "ids kept")
        eq(s.post(batch("b10", n=20)).status, 200, "a new batch")
    with Server(state_dir=d, args=SMALL) as s:
        eq(s.post(batch("b10", n=20)).headers.get("idempotent-replayed"), "true", "durable")


@case("segment_crash")
def missing_active_is_created():
    d, bodies, totals = rotated_state()
    os.unlink(os.path.join(d, "journal.jsonl"))
    for f in checkpoints(d):
        os.unlink(os.path.join(d, f))
    last = json.loads(read(os.path.join(d, sealed(d)[-1])).split(b"\n")[-2])
    # The receipts of the active segment are gone with it; the sealed ones stay.
    with Server(state_dir=d, args=SMALL) as s:
        head = read(os.path.join(d, "journal.jsonl")).split(b"\n")[0]
        eq(head, b'{"type":"segment","first_seq":%d,"prev":"%s"}'
           % (last["last_seq"] + 1, last["sha256"].encode()), "the next active segment")
        eq(s.post(batch("b0", n=20)).body, bodies["b0"], "sealed ids kept")


@case("segment_upgrade")
def legacy_state_upgrades_rotates_and_restarts():
    d = tmpdir()
    legacy = src("tests", "golden", "legacy-state", "journal.jsonl")
    shutil.copy(legacy, os.path.join(d, "journal.jsonl"))
    old = read(legacy).split(b"\n")
    with Server(state_dir=d, args=SMALL) as s:
        before = s.shard_totals()
        sample = s.get("/v1/batches/sample-0001")
        eq(sample.status, 200, "legacy receipt served")
        fill(s, 120, prefix="u")
        totals = s.shard_totals()
        eq(s.stop(), 0, "stop")
    names = sealed(d)
    ok(len(names) >= 2, "rotated: %r" % names)
    eq(read(os.path.join(d, names[0])).split(b"\n")[:3], old[:3], "the legacy lines kept as is")
    with Server(state_dir=d, args=SMALL) as s:
        ok(s.events("checkpoint_used"), "restarted from a checkpoint")
        eq(s.shard_totals(), totals, "every total kept")
        eq(s.get("/v1/batches/sample-0001").body, sample.body, "legacy receipt byte for byte")
        eq(s.get("/v1/batches/u0").status, 200, "new receipt")
        ok(all(totals[k][1] >= before[k][1] for k in before), "totals only grew")


@case("segment_options")
def option_ranges():
    base = ["serve", "--conf", src("conf", "dispatch.env"), "--shards",
            src("input", "shards.json"), "--state-dir", tmpdir(), "--listen", "127.0.0.1:0"]
    r = run_server(base + ["--segment-bytes", "65535"])
    eq((r.returncode, r.stderr.splitlines()[0]),
       (64, "shardgate: --segment-bytes must be an integer 65536..1099511627776, not \"65535\""),
       "segment-bytes minimum")
    r = run_server(base + ["--checkpoint-interval", "10"])
    eq((r.returncode, r.stderr.splitlines()[0]),
       (64, "shardgate: --checkpoint-interval must be a duration 100ms..1d (e.g. 90s, 12h, 30d), "
        "not \"10\""), "interval needs a unit")
    r = run_server(base + ["--idempotency-window", "12x"])
    eq((r.returncode, r.stderr.splitlines()[0]),
       (64, "shardgate: --idempotency-window must be a duration 1s..36500d (e.g. 90s, 12h, 30d), "
        "not \"12x\""), "window unit")


def journal_verify(d):
    return run_server(["journal", "verify", "--state-dir", d])


@case("segment_verify")
def verify_ok_then_seal_hash_fault():
    d, _, _ = rotated_state()
    r = journal_verify(d)
    n = len(sealed(d))
    eq((r.returncode, r.stdout, r.stderr),
       (0, "journal: OK: %d sealed segments, 150 receipts, 2 checkpoints\n" % n, ""), "verified")
    name = sealed(d)[1]
    path = os.path.join(d, name)
    data = bytearray(read(path))
    at = data.index(b'"batch_id":"') + 12
    data[at] = ord("Z") if data[at] != ord("Z") else ord("Y")  # same length, other id
    write(path, bytes(data), "wb")
    r = journal_verify(d)
    eq((r.returncode, r.stderr),
       (3, "journal: %s/%s: the seal's sha256 is not that of the bytes before it\n" % (d, name)),
       "a sealed segment edited in place: only the hash sees it")


@case("segment_verify")
def verify_refused_while_serving():
    d = tmpdir()
    with Server(state_dir=d, args=SMALL) as s:
        eq(s.post(batch("v1")).status, 200, "post")
        r = journal_verify(d)
        eq((r.returncode, r.stderr), (1, "journal: %s: in use by another process\n" % d), "busy")


@case("segment_verify")
def verify_reports_a_bad_checkpoint():
    d, _, _ = rotated_state()
    newest = checkpoints(d)[-1]
    path = os.path.join(d, newest)
    write(path, read(path)[:-5] + b"00\"}\n", "wb")
    r = journal_verify(d)
    eq((r.returncode, r.stderr),
       (3, "checkpoint: %s/%s: sha256 does not match its bytes (torn or edited)\n" % (d, newest)),
       "checkpoint fault")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
