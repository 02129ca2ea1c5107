"""CRD validation ratcheting: an update is not refused for what it left as it was stored."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from etctl._apimachinery.jsonvalues import identical
from etctl._apimachinery.resourcechecks import check_list_types
from etctl._apimachinery.validator import validate_object

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string", "enum": ["example.com/v1"]},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "color": {"type": "string", "enum": ["red", "blue"]},
                "count": {"type": "string"},
                "sizes": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "port": {"type": "integer", "maximum": 100},
                        },
                    },
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "maxLength": 3},
                },
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


def _obj(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }


def _fields(errors: list[Any]) -> list[str]:
    return [str(e).split(":")[0] for e in errors]


def test_an_unchanged_invalid_value_is_ratcheted_and_a_changed_one_is_not() -> None:
    old = _obj(color="green")
    assert _fields(validate_object(old, SCHEMA)) == ["spec.color"]  # as on create
    kept = _obj(color="green", count="3")
    assert validate_object(kept, SCHEMA, old=old) == []
    changed = _obj(color="yellow")
    assert _fields(validate_object(changed, SCHEMA, old=old)) == ["spec.color"]


def test_a_status_write_is_not_refused_for_an_invalid_spec() -> None:
    old = _obj(color="green", sizes=[-1])
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Running"}
    assert validate_object(new, SCHEMA, old=old) == []
    new["status"] = {"phase": 7}
    assert _fields(validate_object(new, SCHEMA, old=old)) == ["status.phase"]


def test_a_change_of_json_type_is_a_change() -> None:
    old = _obj(count=1)  # not a string: stored before the schema said so
    assert validate_object(_obj(count=1), SCHEMA, old=old) == []
    assert _fields(validate_object(_obj(count=True), SCHEMA, old=old)) == ["spec.count"]
    assert _fields(validate_object(_obj(count=1.0), SCHEMA, old=old)) == ["spec.count"]
    assert _fields(validate_object(_obj(count=1), SCHEMA, old=_obj(count=True))) == ["spec.count"]


def test_list_items_are_correlated_only_in_map_lists() -> None:
    # An atomic list is unchanged only as a whole: a new item makes every item count again.
    old = _obj(sizes=[-1])
    assert validate_object(_obj(sizes=[-1]), SCHEMA, old=old) == []
    assert _fields(validate_object(_obj(sizes=[-1, 2]), SCHEMA, old=old)) == ["spec.sizes[0]"]
    # A map list's items are correlated by key, wherever they moved.
    old = _obj(ports=[{"name": "a", "port": 500}])
    moved = _obj(ports=[{"name": "b", "port": 1}, {"name": "a", "port": 500}])
    assert validate_object(moved, SCHEMA, old=old) == []
    changed = _obj(ports=[{"name": "a", "port": 501}])
    assert _fields(validate_object(changed, SCHEMA, old=old)) == ["spec.ports[0].port"]
    renamed = _obj(ports=[{"name": "c", "port": 500}])
    assert _fields(validate_object(renamed, SCHEMA, old=old)) == ["spec.ports[0].port"]


def test_map_values_are_correlated_by_key() -> None:
    old = _obj(labels={"a": "long", "b": "ok"})
    assert validate_object(_obj(labels={"a": "long", "b": "no"}), SCHEMA, old=old) == []
    assert _fields(validate_object(_obj(labels={"b": "long"}), SCHEMA, old=old)) == [
        "spec.labels.b"
    ]


def test_api_version_is_never_ratcheted() -> None:
    old = _obj(color="red")
    old["apiVersion"] = "example.com/v2"
    new = _obj(color="blue")
    new["apiVersion"] = "example.com/v2"
    assert _fields(validate_object(new, SCHEMA, old=old)) == ["apiVersion"]
    assert validate_object(copy.deepcopy(old), SCHEMA, old=old) == []  # nothing changed at all


def test_list_type_errors_are_reported_only_when_the_old_object_had_none() -> None:
    clean = _obj(tags=["a"], ports=[{"name": "a"}])
    repeated = _obj(tags=["a", "a"], ports=[{"name": "a"}])
    assert _fields(validate_object(repeated, SCHEMA, old=clean)) == ["spec.tags[1]"]
    # The old object repeated an item: the update's list-type errors are not reported at all,
    # even those of a list it changed (as kube-apiserver's ValidateUpdate does).
    both = _obj(tags=["a", "a"], ports=[{"name": "a"}, {"name": "a"}])
    assert validate_object(both, SCHEMA, old=repeated) == []
    assert _fields(validate_object(both, SCHEMA)) == ["spec.tags[1]", "spec.ports[1]"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3) | st.text("ab", max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2), inner),
    max_leaves=8,
)


@given(_JSON, _JSON)
def test_identical_is_equality_with_json_types(left: Any, right: Any) -> None:
    def typed(value: Any) -> Any:
        if isinstance(value, dict):
            return ("o", {k: typed(v) for k, v in value.items()})
        if isinstance(value, list):
            return ("a", [typed(v) for v in value])
        return (type(value).__name__, value)

    assert identical(left, right) == (typed(left) == typed(right))
    assert identical(left, copy.deepcopy(left))


@given(_JSON, _JSON)
def test_list_type_errors_with_the_old_object_are_kube_apiservers(left: Any, right: Any) -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {}},
            "m": {"type": "object", "additionalProperties": SCHEMA["properties"]["spec"]},
        },
    }
    old = {"s": [left, right], "m": {"x": {"tags": [left, "a"]}}}
    new = {"s": [right, left], "m": {"x": {"tags": [right, "a"]}, "y": {"tags": [left]}}}
    expected = check_list_types(new, schema) if not check_list_types(old, schema) else []
    assert check_list_types(new, schema, old=old) == expected
