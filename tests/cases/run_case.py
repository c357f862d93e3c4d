#!/usr/bin/env python3
"""Runs one data-driven bad-input case: tests/cases/<suite>/<name>/.

A case folder holds the input that differs from the worked example (dispatch.env, shards.json
or batch.json), the exact expected stderr (`stderr`, with @FILE@ standing for the input's path)
and the expected exit code (`exit`). Nothing may be printed on stdout.
"""
import os
import subprocess
import sys


def main():
    shardgate, root, case = sys.argv[1], sys.argv[2], sys.argv[3]
    files = {
        "conf": os.path.join(root, "conf", "dispatch.env"),
        "shards": os.path.join(root, "input", "shards.json"),
        "batch": os.path.join(root, "input", "changes.json"),
    }
    names = {"dispatch.env": "conf", "shards.json": "shards", "batch.json": "batch"}
    subject = None
    for name, role in names.items():
        path = os.path.join(case, name)
        if os.path.exists(path):
            files[role] = subject = path
    if os.path.exists(os.path.join(case, "missing")):
        files["conf"] = subject = os.path.join(case, "no-such-file.env")
    cmd = [shardgate, "dispatch", "--conf", files["conf"], "--shards", files["shards"],
           "--batch", files["batch"]]
    proc = subprocess.run(cmd, capture_output=True, timeout=30)
    want_err = open(os.path.join(case, "stderr"), encoding="utf-8").read()
    want_err = want_err.replace("@FILE@", subject)
    want_exit = int(open(os.path.join(case, "exit")).read())
    failures = []
    if proc.returncode != want_exit:
        failures.append("exit: expected %d actual %d" % (want_exit, proc.returncode))
    if proc.stderr.decode("utf-8", "replace") != want_err:
        failures.append("stderr: expected %r actual %r" % (want_err, proc.stderr.decode()))
    if proc.stdout:
        failures.append("stdout: expected nothing actual %r" % proc.stdout[:200])
    for f in failures:
        print(f)
    print("1 passed, 0 failed" if not failures else "0 passed, 1 failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
