import copy
from pathlib import Path
from typing import Any

import pytest

from etctl.common import CleanPodPolicy, RestartPolicy, RunPolicy, SchedulingPolicy, crd_manifest
from etctl.jobs.trainingjob import CUSTOM_RESOURCES
from etctl.jobs.trainingjob._api import (
    TRAININGJOB,
    TRAININGJOBS,
    JobRestartPolicy,
    LauncherAttachMode,
    TrainingJob,
    TrainingJobReplicaType,
    validate_trainingjob,
)
from etctl.testing import ClusterTarget
from tests.schema_support import (
    EXAMPLES,
    admitted,
    apply_defaults,
    conformance_problems,
    crd_schema,
    load_yaml,
    refused,
)

JOB_EXAMPLES = sorted((EXAMPLES / "trainingjob").glob("training-job*.yaml"))
SCHEMA = crd_schema(TRAININGJOB)
STATUS_DEFAULTS = {
    "conditions": [],
    "replicaStatuses": {},
    "restartCount": 0,
    "targetWorkers": [],
    "currentWorkers": [],
    "replicas": 0,
}


def with_defaults(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` plus every default the model (and the schema) adds to a TrainingJob."""
    out = copy.deepcopy(document)
    spec = out["spec"]
    for replica in spec["etReplicaSpecs"].values():
        replica.setdefault("replicas", 1)
        replica.setdefault("restartPolicy", "Never")
    spec.setdefault("cleanPodPolicy", "Running")
    spec.setdefault("launcherAttachMode", "ssh")
    spec.setdefault("restartPolicy", "Never")
    spec.setdefault("backoffLimit", 6)
    if "runPolicy" in spec:
        spec["runPolicy"].setdefault("suspend", False)
    return out


def container(name: str = "main") -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "image": "horovod:1"}]}}


def job(**worker: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "TrainingJob",
        "metadata": {"name": "elastic"},
        "spec": {
            "etReplicaSpecs": {
                "launcher": {"template": container("launcher")},
                "worker": {"template": container(), **worker},
            }
        },
    }


def test_examples_exist() -> None:
    assert [p.name for p in JOB_EXAMPLES] == ["training-job-run-policy.yaml", "training-job.yaml"]


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_examples_round_trip_modulo_defaults(path: Path) -> None:
    document = load_yaml(path)
    parsed = TrainingJob.model_validate(document)
    expected = with_defaults(document)
    expected["status"] = STATUS_DEFAULTS
    assert parsed.to_dict() == expected
    assert TrainingJob.model_validate(parsed.to_dict()) == parsed


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid_for_the_schema_and_the_controller(path: Path) -> None:
    document = load_yaml(path)
    assert conformance_problems(document, SCHEMA) == []
    assert validate_trainingjob(TrainingJob.model_validate(document)) == []


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_schema_defaults_equal_model_defaults(path: Path) -> None:
    document = load_yaml(path)
    server_side = apply_defaults(document, SCHEMA)
    assert server_side == with_defaults(document)
    model_side = TrainingJob.model_validate(document).to_dict()
    del model_side["status"]
    assert server_side == model_side


def test_et_operator_example_fields() -> None:
    parsed = TrainingJob.model_validate(load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml"))
    spec = parsed.spec
    worker = spec.et_replica_specs.worker
    assert worker is not None
    assert (worker.replicas, worker.min_replicas, worker.max_replicas) == (2, 1, 9)
    assert worker.bounds() == (1, 9)
    assert spec.launcher_attach_mode is LauncherAttachMode.SSH
    assert spec.restart_policy is JobRestartPolicy.NEVER
    assert list(parsed.replica_specs()) == [
        TrainingJobReplicaType.WORKER,
        TrainingJobReplicaType.LAUNCHER,
    ]
    assert parsed.run_policy() == RunPolicy(
        clean_pod_policy=CleanPodPolicy.RUNNING, backoff_limit=6
    )


def test_run_policy_extension_maps_onto_kubeflows_run_policy() -> None:
    document = load_yaml(EXAMPLES / "trainingjob" / "training-job-run-policy.yaml")
    parsed = TrainingJob.model_validate(document)
    assert parsed.run_policy() == RunPolicy(
        clean_pod_policy=CleanPodPolicy.ALL,
        backoff_limit=3,
        ttl_seconds_after_finished=3600,
        active_deadline_seconds=86400,
        scheduling_policy=SchedulingPolicy(
            min_available=3, queue="training", min_resources={"cpu": "4", "memory": "8Gi"}
        ),
    )
    assert parsed.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
    worker = parsed.spec.et_replica_specs.worker
    assert worker is not None
    assert worker.restart_policy is RestartPolicy.ON_FAILURE


def test_worker_bounds_default_to_one_and_no_maximum() -> None:
    worker = TrainingJob.model_validate(job(replicas=3)).spec.et_replica_specs.worker
    assert worker is not None
    assert worker.bounds() == (1, None)


def test_the_generic_controller_sees_never_restarting_replicas() -> None:
    document = job(replicas=2)
    document["spec"]["etReplicaSpecs"]["worker"]["restartPolicy"] = "OnFailure"
    document["spec"]["etReplicaSpecs"]["launcher"]["restartPolicy"] = "Always"
    parsed = TrainingJob.model_validate(document)
    specs = parsed.replica_specs()
    assert {rtype: spec.restart_policy for rtype, spec in specs.items()} == {
        TrainingJobReplicaType.WORKER: RestartPolicy.NEVER,
        TrainingJobReplicaType.LAUNCHER: RestartPolicy.NEVER,
    }
    worker = parsed.spec.et_replica_specs.worker
    assert worker is not None
    assert worker.restart_policy is RestartPolicy.ON_FAILURE
    assert specs[TrainingJobReplicaType.WORKER].replicas == 2


def test_status_round_trip() -> None:
    status = {
        "phase": "Scaling",
        "conditions": [{"type": "Scaling", "status": "True", "reason": "ScalingStart"}],
        "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 2, "failed": 1}},
        "currentScaler": "ScaleOut:default/elastic-training-scaleout",
        "restartCount": 1,
        "targetWorkers": ["elastic-worker-0", "elastic-worker-1", "elastic-worker-2"],
        "currentWorkers": ["elastic-worker-0", "elastic-worker-1"],
        "lastWorkerIndex": 2,
        "replicas": 3,
        "workerSelector": "training-job-name=elastic,training-job-role=worker",
        "startTime": "2026-01-01T00:00:00Z",
    }
    parsed = TrainingJob.model_validate({**job(), "status": status})
    dumped = parsed.to_dict()["status"]
    assert dumped["replicaStatuses"] == {
        "Launcher": {"active": 1, "succeeded": 0, "failed": 0},
        "Worker": {"active": 2, "succeeded": 0, "failed": 1},
    }
    del dumped["replicaStatuses"], status["replicaStatuses"]
    assert dumped == status


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (job(), []),
        (
            job(replicas=5, minReplicas=4, maxReplicas=2),
            [
                "spec.etReplicaSpecs.worker: minReplicas 4 is greater than maxReplicas 2; "
                "the job could never be scaled within them"
            ],
        ),
        # Outside the bounds is what /scale may write: clamped by the controller, not invalid.
        (job(replicas=1, minReplicas=2), []),
        (job(replicas=5, maxReplicas=4), []),
        (
            job(replicas=0, minReplicas=0),
            [
                "spec.etReplicaSpecs.worker.replicas: 0 is below 1; set at least 1",
                "spec.etReplicaSpecs.worker.minReplicas: 0 is below 1; set 1 or more",
            ],
        ),
    ],
)
def test_worker_validation(document: dict[str, Any], expected: list[str]) -> None:
    assert validate_trainingjob(TrainingJob.model_validate(document)) == expected


def test_launcher_validation() -> None:
    missing = job()
    del missing["spec"]["etReplicaSpecs"]["launcher"]
    assert validate_trainingjob(TrainingJob.model_validate(missing)) == [
        "spec.etReplicaSpecs.launcher: missing; a TrainingJob needs a launcher whose template "
        "runs the training command (horovodrun) against the workers"
    ]
    two = job()
    two["spec"]["etReplicaSpecs"]["launcher"]["replicas"] = 2
    assert validate_trainingjob(TrainingJob.model_validate(two)) == [
        "spec.etReplicaSpecs.launcher.replicas: 2 is above 1; set at most 1"
    ]
    no_worker = job()
    del no_worker["spec"]["etReplicaSpecs"]["worker"]
    assert validate_trainingjob(TrainingJob.model_validate(no_worker)) == [
        "spec.etReplicaSpecs.worker: missing; a TrainingJob needs a worker template"
    ]


def test_job_level_validation() -> None:
    document = job()
    document["metadata"]["name"] = "Elastic"
    document["spec"].update(
        slotsPerWorker=0, backoffLimit=-1, runPolicy={"activeDeadlineSeconds": 0}
    )
    problems = validate_trainingjob(TrainingJob.model_validate(document))
    assert problems[0].startswith("metadata.name: 'Elastic' is not a DNS-1035 label")
    assert problems[1:] == [
        "spec.slotsPerWorker: 0 is below 1; set 1 or more",
        "spec.backoffLimit: -1 is negative; set 0 or more",
        "spec.runPolicy.activeDeadlineSeconds: 0 is below 1; set at least 1 or unset it",
    ]


def test_long_names_are_checked_against_the_highest_worker_name() -> None:
    document = job(replicas=2, maxReplicas=100)
    document["metadata"]["name"] = "a" * 54
    (problem,) = validate_trainingjob(TrainingJob.model_validate(document))
    assert f"the child name '{'a' * 54}-worker-99' would exceed 63 characters" in problem


BAD_SPECS: list[tuple[Any, str]] = [
    (lambda s: s["etReplicaSpecs"].pop("launcher"), "etReplicaSpecs.launcher: Required value"),
    (
        lambda s: s["etReplicaSpecs"].update(launcher=None),
        "launcher in body must be of type object",
    ),
    (
        lambda s: s["etReplicaSpecs"]["launcher"].update(replicas=2),
        "should be less than or equal to 1",
    ),
    (
        lambda s: s["etReplicaSpecs"]["launcher"].pop("template"),
        "launcher.template: Required value",
    ),
    (
        lambda s: s["etReplicaSpecs"]["worker"].update(replicas=0),
        "should be greater than or equal to 1",
    ),
    (
        lambda s: s["etReplicaSpecs"]["worker"].update(template={"spec": {"containers": []}}),
        "should have at least 1 items",
    ),
    (
        lambda s: s.update(launcherAttachMode="rsh"),
        'Unsupported value: "rsh": supported values: "ssh", "kubexec"',
    ),
    (
        lambda s: s.update(restartPolicy="Always"),
        'Unsupported value: "Always": supported values: "Never", "OnFailure"',
    ),
    (lambda s: s.update(backoffLimit=-1), "should be greater than or equal to 0"),
    (lambda s: s.update(cleanPodPolicy="Some"), 'Unsupported value: "Some"'),
]
"""Changes to an example that the schema refuses, and (a part of) what it says."""


@pytest.mark.parametrize(("change", "problem"), BAD_SPECS)
def test_schema_rejects_bad_specs(change: Any, problem: str) -> None:
    document = load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml")
    change(document["spec"])
    problems = conformance_problems(document, SCHEMA)
    assert any(problem in found for found in problems), problems


@pytest.fixture
def etctl_target_crds() -> list[dict[str, Any]]:
    return [crd_manifest(TRAININGJOB)]


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
async def test_the_cluster_admits_each_example_with_the_schemas_defaults(
    etctl_target: ClusterTarget, path: Path
) -> None:
    document = load_yaml(path)
    stored = await admitted(etctl_target, TRAININGJOBS, document)
    assert stored["spec"] == with_defaults(document)["spec"]


@pytest.mark.parametrize("change", [change for change, _ in BAD_SPECS])
async def test_the_cluster_refuses_bad_specs(etctl_target: ClusterTarget, change: Any) -> None:
    document = load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml")
    change(document["spec"])
    refusal = await refused(etctl_target, TRAININGJOBS, document)
    assert "spec" in str(refusal)


def test_crd_description() -> None:
    manifest = crd_manifest(TRAININGJOB)
    names = manifest["spec"]["names"]
    assert (names["singular"], names["shortNames"], names["categories"]) == (
        "trainingjob",
        ["tj"],
        ["etctl"],
    )
    (version,) = manifest["spec"]["versions"]
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.etReplicaSpecs.worker.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.workerSelector",
    }
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["Phase"] == ".status.phase"
    assert columns["Workers"] == ".status.replicaStatuses.Worker.active"
    assert columns["Desired"] == ".spec.etReplicaSpecs.worker.replicas"
    assert TRAININGJOBS.api_version == "kai.alibabacloud.com/v1alpha1"
    assert [r.kind for r in CUSTOM_RESOURCES] == ["TrainingJob", "ScaleIn", "ScaleOut"]


def test_managed_by_hands_the_job_to_another_controller() -> None:
    document = load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml")
    assert TrainingJob.model_validate(document).run_policy().managed_by is None
    document["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}
    policy = TrainingJob.model_validate(document).run_policy()
    assert policy.managed_by == "kueue.x-k8s.io/multikueue"
    document["spec"]["runPolicy"] = {"managedBy": ""}
    assert TrainingJob.model_validate(document).run_policy().managed_by is None
