"""Custom resource descriptions: the CRD they render to, and what they refuse."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from etctl.cli._registry import discover
from etctl.common._crd import (
    CRDVersion,
    CustomResource,
    PrinterColumn,
    ScaleSubresource,
    crd_manifest,
)
from etctl.common._openapi import schema_problems
from etctl.errors import ConfigError
from etctl.runtime import Resource
from tests.common.crd._widget import Widget, widget


def test_manifest_shape() -> None:
    resource = widget(
        short_names=("wd",),
        categories=("etctl",),
        columns=(
            PrinterColumn(name="Replicas", json_path=".spec.replicas", type="integer"),
            PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
            PrinterColumn(
                name="State",
                json_path=".status.conditions[-1:].type",
                description="Latest.",
                priority=1,
            ),
        ),
        scale=ScaleSubresource(
            spec_replicas_path=".spec.replicas",
            status_replicas_path=".status.replicas",
            label_selector_path=".status.selector",
        ),
    )
    manifest = crd_manifest(resource)
    assert manifest["apiVersion"] == "apiextensions.k8s.io/v1"
    assert manifest["kind"] == "CustomResourceDefinition"
    assert manifest["metadata"]["name"] == "widgets.example.com"
    spec = manifest["spec"]
    assert spec["names"] == {
        "kind": "Widget",
        "listKind": "WidgetList",
        "plural": "widgets",
        "singular": "widget",
        "shortNames": ["wd"],
        "categories": ["etctl"],
    }
    assert spec["scope"] == "Namespaced"
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    assert version["additionalPrinterColumns"] == [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {
            "name": "State",
            "type": "string",
            "jsonPath": ".status.conditions[-1:].type",
            "description": "Latest.",
            "priority": 1,
        },
    ]
    root = version["schema"]["openAPIV3Schema"]
    assert root["properties"]["metadata"] == {"type": "object"}
    assert root["properties"]["apiVersion"]["type"] == "string"
    assert root["properties"]["spec"]["properties"]["replicas"]["minimum"] == 0


def test_resource_identity() -> None:
    resource = widget()
    assert resource.name == "widgets.example.com"
    assert resource.resource() == Resource("example.com", "v1", "widgets", "Widget")
    with pytest.raises(ConfigError, match="no version 'v2'"):
        resource.resource("v2")
    cluster = widget(scope="Cluster")
    assert not cluster.resource().namespaced


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"group": "nodot"}, "must be a DNS subdomain with a dot"),
        ({"kind": "widget"}, "must be CamelCase"),
        ({"plural": "Widgets"}, "plural 'Widgets' must be a lower-case DNS label"),
        ({"short_names": ("W",)}, "short name or category 'W'"),
        ({"versions": ()}, "at least one version is needed"),
        (
            {"versions": (CRDVersion(name="v1", model=Widget, storage=False),)},
            "exactly one version must be the storage version",
        ),
        (
            {
                "versions": (
                    CRDVersion(name="v1", model=Widget),
                    CRDVersion(name="v1", model=Widget, storage=False),
                )
            },
            "version names must be unique",
        ),
    ],
)
def test_invalid_descriptions_are_rejected(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        widget(**overrides)


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (PrinterColumn(name="X", json_path=".spec.nothing"), "is not a field of the schema"),
        (
            PrinterColumn(name="X", json_path=".spec.replicas", type="string"),
            "is a integer, not string",
        ),
        (
            PrinterColumn(name="X", json_path=".status.selector", type="date"),
            "is not a timestamp",
        ),
        (
            PrinterColumn(name="X", json_path=".metadata.creationTimestamp"),
            "is a date, not a string",
        ),
    ],
)
def test_printer_columns_must_point_at_typed_fields(column: PrinterColumn, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        crd_manifest(widget(columns=(column,)))


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        (
            ScaleSubresource(
                spec_replicas_path=".spec.nothing", status_replicas_path=".status.replicas"
            ),
            "specReplicasPath .spec.nothing must point at a",
        ),
        (
            ScaleSubresource(
                spec_replicas_path=".status.replicas", status_replicas_path=".status.replicas"
            ),
            "must be a plain path under .spec.",
        ),
        (
            ScaleSubresource(
                spec_replicas_path=".spec.replicas", status_replicas_path=".status.selector"
            ),
            "statusReplicasPath .status.selector must point at a",
        ),
        (
            ScaleSubresource(
                spec_replicas_path=".spec.replicas",
                status_replicas_path=".status.replicas",
                label_selector_path=".status.replicas",
            ),
            "labelSelectorPath .status.replicas must point at a",
        ),
    ],
)
def test_scale_paths_must_point_at_the_right_fields(scale: ScaleSubresource, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        crd_manifest(widget(scale=scale))


def test_scale_needs_the_status_subresource() -> None:
    scale = ScaleSubresource(
        spec_replicas_path=".spec.replicas", status_replicas_path=".status.replicas"
    )
    with pytest.raises(ConfigError, match="needs the status subresource"):
        crd_manifest(widget(scale=scale, status_subresource=False))


def walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        found.append((path, node))
        for name, sub in (node.get("properties") or {}).items():
            found.extend(walk(sub, f"{path}.{name}"))
        for key in ("additionalProperties", "items"):
            if isinstance(node.get(key), dict):
                found.extend(walk(node[key], f"{path}.{key}"))
    return found


@pytest.mark.parametrize("resource", discover().custom_resources(), ids=lambda r: r.name)
def test_every_generated_schema_is_structural(resource: CustomResource) -> None:
    for version in crd_manifest(resource)["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        assert schema_problems(schema) == []
        text = yaml.safe_dump(schema)
        assert "$ref" not in text
        assert "$defs" not in text
        assert "title:" not in text
        for path, node in walk(schema):
            typed = "type" in node
            exempt = node.get("x-kubernetes-int-or-string") or node.get(
                "x-kubernetes-preserve-unknown-fields"
            )
            assert typed or exempt, f"{resource.name}{path} has no type"
            for junctor in ("anyOf", "oneOf"):
                for branch in node.get(junctor, []):
                    assert branch.get("type") != "null", f"{resource.name}{path}"
