"""Journal segments and checkpoints (docs/journal.md §6 and §7): rotation over real
HTTP with exact files, header and seal bytes; receipts served from sealed segments; checkpoints
at shutdown used at restart, a corrupt one skipped, none at all (a full replay); the start
checks (deleted, truncated, swapped, replaced segment: exit 3); the crash states of a rotation;
a state dir written by an older main upgraded."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, batch, case, eq, main, ok, read, run, run_server, src, tmpdir, write

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
    return sgtest.post_batches(s, n, prefix, changes)


def seal_of(data):
    """(seal dict, the bytes before the seal line) of a sealed segment's bytes."""
    lines = data.split(b"\n")
    eq(lines[-1], b"", "a sealed segment ends with a newline")
    return json.loads(sgtest.record_of(lines[-2])), data[:len(data) - len(lines[-2]) - 1]


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
               sgtest.with_crc(b'{"type":"seal","last_seq":%d,"bytes":%d,"sha256":"%s"}'
                               % (seal["last_seq"], len(body),
                                  hashlib.sha256(body).hexdigest().encode())),
               name + ": seal line")
            ok(len(data) <= 65536 + 4096, name + ": about --segment-bytes")
            first = int(name[8:28])
            lines = body.split(b"\n")
            if first == 1:
                epoch_line = lines[0]
            else:
                eq(lines[0], sgtest.with_crc(b'{"type":"segment","first_seq":%d,"prev":"%s"}'
                                             % (first, prev_seal["sha256"].encode())),
                   name + ": header")
                eq(lines[1], epoch_line, name + ": the epoch record repeated byte for byte")
                eq(first, prev_seal["last_seq"] + 1, name + ": first_seq follows")
            prev_seal = seal
        active = read(os.path.join(d, "journal.jsonl")).split(b"\n")
        eq(active[0], sgtest.with_crc(b'{"type":"segment","first_seq":%d,"prev":"%s"}'
                                      % (prev_seal["last_seq"] + 1,
                                         prev_seal["sha256"].encode())), "active header")
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
def deleted_index_rebuilt_from_the_segments():
    """The index is derived (docs/journal.md §9): without its files, the checkpoint still
    stands for the totals and every id it covers comes back from the segments, the first and
    the last included."""
    d, bodies, totals = rotated_state()
    shutil.rmtree(os.path.join(d, "index"))
    with Server(state_dir=d, args=SMALL) as s:
        eq(s.shard_totals(), totals, "totals from the checkpoint")
        conn = s.connect()
        for bid in ("b0", "b1", "b75", "b149"):
            r = s.post(batch(bid, n=20), conn=conn)
            eq((r.status, r.body, r.headers.get("idempotent-replayed")),
               (200, bodies[bid], "true"), "replayed: " + bid)
        conn.close()
        eq(s.shard_totals(), totals, "nothing dispatched twice")


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
    write(active, body + sgtest.with_crc(b'{"type":"seal","last_seq":10,"bytes":%d,"sha256":"%s"}'
                                         % (len(body), hashlib.sha256(body).hexdigest().encode()))
          + b"\n", "wb")
    write(os.path.join(d, "journal.jsonl.new"), b"half a header", "wb")
    with Server(state_dir=d, args=SMALL) as s:
        eq(sealed(d), [seg_name(1)], "sealed under its name")
        ok(not os.path.exists(os.path.join(d, "journal.jsonl.new")), "leftover removed")
        body_sha = hashlib.sha256(body).hexdigest().encode()
        eq(read(active).split(b"\n")[0],
           sgtest.with_crc(b'{"type":"segment","first_seq":11,"prev":"%s"}' % body_sha),
           "the next segment")
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
        eq(head, sgtest.with_crc(b'{"type":"segment","first_seq":%d,"prev":"%s"}'
                                 % (last["last_seq"] + 1, last["sha256"].encode())),
           "the next active segment")
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
def checkpoint_interval_is_honoured():
    """--checkpoint-interval 500ms: once a checkpoint is written, the next one after a new
    batch comes within 8 s (16 intervals of margin), before the default 10 s could bring it."""
    with Server(args=["--checkpoint-interval", "500ms"]) as s:
        eq(s.post(batch("ck-1")).status, 200, "POST ck-1")
        sgtest.wait_until(lambda: s.events("checkpoint_written"), 30, "the first checkpoint")
        written = len(s.events("checkpoint_written"))
        eq(s.post(batch("ck-2")).status, 200, "POST ck-2")
        sgtest.wait_until(lambda: len(s.events("checkpoint_written")) > written, 8,
                          "a checkpoint within 8 s of ck-2 (--checkpoint-interval 500ms)")


