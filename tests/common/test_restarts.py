"""Failed pods: the exit-code rule, the action per restart policy, and restart counting."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.common import ReplicaSpec, RestartPolicy
from etctl.common._restarts import (
    FailureAction,
    failure_action,
    is_retryable_exit_code,
    pod_restart_policy,
    restart_budget,
)
from etctl.runtime import podview

TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "x"}]}}


def terminated(name: str, code: int, restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "restartCount": restarts,
        "state": {"terminated": {"exitCode": code}},
    }


def failed_pod(*statuses: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {
            "initContainers": [{"name": s["name"]} for s in init],
            "containers": [{"name": "main"}, {"name": "sidecar"}],
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": list(statuses),
            "initContainerStatuses": list(init),
        },
    }


def spec(policy: RestartPolicy) -> ReplicaSpec:
    return ReplicaSpec(template=TEMPLATE, restart_policy=policy)


def test_exit_code_is_the_first_non_zero_in_spec_order() -> None:
    # Statuses arrive sorted by name; the spec order (main before sidecar) decides.
    pod = failed_pod(terminated("sidecar", 137), terminated("main", 2))
    assert podview.exit_code(pod) == 2
    assert podview.exit_code(failed_pod(terminated("main", 0), terminated("sidecar", 3))) == 3
    assert podview.exit_code(failed_pod(terminated("main", 0))) is None
    init = (terminated("setup", 1),)
    assert podview.exit_code(failed_pod(terminated("main", 9), init=init)) == 1


def test_retryable_codes() -> None:
    assert is_retryable_exit_code(128)
    assert is_retryable_exit_code(137)
    assert is_retryable_exit_code(None)
    assert not is_retryable_exit_code(1)
    assert not is_retryable_exit_code(127)


@pytest.mark.parametrize(
    ("policy", "code", "action"),
    [
        (RestartPolicy.ON_FAILURE, 1, FailureAction.RESTART),
        (RestartPolicy.ALWAYS, 1, FailureAction.RESTART),
        (RestartPolicy.EXIT_CODE, 137, FailureAction.RESTART),
        (RestartPolicy.EXIT_CODE, 1, FailureAction.FAIL),
        (RestartPolicy.NEVER, 137, FailureAction.NONE),
    ],
)
def test_failure_action(policy: RestartPolicy, code: int, action: FailureAction) -> None:
    assert failure_action(failed_pod(terminated("main", code)), spec(policy)) == (action, code)


def test_unknown_exit_code_under_exit_code_policy_restarts() -> None:
    evicted = {"status": {"phase": "Failed", "reason": "Evicted"}}
    assert failure_action(evicted, spec(RestartPolicy.EXIT_CODE)) == (FailureAction.RESTART, None)


def test_running_pods_need_nothing() -> None:
    running = {"status": {"phase": "Running"}}
    assert failure_action(running, spec(RestartPolicy.ON_FAILURE))[0] is FailureAction.NONE


def test_pod_restart_policy_runs_exit_code_as_never() -> None:
    assert pod_restart_policy(RestartPolicy.EXIT_CODE) == "Never"
    assert pod_restart_policy(RestartPolicy.ON_FAILURE) == "OnFailure"


def test_budget_counts_recorded_and_in_place_restarts() -> None:
    pod = failed_pod(terminated("main", 1, restarts=2), init=(terminated("setup", 0, restarts=1),))
    assert podview.restarts(pod) == 3
    assert restart_budget(None, 10, [pod]) is None
    assert restart_budget(6, 2, [pod]) == 1
    assert restart_budget(2, 2, [pod]) == -3
