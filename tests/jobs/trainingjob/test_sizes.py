"""How many workers a TrainingJob's ConfigMap and status hold."""

from __future__ import annotations

import pytest

from etctl.common import MAX_DATA_BYTES, SizeLimits, crd_manifest
from etctl.jobs.trainingjob._api import TRAININGJOB, TrainingJob
from etctl.jobs.trainingjob._layout import config_data
from etctl.jobs.trainingjob._sizes import (
    MAX_WORKERS,
    STATUS_HEADROOM,
    Names,
    config_data_bytes,
    job_bytes,
    membership_problem,
)


def names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def job(name: str = "big") -> TrainingJob:
    return TrainingJob.model_validate({"metadata": {"name": name, "namespace": "default"}})


@pytest.mark.parametrize("count", [0, 1, 9, 10, 11, 100, 1234])
def test_sequential_names_are_counted_without_building_them(count: int) -> None:
    assert Names.sequential("j-worker-", count) == Names.of(names("j-worker-", count))


@pytest.mark.parametrize(("slots", "container"), [(1, "main"), (8, "a container"), (12, "")])
def test_config_bytes_are_those_of_the_rendered_config_map(slots: int, container: str) -> None:
    members = names("job-worker-", 1500)
    rendered = config_data(members, slots, container)
    expected = sum(len(value.encode()) for value in rendered.values())
    assert config_data_bytes(Names.of(members), slots, container) == expected


def test_max_workers_is_the_most_the_shortest_names_fit() -> None:
    def size(count: int) -> int:
        return config_data_bytes(Names.sequential("a-worker-", count), 1, "")

    assert size(MAX_WORKERS) <= MAX_DATA_BYTES < size(MAX_WORKERS + 1)
    worker = crd_manifest(TRAININGJOB)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    props = worker["properties"]["spec"]["properties"]["etReplicaSpecs"]["properties"]["worker"]
    assert props["properties"]["replicas"]["maximum"] == MAX_WORKERS
    assert props["properties"]["maxReplicas"]["maximum"] == MAX_WORKERS


def test_a_membership_that_fits_has_no_problem() -> None:
    found = membership_problem(
        job(), Names.sequential("big-worker-", 1000), slots=1, container="c", limits=SizeLimits()
    )
    assert found is None


def test_a_config_map_over_the_limit_says_the_count_the_bytes_and_what_fits() -> None:
    count = 40_000
    need = config_data_bytes(Names.sequential("big-worker-", count), 1, "c")
    found = membership_problem(
        job(), Names.sequential("big-worker-", count), slots=1, container="c", limits=SizeLimits()
    )
    assert found is not None
    assert found.startswith(f"40000 workers need {need} bytes of hostfiles in ConfigMap big-config")
    assert f"over the {MAX_DATA_BYTES} bytes a ConfigMap may hold" in found
    most = int(found.split("at most ")[1].split()[0])
    assert config_data_bytes(Names.sequential("big-worker-", most), 1, "c") <= MAX_DATA_BYTES
    assert config_data_bytes(Names.sequential("big-worker-", most + 1), 1, "c") > MAX_DATA_BYTES


def test_a_status_over_the_object_limit_is_reported_too() -> None:
    base = job_bytes(job(), Names(0, 0))
    assert base > STATUS_HEADROOM
    limits = SizeLimits(max_object_bytes=base + 2 * 10 * (len("big-worker-0") + 3))
    ten = membership_problem(
        job(), Names.sequential("big-worker-", 10), slots=1, container="c", limits=limits
    )
    assert ten is None
    eleven = membership_problem(
        job(), Names.sequential("big-worker-", 11), slots=1, container="c", limits=limits
    )
    assert eleven is not None
    assert eleven.startswith("11 workers make the job's status about")
    assert f"over the {limits.max_object_bytes} bytes the cluster stores" in eleven
    assert eleven.endswith("at most 10 workers fit")


def test_size_limits_are_positive() -> None:
    with pytest.raises(ValueError, match="max_object_bytes must be a positive number of bytes"):
        SizeLimits(max_object_bytes=0)
