#!/usr/bin/env python3
"""pg_store_*: `shardgate serve --store postgres://` replicas on one real PostgreSQL
(docs/journal.md §10): the schema commands, exactly once across replicas, the sequencer's
gap-free seqs, membership through the database, and the feed fed by other replicas' commits
(the failures under load: test_pg_faults.py). Every group ends with `shardgate-health check
--store` on what the replicas wrote.

Runs as `python3 test_pg_store.py SHARDGATE HEALTH SOURCE_DIR [--group G]`.
"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgpg  # noqa: E402
import sgtest  # noqa: E402
from sgpg import (Cluster, Postgres, StoreGateway, batch, current_epoch,  # noqa: E402
                  free_port, post, put_membership, sums)
from sgtest import case, eq, ok, run_gateway, wait_until, write  # noqa: E402

SHARDS = json.load(open(sgtest.SHARDS, encoding="utf-8"))["shards"]
SHARDS_D_ONLINE = [dict(s, state="online") if s["id"] == "shard-d" else s for s in SHARDS]


def metric_loads(gw):
    """shard -> shardgate_shard_load_total of GET /metrics, for the shards with a load."""
    r = gw.get("/metrics")
    eq(r.status, 200, "GET /metrics")
    out = {}
    for line in r.body.decode().splitlines():
        if line.startswith('shardgate_shard_load_total{shard="'):
            shard, value = line[len('shardgate_shard_load_total{shard="'):].split('"} ')
            if value != "0":
                out[shard] = int(value)
    return out


def concurrently(fns):
    """Runs each fn on its own thread, all released together; returns their results."""
    out = [None] * len(fns)
    gate = threading.Barrier(len(fns))

    def runner(i):
        gate.wait()
        out[i] = fns[i]()
    threads = [threading.Thread(target=runner, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


# --- the schema commands -------------------------------------------------------------------

@case("db_command")
def db_init_migrate_status():
    pg = Postgres("shardgate-pg-db-")
    try:
        r = run_gateway("db", "status", "--store", pg.url)
        eq((r.returncode, r.stdout), (2, "schema_version 0\nbinary_version 1\n"), "empty: status")
        r = run_gateway("serve", "--conf", sgtest.CONF, "--shards", sgtest.SHARDS, "--store",
                        pg.url, "--listen", "127.0.0.1:0")
        eq((r.returncode, r.stderr.strip()), (3, "store: the database schema is version 0, this "
           "shardgate needs 1: run `shardgate db init --store URL`"), "serve on no schema")
        r = run_gateway("db", "init", "--store", pg.url)
        eq((r.returncode, r.stdout), (0, "schema_version 0 -> 1\n"), "init")
        r = run_gateway("db", "init", "--store", pg.url)
        eq((r.returncode, r.stderr), (3, "store: the database already holds shardgate's schema "
           "(version 1): use `shardgate db migrate`\n"), "second init")
        r = run_gateway("db", "migrate", "--store", pg.url)
        eq((r.returncode, r.stdout, r.stderr), (0, "schema_version 1 -> 1\n", ""), "migrate")
        r = run_gateway("db", "status", "--store", pg.url)
        eq((r.returncode, r.stdout), (0, "schema_version 1\nbinary_version 1\n"), "status")
        pg.sql("shardgate", "INSERT INTO shardgate_schema (version, name) VALUES (2, 'x')")
        r = run_gateway("db", "migrate", "--store", pg.url)
        eq((r.returncode, r.stderr), (3, "store: the database schema is version 2, newer than "
           "this shardgate's 1\n"), "newer schema")
        r = run_gateway("db", "status", "--store", "postgres://nobody@127.0.0.1:%d/x" % free_port())
        eq(r.returncode, 3, "unreachable: status")
        ok(r.stderr.startswith("store: cannot connect: "), "unreachable: %r" % r.stderr)
    finally:
        pg.stop()


@case("db_command")
def store_usage_errors():
    for args, what in ((["--store", "mysql://x"], "--store must be file or a postgres:// URL"),
                       (["--store", "postgres://x", "--state-dir", "/tmp"],
                        "--state-dir, --idempotency-window and --scrub-rate are for --store file "
                        "only"),
                       (["--store", "postgres://x", "--scrub-rate", "0"],
                        "--state-dir, --idempotency-window and --scrub-rate are for --store file "
                        "only"),
                       (["--store", "file"], "--state-dir DIR is required")):
        r = run_gateway("serve", "--conf", sgtest.CONF, "--shards", sgtest.SHARDS, *args)
        eq((r.returncode, r.stderr.splitlines()[0]), (64, "shardgate: " + what), "usage %r" % args)
    for args in (["status"], ["drop", "--store", "postgres://x"], ["init", "--store", "x"]):
        eq(run_gateway("db", *args).returncode, 64, "db usage %r" % args)


# --- exactly once across replicas ------------------------------------------------------------

@case("replicas")
def same_batch_to_three_replicas_dispatches_once():
    with Cluster(3) as c:
        for round_ in range(15):
            doc = batch("race-%d" % round_, n=4, seed=round_)
            got = concurrently([lambda gw=gw: post(gw, doc) for gw in c.gws])
            eq([r.status for r in got], [200, 200, 200], "round %d statuses" % round_)
            fresh = [r for r in got if "idempotent-replayed" not in r.headers]
            eq(len(fresh), 1, "round %d: one dispatch, the others replay: %r" % (round_, got))
            eq(len({r.body for r in got}), 1, "round %d: the same receipt bytes" % round_)
        receipts, last = c.receipts()
        eq((sorted(receipts), last), (list(range(1, 16)), 15), "one row per batch, seqs 1..15")
        reused = post(c.gws[2], batch("race-0", n=4, seed=1))
        eq((reused.status, reused.error()), (422, ("batch_id_reused", "batch_id")), "reuse")
        stored = [gw.get("/v1/batches/race-3") for gw in c.gws]
        eq({(r.status, r.body) for r in stored},
           {(200, (json.dumps(receipts[4][1], separators=(",", ":")) + "\n").encode())},
           "GET /v1/batches on each replica")
        want = sums(receipts)
        for gw in c.gws:
            totals = {k: v for k, v in gw.shard_totals().items() if v != [0, 0]}
            eq(totals, want, "GET /v1/shards on replica %d" % gw.port)
            eq(metric_loads(gw), {k: v[0] for k, v in want.items()}, "/metrics on %d" % gw.port)
        c.health()


@case("replicas")
def seqs_are_gap_free_in_commit_order():
    with Cluster(3) as c:
        def writer(k):
            def go():
                codes = []
                for i in range(40):
                    codes.append(post(c.gws[(k + i) % 3], batch("w%d-%d" % (k, i), seed=i)).status)
                return codes
            return go
        got = concurrently([writer(k) for k in range(6)])
        eq(sorted({code for codes in got for code in codes}), [200], "every POST answered 200")
        receipts, last = c.receipts()
        eq((sorted(receipts), last), (list(range(1, 241)), 240), "seqs 1..240, no gap")
        eq(len({b for b, _ in receipts.values()}), 240, "240 batch_ids, each once")
        c.health()


# --- membership in the database ------------------------------------------------------------

@case("membership")
def a_change_through_one_replica_is_applied_by_all_within_a_second():
    with Cluster(3) as c:
        post(c.gws[1], batch("before"))
        first = current_epoch(c.gws[0])
        r = put_membership(c.gws[0], SHARDS_D_ONLINE, c.token)
        new = r.json()["epoch"]
        t0 = time.time()
        # Nothing but the notification makes a replica apply it: a missed one never does.
        for gw in c.gws[1:]:
            wait_until(lambda gw=gw: current_epoch(gw) == new, 20,
                       "replica %d applies epoch %s" % (gw.port, new))
        print("applied by all in %.3f s" % (time.time() - t0))
        stale = put_membership(c.gws[2], SHARDS, c.token, if_match=first, expect=412)
        eq(stale.json()["error"]["code"], "epoch_mismatch", "stale If-Match: %r" % stale)
        after = post(c.gws[2], batch("after")).json()
        eq((after["epoch"], after["shards"]["shard-d"]["state"]), (new, "online"),
           "a receipt after the change names the new epoch")
        epochs = c.sql("SELECT epoch_seq, epoch, first_seq FROM shardgate_epochs ORDER BY 1")
        eq(epochs, [["1", first, "1"], ["2", new, "2"]], "the chain in the database")
        for gw in c.gws:
            eq(gw.stop(), 0, "replica exit")
        with StoreGateway(c.pg.url) as again:  # its files still say shard-d offline
            eq(current_epoch(again), new, "a restarted replica serves the database's epoch")
            eq(len(again.events("epoch_from_store")), 1, "it says so")
        c.health(shards=write(os.path.join(c.pg.base, "d.json"),
                              json.dumps({"shards": SHARDS_D_ONLINE})))


@case("membership")
def shards_that_left_are_listed_in_id_order_with_their_totals():
    """GET /v1/shards lists every shard of every epoch in id order (docs/api.md §7): a member
    with no total yet at 0, a shard that left with its totals and last weight and capacity."""
    with Cluster(1) as c:
        gw = c.gws[0]
        for i in range(6):
            eq(post(gw, batch("left-%d" % i, n=4, seed=i)).status, 200, "POST %d" % i)
        receipts, _ = c.receipts()
        want = sums(receipts)
        ok("shard-b" in want, "shard-b has a total: %r" % want)
        put_membership(gw, [s for s in SHARDS if s["id"] != "shard-b"], c.token)
        got = gw.get("/v1/shards").json()["shards"]
        eq([(s["id"], s["state"]) for s in got],
           [("shard-a", "online"), ("shard-b", "removed"), ("shard-c", "online"),
            ("shard-d", "offline"), ("shard-e", "draining")], "id order, shard-b removed")
        eq({s["id"]: [s["load_total"], s["received_total"]] for s in got},
           {k: want.get(k, [0, 0]) for k in ("shard-a", "shard-b", "shard-c", "shard-d",
                                                "shard-e")}, "totals")
        eq((got[1]["weight"], got[1]["capacity"]), (1, 20), "shard-b's last weight and capacity")


# --- the feed, fed by other replicas ----------------------------------------------------------

@case("feed")
def a_long_poll_on_one_replica_wakes_on_a_commit_through_another():
    with Cluster(2) as c:
        post(c.gws[0], batch("first", n=6))
        r = c.gws[1].get("/v1/receipts?after=0", headers={"Accept": "application/json"})
        eq(r.status, 200, "GET /v1/receipts")
        items = r.json()["items"]
        eq(([i["type"] for i in items], r.json()["last_seq"]), (["epoch", "receipt"], 1),
           "an epoch, then the receipt")
        holder = {}

        def poll():
            t0 = time.time()
            holder["r"] = c.gws[1].get("/v1/receipts?after=1&wait_ms=10000",
                                       headers={"Accept": "application/json"})
            holder["t"] = time.time() - t0
        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.5)
        post(c.gws[0], batch("second", n=2))
        t.join(15)
        got = holder["r"]
        eq((got.status, [i["receipt"]["batch_id"] for i in got.json()["items"]],
            got.json()["last_seq"]), (200, ["second"], 2), "the long-poll's answer")
        ok(holder["t"] < 1.5, "woken by the commit on the other replica (%.3f s)" % holder["t"])
        shard = got.json()["items"][0]["receipt"]["placements"][0]["shard"]
        a = c.gws[1].get("/v1/shards/%s/assignments?after=1" % shard,
                         headers={"Accept": "application/json"}).json()
        want = [p["id"] for p in got.json()["items"][0]["receipt"]["placements"]
                if p["shard"] == shard]
        eq(([i["id"] for i in a["items"]], a["last_seq"]), (want, 2), "the shard's assignments")
        c.health()


if __name__ == "__main__":
    sys.exit(sgpg.main(sys.argv))
