"""The RFC 6902 JSON patch that turns one JSON document into another.

A defaulting webhook returns an object; the API server wants the patch from the object it sent
to that one (controller-runtime computes it with ``jsonpatch.CreatePatch``). :func:`diff` is that
computation, over plain JSON values (dicts, lists, strings, numbers, booleans, ``None``).

Invariants: applying the patch to ``source`` gives ``target`` exactly; an unchanged subtree
yields no operation; objects are compared member by member, so a default added deep inside a
large object is one ``add``; arrays of equal length are compared element by element, and a
longer or shorter array gets its extra elements added at, or removed from, its end (removals
highest index first, so each path is valid when applied in order); a value whose JSON type
changes is replaced. ``True`` and ``1`` differ, as they do in JSON.
"""

from __future__ import annotations

from typing import Any

__all__ = ["diff", "pointer"]


def _token(token: str | int) -> str:
    text = str(token)
    if "~" in text or "/" in text:
        return text.replace("~", "~0").replace("/", "~1")
    return text


def pointer(*tokens: str | int) -> str:
    """The JSON pointer (RFC 6901) of a path: ``~`` and ``/`` escaped in each token."""
    return "".join("/" + _token(token) for token in tokens)


def _same(a: Any, b: Any) -> bool:
    # JSON equality: a boolean is never equal to a number, an int equals the float of its value.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def diff(source: Any, target: Any) -> list[dict[str, Any]]:
    """The operations that turn ``source`` into ``target``, in the order to apply them."""
    ops: list[dict[str, Any]] = []
    _diff(source, target, "", ops)
    return ops


def _diff(source: Any, target: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if isinstance(source, dict) and isinstance(target, dict):
        ops.extend(
            {"op": "remove", "path": f"{path}/{_token(k)}"} for k in source if k not in target
        )
        for key, value in target.items():
            if key not in source:
                ops.append({"op": "add", "path": f"{path}/{_token(key)}", "value": value})
            elif source[key] is not value:
                _diff(source[key], value, f"{path}/{_token(key)}", ops)
        return
    if isinstance(source, list) and isinstance(target, list):
        common = min(len(source), len(target))
        for index in range(common):
            _diff(source[index], target[index], f"{path}/{index}", ops)
        ops.extend(
            {"op": "remove", "path": f"{path}/{index}"}
            for index in range(len(source) - 1, common - 1, -1)
        )
        ops.extend(
            {"op": "add", "path": f"{path}/{index}", "value": target[index]}
            for index in range(common, len(target))
        )
        return
    if isinstance(source, dict | list) or isinstance(target, dict | list):
        ops.append({"op": "replace", "path": path, "value": target})
        return
    if not _same(source, target):
        ops.append({"op": "replace", "path": path, "value": target})
