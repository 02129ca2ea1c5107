"""The structured-merge-diff operations server-side apply is built from.

:class:`Shape` answers what a merge needs to know of a node (list and map semantics, struct
fields versus map keys), from :mod:`.patchmeta` for built-in kinds or from a custom resource's
schema. :func:`merge` merges an applied configuration into a live object, :func:`field_set` lists
the fields a configuration sets, :func:`compare` lists what changed between two objects
(containers included, as ownership tracking needs) and :func:`remove` drops a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from etctl._apimachinery.jsonvalues import identical
from etctl.testing._apiserver._fieldpath import Element, Path, key_element, value_element
from etctl.testing._apiserver.patchmeta import UNKNOWN, FieldMeta, meta_for_kind

__all__ = [
    "Comparison",
    "Shape",
    "compare",
    "field_set",
    "merge",
    "remove",
    "root_shape",
    "with_named_parents",
]


class Shape:
    """What a merge needs to know of one node: its list semantics, map semantics, children.

    The answers are computed once per node (children are cached), since one apply asks them of
    every path of the object several times.
    """

    __slots__ = ("_item", "_kids", "_meta", "_schema", "atomic_map", "list_type", "map_keys")

    def __init__(self, meta: FieldMeta = UNKNOWN, schema: Mapping[str, Any] | None = None) -> None:
        self._meta = meta
        self._schema = schema
        self._kids: dict[str, Shape] = {}
        self._item: Shape | None = None
        if schema is not None:
            self.list_type = str(schema.get("x-kubernetes-list-type") or "atomic")
            self.map_keys = tuple(sorted(schema.get("x-kubernetes-list-map-keys") or ()))
            self.atomic_map = schema.get("x-kubernetes-map-type") == "atomic"
        else:
            self.list_type = meta.list_type or "atomic"
            self.map_keys = tuple(sorted(meta.map_keys))
            self.atomic_map = meta.atomic

    def declared(self, name: str) -> bool:
        """Whether ``name`` is a struct field (as opposed to a key of a map)."""
        if self._schema is None:
            return True
        return name in (self._schema.get("properties") or {})

    def child(self, name: str) -> Shape:
        """The shape of member ``name``."""
        kid = self._kids.get(name)
        if kid is None:
            kid = self._kids[name] = self._make_child(name)
        return kid

    def _make_child(self, name: str) -> Shape:
        if self._schema is None:
            return Shape(self._meta.child(name))
        props = self._schema.get("properties") or {}
        if name in props:
            return Shape(schema=props[name])
        extra = self._schema.get("additionalProperties")
        return Shape(schema=extra if isinstance(extra, Mapping) else {})

    def item(self) -> Shape:
        """The shape of each list element."""
        if self._item is None:
            if self._schema is None:
                self._item = Shape(self._meta)
            else:
                items = self._schema.get("items")
                self._item = Shape(schema=items if isinstance(items, Mapping) else {})
        return self._item

    def element(self, item: Any, index: int) -> Element:
        """The path element of list element ``item`` at ``index``."""
        if self.list_type == "map" and isinstance(item, Mapping):
            return key_element(item, self.map_keys)
        if self.list_type == "set":
            return value_element(item)
        return ("i", index)


class _RootShape(Shape):
    """A custom resource's root: its schema, but built-in ``metadata`` semantics."""

    __slots__ = ()

    def _make_child(self, name: str) -> Shape:
        if name == "metadata":
            return Shape(meta_for_kind("").child("metadata"))
        return super()._make_child(name)


_BUILTIN_ROOTS: dict[str, Shape] = {}


def root_shape(kind: str, schema: Mapping[str, Any] | None) -> Shape:
    """The shape of a whole object: from ``schema`` if given, else the built-in table."""
    if schema is not None:
        return _RootShape(schema=schema)
    shape = _BUILTIN_ROOTS.get(kind)
    if shape is None:
        # The built-in table never changes: its shapes (and their child caches) are shared.
        shape = _BUILTIN_ROOTS[kind] = Shape(meta_for_kind(kind))
    return shape


def merge(live: Any, config: Any, shape: Shape) -> Any:
    if isinstance(live, dict) and isinstance(config, dict) and not shape.atomic_map:
        out = dict(live)
        for key, value in config.items():
            out[key] = merge(live[key], value, shape.child(key)) if key in live else value
        return out
    if isinstance(live, list) and isinstance(config, list) and shape.list_type != "atomic":
        return _merge_list(live, config, shape)
    return config


def _merge_list(live: list[Any], config: list[Any], shape: Shape) -> list[Any]:
    """structured-merge-diff's list merge: shared items in config order, live-only kept in place."""
    item_shape = shape.item()
    lhs = [shape.element(x, i) for i, x in enumerate(live)]
    rhs = [shape.element(x, i) for i, x in enumerate(config)]
    seen_lhs = dict(zip(lhs, live, strict=True))
    seen_rhs = dict(zip(rhs, config, strict=True))
    shared = [pe for pe in rhs if pe in seen_lhs]
    next_shared = shared.pop(0) if shared else None
    merged: set[Element] = set()
    out: list[Any] = []

    def take(pe: Element) -> None:
        merged.add(pe)
        if pe in seen_lhs:
            out.append(merge(seen_lhs[pe], seen_rhs[pe], item_shape))
        else:
            out.append(seen_rhs[pe])

    li = ri = 0
    while li < len(lhs) or ri < len(rhs):
        if li < len(lhs) and ri < len(rhs):
            pe = lhs[li]
            if pe == rhs[ri]:
                take(pe)
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in seen_rhs and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(lhs):
            pe = lhs[li]
            if pe not in seen_rhs:
                out.append(live[li])
                li += 1
                continue
            if pe in merged:
                li += 1
                continue
        if ri < len(rhs):
            pe = rhs[ri]
            take(pe)
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


