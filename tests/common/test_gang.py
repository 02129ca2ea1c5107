"""Gang scheduling: PodGroup contents, minResources, drift and admission (pure parts)."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.common import RunPolicy, SchedulingPolicy
from etctl.common import _gang as gang
from etctl.errors import ConfigError

VOLCANO = gang.scheduler_for("volcano")
PLUGINS = gang.scheduler_for("scheduler-plugins")
OWNER = {
    "apiVersion": "example.com/v1",
    "kind": "Sweep",
    "name": "j",
    "uid": "u",
    "controller": True,
}
JOB = {
    "metadata": {
        "name": "j",
        "namespace": "ns",
        "annotations": {"team": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
    }
}


def template(cpu: str, memory: str | None = None, *, priority: str = "") -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu}}
    if memory:
        resources["limits"] = {"memory": memory}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": resources}]}
    if priority:
        spec["priorityClassName"] = priority
    return {"spec": spec}


MEMBERS = [
    gang.GangMember("Worker", template("1", "1Gi"), 3),
    gang.GangMember("PS", template("500m", priority="high"), 2),
]


def test_scheduler_lookup() -> None:
    assert gang.scheduler_for("") is None
    assert VOLCANO is not None
    assert VOLCANO.holds_creation
    with pytest.raises(ConfigError, match="unknown gang scheduler"):
        gang.scheduler_for("kube-batch")


def test_min_member_defaults_to_every_pod() -> None:
    assert gang.min_member(RunPolicy(), MEMBERS) == 5
    policy = RunPolicy(scheduling_policy=SchedulingPolicy(min_available=2))
    assert gang.min_member(policy, MEMBERS) == 2


def test_min_resources_counts_the_first_pods_by_priority() -> None:
    # PS (priority 1000) comes first: 2 x 500m, then one worker: 1 cpu + 1Gi (limit only).
    resources = gang.min_resources(RunPolicy(), MEMBERS, minimum=3, priorities={"high": 1000})
    assert resources == {"cpu": "2", "memory": "1Gi"}
    # Without priorities the job's order holds: three workers.
    assert gang.min_resources(RunPolicy(), MEMBERS, minimum=3, priorities={}) == {
        "cpu": "3",
        "memory": "3Gi",
    }
    explicit = RunPolicy(scheduling_policy=SchedulingPolicy(min_resources={"cpu": "1500m"}))
    assert gang.min_resources(explicit, MEMBERS, minimum=3, priorities={}) == {"cpu": "1500m"}


def test_bad_quantities_are_config_errors() -> None:
    members = [gang.GangMember("Worker", template("lots"), 1)]
    with pytest.raises(ConfigError, match="gang scheduling"):
        gang.min_resources(RunPolicy(), members, minimum=1, priorities={})


def test_volcano_podgroup() -> None:
    assert VOLCANO is not None
    policy = RunPolicy(
        scheduling_policy=SchedulingPolicy(priority_class="high", schedule_timeout_seconds=30)
    )
    group = gang.build_podgroup(
        VOLCANO, job=JOB, owner_ref=OWNER, policy=policy, minimum=3, resources={"cpu": "2"}
    )
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["metadata"] == {
        "name": "j",
        "namespace": "ns",
        "ownerReferences": [OWNER],
        "annotations": {"team": "a"},
    }
    assert group["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "2"},
        "queue": "default",
        "priorityClassName": "high",
    }


def test_scheduler_plugins_podgroup() -> None:
    assert PLUGINS is not None
    policy = RunPolicy(scheduling_policy=SchedulingPolicy(queue="q", schedule_timeout_seconds=30))
    group = gang.build_podgroup(
        PLUGINS, job=JOB, owner_ref=OWNER, policy=policy, minimum=2, resources={}
    )
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 30}


def test_podgroup_patch_compares_only_our_fields_and_quantities_by_value() -> None:
    desired = {"spec": {"minMember": 3, "minResources": {"cpu": "1"}, "queue": "default"}}
    live = {"spec": {"minMember": 3, "minResources": {"cpu": "1000m"}, "queue": "team", "x": 1}}
    assert gang.podgroup_patch(live, desired, keep_queue=True) is None
    assert gang.podgroup_patch(live, desired, keep_queue=False) == {"spec": {"queue": "default"}}
    drifted = {"spec": {"minMember": 1, "minResources": {"cpu": "2"}, "queue": "default"}}
    assert gang.podgroup_patch(drifted, desired, keep_queue=True) == {
        "spec": {"minMember": 3, "minResources": {"cpu": "1"}}
    }


def test_admission() -> None:
    assert VOLCANO is not None
    assert PLUGINS is not None
    assert not gang.is_admitted(VOLCANO, None)
    assert not gang.is_admitted(VOLCANO, {"status": {}})
    assert not gang.is_admitted(VOLCANO, {"status": {"phase": "Pending"}})
    assert gang.is_admitted(VOLCANO, {"status": {"phase": "Inqueue"}})
    assert gang.is_admitted(PLUGINS, None)


def test_decorate_pod() -> None:
    assert VOLCANO is not None
    assert PLUGINS is not None
    pod: dict[str, Any] = {"metadata": {}, "spec": {}}
    assert gang.decorate_pod(VOLCANO, pod, job_name="j", replica_type="Worker")
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "j",
        "volcano.sh/task-spec": "Worker",
    }
    other: dict[str, Any] = {"metadata": {}, "spec": {"schedulerName": "mine"}}
    assert not gang.decorate_pod(PLUGINS, other, job_name="j", replica_type="Worker")
    assert other["spec"]["schedulerName"] == "mine"
    assert other["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "j"}
