"""CRD conversion webhooks: objects converted on write, read, list, watch and in admission."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from etctl.testing import ApiServer
from tests.testing.apiserver._client import Api
from tests.testing.apiserver._webhooks import (
    VALIDATING,
    HookServer,
    allow,
    configuration,
    hook_server,
    webhook,
)

V1 = "/apis/example.com/v1/namespaces/default/shapes"
V2 = "/apis/example.com/v2/namespaces/default/shapes"


def crd(hooks: HookServer) -> dict[str, Any]:
    def version(name: str, storage: bool, spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": name,
            "served": True,
            "storage": storage,
            "schema": {
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": spec}},
                }
            },
        }

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "shapes.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "shapes", "singular": "shape", "kind": "Shape"},
            "versions": [
                version("v1", True, {"size": {"type": "integer"}}),
                version(
                    "v2",
                    False,
                    {
                        "dimensions": {
                            "type": "object",
                            "properties": {"size": {"type": "integer"}},
                        }
                    },
                ),
            ],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {"url": hooks.url("/convert"), "caBundle": hooks.ca_bundle},
                },
            },
        },
    }


def convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """v1 keeps ``spec.size``, v2 ``spec.dimensions.size``: the hub-and-spoke of the test."""
    out = copy.deepcopy(obj)
    spec = out.get("spec") or {}
    if desired.endswith("/v2") and "size" in spec:
        out["spec"] = {"dimensions": {"size": spec["size"]}}
    elif desired.endswith("/v1") and "dimensions" in spec:
        out["spec"] = {"size": spec["dimensions"].get("size")}
    out["apiVersion"] = desired
    return out


def answer(path: str, review: dict[str, Any]) -> dict[str, Any]:
    request = review["request"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {
            "uid": request["uid"],
            "result": {"status": "Success"},
            "convertedObjects": [
                convert(o, request["desiredAPIVersion"]) for o in request["objects"]
            ],
        },
    }


@pytest.fixture
async def hooks() -> AsyncIterator[HookServer]:
    async with hook_server() as running:
        running.answer = answer
        yield running


@pytest.fixture
def shapes(server: ApiServer, hooks: HookServer) -> ApiServer:
    server.load_crds(crd(hooks))
    return server


def shape(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v2",
        "kind": "Shape",
        "metadata": {"name": name},
        "spec": {"dimensions": {"size": size}},
    }


async def test_a_write_at_another_version_is_stored_at_the_storage_version(
    api: Api, hooks: HookServer, shapes: ApiServer
) -> None:
    created = await api.create(V2, shape("a", 3))
    assert created["apiVersion"] == "example.com/v2"
    assert created["spec"] == {"dimensions": {"size": 3}}
    stored = shapes.store.get(("example.com", "shapes"), "default/a")
    assert stored is not None
    assert stored["apiVersion"] == "example.com/v1"
    assert stored["spec"] == {"size": 3}
    first = hooks.requests()[0]
    assert first["desiredAPIVersion"] == "example.com/v1"
    assert first["objects"][0]["spec"] == {"dimensions": {"size": 3}}
    assert hooks.paths()[0] == "/convert?timeout=30s"


async def test_reads_are_converted_and_a_list_in_one_review(
    api: Api, hooks: HookServer, shapes: ApiServer
) -> None:
    await api.create(V1, {**shape("a", 1), "apiVersion": "example.com/v1", "spec": {"size": 1}})
    await api.create(V1, {**shape("b", 2), "apiVersion": "example.com/v1", "spec": {"size": 2}})
    assert hooks.reviews == []  # at the storage version, nothing to convert
    got = (await api.get(f"{V2}/a")).body
    assert got["spec"] == {"dimensions": {"size": 1}}
    assert got["metadata"]["uid"]
    listed = (await api.get(V2)).body
    assert [i["spec"] for i in listed["items"]] == [
        {"dimensions": {"size": 1}},
        {"dimensions": {"size": 2}},
    ]
    assert len(hooks.reviews) == 2
    assert len(hooks.requests()[1]["objects"]) == 2


async def test_updates_and_patches_apply_at_the_requested_version(
    api: Api, shapes: ApiServer
) -> None:
    created = await api.create(V2, shape("a", 3))
    created["spec"]["dimensions"]["size"] = 4
    updated = (await api.put(f"{V2}/a", created)).body
    assert updated["spec"] == {"dimensions": {"size": 4}}
    patched = await api.patch(f"{V2}/a", {"spec": {"dimensions": {"size": 5}}})
    assert patched.status == 200, patched.body
    stored = shapes.store.get(("example.com", "shapes"), "default/a")
    assert stored is not None
    assert stored["spec"] == {"size": 5}


async def test_a_watch_at_another_version_sees_converted_objects(
    api: Api, shapes: ApiServer
) -> None:
    await api.create(V2, shape("a", 3))
    status, events = await api.watch_lines(V2, {}, count=1)
    assert status == 200
    (event,) = events
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "example.com/v2"
    assert event["object"]["spec"] == {"dimensions": {"size": 3}}


async def test_a_failing_converter_fails_the_request_and_stores_nothing(
    api: Api, hooks: HookServer, shapes: ApiServer
) -> None:
    def failing(path: str, review: dict[str, Any]) -> dict[str, Any]:
        reply = answer(path, review)
        reply["response"]["result"] = {"status": "Failure", "message": "cannot convert shapes"}
        return reply

    hooks.answer = failing
    reply = await api.post(V2, shape("a", 3))
    assert reply.status == 500
    assert reply.body["message"] == (
        "Internal error occurred: conversion webhook for example.com/v2, Kind=Shape failed: "
        "cannot convert shapes"
    )
    assert shapes.store.get(("example.com", "shapes"), "default/a") is None

    def renaming(path: str, review: dict[str, Any]) -> dict[str, Any]:
        reply = answer(path, review)
        reply["response"]["convertedObjects"][0]["metadata"]["name"] = "other"
        return reply

    hooks.answer = renaming
    reply = await api.post(V2, shape("a", 3))
    assert reply.status == 500
    assert (
        "invalid converted object at index 0: must have the same name: a != other"
        in (reply.body["message"])
    )


async def test_a_webhook_conversion_needs_its_settings(api: Api, hooks: HookServer) -> None:
    bad = crd(hooks)
    bad["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = ["v9"]
    reply = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad)
    assert reply.status == 422
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "field": "spec.conversion.webhook.conversionReviewVersions",
            "message": "Required value: must include at least one of v1, v1beta1",
        }
    ]


async def validating_shapes(api: Api, hooks: HookServer, **fields: Any) -> None:
    """A validating webhook for shapes at ``/validate``; the converter keeps converting."""

    def both(path: str, review: dict[str, Any]) -> Any:
        return answer(path, review) if path == "/convert" else allow(review)

    hooks.answer = both
    config = {"url": hooks.url("/validate"), "caBundle": hooks.ca_bundle}
    hook = webhook(
        "shapes.example.com", config, groups=("example.com",), resources=("shapes",), **fields
    )
    await api.create(VALIDATING, configuration("ValidatingWebhookConfiguration", "v", hook))


async def test_an_admission_webhook_sees_the_object_at_its_own_version(
    api: Api, hooks: HookServer, shapes: ApiServer
) -> None:
    await validating_shapes(api, hooks, versions=("v1",))
    await api.create(V2, shape("a", 3))
    (validated,) = [r for p, r in hooks.reviews if p.startswith("/validate")]
    assert validated["request"]["kind"]["version"] == "v1"
    assert validated["request"]["object"]["spec"] == {"size": 3}


async def test_a_delete_at_another_version_shows_the_webhook_the_object_at_it(
    api: Api, hooks: HookServer, shapes: ApiServer
) -> None:
    await api.create(V2, shape("a", 3))
    await validating_shapes(
        api, hooks, operations=("DELETE",), versions=("v2",), matchPolicy="Exact"
    )
    assert (await api.delete(f"{V2}/a")).status == 200
    (validated,) = [r for p, r in hooks.reviews if p.startswith("/validate")]
    assert validated["request"]["resource"]["version"] == "v2"
    assert validated["request"]["oldObject"]["spec"] == {"dimensions": {"size": 3}}
