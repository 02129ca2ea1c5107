"""What a failed pod means, and how restarts are counted against ``backoffLimit``.

Restart policies of a replica type (kubeflow's semantics, with the counting fixed):

* ``Always`` and ``OnFailure``: the pod runs with that restart policy, so the kubelet restarts its
  containers in place; a pod that nevertheless ends ``Failed`` (evicted, node lost) is deleted and
  recreated under the same name by the controller.
* ``ExitCode``: the pod runs with restart policy ``Never``. When it fails, its *exit code* decides:
  128 and above (killed by a signal: preempted, OOM-killed, evicted) is retryable and the pod is
  recreated; 1 to 127 is the program's own verdict and fails the job.
* ``Never``: a failed pod stays as it is; the plugin's verdict decides what it means for the job.

The exit code of a failed pod is the first non-zero ``terminated.exitCode`` among its init
containers and then its containers, each in the order of the pod spec (the order they run and the
template lists them). A failed pod with no non-zero exit code at all failed from outside the
program (evicted before a container ran, a node that vanished, a pod deadline): that is treated as
retryable, like kubeflow's unknown-code default.

Counting (kubeflow counted only in-place restarts of running pods, so recreations under ``Never``
and ``ExitCode`` never reached the limit: trainer#2045):

* the job's restarts are ``status.restartCount`` plus the in-place restarts of the pods alive now;
* ``status.restartCount`` records what no live pod shows any more: every recreation the controller
  performed (one per pod deleted for a restart, whole-job restarts included) plus the in-place
  restarts that deleted pod had accumulated, so the total never goes down when a pod is replaced;
* the job may restart ``backoffLimit`` times; the failure that would need one restart more fails
  the job with ``BackoffLimitExceeded`` instead. In-place restarts happen without asking, so a job
  whose observed total already exceeds the limit fails as soon as it is seen. No limit means
  unlimited restarts.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from etctl.common._api import ReplicaSpec, RestartPolicy
from etctl.runtime import ObjectView, podview

__all__ = [
    "FailureAction",
    "failure_action",
    "is_retryable_exit_code",
    "pod_restart_policy",
    "restart_budget",
]


class FailureAction(enum.Enum):
    """What the controller does about a pod."""

    NONE = "none"
    """Nothing: the pod is not failed, or its replica type leaves failures to the verdict."""
    RESTART = "restart"
    """Delete the pod so that it is recreated under the same name."""
    FAIL = "fail"
    """Fail the job: the pod exited with a permanent error under restartPolicy ExitCode."""


def pod_restart_policy(policy: RestartPolicy) -> str:
    """The pod-level restart policy of a replica type (``ExitCode`` runs as ``Never``)."""
    return RestartPolicy.NEVER.value if policy is RestartPolicy.EXIT_CODE else policy.value


def is_retryable_exit_code(code: int | None) -> bool:
    """True for 128 and above, and for an unknown code (the failure came from outside)."""
    return code is None or code >= 128


def failure_action(pod: ObjectView, spec: ReplicaSpec) -> tuple[FailureAction, int | None]:
    """What to do about ``pod`` of a replica type with ``spec``, and the exit code it judged."""
    if podview.phase(pod) != "Failed":
        return FailureAction.NONE, None
    policy = spec.restart_policy
    if policy in (RestartPolicy.ALWAYS, RestartPolicy.ON_FAILURE):
        return FailureAction.RESTART, podview.exit_code(pod)
    if policy is RestartPolicy.EXIT_CODE:
        code = podview.exit_code(pod)
        action = FailureAction.RESTART if is_retryable_exit_code(code) else FailureAction.FAIL
        return action, code
    return FailureAction.NONE, podview.exit_code(pod)


def restart_budget(limit: int | None, recorded: int, live_pods: Iterable[ObjectView]) -> int | None:
    """Restarts still allowed: ``limit`` minus every restart so far (None: no limit).

    Negative when the kubelet's in-place restarts already went past the limit.
    """
    if limit is None:
        return None
    return limit - recorded - sum(podview.restarts(pod) for pod in live_pods)
