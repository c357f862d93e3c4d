#!/usr/bin/env python3
"""pg_auth_*: the PostgreSQL of ops/pg.sh is closed to the other users of the host
(docs/operations.md §9.2). A throwaway local account, made by the test, cannot connect without
the secret, over TCP (SCRAM-SHA-256, no password to give) or the socket (peer), nor read the
password files; with the secret the role connects; the health service's role reads and cannot
write; no password reaches the database's log or ops/pg.sh's output.

Runs as `python3 test_pg_auth.py SHARDGATE HEALTH SOURCE_DIR [--group G]`; needs root (it adds
and removes a user, and PostgreSQL runs as the postgres user).
"""
import os
import pwd
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgpg  # noqa: E402
import sgtest  # noqa: E402
from sgpg import Postgres  # noqa: E402
from sgtest import Skip, case, eq, ok, read, run, run_gateway  # noqa: E402


class Account:
    """A local user that exists only for the test."""

    def __init__(self, role="x"):
        self.name = "sgauth%s%d" % (role, os.getpid())
        r = run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                 self.name])
        eq(r.returncode, 0, "useradd: %s" % r.stderr)

    def run(self, *cmd, env=None):
        clean = {"PATH": os.environ["PATH"], "PGCONNECT_TIMEOUT": "5"}
        clean.update(env or {})
        return subprocess.run(["runuser", "-u", self.name, "--"] + list(cmd), env=clean, cwd="/",
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)

    def remove(self):
        run(["userdel", self.name])


def psql(*args):
    return ["psql", "-w", "-X", "-qAt", "-v", "ON_ERROR_STOP=1"] + list(args)


def password(pg, role):
    line = read(pg.passfile(role)).decode().strip()
    return line.split(":", 4)[4]


@case("closed")
def another_user_cannot_connect_without_the_secret():
    if os.geteuid() != 0:
        raise Skip("needs root: it adds a user, and PostgreSQL runs as the postgres user")
    pg = Postgres()
    other = Account()
    try:
        for role in ("shardgate", "shardgate_ro"):
            eq(os.stat(pg.passfile(role)).st_mode & 0o777, 0o600, "%s.pgpass mode" % role)
            r = other.run("cat", pg.passfile(role))
            eq((r.returncode, r.stderr.endswith("Permission denied\n")), (1, True),
               "another user reads %s.pgpass: %r" % (role, r.stderr))
        tcp = "postgres://%%s@127.0.0.1:%d/shardgate" % pg.port
        for role in ("shardgate", "shardgate_ro", "postgres"):
            r = other.run(*psql(tcp % role, "-c", "SELECT 1"))
            eq((r.returncode, r.stderr.strip()), (2, 'psql: error: connection to server at '
               '"127.0.0.1", port %d failed: fe_sendauth: no password supplied' % pg.port),
               "another user over TCP as %s" % role)
        r = other.run(*psql(tcp % "shardgate", "-c", "SELECT 1"),
                      env={"PGPASSWORD": "not-the-password"})
        eq((r.returncode, r.stderr.strip().endswith('password authentication failed for user '
                                                    '"shardgate"')), (2, True),
           "another user with a wrong password: %r" % r.stderr)
        for role in ("shardgate", "postgres"):
            r = other.run(*psql("-h", pg.dir, "-p", str(pg.port), "-U", role, "-d", "shardgate",
                                "-c", "SELECT 1"))
            eq((r.returncode, r.stderr.strip().endswith('Peer authentication failed for user "%s"'
                                                        % role)), (2, True),
               "another user over the socket as %s: %r" % (role, r.stderr))
        r = other.run(*psql(tcp % "shardgate", "-c", "SELECT current_user"),
                      env={"PGPASSWORD": password(pg, "shardgate")})
        eq((r.returncode, r.stdout), (0, "shardgate\n"), "with the secret it connects")
    finally:
        other.remove()


