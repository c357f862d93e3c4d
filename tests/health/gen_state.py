#!/usr/bin/env python3
"""Writes a state dir with sealed segments, checkpoints and an archive
(docs/journal.md §6, §7, §8; docs/operations.md §1.6), the way the gateway lays them out, so that
shardgate-health and probe.py can be tested before the gateway rotates.

usage: gen_state.py OUTDIR [--receipts N] [--per-segment K] [--checkpoints L,L,..]
                           [--archive D --archive-count A [--plain]]
Also a module: build(outdir, ...) returns a dict describing what it wrote.
Every fact is computed by the test-side ketama (tests/health/ketama.py); the bytes are checked
against hand-written golden lines in tests/health/test_segments.py.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ketama  # noqa: E402

C = ketama.contract()


def memberships():
    """Two memberships: shard-d joins at the second epoch."""
    a = [{"id": "shard-a", "state": "online", "capacity": 1000000, "weight": 1},
         {"id": "shard-b", "state": "online", "capacity": 1000000, "weight": 2},
         {"id": "shard-c", "state": "online", "capacity": 1000000, "weight": 1},
         {"id": "shard-d", "state": "offline", "capacity": 1000000, "weight": 1}]
    b = [dict(s, state="online") if s["id"] == "shard-d" else s for s in a]
    return [a, b]


def seg_name(first_seq):
    return "journal-%020d.jsonl" % first_seq


def ckpt_name(last_seq):
    return "checkpoint-%020d.json" % last_seq


def header_line(first_seq, prev):
    return '{"type":"segment","first_seq":%d,"prev":"%s"}\n' % (first_seq, prev)


def seal_line(last_seq, body):
    return '{"type":"seal","last_seq":%d,"bytes":%d,"sha256":"%s"}\n' % (
        last_seq, len(body), hashlib.sha256(body).hexdigest())


def checked(line):
    """The line with its crc32 member (docs/journal.md §2.1)."""
    body = line[:-2]  # without "}\n"
    return body + ',"crc32":"%08x"}\n' % zlib.crc32(body.encode())


def records(n, epoch_at):
    """[(kind, line, info)]: an epoch record at seq 1 and before receipt epoch_at, n receipts."""
    out, prev, mem = [], None, memberships()
    for e, ms in enumerate(mem):
        ring = ketama.Ring("sha1", 160, ms)
        first = 1 if e == 0 else epoch_at
        rec = ketama.chain_record(ring, C, e + 1, prev, first)
        prev = rec["epoch"]
        out.append(("epoch", ketama.dumps(rec) + "\n", {"rec": rec, "shards": ms}))
        lo, hi = (1, epoch_at - 1) if e == 0 else (epoch_at, n)
        for seq in range(lo, hi + 1):
            chs = [{"id": "c%d" % i, "key": "k:%d:%d" % (seq, i), "size": (seq * 7 + i) % 11}
                   for i in range(5)]
            rcpt = ketama.receipt(ring, "b-%05d" % seq, chs)
            out.append(("receipt", ketama.dumps(ketama.receipt_record(seq, rcpt)) + "\n",
                        {"seq": seq, "rcpt": rcpt, "epoch_seq": e + 1}))
    return out


def epochs_entry(rec):
    """An epoch as GET /v1/epochs lists it (docs/api.md §16)."""
    return {"epoch": rec["epoch"], "ring": rec["ring_id"], "epoch_seq": rec["epoch_seq"],
            "prev": rec["prev"], "source": rec["source"], "time": rec["time"],
            "first_seq": rec["first_seq"]}


def sums(recs, last_seq):
    """(epochs, ledger, totals) over the records with seq <= last_seq."""
    epochs, ledger, totals, meta = [], {}, {}, {}
    for kind, _, info in recs:
        if kind == "receipt" and info["seq"] > last_seq:
            break
        if kind == "epoch":
            if epochs and info["rec"]["first_seq"] > last_seq:
                break  # written after receipt last_seq: not covered
            epochs.append(epochs_entry(info["rec"]))
            for s in info["shards"]:
                meta[s["id"]] = (s["weight"], s["capacity"])
                ledger.setdefault(s["id"], [0, 0])
            continue
        per = totals.setdefault(info["epoch_seq"], {})
        for sid, sh in info["rcpt"]["shards"].items():
            if sh["received"] == 0:
                continue
            t = per.setdefault(sid, [0, 0])
            t[0] += sh["load"]
            t[1] += sh["received"]
            ledger[sid][0] += sh["load"]
            ledger[sid][1] += sh["received"]
    led = [{"id": sid, "weight": meta[sid][0], "capacity": meta[sid][1], "load": ledger[sid][0],
            "received": ledger[sid][1]} for sid in sorted(ledger, key=str.encode)]
    tot = [{"epoch_seq": e, "shards": [{"id": sid, "load": per[sid][0], "received": per[sid][1]}
                                       for sid in sorted(per, key=str.encode)]}
           for e, per in sorted(totals.items())]
    return epochs, led, tot


def checkpoint_text(last_seq, segment, offset, epochs, ledger, totals, index_seq=None):
    head = ('{"type":"checkpoint","version":1,"last_seq":%d,"segment":%d,"offset":%d,'
            '"index_seq":%d,"epochs":%s,"ledger":%s,"totals":%s' % (
                last_seq, segment, offset, last_seq if index_seq is None else index_seq,
                ketama.dumps(epochs), ketama.dumps(ledger), ketama.dumps(totals)))
    return head + ',"sha256":"%s"}\n' % hashlib.sha256(head.encode()).hexdigest()


def split(recs, per_segment):
    """Segments as [(first_seq, [lines], {seq: offset after its line})]: rotation after every
    per_segment receipts, before the next record."""
    segs, cur, count, latest_epoch, seq = [], None, 0, None, 0
    for kind, line, info in recs:
        if cur is None or (count >= per_segment and kind == "receipt"):
            if cur is not None:
                segs.append(cur)
            cur = {"first": seq + 1, "lines": [], "ends": {}}
            count = 0
            if segs:
                cur["lines"] += ["HEADER", latest_epoch]
        if kind == "epoch":
            latest_epoch = line
        else:
            seq = info["seq"]
            count += 1
        cur["lines"].append(line)
        if kind == "receipt":
            cur["ends"][seq] = len(cur["lines"])
    segs.append(cur)
    return segs


def write_segments(outdir, segs, crc=False):
    """Writes every segment, its lines checked when crc; returns [(name, first, last, bytes of
    the file)] of the sealed."""
    prev, sealed = None, []
    form = checked if crc else (lambda line: line)
    for k, seg in enumerate(segs):
        lines = [form(header_line(seg["first"], prev) if ln == "HEADER" else ln)
                 for ln in seg["lines"]]
        body = "".join(lines).encode()
        last = max(seg["ends"]) if seg["ends"] else seg["first"] - 1
        seg["offsets"] = {s: len("".join(lines[:n]).encode()) for s, n in seg["ends"].items()}
        if k == len(segs) - 1:
            with open(os.path.join(outdir, "journal.jsonl"), "wb") as f:
                f.write(body)
            break
        seal = form(seal_line(last, body))
        prev = json.loads(seal)["sha256"]
        data = body + seal.encode()
        with open(os.path.join(outdir, seg_name(seg["first"])), "wb") as f:
            f.write(data)
        sealed.append((seg_name(seg["first"]), seg["first"], last, data))
    return sealed


def archive(outdir, adir, sealed, count, plain):
    os.makedirs(adir, exist_ok=True)
    with open(os.path.join(outdir, "archive.jsonl"), "w") as idx:
        for name, first, last, data in sealed[:count]:
            as_name = name if plain else name + ".zst"
            dest = os.path.join(adir, as_name)
            if plain:
                with open(dest, "wb") as f:
                    f.write(data)
            else:
                subprocess.run(["zstd", "-q", "-f", "-o", dest], input=data, check=True)
            idx.write('{"name":"%s","first_seq":%d,"last_seq":%d,"bytes":%d,"sha256":"%s",'
                      '"archived_as":"%s"}\n' % (name, first, last, len(data),
                                                  hashlib.sha256(data).hexdigest(), as_name))
            os.unlink(os.path.join(outdir, name))


def build(outdir, receipts=12, per_segment=4, epoch_at=6, checkpoints=(8, 12), adir=None,
          archive_count=0, plain=False, crc=False):
    os.makedirs(outdir, exist_ok=True)
    recs = records(receipts, epoch_at)
    segs = split(recs, per_segment)
    sealed = write_segments(outdir, segs, crc)
    for last in checkpoints:
        seg = next(s for s in segs if last in s.get("offsets", {}))
        with open(os.path.join(outdir, ckpt_name(last)), "w") as f:
            f.write(checkpoint_text(last, seg["first"], seg["offsets"][last], *sums(recs, last)))
    if adir is not None:
        archive(outdir, adir, sealed, archive_count, plain)
    with open(os.path.join(outdir, "shards.json"), "w") as f:
        f.write(ketama.dumps({"shards": memberships()[-1]}) + "\n")
    with open(os.path.join(outdir, "dispatch.env"), "w") as f:
        f.write(ketama.contract_text(C))
    return {"sealed": [s[0] for s in sealed], "segments": segs, "records": recs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--receipts", type=int, default=12)
    ap.add_argument("--per-segment", type=int, default=4)
    ap.add_argument("--checkpoints", default="8,12")
    ap.add_argument("--archive")
    ap.add_argument("--archive-count", type=int, default=0)
    ap.add_argument("--plain", action="store_true")
    a = ap.parse_args()
    cps = [int(x) for x in a.checkpoints.split(",") if x]
    got = build(a.outdir, a.receipts, a.per_segment, min(6, a.receipts), cps, a.archive,
                a.archive_count, a.plain)
    print("%s: %d sealed segments" % (a.outdir, len(got["sealed"])))


if __name__ == "__main__":
    main()
