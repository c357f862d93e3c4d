#!/usr/bin/env python3
"""Runs one data-driven dispatch case: tests/cases/<suite>/<name>/ or tests/json/<suite>/<name>/.

A case folder holds the inputs that differ from the worked example (dispatch.env, shards.json
or batch.json) and the expected exit code (`exit`). An invalid case holds the exact expected
stderr (`stderr`, with @FILE@ standing for the input's path) and nothing may be printed on
stdout. A valid case holds the exact expected receipt bytes (`stdout`, docs/contract.md §5);
its stderr must be empty unless a `stderr` file says otherwise, and client/probe.py, the
independent reimplementation, must find the expected receipt right (RESULT: OK).
"""
import os
import subprocess
import sys


def case_files(root, case):
    """The three inputs (worked example unless the case overrides one) and the case's subject."""
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
    return files, subject


def read_expected(case, name, default):
    path = os.path.join(case, name)
    if not os.path.exists(path):
        return default
    with open(path, "rb") as f:
        return f.read()


def probe_agrees(root, files, receipt_path):
    """client/probe.py recomputes the expected receipt from the inputs (docs/contract.md §5)."""
    cmd = [sys.executable, os.path.join(root, "client", "probe.py"), "--conf", files["conf"],
           "--shards", files["shards"], "--receipt", receipt_path, "--batch", files["batch"]]
    proc = subprocess.run(cmd, capture_output=True, timeout=60)
    if proc.returncode == 0:
        return []
    return ["probe.py: expected exit 0 actual %d:\n%s" % (proc.returncode, proc.stdout.decode())]


def run_case(shardgate, root, case):
    files, subject = case_files(root, case)
    cmd = [shardgate, "dispatch", "--conf", files["conf"], "--shards", files["shards"],
           "--batch", files["batch"]]
    proc = subprocess.run(cmd, capture_output=True, timeout=30)
    want_out = read_expected(case, "stdout", b"")
    want_err = read_expected(case, "stderr", b"").decode("utf-8").replace("@FILE@", subject or "")
    want_exit = int(read_expected(case, "exit", b""))
    failures = []
    if proc.returncode != want_exit:
        failures.append("exit: expected %d actual %d" % (want_exit, proc.returncode))
    if proc.stderr.decode("utf-8", "replace") != want_err:
        failures.append("stderr: expected %r actual %r" % (want_err, proc.stderr.decode()))
    if proc.stdout != want_out:
        failures.append("stdout: expected %r\n  actual %r" % (want_out[:400], proc.stdout[:400]))
    if want_out:
        failures += probe_agrees(root, files, os.path.join(case, "stdout"))
    return failures


def main():
    failures = run_case(sys.argv[1], sys.argv[2], sys.argv[3])
    for f in failures:
        print(f)
    print("1 passed, 0 failed" if not failures else "0 passed, 1 failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
