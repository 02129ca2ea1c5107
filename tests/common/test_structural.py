from typing import Any

import pytest

from etctl.common._structural import conformance_problems, structural_problems

GOOD: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 1},
        "names": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        "quantity": {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
        },
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "policy": {"type": "string", "enum": ["A", "B"], "default": "A"},
        "maybe": {"type": "string", "nullable": True},
    },
    "oneOf": [{"required": ["count"]}, {"required": ["names"]}],
}


def test_a_structural_schema_has_no_problems() -> None:
    assert structural_problems(GOOD) == []


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"properties": {"a": {"type": "string"}}}, "<root>: type is missing"),
        ({"type": "object", "properties": {"a": {}}}, ".a: type is missing"),
        ({"type": "thing"}, "unsupported type 'thing'"),
        ({"type": "object", "$ref": "#/x"}, "$ref is not allowed"),
        ({"type": "object", "title": "T"}, "title is not allowed"),
        ({"type": "object", "examples": []}, "unknown keyword examples"),
        ({"type": "array"}, "an array needs items"),
        (
            {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
            "mutually exclusive",
        ),
        (
            {"type": "object", "anyOf": [{"type": "string"}, {"type": "null"}]},
            "null alternatives are not structural",
        ),
        (
            {"type": "object", "oneOf": [{"description": "x"}]},
            "description is not allowed inside oneOf",
        ),
        (
            {"type": "object", "oneOf": [{"required": ["ghost"]}]},
            "ghost is not specified outside oneOf",
        ),
        (
            {"type": "string", "x-kubernetes-int-or-string": True},
            "an int-or-string node must not set type",
        ),
        ({"type": "integer", "default": "one"}, "default 'one' does not conform"),
        ({"type": "integer", "default": 0, "minimum": 1}, "default 0 does not conform"),
        ({"type": "string", "enum": ["a", 1]}, "enum value 1 is not of type string"),
        ({"type": "string", "default": None}, "default None does not conform"),
        ("not a mapping", "a schema node must be a mapping"),
    ],
)
def test_structural_violations_are_reported(schema: Any, problem: str) -> None:
    problems = structural_problems(schema)
    assert any(problem in found for found in problems), problems


def test_conforming_values() -> None:
    assert conformance_problems({"count": 2, "quantity": "500m", "maybe": None}, GOOD) == []
    assert conformance_problems({"names": ["a"], "free": {"x": [1]}}, GOOD) == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({}, "matches 0 of the oneOf alternatives"),
        ({"count": 1, "names": ["a"]}, "matches 2 of the oneOf alternatives"),
        ({"count": 0}, "count: 0 is below the minimum 1"),
        ({"count": True}, "count: True is not of type integer"),
        ({"names": []}, "names: needs at least 1 item(s)"),
        ({"names": [""]}, "names[0]: shorter than 1 character(s)"),
        ({"count": 1, "policy": "C"}, "policy: 'C' is not one of ['A', 'B']"),
        ({"count": 1, "quantity": 1.5}, "quantity: 1.5 is not of type int-or-string"),
        ({"count": 1, "maybe": 3}, "maybe: 3 is not of type string"),
        ([], "<root>: [] is not of type object"),
    ],
)
def test_conformance_problems(value: Any, problem: str) -> None:
    problems = conformance_problems(value, GOOD)
    assert any(problem in found for found in problems), problems


def test_conformance_bounds_lengths_patterns_and_required() -> None:
    schema = {
        "type": "object",
        "required": ["name"],
        "minProperties": 2,
        "properties": {
            "name": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
            "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": True},
        },
    }
    problems = conformance_problems({"ratio": 1}, schema)
    assert "name: required" in problems
    assert "<root>: needs at least 2 key(s)" in problems
    assert "ratio: 1 is above the maximum 1" in problems
    named = conformance_problems({"name": "ABCD", "ratio": 0.5}, schema)
    assert named == ["name: longer than 3 character(s)", "name: 'ABCD' does not match ^[a-z]+$"]
