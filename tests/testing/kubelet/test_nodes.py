"""Nodes: registration, typed models, leases, and losing a node."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from etctl.runtime import FakeClock
from etctl.testing import ApiServer
from etctl.testing._kubelet import Kubelet
from tests.testing.apiserver._client import Api
from tests.testing.kubelet._helpers import (
    NODES,
    PODS,
    condition,
    container_state,
    phase_is,
    pod,
    pod_events,
    sim,
    wait_for,
    wait_gone,
)

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


@pytest.fixture
async def core(server: ApiServer) -> AsyncIterator[Any]:
    configuration = client.Configuration()
    configuration.host = server.url
    async with client.ApiClient(configuration) as api_client:
        yield client.CoreV1Api(api_client)


async def test_nodes_are_registered_ready_with_their_resources(api: Api, kubelet: Kubelet) -> None:
    nodes = (await api.get(NODES)).body["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["node-0", "node-1"]
    node = nodes[1]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-1"
    assert node["spec"]["podCIDR"] == "10.244.1.0/24"
    status = node["status"]
    assert status["allocatable"]["cpu"] == "4"
    assert status["allocatable"]["memory"] == "8Gi"
    assert status["allocatable"]["pods"] == "10"
    assert status["capacity"] == status["allocatable"]
    assert condition(node, "Ready")["reason"] == "KubeletReady"
    assert condition(node, "Ready")["status"] == "True"
    assert condition(node, "MemoryPressure")["status"] == "False"
    assert status["addresses"] == [
        {"type": "InternalIP", "address": "172.18.0.3"},
        {"type": "Hostname", "address": "node-1"},
    ]
    assert status["nodeInfo"]["kubeletVersion"] == "v1.32.0"


async def test_every_written_object_deserializes_into_typed_models(
    api: Api, core: Any, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("run"))
    await api.create(PODS, pod("crash", annotations=sim(run_seconds=0, exit_code=1)))
    await api.create(PODS, pod("pull", annotations=sim(fail_start="ErrImagePull")))
    await api.create(PODS, pod("done", restart="Never", annotations=sim(run_seconds=0)))
    await api.create(
        PODS,
        pod(
            "init",
            init=[{"name": "setup", "image": "busybox:1.36"}],
            annotations=sim(evict_after=1),
        ),
    )
    await wait_for(api, PODS, "crash", lambda o: container_state(o)["restartCount"] == 1)
    await wait_for(api, PODS, "done", phase_is("Succeeded"))
    await clock.advance(1)
    await wait_for(api, PODS, "init", phase_is("Failed"))
    pods = await core.list_namespaced_pod("default")
    by_name = {p.metadata.name: p for p in pods.items}
    assert by_name["run"].status.container_statuses[0].state.running.started_at is not None
    crash = by_name["crash"].status.container_statuses[0]
    assert crash.state.waiting.reason == "CrashLoopBackOff"
    assert crash.last_state.terminated.exit_code == 1
    assert by_name["done"].status.container_statuses[0].state.terminated.reason == "Completed"
    assert by_name["init"].status.reason == "Evicted"
    assert by_name["init"].status.init_container_statuses[0].state.terminated.exit_code == 0
    nodes = await core.list_node()
    assert nodes.items[0].status.node_info.architecture == "amd64"
    assert nodes.items[0].status.daemon_endpoints.kubelet_endpoint.port == 10250
    events = await core.list_namespaced_event("default")
    assert {e.reason for e in events.items} >= {"Scheduled", "Started", "BackOff", "Evicted"}


async def test_node_leases_are_renewed_on_the_clock(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    lease = (await api.get(f"{LEASES}/node-0")).body
    assert lease["spec"]["holderIdentity"] == "node-0"
    assert lease["spec"]["renewTime"] == "2026-01-01T00:00:00.000000Z"
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    await clock.advance(10)
    renewed = await wait_for(
        api,
        LEASES,
        "node-0",
        lambda o: o["spec"]["renewTime"] == "2026-01-01T00:00:10.000000Z",
    )
    assert renewed["spec"]["leaseDurationSeconds"] == 40


async def test_the_node_status_is_restored_by_the_next_heartbeat(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    node = (await api.get(f"{NODES}/node-0")).body
    for entry in node["status"]["conditions"]:
        if entry["type"] == "Ready":
            entry["status"] = "False"
    await api.put(f"{NODES}/node-0/status", node)
    await clock.advance(300)
    healed = await wait_for(
        api, NODES, "node-0", lambda o: condition(o, "Ready")["status"] == "True"
    )
    assert condition(healed, "Ready")["lastHeartbeatTime"] == "2026-01-01T00:05:00Z"


async def test_a_lost_node_freezes_its_pods_until_it_recovers(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("stuck", nodeName="node-0"))
    await wait_for(api, PODS, "stuck", phase_is("Running"))
    kubelet.fail_node("node-0")
    node = (await api.get(f"{NODES}/node-0")).body
    assert condition(node, "Ready")["status"] == "Unknown"
    assert condition(node, "Ready")["message"] == "Kubelet stopped posting node status."
    assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
    unready = (await api.get(f"{PODS}/stuck")).body
    assert condition(unready, "Ready")["status"] == "False"
    assert "running" in container_state(unready)["state"]
    await api.create(PODS, pod("elsewhere"))
    assert (await wait_for(api, PODS, "elsewhere", phase_is("Running")))["spec"][
        "nodeName"
    ] == "node-1"
    await clock.advance(300)
    terminating = await wait_for(
        api, PODS, "stuck", lambda o: bool(o["metadata"].get("deletionTimestamp"))
    )
    assert "running" in container_state(terminating)["state"]
    assert ("TaintManagerEviction", "Marking for deletion Pod default/stuck") in await pod_events(
        api, "stuck"
    )
    await clock.advance(600)
    assert (await api.get(f"{PODS}/stuck")).status == 200
    kubelet.recover_node("node-0")
    await wait_gone(api, PODS, "stuck")
    healthy = (await api.get(f"{NODES}/node-0")).body
    assert condition(healthy, "Ready")["status"] == "True"
    assert "taints" not in healthy["spec"]
