from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etctl.testing._apiserver._fieldpath import Path, decode, decode_checked, encode
from etctl.testing._apiserver._ssamerge import Comparison, Shape, _mark, _same, compare, root_shape
from etctl.testing._apiserver.apply import ApplyConflict, record_update, server_side_apply
from etctl.testing._apiserver.patch import PatchError

T0, T1, T2, T3 = (f"2024-05-01T00:00:0{i}Z" for i in range(4))


def _managed(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def _pod(*containers: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", **meta},
        "spec": {"containers": list(containers)},
    }


def _cm(data: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", **meta},
        "data": data,
    }


def test_apply_creates_and_records_fields_as_kube_apiserver_encodes_them() -> None:
    config = _pod(
        {"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
        labels={"app": "web"},
        finalizers=["example.com/f"],
    )
    before = copy.deepcopy(config)
    obj = server_side_apply(None, config, manager="kubectl", force=False, kind="Pod", now=T0)
    assert config == before
    assert obj["spec"] == config["spec"]
    (entry,) = obj["metadata"]["managedFields"]
    assert entry == {
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "v1",
        "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:finalizers": {'v:"example.com/f"': {}}, "f:labels": {"f:app": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"c"}': {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {
                            'k:{"containerPort":80,"protocol":"TCP"}': {
                                ".": {},
                                "f:containerPort": {},
                                "f:protocol": {},
                            }
                        },
                    }
                }
            },
        },
    }


def test_reapplying_the_same_configuration_changes_nothing_but_the_time() -> None:
    config = _pod({"name": "c", "image": "nginx", "args": ["a", "b"]})
    first = server_side_apply(None, config, manager="m", force=False, kind="Pod", now=T0)
    again = server_side_apply(first, config, manager="m", force=False, kind="Pod", now=T1)
    assert again["spec"] == first["spec"]
    assert _managed(again) == _managed(first)
    assert again["metadata"]["managedFields"][0]["time"] == T1


def test_fields_the_manager_stops_applying_are_removed() -> None:
    first = server_side_apply(
        None,
        _cm({"a": "1", "b": "2"}, labels={"x": "1"}, annotations={"keep": "me"}),
        manager="m",
        force=False,
        kind="ConfigMap",
        now=T0,
    )
    second = server_side_apply(
        first,
        _cm({"a": "1"}, annotations={"keep": "me"}),
        manager="m",
        force=False,
        kind="ConfigMap",
        now=T1,
    )
    assert second["data"] == {"a": "1"}
    assert "labels" not in second["metadata"]
    assert second["metadata"]["annotations"] == {"keep": "me"}
    assert _managed(second)[("m", "Apply")] == {
        "f:data": {"f:a": {}},
        "f:metadata": {"f:annotations": {"f:keep": {}}},
    }


def test_a_field_another_manager_owns_is_a_conflict_unless_forced() -> None:
    live = server_side_apply(
        None, _cm({"key": "one"}), manager="alpha", force=False, kind="ConfigMap", now=T0
    )
    with pytest.raises(ApplyConflict) as info:
        server_side_apply(
            live, _cm({"key": "two"}), manager="beta", force=False, kind="ConfigMap", now=T1
        )
    err = info.value
    assert err.conflicts == [("alpha", ".data.key")]
    assert str(err) == 'Apply failed with 1 conflict: conflict with "alpha": .data.key'
    assert err.causes == [
        {"type": "conflict", "message": 'conflict with "alpha"', "field": ".data.key"}
    ]
    forced = server_side_apply(
        live, _cm({"key": "two"}), manager="beta", force=True, kind="ConfigMap", now=T1
    )
    assert forced["data"] == {"key": "two"}
    assert ("alpha", "Apply") not in _managed(forced)
    assert _managed(forced)[("beta", "Apply")] == {"f:data": {"f:key": {}}}


