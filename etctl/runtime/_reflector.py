"""The reflector: keeps a local copy of one resource in step with the API server (list + watch).

A :class:`Reflector` lists a resource (all namespaces or one, optionally filtered by label and
field selectors), hands the complete list to its :class:`ReflectorSink`, then watches from the
list's resourceVersion and hands over every change. It runs until cancelled and recovers from
everything else by itself. The rules are client-go's, with two improvements its notes ask for (a
watchdog for silent watches, and no backoff before the relist that follows an ordinary 410):

* **List.** The first list asks for resourceVersion ``"0"`` (the server may answer from its watch
  cache) in pages of 500; a relist asks for the last resourceVersion seen, unpaged, so the cache
  never goes back in time against a lagging server. A list answered with 410 Expired or "Too
  large resource version" is retried at once at ``""`` (a consistent read); the next relist after
  that asks for ``""`` until a list succeeds. A list that fails halfway (an expired continue
  token) hands nothing over: the sink only ever receives complete lists.
* **Watch.** From the last resourceVersion, with bookmarks, and a ``timeoutSeconds`` drawn in
  [5, 10] minutes so that informers started together do not rewatch together. The resourceVersion
  advances with every event and bookmark, except the synthetic ADDED events a watch started from
  ``""`` or ``"0"`` begins with (they are not in resourceVersion order): it advances from the
  first event of another type.
* **When a watch ends.** Closed by the server (its timeout or not) or broken mid-stream: rewatch
  from the last resourceVersion, no list. 410 (when it starts or as an ERROR event): relist at the
  last resourceVersion. Connection refused or 429 when it starts, or a 429 ERROR event: back off
  and rewatch, no list. Anything else: back off and relist.
* **Very short watches.** A watch that ends within a second of its start without a single event
  counts as a failure whatever ended it, and backs off before the next step: a server that
  closes or expires every watch at once is never hammered in a hot loop.
* **Watchdog.** A watch (or a watch start) with no event and no bookmark for ``idle_timeout``
  seconds is cancelled and restarted from the last resourceVersion: a half-open connection behind
  a load balancer otherwise leaves the cache stale forever without any error.
* **Backoff** is :class:`~etctl.runtime._backoff.Backoff`: [0.8, 1.6) s doubling up to [30, 60) s,
  reset after two minutes without failures. Every wait is on the injected clock.

Each watch end is counted in ``etctl_informer_watch_restarts_total`` by reason: ``timeout`` (the
server ended it at the requested timeout), ``closed`` (it ended or broke earlier), ``expired``
(410), ``watchdog`` (silent), ``error`` (it failed to start, or the server sent another error).
Lists are counted in ``etctl_informer_relists_total`` and events by type in
``etctl_informer_events_total``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from etctl.errors import ApiError, Gone, RequestNotSent, TooManyRequests, TransportError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime import _objects as objects
from etctl.runtime._backoff import Backoff
from etctl.runtime._client import ObjectList, WatchEvent, WatchIdleTimeout
from etctl.runtime._clock import Clock
from etctl.runtime._objects import KubeObject
from etctl.runtime._resources import Resource
from etctl.runtime._transforms import Transform

__all__ = ["ChangeType", "ListerWatcher", "Reflector", "ReflectorSink", "is_too_large_rv"]

log = get_logger(__name__)

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]
"""The watch event types that change an object (bookmarks only move the resourceVersion)."""

_SHORT_WATCH_SECONDS = 1.0
_STAMP_RESOLUTION = 0.001
"""Seconds within which events share one reading of the last-event gauge."""
_UNTRUSTED_START = ("", "0")


class ListerWatcher(Protocol):
    """What a reflector lists and watches through (:class:`~etctl.runtime.Client` is one)."""

    def pages(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
    ) -> AsyncIterator[ObjectList]:
        """List page by page; ``Gone`` when a continue token expires."""
        ...

    def watch(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        idle_timeout: float | None = None,
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        """Open a watch; iterating it yields events until the server ends it."""
        ...


class ReflectorSink(Protocol):
    """Where a reflector delivers what it observes (the informer's store and handlers)."""

    def list_starting(self) -> bool:
        """A relist is about to be sent; True asks for a consistent read (resourceVersion ``""``).

        The informer asks for one while its process's own writes await their watch events: a
        consistent list holds every write answered before it, so it settles them.
        """
        ...

    def on_list(self, items: list[KubeObject], resource_version: str) -> None:
        """A complete list: the new content, replacing everything held before."""
        ...

    def on_change(self, change: ChangeType, obj: KubeObject) -> None:
        """One watch event that changed an object (``obj`` is its new or last state)."""
        ...

    def on_bookmark(self, resource_version: str) -> None:
        """The content is current at ``resource_version`` (nothing else changed)."""
        ...


def is_too_large_rv(exc: BaseException) -> bool:
    """True for the server's "Too large resource version" answer (it has not reached that RV)."""
    if not isinstance(exc, ApiError):
        return False
    if any(cause.get("reason") == "ResourceVersionTooLarge" for cause in exc.causes):
        return True
    return "too large resource version" in exc.message.lower()


@dataclass(frozen=True, slots=True)
class _Outcome:
    """How a watch ended and what comes next."""

    reason: str
    relist: bool
    backoff: bool


class Reflector:
    """Lists and watches one resource into a :class:`ReflectorSink` (see the module docstring).

    Args:
        lister: the client to list and watch through.
        resource: what to list and watch.
        sink: receives complete lists and changes.
        clock: every wait (backoff, watchdog) runs on it.
        namespace: only this namespace (``None``: all namespaces, or a cluster-scoped resource).
        label_selector: only objects whose labels match.
        field_selector: only objects whose fields match.
        transform: applied to every object before the sink sees it.
        idle_timeout: seconds a watch may stay silent (no event, no bookmark) before the watchdog
            restarts it.
        page_size: objects per page of a paged list.
        min_watch_timeout: the watch timeout is drawn in ``[min, 2 * min]`` seconds.
        backoff: the failure backoff (client-go's reflector defaults when ``None``).
        rng: the randomness behind watch timeouts and backoff jitter.
    """

    def __init__(
        self,
        lister: ListerWatcher,
        resource: Resource,
        sink: ReflectorSink,
        *,
        clock: Clock,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = None,
        idle_timeout: float = 90.0,
        page_size: int = 500,
        min_watch_timeout: float = 300.0,
        backoff: Backoff | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if idle_timeout <= 0 or page_size < 1 or min_watch_timeout < 1:
            msg = "idle_timeout, page_size and min_watch_timeout must be positive"
            raise ValueError(msg)
        self._lister = lister
        self.resource = resource
        self._sink = sink
        self._clock = clock
        self.namespace = namespace if resource.namespaced and namespace else None
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self._transform = transform
        self._idle = idle_timeout
        self._page_size = page_size
        self._min_timeout = min_watch_timeout
        self._rng = rng or random.Random()  # noqa: S311 - spreading timeouts, not cryptography
        self._backoff = backoff or Backoff(clock=clock, rng=self._rng)
        self._label = str(resource)
        # Children resolved once: a labels() lookup per event would cost more than the event.
        self._event_counters = {
            kind: metrics.INFORMER_EVENTS.labels(self._label, kind)
            for kind in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
        }
        self._last_event = metrics.INFORMER_LAST_EVENT.labels(self._label)
        self._stamp_due = float("-inf")
        self._last_rv = ""
        self._rv_unavailable = False
        self._activity = 0.0
        self._running = False
        self._backing_off = False
        self.last_error: Exception | None = None
        """The last failure of a list or watch (cleared by nothing: it is history)."""
        self.last_list_error: Exception | None = None
        """Why the last list failed; ``None`` once a list succeeded."""
        self._log = log.bind(resource=self._label, namespace=self.namespace or "")

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the sink's content is current at (``""`` before the first list)."""
        return self._last_rv

    @property
    def backing_off(self) -> bool:
        """True while the reflector waits out its backoff before its next list or watch.

        Nothing reaches the sink until that wait ends on the clock: a test driving a FakeClock
        counts it as a timer, not as work in flight.
        """
        return self._backing_off

    def describe(self) -> str:
        """``pods/v1 in namespace x with labels a=b``: names this reflector in messages."""
        parts = [self._label]
        if self.namespace:
            parts.append(f"in namespace {self.namespace}")
        if self.label_selector:
            parts.append(f"with labels {self.label_selector}")
        if self.field_selector:
            parts.append(f"with fields {self.field_selector}")
        return " ".join(parts)

    async def run(self) -> None:
        """List and watch until cancelled.

        Raises:
            RuntimeError: the reflector is already running.
        """
        if self._running:
            msg = f"the reflector of {self.describe()} is already running"
            raise RuntimeError(msg)
        self._running = True
        try:
            await self._loop()
        finally:
            self._running = False

    async def _loop(self) -> None:
        need_list = True
        while True:
            if need_list:
                try:
                    await self._list()
                except Exception as exc:  # noqa: BLE001 - a reflector must outlive every failure
                    self._failed_list(exc)
                    await self._wait_backoff()
                    continue
                need_list = False
            outcome = await self._watch()
            metrics.INFORMER_WATCH_RESTARTS.labels(self._label, outcome.reason).inc()
            if outcome.backoff:
                await self._wait_backoff()
            need_list = outcome.relist

    async def _wait_backoff(self) -> None:
        self._backing_off = True
        try:
            await self._backoff.wait()
        finally:
            self._backing_off = False

    # -- list

    def _relist_rv(self) -> str:
        if self._rv_unavailable:
            return ""
        return self._last_rv or "0"

    async def _list(self) -> None:
        fresh = bool(self._last_rv) and self._sink.list_starting()
        rv = "" if fresh else self._relist_rv()
        try:
            items, list_rv = await self._list_at(rv)
        except ApiError as exc:
            if rv == "" or not (isinstance(exc, Gone) or is_too_large_rv(exc)):
                raise
            self._log.info("list at a resourceVersion the server cannot serve; consistent relist")
            self._rv_unavailable = True
            items, list_rv = await self._list_at("")
        self._rv_unavailable = False
        self.last_list_error = None
        self._last_rv = list_rv
        metrics.INFORMER_RELISTS.labels(self._label).inc()
        self._sink.on_list(items, list_rv)
        self._log.debug("listed", objects=len(items), resource_version=list_rv)

    async def _list_at(self, rv: str) -> tuple[list[KubeObject], str]:
        # Paging only for "" and "0": a list at a known RV is served from the server's watch
        # cache, where paging would only add round trips (client-go does the same).
        limit = self._page_size if rv in _UNTRUSTED_START else None
        items: list[KubeObject] = []
        list_rv = ""
        async for page in self._lister.pages(
            self.resource,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=limit,
            resource_version=rv or None,
        ):
            items.extend(self.transformed(obj) for obj in page.items)
            list_rv = list_rv or page.resource_version
        return items, list_rv

    def _failed_list(self, exc: Exception) -> None:
        self.last_error = exc
        self.last_list_error = exc
        if isinstance(exc, ApiError | TransportError):
            self._log.warning("list failed", error=str(exc))
        else:
            self._log.error("list failed unexpectedly", exc_info=exc)

    def transformed(self, obj: KubeObject) -> KubeObject:
        """``obj`` through the transform (as received when the transform fails on it)."""
        if self._transform is None:
            return obj
        try:
            return self._transform(obj)
        except Exception as exc:  # noqa: BLE001 - one bad object must not stop the informer
            self._log.error("transform failed; caching the object as received", exc_info=exc)
            return obj

    # -- watch

    async def _watch(self) -> _Outcome:
        """One watch, from its start to its end, under the watchdog."""
        started = self._clock.monotonic()
        self._activity = started
        result: list[_Outcome] = []
        fired: list[bool] = []

        async def consume() -> None:
            result.append(await self._consume(started))

        async def watchdog(watch: asyncio.Task[None]) -> None:
            while True:
                remaining = self._activity + self._idle - self._clock.monotonic()
                if remaining <= 0:
                    fired.append(True)
                    watch.cancel()
                    return
                await self._clock.sleep(remaining)

        async with asyncio.TaskGroup() as group:
            watch = group.create_task(consume(), name=f"reflector:{self._label}:watch")
            dog = group.create_task(watchdog(watch), name=f"reflector:{self._label}:watchdog")
            watch.add_done_callback(lambda _: dog.cancel())
        if fired and not result:
            self._log.warning("watch silent; restarting it", idle_seconds=self._idle)
            return _Outcome("watchdog", relist=False, backoff=False)
        return result[0]

    async def _consume(self, started: float) -> _Outcome:
        timeout = self._rng.randint(int(self._min_timeout), int(2 * self._min_timeout))
        start_rv = self._last_rv
        trusted = start_rv not in _UNTRUSTED_START
        events = 0
        opened = False
        try:
            async with self._lister.watch(
                self.resource,
                namespace=self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                resource_version=start_rv or None,
                timeout_seconds=timeout,
                allow_bookmarks=True,
                idle_timeout=self._idle,
            ) as stream:
                opened = True
                async for event in stream:
                    events += 1
                    trusted = self._deliver(event, trusted=trusted)
        except Exception as exc:  # noqa: BLE001 - a reflector must outlive every failure
            return self._failed_watch(exc, started=started, events=events, opened=opened)
        elapsed = self._clock.monotonic() - started
        return self._ended("timeout" if elapsed >= timeout else "closed", started, events)

    def _failed_watch(
        self, exc: Exception, *, started: float, events: int, opened: bool
    ) -> _Outcome:
        """What follows a watch that ended with ``exc`` (see the module docstring)."""
        self.last_error = exc
        error = str(exc)
        if isinstance(exc, Gone):
            self._log.info("watch expired; relisting", resource_version=self._last_rv)
            outcome = self._ended("expired", started, events, relist=True)
        elif isinstance(exc, WatchIdleTimeout):
            self._log.warning("watch silent; restarting it", error=error)
            outcome = _Outcome("watchdog", relist=False, backoff=False)
        elif isinstance(exc, TooManyRequests | RequestNotSent):
            self._log.info("watch refused; backing off", error=error)
            outcome = _Outcome("error", relist=False, backoff=True)
        elif isinstance(exc, TransportError) and opened:
            self._log.info("watch broke; rewatching", error=error)
            outcome = self._ended("closed", started, events)
        elif isinstance(exc, ApiError | TransportError):
            self._log.warning("watch failed; relisting", error=error)
            outcome = _Outcome("error", relist=True, backoff=True)
        else:
            self._log.error("watch failed unexpectedly; relisting", exc_info=exc)
            outcome = _Outcome("error", relist=True, backoff=True)
        return outcome

    def _ended(self, reason: str, started: float, events: int, *, relist: bool = False) -> _Outcome:
        short = events == 0 and self._clock.monotonic() - started < _SHORT_WATCH_SECONDS
        if short:
            self._log.info("very short watch; backing off", reason=reason)
        return _Outcome(reason, relist=relist, backoff=short)

    def _deliver(self, event: WatchEvent, *, trusted: bool) -> bool:
        """Hand one event to the sink; returns whether later RVs may be trusted."""
        now = self._activity = self._clock.monotonic()
        kind = event.type
        obj = event.object
        self._event_counters[kind].inc()
        if now >= self._stamp_due:
            # A burst of events is one moment for the gauge: reading the wall clock and setting
            # the gauge once per millisecond instead of per event keeps both off the hot path.
            self._stamp_due = now + _STAMP_RESOLUTION
            self._last_event.set(self._clock.now().timestamp())
        rv = objects.resource_version(obj)
        if kind == "BOOKMARK":
            if rv:
                self._last_rv = rv
                self._sink.on_bookmark(rv)
            return True
        if kind != "ADDED":
            trusted = True
        self._sink.on_change(kind, obj if self._transform is None else self.transformed(obj))
        if trusted and rv:
            self._last_rv = rv
        return trusted
