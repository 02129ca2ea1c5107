"""The children of a PyTorchJob besides its pods: Services and the HorizontalPodAutoscaler.

* one headless Service per pod, named after it (``<job>-master-0``, ``<job>-worker-<i>``),
  selecting exactly that pod and exposing its ``pytorchjob-port``, as training-operator makes
  them: ``MASTER_ADDR`` resolves through the Master's, and a script that names a worker finds it.
  These are the slots' services (:func:`slot_service`, the plugin's ``build_service``): the
  framework creates them with their pods, in the same round trips, and deletes them with their
  pods (a scale-in, a suspension);
* the rendezvous Service ``<job>-rdzv`` of an elastic job without ``rdzvHost``
  (:mod:`etctl.jobs.pytorchjob._rendezvous`), kept in line with the host it selects: when the
  host goes, the selector moves to the next host in the same reconcile;
* the HPA of ``elasticPolicy.metrics`` (:mod:`etctl.jobs.pytorchjob._hpa`).

The last two are extra objects of the job (created, kept in line and pruned by the controller,
kept while the job is suspended): the rendezvous Service's selector changes over its life, which
only a kept-in-line (``SYNC``) object does. It carries no replica index label, which is how the
controller tells it from the slots' services. No pod needs either to be created (torchrun retries
its rendezvous until the name resolves), so both are written ``with_pods``: a job's creation costs
the pods' round trips and no more. Invariants: pure; the same job and children give
the same objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from etctl.common import DesiredObject, JobState, ReplicaRef, replica_labels
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

__all__ = ["OWNED_RESOURCES", "desired_children", "rendezvous_host", "slot_service"]

OWNED_RESOURCES = (SERVICES, HORIZONTALPODAUTOSCALERS)
"""What a PyTorchJob's extra objects are."""

_PORT_NAME = "pytorchjob-port"


def slot_service(job: PyTorchJob, ref: ReplicaRef, operator: str) -> KubeObject:
    """The headless Service of the pod of slot ``ref``, named after it."""
    selector = replica_labels(job.metadata.name, operator, ref.replica_type, ref.index)
    port = replica_port(job.spec.pytorch_replica_specs.get(ref.replica_type))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": ref.name, "labels": dict(selector)},
        "spec": {
            "clusterIP": "None",
            "selector": selector,
            # Every field the API server would default is set: the Service built is the Service
            # stored, as the rendezvous Service's must be (a kept-in-line list compares whole).
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
    """The rendezvous Service and the HPA ``job`` (defaulted) wants now."""
    operator = state.settings.operator_name
    wanted: list[DesiredObject] = []
    if owns_endpoint(job):
        host = rendezvous_host(job, state)
        service = rendezvous_service(job, host, operator_name=operator)
        wanted.append(
            DesiredObject(
                SERVICES,
                rendezvous_service_name(job.metadata.name),
                lambda: service,
                with_pods=True,
            )
        )
    hpa = desired_hpa(job, operator_name=operator)
    if hpa is not None:
        name = hpa["metadata"]["name"]
        wanted.append(DesiredObject(HORIZONTALPODAUTOSCALERS, name, lambda: hpa, with_pods=True))
    return wanted
