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
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgpg  # noqa: E402
import sgtest  # noqa: E402
from sgpg import (Cluster, Postgres, StoreGateway, batch, current_epoch,  # noqa: E402
                  free_port, post, put_membership, sums)
from sgtest import case, eq, ok, run_gateway, wait_until, write  # noqa: E402

V = sgpg.SCHEMA_VERSION  # db/migrations' last
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
        eq((r.returncode, r.stdout), (2, "schema_version 0\nbinary_version %d\n" % V),
           "empty: status")
        r = run_gateway("serve", "--conf", sgtest.CONF, "--shards", sgtest.SHARDS, "--store",
                        pg.url, "--listen", "127.0.0.1:0")
        eq((r.returncode, r.stderr.strip()), (3, "store: the database schema is version 0, this "
           "shardgate needs %d: run `shardgate db init --store URL`" % V), "serve on no schema")
        eq(pg.sql("shardgate", "SHOW data_checksums"), [["on"]],
           "ops/pg.sh initialises with --data-checksums (docs/decisions.md §44)")
        r = run_gateway("db", "init", "--store", pg.url)
        eq((r.returncode, r.stdout), (0, "schema_version 0 -> %d\n" % V), "init")
        r = run_gateway("db", "init", "--store", pg.url)
        eq((r.returncode, r.stderr), (3, "store: the database already holds shardgate's schema "
           "(version %d): use `shardgate db migrate`\n" % V), "second init")
        r = run_gateway("db", "migrate", "--store", pg.url)
        eq((r.returncode, r.stdout, r.stderr), (0, "schema_version %d -> %d\n" % (V, V), ""), "migrate")
        r = run_gateway("db", "status", "--store", pg.url)
        eq((r.returncode, r.stdout), (0, "schema_version %d\nbinary_version %d\n" % (V, V)), "status")
        pg.sql("shardgate", "INSERT INTO shardgate_schema (version, name) VALUES (%d, 'x')" % (V + 1))
        r = run_gateway("db", "migrate", "--store", pg.url)
        eq((r.returncode, r.stderr), (3, "store: the database schema is version %d, newer than "
           "this shardgate's %d\n" % (V + 1, V)), "newer schema")
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
                       (["--store", "file"], "--state-dir DIR is required"),
                       (["--state-dir", "/tmp", "--read-store", "postgres://x"],
                        "--read-store takes a postgres:// URL, with --store postgres://"),
                       (["--store", "postgres://x", "--read-store", "file"],
                        "--read-store takes a postgres:// URL, with --store postgres://")):
        r = run_gateway("serve", "--conf", sgtest.CONF, "--shards", sgtest.SHARDS, *args)
        eq((r.returncode, r.stderr.splitlines()[0]), (64, "shardgate: " + what), "usage %r" % args)
    for args in (["status"], ["drop", "--store", "postgres://x"], ["init", "--store", "x"]):
        eq(run_gateway("db", *args).returncode, 64, "db usage %r" % args)


