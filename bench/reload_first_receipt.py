#!/usr/bin/env python3
"""Reload to first receipt on the new ring (docs/performance.md §9): a gateway on
N shards x 160 vnodes (default 10,000: 1.6 M points) takes PUT /v1/admin/membership changes
(one shard toggled online/offline each round) and, right after each 200, a one-change POST;
the figure is the time from sending the PUT to the POST's receipt naming the new epoch. Prints
the median and the maximum of ROUNDS rounds. Not a ctest (the label would be bench).

usage: reload_first_receipt.py SHARDGATE [SHARDS] [ROUNDS] [CONF]
(CONF: the contract, conf/dispatch.env unless given: e.g. a Maglev table's)
"""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# Old builds ignore it, new ones need it: the gateway serves 127.0.0.1 without a token
# (docs/api.md §11).
os.environ["SHARDGATE_NO_TOKEN"] = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADMIN = "bench-admin"


def request(port, method, path, body, headers):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    conf = sys.argv[4] if len(sys.argv) > 4 else os.path.join(ROOT, "conf", "dispatch.env")
    work = tempfile.mkdtemp(prefix="shardgate-reload-bench-")
    try:
        doc = {"shards": [{"id": "s%05d" % i, "state": "online", "capacity": 1000000}
                          for i in range(n)]}
        shards, token = os.path.join(work, "shards.json"), os.path.join(work, "admin")
        open(shards, "w").write(json.dumps(doc))
        open(token, "w").write(ADMIN + "\n")
        os.chmod(token, 0o600)
        log = open(os.path.join(work, "log"), "w+")
        proc = subprocess.Popen([binary, "serve", "--conf", conf, "--shards", shards, "--state-dir",
                                 os.path.join(work, "state"), "--listen", "127.0.0.1:0",
                                 "--admin-token-file", token, "--max-body", "67108864"],
                                stderr=log, stdout=subprocess.DEVNULL)
        deadline, port = time.time() + 120, None
        while port is None and time.time() < deadline:
            log.seek(0)
            for line in log:
                if line.startswith('{"event":"listening"'):
                    port = int(json.loads(line)["address"].rsplit(":", 1)[1])
            time.sleep(0.05)
        times = []
        epoch = json.loads(request(port, "GET", "/v1/ring", None, {})[1])["epoch"]
        for r in range(rounds):
            doc["shards"][r % n]["state"] = "offline" if doc["shards"][r % n]["state"] == "online" \
                else "online"
            body = json.dumps(doc).encode()
            t0 = time.perf_counter()
            st, out = request(port, "PUT", "/v1/admin/membership", body,
                              {"Content-Type": "application/json", "If-Match": '"%s"' % epoch,
                               "Authorization": "Bearer " + ADMIN})
            assert st == 200, (st, out[:200])
            epoch = json.loads(out)["epoch"]
            st, out = request(port, "POST", "/v1/batches", json.dumps(
                {"batch_id": "b%d" % r, "changes": [{"id": "c", "key": "k%d" % r, "size": 1}]}),
                {"Content-Type": "application/json"})
            times.append(time.perf_counter() - t0)
            assert st == 200 and json.loads(out)["epoch"] == epoch
        proc.terminate()
        proc.wait(60)
        print("reload to first receipt, %d shards, %s: median %.1f ms, max %.1f ms (%d rounds)"
              % (n, os.path.basename(conf), 1000 * statistics.median(times), 1000 * max(times),
                 rounds))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
