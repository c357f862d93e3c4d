"""A PostgreSQL of a test's own (ops/pg.sh) and `shardgate serve --store` on it: shared by the
tests of --store postgres (docs/journal.md §10). The database lives in a 0755 temp dir under
/tmp (ops/pg.sh chowns its dir to the postgres user); stop() it before the dir is removed."""
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading

import sgtest
from sgtest import eq, free_port, run, run_gateway, src, Failure


SCHEMA_VERSION = 5  # what `shardgate db init` creates: db/migrations' last
DATABASES = []  # every Postgres a script started: finish() stops them


class Postgres:
    def __init__(self, prefix="shardgate-pg-"):
        if not os.path.isdir("/usr/lib/postgresql"):
            raise Failure("PostgreSQL is not installed (no /usr/lib/postgresql): "
                          "ops/lib.sh installs it")
        base = tempfile.mkdtemp(prefix=prefix)  # under TMPDIR: ops/test.sh removes it
        os.chmod(base, 0o755)
        self.base, self.dir, self.port = base, os.path.join(base, "pg"), free_port()
        self.started = False
        DATABASES.append(self)  # main()'s finish stops it, pass or fail
        self.start()
        self.url = self.db_url("shardgate", "shardgate")

    def pg_sh(self, *args, timeout=120):
        return run(["bash", src("ops", "pg.sh")] + list(args), timeout=timeout)

    def start(self):
        r = self.pg_sh("start", self.dir, str(self.port))
        eq((r.returncode, r.stdout), (0, self.db_url("shardgate", "shardgate") + "\n"),
           "ops/pg.sh start: %s" % r.stderr)
        self.started = True

    def stop(self):
        if self.started:
            self.pg_sh("stop", self.dir)
            self.started = False

    def crash(self):
        """kill -9 of the postmaster; its backends end when they notice."""
        r = self.pg_sh("kill", self.dir)
        eq(r.returncode, 0, "ops/pg.sh kill: %s" % r.stderr)
        self.started = False

    def passfile(self, user):
        """The role's libpq password file, which ops/pg.sh made (0600)."""
        return os.path.join(self.dir, "%s.pgpass" % user)

    def db_url(self, db, user="shardgate_ro"):
        return "postgres://%s@127.0.0.1:%d/%s?passfile=%s" % (user, self.port, db,
                                                               self.passfile(user))

    def sql(self, db, query, user="shardgate"):
        """Rows of query run by user as lists of text columns: over TCP with the role's password
        file, or for the superuser `postgres` over the socket as the postgres user (peer)."""
        cmd = ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", user, "-d", db, "-qAt",
               "-F", "\x1f", "-v", "ON_ERROR_STOP=1", "-c", query]
        env = dict(os.environ, PGPASSFILE=self.passfile(user))
        if user == "postgres":
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
            cmd[cmd.index("127.0.0.1")] = self.dir
        r = run(cmd, env=env)
        eq(r.returncode, 0, "psql %s: %s" % (query[:80], r.stderr))
        return [line.split("\x1f") for line in r.stdout.splitlines()]


class StoreGateway(sgtest.Server):
    """`shardgate serve --store URL` (no state dir)."""

    def __init__(self, url, shards=None, args=(), env=None):
        super().__init__(state_dir="(none)", shards=shards, args=args, env=env)
        self.url = url

    def command(self):
        return [sgtest.BIN, "serve", "--conf", self.conf, "--shards", self.shards, "--store",
                self.url, "--listen", "127.0.0.1:0"] + self.args


class CutProxy:
    """A TCP proxy on 127.0.0.1 in front of a port, which the test can cut (every connection
    through it closed, new ones closed at once) and mend: a replica cut off from the database
    while the others are not (docs/journal.md §10)."""

    def __init__(self, target_port):
        self.target = target_port
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.cut_off = threading.Event()
        self.lock = threading.Lock()
        self.open = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.lsock.accept()
            except OSError:
                return
            if self.cut_off.is_set():
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=sgtest.pump, args=(a, b), daemon=True).start()

    def cut(self):
        self.cut_off.set()
        with self.lock:
            for s in self.open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self.open = []

    def mend(self):
        self.cut_off.clear()

    def url(self, pg):
        return pg.url.replace(":%d/" % pg.port, ":%d/" % self.port)


def admin_token(directory):
    """An admin token file (mode 600) in directory; returns its path."""
    path = os.path.join(directory, "admin.token")
    with open(path, "w", encoding="utf-8") as f:
        f.write("admin-token-for-the-store-tests-0123456789")
    os.chmod(path, 0o600)
    return path


