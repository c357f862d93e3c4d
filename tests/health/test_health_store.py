#!/usr/bin/env python3
"""health_store_*: `shardgate-health check|serve --store postgres://...` (docs/operations.md
§1.7). A PostgreSQL of the test's own (ops/pg.sh) is filled by the real `shardgate serve
--store` over two epochs; health reads it as the read-only role shardgate_ro. Every case works
on its own copy of that database (CREATE DATABASE ... TEMPLATE), tampers with it as the owner
role and asserts the exact verdict. The database is stopped when the script ends, pass or fail.
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgpg  # noqa: E402
import sgtest  # noqa: E402
from sgpg import Postgres, StoreGateway, admin_token, free_port, put_membership  # noqa: E402
from sgtest import (case, checks_per_epoch, checks_per_receipt, eq, ok,  # noqa: E402
                    wait_until, write)

PG = None  # the running database, started by the first case that needs it
COPIES = [0]
SHARDS_A = json.load(open(sgtest.SHARDS, encoding="utf-8"))["shards"]
SHARDS_B = [dict(s, state="online") if s["id"] == "shard-d" else s for s in SHARDS_A]
N_SHARDS = 5  # in both memberships


def pg():
    global PG
    if PG is None:
        PG = Postgres("shardgate-health-store-")
        fill(PG)
    return PG


def shards_file(name, shards):
    d = os.path.join(pg().base, "files")
    os.makedirs(d, exist_ok=True)
    return write(os.path.join(d, name + ".json"), json.dumps({"shards": shards}))


def post(gw, batch_id, n, seed):
    changes = [{"id": "c%d" % i, "key": "%s:%d" % (batch_id, i), "size": (i * 7 + seed) % 11}
               for i in range(n)]
    r = gw.post({"batch_id": batch_id, "changes": changes})
    eq(r.status, 200, "POST %s: %r" % (batch_id, r))


def fill(p):
    """The template database: 3 batches under the shards file A, then shard-d online by PUT
    /v1/admin/membership (a second epoch, recorded in the database) and 2 more batches."""
    r = sgtest.run_gateway("db", "init", "--store", p.url)
    eq(r.returncode, 0, "shardgate db init: %s" % r.stderr)
    token = admin_token(p.base)
    with StoreGateway(p.url, shards_file("a", SHARDS_A),
                      args=["--admin-token-file", token]) as gw:
        for k, b in enumerate(("b-1", "b-2", "b-3")):
            post(gw, b, 3 + k, len(b) + k)
        put_membership(gw, SHARDS_B, token)
        for k, b in enumerate(("b-4", "b-5")):
            post(gw, b, 3 + k, len(b) + k)
        eq(gw.stop(), 0, "gateway exit")


def copy_db():
    """A fresh copy of the template database, owned by shardgate; returns its name."""
    COPIES[0] += 1
    name = "copy_%d" % COPIES[0]
    pg().sql("postgres", "CREATE DATABASE %s TEMPLATE shardgate OWNER shardgate" % name,
             user="postgres")
    return name


def health(args, env_extra=None):
    return sgtest.run_tool(sgtest.HEALTH, args, env_extra)


def check(db, shards=None, url=None):
    """(exit, parsed verdict, stderr) of check --store on db as shardgate_ro."""
    code, out, err = health(["check", "--conf", sgtest.CONF, "--shards",
                             shards or shards_file("b", SHARDS_B), "--store",
                             url or pg().db_url(db)])
    verdict = sgtest.parse_line(out)
    ok(verdict is not None, "check prints one JSON line: %r %r" % (out, err))
    return code, verdict, err


def rows(db):
    """The database as health should see it: epochs, receipts (parsed), totals, last_seq."""
    p = pg()
    epochs = p.sql(db, "SELECT epoch_seq, epoch, first_seq, record FROM shardgate_epochs "
                       "ORDER BY epoch_seq")
    receipts = p.sql(db, "SELECT seq, batch_id, fingerprint, epoch, receipt FROM "
                         "shardgate_receipts ORDER BY seq")
    totals = p.sql(db, "SELECT epoch, shard, received, load FROM shardgate_totals")
    last = p.sql(db, "SELECT last_seq FROM shardgate_sequencer")
    return epochs, receipts, {(t[0], t[1]): (int(t[2]), int(t[3])) for t in totals}, last


def journal_of(epochs, receipts):
    """The journal text rebuilt here, independently of health (docs/journal.md §2)."""
    lines, e = [], 0
    for seq, _, fp, _, receipt in receipts:
        while e < len(epochs) and int(epochs[e][2]) <= int(seq):
            lines.append(epochs[e][3])
            e += 1
        lines.append('{"type":"receipt","seq":%s,"fingerprint":"%s","receipt":%s}'
                     % (seq, fp, receipt))
    lines += [ep[3] for ep in epochs[e:]]
    return "".join(line + "\n" for line in lines)


def sums(receipts):
    """(epoch, shard) -> (received, load) over the receipts' placements."""
    out = {}
    for _, _, _, epoch, receipt in receipts:
        for pl in json.loads(receipt)["placements"]:
            r, l = out.get((epoch, pl["shard"]), (0, 0))
            out[(epoch, pl["shard"])] = (r + 1, l + pl["size"])
    return out