@case("closed")
def each_role_s_secret_is_its_own_user_s():
    """SHARDGATE_PGPASS_OWNER and SHARDGATE_PGPASS_RO_OWNER: the gateways' user holds the owner
    role's file, the health service's user the read-only one's; the health user cannot read the
    owner's secret, so it cannot connect as the owner (docs/operations.md §9.2)."""
    if os.geteuid() != 0:
        raise Skip("needs root: it adds users, and PostgreSQL runs as the postgres user")
    gateway, health = Account("g"), Account("h")
    try:
        os.environ.update(SHARDGATE_PGPASS_OWNER=gateway.name,
                          SHARDGATE_PGPASS_RO_OWNER=health.name)
        try:
            pg = Postgres()
        finally:
            del os.environ["SHARDGATE_PGPASS_OWNER"], os.environ["SHARDGATE_PGPASS_RO_OWNER"]
        for role, user in (("shardgate", gateway), ("shardgate_ro", health)):
            st = os.stat(pg.passfile(role))
            eq((pwd.getpwuid(st.st_uid).pw_name, st.st_mode & 0o777), (user.name, 0o600),
               "%s.pgpass: owner and mode" % role)
        r = health.run("cat", pg.passfile("shardgate"))
        eq((r.returncode, r.stderr), (1, "cat: %s: Permission denied\n" % pg.passfile("shardgate")),
           "the health user reads the owner's secret")
        owner_url = pg.db_url("shardgate", "shardgate")
        r = health.run(*psql(owner_url, "-c", "CREATE TABLE shardgate_x (i int)"))
        eq((r.returncode, r.stderr.strip()), (2, 'psql: error: connection to server at '
           '"127.0.0.1", port %d failed: fe_sendauth: no password supplied' % pg.port),
           "the health user connects as the owner with the owner's file")
        r = health.run(*psql(pg.db_url("shardgate", "shardgate_ro"), "-c", "SELECT current_user"))
        eq((r.returncode, r.stdout, r.stderr), (0, "shardgate_ro\n", ""),
           "the health user connects as shardgate_ro with its own file")
        r = gateway.run(*psql(owner_url, "-c", "SELECT current_user"))
        eq((r.returncode, r.stdout, r.stderr), (0, "shardgate\n", ""),
           "the gateways' user connects as the owner")
        r = gateway.run("cat", pg.passfile("shardgate_ro"))
        eq(r.returncode, 1, "the gateways' user reads the read-only secret: %r" % r.stderr)
    finally:
        gateway.remove()
        health.remove()


@case("closed")
def the_health_role_reads_and_cannot_write():
    pg = Postgres()
    r = run_gateway("db", "migrate", "--store", pg.url)
    eq(r.returncode, 0, "db migrate: %s" % r.stderr)
    ro = pg.db_url("shardgate", "shardgate_ro")
    r = run(psql(ro, "-c", "SELECT count(*) FROM shardgate_receipts"))
    eq((r.returncode, r.stdout), (0, "0\n"), "shardgate_ro reads: %s" % r.stderr)
    for sql, table in (("UPDATE shardgate_sequencer SET last_seq = 7", "shardgate_sequencer"),
                       ("DELETE FROM shardgate_receipts", "shardgate_receipts"),
                       ("INSERT INTO shardgate_schema (version, name) VALUES (99, 'x')",
                        "shardgate_schema")):
        r = run(psql(ro, "-c", sql))
        eq((r.returncode, r.stderr.strip()), (1, "ERROR:  permission denied for table %s" % table),
           "shardgate_ro: %s" % sql)
    r = run(psql(ro, "-c", "CREATE TABLE shardgate_x (i int)"))
    eq((r.returncode, r.stderr.strip()), (1, "ERROR:  permission denied for schema public\n"
                                             "LINE 1: CREATE TABLE shardgate_x (i int)\n"
                                             "                     ^"), "shardgate_ro creates")


@case("closed")
def no_password_is_printed_or_logged():
    pg = Postgres()
    pg.stop()
    r = pg.pg_sh("start", pg.dir, str(pg.port))  # a second start sets the passwords again
    pg.started = r.returncode == 0
    eq((r.returncode, r.stdout, r.stderr), (0, pg.url + "\n", ""), "ops/pg.sh start prints the URL")
    log = read(os.path.join(pg.dir, "postgres.log")).decode()
    for role in ("shardgate", "shardgate_ro"):
        secret = password(pg, role)
        ok(len(secret) == 32, "a 24-byte random password, base64: %d" % len(secret))
        ok(secret not in log and secret not in r.stdout, "%s's password in no output" % role)


if __name__ == "__main__":
    sys.exit(sgpg.main(sys.argv))
