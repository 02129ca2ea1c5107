"""The CEL rules (x-kubernetes-validations) of every generated CRD, judged by the cluster.

Each bad manifest the controllers refuse is refused at the door instead, with the field and the
reason, by the embedded server or a real kube-apiserver (1.25 or later) alike; the update rules
(managedBy immutable once set, a scaler's job) refuse the update; the examples still apply.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from etctl.common import SCALEIN, SCALEINS, SCALEOUT, crd_manifest
from etctl.errors import Invalid
from etctl.jobs.mpijob import MPIJOB, MPIJOBS
from etctl.jobs.tfjob import TFJOB, TFJOBS
from etctl.jobs.trainingjob import TRAININGJOB, TRAININGJOBS
from etctl.runtime import Client, Resource
from etctl.testing import ClusterTarget
from tests.schema_support import EXAMPLES, admitted, load_yaml, refused

MPI_PI = EXAMPLES / "mpijob" / "pi.yaml"
TF_SIMPLE = EXAMPLES / "tfjob" / "simple.yaml"
TRAINING = EXAMPLES / "trainingjob" / "training-job.yaml"
SCALE_IN = EXAMPLES / "trainingjob" / "scale-in-count.yaml"


@pytest.fixture
def etctl_target_crds() -> list[dict[str, Any]]:
    return [crd_manifest(r) for r in (MPIJOB, TFJOB, TRAININGJOB, SCALEIN, SCALEOUT)]


def _mpi_no_launcher(doc: dict[str, Any]) -> None:
    del doc["spec"]["mpiReplicaSpecs"]["Launcher"]


def _mpi_lower_case_worker(doc: dict[str, Any]) -> None:
    specs = doc["spec"]["mpiReplicaSpecs"]
    specs["worker"] = specs.pop("Worker")


def _mpi_long_name(doc: dict[str, Any]) -> None:
    doc["metadata"]["name"] = "a" * 70


def _mpi_min_above_max(doc: dict[str, Any]) -> None:
    doc["spec"]["elasticPolicy"] = {"minReplicas": 4, "maxReplicas": 2}


def _tf_chief_and_master(doc: dict[str, Any]) -> None:
    specs = doc["spec"]["tfReplicaSpecs"]
    specs["Chief"] = copy.deepcopy(specs["Worker"]) | {"replicas": 1}
    specs["Master"] = copy.deepcopy(specs["Worker"]) | {"replicas": 1}


def _tf_two_chiefs(doc: dict[str, Any]) -> None:
    specs = doc["spec"]["tfReplicaSpecs"]
    specs["Chief"] = copy.deepcopy(specs["Worker"]) | {"replicas": 2}


def _training_min_above_max(doc: dict[str, Any]) -> None:
    worker = doc["spec"]["etReplicaSpecs"]["worker"]
    worker.update(minReplicas=5, maxReplicas=3)


def _training_long_name(doc: dict[str, Any]) -> None:
    doc["metadata"]["name"] = "t" * 55


def _scale_in_no_job(doc: dict[str, Any]) -> None:
    doc["spec"]["selector"] = {"name": ""}


BAD: list[tuple[str, Resource, Any, Callable[[dict[str, Any]], None], str]] = [
    (
        "mpijob-no-launcher",
        MPIJOBS,
        MPI_PI,
        _mpi_no_launcher,
        'spec.mpiReplicaSpecs: Invalid value: "object": an MPIJob needs exactly one Launcher',
    ),
    (
        "mpijob-lower-case-worker",
        MPIJOBS,
        MPI_PI,
        _mpi_lower_case_worker,
        'spec.mpiReplicaSpecs: Invalid value: "object": an MPIJob needs Workers',
    ),
    (
        "mpijob-70-character-name",
        MPIJOBS,
        MPI_PI,
        _mpi_long_name,
        'Invalid value: "object": metadata.name must be at most 54 characters',
    ),
    (
        "mpijob-min-above-max",
        MPIJOBS,
        MPI_PI,
        _mpi_min_above_max,
        'spec.elasticPolicy: Invalid value: "object": minReplicas must not be above maxReplicas',
    ),
    (
        "tfjob-chief-and-master",
        TFJOBS,
        TF_SIMPLE,
        _tf_chief_and_master,
        'spec.tfReplicaSpecs: Invalid value: "object": Chief and Master are the same role',
    ),
    (
        "tfjob-two-chiefs",
        TFJOBS,
        TF_SIMPLE,
        _tf_two_chiefs,
        "spec.tfReplicaSpecs.Chief.replicas: Invalid value: 2: spec.tfReplicaSpecs.Chief.replicas "
        "in body should be less than or equal to 1",
    ),
    (
        "trainingjob-min-above-max",
        TRAININGJOBS,
        TRAINING,
        _training_min_above_max,
        'spec.etReplicaSpecs.worker: Invalid value: "object": minReplicas must not be above '
        "maxReplicas",
    ),
    (
        "trainingjob-long-name",
        TRAININGJOBS,
        TRAINING,
        _training_long_name,
        "metadata.name must be at most 54 characters",
    ),
    (
        "scalein-naming-no-job",
        SCALEINS,
        SCALE_IN,
        _scale_in_no_job,
        'spec.selector.name: Invalid value: "": spec.selector.name in body should be at least 1 '
        "chars long",
    ),
]


@pytest.mark.parametrize(
    ("res", "path", "change", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
async def test_bad_manifests_are_refused_at_the_door_with_field_and_reason(
    etctl_target: ClusterTarget,
    res: Resource,
    path: Any,
    change: Callable[[dict[str, Any]], None],
    expected: str,
) -> None:
    document = load_yaml(path)
    change(document)
    refusal = await refused(etctl_target, res, document)
    assert refusal.status == 422
    assert expected in str(refusal), str(refusal)


async def _replace(target: ClusterTarget, res: Resource, obj: Mapping[str, Any]) -> Any:
    async with await Client.from_kubeconfig(target.kubeconfig) as client:
        return await client.replace(res, obj)


async def test_managed_by_is_immutable_once_set(etctl_target: ClusterTarget) -> None:
    document = load_yaml(MPI_PI)
    document["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    stored = await admitted(etctl_target, MPIJOBS, document)
    changed = copy.deepcopy(dict(stored))
    changed["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/mpi-operator"
    with pytest.raises(Invalid, match="managedBy is immutable once set"):
        await _replace(etctl_target, MPIJOBS, changed)
    del changed["spec"]["runPolicy"]["managedBy"]
    with pytest.raises(Invalid, match="managedBy may not be removed once set"):
        await _replace(etctl_target, MPIJOBS, changed)
    unchanged = copy.deepcopy(dict(stored))
    unchanged["metadata"]["labels"] = {"touched": "yes"}
    await _replace(etctl_target, MPIJOBS, unchanged)


async def test_a_scaler_keeps_its_job(etctl_target: ClusterTarget) -> None:
    stored = await admitted(etctl_target, SCALEINS, load_yaml(SCALE_IN))
    changed = copy.deepcopy(dict(stored))
    changed["spec"]["selector"]["name"] = "another-job"
    with pytest.raises(Invalid, match="the job a scaler resizes cannot change"):
        await _replace(etctl_target, SCALEINS, changed)


def test_every_generated_crd_carries_rules() -> None:
    for resource in (MPIJOB, TFJOB, TRAININGJOB, SCALEIN, SCALEOUT):
        assert "x-kubernetes-validations" in str(crd_manifest(resource)), resource.kind
