#!/usr/bin/env python3
"""Spill benchmark (docs/performance.md §8): wall time of `shardgate dispatch` on the
spill worst cases of a 10,000-shard x 160-point ring and 100,000 changes, and the in-process cost
per change of a batch where about 10% of the changes spill against the same batch under
`report` (bench/spill_bench.c: both in one process, rounds interleaved, thread CPU time). Timings are printed and written as JSON, never asserted
by a test; the exit code only says whether every run produced the receipt it must.

usage: spill_bench.py BUILD_DIR [--out FILE] [--rounds N]
"""
import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

SHARDS, VNODES, CHANGES = 10000, 160, 100000


def contract(policy):
    return ("DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=%d\nDISPATCH_RING_HASH=sha1\n"
            "DISPATCH_CAPACITY_POLICY=%s\n" % (VNODES, policy))


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def membership(capacity_of):
    return json.dumps({"shards": [{"id": "shard-%05d" % i, "state": "online",
                                   "capacity": capacity_of(i)} for i in range(SHARDS)]})


def batch(rng, size_of):
    return json.dumps({"batch_id": "spill-bench", "changes": [
        {"id": "c%d" % i, "key": "user:%d" % rng.randrange(10 ** 12), "size": size_of(rng)}
        for i in range(CHANGES)]})


CASES = {
    # Every shard but one has capacity 0 and every size is >= 1: every change whose home is not
    # shard-00000 spills, and its walk must pass every other shard's points.
    "all_spill": (lambda i: 10 ** 12 if i == 0 else 0, lambda rng: rng.randint(1, 9)),
    # Capacity 1 everywhere but one shard, sizes 1: each placement fills a shard, leaving the
    # tree's bounds over its 160 blocks stale (1, true 0) for the walks that come after.
    "stale_bounds": (lambda i: 10 ** 12 if i == 0 else 1, lambda rng: 1),
    # Capacity 1 everywhere but one shard, sizes 2: shards with room, but not for this size.
    "room_too_small": (lambda i: 10 ** 12 if i == 0 else 1, lambda rng: 2),
}


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def dispatch_ms(build, conf, shards, batch_path, rounds):
    """Median wall ms and median CPU ms (user + sys: what the run costs on a machine it has to
    itself) of the whole `shardgate dispatch` (ring build, parse, place, print)."""
    times, cpu, doc = [], [], None
    for _ in range(rounds):
        c0 = cpu_s()
        t0 = time.monotonic()
        p = subprocess.run([os.path.join(build, "gateway", "shardgate"), "dispatch", "--conf",
                            conf, "--shards", shards, "--batch", batch_path],
                           capture_output=True, timeout=600)
        times.append((time.monotonic() - t0) * 1000)
        cpu.append((cpu_s() - c0) * 1000)
        if p.returncode not in (0, 2):
            sys.exit("spill_bench: dispatch exit %d: %s" % (p.returncode, p.stderr.decode()))
        doc = json.loads(p.stdout)
    return sorted(times)[len(times) // 2], sorted(cpu)[len(cpu) // 2], doc




def ten_percent(build, d, rounds, rng):
    """~10% of shards at capacity 0: their changes spill to a neighbour with room."""
    shards = write(d, "s10.json", membership(lambda i: 0 if i % 10 == 7 else 10 ** 12))
    b = write(d, "b10.json", batch(rng, lambda r: r.randint(1, 9)))
    spill, report = write(d, "spill.env", contract("spill")), write(d, "report.env",
                                                                   contract("report"))
    p = subprocess.run([os.path.join(build, "bench", "spill_bench"), report, spill, shards, b,
                        str(rounds)], capture_output=True, timeout=600)
    if p.returncode != 0:
        sys.exit("spill_bench: %s" % p.stderr.decode())
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--out")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    rng = random.Random(15)
    results = {"shards": SHARDS, "vnodes": VNODES, "changes": CHANGES}
    with tempfile.TemporaryDirectory(prefix="shardgate-spill-bench-") as d:
        conf = write(d, "spill.env", contract("spill"))
        report = write(d, "report.env", contract("report"))
        for name, (cap, size) in CASES.items():
            shards = write(d, name + ".shards.json", membership(cap))
            b = write(d, name + ".batch.json", batch(rng, size))
            ms, cpu, doc = dispatch_ms(a.build, conf, shards, b, a.rounds)
            rms, rcpu, _ = dispatch_ms(a.build, report, shards, b, a.rounds)
            results[name] = {"dispatch_ms": round(ms, 1), "dispatch_cpu_ms": round(cpu, 1),
                             "report_dispatch_ms": round(rms, 1),
                             "report_dispatch_cpu_ms": round(rcpu, 1),
                             "spilled": doc["counts"]["spilled"], "ok": doc["ok"]}
            print("%-15s shardgate dispatch %7.1f ms wall, %7.1f ms CPU (medians of %d), %d of %d "
                  "spilled, ok=%s; the same under report %.1f ms wall, %.1f ms CPU"
                  % (name, ms, cpu, a.rounds, doc["counts"]["spilled"], CHANGES, doc["ok"], rms,
                     rcpu))
        t = ten_percent(a.build, d, max(a.rounds, 5), rng)
        results["ten_percent"] = t
        print("ten_percent     %d of %d spilled; CPU ns per change (medians of %d interleaved "
              "rounds): place + receipt spill %.1f / report %.1f = %.2fx; place alone %.1f / "
              "%.1f = %.2fx" % (t["spilled"], CHANGES, t["rounds"], t["spill_ns"],
                                t["report_ns"], t["ratio"], t["spill_place_ns"],
                                t["report_place_ns"], t["ratio_place"]))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
