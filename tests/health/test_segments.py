#!/usr/bin/env python3
"""health_segments_*: shardgate-health on a state dir with sealed segments, checkpoints and an
archive (docs/operations.md §1.6). The state dirs come from
tests/health/gen_state.py, whose bytes are checked here against hand-written golden lines."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sgtest  # noqa: E402
from sgtest import case, eq, ok, tmpdir  # noqa: E402
import gen_state  # noqa: E402
import seg_faults  # noqa: E402
from seg_faults import C8, C12, S1, S5  # noqa: E402

PASS_LINE = '{"status":"pass","checks":897,"receipts":12,"issues":[]}'
UNORDERED = ("(1 + the previous segment's last_seq): a segment is missing, swapped or out of "
             "order")


def check(state, *extra):
    """(exit code, stdout line) of `check --journal S/journal.jsonl`."""
    r = subprocess.run([sgtest.HEALTH, "check", "--conf", os.path.join(state, "dispatch.env"),
                        "--shards", os.path.join(state, "shards.json"), "--journal",
                        os.path.join(state, "journal.jsonl")] + list(extra),
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout.strip()


def fixture(name):
    return seg_faults.make(name, tmpdir())


def issues(state, *extra):
    rc, out = check(state, *extra)
    doc = json.loads(out)
    return rc, doc["issues"]


# --- the generator against hand-written bytes --------------------------------------------

@case("golden")
def generator_writes_the_spec_bytes():
    eq(gen_state.header_line(5, "ab" * 32),
       '{"type":"segment","first_seq":5,"prev":"' + "ab" * 32 + '"}\n', "header")
    eq(gen_state.seal_line(4, b"x\n"),
       '{"type":"seal","last_seq":4,"bytes":2,"sha256":'
       '"73cb3858a687a8494ca3323053016282f3dad39d42cf62ca4e79dda2aac7d9ac"}\n', "seal")
    big = 18464758472219031550  # > 2^64: written as a JSON integer (docs/api.md §7)
    led = [{"id": "shard-a", "weight": 1, "capacity": 20, "load": big, "received": 2050}]
    tot = [{"epoch_seq": 1, "shards": [{"id": "shard-a", "load": big, "received": 2050}]}]
    eq(gen_state.checkpoint_text(1, 1, 10, [], led, tot),
       '{"type":"checkpoint","version":1,"last_seq":1,"segment":1,"offset":10,"index_seq":1,'
       '"epochs":[],"ledger":[{"id":"shard-a","weight":1,"capacity":20,'
       '"load":18464758472219031550,"received":2050}],"totals":[{"epoch_seq":1,"shards":'
       '[{"id":"shard-a","load":18464758472219031550,"received":2050}]}],'
       '"sha256":"e22cf9abf9ab925f07ee8c23dbad2beaa9a06941f195aa0d87653d207b3240bf"}\n',
       "checkpoint")
    eq(gen_state.checked('{"a":1}\n'), '{"a":1,"crc32":"a702fc6e"}\n', "crc32 (zlib.crc32)")
    eq(gen_state.seg_name(5), "journal-00000000000000000005.jsonl", "segment name")
    eq(gen_state.ckpt_name(12), "checkpoint-00000000000000000012.json", "checkpoint name")


# --- segments ------------------------------------------------------------------------------

@case("segments")
def good_state_dir_passes():
    state, _ = fixture("good")
    eq(sorted(os.listdir(state)), sorted([S1, S5, "journal.jsonl", C8, C12, "dispatch.env",
                                          "shards.json"]), "files")
    eq(check(state), (0, PASS_LINE), "exit and output")


@case("segments")
def active_segment_ending_in_a_seal_passes():
    state, _ = fixture("active_sealed")
    eq(check(state), (0, PASS_LINE.replace("897", "898")), "a finished seal before rotation")


@case("segments")
def state_dir_format_newer_cannot_be_judged():
    """<dir>/format (docs/journal.md §1.1): "shardgate-state 1" passes as its absence does; a
    newer format, or a marker that is not one, is an issue: health cannot judge the state dir."""
    state, _ = fixture("good")
    marker = os.path.join(state, "format")
    for text, want in (("shardgate-state 1\n", (0, PASS_LINE)),
                       ("shardgate-state 2\n", (2, ["journal_format: format: state dir format 2 "
                                                    "is newer than this shardgate-health's (1): "
                                                    "cannot judge the state dir"])),
                       ("shardgate-state 1", (2, ['journal_format: format: not "shardgate-state '
                                                  'N": cannot judge the state dir']))):
        with open(marker, "w") as f:
            f.write(text)
        got = check(state) if want[0] == 0 else issues(state)
        eq(got, want, "format %r" % text)


@case("segments")
def seal_sha256_wrong():
    state, _ = fixture("seal_sha256_wrong")
    seal = json.loads(open(os.path.join(state, S1)).read().splitlines()[-1])
    with open(os.path.join(state, S1), "rb") as f:
        body = f.read()
    real = gen_state.hashlib.sha256(body[:seal["bytes"]]).hexdigest()
    eq(issues(state), (2, [
        "journal_segment: %s:6: seal: sha256 %s != %s (the SHA-256 of the bytes before it)"
        % (S1, seal["sha256"], real),
        "journal_segment: %s:1: header: prev %s != %s (the previous segment's seal sha256)"
        % (S5, real, seal["sha256"])]), "exit and issues")


@case("segments")
def checked_lines():
    """Every line carrying its crc32 passes; a changed byte or a missing member is named, and
    the line is not read (docs/journal.md §2.1)."""
    state, _ = fixture("crc_good")
    eq(check(state), (0, PASS_LINE), "checked lines")
    rc, got = issues(fixture("crc_receipt_flipped")[0])
    eq((rc, got[0]), (2, "journal_line: journal.jsonl:5: crc32: checksum mismatch: the line's "
                         "crc32 is not that of its bytes"), "a byte changed")
    ok("journal_seq: b-00012: seq: expected 11, got 12 (receipts missing)" in got, got)
    rc, got = issues(fixture("crc_member_removed")[0])
    eq((rc, got[0]), (2, "journal_line: journal.jsonl:4: crc32: none, while the file's first "
                         "line carries one"), "the member removed")


@case("segments")
def middle_segment_missing():
    state, _ = fixture("middle_segment_missing")
    rc, got = issues(state)
    eq(rc, 2, "exit")
    eq(got[0], "journal_segment: journal.jsonl:1: header: first_seq 9 != 5 " + UNORDERED,
       "first issue")
    ok("journal_seq: b-00009: seq: expected 5, got 9 (receipts missing)" in got, got)


@case("segments")
def segments_swapped():
    state, _ = fixture("segments_swapped")
    rc, got = issues(state)
    eq(rc, 2, "exit")
    eq(got[0], "journal_segment: %s:1: a segment header not on line 1 of a later segment" % S1,
       "first issue")
    ok("journal_segment: %s: first_seq 5 != 9 %s" % (S5, UNORDERED) in got, got)


@case("segments")
def epoch_repeat_differs():
    state, _ = fixture("epoch_repeat_differs")
    eq(issues(state), (2, ["journal_segment: journal.jsonl:2: epoch repeat: not byte-identical "
                           "to the chain's latest epoch record"]), "exit and issues")


@case("segments")
def sealed_segment_truncated():
    state, _ = fixture("good")
    path = os.path.join(state, S5)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:data.rindex(b'{"type":"seal"')])
    rc, got = issues(state)
    eq(rc, 2, "exit")
    eq(got[0], "journal_segment: %s: no seal line at its end: truncated" % S5, "first issue")


# --- checkpoints -----------------------------------------------------------------------------

@case("checkpoints")
def checkpoint_total_off_by_one():
    state, _ = fixture("checkpoint_total_off_by_one")
    eq(issues(state), (2, ["journal_checkpoint: %s: totals[0].shards[1].load: 73 != 72" % C8]),
       "exit and issues")


@case("checkpoints")
def checkpoint_sha256_wrong():
    state, _ = fixture("checkpoint_sha256_wrong")
    text = open(os.path.join(state, C12)).read()
    head = text[:text.rindex(',"sha256"')]
    eq(issues(state), (2, [
        "journal_checkpoint: %s: sha256: %s != %s (the SHA-256 of its bytes before ,\"sha256\")"
        % (C12, json.loads(text)["sha256"], gen_state.hashlib.sha256(head.encode()).hexdigest())]),
       "exit and issues")


@case("checkpoints")
def checkpoint_position_and_ledger():
    state, _ = fixture("good")
    path = os.path.join(state, C12)
    text = open(path).read()
    with open(path, "w") as f:
        f.write(seg_faults._resign(text.replace('"offset":', '"offset":1', 1)))
    rc, got = issues(state)
    off = json.loads(text)["offset"]
    eq((rc, got), (2, ["journal_checkpoint: %s: segment/offset: 9/1%d is not the end of a line "
                       "in the journal" % (C12, off)]), "moved offset")
    with open(path, "w") as f:
        f.write(seg_faults._resign(text.replace('"weight":2', '"weight":3', 1)))
    eq(issues(state), (2, ["journal_checkpoint: %s: ledger[1].weight: 3 != 2" % C12]), "ledger")


@case("checkpoints")
def checkpoint_gone_between_listing_and_reading():
    """A checkpoint listed and then removed before it is read (a running gateway prunes the
    older ones) is not judged and is no issue: the journal alone passes. A dangling link stands
    for the file that went between the listing and the open."""
    state, _ = fixture("good")
    path = os.path.join(state, C12)
    os.remove(path)
    os.symlink(os.path.join(state, "no-such-checkpoint"), path)
    rc, out = check(state)
    eq((rc, json.loads(out)["issues"]), (0, []), "a vanished checkpoint")


# --- archive ---------------------------------------------------------------------------------

@case("archive")
def archived_without_dir_cannot_be_judged():
    state, _ = fixture("archived_no_dir")
    eq(issues(state), (2, [
        "journal_archived_unverified: %s: archived as %s.zst (seq 1..4), not verified: give "
        "--archive-dir (or --accept-archived)" % (S1, S1),
        "journal_archived_unverified: %s: archived as %s.zst (seq 5..8), not verified: give "
        "--archive-dir (or --accept-archived)" % (S5, S5)]), "exit and issues")


@case("archive")
def archived_zst_and_plain_verify_as_present():
    for name in ("archived_zst", "archived_plain"):
        state, adir = fixture(name)
        eq(check(state, "--archive-dir", adir), (0, PASS_LINE), name)


@case("archive")
def archived_corrupt_is_an_issue():
    state, adir = fixture("archived_corrupt")
    rc, got = issues(state, "--archive-dir", adir)
    eq(rc, 2, "exit")
    ok(got[0].startswith("journal_archive: %s: not the archived bytes (6496 bytes, sha256 " % S1),
       got)


@case("archive")
def accept_archived_takes_the_checkpoint():
    state, _ = fixture("archived_no_dir")
    eq(check(state, "--accept-archived"),
       (0, '{"status":"pass","checks":295,"receipts":4,"issues":[]}'), "accepted")
    os.unlink(os.path.join(state, C8))
    os.unlink(os.path.join(state, C12))
    eq(issues(state, "--accept-archived"), (2, [
        "journal_archived_uncovered: %s: no valid checkpoint covers seq 8 (the newest is at 0): "
        "the archived totals cannot be accepted" % S5]), "no checkpoint covers them")
    r = subprocess.run([sgtest.HEALTH, "check", "--conf", "x", "--shards", "y", "--journal", "z",
                        "--accept-archived", "--archive-dir", "d"], capture_output=True, text=True,
                       timeout=60)
    eq(r.returncode, 64, "both options: usage")


# --- serve -----------------------------------------------------------------------------------

class Serve:
    """`shardgate-health serve` on the state dir at an ephemeral 127.0.0.1 port."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [sgtest.HEALTH, "serve", "--conf", os.path.join(self.state, "dispatch.env"),
             "--shards", os.path.join(self.state, "shards.json"), "--journal",
             os.path.join(self.state, "journal.jsonl"), "--reverify-interval", "1", "--listen",
             "127.0.0.1:%d" % self.port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sgtest.wait_until(lambda: self.get("/livez")[0] == 200, 10, "health /livez")
        return self

    def get(self, path="/healthz"):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read().decode()
            conn.close()
            return resp.status, (json.loads(body) if path == "/healthz" else body)
        except (OSError, http.client.HTTPException, ValueError):
            return None, None

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait(timeout=10)


