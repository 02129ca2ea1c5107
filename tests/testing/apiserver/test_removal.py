"""Conformance: deletes (preconditions, propagation, finalizers, graceful pods, namespaces)."""

from __future__ import annotations

import copy

from etctl.runtime import FakeClock
from etctl.testing import ApiServer
from tests.testing.apiserver._client import PODS, Api, configmap, open_watch, pod

CM = "/api/v1/namespaces/default/configmaps"


async def test_delete_returns_a_success_status_for_kinds_that_do_not_return_the_object(
    api: Api,
) -> None:
    created = await api.create(CM, configmap("a"))
    reply = await api.delete(f"{CM}/a")
    assert reply.status == 200
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    assert (await api.get(f"{CM}/a")).status == 404


async def test_delete_of_a_pod_returns_the_pod(api: Api) -> None:
    await api.create(PODS, pod("p"))
    reply = await api.delete(f"{PODS}/p")
    assert reply.status == 200
    assert reply.body["kind"] == "Pod"
    assert (await api.get(f"{PODS}/p")).status == 404


async def test_delete_of_a_missing_object_is_404(api: Api) -> None:
    reply = await api.delete(f"{CM}/nope")
    assert reply.status == 404
    assert reply.body["message"] == 'configmaps "nope" not found'


async def test_uid_precondition_mismatch_is_409(api: Api) -> None:
    created = await api.create(CM, configmap("a"))
    reply = await api.delete(f"{CM}/a", {"preconditions": {"uid": "other"}})
    assert reply.status == 409
    assert reply.body["message"] == (
        'Operation cannot be fulfilled on configmaps "a": Precondition failed: UID in '
        f"precondition: other, UID in object meta: {created['metadata']['uid']}"
    )
    ok = await api.delete(f"{CM}/a", {"preconditions": {"uid": created["metadata"]["uid"]}})
    assert ok.status == 200


async def test_resource_version_precondition_mismatch_is_409(api: Api) -> None:
    created = await api.create(CM, configmap("a"))
    rv = created["metadata"]["resourceVersion"]
    reply = await api.delete(f"{CM}/a", {"preconditions": {"resourceVersion": "1"}})
    assert reply.status == 409
    assert reply.body["message"].endswith(
        "Precondition failed: ResourceVersion in precondition: 1, "
        f"ResourceVersion in object meta: {rv}"
    )


async def test_finalizers_hold_the_object_with_a_deletion_timestamp(
    api: Api, clock: FakeClock
) -> None:
    await clock.advance(10)
    await api.create(CM, configmap("a", finalizers=["example.com/hold"]))
    await clock.advance(5)
    reply = await api.delete(f"{CM}/a")
    assert reply.status == 200
    meta = reply.body["metadata"]
    assert meta["deletionTimestamp"] == "2026-01-01T00:00:15Z"
    assert meta["deletionGracePeriodSeconds"] == 0
    assert meta["finalizers"] == ["example.com/hold"]
    held = (await api.get(f"{CM}/a")).body
    assert held["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:15Z"


async def test_removing_the_last_finalizer_removes_the_object(api: Api) -> None:
    await api.create(CM, configmap("a", finalizers=["example.com/hold"]))
    async with open_watch(api, CM) as stream:
        assert (await stream.next())["type"] == "ADDED"
        held = (await api.delete(f"{CM}/a")).body
        assert (await stream.next())["type"] == "MODIFIED"
        held["metadata"]["finalizers"] = []
        reply = await api.put(f"{CM}/a", held)
        assert reply.status == 200
        assert (await stream.next())["type"] == "DELETED"
    assert (await api.get(f"{CM}/a")).status == 404


async def test_no_new_finalizers_once_deleting(api: Api) -> None:
    await api.create(CM, configmap("a", finalizers=["example.com/hold"]))
    held = (await api.delete(f"{CM}/a")).body
    held["metadata"]["finalizers"].append("example.com/another")
    reply = await api.put(f"{CM}/a", held)
    assert reply.status == 422
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: no new finalizers can be added if the object is being deleted, "
            'found new finalizers []string{"example.com/another"}',
            "field": "metadata.finalizers",
        }
    ]


async def test_foreground_deletion_adds_the_foreground_finalizer(api: Api) -> None:
    await api.create(CM, configmap("a"))
    reply = await api.delete(f"{CM}/a", {"propagationPolicy": "Foreground"})
    assert reply.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert reply.body["metadata"]["deletionTimestamp"]
    assert (await api.get(f"{CM}/a")).status == 200


async def test_orphan_deletion_adds_the_orphan_finalizer(api: Api) -> None:
    await api.create(CM, configmap("a"))
    reply = await api.delete(f"{CM}/a", params={"propagationPolicy": "Orphan"})
    assert reply.body["metadata"]["finalizers"] == ["orphan"]


async def test_background_deletion_removes_at_once(api: Api) -> None:
    await api.create(CM, configmap("a"))
    reply = await api.delete(f"{CM}/a", {"propagationPolicy": "Background"})
    assert reply.body["status"] == "Success"


async def test_unknown_propagation_policy_is_invalid(api: Api) -> None:
    await api.create(CM, configmap("a"))
    reply = await api.delete(f"{CM}/a", {"propagationPolicy": "Sideways"})
    assert reply.status == 422
    assert reply.body["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"'
    )


