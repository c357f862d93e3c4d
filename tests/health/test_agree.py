#!/usr/bin/env python3
"""health_agree_*: state dirs written by the real `shardgate serve` that the three verifiers
judge alike — `shardgate-health check`, `shardgate journal verify` and `probe.py journal`
(docs/journal.md §7, §8; docs/operations.md §1.6; docs/tools.md §2) — all passing on the
gateway's own files, all red on one checkpoint total made wrong (its sha256 made right again):

- an epoch id that recurs (A -> B -> A) while a request dispatched on the first A is in flight,
  so its receipt lands after the second A's record, across two checkpoints (docs/decisions.md
  §4: its totals count under the second A);
- a one-file state dir of before segments (tests/golden/legacy-state) upgraded with small
  segments and checkpoints: its legacy epoch record has epoch_seq 1 (docs/journal.md §2).

usage: test_agree.py SHARDGATE_BINARY HEALTH_BINARY SOURCE_DIR [CASE... | --group GROUP]
"""
import hashlib
import json
import os
import shutil
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import (Server, batch, case, eq, health_check, journal_lines, main, ok,  # noqa: E402
                    read, run, run_gateway, src, tmpdir, write)

ADMIN = "admin-s3cret"
SMALL = ["--segment-bytes", "65536"]


def checkpoints(d):
    return sorted(f for f in os.listdir(d) if f.startswith("checkpoint-"))


def sealed(d):
    return sorted(f for f in os.listdir(d) if f.startswith("journal-"))


def checkpoint_doc(d, name):
    return json.loads(read(os.path.join(d, name)))


def probe_journal(d):
    r = run([sys.executable, src("client", "probe.py"), "journal", "--state-dir", d])
    return r.returncode, json.loads(r.stdout) if r.stdout else None, r.stderr


def journal_verify(d):
    r = run_gateway("journal", "verify", "--state-dir", d)
    return r.returncode, r.stdout, r.stderr


def all_three_pass(d, shards, receipts, unchecked=0):
    """health, journal verify and the probe pass the state dir (`unchecked` sealed segments
    written before line checksums); returns health's verdict."""
    verdict = health_check(d, shards=shards)
    eq((verdict["receipts"], verdict["issues"]), (receipts, []), "shardgate-health check")
    n = len(checkpoints(d))
    tail = ("; %d sealed segments without line checksums (each under its seal's sha256)"
            % unchecked if unchecked else "")
    eq(journal_verify(d), (0, "journal: OK: %d sealed segments, %d receipts, %d checkpoints%s\n"
                           % (len(sealed(d)), receipts, n, tail), ""), "shardgate journal verify")
    rc, doc, err = probe_journal(d)
    eq((rc, doc, err), (0, {"result": "ok", "segments": len(sealed(d)) + 1, "receipts": receipts,
                            "checkpoints": n, "mismatches": []}, ""), "probe.py journal")
    return verdict


def break_total(d, name, epoch_seq, shard):
    """Adds 1 to the load of `shard` in totals[epoch_seq] of checkpoint `name` and writes the
    sha256 again, so only the value is wrong. Returns (JSON path, old value)."""
    path = os.path.join(d, name)
    raw = read(path)
    head = raw[:raw.rindex(b',"sha256":"')]
    doc = json.loads(head + b"}")
    i = [e["epoch_seq"] for e in doc["totals"]].index(epoch_seq)
    k = [s["id"] for s in doc["totals"][i]["shards"]].index(shard)
    old = doc["totals"][i]["shards"][k]["load"]
    at = head.index(b'{"epoch_seq":%d,' % epoch_seq, head.index(b'"totals":['))
    at = head.index(b'{"id":"%s","load":%d,' % (shard.encode(), old), at)
    cut = at + len(b'{"id":"%s","load":' % shard.encode())
    head = head[:cut] + str(old + 1).encode() + head[cut + len(str(old)):]
    write(path, head + b',"sha256":"' + hashlib.sha256(head).hexdigest().encode() + b'"}\n',
          "wb")
    return "totals[%d].shards[%d].load" % (i, k), old


def all_three_red(d, shards, name, where, old):
    r = run([sgtest.HEALTH, "check", "--conf", src("conf", "dispatch.env"), "--shards", shards,
             "--journal", os.path.join(d, "journal.jsonl")])
    eq((r.returncode, json.loads(r.stdout)["issues"]),
       (2, ["journal_checkpoint: %s: %s: %d != %d" % (name, where, old + 1, old)]),
       "shardgate-health names the wrong total")
    rc, out, err = journal_verify(d)
    prefix = ("checkpoint: %s/%s: a start from it does not reach the full replay's epochs, "
              "ledger and totals (at byte " % (d, name))
    eq((rc, out, err[:len(prefix)], err.count("\n")), (3, "", prefix, 1),
       "shardgate journal verify refuses the checkpoint")
    ok('"load":%d,' % (old + 1) in err and '"load":%d,' % old in err,
       "the message shows both values: %r" % err)
    rc, doc, err = probe_journal(d)
    eq((rc, doc["result"], doc["mismatches"]),
       (1, "bad", ["%s: %s: expected %d actual %d" % (name, where, old, old + 1)]),
       "probe.py journal names the wrong total")


# ---------------------------------------------------------------- a recurring epoch id

epoch_of = sgtest.epoch_of  # docs/contract.md §7 under conf/dispatch.env


def put(s, doc, if_match):
    r = s.request("PUT", "/v1/admin/membership", body=json.dumps(doc).encode(),
                  headers={"Content-Type": "application/json", "Authorization": "Bearer " + ADMIN,
                           "If-Match": '"%s"' % if_match})
    eq(r.status, 200, "PUT /v1/admin/membership: %r" % r)


