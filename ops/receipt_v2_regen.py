#!/usr/bin/env python3
"""One-off check for receipt version 2: regenerates the expected receipt bytes of
the valid case folders from `shardgate dispatch` and refuses any difference from the old bytes
other than exactly the v2 header (`"receipt_version":1` -> 2 and `"epoch":"<40 hex>"` after
batch_id, docs/contract.md §5).

usage: receipt_v2_regen.py SHARDGATE ROOT [--write]
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
from run_cases import case_files  # noqa: E402

V2 = re.compile(rb'^\{"receipt_version":2,("batch_id":"(?:[^"\\]|\\.)*"),"epoch":"[0-9a-f]{40}",')


def as_v1(v2):
    m = V2.match(v2)
    return None if not m else b'{"receipt_version":1,' + m.group(1) + b"," + v2[m.end():]


def main():
    shardgate, root = sys.argv[1], sys.argv[2]
    write = "--write" in sys.argv
    bad = changed = 0
    for suite in ("tests/cases/valid", "tests/json/valid"):
        for name in sorted(os.listdir(os.path.join(root, suite))):
            case = os.path.join(root, suite, name)
            path = os.path.join(case, "stdout")
            if not os.path.exists(path):
                continue
            files, _ = case_files(root, case)
            new = subprocess.run([shardgate, "dispatch", "--conf", files["conf"], "--shards",
                                  files["shards"], "--batch", files["batch"]],
                                 capture_output=True, timeout=30).stdout
            old = open(path, "rb").read()
            if new == old:
                continue
            if as_v1(new) != old:
                print("NOT ONLY THE HEADER: %s" % path)
                bad += 1
                continue
            changed += 1
            if write:
                open(path, "wb").write(new)
    print("changed %d, refused %d" % (changed, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
