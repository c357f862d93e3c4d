"""Harness for the HTTP tests: the real `shardgate serve` on an ephemeral 127.0.0.1 port.

Each script runs as `python3 SCRIPT SHARDGATE_BINARY SOURCE_DIR [CASE...]`; with no case names
it runs them all. A server is always killed when its `with` block ends, pass or fail, and every
wait has a deadline, so a hang is a failure rather than a stuck ctest.
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

CASES = {}
BIN = None
SRC = None
START_TIMEOUT = 30
REQUEST_TIMEOUT = 60


class Failure(Exception):
    pass


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


TMPDIRS = []


def tmpdir():
    """A temp dir, removed when the script passes (kept for a look when it fails)."""
    d = tempfile.mkdtemp(prefix="shardgate-http-test-")
    TMPDIRS.append(d)
    return d


def write(path, data, mode="w"):
    with open(path, mode) as f:
        f.write(data)
    return path


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def batch(batch_id, n=3, size=1, prefix=None):
    """A valid batch of n changes with distinct keys."""
    p = prefix or batch_id
    return {"batch_id": batch_id,
            "changes": [{"id": "c%d" % i, "key": "%s:%d" % (p, i), "size": size + i % 5}
                        for i in range(n)]}


def journal_lines(state_dir):
    return read(os.path.join(state_dir, "journal.jsonl")).split(b"\n")[:-1]


def journal_receipts(state_dir):
    return [json.loads(l) for l in journal_lines(state_dir) if b'"type":"receipt"' in l[:20]]


def totals_from_journal(state_dir):
    """Sums every receipt's per-shard load and received: what /v1/shards must report."""
    totals = {}
    for rec in journal_receipts(state_dir):
        for sid, s in rec["receipt"]["shards"].items():
            t = totals.setdefault(sid, [0, 0])
            t[0] += s["load"]
            t[1] += s["received"]
    return totals


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def error(self):
        """(code, path) of an error body, after checking its shape."""
        doc = self.json()
        ok(set(doc) == {"error"}, "error body has only 'error': %r" % doc)
        ok(set(doc["error"]) == {"code", "message", "path"}, "error fields: %r" % doc)
        return doc["error"]["code"], doc["error"]["path"]

    def __repr__(self):
        return "Response(%d, %r)" % (self.status, self.body[:300])


class Server:
    """`shardgate serve` in a temp state dir; use as a context manager."""

    def __init__(self, state_dir=None, conf=None, shards=None, args=(), env=None,
                 preexec_fn=None):
        self.state_dir = state_dir or tmpdir()
        self.conf = conf or src("conf", "dispatch.env")
        self.shards = shards or src("input", "shards.json")
        self.args = list(args)
        self.env = dict(os.environ, **(env or {}))
        self.preexec_fn = preexec_fn
        self.proc = None
        self.port = None
        self.lines = []
        self._reader = None

    def command(self):
        return [BIN, "serve", "--conf", self.conf, "--shards", self.shards,
                "--state-dir", self.state_dir, "--listen", "127.0.0.1:0"] + self.args

    def _read_stderr(self):
        for raw in self.proc.stderr:
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def start(self):
        self.lines = []
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=self.env, preexec_fn=self.preexec_fn)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        deadline = time.time() + START_TIMEOUT
        while time.time() < deadline:
            for line in list(self.lines):
                if line.startswith('{"event":"listening"'):
                    self.port = int(json.loads(line)["address"].rsplit(":", 1)[1])
                    return self
            if self.proc.poll() is not None:
                self._reader.join(5)
                raise Failure("server exited %d before listening:\n%s"
                              % (self.proc.returncode, "\n".join(self.lines)))
            time.sleep(0.02)
        raise Failure("server did not listen within %ds:\n%s"
                      % (START_TIMEOUT, "\n".join(self.lines)))

    def events(self, name):
        prefix = '{"event":"%s"' % name
        return [json.loads(l) for l in list(self.lines) if l.startswith(prefix)]

    def request_log(self):
        return [json.loads(l) for l in list(self.lines) if l.startswith('{"time"')]

    def connect(self, timeout=REQUEST_TIMEOUT):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        own = conn is None
        conn = conn or self.connect()
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            if own:
                conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, doc, headers=None, content_type="application/json", conn=None):
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        h = {"Content-Type": content_type} if content_type else {}
        h.update(headers or {})
        return self.request("POST", "/v1/batches", body=body, headers=h, conn=conn)

    def shard_totals(self):
        r = self.get("/v1/shards")
        eq(r.status, 200, "GET /v1/shards")
        return {s["id"]: [s["load_total"], s["received_total"]] for s in r.json()["shards"]}

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Signals the server and returns its exit code."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise Failure("server did not exit within %ds after signal %d" % (timeout, sig))
        self._reader.join(5)
        return rc

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self._reader:
            self._reader.join(5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()
        return False


def run_server(args, timeout=30, **kw):
    """Runs `shardgate ARGS` to completion (for servers expected to refuse to start)."""
    return subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout, **kw)


def main(argv):
    global BIN, SRC
    if len(argv) < 3:
        print("usage: %s SHARDGATE_BINARY SOURCE_DIR [CASE...]" % argv[0], file=sys.stderr)
        return 64
    BIN, SRC = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    names = argv[3:] or list(CASES)
    failed = 0
    for name in names:
        if name not in CASES:
            print("unknown case %s" % name, file=sys.stderr)
            return 64
        t0 = time.time()
        try:
            CASES[name]()
            print("PASS %s (%.1fs)" % (name, time.time() - t0))
        except Exception:
            failed += 1
            print("FAIL %s (%.1fs)" % (name, time.time() - t0))
            traceback.print_exc()
    print("%d passed, %d failed" % (len(names) - failed, failed))
    if failed:
        print("state kept in: %s" % " ".join(TMPDIRS))
    else:
        for d in TMPDIRS:
            shutil.rmtree(d, ignore_errors=True)
    return 1 if failed else 0
