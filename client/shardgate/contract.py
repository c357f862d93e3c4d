"""The contract and the membership, read strictly (docs/contract.md §1, §2), and the JSON
rules every reader of shardgate's files shares: UTF-8, no duplicate keys, no NaN."""

import json
import re
from typing import Any

__all__ = ["Contract", "Shard", "Mismatch", "Unusable", "Unreadable", "CONTRACT_KEYS",
           "contract_keys", "is_prime", "MAX_JUMP_SLOTS", "JUMP_VNODES", "load_contract", "check_contract_value", "load_shards",
           "check_membership",
           "check_ring_size", "parse_json_bytes", "canonical", "is_int", "is_name"]

Contract = dict[str, Any]  # DISPATCH_* key -> value (the sizing key an int)
Shard = dict[str, Any]  # {"id", "state", "capacity", "weight"}, weight defaulted to 1
Mismatch = tuple[str, str, str]  # (field, expected, actual), one line of a BAD verdict

CONTRACT_KEYS = ("DISPATCH_HASH_RING", "DISPATCH_VNODES", "DISPATCH_MAGLEV_TABLE",
                 "DISPATCH_JUMP_SLOTS", "DISPATCH_RING_HASH",
                 "DISPATCH_CAPACITY_POLICY")  # every key a file may hold
SIZE_KEYS = {"ketama": "DISPATCH_VNODES", "maglev": "DISPATCH_MAGLEV_TABLE",
             "jump": "DISPATCH_JUMP_SLOTS"}
MAX_MAGLEV_TABLE = 16777213  # the largest prime below 2^24 (docs/contract.md §1)
MAX_JUMP_SLOTS = 2**24
# the points a unit of weight of the ring a jump table is drawn from (docs/contract.md §10)
JUMP_VNODES = 160
SHARD_STATES = ("online", "draining", "offline")
SHARD_FIELDS = ("id", "state", "capacity", "weight")
NAME_RE = re.compile(r"[A-Za-z0-9._:-]+")
MAX_SAFE_INT = 2**53 - 1
MAX_RING_POINTS = 2**24  # rule R2 (docs/contract.md, Membership)
RECEIPT_VERSIONS = (1, 2)  # 2 names the epoch (docs/contract.md §5, §7); 1 still verifies


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


def is_prime(n: int) -> bool:
    """True when n is a prime."""
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def _prime_value(text):
    value = _int_value(text, 2, MAX_MAGLEV_TABLE)
    return value if value is not None and is_prime(value) else None


VALUE_RULES = {  # key: (allowed values or a parser of the text, "is not ..." text)
    "DISPATCH_HASH_RING": (("ketama", "maglev", "jump"), "one of ketama, maglev, jump"),
    "DISPATCH_VNODES": (lambda v: _int_value(v, 1, 4096), "an integer 1..4096"),
    "DISPATCH_MAGLEV_TABLE": (_prime_value, "a prime 2..%d" % MAX_MAGLEV_TABLE),
    "DISPATCH_JUMP_SLOTS": (lambda v: _int_value(v, 1, MAX_JUMP_SLOTS),
                            "an integer 1..%d" % MAX_JUMP_SLOTS),
    "DISPATCH_RING_HASH": (("sha1", "md5"), "one of sha1, md5"),
    "DISPATCH_CAPACITY_POLICY": (("report", "reject", "spill"), "one of report, reject, spill"),
}


def check_contract_value(key: str, value: str) -> str | int:
    """Returns the parsed value or raises ValueError with what is wrong."""
    allowed, wanted = VALUE_RULES[key]
    parsed = allowed(value) if callable(allowed) else (value if value in allowed else None)
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


def load_contract(path: str) -> Contract:
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
            contract[key] = check_contract_value(key, value)
        except ValueError as e:
            raise Unusable("contract: %s:%d: %s" % (path, number, e))
    _check_complete(path, contract, seen, len(lines))
    return {key: contract[key] for key in contract_keys(contract)}


