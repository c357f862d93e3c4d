"""The assignment feed over real HTTP (docs/api.md §17, §18): GET /v1/receipts and
GET /v1/shards/{id}/assignments in their three forms with exact bytes, bookmarks, limits, the
400s, 404s, 401, long-poll wake-up latency, the watcher limit, SSE resume and the drain."""

import json
import os
import re
import signal
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import (Server, batch, case, eq, journal_lines, main, ok, read, src, tmpdir,
                    wait_until, write)


def golden_server(s):
    """POSTs the worked example; returns the journal's two lines (epoch, receipt)."""
    eq(s.post(read(src("input", "changes.json"))).status, 200, "POST sample-0001")
    lines = journal_lines(s.state_dir)
    eq(len(lines), 2, "journal lines")
    return lines


def assignment(seq, batch_id, epoch, cid, key, size):
    return ('{"type":"assignment","seq":%d,"batch_id":"%s","epoch":"%s","id":"%s","key":"%s",'
            '"size":%d}' % (seq, batch_id, epoch, cid, key, size)).encode()


EPOCH = "f60a5fb19effc4cfa95aed0af45997f72905f6ae"
SHARD_C = [("ch-002", "user:42", 2), ("ch-005", "user:842", 1), ("ch-007", "invoice:8", 6),
           ("ch-008", "user:7", 1)]


@case("feed")
def receipts_ndjson_and_json_exact_bytes():
    with Server() as s:
        epoch, receipt = golden_server(s)
        r = s.get("/v1/receipts")
        eq(r.status, 200, "status")
        eq(r.headers["content-type"], "application/x-ndjson", "Content-Type")
        eq(r.body, epoch + b"\n" + receipt + b"\n" + b'{"type":"bookmark","last_seq":1}\n',
           "NDJSON body")
        r2 = s.get("/v1/receipts?after=0", headers={"Accept": "application/x-ndjson"})
        eq(r2.body, r.body, "Accept: application/x-ndjson")
        j = s.get("/v1/receipts", headers={"Accept": "application/json"})
        eq(j.headers["content-type"], "application/json", "JSON Content-Type")
        eq(j.body, b'{"items":[' + epoch + b"," + receipt + b'],"last_seq":1}\n', "JSON body")
        eq(s.get("/v1/receipts?after=1").body, b'{"type":"bookmark","last_seq":1}\n',
           "nothing after the last")


@case("feed")
def assignments_exact_bytes():
    with Server() as s:
        epoch, _ = golden_server(s)
        r = s.get("/v1/shards/shard-c/assignments")
        eq(r.status, 200, "status")
        want = [epoch] + [assignment(1, "sample-0001", EPOCH, *c) for c in SHARD_C]
        eq(r.body, b"\n".join(want) + b'\n{"type":"bookmark","last_seq":1}\n', "NDJSON body")
        j = s.get("/v1/shards/shard-c/assignments?after=0",
                  headers={"Accept": "application/json"})
        eq(j.body, b'{"items":[' + b",".join(want) + b'],"last_seq":1}\n', "JSON body")


@case("feed")
def bookmark_advances_without_a_match():
    with Server() as s:
        golden_server(s)
        for i in range(3):
            eq(s.post(batch("b%d" % i)).status, 200, "POST")
        # shard-d is offline: nothing is ever placed on it; the cursor still moves.
        r = s.get("/v1/shards/shard-d/assignments?after=1", headers={"Accept": "application/json"})
        eq(r.body, b'{"items":[],"last_seq":4}\n', "empty page with a bookmark")


@case("feed")
def limit_pages_by_receipt():
    with Server() as s:
        for i in range(5):
            eq(s.post(batch("p%d" % i)).status, 200, "POST")
        r = s.get("/v1/receipts?after=1&limit=2", headers={"Accept": "application/json"})
        doc = r.json()
        eq([i["seq"] for i in doc["items"]], [2, 3], "seqs")
        eq(doc["last_seq"], 3, "last_seq")
        # a receipt's assignments are never split: limit=1 still answers all three of p4's
        r = s.get("/v1/shards/shard-a/assignments?after=0&limit=1",
                  headers={"Accept": "application/json"}).json()
        seqs = [i["seq"] for i in r["items"] if i["type"] == "assignment"]
        ok(len(set(seqs)) == 1 and r["last_seq"] == seqs[0], "one receipt per page: %r" % r)


