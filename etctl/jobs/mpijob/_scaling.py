"""How the scaling machinery reads an MPIJob (its :class:`~etctl.common.Elasticity`).

* the elastic replica type is Worker; its desired count is ``spec.mpiReplicaSpecs.Worker.replicas``
  (what ``kubectl scale mpijob`` and an HPA write through ``/scale``), bounded by
  ``spec.elasticPolicy.minReplicas`` (unset: 1) and ``maxReplicas`` (unset: no limit);
* the members are ``<job>-worker-<index>``, recorded in the status as et-operator's kinds record
  them (``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``, ``currentScaler``, ``phase``:
  :data:`~etctl.common.WORKER_FIELDS`); slots per worker are ``slotsPerWorker``;
* workers to replace follow the Worker replica's restartPolicy
  (:func:`~etctl.jobs.launcher.workers_to_replace`): under OnFailure a failed worker (evicted
  included) is replaced under a new name, under Never it stays failed and leaves
  discover_hosts.sh; a member that vanished while the launcher runs is replaced either way;
* the membership is in use while the launcher runs and the job is not suspended (a suspension
  deletes every pod, the launcher last: the workers it deleted first are not replaced, and the
  resumed job gets them back under their names); scalers start once it runs, and their scripts
  run in its first container;
* the membership is delivered when the running launcher's recorded digest (written by the
  membership pusher) is that of the hostfile and discover_hosts.sh the job's state calls for now,
  or when there is no launcher to deliver them to;
* a membership too large for the ConfigMap or the job's status fails the scale-out that would
  make it (:mod:`._sizes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etctl.common import (
    Elasticity,
    JobState,
    RestartPolicy,
    SizeLimits,
    is_finished,
)
from etctl.jobs.launcher import (
    MemberCost,
    Names,
    job_bytes,
    kubexec_script,
    membership_problem,
    read_launcher,
    workers_to_replace,
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
from etctl.runtime import objects

__all__ = ["REPLICAS_PATH", "member_cost", "read_elasticity", "size_problem"]

REPLICAS_PATH = ("spec", "mpiReplicaSpecs", "Worker", "replicas")
WORKER = MPIReplicaType.WORKER
LAUNCHER = MPIReplicaType.LAUNCHER
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


def read_elasticity(job: MPIJob, state: JobState[Any], *, limits: SizeLimits) -> Elasticity:
    """The scaling machinery's view of ``job`` (see the module docstring)."""
    worker = job.spec.mpi_replica_specs.worker
    low, high = job.spec.bounds()
    domain = state.settings.cluster_domain
    workers = state.pods_of(WORKER)
    launcher = read_launcher(state.pods_of(LAUNCHER), wanted_digest(job, workers, domain))
    suspended = job.run_policy().suspend
    # A suspension deletes every pod, the launcher after the workers: workers it deleted are no
    # vanished members of a launcher that still runs, and the resumed job gets them back.
    running = launcher.running is not None and not suspended
    status = job.status
    replace = workers_to_replace(
        worker.restart_policy if worker is not None else RestartPolicy.NEVER,
        status.target_workers,
        status.current_workers,
        {objects.name(pod): pod for pod in workers},
        launcher_running=running,
    )

    def check(names: Sequence[str]) -> str | None:
        return size_problem(job, names, cluster_domain=domain, limits=limits)

    return Elasticity(
        replica_type=WORKER,
        replicas=worker.replicas if worker is not None else 1,
        replicas_path=REPLICAS_PATH,
        members=status.members(),
        min_replicas=low,
        max_replicas=high,
        member_prefix=worker_prefix(job.metadata.name),
        slots=job.spec.slots_per_worker,
        replace=replace,
        ready=running and not is_finished(status.conditions),
        executor=launcher.executor,
        membership_delivered=launcher.delivered,
        membership_in_use=running,
        membership_problem=check,
        name_rule="a worker's hostname is its name, and a hostname is a DNS label",
    )
