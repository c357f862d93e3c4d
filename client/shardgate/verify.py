"""Verification of what a gateway wrote: one receipt, a journal's epoch chain with every
receipt in it (docs/contract.md §7), and a state dir's segments, seals and checkpoints
(docs/journal.md)."""

import hashlib
import os
import re
from typing import Any

from .contract import (MAX_JUMP_SLOTS, Contract, Mismatch, Shard, Unreadable, Unusable,
                       check_contract_value, check_membership, check_ring_size, contract_keys,
                       is_int, is_name, parse_json_bytes)
from .journal import CRC_MISMATCH, journal_lines, line_record
from .receipt import (MISSING, canonical, changes_from_receipt, compare, compare_bytes,
                      expected_receipt, receipt_version_of, same, show)
from .ring import epoch_id, id_order, make_ring

__all__ = ["verify_receipt", "verify_chain", "verify_journal", "record_contract"]

def verify_receipt(contract: Contract, shards: list[Shard], raw: bytes, receipt: Any,
                   batch: tuple[str, list[dict[str, Any]]] | None) -> list[Mismatch]:
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


# ---------------------------------------------------------------- epoch chain (docs/contract.md §7)

EPOCH_KEYS = ("type", "epoch", "epoch_seq", "prev", "source", "time", "first_seq", "ring_id",
              "contract", "shards")
LEGACY_EPOCH_KEYS = ("type", "ring_id", "contract", "shards")
RECEIPT_RECORD_KEYS = ("type", "seq", "fingerprint", "receipt")
EPOCH_SOURCES = ("start", "sighup", "admin")
TIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
RECORD_PREFIX_RE = re.compile(
    rb'\{"type":"receipt","seq":(?:0|[1-9][0-9]*),"fingerprint":"[0-9a-f]{64}","receipt":')


def record_contract(value: Any) -> Contract:
    """The contract of an epoch record (docs/journal.md §2) or raises ValueError."""
    keys = contract_keys(value) if isinstance(value, dict) else ()
    if not isinstance(value, dict) or tuple(value) != keys:
        raise ValueError("contract: must hold exactly %s in this order" % ",".join(
            keys or contract_keys({})))
    for key in keys:
        v = value[key]
        text = str(v) if key == keys[1] and is_int(v, 1, MAX_JUMP_SLOTS) else v
        if not isinstance(text, str):
            raise ValueError('contract.%s: %s is not valid' % (key, show(v, 0)))
        try:
            check_contract_value(key, text)
        except ValueError as e:
            raise ValueError("contract.%s" % e)
    if value["DISPATCH_HASH_RING"] != "ketama" and value["DISPATCH_CAPACITY_POLICY"] == "spill":
        raise ValueError("contract.DISPATCH_CAPACITY_POLICY: spill needs DISPATCH_HASH_RING=ketama")
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
        shards = check_membership({"shards": rec["shards"]})
        check_ring_size("epoch record", contract, shards)
    except (ValueError, Unusable) as e:
        chain.bad(number, "epoch record", "a usable contract and membership", str(e))
        return
    if rec["shards"] != id_order(shards):
        chain.bad(number, "shards", "every shard in id order, weight written",
                  show(rec["shards"], 0))
    ring = make_ring(contract, shards)
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
    for field, exp, act in verify_receipt(info["contract"], info["shards"], raw, receipt, None):
        chain.bad(number, "receipt." + field, exp, act)


def verify_chain(path: str) -> list[Mismatch]:
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


def verify_journal(state_dir: str, adir: str | None) -> tuple[dict[str, int], list[Mismatch]]:
    """Every segment (archived ones from adir), record, seal and checkpoint of a state dir:
    ({segments, receipts, checkpoints}, the mismatches). Raises Unreadable."""
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
