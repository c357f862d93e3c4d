#!/usr/bin/env python3
"""health_serve_errors: serve after an internal error, and edits in place.
- An out-of-memory while verifying (a real one: the process's address space is limited with
  prlimit while it runs, so building an epoch's ring of 1,000,000 points fails) keeps /healthz
  503 on every later call; no line after the error is skipped: once memory is back, the full
  re-read finds the bad receipt written after the one that failed, and the error is gone.
- A same-length in-place edit of a verified line is found by the full re-verification that
  --reverify-interval (1 s) schedules, and /healthz says when the last full verification
  finished. How soon is a figure (printed), never a bound: no check here depends on how busy
  the machine is, every wait has a condition and a deadline that only a hang reaches."""
import json
import os
import resource
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import (Failures, changes, deep, journal_text, tmpdir, write)  # noqa: E402
import ketama  # noqa: E402

BIN = sys.argv[1]
HANG_S = 60  # a deadline that only a hang reaches
F = Failures()
T = tmpdir()
C = ketama.contract(vnodes=1000)
SH = [{"id": "solo", "state": "online", "capacity": 10 ** 6, "weight": 1000}]
CONF = write(os.path.join(T, "dispatch.env"), ketama.contract_text(C))
SHARDS = write(os.path.join(T, "shards.json"), json.dumps({"shards": SH}))
RING = ketama.Ring("sha1", 1000, SH)


def get(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def start(journal, extra):
    port = ketama_port()
    proc = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:%d" % port, "--conf", CONF,
                             "--shards", SHARDS, "--journal", journal] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, MALLOC_ARENA_MAX="1"),
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_STACK, (1 << 20, 1 << 20)))
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/livez" % port, timeout=2).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, port


def ketama_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vm_size(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def rec(seq, tag):
    return ketama.receipt_record(seq, ketama.receipt(RING, "%s-%d" % (tag, seq), changes(3, tag, seq)))


# --- an internal error is sticky and skips nothing ------------------------------------------
with open(BIN, "rb") as f:  # ASan reserves terabytes of shadow: it cannot run under RLIMIT_AS
    ASAN = b"__asan_init" in f.read()
if ASAN:
    print("skip: the out-of-memory case needs a build without ASan")
journal = write(os.path.join(T, "oom.jsonl"), journal_text([ketama.epoch_record(RING, C)]))
proc, port = start(journal, ["--reverify-interval", "60"]) if not ASAN else (None, 0)
try:
    if not ASAN:
        st, doc = get(port)
        F.check(st == 200, "epoch only: 200", str(doc)[:300])
        limit = vm_size(proc.pid) + (6 << 20)  # room to read and parse, not for 12 MB of ring
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        bad = rec(2, "o")
        bad["receipt"]["ok"] = False
        with open(journal, "a") as f:
            f.write(journal_text([rec(1, "o"), bad]))
        st, doc = get(port)
        oom = "input: journal: out of memory for 1000000 ring points"
        F.check(st == 503 and oom in doc["issues"], "out of memory while verifying: 503 naming it",
                "%s %s" % (st, str(doc)[:600]))
        sts = []
        for _ in range(3):
            st, doc = get(port)
            sts.append(st)
        F.check(sts == [503] * 3 and oom in doc["issues"], "the error stays on every later call",
                "%s %s" % (sts, str(doc)[:600]))
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        st, doc = get(port)
        F.check(st == 503 and oom not in doc["issues"] and
                "ok: o-2: ok: expected true, got false" in doc["issues"] and
                doc["checks"]["receipts_verified"][0]["observedValue"] == 2,
                "memory back: full re-read, the receipt after the failed one is judged (not skipped)",
                "%s %s" % (st, str(doc)[:800]))
finally:
    if proc is not None:
        proc.kill()
        proc.wait(timeout=10)

# --- an in-place edit of a verified line is found within the interval -----------------------
journal = write(os.path.join(T, "edit.jsonl"), journal_text([ketama.epoch_record(RING, C), rec(1, "e")]))
proc, port = start(journal, ["--reverify-interval", "1"])
try:
    st, doc = get(port)
    F.check(st == 200 and isinstance(doc.get("last_full_verification"), str) and
            doc.get("reverify_interval_s") == 1, "clean: 200 with last_full_verification", str(doc)[-300:])
    text = open(journal).read()
    i = text.index('"size":1,')
    with open(journal, "r+") as f:  # same length, same inode, same last 64 bytes
        f.seek(i)
        f.write('"size":7,')
    t0 = time.monotonic()
    st = 200
    # --reverify-interval 1 is honoured: found well before the default 60 s would find it (a
    # bound of 20 s, many times the interval it measures).
    while st == 200 and time.monotonic() - t0 < 20:
        time.sleep(0.2)
        st, doc = get(port)
    print("same-length edit found in %.1f s (interval 1 s)" % (time.monotonic() - t0))
    # (last_full_verification has whole seconds: two verifications within one compare equal,
    # so it cannot order them; the edit's own issue is the proof a full re-read found it.)
    F.check(st == 503 and any(x.startswith("fingerprint: e-1:") for x in doc["issues"]),
            "same-length edit found by a full re-verification", "%s %s" % (st, str(doc)[-600:]))
    # an unterminated tail older than the interval is a torn tail
    # (a new inode: the service re-reads it at once, as after a rotation)
    write(journal + ".new", journal_text([ketama.epoch_record(RING, C), rec(1, "e")]) + '{"type":"rec')
    written = time.monotonic()
    os.replace(journal + ".new", journal)
    st, doc = get(port)
    torn = ("journal_line: line 3: last line has no newline for more than 1 s (torn tail, 12 "
            "bytes)")
    # The tail's age is counted from when the service first saw it, at most since `written`:
    # an answer within the interval must call it pending; a later one (a busy machine) may
    # already call it torn, which the next check expects anyway.
    if time.monotonic() - written < 1:
        F.check(st == 200 and doc.get("pending_tail_bytes") == 12, "a fresh tail: 200, pending 12",
                str(doc)[-300:])
    deadline = time.monotonic() + HANG_S
    while not (st == 503 and torn in doc["issues"]) and time.monotonic() < deadline:
        time.sleep(0.2)
        st, doc = get(port)
    F.check(st == 503 and torn in doc["issues"], "a tail older than the interval: torn, 503",
            "%s %s" % (st, str(doc)[-400:]))
finally:
    proc.kill()
    proc.wait(timeout=10)
F.exit()
