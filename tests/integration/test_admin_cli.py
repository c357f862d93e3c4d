#!/usr/bin/env python3
"""`shardgate admin` against a real `shardgate serve` on 127.0.0.1 (docs/tools.md §1.2): the
status table and its JSON, the epochs, the plan (the server's dry run), apply with If-Match
(applied, unchanged, refused by max_movement, and refused with 412 when the membership moved
between the plan and the PUT: a delaying TCP proxy holds the PUT while another client changes
it), tail following a shard, tokens from files and the environment, and the exit codes.

usage: test_admin_cli.py SHARDGATE_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, case, eq, main, ok, read, src, tmpdir, wait_until, write  # noqa: E402

EPOCH0 = "f60a5fb19effc4cfa95aed0af45997f72905f6ae"  # docs/contract.md §7
RING0 = "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc"
EPOCH_D = "e3f360d5dc73a734c643cc9685c3ed725155a47c"  # shard-d online
RING_D = "a03a8e14093bdd3186cad81ef9b5d04cca61a3a5"
ADMIN = "admin-s3cret"
CLIENT = "client-s3cret"


def secret(text):
    path = os.path.join(tmpdir(), "token")
    write(path, text + "\n")
    os.chmod(path, 0o600)
    return path


class Admin:
    """A gateway with both tokens, and `shardgate admin` pointed at it."""

    def __init__(self):
        shards = os.path.join(tmpdir(), "shards.json")
        write(shards, read(src("input", "shards.json")).decode())
        self.client, self.admin = secret(CLIENT), secret(ADMIN)
        self.server = Server(shards=shards, args=["--token-file", self.client,
                                                  "--admin-token-file", self.admin])

    def __enter__(self):
        self.server.start()
        self.url = "http://127.0.0.1:%d" % self.server.port
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)

    def run(self, *args, env=None, url=None, timeout=30):
        e = {k: v for k, v in os.environ.items() if not k.startswith("SHARDGATE_")}
        e.update(env or {})
        return subprocess.run([sgtest.BIN, "admin"] + list(args) + ["--url", url or self.url],
                              capture_output=True, text=True, env=e, timeout=timeout)

    def get(self, path):
        r = self.server.get(path, headers={"Authorization": "Bearer " + CLIENT})
        eq(r.status, 200, "GET %s" % path)
        return r

    def post(self, doc):
        r = self.server.post(doc, headers={"Authorization": "Bearer " + CLIENT})
        eq(r.status, 200, "POST")

    def put(self, doc, if_match, query=""):
        return self.server.request("PUT", "/v1/admin/membership" + query,
                                   body=json.dumps(doc).encode(),
                                   headers={"Authorization": "Bearer " + ADMIN,
                                            "Content-Type": "application/json",
                                            "If-Match": '"%s"' % if_match})


def shard_d_online():
    return src("tests", "plan", "shards-d-online.json")


def epoch_time(a, n=0):
    return a.get("/v1/epochs").json()["epochs"][n]["time"]


STATUS_ROWS = """\
shard    state     weight  capacity    share            load_total        received_total
shard-a  online         1        20   34.26%                     8                     2
shard-b  online         1        20   31.21%                     6                     2
shard-c  online         1        20   34.53%                    10                     4
shard-d  offline        1        20    0.00%                     0                     0
shard-e  draining       1        20    0.00%                     0                     0
"""


@case("admin_cli")
def status_shows_the_epoch_readiness_and_every_shard():
    """The worked example posted: the epoch with its source and time, the ring, readiness, and
    each shard's state, weight, capacity, share of the ring and exact totals."""
    with Admin() as a:
        a.post(json.loads(read(src("input", "changes.json"))))
        r = a.run("status", "--token-file", a.client)
        eq((r.returncode, r.stderr), (0, ""), "exit 0")
        eq(r.stdout, "epoch   %s (epoch_seq 1, start, %s)\n" % (EPOCH0, epoch_time(a))
           + "ring    %s (ketama, sha1, 160 vnodes, 3 online)\n" % RING0
           + "ready   yes (journal ok, ring ok)\n" + STATUS_ROWS, "the status table")
        j = a.run("status", "--json", env={"SHARDGATE_TOKEN": CLIENT})
        eq(j.returncode, 0, "--json with $SHARDGATE_TOKEN")
        doc = json.loads(j.stdout)
        eq(doc["ring"], a.get("/v1/ring").json(), "ring: GET /v1/ring")
        eq(doc["shards"], a.get("/v1/shards").json()["shards"], "shards: GET /v1/shards")
        eq(doc["epoch"], a.get("/v1/epochs").json()["epochs"][-1], "epoch: the last of the chain")
        eq((doc["ready"], doc["readyz"]["status"]), (True, "ready"), "ready")
        metrics = a.get("/metrics").body.decode()
        eq(doc["ring_share"]["shard-b"],
           round(float(sgtest.metric_value(metrics, 'shardgate_ring_share_ratio{shard="shard-b"}')), 6),
           "ring_share from /metrics")
        eq(doc["ring_share"]["shard-d"], 0.0, "an offline shard owns nothing")


