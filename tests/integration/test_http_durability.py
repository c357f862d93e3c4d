"""Idempotency and the journal: replays, reuse, in-flight, restarts, torn tails, corrupt lines,
a full disk, kill -9 under load, concurrency, and the SIGTERM drain."""

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import (Server, batch, case, eq, journal_lines, journal_receipts, main, ok, read,
                    journal_totals, run_server, src, tmpdir, write)


@case("idempotency")
def replay_is_byte_equal_with_header():
    with Server() as s:
        first = s.post(batch("r1", n=5))
        eq(first.status, 200, "first post")
        # Same content, other whitespace and key order: same fingerprint.
        doc = batch("r1", n=5)
        text = json.dumps({"changes": [{"size": c["size"], "key": c["key"], "id": c["id"]}
                                       for c in doc["changes"]], "batch_id": "r1"}, indent=3)
        again = s.post(text.encode(), headers={"Idempotency-Key": "r1"})
        eq(again.status, 200, "replay status")
        eq(again.body, first.body, "replay bytes")
        eq(again.headers.get("idempotent-replayed"), "true", "replay header")
        eq(len(journal_receipts(s.state_dir)), 1, "one record")
        eq(s.shard_totals(), journal_totals(s), "replay adds no load")


@case("idempotency")
def same_id_other_content_is_422():
    with Server() as s:
        eq(s.post(batch("m1", n=2)).status, 200, "first")
        r = s.post(batch("m1", n=3))
        eq((r.status, r.error()), (422, ("batch_id_reused", "batch_id")), "reuse")
        eq(len(journal_receipts(s.state_dir)), 1, "reuse journals nothing")


@case("idempotency")
def in_flight_is_409():
    with Server(env={"SHARDGATE_TEST_COMMIT_DELAY_MS": "1500"}) as s:
        results = {}
        t = threading.Thread(target=lambda: results.update(first=s.post(batch("f1"))))
        t.start()
        time.sleep(0.5)
        r = s.post(batch("f1"))
        eq((r.status, r.error()), (409, ("in_flight", "batch_id")), "second while in flight")
        r = s.post(batch("f1", n=4))
        eq(r.status, 409, "other content while in flight")
        eq(s.get("/v1/batches/f1").status, 404, "not stored until durable")
        t.join(30)
        eq(results["first"].status, 200, "first completes")
        eq(s.post(batch("f1")).headers.get("idempotent-replayed"), "true", "then a replay")


@case("restart")
def replay_survives_restart_and_totals_do_not_double():
    d = tmpdir()
    with Server(state_dir=d) as s:
        first = s.post(read(src("input", "changes.json")))
        other = s.post(batch("x1", n=20))
        eq((first.status, other.status), (200, 200), "posts")
        before = s.shard_totals()
        eq(s.stop(), 0, "clean stop")
    size = os.path.getsize(os.path.join(d, "journal.jsonl"))
    with Server(state_dir=d) as s:
        eq(os.path.getsize(os.path.join(d, "journal.jsonl")), size, "no new epoch on restart")
        eq(s.shard_totals(), before, "totals rebuilt by replay")
        r = s.post(read(src("input", "changes.json")))
        eq((r.status, r.body), (200, first.body), "replay after restart")
        eq(r.headers.get("idempotent-replayed"), "true", "header after restart")
        eq(s.post(batch("x1", n=21)).error()[0], "batch_id_reused", "reuse after restart")
        eq(s.get("/v1/batches/x1").body, other.body, "stored receipt after restart")
        eq(s.shard_totals(), before, "still no double count")
        eq(s.shard_totals(), journal_totals(s), "totals = sums over the journal")
        eq(s.events("journal_replayed")[0]["receipts"], 2, "replayed 2")


@case("restart")
def odd_keys_survive_restart():
    """Keys with \\u0000, control characters and UTF-8 are journaled and replayed byte-exact."""
    d = tmpdir()
    doc = {"batch_id": "odd", "changes": [
        {"id": "nul\u0000id", "key": "k\u0000ey", "size": 1},
        {"id": "ctl", "key": "tab\there\u001f", "size": 2},
        {"id": "utf8", "key": "clé-日本", "size": 3}]}
    with Server(state_dir=d) as s:
        first = s.post(json.dumps(doc, ensure_ascii=False).encode())
        eq(first.status, 200, "post")
        eq(s.stop(), 0, "stop")
    with Server(state_dir=d) as s:
        r = s.post(json.dumps(doc).encode())
        eq((r.status, r.body), (200, first.body), "replay after restart, other escaping")
        eq(r.headers.get("idempotent-replayed"), "true", "replay header")


