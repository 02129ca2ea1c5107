from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etctl.testing._apiserver.patch import (
    MAX_JSON_PATCH_OPERATIONS,
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)

# --- RFC 7386 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        # RFC 7386 appendix A, every case whose target and result are objects.
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        # Nulls inside objects of a newly set array are dropped too (json-patch v4).
        ({}, {"a": [{"b": None, "c": 1}, None]}, {"a": [{"c": 1}, None]}),
        # Deleting what is not there is not an error.
        ({"a": 1}, {"z": None}, {"a": 1}),
        (
            {"metadata": {"labels": {"x": "1"}}},
            {"metadata": {"labels": {"y": "2"}}},
            {"metadata": {"labels": {"x": "1", "y": "2"}}},
        ),
    ],
)
def test_merge_patch_follows_rfc_7386(
    target: dict[str, Any], patch: Any, expected: dict[str, Any]
) -> None:
    before = copy.deepcopy(target), copy.deepcopy(patch)
    assert apply_merge_patch(target, patch) == expected
    assert (target, patch) == before


@pytest.mark.parametrize("patch", [None, "bar", 3, True])
def test_merge_patch_rejects_non_object_documents(patch: Any) -> None:
    with pytest.raises(PatchError) as info:
        apply_merge_patch({"a": "foo"}, patch)
    assert (info.value.status, info.value.reason, str(info.value)) == (
        400,
        "BadRequest",
        "Invalid JSON Patch",
    )


def test_merge_patch_with_an_array_is_invalid_as_an_object() -> None:
    with pytest.raises(PatchError) as info:
        apply_merge_patch({"a": "foo"}, ["c"])
    err = info.value
    assert err.status == 422
    assert err.reason == "Invalid"
    assert err.message.startswith(' "" is invalid: patch: Invalid value: "[\\"c\\"]": ')
    assert err.causes[0]["field"] == "patch"


def test_merge_patch_shares_untouched_subtrees() -> None:
    target: dict[str, Any] = {"spec": {"a": {"deep": [1, 2]}}, "status": {"x": 1}}
    result = apply_merge_patch(target, {"spec": {"b": 1}})
    assert result["status"] is target["status"]
    assert result["spec"]["a"] is target["spec"]["a"]
    assert result["spec"] is not target["spec"]


_JSON_SCALARS = st.one_of(st.booleans(), st.integers(-5, 5), st.text(max_size=3))
_JSON_DOCS = st.recursive(
    _JSON_SCALARS | st.lists(_JSON_SCALARS, max_size=3),
    lambda inner: st.dictionaries(st.text("abc", max_size=2), inner, max_size=4),
    max_leaves=12,
)
_OBJECTS = st.dictionaries(st.text("abc", max_size=2), _JSON_DOCS, max_size=4)


