"""The client side of a websocket (RFC 6455), as exec needs it: binary messages both ways.

:func:`handshake` builds the upgrade request and checks the server's ``101`` answer;
:class:`WebSocket` then takes over the connection's transport. Only what a Kubernetes exec stream
uses is spoken: binary and text data messages (fragmented or not), ping answered by pong, and the
closing handshake. Extensions are never offered, so none can be agreed.

Invariants:

* every frame the client sends is masked with a fresh random key (servers must refuse unmasked
  ones); every frame it receives must be unmasked;
* :meth:`WebSocket.receive` returns whole messages in arrival order and ``None`` once the server
  closed the stream (or the connection ended cleanly); a protocol violation, a message beyond
  ``max_message`` bytes or a broken connection raises
  :class:`~etctl.runtime._http_connection.Broken`;
* while more than ``_HIGH_WATER`` bytes of received messages wait unread, the socket is not read.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import struct
from collections import deque
from typing import Final

from etctl.runtime._http_connection import Broken, Response

__all__ = ["WebSocket", "accept_key", "handshake_headers"]

_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_CONTINUATION, _TEXT, _BINARY, _CLOSE, _PING, _PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_HIGH_WATER: Final = 2**21
_LOW_WATER: Final = 2**19
_NORMAL_CLOSURE: Final = 1000


def handshake_headers(protocols: tuple[str, ...]) -> tuple[dict[str, str], str]:
    """The upgrade request's headers, and the ``Sec-WebSocket-Key`` they carry."""
    key = base64.b64encode(os.urandom(16)).decode()
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": key,
    }
    if protocols:
        headers["Sec-WebSocket-Protocol"] = ", ".join(protocols)
    return headers, key


def accept_key(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` a server must answer ``key`` with."""
    return base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()  # noqa: S324


def _mask(payload: bytes, key: bytes) -> bytes:
    """``payload`` XORed with the 4-byte ``key`` repeated (one big-integer XOR, not a byte loop)."""
    if not payload:
        return payload
    length = len(payload)
    repeated = (key * (length // 4 + 1))[:length]
    masked = int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")
    return masked.to_bytes(length, "big")


def _frame(opcode: int, payload: bytes) -> bytes:
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    key = os.urandom(4)
    return header + key + _mask(payload, key)


class WebSocket(asyncio.Protocol):
    """An open websocket on a transport the server switched to it.

    Args:
        response: the server's ``101`` answer (its agreed subprotocol is :attr:`protocol`).
        transport: the switched connection, now owned by this websocket.
        rest: bytes that arrived with the switch (the first frames, perhaps).
        max_message: the largest message accepted (0: no limit).
    """

    def __init__(
        self, response: Response, transport: asyncio.Transport, rest: bytes, *, max_message: int = 0
    ) -> None:
        self.protocol: str | None = response.headers.get("sec-websocket-protocol")
        self._transport = transport
        self._max = max_message
        self._buffer = bytearray()
        self._fragments: list[bytes] = []
        self._fragment_size = 0
        self._in_message = False
        self._drained: asyncio.Future[None] | None = None
        self._messages: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._closed = False
        self._close_sent = False
        self._error: Broken | None = None
        self._waiter: asyncio.Future[None] | None = None
        transport.set_protocol(self)
        if rest:
            self.data_received(rest)

    # -- asyncio.Protocol

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        try:
            self._parse()
        except Broken as exc:
            self._error = self._error or exc
            self._transport.abort()
            self._closed = True
        if self._buffered > _HIGH_WATER and not self._paused and not self._closed:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        return False

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and self._error is None and not self._closed:
            self._error = Broken(f"websocket connection lost: {exc!r}")
        self._closed = True
        self.resume_writing()
        self._wake()

    # -- frames

    def _parse(self) -> None:
        buffer = self._buffer
        while len(buffer) >= 2:
            first, second = buffer[0], buffer[1]
            if second & 0x80:
                msg = "the server sent a masked frame"
                raise Broken(msg)
            if first & 0x70:
                msg = "the server sent a frame with reserved bits set"
                raise Broken(msg)
            length, offset = second & 0x7F, 2
            if length == 126:
                if len(buffer) < 4:
                    return
                (length,) = struct.unpack_from("!H", buffer, 2)
                offset = 4
            elif length == 127:
                if len(buffer) < 10:
                    return
                (length,) = struct.unpack_from("!Q", buffer, 2)
                offset = 10
            if self._max and length > self._max:
                msg = f"websocket frame of {length} bytes exceeds {self._max}"
                raise Broken(msg)
            if len(buffer) < offset + length:
                return
            payload = bytes(buffer[offset : offset + length])
            del buffer[: offset + length]
            self._frame(first & 0x80 != 0, first & 0x0F, payload)

    def _frame(self, fin: bool, opcode: int, payload: bytes) -> None:
        if opcode in (_TEXT, _BINARY, _CONTINUATION):
            if (opcode == _CONTINUATION) != self._in_message:
                msg = "the server interleaved or misordered message fragments"
                raise Broken(msg)
            self._in_message = not fin
            self._fragments.append(payload)
            self._fragment_size += len(payload)
            if self._max and self._fragment_size > self._max:
                msg = f"websocket message exceeds {self._max} bytes"
                raise Broken(msg)
            if fin:
                message = b"".join(self._fragments)
                self._fragments.clear()
                self._fragment_size = 0
                self._messages.append(message)
                self._buffered += len(message)
        elif opcode == _PING:
            self._send(_PONG, payload)
        elif opcode == _PONG:
            pass
        elif opcode == _CLOSE:
            if not self._close_sent:
                self._send(_CLOSE, payload[:2])
                self._close_sent = True
            self._closed = True
            self._transport.close()
        else:
            msg = f"the server sent a frame with unknown opcode {opcode:#x}"
            raise Broken(msg)

    def _send(self, opcode: int, payload: bytes) -> None:
        if not self._transport.is_closing():
            self._transport.write(_frame(opcode, payload))

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the user's side

    async def receive(self) -> bytes | None:
        """The next message (text as its UTF-8 bytes); ``None`` once the stream closed.

        Raises:
            Broken: the connection failed or the server broke the protocol.
        """
        while not self._messages:
            if self._error is not None:
                raise self._error
            if self._closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        message = self._messages.popleft()
        self._buffered -= len(message)
        if self._paused and self._buffered < _LOW_WATER:
            self._paused = False
            self._transport.resume_reading()
        return message

    async def send_bytes(self, data: bytes) -> None:
        """Send one binary message (waits while the transport's write buffer is full).

        Raises:
            Broken: the stream is closed.
        """
        if self._closed or self._transport.is_closing():
            raise self._error or Broken("the websocket is closed")
        self._send(_BINARY, data)
        if self._drained is not None:
            await self._drained

    async def close(self) -> None:
        """Start the closing handshake (if not done) and close the connection."""
        if not self._close_sent and not self._transport.is_closing():
            self._send(_CLOSE, struct.pack("!H", _NORMAL_CLOSURE))
            self._close_sent = True
        self._closed = True
        self._transport.close()
        self._wake()

    async def __aenter__(self) -> WebSocket:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