@case("feed")
def bad_parameters_are_400_with_the_name():
    with Server() as s:
        cases = [("after=x", "after", "after: must be an integer 0..18446744073709551615"),
                 ("limit=0", "limit", "limit: must be an integer 1..100000"),
                 ("limit=100001", "limit", "limit: must be an integer 1..100000"),
                 ("wait_ms=30001", "wait_ms", "wait_ms: must be an integer 0..30000"),
                 ("wait_ms=-1", "wait_ms", "wait_ms: must be an integer 0..30000")]
        # docs/api.md §1.1: digits only; a NUL byte does not end the value
        after = "after: must be an integer 0..18446744073709551615"
        cases += [("after=" + v, "after", after)
                  for v in ("1%00", "1%002", "+1", "%201", "1%20", "0x1", "1e3", "1.0", "",
                            "18446744073709551616")]
        cases += [("limit=5%00", "limit", "limit: must be an integer 1..100000"),
                  ("wait_ms=0%00x", "wait_ms", "wait_ms: must be an integer 0..30000")]
        for query, path, message in cases:
            for base in ("/v1/receipts", "/v1/shards/shard-a/assignments"):
                r = s.get("%s?%s" % (base, query))
                eq((r.status, r.json()), (400, {"error": {"code": "invalid_parameter",
                                                          "message": message, "path": path}}),
                   "%s?%s" % (base, query))


@case("feed")
def cursor_past_the_head_is_409():
    """A cursor past the last durable receipt would skip the receipts that come next: 409
    cursor_beyond_head (docs/api.md §17); the head itself is an empty page."""
    with Server() as s:
        for i in range(2):
            eq(s.post(batch("h%d" % i)).status, 200, "POST")
        for base in ("/v1/receipts", "/v1/shards/shard-a/assignments"):
            r = s.get(base + "?after=2", headers={"Accept": "application/json"})
            eq((r.status, r.json()), (200, {"items": [], "last_seq": 2}), base + " at the head")
            for after in (3, 18446744073709551615):
                r = s.get("%s?after=%d" % (base, after))
                msg = ("after: %d is past the last durable receipt, seq 2; a cursor is a "
                       "bookmark's last_seq" % after)
                eq((r.status, r.json()), (409, {"error": {"code": "cursor_beyond_head",
                                                          "message": msg, "path": "after"}}),
                   "%s?after=%d" % (base, after))
        eq(s.post(batch("h2")).status, 200, "POST")
        r = s.get("/v1/receipts?after=2", headers={"Accept": "application/json"})
        eq([i["seq"] for i in r.json()["items"]
            if i["type"] == "receipt"], [3], "the receipt after the head is served")


@case("feed")
def unknown_shard_and_path_are_404():
    with Server() as s:
        r = s.get("/v1/shards/shard-z/assignments")
        eq((r.status, r.json()), (404, {"error": {"code": "not_found", "path": "shard",
                                                  "message": 'no such shard: "shard-z"'}}),
           "unknown shard")
        r = s.get("/v1/shards/shard-a/other")
        eq((r.status, r.error()), (404, ("not_found", "")), "other path under a shard")
        eq(s.get("/v1/shards/shard-d/assignments").status, 200, "an offline shard is known")


@case("feed")
def feed_needs_the_token():
    d = tmpdir()
    token = write(os.path.join(d, "token"), "s3cret-token\n")
    with Server(args=["--token-file", token]) as s:
        for path in ("/v1/receipts", "/v1/shards/shard-a/assignments"):
            r = s.get(path)
            eq((r.status, r.error()), (401, ("unauthorized", "")), path)
            r = s.get(path, headers={"Authorization": "Bearer s3cret-token"})
            eq(r.status, 200, path + " with the token")


