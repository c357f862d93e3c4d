#!/usr/bin/env python3
"""Peak RSS (VmHWM) of `shardgate serve` holding an N-shard ring, ready on 127.0.0.1.

Starts serve on a free loopback port with a fresh state dir, waits for GET /readyz = 200,
reads /proc/PID/status, stops it with SIGTERM and writes {"shards", "vmhwm_kb", "vmrss_kb"}.

usage: serve_memory.py SHARDGATE OUT.json [--shards N]
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

# Old builds ignore it, new ones need it: the gateway serves 127.0.0.1 without a token
# (docs/api.md §11).
os.environ["SHARDGATE_NO_TOKEN"] = "1"

CONTRACT = ("DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=160\nDISPATCH_RING_HASH=sha1\n"
            "DISPATCH_CAPACITY_POLICY=report\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid, name):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def wait_ready(url, proc, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.1)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shardgate")
    ap.add_argument("out")
    ap.add_argument("--shards", type=int, default=10000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        conf, shards = os.path.join(work, "dispatch.env"), os.path.join(work, "shards.json")
        open(conf, "w").write(CONTRACT)
        doc = {"shards": [{"id": "shard-%05d" % i, "state": "online", "capacity": 10 ** 12}
                          for i in range(a.shards)]}
        json.dump(doc, open(shards, "w"))
        port = free_port()
        proc = subprocess.Popen([a.shardgate, "serve", "--conf", conf, "--shards", shards,
                                 "--state-dir", os.path.join(work, "state"),
                                 "--listen", "127.0.0.1:%d" % port],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if not wait_ready("http://127.0.0.1:%d/readyz" % port, proc):
                raise SystemExit("serve_memory: serve did not become ready")
            result = {"shards": a.shards, "vmhwm_kb": status_kb(proc.pid, "VmHWM"),
                      "vmrss_kb": status_kb(proc.pid, "VmRSS")}
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    json.dump(result, open(a.out, "w"))
    print("serve %d shards: VmHWM %d kB, VmRSS %d kB"
          % (result["shards"], result["vmhwm_kb"], result["vmrss_kb"]))


if __name__ == "__main__":
    main()
