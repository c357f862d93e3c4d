#!/usr/bin/env python3
"""The model-based operation test (docs/tools.md §9): random sequences of what operators do to
a gateway and its state dir, run against the real binaries, with a small model of what must
then be true. Hypothesis's stateful testing generates the sequences and shrinks a failing one
to a short sequence, printed with the seed that replays it.

Operations: POST bursts (fresh, replayed, reused ids with other content, invalid bodies); PUT
of the membership (applied, stale If-Match, invalid); SIGHUP with an edited membership or
capacity policy; a PUT begun before a SIGHUP and finished after it; kill -9, at random and at the named points of a rotation, a checkpoint, an
index flush and `journal archive` (SHARDGATE_TEST_CRASH_AT); SIGTERM; `journal archive`;
deleting index/; a flipped byte in a file under index/; a changed byte in a journal line; a
backup of the whole state dir and, later, its restore (docs/operations.md §12.4). The
server runs with 64 KiB segments and 100 ms checkpoints, so sequences rotate and checkpoint.

After every restart, the model checks that every acknowledged batch reads back byte for byte
(410 once archived), that the receipts feed and each shard's assignments feed hold them, that
/v1/shards holds the model's totals and /v1/ring the model's epoch; at the end of a sequence,
that `journal verify`, `shardgate-health check` and `probe.py journal` pass.

usage: gateway_model.py SHARDGATE HEALTH SOURCE_DIR [--seed N] [--sequences N] [--steps N]
       [--long]
"""
import argparse
import copy
import http.client
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Failure, Server, eq, ok, read, run, run_server, src, write  # noqa: E402

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant,  # noqa: E402
                                 precondition, rule)  # noqa: E402

ADMIN = "model-admin-token"
ARGS = ["--segment-bytes", "65536", "--checkpoint-interval", "100ms"]
SHARD_IDS = ["shard-a", "shard-b", "shard-c", "shard-d", "shard-e"]
STATES = ["online", "draining", "offline"]
STATS = {"sequences": 0, "maglev": 0, "jump": 0, "operations": 0, "restarts": 0, "kills": 0, "archives": 0, "legacy": 0,
         "damaged": 0, "points": 0, "repeats": 0, "beside_sighup": 0, "failed_puts": 0,
         "repairs": 0, "index_rebuilt": 0, "archives_refused": 0, "backups": 0, "restores": 0,
         "failed": 0}
# Named kill -9 points of the server's multi-step writes (gateway/core/crashpoint.h).
SERVER_POINTS = ["rotation-sealed", "rotation-renamed", "checkpoint-written", "index-flushed"]
MISMATCH = "checksum mismatch: the line's crc32 is not that of its bytes"
UNCOVERED = ": archived (archive.jsonl) and no usable checkpoint covers it"

memberships = st.lists(st.sampled_from(STATES), min_size=5, max_size=5).filter(
    lambda states: "online" in states)


def membership(states):
    return {"shards": [{"id": i, "state": s, "capacity": 20, "weight": 1}
                       for i, s in zip(SHARD_IDS, states)]}


def changes(batch_id, n, salt=""):
    return {"batch_id": batch_id,
            "changes": [{"id": "c%d" % i, "key": "%s%s:%d" % (batch_id, salt, i), "size": 1 + i % 3}
                        for i in range(n)]}


def body_of(doc, compact):
    """The POST body: compact, the canonical form the gateway hashes as received, or with
    json.dumps' spaces, which the strict reader takes (docs/journal.md §3.1)."""
    return json.dumps(doc, separators=(",", ":") if compact else None).encode()


def add_totals(totals, body):
    """Adds an acknowledged receipt's per-shard load and received to totals {shard: [l, r]}."""
    for sid, t in json.loads(body)["shards"].items():
        have = totals.setdefault(sid, [0, 0])
        have[0] += t["load"]
        have[1] += t["received"]


def nonzero(totals):
    return {k: v for k, v in totals.items() if v != [0, 0]}


def batch_again(body, other):
    """The batch of an acknowledged receipt, rebuilt from its placements (so the fingerprint's
    canonical form is checked too); `other`: its first key changed, another fingerprint."""
    doc = {"batch_id": json.loads(body)["batch_id"], "changes": [
        {"id": p["id"], "key": p["key"], "size": p["size"]}
        for p in json.loads(body)["placements"]]}
    if other:
        doc["changes"][0]["key"] += "x"
    return doc


def feed_pages(server, after, path="/v1/receipts"):
    """Each answer of a feed (GET /v1/receipts, or a shard's assignments) from `after` on, to
    the first that is not a 200 page or that adds nothing."""
    while True:
        r = server.get("%s?after=%d&limit=1000" % (path, after))
        yield r
        if r.status != 200:
            return
        last = json.loads(r.body.split(b"\n")[-2])["last_seq"]
        if last == after:
            return
        after = last


def feed_receipts(server, after):
    """({batch_id: receipt bytes}, {batch_id: seq}) of GET /v1/receipts from `after` to its
    end, each id once."""
    seen, seqs = {}, {}
    for r in feed_pages(server, after):
        eq(r.status, 200, "GET /v1/receipts from %d" % after)
        for line in r.body.split(b"\n")[:-2]:
            if line.startswith(b'{"type":"receipt"'):
                bid = json.loads(line)["receipt"]["batch_id"]
                eq(bid in seen, False, "%s once in the feed" % bid)
                seen[bid] = line[line.index(b'"receipt":') + 10:-1] + b"\n"
                seqs[bid] = json.loads(line)["seq"]
    return seen, seqs


