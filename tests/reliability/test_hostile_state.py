"""A hostile operator: bad state dirs, huge numbers in the contract and the
membership, damaged journal lines, log fields that are not plain, totals past 2^64 and a POST
racing SIGTERM. Every refusal asserts the exact exit code and the exact stderr.

- State dir (docs/operations.md, State dir): a file instead of a dir, group/world-writable,
  owned by another user, a symlinked journal (never followed, its target untouched), a journal
  that is a FIFO or a directory or someone else's, a symlinked journal.jsonl.broken.
- Numbers (docs/contract.md, Membership, rules R1 and R2): DISPATCH_VNODES out of range,
  capacities over 2^53 - 1 alone or summed, ring sizes over 2^24 points; in --shards and in a
  journal epoch record.
- Journal lines (docs/operations.md, Journal): a complete line that does not replay, in the
  middle or at the end, stops the start (exit 3) with the file byte-identical; only an
  unterminated last line is torn and repaired.
- Totals (docs/api.md, GET /v1/shards): exact past 2^64, in /v1/shards and /metrics.
- Logs: every stderr line is JSON whatever bytes the state dir path holds, and never cut.
- Shutdown: POSTs on kept-alive connections racing SIGTERM get 200 or 503, exit 0, and every
  200 is durable.

Runs as `python3 test_hostile_state.py SHARDGATE HEALTH SOURCE_DIR [CASE...]` (needs root for
the other-owner cases: it chowns to uid 65534).
"""

import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import (Failure, Server, batch, case, eq, ok, read, run_server, src, tmpdir,
                    write)  # noqa: E402

MAX = 2**53 - 1
NOBODY = 65534


def serve_args(state_dir, conf=None, shards=None):
    return ["serve", "--conf", conf or src("conf", "dispatch.env"), "--shards",
            shards or src("input", "shards.json"), "--state-dir", state_dir,
            "--listen", "127.0.0.1:0"]


def refused(state_dir, stderr, what, conf=None, shards=None):
    """The gateway exits 3 at start with exactly `stderr` (one line), after the
    checkpoint_skipped events of any checkpoint the start passed by (docs/journal.md §7)."""
    r = run_server(serve_args(state_dir, conf, shards))
    said = [l for l in r.stderr.splitlines(True)
            if not l.startswith('{"event":"checkpoint_skipped"')]
    eq((r.returncode, "".join(said)), (3, stderr + "\n"), what)


def private_dir():
    d = os.path.join(tmpdir(), "state")
    os.mkdir(d, 0o700)
    return d


def journal_of(d):
    return os.path.join(d, "journal.jsonl")


def euid_owner(uid):
    return "owned by uid %d, not by the effective uid %d" % (uid, os.geteuid())


def need_root():
    ok(os.geteuid() == 0, "the other-owner cases chown to uid %d: run as root" % NOBODY)


# ---------------------------------------------------------------- the state dir

@case
def state_dir_is_a_file():
    d = write(os.path.join(tmpdir(), "state"), "not a dir\n")
    refused(d, "journal: state dir %s: not a directory" % d, "file as state dir")
    eq(read(d), b"not a dir\n", "the file is untouched")


@case
def state_dir_group_or_world_writable():
    for mode in (0o770, 0o702, 0o777, 0o1777):
        d = private_dir()
        os.chmod(d, mode)
        refused(d, "journal: state dir %s: group- or world-writable (mode %04o)" % (d, mode),
                "mode %o" % mode)
        eq(os.listdir(d), [], "nothing created in a refused state dir")


@case
def state_dir_owned_by_another_user():
    need_root()
    d = private_dir()
    os.chown(d, NOBODY, NOBODY)
    refused(d, "journal: state dir %s: %s" % (d, euid_owner(NOBODY)), "other owner")


@case
def journal_symlink_is_not_followed():
    d = private_dir()
    target = write(os.path.join(tmpdir(), "precious.txt"), "precious\n")
    os.symlink(target, journal_of(d))
    refused(d, "journal: %s: is a symbolic link (not followed)" % journal_of(d), "symlink")
    eq(read(target), b"precious\n", "the symlink's target is untouched")
    dangling = os.path.join(tmpdir(), "nowhere.jsonl")
    os.unlink(journal_of(d))
    os.symlink(dangling, journal_of(d))
    refused(d, "journal: %s: is a symbolic link (not followed)" % journal_of(d), "dangling")
    ok(not os.path.lexists(dangling), "a dangling symlink's target is not created")


