"""Event handlers: which reconcile requests an event about an object causes.

An :class:`EventHandler` maps one event to the requests it causes, and nothing else: it is pure, so
it is trivial to test and to compose. :class:`EnqueueingHandler` is the
:class:`~etctl.runtime._source.ResourceEventHandler` a controller registers on a source: it
turns the source's calls into events (unwrapping tombstones), runs the controller's predicates and
adds the mapped requests to the workqueue, in that order (controller-runtime's internal source
handler).

The handlers, as controller-runtime's:

* :class:`EnqueueRequestForObject`: the object itself (the new object on update).
* :class:`EnqueueRequestForOwner`: the owners of the object of one group and kind, by default only
  its controller. On update it enqueues the owners of *both* the old and the new object, so an
  object that changes owner wakes up both of them.
* :class:`EnqueueRequestsFromMapFunc`: whatever a function of the object returns; on update the
  results for old and new, deduplicated.

Every handler yields each request at most once per event and skips objects without a name.

**Priorities** (controller-runtime's priority queue): :class:`EnqueueingHandler` adds what an event
maps to at :data:`~etctl.runtime._workqueue.LOW_PRIORITY` when the event brings no news: an object
of a source's initial list (or of a replay), or a resync (old and new share a
``resourceVersion``). A controller also adds the *creation* of an object of the kind it reconciles
(its ``for_`` watch, ``new_objects_low``) at low priority: a burst of new objects is taken up as
workers come free, after the follow-ups of objects already in progress (their children's events,
their own updates) instead of queueing those behind it. Everything else is added at priority 0.
The queue's aging bounds how long low-priority work waits.

**Batches** (the Kubernetes Job controller's pod update batch period): with ``batch`` seconds, an
event that brings news is added with ``add_after`` instead, and the events for the same key that
follow within the period join it (the queue keeps a waiting key's earliest time), so a burst of
changes is one reconcile. Lists and resyncs are never held; creations are unless
``batch_creations`` is False.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from etctl.runtime._event import CreateEvent, DeleteEvent, UpdateEvent
from etctl.runtime._objects import ObjectView, Tombstone, name, namespace, owner_references
from etctl.runtime._predicate import Predicate
from etctl.runtime._reconcile import Request
from etctl.runtime._workqueue import LOW_PRIORITY

__all__ = [
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "Enqueuer",
    "EnqueueingHandler",
    "EventHandler",
    "MapFunc",
    "PriorityFunc",
]

MapFunc = Callable[[ObjectView], Iterable[Request]]
"""Maps an object to the requests it should cause."""

PriorityFunc = Callable[[Request], int]
"""The priority of a key in a controller's queue (higher first), for events that bring news."""


@runtime_checkable
class EventHandler(Protocol):
    """Maps events to the reconcile requests they cause."""

    def create(self, event: CreateEvent) -> Iterable[Request]:
        """The requests a create causes."""
        ...

    def update(self, event: UpdateEvent) -> Iterable[Request]:
        """The requests an update causes."""
        ...

    def delete(self, event: DeleteEvent) -> Iterable[Request]:
        """The requests a delete causes."""
        ...


class Enqueuer(Protocol):
    """Where an :class:`EnqueueingHandler` puts requests (a workqueue)."""

    def add(self, item: Request, *, priority: int = 0) -> None:
        """Queue ``item`` with ``priority`` (higher first)."""
        ...

    def add_after(self, item: Request, delay: float, *, priority: int | None = None) -> None:
        """Queue ``item`` after ``delay`` seconds; if it waits already, the earlier time wins."""
        ...


def _unique(requests: Iterable[Request]) -> list[Request]:
    return list(dict.fromkeys(requests))


class EnqueueRequestForObject:
    """Enqueues the object the event is about."""

    __slots__ = ()

    def create(self, event: CreateEvent) -> Iterable[Request]:
        """The created object."""
        return _for_object(event.obj)

    def update(self, event: UpdateEvent) -> Iterable[Request]:
        """The updated object (its key cannot change between old and new)."""
        return _for_object(event.new)

    def delete(self, event: DeleteEvent) -> Iterable[Request]:
        """The deleted object."""
        return _for_object(event.obj)


def _for_object(obj: ObjectView) -> list[Request]:
    object_name = name(obj)
    return [Request(namespace(obj), object_name)] if object_name else []


class EnqueueRequestForOwner:
    """Enqueues the owners of one group and kind named in the object's ``ownerReferences``.

    Args:
        owner_group: the API group of the owner (``""`` for the core group); versions are ignored.
        owner_kind: the kind of the owner.
        only_controller: only the reference marked ``controller: true`` counts (the default).
        owner_namespaced: False when the owner kind is cluster-scoped: its requests then carry no
            namespace. Otherwise an owner lives in its dependent's namespace.
    """

    __slots__ = ("_group", "_kind", "_namespaced", "_only_controller")

    def __init__(
        self,
        owner_group: str,
        owner_kind: str,
        *,
        only_controller: bool = True,
        owner_namespaced: bool = True,
    ) -> None:
        self._group = owner_group
        self._kind = owner_kind
        self._only_controller = only_controller
        self._namespaced = owner_namespaced

    def create(self, event: CreateEvent) -> Iterable[Request]:
        """The owners of the created object."""
        return self._owners(event.obj)

    def update(self, event: UpdateEvent) -> Iterable[Request]:
        """The owners of the old and of the new object."""
        return _unique([*self._owners(event.old), *self._owners(event.new)])

    def delete(self, event: DeleteEvent) -> Iterable[Request]:
        """The owners of the deleted object."""
        return self._owners(event.obj)

    def _owners(self, obj: ObjectView) -> list[Request]:
        owner_namespace = namespace(obj) if self._namespaced else ""
        found: list[Request] = []
        for ref in owner_references(obj):
            if self._only_controller and ref.get("controller") is not True:
                continue
            if ref.get("kind") != self._kind:
                continue
            group, _, _version = str(ref.get("apiVersion") or "").rpartition("/")
            owner_name = ref.get("name")
            if group == self._group and isinstance(owner_name, str) and owner_name:
                found.append(Request(owner_namespace, owner_name))
        return _unique(found)

    def __repr__(self) -> str:
        return (
            f"EnqueueRequestForOwner({self._group!r}, {self._kind!r}, "
            f"only_controller={self._only_controller})"
        )


