"""How the scaling machinery reads a TrainingJob (its :class:`~etctl.common.Elasticity`).

* the elastic replica type is Worker; its desired count is ``spec.etReplicaSpecs.worker.replicas``
  (what ``kubectl scale`` and an HPA write), bounded by ``minReplicas`` (unset: 1) and
  ``maxReplicas`` (unset: no limit);
* members are ``<job>-worker-<index>``; slots per worker as the hostfile has them;
* workers to replace follow the worker replica's restartPolicy
  (:func:`~etctl.jobs.trainingjob._workers.workers_to_replace`);
* the membership is in use while the launcher runs: only then does a worker that stopped running
  leave the hostfile, and is a vanished member replaced;
* scalers start once the launcher runs (et-operator scaled only Running jobs), and their scripts
  run in the launcher's first container;
* the membership is delivered when the running launcher's recorded hostfile digest (written by the
  membership pusher) is that of ``status.currentWorkers``'s hostfile, or when there is no launcher
  to deliver it to (a launcher that starts later copies the ConfigMap, which already has it). A
  launcher still starting is not delivered to: its copy may predate the change.
"""

from __future__ import annotations

from typing import Any

from etctl.common import (
    Elasticity,
    ExecTarget,
    JobState,
    RestartPolicy,
    first_container_name,
    is_finished,
)
from etctl.jobs.trainingjob._api import TrainingJob, TrainingJobReplicaType
from etctl.jobs.trainingjob._hostfile import PUSHED_ANNOTATION, digest, hostfile, slots_per_worker
from etctl.jobs.trainingjob._names import worker_prefix
from etctl.jobs.trainingjob._workers import workers_to_replace
from etctl.runtime import objects, pod_phase

__all__ = ["REPLICAS_PATH", "job_slots", "read_elasticity"]

REPLICAS_PATH = ("spec", "etReplicaSpecs", "worker", "replicas")


def job_slots(job: TrainingJob) -> int:
    """Slots per worker of ``job``."""
    worker = job.spec.et_replica_specs.worker
    template = worker.template if worker is not None else {}
    return slots_per_worker(job.spec.slots_per_worker, template)


def read_elasticity(job: TrainingJob, state: JobState[Any]) -> Elasticity:
    """The scaling machinery's view of ``job`` (see the module docstring)."""
    worker = job.spec.et_replica_specs.worker
    low, high = worker.bounds() if worker is not None else (1, None)
    slots = job_slots(job)
    launchers = list(state.pods_of(TrainingJobReplicaType.LAUNCHER))
    running = next((p for p in launchers if pod_phase(p) == "Running"), None)
    executor = None
    if running is not None:
        container = first_container_name(running)
        if container:
            executor = ExecTarget(objects.name(running), container)
    if not launchers:
        delivered = True
    elif running is None:
        delivered = False
    else:
        wanted = digest(hostfile(job.status.current_workers, slots))
        delivered = objects.annotations(running).get(PUSHED_ANNOTATION) == wanted
    pods = {objects.name(p): p for p in state.pods_of(TrainingJobReplicaType.WORKER)}
    replace = workers_to_replace(
        worker.restart_policy if worker is not None else RestartPolicy.NEVER,
        job.status.target_workers,
        job.status.current_workers,
        pods,
        launcher_running=running is not None,
    )
    suspended = job.run_policy().suspend
    return Elasticity(
        replica_type=TrainingJobReplicaType.WORKER,
        replicas=worker.replicas if worker is not None else 1,
        replicas_path=REPLICAS_PATH,
        min_replicas=low,
        max_replicas=high,
        member_prefix=worker_prefix(job.metadata.name),
        slots=slots,
        replace=replace,
        ready=running is not None and not suspended and not is_finished(job.status.conditions),
        executor=executor,
        membership_delivered=delivered,
        membership_in_use=running is not None,
    )