def _merge_diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The merge patch that takes ``old`` to ``new`` (the client-side half of RFC 7386)."""
    patch: dict[str, Any] = {k: None for k in old if k not in new}
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(old.get(key), dict):
            sub = _merge_diff(old[key], value)
            if sub:
                patch[key] = sub
        elif key not in old or old[key] != value or type(old[key]) is not type(value):
            patch[key] = value
    return patch


@given(_OBJECTS, _OBJECTS)
def test_merge_patch_of_a_diff_reproduces_the_target(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    snapshot = copy.deepcopy(old)
    assert apply_merge_patch(old, _merge_diff(old, new)) == new
    assert old == snapshot


# --- RFC 6902 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "ops", "expected"),
    [
        # RFC 6902 appendix A.
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"baz": "qux", "foo": "bar"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        (
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
        ),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ],
            {"baz": "qux", "foo": ["a", 2, "c"]},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
            {"foo": "bar", "child": {"grandchild": {}}},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
            {"foo": "bar", "baz": "qux"},
        ),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
        (
            {"foo": ["bar"]},
            [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
            {"foo": ["bar", ["abc", "def"]]},
        ),
        # Escapes in every position, and copy.
        (
            {"a/b": {"m~n": 1}},
            [{"op": "copy", "from": "/a~1b/m~0n", "path": "/c"}],
            {"a/b": {"m~n": 1}, "c": 1},
        ),
        # Operations see the effects of earlier ones.
        (
            {},
            [
                {"op": "add", "path": "/a", "value": {}},
                {"op": "add", "path": "/a/b", "value": 1},
                {"op": "copy", "from": "/a", "path": "/c"},
                {"op": "remove", "path": "/a/b"},
            ],
            {"a": {}, "c": {"b": 1}},
        ),
        # json-patch v4: replace of a missing member adds it; negative indices count from the end.
        ({"a": {}}, [{"op": "replace", "path": "/a/b", "value": 1}], {"a": {"b": 1}}),
        ({"a": [1, 2]}, [{"op": "add", "path": "/a/-1", "value": 9}], {"a": [1, 2, 9]}),
        ({"a": [1, 2]}, [{"op": "add", "path": "/a/-3", "value": 9}], {"a": [9, 1, 2]}),
        ({"a": [1, 2, 3]}, [{"op": "remove", "path": "/a/-1"}], {"a": [1, 2]}),
        # A test against null passes where the member is absent.
        ({"a": 1}, [{"op": "test", "path": "/b", "value": None}], {"a": 1}),
        (
            {"spec": {"containers": [{"name": "c", "args": ["x"]}]}},
            [{"op": "add", "path": "/spec/containers/0/args/-", "value": "y"}],
            {"spec": {"containers": [{"name": "c", "args": ["x", "y"]}]}},
        ),
        ({"a": 1}, None, {"a": 1}),
        ({"a": 1}, [], {"a": 1}),
    ],
)
def test_json_patch_follows_rfc_6902(
    target: dict[str, Any], ops: Any, expected: dict[str, Any]
) -> None:
    before = copy.deepcopy(target), copy.deepcopy(ops)
    result = apply_json_patch(target, ops)
    assert result == expected
    assert result is not target
    assert (target, ops) == before


@pytest.mark.parametrize(
    ("target", "op", "detail"),
    [
        (
            {"baz": "qux"},
            {"op": "test", "path": "/baz", "value": "bar"},
            "testing value /baz failed: test failed",
        ),
        (
            {"/": 9, "~1": 10},
            {"op": "test", "path": "/~01", "value": "10"},
            "testing value /~01 failed: test failed",
        ),
        (
            {"foo": "bar"},
            {"op": "add", "path": "/baz/bat", "value": "qux"},
            'add operation does not apply: doc is missing path: "/baz/bat": missing value',
        ),
        (
            {"a": 1},
            {"op": "add", "path": "", "value": 1},
            'add operation does not apply: doc is missing path: "": missing value',
        ),
        (
            {"a": [1]},
            {"op": "add", "path": "/a/5", "value": 1},
            "error in add for path: '/a/5': Unable to access invalid index: 5: invalid index "
            "referenced",
        ),
        (
            {"a": [1]},
            {"op": "add", "path": "/a/x", "value": 1},
            "error in add for path: '/a/x': value was not a proper array index: 'x': "
            'strconv.Atoi: parsing "x": invalid syntax',
        ),
        (
            {"a": 1},
            {"op": "remove", "path": "/b"},
            "error in remove for path: '/b': Unable to remove nonexistent key: b: missing value",
        ),
        (
            {"a": 1},
            {"op": "remove", "path": "/b/c"},
            'remove operation does not apply: doc is missing path: "/b/c": missing value',
        ),
        (
            {"a": [1]},
            {"op": "remove", "path": "/a/1"},
            "error in remove for path: '/a/1': Unable to access invalid index: 1: invalid index "
            "referenced",
        ),
        (
            {"a": [1]},
            {"op": "remove", "path": "/a/-"},
            "error in remove for path: '/a/-': strconv.Atoi: parsing \"-\": invalid syntax",
        ),
        (
            {"a": [1]},
            {"op": "replace", "path": "/a/3", "value": 1},
            "replace operation does not apply: doc is missing key: /a/3: missing value",
        ),
        (
            {"a": 1},
            {"op": "replace", "path": "/x/y", "value": 1},
            "replace operation does not apply: doc is missing path: /x/y: missing value",
        ),
        (
            {"a": 1},
            {"op": "move", "from": "/b", "path": "/c"},
            "error in move for path: 'b': Unable to remove nonexistent key: b: missing value",
        ),
        (
            {"a": 1},
            {"op": "move", "from": "/a", "path": "/x/y"},
            "move operation does not apply: doc is missing destination path: /x/y: missing value",
        ),
        (
            {"a": 1},
            {"op": "copy", "from": "/x/y", "path": "/c"},
            "copy operation does not apply: doc is missing from path: /x/y: missing value",
        ),
        (
            {"a": 1},
            {"op": "test", "path": "/x/y", "value": 1},
            "test operation does not apply: is missing path: /x/y: missing value",
        ),
        ({"a": 1}, {"op": "add", "value": 1}, "add operation failed to decode path: missing value"),
        (
            {"a": 1},
            {"op": "replace", "value": 1},
            "replace operation failed to decode path: operation missing path field: missing value",
        ),
        (
            {"a": 1},
            {"op": "replace", "path": 3, "value": 1},
            "replace operation failed to decode path: json: cannot unmarshal number into Go value "
            "of type string",
        ),
        (
            {"a": 1},
            {"op": "move", "path": "/b"},
            "move operation failed to decode from: operation, missing from field: missing value",
        ),
        ({"a": 1}, {"op": "frobnicate", "path": "/a"}, "Unexpected kind: frobnicate"),
        ({"a": 1}, {"path": "/a"}, "Unexpected kind: unknown"),
    ],
)
def test_json_patch_failures_are_422_with_the_library_detail(
    target: dict[str, Any], op: dict[str, Any], detail: str
) -> None:
    with pytest.raises(PatchError) as info:
        apply_json_patch(target, [op])
    err = info.value
    assert (err.status, err.reason, err.detail) == (422, "Invalid", detail)
    assert err.message == "the server rejected our request due to an error in our request"


def test_a_failed_operation_discards_the_earlier_ones() -> None:
    target = {"a": {"b": 1}}
    with pytest.raises(PatchError):
        apply_json_patch(
            target,
            [{"op": "remove", "path": "/a/b"}, {"op": "test", "path": "/a/b", "value": 1}],
        )
    assert target == {"a": {"b": 1}}


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ("x", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
        ([1], "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
        ([[]], "json: cannot unmarshal array into Go value of type jsonpatch.Operation"),
    ],
)
def test_malformed_json_patch_documents_are_400(ops: Any, message: str) -> None:
    with pytest.raises(PatchError) as info:
        apply_json_patch({}, ops)
    assert (info.value.status, info.value.reason, str(info.value)) == (400, "BadRequest", message)


def test_json_patch_operation_limit() -> None:
    ops = [{"op": "test", "path": "/a", "value": 1}] * (MAX_JSON_PATCH_OPERATIONS + 1)
    with pytest.raises(PatchError) as info:
        apply_json_patch({"a": 1}, ops)
    assert info.value.status == 413
    assert str(info.value) == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
        "got 10001"
    )


def test_json_patch_copies_only_the_changed_path() -> None:
    target: dict[str, Any] = {"spec": {"x": {"y": 1}}, "status": {"big": list(range(5))}}
    result = apply_json_patch(target, [{"op": "replace", "path": "/spec/x/y", "value": 2}])
    assert result["status"] is target["status"]
    assert result["spec"]["x"] == {"y": 2}
    assert target["spec"]["x"] == {"y": 1}


# --- strategic merge patch -----------------------------------------------------------------------


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def _names(items: list[dict[str, Any]]) -> list[str]:
    return [i["name"] for i in items]


def test_containers_merge_by_name() -> None:
    pod = _pod(containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])
    result = apply_strategic_merge_patch(
        pod, {"spec": {"containers": [{"name": "a", "image": "z"}]}}, "Pod"
    )
    assert result["spec"]["containers"] == [
        {"name": "a", "image": "z"},
        {"name": "b", "image": "y"},
    ]
    assert pod["spec"]["containers"][0]["image"] == "x"
    assert result["spec"]["containers"][1] is pod["spec"]["containers"][1]


def test_new_list_elements_go_before_the_live_ones_they_precede() -> None:
    pod = _pod(containers=[{"name": "a"}, {"name": "b"}])
    result = apply_strategic_merge_patch(
        pod, {"spec": {"containers": [{"name": "c", "image": "i"}]}}, "Pod"
    )
    assert _names(result["spec"]["containers"]) == ["c", "a", "b"]


def test_nested_lists_merge_by_their_own_keys() -> None:
    pod = _pod(
        containers=[
            {
                "name": "a",
                "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "volumeMounts": [{"name": "v", "mountPath": "/m"}],
                "args": ["--old"],
            }
        ]
    )
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "env": [{"name": "Y", "value": "3"}],
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "volumeMounts": [{"name": "w", "mountPath": "/m", "readOnly": True}],
                    "args": ["--new"],
                }
            ]
        }
    }
    container = apply_strategic_merge_patch(pod, patch, "Pod")["spec"]["containers"][0]
    assert container["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "http"}]
    assert container["volumeMounts"] == [{"name": "w", "mountPath": "/m", "readOnly": True}]
    assert container["args"] == ["--new"]


def test_delete_directive_removes_list_elements() -> None:
    pod = _pod(containers=[{"name": "a"}, {"name": "b"}, {"name": "c"}])
    result = apply_strategic_merge_patch(
        pod, {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}, "Pod"
    )
    assert _names(result["spec"]["containers"]) == ["a", "c"]


def test_replace_directive_replaces_a_whole_list() -> None:
    pod = _pod(containers=[{"name": "a"}, {"name": "b"}])
    patch = {"spec": {"containers": [{"name": "z", "image": "q"}, {"$patch": "replace"}]}}
    result = apply_strategic_merge_patch(pod, patch, "Pod")
    assert result["spec"]["containers"] == [{"name": "z", "image": "q"}]


def test_map_directives() -> None:
    pod = _pod(nodeSelector={"a": "1", "b": "2"})
    pod["metadata"]["labels"] = {"x": "1"}
    result = apply_strategic_merge_patch(
        pod,
        {
            "spec": {"nodeSelector": {"$patch": "replace", "c": "3"}},
            "metadata": {"labels": {"$patch": "delete"}},
        },
        "Pod",
    )
    assert result["spec"]["nodeSelector"] == {"c": "3"}
    assert result["metadata"]["labels"] == {}


def test_primitive_lists_merge_as_sets_and_delete_from_parallel_lists() -> None:
    pod = _pod()
    pod["metadata"]["finalizers"] = ["a", "b"]
    merged = apply_strategic_merge_patch(pod, {"metadata": {"finalizers": ["c", "a"]}}, "Pod")
    assert merged["metadata"]["finalizers"] == ["c", "a", "b"]
    deleted = apply_strategic_merge_patch(
        merged, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zz"]}}, "Pod"
    )
    assert deleted["metadata"]["finalizers"] == ["c", "b"]


def test_set_element_order_reorders_and_merges() -> None:
    pod = _pod(containers=[{"name": "a"}, {"name": "b"}])
    reordered = apply_strategic_merge_patch(
        pod, {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}, "Pod"
    )
    assert _names(reordered["spec"]["containers"]) == ["b", "a"]
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "n"}, {"name": "b"}],
            "containers": [{"name": "n", "image": "new"}],
        }
    }
    inserted = apply_strategic_merge_patch(pod, patch, "Pod")
    assert _names(inserted["spec"]["containers"]) == ["a", "n", "b"]
    pod["metadata"]["finalizers"] = ["x", "y"]
    ordered = apply_strategic_merge_patch(
        pod,
        {"metadata": {"$setElementOrder/finalizers": ["y", "z", "x"], "finalizers": ["z"]}},
        "Pod",
    )
    assert ordered["metadata"]["finalizers"] == ["y", "z", "x"]


def test_retain_keys_clears_fields_not_listed() -> None:
    pod = _pod(volumes=[{"name": "v", "hostPath": {"path": "/x"}}])
    patch = {
        "spec": {"volumes": [{"name": "v", "emptyDir": {}, "$retainKeys": ["emptyDir", "name"]}]}
    }
    result = apply_strategic_merge_patch(pod, patch, "Pod")
    assert result["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]


@pytest.mark.parametrize(
    ("kind", "target", "patch", "expected"),
    [
        (
            "Pod",
            {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2"}]}},
            {"metadata": {"ownerReferences": [{"uid": "2", "controller": True}]}},
            {
                "metadata": {
                    "ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "controller": True}]
                }
            },
        ),
        (
            "Pod",
            {
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "False"},
                        {"type": "Scheduled", "status": "True"},
                    ]
                }
            },
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            {
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "True"},
                        {"type": "Scheduled", "status": "True"},
                    ]
                }
            },
        ),
        (
            "Pod",
            {"spec": {"tolerations": [{"key": "a"}, {"key": "b"}]}},
            {"spec": {"tolerations": [{"key": "c"}]}},
            {"spec": {"tolerations": [{"key": "c"}]}},
        ),
        (
            "Service",
            {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}},
            {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}},
            {
                "spec": {
                    "ports": [
                        {"port": 80, "name": "http"},
                        {"port": 443, "name": "https", "targetPort": 8443},
                    ]
                }
            },
        ),
        (
            "Node",
            {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}},
            {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}},
            {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}},
        ),
        (
            "ServiceAccount",
            {"secrets": [{"name": "a"}]},
            {"secrets": [{"name": "b"}]},
            {"secrets": [{"name": "b"}, {"name": "a"}]},
        ),
        # Unknown kinds: metadata still merges strategically, everything else like a merge patch.
        (
            "Widget",
            {"metadata": {"finalizers": ["a"]}, "spec": {"items": [1, 2], "m": {"k": 1}}},
            {"metadata": {"finalizers": ["b"]}, "spec": {"items": [3], "m": {"j": None, "l": 2}}},
            {"metadata": {"finalizers": ["b", "a"]}, "spec": {"items": [3], "m": {"k": 1, "l": 2}}},
        ),
        (
            "ConfigMap",
            {"data": {"a": "1", "b": "2"}},
            {"data": {"a": None, "c": "3"}},
            {"data": {"b": "2", "c": "3"}},
        ),
        # A new subtree is taken with its directives resolved and its nulls dropped.
        (
            "Pod",
            {"spec": {}},
            {"spec": {"containers": [{"name": "a", "x": None}, {"name": "b", "$patch": "delete"}]}},
            {"spec": {"containers": [{"name": "a"}]}},
        ),
    ],
)
def test_strategic_merge_table(
    kind: str, target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    before = copy.deepcopy(target), copy.deepcopy(patch)
    assert apply_strategic_merge_patch(target, patch, kind) == expected
    assert (target, patch) == before


@pytest.mark.parametrize(
    ("patch", "status", "reason", "message"),
    [
        (
            {"spec": {"containers": [{"image": "nginx"}]}},
            500,
            "",
            "map: map[image:nginx] does not contain declared merge key: name",
        ),
        (
            ["x"],
            400,
            "BadRequest",
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            {"spec": {"volumes": [{"name": "v", "$retainKeys": "name"}]}},
            400,
            "BadRequest",
            "invalid patch format of retainKeys",
        ),
        (
            {"spec": {"volumes": [{"name": "v", "emptyDir": {}, "$retainKeys": ["name"]}]}},
            400,
            "BadRequest",
            "invalid patch format of retainKeys",
        ),
        (
            {"metadata": {"$deleteFromPrimitiveListX/finalizers": ["a"]}},
            400,
            "BadRequest",
            "invalid patch format of primitive list",
        ),
        (
            {"spec": {"$setElementOrderX/containers": []}},
            400,
            "BadRequest",
            "invalid patch format of setElementOrder list",
        ),
        (
            {"spec": {"containers": [{"$patch": "merge"}]}},
            500,
            "",
            "merging lists cannot yet be specified in the patch",
        ),
        (
            {"spec": {"$patch": "frob"}},
            500,
            "",
            "unknown patch type: frob in map: map[$patch:frob]",
        ),
        (
            {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}],
                    "containers": [{"name": "b"}],
                }
            },
            500,
            "",
            "The order in patch list:\n[map[name:b]]\n doesn't match $setElementOrder list:\n"
            "[map[name:a]]\n",
        ),
        (
            {"metadata": {"finalizers": ["a", 1]}},
            500,
            "",
            "list element types are not identical: [[x] [a 1]]",
        ),
    ],
)
def test_strategic_merge_errors(patch: Any, status: int, reason: str, message: str) -> None:
    pod = _pod(containers=[{"name": "a"}])
    pod["metadata"]["finalizers"] = ["x"]
    with pytest.raises(PatchError) as info:
        apply_strategic_merge_patch(pod, patch, "Pod")
    assert (info.value.status, info.value.reason, str(info.value)) == (status, reason, message)


def test_strategic_null_patch_is_a_no_op() -> None:
    pod = _pod(containers=[{"name": "a"}])
    result = apply_strategic_merge_patch(pod, None, "Pod")
    assert result == pod
    assert result is not pod


_PLAIN = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.dictionaries(st.text("abc", max_size=2), inner | st.none(), max_size=4),
    max_leaves=12,
)
_PLAIN_OBJECTS = st.dictionaries(st.text("abc", max_size=2), _PLAIN, max_size=4)


@given(_PLAIN_OBJECTS, _PLAIN_OBJECTS)
def test_without_lists_or_directives_strategic_merge_is_a_merge_patch(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    assert apply_strategic_merge_patch(target, patch, "Widget") == apply_merge_patch(target, patch)


def test_lists_of_lists_cannot_merge() -> None:
    pod = _pod()
    pod["metadata"]["finalizers"] = [["x"]]
    with pytest.raises(PatchError) as info:
        apply_strategic_merge_patch(pod, {"metadata": {"finalizers": [["a"]]}}, "Pod")
    assert (info.value.status, info.value.reason, str(info.value)) == (
        422,
        "Invalid",
        "lists of lists are not supported",
    )
