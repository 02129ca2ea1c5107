"""client-go's event correlator: what to send for each recorded event, or nothing.

Three stages, in client-go's order, each with an LRU of 4,096 keys so memory stays bounded:

1. **Aggregation.** Events alike in source, involved object, type, reason and reporting
   controller/instance but differing in message are grouped; once ``max_events`` (10) distinct
   messages arrive with less than ``aggregate_interval`` (600 s) between consecutive ones, each
   further event is replaced by one aggregate event whose message is
   ``(combined from similar events): <latest message>``, keyed by the group.
2. **Deduplication.** An event identical to one already sent (same key, message included) becomes a
   patch of ``count``, ``lastTimestamp`` and ``message`` on the event created the first time.
3. **Spam filter.** A token bucket (burst 25, one token per 300 s) drops what exceeds it. The dedup
   stage has counted the event already, as in client-go, so the next patch that passes carries the
   true count. client-go keys the bucket by source and involved object only (its default
   ``SpamKeyFunc``); etctl's default adds the event's type and reason (``spam_by_reason``), because
   an operator's objects are noisy in one reason at a time: a job that creates a hundred pods must
   not have its ``Succeeded`` or ``Failed`` event silenced by its own ``SuccessfulCreatePod`` burst.
   ``spam_by_reason=False`` restores client-go's key.

All time comes from the injected :class:`~etctl.runtime.Clock`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from etctl.runtime._clock import Clock
from etctl.runtime._objects import KubeObject

__all__ = ["CorrelatorOptions", "Correlation", "EventCorrelator", "aggregate_message"]

K = TypeVar("K")
V = TypeVar("V")

_AGGREGATE_PREFIX = "(combined from similar events): "


def aggregate_message(message: str) -> str:
    """The message of an aggregate event."""
    return _AGGREGATE_PREFIX + message


@dataclass(frozen=True, kw_only=True, slots=True)
class CorrelatorOptions:
    """client-go's correlator defaults (``tools/record/events_cache.go``)."""

    lru_size: int = 4096
    max_events: int = 10
    aggregate_interval: float = 600.0
    spam_burst: int = 25
    spam_qps: float = 1.0 / 300.0
    spam_by_reason: bool = True
    """Key the spam filter by type and reason too (client-go: source and object only)."""


class _Lru(Generic[K, V]):
    """A bounded mapping that forgets the least recently used key."""

    __slots__ = ("_data", "_size")

    def __init__(self, size: int) -> None:
        self._data: OrderedDict[K, V] = OrderedDict()
        self._size = size

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self._size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class _TokenBucket:
    __slots__ = ("_burst", "_last", "_rate", "_tokens")

    def __init__(self, burst: int, rate: float, now: float) -> None:
        self._burst = float(burst)
        self._rate = rate
        self._tokens = float(burst)
        self._last = now

    def try_accept(self, now: float) -> bool:
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


@dataclass(slots=True)
class _Group:
    messages: set[str] = field(default_factory=set)
    last_seen: float = 0.0


@dataclass(frozen=True, slots=True)
class _Sent:
    count: int
    first_timestamp: str
    name: str

    @classmethod
    def of(cls, event: KubeObject) -> _Sent:
        """What a later patch needs of ``event``: its count, first timestamp and name."""
        metadata = event.get("metadata") or {}
        return cls(
            int(event.get("count") or 1),
            str(event.get("firstTimestamp") or ""),
            str(metadata.get("name") or ""),
        )


@dataclass(frozen=True, slots=True)
class Correlation:
    """The decision for one event.

    Attributes:
        event: what to send (the event, an aggregate, or the event renamed to its first
            occurrence with ``count`` raised).
        patch: when not ``None``, patch the existing event with it instead of creating one.
        key: the dedup key; report the server's answer with :meth:`EventCorrelator.sent`.
        skip: the spam filter dropped the event: send nothing.
    """

    event: KubeObject
    patch: dict[str, Any] | None
    key: tuple[str, ...]
    skip: bool = False