@case
def journal_not_a_regular_file():
    d = private_dir()
    os.mkfifo(journal_of(d), 0o600)
    refused(d, "journal: %s: not a regular file" % journal_of(d), "FIFO")
    os.unlink(journal_of(d))
    os.mkdir(journal_of(d), 0o700)
    refused(d, "journal: %s: not a regular file" % journal_of(d), "directory")


@case
def journal_owned_by_another_user():
    need_root()
    d = private_dir()
    write(journal_of(d), "")
    os.chown(journal_of(d), NOBODY, NOBODY)
    refused(d, "journal: %s: %s" % (journal_of(d), euid_owner(NOBODY)), "other owner")


@case
def broken_file_symlink_is_not_followed():
    d = journaled_state_dir()
    target = write(os.path.join(tmpdir(), "precious.txt"), "precious\n")
    os.symlink(target, journal_of(d) + ".broken")
    with open(journal_of(d), "ab") as f:
        f.write(b'{"type":"rec')
    before = read(journal_of(d))
    refused(d, "journal: %s: cannot move the torn last line: journal: %s.broken: is a symbolic "
            "link (not followed)" % (journal_of(d), journal_of(d)), ".broken symlink")
    eq(read(journal_of(d)), before, "journal untouched")
    eq(read(target), b"precious\n", "the symlink's target is untouched")


# ---------------------------------------------------------------- numbers

@case
def contract_vnodes_out_of_range():
    for v in ("99999999999999999999", "-1", "4097"):
        text = read(src("conf", "dispatch.env")).decode().replace("DISPATCH_VNODES=160",
                                                                   "DISPATCH_VNODES=" + v)
        conf = write(os.path.join(tmpdir(), "c.env"), text)
        line = text.split("\n").index("DISPATCH_VNODES=" + v) + 1
        refused(private_dir(), 'contract: %s:%d: DISPATCH_VNODES: "%s" is not an integer 1..4096'
                % (conf, line, v), "VNODES " + v, conf=conf)


def shards_file(shards):
    return write(os.path.join(tmpdir(), "shards.json"), json.dumps({"shards": shards}))


def shard(i, capacity=1, weight=1, state="online"):
    # ids sort against file order: a message naming file order is told from one naming id order
    return {"id": "s%05d" % (100000 - i), "state": state, "capacity": capacity, "weight": weight}


BAD_MEMBERSHIPS = [  # (shards, message after "shards: <file>: ", what)
    ([shard(0, capacity=MAX + 1)],
     "shards[0].capacity: must be an integer 0..9007199254740991", "capacity 2^53"),
    ([shard(0, capacity=MAX), shard(1, capacity=1)],
     "shards[1].capacity: sum of capacities exceeds 9007199254740991", "R1 sum"),
    ([shard(0, capacity=MAX, state="offline"), shard(1, state="draining")],
     "shards[1].capacity: sum of capacities exceeds 9007199254740991", "R1 any state"),
    ([shard(i, weight=1000) for i in range(105)],
     "shards[104].weight: ring exceeds 16777216 points", "R2 ring points"),
    ([shard(i, weight=1000, state="offline" if i < 10 else "online") for i in range(115)],
     "shards[114].weight: ring exceeds 16777216 points", "R2 online only"),
]


@case
def membership_numbers_refused():
    for shards, message, what in BAD_MEMBERSHIPS:
        path = shards_file(shards)
        refused(private_dir(), "shards: %s: %s" % (path, message), what, shards=path)
    path = write(os.path.join(tmpdir(), "huge.json"),
                 '{"shards":[{"id":"a","state":"online","capacity":99999999999999999999}]}')
    refused(private_dir(), "shards: %s: $: invalid JSON at line 1 column 69: too big integer "
            "near '99999999999999999999'" % path, "capacity over INT64", shards=path)


@case
def acknowledged_sum_overflow_membership_refused():
    """Defect 1: 1025 online shards at 2^53 - 1 started (and a receipt's capacity overflowed
    INT64, so replay dropped acknowledged batches); now the membership is refused (R1)."""
    path = shards_file([shard(i, capacity=MAX) for i in range(1025)])
    refused(private_dir(), "shards: %s: shards[1].capacity: sum of capacities exceeds "
            "9007199254740991" % path, "1025 x 2^53-1", shards=path)


# ---------------------------------------------------------------- journal lines

def journaled_state_dir(shards=None, batches=1):
    """A state dir whose journal holds an epoch and `batches` receipts from a real server."""
    d = private_dir()
    with Server(state_dir=d, shards=shards) as s:
        for i in range(batches):
            eq(s.post(batch("hostile-%d" % i)).status, 200, "POST")
        eq(s.stop(), 0, "exit")
    return d


