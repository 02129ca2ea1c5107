"""``/openapi/v3``: the schemas of built-in kinds and of every CRD, found by group-version-kind."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_asyncio
import pytest

from etctl.runtime import CRDS
from etctl.testing import ApiServer
from etctl.testing._apiserver.openapi import custom_schema_name
from tests.testing.apiserver import builtin_schemas
from tests.testing.apiserver._client import Api

REF = "#/components/schemas/"


def _by_gvk(doc: dict[str, Any], kind: str) -> tuple[str, dict[str, Any]]:
    for name, schema in doc["components"]["schemas"].items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            if gvk["kind"] == kind:
                return name, schema
    raise AssertionError(f"no schema of {kind}")


def _dangling(doc: dict[str, Any]) -> list[str]:
    schemas = doc["components"]["schemas"]
    missing: list[str] = []
    stack: list[Any] = [schemas]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref[len(REF) :] not in schemas:
                missing.append(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return missing


async def _document(api: Api, path: str) -> dict[str, Any]:
    root = (await api.get("/openapi/v3")).body
    url = root["paths"][path]["serverRelativeURL"]
    body: dict[str, Any] = (await api.get(url)).body
    return body


def test_the_committed_built_in_schemas_are_what_the_generator_makes() -> None:
    path = builtin_schemas.TARGET
    committed = json.loads(path.read_text())["source"]["kubernetes_asyncio"]
    if committed != kubernetes_asyncio.__version__:
        pytest.skip(
            f"the schemas were generated from kubernetes_asyncio {committed}, not "
            f"{kubernetes_asyncio.__version__}: regenerate them to compare"
        )
    assert path.read_text() == builtin_schemas.render(), (
        "regenerate with: python -m tests.testing.apiserver.builtin_schemas"
    )


async def test_a_built_in_kind_has_its_fields_descriptions_and_required_fields(api: Api) -> None:
    doc = await _document(api, "api/v1")
    name, pod = _by_gvk(doc, "Pod")
    assert name == "io.k8s.api.core.v1.Pod"
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["description"].startswith("Pod is a collection of containers")
    spec = doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]
    assert "containers" in spec["required"]
    port = doc["components"]["schemas"]["io.k8s.api.core.v1.ContainerPort"]
    assert port["required"] == ["containerPort"]
    assert port["properties"]["containerPort"]["type"] == "integer"
    meta = doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    assert meta["properties"]["labels"]["additionalProperties"] == {"type": "string"}
    assert _dangling(doc) == []


async def test_a_crd_is_published_from_its_structural_schema_and_follows_changes(
    api: Api, widgets: ApiServer
) -> None:
    server = widgets
    doc = await _document(api, "apis/example.com/v1")
    name, widget = _by_gvk(doc, "Widget")
    assert name == custom_schema_name("example.com", "v1", "Widget") == "com.example.v1.Widget"
    assert widget["properties"]["spec"]["type"] == "object"
    assert widget["properties"]["metadata"] == {
        "allOf": [{"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
        "description": widget["properties"]["metadata"]["description"],
    }
    assert set(widget["properties"]) >= {"apiVersion", "kind", "metadata", "spec"}
    assert _dangling(doc) == []
    crd = server.storage.get(CRDS, "widgets.example.com")
    changed = {**crd}
    changed["spec"] = {**crd["spec"], "versions": [dict(v) for v in crd["spec"]["versions"]]}
    schema = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema = {**schema, "description": "Widgets, described."}
    changed["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": schema}
    server.storage.update(CRDS, changed)
    doc = await _document(api, "apis/example.com/v1")
    assert _by_gvk(doc, "Widget")[1]["description"] == "Widgets, described."
