"""The movement plan between two memberships (docs/contract.md §8), and how many of a
journal's changes it moves."""

import json
import os
from typing import Any, Iterable

from .contract import Shard, Unreadable, is_int, parse_json_bytes
from .journal import journal_lines
from .ring import MaglevRing, Ring, spill_place

__all__ = ["plan", "plan_json", "journal_movement", "moves", "owner_changed"]

# ---------------------------------------------------------------- movement plan (docs/contract.md §8)

HASH_SPACE = 2**32


def owner_of(ring: Ring, h: int) -> str | None:
    """The shard id owning hash value h: the first point >= h, else point 0."""
    return ring.lookup_hash(h)[2]


def plan(ring_from: Ring, ring_to: Ring, from_epoch: str, to_epoch: str,
         shard_ids: Iterable[str], with_ranges: bool = False) -> dict[str, Any]:
    """The plan as an ordered dict (docs/tools.md §1). Independent of the gateway's walk: each
    arc ends at a distinct point value of either ring, and its owners are looked up by bisect;
    two Maglev or jump tables of one size are compared slot by slot, a slot an arc
    (docs/contract.md §11, §10)."""
    before = {i: 0 for i in shard_ids}
    after = dict(before)
    pairs = {}
    ranges: list[dict[str, Any]] = []  # [lo, hi) of consecutive moved values, one pair each
    space, owners = HASH_SPACE, []
    if isinstance(ring_from, MaglevRing):
        space = ring_from.size
        owners = [(s, s, ring_from.online[a]["id"], ring_to.online[b]["id"])
                  for s, (a, b) in enumerate(zip(ring_from.table, ring_to.table))]
    else:
        ends = sorted(set(ring_from.values) | set(ring_to.values))
        arcs = [(0 if k == 0 else ends[k - 1] + 1, v) for k, v in enumerate(ends)]
        if ends[-1] < HASH_SPACE - 1:
            arcs.append((ends[-1] + 1, HASH_SPACE - 1))
        owners = [(lo, hi, owner_of(ring_from, hi), owner_of(ring_to, hi)) for lo, hi in arcs]
    for lo, hi, a, b in owners:
        before[a] += hi - lo + 1
        after[b] += hi - lo + 1
        if a != b:
            pairs[(a, b)] = pairs.get((a, b), 0) + hi - lo + 1
            last = ranges[-1] if ranges else None
            if last and last["hi"] == lo and (last["from"], last["to"]) == (a, b):
                last["hi"] = hi + 1
            else:
                ranges.append({"lo": lo, "hi": hi + 1, "from": a, "to": b})
    moved = sum(pairs.values())
    # the least any remapping to the same shares could move: what the losing shards lose
    minimum = sum(max(0, before[i] - after[i]) for i in before)
    order = sorted(pairs, key=lambda ab: (ab[0].encode("utf-8"), ab[1].encode("utf-8")))
    result: dict[str, Any] = {
        "from_epoch": from_epoch, "to_epoch": to_epoch,
        "from_ring": ring_from.ring_id, "to_ring": ring_to.ring_id}
    if space != HASH_SPACE:
        result["slots"] = space
    result.update({
        "moved_points": moved,
        "moved_fraction": RawNumber("%.9f" % (moved / space)),
        "minimum_points": minimum,
        "minimum_fraction": RawNumber("%.9f" % (minimum / space)),
        "pairs": [{"from": a, "to": b, "moved_points": pairs[(a, b)]} for a, b in order],
        "shards": [{"id": i, "before": before[i], "after": after[i]}
                   for i in sorted(shard_ids, key=lambda i: i.encode("utf-8"))],
    })
    if with_ranges:
        result["ranges"] = ranges
    return result


def moves(ring_from: Ring, ring_to: Ring) -> list[dict[str, Any]]:
    """Every range [lo, hi) of 32-bit key hashes whose shard changes from ring_from to ring_to,
    with the shard it leaves and the one it goes to, ascending (docs/contract.md §8)."""
    ids = {s["id"] for s in ring_from.online} | {s["id"] for s in ring_to.online}
    return plan(ring_from, ring_to, "", "", ids, True)["ranges"]


