"""ops/cluster.sh for real (docs/operations.md §9): PostgreSQL, three gateway
replicas with --store postgres, HAProxy in front and the health service, all on 127.0.0.1.

`up` on free ports in a temp state dir; status shows every component running; the worked
example POSTed through HAProxy answers the golden receipt, then its replay through HAProxy and
through each replica directly; each replica's GET /v1/shards shows the same totals. SIGKILL of
the replica the key hashes to: HAProxy still answers (the retry goes to another replica, which
replays), the health checks take the dead one out, new batches still commit. `down` stops
everything, twice.

The health service runs only when this shardgate-health takes --store (it is being added):
until then `up --no-health` is used and the health checks are skipped with a printed reason.

Runs as `python3 test_cluster_sh.py SHARDGATE_BINARY HEALTH_BINARY SOURCE_DIR CASE...`; needs
root (PostgreSQL runs as the postgres user through runuser).
"""

import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Skip, batch, case, eq, main, ok, read, run, src, tmpdir, wait_until  # noqa: E402

GOLDEN_V2 = "tests/golden/sample-0001.receipt.v2.json"
EPOCH_D = "e3f360d5dc73a734c643cc9685c3ed725155a47c"  # the worked example with shard-d online
# load_total, received_total of the worked example (input/changes.json) per shard.
EXAMPLE_TOTALS = {"shard-a": [8, 2], "shard-b": [6, 2], "shard-c": [10, 4],
                  "shard-d": [0, 0], "shard-e": [0, 0]}
UP_TIMEOUT = 120  # the binaries under test: nothing to build


def port_free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def listening(port):
    """Something accepts connections on 127.0.0.1:port (TIME_WAIT left by a stop is not)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def free_ports():
    """Ports for the cluster: HAProxy, three consecutive for the gateways, health, PostgreSQL."""
    rng = random.SystemRandom()
    for _ in range(200):
        base = rng.randrange(20000, 32000)
        ports = [base, base + 1, base + 2, base + 3, base + 10, base + 20]
        if all(port_free(p) for p in ports):
            return {"SHARDGATE_CLUSTER_PORT": base, "SHARDGATE_CLUSTER_BASE_PORT": base + 1,
                    "SHARDGATE_CLUSTER_HEALTH_PORT": base + 10,
                    "SHARDGATE_CLUSTER_PG_PORT": base + 20}
    raise sgtest.Failure("no free ports found")


class Cluster:
    def __init__(self, health):
        self.state = tmpdir()  # 0700, as ops/run.sh's state/ is 0750: the postgres user cannot
        # reach it, so PostgreSQL's data goes under that user's home (cluster.env: PG_DIR)
        self.ports = free_ports()
        self.env = dict(os.environ, **{k: str(v) for k, v in self.ports.items()})
        # the binaries under test, not a build/release of the source tree
        self.env.update(SHARDGATE_BIN=sgtest.BIN, SHARDGATE_HEALTH_BIN=sgtest.HEALTH)
        self.health = health

    def run(self, *args, timeout=120):
        cmd = ["bash", src("ops", "cluster.sh")] + list(args) + ["--state", self.state]
        r = run(cmd, timeout=timeout, env=self.env)
        print("$ %s -> %d\n%s%s" % (" ".join(args), r.returncode, r.stdout,
                                    "\n".join(r.stderr.splitlines()[-15:])), flush=True)
        return r

    def port(self, name):
        p = self.ports
        if name.startswith("gateway-"):
            return p["SHARDGATE_CLUSTER_BASE_PORT"] + int(name[-1]) - 1
        return {"haproxy": p["SHARDGATE_CLUSTER_PORT"], "health": p["SHARDGATE_CLUSTER_HEALTH_PORT"],
                "postgres": p["SHARDGATE_CLUSTER_PG_PORT"]}[name]

    def pid(self, name):
        return int(read(os.path.join(self.state, "gw-%s.pid" % name[-1])).split()[0])

    def log(self, name):
        return read(os.path.join(self.state, name + ".log")).decode()


# The client token `up` made (STATE/token): every request but the probes carries it.
TOKEN = []


def request(port, method, path, body=None, headers=None, token=True):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = dict(headers or {})
    if token and TOKEN:
        headers["Authorization"] = "Bearer " + TOKEN[0]
    try:
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def post(port, body, key):
    return request(port, "POST", "/v1/batches", body,
                   {"Content-Type": "application/json", "Idempotency-Key": key})


def post_example(port):
    return post(port, read(src("input", "changes.json")), "sample-0001")


def totals(port):
    status, _, body = request(port, "GET", "/v1/shards")
    eq(status, 200, "GET /v1/shards on %d" % port)
    return {s["id"]: [s["load_total"], s["received_total"]] for s in json.loads(body)["shards"]}


def health_takes_store():
    r = run([sgtest.HEALTH, "--help"])
    return "--store" in r.stdout + r.stderr


# --- the steps ---------------------------------------------------------------------------

NAMES = ["postgres", "gateway-1", "gateway-2", "gateway-3", "haproxy", "health"]


def status_lines(c):
    """`status` as {name: (state, port)}, after checking each line's form; and its exit."""
    r = c.run("status")
    got = {}
    for line in r.stdout.splitlines():
        m = re.fullmatch(r"(\S+) +(running pid=\d+|stopped pid=-|disabled \(up --no-health\)) "
                         r"port=(\d+)", line)
        ok(m, "status line form: %r" % line)
        got[m.group(1)] = (m.group(2).split()[0], int(m.group(3)))
    eq(sorted(got), sorted(NAMES), "status names one line per component")
    return got, r.returncode


