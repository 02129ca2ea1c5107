"""The pod phase, the kubelet's getPhase, over container states and restart policies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.podstatus import PodView, Terminal, pod_conditions, pod_phase


def _container(state: str, code: int = 0, *, restarted: bool = False) -> ContainerRuntime:
    runtime = ContainerRuntime({"name": "c", "image": "x"}, pod_uid="u", init=False, log_lines=10)
    if state in ("running", "terminated") or restarted:
        runtime.start(now="t", mono=0.0, wall=datetime(2026, 1, 1, tzinfo=UTC))
    if state == "terminated" or restarted:
        runtime.terminate(code, "Error" if code else "Completed", "", now="t")
    if restarted:
        runtime.last, runtime.terminated = runtime.terminated, None
        runtime.wait("CrashLoopBackOff")
    return runtime


def _view(policy: str, *containers: ContainerRuntime, initialized: bool = True) -> PodView:
    return PodView(
        restart_policy=policy,
        admitted=True,
        initialized=initialized,
        inits=[],
        containers=list(containers),
        terminal=None,
        readiness_gates=[],
    )


@pytest.mark.parametrize(
    ("policy", "states", "phase"),
    [
        ("Always", [("waiting", 0)], "Pending"),
        ("Always", [("running", 0), ("waiting", 0)], "Pending"),
        ("Always", [("running", 0), ("terminated", 1)], "Running"),
        ("Always", [("terminated", 0)], "Running"),
        ("OnFailure", [("terminated", 0), ("terminated", 0)], "Succeeded"),
        ("OnFailure", [("terminated", 1)], "Running"),
        ("Never", [("terminated", 0), ("terminated", 2)], "Failed"),
        ("Never", [("terminated", 0)], "Succeeded"),
    ],
)
def test_phase(policy: str, states: list[tuple[str, int]], phase: str) -> None:
    containers = [_container(state, code) for state, code in states]
    assert pod_phase(_view(policy, *containers)) == phase


def test_a_crash_looping_container_counts_as_stopped() -> None:
    assert pod_phase(_view("Always", _container("waiting", 1, restarted=True))) == "Running"


def test_initializing_and_terminal_pods() -> None:
    assert pod_phase(_view("Always", _container("running"), initialized=False)) == "Pending"
    ended = PodView("Always", True, True, [], [], Terminal("Failed", "Evicted"), [])
    assert pod_phase(ended) == "Failed"


def test_conditions_keep_their_transition_time_while_unchanged() -> None:
    running = _container("running")
    running.ready = True
    view = _view("Always", running)
    first = pod_conditions(view, [], "2026-01-01T00:00:00Z", {})
    again = pod_conditions(view, first, "2026-01-01T00:05:00Z", {})
    assert [c["lastTransitionTime"] for c in again] == ["2026-01-01T00:00:00Z"] * 5
    running.ready = False
    changed = pod_conditions(view, again, "2026-01-01T00:06:00Z", {})
    ready = next(c for c in changed if c["type"] == "Ready")
    assert (ready["status"], ready["lastTransitionTime"]) == ("False", "2026-01-01T00:06:00Z")
