"""Load test: 64 connections for LOAD_SECONDS (default 60; ctest runs 20) posting a mix of
valid batches (fresh ids), invalid ones (400) and replays of batches already acknowledged.

Required: no 5xx and no answer other than the expected one (200 fresh, 400, 200 replayed with
the same bytes); after the run every acknowledged receipt is verified by the independent health
service (`shardgate-health check --journal` passes) and the journal holds exactly the distinct
acknowledged batch ids. The gateway's VmRSS, sampled every second, is printed as a figure (the
mean of the second and of the last third of the samples); it is no check, since it follows the
allocator and how many requests the machine's load keeps in flight at once. Leaks are found by
LeakSanitizer (this test runs in the ASan+UBSan build) and valgrind (ops/valgrind.sh).

Seeded: RELIABILITY_SEED (printed). Figures are printed at the end.
"""

import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, case, eq, ok  # noqa: E402

CONNECTIONS = 64
IDEM_BYTES = 192
REPLAY_POOL = 256  # acknowledged batches each client keeps for replays

INVALID = [
    # (body, extra headers, expected error code)
    (b'{"batch_id":"bad-json","changes":[{"id":"a","key":"k","size":1}', {}, "invalid_json"),
    (b'{"batch_id":"bad-size","changes":[{"id":"a","key":"k","size":-1}]}', {}, "invalid_batch"),
    (b'{"batch_id":"bad-field","changes":[],"extra":1}', {}, "invalid_batch"),
    (b'{"changes":[{"id":"a","key":"k","size":1}]}', {}, "invalid_batch"),
    (b'{"batch_id":"bad-key","changes":[{"id":"a","key":"k","size":1}]}',
     {"Idempotency-Key": "other"}, "idempotency_key_mismatch"),
    (b'[1,2,3]', {}, "invalid_batch"),
]


def client(s, n, rng, deadline, out, errors, acked_count):
    conn = s.connect(timeout=30)
    mine = []  # (bid, body, answer): the latest acknowledged on this connection, for replays
    ids = []
    counts = {"fresh": 0, "invalid": 0, "replay": 0, "changes": 0}
    i = 0
    while time.time() < deadline and i < 10**7:
        roll = rng.random()
        try:
            if roll < 0.15 or (roll < 0.30 and not mine):
                body, headers, code = INVALID[rng.randrange(len(INVALID))]
                r = s.post(body, headers=headers, conn=conn)
                if r.status != 400 or r.error()[0] != code:
                    errors.append(("invalid", r.status, r.body[:200]))
                counts["invalid"] += 1
            elif roll < 0.30:
                bid, body, answer = mine[rng.randrange(len(mine))]
                r = s.post(body, conn=conn)
                if (r.status, r.headers.get("idempotent-replayed"), r.body) != (200, "true",
                                                                                answer):
                    errors.append(("replay", bid, r.status, r.body[:200]))
                counts["replay"] += 1
            else:
                bid = "L%d-%d" % (n, i)
                k = rng.randint(1, 12)
                doc = {"batch_id": bid, "changes": [
                    {"id": "c%d" % j, "key": "k%d" % rng.randrange(10**9),
                     "size": rng.randint(0, 9)} for j in range(k)]}
                body = json.dumps(doc).encode()
                r = s.post(body, conn=conn)
                if r.status != 200 or r.headers.get("idempotent-replayed") is not None:
                    errors.append(("fresh", bid, r.status, r.body[:200]))
                else:
                    if len(mine) >= REPLAY_POOL:
                        mine[rng.randrange(REPLAY_POOL)] = (bid, body, r.body)
                    else:
                        mine.append((bid, body, r.body))
                    ids.append(bid)
                    acked_count.append(1)  # list.append is atomic under the GIL
                    counts["changes"] += k
                counts["fresh"] += 1
        except Exception as e:  # a dropped connection is an error too; carry on
            errors.append(("exception", repr(e)))
            conn.close()
            conn = s.connect(timeout=30)
        i += 1
    conn.close()
    out.append((counts, ids))