class Poll(threading.Thread):
    """One GET in a thread; .response and .done_at once it returns."""

    def __init__(self, server, path, headers=None):
        super().__init__(daemon=True)
        self.server, self.path, self.headers = server, path, headers or {}
        self.response = None
        self.done_at = None

    def run(self):
        self.started = time.monotonic()
        self.response = self.server.get(self.path, headers=self.headers)
        self.done_at = time.monotonic()

    def woken(self, wait_s):
        """Answered before its own deadline (wait_ms): woken by a commit, not timed out."""
        return self.done_at - self.started < wait_s



WAIT_S = 20  # a long poll's deadline: only a poll nothing woke (or a hang) reaches it


@case("feed_wait")
def long_poll_wakes_at_the_commit():
    """Each poll is woken by the POST's commit, before its deadline; the wake latency after
    the 200 is printed (a figure: bench/feed_bench.py measures it)."""
    with Server() as s:
        lat = []
        for i in range(9):
            p = Poll(s, "/v1/receipts?after=%d&wait_ms=%d" % (i, WAIT_S * 1000))
            p.start()
            time.sleep(0.15)
            ok(p.done_at is None, "the poll waits")
            eq(s.post(batch("w%d" % i)).status, 200, "POST")
            acked = time.monotonic()
            p.join(15)
            eq(p.response.status, 200, "poll status")
            ok(b'\n{"type":"receipt","seq":%d,' % (i + 1) in b"\n" + p.response.body,
               "answered with it: %r" % p.response.body[:80])
            ok(p.woken(WAIT_S), "woken by it, before the deadline")
            lat.append(p.done_at - acked)
        print("wake latency after the 200 (s): median %.4f max %.4f"
              % (statistics.median(lat), max(lat)))


def ELSEWHERE(batch_id):
    """A batch of the worked example's keys placed on shard-a and shard-b only."""
    return {"batch_id": batch_id, "changes": [{"id": "c1", "key": "order:1001", "size": 1},
                                              {"id": "c2", "key": "cart:9", "size": 2}]}


@case("feed_wait")
def shard_long_poll_wakes_on_its_shard_only():
    """A watcher of shard-c is woken by the worked example (four placements on shard-c), not by
    a batch placed elsewhere: it still waits after that one (docs/api.md §18)."""
    with Server() as s:
        eq(s.post(ELSEWHERE("elsewhere")).status, 200, "POST a batch placing nothing on shard-c")
        on_c = json.loads(s.get("/v1/shards/shard-c/assignments?after=0").body.splitlines()[-1])
        p = Poll(s, "/v1/shards/shard-c/assignments?after=%d&wait_ms=%d"
                 % (on_c["last_seq"], WAIT_S * 1000))
        p.start()
        time.sleep(0.15)
        eq(s.post(ELSEWHERE("elsewhere-2")).status, 200, "POST elsewhere again")
        time.sleep(0.3)
        ok(p.done_at is None, "not woken by a batch placed on other shards")
        eq(s.post(read(src("input", "changes.json"))).status, 200, "POST sample-0001")
        acked = time.monotonic()
        p.join(15)
        eq(p.response.status, 200, "poll status")
        got = [json.loads(l) for l in p.response.body.splitlines()]
        eq([(a["id"], a["key"], a["size"]) for a in got if a["type"] == "assignment"], SHARD_C,
           "shard-c's four assignments")
        ok(p.woken(WAIT_S), "woken by it, before the deadline (%.3f s after the 200)"
           % (p.done_at - acked))