PLAN_D = """\
epoch   %s -> %s
ring    %s -> %s
moves   21.84%% of the hash space (938094517 of 4294967296 hash values)
shard     before    after
shard-a   34.26%%   26.98%%
shard-b   31.21%%   25.29%%
shard-c   34.53%%   25.88%%
shard-d    0.00%%   21.84%%
shard-e    0.00%%    0.00%%
from shard-a to shard-d: 7.28%%
from shard-b to shard-d: 5.91%%
from shard-c to shard-d: 8.65%%
""" % (EPOCH0, EPOCH_D, RING0, RING_D)


@case("admin_cli")
def plan_is_the_servers_dry_run_and_changes_nothing():
    with Admin() as a:
        r = a.run("plan", "--to", shard_d_online(), "--admin-token-file", a.admin)
        eq((r.returncode, r.stdout, r.stderr), (0, PLAN_D, ""), "the plan")
        j = a.run("plan", "--to", shard_d_online(), "--json", env={"SHARDGATE_ADMIN_TOKEN": ADMIN})
        direct = a.put(json.loads(read(shard_d_online())), EPOCH0, "?dry_run=1")
        eq((j.returncode, j.stdout.encode()), (0, direct.body), "--json: the dry run's body")
        eq(a.get("/v1/ring").json()["epoch"], EPOCH0, "nothing changed")


@case("admin_cli")
def apply_plans_then_puts_if_the_epoch_is_still_the_same():
    with Admin() as a:
        r = a.run("apply", "--to", shard_d_online(), "--admin-token-file", a.admin)
        eq((r.returncode, r.stderr), (0, ""), "exit 0")
        eq(r.stdout, PLAN_D + "applied: epoch %s (epoch_seq 2)\n" % EPOCH_D, "plan, then applied")
        eq(a.get("/v1/ring").json()["epoch"], EPOCH_D, "the new epoch serves")
        again = a.run("apply", "--to", shard_d_online(), "--admin-token-file", a.admin, "--json")
        eq(again.returncode, 0, "again")
        doc = json.loads(again.stdout)
        eq((doc["plan"]["moved_points"], doc["result"]["changed"], doc["result"]["epoch"]),
           (0, False, EPOCH_D), "--json: the plan and the PUT's answer; unchanged")
        e = a.run("epochs", "--token-file", a.client)
        eq(e.stdout, "epoch_seq  epoch                                     source  time"
           "                      first_seq\n"
           "1          %s  start   %s  1\n2          %s  admin   %s  1\n"
           % (EPOCH0, epoch_time(a, 0), EPOCH_D, epoch_time(a, 1)), "epochs")
        ej = a.run("epochs", "--token-file", a.client, "--json")
        eq(ej.stdout.encode(), a.get("/v1/epochs").body, "epochs --json: the server's body")


@case("admin_cli")
def apply_past_max_movement_is_refused():
    with Admin() as a:
        r = a.run("apply", "--to", shard_d_online(), "--admin-token-file", a.admin,
                  "--max-movement", "0.1")
        eq(r.returncode, 2, "exit 2")
        eq(r.stderr, "shardgate: admin apply: PUT /v1/admin/membership?max_movement=0.1: HTTP 422 "
           "movement_exceeds_limit: the change moves 0.218417150 of the hash space, more than "
           "max_movement 0.100000000 (add --force to apply it anyway)\n", "the server's refusal")
        eq(a.get("/v1/ring").json()["epoch"], EPOCH0, "nothing changed")
        r = a.run("apply", "--to", shard_d_online(), "--admin-token-file", a.admin,
                  "--max-movement", "0.1", "--force")
        eq((r.returncode, r.stderr, r.stdout.splitlines()[-1]),
           (0, "", "applied: epoch %s (epoch_seq 2)" % EPOCH_D), "--force applies it")


