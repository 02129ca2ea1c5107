"""What a launcher reads of its workers: hostfiles, ``discover_hosts.sh``, ``kubexec.sh``. Pure.

A launcher/worker kind renders these into its ConfigMap (``<job>-config`` for every kind so far)
from its members, and picks the formats its tools parse:

* a **hostfile** lists every member with its slots, one per line, in one of two formats
  (:class:`HostfileFormat`): ``<host>:<slots>`` (Horovod, Intel MPI, MPICH) or
  ``<host> slots=<slots>`` (Open MPI, DeepSpeed). A host is the member's pod name, or its DNS name
  ``<pod>.<service>.<namespace>.svc[.<cluster domain>]`` behind a headless service
  (:func:`member_host`);
* **discover_hosts.sh** is what ``horovodrun --host-discovery-script`` runs every second; it must
  print ``<host>:<slots>`` lines. Either it prints a file kept current elsewhere
  (:func:`discover_hosts_script`: ``cat <path>``) or it lists the hosts itself
  (:func:`discover_hosts_listing`: one ``echo`` per host, sorted), rendered from the members whose
  pod runs and, for kinds that say so, is Ready (:func:`live_hosts`);
* **kubexec.sh** is Open MPI's rsh agent in kubexec mode (:func:`kubexec_script`): it runs a command
  on a worker through ``kubectl exec``. Horovod switches to it only when ``OMPI_MCA_plm_rsh_agent``
  is exactly ``/etc/mpi/kubexec.sh`` (:data:`CONFIG_MOUNT` plus :data:`KUBEXEC_KEY`).

Slots per worker (:func:`slots_per_worker`): the kind's setting, else the ``nvidia.com/gpu`` limit
of the worker's first container, else 1. The SHA-256 of a file (:func:`digest`) is how the
membership pusher records what a launcher holds.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from etctl.common import pod_containers
from etctl.runtime import ObjectView, objects, podview

__all__ = [
    "CONFIG_MOUNT",
    "DISCOVER_KEY",
    "HOSTFILE_KEY",
    "KUBECTL",
    "KUBECTL_MOUNT",
    "KUBEXEC_KEY",
    "PUSHED_ANNOTATION",
    "HostfileFormat",
    "digest",
    "discover_hosts_listing",
    "discover_hosts_script",
    "hostfile",
    "kubexec_script",
    "live_hosts",
    "member_host",
    "slots_hostfile",
    "slots_per_worker",
]

CONFIG_MOUNT = "/etc/mpi"
"""Where launchers mount the ConfigMap (mpi-operator's and et-operator's path; Horovod's too)."""
KUBECTL_MOUNT = "/opt/kube"
"""The emptyDir a kubectl is delivered to for kubexec mode."""
KUBECTL = f"{KUBECTL_MOUNT}/kubectl"

HOSTFILE_KEY = "hostfile"
DISCOVER_KEY = "discover_hosts.sh"
KUBEXEC_KEY = "kubexec.sh"

PUSHED_ANNOTATION = "etctl.io/hostfile-sha256"
"""On a launcher pod: the SHA-256 of the membership file the pusher last wrote into it."""

_GPU = "nvidia.com/gpu"


class HostfileFormat(StrEnum):
    """How a hostfile line gives a host's slots."""

    COLON = "colon"
    """``<host>:<slots>`` (Horovod, Intel MPI, MPICH)."""
    SLOTS = "slots"
    """``<host> slots=<slots>`` (Open MPI, DeepSpeed)."""

    def line(self, host: str, slots: int) -> str:
        """One host's line, newline included."""
        if self is HostfileFormat.COLON:
            return f"{host}:{slots}\n"
        return f"{host} slots={slots}\n"

    def render(self, hosts: Iterable[str], slots: int) -> str:
        """The hostfile of ``hosts``, in the order given."""
        return "".join(self.line(host, slots) for host in hosts)


def hostfile(hosts: Iterable[str], slots: int) -> str:
    """``<host>:<slots>`` per host (Horovod's format)."""
    return HostfileFormat.COLON.render(hosts, slots)


def slots_hostfile(hosts: Iterable[str], slots: int) -> str:
    """``<host> slots=<slots>`` per host (Open MPI's and DeepSpeed's format)."""
    return HostfileFormat.SLOTS.render(hosts, slots)


def member_host(
    pod: str, *, service: str | None = None, namespace: str = "", cluster_domain: str = ""
) -> str:
    """How other pods reach member ``pod``: its name, or its DNS name behind ``service``.

    With a headless ``service`` (and the pod's ``subdomain`` set to it), the name is
    ``<pod>.<service>.<namespace>.svc``, with ``.<cluster_domain>`` when one is given.
    """
    if service is None:
        return pod
    name = f"{pod}.{service}.{namespace}.svc"
    return f"{name}.{cluster_domain}" if cluster_domain else name


def slots_per_worker(slots: int | None, worker_template: Mapping[str, Any]) -> int:
    """``slots`` when set, else the worker's GPU limit, else 1."""
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


def digest(content: str) -> str:
    """The SHA-256 of a file's content, as the pusher records it on the launcher."""
    return hashlib.sha256(content.encode()).hexdigest()


def live_hosts(
    members: Iterable[str], pods: Iterable[ObjectView], *, ready: bool = True
) -> list[str]:
    """The ``members`` whose pod runs (and, with ``ready``, is Ready), not terminating, sorted.

    Horovod reaches a host as soon as discover_hosts.sh names it: a worker whose sshd (or
    container) is not up yet would be blacklisted, so kinds publish Ready workers only; and a
    worker being deleted is on its way out.
    """
    wanted = set(members)
    up = (
        objects.name(pod)
        for pod in pods
        if not objects.is_terminating(pod)
        and (podview.running_and_ready(pod) if ready else podview.phase(pod) == "Running")
    )
    return sorted(name for name in up if name in wanted)


def discover_hosts_script(path: str) -> str:
    """A discover_hosts.sh that prints the file at ``path`` (kept current by the pusher)."""
    return f"#!/bin/sh\ncat {shlex.quote(path)}\n"


def discover_hosts_listing(hosts: Iterable[str], slots: int) -> str:
    """A discover_hosts.sh that prints ``<host>:<slots>`` for each of ``hosts``, sorted."""
    lines = "".join(f"echo {shlex.quote(f'{host}:{slots}')}\n" for host in sorted(hosts))
    return f"#!/bin/sh\n{lines}"


def kubexec_script(worker_container: str, *, kubectl: str = KUBECTL) -> str:
    """Open MPI's rsh agent in kubexec mode: ``kubexec.sh <pod> <command...>``.

    It runs the command in ``worker_container`` through ``kubectl exec``. It needs a kubectl in the
    launcher: the one delivered at ``kubectl`` (an init container copies it from an image the
    operator is given), else one on the image's PATH; without either it exits 127 saying so.
    kubectl authenticates as the launcher's ServiceAccount, whose Role may exec into the job's
    workers only.
    """
    container = shlex.quote(worker_container)
    directory = kubectl.rpartition("/")[0] or kubectl
    return (
        "#!/bin/sh\n"
        "# OpenMPI's rsh agent: run a command on a worker pod through the API server.\n"
        'pod="$1"\n'
        "shift\n"
        f"kubectl={kubectl}\n"
        'if [ ! -x "$kubectl" ]; then kubectl=$(command -v kubectl); fi\n'
        'if [ -z "$kubectl" ]; then\n'
        f'  echo "kubexec.sh: no kubectl in {directory} or on PATH" >&2\n'
        "  exit 127\n"
        "fi\n"
        f'exec "$kubectl" exec "$pod" --container {container} -- /bin/sh -c "$*"\n'
    )
