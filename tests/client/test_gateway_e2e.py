#!/usr/bin/env python3
"""The outside tools against the real `shardgate serve` on loopback.

A lost answer (drop_proxy.py) retried by post_batch.py must give the worked example's
receipt byte for byte, recorded once in the journal; the probe and the health check
must agree with it. Needs SHARDGATE_BUILD_DIR (set by ctest) with the built programs.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import Skip, case, eq, ok, run, src, tmpdir, write, main  # noqa: E402

STARTUP_TIMEOUT = 20


def program(rel):
    build = os.environ.get("SHARDGATE_BUILD_DIR")
    if not build:
        raise Skip("SHARDGATE_BUILD_DIR not set (run through ctest)")
    path = os.path.join(build, rel)
    if not os.access(path, os.X_OK):
        raise Skip("%s is not built" % path)
    return path


class Process:
    """A child started by the test, stopped by its own handle on exit."""

    def __init__(self, args):
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.lines = queue.Queue()
        self.log = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.log.append(line)
            self.lines.put(line)

    def wait_for(self, predicate):
        while True:
            try:
                line = self.lines.get(timeout=STARTUP_TIMEOUT)
            except queue.Empty:
                raise AssertionError("no expected line on stderr: %r" % "".join(self.log))
            if predicate(line):
                return line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class Gateway(Process):
    def __init__(self, state_dir, *extra):
        super().__init__([program("gateway/shardgate"), "serve",
                          "--conf", src("conf", "dispatch.env"),
                          "--shards", src("input", "shards.json"),
                          "--state-dir", state_dir, "--listen", "127.0.0.1:0"] + list(extra))
        line = self.wait_for(lambda l: '"listening"' in l)
        self.port = int(json.loads(line)["address"].rsplit(":", 1)[1])
        self.url = "http://127.0.0.1:%d/v1/batches" % self.port

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def golden_bytes():
    with open(src("tests", "golden", "sample-0001.receipt.v2.json"), "rb") as f:
        return f.read()


def post(url, batch, *extra):
    return subprocess.run([sys.executable, src("client", "post_batch.py"), "--url", url,
                           "--batch", batch, "--backoff-base", "0.05", "--timeout", "10"]
                          + list(extra), capture_output=True, timeout=120)


def journal_receipts(state_dir):
    with open(os.path.join(state_dir, "journal.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return [r for r in records if r["type"] == "receipt"]


def probe(receipt_path):
    return run([sys.executable, src("client", "probe.py"), "--conf", src("conf", "dispatch.env"),
                "--shards", src("input", "shards.json"), "--receipt", receipt_path,
                "--batch", src("input", "changes.json")])


@case("gateway_e2e")
def lost_answer_is_retried_into_one_receipt():
    state = tmpdir()
    with Gateway(state) as gw:
        proxy = Process([sys.executable, os.path.join(os.path.dirname(__file__),
                                                      "drop_proxy.py"),
                         "--upstream", "127.0.0.1:%d" % gw.port])
        try:
            port = int(proxy.proc.stdout.readline())
            res = post("http://127.0.0.1:%d/v1/batches" % port, src("input", "changes.json"))
        finally:
            proxy.stop()
        eq(res.returncode, 0, "post through the dropping proxy (stderr %r)" % res.stderr)
        ok(b"attempt 1/3: connection failed" in res.stderr, res.stderr)
        ok(any("connection 1: forwarded" in l for l in proxy.log), "".join(proxy.log))
        eq(res.stdout, golden_bytes(), "the retry's answer is the golden receipt")
        with urllib.request.urlopen(gw.url + "/sample-0001", timeout=10) as r:
            eq(r.read(), golden_bytes(), "GET /v1/batches/sample-0001")
        again = post(gw.url, src("input", "changes.json"))
        eq((again.returncode, again.stdout), (0, golden_bytes()), "a later replay")
    receipts = journal_receipts(state)
    eq([r["seq"] for r in receipts], [1], "one receipt in the journal, not one per attempt")
    path = write(os.path.join(state, "answer.json"), res.stdout, "wb")
    res = probe(path)
    eq((res.returncode, res.stdout), (0, "RESULT: OK\n"), "probe on the answer")
    health = program("health/shardgate-health")
    res = run([health, "check", "--conf", src("conf", "dispatch.env"), "--shards",
               src("input", "shards.json"), "--journal", os.path.join(state, "journal.jsonl")])
    eq(res.returncode, 0, "shardgate-health check on the journal: %s %s"
       % (res.stdout, res.stderr))
    eq(json.loads(res.stdout)["status"], "pass", "health status")


@case("gateway_e2e")
def gateway_4xx_are_not_retried():
    state = tmpdir()
    tmp = tmpdir()
    with open(src("input", "changes.json")) as f:
        batch = json.load(f)
    with Gateway(state) as gw:
        eq(post(gw.url, src("input", "changes.json")).returncode, 0, "first post")
        batch["changes"][0]["size"] = 5
        reused = write(os.path.join(tmp, "reused.json"), json.dumps(batch))
        res = post(gw.url, reused)
        eq(res.returncode, 2, "same batch_id, different content: exit")
        ok(b"batch_id_reused" in res.stderr, res.stderr)
        eq(res.stderr.count(b"HTTP 422"), 1, "one attempt: %r" % res.stderr)
        batch["batch_id"], batch["changes"][0]["size"] = "bad-1", -1
        bad = write(os.path.join(tmp, "bad.json"), json.dumps(batch))
        res = post(gw.url, bad)
        eq(res.returncode, 2, "invalid batch: exit")
        ok(b"changes[0].size" in res.stderr, res.stderr)
    eq(len(journal_receipts(state)), 1, "rejected batches change nothing")


@case("gateway_e2e")
def bearer_token_reaches_the_gateway():
    state = tmpdir()
    token = write(os.path.join(tmpdir(), "token"), "e2e-token-123\n")
    with Gateway(state, "--token-file", token) as gw:
        res = post(gw.url, src("input", "changes.json"))
        eq(res.returncode, 2, "no token: exit")
        ok(b"HTTP 401" in res.stderr, res.stderr)
        res = post(gw.url, src("input", "changes.json"), "--token-file", token)
        eq((res.returncode, res.stdout), (0, golden_bytes()), "with the token")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("source",)))