@case("segment_options")
def a_quarter_segment_brings_a_checkpoint():
    """--segment-bytes 65536 and --checkpoint-interval 1d: the first group that grows the active
    segment by a quarter (16,384 bytes) since the start brings a checkpoint at its end, before
    any rotation, and none comes before it (docs/journal.md §7)."""
    with Server(args=SMALL + ["--checkpoint-interval", "1d"]) as s:
        active = os.path.join(s.state_dir, "journal.jsonl")
        start = os.path.getsize(active)
        n = 0
        while os.path.getsize(active) < start + 16384:
            n += 1
            eq(s.post(batch("quarter-%d" % n, n=20)).status, 200, "POST quarter-%d" % n)
        crossed = os.path.getsize(active)
        ok(n > 2, "several batches before the quarter (%d)" % n)
        # written by its own thread just after: ten seconds, many times what it takes
        sgtest.wait_until(lambda: s.events("checkpoint_written"), 10, "a checkpoint")
        eq([(e["last_seq"], e["offset"]) for e in s.events("checkpoint_written")], [(n, crossed)],
           "one checkpoint, at the end of the group that passed the quarter")
        eq(sealed(s.state_dir), [], "no rotation")


@case("segment_options")
def idempotency_window_is_honoured():
    """--idempotency-window 1s: a batch is replayed at first, and its id is refused as expired
    (422 batch_id_expired, never dispatched again) no sooner than 1 s after it was acknowledged
    and well before the default (for ever) would."""
    with Server(args=["--idempotency-window", "1s"]) as s:
        r = s.post(batch("win-1"))
        eq(r.status, 200, "POST win-1")
        acked = time.time()
        first = r.body

        def expired():
            again = s.post(batch("win-1"))
            if again.status == 200:
                eq(again.body, first, "a replay within the window answers the same receipt")
                return False
            eq((again.status, again.error()), (422, ("batch_id_expired", "batch_id")), "expired")
            return True
        sgtest.wait_until(expired, 10, "win-1 to expire (--idempotency-window 1s)", step=0.1)
        ok(time.time() - acked >= 1.0, "expired after the window, not before (%.2f s)"
           % (time.time() - acked))
        eq([l["receipt"]["batch_id"] for l in sgtest.journal_receipts(s.state_dir)], ["win-1"],
           "dispatched once")


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
    good = read(path)
    lines = good.split(b"\n")
    at = next(i for i, l in enumerate(lines) if b'"batch_id":"' in l)
    rec = bytearray(sgtest.record_of(lines[at]))
    k = rec.index(b'"batch_id":"') + 12
    rec[k] = ord("Z") if rec[k] != ord("Z") else ord("Y")  # same length, other id
    edited = lines[:at] + [sgtest.with_crc(bytes(rec))] + lines[at + 1:]
    write(path, b"\n".join(edited), "wb")
    r = journal_verify(d)
    eq((r.returncode, r.stderr),
       (3, "journal: %s/%s: the seal's sha256 is not that of the bytes before it\n" % (d, name)),
       "a line edited with its checksum made right: only the hash sees it")
    # the same byte changed, the line's crc32 member kept as it was
    flipped = lines[:at] + [bytes(rec[:-1]) + lines[at][len(rec) - 1:]] + lines[at + 1:]
    write(path, b"\n".join(flipped), "wb")
    r = journal_verify(d)
    eq((r.returncode, r.stderr),
       (3, "journal: %s/%s:%d: checksum mismatch: the line's crc32 is not that of its bytes\n"
        % (d, name, at + 1)), "a byte changed in place: the line's checksum sees it first")


