"""The model-based operation test of `--store postgres` (docs/tools.md §9, docs/journal.md §10):
random sequences of what operators do to replicas that share one PostgreSQL, against the real
binaries and a real PostgreSQL (ops/pg.sh, one for the run, a database per sequence).

Operations: POST bursts on a random replica (fresh, retried, reused ids with other content);
PUT of the membership on a random replica (applied, stale If-Match); kill -9 or SIGTERM of a
replica, then its start; kill -9 of PostgreSQL, then its start.

After every start, the model checks on every replica that each acknowledged batch reads back
byte for byte, that /v1/shards holds the model's totals and that the receipts feed holds each
acknowledged receipt once; after a PUT, that every replica serves its epoch; at the end of a
sequence, that `shardgate-health check --store` passes as the read-only role.
"""
import json
import os
import shutil
import sys
import tempfile
import traceback

import sgpg
import sgtest
from gateway_model import (SHARD_IDS, add_totals, assignments_due, batch_again, changes,
                           feed_assignments, feed_receipts, membership, memberships, nonzero)
from sgtest import eq, run_gateway, write

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

REPLICAS = 2
STATS = {"sequences": 0, "operations": 0, "restarts": 0, "kills": 0, "pg_kills": 0,
         "epochs_back": 0}
PG = []  # the run's one PostgreSQL, started by the first sequence
replicas = st.integers(0, REPLICAS - 1)


def postgres():
    if not PG:
        PG.append(sgpg.Postgres("shardgate-pg-model-"))
    return PG[0]


def finish(passed):
    """Stops the run's PostgreSQL; its dir is removed when every sequence passed."""
    sgpg.finish(passed)


