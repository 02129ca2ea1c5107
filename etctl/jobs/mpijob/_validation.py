"""What makes an MPIJob impossible to run: mpi-operator's rules, reported so a user can act.

mpi-operator validates in its controller (``ValidateMPIJob``) and only emits a ``ValidationError``
Event; etctl reports the same problems as the job's Failed condition (``MPIJobInvalid``) and a
Warning Event, never a crash or a retry loop. The rules:

* the job's name: every child name derived from it (``<job>-worker-<i>`` for the highest index
  the job may reach, ``<job>-launcher``) is a DNS-1035 label;
* ``mpiReplicaSpecs``: exactly the keys ``Launcher`` (required, one replica) and ``Worker``
  (required: the elastic workers, at least one), each with restartPolicy ``Never`` or
  ``OnFailure`` and a pod template with containers;
* ``slotsPerWorker`` at least 1, ``sshAuthMountPath`` an absolute path;
* ``runPolicy`` numbers in range (ttl, deadline, backoff, gang scheduling);
* ``elasticPolicy``: bounds of at least 1, ``minReplicas`` not above ``maxReplicas``;
* ``mainContainer`` (v1) names a container of the worker template.

A ``Worker.replicas`` outside the elastic bounds is *not* a problem: ``/scale`` may write it, and
the controller clamps it with a Warning Event.
"""

from __future__ import annotations

from etctl.common import (
    RestartPolicy,
    pod_containers,
    validate_name,
    validate_replica_spec,
    validate_run_policy,
    validate_scaling_bounds,
)
from etctl.jobs.mpijob._api import ElasticPolicy, MPIJob, MPIReplicaType
from etctl.jobs.mpijob._names import launcher_name, worker_prefix

__all__ = ["validate_mpijob"]

_PATH = "spec.mpiReplicaSpecs"
_ALLOWED = (RestartPolicy.NEVER, RestartPolicy.ON_FAILURE)


def _longest_suffix(job: MPIJob) -> str:
    """The longest suffix a child name adds to the job's (the highest worker index it may use)."""
    name = job.metadata.name
    targets = job.status.target_workers
    # A started job keeps the names it has; the scaling machinery refuses new names that would
    # not fit, so a later scale never fails a job that runs.
    suffixes = [target[len(name) :] for target in targets]
    worker = job.spec.mpi_replica_specs.worker
    if worker is not None and not targets:
        highest = max(worker.replicas, job.spec.bounds()[1] or 0)
        suffixes.append(worker_prefix(name)[len(name) :] + str(max(highest - 1, 0)))
    suffixes.append(launcher_name(name)[len(name) :])
    return max(suffixes, key=len)


def _restart_policy(policy: RestartPolicy, path: str) -> list[str]:
    if policy in _ALLOWED:
        return []
    return [
        f"{path}.restartPolicy: {policy.value} is not supported; use Never or OnFailure "
        "(mpi-operator's rule)"
    ]


def _elastic_problems(policy: ElasticPolicy | None) -> list[str]:
    if policy is None:
        return []
    return validate_scaling_bounds(
        policy.min_replicas, policy.max_replicas, path="spec.elasticPolicy"
    )


def validate_mpijob(job: MPIJob) -> list[str]:
    """Problems that make ``job`` impossible to run, as ``<path>: <what>; <why>`` lines."""
    spec = job.spec
    specs = spec.mpi_replica_specs
    problems = validate_name(job.metadata.name, longest_suffix=_longest_suffix(job))
    problems.extend(
        f"{_PATH}.{key}: unknown replica type; the types are Launcher and Worker (exact case)"
        for key in specs.unknown()
    )
    launcher, worker = specs.launcher, specs.worker
    if launcher is None:
        problems.append(
            f"{_PATH}.Launcher: missing; an MPIJob needs a launcher whose template runs mpirun "
            "or horovodrun"
        )
    else:
        where = f"{_PATH}.{MPIReplicaType.LAUNCHER.value}"
        problems.extend(validate_replica_spec(launcher, path=where, minimum=1, maximum=1))
        problems.extend(_restart_policy(launcher.restart_policy, where))
    if worker is None:
        problems.append(f"{_PATH}.Worker: missing; an MPIJob needs workers to run its processes on")
    else:
        where = f"{_PATH}.{MPIReplicaType.WORKER.value}"
        problems.extend(validate_replica_spec(worker, path=where, minimum=1))
        problems.extend(_restart_policy(worker.restart_policy, where))
        main = spec.main_container
        names = [str(c.get("name")) for c in pod_containers(worker.template)]
        if main and main not in names:
            problems.append(
                f"spec.mainContainer: {main!r} is not a container of the worker template "
                f"({', '.join(names)}); kubexec.sh runs the MPI processes in it"
            )
    if spec.slots_per_worker < 1:
        problems.append(f"spec.slotsPerWorker: {spec.slots_per_worker} is below 1; set 1 or more")
    if not spec.ssh_auth_mount_path.startswith("/"):
        problems.append(
            f"spec.sshAuthMountPath: {spec.ssh_auth_mount_path!r} is not an absolute path; the "
            "ssh key is mounted there"
        )
    problems.extend(validate_run_policy(spec.run_policy))
    problems.extend(_elastic_problems(spec.elastic_policy))
    return problems