@case("feed_wait")
def long_poll_answers_a_bookmark_at_its_deadline():
    with Server() as s:
        t0 = time.monotonic()
        r = s.get("/v1/receipts?after=0&wait_ms=400")
        took = time.monotonic() - t0
        eq(r.body, b'{"type":"bookmark","last_seq":0}\n', "empty answer")
        ok(took >= 0.38, "answered at the deadline, not before: %.3fs" % took)
        # an idle shard's cursor moves to the latest seq at the deadline
        eq(s.post(batch("x")).status, 200, "POST")
        r = s.get("/v1/shards/shard-d/assignments?after=0&wait_ms=200",
                  headers={"Accept": "application/json"})
        ok(r.json()["last_seq"] == 1, "bookmark: %r" % r.body)


@case("feed_wait")
def watcher_limit_is_503_with_retry_after():
    with Server(args=["--max-watchers", "2"]) as s:
        polls = [Poll(s, "/v1/receipts?wait_ms=5000") for _ in range(2)]
        for p in polls:
            p.start()
        time.sleep(1.0)  # both polls in and waiting (they wait 5 s)
        r = s.get("/v1/shards/shard-a/assignments")
        eq((r.status, r.error(), r.headers.get("retry-after")),
           (503, ("too_many_watchers", ""), "1"), "past --max-watchers")
        eq(s.get("/v1/ring").status, 200, "other endpoints are not limited")
        for p in polls:
            p.join(10)
            eq(p.response.status, 200, "waiting polls answered")
        # A request holds its place until its answer is sent, which completes a moment after the
        # client may have read it (docs/api.md §17): the slots come back within that moment.
        seen = []
        wait_until(lambda: seen.append(s.get("/v1/receipts").status) or seen[-1] == 200, 5,
                   "a slot free again")
        ok(all(status == 503 for status in seen[:-1]), "only 503 before the 200: %r" % seen)
    with Server(args=["--max-watchers", "1"]) as s:
        conn = s.connect()
        statuses = [s.get("/v1/receipts", conn=conn).status for _ in range(300)]
        conn.close()
        eq(set(statuses), {200},
           "one kept-alive consumer at a limit of 1 never meets its own place")


@case("feed_wait")
def sigterm_answers_waiting_polls_at_once():
    with Server() as s:
        p = Poll(s, "/v1/receipts?wait_ms=30000")
        p.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        rc = s.stop(signal.SIGTERM, timeout=10)
        p.join(10)
        eq(rc, 0, "exit code")
        eq(p.response.body, b'{"type":"bookmark","last_seq":0}\n', "answered, empty")
        ok(time.monotonic() - t0 < 5, "drained without waiting for the poll's 30 s")


def sse_events(body):
    """[(event, data, id or None)] of an SSE body."""
    out = []
    for block in body.decode().split("\n\n"):
        if not block:
            continue
        fields = dict(l.split(": ", 1) for l in block.split("\n"))
        out.append((fields["event"], fields["data"], fields.get("id")))
    return out


@case("feed_sse")
def sse_form_and_last_event_id_resume():
    with Server() as s:
        epoch, _ = golden_server(s)
        eq(s.post(batch("s2")).status, 200, "POST s2")
        h = {"Accept": "text/event-stream"}
        r = s.get("/v1/shards/shard-c/assignments?limit=1", headers=h)
        eq(r.headers["content-type"], "text/event-stream", "Content-Type")
        want = ("event: epoch\ndata: %s\n\n" % epoch.decode()
                + "".join("event: assignment\ndata: %s\n%s\n" % (
                    assignment(1, "sample-0001", EPOCH, *c).decode(),
                    "id: 1\n" if i == len(SHARD_C) - 1 else "")
                    for i, c in enumerate(SHARD_C))
                + 'event: bookmark\ndata: {"type":"bookmark","last_seq":1}\nid: 1\n\n')
        eq(r.body.decode(), want, "SSE body")
        # an EventSource reconnects with the last id it saw: the next receipt comes
        r2 = s.get("/v1/receipts", headers=dict(h, **{"Last-Event-ID": "1"}))
        ev = sse_events(r2.body)
        eq([(e, i) for e, _, i in ev], [("receipt", "2"), ("bookmark", "2")], "resumed at 2")
        eq(json.loads(ev[0][1])["receipt"]["batch_id"], "s2", "the receipt after 1")
        r3 = s.get("/v1/receipts?after=0", headers=dict(h, **{"Last-Event-ID": "1"}))
        eq(len(sse_events(r3.body)), 4, "after= wins over Last-Event-ID")


