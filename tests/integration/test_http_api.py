"""Every endpoint and error status of docs/api.md over real HTTP, with exact codes/paths: the
sequences (restarts, several requests, raw sockets). One request, one answer: tests/http/."""

import bisect
import http.client
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Server, batch, case, eq, journal_lines, main, metric_value, ok, read,
                    run_server, src, tmpdir, wait_until, write)

GOLDEN = "tests/golden/sample-0001.receipt.v2.json"


@case("golden")
def golden_receipt_equals_cli():
    cli = run_server(["dispatch", "--conf", src("conf", "dispatch.env"), "--shards",
                      src("input", "shards.json"), "--batch", src("input", "changes.json")])
    eq(cli.returncode, 0, "CLI dispatch exit")
    with Server() as s:
        r = s.post(read(src("input", "changes.json")))
        eq(r.status, 200, "POST status")
        eq(r.headers.get("content-type"), "application/json", "Content-Type")
        eq(r.body, read(src(GOLDEN)), "HTTP receipt vs golden")
        eq(r.body, cli.stdout.encode(), "HTTP receipt vs CLI receipt")
        ok("idempotent-replayed" not in r.headers, "first answer is not a replay")
        g = s.get("/v1/batches/sample-0001")
        eq((g.status, g.body), (200, read(src(GOLDEN))), "GET /v1/batches/sample-0001")


def raw_exchange(port, head, chunks=(), read_first=False):
    """Sends raw request bytes; returns (status, body). With read_first, reads the answer
    before sending any body chunk (the server must decide from the headers alone)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        sock.sendall(head)
        if not read_first:
            for c in chunks:
                sock.sendall(c)
        data = b""
        while b"\r\n\r\n" not in data:
            got = sock.recv(65536)
            if not got:
                break
            data += got
        head_part, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for line in head_part.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        while len(rest) < length:
            got = sock.recv(65536)
            if not got:
                break
            rest += got
        return int(head_part.split(b" ")[1]), rest
    finally:
        sock.close()


@case("limits")
def bytes_that_are_not_utf8_are_never_echoed():
    """A path segment the answer or the log line repeats is written as UTF-8 whatever it held:
    each byte that is not part of a well-formed sequence as \\ufffd (docs/api.md §1)."""
    with Server() as s:
        for path, shown in [("/v1/shards/%ff%fe/assignments", "no such shard: \"\ufffd\ufffd\""),
                            ("/v1/shards/%c3%28/assignments", "no such shard: \"\ufffd(\""),
                            ("/v1/batches/caf%c3%a9%ff", "no stored receipt for batch_id "
                                                          "\"caf\u00e9\ufffd\"")]:
            r = s.get(path)
            eq((r.status, json.loads(r.body.decode("utf-8", "strict"))["error"]["message"]),
               (404, shown), path)
        wait_until(lambda: len(s.request_log()) == 3, 10, "the three log lines")
        logged = sorted(e["path"] for e in s.request_log())  # written at completion: any order
        eq(logged, sorted(["/v1/shards/\ufffd\ufffd/assignments", "/v1/shards/\ufffd(/assignments",
                           "/v1/batches/caf\u00e9\ufffd"]), "the log lines, read back as JSON")
        raw = [l for l in s.lines if l.startswith('{"time"')]
        ok(all("\\ufffd" in l and "\ufffd" not in l for l in raw),
           "written as the escape, not as bytes the reader had to replace: %r" % raw)


@case("limits")
def a_path_with_an_encoded_nul_or_control_byte_is_400():
    """%00 in a path would cut it short once decoded (/v1/batches/ctl-1%00x read as ctl-1's):
    seen before decoding, it is 400 invalid_path, as is any encoded control byte; a GET, a POST
    (its body left unread) and an admin path alike, each logged; %2d and %20 decode as before
    (docs/api.md §2)."""
    with Server() as s:
        eq(s.post(batch("ctl-1")).status, 200, "POST ctl-1")
        msg = ("the path holds a percent-encoded NUL or control byte (%00-%1F, %7F): no "
               "endpoint, batch_id or shard id has one")
        for path in ("/v1/batches/ctl-1%00x", "/v1/ring%00x", "/v1/ring%1F", "/v1/ring%7f",
                     "/v1/shards/shard-a%0a/assignments", "/v1/admin/membership%00"):
            r = s.get(path)
            eq((r.status, r.error(), r.json()["error"]["message"]),
               (400, ("invalid_path", ""), msg), path)
        r = s.request("POST", "/v1/batches%00", body=json.dumps(batch("ctl-2")).encode(),
                      headers={"Content-Type": "application/json"})
        eq((r.status, r.error()[0]), (400, "invalid_path"), "POST")
        eq(s.get("/v1/batches/ctl-2").status, 404, "nothing dispatched")
        eq(s.get("/v1/batches/ctl%2d1").status, 200, "%2d is '-'")
        eq(s.get("/v1/ring%20").status, 404, "%20 is a space: no such endpoint")
        wait_until(lambda: sum(e["status"] == 400 for e in s.request_log()) == 7, 10,
                   "each logged")


def whole_exchange(port, data):
    """Sends `data` and reads to the end of the connection (a 10 s bound): every byte answered."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        sock.sendall(data)
        got = b""
        while True:
            part = sock.recv(65536)
            if not part:
                return got
            got += part
    finally:
        sock.close()


@case("limits")
def framing_other_than_chunked_or_one_length_is_refused_and_closed():
    """RFC 9112 framing as docs/api.md §1 reads it: a Transfer-Encoding other than exactly
    chunked is 501; Transfer-Encoding with Content-Length, or two different Content-Lengths, is
    400 invalid_framing; each is one status line, then the connection is closed, so a request
    smuggled after it is never answered and nothing is dispatched."""
    doc = json.dumps(batch("fr-1")).encode()
    get = b"GET /v1/ring HTTP/1.1\r\nHost: x\r\n\r\n"
    post = b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(doc), doc)
    with Server() as s:
        for head, body, status, code in (
                (b"Transfer-Encoding: gzip\r\n", doc, 501, "not_implemented"),
                (b"Transfer-Encoding: identity, chunked\r\n", chunked, 501, "not_implemented"),
                (b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n" % len(chunked),
                 chunked, 400, "invalid_framing"),
                (b"Content-Length: %d\r\nContent-Length: %d\r\n" % (len(doc), len(doc) + 1),
                 doc, 400, "invalid_framing")):
            got = whole_exchange(s.port, post + head + b"\r\n" + body + get)
            what = head.decode().strip()
            eq((got.count(b"HTTP/1.1 "), got.split(b" ", 2)[1]), (1, b"%d" % status),
               "one answer: " + what)
            eq(json.loads(got.split(b"\r\n\r\n", 1)[1])["error"]["code"], code, what)
        eq(s.get("/v1/batches/fr-1").status, 404, "nothing dispatched")
        got = whole_exchange(s.port, post + b"Transfer-Encoding: chunked\r\nConnection: close"
                             b"\r\n\r\n" + chunked)
        eq(got.split(b" ", 2)[1], b"200", "chunked alone is read")


