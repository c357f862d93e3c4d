#!/usr/bin/env python3
"""probe.py - independent verifier of a shardgate receipt (docs/contract.md §1-§5, docs/tools.md §2).

A third implementation of the ketama ring, in the Python standard library only.
It reads the contract and the membership itself, recomputes every fact of the
receipt, and compares it field by field and byte by byte. It never trusts `ok`
or any count written in the receipt.

Exit codes:
  0  RESULT: OK - the receipt is exactly what the contract and membership give
  1  RESULT: BAD (N mismatches) - one `field: expected X actual Y` line each
  2  the receipt (or --batch) is unreadable or not JSON
  3  the contract or the shards file is unusable
  64 usage error
  70 internal error of the probe itself (never 1, so a crash cannot pass for BAD)
"""

import argparse
import bisect
import hashlib
import json
import os
import re
import struct
import sys
import zlib

EXIT_OK, EXIT_BAD, EXIT_UNREADABLE, EXIT_UNUSABLE, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3, 64, 70

CONTRACT_KEYS = ("DISPATCH_HASH_RING", "DISPATCH_VNODES", "DISPATCH_RING_HASH",
                 "DISPATCH_CAPACITY_POLICY")
SHARD_STATES = ("online", "draining", "offline")
SHARD_FIELDS = ("id", "state", "capacity", "weight")
NAME_RE = re.compile(r"[A-Za-z0-9._:-]+")
MAX_SAFE_INT = 2**53 - 1
MAX_RING_POINTS = 2**24  # rule R2 (docs/contract.md, Membership)
RECEIPT_VERSIONS = (1, 2)  # 2 names the epoch (docs/contract.md §5, §7); 1 still verifies
MISSING = object()


class Unusable(Exception):
    """The contract or the membership cannot be used; the message is the whole line."""


class Unreadable(Exception):
    """A receipt or batch that cannot be read or is not JSON."""


# ---------------------------------------------------------------- contract (docs/contract.md §1)

def _int_value(text, lo, hi):
    if not re.fullmatch(r"0|[1-9][0-9]*", text):
        return None
    value = int(text)
    return value if lo <= value <= hi else None


VALUE_RULES = {  # key: (allowed values or None for the integer range, "is not ..." text)
    "DISPATCH_HASH_RING": (("ketama",), "ketama"),
    "DISPATCH_VNODES": (None, "an integer 1..4096"),
    "DISPATCH_RING_HASH": (("sha1", "md5"), "one of sha1, md5"),
    "DISPATCH_CAPACITY_POLICY": (("report", "reject", "spill"), "one of report, reject, spill"),
}


def _check_contract_value(key, value):
    """Returns the parsed value or raises ValueError with what is wrong."""
    allowed, wanted = VALUE_RULES[key]
    parsed = _int_value(value, 1, 4096) if allowed is None else (
        value if value in allowed else None)
    if parsed is None:
        raise ValueError('%s: "%s" is not %s' % (key, value[:100], wanted))
    return parsed


def _parse_contract_line(line):
    """Returns (key, raw value) of one KEY=VALUE line or raises ValueError. The checks and
    their order are those of docs/contract.md, so all three readers word errors alike."""
    if line.startswith("export "):
        raise ValueError("'export' is not allowed")
    if "=" not in line:
        raise ValueError("expected KEY=VALUE")
    if line[0] in " \t":
        raise ValueError("leading whitespace is not allowed")
    key, value = line.split("=", 1)
    if key[-1:] in (" ", "\t") or value[:1] in (" ", "\t"):
        raise ValueError("no spaces are allowed around '='")
    if line[-1] in " \t\r":
        raise ValueError("trailing whitespace is not allowed")
    if '"' in value or "'" in value:
        raise ValueError("quotes are not allowed")
    if key not in CONTRACT_KEYS:
        raise ValueError("unknown key %s" % key[:100])
    return key, value


def load_contract(path):
    """Reads the contract strictly; raises Unusable with `contract: <file>:<line>: <what>`."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise Unusable("contract: %s: cannot read: %s" % (path, e.strerror or e))
    if b"\0" in raw:
        raise Unusable("contract: %s:0: the file holds a NUL byte" % path)
    lines = raw.decode("utf-8", "replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    contract, seen = {}, {}
    for number, line in enumerate(lines, 1):
        if line == "" or line.startswith("#"):
            continue
        try:
            key, value = _parse_contract_line(line)
            if key in seen:
                raise ValueError("duplicate key %s (first on line %d)" % (key, seen[key]))
            seen[key] = number
            contract[key] = _check_contract_value(key, value)
        except ValueError as e:
            raise Unusable("contract: %s:%d: %s" % (path, number, e))
    for key in CONTRACT_KEYS:
        if key not in contract:
            # A missing key has no line of its own; name the end of the file.
            raise Unusable("contract: %s:%d: missing required key %s" % (path, len(lines), key))
    return contract


# ---------------------------------------------------------------- JSON helpers

def _reject_constant(name):
    raise ValueError("not a JSON value: %s" % name)


def _pairs_no_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError("duplicate key %r" % key)
        obj[key] = value
    return obj


def parse_json_bytes(raw):
    """Strict JSON: UTF-8, no NaN/Infinity, no duplicate keys. Raises ValueError."""
    text = raw.decode("utf-8")
    return json.loads(text, object_pairs_hook=_pairs_no_duplicates,
                      parse_constant=_reject_constant)


def is_int(value, lo, hi):
    return type(value) is int and lo <= value <= hi


def is_name(value, max_len):
    return (isinstance(value, str) and NAME_RE.fullmatch(value) is not None
            and len(value.encode("utf-8")) <= max_len)


def canonical(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- shards (docs/contract.md §2)

def _check_shard(shard, where):
    """Returns a normalized shard dict or raises ValueError("<path>: <what>")."""
    if not isinstance(shard, dict):
        raise ValueError("%s: must be an object" % where)
    for field in shard:
        if field not in SHARD_FIELDS:
            raise ValueError("%s.%s: unknown field" % (where, field[:32]))
    rules = (("id", lambda v: is_name(v, 64), "must be 1..64 bytes of [A-Za-z0-9._:-]"),
             ("state", lambda v: v in SHARD_STATES, "must be one of online, draining, offline"),
             ("capacity", lambda v: is_int(v, 0, MAX_SAFE_INT),
              "must be an integer 0..%d" % MAX_SAFE_INT))
    for field, valid, what in rules:
        if field not in shard:
            raise ValueError("%s.%s: missing" % (where, field))
        if not valid(shard[field]):
            raise ValueError("%s.%s: %s" % (where, field, what))
    weight = shard.get("weight", 1)  # the only defaulted field (docs/contract.md §2)
    if not is_int(weight, 1, 1000):
        raise ValueError("%s.weight: must be an integer 1..1000" % where)
    return {"id": shard["id"], "state": shard["state"], "capacity": shard["capacity"],
            "weight": weight}


def _check_membership(doc):
    if not isinstance(doc, dict):
        raise ValueError('$: must be an object {"shards": [...]}')
    for field in doc:
        if field != "shards":
            raise ValueError("%s: unknown field" % (field or '$[""]'))
    if not isinstance(doc.get("shards"), list):
        raise ValueError("shards: %s" % ("missing" if "shards" not in doc else "must be an array"))
    shards, capacity = [], 0
    for i, s in enumerate(doc["shards"]):
        shards.append(_check_shard(s, "shards[%d]" % i))
        capacity += shards[-1]["capacity"]
        if capacity > MAX_SAFE_INT:  # rule R1 (docs/contract.md, Membership)
            raise ValueError("shards[%d].capacity: sum of capacities exceeds %d"
                             % (i, MAX_SAFE_INT))
    first = {}
    for i, shard in enumerate(shards):
        if shard["id"] in first:
            raise ValueError("shards[%d].id: duplicate of shards[%d].id" % (i, first[shard["id"]]))
        first[shard["id"]] = i
    return shards


def load_shards(path):
    """Reads the membership strictly; raises Unusable with `shards: <file>: <path>: <what>`."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise Unusable("shards: %s: cannot read: %s" % (path, e.strerror or e))
    try:
        doc = parse_json_bytes(raw)
    except ValueError as e:
        raise Unusable("shards: %s: $: invalid JSON: %s" % (path, e))
    try:
        return _check_membership(doc)
    except ValueError as e:
        raise Unusable("shards: %s: %s" % (path, e))


