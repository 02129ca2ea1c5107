"""The cache reconcilers read: shared informers, requested explicitly, and reads across them.

A :class:`Cache` owns every informer of one operator. Controllers ask it for event sources with
:meth:`Cache.informer` (get-or-create: one informer per resource, namespace and selectors, shared by
every controller that asks), reconcilers read objects with :meth:`Cache.get`, :meth:`Cache.list`,
:meth:`Cache.by_index` and :meth:`Cache.controlled_by`, and the manager runs it with
:meth:`Cache.run` and waits for :meth:`Cache.wait_for_sync`.

Rules:

* **Nothing is cached implicitly.** Reading a resource that no informer was requested for raises
  :class:`NotCachedError`; the cache never starts a cluster-wide informer behind a read (a known
  way to run an operator out of memory on a large cluster). Request the informer at setup.
* **Namespaces.** ``CacheOptions(namespaces=[...])`` caches namespaced resources in those
  namespaces only, one informer per namespace behind one composite event source; reading another
  namespace raises :class:`NotCachedError`. Cluster-scoped resources ignore the list.
* **Per-resource scope** (``CacheOptions(by_object={res: ByObject(...)})``, controller-runtime's
  ``ByObject``): every informer of ``res`` lists and watches with that scope's selectors (and the
  selectors it was asked for, both), in that scope's namespaces, through that scope's transform.
  Objects outside the scope are never cached: reading one finds nothing.
* **Several informers of one resource** (different selectors) are read together: ``get`` returns
  the first hit, preferring an informer without selectors; ``list`` and ``by_index`` merge them,
  each key once.
* Objects read are the cached ones, shared with every other reader: read-only, deep-copy before
  changing one. Reads never ``await`` and never touch the network.
* :meth:`Cache.run` runs every informer as a named task of one task group, including informers
  requested while it runs; it returns only by cancellation (or if an informer crashes).
* **Its own writes.** While it runs, the cache follows every write its client makes (it is the
  client's :class:`~etctl.runtime._writes.WriteObserver`): the object a successful create,
  update, patch or delete returns goes at once into each informer that holds it, and the watch's
  event for it is recognised when it comes (:mod:`etctl.runtime._ownwrites`). A reader never sees
  an object older than this process's last successful write of it.
"""

from __future__ import annotations

import asyncio
import builtins
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from etctl.errors import CacheSyncError, ConfigError
from etctl.log import get_logger
from etctl.runtime._cache_options import ByObject, CacheOptions
from etctl.runtime._clock import Clock
from etctl.runtime._informer import Informer
from etctl.runtime._objects import ObjectView, key_of, labels
from etctl.runtime._ownwrites import WriteToken
from etctl.runtime._reflector import ListerWatcher
from etctl.runtime._resources import Resource
from etctl.runtime._selectors import FieldSelector, LabelSelector
from etctl.runtime._selectors.requirements import canonical
from etctl.runtime._source import EventSource, HandlerRegistration, ResourceEventHandler
from etctl.runtime._store import BY_CONTROLLER, BY_NAMESPACE, IndexFunc
from etctl.runtime._transforms import Transform
from etctl.runtime._writes import Answer, WriteFlight, WriteSource

__all__ = ["Cache", "CacheReader", "NotCachedError"]

log = get_logger(__name__)

_Key = tuple[Resource, str, str]


class CacheReader(Protocol):
    """The reads a reconciler makes from the cache; :class:`Cache` is one, a test fake another.

    Every read is answered from memory, never from the API server, and returns the cache's own
    objects: treat them as read-only.
    """

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> ObjectView | None:
        """One cached object, or None."""
        ...

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> builtins.list[ObjectView]:
        """The cached objects of ``res`` (in one namespace, matching a label selector)."""
        ...

    def by_index(self, res: Resource, index: str, value: str) -> builtins.list[ObjectView]:
        """The cached objects of ``res`` with ``value`` in index ``index``."""
        ...

    def controlled_by(self, res: Resource, owner_uid: str) -> builtins.list[ObjectView]:
        """The cached objects of ``res`` whose controller owner has uid ``owner_uid``."""
        ...


class NotCachedError(ConfigError, LookupError):
    """A read of a resource (or namespace) the cache holds no informer for: request one first."""


