"""Which job goes first in a controller's queue: running jobs, then the jobs furthest along.

A burst of new jobs is throughput work: each one needs several passes (its pods, its services, its
launcher) and none of them is late by a second. A job that runs is latency work: a ScaleOut a user
is waiting for, a failed worker to replace, a membership to push. :func:`progress_first` gives the
controllers of a job kind the priority of each job key, read from the cached job when the key is
queued:

* :data:`RUNNING_PRIORITY` for a job whose ``Running`` condition is True (and that has not
  finished);
* otherwise the number of its pods that run, below :data:`RUNNING_PRIORITY`: as its status last
  counted them (``active`` over its replica types), or, when every pod it controls in the cache
  runs, as many as there are, if that is more. A job close to running is served before one that
  is just starting, so a burst of jobs finishes one after another (each job's launcher starts
  while the next ones' workers are created) instead of all together at the end. The cache, not
  only the status: the status is counted by the very controller whose queue this orders, so
  during a burst a job whose pods all run would rank with the new jobs until that controller got
  round to it; only a job whose pods *all* run, so that one status write reports it running
  instead of one per pod that starts;
* ``0`` for every other job (not started, suspended, finished, or not cached yet).

Together with the runtime's own rules (a new job's first pass, initial lists and resyncs at low
priority) a controller serves running jobs, then jobs in progress, then new jobs; the queue's aging
bounds how long any of them waits, so no job starves.
"""

from __future__ import annotations

from collections.abc import Mapping

from etctl.common._api import ConditionStatus, JobConditionType
from etctl.runtime import (
    PODS,
    CacheReader,
    NotCachedError,
    ObjectView,
    PriorityFunc,
    Request,
    Resource,
    objects,
    podview,
)

__all__ = ["RUNNING_PRIORITY", "is_running", "progress_first", "running_pods"]

RUNNING_PRIORITY = 10
"""The queue priority of a running job's key; jobs in progress rank below it."""

_TRUE = ConditionStatus.TRUE.value
_FINISHED = (JobConditionType.SUCCEEDED.value, JobConditionType.FAILED.value)


def _true_conditions(job: ObjectView) -> set[str]:
    status = job.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return {
        str(condition.get("type"))
        for condition in (conditions if isinstance(conditions, list) else ())
        if isinstance(condition, Mapping) and condition.get("status") == _TRUE
    }


def is_running(job: ObjectView) -> bool:
    """True when the job's ``Running`` condition holds and it has not finished."""
    true = _true_conditions(job)
    return JobConditionType.RUNNING.value in true and not true.intersection(_FINISHED)


def running_pods(job: ObjectView) -> int:
    """The job's running pods, as ``status.replicaStatuses[*].active`` counted them."""
    status = job.get("status")
    replicas = status.get("replicaStatuses") if isinstance(status, Mapping) else None
    total = 0
    for entry in replicas.values() if isinstance(replicas, Mapping) else ():
        active = entry.get("active") if isinstance(entry, Mapping) else None
        if isinstance(active, int) and not isinstance(active, bool) and active > 0:
            total += active
    return total


def progress_first(cache: CacheReader, jobs: Resource) -> PriorityFunc:
    """The priority of each job key of ``jobs`` (see the module docstring)."""

    def priority(request: Request) -> int:
        job = cache.get(jobs, request.name, namespace=request.namespace or None)
        if job is None:
            return 0
        true = _true_conditions(job)
        if true.intersection(_FINISHED):
            return 0
        if JobConditionType.RUNNING.value in true:
            return RUNNING_PRIORITY
        running = max(running_pods(job), _running_children(cache, job))
        return min(running, RUNNING_PRIORITY - 1)

    return priority


def _running_children(cache: CacheReader, job: ObjectView) -> int:
    """How many pods the job has in the cache if every one of them runs, else 0.

    Only a job whose pods all run is raised (its next reconcile can report it running in one
    status write); one whose pods are still starting keeps its place, so the controller does not
    report each start on its own.
    """
    try:
        pods = cache.controlled_by(PODS, objects.uid(job))
    except NotCachedError:
        return 0
    if all(podview.phase(pod) == "Running" for pod in pods):
        return len(pods)
    return 0
