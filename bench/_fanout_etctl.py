"""The fanout operator on etctl's public runtime API (run by ``fanout.py`` in its own process).

A controller ``for_`` the parents (status-only changes filtered out by ``GenerationChanged``) that
``owns`` their ConfigMaps, reconciling from the cache with :data:`~_fanout_workload.WORKERS`
workers. A reconcile creates the children its cache does not show
(concurrently) and patches the status when the cached status is not yet the desired one. What it
wrote and its cache has not shown yet is remembered (client-go's expectations), so a reconcile
that runs before its own writes come back through the watch does not write them again.

    python bench/_fanout_etctl.py KUBECONFIG
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

from _fanout_workload import (
    CHILDREN,
    GROUP,
    KIND,
    NAMESPACE,
    PLURAL,
    VERSION,
    WORKERS,
    child,
    child_name,
)
from etctl.log import configure
from etctl.runtime import (
    CONFIGMAPS,
    AlreadyExists,
    CacheOptions,
    CacheReader,
    Client,
    GenerationChanged,
    Manager,
    ManagerOptions,
    Request,
    Resource,
    Result,
    objects,
)

FANOUTS = Resource(GROUP, VERSION, PLURAL, KIND)


class Fanout:
    """The reconciler: children and status of one parent."""

    def __init__(self, client: Client, cache: CacheReader) -> None:
        self._client = client
        self._cache = cache
        self._created: dict[str, set[str]] = {}  # children created, not yet in the cache
        self._written: dict[str, int] = {}  # the generation a status was written for

    async def _create(self, body: dict[str, Any]) -> None:
        with contextlib.suppress(AlreadyExists):
            await self._client.create(CONFIGMAPS, body)

    async def reconcile(self, request: Request) -> Result:
        key = str(request)
        owner = self._cache.get(FANOUTS, request.name, namespace=request.namespace)
        if owner is None:
            self._created.pop(key, None)
            self._written.pop(key, None)
            return Result()
        pending = self._created.setdefault(key, set())
        missing = []
        for index in range(CHILDREN):
            name = child_name(request.name, index)
            if self._cache.get(CONFIGMAPS, name, namespace=request.namespace) is not None:
                pending.discard(name)
            elif name not in pending:
                missing.append(child(dict(owner), index))
        if missing:
            async with asyncio.TaskGroup() as group:
                for body in missing:
                    group.create_task(self._create(body))
            pending.update(objects.name(body) for body in missing)
        generation = objects.generation(owner)
        status = owner.get("status") or {}
        if status.get("configMaps") == CHILDREN and status.get("observedGeneration") == generation:
            self._written.pop(key, None)
            return Result()
        if self._written.get(key) == generation:
            return Result()
        desired = {"status": {"configMaps": CHILDREN, "observedGeneration": generation}}
        await self._client.patch_status(FANOUTS, request.name, desired, namespace=request.namespace)
        self._written[key] = generation
        return Result()


async def main(kubeconfig: str) -> None:
    configure(fmt="json", level="warning")
    async with Client.connect(kubeconfig) as client:
        options = ManagerOptions(
            metrics_bind_address="0",
            health_probe_bind_address="0",
            cache=CacheOptions(namespaces=[NAMESPACE]),
        )
        manager = Manager(client, options=options)
        # Status writes (its own among them) do not change the generation: no reconcile for them,
        # as controller-runtime operators filter with GenerationChangedPredicate.
        manager.controller("fanout", Fanout(client, manager.cache)).for_(
            FANOUTS, GenerationChanged()
        ).owns(CONFIGMAPS).with_options(max_concurrent_reconciles=WORKERS).build()

        async def ready() -> None:  # runnables start once the caches have synced
            print("ready", flush=True)

        manager.add_runnable("ready", ready, needs_leader_election=False)
        await manager.run(handle_signals=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
