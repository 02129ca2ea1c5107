"""The pod view: the facts every controller reads from a pod, from any shape of pod."""

from __future__ import annotations

from typing import Any

from etctl.runtime import objects, podview


def _pod(
    phase: str | None = "Running",
    *,
    ready: str | None = "True",
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    spec: list[str] | None = None,
    init_spec: list[str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    if containers is not None:
        status["containerStatuses"] = containers
    if init is not None:
        status["initContainerStatuses"] = init
    meta: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {
            "containers": [{"name": n} for n in spec or []],
            "initContainers": [{"name": n} for n in init_spec or []],
        },
        "status": status,
    }


def _ended(name: str, code: int, restarts: int = 0) -> dict[str, Any]:
    return {"name": name, "restartCount": restarts, "state": {"terminated": {"exitCode": code}}}


def test_a_pod_without_status_has_no_facts() -> None:
    bare: dict[str, Any] = {"metadata": {"name": "p"}}
    assert podview.phase(bare) == ""
    assert podview.condition(bare, "Ready") == ""
    assert not podview.ready(bare)
    assert podview.exit_code(bare) is None
    assert podview.reason(bare) == ""
    assert podview.failure(bare) == "no reason given"
    assert podview.restarts(bare) == 0
    assert not objects.is_terminating(bare)


def test_malformed_fields_are_ignored() -> None:
    odd = {"status": {"phase": 3, "conditions": "x", "containerStatuses": [1, {"state": 2}]}}
    assert podview.phase(odd) == ""
    assert not podview.ready(odd)
    assert podview.exit_code(odd) is None
    true_code = {"status": {"containerStatuses": [{"state": {"terminated": {"exitCode": True}}}]}}
    assert podview.exit_code(true_code) is None


def test_running_and_ready_needs_all_three() -> None:
    assert podview.running_and_ready(_pod())
    assert not podview.running_and_ready(_pod(ready="False"))
    assert not podview.running_and_ready(_pod("Pending"))
    assert not podview.running_and_ready(_pod(deleting=True))


def test_exit_code_reads_init_containers_first_in_spec_order() -> None:
    pod = _pod(
        "Failed",
        containers=[_ended("b", 2), _ended("a", 1)],
        init=[_ended("setup", 0), _ended("fetch", 3)],
        spec=["a", "b"],
        init_spec=["fetch", "setup"],
    )
    assert podview.exit_code(pod) == 3
    without_init = _pod("Failed", containers=[_ended("b", 2), _ended("a", 1)], spec=["a", "b"])
    assert podview.exit_code(without_init) == 1
    assert podview.exit_code(_pod("Failed", containers=[_ended("a", 137)], spec=["a"])) == 137
    assert podview.exit_code(_pod("Succeeded", containers=[_ended("a", 0)], spec=["a"])) is None


def test_restarts_sum_init_and_main_containers() -> None:
    pod = _pod(containers=[_ended("a", 1, restarts=2)], init=[_ended("i", 1, restarts=1)])
    assert podview.restarts(pod) == 3


def test_failure_says_why_in_the_order_a_message_needs() -> None:
    evicted = _pod("Failed", containers=[_ended("a", 137)], spec=["a"])
    evicted["status"] |= {"reason": "Evicted", "message": "The node was low on memory."}
    assert podview.reason(evicted) == "Evicted"
    assert podview.failure(evicted) == "Evicted: The node was low on memory."
    # No reason from the kubelet: the container that failed first, init containers included.
    init_failed = _pod(
        "Failed",
        containers=[_ended("main", 2)],
        init=[_ended("fetch", 3)],
        spec=["main"],
        init_spec=["fetch"],
    )
    assert podview.failure(init_failed) == "container fetch exited with 3"
    assert podview.failure(_pod("Failed", containers=[_ended("main", 2)], spec=["main"])) == (
        "container main exited with 2"
    )


def test_container_running_needs_the_pod_and_that_container_running() -> None:
    running = {"name": "main", "state": {"running": {}}}
    waiting = {"name": "side", "state": {"waiting": {"reason": "ContainerCreating"}}}
    pod = _pod("Running", containers=[running, waiting], spec=["main", "side"])
    assert podview.container_running(pod, "main")
    assert not podview.container_running(pod, "side")
    assert not podview.container_running(pod, "absent")
    assert not podview.container_running(_pod("Pending", containers=[running]), "main")