def metric(s, name):
    text = s.get("/metrics").body.decode()
    return int(next(l.split(" ")[1] for l in text.splitlines() if l.startswith(name + " ")))


def large_batch(batch_id, n=40000, key=150):
    """A batch whose receipt is about 9 MB (a placement of about 220 bytes per change)."""
    return {"batch_id": batch_id, "changes": [
        {"id": "c%d" % i, "key": "%s-%d-%s" % (batch_id, i, "k" * key), "size": 1}
        for i in range(n)]}


def stalled_reader(port, path, rcvbuf=4096):
    """A GET whose client never reads: a 4 KiB receive buffer, so a page larger than the
    kernel's send buffer (tcp_wmem's 4 MiB at most) stays in the server's memory."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    sock.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
    return sock


@case("feed_memory")
def feed_memory_bounds_the_pages_held():
    """--feed-memory 12 MiB: a shard's 9.6 MB page of assignments held by a reader that does not
    read leaves no room for another page (503 feed_memory_exhausted, Retry-After: 1, counted);
    the same question is answered from the page already held, not from a copy; once the reader
    is gone the other page is served, and, larger than a quarter of the total, not kept
    (docs/api.md §17)."""
    with Server(args=["--feed-memory", str(12 << 20), "--max-body", str(64 << 20)]) as s:
        for bid in ("big-1", "big-2"):
            eq(s.post(large_batch(bid, key=600)).status, 200, "POST %s" % bid)
        page = "/v1/shards/shard-a/assignments?limit=1&after=%d"
        stalled = stalled_reader(s.port, page % 0)
        wait_until(lambda: metric(s, "shardgate_feed_memory_bytes") > 8 << 20, 10,
                   "the stalled reader's page held")
        held = metric(s, "shardgate_feed_memory_bytes")
        r = s.get(page % 1)
        eq((r.status, r.error()[0], r.headers.get("retry-after")),
           (503, "feed_memory_exhausted", "1"), "a second page past --feed-memory")
        eq((metric(s, "shardgate_feed_memory_refusals_total"),
            metric(s, "shardgate_feed_memory_limit_bytes")), (1, 12 << 20), "counted")
        same = s.get(page % 0)
        eq((same.status, len(same.body) == held), (200, True), "the held page, whole")
        eq(metric(s, "shardgate_feed_memory_bytes"), held, "one body for both readers")
        stalled.close()  # unread bytes: a reset, and the server drops the answer
        wait_until(lambda: s.get(page % 1).status == 200, 10,
                   "the second page once the stalled reader is gone")
        # sent, the page is not kept: idle kept pages hold at most a quarter of the total
        wait_until(lambda: metric(s, "shardgate_feed_memory_bytes") == 0, 10,
                   "nothing held once every page is sent")


def read_answer(sock, timeout=30):
    """Everything a stalled reader's socket delivers until the server closes it: (head, body,
    Content-Length)."""
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
            if len(body) >= length:
                break
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body, int(re.search(rb"(?i)content-length: (\d+)", head).group(1))


@case("feed_long")
def a_long_receipt_is_sent_from_its_file():
    """A receipt line of more than 1 MiB is not held in memory to be sent: its page holds only
    the items around it, and its record is read from the segment file as the socket takes it,
    in all three forms, byte for byte the journal's record (docs/api.md §17)."""
    with Server() as s:
        eq(s.post(large_batch("big-1", n=15000)).status, 200, "POST big-1")
        epoch, receipt = journal_lines(s.state_dir)
        ok(len(receipt) > 3 << 20, "a receipt of more than 3 MiB: %d" % len(receipt))
        bookmark = b'{"type":"bookmark","last_seq":1}\n'
        eq(s.get("/v1/receipts").body, epoch + b"\n" + receipt + b"\n" + bookmark, "NDJSON")
        eq(s.get("/v1/receipts", headers={"Accept": "application/json"}).body,
           b'{"items":[' + epoch + b"," + receipt + b'],"last_seq":1}\n', "JSON")
        eq(s.get("/v1/receipts", headers={"Accept": "text/event-stream"}).body,
           b"event: epoch\ndata: " + epoch + b"\n\nevent: receipt\ndata: " + receipt
           + b"\nid: 1\n\nevent: bookmark\ndata: " + bookmark[:-1] + b"\nid: 1\n\n", "SSE")
        kept = metric(s, "shardgate_feed_memory_bytes")  # the three pages above, kept
        stalled = stalled_reader(s.port, "/v1/receipts?after=0&limit=2")
        wait_until(lambda: feed_pages(s)[0] == 4, 10, "the stalled reader's page made")
        eq(metric(s, "shardgate_feed_memory_bytes") - kept, len(epoch) + 2 + len(bookmark),
           "held: the page's bytes around the receipt only")
        head, body, length = read_answer(stalled)
        eq((len(body), length, body), (length, len(receipt) + len(epoch) + 2 + len(bookmark),
                                       epoch + b"\n" + receipt + b"\n" + bookmark),
           "read at last, whole")


