"""Exec's websocket against a server that sends more than anyone should hold."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest

from etctl.errors import ResponseTooLarge, TransportError
from etctl.runtime import ClientOptions
from etctl.runtime._websocket import accept_key
from tests.runtime.hostile.server import Peer, Script, hostile_server
from tests.runtime.scripted import client_for

MIB = 2**20


def frame(payload: bytes, *, declared: int | None = None) -> bytes:
    """An unmasked binary frame (a server's), optionally declaring another length."""
    length = len(payload) if declared is None else declared
    return struct.pack("!BBQ", 0x82, 127, length) + payload


def switching(*frames: bytes) -> Script:
    """Switch to a websocket as exec asks (v5.channel.k8s.io), send ``frames``, hold."""

    async def script(peer: Peer) -> None:
        head = await peer.request()
        key = next(
            line.split(b":", 1)[1].strip().decode()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        await peer.send(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
            b"Sec-WebSocket-Accept: %s\r\n\r\n" % accept_key(key).encode()
        )
        for piece in frames:
            await peer.send(piece)
        await peer.hold()

    return script


def test_the_default_limits_are_generous_and_finite() -> None:
    options = ClientOptions()
    assert options.max_message_bytes == 32 * MIB
    assert options.max_response_bytes == 256 * MIB


async def test_a_message_over_the_limit_is_refused_at_its_frame_header(tmp_path: Path) -> None:
    # A frame that says 64 MiB follow: the default limit (32 MiB) refuses it before waiting.
    script = switching(frame(b"\x01" + b"x" * MIB, declared=64 * MIB))
    async with hostile_server(script) as server:
        async with await client_for(server.url, tmp_path) as client:
            async with asyncio.timeout(5):  # the exec's own timeout is 30 s
                with pytest.raises(TransportError, match="exceeds 33554432"):
                    await client.exec("ns", "p", ["true"], timeout=30)


async def test_exec_output_over_the_response_limit_is_refused(tmp_path: Path) -> None:
    script = switching(*(frame(b"\x01" + b"y" * MIB) for _ in range(8)))
    async with hostile_server(script) as server:
        limit = 4 * MIB
        async with await client_for(server.url, tmp_path, max_response_bytes=limit) as client:
            async with asyncio.timeout(5):
                with pytest.raises(ResponseTooLarge, match="exec output exceeds 4194304"):
                    await client.exec("ns", "p", ["cat", "/dev/zero"], timeout=30)
