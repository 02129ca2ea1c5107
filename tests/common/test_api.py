from typing import Annotated, Any

import pytest
from pydantic import ValidationError

from etctl.common._api import (
    CleanPodPolicy,
    ConditionStatus,
    JobCondition,
    JobStatus,
    KubeModel,
    ReplicaSpec,
    ReplicaStatus,
    ReplicatedJob,
    RestartPolicy,
    RunPolicy,
    SchedulingPolicy,
    canonical_keys,
    pod_containers,
)
from etctl.jobs.tfjob._api import TFJob
from etctl.jobs.trainingjob._api import TrainingJob

TEMPLATE: dict[str, Any] = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def test_replica_spec_defaults_and_json_names() -> None:
    spec = ReplicaSpec.model_validate({"template": TEMPLATE})
    assert spec.replicas == 1
    assert spec.restart_policy is RestartPolicy.NEVER
    assert spec.to_dict() == {"replicas": 1, "template": TEMPLATE, "restartPolicy": "Never"}


def test_replica_spec_parses_negative_replicas_for_validation_to_report() -> None:
    assert ReplicaSpec.model_validate({"replicas": -1, "template": TEMPLATE}).replicas == -1


def test_unknown_restart_policy_is_a_parse_error() -> None:
    with pytest.raises(ValidationError) as caught:
        ReplicaSpec.model_validate({"template": TEMPLATE, "restartPolicy": "Sometimes"})
    assert caught.value.errors()[0]["loc"] == ("restartPolicy",)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ([], "a pod template must be a mapping"),
        ({}, "spec: a pod template needs a spec"),
        ({"spec": {"containers": []}}, "spec.containers: a pod template needs at least one"),
        ({"spec": {"containers": "main"}}, "spec.containers: a pod template needs at least one"),
        ({"spec": {"containers": ["main"]}}, "spec.containers[0]: a container must be a mapping"),
        ({"spec": {"containers": [{"image": "x"}]}}, "spec.containers[0].name: every container"),
    ],
)
def test_pod_template_shape_is_checked(template: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ReplicaSpec.model_validate({"template": template})
    error = caught.value.errors()[0]
    assert error["loc"] == ("template",)
    assert error["msg"].startswith(message)


def test_pod_template_is_kept_as_a_private_copy() -> None:
    source: dict[str, Any] = {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "main", "env": [{"name": "X", "value": "1"}]}]},
    }
    spec = ReplicaSpec.model_validate({"template": source})
    assert spec.template == source
    spec.template["spec"]["containers"][0]["env"].append({"name": "Y"})
    assert source["spec"]["containers"][0]["env"] == [{"name": "X", "value": "1"}]
    assert [c["name"] for c in pod_containers(spec.template)] == ["main"]
    assert pod_containers({"spec": "nonsense"}) == []


def test_run_policy_defaults_are_kubeflows() -> None:
    policy = RunPolicy()
    assert policy.clean_pod_policy is CleanPodPolicy.NONE
    assert policy.suspend is False
    assert policy.to_dict() == {"cleanPodPolicy": "None", "suspend": False}
    full = RunPolicy.model_validate(
        {
            "cleanPodPolicy": "All",
            "ttlSecondsAfterFinished": 60,
            "activeDeadlineSeconds": 3600,
            "backoffLimit": 3,
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "q",
                "minResources": {"cpu": "500m", "nvidia.com/gpu": 2},
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 30,
            },
            "suspend": True,
        }
    )
    assert full.scheduling_policy == SchedulingPolicy(
        min_available=3,
        queue="q",
        min_resources={"cpu": "500m", "nvidia.com/gpu": 2},
        priority_class="high",
        schedule_timeout_seconds=30,
    )
    assert RunPolicy.model_validate(full.to_dict()) == full


def test_job_status_round_trip() -> None:
    raw = {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "TFJobCreated",
                "message": "TFJob default/x is created.",
                "lastUpdateTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {"type": "Running", "status": "False"},
        ],
        "replicaStatuses": {"Worker": {"active": 2, "succeeded": 0, "failed": 1}},
        "startTime": "2026-01-01T00:00:01Z",
        "restartCount": 2,
    }
    status = JobStatus.model_validate(raw)
    assert status.conditions[1] == JobCondition(type="Running", status=ConditionStatus.FALSE)
    assert status.replica_statuses["Worker"] == ReplicaStatus(active=2, failed=1)
    assert status.to_dict() == raw


def test_canonical_keys_matches_known_keys_case_insensitively() -> None:
    class Specs(KubeModel):
        specs: Annotated[dict[str, int], canonical_keys(["PS", "Worker"])]

    parsed = Specs.model_validate({"specs": {"ps": 1, "WORKER": 2, "Other": 3}})
    assert parsed.specs == {"PS": 1, "Worker": 2, "Other": 3}
    with pytest.raises(ValidationError, match="both name 'Worker'"):
        Specs.model_validate({"specs": {"worker": 1, "Worker": 2}})


def test_job_kinds_satisfy_the_replicated_job_protocol() -> None:
    jobs: list[ReplicatedJob] = [TFJob(), TrainingJob()]
    for job in jobs:
        assert dict(job.replica_specs()) == {}
        assert isinstance(job.run_policy(), RunPolicy)
        assert job.status.conditions == []
