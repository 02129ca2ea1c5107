"""A live feed of one job of any kind: every state it goes through, as ``kubectl get -w`` sees them.

A :class:`Feed` lists and then watches, through an ordinary client, the resources a person follows
when watching a job: the job itself (by name), its pods (by the job-name label every child
carries), and, for an elastic kind, the ScaleOut and ScaleIn objects in its namespace; optionally
also its ConfigMaps (by the same label, for the files its kind publishes) and the namespace's
Events. Every event it receives updates its copy of those objects and queues a new
:class:`~etctl.cli._jobview.Snapshot`, so a reader sees each state in turn, even the ones that last
a few milliseconds (a scaler passing through ``Draining`` and ``Deleting``), which polling would
miss.

Invariants: every watch is a named task of the feed's own ``asyncio.TaskGroup``; a watch that ends
or fails (an expired resourceVersion, an idle timeout, a dropped connection) is started again from
a fresh list, whose differences are queued like any other change, so the copy converges on the
server's state; the feed only reads.

Failures are retried with a growing delay (0.2 s doubling to 5 s), and never silently for good:
a list that failed (the client already retried it) or a watch that failed three times in a row
makes its error a *problem* (:meth:`Feed.problems`; each new one is handed out once by
:meth:`Feed.new_problems`, and wakes a reader) until a list of that resource succeeds again (a
watch ending now and then is the normal course of things, a failing list is not). A list the
server refuses with a server error or a bad request while paged (``limit=500``, as kubectl
lists) is asked again unpaged, and that resource is listed unpaged from then on: some storage
backends (kine on SQLite behind a 1.24 API server) refuse a field selector with a limit
("invalid combination of rangeEnd and limit") and answer the same list without one.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from etctl.cli._jobkinds import JobKind
from etctl.cli._jobview import Snapshot, owned_by, snapshot
from etctl.common import JOB_NAME, SCALEINS, SCALEOUTS
from etctl.errors import BadRequest, EtctlError, ServerError
from etctl.log import get_logger
from etctl.runtime import (
    CONFIGMAPS,
    EVENTS,
    PODS,
    Client,
    Clock,
    KubeObject,
    ObjectList,
    RealClock,
    Resource,
    objects,
    wait_event,
)

__all__ = ["Feed"]

log = get_logger(__name__)

_RETRY_DELAY = 0.2  # seconds before a failed list or watch is first tried again
_RETRY_CAP = 5.0  # the longest wait between tries
_PERSISTENT = 3  # failures in a row that make an error a problem to report
_PAGE = 500  # items per page of a first list, as kubectl lists
_WATCH_SECONDS = 300  # the server ends each watch after this long; it is then started again


@dataclass(frozen=True, slots=True)
class _Selectors:
    labels: str | None = None
    fields: str | None = None


class Feed:
    """Follows one job's objects through list and watch, queueing every state seen.

    Args:
        client: the client to read with.
        kind: the job's kind.
        namespace: the job's namespace.
        job: the job's name.
        files: also follow the job's ConfigMaps, for the files its kind publishes.
        events: also follow the namespace's Events (those about the job's objects are kept).
        clock: the clock retries wait on.
    """

    def __init__(
        self,
        client: Client,
        kind: JobKind,
        *,
        namespace: str,
        job: str,
        files: bool = False,
        events: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.kind = kind
        self.namespace = namespace
        self.job = job
        self._clock: Clock = clock or RealClock()
        self._resource = kind.resource
        by_label = _Selectors(labels=f"{JOB_NAME}={job}")
        self._followed: dict[Resource, _Selectors] = {
            self._resource: _Selectors(fields=f"metadata.name={job}"),
            PODS: by_label,
        }
        if kind.elastic:
            self._followed.update({SCALEOUTS: _Selectors(), SCALEINS: _Selectors()})
        if files and kind.capabilities.files is not None:
            self._followed[CONFIGMAPS] = by_label
        if events:
            self._followed[EVENTS] = _Selectors()
        self._objects: dict[Resource, dict[str, KubeObject]] = {res: {} for res in self._followed}
        self._listed: set[Resource] = set()
        self._synced = asyncio.Event()
        self._states: deque[Snapshot] = deque()
        self._arrived = asyncio.Event()  # set while states or new problems are queued
        self._failures: dict[Resource, tuple[int, str]] = {}  # failures in a row, last error
        self._reported: set[tuple[Resource, str]] = set()
        self._unpaged: set[Resource] = set()  # listed without a limit: refused with one
        self._listed_now: set[Resource] = set()  # their current try got past its list

    @property
    def subject(self) -> str:
        """The job as kubectl names it (``tfjob/mnist``)."""
        return self.kind.subject(self.job)

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
        """Wait until a state or a new problem is queued, or ``timeout`` seconds pass."""
        return await wait_event(self._clock, self._arrived, timeout)

    def problems(self) -> list[str]:
        """Errors that keep a resource from being followed now (see the module docstring)."""
        return [
            f"{res.plural}: {message}"
            for res, (count, message) in self._failures.items()
            if count >= _PERSISTENT
        ]

    def new_problems(self) -> list[str]:
        """:meth:`problems` not handed out before (each problem once, until it changes)."""
        if not self._states:
            self._arrived.clear()  # what woke the reader is handed out now
        fresh = []
        for res, (count, message) in self._failures.items():
            if count >= _PERSISTENT and (res, message) not in self._reported:
                self._reported.add((res, message))
                fresh.append(f"{res.plural}: {message}")
        return fresh

    async def run(self) -> None:
        """Follow every resource until cancelled."""
        async with asyncio.TaskGroup() as group:
            for res, selectors in self._followed.items():
                group.create_task(self._follow(res, selectors), name=f"feed:{res.plural}")

    # -- following

    async def _follow(self, res: Resource, selectors: _Selectors) -> None:
        while True:
            try:
                await self._list_and_watch(res, selectors)
            except EtctlError as exc:
                count = self._failures.get(res, (0, ""))[0] + 1
                if res not in self._listed_now:
                    count = max(count, _PERSISTENT)  # the list itself failed
                self._failures[res] = (count, str(exc))
                log.debug("watch ended; listing again", resource=str(res), error=str(exc))
                if count >= _PERSISTENT and (res, str(exc)) not in self._reported:
                    self._arrived.set()  # a reader hears of it now
                await self._clock.sleep(min(_RETRY_DELAY * 2 ** (count - 1), _RETRY_CAP))

    async def _list(self, res: Resource, selectors: _Selectors) -> ObjectList:
        """List ``res`` paged, or unpaged where a paged list was refused (see the module)."""
        paged = res not in self._unpaged
        try:
            return await self.client.list(
                res,
                namespace=self.namespace,
                label_selector=selectors.labels,
                field_selector=selectors.fields,
                limit=_PAGE if paged else None,
            )
        except (ServerError, BadRequest) as exc:
            if not paged:
                raise
            log.info("a paged list was refused; listing unpaged", resource=str(res), error=str(exc))
            self._unpaged.add(res)
        return await self.client.list(
            res,
            namespace=self.namespace,
            label_selector=selectors.labels,
            field_selector=selectors.fields,
            limit=None,
        )

    async def _list_and_watch(self, res: Resource, selectors: _Selectors) -> None:
        self._listed_now.discard(res)
        listed = await self._list(res, selectors)
        self._listed_now.add(res)
        if self._failures.pop(res, None) is not None:
            self._reported = {seen for seen in self._reported if seen[0] != res}
        self._objects[res] = {objects.name(obj): obj for obj in listed.items}
        self._listed.add(res)
        if len(self._listed) == len(self._followed):
            self._synced.set()
        self._publish()
        async with self.client.watch(
            res,
            namespace=self.namespace,
            label_selector=selectors.labels,
            field_selector=selectors.fields,
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
        def held(res: Resource) -> list[KubeObject]:
            return list(self._objects.get(res, {}).values())

        config_maps = None
        if CONFIGMAPS in self._followed:
            config_maps = {
                objects.name(obj): obj
                for obj in held(CONFIGMAPS)
                if owned_by(obj, self.kind.kind, self.job)
            }
        return snapshot(
            self.kind,
            self.job,
            self._objects[self._resource].get(self.job),
            held(PODS),
            [*held(SCALEOUTS), *held(SCALEINS)],
            config_maps=config_maps,
            events=held(EVENTS) if EVENTS in self._followed else None,
        )
