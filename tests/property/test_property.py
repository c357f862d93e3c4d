#!/usr/bin/env python3
"""Property test: for random memberships and batches, the CLI receipt, the probe's
recomputation and the health check agree on every one.

Seeded and reproducible: PROPERTY_SEED=<n> reruns a failing draw; the seed is printed.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

SHARDGATE, HEALTH, ROOT = sys.argv[1], sys.argv[2], sys.argv[3]
ROUNDS = int(os.environ.get("PROPERTY_ROUNDS", "200"))
SEED = int(os.environ.get("PROPERTY_SEED", "20261129"))
PROBE = os.path.join(ROOT, "client", "probe.py")
STATES = ["online", "online", "online", "draining", "offline"]


def log_uniform(rng, lo, hi):
    """Mostly small values, now and then large ones: keeps 200 rounds quick."""
    return min(hi, max(lo, int(round(lo * (hi / lo) ** rng.random()))))


def random_key(rng):
    alphabet = ("abcxyz0189:-_/ .", "éüß", "中文字", "😀🚀", "\t\n\"\\\x01\x7f")
    n = rng.randint(1, 40)
    chars = "".join(rng.choice(rng.choice(alphabet)) for _ in range(n))
    while len(chars.encode()) > 1024:
        chars = chars[:-1]
    return chars


def membership(rng):
    n = log_uniform(rng, 1, 300)
    shards = []
    for i in range(n):
        s = {"id": "s%d-%s" % (i, rng.choice(["a", "B", "z.9", "q:1"])),
             "state": rng.choice(STATES), "capacity": rng.choice([0, 5, 50, 10 ** 6])}
        if rng.random() < 0.5:
            s["weight"] = rng.randint(1, 4)
        shards.append(s)
    if not any(s["state"] == "online" for s in shards):
        shards[rng.randrange(n)]["state"] = "online"
    rng.shuffle(shards)
    return {"shards": shards}


def batch(rng, round_no):
    changes = [{"id": "c%d" % i, "key": random_key(rng), "size": rng.randint(0, 30)}
               for i in range(rng.randint(1, 60))]
    return {"batch_id": "prop-%d" % round_no, "changes": changes}


def write(dirname, name, text):
    path = os.path.join(dirname, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def one_round(rng, round_no, tmp):
    digest = rng.choice(["sha1", "md5"])
    vnodes = log_uniform(rng, 1, 400)
    policy = rng.choice(["report", "reject"])
    conf = write(tmp, "c.env", "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=%d\n"
                 "DISPATCH_RING_HASH=%s\nDISPATCH_CAPACITY_POLICY=%s\n" % (vnodes, digest, policy))
    shards = write(tmp, "s.json", json.dumps(membership(rng)))
    b = batch(rng, round_no)
    batch_path = write(tmp, "b.json", json.dumps(b, ensure_ascii=rng.random() < 0.5))
    receipt = os.path.join(tmp, "r.json")
    if os.path.exists(receipt):
        os.unlink(receipt)
    d = subprocess.run([SHARDGATE, "dispatch", "--conf", conf, "--shards", shards,
                        "--batch", batch_path, "--out", receipt], capture_output=True, timeout=120)
    if d.returncode not in (0, 2):
        return "dispatch exit %d: %s" % (d.returncode, d.stderr.decode(errors="replace"))
    if not os.path.exists(receipt):  # refused under `reject`: nothing to verify
        if policy == "reject" and d.stderr.startswith(b"over_capacity: "):
            return None
        return "no receipt: %s" % d.stderr.decode(errors="replace")
    r = json.load(open(receipt, encoding="utf-8"))
    if (d.returncode == 0) != r["ok"]:
        return "exit %d but ok=%s" % (d.returncode, r["ok"])
    p = subprocess.run([sys.executable, PROBE, "--conf", conf, "--shards", shards,
                        "--receipt", receipt, "--batch", batch_path],
                       capture_output=True, timeout=300)
    if p.returncode != 0:
        return "probe: %s" % p.stdout.decode(errors="replace")[:2000]
    h = subprocess.run([HEALTH, "check", "--conf", conf, "--shards", shards, "--receipt", receipt],
                       capture_output=True, timeout=120)
    if h.returncode != 0 or json.loads(h.stdout)["status"] != "pass":
        return "health: %s %s" % (h.stdout.decode(errors="replace")[:2000], h.stderr.decode())
    return None


def main():
    rng = random.Random(SEED)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="shardgate-prop-") as tmp:
        for round_no in range(ROUNDS):
            problem = one_round(rng, round_no, tmp)
            if problem:
                failures += 1
                print("round %d (PROPERTY_SEED=%d): %s" % (round_no, SEED, problem))
                kept = os.path.join(tempfile.gettempdir(), "shardgate-prop-fail-%d" % round_no)
                subprocess.run(["cp", "-r", tmp, kept])
                print("  inputs kept in %s" % kept)
    print("seed %d: %d rounds" % (SEED, ROUNDS))
    print("%d passed, %d failed" % (ROUNDS - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