class StoreModel(RuleBasedStateMachine):
    """Replicas on one database, and what they acknowledged."""

    def __init__(self):
        super().__init__()
        STATS["sequences"] += 1
        self.pg = postgres()
        if not self.pg.started:
            self.pg.start()
        self.db = "model%d" % STATS["sequences"]
        self.pg.sql("postgres", "CREATE DATABASE %s OWNER shardgate" % self.db, user="postgres")
        self.url = self.pg.db_url(self.db, "shardgate")
        r = run_gateway("db", "init", "--store", self.url)
        eq((r.returncode, r.stderr), (0, ""), "db init")
        self.dir = tempfile.mkdtemp(prefix="shardgate-model-store-")
        self.shards = os.path.join(self.dir, "shards.json")
        self.states = ["online"] * 3 + ["offline", "draining"]
        write(self.shards, json.dumps(membership(self.states)))
        self.epochs = {}  # epoch id -> the membership states it was recorded with
        self.token = sgpg.admin_token(self.dir)
        self.gws = [sgpg.StoreGateway(self.url, shards=self.shards,
                                      args=["--admin-token-file", self.token])
                    for _ in range(REPLICAS)]
        self.acked = {}   # batch_id -> the 200 body
        self.totals = {}  # shard id -> [load, received]
        self.next_id = 0

    @initialize()
    def begin(self):
        for i in range(REPLICAS):
            self.start(i)
        self.epochs[sgpg.current_epoch(self.gws[0])] = tuple(self.states)

    # --- the replicas and the database -------------------------------------------------------

    def start(self, i):
        STATS["restarts"] += 1
        self.gws[i].start()
        self.check(self.gws[i])

    def teardown(self):
        failed = sys.exc_info()[1]
        if isinstance(failed, Exception) and not type(failed).__module__.startswith("hypothesis") \
                and not STATS.get("failed"):
            # the first failure, said as it happens: a rerun of its sequence may not repeat it
            STATS["failed"] = 1
            print("model: a step failed:\n%s" % traceback.format_exc(), flush=True)
        for gw in self.gws:
            if gw.proc is not None and gw.proc.poll() is None:
                gw.kill()
        if self.pg.started:
            self.check_health()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- what must be true -----------------------------------------------------------------

    def sequenced(self):
        """Every committed receipt has its seq: a receipt is in the feed and judged by health
        once the sequencer has given it one (docs/journal.md §10), within a second or two of a
        restart of the database (the sequencer asks for its role again each second)."""
        sgtest.wait_until(lambda: self.pg.sql(self.db, "SELECT count(*) FROM shardgate_receipts "
                                              "WHERE seq IS NULL") == [["0"]], 20,
                          "every receipt has a seq")

    def check(self, gw):
        """On one replica: every acknowledged batch byte for byte, the totals, the receipts feed
        and each shard's assignments feed."""
        self.sequenced()
        conn = gw.connect()
        for bid, body in self.acked.items():
            r = gw.get("/v1/batches/" + bid, conn=conn)
            eq((r.status, r.body), (200, body), "GET %s" % bid)
        conn.close()
        eq(nonzero(gw.shard_totals()), nonzero(self.totals), "/v1/shards totals")
        got, seqs = feed_receipts(gw, 0)
        eq(got, self.acked, "the feed's receipts")
        for shard in SHARD_IDS:
            eq(feed_assignments(gw, shard, 0), assignments_due(got, seqs, shard),
               "the assignments feed of %s" % shard)

    def check_health(self):
        """shardgate-health check --store, as the read-only role, passes (after the replicas
        stopped: a receipt left without its seq is not judged, docs/journal.md §10)."""
        code, out, err = sgtest.run_tool(sgtest.HEALTH, [
            "check", "--conf", sgtest.CONF, "--shards", self.shards, "--store",
            self.pg.db_url(self.db)])
        verdict = sgtest.parse_line(out)
        eq((code, verdict and verdict["status"], verdict and verdict["issues"]),
           (0, "pass", []), "shardgate-health check --store (%s)" % err)

    # --- operations ------------------------------------------------------------------------

    @rule(i=replicas, n=st.integers(1, 6), size=st.integers(1, 250))
    def post_fresh(self, i, n, size):
        for _ in range(n):
            bid = "b%d" % self.next_id
            self.next_id += 1
            r = self.gws[i].post(changes(bid, size))
            eq(r.status, 200, "POST %s on replica %d: %r" % (bid, i, r))
            self.acked[bid] = r.body
            add_totals(self.totals, r.body)

    @precondition(lambda self: self.acked)
    @rule(i=replicas, pick=st.integers(0, 10**6), other=st.booleans())
    def post_again(self, i, pick, other):
        """A retry (same content) or a reused id (other content), on any replica."""
        bid = sorted(self.acked)[pick % len(self.acked)]
        r = self.gws[i].post(batch_again(self.acked[bid], other))
        if other:
            eq((r.status, r.error()[0]), (422, "batch_id_reused"), "reuse of %s" % bid)
        else:
            eq((r.status, r.body, r.headers.get("idempotent-replayed")),
               (200, self.acked[bid], "true"), "retry of %s on replica %d" % (bid, i))

    @rule(i=replicas, states=memberships, stale=st.booleans())
    def put_membership(self, i, states, stale):
        """PUT on one replica; every replica then serves the new epoch (LISTEN/NOTIFY)."""
        self.change(i, states, stale)

    @precondition(lambda self: len(self.epochs) > 1)
    @rule(i=replicas, pick=st.integers(0, 10**6))
    def membership_back(self, i, pick):
        """Back to an earlier membership: its epoch comes back under its own id, and the
        receipts after it add to that epoch's totals (docs/journal.md §10)."""
        earlier = sorted(self.epochs)[pick % len(self.epochs)]
        before = self.epochs[earlier]
        STATS["epochs_back"] += 1
        self.change(i, list(before), False)
        eq(sgpg.current_epoch(self.gws[i]), earlier, "the epoch of %s again" % (before,))

    def change(self, i, states, stale):
        gw = self.gws[i]
        current = sgpg.current_epoch(gw)
        sgpg.put_membership(gw, membership(states)["shards"], self.token,
                            if_match="0" * 40 if stale else current, expect=412 if stale else 200)
        if stale:
            return
        self.states = states
        write(self.shards, json.dumps(membership(states)))  # health reads the files in force
        epoch = sgpg.current_epoch(gw)
        self.epochs[epoch] = tuple(states)
        for other in self.gws:
            sgtest.wait_until(lambda: sgpg.current_epoch(other) == epoch, 30,
                              "every replica serves epoch %s" % epoch)

    @rule(i=replicas, kill=st.booleans())
    def restart_replica(self, i, kill):
        STATS["kills"] += kill
        if kill:
            self.gws[i].kill()
        else:
            eq(self.gws[i].stop(), 0, "SIGTERM exits 0")
        self.start(i)

    @rule()
    def kill_postgres(self):
        """kill -9 of PostgreSQL, then its start: every replica is ready again by itself."""
        STATS["pg_kills"] += 1
        self.pg.crash()
        self.pg.start()
        for gw in self.gws:
            sgtest.wait_until(lambda: gw.get("/readyz").status == 200, 60,
                              "a replica ready again after the database's restart")
            self.check(gw)

    @invariant()
    def serving(self):
        STATS["operations"] += 1
        for i, gw in enumerate(self.gws):
            if gw.proc is not None and gw.proc.poll() is not None:
                raise sgtest.Failure("replica %d exited:\n%s" % (i, "\n".join(gw.lines[-20:])))
