"""The client's transport seam: one HTTP exchange, as a request and a response.

A :class:`~etctl.runtime.Client` sends every request and starts every watch through an
:class:`HttpTransport`: one method, :meth:`HttpTransport.handle`, that takes an
:class:`HttpRequest` and returns the :class:`HttpResponse` the server gave (httpx's
``AsyncBaseTransport.handle_async_request`` is the model). Everything above it is the client's
(encoding, retries, the 401 refresh, fences, mapping statuses to :mod:`etctl.errors`); everything
below it is the transport's (connections, TLS, proxies, credentials, limits). The client's own
transport is :class:`~etctl.runtime._transport.Transport`, etctl's HTTP/1.1 over pooled
connections; a test hands the client another one (``etctl.testing.MockTransport``) and answers its
requests without a server.

The contract, which :class:`~etctl.runtime._transport.Transport` keeps and a test transport
should:

* a response of any status is returned, never raised: the client maps statuses to errors;
* a failure to get an answer raises :class:`~etctl.errors.TransportError`, or
  :class:`~etctl.errors.RequestNotSent` when the server provably saw nothing (the client retries
  only what is safe to repeat, and relies on that distinction for creates);
* a request with ``stream=True`` (a watch) answers with its body unread: ``stream`` is read as it
  arrives, and the client closes it; a non-2xx answer to it carries its (error) ``body`` instead;
* every exchange is bounded by ``timeout``;
* ``before_send``, when given, is called just before the request goes out, and what it raises
  stops the request unsent.

Opening a websocket (``exec``) is not an HTTP exchange; a transport that can opens them through
:class:`Upgrades`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from etctl.runtime._http import Timeout
from etctl.runtime._target import Query

if TYPE_CHECKING:
    from etctl.runtime._websocket import WebSocket

__all__ = ["Body", "Credentials", "HttpRequest", "HttpResponse", "HttpTransport", "Upgrades"]


class Body(Protocol):
    """A response body read as it arrives (a watch)."""

    async def read(self) -> bytes:
        """The next bytes; ``b""`` at the end. Raises ``TimeoutError`` after the read timeout."""
        ...

    def close(self) -> None:
        """Stop reading and let the connection go."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpRequest:
    """One request the client sends.

    Attributes:
        method: the HTTP method.
        path: the URL path below the server's root (``/api/v1/namespaces/a/pods``).
        query: the query parameters, in order.
        body: the encoded body (JSON), or None.
        content_type: the body's content type (``application/json`` when None).
        accept: the ``Accept`` header.
        timeout: the exchange's bounds (connect and total; connect and read-idle for a stream).
        stream: read the answer's body as it arrives (a watch) instead of whole.
        before_send: called at the last moment before the request is written to its connection,
            nothing awaited in between; what it raises is raised and nothing is sent (a write's
            leader fence, checked again after waiting for a connection).
    """

    method: str
    path: str
    query: Query = ()
    body: bytes | None = None
    content_type: str | None = None
    accept: str = "application/json"
    timeout: Timeout = field(default_factory=lambda: Timeout(connect=10.0, total=30.0))
    stream: bool = False
    before_send: Callable[[], None] | None = None


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """The server's answer.

    Attributes:
        status: the HTTP status.
        headers: the answer's headers (names as the server wrote them; ``Retry-After`` is read).
        body: the whole body (for a stream: only on a non-2xx answer).
        stream: the body being read, for a 2xx answer to a ``stream`` request.
    """

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    stream: Body | None = None


class HttpTransport(Protocol):
    """Where a client's requests go (see the module docstring)."""

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Send ``request`` and return the answer, whatever its status.

        Raises:
            RequestNotSent: the server provably saw nothing (safe to repeat).
            TransportError: no answer (the server may have acted).
        """
        ...

    async def close(self) -> None:
        """Release what the transport holds (idempotent)."""
        ...


@runtime_checkable
class Upgrades(Protocol):
    """A transport that opens websockets (``exec``) too."""

    async def ws_connect(
        self,
        path: str,
        *,
        query: Query,
        protocols: Sequence[str],
        timeout: float,
        before_send: Callable[[], None] | None = None,
    ) -> WebSocket:
        """Open a websocket at ``path``, the server switching to one of ``protocols``.

        ``before_send`` is as an :class:`HttpRequest`'s.
        """
        ...


@runtime_checkable
class Credentials(Protocol):
    """A transport whose credential can be reloaded after the server refused it (a 401)."""

    @property
    def refreshable(self) -> bool:
        """True when there is something to reload (an exec plugin, a token file)."""
        ...

    async def refresh(self) -> None:
        """Reload the credential the server last refused (once for a burst of refusals)."""
        ...