@case("limits")
def body_over_max_body_is_413():
    with Server(args=["--max-body", "1000"]) as s:
        head = (b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 5000\r\n\r\n")
        status, body = raw_exchange(s.port, head, read_first=True)
        eq(status, 413, "Content-Length over the cap, answered before the body")
        eq(json.loads(body)["error"]["code"], "payload_too_large", "code")
        head = (b"POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        piece = b"x" * 600
        chunks = [b"%x\r\n%s\r\n" % (len(piece), piece)] * 3 + [b"0\r\n\r\n"]
        status, body = raw_exchange(s.port, head, chunks)
        eq(status, 413, "chunked body over the cap (1800 bytes, cap 1000)")
        eq(json.loads(body)["error"]["code"], "payload_too_large", "chunked code")
        small = json.dumps(batch("small")).encode()
        chunks = [b"%x\r\n%s\r\n" % (len(small), small), b"0\r\n\r\n"]
        status, body = raw_exchange(s.port, head, chunks)
        eq(status, 200, "chunked body under the cap")
        eq(json.loads(body)["batch_id"], "small", "chunked receipt")
        eq(len(journal_lines(s.state_dir)), 2, "only the accepted batch is journaled")


@case("limits")
def errors_as_problem_details_when_asked():
    """docs/api.md §1: Accept naming application/problem+json (q not 0) gets RFC 9457 problem
    details with code and path as extension members, and an error's own members after them;
    anyone else the gateway's form."""
    problem = {"Accept": "text/html, application/problem+json"}
    admin = write(os.path.join(tmpdir(), "admin"), "adm1n\n")
    os.chmod(admin, 0o600)
    with Server(args=["--admin-token-file", admin]) as s:
        r = s.get("/v1/batches/nope", headers=problem)
        eq((r.status, r.headers.get("content-type"), json.loads(r.body)),
           (404, "application/problem+json",
            {"type": "tag:shardgate,2026:not_found", "title": "Not found", "status": 404,
             "detail": 'no stored receipt for batch_id "nope"', "instance": "/v1/batches/nope",
             "code": "not_found", "path": "batch_id"}), "404 as a problem")
        r = s.get("/v1/batches/nope", headers={"Accept": "application/problem+json;q=0"})
        eq((r.headers.get("content-type"), list(json.loads(r.body))),
           ("application/json", ["error"]), "q=0: the gateway's form")
        r = s.request("PUT", "/v1/admin/membership", body=read(src("input", "shards.json")),
                      headers=dict(problem, **{"Content-Type": "application/json",
                                               "Authorization": "Bearer adm1n",
                                               "If-Match": '"%s"' % ("0" * 40)}))
        body = json.loads(r.body)
        eq((r.status, r.headers.get("content-type"), body["status"], body["code"],
            body["epoch"], list(body)[-1]),
           (412, "application/problem+json", 412, "epoch_mismatch",
            "f60a5fb19effc4cfa95aed0af45997f72905f6ae", "epoch"), "412 keeps its epoch member")


@case("limits")
def headers_past_the_connection_memory_are_431():
    """A connection's pool is 64 KiB (docs/limits.md): 60,000 bytes of headers are read, 70,000
    are libmicrohttpd's 431 and the connection closed; the server goes on."""
    with Server() as s:
        def head(n):
            return b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * n + b"\r\n\r\n"
        eq(raw_exchange(s.port, head(60_000))[0], 200, "60,000 bytes of headers")
        eq(raw_exchange(s.port, head(70_000))[0], 431, "70,000 bytes of headers")
        eq(s.get("/livez").status, 200, "still serving")


@case("limits")
def endless_chunked_body_is_cut_off():
    """Past twice the cap the server stops reading and closes: it never buffers the body."""
    with Server(args=["--max-body", "1000"]) as s:
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        sock.sendall(b"POST /v1/batches HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        sent, closed = 0, False
        try:
            while sent < 50_000_000:
                sock.sendall(b"3e8\r\n" + b"x" * 1000 + b"\r\n")
                sent += 1000
        except OSError:
            closed = True
        finally:
            sock.close()
        ok(closed, "the server closed the connection (sent %d bytes)" % sent)
        eq(s.get("/livez").status, 200, "still serving")
        eq(len(journal_lines(s.state_dir)), 1, "nothing journaled")


@case("auth")
def auth_on_and_off():
    d = tmpdir()
    token = write(os.path.join(d, "token"), "s3cret-token\n")
    with Server(args=["--token-file", token]) as s:
        r = s.post(batch("a1"))
        eq((r.status, r.error()), (401, ("unauthorized", "")), "no token")
        eq(r.headers.get("www-authenticate"), "Bearer", "WWW-Authenticate")
        r = s.post(batch("a1"), headers={"Authorization": "Bearer wrong"})
        eq(r.status, 401, "wrong token")
        r = s.post(batch("a1"), headers={"Authorization": "Bearer s3cret-token-and-more"})
        eq(r.status, 401, "longer token")
        r = s.post(batch("a1"), headers={"Authorization": "Basic czNjcmV0LXRva2Vu"})
        eq(r.status, 401, "not a bearer")
        eq(len(journal_lines(s.state_dir)), 1, "unauthorized posts journal nothing")
        r = s.post(batch("a1"), headers={"Authorization": "Bearer s3cret-token"})
        eq(r.status, 200, "right token")
        eq(s.get("/v1/shards").status, 401, "GET of shard data needs the token too")
        eq(s.get("/v1/shards", headers={"Authorization": "Bearer s3cret-token"}).status, 200,
           "GET with the token")
        eq(s.get("/livez").status, 200, "probes need no token")
    with Server() as s:
        eq(s.post(batch("a2")).status, 200, "auth off: no token needed")
    empty = write(os.path.join(d, "empty"), "\n")
    r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                    src("input", "shards.json"), "--state-dir", os.path.join(d, "st"),
                    "--listen", "127.0.0.1:0", "--token-file", empty])
    eq(r.returncode, 3, "empty token file refuses to start")


def open_server(args, env):
    """A Server whose environment is ENV exactly (Server adds os.environ to what it is given)."""
    server = Server(args=args)
    server.env = env
    return server


@case("auth")
def serving_without_a_token_is_said_by_name():
    """No --token-file: refused unless --no-token (or SHARDGATE_NO_TOKEN=1) says so, then a
    warning at start; a token file wins over --no-token from anywhere (docs/api.md §11)."""
    d = tmpdir()
    closed = {k: v for k, v in os.environ.items() if k != "SHARDGATE_NO_TOKEN"}
    base = ["serve", "--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
            "--state-dir", os.path.join(d, "st"), "--listen", "127.0.0.1:0"]
    r = run_server(base, env=closed)
    eq((r.returncode, r.stderr.splitlines()[0]),
       (64, "shardgate: --token-file FILE is required, or --no-token to serve every client that "
            "reaches --listen without one"), "no token, no --no-token")
    eq(os.path.exists(os.path.join(d, "st")), False, "a refused start leaves no state dir")
    warning = {"event": "serving_without_token",
               "warning": "--no-token: every client that reaches this address may POST batches "
                          "and read receipts; give --token-file FILE to require a token"}
    for how, args, env in (("--no-token", ["--no-token"], closed),
                           ("SHARDGATE_NO_TOKEN=1", [], dict(closed, SHARDGATE_NO_TOKEN="1"))):
        with open_server(args, env) as s:
            eq(s.events("serving_without_token"),
               [dict(warning, address="127.0.0.1:%d" % s.port)], how + ": the warning at start")
            at = s.lines.index('{"event":"listening","address":"127.0.0.1:%d"}' % s.port)
            eq(s.lines[at - 1], '{"event":"serving_without_token","address":"127.0.0.1:%d",'
               '"warning":"%s"}' % (s.port, warning["warning"]),
               how + ": the warning, byte for byte, just before listening")
            eq(s.post(batch("open-" + how[:2])).status, 200, how + ": served without a token")
    token = write(os.path.join(d, "token"), "s3cret-token\n")
    os.chmod(token, 0o600)
    for how, args, env in (("--no-token", ["--no-token"], closed),
                           ("SHARDGATE_NO_TOKEN=1", [], dict(closed, SHARDGATE_NO_TOKEN="1"))):
        with open_server(["--token-file", token] + args, env) as s:
            eq(s.events("serving_without_token"), [], how + " and a token file: no warning")
            eq(s.post(batch("shut")).status, 401, how + " and a token file: the token wins")


@case("capacity")
def over_capacity_under_reject_is_422():
    d = tmpdir()
    conf = write(os.path.join(d, "reject.env"), "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=160\n"
                 "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=reject\n")
    with Server(conf=conf) as s:
        big = {"batch_id": "big", "changes": [{"id": "c1", "key": "order:1001", "size": 21}]}
        r = s.post(big)
        eq((r.status, r.error()), (422, ("over_capacity", "")), "over capacity")
        ok("shard-b" in r.json()["error"]["message"], "message names the shard: %r" % r.body)
        eq(len(journal_lines(s.state_dir)), 1, "refused batch journals nothing")
        eq(s.shard_totals()["shard-b"], [0, 0], "refused batch adds no load")
        fine = {"batch_id": "big", "changes": [{"id": "c1", "key": "order:1001", "size": 20}]}
        eq(s.post(fine).status, 200, "the batch id is free after a refusal")


@case("capacity")
def over_capacity_under_report_is_counted_by_shard():
    """Under `report` a batch over a shard's capacity is accepted (docs/contract.md §5);
    /metrics counts it once in total and once for each shard its receipt has over capacity
    (docs/api.md §8), never for a replay."""
    with Server() as s:
        home = {k: s.get("/v1/lookup?key=" + k).json()["shard"]
                for k in ("order:1001", "user:42", "cart:9", "sku:55", "invoice:8")}
        eq(home["order:1001"], "shard-b", "order:1001's shard")
        one = {"batch_id": "over-1", "changes": [{"id": "c1", "key": "order:1001", "size": 21}]}
        r = s.post(one)
        eq((r.status, r.json()["ok"], r.json()["shards"]["shard-b"]["over_capacity"]),
           (200, False, True), "accepted, shard-b over capacity")
        eq(s.post(one).status, 200, "replayed")
        other = next(k for k, sid in home.items() if sid not in ("shard-b",))
        two = {"batch_id": "over-2", "changes": [
            {"id": "c1", "key": "order:1001", "size": 20},
            {"id": "c2", "key": "order:1001", "size": 1},
            {"id": "c3", "key": other, "size": 20}]}
        eq(s.post(two).status, 200, "shard-b over capacity, another shard at it")
        eq(s.post({"batch_id": "over-3", "changes": [
            {"id": "c1", "key": other, "size": 30}]}).status, 200, "another shard over")
        eq(s.post({"batch_id": "fine", "changes": [
            {"id": "c1", "key": "order:1001", "size": 20}]}).status, 200, "at capacity is fine")
        t = s.get("/metrics").body.decode()
        eq(metric_value(t, "shardgate_batches_over_capacity_total"), "3", "batches over")
        eq({sid: metric_value(t, 'shardgate_shard_over_capacity_batches_total{shard="%s"}' % sid)
            for sid in ("shard-a", "shard-b", "shard-c", "shard-d", "shard-e")},
           {sid: "2" if sid == "shard-b" else "1" if sid == home[other] else "0"
            for sid in ("shard-a", "shard-b", "shard-c", "shard-d", "shard-e")},
           "by shard: every member, replays and batches within capacity not counted")


@case("capacity")
def no_online_shard_is_503():
    d = tmpdir()
    shards = write(os.path.join(d, "shards.json"), json.dumps({"shards": [
        {"id": "shard-a", "state": "offline", "capacity": 20},
        {"id": "shard-b", "state": "draining", "capacity": 20}]}))
    with Server(shards=shards) as s:
        r = s.post(batch("n1"))
        eq((r.status, r.error()), (503, ("no_online_shard", "")), "POST with an empty ring")
        r = s.get("/v1/lookup?key=k")
        eq((r.status, r.error()[0]), (503, "no_online_shard"), "lookup with an empty ring")
        r = s.get("/readyz")
        eq(r.status, 503, "not ready with an empty ring")
        eq(r.json()["checks"]["ring"], "empty", "readyz says why")
        eq(s.get("/livez").status, 200, "still live")
        eq(len(journal_lines(s.state_dir)), 1, "nothing but the epoch")


@case("ops")
def ring_lookup_shards_probes():
    with Server() as s:
        r = s.get("/v1/ring")
        eq(r.status, 200, "GET /v1/ring")
        ring = r.json()
        eq((ring["id"], ring["hash"], ring["vnodes"], ring["vnodes_total"], ring["online"]),
           ("ce0ad72e7a89a4843f1199a33e0c83fcba059cfc", "sha1", 160, 480,
            ["shard-a", "shard-b", "shard-c"]), "ring summary")
        ok("points" not in ring, "no points unless asked")
        pts = s.get("/v1/ring?points=1").json()["points"]
        eq(len(pts), 480, "points")
        ok(all(pts[i]["value"] <= pts[i + 1]["value"] for i in range(479)), "points in order")
        eq(s.get("/v1/ring?points=maybe").status, 400, "bad points value")
        eq(s.get("/v1/ring?points=1%00").status, 400, "a NUL byte does not end the value")
        ring_share_is_the_arcs_each_shard_owns(s, pts)
        r = s.get("/v1/lookup?key=order:1001")
        eq(r.json(), {"key": "order:1001", "hash": 3001802920, "point": 3046879832, "vnode": 15,
                      "shard": "shard-b", "reason": "ring"}, "golden lookup")
        eq(s.get("/v1/lookup?key=user%3A842").json()["reason"], "wrap", "escaped key, wrap")
        r = s.get("/v1/lookup")
        eq((r.status, r.error()), (400, ("invalid_parameter", "key")), "missing key")
        shards = s.get("/v1/shards").json()["shards"]
        eq([(x["id"], x["state"], x["weight"], x["capacity"], x["load_total"],
             x["received_total"]) for x in shards],
           [("shard-a", "online", 1, 20, 0, 0), ("shard-b", "online", 1, 20, 0, 0),
            ("shard-c", "online", 1, 20, 0, 0), ("shard-d", "offline", 1, 20, 0, 0),
            ("shard-e", "draining", 1, 20, 0, 0)], "shards before any post")
        eq((s.get("/livez").status, s.get("/readyz").status), (200, 200), "probes")
        eq(s.request("HEAD", "/livez").status, 200, "HEAD")


def ring_share_is_the_arcs_each_shard_owns(s, pts):
    """shardgate_ring_share_ratio (docs/api.md §8) is, for each online shard, the hashes whose
    lookup lands on it (docs/contract.md §3: the first point >= the hash, else point 0) over
    2^32; the arcs are checked against the gateway's own lookups first."""
    values = [p["value"] for p in pts]
    for i in range(40):
        r = s.get("/v1/lookup?key=share-%d" % i).json()
        at = bisect.bisect_left(values, r["hash"]) % len(pts)
        eq((pts[at]["shard"], pts[at]["value"]), (r["shard"], r["point"]), "the arc of a lookup")
    owned = {}
    for i, p in enumerate(pts):
        arc = p["value"] - pts[i - 1]["value"] if i else 2**32 - pts[-1]["value"] + pts[0]["value"]
        owned[p["shard"]] = owned.get(p["shard"], 0) + arc
    t = s.get("/metrics").body.decode()
    eq({sid: metric_value(t, 'shardgate_ring_share_ratio{shard="%s"}' % sid) for sid in owned},
       {sid: "%.9f" % (n / 2**32) for sid, n in owned.items()}, "ring share per online shard")
    ok('shardgate_ring_share_ratio{shard="shard-d"}' not in t, "an offline shard has none")


@case("ops")
def metrics_after_known_posts():
    started = time.time()
    with Server() as s:
        eq(s.post(read(src("input", "changes.json"))).status, 200, "accepted")
        eq(s.post(read(src("input", "changes.json"))).status, 200, "replayed")
        eq(s.post(b"{").status, 400, "rejected")
        r = s.get("/metrics")
        eq(r.status, 200, "GET /metrics")
        eq(r.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8", "type")
        t = r.body.decode()
        eq(metric_value(t, 'shardgate_batches_total{result="accepted"}'), "1", "accepted")
        eq(metric_value(t, 'shardgate_batches_total{result="replayed"}'), "1", "replayed")
        eq(metric_value(t, 'shardgate_batches_total{result="rejected"}'), "1", "rejected")
        eq(metric_value(t, 'shardgate_batches_total{result="in_flight"}'), "0", "in_flight")
        eq(metric_value(t, "shardgate_changes_total"), "8", "changes")
        for sid, load, recv in [("shard-a", 8, 2), ("shard-b", 6, 2), ("shard-c", 10, 4),
                                ("shard-d", 0, 0), ("shard-e", 0, 0)]:
            eq(metric_value(t, 'shardgate_shard_load_total{shard="%s"}' % sid), str(load), sid)
            eq(metric_value(t, 'shardgate_shard_received_total{shard="%s"}' % sid), str(recv), sid)
        eq(metric_value(t, "shardgate_ring_points"), "480", "vnodes")
        eq(metric_value(t, 'shardgate_ring_info{id="ce0ad72e7a89a4843f1199a33e0c83fcba059cfc",'
                     'hash="sha1",vnodes="160"}'), "1", "ring info")
        eq(metric_value(t, "shardgate_journal_fsync_duration_seconds_count"), "1", "one fsync")
        h = "shardgate_http_request_duration_seconds"
        for labels, count in [('method="POST",route="/v1/batches",code="2xx"', "2"),
                              ('method="POST",route="/v1/batches",code="4xx"', "1")]:
            eq(metric_value(t, "%s_count{%s}" % (h, labels)), count, "requests " + labels)
            eq(metric_value(t, '%s_bucket{%s,le="+Inf"}' % (h, labels)), count, "+Inf bucket")
        eq(s.get("/nope").status, 404, "no route")
        eq(s.get("/v1/batches/sample-0001").status, 200, "a stored receipt")
        t = s.get("/metrics").body.decode()
        eq([metric_value(t, "%s_count{%s}" % (h, labels)) for labels in (
            'method="other",route="other",code="4xx"',
            'method="GET",route="/v1/batches/{batch_id}",code="2xx"',
            'method="GET",route="/metrics",code="2xx"')], ["1", "1", "1"],
           "by route and status class; a path no route takes is `other`")
        ok('route="/v1/ring"' not in t, "a route without requests has no series")
        for line in t.splitlines():
            ok(line.startswith("#") or len(line.split(" ")) == 2, "sample line: %r" % line)
        process_series(s, t, started, time.time())


def proc_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key + ":"))


