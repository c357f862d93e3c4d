#!/usr/bin/env python3
"""Feed memory under stalled readers (docs/api.md §17, docs/performance.md §16).

Posts RECEIPTS batches of 100,000 changes (receipts of about 22 MB each), then for N in 30 and
200: N readers each ask GET /v1/receipts?after=i%RECEIPTS&limit=1 (a page holding one large
receipt) and never read (4 KiB receive buffers). The server's VmRSS is sampled every 50 ms
while they stall, and after they are closed. Figures: the idle VmRSS, the peak during the
stall (the largest sample and VmHWM, reset before each round through /proc/PID/clear_refs),
the VmRSS once every reader has gone, the feed metrics, and two bounds: the peak above idle
below the documented total (docs/api.md §17: --feed-memory, 64 KiB per connection and 64 KiB
per answer sending a long receipt, and 2 MiB of read buffers per worker thread) plus 64 MB, and
the figure after within 64 MB of idle.

usage: feed_memory.py SHARDGATE SOURCE_DIR [--json OUT] [--receipts K] [--readers N,N]
"""
import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, proc_status_kib  # noqa: E402

MB = 1000 * 1000
FEED_MEMORY = 64 << 20
CONNECTION_MEMORY = 64 << 10  # MHD_OPTION_CONNECTION_MEMORY_LIMIT (docs/limits.md)
STREAM_BLOCK = 64 << 10  # the block of an answer sending a long receipt from its file
READ_BUFFERS = 2 << 20  # a worker thread's feed read buffers
THREADS = 2  # --threads' default


def documented_total(readers):
    """What docs/api.md §17 says the feed may hold with `readers` connections open."""
    return FEED_MEMORY + readers * (CONNECTION_MEMORY + STREAM_BLOCK) + THREADS * READ_BUFFERS


def big_batch(batch_id, n=100000):
    """100,000 changes whose receipt is about 22 MB (about 216 bytes a placement)."""
    return {"batch_id": batch_id, "changes": [
        {"id": "c%d" % i, "key": "%s-%06d-%s" % (batch_id, i, "k" * 140), "size": 1}
        for i in range(n)]}


def metric(s, name):
    """A series of /metrics; 0 when the server has none (a build before --feed-memory, run as
    the baseline)."""
    text = s.get("/metrics").body.decode()
    return int(next((l.split(" ")[1] for l in text.splitlines() if l.startswith(name + " ")), 0))


def stalled(port, after):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /v1/receipts?after=%d&limit=1 HTTP/1.1\r\nHost: x\r\n\r\n" % after)
    return sock


def rss_kib(pid):
    return proc_status_kib(pid, "VmRSS")


def settle(s, seconds=1.0):
    """The least VmRSS over a second: what the server keeps, not a buffer of the moment."""
    low, end = rss_kib(s.proc.pid), time.time() + seconds
    while time.time() < end:
        time.sleep(0.05)
        low = min(low, rss_kib(s.proc.pid))
    return low


def one_round(s, n, receipts, idle):
    with open("/proc/%d/clear_refs" % s.proc.pid, "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    refused0 = metric(s, "shardgate_feed_memory_refusals_total")
    peak, socks = 0, []
    for i in range(n):
        socks.append(stalled(s.port, i % receipts))
        peak = max(peak, rss_kib(s.proc.pid))
    end = time.time() + 3
    held_max = 0
    while time.time() < end:
        peak = max(peak, rss_kib(s.proc.pid))
        held_max = max(held_max, metric(s, "shardgate_feed_memory_bytes"))
        time.sleep(0.05)
    hwm = proc_status_kib(s.proc.pid, "VmHWM")
    refused = metric(s, "shardgate_feed_memory_refusals_total") - refused0
    for sock in socks:
        sock.close()
    sgtest.wait_until(lambda: metric(s, "shardgate_feed_memory_bytes") <= FEED_MEMORY // 4, 30,
                      "the pages of the stalled readers released")
    after = settle(s)
    fig = {"readers": n, "idle_kib": idle, "peak_kib": peak, "vmhwm_kib": hwm,
           "after_kib": after, "held_bytes_max": held_max, "refused": refused,
           "held_bytes_after": metric(s, "shardgate_feed_memory_bytes")}
    fig["documented_total_bytes"] = documented_total(n)
    fig["peak_below_bound"] = (max(peak, hwm) - idle) * 1024 < documented_total(n) + 64 * MB
    fig["after_within_64mb"] = (after - idle) * 1024 <= 64 * MB
    print("feed_memory: %d stalled readers: VmRSS idle %d kB, peak %d kB (VmHWM %d kB, +%.1f MB),"
          " after %d kB (+%.1f MB); feed bytes held at most %.1f MB, %d refused (503);"
          " documented total %.1f MB"
          % (n, idle, peak, hwm, (max(peak, hwm) - idle) * 1.024 / 1000, after,
             (after - idle) * 1.024 / 1000, held_max / MB, refused,
             documented_total(n) / MB), flush=True)
    return fig


def main():
    p = argparse.ArgumentParser()
    p.add_argument("shardgate")
    p.add_argument("source")
    p.add_argument("--json")
    p.add_argument("--receipts", type=int, default=10)
    p.add_argument("--readers", default="30,200")
    a = p.parse_args()
    sgtest.take_operands([a.shardgate, a.source], ("shardgate", "source"))
    args = ["--max-body", str(64 << 20), "--timeout", "120",
            "--max-connections-per-ip", "1024", "--max-watchers", "1024"]
    figures = {"feed_memory": FEED_MEMORY, "rounds": []}
    with Server(args=args) as s:
        sizes = []
        for k in range(a.receipts):
            r = s.post(big_batch("big-%d" % k))
            assert r.status == 200, r.body[:200]
            sizes.append(len(r.body))
        figures["receipt_bytes"] = sizes[0]
        print("feed_memory: %d receipts of %.1f MB journaled" % (len(sizes), sizes[0] / MB))
        idle = settle(s, 2.0)
        for n in (int(x) for x in a.readers.split(",")):
            figures["rounds"].append(one_round(s, n, a.receipts, idle))
            idle = settle(s, 1.0)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)
            f.write("\n")
    ok = all(r["peak_below_bound"] and r["after_within_64mb"] for r in figures["rounds"])
    print("feed_memory: %s" % ("both bounds held" if ok else "A BOUND WAS PASSED"))
    sgtest.cleanup(True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