@case("serve")
def serve_follows_a_rotation_and_finds_a_bad_seal():
    base = tmpdir()
    state, _ = seg_faults.make("good", base)
    later = os.path.join(base, "later")  # the same journal one receipt and one rotation later
    gen_state.build(later, receipts=13)
    s9 = gen_state.seg_name(9)
    with Serve(state) as h:
        st, doc = h.get()
        eq((st, doc["issues"]), (200, []), "segmented state dir")
        eq(doc["checks"]["receipts_verified"][0]["observedValue"], 12, "receipts")
        shutil.copy(os.path.join(later, s9), os.path.join(state, s9))  # the rotation's rename
        shutil.copy(os.path.join(later, "journal.jsonl"), os.path.join(state, "journal.new"))
        os.rename(os.path.join(state, "journal.new"), os.path.join(state, "journal.jsonl"))
        st, doc = h.get()
        eq((st, doc["issues"], doc["checks"]["receipts_verified"][0]["observedValue"]),
           (200, [], 13), "after the rotation")
        path = os.path.join(state, S1)  # the same edit as seal_sha256_wrong, in place
        data = open(path).read()
        seg_faults.seal_sha256_wrong(os.path.join(base, "scratch"))
        bad = open(os.path.join(base, "scratch", S1)).read()
        eq(len(bad), len(data), "same length edit")
        with open(path, "w") as f:
            f.write(bad)
        sgtest.wait_until(lambda: h.get()[0] == 503, 20, "503 after the full re-read")
        st, doc = h.get()
        ok(doc["issues"][0].startswith("journal_segment: %s:6: seal: sha256 " % S1), doc)


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("health",)))