class EnqueueRequestsFromMapFunc:
    """Enqueues what a function of the object returns.

    Args:
        fn: maps an object to requests (for example a pod to the job named in one of its labels).
    """

    __slots__ = ("_fn",)

    def __init__(self, fn: MapFunc) -> None:
        self._fn = fn

    def create(self, event: CreateEvent) -> Iterable[Request]:
        """What the function returns for the created object."""
        return _unique(self._fn(event.obj))

    def update(self, event: UpdateEvent) -> Iterable[Request]:
        """What the function returns for the old and the new object, deduplicated."""
        return _unique([*self._fn(event.old), *self._fn(event.new)])

    def delete(self, event: DeleteEvent) -> Iterable[Request]:
        """What the function returns for the deleted object."""
        return _unique(self._fn(event.obj))


class EnqueueingHandler:
    """The source-facing handler: event -> predicates -> handler -> workqueue.

    It implements :class:`~etctl.runtime._source.ResourceEventHandler`, so it runs on the source's
    delivery path and never blocks: it only filters, maps and adds keys.

    Args:
        handler: maps events to requests.
        queue: receives the requests.
        predicates: every one must pass an event for it to be enqueued.
        new_objects_low: add creations at low priority too, not only those of the initial list
            (see the module docstring).
        priority: the priority of each request of an event that brings news (0 for all when
            omitted); events that bring none are added at low priority whatever it says.
        batch: seconds to hold the requests of an event that brings news before queueing them
            (0: at once); the events meanwhile join the wait, since the queue keeps a waiting
            key's earliest time, so a burst of them is one reconcile.
        batch_creations: hold creations too (True by default, as the Kubernetes Job controller
            holds its pods'); False for a watch whose new objects a controller must take up at
            once (the very object its key names), holding only their updates and deletes.
    """

    __slots__ = (
        "_batch",
        "_batch_creations",
        "_handler",
        "_new_objects_low",
        "_predicates",
        "_priority",
        "_queue",
    )

    def __init__(
        self,
        handler: EventHandler,
        queue: Enqueuer,
        predicates: Sequence[Predicate] = (),
        *,
        new_objects_low: bool = False,
        priority: PriorityFunc | None = None,
        batch: float = 0.0,
        batch_creations: bool = True,
    ) -> None:
        self._batch = batch
        self._batch_creations = batch_creations
        self._handler = handler
        self._queue = queue
        self._predicates = tuple(predicates)
        self._new_objects_low = new_objects_low
        self._priority = priority

    def on_add(self, obj: ObjectView, *, is_in_initial_list: bool) -> None:
        """Enqueue what the create maps to, if every predicate passes it."""
        event = CreateEvent(obj, is_in_initial_list)
        predicates = self._predicates
        if not predicates or all(p.create(event) for p in predicates):
            low = is_in_initial_list or self._new_objects_low
            hold = not is_in_initial_list and self._batch_creations
            self._enqueue(self._handler.create(event), low=low, hold=hold)

    def on_update(self, old: ObjectView, new: ObjectView) -> None:
        """Enqueue what the update (or resync) maps to, if every predicate passes it."""
        event = UpdateEvent(old, new)
        predicates = self._predicates
        if not predicates or all(p.update(event) for p in predicates):
            self._enqueue(self._handler.update(event), low=event.is_resync, hold=True)

    def on_delete(self, obj: ObjectView | Tombstone) -> None:
        """Enqueue what the delete maps to, if every predicate passes it; tombstones unwrap."""
        if isinstance(obj, Tombstone):
            event = DeleteEvent(obj.obj, state_unknown=True)
        else:
            event = DeleteEvent(obj)
        predicates = self._predicates
        if not predicates or all(p.delete(event) for p in predicates):
            self._enqueue(self._handler.delete(event), hold=True)

    def _enqueue(
        self, requests: Iterable[Request], *, low: bool = False, hold: bool = False
    ) -> None:
        """Add ``requests`` at low priority, or at the priority function's (0 without one).

        ``hold``: an event held for the batch period (unless it brings no news: ``low``).
        """
        if hold and self._batch > 0 and not low:
            self._enqueue_batched(requests)
            return
        add = self._queue.add
        priority = self._priority
        if low or priority is None:
            level = LOW_PRIORITY if low else 0
            for request in requests:
                add(request, priority=level)
        else:
            for request in requests:
                add(request, priority=priority(request))

    def _enqueue_batched(self, requests: Iterable[Request]) -> None:
        """Add ``requests`` once the batch period has passed (see ``batch``)."""
        add_after = self._queue.add_after
        batch = self._batch
        priority = self._priority
        for request in requests:
            add_after(request, batch, priority=0 if priority is None else priority(request))
