#!/usr/bin/env python3
"""delay_proxy.py - a TCP proxy that holds every chunk DELAY_MS milliseconds in each direction
(bench/pg_scale.sh --rtt-ms, docs/performance.md §13.2): a network round trip between a replica
and PostgreSQL on a kernel without netem. Order is kept per direction (one queue each).

usage: delay_proxy.py LISTEN_PORT TARGET_PORT DELAY_MS   (127.0.0.1 on both sides)
Prints "listening PORT" once it accepts connections.
"""
import asyncio
import sys


async def pipe(reader, writer, delay):
    """Copies reader to writer, each chunk sent `delay` seconds after it was read."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def sender():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.create_task(sender())
    try:
        while True:
            data = await reader.read(65536)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
    except ConnectionError:
        queue.put_nowait((loop.time(), b""))
    await task


async def serve(listen_port, target_port, delay):
    async def handle(client_r, client_w):
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(pipe(client_r, server_w, delay), pipe(server_r, client_w, delay),
                             return_exceptions=True)

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    print("listening %d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 64
    asyncio.run(serve(int(argv[1]), int(argv[2]), float(argv[3]) / 1000.0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
