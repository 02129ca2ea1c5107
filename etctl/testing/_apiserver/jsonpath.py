"""The JSONPath subset of printer columns: fields, indices, slices, wildcards, equality filters.

``.spec.replicas``, ``.spec.containers[0].image``, ``.items[*].name``, ``.metadata.labels.app``,
``.status.conditions[-1:].type`` (the last condition, as et-operator's and kubeflow's columns use),
``.status.conditions[?(@.type=="Ready")].status`` and quoted keys (``['app.kubernetes.io/name']``)
are understood; a path that finds nothing yields no value (missing keys are allowed, as in
``kubectl``'s printers). The surrounding braces of template syntax (``{.spec.x}``) are optional.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["JSONPathError", "compile_path", "find"]

_FILTER = re.compile(r"^\?\(@((?:\.[A-Za-z0-9_\-/]+)+)\s*(==|!=)\s*(['\"])(.*)\3\)$")


class JSONPathError(ValueError):
    """A path outside the supported subset."""


@dataclass(frozen=True, slots=True)
class _Step:
    kind: str  # "key", "index", "slice", "all", "filter"
    key: str = ""
    index: int = 0
    bounds: tuple[int | None, int | None, int | None] = (None, None, None)
    filter_path: tuple[str, ...] = ()
    filter_op: str = ""
    filter_value: str = ""


def _subscript(text: str, start: int, path: str) -> tuple[_Step, int]:
    """The step of the ``[...]`` at ``start``, and the index just past it."""
    end = text.find("]", start)
    if end < 0:
        raise JSONPathError(f"unclosed [ in {path!r}")
    inner = text[start + 1 : end]
    if inner.startswith("?("):
        end = text.find(")]", start)
        if end < 0:
            raise JSONPathError(f"unclosed filter in {path!r}")
        inner = text[start + 1 : end + 1]
        match = _FILTER.match(inner)
        if not match:
            raise JSONPathError(f"unsupported filter {inner!r}")
        fields = tuple(p for p in match.group(1).split(".") if p)
        step = _Step(
            "filter", filter_path=fields, filter_op=match.group(2), filter_value=match.group(4)
        )
        return step, end + 2
    if inner == "*":
        return _Step("all"), end + 1
    if inner[:1] in ("'", '"') and inner[-1:] == inner[:1]:
        return _Step("key", key=inner[1:-1]), end + 1
    try:
        if ":" in inner:
            return _Step("slice", bounds=_slice_bounds(inner)), end + 1
        return _Step("index", index=int(inner)), end + 1
    except ValueError as exc:
        raise JSONPathError(f"unsupported subscript {inner!r}") from exc


def _slice_bounds(inner: str) -> tuple[int | None, int | None, int | None]:
    """``start:stop[:step]`` with empty parts meaning "from the edge", as Python and kubectl."""
    parts: list[int | None] = [int(p) if p.strip() else None for p in inner.split(":")]
    if len(parts) > 3 or parts[2:] == [0]:
        raise JSONPathError(f"unsupported slice {inner!r}")
    parts += [None] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


def _field(text: str, start: int) -> tuple[str, int]:
    r"""The key of the ``.key`` at ``start`` (``\\.`` escapes a dot), and the index past it."""
    end = start + 1
    while end < len(text) and text[end] not in ".[":
        end += 2 if text[end] == "\\" and end + 1 < len(text) else 1
    return text[start + 1 : end].replace("\\.", "."), end


def compile_path(path: str) -> tuple[_Step, ...]:
    """Parse a path into steps.

    Raises:
        JSONPathError: unsupported syntax.
    """
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[_Step] = []
    i = 0
    while i < len(text):
        if text[i] == ".":
            key, i = _field(text, i)
            if key:
                steps.append(_Step("key", key=key))
        elif text[i] == "[":
            step, i = _subscript(text, i, path)
            steps.append(step)
        else:
            raise JSONPathError(f"unexpected {text[i]!r} in {path!r}")
    return tuple(steps)


def _dig(node: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _select_key(step: _Step, node: Any) -> list[Any]:
    return [node[step.key]] if isinstance(node, Mapping) and step.key in node else []


def _select_index(step: _Step, node: Any) -> list[Any]:
    fits = isinstance(node, list) and -len(node) <= step.index < len(node)
    return [node[step.index]] if fits else []


def _select_slice(step: _Step, node: Any) -> list[Any]:
    return node[slice(*step.bounds)] if isinstance(node, list) else []


def _select_all(_step: _Step, node: Any) -> list[Any]:
    if isinstance(node, Mapping):
        return list(node.values())
    return list(node) if isinstance(node, list) else []


def _select_filter(step: _Step, node: Any) -> list[Any]:
    if not isinstance(node, list):
        return []
    wanted = step.filter_op == "=="
    return [
        item
        for item in node
        if (_text(_dig(item, step.filter_path)) == step.filter_value) == wanted
    ]


_SELECT = {
    "key": _select_key,
    "index": _select_index,
    "slice": _select_slice,
    "all": _select_all,
    "filter": _select_filter,
}


def find(obj: Any, path: str | tuple[_Step, ...]) -> list[Any]:
    """Every value ``path`` selects in ``obj`` (an empty list when nothing matches)."""
    steps = compile_path(path) if isinstance(path, str) else path
    current = [obj]
    for step in steps:
        current = [found for node in current for found in _SELECT[step.kind](step, node)]
    return current
