"""The indexed store behind every informer cache.

A :class:`Store` maps keys (``namespace/name``, or ``name`` for cluster-scoped objects) to the
objects an informer received, and keeps indexes over them: by namespace, by controller owner uid,
and any user-defined :data:`IndexFunc`. It is what the cache holds for every object of a cluster,
so it is built for memory first:

* objects are stored as received, never copied or wrapped; reads hand out the same objects
  (:data:`~etctl.runtime.ObjectView`, read-only by contract: deep-copy before changing one);
* per object, the only overhead is its key string and one entry per index value; no reverse map is
  kept (an object's old index values are recomputed from the stored old object when it changes);
* an index value with a single key holds the key string itself; a set appears only when a second
  key shares the value.

What dominates is the objects themselves: plain decoded dicts cost about as much as
kubernetes_asyncio's models. Pass objects through an :class:`~etctl.runtime._compact.Compactor`
before storing them to share equal strings and subtrees (the informer does).

Invariants:

* for every index ``i`` and value ``v``, ``by_index(i, v)`` is exactly the stored objects whose
  index function yields ``v`` (index functions must be pure functions of the object);
* :meth:`Store.replace` is atomic: its new content and indexes are built aside and swapped in, and
  it reports which objects were added, changed, or vanished (the informer turns the vanished ones
  into tombstones); an object whose uid changed under the same key is reported as vanished plus
  added, never as an update;
* there is no ``await`` anywhere: each operation completes before any other task runs.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from etctl.runtime import _objects as objects
from etctl.runtime._objects import ObjectView, Tombstone

__all__ = [
    "BY_CONTROLLER",
    "BY_NAMESPACE",
    "IndexFunc",
    "ReplaceDiff",
    "Store",
    "by_controller",
    "by_namespace",
]

IndexFunc = Callable[[ObjectView], Iterable[str]]
"""Computes the index values of an object; must depend on the object only."""

BY_NAMESPACE = "namespace"
"""Built-in index: the object's namespace (cluster-scoped objects are not indexed)."""

BY_CONTROLLER = "controller"
"""Built-in index: the uid of the object's controller owner (objects without one: not indexed)."""

_Objects = list[ObjectView]
_Bucket = str | set[str]
_Index = dict[str, _Bucket]


def by_namespace(obj: ObjectView) -> tuple[str, ...]:
    """Index function of :data:`BY_NAMESPACE`."""
    ns = objects.namespace(obj)
    return (ns,) if ns else ()


def by_controller(obj: ObjectView) -> tuple[str, ...]:
    """Index function of :data:`BY_CONTROLLER`."""
    owner = objects.controller_ref(obj)
    return (owner,) if owner else ()


@dataclass(frozen=True, slots=True)
class ReplaceDiff:
    """What a :meth:`Store.replace` changed.

    Attributes:
        added: objects whose key was absent (or held an object with another uid).
        updated: ``(old, new)`` pairs for keys present before and after, same uid.
        deleted: tombstones of objects that vanished (or were replaced by another uid).
    """

    added: list[ObjectView] = field(default_factory=list)
    updated: list[tuple[ObjectView, ObjectView]] = field(default_factory=list)
    deleted: list[Tombstone] = field(default_factory=list)


def _values(fn: IndexFunc, obj: ObjectView) -> tuple[str, ...]:
    raw = fn(obj)
    values = raw if isinstance(raw, tuple) else tuple(raw)
    return values if len(values) < 2 else tuple(dict.fromkeys(values))


def _insert(index: _Index, value: str, key: str) -> None:
    bucket = index.get(value)
    if bucket is None:
        index[value] = key
    elif isinstance(bucket, str):
        if bucket != key:
            index[value] = {bucket, key}
    else:
        bucket.add(key)


def _remove(index: _Index, value: str, key: str) -> None:
    bucket = index.get(value)
    if bucket is None:
        return
    if isinstance(bucket, str):
        if bucket == key:
            del index[value]
        return
    bucket.discard(key)
    if len(bucket) == 1:
        index[value] = next(iter(bucket))
    elif not bucket:
        del index[value]