def expect_all_running(c):
    got, rc = status_lines(c)
    eq(rc, 0, "status exit with everything up")
    running = [n for n in NAMES if got[n][0] == "running"]
    want = NAMES if c.health else NAMES[:5]
    eq(running, want, "running components")
    eq(len(running), 6 if c.health else 5, "running lines")
    if not c.health:
        eq(got["health"][0], "disabled", "health without --store")
    for n in NAMES:
        eq(got[n][1], c.port(n), "%s port" % n)


def expect_example_and_replays(c):
    golden = read(src(GOLDEN_V2))
    status, headers, body = post_example(c.port("haproxy"))
    eq((status, headers.get("idempotent-replayed")), (200, None), "first POST through HAProxy")
    eq(body, golden, "receipt through HAProxy is the golden one")
    status, headers, body = post_example(c.port("haproxy"))
    eq((status, headers.get("idempotent-replayed"), body), (200, "true", golden),
       "second POST through HAProxy: the replay")
    for n in NAMES[1:4]:
        status, headers, body = post_example(c.port(n))
        eq((status, headers.get("idempotent-replayed"), body), (200, "true", golden),
           "POST to %s directly: the replay" % n)
        eq(totals(c.port(n)), EXAMPLE_TOTALS, "GET /v1/shards on %s" % n)


def home_gateway(c):
    """The replica HAProxy hashed sample-0001 to: the one whose log has a proxied POST before
    the direct ones, i.e. the one with two POSTs (the proxied first and replay) plus one."""
    counts = {n: c.log("gw-" + n[-1]).count('"method":"POST"') for n in NAMES[1:4]}
    homes = [n for n, k in counts.items() if k == 3]
    eq((len(homes), sorted(counts.values())), (1, [1, 1, 3]), "POSTs per replica %r" % counts)
    return homes[0]


def expect_health(c):
    if not c.health:
        print("SKIP health: shardgate-health --help does not mention --store "
              "(the health service's --store is not in this tree yet)", flush=True)
        return
    status, _, body = request(c.port("health"), "GET", "/healthz")
    eq(status, 200, "health /healthz: %r" % body[:300])


def expect_failover(c, home):
    """SIGKILL of the key's replica: HAProxy answers at once and goes on answering."""
    os.kill(c.pid(home), signal.SIGKILL)
    golden = read(src(GOLDEN_V2))
    deadline = time.time() + 3
    while time.time() < deadline:
        status, headers, body = post_example(c.port("haproxy"))
        eq((status, headers.get("idempotent-replayed"), body), (200, "true", golden),
           "POST through HAProxy after SIGKILL of %s" % home)
        time.sleep(0.1)
    wait_until(lambda: "Server replicas/%s is DOWN" % home in c.log("haproxy"), 5,
               "HAProxy's checks to take %s out" % home)
    status, headers, _ = post(c.port("haproxy"), json.dumps(batch("after-kill")).encode(),
                              "after-kill")
    eq((status, headers.get("idempotent-replayed")), (200, None), "a new batch after the kill")
    alive = [n for n in NAMES[1:4] if n != home]
    seen = [totals(c.port(n)) for n in alive]
    eq(seen[0], seen[1], "the surviving replicas' totals")
    eq(sum(v[0] for v in seen[0].values()), 24 + 6, "load_total of the example and after-kill")
    got, rc = status_lines(c)
    ok(rc != 0, "status exit with %s killed: %d" % (home, rc))
    eq(got[home][0], "stopped", "%s in status after SIGKILL" % home)


