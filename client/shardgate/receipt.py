"""The receipt (docs/contract.md §5): the one the contract and membership give for a batch,
and a field-by-field and byte-by-byte comparison with one that was written."""

import json
from typing import Any

from .contract import (MAX_SAFE_INT, RECEIPT_VERSIONS, Contract, Mismatch, Shard, Unreadable,
                       canonical, is_int, is_name, parse_json_bytes)
from .ring import epoch_id, id_order, make_ring, spill_place

__all__ = ["expected_receipt", "receipt_version_of", "compare", "compare_bytes",
           "changes_from_receipt", "load_batch", "read_receipt"]

MISSING = object()

# ---------------------------------------------------------------- the receipt (docs/contract.md §5)

def expected_receipt(contract: Contract, shards: list[Shard], batch_id: Any,
                     changes: list[dict[str, Any]], version: int = 2) -> dict[str, Any]:
    """The receipt the gateway must have written for these changes, keys in docs/contract.md §5
    order: version 2 names the epoch after batch_id, version 1 has no epoch key."""
    ring = make_ring(contract, shards)
    by_id = {s["id"]: s for s in shards}
    load = {s["id"]: 0 for s in shards}
    received = {s["id"]: 0 for s in shards}
    placements, dispatched, spilled = [], 0, 0
    spill = contract["DISPATCH_CAPACITY_POLICY"] == "spill"
    for change in changes:
        if "unplaceable" in change:  # already reported; counted, never dispatched
            placements.append(change["unplaceable"])
            continue
        placements.append(ring.placement(change))
        shard = placements[-1]["shard"]
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
        "ring": ring.summary(),
        "placements": placements,
        "shards": shard_section,
        "capacity": sum(s["capacity"] for s in ring.online),
        "counts": counts,
        "ok": dispatched == len(changes) and over_count == 0,
    })
    return receipt


def receipt_version_of(receipt: Any) -> int:
    """The version the receipt is judged as: the one it claims when it is a known one, else 2
    when it has an `epoch` key and 1 when not (so an unknown version is one mismatch line)."""
    if not isinstance(receipt, dict):
        return RECEIPT_VERSIONS[-1]
    claimed = receipt.get("receipt_version")
    if type(claimed) is int and claimed in RECEIPT_VERSIONS:
        return claimed
    return 2 if "epoch" in receipt else 1


# ---------------------------------------------------------------- comparison

def show(value: Any, other: Any) -> str:
    """A value for a mismatch line: strings bare unless the other side is not a string."""
    if value is MISSING:
        return "<missing>"
    if isinstance(value, str) and (other is MISSING or isinstance(other, str)):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def same(a: Any, b: Any) -> bool:
    """Equality that also requires the same JSON type (8 != 8.0, 1 != true)."""
    if a is MISSING or b is MISSING:
        return a is b
    return canonical(a) == canonical(b)


def join(path: str, key: str) -> str:
    """The path of a member: path.key, or key at the top."""
    return "%s.%s" % (path, key) if path else key


def compare(expected: Any, actual: Any, path: str, out: list[Mismatch]) -> None:
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


def compare_bytes(expected_text: str, raw: bytes, out: list[Mismatch]) -> None:
    """Reports the first byte where the receipt differs from the canonical form."""
    want = expected_text.encode("utf-8", "surrogatepass")
    if want == raw:
        return
    at = next((i for i, (a, b) in enumerate(zip(want, raw)) if a != b), min(len(want), len(raw)))
    out.append(("bytes[%d]" % at, repr(want[at:at + 24].decode("utf-8", "replace")),
                repr(raw[at:at + 24].decode("utf-8", "replace"))))


# ---------------------------------------------------------------- changes

def utf8_len(value: Any) -> int | None:
    """Byte length of a JSON string, or None for a non-string or one with lone surrogates."""
    try:
        return len(value.encode("utf-8")) if isinstance(value, str) else None
    except UnicodeEncodeError:
        return None


def _len_in(value, lo, hi):
    n = utf8_len(value)
    return n is not None and lo <= n <= hi


def changes_from_receipt(receipt: Any, out: list[Mismatch]) -> list[dict[str, Any]]:
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


def load_batch(path: str) -> tuple[str, list[dict[str, Any]]]:
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


def read_receipt(path: str) -> tuple[bytes, Any]:
    """A receipt file's bytes and its JSON; raises Unreadable."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise Unreadable("receipt: %s: cannot read: %s" % (path, e.strerror or e))
    try:
        return raw, parse_json_bytes(raw)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise Unreadable("receipt: %s: not JSON: %s" % (path, e))
