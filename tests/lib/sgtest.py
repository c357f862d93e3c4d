"""The one harness of shardgate's Python tests (tests/*): named cases in groups, assertions
that print both operands, temp dirs, the real `shardgate serve` on an ephemeral 127.0.0.1 port,
HTTP helpers, and runners for the gateway's and the health service's binaries.

A case script runs as `python3 SCRIPT OPERAND... [CASE...]`, its operands named by the
script's call to main() (e.g. SHARDGATE_BINARY SOURCE_DIR); with no case names it runs them
all. `SCRIPT --list` prints `GROUP CASE` lines without running anything and `SCRIPT OPERAND...
--group GROUP` runs one group: CMake registers one ctest per group from --list
(tests/lib/discover.cmake), so a case added to a script always runs. A server is always killed
when its `with` block ends, pass or fail, and every wait has a deadline, so a hang is a
failure rather than a stuck ctest.
"""

import copy
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import zlib

CASES = {}
GROUPS = {}
BIN = None
HEALTH = None
SRC = None
START_TIMEOUT = 30
REQUEST_TIMEOUT = 60
TMPDIRS = []

# The gateways these tests start listen on 127.0.0.1 only and most serve without a client
# token: said as `serve` wants it said (docs/api.md §11), by SHARDGATE_NO_TOKEN, which every
# child inherits. A --token-file wins over it: the auth tests pass one.
os.environ["SHARDGATE_NO_TOKEN"] = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONF = os.path.join(ROOT, "conf", "dispatch.env")
SHARDS = os.path.join(ROOT, "input", "shards.json")
GOLDEN = os.path.join(ROOT, "tests", "golden", "sample-0001.receipt.json")
CHANGES = os.path.join(ROOT, "input", "changes.json")


class Failure(Exception):
    pass


class Skip(Exception):
    """A case that cannot run here (a tool is missing); the script exits 77 for ctest."""


# The named kill -9 and pause points (docs/api.md §14) are compiled into every build but
# Release (gateway/CMakeLists.txt, SHARDGATE_CRASH_POINTS); CMake says which in the tests'
# environment. A case that asks for one in a build without them is skipped, not run into its
# time limit.
CRASH_POINTS_ABSENT = ("this build has no named crash points (a Release build: configure with "
                       "-DSHARDGATE_CRASH_POINTS=ON to run it)")


def crash_points_built():
    return os.environ.get("SHARDGATE_CRASH_POINTS_BUILT", "ON").upper() not in ("OFF", "0", "")


def require_crash_points(env):
    """Skips the case when ENV asks for a crash or pause point this build does not have."""
    if not crash_points_built() and any(
            k in env for k in ("SHARDGATE_TEST_CRASH_AT", "SHARDGATE_TEST_PAUSE_AT")):
        raise Skip(CRASH_POINTS_ABSENT)


def case(arg):
    """Registers a case: `@case` (its group is its own name) or `@case("group")`."""
    def register(fn, group):
        CASES[fn.__name__] = fn
        GROUPS[fn.__name__] = group or fn.__name__
        return fn
    if callable(arg):
        return register(arg, None)
    return lambda fn: register(fn, arg)


def eq(actual, expected, what):
    if actual != expected:
        raise Failure("%s:\n  expected: %r\n  actual:   %r" % (what, expected, actual))


def ok(cond, what):
    if not cond:
        raise Failure(what)


def src(*parts):
    return os.path.join(SRC or ROOT, *parts)


def client_package():
    """The package shardgate of client/ (the probe's modules), imported from the source tree."""
    path = src("client")
    if path not in sys.path:
        sys.path.insert(0, path)
    import shardgate.probe  # the command imports every module of the package
    return shardgate


def tmpdir():
    """A temp dir, removed when the script passes (kept for a look when it fails)."""
    d = tempfile.mkdtemp(prefix="shardgate-test-")
    TMPDIRS.append(d)
    return d


def write(path, data, mode="w"):
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
        f.write(data)
    return path


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def deep(obj):
    return copy.deepcopy(obj)


