from __future__ import annotations

from typing import Any

from etctl.runtime import KubeObject
from etctl.runtime._transforms import (
    LAST_APPLIED,
    compose,
    strip_last_applied,
    strip_managed_fields,
)


def applied() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "job",
            "uid": "u",
            "resourceVersion": "7",
            "annotations": {LAST_APPLIED: '{"spec":{}}', "team": "ml"},
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": {"replicas": 2},
    }


def test_strip_managed_fields_keeps_everything_else() -> None:
    obj = applied()
    out = strip_managed_fields(obj)
    assert "managedFields" not in out["metadata"]
    assert out["metadata"]["annotations"][LAST_APPLIED] == '{"spec":{}}'
    assert out["spec"] == {"replicas": 2}
    assert strip_managed_fields({"kind": "Status"}) == {"kind": "Status"}


def test_strip_last_applied_drops_the_annotation_and_an_emptied_map() -> None:
    out = strip_last_applied(applied())
    assert out["metadata"]["annotations"] == {"team": "ml"}
    lonely = applied()
    del lonely["metadata"]["annotations"]["team"]
    assert "annotations" not in strip_last_applied(lonely)["metadata"]
    assert strip_last_applied({"metadata": {"name": "x"}}) == {"metadata": {"name": "x"}}


def test_compose_applies_left_to_right() -> None:
    def mark(tag: str) -> Any:
        def step(obj: KubeObject) -> KubeObject:
            obj.setdefault("steps", []).append(tag)
            return obj

        return step

    out = compose(mark("a"), mark("b"), strip_managed_fields)(applied())
    assert out["steps"] == ["a", "b"]
    assert "managedFields" not in out["metadata"]
    single = mark("x")
    assert compose(single) is single