@case("db_command")
def a_long_receipt_is_stored_compressed_with_lz4():
    """Schema version 4 (docs/decisions.md §43): a 300-change receipt is stored lz4-compressed,
    and read back byte for byte by GET /v1/batches/{id} and the feed; a 3-change one is too
    short to be compressed at all."""
    with Cluster(1) as c:
        gw = c.gws[0]
        long, short = post(gw, batch("long", n=300)), post(gw, batch("short"))
        eq((long.status, short.status), (200, 200), "POSTs")
        ok(len(long.body) > 30000, "a long receipt: %d bytes" % len(long.body))
        c.sequenced()
        eq(c.sql("SELECT batch_id, pg_column_compression(receipt), octet_length(receipt) FROM "
                 "shardgate_receipts ORDER BY seq"),
           [["long", "lz4", str(len(long.body) - 1)], ["short", "", str(len(short.body) - 1)]],
           "how each is stored (without the answer's newline)")
        ok(int(c.sql("SELECT pg_column_size(receipt) FROM shardgate_receipts WHERE batch_id = "
                     "'long'")[0][0]) < len(long.body) // 3, "compressed to under a third")
        eq(gw.get("/v1/batches/long").body, long.body, "read back")
        feed = gw.get("/v1/receipts?after=0", headers={"Accept": "application/json"}).json()
        eq([json.dumps(i["receipt"], separators=(",", ":")).encode() + b"\n"
            for i in feed["items"] if i["type"] == "receipt"], [long.body, short.body],
           "the feed's receipts")


@case("db_command")
def a_version_1_database_migrates_with_its_receipts():
    """A database at schema version 1 (every receipt with its seq, the totals added at commit)
    with four receipts: `db migrate` takes it to version 2, a replica serves it, two more
    batches follow with seqs 5 and 6, the feed has all six, and health passes."""
    with Cluster(1) as c:
        for k in range(4):
            eq(post(c.gws[0], batch("v1-%d" % k, n=4, seed=k)).status, 200, "POST %d" % k)
        c.sequenced()
        eq(c.gws[0].stop(), 0, "replica exit")
        copy = {
            "shardgate_epochs": "epoch_seq, epoch, first_seq, record",
            "shardgate_receipts": "batch_id, seq, fingerprint, epoch, receipt",
            "shardgate_totals": "epoch, shard, weight, capacity, received, load",
        }
        rows = {table: c.sql("SELECT %s FROM %s ORDER BY 1, 2" % (cols, table))
                for table, cols in copy.items()}
        pg = c.pg
        pg.sql("postgres", "CREATE DATABASE old OWNER shardgate", user="postgres")
        with open(sgtest.src("db", "migrations", "0001_init.sql"), encoding="utf-8") as f:
            init = f.read()
        pg.sql("old", "CREATE TABLE shardgate_schema (version integer PRIMARY KEY, name text "
               "NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()); " + init +
               "; INSERT INTO shardgate_schema (version, name) VALUES (1, '0001_init.sql')")
        for table, cols in copy.items():
            values = ",".join("(%s)" % ",".join("$v$%s$v$" % v for v in row)
                              for row in rows[table])
            pg.sql("old", "INSERT INTO %s (%s) VALUES %s" % (table, cols, values))
        pg.sql("old", "UPDATE shardgate_sequencer SET last_seq = 4")
        url = pg.db_url("old", "shardgate")
        r = run_gateway("db", "status", "--store", url)
        eq((r.returncode, r.stdout), (2, "schema_version 1\nbinary_version %d\n" % V), "status")
        r = run_gateway("db", "migrate", "--store", url)
        eq((r.returncode, r.stdout, r.stderr), (0, "schema_version 1 -> %d\n" % V, ""), "migrate")
        with StoreGateway(url) as gw:
            for k in range(4, 6):
                eq(post(gw, batch("v1-%d" % k, n=4, seed=k)).status, 200, "POST %d" % k)
            eq(post(gw, batch("v1-0", n=4, seed=0)).headers.get("idempotent-replayed"), "true",
               "a batch of version 1 replays")
            wait_until(lambda: pg.sql("old", "SELECT count(*) FROM shardgate_receipts WHERE "
                                      "seq IS NULL") == [["0"]], 10, "every receipt has a seq")
            feed = gw.get("/v1/receipts?after=0", headers={"Accept": "application/json"}).json()
            eq([(i["seq"], i["receipt"]["batch_id"]) for i in feed["items"]
                if i["type"] == "receipt"], [(k + 1, "v1-%d" % k) for k in range(6)],
               "the feed: the four of version 1, then the two new ones")
        code, out, err = sgtest.run_tool(sgtest.HEALTH, [
            "check", "--conf", sgtest.CONF, "--shards", sgtest.SHARDS, "--store",
            pg.db_url("old", "shardgate")])
        eq((code, (sgtest.parse_line(out) or {}).get("status")), (0, "pass"), "health: %s" % out)


# --- a row read back is the row written -----------------------------------------------------

def damaged(r, batch_id, what):
    """r is the 500 record_corrupt of a damaged receipt row (docs/operations.md §5.2)."""
    eq((r.status, r.error(), r.json()["error"]["message"]),
       (500, ("record_corrupt", ""), "stored receipt damaged: the shardgate_receipts row of batch_id "
        "\"%s\": %s; nothing of it is served (docs/operations.md §5.2)" % (batch_id, what)),
       "a damaged row: %r" % r)


@case("damage")
def a_changed_receipt_row_is_answered_500_never_served():
    """docs/journal.md §10: the receipt_sha256 the gateway wrote with each row is checked by
    every read. A byte changed in d-1's receipt: GET, the POST of its batch again and the feed
    through it answer 500 record_corrupt; d-2 given d-3's receipt (and its digest): GET names
    another batch. Putting the bytes back repairs it, and health --store, which reported both
    rows, passes again."""
    with Cluster(1) as c:
        gw = c.gws[0]
        docs = [batch("d-%d" % k, n=3, seed=k) for k in (1, 2, 3)]
        bodies = [post(gw, d).body for d in docs]
        c.sequenced()
        c.sql("UPDATE shardgate_receipts SET receipt = regexp_replace(receipt, '\"size\":', "
              "'\"size\":1') WHERE batch_id = 'd-1'")
        c.sql("UPDATE shardgate_receipts SET (receipt, receipt_sha256) = (SELECT receipt, "
              "receipt_sha256 FROM shardgate_receipts WHERE batch_id = 'd-3') WHERE batch_id = "
              "'d-2'")
        sha = "its receipt does not hash to its receipt_sha256"
        damaged(gw.get("/v1/batches/d-1"), "d-1", sha)
        damaged(post(gw, docs[0]), "d-1", sha)
        damaged(gw.get("/v1/receipts?after=0", headers={"Accept": "application/json"}), "d-1",
                sha)
        damaged(gw.get("/v1/batches/d-2"), "d-2", "its receipt names another batch_id")
        eq(gw.get("/v1/batches/d-3").body, bodies[2], "d-3 is sound")
        counted = [line for line in gw.get("/metrics").body.decode().splitlines()
                   if line.startswith("shardgate_record_checksum_failures_total ")]
        eq(counted, ["shardgate_record_checksum_failures_total 4"], "each counted")
        eq(gw.get("/readyz").status, 200, "ready still: the row is the database's (docs/api.md §1)")
        code, out, err = sgtest.run_tool(sgtest.HEALTH, [
            "check", "--conf", sgtest.CONF, "--shards", sgtest.SHARDS, "--store",
            c.pg.db_url("shardgate")])
        eq((code, [i.split(":")[0] for i in sgtest.parse_line(out)["issues"]
                   if i.startswith("store_")]),
           (2, ["store_batch_id", "store_receipt_sha256"] + ["store_totals"] * 3),
           "health sees both rows (%s)" % out)
        for doc, body in zip(docs[:2], bodies[:2]):
            c.sql("UPDATE shardgate_receipts SET receipt = $q$%s$q$ WHERE batch_id = '%s'"
                  % (body.decode().rstrip("\n"), doc["batch_id"]))
        c.sql("UPDATE shardgate_receipts SET receipt_sha256 = sha256(convert_to(receipt, 'UTF8')) "
              "WHERE batch_id = 'd-2'")
        eq([gw.get("/v1/batches/%s" % d["batch_id"]).body for d in docs], bodies, "repaired")
        r = post(gw, docs[0])
        eq((r.status, r.headers.get("idempotent-replayed"), r.body), (200, "true", bodies[0]),
           "the POST again replays")
        c.health()


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


@case("replicas")
def commits_do_not_wait_for_the_sequencer_row():
    """No row every replica's commit takes (docs/journal.md §10): while another session holds
    the sequencer row, POSTs through three replicas are answered, their receipts committed with
    no seq yet and counted in GET /v1/shards; they get seqs 1..3 once the row is free."""
    with Cluster(3) as c:
        holder = hold(c, "BEGIN;\nSELECT last_seq FROM shardgate_sequencer FOR UPDATE;")
        try:
            eq(holder.stdout.readline(), "0\n", "the row held by another session")
            docs = [batch("held-%d" % k, n=5, seed=k) for k in range(3)]
            # a commit takes milliseconds; one that waits for the row would wait for ever
            got = concurrently([lambda gw=gw, d=d: post(gw, d, conn=gw.connect(timeout=10))
                                for gw, d in zip(c.gws, docs)])
            eq([r and r.status for r in got], [200, 200, 200], "answered while the row is held")
            eq(holder.poll(), None, "the row still held when they were answered")
            eq(c.sql("SELECT batch_id FROM shardgate_receipts WHERE seq IS NULL ORDER BY 1"),
               [["held-0"], ["held-1"], ["held-2"]], "committed, waiting for their seqs")
            want = sums({k: (d["batch_id"], r.json()) for k, (d, r) in enumerate(zip(docs, got))})
            eq({k: v for k, v in c.gws[0].shard_totals().items() if v != [0, 0]}, want,
               "GET /v1/shards counts them already")
        finally:
            holder.communicate("COMMIT;\n", timeout=30)
        receipts, last = c.receipts()
        eq((sorted(receipts), last), ([1, 2, 3], 3), "then seqs 1..3")
        eq(sorted(b for b, _ in receipts.values()), ["held-0", "held-1", "held-2"], "each once")
        c.health()


def hold(c, sql):
    """A psql session of the test's that ran `sql` and stays open until closed (communicate)."""
    p = subprocess.Popen(
        ["psql", "-h", "127.0.0.1", "-p", str(c.pg.port), "-U", "shardgate", "-d", "shardgate",
         "-qAt", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=dict(os.environ, PGPASSFILE=c.pg.passfile(
            "shardgate")))
    p.stdin.write(sql + "\n")
    p.stdin.flush()
    return p


@case("sequencer")
def the_sequencer_role_passes_to_a_live_replica():
    """The role is a session lock: while another session holds it no replica gives seqs (the
    commits are answered all the same); when that session ends, a replica takes the role and
    the receipts get theirs; after a kill -9 of one replica, the other gives seqs to what is
    committed through it. Seqs 1..5, no gap; health passes."""
    c = Cluster(2)
    holder = hold(c, "SELECT pg_advisory_lock(7239861041);")
    try:
        eq(holder.stdout.readline(), "\n", "the role held by the test's session")
        with c:
            for k, gw in enumerate(c.gws):
                eq(post(gw, batch("role-%d" % k)).status, 200, "POST through replica %d" % k)
            time.sleep(1.5)  # more than a tick (1 s): each replica has asked for the role
            eq(c.sql("SELECT count(*) FROM shardgate_receipts WHERE seq IS NULL"), [["2"]],
               "no seq given while the role is held elsewhere")
            holder.communicate("", timeout=30)  # the session ends, and its lock with it
            c.sequenced()
            c.gws[0].kill()
            for k in range(2, 5):
                eq(post(c.gws[1], batch("role-%d" % k)).status, 200, "POST %d after the kill" % k)
            receipts, last = c.receipts()
            eq((sorted(receipts), last), ([1, 2, 3, 4, 5], 5), "seqs 1..5")
            eq(sorted(b for b, _ in receipts.values()), ["role-%d" % k for k in range(5)],
               "each batch once")
            c.health()
    finally:
        if holder.poll() is None:
            holder.kill()


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
        # GET /v1/moves (docs/api.md §20) on a replica that heard of the change: the plan of the
        # two epochs' rows, the bytes `shardgate plan --ranges` prints for their files.
        d = write(os.path.join(c.pg.base, "d-online.json"), json.dumps({"shards": SHARDS_D_ONLINE}))
        plan = run_gateway("plan", "--conf", sgtest.CONF, "--shards", sgtest.SHARDS, "--to", d,
                           "--ranges")
        eq(plan.returncode, 0, "plan --ranges: %s" % plan.stderr)
        moves = c.gws[2].get("/v1/moves")
        eq((moves.status, moves.body.decode()),
           (200, '{"items":[{"type":"moves","from_epoch_seq":1,"epoch_seq":2,%s],'
                 '"last_epoch_seq":2}\n' % plan.stdout.rstrip("\n")[1:]),
           "GET /v1/moves from the database's rows")
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
def an_epoch_comes_back_under_its_own_id():
    """A -> B -> A (docs/contract.md §7: an epoch may come back later under its own id): the
    third epoch has the first's id and its own epoch_seq and first_seq; the receipts under
    either occurrence of A add to A's totals; a replica started afterwards serves it; health
    passes."""
    with Cluster(2) as c:
        gw = c.gws[0]
        first = current_epoch(gw)
        eq(post(gw, batch("a-1", n=6, seed=1)).status, 200, "POST under A")
        put_membership(gw, SHARDS_D_ONLINE, c.token)
        eq(post(gw, batch("b-1", n=6, seed=2)).status, 200, "POST under B")
        back = put_membership(gw, SHARDS, c.token).json()["epoch"]
        eq(back, first, "A again, under its own id")
        wait_until(lambda: current_epoch(c.gws[1]) == first, 20, "the other replica applies it")
        again = post(c.gws[1], batch("a-2", n=6, seed=3))
        eq((again.status, again.json()["epoch"]), (200, first), "POST under A again")
        c.sequenced()
        epochs = c.sql("SELECT epoch_seq, epoch, first_seq FROM shardgate_epochs ORDER BY 1")
        eq(epochs, [["1", first, "1"], ["2", epochs[1][1], "2"], ["3", first, "3"]],
           "the chain in the database")
        receipts, _ = c.receipts()
        want = sums(receipts)
        got = gw.get("/v1/shards").json()["shards"]
        eq({s["id"]: [s["load_total"], s["received_total"]] for s in got if s["id"] in want},
           want, "totals of all three receipts")
        rows = c.sql("SELECT shard, received FROM shardgate_totals WHERE epoch = '%s' "
                     "ORDER BY 1" % first)
        a_only = sums({k: v for k, v in receipts.items() if v[0] != "b-1"})
        eq([[k, str(v[1])] for k, v in sorted(a_only.items())], rows,
           "A's rows hold the receipts of both its occurrences")
        for g in c.gws:
            eq(g.stop(), 0, "replica exit")
        with StoreGateway(c.pg.url) as fresh:
            eq(current_epoch(fresh), first, "a restarted replica serves A")
        c.health()


@case("membership")
def an_epoch_comes_after_the_receipts_waiting_for_their_seqs():
    """A membership change gives the receipts committed before it their seqs first, in its own
    transaction, so the new epoch's first_seq follows every one of them (docs/journal.md §10).
    The test's session holds the sequencer role, so the receipt is still waiting when the PUT
    comes: an event, not a race with the sequencer's poll."""
    c = Cluster(1)
    holder = hold(c, "SELECT pg_advisory_lock(7239861041);")
    try:
        eq(holder.stdout.readline(), "\n", "the role held by the test's session")
        with c:
            gw = c.gws[0]
            eq(post(gw, batch("waiting-1", n=6, seed=4)).status, 200, "POST under A")
            eq(c.sql("SELECT batch_id FROM shardgate_receipts WHERE seq IS NULL"),
               [["waiting-1"]], "committed, waiting for its seq")
            new = put_membership(gw, SHARDS_D_ONLINE, c.token).json()["epoch"]
            eq(c.sql("SELECT batch_id, seq FROM shardgate_receipts"), [["waiting-1", "1"]],
               "the change gave it its seq")
            eq(c.sql("SELECT epoch_seq, epoch, first_seq FROM shardgate_epochs ORDER BY 1")[1],
               ["2", new, "2"], "the new epoch after it")
            holder.communicate("", timeout=30)
            eq(post(gw, batch("after-1", n=6, seed=5)).status, 200, "POST under B")
            c.health(shards=write(os.path.join(c.pg.base, "d.json"),
                                  json.dumps({"shards": SHARDS_D_ONLINE})))
    finally:
        if holder.poll() is None:
            holder.kill()


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


@case("cutoff")
def a_replica_cut_off_answers_503_and_comes_back_on_the_new_epoch():
    """Replica B reaches the database through a proxy the test cuts: while cut off, a change
    made through A is recorded, B answers POST and /readyz 503 (nothing recorded); once the
    link is mended B serves the new epoch by itself, and the batch it refused is accepted."""
    c = Cluster(2)
    link = sgpg.CutProxy(c.pg.port)
    c.gws[1].url = link.url(c.pg)
    with c:
        a, b = c.gws
        eq(post(b, batch("via-b")).status, 200, "B commits through its link")
        first = current_epoch(b)
        link.cut()
        new = put_membership(a, SHARDS_D_ONLINE, c.token).json()["epoch"]
        wait_until(lambda: b.get("/readyz").status == 503, 10, "B not ready while cut off")
        r = post(b, batch("refused"))
        eq((r.status, r.error()[0]), (503, "store_unavailable"), "POST through B while cut off")
        eq(c.sql("SELECT count(*) FROM shardgate_receipts WHERE batch_id = 'refused'"), [["0"]],
           "nothing recorded")
        link.mend()
        wait_until(lambda: b.get("/readyz").status == 200 and current_epoch(b) == new, 15,
                   "B ready again, on the new epoch")
        ok(new != first, "a new epoch")
        r = post(b, batch("refused"))
        eq((r.status, r.json()["epoch"], "idempotent-replayed" in r.headers), (200, new, False),
           "the refused batch, accepted now under the new epoch")
        c.health(shards=write(os.path.join(c.pg.base, "d.json"),
                              json.dumps({"shards": SHARDS_D_ONLINE})))


@case("cutoff")
def reads_go_to_the_read_store():
    """--read-store: the reads of batches, totals and the feed go to its database (here the
    same one through a proxy the test cuts), the commits to --store. Cut, the reads are 503
    and a POST is still answered; mended, the reads answer again, the new batch included."""
    c = Cluster(1)
    link = sgpg.CutProxy(c.pg.port)
    c.gws[0].args += ["--read-store", link.url(c.pg)]
    with c:
        gw = c.gws[0]
        eq(post(gw, batch("read-1")).status, 200, "POST")
        c.sequenced()
        eq(gw.get("/v1/batches/read-1").status, 200, "GET /v1/batches through the read store")
        link.cut()
        reads = ("/v1/batches/read-1", "/v1/shards", "/v1/receipts?after=0")
        eq([gw.get(path).status for path in reads], [503, 503, 503], "the reads while it is cut")
        eq(post(gw, batch("read-2")).status, 200, "a POST commits through --store meanwhile")
        link.mend()
        c.sequenced()
        wait_until(lambda: gw.get("/v1/batches/read-2").status == 200, 10, "reads again")
        feed = gw.get("/v1/receipts?after=0", headers={"Accept": "application/json"}).json()
        eq([i["receipt"]["batch_id"] for i in feed["items"] if i["type"] == "receipt"],
           ["read-1", "read-2"], "the feed through the read store")


# --- the feed, fed by other replicas ----------------------------------------------------------

@case("feed")
def a_long_poll_on_one_replica_wakes_on_a_commit_through_another():
    with Cluster(2) as c:
        post(c.gws[0], batch("first", n=6))
        c.sequenced()  # in the feed once it has its seq (docs/journal.md §10)
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
