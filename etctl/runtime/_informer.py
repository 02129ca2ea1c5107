"""The shared informer: one reflector feeding one indexed store and any number of handlers.

An :class:`Informer` is the :class:`~etctl.runtime._source.EventSource` of one (resource,
namespace, label selector, field selector): a :class:`~etctl.runtime._reflector.Reflector` keeps its
:class:`~etctl.runtime._store.Store` in step with the API server, and every change is reported to
the registered handlers. It honours the whole contract of :mod:`etctl.runtime._source`:

* the store changes first, then every handler is called, synchronously, in registration order;
* the first list is delivered as ``on_add(obj, is_in_initial_list=True)``; a handler added later
  first receives every cached object the same way, at once, inside :meth:`Informer.add_handler`
  (nothing can interleave: there is no ``await`` in it), so its registration is synced as soon as
  the informer is;
* a relist delivers what changed meanwhile: objects that vanished as ``on_delete(Tombstone)``,
  new ones as ``on_add(..., is_in_initial_list=False)``, changed ones as ``on_update``; an object
  deleted and recreated under the same name (another uid) as ``on_delete(Tombstone(old))`` then
  ``on_add(new)``, never as an update; unchanged ones (same resourceVersion) are not reported;
* an exception from a handler is logged with its traceback and counted
  (``etctl_informer_handler_errors_total``); the other handlers still get the event, and the
  failing one gets the next;
* this process's own writes (told by the cache: :meth:`Informer.write_started`,
  :meth:`Informer.write_succeeded`) reach the store and the handlers when they succeed, and
  their watch events are recognised and dropped (:mod:`etctl.runtime._ownwrites`): handlers see
  each change once, in order, and the store never goes back in time;
* an optional periodic resync (off by default) reports every cached object as
  ``on_update(obj, obj)``: same resourceVersion, so handlers and predicates know it is not a
  change. It reads the local cache only and makes no API call.

Before objects are stored they go through the transform (by default
:func:`~etctl.runtime.strip_managed_fields`, applied by the reflector) and then, unless
``compact=False``, the informer's :class:`~etctl.runtime._compact.Compactor`, which shares equal
strings and subtrees between cached objects (about a third of the memory of the same dicts;
see ``bench/cache_memory.py``). Each object is compacted against the version the store holds, so
an update reuses every part it did not change; an unchanged object of a relist is not compacted
at all (it keeps its cached instance), nor is a deleted one. Cached objects are therefore shared
and read-only: deep-copy one before changing it.

A relist holds the old and the new content side by side until the swap: peak memory during a
relist is about twice the cache.
"""

from __future__ import annotations

import asyncio
import builtins
import random
from collections.abc import Mapping, Sequence
from typing import Protocol, cast

from etctl.errors import CacheSyncError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime import _objects as objects
from etctl.runtime._clock import Clock, wait_event
from etctl.runtime._collector import paused_collection
from etctl.runtime._compact import Compactor
from etctl.runtime._objects import KubeObject, ObjectView, Tombstone
from etctl.runtime._ownwrites import OwnWrites, Scope, WriteToken, answer_is_gone, deleted_uid
from etctl.runtime._reflector import ChangeType, ListerWatcher, Reflector
from etctl.runtime._resources import Resource
from etctl.runtime._source import HandlerRegistration, ResourceEventHandler
from etctl.runtime._store import IndexFunc, Store
from etctl.runtime._transforms import Transform, strip_managed_fields
from etctl.runtime._writes import Answer

__all__ = ["Informer", "StoreReader"]

log = get_logger(__name__)

_RESYNC_JITTER = 0.1
# Running informers per ``etctl_informer_objects`` series (one event loop: no lock needed).
_RUNNING: dict[str, int] = {}


