#!/usr/bin/env python3
"""1,000 reloads free every old view (docs/api.md §15): every applied reload builds a new ring
and publishes a new view; the old one must be freed by its last user. After 1,000 alternating
SIGHUP reloads `shardgate_views_alive` comes back to 1 (the published view): a view that is
never freed keeps it above. The count is exact whatever the allocator (ASan's keeps freed
memory in a quarantine); memory leaked inside a freed view is LeakSanitizer's and valgrind's to
find, and VmRSS over 1,000 reloads is a figure of bench/reload_load.py (docs/performance.md §9).

usage: test_reload_memory.py SHARDGATE_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
"""
import json
import os
import re
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Server, batch, case, eq, main, proc_status_kib, src, tmpdir,  # noqa: E402
                    wait_until, write)


def memberships():
    with open(src("input", "shards.json")) as f:
        a = json.load(f)
    b = json.loads(json.dumps(a))
    b["shards"][3]["state"] = "online"
    return json.dumps(a), json.dumps(b)


def views_alive(s):
    r = s.get("/metrics")
    eq(r.status, 200, "GET /metrics")
    found = re.findall(rb"^shardgate_views_alive ([0-9]+)$", r.body, re.M)
    eq(len(found), 1, "one shardgate_views_alive sample")
    return int(found[0])


@case("reload")
def a_thousand_reloads_free_every_old_view():
    path = os.path.join(tmpdir(), "shards.json")
    docs = memberships()
    write(path, docs[0])
    with Server(shards=path) as s:
        eq(views_alive(s), 1, "views alive at the start")
        for i in range(1, 1001):
            write(path, docs[i % 2])
            s.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: len(s.events("reload_applied")) >= i, 20, "reload %d" % i,
                       step=0.002)
            if i % 50 == 0:
                eq(s.post(batch("m%d" % i)).status, 200, "POST after reload %d" % i)
        # A request's last reference goes a moment after its answer: wait for the count, which
        # a view that is never freed keeps above 1 for good.
        wait_until(lambda: views_alive(s) == 1, 10, "views alive back to 1 after 1,000 reloads")
        print("VmRSS after 1,000 reloads: %s KiB" % proc_status_kib(s.proc.pid, "VmRSS"))
        eq(len(s.get("/v1/epochs").json()["epochs"]), 1001, "1,001 epochs in the chain")
        eq(s.stop(), 0, "exit")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
