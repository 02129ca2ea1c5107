"""What a user sees of a TrainingJob, and how two looks at it differ."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.cli._jobview import Change, Snapshot, changes, pod_status, selects, snapshot
from etctl.cli._timeline import Tone

JOB = "tj"


def pod(name: str, **status: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if status.pop("deleting", False):
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    node = status.pop("node", "node-0")
    return {"metadata": meta, "spec": {"nodeName": node}, "status": status}


def running(name: str, node: str = "node-0") -> dict[str, Any]:
    return pod(
        name,
        node=node,
        phase="Running",
        podIP="10.0.0.1",
        containerStatuses=[{"name": "main", "state": {"running": {}}}],
    )


def job(phase: str = "", targets: tuple[str, ...] = (), members: tuple[str, ...] = ()) -> Any:
    return {
        "metadata": {"name": JOB},
        "spec": {"etReplicaSpecs": {"worker": {"replicas": len(targets)}}},
        "status": {
            "phase": phase,
            "targetWorkers": list(targets),
            "currentWorkers": list(members),
        },
    }


def scaler(kind: str, name: str, **status: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"selector": {"name": JOB}},
        "status": status,
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod("a", deleting=True, phase="Running"), "Terminating"),
        (pod("a", phase="Failed", reason="Evicted"), "Evicted"),
        (
            pod("a", phase="Pending", initContainerStatuses=[{"state": {"running": {}}}]),
            "Init:0/1",
        ),
        (
            pod(
                "a",
                phase="Pending",
                initContainerStatuses=[{"state": {"terminated": {"exitCode": 0}}}],
                containerStatuses=[{"state": {"waiting": {"reason": "PodInitializing"}}}],
            ),
            "PodInitializing",
        ),
        (
            pod("a", phase="Pending", containerStatuses=[{"state": {"waiting": {"reason": "X"}}}]),
            "X",
        ),
        (pod("a", phase="Pending", node=""), "Pending"),
        (running("a"), "Running"),
        (
            pod(
                "a",
                phase="Failed",
                containerStatuses=[{"state": {"terminated": {"reason": "Error"}}}],
            ),
            "Error",
        ),
    ],
)
def test_pod_status_is_worded_as_kubectl_words_it(obj: dict[str, Any], expected: str) -> None:
    assert pod_status(obj) == expected


def test_a_snapshot_keeps_what_a_person_follows() -> None:
    seen = snapshot(
        job("Running", ("w-0", "w-1"), ("w-0",)),
        [running("w-1", "node-1"), running("w-0")],
        [scaler("ScaleOut", "out", step="Joining", addPods=["w-1"])],
    )
    assert seen.job is not None
    assert seen.job.phase == "Running"
    assert seen.job.targets == ("w-0", "w-1")
    assert seen.job.members == ("w-0",)
    assert list(seen.pods) == ["w-0", "w-1"]
    assert seen.pods["w-1"].node == "node-1"
    assert seen.pods["w-1"].ip == "10.0.0.1"
    assert seen.running("w-0", "w-1")
    assert not seen.running("w-0", "w-2")
    out = seen.scalers["scaleout/out"]
    assert (out.step, out.chosen, out.outcome, out.succeeded) == ("Joining", ("w-1",), None, False)


def test_a_scaler_outcome_is_its_finished_condition() -> None:
    done = snapshot(
        None,
        [],
        [
            scaler(
                "ScaleIn",
                "in",
                step="Done",
                toDeletePods=["w-2"],
                conditions=[
                    {"type": "Created", "status": "True"},
                    {"type": "ScaleSucceeded", "status": "True", "reason": "R", "message": "m"},
                ],
            )
        ],
    )
    view = done.scalers["scalein/in"]
    assert view.outcome == ("ScaleSucceeded", "R", "m")
    assert view.succeeded
    assert view.chosen == ("w-2",)


def test_selects_reads_the_scalers_selector() -> None:
    assert selects(scaler("ScaleOut", "a"), JOB)
    assert not selects(scaler("ScaleOut", "a"), "other")
    assert not selects({"spec": {}}, JOB)


def test_identical_looks_have_no_changes() -> None:
    seen = snapshot(job("Running"), [running("w-0")], [])
    assert changes(seen, seen, JOB) == []


def test_a_job_appearing_is_created_with_its_phase_and_workers() -> None:
    seen = snapshot(job("Created", ("w-0",)), [], [])
    assert changes(None, seen, JOB) == [
        Change("trainingjob/tj", "created"),
        Change("trainingjob/tj", "phase Created"),
        Change("trainingjob/tj", "workers +w-0"),
    ]


def test_job_changes_name_the_phase_transition_and_the_membership() -> None:
    before = snapshot(job("Running", ("w-0", "w-1"), ("w-0", "w-1")), [], [])
    after = snapshot(job("Scaling", ("w-0", "w-2"), ("w-0",)), [], [])
    assert changes(before, after, JOB, arrow="→") == [
        Change("trainingjob/tj", "phase Running → Scaling"),
        Change("trainingjob/tj", "workers +w-2 -w-1"),
        Change("trainingjob/tj", "hostfile -w-1"),
    ]
    gone = Snapshot(job=None, pods={}, scalers={})
    assert changes(after, gone, JOB) == [Change("trainingjob/tj", "deleted", Tone.WARN)]


def test_pod_changes_in_name_order_with_the_node_once() -> None:
    pending = pod("w-1", phase="Pending", node="")
    before = snapshot(None, [pending, running("w-0")], [])
    bound = pod("w-1", phase="Pending", containerStatuses=[{"state": {"waiting": {"reason": "C"}}}])
    after = snapshot(None, [bound, running("w-2", "node-2")], [])
    assert changes(before, after, JOB) == [
        Change("pod/w-0", "deleted", Tone.WARN),
        Change("pod/w-1", "Pending -> C on node-0"),
        Change("pod/w-2", "created, Running on node-2", Tone.GOOD),
    ]
    evicted = snapshot(None, [bound, pod("w-2", phase="Failed", reason="Evicted")], [])
    assert changes(after, evicted, JOB) == [Change("pod/w-2", "Running -> Evicted", Tone.BAD)]


def test_scaler_changes_follow_its_steps_choice_and_outcome() -> None:
    created = snapshot(None, [], [scaler("ScaleOut", "out")])
    assert changes(None, created, JOB) == [Change("scaleout/out", "created")]
    creating = snapshot(None, [], [scaler("ScaleOut", "out", step="Creating", addPods=["w-3"])])
    assert changes(created, creating, JOB) == [
        Change("scaleout/out", "step Creating"),
        Change("scaleout/out", "adds w-3"),
    ]
    failed = {"type": "ScaleFailed", "status": "True", "reason": "ScaleOutTimeout", "message": "m"}
    done = snapshot(
        None, [], [scaler("ScaleOut", "out", step="Done", addPods=["w-3"], conditions=[failed])]
    )
    assert changes(creating, done, JOB) == [
        Change("scaleout/out", "step Creating -> Done"),
        Change("scaleout/out", "ScaleFailed (ScaleOutTimeout): m", Tone.BAD),
    ]
    removing = snapshot(None, [], [scaler("ScaleIn", "in", toDeletePods=["w-1"])])
    assert Change("scalein/in", "removes w-1") in changes(None, removing, JOB)
