"""The kubelet itself: attaching, adopting pods, isolating failures, its lookup errors."""

from __future__ import annotations

import asyncio

import pytest

from etctl.runtime import PODS as POD_RESOURCE
from etctl.runtime import FakeClock, ObjectView
from etctl.testing import ApiServer
from etctl.testing._kubelet import Behaviour, Kubelet, KubeletConfig, PodPolicy
from tests.testing.apiserver._client import Api
from tests.testing.kubelet._helpers import PODS, phase_is, pod, wait_for


async def test_pods_bound_before_the_kubelet_starts_are_adopted(clock: FakeClock) -> None:
    async with ApiServer(clock=clock) as server:
        server.storage.create(POD_RESOURCE, pod("early", nodeName="node-0"), namespace="default")
        kubelet = Kubelet(server, KubeletConfig())
        kubelet.start()
        try:
            kubelet.sync("default", "early")
            status = server.storage.get(POD_RESOURCE, "early", namespace="default")["status"]
            assert status["phase"] == "Running"
            root = kubelet.sandboxes.root if kubelet.sandboxes else None
        finally:
            kubelet.stop()
        assert root is not None
        assert not root.exists()


async def test_a_failing_pod_does_not_stop_the_kubelet(api: Api, kubelet: Kubelet) -> None:
    def broken(pod: ObjectView, container: str, restarts: int) -> Behaviour:
        msg = "a bug in a policy"
        raise RuntimeError(msg)

    kubelet.add_policy(PodPolicy(name="broken", does=broken))
    await api.create(PODS, pod("broken"))
    await api.create(PODS, pod("fine"))
    await wait_for(api, PODS, "fine", phase_is("Running"))
    assert kubelet.running


async def test_policies_can_be_removed(api: Api, kubelet: Kubelet) -> None:
    remove = kubelet.add_policy(PodPolicy(does=Behaviour(stay_pending=True)))
    remove()
    remove()
    await api.create(PODS, pod("runs"))
    await wait_for(api, PODS, "runs", phase_is("Running"))


async def test_lookups_of_pods_that_are_not_here(api: Api, kubelet: Kubelet) -> None:
    with pytest.raises(LookupError, match="not running on this kubelet"):
        kubelet.evict("default", "ghost")
    await api.create(
        PODS, pod("idle", restart="Never", annotations={"sim.etctl.io/stay-pending": "true"})
    )
    await wait_for(api, PODS, "idle", lambda o: bool(o["spec"].get("nodeName")))
    with pytest.raises(LookupError, match="no running container in pod default/idle"):
        kubelet.exit("default", "idle", 1)
    with pytest.raises(LookupError, match='container not found \\("main"\\)'):
        kubelet.exec("default", "idle", ["true"])
    with pytest.raises(LookupError, match='container "nope" not found'):
        kubelet.logs("default", "idle", container="nope")
    with pytest.raises(LookupError, match="previous terminated container"):
        kubelet.logs("default", "idle", previous=True)


async def test_idle_until_a_new_pod_is_synced_and_again_until_its_timer_is_due(
    clock: FakeClock,
) -> None:
    async with ApiServer(clock=clock, kubelet=KubeletConfig()) as server:
        kubelet = server.kubelet
        assert kubelet is not None
        await wait_until_idle(kubelet)
        server.storage.create(
            POD_RESOURCE,
            pod("slow", annotations={"sim.etctl.io/start-delay": "5"}),
            namespace="default",
        )
        assert not idle(kubelet)  # the change waits for the loop
        await wait_until_idle(kubelet)
        await clock.settle()
        assert idle(kubelet)  # the container starts in 5 s: nothing to do until then
        await clock.advance(5)
        await wait_until_idle(kubelet)
        status = server.storage.get(POD_RESOURCE, "slow", namespace="default")["status"]
        assert status["phase"] == "Running"
    assert idle(kubelet)  # stopped


def idle(kubelet: Kubelet) -> bool:
    return kubelet.idle


async def wait_until_idle(kubelet: Kubelet) -> None:
    for _ in range(1000):
        if kubelet.idle:
            return
        await asyncio.sleep(0)
    raise AssertionError("the kubelet never became idle")
