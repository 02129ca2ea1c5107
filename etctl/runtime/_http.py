"""HTTP/1.1 on asyncio: the connection pools every request, watch and exec goes through.

The client speaks to one API server, with JSON bodies it encodes itself, so what it needs of HTTP is
small: a request line and headers out; a status, headers and a body framed by ``Content-Length``,
``chunked`` or the end of the connection back; kept-alive connections reused; a ``101 Switching
Protocols`` handed over to a websocket. One connection's side of that (writing, parsing as the
bytes arrive: one write, one wake-up and one pass per request) is
:mod:`etctl.runtime._http_connection`; this module opens connections (directly, or through a proxy
in absolute form or a ``CONNECT`` tunnel), pools them and hands out answers whole
(:meth:`Pool.request`), as a :class:`Stream` (watches) or switched (:meth:`Pool.upgrade`). (A
general HTTP client spent more per request than all of the client's own bookkeeping, and its
import was a quarter of the operator's idle memory.)

Invariants:

* a connection carries one exchange at a time and goes back to its pool only when its answer was
  read to the end, framed, and did not ask to close; anything else (a timeout, a broken or
  truncated answer, a caller that stopped reading) closes it, so no connection is ever reused with
  unread bytes of a previous answer in it;
* every wait has a bound: opening a connection ``Timeout.connect``, a whole exchange
  ``Timeout.total``, a silence while an answer is awaited or streamed ``Timeout.read``;
* :class:`NotConnected` means the request never left (the server cannot have acted on it); every
  other failure (:class:`Broken`, :class:`TimeoutError`) may come after the server acted;
* a streamed body stops being read from the socket while 2 MiB of it wait unread, so a slow
  consumer holds back the server instead of filling memory;
* a pool never has more than ``limit`` exchanges in flight (0: no limit); callers beyond it wait,
  first come first served, inside their own timeout.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from etctl.runtime._http_connection import (
    Broken,
    Connection,
    Headers,
    Response,
    Timeout,
    TooLarge,
    Tunnel,
)

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
    "TooLarge",
    "Upgraded",
]


class NotConnected(Exception):
    """No connection could be opened (refused, unresolvable, TLS or proxy refused): nothing sent."""


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


class Stream:
    """A body being read as it arrives (a watch); close it when done.

    Attributes:
        response: the status line and headers.
    """

    def __init__(self, pool: Pool, connection: Connection, response: Response) -> None:
        self._pool = pool
        self._connection: Connection | None = connection
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
    """Kept-alive connections to one :class:`Endpoint`, at most ``limit`` in use (0: no limit).

    A connection idle for ``idle_timeout`` seconds is closed instead of reused (client-go's
    ``IdleConnTimeout``, 90 s): load balancers and NAT gateways drop idle flows silently (Azure's
    after 4 minutes), and a request written into such a connection waits for its whole timeout.
    """

    def __init__(self, endpoint: Endpoint, *, limit: int, idle_timeout: float = 90.0) -> None:
        self.endpoint = endpoint
        self._idle_timeout = idle_timeout
        # Slots for exchanges in flight, handed out first come first served: ``_taken`` counts
        # the slots in use, ``_queue`` the callers waiting for one (a freed slot passes straight
        # to the first of them). Not asyncio.Semaphore: its acquire() scans its waiters even when
        # a slot is free, and a request's own cost is counted in microseconds.
        self._limit = limit
        self._taken = 0
        self._queue: deque[asyncio.Future[None]] = deque()
        self._idle: list[tuple[float, Connection]] = []  # (released at, connection), oldest first
        self._busy: set[Connection] = set()
        self._closed = False

    # -- slots

    def _free(self) -> bool:
        """Take a slot when one is free and nobody is ahead (always, without a limit)."""
        if not self._limit:
            return True
        if self._taken < self._limit and not self._queue:
            self._taken += 1  # nothing to wait for or to bound
            return True
        return False

    async def _slot(self, deadline: float | None) -> None:
        """A slot: a free one at once, else the next freed, in turn, until ``deadline``."""
        if self._free():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(waiter)
        try:
            async with asyncio.timeout_at(deadline):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self._free_slot()  # handed a slot just as it gave up: the next one gets it
            elif waiter in self._queue:
                self._queue.remove(waiter)
            if isinstance(exc, TimeoutError):
                msg = f"no free connection to {self.endpoint.authority} in time"
                raise NotConnected(msg) from exc
            raise

    def _free_slot(self) -> None:
        if not self._limit:
            return
        queue = self._queue
        while queue:
            waiter = queue.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes on: still taken
                return
        self._taken -= 1

    def release(self, connection: Connection) -> None:
        """End an exchange: keep the connection if it can carry another, else close it."""
        self._busy.discard(connection)
        if connection.finished() and not self._closed:
            self._idle.append((asyncio.get_running_loop().time(), connection))
        else:
            connection.abort()
        self._free_slot()

    # -- connections

    def _reused(self, loop: asyncio.AbstractEventLoop) -> Connection | None:
        """An idle connection to carry the next exchange, if one is still good."""
        idle = self._idle
        if idle:
            stale = loop.time() - self._idle_timeout
            while idle and idle[0][0] < stale:  # the oldest first: close what idled too long
                idle.pop(0)[1].abort()
            while idle:
                connection = idle.pop()[1]  # the most recently used: the likeliest to be alive
                if not connection.closed:
                    return connection
        return None

    async def _connection(self, timeout: Timeout, deadline: float | None) -> Connection:
        """A new connection (when :meth:`_reused` had none), opened within the bounds."""
        loop = asyncio.get_running_loop()
        if self._closed:
            msg = "the connection pool is closed"
            raise NotConnected(msg)
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

    async def _open(self, loop: asyncio.AbstractEventLoop) -> Connection:
        endpoint = self.endpoint
        proxy = endpoint.proxy
        connection = Connection(loop)
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
        tunnel = Tunnel(loop)
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

    def _unused(self, connection: Connection) -> None:
        """Give back a connection no request was written to: it is as good as before."""
        if connection.closed or self._closed:
            connection.abort()
        else:
            self._idle.append((asyncio.get_running_loop().time(), connection))
        self._free_slot()

    async def _exchange(
        self,
        request: bytes,
        timeout: Timeout,
        *,
        head_only: bool = False,
        upgrade: bool = False,
        limit: int = 0,
        before_send: Callable[[], None] | None = None,
    ) -> tuple[Connection, Response]:
        """Send ``request`` on a connection of this pool; its answer's head. Holds one slot.

        ``before_send`` runs with the connection in hand, with no wait between it and the write:
        when it raises, nothing is sent and the connection goes back to the pool unused.
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout.total is None else loop.time() + timeout.total
        # A free slot and a kept-alive connection, the usual case, are taken without awaiting.
        if not self._free():
            await self._slot(deadline)
        try:
            connection = self._reused(loop) or await self._connection(timeout, deadline)
        except BaseException:
            self._free_slot()
            raise
        if before_send is not None:
            try:
                before_send()
            except BaseException:
                self._unused(connection)
                raise
        try:
            self._busy.add(connection)
            connection.send(
                request, timeout, deadline, head_only=head_only, upgrade=upgrade, limit=limit
            )
            return connection, await connection.head()
        except BaseException:
            self._busy.discard(connection)
            connection.abort()
            self._free_slot()
            raise

    async def request(
        self,
        request: bytes,
        timeout: Timeout,
        *,
        head_only: bool = False,
        limit: int = 0,
        before_send: Callable[[], None] | None = None,
    ) -> tuple[Response, bytes]:
        """Send a request; its answer, body read in full.

        Args:
            request: the request's bytes.
            timeout: the exchange's bounds.
            head_only: the answer has no body (a ``HEAD``).
            limit: the largest body accepted (0: no limit).
            before_send: called at the last moment before the request is written, with nothing
                awaited in between (a fence's check); what it raises is raised, nothing sent.

        Raises:
            NotConnected: no connection could be opened (nothing was sent).
            TooLarge: the body exceeds ``limit`` (refused as soon as that is known).
            Broken: the connection failed or the answer was not HTTP.
            TimeoutError: a bound of ``timeout`` passed.
        """
        connection, response = await self._exchange(
            request, timeout, head_only=head_only, limit=limit, before_send=before_send
        )
        try:
            body = await connection.read_all()
        finally:
            self.release(connection)
        return response, body

    async def stream(self, request: bytes, timeout: Timeout) -> Stream:
        """Send a request; a :class:`Stream` of its answer's body, which the caller must close."""
        connection, response = await self._exchange(request, timeout)
        return Stream(self, connection, response)

    async def upgrade(
        self, request: bytes, timeout: Timeout, *, before_send: Callable[[], None] | None = None
    ) -> Upgraded | Stream:
        """Send an upgrade request: the switched connection, or a :class:`Stream` of the refusal.

        The switched connection leaves the pool (and frees its slot): its new owner closes it.
        ``before_send`` is :meth:`request`'s.
        """
        connection, response = await self._exchange(
            request, timeout, upgrade=True, before_send=before_send
        )
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
        for _, connection in idle:
            # At once, without TLS's closing handshake: HTTP framing never depends on it, and a
            # handshake still under way when the event loop ends leaves the socket open.
            connection.abort()
        for connection in list(self._busy):
            connection.fail(Broken("the client was closed"))