class StoreReader(Protocol):
    """Read access to an informer's store (writes belong to the informer alone)."""

    def get(self, key: str) -> ObjectView | None:
        """The object stored under ``namespace/name`` (or ``name``), or ``None``."""
        ...

    def list(self) -> builtins.list[ObjectView]:
        """Every cached object."""
        ...

    def list_keys(self) -> builtins.list[str]:
        """Every cached key."""
        ...

    def by_index(self, name: str, value: str) -> builtins.list[ObjectView]:
        """The objects that have ``value`` in index ``name``."""
        ...

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        """The keys of the objects that have ``value`` in index ``name``."""
        ...

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...

    @property
    def resource_version(self) -> str:
        """The resourceVersion the content is current at."""
        ...


class _Registration:
    """One handler on one informer (a :class:`~etctl.runtime._source.HandlerRegistration`)."""

    __slots__ = ("_synced", "handler")

    def __init__(self, handler: ResourceEventHandler, synced: asyncio.Event) -> None:
        self.handler = handler
        self._synced = synced

    def has_synced(self) -> bool:
        # Initial objects are delivered before the informer reports synced, and a late handler
        # gets its replay inside add_handler: once the informer is synced, so is every handler.
        return self._synced.is_set()


class Informer:
    """A shared informer of one resource (see the module docstring).

    Args:
        lister: the client to list and watch through.
        resource: the resource.
        clock: every wait runs on it.
        namespace: only this namespace (``None``: every namespace; ignored for cluster-scoped
            resources).
        label_selector: only objects whose labels match (server-side filtering).
        field_selector: only objects whose fields match (server-side filtering).
        transform: applied to every object before it is stored (``None``: none).
        compact: share equal strings and subtrees of cached objects (a Compactor after the
            transform, which also reuses the unchanged parts of the cached version).
        indexers: extra store indexes by name.
        resync_period: seconds between local resyncs (jittered by 10%); ``None``: never.
        idle_timeout: seconds a watch may stay silent before the watchdog restarts it.
        page_size: objects per page of the initial list.
        rng: randomness for watch timeouts, backoff and resync jitter (seed it in tests).
    """

    def __init__(
        self,
        lister: ListerWatcher,
        resource: Resource,
        *,
        clock: Clock,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = strip_managed_fields,
        compact: bool = True,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_period: float | None = None,
        idle_timeout: float = 90.0,
        page_size: int = 500,
        rng: random.Random | None = None,
    ) -> None:
        if resync_period is not None and resync_period <= 0:
            msg = "resync_period must be positive (or None to disable resyncs)"
            raise ValueError(msg)
        self._resource = resource
        self._clock = clock
        self._store = Store(indexers=indexers)
        self._registrations: tuple[_Registration, ...] = ()
        self._synced = asyncio.Event()
        self._resync = resync_period
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._running = False
        self._label = str(resource)
        self._objects = metrics.INFORMER_OBJECTS.labels(self._label)
        self._handler_errors = metrics.INFORMER_HANDLER_ERRORS.labels(self._label)
        self._compactor = Compactor() if compact else None
        self._reflector = Reflector(
            lister,
            resource,
            self._Sink(self),
            clock=clock,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            transform=transform,
            idle_timeout=idle_timeout,
            page_size=page_size,
            rng=self._rng,
        )
        self._own = OwnWrites()
        reflector = self._reflector
        self._scope = Scope(reflector.namespace, reflector.label_selector, reflector.field_selector)
        self._log = log.bind(informer=self.describe())

    # -- identity and state

    @property
    def resource(self) -> Resource:
        """The resource this informer caches."""
        return self._resource

    @property
    def namespace(self) -> str | None:
        """The one namespace cached, or ``None`` for all (and for cluster-scoped resources)."""
        return self._reflector.namespace

    @property
    def label_selector(self) -> str | None:
        """The server-side label selector, if any."""
        return self._reflector.label_selector

    @property
    def field_selector(self) -> str | None:
        """The server-side field selector, if any."""
        return self._reflector.field_selector

    @property
    def store(self) -> StoreReader:
        """The cached objects (read-only, shared: deep-copy before changing one)."""
        return self._store

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the cache is current at (``""`` before the first list)."""
        return self._reflector.last_sync_resource_version

    @property
    def backing_off(self) -> bool:
        """True while its reflector waits out a backoff on the clock.

        After a failed list, or a watch that ended at once, the cache cannot change before the
        clock moves.
        """
        return self._reflector.backing_off

    def describe(self) -> str:
        """Names this informer in messages (resource, namespace, selectors)."""
        return self._reflector.describe()

    def has_synced(self) -> bool:
        """True once the first list has been stored and delivered."""
        return self._synced.is_set()

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait until synced.

        Raises:
            CacheSyncError: not synced within ``timeout`` seconds of the clock; the message names
                the resource and the last list error (a 403 from RBAC, a 404 for a missing CRD).
        """
        if await wait_event(self._clock, self._synced, timeout):
            return
        reflector = self._reflector
        error = reflector.last_list_error or reflector.last_error
        if error is not None:
            why = f"last list error: {error}"
        elif not self._running:
            why = "the informer is not running"
        else:
            why = "the first list has not completed"
        msg = f"{self.describe()}: cache did not sync within {timeout:g}s; {why}"
        raise CacheSyncError(msg)

    # -- handlers and indexes

    def add_handler(self, handler: ResourceEventHandler) -> HandlerRegistration:
        """Register ``handler``; it receives the cached objects at once, then every change."""
        registration = _Registration(handler, self._synced)
        for obj in self._store.list():
            self._call_add(registration, obj, initial=True)
        self._registrations = (*self._registrations, registration)
        return registration

    def remove_handler(self, registration: HandlerRegistration) -> None:
        """Stop delivering to a handler added by :meth:`add_handler` (idempotent)."""
        self._registrations = tuple(r for r in self._registrations if r is not registration)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add store indexes (the objects already cached are indexed at once).

        Raises:
            ValueError: an index of that name exists already.
        """
        self._store.add_indexers(indexers)

    # -- running

    async def run(self) -> None:
        """List, watch and deliver until cancelled (the reflector and resync run as named tasks).

        Raises:
            RuntimeError: the informer is already running.
        """
        if self._running:
            msg = f"the informer of {self.describe()} is already running"
            raise RuntimeError(msg)
        self._running = True
        # The objects gauge counts what running informers hold: informers of one resource add
        # up, and the series goes once the last of them stops (no stale value to scrape).
        _RUNNING[self._label] = _RUNNING.get(self._label, 0) + 1
        self._objects = metrics.INFORMER_OBJECTS.labels(self._label)
        self._objects.inc(len(self._store))
        try:
            async with asyncio.TaskGroup() as group:
                name = f"informer:{self.describe()}"
                group.create_task(self._reflector.run(), name=f"{name}:reflector")
                if self._resync is not None:
                    group.create_task(self._resync_loop(self._resync), name=f"{name}:resync")
        finally:
            self._running = False
            self._objects.dec(len(self._store))
            _RUNNING[self._label] -= 1
            if not _RUNNING[self._label]:
                del _RUNNING[self._label]
                metrics.INFORMER_OBJECTS.remove(self._label)

    async def _resync_loop(self, period: float) -> None:
        while True:
            jitter = 1.0 + self._rng.uniform(-_RESYNC_JITTER, _RESYNC_JITTER)
            await self._clock.sleep(period * jitter)
            if self._synced.is_set():
                for obj in self._store.list():
                    self._notify_update(obj, obj)

    # -- delivery (called by the reflector through _Sink)

    class _Sink:
        """The reflector's view of the informer (keeps the delivery methods off its public API)."""

        __slots__ = ("_informer",)

        def __init__(self, informer: Informer) -> None:
            self._informer = informer

        def list_starting(self) -> bool:
            informer = self._informer
            return informer.has_synced() and informer._own.list_starting()

        def on_list(self, items: list[KubeObject], resource_version: str) -> None:
            self._informer._on_list(items, resource_version)

        def on_change(self, change: ChangeType, obj: KubeObject) -> None:
            self._informer._on_change(change, obj)

        def on_bookmark(self, resource_version: str) -> None:
            informer = self._informer
            informer._store.resource_version = resource_version
            if informer._own.expected:
                informer._expire(informer._clock.monotonic())

    def _on_list(self, items: list[KubeObject], resource_version: str) -> None:
        store = self._store
        before = len(store)
        synced = self._synced.is_set()
        content: Sequence[ObjectView] = items
        with paused_collection():  # a whole list compacted and indexed: no cycles to find
            if synced:
                content = [self._cached_or_compacted(obj) for obj in items]
                own = self._own
                if own.expected or own.flights:
                    by_key = {objects.key_of(obj): obj for obj in content}
                    own.on_list(by_key, store.get, self._clock.monotonic())
                    content = list(by_key.values())
            elif self._compactor is not None:
                # The first list: the store is empty, so there is no cached instance to look up.
                content = [self._compacted(obj, None) for obj in items]
            diff = store.replace(content, resource_version)
        self._objects.inc(len(store) - before)
        if not synced:
            for obj in diff.added:
                self._notify_add(obj, initial=True)
            self._synced.set()
            self._log.info("synced", objects=len(store), resource_version=resource_version)
            return
        for tombstone in diff.deleted:
            self._notify_delete(tombstone)
        for obj in diff.added:
            self._notify_add(obj, initial=False)
        for old, new in diff.updated:
            if objects.resource_version(old) != objects.resource_version(new):
                self._notify_update(old, new)
        self._log.info(
            "relisted",
            objects=len(store),
            added=len(diff.added),
            deleted=len(diff.deleted),
            resource_version=resource_version,
        )

    def _cached_or_compacted(self, obj: KubeObject) -> ObjectView:
        """What a listed object is cached as: the cached instance if unchanged, else compacted.

        Unchanged objects (same uid, same resourceVersion) keep the instance already cached (and
        already handed to handlers), so a relist costs no memory churn for them and no event.
        """
        cached = self._store.get(objects.key_of(obj))
        if (
            cached is not None
            and objects.resource_version(cached) == objects.resource_version(obj)
            and objects.uid(cached) == objects.uid(obj)
        ):
            return cached
        return self._compacted(obj, cached)

    def _compacted(self, obj: KubeObject, cached: ObjectView | None) -> ObjectView:
        """``obj`` with the strings and subtrees it shares with other cached objects shared."""
        compactor = self._compactor
        if compactor is None:
            return obj
        try:
            return compactor(obj, cached)
        except Exception:  # noqa: BLE001 - an object that cannot be compacted is cached as is
            self._log.exception("compaction failed; caching the object as received")
            return obj

    def _on_change(self, change: ChangeType, obj: KubeObject) -> None:
        store = self._store
        rv = objects.resource_version(obj)
        if rv:
            store.resource_version = rv
        key = objects.key_of(obj)
        own = self._own
        if (own.expected or own.flights) and own.on_event(change, key, obj, rv):
            return  # this process's own write, already applied (or a change it superseded)
        if change == "DELETED":
            if store.delete(obj) is not None:
                self._objects.dec()
            self._notify_delete(obj)
            return
        old = store.get(key)
        if (
            old is not None
            and rv
            and objects.resource_version(old) == rv
            and objects.uid(old) == objects.uid(obj)
        ):
            return  # the same version again (a watch replaying what a list returned)
        self._put(key, obj, old)

    def _put(self, key: str, obj: KubeObject, old: ObjectView | None) -> None:
        """Store a new version of ``key`` (``old``: what the store holds) and tell the handlers."""
        store = self._store
        if old is None:
            new = self._compacted(obj, None)
            store.put(key, new)
            self._objects.inc()
            self._notify_add(new, initial=False)
            return
        new = self._compacted(obj, old)
        store.put(key, new)
        if objects.uid(old) != objects.uid(obj):
            self._notify_delete(Tombstone(key, old))
            self._notify_add(new, initial=False)
        elif objects.resource_version(old) != objects.resource_version(new):
            self._notify_update(old, new)

    def _hide(self, key: str, old: ObjectView) -> None:
        """Take ``key`` out of the store and tell the handlers it is gone."""
        if self._store.delete(key) is not None:
            self._objects.dec()
        self._notify_delete(old)

    # -- this process's own writes (called by the cache; see etctl.runtime._ownwrites)

    def write_started(self, key: str) -> WriteToken | None:
        """A write of the object at ``key`` is about to be sent; follow it once synced."""
        if not self._synced.is_set():
            return None
        return self._own.begin(key, self._store.get(key))

    def write_failed(self, token: WriteToken) -> None:
        """The write of ``token`` failed: nothing changes."""
        self._own.end(token)

    def write_succeeded(self, token: WriteToken, answer: Answer | None, *, delete: bool) -> None:
        """The write of ``token`` succeeded: show its answer now, and await its watch event."""
        try:
            self._own_write(token, answer, delete=delete)
        finally:
            self._own.end(token)

    def _own_write(self, token: WriteToken, answer: Answer | None, *, delete: bool) -> None:
        own = self._own
        now = self._clock.monotonic()
        self._expire(now)
        result = answer() if answer is not None else None
        key = token.key
        stored = self._store.get(key)
        if delete and answer_is_gone(result):
            uid = deleted_uid(result) or (objects.uid(stored) if stored is not None else "")
            if not uid or not own.may_hide(token, uid):
                return
            if stored is not None:
                self._hide(key, stored)
            own.expect(token, present=False, rv="", uid=uid, now=now)
            return
        if result is None:
            return
        result = self._reflector.transformed(result)
        rv = objects.resource_version(result)
        if objects.key_of(result) != key or not own.may_apply(token, rv, stored):
            return
        if not self._scope.holds(result):
            if stored is not None:  # the write took it out of this informer's scope
                self._hide(key, stored)
                own.expect(token, present=False, rv=rv, uid=objects.uid(result), now=now)
            return
        self._put(key, result, stored)
        own.expect(token, present=True, rv=rv, uid="", now=now)

    def _expire(self, now: float) -> None:
        """Stop awaiting echoes that are overdue; apply the newest event dropped meanwhile."""
        for key, expected in self._own.expired(now):
            self._log.info(
                "the watch event of this process's write never came; applying the newest event",
                key=key,
                resource_version=expected.rv,
            )
            if expected.dropped is not None:
                kind, obj = expected.dropped
                self._on_change(kind, cast(KubeObject, obj))

    # -- calling handlers

    def _failed(self, registration: _Registration, what: str, obj: object) -> None:
        self._handler_errors.inc()
        target = obj.obj if isinstance(obj, Tombstone) else obj
        key = objects.key_of(target) if isinstance(target, Mapping) else ""
        self._log.exception(
            "event handler failed", handler=repr(registration.handler), change=what, key=key
        )

    def _call_add(self, registration: _Registration, obj: ObjectView, *, initial: bool) -> None:
        try:
            registration.handler.on_add(obj, is_in_initial_list=initial)
        except Exception:  # noqa: BLE001 - one handler's bug must not starve the others
            self._failed(registration, "add", obj)

    def _notify_add(self, obj: ObjectView, *, initial: bool) -> None:
        for registration in self._registrations:
            self._call_add(registration, obj, initial=initial)

    def _notify_update(self, old: ObjectView, new: ObjectView) -> None:
        for registration in self._registrations:
            try:
                registration.handler.on_update(old, new)
            except Exception:  # noqa: BLE001 - one handler's bug must not starve the others
                self._failed(registration, "update", new)

    def _notify_delete(self, obj: ObjectView | Tombstone) -> None:
        for registration in self._registrations:
            try:
                registration.handler.on_delete(obj)
            except Exception:  # noqa: BLE001 - one handler's bug must not starve the others
                self._failed(registration, "delete", obj)
