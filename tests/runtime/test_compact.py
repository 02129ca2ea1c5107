from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etctl.runtime import _compact as compact
from etctl.runtime._compact import Compactor

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(-3, 3, allow_nan=False).map(lambda f: round(f, 1))
    | st.sampled_from(["a", "b", "True", "1", "x" * 200]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["k", "v", "name"]), children, max_size=3)
    ),
    max_leaves=20,
)


def same_types(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_types(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@given(objects=st.lists(st.dictionaries(st.sampled_from(["spec", "status"]), JSON), max_size=6))
def test_compacted_objects_equal_their_input_with_the_same_types(
    objects: list[dict[str, Any]],
) -> None:
    compactor = Compactor(max_entries=8)  # tiny tables: generations roll over constantly
    originals = copy.deepcopy(objects)
    results = [compactor(obj) for obj in objects]
    assert objects == originals  # the input is not modified
    for result, original in zip(results, originals, strict=True):
        assert same_types(result, original)
        assert json.dumps(result, sort_keys=True) == json.dumps(original, sort_keys=True)


def test_equal_subtrees_and_strings_are_shared_across_objects() -> None:
    compactor = Compactor()

    def pod(name: str) -> dict[str, Any]:
        text = json.dumps(
            {
                "metadata": {"name": name, "labels": {"app": "train"}},
                "spec": {"containers": [{"name": "main", "image": "img:1", "ports": [2222]}]},
            }
        )
        decoded: dict[str, Any] = json.loads(text)
        return decoded

    first, second = compactor(pod("a")), compactor(pod("b"))
    assert first["spec"] is second["spec"]
    assert first["metadata"]["labels"] is second["metadata"]["labels"]
    assert first["metadata"] is not second["metadata"]
    keys_first = next(iter(first["metadata"]))
    keys_second = next(iter(second["metadata"]))
    assert keys_first is keys_second


def test_values_of_different_types_are_never_merged() -> None:
    compactor = Compactor()
    as_bool = compactor({"x": {"v": True}, "y": [1.0]})
    as_int = compactor({"x": {"v": 1}, "y": [1]})
    assert as_bool["x"] is not as_int["x"]
    assert as_int["x"]["v"] is not True
    assert type(as_int["y"][0]) is int
    assert type(as_bool["y"][0]) is float


def test_long_subtrees_of_different_types_are_never_merged_either() -> None:
    compactor = Compactor()
    numbers = list(range(100))  # encodes past the length up to which encodings are keys
    as_int = compactor({"x": {"v": [*numbers, 1]}})
    as_bool = compactor({"x": {"v": [*numbers, True]}})
    again = compactor({"x": {"v": [*numbers, 1]}})
    assert as_bool["x"]["v"][-1] is True
    assert as_bool["x"] is not as_int["x"]
    assert again["x"] is as_int["x"]


def test_tables_stay_bounded() -> None:
    compactor = Compactor(max_entries=50)
    for i in range(1000):
        compactor({"metadata": {"name": f"pod-{i}", "uid": f"uid-{i}"}, "spec": {"n": i}})
    assert compactor.entries <= 4 * 50


def test_negative_zero_is_not_shared_with_zero() -> None:
    compactor = Compactor()
    first, second = compactor({"v": [0.0]}), compactor({"v": [-0.0]})
    assert json.dumps(first) == '{"v": [0.0]}'
    assert json.dumps(second) == '{"v": [-0.0]}'


# -- learned positions, previous versions, strictness


@contextmanager
def quick_decisions(*, window: int = 4, steady: int = 6) -> Iterator[None]:
    """Positions decide after ``window`` visits and re-examine after ``steady``: every mode is
    reached within the few objects a property test generates."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compact, "_WINDOW", window)
        patch.setattr(compact, "_STEADY", steady)
        yield


VERSIONS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.dictionaries(st.sampled_from(["spec", "status", "data"]), JSON, max_size=3),
    ),
    max_size=40,
)


@given(updates=VERSIONS)
def test_versions_compacted_against_their_predecessor_stay_exact_and_never_change(
    updates: list[tuple[str, dict[str, Any]]],
) -> None:
    with quick_decisions():
        compactor = Compactor(max_entries=8)
        cache: dict[str, dict[str, Any]] = {}
        results: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for name, obj in updates:
            original = copy.deepcopy(obj)
            result = compactor(obj, cache.get(name))
            assert same_types(result, original)
            cache[name] = result
            results.append((result, original))
            # A subtree shared with earlier results (or taken from a predecessor) was never
            # changed: every result ever returned still holds exactly what it was given.
            for earlier, expected in results:
                assert same_types(earlier, expected)


def pod(index: int, *, phase: str | None = None) -> dict[str, Any]:
    """A pod of a three-replica template, as decoded from the API server."""
    job = index % 3
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"job-{job}-{index}",
            "namespace": "training",
            "uid": f"uid-{index}",
            "resourceVersion": str(index),
            "labels": {"job": f"job-{job}", "index": str(index)},
        },
        "spec": {
            "nodeName": f"node-{index}",
            "containers": [
                {
                    "name": "worker",
                    "image": f"train:{job}",
                    "env": [{"name": "RANK", "value": "x"}, {"name": "SIZE", "value": "3"}],
                    "resources": {"limits": {"cpu": "8"}, "requests": {"cpu": "8"}},
                    "volumeMounts": [{"name": f"token-{index}", "mountPath": "/var/run"}],
                }
            ],
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        },
    }
    if phase is not None:
        body["status"] = {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True", "time": f"t-{index}"}],
        }
    fresh: dict[str, Any] = json.loads(json.dumps(body))  # new containers and strings, decoded
    return fresh


def test_template_parts_and_recurring_strings_are_shared_once_positions_are_learned() -> None:
    compactor = Compactor()
    pods = [compactor(pod(i)) for i in range(600)]  # past the first window of every position
    first, later = pods[300], pods[303]  # same template (job 0), other name, node and token
    container, other = first["spec"]["containers"][0], later["spec"]["containers"][0]
    assert container["env"] is other["env"]
    assert container["resources"] is other["resources"]
    assert first["spec"]["tolerations"] is later["spec"]["tolerations"]
    assert container["image"] is other["image"]
    assert first["metadata"]["namespace"] is later["metadata"]["namespace"]
    assert container is not other  # its volume mount differs
    assert first["spec"] is not later["spec"]
    for index, result in enumerate(pods):
        assert result == pod(index)


def test_unique_positions_stop_filling_the_tables() -> None:
    compactor = Compactor(max_entries=4096)
    for i in range(1000):
        compactor(pod(i))
    settled = compactor.entries
    for i in range(1000, 3000):
        compactor(pod(i))
    # Names, uids, nodes and tokens are all new, yet after the first windows the positions that
    # never recur are only looked up while they are re-examined: the tables grow by far less
    # than one entry per pod (looking every subtree up would add several per pod).
    assert compactor.entries - settled < 2000 // 4


def test_an_update_keeps_the_parts_of_the_previous_version_it_did_not_change() -> None:
    compactor = Compactor()
    for i in range(300):
        compactor(pod(i))  # positions learned
    pending = compactor(pod(7, phase="Pending"))
    running = compactor(pod(7, phase="Running"), pending)
    assert running["spec"] is pending["spec"]
    assert running["metadata"]["labels"] is pending["metadata"]["labels"]
    assert running["status"]["conditions"] == pending["status"]["conditions"]
    assert running["status"]["phase"] == "Running"
    assert pending["status"]["phase"] == "Pending"  # the previous version is never changed


def test_a_previous_version_with_other_types_is_never_reused() -> None:
    compactor = Compactor()
    before = compactor({"spec": {"flag": 1, "ratio": [1.0], "zero": 0.0}})
    after = compactor({"spec": {"flag": True, "ratio": [1], "zero": -0.0}}, before)
    assert after["spec"] is not before["spec"]
    assert after["spec"]["flag"] is True
    assert type(after["spec"]["ratio"][0]) is int
    assert json.dumps(after) == '{"spec": {"flag": true, "ratio": [1], "zero": -0.0}}'


def test_values_json_cannot_encode_are_kept_and_never_shared() -> None:
    compactor = Compactor()
    huge = 2**70
    first = compactor({"spec": {"n": huge, "tags": ["a"]}})
    second = compactor({"spec": {"n": huge, "tags": ["a"]}}, first)
    assert second == {"spec": {"n": huge, "tags": ["a"]}}
    assert second["spec"] is not first["spec"]
    assert second["spec"]["tags"] is first["spec"]["tags"]  # its encodable parts still are


def test_free_form_maps_of_many_keys_stay_bounded_and_exact() -> None:
    with quick_decisions():
        compactor = Compactor(max_entries=64)
        for i in range(300):
            data = {f"key-{i}-{j}": {"value": f"v{j % 3}"} for j in range(40)}
            obj = {"metadata": {"name": f"cm-{i}"}, "data": data}
            expected = copy.deepcopy(obj)
            assert compactor(obj) == expected
        assert compactor.entries <= 6 * 64


def test_positions_beyond_the_limit_are_left_as_they_are() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compact, "_MAX_PATHS", 8)
        compactor = Compactor()
        objs = [{f"k{i}": {f"n{j}": [str(j)] for j in range(5)}} for i in range(20)]
        expected = copy.deepcopy(objs)
        assert [compactor(obj) for obj in objs] == expected


def test_a_previous_version_with_other_types_is_never_reused_where_specs_differ() -> None:
    compactor = Compactor()
    cache: dict[int, dict[str, Any]] = {}

    def obj(i: int, on: object) -> dict[str, Any]:
        template = {"image": "registry.example.com/train:1", "args": ["--epochs", "90"]}
        return {"metadata": {"name": f"o-{i}"}, "spec": {"id": i, "on": on, "tpl": template}}

    for i in range(200):  # every spec is different, with a recurring part: it is descended into
        cache[i] = compactor(obj(i, 1))
    assert cache[198]["spec"]["tpl"] is cache[199]["spec"]["tpl"]
    after = compactor(obj(5, True), cache[5])
    assert after["spec"]["on"] is True
    assert cache[5]["spec"]["on"] is not True
    again = compactor(obj(6, 1), cache[6])
    assert again["spec"] is cache[6]["spec"]  # the same content: the previous subtree


def test_key_order_does_not_stop_an_update_reusing_what_it_did_not_change() -> None:
    # Go writes a map's keys sorted; another writer may not: equal is equal, whatever the order.
    compactor = compact.Compactor()
    labels = {"b": "2", "a": "1", "c": "3"}
    previous = compactor({"metadata": {"name": "x", "labels": labels}, "data": {"k": "1"}})
    shuffled = {"a": "1", "c": "3", "b": "2"}
    updated = compactor(
        {"metadata": {"name": "x", "labels": shuffled}, "data": {"k": "2"}}, previous
    )
    assert updated["metadata"]["labels"] is previous["metadata"]["labels"]
    assert updated["data"] == {"k": "2"}
