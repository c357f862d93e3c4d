#!/usr/bin/env python3
"""Restart time and memory at a given history (docs/performance.md §12).

usage: bench/restart.py [--cold] BUILD_DIR N [STATE_DIR]

Writes N acknowledged batches with bench/history_gen (unless STATE_DIR already holds them),
then starts `shardgate serve` on it three times and prints, for each start, the time from
process start to the first /readyz 200 and the process's VmRSS (and VmHWM) then, and the log
line saying where the replay started. --cold (root only) writes the dirty pages back and drops
the page cache before each start, so the start reads the state dir from the disk.
127.0.0.1 only; every wait has a deadline."""

import http.client
import json
import os
import socket
import subprocess
import sys
import time

# Old builds ignore it, new ones need it: the gateway serves 127.0.0.1 without a token
# (docs/api.md §11).
os.environ["SHARDGATE_NO_TOKEN"] = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def ready(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        c.request("GET", "/readyz")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


def one_start(binary, state, deadline_s=600):
    port = free_port()
    t0 = time.monotonic()
    p = subprocess.Popen([binary, "serve", "--conf", os.path.join(ROOT, "conf", "dispatch.env"),
                          "--shards", os.path.join(ROOT, "input", "shards.json"), "--state-dir",
                          state, "--listen", "127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while not ready(port):
            if p.poll() is not None or time.monotonic() - t0 > deadline_s:
                raise SystemExit("the server did not become ready: %s" % p.stderr.read()[-2000:])
            time.sleep(0.005)
        took = time.monotonic() - t0
        rss, hwm = status_kib(p.pid, "VmRSS"), status_kib(p.pid, "VmHWM")
    finally:
        p.terminate()
        _, err = p.communicate(timeout=120)
    start = [l for l in err.decode().splitlines()
             if '"checkpoint_used"' in l or '"journal_full_replay"' in l]
    return took, rss, hwm, start[:1]


def drop_page_cache():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def has_history(state):
    return os.path.isdir(state) and any(
        n.startswith("journal") and n.endswith(".jsonl") for n in os.listdir(state))


def main(argv):
    cold = "--cold" in argv
    argv = [a for a in argv if a != "--cold"]
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 64
    build, n = argv[1], int(argv[2])
    state = argv[3] if len(argv) == 4 else os.path.join(build, "history-%d" % n)
    if not has_history(state):
        t0 = time.monotonic()
        subprocess.run([os.path.join(build, "bench", "history_gen"),
                        os.path.join(ROOT, "conf", "dispatch.env"),
                        os.path.join(ROOT, "input", "shards.json"), state, str(n)], check=True)
        print("history_gen %d batches: %.1f s" % (n, time.monotonic() - t0))
    du = subprocess.run(["du", "-sb", state], capture_output=True, text=True).stdout.split()[0]
    print("state dir: %s bytes" % du)
    binary = os.path.join(build, "gateway", "shardgate")
    for i in range(3):
        if cold:
            drop_page_cache()
        took, rss, hwm, start = one_start(binary, state)
        print(json.dumps({"batches": n, "cold": cold, "restart_s": round(took, 3), "vmrss_kib": rss,
                          "vmhwm_kib": hwm, "start": start}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