def expect_client_token(c):
    """The client token `up` made (0600, printed): without it 401 through HAProxy."""
    token = os.path.join(c.state, "token")
    eq(os.stat(token).st_mode & 0o777, 0o600, "token's mode")
    status, _, body = request(c.port("haproxy"), "GET", "/v1/shards", token=False)
    eq((status, json.loads(body)["error"]["code"]), (401, "unauthorized"),
       "GET /v1/shards without the token through HAProxy")
    TOKEN[:] = [read(token).decode().strip()]


def expect_admin(c):
    """The admin token `up` made (0600, printed): a membership change through HAProxy reaches
    every replica."""
    token = os.path.join(c.state, "admin.token")
    eq(os.stat(token).st_mode & 0o777, 0o600, "admin.token's mode")
    r = run([sgtest.BIN, "admin", "apply", "--url", "http://127.0.0.1:%d" % c.port("haproxy"),
             "--admin-token-file", token, "--to", src("tests", "plan", "shards-d-online.json")])
    eq((r.returncode, r.stdout.splitlines()[-1]), (0, "applied: epoch %s (epoch_seq 2)" % EPOCH_D),
       "shardgate admin apply through HAProxy: %s" % r.stderr)
    for n in NAMES[1:4]:
        wait_until(lambda: json.loads(request(c.port(n), "GET", "/v1/ring")[2])["epoch"] == EPOCH_D,
                   5, "%s serving the new epoch" % n)


def pg_dir(c):
    env = read(os.path.join(c.state, "cluster.env")).decode()
    return re.search(r"^PG_DIR=(.*)$", env, re.M).group(1)


def expect_down(c):
    for attempt in ("down", "down again"):
        eq(c.run("down").returncode, 0, "ops/cluster.sh %s" % attempt)
    got, rc = status_lines(c)
    ok(rc != 0, "status exit after down: %d" % rc)
    eq({n: got[n][0] for n in NAMES if n != "health" or c.health},
       {n: "stopped" for n in NAMES if n != "health" or c.health}, "states after down")
    eq([n for n in NAMES if listening(c.port(n))], [], "ports still listening after down")


@case("cluster")
def cluster_up_replay_failover_down():
    if os.geteuid() != 0:
        raise Skip("needs root: PostgreSQL runs as the postgres user through runuser")
    c = Cluster(health=health_takes_store())
    try:
        up = c.run("up", *([] if c.health else ["--no-health"]), timeout=UP_TIMEOUT)
        eq(up.returncode, 0, "ops/cluster.sh up")
        ok("http://127.0.0.1:%d  HAProxy" % c.port("haproxy") in up.stdout, "up prints the URL")
        ok("%s/admin.token  the admin token" % c.state in up.stdout, "up prints the admin token")
        expect_client_token(c)
        ok(not pg_dir(c).startswith(c.state), "PostgreSQL's data outside the 0700 state dir: %s"
           % pg_dir(c))
        expect_all_running(c)
        expect_example_and_replays(c)
        expect_health(c)
        home = home_gateway(c)
        expect_admin(c)
        expect_failover(c, home)
    except BaseException:
        c.run("down")  # leave nothing running; the first failure is the one reported
        raise
    finally:
        data = pg_dir(c) if os.path.exists(os.path.join(c.state, "cluster.env")) else None
    expect_down(c)
    if data and not data.startswith(c.state):
        shutil.rmtree(data)  # the database outlives `down`; the test's goes with it


@case("cluster")
def up_stops_at_a_port_in_use():
    """HAProxy's port held by another program: `up` names the port and the variable that moves
    it, exits 1, and starts nothing."""
    c = Cluster(health=False)
    holder = socket.socket()
    holder.bind(("127.0.0.1", c.port("haproxy")))
    holder.listen(1)
    try:
        r = c.run("up", "--no-health")
    finally:
        holder.close()
    eq((r.returncode, r.stderr.splitlines()[-1]),
       (1, "ops/cluster.sh: 127.0.0.1:%d (haproxy) is in use: stop what holds it, or set "
           "SHARDGATE_CLUSTER_PORT" % c.port("haproxy")), "up refused")
    eq(sorted(f for f in os.listdir(c.state) if f.endswith(".pid")), [], "nothing started")
    eq(listening(c.port("postgres")), False, "no PostgreSQL")


if __name__ == "__main__":
    sys.exit(main(sys.argv, operands=("shardgate", "health", "source")))
