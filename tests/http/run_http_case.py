#!/usr/bin/env python3
"""Runs one HTTP case folder, tests/http/<name>/, against a real `shardgate serve` on
127.0.0.1 (docs/api.md): `python3 run_http_case.py SHARDGATE_BINARY SOURCE_DIR CASE_DIR`.

A folder holds the request and what must come back:
  request     `METHOD PATH` on the first line, then request headers, one `Name: value` a line
  body        the request body, byte for byte (no file: no body)
  args        extra `shardgate serve` arguments, separated by blanks (optional)
  status      the expected HTTP status
  error.json  the expected error: {"code", "path"[, "message"]} (docs/api.md error bodies)
  headers     response headers that must be present with these exact values (optional)
  response    the exact response body (optional)
Whatever the case, a request that is not answered 200 journals nothing (docs/contract.md §4).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, case, eq, journal_lines  # noqa: E402

CASE_DIR = None


def case_file(name, mode="rb"):
    path = os.path.join(CASE_DIR, name)
    return sgtest.read(path, mode) if os.path.exists(path) else None


def parse_request():
    lines = case_file("request", "r").splitlines()
    method, path = lines[0].split(" ", 1)
    headers = dict(line.split(": ", 1) for line in lines[1:] if line)
    return method, path, headers


def check_answer(r):
    eq(r.status, int(case_file("status", "r")), "status")
    expected_error = case_file("error.json", "r")
    if expected_error is not None:
        want = json.loads(expected_error)
        code, path = r.error()
        eq(code, want["code"], "error code")
        if "path" in want:
            eq(path, want["path"], "error path")
        if "message" in want:
            eq(r.json()["error"]["message"], want["message"], "error message")
    for line in (case_file("headers", "r") or "").splitlines():
        name, value = line.split(": ", 1)
        eq(r.headers.get(name.lower()), value, "response header " + name)
    expected_body = case_file("response")
    if expected_body is not None:
        eq(r.body, expected_body, "response body")


@case
def http_case():
    method, path, headers = parse_request()
    args = (case_file("args", "r") or "").split()
    with Server(args=args) as s:
        r = s.request(method, path, body=case_file("body"), headers=headers)
        check_answer(r)
        lines = len(journal_lines(s.state_dir))
        eq(lines, 2 if r.status == 200 and method == "POST" else 1, "journal lines (epoch "
           "and one receipt per accepted batch)")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: %s SHARDGATE_BINARY SOURCE_DIR CASE_DIR" % sys.argv[0], file=sys.stderr)
        sys.exit(64)
    CASE_DIR = os.path.abspath(sys.argv[3])
    sys.exit(sgtest.main(sys.argv[:3]))
