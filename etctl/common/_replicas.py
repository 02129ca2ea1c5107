"""The pods and services of each replica type: scale, restart, create (step 8 of the reconcile).

For every replica type, in the order the job's model lists them:

1. **Slots**: the plugin's plan (:class:`~etctl.common.PlansReplicas`), else indices
   ``0..replicas-1`` (:mod:`etctl.common._slots`).
2. **Scale down**: live pods outside the plan are deleted (their services go with the service
   sync below).
3. **Failures** (:mod:`etctl.common._restarts`): a failed pod whose policy restarts it is deleted,
   to be recreated under the same name once it is gone; each restart costs one unit of the
   backoff budget, and a restart the budget cannot pay fails the job with ``BackoffLimitExceeded``
   (every pod and service deleted). A permanent exit code under ``ExitCode`` fails the job.
4. **Creation** of the missing slots, except slots already completed (their index is in the
   replica type's ``completedIndexes``: a succeeded pod that was removed is never run again,
   trainer#1186), and unless:

   * the plugin's gate (:class:`~etctl.common.GatesCreation`) is closed: a
     ``<Type>Created`` condition (False) carries the gate's reason and message, a gate past its
     ``fail_at`` fails the job with them, and a reconcile is scheduled for ``fail_at``;
   * a pod of that name exists that the job does not control (a Warning ``ErrResourceExists``;
     it is never touched).

   ``<Type>Created`` turns True (reason :data:`~etctl.common.PODS_CREATED`, naming a pod and its
   uid) only from pods that exist once the creation step is over: created by this round (the
   create's answer) or found by it (the cache), while the gate is open. The decision to create is
   never recorded as the creation: a create that failed, or that a stopping controller never sent,
   leaves the condition as it was, and the next round creates the pod. A gate opened with
   ``record`` sets it True even if its closed state was never written (a lost status write must
   not change what the job remembers); this is applied on every round, pods missing or not: a
   process that died between creating the pods and writing the status leaves pods the next round
   finds, and their condition follows them. A gate opened with ``vanished`` says the pods it lets
   be created replace ones that provably existed: once they are created, a Warning Event
   ``<Kind><Type>Vanished`` carries its message.

   Pods are built by :func:`~etctl.common._pods.build_pod`, bound to the gang
   (:func:`~etctl.common._gang.decorate_pod`), then decorated by the plugin, and created in
   slow-start batches.
5. **Services** (:class:`~etctl.common.BuildsServices`): every planned slot's service is
   created when missing, in slow-start batches too, *at the same time* as the pods of step 4
   (neither needs the other, so a reconcile that creates both waits for the round trips of one;
   ``build_service`` sees the state before this reconcile's pods); owned services no slot wants
   are deleted first.

Pods whose replica type the job no longer has are deleted like pods outside the plan.
"""

from __future__ import annotations

import asyncio
from typing import Any, Generic, TypeVar

from etctl.common import _gang as gang
from etctl.common._api import ConditionStatus, ReplicaSpec, ReplicatedJob
from etctl.common._batches import slow_start
from etctl.common._conditions import PODS_CREATED, get_condition
from etctl.common._control import ChildControl, ChildReader
from etctl.common._plugin import Capabilities, Gate, JobPlugin, JobState, ReplicaRef
from etctl.common._pods import build_pod
from etctl.common._restarts import (
    FailureAction,
    failure_action,
    restart_budget,
)
from etctl.common._round import Round
from etctl.common._services import finish_service
from etctl.common._slots import ReplicaPods, fill, parse_indexes
from etctl.common._status import ConditionChange
from etctl.common._tracking import replica_key
from etctl.errors import EtctlError, Invalid
from etctl.log import get_logger
from etctl.runtime import PODS, SERVICES, KubeObject, ObjectView, Resource, objects, podview

__all__ = ["ReplicaSync", "delete_all", "delete_child", "warn"]

log = get_logger(__name__)

JobT = TypeVar("JobT", bound=ReplicatedJob)


def warn(control: ChildControl, rnd: Round[Any], what: str, reason: str, message: str) -> None:
    """A Warning Event on the job and a warning log line saying the same (``what`` happened)."""
    control.recorder.event(rnd.raw, "Warning", reason, message)
    log.warning(
        what, kind=rnd.kind, namespace=rnd.namespace, name=rnd.name, reason=reason, message=message
    )


