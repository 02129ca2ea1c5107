"""The built-in scheduler: fitting, spreading, selectors, taints, scheduler names and messages."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.runtime import ObjectView
from etctl.testing._kubelet import GPU, Kubelet, KubeletConfig, NodeConfig
from etctl.testing._kubelet.scheduler import node_matches, tolerates, unschedulable_message
from tests.testing.apiserver._client import Api
from tests.testing.kubelet._helpers import PODS, condition, phase_is, pod, pod_events, wait_for


def _asking(name: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    containers = [
        {"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": cpu}}}
    ]
    return pod(name, containers=containers, **spec)


def _scheduled(obj: dict[str, Any]) -> bool:
    return condition(obj, "PodScheduled").get("status") == "True"


async def test_pods_are_bound_to_the_least_allocated_node(api: Api, kubelet: Kubelet) -> None:
    placed = []
    for index in range(4):
        await api.create(PODS, _asking(f"p{index}"))
        bound = await wait_for(api, PODS, f"p{index}", phase_is("Running"))
        placed.append(bound["spec"]["nodeName"])
    assert placed == ["node-0", "node-1", "node-0", "node-1"]
    assert ("Scheduled", "Successfully assigned default/p0 to node-0") in await pod_events(
        api, "p0"
    )


async def test_pods_without_requests_are_spread_too(api: Api, kubelet: Kubelet) -> None:
    for name in ("a", "b"):
        await api.create(PODS, pod(name))
    a = await wait_for(api, PODS, "a", phase_is("Running"))
    b = await wait_for(api, PODS, "b", phase_is("Running"))
    assert {a["spec"]["nodeName"], b["spec"]["nodeName"]} == {"node-0", "node-1"}


async def test_a_pod_that_fits_nowhere_is_unschedulable_until_room_is_made(
    api: Api, kubelet: Kubelet
) -> None:
    await api.create(PODS, _asking("big-0", cpu="3"))
    await api.create(PODS, _asking("big-1", cpu="3"))
    await wait_for(api, PODS, "big-1", phase_is("Running"))
    await api.create(PODS, _asking("big-2", cpu="3"))
    waiting = await wait_for(
        api, PODS, "big-2", lambda o: condition(o, "PodScheduled").get("status") == "False"
    )
    message = (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod."
    )
    assert condition(waiting, "PodScheduled") == {
        "type": "PodScheduled",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "Unschedulable",
        "message": message,
    }
    assert waiting["status"]["phase"] == "Pending"
    assert ("FailedScheduling", message) in await pod_events(api, "big-2")
    await api.delete(f"{PODS}/big-0", {"gracePeriodSeconds": 0})
    bound = await wait_for(api, PODS, "big-2", phase_is("Running"))
    assert bound["spec"]["nodeName"] == "node-0"


async def test_finished_pods_free_their_resources(api: Api, kubelet: Kubelet) -> None:
    for name in ("done-0", "done-1"):
        body = _asking(name, cpu="3", restart="Never")
        body["metadata"]["annotations"] = {"sim.etctl.io/run-seconds": "0"}
        await api.create(PODS, body)
        await wait_for(api, PODS, name, phase_is("Succeeded"))
    await api.create(PODS, _asking("next", cpu="3"))
    await wait_for(api, PODS, "next", phase_is("Running"))


async def test_node_selectors_and_affinity_pick_nodes(api: Api, kubelet: Kubelet) -> None:
    await api.create(PODS, pod("pinned", nodeSelector={"kubernetes.io/hostname": "node-1"}))
    assert (await wait_for(api, PODS, "pinned", _scheduled))["spec"]["nodeName"] == "node-1"
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                ]
            }
        }
    }
    await api.create(PODS, pod("nowhere", affinity=affinity))
    waiting = await wait_for(
        api, PODS, "nowhere", lambda o: condition(o, "PodScheduled").get("status") == "False"
    )
    assert condition(waiting, "PodScheduled")["message"] == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


class TestTaints:
    @pytest.fixture
    def etctl_kubelet_config(self) -> KubeletConfig:
        taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
        return KubeletConfig(
            nodes=(
                NodeConfig(name="cpu-0", cpu="2"),
                NodeConfig(name="gpu-0", cpu="2", gpus=2, taints=(taint,)),
            )
        )

    async def test_taints_keep_pods_away_unless_tolerated(self, api: Api, kubelet: Kubelet) -> None:
        containers = [{"name": "main", "image": "cuda:12", "resources": {"limits": {GPU: "1"}}}]
        await api.create(PODS, pod("trainer", containers=containers))
        waiting = await wait_for(
            api, PODS, "trainer", lambda o: condition(o, "PodScheduled").get("status") == "False"
        )
        assert condition(waiting, "PodScheduled")["message"] == (
            "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated "
            "taint {dedicated: gpu}. preemption: 0/2 nodes are available: 1 No preemption victims "
            "found for incoming pod, 1 Preemption is not helpful for scheduling."
        )
        toleration = {
            "key": "dedicated",
            "operator": "Equal",
            "value": "gpu",
            "effect": "NoSchedule",
        }
        await api.create(PODS, pod("tolerant", containers=containers, tolerations=[toleration]))
        bound = await wait_for(api, PODS, "tolerant", phase_is("Running"))
        assert bound["spec"]["nodeName"] == "gpu-0"


class TestSchedulerNames:
    @pytest.fixture
    def etctl_kubelet_config(self) -> KubeletConfig:
        return KubeletConfig(scheduler_names=frozenset({"default-scheduler"}))

    async def test_only_the_configured_scheduler_names_are_served(
        self, api: Api, kubelet: Kubelet
    ) -> None:
        await api.create(PODS, pod("gang", schedulerName="volcano"))
        await api.create(PODS, pod("plain"))
        await wait_for(api, PODS, "plain", phase_is("Running"))
        gang = (await api.get(f"{PODS}/gang")).body
        assert "nodeName" not in gang["spec"]
        assert condition(gang, "PodScheduled") == {}


class TestTooManyPods:
    @pytest.fixture
    def etctl_kubelet_config(self) -> KubeletConfig:
        return KubeletConfig.uniform(1, pods=1)

    async def test_the_pod_count_is_a_resource(self, api: Api, kubelet: Kubelet) -> None:
        await api.create(PODS, pod("first"))
        await wait_for(api, PODS, "first", phase_is("Running"))
        await api.create(PODS, pod("second"))
        waiting = await wait_for(
            api, PODS, "second", lambda o: condition(o, "PodScheduled").get("status") == "False"
        )
        assert condition(waiting, "PodScheduled")["message"].startswith(
            "0/1 nodes are available: 1 Too many pods."
        )


async def test_a_node_name_set_by_hand_bypasses_the_scheduler(api: Api, kubelet: Kubelet) -> None:
    await api.create(PODS, pod("direct", nodeName="node-1"))
    running = await wait_for(api, PODS, "direct", phase_is("Running"))
    assert condition(running, "PodScheduled")["status"] == "True"
    assert "Scheduled" not in [reason for reason, _ in await pod_events(api, "direct")]


async def test_a_hand_placed_pod_that_does_not_fit_is_rejected_by_the_kubelet(
    api: Api, kubelet: Kubelet
) -> None:
    await api.create(PODS, _asking("huge", cpu="6", nodeName="node-0"))
    rejected = await wait_for(api, PODS, "huge", phase_is("Failed"))
    assert rejected["status"]["reason"] == "OutOfcpu"
    assert rejected["status"]["message"] == (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 6000, used: 0, "
        "capacity: 4000"
    )
    assert "containerStatuses" not in rejected["status"]


def test_messages_when_there_are_no_nodes_or_no_preemption() -> None:
    never: ObjectView = {"spec": {"preemptionPolicy": "Never"}}
    assert unschedulable_message(never, 0, []) == "no nodes available to schedule pods"


def test_toleration_matching() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert tolerates([{"operator": "Exists"}], taint)
    assert tolerates([{"key": "k", "operator": "Exists"}], taint)
    assert tolerates([{"key": "k", "value": "v"}], taint)
    assert not tolerates([{"key": "k", "value": "w"}], taint)
    assert not tolerates([{"key": "k", "operator": "Exists", "effect": "NoExecute"}], taint)


def test_node_affinity_operators() -> None:
    node: ObjectView = {"metadata": {"name": "n", "labels": {"zone": "a", "cores": "8"}}}

    def spec(*expressions: dict[str, object]) -> dict[str, object]:
        term = {"matchExpressions": list(expressions)}
        required = {"nodeSelectorTerms": [term]}
        return {
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
            }
        }

    assert node_matches(spec({"key": "zone", "operator": "In", "values": ["a", "b"]}), node)
    assert node_matches(spec({"key": "zone", "operator": "NotIn", "values": ["b"]}), node)
    assert node_matches(spec({"key": "gpu", "operator": "DoesNotExist"}), node)
    assert node_matches(spec({"key": "cores", "operator": "Gt", "values": ["4"]}), node)
    assert not node_matches(spec({"key": "cores", "operator": "Lt", "values": ["4"]}), node)
    assert not node_matches(
        spec({"key": "zone", "operator": "Exists"}, {"key": "x", "operator": "Exists"}), node
    )
    fields = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
    by_name = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [fields]}
            }
        }
    }
    assert node_matches(by_name, node)
    assert not node_matches({"nodeSelector": {"zone": "b"}}, node)
