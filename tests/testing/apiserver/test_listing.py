"""Conformance: lists, paging with consistent snapshots, resourceVersion semantics, selectors."""

from __future__ import annotations

import base64
import json

from etctl.testing import ApiServer
from tests.testing.apiserver._client import PODS, Api, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"


async def _make(api: Api, *names: str, **meta: object) -> None:
    for name in names:
        await api.create(CM, configmap(name, **meta))  # type: ignore[arg-type]


async def test_list_has_kind_list_resource_version_and_items_in_name_order(
    api: Api, server: ApiServer
) -> None:
    await _make(api, "b", "a", "c")
    reply = await api.get(CM)
    assert reply.status == 200
    assert reply.body["kind"] == "ConfigMapList"
    assert reply.body["apiVersion"] == "v1"
    assert reply.body["metadata"] == {"resourceVersion": str(server.store.rv)}
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["a", "b", "c"]
    assert "kind" not in reply.body["items"][0]
    assert "apiVersion" not in reply.body["items"][0]


async def test_cluster_wide_list_spans_namespaces(api: Api) -> None:
    await api.create("/api/v1/namespaces/kube-system/configmaps", configmap("x"))
    await _make(api, "y")
    reply = await api.get("/api/v1/configmaps")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in reply.body["items"]] == [
        ("default", "y"),
        ("kube-system", "x"),
    ]


