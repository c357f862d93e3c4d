#!/usr/bin/env python3
"""pg_faults_*: `shardgate serve --store postgres://` replicas when something dies under load
(docs/journal.md §10, docs/operations.md §9.1): the database killed -9 and
restarted, and a replica killed -9 behind a real HAProxy while client/post_batch.py retries.
Nothing acknowledged may be lost or counted twice; shardgate-health --store verifies the end
state. The heavy scenarios, run once (in the -Werror build, not again under the sanitizers).

Runs as `python3 test_pg_faults.py SHARDGATE HEALTH SOURCE_DIR [--group G]`.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgpg  # noqa: E402
import sgtest  # noqa: E402
from sgpg import Cluster, batch, free_port, post, sums  # noqa: E402
from sgtest import case, eq, ok, src, wait_until, write  # noqa: E402


# --- the database crashing under load --------------------------------------------------------

def loader(gw, prefix, acked, stop, failures):
    """POSTs new batches until stop; retries each on 503 store_unavailable until acknowledged;
    records the acknowledged ids and every other answer."""
    def go():
        i = 0
        while not stop.is_set():
            doc = batch("%s-%d" % (prefix, i), n=5, seed=i)
            while True:
                try:
                    r = post(gw, doc)
                except OSError as e:
                    failures.append("%s: %s" % (doc["batch_id"], e))
                    return
                if r.status == 200:
                    acked.append(doc["batch_id"])
                    break
                if r.status != 503 or r.error()[0] != "store_unavailable":
                    failures.append("%s: %r" % (doc["batch_id"], r))
                    return
                time.sleep(0.05)
            i += 1
    return go


class Load:
    """Four loaders (above) on the cluster's first two replicas, started at once."""

    def __init__(self, c, prefix):
        self.c = c
        self.acked, self.failures, self.stop = [], [], threading.Event()
        self.threads = [threading.Thread(target=loader(c.gws[k % 2], "%s%d" % (prefix, k),
                                                       self.acked, self.stop, self.failures))
                        for k in range(4)]
        for t in self.threads:
            t.start()

    def more(self, n, timeout, what):
        base = len(self.acked)
        wait_until(lambda: len(self.acked) >= base + n, timeout, what)

    def end(self):
        """Stops the loaders, then: no answer but 200 and 503, every acknowledged batch stored
        once, seqs 1..last. Returns the stored batch ids."""
        self.stop.set()
        for t in self.threads:
            t.join(60)
        eq(self.failures, [], "no answer but 200 and 503 store_unavailable")
        receipts, last = self.c.receipts()
        stored = sorted(b for b, _ in receipts.values())
        eq(sorted(set(self.acked) - set(stored)), [], "every acknowledged batch is stored")
        eq((len(stored), len(set(stored)), sorted(receipts)),
           (len(self.acked), len(self.acked), list(range(1, last + 1))), "each once, seqs 1..last")
        return stored


@case("store_restart")
def the_database_crashes_under_load_and_comes_back():
    with Cluster(2) as c:
        load = Load(c, "L")
        load.more(50, 30, "50 batches acknowledged")
        c.pg.crash()
        for gw in c.gws:
            wait_until(lambda gw=gw: gw.get("/readyz").status == 503, 5, "/readyz 503")
            r = post(gw, batch("while-down"))
            eq((r.status, r.error(), r.headers.get("retry-after")),
               (503, ("store_unavailable", ""), "1"), "POST while the database is down")
            m = gw.get("/metrics")  # the scrape still answers, saying the store is down
            lines = m.body.decode().splitlines()
            eq((m.status, "shardgate_store_up 0" in lines,
                [l for l in lines if l.startswith("shardgate_shard_load_total")]),
               (200, True, []), "/metrics while the database is down")
        down_acked = len(load.acked)
        time.sleep(1)
        eq(len(load.acked), down_acked, "nothing acknowledged while the database is down")
        c.pg.start()
        for gw in c.gws:
            wait_until(lambda gw=gw: gw.get("/readyz").status == 200, 10, "/readyz 200 again")
            ok("shardgate_store_up 1" in gw.get("/metrics").body.decode().splitlines(),
               "shardgate_store_up 1 again")
        load.more(50, 30, "50 more after the restart")
        stored = load.end()
        ok(not any(b == "while-down" for b in stored), "the refused batch left no row")
        c.health()


