"""The JSON patch a defaulting webhook answers with, applied as kube-apiserver applies it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from etctl.runtime._jsonpatch import diff, pointer
from etctl.testing._apiserver._jsonpatch import apply_json_patch

_SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
_KEYS = st.sampled_from(["a", "b", "c/d", "e~f", "", "0"])
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(_KEYS, _JSON, max_size=5), st.dictionaries(_KEYS, _JSON, max_size=5))
def test_the_patch_turns_the_source_into_the_target(source: Any, target: Any) -> None:
    assert apply_json_patch(source, diff(source, target)) == target


@given(st.dictionaries(_KEYS, _JSON, max_size=5))
def test_an_unchanged_document_needs_no_patch(document: Any) -> None:
    assert diff(document, document) == []


def test_a_default_deep_inside_is_one_add() -> None:
    source: dict[str, Any] = {"spec": {"replicaSpecs": {"Worker": {"template": {"spec": {}}}}}}
    target = {"spec": {"replicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {}}}}}}
    assert diff(source, target) == [
        {"op": "add", "path": "/spec/replicaSpecs/Worker/replicas", "value": 1}
    ]


def test_arrays_shrink_from_the_end_and_grow_at_it() -> None:
    assert diff({"a": [1, 2, 3]}, {"a": [1]}) == [
        {"op": "remove", "path": "/a/2"},
        {"op": "remove", "path": "/a/1"},
    ]
    assert diff({"a": [1]}, {"a": [1, {"b": 2}]}) == [
        {"op": "add", "path": "/a/1", "value": {"b": 2}}
    ]


def test_a_boolean_is_not_a_number_and_keys_are_escaped() -> None:
    assert diff({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    assert diff({"a": 1}, {"a": 1.0}) == []
    assert pointer("metadata", "annotations", "example.com/a~b") == (
        "/metadata/annotations/example.com~1a~0b"
    )
