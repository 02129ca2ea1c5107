"""Conformance: discovery documents (legacy and aggregated), /version, health and OpenAPI v3."""

from __future__ import annotations

import json

from etctl.testing import ApiServer
from tests.testing.apiserver._client import Api

AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


async def test_version(api: Api) -> None:
    reply = await api.get("/version")
    assert reply.status == 200
    assert reply.body["major"] == "1"
    assert reply.body["minor"] == "32"
    assert reply.body["gitVersion"] == "v1.32.0"


async def test_health_endpoints(api: Api) -> None:
    for path in ("/healthz", "/readyz", "/livez"):
        reply = await api.get(path)
        assert (reply.status, reply.body) == (200, "ok")


async def test_api_lists_the_core_version(api: Api, server: ApiServer) -> None:
    reply = await api.get("/api")
    assert reply.body["kind"] == "APIVersions"
    assert reply.body["versions"] == ["v1"]
    assert reply.body["serverAddressByClientCIDRs"] == [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{server.port}"}
    ]


async def test_apis_lists_groups_with_preferred_versions(api: Api) -> None:
    reply = await api.get("/apis")
    assert reply.body["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in reply.body["groups"]}
    assert set(groups) == {
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apps",
        "autoscaling",
        "coordination.k8s.io",
        "events.k8s.io",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
    }
    assert groups["coordination.k8s.io"]["preferredVersion"] == {
        "groupVersion": "coordination.k8s.io/v1",
        "version": "v1",
    }


async def test_core_resource_list(api: Api) -> None:
    reply = await api.get("/api/v1")
    assert reply.body["kind"] == "APIResourceList"
    assert reply.body["groupVersion"] == "v1"
    resources = {r["name"]: r for r in reply.body["resources"]}
    pods = resources["pods"]
    assert pods["namespaced"] is True
    assert pods["kind"] == "Pod"
    assert pods["singularName"] == "pod"
    assert pods["shortNames"] == ["po"]
    assert pods["categories"] == ["all"]
    assert pods["verbs"] == [
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"
    ]  # fmt: skip
    assert resources["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert resources["pods/exec"]["kind"] == "PodExecOptions"
    assert resources["pods/log"]["verbs"] == ["get"]
    assert resources["pods/binding"]["kind"] == "Binding"
    assert "deletecollection" not in resources["namespaces"]["verbs"]
    assert resources["namespaces/finalize"]["verbs"] == ["update"]
    assert resources["nodes"]["namespaced"] is False
    assert {"services", "endpoints", "configmaps", "secrets", "serviceaccounts", "events"} <= set(
        resources
    )


async def test_group_documents(api: Api) -> None:
    group = await api.get("/apis/rbac.authorization.k8s.io")
    assert group.body["kind"] == "APIGroup"
    assert group.body["versions"] == [
        {"groupVersion": "rbac.authorization.k8s.io/v1", "version": "v1"}
    ]
    resources = await api.get("/apis/rbac.authorization.k8s.io/v1")
    names = [r["name"] for r in resources.body["resources"]]
    assert names == ["clusterrolebindings", "clusterroles", "rolebindings", "roles"]
    assert (await api.get("/apis/nope.example.com")).status == 404
    assert (await api.get("/apis/rbac.authorization.k8s.io/v9")).status == 404


async def test_crds_appear_in_discovery_with_versions_and_subresources(
    api: Api, widgets: ApiServer
) -> None:
    groups = {g["name"]: g for g in (await api.get("/apis")).body["groups"]}
    assert [v["version"] for v in groups["example.com"]["versions"]] == ["v1", "v1beta1"]
    assert groups["example.com"]["preferredVersion"]["version"] == "v1"
    resources = {r["name"]: r for r in (await api.get("/apis/example.com/v1")).body["resources"]}
    assert resources["widgets"]["shortNames"] == ["wd"]
    assert resources["widgets"]["categories"] == ["all"]
    assert resources["widgets/scale"] == {
        "name": "widgets/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    }
    beta = {r["name"] for r in (await api.get("/apis/example.com/v1beta1")).body["resources"]}
    assert beta == {"widgets"}


async def test_aggregated_discovery_for_kubectl(api: Api, widgets: ApiServer) -> None:
    reply = await api.get("/apis", headers={"Accept": AGGREGATED})
    assert reply.headers["Content-Type"] == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    assert reply.body["kind"] == "APIGroupDiscoveryList"
    assert reply.body["apiVersion"] == "apidiscovery.k8s.io/v2"
    groups = {i["metadata"]["name"]: i for i in reply.body["items"]}
    widgets_v1 = groups["example.com"]["versions"][0]
    assert widgets_v1["version"] == "v1"
    assert widgets_v1["freshness"] == "Current"
    resource = widgets_v1["resources"][0]
    assert resource["resource"] == "widgets"
    assert resource["responseKind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert resource["scope"] == "Namespaced"
    subresources = {s["subresource"]: s for s in resource["subresources"]}
    assert subresources["scale"]["responseKind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }
    core = await api.get("/api", headers={"Accept": AGGREGATED})
    assert [i["metadata"]["name"] for i in core.body["items"]] == [""]


async def test_plain_json_accept_gets_legacy_discovery(api: Api) -> None:
    reply = await api.get("/apis", headers={"Accept": "application/json"})
    assert reply.body["kind"] == "APIGroupList"


async def test_openapi_v3_publishes_patch_operations_with_field_validation(
    api: Api, widgets: ApiServer
) -> None:
    root = (await api.get("/openapi/v3")).body
    assert "api/v1" in root["paths"]
    url = root["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/example.com/v1?hash=")
    doc = (await api.get(url)).body
    patch = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "example.com",
        "version": "v1",
        "kind": "Widget",
    }
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert (await api.get("/openapi/v3/apis/nope/v1")).status == 404


async def test_discovery_follows_crd_removal(api: Api, widgets: ApiServer) -> None:
    before = json.dumps((await api.get("/apis", headers={"Accept": AGGREGATED})).body)
    assert "example.com" in before
    await api.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
    after = json.dumps((await api.get("/apis", headers={"Accept": AGGREGATED})).body)
    assert "example.com" not in after
    assert (await api.get("/apis/example.com/v1")).status == 404


async def test_unknown_paths_are_404_status(api: Api) -> None:
    reply = await api.get("/nope")
    assert reply.status == 404
    assert reply.body["reason"] == "NotFound"
    assert (await api.post("/version", {})).status == 405
