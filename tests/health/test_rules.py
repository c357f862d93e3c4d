#!/usr/bin/env python3
"""health_rules: every rule the gateway enforces on the journal is judged by
shardgate-health: one mutated journal per rule -> exit 2 naming the criterion. When the gateway
binary is given, each journal is also handed to the real `shardgate serve --state-dir`: a
journal the gateway refuses to start on (exit 3) must be one health fails (exit 2), and both
accept the unmodified journal. Also R1/R2 in the shards file (exit 3) and in an epoch record
(exit 2, fast, no ring built)."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Failures, check_journal, deep, golden_shards, journal_text, parse_line,
                    run_server, tmpdir, write, changes, CONF, SHARDS)  # noqa: E402
import ketama  # noqa: E402

BIN = sys.argv[1]
GATEWAY = sys.argv[2] if len(sys.argv) > 2 else None
F = Failures()
T = tmpdir()
C = ketama.contract()
SH = golden_shards()
RING = ketama.Ring("sha1", 160, SH)
EPOCH = ketama.epoch_record(RING, C)
RECS = [ketama.receipt_record(i + 1, ketama.receipt(RING, "r-%02d" % i, changes(4, "r", i)))
        for i in range(3)]


def gateway_start_code(raw):
    """Exit code of `shardgate serve` on a state dir holding raw as its journal: 3 when it
    refuses at start, 0 when it starts (it is killed once it listens)."""
    state = os.path.join(T, "state-%d" % time.monotonic_ns())
    os.makedirs(state, mode=0o700)
    with open(os.path.join(state, "journal.jsonl"), "wb") as f:
        f.write(raw.encode("utf-8", "surrogateescape"))
    try:
        r = run_server(["serve", "--conf", CONF, "--shards", SHARDS, "--state-dir", state,
                        "--listen", "127.0.0.1:0"], binary=GATEWAY)
        return 0 if r.returncode is None else r.returncode
    finally:
        shutil.rmtree(state, ignore_errors=True)


def health(name, raw, extra=None):
    path = os.path.join(T, name + ".jsonl")
    with open(path, "wb") as f:
        f.write(raw.encode("utf-8", "surrogateescape"))
    args = ["check", "--conf", CONF, "--shards", SHARDS, "--journal", path] + (extra or [])
    p = subprocess.run([BIN] + args, capture_output=True, timeout=60)
    out = p.stdout.decode("utf-8", "replace")
    return p.returncode, out, parse_line(out)


def case(name, raw, issue, extra=None):
    rc, out, doc = health(name, raw, extra)
    F.check(rc == 2 and doc is not None and issue in doc["issues"],
            "%s -> exit 2 + %r" % (name, issue), "rc=%d out=%s" % (rc, out[:1500]))
    if GATEWAY:
        g = gateway_start_code(raw)
        F.check(g in (0, 3), "%s: gateway starts or refuses (exit 3)" % name, "exit %d" % g)
        F.check(g != 3 or rc == 2, "%s: gateway refuses (exit %d) => health exit 2" % (name, g),
                "health rc=%d" % rc)


def rec_line(rec):
    return ketama.dumps(rec) + "\n"


def with_receipt(mutate, fix_fingerprint=True):
    """The clean journal with receipt 2 mutated (its fingerprint recomputed unless told)."""
    recs = deep(RECS)
    mutate(recs[1]["receipt"])
    if fix_fingerprint:
        recs[1]["fingerprint"] = ketama.fingerprint(recs[1]["receipt"])
    return journal_text([EPOCH] + recs)


CLEAN = journal_text([EPOCH] + RECS)
rc, out, doc = health("clean", CLEAN)
F.check(rc == 0, "clean journal passes", out)
if GATEWAY:
    F.check(gateway_start_code(CLEAN) == 0, "the gateway starts on the clean journal")

# --- canonical bytes and key order -----------------------------------------------------------
case("space-after-comma", CLEAN.replace('"seq":2,', '"seq":2, ', 1),
     "record_bytes: r-01: not the bytes the gateway writes for this record (first difference at "
     "byte 26, column 27)")
inner = rec_line(RECS[1])
case("space-inside-receipt", CLEAN.replace(inner, inner.replace('"capacity":', ' "capacity":')),
     "record_bytes: r-01: not the bytes the gateway writes for this record (first difference at "
     "byte %d, column %d)" % (inner.index(',"capacity":') + 1, inner.index(',"capacity":') + 2))
swapped = '{"seq":2,"type":"receipt",' + inner[len('{"type":"receipt","seq":2,'):]
case("record-keys-swapped", CLEAN.replace(inner, swapped),
     "record_bytes: r-01: not the bytes the gateway writes for this record (first difference at "
     "byte 2, column 3)")
rr = deep(RECS[1]["receipt"])
rr = {k: rr[k] for k in ["batch_id", "receipt_version"] + list(rr)[2:]}
case("receipt-keys-swapped", CLEAN.replace(inner, rec_line(dict(RECS[1], receipt=rr))),
     "schema: r-01: $: key batch_id out of order (expected receipt_version)")
case("extra-key", CLEAN.replace(inner, inner[:-2] + ',"x":1}\n'),
     "journal_line: line 3: receipt record: must have exactly type, seq, fingerprint, receipt")
ep_line = rec_line(EPOCH)
case("epoch-space", CLEAN.replace(ep_line, ep_line.replace('"shards":', ' "shards":')),
     "epoch_record: epoch@line 1: not the bytes the gateway writes for this record (first "
     "difference at byte %d, column %d)" % (ep_line.index('"shards":'), ep_line.index('"shards":') + 1))

# --- batch rules ----------------------------------------------------------------------------
case("batch-id-bad", with_receipt(lambda r: r.update(batch_id="bad id/../x")),
     "batch_id: bad id/../x: batch_id: must be 1..128 bytes of [A-Za-z0-9._:-], got 11 bytes")
case("batch-id-129", with_receipt(lambda r: r.update(batch_id="b" * 129)),
     "batch_id: %s: batch_id: must be 1..128 bytes of [A-Za-z0-9._:-], got 129 bytes" % ("b" * 128))


def zero(r):
    r["placements"] = []
    r["counts"].update(changes=0, dispatched=0)
    for s in r["shards"].values():
        s.update(load=0, received=0)


case("zero-placements", with_receipt(zero), "changes: r-01: placements: must hold 1..100000 changes, not 0")
case("max-changes", CLEAN, "changes: r-01: placements: must hold 1..3 changes, not 4",
     extra=["--max-changes", "3"])
case("empty-change-id", with_receipt(lambda r: r["placements"][0].update(id="")),
     "changes: r-01: placements[0].id: must be a string of 1..128 bytes, got 0")
case("duplicate-change-id", with_receipt(lambda r: r["placements"][1].update(id=r["placements"][0]["id"])),
     "placement_ids: r-01: c0 id: duplicate change id (placements[0] and placements[1])")


def long_key(r):
    r["placements"][0]["key"] = "k" * 1025


case("key-1025", with_receipt(long_key), "changes: r-01: placements[0].key: must be a string of 1..1024 bytes, got 1025")
bad_utf8 = CLEAN.replace(inner, inner.replace('"key":"r:1:0"', '"key":"r:1:0\udcff"'))
case("key-invalid-utf8", bad_utf8,
     "journal_line: line 3: not JSON: unable to decode byte 0xff near '\"r:1:0' (column 358)")
case("size-2^53", with_receipt(lambda r: r["placements"][0].update(size=2 ** 53)),
     "schema: r-01: placements[0].size: must be an integer 0..9007199254740991")
case("size-negative", with_receipt(lambda r: r["placements"][0].update(size=-1)),
     "schema: r-01: placements[0].size: must be an integer 0..9007199254740991")


def total_over(r):
    for p in r["placements"][:2]:
        p["size"] = 2 ** 53 - 1


case("total-size", with_receipt(total_over),
     "changes: r-01: placements[1].size: total size exceeds 9007199254740991")
case("receipt-version-3", with_receipt(lambda r: r.update(receipt_version=3)),
     "receipt_version: r-01: receipt_version: expected 1 or 2, got 3")

# --- record fields --------------------------------------------------------------------------
recs = deep(RECS)
recs[2]["seq"] = 4
case("seq-not-plus-1", journal_text([EPOCH] + recs),
     "journal_seq: r-02: seq: expected 3, got 4 (receipts missing)")
recs = deep(RECS)
recs[2]["seq"] = 1
case("seq-not-increasing", journal_text([EPOCH] + recs),
     "journal_seq: r-02: seq: 1 is not greater than the previous seq 2")
recs = deep(RECS)
recs[1]["fingerprint"] = recs[1]["fingerprint"].upper()
case("fingerprint-not-hex", journal_text([EPOCH] + recs),
     "fingerprint: r-01: fingerprint: must be 64 lowercase hex digits, got %s" % recs[1]["fingerprint"])

# --- R1 / R2 --------------------------------------------------------------------------------
big = {"id": "big", "state": "offline", "capacity": 2 ** 53 - 1}
r1 = write(os.path.join(T, "r1.json"), json.dumps({"shards": SH + [big]}))
p = subprocess.run([BIN, "check", "--conf", CONF, "--shards", r1, "--journal", "x"], capture_output=True)
want = "shards: %s: shards[5].capacity: sum of capacities exceeds 9007199254740991\n" % r1
F.check(p.returncode == 3 and p.stderr.decode() == want and p.stdout == b"", "R1 in the shards file: exit 3",
        "%d %r" % (p.returncode, p.stderr))
heavy = [{"id": "w%d" % i, "state": "online", "capacity": 1, "weight": 1000} for i in range(2)]
r2 = write(os.path.join(T, "r2.json"), json.dumps({"shards": heavy}))
conf4096 = write(os.path.join(T, "v4096.env"), ketama.contract_text(ketama.contract(vnodes=4096)))
p = subprocess.run([BIN, "check", "--conf", conf4096, "--shards", SHARDS, "--journal", "x"], capture_output=True)
F.check(p.returncode == 2, "VNODES 4096 with the example shards is usable", p.stderr.decode())
many = [{"id": "s%04d" % i, "state": "online", "capacity": 1, "weight": 1000} for i in range(4097)]
r2 = write(os.path.join(T, "r2.json"), json.dumps({"shards": many}))
p = subprocess.run([BIN, "check", "--conf", conf4096, "--shards", r2, "--journal", "x"], capture_output=True)
want = "shards: %s: shards[4].weight: ring exceeds 16777216 points\n" % r2
F.check(p.returncode == 3 and p.stderr.decode() == want, "R2 in the shards file: exit 3",
        "%d %r" % (p.returncode, p.stderr))
ep = {"type": "epoch", "ring_id": "0" * 40, "contract": ketama.contract(vnodes=4096),
      "shards": sorted(many, key=lambda s: s["id"])}
t0 = time.monotonic()
rc, out, doc = health("r2-epoch", journal_text([ep]))
took = time.monotonic() - t0
with open(BIN, "rb") as f:  # an ASan build runs about 8x slower; its bound is 5 s
    bound = 5.0 if b"__asan_init" in f.read() else 1.0
F.check(rc == 2 and doc is not None and
        "epoch_record: epoch@line 1: shards[4].weight: ring exceeds 16777216 points" in doc["issues"] and took < bound,
        "R2 in an epoch record (4097 x 1000 x 4096): exit 2 in %.2f s (< %g s)" % (took, bound), out[:500])
ep = deep(EPOCH)
ep["shards"].append({"id": "zz", "state": "offline", "capacity": 2 ** 53 - 1, "weight": 1})
case("r1-epoch", journal_text([ep] + RECS),
     "epoch_record: epoch@line 1: shards[5].capacity: sum of capacities exceeds 9007199254740991")

F.exit()
