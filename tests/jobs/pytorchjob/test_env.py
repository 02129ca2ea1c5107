"""The environment of a PyTorchJob's pods: training-operator's values, in its order."""

from __future__ import annotations

from typing import Any

from etctl.jobs.pytorchjob import PyTorchJob
from etctl.jobs.pytorchjob._env import apply_env, pod_env
from etctl.jobs.pytorchjob._rendezvous import endpoint
from tests.jobs.pytorchjob.support import defaulted


def env_of(
    job: PyTorchJob,
    replica_type: str = "Worker",
    index: int = 0,
    *,
    max_restarts: int | None = None,
) -> dict[str, str]:
    pairs = pod_env(job, replica_type, index, endpoint=endpoint(job), max_restarts=max_restarts)
    return {var["name"]: var["value"] for var in pairs}


def test_a_static_job_with_a_master_gets_master_address_world_and_ranks() -> None:
    job = defaulted(master=True, workers=3)
    master = env_of(job, "Master", 0)
    assert master == {
        "PYTHONUNBUFFERED": "1",
        "MASTER_PORT": "23456",
        "PET_MASTER_PORT": "23456",
        "MASTER_ADDR": "job-master-0",
        "PET_MASTER_ADDR": "job-master-0",
        "WORLD_SIZE": "4",
        "RANK": "0",
        "PET_NODE_RANK": "0",
        "PET_NPROC_PER_NODE": "auto",
        "PET_NNODES": "4",
    }
    worker = env_of(job, "Worker", 2)
    assert (worker["RANK"], worker["PET_NODE_RANK"], worker["WORLD_SIZE"]) == ("3", "3", "4")


def test_a_numeric_nproc_per_node_multiplies_the_world() -> None:
    job = defaulted(master=True, workers=1, nprocPerNode="4")
    assert env_of(job)["WORLD_SIZE"] == "8"
    assert defaulted(master=True, workers=1, nprocPerNode="gpu").spec.nproc_per_node == "gpu"
    assert env_of(defaulted(master=True, workers=1, nprocPerNode="gpu"))["WORLD_SIZE"] == "2"


def test_without_a_master_there_is_no_master_address_nor_rank() -> None:
    env = env_of(defaulted(workers=2))
    assert {"MASTER_ADDR", "RANK", "WORLD_SIZE"}.isdisjoint(env)
    assert env["PET_NNODES"] == "2"


def test_training_operators_elastic_case_gives_its_exact_values() -> None:
    # elastic_test.go's "With ElasticPolicy", on etctl's rendezvous Service where rdzvHost is set.
    policy = {
        "minReplicas": 1,
        "maxReplicas": 3,
        "rdzvBackend": "c10d",
        "rdzvPort": 1234,
        "rdzvHost": "localhost",
        "rdzvId": "rdzv-id",
        "rdzvConf": [
            {"key": "rdzv-conf-name", "value": "rdzv-conf-value"},
            {"key": "rdzv-conf-name-1", "value": "rdzv-conf-value-1"},
        ],
        "maxRestarts": 3,
    }
    job = defaulted(workers=1, elastic=policy)
    env = env_of(job, max_restarts=3)
    assert list(env) == [
        "PYTHONUNBUFFERED",
        "PET_NPROC_PER_NODE",
        "PET_RDZV_ENDPOINT",
        "PET_RDZV_BACKEND",
        "PET_NNODES",
        "PET_MAX_RESTARTS",
        "PET_RDZV_ID",
        "PET_RDZV_CONF",
    ]
    assert env["PET_RDZV_ENDPOINT"] == "localhost:1234"
    assert env["PET_RDZV_BACKEND"] == "c10d"
    assert env["PET_NNODES"] == "1:3"
    assert env["PET_MAX_RESTARTS"] == "3"
    assert env["PET_RDZV_ID"] == "rdzv-id"
    assert env["PET_RDZV_CONF"] == (
        "rdzv-conf-name=rdzv-conf-value,rdzv-conf-name-1=rdzv-conf-value-1"
    )


def test_the_default_endpoint_is_the_jobs_rendezvous_service_on_the_workers_port() -> None:
    env = env_of(defaulted(workers=2, elastic={"minReplicas": 1, "maxReplicas": 4}))
    assert env["PET_RDZV_ENDPOINT"] == "job-rdzv:23456"
    assert env["PET_RDZV_BACKEND"] == "c10d"
    assert env["PET_NNODES"] == "1:4"
    assert "PET_MAX_RESTARTS" not in env


def test_standalone_and_the_deprecated_nproc_per_node() -> None:
    env = env_of(defaulted(elastic={"standalone": True, "nProcPerNode": 8}))
    assert env["PET_STANDALONE"] == ""
    assert env["PET_NPROC_PER_NODE"] == "8"
    assert list(env).count("PET_NPROC_PER_NODE") == 1


def test_the_restart_budget_left_is_what_a_new_pod_gets() -> None:
    job = defaulted(elastic={"maxRestarts": 5})
    assert env_of(job, max_restarts=2)["PET_MAX_RESTARTS"] == "2"


def test_env_replaces_template_variables_of_the_same_names_on_every_container() -> None:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "pytorch", "env": [{"name": "PET_NNODES", "value": "9"},
                                        {"name": "LOGLEVEL", "value": "DEBUG"}]},
            {"name": "sidecar"},
        ]
    }  # fmt: skip
    apply_env(spec, [{"name": "PET_NNODES", "value": "1:2"}])
    assert spec["containers"][0]["env"] == [
        {"name": "LOGLEVEL", "value": "DEBUG"},
        {"name": "PET_NNODES", "value": "1:2"},
    ]
    assert spec["containers"][1]["env"] == [{"name": "PET_NNODES", "value": "1:2"}]