async def delete_all(
    control: ChildControl, rnd: Round[Any], *, pods: bool = True, services: bool = True
) -> None:
    """Delete every live pod and/or service of the job (suspension, deadline, backoff)."""
    if pods:
        for pod in rnd.live_pods():
            await delete_child(control, rnd, PODS, pod)
    if services:
        for service in [s for s in rnd.services if not objects.is_terminating(s)]:
            await delete_child(control, rnd, SERVICES, service)


async def delete_child(
    control: ChildControl, rnd: Round[Any], res: Resource, obj: ObjectView
) -> bool:
    """Delete one pod or service of the job and record it in the round; False if that failed.

    A failed delete is recorded in ``rnd.errors`` (raised once the status is written).
    """
    rtype = rnd.replica_type(obj)
    key = replica_key(rnd.namespace, rnd.name, rnd.uid, rtype, res) if rtype else None
    try:
        await control.delete(rnd.raw, res, obj, key=key)
    except EtctlError as exc:
        rnd.errors.append(exc)
        return False
    if res == PODS:
        rnd.pod_deleted(obj)
    else:
        rnd.service_deleted(obj)
    return True


class ReplicaSync(Generic[JobT]):
    """Step 8 of the reconcile for one job kind (see the module docstring).

    Args:
        plugin: the job kind.
        capabilities: its optional capabilities.
        control: writes children.
        reader: the cache (to spot objects the job does not control).
        scheduler: the gang scheduler, if any.
    """

    def __init__(
        self,
        plugin: JobPlugin[JobT],
        capabilities: Capabilities,
        control: ChildControl,
        reader: ChildReader,
        scheduler: gang.Scheduler | None,
    ) -> None:
        self._plugin = plugin
        self._caps = capabilities
        self._control = control
        self._reader = reader
        self._scheduler = scheduler

    async def run(self, rnd: Round[JobT]) -> None:
        """Scale, restart and create the pods and services of every replica type."""
        for pod in rnd.stray_pods():
            await delete_child(self._control, rnd, PODS, pod)
        plans = rnd.plans()
        for rtype, spec in rnd.specs.items():
            slots = fill(plans[rtype], rnd.pods_of(rtype, live=False))
            for pod in slots.outside:
                await delete_child(self._control, rnd, PODS, pod)
            if not await self._failures(rnd, rtype, spec, slots):
                return
        # Pods and services do not wait for each other: both are created at once, each in
        # slow-start batches, so a reconcile that creates both costs the round trips of one.
        state = rnd.state()
        async with asyncio.TaskGroup() as group:
            group.create_task(self._create_pods(rnd, plans), name=f"pods-{rnd.name}")
            group.create_task(self._services(rnd, plans, state), name=f"services-{rnd.name}")

    async def _create_pods(
        self, rnd: Round[JobT], plans: dict[str, tuple[ReplicaRef, ...]]
    ) -> None:
        budget = rnd.settings.burst
        for rtype, spec in rnd.specs.items():
            slots = fill(plans[rtype], rnd.pods_of(rtype, live=False))
            budget -= await self._create(rnd, rtype, spec, slots, rnd.state(), budget=budget)

    # -- failures

    async def _failures(
        self, rnd: Round[JobT], rtype: str, spec: ReplicaSpec, slots: ReplicaPods
    ) -> bool:
        """Restart or judge failed pods; False when the job failed."""
        policy = rnd.job.run_policy()
        limit = policy.backoff_limit
        for ref, pod in slots.live_refs():
            action, code = failure_action(pod, spec)
            if action is FailureAction.FAIL:
                rnd.fail(
                    f"{rnd.kind}Failed",
                    f"{rnd.kind} {rnd.name} failed: pod {ref.name} of replica type {rtype} exited "
                    f"with code {code}, which restartPolicy ExitCode treats as permanent (1-127)",
                )
                return False
            if action is not FailureAction.RESTART:
                continue
            budget = restart_budget(limit, rnd.restart_count, rnd.live_pods())
            if budget is not None and budget <= 0:
                rnd.fail(
                    "BackoffLimitExceeded",
                    f"{rnd.kind} {rnd.name} failed: it reached its backoffLimit of {limit} "
                    f"restarts, and pod {ref.name} of replica type {rtype} failed again",
                    acted=True,
                )
                await delete_all(self._control, rnd)
                return False
            await self._restart(rnd, ref, pod, code, limit)
        return True

    async def _restart(
        self,
        rnd: Round[JobT],
        ref: ReplicaRef,
        pod: ObjectView,
        code: int | None,
        limit: int | None,
    ) -> None:
        extra = podview.restarts(pod)
        before = len(rnd.errors)
        await delete_child(self._control, rnd, PODS, pod)
        if len(rnd.errors) > before:
            return
        rnd.restart_count += 1 + extra
        rnd.restarts += 1
        why = f"exit code {code}" if code is not None else "no exit code (failed from outside)"
        of = f" of {limit}" if limit is not None else ""
        message = (
            f"{rnd.kind} {rnd.name} is restarting: pod {ref.name} of replica type "
            f"{ref.replica_type} failed ({why}); restart {rnd.restart_count}{of}"
        )
        rnd.restarting = rnd.restarting or _restarting(rnd, ref.replica_type)
        warn(self._control, rnd, "job restarting", f"{rnd.kind}Restarting", message)

    # -- creation

    async def _create(
        self,
        rnd: Round[JobT],
        rtype: str,
        spec: ReplicaSpec,
        slots: ReplicaPods,
        state: JobState[JobT],
        *,
        budget: int,
    ) -> int:
        """Create up to ``budget`` missing pods of ``rtype``; how many were attempted."""
        status = state.replica_statuses.get(rtype)
        completed = parse_indexes(status.completed_indexes) if status else set()
        pending = [ref for ref in slots.missing if ref.index not in completed]
        if not rnd.judge:
            return 0
        gater = self._caps.gate
        gate = gater.gate(rnd.job, rtype, state) if gater is not None else None
        if not pending:
            # The pods exist: what the job remembers of their creation follows them, whichever
            # status write recorded it (or was lost, the process dying after the create).
            _record_created(rnd, rtype, gate)
            return 0
        if gate is not None and not gate.open:
            _closed(rnd, rtype, gate)
            return 0
        missing = [ref for ref in pending if self._may_create(rnd, ref)][: max(budget, 0)]
        drafts = [self._build(rnd, ref, spec, state) for ref in missing]
        key = replica_key(rnd.namespace, rnd.name, rnd.uid, rtype, PODS)
        made: list[ObjectView] = []

        async def write(pod: KubeObject) -> EtctlError | None:
            try:
                created = await self._control.create(rnd.raw, PODS, pod, key=key)
            except Invalid as exc:
                rnd.pod_refused(objects.name(pod), exc)
                return exc
            except EtctlError as exc:
                return exc
            if created is not None:
                rnd.pod_created(created)
                made.append(created)
            return None

        rnd.errors.extend(await slow_start(drafts, write, name=f"create-{rnd.name}-{rtype}"))
        # Only now, from what exists: the decision to create is not the creation.
        _record_created(rnd, rtype, gate)
        if made and gate is not None and gate.vanished:
            reason = f"{rnd.kind}{rtype}Vanished"
            warn(self._control, rnd, "pod vanished and was created again", reason, gate.vanished)
        return len(drafts)

    def _may_create(self, rnd: Round[JobT], ref: ReplicaRef) -> bool:
        owner = f"{rnd.kind} {rnd.name}"
        return not self._control.name_taken(self._reader, rnd.raw, PODS, ref.name, owner=owner)

    def _build(
        self, rnd: Round[JobT], ref: ReplicaRef, spec: ReplicaSpec, state: JobState[JobT]
    ) -> KubeObject:
        draft = build_pod(
            job_name=rnd.name,
            namespace=rnd.namespace,
            owner_ref=rnd.owner_ref,
            ref=ref,
            spec=spec,
            operator_name=rnd.settings.operator_name,
        )
        recorder = self._control.recorder
        if draft.overrode_restart_policy:
            recorder.event(
                rnd.raw,
                "Warning",
                "SetPodTemplateRestartPolicy",
                "Restart policy in pod template will be overwritten by restart policy in replica "
                "spec",
            )
        if self._scheduler is not None and not gang.decorate_pod(
            self._scheduler, draft.pod, job_name=rnd.name, replica_type=ref.replica_type
        ):
            recorder.event(
                rnd.raw,
                "Warning",
                "SetPodTemplateSchedulerName",
                "Another scheduler is specified when gang-scheduling is enabled and it will not "
                "be overwritten",
            )
        self._plugin.decorate_pod(rnd.job, draft.pod, ref, state)
        return draft.pod

    # -- services

    async def _services(
        self,
        rnd: Round[JobT],
        plans: dict[str, tuple[ReplicaRef, ...]],
        state: JobState[JobT],
    ) -> None:
        builder = self._caps.services
        wanted: dict[str, tuple[ReplicaRef, KubeObject]] = {}
        if builder is not None:
            for rtype in rnd.specs:
                for ref in plans[rtype]:
                    built = builder.build_service(rnd.job, ref, state)
                    if built is None:
                        continue
                    service = finish_service(
                        built,
                        job_name=rnd.name,
                        namespace=rnd.namespace,
                        owner_ref=rnd.owner_ref,
                        ref=ref,
                        operator_name=rnd.settings.operator_name,
                    )
                    wanted.setdefault(objects.name(service), (ref, service))
        have = {objects.name(s): s for s in rnd.services}
        for name, existing in have.items():
            if name not in wanted and not objects.is_terminating(existing):
                await delete_child(self._control, rnd, SERVICES, existing)
        missing = [
            (ref, service)
            for name, (ref, service) in wanted.items()
            if name not in have and self._may_create_service(rnd, name)
        ][: max(rnd.settings.burst, 0)]  # the rest comes with the next reconcile

        async def write(item: tuple[ReplicaRef, KubeObject]) -> EtctlError | None:
            ref, service = item
            key = replica_key(rnd.namespace, rnd.name, rnd.uid, ref.replica_type, SERVICES)
            try:
                created = await self._control.create(rnd.raw, SERVICES, service, key=key)
            except EtctlError as exc:
                return exc
            if created is not None:
                rnd.service_created(created)
            return None

        rnd.errors.extend(await slow_start(missing, write, name=f"create-{rnd.name}-services"))

    def _may_create_service(self, rnd: Round[JobT], name: str) -> bool:
        owner = f"{rnd.kind} {rnd.name}"
        return not self._control.name_taken(self._reader, rnd.raw, SERVICES, name, owner=owner)


