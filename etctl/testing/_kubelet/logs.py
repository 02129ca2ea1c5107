"""Container logs: what one run of a container wrote, readable while it grows.

A :class:`ContainerLog` holds the lines of one container *instance* (a restart starts a new one;
the kubelet keeps the previous instance for ``previous=true``). Each line carries the time it
was written (for ``timestamps=true`` and ``sinceSeconds``). Readers following the log wait on
:meth:`ContainerLog.wait` until a line arrives or the instance ends (:meth:`ContainerLog.close`);
an ended log never grows again.

Invariants: lines are only appended (older ones are dropped past the configured limit, counted
in :attr:`ContainerLog.dropped`); the log of an instance is closed exactly when the instance
terminates.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from datetime import datetime

__all__ = ["ContainerLog", "LogLine"]


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of output: when it was written, on which stream, and the text (no newline)."""

    time: datetime
    text: str
    stream: str = "stdout"

    def render(self, *, timestamps: bool) -> str:
        """The line as ``pods/log`` sends it (RFC 3339 with nanoseconds when asked)."""
        if not timestamps:
            return self.text + "\n"
        stamp = self.time.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.time.microsecond:06d}000Z"
        return f"{stamp} {self.text}\n"


class ContainerLog:
    """The lines of one container instance.

    Args:
        limit: lines kept (older ones are dropped).
    """

    def __init__(self, limit: int = 10_000) -> None:
        self._lines: deque[LogLine] = deque(maxlen=max(limit, 1))
        self._written = 0
        self._closed = False
        self._waiters: set[asyncio.Event] = set()

    @property
    def closed(self) -> bool:
        """True once the instance ended."""
        return self._closed

    @property
    def written(self) -> int:
        """Lines ever written (kept or dropped)."""
        return self._written

    @property
    def dropped(self) -> int:
        """Lines dropped from the front to stay within the limit."""
        return self._written - len(self._lines)

    def write(self, text: str, *, time: datetime, stream: str = "stdout") -> None:
        """Append ``text`` (split into lines; a trailing newline adds no empty line)."""
        if self._closed:
            return
        for part in text.splitlines() or [""]:
            self._lines.append(LogLine(time, part, stream))
            self._written += 1
        self._notify()

    def close(self) -> None:
        """End the instance: followers finish once they have read everything."""
        if not self._closed:
            self._closed = True
            self._notify()

    def lines(self) -> list[LogLine]:
        """The kept lines, oldest first."""
        return list(self._lines)

    def since(self, position: int) -> tuple[list[LogLine], int]:
        """Lines written after ``position`` (a count of lines written), and the new position."""
        start = max(position - self.dropped, 0)
        found = list(self._lines)[start:]
        return found, self._written

    async def wait(self, position: int) -> None:
        """Return once more than ``position`` lines were written or the log is closed."""
        if self._closed or self._written > position:
            return
        event = asyncio.Event()
        self._waiters.add(event)
        try:
            await event.wait()
        finally:
            self._waiters.discard(event)

    def _notify(self) -> None:
        for event in self._waiters:
            event.set()
