"""Pure helpers over job conditions (kubeflow's ``JobCondition`` list).

Every controller keeps a list of conditions whose *last* element is the current state (the printer
columns read ``.status.conditions[-1:].type``). These functions never mutate their input and never
read a clock: the caller passes ``now`` (from its :class:`~etctl.runtime.Clock`), so the
same inputs always give the same list, and an unchanged condition gives back the very same list
(callers compare to decide whether a status write is needed).

Rules of :func:`set_condition`:

* a condition whose status, reason and message are unchanged is left alone (same list returned);
* a changed condition moves to the end; ``lastTransitionTime`` is kept when only the reason or the
  message changed, and set to ``now`` when the status changed; ``lastUpdateTime`` is ``now``;
* at most one condition per type.

:func:`set_job_condition` adds kubeflow's job lifecycle rules on top: Running and Restarting
exclude each other, Succeeded or Failed turn Running to False (stamped as a transition), and
nothing changes once the job has finished (kubeflow only protects Failed; a succeeded job going
back to Running is as wrong). Restarting a finished job (et-operator's restartPolicy OnFailure)
starts again from an empty list.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from etctl.common._api import ConditionStatus, JobCondition, JobConditionType, to_timestamp

__all__ = [
    "PODS_CREATED",
    "get_condition",
    "is_finished",
    "is_true",
    "pods_created",
    "set_condition",
    "set_job_condition",
]

PODS_CREATED = "PodsCreated"
"""The reason of a gated replica type's ``<Type>Created`` condition when it is True.

The job controller writes it only from pods that exist (a create's answer, or the cache), never
from the decision to create them; earlier versions wrote ``GateOpened`` when the gate opened,
before the create, so that reason proves nothing.
"""


def get_condition(conditions: Sequence[JobCondition], cond_type: str) -> JobCondition | None:
    """The condition of type ``cond_type``, or None."""
    return next((c for c in conditions if c.type == cond_type), None)


def is_true(conditions: Sequence[JobCondition], cond_type: str) -> bool:
    """True when the condition of type ``cond_type`` exists and its status is True."""
    condition = get_condition(conditions, cond_type)
    return condition is not None and condition.status is ConditionStatus.TRUE


def pods_created(conditions: Sequence[JobCondition], replica_type: str) -> bool:
    """True when the job recorded that pods of ``replica_type`` existed.

    That is ``<Type>Created`` True with reason :data:`PODS_CREATED`, written from pods the
    controller saw: the proof a pod of the type was created, against which a missing one is judged
    as having vanished.
    """
    condition = get_condition(conditions, f"{replica_type}Created")
    return (
        condition is not None
        and condition.status is ConditionStatus.TRUE
        and condition.reason == PODS_CREATED
    )


def is_finished(conditions: Sequence[JobCondition]) -> bool:
    """True when the job Succeeded or Failed."""
    return is_true(conditions, JobConditionType.SUCCEEDED) or is_true(
        conditions, JobConditionType.FAILED
    )


def set_condition(
    conditions: Sequence[JobCondition],
    cond_type: str,
    status: ConditionStatus,
    *,
    reason: str = "",
    message: str = "",
    now: datetime,
) -> list[JobCondition]:
    """``conditions`` with ``cond_type`` set to ``status`` (see the module rules).

    Args:
        conditions: the current conditions (not modified).
        cond_type: the condition type to set.
        status: its new status.
        reason: a CamelCase machine-readable reason.
        message: a human-readable message.
        now: the current time (whole seconds are kept, as the API server does).

    Returns:
        A new list, equal to ``conditions`` when nothing changed.
    """
    current = get_condition(conditions, cond_type)
    if (
        current is not None
        and current.status is status
        and current.reason == reason
        and current.message == message
    ):
        return list(conditions)
    stamp = to_timestamp(now)
    transition = stamp
    if current is not None and current.status is status:
        transition = current.last_transition_time or stamp
    updated = JobCondition(
        type=str(cond_type),
        status=status,
        reason=reason,
        message=message,
        last_update_time=stamp,
        last_transition_time=transition,
    )
    return [c for c in conditions if c.type != cond_type] + [updated]


def set_job_condition(
    conditions: Sequence[JobCondition],
    cond_type: str,
    status: ConditionStatus,
    *,
    reason: str = "",
    message: str = "",
    now: datetime,
) -> list[JobCondition]:
    """:func:`set_condition` with kubeflow's job lifecycle rules (see the module docstring)."""
    if is_finished(conditions):
        return list(conditions)
    result = set_condition(conditions, cond_type, status, reason=reason, message=message, now=now)
    if result == list(conditions) or status is not ConditionStatus.TRUE:
        return result
    if cond_type == JobConditionType.RESTARTING:
        result = [c for c in result if c.type != JobConditionType.RUNNING]
    elif cond_type == JobConditionType.RUNNING:
        result = [c for c in result if c.type != JobConditionType.RESTARTING]
    elif cond_type in (JobConditionType.SUCCEEDED, JobConditionType.FAILED):
        result = [_running_to_false(c, now) for c in result]
    return result


def _running_to_false(condition: JobCondition, now: datetime) -> JobCondition:
    if condition.type != JobConditionType.RUNNING or condition.status is ConditionStatus.FALSE:
        return condition
    # Flipped where it stands, so the terminal condition stays last. Unlike kubeflow, which keeps
    # the old timestamps, the flip is a transition and is stamped as one.
    stamp = to_timestamp(now)
    return condition.model_copy(
        update={
            "status": ConditionStatus.FALSE,
            "last_update_time": stamp,
            "last_transition_time": stamp,
        }
    )