@case("segment_verify")
def verify_refused_while_serving():
    d = tmpdir()
    with Server(state_dir=d, args=SMALL) as s:
        eq(s.post(batch("v1")).status, 200, "post")
        r = journal_verify(d)
        eq((r.returncode, r.stderr), (75, "journal: %s: in use by another process\n" % d), "busy")
        r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--state-dir", d, "--listen", "127.0.0.1:0"])
        eq((r.returncode, r.stderr), (75, "journal: %s: in use by another process\n" % d),
           "a second serve on the same state dir")


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


def journal_archive(d, adir, *extra):
    return run_server(["journal", "archive", "--state-dir", d, "--dir", adir] + list(extra))


def archive_lines(d, names, plain):
    """The archive.jsonl lines expected for these sealed segments (read before the archive)."""
    out = []
    for name, data in names:
        first = int(name[len("journal-"):-len(".jsonl")])
        out.append('{"name":"%s","first_seq":%d,"last_seq":%d,"bytes":%d,"sha256":"%s",'
                   '"archived_as":"%s"}\n' % (name, first, seal_of(data)[0]["last_seq"],
                                              len(data), hashlib.sha256(data).hexdigest(),
                                              name if plain else name + ".zst"))
    return "".join(out)


def archived_state(plain):
    """A rotated state dir archived: (d, adir, bodies, totals, [(name, bytes)] archived)."""
    d, bodies, totals = rotated_state()
    before = [(n, read(os.path.join(d, n))) for n in sealed(d)]
    adir = os.path.join(tmpdir(), "archive")
    os.mkdir(adir)
    r = journal_archive(d, adir, *(["--plain"] if plain else []))
    eq((r.returncode, r.stdout, r.stderr),
       (0, "journal: archived %d segments (0 completed from an earlier run) through seq 150\n"
        % len(before), ""), "archived every sealed segment the shutdown checkpoint covers")
    return d, adir, bodies, totals, before


def unzstd(path):
    return subprocess.run(["zstd", "-q", "-d", "-c", path], stdout=subprocess.PIPE,
                          check=True).stdout


@case("segment_archive")
def archive_zstd_and_plain_exact_files():
    for plain in (False, True):
        d, adir, _, _, before = archived_state(plain)
        eq(sealed(d), [], "no sealed segment left in the state dir")
        eq(read(os.path.join(d, "archive.jsonl")).decode(), archive_lines(d, before, plain),
           "archive.jsonl lines")
        suffix = "" if plain else ".zst"
        eq(sorted(os.listdir(adir)), [n + suffix for n, _ in before], "files in the archive dir")
        for name, data in before:
            path = os.path.join(adir, name + suffix)
            got = read(path) if plain else unzstd(path)
            eq(hashlib.sha256(got).hexdigest(), hashlib.sha256(data).hexdigest(),
               "the original bytes of " + name)


@case("segment_archive")
def archive_refused_while_serving():
    d = tmpdir()
    adir = tmpdir()
    with Server(state_dir=d, args=SMALL) as s:
        eq(s.post(batch("a1")).status, 200, "post")
        r = journal_archive(d, adir)
        eq((r.returncode, r.stdout, r.stderr),
           (75, "", "journal: %s: in use by another process\n" % d), "busy")
    eq(os.listdir(adir), [], "nothing archived")


