"""The fanout floor: the same objects written directly, with no operator (run by ``fanout.py``).

It watches the parents with etctl's client (no informer, no cache, no queue: a plain watch) and,
with :data:`~_fanout_workload.WORKERS` workers, writes each new parent's ConfigMaps (concurrently)
and then its status patch: exactly the 5 writes per parent the operators must make, as soon as
the parent's event arrives. An operator cannot converge faster than this: it waits for the same
watch events and makes the same writes; what it adds is its own work.

    python bench/_fanout_direct.py KUBECONFIG
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

from _fanout_workload import (
    CHILDREN,
    GROUP,
    KIND,
    NAMESPACE,
    PLURAL,
    VERSION,
    WORKERS,
    child,
)
from etctl.errors import AlreadyExists
from etctl.log import configure
from etctl.runtime import CONFIGMAPS, Client, KubeObject, Resource, objects

FANOUTS = Resource(GROUP, VERSION, PLURAL, KIND)


async def write(client: Client, parent: KubeObject) -> None:
    """The 5 writes of one parent."""
    async with asyncio.TaskGroup() as group:
        for index in range(CHILDREN):
            group.create_task(_create(client, child(parent, index)))
    status = {"status": {"configMaps": CHILDREN, "observedGeneration": objects.generation(parent)}}
    await client.patch_status(FANOUTS, objects.name(parent), status, namespace=NAMESPACE)


async def _create(client: Client, body: KubeObject) -> None:
    with contextlib.suppress(AlreadyExists):
        await client.create(CONFIGMAPS, body)


async def main(kubeconfig: str) -> None:
    configure(fmt="json", level="warning")
    queue: asyncio.Queue[KubeObject] = asyncio.Queue()

    async def worker() -> None:
        while True:
            parent = await queue.get()
            await write(client, parent)

    async with Client.connect(kubeconfig) as client, asyncio.TaskGroup() as group:
        for index in range(WORKERS):
            group.create_task(worker(), name=f"direct:worker-{index}")
        listed = await client.list(FANOUTS, namespace=NAMESPACE)
        print("ready", flush=True)
        version = listed.resource_version
        while True:
            async with client.watch(
                FANOUTS, namespace=NAMESPACE, resource_version=version
            ) as stream:
                async for event in stream:
                    version = objects.resource_version(event.object) or version
                    if event.type == "ADDED":
                        queue.put_nowait(event.object)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(sys.argv[1]))
