"""The start of a scaler: check the request against the job, then choose the workers.

A scaler starts once, from its first step; everything it decides here is in the status the
transition carries (written before anything is acted on, see :mod:`~etctl.common._scaling.machine`).
Checks, in order, each failing the scaler with its reason and leaving the job untouched:

* the schema's rules the API server cannot express (``InvalidScaler``);
* ScaleIn by names: every name is a worker of the job (``UnknownWorkers``);
* the job's ``minReplicas``/``maxReplicas`` (``MinReplicasExceeded``/``MaxReplicasExceeded``);
* ScaleOut: the new workers' names are DNS labels (``NameTooLong``) and the job's objects can hold
  the grown membership within the cluster's size limits (``MembershipTooLarge``).

Workers chosen: new names after the highest index ever used (a scale-out), the named pods or the
victims of :func:`~etctl.common._scaling.selection.pick_victims` (a scale-in).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from etctl.common._api import ConditionStatus, JobConditionType
from etctl.common._scaling import membership, selection
from etctl.common._scaling.api import (
    ScaleIn,
    ScaleInSpec,
    ScaleOut,
    ScaleOutSpec,
    ScalerStatus,
    ScaleStep,
    validate_scalein,
    validate_scaleout,
)
from etctl.common._scaling.scaler import JobView, Note, Scaler, Transition
from etctl.common._scaling.transitions import failed, listed, named, updated

__all__ = ["start"]


def _bounds_problem(job: JobView, change: int) -> str | None:
    """Why resizing the job's workers by ``change`` would cross its bounds, or None."""
    elastic = job.elasticity
    return selection.bounds_problem(
        size=len(job.targets),
        change=change,
        low=elastic.min_replicas,
        high=elastic.max_replicas,
        kind=job.kind,
        job=job.name,
    )


def _too_long(job: JobView, added: Sequence[str]) -> str | None:
    """Why the new workers' names cannot be used, or None."""
    elastic = job.elasticity
    too_long = [name for name in added if len(name) > membership.NAME_MAX_LENGTH]
    if not too_long:
        return None
    member = elastic.replica_type.lower()
    return (
        f"{job.title} cannot get {member} {too_long[0]}: the name would exceed "
        f"{membership.NAME_MAX_LENGTH} characters ({elastic.name_rule}); a shorter job name "
        f"leaves room for more {member}s"
    )


def _started(
    scaler: Scaler, now: datetime, step: ScaleStep, message: str, **chosen: object
) -> tuple[ScalerStatus, Note]:
    """A scaler starting at ``step`` with the workers it chose (``chosen``), and its Event."""
    status = updated(
        scaler.status,
        now,
        step=step,
        conditions=[(JobConditionType.SCALING, ConditionStatus.TRUE, "ScalingStart", message)],
        **chosen,
    )
    return status, Note("scaler", "Normal", "ScalingStart", message)


def start(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    """Check a scaler that has not started and choose its workers, or fail it (see the module)."""
    spec = scaler.spec
    if isinstance(spec, ScaleOutSpec):
        problems = validate_scaleout(ScaleOut(spec=spec))
    else:
        problems = validate_scalein(ScaleIn(spec=spec))
    if problems:
        return failed(scaler, now, "InvalidScaler", "; ".join(problems))
    if isinstance(spec, ScaleOutSpec):
        return _start_out(scaler, spec, job, now)
    return _start_in(scaler, spec, job, now)


def _start_out(scaler: Scaler, spec: ScaleOutSpec, job: JobView, now: datetime) -> Transition:
    count = spec.to_add.count if spec.to_add and spec.to_add.count else 0
    bound = _bounds_problem(job, count)
    if bound is not None:
        return failed(scaler, now, "MaxReplicasExceeded", bound)
    prefix = job.elasticity.member_prefix
    last = membership.high_water(prefix, job.last_index, job.targets, scaler.chosen)
    added = membership.new_names(prefix, last, count)
    too_long = _too_long(job, added)
    if too_long is not None:
        return failed(scaler, now, "NameTooLong", too_long)
    check = job.elasticity.membership_problem
    too_large = check((*job.targets, *added)) if check is not None and added else None
    if too_large is not None:
        message = f"{job.title} cannot grow to {len(job.targets) + count} workers: {too_large}"
        return failed(scaler, now, "MembershipTooLarge", message)
    message = f"adding {named('worker', added)} to {job.title}"
    status, note = _started(scaler, now, ScaleStep.CREATING, message, add_pods=added)
    return Transition(
        status=status,
        targets=(*job.targets, *added),
        last_index=last + count,
        notes=(note,),
    )


def _start_in(scaler: Scaler, spec: ScaleInSpec, job: JobView, now: datetime) -> Transition:
    to_delete = spec.to_delete
    names = list(to_delete.pod_names or []) if to_delete else []
    if names:
        foreign = selection.foreign_names(job.targets, names)
        if foreign:
            what = "is not a worker" if len(foreign) == 1 else "are not workers"
            message = (
                f"{listed(foreign)} {what} of {job.title} (its workers: {listed(job.targets)})"
            )
            return failed(scaler, now, "UnknownWorkers", message)
        count = len(names)
    else:
        count = to_delete.count if to_delete and to_delete.count else 0
    bound = _bounds_problem(job, -count)
    if bound is not None:
        return failed(scaler, now, "MinReplicasExceeded", bound)
    victims = names or selection.pick_victims(
        job.elasticity.member_prefix, job.targets, job.phases, count
    )
    message = f"removing {named('worker', victims)} from {job.title}"
    status, note = _started(scaler, now, ScaleStep.DRAINING, message, to_delete_pods=victims)
    return Transition(status=status, notes=(note,))
