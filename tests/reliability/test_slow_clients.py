"""Slow and hostile clients against the real gateway (all from 127.0.0.1, so the per-IP
connection limit covers every one of them, the normal client included):

- 200 slowloris connections sending their headers a byte at a time do not keep a normal client
  from being served while they are held open, when --max-connections-per-ip leaves room for
  it (256, the default); with a per-IP limit the slow ones fill, the next connection is refused at accept
  and served again once they go; a connection that stops sending is closed after --timeout;
- a body over --max-body is cut off without being buffered: a 200 MiB chunked body sent to a
  server with --max-body 1 MiB is dropped past the cap and the connection closed past twice the
  cap; a declared 200 MiB Content-Length is answered 413
  before any body byte is read;
- a client that disconnects mid-body (Content-Length or chunked) leaves nothing behind: no
  journal line, no idempotency record (the full batch posted afterwards gets a fresh 200
  without Idempotent-Replayed) and totals that count it once; one that disconnects after a
  complete body, while its batch is being journaled, gets it journaled exactly once.

Every socket has a timeout and every loop a deadline. Latencies and VmHWM are printed as
figures, never bounds: no check here depends on how busy the machine is.
"""

import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, batch, case, eq, journal_receipts, ok, read  # noqa: E402

SLOW = 200
MIB = 1 << 20


def raw_connect(port, timeout=5):
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def slow_header(i):
    pad = "x" * 4000  # never finished within the test at a byte per tick
    return ("POST /v1/batches HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "X-Slow-%d: %s\r\n" % (i, pad)).encode()


class Slowloris:
    """N connections, each sent one more header byte every `tick` seconds by one thread."""

    def __init__(self, port, n, tick=0.05):
        self.port, self.n, self.tick = port, n, tick
        self.socks, self.closed_by_server = [], 0
        self.stop = threading.Event()
        self.thread = None

    def open(self):
        for i in range(self.n):
            self.socks.append([raw_connect(self.port), slow_header(i), 0])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self):
        deadline = time.time() + 120
        while not self.stop.wait(self.tick) and time.time() < deadline:
            for entry in self.socks:
                sock, data, pos = entry
                if sock is None or pos >= len(data):
                    continue
                try:
                    sock.send(data[pos:pos + 1])
                    entry[2] = pos + 1
                except OSError:
                    sock.close()
                    entry[0] = None
                    self.closed_by_server += 1

    def still_open(self):
        """Connections the server has not closed (a non-blocking peek sees EOF or an error)."""
        n = 0
        for sock, _, _ in self.socks:
            if sock is None:
                continue
            try:
                sock.setblocking(False)
                got = sock.recv(1, socket.MSG_PEEK)
                n += 0 if got == b"" else 1
            except BlockingIOError:
                n += 1
            except OSError:
                pass
            finally:
                sock.settimeout(5)
        return n

    def still_open_at(self, i):
        """Whether connection i is still open (as still_open counts)."""
        sock = self.socks[i][0]
        if sock is None:
            return False
        try:
            sock.setblocking(False)
            return sock.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            sock.settimeout(5)

    def close(self):
        self.stop.set()
        if self.thread:
            self.thread.join(10)
        for sock, _, _ in self.socks:
            if sock is not None:
                sock.close()
        self.socks = []


def timed(fn):
    t = time.time()
    r = fn()
    return r, time.time() - t


@case
def slowloris_does_not_starve_a_normal_client():
    args = ["--max-connections", "1024", "--max-connections-per-ip", "256", "--timeout", "30"]
    with Server(args=args) as s:
        rss0 = sgtest.proc_status_kib(s.proc.pid, "VmRSS")
        slow = Slowloris(s.port, SLOW).open()
        try:
            time.sleep(0.5)
            worst, n = 0.0, 0
            deadline = time.time() + 4
            while time.time() < deadline:
                r, dt = timed(lambda: s.get("/livez"))
                eq(r.status, 200, "livez during slowloris")
                worst = max(worst, dt)
                r, dt = timed(lambda: s.post(batch("normal-%d" % n)))
                eq(r.status, 200, "post during slowloris")
                worst = max(worst, dt)
                n += 1
                time.sleep(0.2)
            open_now = slow.still_open()
            rss1 = sgtest.proc_status_kib(s.proc.pid, "VmRSS")
        finally:
            slow.close()
        print("slowloris: %d slow connections (%d still open at the end), %d normal "
              "GET+POST pairs, worst latency %.1f ms, VmRSS %d -> %d kB"
              % (SLOW, open_now, n, worst * 1000, rss0, rss1), flush=True)
        # Every normal request above was answered while all the slow ones were held open.
        eq(open_now, SLOW, "the slow connections were held open (they kept sending)")
        eq(len(journal_receipts(s.state_dir)), n, "the normal posts are journaled")


