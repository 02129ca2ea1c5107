"""The ``Scaling`` condition of an elastic job, rendered by the job controller (pure).

The scaling controller writes only the fields it owns (the membership and the scaler being run,
:class:`~etctl.common.MemberFields`); the job's conditions and phase have one writer, the job
controller, which renders ``Scaling`` from what the scaling controller wrote and what the scalers
say:

* a scaler named in the job's scaler field: ``Scaling`` True, reason ``ScalingStart``, the message
  naming the scaler (``<Kind> <job> runs ScaleOut:<namespace>/<name>``);
* none named while ``Scaling`` is True and the scaler it names is gone, or not finished (deleted
  while it ran): ``ScalerGone``;
* otherwise the job's latest scaler that ran (scalers run one at a time, oldest first, so the last
  in that order among those the scaling controller picked) says how scaling ended: its outcome is
  the reason (``Scaling<Out|In>Succeeded`` or ``...Failed``, with the scaler's own message). A
  scaler that started and ended between two reconciles of the job is shown all the same;
* a job none of whose scalers ever ran has no ``Scaling`` condition.

So the condition is a function of stored state: any reconcile, after any restart, renders the same.
The scaling controller announces each start and end itself (Events, log lines), where it decides
them; these functions also give it the words, so both say the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from etctl.common._api import ConditionStatus, JobCondition, JobConditionType
from etctl.common._conditions import get_condition
from etctl.common._members import Members
from etctl.common._scaling.observe import ObservedScaler
from etctl.common._scaling.scaler import Direction, Scaler
from etctl.common._scaling.selection import fifo
from etctl.common._status import ConditionChange

__all__ = ["ended", "gone", "scaling_change", "started"]

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


def _named(condition: JobCondition) -> str | None:
    """The full name of the scaler a ``ScalingStart`` condition's message names, or None."""
    if condition.reason != _STARTED or not condition.message:
        return None
    full = condition.message.rsplit(" ", 1)[-1]
    kind, _, where = full.partition(":")
    namespace, _, name = where.partition("/")
    if kind not in {d.value for d in Direction} or not namespace or not name:
        return None
    return full


# Reasons of scalers failed without ever being the job's active one (steps.py's closing).
_NEVER_PICKED = frozenset({"JobFinished", "JobNotElastic"})


def _picked(scaler: Scaler) -> bool:
    """Whether the scaling controller ever made ``scaler`` the job's active one.

    A picked scaler carries its own ``Scaling`` condition, or failed its start; those failed
    unstarted because the job finished or cannot be resized were never picked.
    """
    if get_condition(scaler.status.conditions, JobConditionType.SCALING) is not None:
        return True
    failed = get_condition(scaler.status.conditions, JobConditionType.SCALE_FAILED)
    return failed is not None and failed.reason not in _NEVER_PICKED


def scaling_change(
    kind: str,
    job: str,
    members: Members,
    conditions: Sequence[JobCondition],
    scalers: Sequence[ObservedScaler],
) -> ConditionChange | None:
    """The ``Scaling`` condition the job's status should show (see the module docstring).

    Args:
        kind: the job's kind.
        job: the job's name.
        members: the job's members as its status records them (its scaler field).
        conditions: the job's conditions as stored.
        scalers: the scalers the job controls.
    """
    if members.scaler:
        return started(kind, job, members.scaler)
    by_name = {o.scaler.full_name: o.scaler for o in scalers}
    current = get_condition(conditions, JobConditionType.SCALING)
    if current is not None and current.status is ConditionStatus.TRUE:
        named = _named(current)
        running = by_name.get(named) if named is not None else None
        if named is not None and (running is None or not running.status.finished()):
            return gone(named)
    picked = {o.queued: o.scaler for o in scalers if _picked(o.scaler)}
    if not picked:
        return None
    latest = picked[fifo(picked)[-1]]
    return ended(latest) if latest.status.finished() else gone(latest.full_name)
