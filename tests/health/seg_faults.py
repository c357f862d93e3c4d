"""State dirs with segments, checkpoints and an archive (tests/health/gen_state.py), one per
fault, shared by tests/health/test_segments.py (shardgate-health) and
tests/client/test_probe_journal.py (probe.py journal), so both judge the same fixtures.

FIXTURES[name] = (make(dir) -> (state_dir, archive_dir or None), verdict) where verdict is
"pass", "fail" or "unjudged" (an archived segment not read: health exit 2, probe exit 2)."""
import hashlib
import os
import re
import shutil

import gen_state

S1 = gen_state.seg_name(1)
S5 = gen_state.seg_name(5)
C8 = gen_state.ckpt_name(8)
C12 = gen_state.ckpt_name(12)


def _edit(path, fn, mode=""):
    with open(path, "r" + mode) as f:
        data = f.read()
    with open(path, "w" + mode) as f:
        f.write(fn(data))


def _resign(text):
    """A checkpoint with its sha256 made right again for the edited bytes before it."""
    head = text[:text.rindex(',"sha256"')]
    return head + ',"sha256":"%s"}\n' % hashlib.sha256(head.encode()).hexdigest()


def good(d):
    gen_state.build(d)
    return d, None


def seal_sha256_wrong(d):
    gen_state.build(d)
    _edit(os.path.join(d, S1), lambda s: re.sub(r'"sha256":"(.)', lambda m: '"sha256":"%x' % (
        (int(m.group(1), 16) + 1) % 16), s))
    return d, None


def middle_segment_missing(d):
    gen_state.build(d)
    os.unlink(os.path.join(d, S5))
    return d, None


def segments_swapped(d):
    gen_state.build(d)
    a, b = os.path.join(d, S1), os.path.join(d, S5)
    os.rename(a, a + ".tmp")
    os.rename(b, a)
    os.rename(a + ".tmp", b)
    return d, None


def epoch_repeat_differs(d):
    gen_state.build(d)
    _edit(os.path.join(d, "journal.jsonl"), lambda s: s.replace(
        '"time":"2026-12-01T03:29:18.123Z"', '"time":"2026-12-01T03:29:18.124Z"', 1))
    return d, None


def checkpoint_total_off_by_one(d):
    gen_state.build(d)

    def bump(text):
        at = text.index('"totals":')
        return _resign(text[:at] + text[at:].replace('"load":72,', '"load":73,', 1))
    _edit(os.path.join(d, C8), bump)
    return d, None


def checkpoint_sha256_wrong(d):
    gen_state.build(d)
    _edit(os.path.join(d, C12), lambda s: s.replace('"load":', '"load":1', 1))
    return d, None


def archived_no_dir(d):
    gen_state.build(d, adir=d + ".archive", archive_count=2)
    return d, None


def archived_zst(d):
    gen_state.build(d, adir=d + ".archive", archive_count=2)
    return d, d + ".archive"


def archived_plain(d):
    gen_state.build(d, adir=d + ".archive", archive_count=1, plain=True)
    return d, d + ".archive"


def archived_corrupt(d):
    gen_state.build(d, adir=d + ".archive", archive_count=1, plain=True)
    _edit(os.path.join(d + ".archive", S1), lambda s: s.replace('"size":', '"size": ', 1))
    return d, d + ".archive"


def active_sealed(d):
    """Crash state: the active segment ends with its seal line (rotation not finished)."""
    gen_state.build(d)
    path = os.path.join(d, "journal.jsonl")
    with open(path, "rb") as f:
        body = f.read()
    with open(path, "ab") as f:
        f.write(gen_state.seal_line(12, body).encode())
    return d, None


def crc_good(d):
    """Every line carries its crc32 (docs/journal.md §2.1)."""
    gen_state.build(d, crc=True)
    return d, None


def crc_receipt_flipped(d):
    """A receipt line of the active segment with one byte changed, still JSON, same length."""
    gen_state.build(d, crc=True)
    _edit(os.path.join(d, "journal.jsonl"), lambda s: s.replace('"b-00011"', '"b-00017"', 1))
    return d, None


def crc_member_removed(d):
    """A line without its crc32 in a segment whose lines carry one: valid JSON otherwise."""
    gen_state.build(d, crc=True)
    _edit(os.path.join(d, "journal.jsonl"),
          lambda s: re.sub(r'(\{"type":"receipt","seq":10,.*?),"crc32":"[0-9a-f]{8}"\}\n',
                           lambda m: m.group(1) + "}\n", s, count=1))
    return d, None


FIXTURES = {
    "good": (good, "pass"),
    "seal_sha256_wrong": (seal_sha256_wrong, "fail"),
    "middle_segment_missing": (middle_segment_missing, "fail"),
    "segments_swapped": (segments_swapped, "fail"),
    "epoch_repeat_differs": (epoch_repeat_differs, "fail"),
    "checkpoint_total_off_by_one": (checkpoint_total_off_by_one, "fail"),
    "checkpoint_sha256_wrong": (checkpoint_sha256_wrong, "fail"),
    "archived_no_dir": (archived_no_dir, "unjudged"),
    "archived_zst": (archived_zst, "pass"),
    "archived_plain": (archived_plain, "pass"),
    "archived_corrupt": (archived_corrupt, "unjudged"),
    "active_sealed": (active_sealed, "pass"),
    "crc_good": (crc_good, "pass"),
    "crc_receipt_flipped": (crc_receipt_flipped, "fail"),
    "crc_member_removed": (crc_member_removed, "fail"),
}


def make(name, base):
    d = os.path.join(base, name)
    shutil.rmtree(d, ignore_errors=True)
    return FIXTURES[name][0](d)
