"""mpi-operator's validation rules, as problems a user can act on."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from etctl.jobs.mpijob import MPIJob, validate_mpijob
from etctl.jobs.mpijob._api import parse_mpijob
from tests.schema_support import EXAMPLES, load_yaml

BASE = load_yaml(EXAMPLES / "mpijob" / "pi.yaml")


def job(change: Callable[[dict[str, Any]], object] | None = None, **status: Any) -> MPIJob:
    document = copy.deepcopy(BASE)
    if change is not None:
        change(document)
    if status:
        document["status"] = status
    return parse_mpijob(document)


def specs(document: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = document["spec"]["mpiReplicaSpecs"]
    return found


def test_the_example_is_valid() -> None:
    assert validate_mpijob(job()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: specs(d).pop("Launcher"),
            "spec.mpiReplicaSpecs.Launcher: missing; an MPIJob needs a launcher whose template "
            "runs mpirun or horovodrun",
        ),
        (
            lambda d: specs(d).pop("Worker"),
            "spec.mpiReplicaSpecs.Worker: missing; an MPIJob needs workers to run its processes on",
        ),
        (
            lambda d: specs(d)["Launcher"].update(replicas=2),
            "spec.mpiReplicaSpecs.Launcher.replicas: 2 is above 1; set at most 1",
        ),
        (
            lambda d: specs(d)["Worker"].update(replicas=0),
            "spec.mpiReplicaSpecs.Worker.replicas: 0 is below 1; set at least 1",
        ),
        (
            lambda d: specs(d)["Worker"].update(restartPolicy="Always"),
            "spec.mpiReplicaSpecs.Worker.restartPolicy: Always is not supported; use Never or "
            "OnFailure (mpi-operator's rule)",
        ),
        (
            lambda d: specs(d)["Launcher"].update(restartPolicy="ExitCode"),
            "spec.mpiReplicaSpecs.Launcher.restartPolicy: ExitCode is not supported; use Never "
            "or OnFailure (mpi-operator's rule)",
        ),
        (
            lambda d: specs(d).update(worker=specs(d)["Worker"]),
            "spec.mpiReplicaSpecs.worker: unknown replica type; the types are Launcher and "
            "Worker (exact case)",
        ),
        (
            lambda d: d["spec"].update(slotsPerWorker=0),
            "spec.slotsPerWorker: 0 is below 1; set 1 or more",
        ),
        (
            lambda d: d["spec"].update(sshAuthMountPath="home/.ssh"),
            "spec.sshAuthMountPath: 'home/.ssh' is not an absolute path; the ssh key is "
            "mounted there",
        ),
        (
            lambda d: d["spec"].update(elasticPolicy={"minReplicas": 4, "maxReplicas": 3}),
            "spec.elasticPolicy: minReplicas 4 is greater than maxReplicas 3; the job could "
            "never be scaled within them",
        ),
        (
            lambda d: d["spec"].update(mainContainer="tensorflow"),
            "spec.mainContainer: 'tensorflow' is not a container of the worker template "
            "(mpi-worker); kubexec.sh runs the MPI processes in it",
        ),
        (
            lambda d: d["spec"]["runPolicy"].update(backoffLimit=-1),
            "spec.runPolicy.backoffLimit: -1 is below 0; set at least 0 or unset it",
        ),
    ],
)
def test_problems(change: Callable[[dict[str, Any]], object], expected: str) -> None:
    assert validate_mpijob(job(change)) == [expected]


def test_restart_policy_problems_do_not_hide_the_others() -> None:
    def change(document: dict[str, Any]) -> None:
        specs(document)["Worker"].update(replicas=0, restartPolicy="ExitCode")

    assert len(validate_mpijob(job(change))) == 2


def test_names_are_checked_against_the_highest_worker_name() -> None:
    # Two workers: the longest child name is <job>-worker-1, so a name may have 54 characters.
    assert validate_mpijob(job(lambda d: d["metadata"].update(name="a" * 54))) == []
    longer = "a" * 55
    problems = validate_mpijob(job(lambda d: d["metadata"].update(name=longer)))
    assert problems == [
        f"metadata.name: '{longer}' is too long: the child name '{longer}-worker-1' would exceed "
        "63 characters; shorten the name to at most 54 characters"
    ]
    # The elastic maximum counts: the job may grow to <job>-worker-10.
    bounded = job(
        lambda d: d.update(
            metadata={"name": "b" * 54}, spec={**d["spec"], "elasticPolicy": {"maxReplicas": 11}}
        )
    )
    assert validate_mpijob(bounded)[0].startswith("metadata.name: '" + "b" * 54 + "' is too long")
    # A job that runs keeps the names it has (the scaling machinery refuses longer ones).
    running = job(
        lambda d: d.update(
            metadata={"name": "c" * 54}, spec={**d["spec"], "elasticPolicy": {"maxReplicas": 11}}
        ),
        targetWorkers=["c" * 54 + "-worker-0", "c" * 54 + "-worker-7"],
    )
    assert validate_mpijob(running) == []


def test_a_name_that_is_not_a_dns_label() -> None:
    problems = validate_mpijob(job(lambda d: d["metadata"].update(name="Pi")))
    assert problems[0].startswith("metadata.name: 'Pi' is not a DNS-1035 label")
