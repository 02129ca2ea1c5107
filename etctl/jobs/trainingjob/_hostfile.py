"""The membership as the launcher reads it: hostfiles, discover_hosts.sh, kubexec.sh, the ConfigMap.

The ConfigMap ``<job>-config`` is the source of truth of what the launcher should see. It is
rendered from the job's ``status.currentWorkers`` (the members, in index order) and holds:

* ``hostfile``: ``<pod>:<slots>`` per member, one per line (Horovod's format);
* ``deepspeed-hostfile``: ``<pod> slots=<slots>`` per member (DeepSpeed's format);
* ``discover_hosts.sh``: prints the live hostfile; ``horovodrun --host-discovery-script`` runs it;
* ``kubexec.sh``: OpenMPI's rsh agent in kubexec mode: runs a command on a worker through
  ``kubectl exec`` (see :func:`kubexec_script` for what it needs).

The launcher's init container copies the hostfiles and discover_hosts.sh from the ConfigMap mount
(``/etc/mpi``) into writable emptyDirs (``/etc/edl``, ``/job``), because a ConfigMap volume is
read-only and slow to follow changes; the membership pusher (:mod:`~etctl.jobs.trainingjob.
membership`) rewrites the copies in place when the ConfigMap changes, and records the SHA-256 of
the hostfile it wrote (:func:`digest`) on the launcher pod.

Slots per worker: ``slotsPerWorker``, else the ``nvidia.com/gpu`` limit of the worker's first
container, else 1 (et-operator's rule).
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from etctl.common import pod_containers

__all__ = [
    "CONFIG_MOUNT",
    "DEEPSPEED_HOSTFILE",
    "DEEPSPEED_KEY",
    "DEEPSPEED_MOUNT",
    "DISCOVER_HOSTS",
    "DISCOVER_KEY",
    "HOSTFILE",
    "HOSTFILE_KEY",
    "HOSTFILE_MOUNT",
    "KUBECTL",
    "KUBECTL_MOUNT",
    "KUBEXEC",
    "KUBEXEC_KEY",
    "PUSHED_ANNOTATION",
    "config_data",
    "deepspeed_hostfile",
    "digest",
    "discover_hosts_script",
    "hostfile",
    "kubexec_script",
    "slots_per_worker",
]

CONFIG_MOUNT = "/etc/mpi"
"""Where the launcher mounts the ConfigMap (read-only)."""
HOSTFILE_MOUNT = "/etc/edl"
"""The writable emptyDir holding the live hostfile and discover_hosts.sh."""
DEEPSPEED_MOUNT = "/job"
"""The writable emptyDir holding the live DeepSpeed hostfile."""
KUBECTL_MOUNT = "/opt/kube"
"""The emptyDir where a kubectl may be delivered for kubexec mode."""

HOSTFILE_KEY = "hostfile"
DISCOVER_KEY = "discover_hosts.sh"
KUBEXEC_KEY = "kubexec.sh"
DEEPSPEED_KEY = "deepspeed-hostfile"

HOSTFILE = f"{HOSTFILE_MOUNT}/hostfile"
DISCOVER_HOSTS = f"{HOSTFILE_MOUNT}/discover_hosts.sh"
DEEPSPEED_HOSTFILE = f"{DEEPSPEED_MOUNT}/hostfile"
KUBEXEC = f"{CONFIG_MOUNT}/kubexec.sh"
KUBECTL = f"{KUBECTL_MOUNT}/kubectl"

PUSHED_ANNOTATION = "etctl.io/hostfile-sha256"
"""On the launcher pod: the SHA-256 of the hostfile the membership pusher last wrote into it."""

_GPU = "nvidia.com/gpu"


def slots_per_worker(slots: int | None, worker_template: Mapping[str, Any]) -> int:
    """``slotsPerWorker``, else the worker's GPU limit, else 1."""
    if slots is not None and slots > 0:
        return slots
    containers = pod_containers(worker_template)
    if containers:
        resources = containers[0].get("resources")
        limits = resources.get("limits") if isinstance(resources, Mapping) else None
        value = limits.get(_GPU) if isinstance(limits, Mapping) else None
        gpus = _whole(value)
        if gpus is not None and gpus > 0:
            return gpus
    return 1


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def hostfile(members: Sequence[str], slots: int) -> str:
    """Horovod's hostfile: ``<pod>:<slots>`` per member."""
    return "".join(f"{member}:{slots}\n" for member in members)


def deepspeed_hostfile(members: Sequence[str], slots: int) -> str:
    """DeepSpeed's hostfile: ``<pod> slots=<slots>`` per member."""
    return "".join(f"{member} slots={slots}\n" for member in members)


def digest(content: str) -> str:
    """The SHA-256 of a hostfile, as the pusher records it on the launcher."""
    return hashlib.sha256(content.encode()).hexdigest()


def discover_hosts_script() -> str:
    """Prints the live hostfile (``horovodrun --host-discovery-script``)."""
    return f"#!/bin/sh\ncat {HOSTFILE}\n"


def kubexec_script(worker_container: str) -> str:
    """OpenMPI's rsh agent in kubexec mode: ``kubexec.sh <pod> <command...>``.

    It needs a ``kubectl`` in the launcher: the one the ``kubectl-delivery`` init container puts
    in ``/opt/kube`` when the operator is given a kubectl image, else one on the image's PATH.
    kubectl authenticates with the launcher's ServiceAccount, whose Role may exec into this job's
    workers only.
    """
    container = shlex.quote(worker_container)
    return (
        "#!/bin/sh\n"
        "# OpenMPI's rsh agent: run a command on a worker pod through the API server.\n"
        'pod="$1"\n'
        "shift\n"
        f"kubectl={KUBECTL}\n"
        'if [ ! -x "$kubectl" ]; then kubectl=$(command -v kubectl); fi\n'
        'if [ -z "$kubectl" ]; then\n'
        f'  echo "kubexec.sh: no kubectl in {KUBECTL_MOUNT} or on PATH" >&2\n'
        "  exit 127\n"
        "fi\n"
        f'exec "$kubectl" exec "$pod" --container {container} -- /bin/sh -c "$*"\n'
    )


def config_data(members: Sequence[str], slots: int, worker_container: str) -> dict[str, str]:
    """The ConfigMap's data for ``members``."""
    return {
        HOSTFILE_KEY: hostfile(members, slots),
        DISCOVER_KEY: discover_hosts_script(),
        KUBEXEC_KEY: kubexec_script(worker_container),
        DEEPSPEED_KEY: deepspeed_hostfile(members, slots),
    }
