"""TrainingJob as an elastic kind: its members, bounds, consumer and size check.

* the elastic replica type is Worker (:data:`ELASTIC`); its desired count is
  ``spec.etReplicaSpecs.worker.replicas`` (the CRD's ``/scale`` path, what ``kubectl scale`` and an
  HPA write), bounded by ``minReplicas`` (unset: 1) and ``maxReplicas`` (unset: no limit);
  workers are replaced under new names following the worker replica's ``restartPolicy`` (the
  generic controller gets them as Never: it never restarts one under its name);
* members are ``<job>-worker-<index>``, recorded in et-operator's status fields
  (``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``, ``currentScaler`` and ``phase``);
* the consumer is the launcher (:func:`~etctl.jobs.launcher.read_launcher`): the membership is in
  use while it runs (and the job is not suspended), scalers' scripts run in its first container,
  and the membership is delivered when its recorded hostfile digest (written by the membership
  pusher) is that of ``status.currentWorkers``'s hostfile, or when there is no launcher to deliver
  it to; slots per worker as the hostfile has them.
"""

from __future__ import annotations

from typing import Any

from etctl.common import Consumer, ElasticMembers, JobState, MemberPolicy, RestartPolicy
from etctl.jobs.launcher import digest, hostfile, read_launcher, slots_per_worker
from etctl.jobs.trainingjob._api import TrainingJob, TrainingJobReplicaType

__all__ = ["ELASTIC", "consumer", "job_slots", "member_policy"]

ELASTIC = ElasticMembers(
    replica_type=TrainingJobReplicaType.WORKER,
    name_rule="each worker has a Service of its name, and a Service name is a DNS label",
)
"""The workers are the members, in et-operator's status fields."""


def job_slots(job: TrainingJob) -> int:
    """Slots per worker of ``job``."""
    worker = job.spec.et_replica_specs.worker
    template = worker.template if worker is not None else {}
    return slots_per_worker(job.spec.slots_per_worker, template)


def member_policy(job: TrainingJob) -> MemberPolicy:
    """``minReplicas`` (1) and ``maxReplicas`` (no limit), and the worker's restartPolicy."""
    worker = job.spec.et_replica_specs.worker
    if worker is None:
        return MemberPolicy(restart_policy=RestartPolicy.NEVER)
    low, high = worker.bounds()
    return MemberPolicy(min_replicas=low, max_replicas=high, restart_policy=worker.restart_policy)


def consumer(job: TrainingJob, state: JobState[Any]) -> Consumer:
    """The launcher, as the consumer of the workers (see the module docstring)."""
    slots = job_slots(job)
    launcher = read_launcher(
        state.pods_of(TrainingJobReplicaType.LAUNCHER),
        digest(hostfile(job.status.current_workers, slots)),
    )
    return launcher.consumer(slots)
