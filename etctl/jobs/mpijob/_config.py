"""What an MPIJob's launcher reads of its workers: the ConfigMap and the launcher's files.

**ConfigMap** ``<job>-config`` (mpi-operator's keys):

* ``hostfile``: one line per target worker (the workers the job should have, whatever their
  phase, as mpi-operator lists indices ``0..replicas-1``), for ``mpirun``'s ``--hostfile``:

  ==========================  ==========================================  =================
  mode                        host                                        line
  ==========================  ==========================================  =================
  ssh, OpenMPI                ``<pod>.<job>.<namespace>.svc[.<domain>]``  ``<host> slots=N``
  ssh, Intel MPI or MPICH     the same                                    ``<host>:N``
  kubexec (v1)                ``<pod>`` (kubexec.sh execs into it)        ``<host> slots=N``
  ==========================  ==========================================  =================

  With ``runLauncherAsWorker`` the launcher comes first.
* ``discover_hosts.sh``: ``#!/bin/sh`` then ``echo <host>:<slots>`` for every member whose pod is
  Running **and Ready**, sorted (the proposal's script, done right: mpi-operator printed every
  Running pod, and v2 dropped the slots, issue #445). Horovod reruns it every second and parses
  ``host:slots`` lines; a host is published only once its sshd (its readiness) is up, so Horovod
  never blacklists a worker still starting. A member leaves it before its pod is deleted (the
  scaling machinery's Draining step). With ``runLauncherAsWorker`` the launcher is always listed.
* ``kubexec.sh`` (kubexec mode): Open MPI's rsh agent, ``kubectl exec <pod> --container <c> --
  /bin/sh -c ...`` where ``c`` is ``mainContainer``, else the worker template's first container.

**The launcher's files.** Horovod and mpirun read ``/etc/mpi/hostfile``,
``/etc/mpi/discover_hosts.sh`` and ``/etc/mpi/kubexec.sh``, at exactly those paths (Horovod
switches to kubexec only when ``OMPI_MCA_plm_rsh_agent`` is ``/etc/mpi/kubexec.sh``). A ConfigMap
volume follows changes only after the kubelet's sync period (a minute or more: the proposal's own
caveat, mpi-operator#278), so ``/etc/mpi`` is a writable emptyDir instead: the init container
``init-mpi-files`` copies the three files from the ConfigMap (mounted read-only at
``/etc/mpi-config``) with mpi-operator's modes (hostfile 0444, scripts 0555), and the membership
pusher rewrites the hostfile and discover_hosts.sh in place, atomically, whenever the ConfigMap's
change, then records their digest on the launcher pod. The scaling machinery reads that digest:
a worker leaving the job is deleted only once the launcher's discover_hosts.sh no longer lists it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from etctl.common import first_container_name
from etctl.jobs.launcher import (
    DISCOVER_KEY,
    HOSTFILE_KEY,
    KUBECTL,
    KUBEXEC_KEY,
    ConfigFile,
    HostfileFormat,
    LauncherLayout,
    LiveFile,
    discover_hosts_listing,
    kubexec_script,
    live_hosts,
    member_host,
)
from etctl.jobs.mpijob._api import LauncherAttachMode, MPIImplementation, MPIJob
from etctl.jobs.mpijob._names import config_name, launcher_name, service_name
from etctl.runtime import KubeObject, ObjectView

__all__ = [
    "CONFIG_SOURCE",
    "CONFIG_VOLUME",
    "DISCOVER_HOSTS",
    "FILES_VOLUME",
    "HOSTFILE",
    "INIT_CONTAINER",
    "KUBEXEC",
    "KUBEXEC_LAYOUT",
    "MPI_DIR",
    "SSH_LAYOUT",
    "config_data",
    "config_map",
    "discover_hosts",
    "host_of",
    "hostfile",
    "layout_of",
    "wanted_digest",
    "worker_container",
]

MPI_DIR = "/etc/mpi"
"""Where the launcher finds its files (a writable emptyDir the pusher keeps current)."""
CONFIG_SOURCE = "/etc/mpi-config"
"""Where the launcher mounts the ConfigMap itself, read-only (what the init container copies)."""
CONFIG_VOLUME = "mpi-job-config"
FILES_VOLUME = "mpi-job-files"
INIT_CONTAINER = "init-mpi-files"

_HOSTFILE = LiveFile(
    key=HOSTFILE_KEY, volume=FILES_VOLUME, directory=MPI_DIR, name=HOSTFILE_KEY, mode=0o444
)
_DISCOVER = LiveFile(
    key=DISCOVER_KEY, volume=FILES_VOLUME, directory=MPI_DIR, name=DISCOVER_KEY, mode=0o555
)
_KUBEXEC = LiveFile(
    key=KUBEXEC_KEY,
    volume=FILES_VOLUME,
    directory=MPI_DIR,
    name=KUBEXEC_KEY,
    mode=0o555,
    pushed=False,  # it names the worker container only: its content never changes
)
HOSTFILE = _HOSTFILE.path
"""``/etc/mpi/hostfile``."""
DISCOVER_HOSTS = _DISCOVER.path
"""``/etc/mpi/discover_hosts.sh``."""
KUBEXEC = _KUBEXEC.path
"""``/etc/mpi/kubexec.sh``: the path Horovod recognises as Kubeflow's rsh agent."""

