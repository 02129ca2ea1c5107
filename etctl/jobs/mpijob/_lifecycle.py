"""An MPIJob's lifecycle: when the launcher starts, what its fate means for the job, the phase.

**The launcher** is a Pod named ``<job>-launcher`` (mpi-operator v2 runs a batch Job of that name;
see ``docs/jobs/mpijob.md`` for what a user sees instead). It is created (:func:`launcher_gate`):

* ``AtStartup`` (v2beta1's default): with the workers;
* ``WaitForWorkersReady``, and always in kubexec mode (mpi-operator v1's ``kubectl-delivery``
  init container waited the same way): once every target worker is Running and Ready. The
  condition ``LauncherCreated`` is False meanwhile (reason ``WorkersNotReady``, a message counting
  the ready workers). There is no deadline, as in mpi-operator:
  ``runPolicy.activeDeadlineSeconds`` bounds the wait when wanted.

Then ``LauncherCreated`` turns True (reason ``PodsCreated``, with the pod's name and uid) once the
launcher pod exists, never on the decision to create it (``AtStartup`` has no such condition: its
job shows Created, then Running, as mpi-operator's). A launcher that provably existed (that
record, or the launcher counted in the recorded replica status: it ran) and vanished while workers
remain is created again at once (a batch Job replaces a deleted pod too), with a Warning Event
``MPIJobLauncherVanished``; a suspension or a whole-job restart deletes it on purpose, and a
resumed job waits for its workers again (:func:`~etctl.jobs.launcher.launcher_vanished`).

**Verdict** (:func:`verdict`), from the launcher, as mpi-operator's ``updateMPIJobStatus``:

* Succeeded: condition Succeeded, reason ``MPIJobSucceeded``;
* Failed: Failed, ``MPIJobEvicted`` when the kubelet evicted it, else ``MPIJobFailed``, with the
  pod's reason and message or its exit code. A launcher under restartPolicy OnFailure restarts in
  place (each restart counted against ``backoffLimit``), and one that fails as a pod (evicted) is
  created again while the budget lasts, so a Failed launcher seen here is final;
* Running: ``MPIJobRunning`` once the launcher runs and every target worker runs; it then stays
  Running while the launcher runs, whatever the workers do (an elastic job loses and gains
  workers). Workers never fail the job: a failed worker leaves the hosts (or is replaced), and the
  launcher's program decides what that means.

**Phase** (:func:`extra_status`): the type of the latest condition that holds (Created, Running,
Scaling, Suspended, Succeeded, Failed), as et-operator's jobs show it.
"""

from __future__ import annotations

from typing import Any

from etctl.common import (
    Gate,
    JobConditionType,
    JobState,
    RestartPolicy,
    Verdict,
    is_true,
    phase_of,
)
from etctl.jobs.launcher import LauncherJob, launcher_vanished, vanished_message
from etctl.jobs.mpijob._api import (
    LauncherAttachMode,
    LauncherCreationPolicy,
    MPIJob,
    MPIReplicaType,
)
from etctl.jobs.mpijob._names import launcher_name
from etctl.runtime import objects, podview

__all__ = [
    "LAUNCHER_CREATED",
    "extra_status",
    "launcher_gate",
    "launcher_job",
    "verdict",
    "waits_for_workers",
]

WORKER = MPIReplicaType.WORKER
LAUNCHER = MPIReplicaType.LAUNCHER
LAUNCHER_CREATED = "LauncherCreated"
"""The condition the launcher's gate reports (``<Type>Created``)."""


def waits_for_workers(job: MPIJob) -> bool:
    """The launcher is created only once every worker is Ready."""
    spec = job.spec
    return (
        spec.launcher_creation_policy is LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
        or spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
    )


def launcher_job(job: MPIJob) -> LauncherJob:
    """What the launcher/worker layer reads of ``job``."""
    return LauncherJob(
        kind="MPIJob",
        name=job.metadata.name,
        status=job.status,
        targets=tuple(job.status.target_workers),
        current=tuple(job.status.current_workers),
        launcher=launcher_name(job.metadata.name),
        launcher_restart_policy=RestartPolicy.ALWAYS,  # a batch Job replaces its pod
        launcher_type=LAUNCHER,
        worker_type=WORKER,
        wait_for_ready=True,
    )


def launcher_gate(job: MPIJob, state: JobState[Any]) -> Gate:
    """Whether the launcher pod may be created now (see the module docstring)."""
    # Only a launcher that waits has a LauncherCreated condition (AtStartup's is created with the
    # workers, and its job shows Created, then Running, as mpi-operator's does).
    waits = waits_for_workers(job)
    if state.pods_of(LAUNCHER):
        return Gate.opened(record=waits)
    shared = launcher_job(job)
    if launcher_vanished(shared, state):
        again = vanished_message(shared, again="mpi-operator's batch Job would replace it")
        return Gate.opened(record=waits, vanished=again)
    if not waits:
        return Gate.opened()
    targets = job.status.target_workers
    ready = {objects.name(p) for p in state.pods_of(WORKER) if podview.running_and_ready(p)}
    up = sum(1 for name in targets if name in ready)
    if targets and up == len(targets):
        return Gate.opened(record=True)  # recorded once the launcher pod exists
    return Gate(
        open=False,
        reason="WorkersNotReady",
        message=(
            f"{up} of {len(targets)} workers of MPIJob {job.metadata.name} are ready; the "
            "launcher starts when all are"
        ),
    )


def verdict(job: MPIJob, state: JobState[Any]) -> Verdict | None:
    """What the launcher's phase means for the job, or None while it has none yet."""
    launchers = state.pods_of(LAUNCHER)
    if not launchers:
        return None
    launcher = launchers[0]
    who = f"MPIJob {job.metadata.name}"
    phase = podview.phase(launcher)
    if phase == "Succeeded":
        return Verdict(
            JobConditionType.SUCCEEDED,
            "MPIJobSucceeded",
            f"{who} succeeded: launcher {objects.name(launcher)} completed.",
        )
    if phase == "Failed":
        evicted = podview.reason(launcher) == "Evicted"
        return Verdict(
            JobConditionType.FAILED,
            "MPIJobEvicted" if evicted else "MPIJobFailed",
            f"{who} failed: launcher {objects.name(launcher)} failed "
            f"({podview.failure(launcher)}).",
        )
    if phase != "Running":
        return None
    if not is_true(job.status.conditions, JobConditionType.RUNNING):
        running = {objects.name(p) for p in state.pods_of(WORKER) if podview.phase(p) == "Running"}
        targets = job.status.target_workers
        if not targets or any(name not in running for name in targets):
            return None
    return Verdict(JobConditionType.RUNNING, "MPIJobRunning", f"{who} is running.")


def extra_status(job: MPIJob, state: JobState[Any]) -> dict[str, Any]:
    """The MPIJob's own status fields the job controller writes."""
    return {"phase": phase_of(job.status.conditions)}