def open_connections(s):
    """shardgate_connections_open, counting the scrape's own connection."""
    text = s.get("/metrics").body.decode()
    return next(l.rsplit(" ", 1)[1] for l in text.splitlines()
                if l.startswith("shardgate_connections_open "))


def refused(s):
    """True when a new connection is closed by the server without an answer."""
    try:
        r = s.get("/livez")
        return False if r.status == 200 else True
    except Exception:  # reset, refused, closed without an answer
        return True


@case
def per_ip_limit_refuses_the_excess_then_recovers():
    limit = 32
    with Server(args=["--max-connections-per-ip", str(limit), "--timeout", "30"]) as s:
        slow = Slowloris(s.port, limit).open()  # accepted in order: the 33rd comes after them
        try:
            ok(refused(s), "connection %d from 127.0.0.1 is refused" % (limit + 1))
            eq(slow.still_open(), limit, "the %d held connections are all still open" % limit)
        finally:
            slow.close()
        sgtest.wait_until(lambda: not refused(s), 5, "a connection slot after the slow ones left")
        # The line is read from the server's stderr by a thread of its own: waited for, so the
        # check does not race that reader; never logged, it still fails.
        sgtest.wait_until(lambda: any("limit" in e.get("message", "").lower()
                                      for e in s.events("mhd")), 10,
                          "libmicrohttpd to log the refused connection (event mhd)")


def in_request(port, n):
    """n connections each inside a request: its head complete, its body begun (a head's
    deadline no longer applies, and none of them may be shut down to make room)."""
    socks = []
    for _ in range(n):
        sock = raw_connect(port, timeout=10)
        sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{\"batch_id\"")
        socks.append(sock)
    return socks


@case
def connection_limit_refuses_the_excess_then_recovers():
    """--max-connections 16 is honoured over both worker threads: with 16 connections inside
    requests held at once, the seventeenth is refused at the first try and none of the 16 is
    closed (the default, 1024, would never refuse here; docs/decisions.md §20). With 16 still
    waiting for a complete head instead, the seventeenth is served: the one that waited longest
    is shut down to make room, and only it (docs/api.md §1)."""
    limit = 16
    with Server(args=["--max-connections", str(limit), "--timeout", "30"]) as s:
        # The kernel queues the connections in order and the accept thread takes them in that
        # order: the 16 are counted before the seventeenth is accepted.
        held = in_request(s.port, limit)
        time.sleep(0.3)  # every head read
        try:
            ok(refused(s), "connection %d is refused" % (limit + 1))
            sgtest.wait_until(lambda: s.events("connection_refused"), 10,
                              "the event connection_refused")
            eq(s.events("connection_refused")[0], {"event": "connection_refused",
                                                   "max_connections": limit}, "the event")
        finally:
            for sock in held:
                sock.close()
        sgtest.wait_until(lambda: not refused(s), 10, "a connection slot after they left")
        # Every one of them closed by the server, not only the first: one still counted would
        # make the slow ones below evict each other (only this scrape's own connection is open).
        sgtest.wait_until(lambda: open_connections(s) == "1", 10, "the 16 closed by the server")
        slow = Slowloris(s.port, limit - 1).open()
        time.sleep(0.3)
        newest = raw_connect(s.port)
        newest.sendall(slow_header(limit)[:20])
        try:
            time.sleep(0.3)
            conn = s.connect()  # one connection: the metrics are read on it too
            eq(s.request("GET", "/livez", conn=conn).status, 200,
               "connection %d served" % (limit + 1))
            sgtest.wait_until(lambda: slow.still_open() == limit - 2, 10, "one older one cut")
            newest.setblocking(False)
            try:
                alive = newest.recv(1, socket.MSG_PEEK) != b""
            except BlockingIOError:
                alive = True
            eq(alive, True, "the connection opened last is not the one cut")
            r = s.request("GET", "/metrics", conn=conn)
            cut = dict(l.rsplit(" ", 1) for l in r.body.decode().splitlines()
                       if l.startswith("shardgate_connections_cut_total{"))
            # the /livez of the wait above may still be counted open, between requests: the
            # first one cut then, harmlessly
            eq((cut['shardgate_connections_cut_total{reason="header_timeout"}'],
                cut['shardgate_connections_cut_total{reason="evicted"}'] in ("1", "2")),
               ("0", True), "the cut counted: %r" % cut)
            conn.close()
        finally:
            slow.close()
            newest.close()


