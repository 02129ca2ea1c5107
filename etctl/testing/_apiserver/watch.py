"""One watch: the filter that turns committed events into this client's events, and its buffer.

A :class:`Watcher` is a store sink for one resource. For each committed event it decides what this
client sees, as kube-apiserver's watch cache does: an object that starts matching the selection
arrives as ADDED, one that stops matching as DELETED (its previous state, stamped with the
event's resourceVersion), others as they are. Lines are queued already encoded (the shared,
per-``apiVersion`` encoding of the event whenever the client sees the event unchanged).

Invariants:

* the buffer is bounded: a watcher whose client falls ``max_buffer`` lines behind is closed and
  its buffer dropped, never grown (the client resumes from the last resourceVersion it saw);
* once closed, a watcher accepts nothing more and its stream ends after the lines queued before
  the close (an error event is queued before closing, so it is always delivered).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from etctl.runtime import KubeObject
from etctl.testing._apiserver.selection import Selection
from etctl.testing._apiserver.store import Event, dumps

__all__ = ["INITIAL_EVENTS_END", "Transform", "Watcher"]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"

Transform = Callable[[KubeObject, bool], Any]
"""Turns an object into what the client asked for (a Table row); the flag marks the first one."""


class Watcher:
    """The filter and bounded buffer of one watch stream.

    Args:
        kind: the kind of the watched objects (bookmarks carry it).
        api_version: the ``apiVersion`` the client reads.
        selection: what the client watches.
        max_buffer: lines queued before the watcher is closed as too slow.
        transform: an alternative rendering of objects (``as=Table``), or None for JSON objects.
    """

    def __init__(
        self,
        *,
        kind: str,
        api_version: str,
        selection: Selection,
        max_buffer: int,
        transform: Transform | None = None,
    ) -> None:
        self.kind = kind
        self.api_version = api_version
        self.selection = selection
        self.max_buffer = max_buffer
        self.transform = transform
        self.closed = False
        self.close_reason = ""
        self.sent_first = False
        self.after = 0
        """Events up to this revision are known to the client already (its start): skipped."""
        self.on_close: Callable[[], None] | None = None
        self._lines: list[bytes] = []
        self._ready = asyncio.Event()

    # -- store sink -----------------------------------------------------------------------------

    def deliver(self, event: Event) -> None:
        """Turn one committed event into this client's event, if any, and queue it."""
        if self.closed or event.rv <= self.after:
            return
        selection = self.selection
        if selection.everything and not selection.namespace:
            self._queue_event(event)
            return
        now = event.type != "DELETED" and selection.matches(event.object)
        before = event.previous is not None and selection.matches(event.previous)
        if now and (before or event.type == "ADDED"):
            self._queue_event(event)
        elif now:
            self._queue_object("ADDED", event.object)
        elif before and event.type == "DELETED":
            self._queue_event(event)
        elif before:
            assert event.previous is not None
            previous = event.previous
            meta = {**previous["metadata"], "resourceVersion": str(event.rv)}
            self._queue_object("DELETED", {**previous, "metadata": meta})

    # -- what the stream sends ------------------------------------------------------------------

    def _queue_event(self, event: Event) -> None:
        if self.transform is None:
            self._push(event.line(self.api_version))
        else:
            self._queue_object(event.type, event.object)

    def _queue_object(self, kind: str, obj: KubeObject) -> None:
        if self.transform is not None:
            rendered = self.transform(obj, not self.sent_first)
            self.sent_first = True
            self._push(dumps({"type": kind, "object": rendered}) + b"\n")
            return
        if obj.get("apiVersion") != self.api_version:
            obj = {**obj, "apiVersion": self.api_version}
        self._push(b'{"type":"' + kind.encode() + b'","object":' + dumps(obj) + b"}\n")

    def add_initial(self, obj: KubeObject) -> None:
        """Queue a synthetic ADDED for an object that existed when the watch started."""
        if self.selection.matches(obj):
            self._queue_object("ADDED", obj)

    def bookmark(self, rv: int, *, initial_events_end: bool = False) -> None:
        """Queue a BOOKMARK at ``rv`` (every event up to ``rv`` is already queued)."""
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_events_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self.kind, "apiVersion": self.api_version, "metadata": metadata}
        self._push(dumps({"type": "BOOKMARK", "object": obj}) + b"\n")

    def error(self, status: dict[str, Any]) -> None:
        """Queue an ERROR event carrying a ``Status`` and close the watch after it."""
        if self.closed:
            return
        self._lines.append(dumps({"type": "ERROR", "object": status}) + b"\n")
        self.close("error")

    def _push(self, line: bytes) -> None:
        if self.closed:
            return
        if len(self._lines) >= self.max_buffer:
            self._lines.clear()
            self.close("overflow")
            return
        self._lines.append(line)
        self._ready.set()

    def close(self, reason: str = "stopped") -> None:
        """Stop accepting events; the stream ends once the queued lines are sent."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self._ready.set()
        if self.on_close is not None:
            self.on_close()

    @property
    def pending(self) -> int:
        """Lines queued and not yet taken by the stream."""
        return len(self._lines)

    async def next_chunk(self) -> bytes | None:
        """Everything queued so far as one chunk; None once closed and drained."""
        while not self._lines:
            if self.closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        chunk = b"".join(self._lines)
        self._lines.clear()
        return chunk