def _source_and_object(event: KubeObject) -> tuple[str, ...]:
    source = event.get("source") or {}
    ref = event.get("involvedObject") or {}
    return (
        str(source.get("component") or ""),
        str(source.get("host") or ""),
        str(ref.get("kind") or ""),
        str(ref.get("namespace") or ""),
        str(ref.get("name") or ""),
        str(ref.get("uid") or ""),
        str(ref.get("apiVersion") or ""),
    )


def _event_key(event: KubeObject) -> tuple[str, ...]:
    ref = event.get("involvedObject") or {}
    return (
        *_source_and_object(event),
        str(ref.get("fieldPath") or ""),
        str(event.get("type") or ""),
        str(event.get("reason") or ""),
        str(event.get("message") or ""),
    )


def _group_key(event: KubeObject) -> tuple[str, ...]:
    return (
        *_source_and_object(event),
        str(event.get("type") or ""),
        str(event.get("reason") or ""),
        str(event.get("reportingComponent") or ""),
        str(event.get("reportingInstance") or ""),
    )


class EventCorrelator:
    """Aggregates, deduplicates and rate-limits events before they reach the API server.

    Args:
        clock: the clock of intervals and token refills.
        options: thresholds and cache sizes.
    """

    def __init__(self, *, clock: Clock, options: CorrelatorOptions | None = None) -> None:
        self._clock = clock
        self._options = options or CorrelatorOptions()
        size = self._options.lru_size
        self._groups: _Lru[tuple[str, ...], _Group] = _Lru(size)
        self._sent: _Lru[tuple[str, ...], _Sent] = _Lru(size)
        self._buckets: _Lru[tuple[str, ...], _TokenBucket] = _Lru(size)

    def _aggregate(self, event: KubeObject) -> tuple[KubeObject, tuple[str, ...]]:
        now = self._clock.monotonic()
        key = _group_key(event)
        group = self._groups.get(key)
        if group is None or now - group.last_seen > self._options.aggregate_interval:
            group = _Group()
        group.messages.add(str(event.get("message") or ""))
        group.last_seen = now
        self._groups.put(key, group)
        if len(group.messages) < self._options.max_events:
            return event, _event_key(event)
        group.messages.pop()  # never grow past the threshold
        aggregate = {
            **event,
            "metadata": {**event["metadata"]},
            "message": aggregate_message(str(event.get("message") or "")),
        }
        return aggregate, key

    def _observe(
        self, event: KubeObject, key: tuple[str, ...]
    ) -> tuple[KubeObject, dict[str, Any] | None]:
        last = self._sent.get(key)
        patch: dict[str, Any] | None = None
        if last is not None and last.count > 0:
            event = {
                **event,
                "metadata": {**event["metadata"], "name": last.name},
                "count": last.count + 1,
                "firstTimestamp": last.first_timestamp,
            }
            patch = {
                "count": event["count"],
                "lastTimestamp": event["lastTimestamp"],
                "message": event["message"],
            }
        self._sent.put(key, _Sent.of(event))
        return event, patch

    def _spam(self, event: KubeObject) -> bool:
        now = self._clock.monotonic()
        key = _source_and_object(event)
        if self._options.spam_by_reason:
            key = (*key, str(event.get("type") or ""), str(event.get("reason") or ""))
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _TokenBucket(self._options.spam_burst, self._options.spam_qps, now)
        accepted = bucket.try_accept(now)
        self._buckets.put(key, bucket)
        return not accepted

    def correlate(self, event: KubeObject) -> Correlation:
        """Decide what to send for ``event`` (which is not modified)."""
        aggregated, key = self._aggregate(event)
        observed, patch = self._observe(aggregated, key)
        if self._spam(observed):
            return Correlation(observed, None, key, skip=True)
        return Correlation(observed, patch, key)

    def sent(self, key: tuple[str, ...], server_event: KubeObject) -> None:
        """Remember the server's copy (name, count, first timestamp) for later patches."""
        self._sent.put(key, _Sent.of(server_event))
