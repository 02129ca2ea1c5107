"""The names a PyTorchJob's children carry.

* pods and their headless Services: ``<job>-master-0`` and ``<job>-worker-<index>``, as
  training-operator names them (the replica type in lower case, then the index); workers added or
  replaced after the start get indices never used before;
* the rendezvous Service: ``<job>-rdzv``, the name every member's ``PET_RDZV_ENDPOINT`` carries
  when ``elasticPolicy.rdzvHost`` is unset (etctl's; training-operator points every member at
  ``<job>-worker-0`` instead);
* the HorizontalPodAutoscaler of ``elasticPolicy.metrics``: ``<job>``, training-operator's name.

Every name a job's children carry is a DNS-1035 label (Services are named after pods), so the
job's name is at most 63 minus its longest suffix (:data:`SHORTEST_SUFFIX` for the first worker).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "RENDEZVOUS_SUFFIX",
    "SHORTEST_SUFFIX",
    "hpa_name",
    "master_name",
    "rendezvous_service_name",
    "replica_name",
    "worker_name",
    "worker_prefix",
]

RENDEZVOUS_SUFFIX: Final = "-rdzv"
"""What the rendezvous Service's name adds to the job's."""
SHORTEST_SUFFIX: Final = "-worker-0"
"""The suffix of the first worker (and of ``-master-0``): every job has one of the two."""


def replica_name(job: str, replica_type: str, index: int) -> str:
    """``<job>-<type>-<index>``, the type in lower case: a pod and its headless Service."""
    return f"{job}-{replica_type.lower()}-{index}"


def master_name(job: str) -> str:
    """``<job>-master-0``: the Master's pod and Service (``MASTER_ADDR``)."""
    return replica_name(job, "Master", 0)


def worker_prefix(job: str) -> str:
    """``<job>-worker-``: worker pods are this plus their index."""
    return f"{job}-worker-"


def worker_name(job: str, index: int) -> str:
    """``<job>-worker-<index>``."""
    return f"{worker_prefix(job)}{index}"


def rendezvous_service_name(job: str) -> str:
    """``<job>-rdzv``: the Service behind the rendezvous endpoint etctl chooses."""
    return job + RENDEZVOUS_SUFFIX


def hpa_name(job: str) -> str:
    """``<job>``: the HorizontalPodAutoscaler (training-operator's name)."""
    return job