def check_ring_size(path, vnodes, shards):
    """Rule R2 (docs/contract.md, Membership): walking shards[] in file order, vnodes * weight
    summed over online shards stays <= 2^24 points. Raises Unusable naming the first over."""
    points = 0
    for i, shard in enumerate(shards):
        if shard["state"] == "online":
            points += vnodes * shard["weight"]
            if points > MAX_RING_POINTS:
                raise Unusable("shards: %s: shards[%d].weight: ring exceeds %d points"
                               % (path, i, MAX_RING_POINTS))


# ---------------------------------------------------------------- the ring (docs/contract.md §3)

def digest(algorithm, data):
    return hashlib.new(algorithm, data).digest()


def le32(d, offset):
    return struct.unpack_from("<I", d, offset)[0]


def key_hash(algorithm, key_bytes):
    return le32(digest(algorithm, key_bytes), 0)


def shard_points(algorithm, shard_id, count):
    """The `count` points of one shard: (value, vnode) in vnode order."""
    words = len(digest(algorithm, b"")) // 4
    points, group = [], 0
    while len(points) < count:
        d = digest(algorithm, ("%s-%d" % (shard_id, group)).encode("utf-8"))
        for j in range(words):
            vnode = group * words + j
            if vnode >= count:
                break
            points.append((le32(d, 4 * j), vnode))
        group += 1
    return points


def epoch_id(contract, shards):
    """The epoch id (docs/contract.md §7): SHA-1 of the contract and the whole membership."""
    text = "shardgate-epoch\n"
    text += "".join("%s=%s\n" % (key, contract[key]) for key in CONTRACT_KEYS)
    text += "".join("%s %s %d %d\n" % (s["id"], s["state"], s["capacity"], s["weight"])
                    for s in id_order(shards))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def id_order(shards):
    return sorted(shards, key=lambda s: s["id"].encode("utf-8"))


def online_shards(shards):
    # A whitelist: only `online` is in the ring, never "everything but offline".
    return [s for s in id_order(shards) if s["state"] == "online"]


class Ring:
    """Sorted (value, shard id bytes, vnode) points with a bisect lookup."""

    def __init__(self, algorithm, vnodes, shards):
        self.algorithm = algorithm
        self.vnodes = vnodes
        self.online = online_shards(shards)
        entries = []
        for s in self.online:
            id_bytes = s["id"].encode("utf-8")
            for value, vnode in shard_points(algorithm, s["id"], vnodes * s["weight"]):
                entries.append((value, id_bytes, vnode))
        entries.sort()
        self.entries = entries
        self.values = [e[0] for e in entries]

    @property
    def vnodes_total(self):
        return sum(self.vnodes * s["weight"] for s in self.online)

    @property
    def ring_id(self):
        text = "ketama\n%s\n%d\n" % (self.algorithm, self.vnodes)
        text += "".join("%s %d\n" % (s["id"], s["weight"]) for s in self.online)
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def lookup_hash(self, h):
        """Returns (point, vnode, shard id, reason); all None on an empty ring."""
        if not self.entries:
            return None, None, None, None
        i = bisect.bisect_left(self.values, h)  # the first value >= h
        reason = "ring"
        if i == len(self.entries):
            i, reason = 0, "wrap"
        value, id_bytes, vnode = self.entries[i]
        return value, vnode, id_bytes.decode("utf-8"), reason

    def lookup(self, key_bytes):
        """Returns (hash, point, vnode, shard id, reason) of a key."""
        h = key_hash(self.algorithm, key_bytes)
        return (h,) + self.lookup_hash(h)


# ---------------------------------------------------------------- spill (docs/contract.md §9)

def spill_place(ring, by_id, load, placement):
    """Rules 1-3 for one change, in batch order: the placement itself when its home shard has
    room (or no online shard has), else the first shard clockwise after the home point, each
    met once, the home shard skipped, with load + size <= capacity, with `home` after reason."""
    home, size = placement["shard"], placement["size"]
    if load[home] + size <= by_id[home]["capacity"]:
        return placement
    n = len(ring.entries)
    start = bisect.bisect_left(ring.values, placement["hash"]) % n  # the home point
    met = {home}
    for step in range(1, n):
        value, id_bytes, vnode = ring.entries[(start + step) % n]
        shard = id_bytes.decode("utf-8")
        if shard in met:
            continue
        met.add(shard)
        if load[shard] + size <= by_id[shard]["capacity"]:
            moved = dict(placement, point=value, vnode=vnode, shard=shard, reason="spill")
            moved["home"] = home
            return moved
    return placement


# ---------------------------------------------------------------- the receipt (docs/contract.md §5)

