"""One HTTP/1.1 connection of the client: a request written, its answer parsed as it arrives.

A :class:`Connection` is an :class:`asyncio.Protocol` carrying one exchange at a time. The task
that sent the request waits for the head, then for body pieces; :meth:`Connection.data_received`
parses whatever arrived (status line and headers, then a body framed by ``Content-Length``,
``chunked`` or the end of the connection) and wakes it once per arrival. The pools that own
connections are :mod:`etctl.runtime._http`.

Invariants:

* :meth:`Connection.finished` says a connection may carry another exchange only when its answer
  was read to the end, framed, asked for no close, and nothing arrived beyond its framing;
* an error or a timeout is recorded once, raised at the reader's next wait, and closes the
  connection;
* a streamed body stops being read from the socket while more than ``_HIGH_WATER`` bytes of it
  wait unread (not a body read whole), and that pause is not silence for the read timeout;
* a ``101`` stops parsing: what follows belongs to the protocol switched to (:meth:`detach`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Final

__all__ = ["Broken", "Connection", "Headers", "Response", "Timeout", "Tunnel"]

_MAX_HEAD: Final = 64 * 1024
"""The longest status line plus headers accepted (the API server's are a few hundred bytes)."""
_HIGH_WATER: Final = 2**21
_LOW_WATER: Final = 2**19
_NO_BODY_STATUSES: Final = frozenset({204, 304})
_MAX_CHUNK_LINE: Final = 1024
_CRLF: Final = b"\r\n"
_KEEPALIVE_SECONDS: Final = 30

# What a connection is reading.
_IDLE, _HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _TO_EOF, _DONE, _SWITCHED = (
    range(10)
)


class Broken(Exception):
    """The connection failed, or the answer was not HTTP, after the request may have been sent."""


@dataclass(frozen=True, slots=True)
class Timeout:
    """The bounds of one exchange, in seconds (``None``: that bound does not apply).

    Attributes:
        connect: opening a connection: TCP, the proxy's tunnel and TLS.
        total: the whole exchange, waiting for a free connection and reading the body included.
        read: the longest silence while an answer is awaited or its body streamed.
    """

    connect: float | None = None
    total: float | None = None
    read: float | None = None


class Headers(dict[str, str]):
    """Response headers, looked up regardless of case (stored under lower-case names).

    A header that appears several times holds its values joined by ``", "`` (RFC 9110 5.3).
    """

    __slots__ = ()

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name.lower() if isinstance(name, str) else name)

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)


@dataclass(frozen=True, slots=True)
class Response:
    """A status line and headers (the body is read separately)."""

    status: int
    reason: str
    headers: Headers


def _parse_head(head: bytes) -> Response:
    """The status line and headers of an answer (``head`` without the blank line)."""
    try:
        text = head.decode("latin-1")
        status_line, _, rest = text.partition("\r\n")
        version, _, status_reason = status_line.partition(" ")
        code, _, reason = status_reason.partition(" ")
        status = int(code)
    except ValueError as exc:
        msg = f"not an HTTP answer: {head[:80]!r}"
        raise Broken(msg) from exc
    if not version.startswith("HTTP/1.") or not 100 <= status <= 999:
        msg = f"not an HTTP/1.x answer: {head[:80]!r}"
        raise Broken(msg)
    headers = Headers()
    for line in rest.split("\r\n") if rest else ():
        name, colon, value = line.partition(":")
        if not colon or not name or name[-1] in " \t":
            msg = f"malformed header line {line[:80]!r}"
            raise Broken(msg)
        key = name.lower()
        value = value.strip(" \t")
        previous = dict.get(headers, key)
        dict.__setitem__(headers, key, value if previous is None else f"{previous}, {value}")
    dict.__setitem__(headers, ":version", version)
    return Response(status, reason, headers)


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


def _take_head(buffer: bytearray) -> Response | None:
    """The status line and headers at the front of ``buffer``, consumed; ``None`` until complete.

    Raises:
        Broken: they exceed ``_MAX_HEAD`` bytes, or are not HTTP.
    """
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > _MAX_HEAD:
            msg = f"answer headers exceed {_MAX_HEAD} bytes"
            raise Broken(msg)
        return None
    response = _parse_head(bytes(buffer[:end]))
    del buffer[: end + 4]
    return response


