"""What a PyTorchJob's pods mean for the job: training-operator's status rules, elastic-aware.

training-operator's ``UpdateJobStatus`` (``pytorchjob_controller.go``), with what an elastic job
needs on top. "Active" is kubeflow's count: Running pods, not Pending ones.

1. **Who decides.** With a Master, the Master: Running while it is active, Succeeded once it
   succeeded. Without one, the workers: a static job Succeeded once every worker succeeded; an
   elastic job Succeeded once a worker succeeded and no worker still runs (torchrun's agents end
   together: the first to finish closes the rendezvous, and a worker still Pending never holds the
   job open); Running while a worker is active.
2. **Failures.** A Master, or a static job's Worker, with restartPolicy Never and a failed pod fails
   the job (others are recreated by the controller, which reports Restarting). An elastic job's
   failed workers are replaced by the scaling machinery; the job fails when fewer than
   ``minReplicas`` workers could still run (under Never, a failed worker stays failed), or when the
   replacements passed ``elasticPolicy.maxRestarts`` (``PyTorchJobMaxRestartsExceeded``).

Invariants: pure; None while nothing new is to be said (before the pods exist).
"""

from __future__ import annotations

from typing import Any, Final

from etctl.common import JobState, RestartPolicy, Verdict
from etctl.jobs.pytorchjob._api import PyTorchJob, PyTorchReplicaType
from etctl.jobs.pytorchjob._world import bounds, restarts_left
from etctl.runtime import objects, podview

__all__ = [
    "REASON_FAILED",
    "REASON_MAX_RESTARTS",
    "REASON_RUNNING",
    "REASON_SUCCEEDED",
    "verdict",
]

REASON_RUNNING: Final = "PyTorchJobRunning"
REASON_SUCCEEDED: Final = "PyTorchJobSucceeded"
REASON_FAILED: Final = "PyTorchJobFailed"
REASON_MAX_RESTARTS: Final = "PyTorchJobMaxRestartsExceeded"

MASTER = PyTorchReplicaType.MASTER.value
WORKER = PyTorchReplicaType.WORKER.value


def _counts(state: JobState[Any], rtype: str) -> tuple[int, int, int]:
    status = state.replica_statuses.get(rtype)
    return (status.active, status.succeeded, status.failed) if status else (0, 0, 0)


def _progress(job: PyTorchJob, state: JobState[Any], who: str) -> Verdict | None:
    deciding = MASTER if job.spec.replicas(PyTorchReplicaType.MASTER) is not None else WORKER
    active, succeeded, _ = _counts(state, deciding)
    planned = state.replicas(deciding)
    done = planned > 0 and succeeded >= planned
    if deciding == WORKER and job.elastic:
        done = succeeded > 0 and active == 0
    if done:
        return Verdict.succeeded(REASON_SUCCEEDED, f"{who} successfully completed.")
    if active > 0:
        return Verdict.running(REASON_RUNNING, f"{who} is running.")
    return None


def _never_failed(job: PyTorchJob, state: JobState[Any], who: str) -> Verdict | None:
    """A type whose failed pods are never recreated (restartPolicy Never) and has some."""
    for rtype, spec in job.spec.pytorch_replica_specs.items():
        if rtype == WORKER and job.elastic:
            continue  # the scaling machinery replaces them; see _elastic_failed
        _, _, failed = _counts(state, rtype)
        if failed > 0 and spec.restart_policy is RestartPolicy.NEVER:
            plural = "" if failed == 1 else "s"
            message = f"{who} is failed because {failed} {rtype} replica{plural} failed."
            return Verdict.failed(REASON_FAILED, message)
    return None


def _elastic_failed(job: PyTorchJob, state: JobState[Any], who: str) -> Verdict | None:
    left = restarts_left(job)
    if left is not None and left < 0:
        policy = job.spec.elastic_policy
        limit = policy.max_restarts if policy is not None else 0
        message = (
            f"{who} failed: its workers were replaced {job.status.worker_replacements} times, "
            f"more than elasticPolicy.maxRestarts {limit}"
        )
        return Verdict.failed(REASON_MAX_RESTARTS, message)
    targets = job.status.target_workers
    if not targets:
        return None
    failed = {objects.name(p) for p in state.pods_of(WORKER) if podview.phase(p) == "Failed"}
    alive = [name for name in targets if name not in failed]
    low, _ = bounds(job)
    if len(alive) < low and failed & set(targets):
        message = (
            f"{who} failed: {len(alive)} of its workers can still run, fewer than "
            f"elasticPolicy.minReplicas {low} ({', '.join(sorted(failed & set(targets)))} failed "
            "and the Worker's restartPolicy does not replace them)"
        )
        return Verdict.failed(REASON_FAILED, message)
    return None


def verdict(job: PyTorchJob, state: JobState[Any]) -> Verdict | None:
    """The condition the pods call for (see the module docstring)."""
    who = f"PyTorchJob {job.metadata.name}"
    failure = _never_failed(job, state, who)
    if failure is None and job.elastic:
        failure = _elastic_failed(job, state, who)
    return failure or _progress(job, state, who)
