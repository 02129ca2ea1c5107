"""The controller builder: controller-runtime's fluent way to wire a controller into a manager.

::

    mgr.controller("trainingjob", reconciler)
        .for_(TRAININGJOBS, GenerationChanged())
        .owns(PODS)
        .owns(SERVICES)
        .watches(SCALEINS, EnqueueRequestsFromMapFunc(scalein_to_job))
        .with_options(max_concurrent_reconciles=4, reconcile_timeout=60)
        .build()

What each call means:

* ``for_(res, *predicates)``: reconcile objects of ``res``; each event enqueues the object itself.
  At most once. New objects of ``res`` are queued at low priority (see
  :mod:`~etctl.runtime._handler`).
* ``owns(res, *predicates)``: watch ``res`` and enqueue the object's *controller* owner when that
  owner is of the ``for_`` kind (group and kind from the ``ownerReferences`` entry marked
  ``controller: true``), so a change to a pod wakes its job. Needs ``for_``.
* ``watches(res, handler, *predicates)``: watch ``res`` with any
  :class:`~etctl.runtime.EventHandler`.

Every watch takes ``label_selector`` and ``field_selector`` keywords: its informer lists and watches
only matching objects (on top of the cache's ``ByObject`` scope of ``res``, if any), so a controller
of the children it labels never caches the rest of the cluster. Watches of one resource with the
same selectors share one informer; reads of the cache see every informer of a resource.
* ``with_event_filter(*predicates)``: predicates applied to every watch of the controller.
* ``with_options(...)``: workers, reconcile timeout, rate limiter, panic recovery, leadership.

:meth:`ControllerBuilder.build` gets every source from the manager's cache (one shared informer per
resource), builds the :class:`~etctl.runtime._controller.Controller` with the manager's clock, cache
sync timeout and shutdown grace, registers it with the manager (names are unique) and returns it.
A builder builds once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from etctl.errors import ConfigError
from etctl.runtime._controller import Controller
from etctl.runtime._handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EventHandler,
    PriorityFunc,
)
from etctl.runtime._predicate import Predicate
from etctl.runtime._ratelimit import RateLimiter
from etctl.runtime._reconcile import ReconcileFunc, Reconciler, Request, Result
from etctl.runtime._resources import Resource

if TYPE_CHECKING:
    from etctl.runtime._manager import Manager

__all__ = ["ControllerBuilder", "ReconcilerLike"]

ReconcilerLike = Reconciler | Callable[[Request], Awaitable[Result]]
"""A :class:`~etctl.runtime.Reconciler`, or a plain ``async def f(request) -> Result``."""


@dataclass(frozen=True, slots=True)
class _Watch:
    resource: Resource
    handler: EventHandler | None  # None: map to the for_ owner, resolved at build time
    predicates: tuple[Predicate, ...]
    label_selector: str | None = None
    field_selector: str | None = None
    batch: float = 0.0
    batch_creations: bool = True


class ControllerBuilder:
    """Collects a controller's watches and options, then builds it into its manager.

    Made by :meth:`etctl.runtime.Manager.controller`; every method but :meth:`build` returns the
    builder.

    Args:
        manager: the manager that will run the controller and whose cache feeds it.
        name: the controller's name (unique in the manager; labels metrics and logs).
        reconciler: what runs for each key.
    """

    def __init__(self, manager: Manager, name: str, reconciler: ReconcilerLike) -> None:
        if not name:
            msg = "a controller needs a name"
            raise ConfigError(msg)
        self._manager = manager
        self._name = name
        self._reconciler: Reconciler = (
            reconciler if isinstance(reconciler, Reconciler) else ReconcileFunc(reconciler)
        )
        self._for: _Watch | None = None
        self._watches: list[_Watch] = []
        self._filters: tuple[Predicate, ...] = ()
        self._max_concurrent = 1
        self._timeout: float | None = None
        self._rate_limiter: RateLimiter[Request] | None = None
        self._recover_panic = True
        self._needs_leader_election = True
        self._priority: PriorityFunc | None = None
        self._built = False

    def for_(
        self,
        res: Resource,
        *predicates: Predicate,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Self:
        """Reconcile objects of ``res`` (those the selectors match): their own events enqueue them.

        Raises:
            ConfigError: called twice.
        """
        if self._for is not None:
            msg = f"controller {self._name}: for_() names the reconciled kind and is called once"
            raise ConfigError(msg)
        self._for = _Watch(
            res, EnqueueRequestForObject(), predicates, label_selector, field_selector
        )
        return self

    def owns(
        self,
        res: Resource,
        *predicates: Predicate,
        label_selector: str | None = None,
        field_selector: str | None = None,
        batch: float = 0.0,
        batch_creations: bool = True,
    ) -> Self:
        """Watch ``res`` (what the selectors match) and enqueue each object's ``for_`` owner.

        ``batch``, ``batch_creations``: as for :meth:`watches`.
        """
        self._check_batch(batch)
        self._watches.append(
            _Watch(res, None, predicates, label_selector, field_selector, batch, batch_creations)
        )
        return self

    def watches(
        self,
        res: Resource,
        handler: EventHandler,
        *predicates: Predicate,
        label_selector: str | None = None,
        field_selector: str | None = None,
        batch: float = 0.0,
        batch_creations: bool = True,
    ) -> Self:
        """Watch ``res`` (what the selectors match) and enqueue what ``handler`` maps events to.

        ``batch`` (seconds, 0 by default): the requests of each event are queued that much
        later, and the events meanwhile join them (the Kubernetes Job controller's pod update
        batch period): a burst of changes to one key's objects, a job's pods starting together,
        is one reconcile and one status write instead of one per change. Initial lists and
        resyncs are never held back; with ``batch_creations=False`` neither are creations (a
        watch of the very objects the keys name, whose new ones must be taken up at once).
        """
        self._check_batch(batch)
        self._watches.append(
            _Watch(res, handler, predicates, label_selector, field_selector, batch, batch_creations)
        )
        return self

    def _check_batch(self, batch: float) -> None:
        if not batch >= 0:  # NaN too
            msg = f"controller {self._name}: a watch's batch must be 0 or more seconds, got {batch}"
            raise ConfigError(msg)

    def with_event_filter(self, *predicates: Predicate) -> Self:
        """Apply ``predicates`` to the events of every watch, before their own."""
        self._filters = (*self._filters, *predicates)
        return self

    def with_options(
        self,
        *,
        max_concurrent_reconciles: int | None = None,
        reconcile_timeout: float | None = None,
        rate_limiter: RateLimiter[Request] | None = None,
        recover_panic: bool | None = None,
        needs_leader_election: bool | None = None,
        priority: PriorityFunc | None = None,
    ) -> Self:
        """Set controller options; each one left unset keeps its default.

        Args:
            max_concurrent_reconciles: workers (distinct keys reconciled at once); 1 by default.
            reconcile_timeout: cancel a reconcile after this many seconds (none by default).
            rate_limiter: the backoff of failing keys (controller-runtime's default otherwise).
            recover_panic: log, count and retry unexpected exceptions (True by default).
            needs_leader_election: run only while the manager leads (True by default).
            priority: the priority of each key an event enqueues (higher first; 0 for every key by
                default); initial lists, resyncs and new objects of the ``for_`` kind are queued
                at low priority whatever it says.
        """
        if max_concurrent_reconciles is not None:
            self._max_concurrent = max_concurrent_reconciles
        if reconcile_timeout is not None:
            self._timeout = reconcile_timeout
        if rate_limiter is not None:
            self._rate_limiter = rate_limiter
        if recover_panic is not None:
            self._recover_panic = recover_panic
        if needs_leader_election is not None:
            self._needs_leader_election = needs_leader_election
        if priority is not None:
            self._priority = priority
        return self

    def build(self) -> Controller:
        """Build the controller, wire its watches to the manager's cache and register it.

        Raises:
            ConfigError: nothing to watch, ``owns`` without ``for_``, or built already.
            SelectorError: a watch's selector does not parse.
            ValueError: the manager already has a controller or runnable of that name, or an
                option is out of range.
        """
        if self._built:
            msg = f"controller {self._name} is built already"
            raise ConfigError(msg)
        if self._for is None and not self._watches:
            msg = f"controller {self._name}: call for_() or watches() before build()"
            raise ConfigError(msg)
        owner = self._for.resource if self._for is not None else None
        if owner is None and any(w.handler is None for w in self._watches):
            msg = f"controller {self._name}: owns() maps to the for_() kind; call for_() too"
            raise ConfigError(msg)
        manager = self._manager
        controller = Controller(
            self._name,
            self._reconciler,
            clock=manager.clock,
            max_concurrent_reconciles=self._max_concurrent,
            rate_limiter=self._rate_limiter,
            reconcile_timeout=self._timeout,
            cache_sync_timeout=manager.options.cache_sync_timeout,
            recover_panic=self._recover_panic,
            needs_leader_election=self._needs_leader_election,
            shutdown_grace=manager.options.graceful_shutdown_timeout,
            priority=self._priority,
        )
        manager.add_controller(controller)
        for watch in ([self._for] if self._for is not None else []) + self._watches:
            handler = watch.handler
            if handler is None:
                assert owner is not None
                handler = EnqueueRequestForOwner(
                    owner.group, owner.kind, only_controller=True, owner_namespaced=owner.namespaced
                )
            source = manager.cache.informer(
                watch.resource,
                label_selector=watch.label_selector,
                field_selector=watch.field_selector,
            )
            controller.watch(
                source,
                handler,
                *self._filters,
                *watch.predicates,
                primary=watch is self._for,
                batch=watch.batch,
                batch_creations=watch.batch_creations,
            )
        self._built = True
        return controller

    def __repr__(self) -> str:
        kind = self._for.resource if self._for is not None else None
        return f"ControllerBuilder({self._name!r}, for_={kind}, watches={len(self._watches)})"
