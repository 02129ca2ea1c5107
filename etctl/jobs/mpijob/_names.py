"""The names an MPIJob's children carry, mpi-operator's exactly.

* headless Service (ssh mode): ``<job>``; the launcher and the workers get ``hostname`` = their
  pod's name and ``subdomain`` = ``<job>``, so ``<pod>.<job>.<namespace>.svc`` resolves to each;
* ConfigMap (hostfile, discover_hosts.sh, kubexec.sh): ``<job>-config``;
* ssh Secret (ssh mode): ``<job>-ssh``;
* workers: ``<job>-worker-<index>``; the launcher pod and (kubexec mode) its ServiceAccount, Role
  and RoleBinding: ``<job>-launcher``.
"""

from __future__ import annotations

from etctl.jobs.launcher import LauncherNames

__all__ = [
    "NAMES",
    "config_name",
    "launcher_name",
    "service_name",
    "ssh_secret_name",
    "worker_prefix",
]

NAMES = LauncherNames(ssh_secret="{job}-ssh")  # noqa: S106 - a name template, not a secret
"""mpi-operator's names, as the launcher/worker layer takes them."""


def worker_prefix(job: str) -> str:
    """``<job>-worker-``: worker pods are this plus their index."""
    return NAMES.worker_prefix(job)


def launcher_name(job: str) -> str:
    """``<job>-launcher``: the launcher pod, ServiceAccount, Role and RoleBinding."""
    return NAMES.launcher_of(job)


def config_name(job: str) -> str:
    """``<job>-config``: the ConfigMap with the hostfile and scripts."""
    return NAMES.config_of(job)


def ssh_secret_name(job: str) -> str:
    """``<job>-ssh``: the ssh key Secret (ssh mode)."""
    return NAMES.ssh_secret_of(job)


def service_name(job: str) -> str:
    """``<job>``: the headless Service the pods' host names resolve through (ssh mode)."""
    return job
