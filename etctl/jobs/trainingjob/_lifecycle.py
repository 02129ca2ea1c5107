"""A TrainingJob's lifecycle on the launcher/worker layer, and its own status fields.

**Creation order** (et-operator's): the ssh Secret, the workers and their services; then, once
every target worker runs and is a member of the hostfile, the launcher's ServiceAccount, Role,
RoleBinding and ConfigMap, and the launcher pod. The launcher's gate holds its pod back meanwhile,
with the condition ``LauncherCreated`` False (reason ``WorkersNotReady``, a message counting the
running workers); et-operator waited forever, here the job fails with that message when the
workers are not all running ``workers_ready_timeout`` seconds after the job started (or
restarted). A launcher that vanished fails the job unless its restartPolicy is Always; the launcher
decides the job's fate (``TrainingJobRunning``, ``TrainingJobSucceeded``, ``TrainingJobFailed``,
``TrainingJobEvicted``). The rules are the shared layer's (:mod:`etctl.jobs.launcher`); this
module reads a TrainingJob for them (:func:`launcher_job`).

**Status** (:func:`extra_status`): ``phase`` is the type of the latest condition that holds
(Created, Running, Scaling, Restarting, Succeeded, Failed, Suspended); ``replicas`` the number of
target workers and ``workerSelector`` the label selector of the workers, which the ``/scale``
subresource reads. The membership (``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``)
and ``currentScaler`` are written by the scaling machinery.
"""

from __future__ import annotations

from typing import Any

from etctl.common import Gate, JobState, RestartPolicy, Verdict, phase_of
from etctl.jobs import launcher as shared
from etctl.jobs.launcher import DEFAULT_WORKERS_READY_TIMEOUT, LauncherJob
from etctl.jobs.trainingjob._api import TrainingJob, TrainingJobReplicaType
from etctl.jobs.trainingjob._names import launcher_name

__all__ = [
    "DEFAULT_WORKERS_READY_TIMEOUT",
    "extra_status",
    "launcher_gate",
    "launcher_job",
    "verdict",
    "workers_ready",
]

WORKER = TrainingJobReplicaType.WORKER
LAUNCHER = TrainingJobReplicaType.LAUNCHER


def launcher_job(job: TrainingJob) -> LauncherJob:
    """What the launcher/worker layer reads of ``job``."""
    launcher = job.spec.et_replica_specs.launcher
    return LauncherJob(
        kind="TrainingJob",
        name=job.metadata.name,
        status=job.status,
        targets=tuple(job.status.target_workers),
        current=tuple(job.status.current_workers),
        launcher=launcher_name(job.metadata.name),
        launcher_restart_policy=(
            launcher.restart_policy if launcher is not None else RestartPolicy.NEVER
        ),
        launcher_type=LAUNCHER,
        worker_type=WORKER,
    )


def workers_ready(job: TrainingJob, state: JobState[Any]) -> tuple[bool, int, int]:
    """``(every target runs and is a member, running targets, targets)``."""
    return shared.workers_ready(launcher_job(job), state)


def launcher_gate(job: TrainingJob, state: JobState[Any], *, timeout: float) -> Gate:
    """Whether the launcher pod may be created now."""
    return shared.launcher_gate(launcher_job(job), state, timeout=timeout)


def verdict(job: TrainingJob, state: JobState[Any]) -> Verdict | None:
    """What the launcher's phase means for the job, or None while it has none yet."""
    return shared.launcher_verdict(launcher_job(job), state)


def extra_status(job: TrainingJob, state: JobState[Any]) -> dict[str, Any]:
    """The TrainingJob's own status fields the job controller writes."""
    worker = state.replica_statuses.get(WORKER)
    return {
        "phase": phase_of(job.status.conditions),
        "replicas": len(job.status.target_workers),
        "workerSelector": worker.selector if worker is not None else None,
    }
