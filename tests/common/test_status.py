"""Status computation and the merge patch that writes it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from etctl.common import ConditionStatus, JobStatus, ReplicaRef, ReplicaStatus
from etctl.common._slots import default_plan
from etctl.common._status import (
    ConditionChange,
    compute_status,
    merge_diff,
    replica_statuses,
    status_patch,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pod(phase: str, index: int | None = None, *, deleting: bool = False) -> dict[str, Any]:
    labels = {} if index is None else {"training.kubeflow.org/replica-index": str(index)}
    metadata: dict[str, Any] = {"labels": labels}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata, "status": {"phase": phase}}


def plan(count: int) -> tuple[ReplicaRef, ...]:
    return default_plan("j", "Worker", count)


def test_replica_counts_by_phase_with_selectors() -> None:
    pods = [pod("Pending"), pod("Running"), pod("Succeeded", 2), pod("Failed"), pod("")]
    counted = replica_statuses(
        {"Worker": pods},
        plans={"Worker": plan(5), "PS": plan(1)},
        recorded={},
        selectors={"Worker": "a=b"},
    )
    # kubeflow's rule: only Running pods are active; a Pending one is not counted at all.
    assert counted["Worker"] == ReplicaStatus(
        active=1, succeeded=1, failed=1, selector="a=b", completed_indexes="2"
    )
    assert counted["PS"] == ReplicaStatus()


def test_a_running_pod_being_deleted_counts_as_failed() -> None:
    # A pod on a lost node is deleted but never reaches Failed: it counts as a failure, as in
    # kubeflow. Pods of slots the job no longer plans are deleted on purpose and not counted.
    pods = [
        pod("Running", 0),
        pod("Running", 1, deleting=True),
        pod("Pending", 2, deleting=True),
        pod("Running", 7, deleting=True),
    ]
    counted = replica_statuses(
        {"Worker": pods}, plans={"Worker": plan(3)}, recorded={}, selectors={}
    )
    assert counted["Worker"] == ReplicaStatus(active=1, failed=1)
    # A suspended job deletes every pod itself.
    suspended = replica_statuses(
        {"Worker": pods}, plans={"Worker": plan(3)}, recorded={}, selectors={}, suspended=True
    )
    assert suspended["Worker"] == ReplicaStatus(active=1)


def test_completed_slots_are_remembered_by_index() -> None:
    recorded = {"Worker": ReplicaStatus(succeeded=2, completed_indexes="0-1")}
    # Slot 0's pod is gone, slot 3 just succeeded: three slots are done.
    counted = replica_statuses(
        {"Worker": [pod("Succeeded", 1), pod("Succeeded", 3)]},
        plans={"Worker": plan(4)},
        recorded=recorded,
        selectors={},
    )
    assert counted["Worker"].succeeded == 3
    assert counted["Worker"].completed_indexes == "0-1,3"
    scaled = replica_statuses(
        {"Worker": []}, plans={"Worker": plan(1)}, recorded=recorded, selectors={}
    )
    assert scaled["Worker"].completed_indexes == "0"
    unplanned = replica_statuses(
        {"Worker": []}, plans={"Worker": None}, recorded=recorded, selectors={}
    )
    assert unplanned["Worker"].succeeded == 2
    reset = replica_statuses(
        {"Worker": []}, plans={"Worker": plan(4)}, recorded=recorded, selectors={}, restarted=True
    )
    assert reset["Worker"] == ReplicaStatus()


def test_conditions_apply_in_order_and_completion_is_stamped_once() -> None:
    changes = [
        ConditionChange("Created", ConditionStatus.TRUE, "XCreated", "created"),
        ConditionChange("Running", ConditionStatus.TRUE, "XRunning", "running"),
        ConditionChange("Succeeded", ConditionStatus.TRUE, "XSucceeded", "done"),
        ConditionChange("Running", ConditionStatus.TRUE, "XRunning", "again"),
    ]
    status = compute_status(
        JobStatus(), changes=changes, replicas={}, start_time=NOW, restart_count=2, now=NOW
    )
    assert [(c.type, c.status) for c in status.conditions] == [
        ("Created", ConditionStatus.TRUE),
        ("Running", ConditionStatus.FALSE),
        ("Succeeded", ConditionStatus.TRUE),
    ]
    assert status.completion_time == NOW
    assert status.restart_count == 2
    later = compute_status(
        status, changes=[], replicas={}, start_time=NOW, restart_count=2, now=NOW + timedelta(1)
    )
    assert later.completion_time == NOW


def test_merge_diff() -> None:
    old = {"a": 1, "m": {"x": 1, "y": 2}, "gone": True, "l": [1]}
    new = {"a": 1, "m": {"x": 1, "z": 3}, "l": [1, 2]}
    assert merge_diff(old, new) == {"m": {"y": None, "z": 3}, "gone": None, "l": [1, 2]}
    assert merge_diff(new, new) == {}


def test_status_patch_writes_only_changed_owned_fields() -> None:
    status = JobStatus(
        replica_statuses={"Worker": ReplicaStatus(active=1, selector="s")}, start_time=NOW
    )
    stored: dict[str, Any] = {"lastReconcileTime": "2020-01-01T00:00:00Z", "phase": "Old"}
    patch = status_patch(stored, status, {})
    assert patch == {
        "replicaStatuses": {"Worker": {"active": 1, "succeeded": 0, "failed": 0, "selector": "s"}},
        "startTime": "2026-01-01T00:00:00Z",
    }
    written = {**stored, **(patch or {})}
    assert status_patch(written, status, {}) is None


def test_status_patch_removes_what_the_status_no_longer_has() -> None:
    stored = {
        "replicaStatuses": {"Gone": {"active": 1}, "Worker": {"active": 0}},
        "completionTime": "2026-01-01T00:00:00Z",
        "restartCount": 0,
    }
    status = JobStatus(replica_statuses={"Worker": ReplicaStatus()})
    assert status_patch(stored, status, {}) == {
        "replicaStatuses": {"Gone": None, "Worker": {"succeeded": 0, "failed": 0}},
        "completionTime": None,
    }


def test_extension_fields_are_merged_but_never_override_owned_ones() -> None:
    stored = {"phase": "Created", "currentWorkers": ["a"]}
    extra = {"phase": "Running", "currentWorkers": None, "restartCount": 9}
    assert status_patch(stored, JobStatus(), extra) == {"phase": "Running", "currentWorkers": None}
