"""The ketama ring (docs/contract.md §3): points, ring id, epoch id, lookup by bisect, and
the spill walk (docs/contract.md §9); the Maglev table (docs/contract.md §11) and jump
(docs/contract.md §10). Written from the contract, independent of the gateway."""

import bisect
import hashlib
import struct
from typing import Any

from .contract import JUMP_VNODES, Contract, Shard, contract_keys, is_prime

__all__ = ["Ring", "MaglevRing", "JumpRing", "make_ring", "key_hash", "shard_points", "epoch_id", "id_order",
           "online_shards", "spill_place", "jump", "key_u64", "maglev_table"]

# ---------------------------------------------------------------- the ring (docs/contract.md §3)

def digest(algorithm: str, data: bytes) -> bytes:
    """The SHA-1 or MD5 digest of data."""
    return hashlib.new(algorithm, data).digest()


def le32(d: bytes, offset: int) -> int:
    """The little-endian 32-bit word at offset."""
    return struct.unpack_from("<I", d, offset)[0]


def key_hash(algorithm: str, key_bytes: bytes) -> int:
    """A key's hash: the first little-endian word of its digest."""
    return le32(digest(algorithm, key_bytes), 0)


def shard_points(algorithm: str, shard_id: str, count: int) -> list[tuple[int, int]]:
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


def epoch_id(contract: Contract, shards: list[Shard]) -> str:
    """The epoch id (docs/contract.md §7): SHA-1 of the contract and the whole membership."""
    text = "shardgate-epoch\n"
    text += "".join("%s=%s\n" % (key, contract[key]) for key in contract_keys(contract))
    text += "".join("%s %s %d %d\n" % (s["id"], s["state"], s["capacity"], s["weight"])
                    for s in id_order(shards))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def id_order(shards: list[Shard]) -> list[Shard]:
    """The shards sorted by the bytes of their ids."""
    return sorted(shards, key=lambda s: s["id"].encode("utf-8"))


def online_shards(shards: list[Shard]) -> list[Shard]:
    """The shards on the ring, in id order."""
    # A whitelist: only `online` is in the ring, never "everything but offline".
    return [s for s in id_order(shards) if s["state"] == "online"]


class Ring:
    """Sorted (value, shard id bytes, vnode) points with a bisect lookup."""

    def __init__(self, algorithm: str, vnodes: int, shards: list[Shard]) -> None:
        """The ring of the online shards of a membership."""
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
    def vnodes_total(self) -> int:
        """The number of points on the ring."""
        return sum(self.vnodes * s["weight"] for s in self.online)

    @property
    def ring_id(self) -> str:
        """The ring id: SHA-1 of the hash, vnodes and the online shards' ids and weights."""
        text = "ketama\n%s\n%d\n" % (self.algorithm, self.vnodes)
        text += "".join("%s %d\n" % (s["id"], s["weight"]) for s in self.online)
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def lookup_hash(self, h: int) -> tuple[int | None, int | None, str | None, str | None]:
        """Returns (point, vnode, shard id, reason); all None on an empty ring."""
        if not self.entries:
            return None, None, None, None
        i = bisect.bisect_left(self.values, h)  # the first value >= h
        reason = "ring"
        if i == len(self.entries):
            i, reason = 0, "wrap"
        value, id_bytes, vnode = self.entries[i]
        return value, vnode, id_bytes.decode("utf-8"), reason

    def lookup(self, key_bytes: bytes) -> tuple[int, int | None, int | None, str | None, str | None]:
        """Returns (hash, point, vnode, shard id, reason) of a key."""
        h = key_hash(self.algorithm, key_bytes)
        return (h,) + self.lookup_hash(h)

    def owner(self, key_bytes: bytes) -> str | None:
        """The shard id a key lands on; None when no shard is online."""
        return self.lookup(key_bytes)[3]

    def placement(self, change: dict[str, Any]) -> dict[str, Any]:
        """A change's placement as a receipt lists it (docs/contract.md §5)."""
        h, point, vnode, shard, reason = self.lookup(change["key"].encode("utf-8"))
        return {"id": change["id"], "key": change["key"], "size": change["size"], "hash": h,
                "point": point, "vnode": vnode, "shard": shard, "reason": reason}

    def summary(self) -> dict[str, Any]:
        """The receipt's ring object (docs/contract.md §5)."""
        return {"id": self.ring_id, "algorithm": "ketama", "hash": self.algorithm,
                "vnodes": self.vnodes, "vnodes_total": self.vnodes_total,
                "online": [s["id"] for s in self.online]}


