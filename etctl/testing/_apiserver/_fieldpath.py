r"""Field paths and field sets of server-side apply, and their ``fieldsV1`` encoding.

A path is a tuple of elements, each ``("f", name)`` for an object member, ``("k", keys)`` for an
item of an associative list (``keys`` the sorted ``(field, value)`` pairs of its key fields),
``("v", json)`` for an item of a set list and ``("i", index)`` for a positional one. A field set is
a plain ``set`` of paths. :func:`encode` and :func:`decode` convert a set to and from the
``fieldsV1`` object kube-apiserver stores in ``metadata.managedFields``
(``{"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}}}}``), and
:func:`path_string` prints a path as structured-merge-diff does in conflict messages
(``.spec.containers[name="c"].image``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from etctl._apimachinery.gofmt import go_json, go_quote, go_v

__all__ = [
    "Element",
    "Path",
    "decode",
    "decode_checked",
    "encode",
    "key_element",
    "path_sort_key",
    "path_string",
    "value_element",
]

Element = tuple[str, Any]
Path = tuple[Element, ...]
_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}


def key_element(item: Mapping[str, Any], keys: Iterable[str]) -> Element:
    """The path element of an associative-list item, from its key fields (``keys`` sorted)."""
    return ("k", tuple((k, item[k]) for k in keys if k in item))


def value_element(value: Any) -> Element:
    """The path element of a set-list item."""
    return ("v", go_json(value))


@functools.lru_cache(maxsize=4096)
def _element_text(element: Element) -> str:
    kind, data = element
    if kind == "f":
        return f"f:{data}"
    if kind == "k":
        return "k:" + go_json(dict(data))
    if kind == "v":
        return f"v:{data}"
    return f"i:{data}"


def _to_string(value: Any) -> str:
    """structured-merge-diff's ``value.ToString``: strings quoted, other scalars bare."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return go_quote(value)
    return go_v(value)


def path_string(path: Path) -> str:
    """A path as conflict messages print it: ``.spec.ports[port=80,protocol="TCP"].name``."""
    parts = []
    for kind, data in path:
        if kind == "f":
            parts.append(f".{data}")
        elif kind == "k":
            parts.append("[" + ",".join(f"{k}={_to_string(v)}" for k, v in data) + "]")
        elif kind == "v":
            parts.append(f"[={_to_string(json.loads(data))}]")
        else:
            parts.append(f"[{data}]")
    return "".join(parts)


def _element_sort_key(element: Element) -> tuple[int, str]:
    return (_RANK[element[0]], _element_text(element))


def path_sort_key(path: Path) -> tuple[tuple[int, str], ...]:
    """Orders paths as structured-merge-diff's ``Path.Compare`` does (closely enough)."""
    return tuple(_element_sort_key(e) for e in path)


def encode(fields: Iterable[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` object of a field set (``"."`` marks a member that has children)."""
    root: dict[Element, Any] = {}
    members: set[Path] = set()
    for path in fields:
        node = root
        for element in path:
            node = node.setdefault(element, {})
        members.add(path)

    def render(node: dict[Element, Any], path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if node and path in members and path:
            out["."] = {}
        for element in sorted(node, key=_element_sort_key):
            out[_element_text(element)] = render(node[element], (*path, element))
        return out

    return render(root, ())


def _parse_element(text: str) -> Element:
    kind, _, data = text.partition(":")
    if kind == "f":
        return ("f", data)
    if kind == "k":
        decoded = json.loads(data)
        return ("k", tuple(sorted(decoded.items())))
    if kind == "v":
        return ("v", go_json(json.loads(data)))
    if kind == "i":
        return ("i", int(data))
    msg = f"unknown path element {text!r}"
    raise ValueError(msg)


def decode(fields_v1: Mapping[str, Any]) -> set[Path]:
    """The field set a ``fieldsV1`` object encodes.

    Raises:
        ValueError: a key is not a valid path element.
    """
    return decode_checked(fields_v1)[0]


def decode_checked(fields_v1: Mapping[str, Any]) -> tuple[set[Path], bool]:
    """The field set a ``fieldsV1`` object encodes, and whether :func:`encode` gives it back.

    The flag is true when ``encode`` of the set equals ``fields_v1`` exactly, key order
    included (so both serialize to the same bytes): every node a ``dict``, its ``"."`` (valued
    ``{}``, below the root, beside other members) first, then its elements in
    :func:`path_sort_key` order, each spelled as :func:`encode` spells it, leaves ``{}``. What
    the server encoded itself always is; a ``fieldsV1`` a client wrote may not be.

    Raises:
        ValueError: a key is not a valid path element.
    """
    result: set[Path] = set()
    canonical = type(fields_v1) is dict

    def walk(node: Mapping[str, Any], path: Path) -> None:
        nonlocal canonical
        previous: tuple[int, str] | None = None
        for position, (text, child) in enumerate(node.items()):
            if text == ".":
                result.add(path)
                if canonical and not (
                    position == 0 and path and len(node) > 1 and type(child) is dict and not child
                ):
                    canonical = False
                continue
            element = _parse_element(text)
            sub = (*path, element)
            if canonical:
                key = _element_sort_key(element)
                if (
                    type(child) is not dict
                    or key[1] != text
                    or (previous is not None and key <= previous)
                ):
                    canonical = False
                previous = key
            if not child:
                result.add(sub)
            else:
                walk(child, sub)

    walk(fields_v1, ())
    return result, canonical