def _closed(rnd: Round[Any], rtype: str, gate: Gate) -> None:
    """A closed gate: ``<Type>Created`` False with its reason, or the job failed past its time."""
    if gate.fail_at is not None and rnd.now >= gate.fail_at:
        rnd.fail(gate.reason or f"{rnd.kind}Failed", gate.message or f"{rtype} never started")
        return
    rnd.change(f"{rtype}Created", ConditionStatus.FALSE, gate.reason, gate.message)
    if gate.fail_at is not None:
        rnd.wake_in((gate.fail_at - rnd.now).total_seconds())


def _record_created(rnd: Round[Any], rtype: str, gate: Gate | None) -> None:
    """``<Type>Created`` True from the pods of ``rtype`` that exist, under an open gate.

    From False, or from nothing when the gate records. A True condition is left as it is: the
    ``GateOpened`` of earlier versions is not rewritten (a changed condition would move last and
    change the state the job shows); it simply proves nothing (:func:`~etctl.common.pods_created`).
    """
    if gate is None or not gate.open:
        return
    pods = sorted(rnd.pods_of(rtype), key=objects.name)
    if not pods:
        return  # nothing exists: nothing was created, whatever was decided
    condition = f"{rtype}Created"
    current = get_condition(rnd.job.status.conditions, condition)
    if current is None and not gate.record:
        return
    if current is not None and current.status is ConditionStatus.TRUE:
        return
    first = pods[0]
    more = f" and {len(pods) - 1} more" if len(pods) > 1 else ""
    message = (
        f"{rnd.kind} {rnd.name} has created its {rtype.lower()} pod {objects.name(first)} "
        f"(uid {objects.uid(first)}){more}."
    )
    rnd.change(condition, ConditionStatus.TRUE, PODS_CREATED, message)


def _restarting(rnd: Round[Any], rtype: str) -> ConditionChange:
    return ConditionChange(
        "Restarting",
        ConditionStatus.TRUE,
        f"{rnd.kind}Restarting",
        f"{rnd.kind} {rnd.name} is restarting: a {rtype} replica failed",
    )