def store_checks(receipts, totals):
    """Evaluations of the store facts: seq, batch_id, epoch and receipt_sha256 per row, the
    sequencer, one per totals row or sum."""
    return 4 * len(receipts) + 1 + len(set(totals) | set(sums(receipts)))


def totals_issue(epoch, shard, have, want):
    diff = ["%s: %d != %d" % (name, h, w) for name, h, w in
            (("received", have[0], want[0]), ("load", have[1], want[1])) if h != w]
    return "store_totals: shardgate_totals epoch %s shard %s: %s" % (epoch, shard,
                                                                      ", ".join(diff))


def expect_fail(db, issues):
    code, verdict, err = check(db)
    eq((code, verdict["status"], verdict["issues"]), (2, "fail", issues), "verdict (%s)" % err)


# --- check ----------------------------------------------------------------------------------

@case("check")
def store_pass():
    db = copy_db()
    epochs, receipts, totals, last = rows(db)
    eq((len(epochs), len(receipts), last), (2, 5, [["5"]]), "the template: 2 epochs, 5 receipts")
    eq(sums(receipts), totals, "the gateway's totals are the placements' sums")
    code, verdict, err = check(db)
    want = sum(checks_per_receipt(len(json.loads(r[4])["placements"]), N_SHARDS, version=2)
               for r in receipts) + 2 * checks_per_epoch(legacy=False) + 1  # epoch_current
    want += store_checks(receipts, totals)
    eq((code, verdict), (0, {"status": "pass", "checks": want, "receipts": 5, "issues": []}),
       "check --store (%s)" % err)
    # the same journal, rebuilt here, through --journal: the same verdict less the store facts
    path = write(os.path.join(pg().base, "files", db + ".jsonl"), journal_of(epochs, receipts))
    code, out, err = sgtest.check_journal(sgtest.HEALTH, path, shards=shards_file("b", SHARDS_B))
    eq((code, sgtest.parse_line(out)),
       (0, {"status": "pass", "checks": want - store_checks(receipts, totals), "receipts": 5,
            "issues": []}), "check --journal on the rebuilt journal (%s)" % err)


@case("check")
def store_placement_shard():
    db = copy_db()
    _, receipts, totals, _ = rows(db)
    seq, batch_id, _, epoch, text = receipts[1]
    first = json.loads(text)["placements"][0]
    other = "shard-c" if first["shard"] != "shard-c" else "shard-b"
    at = text.index('"shard":"%s"' % first["shard"], text.index('"placements":'))
    tampered = text[:at] + '"shard":"%s"' % other + text[at + len(first["shard"]) + 10:]
    pg().sql(db, "UPDATE shardgate_receipts SET receipt = $q$%s$q$ WHERE seq = %s"
             % (tampered, seq))
    receipts[1][4] = tampered
    want = sums(receipts)
    expect_fail(db, ["placement_shard: %s: %s shard: expected %s, got %s"
                     % (batch_id, first["id"], first["shard"], other),
                     sha256_issue(seq, text, tampered)] +
                [totals_issue(epoch, s, totals[(epoch, s)], want[(epoch, s)])
                 for s in sorted((first["shard"], other))])


def sha256_issue(seq, written, now):
    return ("store_receipt_sha256: shardgate_receipts seq %s: receipt_sha256: %s != %s (the "
            "column's, then the SHA-256 of the receipt's bytes)"
            % (seq, hashlib.sha256(written.encode()).hexdigest(),
               hashlib.sha256(now.encode()).hexdigest()))


