"""MPIJob as an elastic kind: its members, bounds, consumer and size check.

* the elastic replica type is Worker (:data:`ELASTIC`); its desired count is
  ``spec.mpiReplicaSpecs.Worker.replicas`` (the CRD's ``/scale`` path, what ``kubectl scale
  mpijob`` and an HPA write), bounded by ``spec.elasticPolicy.minReplicas`` (unset: 1) and
  ``maxReplicas`` (unset: no limit) (:func:`member_policy`);
* the members are ``<job>-worker-<index>``, recorded in the status as et-operator's kinds record
  them (``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``, ``currentScaler``, ``phase``);
  slots per worker are ``slotsPerWorker``. The framework replaces workers following the Worker
  replica's restartPolicy: under OnFailure a failed worker (evicted included) is replaced under a
  new name, under Never it stays failed and leaves discover_hosts.sh; a member that vanished while
  the launcher runs is replaced either way;
* the consumer is the launcher: the membership is in use while it runs and the job is not
  suspended; scalers' scripts run in its first container; the membership is delivered when its
  recorded digest (written by the membership pusher) is that of the hostfile and
  discover_hosts.sh the job's state calls for now, or when there is no launcher to deliver them
  to;
* a membership too large for the ConfigMap or the job's status fails the scale-out that would
  make it (:mod:`._sizes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etctl.common import (
    Consumer,
    ElasticMembers,
    JobState,
    MemberPolicy,
    RestartPolicy,
    SizeLimits,
)
from etctl.jobs.launcher import (
    MemberCost,
    Names,
    job_bytes,
    kubexec_script,
    membership_problem,
    read_launcher,
)
from etctl.jobs.mpijob._api import LauncherAttachMode, MPIImplementation, MPIJob, MPIReplicaType
from etctl.jobs.mpijob._config import (
    discover_hosts,
    host_of,
    hostfile,
    wanted_digest,
    worker_container,
)
from etctl.jobs.mpijob._names import config_name, worker_prefix
from etctl.jobs.mpijob._sizes import config_bytes

__all__ = ["ELASTIC", "consumer", "member_cost", "member_policy", "size_problem"]

WORKER = MPIReplicaType.WORKER
LAUNCHER = MPIReplicaType.LAUNCHER
ELASTIC = ElasticMembers(
    replica_type=WORKER,
    name_rule="a worker's hostname is its name, and a hostname is a DNS label",
)
"""The workers are the members, in et-operator's status fields."""

# The status fields that list every member (what grows the job object).
_LISTS = ("targetWorkers", "currentWorkers")


def member_cost(job: MPIJob, cluster_domain: str) -> MemberCost:
    """What a membership costs ``job``'s ConfigMap and the job itself."""
    spec = job.spec
    kubexec = spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
    suffix = host_of(job, "", cluster_domain)
    colon = not kubexec and spec.mpi_implementation is not MPIImplementation.OPENMPI
    # What does not depend on the workers: the launcher's lines, kubexec.sh.
    fixed = len(hostfile(job, [], cluster_domain)) + len(discover_hosts(job, [], cluster_domain))
    fixed -= len("#!/bin/sh\n")
    if kubexec:
        fixed += len(kubexec_script(worker_container(job)).encode())
    document = job.model_dump(mode="json", by_alias=True, exclude_none=True)
    return MemberCost(
        config=lambda names: config_bytes(
            names, host_suffix=suffix, slots=spec.slots_per_worker, colon=colon, fixed=fixed
        ),
        job=lambda names: job_bytes(document, names, lists=_LISTS),
    )


def size_problem(
    job: MPIJob, names: Sequence[str] | None, *, cluster_domain: str, limits: SizeLimits
) -> str | None:
    """Why ``job`` cannot hold ``names`` (None: its first ``replicas`` workers), or None."""
    name = job.metadata.name
    if names is None:
        worker = job.spec.mpi_replica_specs.worker
        count = worker.replicas if worker is not None else 0
        prefix = worker_prefix(name)
        return membership_problem(
            Names.sequential(prefix, count),
            cost=member_cost(job, cluster_domain),
            config_map=config_name(name),
            limits=limits,
            grow=lambda n: Names.sequential(prefix, n),
        )
    grow = Names.firsts(names)
    return membership_problem(
        grow(len(names)),
        cost=member_cost(job, cluster_domain),
        config_map=config_name(name),
        limits=limits,
        grow=grow,
    )


def member_policy(job: MPIJob) -> MemberPolicy:
    """``spec.elasticPolicy``'s bounds, and the Worker replica's restartPolicy."""
    low, high = job.spec.bounds()
    worker = job.spec.mpi_replica_specs.worker
    restart = worker.restart_policy if worker is not None else RestartPolicy.NEVER
    return MemberPolicy(min_replicas=low, max_replicas=high, restart_policy=restart)


def consumer(job: MPIJob, state: JobState[Any]) -> Consumer:
    """The launcher, as the consumer of the workers (see the module docstring)."""
    domain = state.settings.cluster_domain
    workers = state.pods_of(WORKER)
    launcher = read_launcher(state.pods_of(LAUNCHER), wanted_digest(job, workers, domain))
    return launcher.consumer(job.spec.slots_per_worker)