def test_applying_the_same_value_shares_ownership() -> None:
    live = server_side_apply(
        None, _cm({"key": "v", "a": "1"}), manager="alpha", force=False, kind="ConfigMap", now=T0
    )
    shared = server_side_apply(
        live, _cm({"key": "v"}), manager="beta", force=False, kind="ConfigMap", now=T1
    )
    assert _managed(shared)[("alpha", "Apply")]["f:data"] == {"f:a": {}, "f:key": {}}
    assert _managed(shared)[("beta", "Apply")]["f:data"] == {"f:key": {}}
    # alpha drops the key: beta still owns it, so it stays.
    after = server_side_apply(
        shared, _cm({"a": "1"}), manager="alpha", force=False, kind="ConfigMap", now=T2
    )
    assert after["data"] == {"key": "v", "a": "1"}


def test_updates_take_ownership_and_conflict_with_later_applies() -> None:
    live = server_side_apply(
        None,
        _pod({"name": "c", "image": "nginx"}),
        manager="kubectl",
        force=False,
        kind="Pod",
        now=T0,
    )
    new = copy.deepcopy(live)
    new["spec"]["containers"][0]["image"] = "busybox"
    new["spec"]["nodeName"] = "node-1"
    new["metadata"]["labels"] = {"added": "yes"}
    updated = record_update(live, new, manager="scheduler", now=T1)
    managed = _managed(updated)
    assert managed[("scheduler", "Update")] == {
        "f:metadata": {"f:labels": {".": {}, "f:added": {}}},
        "f:spec": {"f:containers": {'k:{"name":"c"}': {"f:image": {}}}, "f:nodeName": {}},
    }
    assert managed[("kubectl", "Apply")]["f:spec"]["f:containers"] == {
        'k:{"name":"c"}': {".": {}, "f:name": {}}
    }
    config = _pod({"name": "c", "image": "nginx"}, labels={"added": "no"})
    with pytest.raises(ApplyConflict) as info:
        server_side_apply(updated, config, manager="kubectl", force=False, kind="Pod", now=T2)
    assert str(info.value) == (
        'Apply failed with 2 conflicts: conflicts with "scheduler" using v1:\n'
        "- .metadata.labels.added\n"
        '- .spec.containers[name="c"].image'
    )
    assert info.value.conflicts == [
        ("scheduler", ".metadata.labels.added"),
        ("scheduler", '.spec.containers[name="c"].image'),
    ]


def test_conflicts_with_several_managers_are_grouped() -> None:
    live = server_side_apply(
        None, _cm({"a": "1"}), manager="one", force=False, kind="ConfigMap", now=T0
    )
    live = server_side_apply(
        live, _cm({"b": "1"}), manager="two", force=False, kind="ConfigMap", now=T1
    )
    with pytest.raises(ApplyConflict) as info:
        server_side_apply(
            live, _cm({"a": "2", "b": "2"}), manager="three", force=False, kind="ConfigMap", now=T2
        )
    assert str(info.value) == (
        'Apply failed with 2 conflicts: conflicts with "one":\n- .data.a\n'
        'conflicts with "two":\n- .data.b'
    )


def test_first_apply_to_an_unmanaged_object_conflicts_with_before_first_apply() -> None:
    created = _cm({"key": "old", "other": "x"})
    with pytest.raises(ApplyConflict) as info:
        server_side_apply(
            created, _cm({"key": "new"}), manager="kubectl", force=False, kind="ConfigMap", now=T0
        )
    assert str(info.value) == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.key'
    )
    ok = server_side_apply(
        created, _cm({"key": "old"}), manager="kubectl", force=False, kind="ConfigMap", now=T0
    )
    managed = _managed(ok)
    # An Update owns the containers it created too (hence the ".").
    assert managed[("before-first-apply", "Update")]["f:data"] == {
        ".": {},
        "f:key": {},
        "f:other": {},
    }
    assert ok["data"] == {"key": "old", "other": "x"}