class _CompositeRegistration:
    """A handler registered on every per-namespace informer of a composite source."""

    __slots__ = ("_parts",)

    def __init__(self, parts: Sequence[HandlerRegistration]) -> None:
        self._parts = tuple(parts)

    def has_synced(self) -> bool:
        return all(part.has_synced() for part in self._parts)


class _NamespacedSource:
    """One event source over the per-namespace informers of one resource and selectors."""

    def __init__(self, resource: Resource, informers: Sequence[Informer], clock: Clock) -> None:
        self._resource = resource
        self._informers = tuple(informers)
        self._clock = clock

    @property
    def resource(self) -> Resource:
        return self._resource

    def add_handler(self, handler: ResourceEventHandler) -> HandlerRegistration:
        return _CompositeRegistration([inf.add_handler(handler) for inf in self._informers])

    def has_synced(self) -> bool:
        return all(inf.has_synced() for inf in self._informers)

    async def wait_for_sync(self, timeout: float) -> None:
        await _wait_all(self._informers, self._clock, timeout)


async def _wait_all(informers: Iterable[Informer], clock: Clock, timeout: float) -> None:
    deadline = clock.monotonic() + timeout
    for informer in informers:
        if not informer.has_synced():
            await informer.wait_for_sync(max(deadline - clock.monotonic(), 0.0))


class _CacheFlight:
    """One write followed by the informers that may hold its object."""

    __slots__ = ("_delete", "_parts")

    def __init__(self, parts: list[tuple[Informer, WriteToken]], *, delete: bool) -> None:
        self._parts = parts
        self._delete = delete

    def succeeded(self, answer: Answer | None) -> None:
        for informer, token in self._parts:
            try:
                informer.write_succeeded(token, answer, delete=self._delete)
            except Exception:
                # The write succeeded whatever happens here: its watch event brings it.
                log.exception("could not apply a write to the cache", informer=informer.describe())

    def failed(self) -> None:
        for informer, token in self._parts:
            informer.write_failed(token)


def _canonical(
    label_selector: str | None,
    field_selector: str | None,
    scope: ByObject | None = None,
) -> tuple[str, str]:
    """Selectors (with the resource's scope, if any) in canonical form, each requirement once.

    Equivalent spellings therefore share one informer.

    Raises:
        SelectorError: a selector does not parse.
    """
    label_texts = [label_selector, scope.label_selector if scope else None]
    requirements = [
        requirement
        for text in label_texts
        if text
        for requirement in LabelSelector.parse(text).requirements
    ]
    field_texts = [field_selector, scope.field_selector if scope else None]
    terms = [term for text in field_texts if text for term in FieldSelector.parse(text).terms]
    labels_text = str(LabelSelector(canonical(dict.fromkeys(requirements))))
    fields_text = str(FieldSelector(tuple(dict.fromkeys(terms))))
    return labels_text, fields_text


