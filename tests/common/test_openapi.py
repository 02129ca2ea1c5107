from enum import StrEnum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from etctl.common import Int32, KubeModel, Quantity, ReplicaSpec
from etctl.common._openapi import KnownKeys, openapi_schema, schema_at, schema_problems
from etctl.errors import ConfigError


class Color(StrEnum):
    RED = "Red"
    BLUE = "Blue"


class Leaf(KubeModel):
    """A leaf object.

    With a second paragraph.
    """

    size: Int32 = Field(default=1, json_schema_extra={"minimum": 0})
    """How big the leaf is,
    wrapped over two lines."""


class Tree(KubeModel):
    """A tree."""

    leaf: Leaf
    """The main leaf."""
    spare: Leaf | None = None
    leaves: list[Leaf] = Field(default_factory=list)
    by_name: dict[str, Leaf] = Field(default_factory=dict)
    color: Color = Color.RED
    shade: Color | None = None
    quantity: Quantity | None = None
    anything: dict[str, Any] = Field(default_factory=dict)
    fixed: Literal["only"] = "only"
    positive: int = Field(default=1, gt=0)
    required_but_lenient: str = Field(default="", json_schema_extra={"default": None})
    optional_not_null: Leaf | None = Field(default=None, json_schema_extra={"nullable": False})


