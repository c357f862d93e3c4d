#!/usr/bin/env python3
"""libshardgate as a user gets it (docs/tools.md §13): `cmake --install` into a temp prefix
(or, with SHARDGATE_INSTALLED=1, as the libshardgate1 and libshardgate-dev packages put it),
examples/c/lookup.c and a test driver (tests/library/place.c) built against it with
`pkg-config --cflags --libs shardgate`; only shardgate_* exported, the SONAME; and the library
places 100,000 random keys on 50 random memberships exactly as `shardgate dispatch` does
(receipts byte for byte), plans exactly as `shardgate plan`, and loads from memory as from
files.

usage: test_libshardgate.py SHARDGATE_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
"""
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "health"))
import ketama  # noqa: E402
import sgtest  # noqa: E402
from sgtest import case, eq, main, ok, read, run, run_gateway, src, tmpdir, write  # noqa: E402

MEMBERSHIPS, CHANGES = 50, 2000
# ops/tsan.sh builds the drivers with the library's -fsanitize=thread and its CC
CFLAGS = os.environ.get("SHARDGATE_LIBRARY_CFLAGS", "").split()
_installed = {}


def installed():
    """Where libshardgate is installed (its libdir and includedir, as pkg-config says), and the
    two programs built against it in a temp dir."""
    if _installed:
        return _installed
    env = dict(os.environ)
    if os.environ.get("SHARDGATE_INSTALLED") != "1":
        build = os.path.dirname(os.path.dirname(sgtest.BIN))
        prefix = tmpdir()
        r = run(["cmake", "--install", build, "--prefix", prefix])
        eq(r.returncode, 0, "cmake --install: %s" % r.stderr)
        env["PKG_CONFIG_PATH"] = os.path.join(prefix, "lib", "pkgconfig")
    flags = run(["pkg-config", "--cflags", "--libs", "shardgate"], env=env)
    eq(flags.returncode, 0, "pkg-config shardgate: %s" % flags.stderr)
    dirs = {v: run(["pkg-config", "--variable=" + v, "shardgate"], env=env).stdout.strip()
            for v in ("libdir", "includedir")}
    bindir = tmpdir()
    for name, source in (("lookup", src("examples", "c", "lookup.c")),
                         ("place", os.path.join(HERE, "place.c")),
                         ("nulls", os.path.join(HERE, "nulls.c"))):
        out = os.path.join(bindir, name)
        r = run([os.environ.get("CC", "cc"), "-std=c11", "-Wall", "-Wextra", "-Werror", source,
                 "-o", out, "-pthread"] + CFLAGS + flags.stdout.split(), env=env)
        eq(r.returncode, 0, "cc %s with pkg-config's flags: %s" % (name, r.stderr))
    _installed.update(bin=bindir, lib=dirs["libdir"], include=dirs["includedir"],
                      env=dict(os.environ, LD_LIBRARY_PATH=dirs["libdir"]),
                      flags=flags.stdout.split())
    return _installed


def tool(name, *args):
    i = installed()
    return run([os.path.join(i["bin"], name)] + list(args), env=i["env"])


@case("library")
def installed_with_soname_and_pkg_config():
    i = installed()
    lib = i["lib"]
    eq(os.readlink(os.path.join(lib, "libshardgate.so")), "libshardgate.so.1", "dev symlink")
    eq(os.readlink(os.path.join(lib, "libshardgate.so.1")), "libshardgate.so.1.0.0", "SONAME link")
    eq(read(os.path.join(i["include"], "shardgate.h")), read(src("lib", "shardgate.h")),
       "the header")
    r = run(["readelf", "-d", os.path.join(lib, "libshardgate.so.1.0.0")])
    eq(re.findall(r"Library soname: \[([^\]]+)\]", r.stdout), ["libshardgate.so.1"], "SONAME")
    eq(run(["pkg-config", "--modversion", "shardgate"], env=dict(
        os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))).stdout,
       project_version() + "\n", "pkg-config's version is the project's")
    ok("-lshardgate" in i["flags"] and any(f.startswith("-I") for f in i["flags"]), i["flags"])


def project_version():
    return re.search(r"project\(shardgate VERSION ([0-9.]+)",
                     read(src("CMakeLists.txt")).decode()).group(1)