@case("restart")
def new_membership_writes_a_new_epoch():
    d = tmpdir()
    with Server(state_dir=d) as s:
        eq(s.post(batch("e1")).status, 200, "post")
    t = tmpdir()
    shards = json.loads(read(src("input", "shards.json")))
    shards["shards"][3]["state"] = "online"
    path = write(os.path.join(t, "shards.json"), json.dumps(shards))
    with Server(state_dir=d, shards=path) as s:
        eq(s.get("/v1/batches/e1").status, 200, "older epoch's receipt still served")
        eq(s.post(batch("e2")).status, 200, "post on the new ring")
    types = [json.loads(l)["type"] for l in journal_lines(d)]
    eq(types, ["epoch", "receipt", "epoch", "receipt"], "record types")
    epoch = json.loads(journal_lines(d)[2])
    eq([x["id"] for x in epoch["shards"]], ["shard-a", "shard-b", "shard-c", "shard-d", "shard-e"],
       "epoch shards in id order")
    ok(all("weight" in x for x in epoch["shards"]), "weight always written")


@case("journal_repair")
def torn_tail_is_repaired():
    d = tmpdir()
    with Server(state_dir=d) as s:
        eq(s.post(batch("t1")).status, 200, "post")
        eq(s.stop(), 0, "stop")
    path = os.path.join(d, "journal.jsonl")
    good = read(path)
    # Only an unterminated last line is torn; a complete bad last line refuses the start
    # (tests/reliability/test_hostile_state.py, complete_bad_last_line_is_not_forgiven).
    for n, torn in enumerate([b'{"type":"receipt","seq":2,"finger', b'{"type":"rec']):
        write(path, good + torn, "wb")
        with Server(state_dir=d) as s:
            eq(read(path), good, "journal ends at the last good line")
            eq(read(path + ".broken")[-len(torn):], torn, "torn bytes kept")
            ev = s.events("journal_torn_tail_repaired")
            eq((len(ev), ev[0]["line"], ev[0]["bytes"]), (1, good.count(b"\n") + 1, len(torn)),
               "repair logged")
            eq(s.get("/readyz").status, 200, "ready")
            eq(s.post(batch("t2-%d" % n)).status, 200, "serves after the repair")
            eq(s.stop(), 0, "stop")
        good = read(path)
    eq([r["seq"] for r in journal_receipts(d)], [1, 2, 3], "seq continues")


@case("journal_repair")
def corrupt_middle_line_refuses_start():
    d = tmpdir()
    with Server(state_dir=d) as s:
        for i in range(3):
            eq(s.post(batch("c%d" % i)).status, 200, "post")
    path = os.path.join(d, "journal.jsonl")
    lines = read(path).split(b"\n")[:-1]
    recs = journal_lines(d)
    args = ["serve", "--conf", src("conf", "dispatch.env"), "--shards",
            src("input", "shards.json"), "--state-dir", d, "--listen", "127.0.0.1:0"]
    # Edits with their checksum made right (docs/journal.md §2.1) meet the record rules.
    crc = sgtest.with_crc
    bad_cases = [
        (b"{not json", "no checksum: the line does not end with its crc32 member"),
        (crc(b"{not json}"), "not JSON"),
        (crc(recs[2].replace(b'"seq":2', b'"seq":7')), "seq must be 2"),
        (crc(recs[2].replace(b'"receipt":{', b'"receipt": {')), "canonical form"),
        (crc(recs[2][:-1] + b' }'), "canonical form"),
        (lines[1], "seq must be 2"),
        (lines[2].replace(b'"seq":2', b'"seq":7'), "checksum mismatch"),
    ]
    for bad, what in bad_cases:
        write(path, b"\n".join(lines[:2] + [bad] + lines[3:]) + b"\n", "wb")
        before = read(path)
        r = run_server(args)
        eq(r.returncode, 3, "exit for a bad line (%s)" % what)
        expected = "journal: %s:3: " % path
        ok(r.stderr.startswith(expected) and what in r.stderr,
           "message %r starts with %r and says %r" % (r.stderr, expected, what))
        eq(read(path), before, "a refused journal is left untouched")
        ok(not os.path.exists(path + ".broken"), "no repair of a middle line")


