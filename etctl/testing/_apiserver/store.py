"""The versioned object store: committed objects, one global resourceVersion, event history.

The store is the server's etcd plus watch cache. Objects are kept per group-resource under their
key (``namespace/name``, or ``name`` for cluster-scoped objects); every commit takes the next
value of one global, monotonically increasing resourceVersion and produces an :class:`Event`.

Invariants:

* everything here is synchronous and runs on the event loop thread, so commits are linearisable
  without locks, and registering a watcher together with its replay or initial snapshot is atomic
  (no event is missed or seen twice between the two);
* committed objects are never mutated again (copy on write), so events, snapshots, list results
  and watch buffers share them freely; an event encodes its JSON once per ``apiVersion``;
* history is kept as a real server keeps it (:mod:`~etctl.testing._apiserver.history`): each
  group-resource has a watch cache, whose window adapts to its event rate (a watch from before
  it gets 410), and etcd's revisions are compacted every few minutes (a list at an exact
  resourceVersion, or a continue token, from before the compaction gets 410);
* watch sinks receive each resource's events in commit order, during the commit or, with a
  :class:`~etctl.testing._apiserver.propagation.WatchLatency`, as late as a real watch cache
  delivers them (:mod:`~etctl.testing._apiserver.propagation`); change listeners (the server's
  own controllers) are called right after the commit, in commit order even when a listener
  itself writes (nested commits are queued);
* the watch cache of every resource starts where the server began serving
  (:meth:`Store.begin_serving`): a watch from an older resourceVersion gets 410, as a real
  server answers a client that reconnects with a resourceVersion from before its restart;
* like etcd, the store refuses to put an object larger than its ``max_object_bytes`` (its compact
  JSON plus its key), before anything changes: no resourceVersion is taken, no event is emitted.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import orjson

from etctl.log import get_logger
from etctl.runtime import Clock, KubeObject
from etctl.testing._apiserver.history import Compactor, EventLog, History
from etctl.testing._apiserver.limits import MAX_OBJECT_BYTES, storage_request_too_large
from etctl.testing._apiserver.propagation import INSTANT, Dispatcher, WatchLatency
from etctl.testing._apiserver.status import bad_request

__all__ = [
    "CRDS",
    "NAMESPACES",
    "Event",
    "EventType",
    "GroupResource",
    "Store",
    "WatchSink",
    "dumps",
    "metadata",
    "object_key",
    "parse_resource_version",
]

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
GroupResource = tuple[str, str]
"""``(group, plural)``: the key objects of one resource are stored under."""

NAMESPACES: GroupResource = ("", "namespaces")
CRDS: GroupResource = ("apiextensions.k8s.io", "customresourcedefinitions")

log = get_logger(__name__)

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)


def dumps(value: Any) -> bytes:
    """Compact JSON, as the API server writes it.

    orjson writes the same bytes as the standard library's compact encoder for what the API holds
    (ten times faster: a list page of 500 pods is 4 MB); what orjson refuses (an integer past 64
    bits, a non-string key) goes through the standard library's encoder.
    """
    try:
        return orjson.dumps(value)
    except TypeError:
        return _encoder.encode(value).encode()


def metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The ``metadata`` of an object being written, to edit in place.

    An object without a metadata object gets a detached empty dict: reading it finds nothing and
    edits to it are dropped (the write path's decode gives every object a metadata dict first).
    """
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def parse_resource_version(text: str) -> int:
    """A resourceVersion query value as a number.

    Raises:
        etctl.errors.BadRequest: not a non-negative integer.
    """
    try:
        value = int(text)
    except ValueError as exc:
        raise bad_request(f'invalid resource version "{text}"') from exc
    if value < 0:
        raise bad_request(f'invalid resource version "{text}"')
    return value


def object_key(namespace: str, name: str) -> str:
    """The storage key: ``namespace/name`` or ``name``; keys sort like etcd's."""
    return f"{namespace}/{name}" if namespace else name


