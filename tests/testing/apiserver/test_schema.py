from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etctl.testing._apiserver.schema import (
    FieldError,
    apply_defaults,
    prune,
    structural_errors,
    validate,
)


def _cr(spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
        **extra,
    }


def _root(spec_schema: dict[str, Any], **props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema,
            **props,
        },
    }


def _spec(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


# --- validation messages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "spec", "expected"),
    [
        (
            {"replicas": {"type": "integer"}},
            {"replicas": "string"},
            [
                'FieldValueTypeInvalid spec.replicas: Invalid value: "string": spec.replicas in '
                'body must be of type integer: "string"'
            ],
        ),
        (
            {"replicas": {"type": "integer", "minimum": 0}},
            {"replicas": -1},
            [
                "FieldValueInvalid spec.replicas: Invalid value: -1: spec.replicas in body should "
                "be greater than or equal to 0"
            ],
        ),
        (
            {"replicas": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}},
            {"replicas": 0},
            [
                "FieldValueInvalid spec.replicas: Invalid value: 0: spec.replicas in body should "
                "be greater than 0"
            ],
        ),
        (
            {"ratio": {"type": "number", "maximum": 10}},
            {"ratio": 10.5},
            [
                "FieldValueInvalid spec.ratio: Invalid value: 10.5: spec.ratio in body should be "
                "less than or equal to 10"
            ],
        ),
        (
            {"ratio": {"type": "number", "maximum": 1.5, "exclusiveMaximum": True}},
            {"ratio": 1.5},
            [
                "FieldValueInvalid spec.ratio: Invalid value: 1.5: spec.ratio in body should be "
                "less than 1.5"
            ],
        ),
        (
            {"mode": {"type": "string", "enum": ["a", "b"]}},
            {"mode": "x"},
            [
                'FieldValueNotSupported spec.mode: Unsupported value: "x": supported values: '
                '"a", "b"'
            ],
        ),
        (
            {"level": {"type": "integer", "enum": [1, 2]}},
            {"level": 3},
            ['FieldValueNotSupported spec.level: Unsupported value: 3: supported values: "1", "2"'],
        ),
        (
            {"name": {"type": "string"}},
            {"name": None},
            [
                'FieldValueTypeInvalid spec.name: Invalid value: "null": spec.name in body must '
                'be of type string: "null"'
            ],
        ),
        ({"name": {"type": "string", "nullable": True}}, {"name": None}, []),
        ({"count": {"type": "integer"}}, {"count": 3.0}, []),
        ({"count": {"type": "integer"}}, {"count": 2**63 - 1}, []),
        # Beyond int64 the API server decodes a number as a float64, and a float beyond 2**53 is
        # no JSON integer to kube-openapi: a 20-digit replica count is refused, not stored.
        (
            {"count": {"type": "integer"}},
            {"count": 10**20},
            [
                'FieldValueTypeInvalid spec.count: Invalid value: "number": spec.count in body '
                'must be of type integer: "number"'
            ],
        ),
        (
            {"count": {"type": "integer"}},
            {"count": 1e20},
            [
                'FieldValueTypeInvalid spec.count: Invalid value: "number": spec.count in body '
                'must be of type integer: "number"'
            ],
        ),
        (
            {"count": {"type": "integer"}},
            {"count": 1.5},
            [
                'FieldValueTypeInvalid spec.count: Invalid value: "number": spec.count in body '
                'must be of type integer: "number"'
            ],
        ),
        ({"ratio": {"type": "number"}}, {"ratio": 2}, []),
        (
            {"flag": {"type": "boolean"}},
            {"flag": 1},
            [
                'FieldValueTypeInvalid spec.flag: Invalid value: "integer": spec.flag in body '
                'must be of type boolean: "integer"'
            ],
        ),
        (
            {"name": {"type": "string", "maxLength": 3}},
            {"name": "abcd"},
            ["FieldValueTooLong spec.name: Too long: may not be longer than 3"],
        ),
        (
            {"name": {"type": "string", "minLength": 3}},
            {"name": "ab"},
            [
                'FieldValueInvalid spec.name: Invalid value: "ab": spec.name in body should be at '
                "least 3 chars long"
            ],
        ),
        (
            {"name": {"type": "string", "pattern": "^[a-z]+$"}},
            {"name": "A1"},
            [
                'FieldValueInvalid spec.name: Invalid value: "A1": spec.name in body should match '
                "'^[a-z]+$'"
            ],
        ),
        ({"name": {"type": "string", "maxLength": 2}}, {"name": "äö"}, []),
        (
            {"email": {"type": "string", "format": "email"}},
            {"email": "nope"},
            [
                'FieldValueTypeInvalid spec.email: Invalid value: "nope": spec.email in body must '
                'be of type email: "nope"'
            ],
        ),
        (
            {"at": {"type": "string", "format": "date-time"}},
            {"at": "2024-01-02T03:04:05Z"},
            [],
        ),
        ({"anything": {"type": "string", "format": "int32"}}, {"anything": "x"}, []),
        (
            {"n": {"type": "integer", "multipleOf": 2}},
            {"n": 7},
            [
                "FieldValueInvalid spec.n: Invalid value: 7: spec.n in body should be a multiple "
                "of 2"
            ],
        ),
        ({"n": {"type": "number", "multipleOf": 0.1}}, {"n": 0.3}, []),
        (
            {
                "list": {
                    "type": "array",
                    "maxItems": 2,
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                }
            },
            {"list": [{"name": "a"}, {"name": 1}, {}]},
            [
                'FieldValueTypeInvalid spec.list[1].name: Invalid value: "integer": '
                'spec.list[1].name in body must be of type string: "integer"',
                "FieldValueTooMany spec.list: Too many: 3: must have at most 2 items",
            ],
        ),
        (
            {"list": {"type": "array", "minItems": 2, "items": {"type": "string"}}},
            {"list": ["a"]},
            [
                "FieldValueInvalid spec.list: Invalid value: 1: spec.list in body should have at "
                "least 2 items"
            ],
        ),
        (
            {"list": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}},
            {"list": ["a", "a"]},
            [
                'FieldValueInvalid spec.list: Invalid value: "": spec.list in body shouldn\'t '
                "contain duplicates"
            ],
        ),
        (
            {
                "m": {
                    "type": "object",
                    "maxProperties": 1,
                    "additionalProperties": {"type": "string"},
                }
            },
            {"m": {"a": "1", "b": "2"}},
            ["FieldValueTooMany spec.m: Too many: 2: must have at most 1 items"],
        ),
        (
            {
                "m": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": {"type": "string"},
                }
            },
            {"m": {}},
            [
                "FieldValueInvalid spec.m: Invalid value: 0: spec.m in body should have at least "
                "1 properties"
            ],
        ),
        (
            {"m": {"type": "object", "additionalProperties": {"type": "integer"}}},
            {"m": {"a": 1, "b": "x"}},
            [
                'FieldValueTypeInvalid spec.m.b: Invalid value: "string": spec.m.b in body must be '
                'of type integer: "string"'
            ],
        ),
        (
            {
                "o": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": False,
                }
            },
            {"o": {"a": "x", "z": 1}},
            [
                'FieldValueInvalid spec.o: Invalid value: "z": spec.o.z in body is a forbidden '
                "property"
            ],
        ),
        ({"port": {"x-kubernetes-int-or-string": True}}, {"port": "http"}, []),
        ({"port": {"x-kubernetes-int-or-string": True}}, {"port": 80}, []),
        (
            {"port": {"x-kubernetes-int-or-string": True}},
            {"port": True},
            [
                'FieldValueTypeInvalid spec.port: Invalid value: "boolean": spec.port in body '
                'must be of type integer,string: "boolean"'
            ],
        ),
        (
            {"free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            {"free": {"anything": [1, {"x": None}]}},
            [],
        ),
        (
            {"v": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^x"}]}},
            {"v": "abc"},
            [
                'FieldValueInvalid <nil>: Invalid value: "": "spec.v" must validate at least one '
                "schema (anyOf)",
                "FieldValueTooLong spec.v: Too long: may not be longer than 1",
            ],
        ),
        (
            {"v": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^a"}]}},
            {"v": "abc"},
            [],
        ),
        (
            {"v": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]}},
            {"v": 5},
            [
                'FieldValueInvalid <nil>: Invalid value: "": "spec.v" must validate one and only '
                "one schema (oneOf). Found 2 valid alternatives"
            ],
        ),
        (
            {"v": {"type": "integer", "allOf": [{"minimum": 0}, {"maximum": 10}]}},
            {"v": 11},
            [
                "FieldValueInvalid spec.v: Invalid value: 11: spec.v in body should be less than "
                "or equal to 10",
                'FieldValueInvalid <nil>: Invalid value: "": "spec.v" must validate all the '
                "schemas (allOf)",
            ],
        ),
        (
            {"v": {"type": "string", "not": {"enum": ["bad"]}}},
            {"v": "bad"},
            [
                'FieldValueInvalid <nil>: Invalid value: "": "spec.v" must not validate the '
                "schema (not)"
            ],
        ),
        (
            {
                "set": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                }
            },
            {"set": ["a", "b", "a", "a", "b"]},
            [
                'FieldValueDuplicate spec.set[2]: Duplicate value: "a"',
                'FieldValueDuplicate spec.set[4]: Duplicate value: "b"',
            ],
        ),
        (
            {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                }
            },
            {"ports": [{"name": "a"}, {"name": "a"}, {}, {}]},
            [
                "FieldValueDuplicate spec.ports[1]: Duplicate value: "
                'map[string]interface {}{"name":"a"}',
                "FieldValueDuplicate spec.ports[3]: Duplicate value: map[string]interface {}{}",
            ],
        ),
        (
            {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                }
            },
            {"template": {"apiVersion": "a/b/c", "metadata": {"name": "x/y"}}},
            [
                "FieldValueRequired spec.template.kind: Required value",
                'FieldValueInvalid spec.template.apiVersion: Invalid value: "a/b/c": unexpected '
                "GroupVersion string: a/b/c",
                'FieldValueInvalid spec.template.metadata.name: Invalid value: "x/y": may not '
                "contain '/'",
            ],
        ),
    ],
)
def test_validation_errors_match_kube_apiserver(
    props: dict[str, Any], spec: dict[str, Any], expected: list[str]
) -> None:
    schema = _root(_spec(**props))
    obj = _cr(spec)
    before = copy.deepcopy(obj)
    got = [f"{e.type} {e}" for e in validate(obj, schema)]
    assert got == expected
    assert obj == before


