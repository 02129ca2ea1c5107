"""The job's status: computed by pure functions, written once per reconcile as a merge patch.

The controller owns these status fields and nothing else: ``conditions``, ``replicaStatuses``,
``startTime``, ``completionTime`` and ``restartCount``, plus whatever fields an
:class:`~etctl.common.ExtendsStatus` plugin returns. Fields it does not own (a
``lastReconcileTime`` another operator wrote, say) are left alone. ``lastReconcileTime`` is never
written: a status write that changes only a timestamp triggers the job's watch, which reconciles
and writes again, forever.

Replica statuses (:func:`replica_statuses`) count the pods of each replica type as kubeflow's
``updateJobReplicaStatuses`` does: ``active`` is the Running pods (a Pending pod, one just created
included, is not counted at all), ``failed`` the Failed pods plus the Running pods being deleted
(a pod on a lost node never reaches Failed), with the label ``selector`` of its pods. Deletions
the controller makes on purpose do not read as failures: pods the reconcile itself deletes are not
counted, and neither are pods being deleted from slots the job no longer plans (a scale down) or
while the job is suspended. ``succeeded`` counts *slots*, not pods: ``completedIndexes``
remembers (as batch/v1 Job does) the index of every slot whose pod succeeded, so a completed pod
that was garbage-collected or deleted by hand stays counted, the verdict does not go back on it,
and its slot is not run again (kubeflow recreated such pods and re-ran finished work:
trainer#1186). Indexes of slots the job no longer plans (after a scale down) are dropped; a
whole-job restart forgets them all.

Conditions (:func:`compute_status`) are the current conditions with an ordered list of
:class:`ConditionChange` applied by :func:`~etctl.common._conditions.set_job_condition` (so nothing
changes once the job finished). ``completionTime`` is stamped when the conditions first say
Succeeded or Failed.

:func:`status_patch` turns the wanted owned fields into an RFC 7386 merge patch against the
object's current status, or None when nothing changed: a reconcile that changes nothing writes
nothing.

A :class:`StatusDelta` is the part of a reconcile's status that records what the reconcile *did*
and that the world no longer shows once it is done: restarts (the deleted pods and their in-place
restarts are gone), a failure enforced by deleting every pod (the restarts that exceeded the limit
went with them), completions a whole-job restart dropped. When the status write meets a Conflict,
the controller applies the delta to the job as it is now (:meth:`StatusDelta.apply`) instead of
losing it; everything else in the status is judged again by the next reconcile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from etctl.common._api import ConditionStatus, JobStatus, ReplicaStatus, to_timestamp
from etctl.common._conditions import is_finished, set_job_condition
from etctl.common._labels import replica_index_of
from etctl.common._plugin import ReplicaRef
from etctl.common._slots import format_indexes, parse_indexes
from etctl.runtime import ObjectView, objects, podview

__all__ = [
    "OWNED_FIELDS",
    "ConditionChange",
    "StatusDelta",
    "compute_status",
    "merge_diff",
    "parse_status",
    "replica_statuses",
    "status_patch",
    "stored_status",
]

OWNED_FIELDS = ("conditions", "replicaStatuses", "startTime", "completionTime", "restartCount")
"""The status fields (JSON names) the controller computes and writes."""

# A field absent from the stored status reads as its empty value: no write just to spell it out.
_EMPTY: dict[str, Any] = {"conditions": [], "replicaStatuses": {}, "restartCount": 0}


@dataclass(frozen=True, slots=True)
class ConditionChange:
    """One condition to set, in the order the reconcile decided it."""

    type: str
    status: ConditionStatus
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class StatusDelta:
    """What a reconcile did that only the status remembers (see the module docstring)."""

    restarts: int = 0
    """Added to ``restartCount``."""
    conditions: tuple[ConditionChange, ...] = ()
    """Conditions that describe what was done (applied in order)."""
    forget_completions: bool = False
    """Every pod was deleted for a whole-job restart: recorded completions no longer hold."""

    def __bool__(self) -> bool:
        return bool(self.restarts or self.conditions or self.forget_completions)

    def apply(self, current: JobStatus, *, now: datetime) -> JobStatus:
        """``current`` with the delta applied (the rest of it unchanged)."""
        replicas = dict(current.replica_statuses)
        if self.forget_completions:
            replicas = {
                rtype: status.model_copy(update={"succeeded": 0, "completed_indexes": None})
                for rtype, status in replicas.items()
            }
        return compute_status(
            current,
            changes=self.conditions,
            replicas=replicas,
            start_time=current.start_time,
            restart_count=current.restart_count + self.restarts,
            now=now,
        )


def stored_status(raw: ObjectView) -> dict[str, Any]:
    """The ``status`` stanza of a raw job (empty when it has none)."""
    status = raw.get("status")
    return dict(status) if isinstance(status, Mapping) else {}


def parse_status(raw: ObjectView) -> JobStatus:
    """The common status of a raw job, or an empty one when it does not parse."""
    try:
        return JobStatus.model_validate(stored_status(raw))
    except ValidationError:
        return JobStatus()


def replica_statuses(
    pods: Mapping[str, Iterable[ObjectView]],
    *,
    plans: Mapping[str, Sequence[ReplicaRef] | None],
    recorded: Mapping[str, ReplicaStatus],
    selectors: Mapping[str, str],
    restarted: bool = False,
    suspended: bool = False,
) -> dict[str, ReplicaStatus]:
    """The pod counts of every replica type in ``plans`` (see the module docstring).

    Args:
        pods: the pods by replica type, those being deleted included, after this reconcile's
            creations (pods it deleted left out).
        plans: the slots of every replica type the job has (None: not planned yet, so recorded
            completions are not filtered by slot).
        recorded: the replica statuses the job's status records now.
        selectors: the selector string of every replica type.
        restarted: the whole job restarted in this reconcile: recorded completions are dropped.
        suspended: the job is suspended: the pods being deleted are its own doing, not failures.
    """
    out: dict[str, ReplicaStatus] = {}
    for rtype, plan in plans.items():
        before = recorded.get(rtype)
        done = set() if restarted or before is None else parse_indexes(before.completed_indexes)
        planned = {ref.index for ref in plan} if plan is not None else None
        if planned is not None:
            done &= planned
        active = failed = unindexed = 0
        for pod in pods.get(rtype, ()):
            phase = podview.phase(pod)
            if objects.is_terminating(pod):
                wanted = not suspended and (planned is None or replica_index_of(pod) in planned)
                if wanted and phase in ("Running", "Failed"):
                    failed += 1
            elif phase == "Running":
                active += 1
            elif phase == "Failed":
                failed += 1
            elif phase == "Succeeded":
                index = replica_index_of(pod)
                if index is None:
                    unindexed += 1
                else:
                    done.add(index)
        out[rtype] = ReplicaStatus(
            active=active,
            succeeded=len(done) + unindexed,
            failed=failed,
            selector=selectors.get(rtype),
            completed_indexes=format_indexes(done) or None,
        )
    return out


def compute_status(
    current: JobStatus,
    *,
    changes: Sequence[ConditionChange],
    replicas: Mapping[str, ReplicaStatus],
    start_time: datetime | None,
    restart_count: int,
    now: datetime,
) -> JobStatus:
    """The job's new base status.

    Args:
        current: the status as stored.
        changes: condition changes, applied in order.
        replicas: the new replica statuses.
        start_time: the new start time (None keeps none).
        restart_count: the new restart count.
        now: the reconcile's time.
    """
    conditions = list(current.conditions)
    for change in changes:
        conditions = set_job_condition(
            conditions,
            change.type,
            change.status,
            reason=change.reason,
            message=change.message,
            now=now,
        )
    completion = current.completion_time
    if completion is None and is_finished(conditions):
        completion = to_timestamp(now)
    return JobStatus(
        conditions=conditions,
        replica_statuses=dict(replicas),
        start_time=start_time,
        completion_time=completion,
        last_reconcile_time=current.last_reconcile_time,
        restart_count=restart_count,
    )


def merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The RFC 7386 merge patch that turns ``old`` into ``new`` (nulls remove keys)."""
    patch: dict[str, Any] = {}
    for key, value in new.items():
        before = old.get(key)
        if key not in old:
            patch[key] = value
        elif isinstance(value, Mapping) and isinstance(before, Mapping):
            nested = merge_diff(before, value)
            if nested:
                patch[key] = nested
        elif before != value:
            patch[key] = value
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


def status_patch(
    stored: Mapping[str, Any], status: JobStatus, extra: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The merge patch of the ``status`` stanza, or None when the owned fields are current.

    Args:
        stored: the object's ``status`` as the server has it (may be empty).
        status: the computed base status.
        extra: the plugin's own status fields (JSON names; a None value removes the field). They
            never override an owned field.
    """
    rendered = status.to_dict()
    wanted: dict[str, Any] = {k: rendered[k] for k in OWNED_FIELDS if k in rendered}
    wanted.update({k: v for k, v in extra.items() if k not in OWNED_FIELDS})
    have: dict[str, Any] = {}
    for key in wanted:
        if key in stored:
            have[key] = stored[key]
        elif key in _EMPTY:
            have[key] = _EMPTY[key]
    for key in OWNED_FIELDS:
        if key in stored and stored[key] is not None and key not in wanted:
            have[key] = stored[key]
    target = {k: v for k, v in wanted.items() if v is not None}
    return merge_diff(have, target) or None