@case("library")
def one_version_everywhere():
    """CMakeLists.txt's project() version is what every part says: shardgate --version,
    shardgate-health --version, shardgate_version() of the installed library (pkg-config's is
    checked above), the Python package's pyproject.toml."""
    v = project_version()
    if os.environ.get("SHARDGATE_INSTALLED") == "1":  # the packages: /usr/bin, side by side
        health = os.path.join(os.path.dirname(sgtest.BIN), "shardgate-health")
    else:
        health = os.path.join(os.path.dirname(os.path.dirname(sgtest.BIN)), "health",
                              "shardgate-health")
    eq((run([sgtest.BIN, "--version"]).stdout, run([health, "--version"]).stdout),
       ("shardgate %s\n" % v, "shardgate-health %s\n" % v), "the programs' --version")
    import ctypes
    lib = ctypes.CDLL(os.path.join(installed()["lib"], "libshardgate.so.1"))
    lib.shardgate_version.restype = ctypes.c_char_p
    eq(lib.shardgate_version().decode(), v, "shardgate_version() of the installed library")
    eq(re.search(r'(?m)^version = "([0-9.]+)"', read(src("client", "pyproject.toml")).decode())
       .group(1), v, "the Python package's version")


@case("library")
def runs_without_ld_library_path():
    """Built with pkg-config's flags, the example runs with no LD_LIBRARY_PATH: shardgate.pc
    carries an rpath to its libdir (none for the packages' /usr, the system's own path)."""
    i = installed()
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = run([os.path.join(i["bin"], "lookup"), src("conf", "dispatch.env"),
             src("input", "shards.json"), "order:1001"], env=env)
    eq((r.returncode, r.stderr), (0, ""), "lookup without LD_LIBRARY_PATH")
    ok("\norder:1001 shard-b hash=3001802920 point=3046879832 vnode=15 ring\n" in r.stdout,
       "order:1001 where `shardgate lookup` puts it: %r" % r.stdout)


@case("library")
def only_the_api_is_exported():
    i = installed()
    r = run(["nm", "-D", "--defined-only", os.path.join(i["lib"], "libshardgate.so.1")])
    eq(r.returncode, 0, "nm -D")
    names = {line.split()[-1].split("@")[0] for line in r.stdout.splitlines()}
    names.discard("SHARDGATE_1")  # the version node of shardgate.map
    declared = set(re.findall(r"\b(shardgate_[a-z_]+)\(", read(src("lib", "shardgate.h")).decode()))
    eq(sorted(names), sorted(declared), "the exported symbols are the header's functions")


@case("library")
def the_example_places_as_the_gateway():
    keys = ["user:42", "order:1001", "cart:9", "", "k" * 300] + ["key-%d" % i for i in range(200)]
    keys.remove("")
    r = tool("lookup", src("conf", "dispatch.env"), src("input", "shards.json"), *keys)
    eq(r.returncode, 0, "lookup: %s" % r.stderr)
    lines = r.stdout.splitlines()
    eq(lines[0], "epoch f60a5fb19effc4cfa95aed0af45997f72905f6ae ring "
                 "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc", "epoch and ring")
    g = run_gateway("lookup", "--conf", src("conf", "dispatch.env"), "--shards",
                    src("input", "shards.json"), *keys)
    eq(g.returncode, 0, "shardgate lookup")
    want = []
    for line in g.stdout.splitlines():
        p = json.loads(line)
        want.append("%s %s hash=%d point=%d vnode=%d %s" % (p["key"], p["shard"], p["hash"],
                                                             p["point"], p["vnode"], p["reason"]))
    eq(lines[1:], want, "every key where shardgate lookup places it")


def random_membership(rng, i):
    shards = []
    for k in range(rng.randint(1, 40)):
        shards.append({"id": "s%d-%d" % (i, k),
                       "state": rng.choice(["online", "online", "online", "draining", "offline"]),
                       "capacity": rng.randint(0, 400000), "weight": rng.randint(1, 5)})
    shards[0]["state"] = "online"
    return {"shards": shards}


def random_batch(rng, i):
    return {"batch_id": "lib-%d" % i,
            "changes": [{"id": "c%d" % k, "key": "%x:%d" % (rng.getrandbits(48), k),
                         "size": rng.randint(0, 100)} for k in range(CHANGES)]}