class Cache:
    """Shared informers and the reads across them (see the module docstring).

    Args:
        client: the client every informer lists and watches through.
        clock: every wait runs on it.
        options: scope, transforms, memory and pacing of every informer (see
            :class:`~etctl.runtime.CacheOptions`).
        rng: randomness for watch timeouts and jitter (seed it in tests).
    """

    def __init__(
        self,
        client: ListerWatcher,
        *,
        clock: Clock,
        options: CacheOptions | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self.options = options or CacheOptions()
        namespaces = self.options.namespaces
        self._namespaces = tuple(dict.fromkeys(namespaces)) if namespaces is not None else None
        # The resources whose ByObject scope names its own namespaces: every namespaced read checks
        # its namespace against them, so they are looked up here, once.
        self._scoped_namespaces = {
            res: tuple(scope.namespaces)
            for res, scope in self.options.by_object.items()
            if scope.namespaces is not None
        }
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._sources: dict[_Key, EventSource] = {}
        self._informers: list[Informer] = []
        self._by_resource: dict[Resource, list[Informer]] = {}
        self._indexers: dict[Resource, dict[str, IndexFunc]] = {}
        self._group: asyncio.TaskGroup | None = None

    @property
    def namespaces(self) -> tuple[str, ...] | None:
        """The namespaces namespaced resources are cached in by default (``None``: all)."""
        return self._namespaces

    def namespaces_of(self, res: Resource) -> tuple[str, ...] | None:
        """The namespaces ``res`` is cached in (``None``: all, or cluster-scoped)."""
        if not res.namespaced:
            return None
        if self._scoped_namespaces:
            return self._scoped_namespaces.get(res, self._namespaces)
        return self._namespaces

    # -- informers

    def informer(
        self,
        res: Resource,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> EventSource:
        """The shared event source of ``res`` with these selectors, created on first request.

        The resource's ``by_object`` scope applies on top of the selectors asked for. Created while
        the cache runs, it starts at once.

        Raises:
            SelectorError: a selector does not parse.
        """
        labels_text, fields_text = _canonical(
            label_selector, field_selector, self.options.by_object.get(res)
        )
        key = (res, labels_text, fields_text)
        source = self._sources.get(key)
        if source is not None:
            return source
        namespaces = self.namespaces_of(res)
        scopes: Sequence[str | None] = namespaces if namespaces is not None else (None,)
        created = [self._new_informer(res, ns, labels_text, fields_text) for ns in scopes]
        source = created[0] if len(created) == 1 else _NamespacedSource(res, created, self._clock)
        self._sources[key] = source
        return source

    def _new_informer(
        self, res: Resource, namespace: str | None, labels_text: str, fields_text: str
    ) -> Informer:
        informer = Informer(
            self._client,
            res,
            clock=self._clock,
            namespace=namespace,
            label_selector=labels_text or None,
            field_selector=fields_text or None,
            transform=self._transform_of(res),
            compact=self.options.compact,
            indexers=self._indexers.get(res),
            resync_period=self.options.resync_period,
            idle_timeout=self.options.idle_timeout,
            page_size=self.options.page_size,
            rng=random.Random(self._rng.random()),  # noqa: S311 - jitter, not cryptography
        )
        self._informers.append(informer)
        siblings = self._by_resource.setdefault(res, [])
        siblings.append(informer)
        # Unfiltered informers first: a get finds everything there, and list merges stay cheap.
        siblings.sort(key=lambda inf: bool(inf.label_selector or inf.field_selector))
        if self._group is not None:
            self._start(self._group, informer)
        return informer

    def _transform_of(self, res: Resource) -> Transform | None:
        scope = self.options.by_object.get(res)
        if scope is not None and scope.transform is not None:
            return scope.transform
        return self.options.transform

    def add_indexers(self, res: Resource, indexers: Mapping[str, IndexFunc]) -> None:
        """Add store indexes to every informer of ``res``, now and requested later.

        Raises:
            ValueError: an index of that name exists already for ``res``.
        """
        known = self._indexers.setdefault(res, {})
        clash = sorted(set(indexers) & (set(known) | {BY_NAMESPACE, BY_CONTROLLER}))
        if clash:
            msg = f"indexes already exist on {res}: {', '.join(clash)}"
            raise ValueError(msg)
        for informer in self._by_resource.get(res, ()):
            informer.add_indexers(indexers)
        known.update(indexers)

    # -- running

    async def run(self) -> None:
        """Run every informer, and each one requested later, until cancelled.

        Raises:
            RuntimeError: the cache is already running.
        """
        if self._group is not None:
            msg = "the cache is already running"
            raise RuntimeError(msg)
        client = self._client
        unobserve = client.observe_writes(self) if isinstance(client, WriteSource) else None
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for informer in self._informers:
                    self._start(group, informer)
                await asyncio.get_running_loop().create_future()  # until cancelled
        finally:
            self._group = None
            if unobserve is not None:
                unobserve()

    def write_started(
        self, res: Resource, namespace: str, name: str, *, delete: bool
    ) -> WriteFlight | None:
        """Follow a write of this cache's client (see :mod:`etctl.runtime._ownwrites`)."""
        informers = self._by_resource.get(res)
        if not informers:
            return None
        key = f"{namespace}/{name}" if res.namespaced else name
        parts = []
        for informer in informers:
            if informer.namespace is not None and informer.namespace != namespace:
                continue
            token = informer.write_started(key)
            if token is not None:
                parts.append((informer, token))
        return _CacheFlight(parts, delete=delete) if parts else None

    @staticmethod
    def _start(group: asyncio.TaskGroup, informer: Informer) -> None:
        group.create_task(informer.run(), name=f"cache:{informer.describe()}")

    def has_synced(self) -> bool:
        """True when every informer requested so far has synced."""
        return all(informer.has_synced() for informer in self._informers)

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait until every informer requested so far has synced.

        Raises:
            CacheSyncError: one did not sync within ``timeout`` seconds; the message names it and
                its last list error.
        """
        try:
            await _wait_all(list(self._informers), self._clock, timeout)
        except CacheSyncError as err:
            pending = [inf.describe() for inf in self._informers if not inf.has_synced()]
            msg = f"{err} (not synced: {', '.join(pending)})" if len(pending) > 1 else str(err)
            raise CacheSyncError(msg) from err

    # -- reads

    def _informers_of(self, res: Resource, namespace: str | None) -> list[Informer]:
        informers = self._by_resource.get(res)
        if not informers:
            msg = (
                f"{res} is not cached: request its informer (cache.informer(...)) when the "
                "controller is set up; reads never start one"
            )
            raise NotCachedError(msg)
        cached = self.namespaces_of(res) if namespace else None
        if cached is not None:
            if namespace not in cached:
                msg = (
                    f"namespace {namespace!r} is not cached for {res} "
                    f"(the cache holds {', '.join(cached)})"
                )
                raise NotCachedError(msg)
            return [inf for inf in informers if inf.namespace == namespace]
        return informers

    def scopes(self, res: Resource) -> builtins.list[tuple[str | None, str | None, str | None]]:
        """``(namespace, label selector, field selector)`` of every informer of ``res``.

        ``None`` restricts nothing. What the cache holds of ``res`` is what the API server holds
        within any of these (a test harness compares the two).
        """
        return [
            (inf.namespace, inf.label_selector, inf.field_selector)
            for inf in self._by_resource.get(res, ())
        ]

    def backing_off(self, res: Resource, namespace: str | None = None) -> bool:
        """Whether an informer of ``res`` (for ``namespace``) waits out a backoff on the clock.

        Raises:
            NotCachedError: no informer of ``res`` (in that namespace).
        """
        namespace = namespace if res.namespaced else None
        return any(inf.backing_off for inf in self._informers_of(res, namespace))

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> ObjectView | None:
        """The cached object, or ``None``.

        Raises:
            NotCachedError: no informer of ``res`` (in that namespace).
            ValueError: ``res`` is namespaced and no namespace was given.
        """
        if res.namespaced and not namespace:
            msg = f"{res} is namespaced: get needs a namespace"
            raise ValueError(msg)
        key = f"{namespace}/{name}" if res.namespaced else name
        for informer in self._informers_of(res, namespace):
            found = informer.store.get(key)
            if found is not None:
                return found
        return None

    def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> builtins.list[ObjectView]:
        """The cached objects of ``res`` (in one namespace, matching a label selector).

        Raises:
            NotCachedError: no informer of ``res`` (in that namespace).
            SelectorError: the label selector does not parse.
        """
        selector = LabelSelector.parse(label_selector) if label_selector else None
        namespace = namespace if res.namespaced else None
        informers = self._informers_of(res, namespace)
        batches = [
            inf.store.by_index(BY_NAMESPACE, namespace)
            if namespace and inf.namespace is None
            else inf.store.list()
            for inf in informers
        ]
        found = _merged(batches)
        if selector is None:
            return found
        return [obj for obj in found if selector.matches(labels(obj))]

    def by_index(self, res: Resource, index: str, value: str) -> builtins.list[ObjectView]:
        """The cached objects of ``res`` that have ``value`` in index ``index``.

        Raises:
            NotCachedError: no informer of ``res``.
            KeyError: no such index.
        """
        informers = self._informers_of(res, None)
        return _merged([inf.store.by_index(index, value) for inf in informers])

    def controlled_by(self, res: Resource, owner_uid: str) -> builtins.list[ObjectView]:
        """The cached objects of ``res`` whose controller owner has uid ``owner_uid``.

        Raises:
            NotCachedError: no informer of ``res``.
        """
        return self.by_index(res, BY_CONTROLLER, owner_uid)


def _merged(batches: builtins.list[builtins.list[ObjectView]]) -> builtins.list[ObjectView]:
    """Concatenate per-informer results, each key once (the first informer's object wins)."""
    if len(batches) == 1:
        return batches[0]
    seen: set[str] = set()
    out: builtins.list[ObjectView] = []
    for batch in batches:
        for obj in batch:
            key = key_of(obj)
            if key not in seen:
                seen.add(key)
                out.append(obj)
    return out
