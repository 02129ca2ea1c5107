"""training-operator's defaults of a PyTorchJob (``SetDefaults_PyTorchJob``), as a pure function.

The constant defaults (replicas 1, restartPolicy OnFailure, cleanPodPolicy None, replica type keys
camel-cased) are the models' and the CRD schema's. :func:`with_defaults` adds the rest, in
training-operator's order:

1. every replica type's pod template gets the ``pytorchjob-port`` (23456) on its ``pytorch``
   container (on its first container when none is named ``pytorch``) unless that container
   declares a port of that name;
2. ``elasticPolicy`` bounds: both set are kept; only ``maxReplicas`` set makes ``minReplicas``
   equal to it; only ``minReplicas`` set makes ``maxReplicas`` equal to it; neither set makes both
   ``Worker.replicas`` (so ``PET_NNODES`` reads ``n:n``);
3. ``nprocPerNode`` is ``auto`` unless it or ``elasticPolicy.nProcPerNode`` is set.

training-operator applies these in its controller at every reconcile and never writes them back,
so ``kubectl get`` shows the manifest as written; etctl does the same (the status shows the
bounds in force). Invariants: the input is never changed; applying the function twice gives what
applying it once gives.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from etctl.jobs.pytorchjob._api import (
    DEFAULT_CONTAINER_NAME,
    DEFAULT_NPROC_PER_NODE,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    ElasticPolicy,
    PyTorchJob,
    PyTorchReplicaSpec,
    PyTorchReplicaType,
)

__all__ = ["elastic_bounds", "with_default_port", "with_defaults"]


def _default_container_index(containers: list[Any]) -> int:
    """The ``pytorch`` container's index, else 0 (training-operator's getDefaultContainerIndex)."""
    for index, container in enumerate(containers):
        if isinstance(container, Mapping) and container.get("name") == DEFAULT_CONTAINER_NAME:
            return index
    return 0


def with_default_port(template: Mapping[str, Any]) -> dict[str, Any]:
    """``template`` (a copy) whose default container declares the ``pytorchjob-port``."""
    out = copy.deepcopy(dict(template))
    spec = out.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return out
    container = containers[_default_container_index(containers)]
    if not isinstance(container, dict):
        return out
    ports = container.get("ports")
    ports = ports if isinstance(ports, list) else []
    if not any(isinstance(p, Mapping) and p.get("name") == DEFAULT_PORT_NAME for p in ports):
        container["ports"] = [*ports, {"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT}]
    return out


def elastic_bounds(policy: ElasticPolicy, worker_replicas: int | None) -> tuple[int, int] | None:
    """``(minReplicas, maxReplicas)`` after training-operator's defaulting (None: no bounds).

    None only when neither bound is set and the job has no Worker to take them from (validation
    reports that job).
    """
    low, high = policy.min_replicas, policy.max_replicas
    if low is not None and high is not None:
        return low, high
    if high is not None:
        return high, high
    if low is not None:
        return low, low
    if worker_replicas is None:
        return None
    return worker_replicas, worker_replicas


def _defaulted_policy(job: PyTorchJob) -> ElasticPolicy | None:
    policy = job.spec.elastic_policy
    if policy is None:
        return None
    worker = job.spec.replicas(PyTorchReplicaType.WORKER)
    bounds = elastic_bounds(policy, worker.replicas if worker is not None else None)
    if bounds is None:
        return policy
    low, high = bounds
    return policy.model_copy(update={"min_replicas": low, "max_replicas": high})


def with_defaults(job: PyTorchJob) -> PyTorchJob:
    """``job`` with training-operator's defaults applied (see the module docstring)."""
    specs: dict[str, PyTorchReplicaSpec] = {
        rtype: spec.model_copy(update={"template": with_default_port(spec.template)})
        for rtype, spec in job.spec.pytorch_replica_specs.items()
    }
    update: dict[str, Any] = {"pytorch_replica_specs": specs}
    policy = _defaulted_policy(job)
    update["elastic_policy"] = policy
    if job.spec.nproc_per_node is None and (policy is None or policy.n_proc_per_node is None):
        update["nproc_per_node"] = DEFAULT_NPROC_PER_NODE
    return job.model_copy(update={"spec": job.spec.model_copy(update=update)})