def contract_keys(contract: Contract) -> tuple[str, ...]:
    """The four keys of a contract in the epoch id's order (docs/contract.md §7): the ring, the
    key that sizes it (DISPATCH_VNODES, DISPATCH_MAGLEV_TABLE or DISPATCH_JUMP_SLOTS), hash,
    policy."""
    size_key = SIZE_KEYS.get(contract.get("DISPATCH_HASH_RING"), "DISPATCH_VNODES")
    return ("DISPATCH_HASH_RING", size_key, "DISPATCH_RING_HASH", "DISPATCH_CAPACITY_POLICY")


def _check_complete(path, contract, seen, last_line):
    """Every key of the algorithm and no sizing key of another, the first in key order named;
    spill needs ketama (docs/contract.md §1, §9). A missing key has no line of its own: the end
    of the file is named."""
    if "DISPATCH_HASH_RING" not in contract:
        raise Unusable("contract: %s:%d: missing required key DISPATCH_HASH_RING"
                       % (path, last_line))
    ring = contract["DISPATCH_HASH_RING"]
    others = [key for key in CONTRACT_KEYS if key in SIZE_KEYS.values() and key != SIZE_KEYS[ring]]
    for other in others:
        if other in seen:
            raise Unusable("contract: %s:%d: %s is not a key of DISPATCH_HASH_RING=%s"
                           % (path, seen[other], other, ring))
    for key in CONTRACT_KEYS:
        if key not in others and key not in contract:
            raise Unusable("contract: %s:%d: missing required key %s" % (path, last_line, key))
    if ring != "ketama" and contract["DISPATCH_CAPACITY_POLICY"] == "spill":
        raise Unusable("contract: %s:%d: DISPATCH_CAPACITY_POLICY: spill needs "
                       "DISPATCH_HASH_RING=ketama" % (path, seen["DISPATCH_CAPACITY_POLICY"]))


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


def parse_json_bytes(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, no duplicate keys. Raises ValueError."""
    text = raw.decode("utf-8")
    return json.loads(text, object_pairs_hook=_pairs_no_duplicates,
                      parse_constant=_reject_constant)


def is_int(value: Any, lo: int, hi: int) -> bool:
    """An int (not a bool, not a float) in lo..hi."""
    return type(value) is int and lo <= value <= hi


def is_name(value: Any, max_len: int) -> bool:
    """A string of [A-Za-z0-9._:-] of at most max_len UTF-8 bytes."""
    return (isinstance(value, str) and NAME_RE.fullmatch(value) is not None
            and len(value.encode("utf-8")) <= max_len)


def canonical(obj: Any) -> str:
    """The compact JSON form the gateway writes, with its newline (docs/contract.md §5)."""
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


def check_membership(doc: Any) -> list[Shard]:
    """The shards of a parsed membership document; raises ValueError("<path>: <what>")."""
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


def load_shards(path: str) -> list[Shard]:
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
        return check_membership(doc)
    except ValueError as e:
        raise Unusable("shards: %s: %s" % (path, e))


def check_ring_size(path: str, contract: Contract, shards: list[Shard]) -> None:
    """Rule R2 (docs/contract.md, Membership): walking shards[] in file order, vnodes * weight
    summed over online shards stays <= 2^24 points (under jump, 160 points a unit of weight);
    under maglev, the online shards counted stay <= DISPATCH_MAGLEV_TABLE. Raises Unusable
    naming the first over."""
    if contract["DISPATCH_HASH_RING"] == "maglev":
        table, online = contract["DISPATCH_MAGLEV_TABLE"], 0
        for i, shard in enumerate(shards):
            online += shard["state"] == "online"
            if online > table:
                raise Unusable("shards: %s: shards[%d].state: more online shards than "
                               "DISPATCH_MAGLEV_TABLE (%d)" % (path, i, table))
        return
    vnodes = contract.get("DISPATCH_VNODES", JUMP_VNODES)
    points = 0
    for i, shard in enumerate(shards):
        if shard["state"] == "online":
            points += vnodes * shard["weight"]
            if points > MAX_RING_POINTS:
                raise Unusable("shards: %s: shards[%d].weight: ring exceeds %d points"
                               % (path, i, MAX_RING_POINTS))
