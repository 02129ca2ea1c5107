"""What a user sees of a job of any kind, and how two looks at it differ."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.cli._changes import Change, changes
from etctl.cli._jobkinds import JobKind
from etctl.cli._jobview import Snapshot, pod_status, selects
from etctl.cli._jobview import snapshot as look
from etctl.cli._timeline import Tone
from etctl.jobs.mpijob import MPIJobPlugin
from etctl.jobs.pytorchjob import PyTorchJobPlugin
from etctl.jobs.tfjob import TFJobPlugin
from etctl.jobs.trainingjob import TrainingJobPlugin

JOB = "tj"
SUBJECT = "trainingjob/tj"
KIND = JobKind.of(TrainingJobPlugin(), "trainingjob")
TFJOB = JobKind.of(TFJobPlugin(), "tfjob")


def snapshot(job: Any, pods: Any, scalers: Any, **more: Any) -> Snapshot:
    return look(KIND, JOB, job, pods, scalers, **more)


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
    template = {"spec": {"containers": [{"name": "main", "image": "horovod"}]}}
    return {
        "metadata": {"name": JOB},
        "spec": {"etReplicaSpecs": {"worker": {"replicas": len(targets), "template": template}}},
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
    assert selects(scaler("ScaleOut", "a"), JOB, KIND)
    assert not selects(scaler("ScaleOut", "a"), "other", KIND)
    assert not selects({"spec": {}}, JOB, KIND)
    # A selector may name the kind (and its group); then only that kind's job is selected.
    named = scaler("ScaleOut", "a")
    named["spec"]["selector"]["kind"] = "TrainingJob"
    assert selects(named, JOB, KIND)
    named["spec"]["selector"]["kind"] = "MPIJob"
    assert not selects(named, JOB, KIND)
    # Without a kind, a scaler names the elastic kind of its own group: never a TFJob.
    assert not selects(scaler("ScaleOut", "a"), JOB, TFJOB)


def test_identical_looks_have_no_changes() -> None:
    seen = snapshot(job("Running"), [running("w-0")], [])
    assert changes(seen, seen, SUBJECT) == []


def test_a_job_appearing_is_created_with_its_phase_and_workers() -> None:
    seen = snapshot(job("Created", ("w-0",)), [], [])
    assert changes(None, seen, SUBJECT) == [
        Change("trainingjob/tj", "created"),
        Change("trainingjob/tj", "phase Created"),
        Change("trainingjob/tj", "workers +w-0"),
    ]


def test_job_changes_name_the_phase_transition_and_the_membership() -> None:
    before = snapshot(job("Running", ("w-0", "w-1"), ("w-0", "w-1")), [], [])
    after = snapshot(job("Scaling", ("w-0", "w-2"), ("w-0",)), [], [])
    assert changes(before, after, SUBJECT, arrow="→") == [
        Change("trainingjob/tj", "phase Running → Scaling"),
        Change("trainingjob/tj", "workers +w-2 -w-1"),
        Change("trainingjob/tj", "hostfile -w-1"),
    ]
    gone = Snapshot(job=None, pods={}, scalers={})
    assert changes(after, gone, SUBJECT) == [Change("trainingjob/tj", "deleted", Tone.WARN)]


def elastic_job(kind: str, spec: dict[str, Any], members: tuple[str, ...]) -> dict[str, Any]:
    status = {"targetWorkers": list(members), "currentWorkers": list(members)}
    return {"kind": kind, "metadata": {"name": JOB}, "spec": spec, "status": status}


def test_the_members_in_use_are_named_as_each_kind_publishes_them() -> None:
    template = {"spec": {"containers": [{"name": "main", "image": "trainer"}]}}
    mpi = {
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": template},
            "Worker": {"replicas": 2, "template": template},
        }
    }
    torch = {
        "elasticPolicy": {"minReplicas": 1, "maxReplicas": 3},
        "pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": template}},
    }
    for plugin, kind, spec, said in (
        (MPIJobPlugin(), "MPIJob", mpi, "discover_hosts.sh"),
        (PyTorchJobPlugin(), "PyTorchJob", torch, "members"),
    ):
        view = JobKind.of(plugin, kind.lower())
        before = look(view, JOB, elastic_job(kind, spec, ("w-0", "w-1")), [], [])
        after = look(view, JOB, elastic_job(kind, spec, ("w-0",)), [], [])
        subject = f"{kind.lower()}/{JOB}"
        assert changes(before, after, subject)[-1] == Change(subject, f"{said} -w-1")


def test_pod_changes_in_name_order_with_the_node_once() -> None:
    pending = pod("w-1", phase="Pending", node="")
    before = snapshot(None, [pending, running("w-0")], [])
    bound = pod("w-1", phase="Pending", containerStatuses=[{"state": {"waiting": {"reason": "C"}}}])
    after = snapshot(None, [bound, running("w-2", "node-2")], [])
    assert changes(before, after, SUBJECT) == [
        Change("pod/w-0", "deleted", Tone.WARN),
        Change("pod/w-1", "Pending -> C on node-0"),
        Change("pod/w-2", "created, Running on node-2", Tone.GOOD),
    ]
    evicted = snapshot(None, [bound, pod("w-2", phase="Failed", reason="Evicted")], [])
    assert changes(after, evicted, SUBJECT) == [Change("pod/w-2", "Running -> Evicted", Tone.BAD)]


def test_scaler_changes_follow_its_steps_choice_and_outcome() -> None:
    created = snapshot(None, [], [scaler("ScaleOut", "out")])
    assert changes(None, created, SUBJECT) == [Change("scaleout/out", "created")]
    creating = snapshot(None, [], [scaler("ScaleOut", "out", step="Creating", addPods=["w-3"])])
    assert changes(created, creating, SUBJECT) == [
        Change("scaleout/out", "step Creating"),
        Change("scaleout/out", "adds w-3"),
    ]
    failed = {"type": "ScaleFailed", "status": "True", "reason": "ScaleOutTimeout", "message": "m"}
    done = snapshot(
        None, [], [scaler("ScaleOut", "out", step="Done", addPods=["w-3"], conditions=[failed])]
    )
    assert changes(creating, done, SUBJECT) == [
        Change("scaleout/out", "step Creating -> Done"),
        Change("scaleout/out", "ScaleFailed (ScaleOutTimeout): m", Tone.BAD),
    ]
    removing = snapshot(None, [], [scaler("ScaleIn", "in", toDeletePods=["w-1"])])
    assert Change("scalein/in", "removes w-1") in changes(None, removing, SUBJECT)


def tfjob(conditions: list[dict[str, Any]], **replica_statuses: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": template},
            }
        },
        "status": {"conditions": conditions, "replicaStatuses": replica_statuses},
    }


def condition(kind: str, status: str = "True", since: str = "", **more: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastTransitionTime": since, **more}


def test_a_kind_without_a_phase_reads_its_latest_true_condition() -> None:
    job = tfjob(
        [
            condition("Created", since="2026-01-01T00:00:01Z"),
            condition("Running", since="2026-01-01T00:00:05Z"),
        ],
        Worker={"active": 2},
        PS={"active": 1},
    )
    seen = look(TFJOB, "tf", job, [], [])
    assert seen.job is not None
    assert seen.job.phase == "Running"
    assert not seen.job.finished
    # Replica types in the spec's creation order, with the spec's counts and the status's.
    assert [(r.replica_type, r.desired, r.active) for r in seen.job.replicas] == [
        ("PS", 1, 1),
        ("Worker", 2, 2),
    ]
    # A finished job stays finished even if Running is still True after it.
    done = tfjob(
        [
            condition("Succeeded", since="2026-01-01T00:00:09Z", reason="TFJobSucceeded"),
            condition("Running", since="2026-01-01T00:00:10Z"),
        ]
    )
    finished = look(TFJOB, "tf", done, [], [])
    assert finished.job is not None
    assert finished.job.phase == "Succeeded"
    assert finished.job.outcome is not None
    assert finished.job.outcome.reason == "TFJobSucceeded"


def test_a_job_that_does_not_parse_is_shown_from_its_status() -> None:
    job = tfjob([condition("Failed", message="spec.tfReplicaSpecs: bad")], Worker={"failed": 1})
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "many"
    seen = look(TFJOB, "tf", job, [], [])
    assert seen.job is not None
    assert [(r.replica_type, r.desired, r.failed) for r in seen.job.replicas] == [
        ("Worker", None, 1)
    ]
    before = look(TFJOB, "tf", tfjob([condition("Running")]), [], [])
    assert changes(before, seen, "tfjob/tf") == [
        Change("tfjob/tf", "phase Running -> Failed: spec.tfReplicaSpecs: bad", Tone.BAD)
    ]


def test_only_the_jobs_own_pods_and_orphans_are_shown() -> None:
    def owned(name: str, kind: str, job: str) -> dict[str, Any]:
        obj = running(name)
        obj["metadata"]["ownerReferences"] = [
            {"kind": kind, "name": job, "uid": "u", "apiVersion": "v", "controller": True}
        ]
        return obj

    pods = [
        owned("tf-worker-0", "TFJob", "tf"),
        owned("tf-launcher", "TrainingJob", "tf"),  # a TrainingJob of the same name
        running("tf-worker-1"),  # an orphan the operator will adopt
    ]
    seen = look(TFJOB, "tf", tfjob([]), pods, [scaler("ScaleOut", "out")])
    assert list(seen.pods) == ["tf-worker-0", "tf-worker-1"]
    # TFJob is not elastic: no scalers, whatever they name.
    assert seen.scalers == {}


def test_replica_counts_and_restarts_are_changes() -> None:
    before = look(TFJOB, "tf", tfjob([condition("Running")]), [running("tf-worker-0")], [])
    grown = tfjob([condition("Running")])
    grown["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 3
    restarted = running("tf-worker-0")
    restarted["status"]["containerStatuses"][0]["restartCount"] = 2
    after = look(TFJOB, "tf", grown, [restarted], [])
    assert changes(before, after, "tfjob/tf") == [
        Change("tfjob/tf", "Worker replicas 2 -> 3"),
        Change("pod/tf-worker-0", "restarted (2 in all)", Tone.WARN),
    ]


def trainingjob(name: str = JOB) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "main", "image": "horovod"}]}}
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {
            "etReplicaSpecs": {
                "launcher": {"replicas": 1, "template": template},
                "worker": {"replicas": 2, "template": template},
            }
        },
        "status": {"phase": "Running"},
    }


def test_published_files_are_read_from_the_jobs_config_maps() -> None:
    config = {"metadata": {"name": "tj-config"}, "data": {"hostfile": "w-0:1\n"}}
    seen = snapshot(trainingjob(), [], [], config_maps={"tj-config": config})
    hostfile = seen.file("hostfile")
    assert hostfile is not None
    assert (hostfile.config_map, hostfile.path, hostfile.reader, hostfile.content) == (
        "tj-config",
        "/etc/edl/hostfile",
        "tj-launcher",
        "w-0:1\n",
    )
    # Not there yet: known, but without content; not asked for: not read at all.
    missing = snapshot(trainingjob(), [], [], config_maps={})
    assert missing.file("hostfile") is not None
    assert missing.file("hostfile").content is None  # type: ignore[union-attr]
    assert snapshot(trainingjob(), [], []).files == {}
    grown = {"metadata": {"name": "tj-config"}, "data": {"hostfile": "w-0:1\nw-2:1\n"}}
    after = snapshot(trainingjob(), [], [], config_maps={"tj-config": grown})
    assert changes(seen, after, SUBJECT) == [Change("configmap/tj-config", "hostfile +w-2:1")]
    assert changes(after, missing, SUBJECT) == [
        Change("configmap/tj-config", "hostfile removed", Tone.WARN)
    ]


def event(name: str, kind: str, about: str, reason: str, **more: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "involvedObject": {"kind": kind, "name": about},
        "reason": reason,
        "message": f"{reason} happened",
        "type": more.pop("type", "Normal"),
        **more,
    }


def test_events_about_the_job_and_its_objects_are_kept_and_narrated_once() -> None:
    pods = [running("tj-worker-0")]
    events = [
        event("e1", "TrainingJob", JOB, "Created", lastTimestamp="2026-01-01T00:00:01Z"),
        event("e2", "Pod", "tj-worker-0", "Started", lastTimestamp="2026-01-01T00:00:02Z"),
        event("e3", "Pod", "elsewhere", "Started", lastTimestamp="2026-01-01T00:00:03Z"),
        event("e4", "TFJob", JOB, "Created", lastTimestamp="2026-01-01T00:00:04Z"),
    ]
    seen = snapshot(trainingjob(), pods, [], events=events)
    assert list(seen.events) == ["e1", "e2"]
    assert snapshot(trainingjob(), pods, []).events == {}
    again = dict(events[1], count=3, lastTimestamp="2026-01-01T00:00:09Z")
    warning = event(
        "e5", "TrainingJob", JOB, "Failing", type="Warning", lastTimestamp="2026-01-01T00:00:10Z"
    )
    after = snapshot(trainingjob(), pods, [], events=[events[0], again, warning])
    assert changes(seen, after, SUBJECT) == [
        Change("pod/tj-worker-0", "Normal Started: Started happened (x3)"),
        Change(SUBJECT, "Warning Failing: Failing happened", Tone.WARN),
    ]