@case("admin_cli")
def apply_again_changes_nothing_whatever_its_options():
    """A deploy script that runs its last step again (docs/api.md §15): the membership in force
    applied again, with --max-movement, --force or neither, is "unchanged", exit 0, and the
    server stays up with one epoch recorded for it."""
    with Admin() as a:
        eq(a.run("apply", "--to", shard_d_online(), "--admin-token-file", a.admin).returncode, 0,
           "the change")
        for extra in ([], ["--max-movement", "0.5"], ["--max-movement", "0"],
                      ["--max-movement", "0", "--force"], ["--force"]):
            r = a.run("apply", "--to", shard_d_online(), "--admin-token-file", a.admin, *extra)
            eq((r.returncode, r.stderr, r.stdout.splitlines()[-1]),
               (0, "", "unchanged: epoch %s (epoch_seq 2)" % EPOCH_D), "again with %r" % extra)
        eq([e["epoch_seq"] for e in a.get("/v1/epochs").json()["epochs"]], [1, 2], "the chain")
        eq(a.server.proc.poll(), None, "the server is up")


@case("admin_cli")
def apply_names_its_own_file_and_the_token_options():
    """A --to document the start would refuse is named as its own file, before any request; a
    401 says where each token comes from."""
    with Admin() as a:
        bad = os.path.join(tmpdir(), "next.json")
        write(bad, json.dumps({"shards": [{"id": "shard-a", "state": "asleep", "capacity": 1}]}))
        for cmd in ("plan", "apply"):
            r = a.run(cmd, "--to", bad, "--admin-token-file", a.admin)
            eq((r.returncode, r.stdout, r.stderr),
               (3, "", "shardgate: admin %s: shards: %s: shards[0].state: must be one of online, "
                "draining, offline\n" % (cmd, bad)), "%s of a bad --to" % cmd)
        r = a.run("apply", "--to", shard_d_online())
        eq((r.returncode, r.stderr), (2, "shardgate: admin apply: GET /v1/admin/membership: HTTP "
           "401 unauthorized: /v1/admin/membership needs Authorization: Bearer <admin token> (the "
           "admin token comes from --admin-token-file FILE, else $SHARDGATE_ADMIN_TOKEN)\n"),
           "apply without the admin token")
        eq(a.get("/v1/ring").json()["epoch"], EPOCH0, "nothing changed")


class HoldingProxy(threading.Thread):
    """A TCP proxy in front of the gateway that holds a request whose first bytes start with
    `prefix` until release() (the real gateway answers it then)."""

    def __init__(self, port, prefix):
        super().__init__(daemon=True)
        self.target, self.prefix = port, prefix
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.held, self.released = threading.Event(), threading.Event()

    def pipe(self, src_sock, dst_sock, inbound):
        try:
            while True:
                data = src_sock.recv(65536)
                if not data:
                    break
                if inbound and data.startswith(self.prefix):
                    self.held.set()
                    self.released.wait(30)
                dst_sock.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src_sock, dst_sock):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def run(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self.pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self.pipe, args=(upstream, client, False), daemon=True).start()


