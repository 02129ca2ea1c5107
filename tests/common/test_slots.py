"""Slots: default plans and how observed pods fill them."""

from __future__ import annotations

from typing import Any

from etctl.common import ReplicaRef
from etctl.common._slots import default_plan, fill, format_indexes, parse_indexes, slot_name


def pod(name: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_default_plan_names_slots_like_kubeflow() -> None:
    assert slot_name("mnist", "Worker", 2) == "mnist-worker-2"
    assert default_plan("mnist", "PS", 2) == (
        ReplicaRef("PS", 0, "mnist-ps-0"),
        ReplicaRef("PS", 1, "mnist-ps-1"),
    )
    assert default_plan("mnist", "PS", -1) == ()


def test_fill_partitions_pods_and_slots() -> None:
    plan = default_plan("j", "Worker", 4)
    found = fill(
        plan,
        [
            pod("j-worker-0"),
            pod("j-worker-1", deleting=True),
            pod("j-worker-5"),
            pod("j-worker-4", deleting=True),
            pod("j-worker-9"),
        ],
    )
    assert set(found.live) == {"j-worker-0"}
    assert found.terminating == {"j-worker-1"}
    assert [ref.name for ref in found.missing] == ["j-worker-2", "j-worker-3"]
    assert [p["metadata"]["name"] for p in found.outside] == ["j-worker-5", "j-worker-9"]
    assert [ref.index for ref, _ in found.live_refs()] == [0]


def test_a_custom_plan_is_matched_by_name() -> None:
    plan = [ReplicaRef("Worker", 7, "j-worker-7"), ReplicaRef("Worker", 9, "j-worker-9")]
    found = fill(plan, [pod("j-worker-0"), pod("j-worker-9")])
    assert set(found.live) == {"j-worker-9"}
    assert [ref.index for ref in found.missing] == [7]
    assert [p["metadata"]["name"] for p in found.outside] == ["j-worker-0"]


def test_completed_indexes_format_like_batch_jobs() -> None:
    assert format_indexes([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert format_indexes([]) == ""
    assert parse_indexes("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert parse_indexes(None) == set()
    assert parse_indexes("x,3,-1,2-") == {3}
