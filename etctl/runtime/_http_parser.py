"""An HTTP/1.1 answer parsed by llhttp (through httptools), with the client's own rules on top.

:class:`AnswerParser` turns the bytes of one answer at a time into a :class:`Response` (status,
reason, headers) and body pieces. The framing (status line, headers, ``Content-Length``,
``chunked`` encoding with its extensions and trailers) is llhttp's, in its strict mode: node's
parser, fuzzed and kept by people who do nothing else. A hand-written parser had accepted
``Content-Length: +38`` and ``1_0``, a chunk size of ``0x26``, a status of ``+200`` and a bare LF
inside a header value; llhttp refuses each, as it refuses a ``Content-Length`` beside a
``Transfer-Encoding``, two ``Content-Length`` headers, folded header lines and control characters.

What llhttp leaves to its user is decided here:

* only HTTP/1.0 and HTTP/1.1 answers, with a status from 100 to 999;
* a head (status line and headers) over :data:`MAX_HEAD` bytes is refused, whether it arrives in
  one piece or many; so are more than :data:`MAX_HEAD` bytes in a row that carry no byte of body
  (interim answers, chunk framing, trailers), so nothing the parser buffers can grow unbounded;
* at most :data:`MAX_INTERIM` interim answers (``100 Continue``, ``103 Early Hints``) precede an
  answer, as Go's client allows;
* ``101 Switching Protocols`` is an answer only to a request that asked to switch (``upgrade``);
  to any other request it is refused, since what follows it is not HTTP;
* a transfer coding other than ``chunked`` last is refused (the client never asks for one);
* a body larger than the ``limit`` given is refused: at once when ``Content-Length`` announces
  it, else as soon as the bytes that exceed it arrive (:class:`TooLarge`);
* bytes beyond an answer's framing are never parsed as another answer: the answer stands and
  :attr:`AnswerParser.keep_alive` turns false, so its connection is not reused (bare CRs and LFs
  excepted, which llhttp skips between messages and which can carry nothing).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final

import httptools

__all__ = [
    "BODY",
    "DONE",
    "HEAD",
    "IDLE",
    "MAX_HEAD",
    "MAX_INTERIM",
    "SWITCHED",
    "AnswerParser",
    "Broken",
    "Headers",
    "Response",
    "TooLarge",
]

MAX_HEAD: Final = 64 * 1024
"""The longest head accepted (the API server's are a few hundred bytes)."""
MAX_INTERIM: Final = 5
"""Interim answers accepted before the answer (Go's ``max1xxResponses``)."""

# What the parser is waiting for.
IDLE, HEAD, BODY, DONE, SWITCHED = range(5)
_VERSIONS: Final = frozenset({"1.1", "1.0"})
_NO_BODY: Final = frozenset({204, 304})
_STATUS_LINE: Final = len("HTTP/1.1 200 \r\n")
_HTTP: Final = b"HTTP/"


class Broken(Exception):
    """The connection failed, or the answer was not HTTP, after the request may have been sent."""


class TooLarge(Broken):
    """The answer's body is larger than the limit the request was sent with."""


class _Beyond(Exception):
    """A second answer began after the answer was complete: parsing stops there."""


_get = dict.get
_set = dict.__setitem__


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


class AnswerParser:
    """Parses one answer at a time (:meth:`expect`, then :meth:`feed` and :meth:`ended`).

    The parsed parts are attributes the owner reads: :attr:`state`, :attr:`response` (once the
    head of the answer arrived), :attr:`pieces` and :attr:`buffered` (body bytes not taken yet),
    :attr:`keep_alive` and, after a switch of protocols, :attr:`rest`. llhttp calls the
    ``on_*`` methods from inside :meth:`feed`.
    """

    def __init__(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self.state = IDLE
        self.response: Response | None = None
        self.pieces: deque[bytes] = deque()
        self.buffered = 0
        self.keep_alive = False
        self.rest = b""
        self._limit = 0
        self._received = 0
        self._head_only = False
        self._upgrade = False
        self._to_eof = False
        self._interim = 0
        self._head_bytes = 0
        self._barren = 0
        self._fed_body = False
        self._reason = b""
        self._headers = Headers()
        self._stale = False
        self._opening: bytes | None = None

    def expect(self, *, head_only: bool = False, upgrade: bool = False, limit: int = 0) -> None:
        """Get ready for the answer to a request just sent.

        Args:
            head_only: the request was a ``HEAD`` (or a ``CONNECT``): the answer has no body.
            upgrade: the request asked to switch protocols, so a ``101`` is its answer.
            limit: the largest body accepted (0: no limit).
        """
        if self._stale:  # llhttp still waits for a body that a HEAD answer never carries
            self._parser = httptools.HttpResponseParser(self)
            self._stale = False
        self.state = HEAD
        self.response = None
        self.keep_alive = False
        self._limit = limit
        self._received = 0
        self._head_only = head_only
        self._upgrade = upgrade
        self._to_eof = False
        self._interim = 0
        self._barren = 0
        self._opening = b""

    def feed(self, data: bytes) -> None:
        """Parse the next bytes of the answer.

        Raises:
            Broken: the answer is not one this client accepts (see the module docstring).
            TooLarge: its body exceeds the limit.
        """
        self._fed_body = False
        if self._opening is not None:
            self._check_opening(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgraded:
            self.rest = data[upgraded.args[0] :]
        except httptools.HttpParserError as exc:
            self._refused(exc)
        if self._fed_body:
            self._barren = 0
        elif self.state in (HEAD, BODY):
            self._barren += len(data)
            if self._barren > MAX_HEAD:
                what = "answer headers" if self.state == HEAD else "chunk framing or trailers"
                msg = f"{what} exceed {MAX_HEAD} bytes"
                raise Broken(msg)

    def _check_opening(self, data: bytes) -> None:
        """The answer starts with ``HTTP/`` (llhttp also reads RTSP/ and ICE/ status lines)."""
        opening = (self._opening or b"") + data[: len(_HTTP)]
        if not _HTTP.startswith(opening[: len(_HTTP)]):
            msg = f"not an HTTP answer: {opening[: len(_HTTP)]!r}..."
            raise Broken(msg)
        self._opening = opening if len(opening) < len(_HTTP) else None

    def _refused(self, exc: httptools.HttpParserError) -> None:
        """What llhttp's refusal means: the answer stands, or :class:`Broken` is raised."""
        cause = exc.__context__ if isinstance(exc, httptools.HttpParserCallbackError) else None
        if isinstance(cause, _Beyond) or (cause is None and self.state == DONE):
            self.keep_alive = False  # past the answer's end: the answer stands
            return
        if isinstance(cause, Broken):
            raise cause from None
        if cause is not None:
            msg = f"the answer could not be parsed: {cause!r}"
        elif self.state == SWITCHED:
            msg = "the server switched protocols without Upgrade and Connection: upgrade"
        else:
            msg = f"not a valid HTTP/1.1 answer: {exc}"
        raise Broken(msg) from exc

    def ended(self) -> None:
        """The connection ended: a body framed by its end is complete.

        Raises:
            Broken: the answer was not complete.
        """
        if self.state == BODY and self._to_eof:
            self.state = DONE
        elif self.state in (HEAD, BODY):
            msg = "connection closed before the answer was complete"
            raise Broken(msg)

    # -- llhttp's callbacks

    def on_message_begin(self) -> None:
        if self.state != HEAD:
            raise _Beyond
        self._head_bytes = _STATUS_LINE
        self._reason = b""
        self._headers = Headers()

    # The head's size is counted inline in the two callbacks below (not by a helper): they run
    # once per header of every answer.

    def on_status(self, reason: bytes) -> None:  # may come in pieces
        self._reason += reason
        self._head_bytes += len(reason)
        if self._head_bytes > MAX_HEAD:
            self._head_too_large()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > MAX_HEAD:
            self._head_too_large()
        if self.state != HEAD:
            return  # a trailer: bounded, and of no use to the client
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = self._headers
        previous = _get(headers, key)
        _set(headers, key, text if previous is None else f"{previous}, {text}")

    def on_headers_complete(self) -> None:
        parser = self._parser
        status = parser.get_status_code()
        version = parser.get_http_version()
        if version not in _VERSIONS or not 100 <= status <= 999:
            msg = f"not an HTTP/1.x answer: HTTP/{version} {status}"
            raise Broken(msg)
        if status == 101:
            if not self._upgrade:
                msg = "the server switched protocols (101) for a request that did not ask to"
                raise Broken(msg)
            self.response = self._answer(status)
            self.state = SWITCHED
            return
        if status < 200:  # an interim answer: llhttp ends it and reads the next
            self._interim += 1
            if self._interim > MAX_INTERIM:
                msg = f"more than {MAX_INTERIM} interim (1xx) answers"
                raise Broken(msg)
            return
        response = self._answer(status)
        self.response = response
        self.keep_alive = parser.should_keep_alive()
        if self._head_only or status in _NO_BODY:
            self.state = DONE
            self._stale = self._head_only
            return
        headers = response.headers
        coding = _get(headers, "transfer-encoding")
        if coding is not None:
            if coding.rsplit(",", 1)[-1].strip().lower() != "chunked":
                msg = f"unsupported transfer-encoding {coding!r}"
                raise Broken(msg)
        else:
            length = _get(headers, "content-length")
            if length is None:
                self._to_eof = True  # framed by the end of the connection
                self.keep_alive = False
            elif self._limit and int(length) > self._limit:  # digits only: llhttp checked
                msg = f"the answer's body of {length.strip()} bytes exceeds {self._limit}"
                raise TooLarge(msg)
        self.state = BODY

    def on_body(self, body: bytes) -> None:
        if self.state != BODY:  # a HEAD answer followed by bytes
            self.keep_alive = False
            return
        self._fed_body = True
        self.pieces.append(body)
        size = len(body)
        self.buffered += size
        self._received += size
        if self._limit and self._received > self._limit:
            msg = f"the answer's body exceeds {self._limit} bytes"
            raise TooLarge(msg)

    def on_message_complete(self) -> None:
        if self.state == BODY:
            self.state = DONE

    # -- helpers

    @staticmethod
    def _head_too_large() -> None:
        msg = f"answer headers exceed {MAX_HEAD} bytes"
        raise Broken(msg)

    def _answer(self, status: int) -> Response:
        # The answer keeps its headers: the next message starts with new ones (on_message_begin).
        return Response(status, self._reason.decode("latin-1"), self._headers)