class Standby:
    """A streaming standby of c.pg (pg_basebackup over the primary's socket, as postgres), on a
    port of its own, made synchronous (synchronous_standby_names = '*')."""

    def __init__(self, c, apply_delay_ms=0):
        self.pg = c.pg
        self.port = free_port()
        self.data = os.path.join(self.pg.base, "standby")
        bin_dir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
        self.pg_ctl = os.path.join(bin_dir, "pg_ctl")
        as_pg = ["runuser", "-u", "postgres", "--"]
        os.mkdir(self.data, 0o700)
        shutil.chown(self.data, "postgres", "postgres")
        r = subprocess.run(as_pg + [os.path.join(bin_dir, "pg_basebackup"), "-h", self.pg.dir,
                                    "-p", str(self.pg.port), "-U", "postgres", "-D", self.data,
                                    "-R", "-X", "stream", "-c", "fast"],
                           capture_output=True, text=True, timeout=120, cwd="/")
        eq(r.returncode, 0, "pg_basebackup: %s" % r.stderr)
        if apply_delay_ms:  # replays each commit that long after the primary wrote it
            with open(os.path.join(self.data, "postgresql.auto.conf"), "a") as f:
                f.write("recovery_min_apply_delay = '%dms'\n" % apply_delay_ms)
        r = subprocess.run(as_pg + [self.pg_ctl, "-D", self.data, "-o", "-p %d" % self.port,
                                    "-l", os.path.join(self.pg.dir, "standby.log"), "-w",
                                    "start"], capture_output=True, text=True, timeout=120, cwd="/")
        eq(r.returncode, 0, "standby start: %s" % r.stderr)
        self.pg.sql("postgres", "ALTER SYSTEM SET synchronous_standby_names = '*'",
                    user="postgres")
        self.pg.sql("postgres", "SELECT pg_reload_conf()", user="postgres")
        wait_until(lambda: self.pg.sql("postgres", "SELECT sync_state FROM pg_stat_replication",
                                       user="postgres") == [["sync"]], 30, "a synchronous standby")

    def promote(self):
        r = subprocess.run(["runuser", "-u", "postgres", "--", self.pg_ctl, "-D", self.data, "-w",
                            "promote"], capture_output=True, text=True, timeout=60, cwd="/")
        eq(r.returncode, 0, "pg_ctl promote: %s" % r.stderr)

    def stop(self):
        subprocess.run(["runuser", "-u", "postgres", "--", self.pg_ctl, "-D", self.data, "-m",
                        "immediate", "-w", "stop"], capture_output=True, timeout=60, cwd="/")

    def url(self, db, user):
        return "postgres://%s@127.0.0.1:%d/%s?passfile=%s" % (user, self.port, db,
                                                              self.pg.passfile(user))


@case("failover")
def the_database_fails_over_to_its_standby_under_load():
    """A synchronous standby is promoted after the primary is killed -9 under load: both
    replicas, on a two-host --store URL with target_session_attrs=read-write, go on with the
    new primary by themselves; every acknowledged batch is there once, seqs gap-free, and
    health passes on it (docs/operations.md §9.1)."""
    c = Cluster(2)
    standby = Standby(c)
    try:
        both = "postgres://shardgate@127.0.0.1:%d,127.0.0.1:%d/shardgate?passfile=%s&" \
               "target_session_attrs=read-write" % (c.pg.port, standby.port,
                                                    c.pg.passfile("shardgate"))
        for gw in c.gws:
            gw.url = both
        with c:
            load = Load(c, "F")
            load.more(50, 30, "50 batches acknowledged")
            c.pg.crash()
            standby.promote()
            load.more(50, 60, "50 more after the promotion")
            c.pg.port = standby.port  # the cluster's SQL and health go to the new primary
            load.end()
            c.health()
    finally:
        standby.stop()


