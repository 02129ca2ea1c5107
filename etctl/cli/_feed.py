"""A live feed of one TrainingJob: every state it goes through, as ``kubectl get -w`` sees them.

A :class:`Feed` lists and then watches, through an ordinary client, the four resources a person
follows when watching an elastic job: the TrainingJob, its pods (by the job-name label every child
carries), and the ScaleOut and ScaleIn objects in its namespace. Every event it receives updates
its copy of those objects and queues a new :class:`~etctl.cli._jobview.Snapshot`, so a reader
sees each state in turn, even the ones that last a few milliseconds (a scaler passing through
``Draining`` and ``Deleting``), which polling would miss.

Invariants: every watch is a named task of the feed's own ``asyncio.TaskGroup``; a watch that ends
or fails (an expired resourceVersion, an idle timeout, a dropped connection) is started again from
a fresh list, whose differences are queued like any other change, so the copy converges on the
server's state; the feed only reads.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping

from etctl.cli._jobview import Snapshot, selects, snapshot
from etctl.common import JOB_NAME, SCALEINS, SCALEOUTS
from etctl.errors import EtctlError
from etctl.jobs.trainingjob import TRAININGJOBS
from etctl.log import get_logger
from etctl.runtime import PODS, Client, Clock, KubeObject, RealClock, Resource, objects, wait_event

__all__ = ["Feed"]

log = get_logger(__name__)

_RETRY_DELAY = 0.2  # seconds before a failed list or watch is tried again
_WATCH_SECONDS = 300  # the server ends each watch after this long; it is then started again


class Feed:
    """Follows one job's objects through list and watch, queueing every state seen.

    Args:
        client: the client to read with.
        namespace: the job's namespace.
        job: the job's name.
        clock: the clock retries wait on.
    """

    def __init__(
        self, client: Client, *, namespace: str, job: str, clock: Clock | None = None
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.job = job
        self._clock: Clock = clock or RealClock()
        self._followed: dict[Resource, str | None] = {
            TRAININGJOBS: None,
            PODS: f"{JOB_NAME}={job}",
            SCALEOUTS: None,
            SCALEINS: None,
        }
        self._objects: dict[Resource, dict[str, KubeObject]] = {res: {} for res in self._followed}
        self._listed: set[Resource] = set()
        self._synced = asyncio.Event()
        self._states: deque[Snapshot] = deque()
        self._arrived = asyncio.Event()  # set while states are queued

    @property
    def synced(self) -> bool:
        """True once every resource was listed once."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Return once every resource was listed once (bound it with a timeout)."""
        await self._synced.wait()

    def latest(self) -> Snapshot:
        """The state as of the last event received."""
        return self._build()

    def pending(self) -> list[Snapshot]:
        """Every state queued since the last call, oldest first (without waiting)."""
        states = list(self._states)
        self._states.clear()
        self._arrived.clear()
        return states

    async def wait(self, timeout: float) -> bool:
        """Wait until a state is queued or ``timeout`` seconds pass; True if one is."""
        return await wait_event(self._clock, self._arrived, timeout)

    async def run(self) -> None:
        """Follow every resource until cancelled."""
        async with asyncio.TaskGroup() as group:
            for res, selector in self._followed.items():
                group.create_task(self._follow(res, selector), name=f"feed:{res.plural}")

    # -- following

    async def _follow(self, res: Resource, selector: str | None) -> None:
        while True:
            try:
                await self._list_and_watch(res, selector)
            except EtctlError as exc:
                log.debug("watch ended; listing again", resource=str(res), error=str(exc))
                await self._clock.sleep(_RETRY_DELAY)

    async def _list_and_watch(self, res: Resource, selector: str | None) -> None:
        listed = await self.client.list(res, namespace=self.namespace, label_selector=selector)
        self._objects[res] = {objects.name(obj): obj for obj in listed.items}
        self._listed.add(res)
        if len(self._listed) == len(self._followed):
            self._synced.set()
        self._publish()
        async with self.client.watch(
            res,
            namespace=self.namespace,
            label_selector=selector,
            resource_version=listed.resource_version,
            timeout_seconds=_WATCH_SECONDS,
        ) as stream:
            async for event in stream:
                if event.type == "BOOKMARK":
                    continue
                name = objects.name(event.object)
                if event.type == "DELETED":
                    self._objects[res].pop(name, None)
                else:
                    self._objects[res][name] = event.object
                self._publish()

    def _publish(self) -> None:
        if self._synced.is_set():
            self._states.append(self._build())
            self._arrived.set()

    def _build(self) -> Snapshot:
        scalers: list[Mapping[str, object]] = [
            obj
            for res in (SCALEOUTS, SCALEINS)
            for obj in self._objects[res].values()
            if selects(obj, self.job)
        ]
        return snapshot(
            self._objects[TRAININGJOBS].get(self.job),
            self._objects[PODS].values(),
            scalers,
        )