@case("feed_long")
def a_long_receipts_assignments_are_read_in_pieces():
    """A shard's assignments of a receipt longer than 1 MiB, found by reading its record in
    pieces: every placement on the shard in order, none cut at a piece's end, the last one with
    the receipt's SSE id (docs/api.md §18)."""
    with Server() as s:
        eq(s.post(large_batch("big-1", n=15000)).status, 200, "POST big-1")
        epoch, receipt = journal_lines(s.state_dir)
        doc = json.loads(receipt)["receipt"]
        mine = [p for p in doc["placements"] if p["shard"] == "shard-c"]
        ok(len(mine) > 4000, "shard-c has %d placements" % len(mine))
        want = [assignment(1, "big-1", doc["epoch"], p["id"], p["key"], p["size"])
                for p in mine]
        r = s.get("/v1/shards/shard-c/assignments")
        eq(r.body, b"\n".join([epoch] + want) + b'\n{"type":"bookmark","last_seq":1}\n',
           "NDJSON: every assignment of shard-c")
        ev = sse_events(s.get("/v1/shards/shard-c/assignments",
                              headers={"Accept": "text/event-stream"}).body)
        eq([(e, i) for e, _, i in ev[-3:]],
           [("assignment", None), ("assignment", "1"), ("bookmark", "1")], "SSE ids")
        eq(len(ev), len(want) + 2, "SSE events")


@case("feed_long")
def a_long_receipt_changed_while_sent_is_cut_short():
    """A long receipt's bytes are checked again as they are sent: a byte changed in the segment
    file after the page was made cuts the answer short of its Content-Length (never a changed
    byte delivered whole), counted and logged; the next read finds the damage before sending
    anything: 500 record_corrupt (docs/journal.md §2.1)."""
    with Server() as s:
        eq(s.post(large_batch("big-1")).status, 200, "POST big-1")
        epoch, receipt = journal_lines(s.state_dir)
        stalled = stalled_reader(s.port, "/v1/receipts?after=0", rcvbuf=65536)
        wait_until(lambda: feed_pages(s)[0] == 1, 10, "the stalled reader's page made")
        path = os.path.join(s.state_dir, "journal.jsonl")
        data = read(path)
        at = data.rindex(b"-kkk") + 1  # in the last placement's key, far past what was sent
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(b"j")
        head, body, length = read_answer(stalled)
        ok(b" 200 " in head.split(b"\r\n")[0], "the answer had begun: %r" % head[:40])
        ok(len(body) < length, "cut short: %d of %d bytes" % (len(body), length))
        ok(len(body) < len(epoch) + 1 + len(receipt), "the receipt's record never completed")
        eq(body[:len(epoch) + 100], epoch + b"\n" + receipt[:99], "what was sent")
        eq(metric(s, "shardgate_record_checksum_failures_total"), 1, "counted")
        eq([e["what"] for e in s.events("record_checksum_failed")],
           ["changed since it was checked: the feed answer was cut short"], "logged")
        r = s.get("/v1/receipts?after=0")
        eq((r.status, r.error()[0]), (500, "record_corrupt"), "read again: the damage found")


