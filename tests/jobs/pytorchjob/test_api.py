"""The PyTorchJob API: training-operator's manifests parse, round-trip and pass the CRD's rules."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from etctl.common import RestartPolicy, crd_manifest
from etctl.errors import Invalid
from etctl.jobs.pytorchjob import (
    PYTORCHJOB,
    PYTORCHJOBS,
    PyTorchJob,
    PyTorchReplicaType,
    RDZVBackend,
    validate_pytorchjob,
    with_defaults,
)
from etctl.runtime import Client
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

# training-operator's PyTorchJobs (the directory's ScaleOut, etctl's own, resizes one of them).
PT_EXAMPLES = sorted(
    path
    for path in (EXAMPLES / "pytorchjob").glob("*.yaml")
    if load_yaml(path)["kind"] == "PyTorchJob"
)
ELASTIC = EXAMPLES / "pytorchjob" / "elastic-imagenet.yaml"
SCHEMA = crd_schema(PYTORCHJOB)


def schema_defaults(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` plus every default the model (and the schema) adds to a PyTorchJob."""
    out = copy.deepcopy(document)
    spec = out["spec"]
    for replica in spec["pytorchReplicaSpecs"].values():
        replica.setdefault("replicas", 1)
        replica.setdefault("restartPolicy", "OnFailure")
    run_policy = spec.setdefault("runPolicy", {})
    run_policy.setdefault("cleanPodPolicy", "None")
    run_policy.setdefault("suspend", False)
    return out


def test_every_training_operator_example_is_here_with_its_attribution() -> None:
    names = {p.name for p in PT_EXAMPLES}
    assert {"simple.yaml", "elastic-echo.yaml", "elastic-imagenet.yaml"} <= names
    assert len(names) >= 9
    for path in PT_EXAMPLES:
        head = path.read_text().splitlines()[:2]
        assert head[0].startswith("# From kubeflow/training-operator v1.9.0, examples/pytorch/")
        assert "Apache License, Version 2.0" in head[1]


@pytest.mark.parametrize("path", PT_EXAMPLES, ids=lambda p: p.name)
def test_examples_round_trip_modulo_schema_defaults(path: Path) -> None:
    document = load_yaml(path)
    job = PyTorchJob.model_validate(document)
    dumped = job.to_dict()
    status = dumped.pop("status")
    assert status["conditions"] == []
    assert status["targetWorkers"] == []
    assert dumped == schema_defaults(document)
    assert PyTorchJob.model_validate(job.to_dict()) == job


@pytest.mark.parametrize("path", PT_EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid_for_the_schema_and_the_controller(path: Path) -> None:
    document = load_yaml(path)
    assert conformance_problems(document, SCHEMA) == []
    job = with_defaults(PyTorchJob.model_validate(as_created(document)))
    assert validate_pytorchjob(job) == []


@pytest.mark.parametrize("path", PT_EXAMPLES, ids=lambda p: p.name)
def test_schema_defaults_equal_model_defaults(path: Path) -> None:
    document = load_yaml(path)
    from_schema = apply_defaults(document, SCHEMA)
    from_model = PyTorchJob.model_validate(document).to_dict()
    assert from_schema["spec"] == from_model["spec"]


def test_the_elastic_policy_parses_with_its_metrics() -> None:
    job = PyTorchJob.model_validate(load_yaml(ELASTIC))
    policy = job.spec.elastic_policy
    assert policy is not None
    assert (policy.min_replicas, policy.max_replicas, policy.max_restarts) == (1, 3, 100)
    assert policy.rdzv_backend is RDZVBackend.C10D
    (metric,) = policy.metrics or []
    assert metric.to_dict() == {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
    assert job.elastic
    assert list(job.replica_specs()) == ["Worker"]


def test_replica_types_are_case_insensitive_and_ordered_master_first() -> None:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "t"}]}}
    job = PyTorchJob.model_validate(
        {"spec": {"pytorchReplicaSpecs": {"worker": {"template": template},
                                          "MASTER": {"template": template}}}}
    )  # fmt: skip
    assert list(job.replica_specs()) == ["Master", "Worker"]
    worker = job.spec.replicas(PyTorchReplicaType.WORKER)
    assert worker is not None
    assert (worker.replicas, worker.restart_policy) == (1, RestartPolicy.ON_FAILURE)