def run(args, timeout=60, **kw):
    """Runs a command, capturing text output; a hang is a failure, not a stuck ctest."""
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def run_gateway(*args, timeout=60, **kw):
    """Runs `shardgate ARGS...` to completion without $SHARDGATE_CONF in its environment."""
    env = dict(os.environ)
    env.pop("SHARDGATE_CONF", None)
    return run([BIN] + list(args), timeout=timeout, env=env, **kw)


def run_server(args, timeout=START_TIMEOUT, binary=None, **kw):
    """Runs `shardgate ARGS` (or `binary ARGS`) for a server expected to refuse to start: until
    it exits, or until it logs that it listens, when it is killed and its returncode is None
    (so a server that starts fails the caller's check at once, not after a timeout). Returns a
    CompletedProcess with text output; `timeout` is a hang."""
    proc = subprocess.Popen([binary or BIN] + args, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    err, started = [], False
    try:
        for line in proc.stderr:
            err.append(line)
            if line.startswith('{"event":"listening"'):
                started = True
                proc.kill()
        proc.wait()
        reader.join()
    finally:
        watchdog.cancel()
        proc.stdout.close()
        proc.stderr.close()
    return subprocess.CompletedProcess(proc.args, None if started else proc.returncode,
                                       "".join(out), "".join(err))


# --- the gateway's inputs and journal ------------------------------------------------------

def pump(src, dst):
    """Copies src to dst until either ends, then shuts both down: one direction of a test's
    TCP proxy (tests/client/drop_proxy.py, sgpg.CutProxy)."""
    try:
        while True:
            chunk = src.recv(65536)
            if not chunk:
                break
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """A port free now and below the kernel's ephemeral range, so no bind to port 0 and no
    outgoing connection takes it while a server that listens there restarts."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(20000, ephemeral_low)
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise Failure("no free port below %d on %s" % (ephemeral_low, host))


def batch(batch_id, n=3, size=1, prefix=None):
    """A valid batch of n changes with distinct keys."""
    p = prefix or batch_id
    return {"batch_id": batch_id,
            "changes": [{"id": "c%d" % i, "key": "%s:%d" % (p, i), "size": size + i % 5}
                        for i in range(n)]}


def post_batches(server, n, prefix, changes=20):
    """POSTs n batches `<prefix>0`.. of `changes` changes, each answered 200; returns
    {batch_id: response body}."""
    bodies = {}
    for i in range(n):
        r = server.post(batch("%s%d" % (prefix, i), n=changes))
        eq(r.status, 200, "post %s%d" % (prefix, i))
        bodies["%s%d" % (prefix, i)] = r.body
    return bodies


def finish_request(sock, rest):
    """Sends the rest of a request written by hand (Connection: close), reads the answer to
    EOF; returns (status, body)."""
    sock.sendall(rest)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    sock.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


CRC_TAIL = re.compile(rb',"crc32":"([0-9a-f]{8})"\}')


def record_of(line):
    """The record of a journal line (bytes, no newline): a checked line's without its crc32
    member, once the checksum is checked (docs/journal.md §2.1); a line without one as it is."""
    m = CRC_TAIL.fullmatch(line, len(line) - 20) if len(line) > 20 else None
    if m is None:
        return line
    if zlib.crc32(line[:-20]) != int(m.group(1), 16):
        raise Failure("crc32 mismatch: %r" % line[:80])
    return line[:-20] + b"}"


def with_crc(record):
    """The checked line of a record (bytes, no newline): what the gateway writes for it."""
    return record[:-1] + b',"crc32":"%08x"}' % zlib.crc32(record[:-1])


def journal_lines(state_dir):
    """Every record of the journal, each line's record_of: the sealed segments in seq order,
    then the active one (docs/journal.md §6)."""
    names = sorted(f for f in os.listdir(state_dir)
                   if f.startswith("journal-") and f.endswith(".jsonl"))
    lines = []
    for name in names + ["journal.jsonl"]:
        lines += [record_of(l) for l in read(os.path.join(state_dir, name)).split(b"\n")[:-1]]
    return lines


def journal_file_lines(state_dir):
    """Every line of every segment in seq order, read a line at a time (with its newline)."""
    names = sorted(f for f in os.listdir(state_dir)
                   if f.startswith("journal-") and f.endswith(".jsonl"))
    for name in names + ["journal.jsonl"]:
        with open(os.path.join(state_dir, name), "rb") as f:
            yield from f


def journal_receipts(state_dir):
    return [json.loads(l) for l in journal_lines(state_dir) if b'"type":"receipt"' in l[:20]]


def journal_totals(server):
    """Per-shard [load, received] summed over the journal's receipts, with a zero entry for
    every shard /v1/shards lists: what /v1/shards must report."""
    totals = {sid: [0, 0] for sid in server.shard_totals()}
    for line in journal_file_lines(server.state_dir):  # a line at a time: load tests are large
        if line.startswith(b'{"type":"receipt"'):
            for sid, s in json.loads(line)["receipt"]["shards"].items():
                t = totals.setdefault(sid, [0, 0])
                t[0] += s["load"]
                t[1] += s["received"]
    return totals


# --- the gateway over HTTP -----------------------------------------------------------------

class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def error(self):
        """(code, path) of an error body, after checking its shape."""
        doc = self.json()
        ok(set(doc) == {"error"}, "error body has only 'error': %r" % doc)
        ok(set(doc["error"]) == {"code", "message", "path"}, "error fields: %r" % doc)
        return doc["error"]["code"], doc["error"]["path"]

    def __repr__(self):
        return "Response(%d, %r)" % (self.status, self.body[:300])


class Server:
    """`shardgate serve` in a temp state dir; use as a context manager."""

    def __init__(self, state_dir=None, conf=None, shards=None, args=(), env=None,
                 preexec_fn=None):
        self.state_dir = state_dir or tmpdir()
        self.conf = conf or src("conf", "dispatch.env")
        self.shards = shards or src("input", "shards.json")
        self.args = list(args)
        self.env = dict(os.environ, **(env or {}))
        self.preexec_fn = preexec_fn
        self.proc = None
        self.port = None
        self.lines = []
        self._reader = None

    def command(self):
        return [BIN, "serve", "--conf", self.conf, "--shards", self.shards,
                "--state-dir", self.state_dir, "--listen", "127.0.0.1:0"] + self.args

    def _read_stderr(self):
        for raw in self.proc.stderr:
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def start(self):
        require_crash_points(self.env)
        self.lines = []
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=self.env, preexec_fn=self.preexec_fn)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        deadline = time.time() + START_TIMEOUT
        while time.time() < deadline:
            for line in list(self.lines):
                if line.startswith('{"event":"listening"'):
                    self.port = int(json.loads(line)["address"].rsplit(":", 1)[1])
                    return self
            if self.proc.poll() is not None:
                self._reader.join(5)
                raise Failure("server exited %d before listening:\n%s"
                              % (self.proc.returncode, "\n".join(self.lines)))
            time.sleep(0.02)
        raise Failure("server did not listen within %ds:\n%s"
                      % (START_TIMEOUT, "\n".join(self.lines)))

    def events(self, name):
        prefix = '{"event":"%s"' % name
        return [json.loads(l) for l in list(self.lines) if l.startswith(prefix)]

    def request_log(self):
        return [json.loads(l) for l in list(self.lines) if l.startswith('{"time"')]

    def connect(self, timeout=REQUEST_TIMEOUT):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        own = conn is None
        conn = conn or self.connect()
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            if own:
                conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, doc, headers=None, content_type="application/json", conn=None):
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        h = {"Content-Type": content_type} if content_type else {}
        h.update(headers or {})
        return self.request("POST", "/v1/batches", body=body, headers=h, conn=conn)

    def shard_totals(self):
        r = self.get("/v1/shards")
        eq(r.status, 200, "GET /v1/shards")
        return {s["id"]: [s["load_total"], s["received_total"]] for s in r.json()["shards"]}

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Signals the server and returns its exit code."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise Failure("server did not exit within %ds after signal %d" % (timeout, sig))
        self._reader.join(5)
        return rc

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self._reader:
            self._reader.join(5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()
        return False


# --- shardgate-health ----------------------------------------------------------------------

def run_tool(binary, args, env_extra=None, timeout=120):
    """Runs a binary without the contract environment; returns (exit, stdout, stderr)."""
    env = dict(os.environ)
    env.pop("SHARDGATE_CONF", None)
    env.pop("SHARDGATE_HEALTH_TEST_EMPTY_CRITERIA", None)
    if env_extra:
        env.update(env_extra)
    p = subprocess.run([binary] + args, capture_output=True, timeout=timeout, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check_receipt(binary, receipt_path, conf=CONF, shards=SHARDS, env_extra=None):
    return run_tool(binary, ["check", "--conf", conf, "--shards", shards, "--receipt",
                             receipt_path], env_extra)


def check_journal(binary, journal_path, conf=CONF, shards=SHARDS, env_extra=None):
    return run_tool(binary, ["check", "--conf", conf, "--shards", shards, "--journal",
                             journal_path], env_extra)


def health_check(state_dir, conf=None, shards=None, timeout=120):
    """Runs `shardgate-health check --journal` on the state dir's journal; returns the parsed
    verdict after requiring exit 0 and status pass."""
    r = run([HEALTH, "check", "--conf", conf or src("conf", "dispatch.env"), "--shards",
             shards or src("input", "shards.json"), "--journal",
             os.path.join(state_dir, "journal.jsonl")], timeout=timeout)
    if r.returncode != 0:
        raise Failure("shardgate-health check exited %d:\n%s%s"
                      % (r.returncode, r.stdout[:3000], r.stderr[:2000]))
    verdict = json.loads(r.stdout)
    eq(verdict["status"], "pass", "health verdict")
    return verdict


def golden():
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)


def golden_shards():
    with open(SHARDS, encoding="utf-8") as f:
        return json.load(f)["shards"]


def parse_line(out):
    """The check command's single stdout line as JSON (None if it is not one line of JSON)."""
    lines = out.splitlines()
    if len(lines) != 1:
        return None
    try:
        return json.loads(lines[0])
    except ValueError:
        return None


def changes(n, prefix="k", seed=0, size_mod=7):
    return [{"id": "c%d" % i, "key": "%s:%d:%d" % (prefix, seed, i),
             "size": (i * 31 + seed) % size_mod} for i in range(n)]


def journal_text(records):
    """A journal's text from records, serialised as tests/health/ketama.py dumps them."""
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                   for r in records)


