"""Behaviour resolution: defaults, policies, annotations and per-container overrides."""

from __future__ import annotations

import pytest

from etctl.runtime import ObjectView
from etctl.testing._kubelet import Behaviour, PodPolicy
from etctl.testing._kubelet.behaviour import Policy, resolve_behaviour


def _pod(annotations: dict[str, str] | None = None, **labels: str) -> ObjectView:
    return {
        "metadata": {
            "name": "worker-3",
            "namespace": "team",
            "annotations": annotations or {},
            "labels": labels,
        }
    }


def test_the_default_runs_until_stopped() -> None:
    behaviour = resolve_behaviour(_pod(), "main", [])
    assert behaviour == Behaviour()
    assert behaviour.run_seconds is None
    assert behaviour.ready


def test_annotations_set_knobs_and_container_suffixes_override_them() -> None:
    pod = _pod(
        {
            "sim.etctl.io/run-seconds": "30s",
            "sim.etctl.io/exit-code": "2",
            "sim.etctl.io/exit-code.sidecar": "0",
            "sim.etctl.io/ready": "false",
            "sim.etctl.io/log": "one\\ntwo",
        }
    )
    main = resolve_behaviour(pod, "main", [])
    assert (main.run_seconds, main.exit_code, main.ready) == (30.0, 2, False)
    assert main.logs == ("one", "two")
    assert resolve_behaviour(pod, "sidecar", []).exit_code == 0


def test_invalid_annotations_are_ignored() -> None:
    pod = _pod({"sim.etctl.io/run-seconds": "soon", "sim.etctl.io/start-delay": "-1"})
    assert resolve_behaviour(pod, "main", []) == Behaviour()
    unknown = _pod({"sim.etctl.io/fail-start": "Nope"})
    assert resolve_behaviour(unknown, "main", []).fail_start is None


def test_the_newest_matching_policy_wins_and_annotations_win_over_policies() -> None:
    policies: list[Policy] = [
        PodPolicy(name="worker-*", does=Behaviour(exit_code=1)),
        PodPolicy(labels={"role": "worker"}, does=Behaviour(exit_code=2)),
        PodPolicy(namespace="elsewhere", does=Behaviour(exit_code=3)),
    ]
    assert resolve_behaviour(_pod(role="worker"), "main", policies).exit_code == 2
    assert resolve_behaviour(_pod(), "main", policies).exit_code == 1
    annotated = _pod({"sim.etctl.io/exit-code": "9"}, role="worker")
    assert resolve_behaviour(annotated, "main", policies).exit_code == 9


def test_policies_can_be_limited_to_containers_and_vary_per_run() -> None:
    policy = PodPolicy(
        containers=frozenset({"main"}),
        does=lambda pod, container, restarts: Behaviour(exit_code=restarts),
    )
    assert resolve_behaviour(_pod(), "main", [policy], restarts=4).exit_code == 4
    assert resolve_behaviour(_pod(), "sidecar", [policy], restarts=4).exit_code == 0


def test_fail_start_must_be_a_known_reason() -> None:
    with pytest.raises(ValueError, match="fail_start must be one of"):
        Behaviour(fail_start="Crash")
