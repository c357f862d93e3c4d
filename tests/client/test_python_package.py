#!/usr/bin/env python3
"""The Python package shardgate as a user gets it (docs/tools.md §14): installed with pip into a
fresh venv, offline and as the README says (`python3 -m venv VENV && VENV/bin/pip install
./client`, the tree's own build backend, nothing from an index), with Debian's python3 and
with the first python3 on PATH, straight from the checkout, which it leaves as it was; imported
from the venv and not from the source tree, its modules agreeing with `shardgate dispatch` and
`shardgate plan` byte for byte on the worked example and on random memberships and batches,
and its three console scripts running against a real gateway.

usage: test_python_package.py SHARDGATE_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
"""
import hashlib
import inspect
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "health"))
import ketama  # noqa: E402
import sgtest  # noqa: E402
from sgtest import Server, case, eq, main, ok, read, run, run_gateway, src, tmpdir, write  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-venv
MEMBERSHIPS, CHANGES = 30, 300
_venv = {}


def tree_files(top):
    """Every path under TOP, relative: what an install must leave as it was."""
    return sorted(os.path.relpath(os.path.join(d, n), top)
                  for d, dirs, files in os.walk(top) for n in dirs + files)


def install(python):
    """A fresh venv of PYTHON (no system site-packages) with the package installed the README's
    way from the checkout's client/, offline; the checkout's client/ is left as it was."""
    env_dir = os.path.join(tmpdir(), "venv")
    before = tree_files(src("client"))
    r = run([python, "-m", "venv", env_dir], timeout=120)
    eq(r.returncode, 0, "%s -m venv: %s" % (python, r.stderr))
    r = run([os.path.join(env_dir, "bin", "pip"), "install", "--no-index", "--no-cache-dir",
             src("client")], timeout=300, cwd=tmpdir())
    eq(r.returncode, 0, "%s: pip install ./client: %s%s" % (python, r.stdout, r.stderr))
    eq(tree_files(src("client")), before, "%s: the install wrote nothing into client/" % python)
    return env_dir


def venv():
    """The venv of Debian's python3 with the package installed (install())."""
    if not _venv:
        _venv["dir"] = install(SYSTEM_PYTHON)
    return _venv["dir"]


def in_venv(code, *args, cwd=None):
    """Runs Python code with the venv's interpreter, outside the source tree."""
    return run([os.path.join(venv(), "bin", "python"), "-c", code] + list(args),
               cwd=cwd or tmpdir(), timeout=300)


def script(name, *args, **kw):
    return run([os.path.join(venv(), "bin", name)] + list(args), cwd=tmpdir(), **kw)


@case("python_package")
def installed_into_the_venv_with_its_version():
    r = in_venv("import shardgate, shardgate.ring, shardgate.receipt, shardgate.verify;"
                "print(shardgate.__file__); print(shardgate.__version__)")
    eq(r.returncode, 0, "import: %s" % r.stderr)
    path, version = r.stdout.splitlines()
    ok(path.startswith(os.path.join(venv(), "lib")) and "site-packages" in path,
       "imported from the venv, not the checkout: %s" % path)
    cmake = re.search(r"project\(shardgate VERSION ([0-9.]+)", read(src("CMakeLists.txt")).decode())
    pyproject = re.search(r'(?m)^version = "([0-9.]+)"', read(src("client", "pyproject.toml")).decode())
    eq((version, pyproject.group(1)), (cmake.group(1), cmake.group(1)),
       "the package's version is the project's")
    r = in_venv("import importlib.resources as r, shardgate;"
                "print(r.files(shardgate).joinpath('py.typed').is_file())")
    eq(r.stdout, "True\n", "py.typed is installed (PEP 561)")