@case("check")
def store_receipt_sha256():
    """docs/operations.md §1.7: a row's receipt_sha256 is the SHA-256 of its receipt's bytes;
    only the column changed, the one issue names both."""
    db = copy_db()
    _, receipts, _, _ = rows(db)
    seq, text = receipts[3][0], receipts[3][4]
    pg().sql(db, "UPDATE shardgate_receipts SET receipt_sha256 = sha256('x') WHERE seq = %s" % seq)
    expect_fail(db, [sha256_issue(seq, "x", text)])


@case("check")
def store_totals_row():
    db = copy_db()
    epoch, shard = sorted(rows(db)[2])[-1]
    received, load = rows(db)[2][(epoch, shard)]
    pg().sql(db, "UPDATE shardgate_totals SET load = load + 5 WHERE epoch = '%s' AND shard = "
                 "'%s'" % (epoch, shard))
    expect_fail(db, ["store_totals: shardgate_totals epoch %s shard %s: load: %d != %d"
                     % (epoch, shard, load + 5, load)])


@case("check")
def store_seq_gap():
    db = copy_db()
    _, receipts, totals, _ = rows(db)
    pg().sql(db, "DELETE FROM shardgate_receipts WHERE seq = 3")
    gone = receipts.pop(2)
    want = sums(receipts)
    touched = sorted({pl["shard"] for pl in json.loads(gone[4])["placements"]})
    # seq 3 was the first epoch's last receipt: the second epoch record (line 4 of the rebuilt
    # journal: epoch, seq 1, seq 2, epoch) now follows seq 2
    eq((gone[0], receipts[2][0]), ("3", "4"), "the gap")
    expect_fail(db, ["epoch_first_seq: epoch@line 4: first_seq: expected 3 (1 + the last receipt "
                     "seq before it), got 4",
                     "journal_seq: %s: seq: expected 3, got 4 (receipts missing)" % receipts[2][1],
                     "store_seq: shardgate_receipts seq 4: no row with seq 3 before it (seqs run "
                     "1..N without gaps)"] +
                [totals_issue(gone[3], s, totals[(gone[3], s)], want.get((gone[3], s), (0, 0)))
                 for s in touched])


@case("check")
def store_sequencer():
    db = copy_db()
    pg().sql(db, "UPDATE shardgate_sequencer SET last_seq = 7")
    expect_fail(db, ["store_sequencer: shardgate_sequencer: last_seq: 7 != 5 (the table's, then "
                     "the highest seq of shardgate_receipts)"])


@case("check")
def store_columns():
    db = copy_db()
    epochs, receipts, totals, _ = rows(db)
    first, second = epochs[0][1], epochs[1][1]
    eq(receipts[1][3], first, "b-2 is of the first epoch")
    pg().sql(db, "UPDATE shardgate_receipts SET batch_id = 'other', epoch = '%s' WHERE seq = 2"
             % second)
    receipts[1][3] = second
    want = sums(receipts)
    moved = sorted({(e, s) for (e, s) in set(want) | set(totals)
                    if want.get((e, s)) != totals.get((e, s))})
    ok(moved, "moving b-2 to the second epoch changes its totals")
    expect_fail(db, ["store_batch_id: shardgate_receipts seq 2: batch_id: other != b-2 (the "
                     "column's, then the receipt's)",
                     "store_receipt_epoch: shardgate_receipts seq 2: epoch: %s != %s (the "
                     "column's, then the receipt's)" % (second, first)] +
                [totals_issue(e, s, totals.get((e, s), (0, 0)), want[(e, s)])
                 if (e, s) in totals else
                 "store_totals: shardgate_totals epoch %s shard %s: no row, the receipts' "
                 "placements give received %d, load %d" % ((e, s) + want[(e, s)])
                 for e, s in sorted(moved, key=lambda k: (k[0] != first, k[1]))])


# --- cannot judge -----------------------------------------------------------------------------

def expect_input(db, issue, url=None):
    code, verdict, err = check(db, url=url)
    eq((code, verdict), (2, {"status": "fail", "checks": 0, "receipts": 0,
                             "issues": ["input: store: " + issue, "no checks ran"]}),
       "cannot judge (%s)" % err)


@case("cannot_judge")
def store_unreachable():
    port = free_port()
    code, verdict, err = check("x", url="postgres://shardgate_ro@127.0.0.1:%d/shardgate" % port)
    eq((code, verdict["checks"], verdict["issues"][1:]), (2, 0, ["no checks ran"]), "verdict")
    eq(verdict["issues"][0], "input: store: cannot connect: connection to server at "
       "\"127.0.0.1\", port %d failed: Connection refused" % port, "issue")


