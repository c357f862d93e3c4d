#!/usr/bin/env python3
"""Out of memory is exit 1, never the exit 3 of an unusable file (docs/decisions.md §28).

A 1 GiB sparse contract or shards file cannot be read under a 256 MiB address-space limit:
the read fails with ENOMEM, which is the machine's fault, not the file's. Real processes, a
real rlimit, no mocks. Not under ASan (its shadow memory needs the address space)."""
import os
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import case, eq, main, run_gateway, src, tmpdir  # noqa: E402

LIMIT = 256 << 20
ENOMEM = "%s: %s: cannot read: Cannot allocate memory\n"


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_limited(*args):
    return run_gateway(*args, preexec_fn=limit_memory)


def sparse(name):
    path = os.path.join(tmpdir(), name)
    with open(path, "wb") as f:
        f.truncate(1 << 30)
    return path


@case
def contract_out_of_memory():
    big = sparse("huge.env")
    for cmd in (["dispatch", "--batch", src("input", "changes.json")], ["ring"], ["lookup", "k"]):
        p = run_limited(cmd[0], "--conf", big, "--shards", src("input", "shards.json"), *cmd[1:])
        eq(p.returncode, 1, cmd[0] + " contract exit")
        eq(p.stderr, ENOMEM % ("contract", big), cmd[0] + " contract message")


@case
def shards_out_of_memory():
    big = sparse("huge.json")
    p = run_limited("dispatch", "--conf", src("conf", "dispatch.env"), "--shards", big,
                    "--batch", src("input", "changes.json"))
    eq(p.returncode, 1, "shards exit")
    eq(p.stderr, ENOMEM % ("shards", big), "shards message")


@case
def serve_out_of_memory():
    big = sparse("huge-serve.env")
    p = run_limited("serve", "--conf", big, "--shards", src("input", "shards.json"),
                    "--state-dir", os.path.join(tmpdir(), "st"), "--listen", "127.0.0.1:0")
    eq(p.returncode, 1, "serve exit")
    eq(p.stderr, ENOMEM % ("contract", big), "serve message")


@case
def a_usable_file_still_works_under_the_limit():
    p = run_limited("dispatch", "--conf", src("conf", "dispatch.env"), "--shards",
                    src("input", "shards.json"), "--batch", src("input", "changes.json"))
    eq(p.returncode, 0, "small files exit")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