def expected_receipt(contract, shards, batch_id, changes, version=2):
    """The receipt the gateway must have written for these changes, keys in docs/contract.md §5
    order: version 2 names the epoch after batch_id, version 1 has no epoch key."""
    ring = Ring(contract["DISPATCH_RING_HASH"], contract["DISPATCH_VNODES"], shards)
    by_id = {s["id"]: s for s in shards}
    load = {s["id"]: 0 for s in shards}
    received = {s["id"]: 0 for s in shards}
    placements, dispatched, spilled = [], 0, 0
    spill = contract["DISPATCH_CAPACITY_POLICY"] == "spill"
    for change in changes:
        if "unplaceable" in change:  # already reported; counted, never dispatched
            placements.append(change["unplaceable"])
            continue
        h, point, vnode, shard, reason = ring.lookup(change["key"].encode("utf-8"))
        placements.append({"id": change["id"], "key": change["key"], "size": change["size"],
                           "hash": h, "point": point, "vnode": vnode, "shard": shard,
                           "reason": reason})
        if spill and shard is not None and is_int(change["size"], 0, MAX_SAFE_INT):
            placements[-1] = spill_place(ring, by_id, load, placements[-1])
            shard = placements[-1]["shard"]
            spilled += "home" in placements[-1]
        if shard is not None and by_id[shard]["state"] == "online":
            dispatched += 1
            if is_int(change["size"], 0, MAX_SAFE_INT):
                load[shard] += change["size"]
            received[shard] += 1
    shard_section = {}
    for s in id_order(shards):
        over = s["state"] == "online" and load[s["id"]] > s["capacity"]
        shard_section[s["id"]] = {"state": s["state"], "weight": s["weight"],
                                  "capacity": s["capacity"], "load": load[s["id"]],
                                  "received": received[s["id"]], "over_capacity": over}
    over_count = sum(1 for v in shard_section.values() if v["over_capacity"])
    counts = {"changes": len(changes), "dispatched": dispatched, "over_capacity_shards": over_count}
    if spill:
        counts["spilled"] = spilled  # docs/contract.md §9 rule 4: under spill only
    receipt = {"receipt_version": version, "batch_id": batch_id}
    if version >= 2:
        receipt["epoch"] = epoch_id(contract, shards)
    receipt.update({
        "ring": {"id": ring.ring_id, "algorithm": "ketama", "hash": ring.algorithm,
                 "vnodes": ring.vnodes, "vnodes_total": ring.vnodes_total,
                 "online": [s["id"] for s in ring.online]},
        "placements": placements,
        "shards": shard_section,
        "capacity": sum(s["capacity"] for s in ring.online),
        "counts": counts,
        "ok": dispatched == len(changes) and over_count == 0,
    })
    return receipt


def receipt_version_of(receipt):
    """The version the receipt is judged as: the one it claims when it is a known one, else 2
    when it has an `epoch` key and 1 when not (so an unknown version is one mismatch line)."""
    if not isinstance(receipt, dict):
        return RECEIPT_VERSIONS[-1]
    claimed = receipt.get("receipt_version")
    if type(claimed) is int and claimed in RECEIPT_VERSIONS:
        return claimed
    return 2 if "epoch" in receipt else 1


# ---------------------------------------------------------------- comparison

def show(value, other):
    """A value for a mismatch line: strings bare unless the other side is not a string."""
    if value is MISSING:
        return "<missing>"
    if isinstance(value, str) and (other is MISSING or isinstance(other, str)):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def same(a, b):
    """Equality that also requires the same JSON type (8 != 8.0, 1 != true)."""
    if a is MISSING or b is MISSING:
        return a is b
    return canonical(a) == canonical(b)


def join(path, key):
    return "%s.%s" % (path, key) if path else key


