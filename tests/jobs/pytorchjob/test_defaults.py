"""training-operator's SetDefaults_PyTorchJob, case by case (its pytorch_defaults_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.jobs.pytorchjob import PyTorchJob, with_defaults
from etctl.jobs.pytorchjob._defaults import with_default_port
from tests.jobs.pytorchjob.support import defaulted, job


@pytest.mark.parametrize(
    ("policy", "bounds"),
    [
        ({}, (2, 2)),  # neither: the Worker replicas
        ({"maxReplicas": 5}, (5, 5)),  # only max: min takes it
        ({"minReplicas": 1}, (1, 1)),  # only min: max takes it
        ({"minReplicas": 1, "maxReplicas": 4}, (1, 4)),
    ],
)
def test_elastic_bounds_default_from_each_other_then_from_the_workers(
    policy: dict[str, Any], bounds: tuple[int, int]
) -> None:
    elastic = defaulted(workers=2, elastic=policy).spec.elastic_policy
    assert elastic is not None
    assert (elastic.min_replicas, elastic.max_replicas) == bounds


def test_nproc_per_node_defaults_to_auto_unless_the_elastic_one_is_set() -> None:
    assert defaulted().spec.nproc_per_node == "auto"
    assert defaulted(elastic={}).spec.nproc_per_node == "auto"
    assert defaulted(elastic={"nProcPerNode": 4}).spec.nproc_per_node is None
    assert defaulted(nprocPerNode="gpu").spec.nproc_per_node == "gpu"


def test_the_pytorch_container_gets_the_default_port_unless_it_declares_one() -> None:
    out = defaulted(master=True)
    for spec in out.spec.pytorch_replica_specs.values():
        (container,) = spec.template["spec"]["containers"]
        assert container["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    declared = {"spec": {"containers": [{"name": "pytorch", "image": "i",
                                         "ports": [{"name": "pytorchjob-port",
                                                    "containerPort": 9000}]}]}}  # fmt: skip
    assert with_default_port(declared) == declared


def test_without_a_pytorch_container_the_first_one_gets_the_port() -> None:
    template = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    out = with_default_port(template)
    assert out["spec"]["containers"][0]["ports"][0]["containerPort"] == 23456
    assert "ports" not in out["spec"]["containers"][1]
    assert "ports" not in template["spec"]["containers"][0]  # the input is untouched


def test_defaults_leave_the_input_alone_and_apply_once() -> None:
    original = job(master=True, elastic={"maxReplicas": 3})
    before = original.to_dict()
    once = with_defaults(original)
    assert original.to_dict() == before
    assert with_defaults(once) == once
    assert isinstance(once, PyTorchJob)
