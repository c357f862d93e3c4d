#!/usr/bin/env python3
"""post_batch.py against scripted stdlib HTTP servers on 127.0.0.1, and drop_proxy.py."""

import http.server
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import case, eq, ok, run, src, tmpdir, write, main  # noqa: E402

RECEIPT = b'{"receipt_version":1,"batch_id":"sample-0001","ok":true}\n'


class ScriptedServer:
    """Answers the n-th request with script[n] (the last entry repeats): an HTTP status,
    or "drop" to read the request and close the connection without an answer."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers),
                                           "body": body, "time": time.monotonic()})
                    n = len(outer.requests) - 1
                    action = outer.script[min(n, len(outer.script) - 1)]
                if action == "drop":
                    self.close_connection = True
                    return
                action, extra = action if isinstance(action, tuple) else (action, {})
                payload = RECEIPT if action == 200 else (
                    b'{"error":{"code":"e%d","message":"scripted","path":"$"}}\n' % action)
                self.send_response(action)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self):
        return "http://127.0.0.1:%d/v1/batches" % self.port


def batch_path():
    return src("input", "changes.json")


def batch_bytes():
    with open(batch_path(), "rb") as f:
        return f.read()


def post(url, *extra, timeout=60):
    return run([sys.executable, src("client", "post_batch.py"), "--url", url, "--batch",
                batch_path(), "--backoff-base", "0.01", "--timeout", "5"] + list(extra),
               timeout=timeout)


def assert_same_request_each_time(server, count, what):
    eq(len(server.requests), count, what + ": number of requests")
    for i, r in enumerate(server.requests):
        eq(r["path"], "/v1/batches", what + ": path of request %d" % i)
        eq(r["headers"].get("Idempotency-Key"), "sample-0001", what + ": key of request %d" % i)
        eq(r["headers"].get("Content-Type"), "application/json", what + ": type %d" % i)
        eq(r["body"], batch_bytes(), what + ": body of request %d" % i)


def assert_success(res, what):
    eq(res.returncode, 0, what + ": exit (stderr %r)" % res.stderr)
    eq(res.stdout, RECEIPT.decode(), what + ": receipt on stdout")


@case("post_batch_retry")
def retry_503_then_200():
    with ScriptedServer([503, 200]) as server:
        res = post(server.url)
    assert_success(res, "503 then 200")
    assert_same_request_each_time(server, 2, "503 then 200")
    ok("attempt 1/3: HTTP 503" in res.stderr, res.stderr)
    ok("Authorization" not in server.requests[0]["headers"], "no token, no Authorization")


@case("post_batch_retry")
def retry_409_then_200():
    with ScriptedServer([409, 200]) as server:
        res = post(server.url)
    assert_success(res, "409 then 200")
    assert_same_request_each_time(server, 2, "409 then 200")


@case("post_batch_no_retry_4xx")
def no_retry_on_400():
    with ScriptedServer([400, 200]) as server:
        res = post(server.url)
    eq(res.returncode, 2, "400: exit")
    eq(res.stdout, "", "400: stdout")
    ok('{"error":{"code":"e400"' in res.stderr, "400: body on stderr: %r" % res.stderr)
    assert_same_request_each_time(server, 1, "400")


@case("post_batch_no_retry_4xx")
def no_retry_on_other_4xx():
    for status in (401, 404, 413, 415, 422):
        with ScriptedServer([status, 200]) as server:
            res = post(server.url)
        eq(res.returncode, 2, "%d: exit" % status)
        assert_same_request_each_time(server, 1, str(status))


@case("post_batch_retry")
def retry_dropped_connection_then_200():
    with ScriptedServer(["drop", 200]) as server:
        res = post(server.url)
    assert_success(res, "drop then 200")
    assert_same_request_each_time(server, 2, "drop then 200")
    ok("attempt 1/3: connection failed" in res.stderr, res.stderr)


@case("post_batch_exhausted")
def always_500_gives_up_after_3():
    with ScriptedServer([500]) as server:
        res = post(server.url)
    eq(res.returncode, 1, "always 500: exit")
    eq(res.stdout, "", "always 500: stdout")
    assert_same_request_each_time(server, 3, "always 500")
    ok("attempt 3/3: HTTP 500" in res.stderr and "giving up" in res.stderr, res.stderr)


@case("post_batch_exhausted")
def attempts_option():
    with ScriptedServer([502]) as server:
        res = post(server.url, "--attempts", "5")
    eq(res.returncode, 1, "exit")
    assert_same_request_each_time(server, 5, "--attempts 5")
    with ScriptedServer([502]) as server:
        res = post(server.url, "--attempts", "1")
    eq(res.returncode, 1, "exit")
    assert_same_request_each_time(server, 1, "--attempts 1")


@case("post_batch_exhausted")
def backoff_grows_exponentially():
    """base 0.2: waits are in [0.1, 0.2] then [0.2, 0.4] (jitter keeps at least half)."""
    with ScriptedServer([503]) as server:
        res = post(server.url, "--backoff-base", "0.2")
    eq(res.returncode, 1, "exit")
    t = [r["time"] for r in server.requests]
    eq(len(t), 3, "attempts")
    ok(0.1 <= t[1] - t[0] < 1.5, "first wait %.3f" % (t[1] - t[0]))
    ok(0.2 <= t[2] - t[1] < 1.5, "second wait %.3f" % (t[2] - t[1]))


@case("post_batch_retry")
def retry_after_is_honoured():
    with ScriptedServer([(503, {"Retry-After": "1"}), 200]) as server:
        res = post(server.url, "--backoff-max", "5")
    assert_success(res, "Retry-After")
    assert_same_request_each_time(server, 2, "Retry-After")
    wait = server.requests[1]["time"] - server.requests[0]["time"]
    ok(1.0 <= wait < 3.0, "waited %.3f for Retry-After: 1" % wait)


@case("post_batch_exhausted")
def connection_refused_gives_up():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    res = post("http://127.0.0.1:%d/v1/batches" % port)
    eq(res.returncode, 1, "refused: exit")
    eq(res.stderr.count("connection failed"), 3, "refused: 3 attempts in %r" % res.stderr)


@case("post_batch_usage")
def bearer_token():
    token = write(os.path.join(tmpdir(), "token"), "s3cret-token\n")
    with ScriptedServer([200]) as server:
        res = post(server.url, "--token-file", token)
    assert_success(res, "token")
    eq(server.requests[0]["headers"].get("Authorization"), "Bearer s3cret-token", "header")


@case("post_batch_usage")
def usage_errors():
    script = src("client", "post_batch.py")
    res = run([sys.executable, script, "--help"])
    eq(res.returncode, 0, "--help")
    for needle in ("Idempotency-Key", "409", "64", "Exit codes"):
        ok(needle in res.stdout, "--help mentions %s" % needle)
    eq(run([sys.executable, script, "--batch", batch_path()]).returncode, 64, "no --url")
    eq(post("http://127.0.0.1:1/v1/batches", "--attempts", "0").returncode, 64, "attempts 0")
    eq(post("ftp://127.0.0.1/x").returncode, 64, "scheme")
    tmp = tmpdir()
    no_id = write(os.path.join(tmp, "b.json"), '{"changes": []}')
    res = run([sys.executable, script, "--url", "http://127.0.0.1:1/", "--batch", no_id])
    eq(res.returncode, 64, "batch without batch_id")
    missing = os.path.join(tmp, "missing-token")
    eq(post("http://127.0.0.1:1/", "--token-file", missing).returncode, 64, "token file")


def start_proxy(upstream_port, drop=1):
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__),
                                                          "drop_proxy.py"),
                             "--upstream", "127.0.0.1:%d" % upstream_port, "--drop", str(drop)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    return proc, port


def stop(proc):
    proc.terminate()
    try:
        return proc.communicate(timeout=10)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[1]


@case("drop_proxy")
def drop_proxy_loses_the_first_answer():
    """The upstream handles the first request, the client never hears; the retry goes
    through the proxy in full and gets the answer."""
    with ScriptedServer([200]) as server:
        proc, port = start_proxy(server.port)
        try:
            res = post("http://127.0.0.1:%d/v1/batches" % port)
        finally:
            log = stop(proc)
    assert_success(res, "through the proxy")
    assert_same_request_each_time(server, 2, "through the proxy")
    ok("attempt 1/3: connection failed" in res.stderr, res.stderr)
    ok("connection 1: forwarded" in log and "dropped the" in log, log)
    ok("connection 2: relayed" in log, log)


@case("drop_proxy")
def drop_proxy_relays_after_drops():
    with ScriptedServer([200]) as server:
        proc, port = start_proxy(server.port, drop=0)
        try:
            res = post("http://127.0.0.1:%d/v1/batches" % port)
        finally:
            stop(proc)
    assert_success(res, "no drop")
    assert_same_request_each_time(server, 1, "no drop")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("source",)))