@case("failover")
def reads_on_a_standby_with_remote_apply_see_every_acknowledged_batch():
    """--read-store on a real streaming standby that replays each commit 300 ms late, the
    primary at synchronous_commit = remote_apply (docs/operations.md §9.1): a batch read back
    through the standby right after its 200 is there every time (at synchronous_commit = on it
    would be 404 for those 300 ms), the feed read there lists every receipt once it has its
    seq, and the reads are the standby's (its backends serve them; stopped, they are 503)."""
    c = Cluster(1)
    standby = Standby(c, apply_delay_ms=300)
    try:
        c.pg.sql("postgres", "ALTER SYSTEM SET synchronous_commit = 'remote_apply'",
                 user="postgres")
        c.pg.sql("postgres", "SELECT pg_reload_conf()", user="postgres")
        c.gws[0].args += ["--read-store", standby.url("shardgate", "shardgate")]
        with c:
            gw = c.gws[0]
            got = []
            for i in range(8):
                r = post(gw, batch("sb-%d" % i, n=4, seed=i))
                eq(r.status, 200, "POST sb-%d" % i)
                back = gw.get("/v1/batches/sb-%d" % i)
                got.append((back.status, back.body == r.body))
            eq(got, [(200, True)] * 8, "each batch read back through the standby at once")
            c.sequenced()
            feed = gw.get("/v1/receipts?after=0&limit=100",
                          headers={"Accept": "application/json"}).json()
            eq([i["receipt"]["batch_id"] for i in feed["items"] if i["type"] == "receipt"],
               ["sb-%d" % i for i in range(8)], "the feed through the standby")
            primary = c.pg.port
            c.pg.port = standby.port
            readers = c.pg.sql("shardgate", "SELECT count(*) FROM pg_stat_activity WHERE "
                               "application_name = 'shardgate'", user="postgres")
            c.pg.port = primary
            ok(int(readers[0][0]) >= 1, "the gateway reads on the standby (%s)" % readers)
            standby.stop()
            eq(gw.get("/v1/batches/sb-0").status, 503, "the standby stopped: reads 503")
    finally:
        standby.stop()


@case("store_read")
def the_first_read_after_the_database_restarts_is_answered():
    """The reader connection died with the database; libpq learns it from the first statement
    on it, which is then run once more on a new connection (docs/journal.md §10), so no read
    after /readyz turned 200 again answers 503."""
    with Cluster(1) as c:
        gw = c.gws[0]
        r = post(gw, batch("before"))
        eq(r.status, 200, "POST")
        eq(gw.get("/v1/batches/before").body, r.body, "read back: the reader connection is open")
        c.pg.crash()
        c.pg.start()
        wait_until(lambda: gw.get("/readyz").status == 200, 10, "/readyz 200 again")
        got = gw.get("/v1/batches/before")
        eq((got.status, got.body), (200, r.body), "the first read after the restart")
        eq(gw.get("/v1/shards").status, 200, "and the next")


@case("store_read")
def the_first_commit_on_a_dead_connection_is_answered():
    """The writer's connection ended while the database stayed up (its backends terminated, as
    a restart ends them): libpq learns it from the first statement on it. The transaction's first
    round trip commits nothing, so it runs once more on a new connection (docs/journal.md §10),
    and a POST right after is answered 200, not 503. The POST comes before the writer's
    once-a-second idle check could have reopened the connection by itself."""
    with Cluster(1) as c:
        gw = c.gws[0]
        eq(post(gw, batch("before")).status, 200, "POST: the writer's connection is open")
        killed = c.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                       "application_name = 'shardgate' AND pid <> pg_backend_pid()")
        ok(int(killed[0][0]) >= 1, "the gateway's connections terminated (%s)" % killed)
        r = post(gw, batch("after"))
        eq(r.status, 200, "the first POST on the dead connection: %r" % (r.body,))
        eq(gw.get("/v1/batches/after").body, r.body, "read back")


