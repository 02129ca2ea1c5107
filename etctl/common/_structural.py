"""Checks that a CRD schema is structural, and that values conform to a schema.

:func:`structural_problems` checks a schema the way kube-apiserver does before it accepts a CRD
version (plus etctl's own rule: no ``title``), so that :func:`etctl.common.openapi_schema`
fails at generation time instead of at install time. :func:`conformance_problems` checks a value
against a schema (a subset of the API server's validation), used for schema defaults here and for
example manifests in the tests; the API server stays the authority on validation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["INT_OR_STRING", "JUNCTORS", "conformance_problems", "structural_problems"]

JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
"""The logical junctors of OpenAPI schemas."""
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
"""The only typed alternatives a structural schema allows, under ``x-kubernetes-int-or-string``."""

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_KNOWN_KEYWORDS = frozenset(
    {
        "type", "format", "description", "default", "nullable", "enum", "example",
        "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "multipleOf",
        "maxLength", "minLength", "pattern", "maxItems", "minItems", "maxProperties",
        "minProperties", "required", "items", "properties", "additionalProperties",
        "allOf", "anyOf", "oneOf", "not", "externalDocs",
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
        "x-kubernetes-map-type", "x-kubernetes-validations",
    }
)  # fmt: skip
# Keywords apiextensions/v1 refuses, and "title" which etctl keeps out of its CRDs.
_FORBIDDEN = frozenset(
    {"$ref", "$defs", "definitions", "id", "$schema", "patternProperties", "dependencies",
     "additionalItems", "uniqueItems", "title"}
)  # fmt: skip
# Keywords that may not appear inside allOf/anyOf/oneOf/not (structural rule 3).
_NOT_IN_JUNCTOR = frozenset(
    {"type", "description", "default", "nullable", "additionalProperties",
     "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
     "x-kubernetes-int-or-string", "x-kubernetes-list-type", "x-kubernetes-map-type"}
)  # fmt: skip


def structural_problems(schema: Mapping[str, Any]) -> list[str]:
    """Why ``schema`` is not a structural CRD schema (empty when it is).

    Checks what kube-apiserver checks before accepting a CRD version schema, plus etctl's own
    rules (no ``title``): every node has a type unless it is int-or-string or keeps unknown
    fields; ``properties`` and ``additionalProperties`` exclude each other; arrays have
    ``items``; allOf/anyOf/oneOf/not carry only value validations about fields also specified
    outside them; no ``$ref``, ``$defs`` or other forbidden keyword; defaults and enum values
    conform to their node.
    """
    problems: list[str] = []
    _check_node(schema, "", problems)
    return problems


def _check_node(node: Any, path: str, problems: list[str]) -> None:
    where = path or "<root>"
    if not isinstance(node, Mapping):
        problems.append(f"{where}: a schema node must be a mapping")
        return
    _check_keywords(node, where, problems)
    for name, sub in (node.get("properties") or {}).items():
        _check_node(sub, f"{path}.{name}", problems)
    if isinstance(node.get("additionalProperties"), Mapping):
        _check_node(node["additionalProperties"], f"{path}.*", problems)
    if "items" in node:
        _check_node(node["items"], f"{path}[*]", problems)
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    for junctor in JUNCTORS:
        if junctor in node:
            _check_junctor(node, junctor, where, problems, int_or_string=int_or_string)
    if "default" in node:
        problems.extend(
            f"{where}: default {node['default']!r} does not conform: {problem}"
            for problem in conformance_problems(node["default"], node)
        )
    problems.extend(
        f"{where}: enum value {value!r} is not of type {node.get('type')}"
        for value in node.get("enum") or ()
        if not _type_matches(value, node)
    )


def _check_keywords(node: Mapping[str, Any], where: str, problems: list[str]) -> None:
    for key in node:
        if key in _FORBIDDEN:
            problems.append(f"{where}: {key} is not allowed")
        elif key not in _KNOWN_KEYWORDS:
            problems.append(f"{where}: unknown keyword {key}")
    kind = node.get("type")
    if node.get("x-kubernetes-int-or-string") is True:
        if kind is not None:
            problems.append(f"{where}: an int-or-string node must not set type")
    elif kind is None:
        if node.get("x-kubernetes-preserve-unknown-fields") is not True:
            problems.append(f"{where}: type is missing")
    elif kind not in _TYPES:
        problems.append(f"{where}: unsupported type {kind!r}")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{where}: properties and additionalProperties are mutually exclusive")
    if kind == "array" and "items" not in node:
        problems.append(f"{where}: an array needs items")


def _check_junctor(
    node: Mapping[str, Any], junctor: str, where: str, problems: list[str], *, int_or_string: bool
) -> None:
    branches = node[junctor]
    if int_or_string and junctor in ("anyOf", "allOf") and branches == INT_OR_STRING:
        return
    branch_list = [branches] if junctor == "not" else branches
    if not isinstance(branch_list, list):
        problems.append(f"{where}: {junctor} must be a list")
        return
    known = set(node.get("properties") or {})
    for index, branch in enumerate(branch_list):
        label = f"{where}: {junctor}[{index}]"
        if not isinstance(branch, Mapping):
            problems.append(f"{label} must be a mapping")
            continue
        if branch.get("type") == "null":
            problems.append(f"{label}: null alternatives are not structural; use nullable")
        problems.extend(
            f"{label}: {key} is not allowed inside {junctor}"
            for key in sorted(_NOT_IN_JUNCTOR & branch.keys())
        )
        outside = (*(branch.get("properties") or {}), *(branch.get("required") or ()))
        problems.extend(
            f"{label}: {name} is not specified outside {junctor}"
            for name in sorted(set(outside) - known)
        )


def _type_matches(value: Any, node: Mapping[str, Any]) -> bool:
    if value is None:
        return node.get("nullable") is True
    if node.get("x-kubernetes-int-or-string"):
        return isinstance(value, int | str) and not isinstance(value, bool)
    kind = node.get("type")
    checks: dict[str, bool] = {
        "object": isinstance(value, Mapping),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }
    return checks.get(kind, True) if isinstance(kind, str) else True


def conformance_problems(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Where ``value`` breaks ``schema``, recursively.

    Checks types, nullability, enums, bounds, lengths, patterns, required fields and
    ``required``-only junctors: a subset of the API server's validation, enough to check schema
    defaults and example manifests against generated schemas; the API server stays the authority.
    """
    where = path or "<root>"
    if not _type_matches(value, schema):
        return [f"{where}: {value!r} is not of type {schema.get('type', 'int-or-string')}"]
    if value is None:
        return []
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        problems.extend(_bound_problems(value, schema, where))
    if isinstance(value, str):
        problems.extend(_string_problems(value, schema, where))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{where}: needs at least {schema['minItems']} item(s)")
        for index, item in enumerate(value):
            problems.extend(conformance_problems(item, schema.get("items", {}), f"{path}[{index}]"))
    if isinstance(value, Mapping):
        problems.extend(_object_problems(value, schema, path))
    return problems