def feed_assignments(server, shard, after):
    """[(seq, batch_id, epoch, id, key, size)] of GET /v1/shards/{shard}/assignments from
    `after` to its end (docs/api.md §18)."""
    got = []
    path = "/v1/shards/%s/assignments" % shard
    for r in feed_pages(server, after, path):
        eq(r.status, 200, "GET %s from %d" % (path, after))
        for line in r.body.split(b"\n")[:-2]:
            if line.startswith(b'{"type":"assignment"'):
                a = json.loads(line)
                got.append((a["seq"], a["batch_id"], a["epoch"], a["id"], a["key"], a["size"]))
    return got


def assignments_due(receipts, seqs, shard):
    """The same list, from the receipts: each placement whose `shard` is this one, in journal
    order and, within a receipt, in placement order."""
    due = []
    for bid in sorted(receipts, key=lambda b: seqs[b]):
        rec = json.loads(receipts[bid])
        due += [(seqs[bid], bid, rec.get("epoch"), p["id"], p["key"], p["size"])
                for p in rec["placements"] if p["shard"] == shard]
    return due


class GatewayModel(RuleBasedStateMachine):
    """One state dir, one server at a time, and what the server acknowledged."""

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="shardgate-model-")
        self.state = os.path.join(self.dir, "state")
        self.adir = os.path.join(self.dir, "archive")
        os.mkdir(self.adir)
        self.conf = os.path.join(self.dir, "dispatch.env")
        write(self.conf, read(src("conf", "dispatch.env")), "wb")
        self.shards = os.path.join(self.dir, "shards.json")
        write(self.shards, json.dumps(membership(["online"] * 3 + ["offline", "draining"])))
        token = os.path.join(self.dir, "admin")
        write(token, ADMIN + "\n")
        os.chmod(token, 0o600)
        self.args = ARGS + ["--admin-token-file", token]
        self.acked = {}    # batch_id -> the 200 body
        self.totals = {}   # shard id -> [load, received], summed from the acknowledged receipts
        self.archived = set()
        self.archived_through = 0  # the last seq archived
        self.next_id = 0
        self.server = None
        self.flipped = False  # a byte of index/ flipped since it was last rebuilt
        self.in_doubt = {}  # batch_id -> its body: POSTs that got no answer (a kill meanwhile)
        self.states = ["online"] * 3 + ["offline", "draining"]  # the membership in force
        self.backup = None  # (the copy of the state dir, what the model knew when it was taken)
        self.policy = "report"  # conf/dispatch.env's DISPATCH_CAPACITY_POLICY
        self.table = None  # the table's slots under maglev or jump; None: conf/dispatch.env's ketama
        self.algorithm = "ketama"
        STATS["sequences"] += 1
        if STATS["sequences"] % 100 == 0:  # a long run says how far it is
            print("model: %s" % json.dumps(STATS), flush=True)

    @initialize(legacy=st.booleans())
    def begin(self, legacy):
        """An empty state dir, or the one-file state dir of an older main (tests/golden)."""
        if legacy:
            STATS["legacy"] += 1
            os.mkdir(self.state, 0o750)
            data = read(src("tests", "golden", "legacy-state", "journal.jsonl"))
            write(os.path.join(self.state, "journal.jsonl"), data, "wb")
            for line in data.split(b"\n"):
                if line.startswith(b'{"type":"receipt"'):
                    body = line[line.index(b'"receipt":') + 10:-1] + b"\n"
                    self.acked[json.loads(line)["receipt"]["batch_id"]] = body
                    add_totals(self.totals, body)
        self.start()

    # --- the server ------------------------------------------------------------------------

    def start(self):
        STATS["restarts"] += 1
        self.server = Server(state_dir=self.state, conf=self.conf, shards=self.shards,
                             args=self.args).start()
        self.reloads = dict.fromkeys(("applied", "unchanged", "refused"), 0)  # since the start
        self.settle_in_doubt()
        self.check_reads()

    def settle_in_doubt(self):
        """A POST that got no answer was committed or not: its retry (same content, docs/api.md
        §3) answers the stored receipt or dispatches it now; either way it is acknowledged."""
        for bid, doc in sorted(self.in_doubt.items()):
            r = self.server.post(doc)
            if self.index_corrupt(r):
                return  # settled by the start after the repair
            if r.status == 200:
                self.acked[bid] = r.body
                add_totals(self.totals, r.body)
            else:
                eq((r.status, r.error()[0]), (422, "over_capacity"), "the retry of %s" % bid)
            del self.in_doubt[bid]

    def stop(self, kill=False):
        STATS["kills"] += kill
        if kill:
            self.server.kill()
        else:
            rc = self.server.stop()
            eq(rc, 0, "SIGTERM exits 0; the server said:\n" + "\n".join(self.server.lines[-20:]))
        self.server = None

    def teardown(self):
        failed = sys.exc_info()[1]
        if isinstance(failed, Exception) and not type(failed).__module__.startswith("hypothesis") \
                and not STATS["failed"]:
            # the first failure, said as it happens: a rerun of its sequence may not repeat it
            STATS["failed"] = 1
            print("model: a step failed:\n%s" % traceback.format_exc(), flush=True)
        try:
            if self.server is not None:
                self.stop()
                self.check_offline()
        except BaseException:
            print("model: the sequence's end failed:\n%s\nmodel: its files are kept in %s"
                  % (traceback.format_exc(), self.dir), flush=True)
            raise
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- what must be true -----------------------------------------------------------------

    def index_corrupt(self, r):
        """A 500 index_corrupt is documented only after a flipped byte in index/ (docs/journal.md
        §9); its documented repair is then made: stop, remove index/, start."""
        if r.status != 500:
            return False
        eq((r.error()[0], self.flipped), ("index_corrupt", True), "a 500 after a flip only")
        self.stop()
        shutil.rmtree(os.path.join(self.state, "index"))
        self.flipped = False
        self.start()
        return True

    def check_reads(self):
        """Every acknowledged batch reads back byte for byte, 410 once archived; the totals."""
        conn = self.server.connect()
        for bid, body in self.acked.items():
            r = self.server.get("/v1/batches/" + bid, conn=conn)
            if self.index_corrupt(r):
                return  # checked again by the start after the repair
            if bid in self.archived:
                eq(r.status, 410, "GET %s: archived" % bid)
            else:
                eq((r.status, r.body), (200, body), "GET %s" % bid)
        conn.close()
        self.check_feed()
        eq(nonzero(self.server.shard_totals()), nonzero(self.totals), "/v1/shards totals")
        self.check_epoch()

    def check_feed(self):
        """The receipts feed from the first seq present holds every acknowledged receipt not
        archived once, its record's receipt bytes those of the POST's answer (docs/api.md §17);
        each shard's assignments feed holds the placements on it of those receipts, at their
        seqs, in order (docs/api.md §18)."""
        want = {b: body for b, body in self.acked.items() if b not in self.archived}
        got, seqs = feed_receipts(self.server, self.archived_through)
        eq(got, want, "the feed's receipts")
        for shard in SHARD_IDS:
            eq(feed_assignments(self.server, shard, self.archived_through),
               assignments_due(got, seqs, shard), "the assignments feed of %s" % shard)

    def check_epoch(self):
        """The ring served is the epoch of the model's membership and policy (docs/contract.md
        §7, computed by sgtest.epoch_of); the membership in force, the --shards file and the
        chain's latest epoch are one (docs/journal.md §11)."""
        epoch = self.epoch_of(membership(self.states), self.policy)
        eq(self.current_epoch(), epoch,
           "GET /v1/ring's epoch: membership %s, policy %s" % (self.states, self.policy))
        r = self.server.get("/v1/admin/membership", headers={"Authorization": "Bearer " + ADMIN})
        eq((json.loads(r.body), json.loads(read(self.shards))),
           (membership(self.states), membership(self.states)),
           "the membership in force and the --shards file")
        eq(self.server.get("/v1/epochs").json()["epochs"][-1]["epoch"], epoch,
           "the chain's latest epoch")
        text = self.server.get("/metrics").body.decode()
        eq({k: int(sgtest.metric_value(text, 'shardgate_reloads_total{result="%s"}' % k))
            for k in self.reloads}, self.reloads,
           "shardgate_reloads_total: SIGHUPs and PUTs since the start, a 412 not one "
           "(docs/api.md §15)")

    def epoch_of(self, doc, policy):
        """The epoch id of a membership document under the contract in force."""
        return sgtest.epoch_of(doc, policy, table=self.table, algorithm=self.algorithm)

    def count_reload(self, before):
        """One reload done, SIGHUP's or a PUT's: applied when the epoch changed."""
        self.reloads["applied" if self.current_epoch() != before else "unchanged"] += 1

    def check_offline(self):
        """journal verify, shardgate-health and probe.py pass on the stopped state dir, which says
        its format (docs/journal.md §1.1)."""
        eq(read(os.path.join(self.state, "format")), b"shardgate-state 1\n", "the format marker")
        r = run_server(["journal", "verify", "--state-dir", self.state])
        eq((r.returncode, r.stderr), (0, ""), "journal verify")
        archive = ["--archive-dir", self.adir] if self.archived else []
        r = run([sgtest.HEALTH, "check", "--conf", self.conf, "--shards", self.shards,
                 "--journal", os.path.join(self.state, "journal.jsonl")] + archive)
        eq(r.returncode, 0, "shardgate-health check: " + r.stdout[:1500])
        r = run([sys.executable, src("client", "probe.py"), "journal", "--state-dir", self.state]
                + archive)
        eq((r.returncode, json.loads(r.stdout)["result"]), (0, "ok"),
           "probe.py journal: " + r.stdout[:1500] + r.stderr[:1500])
        eq(r.returncode, 0, "probe.py journal: " + r.stdout[:1500])

    # --- operations ------------------------------------------------------------------------

    @rule(n=st.integers(1, 6), size=st.integers(1, 250), compact=st.booleans())
    def post_fresh(self, n, size, compact):
        conn = self.server.connect()
        for _ in range(n):
            bid = "b%d" % self.next_id
            self.next_id += 1
            r = self.server.post(body_of(changes(bid, size), compact), conn=conn)
            if self.index_corrupt(r):
                return  # nothing was dispatched
            if r.status == 200:
                self.acked[bid] = r.body
                add_totals(self.totals, r.body)
            else:
                eq((r.status, r.error()[0]), (422, "over_capacity"), "POST %s" % bid)
        conn.close()

    @precondition(lambda self: self.acked)
    @rule(pick=st.integers(0, 10**6), other=st.booleans(), compact=st.booleans())
    def post_again(self, pick, other, compact):
        """A retry (same content) or a reused id (other content) of an acknowledged batch, in
        either form whichever its first POST had: the same content, the same fingerprint."""
        bid = sorted(self.acked)[pick % len(self.acked)]
        r = self.server.post(body_of(batch_again(self.acked[bid], other), compact))
        if self.index_corrupt(r):
            return
        if other:  # docs/api.md §2: another fingerprint, archived or not
            eq((r.status, r.error()[0]), (422, "batch_id_reused"), "reuse of %s" % bid)
        elif bid in self.archived:
            eq(r.status, 410, "retry of archived %s" % bid)
        else:
            eq((r.status, r.body), (200, self.acked[bid]), "retry of %s" % bid)

    @rule(body=st.sampled_from([b"{", b"[]", b'{"batch_id":"x"}', b'{"batch_id":"","changes":[]}',
                                b"PUT"]))
    def invalid(self, body):
        """An invalid POST body (400), or a PUT of an empty membership (422)."""
        if body != b"PUT":
            eq(self.server.post(body).status, 400, "invalid body %r" % body)
            return
        r = self.server.request("PUT", "/v1/admin/membership", body=b'{"shards":[]}',
                                headers={"Content-Type": "application/json",
                                         "Authorization": "Bearer " + ADMIN,
                                         "If-Match": '"%s"' % self.current_epoch()})
        eq(r.status, 422, "PUT of an empty membership")
        self.reloads["refused"] += 1

    def current_epoch(self):
        return self.server.get("/v1/ring").json()["epoch"]

    @rule(states=memberships, stale=st.booleans())
    def put_membership(self, states, stale):
        epoch = "0" * 40 if stale else self.current_epoch()
        r = self.server.request("PUT", "/v1/admin/membership",
                                body=json.dumps(membership(states)).encode(),
                                headers={"Content-Type": "application/json",
                                         "Authorization": "Bearer " + ADMIN,
                                         "If-Match": '"%s"' % epoch})
        eq(r.status, 412 if stale else 200, "PUT")
        if not stale:
            self.states = states
            self.count_reload(epoch)
        self.check_epoch()

    @rule(states=memberships)
    def put_across_sighup(self, states):
        """A PUT whose headers arrive, then a SIGHUP that changes the capacity policy, then the
        PUT's body, its If-Match naming the SIGHUP's epoch: the PUT's epoch is built on the
        contract in force when it applies, not on the one its request began under
        (docs/api.md §15)."""
        policy = "reject" if self.policy == "report" else "report"
        body = json.dumps(membership(states)).encode()
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
        sock.sendall(("PUT /v1/admin/membership HTTP/1.1\r\nHost: x\r\n"
                      "Content-Type: application/json\r\nAuthorization: Bearer %s\r\n"
                      "If-Match: \"%s\"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                      % (ADMIN, self.epoch_of(membership(self.states), policy), len(body))
                      ).encode() + body[:10])
        time.sleep(0.2)  # the request begins on the view before the SIGHUP
        self.reload(self.states, policy)
        before = self.current_epoch()
        status, payload = sgtest.finish_request(sock, body[10:])
        self.states = states
        self.count_reload(before)
        eq((status, json.loads(payload).get("epoch")),
           (200, self.epoch_of(membership(states), policy)), "the PUT across a SIGHUP")
        self.check_epoch()

    @rule(query=st.sampled_from(["", "?max_movement=0.5", "?max_movement=0", "?force=1",
                                 "?max_movement=0&force=1", "?dry_run=1"]),
          cli=st.booleans())
    def put_again(self, query, cli):
        """The membership in force PUT again, or `shardgate admin apply` of it, with any
        parameters: unchanged, nothing written (docs/api.md §15)."""
        epoch = self.current_epoch()
        STATS["repeats"] += 1
        if cli:
            path = os.path.join(self.dir, "again.json")
            write(path, json.dumps(membership(self.states)))
            extra = ["--max-movement", query.split("=")[1].split("&")[0]] \
                if "max_movement" in query else []
            extra += ["--force"] if "force" in query else []
            r = run([sgtest.BIN, "admin", "apply", "--to", path, "--url",
                     "http://127.0.0.1:%d" % self.server.port, "--admin-token-file",
                     os.path.join(self.dir, "admin")] + extra)
            eq((r.returncode, r.stderr, r.stdout.splitlines()[-1:]),
               (0, "", ["unchanged: epoch %s (epoch_seq %d)" % (epoch, self.epoch_seq())]),
               "admin apply of the membership in force %r" % extra)
            self.reloads["unchanged"] += 1
        else:
            r = self.put(membership(self.states), '"%s"' % epoch, query)
            eq((r.status, r.json().get("changed"), r.json().get("moved_points")),
               (200, None, 0) if "dry_run" in query else (200, False, None),
               "PUT of the membership in force %r" % query)
            self.reloads["unchanged"] += "dry_run" not in query
        self.check_epoch()

    def epoch_seq(self):
        return self.server.get("/v1/epochs").json()["epochs"][-1]["epoch_seq"]

    def put(self, doc, if_match, query=""):
        return self.server.request("PUT", "/v1/admin/membership" + query,
                                   body=json.dumps(doc).encode(),
                                   headers={"Content-Type": "application/json",
                                            "Authorization": "Bearer " + ADMIN,
                                            "If-Match": if_match})

    @rule(states=memberships, edited=memberships)
    def put_beside_sighup(self, states, edited):
        """A PUT (If-Match: *) and a SIGHUP of an edited file at once: SIGHUP reads the file
        under the lock the PUT holds (docs/journal.md §11), so whichever runs first, the PUT's
        membership is in force and in the file at the end — unless the PUT repeats the
        membership in force and runs first: then it changes nothing and the SIGHUP applies the
        edit."""
        write(self.shards, json.dumps(membership(edited)))
        STATS["beside_sighup"] += 1
        before = {k: len(self.server.events(k)) for k in
                  ("reload_applied", "reload_unchanged", "reload_refused")}
        got = []
        t = threading.Thread(target=lambda: got.append(self.put(membership(states), "*")))
        t.start()
        self.server.proc.send_signal(signal.SIGHUP)
        t.join(60)
        eq((got[0].status, got[0].json()["epoch"]),
           (200, self.epoch_of(membership(states), self.policy)), "the PUT beside a SIGHUP")
        sgtest.wait_until(lambda: sum(len(self.server.events(k)) for k in before)
                          >= sum(before.values()) + 2, 30, "both reloads' events")
        for k in before:
            self.reloads[k.split("_")[1]] += len(self.server.events(k)) - before[k]
        self.states = states
        if got[0].json()["changed"] is False:
            # The PUT repeated the membership in force, so it changed nothing, the file's edit
            # included (docs/api.md §15); the SIGHUP read that edit after it, and applied it
            # unless it refused it. A refused edit stays in the file: the operator puts the
            # file back, as after any refused SIGHUP.
            if self.current_epoch() == self.epoch_of(membership(edited), self.policy):
                self.states = edited
            else:
                write(self.shards, json.dumps(membership(states)))
        self.check_epoch()

    @rule(states=memberships, install=st.booleans())
    def put_that_fails(self, states, install):
        """A PUT whose epoch record the journal refuses (a file size limit: EFBIG), or whose file
        cannot be installed after it (--shards became a directory): 503, --shards as before, the
        membership in force as before (docs/journal.md §11). The journal that refused is
        unavailable: the server is restarted."""
        if self.epoch_of(membership(states), self.policy) == self.current_epoch():
            return
        before = read(self.shards)
        STATS["failed_puts"] += 1
        if install:
            os.unlink(self.shards)
            os.mkdir(self.shards)
        else:
            size = os.path.getsize(os.path.join(self.state, "journal.jsonl"))
            run(["prlimit", "--pid", str(self.server.proc.pid), "--fsize=%d" % (size + 100)])
        r = self.put(membership(states), '"%s"' % self.current_epoch())
        eq((r.status, r.error()[0]), (503, "reload_failed"), "the failing PUT")
        self.reloads["refused"] += 1
        if install:
            os.rmdir(self.shards)
            write(self.shards, before, "wb")
            self.check_epoch()
        else:
            eq(read(self.shards), before, "--shards after a refused record")
            self.stop(kill=True)
            self.start()

    def killed_at(self, point):
        """The server, started with SHARDGATE_TEST_CRASH_AT=point, died there by SIGKILL."""
        self.server.proc.wait(30)
        self.server._reader.join(5)  # every line it wrote read
        eq((self.server.proc.returncode, self.server.events("test_crash_point")),
           (-signal.SIGKILL, [{"event": "test_crash_point", "point": point}]),
           "killed at %s" % point)
        STATS["kills"] += 1
        STATS["points"] += 1

    @rule(states=memberships, point=st.sampled_from(["shards-staged", "epoch-recorded",
                                                     "shards-installed"]))
    def kill_during_put(self, states, point):
        """kill -9 at a step of a PUT (SHARDGATE_TEST_CRASH_AT, docs/journal.md §11): the start
        has the old membership before the file is installed, the new one after."""
        if self.epoch_of(membership(states), self.policy) == self.current_epoch():
            return
        self.stop()
        self.server = Server(state_dir=self.state, conf=self.conf, shards=self.shards,
                             args=self.args, env={"SHARDGATE_TEST_CRASH_AT": point}).start()
        try:
            self.put(membership(states), "*")
        except (OSError, http.client.HTTPException):
            pass
        self.killed_at(point)
        if point == "shards-installed":
            self.states = states
        self.server = None
        self.start()

    @rule(states=memberships, policy=st.sampled_from(["report", "reject"]))
    def sighup(self, states, policy):
        self.reload(states, policy)
        self.check_epoch()

    def reload(self, states, policy):
        """The shards file and the policy edited, then SIGHUP and its event."""
        was = self.current_epoch()
        write(self.shards, json.dumps(membership(states)))
        self.set_policy(policy)
        events = ("reload_applied", "reload_unchanged", "reload_refused")

        def sighups():  # a PUT logs its reload too (docs/api.md §15), source admin
            return sum(e["source"] == "sighup" for name in events
                       for e in self.server.events(name))
        before = sighups()
        self.server.proc.send_signal(signal.SIGHUP)
        sgtest.wait_until(lambda: sighups() > before, 30, "the reload's event")
        eq([e for e in self.server.events("reload_refused") if e["source"] == "sighup"], [],
           "no SIGHUP refused")
        self.states = states
        self.count_reload(was)

    def set_policy(self, policy):
        text = read(self.conf).decode()
        text = "\n".join("DISPATCH_CAPACITY_POLICY=" + policy
                         if l.startswith("DISPATCH_CAPACITY_POLICY=") else l
                         for l in text.split("\n"))
        write(self.conf, text)
        self.policy = policy

    @rule(algorithm=st.sampled_from(["ketama", "maglev", "jump"]), kill=st.booleans())
    def switch_algorithm(self, algorithm, kill):
        """A restart with another of the contract's placements (docs/contract.md §1, §10, §11):
        a reload cannot switch it, a start can; the policy kept, a new epoch when it changed."""
        self.stop(kill=kill)
        size = {"ketama": "DISPATCH_VNODES=160", "maglev": "DISPATCH_MAGLEV_TABLE=251",
                "jump": "DISPATCH_JUMP_SLOTS=256"}
        lines = [l for l in read(self.conf).decode().split("\n")
                 if not l.startswith(("DISPATCH_HASH_RING=", "DISPATCH_VNODES=",
                                      "DISPATCH_MAGLEV_TABLE=", "DISPATCH_JUMP_SLOTS="))]
        write(self.conf, "\n".join(["DISPATCH_HASH_RING=" + algorithm, size[algorithm]] + lines))
        STATS["maglev"] += algorithm == "maglev"
        STATS["jump"] += algorithm == "jump"
        self.algorithm = algorithm
        self.table = {"maglev": 251, "jump": 256}.get(algorithm)
        self.start()

    @rule(kill=st.booleans())
    def restart(self, kill):
        """kill -9, or SIGTERM (a clean stop writes a checkpoint), then a start."""
        self.stop(kill=kill)
        self.start()

    @rule()
    def archive(self):
        self.stop()
        self.archive_now()

    def archive_now(self):
        r = run_server(["journal", "archive", "--state-dir", self.state, "--dir", self.adir,
                        "--plain"])
        eq((r.returncode, r.stderr), (0, ""), "journal archive")
        STATS["archives"] += 1
        for name in os.listdir(self.adir):
            for line in read(os.path.join(self.adir, name)).split(b"\n"):
                if line.startswith(b'{"type":"receipt"'):
                    rec = json.loads(line)
                    self.archived.add(rec["receipt"]["batch_id"])
                    self.archived_through = max(self.archived_through, rec["seq"])
        self.start()

    def known(self):
        """What the model knows of the state dir's contents, for a backup of it."""
        return copy.deepcopy((self.acked, self.totals, self.in_doubt, self.flipped,
                              self.archived, self.archived_through))

    @rule()
    def backup_state_dir(self):
        """docs/operations.md §12.4: stop, copy the whole state dir, start again. A second
        backup replaces the first."""
        self.stop()
        copy_dir = os.path.join(self.dir, "backup")
        shutil.rmtree(copy_dir, ignore_errors=True)
        shutil.copytree(self.state, copy_dir, symlinks=True)
        self.backup = (copy_dir, self.known())
        STATS["backups"] += 1
        self.start()

    @precondition(lambda self: self.backup is not None
                  and self.backup[1][5] == self.archived_through)
    @rule()
    def restore_state_dir(self):
        """docs/operations.md §12.4: stop, the copy in the state dir's place, start. Every batch
        acknowledged before the backup reads back; those acknowledged after it are not in the
        copy and are forgotten here (a retry would place them again), their totals with them.
        The contract and --shards files are not in the state dir: the start adopts them as a
        new epoch when the backup's chain ends elsewhere. Not across an archive made since the
        backup (its segments would be in the archive and in the state dir both)."""
        self.stop()
        copy_dir, known = self.backup
        shutil.rmtree(self.state)
        shutil.copytree(copy_dir, self.state, symlinks=True)
        (self.acked, self.totals, self.in_doubt, self.flipped, self.archived,
         self.archived_through) = copy.deepcopy(known)
        STATS["restores"] += 1
        self.start()

    @rule(flip=st.booleans(), pick=st.integers(0, 10**6), at=st.integers(0, 10**6))
    def damage_index(self, flip, pick, at):
        """index/ deleted, or one byte of a file under it flipped; then a start."""
        self.stop()
        index = os.path.join(self.state, "index")
        if not flip:
            shutil.rmtree(index, ignore_errors=True)
            self.flipped = False
            self.start()
            return
        files = sorted(f for f in os.listdir(index) if f != "lock") if os.path.isdir(index) else []
        files = [f for f in files if os.path.getsize(os.path.join(index, f)) > 0]
        if files:
            path = os.path.join(index, files[pick % len(files)])
            data = bytearray(read(path))
            data[at % len(data)] ^= 0x01
            write(path, bytes(data), "wb")
            self.flipped = True
        self.start()

    def checked_lines(self):
        """[(file name, line number, offset, line)]: every line of the segments whose lines
        carry checksums (docs/journal.md §2.1; a segment's first line decides)."""
        out = []
        for name in sorted(n for n in os.listdir(self.state)
                           if n.startswith("journal") and n.endswith(".jsonl")):
            data = read(os.path.join(self.state, name))
            if not data.split(b"\n", 1)[0].endswith(b'"}'):
                continue
            offset = 0
            for number, line in enumerate(data.split(b"\n")[:-1], 1):
                out.append((name, number, offset, line))
                offset += len(line) + 1
        return out

    @rule(pick=st.integers(0, 10**6), at=st.integers(0, 10**6))
    def damage_journal(self, pick, at):
        """One changed byte in a checked journal line, then a start. A seal or a segment header
        refuses every start (the active segment's header: its replay); any other line refuses
        the start whose replay reads it, or is met by the reads once serving (docs/journal.md
        §2.1). Then the documented repair (docs/operations.md §5.2: the file's bytes put back)
        and a start."""
        self.stop()
        lines = self.checked_lines()
        if not lines:
            self.start()
            return
        name, number, offset, line = lines[pick % len(lines)]
        path = os.path.join(self.state, name)
        good = read(path)
        data = bytearray(good)
        k = offset + 1 + at % (len(line) - len(',"crc32":"01234567"}') - 1)
        data[k] = ord("x") if data[k] != ord("x") else ord("y")
        write(path, bytes(data), "wb")
        STATS["damaged"] += 1
        kind = json.loads(sgtest.record_of(line))["type"]
        server = Server(state_dir=self.state, conf=self.conf, shards=self.shards, args=self.args)
        try:
            server.start()
        except Failure:
            said = [l for l in server.lines if not l.startswith("{")]
            sealed_edge = kind in ("seal", "segment") and name != "journal.jsonl"
            where = ("%s: %s line" % (path, "header" if kind == "segment" else kind)
                     if sealed_edge else "%s:%d" % (path, number))
            skips = [json.loads(l)["reason"] for l in server.lines
                     if l.startswith('{"event":"checkpoint_skipped"')]
            if said[-1:] and said[-1].endswith(UNCOVERED) and self.archived:
                eq(server.proc.returncode, 3, "the start on an uncovered archive")
                ok(any("fails its checksum" in r for r in skips),  # docs/journal.md §7
                   "a checkpoint skipped for the damaged line: %r" % server.lines)
            else:
                eq((server.proc.returncode, said), (3, ["journal: %s: %s" % (where, MISMATCH)]),
                   "the start on a damaged %s line" % kind)
        else:
            eq(kind in ("seal", "segment"), False, "a start on a damaged %s line of %s"
               % (kind, name))
            self.server = server
            self.check_damaged(name, offset, line)
            self.stop()
        write(path, good, "wb")
        self.start()

    def check_damaged(self, name, offset, line):
        """Serving with one damaged line: a GET of its receipt and the feed answer 500
        record_corrupt naming the line, every other batch reads back, /readyz is unready."""
        rec = json.loads(sgtest.record_of(line))
        bad = rec["receipt"]["batch_id"] if rec["type"] == "receipt" else None
        where = "in %s (the line at offset %d)" % (name, offset)
        for bid, body in self.acked.items():
            r = self.server.get("/v1/batches/" + bid)
            if bid == bad:
                eq((r.status, r.error()[0], where in r.json()["error"]["message"]),
                   (500, "record_corrupt", True), "GET of the damaged %s: %r" % (bid, r.body))
            elif bid in self.archived:
                eq(r.status, 410, "GET %s: archived" % bid)
            else:
                eq((r.status, r.body), (200, body), "GET %s beside a damaged line" % bid)
        r = list(feed_pages(self.server, self.archived_through))[-1]
        eq((r.status, r.error()[0], where in r.json()["error"]["message"]),
           (500, "record_corrupt", True), "the feed at the damaged line: %r" % r.body)
        r = self.server.get("/readyz")
        eq((r.status, r.json()["checks"]["journal"]), (503, "damaged"), "/readyz")

    def forget_after(self, lines, keep):
        """The receipts of the active segment's lines past `keep` are gone from the journal (a
        repair cut them): never acknowledged here from now on, their totals taken back."""
        for line in lines[keep:]:
            if line.startswith(b'{"type":"receipt"'):
                body = line[line.index(b'"receipt":') + 10:line.rindex(b',"crc32"')] + b"\n"
                bid = json.loads(body)["batch_id"]
                for sid, t in json.loads(body)["shards"].items():
                    self.totals[sid][0] -= t["load"]
                    self.totals[sid][1] -= t["received"]
                del self.acked[bid]

    def receipt_lines(self, lines):
        return [i for i, l in enumerate(lines) if l.startswith(b'{"type":"receipt"')]

    @precondition(lambda self: not self.archived_through)
    @rule(pick=st.integers(0, 10**6), damaged=st.booleans())
    def repair_journal_tail(self, pick, damaged):
        """An operator's repair of journal.jsonl (docs/operations.md §5.2), index/ kept: a line
        damaged, the start refusing it, then the file moved aside and the lines before the bad
        one kept; or journal.jsonl restored from an older copy (its first lines). Either way the
        receipts cut are never acknowledged here again, and the index, ahead of the journal, is
        rebuilt (docs/journal.md §9). `journal verify` is what names the bad line. Not after an
        archive: a cut past the checkpoint that covers the archived segments leaves none, and
        the start refuses until they are restored (docs/operations.md §5.2)."""
        self.stop()
        path = os.path.join(self.state, "journal.jsonl")
        lines = read(path).split(b"\n")[:-1]
        at = self.receipt_lines(lines)
        if not at:
            self.start()
            return
        k = at[pick % len(at)]
        if damaged:
            bad = lines[:k] + [lines[k].replace(b'"receipt_version"', b'"receipt_versiox"', 1)] \
                + lines[k + 1:]
            write(path, b"".join(l + b"\n" for l in bad), "wb")
            r = run_server(["journal", "verify", "--state-dir", self.state])
            eq((r.returncode, r.stderr), (3, "journal: %s:%d: %s\n" % (path, k + 1, MISMATCH)),
               "journal verify names the bad line")
            os.rename(path, path + ".bad-%d" % STATS["repairs"])
        STATS["repairs"] += 1
        write(path, b"".join(l + b"\n" for l in lines[:k]), "wb")
        self.forget_after(lines, k)
        self.start()
        if self.server.events("index_ahead_of_journal"):
            STATS["index_rebuilt"] += 1

    @rule(pick=st.integers(0, 10**6))
    def archive_damaged(self, pick):
        """`journal archive` on a state dir with one changed byte in a sealed segment (a checked
        line's crc32 or, in a segment written before checksums, its seal's sha256 tells):
        refused with verify's message, nothing written or removed (docs/journal.md §8); the byte
        put back."""
        sealed = sorted(n for n in os.listdir(self.state) if n.startswith("journal-"))
        if not sealed:
            return
        self.stop()
        path = os.path.join(self.state, sealed[pick % len(sealed)])
        good = read(path)
        lines = good.split(b"\n")[:-1]
        at = self.receipt_lines(lines)
        if at:
            k = at[pick % len(at)]
            lines[k] = lines[k].replace(b'"receipt_version"', b'"receipt_versiox"', 1)
            write(path, b"".join(l + b"\n" for l in lines), "wb")
            before = (sorted(os.listdir(self.state)), sorted(os.listdir(self.adir)))
            said = run_server(["journal", "verify", "--state-dir", self.state])
            eq(said.returncode, 3, "journal verify of a damaged segment")
            r = run_server(["journal", "archive", "--state-dir", self.state, "--dir", self.adir,
                            "--plain"])
            eq((r.returncode, r.stdout, r.stderr), (3, "", said.stderr),
               "journal archive of a damaged segment: verify's answer")
            eq((sorted(os.listdir(self.state)), sorted(os.listdir(self.adir))), before,
               "nothing written or removed")
            STATS["archives_refused"] += 1
            write(path, good, "wb")
        self.start()

    @precondition(lambda self: not self.flipped)
    @rule(point=st.sampled_from(SERVER_POINTS))
    def kill_at_point(self, point):
        """kill -9 at a named point of a rotation, a checkpoint or an index flush
        (SHARDGATE_TEST_CRASH_AT, docs/api.md §14): a server with the hook posts batches (a
        checkpoint every 100 ms, a flush of the index with each) until it dies there; the
        POST it dies under is in doubt, settled by its retry after the start."""
        self.stop()
        self.set_policy("report")  # every batch accepted, however large: the journal grows
        self.server = Server(state_dir=self.state, conf=self.conf, shards=self.shards,
                             args=self.args, env={"SHARDGATE_TEST_CRASH_AT": point}).start()
        for _ in range(200):
            if self.server.proc.poll() is not None:
                break
            bid = "b%d" % self.next_id
            self.next_id += 1
            doc = changes(bid, 120)
            try:
                r = self.server.post(doc)
            except (OSError, http.client.HTTPException):
                self.in_doubt[bid] = doc
                continue
            if r.status == 200:
                self.acked[bid] = r.body
                add_totals(self.totals, r.body)
            else:
                eq((r.status, r.error()[0]), (422, "over_capacity"), "POST %s" % bid)
            time.sleep(0.05)
        self.killed_at(point)
        self.server = None
        self.start()

    @rule(point=st.sampled_from(["archive-copied", "archive-listed"]))
    def kill_archive_at_point(self, point):
        """`journal archive` killed at a named point with a sealed segment to archive; run again,
        it finishes the archive (docs/journal.md §8)."""
        self.stop()
        r = run_server(["journal", "archive", "--state-dir", self.state, "--dir", self.adir,
                        "--plain"], env=dict(os.environ, SHARDGATE_TEST_CRASH_AT=point))
        if r.returncode != 0:
            eq((r.returncode, r.stderr.splitlines()[-1:]),
               (-signal.SIGKILL, ['{"event":"test_crash_point","point":"%s"}' % point]),
               "journal archive killed at %s" % point)
            STATS["points"] += 1
        self.archive_now()

    @invariant()
    def serving(self):
        STATS["operations"] += 1
        if self.server is not None and self.server.proc.poll() is not None:
            raise Failure("the server exited:\n" + "\n".join(self.server.lines[-20:]))


