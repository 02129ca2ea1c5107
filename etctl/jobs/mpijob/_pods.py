"""What an MPIJob adds to the pods built from its templates: roles, host names, files, keys.

Both pods (mpi-operator's layout, so existing images and commands work unchanged):

* the label ``training.kubeflow.org/job-role`` (``launcher`` or ``worker``) next to the generic
  ``training.kubeflow.org/*`` labels, and ``K_MPI_JOB_ROLE`` in the first container;
* in ssh mode, ``hostname`` = the pod's name and ``subdomain`` = the job's headless Service, and
  the DNS search ``<job>.<namespace>.svc.<cluster domain>`` (Intel MPI and MPICH reach the
  launcher by its short host name). With ``hostNetwork`` the DNS policy becomes
  ``ClusterFirstWithHostNet`` so those names still resolve;
* in ssh mode, the job's key (Secret ``<job>-ssh``) in the first container at
  ``sshAuthMountPath``, as ``id_rsa``, ``id_rsa.pub``, ``authorized_keys`` and ``config``, files
  0600 when the path is ``/root/.ssh`` (mpi-operator's rule: another user could not read a
  root-owned 0600 file).

Workers: a first container without a command or arguments gets one: ``/usr/sbin/sshd -De`` (ssh)
or ``sleep 365d`` (kubexec: the launcher execs into it). In kubexec mode every worker container
mounts ``kubexec.sh`` at ``/etc/mpi`` from the ConfigMap (Open MPI looks for the agent's path in
every rank).

Launcher: its files at ``/etc/mpi`` (:mod:`._config`), and, in its first container, per MPI
implementation, where the hostfile is and how to reach the workers (OpenMPI:
``OMPI_MCA_orte_keep_fqdn_hostnames``, ``OMPI_MCA_orte_default_hostfile``,
``OMPI_MCA_plm_rsh_args``, ``OMPI_MCA_orte_set_default_slots``; Intel: ``I_MPI_HYDRA_HOST_FILE``,
``I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS``, ``I_MPI_PERHOST``; MPICH: ``HYDRA_HOST_FILE``,
``HYDRA_LAUNCH_EXTRA_ARGS``); ``NVIDIA_VISIBLE_DEVICES`` and ``NVIDIA_DRIVER_CAPABILITIES``
blanked unless it runs as a worker (a launcher must not grab GPUs by accident). In kubexec mode,
mpi-operator v1's two instead of the implementation's:
``OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh`` and
``OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile``, the ServiceAccount ``<job>-launcher``
(whose Role may exec into the job's workers) and, when the operator is given a kubectl image, the
init container ``kubectl-delivery`` that copies its ``kubectl`` to ``/opt/kube``.

Variables the template sets itself are overridden (the operator's wiring wins, as mpi-operator's
appended values win in the kubelet); everything else in the template is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.common import JOB_ROLE
from etctl.jobs.launcher import (
    KUBEXEC_KEY,
    ConfigFile,
    SshMount,
    mount_config,
    mount_ssh,
    set_env,
)
from etctl.jobs.launcher import decorate_launcher as decorate
from etctl.jobs.mpijob._api import LauncherAttachMode, MPIImplementation, MPIJob, MPIJobSpec
from etctl.jobs.mpijob._config import (
    CONFIG_VOLUME,
    HOSTFILE,
    KUBEXEC,
    MPI_DIR,
    layout_of,
)
from etctl.jobs.mpijob._names import config_name, launcher_name, ssh_secret_name
from etctl.runtime import KubeObject

__all__ = [
    "ROLE_ENV",
    "SSH_ROOT",
    "decorate_launcher",
    "decorate_worker",
    "launcher_env",
    "ssh_mount",
]

ROLE_ENV = "K_MPI_JOB_ROLE"
SSH_ROOT = "/root/.ssh"
"""The default ``sshAuthMountPath``, the one path whose key files are mounted 0600."""

_SSH_COMMAND = ["/usr/sbin/sshd", "-De"]
_IDLE_COMMAND = ["sleep", "365d"]
_CONNECT = "-o ConnectionAttempts=10"


def launcher_env(spec: MPIJobSpec) -> dict[str, str]:
    """The variables the launcher's first container gets (see the module docstring)."""
    env = {ROLE_ENV: "launcher"}
    slots = str(spec.slots_per_worker)
    implementation = spec.mpi_implementation
    if spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC:
        env["OMPI_MCA_plm_rsh_agent"] = KUBEXEC
        env["OMPI_MCA_orte_default_hostfile"] = HOSTFILE
    elif implementation is MPIImplementation.OPENMPI:
        env["OMPI_MCA_orte_keep_fqdn_hostnames"] = "true"
        env["OMPI_MCA_orte_default_hostfile"] = HOSTFILE
        env["OMPI_MCA_plm_rsh_args"] = _CONNECT
        env["OMPI_MCA_orte_set_default_slots"] = slots
    elif implementation is MPIImplementation.INTEL:
        env["I_MPI_HYDRA_HOST_FILE"] = HOSTFILE
        env["I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS"] = _CONNECT
        env["I_MPI_PERHOST"] = slots
    else:
        env["HYDRA_HOST_FILE"] = HOSTFILE
        env["HYDRA_LAUNCH_EXTRA_ARGS"] = _CONNECT
    if not spec.run_launcher_as_worker:
        env["NVIDIA_VISIBLE_DEVICES"] = ""
        env["NVIDIA_DRIVER_CAPABILITIES"] = ""
    return env