@dataclass(slots=True, eq=False)
class Event:
    """One committed change.

    Attributes:
        type: ADDED, MODIFIED or DELETED.
        resource: the group-resource changed.
        key: the object's storage key.
        object: the new object; for DELETED, the last state stamped with the delete's
            resourceVersion.
        previous: the object before the change (None for ADDED).
        rv: the resourceVersion of the change.
        time: the store clock's monotonic time of the commit.
    """

    type: EventType
    resource: GroupResource
    key: str
    object: KubeObject
    previous: KubeObject | None
    rv: int
    time: float = 0.0
    _lines: dict[str, bytes] = field(default_factory=dict)

    def line(self, api_version: str) -> bytes:
        """The watch line of this event for readers of ``api_version`` (cached)."""
        cached = self._lines.get(api_version)
        if cached is None:
            obj = self.object
            if obj.get("apiVersion") != api_version:
                obj = {**obj, "apiVersion": api_version}
            cached = b'{"type":"' + self.type.encode() + b'","object":' + dumps(obj) + b"}\n"
            self._lines[api_version] = cached
        return cached


class WatchSink(Protocol):
    """Receives the events of one resource, synchronously, during each commit."""

    def deliver(self, event: Event) -> None:
        """Take one event; must not block or write to the store."""
        ...

    def close(self, reason: str = "stopped") -> None:
        """Stop: the resource went away or the server is shutting down."""
        ...

    @property
    def pending(self) -> int:
        """Event lines taken and not yet sent to the client."""
        ...


class _Table:
    """The objects of one group-resource, with a lazily sorted key list and its event log."""

    __slots__ = ("history", "objects", "sinks", "sorted_keys")

    def __init__(self, history: History, start_rv: int) -> None:
        self.objects: dict[str, KubeObject] = {}
        self.sorted_keys: list[str] | None = []
        self.history: EventLog[Event] = EventLog(history, start_rv)
        self.sinks: set[WatchSink] = set()

    def keys(self) -> list[str]:
        if self.sorted_keys is None:
            self.sorted_keys = sorted(self.objects)
        return self.sorted_keys


