"""The rendezvous endpoint and the Service that follows the member hosting torchrun's store."""

from __future__ import annotations

from typing import Any

from etctl.common import REPLICA_INDEX
from etctl.jobs.pytorchjob._rendezvous import (
    choose_host,
    endpoint,
    owns_endpoint,
    rendezvous_service,
    selected_index,
)
from tests.jobs.pytorchjob.support import defaulted


def worker(index: int, phase: str = "Running", *, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": f"job-worker-{index}"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata, "status": {"phase": phase}}


def test_the_endpoint_is_the_jobs_service_unless_rdzv_host_is_set() -> None:
    ours = defaulted(elastic={})
    assert (owns_endpoint(ours), endpoint(ours)) == (True, "job-rdzv:23456")
    given = defaulted(elastic={"rdzvHost": "etcd-client", "rdzvPort": 2379, "rdzvBackend": "etcd"})
    assert (owns_endpoint(given), endpoint(given)) == (False, "etcd-client:2379")
    assert not owns_endpoint(defaulted())


def test_the_service_is_headless_publishes_not_ready_pods_and_selects_one_worker() -> None:
    service = rendezvous_service(defaulted(elastic={"rdzvPort": 29400}), 3, operator_name="op")
    assert service["metadata"]["name"] == "job-rdzv"
    assert service["metadata"]["namespace"] == "ns"
    spec = service["spec"]
    assert spec["clusterIP"] == "None"
    assert spec["publishNotReadyAddresses"] is True
    assert spec["selector"][REPLICA_INDEX] == "3"
    assert spec["selector"]["training.kubeflow.org/replica-type"] == "worker"
    assert spec["ports"] == [
        {"name": "rdzv", "port": 29400, "targetPort": 29400, "protocol": "TCP"}
    ]
    assert selected_index(service) == 3
    assert selected_index(None) is None


def test_the_host_stays_while_its_pod_lives() -> None:
    pods = [worker(0, "Pending"), worker(1), worker(2)]
    assert choose_host("job", pods, [], current=0) == 0
    assert choose_host("job", pods, [], current=2) == 2


def test_when_the_host_goes_the_lowest_running_member_takes_over() -> None:
    pods = [worker(0, "Failed"), worker(1, "Pending"), worker(2), worker(3)]
    assert choose_host("job", pods, [], current=0) == 2
    going = [worker(0, deleting=True), worker(1), worker(5)]
    assert choose_host("job", going, [], current=0) == 1
    vanished = [worker(3), worker(4)]
    assert choose_host("job", vanished, [], current=0) == 3


def test_with_nothing_running_the_lowest_live_member_or_target() -> None:
    assert choose_host("job", [worker(4, "Pending"), worker(2, "Pending")], [], None) == 2
    assert choose_host("job", [], ["job-worker-3", "job-worker-1"], None) == 1
    assert choose_host("job", [], [], None) == 0
    other = {"metadata": {"name": "other-worker-0"}, "status": {"phase": "Running"}}
    assert choose_host("job", [other], [], None) == 0