def process_series(s, t, started, now):
    """shardgate_build_info and process_* as Prometheus client libraries write them (docs/api.md
    §8), against what /proc says of the server and what --version prints."""
    version = run_server(["--version"]).stdout.split()[1]
    eq(metric_value(t, 'shardgate_build_info{version="%s"}' % version), "1", "build info")
    for name in ("process_start_time_seconds", "shardgate_reload_last_success_timestamp_seconds"):
        value = float(metric_value(t, name))
        ok(started - 1 <= value <= now + 1, "%s %f within the start [%f, %f]"
           % (name, value, started, now))
    rss = float(metric_value(t, "process_resident_memory_bytes")) / 1024
    kib = proc_kib(s.proc.pid, "VmRSS")
    ok(kib / 2 <= rss <= kib * 2, "resident %d KiB, /proc says %d KiB" % (rss, kib))
    vm = float(metric_value(t, "process_virtual_memory_bytes")) / 1024
    kib = proc_kib(s.proc.pid, "VmSize")
    ok(kib / 2 <= vm <= kib * 2, "virtual %d KiB, /proc says %d KiB" % (vm, kib))
    fds = int(metric_value(t, "process_open_fds"))
    listed = len(os.listdir("/proc/%d/fd" % s.proc.pid))
    ok(abs(fds - listed) <= 8, "open fds %d, /proc lists %d" % (fds, listed))
    with open("/proc/%d/limits" % s.proc.pid) as f:
        soft = next(l.split()[3] for l in f if l.startswith("Max open files"))
    eq(metric_value(t, "process_max_fds"), soft, "max fds: the soft limit")
    cpu = float(metric_value(t, "process_cpu_seconds_total"))
    ok(0 <= cpu <= (now - started + 1) * os.cpu_count(), "cpu seconds %f" % cpu)


