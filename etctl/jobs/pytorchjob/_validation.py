"""What makes a PyTorchJob impossible to run, reported so a user can act.

training-operator checks a PyTorchJob in its validating webhook (``pytorchjob_webhook.go``); etctl
checks the same rules, and those torchrun would only fail on at start, in three places: the CRD's
schema and CEL rules refuse most at ``kubectl apply`` (:mod:`etctl.jobs.pytorchjob._api`);
:func:`validate_pytorchjob` reports every rule again for a stored job (the controller turns its
problems into a ``Failed`` condition and a Warning Event, and creates nothing); and
:func:`validate_update` is what an update must keep (what an admission webhook refuses). The
rules:

* the job's name, and every child name derived from it (``<job>-master-0``,
  ``<job>-worker-<i>`` up to the highest index the job may reach, ``<job>-rdzv``), is a DNS-1035
  label;
* ``pytorchReplicaSpecs``: only ``Master`` (exactly one replica) and ``Worker`` (at least one),
  each with a pod template whose containers have images and one of which is named ``pytorch``
  (training-operator reads the job's ports there); an ``elasticPolicy`` needs a ``Worker``;
* ``elasticPolicy``: bounds of at least 1, ``minReplicas`` not above ``maxReplicas``; an etcd
  backend names its etcd server (``rdzvHost``); ``nProcPerNode`` at least 1, and not together with
  ``spec.nprocPerNode``; ``rdzvConf`` entries torchrun can parse; ``maxRestarts`` not negative;
  metrics the HPA would accept;
* ``nprocPerNode``: ``auto``, ``cpu``, ``gpu``, ``xpu`` or a positive count;
* a job not started yet asks for no more Worker replicas than its maximum (once it runs,
  ``/scale`` and HPAs may write any count: the scaling machinery clamps it with a Warning Event);
* ``runPolicy`` numbers in range.
"""

from __future__ import annotations

import re

from etctl.common import (
    pod_containers,
    validate_name,
    validate_replica_spec,
    validate_run_policy,
    validate_scaling_bounds,
)
from etctl.jobs.pytorchjob._api import (
    DEFAULT_CONTAINER_NAME,
    NPROC_PER_NODE_PATTERN,
    ElasticPolicy,
    PyTorchJob,
    PyTorchReplicaType,
    RDZVBackend,
)
from etctl.jobs.pytorchjob._defaults import elastic_bounds
from etctl.jobs.pytorchjob._metrics import metric_problems
from etctl.jobs.pytorchjob._names import RENDEZVOUS_SUFFIX, master_name, worker_name

__all__ = ["validate_pytorchjob", "validate_update"]

_SPECS = "spec.pytorchReplicaSpecs"
_POLICY = "spec.elasticPolicy"
_TYPES = ", ".join(t.value for t in PyTorchReplicaType)
_NPROC = re.compile(NPROC_PER_NODE_PATTERN)


def _longest_suffix(job: PyTorchJob) -> str:
    """The longest suffix a child name adds to the job's (the highest worker index it may use)."""
    name = job.metadata.name
    suffixes = [RENDEZVOUS_SUFFIX]
    if job.spec.replicas(PyTorchReplicaType.MASTER) is not None:
        suffixes.append(master_name(name)[len(name) :])
    targets = job.status.target_workers
    # A started job keeps the names it has; the scaling machinery refuses new names that would
    # not fit, so a later scale never fails a job that runs.
    suffixes.extend(target[len(name) :] for target in targets)
    worker = job.spec.replicas(PyTorchReplicaType.WORKER)
    if worker is not None and not targets:
        highest = worker.replicas
        if job.spec.elastic_policy is not None:
            bounds = elastic_bounds(job.spec.elastic_policy, worker.replicas)
            highest = max(highest, bounds[1] if bounds else 0)
        suffixes.append(worker_name(name, max(highest - 1, 0))[len(name) :])
    return max(suffixes, key=len)


def _replica_problems(job: PyTorchJob) -> list[str]:
    specs = job.spec.pytorch_replica_specs
    if not specs:
        return [f"{_SPECS}: no replica specs; set Worker (and optionally one Master)"]
    problems = []
    for rtype, spec in specs.items():
        where = f"{_SPECS}.{rtype}"
        if rtype not in (PyTorchReplicaType.MASTER, PyTorchReplicaType.WORKER):
            problems.append(f"{where}: unknown replica type; the types are {_TYPES}")
            continue
        master = rtype == PyTorchReplicaType.MASTER
        problems.extend(
            validate_replica_spec(spec, path=where, minimum=1, maximum=1 if master else None)
        )
        names = [str(container.get("name")) for container in pod_containers(spec.template)]
        if DEFAULT_CONTAINER_NAME not in names:
            problems.append(
                f'{where}.template.spec.containers: no container named "{DEFAULT_CONTAINER_NAME}";'
                " its pytorchjob-port is the port the job's processes meet on"
            )
    return problems


def _conf_problems(policy: ElasticPolicy) -> list[str]:
    problems = []
    for index, entry in enumerate(policy.rdzv_conf or ()):
        where = f"{_POLICY}.rdzvConf[{index}]"
        if not entry.key or any(c in entry.key for c in ",= \t"):
            problems.append(
                f"{where}.key: {entry.key!r} is not an option name torchrun can parse "
                "(no ',', '=' or spaces, not empty)"
            )
        if not entry.value or any(c in entry.value for c in ", \t"):
            problems.append(
                f"{where}.value: {entry.value!r} is not a value torchrun can parse "
                "(no ',' or spaces, not empty)"
            )
    return problems


