"""The job's status after a reconcile: judged from what it decided and what its writes did.

Each condition the job controller writes has one origin, found from its type:

=====================  =========================================================================
condition              origin
=====================  =========================================================================
``Created``            the first reconcile of the job (:func:`etctl.common._plan.decide`)
``Suspended``          the run policy: True once a suspension's deletes went through
                       (:func:`etctl.common._runpolicy.suspend`), False when resumed
                       (:func:`etctl.common._runpolicy.start`)
``Failed``             a fact of the step that failed the job: the validate phase
                       (``<Kind>Invalid``), the run policy (``DeadlineExceeded``,
                       ``BackoffLimitExceeded``), a permanent exit code or a gate past its time
                       (:mod:`etctl.common._replicas`), the gang (:mod:`etctl.common._podgroups`),
                       else the plugin's judgement
``Running``,           the plugin's judgement of the outcome (its ``verdict``); ``Running`` False
``Succeeded``          when a running job is suspended
``Restarting``         :func:`restarted`: a restart whose delete went through (a pod's, or the
                       whole job's)
``<Type>Created``      the plan's gate (False while closed, :mod:`etctl.common._replicas`) and
                       :func:`created`: True from pods of the type that exist once creation is over
``ReplicaFailure``     :func:`refused`: a pod the server refused as invalid; it goes once pods are
                       created again
``Scaling``            an elastic kind's scaler field, which the scaling controller writes, and
                       the scaler it names (:mod:`etctl.common._scaling.rendering`)
=====================  =========================================================================

Conditions are applied in the order the steps established their facts, then the judgement, then
``Scaling``, ``Restarting`` and ``ReplicaFailure`` (:func:`judge`); the status fields the controller
owns are computed by :mod:`etctl.common._status` and the plugin's own fields added from the
outcome (and an elastic kind's phase field, :class:`~etctl.common.MemberFields`, kept equal to the
latest condition that holds when the plugin does not write it).

A :class:`~etctl.common._status.StatusDelta` is the part of the status that records what the
writes did and that the world no longer shows (restarts counted, a failure enforced by deleting
every pod, completions a whole-job restart dropped): when the status write meets a Conflict, the
delta is applied to the job as it is now (:meth:`~etctl.common._writer.JobWriter.record`), from
the same facts, so nothing has a second origin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from etctl.common._api import ConditionStatus, JobConditionType, JobStatus
from etctl.common._apply import Outcome, announce
from etctl.common._conditions import PODS_CREATED, get_condition
from etctl.common._ledger import WriteLedger
from etctl.common._observe import Observed, Plans
from etctl.common._phases import Phases
from etctl.common._plan import (
    Announcement,
    Change,
    Created,
    Decision,
    Restart,
    Suspension,
    WholeRestart,
)
from etctl.common._plugin import Gate, JobState
from etctl.common._replicas import restarting
from etctl.common._scaling.api import phase_of
from etctl.common._status import ConditionChange, StatusDelta, compute_status
from etctl.errors import Invalid
from etctl.runtime import objects

__all__ = ["Judgement", "created", "judge", "refused", "restarted"]


@dataclass(frozen=True, slots=True)
class Judgement:
    """The status a reconcile writes, and what it records of its own doing.

    Attributes:
        status: the owned status fields.
        extra: the plugin's own status fields.
        restarts: restarts this reconcile made (the restart counter).
        delta: what the status must carry even when the job changed meanwhile.
        state: the job as the reconcile leaves it (what was judged).
    """

    status: JobStatus
    extra: dict[str, Any]
    restarts: int
    delta: StatusDelta
    state: JobState[Any]


def created(
    seen: Observed[Any], state: JobState[Any], rtype: str, gate: Gate
) -> ConditionChange | None:
    """``<Type>Created`` True from the pods of ``rtype`` that exist, under an open gate.

    From False, or from nothing when the gate records. A True condition is left as it is: the
    ``GateOpened`` of earlier versions is not rewritten (a changed condition would move last and
    change the state the job shows); it simply proves nothing (:func:`~etctl.common.pods_created`).
    """
    if not gate.open:
        return None
    condition = f"{rtype}Created"
    current = get_condition(seen.job.status.conditions, condition)
    if current is None and not gate.record:
        return None
    if current is not None and current.status is ConditionStatus.TRUE:
        return None
    pods = sorted(state.pods_of(rtype), key=objects.name)
    if not pods:
        return None  # nothing exists: nothing was created, whatever was decided
    first = pods[0]
    more = f" and {len(pods) - 1} more" if len(pods) > 1 else ""
    message = (
        f"{seen.kind} {seen.name} has created its {rtype.lower()} pod {objects.name(first)} "
        f"(uid {objects.uid(first)}){more}."
    )
    return ConditionChange(condition, ConditionStatus.TRUE, PODS_CREATED, message)


def refused(seen: Observed[Any], found: Sequence[tuple[str, Invalid]]) -> ConditionChange | None:
    """``ReplicaFailure``: the server refused a pod as invalid, which no retry can heal."""
    if not found:
        return None
    name, error = found[0]
    message = (
        f"pod {name} of {seen.kind} {seen.name} cannot be created: {error.message}; the "
        "operator keeps retrying with backoff, but only a fix of the job's pod template helps"
    )
    return ConditionChange(
        JobConditionType.REPLICA_FAILURE, ConditionStatus.TRUE, "PodInvalid", message
    )


@dataclass(frozen=True, slots=True)
class _Restarts:
    count: int
    restarts: int
    change: ConditionChange | None
    whole: bool
    announced: tuple[Announcement, ...]


def restarted(seen: Observed[Any], decision: Decision, outcome: Outcome) -> _Restarts:
    """The restarts whose deletes went through, and the ``Restarting`` they set."""
    count = seen.job.status.restart_count
    restarts = 0
    change: ConditionChange | None = None
    whole = False
    announced: list[Announcement] = []
    for fact in decision.facts:
        if isinstance(fact, Restart) and fact.pod in outcome.deleted:
            count += 1 + fact.extra
            restarts += 1
            change = change or restarting(seen.kind, seen.name, fact.replica_type)
        elif isinstance(fact, WholeRestart) and fact.stage not in outcome.failed:
            count += 1 + fact.extra
            restarts += 1
            change = fact.change
            whole = True
            announced.append(fact.announce)
    return _Restarts(count, restarts, change, whole, tuple(announced))


def judge(
    seen: Observed[Any],
    plans: Plans,
    decision: Decision,
    outcome: Outcome,
    *,
    phases: Phases[Any],
    ledger: WriteLedger,
    scaling: ConditionChange | None = None,
    phase_field: str | None = None,
) -> Judgement:
    """The status after ``decision`` was applied with ``outcome`` (see the module docstring).

    ``scaling`` is the ``Scaling`` condition an elastic job should show, and ``phase_field`` the
    status field of its phase, if its kind has one.
    """
    counted = restarted(seen, decision, outcome)
    for said in counted.announced:
        announce(ledger, seen, said)
    state = seen.state(plans, outcome.effects(restarted=counted.whole))
    changes: list[ConditionChange] = []
    for fact in decision.facts:
        if isinstance(fact, Change):
            changes.append(fact.change)
        elif isinstance(fact, Suspension) and fact.stage not in outcome.failed:
            changes.extend(fact.changes)
        elif isinstance(fact, Created) and (
            found := created(seen, state, fact.replica_type, fact.gate)
        ):
            changes.append(found)
    if decision.judged and (verdict := phases.judge(seen.job, state)) is not None:
        changes.append(
            ConditionChange(
                verdict.condition, ConditionStatus.TRUE, verdict.reason, verdict.message
            )
        )
    if scaling is not None:
        changes.append(scaling)
    if counted.change is not None:
        changes.append(counted.change)
    if (failure := refused(seen, outcome.refused)) is not None:
        changes.append(failure)
    current = seen.job.status
    status = compute_status(
        current,
        changes=changes,
        replicas=state.replica_statuses,
        start_time=decision.start_time if decision.start_time is not None else current.start_time,
        restart_count=counted.count,
        now=seen.now,
    )
    if outcome.created and not outcome.refused:
        status = _without(status, JobConditionType.REPLICA_FAILURE)
    acted = [*decision.acted, *((counted.change,) if counted.change is not None else ())]
    delta = StatusDelta(
        restarts=counted.count - current.restart_count,
        conditions=tuple(acted),
        forget_completions=counted.whole,
    )
    extra = _extended(seen, status, state, phases)
    if phase_field is not None and phase_field not in extra:
        extra[phase_field] = phase_of(status.conditions)
    return Judgement(
        status=status,
        extra=extra,
        restarts=counted.restarts,
        delta=delta,
        state=state,
    )


def _without(status: JobStatus, cond_type: str) -> JobStatus:
    """``status`` without the condition ``cond_type`` (the same object when it has none)."""
    kept = [c for c in status.conditions if c.type != cond_type]
    if len(kept) == len(status.conditions):
        return status
    return status.model_copy(update={"conditions": kept})


def _extended(
    seen: Observed[Any],
    status: JobStatus,
    state: JobState[Any],
    phases: Phases[Any],
) -> dict[str, Any]:
    if not phases.extends_status:
        return {}
    job: Any = seen.job
    if isinstance(job, BaseModel):
        owned = {name: getattr(status, name) for name in JobStatus.model_fields}
        job = job.model_copy(update={"status": seen.job.status.model_copy(update=owned)})
    return dict(phases.extend_status(job, state))
