#!/usr/bin/env python3
"""The probe as a black box: exit codes and exact output lines
(docs/contract.md §1, §2, §5, §6, docs/tools.md §2)."""

import contextlib
import io
import itertools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import Skip, case, client_package, eq, ok, run, src, tmpdir, write, main  # noqa: E402

CONTRACT = ("# test contract\nDISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=160\n"
            "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=report\n")
MAGLEV = ("# test contract\nDISPATCH_HASH_RING=maglev\nDISPATCH_MAGLEV_TABLE=13\n"
          "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=report\n")
JUMP = ("# test contract\nDISPATCH_HASH_RING=jump\nDISPATCH_JUMP_SLOTS=1024\n"
        "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=report\n")


def golden_text():
    with open(src("tests", "golden", "sample-0001.receipt.json"), encoding="utf-8") as f:
        return f.read()


def golden():
    return json.loads(golden_text())


EPOCH = "f60a5fb19effc4cfa95aed0af45997f72905f6ae"  # docs/contract.md §7, the worked example


def golden_v2_text(epoch=EPOCH):
    """The version-2 golden (docs/contract.md §5): the v1 bytes with version 2 and the epoch
    after batch_id."""
    text = golden_text()
    head = '{"receipt_version":1,"batch_id":"sample-0001",'
    ok(text.startswith(head), "the v1 golden starts with %r" % head)
    return ('{"receipt_version":2,"batch_id":"sample-0001","epoch":"%s",' % epoch
            + text[len(head):])


