"""The event recorder: core/v1 Events about objects, as client-go's recorder writes them.

``recorder.event(obj, "Warning", "FailedCreate", "...")`` returns at once and never raises: the
event is built, put on a bounded queue (1,000 events; beyond that it is dropped, counted in
:attr:`EventRecorder.dropped` and logged) and sent later by :meth:`EventRecorder.run`, which the
manager runs in its TaskGroup. A reconcile loop is never slowed down or broken by events.

Before sending, every event goes through the correlator (:mod:`etctl.runtime._correlator`):
aggregation of similar events, deduplication into ``count`` patches, and a per-object spam filter.

Sending follows client-go's ``recordToSink``:

* a patch that meets NotFound (the event expired on the server) falls back to a create;
* transport errors are retried up to 12 tries, 10 s apart, the first delay drawn uniformly from
  [0, 10 s) so that many recorders do not retry in step; all sleeps run on the injected clock;
* an API rejection (AlreadyExists, a terminating namespace, Invalid, or any other ``Status``) is
  final: logged, not retried;
* an event recorded by leader-only work keeps that work's fence (:mod:`etctl.runtime._fence`):
  once it has lapsed, the event is dropped unsent (counted in :attr:`EventRecorder.fenced`), so a
  deposed leader writes no Event either.

Events are named ``<involvedObject.name>.<hex nanoseconds>``, strictly increasing across every
recorder that shares a clock, so two events in the same clock tick never collide (under a virtual
clock every recorder reads the same instant), live in the involved object's namespace
(``default`` for cluster-scoped objects), carry ``source``, ``reportingComponent`` and
``reportingInstance``, and their message is cut to the API's 1,024 characters.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import weakref
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from etctl.errors import ApiError, Fenced, NotFound, TransportError
from etctl.log import get_logger
from etctl.runtime import _objects as objects
from etctl.runtime._client import Client, PatchType
from etctl.runtime._clock import Clock
from etctl.runtime._correlator import Correlation, CorrelatorOptions, EventCorrelator
from etctl.runtime._fence import Fence, check_fence, current_fence, under_fence
from etctl.runtime._objects import KubeObject, ObjectView
from etctl.runtime._resources import EVENTS

__all__ = [
    "ClientEventSink",
    "CorrelatorOptions",
    "EventRecorder",
    "EventSink",
    "EventType",
    "MAX_MESSAGE_LENGTH",
]

log = get_logger(__name__)


class _EventStamps:
    """Strictly increasing nanosecond stamps for event names, one sequence per clock.

    Recorders that share a clock (a manager's recorders always do) share the sequence, so two of
    them recording in the same instant never name events alike; recorders on separate clocks keep
    their own, so one clock's stamps never leak into another's.
    """

    _last: ClassVar[weakref.WeakKeyDictionary[Clock, int]] = weakref.WeakKeyDictionary()

    @classmethod
    def next(cls, clock: Clock) -> int:
        nanos = int(clock.now().timestamp() * 1_000_000_000)
        stamp = max(nanos, cls._last.get(clock, 0) + 1)
        cls._last[clock] = stamp
        return stamp


EventType = Literal["Normal", "Warning"]

MAX_MESSAGE_LENGTH = 1024
"""The API's limit on an event message (``NoteLengthLimit``)."""

_TRUNCATED = " ..."
_MAX_TRIES = 12
_RETRY_DELAY = 10.0


@runtime_checkable
class EventSink(Protocol):
    """Where events are written."""

    async def create(self, event: KubeObject) -> KubeObject:
        """Create the event; returns the server's copy."""
        ...

    async def patch(self, event: KubeObject, patch: Mapping[str, Any]) -> KubeObject:
        """Patch the existing event named ``event.metadata.name``; returns the server's copy."""
        ...


class ClientEventSink:
    """An :class:`EventSink` writing core/v1 Events through a :class:`~etctl.runtime.Client`.

    Args:
        client: the client to write with.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    async def create(self, event: KubeObject) -> KubeObject:
        """Create the event in its namespace."""
        return await self._client.create(EVENTS, event)

    async def patch(self, event: KubeObject, patch: Mapping[str, Any]) -> KubeObject:
        """Strategic-merge-patch the event (count, lastTimestamp, message)."""
        return await self._client.patch(
            EVENTS,
            objects.name(event),
            patch,
            namespace=objects.namespace(event),
            patch_type=PatchType.STRATEGIC,
        )


def _truncate(message: str) -> str:
    if len(message) <= MAX_MESSAGE_LENGTH:
        return message
    return message[: MAX_MESSAGE_LENGTH - len(_TRUNCATED)] + _TRUNCATED


def _namespace_terminating(error: ApiError) -> bool:
    # A StatusCause's type is serialised under the key "reason".
    return any(cause.get("reason") == "NamespaceTerminating" for cause in error.causes)


class EventRecorder:
    """Records Events about objects without ever blocking or raising.

    Args:
        sink: where events go (:class:`ClientEventSink` in production).
        component: the reporting component (``source.component``, ``reportingComponent``).
        instance: the reporting instance (``source.host``, ``reportingInstance``); defaults to
            ``$POD_NAME`` or the host name.
        clock: the clock of timestamps, correlation and retry sleeps.
        queue_size: events waiting to be sent before new ones are dropped.
        options: the correlator's thresholds.
        rng: the source of the randomized first retry delay.
    """

    def __init__(
        self,
        sink: EventSink,
        *,
        component: str,
        instance: str | None = None,
        clock: Clock,
        queue_size: int = 1000,
        options: CorrelatorOptions | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._sink = sink
        self._component = component
        self._instance = instance or os.environ.get("POD_NAME") or socket.gethostname()
        self._clock = clock
        self._queue: asyncio.Queue[tuple[KubeObject, Fence | None]] = asyncio.Queue(
            maxsize=queue_size
        )
        self._correlator = EventCorrelator(clock=clock, options=options)
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self.dropped = 0
        """Events dropped because the queue was full or the event could not be built."""
        self.fenced = 0
        """Events of leader-only work dropped unsent because its fence had lapsed."""

    # -- recording (synchronous, never raises)

    def event(self, obj: ObjectView, event_type: EventType, reason: str, message: str) -> None:
        """Record an event about ``obj``; returns at once, whatever happens."""
        if event_type not in ("Normal", "Warning"):
            self._drop("unsupported event type", reason=reason, event_type=event_type)
            return
        try:
            built = self._build(obj, event_type, reason, message)
        except Exception:  # noqa: BLE001 - recording must never break the caller's reconcile
            self._drop("event could not be built", reason=reason, exc_info=True)
            return
        try:
            self._queue.put_nowait((built, current_fence()))
        except asyncio.QueueFull:
            self._drop("event queue full", reason=reason)

    def eventf(
        self,
        obj: ObjectView,
        event_type: EventType,
        reason: str,
        fmt: str,
        *args: object,
    ) -> None:
        """Like :meth:`event`, with a ``%``-style message (a bad format never raises)."""
        try:
            message = fmt % args if args else fmt
        except (TypeError, ValueError):
            message = f"{fmt} {args!r}"
        self.event(obj, event_type, reason, message)

    def _drop(self, why: str, **fields: Any) -> None:
        self.dropped += 1
        # Log the 1st, 2nd, 4th, 8th... drop: a flood of drops must not become a flood of logs.
        if self.dropped & (self.dropped - 1) == 0:
            log.warning("event dropped", why=why, dropped_total=self.dropped, **fields)

    def _nanos(self) -> int:
        return _EventStamps.next(self._clock)

    def _build(self, obj: ObjectView, type_: str, reason: str, message: str) -> KubeObject:
        name = objects.name(obj)
        namespace = objects.namespace(obj)
        stamp = self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        reference = {
            "kind": str(obj.get("kind") or ""),
            "namespace": namespace,
            "name": name,
            "uid": objects.uid(obj),
            "apiVersion": str(obj.get("apiVersion") or ""),
            "resourceVersion": objects.resource_version(obj),
        }
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{name}.{self._nanos():x}",
                "namespace": namespace or "default",
            },
            "involvedObject": {k: v for k, v in reference.items() if v},
            "reason": reason,
            "message": _truncate(message),
            "type": type_,
            "source": {"component": self._component, "host": self._instance},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": self._component,
            "reportingInstance": self._instance,
        }

    # -- sending

    @property
    def pending(self) -> int:
        """Events queued and not yet processed."""
        return self._queue.qsize()

    async def run(self) -> None:
        """Send queued events until cancelled (run it in the manager's TaskGroup)."""
        while True:
            event, fence = await self._queue.get()
            try:
                with under_fence(fence):
                    await self._send(event)
            except Fenced:
                self._fenced(event)
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        """Wait until every queued event has been processed (sent, skipped or given up)."""
        await self._queue.join()

    def _fenced(self, event: KubeObject) -> None:
        self.fenced += 1
        log.debug(
            "event of leader-only work dropped: leadership may have passed",
            reason=event.get("reason"),
        )

    async def _send(self, event: KubeObject) -> None:
        check_fence("event")
        correlation = self._correlator.correlate(event)
        if correlation.skip:
            log.debug("event throttled by the spam filter", reason=event.get("reason"))
            return
        for attempt in range(1, _MAX_TRIES + 1):
            if await self._write(correlation):
                return
            if attempt == _MAX_TRIES:
                break
            delay = _RETRY_DELAY * self._rng.random() if attempt == 1 else _RETRY_DELAY
            await self._clock.sleep(delay)
        log.error("unable to write event: retry limit exceeded", name=objects.name(event))

    async def _write(self, correlation: Correlation) -> bool:
        """One try; True when done (written, or rejected for good), False to retry."""
        event = correlation.event
        try:
            written: KubeObject | None = None
            if correlation.patch is not None:
                try:
                    written = await self._sink.patch(event, correlation.patch)
                except NotFound:
                    written = None  # the event expired on the server: create it again
            if written is None:
                written = await self._sink.create(event)
        except TransportError as exc:
            log.warning("unable to write event (will retry)", error=str(exc))
            return False
        except ApiError as exc:
            if exc.reason == "AlreadyExists" or _namespace_terminating(exc):
                log.debug("server rejected event (will not retry)", error=str(exc))
            else:
                log.error("server rejected event (will not retry)", error=str(exc))
            return True
        self._correlator.sent(correlation.key, written)
        return True
