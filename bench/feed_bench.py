#!/usr/bin/env python3
"""The assignment feed's figures (docs/performance.md §11).

1. feed throughput to one consumer over loopback: a membership of one online shard (every
   change lands on it) and ASSIGNMENTS changes posted in batches of 1,000; then one consumer
   process follows GET /v1/shards/s0/assignments (NDJSON, limit 100000) from cursor 0 to the
   end, twice (cold: the sparse index is learnt while reading; warm), counting assignments;
2. POST throughput (wrk, bench/http_post.lua, 100-change batches, WRK_CONNS connections) in one
   gateway run, phases of SECONDS each: none, 10 idle long-pollers (a shard nothing is placed
   on, from the tail, wait_ms 30000, re-polling), 4 active consumers (following s0 from the
   tail: every assignment posted), and the transport floor: bench/loopback_floor at the byte
   and page rates the 4 consumers received in the active phase just before (4 consumer
   processes counting items in pages sent by a process that only sends: what moving those
   bytes costs these cores with no gateway work, a lower bound of any feed server's drop at
   that rate, docs/performance.md §11.3).
   Repeated --rounds times (none, idle, active, floor), then none once more; each round's drop
   is against the mean of the phases without watchers before and after it, and the median of
   the rounds is reported (a shared machine moves a single phase by more than 10%).

--consumer-nice N runs the consumers and pollers at nice N: on a machine whose cores the
gateway and wrk also need, a consumer at the same priority takes its parsing CPU from the POSTs;
nice 19 stands in for consumers on other hosts (the gateway's own cost of serving them remains).
--consumer c (default) makes the 4 active consumers bench/feed_reader (C, next to the
gateway's build: the gateway's cost, little of the consumers' own); python the Python follower
above (its parsing on the same cores). --pause-ms P: a C consumer sleeps P ms after a page
under 512 KiB (a tail follower letting a page gather, as a throughput-minded worker would).

usage: feed_bench.py SHARDGATE OUT.json [--assignments 2000000] [--seconds 10] [--conns 8]
       [--rounds 3] [--consumer-nice N] [--consumer c|python] [--pause-ms P]
"""
import argparse
import http.client
import json
import multiprocessing
import os
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
SHARDS = {"shards": [{"id": "idle", "state": "offline", "capacity": 1, "weight": 1},
                     {"id": "s0", "state": "online", "capacity": 10**15, "weight": 1}]}
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(binary, work, port):
    conf, shards = os.path.join(work, "dispatch.env"), os.path.join(work, "shards.json")
    open(conf, "w").write(CONTRACT)
    json.dump(SHARDS, open(shards, "w"))
    proc = subprocess.Popen([binary, "serve", "--conf", conf, "--shards", shards, "--state-dir",
                             os.path.join(work, "state"), "--listen", "127.0.0.1:%d" % port,
                             "--threads", "2"],
                            stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "serve.log"), "w"))
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.05)
    raise SystemExit("feed_bench: serve did not become ready")


