"""Which job goes first in a controller's queue: jobs that run, before jobs that start.

A burst of new jobs is throughput work: each one needs several passes (its pods, its services, its
launcher) and none of them is late by a second. A job that runs is latency work: a ScaleOut a user
is waiting for, a failed worker to replace, a membership to push. :func:`running_first` gives the
controllers of a job kind the priority of each job key, read from the cache at enqueue time:

* :data:`RUNNING_PRIORITY` for a job whose ``Running`` condition is True (and that has not
  finished);
* ``0`` for every other job (starting, suspended, finished, or not cached yet).

Together with the runtime's own rules (a new job's first pass, initial lists and resyncs at low
priority) a controller therefore serves running jobs, then jobs in progress, then new jobs; the
queue's aging bounds how long the lower ones wait, so no job starves.
"""

from __future__ import annotations

from collections.abc import Mapping

from etctl.common._api import ConditionStatus, JobConditionType
from etctl.runtime import CacheReader, ObjectView, PriorityFunc, Request, Resource

__all__ = ["RUNNING_PRIORITY", "is_running", "running_first"]

RUNNING_PRIORITY = 10
"""The queue priority of a running job's key."""

_TRUE = ConditionStatus.TRUE.value
_FINISHED = (JobConditionType.SUCCEEDED.value, JobConditionType.FAILED.value)


def is_running(job: ObjectView) -> bool:
    """True when the job's ``Running`` condition holds and it has not finished."""
    status = job.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    running = False
    for condition in conditions if isinstance(conditions, list) else ():
        if not isinstance(condition, Mapping) or condition.get("status") != _TRUE:
            continue
        kind = condition.get("type")
        if kind in _FINISHED:
            return False
        running = running or kind == JobConditionType.RUNNING.value
    return running


def running_first(cache: CacheReader, jobs: Resource) -> PriorityFunc:
    """The priority of each job key: running jobs first (see the module docstring)."""

    def priority(request: Request) -> int:
        job = cache.get(jobs, request.name, namespace=request.namespace or None)
        return RUNNING_PRIORITY if job is not None and is_running(job) else 0

    return priority
