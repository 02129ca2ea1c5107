"""How a launcher/worker kind names the children of a job.

Each name is a template where ``{job}`` stands for the job's name. mpi-operator and et-operator
agree on three of them, which are the defaults: the launcher pod (and its ServiceAccount, Role and
RoleBinding) ``<job>-launcher``, the ConfigMap ``<job>-config`` and the workers
``<job>-worker-<index>``. They differ on the ssh Secret (``<job>`` for et-operator,
``<job>-ssh`` for mpi-operator v2), which every kind spells out.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LauncherNames"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LauncherNames:
    """The name templates of a kind's children (see the module docstring).

    Attributes:
        ssh_secret: the ssh Secret.
        launcher: the launcher pod, its ServiceAccount, Role and RoleBinding.
        config: the ConfigMap with the hostfile and scripts.
        workers: the prefix of worker pods (and their services); the index follows it.
    """

    ssh_secret: str
    launcher: str = "{job}-launcher"
    config: str = "{job}-config"
    workers: str = "{job}-worker-"

    def __post_init__(self) -> None:
        for field in ("ssh_secret", "launcher", "config", "workers"):
            template = getattr(self, field)
            if "{job}" not in template or template.replace("{job}", "").count("{"):
                msg = f"{field}: {template!r} must contain {{job}} and no other placeholder"
                raise ValueError(msg)

    def launcher_of(self, job: str) -> str:
        """The launcher pod (and its ServiceAccount, Role and RoleBinding) of ``job``."""
        return self.launcher.replace("{job}", job)

    def config_of(self, job: str) -> str:
        """The ConfigMap of ``job``."""
        return self.config.replace("{job}", job)

    def worker_prefix(self, job: str) -> str:
        """The prefix of ``job``'s workers: a worker is this plus its index."""
        return self.workers.replace("{job}", job)

    def worker(self, job: str, index: int) -> str:
        """Worker ``index`` of ``job``."""
        return f"{self.worker_prefix(job)}{index}"

    def ssh_secret_of(self, job: str) -> str:
        """The ssh Secret ``job`` generates."""
        return self.ssh_secret.replace("{job}", job)