def trickler(port, source, stop, cut):
    """A connection from `source` sending one header byte every 0.5 s, opened again each time
    the server closes it; counts in cut[0] the ones closed with their head incomplete."""
    head = slow_header(0)
    while not stop.is_set():
        sock = socket.socket()
        sock.settimeout(5)
        try:
            sock.bind((source, 0))
            sock.connect(("127.0.0.1", port))
            for k in range(len(head)):
                if stop.wait(0.5):
                    break
                sock.send(head[k:k + 1])
        except OSError:
            cut[0] += 1
        finally:
            sock.close()


@case
def slow_headers_from_other_addresses_lock_nobody_out():
    """64 connections from 127.0.0.2-5 (16 each, the per-address limit) each trickle a header
    byte every 0.5 s and reconnect when closed, filling --max-connections 64. Every request of
    a client on 127.0.0.1 is answered throughout — GET /livez and a POST with the token, each
    within 5 s (they take milliseconds) — and the trickling connections are shut down at the
    head deadline (--header-timeout 2), whatever they send: the idle --timeout (30) never
    fires, as every byte restarts it."""
    token = os.path.join(sgtest.tmpdir(), "token")
    sgtest.write(token, "client-s3cret\n")
    os.chmod(token, 0o600)
    args = ["--max-connections", "64", "--max-connections-per-ip", "16", "--timeout", "30",
            "--header-timeout", "2", "--token-file", token]
    with Server(args=args) as s:
        stop, cut = threading.Event(), [0]
        threads = [threading.Thread(target=trickler, args=(s.port, "127.0.0.%d" % (2 + i % 4),
                                                           stop, cut), daemon=True)
                   for i in range(64)]
        for t in threads:
            t.start()
        auth = {"Authorization": "Bearer client-s3cret"}
        answered = []
        try:
            time.sleep(1)
            deadline = time.time() + 6
            while time.time() < deadline:
                conn = s.connect(timeout=5)
                r = s.request("GET", "/livez", headers=auth, conn=conn)
                p = s.post(batch("kept-%d" % len(answered)), headers=auth, conn=conn)
                answered.append((r.status, p.status))
                conn.close()
                time.sleep(0.3)
        finally:
            stop.set()
            for t in threads:
                t.join(10)
        eq(set(answered), {(200, 200)}, "every request of 127.0.0.1 answered")
        ok(cut[0] >= 64, "each trickling connection was shut down (%d)" % cut[0])
        cuts = s.events("connections_cut")
        ok(cuts and cuts[-1]["header_timeout_total"] >= 64, "cut at the deadline: %r" % cuts)
        print("slow headers: %d requests answered while %d trickling connections were cut"
              % (2 * len(answered), cut[0]))


@case
def stalled_connection_is_closed_after_timeout():
    """--timeout 2 is honoured: the close comes after about 2 s, and well before the default
    30 s would close it (a bound of 15 s: a margin of several times what it measures). The
    head deadline is set past both, so that only the idle timeout can close it."""
    with Server(args=["--timeout", "2", "--header-timeout", "60"]) as s:
        sock = raw_connect(s.port, timeout=15)
        sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\n")
        t = time.time()
        try:
            got = sock.recv(1)  # blocks until the server closes (EOF)
        except ConnectionResetError:
            got = b""
        except socket.timeout:
            got = None
        dt = time.time() - t
        sock.close()
        eq(got, b"", "closed without an answer within 15 s (--timeout 2; the default is 30)")
        ok(dt >= 1.5, "closed after --timeout 2 s, not before (%.2f s)" % dt)
        print("timeout: a stalled connection was closed after %.2f s (--timeout 2)" % dt)