def start_post(s, body):
    """A POST whose request exists on the server (the view taken): its headers are sent with
    `Expect: 100-continue` and the server's 100 Continue is read; the body is not sent yet."""
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    sock.sendall(("POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Content-Length: %d\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
                  % len(body)).encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(4096)
        ok(chunk, "the server closed before 100 Continue: %r" % got)
        got += chunk
    eq(got, b"HTTP/1.1 100 Continue\r\n\r\n", "100 Continue: the request has started")
    return sock


def sums(receipts):
    """{shard: [load, received]} over receipts, shards with received 0 left out."""
    out = {}
    for rec in receipts:
        for sid, sh in rec["receipt"]["shards"].items():
            if sh["received"]:
                box = out.setdefault(sid, [0, 0])
                box[0] += sh["load"]
                box[1] += sh["received"]
    return out


def totals_of(doc):
    return {e["epoch_seq"]: {s["id"]: [s["load"], s["received"]] for s in e["shards"]}
            for e in doc["totals"]}


@case("recurring")
def recurring_epoch_with_a_receipt_in_flight():
    base = json.loads(read(src("input", "shards.json")))
    other = json.loads(read(src("input", "shards.json")))
    for sh in other["shards"]:
        if sh["id"] == "shard-d":
            sh["state"] = "online"
    a, b = epoch_of(base), epoch_of(other)
    shards = os.path.join(tmpdir(), "shards.json")
    write(shards, json.dumps(base))
    token = os.path.join(tmpdir(), "admin-token")
    write(token, ADMIN + "\n")
    os.chmod(token, 0o600)
    d = tmpdir()
    args = ["--admin-token-file", token]
    with Server(state_dir=d, shards=shards, args=args) as s:
        eq(s.post(batch("first", n=7)).status, 200, "a batch on the first A")
        body = json.dumps(batch("inflight", n=40)).encode()
        sock = start_post(s, body)  # dispatched on the first A's view
        put(s, other, a)
        put(s, base, b)  # A again: epoch_seq 3, the same epoch id as epoch_seq 1
        status, payload = sgtest.finish_request(sock, body)
        eq((status, json.loads(payload)["epoch"]), (200, a), "the batch in flight names A")
        eq(s.post(batch("second", n=9)).status, 200, "a batch on the second A")
        eq(s.stop(), 0, "clean stop (a checkpoint)")
    with Server(state_dir=d, shards=shards, args=args) as s:
        ok(s.events("checkpoint_used"), "restarted from the checkpoint")
        eq(s.post(batch("third", n=11)).status, 200, "a batch after the restart")
        eq(s.stop(), 0, "clean stop (a second checkpoint)")
    lines = [json.loads(l) for l in journal_lines(d)]
    eq([(l["type"], l.get("epoch_seq", l.get("seq")), l.get("epoch", l.get("receipt", {})
         .get("epoch"))) for l in lines],
       [("epoch", 1, a), ("receipt", 1, a), ("epoch", 2, b), ("epoch", 3, a),
        ("receipt", 2, a), ("receipt", 3, a), ("receipt", 4, a)],
       "the batch in flight lands after the second A's record")
    receipts = [l for l in lines if l["type"] == "receipt"]
    names = checkpoints(d)
    eq(len(names), 2, "two checkpoints after the batch in flight")
    for name, last in zip(names, (3, 4)):
        eq(totals_of(checkpoint_doc(d, name)),
           {1: sums(receipts[:1]), 3: sums(receipts[1:last])},
           "%s: the batch in flight counts under the second A (epoch_seq 3)" % name)
    all_three_pass(d, shards, 4)
    shard = sorted(sums(receipts[1:2]))[0]
    where, old = break_total(d, names[-1], 3, shard)
    all_three_red(d, shards, names[-1], where, old)


# ---------------------------------------------------------------- a legacy state dir upgraded

@case("legacy")
def legacy_state_dir_upgraded_with_small_segments():
    d = tmpdir()
    shutil.copy(src("tests", "golden", "legacy-state", "journal.jsonl"),
                os.path.join(d, "journal.jsonl"))
    with Server(state_dir=d, args=SMALL) as s:
        for i in range(120):
            eq(s.post(batch("u%d" % i, n=20)).status, 200, "post u%d" % i)
        eq(s.stop(), 0, "clean stop")
    with Server(state_dir=d, args=SMALL) as s:
        ok(s.events("checkpoint_used"), "restarted from a checkpoint")
        eq([(e["epoch_seq"], e["source"], e["time"], e["first_seq"])
            for e in s.get("/v1/epochs").json()["epochs"]],
           [(1, "start", None, 1)], "GET /v1/epochs: the legacy record is epoch_seq 1")
        eq(s.post(batch("after", n=20)).status, 200, "post after the restart")
        eq(s.stop(), 0, "clean stop")
    ok(len(sealed(d)) >= 2, "rotated: %r" % sealed(d))
    eq(read(os.path.join(d, sealed(d)[0])).split(b"\n")[0],
       read(src("tests", "golden", "legacy-state", "journal.jsonl")).split(b"\n")[0],
       "the legacy epoch record kept as it is")
    names = checkpoints(d)
    eq(len(names), 2, "two checkpoints")
    for name in names:
        doc = checkpoint_doc(d, name)
        eq([(e["epoch_seq"], e["prev"], e["source"], e["time"], e["first_seq"])
            for e in doc["epochs"]], [(1, None, "start", None, 1)],
           "%s: the legacy epoch, epoch_seq 1" % name)
    verdict = all_three_pass(d, src("input", "shards.json"), 123, unchecked=1)
    ok(verdict["checks"] > 0, "checks ran")
    where, old = break_total(d, names[-1], 1, "shard-a")
    all_three_red(d, src("input", "shards.json"), names[-1], where, old)


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "health", "source")))