@case("library")
def receipts_equal_dispatch_on_random_memberships():
    """50 random memberships and contracts (sha1 and md5, 1..300 vnodes, report, spill and
    reject; every fifth a Maglev or jump table), 2,000 random keys each: the receipt bytes of shardgate_place equal `shardgate
    dispatch`'s, and what dispatch refuses the library refuses."""
    rng = sgtest.seeded_rng("libshardgate")
    d = tmpdir()
    keys = refused = 0
    for i in range(MEMBERSHIPS):
        conf = write(os.path.join(d, "c%d.env" % i), ketama.contract_text(ketama.contract(
            rng.choice(["sha1", "md5"]), rng.randint(1, 300),
            rng.choice(["report", "spill", "reject"]))))
        if i % 5 == 4:  # a Maglev or jump table (docs/contract.md §11, §10)
            jump = i % 10 == 9
            write(conf, "DISPATCH_HASH_RING=%s\n%s=%d\n"
                  "DISPATCH_RING_HASH=%s\nDISPATCH_CAPACITY_POLICY=%s\n"
                  % ("jump" if jump else "maglev",
                     "DISPATCH_JUMP_SLOTS" if jump else "DISPATCH_MAGLEV_TABLE",
                     rng.choice([1, 1000, 65536] if jump else [251, 65537]),
                     rng.choice(["sha1", "md5"]), rng.choice(["report", "reject"])))
        shards = write(os.path.join(d, "s%d.json" % i), json.dumps(random_membership(rng, i)))
        batch = write(os.path.join(d, "b%d.json" % i), json.dumps(random_batch(rng, i)))
        g = run_gateway("dispatch", "--conf", conf, "--shards", shards, "--batch", batch)
        p = tool("place", conf, shards, batch)
        if g.returncode == 2 and not g.stdout:  # refused under reject: no receipt either way
            ok(g.stderr.endswith("dispatch: refused under DISPATCH_CAPACITY_POLICY=reject\n"),
               "dispatch %d: %s" % (i, g.stderr))
            eq((p.returncode, p.stdout), (3, ""), "place %d: SHARDGATE_REFUSED" % i)
            refused += CHANGES
            continue
        ok(g.returncode in (0, 2) and g.stdout, "dispatch %d: %s" % (i, g.stderr))
        eq((p.returncode, p.stderr), (0, ""), "place %d" % i)
        eq(p.stdout, g.stdout, "membership %d: the receipt, byte for byte" % i)
        keys += CHANGES
    eq(keys + refused, 100000, "keys placed")
    ok(keys >= 80000, "receipts compared for %d keys (%d refused under reject)" % (keys, refused))


@case("library")
def refusals_and_errors_are_statuses_with_messages():
    d = tmpdir()
    conf = write(os.path.join(d, "reject.env"), ketama.contract_text(
        ketama.contract("sha1", 160, "reject")))
    p = tool("place", conf, src("input", "shards.json"), src("input", "changes.json"))
    eq(p.returncode, 0, "the worked example fits under reject: %s" % p.stderr)
    small = write(os.path.join(d, "small.json"), json.dumps(
        {"shards": [{"id": "a", "state": "online", "capacity": 1}]}))
    p = tool("place", conf, small, src("input", "changes.json"))
    eq((p.returncode, p.stdout), (3, ""), "SHARDGATE_REFUSED, no receipt")
    ok(p.stderr.startswith("status 3: over_capacity: "), p.stderr)
    spill = write(os.path.join(d, "spill.env"), ketama.contract_text(
        ketama.contract("sha1", 160, "spill")))
    g = run_gateway("dispatch", "--conf", spill, "--shards", small, "--batch",
                    src("input", "changes.json"))
    p = tool("place", spill, small, src("input", "changes.json"))
    eq((g.returncode, p.returncode), (2, 0), "no room anywhere under spill: a receipt, not ok")
    ok('"ok":false' in p.stdout, p.stdout[-80:])
    eq(p.stdout, g.stdout, "the receipt of a batch that did not fit, byte for byte")
    p = tool("place", src("conf", "dispatch.env"), os.path.join(d, "missing.json"),
             src("input", "changes.json"))
    eq(p.returncode, 4, "SHARDGATE_IO for a file that is not there: %s" % p.stderr)
    ok("missing.json" in p.stderr, "the message names the file: %s" % p.stderr)
    bad = write(os.path.join(d, "bad.json"), '{"shards":[{"id":"a","state":"up","capacity":1}]}')
    p = tool("place", src("conf", "dispatch.env"), bad, src("input", "changes.json"))
    eq(p.returncode, 1, "SHARDGATE_INVALID")
    ok("shards[0].state" in p.stderr, "the JSON path: %s" % p.stderr)
    batch = write(os.path.join(d, "batch.json"), '{"batch_id":"x","changes":[{"id":"1","key":"k"}]}')
    p = tool("place", src("conf", "dispatch.env"), src("input", "shards.json"), batch)
    eq(p.returncode, 1, "an invalid batch")
    ok("changes[0].size" in p.stderr, "the batch's JSON path: %s" % p.stderr)


