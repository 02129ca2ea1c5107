"""A cache that changes only when a test says so, for reconciles driven step by step.

:class:`SnapshotCache` lists its resources from the API server on :meth:`SnapshotCache.refresh` and
serves the JobController's reads from real :class:`~etctl.runtime._store.Store` objects (with their
namespace and controller-owner indexes) in between. A test can therefore reconcile against a cache
that is exactly as stale as it wants: refresh, write behind the cache's back, reconcile again.

A refresh also delivers what changed to the event handlers registered for each resource (adds,
updates, and deletions as tombstones), as an informer's relist does, so the controller's
expectations are observed.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping

from etctl.runtime import (
    Client,
    CreateEvent,
    DeleteEvent,
    EventHandler,
    LabelSelector,
    ObjectView,
    Resource,
    UpdateEvent,
    objects,
)
from etctl.runtime._store import BY_CONTROLLER, IndexFunc, Store


class SnapshotCache:
    """The JobController's reads, from snapshots refreshed on demand."""

    def __init__(
        self,
        client: Client,
        resources: Iterable[Resource],
        handlers: Mapping[Resource, EventHandler] | None = None,
    ) -> None:
        self._client = client
        self.handlers: dict[Resource, EventHandler] = dict(handlers or {})
        self._stores = {res: Store() for res in resources}

    async def refresh(self, *only: Resource) -> None:
        """List every resource (or ``only`` these) again: the cache catches up with the server."""
        for res, store in self._stores.items():
            if only and res not in only:
                continue
            listed = await self._client.list(res)
            diff = store.replace(listed.items, listed.resource_version)
            handler = self.handlers.get(res)
            if handler is None:
                continue
            for obj in diff.added:
                list(handler.create(CreateEvent(obj)))
            for old, new in diff.updated:
                if old is not new and old.get("metadata", {}).get("resourceVersion") != new.get(
                    "metadata", {}
                ).get("resourceVersion"):
                    list(handler.update(UpdateEvent(old, new)))
            for tombstone in diff.deleted:
                list(handler.delete(DeleteEvent(tombstone.obj, state_unknown=True)))

    def _store(self, res: Resource) -> Store:
        store = self._stores.get(res)
        if store is None:
            msg = f"{res} is not cached"
            raise LookupError(msg)
        return store

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> ObjectView | None:
        """One cached object."""
        return self._store(res).get(f"{namespace}/{name}" if namespace else name)

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> builtins.list[ObjectView]:
        """Cached objects of ``res`` (one namespace, a label selector)."""
        selector = LabelSelector.parse(label_selector) if label_selector else None
        return [
            obj
            for obj in self._store(res).list()
            if (not namespace or objects.namespace(obj) == namespace)
            and (selector is None or selector.matches(objects.labels(obj)))
        ]

    def by_index(self, res: Resource, index: str, value: str) -> builtins.list[ObjectView]:
        """Cached objects with ``value`` in index ``index``."""
        return self._store(res).by_index(index, value)

    def add_indexers(self, res: Resource, indexers: Mapping[str, IndexFunc]) -> None:
        """Index the cached objects of ``res``."""
        self._store(res).add_indexers(indexers)

    def controlled_by(self, res: Resource, owner_uid: str) -> builtins.list[ObjectView]:
        """Cached objects whose controller owner has ``owner_uid``."""
        return self._store(res).by_index(BY_CONTROLLER, owner_uid)
