"""Conformance: CRDs (registration, validation, versions, deletion) and their custom resources."""

from __future__ import annotations

import copy
from typing import Any

from etctl.testing import ApiServer
from tests.testing.apiserver._client import WIDGET_CRD, WIDGETS, Api, open_watch, widget

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def test_a_created_crd_is_established_and_served_at_once(api: Api) -> None:
    reply = await api.post(CRDS, WIDGET_CRD)
    assert reply.status == 201
    crd = reply.body
    assert crd["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    assert crd["metadata"]["generation"] == 1
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["spec"]["names"]["listKind"] == "WidgetList"
    assert (await api.post(WIDGETS, widget("w", color="red"))).status == 201
    listing = await api.get(WIDGETS)
    assert listing.body["kind"] == "WidgetList"
    assert listing.body["apiVersion"] == "example.com/v1"
    assert listing.body["items"][0]["kind"] == "Widget"


async def test_a_non_structural_schema_is_rejected(api: Api) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {
        "properties": {"replicas": {"type": "integer"}}
    }
    reply = await api.post(CRDS, crd)
    assert reply.status == 422
    assert reply.body["details"]["kind"] == "CustomResourceDefinition"
    assert reply.body["details"]["group"] == "apiextensions.k8s.io"
    fields = {c["field"] for c in reply.body["details"]["causes"]}
    assert "spec.versions[0].schema.openAPIV3Schema.properties[spec].type" in fields
    assert reply.body["message"].startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: '
    )


async def test_a_crd_name_must_be_plural_dot_group(api: Api) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["metadata"]["name"] = "gadgets.example.com"
    reply = await api.post(CRDS, crd)
    assert reply.status == 422
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "gadgets.example.com": '
            'must be spec.names.plural+"."+spec.group',
            "field": "metadata.name",
        }
    ]


async def test_exactly_one_storage_version(api: Api) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["spec"]["versions"][1]["storage"] = True
    reply = await api.post(CRDS, crd)
    assert reply.status == 422
    assert any(
        c["message"].endswith("must have exactly one version marked as storage version")
        for c in reply.body["details"]["causes"]
    )


async def test_custom_resources_are_pruned_defaulted_and_validated(
    api: Api, widgets: ApiServer
) -> None:
    created = await api.create(WIDGETS, widget("w", color="red"))
    assert created["spec"] == {"color": "red", "replicas": 1}
    bad = await api.post(WIDGETS, widget("v", color="green", replicas=-1))
    assert bad.status == 422
    assert bad.body["details"]["kind"] == "Widget"
    assert bad.body["details"]["group"] == "example.com"
    by_field = {c["field"]: c for c in bad.body["details"]["causes"]}
    assert by_field["spec.color"]["reason"] == "FieldValueNotSupported"
    assert by_field["spec.color"]["message"] == (
        'Unsupported value: "green": supported values: "red", "blue"'
    )
    assert by_field["spec.replicas"]["message"] == (
        "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
    )
    assert bad.body["message"].startswith('Widget.example.com "v" is invalid: [')


async def test_served_versions_share_storage_and_rewrite_api_version(
    api: Api, widgets: ApiServer
) -> None:
    await api.create(WIDGETS, widget("w", color="red"))
    beta = "/apis/example.com/v1beta1/namespaces/default/widgets"
    reply = await api.get(f"{beta}/w")
    assert reply.status == 200
    assert reply.body["apiVersion"] == "example.com/v1beta1"
    assert reply.body["spec"]["color"] == "red"
    created = await api.post(
        beta,
        {
            "apiVersion": "example.com/v1beta1",
            "kind": "Widget",
            "metadata": {"name": "b"},
            "spec": {"free": "form"},
        },
    )
    assert created.status == 201
    stored = widgets.store.get(("example.com", "widgets"), "default/b")
    assert stored is not None
    assert stored["apiVersion"] == "example.com/v1"
    assert stored["spec"] == {"free": "form"}


async def test_an_unserved_version_is_404(api: Api, widgets: ApiServer) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["spec"]["versions"][1]["served"] = False
    widgets.load_crds(crd)
    reply = await api.get("/apis/example.com/v1beta1/namespaces/default/widgets")
    assert reply.status == 404


async def test_selectable_fields_of_a_crd(api: Api, widgets: ApiServer) -> None:
    await api.create(WIDGETS, widget("r", color="red"))
    await api.create(WIDGETS, widget("b", color="blue"))
    reply = await api.get(WIDGETS, params={"fieldSelector": "spec.color=blue"})
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["b"]
    reply = await api.get(WIDGETS, params={"fieldSelector": "spec.size=big"})
    assert reply.status == 400
    assert reply.body["message"] == "field label not supported: spec.size"