def _bound_problems(value: float, schema: Mapping[str, Any], where: str) -> list[str]:
    problems = []
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and (value < low or (schema.get("exclusiveMinimum") and value == low)):
        problems.append(f"{where}: {value} is below the minimum {low}")
    if high is not None and (value > high or (schema.get("exclusiveMaximum") and value == high)):
        problems.append(f"{where}: {value} is above the maximum {high}")
    return problems


def _string_problems(value: str, schema: Mapping[str, Any], where: str) -> list[str]:
    problems = []
    if len(value) < schema.get("minLength", 0):
        problems.append(f"{where}: shorter than {schema['minLength']} character(s)")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{where}: longer than {schema['maxLength']} character(s)")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        problems.append(f"{where}: {value!r} does not match {schema['pattern']}")
    return problems


def _object_problems(value: Mapping[str, Any], schema: Mapping[str, Any], path: str) -> list[str]:
    where = path or "<root>"
    problems = [
        f"{path}.{name}: required" if path else f"{name}: required"
        for name in schema.get("required", ())
        if name not in value
    ]
    if len(value) < schema.get("minProperties", 0):
        problems.append(f"{where}: needs at least {schema['minProperties']} key(s)")
    properties: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        sub = f"{path}.{name}" if path else str(name)
        if name in properties:
            problems.extend(conformance_problems(item, properties[name], sub))
        elif isinstance(extra, Mapping):
            problems.extend(conformance_problems(item, extra, sub))
    for junctor in ("oneOf", "anyOf", "allOf"):
        branches = schema.get(junctor)
        if not isinstance(branches, list) or schema.get("x-kubernetes-int-or-string"):
            continue
        matched = sum(not conformance_problems(value, branch, path) for branch in branches)
        wanted = {"oneOf": matched == 1, "anyOf": matched >= 1, "allOf": matched == len(branches)}
        if not wanted[junctor]:
            problems.append(f"{where}: matches {matched} of the {junctor} alternatives")
    return problems