@case("segment_archive")
def archive_only_what_a_checkpoint_covers():
    d, _, _ = rotated_state()
    cps = checkpoints(d)
    os.unlink(os.path.join(d, cps[-1]))  # the older one (the last rotation's) stays
    older = json.loads(read(os.path.join(d, cps[0])))["last_seq"]
    want = [n for n in sealed(d) if seal_of(read(os.path.join(d, n)))[0]["last_seq"] <= older]
    keep = [n for n in sealed(d) if n not in want]
    adir = tmpdir()
    r = journal_archive(d, adir, "--plain")
    eq((r.returncode, r.stdout),
       (0, "journal: archived %d segments (0 completed from an earlier run) through seq %d\n"
        % (len(want), older)), "only the covered ones")
    eq((sorted(os.listdir(adir)), sealed(d)), (want, keep), "moved and kept")
    d2, _, _ = rotated_state()
    for c in checkpoints(d2):
        os.unlink(os.path.join(d2, c))
    r = journal_archive(d2, adir)
    eq((r.returncode, r.stdout),
       (0, "journal: archived 0 segments (0 completed from an earlier run) through seq 0\n"),
       "no checkpoint: nothing archived")


def covering_checkpoint(d):
    """(name, bytes) of the first checkpoint in d that covers a sealed segment, or None. Those
    written at a quarter of the first segment cover none; one may be pruned while it is read."""
    for name in checkpoints(d):
        try:
            data = read(os.path.join(d, name))
        except OSError:
            continue
        last = json.loads(data)["last_seq"]
        if any(seal_of(read(os.path.join(d, n)))[0]["last_seq"] <= last for n in sealed(d)):
            return name, data
    return None


@case("segment_archive")
def archive_stops_at_an_older_checkpoint():
    """With only an early checkpoint left, the sealed segments after it stay."""
    d = tmpdir()
    early = None
    with Server(state_dir=d, args=SMALL) as s:
        for i in range(400):
            eq(s.post(batch("e%d" % i, n=20)).status, 200, "post")
            early = early or covering_checkpoint(d)
            if early and len(sealed(d)) >= 4:
                break
        eq(s.stop(), 0, "clean stop")
    ok(early and len(sealed(d)) >= 4, "an early checkpoint and four sealed segments")
    for c in checkpoints(d):
        os.unlink(os.path.join(d, c))
    write(os.path.join(d, early[0]), early[1], "wb")
    last = json.loads(early[1])["last_seq"]
    want = [n for n in sealed(d) if seal_of(read(os.path.join(d, n)))[0]["last_seq"] <= last]
    ok(want and len(want) < len(sealed(d)), "the early checkpoint covers some, not all")
    keep = [n for n in sealed(d) if n not in want]
    adir = tmpdir()
    r = journal_archive(d, adir, "--plain")
    eq((r.returncode, sorted(os.listdir(adir)), sealed(d)), (0, want, keep),
       "only what the checkpoint covers: %s" % r.stderr)


@case("segment_archive")
def restart_after_archive_knows_every_id():
    d, adir, bodies, totals, before = archived_state(False)
    archived_ids = {}
    for _, data in before:
        for l in data.split(b"\n"):
            if l.startswith(b'{"type":"receipt"'):
                rec = json.loads(l)
                archived_ids[rec["receipt"]["batch_id"]] = rec["seq"]
    with Server(state_dir=d, args=SMALL) as s:
        eq(s.shard_totals(), totals, "totals kept")
        conn = s.connect()
        for bid, body in sorted(bodies.items()):
            r = s.post(batch(bid, n=20), conn=conn)
            if bid in archived_ids:
                seq = archived_ids[bid]
                msg = ('the receipt of batch_id "%s" (seq %d) is in an archived journal segment;'
                       ' it is never dispatched again' % (bid, seq))
                want = {"error": {"code": "receipt_archived", "message": msg,
                                  "path": "batch_id"}, "seq": seq}
                eq((r.status, r.json()), (410, want), "a retry of an archived receipt: " + bid)
                g = s.get("/v1/batches/" + bid, conn=conn)
                eq((g.status, g.json()), (410, want), "GET of an archived receipt: " + bid)
            else:
                eq((r.status, r.body), (200, body), "a present receipt: " + bid)
        conn.close()
        ok(len(archived_ids) > 0 and len(archived_ids) < len(bodies), "both kinds met")
        eq(s.post(batch("fresh", n=20)).status, 200, "a new id")
        eq(s.shard_totals() != totals, True, "the new batch counted, the archived ones not again")