def owner_changed(key: bytes, ring_from: Ring, ring_to: Ring) -> bool:
    """True when `key` is placed on another shard by ring_to than by ring_from, each hashing it
    with its own contract's hash (docs/contract.md §3)."""
    return ring_from.owner(key) != ring_to.owner(key)


class RawNumber(str):
    """A number written exactly as its text (moved_fraction's 9 decimals)."""


def plan_json(obj: Any) -> str:
    """Compact JSON like canonical(), with RawNumber values written bare."""
    if isinstance(obj, RawNumber):
        return str(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(json.dumps(k) + ":" + plan_json(v) for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(plan_json(v) for v in obj) + "]"
    return json.dumps(obj, ensure_ascii=False)


def batch_spills(ring: Ring, shards: list[Shard], placements: list[dict[str, Any]]) -> int:
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


def state_dir_lines(path: str) -> list[tuple[str, int, bytes, bool | None]]:
    """(file, line number, record bytes, checksum verdict) of every complete line of the state
    dir of journal `path`: its sealed segments present (journal-<F>.jsonl, in order), then
    `path` (docs/journal.md §6). In a file whose first line carries a crc32 member every line
    must carry one that matches (docs/journal.md §2.1): one without counts as a mismatch."""
    d = os.path.dirname(path) or "."
    try:
        sealed = sorted(n for n in os.listdir(d)
                        if n.startswith("journal-") and n.endswith(".jsonl"))
    except OSError:
        sealed = []
    out = []
    for name in [os.path.join(d, n) for n in sealed] + [path]:
        lines = journal_lines(name)
        checked = bool(lines) and lines[0][2] is not None
        out += [(name, n, line, False if checked and verdict is None else verdict)
                for n, line, verdict in lines]
    return out


def journal_movement(path: str, ring_from: Ring, ring_to: Ring,
                     shards_to: list[Shard] | None = None) -> dict[str, int]:
    """The journal block: changes, moved_changes, moved_load over every receipt record, and
    `spilled` when `shards_to` is given (the new contract's policy is spill)."""
    changes = moved = load = spilled = 0
    for name, number, line, checked in state_dir_lines(path):
        if checked is False:
            raise Unreadable("plan: journal: %s:%d: crc32: checksum mismatch" % (name, number))
        try:
            record = parse_json_bytes(line)
        except ValueError:
            raise Unreadable("plan: journal: %s:%d: not JSON" % (name, number))
        kind = record.get("type") if isinstance(record, dict) else None
        if kind in ("epoch", "segment", "seal"):
            continue
        if kind != "receipt":
            raise Unreadable("plan: journal: %s:%d: type: must be epoch or receipt"
                             % (name, number))
        receipt = record.get("receipt")
        placements = receipt.get("placements") if isinstance(receipt, dict) else None
        if not isinstance(placements, list):
            raise Unreadable("plan: journal: %s:%d: receipt.placements: must be an array"
                             % (name, number))
        for p in placements:
            key = p.get("key") if isinstance(p, dict) else None
            size = p.get("size") if isinstance(p, dict) else None
            if not isinstance(key, str) or not is_int(size, 0, 2**63 - 1):
                raise Unreadable("plan: journal: %s:%d: receipt.placements: each needs a string"
                                 " key and an integer size >= 0" % (name, number))
            kb = key.encode("utf-8", "surrogatepass")
            changes += 1
            if ring_from.owner(kb) != ring_to.owner(kb):
                moved += 1
                load += size
        if shards_to is not None:
            spilled += batch_spills(ring_to, shards_to, placements)
    block = {"changes": changes, "moved_changes": moved, "moved_load": load}
    if shards_to is not None:
        block["spilled"] = spilled
    return block
