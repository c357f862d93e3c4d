"""shardgate-consume (client/consume.py) - follow one shard's assignment feed and apply each
assignment once (docs/api.md §18, docs/tools.md §8).

Long-polls GET /v1/shards/{id}/assignments from the cursor in --cursor-file, hands every
assignment to --exec CMD on stdin (or prints it as NDJSON) and stores the cursor atomically
after CMD succeeds, so a restart resumes with nothing lost and nothing applied twice.
"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.parse

EXIT_OK, EXIT_FAILED, EXIT_CLIENT_ERROR, EXIT_GONE, EXIT_USAGE = 0, 1, 2, 3, 64

EPILOG = """\
The cursor file (written as FILE.tmp, then renamed over FILE) holds
  {"after":S,"seq":N,"done":[[batch_id,id],...],"pending":[batch_id,id]|null}
S: every assignment of receipts <= S is applied; N and done: the assignments of receipt N
(> S) already applied, skipped when the feed delivers N again; pending: the assignment whose
CMD was started and not yet recorded as done. After a crash between CMD and the cursor write
that one assignment is handed over again with SHARDGATE_REDELIVERY=1 in CMD's environment,
so CMD can check its own effect (docs/decisions.md §22); every other one exactly once.

CMD runs with `sh -c`, the assignment's JSON line on stdin and SHARDGATE_SEQ,
SHARDGATE_BATCH_ID, SHARDGATE_CHANGE_ID, SHARDGATE_KEY, SHARDGATE_SIZE in its environment;
an id or a key holding a NUL (U+0000) cannot be an environment variable and is left out there:
the JSON line on stdin always holds it whole.
Connection errors and 5xx/503 are retried (backoff 0.1 s doubling to 2 s) for --retry-for
seconds in a row.

Exit codes:
  0   --exit-idle and a long-poll ended with nothing new
  1   CMD failed (the cursor stays before its assignment), or retries exhausted
  2   the gateway answered 4xx (unknown shard 404, 401, 400); its body on stderr
  3   410: the cursor is older than the oldest journal segment (earliest_seq on stderr)
  64  usage
