#!/usr/bin/env python3
"""The README's first hour, run as written (README.md, "The first hour"): its one shell block,
line for line, in a fresh copy of the tree (the tracked files, no build), by bash with errexit
and pipefail. ops/run.sh builds and serves on 127.0.0.1:8080 as the README says, so that port
must be free. Checked after it: the exit status, the receipts byte for byte, and what the
commands printed (the status table, the plan, the health check, the probe, the worker).

usage: test_readme.py SHARDGATE_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import case, eq, main, ok, read, src, tmpdir  # noqa: E402

SECTION = "## The first hour"


def first_hour_block():
    """The first ```sh block after the section's heading, as written."""
    text = read(src("README.md")).decode()
    after = text.split(SECTION, 1)[1]
    m = re.search(r"^```sh\n(.*?)^```$", after, re.M | re.S)
    ok(m is not None, "a ```sh block under %r" % SECTION)
    return m.group(1)


def tree_copy():
    """The tracked files of the source tree (git ls-files), nothing built."""
    files = subprocess.run(["git", "-C", src(), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.split(b"\0")
    dest = os.path.join(tmpdir(), "shardgate")
    for f in filter(None, (n.decode() for n in files)):
        if not os.path.exists(src(f)):
            continue  # deleted in the work tree, not yet committed
        os.makedirs(os.path.join(dest, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(src(f), os.path.join(dest, f), follow_symlinks=False)
    return dest


def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@case("readme")
def the_first_hour_runs_as_written():
    ok(port_free(8080), "127.0.0.1:8080 is free (the README serves there)")
    tree = tree_copy()
    p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", first_hour_block()], cwd=tree,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=600)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # a server left running by a failed line
        except ProcessLookupError:
            pass
    log = read(os.path.join(tree, "run.log")).decode() if os.path.exists(
        os.path.join(tree, "run.log")) else ""
    eq(p.returncode, 0, "the block's exit status\nstdout:\n%s\nstderr:\n%s\nrun.log:\n%s"
       % (out, err, log[-3000:]))
    golden = read(src("tests", "golden", "sample-0001.receipt.v2.json"))
    eq(read(os.path.join(tree, "answer.json")), golden, "the answer is the golden receipt")
    ok(re.search(r"^shard-a  online +1 +20 +34\.26% +8 +2$", out, re.M),
       "admin status: shard-a's row\n%s" % out)
    ok("moves   21.84% of the hash space (938094517 of 4294967296 hash values)\n" in out,
       "admin plan: the movement")
    ok('{"status":"pass"' in out, "shardgate-health check passed")
    ok("RESULT: OK" in out, "the probe agreed")
    shard_c = [l for l in out.splitlines() if l.startswith('{"type":"assignment","seq":1,')]
    eq([json.loads(l)["id"] for l in shard_c], ["ch-002", "ch-005", "ch-007", "ch-008"] * 2,
       "shard-c's assignments: by curl, then by the worker")
    eq(json.loads(read(os.path.join(tree, "shard-c.cursor")))["after"], 1, "the worker's cursor")
    ok(out.endswith("journal: OK: 0 sealed segments, 1 receipts, 1 checkpoints\n"),
       "journal verify, last")
    ok(port_free(8080), "the gateway stopped: 127.0.0.1:8080 free again")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
