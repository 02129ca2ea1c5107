"""A raw-socket server that misbehaves on purpose: every byte and every pause is the test's.

Well-behaved HTTP servers (aiohttp, the embedded API server) cannot send a ``101`` to a plain GET,
a ``Content-Length: +38`` or a gigabyte; this one sends whatever a test's script writes, records
what the client sent, and counts what it managed to write, so a test can assert what the client
did with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

Script = Callable[["Peer"], Awaitable[None]]
"""What the server does on one connection."""


@dataclass
class Peer:
    """One connection, as its script sees it."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    server: HostileServer

    async def request(self) -> bytes:
        """The next request's head (and its body, when it says how long), as sent."""
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        raw = head + (await self.reader.readexactly(length) if length else b"")
        self.server.requests.append(raw)
        return raw

    async def send(self, data: bytes) -> None:
        """Write ``data`` and wait until the socket took it; counted in ``server.sent``."""
        self.writer.write(data)
        await self.writer.drain()
        self.server.sent += len(data)

    async def hold(self) -> None:
        """Keep the connection open until the client closes it."""
        await self.reader.read()


@dataclass
class HostileServer:
    """Connections on 127.0.0.1, each run by ``script``."""

    script: Script
    url: str = ""
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    sent: int = 0
    """Bytes the scripts managed to write (what the client read, give or take socket buffers)."""
    _running: set[asyncio.Task[None]] = field(default_factory=set)
    _writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._running.add(task)
        self._writers.append(writer)
        try:
            await self.script(Peer(reader, writer, self))
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the test ended: the connection's end either way
        finally:
            writer.transport.abort()
            self._running.discard(task)

    async def stop(self) -> None:
        """Drop every connection and wait for its script to end."""
        for writer in self._writers:
            writer.transport.abort()
        running = set(self._running)
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=5)

    def request_lines(self) -> list[bytes]:
        """The request line of every request received."""
        return [raw.split(b"\r\n", 1)[0] for raw in self.requests]


@asynccontextmanager
async def hostile_server(script: Script) -> AsyncIterator[HostileServer]:
    """Serve ``script`` on a free loopback port for the block's duration."""
    hostile = HostileServer(script)
    server = await asyncio.start_server(hostile._serve, "127.0.0.1", 0)
    hostile.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield hostile
    finally:
        server.close()
        await hostile.stop()
        await server.wait_closed()


def answer(head: bytes, body: bytes = b"") -> Script:
    """A script that answers every request on a connection with ``head`` and ``body``."""

    async def script(peer: Peer) -> None:
        while True:
            await peer.request()
            await peer.send(head + body)

    return script


OK_JSON = b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}}'
"""A body the client decodes as a pod."""