class Store:
    """Objects, the global resourceVersion, per-resource history, watch sinks and listeners.

    Args:
        history: how long changes are remembered (the watch cache, etcd's compaction).
        clock: the clock events are recorded and compactions scheduled on (None: time stands
            still at 0, so no event ever ages and no compaction is ever due).
        initial_rv: the resourceVersion before the first commit.
        max_object_bytes: the largest object a commit may store (etcd's ``--max-request-bytes``).
        latency: how late events reach the watches (during the commit by default).
    """

    def __init__(
        self,
        *,
        history: History | None = None,
        clock: Clock | None = None,
        initial_rv: int = 1,
        max_object_bytes: int = MAX_OBJECT_BYTES,
        latency: WatchLatency = INSTANT,
    ) -> None:
        self.history = history or History()
        self._now: Callable[[], float] = clock.monotonic if clock is not None else _still
        self._serving_rv = initial_rv
        self.max_object_bytes = max_object_bytes
        self._tables: dict[GroupResource, _Table] = {}
        self._rv = initial_rv
        self._compacted = 0
        self._compactor = Compactor(self.history.compaction_interval, self._now())
        self._listeners: list[Callable[[Event], None]] = []
        self._pending: deque[Event] = deque()
        self._dispatching = False
        self.dispatcher: Dispatcher[Event] = Dispatcher(latency, self._deliver)

    def _deliver(self, event: Event) -> None:
        table = self._tables.get(event.resource)
        if table is not None:
            for sink in list(table.sinks):
                sink.deliver(event)

    def begin_serving(self) -> None:
        """The server starts serving: every watch cache starts at the current revision.

        Events committed before stay in etcd's history (lists at an exact resourceVersion read
        them), but a watch from before now gets 410 Expired.
        """
        self._serving_rv = self._rv
        for table in self._tables.values():
            table.history.begin_at(self._rv)

    @property
    def rv(self) -> int:
        """The resourceVersion of the latest commit."""
        return self._rv

    def _table(self, resource: GroupResource) -> _Table:
        table = self._tables.get(resource)
        if table is None:
            # Every resource's watch cache is as old as the server (its initial list).
            table = self._tables[resource] = _Table(self.history, self._serving_rv)
        return table

    def _catch_up(self, now: float | None = None) -> None:
        """Run the etcd compactions that have come due since the store was last touched."""
        compact_to = self._compactor.due(self._now() if now is None else now, self._rv)
        if compact_to is not None and compact_to > self._compacted:
            self._compact_revisions(compact_to)

    def _compact_revisions(self, rv: int) -> None:
        self._compacted = rv
        for table in self._tables.values():
            table.history.trim(rv)

    # -- reads ----------------------------------------------------------------------------------

    def get(self, resource: GroupResource, key: str) -> KubeObject | None:
        """The committed object under ``key``, or None."""
        table = self._tables.get(resource)
        return table.objects.get(key) if table else None

    def count(self, resource: GroupResource) -> int:
        """How many objects the resource holds."""
        table = self._tables.get(resource)
        return len(table.objects) if table else 0

    def items(
        self, resource: GroupResource, namespace: str = "", *, start: str = ""
    ) -> list[tuple[str, KubeObject]]:
        """``(key, object)`` pairs in key order, within ``namespace`` when one is given.

        Args:
            resource: the group-resource.
            namespace: only keys in this namespace (``""``: every key).
            start: only keys from this one on (found by bisection in the sorted keys).
        """
        table = self._tables.get(resource)
        if table is None:
            return []
        keys = table.keys()
        objects = table.objects
        if not namespace:
            return [(k, objects[k]) for k in keys[bisect_left(keys, start) :]]
        prefix = namespace + "/"
        return list(_prefixed(keys, objects, bisect_left(keys, max(prefix, start)), prefix))

    def compacted(self, resource: GroupResource) -> int:
        """The oldest revision of ``resource`` a snapshot can still be read at (etcd's compaction).

        The global compaction, or later if the resource's history was dropped since.
        """
        self._catch_up()
        table = self._tables.get(resource)
        start = table.history.start_rv if table else 0
        return max(self._compacted, start if start > self._serving_rv else 0)

    def watch_floor(self, resource: GroupResource) -> int:
        """The oldest resourceVersion a watch of ``resource`` can start from (its watch cache)."""
        table = self._tables.get(resource)
        return table.history.watch_floor() if table else self._serving_rv

    def watch_rv(self, resource: GroupResource) -> int:
        """The revision ``resource``'s watchers have every event up to (what a bookmark says)."""
        first = self.dispatcher.first_pending(resource)
        return self._rv if first is None else first - 1

    def snapshot(self, resource: GroupResource, rv: int) -> dict[str, KubeObject] | None:
        """The resource's objects as they were at revision ``rv``, or None if it is compacted.

        Built by undoing, newest first, every kept event after ``rv``.
        """
        if rv < self.compacted(resource):
            return None
        table = self._tables.get(resource)
        if table is None:
            return {}
        state = dict(table.objects)
        for event in table.history.newest_first():
            if event.rv <= rv:
                break
            if event.type == "ADDED":
                state.pop(event.key, None)
            elif event.previous is not None:
                state[event.key] = event.previous
        return state

    def history_after(self, resource: GroupResource, rv: int) -> list[Event] | None:
        """The watch cache's events after ``rv`` in order, or None when ``rv`` is older.

        Events still on their way to the watchers are not in the watch cache yet.
        """
        table = self._tables.get(resource)
        if table is None:
            return []
        events = table.history.since(rv)
        first = self.dispatcher.first_pending(resource)
        if events is None or first is None:
            return events
        return [event for event in events if event.rv < first]

    # -- writes ---------------------------------------------------------------------------------

    def commit(self, resource: GroupResource, key: str, obj: KubeObject | None) -> Event | None:
        """Store ``obj`` under ``key`` (or delete the key when ``obj`` is None).

        ``obj`` becomes the committed object: the caller hands it over and never touches it
        again. Its ``metadata.resourceVersion`` is set here.

        Returns:
            The event, or None when deleting a key that does not exist.

        Raises:
            etctl.errors.ServerError: ``obj`` is larger than ``max_object_bytes`` (etcd's
                ``request is too large``); nothing is stored.
        """
        if obj is not None:
            self._check_size(resource, key, obj)
        now = self._now()
        self._catch_up(now)
        table = self._table(resource)
        previous = table.objects.get(key)
        if obj is None and previous is None:
            return None
        self._rv += 1
        rv_text = str(self._rv)
        if obj is None:
            assert previous is not None
            stamped = {**previous, "metadata": {**previous["metadata"], "resourceVersion": rv_text}}
            del table.objects[key]
            table.sorted_keys = None
            event = Event("DELETED", resource, key, stamped, previous, self._rv, now)
        else:
            obj["metadata"]["resourceVersion"] = rv_text
            table.objects[key] = obj
            if previous is None:
                table.sorted_keys = None
                event = Event("ADDED", resource, key, obj, None, self._rv, now)
            else:
                event = Event("MODIFIED", resource, key, obj, previous, self._rv, now)
        table.history.append(event, self._compacted)
        self.dispatcher.add(event)
        self._pending.append(event)
        self._dispatch()
        return event

    def _check_size(self, resource: GroupResource, key: str, obj: KubeObject) -> None:
        group, plural = resource
        # The etcd key a real server would use: /registry/<group>/<plural>/<namespace>/<name>.
        key_bytes = len(f"/registry/{group}/{plural}/{key}".encode())
        if len(dumps(obj)) + key_bytes > self.max_object_bytes:
            raise storage_request_too_large()

    def compact(self, resource: GroupResource | None = None) -> None:
        """Forget every change so far: reads and watches from an older resourceVersion get 410.

        With a resource, only its history goes, as when its watch cache starts over (the
        resource is removed and served again); without, etcd is compacted to the current
        revision and every watch cache starts over.
        """
        if resource is None:
            self._compacted = self._rv
        self.dispatcher.drop(resource)
        tables = [self._table(resource)] if resource else list(self._tables.values())
        for table in tables:
            table.history.reset(self._rv)

    # -- watchers and listeners -----------------------------------------------------------------

    def add_sink(self, resource: GroupResource, sink: WatchSink) -> None:
        """Deliver every later event of ``resource`` to ``sink``."""
        self._table(resource).sinks.add(sink)

    def remove_sink(self, resource: GroupResource, sink: WatchSink) -> None:
        """Stop delivering to ``sink`` (idempotent)."""
        table = self._tables.get(resource)
        if table is not None:
            table.sinks.discard(sink)

    def close_sinks(self, resource: GroupResource | None = None, reason: str = "stopped") -> None:
        """Close every sink of one resource (or of all), as when the resource stops being served."""
        tables = [self._tables[resource]] if resource in self._tables else []
        if resource is None:
            tables = list(self._tables.values())
        self.dispatcher.drop(resource)
        for table in tables:
            for sink in list(table.sinks):
                sink.close(reason)
            table.sinks.clear()

    def unsent(self) -> int:
        """Events on their way to the watches, and lines every sink has not sent to its client."""
        waiting = sum(sink.pending for table in self._tables.values() for sink in table.sinks)
        return waiting + self.dispatcher.pending

    def sinks(self, resource: GroupResource) -> int:
        """How many watch sinks the resource has."""
        table = self._tables.get(resource)
        return len(table.sinks) if table else 0

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``listener`` with every committed event; returns a function that unsubscribes.

        Listeners run synchronously right after the commit that produced the event. A listener
        may write to the store: its commits are delivered to every listener after the current
        event, so all listeners see all events in commit order.
        """
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _dispatch(self) -> None:
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while self._pending:
                event = self._pending.popleft()
                for listener in list(self._listeners):
                    try:
                        listener(event)
                    except Exception:
                        # The write is committed whatever a listener does; a failing listener
                        # must not turn it into an error for the writer.
                        log.exception("store listener failed", resource=event.resource)
        finally:
            self._dispatching = False


def _still() -> float:
    return 0.0


def _prefixed(
    keys: list[str], objects: dict[str, KubeObject], start: int, prefix: str
) -> Iterator[tuple[str, KubeObject]]:
    for index in range(start, len(keys)):
        key = keys[index]
        if not key.startswith(prefix):
            return
        yield key, objects[key]
