"""One HTTP/1.1 connection of the client: a request written, its answer parsed as it arrives.

A :class:`Connection` is an :class:`asyncio.BufferedProtocol` carrying one exchange at a time.
The task that sent the request waits for the head, then for body pieces;
:meth:`Connection.data_received` hands whatever arrived to llhttp
(:class:`~etctl.runtime._http_parser.AnswerParser`, which the connection is) and wakes it once per
arrival. The pools that own connections are
:mod:`etctl.runtime._http`.

Invariants:

* :meth:`Connection.finished` says a connection may carry another exchange only when its answer
  was read to the end, framed, asked for no close, and nothing arrived beyond its framing;
* an error or a timeout is recorded once, raised at the reader's next wait, and closes the
  connection;
* the read timeout counts silence from the request until the answer's head, then between body
  bytes: interim answers are not progress, so a server that sends ``100 Continue`` forever does not
  keep a request alive (nor can it send more than five);
* a streamed body stops being read from the socket while more than ``_HIGH_WATER`` bytes of it
  wait unread (not a body read whole), and that pause is not silence for the read timeout;
* a ``101`` ends parsing, and only on a request that asked to switch protocols: what follows
  belongs to the protocol switched to (:meth:`detach`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from dataclasses import dataclass
from typing import Final

from etctl.runtime._http_parser import (
    DONE,
    IDLE,
    SWITCHED,
    AnswerParser,
    Broken,
    Headers,
    Response,
    TooLarge,
)

__all__ = ["Broken", "Connection", "Headers", "Response", "Timeout", "TooLarge", "Tunnel"]

_HIGH_WATER: Final = 2**21
# What one read takes at most. asyncio's plain Protocol reads into a fresh 256 KiB object every
# time (its transports' max_size), which glibc maps and unmaps per read (mmap, mremap to the size
# read, munmap: three system calls and a page fault on each answer); a buffered protocol reads
# into one buffer instead, and what was read is copied out at its own size. Below glibc's mmap
# threshold (128 KiB), so the copy comes from the heap.
_READ_SIZE: Final = 2**16
_KEEPALIVE_SECONDS: Final = 30


@dataclass(frozen=True, slots=True)
class Timeout:
    """The bounds of one exchange, in seconds (``None``: that bound does not apply).

    Attributes:
        connect: opening a connection: TCP, the proxy's tunnel and TLS.
        total: the whole exchange, waiting for a free connection, interim answers and reading the
            body included.
        read: the longest silence while an answer is awaited or its body streamed (interim
            answers are not an answer).
    """

    connect: float | None = None
    total: float | None = None
    read: float | None = None


def _keep_alive(transport: asyncio.Transport) -> None:
    """TCP keep-alive probes after 30 s of silence, every 30 s (Go's dialer does the same).

    A peer that vanished without closing (a node gone, a flow dropped by a middlebox) is then
    noticed by the kernel even on a connection nobody writes to, such as a quiet watch.
    """
    sock = transport.get_extra_info("socket")
    if sock is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if hasattr(socket, "TCP_KEEPIDLE"):  # Linux; macOS has TCP_KEEPALIVE instead
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, _KEEPALIVE_SECONDS)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, _KEEPALIVE_SECONDS)


class _ReadBuffer(threading.local):
    """The buffer a thread's connections read into.

    One per thread: each read is copied out in the same callback that filled it, so the
    connections of one event loop share it.
    """

    def __init__(self) -> None:
        self.view = memoryview(bytearray(_READ_SIZE))


_BUFFER = _ReadBuffer()


class Connection(AnswerParser, asyncio.BufferedProtocol):
    """One connection: writes a request, parses its answer as the bytes arrive.

    The consumer (the task that sent the request) waits on :attr:`_waiter` for the head, then for
    body pieces; :meth:`data_received` parses and wakes it. Errors and timeouts are recorded in
    :attr:`_error` and raised at the consumer's next wait.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self._paused = False
        self._collecting = False
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self.closed = False
        # The whole exchange's bound: ``_due`` is the exchange's deadline (None between
        # exchanges), ``_deadline`` one timer armed for ``_armed``, kept from one exchange to the
        # next and moved on when it fires early (see :meth:`_expire`).
        self._due: float | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._armed = 0.0
        self._read_timeout: float | None = None
        self._last_read = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        _keep_alive(transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return _BUFFER.view

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(_BUFFER.view[:nbytes]))

    def data_received(self, data: bytes) -> None:
        state = self.state
        if state == IDLE:
            # Bytes nobody asked for: the connection's framing can no longer be trusted.
            self.fail(Broken(f"unexpected {len(data)} bytes between answers"))
            return
        if state == DONE:
            self.keep_alive = False  # more than the answer held: never reuse the connection
            return
        if state == SWITCHED:
            self.rest += data  # the new protocol's, kept for whoever takes the connection
            return
        try:
            self.feed(data)
        except Broken as exc:
            self.fail(exc)
            return
        if self._read_timeout is not None and self.response is not None:
            self._last_read = self._loop.time()  # interim answers are no progress
        if (
            self.buffered > _HIGH_WATER
            and not self._paused
            and not self._collecting
            and self.transport is not None
        ):
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        return False  # close the transport: half-open connections are of no use here

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._cancel_timers()
        try:
            self.ended()
        except Broken as broken:
            if self._error is None:
                reason = f": {exc!r}" if exc is not None else ""
                self._error = Broken(f"{broken}{reason}")
        self._wake()

    # -- waking, failing, timing out

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def fail(self, exc: BaseException) -> None:
        """End the exchange in progress with ``exc`` (raised to its reader) and close."""
        if self._error is None:
            self._error = exc
        self.abort()
        self._wake()

    def abort(self) -> None:
        """Close the connection at once (unread bytes and all)."""
        self.closed = True
        self._cancel_timers()
        if self.transport is not None:
            self.transport.abort()

    def _cancel_timers(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self._read_timeout = None

    def _expire(self) -> None:
        self._deadline = None
        due = self._due
        if due is None:
            return  # armed for an exchange that is over, and none in flight
        if due > self._armed:  # armed for an earlier exchange: this one's bound is later
            self._arm(due)
            return
        self.fail(TimeoutError())

    def _arm(self, when: float) -> None:
        self._armed = when
        self._deadline = self._loop.call_at(when, self._expire)

    def _check_idle(self) -> None:
        self._idle_timer = None
        timeout = self._read_timeout
        if timeout is None or self.state in (DONE, SWITCHED):
            return
        if self._paused:
            self._last_read = self._loop.time()  # silent because unread, not because idle
        due = self._last_read + timeout
        if self._loop.time() >= due:
            self.fail(TimeoutError())
        else:
            self._idle_timer = self._loop.call_at(due, self._check_idle)

    # -- the consumer's side

    def send(
        self,
        data: bytes,
        timeout: Timeout,
        deadline: float | None,
        *,
        head_only: bool = False,
        upgrade: bool = False,
        limit: int = 0,
    ) -> None:
        """Write a request and start reading its answer under ``timeout``'s bounds.

        Args:
            data: the request, head and body.
            timeout: the exchange's bounds.
            deadline: when the whole exchange must be over (loop time), if ever.
            head_only: the answer has no body (a ``HEAD``).
            upgrade: the request asks to switch protocols (a ``101`` is its answer).
            limit: the largest body accepted (0: no limit).
        """
        self.expect(head_only=head_only, upgrade=upgrade, limit=limit)
        self._collecting = False
        # One timer per connection, not one per exchange: an exchange whose bound is later than
        # the timer's (the usual case, every request having the same timeout) leaves it armed,
        # and the timer moves on when it fires. Arming and cancelling a timer per request cost
        # each request a handle, a push onto the event loop's heap and, later, its removal.
        self._due = deadline
        if deadline is not None:
            timer = self._deadline
            if timer is None:
                self._arm(deadline)
            elif deadline < self._armed:
                timer.cancel()
                self._arm(deadline)
        if timeout.read is not None:
            self._read_timeout = timeout.read
            self._last_read = self._loop.time()
            self._idle_timer = self._loop.call_at(self._last_read + timeout.read, self._check_idle)
        assert self.transport is not None
        self.transport.write(data)

    async def _wait(self) -> None:
        if self._error is not None:
            raise self._error
        waiter = self._loop.create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None
        if self._error is not None:
            raise self._error

    async def head(self) -> Response:
        """The answer's status line and headers (for a 101, the switch)."""
        while (response := self.response) is None:
            await self._wait()
        return response

    def _take(self) -> bytes:
        pieces = self.pieces
        piece = pieces.popleft() if len(pieces) == 1 else b"".join(pieces)
        pieces.clear()
        self.buffered = 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return piece

    async def read(self) -> bytes:
        """Everything of the body that arrived and was not read yet; ``b""`` once complete."""
        while not self.pieces:
            if self.state == DONE:
                return b""
            await self._wait()
        return self._take()

    async def read_all(self) -> bytes:
        """The rest of the body (read without pause: it is wanted whole)."""
        self._collecting = True
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        while self.state != DONE:
            await self._wait()
        return self._take() if self.pieces else b""

    def finished(self) -> bool:
        """True when the answer was read to its end and the connection may carry another."""
        if self.state != DONE or self.pieces or self.closed:
            return False
        self._due = None  # its deadline timer stays armed for the next exchange (``send``)
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self._read_timeout = None
        self.state = IDLE
        return self.keep_alive

    def detach(self) -> tuple[asyncio.Transport, bytes]:
        """Give up the transport after a 101 (with what arrived after the switch)."""
        self._cancel_timers()
        assert self.transport is not None
        rest, self.rest = self.rest, b""
        transport, self.transport = self.transport, None
        self.closed = True
        return transport, rest


class Tunnel(asyncio.Protocol):
    """Reads the proxy's answer to ``CONNECT`` (nothing else is sent before it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.answer: asyncio.Future[Response] = loop.create_future()
        self._parser = AnswerParser()
        self._parser.expect(head_only=True)

    def data_received(self, data: bytes) -> None:
        if self.answer.done():
            return
        try:
            self._parser.feed(data)
        except Broken as exc:
            self.answer.set_exception(exc)
            return
        response = self._parser.response
        if response is not None:
            self.answer.set_result(response)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answer.done():
            self.answer.set_exception(Broken(f"the proxy closed the connection: {exc!r}"))