SSH_LAYOUT = LauncherLayout(
    config_volume=CONFIG_VOLUME,
    files=(ConfigFile(HOSTFILE_KEY, 0o444), ConfigFile(DISCOVER_KEY, 0o555)),
    config_mount=CONFIG_SOURCE,
    live=(_HOSTFILE, _DISCOVER),
    init_container=INIT_CONTAINER,
    digest_keys=(HOSTFILE_KEY, DISCOVER_KEY),
)
"""The launcher's files in ssh mode (v2beta1): hostfile and discover_hosts.sh."""

KUBEXEC_LAYOUT = LauncherLayout(
    config_volume=CONFIG_VOLUME,
    files=(*SSH_LAYOUT.files, ConfigFile(KUBEXEC_KEY, 0o555)),
    config_mount=CONFIG_SOURCE,
    live=(*SSH_LAYOUT.live, _KUBEXEC),
    init_container=INIT_CONTAINER,
    kubectl_volume="mpi-job-kubectl",  # mpi-operator v1's names
    delivery_container="kubectl-delivery",
    digest_keys=SSH_LAYOUT.digest_keys,
)
"""The launcher's files in kubexec mode (v1): kubexec.sh too, and kubectl delivery. Its pushed
files are the ssh layout's, so one membership pusher serves both."""


def layout_of(job: MPIJob) -> LauncherLayout:
    """The launcher's layout in the job's attach mode."""
    kubexec = job.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
    return KUBEXEC_LAYOUT if kubexec else SSH_LAYOUT


def worker_container(job: MPIJob) -> str:
    """The worker container kubexec.sh runs commands in: ``mainContainer``, else the first."""
    worker = job.spec.mpi_replica_specs.worker
    first = first_container_name(worker.template) if worker is not None else ""
    return job.spec.main_container or first


def host_of(job: MPIJob, pod: str, cluster_domain: str) -> str:
    """How the launcher reaches ``pod``: its DNS name (ssh) or its name (kubexec)."""
    if job.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC:
        return pod
    return member_host(
        pod,
        service=service_name(job.metadata.name),
        namespace=job.metadata.namespace,
        cluster_domain=cluster_domain,
    )


def _format(job: MPIJob) -> HostfileFormat:
    ssh = job.spec.launcher_attach_mode is LauncherAttachMode.SSH
    if ssh and job.spec.mpi_implementation is not MPIImplementation.OPENMPI:
        return HostfileFormat.COLON
    return HostfileFormat.SLOTS


def _with_launcher(job: MPIJob, pods: Iterable[str]) -> list[str]:
    launcher = [launcher_name(job.metadata.name)] if job.spec.run_launcher_as_worker else []
    return [*launcher, *pods]


def hostfile(job: MPIJob, targets: Sequence[str], cluster_domain: str) -> str:
    """The hostfile of ``targets`` (see the module docstring)."""
    hosts = [host_of(job, pod, cluster_domain) for pod in _with_launcher(job, targets)]
    return _format(job).render(hosts, job.spec.slots_per_worker)


def discover_hosts(job: MPIJob, ready: Sequence[str], cluster_domain: str) -> str:
    """discover_hosts.sh listing the ``ready`` members (see the module docstring)."""
    hosts = [host_of(job, pod, cluster_domain) for pod in _with_launcher(job, ready)]
    return discover_hosts_listing(hosts, job.spec.slots_per_worker)


def config_data(job: MPIJob, workers: Iterable[ObjectView], cluster_domain: str) -> dict[str, str]:
    """The ConfigMap's data: from the job's targets and members, and its worker pods."""
    status = job.status
    ready = live_hosts(status.current_workers, workers, ready=True)
    data = {
        HOSTFILE_KEY: hostfile(job, status.target_workers, cluster_domain),
        DISCOVER_KEY: discover_hosts(job, ready, cluster_domain),
    }
    if job.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC:
        data[KUBEXEC_KEY] = kubexec_script(worker_container(job), kubectl=KUBECTL)
    return data


def config_map(job: MPIJob, workers: Iterable[ObjectView], cluster_domain: str) -> KubeObject:
    """The ConfigMap ``<job>-config`` (the controller adds namespace, labels and owner)."""
    data: dict[str, Any] = config_data(job, workers, cluster_domain)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": config_name(job.metadata.name)},
        "data": data,
    }


def wanted_digest(job: MPIJob, workers: Iterable[ObjectView], cluster_domain: str) -> str:
    """The digest the launcher records once it holds the files of the current membership."""
    return layout_of(job).digest_of(config_data(job, workers, cluster_domain))