def test_lists_merge_by_key_and_keep_other_managers_items() -> None:
    live = server_side_apply(
        None,
        _pod({"name": "a", "image": "1"}, {"name": "b", "image": "2"}, {"name": "c", "image": "3"}),
        manager="one",
        force=False,
        kind="Pod",
        now=T0,
    )
    merged = server_side_apply(
        live, _pod({"name": "d", "image": "4"}), manager="two", force=False, kind="Pod", now=T1
    )
    assert [c["name"] for c in merged["spec"]["containers"]] == ["a", "b", "c", "d"]
    reordered = server_side_apply(
        merged,
        _pod({"name": "c", "image": "3"}, {"name": "a", "image": "1"}, {"name": "b", "image": "2"}),
        manager="one",
        force=False,
        kind="Pod",
        now=T2,
    )
    # structured-merge-diff keeps a live-only item where it meets it among the shared ones.
    assert [c["name"] for c in reordered["spec"]["containers"]] == ["c", "d", "a", "b"]


def test_atomic_lists_are_replaced_and_owned_whole() -> None:
    live = server_side_apply(
        None,
        _pod({"name": "c", "image": "i", "args": ["a", "b"]}),
        manager="m",
        force=False,
        kind="Pod",
        now=T0,
    )
    new = server_side_apply(
        live,
        _pod({"name": "c", "image": "i", "args": ["z"]}),
        manager="m",
        force=False,
        kind="Pod",
        now=T1,
    )
    assert new["spec"]["containers"][0]["args"] == ["z"]
    container = _managed(new)[("m", "Apply")]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert container["f:args"] == {}


_CR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "workers": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["role", "index"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "role": {"type": "string"},
                            "index": {"type": "integer"},
                            "image": {"type": "string"},
                        },
                    },
                },
                "tags": {"type": "array", "items": {"type": "string"}},
                "selector": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
                "groups": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"size": {"type": "integer"}},
                    },
                },
            },
        }
    },
}


def test_custom_resources_follow_their_schema() -> None:
    config = {
        "apiVersion": "example.com/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "replicas": 2,
            "workers": [{"role": "ps", "index": 0, "image": "x"}],
            "tags": ["t"],
            "selector": {"a": "b"},
            "groups": {"g1": {"size": 3}},
        },
    }
    obj = server_side_apply(
        None, config, manager="op", force=False, kind="Job", now=T0, schema=_CR_SCHEMA
    )
    assert _managed(obj)[("op", "Apply")] == {
        "f:spec": {
            "f:groups": {"f:g1": {".": {}, "f:size": {}}},
            "f:replicas": {},
            "f:selector": {},
            "f:tags": {},
            "f:workers": {
                'k:{"index":0,"role":"ps"}': {
                    ".": {},
                    "f:image": {},
                    "f:index": {},
                    "f:role": {},
                }
            },
        }
    }
    other = copy.deepcopy(config)
    other["spec"] = {
        "workers": [{"role": "worker", "index": 0, "image": "y"}],
        "selector": {"c": "d"},
    }
    with pytest.raises(ApplyConflict) as info:
        server_side_apply(
            obj, other, manager="user", force=False, kind="Job", now=T1, schema=_CR_SCHEMA
        )
    assert info.value.conflicts == [("op", ".spec.selector")]
    forced = server_side_apply(
        obj, other, manager="user", force=True, kind="Job", now=T1, schema=_CR_SCHEMA
    )
    assert [w["role"] for w in forced["spec"]["workers"]] == ["ps", "worker"]
    assert forced["spec"]["selector"] == {"c": "d"}


def test_configuration_may_not_carry_managed_fields() -> None:
    bad = _cm({"a": "1"}, managedFields=[{"manager": "x"}])
    with pytest.raises(PatchError) as info:
        server_side_apply(None, bad, manager="m", force=False, kind="ConfigMap", now=T0)
    assert (info.value.status, str(info.value)) == (400, "metadata.managedFields must be nil")


def test_apply_does_not_mutate_its_inputs() -> None:
    live = server_side_apply(
        None, _cm({"a": "1"}, labels={"l": "1"}), manager="m", force=False, kind="ConfigMap", now=T0
    )
    snapshot = copy.deepcopy(live)
    config = _cm({"b": "2"})
    config_snapshot = copy.deepcopy(config)
    server_side_apply(live, config, manager="m", force=False, kind="ConfigMap", now=T1)
    record_update(live, config, manager="u", now=T1)
    assert live == snapshot
    assert config == config_snapshot


