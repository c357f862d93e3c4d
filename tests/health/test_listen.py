#!/usr/bin/env python3
"""shardgate-health serve --listen: IPv4 and [IPv6] loopback, exact refusals of bad addresses,
and a start-up log line that stays one JSON object whatever bytes the paths hold."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import CONF, SHARDS, Failures, free_port  # noqa: E402

BIN = sys.argv[1]
results = Failures()
check = results.check


def serve(listen, journal):
    return subprocess.Popen([BIN, "serve", "--listen", listen, "--conf", CONF, "--shards", SHARDS,
                             "--journal", journal], stderr=subprocess.PIPE, text=True)


def get_status(url, deadline=10.0):
    end = time.monotonic() + deadline
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            if time.monotonic() > end:
                return None
            time.sleep(0.05)


def stop(p):
    p.terminate()
    _, err = p.communicate(timeout=10)
    return err


def listens_on(listen, url_host, family, host):
    port = free_port(family, host)
    with tempfile.TemporaryDirectory() as d:
        journal = os.path.join(d, 'odd "name\\.jsonl')
        open(journal, "w").close()
        p = serve(listen % port, journal)
        first = p.stderr.readline()  # the start line comes once it listens (or it exits)
        try:
            line = json.loads(first)
        except ValueError:
            line = None
        # listening elsewhere: no need to wait out the deadline to know /livez is not there
        said = isinstance(line, dict) and line.get("listen") == listen % port
        status = get_status("http://%s:%d/livez" % (url_host, port)) if said else None
        stop(p)
    check(status == 200, "%s: /livez answers 200 (got %s)" % (listen % port, status))
    check(line == {"msg": "listening", "listen": listen % port, "journal": journal},
          "%s: the start line is one JSON object with the paths whole: %r" % (listen % port, first))


def refused(listen, message):
    p = subprocess.run([BIN, "serve", "--listen", listen, "--conf", CONF, "--shards", SHARDS,
                        "--journal", "/nonexistent"], capture_output=True, text=True, timeout=10)
    check(p.returncode == 64 and p.stderr == "shardgate-health: " + message + "\n",
          "--listen %s: exit 64 and %r (got %d, %r)" % (listen, message, p.returncode, p.stderr))


def port_taken(family, host, listen):
    """A port another socket holds: one line in this program's words, exit 1, nothing of
    libmicrohttpd's ("Failed to bind to port 0")."""
    holder = socket.socket(family)
    holder.bind((host, 0))
    holder.listen()
    try:
        where = listen % holder.getsockname()[1]
        p = subprocess.run([BIN, "serve", "--listen", where, "--conf", CONF, "--shards", SHARDS,
                            "--journal", "/nonexistent"], capture_output=True, text=True,
                           timeout=10)
    finally:
        holder.close()
    want = "shardgate-health: cannot listen on %s: Address already in use\n" % where
    check((p.returncode, p.stderr) == (1, want),
          "%s taken: exit 1 and %r (got %d, %r)" % (where, want, p.returncode, p.stderr))


port_taken(socket.AF_INET, "127.0.0.1", "127.0.0.1:%d")
port_taken(socket.AF_INET6, "::1", "[::1]:%d")
listens_on("127.0.0.1:%d", "127.0.0.1", socket.AF_INET, "127.0.0.1")
listens_on("[::1]:%d", "[::1]", socket.AF_INET6, "::1")
refused("[::1:8081", "--listen [::1:8081: expected [IPv6]:PORT")
refused("[127.0.0.1]:8081", "--listen [127.0.0.1]:8081: 127.0.0.1 is not an IPv6 address")
refused("::1:8081", "--listen ::1:8081: ::1 is not an IPv4 address")
refused("localhost:8081", "--listen localhost:8081: localhost is not an IPv4 address")
refused("[::1]:65536", "--listen [::1]:65536: port must be 0..65535")
results.exit()