def compare(expected, actual, path, out):
    """Appends (path, expected, actual) for every difference, recursing into objects
    and into arrays of objects; arrays of scalars are compared whole."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        _compare_objects(expected, actual, path, out)
    elif (isinstance(expected, list) and isinstance(actual, list)
          and any(isinstance(e, dict) for e in expected)):
        _compare_arrays(expected, actual, path, out)
    elif not same(expected, actual):
        out.append((path, show(expected, actual), show(actual, expected)))


def _compare_objects(expected, actual, path, out):
    for key, value in expected.items():
        compare(value, actual.get(key, MISSING), join(path, key), out)
    for key, value in actual.items():
        if key not in expected:
            out.append((join(path, key), "<absent>", show(value, MISSING)))
    common_exp = [k for k in expected if k in actual]
    common_act = [k for k in actual if k in expected]
    if common_exp != common_act:
        out.append((join(path, "<key order>") if path else "<key order>",
                    ",".join(common_exp), ",".join(common_act)))


def _compare_arrays(expected, actual, path, out):
    if len(expected) != len(actual):
        out.append((join(path, "length"), str(len(expected)), str(len(actual))))
    for i in range(max(len(expected), len(actual))):
        exp = expected[i] if i < len(expected) else MISSING
        act = actual[i] if i < len(actual) else MISSING
        if exp is MISSING or act is MISSING:
            out.append(("%s[%d]" % (path, i), show(exp, act), show(act, exp)))
        else:
            compare(exp, act, "%s[%d]" % (path, i), out)


def compare_bytes(expected_text, raw, out):
    """Reports the first byte where the receipt differs from the canonical form."""
    want = expected_text.encode("utf-8", "surrogatepass")
    if want == raw:
        return
    at = next((i for i, (a, b) in enumerate(zip(want, raw)) if a != b), min(len(want), len(raw)))
    out.append(("bytes[%d]" % at, repr(want[at:at + 24].decode("utf-8", "replace")),
                repr(raw[at:at + 24].decode("utf-8", "replace"))))


# ---------------------------------------------------------------- changes

def utf8_len(value):
    """Byte length of a JSON string, or None for a non-string or one with lone surrogates."""
    try:
        return len(value.encode("utf-8")) if isinstance(value, str) else None
    except UnicodeEncodeError:
        return None


def _len_in(value, lo, hi):
    n = utf8_len(value)
    return n is not None and lo <= n <= hi


def changes_from_receipt(receipt, out):
    """Takes id/key/size from the receipt's own placements, reporting ones that break
    docs/contract.md §4.
    A placement that cannot be placed (no usable key) stays in its position as
    {"unplaceable": placement}, so the placements after it are still compared 1:1."""
    placements = receipt.get("placements") if isinstance(receipt, dict) else None
    if not isinstance(placements, list):
        return []
    changes, seen = [], set()
    for i, p in enumerate(placements):
        where = "placements[%d]" % i
        if not isinstance(p, dict):
            out.append((where, "a placement object", show(p, 0)))
            changes.append({"unplaceable": p})
            continue
        change = {"id": p.get("id"), "key": p.get("key"), "size": p.get("size")}
        if not _len_in(change["id"], 1, 128):
            out.append((where + ".id", "a string of 1..128 bytes", show(p.get("id", MISSING), 0)))
        elif change["id"] in seen:
            out.append((where + ".id", "a unique id", change["id"]))
        else:
            seen.add(change["id"])
        if not is_int(change["size"], 0, MAX_SAFE_INT):
            out.append((where + ".size", "an integer 0..%d" % MAX_SAFE_INT,
                        show(p.get("size", MISSING), 0)))
        if not _len_in(change["key"], 1, 1024):
            out.append((where + ".key", "a string of 1..1024 bytes",
                        show(p.get("key", MISSING), 0)))
            change = {"unplaceable": p}
        changes.append(change)
    return changes


def load_batch(path):
    """Reads the original batch; raises Unreadable or Unusable on a batch that breaks
    docs/contract.md §4."""
    try:
        with open(path, "rb") as f:
            doc = parse_json_bytes(f.read())
    except OSError as e:
        raise Unreadable("batch: %s: cannot read: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise Unreadable("batch: %s: not JSON: %s" % (path, e))
    problem = _batch_problem(doc)
    if problem:
        raise Unreadable("batch: %s: %s" % (path, problem))
    return doc["batch_id"], doc["changes"]


def _batch_problem(doc):
    if not isinstance(doc, dict) or set(doc) != {"batch_id", "changes"}:
        return "$: must be an object with exactly batch_id and changes"
    if not is_name(doc["batch_id"], 128):
        return "batch_id: must be 1..128 bytes of [A-Za-z0-9._:-]"
    if not isinstance(doc["changes"], list) or not doc["changes"]:
        return "changes: must be a non-empty array"
    ids = set()
    for i, c in enumerate(doc["changes"]):
        where = "changes[%d]" % i
        if not isinstance(c, dict) or set(c) != {"id", "key", "size"}:
            return where + ": must be an object with exactly id, key and size"
        if not _len_in(c["id"], 1, 128) or c["id"] in ids:
            return where + ".id: must be a unique string of 1..128 bytes"
        if not _len_in(c["key"], 1, 1024):
            return where + ".key: must be a string of 1..1024 bytes"
        if not is_int(c["size"], 0, MAX_SAFE_INT):
            return where + ".size: must be an integer 0..%d" % MAX_SAFE_INT
        ids.add(c["id"])
    return None


# ---------------------------------------------------------------- movement plan (docs/contract.md §8)

HASH_SPACE = 2**32


def owner_of(ring, h):
    """The shard id owning hash value h: the first point >= h, else point 0."""
    return ring.lookup_hash(h)[2]


def plan(ring_from, ring_to, from_epoch, to_epoch, shard_ids):
    """The plan as an ordered dict (docs/tools.md §1). Independent of the gateway's walk: each
    arc ends at a distinct point value of either ring, and its owners are looked up by bisect."""
    before = {i: 0 for i in shard_ids}
    after = dict(before)
    pairs = {}
    ends = sorted(set(ring_from.values) | set(ring_to.values))
    arcs = [(0 if k == 0 else ends[k - 1] + 1, v) for k, v in enumerate(ends)]
    if ends[-1] < HASH_SPACE - 1:
        arcs.append((ends[-1] + 1, HASH_SPACE - 1))
    for lo, hi in arcs:
        a, b = owner_of(ring_from, hi), owner_of(ring_to, hi)
        before[a] += hi - lo + 1
        after[b] += hi - lo + 1
        if a != b:
            pairs[(a, b)] = pairs.get((a, b), 0) + hi - lo + 1
    moved = sum(pairs.values())
    order = sorted(pairs, key=lambda ab: (ab[0].encode("utf-8"), ab[1].encode("utf-8")))
    return {
        "from_epoch": from_epoch, "to_epoch": to_epoch,
        "from_ring": ring_from.ring_id, "to_ring": ring_to.ring_id,
        "moved_points": moved,
        "moved_fraction": RawNumber("%.9f" % (moved / HASH_SPACE)),
        "pairs": [{"from": a, "to": b, "moved_points": pairs[(a, b)]} for a, b in order],
        "shards": [{"id": i, "before": before[i], "after": after[i]}
                   for i in sorted(shard_ids, key=lambda i: i.encode("utf-8"))],
    }


class RawNumber(str):
    """A number written exactly as its text (moved_fraction's 9 decimals)."""


def plan_json(obj):
    """Compact JSON like canonical(), with RawNumber values written bare."""
    if isinstance(obj, RawNumber):
        return str(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(json.dumps(k) + ":" + plan_json(v) for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(plan_json(v) for v in obj) + "]"
    return json.dumps(obj, ensure_ascii=False)


CRC_TAIL = re.compile(rb',"crc32":"([0-9a-f]{8})"\}')
CRC_MISMATCH = ("crc32", "the CRC-32 of the line's bytes", "checksum mismatch")


def line_record(line):
    """A journal line's record and the verdict of its checksum (docs/journal.md §2.1):
    (the record without the crc32 member, True) for a line whose checksum matches, (line, None)
    for a line without one, (line, False) for a line whose checksum does not match its bytes."""
    m = CRC_TAIL.fullmatch(line, len(line) - 20) if len(line) > 20 else None
    if m is None:
        return line, None
    if zlib.crc32(line[:-20]) != int(m.group(1), 16):
        return line, False
    return line[:-20] + b"}", True


def journal_lines(path, command="plan"):
    """(line number, record bytes, checksum verdict) of every complete line of a journal, as
    line_record gives them; an unterminated last line is an append in progress and is left out.
    Raises Unreadable."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise Unreadable("%s: journal: %s: cannot read: %s" % (command, path, e.strerror or e))
    lines = raw.split(b"\n")
    return [(n,) + line_record(line) for n, line in enumerate(lines[:-1], 1)]


def batch_spills(ring, shards, placements):
    """How many of one batch's changes would spill on `ring` (docs/contract.md §9): replayed in
    order, every load from 0."""
    by_id = {s["id"]: s for s in shards}
    load = {s["id"]: 0 for s in shards}
    spilled = 0
    for p in placements:
        h, point, vnode, shard, reason = ring.lookup(p["key"].encode("utf-8", "surrogatepass"))
        placed = spill_place(ring, by_id, load, {"hash": h, "shard": shard, "size": p["size"]})
        spilled += "home" in placed
        load[placed["shard"]] += p["size"]
    return spilled


def journal_movement(path, ring_from, ring_to, shards_to=None):
    """The journal block: changes, moved_changes, moved_load over every receipt record, and
    `spilled` when `shards_to` is given (the new contract's policy is spill)."""
    changes = moved = load = spilled = 0
    for number, line, checked in journal_lines(path):
        if checked is False:
            raise Unreadable("plan: journal: %s:%d: crc32: checksum mismatch" % (path, number))
        try:
            record = parse_json_bytes(line)
        except ValueError:
            raise Unreadable("plan: journal: %s:%d: not JSON" % (path, number))
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "epoch":
            continue
        if kind != "receipt":
            raise Unreadable("plan: journal: %s:%d: type: must be epoch or receipt"
                             % (path, number))
        receipt = record.get("receipt")
        placements = receipt.get("placements") if isinstance(receipt, dict) else None
        if not isinstance(placements, list):
            raise Unreadable("plan: journal: %s:%d: receipt.placements: must be an array"
                             % (path, number))
        for p in placements:
            key = p.get("key") if isinstance(p, dict) else None
            size = p.get("size") if isinstance(p, dict) else None
            if not isinstance(key, str) or not is_int(size, 0, 2**63 - 1):
                raise Unreadable("plan: journal: %s:%d: receipt.placements: each needs a string"
                                 " key and an integer size >= 0" % (path, number))
            kb = key.encode("utf-8", "surrogatepass")
            changes += 1
            if ring_from.lookup(kb)[3] != ring_to.lookup(kb)[3]:
                moved += 1
                load += size
        if shards_to is not None:
            spilled += batch_spills(ring_to, shards_to, placements)
    block = {"changes": changes, "moved_changes": moved, "moved_load": load}
    if shards_to is not None:
        block["spilled"] = spilled
    return block


def load_epoch_files(conf, shards_path):
    """(contract, shards, ring, epoch id) of a contract file and a shards file; raises Unusable."""
    if not conf:
        raise Unusable("contract: no contract file: pass --conf FILE or set SHARDGATE_CONF")
    contract = load_contract(conf)
    shards = load_shards(shards_path)
    check_ring_size(shards_path, contract["DISPATCH_VNODES"], shards)
    ring = Ring(contract["DISPATCH_RING_HASH"], contract["DISPATCH_VNODES"], shards)
    return contract, shards, ring, epoch_id(contract, shards)


def main_plan(argv):
    parser = argparse.ArgumentParser(
        prog="probe.py plan",
        description="The movement plan between two epochs (docs/contract.md §8), computed "
                    "independently of `shardgate plan`, same bytes.",
        epilog="Exit: 0 the plan printed; 2 a ring with no online shard, or the journal "
               "unreadable; 3 contract or shards unusable; 64 usage; 70 internal error.")
    parser.add_argument("--conf", default=os.environ.get("SHARDGATE_CONF"))
    parser.add_argument("--shards", required=True, help="the current membership")
    parser.add_argument("--to", required=True, help="the new membership")
    parser.add_argument("--to-conf", help="the new contract (default: --conf)")
    parser.add_argument("--journal", help="count the journal's changes that would move")
    args = parse_or_usage(parser, argv)
    try:
        _, shards_a, ring_a, epoch_a = load_epoch_files(args.conf, args.shards)
        contract_b, shards_b, ring_b, epoch_b = load_epoch_files(args.to_conf or args.conf,
                                                                 args.to)
    except Unusable as e:
        print(e, file=sys.stderr)
        return EXIT_UNUSABLE
    for which, ring in (("from", ring_a), ("to", ring_b)):
        if not ring.entries:
            print("plan: %s ring has no online shard" % which, file=sys.stderr)
            return EXIT_UNREADABLE
    ids = {s["id"] for s in shards_a} | {s["id"] for s in shards_b}
    result = plan(ring_a, ring_b, epoch_a, epoch_b, ids)
    if args.journal:
        try:
            spill = contract_b["DISPATCH_CAPACITY_POLICY"] == "spill"
            result["journal"] = journal_movement(args.journal, ring_a, ring_b,
                                                 shards_b if spill else None)
        except Unreadable as e:
            print(e, file=sys.stderr)
            return EXIT_UNREADABLE
    sys.stdout.write(plan_json(result) + "\n")
    return EXIT_OK

# ---------------------------------------------------------------- epoch chain (docs/contract.md §7)

EPOCH_KEYS = ("type", "epoch", "epoch_seq", "prev", "source", "time", "first_seq", "ring_id",
              "contract", "shards")
LEGACY_EPOCH_KEYS = ("type", "ring_id", "contract", "shards")
RECEIPT_RECORD_KEYS = ("type", "seq", "fingerprint", "receipt")
EPOCH_SOURCES = ("start", "sighup", "admin")
TIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
RECORD_PREFIX_RE = re.compile(
    rb'\{"type":"receipt","seq":(?:0|[1-9][0-9]*),"fingerprint":"[0-9a-f]{64}","receipt":')


def record_contract(value):
    """The contract of an epoch record (docs/journal.md §2) or raises ValueError."""
    if not isinstance(value, dict) or tuple(value) != CONTRACT_KEYS:
        raise ValueError("contract: must hold exactly %s in this order" % ",".join(CONTRACT_KEYS))
    for key in CONTRACT_KEYS:
        v = value[key]
        text = str(v) if key == "DISPATCH_VNODES" and is_int(v, 1, 4096) else v
        if not isinstance(text, str):
            raise ValueError('contract.%s: %s is not valid' % (key, show(v, 0)))
        try:
            _check_contract_value(key, text)
        except ValueError as e:
            raise ValueError("contract.%s" % e)
    return dict(value)


class Chain:
    """What the journal has shown so far: the epochs, by id and by ring id, and the last seq."""

    def __init__(self):
        self.count = 0
        self.previous = None  # the last epoch id
        self.by_epoch, self.by_ring = {}, {}
        self.last_seq = 0
        self.out = []

    def bad(self, number, field, expected, actual):
        self.out.append(("line %d: %s" % (number, field), expected, actual))


def check_epoch_fields(chain, number, rec, epoch, ring_id):
    """The chain rules of a full epoch record (docs/contract.md §7, docs/journal.md §2)."""
    want = (("epoch", epoch), ("epoch_seq", chain.count + 1), ("prev", chain.previous),
            ("first_seq", chain.last_seq + 1), ("ring_id", ring_id))
    for field, value in want:
        if not same(value, rec[field]):
            chain.bad(number, field, show(value, rec[field]), show(rec[field], value))
    if rec["source"] not in EPOCH_SOURCES:
        chain.bad(number, "source", "one of " + ", ".join(EPOCH_SOURCES), show(rec["source"], ""))
    if not (isinstance(rec["time"], str) and TIME_RE.fullmatch(rec["time"])):
        chain.bad(number, "time", "YYYY-MM-DDTHH:MM:SS.mmmZ", show(rec["time"], ""))


def chain_epoch(chain, number, rec):
    """One epoch record: recomputes its epoch id and ring id, checks the links, remembers it."""
    if tuple(rec) not in (EPOCH_KEYS, LEGACY_EPOCH_KEYS):
        chain.bad(number, "<keys>", ",".join(EPOCH_KEYS), ",".join(rec))
        return
    try:
        contract = record_contract(rec["contract"])
        shards = _check_membership({"shards": rec["shards"]})
        check_ring_size("epoch record", contract["DISPATCH_VNODES"], shards)
    except (ValueError, Unusable) as e:
        chain.bad(number, "epoch record", "a usable contract and membership", str(e))
        return
    if rec["shards"] != id_order(shards):
        chain.bad(number, "shards", "every shard in id order, weight written",
                  show(rec["shards"], 0))
    ring = Ring(contract["DISPATCH_RING_HASH"], contract["DISPATCH_VNODES"], shards)
    epoch = epoch_id(contract, shards)
    if len(rec) == len(EPOCH_KEYS):
        check_epoch_fields(chain, number, rec, epoch, ring.ring_id)
    elif not same(ring.ring_id, rec["ring_id"]):
        chain.bad(number, "ring_id", ring.ring_id, show(rec["ring_id"], ""))
    if epoch == chain.previous:
        chain.bad(number, "epoch", "an epoch other than the previous one", epoch)
    info = {"epoch": epoch, "ring_id": ring.ring_id, "contract": contract, "shards": shards}
    chain.count += 1
    chain.previous = epoch
    chain.by_epoch[epoch] = chain.by_ring[ring.ring_id] = info


def named_epoch(chain, number, receipt):
    """The earlier epoch record a receipt is judged with, or None (reported)."""
    if receipt_version_of(receipt) >= 2:
        epoch = receipt.get("epoch", MISSING)
        info = chain.by_epoch.get(epoch) if isinstance(epoch, str) else None
        if info is None:
            chain.bad(number, "receipt.epoch", "the epoch of an earlier epoch record",
                      show(epoch, ""))
        return info
    ring = receipt.get("ring")
    ring_id = ring.get("id", MISSING) if isinstance(ring, dict) else MISSING
    info = chain.by_ring.get(ring_id) if isinstance(ring_id, str) else None
    if info is None:
        chain.bad(number, "receipt.ring.id", "the ring of an earlier epoch record",
                  show(ring_id, ""))
    return info


def chain_receipt(chain, number, line, rec):
    """One receipt record: its seq, then the receipt against the epoch it names."""
    prefix = RECORD_PREFIX_RE.match(line)
    if tuple(rec) != RECEIPT_RECORD_KEYS or not prefix or not line.endswith(b"}"):
        chain.bad(number, "record", '{"type":"receipt","seq":N,"fingerprint":"<64 hex>",'
                  '"receipt":...}', repr(line[:60].decode("utf-8", "replace")))
        return
    if rec["seq"] != chain.last_seq + 1:
        chain.bad(number, "seq", str(chain.last_seq + 1), show(rec["seq"], 0))
    chain.last_seq = rec["seq"]
    receipt = rec["receipt"]
    info = named_epoch(chain, number, receipt) if isinstance(receipt, dict) else None
    if info is None:
        return
    raw = line[prefix.end():-1] + b"\n"
    for field, exp, act in verify(info["contract"], info["shards"], raw, receipt, None):
        chain.bad(number, "receipt." + field, exp, act)


def verify_chain(path):
    """Every complete line of the journal; returns the mismatches. Raises Unreadable."""
    chain = Chain()
    for number, line, checked in journal_lines(path, "chain"):
        if checked is False:
            chain.bad(number, *CRC_MISMATCH)
            continue
        try:
            rec = parse_json_bytes(line)
        except ValueError:
            chain.bad(number, "$", "a JSON record", "not JSON")
            continue
        kind = rec.get("type") if isinstance(rec, dict) else None
        if kind == "epoch":
            chain_epoch(chain, number, rec)
        elif kind == "receipt":
            chain_receipt(chain, number, line, rec)
        else:
            chain.bad(number, "type", "epoch or receipt", show(kind if kind else MISSING, ""))
    return chain.out


def main_chain(argv):
    parser = argparse.ArgumentParser(
        prog="probe.py chain",
        description="Verify a journal's epoch chain (docs/contract.md §7) and every receipt "
                    "in it against the contract and membership of the epoch it names.",
        epilog="Exit: 0 RESULT: OK; 1 RESULT: BAD (N mismatches) with one 'line N: field: "
               "expected X actual Y' line each; 2 the journal unreadable; 64 usage; 70 "
               "internal error. An unterminated last line (an append in progress) is not "
               "judged.")
    parser.add_argument("--journal", required=True, help="the journal (state/journal.jsonl)")
    args = parse_or_usage(parser, argv)
    try:
        mismatches = verify_chain(args.journal)
    except Unreadable as e:
        print(e, file=sys.stderr)
        return EXIT_UNREADABLE
    return report(mismatches)


# ---------------------------------------------------------------- journal (segments, checkpoints)

SEG_NAME_RE = re.compile(rb"journal-([0-9]{20})\.jsonl\Z")
CKPT_NAME_RE = re.compile(rb"checkpoint-([0-9]{20})\.json\Z")
CKPT_KEYS = ("type", "version", "last_seq", "segment", "offset", "index_seq", "epochs", "ledger",
             "totals", "sha256")


class SegChain(Chain):
    """Chain whose mismatch lines name the segment file: `journal-<F>.jsonl:N: field`."""

    def __init__(self):
        super().__init__()
        self.file = "journal.jsonl"

    def bad(self, number, field, expected, actual):
        self.out.append(("%s:%d: %s" % (self.file, number, field), expected, actual))


class Sums:
    """The chain as GET /v1/epochs lists it, the ledger and the per-epoch totals (spec of
    docs/journal.md §7), from the records read so far."""

    def __init__(self):
        self.epochs, self.meta, self.ledger, self.totals = [], {}, {}, {}
        self.by_name = {}  # epoch id / ring id -> epoch_seq

    def epoch(self, rec, chain_last_seq):
        legacy = "epoch" not in rec
        seq = len(self.epochs) + 1 if legacy else rec["epoch_seq"]
        epoch = (epoch_id(record_contract(rec["contract"]), rec["shards"]) if legacy
                 else rec["epoch"])
        prev = self.epochs[-1]["epoch"] if self.epochs else None
        self.epochs.append({"epoch": epoch, "ring": rec["ring_id"], "epoch_seq": seq,
                            "prev": prev if legacy else rec["prev"],
                            "source": "start" if legacy else rec["source"],
                            "time": None if legacy else rec["time"],
                            "first_seq": chain_last_seq + 1 if legacy else rec["first_seq"]})
        # a receipt counts under the latest record before it with the id it names, so a later
        # record with the same id (A -> B -> A) takes the name over (docs/journal.md §7)
        self.by_name[epoch] = self.by_name[rec["ring_id"]] = seq
        for sh in rec["shards"]:
            self.meta[sh["id"]] = (sh.get("weight", 1), sh["capacity"])
            self.ledger.setdefault(sh["id"], [0, 0])

    def receipt(self, receipt):
        ring = receipt.get("ring") if isinstance(receipt.get("ring"), dict) else {}
        name = receipt.get("epoch", ring.get("id"))
        seq = self.by_name.get(name, self.epochs[-1]["epoch_seq"] if self.epochs else 0)
        per = self.totals.setdefault(seq, {})
        for sid, sh in receipt.get("shards", {}).items():
            if sh.get("received", 0) == 0:
                continue
            for box in (per.setdefault(sid, [0, 0]), self.ledger.setdefault(sid, [0, 0])):
                box[0] += sh["load"]
                box[1] += sh["received"]

    def expected(self):
        def key(sid):
            return sid.encode()
        ledger = [{"id": i, "weight": self.meta.get(i, (None, None))[0],
                   "capacity": self.meta.get(i, (None, None))[1], "load": self.ledger[i][0],
                   "received": self.ledger[i][1]} for i in sorted(self.ledger, key=key)]
        totals = [{"epoch_seq": e,
                   "shards": [{"id": i, "load": per[i][0], "received": per[i][1]}
                              for i in sorted(per, key=key)]}
                  for e, per in sorted(self.totals.items())]
        return {"epochs": [dict(e) for e in self.epochs], "ledger": ledger, "totals": totals}


def read_archived(adir, entry):
    """The bytes of an archived segment from the archive dir (.zst through the zstd CLI)."""
    path = os.path.join(adir, entry["archived_as"])
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise Unreadable("journal: %s: cannot read: %s" % (path, e.strerror or e))
    if not path.endswith(".zst"):
        return raw
    import subprocess  # only for .zst: stdlib Python has no zstd (docs/tools.md §7)
    try:
        r = subprocess.run(["zstd", "-d", "-q", "-c"], input=raw, capture_output=True,
                           timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unreadable("journal: %s: cannot decompress: %s" % (path, e))
    if r.returncode != 0:
        raise Unreadable("journal: %s: not zstd data" % path)
    return r.stdout


def list_state(state_dir, adir):
    """[(name, first_seq, bytes)] of the segments in order (the active one last), and the
    checkpoints {name: bytes}. Raises Unreadable for an archived segment it cannot read."""
    try:
        names = os.listdir(os.fsencode(state_dir))
    except OSError as e:
        raise Unreadable("journal: %s: cannot list: %s" % (state_dir, e.strerror or e))
    segs, ckpts, archived = {}, {}, {}
    for n in names:
        m = SEG_NAME_RE.match(n)
        if m:
            segs[int(m.group(1))] = os.fsdecode(n)
        elif CKPT_NAME_RE.match(n):
            ckpts[os.fsdecode(n)] = None
    try:
        with open(os.path.join(state_dir, "archive.jsonl"), "rb") as f:
            for line in f.read().splitlines():
                entry = parse_json_bytes(line)
                archived[entry["first_seq"]] = entry
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Unreadable("journal: archive.jsonl: unreadable: %s" % e)
    out = []
    for first in sorted(set(segs) | set(archived)):
        if first in segs:
            out.append((segs[first], first, read_file(os.path.join(state_dir, segs[first]))))
            continue
        entry = archived[first]
        if adir is None:
            raise Unreadable("journal: %s: archived as %s, not verified: give --archive-dir"
                             % (entry["name"], entry["archived_as"]))
        raw = read_archived(adir, entry)
        if len(raw) != entry["bytes"] or hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            raise Unreadable("journal: %s: not the archived bytes (archive.jsonl's size and "
                             "sha256)" % entry["archived_as"])
        out.append((entry["name"], first, raw))
    out.append(("journal.jsonl", None, read_file(os.path.join(state_dir, "journal.jsonl"))))
    for n in ckpts:
        ckpts[n] = read_file(os.path.join(state_dir, n))
    return out, ckpts


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Unreadable("journal: %s: cannot read: %s" % (path, e.strerror or e))


def checkpoint_head(name, raw, out):
    """The checkpoint's JSON when its sha256, keys and name check out, else None (reported)."""
    key = b',"sha256":"'
    at = raw.rfind(key)
    if at < 0 or not raw.endswith(b'"}\n') or raw.count(b"\n") != 1:
        out.append((name + ": sha256", 'one line ending in ,"sha256":"<64 hex>"}', "other"))
        return None
    stated = raw[at + len(key):-3].decode("ascii", "replace")
    actual = hashlib.sha256(raw[:at]).hexdigest()
    if stated != actual:
        out.append((name + ": sha256", actual, stated))
        return None
    try:
        doc = parse_json_bytes(raw)
    except ValueError as e:
        out.append((name + ": $", "JSON", str(e)))
        return None
    if not isinstance(doc, dict) or tuple(doc) != CKPT_KEYS or doc["type"] != "checkpoint" \
            or doc["version"] != 1:
        out.append((name + ": <keys>", ",".join(CKPT_KEYS), ",".join(doc) if isinstance(doc, dict)
                    else show(doc, 0)))
        return None
    if doc["last_seq"] != int(name[11:31]) or doc["index_seq"] < doc["last_seq"]:
        out.append((name + ": last_seq", "the name's, <= index_seq", show(doc["last_seq"], 0)))
        return None
    return doc


def segment_header(chain, f, first, prev_sha, line, out):
    want = ('{"type":"segment","first_seq":%d,"prev":"%s"}' % (first, prev_sha)).encode()
    if line != want:
        out.append(("%s:1: header" % f, want.decode(), line.decode("utf-8", "replace")))


def seal_check(f, raw, at, line, last_seq, out):
    """The seal line at byte at; returns its sha256 (or None when it is not a seal)."""
    try:
        seal = parse_json_bytes(line)
    except ValueError:
        seal = None
    if not isinstance(seal, dict) or tuple(seal) != ("type", "last_seq", "bytes", "sha256"):
        out.append(("%s: seal" % f, '{"type":"seal","last_seq","bytes","sha256"} last', "none"))
        return None
    want = {"type": "seal", "last_seq": last_seq, "bytes": at,
            "sha256": hashlib.sha256(raw[:at]).hexdigest()}
    for k in ("last_seq", "bytes", "sha256"):
        if not same(want[k], seal[k]):
            out.append(("%s: seal.%s" % (f, k), show(want[k], seal[k]), show(seal[k], want[k])))
    return seal["sha256"]


class JournalRun:
    """The state of a probe.py journal run across segment files."""

    def __init__(self, ckpts):
        self.chain, self.sums, self.out = SegChain(), Sums(), []
        self.ckpts = ckpts  # (segment, offset) -> [(name, doc)]
        self.reached = set()
        self.latest_epoch = None
        self.receipts = 0

    def record(self, number, line):
        try:
            rec = parse_json_bytes(line)
        except ValueError:
            self.chain.bad(number, "$", "a JSON record", "not JSON")
            return
        kind = rec.get("type") if isinstance(rec, dict) else None
        if kind == "epoch":
            last = self.chain.last_seq
            chain_epoch(self.chain, number, rec)
            try:
                self.sums.epoch(rec, last)
            except (ValueError, KeyError, TypeError):
                pass  # reported by chain_epoch
            self.latest_epoch = line
        elif kind == "receipt":
            chain_receipt(self.chain, number, line, rec)
            self.receipts += 1
            if isinstance(rec.get("receipt"), dict):
                self.sums.receipt(rec["receipt"])
        else:
            self.chain.bad(number, "type", "epoch or receipt", show(kind if kind else MISSING, ""))

    def position(self, first, end):
        for name, doc in self.ckpts.get((first, end), []):
            self.reached.add(name)
            if doc["last_seq"] != self.chain.last_seq:
                self.out.append((name + ": segment/offset", "after seq %d" % doc["last_seq"],
                                 "after seq %d" % self.chain.last_seq))
                continue
            got = {k: doc[k] for k in ("epochs", "ledger", "totals")}
            compare(self.sums.expected(), got, "", self.out)
            self.out[:] = [(f if f.startswith("checkpoint-") or ":" in f else name + ": " + f, e, a)
                           for f, e, a in self.out]

    def segment(self, f, first, raw, sealed, prev_sha):
        """Reads one segment file; returns (its seal sha256 or None, the next first_seq)."""
        self.chain.file = f
        lines, at, seal = raw.split(b"\n"), 0, None
        if sealed and not raw.endswith(b"\n"):
            self.out.append(("%s: end" % f, "a seal line and a newline", "truncated"))
        complete = lines[:-1]
        form = None  # True: the segment's lines carry checksums, as its first line decides
        for number, line in enumerate(complete, 1):
            end = at + len(line) + 1
            line, checked = line_record(line)
            form = bool(checked) if form is None else form
            if checked is False or form != bool(checked):
                self.out.append(("%s:%d: crc32" % (f, number),) + (
                    CRC_MISMATCH[1:] if checked is False else
                    ("a crc32 member, as on the segment's first line", "none") if form else
                    ("none, as on the segment's first line", "a crc32 member")))
                at = end
                continue
            if first != 1 and number == 1:
                segment_header(self.chain, f, first, prev_sha, line, self.out)
            elif first != 1 and number == 2:
                if line != self.latest_epoch:
                    self.out.append(("%s:2: epoch repeat" % f, "the chain's latest epoch record",
                                     line[:60].decode("utf-8", "replace")))
            elif number == len(complete) and (sealed or line.startswith(b'{"type":"seal"')):
                # the active segment ends with its seal after a crash mid-rotation (docs/journal.md §6)
                seal = seal_check(f, raw, at, line, self.chain.last_seq, self.out)
            else:
                self.record(number, line)
            self.position(first, end)
            at = end
        return seal, self.chain.last_seq + 1


def verify_journal(state_dir, adir):
    segs, raw_ckpts = list_state(state_dir, adir)
    out, ckpts = [], {}
    for name, raw in sorted(raw_ckpts.items()):
        doc = checkpoint_head(name, raw, out)
        if doc is not None:
            ckpts.setdefault((doc["segment"], doc["offset"]), []).append((name, doc))
    run = JournalRun(ckpts)
    run.out = out
    expect, prev_sha = 1, None
    for f, first, raw in segs:
        sealed = first is not None
        first = expect if first is None else first
        if first != expect:
            out.append(("%s: first_seq" % f, str(expect), str(first)))
        prev_sha, expect = run.segment(f, first, raw, sealed, prev_sha or "")
    for docs in ckpts.values():
        for name, doc in docs:
            if name not in run.reached:
                out.append((name + ": segment/offset", "the end of a line in the journal",
                            "%d/%d" % (doc["segment"], doc["offset"])))
    out.extend(run.chain.out)
    return {"segments": len(segs), "receipts": run.receipts, "checkpoints": len(raw_ckpts)}, out


def main_journal(argv):
    parser = argparse.ArgumentParser(
        prog="probe.py journal",
        description="Verify a state dir's journal segments (their headers, epoch repeats, "
                    "seals and chain), every record, and the checkpoints' epochs, ledger and "
                    "per-epoch totals recomputed from the receipts (docs/tools.md §2).",
        epilog="Prints one JSON line {\"result\",\"segments\",\"receipts\",\"checkpoints\","
               "\"mismatches\"}. Exit: 0 ok; 1 bad; 2 unreadable, or an archived segment not "
               "verified (no --archive-dir); 64 usage; 70 internal error.")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--archive-dir")
    args = parse_or_usage(parser, argv)
    try:
        summary, mismatches = verify_journal(args.state_dir, args.archive_dir)
    except Unreadable as e:
        print(e, file=sys.stderr)
        return EXIT_UNREADABLE
    lines = ["%s: expected %s actual %s" % m for m in mismatches]
    print(json.dumps(dict({"result": "bad" if lines else "ok"}, **summary, mismatches=lines),
                     separators=(",", ":"), ensure_ascii=False))
    return EXIT_BAD if lines else EXIT_OK

# ---------------------------------------------------------------- main

def read_receipt(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise Unreadable("receipt: %s: cannot read: %s" % (path, e.strerror or e))
    try:
        return raw, parse_json_bytes(raw)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise Unreadable("receipt: %s: not JSON: %s" % (path, e))


def verify(contract, shards, raw, receipt, batch):
    """Returns the list of (field, expected, actual) mismatches."""
    out = []
    if batch is not None:
        batch_id, changes = batch
    else:
        changes = changes_from_receipt(receipt, out)
        batch_id = receipt.get("batch_id") if isinstance(receipt, dict) else None
        if not is_name(batch_id, 128):
            out.append(("batch_id", "1..128 bytes of [A-Za-z0-9._:-]",
                        show(batch_id if isinstance(receipt, dict) and "batch_id" in receipt
                             else MISSING, 0)))
            batch_id = MISSING
    expected = expected_receipt(contract, shards, batch_id, changes, receipt_version_of(receipt))
    if batch_id is MISSING:
        del expected["batch_id"]  # already reported; don't report it twice
    if not isinstance(receipt, dict):
        out.append(("$", "a receipt object", show(receipt, 0)))
        return out
    compare(expected, receipt, "", out)
    if not out:
        compare_bytes(canonical(expected), raw, out)
    else:
        compare_bytes(canonical(receipt), raw, out)  # formatting, independent of values
    return out


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="probe.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="probe.py [--conf CONF] --shards SHARDS --receipt RECEIPT [--batch BATCH]\n"
              "       probe.py plan ...     the movement plan between two epochs\n"
              "       probe.py chain ...    a journal's epoch chain and its receipts\n"
              "       probe.py journal ...  a state dir: segments, records, checkpoints\n"
              "       (each with --help)",
        description="Independently recompute a shardgate receipt (docs/contract.md §3, §5) from the "
                    "contract and the membership, and compare it field by field and byte by byte.",
        epilog="Exit: 0 RESULT: OK; 1 RESULT: BAD (N mismatches) with one "
               "'field: expected X actual Y' line each; 2 receipt or batch unreadable or not "
               "JSON; 3 contract or shards file unusable ('contract: <file>:<line>: <what>', "
               "'shards: <file>: <path>: <what>'); 64 usage; 70 internal error.\n"
               "A missing contract key is reported at the last line of the file.")
    parser.add_argument("--conf", default=os.environ.get("SHARDGATE_CONF"),
                        help="the contract (conf/dispatch.env); default $SHARDGATE_CONF")
    parser.add_argument("--shards", required=True, help="the membership (input/shards.json)")
    parser.add_argument("--receipt", required=True, help="the receipt to verify")
    parser.add_argument("--batch", help="the original batch: ids, keys, sizes and order must match")
    return parse_or_usage(parser, argv)


def parse_or_usage(parser, argv):
    """argparse, with exit 64 for a usage error (argparse's own is 2, which means BAD input)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as e:
        sys.exit(EXIT_USAGE if e.code not in (0, None) else 0)


SUBCOMMANDS = {}  # name -> main(argv); filled below the definitions


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])
    args = parse_args(argv)
    try:
        if not args.conf:
            raise Unusable("contract: no contract file: pass --conf FILE or set SHARDGATE_CONF")
        contract = load_contract(args.conf)
        shards = load_shards(args.shards)
        check_ring_size(args.shards, contract["DISPATCH_VNODES"], shards)
    except Unusable as e:
        print(e, file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        batch = load_batch(args.batch) if args.batch else None
        raw, receipt = read_receipt(args.receipt)
    except Unreadable as e:
        print(e, file=sys.stderr)
        return EXIT_UNREADABLE
    return report(verify(contract, shards, raw, receipt, batch))


def report(mismatches):
    """Prints the verdict; returns the exit code."""
    if not mismatches:
        print("RESULT: OK")
        return EXIT_OK
    print("RESULT: BAD (%d mismatches)" % len(mismatches))
    for field, exp, act in mismatches:
        print("%s: expected %s actual %s" % (field, exp, act))
    return EXIT_BAD


SUBCOMMANDS.update({"plan": main_plan, "chain": main_chain, "journal": main_journal})


if __name__ == "__main__":
    # Receipts may hold any string; a mismatch line must never crash on printing it.
    sys.stdout.reconfigure(errors="backslashreplace")
    try:
        sys.exit(main())
    except Exception as e:  # a crash must never read as exit 1, "the receipt is bad"
        print("probe: internal error: %r" % e, file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
