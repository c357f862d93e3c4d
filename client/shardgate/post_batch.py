"""shardgate-post-batch (client/post_batch.py) - POST one batch to a shardgate gateway, retrying
safely (docs/api.md §3, docs/tools.md §3).

Every attempt sends the same body and `Idempotency-Key: <batch_id>`, so a retry after a
lost answer gets the stored receipt back instead of dispatching the batch twice.
"""

import argparse
import http.client
import json
import random
import sys
import time
import urllib.parse

EXIT_OK, EXIT_EXHAUSTED, EXIT_CLIENT_ERROR, EXIT_USAGE = 0, 1, 2, 64

EPILOG = """\
Every attempt sends the same body with Content-Type: application/json and
Idempotency-Key: <the batch's batch_id> (and Authorization: Bearer <token> with
--token-file), so the gateway answers a retry with the stored receipt.

Retries: connection errors (refused, reset, dropped before the answer, timeout), 5xx and
409 (the same batch still in flight), with exponential backoff and jitter:
attempt n waits base * 2^(n-1) * uniform(0.5, 1), at most --backoff-max, or the
server's Retry-After if that is longer (capped the same way). Other 4xx are never retried.

Exit codes:
  0   the gateway answered 200; the body (the receipt) is on stdout, byte for byte
  1   attempts exhausted (connection errors, 5xx or 409), or an answer that is neither
      200 nor 4xx/5xx (e.g. a redirect); details on stderr
  2   the gateway answered a 4xx other than 409; its body is on stderr
  64  usage: bad arguments, unreadable batch or token file, batch without a batch_id
"""


class UsageError(Exception):
    pass


def parse_args(argv, prog):
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__.split("\n\n")[0].split(" - ", 1)[1],
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True,
                        help="e.g. http://127.0.0.1:8080/v1/batches")
    parser.add_argument("--batch", required=True, help="the batch JSON file, sent as is")
    parser.add_argument("--token-file", help="sends 'Authorization: Bearer <token>'")
    parser.add_argument("--attempts", type=int, default=3, help="total attempts (default 3)")
    parser.add_argument("--backoff-base", type=float, default=0.5,
                        help="seconds before the first retry, doubled each time (default 0.5)")
    parser.add_argument("--backoff-max", type=float, default=10.0,
                        help="longest wait between attempts in seconds (default 10)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="connect and read timeout per attempt in seconds (default 30)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        sys.exit(EXIT_USAGE if e.code not in (0, None) else 0)
    if args.attempts < 1:
        parser.print_usage(sys.stderr)
        raise UsageError("--attempts must be at least 1")
    if args.backoff_base < 0 or args.backoff_max < 0 or args.timeout <= 0:
        raise UsageError("--backoff-base/--backoff-max must be >= 0 and --timeout > 0")
    return args


def read_batch(path):
    """Returns (body bytes, batch_id). The body is sent unchanged on every attempt."""
    try:
        with open(path, "rb") as f:
            body = f.read()
    except OSError as e:
        raise UsageError("cannot read batch %s: %s" % (path, e.strerror or e))
    try:
        batch_id = json.loads(body.decode("utf-8")).get("batch_id")
    except (ValueError, AttributeError) as e:
        raise UsageError("batch %s is not a JSON object: %s" % (path, e))
    if not isinstance(batch_id, str) or not batch_id:
        raise UsageError("batch %s has no string batch_id to use as the Idempotency-Key" % path)
    if any(c in batch_id for c in "\r\n") or not batch_id.isascii():
        raise UsageError("batch %s: batch_id cannot be sent as a header" % path)
    return body, batch_id


def read_token(path):
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError("cannot read token file %s: %s" % (path, e))
    if not token or any(c in token for c in "\r\n"):
        raise UsageError("token file %s must hold one non-empty line" % path)
    return token


def parse_url(url):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError("--url must be http://HOST[:PORT]/PATH or https://..., not %r" % url)
    try:
        parts.port
    except ValueError:
        raise UsageError("--url has a bad port: %r" % url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return parts, path


def send_once(parts, path, body, headers, timeout):
    """One attempt on a fresh connection. Returns (status, headers, body); raises OSError or
    http.client.HTTPException when the connection fails or drops before a full answer."""
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=timeout)
    try:
        try:
            conn.request("POST", path, body=body, headers=headers)
        except (BrokenPipeError, ConnectionResetError) as e:
            # A server may answer (413, 401) and close before reading a large body; its
            # answer, if it arrived, is the truth, not the broken pipe.
            try:
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException):
                raise e
        else:
            resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def retry_after(headers):
    value = headers.get("Retry-After", "") if headers is not None else ""
    return float(value) if value.strip().isdigit() else 0.0


def backoff(attempt, base, cap, server_hint=0.0):
    """Exponential backoff with jitter for the wait after failed attempt `attempt` (1-based)."""
    delay = min(cap, base * (2 ** (attempt - 1))) * random.uniform(0.5, 1.0)
    return max(delay, min(server_hint, cap))


def log(msg):
    print("post_batch: " + msg, file=sys.stderr, flush=True)


def post(args, body, batch_id, token):
    parts, path = parse_url(args.url)
    headers = {"Content-Type": "application/json", "Idempotency-Key": batch_id,
               "Content-Length": str(len(body))}
    if token:
        headers["Authorization"] = "Bearer " + token
    for attempt in range(1, args.attempts + 1):
        resp_headers = None
        try:
            status, resp_headers, resp_body = send_once(parts, path, body, headers, args.timeout)
        except (OSError, http.client.HTTPException) as e:
            why = "connection failed: %s" % (e.__class__.__name__ if not str(e) else e)
        else:
            if status == 200:
                sys.stdout.buffer.write(resp_body)
                sys.stdout.flush()
                return EXIT_OK
            text = resp_body.decode("utf-8", "replace")
            if 400 <= status < 500 and status != 409:
                log("HTTP %d (not retried)" % status)
                sys.stderr.write(text if text.endswith("\n") or not text else text + "\n")
                return EXIT_CLIENT_ERROR
            if not (status >= 500 or status == 409):
                log("unexpected HTTP %d (not retried): %s" % (status, text.strip()))
                return EXIT_EXHAUSTED
            why = "HTTP %d %s" % (status, text.strip())
        if attempt == args.attempts:
            log("attempt %d/%d: %s; giving up" % (attempt, args.attempts, why))
            return EXIT_EXHAUSTED
        wait = backoff(attempt, args.backoff_base, args.backoff_max, retry_after(resp_headers))
        log("attempt %d/%d: %s; retrying in %.2fs with Idempotency-Key %s"
            % (attempt, args.attempts, why, wait, batch_id))
        time.sleep(wait)
    return EXIT_EXHAUSTED


def main(argv=None, prog="post_batch.py"):
    """Posts the batch argv (default sys.argv[1:]) names; returns the exit code."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv, prog)
        body, batch_id = read_batch(args.batch)
        token = read_token(args.token_file) if args.token_file else None
        parse_url(args.url)
    except UsageError as e:
        log(str(e))
        return EXIT_USAGE
    return post(args, body, batch_id, token)


def console():
    """The command shardgate-post-batch."""
    return main(prog="shardgate-post-batch")
