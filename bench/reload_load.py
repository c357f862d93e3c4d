#!/usr/bin/env python3
"""Live membership under load (docs/performance.md §7).

1. steady: CLIENTS threads POST 100-change batches for STEADY seconds (no reload);
2. reloads: the same load for DURATION seconds while CHANGES membership changes are applied,
   alternating SIGHUP (the shards file rewritten, then `kill -HUP`) and
   `PUT /v1/admin/membership` (If-Match: the current epoch): shards going offline, draining,
   coming back, weights and capacities changing;
3. every non-200 answer is a failure; every receipt must name an epoch of the chain
   (`GET /v1/epochs`), and `shardgate-health check --journal` must pass on the state dir;
4. RSS: RELOADS SIGHUP reloads toggling between two memberships, VmRSS after the first 100 and
   after all of them;
5. reload to first receipt at BIG shards x 160, five PUTs and five SIGHUPs: the time from
   sending the PUT (or the signal) to the answer of the first POST naming the new epoch.

usage: reload_load.py SHARDGATE SHARDGATE_HEALTH OUT.json [--duration 60] [--steady 20]
       [--changes 100] [--reloads 1000] [--clients 4] [--big 10000] [--rounds 5]
       [--phase all|switch]   (switch: only item 5, ROUNDS PUTs and ROUNDS SIGHUPs)
"""
import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time

# Old builds ignore it, new ones need it: the gateway serves 127.0.0.1 without a token
# (docs/api.md §11).
os.environ["SHARDGATE_NO_TOKEN"] = "1"

CONTRACT = ("DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=160\nDISPATCH_RING_HASH=sha1\n"
            "DISPATCH_CAPACITY_POLICY=report\n")
ADMIN_TOKEN = "bench-admin-token-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vmrss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def membership(n, step):
    """The membership after `step` changes: a walk of offline / draining / weight / capacity
    changes over the first shards that always leaves most of them online."""
    shards = []
    for i in range(n):
        state, weight, capacity = "online", 1, 10 ** 11
        k = (step + i) % 7
        if i < 5 and k == 1:
            state = "offline"
        elif i < 5 and k == 2:
            state = "draining"
        elif i < 5 and k == 3:
            weight = 2
        elif i < 5 and k == 4:
            capacity = 10 ** 11 + step
        shards.append({"id": "shard-%05d" % i, "state": state, "capacity": capacity,
                       "weight": weight})
    return {"shards": shards}


class Gateway:
    def __init__(self, binary, work, shards_doc):
        self.work = work
        self.conf = os.path.join(work, "dispatch.env")
        self.shards = os.path.join(work, "shards.json")
        self.state = os.path.join(work, "state")
        self.admin = os.path.join(work, "admin.token")
        open(self.conf, "w").write(CONTRACT)
        json.dump(shards_doc, open(self.shards, "w"))
        open(self.admin, "w").write(ADMIN_TOKEN + "\n")
        os.chmod(self.admin, 0o600)
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "serve", "--conf", self.conf, "--shards", self.shards, "--state-dir",
             self.state, "--listen", "127.0.0.1:%d" % self.port, "--admin-token-file",
             self.admin, "--threads", "2"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"))
        deadline = time.time() + 60
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if self.request("GET", "/readyz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("reload_load: serve did not become ready")

    def request(self, method, path, body=None, headers=None, conn=None):
        own = conn is None
        conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            if own:
                conn.close()

    def epoch(self):
        status, body = self.request("GET", "/v1/ring")
        return json.loads(body)["epoch"]

    def put(self, doc, epoch=None):
        headers = {"Authorization": "Bearer " + ADMIN_TOKEN, "Content-Type": "application/json",
                   "If-Match": '"%s"' % (epoch or self.epoch())}
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        return self.request("PUT", "/v1/admin/membership", body, headers)

    def sighup(self, doc):
        tmp = self.shards + ".tmp"
        json.dump(doc, open(tmp, "w"))
        os.rename(tmp, self.shards)
        before = self.epoch()
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while self.epoch() == before and time.time() < deadline:
            time.sleep(0.005)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def batch(tag, seq, n=100):
    return json.dumps({"batch_id": "%s-%d" % (tag, seq), "changes": [
        {"id": "c%d" % i, "key": "k:%s:%d:%d" % (tag, seq, i), "size": 1 + i % 7}
        for i in range(n)]}).encode()


class Load:
    """CLIENTS threads posting until stopped; every latency and every non-200 recorded."""

    def __init__(self, gw, tag, clients):
        self.gw, self.tag, self.stop_flag = gw, tag, threading.Event()
        self.latencies, self.failures, self.epochs = [], [], set()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(c,)) for c in range(clients)]

    def run(self, client):
        conn = http.client.HTTPConnection("127.0.0.1", self.gw.port, timeout=60)
        seq = 0
        while not self.stop_flag.is_set():
            seq += 1
            body = batch("%s-%d" % (self.tag, client), seq)
            t0 = time.perf_counter()
            try:
                status, answer = self.gw.request("POST", "/v1/batches", body,
                                                 {"Content-Type": "application/json"}, conn)
            except (OSError, http.client.HTTPException) as e:
                status, answer = None, str(e).encode()
                conn = http.client.HTTPConnection("127.0.0.1", self.gw.port, timeout=60)
            dt = time.perf_counter() - t0
            with self.lock:
                if status == 200:
                    self.latencies.append(dt)
                    self.epochs.add(json.loads(answer)["epoch"])
                else:
                    self.failures.append((status, answer[:200].decode(errors="replace")))

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        for t in self.threads:
            t.join()