@case("cannot_judge")
def store_no_schema():
    pg().sql("postgres", "CREATE DATABASE empty OWNER shardgate", user="postgres")
    expect_input("empty", "no shardgate_schema table: not a shardgate database (shardgate db "
                 "init creates it)")


@case("cannot_judge")
def store_schema_version():
    db = copy_db()
    pg().sql(db, "INSERT INTO shardgate_schema (version, name) VALUES (6, '0006_next.sql')")
    expect_input(db, "shardgate_schema: version 6, this health reads versions 1 to 5")


@case("cannot_judge")
def store_permission_denied():
    db = copy_db()
    pg().sql(db, "REVOKE SELECT ON shardgate_totals FROM shardgate_ro")
    expect_input(db, "permission denied for table shardgate_totals")


@case("cannot_judge")
def store_selects_only():
    """Even as the owner role, health runs its snapshot and SELECTs only (the server's log of
    every statement of that role)."""
    db = copy_db()
    p = pg()
    p.sql("postgres", "ALTER ROLE shardgate IN DATABASE %s SET log_statement = 'all'" % db,
          user="postgres")
    log = os.path.join(p.dir, "postgres.log")
    start = os.path.getsize(log)
    code, verdict, err = check(db, url=p.db_url(db, user="shardgate"))
    eq((code, verdict["status"]), (0, "pass"), "check as the owner (%s)" % err)
    time.sleep(0.5)
    with open(log, encoding="utf-8", errors="replace") as f:
        f.seek(start)
        statements = [l.split("LOG:  statement: ", 1)[1].strip() for l in f
                      if "LOG:  statement: " in l]
    eq(statements[0], "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "first statement")
    eq(statements[-1], "ROLLBACK", "last statement")
    eq([s for s in statements[1:-1] if not s.startswith("SELECT ")], [], "SELECTs only")
    eq(len(statements), 8, "BEGIN, 2 schema SELECTs, 4 table SELECTs, ROLLBACK: %r" % statements)


# --- serve ----------------------------------------------------------------------------------

def healthz(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@case("serve")
def store_serve():
    db = copy_db()
    p = pg()
    port = free_port()
    proc = subprocess.Popen([sgtest.HEALTH, "serve", "--listen", "127.0.0.1:%d" % port, "--conf",
                             sgtest.CONF, "--shards", shards_file("b", SHARDS_B), "--store",
                             p.db_url(db), "--reverify-interval", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: listening(port) or proc.poll() is not None, 20, "health listening",
                   step=0.1)
        eq(proc.poll(), None, "health serve runs")
        status, doc = healthz(port)
        eq((status, doc["status"], doc["issues"], doc["checks"]["receipts_verified"][0]
            ["observedValue"]), (200, "pass", [], 5), "healthz")
        # a new receipt is read at the next request
        with StoreGateway(p.db_url(db, user="shardgate"), shards_file("b", SHARDS_B)) as gw:
            post(gw, "b-6", 4, 1)
            eq(gw.stop(), 0, "gateway exit")
        status, doc = healthz(port)
        eq((status, doc["checks"]["receipts_verified"][0]["observedValue"]), (200, 6),
           "healthz after a POST")
        # a tampered row: 503 with its issue, and back once repaired
        p.sql(db, "UPDATE shardgate_sequencer SET last_seq = 9")
        status, doc = healthz(port)
        eq((status, doc["issues"]), (503, ["store_sequencer: shardgate_sequencer: last_seq: 9 "
                                           "!= 6 (the table's, then the highest seq of "
                                           "shardgate_receipts)"]), "healthz tampered")
        p.sql(db, "UPDATE shardgate_sequencer SET last_seq = 6")
        eq(healthz(port)[0], 200, "healthz repaired")
        # the database away: 503 with the reason, on every request; back when it returns
        p.stop()
        status, doc = healthz(port)
        eq(status, 503, "healthz, database stopped")
        ok(doc["issues"][0].startswith("input: store: "), "the reason: %r" % doc["issues"])
        status, doc = healthz(port)
        eq((status, doc["issues"][0]),
           (503, "input: store: cannot connect: connection to server at \"127.0.0.1\", port %d "
            "failed: Connection refused" % p.port), "healthz, still stopped")
        p.start()
        status, doc = healthz(port)
        eq((status, doc["issues"], doc["checks"]["receipts_verified"][0]["observedValue"]),
           (200, [], 6), "healthz, database back")
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    sys.exit(sgpg.main(sys.argv))
