"""The garbage collector, driven over HTTP: background, foreground, orphan, dangling owners."""

from __future__ import annotations

import copy
from typing import Any

from etctl.runtime import CONFIGMAPS, FakeClock
from etctl.testing import ApiServer
from etctl.testing._controllers import GarbageCollector
from etctl.testing._kubelet import Kubelet
from tests.testing.apiserver._client import Api, configmap, widget
from tests.testing.kubelet._helpers import PODS, phase_is, pod, sim, wait_for, wait_gone

CM = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


def owned(name: str, *owners: dict[str, Any], block: bool = False, **meta: Any) -> dict[str, Any]:
    """A config map owned by ``owners``."""
    refs = []
    for owner in owners:
        ref = {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
        }
        if block:
            ref["blockOwnerDeletion"] = True
        refs.append(ref)
    return configmap(name, ownerReferences=refs, **meta)


def _refs(obj: dict[str, Any]) -> list[str]:
    return [r["name"] for r in obj["metadata"].get("ownerReferences") or []]


async def test_dependents_go_when_their_owner_is_deleted(api: Api) -> None:
    owner = await api.create(CM, configmap("owner"))
    await api.create(CM, owned("child", owner))
    child = (await api.get(f"{CM}/child")).body
    await api.create(CM, owned("grandchild", child))
    await api.delete(f"{CM}/owner")
    await wait_gone(api, CM, "grandchild")
    assert (await api.get(f"{CM}/child")).status == 404


async def test_owners_of_any_resource_are_followed(api: Api) -> None:
    owner = await api.create(WIDGETS, widget("w", color="red"))
    await api.create(CM, owned("config", owner))
    await api.delete(f"{WIDGETS}/w")
    await wait_gone(api, CM, "config")


async def test_a_dependent_with_another_owner_survives_without_the_gone_one(api: Api) -> None:
    first = await api.create(CM, configmap("first"))
    second = await api.create(CM, configmap("second"))
    await api.create(CM, owned("shared", first, second))
    await api.delete(f"{CM}/first")
    trimmed = await wait_for(api, CM, "shared", lambda o: _refs(o) == ["second"])
    assert trimmed["metadata"]["ownerReferences"][0]["uid"] == second["metadata"]["uid"]
    await api.delete(f"{CM}/second")
    await wait_gone(api, CM, "shared")


async def test_a_dependent_of_a_nonexistent_owner_is_deleted(api: Api) -> None:
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"},
    }
    await api.create(CM, owned("orphaned", ghost))
    await wait_gone(api, CM, "orphaned")


async def test_an_owner_reference_with_a_stale_uid_is_dangling(api: Api) -> None:
    await api.create(CM, configmap("owner"))
    impostor = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "owner", "uid": "11111111-1111-1111-1111-111111111111"},
    }
    await api.create(CM, owned("child", impostor))
    await wait_gone(api, CM, "child")
    assert (await api.get(f"{CM}/owner")).status == 200


async def test_an_unresolvable_owner_kind_keeps_its_dependent(api: Api, server: ApiServer) -> None:
    unknown = {
        "apiVersion": "nowhere.example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "uid": "22222222-2222-2222-2222-222222222222"},
    }
    await api.create(CM, owned("kept", unknown))
    collector = next(c for c in server.controllers if isinstance(c, GarbageCollector))
    collector.drain()
    assert (await api.get(f"{CM}/kept")).status == 200


async def test_foreground_deletion_waits_for_blocking_dependents(api: Api) -> None:
    owner = await api.create(CM, configmap("owner"))
    await api.create(CM, owned("blocker", owner, block=True, finalizers=["example.com/hold"]))
    await api.create(CM, owned("free", owner))
    reply = await api.delete(f"{CM}/owner", {"propagationPolicy": "Foreground"})
    assert reply.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    await wait_gone(api, CM, "free")
    held = await wait_for(
        api, CM, "blocker", lambda o: bool(o["metadata"].get("deletionTimestamp"))
    )
    waiting = (await api.get(f"{CM}/owner")).body
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert waiting["metadata"]["deletionTimestamp"]
    released = copy.deepcopy(held)
    released["metadata"]["finalizers"] = []
    assert (await api.put(f"{CM}/blocker", released)).status == 200
    await wait_gone(api, CM, "owner")


async def test_foreground_deletion_cascades_through_generations(api: Api) -> None:
    owner = await api.create(CM, configmap("owner"))
    child = await api.create(CM, owned("child", owner, block=True))
    await api.create(CM, owned("grandchild", child, block=True))
    await api.delete(f"{CM}/owner", {"propagationPolicy": "Foreground"})
    await wait_gone(api, CM, "owner")
    assert (await api.get(f"{CM}/child")).status == 404
    assert (await api.get(f"{CM}/grandchild")).status == 404


async def test_orphan_deletion_keeps_the_dependents_without_the_owner(api: Api) -> None:
    owner = await api.create(CM, configmap("owner"))
    await api.create(CM, owned("kept", owner))
    await api.delete(f"{CM}/owner", {"propagationPolicy": "Orphan"})
    await wait_gone(api, CM, "owner")
    kept = (await api.get(f"{CM}/kept")).body
    assert "ownerReferences" not in kept["metadata"]


async def test_a_cluster_scoped_owner_can_own_namespaced_dependents(api: Api) -> None:
    node = await api.create("/api/v1/nodes", {"metadata": {"name": "n"}})
    await api.create(CM, owned("per-node", node))
    await api.delete("/api/v1/nodes/n")
    await wait_gone(api, CM, "per-node")


async def test_what_was_stored_before_the_collector_started_is_collected() -> None:
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ghost", "uid": "33333333-3333-3333-3333-333333333333"},
    }
    async with ApiServer(controllers=False) as server:
        server.storage.create(CONFIGMAPS, owned("orphaned", ghost), namespace="default")
        collector = GarbageCollector(server.storage)
        collector.start(server)
        try:
            assert collector.pending >= 1
            assert collector.drain() >= 1
            assert collector.pending == 0
            assert server.storage.list(CONFIGMAPS, namespace="default").items == []
        finally:
            collector.stop()


async def test_foreground_deletion_waits_for_pods_to_terminate(
    api: Api, etctl_kubelet: Kubelet, clock: FakeClock
) -> None:
    owner = await api.create(WIDGETS, widget("job"))
    body = pod("worker", annotations=sim(stop_seconds=10))
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "name": "job",
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    await api.create(PODS, body)
    await wait_for(api, PODS, "worker", phase_is("Running"))
    await api.delete(f"{WIDGETS}/job", {"propagationPolicy": "Foreground"})
    await wait_for(api, PODS, "worker", lambda o: bool(o["metadata"].get("deletionTimestamp")))
    assert (await api.get(f"{WIDGETS}/job")).status == 200
    await clock.advance(10)
    await wait_gone(api, WIDGETS, "job")
    assert (await api.get(f"{PODS}/worker")).status == 404
