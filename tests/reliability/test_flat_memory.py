#!/usr/bin/env python3
"""Flat memory (docs/tools.md §10): a fixed count of requests (POSTs, feed pages at ever new
cursors, reads of stored receipts, a SIGHUP reload every 250 rounds) against the -Werror build,
not a sanitized one; the server's RssAnon after the first quarter and at the end may differ by
at most GROWTH_BOUND_KIB.

Why the bound does not follow the machine's load: the count of requests is fixed and one client
sends them one after another, so what the server keeps is the same on a busy machine and an idle
one; only the timing changes. RssAnon, not VmRSS: file pages (the binary, the journal's mapped
segments) come and go with the page cache. What may legitimately grow is small: the index's
in-RAM table holds the ids since the last checkpoint (every 200 ms here: a few hundred ids of
64 bytes) and the ledger holds the same five shards. Measured: 64 KiB over 2,250 rounds. The
bound, 8 MiB, is a hundred times that; a feed cache that kept every page it served (about 5 KiB
each, two a round) adds about 21 MiB (the gate's feed-cache-keeps-every-page).

usage: test_flat_memory.py SHARDGATE HEALTH SOURCE_DIR [--rounds N] [--json OUT]
(--json writes the figures; bench/run.sh runs it so on its -O2 build, docs/performance.md §15)
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, eq, ok  # noqa: E402

GROWTH_BOUND_KIB = 8 * 1024
ROUNDS = 3000


def batch(i):
    return {"batch_id": "flat-%d" % i,
            "changes": [{"id": "c%d" % k, "key": "key-%d-%d" % (i, k), "size": 1 + k}
                        for k in range(50)]}


def anon_kib(s):
    return sgtest.proc_status_kib(s.proc.pid, "RssAnon")


def round_trip(s, conn, i):
    r = s.post(batch(i), conn=conn)
    eq(r.status, 200, "POST %d" % i)
    r = s.request("GET", "/v1/receipts?after=%d&limit=1" % i, conn=conn)
    eq(r.status, 200, "feed page after %d" % i)
    r = s.request("GET", "/v1/shards/shard-a/assignments?after=%d&limit=1" % i, conn=conn)
    eq(r.status, 200, "assignments after %d" % i)
    r = s.request("GET", "/v1/batches/flat-%d" % i, conn=conn)
    eq(r.status, 200, "GET batch %d" % i)


def main(argv):
    sgtest.take_operands(argv[1:4], ("shardgate", "health", "source"))
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else ROUNDS
    with Server(args=["--checkpoint-interval", "200ms"]) as s:
        conn = s.connect()
        samples = []  # (round, RssAnon) every 10 rounds
        for i in range(rounds):
            round_trip(s, conn, i)
            if i % 250 == 249:
                reloads = len(s.events("reload_applied")) + len(s.events("reload_unchanged"))
                s.proc.send_signal(signal.SIGHUP)
                sgtest.wait_until(lambda: len(s.events("reload_applied")) +
                                  len(s.events("reload_unchanged")) > reloads, 30,
                                  "the reload after round %d" % i)
            if i % 10 == 9:
                samples.append((i, anon_kib(s)))
        conn.close()
        # each figure the least of ten samples over 100 rounds: a buffer held for a moment (an
        # index flush) is not memory kept
        quarter = rounds // 4
        first = min(k for i, k in samples if quarter - 100 <= i < quarter)
        last = min(k for i, k in samples if i >= rounds - 100)
        print("flat_memory: rounds=%d requests=%d RssAnon_kib after a quarter=%d at the end=%d "
              "growth=%d bound=%d" % (rounds, 4 * rounds, first, last, last - first,
                                      GROWTH_BOUND_KIB))
        if "--json" in argv:
            with open(argv[argv.index("--json") + 1], "w") as f:
                json.dump({"rounds": rounds, "requests": 4 * rounds, "rss_anon_kib_quarter": first,
                           "rss_anon_kib_end": last, "growth_kib": last - first,
                           "bound_kib": GROWTH_BOUND_KIB}, f)
                f.write("\n")
        ok(last - first <= GROWTH_BOUND_KIB, "RSS grew %d KiB over the last three quarters of the "
           "requests, more than %d" % (last - first, GROWTH_BOUND_KIB))
        eq(s.stop(), 0, "exit 0")
    print("1 passed, 0 failed")
    sgtest.cleanup(True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
