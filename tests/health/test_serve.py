#!/usr/bin/env python3
"""health_serve: the real server on an ephemeral 127.0.0.1 port: /livez, /healthz 200 on a
clean journal, 503 naming the criterion after a tampered line is appended, truncation and
rotation re-read from 0, a missing journal is 503, SIGTERM exits 0. The server is always
killed, and every wait is bounded."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Failures, changes, deep, free_port, golden_shards, journal_text, tmpdir, write,
                    CONF, SHARDS)  # noqa: E402
import ketama  # noqa: E402

BIN = sys.argv[1]
F = Failures()
T = tmpdir()
RING = ketama.Ring("sha1", 160, golden_shards())
C = ketama.contract()


def get(port, path, method="GET"):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def records(n, start=1, tag="s"):
    return [ketama.receipt_record(start + i, ketama.receipt(RING, "%s-%03d" % (tag, start + i),
                                                            changes(4, tag, start + i)))
            for i in range(n)]


journal = os.path.join(T, "journal.jsonl")
epoch = ketama.epoch_record(RING, C)
write(journal, journal_text([epoch] + records(10)))

port = free_port()
proc = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:%d" % port, "--conf", CONF,
                         "--shards", SHARDS, "--journal", journal],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
try:
    deadline = time.time() + 10
    up = False
    while time.time() < deadline and not up:
        try:
            up = get(port, "/livez")[0] == 200
        except OSError:
            time.sleep(0.05)
    F.check(up, "server answers /livez within 10s")

    st, ctype, body = get(port, "/healthz")
    doc = json.loads(body)
    want_checks = 10 * (14 + 6 * 4 + 6 * 5 + 5) + 5 + 1  # one legacy epoch record, epoch_current
    total = sum(v[0]["observedValue"] for k, v in doc["checks"].items()
                if k not in ("checks_ran", "receipts_verified", "placements_verified"))
    F.check(st == 200 and ctype == "application/health+json" and doc["status"] == "pass",
            "clean journal: /healthz 200 application/health+json pass", "%s %s %s" % (st, ctype, body[:500]))
    F.check(doc["checks"]["receipts_verified"][0]["observedValue"] == 10 and
            doc["checks"]["placements_verified"][0]["observedValue"] == 40 and
            doc["checks"]["checks_ran"][0]["observedValue"] == want_checks and total == want_checks,
            "checks: receipts 10, placements 40, %d evaluations by criterion" % want_checks, body[:800])
    F.check(all(isinstance(v, list) and "observedValue" in v[0] and v[0]["status"] in ("pass", "fail")
                for v in doc["checks"].values()) and "placement_shard" in doc["checks"],
            "checks keyed by criterion, arrays of {observedValue, status}")

    # append more good receipts: only new lines are verified (counts grow by exactly them)
    with open(journal, "a") as f:
        f.write(journal_text(records(2, start=11)))
    st, _, body = get(port, "/healthz")
    doc = json.loads(body)
    F.check(st == 200 and doc["checks"]["receipts_verified"][0]["observedValue"] == 12,
            "appended lines are verified incrementally (12 receipts, not 22)", body[:300])

    # a half-written line is left for later, not judged
    bad = records(1, start=13)[0]
    p = bad["receipt"]["placements"][1]
    right = p["shard"]
    p["shard"] = "shard-d"
    line = ketama.dumps(bad) + "\n"
    with open(journal, "a") as f:
        f.write(line[:40])
    st, _, body = get(port, "/healthz")
    F.check(st == 200, "an unterminated last line is not judged yet", body[:300])
    with open(journal, "a") as f:
        f.write(line[40:])
    st, ctype, body = get(port, "/healthz")
    doc = json.loads(body)
    issue = "placement_shard: s-013: %s shard: expected %s, got shard-d" % (p["id"], right)
    F.check(st == 503 and doc["status"] == "fail" and issue in doc["issues"] and
            doc["checks"]["placement_shard"][0]["status"] == "fail" and
            "placement_online: s-013: %s shard: shard-d is offline, not online" % p["id"] in doc["issues"],
            "tampered line appended: 503 naming it", "%s %s" % (st, body[:1500]))
    st, _, body = get(port, "/healthz")
    F.check(st == 503 and body.count(issue) == 1, "the issue stays, reported once", body[:300])

    # truncation: a shorter journal is re-read from 0
    write(journal, journal_text([epoch] + records(3)))
    st, _, body = get(port, "/healthz")
    doc = json.loads(body)
    F.check(st == 200 and doc["checks"]["receipts_verified"][0]["observedValue"] == 3,
            "truncated journal is re-read from 0", body[:300])

    # rewritten in place to the same or larger size: the bytes before the offset changed
    bad3 = records(3)
    bad3[1]["receipt"]["ok"] = False
    write(journal, journal_text([epoch] + bad3 + records(2, start=4)))
    st, _, body = get(port, "/healthz")
    F.check(st == 503 and "ok: s-002: ok: expected true, got false" in body,
            "journal rewritten in place is re-read", body[:500])

    # rotation: a new file (other inode) under the name
    tmp = journal + ".new"
    write(tmp, journal_text([epoch] + records(1)))
    os.rename(tmp, journal)
    st, _, body = get(port, "/healthz")
    F.check(st == 200 and json.loads(body)["checks"]["receipts_verified"][0]["observedValue"] == 1,
            "rotated journal is read from 0", body[:300])

    # a missing journal cannot be judged
    os.unlink(journal)
    st, ctype, body = get(port, "/healthz")
    F.check(st == 503 and json.loads(body)["status"] == "fail" and
            "input: journal: %s: cannot open: No such file or directory" % journal in body,
            "missing journal: 503", "%s %s" % (st, body[:300]))
    st, _, _ = get(port, "/livez")
    F.check(st == 200, "/livez stays 200 while serving")

    # latest epoch that is not the operator's membership
    sh_d = deep(golden_shards())
    sh_d[3]["state"] = "online"
    rd = ketama.Ring("sha1", 160, sh_d)
    write(journal, journal_text([ketama.epoch_record(rd, C)]))
    st, _, body = get(port, "/healthz")
    F.check(st == 503 and "epoch_current: journal: epoch@line 1 shards.shard-d.state: journal "
            "online, shards file offline" in body, "foreign membership in the journal: 503", body[:500])

    st, _, _ = get(port, "/nope")
    F.check(st == 404, "unknown path: 404")
    st, _, _ = get(port, "/healthz", method="POST")
    F.check(st == 405, "POST /healthz: 405")

    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        rc = None
    F.check(rc == 0, "SIGTERM: clean exit 0", "rc=%r" % rc)
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)
    err = proc.stderr.read().decode()
    if F.failed:
        print("server stderr:", err[-3000:])

# the emptied-criteria hook turns /healthz red, never green
write(journal, journal_text([epoch] + records(2)))
port = free_port()
env = dict(os.environ, SHARDGATE_HEALTH_TEST_EMPTY_CRITERIA="1")
proc = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:%d" % port, "--conf", CONF,
                         "--shards", SHARDS, "--journal", journal], env=env,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    deadline = time.time() + 10
    st = None
    while time.time() < deadline and st is None:
        try:
            st, _, body = get(port, "/healthz")
        except OSError:
            time.sleep(0.05)
    F.check(st == 503 and "no checks ran" in body, "emptied criteria: /healthz 503 'no checks ran'",
            "%s" % st)
finally:
    proc.kill()
    proc.wait(timeout=10)

F.exit()
