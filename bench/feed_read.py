#!/usr/bin/env python3
"""One feed reader that reads (docs/performance.md §16.1).

Posts three batches of 100,000 changes (receipts of 26.9 MB), then one client on a kept-alive
connection reads 30 pages of one receipt each (GET /v1/receipts?after=K&limit=1, K cycling over
the three), and 30 pages of a shard's assignments of the same receipts. Figures: the median, the
10th and the 90th percentile of the time to read a whole page.

usage: feed_read.py SHARDGATE SOURCE_DIR [--json OUT]
"""
import argparse
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "lib"))
sys.path.insert(0, here)
import sgtest  # noqa: E402
from sgtest import Server  # noqa: E402
from feed_memory import big_batch  # noqa: E402

RECEIPTS = 3
READS = 30
PAGES = {"receipt": "/v1/receipts?after=%d&limit=1",
         "shard": "/v1/shards/shard-a/assignments?after=%d&limit=1"}


def read_pages(s, path):
    conn, times, size = s.connect(), [], 0
    for i in range(READS):
        t = time.perf_counter()
        r = s.request("GET", path % (i % RECEIPTS), conn=conn)
        times.append(time.perf_counter() - t)
        assert r.status == 200, r.body[:200]
        size = len(r.body)
    conn.close()
    times.sort()
    return {"bytes": size, "median_ms": times[READS // 2] * 1000,
            "p10_ms": times[READS // 10] * 1000, "p90_ms": times[READS * 9 // 10] * 1000}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("shardgate")
    p.add_argument("source")
    p.add_argument("--json")
    a = p.parse_args()
    sgtest.take_operands([a.shardgate, a.source], ("shardgate", "source"))
    figures = {}
    with Server(args=["--max-body", str(64 << 20)]) as s:
        for k in range(RECEIPTS):
            r = s.post(big_batch("big-%d" % k))
            assert r.status == 200, r.body[:200]
        for name, path in PAGES.items():
            f = figures[name] = read_pages(s, path)
            print("feed_read: %s pages of %.1f MB: median %.1f ms, p10 %.1f, p90 %.1f"
                  % (name, f["bytes"] / 1e6, f["median_ms"], f["p10_ms"], f["p90_ms"]),
                  flush=True)
    if a.json:
        with open(a.json, "w") as out:
            json.dump(figures, out, indent=1)
            out.write("\n")
    sgtest.cleanup(True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
