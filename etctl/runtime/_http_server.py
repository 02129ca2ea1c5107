"""A small HTTP/1.1 server on asyncio streams, for the manager's metrics, probes and webhooks.

It serves handlers that answer ``GET`` and ``HEAD`` (the scraper's and the kubelet's requests) by
default, or the methods a listener is given (``POST`` for webhooks), without any web framework: the
manager's idle footprint is part of the product. A handler is a plain function (quick and
synchronous: probes) or a coroutine function (webhooks). A listener may speak TLS and may put a
guard in front of every handler: an asynchronous check that answers in the handler's stead (401,
403) or lets the request through (:mod:`etctl.runtime._delegated_auth`). Its TLS settings are
asked for when the first connection arrives, not at start: OpenSSL's server side and a loaded
certificate weigh about a megabyte, which an operator nobody scrapes never needs. Invariants:

* **Bounded input.** A request line over 8 KiB is answered 414, a header line over 8 KiB, a head
  over 16 KiB or over 100 fields 431; a request body is read up to the listener's ``max_body``
  (4 KiB by default, thrown away by handlers that need none; 413 beyond, 411 for a chunked one).
  Malformed requests get 400, a major version other than 1 gets 505. Every such error answer
  closes the connection and is logged with its reason.
* **Answers.** Every answer carries ``Content-Length`` (and ``Date``) and is written at once (one
  TLS record, one wake-up of its client); a ``HEAD`` answer has the headers ``GET`` would have
  and no body. An unknown path is 404, a method the listener does not serve 405 with ``Allow``
  listing those it does. A handler that raises answers 500 (and is logged); the connection lives
  on.
* **Keep-alive.** HTTP/1.1 connections stay open unless the request says ``Connection: close``;
  HTTP/1.0 ones close unless it says ``Connection: keep-alive``. Pipelined requests are answered
  in order.
* **Timeouts.** From connecting, or from the end of the previous answer, a client has ``timeout``
  seconds to send a whole request (head and body), and each answer must be taken within
  ``timeout``. An idle or silent connection (not a byte of a request) is dropped without an
  answer; a request begun but not finished in time, even a request line cut short, gets 408; both
  close the connection. A TLS handshake must also end within ``timeout``.
* **Owned connections.** Each connection runs in the task asyncio's stream server starts for it;
  :meth:`Listener.close` stops accepting, cancels every such task (a cancelled connection aborts
  its socket at once and ends normally) and waits a bounded time, so closing never hangs on a
  client, whatever :meth:`asyncio.Server.wait_closed` does on this Python version. A connection
  task never ends with an exception: asyncio would report it as unhandled.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import re
import ssl
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import parse_qs, unquote, urlsplit

from etctl.errors import EtctlError
from etctl.log import get_logger

__all__ = [
    "DEFAULT_MAX_BODY",
    "DEFAULT_TIMEOUT",
    "Guard",
    "Handler",
    "Listener",
    "Request",
    "Response",
    "Router",
    "TlsSettings",
    "text",
]

log = get_logger(__name__)

DEFAULT_TIMEOUT = 15.0
"""Seconds a client may take to send a request, or to take an answer."""

_MAX_LINE = 8192  # the request line and each header line (also the stream reader's buffer limit)
_MAX_HEAD = 16384  # the header section in all
_MAX_FIELDS = 100
DEFAULT_MAX_BODY = 4096
"""The largest request body a listener reads by default (probes and scrapes need none)."""
_LINGER = 2.0  # how long an error answer waits for the client to stop sending
_CLOSE_GRACE = 1.0  # how long close() waits for aborted connections to finish
_ALLOWED = ("GET", "HEAD")

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSION = re.compile(r"HTTP/([0-9])\.([0-9])")
_TARGET_CHARS = re.compile(r"[\x21-\x7e]+")  # visible ASCII: no spaces, no controls
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True, slots=True)
class Request:
    """A request head: ``path`` is percent-decoded, header names are lower case."""

    method: str
    path: str
    query: Mapping[str, list[str]] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    """Each field once; repeated fields joined with ``", "``."""
    body: bytes = b""
    """The request body (at most the listener's ``max_body`` bytes)."""


@dataclass(frozen=True, slots=True)
class Response:
    """An answer: the status, the body and its media type, and any further headers."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


Handler = Callable[[Request], Response | Awaitable[Response]]
"""Answers a request (the server derives ``HEAD`` from ``GET``). A plain function must be quick: it
runs on the loop; a coroutine function may wait, holding only its own connection."""

Router = Callable[[str], Handler | None]
"""The handler of a decoded path, ``None`` for an unknown one (404)."""

Guard = Callable[[Request], Awaitable[Response | None]]
"""Runs before any handler: ``None`` lets the request through, an answer refuses it."""

TlsSettings = Callable[[], Awaitable[ssl.SSLContext]]
"""Makes a listener's TLS settings (asked once, at its first connection)."""


def text(status: int, body: str, *headers: tuple[str, str]) -> Response:
    """A plain-text answer that browsers must not sniff."""
    return Response(
        status,
        body.encode(),
        headers=(("X-Content-Type-Options", "nosniff"), *headers),
    )


class _Reject(Exception):
    """The request cannot be served: answer ``status`` and close the connection."""

    def __init__(self, status: int, reason: str = "") -> None:
        super().__init__(status)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Incoming:
    request: Request
    keep_alive: bool
    http10: bool


class Listener:
    """One listening socket serving ``router``'s handlers (see the module docs).

    Args:
        router: finds the handler of a path.
        timeout: seconds a client may take to send a request or to take an answer.
        tls: serve HTTPS with the settings this makes (``None``: plain HTTP).
        guard: what every request must pass before its handler (``None``: nothing).
        methods: the methods served (``HEAD`` is answered as ``GET`` without a body).
        max_body: the largest request body read, in bytes (413 beyond).
        name: what the server is, for its log lines.
    """

    def __init__(
        self,
        router: Router,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        tls: TlsSettings | None = None,
        guard: Guard | None = None,
        methods: Collection[str] = _ALLOWED,
        max_body: int = DEFAULT_MAX_BODY,
        name: str = "metrics and probe server",
    ) -> None:
        self._router = router
        self._methods = tuple(methods)
        self._max_body = max_body
        self._name = name
        self._timeout = timeout
        self._tls = tls
        self._context: ssl.SSLContext | None = None
        self._making = asyncio.Lock()
        self._guard = guard
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[object]] = set()
        self._closing = False

    async def start(self, host: str | None, port: int) -> tuple[str, int]:
        """Listen on ``host:port`` (every interface for ``None``); return the bound address.

        Raises:
            OSError: the address cannot be bound.
        """
        self._server = await asyncio.start_server(
            self._connection,
            host,
            port,
            limit=_MAX_LINE,
        )
        bound = self._server.sockets[0].getsockname()
        return str(bound[0]), int(bound[1])

    async def close(self) -> None:
        """Stop accepting and drop every connection; returns within about a second. Idempotent."""
        self._closing = True
        if self._server is None:
            return
        self._server.close()
        connections = set(self._connections)
        for task in connections:
            task.cancel()
        if connections:
            await asyncio.wait(connections, timeout=_CLOSE_GRACE)
        # Depending on the Python release this waits for every connection (all aborted above) or
        # for nothing at all: bounded either way.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_CLOSE_GRACE):
                await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        if self._tls is not None:
            # Before anything is read: the client's hello must reach TLS, not the plain stream.
            # (The connection's first step runs before the loop first reads its socket.)
            transport = writer.transport
            assert isinstance(transport, asyncio.ReadTransport)
            transport.pause_reading()
        try:
            if self._tls is not None and not self._closing:
                await self._secure(writer)
            # A connection accepted just before close() is not served.
            if not self._closing and await self._converse(reader, writer):
                await self._linger(reader, writer)
            writer.close()
            async with asyncio.timeout(self._timeout):
                await writer.wait_closed()
        except (OSError, TimeoutError) as exc:
            # The client went away, would not take the rest of an answer or could not shake
            # hands: its loss alone.
            log.debug("a client left early", server=self._name, error=repr(exc))
        except EtctlError as exc:
            # The TLS settings could not be made (a certificate that vanished): said, and tried
            # again at the next connection.
            log.error("the server cannot serve TLS", server=self._name, error=str(exc))
        except asyncio.CancelledError:
            # close() dropped the connection. The task ends normally: asyncio's stream server
            # (Python 3.11) reports a cancelled connection task as an unhandled error.
            pass
        except Exception:
            log.exception("the server failed on a connection", server=self._name)
        finally:
            writer.transport.abort()  # a no-op once closed; drops the socket otherwise
            self._connections.discard(task)

    async def _secure(self, writer: asyncio.StreamWriter) -> None:
        """Speak TLS on a fresh connection (its settings made once, for the first one).

        Raises:
            OSError: the handshake failed (a client speaking plain HTTP, say).
            TimeoutError: it took longer than the timeout.
        """
        assert self._tls is not None
        async with self._making:  # concurrent first connections wait for one making
            if self._context is None:
                self._context = await self._tls()
        await writer.start_tls(self._context, ssl_handshake_timeout=self._timeout)

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer requests until either side closes; True after an error answer."""
        while not self._closing:
            try:
                incoming = await self._next_request(reader)
            except _Reject as reject:
                log.warning(
                    "request refused",
                    server=self._name,
                    status=reject.status,
                    reason=reject.reason or _reason(reject.status),
                )
                await self._send(
                    writer, _error(reject.status, reject.reason), head_only=False, close=True
                )
                return True
            if incoming is None:
                return False
            refused = await self._guard(incoming.request) if self._guard is not None else None
            answer = refused or await self._answer(incoming.request)
            keep_alive = incoming.keep_alive and not self._closing
            await self._send(
                writer,
                answer,
                head_only=incoming.request.method == "HEAD",
                close=not keep_alive,
                keep_alive_header=keep_alive and incoming.http10,
            )
            if not keep_alive:
                return False
        return False

    async def _linger(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Let the client read an error answer before the socket closes.

        Closing a socket with unread input resets it, and a reset can destroy the answer in the
        client's buffers: so end our side first, then read and drop what the client still sends,
        for a bounded time.
        """
        if writer.can_write_eof():
            writer.write_eof()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(self._timeout, _LINGER)):
                while await reader.read(_MAX_LINE):
                    pass

    async def _next_request(self, reader: asyncio.StreamReader) -> _Incoming | None:
        """The next request; ``None`` when the client closed or stayed silent for ``timeout``.

        Raises:
            _Reject: the request cannot be served (408 when it was begun but not finished in time).
        """
        first = b""
        try:
            async with asyncio.timeout(self._timeout):  # one timer for the whole request
                first = await reader.read(1)  # silence until here is idleness, not a request
                if not first:
                    return None
                line = await _request_line(reader, first)
                if line is None:
                    raise _Reject(400)  # the client ended inside its request line
                return await _read_request(reader, line, self._max_body)
        except TimeoutError:
            if not first:
                return None
            raise _Reject(408, "the request was not sent in time") from None

    async def _answer(self, request: Request) -> Response:
        handler = self._router(request.path)
        if handler is None:
            return text(404, "404 page not found\n")
        if request.method not in self._methods:
            return text(405, "405 method not allowed\n", ("Allow", ", ".join(self._methods)))
        if request.method == "HEAD":
            request = Request("GET", request.path, request.query, request.headers, request.body)
        try:
            answer = handler(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception:
            log.exception("a handler failed", server=self._name, path=request.path)
            return _error(500)
        return answer

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        response: Response,
        *,
        head_only: bool,
        close: bool,
        keep_alive_header: bool = False,
    ) -> None:
        lines = [
            f"HTTP/1.1 {response.status} {_reason(response.status)}",
            f"Date: {_http_date(int(time.time()))}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
        ]
        lines.extend(f"{name}: {value}" for name, value in response.headers)
        if close:
            lines.append("Connection: close")
        elif keep_alive_header:
            lines.append("Connection: keep-alive")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        # One write: one TLS record and one segment, so the client wakes once for the whole
        # answer (a head sent alone woke it for nothing, and it waited again for the body).
        writer.write(head if head_only or not response.body else head + response.body)
        async with asyncio.timeout(self._timeout):
            await writer.drain()


