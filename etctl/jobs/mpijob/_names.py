"""The names an MPIJob's children carry, mpi-operator's exactly.

* headless Service (v2beta1, ssh mode): ``<job>``; workers get ``hostname`` ``<pod>`` and
  ``subdomain`` ``<job>``, so ``<pod>.<job>.<namespace>.svc`` resolves to each;
* ConfigMap (hostfile, discover_hosts.sh, kubexec.sh): ``<job>-config``;
* ssh Secret: ``<job>-ssh``;
* workers: ``<job>-worker-<index>``; the launcher pod and its ServiceAccount, Role and
  RoleBinding: ``<job>-launcher``.
"""

from __future__ import annotations

__all__ = [
    "config_name",
    "launcher_name",
    "service_name",
    "ssh_secret_name",
    "worker_prefix",
]


def worker_prefix(job: str) -> str:
    """``<job>-worker-``: worker pods are this plus their index."""
    return f"{job}-worker-"


def launcher_name(job: str) -> str:
    """``<job>-launcher``: the launcher pod, ServiceAccount, Role and RoleBinding."""
    return f"{job}-launcher"


def config_name(job: str) -> str:
    """``<job>-config``: the ConfigMap with the hostfile and scripts."""
    return f"{job}-config"


def ssh_secret_name(job: str) -> str:
    """``<job>-ssh``: the ssh key Secret (ssh mode)."""
    return f"{job}-ssh"


def service_name(job: str) -> str:
    """``<job>``: the headless Service the workers' host names resolve through."""
    return job
