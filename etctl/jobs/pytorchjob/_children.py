"""The children of a PyTorchJob besides its pods: Services and the HorizontalPodAutoscaler.

All of them are extra objects of the job (created, kept in line and pruned by the controller):

* one headless Service per pod, named after it (``<job>-master-0``, ``<job>-worker-<i>``),
  selecting exactly that pod and exposing its ``pytorchjob-port``, as training-operator makes
  them: ``MASTER_ADDR`` resolves through the Master's, and a script that names a worker finds it;
* the rendezvous Service ``<job>-rdzv`` of an elastic job without ``rdzvHost``
  (:mod:`etctl.jobs.pytorchjob._rendezvous`), kept in line with the host it selects: when the
  host goes, the selector moves to the next host in the same reconcile;
* the HPA of ``elasticPolicy.metrics`` (:mod:`etctl.jobs.pytorchjob._hpa`).

They are extra objects rather than per-slot services because the rendezvous Service's selector
changes over its life, which only a kept-in-line (``SYNC``) object does. Invariants: pure; the
same job and children give the same objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from etctl.common import DesiredObject, JobState, replica_labels
from etctl.jobs.pytorchjob._api import PyTorchJob, PyTorchReplicaType
from etctl.jobs.pytorchjob._env import replica_port
from etctl.jobs.pytorchjob._hpa import HORIZONTALPODAUTOSCALERS, desired_hpa
from etctl.jobs.pytorchjob._names import rendezvous_service_name
from etctl.jobs.pytorchjob._rendezvous import (
    choose_host,
    owns_endpoint,
    rendezvous_service,
    selected_index,
)
from etctl.runtime import SERVICES, KubeObject, ObjectView

__all__ = ["OWNED_RESOURCES", "desired_children", "rendezvous_host"]

OWNED_RESOURCES = (SERVICES, HORIZONTALPODAUTOSCALERS)
"""What a PyTorchJob's extra objects are."""

_PORT_NAME = "pytorchjob-port"


def _slot_service(job: PyTorchJob, rtype: str, index: int, operator: str) -> KubeObject:
    selector = replica_labels(job.metadata.name, operator, rtype, index)
    port = replica_port(job.spec.pytorch_replica_specs.get(rtype))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"labels": dict(selector)},
        "spec": {
            "clusterIP": "None",
            "selector": selector,
            # Every field the API server would default is set: lists compare whole, and a port
            # without them would drift from the stored one on every reconcile.
            "ports": [{"name": _PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def rendezvous_host(job: PyTorchJob, state: JobState[Any]) -> int:
    """The worker index hosting the rendezvous now (the rendezvous Service's selection)."""
    services: Mapping[str, ObjectView] = state.children.get(SERVICES, {})
    current = selected_index(services.get(rendezvous_service_name(job.metadata.name)))
    workers = state.pods_of(PyTorchReplicaType.WORKER.value)
    return choose_host(job.metadata.name, workers, job.status.target_workers, current)


def desired_children(job: PyTorchJob, state: JobState[Any]) -> Sequence[DesiredObject]:
    """Every Service and the HPA ``job`` (defaulted) wants now."""
    operator = state.settings.operator_name
    wanted: list[DesiredObject] = []
    for rtype, planned in state.plans.items():
        for ref in planned.slots:

            def build(rtype: str = rtype, index: int = ref.index) -> KubeObject:
                return _slot_service(job, rtype, index, operator)

            wanted.append(DesiredObject(SERVICES, ref.name, build))
    if owns_endpoint(job):
        host = rendezvous_host(job, state)
        service = rendezvous_service(job, host, operator_name=operator)
        wanted.append(
            DesiredObject(SERVICES, rendezvous_service_name(job.metadata.name), lambda: service)
        )
    hpa = desired_hpa(job, operator_name=operator)
    if hpa is not None:
        name = hpa["metadata"]["name"]
        wanted.append(DesiredObject(HORIZONTALPODAUTOSCALERS, name, lambda: hpa))
    return wanted