def test_required_and_root_metadata_rules() -> None:
    schema = _root({"type": "object", "required": ["image"], "properties": {}})
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 3}},
    }
    schema["required"] = ["spec"]
    obj = _cr({})
    obj["metadata"] = {"name": "toolong", "labels": {"anything": "goes"}, "uid": 7}
    errors = validate(obj, schema)
    assert [str(e) for e in errors] == [
        "metadata.name: Too long: may not be longer than 3",
        "spec.image: Required value",
    ]
    assert errors[1].as_cause() == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.image",
    }
    missing = validate({"apiVersion": "v", "kind": "k", "metadata": {}}, schema)
    assert [str(e) for e in missing] == ["spec: Required value"]


def test_field_error_keeps_the_bad_value() -> None:
    schema = _root(_spec(replicas={"type": "integer", "minimum": 0}))
    (error,) = validate(_cr({"replicas": -3}), schema)
    assert error == FieldError(
        "FieldValueInvalid",
        "spec.replicas",
        "Invalid value: -3: spec.replicas in body should be greater than or equal to 0",
        -3,
    )


# --- defaulting ----------------------------------------------------------------------------------

_DEFAULTS_SCHEMA = _root(
    _spec(
        replicas={"type": "integer", "default": 1},
        policy={
            "type": "object",
            "default": {},
            "properties": {"mode": {"type": "string", "default": "Always"}},
        },
        workers={
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"image": {"type": "string", "default": "busybox"}},
            },
        },
        env={
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"value": {"type": "string", "default": "x"}},
            },
        },
        optional={"type": "string"},
        nullable={"type": "string", "nullable": True, "default": "d"},
        nulldefault={"type": "string", "default": "filled"},
        free={
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        },
    )
)


