#!/usr/bin/env python3
"""Property test of what the gateway repeats (docs/api.md §1): requests with random bytes in
every path segment, query parameter (name and value), header and body the gateway may echo;
every answer must be valid UTF-8 (JSON answers strict JSON of the documented error shape),
and so must every line the server writes to stderr (judged once the server has stopped).

Hypothesis draws the requests and shrinks a failing one; the seed is fixed (MODEL_SEED=<n>
draws others). usage: test_echo.py SHARDGATE SOURCE_DIR [--examples N]
"""
import json
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Failure, Server, eq, ok, write  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ADMIN = "echo-admin-token"
# Byte strings at the edges of UTF-8: overlong forms, surrogates, past U+10FFFF, cut sequences,
# lone continuation bytes, and well-formed ones that must come back as they are.
EDGES = [b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xed\xbf\xbf",
         b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xfe",
         b"\x80", b"\xbf", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3\xa9", b"\xe2\x82\xac",
         b"\xf0\x9f\x98\x80", b"\xef\xbf\xbf", b"\x00", b"\x01", b"\x1f", b"\x7f", b'"', b"\\",
         b"%", b"/", b"?", b"&", b"=", b"#", b" ", b"\t", b"0", b"1", b"-1", b"1e3", b"\\u0000"]
BYTES = st.lists(st.one_of(st.binary(max_size=6), st.sampled_from(EDGES)), max_size=5).map(
    b"".join)
PATHS = ["/v1/shards/%s/assignments", "/v1/batches/%s", "/v1/%s", "/%s", "/v1/shards/%s",
         "/v1/admin/%s", "/v1/receipts/%s", "/v1/ring/%s"]
PARAMS = ["after", "limit", "wait_ms", "points", "key", "max_movement", "dry_run", "force"]
HEADERS = ["Idempotency-Key", "If-Match", "Last-Event-ID", "Accept", "Content-Type",
           "Authorization", "X-Request-Id", "Host"]


def pct(data):
    return "".join("%%%02X" % c for c in data)


def header_value(data):
    """What a header line can hold at all: no CR, LF or NUL (the request would not parse)."""
    return bytes(c for c in data if c not in b"\r\n\x00")


@st.composite
def requests(draw):
    method = draw(st.sampled_from(["GET", "HEAD", "POST", "PUT"]))
    segment = draw(BYTES)
    raw_path = draw(st.booleans())  # the bytes as they are, not percent-encoded
    if raw_path:
        segment = bytes(c for c in segment if c > 0x20 and c not in b"?#%\x7f")
        path = draw(st.sampled_from(PATHS)).encode() % segment
    else:
        path = (draw(st.sampled_from(PATHS)) % pct(segment)).encode()
    names = draw(st.lists(st.one_of(st.sampled_from(PARAMS), BYTES.map(pct)), max_size=4))
    query = [(n.encode() if isinstance(n, str) else n.encode(), draw(BYTES)) for n in names]
    query = [(n, v) for n, v in query if not (n == b"wait_ms" and v.isdigit() and int(v) > 100)]
    if query:
        path += b"?" + b"&".join(n + b"=" + pct(v).encode() for n, v in query)
    heads = [(n, header_value(draw(BYTES))) for n in draw(st.lists(st.sampled_from(HEADERS),
                                                                   max_size=4, unique=True))]
    if draw(st.booleans()):
        heads.append(("Authorization", b"Bearer " + ADMIN.encode()))
    body = b""
    if method in ("POST", "PUT"):
        value = draw(BYTES)
        body = draw(st.sampled_from([
            value,
            b'{"batch_id":"' + value + b'","changes":[{"key":"k","size":1}]}',
            b'{"batch_id":"b","changes":[{"key":"' + value + b'","size":1}]}',
            b'{"shards":[{"id":"' + value + b'","state":"online","capacity":0}]}']))
    return method, path, heads, body


def exchange(port, method, path, heads, body):
    """Sends one request on its own connection and reads the answer to EOF: (head, body)."""
    lines = [method.encode() + b" " + path + b" HTTP/1.1", b"Host: 127.0.0.1",
             b"Connection: close", b"Content-Length: %d" % len(body)]
    lines += [n.encode() + b": " + v for n, v in heads if n != "Host"]
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        data = b""
        while True:
            got = sock.recv(65536)
            if not got:
                break
            data += got
    except ConnectionResetError:  # refused before the body was read: judge what came back
        pass
    finally:
        sock.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def dechunk(data):
    out = b""
    while data:
        size, _, data = data.partition(b"\r\n")
        n = int(size.split(b";")[0], 16)
        if n == 0:
            break
        out, data = out + data[:n], data[n + 2:]
    return out


def strict_json(text, what):
    def refuse(name):
        raise Failure("%s: %s is not JSON" % (what, name))
    return json.loads(text, parse_constant=refuse)


def check_answer(head, body, what):
    ok(head.startswith(b"HTTP/1.1 "), "%s: an answer: %r" % (what, head[:80]))
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        fields[k.strip().lower()] = v.strip()
    if fields.get(b"transfer-encoding") == b"chunked":
        body = dechunk(body)
    try:
        text = body.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        raise Failure("%s: the answer is not UTF-8 (%s): %r" % (what, e, body[:300]))
    if not fields.get(b"content-type", b"").startswith(b"application/json") or not text:
        return
    doc = strict_json(text, what)
    if "error" in doc:
        eq(sorted(doc["error"]), ["code", "message", "path"], "%s: the error's members" % what)


def check_log(raw_lines, what):
    """Every line is UTF-8, and every line that opens as JSON is strict JSON."""
    for raw in raw_lines:
        try:
            line = raw.decode("utf-8", "strict").rstrip("\n")
        except UnicodeDecodeError as e:
            raise Failure("%s: a log line is not UTF-8 (%s): %r" % (what, e, raw))
        if line.startswith("{"):
            strict_json(line, "%s: log line %r" % (what, line[:200]))


class RawServer(Server):
    """The harness's server, keeping stderr's bytes as written."""

    def _read_stderr(self):
        self.raw = []
        for raw in self.proc.stderr:
            self.raw.append(raw)
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))


def main(argv):
    sgtest.BIN, sgtest.SRC = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    examples = int(argv[argv.index("--examples") + 1]) if "--examples" in argv else 1000
    d = sgtest.tmpdir()
    token = os.path.join(d, "admin")
    write(token, ADMIN + "\n")
    os.chmod(token, 0o600)
    shards = os.path.join(d, "shards.json")
    write(shards, open(sgtest.src("input", "shards.json")).read())
    with RawServer(shards=shards, args=["--admin-token-file", token]) as s:

        @settings(max_examples=examples, deadline=None, database=None, print_blob=False,
                  suppress_health_check=list(HealthCheck))
        @given(requests())
        def every_answer_and_log_line_is_utf8(req):
            method, path, heads, body = req
            what = "%s %r %r %r" % (method, path, heads, body)
            head, answer = exchange(s.port, method, path, heads, body)
            if method != "HEAD":
                check_answer(head, answer, what)

        hypothesis_seed(int(os.environ.get("MODEL_SEED", "20261204")))(
            every_answer_and_log_line_is_utf8)
        every_answer_and_log_line_is_utf8()
        eq(s.stop(), 0, "the server stops cleanly")
        # A request's line is written at its completion, which may come after its answer was
        # read: the log is judged whole, each bad line quoted (it names its request).
        check_log(s.raw, "the log")
        print("PASS every_answer_and_log_line_is_utf8: %d requests, %d log lines"
              % (examples, len(s.raw)))
    sgtest.cleanup(True)
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
