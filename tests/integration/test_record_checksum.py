#!/usr/bin/env python3
"""No damaged byte is served (docs/journal.md §2.1, docs/operations.md §5.2): every journal
line carries a crc32, and every read checks it. A byte changed in a line — a receipt, an epoch
record, a segment header or seal, at the head, the middle or the tail of a segment — is named by
whatever reads it: the start's replay (exit 3), `GET /v1/batches/{id}`, `/v1/receipts` and the
assignment feed (500 record_corrupt, /readyz 503), `journal verify`, `shardgate-health` and
`probe.py journal`; never answered as bytes. The documented repair brings everything back.

usage: test_record_checksum.py SHARDGATE_BINARY SHARDGATE_HEALTH SOURCE_DIR [CASE... | --group G]
"""
import json
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, case, eq, main, ok, read, run, run_server, src, tmpdir, write

SMALL = ["--segment-bytes", "65536"]
# The reads under test alone: the scrub, which would find the damage too, is tested on its own.
NO_SCRUB = ["--scrub-rate", "0"]
MISMATCH = "checksum mismatch: the line's crc32 is not that of its bytes"
# Lines the start checks itself at every start, whatever the checkpoints cover.
START_CHECKED = {"a seal": "seal", "a segment header": "header"}


def flip(path, number):
    """Changes two bytes in the middle of line `number` (1-based) of a file; its length stays.
    Returns the line's offset."""
    data = bytearray(read(path))
    starts = [0] + [i + 1 for i, c in enumerate(data) if c == ord("\n")]
    at, end = starts[number - 1], starts[number] - 1
    mid = (at + end) // 2
    for k in (mid, mid + 1):
        data[k] = ord("x") if data[k] != ord("x") else ord("y")
    write(path, bytes(data), "wb")
    return at


def error_of(r):
    doc = r.json()
    return r.status, doc["error"]["code"], doc["error"]["message"]


def damage(seq, name, offset):
    return ("journal record damaged: seq %d in %s (the line at offset %d): %s; nothing of it is "
            "served (docs/operations.md §5.2)" % (seq, name, offset, MISMATCH))


def metric(s, name):
    for line in s.get("/metrics").body.decode().splitlines():
        if line.startswith(name + " "):
            return line.split(" ", 1)[1]
    return None


def verifiers(d, shards=None):
    """(journal verify's exit and stderr, health's exit, probe.py journal's exit)."""
    v = run_server(["journal", "verify", "--state-dir", d])
    h = run([sgtest.HEALTH, "check", "--conf", src("conf", "dispatch.env"), "--shards",
             shards or src("input", "shards.json"), "--journal", os.path.join(d, "journal.jsonl")])
    p = run([sys.executable, src("client", "probe.py"), "journal", "--state-dir", d])
    return (v.returncode, v.stderr), h.returncode, p.returncode


