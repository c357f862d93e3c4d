#!/usr/bin/env python3
"""ctest bench/floor_check: bench/loopback_floor moves what it says (correctness only, no
timing): every consumer counted the right items in every page, the bytes are whole pages, the
page count follows the schedule, and bad arguments are refused with 64.

usage: floor_check.py LOOPBACK_FLOOR"""
import json
import subprocess
import sys


def main():
    floor = sys.argv[1]
    out = subprocess.run([floor, "2", "1000000", "100", "1"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["consumers_ok"] == 2, r
    assert 9900 <= r["page_bytes"] <= 10100, r  # 1,000,000 B/s at 100 pages/s
    assert r["bytes"] == r["pages"] * r["page_bytes"], r
    # 100 pages/s for 1 s to each of 2 consumers, the first at once: at most 202; a loaded
    # machine may fall behind the schedule, not ahead of it
    assert 20 <= r["pages"] <= 202, r
    for bad in (["0", "1000", "10", "1"], ["2", "0", "10", "1"], ["2", "1000", "10"]):
        b = subprocess.run([floor] + bad, capture_output=True, text=True, timeout=10)
        assert b.returncode == 64 and "loopback_floor" in b.stderr, (bad, b)
    print("floor_check: ok", r)


if __name__ == "__main__":
    main()