def chunked_flood(port, total, chunk=64 * 1024):
    """Sends a chunked body of `total` bytes; returns (bytes sent, error or None)."""
    sock = raw_connect(port, timeout=10)
    sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    piece = b"%x\r\n" % chunk + b" " * chunk + b"\r\n"
    sent, err = 0, None
    try:
        while sent < total:
            sock.sendall(piece)
            sent += chunk
        sock.sendall(b"0\r\n\r\n")
        err = "answer: %r" % sock.recv(200)
    except OSError as e:
        err = e.__class__.__name__
    sock.close()
    return sent, err


@case
def body_over_max_body_is_not_buffered():
    with Server(args=["--max-body", str(MIB)]) as s:
        eq(s.post(batch("warm")).status, 200, "warm-up post")
        before = read(os.path.join(s.state_dir, "journal.jsonl"))
        hwm0 = sgtest.proc_status_kib(s.proc.pid, "VmHWM")
        sent, err = chunked_flood(s.port, 200 * MIB)
        hwm1 = sgtest.proc_status_kib(s.proc.pid, "VmHWM")
        # A declared length over the cap: 413 before a byte of the body is read.
        sock = raw_connect(s.port, timeout=10)
        sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % (200 * MIB))
        head = sock.recv(100)
        sock.close()
        print("max-body: chunked 200 MiB flood cut off after %.1f MiB sent (%s); VmHWM "
              "%d -> %d kB (+%.1f MiB); declared 200 MiB answered %r"
              % (sent / MIB, err, hwm0, hwm1, (hwm1 - hwm0) / 1024.0, head[:12]), flush=True)
        ok(sent < 64 * MIB, "the server closed the flood early (%d bytes sent)" % sent)
        ok(head.startswith(b"HTTP/1.1 413"), "declared length over --max-body: %r" % head)
        eq(read(os.path.join(s.state_dir, "journal.jsonl")), before, "nothing journaled")
        eq(s.get("/readyz").status, 200, "still ready")


def wait_logged(s, n, what):
    sgtest.wait_until(lambda: len(s.request_log()) >= n, 5, what)


@case
def disconnect_mid_body_leaves_nothing():
    with Server() as s:
        eq(s.post(batch("before")).status, 200, "a first batch")
        totals = s.shard_totals()
        path = os.path.join(s.state_dir, "journal.jsonl")
        journal = read(path)
        for mode in ("length", "chunked"):
            bid = "cut-" + mode
            body = json.dumps(batch(bid, n=40)).encode()
            logged = len(s.request_log())
            sock = raw_connect(s.port)
            head = (b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Idempotency-Key: %s\r\n" % bid.encode())
            half = body[:len(body) // 2]
            if mode == "length":
                sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + half)
            else:
                sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n" +
                             b"%x\r\n" % len(half) + half + b"\r\n")
            time.sleep(0.2)
            sock.close()
            wait_logged(s, logged + 1, "the cut request's completion")
            eq(read(path), journal, "no journal line for the cut request (%s)" % mode)
            eq(s.get("/v1/batches/" + bid).status, 404, "no stored receipt (%s)" % mode)
            eq(s.shard_totals(), totals, "no load counted (%s)" % mode)
            r = s.post(body)
            eq((r.status, r.headers.get("idempotent-replayed")), (200, None),
               "the full batch afterwards is a fresh 200 (%s)" % mode)
            ids = [x["receipt"]["batch_id"] for x in journal_receipts(s.state_dir)]
            eq(ids.count(bid), 1, "journaled once (%s)" % mode)
            eq(s.shard_totals(), sgtest.journal_totals(s), "totals count it once (%s)" % mode)
            totals, journal = s.shard_totals(), read(path)
        sgtest.health_check(s.state_dir)


@case
def disconnect_while_journaling_is_journaled_once():
    with Server(env={"SHARDGATE_TEST_COMMIT_DELAY_MS": "500"}) as s:
        body = json.dumps(batch("gone", n=10)).encode()
        logged = len(s.request_log())
        sock = raw_connect(s.port)
        sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        time.sleep(0.1)
        sock.close()  # while the writer holds the batch
        wait_logged(s, logged + 1, "the request's completion")
        r = s.post(body)
        eq((r.status, r.headers.get("idempotent-replayed")), (200, "true"),
           "the complete batch was journaled; the retry gets the stored receipt")
        ids = [x["receipt"]["batch_id"] for x in journal_receipts(s.state_dir)]
        eq(ids, ["gone"], "journaled exactly once")
        eq(s.shard_totals(), sgtest.journal_totals(s), "totals count it once")
        eq(s.stop(), 0, "clean stop")


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("shardgate", "health", "source")))