def field_set(value: Any, shape: Shape, path: Path, out: set[Path]) -> None:
    """The fields a value sets (structured-merge-diff's ``ToFieldSet``)."""
    if isinstance(value, dict):
        if shape.atomic_map:
            out.add(path)
            return
        for key, item in value.items():
            sub = (*path, ("f", key))
            field_set(item, shape.child(key), sub, out)
            if item is None or item == {} or not shape.declared(key):
                out.add(sub)
    elif isinstance(value, list):
        if shape.list_type == "atomic":
            out.add(path)
            return
        item_shape = shape.item()
        for i, item in enumerate(value):
            sub = (*path, shape.element(item, i))
            field_set(item, item_shape, sub, out)
            out.add(sub)
    else:
        out.add(path)


@dataclass
class Comparison:
    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)


def _mark(value: Any, shape: Shape, path: Path, into: set[Path]) -> None:
    """Every path of a value that appeared or disappeared, containers included."""
    if isinstance(value, dict) and not shape.atomic_map:
        for key, item in value.items():
            _mark(item, shape.child(key), (*path, ("f", key)), into)
    elif isinstance(value, list) and shape.list_type != "atomic":
        item_shape = shape.item()
        for i, item in enumerate(value):
            _mark(item, item_shape, (*path, shape.element(item, i)), into)
    into.add(path)


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


def compare(old: Any, new: Any, shape: Shape, path: Path, cmp: Comparison) -> None:
    """Record in ``cmp`` the paths below ``path`` that ``new`` added, modified or removed.

    Identical subtrees (the same object, or equal with the same JSON types) have nothing to
    record, so they are not walked: a status write leaves the spec as it was.
    """
    if isinstance(old, dict | list) and identical(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict) and not shape.atomic_map:
        for key in {**old, **new}:
            sub = (*path, ("f", key))
            if key not in new:
                _mark(old[key], shape.child(key), sub, cmp.removed)
            elif key not in old:
                _mark(new[key], shape.child(key), sub, cmp.added)
            else:
                compare(old[key], new[key], shape.child(key), sub, cmp)
    elif isinstance(old, list) and isinstance(new, list) and shape.list_type != "atomic":
        _compare_items(old, new, shape, path, cmp)
    elif not _same(old, new):
        cmp.modified.add(path)


def _compare_items(
    old: list[Any], new: list[Any], shape: Shape, path: Path, cmp: Comparison
) -> None:
    """:func:`compare` of two associative (or positional) lists, item by path element."""
    item_shape = shape.item()
    before = {shape.element(x, i): x for i, x in enumerate(old)}
    after = {shape.element(x, i): x for i, x in enumerate(new)}
    for pe, item in after.items():
        sub = (*path, pe)
        if pe in before:
            compare(before[pe], item, item_shape, sub, cmp)
        else:
            _mark(item, item_shape, sub, cmp.added)
    for pe, item in before.items():
        if pe not in after:
            _mark(item, item_shape, (*path, pe), cmp.removed)


def remove(value: Any, path: Path) -> Any:
    """``value`` without the node at ``path`` (copying only along the path)."""
    if not path:
        return value
    element, rest = path[0], path[1:]
    if isinstance(value, dict) and element[0] == "f" and element[1] in value:
        out = dict(value)
        if rest:
            out[element[1]] = remove(value[element[1]], rest)
        else:
            del out[element[1]]
        return out
    if isinstance(value, list):
        return _remove_item(value, element, rest)
    return value


def _remove_item(items: list[Any], element: Element, rest: Path) -> list[Any]:
    out = list(items)
    for i, item in enumerate(items):
        if _matches(item, element, i):
            if rest:
                out[i] = remove(item, rest)
            else:
                del out[i]
            return out
    return items


def _matches(item: Any, element: Element, index: int) -> bool:
    kind, data = element
    if kind == "k":
        return isinstance(item, Mapping) and all(k in item and _same(item[k], v) for k, v in data)
    if kind == "v":
        return value_element(item) == element
    return kind == "i" and data == index


def with_named_parents(paths: set[Path], shape: Shape) -> set[Path]:
    """``paths`` plus every struct field on their way (``EnsureNamedFieldsAreMembers``).

    Field sets name leaves and list items; the struct fields that lead to them are implied.
    Removal decisions need them explicit: a struct field nobody owns anything under goes too.
    """
    out = set(paths)
    shapes: dict[Path, Shape] = {(): shape}
    for path in paths:
        # Paths share most of their prefixes: start below the longest one already resolved.
        known = len(path) - 1
        while known > 0 and path[:known] not in shapes:
            known -= 1
        for depth in range(known + 1, len(path)):
            prefix = path[:depth]
            parent = shapes[path[: depth - 1]]
            kind, data = path[depth - 1]
            if kind == "f":
                if parent.declared(data):
                    out.add(prefix)
                shapes[prefix] = parent.child(data)
            else:
                shapes[prefix] = parent.item()
    return out
