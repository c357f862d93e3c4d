#!/usr/bin/env python3
"""The `shardgate` command line: receipts, exit codes and messages, exactly."""
import json
import os
import subprocess
import sys
import tempfile

SHARDGATE, ROOT = sys.argv[1], sys.argv[2]
CONF = os.path.join(ROOT, "conf", "dispatch.env")
SHARDS = os.path.join(ROOT, "input", "shards.json")
BATCH = os.path.join(ROOT, "input", "changes.json")
GOLDEN = open(os.path.join(ROOT, "tests", "golden", "sample-0001.receipt.v2.json"), "rb").read()
TMP = tempfile.mkdtemp(prefix="shardgate-cli-")
results = {"passed": 0, "failed": 0}


def run(*args, env=None):
    e = dict(os.environ)
    e.pop("SHARDGATE_CONF", None)
    e.update(env or {})
    return subprocess.run([SHARDGATE, *args], capture_output=True, timeout=60, env=e)


def expect(name, actual, wanted):
    if actual == wanted:
        results["passed"] += 1
    else:
        results["failed"] += 1
        print("FAIL %s: expected %r actual %r" % (name, wanted, actual))


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def contract(policy="report", vnodes=160, digest="sha1"):
    return write("c-%s-%s-%s.env" % (policy, vnodes, digest),
                 "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=%d\nDISPATCH_RING_HASH=%s\n"
                 "DISPATCH_CAPACITY_POLICY=%s\n" % (vnodes, digest, policy))


def test_golden():
    p = run("dispatch", "--conf", CONF, "--shards", SHARDS, "--batch", BATCH)
    expect("golden exit", p.returncode, 0)
    expect("golden stdout", p.stdout, GOLDEN)
    expect("golden stderr", p.stderr, b"")
    out = os.path.join(TMP, "receipt.json")
    p = run("dispatch", "--conf", CONF, "--shards", SHARDS, "--batch", BATCH, "--out", out)
    expect("--out exit", p.returncode, 0)
    expect("--out stdout", p.stdout, b"")
    expect("--out file", open(out, "rb").read(), GOLDEN)
    p = run("dispatch", "--shards", SHARDS, "--batch", BATCH, env={"SHARDGATE_CONF": CONF})
    expect("SHARDGATE_CONF", (p.returncode, p.stdout), (0, GOLDEN))


def over_capacity_batch():
    return write("big.json", json.dumps({"batch_id": "big-1", "changes": [
        {"id": "1", "key": "order:1001", "size": 15},
        {"id": "2", "key": "order:1002", "size": 6},
        {"id": "3", "key": "cart:9", "size": 3}]}))


def test_capacity_report():
    p = run("dispatch", "--conf", contract("report"), "--shards", SHARDS,
            "--batch", over_capacity_batch())
    expect("report exit", p.returncode, 2)
    r = json.loads(p.stdout)
    expect("report ok", r["ok"], False)
    expect("report shard-b", r["shards"]["shard-b"],
           {"state": "online", "weight": 1, "capacity": 20, "load": 21, "received": 2,
            "over_capacity": True})
    expect("report counts", r["counts"],
           {"changes": 3, "dispatched": 3, "over_capacity_shards": 1})


def test_capacity_reject():
    out = os.path.join(TMP, "rejected.json")
    p = run("dispatch", "--conf", contract("reject"), "--shards", SHARDS,
            "--batch", over_capacity_batch(), "--out", out)
    expect("reject exit", p.returncode, 2)
    expect("reject stdout", p.stdout, b"")
    expect("reject stderr", p.stderr.decode(),
           "over_capacity: shard shard-b load 21 exceeds capacity 20\n"
           "dispatch: refused under DISPATCH_CAPACITY_POLICY=reject\n")
    expect("reject wrote nothing", os.path.exists(out), False)
    p = run("dispatch", "--conf", contract("reject"), "--shards", SHARDS, "--batch", BATCH)
    # The policy is part of the epoch (docs/contract.md §7): the worked example under reject.
    reject_epoch = b'"epoch":"65ed7c9015cf8d1c13108ff3c1ea0ebc78d07f36"'
    expect("reject within capacity", (p.returncode, p.stdout),
           (0, GOLDEN.replace(b'"epoch":"f60a5fb19effc4cfa95aed0af45997f72905f6ae"', reject_epoch)))


def test_no_online_shard():
    shards = write("none-online.json", json.dumps({"shards": [
        {"id": "a", "state": "offline", "capacity": 5},
        {"id": "b", "state": "draining", "capacity": 5}]}))
    p = run("dispatch", "--conf", CONF, "--shards", shards, "--batch", BATCH)
    expect("empty ring exit", p.returncode, 2)
    expect("empty ring stderr", p.stderr.decode(),
           "dispatch: no online shard: the ring is empty and cannot place changes\n")
    expect("empty ring stdout", p.stdout, b"")
    p = run("lookup", "--conf", CONF, "--shards", shards, "k")
    expect("empty ring lookup", (p.returncode, p.stderr),
           (2, b"lookup: no online shard: the ring is empty\n"))
    p = run("ring", "--conf", CONF, "--shards", shards)
    expect("empty ring summary", json.loads(p.stdout)["vnodes_total"], 0)


