"""Worker pods: their plan, their decoration, their services, and which ones are replaced.

**Plan.** The workers are the job's membership in ``status.targetWorkers``, written by the scaling
machinery before any pod of a new name exists (:mod:`etctl.common._scaling.membership`). The job
controller creates pods for those targets and deletes worker pods outside them; a member whose pod
vanished is left out of the plan, because it is replaced under a new name rather than recreated.

**Pod.** The template plus et-operator's labels (``training-job-role: worker``,
``replica-index``), the ssh key in ssh mode, and a default command when the first container has
none: ``sh -c "/usr/sbin/sshd && sleep 365d"`` (ssh) or ``sh -c "sleep 365d"`` (kubexec). Pods
run with restartPolicy Never, as et-operator's.

**Service.** One headless service per worker, named like it, with et-operator's ports ``ssh-port``
22 and ``kubeai-service-port`` 9009.

**Replacement** (the worker replica's ``restartPolicy``, et-operator's rule), under a new name:

==========  =============================================================================
Always      a worker that failed, succeeded or is Unknown; a member that vanished
OnFailure   a worker that failed (evicted included); a member that vanished
ExitCode    a worker that failed with exit code 129-254 or none (evicted, killed from
            outside: retryable); a member that vanished. 1-128 and 255 are the program's
            own verdict: the worker stays failed and leaves the hostfile
Never       a member that vanished; a failed worker stays failed and leaves the hostfile
==========  =============================================================================

A member *vanished* when its pod is gone or is being deleted by someone else (the controller only
deletes workers that already left the targets) while the launcher runs. That is no verdict of the
program on itself (a drained node, a hand-made delete), so every policy replaces it, as a
Kubernetes Job replaces a deleted pod whatever its restartPolicy; recreating it under its old name
would hand Horovod a host it may have blacklisted. While no launcher runs
(the job starts, or restarts as a whole), no Horovod knows any name: a worker lost then is created
again under its name. The failed pod is deleted once its replacement took its place in the
targets.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from etctl.common import ReplicaRef, RestartPolicy, member_index, planned
from etctl.jobs.trainingjob._api import TrainingJobReplicaType
from etctl.jobs.trainingjob._names import compat_labels
from etctl.jobs.trainingjob._ssh import mount_ssh
from etctl.runtime import KubeObject, ObjectView, objects, pod_exit_code, pod_phase

__all__ = [
    "WORKER_PORTS",
    "decorate_worker",
    "worker_plan",
    "worker_service",
    "workers_to_replace",
]

WORKER_PORTS = (("ssh-port", 22), ("kubeai-service-port", 9009))

_SSH_COMMAND = ["sh", "-c", "/usr/sbin/sshd && sleep 365d"]
_IDLE_COMMAND = ["sh", "-c", "sleep 365d"]


def worker_plan(
    prefix: str,
    targets: Sequence[str],
    current: Collection[str],
    present: Collection[str],
    *,
    launcher_running: bool,
) -> list[ReplicaRef]:
    """The worker slots the job controller keeps.

    The targets, minus members that vanished while the launcher runs: those are replaced under
    new names, never recreated under theirs.
    """
    refs = []
    kept = planned(targets, current, present) if launcher_running else list(targets)
    for name in kept:
        index = member_index(prefix, name)
        refs.append(
            ReplicaRef(TrainingJobReplicaType.WORKER, index if index is not None else 0, name)
        )
    return refs


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


def _replaced(policy: RestartPolicy, pod: ObjectView) -> bool:
    phase = pod_phase(pod)
    if policy is RestartPolicy.ALWAYS:
        return phase in ("Failed", "Succeeded", "Unknown")
    if phase != "Failed":
        return False
    if policy is RestartPolicy.ON_FAILURE:
        return True
    if policy is RestartPolicy.EXIT_CODE:
        code = pod_exit_code(pod)
        return code is None or 128 < code < 255
    return False


def workers_to_replace(
    policy: RestartPolicy,
    targets: Sequence[str],
    current: Collection[str],
    pods: Mapping[str, ObjectView],
    *,
    launcher_running: bool = True,
) -> frozenset[str]:
    """The targets to replace under new names now (see the module docstring).

    Args:
        policy: the worker replica's restartPolicy.
        targets: ``status.targetWorkers``.
        current: ``status.currentWorkers``.
        pods: the job's worker pods by name, being deleted or not.
        launcher_running: a launcher runs: only then is a vanished member replaced (while none
            runs, no Horovod knows the name, and the job controller creates it again).
    """
    doomed = set()
    for name in targets:
        pod = pods.get(name)
        if pod is None or objects.is_terminating(pod):
            if name in current and launcher_running:
                doomed.add(name)
        elif _replaced(policy, pod):
            doomed.add(name)
    return frozenset(doomed)