class Store:
    """A key -> object map with indexes; see the module docstring for its invariants.

    Args:
        indexers: extra index functions by name, next to the built-in ``namespace`` and
            ``controller`` indexes.
    """

    __slots__ = ("_indexed", "_indexers", "_indices", "_items", "_resource_version")

    def __init__(self, *, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, ObjectView] = {}
        self._indexers: dict[str, IndexFunc] = {BY_NAMESPACE: by_namespace}
        self._indexers[BY_CONTROLLER] = by_controller
        self._indices: dict[str, _Index] = {name: {} for name in self._indexers}
        self._indexed = self._pairs()
        self._resource_version = ""
        if indexers:
            self.add_indexers(indexers)

    def _pairs(self) -> tuple[tuple[IndexFunc, _Index], ...]:
        """Each index function with its index, for the per-write loop (no lookup by name)."""
        return tuple((fn, self._indices[name]) for name, fn in self._indexers.items())

    # -- indexes

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add index functions, indexing the objects already stored.

        Raises:
            ValueError: an index of that name exists already.
        """
        clash = sorted(set(indexers) & set(self._indexers))
        if clash:
            msg = f"indexes already exist: {', '.join(clash)}"
            raise ValueError(msg)
        for name, fn in indexers.items():
            index: _Index = {}
            for key, obj in self._items.items():
                for value in _values(fn, obj):
                    _insert(index, value, key)
            self._indexers[name] = fn
            self._indices[name] = index
        self._indexed = self._pairs()

    @property
    def indexers(self) -> Mapping[str, IndexFunc]:
        """Every index function by name, built-in ones included."""
        return dict(self._indexers)

    def _index(self, name: str) -> _Index:
        try:
            return self._indices[name]
        except KeyError:
            msg = f"no index named {name!r}"
            raise KeyError(msg) from None

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        """The keys whose objects have ``value`` in index ``name`` (no particular order).

        Raises:
            KeyError: no such index.
        """
        bucket = self._index(name).get(value)
        if bucket is None:
            return []
        return [bucket] if isinstance(bucket, str) else builtins.list(bucket)

    def by_index(self, name: str, value: str) -> _Objects:
        """The objects that have ``value`` in index ``name`` (no particular order).

        Raises:
            KeyError: no such index.
        """
        items = self._items
        return [items[key] for key in self.index_keys(name, value)]

    def index_values(self, name: str) -> builtins.list[str]:
        """Every value index ``name`` currently holds.

        Raises:
            KeyError: no such index.
        """
        return builtins.list(self._index(name))

    # -- writes

    def _reindex(self, key: str, old: ObjectView | None, new: ObjectView | None) -> None:
        for fn, index in self._indexed:
            before = _values(fn, old) if old is not None else ()
            after = _values(fn, new) if new is not None else ()
            if before == after:
                continue
            for value in before:
                if value not in after:
                    _remove(index, value, key)
            for value in after:
                if value not in before:
                    _insert(index, value, key)

    def add(self, obj: ObjectView) -> ObjectView | None:
        """Store ``obj`` under its key (replacing what was there); returns the previous object."""
        return self.put(objects.key_of(obj), obj)

    def put(self, key: str, obj: ObjectView) -> ObjectView | None:
        """Store ``obj`` under ``key``, which must be its key; returns the previous object."""
        items = self._items
        old = items.get(key)
        items[key] = obj
        if old is not obj:
            self._reindex(key, old, obj)
        return old

    def update(self, obj: ObjectView) -> ObjectView | None:
        """Same as :meth:`add`: store ``obj``, return the previous object (``None`` if new)."""
        return self.add(obj)

    def delete(self, obj_or_key: ObjectView | str) -> ObjectView | None:
        """Remove an object (given itself or its key); returns it, or ``None`` if absent."""
        key = obj_or_key if isinstance(obj_or_key, str) else objects.key_of(obj_or_key)
        old = self._items.pop(key, None)
        if old is not None:
            self._reindex(key, old, None)
        return old

    def replace(self, new_objects: Iterable[ObjectView], resource_version: str) -> ReplaceDiff:
        """Swap in a complete new content (a relist) atomically and report the differences."""
        previous = self._items
        items: dict[str, ObjectView] = {}
        diff = ReplaceDiff()
        for obj in new_objects:
            key = objects.key_of(obj)
            items[key] = obj
        for key, obj in items.items():
            old = previous.get(key)
            if old is None:
                diff.added.append(obj)
            elif objects.uid(old) != objects.uid(obj):
                diff.deleted.append(Tombstone(key, old))
                diff.added.append(obj)
            else:
                diff.updated.append((old, obj))
        diff.deleted.extend(Tombstone(k, o) for k, o in previous.items() if k not in items)
        indices: dict[str, _Index] = {}
        for name, fn in self._indexers.items():
            index: _Index = {}
            for key, obj in items.items():
                for value in _values(fn, obj):
                    _insert(index, value, key)
            indices[name] = index
        self._items = items
        self._indices = indices
        self._indexed = self._pairs()
        self._resource_version = resource_version
        return diff

    # -- reads

    def get(self, key: str) -> ObjectView | None:
        """The object stored under ``key``, or ``None``."""
        return self._items.get(key)

    def list(self) -> _Objects:
        """Every stored object (no particular order)."""
        return builtins.list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        """Every stored key (no particular order)."""
        return builtins.list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    @property
    def resource_version(self) -> str:
        """The resourceVersion the content is current at (set by the informer)."""
        return self._resource_version

    @resource_version.setter
    def resource_version(self, value: str) -> None:
        self._resource_version = value
