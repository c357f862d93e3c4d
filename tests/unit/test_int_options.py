#!/usr/bin/env python3
"""Integer options are parsed one way (docs/decisions.md §28): decimal digits only, in range.
`dispatch --max-changes` (strtoull) took '+5' and ' 5' as 5; `serve --max-changes` refused
them. Both refuse them now, exit 64."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import Server, batch, case, eq, main, run_gateway, src, tmpdir  # noqa: E402


def dispatch_example(*extra):
    return run_gateway("dispatch", "--conf", src("conf", "dispatch.env"), "--shards",
                       src("input", "shards.json"), "--batch", src("input", "changes.json"),
                       *extra)


@case
def dispatch_max_changes():
    for text in ("+5", " 5", "5 ", "18446744073709551621", "-1", "0", "10000001", ""):
        p = dispatch_example("--max-changes", text)
        eq(p.returncode, 64, "dispatch %r exit" % text)
        eq(p.stderr.split("\n")[0], "shardgate: --max-changes must be 1..10000000",
           "dispatch %r message" % text)
    eq(dispatch_example("--max-changes", "10000000").returncode, 0, "dispatch 10000000 exit")


@case
def serve_max_changes_agrees():
    for text in ("+5", " 5"):
        p = run_gateway("serve", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--state-dir",
                        os.path.join(tmpdir(), "st"), "--max-changes", text)
        eq(p.returncode, 64, "serve %r exit" % text)
        eq(p.stderr.split("\n")[0],
           "shardgate: --max-changes must be an integer 1..10000000, not \"%s\"" % text,
           "serve %r message" % text)


@case
def serve_scrub_rate_range():
    for text in ("-1", "1099511627777", "8M", ""):
        p = run_gateway("serve", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--state-dir",
                        os.path.join(tmpdir(), "st"), "--scrub-rate", text)
        eq((p.returncode, p.stderr.split("\n")[0]),
           (64, "shardgate: --scrub-rate must be an integer 0..1099511627776, not \"%s\"" % text),
           "serve --scrub-rate %r" % text)



@case
def serve_max_changes_is_the_limit():
    """--max-changes 3 is honoured: a batch of 4 is refused naming the limit, one of 3 is
    acknowledged (the default, 100000, would take both)."""
    with Server(args=["--max-changes", "3"]) as s:
        r = s.post(batch("four", n=4))
        eq((r.status, r.json()["error"]), (400, {
            "code": "invalid_batch", "message": "changes: more than 3 array elements in the "
            "document: a batch holds at most 3 changes of 3 fields",
            "path": "changes"}), "4 changes over --max-changes 3")
        eq(s.post(batch("three", n=3)).status, 200, "3 changes")

if __name__ == "__main__":
    sys.exit(main(sys.argv))
