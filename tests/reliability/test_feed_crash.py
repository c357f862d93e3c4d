"""The assignment feed under kill -9: client/post_batch.py posts batches while one
client/consume.py per online shard applies its assignments with --exec (a shell command that
appends "batch_id id size" to a file per shard); consumers and the gateway are killed with
SIGKILL at random moments and restarted (the gateway on the same port and state dir). At the
end, after a catch-up run of each consumer with --exit-idle, per shard:

- the sum of the applied sizes == GET /v1/shards load_total, and the count == received_total;
- every (batch_id, id) is applied exactly once.

Seeded: RELIABILITY_SEED (printed); FEED_CRASH_ROUNDS (default 12).
"""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, case, eq, free_port, ok, tmpdir  # noqa: E402

SHARDS = ("shard-a", "shard-b", "shard-c")  # the online ones of input/shards.json
LOADERS = 3

# Applies one assignment; a redelivered one (SHARDGATE_REDELIVERY=1) is checked against the
# file first: the one assignment whose CMD may have run before a crash (docs/decisions.md §22).
APPLY = ('line="$SHARDGATE_BATCH_ID $SHARDGATE_CHANGE_ID $SHARDGATE_SIZE"; '
         'if [ -n "$SHARDGATE_REDELIVERY" ] && grep -qxF "$line" "$OUT"; then exit 0; fi; '
         'echo "$line" >> "$OUT"')


def loader(url, d, name, rng, stop, errors):
    i = 0
    while not stop.is_set():
        bid = "%s-%d" % (name, i)
        doc = {"batch_id": bid, "changes": [{"id": "c%d" % j, "key": "k%d" % rng.randrange(10**9),
                                             "size": rng.randint(0, 9)}
                                            for j in range(rng.randint(1, 20))]}
        path = os.path.join(d, bid + ".json")
        with open(path, "w") as f:
            json.dump(doc, f)
        r = subprocess.run([sys.executable, sgtest.src("client", "post_batch.py"), "--url", url,
                            "--batch", path, "--attempts", "100", "--backoff-base", "0.05",
                            "--backoff-max", "0.3", "--timeout", "5"],
                           capture_output=True, timeout=120)
        if r.returncode != 0:
            errors.append("%s: exit %d %s" % (bid, r.returncode, r.stderr[-300:]))
            return
        os.unlink(path)
        i += 1


class Consumer:
    def __init__(self, base, shard, d):
        self.base, self.shard = base, shard
        self.cursor = os.path.join(d, shard + ".cursor")
        self.out = os.path.join(d, shard + ".applied")
        self.proc = None
        open(self.out, "a").close()

    def command(self, extra=()):
        return [sys.executable, sgtest.src("client", "consume.py"), "--url", self.base,
                "--shard", self.shard, "--cursor-file", self.cursor, "--exec", APPLY,
                "--wait-ms", "500", "--limit", "50", "--retry-for", "60"] + list(extra)

    def start(self):
        self.proc = subprocess.Popen(self.command(), env=dict(os.environ, OUT=self.out),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc:
            self.proc.wait(10)

    def catch_up(self):
        r = subprocess.run(self.command(["--exit-idle"]), env=dict(os.environ, OUT=self.out),
                           capture_output=True, timeout=300)
        eq(r.returncode, 0, "%s catch-up exit (%s)" % (self.shard, r.stderr[-500:]))

    def applied(self):
        with open(self.out) as f:
            return [l.split() for l in f.read().splitlines()]


@case("feed_crash")
def kill9_consumers_and_gateway_under_load():
    seed = int(os.environ.get("RELIABILITY_SEED", random.randrange(1 << 30)))
    rounds = int(os.environ.get("FEED_CRASH_ROUNDS", "12"))
    print("RELIABILITY_SEED=%d rounds=%d" % (seed, rounds))
    rng = random.Random(seed)
    d = tmpdir()
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    s = Server(args=["--listen", "127.0.0.1:%d" % port]).start()
    stop, errors = threading.Event(), []
    loaders = [threading.Thread(target=loader, daemon=True,
                                args=(base + "/v1/batches", d, "L%d" % i,
                                      random.Random(rng.random()), stop, errors))
               for i in range(LOADERS)]
    consumers = [Consumer(base, sh, d) for sh in SHARDS]
    kills = {"consumer": 0, "gateway": 0}
    try:
        for t in loaders:
            t.start()
        for c in consumers:
            c.start()
        for i in range(rounds):
            time.sleep(rng.uniform(0.3, 1.2))
            if i % 3 == 2:
                s.proc.send_signal(signal.SIGKILL)
                s.proc.wait(10)
                s.start()
                kills["gateway"] += 1
            else:
                c = rng.choice(consumers)
                c.kill()
                c.start()
                kills["consumer"] += 1
        stop.set()
        for t in loaders:
            t.join(180)
        ok(not errors, "every batch acknowledged: %r" % errors[:3])
        for c in consumers:
            c.kill()
            kills["consumer"] += 1
        for c in consumers:
            c.catch_up()
        totals = s.shard_totals()
        for c in consumers:
            rows = c.applied()
            keys = [(b, i) for b, i, _ in rows]
            eq(len(keys), len(set(keys)), "%s: no assignment applied twice" % c.shard)
            eq([sum(int(z) for _, _, z in rows), len(rows)], totals[c.shard],
               "%s: applied sizes and count == load_total and received_total" % c.shard)
            print("%s: %d assignments, load %d" % (c.shard, len(rows), totals[c.shard][0]))
        print("kills: %r" % kills)
    finally:
        stop.set()
        for c in consumers:
            c.kill()
        s.kill()


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, operands=("shardgate", "health", "source")))