@case("record_checksum")
def a_flipped_receipt_is_never_served():
    """Two bytes of a receipt line of the active segment changed after a clean stop: the start
    uses the checkpoint that covers the line, and every read that reaches it answers 500
    record_corrupt, never 200; the repair (the line's bytes put back) serves it again. The
    checkpoint's own last line is read at every start: damaged, it makes the checkpoint unusable
    and the full replay refuses the start, naming the line."""
    d = tmpdir()
    with Server(state_dir=d) as s:
        bodies = sgtest.post_batches(s, 5, "r", 8)
        eq(s.stop(), 0, "clean stop")
    path = os.path.join(d, "journal.jsonl")
    good = read(path)
    lines = good.split(b"\n")
    eq([json.loads(l)["seq"] for l in lines[4:6]], [4, 5], "lines 5 and 6: receipts 4 and 5")
    offset = flip(path, 5)
    bid = json.loads(sgtest.record_of(lines[4]))["receipt"]["batch_id"]
    with Server(state_dir=d, args=NO_SCRUB) as s:
        eq(s.get("/readyz").status, 200, "ready: nothing damaged read yet")
        want = (500, "record_corrupt", damage(4, "journal.jsonl", offset))
        eq(error_of(s.get("/v1/batches/" + bid)), want, "GET of the damaged receipt")
        for other in sorted(set(bodies) - {bid}):
            eq((s.get("/v1/batches/" + other).body), bodies[other], "the others are whole")
        eq(error_of(s.get("/v1/receipts?after=0")), want, "/v1/receipts reaching it")
        eq(s.get("/v1/receipts?after=0&limit=3").status, 200, "a page that ends before it")
        eq(error_of(s.get("/v1/receipts?after=4")), want, "a read passing over it on its way")
        shard = json.loads(sgtest.record_of(lines[4]))["receipt"]["placements"][0]["shard"]
        eq(error_of(s.get("/v1/shards/%s/assignments?after=3" % shard)), want, "the feed")
        r = s.get("/readyz")
        eq((r.status, r.json()), (503, {"status": "unready", "checks": {"journal": "damaged",
                                                                         "ring": "ok"}}), "readyz")
        eq(metric(s, "shardgate_record_checksum_failures_total"), "4", "metric")
        # the log lines reach the test through the server's stderr pipe, after the answers
        sgtest.wait_until(lambda: len(s.events("record_checksum_failed")) >= 4, 10,
                          "the four record_checksum_failed lines")
        eq([(e["file"], e["seq"], e["offset"]) for e in s.events("record_checksum_failed")],
           [("journal.jsonl", 4, offset)] * 4, "logged")
        eq(s.stop(), 0, "clean stop")
    eq(verifiers(d)[0], (3, "journal: %s:5: %s\n" % (path, MISMATCH)), "journal verify")
    write(path, good, "wb")  # the repair: the line's bytes back (docs/operations.md §5.2)
    with Server(state_dir=d) as s:
        eq((s.get("/v1/batches/" + bid).body), bodies[bid], "served again after the repair")
        eq(s.get("/readyz").status, 200, "ready again")
        eq(metric(s, "shardgate_record_checksum_failures_total"), "0", "metric")
        eq(s.stop(), 0, "clean stop")
    eq(verifiers(d), ((0, ""), 0, 0), "the verifiers pass the repaired state dir")
    flip(path, 6)  # the last receipt: the one the shutdown checkpoint's cover reads
    r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                    src("input", "shards.json"), "--state-dir", d, "--listen", "127.0.0.1:0"])
    eq((r.returncode, r.stderr.splitlines()[-1]), (3, "journal: %s:6: %s" % (path, MISMATCH)),
       "the checkpoint's last line damaged: unusable, and the full replay refuses the start")


def change_byte(path, number, at):
    """Byte `at` of line `number` (1-based) of a file changed; its length stays."""
    data = bytearray(read(path))
    k = [0] + [i + 1 for i, c in enumerate(data) if c == ord("\n")]
    data[k[number - 1] + at] = ord("x") if data[k[number - 1] + at] != ord("x") else ord("y")
    write(path, bytes(data), "wb")


@case("record_checksum")
def the_start_reads_no_unchecked_line_where_it_resumes():
    """A clean stop's checkpoint lies in the active segment, so the replay resumes there and
    reads none of the lines before it. The start still checks, and refuses with exit 3 naming
    the line (docs/journal.md §7): the active segment's header; the epoch record before the
    offset; a receipt whose prefix no longer reads as one, which the ids scan re-inserting into
    a removed index would otherwise pass over, leaving an acknowledged batch 404 and open to a
    second dispatch."""
    pristine = tmpdir()
    with Server(state_dir=pristine, args=SMALL) as s:
        bodies = sgtest.post_batches(s, 40, "h", 20)
        eq(s.stop(), 0, "clean stop")
    active = read(os.path.join(pristine, "journal.jsonl")).split(b"\n")[:-1]
    ok(active[0].startswith(b'{"type":"segment"') and len(active) >= 4, "a rotated segment")
    receipt = json.loads(sgtest.record_of(active[2]))["receipt"]["batch_id"]
    for what, number, at, no_index in [("the header", 1, 20, False),
                                       ("the epoch repeat", 2, 30, False),
                                       ("a receipt's prefix", 3, 3, True)]:
        d = os.path.join(tmpdir(), "state")
        shutil.copytree(pristine, d)
        path = os.path.join(d, "journal.jsonl")
        change_byte(path, number, at)
        if no_index:
            shutil.rmtree(os.path.join(d, "index"))
        r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--state-dir", d, "--listen", "127.0.0.1:0"]
                       + SMALL)
        eq((r.returncode, [l for l in r.stderr.splitlines() if not l.startswith("{")]),
           (3, ["journal: %s:%d: %s" % (path, number, MISMATCH)]), what + ": the start")
        write(path, read(os.path.join(pristine, "journal.jsonl")), "wb")  # the repair
        with Server(state_dir=d, args=SMALL) as s:
            eq(s.get("/v1/batches/" + receipt).body, bodies[receipt], what + ": repaired")
            eq(s.stop(), 0, "clean stop")