@case("admin_cli")
def apply_refuses_when_the_membership_moved_after_the_plan():
    """The PUT of apply is held by a proxy; meanwhile another client brings shard-d online;
    released, the PUT names the epoch the plan was made against: 412, nothing applied, exit 2."""
    with Admin() as a:
        proxy = HoldingProxy(a.server.port, b"PUT /v1/admin/membership HTTP/1.1")
        proxy.start()
        other = json.loads(read(src("input", "shards.json")))
        for s in other["shards"]:
            if s["id"] == "shard-e":
                s["state"] = "online"
        p = subprocess.Popen([sgtest.BIN, "admin", "apply", "--to", shard_d_online(),
                              "--admin-token-file", a.admin,
                              "--url", "http://127.0.0.1:%d" % proxy.port],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ok(proxy.held.wait(30), "the PUT reached the proxy after the dry run")
        moved = a.put(other, EPOCH0)
        eq(moved.status, 200, "another client's change")
        now = moved.json()["epoch"]
        proxy.released.set()
        out, err = p.communicate(timeout=30)
        eq(p.returncode, 2, "exit 2")
        eq(out, PLAN_D, "the plan was shown")
        eq(err, "shardgate: admin apply: PUT /v1/admin/membership: HTTP 412 epoch_mismatch: "
           "If-Match \"%s\" does not name the current epoch \"%s\"\n"
           "shardgate: admin apply: the membership changed after it was planned against \"%s\": "
           "nothing was applied; plan again\n" % (EPOCH0, now, EPOCH0), "412, said")
        eq(a.get("/v1/ring").json()["epoch"], now, "the other change stands")
        proxy.listener.close()


@case("admin_cli")
def tail_follows_a_shards_assignments():
    with Admin() as a:
        p = subprocess.Popen([sgtest.BIN, "admin", "tail", "--shard", "shard-c", "--url", a.url,
                              "--token-file", a.client], stdout=subprocess.PIPE, text=True)
        try:
            lines = []
            reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")),
                                      daemon=True)
            reader.start()
            time.sleep(0.3)  # the first long-poll waits: nothing to follow yet
            eq(lines, [], "nothing before the first receipt (its epoch comes with it)")
            a.post(json.loads(read(src("input", "changes.json"))))
            wait_until(lambda: len(lines) == 5, 10, "the epoch and shard-c's four assignments")
            eq(lines, ["epoch=%s epoch_seq=1 source=start\n" % EPOCH0,
                       "seq=1 batch=sample-0001 id=ch-002 key=user:42 size=2\n",
                       "seq=1 batch=sample-0001 id=ch-005 key=user:842 size=1\n",
                       "seq=1 batch=sample-0001 id=ch-007 key=invoice:8 size=6\n",
                       "seq=1 batch=sample-0001 id=ch-008 key=user:7 size=1\n"], "followed")
            eq(p.poll(), None, "still following")
        finally:
            p.kill()
            p.wait()
        p = subprocess.Popen([sgtest.BIN, "admin", "tail", "--shard", "shard-c", "--url", a.url,
                              "--token-file", a.client, "--json", "--after", "0"],
                             stdout=subprocess.PIPE)
        try:
            got = [p.stdout.readline() for _ in range(5)]
        finally:
            p.kill()
            p.wait()
        page = a.get("/v1/shards/shard-c/assignments?after=0").body.splitlines(keepends=True)
        eq(got, page[:-1], "--json: the feed's items, the bookmark left out")


HOSTILE = {"batch_id": "ctl-1", "changes": [
    {"id": "c1", "key": "k\u0000x", "size": 1},
    {"id": "c2", "key": "k\u001b]0;pwned\u0007\n seq=999 batch=forged", "size": 2},
    {"id": "c\u0000\u009b", "key": "back\\slash\u0085", "size": 3}]}
SHOWN = {"c1": "id=c1 key=k\\x00x size=1",
         "c2": "id=c2 key=k\\x1b]0;pwned\\x07\\x0a seq=999 batch=forged size=2",
         "c\u0000\u009b": "id=c\\x00\\u009b key=back\\\\slash\\u0085 size=3"}


def tail_lines(a, shard, n):
    p = subprocess.Popen([sgtest.BIN, "admin", "tail", "--shard", shard, "--url", a.url,
                          "--token-file", a.client], stdout=subprocess.PIPE)
    try:
        return [p.stdout.readline() for _ in range(n)]
    finally:
        p.kill()
        p.wait()


