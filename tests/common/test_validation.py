from typing import Any

import pytest
from pydantic import ValidationError

from etctl.common import ReplicaSpec, RunPolicy, SchedulingPolicy
from etctl.common._validation import (
    is_dns1035_label,
    is_dns1123_label,
    parse_problems,
    validate_name,
    validate_pod_template,
    validate_replica_spec,
    validate_run_policy,
    validate_scaling_bounds,
)
from etctl.jobs.tfjob._api import TFJob


def template(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": list(containers)}}


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("a", True),
        ("dist-mnist", True),
        ("a1-b2", True),
        ("1abc", False),
        ("abc-", False),
        ("Abc", False),
        ("a_b", False),
        ("", False),
        ("a" * 63, True),
        ("a" * 64, False),
    ],
)
def test_dns1035_labels(name: str, ok: bool) -> None:
    assert is_dns1035_label(name) is ok


def test_dns1123_labels_may_start_with_a_digit() -> None:
    assert is_dns1123_label("1abc")
    assert not is_dns1123_label("a.b")


def test_parse_problems_name_json_fields() -> None:
    with pytest.raises(ValidationError) as caught:
        TFJob.model_validate(
            {
                "spec": {
                    "tfReplicaSpecs": {
                        "Worker": {"replicas": "many", "template": template({"name": "t"})},
                        "PS": {"template": {"spec": {}}},
                    }
                }
            }
        )
    assert parse_problems(caught.value) == [
        "spec.tfReplicaSpecs.Worker.replicas: Input should be a valid integer, "
        "unable to parse string as an integer",
        "spec.tfReplicaSpecs.PS.template: spec.containers: a pod template needs at least one "
        "container",
    ]


def test_parse_problems_index_lists() -> None:
    with pytest.raises(ValidationError) as caught:
        TFJob.model_validate({"status": {"conditions": [{"type": "Created", "status": "Yes"}]}})
    (problem,) = parse_problems(caught.value)
    assert problem.startswith("status.conditions[0].status: Input should be 'True'")


def test_validate_name() -> None:
    assert validate_name("job") == []
    (bad,) = validate_name("My_Job")
    assert bad.startswith("metadata.name: 'My_Job' is not a DNS-1035 label")
    assert bad.endswith("pod and service names are derived from it")
    (long,) = validate_name("a" * 55, longest_suffix="-worker-10")
    assert long.startswith(f"metadata.name: '{'a' * 55}' is too long: the child name")
    assert long.endswith("shorten the name to at most 53 characters")


def test_validate_pod_template() -> None:
    good = template({"name": "main", "image": "busybox"}, {"name": "side", "image": "x"})
    assert validate_pod_template(good, path="t") == []
    problems = validate_pod_template(
        template({"name": "Main", "image": ""}, {"name": "Main"}), path="t"
    )
    assert problems == [
        "t.spec.containers[0].name: 'Main' is not a DNS-1123 label (lower-case letters, digits "
        "and '-', at most 63 characters); the API server rejects such containers",
        "t.spec.containers[0].image: missing; every container needs an image to run",
        "t.spec.containers[1].name: 'Main' is not a DNS-1123 label (lower-case letters, digits "
        "and '-', at most 63 characters); the API server rejects such containers",
        "t.spec.containers[1].name: 'Main' is used by another container of the pod",
        "t.spec.containers[1].image: missing; every container needs an image to run",
    ]


def test_validate_replica_spec_bounds() -> None:
    good = template({"name": "main", "image": "busybox"})
    spec = ReplicaSpec(replicas=-1, template=good)
    assert validate_replica_spec(spec, path="p") == ["p.replicas: -1 is below 0; set 0 or more"]
    assert validate_replica_spec(spec, path="p", minimum=1) == [
        "p.replicas: -1 is below 1; set at least 1"
    ]
    two = ReplicaSpec(replicas=2, template=good)
    assert validate_replica_spec(two, path="p", maximum=1) == [
        "p.replicas: 2 is above 1; set at most 1"
    ]


def test_validate_run_policy() -> None:
    assert validate_run_policy(RunPolicy()) == []
    policy = RunPolicy(
        ttl_seconds_after_finished=-1,
        active_deadline_seconds=0,
        backoff_limit=-2,
        scheduling_policy=SchedulingPolicy(
            min_available=0,
            schedule_timeout_seconds=-5,
            min_resources={"cpu": "lots", "memory": "2Gi", "nvidia.com/gpu": 1},
        ),
    )
    assert validate_run_policy(policy) == [
        "spec.runPolicy.ttlSecondsAfterFinished: -1 is below 0; set at least 0 or unset it",
        "spec.runPolicy.activeDeadlineSeconds: 0 is below 1; set at least 1 or unset it",
        "spec.runPolicy.backoffLimit: -2 is below 0; set at least 0 or unset it",
        "spec.runPolicy.schedulingPolicy.minAvailable: 0 is below 1; a gang needs at least one "
        "pod, or unset it to use the sum of all replicas",
        "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: -5 is negative",
        "spec.runPolicy.schedulingPolicy.minResources.cpu: 'lots' is not a quantity "
        "(for example 4, 500m or 2Gi)",
    ]


def test_validate_scaling_bounds() -> None:
    assert validate_scaling_bounds(None, None, path="spec.p") == []
    assert validate_scaling_bounds(2, 6, path="spec.p") == []
    assert validate_scaling_bounds(0, 6, path="spec.p") == [
        "spec.p.minReplicas: 0 is below 1; set 1 or more"
    ]
    assert validate_scaling_bounds(4, 3, path="spec.p") == [
        "spec.p: minReplicas 4 is greater than maxReplicas 3; "
        "the job could never be scaled within them"
    ]