def walk(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(walk(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(walk(item))
    return found


@pytest.fixture(scope="module")
def tree() -> dict[str, Any]:
    return openapi_schema(Tree)


def test_references_are_inlined_and_titles_dropped(tree: dict[str, Any]) -> None:
    for node in walk(tree):
        assert not {"$ref", "$defs", "title", "allOf"} & node.keys()
    leaf = tree["properties"]["leaf"]
    assert leaf["type"] == "object"
    assert leaf["properties"]["size"] == {
        "type": "integer",
        "format": "int32",
        "default": 1,
        "minimum": 0,
        "description": "How big the leaf is, wrapped over two lines.",
    }
    assert tree["properties"]["leaves"]["items"]["properties"]["size"]["format"] == "int32"
    assert tree["properties"]["byName"]["additionalProperties"]["type"] == "object"


def test_descriptions_come_from_docstrings(tree: dict[str, Any]) -> None:
    assert tree["description"] == "A tree."
    # The field's docstring wins over the class docstring of the referenced model.
    assert tree["properties"]["leaf"]["description"] == "The main leaf."
    spare = tree["properties"]["spare"]
    assert spare["description"] == "A leaf object.\n\nWith a second paragraph."


def test_optional_fields_are_nullable_not_any_of(tree: dict[str, Any]) -> None:
    props = tree["properties"]
    assert props["spare"]["nullable"] is True
    assert props["spare"]["type"] == "object"
    assert props["shade"] == {"type": "string", "enum": ["Red", "Blue"], "nullable": True}
    assert "default" not in props["spare"]
    for node in walk(tree):
        for junctor in ("anyOf", "oneOf"):
            assert {"type": "null"} not in node.get(junctor, [])


def test_enums_literals_and_exclusive_bounds(tree: dict[str, Any]) -> None:
    props = tree["properties"]
    assert props["color"] == {"type": "string", "enum": ["Red", "Blue"], "default": "Red"}
    assert props["fixed"]["enum"] == ["only"]
    assert "const" not in props["fixed"]
    assert props["positive"]["minimum"] == 0
    assert props["positive"]["exclusiveMinimum"] is True


def test_int_or_string_and_free_form_maps(tree: dict[str, Any]) -> None:
    quantity = tree["properties"]["quantity"]
    assert quantity["x-kubernetes-int-or-string"] is True
    assert quantity["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert quantity["nullable"] is True
    assert "type" not in quantity
    anything = tree["properties"]["anything"]
    assert anything == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def test_schema_hints_drop_defaults_and_nullability(tree: dict[str, Any]) -> None:
    props = tree["properties"]
    assert "default" not in props["requiredButLenient"]
    assert "nullable" not in props["optionalNotNull"]
    assert tree["required"] == ["leaf"]


def test_pod_templates_keep_unknown_fields_but_require_containers() -> None:
    template = openapi_schema(ReplicaSpec)["properties"]["template"]
    assert template["x-kubernetes-preserve-unknown-fields"] is True
    assert template["required"] == ["spec"]
    containers = template["properties"]["spec"]["properties"]["containers"]
    assert containers["minItems"] == 1
    assert containers["items"]["required"] == ["name"]


def test_known_keys_describe_each_key_and_keep_others() -> None:
    class Small(ReplicaSpec):
        """At most one."""

        replicas: Int32 = Field(default=1, json_schema_extra={"maximum": 1})

    class Job(KubeModel):
        specs: Annotated[
            dict[str, ReplicaSpec],
            KnownKeys((("Boss", Small), ("Worker", ReplicaSpec)), min_properties=1),
        ]

    specs = openapi_schema(Job)["properties"]["specs"]
    assert specs["x-kubernetes-preserve-unknown-fields"] is True
    assert specs["minProperties"] == 1
    assert specs["properties"]["Boss"]["properties"]["replicas"]["maximum"] == 1
    assert "maximum" not in specs["properties"]["Worker"]["properties"]["replicas"]
    assert "additionalProperties" not in specs


def test_unions_that_cannot_be_structural_are_rejected() -> None:
    class Union(BaseModel):
        value: int | list[str]

    with pytest.raises(ConfigError, match="union of 2 types"):
        openapi_schema(Union)


def test_recursive_models_are_rejected() -> None:
    class Node(BaseModel):
        children: list["Node"] = Field(default_factory=list)

    Node.model_rebuild()
    with pytest.raises(ConfigError, match="refers to itself"):
        openapi_schema(Node)


def test_non_structural_results_are_rejected() -> None:
    class BadDefault(KubeModel):
        name: str = Field(default="", json_schema_extra={"minLength": 1})

    with pytest.raises(ConfigError, match=r"default: Invalid value.*at least 1 chars long"):
        openapi_schema(BadDefault)


def test_schemas_are_judged_by_the_servers_rules_plus_no_titles() -> None:
    untyped = {"type": "object", "properties": {"a": {}}, "title": "T"}
    assert schema_problems(untyped, root=False) == [
        "<model>.properties[a].type: Required value: must not be empty for specified object fields",
        "<model>.title: etctl keeps titles out of its CRDs",
    ]
    labels = {"type": "object", "properties": {"labels": {"type": "object"}}}
    at_root = {"type": "object", "properties": {"metadata": labels}}
    # metadata is restricted at a CRD's root only, not in a model that will sit below it
    assert schema_problems(at_root, root=False) == []
    assert schema_problems(at_root) == [
        "openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than "
        "name and generateName, but metadata is implicitly specified"
    ]


def test_inlined_nodes_are_not_shared(tree: dict[str, Any]) -> None:
    leaf = tree["properties"]["leaf"]
    spare = tree["properties"]["spare"]
    assert leaf["properties"]["size"] == spare["properties"]["size"]
    assert leaf["properties"]["size"] is not spare["properties"]["size"]
    assert tree["properties"]["color"]["enum"] is not tree["properties"]["shade"]["enum"]


def test_schema_at_follows_properties_maps_and_lists(tree: dict[str, Any]) -> None:
    assert schema_at(tree, ".leaf.size") == tree["properties"]["leaf"]["properties"]["size"]
    assert schema_at(tree, ".byName.anyKey.size") is not None
    assert schema_at(tree, ".leaves[-1:].size") is not None
    assert schema_at(tree, ".leaves[*]") == tree["properties"]["leaves"]["items"]
    assert schema_at(tree, ".leaf.missing") is None
    assert schema_at(tree, ".color.deeper") is None
