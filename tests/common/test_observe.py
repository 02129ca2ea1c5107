"""One observation per reconcile, and the states its phases are shown."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from etctl.common import JobSettings
from etctl.common._observe import Effects, Observed
from etctl.common._phases import Phases
from etctl.runtime import ObjectView
from tests.common.simplejob import SimpleJob, SimpleJobPlugin

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pod(name: str, rtype: str, index: int, phase: str = "Running") -> ObjectView:
    labels = {
        "training.kubeflow.org/job-name": "j",
        "training.kubeflow.org/replica-type": rtype.lower(),
        "training.kubeflow.org/replica-index": str(index),
    }
    return {"metadata": {"name": name, "labels": labels}, "status": {"phase": phase}}


def observed(*pods: ObjectView) -> Observed[SimpleJob]:
    template: dict[str, Any] = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    raw = {
        "apiVersion": "example.etctl.io/v1",
        "kind": "SimpleJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
        "spec": {"replicaSpecs": {"Worker": {"replicas": 2, "template": template}}},
    }
    return Observed(
        kind="SimpleJob",
        job=SimpleJob.model_validate(raw),
        raw=raw,
        owner_ref={},
        settings=JobSettings(),
        now=NOW,
        pods=pods,
    )


def test_a_state_the_writes_did_not_change_is_built_once_per_plan() -> None:
    seen = observed(pod("j-worker-0", "Worker", 0), pod("j-worker-1", "Worker", 1))
    before = seen.state()
    assert seen.state() is before
    plans = Phases(SimpleJobPlugin()).plan(seen.job, seen.state)
    planned = seen.state(plans)
    assert planned is not before
    assert planned.plans is plans
    assert seen.state(plans) is planned
    assert seen.state(plans, Effects()) is planned


def test_a_state_after_writes_shows_them() -> None:
    seen = observed(pod("j-worker-0", "Worker", 0), pod("j-worker-1", "Worker", 1))
    plans = Phases(SimpleJobPlugin()).plan(seen.job, seen.state)
    after = seen.state(plans, Effects(deleted=frozenset({"j-worker-1"})))
    assert after is not seen.state(plans)
    assert [p["metadata"]["name"] for p in after.pods_of("Worker")] == ["j-worker-0"]
    assert after.replicas("Worker") == 2
