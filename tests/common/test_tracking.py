"""Expectation keys and the child event handler that observes a job's writes."""

from __future__ import annotations

from typing import Any

from etctl.common._tracking import ChildEventHandler, child_key, job_prefix, replica_key
from etctl.runtime import (
    CONFIGMAPS,
    PODS,
    SERVICES,
    CreateEvent,
    DeleteEvent,
    Expectations,
    FakeClock,
    Request,
    UpdateEvent,
)
from tests.common.simplejob import SIMPLEJOBS

OWNER = {
    "apiVersion": "example.etctl.io/v1",
    "kind": "SimpleJob",
    "name": "j",
    "uid": "u1",
    "controller": True,
}


def child(name: str, *, rtype: str | None = "worker", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "ownerReferences": [OWNER]}
    if rtype:
        meta["labels"] = {"training.kubeflow.org/replica-type": rtype}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_keys_name_the_job_instance() -> None:
    assert replica_key("ns", "j", "u1", "Worker", PODS) == "ns/j/u1/worker/pods"
    assert replica_key("ns", "j", "u1", "PS", SERVICES) == "ns/j/u1/ps/services"
    assert child_key("ns", "j", "u1", CONFIGMAPS) == "ns/j/u1/configmaps"
    assert job_prefix("ns", "j") == "ns/j/"
    assert job_prefix("ns", "j", "u1") == "ns/j/u1/"


def test_events_lower_expectations_and_enqueue_the_owner() -> None:
    expectations = Expectations(clock=FakeClock())
    handler = ChildEventHandler(SIMPLEJOBS, PODS, expectations)
    key = "ns/j/u1/worker/pods"
    expectations.expect_creations(key, 2)
    expectations.expect_deletions(key, ["j-worker-5"])
    assert list(handler.create(CreateEvent(child("j-worker-0")))) == [Request("ns", "j")]
    handler.create(CreateEvent(child("j-worker-1")))
    assert not expectations.satisfied(key)
    old = child("j-worker-5")
    handler.update(UpdateEvent(old, child("j-worker-5", deleting=True)))
    assert expectations.satisfied(key)
    # A later DELETE of the same pod does not count twice.
    expectations.expect_deletions(key, ["j-worker-6"])
    handler.delete(DeleteEvent(child("j-worker-5", deleting=True)))
    assert not expectations.satisfied(key)
    handler.delete(DeleteEvent(child("j-worker-6"), state_unknown=True))
    assert expectations.satisfied(key)


def test_foreign_and_unlabelled_children_observe_nothing() -> None:
    expectations = Expectations(clock=FakeClock())
    handler = ChildEventHandler(SIMPLEJOBS, PODS, expectations)
    expectations.expect_creations("ns/j/u1/worker/pods", 1)
    foreign = child("x")
    foreign["metadata"]["ownerReferences"] = [{**OWNER, "apiVersion": "other.io/v1"}]
    assert list(handler.create(CreateEvent(foreign))) == []
    handler.create(CreateEvent(child("y", rtype=None)))
    assert not expectations.satisfied("ns/j/u1/worker/pods")


def test_extra_objects_use_their_resource_key() -> None:
    expectations = Expectations(clock=FakeClock())
    handler = ChildEventHandler(SIMPLEJOBS, CONFIGMAPS, expectations)
    expectations.expect_creations("ns/j/u1/configmaps", 1)
    handler.create(CreateEvent(child("j-peers", rtype=None)))
    assert expectations.satisfied("ns/j/u1/configmaps")
