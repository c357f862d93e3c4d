#!/usr/bin/env python3
"""The data-case runner (tests/lib/run_cases.py) reports every case of a suite, whatever one
raises: a case whose expected files cannot be read is that case's FAIL, a folder that is no
case is a FAIL (never skipped), and the cases after them still run and pass.

usage: test_run_cases.py SHARDGATE_BINARY SOURCE_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def main(argv):
    binary, root = argv[1], argv[2]
    suite = tempfile.mkdtemp(prefix="shardgate-runner-")
    try:
        os.mkdir(os.path.join(suite, "a-bad-exit"))
        with open(os.path.join(suite, "a-bad-exit", "exit"), "w") as f:
            f.write("zero\n")
        os.mkdir(os.path.join(suite, "b-no-case"))
        valid = os.path.join(root, "tests", "cases", "valid")
        shutil.copytree(os.path.join(valid, sorted(os.listdir(valid))[0]),
                        os.path.join(suite, "c-good"))
        p = subprocess.run([sys.executable, os.path.join(root, "tests", "lib", "run_cases.py"),
                            binary, root, suite], capture_output=True, text=True, timeout=120)
        lines = [re.sub(r" \([0-9.]+s\)$", "", l) for l in p.stdout.splitlines()]
        want = [
            "FAIL %s/a-bad-exit" % os.path.relpath(suite, os.path.join(root, "tests")),
            "  error while judging the case: ValueError: invalid literal for int() with base 10:"
            " b'zero\\n'",
            "FAIL %s/b-no-case" % os.path.relpath(suite, os.path.join(root, "tests")),
            "  cannot judge: the folder holds neither `exit` (a dispatch case) nor `status` "
            "(an HTTP case)",
            "PASS %s/c-good" % os.path.relpath(suite, os.path.join(root, "tests")),
            "1 passed, 2 failed",
        ]
        if (p.returncode, lines) != (1, want):
            print("expected exit 1 and\n%s\nactual exit %d and\n%s\n%s" % (
                "\n".join(want), p.returncode, "\n".join(lines), p.stderr))
            print("RESULT: BAD")
            return 1
        print("RESULT: OK")
        return 0
    finally:
        shutil.rmtree(suite, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