def test_ring_and_lookup():
    p = run("ring", "--conf", CONF, "--shards", SHARDS)
    expect("ring", json.loads(p.stdout), {
        "id": "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc", "algorithm": "ketama",
        "hash": "sha1", "vnodes": 160, "vnodes_total": 480,
        "online": ["shard-a", "shard-b", "shard-c"]})
    points = json.loads(run("ring", "--conf", CONF, "--shards", SHARDS, "--points").stdout)
    expect("points count", len(points["points"]), 480)
    expect("points sorted", [p["value"] for p in points["points"]],
           sorted(p["value"] for p in points["points"]))
    expect("points per shard", sorted(sum(1 for p in points["points"] if p["shard"] == s)
                                      for s in points["online"]), [160, 160, 160])
    p = run("lookup", "--conf", CONF, "--shards", SHARDS, "order:1001", "user:842")
    expect("lookup", [json.loads(l) for l in p.stdout.splitlines()], [
        {"key": "order:1001", "hash": 3001802920, "point": 3046879832, "vnode": 15,
         "shard": "shard-b", "reason": "ring"},
        {"key": "user:842", "hash": 4294347913, "point": 3038923, "vnode": 87,
         "shard": "shard-c", "reason": "wrap"}])
    md5 = json.loads(run("ring", "--conf", contract(digest="md5", vnodes=40),
                         "--shards", SHARDS).stdout)
    expect("md5 ring", (md5["hash"], md5["vnodes"], md5["vnodes_total"]), ("md5", 40, 120))


def test_usage():
    expect("no args", run().returncode, 64)
    expect("--help", run("--help").returncode, 0)
    expect("--version", run("--version").stdout, b"shardgate 0.1.0\n")
    expect("unknown command", run("frobnicate").returncode, 64)
    for cmd in ("dispatch", "ring", "lookup", "plan", "serve", "journal", "journal verify",
                "journal archive", "db", "db init", "db migrate", "db status"):
        p = run(*cmd.split(), "--help")  # every command and subcommand, as its man page says
        first = cmd.split()[0].encode()
        expect(cmd + " --help", (p.returncode, p.stdout.startswith(b"usage: shardgate " + first),
                                 p.stderr), (0, True, b""))
    expect("unknown option", run("ring", "--bogus").returncode, 64)
    expect("missing --batch", run("dispatch", "--conf", CONF, "--shards", SHARDS).returncode, 64)
    p = run("dispatch", "--shards", SHARDS, "--batch", BATCH)
    expect("no contract", (p.returncode, p.stderr),
           (3, b"contract: no contract file: pass --conf FILE or set SHARDGATE_CONF\n"))
    p = run("dispatch", "--conf", CONF, "--shards", SHARDS, "--batch", "/nonexistent.json")
    expect("missing batch", (p.returncode, p.stderr),
           (2, b"batch: /nonexistent.json: cannot read: No such file or directory\n"))


def test_bad_options():
    """An option the command refuses is named, with the nearest of its own options when one is
    within two edits; an operand it does not take is named; each is exit 64 before anything is
    read (docs/tools.md §1)."""
    d = ["--conf", CONF, "--shards", SHARDS, "--batch", BATCH]
    cases = [
        (["serve", "--bogus"], "unknown option --bogus"),
        (["serve", "--stat-dir", "x"], "unknown option --stat-dir (did you mean --state-dir?)"),
        (["serve", "--conf"], "--conf needs a value"),
        (["serve", "--metrics-open=1"], "--metrics-open takes no value"),
        (["serve", "--conf", CONF, "--shards", SHARDS, "--state-dir", TMP, "extra"],
         'unexpected argument "extra"'),
        (["dispatch", "--confx", CONF], "unknown option --confx (did you mean --conf?)"),
        (["dispatch", "--points"] + d, "--points is not an option of `shardgate dispatch`"),
        (["dispatch", "--pionts"], "unknown option --pionts"),  # --points is not dispatch's
        (["dispatch"] + d + ["stray"], 'unexpected argument "stray"'),
        (["ring", "-x"], "unknown option -x"),
        (["ring", "--conf", CONF, "--shards", SHARDS, "stray"], 'unexpected argument "stray"'),
        (["plan", "--too", "x"], "unknown option --too (did you mean --to?)"),
        (["journal", "verify", "--dir", "x"], "--dir is an option of `shardgate journal archive`"),
        (["journal", "archive", "--plian"], "unknown option --plian (did you mean --plain?)"),
    ]
    for args, said in cases:
        p = run(*args)
        expect(" ".join(args[:2]), (p.returncode, p.stdout, p.stderr.split(b"\n")[0]),
               (64, b"", b"shardgate: " + said.encode()))


for test in (test_golden, test_capacity_report, test_capacity_reject, test_no_online_shard,
             test_ring_and_lookup, test_usage, test_bad_options):
    test()
print("%d passed, %d failed" % (results["passed"], results["failed"]))
sys.exit(1 if results["failed"] else 0)
