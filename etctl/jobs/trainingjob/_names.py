"""The names a TrainingJob's children carry, et-operator's exactly, and its compatibility labels.

* workers and their headless services: ``<job>-worker-<index>`` (indices only grow: a replaced or
  added worker gets a new one);
* launcher pod, its ServiceAccount, Role and RoleBinding: ``<job>-launcher``;
* ConfigMap (hostfile, discover_hosts.sh, kubexec.sh, deepspeed hostfile): ``<job>-config``;
* ssh Secret: ``<job>``, or the Secret the ``arena.kubeflow.org/ssh-secret`` annotation names.

Pods also carry et-operator's labels (``group-name``, ``training-job-name``,
``training-job-role``, ``replica-index``) next to the ``training.kubeflow.org/*`` ones, so
selectors written for et-operator keep working.
"""

from __future__ import annotations

from collections.abc import Mapping

from etctl.jobs.launcher import LauncherNames

__all__ = [
    "GROUP_NAME_LABEL",
    "JOB_NAME_LABEL",
    "NAMES",
    "REPLICA_INDEX_LABEL",
    "ROLE_LABEL",
    "SSH_SECRET_ANNOTATION",
    "compat_labels",
    "config_name",
    "launcher_name",
    "ssh_secret_name",
    "worker_prefix",
]

NAMES = LauncherNames(ssh_secret="{job}")  # noqa: S106 - a name template, not a secret
"""et-operator's names, as the launcher/worker layer reads them."""

GROUP_NAME_LABEL = "group-name"
JOB_NAME_LABEL = "training-job-name"
ROLE_LABEL = "training-job-role"
REPLICA_INDEX_LABEL = "replica-index"
SSH_SECRET_ANNOTATION = "arena.kubeflow.org/ssh-secret"  # noqa: S105 - a key, not a secret
"""Names an existing ssh Secret to use instead of generating one."""

_GROUP = "kai.alibabacloud.com"


def worker_prefix(job: str) -> str:
    """``<job>-worker-``: worker pods are this plus their index."""
    return NAMES.worker_prefix(job)


def launcher_name(job: str) -> str:
    """``<job>-launcher``: the launcher pod, ServiceAccount, Role and RoleBinding."""
    return f"{job}-launcher"


def config_name(job: str) -> str:
    """``<job>-config``: the ConfigMap with the hostfile and scripts."""
    return NAMES.config_of(job)


def ssh_secret_name(job: str, annotations: Mapping[str, str]) -> str:
    """The ssh Secret of the job: the annotation's, else ``<job>``."""
    named = annotations.get(SSH_SECRET_ANNOTATION, "").strip()
    return named or NAMES.ssh_secret_of(job)


def compat_labels(job: str, role: str, index: int | None = None) -> dict[str, str]:
    """et-operator's labels of a pod of ``role`` (``worker`` or ``launcher``)."""
    labels = {GROUP_NAME_LABEL: _GROUP, JOB_NAME_LABEL: job, ROLE_LABEL: role}
    if index is not None:
        labels[REPLICA_INDEX_LABEL] = str(index)
    return labels
