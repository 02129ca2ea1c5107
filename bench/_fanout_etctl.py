"""The fanout operator on etctl's public runtime API (run by ``fanout.py`` in its own process).

A controller ``for_`` the parents (status-only changes filtered out by ``GenerationChanged``) that
``owns`` their ConfigMaps, reconciling from the cache with :data:`~_fanout_workload.WORKERS`
workers. A reconcile creates the children its cache does not show (concurrently) and patches the
status when the cached status is not yet the desired one: the plain logic of the kopf operator,
with nothing remembered between reconciles. That a reconcile which runs before the watch brings
back its own writes does not write them again is the runtime's doing (its cache reads its own
writes), not this file's.

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
from etctl.errors import AlreadyExists
from etctl.log import configure
from etctl.runtime import (
    CONFIGMAPS,
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
    """The reconciler: children and status of one parent, from the cache, nothing remembered."""

    def __init__(self, client: Client, cache: CacheReader) -> None:
        self._client = client
        self._cache = cache

    async def _create(self, body: dict[str, Any]) -> None:
        with contextlib.suppress(AlreadyExists):
            await self._client.create(CONFIGMAPS, body)

    async def reconcile(self, request: Request) -> Result:
        owner = self._cache.get(FANOUTS, request.name, namespace=request.namespace)
        if owner is None:
            return Result()
        missing = [
            child(dict(owner), index)
            for index in range(CHILDREN)
            if self._cache.get(
                CONFIGMAPS, child_name(request.name, index), namespace=request.namespace
            )
            is None
        ]
        if missing:
            async with asyncio.TaskGroup() as group:
                for body in missing:
                    group.create_task(self._create(body))
        generation = objects.generation(owner)
        status = owner.get("status") or {}
        if status.get("configMaps") == CHILDREN and status.get("observedGeneration") == generation:
            return Result()
        desired = {"status": {"configMaps": CHILDREN, "observedGeneration": generation}}
        await self._client.patch_status(FANOUTS, request.name, desired, namespace=request.namespace)
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