def _elastic_problems(job: PyTorchJob, policy: ElasticPolicy) -> list[str]:
    problems = validate_scaling_bounds(policy.min_replicas, policy.max_replicas, path=_POLICY)
    worker = job.spec.replicas(PyTorchReplicaType.WORKER)
    if worker is None:
        problems.append(
            f"{_SPECS}.Worker: missing; an elastic PyTorchJob's workers are the members its "
            "elasticPolicy scales"
        )
    backend = policy.rdzv_backend or RDZVBackend.C10D
    if backend is not RDZVBackend.C10D and policy.rdzv_host is None:
        problems.append(
            f"{_POLICY}.rdzvHost: missing; the {backend} backend rendezvous through an etcd "
            "server of your own: set rdzvHost (and rdzvPort) to its address"
        )
    if policy.rdzv_port is not None and not 1 <= policy.rdzv_port <= 65535:
        problems.append(f"{_POLICY}.rdzvPort: {policy.rdzv_port} is not a port (1 to 65535)")
    if policy.n_proc_per_node is not None:
        if policy.n_proc_per_node < 1:
            problems.append(
                f"{_POLICY}.nProcPerNode: {policy.n_proc_per_node} is below 1; each worker "
                "runs at least one process"
            )
        if job.spec.nproc_per_node is not None:
            problems.append(
                f"{_POLICY}.nProcPerNode: must not be used with spec.nprocPerNode; keep "
                "spec.nprocPerNode (elasticPolicy.nProcPerNode is deprecated)"
            )
    if policy.max_restarts is not None and policy.max_restarts < 0:
        problems.append(f"{_POLICY}.maxRestarts: {policy.max_restarts} is negative")
    problems.extend(_conf_problems(policy))
    problems.extend(metric_problems(policy.metrics or (), path=f"{_POLICY}.metrics"))
    if worker is not None and not job.status.target_workers:
        problems.extend(_start_problems(policy, worker.replicas))
    return problems


def _start_problems(policy: ElasticPolicy, replicas: int) -> list[str]:
    """A job not started yet may not ask for more workers than its maximum.

    Fewer than its minimum is no problem: the job starts with the minimum (what its HPA would
    scale it to at once), with a Warning Event saying so.
    """
    bounds = elastic_bounds(policy, replicas)
    if bounds is None or replicas <= bounds[1]:
        return []
    return [
        f"{_SPECS}.Worker.replicas: {replicas} is above elasticPolicy.maxReplicas {bounds[1]} "
        "(unset, it is minReplicas); start within the bounds, then scale with kubectl scale or "
        "an HPA"
    ]


def validate_pytorchjob(job: PyTorchJob) -> list[str]:
    """Problems that make ``job`` impossible to run, as ``<path>: <what>; <why>`` lines."""
    problems = validate_name(job.metadata.name, longest_suffix=_longest_suffix(job))
    problems.extend(_replica_problems(job))
    policy = job.spec.elastic_policy
    if policy is not None:
        problems.extend(_elastic_problems(job, policy))
    nproc = job.spec.nproc_per_node
    if nproc is not None and not _NPROC.fullmatch(nproc):
        problems.append(
            f"spec.nprocPerNode: {nproc!r} is not what torchrun accepts; use auto, cpu, gpu, "
            "xpu or a positive count"
        )
    problems.extend(validate_run_policy(job.spec.run_policy))
    return problems


def validate_update(old: PyTorchJob, new: PyTorchJob) -> list[str]:
    """What an update must keep, beyond :func:`validate_pytorchjob` of the new job.

    ``elasticPolicy.maxReplicas`` may not be lowered below the Worker replicas the job asks for:
    scale the job in first. Writing a Worker count above an unchanged maximum is ``/scale``'s and
    the HPA's business, and is clamped, not refused. A job without an ``elasticPolicy`` keeps its
    Worker replicas: its pods' ``WORLD_SIZE`` and ``RANK`` are fixed. And whether a job is
    elastic is settled at its creation: an ``elasticPolicy`` is never added or removed, since the
    pods made afterwards would get another world than the running ones.
    """
    policy, before = new.spec.elastic_policy, old.spec.elastic_policy
    if (policy is None) != (before is None):
        verb = "added" if before is None else "removed"
        return [
            f"{_POLICY}: may not be {verb} once the PyTorchJob exists: its pods' environment "
            "(a fixed WORLD_SIZE and RANK, or torchrun's rendezvous) is settled; create a new job"
        ]
    worker = new.spec.replicas(PyTorchReplicaType.WORKER)
    was = old.spec.replicas(PyTorchReplicaType.WORKER)
    if (
        policy is None
        and worker is not None
        and was is not None
        and worker.replicas != was.replicas
    ):
        return [
            f"{_SPECS}.Worker.replicas: may not change ({was.replicas} to {worker.replicas}) "
            "in a PyTorchJob without an elasticPolicy: its pods' WORLD_SIZE and RANK are "
            "fixed; a job created with an elasticPolicy can be scaled"
        ]
    if policy is None or policy.max_replicas is None or worker is None:
        return []
    if before is not None and before.max_replicas == policy.max_replicas:
        return []
    if worker.replicas <= policy.max_replicas:
        return []
    return [
        f"{_POLICY}.maxReplicas: {policy.max_replicas} is below the {worker.replicas} Worker "
        "replicas the job asks for; scale the job in first (kubectl scale), then lower it"
    ]
