#!/usr/bin/env python3
"""health_errors: unusable contract or shards file -> exit 3 with the exact message and nothing
on stdout; usage errors -> 64; a missing receipt -> 2 ("cannot judge" is not healthy)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Failures, run_tool, parse_line, tmpdir, write, CONF, SHARDS, GOLDEN)  # noqa: E402

BIN = sys.argv[1]
F = Failures()
T = tmpdir()


def check(conf, shards, receipt=GOLDEN, env=None):
    return run_tool(BIN, ["check", "--conf", conf, "--shards", shards, "--receipt", receipt], env)


def expect3(name, conf, shards, message, env=None):
    rc, out, err = check(conf, shards, env=env)
    F.check(rc == 3 and out == "" and err == message + "\n", "%s -> exit 3 %r" % (name, message),
            "rc=%d out=%r err=%r" % (rc, out, err))


GOOD = ["# contract", "DISPATCH_HASH_RING=ketama", "DISPATCH_VNODES=160", "DISPATCH_RING_HASH=sha1",
        "DISPATCH_CAPACITY_POLICY=report"]


def conf(name, lines):
    return write(os.path.join(T, name + ".env"), "\n".join(lines) + "\n")


expect3("conf nowhere", "/nonexistent/dispatch.env", SHARDS,
        "contract: /nonexistent/dispatch.env: cannot open: No such file or directory")
p = conf("missing-key", GOOD[:4])
expect3("missing key", p, SHARDS, "contract: %s:4: missing required key DISPATCH_CAPACITY_POLICY" % p)
p = conf("no-vnodes", [GOOD[0], GOOD[1], GOOD[3], GOOD[4]])
expect3("missing VNODES (no default)", p, SHARDS,
        "contract: %s:4: missing required key DISPATCH_VNODES" % p)
p = conf("dup-key", GOOD + ["DISPATCH_VNODES=160"])
expect3("duplicate key", p, SHARDS, "contract: %s:6: duplicate key DISPATCH_VNODES (first on line 3)" % p)
p = conf("unknown-key", GOOD + ["DISPATCH_TIMEOUT=3"])
expect3("unknown key", p, SHARDS, "contract: %s:6: unknown key DISPATCH_TIMEOUT" % p)
p = conf("vnodes-0", [GOOD[0], GOOD[1], "DISPATCH_VNODES=0", GOOD[3], GOOD[4]])
expect3("vnodes 0", p, SHARDS, "contract: %s:3: DISPATCH_VNODES: 0 is out of range 1..4096" % p)
p = conf("vnodes-4097", [GOOD[0], GOOD[1], "DISPATCH_VNODES=4097", GOOD[3], GOOD[4]])
expect3("vnodes 4097", p, SHARDS, "contract: %s:3: DISPATCH_VNODES: 4097 is out of range 1..4096" % p)
p = conf("vnodes-text", [GOOD[0], GOOD[1], "DISPATCH_VNODES=16O", GOOD[3], GOOD[4]])
expect3("vnodes not integer", p, SHARDS, "contract: %s:3: DISPATCH_VNODES: not an integer: '16O'" % p)
p = conf("vnodes-empty", [GOOD[0], GOOD[1], "DISPATCH_VNODES=", GOOD[3], GOOD[4]])
expect3("vnodes empty", p, SHARDS, "contract: %s:3: DISPATCH_VNODES: empty value" % p)
p = conf("quotes", [GOOD[0], GOOD[1], GOOD[2], 'DISPATCH_RING_HASH="sha1"', GOOD[4]])
expect3("quotes", p, SHARDS, "contract: %s:4: DISPATCH_RING_HASH: quotes are not allowed" % p)
p = conf("export", [GOOD[0], "export DISPATCH_HASH_RING=ketama"] + GOOD[2:])
expect3("export", p, SHARDS, "contract: %s:2: 'export' is not allowed" % p)
p = conf("spaces", [GOOD[0], GOOD[1], "DISPATCH_VNODES = 160"] + GOOD[3:])
expect3("spaces around =", p, SHARDS, "contract: %s:3: no spaces allowed around '=' or in the key" % p)
p = conf("hash", [GOOD[0], GOOD[1], GOOD[2], "DISPATCH_RING_HASH=crc32", GOOD[4]])
expect3("bad hash", p, SHARDS, "contract: %s:4: DISPATCH_RING_HASH: must be sha1 or md5, got 'crc32'" % p)
p = conf("ring", [GOOD[0], "DISPATCH_HASH_RING=modula"] + GOOD[2:])
expect3("bad ring", p, SHARDS,
        "contract: %s:2: DISPATCH_HASH_RING: must be ketama, maglev or jump, got 'modula'" % p)
# A Maglev contract (docs/contract.md §1, §11): its own key, not the other's, and no spill.
MAGLEV = [GOOD[0], "DISPATCH_HASH_RING=maglev", "DISPATCH_MAGLEV_TABLE=13"] + GOOD[3:]
p = conf("maglev-vnodes", MAGLEV + ["DISPATCH_VNODES=160"])
expect3("vnodes under maglev", p, SHARDS,
        "contract: %s:6: DISPATCH_VNODES: not a key of DISPATCH_HASH_RING=maglev" % p)
p = conf("maglev-no-table", MAGLEV[:2] + MAGLEV[3:])
expect3("maglev without a table", p, SHARDS,
        "contract: %s:4: missing required key DISPATCH_MAGLEV_TABLE" % p)
p = conf("maglev-not-prime", MAGLEV[:2] + ["DISPATCH_MAGLEV_TABLE=65536"] + MAGLEV[3:])
expect3("table not a prime", p, SHARDS,
        "contract: %s:3: DISPATCH_MAGLEV_TABLE: must be a prime 2..16777213, got '65536'" % p)
p = conf("maglev-spill", MAGLEV[:4] + ["DISPATCH_CAPACITY_POLICY=spill"])
expect3("spill under maglev", p, SHARDS,
        "contract: %s:5: DISPATCH_CAPACITY_POLICY: spill needs ketama" % p)
# A jump contract (docs/contract.md §1, §10): its slots, no other ring's key (the first in key
# order named), no spill; R2 counts 160 points a unit of weight.
JUMP = [GOOD[0], "DISPATCH_HASH_RING=jump", "DISPATCH_JUMP_SLOTS=1024"] + GOOD[3:]
p = conf("jump-foreign", JUMP + ["DISPATCH_MAGLEV_TABLE=13", "DISPATCH_VNODES=160"])
expect3("vnodes and a table under jump", p, SHARDS,
        "contract: %s:7: DISPATCH_VNODES: not a key of DISPATCH_HASH_RING=jump" % p)
p = conf("jump-no-slots", JUMP[:2] + JUMP[3:])
expect3("jump without slots", p, SHARDS,
        "contract: %s:4: missing required key DISPATCH_JUMP_SLOTS" % p)
p = conf("jump-slots-big", JUMP[:2] + ["DISPATCH_JUMP_SLOTS=16777217"] + JUMP[3:])
expect3("slots past 2^24", p, SHARDS,
        "contract: %s:3: DISPATCH_JUMP_SLOTS: 16777217 is out of range 1..16777216" % p)
p = conf("jump-slots-zero", JUMP[:2] + ["DISPATCH_JUMP_SLOTS=01"] + JUMP[3:])
expect3("slots with a leading zero", p, SHARDS,
        "contract: %s:3: DISPATCH_JUMP_SLOTS: not an integer: '01'" % p)
p = conf("jump-spill", JUMP[:4] + ["DISPATCH_CAPACITY_POLICY=spill"])
expect3("spill under jump", p, SHARDS,
        "contract: %s:5: DISPATCH_CAPACITY_POLICY: spill needs ketama" % p)
p = conf("maglev-slots", MAGLEV + ["DISPATCH_JUMP_SLOTS=16"])
expect3("slots under maglev", p, SHARDS,
        "contract: %s:6: DISPATCH_JUMP_SLOTS: not a key of DISPATCH_HASH_RING=maglev" % p)
heavy = write(os.path.join(T, "heavy.json"), json.dumps({"shards": [
    {"id": "s%03d" % i, "state": "online", "capacity": 1, "weight": 1000} for i in range(110)]}))
expect3("R2 under jump", conf("jump", JUMP), heavy,
        "shards: %s: shards[104].weight: ring exceeds 16777216 points" % heavy)
p = conf("policy", GOOD[:4] + ["DISPATCH_CAPACITY_POLICY=drop"])
expect3("bad policy", p, SHARDS,
        "contract: %s:5: DISPATCH_CAPACITY_POLICY: must be report, reject or spill, got 'drop'" % p)
p = conf("no-eq", GOOD + ["DISPATCH_VNODES"])
expect3("no =", p, SHARDS, "contract: %s:6: expected KEY=VALUE" % p)
p = conf("empty", [])
expect3("empty contract", p, SHARDS, "contract: %s:1: missing required key DISPATCH_HASH_RING" % p)

p = write(os.path.join(T, "crlf.env"), "\r\n".join(GOOD) + "\r\n")
expect3("CRLF line endings", p, SHARDS,
        "contract: %s:2: whitespace at the start or end of a line" % p)
p = conf("blank-spaces", GOOD[:2] + ["   "] + GOOD[2:])
expect3("a line of spaces", p, SHARDS,
        "contract: %s:3: whitespace at the start or end of a line" % p)
p = conf("trailing-space", GOOD[:4] + ["DISPATCH_CAPACITY_POLICY=report "])
expect3("trailing space", p, SHARDS,
        "contract: %s:5: whitespace at the start or end of a line" % p)

# no --conf: SHARDGATE_CONF names it; neither -> exit 3
rc, out, err = run_tool(BIN, ["check", "--shards", SHARDS, "--receipt", GOLDEN])
F.check(rc == 3 and out == "", "no --conf and no SHARDGATE_CONF -> exit 3", err)
rc, out, err = run_tool(BIN, ["check", "--shards", SHARDS, "--receipt", GOLDEN], {"SHARDGATE_CONF": CONF})
F.check(rc == 0, "SHARDGATE_CONF names the contract", out + err)


def shards(name, doc):
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return write(os.path.join(T, name + ".json"), text)


def sh(**kw):
    base = [{"id": "shard-a", "state": "online", "capacity": 20},
            {"id": "shard-b", "state": "online", "capacity": 20},
            {"id": "shard-c", "state": "online", "capacity": 20}]
    for k, v in kw.items():
        i, field = k.split("_", 1)
        if v is None:
            del base[int(i[1:])][field]
        else:
            base[int(i[1:])][field] = v
    return {"shards": base}


cases = [
    ("bad-state", sh(s2_state="up"), "shards[2].state: must be one of online, draining, offline"),
    ("state-case", sh(s2_state="Online"), "shards[2].state: must be one of online, draining, offline"),
    ("no-state", sh(s1_state=None), "shards[1].state: missing"),
    ("extra-field", sh(s0_zone="eu"), "shards[0].zone: unknown field"),
    ("dup-id", sh(s2_id="shard-a"), "shards[2].id: duplicate id shard-a (also shards[0])"),
    ("bad-id", sh(s1_id="shard b"), "shards[1].id: must be 1..64 bytes of [A-Za-z0-9._:-]"),
    ("long-id", sh(s1_id="x" * 65), "shards[1].id: must be 1..64 bytes of [A-Za-z0-9._:-]"),
    ("weight-0", sh(s0_weight=0), "shards[0].weight: must be an integer 1..1000"),
    ("weight-1001", sh(s0_weight=1001), "shards[0].weight: must be an integer 1..1000"),
    ("weight-real", sh(s0_weight=1.0), "shards[0].weight: must be an integer 1..1000"),
    ("capacity-neg", sh(s1_capacity=-1), "shards[1].capacity: must be an integer 0..9007199254740991"),
    ("capacity-big", sh(s1_capacity=2**53), "shards[1].capacity: must be an integer 0..9007199254740991"),
    ("capacity-str", sh(s1_capacity="20"), "shards[1].capacity: must be an integer 0..9007199254740991"),
    ("no-capacity", sh(s1_capacity=None), "shards[1].capacity: missing"),
    ("top-array", [], '$: must be an object with exactly the key "shards"'),
    ("top-extra", {"shards": [], "version": 1}, '$: must be an object with exactly the key "shards"'),
    ("shards-object", {"shards": {}}, "shards: must be an array"),
    ("dup-key", '{"shards": [], "shards": []}',
     "$: invalid JSON at line 1 column 23: duplicate object key near '\"shards\"'"),
]
for name, doc, what in cases:
    p = shards(name, doc)
    expect3("shards " + name, CONF, p, "shards: %s: %s" % (p, what))
expect3("shards nowhere", CONF, "/nonexistent/shards.json",
        "shards: /nonexistent/shards.json: $: cannot open: No such file or directory")

# --- usage ------------------------------------------------------------------------------------
for name, args in [("no args", []), ("unknown command", ["verify"]),
                   ("unknown option", ["check", "--conf", CONF, "--shards", SHARDS, "--receipt",
                                       GOLDEN, "--fast"]),
                   ("both inputs", ["check", "--conf", CONF, "--shards", SHARDS, "--receipt",
                                    GOLDEN, "--journal", GOLDEN]),
                   ("no input", ["check", "--conf", CONF, "--shards", SHARDS]),
                   ("no shards", ["check", "--conf", CONF, "--receipt", GOLDEN]),
                   ("missing value", ["check", "--conf"]),
                   ("serve without journal", ["serve", "--conf", CONF, "--shards", SHARDS])]:
    rc, out, err = run_tool(BIN, args)
    F.check(rc == 64 and "usage:" in err, "usage: %s -> 64" % name, "rc=%d err=%r" % (rc, err))
rc, out, err = run_tool(BIN, ["--help"])
F.check(rc == 0 and out.startswith("usage: shardgate-health check"), "--help -> 0", out)
rc, out, err = run_tool(BIN, ["check", "--help"])
F.check(rc == 0 and "usage:" in out, "check --help -> 0", out)

# --- cannot judge -------------------------------------------------------------------------------
missing = os.path.join(T, "no-such-receipt.json")
rc, out, err = check(CONF, SHARDS, receipt=missing)
F.check(rc == 2 and parse_line(out) == {"status": "fail", "checks": 0, "receipts": 0, "issues": [
    "input: %s: cannot open: No such file or directory" % missing, "no checks ran"]},
    "missing receipt -> exit 2", "rc=%d out=%r" % (rc, out))
p = write(os.path.join(T, "not-json.json"), "{not json")
rc, out, err = check(CONF, SHARDS, receipt=p)
doc = parse_line(out)
F.check(rc == 2 and doc is not None and doc["issues"][0].startswith("schema: %s: not JSON:" % p),
        "unparseable receipt -> exit 2", out)
p = write(os.path.join(T, "dupkey.json"), '{"ok":true,"ok":true}')
rc, out, err = check(CONF, SHARDS, receipt=p)
F.check(rc == 2 and "duplicate object key" in out, "receipt with a duplicate key -> exit 2", out)

F.exit()