def test_managed_by_training_operator_reads_as_this_operators() -> None:
    document = load_yaml(ELASTIC)
    document["spec"]["runPolicy"] = {"managedBy": "kubeflow.org/training-operator"}
    assert PyTorchJob.model_validate(document).run_policy().managed_by is None
    document["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}
    assert PyTorchJob.model_validate(document).run_policy().managed_by == (
        "kueue.x-k8s.io/multikueue"
    )


def elastic(**policy: Any) -> Any:
    return lambda d: d["spec"]["elasticPolicy"].update(policy)


BAD_SPECS: list[tuple[Any, str]] = [
    (lambda d: d["spec"]["pytorchReplicaSpecs"].pop("Worker"), "needs a Worker replica spec"),
    (elastic(minReplicas=3, maxReplicas=2), "minReplicas must not be above maxReplicas"),
    (elastic(rdzvBackend="zookeeper"), "rdzvBackend"),
    (elastic(rdzvBackend="etcd"), "set rdzvHost"),
    (elastic(nProcPerNode=0), "nProcPerNode"),
    (lambda d: d["spec"].update(nprocPerNode="0"), "nprocPerNode"),
    (elastic(rdzvConf=[{"key": "join_timeout", "value": ""}]), "rdzvConf"),
    (elastic(rdzvConf=[{"key": "a=b", "value": "1"}]), "rdzvConf"),
    (elastic(rdzvPort=70000), "rdzvPort"),
    (elastic(metrics=[{"type": "Magic"}]), "metrics"),
    (
        lambda d: d["spec"]["pytorchReplicaSpecs"].update(
            Master={**d["spec"]["pytorchReplicaSpecs"]["Worker"], "replicas": 2}
        ),
        "Master.replicas",
    ),
    (lambda d: d["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=0), "replicas"),
    (lambda d: d["metadata"].update(name="n" * 55), "at most 54 characters"),
]
"""Changes to the elastic imagenet example that the cluster refuses, and what it says."""


@pytest.fixture
def etctl_target_crds() -> list[dict[str, Any]]:
    return [crd_manifest(PYTORCHJOB)]


@pytest.mark.parametrize("path", PT_EXAMPLES, ids=lambda p: p.name)
async def test_the_cluster_admits_each_example_with_the_schemas_defaults(
    etctl_target: ClusterTarget, path: Path
) -> None:
    document = load_yaml(path)
    stored = await admitted(etctl_target, PYTORCHJOBS, document)
    assert stored["spec"] == schema_defaults(document)["spec"]


@pytest.mark.parametrize(("change", "problem"), BAD_SPECS)
async def test_the_cluster_refuses_bad_specs(
    etctl_target: ClusterTarget, change: Any, problem: str
) -> None:
    document = load_yaml(ELASTIC)
    change(document)
    refusal = await refused(etctl_target, PYTORCHJOBS, document)
    assert problem in str(refusal)


async def test_max_replicas_may_not_be_lowered_below_the_workers_but_scale_may_exceed_it(
    etctl_target: ClusterTarget,
) -> None:
    stored = await admitted(etctl_target, PYTORCHJOBS, load_yaml(ELASTIC))
    name, namespace = stored["metadata"]["name"], etctl_target.namespace
    async with await Client.from_kubeconfig(etctl_target.kubeconfig) as client:
        lowered = {"spec": {"elasticPolicy": {"maxReplicas": 1}}}
        with pytest.raises(Invalid, match="maxReplicas may not be set below the Worker"):
            await client.patch(PYTORCHJOBS, name, lowered, namespace=namespace)
        scale = {"spec": {"replicas": 5}}
        scaled = await client.patch(
            PYTORCHJOBS, name, scale, namespace=namespace, subresource="scale"
        )
        assert scaled["spec"]["replicas"] == 5


async def test_a_static_jobs_worker_replicas_may_not_change_so_kubectl_scale_is_refused(
    etctl_target: ClusterTarget,
) -> None:
    stored = await admitted(
        etctl_target, PYTORCHJOBS, load_yaml(EXAMPLES / "pytorchjob" / "simple.yaml")
    )
    name, namespace = stored["metadata"]["name"], etctl_target.namespace
    async with await Client.from_kubeconfig(etctl_target.kubeconfig) as client:
        scale = {"spec": {"replicas": 3}}
        with pytest.raises(Invalid, match="without an elasticPolicy keeps its Worker replicas"):
            await client.patch(PYTORCHJOBS, name, scale, namespace=namespace, subresource="scale")
        # Nor does adding an elasticPolicy make it elastic: its running pods' world is fixed.
        elastic = {"spec": {"elasticPolicy": {"maxReplicas": 3}}}
        with pytest.raises(Invalid, match="elasticPolicy may not be added or removed"):
            await client.patch(PYTORCHJOBS, name, elastic, namespace=namespace)


def test_crd_description() -> None:
    manifest = crd_manifest(PYTORCHJOB)
    names = manifest["spec"]["names"]
    assert (names["plural"], names["singular"], names["kind"]) == (
        "pytorchjobs",
        "pytorchjob",
        "PyTorchJob",
    )
    assert names["shortNames"] == ["ptj"]
    (version,) = manifest["spec"]["versions"]
    assert version["name"] == "v1"
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.pytorchReplicaSpecs.Worker.replicas",
        "statusReplicasPath": ".status.replicaStatuses.Worker.active",
        "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
    }
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["State", "Workers", "Min", "Max", "Age", "Desired", "Rendezvous", "Reason"]
    assert PYTORCHJOBS.path("ns", "x") == "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/x"