def main(argv):
    p = argparse.ArgumentParser(description="the model-based operation test")
    p.add_argument("shardgate")
    p.add_argument("health")
    p.add_argument("source")
    p.add_argument("--seed", type=int, default=20261204)
    p.add_argument("--sequences", type=int, default=50)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--long", action="store_true", help="5,000 sequences of 20 steps")
    p.add_argument("--store", choices=["file", "postgres"], default="file",
                   help="postgres: replicas on one PostgreSQL (store_model.py)")
    a = p.parse_args(argv[1:])
    if not sgtest.crash_points_built():
        print("SKIP model: " + sgtest.CRASH_POINTS_ABSENT)
        return 77
    if a.long:
        a.sequences, a.steps = 5000, 20
    sgtest.BIN, sgtest.HEALTH = os.path.abspath(a.shardgate), os.path.abspath(a.health)
    sgtest.SRC = os.path.abspath(a.source)
    machine, stats = GatewayModel, STATS
    if a.store == "postgres":
        import store_model
        machine, stats = store_model.StoreModel, store_model.STATS
    case = machine.TestCase
    case.settings = settings(max_examples=a.sequences, stateful_step_count=a.steps,
                             deadline=None, database=None, print_blob=False,
                             suppress_health_check=list(HealthCheck))
    hypothesis_seed(a.seed)(case)
    print("model: --store %s --seed %d --sequences %d --steps %d (replay: python3 %s %s %s %s "
          "--store %s --seed %d --sequences %d --steps %d)"
          % (a.store, a.seed, a.sequences, a.steps, argv[0], a.shardgate, a.health, a.source,
             a.store, a.seed, a.sequences, a.steps), flush=True)
    import unittest
    ok = False
    try:
        result = unittest.TextTestRunner(verbosity=1).run(
            unittest.defaultTestLoader.loadTestsFromTestCase(case))
        ok = result.wasSuccessful()
    finally:
        if a.store == "postgres":
            store_model.finish(ok)
    sgtest.cleanup(ok)
    print("model: %s" % json.dumps(stats), flush=True)
    print("%d passed, %d failed" % (1 if ok else 0, 0 if ok else 1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
