"""The environment every container of a PyTorchJob's pods gets: what ``torchrun`` reads.

training-operator's ``setPodEnv`` (``envvar.go``, ``master.go``, ``elastic.go``), value for value
and in its order, on every container of the pod (sidecars included, as training-operator does):

* ``PYTHONUNBUFFERED=1``;
* with a Master: ``MASTER_PORT`` and ``PET_MASTER_PORT`` (the Master's ``pytorchjob-port``),
  ``MASTER_ADDR`` and ``PET_MASTER_ADDR`` (``<job>-master-0``), ``WORLD_SIZE`` (all replicas
  times ``nprocPerNode`` when it is a number, else times 1), ``RANK`` and ``PET_NODE_RANK`` (0 for
  the Master, a worker's index plus 1);
* ``PET_NPROC_PER_NODE`` from ``spec.nprocPerNode`` when set (``auto`` by default);
* with an ``elasticPolicy``: ``PET_RDZV_ENDPOINT`` (``<host>:<port>``), ``PET_RDZV_BACKEND``
  (``c10d`` unless set), ``PET_NNODES`` (``min:max``), then when set ``PET_MAX_RESTARTS``,
  ``PET_NPROC_PER_NODE`` (the deprecated ``elasticPolicy.nProcPerNode``), ``PET_RDZV_ID``,
  ``PET_RDZV_CONF`` (``k1=v1,k2=v2``) and ``PET_STANDALONE`` (empty: torchrun's flag is set by
  the variable's presence); without one, ``PET_NNODES`` is the number of all replicas.

Two values are etctl's, and better: the rendezvous host, when ``rdzvHost`` is unset, is the job's
rendezvous Service rather than ``<job>-worker-0`` (:mod:`etctl.jobs.pytorchjob._rendezvous`), and
``PET_MAX_RESTARTS`` is the restart budget *left* when the pod is created, so a replaced worker's
torchrun does not start over with the whole budget (the caller passes it).

A variable the template already sets under one of these names is replaced, not duplicated: the
kubelet would let the last one win anyway, and the pod spec then says plainly what runs.
Invariants: pure functions of their arguments; the same job gives byte-identical pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from etctl.common import pod_containers
from etctl.jobs.pytorchjob._api import (
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    ElasticPolicy,
    PyTorchJob,
    PyTorchReplicaSpec,
    PyTorchReplicaType,
    RDZVBackend,
)
from etctl.jobs.pytorchjob._names import master_name

__all__ = [
    "ENV_MASTER_ADDR",
    "ENV_MASTER_PORT",
    "ENV_MAX_RESTARTS",
    "ENV_NNODES",
    "ENV_NODE_RANK",
    "ENV_NPROC_PER_NODE",
    "ENV_RANK",
    "ENV_RDZV_BACKEND",
    "ENV_RDZV_CONF",
    "ENV_RDZV_ENDPOINT",
    "ENV_RDZV_ID",
    "ENV_STANDALONE",
    "ENV_WORLD_SIZE",
    "EnvVar",
    "apply_env",
    "nnodes",
    "nproc_per_node_count",
    "pod_env",
    "replica_port",
    "total_replicas",
]

EnvVar = dict[str, str]
"""One ``{"name": ..., "value": ...}`` entry of a container's ``env``."""

ENV_MASTER_ADDR: Final = "MASTER_ADDR"
ENV_MASTER_PORT: Final = "MASTER_PORT"
ENV_WORLD_SIZE: Final = "WORLD_SIZE"
ENV_RANK: Final = "RANK"
ENV_NODE_RANK: Final = "PET_NODE_RANK"
ENV_NNODES: Final = "PET_NNODES"
ENV_NPROC_PER_NODE: Final = "PET_NPROC_PER_NODE"
ENV_RDZV_ENDPOINT: Final = "PET_RDZV_ENDPOINT"
ENV_RDZV_BACKEND: Final = "PET_RDZV_BACKEND"
ENV_RDZV_ID: Final = "PET_RDZV_ID"
ENV_RDZV_CONF: Final = "PET_RDZV_CONF"
ENV_STANDALONE: Final = "PET_STANDALONE"
ENV_MAX_RESTARTS: Final = "PET_MAX_RESTARTS"
_PET_MASTER_ADDR: Final = "PET_MASTER_ADDR"
_PET_MASTER_PORT: Final = "PET_MASTER_PORT"
_UNBUFFERED: Final = "PYTHONUNBUFFERED"


def _var(name: str, value: str | int) -> EnvVar:
    return {"name": name, "value": str(value)}


def replica_port(spec: PyTorchReplicaSpec | None) -> int:
    """The ``pytorchjob-port`` of a replica type's ``pytorch`` container, else 23456.

    training-operator reads only the container named ``pytorch`` (the defaults added the port to
    it); 23456 is what its defaulting would have added.
    """
    if spec is None:
        return DEFAULT_PORT
    for container in pod_containers(spec.template):
        if container.get("name") != DEFAULT_CONTAINER_NAME:
            continue
        ports = container.get("ports")
        for port in ports if isinstance(ports, list) else []:
            number = port.get("containerPort") if isinstance(port, Mapping) else None
            if port.get("name") == DEFAULT_PORT_NAME and isinstance(number, int):
                return number
    return DEFAULT_PORT