@case("segment_archive")
def archived_segment_without_covering_checkpoint_exit_3():
    d, _, _, _, before = archived_state(True)
    for c in checkpoints(d):
        os.unlink(os.path.join(d, c))
    start_fails(d, "journal: %s/%s: archived (archive.jsonl) and no usable checkpoint covers it"
                % (d, before[0][0]))


@case("segment_archive")
def archive_rerun_after_a_crash_completes():
    d, _, _ = rotated_state()
    crash = tmpdir()
    shutil.rmtree(crash)
    shutil.copytree(d, crash)
    adir = tmpdir()
    r = journal_archive(d, adir)
    eq(r.returncode, 0, "a whole run")
    lines = read(os.path.join(d, "archive.jsonl")).decode().splitlines(True)
    # the crash: the first segment copied, listed, not yet unlinked; the second's copy torn
    cdir = tmpdir()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    shutil.copy(os.path.join(adir, first["archived_as"]), cdir)
    write(os.path.join(cdir, second["archived_as"] + ".tmp"), b"torn", "wb")
    write(os.path.join(crash, "archive.jsonl"), lines[0].encode(), "wb")
    with Server(state_dir=crash, args=SMALL) as s:  # the crash state starts
        eq(s.post(batch("b0", n=20)).status, 200, "a present id")
    r = journal_archive(crash, cdir)
    eq((r.returncode, r.stdout),
       (0, "journal: archived %d segments (1 completed from an earlier run) through seq 150\n"
        % (len(lines) - 1)), "the re-run completes")
    eq(read(os.path.join(crash, "archive.jsonl")).decode(), "".join(lines), "same list")
    eq(sorted(os.listdir(cdir)), sorted(os.listdir(adir)), "same files, no .tmp left")


def health_on(d, *extra):
    """(exit code, verdict) of shardgate-health check on the state dir's journal."""
    r = run([sgtest.HEALTH, "check", "--conf", src("conf", "dispatch.env"), "--shards",
             src("input", "shards.json"), "--journal", os.path.join(d, "journal.jsonl")]
            + list(extra))
    return r.returncode, json.loads(r.stdout)


@case("segment_archive")
def health_verifies_the_gateways_own_archive():
    """shardgate-health reads what `shardgate journal archive` wrote: with --archive-dir every
    archived receipt is judged; without it they cannot be judged (exit 2); a changed byte in an
    archived file is named."""
    for plain in (False, True):
        d, adir, _, _, before = archived_state(plain)
        rc, v = health_on(d, "--archive-dir", adir)
        eq((rc, v["status"], v["receipts"], v["issues"]), (0, "pass", 150, []),
           "the archive verified (plain=%s)" % plain)
        rc, v = health_on(d)
        eq((rc, v["status"], sorted(i.split(":")[0] for i in v["issues"])),
           (2, "fail", ["journal_archived_unverified"] * len(before)),
           "without --archive-dir (plain=%s)" % plain)
    name = before[0][0]
    data = bytearray(read(os.path.join(adir, name)))
    data[len(data) // 2] ^= 1
    write(os.path.join(adir, name), bytes(data), "wb")
    rc, v = health_on(d, "--archive-dir", adir)
    eq((rc, [i.split(": ")[:2] for i in v["issues"]]), (2, [["journal_archive", name]]),
       "the changed archived file is named")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "health", "source")))
