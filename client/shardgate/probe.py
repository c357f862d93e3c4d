"""shardgate-probe, or client/probe.py: the independent verifier of a shardgate receipt
(docs/contract.md §1-§5, docs/tools.md §2).

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
import json
import os
import sys

from .contract import Unreadable, Unusable, check_ring_size, load_contract, load_shards
from .moves import MovesUnavailable, moves_between
from .plan import journal_movement, plan, plan_json
from .receipt import load_batch, read_receipt
from .ring import MaglevRing, epoch_id, make_ring
from .verify import verify_chain, verify_journal, verify_receipt

EXIT_OK, EXIT_BAD, EXIT_UNREADABLE, EXIT_UNUSABLE, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3, 64, 70


def load_epoch_files(conf, shards_path):
    """(contract, shards, ring, epoch id) of a contract file and a shards file; raises Unusable."""
    if not conf:
        raise Unusable("contract: no contract file: pass --conf FILE or set SHARDGATE_CONF")
    contract = load_contract(conf)
    shards = load_shards(shards_path)
    check_ring_size(shards_path, contract, shards)
    ring = make_ring(contract, shards)
    return contract, shards, ring, epoch_id(contract, shards)


def main_plan(argv, prog):
    parser = argparse.ArgumentParser(
        prog=prog + " plan",
        description="The movement plan between two epochs (docs/contract.md §8), computed "
                    "independently of `shardgate plan`, same bytes.",
        epilog="Exit: 0 the plan printed; 2 a ring with no online shard, or the journal "
               "unreadable; 3 contract or shards unusable; 64 usage; 70 internal error.")
    parser.add_argument("--conf", default=os.environ.get("SHARDGATE_CONF"))
    parser.add_argument("--shards", required=True, help="the current membership")
    parser.add_argument("--to", required=True, help="the new membership")
    parser.add_argument("--to-conf", help="the new contract (default: --conf)")
    parser.add_argument("--journal", help="count the journal's changes that would move")
    parser.add_argument("--ranges", action="store_true",
                        help="list every range of hash values that moves")
    args = parse_or_usage(parser, argv)
    try:
        _, shards_a, ring_a, epoch_a = load_epoch_files(args.conf, args.shards)
        contract_b, shards_b, ring_b, epoch_b = load_epoch_files(args.to_conf or args.conf,
                                                                 args.to)
    except Unusable as e:
        print(e, file=sys.stderr)
        return EXIT_UNUSABLE
    if type(ring_a) is not type(ring_b) or (
            isinstance(ring_a, MaglevRing) and ring_a.size != ring_b.size):
        print("plan: no plan between two algorithms or between tables of two sizes: their "
              "places share no unit of the hash space (docs/contract.md §11)", file=sys.stderr)
        return EXIT_UNREADABLE
    for which, ring in (("from", ring_a), ("to", ring_b)):
        if not ring.online:
            print("plan: %s ring has no online shard" % which, file=sys.stderr)
            return EXIT_UNREADABLE
    ids = {s["id"] for s in shards_a} | {s["id"] for s in shards_b}
    result = plan(ring_a, ring_b, epoch_a, epoch_b, ids, args.ranges)
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


def main_chain(argv, prog):
    parser = argparse.ArgumentParser(
        prog=prog + " chain",
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


def main_journal(argv, prog):
    parser = argparse.ArgumentParser(
        prog=prog + " journal",
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


def main_moves(argv, prog):
    parser = argparse.ArgumentParser(
        prog=prog + " moves",
        description="Print the ranges of the hash space (or of a table's slots) whose owner "
                    "differs between two epochs of a state dir's journal, as `shardgate moves` "
                    "does (docs/tools.md §1.4), computed independently.",
        epilog="Exit: 0 ok; 2 an epoch not in the segments present, an empty ring, no plan "
               "between the two, or a damaged line; 3 an epoch record unusable; 64 usage.")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--from", dest="seq_from", required=True, type=epoch_seq)
    parser.add_argument("--to", dest="seq_to", required=True, type=epoch_seq)
    args = parse_or_usage(parser, argv)
    try:
        result = moves_between(args.state_dir, args.seq_from, args.seq_to)
    except (MovesUnavailable, Unreadable) as e:
        print(e, file=sys.stderr)
        return EXIT_UNREADABLE
    except Unusable as e:
        print(e, file=sys.stderr)
        return EXIT_UNUSABLE
    sys.stdout.write(plan_json(result) + "\n")
    return EXIT_OK


def epoch_seq(text):
    """An epoch_seq operand: a decimal integer 1 or more, no sign or leading zero."""
    if not text.isdigit() or text[0] == "0" or int(text) >= 2**63:
        raise argparse.ArgumentTypeError("an epoch_seq, an integer 1 or more")
    return int(text)


def parse_args(argv, prog):
    parser = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s [--conf CONF] --shards SHARDS --receipt RECEIPT [--batch BATCH]\n"
              "       %(prog)s plan ...     the movement plan between two epochs\n"
              "       %(prog)s chain ...    a journal's epoch chain and its receipts\n"
              "       %(prog)s journal ...  a state dir: segments, records, checkpoints\n"
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


SUBCOMMANDS = {}  # name -> main(argv, prog); filled below the definitions


def main(argv=None, prog="probe.py"):
    """Runs the probe on argv (default sys.argv[1:]); returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:], prog)
    args = parse_args(argv, prog)
    try:
        if not args.conf:
            raise Unusable("contract: no contract file: pass --conf FILE or set SHARDGATE_CONF")
        contract = load_contract(args.conf)
        shards = load_shards(args.shards)
        check_ring_size(args.shards, contract, shards)
    except Unusable as e:
        print(e, file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        batch = load_batch(args.batch) if args.batch else None
        raw, receipt = read_receipt(args.receipt)
    except Unreadable as e:
        print(e, file=sys.stderr)
        return EXIT_UNREADABLE
    return report(verify_receipt(contract, shards, raw, receipt, batch))


def report(mismatches):
    """Prints the verdict; returns the exit code."""
    if not mismatches:
        print("RESULT: OK")
        return EXIT_OK
    print("RESULT: BAD (%d mismatches)" % len(mismatches))
    for field, exp, act in mismatches:
        print("%s: expected %s actual %s" % (field, exp, act))
    return EXIT_BAD


SUBCOMMANDS.update({"plan": main_plan, "chain": main_chain, "journal": main_journal,
                    "moves": main_moves})


def console(prog="shardgate-probe"):
    """The command line: main() with a crash as exit 70, never 1 ("the receipt is bad")."""
    # Receipts may hold any string; a mismatch line must never crash on printing it.
    sys.stdout.reconfigure(errors="backslashreplace")
    try:
        return main(prog=prog)
    except Exception as e:
        print("probe: internal error: %r" % e, file=sys.stderr)
        return EXIT_INTERNAL
