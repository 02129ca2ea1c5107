"""Pruning and defaulting of custom resources by their structural schema.

Mirrors apiextensions' ``pruning.Prune`` and ``defaulting.Default`` (with
``PruneNonNullableNullsWithoutDefaults`` run first, as the server's decoder does). Both are pure:
they return new containers along the paths they change and share everything else.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from etctl._apimachinery.schemapath import Schema

__all__ = ["apply_defaults", "prune", "prune_value"]

_TYPE_META = ("apiVersion", "kind", "metadata")


class _Edit:
    """A dict changed copy-on-write: ``original`` is shared until the first change."""

    __slots__ = ("_copy", "original")

    def __init__(self, original: dict[str, Any]) -> None:
        self.original = original
        self._copy: dict[str, Any] | None = None

    def _own(self) -> dict[str, Any]:
        if self._copy is None:
            self._copy = dict(self.original)
        return self._copy

    def put(self, key: str, value: Any) -> None:
        """Set ``key`` to ``value``."""
        self._own()[key] = value

    def replace(self, key: str, new: Any, old: Any) -> None:
        """Set ``key`` to ``new`` unless it is ``old`` itself (nothing changed below)."""
        if new is not old:
            self._own()[key] = new

    def delete(self, key: str) -> None:
        """Remove ``key``."""
        del self._own()[key]

    @property
    def current(self) -> dict[str, Any]:
        """The dict as edited so far."""
        return self.original if self._copy is None else self._copy


def _each(value: list[Any], change: Callable[[Any], Any]) -> list[Any]:
    """``change`` applied to every item; ``value`` itself when no item changed."""
    changed = [change(v) for v in value]
    return value if all(a is b for a, b in zip(changed, value, strict=True)) else changed


def _each_item(value: list[Any], schema: Schema, change: Callable[[Any, Schema], Any]) -> list[Any]:
    """``change(item, items schema)`` on every item; ``value`` itself without an items schema."""
    items = schema.get("items")
    if not isinstance(items, Mapping):
        return value
    return _each(value, lambda v: change(v, items))


def _prune(value: Any, schema: Schema | None) -> Any:
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields"):
        return _prune_known(value, schema)
    if isinstance(value, dict):
        if schema is None:
            return {} if value else value
        return _prune_members(value, schema, keep_unknown=False)
    if isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        return _each(value, lambda v: _prune(v, items if isinstance(items, Mapping) else None))
    return value


def _prune_known(value: Any, schema: Schema) -> Any:
    """Under ``x-kubernetes-preserve-unknown-fields``: keep unknown fields, prune known ones."""
    if isinstance(value, dict):
        return _prune_members(value, schema, keep_unknown=True)
    if isinstance(value, list):
        return _each_item(value, schema, _prune_known)
    return value


def _prune_members(value: dict[str, Any], schema: Schema, *, keep_unknown: bool) -> Any:
    """Prune each member by its property (or ``additionalProperties``) schema.

    A member the schema does not specify is dropped, or kept as it is with ``keep_unknown``.
    """
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    properties: Mapping[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    edit = _Edit(value)
    for key, item in value.items():
        if embedded and key in _TYPE_META:
            continue
        if key in properties:
            edit.replace(key, _prune(item, properties[key]), item)
        elif extra is not None:
            edit.replace(key, _prune(item, extra if isinstance(extra, Mapping) else None), item)
        elif not keep_unknown:
            edit.delete(key)
    return edit.current


def prune(obj: Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    """Drop the fields of a custom resource its schema does not specify.

    Fields under ``x-kubernetes-preserve-unknown-fields`` are kept (known fields beneath are
    still pruned); ``apiVersion``, ``kind`` and ``metadata`` are kept at the root and in embedded
    resources. Unchanged subtrees are shared with ``obj``.
    """
    root = dict(schema)
    root["x-kubernetes-embedded-resource"] = True
    result = _prune(obj, root)
    return result if result is not obj else dict(obj)


def prune_value(value: Any, schema: Schema) -> Any:
    """Prune a standalone value (a schema default) by its schema, not as a resource root."""
    return _prune(value, schema)


def _non_nullable_null(value: Any, schema: Schema | None) -> bool:
    return value is None and schema is not None and not schema.get("nullable")


def _drop_nulls(value: Any, schema: Schema | None) -> Any:
    """Remove null members of non-nullable fields that have no default."""
    if schema is None:
        return value
    if isinstance(value, dict):
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        edit = _Edit(value)
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None and isinstance(extra, Mapping):
                sub = extra
            if sub is None:
                continue
            if item is None and "default" not in sub and not sub.get("nullable"):
                edit.delete(key)
            else:
                edit.replace(key, _drop_nulls(item, sub), item)
        return edit.current
    if isinstance(value, list):
        return _each_item(value, schema, _drop_nulls)
    return value


def _default(value: Any, schema: Schema | None) -> Any:
    if schema is None:
        return value
    if isinstance(value, dict):
        return _default_map(value, schema)
    if isinstance(value, list):
        return _each_item(
            value, schema, lambda v, items: _default(_defaulted_null(v, items), items)
        )
    return value


def _defaulted_null(value: Any, schema: Schema) -> Any:
    """A non-nullable null's default (deep-copied), else ``value`` itself."""
    if _non_nullable_null(value, schema) and "default" in schema:
        return copy.deepcopy(schema["default"])
    return value


def _default_map(value: dict[str, Any], schema: Schema) -> dict[str, Any]:
    properties: Mapping[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    edit = _Edit(value)
    for key, sub in properties.items():
        if "default" in sub and (key not in value or _non_nullable_null(value[key], sub)):
            edit.put(key, copy.deepcopy(sub["default"]))
    for key, item in list(edit.current.items()):
        if key in properties:
            edit.replace(key, _default(item, properties[key]), item)
        elif isinstance(extra, Mapping):
            edit.replace(key, _default(_defaulted_null(item, extra), extra), item)
    return edit.current


def apply_defaults(obj: Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    """Apply the schema's ``default`` values to a (pruned) custom resource.

    As apiextensions does: null members of non-nullable fields without a default are dropped
    first; a missing field, or a non-nullable null, takes its default (deep-copied); defaults
    apply inside array items and ``additionalProperties`` values and inside defaulted values
    themselves; nothing is defaulted under ``x-kubernetes-preserve-unknown-fields`` without
    ``properties``. Unchanged subtrees are shared with ``obj``.
    """
    result = _default(_drop_nulls(obj, schema), schema)
    return result if result is not obj else dict(obj)
