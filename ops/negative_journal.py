"""The mutation gate's journal scenario (docs/tools.md §5): the real `shardgate serve`
on 127.0.0.1:0 takes a batch, a membership change by SIGHUP (shard-d online) with a batch whose
body spans the switch, a change by PUT /v1/admin/membership (a capacity), a batch after each,
and stops. The probe detector then runs `client/probe.py chain --journal J`, the health detector
`shardgate-health check --journal J --conf C --shards S` (the files as left at the end). A
gateway that does not get through the scenario is red."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADMIN = "gate-admin-token"
DEADLINE_S = 20


def _wait(cond, what):
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    raise RuntimeError("journal scenario: timed out waiting for " + what)


def _log_events(log, name):
    with open(log, "rb") as f:
        return [l for l in f.read().decode(errors="replace").splitlines()
                if l.startswith('{"event":"%s"' % name)]


def _request(port, method, path, body=None, headers=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                                 method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _post(port, doc):
    status, _ = _request(port, "POST", "/v1/batches", json.dumps(doc).encode(),
                         {"Content-Type": "application/json"})
    if status != 200:
        raise RuntimeError("journal scenario: POST %s answered %d" % (doc["batch_id"], status))


def _batch(batch_id, n=40):
    return {"batch_id": batch_id, "changes": [{"id": "c%d" % i, "key": "%s:%d" % (batch_id, i),
                                               "size": 1 + i % 3} for i in range(n)]}


def _spanning_post(port):
    """Sends the headers and half the body of a POST now; returns a function that sends the
    rest and checks the 200."""
    body = json.dumps(_batch("span")).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    sock.sendall(("POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)).encode()
                 + body[:len(body) // 2])

    def finish():
        sock.sendall(body[len(body) // 2:])
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        sock.close()
        if not data.startswith(b"HTTP/1.1 200"):
            raise RuntimeError("journal scenario: the spanning POST: %r" % data[:80])
    return finish


def _membership(shard_d, capacity_a):
    with open(os.path.join(ROOT, "input", "shards.json")) as f:
        doc = json.load(f)
    for s in doc["shards"]:
        if s["id"] == "shard-d":
            s["state"] = shard_d
        if s["id"] == "shard-a":
            s["capacity"] = capacity_a
    return json.dumps(doc).encode()


def _drive(proc, log, shards):
    port = int(json.loads(_wait(lambda: _log_events(log, "listening"), "listening")[0])
               ["address"].rsplit(":", 1)[1])
    _post(port, _batch("j-1"))
    finish = _spanning_post(port)
    time.sleep(0.2)  # the spanning request has started on the first view
    open(shards, "wb").write(_membership("online", 20))
    proc.send_signal(signal.SIGHUP)
    _wait(lambda: _log_events(log, "reload_applied"), "the SIGHUP reload")
    finish()
    _post(port, _batch("j-2"))
    epoch = json.loads(_request(port, "GET", "/v1/ring")[1])["epoch"]
    status, body = _request(port, "PUT", "/v1/admin/membership", _membership("online", 25),
                            {"Content-Type": "application/json", "If-Match": '"%s"' % epoch,
                             "Authorization": "Bearer " + ADMIN})
    if status != 200:
        raise RuntimeError("journal scenario: PUT answered %d %r" % (status, body[:200]))
    _post(port, _batch("j-3"))


def run_scenario(build, work):
    """Returns (journal, conf, shards) as left by the scenario, or None when the gateway did not
    get through it (that alone is red)."""
    base = os.path.join(work, "journal-scenario")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base, mode=0o700)
    state, shards = os.path.join(base, "state"), os.path.join(base, "shards.json")
    token, log = os.path.join(base, "admin-token"), os.path.join(base, "serve.log")
    shutil.copyfile(os.path.join(ROOT, "input", "shards.json"), shards)
    open(token, "w").write(ADMIN + "\n")
    os.chmod(token, 0o600)
    conf = os.path.join(ROOT, "conf", "dispatch.env")
    cmd = [os.path.join(build, "gateway", "shardgate"), "serve", "--conf", conf, "--shards",
           shards, "--state-dir", state, "--listen", "127.0.0.1:0", "--admin-token-file", token,
           "--no-token"]
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)
    try:
        _drive(proc, log, shards)
        proc.send_signal(signal.SIGTERM)
        if proc.wait(DEADLINE_S) != 0:
            return None
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        print("  %s" % e, flush=True)
        return None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return os.path.join(state, "journal.jsonl"), conf, shards


def _need(path, who):
    """The detectors' tools are written by other branches (p-plan, h-chain): a missing one is a
    loud failure of the gate, never a silent green."""
    if not os.path.exists(path):
        sys.exit("negative: %s is missing (%s): the journal detector cannot run" % (path, who))


def probe_chain_red(build, work):
    found = run_scenario(build, work)
    if found is None:
        return True
    probe = os.path.join(ROOT, "client", "probe.py")
    _need(probe, "client/probe.py chain")
    p = subprocess.run([sys.executable, probe, "chain", "--journal", found[0]],
                       capture_output=True, timeout=600)
    if p.returncode == 64:
        sys.exit("negative: probe.py has no `chain` command:\n%s" % p.stderr.decode())
    return p.returncode != 0


def health_journal_red(build, work):
    found = run_scenario(build, work)
    if found is None:
        return True
    health = os.path.join(build, "health", "shardgate-health")
    _need(health, "shardgate-health")
    journal, conf, shards = found
    p = subprocess.run([health, "check", "--journal", journal, "--conf", conf, "--shards",
                        shards], capture_output=True, timeout=600)
    try:
        status = json.loads(p.stdout)["status"]
    except (ValueError, KeyError, TypeError):
        status = None
    return p.returncode != 0 or status != "pass"