@case("library")
def a_null_argument_is_an_error_never_a_crash():
    """lib/shardgate.h: each pointer argument NULL in turn is SHARDGATE_INVALID (1) naming the
    function and the argument, never a crash; a NULL key of length 0 is a key."""
    r = tool("nulls", src("conf", "dispatch.env"), src("input", "shards.json"))
    eq((r.returncode, r.stderr), (0, ""), "the driver ran to its end")
    eq(r.stdout.splitlines(), [
        "load(NULL, shards): 1 shardgate_topology_load: contract_path is NULL",
        "load(contract, NULL): 1 shardgate_topology_load: shards_path is NULL",
        "load(out NULL): 1 shardgate_topology_load: out is NULL",
        "parse(NULL, shards): 1 shardgate_topology_parse: contract is NULL",
        "parse(contract, NULL): 1 shardgate_topology_parse: shards is NULL",
        "parse(out NULL): 1 shardgate_topology_parse: out is NULL",
        "parse(err NULL): 1 ",
        "ring_id(NULL): NULL",
        "epoch_id(NULL): NULL",
        "lookup(t NULL): 1 ",
        "lookup(key NULL, 1): 1 ",
        "lookup(key NULL, 0): 0 ",
        "lookup(out NULL): 1 ",
        "place(t NULL): 1 shardgate_place: t is NULL",
        "place(batch NULL): 1 shardgate_place: batch is NULL",
        "place(receipt NULL): 1 shardgate_place: receipt is NULL",
        "place(receipt_len NULL): 1 shardgate_place: receipt_len is NULL",
        "plan(from NULL): 1 shardgate_plan: from is NULL",
        "plan(to NULL): 1 shardgate_plan: to is NULL",
        "plan(plan NULL): 1 shardgate_plan: plan is NULL",
        "plan(plan_len NULL): 1 shardgate_plan: plan_len is NULL",
        "moves(from NULL): 1 shardgate_moves: from is NULL",
        "moves(moves_len NULL): 1 shardgate_moves: moves_len is NULL",
        "done"], "each call's status and message")


@case("library")
def threads_share_one_topology():
    """Eight threads place a 2,000-change batch and look up 1,000 keys on one topology, 20
    rounds each, and all get what one thread got (docs/tools.md §13: reads are thread-safe);
    under ops/tsan.sh with no report."""
    rng = sgtest.seeded_rng("libshardgate-threads")
    d = tmpdir()
    conf = write(os.path.join(d, "c.env"), ketama.contract_text(ketama.contract("sha1", 160, "spill")))
    shards = write(os.path.join(d, "s.json"), json.dumps(random_membership(rng, 0)))
    batch = write(os.path.join(d, "b.json"), json.dumps(random_batch(rng, 0)))
    p = tool("place", "--threads", "8", conf, shards, batch)
    eq((p.returncode, p.stderr), (0, ""), "eight threads")
    g = run_gateway("dispatch", "--conf", conf, "--shards", shards, "--batch", batch)
    eq(p.stdout, g.stdout, "the receipt the threads agreed on is dispatch's")


@case("library")
def plans_and_memory_loads_equal_the_files():
    rng = sgtest.seeded_rng("libshardgate-plan")
    d = tmpdir()
    for i in range(5):
        a = write(os.path.join(d, "a%d.json" % i), json.dumps(random_membership(rng, i)))
        b = write(os.path.join(d, "b%d.json" % i), json.dumps(random_membership(rng, i)))
        g = run_gateway("plan", "--conf", src("conf", "dispatch.env"), "--shards", a, "--to", b)
        p = tool("place", "--plan", src("conf", "dispatch.env"), a, b)
        eq((p.returncode, p.stdout), (g.returncode, g.stdout), "plan %d, byte for byte" % i)
        g = run_gateway("plan", "--conf", src("conf", "dispatch.env"), "--shards", a, "--to", b,
                        "--ranges")
        p = tool("place", "--moves", src("conf", "dispatch.env"), a, b)
        eq((p.returncode, p.stdout), (g.returncode, g.stdout), "moves %d, byte for byte" % i)
    p = tool("place", "--parse", src("conf", "dispatch.env"), src("input", "shards.json"))
    eq(p.stdout, "f60a5fb19effc4cfa95aed0af45997f72905f6ae "
                 "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc\n", "from memory: the same epoch")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "source")))
