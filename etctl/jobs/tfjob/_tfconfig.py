"""TF_CONFIG: the cluster description each TensorFlow process of a TFJob reads from its environment.

TensorFlow's distribution strategies and estimators learn the cluster, their own role and their
index from one JSON document in the ``TF_CONFIG`` environment variable. The TFJob controller writes
it into the ``tensorflow`` container of every pod, the way kubeflow's training-operator v1 does, so
training code written for kubeflow runs unchanged:

* **Dense form** (the default)::

    {"cluster":{"ps":["job-ps-0.ns.svc:2222"],"worker":["job-worker-0.ns.svc:2222", ...]},
     "task":{"type":"worker","index":0},"environment":"cloud"}

  Every replica type of the job, Evaluator included, is listed under its lower-case name, with one
  address per index ``0..replicas-1``.
* **Sparse form** (``spec.enableDynamicWorker``): a worker knows every PS and only itself, a PS
  only itself, so workers may come and go without rewriting every pod's environment::

    {"cluster":{"worker":{"1":"job-worker-1.ns.svc:2222"},"ps":[...]},"task":{...}}

  Other replica types get an empty worker map and PS list, as kubeflow gives them.

Addresses are the DNS names of the per-replica headless services:
``<job>-<type>-<index>.<namespace>.svc[.<cluster domain>]:<port>``, where the port is the
``tfjob-port`` container port of that replica type's ``tensorflow`` container, else 2222.

Invariants: every function here is pure (no environment or clock reads: the cluster domain comes
from the operator's settings); the JSON is compact and its key order is stable (cluster keys
sorted, then ``task`` with ``type`` before ``index``, then ``environment``), so the same job always
yields byte-identical pods. A job with exactly one replica in total is not distributed and gets no
TF_CONFIG at all (kubeflow's rule: a single process must not wait for a cluster).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from etctl.common import ReplicaSpec, pod_containers
from etctl.common import slot_name as replica_name
from etctl.jobs.tfjob._api import (
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    TFJob,
    TFReplicaType,
)

__all__ = [
    "ENV_NAME",
    "cluster_spec",
    "encode",
    "is_distributed",
    "replica_host",
    "replica_name",
    "replica_port",
    "tf_config",
    "tf_config_json",
]

ENV_NAME = "TF_CONFIG"
"""The environment variable TensorFlow reads its cluster from."""

_PS = TFReplicaType.PS.value.lower()
_WORKER = TFReplicaType.WORKER.value.lower()


def replica_port(spec: ReplicaSpec) -> int:
    """The port TF_CONFIG advertises for a replica type.

    The ``containerPort`` of the port named ``tfjob-port`` on the ``tensorflow`` container, else
    2222 (the port the controller adds to that container when it declares none).
    """
    for container in pod_containers(spec.template):
        if container.get("name") != DEFAULT_CONTAINER_NAME:
            continue
        for port in _ports(container):
            number = port.get("containerPort")
            if port.get("name") == DEFAULT_PORT_NAME and isinstance(number, int):
                return number
    return DEFAULT_PORT


def _ports(container: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    ports = container.get("ports")
    if not isinstance(ports, list):
        return []
    return [port for port in ports if isinstance(port, Mapping)]


def replica_host(
    job_name: str, namespace: str, replica_type: str, index: int, *, cluster_domain: str = ""
) -> str:
    """The DNS name of one replica's headless service.

    ``<job>-<type>-<index>.<namespace>.svc``, followed by ``.<cluster_domain>`` when one is set
    (``cluster.local``); without it the name relies on the pod's DNS search path.
    """
    host = f"{replica_name(job_name, replica_type, index)}.{namespace}.svc"
    domain = cluster_domain.strip(".")
    return f"{host}.{domain}" if domain else host


def cluster_spec(job: TFJob, *, cluster_domain: str = "") -> dict[str, list[str]]:
    """Every replica's address by lower-case replica type, types sorted, indices ascending."""
    name = job.metadata.name
    namespace = job.metadata.namespace
    cluster: dict[str, list[str]] = {}
    for rtype, spec in sorted(job.spec.tf_replica_specs.items(), key=lambda kv: kv[0].lower()):
        port = replica_port(spec)
        cluster[rtype.lower()] = [
            f"{replica_host(name, namespace, rtype, i, cluster_domain=cluster_domain)}:{port}"
            for i in range(max(spec.replicas, 0))
        ]
    return cluster


def is_distributed(job: TFJob) -> bool:
    """False when the job has exactly one replica in total (it then gets no TF_CONFIG)."""
    return sum(spec.replicas for spec in job.spec.tf_replica_specs.values()) != 1


def tf_config(
    job: TFJob, replica_type: str, index: int, *, cluster_domain: str = ""
) -> dict[str, Any]:
    """The TF_CONFIG document of one replica (dense, or sparse with ``enableDynamicWorker``)."""
    cluster = cluster_spec(job, cluster_domain=cluster_domain)
    rtype = replica_type.lower()
    task = {"type": rtype, "index": index}
    if not job.spec.enable_dynamic_worker:
        return {"cluster": cluster, "task": task, "environment": "cloud"}
    own = _own_address(cluster, rtype, index)
    workers: dict[str, str] = {}
    ps: list[str] = []
    if rtype == _PS:
        ps = [own] if own else []
    elif rtype == _WORKER:
        ps = list(cluster.get(_PS, []))
        if own:
            workers[str(index)] = own
    return {"cluster": {"worker": workers, "ps": ps}, "task": task}


def _own_address(cluster: Mapping[str, list[str]], rtype: str, index: int) -> str:
    addresses = cluster.get(rtype, [])
    return addresses[index] if 0 <= index < len(addresses) else ""


def encode(config: Mapping[str, Any]) -> str:
    """Compact JSON in the document's own key order (what TensorFlow and kubeflow expect)."""
    return json.dumps(config, separators=(",", ":"), ensure_ascii=False)


def tf_config_json(job: TFJob, replica_type: str, index: int, *, cluster_domain: str = "") -> str:
    """:func:`tf_config` encoded as the value of the ``TF_CONFIG`` environment variable."""
    return encode(tf_config(job, replica_type, index, cluster_domain=cluster_domain))
