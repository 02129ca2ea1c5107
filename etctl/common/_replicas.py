"""The pods and services of each replica type: scale, restart, create (step 8 of the reconcile).

For every replica type, in the order the job's model lists them:

1. **Slots**: the plan phase's (:meth:`~etctl.common._phases.Phases.plan`: indices
   ``0..replicas-1``, an elastic kind's members, or what the kind's ``plan`` made of them).
2. **Scale down**: live pods outside the plan are deleted (their services go with the service
   sync below).
3. **Failures** (:mod:`etctl.common._restarts`): a failed pod whose policy restarts it is deleted,
   to be recreated under the same name once it is gone; each restart costs one unit of the
   backoff budget, and a restart the budget cannot pay fails the job with ``BackoffLimitExceeded``
   (every pod and service deleted). A permanent exit code under ``ExitCode`` fails the job.
4. **Creation** of the missing slots, except slots already completed (their index is in the
   replica type's ``completedIndexes``: a succeeded pod that was removed is never run again,
   trainer#1186), and unless:

   * the plan's gate (:attr:`~etctl.common.Replicas.gate`) is closed: a
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
   (:func:`~etctl.common._gang.decorate_pod`), then decorated by the kind's ``decorate_pod``,
   and created in slow-start batches.
5. **Services** (:class:`~etctl.common.BuildsServices`): every planned slot's service is
   created when missing, in slow-start batches too, *at the same time* as the pods of step 4
   (neither needs the other, so a reconcile that creates both waits for the round trips of one;
   ``build_service`` sees the state before this reconcile's pods); owned services no slot wants
   are deleted first.

Pods whose replica type the job no longer has are deleted like pods outside the plan.

:func:`replicas_step` says all of this as writes (the deletes one after another, then the pods and
services in slow-start batches) and facts (restarts, ``<Type>Created``, failures) for the applier
and the status; nothing here writes. Its decisions about creation see the job as the deletes it
decides leave it: a slot whose pod it deletes is taken until the pod is gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from etctl.common import _gang as gang
from etctl.common._api import ConditionStatus
from etctl.common._ledger import WriteLedger
from etctl.common._observe import Effects, Observed, Plans
from etctl.common._phases import Phases
from etctl.common._plan import (
    Announcement,
    Change,
    Create,
    Created,
    Delete,
    Fact,
    JobEvent,
    Restart,
    Stage,
    Step,
    wake_in,
)
from etctl.common._plugin import Gate, JobState, ReplicaRef
from etctl.common._pods import build_pod
from etctl.common._restarts import FailureAction, failure_action, restart_budget
from etctl.common._services import finish_service
from etctl.common._slots import fill, parse_indexes
from etctl.common._status import ConditionChange
from etctl.runtime import PODS, SERVICES, KubeObject, ObjectView, objects, podview

__all__ = ["replicas_step", "restarting"]


def restarting(kind: str, name: str, rtype: str) -> ConditionChange:
    """The Restarting condition of a job whose pod of ``rtype`` failed and is created again."""
    return ConditionChange(
        "Restarting",
        ConditionStatus.TRUE,
        f"{kind}Restarting",
        f"{kind} {name} is restarting: a {rtype} replica failed",
    )


def _failed(reason: str, message: str) -> ConditionChange:
    return ConditionChange("Failed", ConditionStatus.TRUE, reason, message)


def replicas_step(
    seen: Observed[Any],
    plans: Plans,
    *,
    phases: Phases[Any],
    scheduler: gang.Scheduler | None,
    ledger: WriteLedger,
) -> Step:
    """Scale, restart and create the pods and services of every replica type."""
    deletes: list[Delete] = [Delete(PODS, pod) for pod in seen.stray_pods()]
    facts: list[Fact] = []
    policy = seen.job.run_policy()
    limit = policy.backoff_limit
    restarts = seen.job.status.restart_count
    deleted: set[str] = {objects.name(d.obj) for d in deletes}
    for rtype, spec in seen.specs.items():
        slots = fill(plans[rtype].slots, seen.pods_of(rtype, live=False))
        for pod in slots.outside:
            deletes.append(Delete(PODS, pod))
            deleted.add(objects.name(pod))
        for ref, pod in slots.live_refs():
            action, code = failure_action(pod, spec)
            if action is FailureAction.FAIL:
                message = (
                    f"{seen.kind} {seen.name} failed: pod {ref.name} of replica type {rtype} "
                    f"exited with code {code}, which restartPolicy ExitCode treats as permanent "
                    "(1-127)"
                )
                facts.append(Change(_failed(f"{seen.kind}Failed", message)))
                return _halted(deletes, facts)
            if action is not FailureAction.RESTART:
                continue
            live = [p for p in seen.live_pods() if objects.name(p) not in deleted]
            budget = restart_budget(limit, restarts, live)
            if budget is not None and budget <= 0:
                message = (
                    f"{seen.kind} {seen.name} failed: it reached its backoffLimit of {limit} "
                    f"restarts, and pod {ref.name} of replica type {rtype} failed again"
                )
                failure = _failed("BackoffLimitExceeded", message)
                facts.append(Change(failure))
                deletes.extend(Delete(PODS, p) for p in live)
                deletes.extend(Delete(SERVICES, s) for s in seen.live_services())
                return replace(_halted(deletes, facts), acted=(failure,))
            extra = podview.restarts(pod)
            restarts += 1 + extra
            why = f"exit code {code}" if code is not None else "no exit code (failed from outside)"
            of = f" of {limit}" if limit is not None else ""
            message = (
                f"{seen.kind} {seen.name} is restarting: pod {ref.name} of replica type "
                f"{ref.replica_type} failed ({why}); restart {restarts}{of}"
            )
            then = Announcement("job restarting", f"{seen.kind}Restarting", message)
            deletes.append(Delete(PODS, pod, then=then))
            deleted.add(objects.name(pod))
            facts.append(Restart(objects.name(pod), extra, ref.replica_type))
    # Creation sees the job as the deletes leave it: a slot whose pod goes is taken until it has.
    state = seen.state(plans, Effects(deleted=frozenset(deleted)))
    creating = _pods(
        seen,
        plans,
        state,
        deleted=deleted,
        phases=phases,
        scheduler=scheduler,
        ledger=ledger,
    )
    services, service_deletes, service_events = _services(seen, plans, state, phases, ledger)
    stages: list[Stage] = []
    if deletes or service_deletes:
        stages.append(Stage("sequential", (*deletes, *service_deletes), name="replicas"))
    stages.append(
        Stage(
            "slow_start",
            services=services,
            streams=tuple(creating.streams),
            name=f"create-{seen.name}",
            events=(*creating.events, *service_events),
        )
    )
    return Step(
        stages=tuple(stages),
        facts=(*facts, *creating.facts),
        timers=creating.timers,
        judged=creating.judged,
    )


def _halted(deletes: Sequence[Delete], facts: Sequence[Fact]) -> Step:
    stages = (Stage("sequential", tuple(deletes), name="replicas"),) if deletes else ()
    return Step(stages=stages, facts=tuple(facts), judged=False, halt=True)


class _Creating:
    """What the creation part of the step decided."""

    def __init__(self) -> None:
        self.streams: list[tuple[str, tuple[Create, ...], Announcement | None]] = []
        self.facts: list[Fact] = []
        self.events: list[JobEvent] = []
        self.timers: tuple[float, ...] = ()
        self.judged = True


def _pods(
    seen: Observed[Any],
    plans: Plans,
    state: JobState[Any],
    *,
    deleted: set[str],
    phases: Phases[Any],
    scheduler: gang.Scheduler | None,
    ledger: WriteLedger,
) -> _Creating:
    out = _Creating()
    budget = seen.settings.burst
    after = seen.pods_after(Effects(deleted=frozenset(deleted)))
    for rtype, spec in seen.specs.items():
        if not out.judged:
            break
        slots = fill(plans[rtype].slots, [pod for pod in after if seen.replica_type(pod) == rtype])
        status = state.replica_statuses.get(rtype)
        completed = parse_indexes(status.completed_indexes) if status else set()
        pending = [ref for ref in slots.missing if ref.index not in completed]
        gate = plans[rtype].gate
        if not pending:
            # The pods exist: what the job remembers of their creation follows them, whichever
            # status write recorded it (or was lost, the process dying after the create).
            out.facts.append(Created(rtype, gate))
            continue
        if not gate.open:
            _closed(seen, rtype, gate, out)
            continue
        owner = f"{seen.kind} {seen.name}"
        missing: list[ReplicaRef] = []
        for ref in pending:
            if ledger.taken(seen.raw, PODS, ref.name):
                out.events.append(ledger.taken_event(PODS, ref.name, owner))
            else:
                missing.append(ref)
        missing = missing[: max(budget, 0)]
        drafts = tuple(
            Create(
                PODS,
                _build(seen, ref, spec, state, phases=phases, scheduler=scheduler, out=out),
                rtype,
            )
            for ref in missing
        )
        budget -= len(drafts)
        vanished = None
        if gate.vanished:
            reason = f"{seen.kind}{rtype}Vanished"
            vanished = Announcement("pod vanished and was created again", reason, gate.vanished)
        out.streams.append((rtype, drafts, vanished))
        out.facts.append(Created(rtype, gate))
    return out


def _closed(seen: Observed[Any], rtype: str, gate: Gate, out: _Creating) -> None:
    """A closed gate: ``<Type>Created`` False with its reason, or the job failed past its time."""
    if gate.fail_at is not None and seen.now >= gate.fail_at:
        reason = gate.reason or f"{seen.kind}Failed"
        out.facts.append(Change(_failed(reason, gate.message or f"{rtype} never started")))
        out.judged = False
        return
    closed = ConditionChange(f"{rtype}Created", ConditionStatus.FALSE, gate.reason, gate.message)
    out.facts.append(Change(closed))
    if gate.fail_at is not None:
        out.timers += wake_in((gate.fail_at - seen.now).total_seconds())


def _build(
    seen: Observed[Any],
    ref: ReplicaRef,
    spec: Any,
    state: JobState[Any],
    *,
    phases: Phases[Any],
    scheduler: gang.Scheduler | None,
    out: _Creating,
) -> KubeObject:
    draft = build_pod(
        job_name=seen.name,
        namespace=seen.namespace,
        owner_ref=seen.owner_ref,
        ref=ref,
        spec=spec,
        operator_name=seen.settings.operator_name,
    )
    if draft.overrode_restart_policy:
        out.events.append(
            JobEvent(
                "Warning",
                "SetPodTemplateRestartPolicy",
                "Restart policy in pod template will be overwritten by restart policy in replica "
                "spec",
            )
        )
    if scheduler is not None and not gang.decorate_pod(
        scheduler, draft.pod, job_name=seen.name, replica_type=ref.replica_type
    ):
        out.events.append(
            JobEvent(
                "Warning",
                "SetPodTemplateSchedulerName",
                "Another scheduler is specified when gang-scheduling is enabled and it will not "
                "be overwritten",
            )
        )
    phases.decorate_pod(seen.job, draft.pod, ref, state)
    return draft.pod


def _services(
    seen: Observed[Any],
    plans: Plans,
    state: JobState[Any],
    phases: Phases[Any],
    ledger: WriteLedger,
) -> tuple[tuple[Create, ...], tuple[Delete, ...], tuple[JobEvent, ...]]:
    """The services to create (at most ``burst``), to delete (no slot wants them), and events."""
    builder = phases.services
    wanted: dict[str, tuple[ReplicaRef, KubeObject]] = {}
    if builder is not None:
        for rtype in seen.specs:
            for ref in plans[rtype].slots:
                built = builder.build_service(seen.job, ref, state)
                if built is None:
                    continue
                service = finish_service(
                    built,
                    job_name=seen.name,
                    namespace=seen.namespace,
                    owner_ref=seen.owner_ref,
                    ref=ref,
                    operator_name=seen.settings.operator_name,
                )
                wanted.setdefault(objects.name(service), (ref, service))
    have: Mapping[str, ObjectView] = {objects.name(s): s for s in seen.services}
    deletes = tuple(
        Delete(SERVICES, existing)
        for name, existing in have.items()
        if name not in wanted and not objects.is_terminating(existing)
    )
    events: list[JobEvent] = []
    creates: list[Create] = []
    owner = f"{seen.kind} {seen.name}"
    for name, (ref, service) in wanted.items():
        if name in have:
            continue
        if ledger.taken(seen.raw, SERVICES, name):
            events.append(ledger.taken_event(SERVICES, name, owner))
            continue
        creates.append(Create(SERVICES, service, ref.replica_type))
    # The rest comes with the next reconcile.
    return tuple(creates[: max(seen.settings.burst, 0)]), deletes, tuple(events)