@case("ops")
def every_option_from_the_environment():
    """Each serve option is also SHARDGATE_<NAME> (docs/api.md, the options): read before the
    command line, which wins; a bad value is a usage error that names the variable."""
    body = b" " * 1500  # not JSON: 400 within --max-body, 413 past it
    head = {"Content-Type": "application/json"}
    with Server(env={"SHARDGATE_MAX_BODY": "1000"}) as s:
        eq(s.request("POST", "/v1/batches", body=body, headers=head).status, 413, "env 1000")
    with Server(env={"SHARDGATE_MAX_BODY": "1000"}, args=["--max-body", "2000"]) as s:
        eq(s.request("POST", "/v1/batches", body=body, headers=head).status, 400,
           "the command line wins")
    token = write(os.path.join(tmpdir(), "token"), "env-token\n")
    os.chmod(token, 0o600)
    with Server(env={"SHARDGATE_TOKEN_FILE": token, "SHARDGATE_METRICS_OPEN": "true"}) as s:
        eq((s.post(batch("e1")).status, s.get("/metrics").status), (401, 200),
           "a file and a flag from the environment")
    with Server(env={"SHARDGATE_TOKEN_FILE": token, "SHARDGATE_METRICS_OPEN": "0"}) as s:
        eq(s.get("/metrics").status, 401, "METRICS_OPEN=0 is off")
    base = ["serve", "--conf", src("conf", "dispatch.env"), "--shards",
            src("input", "shards.json"), "--state-dir", tmpdir(), "--listen", "127.0.0.1:0"]
    for var, value, message in [
            ("SHARDGATE_MAX_BODY", "x", 'SHARDGATE_MAX_BODY must be an integer 1..4294967296, '
             'not "x"'),
            ("SHARDGATE_METRICS_OPEN", "yes", 'SHARDGATE_METRICS_OPEN must be 1, true, 0 or '
             'false, not "yes"'),
            ("SHARDGATE_CHECKPOINT_INTERVAL", "1ms", "SHARDGATE_CHECKPOINT_INTERVAL must be a "
             'duration 100ms..1d (e.g. 90s, 12h, 30d), not "1ms"')]:
        r = run_server(base, env=dict(os.environ, **{var: value}))
        eq((r.returncode, r.stderr), (64, "shardgate: %s\n" % message), var)