def segmented_state():
    """A stopped state dir with sealed segments and a SIGHUP epoch record inside one: (dir,
    shards file, bodies)."""
    d = tmpdir()
    shards = os.path.join(tmpdir(), "shards.json")
    doc = json.loads(read(src("input", "shards.json")))
    write(shards, json.dumps(doc))
    with Server(state_dir=d, shards=shards, args=SMALL) as s:
        bodies = sgtest.post_batches(s, 40, "a", 20)
        for sh in doc["shards"]:
            sh["state"] = "online"
        before = len(s.events("reload_applied"))
        write(shards, json.dumps(doc))
        s.proc.send_signal(signal.SIGHUP)
        sgtest.wait_until(lambda: len(s.events("reload_applied")) > before, 30, "reload")
        bodies.update(sgtest.post_batches(s, 40, "b", 20))
        eq(s.stop(), 0, "clean stop")
    return d, shards, bodies


def targets(d):
    """[(what, file name, line number, seq of a receipt in the line or None)]: a line of every
    kind at the head, the middle and the tail of segments."""
    names = sorted(f for f in os.listdir(d) if f.startswith("journal-"))
    ok(len(names) >= 3, "sealed segments: %r" % names)
    first = read(os.path.join(d, names[0])).split(b"\n")[:-1]
    second = read(os.path.join(d, names[1])).split(b"\n")[:-1]
    active = read(os.path.join(d, "journal.jsonl")).split(b"\n")[:-1]
    epoch_at = None
    for name in names + ["journal.jsonl"]:
        for n, l in enumerate(read(os.path.join(d, name)).split(b"\n")[:-1], 1):
            if n > 2 and l.startswith(b'{"type":"epoch"'):
                epoch_at = (name, n)
    ok(epoch_at is not None, "the SIGHUP's epoch record inside a segment")
    seq = lambda line: json.loads(sgtest.record_of(line))["seq"]
    middle = len(second) // 2
    return [("the first segment's first epoch record", names[0], 1, None),
            ("a receipt at a segment's head", names[0], 2, seq(first[1])),
            ("a receipt at a segment's tail", names[0], len(first) - 1, seq(first[-2])),
            ("a seal", names[0], len(first), None),
            ("a segment header", names[1], 1, None),
            ("an epoch repeat", names[1], 2, None),
            ("a receipt in the middle", names[1], middle, seq(second[middle - 1])),
            ("an epoch record inside a segment",) + epoch_at + (None,),
            # its last one is the one the shutdown checkpoint's cover reads (see above)
            ("a receipt before the active segment's last", "journal.jsonl", len(active) - 1,
             seq(active[-2]))]