def test_defaults_apply_where_the_real_server_applies_them() -> None:
    obj = _cr(
        {
            "workers": [{}, {"image": "custom"}],
            "env": {"A": {}, "B": {"value": "set"}},
            "optional": None,
            "nullable": None,
            "nulldefault": None,
            "free": {"unknown": None},
        }
    )
    before = copy.deepcopy(obj)
    result = apply_defaults(obj, _DEFAULTS_SCHEMA)
    assert result["spec"] == {
        "replicas": 1,
        "policy": {"mode": "Always"},
        "workers": [{"image": "busybox"}, {"image": "custom"}],
        "env": {"A": {"value": "x"}, "B": {"value": "set"}},
        "nullable": None,
        "nulldefault": "filled",
        "free": {"unknown": None},
    }
    assert obj == before
    assert result["metadata"] is obj["metadata"]


def test_defaults_are_idempotent_and_copied() -> None:
    once = apply_defaults(_cr({}), _DEFAULTS_SCHEMA)
    assert apply_defaults(once, _DEFAULTS_SCHEMA) == once
    schema_default = _DEFAULTS_SCHEMA["properties"]["spec"]["properties"]["policy"]["default"]
    assert once["spec"]["policy"] is not schema_default
    assert schema_default == {}


# --- pruning -------------------------------------------------------------------------------------


