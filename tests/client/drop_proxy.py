#!/usr/bin/env python3
"""drop_proxy.py - a loopback TCP proxy that loses the first answer(s).

For the first --drop connections it reads one whole HTTP request from the client, forwards
it to the upstream, waits for the upstream's whole answer (so the upstream has done the
work), and then closes the client connection without relaying a byte of it: the client
sees "connection dropped before the response" for a request that did succeed. Later
connections are relayed both ways unchanged.

Prints the port it listens on as the first line of stdout, then serves until SIGTERM or
SIGINT, and then finishes the connections in flight, each logging its line, before it exits
(a test reads that log once it has stopped the proxy).
Usage: drop_proxy.py --upstream 127.0.0.1:8080 [--listen-port 0] [--drop 1]
"""

import argparse
import os
import signal
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import pump  # noqa: E402

TIMEOUT = 10.0


def log(msg):
    print("drop_proxy: " + msg, file=sys.stderr, flush=True)


def read_http_message(sock):
    """Reads one HTTP message framed by Content-Length (or by EOF); returns its bytes."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while length is None or len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


def drop_one(client, upstream_addr, number):
    with socket.create_connection(upstream_addr, timeout=TIMEOUT) as upstream:
        request = read_http_message(client)
        upstream.sendall(request)
        answer = read_http_message(upstream)
    log("connection %d: forwarded %d request bytes, dropped the %d-byte answer"
        % (number, len(request), len(answer)))


def relay(client, upstream_addr, number):
    with socket.create_connection(upstream_addr, timeout=TIMEOUT) as upstream:
        back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        back.start()
        pump(client, upstream)
        back.join(TIMEOUT)
    log("connection %d: relayed" % number)


def serve_connection(client, upstream_addr, number, drop):
    client.settimeout(TIMEOUT)
    try:
        if number <= drop:
            drop_one(client, upstream_addr, number)
        else:
            relay(client, upstream_addr, number)
    except OSError as e:
        log("connection %d: %s" % (number, e))
    finally:
        client.close()


def parse_hostport(text):
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def main(argv=None):
    parser = argparse.ArgumentParser(description="loopback proxy that drops the first answers")
    parser.add_argument("--upstream", required=True, help="HOST:PORT")
    parser.add_argument("--listen-port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--drop", type=int, default=1, help="connections to drop (default 1)")
    args = parser.parse_args(argv)
    upstream_addr = parse_hostport(args.upstream)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.listen_port))  # loopback only, always
    listener.listen(16)
    print(listener.getsockname()[1], flush=True)
    number = 0
    threads = []
    try:
        while True:
            client, _ = listener.accept()
            number += 1
            t = threading.Thread(target=serve_connection, daemon=True,
                                 args=(client, upstream_addr, number, args.drop))
            t.start()
            threads.append(t)
    except KeyboardInterrupt:
        listener.close()
        for t in threads:
            t.join(TIMEOUT)


def on_signal(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_signal)
    main()
