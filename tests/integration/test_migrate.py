#!/usr/bin/env python3
"""client/migrate.py (docs/tools.md §15) against a real gateway: 100,000 keys in per-shard SQLite
stores placed by the ring in force, a membership change, the migrator killed with SIGKILL at
five random moments and started again, then run to the end: every key on its new owner, none
lost, none on two shards; a second run with nothing new moves nothing.

usage: test_migrate.py SHARDGATE_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
"""
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, case, eq, main, ok, src, tmpdir, write  # noqa: E402

KEYS = 100000
ADMIN = "admin-for-the-migrate-test-0123456789"


def secret(directory, text):
    path = os.path.join(directory, "admin.token")
    write(path, text + "\n")
    os.chmod(path, 0o600)
    return path


def migrator(url, stores, *more):
    return [sys.executable, src("client", "migrate.py"), "--url", url, "--stores", stores] + list(
        more)


def contents(stores):
    """key -> the shards whose store holds it."""
    where = {}
    for name in os.listdir(stores):
        if name.endswith(".sqlite"):
            db = sqlite3.connect(os.path.join(stores, name))
            for (key,) in db.execute("SELECT key FROM kv"):
                where.setdefault(key, []).append(name[:-len(".sqlite")])
            db.close()
    return where


@case("migrate")
def keys_follow_a_change_through_five_kills():
    tmp = tmpdir()
    stores = os.path.join(tmp, "stores")
    os.makedirs(stores)
    shards = write(os.path.join(tmp, "shards.json"), open(src("input", "shards.json")).read())
    server = Server(shards=shards, args=["--no-token", "--admin-token-file", secret(tmp, ADMIN)])
    with server as s:
        url = "http://127.0.0.1:%d" % s.port
        r = subprocess.run(migrator(url, stores), capture_output=True, text=True, timeout=120)
        eq((r.returncode, r.stderr), (0, ""), "a first run with no change")
        sys.path.insert(0, src("client"))
        from shardgate.contract import check_membership
        from shardgate.ring import Ring
        ring = Ring("sha1", 160, check_membership(json.load(open(shards))))
        rows = {}
        for i in range(KEYS):
            key = "user:%d" % i
            rows.setdefault(ring.owner(key.encode()), []).append((key, b"v%d" % i))
        for shard, kv in rows.items():
            db = sqlite3.connect(os.path.join(stores, shard + ".sqlite"))
            db.execute("CREATE TABLE kv (key TEXT PRIMARY KEY, value BLOB)")
            with db:
                db.executemany("INSERT INTO kv VALUES (?, ?)", kv)
            db.close()
        doc = json.load(open(shards))
        for sh in doc["shards"]:
            if sh["id"] == "shard-d":
                sh["state"] = "online"
        epoch = s.get("/v1/ring").json()["epoch"]
        r = s.request("PUT", "/v1/admin/membership", body=json.dumps(doc).encode(),
                      headers={"Authorization": "Bearer " + ADMIN, "If-Match": '"%s"' % epoch,
                               "Content-Type": "application/json"})
        eq(r.status, 200, "PUT shard-d online")
        rng = sgtest.seeded_rng("migrate")
        cursor = os.path.join(stores, "migrate.cursor")
        before = os.path.getsize(cursor) if os.path.exists(cursor) else None
        for kill in range(5):
            p = subprocess.Popen(migrator(url, stores), stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
            events = 1 if kill == 0 else rng.randint(0, 2)  # 0: a moment, maybe before any work
            if events == 0:
                time.sleep(rng.uniform(0, 0.3))
            for _ in range(events):  # after that many shards' keys were copied and deleted
                line = p.stdout.readline()
                if not line and kill > 0:
                    break  # an earlier run finished the change: nothing left to move
                eq(json.loads(line)["event"], "progress", "a progress line")
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            p.stdout.close()
            if kill == 0:
                eq(open(cursor).read() if os.path.exists(cursor) else None,
                   "1\n" if before is not None else None,
                   "killed inside the change: its cursor not yet written")
        r = subprocess.run(migrator(url, stores), capture_output=True, text=True, timeout=300)
        eq((r.returncode, r.stderr), (0, ""), "the run to the end")
        where = contents(stores)
        eq(len(where), KEYS, "every key is in some store")
        eq([k for k, v in where.items() if len(v) > 1], [], "no key on two shards")
        new_ring = Ring("sha1", 160, check_membership(doc))
        wrong = [k for k, v in where.items() if v[0] != new_ring.owner(k.encode())]
        eq(wrong[:5], [], "every key on its owner under the new ring")
        ok(any(v == ["shard-d"] for v in where.values()), "shard-d took keys")
        v = subprocess.run(migrator(url, stores, "--verify"), capture_output=True, text=True,
                           timeout=120)
        eq((v.returncode, json.loads(v.stdout.splitlines()[-1])),
           (0, {"event": "verify", "keys": KEYS, "misplaced": 0, "twice": 0}), "--verify")
        again = subprocess.run(migrator(url, stores), capture_output=True, text=True, timeout=120)
        eq((again.returncode, again.stdout), (0, ""), "nothing new: nothing moved")
        db = sqlite3.connect(os.path.join(stores, "shard-a.sqlite"))
        moved_key = next(k for k, v in where.items() if v == ["shard-a"])
        with db:
            db.execute("DELETE FROM kv WHERE key = ?", (moved_key,))
        db.close()
        db = sqlite3.connect(os.path.join(stores, "shard-d.sqlite"))
        with db:
            db.execute("INSERT INTO kv VALUES (?, ?)", (moved_key, b"x"))
        db.close()
        v = subprocess.run(migrator(url, stores, "--verify"), capture_output=True, text=True,
                           timeout=120)
        eq((v.returncode, json.loads(v.stdout.splitlines()[-1])["misplaced"]), (1, 1),
           "--verify names a key on the wrong shard")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "source")))
