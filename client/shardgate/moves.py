"""The ranges that moved between two epochs of a state dir's journal (docs/tools.md §1.4): the
plan with its ranges between the contracts and memberships of their epoch records, read here
independently of the gateway's `shardgate moves`."""

import os
from typing import Any

from .contract import Unreadable, Unusable, check_membership, check_ring_size, parse_json_bytes
from .plan import plan, state_dir_lines
from .ring import epoch_id, make_ring
from .verify import record_contract

__all__ = ["MovesUnavailable", "epoch_records", "moves_between"]

EPOCH_PREFIX = b'{"type":"epoch"'
HEADER_PREFIX = b'{"type":"segment"'


class MovesUnavailable(Exception):
    """No moves between the two epochs: one is not in the segments present, a ring is empty,
    or no plan can be made between them. The message is the whole line."""


def epoch_records(state_dir: str, wanted: list[int]) -> dict[int, Any]:
    """epoch_seq -> (contract, shards) of each wanted epoch, from the segments present in
    journal order; an epoch record right after a segment header is that segment's repeat and is
    not counted, and a legacy record's epoch_seq is its place among the others. The walk stops
    once every wanted epoch is found. Raises Unreadable (a damaged line) or Unusable."""
    found: dict[int, Any] = {}
    count, after_header = 0, False
    for name, number, line, checked in state_dir_lines(os.path.join(state_dir, "journal.jsonl")):
        if checked is False:
            raise Unreadable("moves: journal: %s:%d: crc32: checksum mismatch" % (name, number))
        repeat, after_header = after_header, line.startswith(HEADER_PREFIX)
        if not line.startswith(EPOCH_PREFIX) or repeat:
            continue
        count += 1
        try:
            rec = parse_json_bytes(line)
        except ValueError:
            raise Unreadable("moves: journal: %s:%d: epoch record: not JSON" % (name, number))
        seq = rec.get("epoch_seq", count)
        if seq not in wanted or seq in found:
            continue
        try:
            contract = record_contract(rec.get("contract"))
            shards = check_membership({"shards": rec.get("shards")})
            check_ring_size("epoch record", contract, shards)
        except (ValueError, Unusable) as e:
            raise Unusable("moves: journal: %s:%d: %s" % (name, number, e))
        found[seq] = (contract, shards)
        if all(w in found for w in wanted):
            break
    return found


def moves_between(state_dir: str, seq_from: int, seq_to: int) -> dict[str, Any]:
    """The plan with its ranges from epoch seq_from to epoch seq_to (docs/tools.md §1.1).
    Raises MovesUnavailable, Unreadable or Unusable."""
    found = epoch_records(state_dir, [seq_from, seq_to])
    for seq in (seq_from, seq_to):
        if seq not in found:
            raise MovesUnavailable(
                "moves: %s: no epoch record with epoch_seq %d in the segments present (GET "
                "/v1/epochs lists the chain; an archived segment's are not read)" % (state_dir, seq))
    (ca, sa), (cb, sb) = found[seq_from], found[seq_to]
    ring_a, ring_b = make_ring(ca, sa), make_ring(cb, sb)
    if type(ring_a) is not type(ring_b) or (hasattr(ring_a, "size") and ring_a.size != ring_b.size):
        raise MovesUnavailable("moves: plan: no plan between two algorithms or between tables of "
                               "two sizes: their places share no unit of the hash space "
                               "(docs/contract.md §11)")
    for which, ring in (("from", ring_a), ("to", ring_b)):
        if not ring.online:
            raise MovesUnavailable("moves: plan: %s ring has no online shard" % which)
    ids = {s["id"] for s in sa} | {s["id"] for s in sb}
    return plan(ring_a, ring_b, epoch_id(ca, sa), epoch_id(cb, sb), ids, True)