def checks_per_receipt(n_placements, n_shards, in_journal=True, version=1):
    """Evaluations the criteria table runs for one receipt (docs/operations.md §1.3); a
    version-2 receipt adds one (its epoch)."""
    return 14 + 6 * n_placements + 6 * n_shards + (5 if in_journal else 0) + (version == 2)


def checks_per_epoch(legacy=True):
    """Evaluations the criteria table runs for one epoch record (docs/operations.md §1.3):
    epoch_ring_id, epoch_id, epoch_seq, epoch_prev, epoch_changed, and epoch_first_seq for a
    record of the new form."""
    return 5 if legacy else 6


class Failures:
    """Collects failed checks so one run reports every broken one (scripts without cases)."""

    def __init__(self):
        self.failed = []
        self.passed = 0

    def check(self, cond, name, detail=""):
        if cond:
            self.passed += 1
            print("ok   %s" % name)
        else:
            self.failed.append(name)
            print("FAIL %s %s" % (name, detail))

    def exit(self):
        print("%d passed, %d failed" % (self.passed, len(self.failed)))
        cleanup(not self.failed)
        sys.exit(1 if self.failed else 0)


# --- processes and seeds -------------------------------------------------------------------

def seeded_rng(name):
    """A random.Random seeded from RELIABILITY_SEED (or a fresh seed), printed for reruns."""
    text = os.environ.get("RELIABILITY_SEED")
    seed = int(text) if text else random.SystemRandom().randrange(1, 2**31)
    print("%s: RELIABILITY_SEED=%d" % (name, seed), flush=True)
    return random.Random(seed)


