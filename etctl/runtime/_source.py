"""The seam between informers and controllers: event handlers and event sources.

An informer is an :class:`EventSource`: it keeps a cache of one resource up to date and tells every
registered :class:`ResourceEventHandler` what changed. Controllers register handlers that map
objects to reconcile requests and enqueue them.

Contract for handlers:

* they are plain (synchronous) callables and must not block: they run on the informer's delivery
  path, so they only compute keys and add them to a queue;
* the cache already reflects an event when its handler runs (client-go order);
* ``on_delete`` receives either the deleted object or a :class:`~etctl.runtime.Tombstone`
  when the deletion happened while the watch was down and only the last known state is known;
* an ``on_update`` whose old and new objects have the same ``resourceVersion`` is a resync, not a
  change;
* a handler added after the source started first receives every cached object as
  ``on_add(obj, is_in_initial_list=True)``; its registration reports synced once they are delivered;
* an exception from a handler is logged and counted by the source and never stops delivery to the
  other handlers.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from etctl.runtime._objects import ObjectView, Tombstone
from etctl.runtime._resources import Resource

__all__ = ["EventSource", "HandlerRegistration", "ResourceEventHandler"]


@runtime_checkable
class ResourceEventHandler(Protocol):
    """Receives the changes an :class:`EventSource` observes. Must not block."""

    def on_add(self, obj: ObjectView, *, is_in_initial_list: bool) -> None:
        """An object appeared (``is_in_initial_list`` for objects of the first list or a replay)."""
        ...

    def on_update(self, old: ObjectView, new: ObjectView) -> None:
        """An object changed (or was resynced, when both resource versions are equal)."""
        ...

    def on_delete(self, obj: ObjectView | Tombstone) -> None:
        """An object is gone; a Tombstone when the delete itself was not observed."""
        ...


@runtime_checkable
class HandlerRegistration(Protocol):
    """What :meth:`EventSource.add_handler` returns."""

    def has_synced(self) -> bool:
        """True once the source synced and this handler received every initial object."""
        ...


@runtime_checkable
class EventSource(Protocol):
    """A cache of one resource that reports its changes to handlers (an informer)."""

    @property
    def resource(self) -> Resource:
        """The resource this source watches."""
        ...

    def add_handler(self, handler: ResourceEventHandler) -> HandlerRegistration:
        """Register a handler; it first receives the current objects, then every change."""
        ...

    def has_synced(self) -> bool:
        """True once the first list has been stored."""
        ...

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait until synced.

        Raises:
            etctl.errors.CacheSyncError: not synced within ``timeout`` seconds; the message names
                the resource and the last error seen (a 403 from RBAC, a missing CRD).
        """
        ...
