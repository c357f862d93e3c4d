"""Shared pieces of the reliability tests (tests/reliability): the gwtest harness of
tests/integration (real `shardgate serve` on an ephemeral 127.0.0.1 port, always killed), the
independent health check of a journal, /proc memory readings and the seed.

Each script runs as `python3 SCRIPT SHARDGATE_BINARY HEALTH_BINARY SOURCE_DIR [CASE...]`.
"""

import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import gwtest  # noqa: E402  (the path above makes it importable)
from gwtest import Failure, eq, ok  # noqa: E402,F401

HEALTH = None


def main(argv):
    """Takes HEALTH_BINARY out of argv and hands the rest to gwtest.main."""
    global HEALTH
    if len(argv) < 4:
        print("usage: %s SHARDGATE_BINARY HEALTH_BINARY SOURCE_DIR [CASE...]" % argv[0],
              file=sys.stderr)
        return 64
    HEALTH = os.path.abspath(argv[2])
    return gwtest.main([argv[0], argv[1]] + argv[3:])


def seeded_rng(name):
    """A random.Random seeded from RELIABILITY_SEED (or a fresh seed), printed for reruns."""
    text = os.environ.get("RELIABILITY_SEED")
    seed = int(text) if text else random.SystemRandom().randrange(1, 2**31)
    print("%s: RELIABILITY_SEED=%d" % (name, seed), flush=True)
    return random.Random(seed)


def health_check(state_dir, conf=None, shards=None, timeout=120):
    """Runs `shardgate-health check --journal` on the state dir's journal; returns the parsed
    verdict after requiring exit 0 and status pass."""
    conf = conf or gwtest.src("conf", "dispatch.env")
    shards = shards or gwtest.src("input", "shards.json")
    r = subprocess.run([HEALTH, "check", "--conf", conf, "--shards", shards, "--journal",
                        os.path.join(state_dir, "journal.jsonl")],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise Failure("shardgate-health check exited %d:\n%s%s"
                      % (r.returncode, r.stdout[:3000], r.stderr[:2000]))
    verdict = json.loads(r.stdout)
    eq(verdict["status"], "pass", "health verdict")
    return verdict


def proc_status_kib(pid, field):
    """VmRSS / VmHWM (kB) of a live process from /proc/PID/status, or None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def wait_until(cond, timeout, what, step=0.02):
    """Polls cond() until true or the deadline; raises Failure naming `what`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(step)
    raise Failure("timed out after %.1fs waiting for %s" % (timeout, what))


def journal_totals(server):
    """Per-shard [load, received] summed over the journal's receipts, with a zero entry for
    every shard /v1/shards lists: what /v1/shards must report."""
    totals = {sid: [0, 0] for sid in server.shard_totals()}
    with open(os.path.join(server.state_dir, "journal.jsonl"), "rb") as f:
        for line in f:  # a line at a time: journals of load tests are large
            if line.startswith(b'{"type":"receipt"'):
                for sid, s in json.loads(line)["receipt"]["shards"].items():
                    t = totals.setdefault(sid, [0, 0])
                    t[0] += s["load"]
                    t[1] += s["received"]
    return totals
