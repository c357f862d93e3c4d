#!/usr/bin/env python3
"""client_probe_journal*: `probe.py journal` (docs/tools.md §2) on the state dirs of
tests/health/seg_faults.py, and shardgate-health on the same dirs: both give the same verdict
on every fixture (pass: 0 and 0; fail: probe 1, health 2; cannot judge: 2 and 2)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "health"))
import sgtest  # noqa: E402
from sgtest import case, eq, ok, src, tmpdir  # noqa: E402
import seg_faults  # noqa: E402
from seg_faults import C8, S1, S5  # noqa: E402

EXITS = {"pass": (0, 0), "fail": (1, 2), "unjudged": (2, 2)}  # (probe, health)
OK_LINE = '{"result":"ok","segments":3,"receipts":12,"checkpoints":2,"mismatches":[]}'


def probe(state, adir=None):
    args = [sys.executable, src("client", "probe.py"), "journal", "--state-dir", state]
    args += ["--archive-dir", adir] if adir else []
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout.strip(), r.stderr.strip()


def health(state, adir=None):
    args = [sgtest.HEALTH, "check", "--conf", os.path.join(state, "dispatch.env"), "--shards",
            os.path.join(state, "shards.json"), "--journal", os.path.join(state, "journal.jsonl")]
    args += ["--archive-dir", adir] if adir else []
    return subprocess.run(args, capture_output=True, text=True, timeout=120).returncode


def mismatches(out):
    doc = json.loads(out)
    eq(doc["result"], "bad", "result")
    return doc["mismatches"]


@case("probe_journal")
def probe_and_health_agree_on_every_fixture():
    base = tmpdir()
    for name, (_, verdict) in sorted(seg_faults.FIXTURES.items()):
        state, adir = seg_faults.make(name, base)
        p, h = probe(state, adir)[0], health(state, adir)
        eq((p, h), EXITS[verdict], "%s: (probe, health) exits for %s" % (name, verdict))


@case("probe_journal")
def good_state_dir_is_ok():
    state, _ = seg_faults.make("good", tmpdir())
    eq(probe(state), (0, OK_LINE, ""), "exit, line, stderr")


@case("probe_journal")
def seal_and_checkpoint_faults_name_the_field():
    base = tmpdir()
    state, _ = seg_faults.make("seal_sha256_wrong", base)
    got = mismatches(probe(state)[1])
    eq(len(got), 2, "mismatches: %r" % got)
    ok(got[0].startswith("%s: seal.sha256: expected " % S1), got)
    ok(got[1].startswith('%s:1: header: expected {"type":"segment","first_seq":5,' % S5), got)
    state, _ = seg_faults.make("checkpoint_total_off_by_one", base)
    eq(mismatches(probe(state)[1]), ["%s: totals[0].shards[1].load: expected 72 actual 73" % C8],
       "totals")
    state, _ = seg_faults.make("middle_segment_missing", base)
    ok(mismatches(probe(state)[1])[0].startswith(
        'journal.jsonl:1: header: expected {"type":"segment","first_seq":5,'), "missing")


@case("probe_journal")
def checked_lines():
    """A line's crc32 (docs/journal.md §2.1): checked, and a line failing it is not read."""
    base = tmpdir()
    state, _ = seg_faults.make("crc_good", base)
    eq(probe(state), (0, OK_LINE, ""), "checked lines")
    got = mismatches(probe(seg_faults.make("crc_receipt_flipped", base)[0])[1])
    eq(got[0], "journal.jsonl:5: crc32: expected the CRC-32 of the line's bytes actual checksum "
       "mismatch", "a byte changed")
    ok("journal.jsonl:6: seq: expected 11 actual 12" in got, got)
    got = mismatches(probe(seg_faults.make("crc_member_removed", base)[0])[1])
    eq(got[0], "journal.jsonl:4: crc32: expected a crc32 member, as on the segment's first line "
       "actual none", "the member removed")


@case("probe_journal")
def archived_segments():
    base = tmpdir()
    state, _ = seg_faults.make("archived_no_dir", base)
    eq(probe(state), (2, "", "journal: %s: archived as %s.zst, not verified: give --archive-dir"
                      % (S1, S1)), "no archive dir: cannot judge")
    for name in ("archived_zst", "archived_plain"):
        state, adir = seg_faults.make(name, base)
        eq(probe(state, adir), (0, OK_LINE, ""), name)


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("health", "source")))
