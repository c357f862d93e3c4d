#!/usr/bin/env python3
"""health_serve_hostile: `serve` under clients that hold connections with incomplete request
heads (docs/operations.md §1.4).
- Room: 80 connections from 127.0.0.2-6 (16 each, the per-address limit) each send part of a
  head and wait — as many as libmicrohttpd takes, more than the 64 served at once. A client on
  127.0.0.1 asks /livez five times, well inside the head deadline: each is answered 200, as the
  connection waiting longest for a head is shut down to make room whenever more than 64 are
  open.
- Deadline: 16 connections trickle one header byte every 0.5 s, which restarts libmicrohttpd's
  idle timeout every time; each is shut down anyway, none before the 5 s head deadline.
Every wait is bounded; no check depends on how busy the machine is."""
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import Failures, free_port, golden_shards, journal_text, tmpdir, write, CONF, SHARDS  # noqa: E402,E501
import ketama  # noqa: E402

BIN = sys.argv[1]
F = Failures()
T = tmpdir()
RING = ketama.Ring("sha1", 160, golden_shards())
HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"x" * 4000 + b"\r\n\r\n"


def livez(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/livez" % port, timeout=5) as r:
            return r.status
    except OSError as e:
        return repr(e)


def held(port, source):
    sock = socket.socket()
    sock.settimeout(5)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(HEAD[:30])
    return sock


def closed(sock):
    """Whether the server has closed it (a peek reads the end of the stream or an error)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(5)


def trickle(port, lifetimes):
    """One connection sending a byte every 0.5 s until the server closes it: its lifetime."""
    sock = held(port, "127.0.0.2")
    t0, k = time.time(), 30
    try:
        while time.time() - t0 < 20 and not closed(sock):
            time.sleep(0.5)
            sock.send(HEAD[k:k + 1])
            k += 1
    except OSError:
        pass
    lifetimes.append(time.time() - t0)
    sock.close()


journal = os.path.join(T, "journal.jsonl")
write(journal, journal_text([ketama.epoch_record(RING, ketama.contract())]))
port = free_port()
proc = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:%d" % port, "--conf", CONF,
                         "--shards", SHARDS, "--journal", journal],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
socks = []
try:
    deadline = time.time() + 10
    while time.time() < deadline and livez(port) != 200:
        time.sleep(0.05)
    F.check(livez(port) == 200, "server answers /livez within 10s")
    time.sleep(0.2)  # that connection closed
    t0 = time.time()
    socks = [held(port, "127.0.0.%d" % (2 + i % 5)) for i in range(80)]
    time.sleep(0.3)
    answers = []
    for _ in range(5):
        answers.append(livez(port))
        time.sleep(0.1)
    took = time.time() - t0
    F.check(answers == [200] * 5, "/livez answered while 80 heads wait", repr(answers))
    F.check(took < 5, "asked inside the head deadline", "%.1f s" % took)
    cut = sum(closed(s) for s in socks)
    # the 65th to 80th each shut one down as they came, a /livez past 64 one more
    F.check(16 <= cut <= 21, "the longest waiting made room", "%d of 80 closed" % cut)
    for s in socks:
        s.close()
    socks = []
    time.sleep(0.5)  # closed on the server's side too

    lifetimes = []
    threads = [threading.Thread(target=trickle, args=(port, lifetimes)) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    F.check(len(lifetimes) == 16 and all(l < 20 for l in lifetimes),
            "each trickling connection was shut down", repr(lifetimes))
    F.check(min(lifetimes or [0]) >= 4.5, "none before the 5 s head deadline",
            "shortest %.1f s" % min(lifetimes or [0]))
    print("health serve: the trickling connections lived %.1f..%.1f s"
          % (min(lifetimes or [0]), max(lifetimes or [0])))
finally:
    for s in socks:
        s.close()
    proc.kill()
    proc.wait()
F.exit()