def p99(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(0.99 * len(values)))] if values else None


def load_phases(a, binary, health, work):
    gw = Gateway(binary, work, membership(20, 0))
    try:
        with Load(gw, "steady", a.clients) as steady:
            time.sleep(a.steady)
        with Load(gw, "reload", a.clients) as during:
            gap = a.duration / a.changes
            for step in range(1, a.changes + 1):
                t0 = time.time()
                doc = membership(20, step)
                if step % 2:
                    gw.sighup(doc)
                else:
                    status, body = gw.put(doc)
                    if status != 200:
                        during.failures.append(("PUT %d" % status, body[:200].decode()))
                time.sleep(max(0.0, gap - (time.time() - t0)))
        status, body = gw.request("GET", "/v1/epochs")
        epochs = json.loads(body)["epochs"]
        chain = {e["epoch"] for e in epochs}
    finally:
        gw.stop()
    check = subprocess.run([health, "check", "--journal", os.path.join(gw.state, "journal.jsonl"),
                            "--conf", gw.conf, "--shards", gw.shards], capture_output=True)
    verdict = json.loads(check.stdout or b"{}")
    return {"steady_requests": len(steady.latencies), "steady_p99_ms": 1e3 * p99(steady.latencies),
            "reload_requests": len(during.latencies), "reload_p99_ms": 1e3 * p99(during.latencies),
            "failed_requests": len(steady.failures) + len(during.failures),
            "failures_sample": (steady.failures + during.failures)[:5],
            "epoch_records": len(epochs), "receipt_epochs_unknown": len(during.epochs - chain),
            "health_exit": check.returncode, "health_status": verdict.get("status"),
            "health_checks": verdict.get("checks")}


def rss_phase(a, binary, work):
    gw = Gateway(binary, work, membership(20, 0))
    try:
        after = {}
        for i in range(1, a.reloads + 1):
            gw.sighup(membership(20, i % 2))
            if i in (100, a.reloads):
                after[i] = vmrss_kb(gw.proc.pid)
    finally:
        gw.stop()
    return {"reloads": a.reloads, "vmrss_kb_after_100": after.get(100),
            "vmrss_kb_after_all": after.get(a.reloads)}


def first_receipt_after(gw, step, epoch=None):
    """POSTs small batches until one names a new epoch (or `epoch`); returns that moment."""
    before = None if epoch else gw.epoch_cached
    for attempt in range(10000):
        status, answer = gw.request("POST", "/v1/batches", batch("switch-%d" % step, attempt, 10),
                                    {"Content-Type": "application/json"})
        named = json.loads(answer)["epoch"] if status == 200 else None
        if named is not None and (named == epoch if epoch else named != before):
            return time.perf_counter()
    return None


def switch_phase(a, binary, work):
    """PUT: from sending the PUT to the answer of the first POST after it (file write, epoch
    record, switch, a journaled receipt). SIGHUP (the file already written): from the signal
    to the first receipt naming the new epoch, POSTing back to back."""
    gw = Gateway(binary, work, membership(a.big, 0))
    put_ms, hup_ms = [], []
    try:
        for step in range(1, 2 * a.rounds + 1):
            doc = json.dumps(membership(a.big, step)).encode()
            gw.epoch_cached = gw.epoch()
            if step % 2:
                t0 = time.perf_counter()
                status, body = gw.put(doc, gw.epoch_cached)
                t1 = first_receipt_after(gw, step, json.loads(body)["epoch"]) if status == 200 \
                    else None
                put_ms.append((t1 - t0) * 1e3 if t1 else None)
            else:
                tmp = gw.shards + ".tmp"
                open(tmp, "wb").write(doc)
                os.rename(tmp, gw.shards)
                t0 = time.perf_counter()
                gw.proc.send_signal(signal.SIGHUP)
                t1 = first_receipt_after(gw, step)
                hup_ms.append((t1 - t0) * 1e3 if t1 else None)
    finally:
        gw.stop()

    def median(xs):
        good = sorted(x for x in xs if x is not None)
        return good[len(good) // 2] if len(good) == len(xs) else None
    return {"shards": a.big, "put_to_first_receipt_ms": put_ms, "put_median_ms": median(put_ms),
            "sighup_to_first_receipt_ms": hup_ms, "sighup_median_ms": median(hup_ms)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shardgate")
    ap.add_argument("health")
    ap.add_argument("out")
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--steady", type=float, default=20)
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--reloads", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--big", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5, help="PUTs and SIGHUPs of the switch phase")
    ap.add_argument("--phase", choices=("all", "switch"), default="all",
                    help="switch: only the reload-to-first-receipt figure (no health run)")
    a = ap.parse_args()
    result = {"load_avg_before": os.getloadavg()[0]}
    for name, phase in (("load", lambda w: load_phases(a, a.shardgate, a.health, w)),
                        ("rss", lambda w: rss_phase(a, a.shardgate, w)),
                        ("switch", lambda w: switch_phase(a, a.shardgate, w))):
        if a.phase == "switch" and name != "switch":
            continue
        with tempfile.TemporaryDirectory(prefix="shardgate-reload-") as work:
            result[name] = phase(work)
        print(name, json.dumps(result[name]), flush=True)
    json.dump(result, open(a.out, "w"), indent=1)
    if a.phase == "switch":
        return 0 if result["switch"]["put_median_ms"] is not None else 1
    load = result["load"]
    ok = (load["failed_requests"] == 0 and load["health_exit"] == 0
          and load["receipt_epochs_unknown"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
