#!/usr/bin/env python3
"""Numbered acceptance checks against the release build: golden values, exit codes, HTTP
statuses, the probe and the health service, replay and restart. Prints PASS=n FAIL=m and
RESULT: OK|BAD."""
import http.client
import json
import os
import signal
import subprocess
import sys
import shutil
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GW, HEALTH = sys.argv[1], sys.argv[2]
CONF, SHARDS = os.path.join(ROOT, "conf/dispatch.env"), os.path.join(ROOT, "input/shards.json")
BATCH = os.path.join(ROOT, "input/changes.json")
GOLDEN = open(os.path.join(ROOT, "tests/golden/sample-0001.receipt.v2.json"), "rb").read()
TMP = tempfile.mkdtemp(prefix="shardgate-verify-")
tally = {"n": 0, "pass": 0, "fail": 0}


def check(what, actual, expected):
    tally["n"] += 1
    good = actual == expected
    tally["pass" if good else "fail"] += 1
    print("%2d %s %s" % (tally["n"], "PASS" if good else "FAIL", what))
    if not good:
        print("     expected %r\n     actual   %r" % (expected, actual))


def run(*cmd):
    return subprocess.run(list(cmd), capture_output=True, timeout=120)


def write(name, text):
    path = os.path.join(TMP, name)
    open(path, "w").write(text)
    return path


def cli_checks():
    check("shardgate --version", run(GW, "--version").returncode, 0)
    p = run(GW, "dispatch", "--conf", CONF, "--shards", SHARDS, "--batch", BATCH)
    check("dispatch of the worked example exits 0", p.returncode, 0)
    check("its receipt equals the golden receipt byte for byte", p.stdout, GOLDEN)
    r = json.loads(p.stdout)
    check("ring id", r["ring"]["id"], "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc")
    check("vnodes_total counts online shards only", r["ring"]["vnodes_total"], 480)
    check("placements of docs/contract.md §6", [(x["id"], x["shard"], x["vnode"], x["reason"])
                               for x in r["placements"]],
          [("ch-001", "shard-b", 15, "ring"), ("ch-002", "shard-c", 2, "ring"),
           ("ch-003", "shard-a", 150, "ring"), ("ch-004", "shard-a", 151, "ring"),
           ("ch-005", "shard-c", 87, "wrap"), ("ch-006", "shard-b", 119, "ring"),
           ("ch-007", "shard-c", 159, "ring"), ("ch-008", "shard-c", 141, "ring")])
    check("loads are sums of sizes", {k: (v["load"], v["received"])
                                      for k, v in r["shards"].items()},
          {"shard-a": (8, 2), "shard-b": (6, 2), "shard-c": (10, 4), "shard-d": (0, 0),
           "shard-e": (0, 0)})
    receipt = write("receipt.json", p.stdout.decode())
    probe = run(sys.executable, os.path.join(ROOT, "client/probe.py"), "--conf", CONF,
                "--shards", SHARDS, "--receipt", receipt, "--batch", BATCH)
    check("probe agrees", (probe.returncode, probe.stdout.splitlines()[0]), (0, b"RESULT: OK"))
    h = run(HEALTH, "check", "--conf", CONF, "--shards", SHARDS, "--receipt", receipt)
    check("health passes the receipt", (h.returncode, json.loads(h.stdout)["status"]),
          (0, "pass"))
    r["placements"][0]["shard"] = "shard-d"
    bad = write("tampered.json", json.dumps(r, separators=(",", ":")))
    check("health fails a receipt with a change on offline shard-d",
          run(HEALTH, "check", "--conf", CONF, "--shards", SHARDS, "--receipt", bad).returncode, 2)
    check("probe fails it too", run(sys.executable, os.path.join(ROOT, "client/probe.py"),
                                    "--conf", CONF, "--shards", SHARDS, "--receipt",
                                    bad).returncode, 1)
    check("health cannot judge a missing receipt: exit 2",
          run(HEALTH, "check", "--conf", CONF, "--shards", SHARDS, "--receipt",
              os.path.join(TMP, "none.json")).returncode, 2)
    no_key = write("no-vnodes.env", open(CONF).read().replace("DISPATCH_VNODES=160\n", ""))
    p = run(GW, "dispatch", "--conf", no_key, "--shards", SHARDS, "--batch", BATCH)
    check("a contract missing a key: exit 3, named", (p.returncode, p.stderr.decode()),
          (3, "contract: %s:4: missing required key DISPATCH_VNODES\n" % no_key))
    check("health refuses the same contract: exit 3",
          run(HEALTH, "check", "--conf", no_key, "--shards", SHARDS, "--receipt",
              receipt).returncode, 3)
    bad_shards = write("s.json", '{"shards":[{"id":"a","state":"up","capacity":1}]}')
    check("a bad membership: exit 3", run(GW, "ring", "--conf", CONF, "--shards",
                                          bad_shards).returncode, 3)
    bad_batch = write("b.json", '{"batch_id":"x","changes":[{"id":"1","key":"k","size":-4}]}')
    p = run(GW, "dispatch", "--conf", CONF, "--shards", SHARDS, "--batch", bad_batch)
    check("a bad batch: exit 2 naming the JSON path", (p.returncode, p.stderr.decode()),
          (2, "batch: %s: changes[0].size: must be an integer 0..9007199254740991\n" % bad_batch))


