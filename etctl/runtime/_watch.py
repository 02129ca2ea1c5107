"""Decoding a watch: newline-delimited JSON events read from a chunked HTTP body.

The API server writes one JSON ``WatchEvent`` per line. Lines arrive in chunks of any size: a line
may span many chunks (a 1.5 MiB object never fits one read) and a chunk may hold many lines. So the
body is read as it arrives and split here, never line by line with a bounded read buffer, which
rejects long lines (the "Line is too long" failure of other Python clients).

Invariants of :class:`WatchStream`:

* events come out in the order the server wrote them, each decoded exactly once;
* pieces of an unfinished line are kept as a list and joined once, so a long line costs linear
  time; a line longer than ``max_line_bytes`` is a protocol error, not unbounded memory;
* an ``ERROR`` event ends the stream by raising the mapped :class:`~etctl.errors.ApiError`
  (410 Expired becomes :class:`~etctl.errors.Gone`);
* no byte for ``idle_timeout`` seconds ends it with :class:`WatchIdleTimeout`; a broken connection
  with :class:`~etctl.errors.TransportError`; the server closing it cleanly ends the iteration;
* after any of these the response is closed and the stream stays finished.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal, get_args

import orjson

from etctl.errors import TransportError, api_error_from_status
from etctl.runtime._exchange import Body
from etctl.runtime._http_connection import Broken
from etctl.runtime._objects import KubeObject

__all__ = [
    "LineSplitter",
    "WatchEvent",
    "WatchEventType",
    "WatchIdleTimeout",
    "WatchStream",
]

WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
_EVENT_TYPES: frozenset[str] = frozenset(get_args(WatchEventType))


class WatchIdleTimeout(TransportError):
    """A watch received nothing (not even a bookmark) for its idle timeout: restart it."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change seen by a watch.

    Attributes:
        type: ``ADDED``, ``MODIFIED``, ``DELETED`` or ``BOOKMARK``.
        object: the object after the change (for ``DELETED``, its last state; for ``BOOKMARK``,
            only ``kind``, ``apiVersion`` and ``metadata.resourceVersion``/``annotations``).
    """

    type: WatchEventType
    object: KubeObject


class LineSplitter:
    """Splits a byte stream into lines, whatever the chunk boundaries.

    Args:
        max_line_bytes: the longest line accepted (the newline excluded).
    """

    __slots__ = ("_max", "_parts", "_size")

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add a chunk; return the lines it completed (blank lines dropped).

        Raises:
            TransportError: an unfinished line grew beyond ``max_line_bytes``.
        """
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:end]
            if self._parts:
                self._parts.append(piece)
                piece = b"".join(self._parts)
                self._parts.clear()
                self._size = 0
            if len(piece) > self._max:
                raise TransportError(self._too_long(len(piece)))
            if piece.strip():
                lines.append(piece)
            start = end + 1
        if start < len(chunk):
            rest = chunk[start:] if start else chunk
            self._size += len(rest)
            if self._size > self._max:
                raise TransportError(self._too_long(self._size))
            self._parts.append(rest)
        return lines

    def finish(self) -> bytes:
        """The unterminated last line, if any (the stream ended)."""
        tail = b"".join(self._parts)
        self._parts.clear()
        self._size = 0
        return tail if tail.strip() else b""

    def _too_long(self, size: int) -> str:
        return f"watch line of {size} bytes exceeds the limit of {self._max} bytes"


class WatchStream:
    """An open watch: iterate it for :class:`WatchEvent` objects.

    Created by :meth:`etctl.runtime._client.Client.watch`, which closes it when its ``async with``
    block ends.

    Args:
        response: the body of the streaming HTTP response (status 200).
        description: names the watch in errors (``pods in default``).
        idle_timeout: the read-idle timeout the response was opened with (for the message).
        max_line_bytes: the longest event line accepted.
    """

    def __init__(
        self,
        response: Body,
        *,
        description: str,
        idle_timeout: float | None,
        max_line_bytes: int,
    ) -> None:
        self._response = response
        self._description = description
        self._idle_timeout = idle_timeout
        self._splitter = LineSplitter(max_line_bytes)
        self._ready: deque[bytes] = deque()
        self._finished = False
        self._resource_version = ""

    @property
    def resource_version(self) -> str:
        """The ``resourceVersion`` of the last event delivered (bookmarks included)."""
        return self._resource_version

    @property
    def closed(self) -> bool:
        """True once the stream ended, failed or was closed."""
        return self._finished

    def close(self) -> None:
        """Close the connection; further iteration ends at once."""
        self._finished = True
        self._ready.clear()
        self._response.close()

    def __aiter__(self) -> WatchStream:
        return self

    async def __anext__(self) -> WatchEvent:
        while not self._ready:
            if self._finished:
                raise StopAsyncIteration
            await self._fill()
        return self._decode(self._ready.popleft())

    async def _fill(self) -> None:
        try:
            chunk = await self._response.read()
        except TimeoutError as exc:
            self.close()
            msg = f"watch of {self._description} idle for {self._idle_timeout} s"
            raise WatchIdleTimeout(msg) from exc
        except (Broken, OSError) as exc:
            self.close()
            msg = f"watch of {self._description} broke: {exc!r}"
            raise TransportError(msg) from exc
        if not chunk:
            tail = self._splitter.finish()
            self.close()
            if tail:
                self._ready.append(tail)
            return
        try:
            self._ready.extend(self._splitter.feed(chunk))
        except TransportError:
            self.close()
            raise

    def _decode(self, line: bytes) -> WatchEvent:
        try:
            raw = orjson.loads(line)
            kind = raw["type"]
            obj = raw["object"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            self.close()
            msg = f"watch of {self._description} sent an undecodable line: {line[:200]!r}"
            raise TransportError(msg) from exc
        if not isinstance(obj, dict):
            self.close()
            msg = f"watch of {self._description} sent an event without an object"
            raise TransportError(msg)
        if kind == "ERROR":
            self.close()
            code = obj.get("code")
            raise api_error_from_status(code if isinstance(code, int) else 500, obj)
        if kind not in _EVENT_TYPES:
            self.close()
            msg = f"watch of {self._description} sent an unknown event type {kind!r}"
            raise TransportError(msg)
        metadata = obj.get("metadata")
        if isinstance(metadata, dict):
            self._resource_version = str(metadata.get("resourceVersion") or self._resource_version)
        return WatchEvent(kind, obj)