def post_all(port, total, per_batch=1000, clients=2):
    """Posts `total` changes in batches; returns seconds."""
    changes = ",".join('{"id":"c%d","key":"k:%d","size":%d}' % (i, i, 1 + i % 9)
                       for i in range(per_batch))
    n = total // per_batch

    def worker(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(k, n, clients):
            body = '{"batch_id":"fill-%d","changes":[%s]}' % (i, changes)
            c.request("POST", "/v1/batches", body=body,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                raise SystemExit("feed_bench: POST %d" % r.status)
    t0 = time.time()
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.time() - t0


CONSUMER_NICE = 0  # set by --consumer-nice, inherited by the consumer processes
CONSUMER = "c"  # --consumer
PAUSE_MS = 0  # --pause-ms
READER = None  # bench/feed_reader, set in main
FLOOR = None  # bench/loopback_floor, set in main


def follow(port, shard, after, until_count, stop_seconds, out):
    """One consumer: pages until until_count assignments (or stop_seconds); puts
    (count, seconds, requests, body bytes) in `out`."""
    os.nice(CONSUMER_NICE)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    count = requests = nbytes = 0
    t0 = time.time()
    while count < until_count and time.time() - t0 < stop_seconds:
        c.request("GET", "/v1/shards/%s/assignments?after=%d&limit=100000&wait_ms=1000"
                  % (shard, after))
        r = c.getresponse()
        body = r.read()
        requests += 1
        nbytes += len(body)
        if r.status != 200:
            raise SystemExit("feed_bench: GET %d %r" % (r.status, body[:200]))
        count += body.count(b'{"type":"assignment"')
        tail = body.rfind(b'{"type":"bookmark","last_seq":')
        after = int(body[tail + 30:body.index(b"}", tail)])
    out.put((count, time.time() - t0, requests, nbytes))


def consume_once(port, total):
    q = multiprocessing.Queue()
    p = multiprocessing.Process(target=follow, args=(port, "s0", 0, total, 600, q))
    p.start()
    count, secs, requests, _ = q.get()
    p.join()
    return {"assignments": count, "seconds": round(secs, 3), "requests": requests,
            "assignments_per_s": round(count / secs)}


def idle_poller(port, after, stop_at):
    os.nice(CONSUMER_NICE)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while time.time() < stop_at:
        c.request("GET", "/v1/shards/idle/assignments?after=%d&wait_ms=30000" % after)
        body = c.getresponse().read()
        tail = body.rfind(b'{"type":"bookmark","last_seq":')
        after = int(body[tail + 30:body.index(b"}", tail)])


def tail_seq(port):
    """The latest seq: pages of the idle shard until one does not move (each page reads at
    most 64 MiB of journal)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    after = -1
    last = 0
    while last != after:
        after = last
        c.request("GET", "/v1/shards/idle/assignments?after=%d" % after)
        body = c.getresponse().read()
        tail = body.rfind(b'{"type":"bookmark","last_seq":')
        last = int(body[tail + 30:body.index(b"}", tail)])
    return last


def bench_program(shardgate, name):
    """bench/NAME of the build the gateway comes from."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(shardgate))), "bench",
                        name)


def start_active(port, start, seconds, q):
    """One active consumer from `start`: a C feed_reader process or a Python follower."""
    if CONSUMER == "c":
        return subprocess.Popen(["nice", "-n", str(CONSUMER_NICE), READER, str(port), "s0",
                                 str(start), str(seconds), str(PAUSE_MS)],
                                stdout=subprocess.PIPE, text=True)
    p = multiprocessing.Process(target=follow, args=(port, "s0", start, 1 << 62, seconds, q))
    p.start()
    return p


def stop_active(p, q):
    """What an active consumer reports: assignments, requests and body bytes received (a C
    reader also its CPU seconds, cpu_s)."""
    if CONSUMER == "c":
        return json.loads(p.communicate(timeout=60)[0])
    count, _, requests, nbytes = q.get()
    return {"assignments": count, "requests": requests, "bytes": nbytes}


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far."""
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk_phase(port, seconds, conns, watchers, gw_pid):
    """POST throughput for `seconds` with `watchers` ("idle", n) or ("active", n) running, and
    the gateway's CPU seconds meanwhile."""
    stop_at = time.time() + seconds + 3
    procs = []
    kind, n = watchers
    rate = None
    if kind == "floor":  # (bytes per s, pages per s) of one consumer
        rate, n = n, 4
    start = tail_seq(port)
    q = multiprocessing.Queue()
    for _ in range(n):
        if kind == "idle":
            procs.append(multiprocessing.Process(target=idle_poller, args=(port, start, stop_at)))
            procs[-1].start()
        elif kind == "active":
            procs.append(start_active(port, start, seconds + 2, q))
    if kind == "floor":
        args = [FLOOR, str(n), str(rate[0]), str(rate[1]), str(seconds + 2)]
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, text=True))
    time.sleep(1)
    cpu0 = cpu_seconds(gw_pid)
    out = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % seconds, "--latency", "-s",
                          os.path.join(HERE, "http_post.lua"), "http://127.0.0.1:%d" % port,
                          "--", "100", "%s%d-%d" % (kind, n, int(time.time()))],
                         capture_output=True, text=True, timeout=seconds + 60)
    cpu1 = cpu_seconds(gw_pid)
    line = [l for l in out.stdout.splitlines() if l.startswith("{")][-1]
    res = json.loads(line)
    res["gateway_cpu_s"] = round(cpu1 - cpu0, 2)
    consumed = 0
    if kind == "active":
        readers = [stop_active(p, q) for p in procs]
        consumed = sum(r["assignments"] for r in readers)
        if CONSUMER == "c":
            res["consumers_cpu_s"] = round(sum(r["cpu_s"] for r in readers), 2)
        res["consumer_rate"] = [round(sum(r[k] for r in readers) / n / (seconds + 2))
                                for k in ("bytes", "requests")]
    if kind == "floor":
        res["floor"] = json.loads(procs.pop().communicate(timeout=60)[0])
    for p in procs:
        if kind == "idle":
            p.terminate()
            p.join(60)
        elif CONSUMER == "python":
            p.join(60)
    res["watchers"] = "%d %s" % (n, kind)
    res["assignments_consumed"] = consumed
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shardgate")
    ap.add_argument("out")
    ap.add_argument("--assignments", type=int, default=2000000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--consumer-nice", type=int, default=0)
    ap.add_argument("--consumer", choices=("c", "python"), default="c")
    ap.add_argument("--pause-ms", type=int, default=0)
    a = ap.parse_args()
    global CONSUMER_NICE, CONSUMER, PAUSE_MS, READER, FLOOR
    CONSUMER_NICE, CONSUMER, PAUSE_MS = a.consumer_nice, a.consumer, a.pause_ms
    READER, FLOOR = (bench_program(a.shardgate, p) for p in ("feed_reader", "loopback_floor"))
    for program in (READER, FLOOR):
        if not os.access(program, os.X_OK):
            raise SystemExit("feed_bench: %s not built (-DSHARDGATE_BENCH=ON)" % program)
    work = tempfile.mkdtemp(prefix="feed-bench-")
    port = free_port()
    gw = start_gateway(a.shardgate, work, port)
    try:
        fill = post_all(port, a.assignments)
        cold = consume_once(port, a.assignments)
        warm = consume_once(port, a.assignments)
        phases = []
        for _ in range(a.rounds):
            for w in (("none", 0), ("idle", 10), ("active", 4)):
                phases.append(wrk_phase(port, a.seconds, a.conns, w, gw.pid))
            phases.append(wrk_phase(port, a.seconds, a.conns,
                                    ("floor", phases[-1]["consumer_rate"]), gw.pid))
        phases.append(wrk_phase(port, a.seconds, a.conns, ("none", 0), gw.pid))
    finally:
        gw.terminate()
        gw.wait(60)
    kinds = ("idle", "active", "floor")
    drops = {k: [] for k in kinds}
    for r in range(a.rounds):
        # against the mean of the phases without watchers before and after this round
        base = (phases[4 * r]["requests_per_s"] + phases[4 * r + 4]["requests_per_s"]) / 2
        for i, k in enumerate(kinds):
            drops[k].append(round(100 * (1 - phases[4 * r + 1 + i]["requests_per_s"] / base), 1))
    result = {"consumer": a.consumer, "pause_ms": a.pause_ms, "consumer_nice": a.consumer_nice,
              "fill_seconds": round(fill, 2), "feed_cold": cold, "feed_warm": warm,
              "post_phases": phases, "drop_idle_pct": drops["idle"],
              "drop_active_pct": drops["active"], "drop_floor_pct": drops["floor"]}
    for k in kinds:
        result["drop_%s_pct_median" % k] = sorted(drops[k])[a.rounds // 2]
    json.dump(result, open(a.out, "w"), indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