async def test_limit_and_continue_page_through_a_consistent_snapshot(api: Api) -> None:
    await _make(api, "a", "b", "c", "d", "e")
    first = (await api.get(CM, params={"limit": "2"})).body
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b"]
    token = first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 3
    await api.delete(f"{CM}/c")
    await _make(api, "bb")
    second = (await api.get(CM, params={"limit": "2", "continue": token})).body
    assert [i["metadata"]["name"] for i in second["items"]] == ["c", "d"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    third = (
        await api.get(CM, params={"limit": "2", "continue": second["metadata"]["continue"]})
    ).body
    assert [i["metadata"]["name"] for i in third["items"]] == ["e"]
    assert "continue" not in third["metadata"]


async def test_continue_token_has_the_real_servers_shape(api: Api, server: ApiServer) -> None:
    await _make(api, "a", "b")
    token = (await api.get(CM, params={"limit": "1"})).body["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert decoded == {"v": "meta.k8s.io/v1", "rv": server.store.rv, "start": "default/a\u0000"}


async def test_expired_continue_token_is_410_with_an_inconsistent_token(
    api: Api, server: ApiServer
) -> None:
    await _make(api, "a", "b", "c")
    token = (await api.get(CM, params={"limit": "1"})).body["metadata"]["continue"]
    await _make(api, "d")
    server.store.compact()
    reply = await api.get(CM, params={"limit": "1", "continue": token})
    assert reply.status == 410
    assert reply.body["reason"] == "Expired"
    assert reply.body["message"].startswith(
        "The provided continue parameter is too old to display a consistent list result."
    )
    inconsistent = reply.body["metadata"]["continue"]
    rest = (await api.get(CM, params={"continue": inconsistent})).body
    assert [i["metadata"]["name"] for i in rest["items"]] == ["b", "c", "d"]


async def test_garbage_continue_token_is_400(api: Api) -> None:
    reply = await api.get(CM, params={"continue": "not-a-token"})
    assert reply.status == 400
    assert reply.body["message"].startswith("invalid continue token: continue key is not valid")


async def test_list_at_an_exact_resource_version_reads_the_snapshot(api: Api) -> None:
    await _make(api, "a")
    rv = (await api.get(CM)).body["metadata"]["resourceVersion"]
    await _make(api, "b")
    await api.delete(f"{CM}/a")
    reply = await api.get(CM, params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
    assert reply.body["metadata"]["resourceVersion"] == rv
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["a"]


async def test_list_at_a_compacted_exact_resource_version_is_410(
    api: Api, server: ApiServer
) -> None:
    await _make(api, "a")
    rv = (await api.get(CM)).body["metadata"]["resourceVersion"]
    await _make(api, "b")
    server.store.compact()
    reply = await api.get(CM, params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
    assert reply.status == 410
    assert reply.body["reason"] == "Expired"
    assert reply.body["message"] == "The resourceVersion for the provided list is too old."


async def test_a_list_at_an_old_resource_version_without_exact_reads_the_latest_state(
    api: Api, server: ApiServer
) -> None:
    await _make(api, "a")
    rv = (await api.get(CM)).body["metadata"]["resourceVersion"]
    await _make(api, "b")
    server.store.compact()  # what a real server's watch cache serves is never too old
    for params in (
        {"resourceVersion": rv},
        {"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"},
    ):
        reply = await api.get(CM, params=params)
        assert reply.status == 200
        assert reply.body["metadata"]["resourceVersion"] == str(server.store.rv)
        assert [i["metadata"]["name"] for i in reply.body["items"]] == ["a", "b"]


async def test_not_older_than_reads_the_latest_state(api: Api, server: ApiServer) -> None:
    await _make(api, "a")
    rv = (await api.get(CM)).body["metadata"]["resourceVersion"]
    await _make(api, "b")
    params = {"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"}
    reply = await api.get(CM, params=params)
    assert reply.body["metadata"]["resourceVersion"] == str(server.store.rv)
    assert len(reply.body["items"]) == 2


async def test_list_at_a_future_resource_version_is_504(api: Api, server: ApiServer) -> None:
    reply = await api.get(CM, params={"resourceVersion": str(server.store.rv + 5)})
    assert reply.status == 504
    assert reply.body["message"] == (
        f"Timeout: Too large resource version: {server.store.rv + 5}, current: {server.store.rv}"
    )


async def test_resource_version_match_without_resource_version_is_invalid(api: Api) -> None:
    reply = await api.get(CM, params={"resourceVersionMatch": "Exact"})
    assert reply.status == 422
    assert reply.body["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
        "resourceVersionMatch is forbidden unless resourceVersion is provided"
    )


async def test_label_selector_operators(api: Api) -> None:
    await _make(api, "web", labels={"app": "web", "tier": "front"})
    await _make(api, "db", labels={"app": "db"})
    await _make(api, "bare")

    async def names(selector: str) -> list[str]:
        reply = await api.get(CM, params={"labelSelector": selector})
        assert reply.status == 200, reply.body
        return [i["metadata"]["name"] for i in reply.body["items"]]

    assert await names("app=web") == ["web"]
    assert await names("app==db") == ["db"]
    assert await names("app!=web") == ["bare", "db"]
    assert await names("app in (web,db)") == ["db", "web"]
    assert await names("app notin (web)") == ["bare", "db"]
    assert await names("tier") == ["web"]
    assert await names("!tier") == ["bare", "db"]


async def test_bad_label_selector_is_400(api: Api) -> None:
    reply = await api.get(CM, params={"labelSelector": "app in web"})
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"
    assert reply.body["message"]


async def test_field_selectors_on_metadata(api: Api) -> None:
    await _make(api, "a", "b")
    reply = await api.get("/api/v1/configmaps", params={"fieldSelector": "metadata.name=b"})
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["b"]
    reply = await api.get(
        "/api/v1/configmaps", params={"fieldSelector": "metadata.namespace!=default"}
    )
    assert reply.body["items"] == []


async def test_pod_field_selectors(api: Api, server: ApiServer) -> None:
    await api.create(PODS, pod("a"))
    await api.create(PODS, pod("b"))
    server.storage.bind("b", "node-1", namespace="default")
    reply = await api.get(PODS, params={"fieldSelector": "spec.nodeName=node-1"})
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["b"]
    reply = await api.get(PODS, params={"fieldSelector": "status.phase=Pending,spec.nodeName="})
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["a"]
    reply = await api.get(PODS, params={"fieldSelector": "spec.schedulerName=default-scheduler"})
    assert len(reply.body["items"]) == 2


async def test_unsupported_field_selector_is_400_worded_per_kind(api: Api) -> None:
    reply = await api.get(PODS, params={"fieldSelector": "spec.foo=bar"})
    assert reply.status == 400
    assert reply.body["message"] == "field label not supported: spec.foo"
    reply = await api.get(CM, params={"fieldSelector": "data.k=v"})
    assert reply.status == 400
    assert reply.body["message"] == (
        '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


async def test_secret_and_event_field_selectors(api: Api) -> None:
    secrets = "/api/v1/namespaces/default/secrets"
    await api.create(secrets, {"metadata": {"name": "s1"}, "type": "kubernetes.io/tls", "data": {}})
    await api.create(secrets, {"metadata": {"name": "s2"}, "stringData": {"a": "b"}})
    reply = await api.get(secrets, params={"fieldSelector": "type=Opaque"})
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["s2"]
    assert reply.body["items"][0]["data"] == {"a": "Yg=="}
    events = "/api/v1/namespaces/default/events"
    event = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started",
    }
    await api.create(events, event)
    reply = await api.get(
        events, params={"fieldSelector": "involvedObject.kind=Pod,involvedObject.name=p"}
    )
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["e1"]


async def test_a_list_in_a_group_the_server_does_not_serve_is_a_plain_404(api: Api) -> None:
    # No API handler answers it: Go's mux does, in plain text, with no Status.
    reply = await api.get("/apis/example.com/v1/namespaces/default/widgets")
    assert reply.status == 404
    assert reply.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert reply.body == "404 page not found\n"


async def test_list_of_a_missing_resource_type_in_a_served_group_is_404(api: Api) -> None:
    reply = await api.get("/apis/apps/v1/namespaces/default/widgets")
    assert reply.status == 404
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server could not find the requested resource",
        "reason": "NotFound",
        "details": {},
        "code": 404,
    }


async def test_table_listing_for_kubectl(api: Api, server: ApiServer) -> None:
    await _make(api, "a")
    reply = await api.get(CM, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    table = reply.body
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": str(server.store.rv)}
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    row = table["rows"][0]
    assert row["cells"] == ["a", 1, "0s"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "a"


async def test_partial_object_metadata_list(api: Api) -> None:
    await _make(api, "a")
    accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    reply = await api.get(CM, headers={"Accept": accept})
    assert reply.body["kind"] == "PartialObjectMetadataList"
    assert reply.body["items"][0] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": reply.body["items"][0]["metadata"],
    }
    assert "data" not in reply.body["items"][0]


async def test_protobuf_only_accept_is_406(api: Api) -> None:
    reply = await api.get(CM, headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert reply.status == 406
    assert reply.body["reason"] == "NotAcceptable"