def current_epoch(gw):
    r = gw.get("/v1/epochs")
    eq(r.status, 200, "GET /v1/epochs")
    return r.json()["epochs"][-1]["epoch"]


def put_membership(gw, shards, token_file, if_match=None, expect=200):
    """PUT /v1/admin/membership of `shards` (a list) with If-Match (the current epoch by
    default); returns the response after checking its status."""
    with open(token_file, encoding="utf-8") as f:
        token = f.read().strip()
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json",
               "If-Match": '"%s"' % (if_match or current_epoch(gw))}
    body = json.dumps({"shards": shards}).encode()
    r = gw.request("PUT", "/v1/admin/membership", body=body, headers=headers)
    eq(r.status, expect, "PUT /v1/admin/membership: %r" % r)
    return r



class Cluster:
    """A PostgreSQL with the schema, and n replicas on it; stopped at the end of `with`."""

    def __init__(self, n, args=(), env=None):
        self.pg = Postgres("shardgate-pg-store-")
        r = run_gateway("db", "init", "--store", self.pg.url)
        eq((r.returncode, r.stdout), (0, "schema_version 0 -> %d\n" % SCHEMA_VERSION),
           "db init: %s" % r.stderr)
        self.token = admin_token(self.pg.base)
        self.gws = [StoreGateway(self.pg.url, args=["--admin-token-file", self.token] +
                                 list(args), env=env) for _ in range(n)]

    def __enter__(self):
        for gw in self.gws:
            gw.start()
        return self

    def __exit__(self, *exc):
        for gw in self.gws:
            gw.kill()
        self.pg.stop()
        return False

    def sql(self, query):
        return self.pg.sql("shardgate", query)

    def sequenced(self):
        """Waits until every committed receipt has its seq (docs/journal.md §10: the sequencer
        gives them after the commits, within its 50 ms poll when idle)."""
        sgtest.wait_until(lambda: self.sql(
            "SELECT count(*) FROM shardgate_receipts WHERE seq IS NULL") == [["0"]], 10,
            "every receipt has a seq")

    def receipts(self):
        """seq -> (batch_id, receipt JSON), and the sequencer's last_seq, once every receipt
        has its seq."""
        self.sequenced()
        rows = self.sql("SELECT seq, batch_id, receipt FROM shardgate_receipts ORDER BY seq")
        last = int(self.sql("SELECT last_seq FROM shardgate_sequencer")[0][0])
        return {int(s): (b, json.loads(r)) for s, b, r in rows}, last

    def health(self, shards=None):
        """shardgate-health check --store as the read-only role, once every receipt has its
        seq: must pass."""
        self.sequenced()
        shards = shards or sgtest.SHARDS
        code, out, err = sgtest.run_tool(sgtest.HEALTH, [
            "check", "--conf", sgtest.CONF, "--shards", shards, "--store",
            self.pg.db_url("shardgate")])
        verdict = sgtest.parse_line(out)
        eq((code, verdict and verdict["status"], verdict and verdict["issues"]),
           (0, "pass", []), "health check --store (%s)" % err)


def batch(batch_id, n=3, seed=0):
    return {"batch_id": batch_id,
            "changes": [{"id": "c%d" % i, "key": "%s/%d" % (batch_id, i),
                         "size": (i * 5 + seed) % 9 + 1} for i in range(n)]}


def post(gw, doc, **kw):
    return gw.post(doc, headers={"Idempotency-Key": doc["batch_id"]}, **kw)


def sums(receipts):
    """shard -> [load, received] over the receipts' placements."""
    out = {}
    for _, r in receipts.values():
        for p in r["placements"]:
            t = out.setdefault(p["shard"], [0, 0])
            t[0] += p["size"]
            t[1] += 1
    return out


def finish(passed):
    """Stops every database (before its dir goes), then removes the dirs when all passed."""
    for pg in DATABASES:
        pg.stop()
        if passed:
            shutil.rmtree(pg.base, ignore_errors=True)
        else:
            print("database dir kept in: %s" % pg.base)


def main(argv):
    """sgtest.main for a script that starts databases: they are stopped when it ends, pass, fail
    or SIGTERM (ctest's timeout), and their dirs removed when it passed."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    rc = 1
    try:
        rc = sgtest.main(argv, ("shardgate", "health", "source"))
    finally:
        finish(rc in (0, 77))
    return rc
