"""How late a committed change reaches the watches: kube-apiserver's watch cache, modelled.

On a real control plane a write's answer and its watch event travel different roads. The answer
leaves once etcd has committed the change; the event goes from etcd's watch to the resource's
watch cache in the API server (``cacher.go``: the cache's reflector, then one ``dispatchEvents``
loop per resource), which hands it to every watcher, whose stream writes and flushes whatever
queued up meanwhile. So the event reaches a client some milliseconds after the answer, events
that queue up travel together, and each resource's watch cache runs on its own, so events of two
resources are not ordered against each other. A client that reads its cache right after its own
write sees the object as it was before, unless it reads its own writes.

:class:`WatchLatency` says how late: ``delay`` seconds from a commit until the event reaches the
resource's watchers, and at most one dispatch round per ``interval`` seconds, every event due by
then going out together (one chunk on each stream). :class:`Dispatcher` does it on the event
loop's time, whatever clock the server runs on: it models processing, not a timer for a test to
move. A test may hold one resource's events (:meth:`Dispatcher.hold`) to force an order.

The store keeps every commit in its history (etcd has it); only the watch side waits: a watch
started meanwhile replays the events dispatched so far and gets the rest as they are dispatched,
and a bookmark never claims an event still on its way.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

GroupResource = tuple[str, str]


class Event(Protocol):
    """What the dispatcher needs of a committed event (the store's ``Event``)."""

    @property
    def resource(self) -> GroupResource:
        """The group-resource changed."""
        ...

    @property
    def rv(self) -> int:
        """The resourceVersion of the change."""
        ...


E = TypeVar("E", bound=Event)


__all__ = ["INSTANT", "Dispatcher", "WatchLatency"]


@dataclass(frozen=True, slots=True)
class WatchLatency:
    """How late watch events arrive (see the module docstring).

    Attributes:
        delay: seconds from a commit until its event reaches the resource's watchers.
        interval: seconds between dispatch rounds at least: the events due meanwhile go out
            together.
    """

    delay: float = 0.0
    interval: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.delay) and math.isfinite(self.interval)):
            msg = "watch latency must be finite"
            raise ValueError(msg)
        if self.delay < 0 or self.interval < 0:
            msg = "watch latency cannot be negative"
            raise ValueError(msg)

    @property
    def instant(self) -> bool:
        """True when events reach the watchers during the commit itself."""
        return self.delay == 0 and self.interval == 0

    @staticmethod
    def realistic() -> WatchLatency:
        """A lightly loaded control plane's: 5 ms late, dispatched in rounds 2 ms apart.

        etcd's watch notification and the cache's decode take a millisecond or two after the
        commit, the dispatch loop and the watch stream's flush another; kine (sqlite) polls after
        each write and is of the same order. A busy server is later (tens of milliseconds):
        raise it to see more.
        """
        return WatchLatency(delay=0.005, interval=0.002)


INSTANT = WatchLatency()


class Dispatcher(Generic[E]):
    """Delivers committed events to the watches late and in batches, per resource, in order.

    Args:
        latency: how late.
        deliver: hands one event to every watch of its resource.
    """

    def __init__(self, latency: WatchLatency, deliver: Callable[[E], None]) -> None:
        self.latency = latency
        self._deliver = deliver
        self._pipes: dict[GroupResource, deque[tuple[float, E]]] = {}
        self._held: set[GroupResource] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._last_round = -math.inf

    # -- state

    @property
    def pending(self) -> int:
        """Events committed and not yet delivered."""
        return sum(len(pipe) for pipe in self._pipes.values())

    def first_pending(self, resource: GroupResource) -> int | None:
        """The resourceVersion of the oldest undelivered event of ``resource``, if any."""
        pipe = self._pipes.get(resource)
        return pipe[0][1].rv if pipe else None

    # -- the pipeline

    def add(self, event: E) -> None:
        """Take a committed event; it reaches the watchers ``delay`` seconds from now."""
        pipe = self._pipes.get(event.resource)
        if self.latency.instant and not pipe and event.resource not in self._held:
            self._deliver(event)  # during the commit, as the tests that need no latency expect
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop yet (a server being built): nobody watches
            self._deliver(event)
            return
        if pipe is None:
            pipe = self._pipes[event.resource] = deque()
        pipe.append((loop.time() + self.latency.delay, event))
        self._schedule(loop)

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            return
        due = min(
            (pipe[0][0] for res, pipe in self._pipes.items() if pipe and res not in self._held),
            default=None,
        )
        if due is None:
            return
        at = max(due, self._last_round + self.latency.interval)
        self._timer = loop.call_at(at, self._round)

    def _round(self) -> None:
        """One dispatch round: every due event of every resource not held, in commit order."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = self._last_round = loop.time()
        for resource, pipe in list(self._pipes.items()):
            if resource in self._held:
                continue
            while pipe and pipe[0][0] <= now:
                self._deliver(pipe.popleft()[1])
            if not pipe:
                del self._pipes[resource]
        self._schedule(loop)

    # -- holding and dropping

    def hold(self, resource: GroupResource) -> None:
        """Keep ``resource``'s events from its watchers until :meth:`release`."""
        self._held.add(resource)

    def release(self, resource: GroupResource) -> None:
        """Let ``resource``'s held events go (those due go in the next round)."""
        self._held.discard(resource)
        if self._pipes.get(resource):
            self._schedule(asyncio.get_running_loop())

    def drop(self, resource: GroupResource | None = None) -> None:
        """Forget undelivered events of ``resource`` (or of all: the server stops)."""
        if resource is None:
            self._pipes.clear()
            self._held.clear()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        else:
            self._pipes.pop(resource, None)