async def test_printer_columns_make_the_table(api: Api, widgets: ApiServer) -> None:
    created = await api.create(WIDGETS, widget("w", color="red", replicas=2))
    created["status"] = {"phase": "Running"}
    await api.put(f"{WIDGETS}/w/status", created)
    reply = await api.get(
        WIDGETS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    columns = [(c["name"], c["type"]) for c in reply.body["columnDefinitions"]]
    assert columns == [
        ("Name", "string"),
        ("Replicas", "integer"),
        ("Phase", "string"),
        ("Age", "date"),
    ]
    assert reply.body["rows"][0]["cells"] == ["w", 2, "Running", "0s"]


async def test_default_columns_are_name_and_age(api: Api, server: ApiServer) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    del crd["spec"]["versions"][0]["additionalPrinterColumns"]
    server.load_crds(crd)
    await api.create(WIDGETS, widget("w"))
    reply = await api.get(
        WIDGETS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    assert [c["name"] for c in reply.body["columnDefinitions"]] == ["Name", "Age"]


async def test_scale_subresource_reads_and_writes_the_replica_paths(
    api: Api, widgets: ApiServer
) -> None:
    created = await api.create(WIDGETS, widget("w", color="red", replicas=2))
    created["status"] = {"replicas": 1, "selector": "app=w"}
    await api.put(f"{WIDGETS}/w/status", created)
    scale = (await api.get(f"{WIDGETS}/w/scale")).body
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "w",
            "namespace": "default",
            "uid": created["metadata"]["uid"],
            "resourceVersion": scale["metadata"]["resourceVersion"],
            "creationTimestamp": created["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 1, "selector": "app=w"},
    }
    scale["spec"]["replicas"] = 4
    put = await api.put(f"{WIDGETS}/w/scale", scale)
    assert put.status == 200
    assert put.body["spec"]["replicas"] == 4
    patched = await api.patch(f"{WIDGETS}/w/scale", {"spec": {"replicas": 6}})
    assert patched.body["spec"]["replicas"] == 6
    obj = (await api.get(f"{WIDGETS}/w")).body
    assert obj["spec"]["replicas"] == 6
    assert obj["metadata"]["generation"] == 3


async def test_negative_scale_is_invalid(api: Api, widgets: ApiServer) -> None:
    await api.create(WIDGETS, widget("w"))
    reply = await api.patch(f"{WIDGETS}/w/scale", {"spec": {"replicas": -1}})
    assert reply.status == 422
    assert reply.body["message"] == (
        'Scale.autoscaling "w" is invalid: spec.replicas: Invalid value: -1: must be greater '
        "than or equal to 0"
    )


async def test_no_scale_subresource_is_404(api: Api, server: ApiServer) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    del crd["spec"]["versions"][0]["subresources"]["scale"]
    server.load_crds(crd)
    await api.create(WIDGETS, widget("w"))
    assert (await api.get(f"{WIDGETS}/w/scale")).status == 404


async def test_deleting_a_crd_deletes_its_objects_then_stops_serving(
    api: Api, widgets: ApiServer
) -> None:
    await api.create(WIDGETS, widget("w"))
    async with open_watch(api, WIDGETS) as stream:
        assert (await stream.next())["type"] == "ADDED"
        reply = await api.delete(f"{CRDS}/widgets.example.com")
        assert reply.status == 200
        assert (await stream.next())["type"] == "DELETED"
        assert await stream.ended()
    assert (await api.get(f"{CRDS}/widgets.example.com")).status == 404
    assert (await api.get(WIDGETS)).status == 404
    groups = [g["name"] for g in (await api.get("/apis")).body["groups"]]
    assert "example.com" not in groups


async def test_a_crd_waits_for_finalized_objects(api: Api, widgets: ApiServer) -> None:
    held = widget("w")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await api.create(WIDGETS, held)
    await api.delete(f"{CRDS}/widgets.example.com")
    crd = (await api.get(f"{CRDS}/widgets.example.com")).body
    assert crd["metadata"]["deletionTimestamp"]
    conditions = {c["type"]: c["reason"] for c in crd["status"]["conditions"]}
    assert conditions["Terminating"] == "InstanceDeletionInProgress"
    refused = await api.post(WIDGETS, widget("x"))
    assert refused.status == 405
    assert (
        refused.body["message"]
        == "create not allowed while custom resource definition is terminating"
    )
    obj = (await api.get(f"{WIDGETS}/w")).body
    obj["metadata"]["finalizers"] = []
    await api.put(f"{WIDGETS}/w", obj)
    assert (await api.get(f"{CRDS}/widgets.example.com")).status == 404


async def test_cluster_scoped_crds(api: Api, server: ApiServer) -> None:
    crd: dict[str, Any] = copy.deepcopy(WIDGET_CRD)
    crd["spec"]["scope"] = "Cluster"
    server.load_crds(crd)
    path = "/apis/example.com/v1/widgets"
    created = await api.create(path, widget("w"))
    assert "namespace" not in created["metadata"]
    assert (await api.get("/apis/example.com/v1/namespaces/default/widgets/w")).status == 404
    reply = await api.get(path, params={"fieldSelector": "metadata.namespace=x"})
    assert reply.status == 400


async def test_crd_update_changes_what_is_served(api: Api, widgets: ApiServer) -> None:
    crd = (await api.get(f"{CRDS}/widgets.example.com")).body
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Color", "type": "string", "jsonPath": ".spec.color"}
    ]
    updated = await api.put(f"{CRDS}/widgets.example.com", crd)
    assert updated.status == 200
    assert updated.body["metadata"]["generation"] == 2
    await api.create(WIDGETS, widget("w", color="blue"))
    table = (
        await api.get(WIDGETS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    ).body
    assert table["rows"][0]["cells"] == ["w", "blue"]


async def test_updates_ratchet_validation_of_what_they_leave_unchanged(
    api: Api, widgets: ApiServer
) -> None:
    # CRDValidationRatcheting: the stored object breaks a schema made stricter after it was
    # written; an update is refused only for the values it changes.
    await api.create(WIDGETS, widget("w", color="red", replicas=1))
    crd = (await api.get(f"{CRDS}/widgets.example.com")).body
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["color"]["enum"] = ["blue"]
    spec_schema["properties"]["replicas"].update(minimum=5, default=5)
    assert (await api.put(f"{CRDS}/widgets.example.com", crd)).status == 200

    status = await api.patch(f"{WIDGETS}/w/status", {"status": {"phase": "Running"}})
    assert status.status == 200, status.body
    assert status.body["status"] == {"phase": "Running"}
    kept = await api.patch(f"{WIDGETS}/w", {"spec": {"size": "big"}})
    assert kept.status == 200, kept.body
    assert kept.body["spec"] == {"color": "red", "replicas": 1, "size": "big"}

    changed = await api.patch(f"{WIDGETS}/w", {"spec": {"color": "green"}})
    assert changed.status == 422
    assert [c["field"] for c in changed.body["details"]["causes"]] == ["spec.color"]
    retyped = await api.patch(f"{WIDGETS}/w", {"spec": {"replicas": True}})
    assert retyped.status == 422
    assert [(c["field"], c["reason"]) for c in retyped.body["details"]["causes"]] == [
        ("spec.replicas", "FieldValueTypeInvalid")
    ]
    recreated = await api.post(WIDGETS, widget("v", color="red", replicas=1))
    assert recreated.status == 422  # a create has nothing to ratchet against
    assert {c["field"] for c in recreated.body["details"]["causes"]} == {
        "spec.color",
        "spec.replicas",
    }


async def test_crd_scope_is_immutable(api: Api, widgets: ApiServer) -> None:
    crd = (await api.get(f"{CRDS}/widgets.example.com")).body
    crd["spec"]["scope"] = "Cluster"
    reply = await api.put(f"{CRDS}/widgets.example.com", crd)
    assert reply.status == 422
    assert {c["field"] for c in reply.body["details"]["causes"]} == {"spec.scope"}


async def test_deprecated_versions_warn(api: Api, server: ApiServer) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["spec"]["versions"][1]["deprecated"] = True
    server.load_crds(crd)
    beta = "/apis/example.com/v1beta1/namespaces/default/widgets"
    reply = await api.get(beta)
    assert reply.headers.getall("Warning") == ['299 - "example.com/v1beta1 Widget is deprecated"']
    crd["spec"]["versions"][1]["deprecationWarning"] = "use example.com/v1"
    server.load_crds(crd)
    reply = await api.get(beta)
    assert reply.headers.getall("Warning") == ['299 - "use example.com/v1"']
    assert "Warning" not in (await api.get(WIDGETS)).headers
    async with open_watch(api, beta) as stream:
        assert stream.response.headers["Warning"] == '299 - "use example.com/v1"'
