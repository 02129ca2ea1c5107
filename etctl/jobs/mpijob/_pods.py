"""What an MPIJob adds to the pods built from its templates: roles, host names, environment.

Both pods (mpi-operator's layout, so existing images and commands work unchanged):

* the label ``training.kubeflow.org/job-role`` (``launcher`` or ``worker``) next to the generic
  ``training.kubeflow.org/*`` labels, and ``K_MPI_JOB_ROLE`` in the first container;
* in ssh mode, ``hostname`` = the pod's name and ``subdomain`` = the job's headless Service, and
  the DNS search ``<job>.<namespace>.svc.<cluster domain>`` (Intel MPI and MPICH reach the
  launcher by its short host name). With ``hostNetwork`` the DNS policy becomes
  ``ClusterFirstWithHostNet`` so those names still resolve.

Workers: a first container without a command or arguments gets one: ``/usr/sbin/sshd -De`` (ssh)
or ``sleep 365d`` (kubexec: the launcher execs into it).

Launcher, first container: per MPI implementation, where the hostfile is and how to reach the
workers (OpenMPI: ``OMPI_MCA_orte_keep_fqdn_hostnames``, ``OMPI_MCA_orte_default_hostfile``,
``OMPI_MCA_plm_rsh_args``, ``OMPI_MCA_orte_set_default_slots``; Intel:
``I_MPI_HYDRA_HOST_FILE``, ``I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS``, ``I_MPI_PERHOST``; MPICH:
``HYDRA_HOST_FILE``, ``HYDRA_LAUNCH_EXTRA_ARGS``); ``NVIDIA_VISIBLE_DEVICES`` and
``NVIDIA_DRIVER_CAPABILITIES`` blanked unless it runs as a worker (a launcher must not grab GPUs by
accident). In kubexec mode, mpi-operator v1's two instead of the implementation's:
``OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh`` (Horovod switches to ``kubectl exec`` only on
exactly that path) and ``OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile``.

Variables the template sets itself are overridden (the operator's wiring wins, as mpi-operator's
appended values win in the kubelet); everything else in the template is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from etctl.common import JOB_ROLE
from etctl.jobs.mpijob._api import LauncherAttachMode, MPIImplementation, MPIJobSpec
from etctl.runtime import KubeObject

__all__ = [
    "CONFIG_MOUNT",
    "DISCOVER_HOSTS",
    "HOSTFILE",
    "KUBEXEC",
    "ROLE_ENV",
    "decorate_launcher",
    "decorate_worker",
    "launcher_env",
]

CONFIG_MOUNT = "/etc/mpi"
"""Where the launcher finds the hostfile and the scripts."""
HOSTFILE = f"{CONFIG_MOUNT}/hostfile"
DISCOVER_HOSTS = f"{CONFIG_MOUNT}/discover_hosts.sh"
KUBEXEC = f"{CONFIG_MOUNT}/kubexec.sh"
ROLE_ENV = "K_MPI_JOB_ROLE"

_SSH_COMMAND = ["/usr/sbin/sshd", "-De"]
_IDLE_COMMAND = ["sleep", "365d"]
_CONNECT = "-o ConnectionAttempts=10"


def launcher_env(spec: MPIJobSpec) -> list[dict[str, str]]:
    """The variables the launcher's first container gets (see the module docstring)."""
    env = [{"name": ROLE_ENV, "value": "launcher"}]
    slots = str(spec.slots_per_worker)
    kubexec = spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
    implementation = spec.mpi_implementation
    if kubexec:
        env += [
            {"name": "OMPI_MCA_plm_rsh_agent", "value": KUBEXEC},
            {"name": "OMPI_MCA_orte_default_hostfile", "value": HOSTFILE},
        ]
    elif implementation is MPIImplementation.OPENMPI:
        env += [
            {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
            {"name": "OMPI_MCA_orte_default_hostfile", "value": HOSTFILE},
            {"name": "OMPI_MCA_plm_rsh_args", "value": _CONNECT},
            {"name": "OMPI_MCA_orte_set_default_slots", "value": slots},
        ]
    elif implementation is MPIImplementation.INTEL:
        env += [
            {"name": "I_MPI_HYDRA_HOST_FILE", "value": HOSTFILE},
            {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "value": _CONNECT},
            {"name": "I_MPI_PERHOST", "value": slots},
        ]
    else:
        env += [
            {"name": "HYDRA_HOST_FILE", "value": HOSTFILE},
            {"name": "HYDRA_LAUNCH_EXTRA_ARGS", "value": _CONNECT},
        ]
    if not spec.run_launcher_as_worker:
        env += [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": ""},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
        ]
    return env


def _set_env(container: dict[str, Any], env: Sequence[Mapping[str, str]]) -> None:
    names = {entry["name"] for entry in env}
    kept = [e for e in container.get("env") or [] if _name(e) not in names]
    container["env"] = [*kept, *(dict(entry) for entry in env)]


def _name(entry: object) -> object:
    return entry.get("name") if isinstance(entry, Mapping) else None


def _role(pod: KubeObject, role: str) -> dict[str, Any]:
    metadata = pod.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), JOB_ROLE: role}
    spec: dict[str, Any] = pod.setdefault("spec", {})
    return spec


def _addressable(spec: dict[str, Any], *, pod: str, job: str, search: str) -> None:
    """Give the pod the host name ``<pod>.<job>`` and the job's DNS search domain."""
    spec["hostname"] = pod
    spec["subdomain"] = job
    if spec.get("hostNetwork"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    dns = spec.get("dnsConfig")
    dns = dict(dns) if isinstance(dns, Mapping) else {}
    searches = [s for s in dns.get("searches") or [] if s != search]
    dns["searches"] = [*searches, search]
    spec["dnsConfig"] = dns


def _search(job: str, namespace: str, cluster_domain: str) -> str:
    return f"{job}.{namespace}.svc.{cluster_domain or 'cluster.local'}"


def decorate_worker(
    pod: KubeObject, *, job: str, namespace: str, spec: MPIJobSpec, cluster_domain: str
) -> None:
    """Turn the pod built from the worker template into a worker (mutates ``pod``)."""
    pod_spec = _role(pod, "worker")
    main = pod_spec["containers"][0]
    ssh = spec.launcher_attach_mode is LauncherAttachMode.SSH
    if not main.get("command") and not main.get("args"):
        main["command"] = list(_SSH_COMMAND if ssh else _IDLE_COMMAND)
    _set_env(main, [{"name": ROLE_ENV, "value": "worker"}])
    if ssh:
        name = str(pod["metadata"]["name"])
        _addressable(pod_spec, pod=name, job=job, search=_search(job, namespace, cluster_domain))


def decorate_launcher(
    pod: KubeObject, *, job: str, namespace: str, spec: MPIJobSpec, cluster_domain: str
) -> None:
    """Turn the pod built from the launcher template into the launcher (mutates ``pod``)."""
    pod_spec = _role(pod, "launcher")
    _set_env(pod_spec["containers"][0], launcher_env(spec))
    if spec.launcher_attach_mode is LauncherAttachMode.SSH:
        name = str(pod["metadata"]["name"])
        _addressable(pod_spec, pod=name, job=job, search=_search(job, namespace, cluster_domain))
