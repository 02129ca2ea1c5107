"""The MPIJob API: both versions' manifests, one schema, the version's defaults, the CRD."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from etctl.common import CleanPodPolicy, RestartPolicy, crd_manifest
from etctl.jobs.mpijob import MPIJOB, MPIJOBS, MPIJob, MPIJobV1, validate_mpijob
from etctl.jobs.mpijob._api import (
    API_VERSION,
    API_VERSION_V1,
    LauncherAttachMode,
    LauncherCreationPolicy,
    MPIImplementation,
    parse_mpijob,
)
from etctl.runtime import objects
from etctl.testing import cluster_target
from tests.runtime._realtime import client_of
from tests.schema_support import EXAMPLES, apply_defaults, conformance_problems, load_yaml

MPI_EXAMPLES = sorted((EXAMPLES / "mpijob").glob("*.yaml"))
VERSIONS = {v["name"]: v for v in crd_manifest(MPIJOB)["spec"]["versions"]}
SCHEMAS = {name: v["schema"]["openAPIV3Schema"] for name, v in VERSIONS.items()}


def schema_of(document: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = SCHEMAS[document["apiVersion"].split("/")[1]]
    return schema


def test_examples_of_both_versions_exist() -> None:
    versions = {load_yaml(path)["apiVersion"] for path in MPI_EXAMPLES}
    assert versions == {API_VERSION, API_VERSION_V1}


@pytest.mark.parametrize("path", MPI_EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid_for_the_schema_and_the_controller(path: Path) -> None:
    document = load_yaml(path)
    assert conformance_problems(document, schema_of(document)) == []
    assert validate_mpijob(parse_mpijob(document)) == []


@pytest.mark.parametrize("path", MPI_EXAMPLES, ids=lambda p: p.name)
def test_schema_defaults_equal_the_versions_model_defaults(path: Path) -> None:
    document = load_yaml(path)
    server_side = apply_defaults(document, schema_of(document))
    model_side = parse_mpijob(document).to_dict()
    del model_side["status"]
    assert server_side == model_side


def test_the_two_versions_share_one_schema_but_their_defaults() -> None:
    differences: list[str] = []

    def compare(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            assert set(a) == set(b), path
            for key in a:
                compare(a[key], b[key], f"{path}.{key}")
        elif a != b:
            differences.append(path)

    compare(SCHEMAS["v2beta1"]["properties"], SCHEMAS["v1"]["properties"], "")
    assert sorted(differences) == [
        ".spec.properties.launcherAttachMode.default",
        ".spec.properties.mpiReplicaSpecs.properties.Launcher.properties.restartPolicy.default",
    ]


def test_version_defaults() -> None:
    v2 = parse_mpijob(load_yaml(EXAMPLES / "mpijob" / "pi.yaml"))
    assert type(v2) is MPIJob
    assert v2.spec.launcher_attach_mode is LauncherAttachMode.SSH
    assert v2.spec.ssh_auth_mount_path == "/home/mpiuser/.ssh"
    assert v2.spec.launcher_creation_policy is LauncherCreationPolicy.AT_STARTUP
    assert v2.spec.mpi_implementation is MPIImplementation.OPENMPI
    assert v2.spec.mpi_replica_specs.launcher is not None
    assert v2.spec.mpi_replica_specs.launcher.restart_policy is RestartPolicy.ON_FAILURE
    v1 = parse_mpijob(load_yaml(EXAMPLES / "mpijob" / "tensorflow-mnist-elastic.yaml"))
    assert type(v1) is MPIJobV1
    assert v1.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
    assert v1.spec.mpi_replica_specs.launcher is not None
    assert v1.spec.mpi_replica_specs.launcher.restart_policy is RestartPolicy.NEVER
    assert v1.spec.ssh_auth_mount_path == "/root/.ssh"


def test_run_policy_reads_both_shapes() -> None:
    v1 = parse_mpijob(load_yaml(EXAMPLES / "mpijob" / "tensorflow-mnist-elastic.yaml"))
    # v1's top-level cleanPodPolicy wins over runPolicy's default.
    assert v1.spec.run_policy.clean_pod_policy is CleanPodPolicy.NONE
    assert v1.run_policy().clean_pod_policy is CleanPodPolicy.RUNNING
    v2 = parse_mpijob(load_yaml(EXAMPLES / "mpijob" / "pi.yaml"))
    policy = v2.run_policy()
    assert policy.clean_pod_policy is CleanPodPolicy.RUNNING
    assert policy.ttl_seconds_after_finished == 60
    # The batch Job's default, which mpi-operator's launcher had.
    assert policy.backoff_limit == 6


@pytest.mark.parametrize(
    ("managed_by", "ours"),
    [
        (None, True),
        ("", True),
        ("kubeflow.org/mpi-operator", True),
        ("kueue.x-k8s.io/multikueue", False),
        ("example.com/other", False),
    ],
)
def test_managed_by(managed_by: str | None, ours: bool) -> None:
    document = load_yaml(EXAMPLES / "mpijob" / "pi.yaml")
    if managed_by is not None:
        document["spec"]["runPolicy"]["managedBy"] = managed_by
    assert (parse_mpijob(document).run_policy().managed_by is None) is ours


def test_replica_specs_hand_workers_over_as_never() -> None:
    document = load_yaml(EXAMPLES / "mpijob" / "horovod-elastic.yaml")
    job = parse_mpijob(document)
    assert job.spec.mpi_replica_specs.worker is not None
    assert job.spec.mpi_replica_specs.worker.restart_policy is RestartPolicy.ON_FAILURE
    specs = job.replica_specs()
    assert list(specs) == ["Worker", "Launcher"]
    assert specs["Worker"].restart_policy is RestartPolicy.NEVER
    assert job.spec.bounds() == (2, 6)


def test_unknown_replica_types_are_kept_for_validation_to_report() -> None:
    document = load_yaml(EXAMPLES / "mpijob" / "pi.yaml")
    specs = document["spec"]["mpiReplicaSpecs"]
    specs["worker"] = specs.pop("Worker")
    job = parse_mpijob(document)
    assert job.spec.mpi_replica_specs.worker is None
    assert job.spec.mpi_replica_specs.unknown() == ["worker"]


def test_crd_description() -> None:
    manifest = crd_manifest(MPIJOB)
    names = manifest["spec"]["names"]
    assert (names["plural"], names["singular"], names["kind"]) == ("mpijobs", "mpijob", "MPIJob")
    assert names["shortNames"] == ["mj", "mpij"]
    assert [(v["name"], v["served"], v["storage"]) for v in manifest["spec"]["versions"]] == [
        ("v2beta1", True, True),
        ("v1", True, False),
    ]
    for version in VERSIONS.values():
        assert version["subresources"]["scale"] == {
            "specReplicasPath": ".spec.mpiReplicaSpecs.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        }
    assert MPIJOBS.path("ns", "x") == "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs/x"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda s: s["mpiReplicaSpecs"]["Launcher"].update(replicas=2),
            "should be less than or equal to 1",
        ),
        (
            lambda s: s["mpiReplicaSpecs"]["Worker"].update(replicas=0),
            "should be greater than or equal to 1",
        ),
        (
            lambda s: s["mpiReplicaSpecs"]["Worker"].update(restartPolicy="Always"),
            "Unsupported value",
        ),
        (
            lambda s: s["mpiReplicaSpecs"]["Launcher"].update(restartPolicy="ExitCode"),
            "Unsupported value",
        ),
        (lambda s: s.update(mpiImplementation="LAM"), 'Unsupported value: "LAM"'),
        (lambda s: s.update(launcherCreationPolicy="Later"), 'Unsupported value: "Later"'),
        (lambda s: s.update(slotsPerWorker=0), "should be greater than or equal to 1"),
        (lambda s: s.pop("mpiReplicaSpecs"), "spec.mpiReplicaSpecs: Required value"),
        (
            lambda s: s.update(elasticPolicy={"minReplicas": 0}),
            "should be greater than or equal to 1",
        ),
    ],
)
def test_schema_rejects_bad_specs(change: Any, problem: str) -> None:
    document = load_yaml(EXAMPLES / "mpijob" / "pi.yaml")
    change(document["spec"])
    problems = conformance_problems(document, schema_of(document))
    assert any(problem in found for found in problems), problems


async def test_one_crd_serves_both_versions_with_the_creating_versions_defaults(
    tmp_path: Path,
) -> None:
    """A v1 object reads back through v2beta1 with its fields, and keeps its kubexec mode."""
    v1_doc = load_yaml(EXAMPLES / "mpijob" / "tensorflow-mnist-elastic.yaml")
    v2_doc = load_yaml(EXAMPLES / "mpijob" / "pi.yaml")
    async with (
        cluster_target(tmp_path, crds=[crd_manifest(MPIJOB)]) as target,
        client_of(target) as client,
    ):
        ns = target.namespace
        await client.create(MPIJOB.resource("v1"), copy.deepcopy(v1_doc), namespace=ns)
        await client.create(MPIJOBS, copy.deepcopy(v2_doc), namespace=ns)
        stored = {objects.name(o): o for o in (await client.list(MPIJOBS, namespace=ns)).items}
        created_v1 = MPIJob.model_validate(stored["tensorflow-mnist-elastic"])
        assert created_v1.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
        assert created_v1.spec.clean_pod_policy is CleanPodPolicy.RUNNING
        assert created_v1.spec.mpi_replica_specs.launcher is not None
        assert created_v1.spec.mpi_replica_specs.launcher.restart_policy is RestartPolicy.NEVER
        created_v2 = MPIJob.model_validate(stored["pi"])
        assert created_v2.spec.launcher_attach_mode is LauncherAttachMode.SSH
        assert created_v2.spec.mpi_replica_specs.launcher is not None
        assert created_v2.spec.mpi_replica_specs.launcher.restart_policy is (
            RestartPolicy.ON_FAILURE
        )
