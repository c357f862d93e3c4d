#!/usr/bin/env python3
"""check_delay_proxy.py DELAY_PROXY - the bench's delaying proxy (bench/delay_proxy.c) keeps
every byte and its order in both directions and holds each chunk at least its delay each way:
a round trip through it takes at least twice the delay (a lower bound, which load cannot
break), and 4 MiB sent through an echo server come back equal."""
import os
import socket
import subprocess
import sys
import threading
import time

DELAY_US = 20000


def echo_server():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)

    def serve():
        while True:
            conn, _ = ls.accept()
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    def echo(conn):
        while True:
            data = conn.recv(65536)
            if not data:
                conn.shutdown(socket.SHUT_WR)
                return
            conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return ls.getsockname()[1]


def recv_exactly(s, n):
    got = b""
    while len(got) < n:
        data = s.recv(n - len(got))
        if not data:
            raise SystemExit("FAIL: the stream ended after %d of %d bytes" % (len(got), n))
        got += data
    return got


def main(argv):
    proxy = subprocess.Popen([argv[1], "0", str(echo_server()), str(DELAY_US)],
                             stdout=subprocess.PIPE, text=True)
    try:
        port = int(proxy.stdout.readline().split()[1])
        with socket.create_connection(("127.0.0.1", port)) as s:
            for i in range(3):
                t0 = time.monotonic()
                s.sendall(b"ping %d" % i)
                back = recv_exactly(s, 6)
                took = time.monotonic() - t0
                if back != b"ping %d" % i or took < 2 * DELAY_US / 1e6:
                    raise SystemExit("FAIL: round trip %d: %r in %.1f ms (at least %.1f)"
                                     % (i, back, took * 1e3, 2 * DELAY_US / 1e3))
            blob = os.urandom(4 << 20)
            sender = threading.Thread(target=s.sendall, args=(blob,))
            sender.start()
            back = recv_exactly(s, len(blob))
            sender.join()
            s.shutdown(socket.SHUT_WR)
            if back != blob or s.recv(1) != b"":
                raise SystemExit("FAIL: 4 MiB through the proxy came back changed")
        print("delay proxy: OK")
        return 0
    finally:
        proxy.kill()
        proxy.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