# Hand-made lines carry their crc32 (docs/journal.md §2.1), so the record rules are what refuse.
BIG_LINE = sgtest.with_crc(b'{"type":"receipt","seq":99999999999999999999}') + b"\n"
BIG_WHAT = "not JSON (column 44: too big integer near '99999999999999999999')"


def damaged(d, lines, what):
    """Writes `lines` as the journal and requires exit 3 naming `what` with the file left
    byte-identical and nothing moved to .broken."""
    data = b"".join(lines)
    write(journal_of(d), data, "wb")
    refused(d, "journal: %s:%s" % (journal_of(d), what), what)
    eq(read(journal_of(d)), data, what + ": journal byte-identical")
    ok(not os.path.exists(journal_of(d) + ".broken"), what + ": nothing moved to .broken")


def split_lines(d):
    return read(journal_of(d)).splitlines(keepends=True)


@case
def complete_bad_line_in_the_middle_stops_the_start():
    d = journaled_state_dir()
    epoch, receipt = split_lines(d)
    damaged(d, [epoch, BIG_LINE, receipt], "2: " + BIG_WHAT)


@case
def complete_bad_last_line_is_not_forgiven():
    """Defect 1, second half: a complete, newline-terminated line was taken for a torn tail,
    moved to .broken and truncated away. Now: exit 3, file untouched."""
    d = journaled_state_dir()
    epoch, receipt = split_lines(d)
    damaged(d, [epoch, receipt, BIG_LINE], "3: " + BIG_WHAT)
    damaged(d, [epoch, receipt, b"{\"type\":\"rec\n"],
            "3: no checksum: the line does not end with its crc32 member")


@case
def unterminated_last_line_is_repaired():
    d = journaled_state_dir()
    good = read(journal_of(d))
    torn = b'{"type":"receipt","seq":2,"finger'
    write(journal_of(d), good + torn, "wb")
    with Server(state_dir=d) as s:
        eq(s.events("journal_torn_tail_repaired"),
           [{"event": "journal_torn_tail_repaired", "file": journal_of(d), "line": 3,
             "offset": len(good), "bytes": len(torn), "moved_to": journal_of(d) + ".broken"}],
           "repair event")
        eq(s.get("/v1/batches/hostile-0").status, 200, "the acknowledged batch survives")
        eq(s.stop(), 0, "exit")
    eq(read(journal_of(d)), good, "journal cut back to its whole lines")
    eq(read(journal_of(d) + ".broken"), torn, "torn bytes kept in .broken")


def epoch_line(epoch, **changes):
    doc = json.loads(sgtest.record_of(epoch.rstrip(b"\n")))
    for key, value in changes.items():
        if key == "vnodes":
            doc["contract"]["DISPATCH_VNODES"] = value
        else:
            doc[key] = value
    return sgtest.with_crc(json.dumps(doc, separators=(",", ":")).encode()) + b"\n"


@case
def epoch_record_numbers_are_checked():
    d = journaled_state_dir()
    epoch, receipt = split_lines(d)
    two_max = [dict(shard(i, capacity=MAX), id="e%d" % i) for i in range(2)]
    damaged(d, [epoch, receipt, epoch_line(epoch, shards=two_max)],
            "3: shards: epoch record: shards[1].capacity: sum of capacities exceeds "
            "9007199254740991")
    ring = [dict(shard(i, weight=1000), id="e%03d" % i) for i in range(105)]
    damaged(d, [epoch, receipt, epoch_line(epoch, shards=ring)],
            "3: shards: epoch record: shards[104].weight: ring exceeds 16777216 points")
    damaged(d, [epoch_line(epoch, vnodes=99999), receipt],
            "1: epoch record: contract.DISPATCH_VNODES must be an integer 1..4096")


# ---------------------------------------------------------------- totals past 2^64

