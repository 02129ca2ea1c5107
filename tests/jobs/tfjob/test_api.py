import copy
from pathlib import Path
from typing import Any

import pytest

from etctl.common import CleanPodPolicy, RestartPolicy, crd_manifest
from etctl.jobs.tfjob._api import (
    TFJOB,
    TFJOBS,
    SuccessPolicy,
    TFJob,
    TFReplicaType,
    validate_tfjob,
)
from etctl.testing import ClusterTarget
from tests.schema_support import (
    EXAMPLES,
    admitted,
    apply_defaults,
    as_created,
    conformance_problems,
    crd_schema,
    load_yaml,
    refused,
)

TF_EXAMPLES = sorted((EXAMPLES / "tfjob").glob("*.yaml"))
SCHEMA = crd_schema(TFJOB)


def with_defaults(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` plus every default the model (and the schema) adds to a TFJob."""
    out = copy.deepcopy(document)
    spec = out["spec"]
    for replica in spec["tfReplicaSpecs"].values():
        replica.setdefault("replicas", 1)
        replica.setdefault("restartPolicy", "Never")
    run_policy = spec.setdefault("runPolicy", {})
    run_policy.setdefault("cleanPodPolicy", "None")
    run_policy.setdefault("suspend", False)
    spec.setdefault("successPolicy", "")
    spec.setdefault("enableDynamicWorker", False)
    return out


def tfjob(**replicas: dict[str, Any]) -> TFJob:
    return TFJob.model_validate({"metadata": {"name": "job"}, "spec": {"tfReplicaSpecs": replicas}})


def replica(count: int = 1, *, container: str = "tensorflow") -> dict[str, Any]:
    return {
        "replicas": count,
        "template": {"spec": {"containers": [{"name": container, "image": "tf:2"}]}},
    }


def test_examples_exist() -> None:
    assert len(TF_EXAMPLES) >= 5


@pytest.mark.parametrize("path", TF_EXAMPLES, ids=lambda p: p.name)
def test_examples_round_trip_modulo_defaults(path: Path) -> None:
    document = load_yaml(path)
    job = TFJob.model_validate(document)
    expected = with_defaults(document)
    expected["status"] = {"conditions": [], "replicaStatuses": {}, "restartCount": 0}
    assert job.to_dict() == expected
    assert TFJob.model_validate(job.to_dict()) == job


@pytest.mark.parametrize("path", TF_EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid_for_the_schema_and_the_controller(path: Path) -> None:
    document = load_yaml(path)
    assert conformance_problems(document, SCHEMA) == []
    assert validate_tfjob(TFJob.model_validate(as_created(document))) == []


@pytest.mark.parametrize("path", TF_EXAMPLES, ids=lambda p: p.name)
def test_schema_defaults_equal_model_defaults(path: Path) -> None:
    document = load_yaml(path)
    server_side = apply_defaults(document, SCHEMA)
    assert server_side == with_defaults(document)
    model_side = TFJob.model_validate(document).to_dict()
    del model_side["status"]
    assert server_side == model_side


def test_parsed_fields_and_replica_order() -> None:
    manifest = load_yaml(EXAMPLES / "tfjob" / "estimator-chief-ps-evaluator.yaml")
    manifest["metadata"]["namespace"] = "kubeflow"  # as kubectl apply -n kubeflow sets it
    job = TFJob.model_validate(manifest)
    assert list(job.replica_specs()) == ["PS", "Worker", "Chief", "Evaluator"]
    assert job.spec.success_policy is SuccessPolicy.ALL_WORKERS
    assert job.run_policy().clean_pod_policy is CleanPodPolicy.RUNNING
    assert job.run_policy().backoff_limit == 3
    worker = job.spec.tf_replica_specs[TFReplicaType.WORKER]
    assert worker.restart_policy is RestartPolicy.EXIT_CODE
    assert worker.replicas == 4
    assert job.key == "kubeflow/estimator-train-and-evaluate"


def test_replica_type_keys_are_case_insensitive() -> None:
    job = tfjob(ps=replica(), worker=replica(2), CHIEF=replica())
    assert list(job.spec.tf_replica_specs) == ["PS", "Worker", "Chief"]
    assert all(type(key) is str for key in job.spec.tf_replica_specs)
    assert validate_tfjob(job) == []


def test_unknown_replica_types_are_kept_for_validation_to_report() -> None:
    job = tfjob(Worker=replica(), Launcher=replica())
    assert list(job.replica_specs()) == ["Worker", "Launcher"]
    assert validate_tfjob(job) == [
        "spec.tfReplicaSpecs.Launcher: unknown replica type; the types are "
        "PS, Worker, Chief, Master, Evaluator"
    ]


def test_validation_reports_missing_tensorflow_container() -> None:
    job = tfjob(Worker=replica(2, container="trainer"))
    assert validate_tfjob(job) == [
        'spec.tfReplicaSpecs.Worker.template: no container named "tensorflow"; the TFJob '
        "controller injects TF_CONFIG into that container"
    ]


def test_validation_reports_chief_and_master_rules() -> None:
    job = tfjob(Chief=replica(2), Master=replica(), Worker=replica(3))
    assert validate_tfjob(job) == [
        "spec.tfReplicaSpecs.Chief.replicas: 2; a TFJob has at most one Chief, "
        "the replica that coordinates the others",
        "spec.tfReplicaSpecs: both Chief and Master are set; they are the same role, keep only one",
    ]


def test_validation_reports_negative_replicas_and_empty_specs() -> None:
    assert validate_tfjob(tfjob(Worker=replica(-1))) == [
        "spec.tfReplicaSpecs.Worker.replicas: -1 is below 0; set 0 or more"
    ]
    assert validate_tfjob(tfjob()) == [
        "spec.tfReplicaSpecs: no replica specs; set at least one of "
        "PS, Worker, Chief, Master, Evaluator"
    ]


def test_validation_reports_names_pods_cannot_be_derived_from() -> None:
    job = tfjob(Worker=replica())
    bad = job.model_copy(update={"metadata": job.metadata.model_copy(update={"name": "Tf.Job"})})
    (problem,) = validate_tfjob(bad)
    assert problem.startswith("metadata.name: 'Tf.Job' is not a DNS-1035 label")
    long_name = "a" * 51
    evaluators = TFJob.model_validate(
        {"metadata": {"name": long_name}, "spec": {"tfReplicaSpecs": {"Evaluator": replica(12)}}}
    )
    (problem,) = validate_tfjob(evaluators)
    assert f"the child name '{long_name}-evaluator-11' would exceed 63 characters" in problem


def test_validation_reports_run_policy_problems() -> None:
    document = {
        "metadata": {"name": "job"},
        "spec": {"tfReplicaSpecs": {"Worker": replica()}, "runPolicy": {"backoffLimit": -1}},
    }
    assert validate_tfjob(TFJob.model_validate(document)) == [
        "spec.runPolicy.backoffLimit: -1 is below 0; set at least 0 or unset it"
    ]


BAD_SPECS: list[tuple[Any, str]] = [
    (
        lambda s: s["tfReplicaSpecs"]["Worker"].update(replicas=-1),
        "should be greater than or equal to 0",
    ),
    (
        lambda s: s["tfReplicaSpecs"]["Worker"].update(restartPolicy="Sometimes"),
        "Unsupported value",
    ),
    (
        lambda s: s["tfReplicaSpecs"]["Worker"].update(template={"spec": {}}),
        "containers: Required value",
    ),
    (
        lambda s: s["tfReplicaSpecs"].update(Chief=replica(2)),
        "Chief.replicas in body should be less than or equal to 1",
    ),
    (lambda s: s["tfReplicaSpecs"].clear(), "should have at least 1 properties"),
    (lambda s: s.pop("tfReplicaSpecs"), "spec.tfReplicaSpecs: Required value"),
    (lambda s: s.update(successPolicy="Whenever"), 'successPolicy: Unsupported value: "Whenever"'),
    (
        lambda s: s.update(runPolicy={"cleanPodPolicy": "Some"}),
        'cleanPodPolicy: Unsupported value: "Some"',
    ),
    (
        lambda s: s.update(runPolicy={"ttlSecondsAfterFinished": -5}),
        "should be greater than or equal to 0",
    ),
]
"""Changes to an example that the schema refuses, and (a part of) what it says."""


@pytest.mark.parametrize(("change", "problem"), BAD_SPECS)
def test_schema_rejects_bad_specs(change: Any, problem: str) -> None:
    document = load_yaml(EXAMPLES / "tfjob" / "dist-mnist.yaml")
    change(document["spec"])
    problems = conformance_problems(document, SCHEMA)
    assert any(problem in found for found in problems), problems


@pytest.fixture
def etctl_target_crds() -> list[dict[str, Any]]:
    return [crd_manifest(TFJOB)]


@pytest.mark.parametrize("path", TF_EXAMPLES, ids=lambda p: p.name)
async def test_the_cluster_admits_each_example_with_the_schemas_defaults(
    etctl_target: ClusterTarget, path: Path
) -> None:
    document = load_yaml(path)
    stored = await admitted(etctl_target, TFJOBS, document)
    assert stored["spec"] == with_defaults(document)["spec"]


@pytest.mark.parametrize("change", [change for change, _ in BAD_SPECS])
async def test_the_cluster_refuses_bad_specs(etctl_target: ClusterTarget, change: Any) -> None:
    document = load_yaml(EXAMPLES / "tfjob" / "dist-mnist.yaml")
    change(document["spec"])
    refusal = await refused(etctl_target, TFJOBS, document)
    assert "spec" in str(refusal)


def test_crd_description() -> None:
    names = crd_manifest(TFJOB)["spec"]["names"]
    assert names["plural"] == "tfjobs"
    assert names["singular"] == "tfjob"
    assert names["shortNames"] == ["tfj"]
    assert names["categories"] == ["kubeflow", "etctl"]
    (version,) = crd_manifest(TFJOB)["spec"]["versions"]
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["State"] == ".status.conditions[-1:].type"
    assert columns["Age"] == ".metadata.creationTimestamp"
    assert version["subresources"] == {"status": {}}
    assert TFJOBS.path("ns", "x") == "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/x"
