"""Predicates: filters that decide which events reach a controller's workqueue.

A :class:`Predicate` answers, for each kind of event, whether it should be enqueued. A controller
runs every predicate given to ``watch`` before its handler maps the event to requests; an event
passes only if all of them pass it. Predicates see events, but reconcilers never do: filtering is an
optimisation, never a way to branch on what happened.

Built-ins, as controller-runtime's:

* :class:`GenerationChanged` passes updates whose ``metadata.generation`` changed, i.e. spec
  changes. Status writes and resyncs (same ``resourceVersion``) never change the generation, so this
  is the cure for a reconciler re-triggered by its own status updates. Objects without a generation
  (most core objects, such as pods) never pass an update through it.
* :class:`LabelsChanged`, :class:`AnnotationsChanged`: updates whose labels / annotations changed.
* :class:`ResourceVersionChanged`: every update but a resync.

All of them pass creates and deletes. :func:`predicate_func` builds one from plain functions, and
:func:`and_`, :func:`or_`, :func:`not_` combine them. ``and_()`` of nothing passes everything,
``or_()`` of nothing passes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from etctl.runtime import _objects as objects
from etctl.runtime._event import CreateEvent, DeleteEvent, UpdateEvent

__all__ = [
    "AnnotationsChanged",
    "GenerationChanged",
    "LabelsChanged",
    "Predicate",
    "ResourceVersionChanged",
    "and_",
    "not_",
    "or_",
    "predicate_func",
]


@runtime_checkable
class Predicate(Protocol):
    """Decides whether an event should be enqueued."""

    def create(self, event: CreateEvent) -> bool:
        """True to enqueue the create event."""
        ...

    def update(self, event: UpdateEvent) -> bool:
        """True to enqueue the update event."""
        ...

    def delete(self, event: DeleteEvent) -> bool:
        """True to enqueue the delete event."""
        ...


class _UpdateFilter:
    """Passes creates and deletes; subclasses decide on updates."""

    __slots__ = ()

    def create(self, event: CreateEvent) -> bool:
        """Creates always pass."""
        return True

    def delete(self, event: DeleteEvent) -> bool:
        """Deletes always pass."""
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class GenerationChanged(_UpdateFilter):
    """Passes updates that changed ``metadata.generation`` (spec changes, not status or resyncs)."""

    __slots__ = ()

    def update(self, event: UpdateEvent) -> bool:
        """True when the generation differs."""
        return objects.generation(event.old) != objects.generation(event.new)


class LabelsChanged(_UpdateFilter):
    """Passes updates that changed the labels."""

    __slots__ = ()

    def update(self, event: UpdateEvent) -> bool:
        """True when the labels differ."""
        return dict(objects.labels(event.old)) != dict(objects.labels(event.new))


class AnnotationsChanged(_UpdateFilter):
    """Passes updates that changed the annotations."""

    __slots__ = ()

    def update(self, event: UpdateEvent) -> bool:
        """True when the annotations differ."""
        return dict(objects.annotations(event.old)) != dict(objects.annotations(event.new))


class ResourceVersionChanged(_UpdateFilter):
    """Passes every update except resyncs (same ``resourceVersion``)."""

    __slots__ = ()

    def update(self, event: UpdateEvent) -> bool:
        """True when the resource version differs."""
        return objects.resource_version(event.old) != objects.resource_version(event.new)


class _Funcs:
    __slots__ = ("_create", "_delete", "_update")

    def __init__(
        self,
        create: Callable[[CreateEvent], bool] | None,
        update: Callable[[UpdateEvent], bool] | None,
        delete: Callable[[DeleteEvent], bool] | None,
    ) -> None:
        self._create = create
        self._update = update
        self._delete = delete

    def create(self, event: CreateEvent) -> bool:
        return self._create is None or self._create(event)

    def update(self, event: UpdateEvent) -> bool:
        return self._update is None or self._update(event)

    def delete(self, event: DeleteEvent) -> bool:
        return self._delete is None or self._delete(event)


def predicate_func(
    *,
    create: Callable[[CreateEvent], bool] | None = None,
    update: Callable[[UpdateEvent], bool] | None = None,
    delete: Callable[[DeleteEvent], bool] | None = None,
) -> Predicate:
    """A predicate from plain functions; an event kind without a function always passes."""
    return _Funcs(create, update, delete)


class _Joined:
    """Predicates joined by ``all`` (and) or ``any`` (or), short-circuiting in order."""

    __slots__ = ("_join", "_predicates")

    def __init__(
        self, predicates: tuple[Predicate, ...], join: Callable[[Iterable[bool]], bool]
    ) -> None:
        self._predicates = predicates
        self._join = join

    def create(self, event: CreateEvent) -> bool:
        return self._join(p.create(event) for p in self._predicates)

    def update(self, event: UpdateEvent) -> bool:
        return self._join(p.update(event) for p in self._predicates)

    def delete(self, event: DeleteEvent) -> bool:
        return self._join(p.delete(event) for p in self._predicates)


class _Not:
    __slots__ = ("_predicate",)

    def __init__(self, predicate: Predicate) -> None:
        self._predicate = predicate

    def create(self, event: CreateEvent) -> bool:
        return not self._predicate.create(event)

    def update(self, event: UpdateEvent) -> bool:
        return not self._predicate.update(event)

    def delete(self, event: DeleteEvent) -> bool:
        return not self._predicate.delete(event)


def and_(*predicates: Predicate) -> Predicate:
    """Passes an event only if every predicate passes it (short-circuits in order)."""
    return _Joined(predicates, all)


def or_(*predicates: Predicate) -> Predicate:
    """Passes an event if any predicate passes it (short-circuits in order)."""
    return _Joined(predicates, any)


def not_(predicate: Predicate) -> Predicate:
    """Passes exactly the events ``predicate`` rejects."""
    return _Not(predicate)