@case("python_package")
def installs_with_the_python3_on_path_too():
    """Not only Debian's interpreter: the first python3 on PATH (here another build of
    CPython, when the machine has one) installs it the same way, and its commands run."""
    python = shutil.which("python3")
    env_dir = install(python)
    r = run([os.path.join(env_dir, "bin", "python"), "-c",
             "import shardgate, sys; print(shardgate.__version__, sys.prefix)"], cwd=tmpdir())
    eq((r.returncode, r.stdout), (0, "0.1.0 %s\n" % env_dir), "%s: import" % python)
    r = run([os.path.join(env_dir, "bin", "shardgate-probe"), "--conf", src("conf", "dispatch.env"),
             "--shards", src("input", "shards.json"), "--receipt",
             src("tests", "golden", "sample-0001.receipt.v2.json"), "--batch",
             src("input", "changes.json")], cwd=tmpdir())
    eq((r.returncode, r.stdout.splitlines()[-1]), (0, "RESULT: OK"),
       "%s: shardgate-probe on the worked example: %s" % (python, r.stderr))


@case("python_package")
def the_public_functions_are_typed_and_documented():
    """Every name in a module's __all__: a docstring, and every parameter and the return
    annotated with hints that resolve."""
    sys.path.insert(0, src("client"))
    import typing
    from shardgate import contract, journal, plan, receipt, ring, verify
    checked = 0
    for module in (contract, ring, receipt, plan, journal, verify):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and not issubclass(obj, Exception):
                funcs = [f.fget if isinstance(f, property) else f for f in vars(obj).values()
                         if inspect.isfunction(f) or isinstance(f, property)]
            elif inspect.isfunction(obj):
                funcs = [obj]
            else:
                continue
            for f in funcs:
                where = "%s.%s" % (module.__name__, f.__qualname__)
                ok(f.__doc__, "%s has a docstring" % where)
                hints = typing.get_type_hints(f)
                wanted = [p for p in inspect.signature(f).parameters if p != "self"] + ["return"]
                eq([p for p in wanted if p not in hints], [], "%s: unannotated" % where)
                checked += 1
    ok(checked >= 30, "%d public functions checked" % checked)


def dispatch_bytes(conf, shards, batch):
    return run_gateway("dispatch", "--conf", conf, "--shards", shards, "--batch", batch)


PLACE = """import sys
from shardgate.contract import canonical, load_contract, load_shards
from shardgate.receipt import expected_receipt, load_batch
for conf, shards, batch in zip(*[iter(sys.argv[1:])] * 3):
    batch_id, changes = load_batch(batch)
    receipt = expected_receipt(load_contract(conf), load_shards(shards), batch_id, changes)
    sys.stdout.write(canonical(receipt))
"""


@case("python_package")
def receipts_equal_dispatch_on_the_worked_example_and_random_batches():
    """shardgate.receipt's receipt for the worked example is the golden receipt v2 and
    `shardgate dispatch`'s bytes; on 30 random contracts and memberships (sha1 and md5, 1..300
    vnodes, report and spill) with 300 random changes each, the same bytes as dispatch."""
    files = [src("conf", "dispatch.env"), src("input", "shards.json"), src("input", "changes.json")]
    rng = sgtest.seeded_rng("python-package")
    d = tmpdir()
    for i in range(MEMBERSHIPS):
        conf = write(os.path.join(d, "c%d.env" % i), ketama.contract_text(ketama.contract(
            rng.choice(["sha1", "md5"]), rng.randint(1, 300), rng.choice(["report", "spill"]))))
        shards = [{"id": "s%d-%d" % (i, k),
                   "state": rng.choice(["online", "online", "draining", "offline"]),
                   "capacity": rng.randint(0, 20000), "weight": rng.randint(1, 4)}
                  for k in range(rng.randint(1, 25))]
        shards[0]["state"] = "online"
        changes = [{"id": "c%d" % k, "key": "%x:%d" % (rng.getrandbits(40), k),
                    "size": rng.randint(0, 100)} for k in range(CHANGES)]
        files += [conf, write(os.path.join(d, "s%d.json" % i), json.dumps({"shards": shards})),
                  write(os.path.join(d, "b%d.json" % i),
                        json.dumps({"batch_id": "py-%d" % i, "changes": changes}))]
    r = in_venv(PLACE, *files)
    eq(r.returncode, 0, "the package places: %s" % r.stderr)
    mine = r.stdout.splitlines(keepends=True)
    eq(len(mine), MEMBERSHIPS + 1, "one receipt per batch")
    eq(mine[0], read(src("tests", "golden", "sample-0001.receipt.v2.json")).decode(), "the golden receipt")
    for i in range(MEMBERSHIPS + 1):
        g = dispatch_bytes(*files[3 * i:3 * i + 3])
        ok(g.returncode in (0, 2) and g.stdout, "dispatch %d: %s" % (i, g.stderr))
        eq(mine[i], g.stdout, "batch %d: the receipt, byte for byte" % i)


