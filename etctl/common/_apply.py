"""The one place a reconcile's writes are made: a :class:`~etctl.common._plan.Decision`, applied.

:class:`Applier` walks the decision's stages in order, each in its manner, through the
:class:`~etctl.common._ledger.WriteLedger` (so every write is followed until the cache shows it):

* ``sequential``: one write after another; a failure is recorded and the next write goes on (a
  pod's delete that names a service to delete first is skipped when that one failed);
* ``concurrent``: every write at once (a job's few extra objects cost one round trip), each
  failure recorded, none cancelling another;
* ``slow_start``: the pods, replica type after replica type, and the services, both at the same
  time, each in slow-start batches (:mod:`etctl.common._batches`: a batch that had a failure
  stops its stream, and a stopping controller starts none).

A stage that ``joins_next`` runs at the same time as the stage after it (extra objects the pods do
not need, created in the pods' round trips); each keeps its own index in ``Outcome.failed``.

A stage's Events are made when it is reached, a write's announcement once it succeeded (a restart's
Warning right after the delete that restarted the pod). What the writes did comes back as an
:class:`Outcome`, from which the status is judged (:mod:`etctl.common._judge`); their errors are
raised only after the status is written, so a failed write never loses what the reconcile
recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from etctl.common._batches import slow_start
from etctl.common._ledger import WriteLedger
from etctl.common._observe import Effects, Observed
from etctl.common._plan import Announcement, Create, Decision, Delete, Stage, Update, Write
from etctl.errors import EtctlError, Invalid
from etctl.log import get_logger
from etctl.runtime import PODS, SERVICES, KubeObject, ObjectView, Resource, objects

__all__ = ["Applier", "Outcome", "announce"]

log = get_logger(__name__)


@dataclass(slots=True)
class Outcome:
    """What a decision's writes did.

    Attributes:
        deleted: names of the pods deleted (or found gone).
        services_deleted: names of the services deleted (or found gone).
        created: the pods created, as stored.
        services_created: the services created, as stored.
        extras_created: the extra children created, as stored, by resource.
        failed: indices of the stages where a write failed.
        refused: pods the server refused as invalid (a 422), with its error.
        errors: every write's failure, in order.
        job_deleted: the job itself was deleted (its TTL ran out).
    """

    deleted: set[str] = field(default_factory=set)
    services_deleted: set[str] = field(default_factory=set)
    created: list[ObjectView] = field(default_factory=list)
    services_created: list[ObjectView] = field(default_factory=list)
    extras_created: dict[Resource, list[ObjectView]] = field(default_factory=dict)
    failed: set[int] = field(default_factory=set)
    refused: list[tuple[str, Invalid]] = field(default_factory=list)
    errors: list[EtctlError] = field(default_factory=list)
    job_deleted: bool = False

    def effects(self, *, restarted: bool) -> Effects:
        """The world as the writes left it (``restarted``: a whole-job restart went through)."""
        return Effects(
            deleted=frozenset(self.deleted),
            created=tuple(self.created),
            services_deleted=frozenset(self.services_deleted),
            services_created=tuple(self.services_created),
            extras_created={res: tuple(found) for res, found in self.extras_created.items()},
            restarted=restarted,
        )


def announce(ledger: WriteLedger, seen: Observed[Any], said: Announcement) -> None:
    """A Warning Event on the job and a warning log line saying the same."""
    if ledger.recorder is not None:
        ledger.recorder.event(seen.raw, "Warning", said.reason, said.message)
    log.warning(
        said.what,
        kind=seen.kind,
        namespace=seen.namespace,
        name=seen.name,
        reason=said.reason,
        message=said.message,
    )


class Applier:
    """Applies decisions for the jobs of one kind (see the module docstring).

    Args:
        ledger: where every write goes.
        jobs: the job resource (a job past its TTL is deleted).
    """

    def __init__(self, ledger: WriteLedger, jobs: Resource) -> None:
        self._ledger = ledger
        self._jobs = jobs

    async def apply(self, seen: Observed[Any], decision: Decision) -> Outcome:
        """Make the decision's writes, stage after stage; what they did."""
        out = Outcome()
        stages = decision.stages
        index = 0
        while index < len(stages):
            joined = [index]
            while stages[joined[-1]].joins_next and joined[-1] + 1 < len(stages):
                joined.append(joined[-1] + 1)
            if len(joined) == 1:
                await self._stage(seen, index, stages[index], out)
            else:
                async with asyncio.TaskGroup() as group:
                    for at in joined:
                        group.create_task(
                            self._stage(seen, at, stages[at], out), name=f"stage-{seen.name}-{at}"
                        )
            index = joined[-1] + 1
        if decision.delete_job and not out.errors:
            await self._ledger.delete(seen.raw, self._jobs, seen.raw)
            out.job_deleted = True
        return out

    async def _stage(self, seen: Observed[Any], index: int, stage: Stage, out: Outcome) -> None:
        for event in stage.events:
            if self._ledger.recorder is not None:
                self._ledger.recorder.event(seen.raw, event.type, event.reason, event.message)
        # The stage's own errors: a stage applied with the next one does not count the other's.
        errors: list[EtctlError] = []
        if stage.mode == "sequential":
            for write in stage.writes:
                await self._one(seen, write, out, errors)
        elif stage.mode == "concurrent":
            await self._concurrently(seen, stage, out, errors)
        else:
            await self._slow_start(seen, stage, out, errors)
        if errors:
            out.errors.extend(errors)
            out.failed.add(index)

    async def _one(
        self, seen: Observed[Any], write: Write, out: Outcome, errors: list[EtctlError]
    ) -> None:
        try:
            await self._write(seen, write, out)
        except EtctlError as exc:
            errors.append(exc)

    async def _write(self, seen: Observed[Any], write: Write, out: Outcome) -> None:
        ledger = self._ledger
        if isinstance(write, Delete):
            if write.first is not None:
                await ledger.delete(seen.raw, SERVICES, write.first)
                out.services_deleted.add(objects.name(write.first))
            await ledger.delete(seen.raw, write.res, write.obj)
            if write.res == PODS:
                out.deleted.add(objects.name(write.obj))
            elif write.res == SERVICES:
                out.services_deleted.add(objects.name(write.obj))
            if write.then is not None:
                announce(ledger, seen, write.then)
        elif isinstance(write, Update):
            await ledger.update(seen.raw, write.res, write.obj, write.patch)
        else:
            created = await ledger.create(seen.raw, write.res, write.obj)
            if created is not None and write.res not in (PODS, SERVICES):
                out.extras_created.setdefault(write.res, []).append(created)

    async def _concurrently(
        self, seen: Observed[Any], stage: Stage, out: Outcome, errors: list[EtctlError]
    ) -> None:
        async with asyncio.TaskGroup() as group:
            for index, write in enumerate(stage.writes):
                group.create_task(self._one(seen, write, out, errors), name=f"{stage.name}-{index}")

    async def _slow_start(
        self, seen: Observed[Any], stage: Stage, out: Outcome, errors: list[EtctlError]
    ) -> None:
        # Pods and services do not wait for each other: both are created at once, each in
        # slow-start batches, so a reconcile that creates both costs the round trips of one.
        async with asyncio.TaskGroup() as group:
            group.create_task(self._pods(seen, stage, out, errors), name=f"pods-{seen.name}")
            group.create_task(
                self._services(seen, stage.services, out, errors), name=f"services-{seen.name}"
            )

    async def _pods(
        self, seen: Observed[Any], stage: Stage, out: Outcome, errors: list[EtctlError]
    ) -> None:
        for rtype, drafts, vanished in stage.streams:
            made: list[ObjectView] = []

            async def write(create: Create, made: list[ObjectView] = made) -> EtctlError | None:
                try:
                    created = await self._ledger.create(seen.raw, PODS, create.obj)
                except Invalid as exc:
                    out.refused.append((objects.name(create.obj), exc))
                    return exc
                except EtctlError as exc:
                    return exc
                if created is not None:
                    out.created.append(created)
                    made.append(created)
                return None

            errors.extend(await slow_start(drafts, write, name=f"create-{seen.name}-{rtype}"))
            if made and vanished is not None:
                announce(self._ledger, seen, vanished)

    async def _services(
        self,
        seen: Observed[Any],
        services: Sequence[Create],
        out: Outcome,
        errors: list[EtctlError],
    ) -> None:
        async def write(create: Create) -> EtctlError | None:
            try:
                created: KubeObject | None = await self._ledger.create(
                    seen.raw, SERVICES, create.obj
                )
            except EtctlError as exc:
                return exc
            if created is not None:
                out.services_created.append(created)
            return None

        errors.extend(await slow_start(services, write, name=f"create-{seen.name}-services"))