def journal_ids(state_dir):
    """The batch ids of the journal's receipt records, read a line at a time."""
    ids = []
    for line in sgtest.journal_file_lines(state_dir):  # every segment (docs/journal.md §6)
        if line.startswith(b'{"type":"receipt"'):
            ids.append(json.loads(line)["receipt"]["batch_id"])
    return ids


def sampler(pid, stop, samples, acked_count):
    """(VmRSS kB, batches acknowledged so far) every second."""
    while not stop.wait(1.0):
        kib = sgtest.proc_status_kib(pid, "VmRSS")
        if kib is None:
            return
        samples.append((kib, len(acked_count)))


@case
def sixty_four_connections_mixed_load():
    rng = sgtest.seeded_rng("load")
    seconds = float(os.environ.get("LOAD_SECONDS", "60"))
    with Server() as s:
        out, errors, samples, acked_count = [], [], [], []
        stop = threading.Event()
        mon = threading.Thread(target=sampler, args=(s.proc.pid, stop, samples, acked_count),
                               daemon=True)
        mon.start()
        t0 = time.time()
        deadline = t0 + seconds
        threads = [threading.Thread(target=client, daemon=True,
                                    args=(s, n, random.Random(rng.random()), deadline, out,
                                          errors, acked_count)) for n in range(CONNECTIONS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + 120)
            ok(not t.is_alive(), "client thread ended")
        elapsed = time.time() - t0
        stop.set()
        mon.join(5)
        eq(errors[:10], [], "unexpected answers (%d in all)" % len(errors))
        ok(s.proc.poll() is None, "the gateway is still running")
        total = {"fresh": 0, "invalid": 0, "replay": 0, "changes": 0}
        acked = set()
        for counts, ids in out:
            for k in total:
                total[k] += counts[k]
            acked.update(ids)
        requests = total["fresh"] + total["invalid"] + total["replay"]
        verdict = sgtest.health_check(s.state_dir)
        t_check = time.time()
        ids = journal_ids(s.state_dir)
        eq(len(ids), len(set(ids)), "no batch_id journaled twice")
        eq(set(ids), acked, "journal = the distinct acknowledged batch ids")
        eq(verdict["receipts"], len(acked), "health verified every acknowledged receipt")
        eq(s.shard_totals(), sgtest.journal_totals(s), "/v1/shards = sums over the journal")
        t_check = time.time() - t_check
        third = len(samples) // 3
        mid = [kib for kib, _ in samples[third:2 * third]]
        last = [kib for kib, _ in samples[2 * third:]]
        m, l = sum(mid) / max(1, len(mid)), sum(last) / max(1, len(last))
        # Ids acknowledged between the middle of one window and the middle of the other.
        new_ids = (sum(a for _, a in samples[2 * third:]) / max(1, len(last)) -
                   sum(a for _, a in samples[third:2 * third]) / max(1, len(mid)))
        allowance = new_ids * IDEM_BYTES / 1024.0
        print("load: seconds=%.1f connections=%d requests=%d (%.0f/s) fresh=%d invalid=%d "
              "replay=%d changes=%d (%.0f changes/s) 5xx=0 health_checks=%d rss_kib first=%s "
              "last=%s mean_mid=%.0f mean_last=%.0f (%+.1f%%; idempotency allowance %.0f kB for %.0f "
              "ids) samples=%d verify_seconds=%.1f"
              % (elapsed, CONNECTIONS, requests, requests / elapsed, total["fresh"],
                 total["invalid"], total["replay"], total["changes"], total["changes"] / elapsed,
                 verdict["checks"], samples[0][0] if samples else None,
                 samples[-1][0] if samples else None, m, l, 100.0 * (l - m) / max(1, m),
                 allowance, new_ids, len(samples), t_check), flush=True)
        ok(requests > CONNECTIONS, "load was applied")
        # A clean stop: under ASan, LeakSanitizer's verdict at exit is the exit code.
        eq(s.stop(), 0, "the gateway stops cleanly after the load")


if __name__ == "__main__":
    sys.exit(sgtest.main(sys.argv, ("shardgate", "health", "source")))
