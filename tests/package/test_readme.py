#!/usr/bin/env python3
"""The README's first hour, run as written (README.md, "The first hour"): its one shell block,
line for line, in a fresh copy of the tree (the tracked files, no build), by bash with errexit
and pipefail. ops/run.sh builds and serves on 127.0.0.1:8080 as the README says, so that port
must be free. Checked after it: the exit status, the receipts byte for byte, and what the
commands printed (the status table, the plan, the health check, the probe, the worker). Then
the first day in the same copy: the how-tos of docs/operations.md §12 (a restart, a change
applied and reverted, a shard drained and finished, a backup and a restore, the Python package
installed and used), their blocks as written, then the README's install of libshardgate into
/usr/local (sudo) and a program built against it with pkg-config, run without
LD_LIBRARY_PATH; and the copy's `git status` clean at the end.

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
LIBRARY = "**As a library**"
FIRST_DAY = "## 12. The first day: how-tos, run as written"


def first_hour_block():
    """The first ```sh block after the section's heading, as written."""
    text = read(src("README.md")).decode()
    after = text.split(SECTION, 1)[1]
    m = re.search(r"^```sh\n(.*?)^```$", after, re.M | re.S)
    ok(m is not None, "a ```sh block under %r" % SECTION)
    return m.group(1)


def library_block():
    """The ```sh block after the README's "As a library" paragraph, as written."""
    text = read(src("README.md")).decode()
    ok(LIBRARY in text, "the README has %r" % LIBRARY)
    m = re.search(r"^```sh\n(.*?)^```$", text.split(LIBRARY, 1)[1], re.M | re.S)
    ok(m is not None, "a ```sh block after %r" % LIBRARY)
    return m.group(1)


def first_day_blocks():
    """Every ```sh block of docs/operations.md §12, in order, as written."""
    text = read(src("docs", "operations.md")).decode()
    ok(FIRST_DAY in text, "docs/operations.md has %r" % FIRST_DAY)
    section = re.split(r"^## ", text.split(FIRST_DAY, 1)[1], flags=re.M)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```$", section, re.M | re.S)
    eq(len(blocks), 5, "the how-tos' blocks: start, change and revert, drain, backup and restore, "
       "the Python package")
    return blocks


def run_block(tree, block, path=None):
    """bash -e -o pipefail -c BLOCK in TREE; a server it leaves running is killed."""
    env = dict(os.environ, PATH=path) if path else None
    p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", block], cwd=tree, env=env,
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
    return out


def git(tree, *args):
    return subprocess.run(["git", "-C", tree, "-c", "user.name=t", "-c", "user.email=t@t"]
                          + list(args), capture_output=True, text=True, check=True).stdout


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
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "the tree as copied")
    out = run_block(tree, first_hour_block())
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
    first_day(tree)


def first_day(tree):
    """docs/operations.md §12 after the first hour, in the same copy: the blocks run as one
    script (the gateway the first starts is the job the others stop), each output after a
    marker line."""
    blocks = first_day_blocks()
    script = "".join('echo "== how-to %d"\n%s' % (i + 1, b) for i, b in enumerate(blocks))
    path = "%s:%s:%s" % (os.path.join(tree, "build", "release", "gateway"),
                         os.path.join(tree, "build", "release", "health"), os.environ["PATH"])
    out = run_block(tree, script, path)
    parts = dict(re.findall(r"^== how-to (\d)\n(.*?)(?=^== how-to |\Z)", out, re.M | re.S))
    eq(sorted(parts), ["1", "2", "3", "4", "5"], "each how-to ran")
    eq(parts["5"].splitlines()[-2:], ["RESULT: OK", "<class 'shardgate.ring.Ring'>"],
       "the Python package, installed as written: its probe and its ring")
    applied = re.findall(r"^applied: epoch ([0-9a-f]{40}) \(epoch_seq (\d+)\)$", out, re.M)
    eq([seq for _, seq in applied], ["2", "3", "4", "5"],
       "four changes applied: d online, the revert, the drain, offline")
    epochs = [l.split()[:3] for l in parts["2"].splitlines() if re.match(r"^\d+ +[0-9a-f]{40} ", l)]
    eq([e[2] for e in epochs], ["start", "admin", "admin"],
       "admin epochs after the revert: the start's, the change's, the revert's\n%s" % parts["2"])
    eq(epochs[2][1], epochs[0][1], "the revert's epoch is the shipped membership's again")
    moves = re.findall(r"^moves +(\d+\.\d\d)% ", parts["3"], re.M)
    ok(len(moves) >= 2 and moves[0] == "34.53" and moves[-1] == "0.00",
       "draining shard-c moves its share (34.53%%), offline then nothing: %r" % moves)
    placed = [json.loads(l) for l in parts["3"].splitlines() if l.startswith('{"key":')]
    eq(len(placed), 1, "one lookup in the drain how-to")
    placed = placed[0]
    ok(placed["key"] == "order:1001" and placed["shard"] != "shard-c",
       "a key under the drained membership is not on shard-c: %r" % placed)
    eq(read(os.path.join(tree, "state", "shards.json")),
       read(src("input", "shards.json")).replace(
           b'{"id": "shard-c", "state": "online"', b'{"id": "shard-c", "state": "offline"'),
       "the membership in force after the drain is finished, restored from the backup")
    installed_library(tree)
    eq(git(tree, "status", "--porcelain"), "", "git status of the copy after the first day")
    ok(port_free(8080), "the gateway stopped after the restore: 127.0.0.1:8080 free again")


def local_dirs():
    return {root for root, _, _ in os.walk("/usr/local")}


def installed_library(tree):
    """The README's library block, as written: everything built and installed into /usr/local
    with sudo, then examples/c/lookup.c compiled with pkg-config and run with no
    LD_LIBRARY_PATH. What it installed is removed afterwards (the install manifest)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PKG_CONFIG_PATH")}
    manifest = os.path.join(tree, "build", "install", "install_manifest.txt")
    dirs_before = local_dirs()
    try:
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", library_block()], cwd=tree,
                           env=env, capture_output=True, text=True, timeout=900)
        eq(p.returncode, 0, "the library block's exit status\nstdout:\n%s\nstderr:\n%s"
           % (p.stdout[-3000:], p.stderr[-3000:]))
        placed = [l for l in p.stdout.splitlines() if l.startswith("order:1001 ")]
        eq([l.split(" ")[:2] for l in placed], [["order:1001", "shard-b"]],
           "the example places order:1001 on shard-b (docs/contract.md §6)\n%s" % p.stdout)
        libs = subprocess.run(["ldd", os.path.join(tree, "lookup")], env=env, capture_output=True,
                              text=True, check=True).stdout
        found = re.search(r"^\s*libshardgate\.so\.1 => (\S+) ", libs, re.M)
        eq(os.path.dirname(os.path.realpath(found.group(1))) if found else None,
           "/usr/local/lib", "the program finds the installed library by itself:\n%s" % libs)
    finally:
        if os.path.exists(manifest):
            for path in read(manifest).decode().splitlines():
                if path.startswith("/usr/local/") and os.path.lexists(path):
                    os.unlink(path)
            for d in sorted(local_dirs() - dirs_before, key=len, reverse=True):
                if not os.listdir(d):
                    os.rmdir(d)
            subprocess.run(["ldconfig"], check=False)
        if os.path.exists(os.path.join(tree, "lookup")):
            os.unlink(os.path.join(tree, "lookup"))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
