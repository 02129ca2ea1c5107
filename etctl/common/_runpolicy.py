"""The run policy's rules, as pure functions: cleanup, TTL and the active deadline.

``cleanPodPolicy`` (what a *finished* job deletes; kubeflow's documented meaning):

* ``All``: every pod of the job, whatever its phase;
* ``Running``: pods in phase ``Running`` or ``Pending`` (a pending pod would start running once
  scheduled, so it counts as running). ``Succeeded``, ``Failed`` and ``Unknown`` pods stay, with
  their logs;
* ``None``: nothing.

The service of a deleted pod (same name) goes with it. The PodGroup of a finished job is always
deleted. Other children (extra objects) stay until the job itself is deleted.

A job that is suspended, or that fails because it passed ``activeDeadlineSeconds`` or
``backoffLimit``, loses *all* its pods and services whatever the policy: nothing of it may keep
running (kubeflow applies the policy only to jobs already marked finished). The failure's reason
says so durably: when a delete of that round failed, the retry finds a finished job and deletes
what is left, still whatever the policy.

Timers are computed from status timestamps and returned as delays, so the reconcile asks for a
``requeue_after`` and the check fires with no other event (kubeflow's no-op ``AddAfter`` never
fired the deadline: trainer#3358):

* the deadline is ``startTime + activeDeadlineSeconds``; ``startTime`` is reset when a suspended
  job resumes, so time spent suspended does not count;
* the TTL expires at ``completionTime + ttlSecondsAfterFinished``, when the job is deleted.

The steps below apply these rules to an observation (steps 3 to 5 of the reconcile), each returning
what it wants (:class:`~etctl.common._plan.Step`): :func:`finish`, :func:`suspend`, :func:`start`
(a resumed job starts again) and :func:`limits` (the deadline, the backoff limit and whole-job
restarts: when the plugin's judgement says Failed and ``restarts_whole`` allows it within the
backoff budget, every pod is deleted and recreated instead of failing the job; each such round
costs one restart plus the in-place restarts the deleted pods had, counted once the deletes went
through).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from etctl.common._api import CleanPodPolicy, ConditionStatus, JobConditionType
from etctl.common._conditions import get_condition, is_true
from etctl.common._observe import Observed
from etctl.common._plan import (
    Announcement,
    Change,
    Delete,
    Stage,
    Step,
    Suspension,
    WholeRestart,
    sequential,
    wake_in,
)
from etctl.common._plugin import Verdict
from etctl.common._restarts import restart_budget
from etctl.common._status import ConditionChange
from etctl.runtime import PODS, SERVICES, ObjectView, Resource, objects, podview

__all__ = [
    "LIMIT_REASONS",
    "deadline_remaining",
    "delete_all",
    "finish",
    "limits",
    "pods_to_clean",
    "start",
    "suspend",
    "ttl_remaining",
]


_RUNNING_PHASES = frozenset({"Running", "Pending"})
# Failures that take every pod and service with them, whatever cleanPodPolicy says.
LIMIT_REASONS = frozenset({"DeadlineExceeded", "BackoffLimitExceeded"})


def pods_to_clean(pods: Iterable[ObjectView], policy: CleanPodPolicy) -> list[ObjectView]:
    """The pods a finished job deletes under ``policy`` (see the module docstring)."""
    if policy is CleanPodPolicy.NONE:
        return []
    if policy is CleanPodPolicy.ALL:
        return list(pods)
    return [pod for pod in pods if podview.phase(pod) in _RUNNING_PHASES]


def _remaining(start: datetime | None, seconds: int | None, now: datetime) -> float | None:
    if start is None or seconds is None:
        return None
    return ((start + timedelta(seconds=seconds)) - now).total_seconds()


def deadline_remaining(
    start_time: datetime | None, active_deadline_seconds: int | None, now: datetime
) -> float | None:
    """Seconds until the active deadline passes (<= 0: passed), or None when there is none."""
    return _remaining(start_time, active_deadline_seconds, now)


def ttl_remaining(
    completion_time: datetime | None, ttl_seconds_after_finished: int | None, now: datetime
) -> float | None:
    """Seconds until a finished job is deleted (<= 0: now), or None when it is kept."""
    return _remaining(completion_time, ttl_seconds_after_finished, now)


def delete_all(
    seen: Observed[Any], *, pods: bool = True, services: bool = True
) -> tuple[Delete, ...]:
    """Deletes of every live pod and/or service of the job (suspension, deadline, backoff)."""
    found: list[Delete] = []
    if pods:
        found.extend(Delete(PODS, pod) for pod in seen.live_pods())
    if services:
        found.extend(Delete(SERVICES, svc) for svc in seen.live_services())
    return tuple(found)


def _podgroup_dropped(seen: Observed[Any], podgroups: Resource | None) -> tuple[Stage, ...]:
    if podgroups is None or seen.podgroup is None:
        return ()
    return sequential([Delete(podgroups, seen.podgroup)], name="podgroup")


def finish(seen: Observed[Any], *, podgroups: Resource | None) -> Step:
    """A finished job: clean up per cleanPodPolicy, drop the PodGroup, delete it past its TTL."""
    policy = seen.job.run_policy()
    failed = get_condition(seen.job.status.conditions, JobConditionType.FAILED)
    if failed is not None and failed.reason in LIMIT_REASONS:
        deletes = delete_all(seen)
    else:
        services = {objects.name(s): s for s in seen.services}
        deletes = tuple(
            # The service first: a pod whose delete failed is found again by the next round,
            # which deletes what is left; a service whose pod is gone would never be found again.
            Delete(PODS, pod, first=services.get(objects.name(pod)))
            for pod in pods_to_clean(seen.live_pods(), policy.clean_pod_policy)
        )
    remaining = ttl_remaining(
        seen.job.status.completion_time, policy.ttl_seconds_after_finished, seen.now
    )
    expired = remaining is not None and remaining <= 0
    return Step(
        stages=sequential(deletes, name="cleanup") + _podgroup_dropped(seen, podgroups),
        timers=() if expired else wake_in(remaining),
        judged=False,
        halt=True,
        delete_job=expired,
    )


def suspend(seen: Observed[Any], *, podgroups: Resource | None) -> Step:
    """A suspended job: no pods, no services, no PodGroup; Running False and Suspended True.

    The conditions are recorded once every delete went through: a job is not said to be
    suspended while a delete of its pods failed (the retry deletes what is left, then says so).
    """
    conditions = seen.job.status.conditions
    message = f"{seen.kind} {seen.name} is suspended."
    reason = f"{seen.kind}Suspended"
    changes: list[ConditionChange] = []
    if is_true(conditions, JobConditionType.RUNNING):
        changes.append(
            ConditionChange(JobConditionType.RUNNING, ConditionStatus.FALSE, reason, message)
        )
    if not is_true(conditions, JobConditionType.SUSPENDED):
        changes.append(
            ConditionChange(JobConditionType.SUSPENDED, ConditionStatus.TRUE, reason, message)
        )
    deletes = Stage("sequential", delete_all(seen), name="suspend")
    return Step(
        stages=(deletes, *_podgroup_dropped(seen, podgroups)),
        facts=(Suspension(tuple(changes), stage=0),),
        judged=False,
        halt=True,
    )


def start(seen: Observed[Any]) -> Step:
    """Stamp the start time; a resumed job starts again (its deadline counts from now)."""
    if is_true(seen.job.status.conditions, JobConditionType.SUSPENDED):
        resumed = ConditionChange(
            JobConditionType.SUSPENDED,
            ConditionStatus.FALSE,
            f"{seen.kind}Resumed",
            f"{seen.kind} {seen.name} is resumed.",
        )
        return Step(facts=(Change(resumed),), start_time=seen.now)
    return Step(start_time=seen.job.status.start_time or seen.now)


def _terminate(seen: Observed[Any], reason: str, message: str, podgroups: Resource | None) -> Step:
    failed = ConditionChange(JobConditionType.FAILED, ConditionStatus.TRUE, reason, message)
    return Step(
        stages=sequential(delete_all(seen), name="terminate") + _podgroup_dropped(seen, podgroups),
        facts=(Change(failed),),
        judged=False,
        halt=True,
        acted=(failed,),
    )


def limits(
    seen: Observed[Any],
    *,
    start_time: datetime | None,
    podgroups: Resource | None,
    judgement: Callable[[], Verdict | None] | None,
) -> Step:
    """Fail on the deadline or the backoff limit, or restart the whole job.

    Args:
        seen: the observation.
        start_time: the job's start time as this reconcile sets it.
        podgroups: the gang scheduler's PodGroup resource, if any.
        judgement: the plugin's judgement of the observed job, asked only when the kind restarts
            the whole job after a failure (None: it never does).
    """
    policy = seen.job.run_policy()
    seconds = policy.active_deadline_seconds
    remaining = deadline_remaining(start_time, seconds, seen.now)
    if remaining is not None and remaining <= 0:
        message = (
            f"{seen.kind} {seen.name} failed: it was active longer than its deadline of {seconds} s"
        )
        return _terminate(seen, "DeadlineExceeded", message, podgroups)
    timers = wake_in(remaining)
    limit = policy.backoff_limit
    budget = restart_budget(limit, seen.job.status.restart_count, seen.live_pods())
    if budget is not None and budget < 0:
        message = (
            f"{seen.kind} {seen.name} failed: it restarted {limit - budget} times, more than "
            f"its backoffLimit of {limit}"
        )
        return _terminate(seen, "BackoffLimitExceeded", message, podgroups)
    if judgement is None:
        return Step(timers=timers)
    verdict = judgement()
    if verdict is None or verdict.condition is not JobConditionType.FAILED:
        return Step(timers=timers)
    if budget is not None and budget <= 0:
        message = (
            f"{seen.kind} {seen.name} has failed after {limit} whole-job restarts, its "
            f"backoffLimit: {verdict.message}"
        )
        return _terminate(seen, "BackoffLimitExceeded", message, podgroups)
    pods = seen.live_pods()
    extra = sum(podview.restarts(pod) for pod in pods)
    count = seen.job.status.restart_count + 1 + extra
    of = f" of {limit}" if limit is not None else ""
    reason = f"{seen.kind}Restarting"
    message = (
        f"{seen.kind} {seen.name} is restarting all its pods (restart {count}{of}): "
        f"{verdict.message}"
    )
    restarting = ConditionChange(JobConditionType.RESTARTING, ConditionStatus.TRUE, reason, message)
    deletes = Stage("sequential", delete_all(seen, services=False), name="restart")
    announced = Announcement("job restarting", reason, message)
    return Step(
        stages=(deletes,),
        facts=(WholeRestart(extra, restarting, stage=0, announce=announced),),
        timers=timers,
        judged=False,
        halt=True,
    )
