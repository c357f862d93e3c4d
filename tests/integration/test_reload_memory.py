#!/usr/bin/env python3
"""1,000 reloads with memory flat (issue #12, docs/api.md §15): every applied reload builds a new
ring and publishes a new view; the old one must be freed by its last user. VmRSS after 1,000
alternating SIGHUP reloads stays within a small bound of VmRSS after the first 100.

usage: test_reload_memory.py SHARDGATE_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
"""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Server, batch, case, eq, main, ok, proc_status_kib, src, tmpdir,  # noqa: E402
                    wait_until, write)

BOUND_KIB = 2048  # 2 MiB: a leaked view (640-point ring, membership) is ~10 KiB, 900 of them
# ~9 MiB; ASan's allocator alone grows ~1 MiB here (werror build: ~0.3 MiB)


def memberships():
    with open(src("input", "shards.json")) as f:
        a = json.load(f)
    b = json.loads(json.dumps(a))
    b["shards"][3]["state"] = "online"
    return json.dumps(a), json.dumps(b)


@case("reload")
def a_thousand_reloads_keep_memory_flat():
    path = os.path.join(tmpdir(), "shards.json")
    docs = memberships()
    write(path, docs[0])
    with Server(shards=path) as s:
        rss = {}
        for i in range(1, 1001):
            write(path, docs[i % 2])
            s.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: len(s.events("reload_applied")) >= i, 20, "reload %d" % i,
                       step=0.002)
            if i % 50 == 0:
                eq(s.post(batch("m%d" % i)).status, 200, "POST after reload %d" % i)
            if i in (100, 1000):
                rss[i] = proc_status_kib(s.proc.pid, "VmRSS")
        print("VmRSS after 100 reloads: %d KiB, after 1000: %d KiB" % (rss[100], rss[1000]))
        ok(rss[1000] - rss[100] <= BOUND_KIB,
           "VmRSS grew %d KiB from reload 100 to 1000 (bound %d)" % (rss[1000] - rss[100],
                                                                    BOUND_KIB))
        eq(len(s.get("/v1/epochs").json()["epochs"]), 1001, "1,001 epochs in the chain")
        eq(s.stop(), 0, "exit")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
