#!/usr/bin/env python3
"""health_gateway_journal: journals written by the real gateway (`shardgate serve`) across a
membership change pass `shardgate-health check`; the same journal with one receipt altered
fails. Both servers run on ephemeral 127.0.0.1 ports and are always killed."""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client"))
from sgtest import (Failures, check_journal, free_port, golden_shards, parse_line, tmpdir, write, CONF)  # noqa: E402
import ketama  # noqa: E402
from shardgate.contract import load_contract, load_shards  # noqa: E402
from shardgate.ring import make_ring  # noqa: E402

HEALTH, GATEWAY = sys.argv[1], sys.argv[2]
F = Failures()
T = tmpdir()
STATE = os.path.join(T, "state")
os.makedirs(STATE)


def post(port, batch):
    req = urllib.request.Request("http://127.0.0.1:%d/v1/batches" % port,
                                 data=json.dumps(batch).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
        return r.read().decode()


def run_gateway(shards_path, batches, conf=CONF, state=STATE, reads=None):
    """Posts the batches to a gateway on a fresh port, then GETs each path of `reads` into it
    (path -> body); returns the POSTs' statuses."""
    port = free_port()
    proc = subprocess.Popen([GATEWAY, "serve", "--conf", conf, "--shards", shards_path,
                             "--state-dir", state, "--listen", "127.0.0.1:%d" % port],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    codes = []
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/livez" % port, timeout=2):
                    break
            except OSError:
                time.sleep(0.05)
        codes = [post(port, b) for b in batches]
        for path in reads or {}:
            reads[path] = get(port, path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return codes


def batch(name, n):
    return {"batch_id": name, "changes": [{"id": "c%d" % i, "key": "%s/k\u00e9\t%d" % (name, i),
                                           "size": i % 6} for i in range(n)]}


sh1 = write(os.path.join(T, "shards1.json"), json.dumps({"shards": golden_shards()}))
shards2 = golden_shards()
shards2[3]["state"] = "online"  # shard-d joins
shards2[0]["weight"] = 2
sh2 = write(os.path.join(T, "shards2.json"), json.dumps({"shards": shards2}))

codes = run_gateway(sh1, [batch("one-%d" % i, 20 + i) for i in range(5)])
codes += run_gateway(sh2, [batch("two-%d" % i, 30 + i) for i in range(5)])
F.check(codes == [200] * 10, "gateway accepted 10 batches over two memberships", str(codes))

journal = os.path.join(STATE, "journal.jsonl")
rc, out, err = check_journal(HEALTH, journal, shards=sh2)
doc = parse_line(out)
F.check(rc == 0 and doc is not None and doc["receipts"] == 10 and doc["status"] == "pass",
        "real gateway journal over two epochs passes", "rc=%d out=%s err=%s" % (rc, out, err))
rc, out, err = check_journal(HEALTH, journal, shards=sh1)
F.check(rc == 2 and "epoch_current: journal: epoch@line" in out,
        "judged with the old shards file: the latest epoch differs", out[:500])

lines = open(journal, encoding="utf-8").read().splitlines()
idx = next(i for i, l in enumerate(lines) if '"batch_id":"one-2"' in l)
rec = json.loads(lines[idx])
del rec["crc32"]  # an edit made whole: its checksum made right again (docs/journal.md §2.1)
rec["receipt"]["shards"]["shard-a"]["load"] += 1
body = ketama.dumps(rec)[:-1]
good_line, lines[idx] = lines[idx], body + ',"crc32":"%08x"}' % zlib.crc32(body.encode())
bad = write(os.path.join(T, "bad.jsonl"), "\n".join(lines) + "\n")
rc, out, err = check_journal(HEALTH, bad, shards=sh2)
doc = parse_line(out) or {"issues": []}
F.check(rc == 2 and any(i.startswith("shard_load: one-2: shards.shard-a.load: expected ")
                        for i in doc["issues"]), "one altered load in a gateway journal fails", out[:500])
lines[idx] = good_line.replace('"batch_id":"one-2"', '"batch_id":"one-9"')
bad = write(os.path.join(T, "flipped.jsonl"), "\n".join(lines) + "\n")
rc, out, err = check_journal(HEALTH, bad, shards=sh2)
doc = parse_line(out) or {"issues": []}
F.check(rc == 2 and doc["issues"][:1] == ["journal_line: line %d: crc32: checksum mismatch: the "
                                          "line's crc32 is not that of its bytes" % (idx + 1)],
        "one byte changed in a gateway journal: its checksum fails", out[:500])


def table_reads(name, conf, size, reads):
    """What a table gateway shows of its table, against the probe's own table: the ring's slots,
    a lookup, shardgate_ring_info and each shard's shardgate_ring_share_ratio (slots owned over
    the slots), and the drawing's caption (docs/api.md §5, §6, §8; docs/tools.md §1.3)."""
    ring = make_ring(load_contract(conf), load_shards(sh2))
    want = [ring.online[i]["id"] for i in ring.table]
    doc = json.loads(reads["/v1/ring?points=1"])
    F.check(doc["slots"] == want and doc["table"] == size and doc["algorithm"] == name,
            "%s: /v1/ring?points=1 lists the probe's slots" % name, str(doc)[:300])
    slot, shard = ring.lookup(b"order:1001")
    F.check(json.loads(reads["/v1/lookup?key=order%3A1001"]) == {
        "key": "order:1001", "slot": slot, "shard": shard, "reason": "table"},
        "%s: /v1/lookup is the probe's placement" % name, reads["/v1/lookup?key=order%3A1001"])
    metrics = reads["/metrics"]
    info = 'shardgate_ring_info{id="%s",algorithm="%s",hash="%s",table="%d"} 1' % (
        ring.ring_id, name, ring.algorithm, size)
    F.check(info in metrics.splitlines(), "%s: %s" % (name, info), metrics[:200])
    for s in ring.online:
        line = 'shardgate_ring_share_ratio{shard="%s"} %.9f' % (s["id"], want.count(s["id"]) / size)
        F.check(line in metrics.splitlines(), "%s: %s" % (name, line), metrics[:200])
    caption = ">%s %s, %d slots, %d online shards, epoch " % (name, ring.ring_id[:12], size,
                                                              len(ring.online))
    F.check(caption in reads["/v1/ring?format=svg"], "%s: the drawing's caption %r" % (name, caption),
            reads["/v1/ring?format=svg"][:400])


def table_journal(name, contract_text, size):
    """A gateway on a table (docs/contract.md §11, §10) over the same two memberships: health
    rebuilds both tables and passes the journal; the probe agrees; one slot altered fails."""
    conf = write(os.path.join(T, name + ".env"), contract_text)
    state = os.path.join(T, name + "-state")
    os.makedirs(state)
    codes = run_gateway(sh1, [batch("m-one-%d" % i, 5 + i) for i in range(3)], conf, state)
    reads = dict.fromkeys(["/metrics", "/v1/ring?points=1", "/v1/ring?format=svg",
                           "/v1/lookup?key=order%3A1001"])
    codes += run_gateway(sh2, [batch("m-two-%d" % i, 6 + i) for i in range(3)], conf, state,
                         reads)
    F.check(codes == [200] * 6, "gateway accepted 6 batches on two %s tables" % name, str(codes))
    table_reads(name, conf, size, reads)
    journal = os.path.join(state, "journal.jsonl")
    rc, out, err = check_journal(HEALTH, journal, conf=conf, shards=sh2)
    doc = parse_line(out)
    F.check(rc == 0 and doc is not None and doc["receipts"] == 6 and doc["status"] == "pass",
            "a %s gateway journal over two epochs passes" % name,
            "rc=%d out=%s err=%s" % (rc, out, err))
    probe = subprocess.run([sys.executable, os.path.join(os.path.dirname(CONF), "..", "client",
                                                         "probe.py"), "journal", "--state-dir",
                            state], capture_output=True, text=True, timeout=60)
    F.check(probe.returncode == 0 and '"result":"ok"' in probe.stdout
            and '"receipts":6' in probe.stdout,
            "the probe verifies the %s journal" % name, probe.stdout[:300] + probe.stderr[:300])
    lines = open(journal, encoding="utf-8").read().splitlines()
    idx = next(i for i, l in enumerate(lines) if '"batch_id":"m-two-1"' in l)
    rec = json.loads(lines[idx])
    del rec["crc32"]
    slot = rec["receipt"]["placements"][2]["slot"]
    rec["receipt"]["placements"][2]["slot"] = (slot + 1) % size
    body = ketama.dumps(rec)[:-1]
    lines[idx] = body + ',"crc32":"%08x"}' % zlib.crc32(body.encode())
    bad = write(os.path.join(T, name + "-bad.jsonl"), "\n".join(lines) + "\n")
    rc, out, err = check_journal(HEALTH, bad, conf=conf, shards=sh2)
    doc = parse_line(out) or {"issues": []}
    want = "placement_point: m-two-1: c2 slot: expected %d, got %d" % (slot, (slot + 1) % size)
    F.check(rc == 2 and want in doc["issues"], "one slot altered in a %s journal fails" % name,
            out[:500])


table_journal("maglev", "DISPATCH_HASH_RING=maglev\nDISPATCH_MAGLEV_TABLE=251\n"
              "DISPATCH_RING_HASH=md5\nDISPATCH_CAPACITY_POLICY=reject\n", 251)
table_journal("jump", "DISPATCH_HASH_RING=jump\nDISPATCH_JUMP_SLOTS=1000\n"
              "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=report\n", 1000)
F.exit()
