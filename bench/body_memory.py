#!/usr/bin/env python3
"""Peak RSS (VmHWM) of `shardgate serve` for the two worst cases of request bodies
(docs/operations.md §5.3): one 16 MiB `[0,0,...]` body, and N connections each holding 15 MiB
of a declared 16 MiB body. Usage: body_memory.py SHARDGATE SOURCE_DIR N"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import sgtest
from sgtest import Server, proc_status_kib

MIB = 1 << 20
OPEN = ["--max-connections-per-ip", "256"]


def one_flat_array():
    with Server(args=OPEN) as s:
        h0 = proc_status_kib(s.proc.pid, "VmHWM")
        body = (b"[" + b"0," * (8 * MIB - 1) + b"0]")[:16 * MIB - 1] + b"]"
        r = s.post(body)
        h1 = proc_status_kib(s.proc.pid, "VmHWM")
    print("16 MiB [0,0,...]: status %d, VmHWM %d -> %d kB (+%.1f MiB)"
          % (r.status, h0, h1, (h1 - h0) / 1024))


def hold_partial_body(port):
    """Opens a POST declaring 16 MiB, sends 15 MiB; returns (socket, answered 503 at once)."""
    c = socket.create_connection(("127.0.0.1", port), timeout=20)
    c.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % (16 * MIB))
    try:
        for _ in range(15):
            c.sendall(b" " * MIB)
    except OSError:
        pass
    c.settimeout(0.3)
    try:
        refused = c.recv(100).startswith(b"HTTP/1.1 503")
    except OSError:
        refused = False
    return c, refused


def many_partial_bodies(n):
    with Server(args=OPEN) as s:
        h0 = proc_status_kib(s.proc.pid, "VmHWM")
        held = [hold_partial_body(s.port) for _ in range(n)]
        time.sleep(1)
        h1 = proc_status_kib(s.proc.pid, "VmHWM")
        for c, _ in held:
            c.close()
    print("%d connections x 15 MiB of 16 MiB: %d refused 503, VmHWM %d -> %d kB (+%.1f MiB)"
          % (n, sum(r for _, r in held), h0, h1, (h1 - h0) / 1024))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sgtest.BIN, sgtest.SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    one_flat_array()
    many_partial_bodies(int(sys.argv[3]))
