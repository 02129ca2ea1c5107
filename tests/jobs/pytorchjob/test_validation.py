"""What makes a PyTorchJob impossible to run: each rule, worded so a user can act."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.jobs.pytorchjob import PyTorchJob, validate_pytorchjob, validate_update, with_defaults
from tests.jobs.pytorchjob.support import document, replica, template


def problems(doc: dict[str, Any]) -> list[str]:
    return validate_pytorchjob(with_defaults(PyTorchJob.model_validate(doc)))


def test_a_good_job_has_none() -> None:
    assert problems(document(master=True)) == []
    assert problems(document(elastic={"minReplicas": 1, "maxReplicas": 4})) == []


def test_the_issues_bad_inputs_each_get_a_clear_problem() -> None:
    no_worker = document(elastic={})
    del no_worker["spec"]["pytorchReplicaSpecs"]["Worker"]
    no_worker["spec"]["pytorchReplicaSpecs"]["Master"] = replica(1)
    assert problems(no_worker) == [
        "spec.pytorchReplicaSpecs.Worker: missing; an elastic PyTorchJob's workers are the "
        "members its elasticPolicy scales"
    ]
    inverted = problems(document(elastic={"minReplicas": 3, "maxReplicas": 2}))
    assert "minReplicas 3 is greater than maxReplicas 2" in inverted[0]
    above = problems(document(workers=5, elastic={"minReplicas": 1, "maxReplicas": 4}))
    assert above == [
        "spec.pytorchReplicaSpecs.Worker.replicas: 5 is above elasticPolicy.maxReplicas 4 "
        "(unset, it is minReplicas); start within the bounds, then scale with kubectl scale or "
        "an HPA"
    ]
    assert problems(document(workers=1, elastic={"minReplicas": 2, "maxReplicas": 4})) == []
    assert problems(document(elastic={"nProcPerNode": 0})) == [
        "spec.elasticPolicy.nProcPerNode: 0 is below 1; each worker runs at least one process"
    ]
    two_masters = document(master=True)
    two_masters["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    assert problems(two_masters) == [
        "spec.pytorchReplicaSpecs.Master.replicas: 2 is above 1; set at most 1"
    ]
    long = document()
    long["metadata"]["name"] = "x" * 55
    assert "is too long: the child name" in problems(long)[0]


def test_a_started_job_outside_its_bounds_is_the_scalers_to_clamp() -> None:
    doc = document(workers=6, elastic={"minReplicas": 1, "maxReplicas": 4})
    doc["status"] = {"targetWorkers": ["job-worker-0", "job-worker-1"]}
    assert problems(doc) == []


def test_names_must_leave_room_for_the_highest_worker_index() -> None:
    doc = document(workers=1, elastic={"minReplicas": 1, "maxReplicas": 100})
    doc["metadata"]["name"] = "x" * 54  # 54 + len("-worker-99") > 63
    found = problems(doc)
    assert len(found) == 1
    assert "-worker-99" in found[0]


def test_backend_port_conf_and_nproc_rules() -> None:
    assert problems(document(elastic={"rdzvBackend": "etcd-v2"})) == [
        "spec.elasticPolicy.rdzvHost: missing; the etcd-v2 backend rendezvous through an etcd "
        "server of your own: set rdzvHost (and rdzvPort) to its address"
    ]
    assert problems(document(elastic={"rdzvBackend": "etcd", "rdzvHost": "etcd-client"})) == []
    assert problems(document(elastic={"rdzvPort": 0})) == [
        "spec.elasticPolicy.rdzvPort: 0 is not a port (1 to 65535)"
    ]
    conf = problems(document(elastic={"rdzvConf": [{"key": "a", "value": "b,c"}]}))
    assert conf == [
        "spec.elasticPolicy.rdzvConf[0].value: 'b,c' is not a value torchrun can parse "
        "(no ',' or spaces, not empty)"
    ]
    both = problems(document(nprocPerNode="2", elastic={"nProcPerNode": 2}))
    assert both == [
        "spec.elasticPolicy.nProcPerNode: must not be used with spec.nprocPerNode; keep "
        "spec.nprocPerNode (elasticPolicy.nProcPerNode is deprecated)"
    ]
    assert problems(document(nprocPerNode="many")) == [
        "spec.nprocPerNode: 'many' is not what torchrun accepts; use auto, cpu, gpu, xpu or a "
        "positive count"
    ]


def test_replica_types_and_the_pytorch_container() -> None:
    doc = document()
    doc["spec"]["pytorchReplicaSpecs"]["Launcher"] = replica(1)
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"] = template(container="main")
    assert problems(doc) == [
        'spec.pytorchReplicaSpecs.Worker.template.spec.containers: no container named "pytorch";'
        " its pytorchjob-port is the port the job's processes meet on",
        "spec.pytorchReplicaSpecs.Launcher: unknown replica type; the types are Master, Worker",
    ]


def test_metrics_the_hpa_would_refuse_are_refused_on_the_job() -> None:
    metric = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "Value"}}}
    found = problems(document(elastic={"maxReplicas": 4, "metrics": [metric]}))
    assert found == [
        "spec.elasticPolicy.metrics[0].pods.target.averageValue: must specify a positive target "
        "averageValue"
    ]


@pytest.mark.parametrize(
    ("before", "after", "refused"),
    [
        ({"maxReplicas": 4}, {"maxReplicas": 1}, True),  # lowered below the 2 workers
        ({"maxReplicas": 4}, {"maxReplicas": 2}, False),
        ({"maxReplicas": 1}, {"maxReplicas": 1}, False),  # /scale above an unchanged maximum
    ],
)
def test_max_replicas_may_not_be_lowered_below_the_workers(
    before: dict[str, Any] | None, after: dict[str, Any], refused: bool
) -> None:
    old = PyTorchJob.model_validate(document(workers=2, elastic=before))
    new = PyTorchJob.model_validate(document(workers=2, elastic=after))
    assert bool(validate_update(old, new)) is refused


def test_a_static_jobs_worker_replicas_are_its_world() -> None:
    old = PyTorchJob.model_validate(document(workers=2))
    new = PyTorchJob.model_validate(document(workers=3))
    (problem,) = validate_update(old, new)
    assert problem.startswith("spec.pytorchReplicaSpecs.Worker.replicas: may not change (2 to 3)")
    assert validate_update(old, PyTorchJob.model_validate(document(workers=2))) == []


@pytest.mark.parametrize(
    ("before", "after"), [(None, {"maxReplicas": 4}), ({"maxReplicas": 4}, None)]
)
def test_whether_a_job_is_elastic_is_settled_when_it_is_created(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> None:
    # Running static pods carry WORLD_SIZE 2; workers added under a policy would be told 1:4 and a
    # rendezvous: two worlds in one job.
    old = PyTorchJob.model_validate(document(workers=2, elastic=before))
    new = PyTorchJob.model_validate(document(workers=2, elastic=after))
    (problem,) = validate_update(old, new)
    verb = "added" if before is None else "removed"
    assert problem.startswith(f"spec.elasticPolicy: may not be {verb} once the PyTorchJob exists")
