#!/usr/bin/env python3
"""Out of memory is exit 1, never the exit 3 of an unusable file (docs/decisions.md §12).

A 1 GiB sparse contract or shards file cannot be read under a 256 MiB address-space limit:
the read fails with ENOMEM, which is the machine's fault, not the file's. Real processes, a
real rlimit, no mocks. Not under ASan (its shadow memory needs the address space)."""
import os
import resource
import subprocess
import sys
import tempfile

SHARDGATE, ROOT = sys.argv[1], sys.argv[2]
CONF = os.path.join(ROOT, "conf", "dispatch.env")
SHARDS = os.path.join(ROOT, "input", "shards.json")
BATCH = os.path.join(ROOT, "input", "changes.json")
TMP = tempfile.mkdtemp(prefix="shardgate-oom-")
LIMIT = 256 << 20
results = {"passed": 0, "failed": 0}


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run(*args):
    env = dict(os.environ)
    env.pop("SHARDGATE_CONF", None)
    return subprocess.run([SHARDGATE, *args], capture_output=True, timeout=60, env=env,
                          preexec_fn=limit_memory)


def expect(name, actual, wanted):
    if actual == wanted:
        results["passed"] += 1
    else:
        results["failed"] += 1
        print("FAIL %s: expected %r actual %r" % (name, wanted, actual))


def sparse(name):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.truncate(1 << 30)
    return path


def test_contract_out_of_memory():
    big = sparse("huge.env")
    for cmd in (["dispatch", "--batch", BATCH], ["ring"], ["lookup", "k"]):
        p = run(cmd[0], "--conf", big, "--shards", SHARDS, *cmd[1:])
        expect(cmd[0] + " contract exit", p.returncode, 1)
        expect(cmd[0] + " contract message", p.stderr.decode(),
               "contract: %s: cannot read: Cannot allocate memory\n" % big)


def test_shards_out_of_memory():
    big = sparse("huge.json")
    p = run("dispatch", "--conf", CONF, "--shards", big, "--batch", BATCH)
    expect("shards exit", p.returncode, 1)
    expect("shards message", p.stderr.decode(),
           "shards: %s: cannot read: Cannot allocate memory\n" % big)


def test_serve_out_of_memory():
    big = sparse("huge-serve.env")
    p = run("serve", "--conf", big, "--shards", SHARDS, "--state-dir", os.path.join(TMP, "st"),
            "--listen", "127.0.0.1:0")
    expect("serve exit", p.returncode, 1)
    expect("serve message", p.stderr.decode(),
           "contract: %s: cannot read: Cannot allocate memory\n" % big)


def test_a_usable_file_still_works_under_the_limit():
    p = run("dispatch", "--conf", CONF, "--shards", SHARDS, "--batch", BATCH)
    expect("small files exit", p.returncode, 0)


for test in (test_contract_out_of_memory, test_shards_out_of_memory, test_serve_out_of_memory,
             test_a_usable_file_still_works_under_the_limit):
    test()
print("%d passed, %d failed" % (results["passed"], results["failed"]))
sys.exit(1 if results["failed"] else 0)
