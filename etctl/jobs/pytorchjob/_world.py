"""A PyTorchJob's world: its elastic members, their bounds, the restart budget, the status.

* **Members.** The Worker pods are the members of an elastic job (:data:`ELASTIC`): the scaling
  machinery records them (``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``), runs
  ``/scale``, HPAs, ScaleIns and ScaleOuts naming the job, and replaces a worker whose pod failed
  (per the Worker's restartPolicy) or vanished under a new name, counting each replacement in
  ``workerReplacements``.
* **Bounds** (:func:`member_policy`): ``elasticPolicy``'s, defaulted as training-operator defaults
  them; with neither bound set, both are the job's first size (torchrun then runs with
  ``--nnodes=n:n`` and a worker past ``n`` could never join).
* **A static job** (no ``elasticPolicy``) has a fixed world: ``WORLD_SIZE`` and each pod's
  ``RANK`` are baked into its environment. Its workers are ``<job>-worker-0..n-1``, recreated
  under their names by the generic controller (training-operator's behaviour); the machinery
  never replaces them, a scaler naming it fails at once (:data:`STATIC`, reason
  ``JobNotElastic``; the scalers' webhook refuses it when the job is known), and the CRD refuses a
  change of its Worker replicas.
* **The restart budget** (:func:`restarts_left`): ``elasticPolicy.maxRestarts`` less the
  replacements so far. It is in the job's status, so it survives an operator restart, and every
  new worker's torchrun gets what is left as ``PET_MAX_RESTARTS``.
* **Status** (:func:`world_status`): the bounds in force, the target workers whose pods do not run
  yet, the rendezvous endpoint and the member hosting it, and the phase.

Invariants: pure functions of the job and its observed state.
"""

from __future__ import annotations

from typing import Any

from etctl.common import (
    WORKER_FIELDS,
    Consumer,
    ElasticMembers,
    JobState,
    MemberFields,
    MemberPolicy,
    RestartPolicy,
    is_true,
    phase_of,
)
from etctl.jobs.pytorchjob._api import PyTorchJob, PyTorchReplicaType
from etctl.jobs.pytorchjob._defaults import elastic_bounds
from etctl.jobs.pytorchjob._names import worker_name
from etctl.jobs.pytorchjob._rendezvous import endpoint, owns_endpoint
from etctl.runtime import objects, podview

__all__ = [
    "ELASTIC",
    "REPLACEMENTS_FIELD",
    "STATIC",
    "bounds",
    "consumer",
    "member_policy",
    "restarts_left",
    "world_status",
]

WORKER = PyTorchReplicaType.WORKER.value
REPLACEMENTS_FIELD = "workerReplacements"
ELASTIC = ElasticMembers(
    replica_type=WORKER,
    fields=MemberFields(
        targets=WORKER_FIELDS.targets,
        current=WORKER_FIELDS.current,
        last_index=WORKER_FIELDS.last_index,
        scaler=WORKER_FIELDS.scaler,
        phase=WORKER_FIELDS.phase,
        replaced=REPLACEMENTS_FIELD,
    ),
    name_rule="each worker has a Service of its name, and a Service name is a DNS label",
)
"""The workers are the members, in et-operator's status fields plus the replacement count."""


def _size(job: PyTorchJob) -> int:
    """The job's first size: its recorded targets once it has some, else the Worker replicas."""
    if job.status.target_workers:
        return len(job.status.target_workers)
    worker = job.spec.replicas(PyTorchReplicaType.WORKER)
    return worker.replicas if worker is not None else 0


def bounds(job: PyTorchJob) -> tuple[int, int]:
    """``(min, max)`` workers in force: elasticPolicy's, else the job's first size for both."""
    policy = job.spec.elastic_policy
    size = _size(job)
    found = elastic_bounds(policy, size) if policy is not None else None
    return found if found is not None else (size, size)


STATIC = (
    "is not elastic: it has no spec.elasticPolicy, so its world (WORLD_SIZE, each pod's RANK) is "
    "fixed; a job made with an elasticPolicy can be resized"
)
"""Why a static job's members are fixed, after the job's title in messages."""


def member_policy(job: PyTorchJob) -> MemberPolicy:
    """The bounds and who is replaced: the Worker's policy if elastic; a static job's are fixed."""
    low, high = bounds(job)
    worker = job.spec.replicas(PyTorchReplicaType.WORKER)
    restart = worker.restart_policy if worker is not None and job.elastic else RestartPolicy.NEVER
    return MemberPolicy(
        min_replicas=max(low, 1),
        max_replicas=high,
        restart_policy=restart,
        fixed=None if job.elastic else STATIC,
    )


def consumer(job: PyTorchJob, state: JobState[Any]) -> Consumer:
    """The members are in use while an elastic job runs; a static job's never are."""
    return Consumer(running=job.elastic and is_true(job.status.conditions, "Running"))


def restarts_left(job: PyTorchJob) -> int | None:
    """``maxRestarts`` less the replacements so far (None: no budget; below 0: exceeded)."""
    policy = job.spec.elastic_policy
    if policy is None or policy.max_restarts is None:
        return None
    return policy.max_restarts - (job.status.worker_replacements or 0)


def pending_workers(job: PyTorchJob, state: JobState[Any]) -> list[str]:
    """Target workers whose pods do not run yet: not created, unscheduled, pulling, starting."""
    pods = {objects.name(pod): pod for pod in state.pods_of(WORKER)}
    pending = []
    for name in job.status.target_workers:
        pod = pods.get(name)
        if pod is None or podview.phase(pod) in ("", "Pending"):
            pending.append(name)
    return pending


def world_status(job: PyTorchJob, state: JobState[Any], host: int | None) -> dict[str, Any]:
    """The status fields of the current world (JSON names): bounds, pending, rendezvous, phase."""
    fields: dict[str, Any] = {"phase": phase_of(job.status.conditions)}
    if not job.elastic:
        return fields
    low, high = bounds(job)
    fields.update(
        minReplicas=low,
        maxReplicas=high,
        pendingWorkers=pending_workers(job, state),
        rendezvousEndpoint=endpoint(job),
        rendezvousHost=worker_name(job.metadata.name, host)
        if owns_endpoint(job) and host is not None
        else None,
    )
    return fields