def ssh_mount(spec: MPIJobSpec) -> SshMount:
    """How the job's pods mount its key: mpi-operator's file names, first container only."""
    path = spec.ssh_auth_mount_path
    return SshMount(
        volume="ssh-auth",
        directory=path,
        identity="id_rsa",
        every_container=False,
        mode=0o600 if path == SSH_ROOT else None,
    )


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


def _ssh(pod: KubeObject, pod_spec: dict[str, Any], job: MPIJob, cluster_domain: str) -> None:
    name, namespace = job.metadata.name, job.metadata.namespace
    search = _search(name, namespace, cluster_domain)
    _addressable(pod_spec, pod=str(pod["metadata"]["name"]), job=name, search=search)
    mount_ssh(pod, ssh_secret_name(name), ssh_mount(job.spec))


def decorate_worker(pod: KubeObject, *, job: MPIJob, cluster_domain: str) -> None:
    """Turn the pod built from the worker template into a worker (mutates ``pod``)."""
    pod_spec = _role(pod, "worker")
    main = pod_spec["containers"][0]
    ssh = job.spec.launcher_attach_mode is LauncherAttachMode.SSH
    if not main.get("command") and not main.get("args"):
        main["command"] = list(_SSH_COMMAND if ssh else _IDLE_COMMAND)
    set_env(main, {ROLE_ENV: "worker"})
    if ssh:
        _ssh(pod, pod_spec, job, cluster_domain)
        return
    mount_config(
        pod,
        volume=CONFIG_VOLUME,
        config_map=config_name(job.metadata.name),
        files=(ConfigFile(KUBEXEC_KEY, 0o555),),
        directory=MPI_DIR,
    )


def decorate_launcher(
    pod: KubeObject,
    *,
    job: MPIJob,
    cluster_domain: str,
    init_image: str,
    kubectl_image: str | None,
) -> None:
    """Turn the pod built from the launcher template into the launcher (mutates ``pod``)."""
    pod_spec = _role(pod, "launcher")
    kubexec = job.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
    name = job.metadata.name
    decorate(
        pod,
        layout_of(job),
        config_map=config_name(name),
        init_image=init_image,
        service_account=launcher_name(name) if kubexec else None,
        kubectl_image=kubectl_image if kubexec else None,
        env=launcher_env(job.spec),
    )
    if not kubexec:
        _ssh(pod, pod_spec, job, cluster_domain)