@case("store_read")
def the_first_membership_change_on_a_dead_connection_is_answered():
    """A membership change runs on the readers' connection, which the listener does not use:
    after the database ended every backend, the change finds its connection dead at BEGIN,
    before anything of it was sent, and begins once more on a new one (docs/journal.md §10):
    200 and the new epoch, not 503."""
    shards = json.load(open(sgtest.SHARDS, encoding="utf-8"))["shards"]
    d_online = [dict(s, state="online") if s["id"] == "shard-d" else s for s in shards]
    with Cluster(1) as c:
        gw = c.gws[0]
        before = sgpg.put_membership(gw, d_online, c.token).json()["epoch"]  # connection open
        killed = c.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                       "application_name = 'shardgate' AND pid <> pg_backend_pid()")
        ok(int(killed[0][0]) >= 1, "the gateway's connections terminated (%s)" % killed)
        b_draining = [dict(s, state="draining") if s["id"] == "shard-b" else s for s in d_online]
        r = sgpg.put_membership(gw, b_draining, c.token, if_match=before)
        ok(r.json()["epoch"] != before, "a new epoch: %r" % (r.body,))
        eq(sgpg.current_epoch(gw), r.json()["epoch"], "served")


# --- a replica killed under load behind HAProxy ---------------------------------------------

def haproxy(c, port, log):
    template = open(src("ops", "cluster", "haproxy.cfg.in"), encoding="utf-8").read()
    cfg = template.replace("@PORT@", str(port))
    for i, gw in enumerate(c.gws, 1):
        cfg = cfg.replace("@GATEWAY_%d_PORT@" % i, str(gw.port))
    path = write(os.path.join(c.pg.base, "haproxy.cfg"), cfg)
    return subprocess.Popen(["haproxy", "-db", "-f", path], stdout=log, stderr=log)


def status_of(url):
    try:
        return urllib.request.urlopen(url, timeout=2).status
    except OSError:
        return None


def post_batch(url, doc, directory):
    path = write(os.path.join(directory, doc["batch_id"] + ".json"), json.dumps(doc))
    return subprocess.run([sys.executable, src("client", "post_batch.py"), "--url", url,
                           "--batch", path, "--attempts", "8", "--backoff-base", "0.2",
                           "--timeout", "10"], capture_output=True, timeout=120)


@case("replica_kill")
def a_replica_killed_under_load_loses_nothing():
    with Cluster(3) as c:
        port = free_port()
        log = open(os.path.join(c.pg.base, "haproxy.log"), "wb")
        proxy = haproxy(c, port, log)
        try:
            url = "http://127.0.0.1:%d/v1/batches" % port
            wait_until(lambda: status_of("http://127.0.0.1:%d/readyz" % port) == 200, 10,
                       "HAProxy up")
            acked, lost, lock = [], [], threading.Lock()

            def client(k):
                for i in range(30):
                    doc = batch("k%d-%d" % (k, i), n=4, seed=i)
                    p = post_batch(url, doc, c.pg.base)
                    with lock:
                        (acked if p.returncode == 0 else lost).append(
                            (doc["batch_id"], p.returncode, p.stderr[-300:]))
            threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            wait_until(lambda: len(acked) >= 20, 60, "20 batches acknowledged")
            c.gws[1].proc.kill()  # kill -9, under load
            for t in threads:
                t.join(300)
        finally:
            proxy.kill()
            proxy.wait(10)
            log.close()
        eq(lost, [], "post_batch.py got every batch acknowledged")
        receipts, last = c.receipts()
        stored = [b for b, _ in receipts.values()]
        eq(sorted(stored), sorted(b for b, _, _ in acked), "the acknowledged batches, each once")
        eq(sorted(receipts), list(range(1, last + 1)), "seqs 1..last")
        for gw in (c.gws[0], c.gws[2]):
            totals = {k: v for k, v in gw.shard_totals().items() if v != [0, 0]}
            eq(totals, sums(receipts), "the totals are the receipts' sums")
        c.health()


if __name__ == "__main__":
    sys.exit(sgpg.main(sys.argv))
