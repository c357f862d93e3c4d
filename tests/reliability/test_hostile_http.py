"""Hostile HTTP input against the real gateway: every promise of docs/api.md kept
under bodies built to cost memory, bodies held open, trickled bodies, requests without the
token and token files an operator got slightly wrong.

- every hostile 16 MiB body shape is refused with its exact status, code and JSON path, and
  the gateway's peak RSS grows by at most 3x the body (VmHWM, reset through clear_refs before
  each; the RSS check is skipped under sanitizers, LOAD_RSS_CHECK=0);
- bodies in flight share --max-body-inflight: past it a POST gets 503 body_budget_exhausted
  with Retry-After, a chunked body that crosses it is dropped and never parsed, and once the
  holders are gone a POST succeeds; a body whose buffer cannot grow (out of memory, ASan
  builds only) is answered 500 and its prefix never parsed;
- a body not complete --body-timeout seconds after its headers is cut (trickled or stalled),
  logged as 408; a body sent where none is read is closed past --max-body;
- with --token-file every endpoint but /livez and /readyz (and /metrics with --metrics-open)
  needs the token: a table of path -> status without, with a wrong and with the right token;
- token files with blanks around the token work with the plain token, and blank, multi-line
  or control-character tokens refuse to start (exit 3, exact message); a token file others may
  read logs a warning event.

Every socket has a timeout and every loop a deadline; all on 127.0.0.1.
"""

import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import (Server, batch, case, eq, journal_receipts, ok, read, run_server, src, tmpdir,
                    write)  # noqa: E402

MIB = 1 << 20
BODY = 16 * MIB  # the default --max-body
RSS_CHECK = os.environ.get("LOAD_RSS_CHECK", "1") != "0"


def filled(head, unit, tail, sep=b","):
    """head, `unit` repeated (with `sep` between), blanks, tail: exactly BODY bytes."""
    n = (BODY - len(head) - len(tail) + len(sep)) // (len(unit) + len(sep))
    body = head + (unit + sep) * (n - 1) + unit
    return body + b" " * (BODY - len(body) - len(tail)) + tail


def packed(head, item, tail, room):
    """head, item(0), item(1), ... joined by commas while `room` bytes stay free, tail: BODY bytes."""
    parts, used = [], len(head) + len(tail)
    while used < BODY - room:
        parts.append(item(len(parts)))
        used += len(parts[-1]) + 1
    return (head + b",".join(parts) + tail).ljust(BODY)


def keys_object():
    return packed(b"{", lambda i: b'"k%d":0' % i, b"}", 16)


def many_changes():
    return packed(b'{"batch_id":"b","changes":[', lambda i: b'{"id":"c%d","key":"k","size":1}' % i,
                  b"]}", 64)


# (name, body, status, code, path); one body at a time, built when its turn comes.
def shapes():
    return [
        ("top-level array of numbers", lambda: filled(b"[", b"0", b"]"), 400, "invalid_batch",
         "$"),
        ("deep nesting", lambda: b"[" * BODY, 400, "invalid_json", "$"),
        ("numbers inside a change",
         lambda: filled(b'{"batch_id":"b","changes":[{"id":[', b"0", b"]}]}"), 400,
         "invalid_batch", "changes[0].id"),
        ("string of escapes",
         lambda: filled(KEY_HEAD, b"\\n", b'"}]}', sep=b""), 400, "invalid_batch",
         "changes[0].key"),
        ("string of unicode escapes",
         lambda: filled(KEY_HEAD, b"\\u00e9", b'"}]}', sep=b""), 400, "invalid_batch",
         "changes[0].key"),
        ("many keys in an object", keys_object, 400, "invalid_batch", "k400002"),
        ("more changes than --max-changes", many_changes, 400, "invalid_batch", "changes"),
        ("empty objects in changes",
         lambda: filled(b'{"batch_id":"b","changes":[', b"{}", b"]}"), 400, "invalid_batch",
         "changes"),
    ]


KEY_HEAD = b'{"batch_id":"b","changes":[{"id":"a","size":1,"key":"'


def reset_peak(pid):
    """Resets VmHWM to the current RSS (proc(5), clear_refs "5")."""
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")