class Server:
    def __init__(self, state):
        self.state = state

    def start(self):
        self.proc = subprocess.Popen(
            [GW, "serve", "--conf", CONF, "--shards", SHARDS, "--state-dir", self.state,
             "--listen", "127.0.0.1:0", "--no-token"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stderr.readline().decode()
            if line.startswith('{"event":"listening"'):
                self.port = int(json.loads(line)["address"].rsplit(":", 1)[1])
                threading.Thread(target=self.proc.stderr.read, daemon=True).start()
                return self
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError("the gateway did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        c.close()
        return out


def http_checks():
    state = os.path.join(TMP, "state")
    s = Server(state).start()
    try:
        check("GET /livez", s.request("GET", "/livez")[0], 200)
        check("GET /readyz", s.request("GET", "/readyz")[0], 200)
        body = open(BATCH, "rb").read()
        json_h = {"Content-Type": "application/json"}
        st, _, r = s.request("POST", "/v1/batches", body, json_h)
        check("POST the worked example: 200 and the CLI receipt bytes", (st, r), (200, GOLDEN))
        st, h, r = s.request("POST", "/v1/batches", body, json_h)
        check("replay: 200, same bytes, Idempotent-Replayed",
              (st, r, h.get("idempotent-replayed")), (200, GOLDEN, "true"))
        other = body.replace(b'"size": 4', b'"size": 5')
        st, _, r = s.request("POST", "/v1/batches", other, json_h)
        check("same batch_id, other content: 422 batch_id_reused",
              (st, json.loads(r)["error"]["code"]), (422, "batch_id_reused"))
        st, _, r = s.request("POST", "/v1/batches",
                             b'{"batch_id":"v-1","changes":[{"id":"1","key":"k","size":1.5}]}',
                             json_h)
        check("invalid batch: 400 naming changes[0].size",
              (st, json.loads(r)["error"]["path"]), (400, "changes[0].size"))
        check("GET /v1/batches/sample-0001", s.request("GET", "/v1/batches/sample-0001")[::2],
              (200, GOLDEN))
        check("GET /v1/batches/unknown: 404", s.request("GET", "/v1/batches/unknown")[0], 404)
        check("DELETE /v1/batches: 405", s.request("DELETE", "/v1/batches")[0], 405)
        st, _, r = s.request("GET", "/v1/lookup?key=order:1001")
        check("lookup order:1001", (st, json.loads(r)["shard"]), (200, "shard-b"))
        check("/metrics has vnodes_total 480",
              b"shardgate_ring_points 480" in s.request("GET", "/metrics")[2], True)
        check("SIGTERM exits 0", s.stop(), 0)
        s = Server(state).start()
        st, h, r = s.request("POST", "/v1/batches", body, json_h)
        check("replay after restart: stored bytes", (st, r, h.get("idempotent-replayed")),
              (200, GOLDEN, "true"))
        shards = json.loads(s.request("GET", "/v1/shards")[2])["shards"]
        check("totals after restart are not double-counted",
              {x["id"]: x["load_total"] for x in shards},
              {"shard-a": 8, "shard-b": 6, "shard-c": 10, "shard-d": 0, "shard-e": 0})
        post = run(sys.executable, os.path.join(ROOT, "client/post_batch.py"), "--url",
                   "http://127.0.0.1:%d/v1/batches" % s.port, "--batch",
                   write("b2.json", body.decode().replace("sample-0001", "sample-0002")))
        check("post_batch.py posts a new batch", post.returncode, 0)
    finally:
        s.stop()
    h = run(HEALTH, "check", "--conf", CONF, "--shards", SHARDS, "--journal",
            os.path.join(state, "journal.jsonl"))
    check("health passes the journal", (h.returncode, json.loads(h.stdout)["receipts"]), (0, 2))


try:
    cli_checks()
    http_checks()
finally:
    shutil.rmtree(TMP, ignore_errors=True)
print("PASS=%d FAIL=%d" % (tally["pass"], tally["fail"]))
print("RESULT: %s" % ("OK" if tally["fail"] == 0 else "BAD"))
sys.exit(1 if tally["fail"] else 0)
