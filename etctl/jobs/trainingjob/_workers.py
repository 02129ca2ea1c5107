"""A TrainingJob's worker pods and their services (the plan and replacements are shared).

**Pod.** The template plus et-operator's labels (``training-job-role: worker``,
``replica-index``), the ssh key in ssh mode, and a default command when the first container has
none: ``sh -c "/usr/sbin/sshd && sleep 365d"`` (ssh) or ``sh -c "sleep 365d"`` (kubexec). Pods
run with restartPolicy Never, as et-operator's.

**Service.** One headless service per worker, named like it, with et-operator's ports ``ssh-port``
22 and ``kubeai-service-port`` 9009.

Which workers the job keeps and which are replaced under new names (the worker replica's
``restartPolicy``, et-operator's rule) is the framework's, for every elastic kind
(:mod:`etctl.common._scaling.elastic`).
"""

from __future__ import annotations

from typing import Any

from etctl.jobs.trainingjob._layout import mount_ssh
from etctl.jobs.trainingjob._names import compat_labels
from etctl.runtime import KubeObject

__all__ = ["WORKER_PORTS", "decorate_worker", "worker_service"]

WORKER_PORTS = (("ssh-port", 22), ("kubeai-service-port", 9009))

_SSH_COMMAND = ["sh", "-c", "/usr/sbin/sshd && sleep 365d"]
_IDLE_COMMAND = ["sh", "-c", "sleep 365d"]


def decorate_worker(pod: KubeObject, *, job: str, index: int, ssh_secret: str | None) -> None:
    """Turn the pod built from the worker template into a worker (mutates ``pod``)."""
    metadata = pod.setdefault("metadata", {})
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        **compat_labels(job, "worker", index),
    }
    main = pod["spec"]["containers"][0]
    if not main.get("command"):
        main["command"] = list(_SSH_COMMAND if ssh_secret is not None else _IDLE_COMMAND)
    if ssh_secret is not None:
        mount_ssh(pod, ssh_secret)


def worker_service() -> KubeObject:
    """The headless service of a worker (the controller names it and selects the pod)."""
    ports: list[dict[str, Any]] = [
        {"name": name, "port": port, "targetPort": port, "protocol": "TCP"}
        for name, port in WORKER_PORTS
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {},
        "spec": {"clusterIP": "None", "ports": ports},
    }
