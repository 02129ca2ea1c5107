"""Workers as an elastic membership: which pods the job keeps, and which ones are replaced.

**Plan** (:func:`worker_plan`). The workers are the job's targets (the membership the scaling
machinery records before any pod of a new name exists, :mod:`etctl.common`'s scaling). The job
controller creates pods for those targets and deletes worker pods outside them; a member whose pod
vanished while the launcher runs is left out of the plan, because it is replaced under a new name
rather than recreated under its own.

**Replacement** (:func:`workers_to_replace`), following the worker replica's ``restartPolicy``
(et-operator's rule), under a new name:

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
would hand Horovod a host it may have blacklisted. While no launcher runs (the job starts, restarts
as a whole, or is suspended), no Horovod knows any name: a worker lost then is created again under
its name. The failed pod is deleted once its replacement took its place in the targets.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from etctl.common import JobState, ReplicaRef, RestartPolicy, member_index, planned
from etctl.runtime import ObjectView, objects, podview

__all__ = ["plan_workers", "worker_plan", "workers_to_replace"]


def worker_plan(
    prefix: str,
    targets: Sequence[str],
    current: Collection[str],
    present: Collection[str],
    *,
    launcher_running: bool,
    replica_type: str = "Worker",
) -> list[ReplicaRef]:
    """The worker slots the job controller keeps (see the module docstring).

    Args:
        prefix: workers are ``<prefix><index>``.
        targets: the job's targets.
        current: the job's members.
        present: names of the job's worker pods that exist.
        launcher_running: a launcher runs (only then is a vanished member left out).
        replica_type: the workers' replica type.
    """
    kept = planned(targets, current, present) if launcher_running else list(targets)
    refs = []
    for name in kept:
        index = member_index(prefix, name)
        refs.append(ReplicaRef(replica_type, index if index is not None else 0, name))
    return refs


def plan_workers(
    prefix: str,
    targets: Sequence[str],
    current: Collection[str],
    state: JobState[Any],
    *,
    worker_type: str,
    launcher_type: str,
) -> list[ReplicaRef]:
    """:func:`worker_plan` for a kind's ``plan`` hook, with what exists read from ``state``.

    The workers present are the job's pods of ``worker_type``; the launcher runs when one of its
    pods of ``launcher_type`` is in phase Running.
    """
    return worker_plan(
        prefix,
        targets,
        current,
        {objects.name(pod) for pod in state.pods_of(worker_type)},
        launcher_running=any(podview.phase(p) == "Running" for p in state.pods_of(launcher_type)),
        replica_type=worker_type,
    )


def _replaced(policy: RestartPolicy, pod: ObjectView) -> bool:
    phase = podview.phase(pod)
    if policy is RestartPolicy.ALWAYS:
        return phase in ("Failed", "Succeeded", "Unknown")
    if phase != "Failed":
        return False
    if policy is RestartPolicy.ON_FAILURE:
        return True
    if policy is RestartPolicy.EXIT_CODE:
        code = podview.exit_code(pod)
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
        targets: the job's targets.
        current: the job's members.
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