def canonical(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"


def probe(receipt=None, conf=None, shards=None, batch=None, extra=()):
    args = [sys.executable, src("client", "probe.py"),
            "--conf", conf or src("conf", "dispatch.env"),
            "--shards", shards or src("input", "shards.json"),
            "--receipt", receipt or src("tests", "golden", "sample-0001.receipt.json")]
    if batch:
        args += ["--batch", batch]
    return run(args + list(extra))


def receipt_file(obj_or_text):
    text = obj_or_text if isinstance(obj_or_text, str) else canonical(obj_or_text)
    return write(os.path.join(tmpdir(), "receipt.json"), text)


def expect_bad(result, lines, what):
    eq(result.returncode, 1, what + ": exit code (stderr %r)" % result.stderr)
    want = "RESULT: BAD (%d mismatches)\n" % len(lines) + "".join(l + "\n" for l in lines)
    eq(result.stdout, want, what + ": output")


def expect_ok(result, what):
    eq(result.returncode, 0, what + ": exit code (stdout %r stderr %r)"
       % (result.stdout, result.stderr))
    eq(result.stdout, "RESULT: OK\n", what + ": output")
    eq(result.stderr, "", what + ": stderr")


@case("probe_golden")
def golden_receipt_ok():
    expect_ok(probe(), "golden receipt with the shipped conf/ and input/")


@case("probe_golden")
def golden_receipt_with_batch_ok():
    expect_ok(probe(batch=src("input", "changes.json")), "golden receipt with --batch")


def _set(path, value):
    """A mutation that sets receipt[path...] = value."""
    def mutate(r):
        node = r
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
    return mutate


# (name, mutation of the golden receipt, the exact mismatch lines)
TAMPERS = [
    ("placement hash", _set(["placements", 2, "hash"], 2934343844),
     ["placements[2].hash: expected 2934343843 actual 2934343844"]),
    ("placement point", _set(["placements", 3, "point"], 1911314042),
     ["placements[3].point: expected 1911314043 actual 1911314042"]),
    ("placement vnode", _set(["placements", 4, "vnode"], 88),
     ["placements[4].vnode: expected 87 actual 88"]),
    ("placement shard", _set(["placements", 1, "shard"], "shard-a"),
     ["placements[1].shard: expected shard-c actual shard-a"]),
    ("placement on offline shard-d", _set(["placements", 0, "shard"], "shard-d"),
     ["placements[0].shard: expected shard-b actual shard-d"]),
    ("placement reason wrap->ring", _set(["placements", 4, "reason"], "ring"),
     ["placements[4].reason: expected wrap actual ring"]),
    ("placement reason ring->wrap", _set(["placements", 0, "reason"], "wrap"),
     ["placements[0].reason: expected ring actual wrap"]),
    ("shard load counted in changes", _set(["shards", "shard-a", "load"], 2),
     ["shards.shard-a.load: expected 8 actual 2"]),
    ("shard received", _set(["shards", "shard-c", "received"], 3),
     ["shards.shard-c.received: expected 4 actual 3"]),
    ("shard over_capacity", _set(["shards", "shard-b", "over_capacity"], True),
     ["shards.shard-b.over_capacity: expected false actual true"]),
    ("offline shard load", _set(["shards", "shard-d", "load"], 4),
     ["shards.shard-d.load: expected 0 actual 4"]),
    ("shard state", _set(["shards", "shard-e", "state"], "online"),
     ["shards.shard-e.state: expected draining actual online"]),
    ("total capacity over all shards", _set(["capacity"], 100),
     ["capacity: expected 60 actual 100"]),
    ("counts.changes", _set(["counts", "changes"], 7),
     ["counts.changes: expected 8 actual 7"]),
    ("counts.dispatched", _set(["counts", "dispatched"], 9),
     ["counts.dispatched: expected 8 actual 9"]),
    ("counts.over_capacity_shards", _set(["counts", "over_capacity_shards"], 1),
     ["counts.over_capacity_shards: expected 0 actual 1"]),
    ("ok", _set(["ok"], False), ["ok: expected true actual false"]),
    ("ok as a string", _set(["ok"], "true"), ['ok: expected true actual "true"']),
    ("load as a float", _set(["shards", "shard-a", "load"], 8.0),
     ["shards.shard-a.load: expected 8 actual 8.0"]),
    ("vnodes_total divided", _set(["ring", "vnodes_total"], 96),
     ["ring.vnodes_total: expected 480 actual 96"]),
    ("ring vnodes", _set(["ring", "vnodes"], 32), ["ring.vnodes: expected 160 actual 32"]),
    ("ring hash", _set(["ring", "hash"], "md5"), ["ring.hash: expected sha1 actual md5"]),
    ("ring id", _set(["ring", "id"], "ce0ad72e7a89a4843f1199a33e0c83fcba059cfd"),
     ["ring.id: expected ce0ad72e7a89a4843f1199a33e0c83fcba059cfc "
      "actual ce0ad72e7a89a4843f1199a33e0c83fcba059cfd"]),
    ("ring.online with offline shard-d",
     _set(["ring", "online"], ["shard-a", "shard-b", "shard-c", "shard-d"]),
     ['ring.online: expected ["shard-a","shard-b","shard-c"] '
      'actual ["shard-a","shard-b","shard-c","shard-d"]']),
    ("receipt_version 2 without its epoch", _set(["receipt_version"], 2),
     ["epoch: expected %s actual <missing>" % EPOCH]),
    ("receipt_version 3", _set(["receipt_version"], 3), ["receipt_version: expected 1 actual 3"]),
    ("extra field", _set(["note"], "hi"), ["note: expected <absent> actual hi"]),
]


@case("probe_tamper")
def tamper_matrix():
    for name, mutate, lines in TAMPERS:
        r = golden()
        mutate(r)
        expect_bad(probe(receipt_file(r)), lines, "tamper " + name)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@case("probe_wrong_types")
def wrong_types_are_mismatches_not_crashes():
    """Every node of the golden receipt replaced by every wrong JSON type: always exit 1.
    Runs the probe in-process (its main()) because there are a few thousand cases."""
    probe_mod = client_package().probe
    tmp = tmpdir()
    path = os.path.join(tmp, "receipt.json")
    base = ["--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
            "--receipt", path]
    checked = 0
    for where in list(_paths(golden()))[1:]:
        for value, batch in itertools.product(
                (None, True, -1, 1.5, "x", [1], {"a": 1}), (False, True)):
            argv = base + (["--batch", src("input", "changes.json")] if batch else [])
            if value == "x" and not batch and where[-1] in ("batch_id", "id"):
                continue  # a valid name; without the batch nothing says otherwise
            r = golden()
            node = r
            for p in where[:-1]:
                node = node[p]
            if json.dumps(node[where[-1]]) == json.dumps(value):
                continue
            node[where[-1]] = value
            write(path, canonical(r))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = probe_mod.main(argv)
            eq(code, 1, "%r = %r (batch %s): exit (stdout %r)"
               % (where, value, batch, out.getvalue()[:300]))
            ok(out.getvalue().startswith("RESULT: BAD ("),
               "%r = %r: %r" % (where, value, out.getvalue()))
            checked += 1
    ok(checked > 1000, "checked %d mutations" % checked)


@case("probe_tamper")
def tamper_consistent_move_to_offline_shard():
    """A tamper that keeps loads and counts consistent is still caught at the placement."""
    r = golden()
    r["placements"][0]["shard"] = "shard-d"
    r["shards"]["shard-d"].update(load=4, received=1)
    r["shards"]["shard-b"].update(load=2, received=1)
    expect_bad(probe(receipt_file(r)), [
        "placements[0].shard: expected shard-b actual shard-d",
        "shards.shard-b.load: expected 6 actual 2",
        "shards.shard-b.received: expected 2 actual 1",
        "shards.shard-d.load: expected 0 actual 4",
        "shards.shard-d.received: expected 0 actual 1",
    ], "consistent move to shard-d")


@case("probe_tamper")
def missing_fields():
    r = golden()
    del r["counts"]["dispatched"]
    del r["placements"][5]["vnode"]
    expect_bad(probe(receipt_file(r)), [
        "placements[5].vnode: expected 119 actual <missing>",
        "counts.dispatched: expected 8 actual <missing>",
    ], "missing fields")


@case("probe_tamper")
def tamper_against_batch():
    batch = src("input", "changes.json")
    r = golden()
    r["placements"][1]["key"] = "user:43"
    expect_bad(probe(receipt_file(r), batch=batch),
               ["placements[1].key: expected user:42 actual user:43"], "key changed")
    r = golden()
    r["placements"][6]["size"] = 1
    expect_bad(probe(receipt_file(r), batch=batch), [
        "placements[6].size: expected 6 actual 1",
    ], "size changed (loads as written still match the batch)")
    r = golden()
    r["batch_id"] = "sample-0002"
    expect_bad(probe(receipt_file(r), batch=batch),
               ["batch_id: expected sample-0001 actual sample-0002"], "batch_id changed")
    r = golden()
    r["placements"].pop()
    r["shards"]["shard-c"].update(load=9, received=3)
    r["counts"].update(changes=7, dispatched=7)
    expect_bad(probe(receipt_file(r), batch=batch), [
        "placements.length: expected 8 actual 7",
        'placements[7]: expected {"id":"ch-008","key":"user:7","size":1,"hash":27024618,'
        '"point":30688554,"vnode":141,"shard":"shard-c","reason":"ring"} actual <missing>',
        "shards.shard-c.load: expected 10 actual 9",
        "shards.shard-c.received: expected 4 actual 3",
        "counts.changes: expected 8 actual 7",
        "counts.dispatched: expected 8 actual 7",
    ], "a dropped placement, consistently recounted")
    r = golden()
    r["placements"][0], r["placements"][1] = r["placements"][1], r["placements"][0]
    res = probe(receipt_file(r), batch=batch)
    eq(res.returncode, 1, "swapped placements: exit")
    ok("placements[0].id: expected ch-001 actual ch-002\n" in res.stdout,
       "swapped placements: id line in %r" % res.stdout)


@case("probe_tamper")
def receipt_key_changed_without_batch():
    """Without --batch the key is taken from the receipt, so its placement must follow it."""
    r = golden()
    r["placements"][1]["key"] = "user:43"
    res = probe(receipt_file(r))
    eq(res.returncode, 1, "exit")
    ok(res.stdout.startswith("RESULT: BAD ("), res.stdout)
    ok("placements[1].hash: expected " in res.stdout, res.stdout)


@case("probe_tamper")
def unusable_placement_keeps_the_others_aligned():
    """A placement that is not an object is reported once; the ones after it are still
    compared with their own expected values, and it is never counted as dispatched."""
    r = golden()
    r["placements"][3] = 7
    expect_bad(probe(receipt_file(r)), [
        "placements[3]: expected a placement object actual 7",
        "shards.shard-a.load: expected 3 actual 8",
        "shards.shard-a.received: expected 1 actual 2",
        "counts.dispatched: expected 7 actual 8",
        "ok: expected false actual true",
    ], "non-object placement")
    r = golden()
    r["placements"][6]["key"] = "\ud800"  # a lone surrogate: not UTF-8, cannot be hashed
    res = probe(receipt_file(json.dumps(r, separators=(",", ":")) + "\n"))
    eq(res.returncode, 1, "lone surrogate: exit (stderr %r)" % res.stderr)
    ok('placements[6].key: expected a string of 1..1024 bytes actual "\\ud800"\n'
       in res.stdout, res.stdout)


@case("probe_tamper")
def duplicate_change_ids():
    r = golden()
    r["placements"][3]["id"] = "ch-001"
    expect_bad(probe(receipt_file(r)), ["placements[3].id: expected a unique id actual ch-001"],
               "duplicate id")


@case("probe_v2")
def v2_golden_ok():
    expect_ok(probe(receipt_file(golden_v2_text())), "v2 golden receipt")
    expect_ok(probe(receipt_file(golden_v2_text()), batch=src("input", "changes.json")),
              "v2 golden receipt with --batch")
    v2 = src("tests", "golden", "sample-0001.receipt.v2.json")
    if os.path.exists(v2):
        with open(v2, encoding="utf-8") as f:
            eq(f.read(), golden_v2_text(), "tests/golden/sample-0001.receipt.v2.json")
        expect_ok(probe(v2), "the v2 golden file")


@case("probe_v2")
def v2_wrong_epoch_is_bad():
    other = "0" * 40
    expect_bad(probe(receipt_file(golden_v2_text(other))),
               ["epoch: expected %s actual %s" % (EPOCH, other)], "a wrong epoch")


@case("probe_v2")
def v2_epoch_covers_capacity_and_state():
    """The ring is the same, the epoch is not: a capacity change of offline shard-d, and
    shard-e draining -> offline (docs/contract.md §7). The expected ids are those of
    `printf 'shardgate-epoch\n...' | sha1sum` over the bytes docs/contract.md §7 lists, edited."""
    tmp = tmpdir()
    with open(src("input", "shards.json"), encoding="utf-8") as f:
        doc = json.load(f)
    doc["shards"][3]["capacity"] = 21
    shards = write(os.path.join(tmp, "shards.json"), json.dumps(doc))
    expect_bad(probe(receipt_file(golden_v2_text()), shards=shards), [
        "epoch: expected 54ee55c8617db27aac4bc5030b8a7d9efa9fafc9 actual %s" % EPOCH,
        "shards.shard-d.capacity: expected 21 actual 20"], "capacity of shard-d")
    doc["shards"][3]["capacity"] = 20
    doc["shards"][4]["state"] = "offline"
    shards = write(os.path.join(tmp, "shards.json"), json.dumps(doc))
    expect_bad(probe(receipt_file(golden_v2_text()), shards=shards), [
        "epoch: expected c6714fa6cab573f23747d59b6ef36c949a33f31e actual %s" % EPOCH,
        "shards.shard-e.state: expected offline actual draining"], "shard-e offline")


@case("probe_v2")
def v1_with_an_epoch_key_is_bad():
    text = golden_v2_text().replace('"receipt_version":2', '"receipt_version":1')
    expect_bad(probe(receipt_file(text)), ["epoch: expected <absent> actual %s" % EPOCH],
               "v1 with an epoch")


@case("probe_v2")
def v2_epoch_out_of_order_is_bad():
    text = golden_v2_text().replace(
        '"batch_id":"sample-0001","epoch":"%s"' % EPOCH,
        '"epoch":"%s","batch_id":"sample-0001"' % EPOCH)
    expect_bad(probe(receipt_file(text)), [
        "<key order>: expected receipt_version,batch_id,epoch,ring,placements,shards,capacity,"
        "counts,ok actual receipt_version,epoch,batch_id,ring,placements,shards,capacity,"
        "counts,ok"], "epoch before batch_id")


@case("probe_bytes")
def bytes_and_key_order():
    text = golden_text()
    expect_bad(probe(receipt_file(text.replace('"ok":true', '"ok": true'))),
               ["bytes[1796]: expected 'true}\\n' actual ' true}\\n'"], "a space")
    expect_bad(probe(receipt_file(text.rstrip("\n"))),
               ["bytes[1801]: expected '\\n' actual ''"], "no final newline")
    swapped = text.replace('"capacity":60,"counts"', '"counts"').replace(
        '"over_capacity_shards":0},"ok"', '"over_capacity_shards":0},"capacity":60,"ok"')
    ok(swapped != text, "key-order edit applied")
    expect_bad(probe(receipt_file(swapped)), [
        "<key order>: expected receipt_version,batch_id,ring,placements,shards,capacity,"
        "counts,ok actual receipt_version,batch_id,ring,placements,shards,counts,capacity,ok",
    ], "top-level key order")


@case("probe_bytes")
def non_ascii_keys_are_raw_utf8():
    tmp = tmpdir()
    batch = {"batch_id": "utf8-1", "changes": [{"id": "c1", "key": "clé:ü", "size": 3}]}
    batch_path = write(os.path.join(tmp, "batch.json"), json.dumps(batch))
    # The receipt for it, built from the golden one's layout, with this key's real placement.
    r = golden()
    r["batch_id"] = "utf8-1"
    r["placements"] = [{"id": "c1", "key": "clé:ü", "size": 3, "hash": 0, "point": 0, "vnode": 0,
                        "shard": "", "reason": ""}]
    res = probe(receipt_file(r), batch=batch_path)
    fixed = {l.split(": expected ")[0]: l.split(" actual ")[0].split(": expected ")[1]
             for l in res.stdout.splitlines()[1:] if l.startswith("placements[0].")}
    for field in ("hash", "point", "vnode"):
        r["placements"][0][field] = int(fixed["placements[0].%s" % field])
    for field in ("shard", "reason"):
        r["placements"][0][field] = fixed["placements[0].%s" % field]
    for sid in r["shards"]:
        r["shards"][sid].update(load=0, received=0)
    r["shards"][r["placements"][0]["shard"]].update(load=3, received=1)
    r["counts"].update(changes=1, dispatched=1)
    expect_ok(probe(receipt_file(r), batch=batch_path), "utf-8 receipt")
    escaped = json.dumps(r, separators=(",", ":"), ensure_ascii=True) + "\n"
    res = probe(receipt_file(escaped), batch=batch_path)
    eq(res.returncode, 1, "\\u-escaped receipt: exit")
    eq(res.stdout.splitlines()[0], "RESULT: BAD (1 mismatches)", "\\u-escaped receipt")
    ok(res.stdout.splitlines()[1].startswith("bytes["), res.stdout)


@case("probe_membership")
def membership_leak_sends_ch001_to_shard_d():
    """docs/contract.md §6: if shard-d and shard-e were online, ch-001 would go to shard-d."""
    with open(src("input", "shards.json")) as f:
        doc = json.load(f)
    for s in doc["shards"]:
        s["state"] = "online"
    shards = write(os.path.join(tmpdir(), "shards.json"), json.dumps(doc))
    res = probe(shards=shards)
    eq(res.returncode, 1, "exit")
    lines = res.stdout.splitlines()
    ok("placements[0].shard: expected shard-d actual shard-b" in lines, res.stdout)
    ok('ring.online: expected ["shard-a","shard-b","shard-c","shard-d","shard-e"] '
       'actual ["shard-a","shard-b","shard-c"]' in lines, res.stdout)
    ok("ring.vnodes_total: expected 800 actual 480" in lines, res.stdout)
    ok("capacity: expected 100 actual 60" in lines, res.stdout)


@case("probe_membership")
def vnodes_divided_moves_ch003_to_ch006():
    """docs/contract.md §6: with VNODES divided by 5 (32), exactly ch-003..ch-006 move."""
    conf = write(os.path.join(tmpdir(), "d.env"), CONTRACT.replace("=160", "=32"))
    res = probe(conf=conf)
    eq(res.returncode, 1, "exit")
    moved = sorted(l.split(".")[0] for l in res.stdout.splitlines()
                   if l.startswith("placements[") and ".shard: " in l)
    eq(moved, ["placements[2]", "placements[3]", "placements[4]", "placements[5]"], "moved")


@case("probe_membership")
def ok_is_computed_not_read():
    """A shard over its capacity makes ok false even though the receipt says true."""
    with open(src("input", "shards.json")) as f:
        doc = json.load(f)
    doc["shards"][2]["capacity"] = 9  # shard-c carries 10
    shards = write(os.path.join(tmpdir(), "shards.json"), json.dumps(doc))
    expect_bad(probe(shards=shards), [
        "shards.shard-c.capacity: expected 9 actual 20",
        "shards.shard-c.over_capacity: expected true actual false",
        "capacity: expected 49 actual 60",
        "counts.over_capacity_shards: expected 1 actual 0",
        "ok: expected false actual true",
    ], "over capacity")
    doc["shards"][2]["capacity"] = 10  # exactly at capacity is not over
    write(shards, json.dumps(doc))
    res = probe(shards=shards)
    ok("ok: expected" not in res.stdout and "over_capacity" not in res.stdout, res.stdout)


def contract_error(text, message_after_path, what):
    conf = write(os.path.join(tmpdir(), "dispatch.env"), text)
    res = probe(conf=conf)
    eq(res.returncode, 3, what + ": exit")
    eq(res.stdout, "", what + ": stdout")
    eq(res.stderr, "contract: %s:%s\n" % (conf, message_after_path), what + ": stderr")


# (contract text, the message after "contract: <file>:", what)
BAD_CONTRACTS = [
    (CONTRACT.replace("DISPATCH_CAPACITY_POLICY=report\n", ""),
     "4: missing required key DISPATCH_CAPACITY_POLICY", "missing key"),
    (CONTRACT.replace("DISPATCH_VNODES=160\n", ""),
     "4: missing required key DISPATCH_VNODES", "missing VNODES (no default)"),
    ("", "0: missing required key DISPATCH_HASH_RING", "empty file"),
    (CONTRACT + "DISPATCH_VNODES=80\n",
     "6: duplicate key DISPATCH_VNODES (first on line 3)", "duplicate"),
    (CONTRACT + "DISPATCH_TIMEOUT=5\n", "6: unknown key DISPATCH_TIMEOUT", "unknown key"),
    (CONTRACT.replace("=160", "=16x"),
     '3: DISPATCH_VNODES: "16x" is not an integer 1..4096', "non-integer"),
    (CONTRACT.replace("=160", "=0"), '3: DISPATCH_VNODES: "0" is not an integer 1..4096', "0"),
    (CONTRACT.replace("=160", "=0160"),
     '3: DISPATCH_VNODES: "0160" is not an integer 1..4096', "leading zero"),
    (CONTRACT.replace("=160", "=4097"),
     '3: DISPATCH_VNODES: "4097" is not an integer 1..4096', "too big"),
    (CONTRACT.replace("=160", "=+160"),
     '3: DISPATCH_VNODES: "+160" is not an integer 1..4096', "sign"),
    (CONTRACT.replace("=sha1", "=sha256"),
     '4: DISPATCH_RING_HASH: "sha256" is not one of sha1, md5', "hash"),
    (CONTRACT.replace("=report", "=drop"),
     '5: DISPATCH_CAPACITY_POLICY: "drop" is not one of report, reject, spill', "policy"),
    (CONTRACT.replace("=ketama", "=modula"),
     '2: DISPATCH_HASH_RING: "modula" is not one of ketama, maglev, jump', "algorithm"),
    (MAGLEV.replace("=13", "=65536"),
     '3: DISPATCH_MAGLEV_TABLE: "65536" is not a prime 2..16777213', "table not a prime"),
    (MAGLEV.replace("=13", "=1"), '3: DISPATCH_MAGLEV_TABLE: "1" is not a prime 2..16777213',
     "table of one slot"),
    (MAGLEV.replace("=13", "=16777259"),
     '3: DISPATCH_MAGLEV_TABLE: "16777259" is not a prime 2..16777213', "table past 2^24"),
    (MAGLEV.replace("DISPATCH_MAGLEV_TABLE=13\n", ""),
     "4: missing required key DISPATCH_MAGLEV_TABLE", "maglev without its table"),
    (MAGLEV + "DISPATCH_VNODES=160\n", "6: DISPATCH_VNODES is not a key of DISPATCH_HASH_RING=maglev",
     "vnodes under maglev"),
    (CONTRACT.replace("=160\n", "=160\nDISPATCH_MAGLEV_TABLE=13\n"),
     "4: DISPATCH_MAGLEV_TABLE is not a key of DISPATCH_HASH_RING=ketama", "table under ketama"),
    (MAGLEV.replace("=report", "=spill"),
     "5: DISPATCH_CAPACITY_POLICY: spill needs DISPATCH_HASH_RING=ketama", "spill under maglev"),
    (JUMP.replace("=1024", "=0"), '3: DISPATCH_JUMP_SLOTS: "0" is not an integer 1..16777216',
     "no slot"),
    (JUMP.replace("=1024", "=16777217"),
     '3: DISPATCH_JUMP_SLOTS: "16777217" is not an integer 1..16777216', "slots past 2^24"),
    (JUMP.replace("DISPATCH_JUMP_SLOTS=1024\n", ""),
     "4: missing required key DISPATCH_JUMP_SLOTS", "jump without its slots"),
    (JUMP + "DISPATCH_MAGLEV_TABLE=13\nDISPATCH_VNODES=160\n",
     "7: DISPATCH_VNODES is not a key of DISPATCH_HASH_RING=jump", "two foreign keys: key order"),
    (MAGLEV + "DISPATCH_JUMP_SLOTS=16\n",
     "6: DISPATCH_JUMP_SLOTS is not a key of DISPATCH_HASH_RING=maglev", "slots under maglev"),
    (JUMP.replace("=report", "=spill"),
     "5: DISPATCH_CAPACITY_POLICY: spill needs DISPATCH_HASH_RING=ketama", "spill under jump"),
    (CONTRACT.replace("DISPATCH_VNODES=", "DISPATCH_VNODES ="),
     "3: no spaces are allowed around '='", "space before ="),
    (CONTRACT.replace("DISPATCH_VNODES=", "DISPATCH_VNODES= "),
     "3: no spaces are allowed around '='", "space after ="),
    (CONTRACT.replace("DISPATCH_VNODES", " DISPATCH_VNODES"),
     "3: leading whitespace is not allowed", "leading space"),
    (CONTRACT.replace("=160", "=160 "), "3: trailing whitespace is not allowed", "trailing"),
    (CONTRACT.replace("\n", "\r\n"), "2: trailing whitespace is not allowed", "CRLF"),
    (CONTRACT.replace("=sha1", '="sha1"'), "4: quotes are not allowed", "quotes"),
    (CONTRACT.replace("DISPATCH_VNODES", "export DISPATCH_VNODES"),
     "3: 'export' is not allowed", "export"),
    (CONTRACT + "garbage\n", "6: expected KEY=VALUE", "no ="),
    (CONTRACT + "\0\n", "0: the file holds a NUL byte", "NUL"),
]


def contract_error(text, message_after_path, what):
    conf = write(os.path.join(tmpdir(), "dispatch.env"), text)
    res = probe(conf=conf)
    eq(res.returncode, 3, what + ": exit")
    eq(res.stdout, "", what + ": stdout")
    eq(res.stderr, "contract: %s:%s\n" % (conf, message_after_path), what + ": stderr")


@case("probe_contract")
def contract_unusable():
    for text, message, what in BAD_CONTRACTS:
        contract_error(text, message, what)
    missing = os.path.join(tmpdir(), "nope.env")
    res = probe(conf=missing)
    eq((res.returncode, res.stderr),
       (3, "contract: %s: cannot read: No such file or directory\n" % missing), "unreadable")


@case("probe_contract")
def contract_from_environment():
    script = src("client", "probe.py")
    rest = ["--shards", src("input", "shards.json"),
            "--receipt", src("tests", "golden", "sample-0001.receipt.json")]
    env = dict(os.environ, SHARDGATE_CONF=src("conf", "dispatch.env"))
    res = run([sys.executable, script] + rest, env=env)
    eq((res.returncode, res.stdout), (0, "RESULT: OK\n"), "SHARDGATE_CONF names the contract")
    env.pop("SHARDGATE_CONF")
    res = run([sys.executable, script] + rest, env=env)
    eq((res.returncode, res.stderr),
       (3, "contract: no contract file: pass --conf FILE or set SHARDGATE_CONF\n"), "neither")


@case("probe_membership")
def md5_contract_is_usable():
    conf = write(os.path.join(tmpdir(), "md5.env"), CONTRACT.replace("=sha1", "=md5"))
    res = probe(conf=conf)
    eq(res.returncode, 1, "exit")
    ok("ring.hash: expected md5 actual sha1" in res.stdout.splitlines(), res.stdout)


def shards_error(doc_text, message, what):
    path = write(os.path.join(tmpdir(), "shards.json"), doc_text)
    res = probe(shards=path)
    eq(res.returncode, 3, what + ": exit")
    eq(res.stdout, "", what + ": stdout")
    eq(res.stderr, "shards: %s: %s\n" % (path, message), what + ": stderr")


def shards_with(index, **fields):
    with open(src("input", "shards.json")) as f:
        doc = json.load(f)
    doc["shards"][index].update(fields)
    return json.dumps(doc)


def many_shards(n, capacity=1, weight=1, offline=0):
    """n shards in file order, the first `offline` of them offline (ids sort against file
    order, so a message naming file order is told from one naming id order)."""
    return json.dumps({"shards": [{"id": "s%04d" % (n - i), "capacity": capacity,
                                   "weight": weight,
                                   "state": "offline" if i < offline else "online"}
                                  for i in range(n)]})


BAD_SHARDS = [  # (document, message after "shards: <file>: ", what)
    (lambda: shards_with(3, state="Offline"),
     "shards[3].state: must be one of online, draining, offline", "state"),
    (lambda: shards_with(1, zone="eu"), "shards[1].zone: unknown field", "unknown field"),
    (lambda: shards_with(2, id="shard-a"), "shards[2].id: duplicate of shards[0].id", "dup"),
    (lambda: shards_with(2, id="shard c"),
     "shards[2].id: must be 1..64 bytes of [A-Za-z0-9._:-]", "bad id"),
    (lambda: shards_with(0, weight=0), "shards[0].weight: must be an integer 1..1000", "w0"),
    (lambda: shards_with(0, capacity=-1),
     "shards[0].capacity: must be an integer 0..9007199254740991", "negative"),
    (lambda: shards_with(0, capacity=True),
     "shards[0].capacity: must be an integer 0..9007199254740991", "bool"),
    (lambda: shards_with(4, capacity=20.5),
     "shards[4].capacity: must be an integer 0..9007199254740991", "float"),
    (lambda: shards_with(0, capacity=2**53),
     "shards[0].capacity: must be an integer 0..9007199254740991", "2^53"),
    (lambda: '{"shards": [{"id": "a", "state": "online"}]}',
     "shards[0].capacity: missing", "missing capacity"),
    (lambda: '{"shards": [{"state": "online"}]}', "shards[0].id: missing", "missing id"),
    (lambda: '[]', '$: must be an object {"shards": [...]}', "array"),
    (lambda: '{}', "shards: missing", "no shards"),
    (lambda: '{"shards": {}}', "shards: must be an array", "shards object"),
    (lambda: '{"shards": [], "zone": 1}', "zone: unknown field", "top-level field"),
    # Rules R1 and R2 (docs/contract.md, Membership): named at the first shard over, in file order.
    (lambda: shards_with(1, capacity=2**53 - 1),
     "shards[1].capacity: sum of capacities exceeds 9007199254740991", "R1 sum"),
    (lambda: shards_with(3, capacity=2**53 - 20),
     "shards[3].capacity: sum of capacities exceeds 9007199254740991", "R1 counts offline"),
    (lambda: many_shards(1025, capacity=2**53 - 1),
     "shards[1].capacity: sum of capacities exceeds 9007199254740991", "R1 1025 x 2^53-1"),
    (lambda: many_shards(105, weight=1000),
     "shards[104].weight: ring exceeds 16777216 points", "R2 ring points"),
    (lambda: many_shards(115, weight=1000, offline=10),
     "shards[114].weight: ring exceeds 16777216 points", "R2 counts online only"),
]


@case("probe_shards")
def shards_unusable():
    for doc, message, what in BAD_SHARDS:
        shards_error(doc(), message, what)
    shards_error('{"shards": []', "$: invalid JSON: Expecting ',' delimiter: "
                 "line 1 column 14 (char 13)", "not JSON")
    shards_error('{"shards": [], "shards": []}', "$: invalid JSON: duplicate key 'shards'",
                 "duplicate key")
    missing = os.path.join(tmpdir(), "missing.json")
    res = probe(shards=missing)
    eq((res.returncode, res.stderr),
       (3, "shards: %s: cannot read: No such file or directory\n" % missing), "unreadable")


@case("probe_errors_agree")
def errors_agree_with_gateway():
    """The probe words an unusable contract or membership exactly as `shardgate` does
    (docs/contract.md), so an operator sees one message whichever tool found it."""
    build = os.environ.get("SHARDGATE_BUILD_DIR")
    gateway = os.path.join(build or "", "gateway", "shardgate")
    if not build or not os.access(gateway, os.X_OK):
        raise Skip("needs SHARDGATE_BUILD_DIR with gateway/shardgate (run through ctest)")
    tmp = tmpdir()
    cases = [(write(os.path.join(tmp, "c%d.env" % i), text), src("input", "shards.json"), what)
             for i, (text, _, what) in enumerate(BAD_CONTRACTS)]
    cases += [(src("conf", "dispatch.env"), write(os.path.join(tmp, "s%d.json" % i), doc()), what)
              for i, (doc, _, what) in enumerate(BAD_SHARDS)]
    # R2 under maglev: the 14th online shard in file order, past 3 offline ones, overflows 13.
    maglev = write(os.path.join(tmp, "maglev.env"), MAGLEV)
    cases.append((maglev, write(os.path.join(tmp, "s-maglev.json"), many_shards(20, offline=3)),
                  "R2 maglev slots"))
    # R2 under jump: 160 points a unit of weight; the 105th shard of weight 1000 passes 2^24.
    jump = write(os.path.join(tmp, "jump.env"), JUMP)
    cases.append((jump, write(os.path.join(tmp, "s-jump.json"), many_shards(110, weight=1000,
                                                                           offline=2)),
                  "R2 jump points"))
    for conf, shards, what in cases:
        mine = probe(conf=conf, shards=shards)
        theirs = run([gateway, "ring", "--conf", conf, "--shards", shards])
        eq((mine.returncode, mine.stderr), (theirs.returncode, theirs.stderr),
           what + ": probe vs shardgate ring")


@case("probe_unreadable")
def receipt_unreadable():
    tmp = tmpdir()
    for name, content in [("missing", None), ("empty", ""), ("truncated", golden_text()[:100]),
                          ("not-json", "RESULT: OK\n")]:
        path = os.path.join(tmp, name + ".json")
        if content is not None:
            write(path, content)
        res = probe(receipt=path)
        eq(res.returncode, 2, name + ": exit")
        eq(res.stdout, "", name + ": stdout")
        ok(res.stderr.startswith("receipt: %s: " % path), name + ": stderr %r" % res.stderr)
    path = write(os.path.join(tmp, "latin1.json"), b'{"batch_id":"\xe9"}\n', "wb")
    eq(probe(receipt=path).returncode, 2, "invalid UTF-8")


@case("probe_unreadable")
def usage_and_help():
    res = run([sys.executable, src("client", "probe.py"), "--help"])
    eq(res.returncode, 0, "--help exit")
    ok("RESULT: BAD" in res.stdout and "--batch" in res.stdout, res.stdout)
    for sub in ("plan", "chain", "journal"):  # the other forms are named in the usage
        ok("probe.py %s ..." % sub in res.stdout, "--help names %s: %s" % (sub, res.stdout))
        res_sub = run([sys.executable, src("client", "probe.py"), sub, "--help"])
        eq((res_sub.returncode, res_sub.stdout.startswith("usage: probe.py %s" % sub)), (0, True),
           "probe.py %s --help" % sub)
    res = run([sys.executable, src("client", "probe.py"), "--conf", "x"])
    eq(res.returncode, 64, "missing arguments exit")
    res = run([sys.executable, src("client", "probe.py"), "--conf", "x", "--shards", "y",
               "--receipt", "z", "--bogus"])
    eq(res.returncode, 64, "unknown option exit")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("source",)))