@case("ops")
def one_log_line_per_request():
    with Server() as s:
        s.post(read(src("input", "changes.json")))
        s.get("/livez")
        assert s.stop() == 0
        log = s.request_log()
        # Lines are written at completion, by whichever worker served the connection.
        eq(sorted((l["method"], l["path"], l["status"], str(l["batch_id"]), l["changes"])
                  for l in log),
           [("GET", "/livez", 200, "None", 0), ("POST", "/v1/batches", 200, "sample-0001", 8)],
           "request log")
        ok(all(set(l) == {"time", "method", "path", "status", "batch_id", "changes",
                          "duration_ms"} for l in log), "log fields")


class NotifySocket:
    """The service manager's end of sd_notify: a datagram socket NOTIFY_SOCKET names."""

    def __init__(self):
        self.path = os.path.join(tmpdir(), "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def until(self, message, timeout=10.0):
        """Every datagram up to and including the first that is `message`."""
        got, end = [], time.monotonic() + timeout
        while time.monotonic() < end:
            self.sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                got.append(self.sock.recv(4096).decode())
            except socket.timeout:
                break
            if got[-1] == message:
                return got
        raise AssertionError("no %r within %.0f s; got %r" % (message, timeout, got))


@case("systemd")
def notify_ready_watchdog_and_stopping():
    n = NotifySocket()
    env = {"NOTIFY_SOCKET": n.path, "WATCHDOG_USEC": "400000"}
    s = Server(env=env).start()
    try:
        eq(n.until("READY=1\nSTATUS=serving")[-1], "READY=1\nSTATUS=serving", "first message")
        ok(n.until("WATCHDOG=1", 5)[-1] == "WATCHDOG=1", "watchdog pets every 200 ms")
        # The probe's log line is written when MHD completes it, which may follow the pet.
        wait_until(lambda: any(l["path"] == "/livez" for l in s.request_log()), 5,
                   "the watchdog's own GET /livez in the request log")
        s.proc.send_signal(signal.SIGTERM)
        eq(n.until("STOPPING=1")[-1], "STOPPING=1", "STOPPING on SIGTERM")
        eq(s.stop(), 0, "exit after the drain")
    finally:
        s.kill()


@case("systemd")
def no_watchdog_unless_asked():
    n = NotifySocket()
    with Server(env={"NOTIFY_SOCKET": n.path}) as s:
        eq(n.until("READY=1\nSTATUS=serving"), ["READY=1\nSTATUS=serving"], "only READY")
        time.sleep(0.5)
        n.sock.settimeout(0.2)
        try:
            extra = n.sock.recv(4096).decode()
        except socket.timeout:
            extra = None
        eq(extra, None, "no WATCHDOG without WATCHDOG_USEC")
        eq([l["path"] for l in s.request_log()], [], "no self-probes without a watchdog")


class Server6(Server):
    """The gateway on the IPv6 loopback, [::1]."""

    def command(self):
        return super().command() + ["--listen", "[::1]:0"]

    def connect(self, timeout=30):
        return http.client.HTTPConnection("::1", self.port, timeout=timeout)


@case("ipv6")
def listens_on_ipv6_loopback():
    with Server6() as s:
        eq(s.events("listening")[0]["address"], "[::1]:%d" % s.port, "listening event")
        r = s.post(read(src("input", "changes.json")))
        eq((r.status, r.body), (200, read(src(GOLDEN))), "golden receipt over [::1]")


@case("ipv6")
def bad_listen_addresses_are_usage_errors():
    for listen, message in [
            ("[::1:8080", '--listen: "[::1:8080" is not HOST:PORT or [HOST]:PORT (port 0..65535)'),
            ("[127.0.0.1]:8080", '--listen: "127.0.0.1" is not an IPv6 address'),
            ("::1:8080", '--listen: "::1" is not an IPv4 address'),
            ("[::1]:65536", '--listen: "[::1]:65536" is not HOST:PORT or [HOST]:PORT '
             '(port 0..65535)')]:
        p = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--state-dir", tmpdir(), "--listen", listen])
        eq((p.returncode, p.stderr), (64, "shardgate: %s\n" % message), "--listen " + listen)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