_NAMES = st.sampled_from(["a", "b", "spec", "metadata", "x.y"])
_ELEMENTS = st.one_of(
    st.builds(lambda n: ("f", n), _NAMES),
    st.builds(lambda n, i: ("k", (("index", i), ("name", n))), _NAMES, st.integers(0, 3)),
    st.builds(lambda v: ("v", f'"{v}"'), _NAMES),
)
_PATHS = st.lists(_ELEMENTS, min_size=1, max_size=4).map(tuple)


@given(st.sets(_PATHS, max_size=8))
def test_fields_v1_encoding_round_trips(paths: set[Path]) -> None:
    assert decode(encode(paths)) == paths


@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.text("xy", max_size=2), max_size=3))
def test_applying_twice_is_idempotent(data: dict[str, str]) -> None:
    once = server_side_apply(None, _cm(data), manager="m", force=False, kind="ConfigMap", now=T0)
    twice = server_side_apply(once, _cm(data), manager="m", force=False, kind="ConfigMap", now=T0)
    assert twice == once


# -- managedFields are re-encoded only where they changed ------------------------------------


def _scrambled(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with managedFields that decode the same but are not as the server encodes them.

    Every entry then has to be encoded again: the output from it is the reference, what the
    server produced before it kept unchanged entries as they were stored.
    """

    def reverse(node: dict[str, Any]) -> dict[str, Any]:
        return {k: reverse(v) for k, v in reversed(node.items())}

    out = copy.deepcopy(obj)
    out["metadata"]["managedFields"] = [
        {"fieldsV1": reverse(e["fieldsV1"]), **{k: v for k, v in e.items() if k != "fieldsV1"}}
        for e in out["metadata"]["managedFields"]
    ]
    return out


def _same_bytes(left: dict[str, Any], right: dict[str, Any]) -> bool:
    return json.dumps(left) == json.dumps(right)


def _write(old: dict[str, Any], step: Any) -> dict[str, Any]:
    """One write, checked against the reference: same object, same bytes."""
    result: dict[str, Any] = step(old)
    reference = step(_scrambled(old))
    assert _same_bytes(result, reference)
    return result


def _stored_entries(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The managers whose entry in ``new`` is the very entry stored in ``old``."""
    stored = [id(e) for e in old["metadata"]["managedFields"]]
    return [e["manager"] for e in new["metadata"]["managedFields"] if id(e) in stored]


def test_pod_writes_encode_managed_fields_as_before() -> None:
    container = {"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]}
    pod = record_update({}, _pod(container, labels={"a": "1"}), manager="kubectl", now=T0)

    def status(old: dict[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(old)
        new["status"] = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0}],
        }
        return record_update(old, new, manager="kubelet", now=T1)

    running = _write(pod, status)
    assert _stored_entries(pod, running) == ["kubectl"]

    def relabel(old: dict[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(old)
        new["metadata"]["labels"] = {"a": "2", "b": "1"}
        new["status"]["conditions"][0]["status"] = "False"  # taken from kubelet
        return record_update(old, new, manager="kubectl", now=T2)

    relabelled = _write(running, relabel)
    assert _stored_entries(running, relabelled) == []  # both changed

    def apply(old: dict[str, Any]) -> dict[str, Any]:
        config = _pod(dict(container, image="j"), labels={"a": "3"})
        return server_side_apply(old, config, manager="ctrl", force=True, kind="Pod", now=T3)

    applied = _write(relabelled, apply)
    assert _managed(applied)[("ctrl", "Apply")]["f:metadata"] == {"f:labels": {"f:a": {}}}

    def again(old: dict[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(old)
        new["status"]["phase"] = "Succeeded"  # kubelet owns it already: no entry changes
        return record_update(old, new, manager="kubelet", now=T3)

    assert _stored_entries(applied, _write(applied, again)) == ["ctrl", "kubelet", "kubectl"]


def test_custom_resource_writes_encode_managed_fields_as_before() -> None:
    config = {
        "apiVersion": "example.com/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"replicas": 2, "workers": [{"role": "ps", "index": 0, "image": "x"}]},
    }
    job = record_update({}, config, manager="user", now=T0, schema=_CR_SCHEMA)

    def status(old: dict[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(old)
        new["status"] = {"phase": "Running", "active": 2}
        return record_update(old, new, manager="op", now=T1, schema=_CR_SCHEMA)

    running = _write(job, status)

    def status_again(old: dict[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(old)
        new["status"]["active"] = 1
        return record_update(old, new, manager="op", now=T2, schema=_CR_SCHEMA)

    patched = _write(running, status_again)
    assert _stored_entries(running, patched) == ["user", "op"]  # owned already: no change

    def scale(old: dict[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(old)
        new["spec"]["replicas"] = 3
        new["spec"]["workers"].append({"role": "worker", "index": 0, "image": "y"})
        return record_update(old, new, manager="op", now=T2, schema=_CR_SCHEMA)

    scaled = _write(patched, scale)
    assert _stored_entries(patched, scaled) == []  # user lost .spec.replicas

    def apply(old: dict[str, Any]) -> dict[str, Any]:
        return server_side_apply(
            old, config, manager="user", force=True, kind="Job", now=T3, schema=_CR_SCHEMA
        )

    _write(scaled, apply)


def test_managed_fields_a_client_wrote_are_encoded_again() -> None:
    cm = record_update({}, _cm({"a": "1", "b": "2"}), manager="m", now=T0)
    stored = cm["metadata"]["managedFields"][0]
    assert decode_checked(stored["fieldsV1"])[1]
    odd = _scrambled(cm)
    assert not decode_checked(odd["metadata"]["managedFields"][0]["fieldsV1"])[1]
    new = copy.deepcopy(odd)
    new["metadata"]["labels"] = {"l": "1"}
    updated = record_update(odd, new, manager="other", now=T1)
    assert _same_bytes(updated["metadata"]["managedFields"][0], stored)


def _reference_compare(old: Any, new: Any, shape: Shape, path: Path, cmp: Comparison) -> None:
    """:func:`compare` as it was, walking everything."""
    if isinstance(old, dict) and isinstance(new, dict) and not shape.atomic_map:
        for key in {**old, **new}:
            sub = (*path, ("f", key))
            if key not in new:
                _mark(old[key], shape.child(key), sub, cmp.removed)
            elif key not in old:
                _mark(new[key], shape.child(key), sub, cmp.added)
            else:
                _reference_compare(old[key], new[key], shape.child(key), sub, cmp)
    elif isinstance(old, list) and isinstance(new, list) and shape.list_type != "atomic":
        item_shape = shape.item()
        before = {shape.element(x, i): x for i, x in enumerate(old)}
        after = {shape.element(x, i): x for i, x in enumerate(new)}
        for pe, item in after.items():
            if pe in before:
                _reference_compare(before[pe], item, item_shape, (*path, pe), cmp)
            else:
                _mark(item, item_shape, (*path, pe), cmp.added)
        for pe, item in before.items():
            if pe not in after:
                _mark(item, item_shape, (*path, pe), cmp.removed)
    elif not _same(old, new):
        cmp.modified.add(path)


_LEAVES = st.none() | st.booleans() | st.integers(0, 2) | st.sampled_from([0.0, 1.0, "c"])
_SPEC = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["ps", "w"])},
                optional={"index": st.integers(0, 1), "image": inner},
            ),
            max_size=3,
        )
        | st.dictionaries(st.sampled_from(["replicas", "workers", "tags", "x"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(_SPEC, _SPEC, st.booleans())
def test_compare_skips_only_what_has_nothing_to_record(old: Any, new: Any, share: bool) -> None:
    if share and isinstance(old, dict) and isinstance(new, dict):
        new = {**new, **{k: v for k, v in old.items() if k not in new}}  # shared subtrees
    for shape in (root_shape("Job", _CR_SCHEMA), root_shape("Pod", None)):
        got, expected = Comparison(), Comparison()
        compare({"spec": old}, {"spec": new}, shape, (), got)
        _reference_compare({"spec": old}, {"spec": new}, shape, (), expected)
        assert got == expected