def test_prune_drops_unknown_fields_and_keeps_type_meta() -> None:
    schema = _root(
        _spec(
            image={"type": "string"},
            nested={"type": "object", "properties": {"a": {"type": "integer"}}},
            items={
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            labels={"type": "object", "additionalProperties": {"type": "string"}},
            free={
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {
                    "known": {"type": "object", "properties": {"k": {"type": "string"}}}
                },
            },
            template={
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}},
            },
        )
    )
    obj = _cr(
        {
            "image": "i",
            "junk": 1,
            "nested": {"a": 1, "b": 2},
            "items": [{"name": "a", "extra": True}],
            "labels": {"x": "y"},
            "free": {"whatever": {"deep": 1}, "known": {"k": "v", "drop": 1}},
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"x": "1", "y": "2"},
                "status": {},
            },
        },
        status={"ignored": True},
    )
    before = copy.deepcopy(obj)
    result = prune(obj, schema)
    assert result == _cr(
        {
            "image": "i",
            "nested": {"a": 1},
            "items": [{"name": "a"}],
            "labels": {"x": "y"},
            "free": {"whatever": {"deep": 1}, "known": {"k": "v"}},
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"x": "1"},
            },
        }
    )
    assert obj == before
    assert result["spec"]["labels"] is obj["spec"]["labels"]
    assert result["metadata"] is obj["metadata"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab", max_size=2),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["image", "nested", "a", "b", "junk"]), inner, max_size=3)
    ),
    max_leaves=10,
)
_PRUNE_SCHEMA = _root(
    _spec(
        image={"type": "string"},
        nested={"type": "object", "properties": {"a": {"type": "integer"}}},
    )
)


def _is_subset(small: Any, big: Any) -> bool:
    if isinstance(small, dict):
        return isinstance(big, dict) and all(
            k in big and _is_subset(v, big[k]) for k, v in small.items()
        )
    if isinstance(small, list):
        return (
            isinstance(big, list)
            and len(small) == len(big)
            and all(_is_subset(a, b) for a, b in zip(small, big, strict=True))
        )
    return bool(small == big)


@given(st.dictionaries(st.sampled_from(["image", "nested", "junk"]), _JSON, max_size=3))
def test_prune_is_idempotent_and_only_removes(spec: dict[str, Any]) -> None:
    obj = _cr(spec)
    pruned = prune(obj, _PRUNE_SCHEMA)
    assert prune(pruned, _PRUNE_SCHEMA) == pruned
    assert _is_subset(pruned, obj)
    assert set(pruned["spec"]) <= {"image", "nested"}


# --- structural schema checks --------------------------------------------------------------------

