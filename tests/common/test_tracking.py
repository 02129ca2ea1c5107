"""The child event handler: which job a child's event wakes."""

from __future__ import annotations

from typing import Any

from etctl.common._tracking import ChildEventHandler
from etctl.runtime import CreateEvent, DeleteEvent, Request, UpdateEvent
from tests.common.simplejob import SIMPLEJOBS

OWNER = {
    "apiVersion": "example.etctl.io/v1",
    "kind": "SimpleJob",
    "name": "j",
    "uid": "u1",
    "controller": True,
}


def child(name: str, *, owned: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if owned:
        meta["ownerReferences"] = [OWNER]
    meta["labels"] = {"training.kubeflow.org/job-name": "j"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_every_event_of_a_child_wakes_its_controlling_job() -> None:
    handler = ChildEventHandler(SIMPLEJOBS)
    assert list(handler.create(CreateEvent(child("j-worker-0")))) == [Request("ns", "j")]
    old = child("j-worker-0")
    assert list(handler.update(UpdateEvent(old, child("j-worker-0", deleting=True)))) == [
        Request("ns", "j")
    ]
    assert list(handler.delete(DeleteEvent(child("j-worker-0")))) == [Request("ns", "j")]


def test_a_child_of_another_kind_wakes_nothing() -> None:
    handler = ChildEventHandler(SIMPLEJOBS)
    foreign = child("x")
    foreign["metadata"]["ownerReferences"] = [{**OWNER, "apiVersion": "other.io/v1"}]
    assert list(handler.create(CreateEvent(foreign))) == []


def test_an_orphan_wakes_the_job_it_could_belong_to() -> None:
    handler = ChildEventHandler(SIMPLEJOBS)
    assert list(handler.create(CreateEvent(child("j-worker-3", owned=False)))) == [
        Request("ns", "j")
    ]
    # Not when its name is not one the job gives, nor while it is being deleted.
    assert list(handler.create(CreateEvent(child("debug", owned=False)))) == []
    gone = child("j-worker-3", owned=False, deleting=True)
    assert list(handler.update(UpdateEvent(gone, gone))) == []