@case
def hostile_bodies_stay_bounded():
    with Server() as s:
        eq(s.post(batch("warm")).status, 200, "warm-up post")
        journal = read(os.path.join(s.state_dir, "journal.jsonl"))
        for name, make, status, code, path in shapes():
            body = make()
            eq(len(body), BODY, "%s: body size" % name)
            reset_peak(s.proc.pid)
            base = sgtest.proc_status_kib(s.proc.pid, "VmRSS")
            t = time.time()
            r = s.post(body)
            dt = time.time() - t
            peak = sgtest.proc_status_kib(s.proc.pid, "VmHWM")
            growth = (peak - base) * 1024
            print("%-34s %d %-14s %-16s peak RSS +%.1f MiB (%.2fx the body), %.2f s"
                  % (name, r.status, r.error()[0] if r.status != 200 else "", path,
                     growth / MIB, growth / len(body), dt), flush=True)
            eq((r.status, r.error()), (status, (code, path)), name)
            if RSS_CHECK:
                ok(growth <= 3 * len(body), "%s: peak RSS grew %.1f MiB, over 3x the %d MiB body"
                   % (name, growth / MIB, len(body) // MIB))
        eq(read(os.path.join(s.state_dir, "journal.jsonl")), journal, "nothing journaled")
        eq(s.get("/readyz").status, 200, "still ready")


def hold_body(port, declared, send):
    """A POST declaring `declared` bytes that sends `send` of them and stays open."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % declared + b" " * send)
    return sock


def chunked_post(port, body, chunk=256 * 1024):
    """Sends `body` chunked; returns the answer's status line and body."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    for i in range(0, len(body), chunk):
        piece = body[i:i + chunk]
        sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
    sock.sendall(b"0\r\n\r\n")
    answer, deadline = b"", time.time() + 20
    while time.time() < deadline:
        got = sock.recv(65536)
        if not got:
            break
        answer += got
    sock.close()
    head, _, rest = answer.partition(b"\r\n\r\n")
    return head, rest


def wait_logged(s, n, what):
    sgtest.wait_until(lambda: len(s.request_log()) >= n, 10, what)


@case
def inflight_budget_refuses_then_recovers():
    budget = 4 * MIB
    with Server(args=["--max-body-inflight", str(budget)]) as s:
        path = os.path.join(s.state_dir, "journal.jsonl")
        holders = [hold_body(s.port, MIB, MIB // 2) for _ in range(4)]
        try:
            time.sleep(0.3)
            r = s.post(batch("next"))
            eq((r.status, r.error()), (503, ("body_budget_exhausted", "")),
               "a POST past --max-body-inflight")
            eq(r.headers.get("retry-after"), "1", "Retry-After")
            eq(r.json()["error"]["message"], "request bodies in flight would exceed "
               "--max-body-inflight 4194304 bytes; retry", "message")
            eq(s.get("/livez").status, 200, "GETs carry no body and are served")
        finally:
            logged = len(s.request_log())
            for sock in holders:
                sock.close()
        wait_logged(s, logged + 4, "the holders' completion")
        eq(s.post(batch("next")).status, 200, "served once the holders are gone")
        # A chunked body over the budget is dropped as it crosses it and never parsed: a valid
        # batch followed by 5 MiB of blanks gets 503, not a receipt for its prefix.
        journal = read(path)
        body = json.dumps(batch("prefix")).encode() + b" " * (5 * MIB)
        head, rest = chunked_post(s.port, body)
        ok(head.startswith(b"HTTP/1.1 503"), "chunked body over the budget: %r" % head[:40])
        eq(json.loads(rest)["error"]["code"], "body_budget_exhausted", "its code")
        eq(read(path), journal, "the prefix was not journaled")
        eq(s.get("/v1/batches/prefix", headers={}).status, 404, "no stored receipt")
        eq(s.post(batch("after")).status, 200, "the budget is whole again")


def trickle(port, deadline_s, stall=False):
    """Sends headers declaring 1000 bytes, then a byte every 0.25 s (or nothing); returns the
    seconds until the server closed the connection."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=0.25)
    sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000\r\n\r\n{")
    t, end = time.time(), time.time() + deadline_s
    try:
        while time.time() < end:
            if not stall:
                sock.send(b" ")
            try:
                if sock.recv(1) == b"":
                    break
            except socket.timeout:
                pass
    except OSError:
        pass
    sock.close()
    return time.time() - t


@case
def trickled_body_is_cut_at_the_deadline():
    with Server(args=["--body-timeout", "2", "--timeout", "30"]) as s:
        for stall in (False, True):
            logged = len(s.request_log())
            dt = trickle(s.port, 10, stall)
            what = "a stalled body" if stall else "a trickled body"
            print("body-timeout: %s was cut after %.2f s (--body-timeout 2)" % (what, dt))
            ok(dt >= 1.5, "%s is cut after --body-timeout 2 s, not before (%.2f s)" % (what, dt))
            wait_logged(s, logged + 1, "the cut request's log line")
            eq(s.request_log()[-1]["status"], 408, "%s is logged as 408" % what)
        eq(s.post(batch("ok")).status, 200, "a whole body is served")


def asan_build():
    with open(sgtest.BIN, "rb") as f:
        return b"__asan_init" in f.read()


@case
def failed_body_append_is_never_parsed():
    """Out of memory while a body grows: 500, and the part received is not parsed. A real
    allocation failure needs ASan's allocator (max_allocation_size_mb): skipped elsewhere."""
    if not asan_build():
        print("skipped: needs an ASan build (ASAN_OPTIONS=max_allocation_size_mb)")
        return
    env = {"ASAN_OPTIONS": ":".join(x for x in [os.environ.get("ASAN_OPTIONS"), "detect_leaks=0",
                                                "allocator_may_return_null=1",
                                                "max_allocation_size_mb=20"] if x)}
    # The cap sits above the index's 16 MiB table (allocated at start) and below the body's
    # growth from 16 to 32 MiB.
    with Server(env=env, args=["--max-body", str(40 * MIB)]) as s:
        # A valid batch, then blanks: growing the body past 16 MiB fails, and the 16 MiB
        # received would parse as the batch.
        body = json.dumps(batch("prefix")).encode() + b" " * (24 * MIB)
        head, rest = chunked_post(s.port, body, chunk=100000)
        ok(head.startswith(b"HTTP/1.1 500"), "out of memory mid-body: %r" % head[:40])
        eq(json.loads(rest)["error"], {"code": "internal", "path": "",
                                       "message": "out of memory while reading the request body"},
           "its error")
        eq(journal_receipts(s.state_dir), [], "the prefix was not journaled")


@case
def ignored_body_is_not_read_without_end():
    """A body sent to an endpoint that reads none is dropped, but only up to --max-body."""
    with Server(args=["--max-body", str(MIB)]) as s:
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        sock.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece, sent, err = b"%x\r\n" % (64 * 1024) + b" " * (64 * 1024) + b"\r\n", 0, None
        try:
            while sent < 64 * MIB:
                sock.sendall(piece)
                sent += 64 * 1024
            sock.sendall(b"0\r\n\r\n")
            err = "answered: %r" % sock.recv(40)
        except OSError as e:
            err = e.__class__.__name__
        sock.close()
        print("ignored body: closed after %.1f MiB sent (%s)" % (sent / MIB, err))
        ok(sent < 16 * MIB, "closed soon past --max-body 1 MiB, not after %d bytes (%s)"
           % (sent, err))
        sgtest.wait_until(lambda: any(l["path"] == "/livez" for l in s.request_log()), 5,
                         "its log line")
        eq([l["status"] for l in s.request_log() if l["path"] == "/livez"], [413], "logged 413")
        eq(s.get("/livez").status, 200, "still serving")


TOKEN = "s3cret-token"


def auth(token):
    return {"Authorization": "Bearer " + token} if token else {}


# (method, path, status without a token, with a wrong one, with the right one)
TABLE = [
    ("GET", "/v1/ring", 401, 401, 200),
    ("GET", "/v1/ring?points=1", 401, 401, 200),
    ("HEAD", "/v1/ring", 401, 401, 200),
    ("GET", "/v1/lookup?key=user:842", 401, 401, 200),
    ("GET", "/v1/shards", 401, 401, 200),
    ("GET", "/v1/batches/stored-1", 401, 401, 200),
    ("GET", "/v1/batches/never-stored", 401, 401, 404),
    ("GET", "/metrics", 401, 401, 200),
    ("GET", "/livez", 200, 200, 200),
    ("GET", "/readyz", 200, 200, 200),
    ("GET", "/no-such-endpoint", 404, 404, 404),
    ("DELETE", "/v1/shards", 405, 405, 405),
]


def check_table(s, table):
    for method, path, *want in table:
        got = [s.request(method, path, headers=auth(t)).status
               for t in (None, "wrong-" + TOKEN, TOKEN)]
        eq(got, want, "%s %s without / with a wrong / with the right token" % (method, path))
        if want[0] == 401 and method != "HEAD":
            r = s.request(method, path)
            eq(r.error(), ("unauthorized", ""), "%s %s: 401 body" % (method, path))
            eq(r.headers.get("www-authenticate"), "Bearer", "%s %s: WWW-Authenticate" % (method, path))
            eq(r.json()["error"]["message"], "%s needs Authorization: Bearer <token>"
               % path.split("?")[0], "%s %s: the 401 shows no data" % (method, path))


@case
def every_data_endpoint_needs_the_token():
    token = write(os.path.join(tmpdir(), "token"), TOKEN + "\n")
    os.chmod(token, 0o600)
    with Server(args=["--token-file", token]) as s:
        eq(s.post(batch("stored-1"), headers=auth(TOKEN)).status, 200, "a stored batch")
        eq(s.post(batch("stored-2")).status, 401, "POST without the token")
        check_table(s, TABLE)
        eq(s.events("token_file_readable"), [], "no warning for a 0600 file")
    with Server(args=["--token-file", token, "--metrics-open"]) as s:
        check_table(s, [("GET", "/metrics", 200, 200, 200), ("GET", "/v1/shards", 401, 401, 200),
                        ("GET", "/v1/batches/x", 401, 401, 404)])


def start_with_token(content):
    d = tmpdir()
    path = write(os.path.join(d, "token"), content, "wb")
    os.chmod(path, 0o600)
    return path, ["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                  src("input", "shards.json"), "--state-dir", os.path.join(d, "state"),
                  "--listen", "127.0.0.1:0", "--token-file", path]


@case
def token_files_are_trimmed_like_the_header():
    for content in (b"  " + TOKEN.encode() + b"\n", TOKEN.encode() + b"\t",
                    TOKEN.encode() + b"\r\n", b"\t " + TOKEN.encode() + b" \t\r\n"):
        path, _ = start_with_token(content)
        with Server(args=["--token-file", path]) as s:
            got = [s.post(batch("t"), headers=auth(t)).status for t in (TOKEN + "x", TOKEN)]
            eq(got, [401, 200], "token file %r: wrong then right token" % content)
            eq(s.get("/v1/shards", headers={"Authorization": "Bearer \t" + TOKEN}).status,
               200, "token file %r: the header is trimmed the same way" % content)


@case
def bad_token_files_refuse_to_start():
    blank = "must hold one non-empty line (blanks do not count)"
    ctl = "holds control character 0x%02x: the token must be one line of printable characters"
    for content, what in ((b"\t", blank), (b" \r\n", blank), (b"", blank),
                          (b"s3c\x01ret\n", ctl % 1), (b"one\ntwo\n", ctl % 10),
                          (b"abc\x7f\n", ctl % 0x7f), (b"a\x00b", ctl % 0)):
        path, args = start_with_token(content)
        r = run_server(args)
        eq((r.returncode, r.stderr), (3, "token: %s: %s\n" % (path, what)),
           "token file %r" % content)


@case
def readable_token_file_is_warned_about():
    path, _ = start_with_token(TOKEN.encode() + b"\n")
    os.chmod(path, 0o644)
    with Server(args=["--token-file", path]) as s:
        eq(s.events("token_file_readable"),
           [{"event": "token_file_readable", "file": path, "mode": "0644",
             "warning": "the token file is readable by group or others: chmod 600 it"}],
           "a 0644 token file is warned about")
        eq(s.post(batch("w"), headers=auth(TOKEN)).status, 200, "and still used")


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("shardgate", "health", "source")))
