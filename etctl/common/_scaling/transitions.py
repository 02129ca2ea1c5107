"""Building a scaler's transitions: its next status, its final outcome, how long a step has left.

Pure helpers shared by the start of a scaler (:mod:`~etctl.common._scaling.start`) and its later
steps (:mod:`~etctl.common._scaling.machine`). A status is never modified in place: each helper
returns a copy, with a changed condition's ``phase`` recomputed and a new step's start time set.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from etctl.common._api import ConditionStatus, JobCondition, JobConditionType
from etctl.common._conditions import set_condition
from etctl.common._scaling.api import ScalerStatus, ScaleStep, latest_type
from etctl.common._scaling.scaler import Note, Outcome, Scaler, Transition

__all__ = [
    "concluded",
    "counted",
    "failed",
    "listed",
    "named",
    "remaining",
    "updated",
]


def updated(
    status: ScalerStatus,
    now: datetime,
    *,
    step: ScaleStep | None = None,
    conditions: Sequence[tuple[str, ConditionStatus, str, str]] = (),
    **fields: object,
) -> ScalerStatus:
    """``status`` with ``fields`` set, ``conditions`` applied and, given a ``step``, entered now."""
    update: dict[str, object] = dict(fields)
    kept: list[JobCondition] = list(status.conditions)
    for cond_type, cond_status, reason, message in conditions:
        kept = set_condition(kept, cond_type, cond_status, reason=reason, message=message, now=now)
    if conditions:
        update["conditions"] = kept
        update["phase"] = latest_type(kept)
    if step is not None:
        update["step"] = step
        update["step_start_time"] = now.replace(microsecond=0)
    return status.model_copy(update=update)


def remaining(status: ScalerStatus, timeout: int, now: datetime) -> float:
    """Seconds left of ``timeout`` since the current step started (negative once past)."""
    start = status.step_start_time or now
    return ((start + timedelta(seconds=timeout)) - now).total_seconds()


def listed(names: Sequence[str]) -> str:
    """Names for a message: comma-separated, or ``none``."""
    return ", ".join(names) if names else "none"


def named(noun: str, names: Sequence[str]) -> str:
    """``worker a`` or ``workers a, b``: the noun agrees with the names that follow it."""
    return f"{noun if len(names) == 1 else noun + 's'} {listed(names)}"


def counted(count: int, noun: str) -> str:
    """``1 worker``, ``3 workers``."""
    return f"{count} {noun if count == 1 else noun + 's'}"


def concluded(
    scaler: Scaler, now: datetime, outcome: Outcome, reason: str, message: str, *, event: str = ""
) -> Transition:
    """The Done step: the final condition (ScaleSucceeded or ScaleFailed) and its Event.

    ``event`` is the Event's message when it says more than the condition (default: the same).
    """
    succeeded = outcome is Outcome.SUCCEEDED
    final = JobConditionType.SCALE_SUCCEEDED if succeeded else JobConditionType.SCALE_FAILED
    status = updated(
        scaler.status,
        now,
        step=ScaleStep.DONE,
        conditions=[(final, ConditionStatus.TRUE, reason, message)],
    )
    note = Note("scaler", "Normal" if succeeded else "Warning", reason, event or message)
    return Transition(status=status, notes=(note,), outcome=outcome)


def failed(scaler: Scaler, now: datetime, reason: str, message: str) -> Transition:
    """The Done step of a scaler that failed with ``reason``."""
    return concluded(scaler, now, Outcome.FAILED, reason, message)
