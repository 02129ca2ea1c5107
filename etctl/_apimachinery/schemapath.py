"""Walking a CRD schema: the parts of a schema node, and the field paths errors are reported at.

Every check over an ``openAPIV3Schema`` (OpenAPI rules, structural invariants, embedded-resource
and list-type checks) reads schema nodes and names fields the same way: ``spec.replicas`` for a
property, ``spec.items[name]`` for a keyed member. Malformed parts read as absent, so a check
never fails on the shape of a schema that another check reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "INT_OR_STRING",
    "JUNCTORS",
    "Schema",
    "child_path",
    "items_of",
    "key_path",
    "properties_of",
    "truthy",
]

Schema = Mapping[str, Any]

JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
"""The logical junctors of OpenAPI schemas."""
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
"""The only typed alternatives a structural schema allows, under ``x-kubernetes-int-or-string``."""


def child_path(path: str, name: str) -> str:
    """The path of field ``name`` under ``path`` (``name`` itself at the root)."""
    return f"{path}.{name}" if path else name


def key_path(path: str, key: str) -> str:
    """The path of member ``key`` of the map or list at ``path``."""
    return f"{path}[{key}]"


def truthy(schema: Schema, key: str) -> bool:
    """True when the schema sets ``key`` to a true value."""
    return bool(schema.get(key))


def items_of(schema: Schema) -> Schema | None:
    """The ``items`` schema, if it is a schema (not a list of them)."""
    items = schema.get("items")
    return items if isinstance(items, Mapping) else None


def properties_of(schema: Schema) -> Mapping[str, Schema]:
    """The ``properties`` schemas (empty when there are none)."""
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else {}