class Connection(asyncio.Protocol):
    """One connection: writes a request, parses its answer as the bytes arrive.

    The consumer (the task that sent the request) waits on :attr:`_waiter` for the head, then for
    body pieces; :meth:`data_received` parses and wakes it. Errors and timeouts are recorded in
    :attr:`_error` and raised at the consumer's next wait.
    """

    _STEPS: ClassVar[dict[int, Callable[[Connection], bool]]]
    """What parses the buffer in each state (filled in below the class)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._state = _IDLE
        self._remaining = 0
        self._response: Response | None = None
        self._pieces: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._collecting = False
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._head_only = False
        self._keep_alive = False
        self.closed = False
        self._deadline: asyncio.TimerHandle | None = None
        self._read_timeout: float | None = None
        self._last_read = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        _keep_alive(transport)

    def data_received(self, data: bytes) -> None:
        if self._state == _IDLE:
            # Bytes nobody asked for: the connection's framing can no longer be trusted.
            self.fail(Broken(f"unexpected {len(data)} bytes between answers"))
            return
        if self._state == _DONE:
            self._keep_alive = False  # more than the answer held: never reuse the connection
            return
        if self._read_timeout is not None:
            self._last_read = self._loop.time()
        self._buffer += data
        try:
            self._parse()
        except Broken as exc:
            self.fail(exc)
            return
        if (
            self._buffered > _HIGH_WATER
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
        if self._state == _TO_EOF:
            self._state = _DONE  # a body framed by the end of the connection is complete
        elif self._state not in (_IDLE, _DONE, _SWITCHED) and self._error is None:
            reason = f": {exc!r}" if exc is not None else ""
            self._error = Broken(f"connection closed before the answer was complete{reason}")
        self._wake()

    # -- parsing

    def _parse(self) -> None:
        """Consume what the buffer holds of the answer; each step says whether it went on."""
        while self._buffer and self._state != _SWITCHED:
            if not self._STEPS[self._state](self):
                return

    def _step_head(self) -> bool:
        response = _take_head(self._buffer)
        if response is None:
            return False
        if response.status == 101:
            self._response = response
            self._state = _SWITCHED  # what follows belongs to the protocol switched to
        elif response.status >= 200:  # not an interim answer (100, 103), which is skipped
            self._begin_body(response)
        return True

    def _step_data(self) -> bool:
        buffer = self._buffer
        state = self._state
        take = len(buffer) if state == _TO_EOF else min(self._remaining, len(buffer))
        self._pieces.append(bytes(buffer[:take]) if take < len(buffer) else bytes(buffer))
        self._buffered += take
        del buffer[:take]
        if state != _TO_EOF:
            self._remaining -= take
            if not self._remaining:
                self._state = _DONE if state == _LENGTH else _CHUNK_END
        return True

    def _line(self, limit: int, what: str) -> bytes | None:
        """The next CRLF-terminated line, consumed, without its CRLF; ``None`` until complete."""
        buffer = self._buffer
        end = buffer.find(_CRLF)
        if end < 0:
            if len(buffer) > limit:
                msg = f"{what} longer than {limit} bytes"
                raise Broken(msg)
            return None
        line = bytes(buffer[:end])
        del buffer[: end + 2]
        return line

    def _step_chunk_size(self) -> bool:
        line = self._line(_MAX_CHUNK_LINE, "chunk size line")
        if line is None:
            return False
        text = line.split(b";", 1)[0].strip()
        try:
            size = int(text, 16)
        except ValueError:
            size = -1
        if size < 0 or not text.isalnum():
            msg = f"bad chunk size {text[:20]!r}"
            raise Broken(msg)
        self._remaining = size
        self._state = _CHUNK_DATA if size else _TRAILER
        return True

    def _step_chunk_end(self) -> bool:
        line = self._line(len(_CRLF), "the end of a chunk")
        if line is None:
            return False
        if line:
            msg = "chunk not followed by CRLF"
            raise Broken(msg)
        self._state = _CHUNK_SIZE
        return True

    def _step_trailer(self) -> bool:
        line = self._line(_MAX_HEAD, "chunked trailer line")
        if line is None:
            return False
        if not line:
            self._state = _DONE
        return True

    def _step_beyond(self) -> bool:
        # More bytes than the answer's framing: the answer stands, the connection is not reused.
        self._buffer.clear()
        self._keep_alive = False
        return False

    def _begin_body(self, response: Response) -> None:
        self._response = response
        headers = response.headers
        connection = (headers.get("connection") or "").lower()
        http10 = headers[":version"] == "HTTP/1.0"
        self._keep_alive = "close" not in connection and (not http10 or "keep-alive" in connection)
        if self._head_only or response.status in _NO_BODY_STATUSES:
            self._state = _DONE
            return
        encoding = headers.get("transfer-encoding")
        if encoding is not None:
            if encoding.lower().rsplit(",", 1)[-1].strip() != "chunked":
                msg = f"unsupported transfer-encoding {encoding!r}"
                raise Broken(msg)
            self._state = _CHUNK_SIZE
            return
        length = headers.get("content-length")
        if length is None:
            self._state = _TO_EOF
            self._keep_alive = False
            return
        try:
            self._remaining = int(length)
        except ValueError as exc:
            msg = f"bad content-length {length!r}"
            raise Broken(msg) from exc
        if self._remaining < 0:
            msg = f"bad content-length {length!r}"
            raise Broken(msg)
        self._state = _LENGTH if self._remaining else _DONE

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
        self.fail(TimeoutError())

    def _check_idle(self) -> None:
        self._idle_timer = None
        timeout = self._read_timeout
        if timeout is None or self._state in (_DONE, _SWITCHED):
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
        self, data: bytes, timeout: Timeout, deadline: float | None, *, head_only: bool
    ) -> None:
        """Write a request and start reading its answer under ``timeout``'s bounds."""
        self._state = _HEAD
        self._response = None
        self._collecting = False
        self._head_only = head_only
        self._keep_alive = False
        if deadline is not None:
            self._deadline = self._loop.call_at(deadline, self._expire)
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
        while self._response is None:
            await self._wait()
        return self._response

    def _take(self) -> bytes:
        pieces = self._pieces
        piece = pieces.popleft() if len(pieces) == 1 else b"".join(pieces)
        pieces.clear()
        self._buffered = 0
        if self._paused and self._buffered < _LOW_WATER and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return piece

    async def read(self) -> bytes:
        """Everything of the body that arrived and was not read yet; ``b""`` once complete."""
        while not self._pieces:
            if self._state == _DONE:
                return b""
            await self._wait()
        return self._take()

    async def read_all(self) -> bytes:
        """The rest of the body (read without pause: it is wanted whole)."""
        self._collecting = True
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        while self._state != _DONE:
            await self._wait()
        return self._take() if self._pieces else b""

    def finished(self) -> bool:
        """True when the answer was read to its end and the connection may carry another."""
        if self._state != _DONE or self._pieces or self._buffer or self.closed:
            return False
        self._cancel_timers()
        self._state = _IDLE
        return self._keep_alive

    def detach(self) -> tuple[asyncio.Transport, bytes]:
        """Give up the transport after a 101 (with what arrived after the switch)."""
        self._cancel_timers()
        assert self.transport is not None
        rest = bytes(self._buffer)
        self._buffer.clear()
        transport, self.transport = self.transport, None
        self.closed = True
        return transport, rest


Connection._STEPS = {  # data_received never parses while _IDLE, nor past _SWITCHED
    _HEAD: Connection._step_head,
    _LENGTH: Connection._step_data,
    _CHUNK_SIZE: Connection._step_chunk_size,
    _CHUNK_DATA: Connection._step_data,
    _CHUNK_END: Connection._step_chunk_end,
    _TRAILER: Connection._step_trailer,
    _TO_EOF: Connection._step_data,
    _DONE: Connection._step_beyond,
}


class Tunnel(asyncio.Protocol):
    """Reads the proxy's answer to ``CONNECT`` (nothing else is sent before it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.answer: asyncio.Future[Response] = loop.create_future()
        self._buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        if self.answer.done():
            return
        self._buffer += data
        try:
            response = _take_head(self._buffer)
        except Broken as exc:
            self.answer.set_exception(exc)
            return
        if response is not None:
            self.answer.set_result(response)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answer.done():
            self.answer.set_exception(Broken(f"the proxy closed the connection: {exc!r}"))