@case("record_checksum")
def every_kind_of_line_is_checked_wherever_it_is():
    """For each target line, covered by the shutdown checkpoint: the start succeeds, the reads
    that reach the line answer record_corrupt (GET for a receipt; the feed from 0 for any line),
    and journal verify, health and probe.py refuse the state dir. Without the checkpoints the
    start itself refuses with exit 3, naming the file and line. A seal or a segment header is
    read by the start's checks of every sealed segment, so those refuse the start anyway."""
    pristine, shards, bodies = segmented_state()
    for what, name, number, seq in targets(pristine):
        d = os.path.join(tmpdir(), "state")
        shutil.copytree(pristine, d)
        path = os.path.join(d, name)
        offset = flip(path, number)
        serve = ["serve", "--conf", src("conf", "dispatch.env"), "--shards", shards,
                 "--state-dir", d, "--listen", "127.0.0.1:0"] + SMALL
        if what in START_CHECKED:
            r = run_server(serve)
            eq((r.returncode, r.stderr), (3, "journal: %s: %s line: %s\n"
                                          % (path, START_CHECKED[what], MISMATCH)), what + ": start")
            continue
        with Server(state_dir=d, shards=shards, args=SMALL + NO_SCRUB) as s:
            r = s.get("/v1/receipts?after=0&limit=1000")
            eq((r.status, r.json()["error"]["code"]), (500, "record_corrupt"), what + ": feed")
            ok(("in %s (the line at offset %d)" % (name, offset)) in r.json()["error"]["message"],
               what + ": the feed names the line: " + r.json()["error"]["message"])
            refused = []
            for bid, body in bodies.items():
                r = s.get("/v1/batches/" + bid)
                if r.status == 200:
                    eq(r.body, body, what + ": GET " + bid)
                else:
                    refused.append((r.status, r.json()["error"]["message"]))
            eq(refused, [] if seq is None else [(500, damage(seq, name, offset))],
               what + ": GET of every batch: only a damaged receipt is refused")
            eq(s.get("/readyz").status, 503, what + ": unready once a damaged line was read")
            eq(s.stop(), 0, "clean stop")
        (vrc, verr), hrc, prc = verifiers(d, shards)
        eq((vrc, hrc, prc), (3, 2, 1), what + ": verify, health, probe: " + verr)
        ok(name in verr, what + ": verify names the file: " + verr)
        for f in os.listdir(d):
            if f.startswith("checkpoint-"):
                os.unlink(os.path.join(d, f))
        r = run_server(serve)
        eq((r.returncode, r.stderr), (3, "journal: %s:%d: %s\n" % (path, number, MISMATCH)),
           what + ": without checkpoints the replay reads the line and refuses the start")


def scrubbed(s):
    """Waits for the scrub's first complete pass; returns the metrics then."""
    sgtest.wait_until(lambda: metric(s, "shardgate_scrub_passes_total") not in (None, "0"), 60,
                      "a complete scrub pass")
    return {k: metric(s, "shardgate_" + k) for k in (
        "scrub_passes_total", "scrub_read_bytes_total", "record_checksum_failures_total")}


def scrub_bytes(d):
    """What a pass reads: each sealed segment's bytes before its seal, the active one whole."""
    total = os.path.getsize(os.path.join(d, "journal.jsonl"))
    for name in os.listdir(d):
        if name.startswith("journal-"):
            data = read(os.path.join(d, name))
            total += len(data) - len(data[:-1].rsplit(b"\n", 1)[1]) - 1
    return total


