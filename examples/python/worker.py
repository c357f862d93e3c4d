#!/usr/bin/env python3
"""worker.py - a shard worker that checks every assignment before it applies it
(docs/tools.md §14.1).

It follows its shard's assignments as shardgate-consume does (the same options, cursor file and
exactly-once hand-over; the package's shardgate.consume does that part) and, before an
assignment is handed over, places its key itself with the package shardgate (an implementation
independent of the gateway) under the epoch the assignment names:

- the epoch's contract and membership come from its epoch record (an item of the feed, or, for
  an epoch that began before the cursor, read from GET /v1/receipts just before the epoch's
  first receipt); the record's epoch id is recomputed from them, so a record cannot claim an id
  its contents do not hash to;
- the key's ring owner must be this shard; under DISPATCH_CAPACITY_POLICY=spill a change may
  also have spilled here, which only its whole batch decides: the batch's receipt
  (GET /v1/batches/{id}) is recomputed from its changes and must put this change here.

An assignment that fails, or one it cannot judge (a version 1 receipt names no epoch), stops the
worker with exit 4 before that assignment is applied; the cursor stays before it.

    python3 examples/python/worker.py --url http://127.0.0.1:8080 --shard shard-a \\
        --cursor-file shard-a.cursor --exec 'my-apply-command'
"""
import json
import sys
import urllib.parse

from shardgate import consume
from shardgate.contract import check_membership
from shardgate.receipt import changes_from_receipt, expected_receipt
from shardgate.ring import Ring, epoch_id
from shardgate.verify import record_contract

EXIT_REFUSED = 4


class Refused(Exception):
    """An assignment this worker's own placement does not give to this shard."""


class Checker:
    """The epochs met so far, by id: (contract, shards, ring)."""

    def __init__(self):
        self.epochs = {}

    def __call__(self, args, item):
        """consume's check hook: learn an epoch record, judge an assignment."""
        try:
            if item.get("type") == "epoch":
                self.learn(item)
            elif item.get("type") == "assignment":
                self.check(args, item)
        except Refused as e:
            print("worker.py: refused seq %s batch_id %s id %s: %s"
                  % (item.get("seq"), item.get("batch_id"), item.get("id"), e), file=sys.stderr)
            raise consume.Stop(EXIT_REFUSED)
        except consume.Retry as e:
            print("worker.py: cannot judge seq %s now: %s" % (item.get("seq"), e), file=sys.stderr)
            raise consume.Stop(consume.EXIT_FAILED)

    def learn(self, record):
        try:
            contract = record_contract(record.get("contract"))
            shards = check_membership({"shards": record.get("shards")})
        except ValueError as e:
            raise Refused("epoch record: %s" % e)
        epoch = epoch_id(contract, shards)
        if record.get("epoch", epoch) != epoch:
            raise Refused("epoch record: its contents hash to %s, not %s"
                          % (epoch, record.get("epoch")))
        ring = Ring(contract["DISPATCH_RING_HASH"], contract["DISPATCH_VNODES"], shards)
        self.epochs[epoch] = (contract, shards, ring)

    def epoch(self, args, epoch):
        """The epoch an assignment names, read from the journal when it began before the cursor."""
        if epoch is None:
            raise Refused("a version 1 receipt names no epoch: cannot judge")
        if epoch not in self.epochs:
            _, body = consume.get(args, "/v1/epochs")
            starts = [e["first_seq"] for e in json.loads(body)["epochs"] if e["epoch"] == epoch]
            if not starts:
                raise Refused("epoch %s is not in GET /v1/epochs" % epoch)
            for first_seq in reversed(starts):  # the epoch's latest start with a receipt
                self.learn_from_journal(args, epoch, first_seq)
                if epoch in self.epochs:
                    break
        if epoch not in self.epochs:
            raise Refused("no epoch record for %s before its first receipt" % epoch)
        return self.epochs[epoch]

    def learn_from_journal(self, args, epoch, first_seq):
        """The epoch record served just before the receipt first_seq (docs/api.md §17)."""
        _, body = consume.get(args, "/v1/receipts?after=%d&limit=1" % (first_seq - 1),
                              "application/x-ndjson")
        for line in body.splitlines():
            record = json.loads(line)
            if record.get("type") == "epoch" and record.get("epoch") == epoch:
                self.learn(record)

    def check(self, args, a):
        contract, shards, ring = self.epoch(args, a["epoch"])
        owner = ring.lookup(a["key"].encode("utf-8"))[3]
        if owner == args.shard:
            return
        if contract["DISPATCH_CAPACITY_POLICY"] != "spill":
            raise Refused("key %r is placed on %s, not here" % (a["key"], owner))
        _, body = consume.get(args, "/v1/batches/" + urllib.parse.quote(a["batch_id"], safe=""))
        receipt = json.loads(body)
        problems = []
        changes = changes_from_receipt(receipt, problems)
        if problems:
            raise Refused("the batch's receipt: %s" % (problems[0],))
        mine = expected_receipt(contract, shards, a["batch_id"], changes)
        placed = [p["shard"] for p in mine["placements"] if p["id"] == a["id"]]
        if placed != [args.shard]:
            raise Refused("change %s of the batch is placed on %s, not here (home %s)"
                          % (a["id"], placed, owner))


def main(argv=None):
    return consume.main(argv, prog="worker.py", check=Checker())


if __name__ == "__main__":
    sys.exit(main())