async def _line(reader: asyncio.StreamReader, too_long: int, first: bytes = b"") -> bytes | None:
    """One line without its ending; ``None`` at the end of the stream.

    ``first`` is the line's first byte when it was read already.
    """
    if first == b"\n":
        return b""
    try:
        raw = first + await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError:
        return None
    except asyncio.LimitOverrunError:
        raise _Reject(too_long) from None
    line = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
    if b"\r" in line or b"\0" in line:
        raise _Reject(400)
    return line


async def _request_line(reader: asyncio.StreamReader, first: bytes) -> bytes | None:
    """The request line, past a few empty lines (RFC 9112 section 2.2); ``None`` at the end.

    ``first`` is the line's first byte, read already.
    """
    for _ in range(4):
        line = await _line(reader, 414, first)
        first = b""
        if line != b"":
            return line
    raise _Reject(400)


async def _read_request(reader: asyncio.StreamReader, line: bytes, max_body: int) -> _Incoming:
    """Parse the request line, read the header section and the body (up to ``max_body``)."""
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]):
        raise _Reject(400)
    method, target, version_text = parts
    version = _VERSION.fullmatch(version_text)
    if version is None or not _TARGET_CHARS.fullmatch(target):
        raise _Reject(400)
    if version[1] != "1":
        raise _Reject(505)
    http10 = version[2] == "0"
    headers = await _read_headers(reader)
    if not http10 and len(headers.get("host", [])) != 1:
        raise _Reject(400)  # RFC 9112 section 3.2
    body = await _read_body(reader, headers, max_body)
    if target.startswith(("http://", "https://")):  # absolute form
        parsed = urlsplit(target)
        path, query = parsed.path or "/", parsed.query
    elif target.startswith("/"):
        path, _, query = target.partition("?")
    else:
        path, query = target, ""  # "*" or nonsense: found nowhere
    tokens = {
        token.strip().lower()
        for value in headers.get("connection", [])
        for token in value.split(",")
    }
    keep_alive = "keep-alive" in tokens if http10 else "close" not in tokens
    request = Request(
        method=method,
        path=unquote(path),
        query=parse_qs(query, keep_blank_values=True),
        headers={name: ", ".join(values) for name, values in headers.items()},
        body=body,
    )
    return _Incoming(request, keep_alive=keep_alive, http10=http10)


