"""Tiny harness shared by the client tests: named cases, asserts that show both sides.

Each test script is run by ctest as `python3 SCRIPT SOURCE_DIR [CASE...]`; with no case
names it runs them all. A failed assert raises, the script prints it and exits 1; a case
that cannot run here raises Skip, and the script exits 77 (ctest SKIP_RETURN_CODE).
"""

import os
import subprocess
import sys
import tempfile
import traceback

CASES = {}
SRC = None


class Failure(Exception):
    pass


class Skip(Exception):
    """A case that cannot run here (a tool is missing); the script exits 77 for ctest."""


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def eq(actual, expected, what):
    if actual != expected:
        raise Failure("%s:\n  expected: %r\n  actual:   %r" % (what, expected, actual))


def ok(cond, what):
    if not cond:
        raise Failure(what)


def src(*parts):
    return os.path.join(SRC, *parts)


def run(args, timeout=60, **kw):
    """Runs a command, capturing text output; a hang is a failure, not a stuck ctest."""
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def tmpdir():
    return tempfile.mkdtemp(prefix="shardgate-client-test-")


def write(path, data, mode="w"):
    with open(path, mode) as f:
        f.write(data)
    return path


def main(argv):
    global SRC
    if len(argv) < 2:
        print("usage: %s SOURCE_DIR [CASE...]" % argv[0], file=sys.stderr)
        return 64
    SRC = os.path.abspath(argv[1])
    names = argv[2:] or list(CASES)
    failed = skipped = 0
    for name in names:
        if name not in CASES:
            print("unknown case %s (have: %s)" % (name, ", ".join(CASES)), file=sys.stderr)
            return 64
        try:
            CASES[name]()
            print("ok   %s" % name)
        except Skip as e:
            skipped += 1
            print("SKIP %s: %s" % (name, e))
        except Exception as e:  # report every case, then fail the script once
            failed += 1
            print("FAIL %s: %s" % (name, e))
            if not isinstance(e, Failure):
                traceback.print_exc()
    print("%d case(s), %d failed, %d skipped" % (len(names), failed, skipped))
    if failed:
        return 1
    return 77 if skipped else 0