def proc_status_kib(pid, field):
    """VmRSS / VmHWM (kB) of a live process from /proc/PID/status, or None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def wait_until(cond, timeout, what, step=0.02):
    """Polls cond() until true or the deadline; raises Failure naming `what`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(step)
    raise Failure("timed out after %.1fs waiting for %s" % (timeout, what))


# --- running cases -------------------------------------------------------------------------

OPERANDS = {"shardgate": "SHARDGATE_BINARY", "health": "HEALTH_BINARY", "source": "SOURCE_DIR"}


def cleanup(passed):
    if passed:
        for d in TMPDIRS:
            shutil.rmtree(d, ignore_errors=True)
    elif TMPDIRS:
        print("state kept in: %s" % " ".join(TMPDIRS))


def metric_value(text, name):
    """The value of series `name` (with its labels) in a /metrics answer."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return line[len(name) + 1:]
    raise Failure("no series %s in:\n%s" % (name, text))


def epoch_of(doc, policy="report", vnodes=160, digest="sha1", table=None, algorithm="maglev"):
    """The epoch id of docs/contract.md §7 for a membership document under conf/dispatch.env's
    ring (or the given one; a Maglev table, or with algorithm="jump" jump's slots, of `table`
    slots when given), computed here independently of the gateway."""
    key = "DISPATCH_JUMP_SLOTS" if algorithm == "jump" else "DISPATCH_MAGLEV_TABLE"
    text = ("shardgate-epoch\nDISPATCH_HASH_RING=%s\n%s=%d\n" % (algorithm, key, table)
            if table else "shardgate-epoch\nDISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=%d\n" % vnodes)
    text += "DISPATCH_RING_HASH=%s\nDISPATCH_CAPACITY_POLICY=%s\n" % (digest, policy)
    for s in sorted(doc["shards"], key=lambda s: s["id"].encode()):
        text += "%s %s %d %d\n" % (s["id"], s["state"], s["capacity"], s.get("weight", 1))
    return hashlib.sha1(text.encode()).hexdigest()


def take_operands(argv, operands):
    """Sets BIN, HEALTH and SRC from the leading operands; returns the rest."""
    global BIN, HEALTH, SRC
    values = dict(zip(operands, (os.path.abspath(a) for a in argv)))
    BIN, HEALTH, SRC = values.get("shardgate"), values.get("health"), values.get("source")
    return argv[len(operands):]


def selected(rest):
    """The case names to run: `--group G`, the names given, or all of them."""
    if rest[:1] == ["--group"] and len(rest) == 2:
        names = [n for n in CASES if GROUPS[n] == rest[1]]
        return names or None
    for name in rest:
        if name not in CASES:
            return None
    return rest or list(CASES)


def run_case(name):
    """Runs one case; returns "pass", "skip" or "fail" after printing its line."""
    t0 = time.time()
    try:
        CASES[name]()
        print("PASS %s (%.1fs)" % (name, time.time() - t0), flush=True)
        return "pass"
    except Skip as e:
        print("SKIP %s: %s" % (name, e), flush=True)
        return "skip"
    except Exception:  # report every case, then fail the script once
        print("FAIL %s (%.1fs)" % (name, time.time() - t0), flush=True)
        traceback.print_exc()
        return "fail"


def main(argv, operands=("shardgate", "source")):
    if argv[1:] == ["--list"]:
        for name in CASES:
            print("%s %s" % (GROUPS[name], name))
        return 0
    usage = "usage: %s %s [CASE... | --group GROUP] | --list" % (
        argv[0], " ".join(OPERANDS[o] for o in operands))
    if len(argv) < 1 + len(operands):
        print(usage, file=sys.stderr)
        return 64
    names = selected(take_operands(argv[1:], operands))
    if names is None:
        print("%s\nunknown case or group (have: %s)" % (usage, ", ".join(CASES)), file=sys.stderr)
        return 64
    results = [run_case(n) for n in names]
    failed, skipped = results.count("fail"), results.count("skip")
    print("%d passed, %d failed, %d skipped" % (results.count("pass"), failed, skipped))
    cleanup(not failed)
    if failed:
        return 1
    return 77 if skipped else 0
