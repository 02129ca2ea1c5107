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

:class:`RunPolicyEnforcer` applies these rules to a :class:`~etctl.common._round.Round` (steps 3 to
5 of the reconcile): finishing, suspension and resumption, the deadline, the backoff limit and
whole-job restarts (:class:`~etctl.common.RestartsWholeJob`: when the plugin's verdict says Failed
and the backoff budget allows, every pod is deleted and recreated instead of failing the job; each
such round costs one restart plus the in-place restarts the deleted pods had).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from etctl.common._api import CleanPodPolicy, ConditionStatus, JobConditionType
from etctl.common._conditions import get_condition, is_true
from etctl.common._control import ChildControl
from etctl.common._plugin import Capabilities, JobPlugin
from etctl.common._podgroups import PodGroupSync
from etctl.common._replicas import delete_all, delete_child, warn
from etctl.common._restarts import restart_budget
from etctl.common._round import Round
from etctl.common._status import ConditionChange
from etctl.runtime import PODS, SERVICES, ObjectView, objects, podview

__all__ = ["RunPolicyEnforcer", "deadline_remaining", "pods_to_clean", "ttl_remaining"]


_RUNNING_PHASES = frozenset({"Running", "Pending"})
# Failures that take every pod and service with them, whatever cleanPodPolicy says.
_LIMIT_REASONS = frozenset({"DeadlineExceeded", "BackoffLimitExceeded"})


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


class RunPolicyEnforcer:
    """Steps 3-5 of the reconcile: finish, suspend or resume, deadline, backoff, whole restarts.

    Args:
        plugin: the job kind (its verdict decides whole-job restarts).
        capabilities: the plugin's capabilities.
        control: writes children.
        podgroups: the PodGroup sync, when gang scheduling is on.
    """

    def __init__(
        self,
        plugin: JobPlugin[Any],
        capabilities: Capabilities,
        control: ChildControl,
        podgroups: PodGroupSync | None,
    ) -> None:
        self._plugin = plugin
        self._caps = capabilities
        self._control = control
        self._podgroups = podgroups

    async def finish(self, rnd: Round[Any]) -> float | None:
        """Clean a finished job up per cleanPodPolicy; seconds until its TTL deletes it."""
        rnd.judge = False
        policy = rnd.job.run_policy()
        failed = get_condition(rnd.job.status.conditions, JobConditionType.FAILED)
        if failed is not None and failed.reason in _LIMIT_REASONS:
            await delete_all(self._control, rnd)
        else:
            services = {objects.name(s): s for s in rnd.services}
            for pod in pods_to_clean(rnd.live_pods(), policy.clean_pod_policy):
                await self._delete(rnd, pod, services.get(objects.name(pod)))
        await self._drop_podgroup(rnd)
        return ttl_remaining(
            rnd.job.status.completion_time, policy.ttl_seconds_after_finished, rnd.now
        )

    async def suspend(self, rnd: Round[Any]) -> None:
        """Stop a suspended job: no pods, no services, no PodGroup; Running False, Suspended.

        The conditions are recorded once every delete went through: a job is not said to be
        suspended while a delete of its pods failed (the retry deletes what is left, then says so).
        """
        rnd.judge = False
        before = len(rnd.errors)
        await delete_all(self._control, rnd)
        await self._drop_podgroup(rnd)
        if len(rnd.errors) > before:
            return
        conditions = rnd.job.status.conditions
        message = f"{rnd.kind} {rnd.name} is suspended."
        reason = f"{rnd.kind}Suspended"
        if is_true(conditions, JobConditionType.RUNNING):
            rnd.change(JobConditionType.RUNNING, ConditionStatus.FALSE, reason, message)
        if not is_true(conditions, JobConditionType.SUSPENDED):
            rnd.change(JobConditionType.SUSPENDED, ConditionStatus.TRUE, reason, message)

    def start(self, rnd: Round[Any]) -> None:
        """Stamp the start time; a resumed job starts again (its deadline counts from now)."""
        if is_true(rnd.job.status.conditions, JobConditionType.SUSPENDED):
            rnd.change(
                JobConditionType.SUSPENDED,
                ConditionStatus.FALSE,
                f"{rnd.kind}Resumed",
                f"{rnd.kind} {rnd.name} is resumed.",
            )
            rnd.start_time = rnd.now
        elif rnd.start_time is None:
            rnd.start_time = rnd.now

    async def enforce_limits(self, rnd: Round[Any]) -> bool:
        """Fail on the deadline or the backoff limit, or restart the whole job; True if so."""
        policy = rnd.job.run_policy()
        seconds = policy.active_deadline_seconds
        remaining = deadline_remaining(rnd.start_time, seconds, rnd.now)
        if remaining is not None and remaining <= 0:
            message = (
                f"{rnd.kind} {rnd.name} failed: it was active longer than its deadline of "
                f"{seconds} s"
            )
            await self._terminate(rnd, "DeadlineExceeded", message)
            return True
        rnd.wake_in(remaining)
        limit = policy.backoff_limit
        budget = restart_budget(limit, rnd.restart_count, rnd.live_pods())
        if budget is not None and budget < 0:
            message = (
                f"{rnd.kind} {rnd.name} failed: it restarted {limit - budget} times, more than "
                f"its backoffLimit of {limit}"
            )
            await self._terminate(rnd, "BackoffLimitExceeded", message)
            return True
        return await self._restart_whole_job(rnd, budget)

    async def _restart_whole_job(self, rnd: Round[Any], budget: int | None) -> bool:
        restarter = self._caps.restart
        if restarter is None or not restarter.restarts_on_failure(rnd.job):
            return False
        verdict = self._plugin.verdict(rnd.job, rnd.state())
        if verdict is None or verdict.condition is not JobConditionType.FAILED:
            return False
        limit = rnd.job.run_policy().backoff_limit
        if budget is not None and budget <= 0:
            message = (
                f"{rnd.kind} {rnd.name} has failed after {limit} whole-job restarts, its "
                f"backoffLimit: {verdict.message}"
            )
            await self._terminate(rnd, "BackoffLimitExceeded", message)
            return True
        pods = rnd.live_pods()
        extra = sum(podview.restarts(pod) for pod in pods)
        before = len(rnd.errors)
        await delete_all(self._control, rnd, services=False)
        rnd.judge = False
        if len(rnd.errors) > before:
            return True
        rnd.restart_count += 1 + extra
        rnd.restarts += 1
        rnd.restarted_whole = True
        of = f" of {limit}" if limit is not None else ""
        message = (
            f"{rnd.kind} {rnd.name} is restarting all its pods (restart {rnd.restart_count}{of}): "
            f"{verdict.message}"
        )
        reason = f"{rnd.kind}Restarting"
        rnd.restarting = ConditionChange(
            JobConditionType.RESTARTING, ConditionStatus.TRUE, reason, message
        )
        warn(self._control, rnd, "job restarting", reason, message)
        return True

    async def _terminate(self, rnd: Round[Any], reason: str, message: str) -> None:
        rnd.fail(reason, message, acted=True)
        await delete_all(self._control, rnd)
        await self._drop_podgroup(rnd)

    async def _drop_podgroup(self, rnd: Round[Any]) -> None:
        if self._podgroups is not None:
            await self._podgroups.delete(rnd)

    async def _delete(self, rnd: Round[Any], pod: ObjectView, service: ObjectView | None) -> None:
        # The service first: a pod whose delete failed is found again by the next round, which
        # deletes what is left; a service whose pod is gone would never be found again.
        if service is not None and not await delete_child(self._control, rnd, SERVICES, service):
            return
        await delete_child(self._control, rnd, PODS, pod)