@case
def totals_stay_exact_past_2_64():
    """2,050 receipts of load 2^53 - 1 on one shard sum past 2^64 (R1 caps one receipt's load at
    2^53 - 1). The journal is made from one real receipt, copied under new batch ids and seqs,
    and replayed at start; then one live POST adds to it."""
    shards = shards_file([{"id": "big", "state": "online", "capacity": MAX}])
    d = private_dir()
    with Server(state_dir=d, shards=shards) as s:
        doc = {"batch_id": "t-00000", "changes": [{"id": "c", "key": "k", "size": MAX}]}
        eq(s.post(doc).status, 200, "POST")
        eq(s.stop(), 0, "exit")
    epoch, receipt = split_lines(d)
    n = 2050
    rec = sgtest.record_of(receipt.rstrip(b"\n"))
    lines = [epoch] + [sgtest.with_crc(rec.replace(b'"seq":1,', b'"seq":%d,' % (i + 1), 1)
                                       .replace(b'"t-00000"', b'"t-%05d"' % i)) + b"\n"
                       for i in range(n)]
    write(journal_of(d), b"".join(lines), "wb")
    with Server(state_dir=d, shards=shards) as s:
        eq(s.shard_totals(), {"big": [n * MAX, n]}, "/v1/shards after replay")
        doc = {"batch_id": "live", "changes": [{"id": "c", "key": "k", "size": 7}]}
        eq(s.post(doc).status, 200, "live POST")
        load, received = n * MAX + 7, n + 1
        eq(s.shard_totals(), {"big": [load, received]}, "/v1/shards after a live POST")
        body = s.get("/metrics").body.decode()
        for series, value in (("load", load), ("received", received)):
            line = 'shardgate_shard_%s_total{shard="big"} %d' % (series, value)
            ok(line in body.split("\n"), "/metrics has %r" % line)
        eq(s.stop(), 0, "exit")
    eq(load, 18464758472219031557, "the figure asserted (> 2^64 = 18446744073709551616)")


# ---------------------------------------------------------------- logs

def check_json_lines(lines, what):
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            raise Failure("%s: stderr line is not JSON: %r" % (what, line))


@case
def log_fields_are_escaped_and_whole():
    """A state dir path with a quote, a backslash, control bytes and 700+ bytes: every event
    line is JSON and names the path whole (it went raw into a 512-byte buffer)."""
    base = tmpdir()
    parent = os.path.join(base, "p" * 200, "q" * 200)
    os.makedirs(parent, 0o700)
    d = os.path.join(parent, 'st"q\\\x01\t' + "x" * 200)
    with Server(state_dir=d) as s:
        eq(s.post(batch("log-0")).status, 200, "POST")
        eq(s.stop(), 0, "exit")
    check_json_lines(s.lines, "start")
    eq([e["file"] for e in s.events("journal_replayed")], [journal_of(d)], "file field whole")
    with open(journal_of(d), "ab") as f:
        f.write(b'{"torn')
    with Server(state_dir=d) as s:
        eq(s.stop(), 0, "exit")
    check_json_lines(s.lines, "restart")
    eq([e["moved_to"] for e in s.events("journal_torn_tail_repaired")],
       [journal_of(d) + ".broken"], "moved_to field whole")


# ---------------------------------------------------------------- shutdown

def race_poster(s, name, statuses, acked, stop):
    """Posts on one kept-alive connection until it breaks; records every status."""
    conn = s.connect(timeout=10)
    for i in range(2000):
        if stop.is_set():
            break
        bid = "%s-%d" % (name, i)
        try:
            r = s.post(batch(bid, n=1), conn=conn)
        except OSError:
            break
        statuses.append(r.status)
        if r.status == 200:
            acked.append(bid)
        if r.headers.get("connection", "").lower() == "close":
            break
    conn.close()


@case
def post_racing_sigterm():
    """POSTs on 8 kept-alive connections while SIGTERM arrives: the committer is stopped only
    once no handler can reach it (it used to be destroyed before the HTTP daemon stopped)."""
    for round_no in range(5):
        d = private_dir()
        statuses, acked, stop = [], [], threading.Event()
        with Server(state_dir=d) as s:
            threads = [threading.Thread(target=race_poster,
                                        args=(s, "r%d-%d" % (round_no, t), statuses, acked, stop))
                       for t in range(8)]
            for t in threads:
                t.start()
            sgtest.wait_until(lambda: len(statuses) >= 20, 30, "POSTs before SIGTERM")
            s.proc.send_signal(signal.SIGTERM)
            rc = s.stop()
            eq(rc, 0, "exit after SIGTERM; stderr ends:\n%s"
               % "\n".join(l for l in s.lines if not l.startswith('{"time"'))[-2000:])
            stop.set()
            for t in threads:
                t.join(30)
            check_json_lines(s.lines, "race")
            eq(len(s.events("stopped")), 1, "stopped event")
        ok(set(statuses) <= {200, 503}, "statuses: %r" % sorted(set(statuses)))
        with Server(state_dir=d) as s:
            for bid in acked:
                eq(s.get("/v1/batches/" + bid).status, 200, "acknowledged %s is durable" % bid)
            eq(s.stop(), 0, "exit")
        sgtest.health_check(d)


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("shardgate", "health", "source")))