@case("python_package")
def plans_equal_shardgate_plan():
    """Five random pairs: the probe's plan is shardgate plan's, byte for byte; the package's
    moves() are `plan --ranges`'s ranges, and owner_changed() is true for a key exactly when
    its hash lies in one (docs/contract.md §8)."""
    sys.path.insert(0, src("client"))
    from shardgate import plan as sg_plan, ring as sg_ring
    rng = sgtest.seeded_rng("python-package-plan")
    d = tmpdir()
    for i in range(5):
        a, b = ({"shards": [{"id": "p%d" % k, "state": rng.choice(["online", "offline"]),
                             "capacity": 10, "weight": rng.randint(1, 3)}
                            for k in range(rng.randint(2, 12))]} for _ in range(2))
        a["shards"][0]["state"] = b["shards"][0]["state"] = "online"
        fa = write(os.path.join(d, "a%d.json" % i), json.dumps(a))
        fb = write(os.path.join(d, "b%d.json" % i), json.dumps(b))
        args = ["--conf", src("conf", "dispatch.env"), "--shards", fa, "--to", fb]
        g = run_gateway("plan", *args)
        p = script("shardgate-probe", "plan", *args)
        eq((p.returncode, p.stdout), (0, g.stdout), "plan %d, byte for byte" % i)
        ok(g.returncode == 0 and '"moved_points":' in g.stdout, g.stderr)
        ranges = json.loads(run_gateway("plan", *args, "--ranges").stdout)["ranges"]
        ring_a, ring_b = (sg_ring.Ring("sha1", 160, x["shards"]) for x in (a, b))
        eq(sg_plan.moves(ring_a, ring_b), ranges, "moves %d: shardgate plan --ranges's" % i)
        for k in range(200):
            key = b"key-%d-%d" % (i, k)
            h = int.from_bytes(hashlib.sha1(key).digest()[:4], "little")
            inside = any(r["lo"] <= h < r["hi"] for r in ranges)
            eq(sg_plan.owner_changed(key, ring_a, ring_b), inside,
               "owner_changed %d %s: in a range" % (i, key))