"""


def parse_args(argv, prog):
    p = argparse.ArgumentParser(prog=prog, epilog=EPILOG,
                                description=__doc__.split("\n\n")[0].split(" - ", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="the gateway, e.g. http://127.0.0.1:8080")
    p.add_argument("--shard", required=True)
    p.add_argument("--cursor-file", required=True)
    p.add_argument("--exec", dest="cmd", help="run for each assignment (default: print it)")
    p.add_argument("--token-file", help="sends 'Authorization: Bearer <token>'")
    p.add_argument("--wait-ms", type=int, default=30000, help="long-poll wait (default 30000)")
    p.add_argument("--limit", type=int, default=1000, help="assignments per page (default 1000)")
    p.add_argument("--retry-for", type=float, default=60.0,
                   help="seconds of failed requests in a row before exit 1 (default 60)")
    p.add_argument("--exit-idle", action="store_true",
                   help="exit 0 once a long-poll ends with nothing new")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        sys.exit(EXIT_USAGE if e.code not in (0, None) else 0)
    u = urllib.parse.urlsplit(args.url)
    if u.scheme != "http" or not u.hostname:
        print("consume.py: --url must be http://HOST[:PORT]", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    args.host, args.port, args.base = u.hostname, u.port or 80, u.path.rstrip("/")
    args.token = None
    if args.token_file:
        try:
            with open(args.token_file) as f:
                args.token = f.read().strip()
        except OSError as e:
            print("consume.py: %s: %s" % (args.token_file, e.strerror), file=sys.stderr)
            sys.exit(EXIT_USAGE)
    return args


# --- the cursor ----------------------------------------------------------------------------

def load_cursor(path):
    try:
        with open(path) as f:
            c = json.load(f)
    except FileNotFoundError:
        return {"after": 0, "seq": 0, "done": [], "pending": None}
    c["done"] = [tuple(d) for d in c.get("done", [])]
    c["pending"] = tuple(c["pending"]) if c.get("pending") else None
    return c


def store_cursor(path, c):
    """Atomically: a reader (or a restart after kill -9) sees the old or the new file whole."""
    tmp = path + ".tmp"
    doc = {"after": c["after"], "seq": c["seq"], "done": [list(d) for d in c["done"]],
           "pending": list(c["pending"]) if c["pending"] else None}
    with open(tmp, "w") as f:
        f.write(json.dumps(doc, separators=(",", ":")) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def advance(c, seq):
    """Every assignment of receipts <= seq is applied."""
    if seq > c["after"]:
        c["after"] = seq
        if c["seq"] <= seq:
            c["seq"], c["done"] = 0, []


# --- the feed ------------------------------------------------------------------------------

class Retry(Exception):
    pass


class Stop(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


def get(args, path, accept="application/json"):
    """GET args.base + path with the token: (status, body). Raises Retry on a connection error
    or a 5xx, Stop on 410 (the cursor expired) and on another 4xx."""
    headers = {"Accept": accept}
    if args.token:
        headers["Authorization"] = "Bearer " + args.token
    conn = http.client.HTTPConnection(args.host, args.port, timeout=args.wait_ms / 1000 + 30)
    try:
        conn.request("GET", args.base + path, headers=headers)
        r = conn.getresponse()
        body = r.read()
    except (OSError, http.client.HTTPException) as e:
        raise Retry(str(e))
    finally:
        conn.close()
    if r.status >= 500:
        raise Retry("HTTP %d" % r.status)
    if r.status == 410:
        sys.stderr.write("consume.py: cursor expired: %s" % body.decode("utf-8", "replace"))
        raise Stop(EXIT_GONE)
    if r.status != 200:
        sys.stderr.write("consume.py: HTTP %d: %s" % (r.status, body.decode("utf-8", "replace")))
        raise Stop(EXIT_CLIENT_ERROR)
    return r.status, body


def fetch(args, after):
    """One page: (items, last_seq). Raises Retry or Stop."""
    path = "/v1/shards/%s/assignments?after=%d&limit=%d&wait_ms=%d" % (
        urllib.parse.quote(args.shard, safe=""), after, args.limit, args.wait_ms)
    _, body = get(args, path, "application/x-ndjson")
    lines = body.split(b"\n")[:-1]
    items = [(l, json.loads(l)) for l in lines]
    if not items or items[-1][1].get("type") != "bookmark":
        raise Retry("answer without its bookmark line (cut short)")
    return items[:-1], items[-1][1]["last_seq"]


def run_cmd(args, raw, a, redelivery):
    env = dict(os.environ, SHARDGATE_SEQ=str(a["seq"]), SHARDGATE_BATCH_ID=a["batch_id"],
               SHARDGATE_SIZE=str(a["size"]))
    # An id or key holding a NUL cannot be an environment variable: it is left out there, and
    # the JSON line on stdin holds it whole, as it holds every one (docs/tools.md §8).
    for name, value in (("SHARDGATE_CHANGE_ID", a["id"]), ("SHARDGATE_KEY", a["key"])):
        if "\0" not in value:
            env[name] = value
    if redelivery:
        env["SHARDGATE_REDELIVERY"] = "1"
    rc = subprocess.run(["sh", "-c", args.cmd], input=raw + b"\n", env=env).returncode
    if rc != 0:
        print("consume.py: CMD exited %d on assignment seq %d batch_id %s id %s"
              % (rc, a["seq"], a["batch_id"], a["id"]), file=sys.stderr)
        raise Stop(EXIT_FAILED)


def apply(args, c, raw, a):
    """Hands one assignment over once; the cursor records it before and after."""
    key = (a["batch_id"], a["id"])
    if a["seq"] <= c["after"] or (a["seq"] == c["seq"] and key in c["done"]):
        return  # applied before a crash: the receipt came again
    if a["seq"] != c["seq"]:
        advance(c, a["seq"] - 1)
        c["seq"], c["done"] = a["seq"], []
    if not args.cmd:
        sys.stdout.buffer.write(raw + b"\n")
        sys.stdout.flush()
    else:
        redelivery = c["pending"] == key
        c["pending"] = key
        store_cursor(args.cursor_file, c)
        run_cmd(args, raw, a, redelivery)
    c["done"].append(key)
    c["pending"] = None
    if args.cmd:  # printed ones are stored per page: a pipe reader sees them at once anyway
        store_cursor(args.cursor_file, c)


def follow(args, check=None):
    """Applies every assignment after the cursor; check(args, item), when given, sees every
    item first (epoch records too) and may raise Stop to refuse one before it is applied."""
    c = load_cursor(args.cursor_file)
    failing_since = None
    while True:
        try:
            items, last = fetch(args, c["after"])
        except Retry as e:
            now = time.monotonic()
            failing_since = failing_since or now
            if now - failing_since > args.retry_for:
                print("consume.py: giving up after %.0fs: %s" % (args.retry_for, e),
                      file=sys.stderr)
                return EXIT_FAILED
            time.sleep(min(2.0, 0.1 * 2 ** min(5, int((now - failing_since) / 0.5))))
            continue
        failing_since = None
        for raw, a in items:
            if check is not None:
                check(args, a)
            if a.get("type") == "assignment":
                apply(args, c, raw, a)
        moved = last > c["after"]
        advance(c, last)
        store_cursor(args.cursor_file, c)
        if args.exit_idle and not items and not moved:
            return EXIT_OK


def main(argv=None, prog="consume.py", check=None):
    """Follows the feed argv (default sys.argv[1:]) names, each item shown to check (see
    follow); returns the exit code."""
    args = parse_args(sys.argv[1:] if argv is None else argv, prog)
    try:
        return follow(args, check)
    except Stop as s:
        return s.code
    except KeyboardInterrupt:
        return EXIT_FAILED


def console():
    """The command shardgate-consume."""
    return main(prog="shardgate-consume")