def total_replicas(job: PyTorchJob) -> int:
    """The sum of every replica type's replicas (training-operator's getTotalReplicas)."""
    return sum(spec.replicas for spec in job.spec.pytorch_replica_specs.values())


def nproc_per_node_count(job: PyTorchJob) -> int:
    """``spec.nprocPerNode`` as a number, 1 when it is a device kind or ``auto`` (or unset)."""
    value = job.spec.nproc_per_node
    return int(value) if value is not None and value.isdigit() else 1


def nnodes(job: PyTorchJob, policy: ElasticPolicy) -> str:
    """``PET_NNODES`` of an elastic job: ``min:max``, or the Worker replicas when both are unset."""
    if policy.min_replicas is None and policy.max_replicas is None:
        worker = job.spec.replicas(PyTorchReplicaType.WORKER)
        return str(worker.replicas if worker is not None else 0)
    return f"{policy.min_replicas}:{policy.max_replicas}"


def _master_env(job: PyTorchJob, replica_type: str, index: int) -> list[EnvVar]:
    master = job.spec.replicas(PyTorchReplicaType.MASTER)
    if master is None:
        return []
    port = replica_port(master)
    address = master_name(job.metadata.name)
    rank = index + 1 if replica_type == PyTorchReplicaType.WORKER.value else index
    world = total_replicas(job) * nproc_per_node_count(job)
    return [
        _var(ENV_MASTER_PORT, port),
        _var(_PET_MASTER_PORT, port),
        _var(ENV_MASTER_ADDR, address),
        _var(_PET_MASTER_ADDR, address),
        _var(ENV_WORLD_SIZE, world),
        _var(ENV_RANK, rank),
        _var(ENV_NODE_RANK, rank),
    ]


def _elastic_env(
    job: PyTorchJob, policy: ElasticPolicy, endpoint: str, max_restarts: int | None
) -> list[EnvVar]:
    backend = policy.rdzv_backend or RDZVBackend.C10D
    env = [
        _var(ENV_RDZV_ENDPOINT, endpoint),
        _var(ENV_RDZV_BACKEND, backend.value),
        _var(ENV_NNODES, nnodes(job, policy)),
    ]
    if max_restarts is not None:
        env.append(_var(ENV_MAX_RESTARTS, max_restarts))
    if policy.n_proc_per_node is not None:
        env.append(_var(ENV_NPROC_PER_NODE, policy.n_proc_per_node))
    if policy.rdzv_id is not None:
        env.append(_var(ENV_RDZV_ID, policy.rdzv_id))
    if policy.rdzv_conf is not None and policy.rdzv_conf:
        conf = ",".join(f"{entry.key}={entry.value}" for entry in policy.rdzv_conf)
        env.append(_var(ENV_RDZV_CONF, conf))
    if policy.standalone:
        env.append(_var(ENV_STANDALONE, ""))
    return env


def pod_env(
    job: PyTorchJob,
    replica_type: str,
    index: int,
    *,
    endpoint: str,
    max_restarts: int | None,
) -> list[EnvVar]:
    """The variables of one pod of ``job`` (with training-operator's defaults applied).

    Args:
        job: the job, defaulted (:func:`~etctl.jobs.pytorchjob._defaults.with_defaults`).
        replica_type: the pod's replica type (``Master`` or ``Worker``).
        index: the pod's index within its type.
        endpoint: ``PET_RDZV_ENDPOINT`` (read only for an elastic job).
        max_restarts: ``PET_MAX_RESTARTS`` (None leaves it out): the restart budget left.
    """
    env = [_var(_UNBUFFERED, 1), *_master_env(job, replica_type, index)]
    if job.spec.nproc_per_node is not None:
        env.append(_var(ENV_NPROC_PER_NODE, job.spec.nproc_per_node))
    policy = job.spec.elastic_policy
    if policy is not None:
        env.extend(_elastic_env(job, policy, endpoint, max_restarts))
    else:
        env.append(_var(ENV_NNODES, total_replicas(job)))
    return env


def apply_env(pod_spec: dict[str, Any], env: Sequence[EnvVar]) -> None:
    """Give every container of ``pod_spec`` ``env``, replacing variables of the same names."""
    names = {var["name"] for var in env}
    containers = pod_spec.get("containers")
    for container in containers if isinstance(containers, list) else []:
        if not isinstance(container, dict):
            continue
        kept = [
            var
            for var in container.get("env") or []
            if not (isinstance(var, Mapping) and var.get("name") in names)
        ]
        container["env"] = [*kept, *(dict(var) for var in env)]