@case("record_checksum")
def the_scrub_finds_damage_no_reader_met():
    """The scrub (--scrub-rate, docs/journal.md §2.1) re-reads every segment: over a whole
    state dir it reads every byte and finds nothing; a byte changed in a sealed receipt that no
    request reads is found — the line's checksum and the seal's sha256 —, logged, counted, and
    /readyz turns unready. --scrub-rate 0 starts no scrub."""
    pristine, shards, _ = segmented_state()
    d = os.path.join(tmpdir(), "state")
    shutil.copytree(pristine, d)
    with Server(state_dir=d, shards=shards, args=SMALL) as s:
        eq([e["rate"] for e in s.events("scrub_started")], [8388608], "started at the default")
        eq(scrubbed(s), {"scrub_passes_total": "1", "scrub_read_bytes_total": str(scrub_bytes(d)),
                         "record_checksum_failures_total": "0"}, "a clean pass")
        ok(int(metric(s, "shardgate_scrub_last_pass_timestamp_seconds")) > 1700000000,
           "the pass's time")
        eq(s.get("/readyz").status, 200, "ready")
        eq(s.stop(), 0, "clean stop")
    name = sorted(f for f in os.listdir(d) if f.startswith("journal-"))[1]
    path = os.path.join(d, name)
    lines = read(path).split(b"\n")
    offset = flip(path, len(lines) // 2)
    seal_at = len(read(path)) - len(lines[-2]) - 1
    with Server(state_dir=d, shards=shards, args=SMALL) as s:
        eq(scrubbed(s)["record_checksum_failures_total"], "2", "found by the scrub")
        eq([(e["file"], e["offset"], e["by"], e["what"]) for e in s.events(
            "record_checksum_failed")], [(name, offset, "scrub", MISMATCH), (
                name, seal_at, "scrub", "the seal's sha256 is not that of the bytes before it")],
           "logged")
        eq(s.get("/readyz").json()["checks"]["journal"], "damaged", "readyz")
        eq(s.stop(), 0, "clean stop")
    with Server(state_dir=d, shards=shards, args=SMALL + ["--scrub-rate", "0"]) as s:
        eq(s.events("scrub_started"), [], "no scrub")
        eq(s.get("/readyz").status, 200, "nothing damaged read")
        eq(s.stop(), 0, "clean stop")


@case("record_checksum")
def the_scrub_keeps_to_its_rate():
    """A pass over B bytes at --scrub-rate R takes at least B/R seconds (a lower bound, with a
    margin for the start: a slower machine only takes longer)."""
    d, shards, _ = segmented_state()
    rate = 250000
    want = scrub_bytes(d) / rate
    ok(want > 1.0, "a pass of more than a second: %.2f s" % want)
    with Server(state_dir=d, shards=shards, args=SMALL + ["--scrub-rate", str(rate)]) as s:
        t0 = time.monotonic()
        scrubbed(s)
        took = time.monotonic() - t0
        ok(took >= 0.8 * want, "the pass took %.2f s, B/R is %.2f s" % (took, want))
        eq(s.stop(), 0, "clean stop")


@case("record_checksum")
def a_journal_written_before_checksums_is_sealed_at_the_first_start():
    """The golden legacy state dir (no line checksums): journal verify names its lines as
    unprotected; the first start seals them as they are, serves them, and writes every new line
    checked; a byte changed in them later is found by their seal's sha256 (verify, the scrub)."""
    d = os.path.join(tmpdir(), "state")
    os.mkdir(d, 0o700)
    legacy = read(src("tests", "golden", "legacy-state", "journal.jsonl"))
    write(os.path.join(d, "journal.jsonl"), legacy, "wb")
    os.chmod(os.path.join(d, "journal.jsonl"), 0o600)
    v = run_server(["journal", "verify", "--state-dir", d])
    eq((v.returncode, v.stdout), (0, "journal: OK: 0 sealed segments, 2 receipts, 0 checkpoints; "
                                  "journal.jsonl: lines without checksums, unprotected until a "
                                  "start seals it\n"), "verify before the upgrade")
    with Server(state_dir=d) as s:
        for line in legacy.split(b"\n")[1:-1]:
            bid = json.loads(line)["receipt"]["batch_id"]
            start = line.index(b'"receipt":') + 10
            eq(s.get("/v1/batches/" + bid).body, line[start:-1] + b"\n", "legacy receipt " + bid)
        eq(s.post(sgtest.batch("after-upgrade")).status, 200, "a new batch")
        scrubbed(s)
        eq(metric(s, "shardgate_record_checksum_failures_total"), "0", "the scrub finds nothing")
        eq(s.stop(), 0, "clean stop")
    last = read(os.path.join(d, "journal.jsonl")).split(b"\n")[-2]
    ok(sgtest.record_of(last) != last, "the new receipt's line is checked")
    eq(verifiers(d), ((0, ""), 0, 0), "the verifiers pass the upgraded state dir")
    v = run_server(["journal", "verify", "--state-dir", d])
    eq(v.stdout, "journal: OK: 1 sealed segments, 3 receipts, 1 checkpoints; 1 sealed segments "
       "without line checksums (each under its seal's sha256)\n", "verify after the upgrade")
    sealed = os.path.join(d, "journal-%020d.jsonl" % 1)
    data = read(sealed)  # one byte changed, the line still a valid record: only the seal sees it
    write(sealed, data.replace(b'"legacy-0002"', b'"legacy-0009"', 1), "wb")
    v = run_server(["journal", "verify", "--state-dir", d])
    eq((v.returncode, v.stderr), (3, "journal: %s: the seal's sha256 is not that of the bytes "
                                  "before it\n" % sealed), "verify finds it by the seal")
    with Server(state_dir=d) as s:
        eq(scrubbed(s)["record_checksum_failures_total"], "1", "the scrub finds it by the seal")
        eq(s.stop(), 0, "clean stop")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "health", "source")))