_GOOD = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
        "spec": {
            "type": "object",
            "required": ["image"],
            "properties": {
                "image": {"type": "string", "description": "what to run"},
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "port": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}},
                    },
                },
                "mode": {
                    "type": "string",
                    "anyOf": [{"enum": ["a"]}, {"pattern": "^b"}],
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def test_a_structural_schema_has_no_errors() -> None:
    assert structural_errors(_GOOD) == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}},
            [
                "openAPIV3Schema.properties[spec].type: Required value: must not be empty for "
                "specified object fields"
            ],
        ),
        (
            {"properties": {"spec": {"type": "object"}}},
            ["openAPIV3Schema.type: Required value: must not be empty at the root"],
        ),
        (
            {"type": "object", "properties": {"l": {"type": "array"}}},
            ["openAPIV3Schema.properties[l].items: Required value: must be specified"],
        ),
        (
            {"type": "object", "properties": {"x": {"$ref": "#/definitions/x"}}},
            ["openAPIV3Schema.properties[x].$ref: Forbidden: $ref is not supported"],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "l": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}
                },
            },
            [
                "openAPIV3Schema.properties[l].uniqueItems: Forbidden: uniqueItems cannot be set "
                "to true since the runtime complexity becomes quadratic"
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "o": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}},
                        "additionalProperties": {"type": "string"},
                    }
                },
            },
            [
                "openAPIV3Schema.properties[o].additionalProperties: Forbidden: "
                "additionalProperties and properties are mutual exclusive"
            ],
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            ["openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root"],
        ),
        (
            {"type": "string"},
            ['openAPIV3Schema.type: Invalid value: "string": must be object at the root'],
        ),
        (
            {"type": "object", "properties": {"a": {"type": "strin"}}},
            [
                'openAPIV3Schema.properties[a].type: Unsupported value: "strin": supported '
                'values: "array", "boolean", "integer", "number", "object", "string"'
            ],
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}},
            },
            [
                "openAPIV3Schema.properties[a].anyOf[0].type: Forbidden: must be empty to be "
                "structural"
            ],
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "allOf": [{"properties": {"b": {"maxLength": 1}}}],
            },
            [
                "openAPIV3Schema.properties[b]: Required value: because it is defined in "
                "openAPIV3Schema.allOf[0].properties[b]"
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                        },
                    }
                },
            },
            [
                "openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other "
                "than name and generateName, but metadata is implicitly specified"
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {"name": {"type": "string", "default": "x"}},
                    }
                },
            },
            [
                "openAPIV3Schema.properties[metadata].properties[name].default: Forbidden: must "
                "not be set in top-level metadata"
            ],
        ),
        (
            {"type": "object", "properties": {"n": {"type": "integer", "default": "one"}}},
            [
                'openAPIV3Schema.properties[n].default: Invalid value: "string":  in body must be '
                'of type integer: "string"'
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "o": {
                        "type": "object",
                        "default": {"x": 1},
                        "properties": {"a": {"type": "integer"}},
                    }
                },
            },
            [
                "openAPIV3Schema.properties[o].default: Invalid value: map[string]interface "
                '{}{"x":1}: must not have unknown fields'
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "x-kubernetes-preserve-unknown-fields": False}
                },
            },
            [
                "openAPIV3Schema.properties[a].x-kubernetes-preserve-unknown-fields: Invalid "
                "value: false: must be true or undefined"
            ],
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "x-kubernetes-list-type": "set"}},
            },
            [
                'openAPIV3Schema.properties[a].type: Invalid value: "string": must be array if '
                "x-kubernetes-list-type is specified"
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "l": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["k", "missing"],
                        "items": {"type": "object", "properties": {"k": {"type": "string"}}},
                    }
                },
            },
            [
                "openAPIV3Schema.properties[l].items.properties[k].default: Required value: this "
                "property is in x-kubernetes-list-map-keys, so it must have a default or be a "
                "required property",
                "openAPIV3Schema.properties[l].x-kubernetes-list-map-keys: Invalid value: "
                '[]interface {}{"k", "missing"}: entries must all be names of item properties',
            ],
        ),
        (
            {
                "type": "object",
                "properties": {"t": {"type": "object", "x-kubernetes-embedded-resource": True}},
            },
            [
                "openAPIV3Schema.properties[t].properties: Required value: must not be empty if "
                "x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields"
            ],
        ),
    ],
)
def test_structural_errors(schema: dict[str, Any], expected: list[str]) -> None:
    assert structural_errors(schema) == expected


def test_structural_errors_are_prefixed_with_the_given_path() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "#/a"}}}
    path = "spec.versions[0].schema.openAPIV3Schema"
    assert structural_errors(schema, path=path) == [
        f"{path}.properties[x].$ref: Forbidden: $ref is not supported"
    ]
