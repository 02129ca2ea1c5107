"""How long the server remembers changes: the watch cache's window and etcd's compaction.

A real API server remembers a change in two places, and they forget at different times:

* **The watch cache** (one per resource) serves every watch. It is a cyclic buffer of the
  resource's latest events whose capacity adapts, as ``watch_cache.go`` does: it starts at
  ``watch_cache_min`` events; when it is full and its oldest event is younger than
  ``event_fresh`` seconds it doubles (up to ``watch_cache_max``); when it is full and even the
  newest quarter of it is older than that, it halves (down to ``watch_cache_min``); otherwise the
  oldest event makes room for the new one. Nothing is evicted between commits. A watch from a
  resourceVersion older than the oldest event it holds gets 410 Expired, ``too old resource
  version: <rv> (<oldest - 1>)``.
* **etcd** keeps every revision until it is compacted. kube-apiserver compacts it every
  ``compaction_interval`` seconds (``--etcd-compaction-interval``, 5 minutes) to the revision it
  saw at the previous tick, so a revision lives between one and two intervals. Lists at an exact
  resourceVersion, and continue tokens of paged lists, read etcd: older than its compaction they
  get 410 Expired.

:class:`EventLog` holds one resource's events for both: the watch cache is always a suffix of
what it keeps, and an event leaves once neither needs it. :class:`Compactor` is the compaction
schedule, evaluated lazily: whenever the store is touched it catches up with the ticks that are
due, recording at each tick the revision the store had then (nothing commits between a tick and
the next touch, so the current revision is the one the tick saw).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

__all__ = ["Compactor", "EventLog", "History", "Recorded"]


@dataclass(frozen=True, slots=True)
class History:
    """How much history the server keeps (a real 1.32 server's by default).

    Attributes:
        watch_cache_min: the watch cache's smallest capacity, per resource (events).
        watch_cache_max: its largest capacity, per resource (events).
        event_fresh: seconds an event is fresh: the cache grows rather than drop a fresh event.
        compaction_interval: seconds between etcd compactions; 0 never compacts.
    """

    watch_cache_min: int = 100
    watch_cache_max: int = 100 * 1024
    event_fresh: float = 75.0
    compaction_interval: float = 300.0

    def __post_init__(self) -> None:
        if self.watch_cache_min < 1:
            msg = "watch_cache_min must be at least 1"
            raise ValueError(msg)
        if self.watch_cache_max < self.watch_cache_min:
            msg = "watch_cache_max must be at least watch_cache_min"
            raise ValueError(msg)
        if self.event_fresh < 0 or self.compaction_interval < 0:
            msg = "event_fresh and compaction_interval cannot be negative"
            raise ValueError(msg)


class Recorded(Protocol):
    """What the log needs of an event: its resourceVersion and when it was recorded."""

    @property
    def rv(self) -> int:
        """The resourceVersion of the change."""
        ...

    @property
    def time(self) -> float:
        """The store clock's monotonic time of the commit."""
        ...


E = TypeVar("E", bound=Recorded)

_SHIFT_AFTER = 1024
"""Dropped events are removed from the list in batches, once this many have accumulated."""


class EventLog(Generic[E]):
    """One resource's retained events, oldest first: the watch cache and what etcd still keeps.

    Invariants: ``_events[_first:]`` is what is kept, in resourceVersion order;
    ``_events[_cache:]`` (``_first <= _cache``) is the watch cache, at most ``capacity`` events;
    an event before ``_cache`` is kept only while etcd's compaction has not passed it.

    Args:
        history: the settings.
        start_rv: the resourceVersion the log starts at (the cache's initial list).
    """

    __slots__ = ("_cache", "_events", "_first", "_history", "capacity", "evicted", "start_rv")

    def __init__(self, history: History, start_rv: int) -> None:
        self._history = history
        self._events: list[E] = []
        self._first = 0
        self._cache = 0
        self.capacity = history.watch_cache_min
        self.start_rv = start_rv
        self.evicted = False

    def __len__(self) -> int:
        return len(self._events) - self._first

    @property
    def cached(self) -> int:
        """How many events the watch cache holds."""
        return len(self._events) - self._cache

    def append(self, event: E, compacted: int = 0) -> None:
        """Record a new event, resizing the watch cache or evicting its oldest event first.

        Events the cache no longer holds are forgotten up to etcd's ``compacted`` revision.
        """
        events = self._events
        if len(events) - self._cache == self.capacity:
            self._resize(event.time)
            if len(events) - self._cache == self.capacity:
                self._cache += 1
                self.evicted = True
                if events[self._first].rv <= compacted:
                    self.trim(compacted)
        events.append(event)

    def _resize(self, now: float) -> None:
        """Grow while the oldest event is fresh, shrink once the newest quarter is stale."""
        events, history = self._events, self._history
        if now - events[self._cache].time < history.event_fresh:
            self.capacity = min(self.capacity * 2, history.watch_cache_max)
            return
        quarter = self.capacity // 4
        newest_quarter = events[len(events) - quarter] if quarter else events[self._cache]
        if now - newest_quarter.time > history.event_fresh:
            smaller = max(self.capacity // 2, history.watch_cache_min)
            if smaller < self.capacity:
                self._cache = len(events) - smaller
                self.capacity = smaller

    def watch_floor(self) -> int:
        """The oldest resourceVersion a watch may start from (older ones get 410)."""
        if self.evicted and self.cached:
            return self._events[self._cache].rv - 1
        return self.start_rv

    def since(self, rv: int) -> list[E] | None:
        """The cached events after ``rv`` in order, or None when ``rv`` is below the watch floor."""
        if rv < self.watch_floor():
            return None
        events = self._events
        start = bisect_right(events, rv, lo=self._cache, key=_rv)
        return events[start:]

    def newest_first(self) -> Iterator[E]:
        """Every kept event, newest first (to undo changes back to a snapshot)."""
        events = self._events
        for index in range(len(events) - 1, self._first - 1, -1):
            yield events[index]

    def trim(self, compacted: int) -> None:
        """Forget the events only etcd kept, up to revision ``compacted`` (its compaction)."""
        events, first = self._events, self._first
        while first < self._cache and events[first].rv <= compacted:
            first += 1
        if first >= _SHIFT_AFTER and first * 2 >= len(events):
            del events[:first]
            self._cache -= first
            first = 0
        self._first = first

    def begin_at(self, rv: int) -> None:
        """Start the watch cache at ``rv``, empty, keeping older events for etcd's reads."""
        self._cache = len(self._events)
        self.capacity = self._history.watch_cache_min
        self.start_rv = rv
        self.evicted = False

    def reset(self, rv: int) -> None:
        """Forget everything, as a watch cache that relists at ``rv`` (a resource re-created)."""
        self._events = []
        self._first = self._cache = 0
        self.capacity = self._history.watch_cache_min
        self.start_rv = rv
        self.evicted = False


def _rv(event: Recorded) -> int:
    return event.rv


class Compactor:
    """kube-apiserver's etcd compactor: every interval, compact to the previous tick's revision.

    The first tick only records (nothing is compacted at bootstrap), as ``compact.go`` does.

    Args:
        interval: seconds between ticks; 0 never compacts.
        start: the monotonic time the schedule starts at.
    """

    __slots__ = ("_interval", "_next", "_seen")

    def __init__(self, interval: float, start: float) -> None:
        self._interval = interval
        self._next = start + interval
        self._seen: int | None = None

    def due(self, now: float, rv: int) -> int | None:
        """The revision to compact to now, if a compaction is due (``rv``: the current one)."""
        if not self._interval or now < self._next:
            return None
        ticks = int((now - self._next) // self._interval) + 1
        # Each due tick compacts to what the one before it saw; every tick since the last touch
        # saw ``rv``, so with two or more due the last one compacts to ``rv`` itself.
        compact_to = rv if ticks > 1 else self._seen
        self._seen = rv
        self._next += ticks * self._interval
        return compact_to
