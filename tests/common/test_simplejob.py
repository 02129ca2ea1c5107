"""The example plugin of docs/plugins.md: its phases, and the guide's listing of it."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from etctl.common import (
    Capabilities,
    JobConditionType,
    JobSettings,
    JobState,
    ReplicaRef,
    Replicas,
    ReplicaStatus,
)
from etctl.common._phases import Phases
from etctl.runtime import CONFIGMAPS
from tests.common import simplejob
from tests.common.simplejob import SimpleJob, SimpleJobPlugin

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = SimpleJobPlugin()
PHASES = Phases(PLUGIN)


def job(**specs: int) -> SimpleJob:
    template = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    return SimpleJob.model_validate(
        {
            "metadata": {"name": "j", "namespace": "ns"},
            "spec": {
                "replicaSpecs": {
                    rtype: {"replicas": count, "template": template}
                    for rtype, count in specs.items()
                }
            },
        }
    )


def state(
    subject: SimpleJob,
    counts: dict[str, ReplicaStatus] | None = None,
    pods: dict[str, tuple[Any, ...]] | None = None,
) -> JobState[SimpleJob]:
    return JobState(
        job=subject,
        pods=pods or {},
        services={},
        children={},
        replica_statuses=counts or {},
        now=datetime(2026, 1, 1, tzinfo=UTC),
        settings=JobSettings(),
    )


def test_the_guide_lists_the_plugin_exactly() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", guide, flags=re.DOTALL)
    source = Path(simplejob.__file__).read_text(encoding="utf-8")
    assert source in blocks


def test_capabilities() -> None:
    caps = Capabilities.of(PLUGIN)
    assert caps.validator is None  # the model's generic checks are enough
    assert caps.planner is PLUGIN
    assert caps.pods is PLUGIN
    assert caps.services is PLUGIN
    assert caps.extra_objects is PLUGIN
    assert caps.judge is None  # the framework's default judgement
    assert caps.owned_resources == (CONFIGMAPS,)


def test_validation_is_the_models_generic_checks() -> None:
    assert PHASES.validate(job(Worker=2, Leader=1)) == []
    problems = PHASES.validate(job(Leader=2))
    assert "spec.replicaSpecs.Worker: missing; a SimpleJob needs workers" in problems
    assert any(p.startswith("spec.replicaSpecs.Leader.replicas: 2 is above 1") for p in problems)
    assert PHASES.validate(job(Worker=1, Boss=1)) == [
        "spec.replicaSpecs.Boss: unknown replica type; use Worker, Leader"
    ]


def test_replica_types_are_spelled_as_declared_in_creation_order() -> None:
    subject = job(leader=1, worker=2)
    assert list(subject.replica_specs()) == ["Worker", "Leader"]


def test_the_default_judgement() -> None:
    subject = job(Worker=2)
    assert PHASES.judge(subject, state(subject)) is None
    running = PHASES.judge(subject, state(subject, {"Worker": ReplicaStatus(active=1)}))
    assert running is not None
    assert running.condition is JobConditionType.RUNNING
    assert running.reason == "SimpleJobRunning"
    done = PHASES.judge(subject, state(subject, {"Worker": ReplicaStatus(succeeded=2)}))
    assert done is not None
    assert done.condition is JobConditionType.SUCCEEDED
    failed = PHASES.judge(subject, state(subject, {"Worker": ReplicaStatus(failed=1)}))
    assert failed is not None
    assert failed.condition is JobConditionType.FAILED
    assert failed.message == "SimpleJob j failed: 1 Worker pod(s) failed"


def test_pods_services_configmap_and_plan() -> None:
    subject = job(Worker=2, Leader=1)
    pod: dict[str, Any] = {"metadata": {}, "spec": {"containers": [{"name": "main"}]}}
    PLUGIN.decorate_pod(subject, pod, ReplicaRef("Worker", 1, "j-worker-1"), state(subject))
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env == {
        "SIMPLEJOB_ROLE": "worker",
        "SIMPLEJOB_INDEX": "1",
        "SIMPLEJOB_PEERS": "j-worker-0,j-worker-1,j-leader-0",
    }
    assert pod["spec"]["volumes"] == [{"name": "peers", "configMap": {"name": "j-peers"}}]
    assert (
        PLUGIN.build_service(subject, ReplicaRef("Worker", 0, "j-worker-0"), state(subject)) is None
    )
    assert PLUGIN.build_service(subject, ReplicaRef("Leader", 0, "j-leader-0"), state(subject))
    (wanted,) = PLUGIN.extra_objects(subject, state(subject))
    assert wanted.name == "j-peers"
    assert wanted.build() == {"data": {"peers": "j-worker-0\nj-worker-1\nj-leader-0\n"}}
    running = ({"status": {"phase": "Running"}},) * 2
    leader = Replicas("Leader", (ReplicaRef("Leader", 0, "j-leader-0"),))
    waiting = PLUGIN.plan(subject, leader, state(subject))
    assert not waiting.gate.open
    assert waiting.gate.message == "0 of 2 workers are running"
    assert PLUGIN.plan(subject, leader, state(subject, pods={"Worker": running})) is leader
    workers = Replicas("Worker", ())
    assert PLUGIN.plan(subject, workers, state(subject)) is workers
    plans = PHASES.plan(subject, lambda: state(subject))
    assert [ref.name for ref in plans["Worker"].slots] == ["j-worker-0", "j-worker-1"]
    assert not plans["Leader"].gate.open
