#!/usr/bin/python3
"""The status page at 10,000 shards (docs/performance.md §18).

A gateway with 10,000 online shards (1.6 million points; the ring is drawn sampled) and the
worked example's three, in a real headless Chromium (tests/ui/browser.py). Each run opens the
page afresh and times, in the page's own clock (performance.now(), from navigation start),
until every shard's row and the ring's drawing are in the DOM; the sizes of the answers it read
are printed alongside. The worked example is the baseline of the same run.

usage: ui_render.py SHARDGATE SOURCE_DIR [--runs N] [--json OUT]   (Debian's /usr/bin/python3)
"""
import argparse
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(here, "..", "tests", "ui"))
import sgtest  # noqa: E402
from browser import Browser  # noqa: E402
from sgtest import Server, tmpdir, write  # noqa: E402

SHARDS = 10000


def many_shards(n):
    return {"shards": [{"id": "shard-%05d" % i, "state": "online", "capacity": 100}
                       for i in range(n)]}


def render_ms(b, port, rows):
    b.open("about:blank")
    b.open("http://127.0.0.1:%d/ui/" % port)
    b.wait("document.body.dataset.state === 'ready' && document.querySelector('#ring svg') "
           "&& document.querySelectorAll('#shards tbody tr').length === %d" % min(rows, 1000), 120,
           "the page shows %d shards and the ring" % rows)
    return b.js("performance.now()")


def measure(b, shards_path, rows, runs):
    with Server(shards=shards_path) as s:
        sizes = {p: len(s.get(p).body) for p in ("/v1/shards", "/v1/ring?format=svg", "/metrics")}
        times = sorted(render_ms(b, s.port, rows) for _ in range(runs))
        nodes = b.js("document.getElementsByTagName('*').length")
    return {"shards": rows, "runs": runs, "median_ms": round(times[len(times) // 2], 1),
            "min_ms": round(times[0], 1), "max_ms": round(times[-1], 1), "dom_elements": nodes,
            "bytes": sizes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shardgate")
    ap.add_argument("source")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    sgtest.BIN, sgtest.SRC = os.path.abspath(a.shardgate), os.path.abspath(a.source)
    big = os.path.join(tmpdir(), "shards.json")
    write(big, json.dumps(many_shards(SHARDS)))
    with Browser() as b:
        out = {"worked_example": measure(b, os.path.join(a.source, "input", "shards.json"), 5,
                                         a.runs),
               "shards_10000": measure(b, big, SHARDS, a.runs)}
    out["ratio"] = round(out["shards_10000"]["median_ms"] / out["worked_example"]["median_ms"], 1)
    text = json.dumps(out, indent=1)
    print(text)
    if a.json:
        write(a.json, text + "\n")


if __name__ == "__main__":
    main()