def limit_file_size(size):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return apply


@case("full_disk")
def full_disk_answers_503_and_leaves_journal_intact():
    d = tmpdir()
    with Server(state_dir=d) as s:
        eq(s.post(batch("d1")).status, 200, "post")
    path = os.path.join(d, "journal.jsonl")
    before = read(path)
    with Server(state_dir=d, preexec_fn=limit_file_size(len(before) + 100)) as s:
        eq(s.get("/readyz").status, 200, "ready before the failure")
        r = s.post(batch("d2", n=50))
        eq((r.status, r.error()[0]), (503, "journal_unavailable"), "write failure")
        ok("File too large" in r.json()["error"]["message"], "names the cause: %r" % r.body)
        eq(read(path), before, "journal byte-identical: no partial line")
        r = s.get("/readyz")
        eq((r.status, r.json()["checks"]["journal"]), (503, "unavailable"), "unready after")
        eq(s.post(batch("d3")).error()[0], "journal_unavailable", "stays unavailable")
        eq(s.post(batch("d1")).status, 200, "replays still served")
        eq(s.get("/v1/batches/d2").status, 404, "the failed batch is not stored")
        eq(s.shard_totals(), journal_totals(s), "no load for the failed batch")
    with Server(state_dir=d) as s:
        eq(s.post(batch("d2", n=50)).status, 200, "after an operator restart")


def poster(s, prefix, acked, stop):
    i = 0
    conn = s.connect(timeout=10)
    while not stop.is_set():
        bid = "%s-%d" % (prefix, i)
        try:
            r = s.post(batch(bid, n=10), conn=conn)
            if r.status == 200:
                acked.append((bid, r.body))
        except Exception:
            return
        i += 1


