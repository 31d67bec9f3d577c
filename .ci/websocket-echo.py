"""A WebSocket peer nobody on Courier wrote, for the WebSocket tests: Python's `websockets`.

Listens on 127.0.0.1 (port 0 unless one is given), writes the port to the file named by its first
argument, and serves:
  /echo   each message back, as text or binary as it came;
  /close  closes with 1000 "bye" after the first message.
"""
import asyncio
import sys

from websockets.asyncio.server import serve


async def handler(connection):
    path = connection.request.path
    async for message in connection:
        if path.startswith("/close"):
            await connection.close(1000, "bye")
            return
        await connection.send(message)


async def main():
    port_file = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    async with serve(handler, "127.0.0.1", port, max_size=16 * 1024 * 1024) as server:
        bound = server.sockets[0].getsockname()[1]
        with open(port_file, "w") as f:
            f.write(str(bound))
        await asyncio.get_running_loop().create_future()


asyncio.run(main())
