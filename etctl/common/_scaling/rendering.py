"""The ``Scaling`` condition of an elastic job, rendered by the job controller (pure).

The scaling controller writes only the fields it owns (the membership and the scaler being run,
:class:`~etctl.common.MemberFields`); the job's conditions and phase have one writer, the job
controller, which renders ``Scaling`` from what the scaling controller wrote and what the scalers
say:

* a scaler named in the job's scaler field: ``Scaling`` True, reason ``ScalingStart``, the message
  naming the scaler (``<Kind> <job> runs ScaleOut:<namespace>/<name>``);
* none named while ``Scaling`` is True: the scaler that True condition names ended. Finished, its
  outcome is the reason (``Scaling<Out|In>Succeeded`` or ``...Failed``, with the scaler's own
  message); gone, or not finished (deleted while it ran), ``ScalerGone``;
* otherwise nothing changes (a job that never scaled has no ``Scaling`` condition).

So the condition is a function of stored state: any reconcile, after any restart, renders the same.
The scaling controller announces each start and end itself (Events, log lines), where it decides
them; these functions also give it the words, so both say the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from etctl.common._api import ConditionStatus, JobCondition, JobConditionType
from etctl.common._conditions import get_condition
from etctl.common._members import Members
from etctl.common._scaling.scaler import Direction, Scaler
from etctl.common._status import ConditionChange

__all__ = ["ScalerLookup", "ended", "gone", "scaling_change", "started"]

ScalerLookup = Callable[[Direction, str, str], Scaler | None]
"""Finds a scaler by direction, namespace and name (None: there is none)."""

_STARTED = "ScalingStart"
_GONE = "ScalerGone"


def started(kind: str, job: str, scaler: str) -> ConditionChange:
    """``Scaling`` True: the job runs ``scaler`` (its full name)."""
    message = f"{kind} {job} runs {scaler}"
    return ConditionChange(JobConditionType.SCALING, ConditionStatus.TRUE, _STARTED, message)


def ended(scaler: Scaler) -> ConditionChange:
    """``Scaling`` False with the outcome of ``scaler``, which finished."""
    verb = "Out" if scaler.direction is Direction.OUT else "In"
    conditions = scaler.status.conditions
    succeeded = get_condition(conditions, JobConditionType.SCALE_SUCCEEDED)
    if succeeded is not None and succeeded.status is ConditionStatus.TRUE:
        reason = f"Scaling{verb}Succeeded"
        message = f"{scaler.full_name} succeeded: {succeeded.message}"
    else:
        failed = get_condition(conditions, JobConditionType.SCALE_FAILED)
        detail = failed.message if failed is not None else "it did not complete"
        reason = f"Scaling{verb}Failed"
        message = f"{scaler.full_name} failed: {detail}"
    return ConditionChange(JobConditionType.SCALING, ConditionStatus.FALSE, reason, message)


def gone(scaler: str) -> ConditionChange:
    """``Scaling`` False: ``scaler`` (its full name) went before it finished."""
    message = f"{scaler} was deleted before it finished; what it did stays done"
    return ConditionChange(JobConditionType.SCALING, ConditionStatus.FALSE, _GONE, message)


def _named(condition: JobCondition) -> tuple[Direction, str, str] | None:
    """The scaler a ``ScalingStart`` condition's message names, or None."""
    if condition.reason != _STARTED or not condition.message:
        return None
    full = condition.message.rsplit(" ", 1)[-1]
    kind, _, where = full.partition(":")
    namespace, _, name = where.partition("/")
    try:
        direction = Direction(kind)
    except ValueError:
        return None
    return (direction, namespace, name) if namespace and name else None


def scaling_change(
    kind: str,
    job: str,
    members: Members,
    conditions: Sequence[JobCondition],
    lookup: ScalerLookup,
) -> ConditionChange | None:
    """The ``Scaling`` condition the job's status should show (see the module docstring)."""
    if members.scaler:
        return started(kind, job, members.scaler)
    current = get_condition(conditions, JobConditionType.SCALING)
    if current is None or current.status is not ConditionStatus.TRUE:
        return None
    named = _named(current)
    if named is None:
        return None
    scaler = lookup(*named)
    if scaler is not None and scaler.status.finished():
        return ended(scaler)
    direction, namespace, name = named
    return gone(f"{direction.value}:{namespace}/{name}")