class MaglevRing:
    """The Maglev table of the online shards (docs/contract.md §11): a key's slot is the LE64 of
    its digest mod the table size, and its shard the slot's owner."""

    name = "maglev"

    def __init__(self, algorithm: str, size: int, shards: list[Shard]) -> None:
        """The table of `size` slots of the online shards of a membership."""
        self.algorithm = algorithm
        self.size = size
        self.online = online_shards(shards)
        self.table = self._draw() if self.online else []

    def _draw(self) -> list[int]:
        """The owner of each slot, an index into self.online: Maglev's fill."""
        ids = [(s["id"].encode("utf-8"), s["weight"]) for s in self.online]
        return maglev_table(ids, self.size, self.algorithm)

    def slot(self, key_bytes: bytes) -> int:
        """The slot of a key."""
        return key_u64(self.algorithm, key_bytes) % self.size

    @property
    def ring_id(self) -> str:
        """SHA-1 of the algorithm, the hash, the slots and the online shards' ids and weights."""
        text = "%s\n%s\n%d\n" % (self.name, self.algorithm, self.size)
        text += "".join("%s %d\n" % (s["id"], s["weight"]) for s in self.online)
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def lookup(self, key_bytes: bytes) -> tuple[int, str | None]:
        """Returns (slot, shard id) of a key; the shard is None when no shard is online."""
        slot = self.slot(key_bytes)
        return slot, self.online[self.table[slot]]["id"] if self.table else None

    def owner(self, key_bytes: bytes) -> str | None:
        """The shard id a key lands on; None when no shard is online."""
        return self.lookup(key_bytes)[1]

    def placement(self, change: dict[str, Any]) -> dict[str, Any]:
        """A change's placement as a receipt lists it: its slot, shard, reason "table"."""
        slot, shard = self.lookup(change["key"].encode("utf-8"))
        return {"id": change["id"], "key": change["key"], "size": change["size"], "slot": slot,
                "shard": shard, "reason": "table"}

    def summary(self) -> dict[str, Any]:
        """The receipt's ring object under maglev or jump (docs/contract.md §11, §10)."""
        return {"id": self.ring_id, "algorithm": self.name, "hash": self.algorithm,
                "table": self.size, "online": [s["id"] for s in self.online]}


class JumpRing(MaglevRing):
    """Jump onto a fixed number of slots (docs/contract.md §10): a key's slot is jump of its
    LE64 over the slots; slot s belongs to the owner of hash value floor(s * 2^32 / slots) on
    the ketama ring of the online shards with 160 points per unit of weight."""

    name = "jump"

    def _draw(self) -> list[int]:
        """The owner of each slot: the ketama owner of the slot's start."""
        ketama = Ring(self.algorithm, JUMP_VNODES, self.online)
        index = {s["id"]: i for i, s in enumerate(self.online)}
        return [index[ketama.lookup_hash((s << 32) // self.size)[2]] for s in range(self.size)]

    def slot(self, key_bytes: bytes) -> int:
        """The slot of a key."""
        return jump(key_u64(self.algorithm, key_bytes), self.size)


def make_ring(contract: Contract, shards: list[Shard]) -> "Ring | MaglevRing":
    """The ring a contract names, of the online shards of a membership."""
    if contract["DISPATCH_HASH_RING"] == "maglev":
        return MaglevRing(contract["DISPATCH_RING_HASH"], contract["DISPATCH_MAGLEV_TABLE"], shards)
    if contract["DISPATCH_HASH_RING"] == "jump":
        return JumpRing(contract["DISPATCH_RING_HASH"], contract["DISPATCH_JUMP_SLOTS"], shards)
    return Ring(contract["DISPATCH_RING_HASH"], contract["DISPATCH_VNODES"], shards)


# ---------------------------------------------------------------- spill (docs/contract.md §9)

def spill_place(ring: Ring, by_id: dict[str, Shard], load: dict[str, int],
                placement: dict[str, Any]) -> dict[str, Any]:
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


# ------------------------------------------------- jump consistent hash (docs/contract.md §10)

def jump(key: int, buckets: int) -> int:
    """The bucket in [0, buckets) of a 64-bit key by Lamping and Veach's jump consistent hash
    (-1 for no bucket): their linear congruential step, then their floating-point jump."""
    b, j = -1, 0
    key &= (1 << 64) - 1
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & ((1 << 64) - 1)
        j = int(float(b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


# ----------------------------------------------------- the Maglev table (docs/contract.md §11)

def key_u64(algorithm: str, key_bytes: bytes) -> int:
    """A key's 64 bits for a table or jump: the first 8 bytes of its digest, little-endian."""
    return struct.unpack_from("<Q", digest(algorithm, key_bytes), 0)[0]


def maglev_table(shards: list[tuple[bytes, int]], size: int, algorithm: str) -> list[int]:
    """Maglev's table of `size` slots (a prime) for (id, weight) shards in any order: entry s is
    the index in `shards` of the shard that owns slot s. Shards take turns in id order, each
    along its permutation (offset + j * skip) mod size from the digest of its id, a shard of
    weight w taking its t-th slot in the first round r with r * w >= t * the heaviest weight."""
    if not shards or not is_prime(size) or size >= 1 << 31:
        raise ValueError("maglev: needs a shard and a prime size below 2^31")
    ids = [sid for sid, _ in shards]
    if len(set(ids)) != len(ids) or any(w < 1 for _, w in shards):
        raise ValueError("maglev: ids must be unique and weights at least 1")
    order = sorted(range(len(shards)), key=lambda i: shards[i][0])
    heaviest = max(w for _, w in shards)
    perm = []
    for i in order:
        d = digest(algorithm, shards[i][0])
        offset = struct.unpack_from("<Q", d, 0)[0] % size
        skip = struct.unpack_from("<Q", d, 8)[0] % (size - 1) + 1
        perm.append([i, shards[i][1], offset, skip, 0])  # index, weight, slot, skip, taken
    table = [-1] * size
    filled, rnd = 0, 0
    while filled < size:
        rnd += 1
        for p in perm:
            if filled == size:
                break
            if rnd * p[1] < p[4] * heaviest:
                continue
            while table[p[2]] != -1:
                p[2] = (p[2] + p[3]) % size
            table[p[2]] = p[0]
            p[2] = (p[2] + p[3]) % size
            p[4] += 1
            filled += 1
    return table