async def test_generation_is_bumped_when_deletion_starts(api: Api, widgets: ApiServer) -> None:
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "finalizers": ["example.com/hold"]},
        "spec": {"color": "red"},
    }
    path = "/apis/example.com/v1/namespaces/default/widgets"
    await api.create(path, body)
    reply = await api.delete(f"{path}/w")
    assert reply.body["metadata"]["generation"] == 2


async def test_a_scheduled_pod_is_deleted_gracefully(
    api: Api, server: ApiServer, clock: FakeClock
) -> None:
    await api.create(PODS, pod("p"))
    server.storage.bind("p", "node-1", namespace="default")
    reply = await api.delete(f"{PODS}/p")
    assert reply.status == 200
    meta = reply.body["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30
    assert meta["deletionTimestamp"] == "2026-01-01T00:00:30Z"
    assert (await api.get(f"{PODS}/p")).status == 200
    shorter = await api.delete(f"{PODS}/p", {"gracePeriodSeconds": 5})
    assert shorter.body["metadata"]["deletionGracePeriodSeconds"] == 5
    assert shorter.body["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:05Z"
    longer = await api.delete(f"{PODS}/p", {"gracePeriodSeconds": 60})
    assert longer.body["metadata"]["deletionGracePeriodSeconds"] == 5
    final = await api.delete(f"{PODS}/p", {"gracePeriodSeconds": 0})
    assert final.status == 200
    assert (await api.get(f"{PODS}/p")).status == 404


async def test_an_unscheduled_pod_is_deleted_at_once_after_a_marking_update(api: Api) -> None:
    await api.create(PODS, pod("p"))
    async with open_watch(api, PODS) as stream:
        await stream.next()
        await api.delete(f"{PODS}/p")
        marked, deleted = await stream.take(2)
    assert marked["type"] == "MODIFIED"
    assert marked["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert deleted["type"] == "DELETED"


async def test_deletecollection_with_a_label_selector(api: Api) -> None:
    await api.create(CM, configmap("a", labels={"drop": "yes"}))
    await api.create(CM, configmap("b", labels={"drop": "yes"}))
    await api.create(CM, configmap("c"))
    reply = await api.delete(CM, params={"labelSelector": "drop=yes"})
    assert reply.status == 200
    assert reply.body["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["a", "b"]
    left = (await api.get(CM)).body["items"]
    assert [i["metadata"]["name"] for i in left] == ["c"]


async def test_deleting_a_namespace_marks_it_terminating(api: Api, clock: FakeClock) -> None:
    await api.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    await clock.advance(3)
    reply = await api.delete("/api/v1/namespaces/team")
    assert reply.status == 200
    assert reply.body["kind"] == "Namespace"
    assert reply.body["status"]["phase"] == "Terminating"
    assert reply.body["spec"]["finalizers"] == ["kubernetes"]
    assert reply.body["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:03Z"
    again = await api.delete("/api/v1/namespaces/team")
    assert again.status == 409
    assert again.body["message"] == (
        'Operation cannot be fulfilled on namespaces "team": The system is ensuring all content '
        "is removed from this namespace.  Upon completion, this namespace will automatically be "
        "purged by the system."
    )


async def test_creating_in_a_terminating_namespace_is_403(api: Api) -> None:
    await api.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    await api.delete("/api/v1/namespaces/team")
    reply = await api.post("/api/v1/namespaces/team/configmaps", configmap("a"))
    assert reply.status == 403
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "a" is forbidden: unable to create new content in namespace team '
        "because it is being terminated",
        "reason": "Forbidden",
        "details": {
            "name": "a",
            "kind": "configmaps",
            "causes": [
                {
                    "reason": "NamespaceTerminating",
                    "message": "namespace team is being terminated",
                    "field": "metadata.namespace",
                }
            ],
        },
        "code": 403,
    }


async def test_finalize_then_delete_removes_a_namespace(api: Api) -> None:
    await api.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    terminating = (await api.delete("/api/v1/namespaces/team")).body
    finalize = copy.deepcopy(terminating)
    finalize["spec"]["finalizers"] = []
    reply = await api.put("/api/v1/namespaces/team/finalize", finalize)
    assert reply.status == 200
    assert reply.body["spec"]["finalizers"] == []
    gone = await api.delete("/api/v1/namespaces/team")
    assert gone.status == 200
    assert (await api.get("/api/v1/namespaces/team")).status == 404


async def test_namespace_spec_finalizers_change_only_through_finalize(api: Api) -> None:
    created = (await api.post("/api/v1/namespaces", {"metadata": {"name": "team"}})).body
    created["spec"]["finalizers"] = []
    reply = await api.put("/api/v1/namespaces/team", created)
    assert reply.body["spec"]["finalizers"] == ["kubernetes"]


async def test_initial_namespaces_cannot_be_deleted(api: Api) -> None:
    names = [i["metadata"]["name"] for i in (await api.get("/api/v1/namespaces")).body["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    reply = await api.delete("/api/v1/namespaces/default")
    assert reply.status == 403
    assert (
        reply.body["message"]
        == 'namespaces "default" is forbidden: this namespace may not be deleted'
    )