@case("python_package")
def the_console_scripts_run_against_a_gateway():
    """shardgate-post-batch posts the worked example (the golden receipt v2 back),
    shardgate-probe verifies it (and fails a changed one with exit 1), shardgate-consume reads
    shard-a's assignments; usage errors are 64 and name the command."""
    d = tmpdir()
    with Server() as server:
        url = "http://127.0.0.1:%d" % server.port
        r = script("shardgate-post-batch", "--url", url + "/v1/batches", "--batch", src("input", "changes.json"))
        eq((r.returncode, r.stdout), (0, read(src("tests", "golden", "sample-0001.receipt.v2.json")).decode()),
           "post-batch: %s" % r.stderr)
        receipt = write(os.path.join(d, "receipt.json"), r.stdout)
        verify = ["--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
                  "--receipt", receipt, "--batch", src("input", "changes.json")]
        r = script("shardgate-probe", *verify)
        eq((r.returncode, r.stdout), (0, "RESULT: OK\n"), "probe: %s" % r.stderr)
        write(receipt, r"%s" % read(receipt).decode().replace("\"load\":8", "\"load\":9", 1))
        r = script("shardgate-probe", *verify)
        eq(r.returncode, 1, "probe of a changed receipt: %s" % r.stdout)
        ok(r.stdout.startswith("RESULT: BAD ("), r.stdout)
        r = script("shardgate-consume", "--url", url, "--shard", "shard-a", "--cursor-file",
                   os.path.join(d, "cursor.json"), "--exit-idle", "--wait-ms", "0")
        eq(r.returncode, 0, "consume: %s" % r.stderr)
        got = [json.loads(line) for line in r.stdout.splitlines()]
        golden = json.loads(read(src("tests", "golden", "sample-0001.receipt.v2.json")))
        want = sorted(p["id"] for p in golden["placements"] if p["shard"] == "shard-a")
        eq(sorted(a["id"] for a in got), want, "shard-a's assignments, each once")
    for name in ("shardgate-probe", "shardgate-post-batch", "shardgate-consume"):
        r = script(name, "--no-such-option")
        eq(r.returncode, 64, "%s with a bad option" % name)
        ok(r.stderr.startswith("usage: %s " % name), "%s: %s" % (name, r.stderr[:120]))


def worker(*args):
    """examples/python/worker.py run by the venv's interpreter: it imports the installed package."""
    return run([os.path.join(venv(), "bin", "python"), src("examples", "python", "worker.py")]
               + list(args), cwd=tmpdir(), timeout=120)


def follow(server, shard, cursor, *extra):
    return worker("--url", "http://127.0.0.1:%d" % server.port, "--shard", shard,
                  "--cursor-file", cursor, "--exit-idle", "--wait-ms", "0", *extra)


@case("python_package")
def the_example_worker_checks_each_assignment():
    """examples/python/worker.py on the worked example hands shard-c its four assignments;
    under spill, every shard gets exactly the receipt's placements on it, the spilled ones
    judged through the batch's receipt, and a spilled change offered to the shard that is
    neither its home nor where it spilled is refused; started past the epoch record, it reads
    the record from the journal."""
    d = tmpdir()
    with Server() as server:
        eq(server.post(json.loads(read(src("input", "changes.json")))).status, 200, "post")
        r = follow(server, "shard-c", os.path.join(d, "shard-c.cursor"))
        eq(r.returncode, 0, "worker: %s" % r.stderr)
        eq([json.loads(line)["id"] for line in r.stdout.splitlines()],
           ["ch-002", "ch-005", "ch-007", "ch-008"], "shard-c's assignments in order")
    conf = write(os.path.join(d, "spill.env"), ketama.contract_text(ketama.contract("sha1", 40, "spill")))
    shards = write(os.path.join(d, "spill.json"), json.dumps({"shards": [
        {"id": "a", "state": "online", "capacity": 10}, {"id": "b", "state": "online", "capacity": 10},
        {"id": "c", "state": "online", "capacity": 500}]}))
    with Server(conf=conf, shards=shards) as server:
        receipts = []
        for n in range(2):
            r = server.post({"batch_id": "spill-%d" % n, "changes": [
                {"id": "c%d" % k, "key": "key-%d-%d" % (n, k), "size": 3} for k in range(40)]})
            eq(r.status, 200, "post spill-%d" % n)
            receipts.append(r.json())
        spilled = [(i, p["id"], p["shard"]) for i, rec in enumerate(receipts)
                   for p in rec["placements"] if "home" in p]
        ok(spilled, "some changes spilled")
        for sid in ("a", "b", "c"):
            r = follow(server, sid, os.path.join(d, sid + ".cursor"))
            eq(r.returncode, 0, "worker %s: %s" % (sid, r.stderr))
            got = [(a["batch_id"], a["id"]) for a in map(json.loads, r.stdout.splitlines())]
            want = [("spill-%d" % i, p["id"]) for i, rec in enumerate(receipts)
                    for p in rec["placements"] if p["shard"] == sid]
            eq(got, want, "shard %s: the receipt's placements on it" % sid)
        feed = [json.loads(line) for line in server.get(
            "/v1/shards/c/assignments?after=0",
            headers={"Accept": "application/x-ndjson"}).body.decode().splitlines()]
        epoch = next(i for i in feed if i["type"] == "epoch")
        moved = next(i for i in feed if i["type"] == "assignment" and (
            int(i["batch_id"][-1]), i["id"], "c") in spilled)
        home = next(p["home"] for p in receipts[int(moved["batch_id"][-1])]["placements"]
                    if p["id"] == moved["id"])
        third = ({"a", "b"} - {home}).pop()
        r = in_venv(OFFER, src("examples", "python"), json.dumps(epoch), json.dumps(moved),
                    str(server.port), third)
        eq((r.returncode, r.stdout.strip()), (0, "refused: change %s of the batch is placed on "
           "['c'], not here (home %s)" % (moved["id"], home)),
           "a change spilled to c, offered to %s: the batch's receipt recomputed says c" % third)
        cursor = write(os.path.join(d, "late.cursor"),
                       '{"after":1,"seq":0,"done":[],"pending":null}\n')
        r = follow(server, "c", cursor)
        eq(r.returncode, 0, "worker past the epoch record: %s" % r.stderr)
        eq([a["batch_id"] for a in map(json.loads, r.stdout.splitlines())],
           ["spill-1"] * sum(p["shard"] == "c" for p in receipts[1]["placements"]),
           "only the second batch, judged with the epoch read from the journal")