def feed_pages(s):
    """shardgate_feed_pages_total by source: (read, shared)."""
    text = s.get("/metrics").body.decode()
    return tuple(int(next(l.split(" ")[1] for l in text.splitlines() if l.startswith(
        'shardgate_feed_pages_total{source="%s"} ' % source))) for source in ("read", "shared"))


@case("feed")
def the_same_question_is_read_once():
    """Consumers asking the same question (stream, form, cursor, limit) share one read: the
    second answer is the first's bytes, counted as shared; any other question reads (docs/api.md
    §17). Long-polls of the same cursor woken by one commit get identical answers."""
    with Server() as s:
        golden_server(s)
        path = "/v1/shards/shard-c/assignments?after=0"
        first = s.get(path)
        eq((first.status, feed_pages(s)), (200, (1, 0)), "the first answer is read")
        again = s.get(path)
        eq((again.status, again.body, feed_pages(s)), (200, first.body, (1, 1)),
           "the same question: the same bytes, shared")
        eq(s.get(path, headers={"Accept": "application/json"}).json()["last_seq"], 1, "JSON")
        eq(s.get(path + "&limit=2").status, 200, "another limit (whole receipts: 4 items)")
        eq(s.get("/v1/shards/shard-a/assignments?after=0").status, 200, "another shard")
        eq(s.get("/v1/receipts?after=0").status, 200, "every receipt")
        eq(feed_pages(s), (5, 1), "other forms, limits and streams are read")
        eq(s.get("/v1/shards/shard-c/assignments?after=1").body,
           b'{"type":"bookmark","last_seq":1}\n', "nothing after the cursor")
        eq(s.get("/v1/shards/shard-c/assignments?after=1").status, 200, "asked again")
        eq(feed_pages(s), (7, 1), "an empty page is never shared")
        polls = [Poll(s, "/v1/shards/shard-c/assignments?after=1&wait_ms=10000")
                 for _ in range(3)]
        for p in polls:
            p.start()
        time.sleep(0.3)
        doc = json.loads(read(src("input", "changes.json")))
        doc["batch_id"] = "again"
        eq(s.post(json.dumps(doc).encode()).status, 200, "POST")
        for p in polls:
            p.join(15)
        bodies = {p.response.body for p in polls}
        eq(len(bodies), 1, "one answer for the three polls")
        eq(bodies.pop().count(b'"seq":2,'), 4, "shard-c's four assignments of seq 2")
        read_, shared = feed_pages(s)
        eq(read_ + shared, 11, "three pages answered: %d read, %d shared" % (read_ - 7, shared - 1))
        ok(shared >= 2, "at least one shared: %d read, %d shared" % (read_ - 7, shared - 1))


