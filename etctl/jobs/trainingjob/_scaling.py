"""How the scaling machinery reads a TrainingJob (its :class:`~etctl.common.Elasticity`).

* the elastic replica type is Worker; its desired count is ``spec.etReplicaSpecs.worker.replicas``
  (what ``kubectl scale`` and an HPA write), bounded by ``minReplicas`` (unset: 1) and
  ``maxReplicas`` (unset: no limit);
* members are ``<job>-worker-<index>``, recorded in et-operator's status fields
  (``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``, ``currentScaler`` and ``phase``:
  :data:`~etctl.common.WORKER_FIELDS`); slots per worker as the hostfile has them;
* workers to replace follow the worker replica's restartPolicy
  (:func:`~etctl.jobs.launcher.workers_to_replace`);
* the membership is in use while the launcher runs and the job is not suspended: only then does a
  worker that stopped running leave the hostfile, and is a vanished member replaced (a suspension
  deletes every pod; the resumed job gets its workers back under their names);
* scalers start once the launcher runs (et-operator scaled only Running jobs), and their scripts
  run in the launcher's first container;
* the membership is delivered when the running launcher's recorded hostfile digest (written by the
  membership pusher) is that of ``status.currentWorkers``'s hostfile, or when there is no launcher
  to deliver it to (:func:`~etctl.jobs.launcher.read_launcher`).
"""

from __future__ import annotations

from typing import Any

from etctl.common import Elasticity, JobState, RestartPolicy, is_finished
from etctl.jobs.launcher import (
    digest,
    hostfile,
    read_launcher,
    slots_per_worker,
    workers_to_replace,
)
from etctl.jobs.trainingjob._api import TrainingJob, TrainingJobReplicaType
from etctl.jobs.trainingjob._names import worker_prefix
from etctl.runtime import objects

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
    launcher = read_launcher(
        state.pods_of(TrainingJobReplicaType.LAUNCHER),
        digest(hostfile(job.status.current_workers, slots)),
    )
    suspended = job.run_policy().suspend
    # A suspension deletes every pod, the launcher last: workers it already deleted are no
    # vanished members of a launcher that still runs, and the resumed job gets them back.
    running = launcher.running is not None and not suspended
    pods = {objects.name(p): p for p in state.pods_of(TrainingJobReplicaType.WORKER)}
    replace = workers_to_replace(
        worker.restart_policy if worker is not None else RestartPolicy.NEVER,
        job.status.target_workers,
        job.status.current_workers,
        pods,
        launcher_running=running,
    )
    return Elasticity(
        replica_type=TrainingJobReplicaType.WORKER,
        replicas=worker.replicas if worker is not None else 1,
        replicas_path=REPLICAS_PATH,
        members=job.status.members(),
        min_replicas=low,
        max_replicas=high,
        member_prefix=worker_prefix(job.metadata.name),
        slots=slots,
        replace=replace,
        ready=running and not is_finished(job.status.conditions),
        executor=launcher.executor,
        membership_delivered=launcher.delivered,
        membership_in_use=running,
        name_rule="each worker has a Service of its name, and a Service name is a DNS label",
    )