OFFER = """import json, sys
sys.path.insert(0, sys.argv[1])
import worker
epoch, assignment = json.loads(sys.argv[2]), json.loads(sys.argv[3])
class Args:
    host, port, base, token, wait_ms, shard = "127.0.0.1", int(sys.argv[4]), "", None, 0, sys.argv[5]
checker = worker.Checker()
checker.learn(epoch)
try:
    checker.check(Args, assignment)
    print("accepted")
except worker.Refused as e:
    print("refused:", e)
"""

REFUSE = """import json, sys
sys.path.insert(0, sys.argv[1])
import worker
epoch, assignment = json.loads(sys.argv[2]), json.loads(sys.argv[3])
class Args:
    shard = "shard-a"
checker = worker.Checker()
checker.learn(epoch)
for what, item in (("another shard's key", assignment),
                   ("no epoch", dict(assignment, epoch=None))):
    try:
        checker.check(Args, item)
        print(what, "accepted")
    except worker.Refused as e:
        print(what, "refused:", e)
epoch["shards"][0]["capacity"] += 1
try:
    worker.Checker().learn(epoch)
    print("a changed record accepted")
except worker.Refused as e:
    print("a changed record refused:", str(e).split(" to ")[0])
"""


@case("python_package")
def the_example_worker_refuses_what_is_not_its_own():
    """shard-c's assignment offered to shard-a's worker is refused with the owner named; an
    assignment naming no epoch cannot be judged; an epoch record whose contents were changed
    does not hash to its id. Run as a worker, a refusal is exit 4 with nothing applied."""
    with Server() as server:
        eq(server.post(json.loads(read(src("input", "changes.json")))).status, 200, "post")
        feed = server.get("/v1/shards/shard-c/assignments?after=0", headers={
            "Accept": "application/x-ndjson"}).body.decode().splitlines()
    items = [json.loads(line) for line in feed]
    epoch = next(i for i in items if i["type"] == "epoch")
    assignment = next(i for i in items if i["type"] == "assignment")
    r = in_venv(REFUSE, src("examples", "python"), json.dumps(epoch), json.dumps(assignment))
    eq(r.returncode, 0, r.stderr)
    eq(r.stdout.splitlines(), [
        "another shard's key refused: key 'user:42' is placed on shard-c, not here",
        "no epoch refused: a version 1 receipt names no epoch: cannot judge",
        "a changed record refused: epoch record: its contents hash"], "the verdicts")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "source")))