@case("kill9")
def kill9_under_load_loses_no_acknowledged_batch():
    d = tmpdir()
    acked = []
    stop = threading.Event()
    with Server(state_dir=d) as s:
        threads = [threading.Thread(target=poster, args=(s, "k%d" % n, acked, stop))
                   for n in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        s.proc.kill()
        s.proc.wait(10)
        stop.set()
        for t in threads:
            t.join(20)
    ok(len(acked) > 0, "some batches were acknowledged before the kill")
    with Server(state_dir=d) as s:
        ids = [r["receipt"]["batch_id"] for r in journal_receipts(d)]
        eq(len(ids), len(set(ids)), "every batch id journaled at most once")
        stored = {r["receipt"]["batch_id"] for r in journal_receipts(d)}
        for bid, body in acked:
            ok(bid in stored, "acknowledged %s is in the journal" % bid)
            eq(s.get("/v1/batches/" + bid).body, body, "stored receipt of " + bid)
        eq([r["seq"] for r in journal_receipts(d)], list(range(1, len(ids) + 1)), "seq")
        eq(s.shard_totals(), journal_totals(s), "totals = sums over the journal")


@case("concurrency")
def concurrent_clients_totals_exact():
    clients, per_client = 64, 5
    with Server(args=["--threads", "2"]) as s:
        errors, bodies = [], {}

        def client(n):
            conn = s.connect()
            for k in range(per_client):
                bid = "cc%d-%d" % (n, k)
                try:
                    r = s.post(batch(bid, n=7, size=n % 3), conn=conn)
                    if r.status != 200:
                        errors.append((bid, r.status, r.body))
                    bodies[bid] = r.body
                except Exception as e:
                    errors.append((bid, repr(e)))
            conn.close()

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        eq(errors, [], "errors")
        recs = journal_receipts(s.state_dir)
        eq(len(recs), clients * per_client, "records")
        eq([r["seq"] for r in recs], list(range(1, clients * per_client + 1)), "seq order")
        expected = {}
        for body in bodies.values():
            for sid, x in json.loads(body)["shards"].items():
                t = expected.setdefault(sid, [0, 0])
                t[0] += x["load"]
                t[1] += x["received"]
        eq(s.shard_totals(), expected, "totals = sums over the answered receipts")
        eq(s.shard_totals(), journal_totals(s), "totals = sums over the journal")
        m = s.get("/metrics").body.decode()
        ok('shardgate_batches_total{result="accepted"} %d' % (clients * per_client) in m,
           "metrics count every batch")


def refused(port):
    """True when a connection to the port is refused (nothing listens). A connect that meets the
    listening socket's close halfway through its handshake is reset rather than refused: nothing
    accepted it either."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return False
    except (ConnectionRefusedError, ConnectionResetError):
        return True


@case("concurrency")
def threads_are_the_workers_asked_for():
    """--threads N runs N HTTP workers (libmicrohttpd names each thread MHD-worker). A worker
    names itself once it runs, which may be after the server says it listens: the count is
    waited for, and must then be exactly N."""
    def workers(s):
        task = "/proc/%d/task" % s.proc.pid
        return [read(os.path.join(task, t, "comm"), "r").strip()
                for t in os.listdir(task)].count("MHD-worker")

    for n in (3, 5):  # 1 runs without a pool, its one thread named otherwise
        with Server(args=["--threads", str(n)]) as s:
            sgtest.wait_until(lambda: workers(s) >= n, 10, "%d workers named" % n)
            time.sleep(0.2)  # not waited on: it only gives extra workers, if any, time to show
            eq(workers(s), n, "--threads %d" % n)


@case("drain")
def sigterm_drains_in_flight_requests():
    """The listening socket closes first (a new connection is refused while a request is still
    in flight), then the request in flight is answered, then the process exits 0."""
    with Server(env={"SHARDGATE_TEST_COMMIT_DELAY_MS": "2000"}) as s:
        results = {}
        t = threading.Thread(target=lambda: results.update(r=s.post(batch("g1"))))
        t.start()
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        sgtest.wait_until(lambda: refused(s.port), 20, "new connections refused")
        ok("r" not in results, "refused while the request was in flight (its commit waits 2 s)")
        eq(s.stop(signal.SIGTERM), 0, "exit 0 after the drain")
        t.join(20)
        eq(results["r"].status, 200, "the request in flight got its receipt")
        eq([r["receipt"]["batch_id"] for r in journal_receipts(s.state_dir)], ["g1"], "journaled")
        ok(s.events("drained") and s.events("stopped"), "drain logged")


@case("drain")
def the_drain_never_quiesces_the_daemon():
    """libmicrohttpd 0.9.75's MHD_quiesce_daemon races its epoll workers and can abort the
    process at SIGTERM (docs/decisions.md §19): the gateway closes its own listening socket."""
    r = subprocess.run(["nm", "-D", "--undefined-only", sgtest.BIN], capture_output=True,
                       text=True, check=True)
    eq([l.split()[-1] for l in r.stdout.splitlines() if "MHD_quiesce" in l], [],
       "libmicrohttpd's quiesce is not called")
    ok("MHD_add_connection" in r.stdout, "connections are handed to libmicrohttpd")


@case("drain")
def a_port_in_use_is_named_with_its_error():
    """The port is bound before anything is read or written (docs/api.md, exit codes): the
    error is the only line, and no state dir is made."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    address = "127.0.0.1:%d" % busy.getsockname()[1]
    state = os.path.join(tmpdir(), "state")
    try:
        r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--state-dir", state, "--listen", address])
    finally:
        busy.close()
    eq((r.returncode, r.stderr),
       (1, "shardgate: cannot listen on %s: bind: Address already in use\n" % address),
       "exit 1, the error named and nothing else said")
    ok(not os.path.exists(state), "no state dir made")


@case("drain")
def a_starting_server_refuses_connections_until_it_serves():
    """The port is bound at once but listened on only once the server serves: while its store
    is being opened (here a database that accepts and never answers), a connection is refused
    at once, not left waiting unanswered in a backlog (what a proxy's health check would do)."""
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(1)
    port = sgtest.free_port()
    p = subprocess.Popen([sgtest.BIN, "serve", "--conf", src("conf", "dispatch.env"), "--shards",
                          src("input", "shards.json"), "--listen", "127.0.0.1:%d" % port,
                          "--store", "postgres://x@127.0.0.1:%d/x" % blackhole.getsockname()[1]],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        blackhole.settimeout(30)
        held, _ = blackhole.accept()  # the port was bound before the store is opened
        ok(refused(port), "a connection while the store opens is refused")
        eq(p.poll(), None, "the server is still starting")
        held.close()
    finally:
        p.kill()
        p.wait()
        blackhole.close()


@case("drain")
def journal_in_use_refuses_second_server():
    d = tmpdir()
    with Server(state_dir=d):
        r = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--state-dir", d, "--listen",
                        "127.0.0.1:0"])
        eq(r.returncode, 75, "second server on one journal: the state dir is in use")
        ok("in use" in r.stderr, r.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
