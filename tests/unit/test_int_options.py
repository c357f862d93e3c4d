#!/usr/bin/env python3
"""Integer options are parsed one way (docs/decisions.md §12): decimal digits only, in range.
`dispatch --max-changes` (strtoull) took '+5' and ' 5' as 5; `serve --max-changes` refused
them. Both refuse them now, exit 64."""
import os
import subprocess
import sys
import tempfile

SHARDGATE, ROOT = sys.argv[1], sys.argv[2]
CONF = os.path.join(ROOT, "conf", "dispatch.env")
SHARDS = os.path.join(ROOT, "input", "shards.json")
BATCH = os.path.join(ROOT, "input", "changes.json")
TMP = tempfile.mkdtemp(prefix="shardgate-intopt-")
results = {"passed": 0, "failed": 0}


def run(*args):
    env = dict(os.environ)
    env.pop("SHARDGATE_CONF", None)
    return subprocess.run([SHARDGATE, *args], capture_output=True, timeout=60, env=env)


def expect(name, actual, wanted):
    if actual == wanted:
        results["passed"] += 1
    else:
        results["failed"] += 1
        print("FAIL %s: expected %r actual %r" % (name, wanted, actual))


def first_line(p):
    return p.stderr.decode().split("\n")[0]


def test_dispatch_max_changes():
    for text in ("+5", " 5", "5 ", "18446744073709551621", "-1", "0", "10000001", ""):
        p = run("dispatch", "--conf", CONF, "--shards", SHARDS, "--batch", BATCH,
                "--max-changes", text)
        expect("dispatch %r exit" % text, p.returncode, 64)
        expect("dispatch %r message" % text, first_line(p),
               "shardgate: --max-changes must be 1..10000000")
    p = run("dispatch", "--conf", CONF, "--shards", SHARDS, "--batch", BATCH,
            "--max-changes", "10000000")
    expect("dispatch 10000000 exit", p.returncode, 0)


def test_serve_max_changes_agrees():
    for text in ("+5", " 5"):
        p = run("serve", "--conf", CONF, "--shards", SHARDS, "--state-dir",
                os.path.join(TMP, "st"), "--max-changes", text)
        expect("serve %r exit" % text, p.returncode, 64)
        expect("serve %r message" % text, first_line(p),
               "shardgate: --max-changes must be an integer 1..10000000, not \"%s\"" % text)


test_dispatch_max_changes()
test_serve_max_changes_agrees()
print("%d passed, %d failed" % (results["passed"], results["failed"]))
sys.exit(1 if results["failed"] else 0)
