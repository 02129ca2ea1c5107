"""A TrainingJob's lifecycle: when the launcher may start, what the launcher's fate means, status.

**Creation order** (et-operator's): the ssh Secret, the workers and their services; then, once
every target worker runs and is a member of the hostfile, the launcher's ServiceAccount, Role,
RoleBinding and ConfigMap, and the launcher pod. The launcher's gate (:func:`launcher_gate`) holds
its pod back meanwhile, with the condition ``LauncherCreated`` False (reason ``WorkersNotReady``,
a message counting the running workers); et-operator waited forever, here the job fails with that
message when the workers are not all running ``workers_ready_timeout`` seconds after the job
started (or restarted).

**A launcher that vanished** (created, as ``LauncherCreated`` or the launcher's replica status
says, and no pod any more while workers remain) is created again when the launcher's
restartPolicy is Always; otherwise the job fails at once (et-operator's rule, whatever phase the
launcher had reached). A launcher gone together with every worker is a restart: the job waits for
its workers again.

**Verdict** (:func:`verdict`): the launcher decides, as et-operator's ``syncLauncherState``:

* Running: condition Running, reason ``TrainingJobRunning``;
* Succeeded: Succeeded, ``TrainingJobSucceeded`` (cleanPodPolicy then applies; default Running);
* Failed: Failed, ``TrainingJobEvicted`` when the kubelet evicted it, else ``TrainingJobFailed``,
  with the launcher's reason, message or exit code. Under the job's restartPolicy OnFailure the
  whole job restarts instead, up to backoffLimit times (``restartCount`` counts them).

**Status** (:func:`extra_status`): ``phase`` is the type of the latest condition that holds
(Created, Running, Scaling, Restarting, Succeeded, Failed, Suspended); ``replicas`` the number of
target workers and ``workerSelector`` the label selector of the workers, which the ``/scale``
subresource reads. The membership (``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``)
and ``currentScaler`` are written by the scaling machinery (:mod:`etctl.common._scaling`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from etctl.common import (
    ConditionStatus,
    Gate,
    JobConditionType,
    JobState,
    RestartPolicy,
    Verdict,
    get_condition,
    is_true,
    phase_of,
)
from etctl.jobs.trainingjob._api import TrainingJob, TrainingJobReplicaType, TrainingJobStep
from etctl.jobs.trainingjob._names import launcher_name
from etctl.runtime import ObjectView, objects, pod_phase

__all__ = [
    "DEFAULT_WORKERS_READY_TIMEOUT",
    "extra_status",
    "launcher_gate",
    "verdict",
    "workers_ready",
]

DEFAULT_WORKERS_READY_TIMEOUT = 600.0
"""Seconds a job waits for all its workers to run before it fails."""

WORKER = TrainingJobReplicaType.WORKER
LAUNCHER = TrainingJobReplicaType.LAUNCHER


def _pod_status(pod: ObjectView, key: str) -> str:
    status = pod.get("status")
    value = status.get(key) if isinstance(status, Mapping) else None
    return value if isinstance(value, str) else ""


def workers_ready(job: TrainingJob, state: JobState[Any]) -> tuple[bool, int, int]:
    """``(every target runs and is a member, running targets, targets)``."""
    targets = job.status.target_workers
    running = {objects.name(p) for p in state.pods_of(WORKER) if pod_phase(p) == "Running"}
    up = sum(1 for name in targets if name in running)
    ready = bool(targets) and up == len(targets) and set(job.status.current_workers) == set(targets)
    return ready, up, len(targets)


def _launcher_vanished(job: TrainingJob, state: JobState[Any]) -> bool:
    if is_true(job.status.conditions, JobConditionType.RESTARTING):
        return False  # a whole-job restart deleted it on purpose
    if not state.pods_of(WORKER):
        # Gone with every worker: a whole-job restart whose record was not written yet (or a
        # loss of everything). The job starts again rather than failing.
        return False
    if is_true(job.status.conditions, TrainingJobStep.LAUNCHER_CREATED):
        return True  # created, whatever its phase was: a Pending pod is in no count
    recorded = job.status.replica_statuses.get(LAUNCHER)
    return recorded is not None and recorded.active + recorded.succeeded + recorded.failed > 0


def _waiting_since(job: TrainingJob, now: datetime) -> datetime:
    since = job.status.start_time or now
    restarting = get_condition(job.status.conditions, JobConditionType.RESTARTING)
    if (
        restarting is not None
        and restarting.status is ConditionStatus.TRUE
        and restarting.last_transition_time is not None
    ):
        since = max(since, restarting.last_transition_time)
    return since


def launcher_gate(job: TrainingJob, state: JobState[Any], *, timeout: float) -> Gate:
    """Whether the launcher pod may be created now (see the module docstring)."""
    name = launcher_name(job.metadata.name)
    if state.pods_of(LAUNCHER):
        return Gate.opened()
    launcher = job.spec.et_replica_specs.launcher
    if _launcher_vanished(job, state):
        policy = launcher.restart_policy if launcher is not None else RestartPolicy.NEVER
        if policy is RestartPolicy.ALWAYS:
            return Gate.opened(record=True)
        return Gate(
            open=False,
            reason="TrainingJobFailed",
            message=(
                f"launcher pod {name} of TrainingJob {job.metadata.name} vanished and its "
                f"restartPolicy {policy.value} does not recreate it (Always would)"
            ),
            fail_at=state.now,
        )
    ready, up, total = workers_ready(job, state)
    if ready:
        # LauncherCreated is what tells a vanished Pending launcher from one never created: it
        # must be recorded even when the round that saw the gate closed lost its status write.
        return Gate.opened(record=True)
    return Gate(
        open=False,
        reason="WorkersNotReady",
        message=(
            f"{up} of {total} workers of TrainingJob {job.metadata.name} are running members; "
            f"the launcher starts when all are (waiting at most {timeout:g} s)"
        ),
        fail_at=_waiting_since(job, state.now) + timedelta(seconds=timeout),
    )


def _failure(pod: ObjectView) -> str:
    reason = _pod_status(pod, "reason")
    message = _pod_status(pod, "message")
    details = ": ".join(part for part in (reason, message) if part)
    if details:
        return details
    status = pod.get("status")
    statuses = status.get("containerStatuses") if isinstance(status, Mapping) else None
    for entry in statuses if isinstance(statuses, list) else []:
        state = entry.get("state") if isinstance(entry, Mapping) else None
        terminated = state.get("terminated") if isinstance(state, Mapping) else None
        if isinstance(terminated, Mapping) and terminated.get("exitCode"):
            return f"container {entry.get('name')} exited with {terminated.get('exitCode')}"
    return "no reason given"


def verdict(job: TrainingJob, state: JobState[Any]) -> Verdict | None:
    """What the launcher's phase means for the job, or None while it has none yet."""
    pods = state.pods_of(LAUNCHER)
    if not pods:
        return None
    launcher = pods[0]
    name = job.metadata.name
    pod = objects.name(launcher)
    phase = pod_phase(launcher)
    if phase == "Running":
        return Verdict(
            JobConditionType.RUNNING, "TrainingJobRunning", f"TrainingJob {name} is running."
        )
    if phase == "Succeeded":
        return Verdict(
            JobConditionType.SUCCEEDED,
            "TrainingJobSucceeded",
            f"TrainingJob {name} succeeded: launcher {pod} completed.",
        )
    if phase == "Failed":
        evicted = _pod_status(launcher, "reason") == "Evicted"
        return Verdict(
            JobConditionType.FAILED,
            "TrainingJobEvicted" if evicted else "TrainingJobFailed",
            f"TrainingJob {name} failed: launcher {pod} failed ({_failure(launcher)}).",
        )
    return None


def extra_status(job: TrainingJob, state: JobState[Any]) -> dict[str, Any]:
    """The TrainingJob's own status fields the job controller writes."""
    worker = state.replica_statuses.get(WORKER)
    return {
        "phase": phase_of(job.status.conditions),
        "replicas": len(job.status.target_workers),
        "workerSelector": worker.selector if worker is not None else None,
    }
