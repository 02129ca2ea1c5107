"""Waiting until an operator under test is idle, so that moving a FakeClock is deterministic.

A test that drives an operator on a :class:`~etctl.runtime.FakeClock` must not advance the
clock while the operator is still working on the last change: a reconcile in flight would set its
timer (a ``requeue_after``, a deadline) only after the advance, so the timer fires late or never,
depending on how the event loop happened to interleave. :func:`wait_idle` waits, in bounded real
time, until nothing is left that could happen without the clock moving:

* **the operators**: every manager runs with its cache synced; every controller it runs now (the
  leader-only ones only while it leads) has started its workers, and its workqueue holds nothing
  queued, nothing processing and no delayed item already due;
* **their caches**: for every resource a controller watches, the cache holds exactly the objects
  the API server holds within the cache's informers of it (their namespaces, label and field
  selectors), at the same resourceVersion, so no watch event is still on its way to a handler; a
  cache whose reflector waits out a backoff (after a failed list, or a watch that ended at once)
  is a timer, like a delayed queue item;
* **the server**: no watch stream holds events it has not sent, the built-in controllers have no
  work queued, and the simulated kubelet has no pod to sync, no scheduling pass to make and no
  timer due.

Everything is read in one synchronous pass (the server, the operators and the test share one
event loop), and the answer must hold on two passes in a row, a poll apart, so that bytes already
in a socket are read in between.

On a real cluster (a :class:`~etctl.testing.RealCluster`) only the operators and their caches are
checked, each cache against a list of the cluster: what the cluster's watch streams hold is not
visible from outside, and the list is the cluster's word on what exists.

Limits: the embedded server must run on the test's own event loop (an :class:`ApiServer`, not
the shared background server); the work of plain runnables (``Manager.add_runnable``) and of event
recorders is not seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from etctl.errors import ApiError, ConfigError
from etctl.runtime import Resource, objects
from etctl.testing._apiserver.selection import parse_selection
from etctl.testing._realcluster import RealCluster

if TYPE_CHECKING:
    from etctl.runtime import Manager
    from etctl.testing._apiserver.server import ApiServer

__all__ = ["wait_idle"]

_POLL_SECONDS = 0.005
_REMOTE_POLL_SECONDS = 0.02  # each pass lists the cluster: poll it less often


async def wait_idle(
    server: ApiServer | RealCluster, *managers: Manager, timeout: float = 10.0
) -> None:
    """Wait until the server and every manager are idle (see the module docstring).

    Call it before each ``await clock.advance(...)`` under a running operator, and before
    asserting on what the operator does with no further event.

    Args:
        server: the embedded API server the managers talk to, on this event loop, or the real
            cluster they talk to.
        managers: the running operators (none: only the server must be idle).
        timeout: real seconds to wait at most.

    Raises:
        TimeoutError: still busy after ``timeout`` seconds; the message says with what.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    calm = 0
    busy: list[str] = []
    poll = _REMOTE_POLL_SECONDS if isinstance(server, RealCluster) else _POLL_SECONDS
    while calm < 2:
        busy = [*_server_busy(server), *(b for m in managers for b in _manager_busy(server, m))]
        calm = 0 if busy else calm + 1
        if busy and loop.time() >= deadline:
            msg = f"not idle after {timeout:g} s: " + "; ".join(busy)
            raise TimeoutError(msg)
        if calm < 2:
            await asyncio.sleep(poll)


def _server_busy(server: ApiServer | RealCluster) -> list[str]:
    if isinstance(server, RealCluster):
        return []  # a real cluster's watch streams and controllers are not visible
    busy = []
    unsent = server.store.unsent()
    if unsent:
        busy.append(f"the server has {unsent} watch event(s) to send")
    busy.extend(
        f"the server's {type(controller).__name__} has work queued"
        for controller in server.controllers
        if controller.pending
    )
    kubelet = server.kubelet
    if kubelet is not None and not kubelet.idle:
        busy.append("the kubelet has pods to sync or a timer due")
    return busy


def _manager_busy(server: ApiServer | RealCluster, manager: Manager) -> list[str]:
    if not manager.running:
        return [f"{manager!r} is not running"]
    if not manager.cache.has_synced():
        return [f"the cache of {manager!r} has not synced"]
    busy = []
    watched: dict[Resource, None] = {}
    for controller in manager.controllers:
        if controller.needs_leader_election and not manager.is_leader:
            continue  # a standby runs no leader-only controller: nothing to wait for
        if not controller.working:
            busy.append(f"controller {controller.name} has not started its workers")
        elif not controller.queue.idle:
            queue = controller.queue
            busy.append(
                f"controller {controller.name} has {queue.depth} queued and "
                f"{queue.processing} in flight"
            )
        watched.update(dict.fromkeys(source.resource for source in controller.sources))
    for res in watched:
        busy.extend(_cache_behind(server, manager, res))
    return busy


def _cache_behind(server: ApiServer | RealCluster, manager: Manager, res: Resource) -> list[str]:
    try:
        stored: dict[tuple[str, str], objects.ObjectView] = {}
        for namespace, labels, fields in manager.cache.scopes(res):
            for obj in _stored(server, res, namespace, labels, fields):
                stored[(objects.namespace(obj), objects.name(obj))] = obj
        cached = manager.cache.list(res)
    except (ApiError, ConfigError) as exc:
        return [f"{res} cannot be compared: {exc}"]
    if _versions(stored.values()) != _versions(cached) and not manager.cache.backing_off(res):
        return [f"the cache of {res} is behind the server"]
    return []


def _stored(
    server: ApiServer | RealCluster,
    res: Resource,
    namespace: str | None,
    labels: str | None,
    fields: str | None,
) -> list[objects.ObjectView]:
    """What one informer of ``res`` should hold: the objects its scope selects."""
    if isinstance(server, RealCluster):
        scope = (namespace or "") if res.namespaced else ""
        listed = server.storage.list(
            res, namespace=scope, label_selector=labels, field_selector=fields
        )
        return list(listed.items)
    info, _ = server.storage.target(res)
    scope = (namespace or "") if info.namespaced else ""
    selection = parse_selection(info, namespace=scope, label_selector=labels, field_selector=fields)
    return [obj for _, obj in server.storage.store.items(info.key, scope) if selection.matches(obj)]


def _versions(found: Iterable[objects.ObjectView]) -> dict[tuple[str, str], str]:
    return {
        (objects.namespace(obj), objects.name(obj)): objects.resource_version(obj) for obj in found
    }
