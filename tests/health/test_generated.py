#!/usr/bin/env python3
"""health_generated_journal: a journal made by gen_journal.py (several epochs, weights,
draining shards) passes with the exact number of checks."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Failures, check_journal, checks_per_epoch, checks_per_receipt)  # noqa: E402

BIN, OUT = sys.argv[1], sys.argv[2]
F = Failures()
N, PER, EPOCHS, SHARDS = 48000, 500, 3, 16  # 32 full receipts per epoch
subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "gen_journal.py"), OUT,
                "--placements", str(N), "--per-receipt", str(PER), "--epochs", str(EPOCHS),
                "--shards", str(SHARDS)], check=True, timeout=240)
rc, out, err = check_journal(BIN, os.path.join(OUT, "journal.jsonl"),
                             conf=os.path.join(OUT, "dispatch.env"),
                             shards=os.path.join(OUT, "shards.json"))
receipts = N // PER
want = receipts * checks_per_receipt(PER, SHARDS) + EPOCHS * checks_per_epoch() + 1
F.check(rc == 0 and out == '{"status":"pass","checks":%d,"receipts":%d,"issues":[]}\n'
        % (want, receipts), "generated journal passes with %d checks" % want,
        "rc=%d out=%s err=%s" % (rc, out[:2000], err))
F.exit()
