from typing import Any

import pytest

from etctl.common import ReplicaRef, RestartPolicy
from etctl.common._scaling.elastic import member_plan, workers_to_replace
from etctl.jobs.trainingjob._layout import SSH_VOLUME
from etctl.jobs.trainingjob._workers import decorate_worker, worker_service
from tests.jobs.trainingjob.support import pod

P = "tj-worker-"


def worker_pod(command: list[str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "w", "image": "horovod"}
    if command is not None:
        container["command"] = command
    return {"metadata": {"name": "tj-worker-3"}, "spec": {"containers": [container]}}


def test_plan_follows_targets_and_skips_vanished_members() -> None:
    targets = ["tj-worker-0", "tj-worker-4", "tj-worker-5"]
    members = {"tj-worker-0", "tj-worker-4"}
    plan = member_plan(P, targets, members, {"tj-worker-0"}, running=True)
    assert plan == (ReplicaRef("Worker", 0, "tj-worker-0"), ReplicaRef("Worker", 5, "tj-worker-5"))
    # No launcher runs: nobody knows the names, a lost member comes back under its own.
    plan = member_plan(P, targets, members, {"tj-worker-0"}, running=False)
    assert [ref.name for ref in plan] == targets


def test_default_commands_and_labels() -> None:
    ssh = worker_pod()
    decorate_worker(ssh, job="tj", index=3, ssh_secret="tj")
    assert ssh["spec"]["containers"][0]["command"] == ["sh", "-c", "/usr/sbin/sshd && sleep 365d"]
    assert ssh["metadata"]["labels"]["replica-index"] == "3"
    assert ssh["metadata"]["labels"]["training-job-role"] == "worker"
    assert ssh["spec"]["volumes"][0]["name"] == SSH_VOLUME
    kubexec = worker_pod()
    decorate_worker(kubexec, job="tj", index=3, ssh_secret=None)
    assert kubexec["spec"]["containers"][0]["command"] == ["sh", "-c", "sleep 365d"]
    assert "volumes" not in kubexec["spec"]
    own = worker_pod(["python", "serve.py"])
    decorate_worker(own, job="tj", index=3, ssh_secret=None)
    assert own["spec"]["containers"][0]["command"] == ["python", "serve.py"]


def test_service_is_headless_with_et_operators_ports() -> None:
    service = worker_service()
    assert service["spec"]["clusterIP"] == "None"
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [
        ("ssh-port", 22),
        ("kubeai-service-port", 9009),
    ]


TARGETS = ["tj-worker-0", "tj-worker-1", "tj-worker-2", "tj-worker-3", "tj-worker-4"]
PODS = {
    "tj-worker-0": pod("tj-worker-0", "Running"),
    "tj-worker-1": pod("tj-worker-1", "Failed", exit_code=1),
    "tj-worker-2": pod("tj-worker-2", "Failed", exit_code=137),
    "tj-worker-3": pod("tj-worker-3", "Failed", reason="Evicted"),
    "tj-worker-5": pod("tj-worker-5", "Succeeded"),
}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (RestartPolicy.NEVER, {"tj-worker-4"}),
        (RestartPolicy.ON_FAILURE, {"tj-worker-1", "tj-worker-2", "tj-worker-3", "tj-worker-4"}),
        (RestartPolicy.EXIT_CODE, {"tj-worker-2", "tj-worker-3", "tj-worker-4"}),
        (RestartPolicy.ALWAYS, {"tj-worker-1", "tj-worker-2", "tj-worker-3", "tj-worker-4"}),
    ],
)
def test_replacement_by_policy(policy: RestartPolicy, expected: set[str]) -> None:
    # tj-worker-4 was a member and vanished; tj-worker-5 is not a target at all.
    current = {"tj-worker-0", "tj-worker-4"}
    assert workers_to_replace(policy, TARGETS, current, PODS) == expected


def test_always_replaces_a_worker_that_exited_cleanly() -> None:
    pods = {"tj-worker-0": pod("tj-worker-0", "Succeeded")}
    assert workers_to_replace(RestartPolicy.ALWAYS, ["tj-worker-0"], set(), pods) == {"tj-worker-0"}
    assert workers_to_replace(RestartPolicy.ON_FAILURE, ["tj-worker-0"], set(), pods) == set()


def test_a_target_that_never_joined_is_not_replaced_when_missing() -> None:
    assert workers_to_replace(RestartPolicy.ALWAYS, ["tj-worker-9"], set(), {}) == set()


def test_vanished_members_are_replaced_only_while_the_launcher_runs() -> None:
    current = {"tj-worker-0"}
    found = workers_to_replace(
        RestartPolicy.ALWAYS, ["tj-worker-0"], current, {}, launcher_running=False
    )
    assert found == set()
    failed = {"tj-worker-0": pod("tj-worker-0", "Failed")}
    assert workers_to_replace(
        RestartPolicy.ALWAYS, ["tj-worker-0"], current, failed, launcher_running=False
    ) == {"tj-worker-0"}


def test_a_member_being_deleted_by_someone_else_is_replaced() -> None:
    doomed = pod("tj-worker-0")
    doomed["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pods = {"tj-worker-0": doomed}
    assert workers_to_replace(RestartPolicy.ON_FAILURE, ["tj-worker-0"], {"tj-worker-0"}, pods) == {
        "tj-worker-0"
    }
