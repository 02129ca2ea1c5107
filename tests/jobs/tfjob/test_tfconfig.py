import json
from typing import Any

import pytest

from etctl.jobs.tfjob._api import TFJob
from etctl.jobs.tfjob._tfconfig import (
    cluster_spec,
    encode,
    is_distributed,
    replica_host,
    replica_name,
    replica_port,
    tf_config,
    tf_config_json,
)


def container(*ports: dict[str, Any], name: str = "tensorflow") -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "image": "tf:2"}
    if ports:
        body["ports"] = list(ports)
    return body


def replica(count: int = 1, *containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "replicas": count,
        "template": {"spec": {"containers": list(containers) or [container()]}},
    }


def job(
    name: str = "mnist", namespace: str = "team", *, dynamic: bool = False, **specs: Any
) -> TFJob:
    return TFJob.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"tfReplicaSpecs": specs, "enableDynamicWorker": dynamic},
        }
    )


def test_replica_name_lower_cases_the_type() -> None:
    assert replica_name("mnist", "Worker", 3) == "mnist-worker-3"
    assert replica_name("mnist", "PS", 0) == "mnist-ps-0"


@pytest.mark.parametrize(
    ("domain", "host"),
    [
        ("", "mnist-ps-1.team.svc"),
        ("cluster.local", "mnist-ps-1.team.svc.cluster.local"),
        (".corp.example.", "mnist-ps-1.team.svc.corp.example"),
    ],
)
def test_replica_host_appends_the_cluster_domain(domain: str, host: str) -> None:
    assert replica_host("mnist", "team", "PS", 1, cluster_domain=domain) == host


def test_port_is_the_tfjob_port_of_the_tensorflow_container() -> None:
    tf = job(
        PS=replica(
            1,
            container(
                {"name": "grpc", "containerPort": 9000},
                {"name": "tfjob-port", "containerPort": 3333},
            ),
        ),
        Worker=replica(
            1, container({"name": "tfjob-port", "containerPort": 4444}, name="sidecar"), container()
        ),
    )
    assert replica_port(tf.spec.tf_replica_specs["PS"]) == 3333
    # A tfjob-port on another container does not count: the tensorflow container's port is 2222.
    assert replica_port(tf.spec.tf_replica_specs["Worker"]) == 2222


def test_dense_cluster_lists_every_type_sorted_with_evaluator() -> None:
    tf = job(
        Worker=replica(2),
        PS=replica(1, container({"name": "tfjob-port", "containerPort": 2223})),
        Chief=replica(1),
        Evaluator=replica(1),
    )
    assert cluster_spec(tf) == {
        "chief": ["mnist-chief-0.team.svc:2222"],
        "evaluator": ["mnist-evaluator-0.team.svc:2222"],
        "ps": ["mnist-ps-0.team.svc:2223"],
        "worker": ["mnist-worker-0.team.svc:2222", "mnist-worker-1.team.svc:2222"],
    }
    assert list(cluster_spec(tf)) == ["chief", "evaluator", "ps", "worker"]


def test_dense_tf_config_is_compact_json_in_kubeflow_key_order() -> None:
    tf = job(PS=replica(1), Worker=replica(2))
    text = tf_config_json(tf, "Worker", 1, cluster_domain="cluster.local")
    assert text == (
        '{"cluster":{"ps":["mnist-ps-0.team.svc.cluster.local:2222"],'
        '"worker":["mnist-worker-0.team.svc.cluster.local:2222",'
        '"mnist-worker-1.team.svc.cluster.local:2222"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}'
    )


def test_sparse_worker_knows_every_ps_and_only_itself() -> None:
    tf = job(dynamic=True, PS=replica(2), Worker=replica(3))
    assert tf_config(tf, "Worker", 2) == {
        "cluster": {
            "worker": {"2": "mnist-worker-2.team.svc:2222"},
            "ps": ["mnist-ps-0.team.svc:2222", "mnist-ps-1.team.svc:2222"],
        },
        "task": {"type": "worker", "index": 2},
    }


def test_sparse_ps_knows_only_itself() -> None:
    tf = job(dynamic=True, PS=replica(2), Worker=replica(3))
    assert tf_config(tf, "PS", 1) == {
        "cluster": {"worker": {}, "ps": ["mnist-ps-1.team.svc:2222"]},
        "task": {"type": "ps", "index": 1},
    }


def test_sparse_other_types_get_an_empty_cluster() -> None:
    tf = job(dynamic=True, Chief=replica(1), Worker=replica(2))
    assert tf_config(tf, "Chief", 0) == {
        "cluster": {"worker": {}, "ps": []},
        "task": {"type": "chief", "index": 0},
    }
    # Without PS, a worker's PS list is empty, never null.
    assert json.loads(tf_config_json(tf, "Worker", 0))["cluster"]["ps"] == []


@pytest.mark.parametrize(
    ("specs", "expected"),
    [
        ({"Worker": replica(1)}, False),
        ({"Chief": replica(1)}, False),
        ({"Worker": replica(2)}, True),
        ({"Chief": replica(1), "Worker": replica(0)}, False),
        ({"Chief": replica(1), "Evaluator": replica(1)}, True),
        ({"Worker": replica(0)}, True),
    ],
)
def test_a_single_replica_is_not_distributed(specs: dict[str, Any], expected: bool) -> None:
    assert is_distributed(job(**specs)) is expected


def test_encode_keeps_the_documents_order() -> None:
    assert encode({"b": 1, "a": [1, 2]}) == '{"b":1,"a":[1,2]}'
