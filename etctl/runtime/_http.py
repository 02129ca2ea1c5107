"""HTTP/1.1 on asyncio: the connections and pools every request, watch and exec goes through.

The client speaks to one API server, with JSON bodies it encodes itself, so what it needs of HTTP is
small: a request line and headers out; a status, headers and a body framed by ``Content-Length``,
``chunked`` or the end of the connection back; kept-alive connections reused; a ``101 Switching
Protocols`` handed over to a websocket. That is written here on :class:`asyncio.Protocol`, parsing
each answer as its bytes arrive, so a request costs one write, one wake-up of the waiting task and
one pass over the answer. (A general HTTP client spent more per request than all of the client's
own bookkeeping, and its import was a quarter of the operator's idle memory.)

Invariants:

* a connection carries one exchange at a time and goes back to its pool only when its answer was
  read to the end, framed, and did not ask to close; anything else (a timeout, a broken or
  truncated answer, a caller that stopped reading) closes it, so no connection is ever reused with
  unread bytes of a previous answer in it;
* every wait has a bound: opening a connection ``Timeout.connect``, a whole exchange
  ``Timeout.total``, a silence while an answer is awaited or streamed ``Timeout.read``;
* :class:`NotConnected` means the request never left (the server cannot have acted on it); every
  other failure (:class:`Broken`, :class:`TimeoutError`) may come after the server acted;
* a streamed body stops being read from the socket while more than ``_HIGH_WATER`` bytes of it wait
  unread, so a slow consumer holds back the server instead of filling memory;
* a pool never has more than ``limit`` exchanges in flight (0: no limit); callers beyond it wait,
  first come first served, inside their own timeout.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Final

__all__ = [
    "Broken",
    "Endpoint",
    "Headers",
    "NotConnected",
    "Pool",
    "Proxy",
    "Response",
    "Stream",
    "Timeout",
    "Upgraded",
]

_MAX_HEAD: Final = 64 * 1024
"""The longest status line plus headers accepted (the API server's are a few hundred bytes)."""
_HIGH_WATER: Final = 2**21
_LOW_WATER: Final = 2**19
_NO_BODY_STATUSES: Final = frozenset({204, 304})
_MAX_CHUNK_LINE: Final = 1024
_CRLF: Final = b"\r\n"

# What a connection is reading.
_IDLE, _HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _TO_EOF, _DONE, _SWITCHED = (
    range(10)
)


class NotConnected(Exception):
    """No connection could be opened (refused, unresolvable, TLS or proxy refused): nothing sent."""


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


@dataclass(frozen=True, slots=True)
class Proxy:
    """An HTTP proxy on the way to the server.

    Attributes:
        host: the proxy's host.
        port: the proxy's port.
        tls: whether the proxy itself is reached over TLS (an ``https://`` proxy).
        tunnel_headers: headers of the ``CONNECT`` that opens a tunnel (its credentials).
    """

    host: str
    port: int
    tls: ssl.SSLContext | None = None
    tunnel_headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a pool's connections go.

    Attributes:
        host: the server's host (a name, or an IP address without brackets).
        port: the server's port.
        tls: the TLS settings, ``None`` for plain HTTP.
        server_hostname: the name TLS verifies (``None``: ``host``).
        proxy: the proxy connections go through, if any. Plain HTTP through a proxy sends every
            request to it in absolute form; TLS opens a ``CONNECT`` tunnel first.
    """

    host: str
    port: int
    tls: ssl.SSLContext | None = None
    server_hostname: str | None = None
    proxy: Proxy | None = None
    authority: str = field(init=False)

    def __post_init__(self) -> None:
        host = f"[{self.host}]" if ":" in self.host else self.host
        object.__setattr__(self, "authority", f"{host}:{self.port}")

    @property
    def absolute_form(self) -> bool:
        """True when requests name the whole URL (plain HTTP through a proxy)."""
        return self.proxy is not None and self.tls is None


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


class _Connection(asyncio.Protocol):
    """One connection: writes a request, parses its answer as the bytes arrive.

    The consumer (the task that sent the request) waits on :attr:`_waiter` for the head, then for
    body pieces; :meth:`data_received` parses and wakes it. Errors and timeouts are recorded in
    :attr:`_error` and raised at the consumer's next wait.
    """

    _STEPS: ClassVar[dict[int, Callable[[_Connection], bool]]]
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

    def data_received(self, data: bytes) -> None:
        if self._state == _IDLE:
            # Bytes nobody asked for: the connection's framing can no longer be trusted.
            self._fail(Broken(f"unexpected {len(data)} bytes between answers"))
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
            self._fail(exc)
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
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > _MAX_HEAD:
                msg = f"answer headers exceed {_MAX_HEAD} bytes"
                raise Broken(msg)
            return False
        response = _parse_head(bytes(buffer[:end]))
        del buffer[: end + 4]
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
        buffer = self._buffer
        if len(buffer) < len(_CRLF):
            return False
        if buffer[:2] != _CRLF:
            msg = "chunk not followed by CRLF"
            raise Broken(msg)
        del buffer[:2]
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

    def _fail(self, exc: BaseException) -> None:
        if self._error is None:
            self._error = exc
        self.abort()
        self._wake()

    def abort_exchange(self, exc: BaseException) -> None:
        """End the exchange in progress with ``exc`` (raised to its reader) and close."""
        self._fail(exc)

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
        self._fail(TimeoutError())

    def _check_idle(self) -> None:
        self._idle_timer = None
        timeout = self._read_timeout
        if timeout is None or self._state in (_DONE, _SWITCHED):
            return
        if self._paused:
            self._last_read = self._loop.time()  # silent because unread, not because idle
        due = self._last_read + timeout
        if self._loop.time() >= due:
            self._fail(TimeoutError())
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


_Connection._STEPS = {
    _IDLE: _Connection._step_beyond,
    _HEAD: _Connection._step_head,
    _LENGTH: _Connection._step_data,
    _CHUNK_SIZE: _Connection._step_chunk_size,
    _CHUNK_DATA: _Connection._step_data,
    _CHUNK_END: _Connection._step_chunk_end,
    _TRAILER: _Connection._step_trailer,
    _TO_EOF: _Connection._step_data,
    _DONE: _Connection._step_beyond,
}


class _Tunnel(asyncio.Protocol):
    """Reads the proxy's answer to ``CONNECT`` (nothing else is sent before it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.answer: asyncio.Future[Response] = loop.create_future()
        self._buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n")
        if self.answer.done():
            return
        if end >= 0:
            try:
                self.answer.set_result(_parse_head(bytes(self._buffer[:end])))
            except Broken as exc:
                self.answer.set_exception(exc)
        elif len(self._buffer) > _MAX_HEAD:
            self.answer.set_exception(Broken("the proxy's answer to CONNECT is too long"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answer.done():
            self.answer.set_exception(Broken(f"the proxy closed the connection: {exc!r}"))


class Stream:
    """A body being read as it arrives (a watch); close it when done.

    Attributes:
        response: the status line and headers.
    """

    def __init__(self, pool: Pool, connection: _Connection, response: Response) -> None:
        self._pool = pool
        self._connection: _Connection | None = connection
        self.response = response

    async def read(self) -> bytes:
        """The next bytes of the body; ``b""`` at its end.

        Raises:
            TimeoutError: nothing arrived for the stream's read timeout.
            Broken: the connection failed.
        """
        connection = self._connection
        if connection is None:
            return b""
        try:
            piece = await connection.read()
        except BaseException:
            self.close()
            raise
        if not piece:
            self.close()
        return piece

    async def read_all(self, limit: int) -> bytes:
        """Up to ``limit`` bytes of the body (an error answer's ``Status``), then close."""
        pieces: list[bytes] = []
        size = 0
        try:
            while size < limit and (piece := await self.read()):
                pieces.append(piece)
                size += len(piece)
        finally:
            self.close()
        return b"".join(pieces)[:limit]

    def close(self) -> None:
        """Stop reading; the connection returns to its pool only if the body was read to its end."""
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool.release(connection)


class Upgraded:
    """A connection the server switched to another protocol (``101``): its transport is yours."""

    def __init__(self, response: Response, transport: asyncio.Transport, rest: bytes) -> None:
        self.response = response
        self.transport = transport
        self.rest = rest
        """Bytes of the new protocol that arrived with the switch."""


class Pool:
    """Kept-alive connections to one :class:`Endpoint`, at most ``limit`` in use (0: no limit)."""

    def __init__(self, endpoint: Endpoint, *, limit: int) -> None:
        self.endpoint = endpoint
        self._limit = limit
        self._active = 0
        self._idle: list[_Connection] = []
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._busy: set[_Connection] = set()
        self._closed = False

    # -- slots

    async def _slot(self, deadline: float | None) -> None:
        if not self._limit or (self._active < self._limit and not self._waiters):
            self._active += 1
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout_at(deadline):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self._free_slot()  # handed over just as the wait ended: pass it on
            else:
                waiter.cancel()
            if isinstance(exc, TimeoutError):
                msg = f"no free connection to {self.endpoint.authority} in time"
                raise NotConnected(msg) from exc
            raise
        # The slot was handed over by _free_slot: _active already counts it.

    def _free_slot(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._active -= 1

    def release(self, connection: _Connection) -> None:
        """End an exchange: keep the connection if it can carry another, else close it."""
        self._busy.discard(connection)
        if connection.finished() and not self._closed:
            self._idle.append(connection)
        else:
            connection.abort()
        self._free_slot()

    # -- connections

    async def _connection(self, timeout: Timeout, deadline: float | None) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
        if self._closed:
            msg = "the connection pool is closed"
            raise NotConnected(msg)
        loop = asyncio.get_running_loop()
        bound = None if timeout.connect is None else loop.time() + timeout.connect
        if deadline is not None and (bound is None or deadline < bound):
            bound = deadline
        try:
            async with asyncio.timeout_at(bound):
                return await self._open(loop)
        except TimeoutError as exc:
            msg = f"connecting to {self.endpoint.authority} took over {timeout.connect} s"
            raise NotConnected(msg) from exc
        except (OSError, ssl.SSLError, Broken) as exc:
            raise NotConnected(str(exc) or repr(exc)) from exc

    async def _open(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        endpoint = self.endpoint
        proxy = endpoint.proxy
        connection = _Connection(loop)
        if proxy is None:
            await loop.create_connection(
                lambda: connection,
                endpoint.host,
                endpoint.port,
                ssl=endpoint.tls,
                server_hostname=(endpoint.server_hostname or endpoint.host)
                if endpoint.tls
                else None,
            )
            return connection
        if endpoint.tls is None:  # plain HTTP: the proxy takes absolute-form requests
            await loop.create_connection(
                lambda: connection,
                proxy.host,
                proxy.port,
                ssl=proxy.tls,
                server_hostname=proxy.host if proxy.tls else None,
            )
            return connection
        tunnel = _Tunnel(loop)
        transport, _ = await loop.create_connection(
            lambda: tunnel,
            proxy.host,
            proxy.port,
            ssl=proxy.tls,
            server_hostname=proxy.host if proxy.tls else None,
        )
        try:
            lines = [f"CONNECT {endpoint.authority} HTTP/1.1", f"Host: {endpoint.authority}"]
            lines += [f"{name}: {value}" for name, value in proxy.tunnel_headers]
            transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            answer = await tunnel.answer
            if not 200 <= answer.status < 300:
                msg = f"the proxy refused the tunnel: {answer.status} {answer.reason}"
                raise Broken(msg)
            secure = await loop.start_tls(
                transport,
                connection,
                endpoint.tls,
                server_hostname=endpoint.server_hostname or endpoint.host,
            )
        except BaseException:
            transport.abort()
            raise
        assert isinstance(secure, asyncio.Transport)
        connection.connection_made(secure)
        return connection

    async def _exchange(
        self, request: bytes, timeout: Timeout, *, head_only: bool = False
    ) -> tuple[_Connection, Response]:
        """Send ``request`` on a connection of this pool; its answer's head. Holds one slot."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout.total is None else loop.time() + timeout.total
        await self._slot(deadline)
        connection: _Connection | None = None
        try:
            connection = await self._connection(timeout, deadline)
            self._busy.add(connection)
            connection.send(request, timeout, deadline, head_only=head_only)
            return connection, await connection.head()
        except BaseException:
            if connection is not None:
                self._busy.discard(connection)
                connection.abort()
            self._free_slot()
            raise

    async def request(
        self, request: bytes, timeout: Timeout, *, head_only: bool = False
    ) -> tuple[Response, bytes]:
        """Send a request; its answer, body read in full.

        Raises:
            NotConnected: no connection could be opened (nothing was sent).
            Broken: the connection failed or the answer was not HTTP.
            TimeoutError: a bound of ``timeout`` passed.
        """
        connection, response = await self._exchange(request, timeout, head_only=head_only)
        try:
            body = await connection.read_all()
        finally:
            self.release(connection)
        return response, body

    async def stream(self, request: bytes, timeout: Timeout) -> Stream:
        """Send a request; a :class:`Stream` of its answer's body, which the caller must close."""
        connection, response = await self._exchange(request, timeout)
        return Stream(self, connection, response)

    async def upgrade(self, request: bytes, timeout: Timeout) -> Upgraded | Stream:
        """Send an upgrade request: the switched connection, or a :class:`Stream` of the refusal.

        The switched connection leaves the pool (and frees its slot): its new owner closes it.
        """
        connection, response = await self._exchange(request, timeout)
        if response.status != 101:
            return Stream(self, connection, response)
        self._busy.discard(connection)
        transport, rest = connection.detach()
        self._free_slot()
        return Upgraded(response, transport, rest)

    async def close(self) -> None:
        """Close every connection, those in use included (their readers get :class:`Broken`)."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            # At once, without TLS's closing handshake: HTTP framing never depends on it, and a
            # handshake still under way when the event loop ends leaves the socket open.
            connection.abort()
        for connection in list(self._busy):
            connection.abort_exchange(Broken("the client was closed"))
