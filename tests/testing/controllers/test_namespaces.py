"""The namespace controller: terminating namespaces are emptied, finalized and removed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from etctl.runtime import NAMESPACES as NAMESPACE_RESOURCE
from etctl.runtime import FakeClock
from etctl.testing import ApiServer
from etctl.testing._controllers import NamespaceController
from etctl.testing._kubelet import Kubelet
from tests.testing.apiserver._client import Api, configmap, widget
from tests.testing.kubelet._helpers import condition, phase_is, pod, sim, wait_for, wait_gone

NAMESPACES = "/api/v1/namespaces"
CM = "/api/v1/namespaces/team/configmaps"
PODS = "/api/v1/namespaces/team/pods"
WIDGETS = "/apis/example.com/v1/namespaces/team/widgets"


@pytest.fixture
async def team(api: Api) -> dict[str, Any]:
    return await api.create(NAMESPACES, {"metadata": {"name": "team"}})


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"])
        for c in obj["status"].get("conditions") or []
    }


async def test_a_deleted_namespace_is_emptied_and_removed(api: Api, team: dict[str, Any]) -> None:
    await api.create(CM, configmap("a"))
    await api.create(CM, configmap("b"))
    await api.create(WIDGETS, widget("w", color="blue"))
    reply = await api.delete(f"{NAMESPACES}/team")
    assert reply.body["status"]["phase"] == "Terminating"
    await wait_gone(api, NAMESPACES, "team")
    assert (await api.get(f"{CM}/a")).status == 404
    listed = await api.get(
        "/api/v1/configmaps", params={"fieldSelector": "metadata.namespace=team"}
    )
    assert listed.body["items"] == []


async def test_finalizers_keep_the_namespace_terminating_and_say_so(
    api: Api, team: dict[str, Any]
) -> None:
    await api.create(CM, configmap("held", finalizers=["example.com/hold"]))
    await api.create(
        WIDGETS, {**widget("w"), "metadata": {"name": "w", "finalizers": ["example.com/hold"]}}
    )
    await api.delete(f"{NAMESPACES}/team")
    held = await wait_for(
        api,
        NAMESPACES,
        "team",
        lambda o: condition(o, "NamespaceFinalizersRemaining").get("status") == "True",
    )
    assert _conditions(held) == {
        "NamespaceDeletionDiscoveryFailure": (
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure": (
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure": (
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        "NamespaceContentRemaining": (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: configmaps. has 1 resource instances, "
            "widgets.example.com has 1 resource instances",
        ),
        "NamespaceFinalizersRemaining": (
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: example.com/hold in 2 "
            "resource instances",
        ),
    }
    assert held["status"]["phase"] == "Terminating"
    assert held["spec"]["finalizers"] == ["kubernetes"]
    for path, name in ((CM, "held"), (WIDGETS, "w")):
        current = (await api.get(f"{path}/{name}")).body
        assert current["metadata"]["deletionTimestamp"]
        released = copy.deepcopy(current)
        released["metadata"]["finalizers"] = []
        assert (await api.put(f"{path}/{name}", released)).status == 200
    await wait_gone(api, NAMESPACES, "team")


async def test_the_namespace_waits_for_its_pods_to_terminate(
    api: Api, team: dict[str, Any], etctl_kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("worker", annotations=sim(stop_seconds=20)))
    await wait_for(api, PODS, "worker", phase_is("Running"))
    await api.delete(f"{NAMESPACES}/team")
    terminating = await wait_for(
        api,
        NAMESPACES,
        "team",
        lambda o: condition(o, "NamespaceContentRemaining").get("status") == "True",
    )
    assert condition(terminating, "NamespaceContentRemaining")["message"] == (
        "Some resources are remaining: pods. has 1 resource instances"
    )
    assert condition(terminating, "NamespaceFinalizersRemaining")["status"] == "False"
    await clock.advance(19)
    assert (await api.get(f"{NAMESPACES}/team")).status == 200
    await clock.advance(1)
    await wait_gone(api, NAMESPACES, "team")


async def test_namespaces_terminating_before_the_controller_started_are_finished() -> None:
    async with ApiServer(controllers=False) as server:
        server.storage.create(NAMESPACE_RESOURCE, {"metadata": {"name": "old"}})
        server.storage.delete(NAMESPACE_RESOURCE, "old")
        controller = NamespaceController(server.storage)
        controller.start(server)
        try:
            assert controller.pending == 1
            controller.drain()
            assert controller.pending == 0
            names = [n["metadata"]["name"] for n in server.storage.list(NAMESPACE_RESOURCE).items]
            assert "old" not in names
        finally:
            controller.stop()
