"""The membership a job records now, around its active scaler (pure).

:func:`settle` computes what the scaling controller writes to the job's status on every
reconcile, before and after each step of the active scaler:

* a job with no targets that never had any (no ``lastWorkerIndex``) gets indices
  ``0..replicas-1``, the desired count clamped into its bounds;
* members the plugin asks to replace get new names (:func:`~etctl.common._scaling.membership.
  replace`), except the workers the active scaler chose (a scale-out's failing worker fails the
  scale-out; a scale-in's victim goes anyway); a name never exceeds 63 characters (the kind's
  ``name_rule``): past that, a replacement reuses a name that left the job;
* the hostfile is every running target but those the active scaler keeps out: a scale-in's
  victims from the Draining step on, a scale-out's new workers until it admits them (Joining).
  While nothing uses the membership (``membership_in_use`` False), members that stopped running
  stay in it as long as they are targets.
"""

from __future__ import annotations

from dataclasses import dataclass

from etctl.common._scaling import membership, selection
from etctl.common._scaling.api import ScaleStep
from etctl.common._scaling.scaler import Direction, JobView, Scaler

__all__ = ["Settlement", "settle"]


@dataclass(frozen=True, slots=True)
class Settlement:
    """The membership a job should record now."""

    targets: tuple[str, ...]
    current: tuple[str, ...]
    last_index: int
    replaced: tuple[membership.Replacement, ...] = ()
    unreplaced: tuple[str, ...] = ()
    """Members to replace for which no name that fits is free now."""


def _excluded(active: Scaler | None) -> tuple[frozenset[str], frozenset[str]]:
    """``(leaving, joining)``: workers the active scaler keeps out of the hostfile."""
    if active is None or active.status.finished():
        return frozenset(), frozenset()
    chosen = frozenset(active.chosen)
    step = active.status.step
    if active.direction is Direction.IN:
        leaving = step in (ScaleStep.DRAINING, ScaleStep.SCRIPT, ScaleStep.DELETING)
        return (chosen if leaving else frozenset()), frozenset()
    joining = step in (None, ScaleStep.CREATING, ScaleStep.ROLLING_BACK)
    return frozenset(), (chosen if joining else frozenset())


def settle(job: JobView, active: Scaler | None) -> Settlement:
    """Initial targets, replacements and the hostfile, around the ``active`` scaler.

    * A job with no targets that never had any (no ``lastWorkerIndex``) gets indices
      ``0..replicas-1``, the desired count clamped into its bounds.
    * Members the plugin asks to replace get new names, except the workers the active scaler
      chose (a scale-out's failing worker fails the scale-out; a scale-in's victim goes anyway).
    * The hostfile is every running target but those the active scaler keeps out. While nothing
      uses the membership (``membership_in_use`` False), members that stopped running stay in it
      as long as they are targets.
    """
    elastic = job.elasticity
    prefix = elastic.member_prefix
    targets = list(job.targets)
    protected = set(active.chosen) if active is not None and not active.status.finished() else set()
    last = membership.high_water(prefix, job.last_index, targets, protected)
    if not targets and job.last_index is None:
        count = selection.clamp(elastic.replicas, elastic.min_replicas, elastic.max_replicas)
        targets = membership.initial_targets(prefix, count)
        last = count - 1
    doomed = elastic.replace - protected
    targets, last, swaps = membership.replace(
        prefix,
        targets,
        last,
        doomed,
        max_length=membership.NAME_MAX_LENGTH,
        taken=job.present | protected,
    )
    left = {swap.old for swap in swaps}
    unreplaced = tuple(
        n for n in membership.sort_members(prefix, doomed) if n in targets and n not in left
    )
    leaving, joining = _excluded(active)
    running = {name for name, phase in job.phases.items() if phase == "Running"}
    if not elastic.membership_in_use:
        running |= set(job.current)
    current = membership.members(prefix, targets, running, leaving=leaving, joining=joining)
    return Settlement(tuple(targets), tuple(current), last, tuple(swaps), unreplaced)