@case("admin_cli")
def keys_with_control_characters_break_no_tool():
    """docs/contract.md §4: an id or a key may hold any character, NUL and terminal escapes
    included. `admin tail` prints each control character escaped (no key moves the cursor,
    retitles the window or forges a line of its own); consume.py --exec hands every assignment
    over, a NUL-holding id or key on stdin only (not an environment variable), and moves its
    cursor past it; `shardgate plan --journal` reads the journal."""
    with Admin() as a:
        r = a.server.post(HOSTILE, headers={"Authorization": "Bearer " + CLIENT})
        eq(r.status, 200, "POST")
        placed = {p["id"]: p["shard"] for p in r.json()["placements"]}
        for shard in sorted(set(placed.values())):
            mine = [c["id"] for c in HOSTILE["changes"] if placed[c["id"]] == shard]
            got = tail_lines(a, shard, 1 + len(mine))[1:]
            eq(got, [("seq=1 batch=ctl-1 " + SHOWN[i] + "\n").encode() for i in mine],
               "admin tail of %s: escaped" % shard)
            d = tmpdir()
            cmd = ('printf "%s|%s|" "${SHARDGATE_CHANGE_ID-unset}" "${SHARDGATE_KEY-unset}" '
                   '>> "$OUT"; cat >> "$OUT"')
            r = subprocess.run([sys.executable, src("client", "consume.py"), "--url", a.url,
                                "--shard", shard, "--token-file", a.client, "--cursor-file",
                                os.path.join(d, "cursor"), "--exec", cmd, "--exit-idle",
                                "--wait-ms", "0"], capture_output=True,
                               env=dict(os.environ, OUT=os.path.join(d, "out")), timeout=60)
            eq((r.returncode, r.stderr), (0, b""), "consume.py --exec on %s" % shard)
            lines = a.get("/v1/shards/%s/assignments?after=0" % shard).body.splitlines()
            items = [l for l in lines if json.loads(l)["type"] == "assignment"]
            want = b"".join(
                ("%s|%s|" % (c["id"] if "\0" not in c["id"] else "unset",
                             c["key"] if "\0" not in c["key"] else "unset")).encode() + line + b"\n"
                for c, line in zip([c for c in HOSTILE["changes"] if placed[c["id"]] == shard],
                                   items))
            eq(read(os.path.join(d, "out")), want, "CMD got each assignment once, %s" % shard)
            eq(json.loads(read(os.path.join(d, "cursor")))["after"], 1, "the cursor moved on")
        eq(a.server.stop(), 0, "clean stop")
        r = subprocess.run([sgtest.BIN, "plan", "--conf", src("conf", "dispatch.env"), "--shards",
                            src("input", "shards.json"), "--to", shard_d_online(), "--journal",
                            os.path.join(a.server.state_dir, "journal.jsonl")], capture_output=True, text=True, timeout=60)
        eq((r.returncode, r.stderr, json.loads(r.stdout)["journal"]["changes"]), (0, "", 3),
           "plan --journal reads it")


@case("admin_cli")
def refusals_and_exit_codes():
    with Admin() as a:
        r = a.run("status")
        eq((r.returncode, r.stdout, r.stderr), (2, "", "shardgate: admin status: GET /v1/ring: "
           "HTTP 401 unauthorized: /v1/ring needs Authorization: Bearer <token> (the token comes "
           "from --token-file FILE, else $SHARDGATE_TOKEN)\n"), "no token")
        r = a.run("plan", "--to", shard_d_online(), "--admin-token-file", a.client)
        eq((r.returncode, r.stderr.split(": HTTP ")[1][:16]), (2, "401 unauthorized"),
           "the client token is not the admin token")
        missing = os.path.join(tmpdir(), "none")
        r = a.run("status", "--token-file", missing)
        eq((r.returncode, r.stderr), (3, "shardgate: admin: %s: cannot read: No such file or "
                                         "directory\n" % missing), "a token file missing")
        r = a.run("plan", "--to", missing, "--admin-token-file", a.admin)
        eq((r.returncode, r.stderr), (3, "shardgate: admin plan: --to %s: cannot read: No such "
                                         "file or directory\n" % missing), "--to missing")
        closed = sgtest.free_port()
        r = a.run("epochs", url="http://127.0.0.1:%d" % closed)
        eq((r.returncode, r.stderr.startswith("shardgate: admin epochs: cannot reach "
                                              "http://127.0.0.1:%d: " % closed)),
           (3, True), "unreachable: %r" % r.stderr)
        r = a.run("status", "--to", "x")
        eq((r.returncode, r.stderr.splitlines()[0]),
           (64, "shardgate: --to is not an option of `shardgate admin status`"), "usage")
        r = a.run("tail")
        eq((r.returncode, r.stderr.splitlines()[0]), (64, "shardgate: --shard ID is required"),
           "tail needs --shard")
        r = a.run("apply", "--to", "f", "--max-movement", ".5")
        eq((r.returncode, r.stderr.splitlines()[0]),
           (64, "shardgate: --max-movement must be a decimal 0..1 (0.25, 1.0)"), "a bad fraction")
        r = subprocess.run([sgtest.BIN, "admin", "statu"], capture_output=True, text=True)
        eq((r.returncode, r.stderr.splitlines()[0]),
           (64, 'shardgate: unknown admin subcommand "statu"'), "an unknown subcommand")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
