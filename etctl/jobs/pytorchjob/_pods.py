"""What a PyTorchJob adds to each pod built from its replica templates.

training-operator's ``SetClusterSpec`` and ``IsMasterRole``, on the pod the generic controller
built from the (defaulted) template:

* the environment of :mod:`etctl.jobs.pytorchjob._env` on every container;
* with a Master, each Worker gets the init container ``init-pytorch``, which waits (up to 100
  tries, 2 s apart) until ``<job>-master-0`` resolves, so a worker's ``init_process_group`` does
  not time out on a Master whose name does not exist yet (training-operator's template, resources
  and all, on the operator's helper image);
* ``training.kubeflow.org/job-role: master`` on the Master, or on worker 0 when there is none.

Invariants: pure (the pod passed in is the only thing changed); the same inputs give the same pod.
"""

from __future__ import annotations

from typing import Any, Final

from etctl.common import JOB_ROLE
from etctl.jobs.pytorchjob._api import PyTorchJob, PyTorchReplicaType
from etctl.jobs.pytorchjob._env import apply_env, pod_env
from etctl.jobs.pytorchjob._names import master_name
from etctl.runtime import KubeObject

__all__ = ["INIT_CONTAINER_NAME", "MASTER_WAIT_TRIES", "decorate_pod", "is_master_role"]

INIT_CONTAINER_NAME: Final = "init-pytorch"
MASTER_WAIT_TRIES: Final = 100
"""training-operator's ``pytorch-init-container-max-tries`` default."""


def is_master_role(job: PyTorchJob, replica_type: str, index: int) -> bool:
    """Whether a pod carries ``job-role=master``: the Master, else worker 0."""
    if job.spec.replicas(PyTorchReplicaType.MASTER) is not None:
        return replica_type == PyTorchReplicaType.MASTER.value
    return replica_type == PyTorchReplicaType.WORKER.value and index == 0


def master_wait_container(job: PyTorchJob, image: str) -> dict[str, Any]:
    """The init container that waits for ``<job>-master-0`` to resolve."""
    master = master_name(job.metadata.name)
    script = (
        f"err=1;for i in $(seq {MASTER_WAIT_TRIES}); do if nslookup {master}; then err=0 && "
        "break; fi;echo waiting for master; sleep 2; done; exit $err"
    )
    return {
        "name": INIT_CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "100m", "memory": "20Mi"},
            "requests": {"cpu": "50m", "memory": "10Mi"},
        },
        "command": ["sh", "-c", script],
    }


def decorate_pod(
    job: PyTorchJob,
    pod: KubeObject,
    replica_type: str,
    index: int,
    *,
    endpoint: str,
    max_restarts: int | None,
    init_image: str,
) -> None:
    """Add the environment, the Master wait and the role label to a new pod of ``job``.

    Args:
        job: the job, defaulted.
        pod: the pod built from the replica type's template (changed in place).
        replica_type: the pod's replica type.
        index: its index within the type.
        endpoint: the rendezvous endpoint (``PET_RDZV_ENDPOINT`` of an elastic job).
        max_restarts: the restart budget left (``PET_MAX_RESTARTS``; None leaves it out).
        init_image: the image of the Master-wait init container.
    """
    if is_master_role(job, replica_type, index):
        metadata = pod.setdefault("metadata", {})
        metadata.setdefault("labels", {})[JOB_ROLE] = "master"
    spec = pod.setdefault("spec", {})
    env = pod_env(job, replica_type, index, endpoint=endpoint, max_restarts=max_restarts)
    apply_env(spec, env)
    has_master = job.spec.replicas(PyTorchReplicaType.MASTER) is not None
    if has_master and replica_type == PyTorchReplicaType.WORKER.value:
        init = [
            c
            for c in spec.get("initContainers") or []
            if not (isinstance(c, dict) and c.get("name") == INIT_CONTAINER_NAME)
        ]
        spec["initContainers"] = [*init, master_wait_container(job, init_image)]