@case("feed")
def a_follower_reads_across_segment_rotations():
    """--segment-bytes 65536: a follower long-polling /v1/receipts while batches rotate the
    journal gets every seq once, in order, up to the last: the feed's kept listing of the state
    dir is replaced when the writer announces a new active segment (docs/decisions.md §23)."""
    with Server(args=["--segment-bytes", "65536"]) as s:
        seqs, pages = [], []

        def follow():
            after, deadline = 0, time.monotonic() + 30
            while after < 60 and time.monotonic() < deadline:
                r = s.get("/v1/receipts?after=%d&wait_ms=2000" % after)
                pages.append(r.status)
                for item in map(json.loads, r.body.splitlines()):
                    if item["type"] == "receipt":
                        seqs.append(item["seq"])
                    elif item["type"] == "bookmark":
                        after = item["last_seq"]

        statuses, posted = set(), threading.Event()

        def hammer(k):  # reads to the tail, without waiting, while the writer rotates
            last = 0
            while not posted.is_set():
                r = s.get("/v1/receipts?after=%d" % max(0, last - 1 - k))
                statuses.add(r.status)
                if r.status == 200:
                    last = json.loads(r.body.splitlines()[-1])["last_seq"]

        threads = [threading.Thread(target=follow, daemon=True)] + [
            threading.Thread(target=hammer, args=(k,), daemon=True) for k in range(4)]
        for t in threads:
            t.start()
        for i in range(60):  # ~3 KB receipts: several 64 KiB segments
            eq(s.post(batch("r%d" % i, n=20)).status, 200, "POST")
        posted.set()
        for t in threads:
            t.join(40)
        eq(statuses, {200}, "reads during the rotations")
        sealed = [n for n in os.listdir(s.state_dir) if n.startswith("journal-")]
        ok(len(sealed) >= 2, "rotated at least twice: %r" % sealed)
        eq(set(pages), {200}, "every page 200")
        eq(seqs, list(range(1, 61)), "every seq once, in order")
        again = s.get("/v1/receipts?after=0&limit=100000")
        items = [json.loads(l) for l in again.body.splitlines()]
        eq([i["seq"] for i in items if i["type"] == "receipt"], list(range(1, 61)),
           "read again from the start, across the segments")
        mid = s.get("/v1/receipts?after=30&limit=5", headers={"Accept": "application/json"})
        eq([i["seq"] for i in mid.json()["items"]], [31, 32, 33, 34, 35], "from a mark")


@case("feed_gone")
def cursor_older_than_the_oldest_segment_is_410():
    """Needs journal segments (--segment-bytes, `shardgate journal archive`); skipped
    on a gateway without them. The reader's side is unit/test_feed (test_stale)."""
    d = tmpdir()
    s = Server(args=["--segment-bytes", "65536"])
    try:
        s.start()
    except Exception as e:
        if "server exited 64 " in str(e):  # usage: an option it does not know
            raise sgtest.Skip("the gateway has no journal segments (--segment-bytes) yet")
        raise
    try:  # started above: the skip needs its exit code
        for i in range(60):  # ~3 KB receipts: several 64 KiB segments
            eq(s.post(batch("g%d" % i, n=20)).status, 200, "POST")
        eq(s.stop(), 0, "clean stop (writes a checkpoint)")
    finally:
        s.kill()
    archive = os.path.join(d, "archive")
    os.mkdir(archive)
    r = sgtest.run_gateway("journal", "archive", "--state-dir", s.state_dir, "--dir", archive,
                           "--plain")
    eq(r.returncode, 0, "archive: %s" % r.stderr)
    sealed = sorted(n for n in os.listdir(s.state_dir) if n.startswith("journal-"))
    # the clean stop's checkpoint covers every sealed segment, so all of them may have gone:
    # the oldest segment left is then the active one (its header names its first_seq)
    with open(os.path.join(s.state_dir, "journal.jsonl")) as f:
        active_first = json.loads(f.readline())["first_seq"]
    earliest = int(sealed[0][len("journal-"):-len(".jsonl")]) if sealed else active_first
    ok(earliest > 1, "the first segment was archived")
    with Server(state_dir=s.state_dir) as s2:
        r = s2.get("/v1/shards/shard-a/assignments?after=0")
        eq((r.status, r.json()["error"]["code"], r.json()["earliest_seq"]),
           (410, "cursor_expired", earliest), "410 with earliest_seq")
        r = s2.get("/v1/receipts?after=%d" % (earliest - 1), headers={"Accept":
                                                                      "application/json"})
        eq(r.status, 200, "from earliest_seq - 1")
        eq(r.json()["items"][0]["seq"], earliest, "the first receipt still present")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
