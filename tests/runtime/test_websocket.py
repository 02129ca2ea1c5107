"""The client side of a websocket: masking, fragments, ping/pong, closing, protocol violations.

A raw TCP server plays the server's side frame by frame, so the client meets fragmented messages,
control frames between fragments and misbehaviour no websocket library would produce.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from etctl.runtime._http import Broken, Endpoint, Pool, Timeout, Upgraded
from etctl.runtime._websocket import WebSocket, _mask, accept_key, handshake_headers
from tests.runtime.test_http import raw_server

Play = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def frame(opcode: int, payload: bytes, *, fin: bool = True, masked: bool = False) -> bytes:
    """A server's frame (unmasked unless ``masked``, which servers must never do)."""
    first = (0x80 if fin else 0) | opcode
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", first, length | (0x80 if masked else 0))
    elif length < 65536:
        header = struct.pack("!BBH", first, 126 | (0x80 if masked else 0), length)
    else:
        header = struct.pack("!BBQ", first, 127 | (0x80 if masked else 0), length)
    if masked:
        return header + b"abcd" + _mask(payload, b"abcd")
    return header + payload


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """A client's frame, unmasked: (opcode, payload)."""
    first, second = await reader.readexactly(2)
    assert second & 0x80, "client frames must be masked"
    length = second & 0x7F
    if length == 126:
        (length,) = struct.unpack("!H", await reader.readexactly(2))
    elif length == 127:
        (length,) = struct.unpack("!Q", await reader.readexactly(8))
    key = await reader.readexactly(4)
    return first & 0x0F, _mask(await reader.readexactly(length), key)


@asynccontextmanager
async def websocket(play: Play, *, max_message: int = 0) -> AsyncIterator[WebSocket]:
    """A websocket to a server that accepts the upgrade, then runs ``play``."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        key = next(
            line.split(":", 1)[1].strip()
            for line in head.split("\r\n")
            if line.lower().startswith("sec-websocket-key:")
        )
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
            + f"Sec-WebSocket-Accept: {accept_key(key)}\r\n\r\n".encode()
        )
        await play(reader, writer)

    async with raw_server(serve) as server:
        pool = Pool(Endpoint("127.0.0.1", server.port), limit=1)
        headers, _key = handshake_headers(("v5.channel.k8s.io", "v4.channel.k8s.io"))
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        request = f"GET /exec HTTP/1.1\r\nHost: test\r\n{lines}\r\n".encode()
        switched = await pool.upgrade(request, Timeout(connect=5, total=5))
        assert isinstance(switched, Upgraded)
        ws = WebSocket(
            switched.response, switched.transport, switched.rest, max_message=max_message
        )
        async with ws:
            yield ws


def test_masking_is_its_own_inverse_for_every_length() -> None:
    for length in (0, 1, 3, 4, 5, 125, 126, 65_536, 100_003):
        payload = bytes(index % 251 for index in range(length))
        masked = _mask(payload, b"\x01\x02\x03\x04")
        assert len(masked) == length
        assert _mask(masked, b"\x01\x02\x03\x04") == payload
        if length:
            assert masked[:4] == bytes(
                b ^ k for b, k in zip(payload[:4], b"\x01\x02\x03\x04"[:length], strict=True)
            )


async def test_messages_fragments_and_pings_between_them() -> None:
    pongs: list[bytes] = []
    played = asyncio.Event()

    async def play(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(frame(0x2, b"\x01whole"))
        writer.write(frame(0x2, b"\x01frag", fin=False))
        writer.write(frame(0x9, b"are you there"))  # a ping between fragments
        writer.write(frame(0x0, b"men", fin=False))
        writer.write(frame(0x0, b"ted"))
        writer.write(frame(0x1, "\x02text é".encode()))
        writer.write(frame(0x2, b"\x01" + b"L" * 70_000))  # a 64-bit length
        await writer.drain()
        opcode, payload = await read_frame(reader)
        pongs.append(bytes([opcode]) + payload)
        writer.write(frame(0x8, struct.pack("!H", 1000)))
        await writer.drain()
        opcode, _ = await read_frame(reader)  # the client's answer to the close
        pongs.append(bytes([opcode]))
        played.set()

    async with websocket(play) as ws:
        assert ws.protocol == "v5.channel.k8s.io"
        received = []
        while (message := await ws.receive()) is not None:
            received.append(message)
        await asyncio.wait_for(played.wait(), 5)
    assert received == [
        b"\x01whole",
        b"\x01fragmented",
        "\x02text é".encode(),
        b"\x01" + b"L" * 70_000,
    ]
    assert pongs == [b"\x0aare you there", b"\x08"]


async def test_sent_messages_are_masked_frames_the_server_can_read() -> None:
    got: list[tuple[int, bytes]] = []
    done = asyncio.Event()

    async def play(reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
        got.append(await read_frame(reader))
        got.append(await read_frame(reader))
        done.set()
        await reader.read()

    big = bytes(range(256)) * 400
    async with websocket(play) as ws:
        await ws.send_bytes(b"\x00stdin")
        await ws.send_bytes(big)
        await asyncio.wait_for(done.wait(), 5)
    assert got == [(0x2, b"\x00stdin"), (0x2, big)]


@pytest.mark.parametrize(
    ("frames", "error"),
    [
        (frame(0x2, b"hidden", masked=True), "masked"),
        (bytes([0x80 | 0x40 | 0x2, 1]) + b"x", "reserved bits"),
        (frame(0x0, b"orphan"), "fragments"),
        (frame(0x2, b"a", fin=False) + frame(0x2, b"b"), "fragments"),
        (frame(0x3, b"?"), "unknown opcode"),
        (frame(0x2, b"x" * 200), "exceeds"),
    ],
    ids=["masked", "reserved", "orphan-continuation", "interleaved", "opcode", "too-big"],
)
async def test_protocol_violations_are_broken(frames: bytes, error: str) -> None:
    async def play(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(frames)
        await writer.drain()
        await reader.read()

    async with websocket(play, max_message=100) as ws:
        with pytest.raises(Broken, match=error):
            await ws.receive()
        with pytest.raises(Broken):
            await ws.send_bytes(b"after")


async def test_a_connection_that_drops_ends_the_stream() -> None:
    async def play(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(frame(0x2, b"\x01last words"))
        await writer.drain()

    async with websocket(play) as ws:
        assert await ws.receive() == b"\x01last words"
        assert await asyncio.wait_for(ws.receive(), 5) is None
