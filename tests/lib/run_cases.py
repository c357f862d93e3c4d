#!/usr/bin/env python3
"""Runs the data cases in one process: `python3 run_cases.py SHARDGATE_BINARY SOURCE_DIR DIR...`.

Each DIR is a suite (every sub-folder that is a case runs, in name order) or one case folder.
Every case prints `PASS NAME` or `FAIL NAME` with what differed, and the last line is
`N passed, N failed`, so one ctest per suite still names each case that failed. A case is
named as its own ctest used to be: case/<suite>/<name> (tests/cases), json/<suite>/<name>
(tests/json), http_case/<name> (tests/http).

A dispatch case (tests/cases/<suite>/<name>/, tests/json/<suite>/<name>/; it has `exit`) holds
the inputs that differ from the worked example (dispatch.env, shards.json or batch.json) and
the expected exit code. An invalid case holds the exact expected stderr (`stderr`, with @FILE@
standing for the input's path) and nothing may be printed on stdout. A valid case holds the
exact expected receipt bytes (`stdout`, docs/contract.md §5); its stderr must be empty unless
a `stderr` file says otherwise, and client/probe.py, the independent reimplementation, must
find the expected receipt right (RESULT: OK). `shardgate dispatch` runs once per case (the CLI
reads its three files and exits); probe.py runs in this process.

An HTTP case (tests/http/<name>/; it has `status`) holds the request and what must come back:
  request     `METHOD PATH` on the first line, then request headers, one `Name: value` a line
  body        the request body, byte for byte (no file: no body)
  args        extra `shardgate serve` arguments, separated by blanks (optional)
  status      the expected HTTP status
  error.json  the expected error: {"code", "path"[, "message"]} (docs/api.md error bodies)
  headers     response headers that must be present with these exact values (optional)
  response    the exact response body (optional)
Whatever the case, a request that is not answered 200 journals nothing (docs/contract.md §4).
Each HTTP case starts its own `shardgate serve` on a fresh state dir on 127.0.0.1, since it
asserts that dir's whole journal.
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sgtest  # noqa: E402
from sgtest import Failure, Server, eq, journal_lines  # noqa: E402

PROBE = None  # shardgate.probe of client/, loaded once




def read_expected(case, name, default=None):
    path = os.path.join(case, name)
    if not os.path.exists(path):
        return default
    with open(path, "rb") as f:
        return f.read()


# --- dispatch cases ------------------------------------------------------------------------

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


def probe_agrees(files, receipt_path):
    """client/probe.py recomputes the expected receipt from the inputs (docs/contract.md §5)."""
    argv = ["--conf", files["conf"], "--shards", files["shards"], "--receipt", receipt_path,
            "--batch", files["batch"]]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = PROBE.main(argv)
        except SystemExit as e:
            code = e.code
    if code == 0:
        return []
    return ["probe.py: expected exit 0 actual %s:\n%s" % (code, out.getvalue())]


def dispatch_case(root, case):
    files, subject = case_files(root, case)
    cmd = [sgtest.BIN, "dispatch", "--conf", files["conf"], "--shards", files["shards"],
           "--batch", files["batch"]]
    proc = subprocess.run(cmd, capture_output=True, timeout=30)
    want_out = read_expected(case, "stdout", b"")
    want_err = read_expected(case, "stderr", b"").decode("utf-8").replace("@FILE@", subject or "")
    want_exit = int(read_expected(case, "exit"))
    failures = []
    if proc.returncode != want_exit:
        failures.append("exit: expected %d actual %d" % (want_exit, proc.returncode))
    if proc.stderr.decode("utf-8", "replace") != want_err:
        failures.append("stderr: expected %r actual %r" % (want_err, proc.stderr.decode()))
    if proc.stdout != want_out:
        failures.append("stdout: expected %r\n  actual %r" % (want_out[:400], proc.stdout[:400]))
    if want_out:
        failures += probe_agrees(files, os.path.join(case, "stdout"))
    return failures


# --- HTTP cases ----------------------------------------------------------------------------

def text(case, name):
    data = read_expected(case, name)
    return None if data is None else data.decode("utf-8")


def parse_request(case):
    lines = text(case, "request").splitlines()
    method, path = lines[0].split(" ", 1)
    headers = dict(line.split(": ", 1) for line in lines[1:] if line)
    return method, path, headers


def check_answer(case, r):
    eq(r.status, int(text(case, "status")), "status")
    expected_error = text(case, "error.json")
    if expected_error is not None:
        want = json.loads(expected_error)
        code, path = r.error()
        eq(code, want["code"], "error code")
        if "path" in want:
            eq(path, want["path"], "error path")
        if "message" in want:
            eq(r.json()["error"]["message"], want["message"], "error message")
    for line in (text(case, "headers") or "").splitlines():
        name, value = line.split(": ", 1)
        eq(r.headers.get(name.lower()), value, "response header " + name)
    expected_body = read_expected(case, "response")
    if expected_body is not None:
        eq(r.body, expected_body, "response body")


def http_case(root, case):
    del root  # the server's inputs are the worked example (sgtest.SRC)
    method, path, headers = parse_request(case)
    args = (text(case, "args") or "").split()
    try:
        with Server(args=args) as s:
            r = s.request(method, path, body=read_expected(case, "body"), headers=headers)
            check_answer(case, r)
            lines = len(journal_lines(s.state_dir))
            eq(lines, 2 if r.status == 200 and method == "POST" else 1, "journal lines (epoch "
               "and one receipt per accepted batch)")
    except Failure as e:
        return [str(e)]
    return []


# --- the runner ----------------------------------------------------------------------------

def case_name(root, case):
    rel = os.path.relpath(case, os.path.join(root, "tests")).split(os.sep)
    prefix = {"cases": "case", "json": "json", "http": "http_case"}.get(rel[0], rel[0])
    return "/".join([prefix] + rel[1:])


def case_runner(case):
    if os.path.exists(os.path.join(case, "exit")):
        return dispatch_case
    if os.path.exists(os.path.join(case, "status")):
        return http_case
    return None


def cases_in(folder):
    """A case folder alone, or every folder directly below a suite, in name order: a folder
    there that is no case (neither `exit` nor `status`) is reported as a FAIL, never skipped."""
    if case_runner(folder):
        return [folder]
    subs = (os.path.join(folder, n) for n in sorted(os.listdir(folder)))
    return [d for d in subs if os.path.isdir(d)]


def judge(root, case):
    """The case's failures; an error raised while judging it (a bad expected file) is one."""
    runner = case_runner(case)
    if runner is None:
        return ["cannot judge: the folder holds neither `exit` (a dispatch case) nor `status` "
                "(an HTTP case)"]
    try:
        return runner(root, case)
    except Exception as e:  # noqa: BLE001 - any error is this case's FAIL, the others still run
        return ["error while judging the case: %s: %s" % (type(e).__name__, e)]


def run_one(root, case):
    name = case_name(root, case)
    t0 = time.time()
    failures = judge(root, case)
    print("%s %s (%.2fs)" % ("FAIL" if failures else "PASS", name, time.time() - t0), flush=True)
    for f in failures:
        print("  " + f.replace("\n", "\n  "), flush=True)
    return not failures


def main(argv):
    global PROBE
    if len(argv) < 4:
        print("usage: %s SHARDGATE_BINARY SOURCE_DIR DIR..." % argv[0], file=sys.stderr)
        return 64
    sgtest.take_operands(argv[1:3], ("shardgate", "source"))
    root = sgtest.SRC
    cases = [c for d in argv[3:] for c in cases_in(os.path.abspath(d))]
    if not cases:
        print("run_cases: no case folder in %s" % " ".join(argv[3:]), file=sys.stderr)
        return 64
    PROBE = sgtest.client_package().probe
    results = [run_one(root, c) for c in cases]
    passed = results.count(True)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    sgtest.cleanup(passed == len(results))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
