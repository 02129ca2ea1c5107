"""The ``/scale`` subresource of custom resources: an ``autoscaling/v1`` Scale view of an object.

The CRD names where the replica counts live (``specReplicasPath``, ``statusReplicasPath``) and,
optionally, where a label selector string lives (``labelSelectorPath``). Reading builds the Scale
from those paths (a missing count reads as 0); writing takes ``spec.replicas`` from the Scale and
puts it at ``specReplicasPath`` of a copy of the object, which is then updated like any write.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.registry import ScaleSpec
from etctl.testing._apiserver.status import Cause, bad_request, invalid

__all__ = ["from_scale", "to_scale"]


def _path(json_path: str) -> list[str]:
    return [p for p in json_path.strip().lstrip(".").split(".") if p]


def _get(obj: ObjectView, json_path: str) -> Any:
    node: Any = obj
    for part in _path(json_path):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def to_scale(obj: ObjectView, spec: ScaleSpec) -> KubeObject:
    """The Scale view of ``obj``."""
    meta = obj.get("metadata") or {}
    spec_replicas = _get(obj, spec.spec_replicas_path)
    status_replicas = _get(obj, spec.status_replicas_path)
    scale_meta = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    status: dict[str, Any] = {
        "replicas": status_replicas if isinstance(status_replicas, int) else 0
    }
    if spec.label_selector_path:
        selector = _get(obj, spec.label_selector_path)
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": spec_replicas if isinstance(spec_replicas, int) else 0},
        "status": status,
    }


def from_scale(obj: ObjectView, scale: Mapping[str, Any], spec: ScaleSpec) -> KubeObject:
    """A copy of ``obj`` with the Scale's ``spec.replicas`` written to ``specReplicasPath``.

    Raises:
        etctl.errors.Invalid: negative or missing replicas.
        etctl.errors.BadRequest: the Scale is not an object or the path crosses a non-object.
    """
    scale_spec = scale.get("spec")
    replicas = scale_spec.get("replicas", 0) if isinstance(scale_spec, Mapping) else 0
    name = str((scale.get("metadata") or {}).get("name") or "")
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise bad_request(f"replicas must be an integer, got {replicas!r}")
    if replicas < 0:
        raise invalid(
            "autoscaling",
            "Scale",
            name,
            [
                Cause(
                    "FieldValueInvalid",
                    "spec.replicas",
                    f"Invalid value: {replicas}: must be greater than or equal to 0",
                )
            ],
        )
    out = copy.deepcopy(dict(obj))
    node: dict[str, Any] = out
    parts = _path(spec.spec_replicas_path)
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise bad_request(f"{spec.spec_replicas_path} crosses a non-object field")
        node = child
    node[parts[-1]] = replicas
    return out