async def _read_headers(reader: asyncio.StreamReader) -> dict[str, list[str]]:
    headers: dict[str, list[str]] = {}
    size = fields = 0
    while True:
        line = await _line(reader, 431)
        if line is None:
            raise _Reject(400)
        if not line:
            return headers
        size += len(line) + 2
        fields += 1
        if size > _MAX_HEAD or fields > _MAX_FIELDS:
            raise _Reject(431)
        name, sep, value = line.decode("latin-1").partition(":")
        # No space before the colon, no folded lines (RFC 9112 section 5).
        if not sep or not _TOKEN.fullmatch(name):
            raise _Reject(400)
        headers.setdefault(name.lower(), []).append(value.strip(" \t"))


async def _read_body(
    reader: asyncio.StreamReader, headers: Mapping[str, list[str]], max_body: int
) -> bytes:
    if "transfer-encoding" in headers:
        raise _Reject(411, "a chunked request body is not accepted: send Content-Length")
    lengths = {
        value.strip() for values in headers.get("content-length", []) for value in values.split(",")
    }
    if not lengths:
        return b""
    if len(lengths) != 1:
        raise _Reject(400, "conflicting Content-Length values")
    (length_text,) = lengths
    if not length_text.isdigit() or not length_text.isascii():
        raise _Reject(400, "Content-Length is not a number")
    length = int(length_text)
    if length > max_body:
        raise _Reject(
            413, f"request entity is too large: {length} bytes; the limit is {max_body} bytes"
        )
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise _Reject(400, "the request body ended early") from None


def _error(status: int, reason: str = "") -> Response:
    return text(status, f"{status} {_reason(status)}" + (f": {reason}" if reason else "") + "\n")


@functools.lru_cache(maxsize=64)
def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


@functools.lru_cache(maxsize=2)
def _http_date(now: int) -> str:
    """RFC 9110's IMF-fixdate, without the locale that ``time.strftime`` would use.

    Made once a second (each answer of that second reads it from the cache).
    """
    t = time.gmtime(now)
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    )
